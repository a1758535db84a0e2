"""The presort: every feature's sorted order of the cases, computed once per fit.

For every feature m the learning cases are sorted once by x_m and stored as int32 case
indices, one row of a ``(n_features, n_cases)`` *keys* array per feature
(:func:`presort`); features with tied values also get a row of dense ranks by case, so
that the split search can tell equal values apart (see :mod:`cartjit.engine.scans`). The
grower (:mod:`cartjit.engine.grow`) then keeps every node's cases as one position range of
every row, and never sorts again. A cross-validation fold is grown on the same order,
restricted to its cases (:func:`subset_keys`).

This module also owns the engine's array conventions (:func:`as_kernel_array`) and
handing freed memory back to the operating system (:func:`release_free_memory`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .speed import jit
from .speed import chunk_pool, run_chunks

__all__ = ["Presorted", "presort", "subset_keys", "release_free_memory", "as_kernel_array",
           "PARALLEL_MIN_KEYS"]

#: Below this many (case, feature) keys a fit runs on the calling thread only: a thread
#: pool's start-up and hand-offs cost more than they save on small data.
PARALLEL_MIN_KEYS = 1 << 16


def as_kernel_array(arr, dtype):
    """C-contiguous, writable, native-endian ``dtype`` copy-if-needed of ``arr``.

    Kernels are compiled for exactly this layout; a read-only or strided array would
    otherwise compile (and cache) another signature of every kernel it reaches.
    """
    if type(arr) is np.ndarray and arr.dtype == dtype:  # the common case, without copying
        flags = arr.flags
        if flags.c_contiguous and flags.writeable and flags.aligned:
            return arr
    return np.require(arr, dtype=dtype, requirements=("C", "W", "A"))






class Presorted(NamedTuple):
    """Every feature's sorted order of the cases, and ranks where values tie.

    ``keys[m]`` lists cases (int32 rows of X) by increasing x_m. ``rank_row[m]`` is -1
    when x_m has no tied values among the learning cases, else the row of ``ranks``
    (the categorical features' rows first, then the others', each in feature order)
    holding the dense rank of x_m for every case (indexed by case, so the ranks stay
    valid for any subset of the cases and after any partition of ``keys``).

    A categorical feature (``n_levels[m] > 0``, X holding level codes) is sorted the same
    way, so a node's cases come grouped by level; its row of ``ranks`` holds the level
    code of every case (L_m for a missing value, which sorts last), and its row of
    ``codes`` (same row index) the same codes in :data:`CODES_DTYPE`: the subset search
    looks a code up for every case it visits, by case, and the narrower array keeps
    more of those scattered reads in cache (``codes`` has no rows when no feature is
    categorical).
    """

    keys: np.ndarray       # int32 (n_features, n_cases)
    ranks: np.ndarray      # int32 (n_categorical + n_tied_features, n_rows_of_X)
    rank_row: np.ndarray   # int64 (n_features,)
    n_levels: np.ndarray   # int64 (n_features,): L_m levels, 0 for an ordered feature
    codes: np.ndarray      # uint16 (n_categorical_features, n_rows_of_X)


class Radix(NamedTuple):
    """The radix sort's scratch, a row per chunk, and its digits (:func:`_radix_order`)."""

    sk: np.ndarray      # uint64 (n_chunks, n) sortable bits of a feature
    buf_k: np.ndarray   # uint64 (n_chunks, n) the other buffer of the keys
    buf_i: np.ndarray   # int32 (n_chunks, n) ... and of the cases
    counts: np.ndarray  # int64 (n_chunks, n_passes, width) counters of each pass
    bits: int           # bits of a digit
    n_low: int          # low digits left to an insertion sort


#: Type of :attr:`Presorted.codes`: holds every code of a feature of up to
#: ``cartjit._encoding.MAX_LEVELS`` levels, and the missing code.
CODES_DTYPE = np.uint16

#: Bits of one digit of the radix sort: 2,048 counters per pass stay in the first-level
#: cache, and six passes cover the 64 bits of a float64.
RADIX_BITS = 11
RADIX_PASSES = 6
#: Below this many cases the radix sort takes digits of ``SMALL_RADIX_BITS`` bits (eight
#: passes of 256 counters): clearing and summing 2,048 counters per pass would cost
#: more than the pass itself.
SMALL_RADIX_CASES = 2048
SMALL_RADIX_BITS = 8
SMALL_RADIX_PASSES = 8
#: Low digits (33 and 32 of the 64 bits) that the radix sort leaves to an insertion sort
#: (:func:`_radix_order`).
RADIX_LOW = 3
SMALL_RADIX_LOW = 4
#: The sortable image of every NaN: above that of +inf, so missing values sort last.
_NAN_KEY = np.uint64(0xFFF8000000000000)


