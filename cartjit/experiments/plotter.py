"""Drawing the report's plots in a helper process, started before the cells.

Importing matplotlib and drawing the plots take about as long as fitting every cell of
a small sweep, and both run on one core: the cells hold the interpreter most of the
time (Python between the kernels), and the plots need it throughout. So a run with
cells to compute starts :class:`PlotWorker` first: a child Python process (the same
interpreter and cartjit) that imports matplotlib and the plot code while the kernels
load and the cells run on the other core, then draws each plot it is sent
(:func:`cartjit.experiments.reports.plot_group`) and returns the PNG bytes. The bytes
are those the run would draw itself (same code, same matplotlib). If the helper cannot
start or fails, the plots are drawn in the run's process as before, so it changes
nothing but the time.
"""
from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys

__all__ = ["PlotWorker", "serve"]

_LEN = struct.Struct("<Q")


def _send(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(data)))
    stream.write(data)
    stream.flush()


def _receive(stream):
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("the plot helper closed its pipe")
    (n,) = _LEN.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("the plot helper closed its pipe")
    return pickle.loads(data)


def serve():
    """The helper's main loop: import the plot code, then answer requests until EOF.

    A request is a list of ``(table, title)``; the answer ``("ok", [png bytes])`` or
    ``("error", text)``.
    """
    import io
    import traceback
    import warnings

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing printed may corrupt the answers
    from .reports import plot_group  # imports matplotlib, numpy, pandas
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    from matplotlib.figure import Figure  # noqa: F401
    from .. import plotting  # noqa: F401
    while True:
        try:
            jobs = _receive(stdin)
        except EOFError:
            return
        try:
            pngs = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for table, title in jobs:
                    buf = io.BytesIO()
                    plot_group(table, title, buf)
                    pngs.append(buf.getvalue())
            _send(stdout, ("ok", pngs))
        except Exception:  # noqa: BLE001 - reported to the run, which draws them itself
            _send(stdout, ("error", traceback.format_exc()))


class PlotWorker:
    """The helper process: :meth:`submit` plots, :meth:`result` their PNG bytes.

    Every failure (no helper, a crash, an error while drawing) makes :meth:`result`
    return ``None``: the caller then draws the plots itself.
    """

    def __init__(self):
        self.proc = None
        self._pending = False
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
            __file__))))
        path = os.environ.get("PYTHONPATH")
        # the same environment and working directory (matplotlibrc) as the run's
        env = dict(os.environ, PYTHONPATH=package_root + (os.pathsep + path if path else ""))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c",
                 "from cartjit.experiments.plotter import serve; serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env)
        except OSError:
            self.proc = None

    def submit(self, jobs):
        """Send ``[(table, title), ...]`` to draw; returns whether the helper took them."""
        if self.proc is None:
            return False
        try:
            _send(self.proc.stdin, list(jobs))
        except (OSError, ValueError, pickle.PicklingError):
            self.close()
            return False
        self._pending = True
        return True

    def result(self):
        """The PNG bytes of the submitted plots, in order; ``None`` on any failure."""
        if self.proc is None or not self._pending:
            return None
        self._pending = False
        try:
            status, value = _receive(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            self.close()
            return None
        return value if status == "ok" else None

    def close(self):
        """End the helper (it exits when its input closes)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        try:
            proc.stdout.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
