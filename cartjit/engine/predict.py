"""Batch prediction: drop many cases down a flat tree at once.

:func:`apply` returns the node at which every row of X ends: a leaf, or an internal node
at which a case missing the split feature stops (docs/maths.md §8). A complete row walks
``node = left[node] + (x > c)`` (using ``right == left + 1``). One row's walk is a chain
of dependent loads, so a thread keeps several rows in flight and steps each in turn,
with leaves made self-loops, and a row that ends hands its slot to the next row (the
work is the rows' path lengths, not the slots × the deepest path of a group; mean and
deepest path of a tree grown to purity on 10^5 noisy rows: 30 and 70). A slot that takes
a row asks for the cache lines of a row further on, so that rows come from memory while
the slots walk. On a tree of ordered splits the rows whose values are all finite are
walked first, blind: sweeps without a test, the check for ended rows every few sweeps.
Where the threshold alone cannot decide (a missing value, a subset split) a row takes
:func:`route` instead, in a careful walk; it also follows surrogate splits and the
majority.

:func:`heldout_losses` scores a whole pruning sequence in one descent (docs/maths.md §5,
rpart's ``rundown``): a case that reaches node t is predicted by t in T(α) for every α
at which t is a leaf of T(α), i.e. α >= ``alpha[t]`` while all ancestors still have
larger α; a case that stops at t is predicted by t for every smaller α as well. It is
serial (the cross-validation runs folds in parallel threads instead).
"""
from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from .speed import jit, jit_parallel
from .speed import prefetch
from .speed import parallel_entry

__all__ = ["apply", "heldout_losses", "route", "routing_of", "surrogate_side", "FoldTree",
           "HeldOut", "LossTable", "Routing", "USE_SURROGATE",
           "check_use_surrogate", "blind_sweeps", "BLIND_SLOTS", "BLIND_SWEEPS"]

#: The values of ``use_surrogate`` (rpart's usesurrogate): 0 a case missing the split
#: feature stops at the node; 1 surrogates, then it stops; 2 surrogates, then the majority.
USE_SURROGATE = (0, 1, 2)


#: Columns of :attr:`Routing.node`.
R_LEVEL_ROW, R_MAJORITY, R_SUR_START, R_N_SUR = 0, 1, 2, 3
#: Columns of :attr:`Routing.sur`.
S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT = 0, 1, 2


class Routing(NamedTuple):
    """How a tree routes a case that a threshold alone cannot: subset splits, missing
    values, surrogate splits and the majority (see :mod:`cartjit.engine.tree`).

    The per-node and per-surrogate integers travel as two tables (few arrays keep the
    parallel kernel quick to compile); every array is contiguous and of the dtype below
    whatever the tree, so the kernels compile one signature.
    """

    node: np.ndarray           # int64 (n_nodes, 4): level_row (-1: ordered split),
    #                            majority_left (1 left, 0 right, -1 stop), first
    #                            surrogate row, number of surrogates
    sur: np.ndarray            # int64 (n_rows, 3): feature, level_row (-1: ordered),
    #                            low_left (1: x <= threshold goes left), best first
    sur_threshold: np.ndarray  # float64 (n_rows,)
    level_sets: np.ndarray     # uint64 (m, 2, n_words) levels going left / right
    subset_splits: bool        # whether some node splits by a subset of levels
    use_surrogate: int         # 0, 1 or 2


@jit(inline="always")
def _level_side(code, row, sets):
    """0 when the level ``code`` is in the left set of ``sets[row]``, 1 in the right
    set, -1 in neither (NaN, -1 for a level never seen in training, or a level absent
    from the node's learning cases)."""
    if code >= 0.0 and code < 64.0 * sets.shape[2]:
        c = np.int64(code)
        word = c >> 6
        bit = np.uint64(1) << np.uint64(c & 63)
        if sets[row, 0, word] & bit:
            return np.int64(0)
        if sets[row, 1, word] & bit:
            return np.int64(1)
    return np.int64(-1)


@jit(inline="always")
def _split_side(x, t, threshold, routing):
    """Step 1 of :func:`route`: the side node t's own split sends the value x of its
    feature to, or -1 when x is missing there."""
    row = routing.node[t, R_LEVEL_ROW]
    if row < 0:
        if np.isnan(x):
            return np.int64(-1)
        return np.int64(x > threshold[t])
    return _level_side(x, row, routing.level_sets)


