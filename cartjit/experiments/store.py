"""The result store: the output layout, atomic writes, the cell files, run.json, the lock.

Layout of an output directory ``OUT``::

    OUT/run.json          what was run: versions, the config and its hash, invocations
    OUT/config.toml       the config file as read
    OUT/cells/<id>.json   one file per finished cell (what --resume reuses)
    OUT/damaged/          files --resume found damaged, moved aside (never deleted)
    OUT/.cartjit.lock     held while a run writes into OUT
    OUT/results.csv ...   the reports (:mod:`cartjit.experiments.reports`)

Durability
    Every file is written to a temporary file in the same directory and renamed over its
    final name with :func:`os.replace` (atomic on POSIX and Windows): a reader sees no
    file or a complete one. With ``fsync=True`` each cell file is also flushed to the
    disk before it counts as done (survives a power loss, not only a killed process).
    Any :class:`OSError` while writing (a full disk, ``ENOSPC``; a quota; a read-only
    file system) becomes a :class:`StoreError` naming the file and the cause.

Integrity
    A cell file holds the cell's key (everything its result depends on), its result,
    ``key_sha256`` (SHA-256 of the canonical JSON of the key) and ``sha256`` (SHA-256 of
    the canonical JSON of everything else in the file). :meth:`CellStore.read` checks the
    JSON, the shape and types of every field, the key against the plan and both hashes;
    a file that fails any check is moved to ``OUT/damaged/`` with a warning naming it and
    the cell is recomputed. The hashes detect accidental damage (a torn write, a bad disk,
    an edit by hand); they are no defence against someone who edits a file and recomputes
    its hashes. ``run.json`` carries the same kind of ``sha256``.

Lock
    :class:`RunLock` holds an exclusive lock on ``OUT/.cartjit.lock`` while a run writes
    into ``OUT`` (``fcntl.flock`` where available, else a file created with ``O_EXCL``),
    and writes the holder's pid and host into it. A second run into the same directory is
    refused with the holder's pid. The operating system drops an ``flock`` when its
    process dies, so a lock left by a killed run is taken over; with the ``O_EXCL``
    fallback a lock file whose pid is no longer running on this host is taken over.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import socket
import threading
import warnings
from datetime import datetime, timezone
from pathlib import Path

from .config import canonical_json

__all__ = ["FORMAT_VERSION", "KEY_FORMAT", "RUN_JSON", "CONFIG_COPY", "CELLS_DIR", "DAMAGED_DIR",
           "LOCK_FILE", "CELL_COLUMNS", "INT_COLUMNS", "StoreError", "LockError",
           "atomic_write", "CellStore", "RunLock", "content_sha256", "seal",
           "check_seal", "read_run_json", "now"]

#: Version of the cell-file and run.json layout (2: files carry SHA-256 seals).
FORMAT_VERSION = 2
#: Version of the cell key (what a result depends on; cell ids and the config hash are
#: hashes of it): unchanged since the first layout, so cell ids stay the same.
KEY_FORMAT = 1
RUN_JSON = "run.json"
CONFIG_COPY = "config.toml"
CELLS_DIR = "cells"
DAMAGED_DIR = "damaged"
LOCK_FILE = ".cartjit.lock"

#: The per-k columns of a cell, in the order of the long table: the one list that the
#: cell computation, the cell files and the reports all use.
CELL_COLUMNS = ("k", "n_leaves", "alpha", "alpha_prime", "risk", "cv_risk", "cv_se", "cp",
                "rel_error", "xerror", "xstd")
#: Those of :data:`CELL_COLUMNS` that hold integers.
INT_COLUMNS = ("k", "n_leaves")


class StoreError(RuntimeError):
    """Writing the store failed (a full disk, permissions, ...); ``path`` is the file."""

    def __init__(self, path, exc):
        self.path = Path(path)
        self.errno = getattr(exc, "errno", None)
        name = errno.errorcode.get(self.errno, "") if self.errno else ""
        cause = getattr(exc, "strerror", None) or str(exc)
        self.cause = f"{cause} ({name})" if name else cause
        super().__init__(f"cannot write {self.path}: {self.cause}")


class LockError(RuntimeError):
    """Another run holds the lock of the output directory."""


def now():
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


# --------------------------------------------------------------------------- writing

def _write_file(path, data, fsync):
    """Write ``data`` to ``path`` (a new temporary file); flush to disk with ``fsync``."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())


