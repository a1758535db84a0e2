"""Numba's on-disk cache of the kernels: where it is, what it holds, and saying so.

The first fit after installing (or upgrading) cartjit compiles the kernels, which takes
up to a minute or two; Numba writes them to its on-disk cache (``CARTJIT_CACHE``, docs/design.md), and
later processes load them in a fraction of a second. :func:`notice_once` tells the user
once per process, through the ``cartjit`` logger (shown on stderr unless logging is set
up otherwise), when a fit is about to compile: the cache holds no index file of the
kernels, or one older than its source. ``cartjit compile`` compiles everything ahead.
"""
from __future__ import annotations

import logging
import os
import sys
import threading

from . import _config

__all__ = ["dispatchers", "cache_dir", "cache_state", "notice_once", "compiling_message"]

_NOTICE = threading.Lock()
_TOLD = threading.Event()


def dispatchers():
    """The Numba dispatchers of the engine's modules that are imported now."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("cartjit.") or name.startswith("cartjit.experiments"):
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, Dispatcher):
                found[id(obj)] = obj
    return list(found.values())


def cache_dir():
    """Directory of Numba's on-disk cache of cartjit's kernels."""
    for d in dispatchers():
        path = getattr(d.stats, "cache_path", None)
        if path:
            return str(path)
    import numba
    return numba.config.CACHE_DIR or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "__pycache__")


def cache_state(directory=None):
    """``"empty"``, ``"stale"`` or ``"present"``: what ``directory`` holds for the engine.

    ``empty``: no index file of any imported cartjit module's kernels (first use after
    install, a fresh ``NUMBA_CACHE_DIR``, or ``CARTJIT_CACHE=0``); ``stale``: a module
    whose index files are all older than its source (it changed since its kernels were
    compiled: Numba recompiles); ``present`` otherwise. Only a module's newest index
    counts, because index files of kernels that moved to other lines of an edited
    module stay behind, older than the source, for good.
    """
    if not _config.CACHE:
        return "empty"
    directory = cache_dir() if directory is None else directory
    try:
        names = os.listdir(directory)
    except OSError:
        return "empty"
    sources = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("cartjit.") and getattr(module, "__file__", None):
            sources[name.rsplit(".", 1)[1]] = module.__file__
    newest = {}  # module -> mtime of its newest index file
    for n in names:
        module = n.split(".", 1)[0]
        if n.endswith(".nbi") and module in sources:
            try:
                mtime = os.path.getmtime(os.path.join(directory, n))
            except OSError:
                continue
            newest[module] = max(mtime, newest.get(module, mtime))
    if not newest:
        return "empty"
    for module, mtime in newest.items():
        try:
            if mtime < os.path.getmtime(sources[module]):
                return "stale"
        except OSError:
            return "stale"
    return "present"


def compiling_message(directory):
    if not _config.CACHE:
        return ("cartjit: compiling the kernels (CARTJIT_CACHE=0: every new process "
                "compiles them, up to a minute or two) ...")
    return (f"cartjit: compiling the kernels into {directory} (once after installing or "
            "upgrading cartjit, up to a minute or two; 'cartjit compile' does it ahead) ...")


def notice_once(say=None):
    """Say, once per process, that kernels are about to compile, if they are.

    ``say(text)`` defaults to a warning of the ``cartjit`` logger. Returns whether this
    call said it. Later calls (any thread) return ``False`` at the cost of one check.
    """
    if _TOLD.is_set():
        return False
    with _NOTICE:
        if _TOLD.is_set():
            return False
        _TOLD.set()
        directory = cache_dir()
        if cache_state(directory) == "present":
            return False
        (say or logging.getLogger("cartjit").warning)(compiling_message(directory))
        return True


def mark_told():
    """Record that the user has been told (by a caller that said it its own way)."""
    _TOLD.set()
