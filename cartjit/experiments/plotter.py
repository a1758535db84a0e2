"""Drawing the report's plots in a helper process, started before the cells.

Importing matplotlib and drawing the plots take about as long as fitting every cell of
a small sweep, and both run on one core: the cells hold the interpreter most of the
time (Python between the kernels), and the plots need it throughout. So a run with
cells to compute starts :class:`PlotWorker` first: a child Python process (the same
interpreter and cartjit) that imports matplotlib and the plot code while the kernels
load and the cells run on the other core, then draws each plot it is sent
(:func:`plot_group`) and returns the PNG bytes. The bytes
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

import numpy as np

__all__ = ["PlotWorker", "serve", "plot_group"]

_LEN = struct.Struct("<Q")


def _zoom_rows(table, Vs):
    """Rows worth a close-up: trees whose best R^CV is within twice the overall minimum."""
    values = np.vstack([table[f"V{V}_loo" if loo else f"V{V}_mean"].to_numpy()
                        for V, loo in Vs])
    best = np.nanmin(values)
    rows = np.flatnonzero(np.nanmin(values, axis=0) <= 2.0 * best) if best > 0 else np.array([], int)
    return rows if 2 <= rows.size < len(table) else None


def plot_group(table, title, path):
    """R^CV (mean, bars ± 1 SE) against |T~_k|, one line per V, plus R(T_k); PNG.

    When the interesting trees sit in a narrow band of R^CV (as on iris, where the
    one- and two-leaf trees have R^CV near 0.5-1 and the others near 0.05), a second
    panel zooms on the trees whose best R^CV is within twice the overall minimum.
    The look is :func:`cartjit.plotting.plot_cv`'s: the same colours (V in the order of
    the class colours), bars, resubstitution line, grid and size axis.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plotting import (ERRORBAR_STYLE, RESUB_STYLE, class_color, size_axis,
                            style_axes)

    leaves = table["n_leaves"].to_numpy(dtype=float)
    Vs = [(int(c[1:].split("_")[0]), c.endswith("_loo")) for c in table.columns
          if c.startswith("V") and (c.endswith("_mean") or c.endswith("_loo"))]
    zoom = _zoom_rows(table, Vs)
    fig = Figure(figsize=(10.5 if zoom is not None else 6.4, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2 if zoom is not None else 1, squeeze=False)[0]
    log_x = leaves.max() > 30
    n = len(Vs)
    for panel, ax in enumerate(axes):
        rows = np.arange(len(table)) if panel == 0 else zoom
        style_axes(ax)
        for i, (V, loo) in enumerate(Vs):
            y = table[f"V{V}_loo" if loo else f"V{V}_mean"].to_numpy()[rows]
            se = table[f"V{V}_loo_se" if loo else f"V{V}_se"].to_numpy()[rows]
            off = i - (n - 1) / 2  # small offsets keep the error bars apart
            x = leaves[rows] * (1.0 + 0.012 * off) if log_x else leaves[rows] + 0.06 * off
            ax.errorbar(x, y, yerr=se, color=class_color(i),
                        label=f"V = {V} (LOO)" if loo else f"V = {V}", **ERRORBAR_STYLE)
        ax.plot(leaves[rows], table["risk"].to_numpy()[rows],
                label="$R(T_k)$ (resubstitution)", **RESUB_STYLE)
        size_axis(ax, leaves, log=log_x)
        if panel == 0:
            ax.set_ylabel("$R^{CV}(T_k)$, mean over repeats; bars ± 1 SE")
            ax.set_title(title, fontsize=10)
            ax.legend(fontsize=8, title="bars: ± 1 SE of $R^{CV}$\n(mean SE over repeats)",
                      title_fontsize=7.5)
        else:
            ax.set_title("close-up: trees with $R^{CV}$ within 2 × the minimum", fontsize=10)
    # fixed margins: tight_layout would draw the figure once more just to measure it
    if zoom is not None:
        fig.subplots_adjust(left=0.07, right=0.985, bottom=0.12, top=0.93, wspace=0.16)
    else:
        fig.subplots_adjust(left=0.115, right=0.975, bottom=0.12, top=0.93)
    fig.savefig(path, format="png", metadata={"Software": None})


class _Table:
    """The columns of a summary table (name -> array) as :func:`plot_group` reads a
    DataFrame: the helper gets plain arrays, and needs no pandas."""

    def __init__(self, columns):
        self._columns = dict(columns)
        self.columns = list(self._columns)

    def __len__(self):
        return len(next(iter(self._columns.values()))) if self._columns else 0

    def __getitem__(self, name):
        return _Column(self._columns[name])


class _Column:
    def __init__(self, values):
        self._values = values

    def to_numpy(self, dtype=None):
        return np.asarray(self._values, dtype=dtype)


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


#: How long the run waits for the helper's plots before drawing them itself (seconds).
ANSWER_TIMEOUT_S = 300.0


def _read_within(fd, n, deadline):
    """``n`` bytes from the pipe ``fd``, or ``TimeoutError`` past ``deadline``."""
    import select
    import time

    chunks, left = [], n
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            raise TimeoutError("the plot helper did not answer in time")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the plot helper closed its pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _receive_within(fd, timeout):
    """One message from the helper's output pipe, waiting at most ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    (n,) = _LEN.unpack(_read_within(fd, _LEN.size, deadline))
    return pickle.loads(_read_within(fd, n, deadline))


def serve():
    """The helper's main loop: import the plot code, then answer requests until EOF.

    A request is a list of ``(columns, title)``, ``columns`` a dict of a summary
    table's columns (name -> array); the answer ``("ok", [png bytes])`` or
    ``("error", text)``. Started by :data:`_BOOT`, it imports matplotlib, numpy and the
    plot style of :mod:`cartjit.plotting`, not the engine (Numba) nor pandas.
    """
    import io
    import traceback
    import warnings

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing printed may corrupt the answers
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
                for columns, title in jobs:
                    buf = io.BytesIO()
                    plot_group(_Table(columns), title, buf)
                    pngs.append(buf.getvalue())
            _send(stdout, ("ok", pngs))
        except Exception:  # noqa: BLE001 - reported to the run, which draws them itself
            _send(stdout, ("error", traceback.format_exc()))


#: The helper's program: ``cartjit`` and ``cartjit.experiments`` are entered as bare
#: packages, without running their ``__init__`` (which import the engine, hence Numba):
#: the helper loads only this module and the plot style modules.
_BOOT = """
import sys, types
for name, path in (("cartjit", {package!r}), ("cartjit.experiments", {package!r} + "/experiments")):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from cartjit.experiments.plotter import serve
serve()
"""


class PlotWorker:
    """The helper process: :meth:`submit` plots (any number of times, e.g. each group's
    as soon as its cells are done), :meth:`results` their PNG bytes.

    Every failure (no helper, a crash, an error while drawing) makes :meth:`results`
    return ``None``: the caller then draws the plots itself.
    """

    def __init__(self):
        self.proc = None
        self._requests = []  # the keys of each request sent, in order
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
            __file__))))
        path = os.environ.get("PYTHONPATH")
        # the same environment and working directory (matplotlibrc) as the run's
        env = dict(os.environ, PYTHONPATH=package_root + (os.pathsep + path if path else ""))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT.format(package=os.path.join(package_root,
                                                                         "cartjit"))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env)
        except OSError:
            self.proc = None

    @property
    def alive(self):
        """Whether the helper is there and has not failed."""
        return self.proc is not None

    def has(self, key):
        """Whether the plot ``key`` was submitted."""
        return any(key in keys for keys in self._requests)

    def submit(self, jobs):
        """Send ``[(key, columns, title), ...]`` to draw (``columns``: name -> array);
        returns whether the helper took them."""
        if self.proc is None:
            return False
        jobs = list(jobs)
        try:
            _send(self.proc.stdin, [(columns, title) for _, columns, title in jobs])
        except (OSError, ValueError, pickle.PicklingError):
            self.close()
            return False
        self._requests.append([key for key, _, _ in jobs])
        return True

    def results(self):
        """``{key: PNG bytes}`` of every plot submitted; ``None`` on any failure."""
        if self.proc is None:
            return None
        out = {}
        requests, self._requests = self._requests, []
        for keys in requests:
            try:
                status, value = _receive_within(self.proc.stdout.fileno(), ANSWER_TIMEOUT_S)
            except (OSError, EOFError, TimeoutError, pickle.UnpicklingError):
                self.proc.kill()  # stuck or gone: the run draws the plots itself
                self.close()
                return None
            if status != "ok" or len(value) != len(keys):
                self.close()
                return None
            out.update(zip(keys, value))
        return out

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
