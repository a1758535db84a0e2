"""The presort: every feature's sorted order of the cases, with ranks where values tie."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cartjit.engine.presort import (PARALLEL_MIN_KEYS, SMALL_RADIX_CASES, presort, release_free_memory, subset_keys)


def _check(X, ps):
    n, p = X.shape
    assert ps.keys.shape == (p, n) and ps.keys.dtype == np.int32
    for f in range(p):
        order = ps.keys[f]
        assert np.array_equal(np.sort(order), np.arange(n))  # a permutation of the cases
        assert np.all(np.diff(X[order, f]) >= 0)             # in increasing order of x_f
        tied = np.unique(X[:, f]).shape[0] < n
        assert (ps.rank_row[f] >= 0) == tied
        if tied:  # dense ranks: equal values share one, in value order
            ranks = ps.ranks[ps.rank_row[f]]
            expected = np.unique(X[:, f], return_inverse=True)[1]
            assert np.array_equal(ranks, expected)


def _reference_presort(X, n_levels):
    """Keys and ranks from first principles: each column ordered by (value, case) with
    -0.0 before +0.0 and every NaN last (a missing level code as code L), the dense rank
    counting every change of value along that order (each NaN a new one)."""
    n, p = X.shape
    keys, rows = [], []
    for f in range(p):
        x = X[:, f]
        if n_levels[f]:
            v = np.where(np.isnan(x), n_levels[f], x)
            keys.append(sorted(range(n), key=lambda i: (v[i], i)))
            rows.append(v.astype(np.int32))
            continue
        by = [(2, 0.0, 0, i) if np.isnan(x[i]) else (1, x[i], 0 if np.signbit(x[i]) else 1, i)
              for i in range(n)]
        order = [b[3] for b in sorted(by)]
        keys.append(order)
        xs = x[order]
        if np.any(xs[1:] == xs[:-1]):
            rank = np.empty(n, dtype=np.int32)
            r = 0
            for j, i in enumerate(order):
                r += j > 0 and not xs[j] == xs[j - 1]
                rank[i] = r
            rows.append(rank)
        else:
            rows.append(None)
    return np.array(keys, dtype=np.int32).reshape(p, n), rows


def _presort_as_reference(X, n_levels):
    """Presort X, check its keys and ranks against :func:`_reference_presort`; return
    the presort and the reference's rank rows."""
    ps = presort(X, n_levels)
    keys, rows = _reference_presort(X, n_levels)
    assert np.array_equal(ps.keys, keys)
    for f, row in enumerate(rows):
        assert (ps.rank_row[f] >= 0) == (row is not None), f
        if row is not None:
            assert np.array_equal(ps.ranks[ps.rank_row[f]], row), f
    return ps, rows


