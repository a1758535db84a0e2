#!/usr/bin/env python
"""Missing values: cartjit's surrogate splits against rpart's, and what surrogates cost.

The data are the mixed problems of :mod:`mixed_data` (10 numeric and 5 unordered
categorical features of 20 levels; kind ``a``: 2 classes, ``b``: regression) with a
fraction ``--missing`` of the cells of every feature set missing at random (a seeded
mask, the same for both libraries). Both libraries grow with rpart's defaults but
``cp = 0``: ``minsplit = 20``, ``minbucket = 7``, ``maxdepth = 30``, 5 surrogates
(``usesurrogate = 2``, ``surrogatestyle = 0``), 4 competitors; cartjit's
``min_samples_split=20, min_samples_leaf=7, max_depth=30, max_surrogate=5,
max_competitor=4``. Three reports, printed as Markdown under one header:

fit with holes   per kind, ``--size`` rows: cartjit (median of ``--repeat`` fits after an
                 untimed fit of each configuration on the same rows) and rpart
                 (``system.time`` of the ``rpart(...)`` call only, in one R process,
                 after an untimed call on 1,000 rows), their ratio (target <= 0.1) and
                 tree sizes. rpart's tree is smaller: with ``cp = 0`` it still removes
                 splits whose subtree does not lower the resubstitution risk, which
                 cartjit's T_max keeps.
surrogate cost   the same rows without holes: cartjit with ``max_surrogate=0`` and with
                 ``max_surrogate=5`` (the ratio decides the default, see
                 docs/maths.md §8), and rpart with ``maxsurrogate = 0`` and ``5``.
predict          ``--predict-rows`` new rows (another seed) with the same fraction of
                 holes, by the kind's tree from the first report; and the same rows
                 without holes (the surrogates are then never read).

Options: ``--size`` (1e5), ``--missing`` (0.1), ``--repeat`` (3), ``--rounds`` (1),
``--kinds a,b``, ``--predict-rows`` (1e6), ``--no-rpart``, ``--json OUT``; set
``NUMBA_NUM_THREADS`` in the environment for cartjit's threads. With ``--rounds R`` the
fit with holes is timed in R rounds, each ``--repeat`` cartjit fits and then
``--repeat`` rpart fits, and the ratio reported is the median of the rounds' ratios (a
host whose speed drifts over a minute moves a single round's ratio). Example::

    python asv_bench/peers_missing.py --size 1e5 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import peers  # noqa: E402  (this folder is on sys.path; captures the environment as given)
from mixed_data import make_mixed, with_holes

TARGET_RPART = 0.1
#: rpart.control of every rpart fit here (maxsurrogate filled in)
_R_CONTROL = ("cp = 0, minsplit = 20, minbucket = 7, maxdepth = 30, xval = 0, "
              "maxcompete = 4, usesurrogate = 2, surrogatestyle = 0, maxsurrogate = {sur}")
_SEED_HOLES = 7  # the mask's seed (mixed_data.with_holes)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="peers_missing.py",
        description="cartjit's surrogate splits against rpart on mixed data with missing "
                    "values; prints Markdown.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--size", type=peers._positive_int, default=100_000)
    p.add_argument("--missing", type=float, default=0.1,
                   help="fraction of the cells of every feature set missing")
    p.add_argument("--repeat", type=peers._positive_int, default=3)
    p.add_argument("--rounds", type=peers._positive_int, default=1,
                   help="rounds of the fit with holes (cartjit, then rpart)")
    p.add_argument("--kinds", default="a,b", help="comma-separated: a, b")
    p.add_argument("--predict-rows", type=peers._positive_int, default=1_000_000)
    p.add_argument("--no-rpart", action="store_true")
    p.add_argument("--json", metavar="OUT", default=None)
    args = p.parse_args(argv)
    if not 0.0 <= args.missing < 1.0:
        p.error(f"--missing must be in [0, 1), got {args.missing}")
    args.kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not args.kinds or any(k not in ("a", "b") for k in args.kinds):
        p.error(f"--kinds takes a comma-separated list of a, b; got {args.kinds}")
    if not args.no_rpart and shutil.which("Rscript") is None:
        p.error("Rscript not found: install R with rpart, or pass --no-rpart")
    return args


def _estimator(task, max_surrogate):
    from cartjit import CARTClassifier, CARTRegressor

    cls = CARTClassifier if task == "classification" else CARTRegressor
    return cls(min_samples_split=20, min_samples_leaf=7, max_depth=30,
               max_surrogate=max_surrogate, max_competitor=4)


def _warm_up(data, holes):
    """One untimed fit of each configuration timed here, on the timed data itself, and a
    prediction: every kernel those fits take is compiled (or loaded) before any timing.
    (A smaller warm-up leaves some out: the weakest link of a tree of 5,000 splits or
    more takes its own kernels, and fits from 65,536 cells grow on several threads.)"""
    _estimator(data.task, 5).fit(holes, data.y).predict(holes.iloc[:1000])
    _estimator(data.task, 0).fit(data.frame, data.y)
    _estimator(data.task, 5).fit(data.frame, data.y)


def _time_fit(task, frame, y, max_surrogate, repeat):
    return peers.time_fits(lambda: _estimator(task, max_surrogate), frame, y, repeat)


_R_SCRIPT = """\
suppressMessages(library(rpart))
d <- read.csv({path!r}, colClasses = c({classes}), na.strings = c("", "NA"))
{factors}
{response}
ctl <- rpart.control({control})
invisible(rpart(y ~ ., data = d[seq_len(min(1000, nrow(d))), ], method = {method!r},
                control = ctl))
