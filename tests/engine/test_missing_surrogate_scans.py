"""The surrogate scans for unit weights against the case-by-case scans they stand in for.

``_ordered_scan_distinct`` (a feature without ties) must return what
``_ordered_scan_counts`` returns: the best agreement, the majority, the marked cases, the
position of the threshold and the direction, on random segments of marked, unmarked
and unlabelled cases, with long runs of one mark (exact ties between thresholds), with
few marked cases (no threshold qualifies) and with label bits in the keys.

``categorical_surrogate`` must return what its definition gives level by level over
every code, on random segments grouped by level, with few of many levels present.
"""
import numpy as np
from numba import njit

from cartjit.engine.scans import Targets
from cartjit.engine.surrogates import (LEVEL_LEFT, LEVEL_NONE, LEVEL_RIGHT, _ordered_scan_counts,
                                 _ordered_scan_distinct, categorical_surrogate)


@njit
def _both(row, start, end, shift, marks, high):
    no_ranks = np.empty(0, dtype=np.int32)
    return (_ordered_scan_counts(row, start, end, shift, marks, no_ranks, high),
            _ordered_scan_distinct(row, start, end, shift, marks, high))


def _segment(rng, trial):
    n = int(rng.integers(0, 12)) if trial % 4 == 0 else int(rng.integers(0, 400))
    shift = int(rng.integers(0, 3))
    n_cases = n + 7
    cases = rng.permutation(n_cases)[:n].astype(np.int64)
    row = ((cases << shift) | rng.integers(0, 1 << shift, n)).astype(np.int32)
    p = rng.dirichlet([1.0, 1.0, 0.3])
    if trial % 5 == 0:  # long runs of one mark: many equal agreements
        marks = np.repeat(rng.choice(3, n_cases // 16 + 1, p=p), 16)[:n_cases]
    else:
        marks = rng.choice(3, n_cases, p=p)
    marks = marks.astype(np.uint8)
    start = min(int(rng.integers(0, 4)), n)
    m = marks[row[start:] >> shift]
    high = np.array([(m == 1).sum(), (m == 0).sum(), (m != 2).sum()], dtype=np.float64)
    return row, start, n, shift, marks, high


def test_distinct_scan_equals_case_by_case_scan():
    rng = np.random.default_rng(12)
    found = 0
    for trial in range(6000):
        row, start, end, shift, marks, high = _segment(rng, trial)
        old, new = _both(row, start, end, shift, marks, high)
        assert tuple(new) == tuple(old), (trial, old, new)
        found += old[3] >= 0
    # most segments have a threshold that beats the majority, some none
    assert 1000 < found < 5000


def _targets(shift, w, unit):
    """The :class:`Targets` fields the surrogate scans read: the shift and the weights."""
    return Targets(np.zeros(0, dtype=np.int32), np.zeros(0), w, unit, True, np.zeros(0), 0,
                   shift, (1 << shift) - 1)


@njit
def _categorical(row, start, end, tg, marks, codes, n_levels, w_left, w_right, style,
                 tie_left):
    lw = np.full(2 * n_levels, np.nan)  # scratch left dirty: the scan must not read it
    side = np.full(n_levels, 7, dtype=np.int64)
    counts = np.full(3 * n_levels, -5, dtype=np.int64)
    a, adj = categorical_surrogate(row, start, end, tg, marks, codes, n_levels, w_left,
                                   w_right, style, tie_left, lw, side, counts)
    return a, adj, side


def _categorical_reference(cases, marks, w, codes, n_levels, w_left, w_right, style,
                           tie_left):
    """The categorical surrogate by its definition, level by level over every code, the
    sums in code order (as the level-by-level tables it was first written with)."""
    wl = np.zeros(n_levels)
    wr = np.zeros(n_levels)
    nl = np.zeros(n_levels, dtype=np.int64)
    nr = np.zeros(n_levels, dtype=np.int64)
    for c in range(n_levels):  # each level's cases in segment order
        for case in cases[codes[cases] == c]:
            if marks[case] == 1:
                wl[c] += w[case]
                nl[c] += 1
            elif marks[case] == 0:
                wr[c] += w[case]
                nr[c] += 1
    sum_l = 0.0
    sum_r = 0.0
    for c in range(n_levels):
        sum_l += wl[c]
        sum_r += wr[c]
    default_left = sum_l > sum_r or (sum_l == sum_r and tie_left == 1)
    majority = sum_l if default_left else sum_r
    side = np.full(n_levels, LEVEL_NONE, dtype=np.int64)
    agree = 0.0
    n_agree = n_disagree = 0
    for c in range(n_levels):
        if nl[c] + nr[c] == 0:
            continue
        if wl[c] < wr[c] or (wl[c] == wr[c] and not default_left):
            side[c], agree, n_agree, n_disagree = (LEVEL_RIGHT, agree + wr[c],
                                                   n_agree + nr[c], n_disagree + nl[c])
        else:
            side[c], agree, n_agree, n_disagree = (LEVEL_LEFT, agree + wl[c],
                                                   n_agree + nl[c], n_disagree + nr[c])
    if not (n_agree > 1 and n_disagree > 1):
        return 0.0, 0.0, side
    total, majority = ((w_left + w_right, max(w_left, w_right)) if style == 0
                       else (sum_l + sum_r, majority))
    a = agree / total
    m = majority / total
    return a, (a - m) / (1.0 - m), side


def test_categorical_surrogate_equals_the_level_by_level_definition():
    """Only the levels present are summed and visited; a node holding a few of many
    levels (and levels whose cases are all unmarked) must give the agreement, adjusted
    agreement and sides of the definition over every code, bit for bit."""
    rng = np.random.default_rng(31)
    kept = 0
    for trial in range(3000):
        n_levels = int(rng.integers(1, 30))
        n = int(rng.integers(0, 12)) if trial % 4 == 0 else int(rng.integers(0, 300))
        shift = int(rng.integers(0, 3))
        n_cases = n + 5
        codes = rng.integers(0, n_levels, n_cases).astype(np.uint16)
        if trial % 3 == 0:  # a few levels present only
            codes = rng.choice(rng.integers(0, n_levels, 3), n_cases).astype(np.uint16)
        cases = rng.permutation(n_cases)[:n]
        cases = cases[np.argsort(codes[cases], kind="stable")]  # grouped by level
        row = ((cases << shift) | rng.integers(0, 1 << shift, n)).astype(np.int32)
        p = rng.dirichlet([1.0, 1.0, 0.4])
        marks = rng.choice(3, n_cases, p=p).astype(np.uint8)
        unit = trial % 2 == 0
        w = np.ones(n_cases) if unit else rng.integers(1, 4, n_cases) * 0.1
        w_left = float(w[marks == 1].sum()) + float(rng.integers(0, 3))
        w_right = float(w[marks == 0].sum()) + float(rng.integers(0, 3))
        style = trial % 3 % 2
        tie_left = int(rng.integers(0, 2))
        a, adj, side = _categorical(row, 0, n, _targets(shift, w, unit), marks, codes,
                                    n_levels, w_left, w_right, style, tie_left)
        ra, radj, rside = _categorical_reference(cases, marks, w, codes, n_levels, w_left,
                                                 w_right, style, tie_left)
        assert (a, adj) == (ra, radj) or (np.isnan(adj) and np.isnan(radj)), trial
        assert side.tolist() == rside.tolist(), trial
        kept += a > 0
    assert 300 < kept < 2800, kept
