"""rpart's pruning rules (``compat="rpart"``), docs/maths.md §9, applied to a grown tree.

rpart does not run the weakest-link loop of docs/maths.md §4. It gives every node a
complexity while it grows the tree, in one bottom-up pass, and bounds the growth of a
child by what its parent can still reach. This module applies those rules as a post-pass
over cartjit's T_max, which holds every split rpart could grow (the split chosen at a
node depends on the node's cases only; a node rpart does not grow is a node the pass
does not enter). The result is the same per-node α that cartjit stores for the exact
sequence (:mod:`cartjit.engine.tree`): the tree of a row is a mask, and the cross-validation,
the predictions and ``prune`` read it as they read the exact one.

With α_c the growth bound (rpart's ``cp`` times R(root); 0 keeps the whole table):

1. **Visit order and bounds** (:func:`one_pass`). Nodes are visited depth first, the
   left child before the right one. A node stops as a leaf when min(R(t), b(t)) <= α_c,
   b(t) the bound handed down by its parent (b(root) = R(root)). The left child gets
   b = min(R(t), b(t)) - α_c; once the left branch is done, the right child gets
   b = min(b(t), max(ΔR_left / (s_left + 1), R(t) - R(t_L))) - α_c, where ΔR_left =
   R(t) - R(kept branch of t_L) and s_left its number of splits. A bound only stops
   work that cannot beat α_c, except where the pass's own one-level view makes it
   stop earlier; either way it is rpart's rule. A node that the pass enters also stops
   when its split's improvement (rpart's measure, :func:`rpart_improvements`) is at most
   ``IMPROVE_RTOL`` times the largest improvement met so far in the run, that node's
   included: rpart's guard against improvements that are rounding noise. The run is the
   full tree, then the fold trees in the order of their fold ids, as rpart grows them
   (:func:`cartjit.engine.cv` hands the largest value on).
2. **Complexity of a node**: g(t) = (R(t) - R(kept branches)) / (1 + their splits).
   The child of smaller complexity (the right one on equality) is collapsed first when
   g(t) exceeds it, then the other when the recomputed g(t) still exceeds it; the final
   g(t) is the node's complexity. A node with g(t) <= α_c does not split ("splits that
   do not lower the risk are removed" when α_c = 0), and what lies below it is dropped.
   A leaf, or a node that stops, has complexity α_c.
3. **Capping**: from the root down, a node's complexity is at most its parent's.
4. **The table** (:func:`cp_table_rows`): the distinct complexities of the splits, and
   α_c, from the largest down; the row of complexity a holds the subtree of the splits
   whose complexity exceeds a, its number of splits and its risk.

rpart merges only bit-identical complexities, so a value that two nodes reach in exact
arithmetic can come out as two rows a few ulps apart there; here values within the
tolerance of the weakest-link loop (:data:`cartjit.engine.pruning.ALPHA_RTOL`,
:data:`~cartjit.engine.pruning.ALPHA_ATOL`) are one row, and every node of it stores the
row's value (the largest of the group). The same tolerance decides "g(t) <= α_c", so a
split whose complexity is rounding noise above α_c is removed, as in exact arithmetic.

The cross-validation of this mode (:func:`evaluation_points`, :func:`fold_problem`) is
in :mod:`cartjit.engine.cv`; docs/rpart.md and docs/rpart-vs-exact.md describe the mode.
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .pruning import ALPHA_ATOL, ALPHA_RTOL, midpoints

__all__ = ["COMPAT", "check_compat", "one_pass", "rpart_pruning", "cp_table_rows",
           "evaluation_points", "ROOT_POINT_FACTOR", "fold_priors", "rpart_order",
           "rpart_default_sides", "rpart_improvements", "rpart_scale", "IMPROVE_RTOL",
           "primary_weights"]

#: The values of ``compat``: the exact weakest-link sequence, or rpart's rules.
COMPAT = ("breiman", "rpart")

#: rpart drops a split whose improvement is at most this times the largest improvement
#: it has met so far in the run (the full tree, then the fold trees).
IMPROVE_RTOL = 1e-10

#: rpart evaluates the root's row of its table at this multiple of the root's CP
#: ("close enough to infinity"), where the exact mode uses +∞.
ROOT_POINT_FACTOR = 10.0


def check_compat(value):
    """``compat`` checked: ``"breiman"`` or ``"rpart"``."""
    if not isinstance(value, str) or value not in COMPAT:
        raise ValueError(f"compat must be one of {list(COMPAT)}, got {value!r}")
    return value


@jit(inline="always")
def _above(v, u, rtol, atol):
    """v exceeds u by more than the tie tolerance."""
    return v - u > rtol * abs(v) + atol


@jit(inline="always")
def _push(stack, top, t, phase, child):
    """Resume t at ``phase`` after ``child``'s branch is done: push both, child on top."""
    stack[top] = t
    stack[top + 1] = phase
    stack[top + 2] = child
    stack[top + 3] = 0
    return top + 4


