"""Growing T_max: split level by level on the presorted keys, never sorting again.

The keys come from :func:`cartjit.engine.presort.presort`: for every feature, the cases in
increasing order of that feature. A node owns the same position range ``[start, end)``
of every row of keys, holding its cases in increasing order of that row's feature.

Growing (:func:`grow`, the driver in this module) proceeds one depth level at a time over the *frontier*, the nodes
of the current depth that may still split. Each level runs four steps, and every kernel
of a step lives in the module named after it:

1. **search** (:mod:`cartjit.engine.search`) — every (node, feature) pair of the
   frontier is scanned independently for its best split;
2. **choose** (:mod:`cartjit.engine.choose`) — per node, the best feature is chosen in
   feature order with the tie tolerance, the stopping rules of docs/maths.md §2 decide between split
   and leaf, the split is recorded, and then its cases are marked left or right
   (:mod:`cartjit.engine.children`);
3. **children** (:mod:`cartjit.engine.children`) — the children are written to the node
   tables (ids in breadth-first order, so children follow parents and ``right == left + 1``) with
   their class counts or moments (read from the split feature's segment, which is
   already split at the split position); those that may split form the next frontier;
4. **partition** (:mod:`cartjit.engine.children`) — for the nodes with a child in the
   next frontier, every other feature's segment is *stably partitioned* into the cases going
   left and right, so every child segment is again sorted. Splits into two leaves skip
   this step.

Steps 1, 3 and 4, and in step 2 the choice (not the marks) and the ranking of
competitors, are cut into ``n_threads`` chunks of independent work, each with its own
scratch buffer, run by :func:`cartjit.engine.speed.run_chunks` (the kernels do not know
how). The searches and the partition share their (node, feature) pairs out by feature
as the chunks go (:func:`cartjit.engine.speed._take_block`). The driver is Python
calling serial kernels, a few calls per level (docs/design.md says why: compile time);
a small fit on one thread runs the whole growth in one compiled call
(:func:`_grow_serial`) instead. Steps 1 and 2 run on
at most ``SEARCH_BATCH`` frontier nodes at a time. The node tables start at their bound
(2 n - 1 rows, up to ``PREALLOC_ROWS``) and grow in place by a quarter past it. The
result never depends on the number of threads.

What travels together through the kernels is bundled in the NamedTuples of
:mod:`cartjit.engine.records` and :class:`cartjit.engine.scans.Targets` (labels or
responses, weights, class factors, criterion, label packing).

For classification the keys carry the class labels (``case << shift | class``, see
:func:`grow`), so ``key >> shift`` is the case wherever a row of X, a weight or a mark
is looked up.

The same kernels grow classification trees (``criterion`` < ``SQUARED_ERROR``, labels in
``y_class``) and regression trees (``y_reg``), so one compiled signature serves both,
except step 1 and the serial driver: they take scan marks (:func:`search_marks`), so
that a fit compiles only the scans it can reach.
Case indices refer to rows of the full arrays ``X``, ``y_*`` and ``w``; a subset of cases
(a cross-validation fold) is grown by passing only its keys
(:func:`cartjit.engine.presort.subset_keys`).
"""

from __future__ import annotations

from . import speed
import numpy as np
from typing import NamedTuple

from .assembly import _grown
from .draws import draw_frontier
from .children import (_children, _mark_sides, _node_stats, _number_splits, _partition,
                       _partition_mv)
from .choose import (_choose, _fill_competitors, _pick_competitors, _rank_competitors,
                     _record_subsets)
