"""Growing T_max: presort once, then split level by level without ever sorting again.

Presort (:func:`presort`): for every feature m the learning cases are sorted once by x_m
and stored as int32 case indices, one row of a ``(n_features, n_cases)`` *keys* array
per feature; features with tied values also get a row of dense ranks by case, so that
the scan can tell equal values apart (see :mod:`cartjit._splitter`). A node owns the
same position range ``[start, end)`` of every row, holding its cases in increasing order
of that row's feature.

Growing (:func:`grow`) proceeds one depth level at a time over the *frontier*, the nodes
of the current depth that may still split:

1. :func:`_search` — every (node, feature) pair of the frontier is scanned
   independently for its best split;
2. :func:`_choose` — per node, the best feature is chosen in feature order with the tie
   tolerance, the stopping rules of SPEC §2 decide between split and leaf, the split is
   recorded and its cases are marked left or right;
3. :func:`_children` — the children are written to the flat arrays (ids in
   breadth-first order, so children follow parents and ``right == left + 1``) with
   their class counts or moments (read from the split feature's segment, which is
   already split at the split position); those that may split form the next frontier;
4. :func:`_partition` — for the nodes with a child in the next frontier, every other
   feature's segment is *stably partitioned* into the cases going left and right, so
   every child segment is again sorted. Splits into two leaves skip this step.

Steps 1, 3 and 4 are cut into ``n_threads`` interleaved chunks of independent work,
each with its own scratch buffer, run by a thread pool: the kernels are compiled with
``nogil=True``. Serial kernels driven from Python compile several times faster than one
``parallel=True`` grower (a cold start is a cost users pay, STYLE 7), and a few kernel
calls per level cost microseconds next to the level's work. Steps 1 and 2 run on at
most ``SEARCH_BATCH`` frontier nodes at a time. The node tables grow in place by a
quarter when full. The result never depends on the number of threads.

For classification the keys carry the class labels (``case << shift | class``, see
:func:`grow`), so ``key >> shift`` is the case wherever a row of X, a weight or a mark
is looked up.

The same kernels grow classification trees (``criterion`` < ``SQUARED_ERROR``, labels in
``y_class``) and regression trees (``y_reg``), so one compiled signature serves both.
Case indices refer to rows of the full arrays ``X``, ``y_*`` and ``w``; a subset of cases
(a cross-validation fold) is grown by passing only its keys (:func:`subset_keys`).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ._config import jit
from ._validation import as_kernel_array
from ._criteria import ENTROPY, GINI, SQUARED_ERROR, impurity_from_counts, tie_tolerance
from . import _config
from ._simd import LANES, compress_partition
from ._splitter import (best_split_classification, best_split_gini_runs,
                        best_split_regression, class_counts, equal_factors,
                        threshold_between)

__all__ = ["Presorted", "presort", "subset_keys", "grow", "label_bits", "release_free_memory",
           "I_FEATURE", "I_LEFT", "I_RIGHT", "I_PARENT",
           "I_DEPTH", "I_N", "F_THRESHOLD", "F_WEIGHT", "F_IMPURITY", "F_IMPROVEMENT"]

#: Below this many (case, feature) keys a fit runs on the calling thread only: a thread
#: pool's start-up and hand-offs cost more than they save on small data.
PARALLEL_MIN_KEYS = 1 << 16

#: Frontier nodes searched at once: bounds the per-(node, feature) result arrays
#: (16 bytes each) of the widest levels.
SEARCH_BATCH = 4096

# Columns of the integer and float node tables returned by grow().
I_FEATURE, I_LEFT, I_RIGHT, I_PARENT, I_DEPTH, I_N = 0, 1, 2, 3, 4, 5
F_THRESHOLD, F_WEIGHT, F_IMPURITY, F_IMPROVEMENT = 0, 1, 2, 3
_N_INT = 6
_N_FLOAT = 4


def _run_chunks(pool, n_chunks, fn, *args):
    """Run ``fn(*args, c, n_chunks)`` for every chunk c, in the pool when there is one."""
    if pool is None or n_chunks <= 1:
        for c in range(n_chunks):
            fn(*args, c, n_chunks)
        return
    futures = [pool.submit(fn, *args, c, n_chunks) for c in range(n_chunks)]
    for fut in futures:
        fut.result()


# --------------------------------------------------------------------------- presort

class Presorted(NamedTuple):
    """Every feature's sorted order of the cases, and ranks where values tie.

    ``keys[m]`` lists cases (int32 rows of X) by increasing x_m. ``rank_row[m]`` is -1
    when x_m has no tied values among the learning cases, else the row of ``ranks``
    holding the dense rank of x_m for every case (indexed by case, so the ranks stay
    valid for any subset of the cases and after any partition of ``keys``).
    """

    keys: np.ndarray       # int32 (n_features, n_cases)
    ranks: np.ndarray      # int32 (n_tied_features, n_rows_of_X)
    rank_row: np.ndarray   # int64 (n_features,)


@jit
def _sorted_ties(col, order):
    """Whether the sorted values ``col[order]`` contain a tie."""
    for i in range(1, order.shape[0]):
        if col[order[i]] == col[order[i - 1]]:
            return True
    return False


@jit
def _dense_ranks(col, order, out):
    """``out[case]`` = dense rank of ``col[case]`` (equal values share a rank)."""
    rank = 0
    prev = col[order[0]]
    for i in range(order.shape[0]):
        case = order[i]
        if col[case] != prev:
            rank += 1
            prev = col[case]
        out[case] = rank


def presort(X):
    """Sort every feature once (NumPy ``argsort``), on the calling thread.

    The order of equal values does not matter: a run of equal values is never split.
    The sorts run one after the other through one column buffer: sorting on several
    threads saved half a second at 10^6 cases but left each thread's temporary columns
    (tens of MiB) with the C library's per-thread arenas, which do not give memory back
    (see :func:`release_free_memory`); the fit's peak memory matters more.
    """
    n, p = X.shape
    keys = np.empty((p, n), dtype=np.int32)
    tied = np.zeros(p, dtype=bool)
    col = np.empty(n, dtype=X.dtype)
    for f in range(p):
        np.copyto(col, X[:, f])
        order = np.argsort(col)
        keys[f] = order
        tied[f] = _sorted_ties(col, order)
        del order
    rank_row = np.full(p, -1, dtype=np.int64)
    rank_row[tied] = np.arange(int(tied.sum()))
    ranks = np.empty((int(tied.sum()), n), dtype=np.int32)
    for f in np.flatnonzero(tied):
        np.copyto(col, X[:, f])
        _dense_ranks(col, keys[f], ranks[rank_row[f]])
    del col
    if n * p >= PARALLEL_MIN_KEYS:
        release_free_memory()
    return Presorted(keys, ranks, rank_row)


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
    why :func:`presort` does not sort on threads). Elsewhere this does nothing.
    """
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@jit
def _subset_rows(keys, in_subset, out, c, n_chunks):
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
        _run_chunks(pool, n_chunks, _subset_rows, keys, in_subset, out)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return Presorted(out, presorted.ranks, presorted.rank_row)