@jit
def one_pass(first, second, parent, risk, improve, iscale, alpha_c, rtol, atol):
    """Rules 1-3 of the module docstring on a grown tree (children after parents).

    ``improve`` is every split's improvement in rpart's measure and ``iscale`` the
    largest one met before this tree in the run (0 for the first tree). ``alpha_c`` is
    the growth bound α_c. Two complexities u < v count as equal when
    v - u <= rtol · v + atol (the weakest-link loop's tie rule): a value counts as
    "<= α_c" within that slack, and g(t) "exceeds" a child's complexity only beyond it,
    so that rounding never decides what exact arithmetic calls a tie. ``first`` and
    ``second`` are the children in rpart's order (:func:`rpart_order`; -1 at leaves).
    Returns ``(complexity,
    splits, iscale)``: the capped complexity of every node that splits in rpart's tree
    (0 elsewhere), the mask of those nodes (a subtree containing the root, or empty),
    and the largest improvement met once this tree is done.
    """
    n = first.shape[0]
    comp = np.zeros(n)           # complexity as the pass leaves it
    bound = np.zeros(n)          # b(t), set by the parent before t is visited
    kept_risk = risk.copy()      # R of the branch t keeps (itself when a leaf)
    kept_splits = np.zeros(n, dtype=np.int64)
    splits = np.zeros(n, dtype=np.bool_)
    limit = alpha_c + rtol * alpha_c + atol
    stack = np.empty(2 * n + 2, dtype=np.int64)  # (node, phase) pairs
    bound[0] = risk[0]
    stack[0] = 0
    stack[1] = 0
    top = 2
    while top > 0:
        top -= 2
        t = stack[top]
        phase = stack[top + 1]
        if phase == 0:  # entering t: stop, or hand the left child its bound
            reach = min(risk[t], bound[t])
            if first[t] < 0 or reach <= limit:
                comp[t] = alpha_c
                continue
            iscale = max(iscale, improve[t])
            if not improve[t] > IMPROVE_RTOL * iscale:  # rpart finds no split worth it
                comp[t] = alpha_c
                continue
            lt = first[t]
            bound[lt] = reach - alpha_c
            top = _push(stack, top, t, 1, lt)
        elif phase == 1:  # left branch done: the right child's bound
            lt = first[t]
            g = (risk[t] - kept_risk[lt]) / (kept_splits[lt] + 1)
            g = max(g, risk[t] - risk[lt])
            g = min(g, bound[t])
            rt = second[t]
            bound[rt] = g - alpha_c
            top = _push(stack, top, t, 2, rt)
        else:  # both branches done: t's complexity
            # a: the child that collapses first (the smaller complexity; the second
            # child on a tie), b: the other
            a, b = first[t], second[t]
            if not _above(comp[b], comp[a], rtol, atol):
                a, b = b, a
            ra, sa = kept_risk[a], kept_splits[a]
            rb, sb = kept_risk[b], kept_splits[b]
            g = (risk[t] - (ra + rb)) / (sa + sb + 1)
            if _above(g, comp[a], rtol, atol):
                ra, sa = risk[a], 0
                g = (risk[t] - (ra + rb)) / (sa + sb + 1)
                if _above(g, comp[b], rtol, atol):
                    rb, sb = risk[b], 0
                    g = (risk[t] - (ra + rb)) / (sa + sb + 1)
            comp[t] = g
            if g > limit:
                splits[t] = True
                kept_risk[t] = ra + rb
                kept_splits[t] = sa + sb + 1
    # rpart's tree: the splits reachable from the root through splits (a node that
    # does not split drops its branch), capped from the root down (rule 3). Children
    # have larger ids, so a forward pass sees every parent first.
    out = np.zeros(n)
    keep = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        if splits[t] and (t == 0 or keep[parent[t]]):
            keep[t] = True
            out[t] = comp[t] if t == 0 else min(comp[t], out[parent[t]])
    return out, keep, iscale


