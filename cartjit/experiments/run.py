"""Running a sweep: config -> data -> cells -> backend -> store -> reports.

:func:`run_experiment` reads and checks the config (:mod:`.config`), loads its data
(:mod:`.data`), plans the cells (:mod:`.cells`), takes the output directory's lock and
reads the cells already finished there (:mod:`.store`), compiles or loads the kernels
(:mod:`.warmup`), runs the missing cells on a backend (:mod:`.backends`), writing each
one as it finishes, and assembles the reports (:mod:`.reports`, :mod:`.study_reports`;
the stability of the chosen trees, :mod:`.stability`).

A non-empty output directory is refused without ``--resume``; ``--resume`` is refused
when the config (or its data) changed (``run.json`` records the config hash), and while
another run holds the directory's lock. Damaged cell files are moved to ``damaged/`` and
recomputed; a damaged ``run.json`` is moved there and rebuilt (the cells carry their own
keys, so results of another config are never mixed in). A store that cannot be written
(a full disk) stops the run with :class:`RunError` naming the file and how to resume.
"""
from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .backends import BACKENDS, BackendError, check_dask, run_backend
from .cells import plan_cells, plan_method_cells, route_cell_warnings
from .config import ConfigError, read_config, selection_label, sha256_hex
from .data import count_sweep, resolve
from .plotter import PlotWorker
from .reports import group_plot_job, write_reports
from .stability import write_stability_reports
from .study_reports import write_study_reports
from .store import (CELLS_DIR, CONFIG_COPY, DAMAGED_DIR, FORMAT_VERSION, KEY_FORMAT,
                    LOCK_FILE, RUN_JSON, CellStore, LockError, RunLock, StoreError,
                    atomic_write, now, quarantine, read_run_json, write_run_json)
from .warmup import compile_for_cells, warm_up

__all__ = ["RunError", "RunResult", "run_experiment", "config_fingerprint",
           "default_out_dir", "versions", "Progress", "progress_enabled", "BACKENDS",
           "ConfigError"]


class RunError(RuntimeError):
    """A run that cannot start or finish; ``option`` names the CLI option at fault."""

    def __init__(self, option, message):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}" if option else message)


# --------------------------------------------------------------------------- run.json

def versions():
    import numba
    import pandas

    from .. import __version__
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
    if config.methods:
        return _study_fingerprint(config, data)
    doc = {"format": KEY_FORMAT, "selection": [selection_label(r) for r in config.selection],
           "datasets": []}
    for d in data:
        source = _source_doc(d.spec)
        doc["datasets"].append({
            "name": d.name, **source, "task": d.task, "features": list(d.feature_names),
            "n_samples": d.n_samples, "data_sha256": d.fingerprint, "V": list(d.V),
            "n_repeats": d.n_repeats, "seed": d.seed,
            "seeds": None if d.seeds is None else list(d.seeds), "stratify": d.stratify,
            "settings": list(d.settings)})
    return doc, sha256_hex(doc)


def _source_doc(spec):
    """Where a dataset comes from, as the config hash sees it."""
    source = {"source": spec.source}
    if spec.source == "bundled":
        source["bundled"] = spec.bundled
    elif spec.source == "file":
        source.update(format=spec.format, target=spec.target)
    elif spec.source == "generator":
        source["generator"] = spec.generator
    else:
        source["synthetic"] = spec.synthetic
    return source


def _study_fingerprint(config, data):
    """:func:`config_fingerprint` of a methods study: per dataset its source, values and
    protocol, and the methods with their parameters."""
    doc = {"format": KEY_FORMAT, "study": 1,
           "methods": [{"label": m.label, "estimator": m.estimator, "params": m.params}
                       for m in config.methods],
           "datasets": [{"name": d.name, **_source_doc(d.spec), "task": d.task,
                         "features": list(d.feature_names), "n_samples": d.n_samples,
                         "n_learn": d.n_learn, "data_sha256": d.fingerprint,
                         "protocol": d.protocol} for d in data]}
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
    compile_s: float = 0.0
    compiled: bool = False


def _dir_is_empty(path):
    return not any(p.name != LOCK_FILE for p in path.iterdir())


