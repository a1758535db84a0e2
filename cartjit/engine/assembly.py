"""From the grown node tables to a :class:`cartjit.engine.tree.Tree`.

:func:`cartjit.engine.grow.grow` returns a :class:`Grown` record (the node tables, the
level sets of categorical splits and the surrogate and competitor tables, cut to the
nodes grown). :func:`assemble_tree` turns it into the flat tree the rest of the package
reads (children, features, thresholds, counts or moments, risks and labels per node),
and :func:`routing_nodes` into the routing of a fold tree's held-out cases: where a case
whose split value is missing goes when no surrogate sends it (the majority side, rpart's
rule; docs/maths.md §8).
"""
from __future__ import annotations

import numpy as np
from typing import NamedTuple

from .speed import jit
from .predict import R_LEVEL_ROW, R_MAJORITY, R_N_SUR, R_SUR_START
from .records import (C_COUNT, C_FEATURE, C_IMPROVEMENT, C_LEVEL_ROW, C_THRESHOLD,
                      F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, I_COMP_START,
                      I_DEPTH, I_FEATURE, I_LEFT, I_LEVEL_ROW, I_N, I_N_COMP, I_N_PRIMARY,
                      I_N_SUR, I_PARENT, I_RIGHT, I_SUR_START, S_ADJ, S_AGREE, S_COUNT,
                      S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT, S_THRESHOLD, Tables, _N_FLOAT)
from .tree import Tree
                           # with a feature present (missing values)


@jit(inline="always")
def _side_of(n_left, n_right):
    """The majority side of a split sending n_left cases left and n_right right."""
    if n_left > n_right:
        return 1
    return -1 if n_left == n_right else 0


@jit(borrowed=True)
def _majority_side(n_cases, left, right, out):
    """Each node's majority side into ``out`` (int32): 1 when more learning cases went
    left, 0 right, -1 as many each way; 0 at a leaf (``left`` < 0). ``n_cases`` int64,
    ``left`` and ``right`` int32, all contiguous (one compiled pass: a small fit's NumPy
    version made seven calls)."""
    for t in range(left.shape[0]):
        # 0 at a leaf
        out[t] = _side_of(n_cases[left[t]], n_cases[right[t]]) if left[t] >= 0 else 0


@jit(borrowed=True)
def _routing_nodes(inode, node):
    """The held-out descent's node table (:class:`cartjit.engine.predict.Routing`'s ``node``)
    from the grown int32 node table, in one pass: each node's level-set row, its
    majority side (:func:`_majority_side`), its first surrogate row (0 without
    surrogates) and its number of surrogates."""
    for t in range(inode.shape[0]):
        node[t, R_LEVEL_ROW] = inode[t, I_LEVEL_ROW]
        lt = inode[t, I_LEFT]
        node[t, R_MAJORITY] = (_side_of(inode[lt, I_N], inode[inode[t, I_RIGHT], I_N])
                               if lt >= 0 else 0)
        n_sur = inode[t, I_N_SUR]
        node[t, R_SUR_START] = inode[t, I_SUR_START] if n_sur > 0 else 0
        node[t, R_N_SUR] = n_sur


def routing_nodes(inode):
    """:func:`_routing_nodes`'s int64 table (n_nodes, 4) of the grown nodes ``inode``
    (contiguous): a fold tree's routing without assembling its tree."""
    node = np.empty((inode.shape[0], 4), dtype=np.int64)
    _routing_nodes(inode, node)
    return node


class Grown(NamedTuple):
    """The grown tree's node tables, trimmed to its nodes (views, see :func:`grow`)."""

    inode: np.ndarray
    fnode: np.ndarray
    value: np.ndarray
    level_sets: np.ndarray  # uint64 (m, 2, n_words) the subset splits' level sets
    tables: Tables          # surrogates and competitors (rows trimmed)

    @property
    def n_nodes(self):
        return self.inode.shape[0]

    @property
    def weight(self):
        """Weighted number of cases of each node (a view)."""
        return self.fnode[:, F_WEIGHT]

    @property
    def impurity(self):
        """i(t) of each node as computed (may be a rounding below 0; a view)."""
        return self.fnode[:, F_IMPURITY]

    @property
    def improvement(self):
        """Δi of each node's split, 0 at leaves (a copy)."""
        return self.fnode[:, F_IMPROVEMENT].copy()


