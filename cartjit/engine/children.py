"""Steps 3 and 4 of a level: write the children, and partition every feature's keys.

Step 3 (:func:`_children`) writes the children of the nodes split at this level to the
node tables, with ids in breadth-first order (so children follow their parent and
``right == left + 1``), their class counts or response moments (:func:`_node_stats`),
and puts those that may split again in the next frontier. The cases of a split node
are first marked left or right (:func:`_mark_sides`; with missing values
:func:`cartjit.engine.missing._mark_mv` and the surrogates do it).

Step 4 (:func:`_partition`) keeps every node's cases a position range of every row of
the presorted keys: each other feature's segment of a split node is *stably*
partitioned into the cases going left and those going right, so that both child
segments are sorted again and nothing is ever re-sorted (the split feature's own
segment is already split at the split position, or, for a categorical split, is
regrouped by :func:`_partition_split_feature`). Splits into two leaves skip step 4.
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .impurity import SQUARED_ERROR, impurity_from_counts
from .predict import _level_side
from .records import (F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, I_DEPTH, I_FEATURE,
                      I_LEFT, I_LEVEL_ROW, I_N, I_PARENT, I_RIGHT, LEFT, RIGHT, _N_INT)
from .scans import _AHEAD, class_counts
from .speed import LANES, compress_partition, prefetch
from .subsets import level_run_end
from .speed import _take_block


# --------------------------------------------------------------------------- node statistics

@jit(borrowed=True)
def _class_node_stats(row, start, end, tg, counts):
    """Node statistics (steps 3 and the root): weighted class counts N_j(t) of a segment;
    returns how many classes occur.

    Parameters
    ----------
    row : int32 one row of keys; the node is ``row[start:end]``.
    start, end : the node's position range.
    tg : :class:`cartjit.engine.scans.Targets`.
    counts : float64 (J,) output.
    """
    class_counts(row, start, end, tg, counts)
    present = 0
    for j in range(counts.shape[0]):
        if counts[j] > 0.0:
            present += 1
    return present


@jit(borrowed=True)
def _reg_node_stats(row, start, end, tg):
    """Node statistics (regression): (W, ȳ, Σ w (y - ȳ), weighted variance, all y equal)
    of a segment (:func:`_reg_moments`).

    Parameters
    ----------
    row : int32 one row of keys (cases); the node is ``row[start:end]``.
    start, end : the node's position range.
    tg : :class:`cartjit.engine.scans.Targets`.
    """
    return _reg_moments(row, start, end, tg)


@jit(inline="always")
def _reg_moments(row, start, end, tg):
    """(W, ȳ, Σ w (y - ȳ), weighted variance, all y equal) of the cases
    ``row[start:end]`` (regression keys are cases): two passes, the second about the
    mean. Unsigned indices, and no multiplication by a unit weight (exact, so the same
    bits as with the weights of 1). Inlined: the search with missing values runs it for
    every (node, feature) pair."""
    y = tg.y_reg
    w = tg.w
    unit_weights = tg.unit_weights
    w_sum = 0.0
    s = 0.0
    first = y[row[start]]
    constant = True
    nk = np.uint64(row.shape[0])
    for i in range(np.uint64(start), np.uint64(end)):
        if i + _AHEAD < nk:
            prefetch(y, np.uint64(row[i + _AHEAD]))
        case = np.uint64(row[i])
        yi = y[case]
        if unit_weights:
            w_sum += 1.0
            s += yi
        else:
            wi = w[case]
            w_sum += wi
            s += wi * yi
        constant &= yi == first
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    for i in range(np.uint64(start), np.uint64(end)):
        if i + _AHEAD < nk:
            prefetch(y, np.uint64(row[i + _AHEAD]))
        case = np.uint64(row[i])
        z = y[case] - mean
        if unit_weights:
            s_c += z
            ss_c += z * z
        else:
            wi = w[case]
            s_c += wi * z
            ss_c += wi * z * z
    var = (ss_c - s_c * s_c / w_sum) / w_sum
    if var < 0.0 or constant:
        var = 0.0
    return w_sum, mean, s_c, var, constant


@jit(borrowed=True)
def _node_stats(row, start, end, tg, counts):
    """Node statistics (step 3 and the root) of the node holding ``row[start:end]``.

    Returns ``(weight, impurity, mean, centred sum, may split by purity)``.

    Parameters
    ----------
    row : int32 one row of keys.
    start, end : the node's position range.
    tg : :class:`cartjit.engine.scans.Targets`.
    counts : float64 the node's row of the value table: N_j(t), or the mean.
    """
    if tg.criterion != SQUARED_ERROR:
        present = _class_node_stats(row, start, end, tg, counts)
        return (counts.sum(), impurity_from_counts(counts, tg.factor, tg.criterion), 0.0,
                0.0, present > 1)
    w_sum, mean, s_c, var, constant = _reg_node_stats(row, start, end, tg)
    counts[0] = mean
    return w_sum, var, mean, s_c, not constant


@jit(borrowed=True)
def _partition_split_feature(keys, start, end, shift, codes, level_sets, row, marks, buf):
    """Step 2, a subset split: mark the cases of ``keys[start:end]`` LEFT when their
    level is in the left set of row ``row``, else RIGHT, and stably partition the split
    feature's segment into the cases going left and then right (the other features are
    partitioned in step 4), in one pass. The segment comes grouped by level, so the side
    is looked up once per run of equal codes and every run moves whole: left runs
    forward in place, right runs to ``buf`` and back after the left ones (as
    :func:`_stable_split` moves them, without reading a mark per case)."""
    ushift = np.uint64(shift)
    wl = np.uint64(start)  # wl <= i: the in-place writes never overtake the reads
    wr = np.uint64(0)
    i = start
    while i < end:
        code = codes[np.uint64(keys[np.uint64(i)]) >> ushift]
        run_end = level_run_end(keys, codes, ushift, i, end, code)
        if _level_side(code, row, level_sets) == 0:
            for q in range(np.uint64(i), np.uint64(run_end)):
                key = keys[q]
                marks[np.uint64(key) >> ushift] = LEFT
                keys[wl] = key
                wl += np.uint64(1)
        else:
            for q in range(np.uint64(i), np.uint64(run_end)):
                key = keys[q]
                marks[np.uint64(key) >> ushift] = RIGHT
                buf[wr] = key
                wr += np.uint64(1)
        i = run_end
    for q in range(wr):
        keys[wl + q] = buf[q]


@jit(inline="always")
def _stable_split(row, i0, end, wl, wr, ushift, goes_left, buf):
    """Stably partition ``row[i0:end]`` by the marks: a case marked 1 (left) is written
    at ``wl`` onwards in ``row``, one marked 0 at ``wr`` onwards in ``buf``, and the
    ``buf`` run (with the ``wr`` keys it already held) is then copied back after the left
    run. Branch-free: the side is a coin flip the CPU cannot predict, so every key is
    written to both places and only the matching write pointer advances (wl <= i, so
    the in-place write never overtakes the read). Unsigned indices spare every access
    Numba's negative-index wrap-around (four per key)."""
    uwl = np.uint64(wl)
    uwr = np.uint64(wr)
    for i in range(np.uint64(i0), np.uint64(end)):
        key = row[i]
        g = np.uint64(goes_left[np.uint64(key) >> ushift])
        row[uwl] = key
        buf[uwr] = key
        uwl += g
        uwr += np.uint64(1) - g
    for i in range(uwr):
        row[uwl + i] = buf[i]


