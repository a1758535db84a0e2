"""The compiled passes over a flat forest (:class:`cartjit.engine.forest.Forest`).

The forest's kernels, apart from the growth of its trees (:mod:`cartjit.engine.forest`):

* prediction (:func:`forest_sums`, :func:`forest_apply`): the rows are cut into chunks
  run in parallel; a chunk walks its rows down tree 0, then tree 1, ..., with several
  rows in flight, and a row adds up its end nodes' values in tree order, so the sums do
  not depend on the number of threads. Rows whose values are all finite, in a forest
  without subset splits, take the blind walk of the single tree's prediction (slots
  stepped without a test, leaves as self-loops); the others a careful walk that takes
  the rules of :func:`cartjit.engine.predict.route` wherever a threshold cannot decide
  (subset splits, missing values, surrogates, the majority), on the forest's own
  routing (:class:`ForestRouting`: rows only for the nodes that need one);
* the out-of-bag pass (:func:`oob_estimates`): each case's average over the trees for
  which it is out of bag, and the OOB error after every tree, summed per fixed chunk of
  cases and reduced in chunk order;
* Breiman's permutation importance (:func:`permutation_importance`), with permutations
  from a counter-based generator seeded per (tree, feature) (:func:`permutation`).

The kernels take the forest's arrays (:class:`ForestArrays`) and its ``Routing`` side
by side: a ``prange`` loop cannot take a record nested in a record. This module imports
only the prediction's routing, the array conventions and the speed machinery, so that
the kernels carry no other module's code (:data:`cartjit.engine.speed.ENGINE_MODULES`).
docs/forests.md states the definitions.
"""
from __future__ import annotations

import contextlib
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from .predict import BLIND_SLOTS, STEP, _level_side, blind_sweeps, surrogate_side
from .presort import as_kernel_array
from .speed import jit, jit_parallel, parallel_entry

__all__ = ["ForestRouting", "ForestArrays", "kernel_arrays", "MAJORITY_STOP",
           "MAJORITY_LEFT", "MAJORITY_RIGHT", "forest_sums", "forest_apply", "decide",
           "OOBTargets", "oob_targets", "risk_priors", "sample_risk", "OOBResult",
           "oob_estimates", "permutation", "Importance", "permutation_importance",
           "inbag_mask", "oob_rows", "chunk_rows", "CHUNK_ROWS", "OOB_CHUNK"]

#: Rows per chunk of the prediction passes at most (:func:`chunk_rows`): a chunk
#: walks its rows down tree 0, then tree 1, ..., so that a tree's nodes, once in
#: cache, serve every row of the chunk; the more rows, the fewer times each node comes
#: from memory (CPU time on 2·10^5 rows, 30 trees of 10^5 cases: 1.2 s with chunks of
#: 1,024 rows, 0.66 s with 4,096, 0.42 s with 50,000; docs/benchmarks.md, "Forests").
CHUNK_ROWS = 65536
#: Rows per chunk at least, and chunks per thread aimed at below CHUNK_ROWS rows.
MIN_CHUNK_ROWS = 256
CHUNKS_PER_THREAD = 4
#: Rows in flight while a chunk walks one tree (their chains of loads overlap).
SLOTS = 8
#: Rows per chunk of the out-of-bag pass: fixed, so that its per-chunk sums (the error
#: curve) are reduced alike on any number of threads.
OOB_CHUNK = 512



def inbag_mask(inbag, n):
    """The (B, n) boolean in-bag mask from packed bits (B, ceil(n / 8)), little-endian."""
    return np.unpackbits(inbag, axis=1, count=n, bitorder="little").astype(bool)



#: Columns of :attr:`ForestRouting.node`.
FR_LEVEL_ROW, FR_SUR_START, FR_N_SUR = 0, 1, 2
#: The majority side of a split node in :attr:`ForestRouting.majority` (2 bits a
#: node): a case that neither the split nor a surrogate routes stops (also at a
#: leaf, where it is never read), goes left, or goes right.
MAJORITY_STOP, MAJORITY_LEFT, MAJORITY_RIGHT = 0, 1, 2


#: The empty node index of a stored :class:`ForestRouting` (never written).
_NO_INDEX = np.zeros(0, dtype=np.int32)


