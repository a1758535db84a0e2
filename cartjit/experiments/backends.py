"""Backends: where the cells run.

``serial``
    Cells one after another in this process, each using Numba's threads for its folds.
``threads``
    A thread pool of ``workers`` threads, each running whole cells with one Numba thread
    (``numba.set_num_threads(1)`` is per thread), so cores are shared between cells
    rather than nested; the kernels release the GIL.
``dask``
    Cells are submitted to a ``dask.distributed`` cluster, a ``LocalCluster`` of
    ``workers`` single-threaded processes with ``NUMBA_NUM_THREADS=1`` or an existing
    scheduler (``--scheduler``, ``--scheduler-file``). Before any cell the scheduler and
    every worker are asked to load cartjit's code and must hold the same sources as the
    client (the scheduler unpickles the tasks), and each worker warms up its kernels;
    then each dataset is scattered once to every worker (``broadcast=True``) and the
    cells read those copies. What ran where is returned for ``run.json``.

Every backend calls ``on_result(cell, result)`` / ``on_error(cell, traceback_text)`` in
the calling thread as cells finish; the caller writes the store. An exception raised by
``on_result`` (the store could not be written) stops the backend: queued cells are
dropped, running ones finish, and the exception propagates.
"""
from __future__ import annotations

import logging
import os
import time
import traceback
import uuid
from concurrent.futures import CancelledError, ThreadPoolExecutor, as_completed
from pathlib import Path

from .._dask import process_facts
from .._dask import sigint_ignored as _sigint_ignored
from .._dask import silence_teardown as _silence_teardown
from .._dask import source_digest as _source_digest
from . import cells as _cells

__all__ = ["BACKENDS", "BackendError", "run_serial", "run_threads", "run_dask", "run_backend",
           "scheduler_from_file"]

BACKENDS = ("serial", "threads", "dask")


class BackendError(RuntimeError):
    """A backend cannot start; ``option`` names the CLI option at fault."""

    def __init__(self, option, message):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


def run_serial(pending, data, selection, on_result, on_error, workers):
    for cell in pending:
        d = data[cell.dataset]
        try:
            result = _cells.compute_cell(_cells.cell_payload(cell), d.X, d.y, selection)
        except Exception:
            on_error(cell, traceback.format_exc())
            continue
        on_result(cell, result)


def run_threads(pending, data, selection, on_result, on_error, workers):
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cartjit-cell")
    try:
        futures = {}
        for cell in pending:
            d = data[cell.dataset]
            futures[pool.submit(_cells.compute_single_threaded, _cells.cell_payload(cell),
                                d.X, d.y, selection)] = cell
        processed = set()
        try:
            for fut in as_completed(futures):
                processed.add(fut)
                cell = futures[fut]
                exc = fut.exception()
                if exc is not None:
                    on_error(cell, "".join(traceback.format_exception(exc)))
                else:
                    on_result(cell, fut.result())
        except KeyboardInterrupt:
            # Ctrl-C: drop the queued cells, let the running ones finish (a kernel cannot
            # be interrupted) and save them too, then stop
            pool.shutdown(wait=True, cancel_futures=True)
            for fut, cell in futures.items():
                if (fut not in processed and fut.done() and not fut.cancelled()
                        and fut.exception() is None):
                    on_result(cell, fut.result())
            raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------- dask

#: How long a run tries to reach the scheduler given by --scheduler (seconds).
CONNECT_TIMEOUT_S = 20.0
#: How long a run waits for the first worker of that cluster (seconds).
WAIT_FOR_WORKERS_S = 30.0
_INSTALL_HINT = ("every Dask process (the scheduler, which unpickles the cells' tasks, and "
                 "each worker) must run in an environment where `import cartjit` gives this "
                 "same cartjit")


def _process_facts():
    """What a Dask process says about itself (run on the scheduler)."""
    import numba

    return {**process_facts(), "sources": _source_digest(),
            "numba_threads": numba.config.NUMBA_NUM_THREADS}


def _worker_facts(dask_worker):
    """What a Dask worker says about itself: :func:`_process_facts` and its threads."""
    return {**_process_facts(), "nthreads": dask_worker.state.nthreads}


def _warm_worker(cells):
    """On a worker: compile or load the kernels the cells use (:mod:`.warmup`)."""
    from .warmup import compile_for_cells, warm_up
    return warm_up(work=lambda: compile_for_cells(cells)).as_dict()


def _dask_cell(payload, X, y, selection, data_keys):
    """One cell on a worker: ``(result, where)``; ``where`` says which process ran it
    and whether ``X`` and ``y`` are the worker's own copies of the scattered dataset
    (``shipped``), rather than data sent with the task."""
    from distributed import get_worker
    _cells.route_warnings_in_this_process()
    worker = get_worker()
    shipped = all(worker.data.get(key) is value for key, value in zip(data_keys, (X, y)))
    result = _cells.compute_single_threaded(payload, X, y, selection)
    return result, {"worker": worker.address, "pid": os.getpid(), "shipped": shipped}