# --------------------------------------------------------------------------- node statistics

@jit
def _class_node_stats(row, start, end, y, w, unit_weights, shift, mask, counts):
    """Weighted class counts N_j(t) of a segment; returns how many classes occur."""
    class_counts(row, start, end, y, w, unit_weights, shift, mask, counts)
    present = 0
    for j in range(counts.shape[0]):
        if counts[j] > 0.0:
            present += 1
    return present


@jit
def _reg_node_stats(row, start, end, y, w, unit_weights):
    """(W, ȳ, Σ w (y - ȳ), weighted variance, all y equal) of a segment."""
    w_sum = 0.0
    s = 0.0
    first = y[row[start]]
    constant = True
    for i in range(start, end):
        case = row[i]
        wi = 1.0 if unit_weights else w[case]
        w_sum += wi
        s += wi * y[case]
        if y[case] != first:
            constant = False
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    for i in range(start, end):
        case = row[i]
        wi = 1.0 if unit_weights else w[case]
        z = y[case] - mean
        s_c += wi * z
        ss_c += wi * z * z
    var = (ss_c - s_c * s_c / w_sum) / w_sum
    if var < 0.0 or constant:
        var = 0.0
    return w_sum, mean, s_c, var, constant


@jit
def _node_stats(row, start, end, y_class, y_reg, w, unit_weights, shift, mask, factor,
                criterion, counts):
    """Statistics of the node holding ``row[start:end]``.

    Returns ``(weight, impurity, mean, centred sum, may split by purity)``; for
    classification ``counts`` receives N_j(t), for regression ``counts[0]`` the mean.
    """
    if criterion != SQUARED_ERROR:
        present = _class_node_stats(row, start, end, y_class, w, unit_weights, shift, mask,
                                    counts)
        return (counts.sum(), impurity_from_counts(counts, factor, criterion), 0.0, 0.0,
                present > 1)
    w_sum, mean, s_c, var, constant = _reg_node_stats(row, start, end, y_reg, w, unit_weights)
    counts[0] = mean
    return w_sum, var, mean, s_c, not constant


