"""A forest grown on an existing Dask cluster, and what the runner shares of Dask.

:func:`grow_forest_on` grows the trees of :func:`cartjit.engine.forest.grow_forest` on the
workers of a ``dask.distributed`` scheduler (``fit(X, y, scheduler=...)`` of the forests,
``cartjit fit --forest --scheduler ADDRESS``; docs/forests.md, "Threads and clusters"):

1. **Reach the cluster.** ``scheduler`` is an address (``tcp://host:8786``; a client is
   opened, and closed at the end) or a ``distributed.Client`` of the caller's (left
   open). The scheduler and every worker must load this same cartjit (the SHA-256 of its
   sources, :func:`source_digest`): another one would grow other trees.
2. **Ship the data once per worker.** The learning problem (X, the targets, the weights)
   is scattered to every worker (``broadcast=True``), and each worker presorts it once
   (one task per worker, on its threads), as :func:`grow_forest` presorts once.
3. **Trees in contiguous blocks of b.** Trees 0..B-1 are cut into blocks of consecutive
   b, about four per worker thread, each block a task on the worker whose copy and
   presort it reads (another worker may take it over: it then fetches them). A block
   grows its trees one after another on one of the worker's threads
   (:func:`cartjit.engine.forest.grow_trees`); a worker runs as many blocks at once as it
   has threads.
4. **Assemble in b order.** The blocks' trees, in-bag bits and feature seeds are put back
   in the order of b and the forest is assembled here
   (:func:`cartjit.engine.forest.forest_fit`). Tree b depends on (``random_state``, b)
   alone, so the forest is bit for bit the one grown locally, whatever the workers, their
   threads or the blocks; the OOB estimates and importances are computed here from it.

Ctrl-C cancels the blocks not started and closes a client opened here without a word
(the teardown's log lines are the interruption itself); a block running on a worker
cannot be interrupted and ends there, its result dropped.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np

__all__ = ["ClusterError", "grow_forest_on", "check_scheduler", "blocks", "source_digest",
           "sigint_ignored", "silence_teardown", "process_facts", "CONNECT_TIMEOUT_S",
           "WAIT_FOR_WORKERS_S", "BLOCKS_PER_THREAD"]

#: How long a fit tries to reach the scheduler given by address (seconds).
CONNECT_TIMEOUT_S = 20.0
#: How long a fit waits for the first worker of that cluster (seconds).
WAIT_FOR_WORKERS_S = 30.0
#: Blocks of trees per worker thread: enough that a slow worker does not hold the fit
#: up for long (a free thread takes the next block), few enough that each block's
#: round trip is small beside its trees.
BLOCKS_PER_THREAD = 4

_INSTALL = 'pip install "cartjit[dask]" (or "dask[distributed]")'
_SAME_CARTJIT = ("every Dask process (the scheduler and each worker) must run in an "
                 "environment where `import cartjit` gives this same cartjit")


class ClusterError(RuntimeError):
    """The Dask cluster given cannot grow this forest (unreachable, no worker, other
    cartjit sources): ``scheduler: REASON``, the reason saying what to do."""

    def __init__(self, reason):
        self.reason = reason
        super().__init__(f"scheduler: {reason}")


# ----------------------------------------------------------- shared with the runner

def source_digest():
    """SHA-256 of cartjit's Python sources: two processes run the same code iff equal."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def sigint_ignored():
    """SIGINT ignored while the block runs, in the main thread only (elsewhere a no-op:
    signal handlers belong to the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


#: The loggers that report a cluster's teardown: after a Ctrl-C their closed
#: connections, cancelled tasks and lost data are the interruption itself, not news.
TEARDOWN_LOGGERS = ("distributed", "tornado", "asyncio")


def silence_teardown():
    """Raise the teardown loggers of this process, and those below them (dask gives
    some their own level), above CRITICAL."""
    names = [n for n in list(logging.root.manager.loggerDict)
             if n.split(".", 1)[0] in TEARDOWN_LOGGERS]
    for name in {*TEARDOWN_LOGGERS, *names}:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


# ----------------------------------------------------------- reaching the cluster

def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError(f"scheduler=: growing a forest on a Dask cluster needs "
                          f"dask.distributed: {_INSTALL} ({exc})") from None
    return distributed


def check_scheduler(scheduler):
    """``scheduler`` checked before any work: a non-empty address or a running
    ``distributed.Client``, with dask.distributed installed."""
    distributed = _distributed()
    if isinstance(scheduler, distributed.Client):
        if scheduler.status != "running":
            raise ValueError(f"scheduler: the Client given is {scheduler.status}, not "
                             "running; give a connected Client or the scheduler's "
                             "address")
        return
    if not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be None, the address of a Dask scheduler (e.g. "
                        f"'tcp://host:8786') or a distributed.Client, got "
                        f"{type(scheduler).__name__} {scheduler!r}")
    if not scheduler.strip():
        raise ValueError("scheduler must be the address of a Dask scheduler (e.g. "
                         "'tcp://host:8786'), got an empty string")


def _connect(scheduler):
    """``(client, opened here)`` for ``scheduler``: an address or a Client."""
    check_scheduler(scheduler)
    distributed = _distributed()
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    try:
        client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S,
                                    set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - OSError, TimeoutError, a bad address...
        raise ClusterError(f"cannot connect to a Dask scheduler at "
                           f"{scheduler!r} ({type(exc).__name__}: {exc}); is `dask "
                           "scheduler` running there, and is the address right (e.g. "
                           "tcp://host:8786)?") from None
    return client, True


def process_facts():
    """What a Dask process says about itself (the runner's records add to it)."""
    from . import __version__
    return {"pid": os.getpid(), "host": socket.gethostname(), "cartjit": __version__,
            "package": str(Path(__file__).resolve().parent), "sources": source_digest()}


def _worker_facts(dask_worker):
    return {**process_facts(), "nthreads": dask_worker.state.nthreads}


def _check_cluster(client, where):
    """The workers' facts by address, once the scheduler and every worker are known to
    run this cartjit; a :class:`ClusterError` otherwise."""
    mine = source_digest()
    here = Path(__file__).resolve().parent

    def other(who, facts):
        return ClusterError(f"{who} runs other cartjit sources (cartjit "
                            f"{facts['cartjit']} in {facts['package']}) than this "
                            f"process (in {here}): its trees would not be this cartjit's; "
                            f"{_SAME_CARTJIT}")

    def cannot_load(who, exc):
        return ClusterError(f"{who} cannot load cartjit's code "
                            f"({type(exc).__name__}: {exc}); {_SAME_CARTJIT}")

    try:
        facts = client.run_on_scheduler(process_facts)
    except (ImportError, AttributeError) as exc:
        raise cannot_load(f"the Dask scheduler at {where}", exc) from None
    if facts["sources"] != mine:
        raise other(f"the Dask scheduler at {where}", facts)
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
    except TimeoutError:
        raise ClusterError(f"the Dask scheduler at {where} has no worker "
                           f"(waited {WAIT_FOR_WORKERS_S:.0f} s): start some with `dask "
                           f"worker {where}`") from None
    try:
        workers = client.run(_worker_facts)
    except (ImportError, AttributeError) as exc:
        raise cannot_load(f"a worker of the Dask scheduler at {where}", exc) from None
    for address, f in sorted(workers.items()):
        if f["sources"] != mine:
            raise other(f"the Dask worker {address}", f)
    return workers


# ----------------------------------------------------------- on the workers

def _presort_here(problem):
    """A worker's presort of its copy of the problem, on the worker's threads."""
    from distributed import get_worker

    from .engine.presort import presort
    return presort(problem.X, problem.n_levels, max(1, get_worker().state.nthreads))


def _grow_block(problem, presorted, settings, plan, start, stop, problem_key):
    """Trees ``start`` .. ``stop - 1`` on one thread of a worker, from its copy of the
    problem: ``(trees, in-bag bits, feature seeds, where)``; ``where`` says which
    worker grew them and whether ``problem`` was the worker's own scattered copy."""
    from distributed import get_worker

    from .engine.forest import grow_trees
    worker = get_worker()
    own = worker.data.get(problem_key) is problem
    trees, inbag, seeds = grow_trees(problem, settings, plan, start, stop, 1,
                                     presorted=presorted)
    return trees, inbag, seeds, {"worker": worker.address, "pid": os.getpid(),
                                 "own_copy": own}


# ----------------------------------------------------------- the fit

def blocks(n_trees, n_slots):
    """Trees 0..B-1 cut into contiguous blocks ``(start, stop)``: about
    :data:`BLOCKS_PER_THREAD` per worker thread (``n_slots`` threads), at least one
    tree each, their sizes differing by at most one."""
    n_blocks = max(1, min(int(n_trees), BLOCKS_PER_THREAD * int(n_slots)))
    edges = (np.arange(n_blocks + 1, dtype=np.int64) * int(n_trees)) // n_blocks
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def grow_forest_on(scheduler, problem, settings, plan):
    """:func:`cartjit.engine.forest.grow_forest` on the workers of ``scheduler`` (an
    address or a ``distributed.Client``): ``(ForestFit, record)``, the forest bit for
    bit the local one's; ``record`` says what ran where (the scheduler, per worker its
    process, threads, blocks and trees, and the workers the data was shipped to)."""
    from .engine.forest import forest_fit
    from .engine.scaling import check_class_tables

    if problem.is_classification:  # the same check as grow_forest's, before any work
        check_class_tables(problem.X.shape[0], problem.n_classes, settings)
    client, opened = _connect(scheduler)
    futures = []
    try:
        where = scheduler if opened else client.scheduler.address
        facts = _check_cluster(client, where)
        t0 = time.perf_counter()
        # the problem once to every worker, not once per block
        [shipped] = client.scatter([problem], broadcast=True, hash=False)
        futures.append(shipped)
        slots = [a for a, f in sorted(facts.items()) for _ in range(f["nthreads"])]
        presorts = {}
        if not plan.cv_folds:  # each worker presorts its copy once (CV trees: their own)
            for address in sorted(facts):
                presorts[address] = client.submit(
                    _presort_here, shipped, workers=[address], allow_other_workers=True,
                    pure=False, key=f"cartjit-presort-{address}-{shipped.key}")
            futures.extend(presorts.values())
        spans = blocks(plan.n_estimators, len(slots))
        tasks = {}
        for i, (start, stop) in enumerate(spans):
            address = slots[i % len(slots)]
            fut = client.submit(_grow_block, shipped, presorts.get(address), settings,
                                plan, start, stop, shipped.key, workers=[address],
                                allow_other_workers=True, pure=False,
                                key=f"cartjit-trees-{start}-{stop}-{shipped.key}")
            tasks[fut.key] = i
            futures.append(fut)
        copies = client.who_has([shipped]).get(shipped.key, ())
        parts = [None] * len(spans)
        from distributed import as_completed
        for fut, outcome in as_completed([f for f in futures if f.key in tasks],
                                         with_results=True, loop=client.loop):
            parts[tasks[fut.key]] = outcome
            fut.release()
        trees = [t for part in parts for t in part[0]]
        inbag = np.concatenate([part[1] for part in parts])
        seeds = np.concatenate([part[2] for part in parts])
        seconds = time.perf_counter() - t0
        client.cancel(futures)  # the shipped problem and the presorts: freed
        futures = []
    except KeyboardInterrupt:
        _interrupted(client, opened, futures)
        client = None
        raise
    finally:
        if client is not None:
            if futures:
                client.cancel(futures)
            if opened:
                client.close()
    record = _record(where, facts, spans, parts, copies, seconds)
    for part in parts:  # forest_fit frees each tree once digested: no other reference
        part[0].clear()
    return forest_fit(problem, settings, plan, trees, inbag, seeds), record


def _interrupted(client, opened, futures):
    """After a Ctrl-C: the blocks not started dropped, a client opened here closed
    without a word (SIGINT ignored meanwhile), the caller's Client left open."""
    with sigint_ignored():
        if opened:
            silence_teardown()
        try:
            client.cancel(futures)
        except Exception:  # noqa: BLE001 - a connection the interrupt cut
            pass
        if opened:
            try:
                client.close(timeout=10)
            except Exception:  # noqa: BLE001 - closed for good all the same
                client.status = "closed"


def _record(where, facts, spans, parts, copies, seconds):
    workers = {a: {"pid": f["pid"], "host": f["host"], "nthreads": f["nthreads"],
                   "blocks": 0, "trees": 0} for a, f in sorted(facts.items())}
    own = 0
    for (start, stop), part in zip(spans, parts):
        w = part[3]
        entry = workers.setdefault(w["worker"], {"pid": w["pid"], "blocks": 0, "trees": 0})
        entry["blocks"] += 1
        entry["trees"] += stop - start
        own += int(w["own_copy"])
    return {"scheduler": where, "workers": workers, "shipped_to": sorted(copies),
            "blocks": len(spans), "blocks_reading_the_worker_copy": own,
            "seconds": round(seconds, 4)}