@jit(inline="always")
def _keep_left(row, i0, end, wl, ushift, goes_left):
    """:func:`_stable_split` when only the left child splits again: the cases marked 1
    are packed stably from ``wl`` onwards in ``row``, and what is left after them (up to
    ``end``) is never read again. Branch-free, one write per key and no side buffer
    (wl <= i, so the write never overtakes the read)."""
    uwl = np.uint64(wl)
    for i in range(np.uint64(i0), np.uint64(end)):
        key = row[i]
        row[uwl] = key
        uwl += np.uint64(goes_left[np.uint64(key) >> ushift])


@jit(inline="always")
def _keep_right(row, start, end, ushift, goes_left):
    """:func:`_stable_split` when only the right child splits again: the cases marked 0
    are packed stably at the end of ``row[start:end]``, walking down from the last key,
    and what is left before them is never read again. Branch-free, one write per key, no
    side buffer: the write position stays at or above the read position."""
    uwr = np.uint64(end)  # one past the next write
    i = np.uint64(end)
    ustart = np.uint64(start)
    while i > ustart:
        i -= np.uint64(1)
        key = row[i]
        row[uwr - np.uint64(1)] = key
        uwr -= np.uint64(1) - np.uint64(goes_left[np.uint64(key) >> ushift])


@jit(borrowed=True)
def _mark_sides(ps, fr, splits, shift, goes_left):
    """Step 2, after :func:`_choose` (serial): mark the cases of each node split on an
    ordered feature, 1 for the left child's and 0 for the right's. One thread: the
    marks of a level's interleaved cases share cache lines, which two threads marking
    at once would pass back and forth.

    Parameters
    ----------
    ps : :class:`cartjit.engine.presort.Presorted` keys and levels.
    fr : :class:`Frontier` of this batch.
    splits : :class:`Splits` of this batch (:func:`_choose`).
    shift : bits of a key below its case number.
    goes_left : uint8 output by case.
    """
    for j in range(fr.node.shape[0]):
        bf = splits.feat[j]
        if bf < 0 or ps.n_levels[bf] > 0:
            continue
        row = ps.keys[bf]
        pos = splits.pos[j]
        for i in range(np.uint64(fr.start[j]), np.uint64(pos)):
            goes_left[np.uint64(row[i] >> shift)] = 1
        for i in range(np.uint64(pos), np.uint64(fr.end[j])):
            goes_left[np.uint64(row[i] >> shift)] = 0


