"""Slow, exact references for cost-complexity pruning (docs/maths.md §4), shared by
tests/engine/test_pruning.py, tests/properties/test_rpart_mode_bruteforce.py and tests/parity/.

Nothing here imports cartjit. A tree is given as plain ``left``/``right`` child arrays
(``-1`` at leaves, children after their parent, node 0 the root) and exact node risks
R(t) as :class:`fractions.Fraction` (see :func:`class_node_risks`,
:func:`regression_node_risks`), so every comparison below is exact.

* :func:`all_pruned_subtrees` enumerates EVERY pruned subtree of the tree (at each
  internal node: collapse it, or keep it and recurse). Exponential; small trees only.
* :func:`min_risk_by_size` is the same minimisation compressed by leaf count (a
  knapsack-style dynamic programme): for every m, the least R(T) over all pruned
  subtrees with m leaves. Polynomial; it is checked against the enumeration on small
  trees in tests/engine/test_pruning.py and used for larger ones.
* :func:`exact_sequence` derives from either the exact 0 = α_1 < … < α_K with |T~_k|
  and R(T_k): the breakpoints of the lower envelope of the lines R*_m + α m;
  :func:`merge_ties` applies docs/maths.md §4's tie tolerance to it.
* :func:`smallest_minimiser` is T(α) by the bottom-up rule "collapse t whenever
  R(t) + α <= best value of its branch" (exact ties collapse, giving the smallest).
* :func:`subtree_from_alpha` reads T(α) from per-node collapse α values by the
  contract of cartjit/engine/tree.py, independently of cartjit's own code.
* :func:`heap_weakest_link` is the earlier floating-point weakest-link loop (an indexed
  binary heap of g(t), every ancestor re-sifted after a collapse), in plain Python: the
  kernel that replaced it must give the same per-node α and sequence bit for bit.
"""
from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np

__all__ = [
    "Subtree", "node_masks", "class_node_risks", "regression_node_risks",
    "all_pruned_subtrees", "min_risk_by_size", "exact_sequence", "merge_ties",
    "smallest_minimiser", "subtree_from_alpha", "leaves_of", "subtree_risk",
    "heap_weakest_link",
]


class Subtree(NamedTuple):
    """A pruned subtree: the internal nodes it keeps, its leaf count and R(T)."""

    internal: frozenset
    n_leaves: int
    risk: Fraction


# ----------------------------------------------------------------------------- node data

def node_masks(left, right, feature, threshold, X) -> list[np.ndarray]:
    """Boolean membership mask of every node for the rows of X (x <= c goes left)."""
    n_nodes = len(left)
    masks: list[np.ndarray | None] = [None] * n_nodes
    masks[0] = np.ones(X.shape[0], dtype=bool)
    for t in range(n_nodes):
        if left[t] >= 0:
            go_left = X[:, feature[t]] <= threshold[t]
            masks[left[t]] = masks[t] & go_left
            masks[right[t]] = masks[t] & ~go_left
    return masks  # type: ignore[return-value]


def _fr(v) -> Fraction:
    return Fraction(float(v))


def class_node_risks(masks, y, w, n_classes, priors=None, cost=None):
    """Exact R(t) = min_i Σ_j C(i|j) π(j) N_j(t) / N_j (docs/maths.md §1) and the labels j*(t).

    ``y`` class indices, ``w`` case weights, ``priors`` π (None: empirical, N_j / N),
    ``cost[j][i]`` = C(i|j) (None: 0-1). Labels break ties to the lowest index.
    """
    wf = [_fr(v) for v in w]
    totals = [Fraction(0)] * n_classes
    for yi, wi in zip(y, wf):
        totals[int(yi)] += wi
    big_n = sum(totals)
    pri = [t / big_n for t in totals] if priors is None else [_fr(p) for p in priors]
    if cost is None:
        C = [[Fraction(int(i != j)) for i in range(n_classes)] for j in range(n_classes)]
    else:
        C = [[_fr(cost[j][i]) for i in range(n_classes)] for j in range(n_classes)]
    scale = [pri[j] / totals[j] if totals[j] else Fraction(0) for j in range(n_classes)]
    risks, labels = [], []
    for m in masks:
        cnt = [Fraction(0)] * n_classes
        for i in np.flatnonzero(m):
            cnt[int(y[i])] += wf[i]
        p = [scale[j] * cnt[j] for j in range(n_classes)]
        exp = [sum(C[j][i] * p[j] for j in range(n_classes)) for i in range(n_classes)]
        best = min(exp)
        risks.append(best)
        labels.append(exp.index(best))
    return risks, labels


