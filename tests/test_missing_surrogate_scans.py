"""The surrogate scans for unit weights against the case-by-case scans they stand in for.

``_ordered_scan_distinct`` (a feature without ties) must return what
``_ordered_scan_counts`` returns: the best agreement, the majority, the marked cases, the
position of the threshold and the direction, on random segments of marked, unmarked
and unlabelled cases, with long runs of one mark (exact ties between thresholds), with
few marked cases (no threshold qualifies) and with label bits in the keys.
"""
import numpy as np
from numba import njit

from cartjit._surrogates import _ordered_scan_counts, _ordered_scan_distinct


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
