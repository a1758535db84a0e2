"""The command line's one error path: every failure ends as one line and an exit status.

:func:`run_guarded` runs a command and turns what can stop it into one line on stderr,
``cartjit COMMAND: error: WHAT: WHY; WHAT TO DO``, and an exit status:

* 0 on success;
* 2 for bad input or an output that cannot be used: a :class:`CommandError` raised by the
  command (a file that cannot be written, naming it), a setting of the environment that
  cannot be read (``CARTJIT_MEMORY_LIMIT``), standard output that fails (``> /dev/full``);
* 130 when interrupted (SIGINT, Ctrl-C), 143 when terminated (SIGTERM), 129 on SIGHUP:
  the signal is raised as an exception (:class:`Terminated`, a ``KeyboardInterrupt``)
  so that every ``finally`` runs and no temporary file is left (:mod:`cartjit._atomic`);
* 141 when standard output is a closed pipe (``cartjit show iris | head -1``): nothing is
  printed, as Unix tools killed by SIGPIPE do, and standard output is pointed at
  ``/dev/null`` so that the interpreter's last flush does not fail again.

Standard output is replaced meanwhile by :class:`GuardedOutput`, which raises what
writing it raises as :class:`OutputError`, so that a failing standard output is told
apart from a file the command writes.

Warnings are the command's own lines too: each one is said once on stderr as
``cartjit COMMAND: warning: WHAT`` (:func:`warnings_said`), without the file, line and
source line Python's default display adds, and a warning whose text was already said
is not repeated.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
import warnings

from .engine import interrupts as _interrupts

__all__ = ["CommandError", "OutputError", "Terminated", "GuardedOutput", "run_guarded",
           "describe_os_error", "check_settings", "say", "warnings_said"]


class CommandError(Exception):
    """A failure the command line reports on one line; ``status`` is the exit status."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


