"""Ctrl-C on the Dask backend: one line, status 130, finished cells kept, ``--resume``
completes the run — as on the other backends. The local cluster's teardown (closed
connections, cancelled tasks, lost scattered data) prints nothing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed", reason="the Dask backend needs dask.distributed")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

SWEEP = """\
[cv]
n_repeats = 300
seed = 11
[[datasets]]
bundled = "iris"
cv = { V = [10] }
tree = { min_samples_leaf = [1, 2, 3, 4] }
"""
N_CELLS = 300 * 4


def _env():
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(tmp_path, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "cartjit", "run", "sweep.toml", "--out", "out",
         "--backend", "dask", "--workers", "2", *extra],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True)


def _saved(tmp_path):
    cells = tmp_path / "out" / "cells"
    return len(list(cells.glob("*.json"))) if cells.is_dir() else 0


@pytest.mark.parametrize("to_group", [True, False], ids=["terminal-ctrl-c", "main-only"])
def test_ctrl_c_on_dask_is_one_line_and_resume_completes(tmp_path, to_group):
    (tmp_path / "sweep.toml").write_text(SWEEP)
    proc = _run(tmp_path)
    try:
        deadline = time.monotonic() + 240
        while _saved(tmp_path) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert _saved(tmp_path) >= 3, "no cell finished within the time allowed"
        # a Ctrl-C at a terminal reaches the whole process group: the workers too
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and "Error" not in err, err
    assert len(lines) <= 3, err
    assert "interrupted" in lines[-1] and "--resume" in lines[-1]
    kept = _saved(tmp_path)
    assert 3 <= kept < N_CELLS

    resumed = _run(tmp_path, "--resume")
    try:
        _, err = resumed.communicate(timeout=300)
    finally:
        if resumed.poll() is None:
            os.killpg(resumed.pid, signal.SIGKILL)
            resumed.communicate()
    assert resumed.returncode == 0, err
    assert _saved(tmp_path) == N_CELLS
    assert f"{kept} reused" in err or f"{kept} already done" in err, err