@jit(inline="always")
def surrogate_side(X, i, start, n_sur, routing):
    """Step 2 of :func:`route`: the side the first of the surrogate rows ``start`` to
    ``start + n_sur - 1`` of ``routing`` that can route row i of X sends it to, or -1
    when none can. ``routing`` is any record with the fields ``sur``,
    ``sur_threshold`` and ``level_sets`` of :class:`Routing` (a forest's
    :class:`cartjit.engine.forest_passes.ForestRouting` too)."""
    for s in range(start, start + n_sur):
        v = X[i, routing.sur[s, S_FEATURE]]
        srow = routing.sur[s, S_LEVEL_ROW]
        if srow < 0:
            if not np.isnan(v):
                low = v <= routing.sur_threshold[s]
                if routing.sur[s, S_LOW_LEFT] == 1:
                    return np.int64(0 if low else 1)
                return np.int64(1 if low else 0)
        else:
            side = _level_side(v, srow, routing.level_sets)
            if side >= 0:
                return side
    return np.int64(-1)


@jit
def _missing_side(X, i, t, routing):
    """Steps 2-4 of :func:`route`, for row i of X missing node t's split feature."""
    u = routing.use_surrogate
    if u == 0:
        return np.int64(-1)
    d = surrogate_side(X, i, routing.node[t, R_SUR_START], routing.node[t, R_N_SUR],
                       routing)
    if d < 0 and u == 2:
        m = routing.node[t, R_MAJORITY]
        if m == 1:
            return np.int64(0)
        if m == 0:
            return np.int64(1)
    return d


@jit(inline="always")
def route(X, i, t, feature, threshold, routing):
    """Prediction, one step at internal node t for row i of X: 0 to the left child, 1 to
    the right child, -1 when the case stops at t (docs/maths.md §8, rpart's
    ``pred_rpart``).

    1. The split: if the case has its feature (not NaN; for a subset split, a level in
       one of the two sets), an ordered split sends x > threshold right, a subset split
       sends the level to its set's side.
    2. Otherwise, with ``use_surrogate`` >= 1, the node's surrogates in order: the
       first whose feature the case has (for a categorical surrogate, a level in one of
       its sets) decides; an ordered surrogate sends x <= threshold left when
       ``low_left`` is 1, right when it is 0.
    3. Otherwise, with ``use_surrogate`` == 2, ``majority_left``: 1 left, 0 right, -1
       (the children hold equal numbers of learning cases) stop.
    4. Otherwise the case stops at t.

    Step 1 is inlined into the kernels; steps 2-4 (:func:`_missing_side`) are a call,
    taken only by a case missing the split feature.
    """
    d = _split_side(X[i, feature[t]], t, threshold, routing)
    if d < 0:
        d = _missing_side(X, i, t, routing)
    return d


class FoldTree(NamedTuple):
    """The arrays of a fold tree that the held-out descent reads."""

    feature: np.ndarray    # int32 (n_nodes,)
    threshold: np.ndarray  # float64 (n_nodes,)
    left: np.ndarray       # int32 (n_nodes,), -1 at leaves, right == left + 1
    alpha: np.ndarray      # float64 (n_nodes,), collapse α of each node
    label: np.ndarray      # int32 (n_nodes,) class j*(t); empty for regression
    value: np.ndarray      # float64 (n_nodes, 1) ȳ(t) for regression (unused otherwise)
    routing: Routing       # subset splits, surrogates, majority and use_surrogate


class HeldOut(NamedTuple):
    """The cases and which of them a fold holds out."""

    X: np.ndarray          # float64 (n, p), every case (NaN: missing)
    rows: np.ndarray       # int64, the held-out rows
    y_class: np.ndarray    # int32 class indices (empty for regression)
    y_reg: np.ndarray      # float64 responses (empty for classification)
    w: np.ndarray          # float64 case weights (may be empty with unit_weights)
    unit_weights: bool


class LossTable(NamedTuple):
    """What a held-out case costs, where the losses go, and at which α."""

    class_scale: np.ndarray  # float64 (J,) π(j) W / N_j (classification)
    cost: np.ndarray         # float64 (J, J) C(i|j) as cost[j, i]
    alphas: np.ndarray       # float64 (K,) increasing α at which losses are taken
    out_sum: np.ndarray      # float64 (K,) receives Σ w·loss
    out_sq: np.ndarray       # float64 (K,) receives Σ w·loss²


