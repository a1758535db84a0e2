#!/usr/bin/env python
"""Ten million rows: fit time and peak memory of one fit, each in a fresh interpreter.

For each task (classification: 3 classes, Gini; regression), a child interpreter draws
``--n`` rows × ``--features`` of :mod:`cartjit.datasets` (seeded), warms the kernels on
300 rows and on 70,000 cells (the threaded route), resets the process's high-water mark (Linux ``/proc/self/clear_refs``, so the
data generator's temporaries do not count; the data themselves do), fits once grown to
purity, and reports:

- the fit's wall time;
- the whole process's peak RSS during the fit (``VmHWM``: interpreter, data and fit);
- that peak over the budget unit, the float64 X plus cartjit's int32 keys
  (``n × p × 8 + n × p × 4`` bytes);
- the peak increase over the RSS just before the fit.

scikit-learn (``DecisionTreeClassifier/Regressor(random_state=0)``) is measured the
same way at ``--sklearn-n`` rows (default 1e6; at 1e7 a fit takes tens of minutes on a
small machine) and extrapolated to ``--n`` by n log n; ``--sklearn-n`` equal to ``--n``
measures it instead. cartjit is measured at ``--sklearn-n`` too, so both libraries'
ratio at the size where both ran is in the table::

    python asv_bench/peers_large.py --n 1e7 --threads 2
    python asv_bench/peers_large.py --n 1e7 --tasks regression --no-sklearn
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import peers  # noqa: E402  (this folder's script: machine header, data, models)
from benchmarks.memory import _status_kib  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=peers._positive_int, default=10_000_000,
                   help="rows of cartjit's fit (1e7 style accepted)")
    p.add_argument("--features", type=peers._positive_int, default=20)
    p.add_argument("--classes", type=peers._positive_int, default=3)
    p.add_argument("--tasks", default="classification,regression",
                   help="comma-separated: classification, regression")
    p.add_argument("--threads", type=peers._positive_int, default=None,
                   help="NUMBA_NUM_THREADS of the cartjit children (default: all cores)")
    p.add_argument("--sklearn-n", type=peers._positive_int, default=1_000_000,
                   help="rows of the scikit-learn fit (and of cartjit's fit beside it)")
    p.add_argument("--no-sklearn", action="store_true", help="cartjit at --n only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", nargs=3, metavar=("LIB", "TASK", "N"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    bad = [t for t in tasks if t not in ("classification", "regression")]
    if bad or not tasks:
        p.error(f"--tasks takes classification and/or regression, got {args.tasks!r}")
    args.tasks = tasks
    return args


def child(args):
    """In a fresh interpreter: one fit; its time and memory as JSON on stdout."""
    import gc

    import numpy as np

    lib, task, n = args.child[0], args.child[1], int(args.child[2])
    peers._OPTIONS.update(criterion="gini", priors="empirical", min_samples_leaf=1,
                          weights=False, seed=args.seed)
    X, y = peers._make_data(task, n, args.features, args.classes, args.seed)
    X = np.ascontiguousarray(X)
    peers._warm_up(task, lib, args.features, args.classes)
    model = (peers._cartjit_model if lib == "cartjit" else peers._sklearn_model)(task)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = 1024 * _status_kib("VmRSS")
    start = time.perf_counter()
    model.fit(X, y)
    elapsed = time.perf_counter() - start
    peak = 1024 * _status_kib("VmHWM")
    print(json.dumps({"lib": lib, "task": task, "n": n, "fit_s": elapsed,
                      "before": before, "peak": peak, "x_bytes": int(X.nbytes),
                      "keys_bytes": int(n * X.shape[1] * 4),
                      "leaves": peers._size(model, lib)[0]}))


def _run_child(args, lib, task, n):
    env = peers._child_env()
    if lib == "cartjit" and args.threads:
        env["NUMBA_NUM_THREADS"] = str(args.threads)
    argv = [sys.executable, os.path.abspath(__file__), "--child", lib, task, str(n),
            "--features", str(args.features), "--classes", str(args.classes),
            "--seed", str(args.seed)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{lib} {task} n={n} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _row(r, note=""):
    gib = 2.0 ** 30
    unit = r["x_bytes"] + r["keys_bytes"]
    return (f"| {r['lib']} | {r['task']} | {r['n']:,} | {r['fit_s']:.2f} | "
            f"{r['peak'] / gib:.2f} | {r['peak'] / unit:.2f} | "
            f"{(r['peak'] - r['before']) / gib:.2f} | {r['leaves']:,} | {note} |")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.child:
        child(args)
        return
    if args.threads:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)
    lines = peers.header(f"One fit of {args.n:,} × {args.features} rows: time and peak "
                         "memory", ["asv_bench/peers_large.py", *argv])
    lines += [
        "- each fit in a fresh interpreter, data drawn and kernels warmed first; peak = "
        "VmHWM of the whole process during the fit (reset after the data were drawn); "
        "unit = float64 X + int32 keys (n × p × 12 bytes)",
        "",
        "| library | task | rows | fit (s) | peak RSS (GiB) | peak / (X + keys) | "
        "increase (GiB) | leaves | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    print("\n".join(lines), flush=True)
    for task in args.tasks:
        big = _run_child(args, "cartjit", task, args.n)
        print(_row(big), flush=True)
        if args.no_sklearn:
            continue
        if args.sklearn_n != args.n:
            small = _run_child(args, "cartjit", task, args.sklearn_n)
            print(_row(small), flush=True)
        theirs = _run_child(args, "sklearn", task, args.sklearn_n)
        print(_row(theirs), flush=True)
        if args.sklearn_n != args.n:
            scale = (args.n * math.log(args.n)) / (args.sklearn_n * math.log(args.sklearn_n))
            extrapolated = theirs["fit_s"] * scale
            print(f"| sklearn | {task} | {args.n:,} | {extrapolated:.1f} "
                  f"| | | | | extrapolated (n log n) from {args.sklearn_n:,} rows; "
                  f"cartjit / sklearn {big['fit_s'] / extrapolated:.3f} |", flush=True)
        else:
            print(f"| | | | | | | | | cartjit / sklearn "
                  f"{big['fit_s'] / theirs['fit_s']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