class ForestRouting(NamedTuple):
    """How a forest routes a case that a threshold alone cannot (the rules of
    :func:`cartjit.engine.predict.route`, docs/maths.md §8), with a row only for the
    nodes that need one: a node with a subset split or surrogate splits has a row of
    ``node``; every other node costs the 2 bits of its majority side, and nothing at all
    when ``use_surrogate`` < 2 (the majority is then never read). A forest of ordered
    splits without surrogates thus has no row.

    ``nodes`` lists the nodes with a row, increasing; the kernels find a node's row, and
    a subset split's level sets, in dense indexes built for the call
    (:func:`kernel_arrays`: ``route_row``, ``level_row``, empty at rest). ``sur``,
    ``sur_threshold`` and ``level_sets`` are :class:`cartjit.engine.predict.Routing`'s,
    every tree's rows concatenated.
    """

    nodes: np.ndarray          # int64 (S,) absolute ids of the nodes with a row
    node: np.ndarray           # int64 (S, 3): level_row (-1: ordered split), first
    #                            surrogate row, number of surrogates
    sur: np.ndarray            # int64 (n_rows, 3): feature, level_row, low_left
    sur_threshold: np.ndarray  # float64 (n_rows,)
    level_sets: np.ndarray     # uint64 (m, 2, n_words) levels going left / right
    majority: np.ndarray       # uint8 (ceil(N / 4),): node t's side in bits 2 (t % 4)
    #                            and up of byte t // 4 (MAJORITY_*); empty unless
    #                            use_surrogate == 2
    subset_splits: bool        # whether some node splits by a subset of levels
    use_surrogate: int         # 0, 1 or 2
    route_row: np.ndarray = _NO_INDEX  # int32 (N,) for a call (kernel_arrays): each
    #                                    node's row of ``node``, -1 none; else empty
    level_row: np.ndarray = _NO_INDEX  # int32 (N,) for a call: a subset split's row of
    #                                    ``level_sets``, -1 none; else empty

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays."""
        return sum(getattr(self, name).nbytes for name in
                   ("nodes", "node", "sur", "sur_threshold", "level_sets", "majority",
                    "route_row", "level_row"))


class ForestArrays(NamedTuple):
    """A :class:`cartjit.engine.forest.Forest` as the kernels read it
    (:func:`kernel_arrays`)."""

    step: np.ndarray       # STEP records: threshold, child0 (itself at a leaf or a
    #                        subset split), feature
    left: np.ndarray       # the forest's own (N,), -1 at leaves
    feature: np.ndarray    # the forest's own int32 (N,), read only at split nodes
    threshold: np.ndarray  # the forest's own float64 (N,), read only at split nodes
    roots: np.ndarray      # int64 (B + 1,)
    value: np.ndarray      # float64 (N, K)


def kernel_arrays(forest):
    """The kernels' view of ``forest``, ``(ForestArrays, ForestRouting)``: its ``STEP``
    records, with leaves as self-loops with an infinite threshold and subset splits as
    self-loops (they leave the fast step for the routing), beside the forest's own
    arrays, which the routing reads at split nodes only; and its routing with the
    indexes of the nodes' routing rows and level-set rows filled in for the call (the
    forest stores only the nodes that have a row; a subset split's step then reads its
    level sets as directly as a tree's). The routing travels beside the arrays: a
    ``prange`` loop cannot take a record nested in a record."""
    left = forest.left
    routing = forest.routing
    is_leaf = left < 0
    n = left.shape[0]
    step = np.empty(n, dtype=STEP)
    step["threshold"] = np.where(is_leaf, np.inf, forest.threshold)
    own = is_leaf.copy()
    n_rows = routing.nodes.shape[0]
    route_row = level_row = _NO_INDEX
    if n_rows:
        n_sets = routing.level_sets.shape[0]
        if max(n_rows, n_sets) >= np.iinfo(np.int32).max:
            raise MemoryError(f"a forest with {n_rows} routing rows and {n_sets} level "
                              "sets is beyond this implementation (at most 2**31 - 2)")
        route_row = np.full(n, -1, dtype=np.int32)
        route_row[routing.nodes] = np.arange(n_rows, dtype=np.int32)
        level_row = np.full(n, -1, dtype=np.int32)
        level_row[routing.nodes] = routing.node[:, FR_LEVEL_ROW]
        own[routing.nodes[routing.node[:, FR_LEVEL_ROW] >= 0]] = True
    step["child0"] = np.where(own, np.arange(n), left)
    step["feature"] = np.where(is_leaf, 0, forest.feature)
    return ForestArrays(step, as_kernel_array(left, left.dtype),
                        as_kernel_array(forest.feature, np.int32),
                        as_kernel_array(forest.threshold, np.float64),
                        as_kernel_array(forest.roots, np.int64),
                        as_kernel_array(forest.value, np.float64)), \
        routing._replace(route_row=route_row, level_row=level_row)


def chunk_rows(n):
    """Rows per chunk of the prediction passes for n rows: enough chunks for
    :data:`CHUNKS_PER_THREAD` per Numba thread, within [:data:`MIN_CHUNK_ROWS`,
    :data:`CHUNK_ROWS`]. The sums do not depend on it (a row adds its trees in order)."""
    per = -(-n // (CHUNKS_PER_THREAD * numba.get_num_threads()))
    return int(min(CHUNK_ROWS, max(MIN_CHUNK_ROWS, per)))


@jit(inline="always")
def _missing_side(X, i, t, row, routing):
    """Steps 2 and 3 of :func:`_routed`, for row i of X missing node t's split
    feature (``row``: t's routing row, -1 none): 0 left, 1 right, -1 the case stops
    (inlined, docs/design.md)."""
    u = routing.use_surrogate
    d = np.int64(-1)
    if u > 0:
        if row >= 0:
            d = surrogate_side(X, i, routing.node[row, FR_SUR_START],
                               routing.node[row, FR_N_SUR], routing)
        if d < 0 and u == 2:
            m = (np.int64(routing.majority[t >> 2]) >> ((t & 3) << 1)) & 3
            if m == MAJORITY_LEFT:
                d = np.int64(0)
            elif m == MAJORITY_RIGHT:
                d = np.int64(1)
    return d


@jit
def _routed(X, i, t, left, feature, threshold, routing):
    """The child of split node t that row i of X goes to, or -1 where it stops: the
    rules of :func:`cartjit.engine.predict.route` (docs/maths.md §8) on the forest's
    routing. 1. The split: a present value takes the threshold, or the level sets of a
    subset split. 2. Otherwise, with ``use_surrogate`` >= 1, the node's surrogates in
    order (a node without a row has none). 3. Otherwise, with ``use_surrogate`` == 2,
    the majority side; a tie stops the case, as does anything else. A call, so that
    the walk's loop stays small. It takes the forest's arrays one by one, not their
    record: each array taken out of a record costs a reference count at every call
    (docs/design.md, "Figures behind the kernels' choices")."""
    sets = np.int64(-1)
    if routing.level_row.shape[0] > 0:
        sets = np.int64(routing.level_row[t])
    x = X[i, feature[t]]
    if sets >= 0:
        d = _level_side(x, sets, routing.level_sets)
    elif np.isnan(x):
        d = np.int64(-1)
    else:
        d = np.int64(x > threshold[t])
    if d < 0:
        row = np.int64(-1)
        if routing.route_row.shape[0] > 0:
            row = np.int64(routing.route_row[t])
        d = _missing_side(X, i, t, row, routing)
    return left[t] + d if d >= 0 else np.int64(-1)


@jit
def _walk_rows(fa, routing, X, rows, n_rows, root, ends):
    """The end node, in the tree whose root is ``root``, of rows ``rows[:n_rows]`` of X,
    written to ``ends[:n_rows]``: :data:`SLOTS` rows in flight, each stepped in turn; a
    present value at an ordered split takes the threshold, anything else :func:`_routed`."""
    step, left = fa.step, fa.left
    # out of the record once: each taking of an array is a reference count
    feature, threshold = fa.feature, fa.threshold
    slot = np.full(SLOTS, -1, dtype=np.int64)
    node = np.zeros(SLOTS, dtype=np.int64)
    nxt = 0
    active = 0
    for s in range(SLOTS):
        if nxt < n_rows:
            slot[s] = nxt
            node[s] = root
            nxt += 1
            active += 1
    while active > 0:
        for s in range(SLOTS):
            k = slot[s]
            if k < 0:
                continue
            t = node[s]
            rec = step[t]
            child = np.int64(rec.child0)
            if child != t:
                x = X[rows[k], rec.feature]
                if x == x:
                    node[s] = child + np.int64(x > rec.threshold)
                    continue
            if left[t] >= 0:  # a missing value, or a subset split
                d = _routed(X, rows[k], t, left, feature, threshold, routing)
                if d >= 0:
                    node[s] = d
                    continue
            ends[k] = t  # a leaf, or the case stops at t
            if nxt < n_rows:
                slot[s] = nxt
                node[s] = root
                nxt += 1
            else:
                slot[s] = -1
                active -= 1


@jit
def _blind_rows(fa, xs, p, rows, n_rows, root, ends):
    """:func:`_walk_rows` for a tree of ordered splits and rows whose values are all
    finite: ``BLIND_SWEEPS`` sweeps over :data:`BLIND_SLOTS` slots step every slot
    without a test (a leaf is a self-loop whose threshold is +inf; the sweeps of
    :func:`cartjit.engine.predict.blind_sweeps`), then a check ends the rows that
    reached a leaf. ``xs`` is X flattened (p values a row)."""
    step = fa.step
    leaf = root
    while np.int64(step[leaf].child0) != leaf:  # a leaf, for the empty slots
        leaf = np.int64(step[leaf].child0)
    slot = np.full(BLIND_SLOTS, -1, dtype=np.int64)
    base = np.zeros(BLIND_SLOTS, dtype=np.int64)
    node = np.full(BLIND_SLOTS, leaf, dtype=np.int64)
    nxt = 0
    active = 0
    for s in range(BLIND_SLOTS):
        if nxt < n_rows:
            slot[s] = nxt
            base[s] = rows[nxt] * p
            node[s] = root
            nxt += 1
            active += 1
    while active > 0:
        blind_sweeps(step, xs, base, node)
        for s in range(BLIND_SLOTS):
            k = slot[s]
            t = node[s]
            if k < 0 or np.int64(step[t].child0) != t:
                continue
            ends[k] = t
            if nxt < n_rows:
                slot[s] = nxt
                base[s] = rows[nxt] * p
                node[s] = root
                nxt += 1
            else:
                slot[s] = -1
                base[s] = 0
                node[s] = leaf
                active -= 1


@jit(inline="always")
def _split_rows(X, lo, m, subset_splits, rows):
    """Rows lo .. lo + m - 1 of X into ``rows``: those the blind walk may take (every
    value finite, and no subset split in the forest) first, the others after; returns
    how many come first."""
    n_blind = 0
    n_other = 0
    for i in range(lo, lo + m):
        finite = not subset_splits
        if finite:
            for f in range(X.shape[1]):
                if not np.isfinite(X[i, f]):
                    finite = False
                    break
        if finite:
            rows[n_blind] = i
            n_blind += 1
        else:
            n_other += 1
            rows[m - n_other] = i
    # the others were written from the end: put them back in row order
    a = n_blind
    b = m - 1
    while a < b:
        tmp = rows[a]
        rows[a] = rows[b]
        rows[b] = tmp
        a += 1
        b -= 1
    return n_blind


@jit(inline="always")
def _chunk_ends(fa, routing, X, rows, m, n_blind, root, ends):
    """The end nodes of ``rows[:m]`` in the tree rooted at ``root`` (into ``ends[:m]``):
    the blind walk for the first ``n_blind`` rows, the careful walk for the others."""
    p = X.shape[1]
    if n_blind > 0 and p > 0:
        _blind_rows(fa, X.reshape(X.shape[0] * p), p, rows, n_blind, root, ends)
    else:
        n_blind = 0
    if m > n_blind:
        _walk_rows(fa, routing, X, rows[n_blind:], m - n_blind, root, ends[n_blind:])


@jit(inline="always")
def _chunk_start(X, c, chunk_rows, subset_splits):
    """Chunk c of the prediction passes: its rows (:func:`_split_rows`: those the blind
    walk may take first), room for their end nodes, their number, and how many the
    blind walk takes."""
    lo = c * chunk_rows
    m = min(X.shape[0], lo + chunk_rows) - lo
    rows = np.empty(m, dtype=np.int64)
    ends = np.empty(m, dtype=np.int64)
    n_blind = _split_rows(X, lo, m, subset_splits, rows)
    return rows, ends, m, n_blind


@jit_parallel
def _forest_sums(fa, routing, X, chunk_rows, out):
    """Prediction: ``out[i] += value[end node of row i in tree b]`` for b = 0, 1, ...
    in that order (``out`` zeroed by the caller), chunks of rows in parallel."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_values = fa.value.shape[1]
    n_chunks = (n + chunk_rows - 1) // chunk_rows
    for c in prange(n_chunks):
        rows, ends, m, n_blind = _chunk_start(X, c, chunk_rows, routing.subset_splits)
        for b in range(n_trees):
            _chunk_ends(fa, routing, X, rows, m, n_blind, fa.roots[b], ends)
            for k in range(m):
                t = ends[k]
                i = rows[k]
                for j in range(n_values):
                    out[i, j] += fa.value[t, j]


@jit_parallel
def _forest_leaves(fa, routing, X, chunk_rows, out):
    """``out[i, b]`` = the node (of tree b's own numbering) where row i ends in tree b."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_chunks = (n + chunk_rows - 1) // chunk_rows
    for c in prange(n_chunks):
        rows, ends, m, n_blind = _chunk_start(X, c, chunk_rows, routing.subset_splits)
        for b in range(n_trees):
            root = fa.roots[b]
            _chunk_ends(fa, routing, X, rows, m, n_blind, root, ends)
            for k in range(m):
                out[rows[k], b] = ends[k] - root


@contextlib.contextmanager
def _threads(n_threads):
    """Numba's threads for the parallel passes: ``n_threads`` (None: Numba's own
    setting), capped at the threads it started; restored after."""
    if n_threads is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _rows(X):
    return as_kernel_array(X, np.float64)


def _prediction_pass(kernel, forest, X, out, n_threads):
    """``kernel`` (:func:`_forest_sums` or :func:`_forest_leaves`) over the rows of X
    into ``out``, on ``n_threads`` threads; ``out`` as it is without rows or trees."""
    if X.shape[0] and forest.n_trees:
        fa, routing = kernel_arrays(forest)
        with _threads(n_threads), parallel_entry():
            kernel(fa, routing, X, chunk_rows(X.shape[0]), out)
    return out


def forest_sums(forest, X, n_threads=None):
    """Σ_b value[end node of each row of X in tree b], added in tree order (float64,
    (n, K)); divided by B it is the forest's prediction. X: float64 (n, p), NaN missing,
    no infinity (the caller checks)."""
    X = _rows(X)
    out = np.zeros((X.shape[0], forest.value.shape[1]), dtype=np.float64)
    return _prediction_pass(_forest_sums, forest, X, out, n_threads)


def forest_apply(forest, X, n_threads=None):
    """The node where each row of X ends in each tree: int64 (n, B), node ids of each
    tree's own numbering (a leaf, or an internal node where a missing value stops)."""
    X = _rows(X)
    out = np.zeros((X.shape[0], forest.n_trees), dtype=np.int64)
    return _prediction_pass(_forest_leaves, forest, X, out, n_threads)