def regression_node_risks(masks, y, w):
    """Exact R(t) = Σ_{i∈t} w_i (y_i - ȳ(t))² / W (docs/maths.md §3) and the node means (float)."""
    wf = [_fr(v) for v in w]
    yf = [_fr(v) for v in y]
    big_w = sum(wf)
    risks, means = [], []
    for m in masks:
        sw = swy = swyy = Fraction(0)
        for i in np.flatnonzero(m):
            sw += wf[i]
            swy += wf[i] * yf[i]
            swyy += wf[i] * yf[i] * yf[i]
        risks.append((swyy - swy * swy / sw) / big_w)
        means.append(float(swy / sw))
    return risks, means


# ----------------------------------------------------------------------------- brute force

def all_pruned_subtrees(left, right, risk, node: int = 0) -> list[Subtree]:
    """Every pruned subtree of the branch at ``node``: collapse it, or keep and recurse."""
    out = [Subtree(frozenset(), 1, risk[node])]
    if left[node] >= 0:
        for a in all_pruned_subtrees(left, right, risk, int(left[node])):
            for b in all_pruned_subtrees(left, right, risk, int(right[node])):
                out.append(Subtree(a.internal | b.internal | {node},
                                   a.n_leaves + b.n_leaves, a.risk + b.risk))
    return out


def min_risk_by_size(left, right, risk) -> dict[int, Fraction]:
    """min R(T) over all pruned subtrees T with m leaves, for every attainable m."""
    n = len(left)
    best: list[dict[int, Fraction] | None] = [None] * n
    for t in range(n - 1, -1, -1):
        table = {1: risk[t]}
        if left[t] >= 0:
            bl, br = best[int(left[t])], best[int(right[t])]
            for ml, rl in bl.items():
                for mr, rr in br.items():
                    m, r = ml + mr, rl + rr
                    if m not in table or r < table[m]:
                        table[m] = r
        best[t] = table
    return best[0]


class Step(NamedTuple):
    alpha: Fraction
    n_leaves: int
    risk: Fraction


def exact_sequence(best_by_size: dict[int, Fraction]) -> list[Step]:
    """The exact (α_k, |T~_k|, R(T_k)) from the least risk per leaf count.

    T(α) minimises R*_m + α m over m, the smallest m on ties. At α = 0 that is the
    smallest m with R*_m = min R; then α_{k+1} = min over m < m_k of
    (R*_m - R*_{m_k}) / (m_k - m), and m_{k+1} the smallest m attaining it.
    """
    r_min = min(best_by_size.values())
    m = min(k for k, r in best_by_size.items() if r == r_min)
    seq = [Step(Fraction(0), m, best_by_size[m])]
    while m > 1:
        cands = {k: (best_by_size[k] - best_by_size[m]) / (m - k)
                 for k in best_by_size if k < m}
        a = min(cands.values())
        m = min(k for k, v in cands.items() if v == a)
        seq.append(Step(a, m, best_by_size[m]))
    return seq


def merge_ties(seq: list[Step], rtol: float) -> list[Step]:
    """``seq`` with steps whose α are within ``rtol`` (relative) of the previous step's
    merged into one step: the first α, the last (smallest) tree.

    docs/maths.md §4 prunes "every node attaining the minimum (all ties, compared with a
    tolerance)". Data given in decimal (y = 80.2, …) have ties in decimal arithmetic that
    the binary representation turns into differences of ~1e-14; exact arithmetic on the
    binary values sees two steps, the tolerance one.
    """
    out: list[Step] = []
    for s in seq:
        if out and s.alpha - out[-1].alpha <= rtol * s.alpha:
            out[-1] = Step(out[-1].alpha, s.n_leaves, s.risk)
        else:
            out.append(s)
    return out


def smallest_minimiser(left, right, risk, alpha) -> tuple[Fraction, frozenset]:
    """(min_T R(T) + α|T~|, the internal nodes of the smallest minimising subtree)."""
    n = len(left)
    val: list[Fraction | None] = [None] * n
    keep: list[frozenset | None] = [None] * n
    for t in range(n - 1, -1, -1):
        collapse = risk[t] + alpha
        if left[t] >= 0:
            l, r = int(left[t]), int(right[t])
            branch = val[l] + val[r]
            if branch < collapse:
                val[t] = branch
                keep[t] = keep[l] | keep[r] | {t}
                continue
        val[t] = collapse
        keep[t] = frozenset()
    return val[0], keep[0]


def subtree_from_alpha(left, parent, node_alpha, alpha) -> frozenset:
    """Internal nodes of T(α) by the contract: t is in T(α) when every strict ancestor a
    has node_alpha[a] > α, and internal when also node_alpha[t] > α."""
    out = set()
    for t in range(len(left)):
        if left[t] < 0 or not node_alpha[t] > alpha:
            continue
        a, ok = parent[t], True
        while a >= 0:
            if not node_alpha[a] > alpha:
                ok = False
                break
            a = parent[a]
        if ok:
            out.add(t)
    return frozenset(out)


