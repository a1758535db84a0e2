#!/usr/bin/env python
"""rpart mode against the exact mode and against rpart: cross-validated pruning, side by
side, on the same data and the same fold vector.

Data: the ``--size`` × 20 problem of ``peers_cv.py`` (``cartjit.datasets.make_classification``,
3 classes, seed 0), and one fold vector (ids 1..V, a seeded random permutation of
``arange(n) % V``) given to all three:

* cartjit exact mode: ``CARTClassifierCV(cv=folds, compat="breiman", max_competitor=0,
  max_depth=30)`` (T_max grown to purity or depth 30, the exact weakest-link sequence,
  V fold trees, every α'_k scored, selection);
* cartjit rpart mode: the same with ``compat="rpart", cp=0`` (rpart's one-pass
  complexities, its growth bound, its CP list and run-down);
* rpart: ``rpart(y ~ ., method = "class", control = rpart.control(cp = 0, minsplit = 2,
  minbucket = 1, maxcompete = 0, maxsurrogate = 0, maxdepth = 30, xval = folds))``,
  timed inside R with ``system.time`` around the ``rpart`` call only (the CSV load and
  R's start excluded), after an untimed call on 1,000 rows.

These settings grow the same tree in all three (cartjit's defaults are rpart's
``minsplit = 2``, ``minbucket = 1``; ``max_depth = 30`` is rpart's ``maxdepth``, which
rpart cannot exceed, so cartjit is given it too: without it cartjit grows T_max to
depth 36 at 1e4 rows; neither computes competitors nor surrogates, and no value is
missing), up to exact ties between splits: where two splits lower the impurity by
exactly the same amount, cartjit takes the first variable and rpart the one its
rounding makes larger, which changes a few small subtrees at 1e5 rows (docs/rpart.md,
"Larger data"). Each is run ``--repeat`` times (rpart ``--rpart-repeat`` times; the two
cartjit modes interleaved, so that the host's drift hits both alike) and the
median is reported, with every sample; cartjit's kernels are compiled (or loaded from
the cache) by an untimed fit on 500 rows first. The table gives the ratios and the CP
table lengths (rpart's table and cartjit's ``cptable_`` in rpart mode have the same rows
wherever no exact tie intervenes: ``tests/parity/test_rpart_compat_random.py``,
``tests/parity/test_rpart_depth.py``).

Options: ``--size`` (1e5), ``--folds`` (10), ``--repeat`` (3), ``--rpart-repeat``
(default ``--repeat``), ``--threads N`` (NUMBA_NUM_THREADS for cartjit; default Numba's),
``--no-rpart``, ``--json OUT``. Example::

    python asv_bench/peers_rpart_mode.py --size 1e5 --repeat 3 --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import peers  # this folder is on sys.path; imports no Numba

N_FEATURES = 20
N_CLASSES = 3
FOLD_SEED = 1
WARM_UP_ROWS = 500
MAX_DEPTH = 30  # rpart's largest maxdepth; both sides get it
_R_CONTROL = ("cp = 0, minsplit = 2, minbucket = 1, maxcompete = 0, maxsurrogate = 0, "
              f"maxdepth = {MAX_DEPTH}")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="peers_rpart_mode.py",
        description="cartjit's rpart mode and exact mode against rpart, V-fold CV with one "
                    "fold vector; prints Markdown.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--size", type=peers._positive_int, default=100_000, help="rows (1e5 accepted)")
    p.add_argument("--folds", type=peers._positive_int, default=10, help="V")
    p.add_argument("--repeat", type=peers._positive_int, default=3,
                   help="timed runs of each cartjit mode (the median is reported)")
    p.add_argument("--rpart-repeat", type=peers._positive_int, default=None,
                   help="timed rpart runs (default: --repeat)")
    p.add_argument("--threads", type=peers._positive_int, default=None,
                   help="NUMBA_NUM_THREADS for cartjit (default: Numba's, all cores)")
    p.add_argument("--no-rpart", action="store_true", help="skip rpart")
    p.add_argument("--json", metavar="OUT", default=None, help="also write the samples here")
    args = p.parse_args(argv)
    if args.folds < 2 or args.folds > args.size:
        p.error(f"--folds must be in [2, --size], got {args.folds}")
    if args.rpart_repeat is None:
        args.rpart_repeat = args.repeat
    if not args.no_rpart and shutil.which("Rscript") is None:
        p.error("Rscript not found: install R with rpart, or pass --no-rpart")
    return args


def fold_vector(n, V, seed=FOLD_SEED):
    """Fold ids 1..V: a seeded random permutation of ``arange(n) % V`` (+1)."""
    return np.random.default_rng(seed).permutation(np.arange(n) % V) + 1


def _estimator(compat, folds):
    from cartjit import CARTClassifierCV

    extra = {"cp": 0} if compat == "rpart" else {}
    return CARTClassifierCV(cv=folds, compat=compat, selection="min", max_competitor=0,
                            max_depth=MAX_DEPTH, **extra)


def time_cartjit_modes(X, y, folds, repeat):
    """Wall times (s) of ``fit`` in each mode, the two interleaved (breiman, rpart, then
    rpart, breiman, ...) so that the host's drift hits both alike, and the last fitted
    estimator of each: ``{compat: (times, estimator)}``."""
    out = {"breiman": ([], None), "rpart": ([], None)}
    for r in range(repeat):
        for compat in (("breiman", "rpart") if r % 2 == 0 else ("rpart", "breiman")):
            times, est = peers.time_fits(lambda: _estimator(compat, folds), X, y, 1)
            out[compat] = (out[compat][0] + times, est)
    return out


_R_SCRIPT = """\
suppressMessages(library(rpart))
d <- read.csv({path!r})
d$y <- factor(d$y)
folds <- d$folds
d$folds <- NULL
m <- min(1000, nrow(d))
invisible(rpart(y ~ ., data = d[seq_len(m), ], method = "class",
                control = rpart.control({control}, xval = 0)))
