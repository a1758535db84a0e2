"""The experiment runner: cells, their seeds, the backends, the durable cell store, resume.

A config (:mod:`cartjit._config_file`) describes a sweep; its data are loaded and
checked by :mod:`cartjit._experiment_data`; this module cuts the sweep into *cells* and
runs them.

Cells
    One cell is one cross-validation run (SPEC §5): one dataset, one number of folds V,
    one repeat (one random partition) and one combination of tree settings, fitted with
    :class:`~cartjit.CARTClassifierCV` / :class:`~cartjit.CARTRegressorCV` with
    ``n_repeats=1``. Leave-one-out (V = N) has a single partition, so it is one cell
    whatever ``n_repeats`` says. The cells are listed in a fixed order (datasets in file
    order, then settings, V ascending, repeat), and every table is sorted in that order,
    never in the order cells finish.

Seeds
    A cell's ``random_state`` is derived from its key: the first 8 bytes of the
    SHA-256 of the canonical JSON of ``{seed, dataset, V, repeat, stratify}`` (63 bits),
    never Python's ``hash()``. The tree settings are deliberately *not* part of it, so
    that different settings are compared on the same partitions (paired comparisons).
    With ``seeds = [...]`` in the config, repeat r uses ``seeds[r]`` as given.

Determinism
    A cell's result depends only on its key: the CV estimators give identical results
    whatever the number of Numba threads, so serial, threads and Dask runs, with any
    number of workers and in any completion order, write byte-identical result tables
    (apart from the ``wall_time_s`` column, which measures the machine).

Backends
    ``serial``: cells one after another in this process, each using Numba's threads for
    its folds. ``threads``: a thread pool of ``workers`` threads, each running whole
    cells with one Numba thread (``numba.set_num_threads(1)`` is per thread), so cores
    are shared between cells rather than nested; the kernels release the GIL. ``dask``:
    cells are submitted to a ``dask.distributed`` cluster, a ``LocalCluster`` of
    ``workers`` single-threaded processes with ``NUMBA_NUM_THREADS=1`` or an existing
    scheduler; each dataset is scattered once to every worker (``broadcast=True``);
    workers load the kernels from Numba's on-disk cache next to the installed package.

Durability
    Each finished cell is written at once, in the client process, to
    ``OUT/cells/<cell_id>.json``: to a temporary file in the same directory, then renamed
    over the final name with :func:`os.replace` (atomic on POSIX and Windows), so a
    reader sees either no file or a complete one. A run killed at any point (Ctrl-C,
    SIGKILL, a lost worker) keeps every cell finished before: the written data are in
    the operating system's cache, which outlives the process. ``fsync=True`` (``--fsync``)
    also flushes each file to the disk, which protects finished cells against a power
    loss too, at a few milliseconds per cell; without it a power loss can at worst leave
    a torn file, which ``--resume`` detects (every file is parsed and its key checked)
    and recomputes. ``--resume`` re-reads the finished cells and computes only the
    missing ones. A non-empty output directory is refused
    without ``--resume``, and ``--resume`` is refused when the config (or its data)
    changed: ``run.json`` records the config hash.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
import threading
import time
import traceback
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ._config_file import ConfigError, canonical_json, read_config, selection_label, sha256_hex
from ._experiment_data import resolve

__all__ = ["Cell", "RunError", "RunResult", "plan_cells", "cell_seed", "compute_cell",
           "run_experiment", "config_fingerprint", "CellStore", "BACKENDS",
           "default_out_dir", "atomic_write", "versions", "Progress", "progress_enabled",
           "ConfigError"]

#: Version of the cell-file and run.json layout.
FORMAT_VERSION = 1
BACKENDS = ("serial", "threads", "dask")
RUN_JSON = "run.json"
CELLS_DIR = "cells"

#: Per-k columns a cell stores, in the order of the long table.
CELL_COLUMNS = ("k", "n_leaves", "alpha", "alpha_prime", "risk", "cv_risk", "cv_se", "cp",
                "rel_error", "xerror", "xstd")


class RunError(RuntimeError):
    """A run that cannot start or finish; ``option`` names the CLI option at fault."""

    def __init__(self, option, message):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}" if option else message)


# --------------------------------------------------------------------------- cells

@dataclass(frozen=True)
class Cell:
    """One CV run of the sweep; ``order`` is its place in every table."""

    order: int
    cell_id: str
    dataset: str
    task: str
    V: int
    loo: bool
    repeat: int
    seed: int
    stratify: bool
    settings_index: int
    settings: dict = field(hash=False)
    settings_label: str = ""
    settings_slug: str = ""
    dataset_fingerprint: str = ""

    @property
    def key(self) -> dict:
        return cell_key(self.dataset_fingerprint, self)


def cell_key(fingerprint, cell):
    """The canonical key of a cell: everything its result depends on."""
    return {"format": FORMAT_VERSION, "dataset": cell.dataset, "data": fingerprint,
            "V": cell.V, "loo": cell.loo, "repeat": cell.repeat, "seed": cell.seed,
            "stratify": cell.stratify, "settings": cell.settings}


def cell_seed(base_seed, dataset, V, repeat, stratify):
    """``random_state`` of a cell: 63 bits of SHA-256 of its partition key (module doc)."""
    digest = hashlib.sha256(canonical_json(
        {"seed": int(base_seed), "dataset": dataset, "V": int(V), "repeat": int(repeat),
         "stratify": bool(stratify)}).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _value_text(value):
    return value if isinstance(value, str) else canonical_json(value)


def settings_labels(settings_list):
    """Per settings dict: (label, slug) naming only the keys that vary in the sweep."""
    keys = list(settings_list[0]) if settings_list else []
    varying = [k for k in keys
               if len({canonical_json(s[k]) for s in settings_list}) > 1]
    out = []
    for s in settings_list:
        label = ", ".join(f"{k}={_value_text(s[k])}" for k in varying)
        parts = []
        for k in varying:
            v = s[k]
            if isinstance(v, (list, dict)):
                opts = []
                for other in settings_list:
                    if canonical_json(other[k]) not in opts:
                        opts.append(canonical_json(other[k]))
                v = f"{opts.index(canonical_json(v)) + 1}"
            parts.append(f"{k}-{v}")
        slug = "_".join(parts)
        slug = "".join(c if c.isalnum() or c in "._-" else "-" for c in slug)
        out.append((label, slug))
    return out


def plan_cells(data):
    """Every cell of the sweep over the resolved ``data``, in table order."""
    cells = []
    for d in data:
        labels = settings_labels(list(d.settings))
        for s_index, settings in enumerate(d.settings):
            for V in d.V:
                loo = V == d.n_samples
                stratify = d.stratify and not loo
                for r in range(1 if loo else d.n_repeats):
                    if loo:
                        seed = 0
                    elif d.seeds is not None:
                        seed = int(d.seeds[r])
                    else:
                        seed = cell_seed(d.seed, d.name, V, r, stratify)
                    proto = Cell(order=len(cells), cell_id="", dataset=d.name, task=d.task,
                                 V=int(V), loo=loo, repeat=r, seed=seed, stratify=stratify,
                                 settings_index=s_index, settings=settings,
                                 settings_label=labels[s_index][0],
                                 settings_slug=labels[s_index][1],
                                 dataset_fingerprint=d.fingerprint)
                    cid = sha256_hex(cell_key(d.fingerprint, proto))[:24]
                    cells.append(Cell(**{**proto.__dict__, "cell_id": cid}))
    return cells


# --------------------------------------------------------------------------- one cell

def _estimator(task, settings, cv, stratify, seed):
    from .estimators import CARTClassifierCV, CARTRegressorCV
    common = dict(
        max_depth=None if settings["max_depth"] == "none" else settings["max_depth"],
        min_samples_split=settings["min_samples_split"],
        min_samples_leaf=settings["min_samples_leaf"],
        min_impurity_decrease=settings["min_impurity_decrease"],
        max_leaf_nodes=None if settings["max_leaf_nodes"] == "none" else settings["max_leaf_nodes"],
        cv=cv, n_repeats=1, selection="min", random_state=seed)
    if task == "classification":
        priors = settings["priors"]
        cost = settings["cost"]
        return CARTClassifierCV(
            settings["criterion"], priors=priors if isinstance(priors, str) else np.asarray(priors),
            cost=None if cost == "0-1" else np.asarray(cost, dtype=np.float64),
            stratify=stratify, **common)
    return CARTRegressorCV(settings["criterion"], **common)


def compute_cell(spec, X, y, selection):
    """Run one cell; ``spec`` is the plain dict of :func:`_cell_payload`. Pure function.

    Returns a dict: the per-k columns of ``cv_results_`` (as lists), the index k of the
    tree chosen by each selection rule, the number of folds, any warnings, and the wall
    time of the fit.
    """
    from ._cv import select_index
    est = _estimator(spec["task"], spec["settings"], "loo" if spec["loo"] else spec["V"],
                     spec["stratify"], spec["seed"])
    if getattr(warnings.showwarning, "_cartjit_router", False):
        # warnings.catch_warnings is not thread-safe: under the run's router each
        # thread collects its own cell's warnings
        messages = []
        _CELL_WARNINGS.messages = messages
        try:
            t0 = time.perf_counter()
            est.fit(X, y)
            wall = time.perf_counter() - t0
        finally:
            _CELL_WARNINGS.messages = None
    else:  # one thread: the standard way
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            est.fit(X, y)
            wall = time.perf_counter() - t0
        messages = [str(w.message) for w in caught]
    res = est.cv_results_
    cols = {}
    for name in CELL_COLUMNS:
        values = res[name].to_numpy()
        cols[name] = [int(v) for v in values] if name in ("k", "n_leaves") \
            else [float(v) for v in values]
    risk = res["cv_risk"].to_numpy()
    se = res["cv_se"].to_numpy()
    chosen = {selection_label(rule): int(select_index(risk, se, rule)) for rule in selection}
    return {"columns": cols, "chosen": chosen, "n_folds": int(est.n_folds_),
            "warnings": sorted(set(messages)), "wall_time_s": wall}


#: Per-thread list collecting the warnings of the cell that thread is running.
_CELL_WARNINGS = threading.local()


def _make_router(original):
    def show(message, category, filename, lineno, file=None, line=None):
        sink = getattr(_CELL_WARNINGS, "messages", None)
        if sink is not None:
            sink.append(str(message))
        else:
            original(message, category, filename, lineno, file, line)
    show._cartjit_router = True
    return show


@contextlib.contextmanager
def route_cell_warnings():
    """While cells run: every warning goes to the list of the cell of its thread.

    Entered once, in the main thread, around a backend; other warnings are shown as usual
    (every time: the filter is "always" inside, so each cell records its own).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _make_router(warnings.showwarning)
        yield


