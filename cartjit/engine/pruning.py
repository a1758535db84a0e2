"""Cost-complexity (weakest-link) pruning, docs/maths.md §4: the one place it lives.

For a tree T and α >= 0, R_α(T) = R(T) + α |T~|. The sequence of smallest minimising
subtrees T_1 > T_2 > … > T_K = {root} and the thresholds 0 = α_1 < α_2 < … < α_K are
computed once, and stored as one number per node, ``alpha[t]``: the α at which t
becomes a leaf (see :mod:`cartjit.engine.tree`). T(α) for any α is then a mask, never a refit.

Everything about pruning is here:

* :func:`weakest_link`, the kernel: one loop gives both the per-node α and the
  sequence (α_k, |T~_k|, R(T_k)); :func:`weakest_link_threads`, the same floats with
  the largest branches' collapses run on several threads;
* :func:`with_alpha` stores that per-node α on a fitted tree (the fit calls it);
  :func:`pruning_sequence` runs the same loop on other node risks (the impurity mode);
* :func:`prune_tree` reads T(α) off the stored α, with the tolerance
  :data:`ALPHA_RTOL`/:data:`ALPHA_ATOL` documented at :func:`keeps_split`;
* :func:`midpoints` (α'_k of the cross-validation) and :func:`path_table` (the
  sequence as a DataFrame).

:func:`weakest_link` implements the sequential loop of docs/maths.md §4 exactly,
without rescans:

1. one bottom-up pass (children have larger ids) gives R(T_t) = R(T_tL) + R(T_tR) and
   |T~_t| for every node;
2. T_1 = T(0): every split with R(t) = R(T_t) (within the tolerance) is pruned;
3. g(t) = (R(t) - R(T_t)) / (|T~_t| - 1) for the internal nodes of T_1, and for each
   the weakest link of its branch (least g, then least id: a tournament along the
   tree, so the root holds the global one). α_{k+1} is the smallest g; every node whose
   g ties with it is collapsed (it and its internal descendants get alpha = α_{k+1});
   each collapse updates R(T_a), |T~_a|, g(a) and the weakest link of the ancestors
   only, O(1) each, so the whole loop costs O(n · depth) with no heap.
   Pruning at the minimum moves every ancestor's g away from it (the new g is a mediant
   that exceeds the old one), so one pass over the ties of the minimum is exact.

Sums of leaf risks are recomputed along the tree (R(T_a) = R(T_aL) + R(T_aR)), never
accumulated by repeated subtraction, so rounding grows with depth, not with the number
of steps. Two values of g are tied when they differ by at most
``ALPHA_RTOL · g + ALPHA_ATOL · R(root)``.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from .speed import jit
from .speed import chunk_pool, run_chunks
from .tree import subtree

__all__ = ["ALPHA_RTOL", "ALPHA_ATOL", "weakest_link", "weakest_link_threads", "with_alpha",
           "pruning_sequence", "keeps_split", "prune_tree", "midpoints", "path_table",
           "index_by_k"]

ALPHA_RTOL = 1e-9
ALPHA_ATOL = 1e-12
#: T_1 with fewer splits runs the weakest-link loop on one thread: below, the launch and
#: the interleaving cost about what they save.
THREADED_MIN_SPLITS = 5_000
#: Branches per thread in :func:`weakest_link_threads`: more balance the threads
#: better, fewer keep the interleaving's walks (from a branch to the root) short.
BRANCHES_PER_THREAD = 2


# Columns of the loop's per-node float table (one 32-byte row per node: what a collapse
# reads and writes at an ancestor and its children is a few cache lines, not one per array).
_BRANCH, _LEAVES, _BEST_G, _RISK = 0, 1, 2, 3
# Columns of its integer table.
_LEFT, _RIGHT, _BEST = 0, 1, 2


@jit(inline="always")
def _weakest_below(f, k, u, g_u):
    """Step 3's tournament at internal node u (g(u) = ``g_u``): the weakest link of u's
    branch, the least (g, id) of u and its children's branch minima; returns its id and
    g (-1, inf when none)."""
    b = u
    gb = g_u
    for c in (k[u, _LEFT], k[u, _RIGHT]):
        # selects, not branches: which side wins is data, and a mispredicted branch per
        # level of every ancestor walk cost more than the two selects
        cb = k[c, _BEST]
        gc = f[c, _BEST_G]
        take = (cb >= 0) & ((gc < gb) | ((gc == gb) & (cb < b)))
        b = cb if take else b
        gb = gc if take else gb
    return b, gb


@jit(inline="always")
def _refresh(f, k, u):
    """A collapse below internal node u: R(T_u) and |T~_u| again from its children, g(u)
    and the weakest link of its branch (:func:`_weakest_below`)."""
    l, r = k[u, _LEFT], k[u, _RIGHT]
    f[u, _BRANCH] = f[l, _BRANCH] + f[r, _BRANCH]
    f[u, _LEAVES] = f[l, _LEAVES] + f[r, _LEAVES]
    g_u = (f[u, _RISK] - f[u, _BRANCH]) / (f[u, _LEAVES] - 1.0)
    k[u, _BEST], f[u, _BEST_G] = _weakest_below(f, k, u, g_u)


@jit(inline="always")
def _make_leaf(f, k, t):
    """Node t collapsed: its branch is itself, with no weakest link below it."""
    f[t, _BRANCH] = f[t, _RISK]
    f[t, _LEAVES] = 1.0
    k[t, _BEST] = -1
    f[t, _BEST_G] = np.inf


@jit
def _first_tree(left, right, parent, risk):
    """Steps 1 and 2 of :func:`weakest_link` and the start of step 3: the per-node tables
    of the loop (``f``: R(T_t), |T~_t|, least g of t's branch, R(t); ``k``: children and
    the weakest link of t's branch) for T_1, which nodes are internal in T_1, how many,
    and the absolute tolerance ``ALPHA_ATOL · |R(root)|``."""
    n = left.shape[0]
    # |T~_t| is held as a float64 (exact below 2**53): |T~_t| - 1 is the same divisor.
    f = np.empty((n, 4), dtype=np.float64)
    k = np.empty((n, 3), dtype=np.int64)
    for t in range(n - 1, -1, -1):
        k[t, _LEFT] = left[t]
        k[t, _RIGHT] = right[t]
        k[t, _BEST] = -1
        f[t, _RISK] = risk[t]
        f[t, _BEST_G] = np.inf
        if left[t] < 0:
            f[t, _BRANCH] = risk[t]
            f[t, _LEAVES] = 1.0
        else:
            f[t, _BRANCH] = f[left[t], _BRANCH] + f[right[t], _BRANCH]
            f[t, _LEAVES] = f[left[t], _LEAVES] + f[right[t], _LEAVES]
    atol = ALPHA_ATOL * abs(risk[0])
    internal = np.zeros(n, dtype=np.bool_)

    # T_1: prune every split that does not lower the risk. Ids increase downwards, so a
    # forward pass sees each node after its ancestors; pruned branches are skipped.
    for t in range(n):
        if left[t] >= 0 and (t == 0 or internal[parent[t]]):
            internal[t] = not (risk[t] - f[t, _BRANCH] <= atol)
    # Recompute the branch sums of T_1 (pruned nodes become leaves), g(t) of its internal
    # nodes and the weakest link of every branch (children first).
    size = 0
    for t in range(n - 1, -1, -1):
        if not internal[t]:
            f[t, _BRANCH] = risk[t]
            f[t, _LEAVES] = 1.0
        else:
            l, r = left[t], right[t]
            f[t, _BRANCH] = f[l, _BRANCH] + f[r, _BRANCH]
            f[t, _LEAVES] = f[l, _LEAVES] + f[r, _LEAVES]
            g_t = (risk[t] - f[t, _BRANCH]) / (f[t, _LEAVES] - 1.0)
            k[t, _BEST], f[t, _BEST_G] = _weakest_below(f, k, t, g_t)
            size += 1
    return f, k, internal, size, atol


class Branches(NamedTuple):
    """Branches of T_1 whose collapses run apart (:func:`_branch_sequences`) before
    :func:`_sequence` interleaves them: branch i is rooted at ``root[i]`` and run by chunk
    ``chunk[i]``; its states are rows ``first[i]``, ``first[i] + 1``, ... of ``state``
    (R(T_r), |T~_r|, least g of the branch) and ``best`` (the weakest link), state e
    being the branch after its first e collapses, ``n_events[i]`` of them in all;
    ``event[u]`` is the row of the collapse that made node u a leaf (-1: none of a
    branch's); ``stack`` a walk stack per chunk (two slots per internal node of the
    largest branch, and one)."""

    root: np.ndarray
    chunk: np.ndarray
    first: np.ndarray
    state: np.ndarray
    best: np.ndarray
    n_events: np.ndarray
    event: np.ndarray
    stack: np.ndarray


@jit(inline="always")
def _save_state(f, k, r, br, row):
    """Row ``row`` of ``br`` takes branch root r's state (R(T_r), |T~_r|, its weakest
    link and that link's g)."""
    br.state[row, 0] = f[r, _BRANCH]
    br.state[row, 1] = f[r, _LEAVES]
    br.state[row, 2] = f[r, _BEST_G]
    br.best[row] = k[r, _BEST]


@jit(inline="always")
def _load_state(f, k, r, br, row):
    """Branch root r takes the state of row ``row`` of ``br`` (:func:`_save_state`)."""
    f[r, _BRANCH] = br.state[row, 0]
    f[r, _LEAVES] = br.state[row, 1]
    f[r, _BEST_G] = br.state[row, 2]
    k[r, _BEST] = br.best[row]


@jit(inline="always")
def _collapse_below(t, internal, left, right, stack, out, value, br, n_branches, done,
                    row_alpha):
    """Collapse t: it and every internal descendant become leaves, ``out[u] = value``
    for each. With ``n_branches`` > 0 (:func:`_sequence`) a branch root met below t
    ends its branch there: the rows of its collapses not yet taken (``done[i]`` taken)
    get ``row_alpha = value``."""
    top = 0
    stack[top] = t
    top += 1
    while top > 0:
        top -= 1
        u = stack[top]
        if n_branches > 0 and br.event[u] >= 0:
            i = _branch_of(br, br.event[u])
            for q in range(br.first[i] + done[i], br.first[i] + br.n_events[i]):
                row_alpha[q] = value
            done[i] = br.n_events[i]
        elif internal[u]:
            internal[u] = False
            out[u] = value
            stack[top] = left[u]
            top += 1
            stack[top] = right[u]
            top += 1


@jit(inline="always")
def _branch_of(br, row):
    """The branch whose rows hold ``row`` (few branches: a linear search)."""
    i = 0
    while i + 1 < br.first.shape[0] and br.first[i + 1] <= row:
        i += 1
    return i


@jit(borrowed=True)
def _branch_sequences(f, k, internal, left, right, parent, br, c, n_chunks):
    """The collapses of each branch of chunk c as :func:`weakest_link` would make them
    were the branch the whole tree: its weakest link collapsed, the sums and links of its
    ancestors inside the branch brought up to date, until its root is a leaf; the
    branch's root state after each collapse and the collapse of each node recorded in
    ``br``. Branches share no node, and nothing outside a branch changes what happens
    inside it (sums are recomputed from children, the tie rule is (g, id)), so
    :func:`_sequence` takes these collapses in this order."""
    stack = br.stack[c]
    for i in range(br.root.shape[0]):
        if br.chunk[i] != c:
            continue
        r = br.root[i]
        stop = parent[r]
        row = br.first[i]
        _save_state(f, k, r, br, row)
        while k[r, _BEST] >= 0:
            t = k[r, _BEST]
            _collapse_below(t, internal, left, right, stack, br.event, row, br, 0,
                            br.n_events, br.state[:, 0])
            _make_leaf(f, k, t)
            u = parent[t]
            while u != stop:
                _refresh(f, k, u)
                u = parent[u]
            row += 1
            _save_state(f, k, r, br, row)
        br.n_events[i] = row - br.first[i]


@jit
def _sequence(f, k, internal, left, right, parent, size, atol, br):
    """Step 3 of :func:`weakest_link` on :func:`_first_tree`'s tables: the loop over the
    weakest links, with the branches of ``br`` (none: ``br.root`` empty) standing in as
    leaves whose states come from :func:`_branch_sequences`. A weakest link inside a
    branch moves that branch to its next state; one above the branches collapses as in
    the loop, a branch below it then ending there (its later collapses never happen and
    its nodes still internal take this α)."""
    n = left.shape[0]
    m = br.root.shape[0]
    alpha = np.zeros(n, dtype=np.float64)
    n_steps = 1
    alphas = np.zeros(size + 1)
    seq_leaves = np.zeros(size + 1, dtype=np.int64)
    seq_risk = np.zeros(size + 1)
    stack = np.empty(n, dtype=np.int64)
    row_alpha = np.empty(br.best.shape[0], dtype=np.float64)
    done = np.zeros(m, dtype=np.int64)  # collapses of each branch taken so far
    for i in range(m):
        _load_state(f, k, br.root[i], br, br.first[i])
    a_k = 0.0
    while k[0, _BEST] >= 0:
        t = k[0, _BEST]
        g_min = f[0, _BEST_G]
        if g_min > a_k + ALPHA_RTOL * a_k + atol:
            # a new step: the current tree is T_k; α_{k+1} = g_min
            seq_leaves[n_steps - 1] = np.int64(f[0, _LEAVES])
            seq_risk[n_steps - 1] = f[0, _BRANCH]
            a_k = g_min
            alphas[n_steps] = a_k
            n_steps += 1
        # Whose weakest link: down from the root along the links' path (the nodes above
        # the branches, few and in cache) to t or to the root of the branch holding it.
        u = 0
        if m > 0:
            while br.event[u] < 0 and u != t:
                c = k[u, _LEFT]
                u = c if k[c, _BEST] == t else k[u, _RIGHT]
        if m > 0 and br.event[u] >= 0:
            # the branch's next collapse
            i = _branch_of(br, br.event[u])
            row = br.first[i] + done[i]
            row_alpha[row] = a_k
            done[i] += 1
            _load_state(f, k, u, br, row + 1)
            u = parent[u]
        else:
            # Collapse t: it and every internal descendant become leaves at a_k.
            _collapse_below(t, internal, left, right, stack, alpha, a_k, br, m, done,
                            row_alpha)
            _make_leaf(f, k, t)
            u = parent[t]
        # Update the ancestors' sums, g and weakest link (their other branches are as
        # they were).
        while u >= 0:  # the compact parent array: the walk's next node comes sooner
            _refresh(f, k, u)
            u = parent[u]
    seq_leaves[n_steps - 1] = np.int64(f[0, _LEAVES])
    seq_risk[n_steps - 1] = f[0, _BRANCH]
    if m > 0:
        for u in range(n):
            if br.event[u] >= 0:
                alpha[u] = row_alpha[br.event[u]]
    return (alpha, alphas[:n_steps].copy(), seq_leaves[:n_steps].copy(),
            seq_risk[:n_steps].copy())


@jit
def _no_branches():
    """:class:`Branches` of none: :func:`_sequence` is then the one loop."""
    none = np.zeros(0, dtype=np.int64)
    return Branches(none, none, none, np.zeros((0, 3), dtype=np.float64), none, none, none,
                    np.zeros((0, 0), dtype=np.int64))


@jit
def weakest_link(left, right, parent, risk):
    """Per-node collapse α and the sequence α_1 < … < α_K of docs/maths.md §4.

    Returns ``(alpha, alphas, n_leaves, tree_risk)``: the per-node collapse α, and for
    k = 1..K the sequence α_k (``alphas[0] == 0``), |T~_k| and R(T_k). Every internal
    node t of the current tree keeps the node of least (g, id) in its branch and that g,
    so the root holds the weakest link; a collapse recomputes R(T_a), |T~_a|, g(a) and
    the weakest link of its ancestors a only, in O(1) each.
    """
    f, k, internal, size, atol = _first_tree(left, right, parent, risk)
    return _sequence(f, k, internal, left, right, parent, size, atol, _no_branches())


# --------------------------------------------------------------------------- Python level


@jit
def _internal_below(left, right, internal):
    """The internal nodes of T_1 in each node's branch (itself included)."""
    n = left.shape[0]
    below = np.zeros(n, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        if internal[t]:
            below[t] = 1 + below[left[t]] + below[right[t]]
    return below


def _branches(left, right, internal, n_threads):
    """:class:`Branches` for :func:`weakest_link_threads`, or None where T_1 is too
    small to share out: the largest branch is split into its children's until there are
    :data:`BRANCHES_PER_THREAD` per thread (the nodes split are the loop's own, above
    the branches), and each branch goes to the chunk with the fewest internal nodes so
    far, the largest first."""
    below = _internal_below(left, right, internal)
    if below[0] < THREADED_MIN_SPLITS:
        return None
    heap = [(-int(below[0]), 0)]
    while len(heap) < BRANCHES_PER_THREAD * n_threads:
        _, t = heapq.heappop(heap)
        for c in (int(left[t]), int(right[t])):
            if internal[c]:
                heapq.heappush(heap, (-int(below[c]), c))
        if not heap:
            return None
    order = sorted(heap)  # the largest branch first (then the least id)
    root = np.array([t for _, t in order], dtype=np.int64)
    size = below[root]
    load = np.zeros(n_threads, dtype=np.int64)
    chunk = np.empty(root.shape[0], dtype=np.int64)
    for i, b in enumerate(size):
        chunk[i] = c = int(np.argmin(load))
        load[c] += b
    first = np.zeros(root.shape[0], dtype=np.int64)
    np.cumsum(size[:-1] + 1, out=first[1:])
    n_rows = int(first[-1] + size[-1] + 1)
    return Branches(root, chunk, first, np.empty((n_rows, 3), dtype=np.float64),
                    np.empty(n_rows, dtype=np.int64), np.zeros(root.shape[0], dtype=np.int64),
                    np.full(left.shape[0], -1, dtype=np.int64),
                    np.empty((n_threads, 2 * int(size[0]) + 2), dtype=np.int64))


def weakest_link_threads(left, right, parent, risk, n_threads=1):
    """:func:`weakest_link` with the collapses of T_1's largest branches run on
    ``n_threads`` threads (:func:`_branch_sequences`) and interleaved after
    (:func:`_sequence`): the same floats, bit for bit. One thread, or a T_1 with fewer
    than :data:`THREADED_MIN_SPLITS` splits: the one loop (:func:`weakest_link`)."""
    if n_threads < 2 or left.shape[0] < 2 * THREADED_MIN_SPLITS:
        return weakest_link(left, right, parent, risk)
    f, k, internal, size, atol = _first_tree(left, right, parent, risk)
    br = _branches(left, right, internal, n_threads)
    if br is None:  # the one loop, on the tables of T_1 already made
        return _sequence(f, k, internal, left, right, parent, size, atol, _no_branches())
    pool = chunk_pool(n_threads)
    try:
        run_chunks(pool, n_threads, _branch_sequences, f, k, internal, left, right, parent,
                   br)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return _sequence(f, k, internal, left, right, parent, size, atol, br)


def with_alpha(tree, n_threads=1):
    """``tree`` with ``alpha`` set to the per-node collapse α of docs/maths.md §4, and the
    sequence ``(α_k, |T~_k|, R(T_k))`` that the same weakest-link pass gives
    (:func:`weakest_link_threads` on ``n_threads`` threads)."""
    alpha, alphas, n_leaves, tree_risk = weakest_link_threads(
        tree.left, tree.right, tree.parent, tree.risk, n_threads)
    return tree._replace(alpha=alpha), (alphas, n_leaves, tree_risk)


def pruning_sequence(tree, risk=None):
    """(α_k, |T~_k|, R(T_k)) of ``tree``'s weakest-link sequence, optionally on other R(t).

    The same loop as :func:`with_alpha` (which stores its per-node α); with ``risk``
    given (one value per node) it runs on those node risks instead of ``tree.risk``.
    """
    _, alphas, n_leaves, tree_risk = weakest_link(
        tree.left, tree.right, tree.parent, tree.risk if risk is None else risk)
    return alphas, n_leaves, tree_risk


def keeps_split(tree, alpha):
    """Mask of the nodes whose split T(α) keeps: ``alpha[t] > α (1 + ALPHA_RTOL) +
    ALPHA_ATOL R(root)``.

    The stored α_k are sums and quotients of rounded risks: the iris petal tree stores
    α_3 = 0.013333333333333336 for the exact 1/75 = 0.013333333333333334. A value of α
    typed from the path, from a book or from an rpart ``cp`` (α = cp · R(root)) is
    therefore compared with the relative slack ``ALPHA_RTOL`` (1e-9) plus the absolute
    ``ALPHA_ATOL`` (1e-12) times R(root) — the tolerance under which the weakest-link
    loop itself treats two values of g as one step, so no two steps of a sequence are
    ever closer than it. An α within that slack above α_k gives T_k, as exact arithmetic
    would; an α meant to lie strictly between two steps is unaffected.
    """
    if not np.isfinite(alpha):
        return np.zeros(tree.n_nodes, dtype=bool)  # T(+inf) is the root
    bound = alpha + ALPHA_RTOL * alpha + ALPHA_ATOL * abs(float(tree.risk[0]))
    return tree.alpha > bound


def prune_tree(tree, alpha):
    """T(α) as a new Tree: the splits of the nodes :func:`keeps_split` keeps.

    ``tree`` carries the per-node α (:func:`with_alpha`); α >= 0, +inf gives the root.
    """
    return subtree(tree, keeps_split(tree, alpha))


def midpoints(alphas):
    """α'_k = sqrt(α_k α_{k+1}) for k < K and α'_K = +∞ (docs/maths.md §5)."""
    out = np.empty_like(alphas)
    with np.errstate(over="ignore", under="ignore"):
        out[:-1] = np.sqrt(alphas[:-1] * alphas[1:])
    # where α_k α_{k+1} leaves float64's normal range, sqrt(α_k) sqrt(α_{k+1}) does not
    lost = ~np.isfinite(out[:-1]) | ((out[:-1] < 1e-150) & (alphas[:-1] > 0))
    if lost.any():
        lost = np.flatnonzero(lost)
        out[lost] = np.sqrt(alphas[lost]) * np.sqrt(alphas[lost + 1])
    out[-1] = np.inf
    return out


def path_columns(alphas, n_leaves, risk, root_risk):
    """:func:`path_table`'s columns, as a dict of arrays (name -> column), in order."""
    cp = alphas / root_risk if root_risk > 0 else np.zeros_like(alphas)
    return {
        "k": np.arange(1, alphas.shape[0] + 1),
        "alpha": alphas,
        "alpha_prime": midpoints(alphas),
        "n_leaves": n_leaves,
        "risk": risk,
        "cp": cp,
        "rel_error": risk / root_risk if root_risk > 0 else np.zeros_like(risk),
    }


def path_table(alphas, n_leaves, risk, root_risk):
    """The pruning sequence as a DataFrame: k, alpha, alpha_prime, n_leaves, risk, cp,
    rel_error (cp = α_k / R(root) and rel_error = R(T_k) / R(root), rpart's scaling),
    indexed by k (:func:`index_by_k`)."""
    import pandas as pd  # imported here, not at `import cartjit` (docs/design.md)
    return index_by_k(pd.DataFrame(path_columns(alphas, n_leaves, risk, root_risk)))


def index_by_k(table):
    """``table`` (a DataFrame with a ``k`` column) indexed by the book's k, so that
    ``table.loc[k]`` is the row of T_k (docs/reading-trees.md, "Numbering"). The index
    is unnamed: a level named like the ``k`` column would make ``"k"`` ambiguous in
    ``sort_values`` and ``groupby``."""
    import pandas as pd
    return table.set_axis(pd.Index(table["k"].to_numpy(), dtype=np.int64), axis=0)
