"""The records a fit's kernels share, and the columns of the node tables.

Growing T_max passes the same state to every step of every level. It travels as
NamedTuples of arrays and scalars (Numba takes them as arguments), so that a kernel
names what it reads (``rules.min_leaf``, ``fr.start``) instead of taking a long list of
loose arrays:

- :class:`Nodes` — the node tables: an integer and a float table, one row per node of
  T_max, with the columns ``I_*`` and ``F_*`` below;
- :class:`Frontier` — the nodes of the current depth level that may still split, each
  with its position range ``[start, end)`` of every row of the presorted keys;
- :class:`Rules` — the stopping rules and search settings of docs/maths.md §2 (minimum
  node and leaf sizes, depth, the tie tolerance, the number of surrogates, ...);
- :class:`Pairs` and :class:`SurrogatePairs` — per (node, feature) results of a level's
  search (the best split of each pair, the best surrogate of each pair);
- :class:`Splits` — the split chosen for each frontier node;
- :class:`Children` — the children written by step 3;
- :class:`Tables` — the surrogate and competitor tables, with the columns ``S_*`` and
  ``C_*``;
- :class:`Work` — per-thread scratch buffers;
- :class:`Sizes` — the sizes the serial driver needs to allocate once.

The targets of a fit (labels or responses, weights, class factors, criterion) travel in
:class:`cartjit.engine.scans.Targets`, the presorted keys in
:class:`cartjit.engine.presort.Presorted`.
"""
from __future__ import annotations

import numpy as np
from typing import NamedTuple


#: Frontier nodes searched at once: bounds the per-(node, feature) result arrays
#: (16 bytes each) of the widest levels.
SEARCH_BATCH = 4096

# Columns of the integer and float node tables (the engine's own: the tree leaves the
# engine through cartjit.engine.assembly.assemble_tree).
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
    simd: bool                     # 16-key blocks (cartjit.engine.speed)
    max_exhaustive: int            # subset search over all subsets up to this many levels
    max_surrogate: int             # surrogate splits kept per node
    use_surrogate: int             # 0, 1, 2: how cases missing the split feature go down
    surrogate_style: int           # 0, 1: the total of the agreement
    max_competitor: int            # competitor splits kept per node
    #: m features drawn at random for each node's search (a random forest); 0: every
    #: feature (cartjit.engine.draws)
    max_features: int = 0
    feature_seed: int = 0          # the tree's seed of those draws (>= 0)


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


class SurrogateTable(NamedTuple):
    """The surrogate table (:class:`Tables` ``sur_i`` and ``sur_f``) with the level sets
    its categorical rows name: what step 2 writes a split node's surrogates to and routes
    its cases missing the split feature by (:func:`cartjit.engine.surrogates._send_missing`).
    Flat (a launch cannot pass a record inside a record)."""

    sur_i: np.ndarray       # int64 (cap, 4): feature, level-set row, low side left, count
    sur_f: np.ndarray       # float64 (cap, 3): threshold, agreement, adjusted agreement
    level_sets: np.ndarray  # uint64 (cap, 2, n_words) the level sets


class NodeSpan(NamedTuple):
    """One frontier node on one feature's keys: its present cases ``[start, pend)``, those
    missing the feature ``[pend, end)`` (``pend == end``: none), and its moments."""

    node: int      # int64 node id
    start: int     # int64 first position of the node's segment
    pend: int      # int64 end of its cases with the feature present
    end: int       # int64 one past its last position
    mean: float    # float64 ȳ(t) (regression)
    sum: float     # float64 Σ w (y - ȳ(t)) (regression)


class MissingScan(NamedTuple):
    """What step 1 reads for data with missing values besides the growth's records: the
    bitmap of missing values, the scratch of the regression scans over gathered
    responses (:mod:`cartjit.engine.gathered`, regression with unit weights), and the
    step's counters."""

    bits: np.ndarray   # uint8 (p, ceil(n / 8)) a bit per (feature, case): missing
    ys: np.ndarray     # float64 (n_chunks, 2 n + _SCAN_SKIP), a row per thread; 0 columns if unused
    iota: np.ndarray   # int32 (0, 1, ..., n - 1); empty if unused
    units: np.ndarray  # int64 the step's counters (cartjit.engine.speed.step_counters)


class Totals(NamedTuple):
    """What a scan needs to know of the cases of the segment it scans, as a whole."""

    total: np.ndarray  # float64 (J,) their class counts (classification)
    imp: float         # their impurity
    mean: float        # their ȳ (regression)
    w_total: float     # their weight W
    s_total: float     # their Σ w (y - ȳ) (regression)


class Share(NamedTuple):
    """Chunk c's share of a step whose chunks take blocks of rows as they go
    (:func:`cartjit.engine.speed._take_case_block`)."""

    units: np.ndarray   # int64 the step's counters (step_counters)
    bounds: np.ndarray  # int64 the blocks of the batch's rows (_case_blocks)
    c: int              # int64 this chunk (its scratch, its own features)
    n_chunks: int       # int64 the number of chunks


class Work(NamedTuple):
    """Buffers of one growth: one row per thread where threads write."""

    scratch: np.ndarray    # float64 (n_threads, >= 3J) running class counts
    buffers: np.ndarray    # int32 (n_threads, n + 16) split candidates / partition side buffer
    goes_left: np.ndarray  # uint8 mark by case (+ 3 bytes of padding)
    no_ranks: np.ndarray   # int32 empty: the ranks of a feature without ties
    level_f: np.ndarray    # float64 (n_threads, ...) per-level statistics (subset splits)
    level_i: np.ndarray    # int64 (n_threads, 4 L_max) codes, cases, ranks, sides of levels
    present: np.ndarray    # float64 (n_threads, >= max(J, 3)) class counts of the cases
    #: uint8 (batch rows, p): feature f may split the batch's node j (Rules.max_features
    #: > 0; no rows otherwise), and int64 (p,) scratch of the draws
    drawn: np.ndarray = np.zeros((0, 0), dtype=np.uint8)
    order: np.ndarray = np.zeros(0, dtype=np.int64)


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