def _check_out(out, resume, config_hash):
    """Decide what to do with the output directory; writes nothing but a quarantine.

    Returns ``(previous run.json or None, True when a damaged run.json was set aside)``.
    """
    if out.exists() and not out.is_dir():
        raise RunError("--out", f"{out} exists and is not a directory")
    if not (out.is_dir() and not _dir_is_empty(out)):
        return None, False
    run_json = out / RUN_JSON
    if not resume:
        what = "a previous cartjit run" if os.path.lexists(run_json) else "files"
        raise RunError("--out", f"{out} is not empty (it holds {what}); refusing to "
                                "overwrite. Add --resume to complete that run, or "
                                "choose another --out")
    try:
        previous, problem = read_run_json(out)
    except FileNotFoundError:
        raise RunError("--resume", f"{out} is not empty but has no {RUN_JSON}: it is not "
                                   "a cartjit run directory; choose another --out")
    if problem is not None:
        if not (out / CELLS_DIR).is_dir():
            raise RunError("--resume", f"{run_json} {problem}, and {out} has no {CELLS_DIR}/ "
                                       "directory: it does not look like a cartjit run; "
                                       "choose another --out")
        return None, problem
    if previous["config_hash"] != config_hash:
        raise RunError("--resume", f"the config (or its data) has changed since the run "
                                   f"in {out} was started (config hash "
                                   f"{previous['config_hash'][:12]} there, "
                                   f"{config_hash[:12]} now); resuming would mix "
                                   "results: use another --out")
    return previous, False


def _log(quiet, message):
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def _check_options(backend, workers, scheduler):
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
    if backend == "dask":
        try:
            check_dask()
        except BackendError as exc:
            raise RunError(exc.option, exc.message) from None


def _store_failure(exc, out, n_saved, what):
    """The message of a run stopped by a store that cannot be written."""
    full = exc.errno is not None and exc.errno in (28, 122)  # ENOSPC, EDQUOT
    fix = "free some disk space" if full else "fix the cause"
    return RunError("", f"{exc} while writing {what}. The run stopped; the {n_saved} cells "
                        f"finished and saved so far are in {out / CELLS_DIR}. {fix.capitalize()}, "
                        f"then rerun the same command with --resume to compute only the "
                        "missing cells and write the reports")


def run_experiment(config_path, out=None, *, backend="threads", workers=None, scheduler=None,
                   resume=False, quiet=False, fsync=False, dry_run=False, warmup=True):
    """Run (or resume) the sweep of ``config_path`` into ``out``; returns :class:`RunResult`.

    Raises :class:`~cartjit.experiments.config.ConfigError` for a bad config (before
    anything is written) and :class:`RunError` for bad options, an output directory that
    cannot be used, failed cells or a store that cannot be written. ``warmup=False``
    skips compiling the kernels ahead (the first cells then pay for it).
    """
    t_start = time.perf_counter()
    started = now()
    _check_options(backend, workers, scheduler)
    if workers is None:
        workers = os.cpu_count() or 1

    config = read_config(config_path)
    out = Path(out) if out is not None else default_out_dir(config_path)
    if dry_run:  # the cells are counted, not listed (data.count_sweep)
        return RunResult(out, count_sweep(config), [], 0, {},
                         time.perf_counter() - t_start, 0.0, [])
    data = resolve(config)
    by_name = {d.name: d for d in data}
    cells = plan_method_cells(data) if config.methods else plan_cells(data)
    config_doc, config_hash = config_fingerprint(config, data)

    _check_out(out, resume, config_hash)  # refuse before touching anything
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError("--out", f"cannot create the output directory {out}: "
                                f"{exc.strerror or exc}")
    lock = RunLock(out)
    try:
        lock.acquire()
    except LockError as exc:
        raise RunError("--out", str(exc)) from None
    except OSError as exc:
        if created:
            _remove_run_skeleton(out)
        raise RunError("--out", f"cannot create the lock file {out / LOCK_FILE}: "
                                f"{exc.strerror or exc}; if it is not a file left by "
                                "cartjit, move it away")
    run = _Run(config_path, config, data, by_name, cells, config_doc, config_hash, out,
               created, backend, workers, scheduler, resume, quiet, fsync, warmup, t_start,
               started)
    try:
        return _run_locked(run, lock)
    finally:
        lock.release()


@dataclass(frozen=True)
class _Run:
    """What an invocation of :func:`run_experiment` has settled before it takes the
    output directory's lock: the config, its data and cells, the directory and the
    options, and when it started."""

    config_path: object
    config: object      # config.Config
    data: list          # the datasets (data.resolve)
    by_name: dict       # ... by name
    cells: list         # every cell of the sweep (cells.plan_cells)
    config_doc: dict    # config_fingerprint's document
    config_hash: str    # ... and hash
    out: Path
    created: bool       # the output directory was made by this invocation
    backend: str
    workers: object     # int (None with a scheduler)
    scheduler: object
    resume: bool
    quiet: bool
    fsync: bool
    warmup: bool
    t_start: float      # time.perf_counter() at the start
    started: str        # the start as a timestamp (store.now)