def atomic_write(path, data, *, fsync=True):
    """Write ``data`` (bytes or str) to ``path`` atomically: temp file + ``os.replace``.

    An :class:`OSError` is raised as :class:`StoreError` (naming ``path``), and the
    temporary file is removed.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        _write_file(tmp, data, fsync)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise StoreError(path, exc) from exc
        raise


# --------------------------------------------------------------------------- seals

def content_sha256(doc):
    """SHA-256 of the canonical JSON of ``doc`` without its ``sha256`` entry."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def seal(doc):
    """``doc`` with its ``sha256`` (of everything else) set."""
    doc = dict(doc)
    doc["sha256"] = content_sha256(doc)
    return doc


def check_seal(doc):
    """True when ``doc`` carries a ``sha256`` that matches its content."""
    return isinstance(doc, dict) and isinstance(doc.get("sha256"), str) \
        and doc["sha256"] == content_sha256(doc)


def _dumps(doc, indent=None):
    return json.dumps(doc, allow_nan=True, indent=indent)


# --------------------------------------------------------------------------- cell shape

def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def result_problem(result, rules):
    """Why ``result`` is not a well-formed cell result for the rules ``rules``, or None."""
    if not isinstance(result, dict):
        return f"the result is {type(result).__name__}, not an object"
    for key in ("columns", "chosen", "n_folds", "warnings", "wall_time_s"):
        if key not in result:
            return f"the result has no {key!r}"
    cols = result["columns"]
    if not isinstance(cols, dict):
        return "'columns' is not an object"
    K = None
    for name in CELL_COLUMNS:
        values = cols.get(name)
        if not isinstance(values, list) or not values:
            return f"column {name!r} is missing or not a non-empty list"
        if K is None:
            K = len(values)
        elif len(values) != K:
            return f"column {name!r} has {len(values)} entries, column 'k' has {K}"
        check = _is_int if name in INT_COLUMNS else _is_real
        if not all(check(v) for v in values):
            kind = "integers" if name in INT_COLUMNS else "numbers"
            return f"column {name!r} holds values that are not {kind}"
    if cols["k"] != list(range(1, K + 1)):
        return "column 'k' is not 1, 2, ..., K"
    if any(b > a for a, b in zip(cols["n_leaves"], cols["n_leaves"][1:])) or \
            cols["n_leaves"][-1] < 1:
        return "column 'n_leaves' is not a decreasing sequence of leaf counts"
    chosen = result["chosen"]
    if not isinstance(chosen, dict):
        return "'chosen' is not an object"
    for rule in rules:
        kk = chosen.get(rule)
        if not _is_int(kk) or not 0 <= kk < K:
            return f"'chosen' has no valid row for rule {rule!r}"
    if not _is_int(result["n_folds"]) or result["n_folds"] < 2:
        return "'n_folds' is not an integer >= 2"
    if not isinstance(result["warnings"], list) or \
            not all(isinstance(w, str) for w in result["warnings"]):
        return "'warnings' is not a list of strings"
    if not _is_real(result["wall_time_s"]) or not result["wall_time_s"] >= 0:
        return "'wall_time_s' is not a number >= 0"
    return None


#: The measures of a method cell (``cartjit.experiments.methods.METRIC_COLUMNS``) and
#: the kind of value each holds: numbers (or null where they do not apply) and counts.
METHOD_NUMBERS = ("score", "error", "cost", "mse", "rel_error")
METHOD_COUNTS = ("n_trees", "n_nodes", "n_leaves")