from .speed import jit
from .gathered import GATHER_MAX, GATHER_MIN, _SCAN_SKIP
from .impurity import ENTROPY, SQUARED_ERROR, xlogx_table
from .missing import _mark_mv, _missing_bits, _search_mv
from .presort import PARALLEL_MIN_KEYS, as_kernel_array
from .speed import chunk_pool, run_chunks
from .records import (Children, F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, Frontier,
                      I_DEPTH, I_FEATURE, I_LEFT, I_LEVEL_ROW, I_N, I_PARENT, I_RIGHT,
                      MissingScan, Nodes, Pairs, Rules, SEARCH_BATCH, Share, Sizes, Splits,
                      SurrogatePairs, SurrogateTable, Tables, Work, _N_FLOAT, _N_INT)
from .scans import Targets
from .search import SEARCH_KERNELS, _search, search_marks
from .speed import LANES
from .subsets import BITSET_LEVELS, float_scratch_size, int_scratch_size
from .subsets import _search_subsets
from .surrogates import (_number_surrogates, _pick_surrogates, _search_surrogates,
                         _send_missing)
from .speed import CASE_BLOCK, _case_blocks, step_counters
#: The splits are chosen and the competitors ranked in chunks from this many nodes in a
#: batch; a smaller batch is one call (a fraction of a microsecond of work a node: less
#: than handing chunks to the threads costs).
STEP2_MIN_NODES = 256


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
    tg : :class:`cartjit.engine.scans.Targets`.
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
                  rules.max_competitor, rules.max_features, rules.feature_seed)
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


#: Up to this many node rows (2 n - 1 for n cases) :func:`_grow_serial` allocates the
#: tables itself (:func:`grow` hands it the empty tables below), sparing a small fit
#: the NumPy calls. Larger tables are NumPy's zero pages,
#: never touched where unused (a compiled ``np.zeros`` writes every page).
SMALL_FIT_ROWS = 4096

# The tables' types without rows: "allocate them here" to _grow_serial (no row can be
# written to them, so they hold no state).
_F2 = np.zeros((0, 0), dtype=np.float64)
_I2 = np.zeros((0, 0), dtype=np.int64)
_EMPTY_NODES = Nodes(np.zeros((0, 0), dtype=np.int32), _F2, _F2)
_EMPTY_WORK = Work(_F2, np.zeros((0, 0), dtype=np.int32), np.zeros(0, dtype=np.uint8),
                   np.zeros(0, dtype=np.int32), _F2, _I2, _F2,
                   np.zeros((0, 0), dtype=np.uint8), np.zeros(0, dtype=np.int64))
_EMPTY_SETS = np.zeros((0, 0, 0), dtype=np.uint64)
_EMPTY_TABLES = Tables(_I2, _F2, _I2, _F2, np.zeros(0, dtype=np.int64))


@jit
def _missing_step(X, ps, batch, nodes, tg, rules, part, pairs, work, level_sets, tables,
                  sur_all, n_pairs, cat):
    """Step 2 of :func:`_grow_serial` on the missing-value path, for a batch where some
    node split: mark the cases (:func:`_mark_mv`), find, pick and number the split nodes'
    surrogates, and send the cases missing the split feature (:func:`_send_missing`),
    as :func:`grow`'s loop does with one chunk each. ``sur_all`` is the level's
    :class:`SurrogatePairs`, of which the batch takes the first rows; ``cat`` the
    categorical features or ``None`` (then no level sets are written)."""
    bm = batch.node.shape[0]
    max_sur = rules.max_surrogate
    if cat is None:
        _mark_mv(X, ps, batch, nodes, tg, rules, part, pairs, work, None, 0, 1)
    else:
        _mark_mv(X, ps, batch, nodes, tg, rules, part, pairs, work, level_sets, 0, 1)
    sur = SurrogatePairs(sur_all.agree[:n_pairs], sur_all.adj[:n_pairs],
                         sur_all.pos[:n_pairs], sur_all.low_left[:n_pairs],
                         sur_all.pick[:bm * max_sur], sur_all.level_row[:bm])
    if max_sur:
        sp = np.flatnonzero(part.feat >= 0)
        _search_surrogates(X, ps, batch, tg, rules, part, pairs, sp, work, sur,
                           step_counters(1), 0, 1)
        _pick_surrogates(ps.keys.shape[0], batch, rules, part, sur, 0, 1)
    _number_surrogates(ps, batch, nodes, rules, part, sur, tables)
    _send_missing(X, ps, batch, nodes, tg, rules, part, pairs, sur, work,
                  SurrogateTable(tables.sur_i, tables.sur_f, level_sets), 0, 1)


