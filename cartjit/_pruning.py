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

import numpy as np

from ._config import jit
from ._tree import subtree

__all__ = ["ALPHA_RTOL", "ALPHA_ATOL", "weakest_link", "with_alpha", "pruning_sequence",
           "keeps_split", "prune_tree", "midpoints", "path_table"]

ALPHA_RTOL = 1e-9
ALPHA_ATOL = 1e-12


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


@jit
def weakest_link(left, right, parent, risk):
    """Per-node collapse α and the sequence α_1 < … < α_K of docs/maths.md §4.

    Returns ``(alpha, alphas, n_leaves, tree_risk)``: the per-node collapse α, and for
    k = 1..K the sequence α_k (``alphas[0] == 0``), |T~_k| and R(T_k). Every internal
    node t of the current tree keeps the node of least (g, id) in its branch and that g,
    so the root holds the weakest link; a collapse recomputes R(T_a), |T~_a|, g(a) and
    the weakest link of its ancestors a only, in O(1) each.
    """
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
    alpha = np.zeros(n, dtype=np.float64)
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

    n_steps = 1
    alphas = np.zeros(size + 1)
    seq_leaves = np.zeros(size + 1, dtype=np.int64)
    seq_risk = np.zeros(size + 1)
    stack = np.empty(n, dtype=np.int64)
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
        f[t, _BRANCH] = f[t, _RISK]
        f[t, _LEAVES] = 1.0
        k[t, _BEST] = -1
        f[t, _BEST_G] = np.inf
        # Update the ancestors' sums, g and weakest link (their other branches are as
        # they were).
        u = parent[t]  # the compact parent array: the walk's next node comes sooner
        while u >= 0:
            l, r = k[u, _LEFT], k[u, _RIGHT]
            f[u, _BRANCH] = f[l, _BRANCH] + f[r, _BRANCH]
            f[u, _LEAVES] = f[l, _LEAVES] + f[r, _LEAVES]
            g_u = (f[u, _RISK] - f[u, _BRANCH]) / (f[u, _LEAVES] - 1.0)
            k[u, _BEST], f[u, _BEST_G] = _weakest_below(f, k, u, g_u)
            u = parent[u]
    seq_leaves[n_steps - 1] = np.int64(f[0, _LEAVES])
    seq_risk[n_steps - 1] = f[0, _BRANCH]
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
    rel_error (cp = α_k / R(root) and rel_error = R(T_k) / R(root), rpart's scaling)."""
    import pandas as pd  # imported here: pandas costs ~0.35 s at `import cartjit`
    return pd.DataFrame(path_columns(alphas, n_leaves, risk, root_risk))
