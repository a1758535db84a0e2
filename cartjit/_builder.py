"""Growing T_max: split level by level on the presorted keys, never sorting again.

The keys come from :func:`cartjit._presort.presort`: for every feature, the cases in
increasing order of that feature. A node owns the same position range ``[start, end)``
of every row of keys, holding its cases in increasing order of that row's feature.

Growing (:func:`grow`) proceeds one depth level at a time over the *frontier*, the nodes
of the current depth that may still split. Each level runs four steps, and every kernel
below names the step it implements:

1. **search** (:func:`_search`) — every (node, feature) pair of the frontier is scanned
   independently for its best split (:mod:`cartjit._splitter`);
2. **choose** (:func:`_choose`) — per node, the best feature is chosen in feature order
   with the tie tolerance, the stopping rules of docs/maths.md §2 decide between split
   and leaf, the split is recorded, and then its cases are marked left or right
   (:func:`_mark_sides`);
3. **children** (:func:`_children`) — the children are written to the node tables (ids
   in breadth-first order, so children follow parents and ``right == left + 1``) with
   their class counts or moments (read from the split feature's segment, which is
   already split at the split position); those that may split form the next frontier;
4. **partition** (:func:`_partition`) — for the nodes with a child in the next
   frontier, every other feature's segment is *stably partitioned* into the cases going
   left and right, so every child segment is again sorted. Splits into two leaves skip
   this step.

Steps 1, 3 and 4, and in step 2 the choice (not the marks) and the ranking of
competitors (:func:`_pick_competitors`), are cut into ``n_threads`` chunks of
independent work, each with its own scratch buffer, launched on Numba's threads
(:mod:`cartjit._team`; a thread pool where the threading layer does not allow it): the
kernels are compiled with ``nogil=True``. The searches and the partition share their
(node, feature) pairs out by feature as the chunks go (:func:`_take_block`). Serial
kernels driven from Python compile several times faster than one
``parallel=True`` grower (a cold start is a cost users pay, docs/design.md), and a few
kernel calls per level cost microseconds next to the level's work. Steps 1 and 2 run on
at most ``SEARCH_BATCH`` frontier nodes at a time. The node tables start at their bound
(2 n - 1 rows, up to ``PREALLOC_ROWS``) and grow in place by a quarter past it. The
result never depends on the number of threads.

What travels together through the kernels is bundled in NamedTuples, which Numba takes
as arguments: :class:`cartjit._splitter.Targets` (labels or responses, weights, class
factors, criterion, label packing), :class:`Nodes` (the node tables), :class:`Frontier`
(the nodes being split), :class:`Rules` (the stopping rules and search settings),
:class:`Splits` (each frontier node's chosen split), :class:`Children`, :class:`Pairs`
(per (node, feature) results) and :class:`Work` (per-thread buffers).

For classification the keys carry the class labels (``case << shift | class``, see
:func:`grow`), so ``key >> shift`` is the case wherever a row of X, a weight or a mark
is looked up.

The same kernels grow classification trees (``criterion`` < ``SQUARED_ERROR``, labels in
``y_class``) and regression trees (``y_reg``), so one compiled signature serves both,
except step 1 and the serial driver: they take scan marks (:func:`search_marks`), so
that a fit compiles only the scans it can reach.
Case indices refer to rows of the full arrays ``X``, ``y_*`` and ``w``; a subset of cases
(a cross-validation fold) is grown by passing only its keys
(:func:`cartjit._presort.subset_keys`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._config import jit
from ._criteria import (ENTROPY, GINI, SQUARED_ERROR, impurity_from_counts, tie_tolerance,
                        xlogx_table)
from . import _config
from ._predict import R_LEVEL_ROW, R_MAJORITY, R_N_SUR, R_SUR_START, _level_side
from ._presort import PARALLEL_MIN_KEYS, as_kernel_array, chunk_pool, run_chunks
from ._simd import LANES, compress_partition, prefetch
from ._splitter import (_AHEAD, EQUAL_FACTORS_RTOL, NEAR_TIE, Segment, Targets,
                        _precise_reg_delta,
                        best_split_class_runs, best_split_classification,
                        best_split_gini_runs, best_split_regression,
                        best_split_regression_unit, class_counts, equal_factors,
                        threshold_between)
from ._subsets import (BITSET_LEVELS, CODE, NCASE, SCAN_CASES, SIDE,
                       best_subset_classification, best_subset_regression,
                       float_scratch_size, int_scratch_size, level_run_end,
                       subset_regression_scan)
from ._surrogates import (LEVEL_LEFT, LEVEL_NONE, LEVEL_RIGHT, MIN_ADJ, MARK_PACK,
                          categorical_surrogate, ordered_surrogate)
from ._team import next_unit
from ._tree import Tree

__all__ = ["Grown", "Nodes", "Frontier", "Children", "Rules", "Splits", "Pairs", "Work",
           "assemble_tree", "grow", "label_bits"]

#: Frontier nodes searched at once: bounds the per-(node, feature) result arrays
#: (16 bytes each) of the widest levels.
SEARCH_BATCH = 4096
#: The splits are chosen and the competitors ranked in chunks from this many nodes in a
#: batch; a smaller batch is one call (a fraction of a microsecond of work a node: less
#: than handing chunks to the threads costs).
STEP2_MIN_NODES = 256

# Columns of the integer and float node tables (private to this module: the tree leaves
# it through assemble_tree).
I_FEATURE, I_LEFT, I_RIGHT, I_PARENT, I_DEPTH, I_N, I_LEVEL_ROW = 0, 1, 2, 3, 4, 5, 6
I_SUR_START, I_N_SUR, I_COMP_START, I_N_COMP, I_N_PRIMARY = 7, 8, 9, 10, 11
F_THRESHOLD, F_WEIGHT, F_IMPURITY, F_IMPROVEMENT = 0, 1, 2, 3
_N_INT = 12
_N_FLOAT = 4
# Columns of the surrogate and competitor tables.
S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT, S_COUNT = 0, 1, 2, 3
S_THRESHOLD, S_AGREE, S_ADJ = 0, 1, 2
C_FEATURE, C_LEVEL_ROW, C_COUNT = 0, 1, 2
C_THRESHOLD, C_IMPROVEMENT = 0, 1
#: Marks of a case at a split (``Work.goes_left``): right, left, not sent by the split.
RIGHT, LEFT, MISSING = 0, 1, 2
#: Surrogate agreements (fractions) closer than this are tied: feature order decides.
RANK_TIE = 1e-12


# --------------------------------------------------------------------------- records

class Nodes(NamedTuple):
    """The node tables, one row per node, over-allocated while growing."""

    inode: np.ndarray   # int32 (cap, 12): feature, left, right, parent, depth, n cases,
                        # row of the level sets (-1: not a subset split), first row and
                        # number of surrogates and of competitors, cases with the split
                        # feature present
    fnode: np.ndarray   # float64 (cap, 4): threshold, weight, impurity, Δi of the split
    value: np.ndarray   # float64 (cap, J): class counts N_j(t), or (cap, 1): the mean


class Frontier(NamedTuple):
    """The nodes of one level that may split, with their position ranges and moments."""

    node: np.ndarray    # int64 node ids
    start: np.ndarray   # int64 first position of each node's segment
    end: np.ndarray     # int64 one past its last position
    mean: np.ndarray    # float64 ȳ(t) (regression; 0 for classification)
    sum: np.ndarray     # float64 Σ w (y - ȳ(t)) (regression; 0 for classification)

    def rows(self, which):
        """The frontier restricted to ``which`` (a slice or a boolean mask)."""
        return Frontier(*(a[which] for a in self))


class Children(NamedTuple):
    """The children written by step 3: a frontier of every child, and which may split."""

    node: np.ndarray
    start: np.ndarray
    end: np.ndarray
    mean: np.ndarray
    sum: np.ndarray
    ok: np.ndarray      # uint8: 1 when the child may split

    def frontier(self):
        """The children that may split: the next level's frontier."""
        ok = self.ok.astype(bool)
        return Frontier(self.node[ok], self.start[ok], self.end[ok], self.mean[ok],
                        self.sum[ok])


class Rules(NamedTuple):
    """Stopping rules and search settings of one growth."""

    max_depth: int                 # < 0: no limit
    min_samples_split: int
    min_samples_leaf: int
    min_impurity_decrease: float   # on p(t) Δi
    q_root: float                  # Q(root) (or W(root)): p(t) = Q(t) / q_root
    simd: bool                     # 16-key blocks (cartjit._simd)
    max_exhaustive: int            # subset search over all subsets up to this many levels
    max_surrogate: int             # surrogate splits kept per node
    use_surrogate: int             # 0, 1, 2: how cases missing the split feature go down
    surrogate_style: int           # 0, 1: the total of the agreement
    max_competitor: int            # competitor splits kept per node


class Splits(NamedTuple):
    """Step 2's choice for each frontier node of a level."""

    feat: np.ndarray        # int64 split feature, -1 when the node stays a leaf
    pos: np.ndarray         # int64 split position (the left child is [start, pos))
    child_base: np.ndarray  # int64 id of the left child
    stop: np.ndarray        # int64 end of the right child [pos, stop) (< end when cases
                            # stay in the node)
    w_left: np.ndarray      # float64 weight the split itself sends left (missing values)
    w_right: np.ndarray     # float64 ... and right
    tie_left: np.ndarray    # int64 1: rpart numbers the left child 2k+1 (its mean class
                            # number, or mean response, is not the smaller); decides
                            # exactly tied categorical surrogates


class Tables(NamedTuple):
    """The surrogate and competitor tables (missing values), grown like the node tables."""

    sur_i: np.ndarray    # int64 (cap, 4): feature, level-set row, low side left, cases routed
    sur_f: np.ndarray    # float64 (cap, 3): threshold, agreement, adjusted agreement
    comp_i: np.ndarray   # int64 (cap, 3): feature, level-set row, cases present
    comp_f: np.ndarray   # float64 (cap, 2): threshold, improvement
    rows: np.ndarray     # int64 (3,): rows used of sur_*, comp_* and the level sets


class Pairs(NamedTuple):
    """Step 1's result for each (frontier node, feature) pair of a batch."""

    delta: np.ndarray   # float64 Δi of the pair's best split (-inf: none)
    pos: np.ndarray     # int64 its position (-1: none)
    present: np.ndarray  # int64 cases with the feature present (missing values only)
    # uint64 the left-going level codes of a subset split (bit c: code c), kept so that
    # recording the split needs no second search; empty when some categorical feature
    # has BITSET_LEVELS levels or more (then the pair is searched again)
    left_bits: np.ndarray
    # uint64 the level codes present among the pair's cases searched, kept with
    # left_bits (the right set is the present levels not in left_bits)
    level_bits: np.ndarray


class SurrogatePairs(NamedTuple):
    """The best surrogate split of each (split node, feature) pair of a batch, and the
    surrogates each split node keeps."""

    agree: np.ndarray      # float64 agreement (0: none)
    adj: np.ndarray        # float64 adjusted agreement
    pos: np.ndarray        # int64 position of the threshold in the feature's keys
                           # (ordered features; -1: none)
    low_left: np.ndarray   # int64 1: x <= threshold goes left; a categorical feature of
                           # at most SIDE_BITS levels: its sides (see _pack_sides)
    pick: np.ndarray       # int64 (rows * max_surrogate) the features kept by batch row j,
                           # best first, from j * max_surrogate; -1 after the last
    level_row: np.ndarray  # int64 (rows,) row j's first row of the level sets


