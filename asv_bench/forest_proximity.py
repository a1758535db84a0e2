"""Forest proximities: the time of each step on one fitted forest, one process.

Fits ``RandomForestClassifier(--trees, max_features="sqrt")`` on ``--cases`` rows of
``cartjit.datasets.make_classification`` (20 features, 3 classes), then times, best of
``--repeat`` after one warm-up call (the kernels compiled or loaded): the end nodes
(``forest_apply``), the member lists, the dense out-of-bag and all-case matrices and the
``--k`` nearest cases (out of bag), each kernel on the threads Numba has
(``NUMBA_NUM_THREADS``); ``--nearest-only`` leaves the dense matrices out::

    NUMBA_NUM_THREADS=2 PYTHONPATH=. python asv_bench/forest_proximity.py --cases 5000 --trees 500
"""
from __future__ import annotations

import argparse
import time


def _best(fn, repeat):
    fn()  # warm-up: compile or load the kernels
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nearest-only", action="store_true",
                    help="skip the dense matrices (for n whose n × n matrix is too large)")
    args = ap.parse_args(argv)

    import numba

    import cartjit
    from cartjit.datasets import make_classification
    from cartjit.engine import forest as F
    from cartjit.engine import proximity as PX

    X, y = make_classification(args.cases, 20, 3, random_state=0)
    t0 = time.perf_counter()
    rf = cartjit.RandomForestClassifier(args.trees, n_jobs=args.jobs,
                                        random_state=0).fit(X, y)
    fit = time.perf_counter() - t0
    ends = F.forest_apply(rf.forest_, X)
    bits = PX.oob_bits(rf.inbag_counts() > 0)
    roots = rf.forest_.roots
    oob_ref = PX.leaf_members(ends, roots, bits)
    all_ref = PX.leaf_members(ends, roots)
    steps = {
        "end nodes (forest_apply)": lambda: F.forest_apply(rf.forest_, X),
        "member lists (OOB)": lambda: PX.leaf_members(ends, roots, bits),
        "dense OOB matrix": lambda: PX.proximity_matrix(ends, oob_ref, bits, True),
        "dense all-case matrix": lambda: PX.proximity_matrix(ends, all_ref, None, True),
        f"nearest k={args.k} (OOB)": lambda: PX.nearest(ends, oob_ref, args.k, bits, True),
        "rf.proximity(X) end to end": lambda: rf.proximity(X),
        f"rf.nearest(X, {args.k}) end to end": lambda: rf.nearest(X, args.k),
    }
    if args.nearest_only:
        steps = {name: fn for name, fn in steps.items() if "dense" not in name
                 and "proximity(X)" not in name}
    nodes = rf.forest_.n_nodes
    print(f"{args.cases} cases, {args.trees} trees ({nodes} nodes), fit {fit:.1f} s, "
          f"{numba.get_num_threads()} Numba threads")
    for name, fn in steps.items():
        print(f"{name:32s} {_best(fn, args.repeat):8.3f} s")


if __name__ == "__main__":
    main()
