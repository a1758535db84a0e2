"""The scalar loops of the split search and the partition, against the 16-key blocks and a
plain reference.

The loops run on every key at every depth level: the listing of the positions where the
class changes (:func:`cartjit.engine.scans.list_class_changes`), the lean Gini scan over that
list (:func:`cartjit.engine.scans.best_split_gini_runs`, whose hot loop only looks for the
next candidate in the near-tie band) and the stable partition of the split nodes'
segments (:func:`cartjit.engine.children._partition`), which packs only the continuing child's
cases when the other child is a leaf. Random inputs, and the edge cases: empty ranges,
one class throughout, lengths that are not multiples of 16.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from cartjit.engine.records import Frontier, Splits, Work
from cartjit.engine.children import _partition
from cartjit.engine.speed import step_counters
from cartjit.engine.impurity import GINI
from cartjit.engine.speed import LANES
from cartjit.engine.scans import Segment, Targets, list_class_changes
from test_simd import _both_scans  # the lean Gini scan beside the general one


@njit
def _list(keys, lo, hi, y, mask, simd, cand):
    return list_class_changes(keys, lo, hi, y, mask, simd, cand)


def _naive_changes(cls, lo, hi):
    return [lo] + [i for i in range(lo + 1, hi) if cls[i] != cls[i - 1]] + (
        [hi] if hi > lo else [])


def _keys(rng, n, n_classes, bits, mean_run):
    if n_classes == 1:
        labels = np.zeros(n, np.int64)
    else:
        labels = np.repeat(rng.integers(0, n_classes, n),
                           rng.integers(1, 2 * mean_run, n))[:n]
    return ((rng.permutation(n) << bits) | labels).astype(np.int32), labels


@pytest.mark.parametrize("n_classes, mean_run", [(1, 1), (2, 1), (2, 9), (3, 2), (7, 3)])
def test_class_changes_scalar_blocks_and_naive_agree(n_classes, mean_run):
    rng = np.random.default_rng(10 * n_classes + mean_run)
    bits = max(1, (n_classes - 1).bit_length())
    n = 400
    keys, labels = _keys(rng, n, n_classes, bits, mean_run)
    mask = (1 << bits) - 1
    cases = keys >> bits
    y_by_case = np.empty(n, np.int32)
    y_by_case[cases] = labels
    plain = (keys >> bits).astype(np.int32)  # keys without labels: classes looked up
    cand = np.empty(n + LANES, np.int32)
    for lo in (1, 3, 16, 31):
        for length in list(range(0, 50)) + [63, 64, 65, 127, 129, 250, 368]:
            hi = lo + length
            if hi >= n:
                continue
            expected = _naive_changes(keys & mask, lo, hi)
            for simd in (False, True):
                cand[:] = -1
                m = _list(keys, lo, hi, y_by_case, mask, simd, cand)
                assert list(cand[:m]) == expected, (lo, hi, simd)
            # labels looked up by case (mask 0): the scalar loop only
            expected = _naive_changes(y_by_case[plain], lo, hi)
            m = _list(plain, lo, hi, y_by_case, 0, False, cand)
            assert list(cand[:m]) == expected, (lo, hi)


@pytest.mark.parametrize("pattern", ["runs", "periodic", "mirrored", "one class"])
def test_lean_gini_scan_equals_case_by_case_scan(pattern):
    """The lean scan (candidates where the class changes, near-ties settled outside its
    hot loop) against the general scan visiting every position: the same split, the
    same Δi, exact and near ties included."""
    rng = np.random.default_rng(len(pattern))
    for trial in range(150):
        n = int(rng.integers(1, 300))
        k = int(rng.integers(2, 5))
        bits = max(1, (k - 1).bit_length())
        if pattern == "periodic":  # many exactly tied candidates
            period = int(rng.integers(1, 6))
            labels = (np.arange(n) // period) % k
        elif pattern == "mirrored":
            half = rng.integers(0, k, max(1, n // 2))
            labels = np.concatenate([half, half[::-1]])
        elif pattern == "one class":
            labels = np.full(n, int(rng.integers(0, k)))
        else:
            labels = np.repeat(rng.integers(0, k, n), rng.integers(1, 6, n))[:n]
        n = labels.shape[0]
        keys = ((np.arange(n) << bits) | labels).astype(np.int32)
        total = np.bincount(labels, minlength=k).astype(np.float64)
        tg = Targets(labels.astype(np.int32), np.empty(0), np.empty(0), True, True,
                     np.full(k, 1.0 / n), GINI, bits, (1 << bits) - 1)
        min_leaf = int(rng.integers(1, 4))
        for simd in (False, True):
            seg = Segment(keys, keys[:0], 0, n)
            d1, p1, d2, p2 = _both_scans(seg, tg, total, min_leaf, simd, np.zeros(3 * k),
                                         np.empty(n + LANES, np.int32), False)
            assert p1 == p2, (trial, simd)
            assert d1 == d2 or (np.isinf(d1) and np.isinf(d2)), (trial, simd, d1, d2)


def _stable(seg, side):
    return np.concatenate([seg[side], seg[~side]])


@pytest.mark.parametrize("shift", [0, 2])
def test_partition_packs_the_children_that_split_again(shift):
    """Both children: the whole segment, left cases then right ones, in order; one
    child: that child's range only (the leaf's range is never read again)."""
    rng = np.random.default_rng(20 + shift)
    n, p = 500, 3
    bounds = [0, 2, 3, 20, 36, 38, 80, 97, 113, 200, 202, 333, 500]
    starts = np.array(bounds[:-1], np.int64)
    ends = np.array(bounds[1:], np.int64)
    # every row holds a node's cases in its segment, each row in its own order
    cases = rng.permutation(n)
    labels = rng.integers(0, 1 << shift, n)
    keys = np.empty((p, n), np.int32)
    for f in range(p):
        for s, e in zip(starts, ends):
            seg = cases[s:e][rng.permutation(e - s)]
            keys[f, s:e] = (seg << shift) | labels[seg]
    goes_left = np.zeros(n + 3, np.uint8)
    goes_left[:n] = rng.random(n) < 0.45
    goes_left[n:] = 1
    m = starts.shape[0]
    split_feat = np.arange(m, dtype=np.int64) % p
    # the split feature's segment comes split already: the left cases first
    for j in range(m):
        seg = keys[split_feat[j], starts[j]:ends[j]]
        keys[split_feat[j], starts[j]:ends[j]] = _stable(seg, goes_left[seg >> shift] == 1)
    n_left = np.array([int(goes_left[keys[0, s:e] >> shift].sum()) for s, e in
                       zip(starts, ends)], np.int64)
    pos = starts + n_left
    index = np.arange(m, dtype=np.int64)
    for sides in (np.full(m, 3, np.uint8), np.full(m, 1, np.uint8),
                  np.full(m, 2, np.uint8), rng.integers(1, 4, m).astype(np.uint8)):
        for simd in (False, True):
            out = keys.copy()
            work = Work(np.zeros((1, 16)), np.empty((1, n + LANES), np.int32), goes_left,
                        np.empty(0, np.int32), np.zeros((1, 0)), np.zeros((1, 0), np.int64),
                        np.zeros((1, 3)))
            zeros = np.zeros(m, np.int64)
            fr = Frontier(index, starts, ends, np.zeros(m), np.zeros(m))
            splits = Splits(split_feat, pos, zeros, ends, np.zeros(m), np.zeros(m), zeros)
            _partition(out, shift, index, sides, splits, fr, work, simd, step_counters(1), 0,
                       1)
            for j in range(m):
                s, e, q = starts[j], ends[j], pos[j]
                for f in range(p):
                    if f == split_feat[j]:
                        assert np.array_equal(out[f, s:e], keys[f, s:e])
                        continue
                    seg = keys[f, s:e]
                    expected = _stable(seg, goes_left[seg >> shift] == 1)
                    if sides[j] & 1:
                        assert np.array_equal(out[f, s:q], expected[:q - s]), (j, f, simd)
                    if sides[j] & 2:
                        assert np.array_equal(out[f, q:e], expected[q - s:]), (j, f, simd)
            # outside the segments nothing moves
            assert np.array_equal(out[:, ends[-1]:], keys[:, ends[-1]:])