times <- numeric(0)
for (r in seq_len({repeat})) {{
  tm <- system.time(fit <- rpart(y ~ ., data = d, method = {method!r}, control = ctl))
  times <- c(times, tm[["elapsed"]])
}}
cat("TIMES", times, "\\n")
cat("NODES", nrow(fit$frame), "\\n")
cat("VERSION", as.character(packageVersion("rpart")), "\\n")
"""


def time_rpart(frame, y, task, n_surrogates, repeat):
    """rpart's fit times (s), node count and version on ``frame`` (NaN: NA)."""
    classification = task == "classification"
    categorical = [c for c in frame.columns if str(frame[c].dtype) == "category"]
    classes = ", ".join(['"character"' if c in categorical else '"numeric"'
                         for c in frame.columns]
                        + ['"integer"' if classification else '"numeric"'])
    factors = "\n".join(
        f'd${c} <- factor(d${c}, levels = c('
        + ", ".join(f'"{level}"' for level in frame[c].cat.categories) + "))"
        for c in categorical)
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        path = os.path.join(tmp, "data.csv")
        frame.assign(y=y).to_csv(path, index=False, float_format="%.17g", na_rep="NA")
        script = _R_SCRIPT.format(
            path=path, classes=classes, factors=factors,
            response="d$y <- factor(d$y)" if classification else "",
            control=_R_CONTROL.format(sur=n_surrogates),
            method="class" if classification else "anova", repeat=repeat)
        out = peers.rscript_records(["-e", script])
    return {"times": [float(t) for t in out["TIMES"]], "nodes": int(out["NODES"][0]),
            "version": f"rpart {out['VERSION'][0]}"}



