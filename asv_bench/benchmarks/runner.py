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
import re
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


#: A methods study for the runner's own share: Breiman's (1996) config with fewer
#: replications (a CV-pruned tree against 50 bagged CV-pruned trees on six data sets).
STUDY = Path(__file__).resolve().parents[2] / "experiments" / "breiman1996.toml"


def runner_overhead(config, out, backend="serial", repeats=None):
    """Run ``config`` (``n_repeats`` replaced by ``repeats`` when given) into ``out``
    and return ``(cells, fit_and_predict_s, cells_phase_s)``: the runner's own time
    per cell is ``(cells_phase_s - fit_and_predict_s) / cells`` with the serial backend
    (everything the runner does for a cell besides the fit and the prediction: drawing
    the rows, scoring, writing the sealed cell file)."""
    import json

    import pandas as pd

    text = Path(config).read_text(encoding="utf-8")
    if repeats is not None:
        # every protocol's replications (inline tables too), whatever the spacing; a
        # config that sets none is refused rather than run at its own count
        text, found = re.subn(r"\bn_repeats(\s*)=(\s*)\d+",
                              rf"n_repeats\g<1>=\g<2>{int(repeats)}", text)
        if not found:
            raise ValueError(f"runner_overhead: {config} sets no n_repeats to replace")
    os.makedirs(out, exist_ok=True)
    cfg = Path(out) / "study.toml"
    cfg.write_text(text.replace('"data/', f'"{Path(config).parent}/data/'), encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [cartjit_root()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    run_dir = Path(out) / "run"
    subprocess.run([sys.executable, "-m", "cartjit", "run", str(cfg), "--out", str(run_dir),
                    "--quiet", "--backend", backend], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    rows = pd.read_parquet(run_dir / "results.parquet")
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    cells_s = float(meta["invocations"][-1]["timings_s"]["cells"])
    return len(rows), float((rows.fit_time_s + rows.predict_time_s).sum()), cells_s


class StudyOverhead:
    """The runner's own time per cell of a methods study, serial backend, as a share of
    the fits' and predictions' time (target: under 5 %), on Breiman's 1996 study with
    3 replications (36 cells, 918 CV-pruned trees)."""

    number = 1
    repeat = 1
    timeout = 900.0

    def setup_cache(self):
        root = tempfile.mkdtemp(prefix="cartjit-overhead-")
        return runner_overhead(STUDY, root, repeats=3)

    setup_cache.timeout = 1200.0

    def track_own_ms_per_cell(self, result):
        cells, fits, phase = result
        return 1e3 * (phase - fits) / cells

    def track_own_share_percent(self, result):
        cells, fits, phase = result
        return 100.0 * (phase - fits) / fits

    track_own_ms_per_cell.unit = "ms"
    track_own_share_percent.unit = "%"
