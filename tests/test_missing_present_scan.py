"""The split search of a (node, feature) pair with missing values, regression with unit
weights: ``_gathered_best`` (the responses of the present cases read once, the scan on
the running sums of the moments pass) against the path it stands in for
(``_reg_moments`` of the present cases, then ``best_split_regression_unit`` on the
keys, Δ times the present share), bit for bit, and against a brute-force search over
every position.

Segments are random: responses with many ties (a few distinct values: near-ties between
positions, constant segments) or continuous, any number of missing cases at the end,
short and long. Also the categorical pairs (``_gathered_subset``) and the present class
counts of a classification pair (``_label_counts``).
"""
import numpy as np
from numba import njit

from cartjit._builder import (_gathered_best, _gathered_subset, _label_counts, _reg_moments,
                              _side_bits)
from cartjit._criteria import SQUARED_ERROR, tie_tolerance
from cartjit._splitter import Segment, Targets, best_split_regression_unit, class_counts
from cartjit._subsets import (best_subset_regression, float_scratch_size, int_scratch_size,
                              left_levels_bits)


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


def _unit_responses(rng, trial, n_rows, w):
    """Responses of a trial (every third with many ties, sometimes one value only; else
    continuous, of a random scale) and their unit-weight regression Targets (weights
    ``w``)."""
    if trial % 3 == 0:
        y = rng.integers(0, int(rng.integers(1, 4)), n_rows).astype(np.float64) - 1.0
    else:
        y = rng.normal(size=n_rows) * 10.0 ** rng.integers(-3, 4)
    return y, Targets(np.empty(0, np.int32), y, w, True, True, np.empty(0), SQUARED_ERROR,
                      0, 0, np.empty(0))


def test_gathered_scan_is_the_scan_on_the_keys_bit_for_bit():
    rng = np.random.default_rng(16)
    n_rows = 600
    gathered = np.empty(2 * n_rows)
    iota = np.arange(n_rows, dtype=np.int32)
    found = 0
    clear = 0
    for trial in range(3000):
        y, tg = _unit_responses(rng, trial, n_rows, np.empty(0))
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


@njit
def _both_subset(row, codes, start, pend, w_total, y, min_leaf, tg, gathered, lm, level_f,
                 level_i, fs, ints):
    new = _gathered_subset(row, codes, start, pend, w_total, tg, min_leaf, gathered,
                           level_f, level_i, lm)
    bits_new = _side_bits(level_i, lm, pend - start) if new[1] >= 0 else (
        np.uint64(0), np.uint64(0))
    w_present, mean, s_sum, imp, _ = _reg_moments(row, start, pend, tg)
    d, n_left = best_subset_regression(Segment(row, codes, start, pend), y, tg.w, True,
                                       mean, imp, min_leaf, fs, ints, lm)
    pos = np.int64(-1)
    left = np.uint64(0)
    if n_left >= 0:
        d *= w_present / w_total
        pos = start + n_left
        left = left_levels_bits(ints, lm, pend - start)
    else:
        d = -np.inf
    return new, bits_new, (d, pos), left


def test_gathered_subset_is_the_subset_search_on_the_keys_bit_for_bit():
    """``_gathered_subset`` (a categorical pair's responses gathered once, the moments
    and the levels' sums from the copy) against the path it stands in for
    (``_reg_moments``, then ``best_subset_regression`` on the keys, Δ times the present
    share), bit for bit, with the sides it leaves; and ``_side_bits`` against the left
    set of ``left_levels_bits`` and the codes of the cases searched."""
    rng = np.random.default_rng(17)
    n_rows = 500
    gathered = np.empty(2 * n_rows)
    found = 0
    for trial in range(3000):
        y, tg = _unit_responses(rng, trial, n_rows, np.ones(n_rows))
        n_levels = int(rng.integers(1, 40))
        codes = rng.integers(0, n_levels, n_rows).astype(np.uint16)
        if trial % 4 == 0:  # a few levels only
            codes = rng.choice(rng.integers(0, n_levels, 3), n_rows).astype(np.uint16)
        n = int(rng.integers(2, 40)) if trial % 2 else int(rng.integers(2, n_rows))
        row = rng.permutation(n_rows)[:n]
        row = row[np.argsort(codes[row], kind="stable")].astype(np.int32)  # by level
        start = min(int(rng.integers(0, 3)), n - 2)
        pend = int(rng.integers(start + 2, n + 1))
        w_total = float(n - start)
        min_leaf = int(rng.integers(1, 8))
        # scratch left dirty: neither search may read what it did not write
        scratch = [np.full(float_scratch_size(n_levels, 1), np.nan),
                   np.full(int_scratch_size(n_levels), -3, dtype=np.int64)] * 2
        new, bits, old, left = _both_subset(row, codes, start, pend, w_total, y, min_leaf,
                                            tg, gathered, n_levels,
                                            *(a.copy() for a in scratch))
        assert new[1] == old[1], (trial, new, old)
        assert new[0] == old[0] or (np.isinf(new[0]) and np.isinf(old[0])), (trial, new, old)
        if new[1] >= 0:
            found += 1
            present = 0
            for c in np.unique(codes[row[start:pend]]):
                present |= 1 << int(c)
            assert (int(bits[0]), int(bits[1])) == (int(left), present), trial
    assert found > 1000, found


@njit
def _counts_both(row, lo, hi, tg, a, b):
    _label_counts(row, lo, hi, tg, a)
    class_counts(row, lo, hi, tg, b)


def test_label_counts_are_the_class_counts():
    """``_label_counts`` (two classes packed in the keys with unit weights: the label
    bits summed in a register) against ``class_counts``, on random segments, and the
    general path (weights, three classes) unchanged."""
    rng = np.random.default_rng(18)
    for trial in range(400):
        n_classes = 2 if trial % 4 else 3
        shift = 1 if n_classes == 2 else 2
        n = int(rng.integers(0, 300))
        y = rng.integers(0, n_classes, n + 3).astype(np.int32)
        cases = rng.permutation(n + 3)[:n]
        row = ((cases << shift) | y[cases]).astype(np.int32)
        unit = trial % 3 != 0
        w = np.ones(n + 3) if unit else rng.integers(1, 4, n + 3) * 0.5
        tg = Targets(y, np.empty(0), w, unit, True, np.ones(n_classes), 0, shift,
                     (1 << shift) - 1, np.empty(0))
        lo = int(rng.integers(0, n + 1))
        hi = int(rng.integers(lo, n + 1))
        a = np.full(n_classes, np.nan)
        b = np.full(n_classes, np.nan)
        _counts_both(row, lo, hi, tg, a, b)
        assert a.tolist() == b.tolist(), trial