# --------------------------------------------------------------------------- level steps

@jit
def _search(keys, ranks, rank_row, no_ranks, f_node, f_start, f_end, f_mean, f_sum, fnode,
            value, y_class, y_reg, w, unit_weights, exact_sums, shift, mask, factor,
            criterion, min_samples_leaf, simd, scratch, buffers, pair_delta, pair_pos, c,
            n_chunks):
    """Step 1: the best split of every (frontier node, feature) pair in chunk c.

    Gini and entropy scan features without ties by runs of one class (see
    :func:`best_split_classification`, with this chunk's row of ``buffers`` for the
    candidates); twoing, and features with ties, case by case. The common case (Gini,
    unit weights, one factor, labels in the keys, no ties) runs
    :func:`best_split_gini_runs`, every other pair the general function.
    """
    p = keys.shape[0]
    n_pairs = f_node.shape[0] * p
    n_classes = value.shape[1]
    runs_criterion = criterion == GINI or criterion == ENTROPY
    lean_ok = criterion == GINI and unit_weights and mask != 0
    left = scratch[c, :n_classes]
    best_left = scratch[c, n_classes:2 * n_classes]
    cand = buffers[c]
    for k in range(c, n_pairs, n_chunks):
        j = k // p
        f = k - j * p
        node = f_node[j]
        imp = fnode[node, F_IMPURITY]
        if criterion != SQUARED_ERROR:
            total = value[node]
            if lean_ok and rank_row[f] < 0 and equal_factors(total, factor):
                d, pos = best_split_gini_runs(
                    keys[f], f_start[j], f_end[j], min_samples_leaf, total, factor,
                    tie_tolerance(imp), y_class, mask, simd, left, best_left, cand)
                pair_delta[k] = d
                pair_pos[k] = pos
                continue
            rk = ranks[rank_row[f]] if rank_row[f] >= 0 else no_ranks
            d, pos = best_split_classification(
                keys[f], rk, f_start[j], f_end[j], y_class, w, unit_weights, exact_sums,
                shift, mask, total, factor, criterion, imp, tie_tolerance(imp),
                min_samples_leaf, runs_criterion and rank_row[f] < 0, simd, scratch[c], cand)
        else:
            rk = ranks[rank_row[f]] if rank_row[f] >= 0 else no_ranks
            d, pos = best_split_regression(
                keys[f], rk, f_start[j], f_end[j], y_reg, w, unit_weights, f_mean[j],
                fnode[node, F_WEIGHT], f_sum[j], imp, tie_tolerance(imp), min_samples_leaf)
        pair_delta[k] = d
        pair_pos[k] = pos


@jit
def _choose(X, keys, shift, f_node, f_start, f_end, inode, fnode, value, factor,
            criterion, q_root, min_impurity_decrease, pair_delta, pair_pos, n_nodes,
            goes_left, split_feat, split_pos, child_base):
    """Step 2: choose each frontier node's split, record it, mark its cases; count splits."""
    p = keys.shape[0]
    n_classes = value.shape[1]
    n_split = 0
    for j in range(f_node.shape[0]):
        split_feat[j] = -1
        node = f_node[j]
        imp = fnode[node, F_IMPURITY]
        tol = tie_tolerance(imp)
        best = -np.inf
        bf = -1
        for f in range(p):
            k = j * p + f
            if pair_pos[k] >= 0 and pair_delta[k] > best + tol:
                best = pair_delta[k]
                bf = f
        if bf < 0 or not best > tol:
            continue
        if criterion != SQUARED_ERROR:
            q_t = 0.0
            for cl in range(n_classes):
                q_t += factor[cl] * value[node, cl]
            p_t = q_t / q_root
        else:
            p_t = fnode[node, F_WEIGHT] / q_root
        # p(t) Δi equal to the threshold up to the tie tolerance passes (SPEC §2 ties).
        if p_t * (best + tol) < min_impurity_decrease:
            continue
        pos = pair_pos[j * p + bf]
        split_feat[j] = bf
        split_pos[j] = pos
        child_base[j] = n_nodes + 2 * n_split
        n_split += 1
        row = keys[bf]
        inode[node, I_FEATURE] = bf
        inode[node, I_LEFT] = child_base[j]
        inode[node, I_RIGHT] = child_base[j] + 1
        fnode[node, F_IMPROVEMENT] = best
        fnode[node, F_THRESHOLD] = threshold_between(X[row[pos - 1] >> shift, bf],
                                                     X[row[pos] >> shift, bf])
        for i in range(f_start[j], f_end[j]):
            goes_left[row[i] >> shift] = 1 if i < pos else 0
    return n_split