def check_dask():
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise BackendError("--backend", "dask needs dask.distributed: pip install "
                                        f"\"cartjit[dask]\" (or \"dask[distributed]\") ({exc})")


def scheduler_from_file(path):
    """The address in a scheduler file (written by ``dask scheduler --scheduler-file``)."""
    import json
    try:
        with open(path, encoding="utf-8") as fh:
            address = json.load(fh)["address"]
    except OSError as exc:
        raise BackendError("--scheduler-file", f"cannot read {path}: {exc.strerror or exc}")
    except (ValueError, KeyError, TypeError):
        raise BackendError("--scheduler-file", f"{path} is not a Dask scheduler file (JSON "
                                               "with an \"address\", as written by `dask "
                                               "scheduler --scheduler-file`)")
    if not isinstance(address, str) or not address:
        raise BackendError("--scheduler-file", f"{path} has no scheduler address")
    return address


def _check_processes(client, where):
    """Refuse a cluster whose scheduler or workers cannot run this cartjit's cells.

    Returns the workers' facts by address.
    """
    mine = _source_digest()
    here = Path(__file__).resolve().parent.parent

    def refuse(who, facts):
        return BackendError("--scheduler", f"{who} runs other cartjit sources (cartjit "
                                           f"{facts['cartjit']} in {facts['package']}) than "
                                           f"this client (in {here}): the results would "
                                           f"not be this cartjit's; {_INSTALL_HINT}")

    try:
        facts = client.run_on_scheduler(_process_facts)
    except (ImportError, AttributeError) as exc:  # no cartjit there, or another one
        raise BackendError("--scheduler", f"the Dask scheduler at {where} cannot load "
                                          f"cartjit's code ({type(exc).__name__}: {exc}); "
                                          f"{_INSTALL_HINT}")
    if facts["sources"] != mine:
        raise refuse(f"the Dask scheduler at {where}", facts)
    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
    except TimeoutError:
        raise BackendError("--scheduler", f"the Dask scheduler at {where} has no worker "
                                          f"(waited {WAIT_FOR_WORKERS_S:.0f} s): start some "
                                          f"with `dask worker {where} --nthreads 1` (and "
                                          "NUMBA_NUM_THREADS=1)")
    try:
        workers = client.run(_worker_facts)
    except (ImportError, AttributeError) as exc:
        raise BackendError("--scheduler", f"a worker of the Dask scheduler at {where} cannot "
                                          f"load cartjit's code ({type(exc).__name__}: {exc}); "
                                          f"{_INSTALL_HINT}")
    for address, facts in sorted(workers.items()):
        if facts["sources"] != mine:
            raise refuse(f"the Dask worker {address}", facts)
    return workers


def _start_dask(workers, scheduler):
    check_dask()

    from distributed import Client, LocalCluster
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except Exception as exc:
            raise BackendError("--scheduler", f"cannot connect to a Dask scheduler at "
                                              f"{scheduler!r} ({type(exc).__name__}: {exc}); "
                                              "is `dask scheduler` running there, and is the "
                                              "address right (e.g. tcp://host:8786)?")
        return client, None
    # The worker processes start with SIGINT ignored (a disposition they inherit): a
    # Ctrl-C at the terminal reaches the whole process group, and this process alone
    # should answer it, by closing the cluster (see _quiet_interrupt).
    with _sigint_ignored():
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR,
                               env={"NUMBA_NUM_THREADS": "1"})
    return Client(cluster), cluster


def _quiet_interrupt(client, cluster):
    """Close the client and the local cluster after a Ctrl-C without a word: the
    teardown loggers are silenced first (their messages would be hundreds of lines of
    tracebacks about connections closed on purpose), SIGINT is ignored while closing
    (a second Ctrl-C does not interrupt the teardown half-way), and the run's own
    one-line message follows from the KeyboardInterrupt raised again by the caller."""
    _silence_teardown()
    with _sigint_ignored():
        if cluster is not None:  # our own workers: silenced too before they lose us
            try:
                client.run(_silence_teardown)
            except Exception:  # noqa: BLE001 - workers already gone say nothing anyway
                pass
        try:
            client.close(timeout=10)
        except Exception:  # noqa: BLE001 - a connection the interrupt cut half-way
            # closed for good: the client's finaliser would otherwise wait for it again
            client.status = "closed"
        if cluster is not None:
            try:
                cluster.close(timeout=10)
            except Exception:  # noqa: BLE001 - the worker processes end with this one
                pass


