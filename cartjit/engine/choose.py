"""Step 2 of a level: choose each node's split, and rank its competitors.

Per node, the best feature is chosen among the (node, feature) results of step 1 in
feature order, a later feature winning only by more than the tie tolerance (so that the
result never depends on the order in which the pairs were searched). The stopping rules
of docs/maths.md §2 (minimum sizes, depth, a decrease too small) then decide between
a split and a leaf (:func:`_choose`). For a categorical split the level sets (which
levels go left) are recorded (:func:`_record_subsets`). The best splits on the other
features — rpart's competitors, shown by ``summary`` — are ranked and written to the
competitor table (:func:`_pick_competitors`, :func:`_rank_competitors`,
:func:`_fill_competitors`).
"""
from __future__ import annotations

import numpy as np

from .children import _partition_split_feature
from .speed import jit
from .impurity import SQUARED_ERROR, tie_tolerance
from .missing import _level_sets_from_bits, _level_sets_of_pair
from .records import (C_COUNT, C_FEATURE, C_IMPROVEMENT, C_LEVEL_ROW, C_THRESHOLD,
                      F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, I_COMP_START,
                      I_FEATURE, I_LEVEL_ROW, I_N_COMP, I_N_PRIMARY, NodeSpan)
from .scans import threshold_between
from .speed import _block


@jit(borrowed=True)
def _record_subsets(ps, fr, nodes, tg, rules, splits, pairs, work, level_sets):
    """Step 2, choose, the subset splits of a batch (serial: the nodes' cases are
    interleaved in ``goes_left``, whose cache lines threads marking them would share):
    for every node that :func:`_choose` split on a categorical feature, write its level
    sets to the row :func:`_number_splits` reserved (the sides the search kept in
    ``pairs.left_bits``, or found by searching that one pair again), mark its cases and
    partition the split feature.

    Parameters
    ----------
    ps, fr, nodes, tg, rules : as :func:`_choose`.
    splits : :class:`Splits` of this batch (step 2).
    pairs : :class:`Pairs` of this batch (step 1).
    work : :class:`Work`; the first thread's scratch and buffer serve here.
    level_sets : uint64 (cap, 2, n_words) the level sets.
    """
    p = ps.keys.shape[0]
    for j in range(fr.node.shape[0]):
        f = splits.feat[j]
        if f < 0 or ps.n_levels[f] == 0:
            continue
        node = fr.node[j]
        lrow = nodes.inode[node, I_LEVEL_ROW]
        keys = ps.keys[f]
        codes = ps.ranks[ps.rank_row[f]]
        span = NodeSpan(node, fr.start[j], fr.end[j], fr.end[j], fr.mean[j], fr.sum[j])
        _level_sets_of_pair(ps, f, span, nodes, tg, rules, pairs, j * p + f, work,
                            level_sets, lrow)
        _partition_split_feature(keys, fr.start[j], fr.end[j], tg.shift, codes, level_sets,
                                 lrow, work.goes_left, work.buffers[0])