@jit
def _row_sums(lo, hi, risk, n_rows):
    """Σ risk[t] over the nodes t with lo[t] <= r < hi[t], for every row r: the risk of
    each row's tree as a sum of its leaves' risks."""
    out = np.zeros(n_rows)
    for t in range(lo.shape[0]):
        for r in range(lo[t], hi[t]):
            out[r] += risk[t]
    return out


@jit
def _group_values(comp, order, rtol, atol):
    """Walk ``comp`` in ``order`` (decreasing): a value more than the tolerance below
    the current group's first (largest) value starts a new group; returns every value's
    group value."""
    rep = np.empty_like(comp)
    current = np.inf
    for k in range(order.shape[0]):
        i = order[k]
        v = comp[i]
        if k == 0 or current - v > rtol * v + atol:
            current = v
        rep[i] = current
    return rep


def _row_values(comp, alpha_c, root_risk):
    """The rows' complexities, increasing: α_c and the distinct values of ``comp``,
    a value within the weakest-link tolerance below a larger one merged into it.
    Returns ``(values, rep)``: ``rep[i]`` is the row value of ``comp[i]``."""
    order = np.argsort(-comp, kind="stable")
    rep = _group_values(comp, order, ALPHA_RTOL, ALPHA_ATOL * abs(root_risk))
    values = np.unique(np.r_[rep, float(alpha_c)])
    return values, rep


def rpart_order(tree, factor=None):
    """The children of every node in the order rpart grows them: ``(first, second)``.

    rpart sends to its first child the side whose mean is smaller: the mean response
    for regression, and for classification the mean class index Σ_j j p(j | child)
    under the split-search priors (``factor``: the per-class c_j = π'(j)/N_j of
    :func:`cartjit.engine.fit.split_factor`). On equal means an ordered split sends the
    side of the larger values first. The first child's branch is grown before the
    second's bound is set, and on equal complexities the second collapses first.
    """
    left = tree.left.astype(np.int64)
    right = tree.right.astype(np.int64)
    inner = np.flatnonzero(left >= 0)
    if factor is None:
        mean = tree.value[:, 0]
    else:
        p = tree.value * factor
        total = p.sum(axis=1)
        mean = np.divide(p @ np.arange(p.shape[1], dtype=np.float64), total,
                         out=np.zeros(p.shape[0]), where=total > 0)
    lo, hi = mean[left[inner]], mean[right[inner]]
    low_first = lo < hi - 1e-12 * np.maximum(np.abs(lo), np.abs(hi))
    first = left.copy()
    second = right.copy()
    first[inner] = np.where(low_first, left[inner], right[inner])
    second[inner] = np.where(low_first, right[inner], left[inner])
    return first, second


def rpart_improvements(tree, factor=None):
    """Every split's improvement as rpart measures it (0 at leaves), up to a constant
    factor common to the trees of one fit: for regression the share of the node's sum
    of squares that the split removes, G(t) / Var(t); for classification the split's
    impurity decrease times the node's weight under the split-search priors,
    G(t) Σ_j c_j N_j(t) (``factor``: the c_j of :func:`cartjit.engine.fit.split_factor`;
    give the full sample's to a fold tree, so that its units are the full tree's).
    G(t) is ``tree.improvement``, the decrease on the cases that have the split
    variable scaled by their share of the node (docs/maths.md §8)."""
    imp = np.asarray(tree.improvement, dtype=np.float64)
    if factor is None:
        var = np.asarray(tree.impurity, dtype=np.float64)
        out = np.divide(imp, var, out=np.zeros_like(imp), where=var > 0)
    else:
        out = imp * (np.asarray(tree.value, dtype=np.float64) @ factor)
    return np.ascontiguousarray(np.where(tree.left >= 0, out, 0.0))