class Work(NamedTuple):
    """Buffers of one growth: one row per thread where threads write."""

    scratch: np.ndarray    # float64 (n_threads, >= 3J) running class counts
    buffers: np.ndarray    # int32 (n_threads, n + 16) split candidates / partition side buffer
    goes_left: np.ndarray  # uint8 mark by case (+ 3 bytes of padding)
    no_ranks: np.ndarray   # int32 empty: the ranks of a feature without ties
    level_f: np.ndarray    # float64 (n_threads, ...) per-level statistics (subset splits)
    level_i: np.ndarray    # int64 (n_threads, 4 L_max) codes, cases, ranks, sides of levels
    present: np.ndarray    # float64 (n_threads, >= max(J, 3)) class counts of the cases
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
    """The held-out descent's node table (:class:`cartjit._predict.Routing`'s ``node``)
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
    """The :class:`cartjit._tree.Tree` of the :class:`Grown` tables in ``holder`` (a
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


# --------------------------------------------------------------------------- node statistics

@jit(borrowed=True)
def _class_node_stats(row, start, end, tg, counts):
    """Node statistics (steps 3 and the root): weighted class counts N_j(t) of a segment;
    returns how many classes occur.

    Parameters
    ----------
    row : int32 one row of keys; the node is ``row[start:end]``.
    start, end : the node's position range.
    tg : :class:`cartjit._splitter.Targets`.
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
    tg : :class:`cartjit._splitter.Targets`.
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
    tg : :class:`cartjit._splitter.Targets`.
    counts : float64 the node's row of the value table: N_j(t), or the mean.
    """
    if tg.criterion != SQUARED_ERROR:
        present = _class_node_stats(row, start, end, tg, counts)
        return (counts.sum(), impurity_from_counts(counts, tg.factor, tg.criterion), 0.0,
                0.0, present > 1)
    w_sum, mean, s_c, var, constant = _reg_node_stats(row, start, end, tg)
    counts[0] = mean
    return w_sum, var, mean, s_c, not constant


# --------------------------------------------------------------------------- level steps

@jit(inline="always")
def _block(m, c, n_chunks):
    """Rows ``[j0, j1)`` of chunk c when ``m`` rows are cut into ``n_chunks``
    consecutive blocks of nearly equal size. Loop over them as ``for j in range(j1)``,
    skipping ``j < j0``: a loop from 0 lets the compiler drop the checks for negative
    indices at every access by ``j`` (a loop from ``j0`` made step 2 half as slow
    again)."""
    return m * c // n_chunks, m * (c + 1) // n_chunks


#: Blocks of a feature's rows per chunk in a step whose chunks share the (row, feature)
#: pairs out as they go (:func:`_take_block`): enough for a fast chunk to take over a
#: slow one's share, few enough that a block is long.
BLOCKS_PER_CHUNK = 4

#: int64 slots per chunk in a step's counters (:func:`_take_block`): one cache line each.
COUNTER_STRIDE = 8


#: Cases per block of a level's search (:func:`_case_blocks`): each chunk searches its
#: features over one block of nodes before the next, so the responses of the block's
#: cases (a cache line each: cases are scattered over y) are read from memory by the
#: first of those features and from the core's cache by the others.
CASE_BLOCK = 8192


@jit
def _case_blocks(start, end, per_block):
    """Bounds of the blocks of a frontier's rows for :func:`_take_case_block`: rows
    ``[bounds[b], bounds[b + 1])``, consecutive rows holding about ``per_block`` cases
    together (a larger node alone)."""
    m = start.shape[0]
    bounds = np.empty(m + 1, dtype=np.int64)
    bounds[0] = 0
    n_blk = 0
    held = 0
    for j in range(m):
        if held >= per_block:
            n_blk += 1
            bounds[n_blk] = j
            held = 0
        held += end[j] - start[j]
    n_blk += 1
    bounds[n_blk] = m
    return bounds[:n_blk + 1]


@jit
def step_counters(n_chunks):
    """The counters of one step shared out by :func:`_take_block` (zero; a kernel, so
    that the one-thread driver makes them too)."""
    return np.zeros(max(1, n_chunks) * COUNTER_STRIDE, dtype=np.int64)


@jit(inline="always")
def _take_block(counters, c, n_chunks, p, n_rows):
    """The next block of (row, feature) pairs for chunk c of a step whose chunks share
    the pairs out as they go: ``(f, j0, j1)``, rows ``[j0, j1)`` of feature f, or
    ``(-1, 0, 0)`` when none is left.

    Feature f belongs to chunk f mod n_chunks, and each feature's rows are cut into
    about :data:`BLOCKS_PER_CHUNK` × n_chunks consecutive blocks. A chunk takes the
    blocks of its own features first, then those left of the other chunks' (one counter
    each, ``counters[k * COUNTER_STRIDE]``, :func:`cartjit._team.next_unit`): a chunk on
    a slower core leaves some of its blocks to the others instead of holding up the
    step, and otherwise the searches and partitions of a feature run on the same thread
    level after level, so its keys stay in that core's caches (when the two cores of a
    virtual machine sit on different core complexes, a cache line written by one and
    read by the other crosses between them)."""
    n_blk = max(1, min(n_rows, BLOCKS_PER_CHUNK * n_chunks))
    own, n_feat, u = _next_own_unit(counters, c, n_chunks, p, n_blk)
    if u < 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    fi = u // n_blk
    b = u - fi * n_blk
    return own + fi * n_chunks, n_rows * b // n_blk, n_rows * (b + 1) // n_blk


@jit(inline="always")
def _take_case_block(counters, c, n_chunks, p, bounds):
    """:func:`_take_block` over the blocks of rows ``bounds`` (:func:`_case_blocks`),
    block by block: a chunk takes each of its own features on a block before the next
    block (then, as there, the blocks left of the other chunks' features)."""
    n_blk = bounds.shape[0] - 1
    own, n_feat, u = _next_own_unit(counters, c, n_chunks, p, n_blk)
    if u < 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    b = u // n_feat
    fi = u - b * n_feat
    return own + fi * n_chunks, bounds[b], bounds[b + 1]


@jit(inline="always")
def _next_own_unit(counters, c, n_chunks, p, n_blk):
    """The next unit of :func:`_take_block` or :func:`_take_case_block` for chunk c,
    ``n_blk`` blocks a feature: ``(owner, its number of features, unit)``, the owner
    the chunk whose features the unit is of (c's own first), or ``(-1, 0, -1)``."""
    for k in range(n_chunks):
        own = c + k
        if own >= n_chunks:
            own -= n_chunks
        n_feat = (p - own + n_chunks - 1) // n_chunks
        u = next_unit(counters[own * COUNTER_STRIDE:], n_feat * n_blk)
        if u >= 0:
            return np.int64(own), np.int64(n_feat), u
    return np.int64(-1), np.int64(0), np.int64(-1)


@jit(inline="always")
def _chunk_walk(f, p, c, n_chunks):
    """Feature-by-feature walks of a level's (node, feature) pairs ``k = t * p + f``,
    chunk c taking those with k ≡ c (mod n_chunks): the first node index t of feature
    ``f`` in chunk c (``n_chunks`` when there is none) and the step between them."""
    step = 1
    while (step * p) % n_chunks != 0:
        step += 1
    t = 0
    while t < n_chunks and (t * p + f) % n_chunks != c:
        t += 1
    return t, step


@jit(borrowed=True)
def _search(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
            n_chunks, reg, cls, gini, runs):
    """Step 1, search: the best split of every (frontier node, feature) pair, shared out
    as the chunks go, one feature on a block of nodes at a time, the chunk's features
    on one block before the next (:func:`_take_case_block`; ``units`` the step's
    counters, :func:`step_counters`; ``bounds`` the blocks, :func:`_case_blocks`).

    Classification scans features without ties by runs of one class (see
    :func:`cartjit._splitter.best_split_classification`, with this chunk's row of
    ``work.buffers`` for the candidates); features with ties, and twoing without
    labels in the keys, case by case. The common case (Gini, unit weights, one factor, labels in
    the keys, no ties) runs :func:`cartjit._splitter.best_split_gini_runs`; the other
    pairs with labels in the keys and no ties
    :func:`cartjit._splitter.best_split_class_runs` (entropy when its table of
    k log2 k is there: unit or integer weights); regression with unit weights and
    no ties :func:`cartjit._splitter.best_split_regression_unit`, or on a segment of
    :data:`GATHER_MIN` cases or more the same scan on the responses gathered into this
    chunk's row of ``gathered`` (:func:`_unit_scan_gathered`); every other pair the
    general functions.

    Parameters
    ----------
    ps : :class:`cartjit._presort.Presorted` keys, ranks and rank rows.
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`.
    tg : :class:`cartjit._splitter.Targets`.
    rules : :class:`Rules`.
    work : :class:`Work`.
    pairs : :class:`Pairs` output, pair k = (node k // p, feature k % p).
    units : the step's counters (:func:`step_counters`).
    bounds : int64 the blocks of the batch's rows (:func:`_case_blocks`).
    gathered : float64 (n_chunks, 2 m + :data:`_SCAN_SKIP`) scratch of
        :func:`_unit_scan_gathered` for segments of up to m cases, or ``None``.
    iota : int32 0, 1, ..., m - 1, or ``None``.
    c, n_chunks : this chunk (its scratch, its own features) and the number of chunks.
    reg, cls, gini, runs : the scan marks of :func:`_ordered_best`, constants of the
        caller (:func:`search_marks`): compiled once for each set of marks.
    """
    keys = ps.keys
    ranks = ps.ranks
    rank_row = ps.rank_row
    fnode = nodes.fnode
    value = nodes.value
    p = keys.shape[0]
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
            d, pos = _ordered_best(seg, tg, rules, value[node], fnode[node, F_IMPURITY],
                                   fr.mean[j], fnode[node, F_WEIGHT], fr.sum[j], tied,
                                   scratch, cand, gathered, c, iota, reg, cls, gini, runs)
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
    _search(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
            n_chunks, True, None, None, None)


@jit(borrowed=True)
def _search_gini(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
                 n_chunks):
    """:func:`_search` for Gini where every node takes the lean scan or the general one
    (:func:`search_marks`)."""
    _search(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
            n_chunks, None, True, True, None)


@jit(borrowed=True)
def _search_runs(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
                 n_chunks):
    """:func:`_search` for classification that never takes the lean Gini scan."""
    _search(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
            n_chunks, None, True, None, True)


@jit(borrowed=True)
def _search_classification(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered,
                           iota, c, n_chunks):
    """:func:`_search` for classification, every scan."""
    _search(ps, fr, nodes, tg, rules, work, pairs, units, bounds, gathered, iota, c,
            n_chunks, None, True, True, True)


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
    the scan by runs of the other criteria (:func:`cartjit._splitter.best_split_class_runs`)
    by those with labels in the keys, and by Gini there only at a node whose classes
    present do not share one factor (:func:`cartjit._splitter.equal_factors`). That
    cannot happen when every factor is > 0 and their spread is within
    ``EQUAL_FACTORS_RTOL`` of the smallest: a node's spread is at most that, and its
    largest factor at least the smallest (the float operations are monotone, so the
    bound holds as computed).
    """
    if tg.criterion == SQUARED_ERROR:
        return True, None, None, None
    if tg.criterion != GINI or not tg.unit_weights or tg.mask == 0:
        return None, True, None, True
    f = tg.factor.tolist()  # (a list: a few µs less for a small fit)
    # every factor > 0 (none 0, as for a class absent from the cases, none NaN): then
    # min and max do not depend on the order, and an infinite one fails the bound
    if all(v > 0.0 for v in f) and max(f) - min(f) <= EQUAL_FACTORS_RTOL * min(f):
        return None, True, True, None
    return None, True, True, True


# Inlined where it is called: a call between kernels with array arguments costs about
# as much as a small node's whole scan (docs/design.md), and trees grown to purity
# search millions of small (node, feature) pairs.
@jit(inline="always")
def _ordered_best(seg, tg, rules, total, imp, mean, w_total, s_total, tied, scratch, cand,
                  gathered, c, iota, reg, cls, gini, runs):
    """Step 1, one (node, ordered feature) pair: the best split of ``seg``; returns
    ``(Δi, pos)`` (see :func:`_search` for which scan serves which pair).

    Parameters
    ----------
    seg : :class:`cartjit._splitter.Segment` of the node's cases.
    tg, rules : :class:`cartjit._splitter.Targets`, :class:`Rules`.
    total : float64 (J,) class counts of the segment (classification).
    imp : impurity of the segment's cases.
    mean, w_total, s_total : their ȳ, W and Σ w (y - ȳ) (regression).
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


@jit(borrowed=True)
def _search_subsets(ps, fr, nodes, tg, rules, work, pairs, cat, c, n_chunks):
    """Step 1, search, categorical features: the best subset split of every (frontier
    node, categorical feature) pair in chunk c.

    A kernel of its own, run only when some feature is categorical, so that fits
    without categorical features never compile the subset search. The codes are read
    from ``ps.codes`` (uint16, half the cache footprint of their int32 row of
    ``ps.ranks``).

    Parameters
    ----------
    ps, fr, nodes, tg, rules, work : as :func:`_search`.
    pairs : :class:`Pairs` output; the pairs of categorical features are written.
    cat : int64 the categorical features.
    c, n_chunks : this chunk (pairs c, c + n_chunks, ... of the node × ``cat`` pairs).
    """
    p = ps.keys.shape[0]
    n_cat = cat.shape[0]
    n_fr = fr.node.shape[0]
    lm = work.level_i.shape[1] // 4
    # Feature by feature, with this chunk's scratch and the feature's rows taken once:
    # taking an array out of a record is an atomic reference count, which threads
    # taking the same array contend for, and small pairs cost little more than that.
    level_f = work.level_f[c]
    level_i = work.level_i[c]
    value = nodes.value
    fnode = nodes.fnode
    keep_bits = pairs.left_bits.shape[0] > 0
    for fi in range(n_cat):
        f = cat[fi]
        seg_keys = ps.keys[f]
        codes = ps.codes[ps.rank_row[f]]
        j, step = _chunk_walk(fi, n_cat, c, n_chunks)
        if j == n_chunks:
            continue
        while j < n_fr:
            start = fr.start[j]
            end = fr.end[j]
            k = j * p + f
            pos = np.int64(-1)
            d = -np.inf
            if end - start >= 2:
                node = fr.node[j]
                d, pos = _subset_pair(Segment(seg_keys, codes, start, end), tg, rules,
                                      value[node], fnode[node, F_IMPURITY], fr.mean[j],
                                      level_f, level_i, lm)
            pairs.delta[k] = d
            pairs.pos[k] = pos
            if pos >= 0 and keep_bits:
                pairs.left_bits[k], pairs.level_bits[k] = _side_bits(level_i, lm,
                                                                     end - start)
            j += step


@jit(inline="always")
def _subset_pair(seg, tg, rules, total, imp, mean, level_f, level_i, lm):
    """Step 1, one (node, categorical feature) pair: the best subset split of ``seg``;
    returns ``(Δi, pos)`` (``(-inf, -1)`` when none) and leaves its sides in
    ``level_i``.

    Parameters
    ----------
    seg : :class:`cartjit._splitter.Segment` of the cases searched (``ranks``: codes).
    tg, rules : :class:`cartjit._splitter.Targets`, :class:`Rules`.
    total : float64 (J,) class counts of those cases (classification).
    imp : their impurity.
    mean : their ȳ (regression).
    level_f, level_i, lm : this thread's level scratch and its block length.
    """
    if tg.criterion != SQUARED_ERROR:
        d, n_left = best_subset_classification(seg, tg, total, imp, rules.min_samples_leaf,
                                               rules.max_exhaustive, level_f, level_i, lm)
    else:
        d, n_left = best_subset_regression(seg, tg.y_reg, tg.w, tg.unit_weights, mean, imp,
                                           rules.min_samples_leaf, level_f, level_i, lm)
    if n_left < 0:
        return -np.inf, np.int64(-1)
    return d, seg.start + n_left


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
        _level_sets_of_pair(ps, f, node, fr.start[j], fr.end[j], fr.end[j], fr.mean[j],
                            fr.sum[j], nodes, tg, rules, pairs, j * p + f, work,
                            level_sets, lrow)
        _partition_split_feature(keys, fr.start[j], fr.end[j], tg.shift, codes, level_sets,
                                 lrow, work.goes_left, work.buffers[0])


@jit(borrowed=True)
def _level_sets_of_pair(ps, f, node, start, pend, end, mean, s_sum, nodes, tg, rules,
                        pairs, k, work, level_sets, row):
    """Step 2, a subset split (primary or competitor) of pair ``k``: write its level sets
    to row ``row``, from ``pairs.left_bits`` or, when the pairs keep no bitsets, by
    searching the pair again on its present cases ``[start, pend)`` (with the first
    thread's scratch: the callers are serial)."""
    keys = ps.keys[f]
    codes = ps.ranks[ps.rank_row[f]]
    lm = work.level_i.shape[1] // 4
    from_bits = pairs.left_bits.shape[0] > 0
    bits = np.uint64(0)
    if from_bits:
        bits = pairs.left_bits[k]
    else:
        _pair_best(ps, f, node, start, pend, end, mean, s_sum, nodes, tg, rules,
                   work.no_ranks, work.scratch[0], work.buffers[0], work.level_f[0],
                   work.level_i[0], lm, work.present[0])
    _write_level_sets(keys, start, pend, tg.shift, codes, from_bits, bits, work.level_i[0],
                      lm, level_sets, row)


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
def _write_level_sets(keys, start, end, shift, codes, from_bits, bits, level_i, lm,
                      level_sets, row):
    """Step 2, a subset split: write the level sets of row ``row``. A level goes left
    when its code's bit is set in ``bits`` (``from_bits``), or when the search left it
    in S in ``level_i``: ``keys[start:end]`` lists the cases grouped by level, levels in
    code order, so the k-th run of equal codes is present level k."""
    for side in range(2):
        for wd in range(level_sets.shape[2]):
            level_sets[row, side, wd] = 0
    ushift = np.uint64(shift)
    k = 0
    i = start
    while i < end:
        code = codes[np.uint64(keys[np.uint64(i)]) >> ushift]
        if from_bits:
            go = np.int64((bits >> np.uint64(code)) & np.uint64(1))
        else:
            go = level_i[SIDE * lm + k]
        level_sets[row, 1 - go, code >> 6] |= np.uint64(1) << np.uint64(code & 63)
        k += 1
        i = level_run_end(keys, codes, ushift, i, end, code)


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
    ps : :class:`cartjit._presort.Presorted` keys, codes and levels.
    fr : :class:`Frontier` of this batch.
    nodes : :class:`Nodes`; split nodes get feature, threshold and Δi.
    tg : :class:`cartjit._splitter.Targets`.
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


@jit(borrowed=True)
def _mark_sides(ps, fr, splits, shift, goes_left):
    """Step 2, after :func:`_choose` (serial): mark the cases of each node split on an
    ordered feature, 1 for the left child's and 0 for the right's. One thread: the
    marks of a level's interleaved cases share cache lines, which two threads marking
    at once would pass back and forth.

    Parameters
    ----------
    ps : :class:`cartjit._presort.Presorted` keys and levels.
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
    ps : :class:`cartjit._presort.Presorted` (the levels of the features).
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
    tg : :class:`cartjit._splitter.Targets`.
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
    (:func:`cartjit._simd.compress_partition`; ``goes_left`` is padded for it).

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


# --------------------------------------------------------------------------- missing values
#
# With a missing value in X, or surrogates asked for, a level runs these steps instead
# (docs/maths.md §8): search_mv replaces steps 1 (every feature); mark_mv, surrogates,
# pick_surrogates, number_surrogates and send_missing complete step 2; partition_mv
# (three-way, every feature) runs before step 3.

@jit(borrowed=True)
def _missing_bits(X, out, c, n_chunks):
    """Set-up (missing values): ``out[f, case >> 3]`` bit ``case & 7`` set when the case
    misses feature f; ``out`` uint8 (p, ceil(n / 8)) zeros. Chunk c of n_chunks takes
    the c-th of as many ranges of whole bytes (their cases, rows of X), the last one
    the cases past the last whole byte too: the chunks write different bytes.

    Finding a node's missing tail (:func:`_present_end`) reads one bit per look-up from
    the feature's own small row instead of a strided, rarely cached row of X: those
    look-ups took about a tenth of the CPU time of a one-thread fit of 10^5 rows with
    10 % of the cells missing.
    """
    n, p = X.shape
    # A whole byte at a time: its 8 cases' flags of a feature (8 neighbouring rows of X)
    # are packed in a register, without a branch, and stored once (a third of the time
    # of a branch and a read-modify-write per cell).
    n_full = n >> 3
    for byte in range(n_full * c // n_chunks, n_full * (c + 1) // n_chunks):
        base = byte * 8
        for f in range(p):
            bits = np.uint8(0)
            for k in range(8):
                bits |= np.uint8(np.isnan(X[base + k, f])) << np.uint8(k)
            out[f, byte] = bits
    if c == n_chunks - 1:
        for case in range(n_full * 8, n):
            for f in range(p):
                if np.isnan(X[case, f]):
                    out[f, case >> 3] |= np.uint8(1 << (case & 7))


@jit(borrowed=True)
def missing_tally(X, per_column):
    """Set-up (missing values): adds to ``per_column[f]`` (int64, p) the cases missing
    feature f; returns the number of cases missing every feature. One pass over the
    rows of X (for :func:`cartjit._encoding.warn_missing`)."""
    n, p = X.shape
    n_every = 0
    for case in range(n):
        k = 0
        for f in range(p):
            m = np.isnan(X[case, f])
            per_column[f] += m
            k += m
        n_every += k == p
    return n_every


@jit(inline="always")
def _is_missing(bits, key, shift):
    """Whether the case of ``key`` misses the feature of the bitmap row ``bits``."""
    case = key >> shift
    return (bits[case >> 3] >> (case & 7)) & 1 != 0


@jit(inline="always")
def _present_end(row, start, end, shift, bits):
    """End of the node's cases with the feature present: missing values sort last, so
    they end the segment ``row[start:end]``; ``bits`` is the feature's row of
    :func:`_missing_bits`. The look-ups are independent (predicted to go on), so they
    overlap."""
    i = end
    while i > start and _is_missing(bits, row[i - 1], shift):
        i -= 1
    return i


@jit
def _pair_best(ps, f, node, start, pend, end, mean, s_sum, nodes, tg, rules, no_ranks,
               scratch, cand, level_f, level_i, lm, counts):
    """Step 1 (missing values), one (node, feature) pair: the best split of the node's
    cases with ``f`` present, ``[start, pend)`` of its keys; returns ``(Δ, pos)`` with
    Δ = Δi of those cases × their share Q_present(t) / Q(t) of the node (rpart's
    weighting of the goodness of split). Leaves a subset split's sides in ``level_i``.
    With ``pend == end`` it is the plain search, and serves the subset splits of
    complete-data fits too (:func:`_level_sets_of_pair`); :func:`_present_best` does the
    work (:func:`_search_mv` inlines it).

    Parameters
    ----------
    ps : :class:`cartjit._presort.Presorted`.
    f, node : the feature and the node; start, pend, end its positions.
    mean, s_sum : ȳ(t) and Σ w (y - ȳ(t)) of the node (regression).
    nodes, tg, rules : as :func:`_search`.
    no_ranks : int32 empty array.
    scratch, cand, level_f, level_i, lm : this thread's scratch.
    counts : float64 (>= J,) scratch for the present cases' class counts.
    """
    tied = ps.rank_row[f] >= 0
    rk = ps.ranks[ps.rank_row[f]] if tied else no_ranks
    is_cat = ps.n_levels[f] > 0
    codes = ps.codes[ps.rank_row[f]] if is_cat else np.empty(0, dtype=np.uint16)
    return _present_best(ps.keys[f], rk, codes, is_cat, tied, node, start, pend, end,
                         mean, s_sum, nodes, tg, rules, scratch, cand, level_f, level_i, lm,
                         counts[:nodes.value.shape[1]])


#: Candidates per block of the scan of :func:`_gathered_best`.
_SCAN_SKIP = 64


@jit(inline="always")
def _gathered_proxy(s_left_at, i, w_node, s_c):
    """The scan's proxy at gathered position i as the fraction num / den of
    :func:`cartjit._splitter.best_split_regression_unit` (S_L² n_R + S_R² n_L over
    n_L n_R), with S_L and n_L."""
    s_left = s_left_at[i]
    w_left = float(i + np.uint64(1))
    w_right = w_node - w_left
    s_right = s_c - s_left
    return (s_left * s_left * w_right + s_right * s_right * w_left, w_left * w_right,
            s_left, w_left)


@jit(inline="always")
def _block_top(s_left_at, i0, i1, w_node, s_c, scale, best_den, hi_num, tops):
    """The scan of :func:`_gathered_scan`, one block of candidates ``[i0, i1)`` that has a
    near-tie or better: ``(m, num, den)`` when walking the block from the state
    (``best_den``, ``hi_num``) would end on candidate m by a clear gain, else
    ``(-1, 0, 0)``. ``tops`` is float64 scratch of :data:`_SCAN_SKIP` slots.

    The walk's state after a candidate that wins depends on that candidate only (a
    clear gain leaves the precise Δi to be computed when needed; a near-tie win leaves
    the same Δi computed at once). So the walk ends the block on m as a clear gain when
    m is a clear gain over the state at the block's start and over every candidate
    before it in the block (whichever of them was best when the walk reached m), and no
    candidate after m is a near-tie of m or better. m is guessed at the block's largest
    proxy num / den (quotients of numbers >= 0, so their bits compare as integers: a
    maximum the compiler vectorises); the three conditions are then tested with the
    walk's own products, so the result is the walk's, bit for bit. Along a rising
    stretch of the proxy, where a walk takes a branch at nearly every candidate, this
    takes four loops without branches.
    """
    n_blk = i1 - i0
    for k in range(n_blk):
        num, den, _, _ = _gathered_proxy(s_left_at, i0 + k, w_node, s_c)
        tops[k] = num / den
    bits = tops[:n_blk].view(np.int64)
    top = bits[0]
    for k in range(n_blk):
        top = max(top, bits[k])
    k = np.uint64(0)
    while bits[k] != top:
        k += np.uint64(1)
    m = i0 + k
    num_m, den_m, _, _ = _gathered_proxy(s_left_at, m, w_node, s_c)
    clear = num_m * best_den > hi_num * den_m
    for i in range(i0, m):
        num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
        clear &= num_m * den > (num + scale * den) * den_m
    lo_m = num_m - scale * den_m
    for i in range(m + np.uint64(1), i1):
        num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
        clear &= not num * den_m >= lo_m * den
    if not clear:
        return np.int64(-1), 0.0, 0.0
    return np.int64(m), num_m, den_m


#: Segments of at least this many cases take :func:`_unit_scan_gathered` (on segments
#: whose responses rise along the feature, AMD EPYC: 2.2 times as fast at 10^5 cases,
#: 1.2 at 5,000, 1.15 at 2,000, 1.08 at 1,000, alike at 500, slower below, where the
#: walk's set-up outweighs the scan).
GATHER_MIN = 1024
#: The largest segment :func:`_unit_scan_gathered` takes (its scratch: 2 values a case
#: and thread, 16 n bytes a thread for n cases); larger ones take the scan on the keys.
#: In effect every segment from GATHER_MIN up: at 10^7 cases a node's near-ties (in the
#: first levels, hundreds per feature on features without signal) each add up the
#: right side's responses again, from memory in the scan on the keys (y, 80 MB, read by
#: scattered cases) but from the gathered row here, which took a 10^7-row regression fit
#: from 141 to 67 s.
GATHER_MAX = 1 << 30


@jit
def _unit_scan_gathered(keys, start, end, tg, mean, s_total, imp, min_leaf, g_row, iota):
    """:func:`cartjit._splitter.best_split_regression_unit` on ``keys[start:end]``, the
    same ``(Δi, pos)`` bit for bit: one pass gathers the responses in the feature's
    order into ``g_row`` and forms the running Σ (y - ȳ) after each case by the scan's
    own additions in the scan's order; :func:`_gathered_walk` then takes the candidates
    in blocks without branches where the proxy rises (see :func:`_block_top`), and the
    precise Δi of the best is :func:`cartjit._splitter._precise_reg_delta` on the
    gathered responses (the same operations). ``g_row`` holds at least
    2 (end - start) + :data:`_SCAN_SKIP` values, ``iota`` 0 .. end - start - 1."""
    n = end - start
    nu = np.uint64(n)
    ys = g_row[:n]
    s_left_at = g_row[n:2 * n]
    y = tg.y_reg
    s_left = 0.0
    for k in range(nu):
        v = y[np.uint64(keys[np.uint64(start) + k])]
        ys[k] = v
        s_left += v - mean
        s_left_at[k] = s_left
    pos, best_sl, delta = _gathered_walk(n, mean, s_total, imp, tg, min_leaf, ys, s_left_at,
                                         iota, g_row[g_row.shape[0] - _SCAN_SKIP:])
    if pos < 0:
        return -np.inf, np.int64(-1)
    if np.isnan(delta):
        delta = _precise_reg_delta(iota, pos, n, ys, tg.w, tg.unit_weights, mean,
                                   float(pos), best_sl)
    return delta, np.int64(start) + pos


@jit(inline="always")
def _gathered_best(row, start, pend, w_total, tg, min_leaf, gathered, iota):
    """Step 1 (missing values, regression, unit weights, a feature without ties), one
    (node, feature) pair with cases missing the feature: what :func:`_present_best`
    computes on the present cases ``row[start:pend]`` (their moments as
    :func:`_reg_moments`, then the scan of
    :func:`cartjit._splitter.best_split_regression_unit`, Δ scaled by their share of the
    node), with the same operations in the same order, so the same bits.

    The second pass of the moments forms S_L at every position (the running Σ (y - ȳ)
    in the feature's order) exactly as the scan does; it keeps them in the second half
    of ``gathered``, so the scan reads them instead of adding up its own sum case after
    case, a chain of dependent additions. The first pass copies the responses, in the
    feature's order, to the first half, which the second pass and the precise Δi of
    near-ties read (through the identity keys ``iota``; the Δi by
    :func:`cartjit._splitter._precise_reg_delta`, which with unit weights does the same
    operations as the scan's inlined copy: a call, so no third inlined copy to compile).
    ``tg`` is :class:`cartjit._splitter.Targets` (unit weights). ``gathered`` holds at
    least 2 (pend - start) + :data:`_SCAN_SKIP` values: its last :data:`_SCAN_SKIP` are
    the scan's scratch.
    """
    n_present = pend - start
    ys = gathered[:n_present]
    s_left_at = gathered[n_present:2 * n_present]
    w_sum, mean, s_c, var = _gathered_moments(row, start, pend, tg.y_reg, ys, s_left_at)
    return _gathered_scan(start, n_present, w_sum, mean, s_c, var, w_total, tg, min_leaf,
                          ys, s_left_at, iota, gathered[gathered.shape[0] - _SCAN_SKIP:])


@jit(inline="always")
def _gathered_moments(row, start, pend, y, ys, s_left_at):
    """The moments of :func:`_gathered_best`'s present cases ``row[start:pend]``:
    ``(W, ȳ, Σ (y - ȳ), variance)`` as :func:`_reg_moments` (unit weights), with the
    responses copied to ``ys`` and the running Σ (y - ȳ) to ``s_left_at``."""
    nu = np.uint64(pend - start)
    ustart = np.uint64(start)
    zero = np.uint64(0)
    w_sum, s, constant = _sums_from(row, ustart, zero, nu, y, ys, 0.0, 0.0, True,
                                    y[np.uint64(row[ustart])])
    mean = s / w_sum
    s_c, ss_c = _centred_from(ys, s_left_at, zero, nu, mean, 0.0, 0.0)
    return w_sum, mean, s_c, _variance(w_sum, s_c, ss_c, constant)


@jit(inline="always")
def _sums_from(row, u0, k0, n, y, ys, w, s, constant, first):
    """The first pass of :func:`_gathered_moments` from position ``k0`` to ``n`` of the
    cases ``row[u0:]``, continuing the sums ``w``, ``s`` and ``constant``."""
    for k in range(k0, n):
        yi = y[np.uint64(row[u0 + k])]
        ys[k] = yi
        w += 1.0
        s += yi
        constant &= yi == first
    return w, s, constant


@jit(inline="always")
def _centred_from(ys, s_left_at, k0, n, mean, s_c, ss_c):
    """The second pass of :func:`_gathered_moments` from position ``k0`` to ``n``,
    continuing the sums ``s_c`` and ``ss_c``."""
    for k in range(k0, n):
        z = ys[k] - mean
        s_c += z
        ss_c += z * z
        s_left_at[k] = s_c
    return s_c, ss_c


@jit(inline="always")
def _variance(w_sum, s_c, ss_c, constant):
    """The variance of :func:`_reg_moments` from its centred sums (0 when all y are
    equal or rounding makes it negative)."""
    var = (ss_c - s_c * s_c / w_sum) / w_sum
    if var < 0.0 or constant:
        var = 0.0
    return var


@jit(inline="always")
def _gathered_moments_two(row, a0, a1, b0, b1, y, ys_a, sl_a, ys_b, sl_b):
    """:func:`_gathered_moments` of two pairs of one feature at once, ``row[a0:a1]`` and
    ``row[b0:b1]`` (two nodes: disjoint cases): each pair's chains of additions take
    the same operations in the same order as alone (the same bits), and the two
    chains, independent, overlap in the processor instead of waiting for one another.
    Returns the moments of the first pair, then of the second."""
    na = np.uint64(a1 - a0)
    nb = np.uint64(b1 - b0)
    both = min(na, nb)
    ua = np.uint64(a0)
    ub = np.uint64(b0)
    wa = 0.0
    wb = 0.0
    sa = 0.0
    sb = 0.0
    fa = y[np.uint64(row[ua])]
    fb = y[np.uint64(row[ub])]
    ca = True
    cb = True
    for k in range(both):
        ya = y[np.uint64(row[ua + k])]
        yb = y[np.uint64(row[ub + k])]
        ys_a[k] = ya
        ys_b[k] = yb
        wa += 1.0
        wb += 1.0
        sa += ya
        sb += yb
        ca &= ya == fa
        cb &= yb == fb
    wa, sa, ca = _sums_from(row, ua, both, na, y, ys_a, wa, sa, ca, fa)
    wb, sb, cb = _sums_from(row, ub, both, nb, y, ys_b, wb, sb, cb, fb)
    ma = sa / wa
    mb = sb / wb
    sca = 0.0
    scb = 0.0
    ssa = 0.0
    ssb = 0.0
    for k in range(both):
        za = ys_a[k] - ma
        zb = ys_b[k] - mb
        sca += za
        scb += zb
        ssa += za * za
        ssb += zb * zb
        sl_a[k] = sca
        sl_b[k] = scb
    sca, ssa = _centred_from(ys_a, sl_a, both, na, ma, sca, ssa)
    scb, ssb = _centred_from(ys_b, sl_b, both, nb, mb, scb, ssb)
    return (wa, ma, sca, _variance(wa, sca, ssa, ca),
            wb, mb, scb, _variance(wb, scb, ssb, cb))


@jit(inline="always")
def _gathered_scan(start, n_present, w_sum, mean, s_c, var, w_total, tg, min_leaf, ys,
                   s_left_at, iota, tops):
    """The scan of :func:`_gathered_best` on its pair's gathered responses ``ys`` and
    running sums ``s_left_at`` (:func:`_gathered_moments`): ``(Δ scaled by the present
    share of the node, position)``, or ``(-inf, -1)``; ``tops`` is the scratch of
    :func:`_block_top`."""
    pos, s_left, delta = _gathered_walk(n_present, mean, s_c, var, tg, min_leaf, ys,
                                        s_left_at, iota, tops)
    return _scaled(pos, delta, start, n_present, mean, s_left, w_sum, w_total, tg, ys, iota)


@jit(inline="always")
def _gathered_walk(n_present, mean, s_c, var, tg, min_leaf, ys, s_left_at, iota, tops):
    """The walk of :func:`_gathered_scan` over the candidates: ``(pos, S_L, Δi)`` of the
    best, position relative to the pair's first present case, Δi NaN when no near-tie
    needed it (:func:`_gathered_scan` then computes it, as the scan on the keys does);
    ``(-1, 0, NaN)`` when no position may split."""
    # the scan of best_split_regression_unit on positions 0 .. n_present - 1
    m = max(min_leaf, 1)
    lo = m
    hi = n_present - m
    if lo > hi:
        return np.int64(-1), 0.0, np.nan
    tol = tie_tolerance(var)
    w_node = float(n_present)
    scale = NEAR_TIE * w_node * var
    best_delta = np.nan
    best_pos = np.int64(-1)
    best_sl = 0.0
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf
    # Blocks of _SCAN_SKIP candidates: a candidate does something only when
    # num * best_den >= lo_num * den (a near-tie or better; hi_num >= lo_num), so a
    # block is first tested for one with the state at its start, in a loop without
    # branches (vectorised), and walked case by case only when it has one. The walk
    # computes the same num and den by the same operations: the same results.
    i0 = np.uint64(lo - 1)
    u_hi = np.uint64(hi)
    while i0 < u_hi:
        i1 = min(i0 + np.uint64(_SCAN_SKIP), u_hi)
        hit = False
        for i in range(i0, i1):
            num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
            hit |= num * best_den >= lo_num * den
        if not hit:
            i0 = i1
            continue
        m, num_m, den_m = _block_top(s_left_at, i0, i1, w_node, s_c, scale, best_den,
                                     hi_num, tops)
        if m >= 0:
            # the walk would end the block on m, by a clear gain: go there directly
            best_delta = np.nan
            best_den = den_m
            hi_num = num_m + scale * den_m
            lo_num = num_m - scale * den_m
            best_pos = np.int64(m) + 1
            best_sl = s_left_at[np.uint64(m)]
            i0 = i1
            continue
        for i in range(i0, i1):
            num, den, s_left, w_left = _gathered_proxy(s_left_at, i, w_node, s_c)
            if num * best_den > hi_num * den:
                best_delta = np.nan
            elif num * best_den >= lo_num * den:  # a near-tie
                pos = np.int64(i) + 1
                if np.isnan(best_delta):
                    best_delta = _precise_reg_delta(iota, best_pos, n_present, ys, tg.w,
                                                    tg.unit_weights, mean, float(best_pos),
                                                    best_sl)
                d = _precise_reg_delta(iota, pos, n_present, ys, tg.w, tg.unit_weights,
                                       mean, w_left, s_left)
                if not d > best_delta + tol:
                    continue
                best_delta = d
            else:
                continue
            best_den = den
            hi_num = num + scale * den
            lo_num = num - scale * den
            best_pos = np.int64(i) + 1
            best_sl = s_left
        i0 = i1
    return best_pos, best_sl, best_delta


@jit(inline="always")
def _scaled(pos, delta, start, n_present, mean, s_left, w_sum, w_total, tg, ys, iota):
    """The end of :func:`_gathered_scan` after :func:`_gathered_walk`: ``(Δ scaled by the
    present share, position)``, Δi computed here when still NaN."""
    if pos < 0:
        return -np.inf, np.int64(-1)
    if np.isnan(delta):
        delta = _precise_reg_delta(iota, pos, n_present, ys, tg.w, tg.unit_weights, mean,
                                   float(pos), s_left)
    return delta * (w_sum / w_total), pos + start


@jit(inline="always")
def _precise_two(ys_a, pa, na, ma, sla, ys_b, pb, nb, mb, slb):
    """:func:`cartjit._splitter._precise_reg_delta` (unit weights, gathered responses) of
    two pairs' best positions at once, ``pa`` of ``ys_a[:na]`` (node mean ``ma``, S_L
    ``sla``) and ``pb`` of ``ys_b[:nb]``: each right child's sums take the same
    operations in the same order as alone (a weight of 1 multiplies exactly), so the
    same bits, and the two chains of additions overlap. Returns both Δi."""
    ua = np.uint64(pa)
    ub = np.uint64(pb)
    la = np.uint64(na) - ua
    lb = np.uint64(nb) - ub
    both = min(la, lb)
    wa = 0.0
    wb = 0.0
    sa = 0.0
    sb = 0.0
    for k in range(both):
        wa += 1.0
        wb += 1.0
        sa += 1.0 * (ys_a[ua + k] - ma)
        sb += 1.0 * (ys_b[ub + k] - mb)
    for k in range(both, la):
        wa += 1.0
        sa += 1.0 * (ys_a[ua + k] - ma)
    for k in range(both, lb):
        wb += 1.0
        sb += 1.0 * (ys_b[ub + k] - mb)
    return (_delta_of_sums(float(pa), sla, wa, sa), _delta_of_sums(float(pb), slb, wb, sb))


@jit(inline="always")
def _delta_of_sums(w_left, s_left, w_right, s_right):
    """The closing formula of :func:`cartjit._splitter._precise_reg_delta`, operation for
    operation."""
    w_node = w_left + w_right
    s_node = s_left + s_right
    return (s_left * s_left / w_left + s_right * s_right / w_right
            - s_node * s_node / w_node) / w_node


@jit(inline="always")
def _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                        min_leaf, level_f, level_i, lm):
    """The end of :func:`_gathered_subset`: the subset scan of the ``n_lv`` levels' sums
    (:func:`cartjit._subsets.subset_regression_scan`, the variance from the centred sums
    as :func:`_variance` forms it), ``(Δ scaled by the present share, position)`` or
    ``(-inf, -1)``."""
    var = _variance(w_sum, s_c, ss_c, constant)
    d, n_left = subset_regression_scan(n_lv, n_present, var, min_leaf, level_f, level_i,
                                       lm)
    if n_left < 0:
        return -np.inf, np.int64(-1)
    return d * (w_sum / w_total), start + n_left


@jit(inline="always")
def _gathered_subset_small(row, codes, start, pend, w_total, min_leaf, y, gathered,
                           level_f, level_i, lm):
    """:func:`_gathered_subset` on a segment of at most
    :data:`cartjit._subsets.SCAN_CASES` cases, the same operations in the same order
    (the same bits), with no branch a case: a small node's levels have runs of a few
    cases, and the run-by-run loops mispredicted the end of each run, in both passes.

    The first pass reads every case's code (as :func:`cartjit._subsets._packed_level_scan`
    does): a change of code moves to the next level's slots, where each case writes the
    code and the position after it (so each slot ends with its run's end), and the
    case's level goes to the second half of ``gathered``. The second pass restarts a
    level's sums at its first case (0 + the case's terms, as the run-by-run loop adds
    them to 0) and writes the running sums to the level's slots at every case."""
    n_present = pend - start
    nu = np.uint64(n_present)
    ustart = np.uint64(start)
    ys = gathered[:n_present]
    run_of = gathered[n_present:2 * n_present]
    code_at = np.uint64(CODE * lm)
    end_at = np.uint64(NCASE * lm)
    first = y[np.uint64(row[ustart])]
    prev = codes[np.uint64(row[ustart])]
    w_sum = 0.0
    s = 0.0
    constant = True
    k = np.uint64(0)
    for q in range(nu):
        case = np.uint64(row[ustart + q])
        code = codes[case]
        yi = y[case]
        k += np.uint64(code != prev)
        ys[q] = yi
        w_sum += 1.0
        s += yi
        constant &= yi == first
        level_i[code_at + k] = code
        level_i[end_at + k] = np.int64(q) + 1
        run_of[q] = np.float64(k)
        prev = code
    n_lv = np.int64(k) + 1
    for r in range(n_lv - 1, 0, -1):  # run ends -> numbers of cases (backwards)
        level_i[NCASE * lm + r] -= level_i[NCASE * lm + r - 1]
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    w_run = 0.0
    s_run = 0.0
    last = -1.0
    for q in range(nu):
        z = ys[q] - mean
        s_c += z
        ss_c += z * z
        r = run_of[q]
        fresh = r != last
        w_run = (0.0 if fresh else w_run) + 1.0
        s_run = (0.0 if fresh else s_run) + z
        slot = np.uint64(2) * np.uint64(r)
        level_f[slot] = w_run
        level_f[slot + np.uint64(1)] = s_run
        last = r
    return _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                               min_leaf, level_f, level_i, lm)