@jit
def _sortable_bits(X, f, out):
    """Presort, numeric feature: ``out[case]`` = an unsigned integer whose order is the
    order of ``X[case, f]`` (the IEEE-754 bits with the sign bit flipped for positive
    values and every bit flipped for negative ones), every NaN mapped to one key above
    +inf."""
    bits = X.view(np.uint64)
    sign = np.uint64(1) << np.uint64(63)
    for i in range(out.shape[0]):
        if np.isnan(X[i, f]):
            out[i] = _NAN_KEY
        else:
            b = bits[i, f]
            out[i] = ~b if b & sign else b | sign


@jit(inline="always")
def _radix_pass(src_k, src_i, dst_k, dst_i, cnt, shift, digit, n_bins):
    """One stable counting pass on the digit ``(key >> shift) & digit``: the keys and
    cases of ``src`` go to ``dst``, ordered by it (``cnt`` holds its counts; spent)."""
    total = 0
    for b in range(n_bins):
        c = cnt[b]
        cnt[b] = total
        total += c
    for i in range(src_k.shape[0]):
        k = src_k[i]
        d = (k >> shift) & digit
        pos = cnt[d]
        cnt[d] = pos + 1
        dst_k[pos] = k
        dst_i[pos] = src_i[i]


@jit(inline="always")
def _insertion_finish(keys, cases, budget):
    """Finish a nearly sorted run: a stable insertion sort of ``keys`` (with their
    ``cases``) in place. Gives up, leaving a permutation in which equal keys are still
    in their first order, once more than ``budget`` keys were moved; returns whether it
    finished."""
    moved = 0
    for i in range(1, keys.shape[0]):
        k = keys[i]
        if k >= keys[i - 1]:
            continue
        case = cases[i]
        j = i
        while j > 0 and keys[j - 1] > k:
            keys[j] = keys[j - 1]
            cases[j] = cases[j - 1]
            j -= 1
        keys[j] = k
        cases[j] = case
        moved += i - j
        if moved > budget:
            return False
    return True


@jit
def _radix_order(sk, order, buf_k, buf_i, counts, bits, n_passes, n_low):
    """Presort, numeric feature: ``order`` = the cases sorted by their keys ``sk``, equal
    keys in case order (``sk``, ``buf_k`` and ``buf_i`` are overwritten). Returns whether
    the sorted keys ended in ``buf_k`` (else they are in ``sk``).

    A least-significant-digit radix sort over the ``n_passes - n_low`` high digits only,
    then a stable insertion sort over whole keys: keys that differ only below the high
    digits are rare among continuous values (in 10^5 normal draws, ~500 keys move, one
    place each), so the low digits' passes are replaced by one sequential pass. Where they are not rare (more than one move
    per key), every digit's pass runs after all, from the order reached, which keeps
    equal keys in case order; the result is the same. A pass whose digit is the same for
    every case is skipped.

    Parameters
    ----------
    sk : uint64 sortable keys by case (:func:`_sortable_bits`).
    order : int32 output, the cases in increasing order of ``sk``.
    buf_k, buf_i : uint64 and int32 scratch as long as ``sk``.
    counts : int64 scratch of at least (n_passes, 2**bits).
    bits, n_passes : bits of a digit and digits of a key (n_passes * bits >= 64).
    n_low : low digits left to the insertion sort (0: a plain radix sort).
    """
    n = sk.shape[0]
    n_bins = 1 << bits
    digit = np.uint64(n_bins - 1)
    counts[:n_passes, :n_bins] = 0
    for i in range(n):
        k = sk[i]
        for p in range(n_passes):
            counts[p, (k >> np.uint64(p * bits)) & digit] += 1
        order[i] = i
    src_k, src_i, dst_k, dst_i = sk, order, buf_k, buf_i
    in_buffer = False
    first = n_low
    for again in range(2):
        for p in range(first, n_passes):
            cnt = counts[p]
            if again and p >= n_low:  # counted again: the first round spent these
                cnt[:n_bins] = 0
                for i in range(n):
                    cnt[(src_k[i] >> np.uint64(p * bits)) & digit] += 1
            if cnt[(src_k[0] >> np.uint64(p * bits)) & digit] == n:
                continue  # one digit value: the pass would change nothing
            _radix_pass(src_k, src_i, dst_k, dst_i, cnt, np.uint64(p * bits), digit,
                        n_bins)
            src_k, dst_k = dst_k, src_k
            src_i, dst_i = dst_i, src_i
            in_buffer = not in_buffer
        if first == 0 or _insertion_finish(src_k, src_i, n):
            break
        first = 0  # too many keys differ only in their low digits: sort by every digit
    if in_buffer:
        # a loop: ``order[:] = src_i`` would compile Numba's shape check, whose error
        # message (string formatting) costs more than a second to compile
        for i in range(n):
            order[i] = src_i[i]
    return in_buffer