@jit(inline="always")
def _decide_row(v, cost, use_cost):
    """The class predicted from the (average) values ``v``: the lowest index of the
    largest value, or with ``use_cost`` the lowest index of the least expected cost
    Σ_j C(i|j) v_j (``cost[j, i]`` = C(i|j); docs/maths.md §1)."""
    k = v.shape[0]
    best = 0
    if use_cost:
        best_cost = np.inf
        for i in range(k):
            e = 0.0
            for j in range(k):
                e += cost[j, i] * v[j]
            if e < best_cost:
                best_cost = e
                best = i
    else:
        for i in range(1, k):
            if v[i] > v[best]:
                best = i
    return best


@jit
def _decide(values, cost, use_cost, out):
    for i in range(values.shape[0]):
        out[i] = _decide_row(values[i], cost, use_cost)


def decide(values, cost, use_cost):
    """The class index predicted from each row of ``values`` (n, J): the largest value,
    or with ``use_cost`` the least expected cost under ``cost`` (ties: lowest index)."""
    values = as_kernel_array(values, np.float64)
    out = np.empty(values.shape[0], dtype=np.int64)
    if values.shape[0]:
        _decide(values, as_kernel_array(cost, np.float64), bool(use_cost), out)
    return out


# --------------------------------------------------------------------------- out of bag

