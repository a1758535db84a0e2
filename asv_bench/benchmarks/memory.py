"""Memory of a fit: asv's whole-process peak, and the fit's own increase.

``FitMemory.peakmem_fit`` is asv's measure: the peak RSS of the whole benchmark
process, so it includes the interpreter, NumPy/Numba, the data (10^5 × 20 float64 =
16 MB, 10^6: 160 MB, plus the 50 000 held-out rows of the same draw) and whatever the
JIT warm-up used (loading cached kernels; compiling them when the cache is cold, which
can cost more than the fit itself). ``peakmem_setup_only`` is the same process doing
nothing, the baseline to subtract.

``FitPeakIncrease.track_fit_peak_increase`` isolates the fit, in bytes: a fresh
interpreter draws the data and warms the JIT, the process's high-water mark is reset
(Linux: ``/proc/self/clear_refs``), the fit runs, and the result is ``VmHWM`` minus the
RSS just before the fit. Where the mark cannot be reset, psutil polls the RSS every
0.5 ms (which can miss a short spike). A fresh interpreter because the figure depends
on the allocator's state: a second fit in the same process reuses freed memory and
reads lower. ``peers.py --memory`` measures scikit-learn the same way.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

from . import TASKS, cartjit_root, dataset, estimator, sizes, warm_jit


def _status_kib(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_high_water_mark():
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return _status_kib("VmHWM") <= _status_kib("VmRSS") + 4
    except (OSError, KeyError):
        return False


def measure_peak(fn):
    """``(RSS before fn(), peak RSS during it, how the peak was read)``, in bytes."""
    gc.collect()
    if _reset_high_water_mark():
        before = 1024 * _status_kib("VmRSS")
        fn()
        return before, 1024 * _status_kib("VmHWM"), "VmHWM reset via /proc/self/clear_refs"
    import psutil

    proc = psutil.Process()
    before = proc.memory_info().rss
    peak = [before]
    done = threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            done.wait(0.0005)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        fn()
    finally:
        done.set()
        thread.join()
    return before, max(peak[0], proc.memory_info().rss), "psutil polling every 0.5 ms"


def peak_rss_increase(fn):
    """Bytes by which the RSS peak during ``fn()`` exceeds the RSS just before it."""
    before, peak, _ = measure_peak(fn)
    return peak - before


class FitMemory:
    """Whole-process peak with a classification (Gini, 3 classes) or regression fit."""

    params = [list(TASKS), sizes((100_000, 1_000_000))]
    param_names = ["task", "n"]
    timeout = 1800.0

    def setup(self, task, n):
        self.X, self.y = dataset(task, n)
        warm_jit()

    def peakmem_fit(self, task, n):
        estimator(task).fit(self.X, self.y)

    def peakmem_setup_only(self, task, n):
        pass


_CHILD = """\
import sys
sys.path[:0] = [{cartjit_root!r}, {bench_parent!r}]
from {pkg} import dataset, estimator, warm_jit
from {pkg}.memory import peak_rss_increase
X, y = dataset({task!r}, {n!r})
warm_jit()
print(peak_rss_increase(lambda: estimator({task!r}).fit(X, y)))
"""


class FitPeakIncrease:
    """The fit's own peak RSS increase, first fit in a fresh interpreter (bytes)."""

    params = [list(TASKS), sizes((100_000, 1_000_000))]
    param_names = ["task", "n"]
    timeout = 1800.0

    def track_fit_peak_increase(self, task, n):
        here = os.path.dirname(os.path.abspath(__file__))
        code = _CHILD.format(
            cartjit_root=cartjit_root(),
            bench_parent=os.path.dirname(here), pkg=os.path.basename(here),
            task=task, n=n)
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"memory child failed:\n{out.stderr}")
        return int(out.stdout.split()[-1])

    track_fit_peak_increase.unit = "bytes"