@jit(inline="always")
def _gathered_subset(row, codes, start, pend, w_total, tg, min_leaf, gathered, level_f,
                     level_i, lm):
    """Step 1 (missing values, regression, unit weights, a categorical feature), one
    (node, feature) pair with cases missing the feature: what :func:`_present_best`
    computes on the present cases ``row[start:pend]`` (their moments as
    :func:`_reg_moments`, the levels' sums as
    :func:`cartjit._subsets._reg_level_stats`, then
    :func:`cartjit._subsets.subset_regression_scan`, Δ scaled by their share of the
    node), with the same operations in the same order, so the same bits; leaves the
    sides in ``level_i``.

    The segment comes grouped by level: the first pass finds each level's run by
    galloping over the codes (:func:`cartjit._subsets.level_run_end`) and copies the
    responses, in the segment's order, to ``gathered``; the second reads them from
    there for the centred moments of the cases and of each level at once. Two passes
    over the cases instead of three, and one of scattered reads instead of three.
    """
    y = tg.y_reg
    n_present = pend - start
    ys = gathered[:n_present]
    if n_present <= SCAN_CASES:
        return _gathered_subset_small(row, codes, start, pend, w_total, min_leaf, y,
                                      gathered, level_f, level_i, lm)
    ushift = np.uint64(0)
    w_sum = 0.0
    s = 0.0
    first = y[np.uint64(row[np.uint64(start)])]
    constant = True
    n_lv = 0
    i = start
    while i < pend:
        code = codes[np.uint64(row[np.uint64(i)])]
        run_end = level_run_end(row, codes, ushift, i, pend, code)
        for q in range(np.uint64(i), np.uint64(run_end)):
            yi = y[np.uint64(row[q])]
            ys[q - np.uint64(start)] = yi
            w_sum += 1.0
            s += yi
            constant &= yi == first
        level_i[CODE * lm + n_lv] = code
        level_i[NCASE * lm + n_lv] = run_end - i
        n_lv += 1
        i = run_end
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    q0 = np.uint64(0)
    for k in range(n_lv):
        q1 = q0 + np.uint64(level_i[NCASE * lm + k])
        w_run = 0.0
        s_run = 0.0
        for q in range(q0, q1):
            z = ys[q] - mean
            s_c += z
            ss_c += z * z
            w_run += 1.0
            s_run += z
        level_f[2 * k] = w_run
        level_f[2 * k + 1] = s_run
        q0 = q1
    return _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                               min_leaf, level_f, level_i, lm)


