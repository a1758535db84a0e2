"""Nothing compiles silently: each kind of fit says so when it first compiles, and
``cartjit compile`` reports its progress and says nothing about compiling on a warm cache.

The slow tests run fresh interpreters on an empty cache (``NUMBA_CACHE_DIR``), as a user's
first session after installing: they compile for minutes on a small machine.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest

from cartjit.engine import cache as _cache
from cartjit.__main__ import main
from cartjit.experiments import warmup

ROOT = Path(__file__).resolve().parents[2]

# One fit of each kind, in this order, in one process; "@@ name" on stderr before each.
SESSION = textwrap.dedent("""\
    import sys
    import numpy as np
    import cartjit
    from cartjit.datasets import load_iris, load_titanic

    def step(name):
        print("@@ " + name, file=sys.stderr, flush=True)

    X, y = load_iris(return_X_y=True)
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    step("numeric classification")
    cartjit.CARTClassifier().fit(X, y)
    step("numeric classification again")
    cartjit.CARTClassifier(max_depth=3).fit(X[:100], y[:100])
    step("regression")
    cartjit.CARTRegressor().fit(X[:, 1:], X[:, 0])
    Xt, yt = load_titanic(return_X_y=True)
    step("categorical cross-validation")
    cartjit.CARTClassifierCV(cv=10, random_state=0).fit(Xt, yt)
    Xm = X.copy()
    Xm[::7, 2] = np.nan
    step("missing-value cross-validation")
    cartjit.CARTClassifierCV(cv=10, random_state=0).fit(Xm, y)
    step("end")
    """)

KINDS = {
    "numeric classification": "the kernels of classification trees (gini) on numeric features",
    "regression": "the kernels of regression trees (squared_error) on numeric features",
    "categorical cross-validation":
        "the kernels of cross-validated classification trees (gini) on categorical features",
    "missing-value cross-validation":
        "the kernels of cross-validated classification trees (gini) on numeric features "
        "with missing values",
}


def _session(cache, code=SESSION):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), CARTJIT_CACHE="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    parts = {}
    for block in proc.stderr.split("@@ ")[1:]:
        name, _, text = block.partition("\n")
        parts[name] = text
    return parts


@pytest.mark.slow
def test_each_kind_of_first_fit_says_it_compiles_and_a_warm_cache_says_nothing(tmp_path):
    cache = tmp_path / "cache"
    cold = _session(cache)
    for name, kind in KINDS.items():
        notices = [line for line in cold[name].splitlines() if "compiling" in line]
        assert len(notices) == 1, (name, cold[name])
        assert f"cartjit: compiling {kind} into {cache}" in notices[0]
        assert "once" in notices[0] and "'cartjit compile'" in notices[0]
    assert "compiling" not in cold["numeric classification again"]
    warm = _session(cache)
    assert all("compiling" not in text for text in warm.values()), warm


@pytest.fixture
def fake_steps(monkeypatch):
    """``cartjit compile`` over two steps that each compile a new tiny function."""
    f = numba.njit(lambda x: x + 1)
    g = numba.njit(lambda x: x * 2)
    monkeypatch.setattr(warmup, "kernel_steps",
                        lambda: [("first step", lambda: f(1)), ("second step", lambda: g(1))])
    monkeypatch.setitem(_cache._state, "told", set())


def test_compile_reports_each_step_then_says_nothing_when_all_is_compiled(fake_steps, capsys):
    assert main(["compile"]) == 0
    cold = capsys.readouterr()
    lines = cold.err.splitlines()
    assert lines[0].startswith("cartjit: compiling the kernels into ")
    assert lines[1].startswith("cartjit compile: [1/2] first step: 1 function(s) compiled, ")
    assert lines[2].startswith("cartjit compile: [2/2] second step: 1 function(s) compiled, ")
    assert all(line.endswith(" s elapsed") for line in lines[1:]) and len(lines) == 3
    assert "2 functions" in cold.out
    assert main(["compile"]) == 0  # everything compiled now: no notice, no progress
    warm = capsys.readouterr()
    assert warm.err == ""
    assert "every kernel was already compiled" in warm.out
