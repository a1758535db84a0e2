"""The experiment runner: the wall time of ``cartjit run`` on the monograph sweep.

``experiments/monograph.toml`` is 72 cells and 2,152 tree fits on iris (150 cases); its
wall time is mostly fixed costs (starting Python, the imports, loading the kernels, the
reports and plots) and Python between small kernels, which is what a researcher running
many small sweeps waits for. Each sample is the whole command in a new process, as a
user types it::

    cartjit run experiments/monograph.toml --out DIR --quiet --backend B

with B ``serial`` or ``threads`` (the default, two threads), into a new directory, with
the kernel cache warmed in ``setup_cache`` by one run of the same command (a cold cache
is :mod:`coldstart`'s subject).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import cartjit_root

#: The sweep, from the repository that holds these benchmarks.
CONFIG = Path(__file__).resolve().parents[2] / "experiments" / "monograph.toml"
BACKENDS = ("serial", "threads")


def _run(backend, out):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [cartjit_root()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    command = [sys.executable, "-m", "cartjit", "run", str(CONFIG), "--out", out, "--quiet",
               "--backend", backend]
    if backend == "threads":
        command += ["--workers", "2"]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)


class MonographSweep:
    """``cartjit run experiments/monograph.toml`` with a warm kernel cache, one new
    process per sample."""

    params = [list(BACKENDS)]
    param_names = ["backend"]
    number = 1
    repeat = (3, 7, 60.0)
    warmup_time = 0.0
    timeout = 600.0

    def setup_cache(self):
        root = os.path.abspath("cartjit-runner")
        os.makedirs(root, exist_ok=True)
        _run("serial", tempfile.mkdtemp(prefix="warm-", dir=root))  # compiles if needed
        return root

    setup_cache.timeout = 1200.0

    def setup(self, root, backend):
        self.outs = tempfile.mkdtemp(prefix=f"{backend}-", dir=root)

    def teardown(self, root, backend):
        shutil.rmtree(self.outs, ignore_errors=True)

    def time_monograph(self, root, backend):
        # a new output directory for every call (a run refuses a non-empty one)
        _run(backend, tempfile.mkdtemp(dir=self.outs))