class OOBTargets(NamedTuple):
    """The learning cases' targets and how a prediction is made and costed."""

    y_class: np.ndarray      # int32 class indices (empty for regression)
    y_reg: np.ndarray        # float64 responses (empty for classification)
    w: np.ndarray            # float64 case weights (empty with unit_weights)
    unit_weights: bool
    n_classes: int           # J; 0 for regression
    cost: np.ndarray         # float64 (J, J) C(i|j) as cost[j, i] (empty: regression)
    use_cost: bool           # predict by least expected cost (else the largest value)


def oob_targets(problem, settings, voting):
    """:class:`OOBTargets` of ``problem`` (the learning cases) and ``settings``."""
    w = as_kernel_array(problem.w, np.float64)
    if not problem.is_classification:
        return OOBTargets(np.zeros(0, np.int32), as_kernel_array(problem.y_reg, np.float64),
                          w, bool(problem.unit_weights), 0, np.zeros((0, 0)), False)
    use_cost = voting == "proba" and not settings.default_cost
    return OOBTargets(as_kernel_array(problem.y_class, np.int32), np.zeros(0), w,
                      bool(problem.unit_weights), int(problem.n_classes),
                      as_kernel_array(settings.cost, np.float64), bool(use_cost))


def risk_priors(settings):
    """The priors of the OOB error: None where they are estimated from the cases
    scored (``priors="empirical"``), else π."""
    if isinstance(settings.priors, str):
        if settings.priors == "empirical":
            return None
        return None if settings.priors != "equal" else "equal"
    return np.asarray(settings.priors, dtype=np.float64)


