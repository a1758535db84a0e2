"""The regression scan of a large segment on its gathered responses
(``_builder._unit_scan_gathered``) against the scan on the keys
(``_splitter.best_split_regression_unit``): the same Δi, bit for bit, and the same
position, on segments inside longer rows of keys, with ties, near-ties, rising
stretches of the proxy and every ``min_samples_leaf`` up to none left."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit.engine import grow as B
from cartjit.engine.gathered import GATHER_MIN, _SCAN_SKIP, _unit_scan_gathered
from cartjit.engine.impurity import SQUARED_ERROR, tie_tolerance
from cartjit.engine.scans import Targets, best_split_regression_unit


def _responses(kind, n, rng):
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "three values":  # exact ties of the proxy: near-ties settled precisely
        return rng.integers(0, 3, n).astype(np.float64)
    if kind == "rising":  # the proxy rises over long stretches: blocks taken whole
        return np.sort(rng.normal(size=n)) + 0.01 * rng.normal(size=n)
    return np.round(rng.normal(size=n), 1) * 1e6  # large, tied


@pytest.mark.parametrize("kind", ["normal", "three values", "rising", "large"])
@pytest.mark.parametrize("n", [GATHER_MIN, 1500, 5000])
def test_gathered_scan_equals_the_scan_on_the_keys(kind, n):
    rng = np.random.default_rng(n + len(kind))
    y = _responses(kind, n, rng)
    seg = np.arange(n, dtype=np.int32) if kind == "rising" else rng.permutation(n).astype(
        np.int32)
    before = rng.permutation(n).astype(np.int32)[:37]
    keys = np.concatenate([before, seg, before[:5]])
    start, end = before.shape[0], before.shape[0] + n
    mean = float(y.mean())
    s_total = float(np.sum(y[seg] - mean))
    imp = float(y.var())
    tg = Targets(np.zeros(0, np.int32), y, np.zeros(0), True, True, np.zeros(0),
                 SQUARED_ERROR, 0, 0)
    g_row = np.full(2 * n + _SCAN_SKIP, np.nan)
    iota = np.arange(n, dtype=np.int32)
    for min_leaf in (1, 7, 300, n // 2, n // 2 + 1):
        want = best_split_regression_unit(keys, start, end, y, mean, s_total, imp,
                                          tie_tolerance(imp), min_leaf)
        got = _unit_scan_gathered(keys, start, end, tg, mean, s_total, imp, min_leaf,
                                    g_row, iota)
        assert got[1] == want[1]
        assert np.float64(got[0]).tobytes() == np.float64(want[0]).tobytes()
        if min_leaf <= n // 2:
            assert want[1] >= start + min_leaf


def test_a_fit_with_large_segments_equals_the_reference_tree():
    """A complete-data regression fit whose top segments take the gathered scan (more
    than GATHER_MIN cases) grows the tree of the plain reference implementation."""
    import cartjit
    from references.naive import assert_same_tree, naive_grow

    rng = np.random.default_rng(5)
    n = 2 * GATHER_MIN + 100
    X = rng.normal(size=(n, 2))  # no ties: the lean scans
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    tree = cartjit.CARTRegressor(max_depth=3).fit(X, y).tree_
    assert tree.n_node_samples[1] >= GATHER_MIN or tree.n_node_samples[2] >= GATHER_MIN
    assert_same_tree(tree, naive_grow(X, y, task="regression", max_depth=3))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_segments_of_any_size_are_gathered_as_the_keys_scan_them(monkeypatch, n_threads):
    """Segments far above the 131,072 cases where the gathered scan used to stop (and a
    feature without signal: near-ties by the hundred) give the tree of the scan on the
    keys, bit for bit: the same fit with GATHER_MAX back at that size."""
    import numba

    import cartjit

    if n_threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("one Numba thread only")
    rng = np.random.default_rng(11)
    n = 300_000
    X = rng.normal(size=(n, 3))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + rng.normal(size=n)  # X[:, 2] no signal
    est = cartjit.CARTRegressor(max_depth=2)
    before = numba.get_num_threads()
    numba.set_num_threads(n_threads)
    try:
        wide = est.fit(X, y).tree_
        monkeypatch.setattr(B, "GATHER_MAX", 1 << 17)
        narrow = est.fit(X, y).tree_
    finally:
        numba.set_num_threads(before)
    assert wide.n_node_samples[1] > 1 << 17 and wide.n_node_samples[2] > 1 << 17
    for name in ("feature", "threshold", "improvement", "impurity", "value"):
        a, b = getattr(wide, name), getattr(narrow, name)
        assert a.tobytes() == b.tobytes(), name
