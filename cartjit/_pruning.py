"""Cost-complexity (weakest-link) pruning, docs/maths.md §4: the one place it lives.

For a tree T and α >= 0, R_α(T) = R(T) + α |T~|. The sequence of smallest minimising
subtrees T_1 > T_2 > … > T_K = {root} and the thresholds 0 = α_1 < α_2 < … < α_K are
computed once, and stored as one number per node, ``alpha[t]``: the α at which t
becomes a leaf (see :mod:`cartjit._tree`). T(α) for any α is then a mask, never a refit.

Everything about pruning is here:

* :func:`weakest_link`, the kernel: one loop gives both the per-node α and the
  sequence (α_k, |T~_k|, R(T_k));
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
3. g(t) = (R(t) - R(T_t)) / (|T~_t| - 1) for the internal nodes of T_1 goes into an
   indexed heap. α_{k+1} is the smallest g; every node whose g ties with it is collapsed
   (it and its internal descendants get alpha = α_{k+1}); each collapse updates R(T_a),
   |T~_a| and g(a) of the ancestors only, in place in the heap (collapsed descendants
   are skipped when they surface).
   Pruning at the minimum moves every ancestor's g away from it (the new g is a mediant
   that exceeds the old one), so one pass over the ties of the minimum is exact.

Sums of leaf risks are recomputed along the tree (R(T_a) = R(T_aL) + R(T_aR)), never
accumulated by repeated subtraction, so rounding grows with depth, not with the number
of steps. Two values of g are tied when they differ by at most
``ALPHA_RTOL · g + ALPHA_ATOL · R(root)``.
"""
from __future__ import annotations

import numpy as np

from ._config import jit
from ._tree import subtree

__all__ = ["ALPHA_RTOL", "ALPHA_ATOL", "weakest_link", "with_alpha", "pruning_sequence",
           "keeps_split", "prune_tree", "midpoints", "path_table"]

ALPHA_RTOL = 1e-9
ALPHA_ATOL = 1e-12


@jit(inline="always")
def _less(g, a, b):
    """Heap order: smaller g first, then smaller node id (deterministic)."""
    return g[a] < g[b] or (g[a] == g[b] and a < b)


@jit(inline="always")
def _sift_up(heap, pos, g, i):
    node = heap[i]
    while i > 0:
        up = (i - 1) // 2
        if not _less(g, node, heap[up]):
            break
        heap[i] = heap[up]
        pos[heap[i]] = i
        i = up
    heap[i] = node
    pos[node] = i


