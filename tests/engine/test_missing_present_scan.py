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

from cartjit.engine.gathered import (_SCAN_SKIP, _block_top, _gathered_best, _gathered_proxy, _gathered_subset, _precise_two)
from cartjit.engine.missing import _label_counts
from cartjit.engine.children import _reg_moments
from cartjit.engine.subsets import _side_bits
from cartjit.engine.impurity import SQUARED_ERROR, tie_tolerance
from cartjit.engine.scans import (Segment, Targets, _precise_reg_delta, best_split_regression_unit,
                               class_counts)
from cartjit.engine.subsets import (SCAN_CASES, best_subset_regression, float_scratch_size,
                              int_scratch_size, left_levels_bits)


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
    gathered = np.empty(2 * n_rows + _SCAN_SKIP)
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
def _block_and_walk(s_left_at, i0, i1, w_node, s_c, scale, best_den, hi_num, lo_num, tops):
    """``_block_top`` of a block, and a walk of it by the scan's rules: the walk's last
    clear gain and whether a near-tie of the best came after it (a near-tie's outcome
    needs the precise Δi, which the walk here does not take)."""
    got = _block_top(s_left_at, i0, i1, w_node, s_c, scale, best_den, hi_num, tops)
    last = np.int64(-1)
    tie_after = False
    for i in range(i0, i1):
        num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
        if num * best_den > hi_num * den:
            best_den = den
            hi_num = num + scale * den
            lo_num = num - scale * den
            last = np.int64(i)
            tie_after = False
        elif num * best_den >= lo_num * den:
            tie_after = True
    return got[0], last, tie_after, got[1], got[2], best_den, hi_num


def test_block_jump_ends_where_the_walk_ends():
    """``_block_top``: when it names a candidate, the walk of the block from the same
    state ends on that candidate by a clear gain with no near-tie after it; it declines
    (and the scan walks) where candidates tie or nearly tie. Blocks of responses with
    many ties and continuous ones, states from no best yet to a best inside the block's
    range."""
    rng = np.random.default_rng(23)
    tops = np.empty(_SCAN_SKIP)
    jumped = declined = 0
    for trial in range(4000):
        n = int(rng.integers(3, 300))
        if trial % 3 == 0:
            y = rng.integers(0, int(rng.integers(1, 4)), n).astype(np.float64)
        else:
            y = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
        s_left_at = np.cumsum(y - y.mean())
        s_c = float(s_left_at[-1])
        w_node = float(n)
        scale = 1e-11 * w_node * float(y.var())
        i0 = int(rng.integers(0, n - 1))
        i1 = min(n - 1, i0 + int(rng.integers(1, _SCAN_SKIP + 1)))
        if trial % 4 == 0:  # no best yet
            best_den, hi_num, lo_num = 1.0, -np.inf, -np.inf
        else:  # the best so far: some candidate of the node
            b = int(rng.integers(0, n - 1))
            w_left = b + 1.0
            den = w_left * (w_node - w_left)
            s_left = s_left_at[b]
            num = s_left * s_left * (w_node - w_left) + (s_c - s_left) ** 2 * w_left
            best_den, hi_num, lo_num = den, num + scale * den, num - scale * den
        m, last, tie_after, num_m, den_m, den_w, hi_w = _block_and_walk(
            s_left_at, np.uint64(i0), np.uint64(i1), w_node, s_c, scale, best_den, hi_num,
            lo_num, tops)
        if m >= 0:
            jumped += 1
            assert m == last and not tie_after, (trial, m, last, tie_after)
            assert den_m == den_w and num_m + scale * den_m == hi_w, trial
        else:
            declined += 1
    assert jumped > 1000 and declined > 300, (jumped, declined)


@njit
def _precise_pair(ys_a, pa, ma, sla, ys_b, pb, mb, slb):
    iota = np.arange(max(ys_a.shape[0], ys_b.shape[0]), dtype=np.int32)
    w = np.empty(0)
    one_a = _precise_reg_delta(iota, pa, ys_a.shape[0], ys_a, w, True, ma, float(pa), sla)
    one_b = _precise_reg_delta(iota, pb, ys_b.shape[0], ys_b, w, True, mb, float(pb), slb)
    two = _precise_two(ys_a, pa, ys_a.shape[0], ma, sla, ys_b, pb, ys_b.shape[0], mb, slb)
    return one_a, one_b, two[0], two[1]


def test_precise_two_is_two_precise_deltas_bit_for_bit():
    """Two pairs' closing Δi at once (``_precise_two``, right children of any lengths)
    equal ``_precise_reg_delta`` of each, bit for bit."""
    rng = np.random.default_rng(29)
    for trial in range(500):
        ys = [rng.normal(size=int(rng.integers(2, 200))) * 10.0 ** rng.integers(-3, 4)
              for _ in range(2)]
        if trial % 3 == 0:
            ys = [np.round(y) for y in ys]
        pos = [int(rng.integers(1, y.shape[0])) for y in ys]
        means = [float(y.mean()) for y in ys]
        sls = [float(np.sum(y[:q] - mu)) for y, q, mu in zip(ys, pos, means)]
        a1, b1, a2, b2 = _precise_pair(ys[0], pos[0], means[0], sls[0], ys[1], pos[1],
                                       means[1], sls[1])
        assert a1 == a2 and b1 == b2, (trial, a1, a2, b1, b2)


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
    set of ``left_levels_bits`` and the codes of the cases searched. Segments of up to
    ``SCAN_CASES`` present cases take the pass without a branch a case, longer ones the
    run-by-run loops: both are drawn."""
    rng = np.random.default_rng(17)
    n_rows = 2600
    gathered = np.empty(2 * n_rows)
    found = 0
    long_found = 0
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
            long_found += pend - start > SCAN_CASES
            present = 0
            for c in np.unique(codes[row[start:pend]]):
                present |= 1 << int(c)
            assert (int(bits[0]), int(bits[1])) == (int(left), present), trial
    assert found > 1000 and long_found > 200, (found, long_found)


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