def assemble_tree(holder, risk, label):
    """The :class:`cartjit.engine.tree.Tree` of the :class:`Grown` tables in ``holder`` (a
    list of one, emptied here) with ``risk`` and ``label`` (``alpha`` is NaN until the
    pruning sequence is computed); no array is a view of the over-allocated tables.

    The competitor and surrogate tables are copied first, then the node tables, each
    grown table freed as soon as its columns are copied, so that the new columns take
    memory the process has just given back (memory never touched before costs far more
    on the virtual machines we measure on, docs/design.md) and the old and new tables
    never all coexist. ``holder`` must hold the only reference to the grown tables for
    that. Columns of one type are copied together (a small fit is mostly such calls).
    """
    inode, fnode, value_in, level_sets, tb = holder.pop()
    sur_i, sur_f, comp_i, comp_f, _ = tb
    del tb
    n = inode.shape[0]
    n_sur, n_comp = sur_i.shape[0], comp_i.shape[0]
    c_count = comp_i[:, C_COUNT].astype(np.int64)
    c_int = np.ascontiguousarray(comp_i[:, [C_FEATURE, C_LEVEL_ROW]].T, dtype=np.int32)
    del comp_i
    c_float = np.ascontiguousarray(comp_f.T)
    del comp_f
    s_count = sur_i[:, S_COUNT].astype(np.int64)
    s_int = np.ascontiguousarray(sur_i[:, [S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT]].T,
                                 dtype=np.int32)
    del sur_i
    s_float = np.ascontiguousarray(sur_f.T)
    del sur_f
    ints = np.ascontiguousarray(inode.T)
    del inode
    n_cases, n_primary = ints[[I_N, I_N_PRIMARY]].astype(np.int64)
    left, n_surrogates, n_competitors = ints[I_LEFT], ints[I_N_SUR], ints[I_N_COMP]
    # the row of n (copied to n_cases) takes each node's majority side
    _majority_side(n_cases, left, ints[I_RIGHT], ints[I_N])
    np.copyto(n_primary, 0, where=left < 0)
    for row, count, any_rows in ((I_SUR_START, n_surrogates, n_sur > 0),
                                 (I_COMP_START, n_competitors, n_comp > 0)):
        if any_rows:
            np.copyto(ints[row], 0, where=count <= 0)
        else:
            ints[row] = 0
    floats = np.empty((_N_FLOAT + 1, n), dtype=np.float64)
    np.copyto(floats[:_N_FLOAT], fnode.T)
    del fnode
    np.maximum(floats[F_IMPURITY], 0.0, out=floats[F_IMPURITY])
    floats[_N_FLOAT] = np.nan
    value = value_in.copy()
    del value_in
    return Tree(
        feature=ints[I_FEATURE],
        threshold=floats[F_THRESHOLD],
        left=left,
        right=ints[I_RIGHT],
        parent=ints[I_PARENT],
        depth=ints[I_DEPTH],
        n_node_samples=n_cases,
        weighted_n_node_samples=floats[F_WEIGHT],
        value=value,
        impurity=floats[F_IMPURITY],
        risk=risk,
        label=label,
        alpha=floats[_N_FLOAT],
        improvement=floats[F_IMPROVEMENT],
        majority_left=ints[I_N],
        level_row=ints[I_LEVEL_ROW],
        level_sets=level_sets.copy(),
        n_primary=n_primary,
        surrogate_start=ints[I_SUR_START],
        n_surrogates=n_surrogates,
        competitor_start=ints[I_COMP_START],
        n_competitors=n_competitors,
        surrogate_feature=s_int[0],
        surrogate_threshold=s_float[S_THRESHOLD],
        surrogate_level_row=s_int[1],
        surrogate_low_left=s_int[2],
        surrogate_agree=s_float[S_AGREE],
        surrogate_adj=s_float[S_ADJ],
        surrogate_count=s_count,
        competitor_feature=c_int[0],
        competitor_threshold=c_float[C_THRESHOLD],
        competitor_level_row=c_int[1],
        competitor_improvement=c_float[C_IMPROVEMENT],
        competitor_count=c_count,
    )


def _grown(nodes, level_sets, tables, n_nodes, n_rows):
    """:func:`grow`'s result from its tables. Views of the first n_nodes rows:
    assemble_tree copies what it keeps and frees each over-allocated table as it goes, so
    they are never duplicated whole."""
    n_sur, n_comp = int(tables.rows[0]), int(tables.rows[1])
    return Grown(nodes.inode[:n_nodes], nodes.fnode[:n_nodes], nodes.value[:n_nodes],
                 level_sets[:n_rows],
                 Tables(tables.sur_i[:n_sur], tables.sur_f[:n_sur], tables.comp_i[:n_comp],
                        tables.comp_f[:n_comp], tables.rows))