@jit
def _grow_serial(X, ps, nodes, tg, rules, work, level_sets, tables, sz, cat, bitsets,
                 unit, marks, mv):
    """:func:`grow` on one thread, compiled: the set-up (:func:`_start`) and then steps 1
    to 4 call the kernels above exactly as the Python loop of :func:`grow` does with one
    chunk each, so the tree is the same; only the dispatches (a dozen microseconds each,
    most of a small fit) and the per-level bookkeeping leave Python.

    ``cat`` is the categorical features, or ``None`` when there are none: Numba then
    prunes the ``cat is None`` branches before typing, so that a numeric fit compiles no
    subset code (the subset search, the level sets of competitors).

    ``mv`` is the :class:`MissingScan` of a growth on the missing-value path (NaN in X,
    or surrogates asked for; its bitmap of missing values zero, written here), or
    ``None``: likewise pruned, so that a fit on complete data compiles none of the
    missing-value steps (the search of :mod:`cartjit.engine.missing`, the surrogates,
    the three-way partition).

    ``unit`` is ``(gathered, iota)``, :func:`_search`'s scratch for large segments (one
    row, or ``None``), on complete data, and ``None`` on the missing-value path;
    ``marks`` the tuple ``(reg, cls, gini, runs)`` of its scan marks
    (:func:`search_marks`): the growth is compiled once for each set, with only the
    scans it names.

    ``nodes``, ``work``, ``level_sets`` and ``tables`` are :func:`grow`'s, or, for a small
    fit, the empty ones above (``_EMPTY_NODES`` ...): the tables of the shapes ``sz`` are
    then allocated here, cleared or not as :func:`grow` allocates them.

    Returns ``(nodes, level_sets, tables, n_nodes, n_rows)``: the tables, reallocated
    where they needed more rows, the number of nodes and of level-set rows used.
    """
    keys = ps.keys
    p = keys.shape[0]
    reg, cls, gini, runs = marks
    if mv is not None:  # the missing-value path
        _missing_bits(X, mv.bits, 0, 1)
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
                    np.zeros((1, sz.n_present), dtype=np.float64),
                    np.zeros((min(keys.shape[1], SEARCH_BATCH) if rules.max_features else 0,
                              p if rules.max_features else 0), dtype=np.uint8),
                    np.zeros(p if rules.max_features else 0, dtype=np.int64))
        level_sets = np.zeros((sz.n_sets, 2, sz.n_words), dtype=np.uint64)
        tables = Tables(np.empty((sz.sur_cap, 4), dtype=np.int64),
                        np.empty((sz.sur_cap, 3), dtype=np.float64),
                        np.empty((sz.comp_cap, 3), dtype=np.int64),
                        np.empty((sz.comp_cap, 2), dtype=np.float64),
                        np.zeros(3, dtype=np.int64))
    rules, fr = _start(keys, nodes, tg, rules, tg.shift > 0)
    max_comp = rules.max_competitor
    max_sur = rules.max_surrogate
    n_nodes = 1
    n_rows = np.int64(0)  # not the literal 0: _number_splits would compile for it too
    while fr.node.shape[0] > 0:
        m = fr.node.shape[0]
        splits = _level_splits(m)
        need = n_nodes + 2 * m  # every frontier node may split
        nodes = Nodes(_more_rows(nodes.inode, need), _more_rows(nodes.fnode, need),
                      _more_rows(nodes.value, need))
        # the missing-value path's arrays of a level, sliced by each batch as grow's are
        present = np.zeros(0, dtype=np.int64)
        sur_all = SurrogatePairs(np.zeros(0), np.zeros(0), present, present, present,
                                 present)
        if mv is not None:
            n_batch = min(m, SEARCH_BATCH) * p
            present = np.zeros(n_batch, dtype=np.int64)
            sur_all = SurrogatePairs(np.zeros(n_batch), np.zeros(n_batch),
                                     np.zeros(n_batch, dtype=np.int64),
                                     np.zeros(n_batch, dtype=np.int64),
                                     np.zeros(m * max_sur, dtype=np.int64),
                                     np.zeros(m, dtype=np.int64))
        n_split = 0
        for b0 in range(0, m, SEARCH_BATCH):
            b1 = min(m, b0 + SEARCH_BATCH)
            n_pairs = (b1 - b0) * p
            if level_sets.shape[0] > 0:
                per = 1 + max_comp if mv is None else 1 + max_sur + max_comp
                level_sets = _more_rows(level_sets, n_rows + (b1 - b0) * per)
            first = tables.rows[1] + (b1 - b0) * max_comp
            sur_rows = tables.rows[0] + (b1 - b0) * max_sur
            tables = Tables(_more_rows(tables.sur_i, sur_rows),
                            _more_rows(tables.sur_f, sur_rows),
                            _more_rows(tables.comp_i, first),
                            _more_rows(tables.comp_f, first), tables.rows)
            pairs = Pairs(np.empty(n_pairs, dtype=np.float64),
                          np.empty(n_pairs, dtype=np.int64),
                          present[:n_pairs if mv is not None else 0],
                          np.zeros(n_pairs if bitsets else 0, dtype=np.uint64),
                          np.zeros(n_pairs if bitsets else 0, dtype=np.uint64))
            batch = Frontier(fr.node[b0:b1], fr.start[b0:b1], fr.end[b0:b1],
                             fr.mean[b0:b1], fr.sum[b0:b1])
            if rules.max_features > 0:  # the nodes' random feature subsets
                draw_frontier(rules.feature_seed, batch.node, b1 - b0, rules.max_features,
                              work.order, work.drawn)
            # Numba prunes a branch on ``arg is not None`` where the argument is None, not
            # the other way round: each path's own code hangs on an argument that is None
            # on the other path (``unit`` on the missing-value path, ``mv`` off it).
            if unit is not None:
                share = Share(step_counters(1),
                              _case_blocks(batch.start, batch.end, CASE_BLOCK),
                              np.int64(0), np.int64(1))
                _search(ps, batch, nodes, tg, rules, work, pairs, share, unit[0], unit[1],
                        reg, cls, gini, runs)
                if cat is not None:
                    _search_subsets(ps, batch, nodes, tg, rules, work, pairs, cat, 0, 1)
            if mv is not None:  # the subsets too, with the cases missing each feature
                _search_mv(ps, batch, nodes, tg, rules, work, pairs,
                           MissingScan(mv.bits, mv.ys, mv.iota, step_counters(1)), cat, reg,
                           cls, 0, 1)
            part = Splits(splits.feat[b0:b1], splits.pos[b0:b1], splits.child_base[b0:b1],
                          splits.stop[b0:b1], splits.w_left[b0:b1], splits.w_right[b0:b1],
                          splits.tie_left[b0:b1])
            _choose(X, ps, batch, nodes, tg, rules, pairs, part, 0, 1)
            _mark_sides(ps, batch, part, tg.shift, work.goes_left)
            n_new, n_new_rows = _number_splits(ps, batch, nodes, part, n_nodes + 2 * n_split,
                                               n_rows)
            tables.rows[2] = n_rows + n_new_rows
            if mv is not None:
                if n_new:
                    _missing_step(X, ps, batch, nodes, tg, rules, part, pairs, work,
                                  level_sets, tables, sur_all, n_pairs, cat)
            if unit is not None:
                if cat is not None and n_new_rows:
                    _record_subsets(ps, batch, nodes, tg, rules, part, pairs, work,
                                    level_sets)
            if max_comp and n_new:
                picks = np.empty((b1 - b0, max_comp), dtype=np.int64)
                _pick_competitors(batch, nodes, rules, part, pairs, picks, 0, 1)
                _rank_competitors(ps, batch, nodes, rules, part, pairs, mv is not None,
                                  tables, picks)
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
        if mv is not None:
            # three-way partition of every feature first, as grow does
            _partition_mv(keys, tg.shift, sp_index, splits, fr, work, 0, 1)
        n_child = 2 * n_split
        kids = Children(np.empty(n_child, dtype=np.int64), np.empty(n_child, dtype=np.int64),
                        np.empty(n_child, dtype=np.int64), np.zeros(n_child, dtype=np.float64),
                        np.zeros(n_child, dtype=np.float64), np.zeros(n_child, dtype=np.uint8))
        _children(keys, sp_index, fr, splits, nodes, tg, rules, kids, 0, 1)
        # Only splits with a child that may split again need sorted child segments (on
        # the missing-value path, nodes where cases stay are partitioned already).
        n_part = 0
        sides = np.empty(n_split, dtype=np.uint8)
        for t in range(n_split):
            side = kids.ok[2 * t] | (kids.ok[2 * t + 1] << 1)
            if side and (mv is None or splits.stop[sp_index[t]] == fr.end[sp_index[t]]):
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