def method_result_problem(result):
    """Why ``result`` is not a well-formed result of a method cell, or None."""
    if not isinstance(result, dict):
        return f"the result is {type(result).__name__}, not an object"
    for key in METHOD_NUMBERS + METHOD_COUNTS + ("n_learn", "n_test", "fit_time_s",
                                                 "predict_time_s", "warnings",
                                                 "wall_time_s"):
        if key not in result:
            return f"the result has no {key!r}"
    for key in METHOD_NUMBERS:
        if result[key] is not None and not _is_real(result[key]):
            return f"{key!r} is not a number"
    if not _is_real(result["score"]):
        return "'score' is not a number"
    for key in METHOD_COUNTS:
        if result[key] is not None and not (_is_int(result[key]) and result[key] >= 0):
            return f"{key!r} is not a count"
    for key in ("n_learn", "n_test"):
        if not _is_int(result[key]) or result[key] < 1:
            return f"{key!r} is not an integer >= 1"
    for key in ("fit_time_s", "predict_time_s", "wall_time_s"):
        if not _is_real(result[key]) or not result[key] >= 0:
            return f"{key!r} is not a number >= 0"
    if not isinstance(result["warnings"], list) or \
            not all(isinstance(w, str) for w in result["warnings"]):
        return "'warnings' is not a list of strings"
    return None


# --------------------------------------------------------------------------- cell store

class CellStore:
    """One JSON file per finished cell under ``OUT/cells`` (see the module docstring)."""

    def __init__(self, out_dir, fsync=False, rules=("min", "1se")):
        self.out = Path(out_dir)
        self.dir = self.out / CELLS_DIR
        self.fsync = fsync
        self.rules = tuple(rules)

    def path(self, cell_id):
        return self.dir / f"{cell_id}.json"

    def remove_temporaries(self):
        """Delete temp files left by a killed run (never a finished cell)."""
        n = 0
        if self.dir.is_dir():
            for p in self.dir.iterdir():
                if p.name.startswith(".") and p.name.endswith(".tmp") and p.is_file():
                    p.unlink(missing_ok=True)
                    n += 1
        return n

    def quarantine(self, path, reason):
        """Move a damaged ``path`` to ``OUT/damaged/`` with a warning; returns the new path."""
        return quarantine(self.out, path, reason, "it will be recomputed")

    def read(self, cell):
        """The stored result of ``cell``; None when absent or damaged (then moved aside)."""
        p = self.path(cell.cell_id)
        if not os.path.lexists(p):
            return None
        try:
            raw = p.read_bytes()
        except OSError as exc:  # a directory, a dangling link, no permission
            self.quarantine(p, f"cannot be read ({exc.strerror or exc})")
            return None
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self.quarantine(p, f"is not valid JSON ({exc})")
            return None
        problem = self._problem(doc, cell)
        if problem is not None:
            self.quarantine(p, problem)
            return None
        return doc["result"]

    def _problem(self, doc, cell):
        if not isinstance(doc, dict):
            return f"holds a JSON {type(doc).__name__}, not a cell object"
        for key in ("format", "cell_id", "key", "key_sha256", "result", "sha256"):
            if key not in doc:
                return f"has no {key!r} (not a cell file of this cartjit version)"
        if doc["format"] != FORMAT_VERSION:
            return f"has format {doc['format']!r}, expected {FORMAT_VERSION}"
        if not check_seal(doc):
            return "does not match its SHA-256 (edited or corrupted)"
        key = json.loads(canonical_json(cell.key))
        if doc["cell_id"] != cell.cell_id or doc["key"] != key:
            return "holds the result of another cell (its key does not match the config)"
        if doc["key_sha256"] != hashlib.sha256(canonical_json(key).encode()).hexdigest():
            return "has a key hash that does not match its key"
        if getattr(cell, "kind", None) == "method":
            return method_result_problem(doc["result"])
        return result_problem(doc["result"], self.rules)

    def write(self, cell, result, invocation):
        key = json.loads(canonical_json(cell.key))
        doc = seal({"format": FORMAT_VERSION, "cell_id": cell.cell_id, "key": key,
                    "key_sha256": hashlib.sha256(canonical_json(key).encode()).hexdigest(),
                    "invocation": invocation, "finished": now(), "result": result})
        atomic_write(self.path(cell.cell_id), _dumps(doc), fsync=self.fsync)