#: The error of a cell the cluster dropped: a dataset is shipped, not recomputable.
_LOST = ("the Dask cluster dropped this cell ({exc}): the worker processes holding the "
         "copies of its dataset died (a shipped dataset cannot be recomputed, only sent "
         "again), or the one holding its result did before it was collected")


def _cell_error(exc):
    """The text recorded for a cell whose task failed on the cluster."""
    text = "".join(traceback.format_exception(exc))
    if type(exc).__name__ == "KilledWorker":
        text = ("the Dask worker process running this cell died (each time it was tried): "
                "its log says why (out of memory, killed, a crash)\n" + text)
    return text


def run_dask(pending, data, selection, on_result, on_error, workers, scheduler=None):
    """Cells on a Dask cluster; returns what ran where (the ``dask`` record of run.json).

    The record: the scheduler, each worker's facts (process id, host, threads, Numba
    threads) with the number of cells it ran and its kernel warm-up, and per dataset its
    size, the workers it was shipped to before the cells (one copy each), and how many of
    its cells read it from their worker's copy instead of data sent with the task (all).
    """
    from distributed import as_completed as dask_as_completed
    client, cluster = _start_dask(workers, scheduler)
    token = uuid.uuid4().hex[:8]
    try:
        where = scheduler or client.scheduler.address
        facts = _check_processes(client, where)
        t0 = time.perf_counter()
        warm = client.run(_warm_worker, pending)
        warm_s = time.perf_counter() - t0
        scattered = {}
        for name in sorted({c.dataset for c in pending}):
            d = data[name]
            # ship each dataset once to every worker, not once per cell
            scattered[name] = client.scatter([d.X, d.y], broadcast=True, hash=False)
        copies = client.who_has([f for pair in scattered.values() for f in pair])
        futures = {}
        for cell in pending:
            fx, fy = scattered[cell.dataset]
            fut = client.submit(_dask_cell, _cells.cell_payload(cell), fx, fy, list(selection),
                                [fx.key, fy.key], key=f"cartjit-cell-{cell.cell_id}-{token}",
                                pure=False)
            futures[fut.key] = (fut, cell)
        ran = {}
        # results are fetched in the background as cells finish (with_results), not one
        # round trip each when the loop gets to them
        for fut, outcome in dask_as_completed([f for f, _ in futures.values()],
                                              with_results=True, raise_errors=False):
            _, cell = futures[fut.key]
            if fut.status == "error":
                _, exc, tb = outcome
                on_error(cell, _cell_error(exc.with_traceback(tb)))
            elif isinstance(outcome, CancelledError):
                on_error(cell, _LOST.format(exc=outcome))
            else:
                result, ran[cell.cell_id] = outcome
                on_result(cell, result)
            fut.release()
        return _dask_record(where, facts, warm, warm_s, pending, data, scattered, copies, ran)
    except KeyboardInterrupt:
        _quiet_interrupt(client, cluster)
        client = cluster = None
        raise
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def _dask_record(where, facts, warm, warm_s, pending, data, scattered, copies, ran):
    workers = {}
    for address, f in sorted(facts.items()):
        workers[address] = {**{k: f[k] for k in ("pid", "host", "nthreads", "numba_threads")},
                            "cells": 0, "warmup": warm.get(address)}
    datasets = {}
    for name, (fx, fy) in sorted(scattered.items()):
        holders = sorted(set(copies.get(fx.key, ())) & set(copies.get(fy.key, ())))
        datasets[name] = {"bytes": int(data[name].X.nbytes + data[name].y.nbytes),
                          "shipped_to": holders, "cells": 0,
                          "cells_reading_the_worker_copy": 0}
    for cell in pending:
        w = ran.get(cell.cell_id)
        if w is None:
            continue
        entry = workers.setdefault(w["worker"], {"pid": w["pid"], "cells": 0})
        entry["cells"] += 1
        datasets[cell.dataset]["cells"] += 1
        datasets[cell.dataset]["cells_reading_the_worker_copy"] += int(w["shipped"])
    return {"scheduler": where, "warmup_s": round(warm_s, 4), "workers": workers,
            "datasets": datasets}


def run_backend(backend, pending, data, selection, on_result, on_error, workers,
                scheduler=None):
    """Run ``pending`` cells on ``backend`` (one of :data:`BACKENDS`); returns the dask
    backend's record of what ran where (:func:`run_dask`), ``None`` for the others."""
    if backend == "serial":
        run_serial(pending, data, selection, on_result, on_error, workers)
    elif backend == "threads":
        run_threads(pending, data, selection, on_result, on_error, workers)
    else:
        return run_dask(pending, data, selection, on_result, on_error, workers, scheduler)
    return None