@jit(borrowed=True)
def _choose(X, ps, fr, nodes, tg, rules, pairs, splits, c, n_chunks):
    """Step 2, choose, in chunks: each frontier node's split and threshold, recorded;
    :func:`_mark_sides` then marks the cases of the ordered splits and
    :func:`_number_splits` numbers the children (and the rows of the level sets of
    subset splits, completed by :func:`_record_subsets`) in node order.

    Chunk c takes the c-th of ``n_chunks`` consecutive blocks of batch rows; each node
    writes its own rows of ``splits`` and of the node tables.

    Parameters
    ----------
    X : float64 (n, p) the cases, for the thresholds.
    ps : :class:`cartjit.engine.presort.Presorted` keys, codes and levels.
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`; split nodes get feature, threshold and Δi.
    tg : :class:`cartjit.engine.scans.Targets`.
    rules : :class:`Rules`.
    pairs : :class:`Pairs` of this batch (step 1).
    splits : :class:`Splits` output, this batch's rows (``child_base`` is written by
        :func:`_number_splits`).
    c, n_chunks : this chunk and the number of chunks.
    """
    keys = ps.keys
    inode = nodes.inode
    fnode = nodes.fnode
    value = nodes.value
    factor = tg.factor
    shift = tg.shift
    p = keys.shape[0]
    n_classes = value.shape[1]
    j0, j1 = _block(fr.node.shape[0], c, n_chunks)
    for j in range(j1):
        if j < j0:
            continue
        splits.feat[j] = -1
        node = fr.node[j]
        imp = fnode[node, F_IMPURITY]
        tol = tie_tolerance(imp)
        best = -np.inf
        bf = -1
        for f in range(p):
            k = j * p + f
            if pairs.pos[k] >= 0 and pairs.delta[k] > best + tol:
                best = pairs.delta[k]
                bf = f
        if bf < 0 or not best > tol:
            continue
        if tg.criterion != SQUARED_ERROR:
            q_t = 0.0
            for cl in range(n_classes):
                q_t += factor[cl] * value[node, cl]
            p_t = q_t / rules.q_root
        else:
            p_t = fnode[node, F_WEIGHT] / rules.q_root
        # p(t) Δi equal to the threshold up to the tie tolerance passes
        # (docs/maths.md §2, ties).
        if p_t * (best + tol) < rules.min_impurity_decrease:
            continue
        pos = pairs.pos[j * p + bf]
        splits.feat[j] = bf
        splits.pos[j] = pos
        splits.stop[j] = fr.end[j]
        inode[node, I_N_PRIMARY] = fr.end[j] - fr.start[j]
        row = keys[bf]
        inode[node, I_FEATURE] = bf
        fnode[node, F_IMPROVEMENT] = best
        if ps.n_levels[bf] > 0:
            fnode[node, F_THRESHOLD] = np.nan
            continue
        fnode[node, F_THRESHOLD] = threshold_between(X[row[pos - 1] >> shift, bf],
                                                     X[row[pos] >> shift, bf])


@jit(inline="always")
def _next_pick(vals, p, f1, run_thr, run_bf):
    """The ranking rule of :func:`_best_untaken` for the competitors, on ``vals`` (the
    node's Δ in its first p entries, -inf where a feature is taken or not above the
    floor, and Δ + tol in the next p), holding the running best as the bound
    ``best + tol`` a later feature must beat: the same comparisons, but each step's
    dependence on the last is one comparison and one selection of a loaded value, with
    no branch to mispredict.

    Resumable: ``run_thr[f]``/``run_bf[f]`` hold the running bound and best before
    feature f (the caller sets entry 0 for a node's first round). Taking feature b
    leaves the scan before b as it was, so the next round passes ``f1 = b`` and starts
    there: the same picks in about half the steps."""
    thr = run_thr[f1]
    bf = run_bf[f1]
    for f in range(f1, p):
        better = vals[f] > thr
        thr = vals[p + f] if better else thr
        bf = f if better else bf
        run_thr[f + 1] = thr
        run_bf[f + 1] = bf
    return bf


@jit
def _pick_competitors(fr, nodes, rules, splits, pairs, picks, c, n_chunks):
    """Step 2, competitors, in chunks: for each split node of the batch, the best splits
    of the other features (largest Δ first, feature order on ties up to the tie
    tolerance, Δ above it), at most ``max_competitor``, in ``picks`` (row j: the features
    of batch row j in rank order, then -1); :func:`_rank_competitors` writes them to the
    table.

    Competitors are ranked by repeating one scan over the features in order (a feature
    is taken when it beats the best so far by more than the tie tolerance), with the
    features already taken left out (:func:`_next_pick`, resumed where the last pick was
    taken). Chunk c takes the c-th of ``n_chunks`` consecutive blocks of batch rows;
    each node writes only its own row of ``picks``.

    Parameters
    ----------
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`.
    rules : :class:`Rules`.
    splits : :class:`Splits` of this batch (step 2).
    pairs : :class:`Pairs` of this batch (step 1).
    picks : int64 (batch rows, max_competitor) output.
    c, n_chunks : this chunk and the number of chunks.
    """
    delta = pairs.delta
    feat = splits.feat
    node_ids = fr.node
    fnode = nodes.fnode
    p = delta.shape[0] // max(1, node_ids.shape[0])
    max_comp = rules.max_competitor
    vals = np.empty(2 * p, dtype=np.float64)
    run_thr = np.empty(p + 1, dtype=np.float64)
    run_bf = np.empty(p + 1, dtype=np.int64)
    j0, j1 = _block(node_ids.shape[0], c, n_chunks)
    for j in range(j1):
        if j < j0:
            continue
        f0 = feat[j]
        if f0 < 0:
            continue
        tol = tie_tolerance(fnode[node_ids[j], F_IMPURITY])
        base = j * p
        for f in range(p):
            v = delta[base + f]
            vals[f] = v if v > tol else -np.inf
            vals[p + f] = v + tol
        vals[f0] = -np.inf
        run_thr[0] = -np.inf
        run_bf[0] = -1
        f1 = 0
        n_comp = 0
        while n_comp < max_comp:
            bf = _next_pick(vals, p, f1, run_thr, run_bf)
            if bf < 0:
                break
            vals[bf] = -np.inf
            f1 = bf
            picks[j, n_comp] = bf
            n_comp += 1
        if n_comp < max_comp:
            picks[j, n_comp] = -1