@jit(inline="always")
def _label_counts(row, lo, hi, tg, counts):
    """:func:`cartjit._splitter.class_counts` of ``row[lo:hi]`` into ``counts``: with two
    classes packed in the keys and unit weights, the class-1 count is the sum of the
    label bits, added in a register (a loop the compiler vectorises) instead of a
    read-modify-write of ``counts`` a case; the counts are whole numbers either way, so
    the same values."""
    if tg.mask != 0 and tg.unit_weights and counts.shape[0] == 2:
        n1 = np.int64(0)
        umask = np.uint32(tg.mask)
        for i in range(np.uint64(lo), np.uint64(hi)):
            n1 += np.int64(np.uint32(row[i]) & umask)
        counts[0] = np.float64(hi - lo - n1)
        counts[1] = np.float64(n1)
    else:
        class_counts(row, lo, hi, tg, counts)


# Inlined into _search_mv, which walks feature by feature with every array taken once:
# a call with this many array arguments costs about as much as a small pair's scan.
@jit(inline="always")
def _present_best(row, rk, codes, is_cat, tied, node, start, pend, end, mean, s_sum, nodes,
                  tg, rules, scratch, cand, level_f, level_i, lm, counts):
    """The work of :func:`_pair_best` on one feature's arrays: ``row`` its keys, ``rk``
    its ranks (empty when ``tied`` is false), ``codes`` its uint16 level codes when
    ``is_cat`` (the subset search reads them, as :func:`_search_subsets` does), ``counts``
    float64 (J,) scratch."""
    if pend - start < 2:
        return -np.inf, np.int64(-1)
    imp = nodes.fnode[node, F_IMPURITY]
    w_total = nodes.fnode[node, F_WEIGHT]
    total = nodes.value[node]
    is_class = tg.criterion != SQUARED_ERROR
    scale = 1.0
    if pend < end:
        if is_class:
            if tg.exact_sums and 2 * (end - pend) < end - start:
                # exact counts: the node's less the missing tail's
                _label_counts(row, pend, end, tg, counts)
                for cl in range(counts.shape[0]):
                    counts[cl] = total[cl] - counts[cl]
            else:
                _label_counts(row, start, pend, tg, counts)
            q_node = 0.0
            q_present = 0.0
            for cl in range(counts.shape[0]):
                q_node += tg.factor[cl] * total[cl]
                q_present += tg.factor[cl] * counts[cl]
            total = counts
            imp = impurity_from_counts(counts, tg.factor, tg.criterion)
            scale = q_present / q_node
        else:
            w_present, mean, s_sum, imp, _ = _reg_moments(row, start, pend, tg)
            scale = w_present / w_total
            w_total = w_present
    if is_cat:
        d, pos = _subset_pair(Segment(row, codes, start, pend), tg, rules, total, imp,
                              mean, level_f, level_i, lm)
    else:
        d, pos = _ordered_best(Segment(row, rk, start, pend), tg, rules, total, imp, mean,
                               w_total, s_sum, tied, scratch, cand, None, 0, None,
                               True, True, True, True)
    if pos >= 0:
        d *= scale
    return d, pos


