"""Numba's on-disk cache of the kernels: where it is, what it holds, and saying so.

A kind of fit (classification or regression, with each criterion, on numeric or
categorical features, with or without missing values, cross-validated or not) runs its
own set of kernels, and the first fit of each kind after installing (or upgrading)
cartjit compiles its set: seconds to tens of seconds (docs/benchmarks.md). Numba writes
them to its on-disk cache (``CARTJIT_CACHE``, docs/design.md), and later processes load
them in a fraction of a second; ``cartjit compile`` compiles every kind ahead.

Nothing compiles silently: a listener of Numba's ``numba:compile`` event sees every
function Numba is about to compile (a cache miss; loading from the cache is no event).
The first one during a kind of operation not yet announced in this process says, through
the ``cartjit`` logger (shown on stderr unless logging is set up otherwise, or the
sink given to :func:`notice_once`), what is compiling, that it happens once, and that
``cartjit compile`` does it ahead. The kind is declared by the entry points
(:func:`doing`): the estimators' data check and prediction. :func:`quiet` hands the
notice to a caller that reports compilation its own way (``cartjit compile``, the
runner's warm-up). :func:`compiled_count` counts the functions compiled in this process.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading

from numba.core import event as _event

from . import interrupts as _interrupts

from . import speed

__all__ = ["dispatchers", "cache_dir", "cache_state", "notice_once", "compiling_message",
           "doing", "quiet", "compiled_count", "describe_fit"]

_LOCK = threading.RLock()
_state = {
    "kind": "the kernels",   # what the process is doing now (:func:`doing`)
    "told": set(),           # kinds announced in this process
    "say": None,             # where notices go; None: the ``cartjit`` logger's warning
    "quiet": [],             # stack of the :func:`quiet` callers' ``first`` callbacks
    "count": 0,              # functions compiled in this process (numba:compile events)
    "depth": 0,              # nesting of the compile events now open
}


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
    if not speed.CACHE:
        return "empty"
    directory = cache_dir() if directory is None else directory
    try:
        names = os.listdir(directory)
    except OSError:
        return "empty"
    sources = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("cartjit.engine.") and getattr(module, "__file__", None):
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


def compiling_message(directory, kind="the kernels"):
    """The notice that ``kind`` is compiling (cached in ``directory``)."""
    if not speed.CACHE:
        return (f"cartjit: compiling {kind} (CARTJIT_CACHE=0: every new process compiles "
                "them again; seconds to tens of seconds for each kind of fit) ...")
    return (f"cartjit: compiling {kind} into {directory} (once: later processes load them "
            "from there; 'cartjit compile' compiles every kind ahead) ...")


def describe_fit(is_classification, criterion, categorical, missing, cv):
    """What a fit is, in the words of the notice, e.g. "the kernels of cross-validated
    classification trees (gini) on categorical features with missing values"."""
    task = "classification" if is_classification else "regression"
    return (f"the kernels of {'cross-validated ' if cv else ''}{task} trees ({criterion}) "
            f"on {'categorical' if categorical else 'numeric'} features"
            f"{' with missing values' if missing else ''}")


def doing(kind):
    """Declare what the process does next (a fit of some kind, prediction): the notice
    names it if it compiles. An entry point calls this before its kernels run.

    ``None``: an operation whose kind is not known yet (a fit whose data are being
    checked, which may compile a checking kernel); a compile then waits for the next
    call, which names the kind and says it at once if it is new.
    """
    with _LOCK:
        _state["kind"] = kind
        if kind is not None and _state.pop("pending_quiet", False):
            _state["told"].add(kind)  # compiled under a quiet block's one notice
        pending = kind is not None and _state.pop("pending", False)
    if pending:
        _announce()


def notice_once(say=None):
    """Send the compile notices of this process to ``say(text)`` (default: a warning of
    the ``cartjit`` logger). Each kind of operation is announced once, when it first
    compiles (see the module docstring)."""
    _state["say"] = say


def compiled_count():
    """How many functions Numba compiled in this process (cartjit's kernels and the
    NumPy helpers they call; loading from the cache does not count)."""
    return _state["count"]


@contextlib.contextmanager
def quiet(first=None):
    """No per-kind notice inside the block; ``first(text)``, if given, is called with
    the notice at the block's first compile instead (once). The kinds that compile in
    the block count as announced."""
    entry = [first]
    with _LOCK:
        _state["quiet"].append(entry)
    try:
        yield
    finally:
        with _LOCK:
            _state["quiet"].remove(entry)


def _announce():
    with _LOCK:
        if _state["quiet"]:
            entry = _state["quiet"][-1]
            if entry[0] is not None:
                first, entry[0] = entry[0], None
                first(compiling_message(cache_dir()))
            # the block's notice covers the kinds compiled inside it: a later compile
            # of one of them (a signature the block's fits did not reach) is not news
            if _state["kind"] is None:
                _state["pending_quiet"] = True
            else:
                _state["told"].add(_state["kind"])
            return
        kind = _state["kind"]
        if kind is None:  # said when the kind is named (:func:`doing`)
            _state["pending"] = True
            return
        if kind in _state["told"]:
            return
        _state["told"].add(kind)
        say = _state["say"] or logging.getLogger("cartjit").warning
    say(compiling_message(cache_dir(), kind))


class _Listener(_event.Listener):
    """Counts Numba's compiles; the outermost one of a kind not yet announced says so."""

    def on_start(self, event):
        _state["count"] += 1
        _state["depth"] += 1
        # a Ctrl-C whose exception a callback of LLVM dropped stops here, at the next
        # function to compile (:mod:`cartjit.engine.interrupts`); Numba sends the end
        # event (on_end) even when this raises, so the depth was counted first
        _interrupts.check()
        if _state["depth"] == 1:
            try:
                _announce()
            except Exception:  # noqa: BLE001 - a notice never breaks a fit
                pass

    def on_end(self, event):
        _state["depth"] -= 1


_event.register("numba:compile", _Listener())