@jit(borrowed=True)
def _number_splits(ps, fr, nodes, splits, first_child, first_row):
    """Step 2, choose, after :func:`_choose` (serial): in node order, the ids of the
    children of each split node (breadth-first: ``first_child``, ``first_child + 2``,
    ...) and the rows of the level sets of the subset splits (from ``first_row`` on);
    returns how many nodes split and how many of them are subset splits.

    Parameters
    ----------
    ps : :class:`cartjit.engine.presort.Presorted` (the levels of the features).
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`; split nodes get their children and level-set rows.
    splits : :class:`Splits` of this batch; ``child_base`` is written.
    first_child : id of the first child this batch may create.
    first_row : first free row of the level sets.
    """
    inode = nodes.inode
    n_split = 0
    n_rows = 0
    for j in range(fr.node.shape[0]):
        bf = splits.feat[j]
        if bf < 0:
            continue
        node = fr.node[j]
        child = first_child + 2 * n_split
        splits.child_base[j] = child
        inode[node, I_LEFT] = child
        inode[node, I_RIGHT] = child + 1
        n_split += 1
        if ps.n_levels[bf] > 0:
            inode[node, I_LEVEL_ROW] = first_row + n_rows
            n_rows += 1
    return n_split, n_rows


@jit(borrowed=True)
def _children(keys, sp_index, fr, splits, nodes, tg, rules, kids, c, n_chunks):
    """Step 3, children: write the children of the split nodes and decide which may split.

    Child t (of split node ``sp_index[t // 2]``, left when t is even) is written to the
    node tables and to row t of ``kids``.

    Parameters
    ----------
    keys : int32 (p, n) the keys (the split feature's row is split at the position).
    sp_index : int64 frontier rows of the nodes that split.
    fr : :class:`Frontier` of the level.
    splits : :class:`Splits` of the level (step 2).
    nodes : :class:`Nodes`.
    tg : :class:`cartjit.engine.scans.Targets`.
    rules : :class:`Rules`.
    kids : :class:`Children` output, two rows per split node.
    c, n_chunks : this chunk (children c, c + n_chunks, ...) and the number of chunks.
    """
    inode = nodes.inode
    fnode = nodes.fnode
    for t in range(c, 2 * sp_index.shape[0], n_chunks):
        j = sp_index[t // 2]
        node = fr.node[j]
        is_left = t % 2 == 0
        cid = splits.child_base[j] + (0 if is_left else 1)
        s = fr.start[j] if is_left else splits.pos[j]
        e = splits.pos[j] if is_left else splits.stop[j]
        depth = inode[node, I_DEPTH] + 1
        inode[cid, I_FEATURE] = -1
        inode[cid, I_LEFT] = -1
        inode[cid, I_RIGHT] = -1
        inode[cid, I_PARENT] = node
        inode[cid, I_DEPTH] = depth
        inode[cid, I_N] = e - s
        for col in range(I_LEVEL_ROW, _N_INT):
            inode[cid, col] = 0
        inode[cid, I_LEVEL_ROW] = -1
        fnode[cid, F_THRESHOLD] = np.nan
        fnode[cid, F_IMPROVEMENT] = 0.0
        weight, imp, mean, s_c, mixed = _node_stats(keys[splits.feat[j]], s, e, tg,
                                                    nodes.value[cid])
        fnode[cid, F_WEIGHT] = weight
        fnode[cid, F_IMPURITY] = imp
        kids.node[t] = cid
        kids.start[t] = s
        kids.end[t] = e
        kids.mean[t] = mean
        kids.sum[t] = s_c
        ok = (mixed and e - s >= rules.min_samples_split
              and e - s >= 2 * rules.min_samples_leaf
              and (rules.max_depth < 0 or depth < rules.max_depth))
        kids.ok[t] = 1 if ok else 0


@jit(borrowed=True)
def _partition(keys, shift, part_index, sides, splits, fr, work, simd, units, c, n_chunks):
    """Step 4, partition: stable partition of the split nodes' segments on every feature
    but the split feature, into the cases going left and then right.

    A child that will not split again (a leaf) needs no sorted segment: when only one
    child of a node splits again (``sides`` 1 or 2), only that child's cases are packed,
    in order, to its end of the segment (:func:`_keep_left`, :func:`_keep_right`: one
    write per key, no side buffer, no copy back), and the leaf's positions are left
    holding whatever the packing left there; nothing reads them again.

    With ``simd``, blocks of 16 keys are split at once
    (:func:`cartjit.engine.speed.compress_partition`; ``goes_left`` is padded for it).

    Parameters
    ----------
    keys : int32 (p, n) the keys, partitioned in place.
    shift : bits of the class label in a key.
    part_index : int64 frontier rows of the nodes to partition.
    sides : uint8 by row of ``part_index``, which children split again: 1 the left, 2
        the right, 3 both.
    splits : :class:`Splits` of the level (step 2).
    fr : :class:`Frontier` of the level.
    work : :class:`Work` (``goes_left`` marks, this chunk's side buffer).
    simd : 16-key blocks.
    units : the step's counters (:func:`step_counters`): the pairs are shared out as the
        chunks go, a block of one feature's nodes at a time (:func:`_take_block`).
    c, n_chunks : this chunk (its side buffer) and the number of chunks.
    """
    p = keys.shape[0]
    goes_left = work.goes_left
    buf = work.buffers[c]
    n_nodes = part_index.shape[0]
    split_feat = splits.feat
    starts = fr.start
    ends = fr.end
    ushift = np.uint64(shift)
    # A block of one feature's nodes at a time, the row taken once a block.
    while True:
        f, t, t_end = _take_block(units, c, n_chunks, p, n_nodes)
        if f < 0:
            break
        row = keys[f]
        while t < t_end:
            j = part_index[t]
            side = sides[t]
            t += 1
            if f == split_feat[j]:
                continue
            wl = starts[j]
            wr = 0
            i0 = starts[j]
            end = ends[j]
            if side == 2 and not simd:
                _keep_right(row, i0, end, ushift, goes_left)
                continue
            if simd:
                while i0 + LANES <= end:
                    n_left = compress_partition(row, i0, shift, goes_left, buf, wl, wr)
                    wl += n_left
                    wr += LANES - n_left
                    i0 += LANES
            if side == 1:
                _keep_left(row, i0, end, wl, ushift, goes_left)
            else:
                _stable_split(row, i0, end, wl, wr, ushift, goes_left, buf)


@jit(borrowed=True)
def _partition_mv(keys, shift, sp_index, splits, fr, work, c, n_chunks):
    """Step 4 (missing values), before step 3: stable three-way partition of the split
    nodes' segments into the cases going left, those going right, and those staying in
    the node (marks of :func:`_send_missing`): the split feature of every split node, and every
    feature of a node where cases stay (the others are left to :func:`_partition`).

    Parameters as :func:`_partition`, ``sp_index`` the frontier rows of every split node.
    """
    p = keys.shape[0]
    marks = work.goes_left
    buf = work.buffers[c]
    for k in range(c, sp_index.shape[0] * p, n_chunks):
        t = k // p
        f = k - t * p
        j = sp_index[t]
        if f != splits.feat[j] and splits.stop[j] == fr.end[j]:
            continue
        row = keys[f]
        start = fr.start[j]
        n = fr.end[j] - start
        wl = start
        wr = 0
        top = n
        for i in range(start, start + n):
            key = row[i]
            m = marks[key >> shift]
            if m == LEFT:
                row[wl] = key
                wl += 1
            elif m == RIGHT:
                buf[wr] = key
                wr += 1
            else:
                top -= 1
                buf[top] = key
        for i in range(wr):
            row[wl + i] = buf[i]
        for i in range(n - top):
            row[wl + wr + i] = buf[n - 1 - i]