def rpart_pruning(tree, alpha_c, factor=None, *, iscale=0.0, improve=None):
    """``tree`` (T_max) with ``alpha`` set to rpart's per-node complexities for the growth
    bound ``alpha_c`` (absolute, in the units of ``tree.risk``), and rpart's table as a
    path ``(values, n_leaves, risk)`` in increasing order of complexity, the layout of
    :func:`cartjit.engine.pruning.with_alpha`'s sequence (``values[0]`` is α_c, the last value
    the root's complexity).

    A node that splits in rpart's tree stores its capped complexity (merged with the
    values tied with it), every other node 0: T(α) for α >= α_c keeps the splits whose
    stored value exceeds α, as for the exact sequence. ``factor``: the split-search
    class factors of a classification tree (for :func:`rpart_order`), None for
    regression. ``iscale``: the largest improvement met before this tree in rpart's
    run, and ``improve`` the tree's improvements in its units
    (:func:`rpart_improvements`; None: computed with ``factor``). The largest
    improvement met once the tree is done is :func:`rpart_scale`'s.
    """
    return _rpart_pruning(tree, alpha_c, factor, iscale, improve)


def rpart_scale(tree, alpha_c, factor=None, *, iscale=0.0, improve=None):
    """The largest improvement rpart's run has met once it has grown ``tree`` (the
    arguments of :func:`rpart_pruning`), and the mask of the splits that its rules
    keep: ``(iscale, keep)``. Cheap: the table is not built."""
    risk = np.ascontiguousarray(tree.risk, dtype=np.float64)
    first, second = rpart_order(tree, factor)
    if improve is None:
        improve = rpart_improvements(tree, factor)
    _, keep, out = one_pass(first, second, tree.parent.astype(np.int64), risk,
                            np.ascontiguousarray(improve, dtype=np.float64), float(iscale),
                            float(alpha_c), ALPHA_RTOL, ALPHA_ATOL * abs(float(risk[0])))
    return out, keep


def _rpart_pruning(tree, alpha_c, factor, iscale, improve):
    risk = np.ascontiguousarray(tree.risk, dtype=np.float64)
    root = abs(float(risk[0]))
    alpha_c = float(alpha_c)
    first, second = rpart_order(tree, factor)
    if improve is None:
        improve = rpart_improvements(tree, factor)
    comp, keep, _ = one_pass(first, second, tree.parent.astype(np.int64), risk,
                             np.ascontiguousarray(improve, dtype=np.float64), float(iscale),
                             alpha_c, ALPHA_RTOL, ALPHA_ATOL * root)
    inner = np.flatnonzero(keep)
    alpha = np.zeros(tree.n_nodes)
    if inner.shape[0] == 0:  # the root alone: one row, at α_c
        return tree._replace(alpha=alpha), (np.array([alpha_c]), np.ones(1, np.int64),
                                            np.array([risk[0]]))
    values, rep = _row_values(comp[inner], alpha_c, root)
    alpha[inner] = rep
    return tree._replace(alpha=alpha), cp_table_rows(tree, alpha, keep, values)


def cp_table_rows(tree, alpha, keep, values):
    """Rule 4: for every row value a (increasing), the number of leaves and the risk of
    the subtree of the splits ``keep`` whose ``alpha`` exceeds a. Returns
    ``(values, n_leaves, risk)``."""
    K = values.shape[0]
    split_alpha = np.sort(alpha[keep])
    n_splits = split_alpha.shape[0] - np.searchsorted(split_alpha, values, side="right")
    # node t is a leaf of the row's tree for lo[t] <= a < hi[t]
    in_tree = np.flatnonzero(np.r_[True, keep[tree.parent[1:]]])
    parent_alpha = np.where(in_tree == 0, np.inf, alpha[tree.parent[in_tree]])
    own = np.where(keep[in_tree], alpha[in_tree], -np.inf)
    lo = np.searchsorted(values, own, side="left").astype(np.int64)
    hi = np.searchsorted(values, parent_alpha, side="left").astype(np.int64)
    risk = _row_sums(lo, hi, np.ascontiguousarray(tree.risk[in_tree], dtype=np.float64), K)
    return values, (n_splits + 1).astype(np.int64), risk


def evaluation_points(values):
    """Where the cross-validation scores each row (``values`` increasing): the geometric
    midpoint sqrt(a_r a_(r+1)) of a row and the next larger one, and for the root's row
    (the last) ``ROOT_POINT_FACTOR`` times its value, rpart's stand-in for +∞ (+∞ when
    that value is 0)."""
    points = midpoints(np.asarray(values, dtype=np.float64))
    if values[-1] > 0:
        points[-1] = ROOT_POINT_FACTOR * values[-1]
    return points


