"""A Ctrl-C whose exception a callback of C code drops still stops the command.

Python runs a signal's handler at the main thread's next bytecode; inside a callback that
C code calls (llvmlite's notice of a compiled object while Numba compiles, here libc's
``qsort`` comparing through a Python function) the handler's exception is printed as
"Exception ignored" and lost. The command line notes it (:mod:`cartjit.engine.interrupts`) and
raises it again: before an atomic write renames its file, at the next compile, and when
the command returns. A child process interrupted while it compiles on an empty cache
exits 130 at once with one line (it used to run on, write its model and exit 0).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cartjit import _atomic
from cartjit.engine import interrupts as _interrupts
from cartjit._cli_errors import run_guarded

_spec = importlib.util.spec_from_file_location(
    "_exits", Path(__file__).with_name("test_cli_exits.py"))
_exits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_exits)
TIMEOUT, child_env, one_line = _exits.TIMEOUT, _exits.child_env, _exits.one_line

_CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                        ctypes.POINTER(ctypes.c_int))


def _sort_with_a_signal(signum):
    """Sort five ints with libc's qsort, sending ``signum`` to this process from the first
    comparison and running Python there, so that the handler raises inside the callback."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    sent = []

    def compare(a, b):
        if not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)
            sum(range(1000))  # bytecodes for the handler to run at
        return a[0] - b[0]

    values = (ctypes.c_int * 5)(5, 4, 3, 2, 1)
    libc.qsort(values, 5, ctypes.sizeof(ctypes.c_int), _CMP(compare))
    return list(values)


@pytest.mark.skipif(ctypes.util.find_library("c") is None, reason="no libc to call")
@pytest.mark.parametrize("signum,status,word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")])
def test_a_dropped_signal_stops_the_write_and_the_command(tmp_path, capsys, signum,
                                                          status, word):
    target = tmp_path / "out.txt"

    def body():
        assert _sort_with_a_signal(signum) == [1, 2, 3, 4, 5]  # the callback dropped it
        with _atomic.replacing(target) as tmp:
            Path(tmp).write_text("written after the signal")
        return 0

    assert run_guarded("fit", body) == status
    err = capsys.readouterr().err
    assert one_line(err, "fit").startswith(f"cartjit fit: {word}")
    assert "Exception ignored" not in err
    assert not target.exists() and list(tmp_path.iterdir()) == []
    _interrupts.check()  # the command's end forgot it: nothing raised here


def test_a_noted_interrupt_stops_the_next_compile():
    from numba import njit

    import cartjit.engine.cache  # noqa: F401 - registers the compile listener

    def add_one(x):
        return x + 1

    from cartjit.engine import cache

    kernel = njit(add_one)
    depth = cache._state["depth"]
    _interrupts.note(KeyboardInterrupt())
    try:
        with pytest.raises(KeyboardInterrupt):
            kernel(1)
    finally:
        _interrupts.clear()
    assert cache._state["depth"] == depth  # the notices' count of nested compiles holds
    assert kernel(1) == 2  # compiles as usual once the command has ended


def test_ctrl_c_while_compiling_on_an_empty_cache_exits_at_once(tmp_path):
    """The first CV fit on an empty cache compiles for many seconds: Ctrl-C at moments
    of it (once its notice is out) ends the command within seconds, with 130, one line
    and no model."""
    for delay in (0.0, 0.7, 1.5):
        cache = tempfile.mkdtemp(dir=tmp_path)
        work = tempfile.mkdtemp(dir=tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "cartjit", "fit", "iris", "--cv", "10",
                                 "-o", "m.cartjit"], cwd=work, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=child_env(NUMBA_CACHE_DIR=cache))
        first = proc.stderr.readline()  # the compile notice: the command is compiling
        assert "compiling" in first, first
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 130, first + err
        assert time.monotonic() - sent < 20, err
        assert one_line(err, "fit") == ("cartjit fit: interrupted; no file was left half "
                                        "written")
        assert not (Path(work) / "m.cartjit").exists()