#: Rows one thread keeps in flight in the careful walk (:func:`_walk_chunk`): their
#: independent chains of loads hide each other's latency (the value is measured:
#: docs/design.md, "Speed machinery").
SLOTS = 8
#: Rows the blind walk (:func:`_blind_walk`) keeps in flight per thread, and the
#: sweeps it makes between two checks of its slots (a row that ends waits up to that
#: many sweeps for its slot to be refilled); measured values (docs/design.md).
BLIND_SLOTS = 16
BLIND_SWEEPS = 4
#: Rows of a chunk the blind walk takes before it looks at how many it had to leave
#: to the careful walk; from there on, where that is more than a quarter of them, the
#: careful walk takes the rest of the chunk (a row with a hole costs a blind walk and a
#: careful one).
BLIND_TRIAL = 256
#: Rows per chunk of work at least (a chunk is the unit the threads share).
CHUNK_ROWS = 4096
#: A slot that takes row r asks for the cache lines of row r + PREFETCH_ROWS: the rows
#: then come from memory while the slots walk, not when a slot takes them.
PREFETCH_ROWS = 32
#: The held-out descent asks for the lines of the row this many rows on.
HELD_AHEAD = 8
#: The exponent bits of a float64: all set in an infinity or a NaN.
_EXPONENT = np.uint64(0x7FF0000000000000)

#: One node of the descent, 16 bytes: what a step reads comes in one cache line.
STEP = np.dtype([("threshold", np.float64), ("child0", np.int32), ("feature", np.int32)],
                align=True)


@jit(inline="always")
def _all_finite(bits, r, p):
    """Whether every value of row r is finite (``bits``: X as uint64, flat): a
    branch-free OR of the exponent bits, all set only in an infinity or a NaN."""
    base = np.uint64(r * p)
    acc = np.uint64(0)
    for f in range(p):
        e = bits[base + np.uint64(f)] & _EXPONENT
        acc |= np.uint64(e == _EXPONENT)
    return acc == 0


@jit(inline="always")
def _row_infinities(bits, r, p):
    """Infinite entries of row r (``bits``: X as uint64, flat); a row is looked at value
    by value only where :func:`_all_finite` fails."""
    if _all_finite(bits, r, p):
        return 0
    base = np.uint64(r * p)
    n_inf = 0
    for f in range(p):
        b = bits[base + np.uint64(f)]
        if (b & _EXPONENT) == _EXPONENT and (b & ~_EXPONENT) << np.uint64(1) == 0:
            n_inf += 1
    return n_inf


@jit(inline="always")
def _start_row(s, r, row, base, node, bits, p):
    """Slot s takes row r at the root, and the lines of row r + :data:`PREFETCH_ROWS`
    are asked for."""
    row[s] = r
    base[s] = r * p
    node[s] = 0
    ahead = (r + PREFETCH_ROWS) * p
    if p > 0 and ahead + p <= bits.shape[0]:
        for f in range(0, p + 8, 8):  # a value in every line of the row (8 a line)
            prefetch(bits, np.uint64(ahead + min(f, p - 1)))


@jit
def _routed_child(X, r, t, left, feature, threshold, routing):
    """The child of node t that :func:`route` sends row r to, or -1 where it stops
    (a call, not inlined: it keeps the descent's loop small)."""
    d = route(X, r, t, feature, threshold, routing)
    return left[t] + d if d >= 0 else np.int64(-1)


@jit(inline="always")
def _next_row(out, r, hi, marked):
    """The first row from r on (before hi) that a descent takes: every row, or with
    ``marked`` only those that :func:`_blind_walk` left (``out == -1``)."""
    if marked:
        while r < hi and out[r] != -1:
            r += 1
    return r