def sample_risk(class_loss, class_weight, priors):
    """The error of scored cases from their per-class sums, along the last axis:
    ``class_loss[..., j]`` = Σ w C(pred|j) and ``class_weight[..., j]`` = Σ w over the
    class-j cases scored. With ``priors`` None (empirical) the weighted mean cost Σ_j
    L_j / Σ_j W_j; with π (or ``"equal"``) Σ_j π(j) L_j / W_j over the classes with
    scored cases, divided by their Σ π(j) (docs/maths.md §5; Breiman's test-sample
    estimate). Regression passes one column of squared errors: their weighted mean.
    NaN where nothing was scored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if priors is None or class_loss.shape[-1] == 1:
            total = class_weight.sum(axis=-1)
            return np.where(total > 0, class_loss.sum(axis=-1) / total, np.nan)
        n_classes = class_loss.shape[-1]
        pi = (np.full(n_classes, 1.0 / n_classes) if isinstance(priors, str)
              else np.asarray(priors, dtype=np.float64))
        present = class_weight > 0
        rate = np.where(present, class_loss / np.where(present, class_weight, 1.0), 0.0)
        mass = (present * pi).sum(axis=-1)
        return np.where(mass > 0, (rate * pi).sum(axis=-1) / mass, np.nan)


@jit(inline="always")
def _case_loss(tg, i, v, is_class):
    """The predicted class of case i from its average values ``v`` (-1 for regression)
    and its loss: the cost C(pred | y) or the squared error."""
    if is_class:
        pred = _decide_row(v, tg.cost, tg.use_cost)
        y = tg.y_class[i]
        return tg.cost[y, pred], pred
    e = tg.y_reg[i] - v[0]
    return e * e, np.int64(-1)


@jit_parallel
def _oob_pass(fa, routing, X, inbag, tg, sums, counts, pred, chunk_loss, chunk_weight):
    """Out of bag: ``sums[i]`` += the value of row i's end node in every tree b for
    which case i is out of bag (``inbag[b]``'s bit i clear), in tree order, and
    ``counts[i]`` the number of those trees; ``pred[i]`` the class its average predicts.
    After tree b, ``chunk_loss[c, b, j]`` = Σ w_i l_i and ``chunk_weight[c, b, j]`` =
    Σ w_i over the class-j cases (j = 0 for regression) of chunk c with at least one OOB
    tree among 0..b, l_i their loss then (:func:`_case_loss`). Chunks of
    :data:`OOB_CHUNK` rows run in parallel."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_values = fa.value.shape[1]
    is_class = tg.n_classes > 0
    n_chunks = chunk_loss.shape[0]
    for c in prange(n_chunks):
        lo = c * OOB_CHUNK
        m = min(n, lo + OOB_CHUNK) - lo
        rows = np.empty(m, dtype=np.int64)
        ends = np.empty(m, dtype=np.int64)
        loss = np.zeros(m)
        avg = np.empty(n_values)
        for b in range(n_trees):
            k = 0
            for i in range(lo, lo + m):
                if not (inbag[b, i >> 3] >> (i & 7)) & 1:
                    rows[k] = i
                    k += 1
            _walk_rows(fa, routing, X, rows, k, fa.roots[b], ends)
            for r in range(k):
                i = rows[r]
                t = ends[r]
                counts[i] += 1
                for j in range(n_values):
                    sums[i, j] += fa.value[t, j]
                for j in range(n_values):
                    avg[j] = sums[i, j] / counts[i]
                loss[i - lo], pred[i] = _case_loss(tg, i, avg, is_class)
            for i in range(lo, lo + m):
                if counts[i] > 0:
                    wi = 1.0 if tg.unit_weights else tg.w[i]
                    j = tg.y_class[i] if is_class else 0
                    chunk_loss[c, b, j] += wi * loss[i - lo]
                    chunk_weight[c, b, j] += wi


class OOBResult(NamedTuple):
    """Out-of-bag estimates over the learning cases (:func:`oob_estimates`)."""

    value: np.ndarray     # float64 (n, K): average over each case's OOB trees (NaN: none)
    n_trees: np.ndarray   # int64 (n,): trees for which the case is out of bag
    pred: np.ndarray      # int64 (n,): predicted class (-1: none, or regression)
    curve: np.ndarray     # float64 (B,): OOB error after the first b trees (NaN: no case)
    curve_weight: np.ndarray  # float64 (B,): weight of the cases with an OOB prediction
    class_curve: np.ndarray | None = None  # float64 (B, J): per class (NaN: no case)


def oob_estimates(forest, X, inbag, targets, priors=None, n_threads=None):
    """The out-of-bag value of every learning case and the OOB error after each tree.

    ``X`` holds the learning cases (those of ``targets``), ``inbag`` the packed in-bag
    bits of :class:`cartjit.engine.forest.ForestFit`. A case's OOB value is the average
    of ``forest.value`` at its end nodes in the trees for which it is out of bag, its
    prediction the class (or mean) of that average, and ``curve[b - 1]`` the error
    (:func:`sample_risk` with ``priors``, :func:`risk_priors`) after the first b trees of
    the cases with at least one OOB tree among them. The per-chunk sums are reduced in chunk order.
    ``class_curve[b - 1, j]`` is the weighted mean loss of the class-j cases among them
    (randomForest's ``err.rate`` per class; one column of squared errors for regression).
    """
    X = _rows(X)
    n = X.shape[0]
    n_trees = forest.n_trees
    k = forest.value.shape[1]
    sums = np.zeros((n, k))
    counts = np.zeros(n, dtype=np.int64)
    pred = np.full(n, -1, dtype=np.int64)
    n_chunks = (n + OOB_CHUNK - 1) // OOB_CHUNK
    slots = max(targets.n_classes, 1)
    chunk_loss = np.zeros((n_chunks, n_trees, slots))
    chunk_weight = np.zeros((n_chunks, n_trees, slots))
    if n and n_trees:
        fa, routing = kernel_arrays(forest)
        with _threads(n_threads), parallel_entry():
            _oob_pass(fa, routing, X, as_kernel_array(inbag, np.uint8), targets,
                      sums, counts, pred, chunk_loss, chunk_weight)
    loss = np.zeros((n_trees, slots))
    weight = np.zeros((n_trees, slots))
    for c in range(n_chunks):  # in chunk order, whatever ran them
        loss += chunk_loss[c]
        weight += chunk_weight[c]
    curve = sample_risk(loss, weight, priors)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = sums / counts[:, None]
        class_curve = np.where(weight > 0, loss / weight, np.nan)
    value[counts == 0] = np.nan
    return OOBResult(value, counts, pred, curve, weight.sum(axis=1), class_curve)


# --------------------------------------------------------------------------- importance

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@jit(inline="always")
def _mix(z):
    """splitmix64's output function (Steele, Lea & Flood 2014)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@jit
def _permutation(seed, j, m, out):
    """``out[:m]`` = a permutation of 0..m-1, a function of (``seed``, ``j``) alone: a
    Fisher-Yates shuffle driven by splitmix64 from the state ``mix(seed + (j + 1) γ)``
    (each swap index a 64-bit draw modulo i + 1; the bias is below m / 2**64)."""
    state = _mix(np.uint64(seed) + np.uint64(j + 1) * _GOLDEN)
    for i in range(m):
        out[i] = i
    for i in range(m - 1, 0, -1):
        state = state + _GOLDEN
        r = _mix(state) % np.uint64(i + 1)
        k = np.int64(r)
        tmp = out[i]
        out[i] = out[k]
        out[k] = tmp


def permutation(seed, j, m):
    """The permutation of m OOB cases that :func:`permutation_importance` applies to
    feature j of a tree whose permutation seed is ``seed`` (case k takes the value of
    case ``perm[k]``)."""
    out = np.empty(m, dtype=np.int64)
    _permutation(np.uint64(seed), np.int64(j), np.int64(m), out)
    return out


@jit
def _end_node(fa, routing, xb, root):
    """The end node of the one row of ``xb`` (1, p) in the tree rooted at ``root``."""
    step, left = fa.step, fa.left
    # out of the record once: each taking of an array is a reference count
    feature, threshold = fa.feature, fa.threshold
    t = root
    while True:
        rec = step[t]
        child = np.int64(rec.child0)
        if child != t:
            x = xb[0, rec.feature]
            if x == x:
                t = child + np.int64(x > rec.threshold)
                continue
        if left[t] < 0:
            return t
        d = _routed(xb, 0, t, left, feature, threshold, routing)
        if d < 0:
            return t
        t = d


@jit_parallel
def _permuted_losses(fa, routing, X, oob, oob_start, tg, node_pred, seeds, loss):
    """Permutation importance: task (b, j) for b < B, j in -1..p-1 walks tree b's OOB
    cases ``oob[oob_start[b]:oob_start[b + 1]]`` with feature j permuted among them
    (j = -1: none) and writes to ``loss[b, j + 1, y]`` Σ w C(pred | y) over its class-y
    cases (classification; ``node_pred`` the class each node predicts) or Σ w (y - ȳ)²
    (regression, y = 0)."""
    n_trees = fa.roots.shape[0] - 1
    p = X.shape[1]
    is_class = tg.n_classes > 0
    n_tasks = n_trees * (p + 1)
    for task in prange(n_tasks):
        b = task // (p + 1)
        j = task % (p + 1) - 1
        lo = oob_start[b]
        m = oob_start[b + 1] - lo
        perm = np.empty(m, dtype=np.int64)
        if j >= 0:
            _permutation(np.uint64(seeds[b]), np.int64(j), np.int64(m), perm)
        xb = np.empty((1, p))
        root = fa.roots[b]
        for k in range(m):
            i = oob[lo + k]
            for f in range(p):
                xb[0, f] = X[i, f]
            if j >= 0:
                xb[0, j] = X[oob[lo + perm[k]], j]
            t = _end_node(fa, routing, xb, root)
            wi = 1.0 if tg.unit_weights else tg.w[i]
            if is_class:
                y = tg.y_class[i]
                loss[b, j + 1, y] += wi * tg.cost[y, node_pred[t]]
            else:
                e = tg.y_reg[i] - fa.value[t, 0]
                loss[b, j + 1, 0] += wi * e * e


class Importance(NamedTuple):
    """Breiman's OOB permutation importance (:func:`permutation_importance`)."""

    delta: np.ndarray           # float64 (B, p): Δ_bj, NaN for a tree without OOB cases
    raw: np.ndarray             # float64 (p,): mean of Δ_bj over the trees
    se: np.ndarray              # float64 (p,): its standard error
    scaled: np.ndarray          # float64 (p,): raw / se (0 where both are 0)
    raw_by_class: np.ndarray    # float64 (p, J): per class (classification), else (p, 0)
    se_by_class: np.ndarray     # float64 (p, J)
    scaled_by_class: np.ndarray  # float64 (p, J)
    tree_error: np.ndarray      # float64 (B,): each tree's own OOB error


def _mean_se(delta, present):
    """randomForest's mean and standard error over the trees (axis 0) where
    ``present``: mean Δ and sqrt((mean Δ² - (mean Δ)²) / B'), B' the trees counted;
    scaled = mean / SE (0 where both are 0)."""
    count = present.sum(axis=0)
    d = np.where(present, delta, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / count
        var = (d * d).sum(axis=0) / count - mean * mean
        se = np.sqrt(np.maximum(var, 0.0) / count)
        scaled = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    mean = np.where(count > 0, mean, np.nan)
    se = np.where(count > 0, se, np.nan)
    scaled = np.where(count > 0, scaled, np.nan)
    return mean, se, scaled


def oob_rows(inbag, n):
    """Every tree's out-of-bag cases, in case order: ``(rows, start)`` with tree b's in
    ``rows[start[b]:start[b + 1]]``."""
    mask = ~inbag_mask(inbag, n)
    start = np.zeros(mask.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=start[1:])
    return np.ascontiguousarray(np.nonzero(mask)[1], dtype=np.int64), start


def permutation_importance(forest, X, inbag, targets, priors, seeds, n_threads=None):
    """Breiman's OOB permutation importance (Breiman 2001, §10; randomForest's type 1).

    For tree b with OOB cases O_b, e_b is the tree's own error on O_b (each case
    predicted by the tree alone, :func:`sample_risk` with ``priors``), and e_bj the
    same after the values of feature j are permuted among O_b (:func:`permutation`,
    ``seeds[b]`` the permutation seed of tree b). Δ_bj = e_bj - e_b; ``raw`` is its mean over
    the trees, ``se`` = sqrt((mean Δ² - raw²) / B) as randomForest computes it,
    ``scaled`` = raw / se. Per class c (classification): the same with e the weighted
    mean cost C(pred | c) of the class-c cases of O_b. Regression: squared errors
    (randomForest's %IncMSE).
    """
    X = _rows(X)
    n, p = X.shape
    n_trees = forest.n_trees
    rows, start = oob_rows(inbag, n)
    is_class = targets.n_classes > 0
    slots = max(targets.n_classes, 1)
    loss = np.zeros((n_trees, p + 1, slots))
    if is_class:
        node_pred = decide(forest.value, targets.cost, targets.use_cost)
    else:
        node_pred = np.zeros(0, dtype=np.int64)
    if n_trees and n:
        fa, routing = kernel_arrays(forest)
        with _threads(n_threads), parallel_entry():
            _permuted_losses(fa, routing, X, rows, start, targets, node_pred, seeds,
                             loss)
    w = np.ones(n) if targets.unit_weights else targets.w
    mask = ~inbag_mask(inbag, n)
    y = targets.y_class if is_class else np.zeros(n, dtype=np.int64)
    weight = np.zeros((n_trees, slots))
    for b in range(n_trees):
        weight[b] = np.bincount(y[mask[b]], weights=w[mask[b]], minlength=slots)
    err = sample_risk(loss, weight[:, None, :], priors)  # (B, p + 1)
    delta = err[:, 1:] - err[:, :1]
    present = np.broadcast_to((weight.sum(axis=1) > 0)[:, None], delta.shape)
    raw, se, scaled = _mean_se(delta, present)
    if is_class:
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = loss / weight[:, None, :]
        cdelta = rate[:, 1:, :] - rate[:, :1, :]  # (B, p, J)
        cpresent = np.broadcast_to((weight > 0)[:, None, :], cdelta.shape)
        craw, cse, cscaled = _mean_se(cdelta, cpresent)
    else:
        craw = cse = cscaled = np.zeros((p, 0))
    return Importance(delta, raw, se, scaled, craw, cse, cscaled, err[:, 0])