@jit(inline="always")
def _sift_down(heap, pos, g, i, size):
    node = heap[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _less(g, heap[child + 1], heap[child]):
            child += 1
        if not _less(g, heap[child], node):
            break
        heap[i] = heap[child]
        pos[heap[i]] = i
        i = child
    heap[i] = node
    pos[node] = i


@jit
def weakest_link(left, right, parent, risk):
    """Per-node collapse α and the sequence α_1 < … < α_K of docs/maths.md §4.

    Returns ``(alpha, alphas, n_leaves, tree_risk)``: the per-node collapse α, and for
    k = 1..K the sequence α_k (``alphas[0] == 0``), |T~_k| and R(T_k). The internal
    nodes of the current tree sit in an indexed binary heap keyed by g(t), updated in
    place when a collapse changes an ancestor's g.
    """
    n = left.shape[0]
    branch = np.empty(n, dtype=np.float64)
    leaves = np.empty(n, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        if left[t] < 0:
            branch[t] = risk[t]
            leaves[t] = 1
        else:
            branch[t] = branch[left[t]] + branch[right[t]]
            leaves[t] = leaves[left[t]] + leaves[right[t]]
    atol = ALPHA_ATOL * abs(risk[0])
    alpha = np.zeros(n, dtype=np.float64)
    internal = np.zeros(n, dtype=np.bool_)

    # T_1: prune every split that does not lower the risk. Ids increase downwards, so a
    # forward pass sees each node after its ancestors; pruned branches are skipped.
    for t in range(n):
        if left[t] >= 0 and (t == 0 or internal[parent[t]]):
            internal[t] = not (risk[t] - branch[t] <= atol)
    # Recompute the branch sums of T_1 (pruned nodes become leaves).
    for t in range(n - 1, -1, -1):
        if not internal[t]:
            branch[t] = risk[t]
            leaves[t] = 1
        else:
            branch[t] = branch[left[t]] + branch[right[t]]
            leaves[t] = leaves[left[t]] + leaves[right[t]]

    g = np.full(n, np.inf)
    heap = np.empty(n, dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    size = 0
    for t in range(n):
        if internal[t]:
            g[t] = (risk[t] - branch[t]) / (leaves[t] - 1)
            heap[size] = t
            pos[t] = size
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, pos, g, i, size)

    n_steps = 1
    alphas = np.zeros(size + 1)
    seq_leaves = np.zeros(size + 1, dtype=np.int64)
    seq_risk = np.zeros(size + 1)
    stack = np.empty(n, dtype=np.int64)
    a_k = 0.0
    while size > 0:
        t = heap[0]
        # pop the minimum
        size -= 1
        pos[t] = -1
        if size > 0:
            heap[0] = heap[size]
            pos[heap[0]] = 0
            _sift_down(heap, pos, g, 0, size)
        if not internal[t]:
            continue  # collapsed with an ancestor
        g_min = g[t]
        if g_min > a_k + ALPHA_RTOL * a_k + atol:
            # a new step: the current tree is T_k; α_{k+1} = g_min
            seq_leaves[n_steps - 1] = leaves[0]
            seq_risk[n_steps - 1] = branch[0]
            a_k = g_min
            alphas[n_steps] = a_k
            n_steps += 1
        # Collapse t: it and every internal descendant become leaves at a_k.
        top = 0
        stack[top] = t
        top += 1
        while top > 0:
            top -= 1
            u = stack[top]
            if internal[u]:
                internal[u] = False
                alpha[u] = a_k
                stack[top] = left[u]
                top += 1
                stack[top] = right[u]
                top += 1
        branch[t] = risk[t]
        leaves[t] = 1
        # Update the ancestors' g in place (it can only grow: sift down).
        u = parent[t]
        while u >= 0:
            branch[u] = branch[left[u]] + branch[right[u]]
            leaves[u] = leaves[left[u]] + leaves[right[u]]
            g[u] = (risk[u] - branch[u]) / (leaves[u] - 1)
            if pos[u] >= 0:
                _sift_down(heap, pos, g, pos[u], size)
                _sift_up(heap, pos, g, pos[u])
            u = parent[u]
    seq_leaves[n_steps - 1] = leaves[0]
    seq_risk[n_steps - 1] = branch[0]
    return (alpha, alphas[:n_steps].copy(), seq_leaves[:n_steps].copy(),
            seq_risk[:n_steps].copy())


# --------------------------------------------------------------------------- Python level


def with_alpha(tree):
    """``tree`` with ``alpha`` set to the per-node collapse α of docs/maths.md §4, and the
    sequence ``(α_k, |T~_k|, R(T_k))`` that the same weakest-link pass gives."""
    alpha, alphas, n_leaves, tree_risk = weakest_link(tree.left, tree.right, tree.parent,
                                                      tree.risk)
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


def path_table(alphas, n_leaves, risk, root_risk):
    """The pruning sequence as a DataFrame: k, alpha, alpha_prime, n_leaves, risk, cp,
    rel_error (cp = α_k / R(root) and rel_error = R(T_k) / R(root), rpart's scaling)."""
    import pandas as pd  # imported here: pandas costs ~0.35 s at `import cartjit`
    cp = alphas / root_risk if root_risk > 0 else np.zeros_like(alphas)
    return pd.DataFrame({
        "k": np.arange(1, alphas.shape[0] + 1),
        "alpha": alphas,
        "alpha_prime": midpoints(alphas),
        "n_leaves": n_leaves,
        "risk": risk,
        "cp": cp,
        "rel_error": risk / root_risk if root_risk > 0 else np.zeros_like(risk),
    })