@jit(borrowed=True)
def _search_mv(missing, ps, fr, nodes, tg, rules, work, pairs, gathered, iota, units, c,
               n_chunks):
    """Step 1 (missing values): the best split of every (frontier node, feature) pair,
    on the node's cases with the feature present (:func:`_pair_best`); also records how
    many cases have it present.

    The pairs are shared out as the chunks go (:func:`_take_block`): a chunk takes a
    block of one feature's nodes at a time, that feature's arrays taken once per block,
    its own features first, until none is left. Each pair's result depends on the pair
    only.

    Parameters as :func:`_search`, with ``missing`` the bitmap of :func:`_missing_bits`,
    ``gathered`` float64 (n_chunks, 2 n + :data:`_SCAN_SKIP`) scratch and ``iota``
    int32 (0, 1, ..., n - 1) for the pairs of :func:`_gathered_best` (regression with
    unit weights), else of 0 columns and empty; ``units`` the step's counters
    (:func:`step_counters`).
    """
    keys = ps.keys
    p = keys.shape[0]
    lm = work.level_i.shape[1] // 4
    shift = tg.shift
    scratch = work.scratch[c]
    cand = work.buffers[c]
    level_f = work.level_f[c]
    level_i = work.level_i[c]
    counts = work.present[c][:nodes.value.shape[1]]
    keep_bits = pairs.left_bits.shape[0] > 0
    n_fr = fr.node.shape[0]
    no_codes = ps.codes.reshape(-1)[:0]  # the type of a row of codes, empty
    ys = gathered[c]
    tops = ys[ys.shape[0] - _SCAN_SKIP:] if ys.shape[0] > 0 else ys
    while True:
        f, j, j_end = _take_block(units, c, n_chunks, p, n_fr)
        if f < 0:
            break
        row = keys[f]
        bits = missing[f]
        is_cat = ps.n_levels[f] > 0
        tied = ps.rank_row[f] >= 0
        rk = ps.ranks[ps.rank_row[f]] if tied else work.no_ranks
        codes = ps.codes[ps.rank_row[f]] if is_cat else no_codes
        # regression, unit weights, a feature without ties: _gathered_best
        gather = (gathered.shape[1] > 0 and not is_cat and not tied
                  and tg.criterion == SQUARED_ERROR)
        # ... a categorical feature: _gathered_subset
        gather_cat = gathered.shape[1] > 0 and is_cat and tg.criterion == SQUARED_ERROR
        while j < j_end:
            k = j * p + f
            start = fr.start[j]
            end = fr.end[j]
            pend = _present_end(row, start, end, shift, bits)
            pairs.present[k] = pend - start
            if gather and pend < end and pend - start >= 2:
                # with the block's next pair of this feature, when it is one too: their
                # moments at once (_gathered_moments_two)
                j2 = j + 1
                if j2 < j_end:
                    start2 = fr.start[j2]
                    end2 = fr.end[j2]
                    pend2 = _present_end(row, start2, end2, shift, bits)
                    if pend2 < end2 and pend2 - start2 >= 2:
                        k2 = j2 * p + f
                        pairs.present[k2] = pend2 - start2
                        na = pend - start
                        nb = pend2 - start2
                        ys_a = ys[:na]
                        sl_a = ys[na:2 * na]
                        ys_b = ys[2 * na:2 * na + nb]
                        sl_b = ys[2 * na + nb:2 * (na + nb)]
                        wa, ma, sca, va, wb, mb, scb, vb = _gathered_moments_two(
                            row, start, pend, start2, pend2, tg.y_reg, ys_a, sl_a, ys_b,
                            sl_b)
                        pa, sla, da = _gathered_walk(na, ma, sca, va, tg,
                                                     rules.min_samples_leaf, ys_a, sl_a,
                                                     iota, tops)
                        pb, slb, db = _gathered_walk(nb, mb, scb, vb, tg,
                                                     rules.min_samples_leaf, ys_b, sl_b,
                                                     iota, tops)
                        if pa >= 0 and pb >= 0 and np.isnan(da) and np.isnan(db):
                            da, db = _precise_two(ys_a, pa, na, ma, sla, ys_b, pb, nb, mb,
                                                  slb)
                        pairs.delta[k], pairs.pos[k] = _scaled(
                            pa, da, start, na, ma, sla, wa,
                            nodes.fnode[fr.node[j], F_WEIGHT], tg, ys_a, iota)
                        pairs.delta[k2], pairs.pos[k2] = _scaled(
                            pb, db, start2, nb, mb, slb, wb,
                            nodes.fnode[fr.node[j2], F_WEIGHT], tg, ys_b, iota)
                        j = j2 + 1
                        continue
                d, pos = _gathered_best(row, start, pend, nodes.fnode[fr.node[j], F_WEIGHT],
                                        tg, rules.min_samples_leaf, ys, iota)
            elif gather_cat and pend < end and pend - start >= 2:
                d, pos = _gathered_subset(row, codes, start, pend,
                                          nodes.fnode[fr.node[j], F_WEIGHT], tg,
                                          rules.min_samples_leaf, ys, level_f, level_i, lm)
            else:
                d, pos = _present_best(row, rk, codes, is_cat, tied, fr.node[j], start, pend,
                                       end, fr.mean[j], fr.sum[j], nodes, tg, rules, scratch,
                                       cand, level_f, level_i, lm, counts)
            pairs.delta[k] = d
            pairs.pos[k] = pos
            if pos >= 0 and is_cat and keep_bits:
                pairs.left_bits[k], pairs.level_bits[k] = _side_bits(level_i, lm,
                                                                     pend - start)
            j += 1


@jit(inline="always")
def _side_bits(ints, lm, n_cases):
    """Step 1, a subset split just found: the codes of the levels in S (the side the
    search left in :data:`cartjit._subsets.SIDE`) and those of every level searched,
    as two bitsets (code c is bit c; every code below :data:`BITSET_LEVELS`), from one
    walk over the levels (as :func:`cartjit._subsets.left_levels_bits`); ``n_cases``
    is the number of cases searched, which the levels' counts add up to."""
    bits = np.uint64(0)
    present = np.uint64(0)
    seen = 0
    lvl = 0
    while seen < n_cases:
        seen += ints[NCASE * lm + lvl]
        code_bit = np.uint64(1) << np.uint64(ints[CODE * lm + lvl])
        present |= code_bit
        if ints[SIDE * lm + lvl]:
            bits |= code_bit
        lvl += 1
    return bits, present


@jit(inline="always")
def _level_sets_from_bits(bits, present, level_sets, row):
    """Step 2, a subset split (a competitor, or the split of :func:`_mark_mv`) whose
    sides the search kept (``Pairs.left_bits`` and ``Pairs.level_bits``, at most 64
    levels: one word): write row ``row`` of the level sets, the left set the levels
    present in ``bits``, the right set the other levels present. (Finding the levels
    present again, by galloping over the segment's runs of equal codes, took most of
    the time of the competitors' step.)"""
    level_sets[row, 0, 0] = present & bits
    level_sets[row, 1, 0] = present & ~bits


@jit(inline="always")
def _tie_terms(key, case, tg):
    """Step 2 (missing values), one marked case of :func:`_mark_mv`: its weight w and
    the terms c_y w and c_y y w (regression: w and w y) of the sums that decide which
    child rpart numbers 2k."""
    wi = 1.0 if tg.unit_weights else tg.w[case]
    if tg.criterion != SQUARED_ERROR:
        cl = key & tg.mask if tg.mask else tg.y_class[case]
        a = tg.factor[cl] * wi
        return wi, a, a * cl
    return wi, wi, wi * tg.y_reg[case]


@jit(borrowed=True)
def _mark_mv(X, ps, fr, nodes, tg, rules, splits, pairs, work, level_sets, c, n_chunks):
    """Step 2 (missing values), after :func:`_choose`: mark every case of each split
    node LEFT or RIGHT by the split, or MISSING when its split feature is missing;
    write a subset split's level sets; record the cases
    with the split feature present and the weight the split sends each way, and set
    ``splits.pos`` to ``start`` + the present cases it sends left (for
    :func:`_send_missing`).

    Chunk c takes the batch rows c, c + n_chunks, ...: the nodes own disjoint cases,
    marks, rows of ``splits`` and level-set rows (reserved by :func:`_choose`), so the
    chunks write nothing in common. A subset split whose sides the pairs did not keep
    (``pairs.left_bits`` empty) is searched again with the first thread's scratch: then
    the caller runs one chunk.

    Parameters as :func:`_record_subsets`, with ``X`` the cases and ``pairs`` the batch's
    :class:`Pairs` (``present`` filled by :func:`_search_mv`); ``c, n_chunks`` this chunk
    and the number of chunks.
    """
    p = ps.keys.shape[0]
    marks = work.goes_left
    shift = tg.shift
    ushift = np.uint64(shift)
    no_codes = ps.codes.reshape(-1)[:0]  # the type of a row of codes, empty
    for j in range(c, fr.node.shape[0], n_chunks):
        f = splits.feat[j]
        if f < 0:
            continue
        node = fr.node[j]
        start = fr.start[j]
        end = fr.end[j]
        pend = start + pairs.present[j * p + f]
        nodes.inode[node, I_N_PRIMARY] = pend - start
        row = ps.keys[f]
        is_cat = ps.n_levels[f] > 0
        pos = splits.pos[j]
        lrow = nodes.inode[node, I_LEVEL_ROW]
        if is_cat:
            k = j * p + f
            if pairs.left_bits.shape[0] > 0:
                _level_sets_from_bits(pairs.left_bits[k], pairs.level_bits[k], level_sets,
                                      lrow)
            else:
                _level_sets_of_pair(ps, f, node, start, pend, end, fr.mean[j], fr.sum[j],
                                    nodes, tg, rules, pairs, k, work, level_sets, lrow)
        w_left = 0.0
        w_right = 0.0
        n_left = 0
        # Σ c_y y w and Σ c_y w by side (regression: Σ y w and Σ w): rpart numbers the
        # child with the smaller mean class number (mean response) 2k
        num_l = 0.0
        den_l = 0.0
        num_r = 0.0
        den_r = 0.0
        # The cases are marked and summed run by run: an ordered split's two ranges, or a
        # subset split's runs of one level (the segment comes grouped by level, so the
        # side is looked up once a run). A run adds to its side's sums, taken into
        # registers and put back, so each side sums its cases in order as a branch per
        # case would, without one.
        codes = ps.codes[ps.rank_row[f]] if is_cat else no_codes
        i = start
        while i < pend:
            if is_cat:
                code = codes[np.uint64(row[np.uint64(i)]) >> ushift]
                run_end = level_run_end(row, codes, ushift, i, pend, code)
                left = _level_side(code, lrow, level_sets) == 0
            else:
                left = i < pos
                run_end = pos if left else pend
            if left:
                ws, nums, dens = w_left, num_l, den_l
                n_left += run_end - i
            else:
                ws, nums, dens = w_right, num_r, den_r
            mark = LEFT if left else RIGHT
            for q in range(np.uint64(i), np.uint64(run_end)):
                key = row[q]
                case = np.uint64(key >> shift)
                marks[case] = mark
                wi, a, b = _tie_terms(key, case, tg)
                ws += wi
                nums += b
                dens += a
            if left:
                w_left, num_l, den_l = ws, nums, dens
            else:
                w_right, num_r, den_r = ws, nums, dens
            i = run_end
        splits.tie_left[j] = 0 if num_l * den_r < num_r * den_l else 1
        for i in range(pend, end):
            marks[row[i] >> shift] = MISSING
        splits.w_left[j] = w_left
        splits.w_right[j] = w_right
        # until _send_missing adds the cases it sends: the left child's end among the
        # present cases
        splits.pos[j] = start + n_left


@jit(borrowed=True)
def _search_surrogates(X, ps, fr, tg, rules, splits, pairs, sp, work, sur, units, c,
                       n_chunks):
    """Step 2 (surrogates): the best surrogate split of every (split node, other feature)
    pair (:mod:`cartjit._surrogates`), on the marks of :func:`_mark_mv`.

    The pairs are shared out as the chunks go, a block of one feature's split nodes at
    a time, like :func:`_search_mv`'s (``units`` the step's counters).

    Parameters
    ----------
    X, ps, fr, tg, rules, splits, pairs : as :func:`_mark_mv`.
    sp : int64 batch rows of the split nodes.
    work : :class:`Work`.
    sur : :class:`SurrogatePairs` output, pair (j, f) at ``j * p + f``.
    units : the step's counters (:func:`step_counters`).
    c, n_chunks : this chunk (its scratch) and the number of chunks.
    """
    p = ps.keys.shape[0]
    lm = work.level_i.shape[1] // 4
    lw = work.level_f[c]
    ints = work.level_i[c]
    side = ints[3 * lm:4 * lm]
    level_counts = ints[:3 * lm]
    high = work.present[c][:3]
    marks = work.goes_left
    shift = tg.shift
    style = rules.surrogate_style
    n_sp = sp.shape[0]
    while True:
        f, t, t_end = _take_block(units, c, n_chunks, p, n_sp)
        if f < 0:
            break
        row = ps.keys[f]
        n_levels = ps.n_levels[f]
        rk = ps.ranks[ps.rank_row[f]] if ps.rank_row[f] >= 0 else work.no_ranks
        while t < t_end:
            j = sp[t]
            t += 1
            kk = j * p + f
            sur.agree[kk] = 0.0
            sur.adj[kk] = 0.0
            f0 = splits.feat[j]
            if f == f0:
                continue
            start = fr.start[j]
            end = fr.end[j]
            pend = start + pairs.present[kk]
            if pend - start < 2:
                continue
            if n_levels > 0:
                # the codes' uint16 row (half the cache footprint of their ranks)
                a, adj = categorical_surrogate(row, start, pend, shift, marks, tg.w,
                                               tg.unit_weights,
                                               ps.codes[ps.rank_row[f]], n_levels,
                                               splits.w_left[j], splits.w_right[j], style,
                                               splits.tie_left[j], lw, side, level_counts)
                pos = np.int64(-1)
                low = _pack_sides(side, n_levels) if n_levels <= SIDE_BITS else 1
            else:
                # the marked cases with f present: the node's, less those missing f
                # (summed directly when weights could round)
                _marked_totals(row, start, pend, end, tg, marks, splits.w_left[j],
                               splits.w_right[j], pairs.present[j * p + f0], high)
                a, adj, pos, low = ordered_surrogate(row, start, pend, shift, marks, tg.w,
                                                     tg.unit_weights, rk, high,
                                                     splits.w_left[j], splits.w_right[j],
                                                     style)
            # a surrogate no better than the majority is never kept
            sur.agree[kk] = a if adj > MIN_ADJ else 0.0
            sur.adj[kk] = adj
            sur.pos[kk] = pos
            sur.low_left[kk] = low


#: Categorical surrogates of at most this many levels keep their sides from the search
#: (SurrogatePairs.low_left), so that _write_surrogates need not search the pair again.
SIDE_BITS = 31


@jit(inline="always")
def _pack_sides(side, n_levels):
    """The sides of a categorical surrogate's levels (``side[c]``, LEVEL_NONE, LEVEL_LEFT
    or LEVEL_RIGHT, c < ``n_levels`` <= SIDE_BITS) as one int64: bit c set for a level
    going left, bit c + 32 for one going right."""
    packed = np.int64(0)
    for c in range(n_levels):
        if side[c] == LEVEL_LEFT:
            packed |= np.int64(1) << np.int64(c)
        elif side[c] == LEVEL_RIGHT:
            packed |= np.int64(1) << np.int64(c + 32)
    return packed


@jit(inline="always")
def _unpack_sides(packed, n_levels, side):
    """:func:`_pack_sides` undone into ``side[:n_levels]``."""
    for c in range(n_levels):
        if (packed >> np.int64(c)) & 1:
            side[c] = LEVEL_LEFT
        elif (packed >> np.int64(c + 32)) & 1:
            side[c] = LEVEL_RIGHT
        else:
            side[c] = LEVEL_NONE


@jit(inline="always")
def _marked_totals(row, start, pend, end, tg, marks, w_left, w_right, n_marked, out):
    """Surrogates: weight of the marked cases (split feature present) going left and
    right among ``row[start:pend]``, and their number, into ``out[:3]``.

    With exact sums (unit or integer weights) they are the node's totals (``w_left``,
    ``w_right``, ``n_marked``) less the missing tail ``row[pend:end]``; otherwise summed
    directly.
    """
    shift = tg.shift
    if tg.unit_weights:
        # the tail's marked-left and marked cases counted without a branch a case
        packed = np.int64(0)
        ushift = np.uint32(shift)
        for i in range(np.uint64(pend), np.uint64(end)):
            packed += MARK_PACK[np.uint64(marks[np.uint64(np.uint32(row[i]) >> ushift)])]
        n_l = packed & np.int64(0xFFFFFFFF)
        n_m = packed >> np.int64(32)
        out[0] = w_left - np.float64(n_l)
        out[1] = w_right - np.float64(n_m - n_l)
        out[2] = n_marked - n_m
        return
    if tg.exact_sums:
        hl = w_left
        hr = w_right
        n = n_marked
        lo = pend
        hi = end
        sign = -1.0
    else:
        hl = 0.0
        hr = 0.0
        n = 0
        lo = start
        hi = pend
        sign = 1.0
    for i in range(lo, hi):
        case = row[i] >> shift
        m = marks[case]
        if m == 2:
            continue
        wi = 1.0 if tg.unit_weights else tg.w[case]
        if m == 1:
            hl += sign * wi
        else:
            hr += sign * wi
        n += 1 if sign > 0 else -1
    out[0] = hl
    out[1] = hr
    out[2] = n


