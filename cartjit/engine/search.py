"""Step 1 of a level: the best split of every (node, feature) pair of the frontier.

Each pair is scanned independently (docs/maths.md §2): its node's cases in the order of
the feature, every threshold between two distinct values a candidate, the impurity
decrease Δi(s, t) of each computed from the running class counts (or sums of the
response) on the left. The scans of one node and feature are in
:mod:`cartjit.engine.scans` (numeric features; regression on large nodes in
:mod:`cartjit.engine.gathered`), the subset search of categorical features in
:mod:`cartjit.engine.subsets`, and a feature with missing values is searched by
:mod:`cartjit.engine.missing`. :func:`_ordered_best` picks, per pair, the scan the data
calls for.

A fit compiles only the scans it can reach: :func:`search_marks` reads the targets
(classification or regression, the criterion, whether the class factors are equal) and
:data:`SEARCH_KERNELS` maps the marks to the one search kernel compiled for them.
The pairs of a level are shared out among chunks by feature (:mod:`cartjit.engine.speed`),
and each pair's result goes to :class:`cartjit.engine.records.Pairs`.
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .gathered import GATHER_MIN, _SCAN_SKIP, _unit_scan_gathered
from .impurity import ENTROPY, GINI, SQUARED_ERROR, tie_tolerance
from .records import F_IMPURITY, F_WEIGHT, Share, Totals
from .scans import (EQUAL_FACTORS_RTOL, Segment, best_split_class_runs,
                    best_split_classification, best_split_gini_runs, best_split_regression,
                    best_split_regression_unit, equal_factors)
from .speed import _take_case_block


@jit(borrowed=True)
def _search(ps, fr, nodes, tg, rules, work, pairs, share, gathered, iota, reg, cls, gini,
            runs):
    """Step 1, search: the best split of every (frontier node, feature) pair, shared out
    as the chunks go, one feature on a block of nodes at a time, the chunk's features
    on one block before the next (:func:`_take_case_block`; ``share.units`` the step's
    counters, :func:`step_counters`; ``share.bounds`` the blocks, :func:`_case_blocks`).

    Classification scans features without ties by runs of one class (see
    :func:`cartjit.engine.scans.best_split_classification`, with this chunk's row of
    ``work.buffers`` for the candidates); features with ties, and twoing without
    labels in the keys, case by case. The common case (Gini, unit weights, one factor, labels in
    the keys, no ties) runs :func:`cartjit.engine.scans.best_split_gini_runs`; the other
    pairs with labels in the keys and no ties
    :func:`cartjit.engine.scans.best_split_class_runs` (entropy when its table of
    k log2 k is there: unit or integer weights); regression with unit weights and
    no ties :func:`cartjit.engine.scans.best_split_regression_unit`, or on a segment of
    :data:`GATHER_MIN` cases or more the same scan on the responses gathered into this
    chunk's row of ``gathered`` (:func:`_unit_scan_gathered`); every other pair the
    general functions.

    Parameters
    ----------
    ps : :class:`cartjit.engine.presort.Presorted` keys, ranks and rank rows.
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`.
    tg : :class:`cartjit.engine.scans.Targets`.
    rules : :class:`Rules`.
    work : :class:`Work`.
    pairs : :class:`Pairs` output, pair k = (node k // p, feature k % p).
    share : :class:`Share`, this chunk's share of the step: the step's counters
        (:func:`step_counters`), the blocks of the batch's rows (:func:`_case_blocks`),
        the chunk c (its scratch, its own features) and the number of chunks.
    gathered : float64 (n_chunks, 2 m + :data:`_SCAN_SKIP`) scratch of
        :func:`_unit_scan_gathered` for segments of up to m cases, or ``None``.
    iota : int32 0, 1, ..., m - 1, or ``None``.
    reg, cls, gini, runs : the scan marks of :func:`_ordered_best`, constants of the
        caller (:func:`search_marks`): compiled once for each set of marks.
    """
    keys = ps.keys
    ranks = ps.ranks
    rank_row = ps.rank_row
    fnode = nodes.fnode
    value = nodes.value
    p = keys.shape[0]
    units = share.units
    bounds = share.bounds
    c = share.c
    n_chunks = share.n_chunks
    scratch = work.scratch[c]
    cand = work.buffers[c]
    n_levels = ps.n_levels
    # A block of one feature's nodes at a time, the feature's rows taken once a block.
    while True:
        f, j, j_end = _take_case_block(units, c, n_chunks, p, bounds)
        if f < 0:
            break
        if n_levels[f] > 0:  # searched by _search_subsets
            continue
        tied = rank_row[f] >= 0
        rk = ranks[rank_row[f]] if tied else work.no_ranks
        row = keys[f]
        while j < j_end:
            node = fr.node[j]
            seg = Segment(row, rk, fr.start[j], fr.end[j])
            tot = Totals(value[node], fnode[node, F_IMPURITY], fr.mean[j],
                         fnode[node, F_WEIGHT], fr.sum[j])
            d, pos = _ordered_best(seg, tg, rules, tot, tied, scratch, cand, gathered, c,
                                   iota, reg, cls, gini, runs)
            pairs.delta[j * p + f] = d
            pairs.pos[j * p + f] = pos
            j += 1


# Step 1's kernels for the chunks of a threaded growth, one per family of fits: each
# calls _search with constant scan marks (search_marks). (The serial growth passes its
# marks to _search itself: a kernel that only calls another takes most of a second to
# compile, for its many record arguments.)

@jit(borrowed=True)
def _search_regression(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota,
                       c, n_chunks):
    """:func:`_search` for regression."""
    _search(ps, fr, nodes, tg, rules, work, pairs, Share(units, bounds, c, n_chunks),
            gathered, iota, True, None, None, None)


@jit(borrowed=True)
def _search_gini(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
                 n_chunks):
    """:func:`_search` for Gini where every node takes the lean scan or the general one
    (:func:`search_marks`)."""
    _search(ps, fr, nodes, tg, rules, work, pairs, Share(units, bounds, c, n_chunks),
            gathered, iota, None, True, True, None)


@jit(borrowed=True)
def _search_runs(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
                 n_chunks):
    """:func:`_search` for classification that never takes the lean Gini scan."""
    _search(ps, fr, nodes, tg, rules, work, pairs, Share(units, bounds, c, n_chunks),
            gathered, iota, None, True, None, True)


@jit(borrowed=True)
def _search_classification(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered,
                           iota, c, n_chunks):
    """:func:`_search` for classification, every scan."""
    _search(ps, fr, nodes, tg, rules, work, pairs, Share(units, bounds, c, n_chunks),
            gathered, iota, None, True, True, True)


#: The kernel of step 1 for a threaded growth, by scan marks (:func:`search_marks`).
SEARCH_KERNELS = {(True, None, None, None): _search_regression,
                  (None, True, True, None): _search_gini,
                  (None, True, None, True): _search_runs,
                  (None, True, True, True): _search_classification}


def search_marks(tg):
    """The scan marks of step 1 (:func:`_ordered_best`) for a fit with targets ``tg``,
    ``(reg, cls, gini, runs)``, each ``True`` or ``None``: the fewest scans that still
    hold every scan the fit can reach, so that every pair takes the scan it would take
    with all of them and the tree is the same.

    The lean Gini scan is reached only by Gini with unit weights and labels in the keys;
    the scan by runs of the other criteria (:func:`cartjit.engine.scans.best_split_class_runs`)
    by those with labels in the keys, and by Gini there only at a node whose classes
    present do not share one factor (:func:`cartjit.engine.scans.equal_factors`). That
    cannot happen when every factor is > 0 and their spread is within
    ``EQUAL_FACTORS_RTOL`` of the smallest: a node's spread is at most that, and its
    largest factor at least the smallest (the float operations are monotone, so the
    bound holds as computed).
    """
    if tg.criterion == SQUARED_ERROR:
        return True, None, None, None
    if tg.criterion != GINI or not tg.unit_weights or tg.mask == 0:
        return None, True, None, True
    f = tg.factor.tolist()  # (a list: cheaper than NumPy for a few)
    # every factor > 0 (none 0, as for a class absent from the cases, none NaN): then
    # min and max do not depend on the order, and an infinite one fails the bound
    if all(v > 0.0 for v in f) and max(f) - min(f) <= EQUAL_FACTORS_RTOL * min(f):
        return None, True, True, None
    return None, True, True, True


# Inlined where it is called: a call between kernels with array arguments costs about
# as much as a small node's whole scan (docs/design.md), and trees grown to purity
# search millions of small (node, feature) pairs.
@jit(inline="always")
def _ordered_best(seg, tg, rules, tot, tied, scratch, cand, gathered, c, iota, reg, cls,
                  gini, runs):
    """Step 1, one (node, ordered feature) pair: the best split of ``seg``; returns
    ``(Δi, pos)`` (see :func:`_search` for which scan serves which pair).

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` of the node's cases.
    tg, rules : :class:`cartjit.engine.scans.Targets`, :class:`Rules`.
    tot : :class:`Totals` of the segment's cases: class counts (classification),
        impurity, and ȳ, W and Σ w (y - ȳ) (regression).
    tied : whether the feature has tied values (``seg.ranks`` holds their ranks).
    scratch, cand : this thread's scratch and candidate buffer.
    gathered, c, iota : :func:`_unit_scan_gathered`'s scratch (row c is this
        thread's) and identity keys; ``None``: the scan on the keys only, and the
        gathered scan is not compiled in (Numba prunes the branch before typing).
    reg, cls, gini, runs : scan marks, ``True`` or ``None``: ``None`` where the fit
        cannot reach the regression scans, the classification scans, the lean Gini scan
        or the scan by runs of the other criteria (:func:`search_marks`); Numba prunes
        the scans of a ``None`` mark before typing.
    """
    total = tot.total
    imp = tot.imp
    mean = tot.mean
    w_total = tot.w_total
    s_total = tot.s_total
    criterion = tg.criterion
    min_leaf = rules.min_samples_leaf
    if criterion == SQUARED_ERROR:
        if reg is not None:
            if tg.unit_weights and not tied:  # the lean scan, inlined here
                if gathered is not None:
                    n_seg = seg.end - seg.start
                    if n_seg >= GATHER_MIN and 2 * n_seg + _SCAN_SKIP <= gathered.shape[1]:
                        return _unit_scan_gathered(seg.keys, seg.start, seg.end, tg, mean,
                                                   s_total, imp, min_leaf, gathered[c], iota)
                return best_split_regression_unit(seg.keys, seg.start, seg.end, tg.y_reg,
                                                  mean, s_total, imp, tie_tolerance(imp),
                                                  min_leaf)
            return best_split_regression(seg, tg.y_reg, tg.w, tg.unit_weights, mean, w_total,
                                         s_total, imp, min_leaf)
        return -np.inf, -1  # not reached: regression fits search with reg
    if cls is None:
        return -np.inf, -1  # not reached: classification fits search with cls
    if gini is not None:
        if (criterion == GINI and tg.unit_weights and tg.mask != 0 and not tied
                and equal_factors(total, tg.factor)):
            return best_split_gini_runs(seg, tg, total, imp, min_leaf, rules.simd, scratch,
                                        cand)
    if runs is not None:
        if tg.mask != 0 and not tied and (criterion != ENTROPY or tg.xlogx.shape[0] > 0):
            return best_split_class_runs(seg, tg, total, imp, min_leaf, rules.simd, scratch,
                                         cand)
    by_runs = (criterion == GINI or criterion == ENTROPY) and not tied
    return best_split_classification(seg, tg, total, imp, min_leaf, by_runs, rules.simd,
                                     scratch, cand)