def _run_locked(run, lock):
    """:func:`run_experiment`'s ``run`` once it holds ``lock``."""
    config, cells, out, created, quiet = run.config, run.cells, run.out, run.created, run.quiet
    backend, workers, scheduler, started = run.backend, run.workers, run.scheduler, run.started
    if lock.took_over is not None:
        _log(quiet, f"cartjit: took over the lock of {out} left by process {lock.took_over}, "
                    "which is no longer running")
    # read the directory's state again, now that no other run can change it
    previous, damaged = _check_out(out, run.resume, run.config_hash)
    if damaged:
        quarantine(out, out / RUN_JSON, damaged,
                   "it is rebuilt (the record of earlier invocations is lost; every cell "
                   "file is still checked against the config)")
    rules = tuple(selection_label(r) for r in config.selection)
    try:
        (out / CELLS_DIR).mkdir(exist_ok=True)
    except OSError as exc:
        if created:
            _remove_run_skeleton(out)
        raise RunError("--out", f"cannot create {out / CELLS_DIR}: {exc.strerror or exc}")
    store = CellStore(out, fsync=run.fsync, rules=rules)
    store.remove_temporaries()

    results = {}
    if run.resume:
        for cell in cells:
            r = store.read(cell)
            if r is not None:
                results[cell.cell_id] = r
    reused = len(results)
    pending = [c for c in cells if c.cell_id not in results]

    meta = previous or {
        "format": FORMAT_VERSION, **versions(),
        "config_file": os.path.abspath(run.config_path),
        "experiment": config.name, "description": config.description,
        "config_hash": run.config_hash, "config": run.config_doc, "n_cells": len(cells),
        "started": started, "ended": None, "status": "running", "invocations": []}
    if damaged:
        meta["rebuilt"] = f"{now()}: the previous {RUN_JSON} {damaged}"
    invocation = len(meta["invocations"])
    meta["versions_now"] = versions()
    meta["backend"] = backend  # of the latest invocation; each one is in "invocations"
    meta["status"] = "running"
    meta["ended"] = None
    meta["invocations"].append({
        "started": started, "ended": None, "backend": backend,
        "workers": None if scheduler else workers, "scheduler": scheduler,
        "resume": bool(run.resume), "reused": reused, "to_compute": len(pending),
        "status": "running"})
    try:
        write_run_json(out, meta)
        if previous is None:
            atomic_write(out / CONFIG_COPY, config.text, fsync=False)
    except StoreError as exc:
        if created:
            _remove_run_skeleton(out)
        raise RunError("--out", f"cannot write to {out}: {exc.cause}")

    _log(quiet, f"cartjit: {config.name}: {len(cells)} cells ({reused} already done, "
                f"{len(pending)} to compute) on {len(run.data)} dataset(s); backend {backend}"
                + (f" at {scheduler}" if scheduler else f" x{workers}" if backend != "serial" else "")
                + f" -> {out}")

    # the plots' helper imports matplotlib while the kernels load and the cells run
    plotter = PlotWorker() if pending and not config.methods and _plots_wanted() else None
    try:
        return _run_cells(run, meta, invocation, store, results, reused, pending, plotter)
    finally:
        if plotter is not None:
            plotter.close()


def _plots_wanted():
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None