@jit
def _code_order(X, f, n_levels, order, counts, code_of, narrow):
    """Presort, categorical feature: ``order`` = the cases by level code (a counting
    sort, stable: cases of one level in case order), a missing code (NaN) last as code
    ``n_levels``; ``code_of`` and ``narrow`` receive every case's code. X's column is
    read once (a strided read): the placing pass reads the codes just written.

    Parameters
    ----------
    X : float64 (n_cases, n_features); column ``f`` holds level codes.
    n_levels : L_f.
    order : int32 output.
    counts : int64 scratch of at least L_f + 1 entries.
    code_of : int32 (n_cases,) output, the code by case.
    narrow : :data:`CODES_DTYPE` (n_cases,) output, the same codes.
    """
    n = order.shape[0]
    counts[:n_levels + 1] = 0
    for i in range(n):
        v = X[i, f]
        b = n_levels if np.isnan(v) else np.int64(v)
        code_of[i] = b
        narrow[i] = b
        counts[b] += 1
    total = 0
    for b in range(n_levels + 1):
        c = counts[b]
        counts[b] = total
        total += c
    for i in range(n):
        b = code_of[i]
        order[counts[b]] = i
        counts[b] += 1


#: Sortable images of -0.0 and +0.0 (:func:`_sortable_bits`): consecutive integers.
_NEG_ZERO_KEY = np.uint64(0x7FFFFFFFFFFFFFFF)
_POS_ZERO_KEY = np.uint64(0x8000000000000000)


@jit(borrowed=True)
def _has_ties(sorted_keys):
    """Presort, numeric feature: whether two cases share a value, read from the sorted
    sortable keys in one sequential pass: equal keys other than NaN's, or -0.0 next to
    +0.0 (equal values, different bits). The same answer as comparing the values of
    neighbours in sorted order, without reading X case by case."""
    for i in range(1, sorted_keys.shape[0]):
        k = sorted_keys[i]
        prev = sorted_keys[i - 1]
        if (k == prev and k != _NAN_KEY) or (prev == _NEG_ZERO_KEY and k == _POS_ZERO_KEY):
            return True
    return False


