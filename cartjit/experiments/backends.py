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
    scheduler; each dataset is scattered once to every worker (``broadcast=True``);
    workers load the kernels from Numba's on-disk cache next to the installed package.

Every backend calls ``on_result(cell, result)`` / ``on_error(cell, traceback_text)`` in
the calling thread as cells finish; the caller writes the store. An exception raised by
``on_result`` (the store could not be written) stops the backend: queued cells are
dropped, running ones finish, and the exception propagates.
"""
from __future__ import annotations

import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed

from . import cells as _cells

__all__ = ["BACKENDS", "BackendError", "run_serial", "run_threads", "run_dask", "run_backend"]

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


def _dask_cell(payload, X, y, selection):
    _cells.route_warnings_in_this_process()
    return _cells.compute_single_threaded(payload, X, y, selection)


def check_dask():
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise BackendError("--backend", "dask needs dask.distributed: pip install "
                                        f"\"cartjit[dask]\" (or \"dask[distributed]\") ({exc})")


def _start_dask(workers, scheduler):
    check_dask()
    import logging

    from distributed import Client, LocalCluster
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except Exception as exc:
            raise BackendError("--scheduler", f"cannot connect to the Dask scheduler at "
                                              f"{scheduler!r}: {exc}")
        return client, None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR,
                           env={"NUMBA_NUM_THREADS": "1"})
    return Client(cluster), cluster


def run_dask(pending, data, selection, on_result, on_error, workers, scheduler=None):
    from distributed import as_completed as dask_as_completed
    client, cluster = _start_dask(workers, scheduler)
    token = uuid.uuid4().hex[:8]
    try:
        scattered = {}
        for name in sorted({c.dataset for c in pending}):
            d = data[name]
            # ship each dataset once to every worker, not once per cell
            fx, fy = client.scatter([d.X, d.y], broadcast=True, hash=False)
            scattered[name] = (fx, fy)
        futures = {}
        for cell in pending:
            fx, fy = scattered[cell.dataset]
            fut = client.submit(_dask_cell, _cells.cell_payload(cell), fx, fy, list(selection),
                                key=f"cartjit-cell-{cell.cell_id}-{token}", pure=False)
            futures[fut.key] = (fut, cell)
        for fut in dask_as_completed([f for f, _ in futures.values()]):
            _, cell = futures[fut.key]
            if fut.status == "error":
                exc = fut.exception()
                on_error(cell, "".join(traceback.format_exception(exc)))
            else:
                on_result(cell, fut.result())
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_backend(backend, pending, data, selection, on_result, on_error, workers,
                scheduler=None):
    """Run ``pending`` cells on ``backend`` (one of :data:`BACKENDS`)."""
    if backend == "serial":
        run_serial(pending, data, selection, on_result, on_error, workers)
    elif backend == "threads":
        run_threads(pending, data, selection, on_result, on_error, workers)
    else:
        run_dask(pending, data, selection, on_result, on_error, workers, scheduler)
