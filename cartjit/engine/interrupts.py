"""Signals the command line received, kept for the places that must see one that was lost.

The command line turns SIGINT into ``KeyboardInterrupt`` and SIGTERM / SIGHUP into
:class:`cartjit._cli_errors.Terminated`, raised in the main thread. Python runs a signal's
handler at the main thread's next bytecode, and that bytecode can belong to a callback
that C code calls and that drops whatever it raises: llvmlite's notice of a compiled
object, while Numba compiles a kernel, prints "Exception ignored on calling ctypes
callback function" and carries on. The interruption is then lost, and the command would
run to its end, write its output and exit 0.

So the handlers also :func:`note` the exception here, and :func:`check` raises it again:
at the start of every compile (the ``numba:compile`` listener of
:mod:`cartjit.engine.cache`, in whichever thread compiles), before an atomic write
renames its file into place (:mod:`cartjit._atomic`, model files), and when the command
returns. Outside a command nothing is ever noted and :func:`check` does nothing.
"""
from __future__ import annotations

_pending: list = []


def note(exc: BaseException) -> None:
    """Record ``exc``, which a signal handler is raising (the first one counts)."""
    _pending.append(exc)


def clear() -> None:
    """Forget what was noted (the command has ended, whatever its exit)."""
    _pending.clear()


def check() -> None:
    """Raise again the first exception noted, a new one of the same type and arguments
    (the first may be travelling up another thread's stack)."""
    if _pending:
        first = _pending[0]
        raise type(first)(*first.args)