def quarantine(out, path, reason, consequence):
    """Move ``path`` into ``out/damaged`` (kept, never deleted) and warn naming it."""
    path = Path(path)
    target_dir = Path(out) / DAMAGED_DIR
    moved = None
    try:
        target_dir.mkdir(exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        target = target_dir / f"{path.name}.{stamp}"
        n = 1
        while os.path.lexists(target):
            n += 1
            target = target_dir / f"{path.name}.{stamp}.{n}"
        if path.is_dir() and not path.is_symlink():
            shutil.move(str(path), str(target))
        else:
            os.replace(path, target)
        moved = target
    except OSError:
        pass
    where = f"moved to {moved}" if moved is not None else "left in place"
    warnings.warn(f"damaged file {path}: {reason}; {consequence} ({where})", RuntimeWarning,
                  stacklevel=3)
    return moved


# --------------------------------------------------------------------------- run.json

_RUN_KEYS = {"format": int, "config_hash": str, "invocations": list, "n_cells": int,
             "started": str, "status": str, "config": dict}


def run_json_problem(doc):
    """Why ``doc`` is not a usable run.json, or None."""
    if not isinstance(doc, dict):
        return f"holds a JSON {type(doc).__name__}, not an object"
    for key, kind in _RUN_KEYS.items():
        if key not in doc:
            return f"has no {key!r}"
        if not isinstance(doc[key], kind) or isinstance(doc[key], bool):
            return f"{key!r} is not of type {kind.__name__}"
    if doc["format"] != FORMAT_VERSION:
        return f"has format {doc['format']!r}, expected {FORMAT_VERSION}"
    if not all(isinstance(inv, dict) for inv in doc["invocations"]):
        return "'invocations' is not a list of objects"
    if not check_seal(doc):
        return "does not match its SHA-256 (edited or corrupted)"
    return None


def read_run_json(out):
    """``(doc, problem)`` of ``out/run.json``: the document, or None and why not.

    Raises :class:`FileNotFoundError` when there is no run.json at all.
    """
    path = Path(out) / RUN_JSON
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"is not valid JSON ({exc})"
    problem = run_json_problem(doc)
    return (None, problem) if problem else (doc, None)


def write_run_json(out, meta):
    atomic_write(Path(out) / RUN_JSON, _dumps(seal(meta), indent=1), fsync=False)


# --------------------------------------------------------------------------- lock

def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def _holder(text):
    """(pid, host) from a lock file's text, or (None, None)."""
    try:
        info = json.loads(text)
        return int(info["pid"]), str(info.get("host", ""))
    except (ValueError, TypeError, KeyError):
        return None, None


class RunLock:
    """An exclusive lock on ``OUT/.cartjit.lock`` (see the module docstring).

    ``acquire()`` raises :class:`LockError` naming the holder when another live process
    holds it; ``took_over`` is the pid of a dead holder whose stale lock was taken over.
    """

    def __init__(self, out):
        self.path = Path(out) / LOCK_FILE
        self.fd = None
        self.took_over = None

    def acquire(self):
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            fcntl = None
        if fcntl is not None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
                os.close(fd)
                pid, host = _holder(text)
                who = f"process {pid}" + (f" on {host}" if host else "") if pid else \
                    "another process"
                raise LockError(f"{self.path.parent} is in use by another cartjit run "
                                f"({who} holds {self.path}); wait for it to finish, or "
                                "choose another --out")
            old = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            pid, _ = _holder(old)
            if pid is not None and pid != os.getpid():
                self.took_over = pid
            self.fd = fd
            self._write_holder()
            return self
        # fallback: O_EXCL creation, stale lock of a dead pid on this host taken over
        for _ in range(2):  # pragma: no cover - Windows
            try:
                self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                self._write_holder()
                return self
            except FileExistsError:
                pid, host = _holder(self.path.read_text(encoding="utf-8", errors="replace"))
                if pid is not None and host == socket.gethostname() and not _pid_alive(pid):
                    self.took_over = pid
                    self.path.unlink(missing_ok=True)
                    continue
                raise LockError(f"{self.path.parent} is in use by another cartjit run "
                                f"(process {pid} on {host} holds {self.path}); if no such "
                                f"run is going on, delete {self.path}")
        raise LockError(f"cannot take the lock {self.path}")  # pragma: no cover

    def _write_holder(self):
        text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "since": now()}).encode()
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, text)

    def release(self):
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)  # an empty lock file: nobody holds it
        except OSError:
            pass
        try:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        except (ImportError, OSError):  # pragma: no cover - Windows
            pass
        os.close(self.fd)
        self.fd = None
        if os.name != "posix":  # pragma: no cover - the O_EXCL fallback
            self.path.unlink(missing_ok=True)

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