# Inlined into _send_missing (a call per case missing the split feature), which like the
# other kernels of missing values that run in chunks is compiled borrowed, so that the
# threads do not contend for the reference counts of the tables they share: the two
# together took _send_missing from about 19 to 9 ms of CPU time in a two-thread fit of
# 10^5 rows with 10 % of the cells missing (AMD EPYC).
@jit(inline="always")
def _surrogate_goes(X, case, f, tables, r, level_sets, is_cat):
    """Routing by surrogate row ``r``: LEFT, RIGHT, or MISSING when it cannot route."""
    x = X[case, f]
    if is_cat:  # the level's side, as prediction reads it
        side = _level_side(x, tables.sur_i[r, S_LEVEL_ROW], level_sets)
        return MISSING if side < 0 else (LEFT if side == 0 else RIGHT)
    if np.isnan(x):
        return MISSING
    low = tables.sur_i[r, S_LOW_LEFT]
    if x <= tables.sur_f[r, S_THRESHOLD]:
        return LEFT if low == 1 else RIGHT
    return RIGHT if low == 1 else LEFT


@jit(inline="always")
def _best_untaken(score, base, p, picks, first, n_taken, tol, floor):
    """Ranking of the surrogates: the feature f not yet taken (in
    ``picks[first:first + n_taken]``, at most ``max_surrogate`` of them) with the largest
    ``score[base + f]`` above ``floor``; a later feature must beat the best so far by
    more than ``tol``, so values equal up to rounding keep feature order. -1 when none
    is left."""
    best = -np.inf
    bf = np.int64(-1)
    for f in range(p):
        v = score[base + f]
        if v > floor and v > best + tol:
            taken = False
            for r in range(first, first + n_taken):
                taken |= picks[r] == f
            if not taken:
                best = v
                bf = f
    return bf


@jit(borrowed=True)
def _pick_surrogates(p, fr, rules, splits, sur, c, n_chunks):
    """Step 2 (surrogates), after :func:`_search_surrogates`: for each split node of the
    batch, the surrogates it keeps, best first (agreement first, feature order on ties
    to within RANK_TIE, agreement above 0: adjusted agreement above MIN_ADJ), into
    ``sur.pick[j * max_surrogate:]``, -1 after the last when fewer.

    Chunk c takes the batch rows c, c + n_chunks, ...: each writes only its own picks.
    (Run serially with the writing of the table rows, this took 3-4 % of a two-thread
    10^5-row fit with holes, AMD EPYC.)

    Parameters
    ----------
    p : the number of features.
    fr, rules, splits : as :func:`_search_surrogates`.
    sur : :class:`SurrogatePairs` (``agree`` filled in).
    c, n_chunks : this chunk and the number of chunks.
    """
    m = rules.max_surrogate
    for j in range(c, fr.node.shape[0], n_chunks):
        first = j * m
        n_sur = 0
        if splits.feat[j] >= 0:
            while n_sur < m:
                bf = _best_untaken(sur.agree, j * p, p, sur.pick, first, n_sur, RANK_TIE,
                                   0.0)
                if bf < 0:
                    break
                sur.pick[first + n_sur] = bf
                n_sur += 1
        if n_sur < m:
            sur.pick[first + n_sur] = -1


@jit(borrowed=True)
def _number_surrogates(ps, fr, nodes, rules, splits, sur, tables):
    """Step 2 (surrogates), serial, after :func:`_pick_surrogates`: give each split node's
    surrogates their rows of the surrogate table, in node order (``I_SUR_START``,
    ``I_N_SUR``), and its categorical surrogates their rows of the level sets, in the
    same order (from ``sur.level_row[j]``), advancing ``tables.rows[0]`` and
    ``tables.rows[2]``; :func:`_send_missing` writes the rows.

    Parameters as :func:`_pick_surrogates`, with ``ps`` the presort (the features'
    numbers of levels), ``nodes`` the node tables and ``tables`` the surrogate table.
    """
    m = rules.max_surrogate
    row = tables.rows[0]
    level_row = tables.rows[2]
    for j in range(fr.node.shape[0]):
        sur.level_row[j] = level_row
        if splits.feat[j] < 0:
            continue
        n_sur = 0
        while n_sur < m and sur.pick[j * m + n_sur] >= 0:
            level_row += ps.n_levels[sur.pick[j * m + n_sur]] > 0
            n_sur += 1
        node = fr.node[j]
        nodes.inode[node, I_SUR_START] = row
        nodes.inode[node, I_N_SUR] = n_sur
        row += n_sur
    tables.rows[0] = row
    tables.rows[2] = level_row


@jit(inline="always")
def _write_surrogates(X, ps, j, p, start, tg, rules, splits, pairs, sur, work, c,
                      level_sets, tables, first, n_sur):
    """:func:`_send_missing`, one split node (batch row j): write its surrogates' rows of
    the surrogate table (from ``first``; feature, agreements, threshold or level-set
    row, direction, count 0) and its categorical surrogates' level sets (rows from
    ``sur.level_row[j]``), in the order :func:`_pick_surrogates` ranked them. The sides
    of a categorical surrogate come from ``sur.low_left`` (at most SIDE_BITS levels), or
    from searching the pair again with chunk c's scratch."""
    lm = work.level_i.shape[1] // 4
    shift = tg.shift
    lrow = sur.level_row[j]
    for r in range(n_sur):
        bf = sur.pick[j * rules.max_surrogate + r]
        kk = j * p + bf
        row_s = first + r
        tables.sur_i[row_s, S_FEATURE] = bf
        tables.sur_i[row_s, S_COUNT] = 0
        tables.sur_f[row_s, S_AGREE] = sur.agree[kk]
        tables.sur_f[row_s, S_ADJ] = sur.adj[kk]
        n_levels = ps.n_levels[bf]
        if n_levels > 0:
            side = work.level_i[c][3 * lm:4 * lm]
            if n_levels <= SIDE_BITS:  # kept by the search
                _unpack_sides(sur.low_left[kk], n_levels, side)
            else:
                categorical_surrogate(ps.keys[bf], start, start + pairs.present[kk],
                                      shift, work.goes_left, tg.w, tg.unit_weights,
                                      ps.ranks[ps.rank_row[bf]], n_levels,
                                      splits.w_left[j], splits.w_right[j],
                                      rules.surrogate_style, splits.tie_left[j],
                                      work.level_f[c], side, work.level_i[c][:3 * lm])
            for s in range(2):
                for wd in range(level_sets.shape[2]):
                    level_sets[lrow, s, wd] = 0
            for code in range(n_levels):
                if side[code] != LEVEL_NONE:
                    s = 0 if side[code] == LEVEL_LEFT else 1
                    level_sets[lrow, s, code >> 6] |= np.uint64(1) << np.uint64(code & 63)
            tables.sur_i[row_s, S_LEVEL_ROW] = lrow
            tables.sur_i[row_s, S_LOW_LEFT] = 1
            tables.sur_f[row_s, S_THRESHOLD] = np.nan
            lrow += 1
        else:
            keys_s = ps.keys[bf]
            pos = sur.pos[kk]
            tables.sur_i[row_s, S_LEVEL_ROW] = -1
            tables.sur_i[row_s, S_LOW_LEFT] = sur.low_left[kk]
            tables.sur_f[row_s, S_THRESHOLD] = threshold_between(
                X[keys_s[pos - 1] >> shift, bf], X[keys_s[pos] >> shift, bf])


@jit(borrowed=True)
def _send_missing(X, ps, fr, nodes, tg, rules, splits, pairs, sur, work, level_sets,
                  tables, c, n_chunks):
    """Step 2 (missing values), after :func:`_number_surrogates`: write each split
    node's surrogate rows (:func:`_write_surrogates`), then send its cases missing the
    split feature down by its surrogates (``use_surrogate`` >= 1,
    counting the cases each surrogate sends) and then by the majority
    (``use_surrogate`` == 2); a case still unsent stays in the node. Sets the children's
    ranges (``splits.pos``, ``splits.stop``).

    Chunk c takes the batch rows c, c + n_chunks, ...: each node writes, reads and
    counts only its own surrogate and level-set rows and marks only its own cases, so
    the result does not depend on the chunks.

    Parameters
    ----------
    X, ps, fr, nodes, tg, rules, splits, pairs : as :func:`_mark_mv`.
    sur : :class:`SurrogatePairs` (picked and numbered).
    work : :class:`Work`; chunk c's scratch serves here.
    level_sets, tables : the level sets and the surrogate table (rows reserved by
        :func:`_number_surrogates`).
    c, n_chunks : this chunk and the number of chunks.
    """
    p = ps.keys.shape[0]
    marks = work.goes_left
    shift = tg.shift
    for j in range(c, fr.node.shape[0], n_chunks):
        f0 = splits.feat[j]
        if f0 < 0:
            continue
        node = fr.node[j]
        start = fr.start[j]
        end = fr.end[j]
        pend = start + pairs.present[j * p + f0]
        first = nodes.inode[node, I_SUR_START]
        n_sur = nodes.inode[node, I_N_SUR]
        _write_surrogates(X, ps, j, p, start, tg, rules, splits, pairs, sur, work, c,
                          level_sets, tables, first, n_sur)
        # the cases missing the split feature end its segment
        row = ps.keys[f0]
        w_left = splits.w_left[j]
        w_right = splits.w_right[j]
        # the present cases, counted by _mark_mv; then those sent here
        n_left = splits.pos[j] - start
        n_right = pend - start - n_left
        # The first surrogate routes most of these cases: its sides are found first for
        # all of them, in a loop of independent look-ups of X (scattered rows, which the
        # CPU overlaps), into this chunk's buffer; the other surrogates serve the rest.
        by_first = rules.use_surrogate > 0 and n_sur > 0
        first_go = work.buffers[c]
        n_first = 0
        if by_first:
            fs = tables.sur_i[first, S_FEATURE]
            is_cat = ps.n_levels[fs] > 0
            for i in range(pend, end):
                first_go[i - pend] = _surrogate_goes(X, row[i] >> shift, fs, tables, first,
                                                     level_sets, is_cat)
        for i in range(pend, end):
            case = row[i] >> shift
            go = MISSING
            if by_first:
                go = first_go[i - pend]
                if go != MISSING:
                    n_first += 1
                else:
                    for r in range(first + 1, first + n_sur):
                        fs = tables.sur_i[r, S_FEATURE]
                        go = _surrogate_goes(X, case, fs, tables, r, level_sets,
                                             ps.n_levels[fs] > 0)
                        if go != MISSING:
                            tables.sur_i[r, S_COUNT] += 1
                            break
            if go == MISSING and rules.use_surrogate == 2:
                if w_left > w_right:
                    go = LEFT
                elif w_right > w_left:
                    go = RIGHT
            marks[case] = go
            n_left += go == LEFT
            n_right += go == RIGHT
        if by_first:
            tables.sur_i[first, S_COUNT] += n_first
        splits.pos[j] = start + n_left
        splits.stop[j] = start + n_left + n_right


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
                    _level_sets_of_pair(ps, bf, node, start, start + present, fr.end[j],
                                        fr.mean[j], fr.sum[j], nodes, tg, rules, pairs, kk,
                                        work, level_sets, lrow)
                tables.comp_f[row_c, C_THRESHOLD] = np.nan
            else:
                pos = pairs.pos[kk]
                tables.comp_f[row_c, C_THRESHOLD] = threshold_between(
                    X[row[pos - 1] >> shift, bf], X[row[pos] >> shift, bf])


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


@jit(borrowed=True)
def _pack_labels(keys, y, shift, c, n_chunks):
    """Set-up, label packing: replace every key (a case) by ``case << shift | y[case]``.

    Parameters
    ----------
    keys : int32 (p, n) the keys, rewritten in place.
    y : int32 class index by case.
    shift : bits of the class label.
    c, n_chunks : this chunk (rows c, c + n_chunks, ...) and the number of chunks.
    """
    for f in range(c, keys.shape[0], n_chunks):
        row = keys[f]
        for i in range(row.shape[0]):
            row[i] = (row[i] << shift) | y[row[i]]


@jit(borrowed=True)
def _root(keys, nodes, tg):
    """Set-up, the root: write node 0; returns (Q(root) or W(root), mean, centred sum,
    may split by purity).

    Parameters
    ----------
    keys : int32 (p, n) the keys; the root holds every position.
    nodes : :class:`Nodes`.
    tg : :class:`cartjit._splitter.Targets`.
    """
    inode = nodes.inode
    fnode = nodes.fnode
    value = nodes.value
    n = keys.shape[1]
    inode[0, I_FEATURE] = -1
    inode[0, I_LEFT] = -1
    inode[0, I_RIGHT] = -1
    inode[0, I_PARENT] = -1
    inode[0, I_DEPTH] = 0
    inode[0, I_N] = n
    for col in range(I_LEVEL_ROW, _N_INT):
        inode[0, col] = 0
    inode[0, I_LEVEL_ROW] = -1
    fnode[0, F_THRESHOLD] = np.nan
    fnode[0, F_IMPROVEMENT] = 0.0
    weight, imp, mean, s_c, mixed = _node_stats(keys[0], np.int64(0), n, tg, value[0])
    fnode[0, F_WEIGHT] = weight
    fnode[0, F_IMPURITY] = imp
    q_root = weight
    if tg.criterion != SQUARED_ERROR:
        q_root = 0.0
        for j in range(value.shape[1]):
            q_root += tg.factor[j] * value[0, j]
    return q_root, mean, s_c, mixed


# --------------------------------------------------------------------------- driver

@jit
def _level_splits(m):
    """The :class:`Splits` of a level of ``m`` frontier nodes, before step 2 fills them."""
    return Splits(np.empty(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
                  np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64),
                  np.zeros(m, dtype=np.float64), np.zeros(m, dtype=np.float64),
                  np.zeros(m, dtype=np.int64))


@jit
def _start(keys, nodes, tg, rules, pack):
    """Set-up: pack the class labels into the keys (``pack``: in one chunk, see
    :func:`_pack_labels`) and write the root (:func:`_root`); returns ``rules`` with
    Q(root) and the first frontier, the root when it may split."""
    if pack:
        _pack_labels(keys, tg.y_class, tg.shift, 0, 1)
    q_root, mean0, s0, mixed = _root(keys, nodes, tg)
    n = keys.shape[1]
    rules = Rules(rules.max_depth, rules.min_samples_split, rules.min_samples_leaf,
                  rules.min_impurity_decrease, q_root, rules.simd, rules.max_exhaustive,
                  rules.max_surrogate, rules.use_surrogate, rules.surrogate_style,
                  rules.max_competitor)
    splittable = (mixed and n >= rules.min_samples_split and n >= 2 * rules.min_samples_leaf
                  and rules.max_depth != 0)
    fr = Frontier(np.zeros(1 if splittable else 0, dtype=np.int64),
                  np.zeros(1, dtype=np.int64), np.full(1, n, dtype=np.int64),
                  np.full(1, mean0), np.full(1, s0))
    return rules, fr