#: Grow on one thread in one compiled call (:func:`_grow_serial`);
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
    """The :class:`cartjit.engine.scans.Targets` of a growth, in the kernels' layouts."""
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


def _drawn_features(settings, p):
    """``Rules.max_features``: m when the nodes' searches draw m of the p features, 0
    when they search every feature (m unset, or m >= p: drawing p of p marks all)."""
    m = int(settings.max_features)
    return m if 0 < m < p else 0


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
    lm = max(n_levels.tolist(), default=0)  # (a list: cheaper than NumPy for a few)
    cat = np.flatnonzero(n_levels).astype(np.int64) if lm else _NO_FEATURES
    # Subset splits: per-thread scratch of per-level statistics, and a table of level
    # sets (one bit per level code) grown like the node tables.
    n_words = -(-lm // 64)
    n_lf = float_scratch_size(lm, n_val) if lm else 0
    n_li = int_scratch_size(lm) if lm else 0
    bitsets = 0 < lm <= BITSET_LEVELS  # see Pairs.left_bits
    max_sur = int(settings.max_surrogate)
    rules = Rules(int(max_depth), int(min_samples_split), int(min_samples_leaf),
                  float(settings.min_impurity_decrease), 0.0, bool(speed.SIMD),
                  int(settings.max_categories_exhaustive), max_sur,
                  int(settings.use_surrogate), int(settings.surrogate_style),
                  int(settings.max_competitor), _drawn_features(settings, X.shape[1]),
                  int(settings.feature_seed))
    mv = max_sur > 0 or bool(np.isnan(X).any())
    return GrowSetup(X, tg, rules, mv, n_val, row, n_present, lm, cat, n_words, n_lf, n_li,
                     bitsets)


def grow(problem, presorted, factor, settings, n_threads=1, setup=None):
    """Grow the tree on the cases in ``presorted.keys`` (see the module docstring).

    ``problem`` holds the cases (fields ``X``, ``y_class``, ``y_reg``, ``w``,
    ``unit_weights``, ``n_classes``, as :class:`cartjit.engine.fit.Problem`), ``factor`` the
    per-class factors c_j (empty for regression), ``settings`` the criterion and the
    stopping rules (fields ``criterion``, ``max_depth``, ``min_samples_split``,
    ``min_samples_leaf``, ``min_impurity_decrease``, as :class:`cartjit.engine.fit.Settings`).

    Returns a :class:`Grown` record of the node tables (views into over-allocated
    tables) from which :func:`assemble_tree` makes the :class:`cartjit.engine.tree.Tree`: an
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
    # the missing-value search keeps every scan and reads only (reg, cls): one compiled
    # driver for every classification criterion, not one per set of marks
    driver_marks = (marks[0], marks[1], None, None) if mv else marks
    compiled = n_threads == 1 and COMPILED_DRIVER  # one compiled call grows it
    # Regression with unit weights: the responses of a pair's present cases are read
    # once, into a row of ``gathered`` (_gathered_best)
    gather = mv and not is_class and tg.unit_weights
    if mv:  # the bitmap of missing values (written by _missing_bits) and scan scratch
        scan = MissingScan(np.zeros((p, -(-X.shape[0] // 8)), dtype=np.uint8),
                           np.empty((n_threads, 2 * n + _SCAN_SKIP if gather else 0),
                                    dtype=np.float64),
                           np.arange(n if gather else 0, dtype=np.int32),
                           np.zeros(0, dtype=np.int64))  # counters: one set per launch
    if compiled:
        sizes = Sizes(cap, n_val, row, n_lf, n_li, n_present, n_sets, n_words, sur_cap,
                      comp_cap)
        # the driver's arguments after the tables, the same for both calls below
        tail = (sizes, cat if n_cat else None, bitsets,
                None if mv else (unit_gathered, unit_iota), driver_marks,
                scan if mv else None)
    if compiled and cap <= SMALL_FIT_ROWS:
        return _grown(*_grow_serial(X, presorted, _EMPTY_NODES, tg, rules, _EMPTY_WORK,
                                    _EMPTY_SETS, _EMPTY_TABLES, *tail))
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
                np.zeros((n_threads, n_present), dtype=np.float64),
                np.zeros((min(n, SEARCH_BATCH) if rules.max_features else 0,
                          p if rules.max_features else 0), dtype=np.uint8),
                np.zeros(p if rules.max_features else 0, dtype=np.int64))
    level_sets = np.zeros((n_sets, 2, n_words), dtype=np.uint64)
    # Not zeroed: every row used is written whole before it is read (_write_surrogates,
    # _rank_competitors, _fill_competitors) and only those rows are kept (assemble_tree).
    # Allocations this large come from the heap once big arrays have been freed, and
    # calloc would clear them page by page; uncleared, pages never used are never touched.
    tables = Tables(_uncleared((sur_cap, 4), np.int64), _uncleared((sur_cap, 3), np.float64),
                    _uncleared((comp_cap, 3), np.int64), _uncleared((comp_cap, 2), np.float64),
                    np.zeros(3, dtype=np.int64))

    pool = chunk_pool(n_threads)
    try:
        n_nodes = 1
        if compiled:
            nodes, level_sets, tables, n_nodes, n_rows = _grow_serial(
                X, presorted, nodes, tg, rules, work, level_sets, tables, *tail)
            fr = Frontier(*(np.zeros(0),) * 5)  # nothing left for the loop below
        else:
            if mv:
                run_chunks(pool, n_threads, _missing_bits, X, scan.bits)
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
                if rules.max_features > 0:  # the nodes' random feature subsets
                    draw_frontier(rules.feature_seed, batch.node, bm, rules.max_features,
                                  work.order, work.drawn)
                if mv:
                    run_chunks(pool, min(n_threads, n_pairs), _search_mv, presorted, batch,
                               nodes, tg, rules, work, pairs,
                               scan._replace(units=step_counters(n_threads)),
                               cat if n_cat else None, None if is_class else True,
                               True if is_class else None)
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
                               rules, batch_splits, pairs, work, level_sets if lm else None)
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
                               nodes, tg, rules, batch_splits, pairs, sur, work,
                               SurrogateTable(tables.sur_i, tables.sur_f, level_sets))
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
