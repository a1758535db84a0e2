"""Cost-complexity (weakest-link) pruning, SPEC §4.

For a tree T and α >= 0, R_α(T) = R(T) + α |T~|. The sequence of smallest minimising
subtrees T_1 > T_2 > … > T_K = {root} and the thresholds 0 = α_1 < α_2 < … < α_K are
computed once, and stored as one number per node, ``alpha[t]``: the α at which t
becomes a leaf (see :mod:`cartjit._tree`). T(α) for any α is then a mask, never a refit.

:func:`weakest_link` implements the sequential loop of SPEC §4 exactly, without rescans:

1. one bottom-up pass (children have larger ids) gives R(T_t) = R(T_tL) + R(T_tR) and
   |T~_t| for every node;
2. T_1 = T(0): every split with R(t) = R(T_t) (within the tolerance) is pruned;
3. g(t) = (R(t) - R(T_t)) / (|T~_t| - 1) for the internal nodes of T_1 goes into a heap.
   α_{k+1} is the smallest valid g; every node whose g ties with it is collapsed (it and
   its internal descendants get alpha = α_{k+1}); each collapse updates R(T_a), |T~_a|
   and g(a) of the ancestors only, pushing their new g (stale heap entries are skipped).
   Pruning at the minimum moves every ancestor's g away from it (the new g is a mediant
   that exceeds the old one), so one pass over the ties of the minimum is exact.

Sums of leaf risks are recomputed along the tree (R(T_a) = R(T_aL) + R(T_aR)), never
accumulated by repeated subtraction, so rounding grows with depth, not with the number
of steps. Two values of g are tied when they differ by at most
``ALPHA_RTOL · g + ALPHA_ATOL · R(root)``.
"""
from __future__ import annotations

import heapq

import numpy as np

from ._config import jit

__all__ = ["ALPHA_RTOL", "ALPHA_ATOL", "weakest_link"]

ALPHA_RTOL = 1e-9
ALPHA_ATOL = 1e-12


@jit
def weakest_link(left, right, parent, risk):
    """Per-node collapse α and the sequence α_1 < … < α_K of SPEC §4.

    Returns ``(alpha, alphas, n_leaves, tree_risk)``: the per-node collapse α, and for
    k = 1..K the sequence α_k (``alphas[0] == 0``), |T~_k| and R(T_k).
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
    heap = [(np.inf, np.int64(0))]
    heap.pop()
    for t in range(n):
        if internal[t]:
            g[t] = (risk[t] - branch[t]) / (leaves[t] - 1)
            heapq.heappush(heap, (g[t], np.int64(t)))

    alphas = [0.0]
    seq_leaves = [np.int64(0)]
    seq_risk = [0.0]
    seq_leaves.pop()
    seq_risk.pop()
    stack = np.empty(n, dtype=np.int64)
    a_k = 0.0
    while len(heap) > 0:
        g_min, t = heapq.heappop(heap)
        if not internal[t] or g_min != g[t]:
            continue  # stale entry
        if g_min > a_k + ALPHA_RTOL * a_k + atol:
            # a new step: the current tree is T_k; α_{k+1} = g_min
            seq_leaves.append(leaves[0])
            seq_risk.append(branch[0])
            a_k = g_min
            alphas.append(a_k)
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
        # Update the ancestors and push their new g.
        u = parent[t]
        while u >= 0:
            branch[u] = branch[left[u]] + branch[right[u]]
            leaves[u] = leaves[left[u]] + leaves[right[u]]
            g[u] = (risk[u] - branch[u]) / (leaves[u] - 1)
            heapq.heappush(heap, (g[u], np.int64(u)))
            u = parent[u]
    seq_leaves.append(leaves[0])
    seq_risk.append(branch[0])
    return alpha, np.array(alphas), np.array(seq_leaves), np.array(seq_risk)