def fold_priors(priors, class_totals, fold_totals):
    """rpart's priors in a fold, and the factor between the fold's risk units and the
    full sample's.

    rpart grows a fold tree with the case weights of the full sample: a class-j case
    counts π(j)/N_j (N_j the full sample's weighted class total), so the fold tree sees
    the priors π_v(j) ∝ π(j) N_j^(v)/N_j, and its risks are those of a tree fitted with
    π_v times Z = Σ_j π(j) N_j^(v)/N_j. rpart scales its evaluation points by the
    fold's share of the weight, W_v/W; in the fold's own units they are therefore
    scaled by (W_v/W)/Z. Returns ``(π_v, (W_v/W)/Z)``.
    """
    share = np.divide(priors * fold_totals, class_totals, out=np.zeros_like(priors),
                      where=class_totals > 0)
    z = float(share.sum())
    return share / z, float(fold_totals.sum() / class_totals.sum()) / z


def primary_weights(tree, X, w):
    """For every split node, the case weight of the learning cases (rows of ``X``, each
    of weight ``w``) that reach it and that the split itself sends left and right:
    ``(left, right)``, 0 at leaves. A case goes down as it did while the tree was grown
    (the split, its surrogates, the majority); at a node it counts for the side its own
    value of the split variable gives, and for neither when that value is missing or a
    level the node's split does not list."""
    from .tree import apply as apply_tree

    X = np.ascontiguousarray(X, dtype=np.float64)
    end = apply_tree(tree, X, 2).astype(np.int64)
    n_nodes = tree.left.shape[0]
    left = np.zeros(n_nodes)
    right = np.zeros(n_nodes)
    rows = np.arange(X.shape[0])
    node = tree.parent[end].astype(np.int64)
    while rows.shape[0]:
        on = node >= 0
        rows, node = rows[on], node[on]
        x = X[rows, tree.feature[node]]
        row = tree.level_row[node]
        to_left = np.zeros(rows.shape[0], dtype=bool)
        to_right = np.zeros(rows.shape[0], dtype=bool)
        ordered = (row < 0) & ~np.isnan(x)
        to_left[ordered] = x[ordered] <= tree.threshold[node][ordered]
        to_right[ordered] = ~to_left[ordered]
        subset = np.flatnonzero((row >= 0) & ~np.isnan(x))
        if subset.shape[0]:
            code = x[subset].astype(np.int64)
            word, bit = code // 64, (code % 64).astype(np.uint64)
            sets = tree.level_sets[row[subset]]
            for side, out in ((0, to_left), (1, to_right)):
                words = sets[:, side, :]
                has = word < words.shape[1]
                got = np.zeros(subset.shape[0], dtype=bool)
                got[has] = ((words[has, word[has]] >> bit[has]) & np.uint64(1)) == 1
                out[subset] = got
        np.add.at(left, node[to_left], w[rows[to_left]])
        np.add.at(right, node[to_right], w[rows[to_right]])
        node = tree.parent[node].astype(np.int64)
    return left, right


def rpart_default_sides(tree, factor, max_surrogate, sent=None):
    """``majority_left`` as rpart's cross-validation uses it: where a held-out case goes
    that neither the split nor a surrogate can send (its value missing, or a level the
    node's learning cases did not have).

    rpart sends it to its first child (:func:`rpart_order`) when the learning cases that
    the split itself sent there weigh more than those it sent to the second, and to the
    second child otherwise, ties included; without surrogates (``max_surrogate`` 0) that
    default is never set and every such case goes to the second child. ``sent``: those
    weights, ``(left, right)`` per node (:func:`primary_weights`); None takes the
    children's weights, which are the same where every case of the node has the split
    variable (elsewhere they also hold the cases the surrogates sent).
    """
    first, second = rpart_order(tree, factor)
    inner = np.flatnonzero(tree.left >= 0)
    if sent is None:
        w = tree.weighted_n_node_samples
        w_first, w_second = w[first[inner]], w[second[inner]]
    else:
        left_first = first[inner] == tree.left[inner]
        w_first = np.where(left_first, sent[0][inner], sent[1][inner])
        w_second = np.where(left_first, sent[1][inner], sent[0][inner])
    if max_surrogate > 0:
        to_first = w_first > w_second
    else:
        to_first = np.zeros(inner.shape[0], dtype=bool)
    child = np.where(to_first, first[inner], second[inner])
    side = tree.majority_left.copy()
    side[inner] = (child == tree.left[inner]).astype(side.dtype)
    return tree._replace(majority_left=side)