times <- numeric(0)
for (r in seq_len({repeat})) {{
  tm <- system.time(fit <- rpart(y ~ ., data = d, method = "class",
                                 control = rpart.control({control}, xval = folds)))
  times <- c(times, tm[["elapsed"]])
}}
cat("TIMES", times, "\\n")
cat("ROWS", nrow(fit$cptable), "\\n")
cat("LEAVES", sum(fit$frame$var == "<leaf>"), "\\n")
cat("XERROR", sprintf("%.17g", min(fit$cptable[, "xerror"])), "\\n")
cat("VERSION", as.character(packageVersion("rpart")), "\\n")
"""


def time_rpart(X, y, folds, repeat):
    """rpart's times (s), CP table length, cp = 0 tree size, least xerror and version."""
    cols = [f"x{j}" for j in range(X.shape[1])]
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        path = os.path.join(tmp, "data.csv")
        np.savetxt(path, np.column_stack([X, y, folds]), delimiter=",",
                   header=",".join(cols + ["y", "folds"]), comments="", fmt="%.17g")
        script = _R_SCRIPT.format(path=path, control=_R_CONTROL, repeat=repeat)
        out = peers.rscript_records(["--vanilla", "-e", script])
    return {"times": [float(t) for t in out["TIMES"]], "rows": int(out["ROWS"][0]),
            "leaves": int(out["LEAVES"][0]), "min_xerror": float(out["XERROR"][0]),
            "version": out["VERSION"][0]}



def main(argv=None):
    argv = sys.argv if argv is None else argv
    args = parse_args(argv[1:])
    peers.set_numba_threads(args.threads)
    from cartjit import CARTClassifierCV
    from cartjit.datasets import make_classification

    if "compat" not in CARTClassifierCV().get_params():
        raise SystemExit("peers_rpart_mode.py: this cartjit has no compat='rpart'")
    lines = peers.header("Cross-validated pruning: rpart mode, exact mode and rpart",
                         ["asv_bench/peers_rpart_mode.py", *argv[1:]])
    X, y = make_classification(args.size, N_FEATURES, N_CLASSES, random_state=0)
    folds = fold_vector(args.size, args.folds)
    warm = fold_vector(WARM_UP_ROWS, 3)
    start = time.perf_counter()
    for compat in ("breiman", "rpart"):
        _estimator(compat, warm).fit(X[:WARM_UP_ROWS], y[:WARM_UP_ROWS])
    warm_s = time.perf_counter() - start

    record = {"args": vars(args), "warm_up_s": warm_s}
    modes = time_cartjit_modes(X, y, folds, args.repeat)
    (exact_t, exact), (rmode_t, rmode) = modes["breiman"], modes["rpart"]
    record["cartjit_breiman"], record["cartjit_rpart"] = exact_t, rmode_t
    rp = None
    if not args.no_rpart:
        rp = time_rpart(X, y, folds, args.rpart_repeat)
        record["rpart"] = rp

    lines += [f"- data: make_classification({args.size:,}, {N_FEATURES}, {N_CLASSES}, "
              f"random_state=0); V = {args.folds}, one fold vector (seed {FOLD_SEED}) for all; "
              f"cartjit warm-up {warm_s:.1f} s (untimed)",
              f"- rpart: `rpart.control({_R_CONTROL}, xval = folds)`"
              + (f", rpart {rp['version']}" if rp else ""), "",
              "| run | median (s) | samples (s) | / exact mode | / rpart | CP table rows |",
              "|---|---:|---|---:|---:|---:|"]
    base = peers.median_of(exact_t)
    r_med = peers.median_of(rp["times"]) if rp else None

    def row(name, times, rows):
        med = peers.median_of(times)
        vs_rpart = f"{med / r_med:.3f}" if r_med else "-"
        return (f"| {name} | {med:.3f} | {peers.samples_text(times)} | {med / base:.3f} | {vs_rpart} "
                f"| {rows} |")

    lines.append(row("cartjit, compat=\"breiman\" (exact)", exact_t, len(exact.cptable_)))
    lines.append(row("cartjit, compat=\"rpart\", cp=0", rmode_t, len(rmode.cptable_)))
    if rp:
        lines.append(row(f"rpart {rp['version']}, cp=0", rp["times"], rp["rows"]))
    lines += ["", f"T_max: {exact.tree_max_.n_nodes // 2 + 1} leaves; rpart's cp = 0 tree: "
              + (f"{rp['leaves']} leaves" if rp else "-")
              + f"; least xerror: rpart mode {rmode.cptable_['xerror'].min():.6f}"
              + (f", rpart {rp['min_xerror']:.6f}" if rp else "") + "."]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