@pytest.mark.parametrize("n", [40, SMALL_RADIX_CASES - 1, 5000])
def test_presort_where_values_differ_only_in_their_low_bits(n):
    """The radix sort sorts the high digits and leaves the rest to an insertion sort,
    which gives up when too many keys differ only in their low digits (values like
    time stamps, sharing their leading bits) and sorts by every digit from where it
    stopped: the same stable order, with the insertion sort finished, abandoned early
    and abandoned late (a sorted prefix, then shuffled values), and ties."""
    rng = np.random.default_rng(n + 1)
    stamps = 1.7e9 + rng.random(n) * 1000.0           # one high part, low bits random
    prefix = np.sort(stamps)
    prefix[n // 2:] = rng.permutation(prefix[n // 2:])  # abandoned late
    ties = 1.7e9 + rng.integers(0, 50, n) * 1e-4        # few values, low bits only
    few = rng.normal(size=n)                            # a few keys to move: finishes
    few[rng.random(n) < 0.01] = 1.0 + 2.0**-40
    X = np.column_stack([stamps, prefix, ties, few, -stamps])
    n_levels = np.zeros(X.shape[1], dtype=np.int64)
    ps, rows = _presort_as_reference(X, n_levels)


@pytest.mark.parametrize("n", [1, 2, 9, 150, SMALL_RADIX_CASES - 1, SMALL_RADIX_CASES, 3000])
def test_presort_order_and_ranks_match_a_plain_sort(n):
    """Both digit widths of the radix sort (fewer and more cases than SMALL_RADIX_CASES)
    give the stable order by value, ties by case; features whose high or low bits never
    change, signed zeros, infinities, NaN and level codes included."""
    rng = np.random.default_rng(n)
    X = np.column_stack([rng.normal(size=n), np.round(rng.normal(size=n) * 2) / 2,
                         rng.integers(-3, 3, n) * 1e300, rng.integers(0, 4, n) + 0.5,
                         rng.integers(0, 7, n).astype(float), -np.abs(rng.normal(size=n))])
    for f in (1, 3, 4):
        X[rng.random(n) < 0.1, f] = np.nan
    X[rng.random(n) < 0.1, 1] = -0.0
    X[rng.random(n) < 0.1, 1] = 0.0
    X[rng.random(n) < 0.05, 1] = -np.inf
    X[rng.random(n) < 0.05, 1] = np.inf
    n_levels = np.array([0, 0, 0, 0, 7, 0], dtype=np.int64)
    ps, rows = _presort_as_reference(X, n_levels)
    assert np.array_equal(ps.codes[ps.rank_row[4]], rows[4])


def test_presort_small_and_tied():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 5, 300).astype(float),
                         np.zeros(300), -np.arange(300.0)])
    _check(X, presort(X))


def test_presort_ties_of_signed_zeros_and_missing_values():
    # tied means two cases share a value: -0.0 equals +0.0; a NaN equals nothing
    rng = np.random.default_rng(1)
    cols = {
        "signed zeros": np.r_[rng.normal(size=50), -0.0, 0.0],
        "one zero of each sign apart": np.r_[rng.normal(size=50) + 5.0, -0.0, 1.0, 0.0],
        "two NaN": np.r_[rng.normal(size=50), np.nan, np.nan],
        "NaN and distinct": np.r_[rng.normal(size=51), np.nan],
        "negative zero only": np.r_[rng.normal(size=51), -0.0],
        "equal negatives": np.r_[rng.normal(size=50), -2.5, -2.5],
    }
    for name, col in cols.items():
        X = col[:, None]
        order = presort(X).keys[0]
        x = X[order, 0]
        expected = bool(np.any(x[1:] == x[:-1]))  # neighbours in sorted order
        assert (presort(X).rank_row[0] >= 0) == expected, name
    assert presort(np.array([[0.0], [-0.0]])).rank_row[0] >= 0
    assert presort(np.array([[np.nan], [np.nan]])).rank_row[0] < 0


def test_presort_large_releases_memory_and_subsets():
    """Large enough that the sorts hand freed memory back (malloc_trim on glibc)."""
    rng = np.random.default_rng(1)
    n = PARALLEL_MIN_KEYS // 2 + 11
    X = np.column_stack([rng.normal(size=n), np.round(rng.normal(size=n), 1)])
    ps = presort(X)
    _check(X, ps)
    keep = rng.random(n) < 0.7
    sub = subset_keys(ps, keep, n_threads=2)
    for f in range(2):  # the kept cases, in the full sample's order
        assert np.array_equal(sub.keys[f], ps.keys[f][keep[ps.keys[f]]])


def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


@pytest.mark.skipif(_libc() is None or not hasattr(_libc(), "malloc_trim"),
                    reason="glibc only: elsewhere release_free_memory does nothing")
def test_release_free_memory_hands_back_freed_blocks():
    """Many small blocks freed together stay with the C library until malloc_trim
    returns them: release_free_memory says it handed memory back, and a second call
    (nothing left to hand back from these blocks) still works."""
    libc = _libc()
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(4000) for _ in range(20_000)]  # 80 MB below the mmap threshold
    fence = libc.malloc(4000)  # keeps free() from trimming the heap's top by itself
    assert all(blocks) and fence
    for b in blocks:
        libc.free(b)
    try:
        assert release_free_memory() is True
    finally:
        libc.free(fence)
    assert isinstance(release_free_memory(), bool)