def _run_cells(run, meta, invocation, store, results, reused, pending, plotter):
    """Compute :func:`_run_locked`'s ``pending`` cells of ``run`` (``results`` holds the
    ``reused`` ones) and write the reports; ``meta`` is run.json's record, and
    ``invocation`` this invocation's row of it."""
    config, data, cells, out, quiet = run.config, run.data, run.cells, run.out, run.quiet
    compiled = None
    t_compile = time.perf_counter()
    if pending and run.warmup:
        compiled = warm_up(announce=None if quiet else lambda m: _log(False, m),
                           work=lambda: compile_for_cells(pending))
        if compiled.compiled and not quiet:
            _log(quiet, f"cartjit: kernels compiled in {compiled.seconds:.1f} s (cached in "
                        f"{compiled.cache_dir}; later runs load them)")
        meta["invocations"][invocation]["compile"] = compiled.as_dict()

    computed, failed = [], {}
    progress = Progress(len(cells), reused, progress_enabled(quiet))

    # cells still to compute per (dataset, settings) group: at 0 its plot is sent
    to_go, group_cells = {}, {}
    for cell in cells if plotter is not None else ():
        group_cells.setdefault((cell.dataset, cell.settings_label), []).append(cell)
    for cell in pending if plotter is not None else ():
        key = (cell.dataset, cell.settings_label)
        to_go[key] = to_go.get(key, 0) + 1

    def on_result(cell, result):
        store.write(cell, result, invocation)
        results[cell.cell_id] = result
        computed.append(cell.cell_id)
        progress.update()
        if plotter is None:
            return
        key = (cell.dataset, cell.settings_label)
        to_go[key] -= 1
        if to_go[key] == 0 and plotter is not None and plotter.alive:
            try:
                job = group_plot_job(config, data, group_cells[key], results)
            except Exception:  # noqa: BLE001 - the reports draw it (and say what fails)
                return
            plotter.submit([job])

    def on_error(cell, text):
        failed[cell.cell_id] = text
        progress.update()

    status = "failed"
    t_cells = time.perf_counter()
    try:
        if pending:
            with route_cell_warnings():
                try:
                    where = run_backend(run.backend, pending, run.by_name, config.selection,
                                        on_result, on_error,
                                        None if run.scheduler else run.workers, run.scheduler)
                    if where is not None:  # the dask backend: what ran where
                        meta["invocations"][invocation]["dask"] = where
                except BackendError as exc:
                    raise RunError(exc.option, exc.message) from None
        status = "complete"
    except StoreError as exc:
        status = "failed"
        raise _store_failure(exc, out, len(computed) + reused, "a cell file") from None
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        progress.close()
        if status != "complete":
            if status == "failed" and run.created and not computed:
                _remove_run_skeleton(out)
            else:
                _finish_meta(out, meta, invocation, computed, status)

    if failed:
        _finish_meta(out, meta, invocation, computed, "failed")
        first = next(iter(failed.values()))
        raise RunError("", f"{len(failed)} cell(s) failed (the {len(computed)} finished "
                           f"cells are saved in {out / CELLS_DIR}; rerun with --resume after "
                           f"fixing the cause). First error:\n{first}")

    t_reports = time.perf_counter()
    compile_s = compiled.seconds if compiled is not None else 0.0
    try:
        info = compiled.as_dict() if compiled else None
        outputs = (write_study_reports(out, config, data, cells, results, compile_info=info)
                   if config.methods else
                   write_reports(out, config, data, cells, results, compile_info=info,
                                 plotter=plotter))
        outputs = outputs + write_stability_reports(out, config, data, cells, results)
    except StoreError as exc:
        _finish_meta(out, meta, invocation, computed, "failed")
        raise _store_failure(exc, out, len(cells), "the reports") from None
    t_end = time.perf_counter()
    # where the wall time went: config and data, kernels, cells, reports (seconds)
    meta["invocations"][invocation]["timings_s"] = {
        "setup": round(t_compile - run.t_start, 4), "compile": round(t_cells - t_compile, 4),
        "cells": round(t_reports - t_cells, 4), "reports": round(t_end - t_reports, 4)}
    meta["outputs"] = outputs
    _finish_meta(out, meta, invocation, computed, "complete")
    cells_wall = float(sum(results[c.cell_id]["wall_time_s"] for c in cells))
    wall = time.perf_counter() - run.t_start
    _log(quiet, f"cartjit: done: {len(computed)} cells computed, {reused} reused in "
                f"{wall:.1f} s; tables in {out}")
    return RunResult(out, len(cells), computed, reused, failed, wall, cells_wall, outputs,
                     compile_s, bool(compiled and compiled.compiled))


def _finish_meta(out, meta, invocation, computed, status):
    ended = now()
    inv = meta["invocations"][invocation]
    inv.update(ended=ended, status=status, computed=computed)
    meta["status"] = status
    if status == "complete":
        meta["ended"] = ended
    try:
        write_run_json(out, meta)
    except StoreError:
        pass


def _remove_run_skeleton(out):
    """Undo a run that wrote no cell in a directory it created (no partial garbage)."""
    for name in (RUN_JSON, CONFIG_COPY, LOCK_FILE):
        try:
            (out / name).unlink()
        except OSError:
            pass
    for sub in (CELLS_DIR, DAMAGED_DIR):
        try:
            (out / sub).rmdir()
        except OSError:
            pass
    try:
        out.rmdir()
    except OSError:
        pass