@jit
def _partition(keys, shift, sp_index, split_feat, f_start, f_end, goes_left, simd, buffers, c,
               n_chunks):
    """Step 3: stable partition of the split nodes' segments, every non-split feature.

    With ``simd``, blocks of 16 keys are split at once
    (:func:`cartjit._simd.compress_partition`; ``goes_left`` is padded for it).
    """
    p = keys.shape[0]
    buf = buffers[c]
    n_part = sp_index.shape[0] * p
    for k in range(c, n_part, n_chunks):
        t = k // p
        f = k - t * p
        j = sp_index[t]
        if f == split_feat[j]:
            continue
        row = keys[f]
        wl = f_start[j]
        wr = 0
        i0 = f_start[j]
        end = f_end[j]
        if simd:
            while i0 + LANES <= end:
                n_left = compress_partition(row, i0, shift, goes_left, buf, wl, wr)
                wl += n_left
                wr += LANES - n_left
                i0 += LANES
        # Branch-free: the side is a coin flip the CPU cannot predict, so every key is
        # written to both places and only the matching write pointer advances
        # (wl <= i, so the in-place write never overtakes the read).
        for i in range(i0, end):
            key = row[i]
            g = np.int64(goes_left[key >> shift])
            row[wl] = key
            buf[wr] = key
            wl += g
            wr += 1 - g
        for i in range(wr):
            row[wl + i] = buf[i]