@jit
def _rank_competitors(ps, fr, nodes, rules, splits, pairs, with_present, tables, picks):
    """Step 2, competitors (serial), after :func:`_pick_competitors`: write each split
    node's picks in node order to the competitor table (feature, cases present, Δ), a
    categorical competitor with the next free row of the level sets;
    :func:`_fill_competitors` completes the rows.

    Parameters as :func:`_mark_mv` (``ps`` the presort, ``tables`` the competitor
    table); ``with_present`` tells whether ``pairs.present`` was filled (missing
    values), else every case of the node counts as present; ``picks`` is
    :func:`_pick_competitors`' output.
    """
    p = ps.keys.shape[0]
    max_comp = rules.max_competitor
    comp_i = tables.comp_i
    comp_f = tables.comp_f
    n_levels = ps.n_levels
    row_c = tables.rows[1]
    n_rows = tables.rows[2]
    for j in range(fr.node.shape[0]):
        if splits.feat[j] < 0:
            continue
        node = fr.node[j]
        first = row_c
        n_all = fr.end[j] - fr.start[j]
        for r in range(max_comp):
            bf = picks[j, r]
            if bf < 0:
                break
            kk = j * p + bf
            comp_i[row_c, C_FEATURE] = bf
            comp_i[row_c, C_COUNT] = pairs.present[kk] if with_present else n_all
            comp_f[row_c, C_IMPROVEMENT] = pairs.delta[kk]
            if n_levels[bf] > 0:
                comp_i[row_c, C_LEVEL_ROW] = n_rows
                n_rows += 1
            else:
                comp_i[row_c, C_LEVEL_ROW] = -1
            row_c += 1
        nodes.inode[node, I_COMP_START] = first
        nodes.inode[node, I_N_COMP] = row_c - first
    tables.rows[1] = row_c
    tables.rows[2] = n_rows


@jit(borrowed=True)
def _fill_competitors(X, ps, fr, nodes, tg, rules, splits, pairs, work, level_sets,
                      tables, c, n_chunks):
    """Step 2, competitors, after :func:`_rank_competitors`: the threshold of each
    ordered competitor, the level sets of each categorical one (from
    ``pairs.left_bits``, or by searching the pair again with the first thread's scratch
    (:func:`_level_sets_of_pair`), when the caller runs one chunk).

    Chunk c takes the batch rows c, c + n_chunks, ...; each node writes only its own
    rows.

    Parameters as :func:`_send_missing`; ``level_sets`` is ``None`` when no feature is
    categorical, which compiles a version without the subset code (Numba prunes the
    branch on ``None`` before typing).
    """
    p = ps.keys.shape[0]
    shift = tg.shift
    for j in range(c, fr.node.shape[0], n_chunks):
        if splits.feat[j] < 0:
            continue
        node = fr.node[j]
        start = fr.start[j]
        first = nodes.inode[node, I_COMP_START]
        for row_c in range(first, first + nodes.inode[node, I_N_COMP]):
            bf = tables.comp_i[row_c, C_FEATURE]
            kk = j * p + bf
            row = ps.keys[bf]
            if level_sets is not None and ps.n_levels[bf] > 0:
                lrow = tables.comp_i[row_c, C_LEVEL_ROW]
                present = tables.comp_i[row_c, C_COUNT]
                if pairs.left_bits.shape[0] > 0:
                    _level_sets_from_bits(pairs.left_bits[kk], pairs.level_bits[kk],
                                          level_sets, lrow)
                else:
                    span = NodeSpan(node, start, start + present, fr.end[j], fr.mean[j],
                                    fr.sum[j])
                    _level_sets_of_pair(ps, bf, span, nodes, tg, rules, pairs, kk, work,
                                        level_sets, lrow)
                tables.comp_f[row_c, C_THRESHOLD] = np.nan
            else:
                pos = pairs.pos[kk]
                tables.comp_f[row_c, C_THRESHOLD] = threshold_between(
                    X[row[pos - 1] >> shift, bf], X[row[pos] >> shift, bf])