class OutputError(Exception):
    """Writing standard output failed; ``error`` is the :class:`OSError`."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so that cleanup runs."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: What to do about an OSError, by errno.
_ADVICE = {
    errno.ENOSPC: ("no space left on the device", "free some space or write elsewhere"),
    errno.EDQUOT: ("the disk quota is exceeded", "free some space or write elsewhere"),
    errno.EACCES: ("permission denied", "choose a file in a directory you may write to"),
    errno.EPERM: ("operation not permitted", "choose a file in a directory you may "
                                             "write to"),
    errno.EROFS: ("the file system is read-only", "write to another file system"),
    errno.ENOENT: ("no such file or directory", "check the path"),
    errno.ENOTDIR: ("a part of the path is not a directory", "check the path"),
    errno.EISDIR: ("it is a directory", "name a file"),
    errno.EFBIG: ("the file is too large for the file system",
                  "write to another file system"),
    errno.EIO: ("an input/output error of the device", "check the disk"),
    errno.ENAMETOOLONG: ("the file name is too long", "choose a shorter name"),
}


def describe_os_error(exc, what):
    """``WHAT: WHY; WHAT TO DO`` for an :class:`OSError` met while writing ``what``."""
    why, advice = _ADVICE.get(exc.errno, (exc.strerror or str(exc), "fix the cause"))
    return f"{what}: {why} (errno {exc.errno}); {advice}" if exc.errno else \
        f"{what}: {why}; {advice}"


def say(line):
    """Print one line on stderr; a stderr that fails too is ignored (nothing to tell)."""
    try:
        print(" ".join(str(line).split()), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


@contextlib.contextmanager
def warnings_said(command):
    """While inside: every warning shown is one line ``cartjit COMMAND: warning: WHAT``
    on stderr, each distinct text once. The warning filters are left as they are (a
    warning they ignore stays ignored, one turned into an error still raises)."""
    said = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text in said:
            return
        said.add(text)
        say(f"cartjit {command}: warning: {text}")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def check_settings():
    """Read the settings of the environment the commands use; a bad one is a
    :class:`CommandError` naming the variable and its allowed forms."""
    from .engine.speed import check_settings as check_flags
    from .engine.limits import memory_limit
    try:
        check_flags()
    except ValueError as exc:
        raise CommandError(f"{exc} (unset it for the default)") from None
    try:
        memory_limit()
    except ValueError as exc:
        raise CommandError(f"{exc} (unset it for the default: half the physical "
                           "memory)") from None


class GuardedOutput:
    """Standard output whose failures are :class:`OutputError` (module docstring)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise OutputError(exc) from None

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence(stream):
    """Point the file descriptor of ``stream`` (standard output) at /dev/null, so that
    what is still buffered goes there when the interpreter flushes it at exit instead
    of failing again. Nothing happens for a stream without a descriptor."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


@contextlib.contextmanager
def _signals_raised(received):
    """While inside: SIGTERM and SIGHUP raise :class:`Terminated` in the main thread
    (once; a repeat is ignored while cleanup runs), SIGINT raises ``KeyboardInterrupt``
    (each time, as Python's own handler does); ``received`` collects them, and each
    exception is noted in :mod:`cartjit.engine.interrupts`, which raises it again where a
    callback of C code dropped it."""
    def handler(signum, frame):
        received.append(signum)
        for s in installed:
            signal.signal(s, signal.SIG_IGN)
        exc = Terminated(signum)
        _interrupts.note(exc)
        raise exc

    def interrupt(signum, frame):
        received.append(signum)
        exc = KeyboardInterrupt()
        _interrupts.note(exc)
        raise exc

    def unraisable(info):
        # the exception of a handler above, dropped by a callback of C code: noted, and
        # raised again later (cartjit.engine.interrupts); no traceback for it
        if not issubclass(info.exc_type, (KeyboardInterrupt, Terminated)):
            hook(info)

    installed, previous = [], {}
    hook = sys.unraisablehook
    sys.unraisablehook = unraisable
    import threading
    if threading.current_thread() is threading.main_thread():
        for s, fn in ((signal.SIGTERM, handler), (getattr(signal, "SIGHUP", None), handler),
                      (signal.SIGINT, interrupt)):
            if s is None:
                continue
            try:
                previous[s] = signal.signal(s, fn)
                if fn is handler:
                    installed.append(s)
            except (OSError, ValueError):
                pass
    try:
        yield
    finally:
        for s, old in previous.items():
            try:
                signal.signal(s, old)
            except (OSError, ValueError):
                pass
        sys.unraisablehook = hook
        _interrupts.clear()


def run_guarded(command, body):
    """Run ``body()`` (a command; returns its exit status) under the error path of the
    module docstring; returns the exit status."""
    real = sys.stdout
    sys.stdout = GuardedOutput(real)
    received = []
    try:
        with _signals_raised(received), warnings_said(command):
            try:
                check_settings()
                status = body()
                if received and status != 128 + received[0]:
                    _interrupts.check()  # a signal whose exception a C callback dropped
                sys.stdout.flush()
            except CommandError as exc:
                say(f"cartjit {command}: error: {exc}")
                status = exc.status
            except OutputError as exc:
                status = _output_failed(command, exc.error, real)
            except BrokenPipeError as exc:
                status = _output_failed(command, exc, real)
            except Terminated as exc:
                say(f"cartjit {command}: terminated ({signal.Signals(exc.signum).name}); "
                    "no file was left half written")
                status = 128 + exc.signum
            except KeyboardInterrupt:
                say(f"cartjit {command}: interrupted; no file was left half written")
                status = 130
            except Exception:
                if not received:
                    raise
                # after a signal, a failure is its consequence: a handler's exception
                # dropped inside Numba's compile leaves it half done ("no compiled
                # object yet"); the command stopped where it was told to
                signum = received[0]
                say(f"cartjit {command}: "
                    + ("interrupted" if signum == signal.SIGINT else
                       f"terminated ({signal.Signals(signum).name})")
                    + "; no file was left half written")
                status = 128 + signum
    finally:
        sys.stdout = real
    if received and status == 130:  # a command that reports interruptions itself
        status = 128 + received[0]
    return status


def _output_failed(command, exc, stream):
    """The exit status after standard output (``stream``) failed with ``exc``."""
    _silence(stream)
    if exc.errno == errno.EPIPE:  # the reader had enough: end quietly
        return 141
    why = _ADVICE.get(exc.errno, (exc.strerror or str(exc),))[0]
    say(f"cartjit {command}: error: cannot write to standard output: {why} (errno "
        f"{exc.errno}); redirect it to a file or device that can take the output")
    return 2
