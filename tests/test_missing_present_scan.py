"""The split search of a (node, feature) pair with missing values, regression with unit
weights: ``_gathered_best`` (the responses of the present cases read once, the scan on
the running sums of the moments pass) against the path it stands in for
(``_reg_moments`` of the present cases, then ``best_split_regression_unit`` on the
keys, Δ times the present share), bit for bit, and against a brute-force search over
every position.

Segments are random: responses with many ties (a few distinct values: near-ties between
positions, constant segments) or continuous, any number of missing cases at the end,
short and long.
"""
import numpy as np
from numba import njit

from cartjit._builder import _gathered_best, _reg_moments
from cartjit._criteria import SQUARED_ERROR, tie_tolerance
from cartjit._splitter import Targets, best_split_regression_unit


@njit
def _both(row, start, pend, w_total, y, min_leaf, tg, gathered, iota):
    new = _gathered_best(row, start, pend, w_total, tg, min_leaf, gathered, iota)
    w_present, mean, s_sum, imp, _ = _reg_moments(row, start, pend, tg)
    d, pos = best_split_regression_unit(row, start, pend, y, mean, s_sum, imp,
                                        tie_tolerance(imp), min_leaf)
    if pos >= 0:
        d *= w_present / w_total
    return new, (d, np.int64(pos))


def _brute(y_present, min_leaf, w_total):
    """(Δ of the best position by direct variances, times n / ``w_total``; its position;
    the margin to the best of the other positions)."""
    n = y_present.shape[0]
    var = y_present.var()
    deltas = np.array([var - (p * y_present[:p].var() + (n - p) * y_present[p:].var()) / n
                       for p in range(max(min_leaf, 1), n - max(min_leaf, 1) + 1)])
    if deltas.shape[0] == 0:
        return -np.inf, -1, 0.0
    k = int(np.argmax(deltas))
    rest = np.delete(deltas, k)
    margin = deltas[k] - rest.max() if rest.shape[0] else np.inf
    return deltas[k] * n / w_total, max(min_leaf, 1) + k, margin


def test_gathered_scan_is_the_scan_on_the_keys_bit_for_bit():
    rng = np.random.default_rng(16)
    n_rows = 600
    gathered = np.empty(2 * n_rows)
    iota = np.arange(n_rows, dtype=np.int32)
    found = 0
    clear = 0
    for trial in range(3000):
        if trial % 3 == 0:  # many ties, sometimes one value only
            y = rng.integers(0, int(rng.integers(1, 4)), n_rows).astype(np.float64) - 1.0
        else:
            y = rng.normal(size=n_rows) * 10.0 ** rng.integers(-3, 4)
        tg = Targets(np.empty(0, np.int32), y, np.empty(0), True, True, np.empty(0),
                     SQUARED_ERROR, 0, 0, np.empty(0))
        n = int(rng.integers(2, 40)) if trial % 2 else int(rng.integers(2, n_rows))
        row = rng.permutation(n_rows)[:n].astype(np.int32)
        start = int(rng.integers(0, 3))
        start = min(start, n - 2)
        pend = int(rng.integers(start + 2, n + 1))
        w_total = float(n - start)
        min_leaf = int(rng.integers(1, 8))
        new, old = _both(row, start, pend, w_total, y, min_leaf, tg, gathered, iota)
        assert new[1] == old[1], (trial, new, old)
        assert new[0] == old[0] or (np.isinf(new[0]) and np.isinf(old[0])), (trial, new, old)
        if new[1] >= 0:
            found += 1
            d, pos, margin = _brute(y[row[start:pend]], min_leaf, w_total)
            assert abs(new[0] - d) <= 1e-7 * max(1.0, abs(d)), (trial, new, d)
            if margin > 1e-7 * max(1.0, abs(d)):  # a clear best position
                clear += 1
                assert new[1] - start == pos, (trial, new, pos)
    assert found > 1000 and clear > 500, (found, clear)