@jit
def _sort_features(X, n_levels, keys, tied, radix, ranks, codes, c, n_chunks):
    """Presort, features c, c + n_chunks, ...: ``keys[f]`` = the cases by increasing
    x_f (NaN last), and ``tied[f]`` whether two cases share a value (ordered features);
    the k-th categorical feature's codes go to rows k of ``ranks`` and ``codes``.

    Parameters
    ----------
    X : float64 (n_cases, n_features).
    n_levels : int64 L_f, 0 for an ordered feature.
    keys : int32 (n_features, n_cases) output.
    tied : bool (n_features,) output.
    radix : :class:`Radix`, the radix sort's scratch (this chunk's rows serve), the bits
        of a digit and the low digits left to an insertion sort (:func:`_radix_order`).
    ranks, codes : int32 and :data:`CODES_DTYPE` outputs, a row per categorical feature
        first (more rows may follow).
    """
    sk = radix.sk[c]
    buf_k = radix.buf_k[c]
    buf_i = radix.buf_i[c]
    counts = radix.counts[c]
    bits = radix.bits
    n_low = radix.n_low
    n_passes = -(-64 // bits)
    for f in range(c, keys.shape[0], n_chunks):
        order = keys[f]
        if n_levels[f] > 0:
            k = 0  # the feature's row: the categorical features before it
            for g in range(f):
                k += n_levels[g] > 0
            _code_order(X, f, n_levels[f], order, counts.reshape(-1), ranks[k], codes[k])
            continue
        _sortable_bits(X, f, sk)
        sorted_keys = buf_k if _radix_order(sk, order, buf_k, buf_i, counts, bits,
                                            n_passes, n_low) else sk
        tied[f] = _has_ties(sorted_keys)


@jit
def _dense_ranks(X, keys, tied, rank_row, ranks):
    """Presort, ranks of the tied features: ``ranks[rank_row[f], case]`` = dense rank of
    ``X[case, f]`` for every f with ``tied[f]``.

    Parameters
    ----------
    X : float64 (n_cases, n_features).
    keys : int32 (n_features, n_cases), cases in increasing order of each x_f.
    tied : bool (n_features,).
    rank_row : int64 row of ``ranks`` by feature.
    ranks : int32 output, by case; equal values share a rank.
    """
    for f in range(keys.shape[0]):
        if not tied[f]:
            continue
        order = keys[f]
        out = ranks[rank_row[f]]
        rank = 0
        prev = X[order[0], f]
        for i in range(order.shape[0]):
            case = order[i]
            if X[case, f] != prev:
                rank += 1
                prev = X[case, f]
            out[case] = rank


#: Above this many cases the presort runs on one thread: each thread needs 20 bytes of
#: scratch per case.
PARALLEL_MAX_CASES = 1 << 22


def presort(X, n_levels=None, n_threads=1):
    """Sort every feature once.

    Ordered features are sorted by a radix sort of their float64 bits (stable, several
    times faster than a comparison sort), categorical ones by a counting sort of their
    level codes. ``n_levels`` (int64 by feature, L_m for a categorical feature whose
    column holds level codes, 0 for an ordered one; ``None``: every feature ordered)
    gives every categorical feature a row of ``ranks`` holding its codes, and the same
    row of ``codes``.

    The order of equal values does not matter: a run of equal values is never split.
    Missing values (NaN) sort last, so a node's cases missing a feature always end its
    segment of that feature (partitions keep the order).
    Features are sorted on ``n_threads`` threads (one above ``PARALLEL_MAX_CASES``
    cases or below ``PARALLEL_MIN_KEYS`` keys), each with its scratch allocated here
    once: the kernels allocate nothing.
    """
    X = as_kernel_array(X, np.float64)
    n, p = X.shape
    if n_levels is None or n_levels.shape[0] == 0:
        n_levels = np.zeros(p, dtype=np.int64)
        max_level = 0
    else:
        n_levels = as_kernel_array(n_levels, np.int64)
        max_level = int(n_levels.max()) if p else 0
    if max_level >= np.iinfo(CODES_DTYPE).max:
        raise ValueError(f"n_levels: at most {np.iinfo(CODES_DTYPE).max - 1} levels per "
                         f"feature, got {max_level}")
    categorical = n_levels > 0
    n_categorical = int(np.count_nonzero(categorical))
    keys = np.empty((p, n), dtype=np.int32)
    tied = np.zeros(p, dtype=np.bool_)
    n_chunks = max(1, min(int(n_threads), p))
    if n * p < PARALLEL_MIN_KEYS or n > PARALLEL_MAX_CASES:
        n_chunks = 1
    m = n if n_categorical < p else 0
    if n < SMALL_RADIX_CASES:
        bits, n_passes, n_low = SMALL_RADIX_BITS, SMALL_RADIX_PASSES, SMALL_RADIX_LOW
    else:
        bits, n_passes, n_low = RADIX_BITS, RADIX_PASSES, RADIX_LOW
    # counters: a row per radix pass, or the levels (and missing) of a categorical one
    width = max(1 << bits, -(-(max_level + 1) // n_passes))
    sk = np.empty((n_chunks, m), dtype=np.uint64)
    buf_k = np.empty((n_chunks, m), dtype=np.uint64)
    buf_i = np.empty((n_chunks, m), dtype=np.int32)
    counts = np.empty((n_chunks, n_passes, width), dtype=np.int64)
    # Rows of ranks: the categorical features' first (their codes, written by the sort),
    # then the tied ordered features', each in feature order. Room for every feature:
    # rows no feature takes are never written, so their pages are never touched.
    ranks_room = np.empty((p, n), dtype=np.int32)
    codes = np.empty((n_categorical, n), dtype=CODES_DTYPE)
    if n > 0:
        pool = chunk_pool(n_chunks)
        try:
            run_chunks(pool, n_chunks, _sort_features, X, n_levels, keys, tied,
                       Radix(sk, buf_k, buf_i, counts, bits, n_low), ranks_room, codes)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
    del sk, buf_k, buf_i
    rank_row = np.full(p, -1, dtype=np.int64)
    rank_row[categorical] = np.arange(n_categorical)
    rank_row[tied] = n_categorical + np.arange(int(np.count_nonzero(tied)))
    n_rows = n_categorical + int(np.count_nonzero(tied))
    ranks = ranks_room[:n_rows]
    if n > 0 and n_rows > n_categorical:
        _dense_ranks(X, keys, tied, rank_row, ranks)
    if n_chunks * m * 20 >= TRIM_MIN_BYTES:  # the sorts' scratch, and np.unique's
        release_free_memory()
    return Presorted(keys, ranks, rank_row, n_levels, codes)


#: The presort hands freed memory back (:func:`release_free_memory`) where its scratch
#: took at least this much: below, the trim costs more than the memory is worth.
TRIM_MIN_BYTES = 32 << 20


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
    why the presort's threads allocate nothing). Returns whether memory was handed
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
    pool = chunk_pool(n_chunks)
    try:
        run_chunks(pool, n_chunks, _subset_rows, keys, in_subset, out)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return Presorted(out, presorted.ranks, presorted.rank_row, presorted.n_levels,
                     presorted.codes)