def leaves_of(left, right, internal: frozenset) -> list[int]:
    """Leaves of the pruned subtree keeping the splits ``internal``."""
    out, stack = [], [0]
    while stack:
        t = stack.pop()
        if t in internal:
            stack.extend((int(right[t]), int(left[t])))
        else:
            out.append(t)
    return sorted(out)


def subtree_risk(left, right, risk, internal: frozenset) -> Fraction:
    return sum((risk[t] for t in leaves_of(left, right, internal)), Fraction(0))


# ------------------------------------------------------------- the earlier heap loop

def heap_weakest_link(left, right, parent, risk, rtol=1e-9, atol_factor=1e-12):
    """(alpha, alphas, n_leaves, tree_risk) by the weakest-link loop with an indexed
    binary heap keyed by (g, node id), in float64 with the operations in the order of the
    kernel it preceded: T_1 drops splits with R(t) - R(T_t) <= atol; the least g is
    popped, a new step starts when it exceeds α_k (1 + rtol) + atol; the popped node and
    its internal descendants collapse at α_k; every ancestor's R(T_a), |T~_a| and g(a)
    are recomputed from its children and its heap entry re-sifted. Slow: tests only."""
    n = len(left)
    left = [int(v) for v in left]
    right = [int(v) for v in right]
    parent = [int(v) for v in parent]
    risk = [float(v) for v in risk]
    branch, leaves = [0.0] * n, [0] * n
    for t in range(n - 1, -1, -1):
        if left[t] < 0:
            branch[t], leaves[t] = risk[t], 1
        else:
            branch[t] = branch[left[t]] + branch[right[t]]
            leaves[t] = leaves[left[t]] + leaves[right[t]]
    atol = atol_factor * abs(risk[0])
    alpha = [0.0] * n
    internal = [False] * n
    for t in range(n):
        if left[t] >= 0 and (t == 0 or internal[parent[t]]):
            internal[t] = not (risk[t] - branch[t] <= atol)
    for t in range(n - 1, -1, -1):
        if not internal[t]:
            branch[t], leaves[t] = risk[t], 1
        else:
            branch[t] = branch[left[t]] + branch[right[t]]
            leaves[t] = leaves[left[t]] + leaves[right[t]]
    g = [float("inf")] * n
    heap, pos = [], [-1] * n

    def less(a, b):
        return g[a] < g[b] or (g[a] == g[b] and a < b)

    def sift_up(i):
        node = heap[i]
        while i > 0:
            up = (i - 1) // 2
            if not less(node, heap[up]):
                break
            heap[i] = heap[up]
            pos[heap[i]] = i
            i = up
        heap[i] = node
        pos[node] = i

    def sift_down(i):
        node, size = heap[i], len(heap)
        while True:
            child = 2 * i + 1
            if child >= size:
                break
            if child + 1 < size and less(heap[child + 1], heap[child]):
                child += 1
            if not less(heap[child], node):
                break
            heap[i] = heap[child]
            pos[heap[i]] = i
            i = child
        heap[i] = node
        pos[node] = i

    for t in range(n):
        if internal[t]:
            g[t] = (risk[t] - branch[t]) / (leaves[t] - 1)
            pos[t] = len(heap)
            heap.append(t)
    for i in range(len(heap) // 2 - 1, -1, -1):
        sift_down(i)
    alphas, seq_leaves, seq_risk = [0.0], [], []
    a_k = 0.0
    while heap:
        t = heap[0]
        last = heap.pop()
        pos[t] = -1
        if heap:
            heap[0] = last
            pos[last] = 0
            sift_down(0)
        if not internal[t]:
            continue
        if g[t] > a_k + rtol * a_k + atol:
            seq_leaves.append(leaves[0])
            seq_risk.append(branch[0])
            a_k = g[t]
            alphas.append(a_k)
        stack = [t]
        while stack:
            u = stack.pop()
            if internal[u]:
                internal[u] = False
                alpha[u] = a_k
                stack.extend((left[u], right[u]))
        branch[t], leaves[t] = risk[t], 1
        u = parent[t]
        while u >= 0:
            branch[u] = branch[left[u]] + branch[right[u]]
            leaves[u] = leaves[left[u]] + leaves[right[u]]
            g[u] = (risk[u] - branch[u]) / (leaves[u] - 1)
            if pos[u] >= 0:
                sift_down(pos[u])
                sift_up(pos[u])
            u = parent[u]
    seq_leaves.append(leaves[0])
    seq_risk.append(branch[0])
    return (np.array(alpha), np.array(alphas), np.array(seq_leaves, dtype=np.int64),
            np.array(seq_risk))
