"""Interleaved A/B timings of two copies of cartjit (say, a base commit and a change).

Each sample is a fresh interpreter that imports cartjit from the copy named on the
command line (``sys.path`` first), warms the JIT on a tiny problem, draws the data
(``cartjit.datasets``, seed 0) and times, best of ``--inner`` calls each: the fit of a
classifier (Gini, 3 classes) and of a regressor on ``--n`` × 20, ``CARTClassifierCV``
with ``--folds`` folds at ``--n``, and ``predict`` of ``--predict`` fresh rows by the
classifier (``--modes``: also entropy, twoing, case weights, tied values, equal
priors and ``min_samples_leaf=5``, the other scan modes; ``--kinds``: fits and CV with
10 % missing values, fits with three categorical features). Samples alternate A, B, A, B,
... for every combination of thread count
(``NUMBA_NUM_THREADS``) and ``CARTJIT_SIMD`` setting, so that background load hits
both copies alike. ``--cold`` adds the cold start: a fresh interpreter with an empty
``NUMBA_CACHE_DIR`` running import, ``load_iris`` and the first fit and predict.

Prints a Markdown table: the median over the ``--repeat`` samples of each copy, and
the ratio B / A. Example::

    python asv_bench/ab.py --a /path/to/base --b . --repeat 3 --cold
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r"""
import sys, time, json
sys.path.insert(0, {root!r})
import numpy as np
import cartjit
from cartjit.datasets import make_classification, make_regression
assert cartjit.__file__.startswith({root!r}), cartjit.__file__
n, n_pred, folds, inner = {n}, {n_pred}, {folds}, {inner}
Xs, ys = make_classification(300, 20, 3, random_state=1)
cartjit.CARTClassifier().fit(Xs, ys).predict(Xs)
cartjit.CARTClassifierCV(cv=3).fit(Xs, ys)
cartjit.CARTRegressor().fit(*make_regression(300, 20, random_state=1))
X, y = make_classification(n + n_pred, 20, 3, random_state=0)
Xr, yr = make_regression(n, 20, random_state=0)
Xt, Xp = X[:n], X[n:]
yt = y[:n]

clock = time.{clock}

def best(fn):
    out = []
    for _ in range(inner):
        t0 = clock(); fn(); out.append(clock() - t0)
    return min(out)

res = {{}}
only = {only!r}

def timed(name, fn):
    if not only or name in only:
        res[name] = best(fn)

timed("fit classification", lambda: cartjit.CARTClassifier().fit(Xt, yt))
timed("fit regression", lambda: cartjit.CARTRegressor().fit(Xr, yr))
timed("CV", lambda: cartjit.CARTClassifierCV(cv=folds).fit(Xt, yt))
if not only or "predict" in only:
    model = cartjit.CARTClassifier().fit(Xt, yt)
    timed("predict", lambda: model.predict(Xp))
if {modes}:  # the scan modes besides the lean Gini scan
    w = np.random.default_rng(0).integers(1, 4, n).astype(float)
    Xq = np.round(Xt, 1)
    timed("fit entropy", lambda: cartjit.CARTClassifier(criterion="entropy").fit(Xt, yt))
    timed("fit Gini, weights", lambda: cartjit.CARTClassifier().fit(Xt, yt, sample_weight=w))
    timed("fit entropy, weights",
          lambda: cartjit.CARTClassifier(criterion="entropy").fit(Xt, yt, sample_weight=w))
    timed("fit Gini, tied X", lambda: cartjit.CARTClassifier().fit(Xq, yt))
    timed("fit twoing", lambda: cartjit.CARTClassifier(criterion="twoing").fit(Xt, yt))
    timed("fit Gini, equal priors", lambda: cartjit.CARTClassifier(priors="equal").fit(Xt, yt))
    timed("fit Gini, min_samples_leaf=5",
          lambda: cartjit.CARTClassifier(min_samples_leaf=5).fit(Xt, yt))
    timed("fit entropy, equal priors",
          lambda: cartjit.CARTClassifier(criterion="entropy", priors="equal").fit(Xt, yt))