def main(argv=None):
    args = parse_args(argv)
    lines = peers.header("Missing values: surrogate splits against rpart",
                         ["asv_bench/peers_missing.py", *(argv or sys.argv[1:])])
    record = {"args": vars(args), "kinds": {}}
    for kind in args.kinds:
        data = make_mixed(kind, args.size)
        holes = with_holes(data.frame, args.missing)
        start = time.perf_counter()
        _warm_up(data, holes)
        warm = time.perf_counter() - start
        rec = {"warm_up_s": warm}
        rounds = []
        for _ in range(args.rounds):
            times, model = _time_fit(data.task, holes, data.y, 5, args.repeat)
            theirs = (None if args.no_rpart
                      else time_rpart(holes, data.y, data.task, 5, args.repeat))
            rounds.append((times, theirs))
        rec["fit_holes"] = {"cartjit": [t for r in rounds for t in r[0]],
                            "nodes": int(model.tree_.n_nodes)}
        if not args.no_rpart:
            rec["fit_holes"]["rpart"] = dict(rounds[-1][1],
                                             times=[t for r in rounds for t in r[1]["times"]])
            rec["fit_holes"]["round_ratios"] = [
                peers.median_of(ours) / peers.median_of(r["times"]) for ours, r in rounds]
        plain0, _ = _time_fit(data.task, data.frame, data.y, 0, args.repeat)
        plain5, _ = _time_fit(data.task, data.frame, data.y, 5, args.repeat)
        rec["complete"] = {"cartjit_sur0": plain0, "cartjit_sur5": plain5}
        if not args.no_rpart:
            rec["complete"]["rpart_sur0"] = time_rpart(data.frame, data.y, data.task, 0,
                                                       args.repeat)
            rec["complete"]["rpart_sur5"] = time_rpart(data.frame, data.y, data.task, 5,
                                                       args.repeat)
        new = make_mixed(kind, args.predict_rows, random_state=1)
        new_holes = with_holes(new.frame, args.missing, seed=_SEED_HOLES + 1)
        pred = {}
        for name, frame in (("holes", new_holes), ("complete", new.frame)):
            model.predict(frame.iloc[:1000])
            ts = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                model.predict(frame)
                ts.append(time.perf_counter() - start)
            pred[name] = ts
        rec["predict"] = pred
        record["kinds"][kind] = rec

        fh = rec["fit_holes"]
        lines += ["", f"### kind {kind} ({data.task}), {args.size:,} rows, "
                      f"{args.missing:.0%} of cells missing (warm-up {warm:.1f} s)", "",
                  "| fit | cartjit (s) | rpart (s) | ratio | nodes cartjit / rpart |",
                  "|---|---:|---:|---:|---:|"]
        if "rpart" in fh:
            r = fh["rpart"]
            ratios = fh["round_ratios"]
            by_round = ("" if len(ratios) == 1 else
                        "; rounds " + ", ".join(f"{x:.3f}" for x in ratios))
            lines.append(f"| with holes, 5 surrogates | {peers.median_of(fh['cartjit']):.3f} "
                         f"({peers.samples_text(fh['cartjit'])}) | {peers.median_of(r['times']):.3f} "
                         f"({peers.samples_text(r['times'])}) | "
                         f"**{peers.median_of(ratios):.3f}** "
                         f"(target <= {TARGET_RPART}{by_round}) | {fh['nodes']} / {r['nodes']} |")
        else:
            lines.append(f"| with holes, 5 surrogates | {peers.median_of(fh['cartjit']):.3f} | - | - | "
                         f"{fh['nodes']} / - |")
        c = rec["complete"]
        for sur in (0, 5):
            ours = c[f"cartjit_sur{sur}"]
            theirs = c.get(f"rpart_sur{sur}")
            lines.append(f"| complete data, {sur} surrogates | {peers.median_of(ours):.3f} "
                         f"({peers.samples_text(ours)}) | "
                         + (f"{peers.median_of(theirs['times']):.3f} | "
                            f"{peers.median_of(ours) / peers.median_of(theirs['times']):.3f} | - / "
                            f"{theirs['nodes']} |" if theirs else "- | - | - |"))
        lines += ["", f"Surrogates on complete data: cartjit x{peers.median_of(c['cartjit_sur5']) / peers.median_of(c['cartjit_sur0']):.2f}"
                  + (f", rpart x{peers.median_of(c['rpart_sur5']['times']) / peers.median_of(c['rpart_sur0']['times']):.2f}"
                     if "rpart_sur0" in c else "") + ".",
                  "", f"Predict {args.predict_rows:,} new rows: with holes "
                  f"{peers.median_of(pred['holes']):.3f} s ({peers.samples_text(pred['holes'])}); complete "
                  f"{peers.median_of(pred['complete']):.3f} s ({peers.samples_text(pred['complete'])})."]
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