@jit
def _children(keys, sp_index, f_node, f_start, f_end, split_feat, split_pos, child_base,
              inode, fnode, value, y_class, y_reg, w, unit_weights, shift, mask, factor,
              criterion, max_depth, min_samples_split, min_samples_leaf, c_start, c_end, c_mean,
              c_sum, c_ok, c, n_chunks):
    """Step 4: write the children of the split nodes and decide which may split."""
    for t in range(c, 2 * sp_index.shape[0], n_chunks):
        j = sp_index[t // 2]
        node = f_node[j]
        is_left = t % 2 == 0
        cid = child_base[j] + (0 if is_left else 1)
        s = f_start[j] if is_left else split_pos[j]
        e = split_pos[j] if is_left else f_end[j]
        depth = inode[node, I_DEPTH] + 1
        inode[cid, I_FEATURE] = -1
        inode[cid, I_LEFT] = -1
        inode[cid, I_RIGHT] = -1
        inode[cid, I_PARENT] = node
        inode[cid, I_DEPTH] = depth
        inode[cid, I_N] = e - s
        fnode[cid, F_THRESHOLD] = np.nan
        fnode[cid, F_IMPROVEMENT] = 0.0
        weight, imp, mean, s_c, mixed = _node_stats(
            keys[split_feat[j]], s, e, y_class, y_reg, w, unit_weights, shift, mask, factor,
            criterion, value[cid])
        fnode[cid, F_WEIGHT] = weight
        fnode[cid, F_IMPURITY] = imp
        c_start[t] = s
        c_end[t] = e
        c_mean[t] = mean
        c_sum[t] = s_c
        ok = (mixed and e - s >= min_samples_split and e - s >= 2 * min_samples_leaf
              and (max_depth < 0 or depth < max_depth))
        c_ok[t] = 1 if ok else 0


@jit
def _pack_labels(keys, y, shift, c, n_chunks):
    """Replace every key (a case) by ``case << shift | y[case]``, features of chunk c."""
    for f in range(c, keys.shape[0], n_chunks):
        row = keys[f]
        for i in range(row.shape[0]):
            row[i] = (row[i] << shift) | y[row[i]]


@jit
def _root(keys, inode, fnode, value, y_class, y_reg, w, unit_weights, shift, mask, factor,
          criterion):
    """Write the root node; returns (Q(root) or W(root), mean, centred sum, may split)."""
    n = keys.shape[1]
    inode[0, I_FEATURE] = -1
    inode[0, I_LEFT] = -1
    inode[0, I_RIGHT] = -1
    inode[0, I_PARENT] = -1
    inode[0, I_DEPTH] = 0
    inode[0, I_N] = n
    fnode[0, F_THRESHOLD] = np.nan
    fnode[0, F_IMPROVEMENT] = 0.0
    weight, imp, mean, s_c, mixed = _node_stats(keys[0], np.int64(0), n, y_class, y_reg, w,
                                                unit_weights, shift, mask, factor, criterion,
                                                value[0])
    fnode[0, F_WEIGHT] = weight
    fnode[0, F_IMPURITY] = imp
    q_root = weight
    if criterion != SQUARED_ERROR:
        q_root = 0.0
        for j in range(value.shape[1]):
            q_root += factor[j] * value[0, j]
    return q_root, mean, s_c, mixed


# --------------------------------------------------------------------------- driver

def _grow_tables(inode, fnode, value, needed):
    """Make room for ``needed`` rows in the node tables, in place.

    ``ndarray.resize`` reallocates (a large block is remapped by the C library, not
    copied), so old and new tables never coexist; growing by a quarter bounds the
    over-allocation. No view of the tables may be alive here (none is: the kernels'
    views end with each call).
    """
    cap = inode.shape[0]
    if needed > cap:
        new_cap = max(needed, cap + cap // 4)
        for arr in (inode, fnode, value):
            arr.resize((new_cap, arr.shape[1]), refcheck=False)


#: Pack class labels into the keys when they fit (tests switch it off to cover the
#: look-up path, which serves too many classes for the number of rows).
PACK_LABELS = True


def label_bits(n_classes, n_rows):
    """Bits for the class label in a key; 0 when labels are not packed (see :func:`grow`)."""
    if n_classes <= 0 or not PACK_LABELS:
        return 0
    bits = max(1, int(n_classes - 1).bit_length())
    return bits if n_rows <= (1 << (31 - bits)) else 0


def grow(X, presorted, y_class, y_reg, w, unit_weights, factor, n_classes, criterion,
         max_depth, min_samples_split, min_samples_leaf, min_impurity_decrease,
         n_threads=1):
    """Grow the tree on the cases in ``keys`` (see the module docstring).

    Returns ``(inode, fnode, value)`` (views into over-allocated tables): an int32 table
    with columns feature, left, right, parent, depth, n_node_samples; a float64 table
    with columns threshold, weighted n, impurity, impurity decrease Δi of the node's
    split (0 at leaves); and the node values (weighted class counts, or the mean for
    regression). ``max_depth`` < 0 means no limit. ``presorted.keys`` is consumed:
    for classification each key first becomes ``case << shift | class``
    (:func:`label_bits`, when the row count leaves room), so that the scans read the
    labels in sorted order instead of looking them up by case; then the keys are
    partitioned in place.
    """
    keys, ranks, rank_row = presorted
    no_ranks = np.empty(0, dtype=np.int32)
    p, n = keys.shape
    is_class = criterion != SQUARED_ERROR
    n_val = n_classes if is_class else 1
    n_threads = max(1, int(n_threads))
    if n * p < PARALLEL_MIN_KEYS:
        n_threads = 1
    y_class = as_kernel_array(y_class, np.int32)
    y_reg = as_kernel_array(y_reg, np.float64)
    factor = as_kernel_array(factor, np.float64)
    w = as_kernel_array(w, np.float64)
    X = as_kernel_array(X, np.float64)

    cap = 64
    inode = np.zeros((cap, _N_INT), dtype=np.int32)  # ids, depths, counts < 2**31
    fnode = np.zeros((cap, _N_FLOAT), dtype=np.float64)
    value = np.zeros((cap, n_val), dtype=np.float64)
    # Per-thread scratch rows (running class counts, written at every scan step) are
    # padded to whole 128-byte blocks so two threads never write the same cache line.
    row = -(-3 * max(n_classes, 1) // 16) * 16
    scratch = np.zeros((n_threads, row), dtype=np.float64)
    # Integer weights (with totals below 2**53) make running class counts exact.
    exact_sums = bool(unit_weights or (np.all(w == np.floor(w)) and w.sum() < 2.0**53))
    # Padded by 3 bytes: the 16-key partition reads each mark as a 4-byte word.
    goes_left = np.zeros(X.shape[0] + 3, dtype=np.uint8)
    simd = bool(_config.SIMD)
    shift = label_bits(n_classes if is_class else 0, X.shape[0])
    mask = (1 << shift) - 1

    pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
    try:
        if shift:
            _run_chunks(pool, min(n_threads, p), _pack_labels, keys, y_class, shift)
        q_root, mean0, s0, mixed = _root(keys, inode, fnode, value, y_class, y_reg, w,
                                         unit_weights, shift, mask, factor, criterion)
        splittable = (mixed and n >= min_samples_split and n >= 2 * min_samples_leaf
                      and max_depth != 0)
        n_nodes = 1
        f_node = np.zeros(1 if splittable else 0, dtype=np.int64)
        f_start = np.zeros(1, dtype=np.int64)
        f_end = np.full(1, n, dtype=np.int64)
        f_mean = np.full(1, mean0)
        f_sum = np.full(1, s0)
        # A row per thread: split candidates in the search, a side buffer in the partition.
        buf = np.empty((n_threads, n), dtype=np.int32)
        while f_node.shape[0] > 0:
            m = f_node.shape[0]
            split_feat = np.empty(m, dtype=np.int64)
            split_pos = np.zeros(m, dtype=np.int64)
            child_base = np.zeros(m, dtype=np.int64)
            # Capacity for the worst case (every frontier node splits).
            _grow_tables(inode, fnode, value, n_nodes + 2 * m)
            # Search and choose a batch of frontier nodes at a time, so that the
            # (node, feature) results take a bounded amount of memory.
            pair_delta = np.empty(min(m, SEARCH_BATCH) * p, dtype=np.float64)
            pair_pos = np.empty(min(m, SEARCH_BATCH) * p, dtype=np.int64)
            n_split = 0
            for b0 in range(0, m, SEARCH_BATCH):
                b = slice(b0, min(m, b0 + SEARCH_BATCH))
                n_pairs = (b.stop - b.start) * p
                _run_chunks(pool, min(n_threads, n_pairs), _search, keys, ranks, rank_row,
                            no_ranks, f_node[b], f_start[b], f_end[b], f_mean[b], f_sum[b],
                            fnode, value, y_class, y_reg, w, unit_weights, exact_sums, shift,
                            mask, factor, criterion, min_samples_leaf, simd, scratch, buf,
                            pair_delta[:n_pairs], pair_pos[:n_pairs])
                n_split += _choose(X, keys, shift, f_node[b], f_start[b], f_end[b], inode,
                                   fnode, value, factor, criterion, q_root,
                                   min_impurity_decrease, pair_delta[:n_pairs],
                                   pair_pos[:n_pairs], n_nodes + 2 * n_split, goes_left,
                                   split_feat[b], split_pos[b], child_base[b])
            if n_split == 0:
                break
            sp_index = np.flatnonzero(split_feat >= 0).astype(np.int64)

            n_child = 2 * n_split
            c_start = np.empty(n_child, dtype=np.int64)
            c_end = np.empty(n_child, dtype=np.int64)
            c_mean = np.zeros(n_child, dtype=np.float64)
            c_sum = np.zeros(n_child, dtype=np.float64)
            c_ok = np.zeros(n_child, dtype=np.uint8)
            _run_chunks(pool, min(n_threads, n_child), _children, keys, sp_index, f_node,
                        f_start, f_end, split_feat, split_pos, child_base, inode, fnode, value,
                        y_class, y_reg, w, unit_weights, shift, mask, factor, criterion, max_depth,
                        min_samples_split, min_samples_leaf, c_start, c_end, c_mean, c_sum,
                        c_ok)

            # Only splits with a child that may split again need sorted child segments.
            needs = (c_ok[0::2] | c_ok[1::2]).astype(bool)
            part_index = sp_index[needs]
            if part_index.shape[0] > 0:
                _run_chunks(pool, min(n_threads, part_index.shape[0] * p), _partition, keys,
                            shift, part_index, split_feat, f_start, f_end, goes_left, simd,
                            buf)
            n_nodes += n_child

            ok = c_ok.astype(bool)
            child_ids = (child_base[np.repeat(sp_index, 2)]
                         + np.tile(np.array([0, 1], dtype=np.int64), n_split))
            f_node = child_ids[ok]
            f_start = c_start[ok]
            f_end = c_end[ok]
            f_mean = c_mean[ok]
            f_sum = c_sum[ok]
    finally:
        if pool is not None:
            pool.shutdown(wait=True)

    # Views of the first n_nodes rows: the caller copies what it keeps, column by column,
    # so the over-allocated tables are never duplicated whole.
    return inode[:n_nodes], fnode[:n_nodes], value[:n_nodes]
