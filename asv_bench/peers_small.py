#!/usr/bin/env python
"""Small data: iris fits against scikit-learn, leave-one-out, and the cold start.

Three reports, printed as Markdown:

iris fit      ``CARTClassifier().fit`` and scikit-learn's ``DecisionTreeClassifier().fit``
              on Fisher's iris in one process, as NumPy arrays (integer labels) and as
              the bundled DataFrame with string labels: the best of ``--blocks`` blocks
              of ``--per-block`` fits, ``--rounds`` times, and the ratio (target <= 0.2).
leave-one-out ``CARTClassifierCV(cv=150).fit`` on the bundled iris, best of ``--repeat``
              (target <= 15 ms).
cold start    (``--cold``) a fresh interpreter with an empty ``NUMBA_CACHE_DIR``: import,
              loading iris, the first fit and the first predict (target <= 5 s for all
              of it).

Set ``CARTJIT_SIMD`` in the environment for the other scan path. Example::

    python asv_bench/peers_small.py --cold
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

_COLD = """
import time
t0 = time.perf_counter()
import cartjit
t1 = time.perf_counter()
from cartjit.datasets import load_iris
X, y = load_iris(return_X_y=True)
t2 = time.perf_counter()
model = cartjit.CARTClassifier().fit(X, y)
t3 = time.perf_counter()
model.predict(X)
t4 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3)
"""


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--blocks", type=_positive, default=7)
    p.add_argument("--per-block", type=_positive, default=300)
    p.add_argument("--rounds", type=_positive, default=2)
    p.add_argument("--repeat", type=_positive, default=7, help="leave-one-out fits")
    p.add_argument("--cold", action="store_true", help="also the cold start")
    return p.parse_args(argv)


def best_block(fit, blocks, per_block):
    """The least time of one call (s), over ``blocks`` blocks of ``per_block`` calls."""
    fit()
    best = float("inf")
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(per_block):
            fit()
        best = min(best, (time.perf_counter() - start) / per_block)
    return best


def cold_start():
    """(import, load, first fit, first predict) seconds in a fresh interpreter with an
    empty kernel cache."""
    with tempfile.TemporaryDirectory(prefix="cartjit-cold-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, "-c", _COLD], env=env, check=True,
                             capture_output=True, text=True).stdout
    return [float(v) for v in out.split()]


def main(argv=None):
    args = parse_args(argv)
    import numpy as np
    from sklearn.tree import DecisionTreeClassifier

    import cartjit
    from cartjit.datasets import load_iris

    frame, labels = load_iris(return_X_y=True)
    X = frame.to_numpy(dtype=np.float64)
    y = np.unique(np.asarray(labels), return_inverse=True)[1]
    print("## Small data: iris\n")
    print(f"- command: `{' '.join(['python asv_bench/peers_small.py', *(argv or sys.argv[1:])])}`"
          f", CARTJIT_SIMD={os.environ.get('CARTJIT_SIMD', 'auto')}")
    print(f"- cartjit {cartjit.__version__} ({os.path.dirname(cartjit.__file__)})\n")
    print("| input | round | cartjit (ms) | scikit-learn (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, Xi, yi in (("NumPy", X, y), ("DataFrame, string labels", frame, labels)):
        for r in range(args.rounds):
            ours = best_block(lambda: cartjit.CARTClassifier().fit(Xi, yi), args.blocks,
                              args.per_block)
            peer = best_block(lambda: DecisionTreeClassifier().fit(Xi, yi), args.blocks,
                              args.per_block)
            print(f"| {name} | {r + 1} | {ours * 1e3:.3f} | {peer * 1e3:.3f} | "
                  f"{ours / peer:.2f} |")
    cartjit.CARTClassifierCV(cv=150).fit(frame, labels)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        cartjit.CARTClassifierCV(cv=150).fit(frame, labels)
        times.append(time.perf_counter() - start)
    print(f"\nLeave-one-out (`CARTClassifierCV(cv=150)`), best of {args.repeat}: "
          f"{min(times) * 1e3:.2f} ms (median {float(np.median(times)) * 1e3:.2f} ms)")
    if args.cold:
        imp, load, fit, pred = cold_start()
        print(f"\nCold start: import {imp:.2f} s + load {load:.2f} s + first fit {fit:.2f} s"
              f" + first predict {pred:.2f} s = {imp + load + fit + pred:.2f} s")


if __name__ == "__main__":
    main()
