"""Step 1 compiles only the scans a fit can reach (``cartjit.engine.search.search_marks``),
and the tree is the one grown with every scan compiled in."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from cartjit import CARTClassifier
from cartjit.engine import grow as _builder
from cartjit.engine.search import SEARCH_KERNELS, _search, _search_runs, search_marks
from cartjit.engine.impurity import ENTROPY, GINI, SQUARED_ERROR, TWOING
from cartjit.engine.scans import EQUAL_FACTORS_RTOL, Targets

EVERY_CLASS_SCAN = (None, True, True, True)


def _targets(criterion, factor, unit_weights=True, shift=2):
    return Targets(np.zeros(4, np.int32), np.zeros(0), np.ones(4), unit_weights, True,
                   np.asarray(factor, dtype=np.float64), criterion, shift, (1 << shift) - 1,
                   np.empty(0))


def test_marks_by_kind_of_fit():
    third = 1.0 / 3.0
    assert search_marks(_targets(SQUARED_ERROR, [])) == (True, None, None, None)
    # Gini, unit weights, one factor: the lean scan and the general one
    assert search_marks(_targets(GINI, [third] * 3)) == (None, True, True, None)
    # factors an ulp apart (empirical priors) still share one factor
    assert search_marks(
        _targets(GINI, [third, np.nextafter(third, 1.0), third])) == (None, True, True, None)
    # factors further apart than the tolerance: the scan by runs as well
    apart = third * (1.0 + 4.0 * EQUAL_FACTORS_RTOL)
    assert search_marks(_targets(GINI, [third, apart])) == EVERY_CLASS_SCAN
    assert search_marks(_targets(GINI, [0.0, 0.5])) == EVERY_CLASS_SCAN
    for odd in ([0.5, np.nan], [np.nan, 0.5], [np.nan, np.nan], [0.5, np.inf]):
        assert search_marks(_targets(GINI, odd)) == EVERY_CLASS_SCAN, odd
    # the lean Gini scan needs unit weights and labels in the keys
    assert search_marks(_targets(GINI, [0.5, 0.5], unit_weights=False)) == (
        None, True, None, True)
    assert search_marks(_targets(GINI, [0.5, 0.5], shift=0)) == (
        None, True, None, True)
    for criterion in (ENTROPY, TWOING):
        assert search_marks(_targets(criterion, [0.5, 0.5])) == (None, True, None,
                                                                         True)
    assert set(SEARCH_KERNELS) >= {search_marks(_targets(c, [0.5, 0.5]))
                                           for c in (GINI, ENTROPY, SQUARED_ERROR)}


def _problem(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 1] = np.round(X[:, 1], 1)  # tied values: the general scan
    y = ((X[:, 0] + 0.4 * X[:, 1] > 0.2).astype(int)
         + (X[:, 2] + 0.3 * rng.normal(size=n) > 0.8).astype(int))
    w = rng.integers(1, 4, n).astype(float)
    return X, y, w


FITS = [
    ("gini", lambda: CARTClassifier(), False),
    ("gini equal priors", lambda: CARTClassifier(priors="equal"), False),
    ("gini given priors", lambda: CARTClassifier(priors=[0.2, 0.5, 0.3]), False),
    ("gini weights", lambda: CARTClassifier(), True),
    ("entropy", lambda: CARTClassifier("entropy"), False),
    ("entropy weights", lambda: CARTClassifier("entropy"), True),
    ("twoing", lambda: CARTClassifier("twoing"), False),
]


@pytest.mark.parametrize("n", [400, 20_000], ids=["serial", "threaded"])
@pytest.mark.parametrize("name,make,weighted", FITS, ids=[f[0] for f in FITS])
def test_the_tree_is_the_one_grown_with_every_scan(monkeypatch, n, name, make, weighted):
    X, y, w = _problem(n, 5)
    kw = {"sample_weight": w} if weighted else {}
    # 20,000 x 4 cells grow on two threads, with the kernels of SEARCH_KERNELS
    depth = {"max_depth": 6} if n > 400 else {}
    chosen = make().set_params(**depth).fit(X, y, **kw).tree_max_
    monkeypatch.setattr(_builder, "search_marks", lambda tg: EVERY_CLASS_SCAN)
    every = make().set_params(**depth).fit(X, y, **kw).tree_max_
    assert chosen.n_nodes > 7
    for field in chosen._fields:
        np.testing.assert_array_equal(getattr(chosen, field), getattr(every, field),
                                      err_msg=field)


_COLD_SCRIPT = """
import json
import numpy as np
from cartjit import CARTClassifier, CARTRegressor
from cartjit.engine import scans as _splitter
from cartjit.datasets import load_iris

X, y = load_iris(return_X_y=True)
X, y = np.asarray(X), np.asarray(y)
scans = ("best_split_gini_runs", "best_split_class_runs", "best_split_classification",
         "best_split_regression")
def counts():
    return {s: len(getattr(_splitter, s).signatures) for s in scans}
CARTClassifier().fit(X, y)
gini = counts()
CARTRegressor().fit(X[:, :3], X[:, 3])
print(json.dumps([gini, counts()]))
"""


def test_a_gini_fit_compiles_no_other_scan(tmp_path):
    """In an empty cache, a Gini fit on iris (ties: the general scan; none: the lean one)
    compiles neither the regression scans nor the scan by runs of the other criteria;
    a regression fit then compiles its own and no classification scan."""
    root = Path(_builder.__file__).resolve().parent.parent.parent
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), CARTJIT_CACHE="1")
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _COLD_SCRIPT], capture_output=True, text=True,
                         timeout=600, check=True, env=env)
    gini, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert gini == {"best_split_gini_runs": 1, "best_split_class_runs": 0,
                    "best_split_classification": 1, "best_split_regression": 0}
    assert after == dict(gini, best_split_regression=1)


def test_threads_are_used_by_the_threaded_cases():
    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread: the threaded cases grow serially")
    from cartjit.engine import speed as _team
    if _team.launch_pool() is None:
        pytest.skip("no threading layer for launches")
    X, y, _ = _problem(20_000, 5)
    CARTClassifier("entropy", max_depth=3).fit(X, y)
    assert len(_search_runs.signatures) >= 1


def test_cartjit_compile_covers_every_set_of_scan_marks():
    """After ``cartjit compile`` (compiled here, or loaded from the cache), a serial fit
    of any kind compiles no new version of the driver or the search."""
    from cartjit import CARTRegressor
    from cartjit.experiments.warmup import compile_kernels

    compile_kernels()
    kernels = [_builder._grow_serial, _search]

    def count():
        return [len(k.signatures) for k in kernels]

    before = count()
    X, y, w = _problem(120, 3)
    X[:, 3] = np.arange(120) % 4
    for cat in ([], [3]):
        for weighted in (False, True):
            kw = {"sample_weight": w} if weighted else {}
            for criterion in ("gini", "entropy", "twoing"):
                for priors in ("empirical", "equal", [0.2, 0.5, 0.3]):
                    CARTClassifier(criterion, priors=priors, categorical_features=cat).fit(
                        X, y, **kw)
            CARTRegressor(categorical_features=cat).fit(X, X[:, 0] + y, **kw)
    assert count() == before
