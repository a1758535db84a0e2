"""The weakest-link pruning (docs/maths.md §4), one step at a time."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..engine.pruning import ALPHA_ATOL, ALPHA_RTOL
from ..engine.tree import LEAF
from ._common import _fitted, _table

__all__ = ["pruning_steps"]


def _branches(tree, internal):
    """R(T_t) and |T~_t| of every node of the subtree whose internal nodes are
    ``internal``, summed bottom-up (children first), as the weakest-link loop sums."""
    n = tree.n_nodes
    branch = np.array(tree.risk, dtype=np.float64, copy=True)
    leaves = np.ones(n, dtype=np.float64)
    for t in range(n - 1, -1, -1):
        if internal[t]:
            l, r = tree.left[t], tree.right[t]
            branch[t] = branch[l] + branch[r]
            leaves[t] = leaves[l] + leaves[r]
    return branch, leaves


def _below(tree, t, internal):
    """The internal nodes of the branch T_t (t included) among ``internal``."""
    out, stack = [], [t]
    while stack:
        u = stack.pop()
        if internal[u]:
            out.append(u)
            stack += [int(tree.left[u]), int(tree.right[u])]
    return out


def _leaves_of(tree, internal):
    """The leaves of the subtree with these internal nodes, in id order."""
    present = np.zeros(tree.n_nodes, dtype=bool)
    present[0] = True
    for t in range(tree.n_nodes):
        if present[t] and internal[t]:
            present[tree.left[t]] = present[tree.right[t]] = True
    return tuple(int(t) for t in np.flatnonzero(present & ~internal))


def _weakest_link_replay(tree):
    """The weakest-link loop of docs/maths.md §4, one step at a time: a list of steps,
    each (k, internal mask of T_k, R(T_t), |T~_t|, g, weakest links, α_{k+1}), k = 0
    being T_max → T_1 when they differ; and the per-node α the loop stores."""
    n = tree.n_nodes
    risk = np.asarray(tree.risk, dtype=np.float64)
    atol = ALPHA_ATOL * abs(float(risk[0]))
    alpha = np.zeros(n)
    internal = tree.left != LEAF
    steps = []
    branch, leaves = _branches(tree, internal)
    # T_1: every split that does not lower the risk (top-down, within the tolerance)
    first = np.zeros(n, dtype=bool)
    for t in range(n):
        if internal[t] and (t == 0 or first[tree.parent[t]]):
            first[t] = not (risk[t] - branch[t] <= atol)
    dropped = internal & ~first
    if dropped.any():
        g = np.full(n, np.nan)
        g[internal] = (risk[internal] - branch[internal]) / (leaves[internal] - 1.0)
        tops = [t for t in np.flatnonzero(dropped)
                if t == 0 or not dropped[tree.parent[t]]]
        steps.append((0, internal.copy(), branch, leaves, g, tuple(int(t) for t in tops),
                       0.0))
    internal = first
    k = 1
    while internal.any():
        branch, leaves = _branches(tree, internal)
        g = np.full(n, np.nan)
        g[internal] = (risk[internal] - branch[internal]) / (leaves[internal] - 1.0)
        g_min = float(np.nanmin(g))
        bound = g_min + ALPHA_RTOL * g_min + atol
        weakest = [int(t) for t in np.flatnonzero(internal & (g <= bound))]
        # a weakest link inside another one's branch goes with it
        tops = [t for t in weakest if not any(
            a in weakest for a in _ancestors(tree, t))]
        steps.append((k, internal.copy(), branch, leaves, g, tuple(tops), g_min))
        nxt = internal.copy()
        for t in tops:
            for u in _below(tree, t, internal):
                alpha[u] = g_min
                nxt[u] = False
        internal = nxt
        k += 1
    return steps, alpha


def _ancestors(tree, t):
    out = []
    while t > 0:
        t = int(tree.parent[t])
        out.append(t)
    return out


def pruning_steps(estimator, *, by="node"):
    """The weakest-link pruning of ``tree_max_`` step by step (docs/maths.md §4).

    For each k, every internal node t of T_k with R(t), R(T_t), |T~_t| and
    g_k(t) = (R(t) - R(T_t)) / (|T~_t| - 1); the weakest links are the nodes of least
    g_k (within the loop's tolerance, 10⁻⁹ g + 10⁻¹² R(root)), α_{k+1} = min_t g_k(t),
    and T_{k+1} is T_k with the weakest links made leaves. When T_max holds splits that
    do not lower the risk, step k = 0 shows how T_1 = T(0) drops them (the nodes with
    R(t) = R(T_t), α_1 = 0). The numbers are those the fit's loop computes: the α of
    every node (``tree_max_.alpha``) is the α_{k+1} of the step that collapses it.

    Parameters
    ----------
    estimator : a fitted CARTClassifier, CARTRegressor or a CV variant, with
        ``compat="breiman"`` (rpart's one-pass complexities are not a weakest-link loop:
        docs/maths.md §9).
    by : {"node", "step"}, default "node"
        "node": one row per (k, internal node of T_k), indexed by (k, node), with
        ``risk_node`` (R(t)), ``risk_branch`` (R(T_t)), ``leaves_branch`` (|T~_t|), ``g``
        and ``weakest``. "step": one row per k with ``alpha`` (α_k), ``n_leaves`` and
        ``risk`` of T_k, ``weakest`` (the node ids collapsed), ``alpha_next``
        (α_{k+1}), ``n_leaves_next`` and ``leaves_next`` (the leaf ids of T_{k+1});
        k = K, the root alone, closes the table.

    Returns
    -------
    StepTable
        Node ids are those of ``tree_max_``.
    """
    tree = _fitted(estimator, "pruning_steps")
    if getattr(estimator, "compat", "breiman") == "rpart":
        raise ValueError("pruning_steps replays the exact weakest-link loop of "
                         "docs/maths.md §4; with compat='rpart' the sequence is rpart's "
                         "one-pass complexities (docs/maths.md §9), fit with "
                         "compat='breiman' to see the loop")
    if by not in ("node", "step"):
        raise ValueError(f"by must be 'node' or 'step', got {by!r}")
    steps, _ = _weakest_link_replay(tree)
    risk = np.asarray(tree.risk, dtype=np.float64)
    if by == "node":
        rows = []
        for k, internal, branch, leaves, g, tops, _a in steps:
            weak = set(tops)
            for t in np.flatnonzero(internal):
                rows.append({"k": k, "node": int(t), "risk_node": risk[t],
                             "risk_branch": branch[t], "leaves_branch": int(leaves[t]),
                             "g": g[t], "weakest": int(t) in weak})
        out = pd.DataFrame(rows).set_index(["k", "node"])
        return _table(out, "weakest-link pruning: g_k(t) = (R(t) - R(T_t)) / (|T~_t| - 1) "
                           "for every internal node t of T_k; the weakest links are "
                           "collapsed, α_{k+1} = min g_k(t)")
    rows = []
    for i, (k, internal, branch, leaves, g, tops, a_next) in enumerate(steps):
        nxt = internal.copy()
        for t in tops:
            for u in _below(tree, t, internal):
                nxt[u] = False
        alpha_k = 0.0 if k <= 1 else steps[i - 1][6]
        after = _leaves_of(tree, nxt)
        rows.append({"k": k, "alpha": alpha_k if k else np.nan,
                     "n_leaves": int(leaves[0]), "risk": branch[0], "weakest": tops,
                     "alpha_next": a_next, "n_leaves_next": len(after),
                     "leaves_next": after})
    last = steps[-1] if steps else None
    rows.append({"k": (last[0] + 1) if last else 1,
                 "alpha": last[6] if last else 0.0, "n_leaves": 1, "risk": risk[0],
                 "weakest": (), "alpha_next": np.nan, "n_leaves_next": np.nan,
                 "leaves_next": ()})
    out = pd.DataFrame(rows).set_index("k", drop=False)
    out["n_leaves_next"] = out["n_leaves_next"].astype("Int64")
    out.index.name = None
    return _table(out, "weakest-link pruning by step: T_k (α_k, |T~_k|, R(T_k)), its "
                       "weakest links and T_{k+1} (k = 0: T_max → T_1)")
