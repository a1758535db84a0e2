"""The presort: every feature's sorted order of the cases, computed once per fit.

For every feature m the learning cases are sorted once by x_m and stored as int32 case
indices, one row of a ``(n_features, n_cases)`` *keys* array per feature
(:func:`presort`); features with tied values also get a row of dense ranks by case, so
that the split search can tell equal values apart (see :mod:`cartjit._splitter`). The
grower (:mod:`cartjit._builder`) then keeps every node's cases as one position range of
every row, and never sorts again. A cross-validation fold is grown on the same order,
restricted to its cases (:func:`subset_keys`).

This module also owns the engine's array conventions (:func:`as_kernel_array`) and
handing freed memory back to the operating system (:func:`release_free_memory`).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ._config import jit

__all__ = ["Presorted", "presort", "subset_keys", "release_free_memory", "as_kernel_array",
           "run_chunks", "PARALLEL_MIN_KEYS"]

#: Below this many (case, feature) keys a fit runs on the calling thread only: a thread
#: pool's start-up and hand-offs cost more than they save on small data.
PARALLEL_MIN_KEYS = 1 << 16


def as_kernel_array(arr, dtype):
    """C-contiguous, writable, native-endian ``dtype`` copy-if-needed of ``arr``.

    Kernels are compiled for exactly this layout; a read-only or strided array would
    otherwise compile (and cache) another signature of every kernel it reaches.
    """
    return np.require(arr, dtype=dtype, requirements=("C", "W", "A"))


def run_chunks(pool, n_chunks, fn, *args):
    """Run ``fn(*args, c, n_chunks)`` for every chunk c, in the pool when there is one."""
    if pool is None or n_chunks <= 1:
        for c in range(n_chunks):
            fn(*args, c, n_chunks)
        return
    futures = [pool.submit(fn, *args, c, n_chunks) for c in range(n_chunks)]
    for fut in futures:
        fut.result()


class Presorted(NamedTuple):
    """Every feature's sorted order of the cases, and ranks where values tie.

    ``keys[m]`` lists cases (int32 rows of X) by increasing x_m. ``rank_row[m]`` is -1
    when x_m has no tied values among the learning cases, else the row of ``ranks``
    holding the dense rank of x_m for every case (indexed by case, so the ranks stay
    valid for any subset of the cases and after any partition of ``keys``).

    A categorical feature (``n_levels[m] > 0``, X holding level codes) is sorted the same
    way, so a node's cases come grouped by level; its row of ``ranks`` holds the level
    code of every case (L_m for a missing value, which sorts last).
    """

    keys: np.ndarray       # int32 (n_features, n_cases)
    ranks: np.ndarray      # int32 (n_tied_features, n_rows_of_X)
    rank_row: np.ndarray   # int64 (n_features,)
    n_levels: np.ndarray   # int64 (n_features,): L_m levels, 0 for an ordered feature


@jit
def _sorted_ties(col, order):
    """Presort, tie check: whether the sorted values ``col[order]`` contain a tie.

    Parameters
    ----------
    col : float64 values of one feature, by case.
    order : int64 cases in increasing order of ``col``.
    """
    for i in range(1, order.shape[0]):
        if col[order[i]] == col[order[i - 1]]:
            return True
    return False


@jit
def _dense_ranks(col, order, out):
    """Presort, ranks of a tied feature: ``out[case]`` = dense rank of ``col[case]``.

    Parameters
    ----------
    col : float64 values of one feature, by case.
    order : int32 cases in increasing order of ``col``.
    out : int32 output, by case; equal values share a rank.
    """
    rank = 0
    prev = col[order[0]]
    for i in range(order.shape[0]):
        case = order[i]
        if col[case] != prev:
            rank += 1
            prev = col[case]
        out[case] = rank


def presort(X, n_levels=None):
    """Sort every feature once (NumPy ``argsort``), on the calling thread.

    ``n_levels`` (int64 by feature, L_m for a categorical feature whose column holds
    level codes, 0 for an ordered one; ``None``: every feature ordered) gives every
    categorical feature a row of ``ranks`` holding its codes.

    The order of equal values does not matter: a run of equal values is never split.
    Missing values (NaN) sort last, so a node's cases missing a feature always end its
    segment of that feature (partitions keep the order).
    The sorts run one after the other through one column buffer: sorting on several
    threads saved half a second at 10^6 cases but left each thread's temporary columns
    (tens of MiB) with the C library's per-thread arenas, which do not give memory back
    (see :func:`release_free_memory`); the fit's peak memory matters more.
    """
    n, p = X.shape
    if n_levels is None or n_levels.shape[0] == 0:
        n_levels = np.zeros(p, dtype=np.int64)
    n_levels = as_kernel_array(n_levels, np.int64)
    categorical = n_levels > 0
    keys = np.empty((p, n), dtype=np.int32)
    tied = np.zeros(p, dtype=bool)
    col = np.empty(n, dtype=X.dtype)
    has_missing = bool(np.isnan(X).any()) if categorical.any() else False
    for f in range(p):
        np.copyto(col, X[:, f])
        if categorical[f]:
            # level codes as small integers: NumPy's stable sort of 8- and 16-bit
            # integers is a radix sort, several times faster than sorting floats; a
            # missing code sorts last as code L
            small = np.uint8 if n_levels[f] < 256 else np.uint16
            codes = np.where(np.isnan(col), n_levels[f], col) if has_missing else col
            order = np.argsort(codes.astype(small), kind="stable")
        else:
            order = np.argsort(col)  # NaN sorts last
            tied[f] = _sorted_ties(col, order)
        keys[f] = order
        del order
    with_row = tied | categorical
    rank_row = np.full(p, -1, dtype=np.int64)
    rank_row[with_row] = np.arange(int(with_row.sum()))
    ranks = np.empty((int(with_row.sum()), n), dtype=np.int32)
    for f in np.flatnonzero(tied):
        np.copyto(col, X[:, f])
        _dense_ranks(col, keys[f], ranks[rank_row[f]])
    for f in np.flatnonzero(categorical):
        # the codes, exact in float64 and in int32; a missing code becomes L
        codes = X[:, f]
        ranks[rank_row[f]] = np.where(np.isnan(codes), n_levels[f], codes) if has_missing \
            else codes
    del col
    if n * p >= PARALLEL_MIN_KEYS:
        release_free_memory()
    return Presorted(keys, ranks, rank_row, n_levels)


def _load_malloc_trim():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_free_memory():
    """Hand memory that has been freed back to the operating system (glibc only).

    Checking the labels (``np.unique``) and sorting the features free tens of MiB of
    temporaries at 10^6 cases, which the C library keeps for reuse instead of returning
    them; the growth that follows would add its own memory on top. ``malloc_trim(0)``
    returns them (it cannot do so for blocks freed in other threads' arenas, which is
    why :func:`presort` does not sort on threads). Returns whether memory was handed
    back: ``False`` where there is no ``malloc_trim`` or it found nothing to release.
    """
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(0))


@jit
def _subset_rows(keys, in_subset, out, c, n_chunks):
    """Fold keys: copy the cases with ``in_subset[case]`` of the rows of chunk c.

    Parameters
    ----------
    keys : int32 (n_features, n_cases) presorted keys of the full sample.
    in_subset : uint8 mark by case.
    out : int32 (n_features, n_kept) output, the kept cases in the same order.
    c, n_chunks : this chunk and the number of chunks (rows c, c + n_chunks, ...).
    """
    for f in range(c, keys.shape[0], n_chunks):
        row = keys[f]
        o = out[f]
        k = 0
        for i in range(row.shape[0]):
            if in_subset[row[i]]:
                o[k] = row[i]
                k += 1


def subset_keys(presorted, in_subset, n_threads=1):
    """The presorted order of the cases with ``in_subset[case]`` (order kept).

    This is how a cross-validation fold's tree is grown without sorting again: one pass
    per feature over the full sample's sorted order. Ranks are shared, not copied.
    """
    in_subset = np.ascontiguousarray(in_subset, dtype=np.uint8)
    n_sub = int(np.count_nonzero(in_subset))
    keys = presorted.keys
    out = np.empty((keys.shape[0], n_sub), dtype=np.int32)
    n_chunks = max(1, min(n_threads, keys.shape[0]))
    pool = ThreadPoolExecutor(n_chunks) if n_chunks > 1 else None
    try:
        run_chunks(pool, n_chunks, _subset_rows, keys, in_subset, out)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return Presorted(out, presorted.ranks, presorted.rank_row, presorted.n_levels)