def _route_warnings_in_this_process():
    """Install the router for good in a Dask worker process (its threads run cells)."""
    if not getattr(warnings.showwarning, "_cartjit_router", False):
        warnings.simplefilter("always")
        warnings.showwarning = _make_router(warnings.showwarning)


def _cell_payload(cell):
    return {"task": cell.task, "settings": cell.settings, "V": cell.V, "loo": cell.loo,
            "stratify": cell.stratify, "seed": cell.seed}


def _compute_single_threaded(payload, X, y, selection):
    """A cell on one Numba thread (threads and Dask backends); the setting is per thread."""
    import numba
    numba.set_num_threads(1)
    return compute_cell(payload, X, y, selection)


# --------------------------------------------------------------------------- store

def _now():
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def atomic_write(path, data, *, fsync=True):
    """Write ``data`` (bytes or str) to ``path`` atomically: temp file + ``os.replace``."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class CellStore:
    """One JSON file per finished cell under ``OUT/cells`` (see the module docstring)."""

    def __init__(self, out_dir, fsync=False):
        self.dir = Path(out_dir) / CELLS_DIR
        self.fsync = fsync

    def path(self, cell_id):
        return self.dir / f"{cell_id}.json"

    def remove_temporaries(self):
        """Delete temp files left by a killed run (never a finished cell)."""
        n = 0
        if self.dir.is_dir():
            for p in self.dir.iterdir():
                if p.name.startswith(".") and p.name.endswith(".tmp"):
                    p.unlink(missing_ok=True)
                    n += 1
        return n

    def read(self, cell):
        """The stored result of ``cell``, or None when absent or not for this key."""
        p = self.path(cell.cell_id)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            warnings.warn(f"ignoring unreadable cell file {p}: {exc}; it will be recomputed",
                          RuntimeWarning, stacklevel=2)
            return None
        if doc.get("cell_id") != cell.cell_id or doc.get("key") != json.loads(canonical_json(cell.key)):
            warnings.warn(f"ignoring cell file {p}: its key does not match the config; it "
                          "will be recomputed", RuntimeWarning, stacklevel=2)
            return None
        return doc["result"]

    def write(self, cell, result, invocation):
        doc = {"format": FORMAT_VERSION, "cell_id": cell.cell_id, "key": cell.key,
               "invocation": invocation, "finished": _now(), "result": result}
        atomic_write(self.path(cell.cell_id), json.dumps(doc, allow_nan=True, indent=None),
                     fsync=self.fsync)


# --------------------------------------------------------------------------- run.json

def versions():
    import numba
    import pandas

    from . import __version__
    return {"cartjit": __version__, "numpy": np.__version__, "numba": numba.__version__,
            "pandas": pandas.__version__, "python": platform.python_version(),
            "platform": platform.platform()}


def config_fingerprint(config, data):
    """``(document, hash)``: the config as the runner understood it, and its SHA-256.

    The document holds what the results depend on: per dataset its source, the
    fingerprint of its values, V, repeats, seeds and the tree settings; and the
    selection rules. Comments, key order, the experiment's name and description, and
    where a data file lives do not change the hash; its contents do.
    """
    doc = {"format": FORMAT_VERSION, "selection": [selection_label(r) for r in config.selection],
           "datasets": []}
    for d in data:
        spec = d.spec
        source = {"source": spec.source}
        if spec.source == "bundled":
            source["bundled"] = spec.bundled
        elif spec.source == "file":
            source.update(format=spec.format, target=spec.target)
        else:
            source["synthetic"] = spec.synthetic
        doc["datasets"].append({
            "name": d.name, **source, "task": d.task, "features": list(d.feature_names),
            "n_samples": d.n_samples, "data_sha256": d.fingerprint, "V": list(d.V),
            "n_repeats": d.n_repeats, "seed": d.seed,
            "seeds": None if d.seeds is None else list(d.seeds), "stratify": d.stratify,
            "settings": list(d.settings)})
    return doc, sha256_hex(doc)


def default_out_dir(config_path):
    """``results/<config file stem>`` under the current directory."""
    return Path("results") / Path(config_path).stem


# --------------------------------------------------------------------------- progress

class Progress:
    """Cells done / total with ETA on stderr: tqdm if installed, else a plain line.

    Shown only when stderr is a terminal, ``CI`` is not set and the run is not quiet.
    """

    def __init__(self, total, done, enabled):
        self.total, self.n = total, done
        self.bar = None
        self.enabled = enabled
        self._t0 = time.perf_counter()
        self._n0 = done
        self._last = 0.0
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            self.bar = tqdm(total=total, initial=done, unit="cell", file=sys.stderr,
                            dynamic_ncols=True, desc="cells", smoothing=0.1)
        else:
            self._plain(force=True)

    def _plain(self, force=False):
        now = time.perf_counter()
        if not force and now - self._last < 0.2 and self.n < self.total:
            return
        self._last = now
        elapsed = now - self._t0
        new = self.n - self._n0
        left = self.total - self.n
        eta = f"{elapsed / new * left:6.1f} s" if new else "     ?"
        pct = 100.0 * self.n / self.total if self.total else 100.0
        sys.stderr.write(f"\rcells {self.n}/{self.total} ({pct:5.1f}%)  elapsed "
                         f"{elapsed:6.1f} s  ETA {eta}")
        sys.stderr.flush()

    def update(self):
        self.n += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled:
            self._plain()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            self._plain(force=True)
            sys.stderr.write("\n")


def progress_enabled(quiet):
    ci = os.environ.get("CI", "").strip().lower()
    return (not quiet) and sys.stderr.isatty() and ci in ("", "0", "false", "no")


# --------------------------------------------------------------------------- backends

def _run_serial(pending, data, selection, on_result, on_error, workers):
    for cell in pending:
        d = data[cell.dataset]
        try:
            result = compute_cell(_cell_payload(cell), d.X, d.y, selection)
        except Exception:
            on_error(cell, traceback.format_exc())
            continue
        on_result(cell, result)


def _run_threads(pending, data, selection, on_result, on_error, workers):
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cartjit-cell")
    try:
        futures = {}
        for cell in pending:
            d = data[cell.dataset]
            futures[pool.submit(_compute_single_threaded, _cell_payload(cell), d.X, d.y,
                                selection)] = cell
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
    _route_warnings_in_this_process()
    return _compute_single_threaded(payload, X, y, selection)


def _start_dask(workers, scheduler, quiet):
    try:
        import logging

        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise RunError("--backend", "dask needs dask.distributed: pip install "
                                    f"\"cartjit[dask]\" (or \"dask[distributed]\") ({exc})")
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except Exception as exc:
            raise RunError("--scheduler", f"cannot connect to the Dask scheduler at "
                                          f"{scheduler!r}: {exc}")
        return client, None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR,
                           env={"NUMBA_NUM_THREADS": "1"})
    return Client(cluster), cluster


def _run_dask(pending, data, selection, on_result, on_error, workers, scheduler=None,
              quiet=False):
    from distributed import as_completed as dask_as_completed
    client, cluster = _start_dask(workers, scheduler, quiet)
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
            fut = client.submit(_dask_cell, _cell_payload(cell), fx, fy, list(selection),
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


# --------------------------------------------------------------------------- the run

@dataclass
class RunResult:
    """What a run did: where, how many cells were computed or reused, the timings."""

    out: Path
    n_cells: int
    computed: list
    reused: int
    failed: dict
    wall_s: float
    cells_wall_s: float
    outputs: list


def _dir_is_empty(path):
    return not any(path.iterdir())


def _check_out(out, resume, config_hash):
    """Decide what to do with the output directory before anything is written."""
    if out.exists() and not out.is_dir():
        raise RunError("--out", f"{out} exists and is not a directory")
    if out.is_dir() and not _dir_is_empty(out):
        run_json = out / RUN_JSON
        if not resume:
            what = "a previous cartjit run" if run_json.exists() else "files"
            raise RunError("--out", f"{out} is not empty (it holds {what}); refusing to "
                                    "overwrite. Add --resume to complete that run, or "
                                    "choose another --out")
        try:
            previous = json.loads(run_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunError("--resume", f"{out} is not empty but has no {RUN_JSON}: it is not "
                                       "a cartjit run directory; choose another --out")
        except (OSError, ValueError) as exc:
            raise RunError("--resume", f"cannot read {run_json}: {exc}")
        if previous.get("config_hash") != config_hash:
            raise RunError("--resume", f"the config (or its data) has changed since the run "
                                       f"in {out} was started (config hash "
                                       f"{str(previous.get('config_hash'))[:12]} there, "
                                       f"{config_hash[:12]} now); resuming would mix "
                                       "results: use another --out")
        return previous
    return None


def _log(quiet, message):
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def run_experiment(config_path, out=None, *, backend="threads", workers=None, scheduler=None,
                   resume=False, quiet=False, fsync=False, dry_run=False):
    """Run (or resume) the sweep of ``config_path`` into ``out``; returns :class:`RunResult`.

    Raises :class:`~cartjit._config_file.ConfigError` for a bad config (before anything is
    written) and :class:`RunError` for bad options or an output directory that cannot be
    used.
    """
    t_start = time.perf_counter()
    started = _now()
    if backend not in BACKENDS:
        raise RunError("--backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if scheduler is not None and backend != "dask":
        raise RunError("--scheduler", "needs --backend dask")
    if scheduler is not None and workers is not None:
        raise RunError("--workers", "give either --scheduler (an existing cluster) or "
                                    "--workers (a local cluster), not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise RunError("--workers", f"must be an integer >= 1, got {workers!r}")
    if workers is None:
        workers = os.cpu_count() or 1
    if backend == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise RunError("--backend", "dask needs dask.distributed: pip install "
                                        f"\"cartjit[dask]\" ({exc})")

    config = read_config(config_path)
    data = resolve(config)
    by_name = {d.name: d for d in data}
    cells = plan_cells(data)
    config_doc, config_hash = config_fingerprint(config, data)
    out = Path(out) if out is not None else default_out_dir(config_path)
    if dry_run:
        return RunResult(out, len(cells), [], 0, {}, time.perf_counter() - t_start, 0.0, [])

    previous = _check_out(out, resume, config_hash)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / CELLS_DIR).mkdir(exist_ok=True)
    except OSError as exc:
        raise RunError("--out", f"cannot create the output directory {out}: "
                                f"{exc.strerror or exc}")
    store = CellStore(out, fsync=fsync)
    store.remove_temporaries()

    results = {}
    if previous is not None:
        for cell in cells:
            r = store.read(cell)
            if r is not None:
                results[cell.cell_id] = r
    reused = len(results)
    pending = [c for c in cells if c.cell_id not in results]

    meta = previous or {
        "format": FORMAT_VERSION, **versions(), "config_file": os.path.abspath(config_path),
        "experiment": config.name, "description": config.description,
        "config_hash": config_hash, "config": config_doc, "n_cells": len(cells),
        "started": started, "ended": None, "status": "running", "invocations": []}
    invocation = len(meta["invocations"])
    meta["versions_now"] = versions()
    meta["backend"] = backend  # of the latest invocation; each one is in "invocations"
    meta["status"] = "running"
    meta["ended"] = None
    meta["invocations"].append({
        "started": started, "ended": None, "backend": backend,
        "workers": None if scheduler else workers, "scheduler": scheduler,
        "resume": bool(resume), "reused": reused, "to_compute": len(pending),
        "status": "running"})
    try:
        atomic_write(out / RUN_JSON, json.dumps(meta, indent=1, allow_nan=True))
        if previous is None:
            atomic_write(out / "config.toml", config.text)
    except OSError as exc:
        if created:
            _remove_run_skeleton(out)
        raise RunError("--out", f"cannot write to {out}: {exc.strerror or exc}")

    _log(quiet, f"cartjit: {config.name}: {len(cells)} cells ({reused} already done, "
                f"{len(pending)} to compute) on {len(data)} dataset(s); backend {backend}"
                + (f" at {scheduler}" if scheduler else f" x{workers}" if backend != "serial" else "")
                + f" -> {out}")

    computed, failed = [], {}
    progress = Progress(len(cells), reused, progress_enabled(quiet))

    def on_result(cell, result):
        store.write(cell, result, invocation)
        results[cell.cell_id] = result
        computed.append(cell.cell_id)
        progress.update()

    def on_error(cell, text):
        failed[cell.cell_id] = text
        progress.update()

    status = "failed"
    t_cells = time.perf_counter()
    try:
        if pending:
            with route_cell_warnings():
                if backend == "serial":
                    _run_serial(pending, by_name, config.selection, on_result, on_error,
                                workers)
                elif backend == "threads":
                    _run_threads(pending, by_name, config.selection, on_result, on_error,
                                 workers)
                else:
                    _run_dask(pending, by_name, config.selection, on_result, on_error,
                              None if scheduler else workers, scheduler, quiet)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        progress.close()
        if status != "complete":
            if status == "failed" and created and not computed:
                _remove_run_skeleton(out)
            else:
                _finish_meta(out, meta, invocation, computed, status)

    if failed:
        _finish_meta(out, meta, invocation, computed, "failed")
        first = next(iter(failed.values()))
        raise RunError("", f"{len(failed)} cell(s) failed (the {len(computed)} finished "
                           f"cells are saved in {out / CELLS_DIR}; rerun with --resume after "
                           f"fixing the cause). First error:\n{first}")

    from .reports import write_reports
    t_reports = time.perf_counter()
    outputs = write_reports(out, config, data, cells, results)
    t_end = time.perf_counter()
    # where the wall time went: config and data, cells, reports (seconds)
    meta["invocations"][invocation]["timings_s"] = {
        "setup": round(t_cells - t_start, 4), "cells": round(t_reports - t_cells, 4),
        "reports": round(t_end - t_reports, 4)}
    meta["outputs"] = outputs
    _finish_meta(out, meta, invocation, computed, "complete")
    cells_wall = float(sum(results[c.cell_id]["wall_time_s"] for c in cells))
    wall = time.perf_counter() - t_start
    _log(quiet, f"cartjit: done: {len(computed)} cells computed, {reused} reused in "
                f"{wall:.1f} s; tables in {out}")
    return RunResult(out, len(cells), computed, reused, failed, wall, cells_wall, outputs)


def _finish_meta(out, meta, invocation, computed, status):
    ended = _now()
    inv = meta["invocations"][invocation]
    inv.update(ended=ended, status=status, computed=computed)
    meta["status"] = status
    if status == "complete":
        meta["ended"] = ended
    try:
        atomic_write(out / RUN_JSON, json.dumps(meta, indent=1, allow_nan=True))
    except OSError:
        pass


def _remove_run_skeleton(out):
    """Undo a run that wrote no cell in a directory it created (no partial garbage)."""
    for name in (RUN_JSON, "config.toml"):
        try:
            (out / name).unlink()
        except OSError:
            pass
    try:
        (out / CELLS_DIR).rmdir()
        out.rmdir()
    except OSError:
        pass