@jit(inline="always")
def blind_sweeps(step, xs, base, node):
    """:data:`BLIND_SWEEPS` sweeps over the :data:`BLIND_SLOTS` slots of a blind walk:
    each slot's row steps once a sweep, without a test (a leaf is a self-loop whose
    threshold is +inf). ``node[s]`` is slot s's node, ``base[s]`` the offset of its
    row in ``xs`` (X flattened); the forest's walk shares it."""
    for _ in range(BLIND_SWEEPS):
        for s in range(BLIND_SLOTS):
            us = np.uint64(s)
            rec = step[np.uint64(node[us])]
            x = xs[np.uint64(base[us] + rec.feature)]
            node[us] = np.int64(rec.child0) + np.int64(x > rec.threshold)


@jit
def _blind_walk(step, xs, bits, p, out, lo, hi, leaf):
    """The descent of rows lo to hi - 1 through a tree of ordered splits only (see
    :func:`_apply_streamed`), for rows whose values are all finite: writes their end
    nodes into ``out``, marks every other row ``out = -1`` for :func:`_walk_chunk` and
    returns how many it marked.

    ``BLIND_SWEEPS`` sweeps step each of ``BLIND_SLOTS`` slots without a test (a leaf is
    a self-loop: threshold +inf, ``child0`` itself); a check then serves the slots whose
    row has reached a leaf. Only there is the row's finiteness read (it is in cache by
    then): a NaN compares false and would have sent the row left where its missing value
    must take the surrogates, so such a row's walk is dropped and the row marked. Where
    more than a quarter of the rows are marked after ``BLIND_TRIAL``, the rest of the
    chunk is marked without a walk.
    """
    row = np.full(BLIND_SLOTS, -1, dtype=np.int64)
    base = np.zeros(BLIND_SLOTS, dtype=np.int64)
    node = np.full(BLIND_SLOTS, leaf, dtype=np.int64)
    nxt = lo
    active = 0
    n_marked = 0
    for s in range(BLIND_SLOTS):
        if nxt < hi:
            _start_row(s, nxt, row, base, node, bits, p)
            nxt += 1
            active += 1
    while active > 0:
        blind_sweeps(step, xs, base, node)
        for s in range(BLIND_SLOTS):
            t = node[s]
            if np.int64(step[np.uint64(t)].child0) == t:
                r = row[s]
                if r < 0:
                    continue
                # a row with a value that is not finite is left to the careful descent
                if _all_finite(bits, r, p):
                    out[r] = t
                else:
                    out[r] = -1
                    n_marked += 1
                if nxt < hi and nxt - lo >= BLIND_TRIAL and 4 * n_marked > nxt - lo:
                    # rows with holes are common here: the careful walk takes the rest
                    out[nxt:hi] = -1
                    n_marked += hi - nxt
                    nxt = hi
                if nxt < hi:
                    _start_row(s, nxt, row, base, node, bits, p)
                    nxt += 1
                else:
                    row[s] = -1
                    active -= 1
    return n_marked


@jit
def _walk_chunk(step, left, feature, threshold, routing, X, xs, bits, out, lo, hi, leaf,
                marked):
    """The careful descent of rows lo to hi - 1 (see :func:`_apply_streamed`), with
    ``marked`` only of those that :func:`_blind_walk` left: writes their end nodes into
    ``out`` and returns the number of infinite entries of those rows."""
    p = X.shape[1]
    row = np.full(SLOTS, -1, dtype=np.int64)
    base = np.zeros(SLOTS, dtype=np.int64)
    node = np.full(SLOTS, leaf, dtype=np.int64)
    nxt = _next_row(out, lo, hi, marked)
    active = 0
    n_inf = 0
    for s in range(SLOTS):
        if nxt < hi:
            _start_row(s, nxt, row, base, node, bits, p)
            n_inf += _row_infinities(bits, nxt, p)
            nxt = _next_row(out, nxt + 1, hi, marked)
            active += 1
    # Each sweep steps every slot whose step is the fast one and lists the others; they
    # are served after the sweep, so the sweep's loop holds no call and stays in registers.
    pending = np.empty(SLOTS, dtype=np.int64)
    while active > 0:
        n_pending = 0
        for s in range(SLOTS):
            us = np.uint64(s)
            t = node[us]
            rec = step[np.uint64(t)]
            child = np.int64(rec.child0)
            if child != t:
                x = xs[np.uint64(base[us] + rec.feature)]
                if x == x:
                    node[us] = child + np.int64(x > rec.threshold)
                    continue
            pending[np.uint64(n_pending)] = s
            n_pending += 1
        for j in range(n_pending):
            s = pending[j]
            r = row[s]
            if r < 0:
                continue
            t = node[s]
            if left[t] >= 0:  # a missing value here, or a subset split
                d = _routed_child(X, r, t, left, feature, threshold, routing)
                if d >= 0:
                    node[s] = d
                    continue
            # row r ends at t (a leaf, or stopped there): the slot takes the next row
            out[r] = t
            if nxt < hi:
                _start_row(s, nxt, row, base, node, bits, p)
                n_inf += _row_infinities(bits, nxt, p)
                nxt = _next_row(out, nxt + 1, hi, marked)
            else:
                row[s] = -1
                node[s] = leaf
                active -= 1
    return n_inf


