"""A forest grown here against the same forest grown on a local Dask cluster.

Fits ``RandomForestClassifier(--trees, max_features="sqrt")`` on ``--cases`` rows of
``cartjit.datasets.make_classification`` (20 features, 3 classes): here on ``n_jobs`` = 1
and 2 threads, and with ``fit(..., scheduler=client)`` on a ``LocalCluster`` of
``--workers`` processes of one thread each (``NUMBA_NUM_THREADS=1``), started once
(its start and the first fit, which loads the kernels in each worker, are timed apart).
The three fits alternate, ``--repeat`` rounds; each is timed by the wall clock, by this
process's CPU time and, on the cluster, by the CPU time its workers' processes spent
meanwhile (asked of them before and after). Every forest is checked equal to the first,
bit for bit::

    PYTHONPATH=. python asv_bench/forest_dask.py --cases 20000 --trees 100 --repeat 3
"""
from __future__ import annotations

import argparse
import logging
import os
import time


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def _workers_cpu(client):
    return sum(client.run(time.process_time).values())


def _same(a, b):
    import numpy as np
    return all(np.array_equal(getattr(a.forest_, n), getattr(b.forest_, n), equal_nan=True)
               for n in ("feature", "threshold", "left", "value", "roots"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from distributed import Client, LocalCluster

    from cartjit import RandomForestClassifier
    from cartjit.datasets import make_classification

    X, y = make_classification(args.cases, n_features=20, n_classes=3, random_state=0)

    def forest(n_jobs=1):
        return RandomForestClassifier(args.trees, max_features="sqrt", oob_score=True,
                                      random_state=0, n_jobs=n_jobs)

    print(f"load average before: {os.getloadavg()}")
    first, wall, _ = _timed(lambda: forest(2).fit(X, y))  # compile or load the kernels
    print(f"warm-up fit here (n_jobs=2): {wall:.3f} s")
    (client, cluster), wall, _ = _timed(lambda: _start(LocalCluster, Client, args.workers))
    print(f"LocalCluster of {args.workers} processes started in {wall:.3f} s")
    remote, wall, _ = _timed(lambda: forest().fit(X, y, scheduler=client))
    print(f"first fit on the cluster (each worker loads the kernels): {wall:.3f} s")
    assert _same(first, remote)
    times = {"here, n_jobs=1": [], "here, n_jobs=2": [], "cluster": []}
    workers_cpu = []
    try:
        for _ in range(args.repeat):
            for name, fit in (("here, n_jobs=1", lambda: forest(1).fit(X, y)),
                              ("here, n_jobs=2", lambda: forest(2).fit(X, y)),
                              ("cluster", lambda: forest().fit(X, y, scheduler=client))):
                before = _workers_cpu(client)
                est, wall, cpu = _timed(fit)
                if name == "cluster":
                    workers_cpu.append(_workers_cpu(client) - before)
                assert _same(first, est), name
                times[name].append((wall, cpu))
        record = est.cluster_
    finally:
        client.close()
        cluster.close()
    print(f"load average after: {os.getloadavg()}")
    print(f"{args.cases} x 20, {args.trees} trees, m = 4; best of {args.repeat} "
          "(wall s, this process's CPU s), every forest equal bit for bit:")
    for name, runs in times.items():
        best = min(runs)
        print(f"  {name:16s} wall {best[0]:.3f} (all: "
              f"{', '.join(f'{w:.3f}' for w, _ in runs)}), CPU here {best[1]:.3f}")
    print(f"  the workers' CPU during each cluster fit: "
          f"{', '.join(f'{c:.3f}' for c in workers_cpu)} s")
    print(f"  cluster blocks: {record['blocks']}, trees per worker: "
          f"{[w['trees'] for w in record['workers'].values()]}")


def _start(LocalCluster, Client, workers):
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR,
                           env={"NUMBA_NUM_THREADS": "1"})
    return Client(cluster), cluster


if __name__ == "__main__":
    main()
