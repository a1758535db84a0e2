"""Cost-complexity (weakest-link) pruning, SPEC §4.

For a tree T and α >= 0, R_α(T) = R(T) + α |T~|. The sequence of smallest minimising
subtrees T_1 > T_2 > … > T_K = {root} and the thresholds 0 = α_1 < α_2 < … < α_K are
computed once, and stored as one number per node, ``alpha[t]``: the α at which t
becomes a leaf (see :mod:`cartjit._tree`). T(α) for any α is then a mask, never a refit.

:func:`weakest_link` implements the sequential loop of SPEC §4 exactly, without rescans:

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

__all__ = ["ALPHA_RTOL", "ALPHA_ATOL", "weakest_link"]

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
    """Per-node collapse α and the sequence α_1 < … < α_K of SPEC §4.

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