@jit_parallel
def _apply_streamed(step, left, feature, threshold, routing, X, n_chunks):
    """Prediction, the descent: the node at which every row ends.

    The rows are cut into ``n_chunks`` consecutive chunks, run in parallel. A chunk keeps
    several rows in flight in slots and steps each once per sweep, so their chains of
    dependent loads overlap; a row that ends frees its slot for the chunk's next row,
    so the work is the rows' path lengths (a fixed group of rows would sweep until its
    deepest row ends). ``step`` holds each node's ``threshold``, ``child0`` and
    ``feature`` in one record. ``child0`` is the left child of an ordered split and the
    node itself (a self-loop) at a leaf and at a subset split, so a step on a present
    value at an ordered split is ``t = child0[t] + (x > threshold[t])``.

    A tree of ordered splits takes two passes per chunk: :func:`_blind_walk` steps its
    slots without a test and walks every row whose values are all finite, and marks the
    others; :func:`_walk_chunk` then walks those carefully, if any. A tree with subset
    splits takes the careful pass alone. There a step leaves the fast path where a
    self-loop is a leaf (the row ends) or a subset split, and where a NaN (a missing
    value) fails ``x == x``; both take :func:`route` (subset split, surrogates,
    majority), and the row ends where ``route`` stops it (-1). A slot without a row sits
    on a leaf. Indices are unsigned so that no negative-index wraparound is compiled
    into the loops. Returns ``(nodes, number of infinite entries of X)``.

    Parameters
    ----------
    step : :data:`STEP` records by node.
    left : int64 left child by node (-1 at a leaf), for the steps :func:`route` takes.
    feature : int64 split feature by node (0 at a leaf), for :func:`route`.
    threshold : float64 split threshold by node (+inf at a leaf), for :func:`route`.
    routing : :class:`Routing` of the tree.
    X : float64 (n, p) C-contiguous, the rows (NaN: missing).
    n_chunks : chunks of rows (>= 1).
    """
    n, p = X.shape
    xs = X.reshape(n * p)
    bits = xs.view(np.uint64)
    out = np.empty(n, dtype=np.int64)
    bad = np.zeros(n_chunks, dtype=np.int64)
    per = (n + n_chunks - 1) // n_chunks
    leaf = 0  # a leaf for the empty slots
    while left[leaf] >= 0:
        leaf += 1
    blind = p > 0 and not routing.subset_splits
    for c in prange(n_chunks):
        lo = min(n, c * per)
        hi = min(n, lo + per)
        careful = True
        if blind:
            careful = _blind_walk(step, xs, bits, p, out, lo, hi, leaf) > 0
        if careful:
            bad[c] = _walk_chunk(step, left, feature, threshold, routing, X, xs, bits,
                                 out, lo, hi, leaf, blind)
    return out, bad.sum()


def check_use_surrogate(use_surrogate):
    """``use_surrogate`` as an int, or a ``TypeError``/``ValueError`` naming it."""
    if isinstance(use_surrogate, (bool, np.bool_)) or not isinstance(use_surrogate,
                                                                     (int, np.integer)):
        raise TypeError(f"use_surrogate must be 0, 1 or 2, got {use_surrogate!r}")
    if int(use_surrogate) not in USE_SURROGATE:
        raise ValueError(f"use_surrogate must be 0, 1 or 2, got {use_surrogate!r}")
    return int(use_surrogate)


