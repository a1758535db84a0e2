"""rpart's pruning and cross-validation rules, stated here and applied to flat trees.

The parity tests use these functions to say *why* rpart's ``cptable`` (and its
``xerror`` / ``xstd``) differ from cartjit's where they do. They are written from the
rules as rpart documents them (the vignette "An Introduction to Recursive Partitioning
Using the RPART Routines", sections "Pruning the tree" and "Cross-validation"; the help
pages of ``rpart``, ``rpart.control``, ``printcp`` and ``xpred.rpart``) and as stated in
docs/maths.md §9, not from rpart's code. Nothing here imports cartjit.

A tree is given as flat arrays, as cartjit stores one: ``left[t]`` and ``right[t]``
(``-1`` at a leaf; children have larger ids than their parent, node 0 is the root),
``feature[t]``, ``threshold[t]``, and exact node risks R(t) (``fractions.Fraction``).
``left`` is always the child of the smaller values: cartjit sends x <= c there, rpart
x < c (:func:`descend` takes the side of a value equal to the threshold as an argument).

The rules:

1. **Complexity of a node** (:func:`one_pass_complexities`). rpart gives every node the
   α at which it would be pruned, in one bottom-up pass rather than by the weakest-link
   loop: for a node t whose children have been treated,
   g(t) = (R(t) - R(kept branches of the children)) / (1 + splits of those branches).
   Then the children are visited in increasing order of complexity (the right child
   first when the two are equal): while g(t) exceeds the visited child's complexity,
   that child is collapsed to a leaf (its kept branch becomes the child alone) and g(t)
   is recomputed. The final g(t) is the node's complexity, and the branch that t keeps
   is t with its children's kept branches. A node with g(t) <= 0, or with R(t) = 0,
   does not split at all (with ``cp = 0`` rpart drops every split that does not lower
   the risk). Finally, from the root down, each complexity is capped by its parent's (a
   node cannot outlive its parent); leaves get 0.
2. **The CP table** (:func:`cp_rows`): the distinct complexities, largest first (the
   root's, then down to 0). The row at complexity a keeps the nodes whose complexity
   exceeds a; it reports a / R(root) (CP), the number of splits and the risk of that
   subtree.
3. **Evaluation points** (:func:`evaluation_points`): row r stands for the interval
   [CP_r, CP_(r-1)) of complexities and is evaluated at the geometric mean of its ends;
   the first row (the root alone) stands for [CP_1, +∞) and is evaluated at +∞.
4. **Fold trees**: every fold tree is grown with the full sample's case weights and is
   pruned at the points of rule 3 (in the units of the full sample's risk per unit of
   weight) with its own complexities from rule 1 (per unit of the fold's weight).
5. **Held-out scoring**: a held-out case descends while the point is below the node's
   complexity (:func:`descend`), then costs π(y)/f(y) · L(y, predicted) for a
   classification (f the full sample's class frequencies; rpart 4.1.19 reads the loss
   matrix transposed there, L(predicted, y)) or (y - ŷ)² for a regression.
   ``xerror`` is the mean cost over all cases divided by R(root) and ``xstd`` the
   standard error of that mean on the same scale (:func:`xerror_xstd`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple, Sequence

import numpy as np

__all__ = ["FlatTree", "tree_from_rpart", "membership", "one_pass_complexities",
           "cp_rows", "evaluation_points", "descend", "xerror_xstd"]


class FlatTree(NamedTuple):
    """A binary tree in flat arrays; ``left`` is the child of the smaller values."""

    left: np.ndarray       # int64, -1 at leaves
    right: np.ndarray      # int64, -1 at leaves
    feature: np.ndarray    # int64, column of X (-1 at leaves)
    threshold: np.ndarray  # float64
    value: np.ndarray      # leaf prediction: class index or mean response


def tree_from_rpart(result: dict, features: Sequence[str], method: str) -> FlatTree:
    """The tree of one :func:`rpart_runner.run_rpart` result as a :class:`FlatTree`.

    rpart numbers the children of node k as 2k and 2k+1 and lists its nodes in
    ``frame`` depth first, so frame order has every child after its parent. The split of
    node k sends x < threshold to 2k when ``ncat`` is -1 and to 2k+1 when it is +1; the
    flat ``left`` is the child that gets x < threshold. Classification values are
    0-based class indices (rpart's ``yval`` counts from 1).
    """
    frame = result["frame"]
    nodes = [int(v) for v in frame["node"]]
    pos = {k: i for i, k in enumerate(nodes)}
    n = len(nodes)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    feature = np.full(n, -1, dtype=np.int64)
    threshold = np.zeros(n)
    value = frame["yval"].to_numpy(dtype=np.float64).copy()
    if method == "class":
        value = value.astype(np.int64) - 1
    col = {name: j for j, name in enumerate(features)}
    for row in result["splits"].itertuples(index=False):
        i = pos[int(row.node)]
        assert int(row.ncat) in (-1, 1), "continuous splits only"
        first, second = pos[2 * int(row.node)], pos[2 * int(row.node) + 1]
        left[i], right[i] = (first, second) if int(row.ncat) == -1 else (second, first)
        feature[i] = col[row.var]
        threshold[i] = float(row.threshold)
    for i in range(n):
        assert (left[i] < 0) == (right[i] < 0) and (left[i] < 0 or min(left[i], right[i]) > i)
    return FlatTree(left, right, feature, threshold, value)


def membership(tree: FlatTree, X: np.ndarray, *, strict: bool) -> list[np.ndarray]:
    """Boolean mask of the rows of X that reach each node (``strict``: x < c goes left,
    else x <= c)."""
    masks = [np.zeros(len(X), dtype=bool) for _ in range(len(tree.left))]
    masks[0][:] = True
    for t in range(len(tree.left)):
        if tree.left[t] >= 0:
            x = X[:, tree.feature[t]]
            lower = x < tree.threshold[t] if strict else x <= tree.threshold[t]
            masks[tree.left[t]] = masks[t] & lower
            masks[tree.right[t]] = masks[t] & ~lower
    return masks


def one_pass_complexities(left, right, risk) -> tuple[list[Fraction], frozenset]:
    """Rule 1 of the module docstring: each node's complexity and the split nodes.

    Returns the complexities (0 at the leaves of the pruned tree) and the set of nodes
    that split in it (rpart's cp = 0 tree)."""
    n = len(left)
    comp = [Fraction(0)] * n
    kept_risk = list(risk)          # risk of the branch a node keeps (itself: a leaf)
    kept_splits = [0] * n
    splits = [False] * n
    for t in range(n - 1, -1, -1):  # children before parents
        if left[t] < 0 or risk[t] == 0:
            continue
        kids = [int(left[t]), int(right[t])]
        # increasing complexity; on equality the right child first
        kids.sort(key=lambda c: (comp[c], c != int(right[t])))
        branch_risk = {c: kept_risk[c] for c in kids}
        branch_splits = {c: kept_splits[c] for c in kids}

        def g():
            return (risk[t] - sum(branch_risk.values())) / (1 + sum(branch_splits.values()))

        for c in kids:
            if g() > comp[c]:
                branch_risk[c], branch_splits[c] = risk[c], 0
            else:
                break
        value = g()
        if value <= 0:
            continue
        comp[t] = value
        splits[t] = True
        kept_risk[t] = sum(branch_risk.values())
        kept_splits[t] = 1 + sum(branch_splits.values())
    # rpart's tree: the splitting nodes reachable from the root through splitting nodes
    internal = _reachable(left, right, {t for t in range(n) if splits[t]})
    out = [Fraction(0)] * n
    for t in range(n):
        if t in internal:
            out[t] = comp[t]
    for t in range(n):
        if t in internal:
            for c in (int(left[t]), int(right[t])):
                if c in internal:
                    out[c] = min(out[c], out[t])
    return out, frozenset(internal)


def _reachable(left, right, splitting) -> set:
    """The splitting nodes reachable from the root through splitting nodes."""
    out = set()
    stack = [0] if 0 in splitting else []
    while stack:
        t = stack.pop()
        out.add(t)
        for c in (int(left[t]), int(right[t])):
            if c in splitting:
                stack.append(c)
    return out


def _leaves(left, right, internal) -> list[int]:
    out, stack = [], [0]
    while stack:
        t = stack.pop()
        if t in internal:
            stack.extend((int(left[t]), int(right[t])))
        else:
            out.append(t)
    return out


def cp_rows(left, right, risk) -> list[tuple[Fraction, int, Fraction]]:
    """Rule 2: the rows (complexity in risk units, number of splits, R(T)), largest
    complexity first."""
    comp, internal = one_pass_complexities(left, right, risk)
    values = sorted({comp[t] for t in internal} | {Fraction(0)}, reverse=True)
    rows = []
    for a in values:
        kept = frozenset(t for t in internal if comp[t] > a)
        rows.append((a, len(kept), sum(risk[t] for t in _leaves(left, right, kept))))
    return rows


def evaluation_points(cp: Sequence[float]) -> list[float]:
    """Rule 3: +∞ for the first row, then sqrt(CP_(r-1) CP_r)."""
    return [math.inf] + [math.sqrt(float(a) * float(b)) for a, b in zip(cp[:-1], cp[1:])]


def descend(tree, x, complexity, a, *, strict: bool) -> int:
    """Leaf reached by case x when every node whose complexity exceeds a splits
    (``strict``: a value equal to the threshold goes right, as in rpart)."""
    t = 0
    while tree.left[t] >= 0 and a < complexity[t]:
        v, c = x[tree.feature[t]], tree.threshold[t]
        t = int(tree.left[t]) if (v < c if strict else v <= c) else int(tree.right[t])
    return t


def xerror_xstd(losses: np.ndarray, root_risk: float) -> tuple[np.ndarray, np.ndarray]:
    """Rule 5 for unit weights: per-case losses (n, K) -> xerror and xstd per column."""
    n = losses.shape[0]
    s, sq = losses.sum(axis=0), (losses ** 2).sum(axis=0)
    return s / n / root_risk, np.sqrt(np.maximum(sq - s * s / n, 0)) / n / root_risk