@jit
def _more_rows(arr, needed):
    """``arr`` with room for ``needed`` rows (its first axis): itself when it has them,
    else a zero-filled copy with ``max(needed, rows * 5 // 4)`` rows."""
    rows = arr.shape[0]
    if needed <= rows:
        return arr
    shape = (max(needed, rows + rows // 4),) + arr.shape[1:]
    out = np.zeros(shape, dtype=arr.dtype)
    # Element by element over the flat (C-order) arrays: ``out[:rows] = arr`` would
    # compile Numba's broadcast check, whose error message (string formatting) takes
    # seconds to compile for each signature.
    flat_out = out.reshape(-1)
    flat = arr.reshape(-1)
    for i in range(flat.shape[0]):
        flat_out[i] = flat[i]
    return out


class Sizes(NamedTuple):
    """The shapes of a growth's tables, as :func:`grow` allocates them (one thread)."""

    cap: int        # rows of the node tables
    n_val: int      # columns of the node values (J, or 1)
    row: int        # scratch row (running class counts)
    n_lf: int       # per-level statistics (subset splits)
    n_li: int       # per-level integers (subset splits)
    n_present: int  # class counts of the cases present
    n_sets: int     # rows of the level sets (0 without categorical features)
    n_words: int    # words of a level set
    sur_cap: int    # rows of the surrogate table
    comp_cap: int   # rows of the competitor table


#: Up to this many node rows (2 n - 1 for n cases) :func:`_grow_serial` allocates the
#: tables itself (:func:`grow` hands it the empty tables below): a 150-case fit then
#: spends about 10 µs less on NumPy's calls. Larger tables are NumPy's zero pages,
#: never touched where unused (a compiled ``np.zeros`` writes every page).
SMALL_FIT_ROWS = 4096

# The tables' types without rows: "allocate them here" to _grow_serial (no row can be
# written to them, so they hold no state).
_F2 = np.zeros((0, 0), dtype=np.float64)
_I2 = np.zeros((0, 0), dtype=np.int64)
_EMPTY_NODES = Nodes(np.zeros((0, 0), dtype=np.int32), _F2, _F2)
_EMPTY_WORK = Work(_F2, np.zeros((0, 0), dtype=np.int32), np.zeros(0, dtype=np.uint8),
                   np.zeros(0, dtype=np.int32), _F2, _I2, _F2)
_EMPTY_SETS = np.zeros((0, 0, 0), dtype=np.uint64)
_EMPTY_TABLES = Tables(_I2, _F2, _I2, _F2, np.zeros(0, dtype=np.int64))


@jit
def _grow_serial(X, ps, nodes, tg, rules, work, level_sets, tables, sz, cat, bitsets,
                 gathered, iota, reg, cls, gini, runs):
    """:func:`grow` on one thread without missing values, compiled: the set-up
    (:func:`_start`) and then steps 1 to 4 call the kernels above exactly as the Python
    loop of :func:`grow` does with one chunk each, so the tree is the same; only the
    dispatches (a dozen microseconds each, most of a small fit) and the per-level
    bookkeeping leave Python.

    ``cat`` is the categorical features, or ``None`` when there are none: Numba then
    prunes the ``cat is None`` branches before typing, so that a numeric fit compiles no
    subset code (the subset search, the level sets of competitors).

    ``gathered`` and ``iota`` are :func:`_search`'s scratch for large segments (one row),
    or ``None``; ``reg, cls, gini, runs`` its scan marks (:func:`search_marks`): the
    growth is compiled once for each set, with only the scans it names.

    ``nodes``, ``work``, ``level_sets`` and ``tables`` are :func:`grow`'s, or, for a small
    fit, the empty ones above (``_EMPTY_NODES`` ...): the tables of the shapes ``sz`` are
    then allocated here, cleared or not as :func:`grow` allocates them.

    Returns ``(nodes, level_sets, tables, n_nodes, n_rows)``: the tables, reallocated
    where they needed more rows, the number of nodes and of level-set rows used.
    """
    keys = ps.keys
    p = keys.shape[0]
    if nodes.inode.shape[0] == 0:  # a small fit: its tables, allocated here
        nodes = Nodes(np.zeros((sz.cap, _N_INT), dtype=np.int32),
                      np.zeros((sz.cap, _N_FLOAT), dtype=np.float64),
                      np.zeros((sz.cap, sz.n_val), dtype=np.float64))
        work = Work(np.zeros((1, sz.row), dtype=np.float64),
                    np.empty((1, keys.shape[1] + LANES), dtype=np.int32),
                    np.zeros(X.shape[0] + 3, dtype=np.uint8),
                    work.no_ranks,
                    np.zeros((1, sz.n_lf), dtype=np.float64),
                    np.zeros((1, sz.n_li), dtype=np.int64),
                    np.zeros((1, sz.n_present), dtype=np.float64))
        level_sets = np.zeros((sz.n_sets, 2, sz.n_words), dtype=np.uint64)
        tables = Tables(np.empty((sz.sur_cap, 4), dtype=np.int64),
                        np.empty((sz.sur_cap, 3), dtype=np.float64),
                        np.empty((sz.comp_cap, 3), dtype=np.int64),
                        np.empty((sz.comp_cap, 2), dtype=np.float64),
                        np.zeros(3, dtype=np.int64))
    rules, fr = _start(keys, nodes, tg, rules, tg.shift > 0)
    max_comp = rules.max_competitor
    n_nodes = 1
    n_rows = np.int64(0)  # not the literal 0: _number_splits would compile for it too
    while fr.node.shape[0] > 0:
        m = fr.node.shape[0]
        splits = _level_splits(m)
        need = n_nodes + 2 * m  # every frontier node may split
        nodes = Nodes(_more_rows(nodes.inode, need), _more_rows(nodes.fnode, need),
                      _more_rows(nodes.value, need))
        n_split = 0
        for b0 in range(0, m, SEARCH_BATCH):
            b1 = min(m, b0 + SEARCH_BATCH)
            n_pairs = (b1 - b0) * p
            if level_sets.shape[0] > 0:
                level_sets = _more_rows(level_sets, n_rows + (b1 - b0) * (1 + max_comp))
            first = tables.rows[1] + (b1 - b0) * max_comp
            tables = Tables(tables.sur_i, tables.sur_f, _more_rows(tables.comp_i, first),
                            _more_rows(tables.comp_f, first), tables.rows)
            pairs = Pairs(np.empty(n_pairs, dtype=np.float64),
                          np.empty(n_pairs, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          np.zeros(n_pairs if bitsets else 0, dtype=np.uint64),
                          np.zeros(n_pairs if bitsets else 0, dtype=np.uint64))
            batch = Frontier(fr.node[b0:b1], fr.start[b0:b1], fr.end[b0:b1],
                             fr.mean[b0:b1], fr.sum[b0:b1])
            _search(ps, batch, nodes, tg, rules, work, pairs, step_counters(1),
                    _case_blocks(batch.start, batch.end, CASE_BLOCK), gathered, iota, 0, 1,
                    reg, cls, gini, runs)
            if cat is not None:
                _search_subsets(ps, batch, nodes, tg, rules, work, pairs, cat, 0, 1)
            part = Splits(splits.feat[b0:b1], splits.pos[b0:b1], splits.child_base[b0:b1],
                          splits.stop[b0:b1], splits.w_left[b0:b1], splits.w_right[b0:b1],
                          splits.tie_left[b0:b1])
            _choose(X, ps, batch, nodes, tg, rules, pairs, part, 0, 1)
            _mark_sides(ps, batch, part, tg.shift, work.goes_left)
            n_new, n_new_rows = _number_splits(ps, batch, nodes, part, n_nodes + 2 * n_split,
                                               n_rows)
            tables.rows[2] = n_rows + n_new_rows
            if cat is not None and n_new_rows:
                _record_subsets(ps, batch, nodes, tg, rules, part, pairs, work, level_sets)
            if max_comp and n_new:
                picks = np.empty((b1 - b0, max_comp), dtype=np.int64)
                _pick_competitors(batch, nodes, rules, part, pairs, picks, 0, 1)
                _rank_competitors(ps, batch, nodes, rules, part, pairs, False, tables, picks)
                if cat is None:  # compiled without the subset code
                    _fill_competitors(X, ps, batch, nodes, tg, rules, part, pairs, work,
                                      None, tables, 0, 1)
                else:
                    _fill_competitors(X, ps, batch, nodes, tg, rules, part, pairs, work,
                                      level_sets, tables, 0, 1)
            n_rows = tables.rows[2]
            n_split += n_new
        if n_split == 0:
            break
        sp_index = np.flatnonzero(splits.feat >= 0)
        n_child = 2 * n_split
        kids = Children(np.empty(n_child, dtype=np.int64), np.empty(n_child, dtype=np.int64),
                        np.empty(n_child, dtype=np.int64), np.zeros(n_child, dtype=np.float64),
                        np.zeros(n_child, dtype=np.float64), np.zeros(n_child, dtype=np.uint8))
        _children(keys, sp_index, fr, splits, nodes, tg, rules, kids, 0, 1)
        # Only splits with a child that may split again need sorted child segments.
        n_part = 0
        sides = np.empty(n_split, dtype=np.uint8)
        for t in range(n_split):
            side = kids.ok[2 * t] | (kids.ok[2 * t + 1] << 1)
            if side:
                sp_index[n_part] = sp_index[t]
                sides[n_part] = side
                n_part += 1
        if n_part > 0:
            _partition(keys, tg.shift, sp_index[:n_part], sides[:n_part], splits, fr, work,
                       rules.simd, step_counters(1), 0, 1)
        n_nodes += n_child
        ok = np.flatnonzero(kids.ok)
        fr = Frontier(kids.node[ok], kids.start[ok], kids.end[ok], kids.mean[ok],
                      kids.sum[ok])
    return nodes, level_sets, tables, n_nodes, n_rows



def _uncleared(shape, dtype):
    """A table whose rows are written before they are read: ``np.empty`` (the tests
    put a sentinel here to check that no unwritten row is read)."""
    return np.empty(shape, dtype=dtype)


def _grow_tables(nodes, needed):
    """Make room for ``needed`` rows in the node tables, in place.

    ``ndarray.resize`` reallocates (a large block is remapped by the C library, not
    copied), so old and new tables never coexist; growing by a quarter bounds the
    over-allocation. No view of the tables may be alive here (none is: the kernels'
    views end with each call).
    """
    cap = nodes.inode.shape[0]
    if needed > cap:
        new_cap = max(needed, cap + cap // 4)
        for arr in nodes:
            arr.resize((new_cap, arr.shape[1]), refcheck=False)


#: Rows allocated up front for the node tables and the surrogate and competitor tables,
#: at most (their bound for n cases: 2 n - 1 nodes, n - 1 splits); np.zeros maps zero
#: pages, so rows never written cost no memory. Past it they grow by a quarter.
PREALLOC_ROWS = 1 << 21

#: Grow on one thread without missing values in one compiled call (:func:`_grow_serial`);
#: tests switch it off to compare with the Python loop, which gives the same tree.
COMPILED_DRIVER = True

#: Pack class labels into the keys when they fit (tests switch it off to cover the
#: look-up path, which serves too many classes for the number of rows).
PACK_LABELS = True


def label_bits(n_classes, n_rows):
    """Bits for the class label in a key; 0 when labels are not packed (see :func:`grow`)."""
    if n_classes <= 0 or not PACK_LABELS:
        return 0
    bits = max(1, int(n_classes - 1).bit_length())
    return bits if n_rows <= (1 << (31 - bits)) else 0


#: The table of k log2 k of an entropy growth with integer weights holds at most this
#: many rows per case.
XLOGX_TABLE_ROWS = 8


def _targets(problem, factor, criterion):
    """The :class:`cartjit._splitter.Targets` of a growth, in the kernels' layouts."""
    w = as_kernel_array(problem.w, np.float64)
    unit_weights = bool(problem.unit_weights)
    # Integer weights (with totals below 2**53) make running class counts exact.
    exact_sums = bool(unit_weights or (np.all(w == np.floor(w)) and w.sum() < 2.0**53))
    shift = label_bits(problem.n_classes if criterion != SQUARED_ERROR else 0,
                       problem.X.shape[0])
    # The entropy scan by runs reads k log2 k from a table: unit or integer weights
    # (integer counts), up to the total weight, when that is at most XLOGX_TABLE_ROWS
    # times the number of cases (else the general scan takes the logarithms).
    table = np.empty(0)
    if criterion == ENTROPY and exact_sums:
        top = problem.X.shape[0] if unit_weights else float(w.sum())
        if top <= XLOGX_TABLE_ROWS * problem.X.shape[0]:
            table = xlogx_table(int(top))
    return Targets(as_kernel_array(problem.y_class, np.int32),
                   as_kernel_array(problem.y_reg, np.float64), w, unit_weights, exact_sums,
                   as_kernel_array(factor, np.float64), int(criterion), int(shift),
                   int((1 << shift) - 1), table)


#: The categorical features of a growth without any (never written).
_NO_FEATURES = np.zeros(0, dtype=np.int64)
#: The factors of a regression growth (none; never written).
_NO_FACTORS = np.zeros(0, dtype=np.float64)


class GrowSetup(NamedTuple):
    """What :func:`grow` derives from the cases and the settings alone (:func:`grow_setup`):
    the same for every tree grown on some of the cases, so that the fold trees of a
    cross-validation make it once."""

    X: np.ndarray       # the cases, as the kernels read them
    targets: Targets    # with the factors given to grow_setup
    rules: Rules
    mv: bool            # missing values, or surrogates asked for: docs/maths.md §8
    n_val: int          # columns of the node values (J, or 1)
    row: int            # scratch row (running class counts)
    n_present: int      # class counts of the cases present
    lm: int             # most levels of a categorical feature (0: none)
    cat: np.ndarray     # int64 the categorical features
    n_words: int        # words of a level set
    n_lf: int           # per-level statistics (subset splits)
    n_li: int           # per-level integers (subset splits)
    bitsets: bool       # subset splits kept as bitsets (see Pairs.left_bits)


def grow_setup(problem, settings, n_levels, factor=None):
    """:class:`GrowSetup` of a growth on the cases of ``problem`` (or some of them) with
    ``settings`` (see :func:`grow`), categorical features of ``n_levels`` levels (0 for
    a numeric feature) and the per-class factors ``factor`` (None: none yet)."""
    criterion = settings.criterion
    n_classes = problem.n_classes
    n_val = n_classes if criterion != SQUARED_ERROR else 1
    X = as_kernel_array(problem.X, np.float64)
    tg = _targets(problem, _NO_FACTORS if factor is None else factor, criterion)
    # Kernel integers: bounds beyond any number of cases (< 2**31) or depth stop nothing,
    # so they are capped where twice them still fits in int64.
    max_depth = min(settings.max_depth, 2**62)
    min_samples_split = min(settings.min_samples_split, 2**40)
    min_samples_leaf = min(settings.min_samples_leaf, 2**40)
    # Per-thread scratch rows (running class counts, written at every scan step; the
    # class counts of the cases present, written at every case of a missing tail) are
    # padded to whole 128-byte blocks so two threads never write the same cache line.
    row = -(-3 * max(n_classes, 1) // 16) * 16
    n_present = -(-max(n_classes, 3) // 16) * 16
    lm = max(n_levels.tolist(), default=0)  # (a list: a few µs less for small trees)
    cat = np.flatnonzero(n_levels).astype(np.int64) if lm else _NO_FEATURES
    # Subset splits: per-thread scratch of per-level statistics, and a table of level
    # sets (one bit per level code) grown like the node tables.
    n_words = -(-lm // 64)
    n_lf = float_scratch_size(lm, n_val) if lm else 0
    n_li = int_scratch_size(lm) if lm else 0
    bitsets = 0 < lm <= BITSET_LEVELS  # see Pairs.left_bits
    max_sur = int(settings.max_surrogate)
    rules = Rules(int(max_depth), int(min_samples_split), int(min_samples_leaf),
                  float(settings.min_impurity_decrease), 0.0, bool(_config.SIMD),
                  int(settings.max_categories_exhaustive), max_sur,
                  int(settings.use_surrogate), int(settings.surrogate_style),
                  int(settings.max_competitor))
    mv = max_sur > 0 or bool(np.isnan(X).any())
    return GrowSetup(X, tg, rules, mv, n_val, row, n_present, lm, cat, n_words, n_lf, n_li,
                     bitsets)


def grow(problem, presorted, factor, settings, n_threads=1, setup=None):
    """Grow the tree on the cases in ``presorted.keys`` (see the module docstring).

    ``problem`` holds the cases (fields ``X``, ``y_class``, ``y_reg``, ``w``,
    ``unit_weights``, ``n_classes``, as :class:`cartjit._fit.Problem`), ``factor`` the
    per-class factors c_j (empty for regression), ``settings`` the criterion and the
    stopping rules (fields ``criterion``, ``max_depth``, ``min_samples_split``,
    ``min_samples_leaf``, ``min_impurity_decrease``, as :class:`cartjit._fit.Settings`).

    Returns a :class:`Grown` record of the node tables (views into over-allocated
    tables) from which :func:`assemble_tree` makes the :class:`cartjit._tree.Tree`: an
    int32 table with columns feature, left, right, parent, depth, n_node_samples; a
    float64 table with columns threshold, weighted n, impurity, impurity decrease Δi of
    the node's split (0 at leaves); and the node values (weighted class counts, or the
    mean for regression). ``max_depth`` < 0 means no limit. ``presorted.keys`` is
    consumed: for classification each key first becomes ``case << shift | class``
    (:func:`label_bits`, when the row count leaves room), so that the scans read the
    labels in sorted order instead of looking them up by case; then the keys are
    partitioned in place. ``setup`` is :func:`grow_setup`'s record for ``problem`` and
    ``settings`` (None: made here); ``factor`` replaces its factors.
    """
    keys = presorted.keys
    p, n = keys.shape
    n_threads = max(1, int(n_threads))
    if n * p < PARALLEL_MIN_KEYS:
        n_threads = 1
    if setup is None:
        setup = grow_setup(problem, settings, presorted.n_levels, factor)
        tg = setup.targets
    else:  # made once for many growths: only the factors are this growth's
        tg = setup.targets._replace(factor=as_kernel_array(factor, np.float64))
    X, rules, mv, cat = setup.X, setup.rules, setup.mv, setup.cat
    is_class = tg.criterion != SQUARED_ERROR
    n_val, row, n_present, lm = setup.n_val, setup.row, setup.n_present, setup.lm
    n_words, n_lf, n_li, bitsets = setup.n_words, setup.n_lf, setup.n_li, setup.bitsets
    n_cat = cat.shape[0]
    max_sur, max_comp, simd = rules.max_surrogate, rules.max_competitor, rules.simd
    n_rows = 0

    # A tree has at most 2 n - 1 nodes (every leaf holds a case): tables of that many
    # rows (up to PREALLOC_ROWS) are zero pages until written, so they never grow.
    cap = max(64, min(2 * n - 1, PREALLOC_ROWS))
    # Regression with unit weights on complete data: the scan of a large segment on its
    # gathered responses (_unit_scan_gathered), up to GATHER_MAX cases
    m_gather = min(n, GATHER_MAX) if (not mv and not is_class and tg.unit_weights
                                     and n >= GATHER_MIN) else 0
    # None where no segment can take it: no fit compiles it in without need
    unit_gathered = (np.empty((n_threads, 2 * m_gather + _SCAN_SKIP), dtype=np.float64)
                     if m_gather else None)
    unit_iota = np.arange(m_gather, dtype=np.int32) if m_gather else None
    # at most max_sur surrogates and max_comp competitors per split (n - 1 splits at most)
    sur_cap = max(16, min((n - 1) * max_sur, PREALLOC_ROWS))
    comp_cap = max(16, min((n - 1) * max_comp, PREALLOC_ROWS))
    n_sets = 16 if lm else 0  # rows of the level sets, grown like the node tables
    marks = search_marks(tg)  # the scans step 1 compiles in (one set per fit)
    compiled = n_threads == 1 and not mv and COMPILED_DRIVER  # one compiled call grows it
    if compiled:
        sizes = Sizes(cap, n_val, row, n_lf, n_li, n_present, n_sets, n_words, sur_cap,
                      comp_cap)
    if compiled and cap <= SMALL_FIT_ROWS:
        return _grown(*_grow_serial(X, presorted, _EMPTY_NODES, tg, rules, _EMPTY_WORK,
                                    _EMPTY_SETS, _EMPTY_TABLES, sizes,
                                    cat if n_cat else None, bitsets, unit_gathered,
                                    unit_iota, *marks))
    nodes = Nodes(np.zeros((cap, _N_INT), dtype=np.int32),  # ids, depths, counts < 2**31
                  np.zeros((cap, _N_FLOAT), dtype=np.float64),
                  np.zeros((cap, n_val), dtype=np.float64))
    # A row per thread of buffers: split candidates in the search, a side buffer in the
    # partition. goes_left is padded by 3 bytes: the 16-key partition reads each mark as
    # a 4-byte word.
    work = Work(np.zeros((n_threads, row), dtype=np.float64),
                np.empty((n_threads, n + LANES), dtype=np.int32),  # room for a block
                np.zeros(X.shape[0] + 3, dtype=np.uint8),
                np.empty(0, dtype=np.int32),
                np.zeros((n_threads, n_lf), dtype=np.float64),
                np.zeros((n_threads, n_li), dtype=np.int64),
                np.zeros((n_threads, n_present), dtype=np.float64))
    level_sets = np.zeros((n_sets, 2, n_words), dtype=np.uint64)
    missing = np.zeros((p if mv else 0, -(-X.shape[0] // 8)), dtype=np.uint8)
    # Regression with unit weights: the responses of a pair's present cases are read
    # once, into a row of ``gathered`` (_gathered_best)
    gather = mv and not is_class and tg.unit_weights
    gathered = np.empty((n_threads, 2 * n + _SCAN_SKIP if gather else 0), dtype=np.float64)
    iota = np.arange(n if gather else 0, dtype=np.int32)
    # Not zeroed: every row used is written whole before it is read (_write_surrogates,
    # _rank_competitors, _fill_competitors) and only those rows are kept (assemble_tree).
    # Zeroing the worst case cost ~5 ms of a 10^5-row fit on one thread: allocations
    # this large come from the heap once big arrays have been freed, and calloc then
    # clears them page by page; uncleared, the pages never used are never touched.
    tables = Tables(_uncleared((sur_cap, 4), np.int64), _uncleared((sur_cap, 3), np.float64),
                    _uncleared((comp_cap, 3), np.int64), _uncleared((comp_cap, 2), np.float64),
                    np.zeros(3, dtype=np.int64))

    pool = chunk_pool(n_threads)
    try:
        if mv:
            run_chunks(pool, n_threads, _missing_bits, X, missing)
        n_nodes = 1
        if compiled:
            nodes, level_sets, tables, n_nodes, n_rows = _grow_serial(
                X, presorted, nodes, tg, rules, work, level_sets, tables, sizes,
                cat if n_cat else None, bitsets, unit_gathered, unit_iota, *marks)
            fr = Frontier(*(np.zeros(0),) * 5)  # nothing left for the loop below
        else:
            if tg.shift:
                run_chunks(pool, min(n_threads, p), _pack_labels, keys, tg.y_class, tg.shift)
            rules, fr = _start(keys, nodes, tg, rules, False)
        while fr.node.shape[0] > 0:
            m = fr.node.shape[0]
            splits = _level_splits(m)
            # Capacity for the worst case (every frontier node splits).
            _grow_tables(nodes, n_nodes + 2 * m)
            # Steps 1 and 2 on a batch of frontier nodes at a time, so that the
            # (node, feature) results take a bounded amount of memory.
            n_batch = min(m, SEARCH_BATCH) * p
            all_pairs = Pairs(np.empty(n_batch, dtype=np.float64),
                              np.empty(n_batch, dtype=np.int64),
                              np.zeros(n_batch if mv else 0, dtype=np.int64),
                              np.zeros(n_batch if bitsets else 0, dtype=np.uint64),
                              np.zeros(n_batch if bitsets else 0, dtype=np.uint64))
            all_sur = SurrogatePairs(*(np.zeros(n_batch if mv else 0, dtype=dt)
                                       for dt in (np.float64, np.float64, np.int64,
                                                  np.int64)),
                                     np.zeros(m * max_sur if mv else 0, dtype=np.int64),
                                     np.zeros(m if mv else 0, dtype=np.int64))
            n_split = 0
            for b0 in range(0, m, SEARCH_BATCH):
                b = slice(b0, min(m, b0 + SEARCH_BATCH))
                bm = b.stop - b.start
                n_pairs = bm * p
                # room for every row this batch may write
                if lm:
                    need = n_rows + bm * (1 + (max_sur + max_comp if lm else 0))
                    if need > level_sets.shape[0]:
                        level_sets.resize((max(need, level_sets.shape[0] * 5 // 4), 2,
                                           n_words), refcheck=False)
                for arr, used, per in ((tables.sur_i, 0, max_sur), (tables.sur_f, 0, max_sur),
                                       (tables.comp_i, 1, max_comp),
                                       (tables.comp_f, 1, max_comp)):
                    need = int(tables.rows[used]) + bm * per
                    if need > arr.shape[0]:
                        arr.resize((max(need, arr.shape[0] * 5 // 4), arr.shape[1]),
                                   refcheck=False)
                pairs = Pairs(all_pairs.delta[:n_pairs], all_pairs.pos[:n_pairs],
                              all_pairs.present[:n_pairs if mv else 0],
                              all_pairs.left_bits[:n_pairs if bitsets else 0],
                              all_pairs.level_bits[:n_pairs if bitsets else 0])
                batch = fr.rows(b)
                if mv:
                    run_chunks(pool, min(n_threads, n_pairs), _search_mv, missing, presorted,
                               batch, nodes, tg, rules, work, pairs, gathered, iota,
                               step_counters(n_threads))
                else:
                    run_chunks(pool, min(n_threads, n_pairs), SEARCH_KERNELS[marks],
                               presorted, batch,
                               nodes, tg, rules, work, pairs, step_counters(n_threads),
                               _case_blocks(batch.start, batch.end, CASE_BLOCK),
                               unit_gathered, unit_iota)
                    if n_cat:
                        run_chunks(pool, min(n_threads, bm * n_cat), _search_subsets,
                                   presorted, batch, nodes, tg, rules, work, pairs, cat)
                batch_splits = Splits(*(a[b] for a in splits))
                # step 2 in chunks only where a batch has enough nodes to share out
                step2_chunks = min(n_threads, bm) if bm >= STEP2_MIN_NODES else 1
                run_chunks(pool, step2_chunks, _choose, X, presorted, batch, nodes, tg, rules,
                           pairs, batch_splits)
                _mark_sides(presorted, batch, batch_splits, tg.shift, work.goes_left)
                n_new, n_new_rows = _number_splits(presorted, batch, nodes, batch_splits,
                                                   n_nodes + 2 * n_split, n_rows)
                n_rows += n_new_rows
                tables.rows[2] = n_rows
                # per-node steps run in chunks of batch rows; a subset split searched
                # again (no bitsets kept) takes the first thread's scratch: one chunk
                node_chunks = min(n_threads, bm) if bitsets or not lm else 1
                if mv and n_new:
                    run_chunks(pool, node_chunks, _mark_mv, X, presorted, batch, nodes, tg,
                               rules, batch_splits, pairs, work, level_sets)
                    sur = SurrogatePairs(*(a[:n_pairs] for a in all_sur[:4]),
                                         all_sur.pick[:bm * max_sur],
                                         all_sur.level_row[:bm])
                    if max_sur:
                        sp = np.flatnonzero(batch_splits.feat >= 0).astype(np.int64)
                        run_chunks(pool, min(n_threads, sp.shape[0] * p), _search_surrogates,
                                   X, presorted, batch, tg, rules, batch_splits, pairs, sp,
                                   work, sur, step_counters(n_threads))
                    # picks (chunks), rows in node order (serial), then the rows written
                    # and the cases sent (chunks)
                    if max_sur:
                        run_chunks(pool, min(n_threads, bm), _pick_surrogates, p, batch,
                                   rules, batch_splits, sur)
                    _number_surrogates(presorted, batch, nodes, rules, batch_splits, sur,
                                       tables)
                    run_chunks(pool, min(n_threads, bm), _send_missing, X, presorted, batch,
                               nodes, tg, rules, batch_splits, pairs, sur, work, level_sets,
                               tables)
                elif n_new_rows:
                    _record_subsets(presorted, batch, nodes, tg, rules, batch_splits, pairs,
                                    work, level_sets)
                if max_comp and n_new:
                    picks = np.empty((bm, max_comp), dtype=np.int64)
                    run_chunks(pool, step2_chunks, _pick_competitors, batch, nodes, rules,
                               batch_splits, pairs, picks)
                    _rank_competitors(presorted, batch, nodes, rules, batch_splits, pairs, mv,
                                      tables, picks)
                    run_chunks(pool, node_chunks, _fill_competitors, X, presorted, batch,
                               nodes, tg, rules, batch_splits, pairs, work,
                               level_sets if lm else None, tables)
                n_rows = int(tables.rows[2])
                n_split += n_new
            if n_split == 0:
                break
            sp_index = np.flatnonzero(splits.feat >= 0).astype(np.int64)
            if mv:
                # three-way partition of every feature first: the children's statistics
                # are read from the split feature's partitioned segment
                run_chunks(pool, min(n_threads, sp_index.shape[0] * p), _partition_mv, keys,
                           tg.shift, sp_index, splits, fr, work)

            n_child = 2 * n_split
            kids = Children(np.empty(n_child, dtype=np.int64),
                            np.empty(n_child, dtype=np.int64),
                            np.empty(n_child, dtype=np.int64),
                            np.zeros(n_child, dtype=np.float64),
                            np.zeros(n_child, dtype=np.float64),
                            np.zeros(n_child, dtype=np.uint8))
            run_chunks(pool, min(n_threads, n_child), _children, keys, sp_index, fr, splits,
                       nodes, tg, rules, kids)

            # Only splits with a child that may split again need sorted child segments.
            sides = kids.ok[0::2] | (kids.ok[1::2] << 1)  # 1 left, 2 right, 3 both
            needs = sides.astype(bool)
            if mv:  # nodes where cases stay are partitioned already
                needs &= splits.stop[sp_index] == fr.end[sp_index]
            part_index = sp_index[needs]
            if part_index.shape[0] > 0:
                run_chunks(pool, min(n_threads, part_index.shape[0] * p), _partition, keys,
                           tg.shift, part_index, np.ascontiguousarray(sides[needs]), splits,
                           fr, work, simd, step_counters(n_threads))
            n_nodes += n_child
            fr = kids.frontier()
    finally:
        if pool is not None:
            pool.shutdown(wait=True)

    return _grown(nodes, level_sets, tables, n_nodes, n_rows)


def _grown(nodes, level_sets, tables, n_nodes, n_rows):
    """:func:`grow`'s result from its tables. Views of the first n_nodes rows:
    assemble_tree copies what it keeps and frees each over-allocated table as it goes, so
    they are never duplicated whole."""
    n_sur, n_comp = int(tables.rows[0]), int(tables.rows[1])
    return Grown(nodes.inode[:n_nodes], nodes.fnode[:n_nodes], nodes.value[:n_nodes],
                 level_sets[:n_rows],
                 Tables(tables.sur_i[:n_sur], tables.sur_f[:n_sur], tables.comp_i[:n_comp],
                        tables.comp_f[:n_comp], tables.rows))