def routing_of(tree, use_surrogate=2):
    """The :class:`Routing` record of a :class:`cartjit.engine.tree.Tree`."""
    node = np.column_stack([tree.level_row, tree.majority_left, tree.surrogate_start,
                            tree.n_surrogates]).astype(np.int64)
    sur = np.column_stack([tree.surrogate_feature, tree.surrogate_level_row,
                           tree.surrogate_low_left]).astype(np.int64).reshape(-1, 3)
    return Routing(np.ascontiguousarray(node), np.ascontiguousarray(sur),
                   np.ascontiguousarray(tree.surrogate_threshold, dtype=np.float64),
                   np.ascontiguousarray(tree.level_sets, dtype=np.uint64),
                   bool(np.any(tree.level_row >= 0)), check_use_surrogate(use_surrogate))


def _plain_routing(n_nodes):
    """The :class:`Routing` of ordered splits without surrogates, where a case missing
    a split feature stops (use_surrogate 0)."""
    node = np.zeros((n_nodes, 4), dtype=np.int64)
    node[:, R_LEVEL_ROW] = -1
    return Routing(node, np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.float64),
                   np.empty((0, 2, 0), dtype=np.uint64), False, 0)


def apply(feature, threshold, left, X, routing=None):
    """The node at which every row of X ends (x_m <= c goes left; the right child is
    ``left + 1``; ``routing``, a :class:`Routing` (:func:`routing_of`), for subset
    splits, surrogates and the majority; ``None``: ordered splits only, and a case
    missing a split feature stops there).

    Returns ``(nodes, n_infinite)``: the number of infinite entries of X, which the
    caller turns into an error (the kernel counts them while it reads the rows).
    """
    if routing is None:
        routing = _plain_routing(left.shape[0])
    is_leaf = left < 0
    n_nodes = left.shape[0]
    feat = np.where(is_leaf, 0, feature).astype(np.int64)
    thr = np.where(is_leaf, np.inf, threshold).astype(np.float64)
    kids = left.astype(np.int64)
    step = np.empty(n_nodes, dtype=STEP)
    step["threshold"] = thr
    # self-loops at leaves and subset splits: they leave the fast step (see the kernel)
    own = is_leaf | (routing.node[:, R_LEVEL_ROW] >= 0)
    step["child0"] = np.where(own, np.arange(n_nodes), left)
    step["feature"] = feat
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    n_chunks = max(1, min(-(-n // CHUNK_ROWS), 16 * numba.get_num_threads()))
    if n_chunks == 1 and p > 0 and not routing.subset_splits:
        # One chunk: the blind walk alone, where every row is finite (the same walk as
        # the kernel's chunk). The parallel kernel and the careful walk are compiled
        # only when a prediction needs them, not by the first small one.
        out = np.empty(n, dtype=np.int64)
        xs = X.reshape(n * p)
        leaf = int(np.flatnonzero(is_leaf)[0])
        if _blind_walk(step, xs, xs.view(np.uint64), p, out, 0, n, leaf) == 0:
            return out, 0
    with parallel_entry():  # one thread at a time under Numba's workqueue layer
        return _apply_streamed(step, kids, feat, thr, routing, X, n_chunks)


@jit
def _routed_side(X, i, t, feature, threshold, routing):
    """:func:`route` as a call, for the steps of :func:`heldout_losses` that leave its
    fast step (a missing value, a subset split): inlined into the descent, ``route``
    would slow every step down, not only those."""
    return route(X, i, t, feature, threshold, routing)


@jit(inline="always")
def _first_at_least(alphas, a):
    """The first k with ``alphas[k] >= a`` in the non-decreasing ``alphas``, or its
    length when there is none (a NaN ``a``: none), by bisection."""
    lo = 0
    hi = alphas.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if alphas[mid] >= a:
            hi = mid
        else:
            lo = mid + 1
    return lo


@jit
def heldout_losses(tree, cases, losses):
    """Cross-validation, scoring a fold: add each held-out row's weighted loss under
    T(α) for every α in ``alphas`` (docs/maths.md §5).

    One descent per row of ``X[rows]`` (rpart's ``rundown``): at each node t on the
    row's path, the α in [alpha[t], α of the previous node) have t as the row's leaf in
    T(α) (``alphas`` increasing). A row that stops at an internal node t (missing its
    split feature, docs/maths.md §8: :func:`route`) has t as its end node for every
    α below as well, so t takes the whole remaining range [0, α of the previous node).
    A case is routed exactly as :func:`apply` routes it, majority included (rpart's
    cross-validation instead sends a case that no surrogate routes by the fit-time
    majority, the case weight of the node's cases with the split feature on each side,
    a tie to the right; its predictions use the children's counts, as here). The loss is ``class_scale[y] · cost[y, label[t]]``
    for classification (``label`` non-empty) and ``(y - value[t, 0])²`` for regression.
    ``out_sum[k]`` receives Σ w·loss and ``out_sq[k]`` Σ w·loss² for α = ``alphas[k]``
    (w = 1 with ``unit_weights``, when ``w`` may be empty);
    both are accumulated through difference arrays, and where a node's range starts
    (the first k with ``alphas[k] >= alpha[t]``) is found by bisection the first time a
    row reaches t, so a row costs O(depth), not O(K) (a scan down the α would cost up
    to K steps per row). A step on a present value at an ordered split is the split
    itself; the others take :func:`route` as a call (:func:`_routed_side`).

    Parameters
    ----------
    tree : FoldTree
        The fold tree's arrays (``label`` empty for regression).
    cases : HeldOut
        Every case (``X``, targets, weights) and the held-out ``rows``.
    losses : LossTable
        ``class_scale``, ``cost``, the increasing ``alphas`` and the accumulators
        ``out_sum``, ``out_sq``.
    """
    feature, threshold, left, alpha = tree.feature, tree.threshold, tree.left, tree.alpha
    label, value, routing = tree.label, tree.value, tree.routing
    X, rows, y_class, y_reg = cases.X, cases.rows, cases.y_class, cases.y_reg
    w, unit_weights = cases.w, cases.unit_weights
    class_scale, cost, alphas = losses.class_scale, losses.cost, losses.alphas
    out_sum, out_sq = losses.out_sum, losses.out_sq
    n_alpha = alphas.shape[0]
    d_sum = np.zeros(n_alpha + 1)
    d_sq = np.zeros(n_alpha + 1)
    is_class = label.shape[0] > 0
    ordered = True
    for k in range(1, n_alpha):
        if not alphas[k - 1] <= alphas[k]:
            ordered = False
    # first[t]: the first k with alphas[k] >= alpha[t] (n_alpha: none), found once per
    # node a row reaches (-1: not yet)
    first = np.full(left.shape[0], -1, dtype=np.int64)
    p = X.shape[1]
    xs = X.reshape(X.shape[0] * p)
    for r in range(rows.shape[0]):
        i = rows[r]
        if r + HELD_AHEAD < rows.shape[0] and p > 0:  # the lines of a row further on
            ahead = rows[r + HELD_AHEAD] * p
            for f in range(0, p + 8, 8):
                prefetch(xs, np.uint64(ahead + min(f, p - 1)))
        node = 0
        hi = n_alpha
        stopped = False
        while True:
            if stopped:
                lo = 0
            elif ordered:
                lo = first[node]
                if lo < 0:
                    lo = _first_at_least(alphas, alpha[node])
                    first[node] = lo
                lo = min(lo, hi)
            else:  # the scan the search stands for, if alphas were ever out of order
                lo = hi
                while lo > 0 and alphas[lo - 1] >= alpha[node]:
                    lo -= 1
            if lo < hi:
                if is_class:
                    loss = class_scale[y_class[i]] * cost[y_class[i], label[node]]
                else:
                    e = y_reg[i] - value[node, 0]
                    loss = e * e
                wi = 1.0 if unit_weights else w[i]
                d_sum[lo] += wi * loss
                d_sum[hi] -= wi * loss
                d_sq[lo] += wi * loss * loss
                d_sq[hi] -= wi * loss * loss
            hi = lo
            child = left[node]
            if hi == 0 or child < 0 or stopped:
                break
            x = X[i, feature[node]]
            if x == x and routing.node[node, R_LEVEL_ROW] < 0:
                d = np.int64(x > threshold[node])
            else:
                d = _routed_side(X, i, node, feature, threshold, routing)
            if d < 0:
                stopped = True  # node's own range is taken: now everything below it
            else:
                node = child + d
    acc = 0.0
    acc2 = 0.0
    for k in range(n_alpha):
        acc += d_sum[k]
        acc2 += d_sq[k]
        out_sum[k] += acc
        out_sq[k] += acc2