if {kinds}:  # missing values (surrogates) and categorical features (subset splits)
    rng = np.random.default_rng(0)
    Xm = Xt.copy()
    Xm[rng.random(Xm.shape) < 0.1] = np.nan
    timed("fit with 10 % missing", lambda: cartjit.CARTClassifier().fit(Xm, yt))
    timed("CV with 10 % missing", lambda: cartjit.CARTClassifierCV(cv=folds).fit(Xm, yt))
    Xc = Xt.copy()
    Xc[:, :3] = np.floor(np.abs(Xc[:, :3]) * 4) % 12
    timed("fit with 3 categorical", lambda: cartjit.CARTClassifier(
        categorical_features=[0, 1, 2]).fit(Xc, yt))
    Xrc = Xr.copy()
    Xrc[:, :3] = np.floor(np.abs(Xrc[:, :3]) * 4) % 12
    timed("fit regression, 3 categorical", lambda: cartjit.CARTRegressor(
        categorical_features=[0, 1, 2]).fit(Xrc, yr))
print(json.dumps(res))
"""

_COLD = r"""
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import cartjit
from cartjit.datasets import load_iris
X, y = load_iris(return_X_y=True)
cartjit.CARTClassifier().fit(X, y).predict(X)
assert cartjit.__file__.startswith({root!r}), cartjit.__file__
print(json.dumps({{"cold start": time.perf_counter() - t0}}))
"""


def _run(code, env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="directory holding the first cartjit/")
    ap.add_argument("--b", required=True, help="directory holding the second cartjit/")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--predict", type=int, default=1_000_000)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inner", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--simd", default="0,auto")
    ap.add_argument("--cold", action="store_true", help="also time the cold start")
    ap.add_argument("--modes", action="store_true",
                    help="also fit with entropy, twoing, weights, tied values, equal "
                         "priors and min_samples_leaf=5")
    ap.add_argument("--kinds", action="store_true",
                    help="also fits with missing values and with categorical features")
    ap.add_argument("--no-warm", action="store_true", help="only the cold start")
    ap.add_argument("--clock", choices=("perf_counter", "process_time"),
                    default="perf_counter",
                    help="wall time, or the process's CPU time (with --threads 1: "
                         "steadier than wall time on a busy machine)")
    ap.add_argument("--only", default="",
                    help="semicolon-separated measures to time (default: all)")
    args = ap.parse_args(argv)
    roots = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    caches = {k: tempfile.mkdtemp(prefix=f"ab-cache-{k}-") for k in roots}
    print(f"A = {roots['A']}\nB = {roots['B']}\n")
    print("| setting | measure | A (s) | B (s) | B / A |\n|---|---|---|---|---|")
    for simd in args.simd.split(","):
        for threads in ([] if args.no_warm else args.threads.split(",")):
            samples = {"A": [], "B": []}
            for _ in range(args.repeat):
                for k in ("A", "B"):
                    env = dict(os.environ, NUMBA_NUM_THREADS=threads, CARTJIT_SIMD=simd,
                               NUMBA_CACHE_DIR=caches[k])
                    samples[k].append(_run(_CHILD.format(
                        root=roots[k], n=args.n, n_pred=args.predict, folds=args.folds,
                        inner=args.inner, modes=args.modes, kinds=args.kinds, clock=args.clock,
                        only=[m.strip() for m in args.only.split(";") if m.strip()]), env))
            for m in samples["A"][0]:
                a = statistics.median(s[m] for s in samples["A"])
                b = statistics.median(s[m] for s in samples["B"])
                print(f"| SIMD={simd}, {threads} thr | {m} | {a:.3f} | {b:.3f} | "
                      f"{b / a:.3f} |", flush=True)
        if args.cold:
            samples = {"A": [], "B": []}
            for _ in range(args.repeat):
                for k in ("A", "B"):
                    env = dict(os.environ, CARTJIT_SIMD=simd,
                               NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="ab-cold-"))
                    samples[k].append(_run(_COLD.format(root=roots[k]), env)["cold start"])
            a = statistics.median(samples["A"])
            b = statistics.median(samples["B"])
            print(f"| SIMD={simd} | cold start (import + first fit + predict, iris) | "
                  f"{a:.2f} | {b:.2f} | {b / a:.3f} |", flush=True)


if __name__ == "__main__":
    main()
