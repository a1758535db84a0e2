"""Atomic file writes: a temporary file beside the target, renamed over it.

Every file cartjit writes for a user (a model file, a table of predictions, a drawing)
is first written to a temporary file in the target's directory, named
``.NAME.PID-RANDOM.tmp`` (NAME the target's file name, PID the writing process), then
flushed to the disk and renamed over NAME (:func:`os.replace`, atomic on a POSIX file
system): a reader sees the old file or the new one, never a part of one. On any
exception on the way (a full disk, ``KeyboardInterrupt``, the command line's SIGTERM,
which it raises as an exception) the temporary file is removed and the old file is
left as it was.

A process killed outright (SIGKILL, a power loss) cannot remove its temporary file. The
next write to the same NAME removes the ones it finds whose writer no longer runs: the
PID in the name is not a running process, or the name carries no PID (a file
left by an earlier cartjit). A temporary file of a writer that still runs is left alone.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from .engine import interrupts as _interrupts

__all__ = ["temp_path", "remove_stale_temps", "create_temp", "replacing", "exists_error"]

_SUFFIX = ".tmp"


def temp_path(path) -> Path:
    """A new temporary file name beside ``path``: ``.NAME.PID-RANDOM.tmp``."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}")


def _pid_of(name, prefix):
    """The writer's PID recorded in a temporary file name, or None (no PID in it)."""
    middle = name[len(prefix):-len(_SUFFIX)]
    head = middle.split("-", 1)[0]
    return int(head) if head.isdigit() and "-" in middle else None


def _running(pid):
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, under another user
        return True
    return True


def remove_stale_temps(path) -> list:
    """Remove the temporary files of earlier writes to ``path`` whose writer no longer
    runs (module docstring); returns the paths removed. Never raises ``OSError``: a
    file that cannot be listed or removed is left for a later write."""
    path = Path(path)
    prefix = f".{path.name}."
    removed = []
    try:
        names = os.listdir(path.parent if str(path.parent) else ".")
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_SUFFIX)) or \
                len(name) <= len(prefix) + len(_SUFFIX):
            continue
        pid = _pid_of(name, prefix)
        if pid is not None and _running(pid):
            continue
        stale = path.with_name(name)
        try:
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
                removed.append(stale)
        except OSError:
            pass
    return removed


def create_temp(path, mode=0o666):
    """Create a new temporary file beside ``path`` (after removing stale ones); returns
    ``(fd, temp)``: the open descriptor (write only) and its :class:`~pathlib.Path`.
    ``mode`` is masked by the umask, as for any new file."""
    remove_stale_temps(path)
    tmp = temp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                 mode)
    return fd, tmp


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


@contextlib.contextmanager
def replacing(path, *, fsync=True, overwrite=True):
    """Write ``path`` atomically: yields the temporary file's path (created, empty)
    for the caller to write; on a normal exit it is flushed to the disk (``fsync``) and
    renamed over ``path``; on any exception it is removed and ``path`` is untouched.

    ``overwrite=False`` never replaces a file: the temporary file is hard-linked to
    ``path``, which fails if ``path`` appeared meanwhile (``FileExistsError``); where the
    file system has no hard links, ``path`` is checked, then renamed to.

    ``OSError`` of the temporary file (no permission, a read-only or full file system)
    propagates; the caller names ``path`` in its message.
    """
    path = Path(path)
    fd, tmp = create_temp(path)
    try:
        os.close(fd)
        yield tmp
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        _interrupts.check()  # an interrupted command renames nothing into place
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def exists_error(path):
    """The error for a ``path`` that must not be replaced but exists."""
    return FileExistsError(f"{str(path)!r} already exists; pass overwrite=True to "
                           "replace it")


def _link_new(tmp, path):
    """Put the written ``tmp`` at ``path``, which must not exist (see :func:`replacing`)."""
    try:
        os.link(tmp, path)  # atomic, and fails if path appeared meanwhile
    except FileExistsError:
        raise exists_error(path) from None
    except OSError:  # no hard links here: check, then rename
        if path.exists():
            raise exists_error(path) from None
        os.replace(tmp, path)
        return
    _unlink_quietly(tmp)
