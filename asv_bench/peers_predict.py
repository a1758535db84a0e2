"""Prediction: cartjit against scikit-learn on many rows, same tree data, one process.

Fits both libraries on ``--train`` rows of ``cartjit.datasets.make_classification``
(20 features, 3 classes, grown to purity), then times ``predict`` on ``--rows`` rows
drawn from the same problem (best of ``--repeat``), and prints the ratio::

    python asv_bench/peers_predict.py --train 100000 --rows 1000000
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=float, default=1e5)
    ap.add_argument("--rows", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import numba
    from sklearn.tree import DecisionTreeClassifier

    import cartjit
    from cartjit.datasets import make_classification

    n_train, n_rows = int(args.train), int(args.rows)
    X, y = make_classification(n_train + n_rows, 20, 3, random_state=0)
    Xtr, ytr, Xte = X[:n_train], y[:n_train], np.ascontiguousarray(X[n_train:])
    ours = cartjit.CARTClassifier().fit(Xtr, ytr)
    theirs = DecisionTreeClassifier(random_state=0).fit(Xtr, ytr)
    ours.predict(Xte[:100])

    def best(f):
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t)
        return min(times), times, out

    t_ours, all_ours, p_ours = best(lambda: ours.predict(Xte))
    t_theirs, all_theirs, p_theirs = best(lambda: theirs.predict(Xte))
    print(f"command: python {' '.join(sys.argv)}")
    print(f"numba threads {numba.get_num_threads()}; load average {os.getloadavg()[0]:.2f}; "
          f"tree nodes {ours.tree_.n_nodes} (cartjit) / {theirs.tree_.node_count} (sklearn)")
    print(f"predict {n_rows} rows: cartjit {t_ours:.4f} s, scikit-learn {t_theirs:.4f} s, "
          f"ratio {t_ours / t_theirs:.2f}; agreement {np.mean(p_ours == p_theirs):.4f}")
    print("all cartjit:", ", ".join(f"{t:.4f}" for t in all_ours))
    print("all sklearn:", ", ".join(f"{t:.4f}" for t in all_theirs))


if __name__ == "__main__":
    main()
