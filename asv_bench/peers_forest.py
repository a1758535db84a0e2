"""Forests: cartjit's RandomForestClassifier against scikit-learn's, one process.

Fits both on ``--train`` rows of ``cartjit.datasets.make_classification`` (20 features,
3 classes), ``--trees`` trees grown to purity, ``max_features`` as given (default
``none``: every feature, i.e. bagging), ``--jobs`` threads on each side, alternating
the two libraries ``--repeat`` times (best of each), then times ``predict`` of
``--rows`` fresh rows of the same problem::

    python asv_bench/peers_forest.py --train 20000 --trees 100 --jobs 2 --rows 100000
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=float, default=2e4)
    ap.add_argument("--rows", type=float, default=1e5)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-features", default="none")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    import numba
    from sklearn.ensemble import RandomForestClassifier as SkForest

    import cartjit
    from cartjit.datasets import make_classification
    from cartjit.ensemble import FEATURE_SUBSETS

    m = None if args.max_features == "none" else (
        args.max_features if args.max_features in ("sqrt", "log2") else
        float(args.max_features) if "." in args.max_features else int(args.max_features))
    n_train, n_rows = int(args.train), int(args.rows)
    X, y = make_classification(n_train + n_rows, 20, 3, random_state=0)
    Xtr, ytr, Xte = X[:n_train], y[:n_train], np.ascontiguousarray(X[n_train:])

    def ours():
        return cartjit.RandomForestClassifier(args.trees, max_features=m, n_jobs=args.jobs,
                                              random_state=0).fit(Xtr, ytr)

    def theirs():
        return SkForest(args.trees, max_features=m, n_jobs=args.jobs,
                        random_state=0).fit(Xtr, ytr)

    cartjit.RandomForestClassifier(2, max_features=m).fit(Xtr[:500], ytr[:500]).predict(
        Xte[:10])  # compiled or loaded before the clock starts
    fits = {"cartjit": [], "scikit-learn": []}
    models = {}
    for _ in range(args.repeat):
        for name, f in (("cartjit", ours), ("scikit-learn", theirs)):
            t = time.perf_counter()
            models[name] = f()
            fits[name].append(time.perf_counter() - t)
    preds = {"cartjit": [], "scikit-learn": []}
    out = {}
    for _ in range(args.repeat):
        for name in preds:
            t = time.perf_counter()
            out[name] = models[name].predict(Xte)
            preds[name].append(time.perf_counter() - t)
    a, b = models["cartjit"], models["scikit-learn"]
    nodes_a = a.forest_.n_nodes
    nodes_b = sum(e.tree_.node_count for e in b.estimators_)
    print(f"command: python {' '.join(sys.argv)}")
    print(f"numba threads {numba.get_num_threads()}; load average "
          f"{os.getloadavg()[0]:.2f}; per-node feature subsets in the engine: "
          f"{FEATURE_SUBSETS}; nodes {nodes_a} (cartjit) / {nodes_b} (sklearn)")
    fa, fb = min(fits["cartjit"]), min(fits["scikit-learn"])
    pa, pb = min(preds["cartjit"]), min(preds["scikit-learn"])
    print(f"fit {n_train} x 20, {args.trees} trees, max_features={m}, {args.jobs} jobs: "
          f"cartjit {fa:.3f} s, scikit-learn {fb:.3f} s, ratio {fa / fb:.3f}")
    print(f"predict {n_rows} rows: cartjit {pa:.4f} s, scikit-learn {pb:.4f} s, ratio "
          f"{pa / pb:.3f}; agreement {np.mean(out['cartjit'] == out['scikit-learn']):.4f}")
    for name in fits:
        print(f"all {name} fits:", ", ".join(f"{t:.3f}" for t in fits[name]),
              "; predicts:", ", ".join(f"{t:.4f}" for t in preds[name]))


if __name__ == "__main__":
    main()
