"""Prediction, pruning and cross-validation when cases miss a split feature
(docs/maths.md §8).

Small trees are built by hand with their surrogate tables filled, and every expected
end node or loss below was worked out on paper from the rules:

* at an internal node, a case that has the split feature (not NaN; for a subset split,
  a level in one of the two sets) follows the split;
* otherwise, with ``use_surrogate`` >= 1, the first surrogate that can route it
  decides (an ordered surrogate sends ``x <= threshold`` left when ``low_left`` is 1,
  right when 0; a categorical one looks the level up in its two sets);
* otherwise, with ``use_surrogate`` == 2, ``majority_left`` (1 left, 0 right, -1 stop);
* otherwise the case stops at the internal node, which predicts it.

The trees grown by the engine on data with holes are checked against a plain
per-row walk of the same rules and, for cross-validation, against pruning each fold
tree and dropping the held-out rows down it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cartjit.engine.impurity import GINI, SQUARED_ERROR
from cartjit.engine.cv import cross_validate
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.predict import FoldTree, HeldOut, LossTable, heldout_losses, routing_of
from cartjit.engine.tree import (COMPETITOR_FIELDS, LEAF, SURROGATE_FIELDS, Tree, apply, subtree,
                           validate, without_surrogates)

nan = np.nan


def _sets(*rows, n_words=1):
    """level_sets from (left codes, right codes) pairs."""
    out = np.zeros((len(rows), 2, n_words), dtype=np.uint64)
    for r, sides in enumerate(rows):
        for side, codes in enumerate(sides):
            for c in codes:
                out[r, side, c // 64] |= np.uint64(1) << np.uint64(c % 64)
    return out


def _tree(*, counts=(10, 6, 4, 2, 2), node2_subset=True, stayed=0):
    """Five nodes: 0 splits x0 <= 5 into leaf 1 and node 2; node 2 splits into leaves
    3 and 4, by the levels of x2 ({0} left, {1, 3} right) or, with ``node2_subset``
    False, by x1 <= 0.5.

    Surrogates of node 0: x1 <= 2 goes right (low_left 0), then the levels of x2
    ({0, 2} left, {1} right; level 3 in neither). Surrogate of node 2: x0 <= 7.5 goes
    left. Competitors of node 0: x1 <= 2.5, then x2 by levels {0, 1} vs {2, 3}.
    ``counts`` are the n_node_samples of nodes 0..4; ``stayed`` cases of node 0 miss x0
    and stayed there (not in its children). Classes: two, unit weights.
    """
    n0, n1, n2, n3, n4 = counts
    n0 += stayed
    # class counts with the right sums; the cases that stayed are of class 0
    v3, v4 = [0, n3], [n4 - n4 // 2, n4 // 2]
    v1 = [n1 - 1, 1]
    v2 = [v3[0] + v4[0], v3[1] + v4[1]]
    v0 = [v1[0] + v2[0] + stayed, v1[1] + v2[1]]
    value = np.array([v0, v1, v2, v3, v4], dtype=np.float64)
    label = np.argmax(value, axis=1).astype(np.int32)  # ties: the lower class
    risk = (value.sum(axis=1) - value.max(axis=1)) / n0
    ns = np.array([n0, n1, n2, n3, n4], dtype=np.int64)

    def majority(a, b):
        return 1 if a > b else 0 if a < b else -1

    i32 = lambda v: np.asarray(v, dtype=np.int32)  # noqa: E731
    f64 = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    fields = dict(
        feature=i32([0, -1, 2 if node2_subset else 1, -1, -1]),
        threshold=f64([5.0, nan, nan if node2_subset else 0.5, nan, nan]),
        left=i32([1, -1, 3, -1, -1]), right=i32([2, -1, 4, -1, -1]),
        parent=i32([-1, 0, 0, 2, 2]), depth=i32([0, 1, 1, 2, 2]),
        n_node_samples=ns, weighted_n_node_samples=ns.astype(np.float64), value=value,
        impurity=f64([0.48, 0.28, 0.38, 0.0, 0.5]), risk=risk, label=label,
        alpha=f64([0.3, 0.0, 0.1, 0.0, 0.0]), improvement=f64([0.2, 0, 0.1, 0, 0]),
        majority_left=i32([majority(n1, n2), 0, majority(n3, n4), 0, 0]),
        level_row=i32([-1, -1, 0 if node2_subset else -1, -1, -1]),
        level_sets=_sets(((0,), (1, 3)), ((0, 2), (1,)), ((0, 1), (2, 3))),
        n_primary=np.array([n0 - stayed, 0, n2, 0, 0], dtype=np.int64),
        **without_surrogates(5))
    fields.update(
        surrogate_start=i32([0, 0, 2, 0, 0]), n_surrogates=i32([2, 0, 1, 0, 0]),
        surrogate_feature=i32([1, 2, 0]), surrogate_threshold=f64([2.0, nan, 7.5]),
        surrogate_level_row=i32([-1, 1, -1]), surrogate_low_left=i32([0, 0, 1]),
        surrogate_agree=f64([0.9, 0.8, 0.75]), surrogate_adj=f64([0.75, 0.5, 0.5]),
        surrogate_count=np.array([stayed, 0, 0], dtype=np.int64),
        competitor_start=i32([0, 0, 0, 0, 0]), n_competitors=i32([2, 0, 0, 0, 0]),
        competitor_feature=i32([1, 2]), competitor_threshold=f64([2.5, nan]),
        competitor_level_row=i32([-1, 2]), competitor_improvement=f64([0.15, 0.1]),
        competitor_count=np.array([n0 - 1, n0 - 2], dtype=np.int64))
    if stayed:  # the surrogates routed none of them: they stayed
        fields["surrogate_count"] = np.zeros(3, dtype=np.int64)
    return Tree(**fields)


# (x0, x1, x2) -> end node under use_surrogate 2, 1, 0, for _tree() (node 2 splits x2 by
# levels; majority_left: node 0 -> 1 (6 > 4 cases), node 2 -> -1 (2 = 2)).
CASES_SUBSET = [
    ((3.0, nan, nan), 1, 1, 1),     # x0 <= 5
    ((5.0, 9.0, 1.0), 1, 1, 1),     # x0 == threshold goes left
    ((6.0, nan, 0.0), 3, 3, 3),     # level 0 goes left at node 2
    ((6.0, 0.0, 1.0), 4, 4, 4),     # level 1 right
    ((6.0, 0.0, 3.0), 4, 4, 4),     # level 3 right
    ((nan, 1.0, 3.0), 4, 4, 0),     # x1 = 1 <= 2 goes right; then level 3 right
    ((nan, 2.0, 0.0), 3, 3, 0),     # x1 == 2 is "low": right; level 0 left
    ((nan, 3.0, 1.0), 1, 1, 0),     # x1 = 3 > 2 goes left
    ((nan, nan, 2.0), 1, 1, 0),     # second surrogate: level 2 left
    ((nan, nan, 1.0), 4, 4, 0),     # second surrogate: level 1 right, then right
    ((nan, nan, 3.0), 1, 0, 0),     # level 3 in neither set: majority left
    ((nan, nan, -1.0), 1, 0, 0),    # never-seen level: majority left
    ((nan, nan, nan), 1, 0, 0),     # nothing: majority left
    ((6.0, 0.0, 2.0), 3, 3, 2),     # level 2 absent at node 2: x0 = 6 <= 7.5 left
    ((8.0, 0.0, 2.0), 4, 4, 2),     # ... x0 = 8 > 7.5 right
    ((7.5, 0.0, nan), 3, 3, 2),     # x2 missing, x0 == 7.5 goes left
    ((6.0, 0.0, -1.0), 3, 3, 2),    # unseen level -1 at node 2: surrogate
    ((6.0, 0.0, 70.0), 3, 3, 2),    # a code beyond every set: surrogate
    ((nan, 1.0, nan), 2, 2, 0),     # to node 2 by x1; x2, x0 missing: tie, stop at 2
    ((nan, 1.0, 2.0), 2, 2, 0),     # level 2 absent at node 2, x0 missing: stop at 2
]


def _rows(cases):
    return np.ascontiguousarray([c[0] for c in cases], dtype=np.float64)


@pytest.mark.parametrize("use_surrogate", [2, 1, 0])
def test_hand_worked_routing_with_a_subset_split(use_surrogate):
    tree = _tree()
    validate(tree)
    col = {2: 1, 1: 2, 0: 3}[use_surrogate]
    want = np.array([c[col] for c in CASES_SUBSET])
    np.testing.assert_array_equal(apply(tree, _rows(CASES_SUBSET), use_surrogate), want)


def test_majority_right_and_stop():
    # node 0: 4 < 6 cases on the left, so the majority goes right; node 2: 3 = 3, stop
    tree = _tree(counts=(10, 4, 6, 3, 3))
    validate(tree)
    assert tree.majority_left[0] == 0 and tree.majority_left[2] == -1
    X = _rows([((nan, nan, 3.0),), ((nan, nan, nan),), ((nan, nan, -1.0),),
               ((nan, nan, 0.0),)])
    # level 3 in neither set of node 0's surrogate: right to node 2, then level 3 right;
    # nothing at all: right to node 2, where x2 and x0 are missing and the children tie;
    # level -1: right, then -1 is missing at node 2 too, and x0 is missing: stop at 2;
    # level 0: the surrogate sends it left
    np.testing.assert_array_equal(apply(tree, X, 2), [4, 2, 2, 1])
    np.testing.assert_array_equal(apply(tree, X, 1), [0, 0, 0, 1])


# The same for _tree(node2_subset=False): node 2 splits x1 <= 0.5 (no subset split as a
# primary, so complete rows take the branch-free step).
CASES_ORDERED = [
    ((3.0, nan, nan), 1, 1, 1),
    ((6.0, 0.0, 5.0), 3, 3, 3),     # x1 = 0 <= 0.5
    ((6.0, 0.5, 0.0), 3, 3, 3),     # x1 == 0.5 goes left
    ((6.0, 1.0, 0.0), 4, 4, 4),
    ((nan, 1.0, 0.0), 4, 4, 0),     # x1 <= 2 goes right at node 0; 1 > 0.5 at node 2
    ((nan, 3.0, 1.0), 1, 1, 0),
    ((nan, nan, 1.0), 2, 2, 0),     # right by the level; node 2: x1, x0 missing, tie
    ((nan, nan, 2.0), 1, 1, 0),
    ((nan, nan, 3.0), 1, 0, 0),
    ((7.0, nan, 0.0), 3, 3, 2),     # x1 missing at node 2: x0 = 7 <= 7.5 left
    ((8.0, nan, 0.0), 4, 4, 2),
]


def _expected_ordered(X, use_surrogate):
    """End nodes for _tree(node2_subset=False): complete rows by the thresholds, the
    hand-worked cases from CASES_ORDERED."""
    col = {2: 1, 1: 2, 0: 3}[use_surrogate]
    known = {tuple(np.nan_to_num(c[0], nan=-99.0)): c[col] for c in CASES_ORDERED}
    out = []
    for x in X:
        key = tuple(np.nan_to_num(x, nan=-99.0))
        if key in known:
            out.append(known[key])
        elif x[0] <= 5.0:
            out.append(1)
        else:
            out.append(3 if x[1] <= 0.5 else 4)
    return np.array(out)


@pytest.mark.parametrize("use_surrogate", [2, 1, 0])
def test_groups_of_complete_rows_and_rows_with_holes_in_one_call(use_surrogate):
    """More rows than the descent's 32 slots: complete rows first (the plain step),
    then complete rows and rows with NaN (routed rows beside complete ones) in flight
    together; NaN in a feature the row never needs changes nothing."""
    tree = _tree(node2_subset=False)
    validate(tree)
    rng = np.random.default_rng(0)
    complete = np.column_stack([rng.uniform(0, 10, 100), rng.uniform(-1, 2, 100),
                                rng.integers(0, 4, 100)]).astype(np.float64)
    complete[:5, 0] = 5.0  # on the threshold
    complete[5:10, 1] = 0.5
    holes = _rows(CASES_ORDERED)
    complete[60:70, 2] = nan  # x2 is read only when x0 is missing: these follow x0, x1
    X = np.ascontiguousarray(np.concatenate([complete[:40], holes, complete[40:],
                                             holes[::-1]]))
    want = _expected_ordered(X, use_surrogate)
    got = apply(tree, X, use_surrogate)
    np.testing.assert_array_equal(got, want)
    # the same rows one at a time (every group holds a single row)
    one = np.concatenate([apply(tree, X[i:i + 1], use_surrogate) for i in range(X.shape[0])])
    np.testing.assert_array_equal(one, want)


def test_infinity_is_an_error_and_nan_is_not():
    tree = _tree()
    X = _rows(CASES_SUBSET)
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="X contains infinity"):
        apply(tree, X)
    X[3, 1] = nan
    assert apply(tree, X).shape == (X.shape[0],)


@pytest.mark.parametrize("n_rows", [1, 7, 8, 9, 300, 9000])
def test_the_descent_counts_every_infinite_entry(n_rows):
    """The descent's count of infinite entries (its error) equals a direct count,
    whatever the rows' NaN, where the infinities sit, the number of rows against the
    slots and chunks, and the memory order of X (which the kernel makes C-contiguous);
    the nodes reached by the rows without infinity are those of a one-row walk."""
    from cartjit.engine.predict import apply as nodes_of

    tree = _tree()
    rng = np.random.default_rng(n_rows)
    X = _rows(CASES_SUBSET)
    X = X[rng.integers(0, X.shape[0], n_rows)]
    X[rng.random(X.shape) < 0.1] = nan
    X[rng.random(X.shape) < 0.05] = np.inf
    X[rng.random(X.shape) < 0.05] = -np.inf
    X[rng.random(X.shape) < 0.05] = np.finfo(np.float64).max  # finite: not counted
    routing = routing_of(tree, 2)
    for arr in (X, np.asfortranarray(X)):
        nodes, n_inf = nodes_of(tree.feature, tree.threshold, tree.left, arr, routing)
        assert n_inf == int(np.isinf(X).sum())
        clean = ~np.isinf(X).any(axis=1)
        want = [_walk(tree, x, 2) for x in X[clean]]
        np.testing.assert_array_equal(nodes[clean], want)


@pytest.mark.parametrize("bad", [3, -1, 1.0, "2", None, True])
def test_use_surrogate_must_be_0_1_or_2(bad):
    with pytest.raises((TypeError, ValueError), match="use_surrogate must be 0, 1 or 2"):
        apply(_tree(), _rows(CASES_SUBSET), bad)


def test_subtree_keeps_the_tables_and_clears_pruned_nodes():
    tree = _tree()
    pruned = subtree(tree, np.array([True, False, False, False, False]))
    validate(pruned)
    assert pruned.n_nodes == 3
    for name in ("n_surrogates", "surrogate_start", "n_primary", "n_competitors",
                 "competitor_start", "majority_left"):
        assert getattr(pruned, name)[2] == 0, name
    assert pruned.level_row[2] == -1
    for name in ("level_sets", *SURROGATE_FIELDS, *COMPETITOR_FIELDS):
        np.testing.assert_array_equal(getattr(pruned, name), getattr(tree, name))
    # node 2 is a leaf now: what stopped there or went below ends there
    want = np.array([c[1] for c in CASES_SUBSET])
    want[want > 2] = 2
    np.testing.assert_array_equal(apply(pruned, _rows(CASES_SUBSET)), want)


# ----------------------------------------------------------------- held-out losses

def _heldout(tree, X, y, w, alphas, use_surrogate, class_scale=(1.0, 1.0)):
    out_sum = np.zeros(len(alphas))
    out_sq = np.zeros(len(alphas))
    heldout_losses(
        FoldTree(tree.feature, tree.threshold, tree.left, tree.alpha, tree.label, tree.value,
                 routing_of(tree, use_surrogate)),
        HeldOut(X, np.arange(X.shape[0], dtype=np.int64), np.asarray(y, np.int32),
                np.empty(0), np.asarray(w, np.float64), False),
        LossTable(np.asarray(class_scale), 1.0 - np.eye(2), np.asarray(alphas, np.float64),
                  out_sum, out_sq))
    return out_sum, out_sq


def test_heldout_losses_of_stopping_cases_by_hand():
    """_tree(): labels 0, 0, 1, 1, 0 (nodes 0..4); alpha 0.3 at node 0, 0.1 at node 2.
    At α = 0.05 the whole tree, at 0.2 node 2 is a leaf, at 0.5 the root alone."""
    tree = _tree()
    np.testing.assert_array_equal(tree.label, [0, 0, 1, 1, 0])
    alphas = [0.05, 0.2, 0.5]
    X = _rows([((nan, 1.0, nan),), ((6.0, nan, 0.0),), ((nan, 3.0, 1.0),),
               ((nan, 1.0, 3.0),)])
    y = [0, 0, 1, 1]
    w = [1.0, 2.0, 4.0, 8.0]
    scale = (1.0, 3.0)
    # use_surrogate 2:
    #  row 0 (class 0) stops at node 2 (label 1) for α 0.05 and 0.2; the root: right.
    #  row 1 (class 0) ends at 3 (label 1), then node 2 (label 1), then the root.
    #  row 2 (class 1) at node 1 (label 0) for α 0.05, 0.2; the root (label 0) too.
    #  row 3 (class 1): node 4 (label 0), node 2 (label 1), root (label 0).
    loss2 = np.array([[1, 1, 0], [1, 1, 0], [3, 3, 3], [3, 0, 3]], dtype=float)
    # use_surrogate 0: rows 0, 2, 3 stop at the root (label 0); row 1 as before.
    loss0 = np.array([[0, 0, 0], [1, 1, 0], [3, 3, 3], [3, 3, 3]], dtype=float)
    for u, loss in ((2, loss2), (0, loss0)):
        s, sq = _heldout(tree, X, y, w, alphas, u, scale)
        np.testing.assert_allclose(s, np.asarray(w) @ loss)
        np.testing.assert_allclose(sq, np.asarray(w) @ loss ** 2)


def _direct_losses(tree, X, y, w, alphas, use_surrogate, regression=False):
    """Σ w·loss at each α: prune to T(α), drop the rows down it, compare labels."""
    out = []
    for a in alphas:
        pruned = subtree(tree, tree.alpha > a)
        end = apply(pruned, X, use_surrogate)
        if regression:
            loss = (y - pruned.value[end, 0]) ** 2
        else:
            loss = (pruned.label[end] != y).astype(float)
        out.append(np.sum(w * loss))
    return np.array(out)


def _with_holes(X, frac, seed):
    rng = np.random.default_rng(seed)
    X = np.array(X, dtype=np.float64)
    X[rng.random(X.shape) < frac] = nan
    return np.ascontiguousarray(X)


def _iris():
    from cartjit.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.unique(np.asarray(y), return_inverse=True)[1]


def _settings(criterion, n_classes, max_surrogate, use_surrogate, surrogate_style=0,
              max_competitor=4):
    cost = None if criterion == SQUARED_ERROR else 1.0 - np.eye(n_classes)
    return Settings(criterion, -1, 2, 1, 0.0, None,
                    None if criterion == SQUARED_ERROR else "empirical", cost, True, 12,
                    max_surrogate, use_surrogate, surrogate_style, max_competitor)


def _walk(tree, x, u):
    """A plain reference of the routing rules, one row at a time."""
    def side(v, thr, row, low_left):
        if row < 0:
            if np.isnan(v):
                return -1
            return (0 if v <= thr else 1) if low_left else (1 if v <= thr else 0)
        if np.isnan(v) or v < 0 or v >= 64 * tree.level_sets.shape[2]:
            return -1
        c = int(v)
        for s in (0, 1):
            if (int(tree.level_sets[row, s, c // 64]) >> (c % 64)) & 1:
                return s
        return -1

    t = 0
    while tree.left[t] != LEAF:
        d = side(x[tree.feature[t]], tree.threshold[t], tree.level_row[t], 1)
        start = tree.surrogate_start[t]
        for s in range(start, start + tree.n_surrogates[t] if u >= 1 else start):
            if d >= 0:
                break
            d = side(x[tree.surrogate_feature[s]], tree.surrogate_threshold[s],
                     tree.surrogate_level_row[s], tree.surrogate_low_left[s])
        if d < 0 and u == 2:
            d = {1: 0, 0: 1, -1: -1}[int(tree.majority_left[t])]
        if d < 0:
            return t
        t = tree.left[t] + d
    return t


@pytest.mark.parametrize("max_surrogate, use_surrogate", [(5, 2), (5, 1), (5, 0), (0, 2)])
def test_grown_trees_with_holes_route_as_the_rules_say(max_surrogate, use_surrogate):
    X, y = _iris()
    X = _with_holes(X, 0.1, 0)
    problem = Problem(X, y.astype(np.int32), np.empty(0), np.empty(0), True, 3)
    tree = fit_tree(problem, _settings(GINI, 3, max_surrogate, use_surrogate), None).tree
    validate(tree)
    if max_surrogate:
        assert tree.has_surrogates
    Xq = _with_holes(_iris()[0], 0.25, 1)
    for u in (0, 1, 2):
        want = [_walk(tree, x, u) for x in Xq]
        np.testing.assert_array_equal(apply(tree, Xq, u), want)
    # every pruned subtree stays valid
    for a in np.unique(tree.alpha):
        validate(subtree(tree, tree.alpha > a))


def test_many_rows_in_many_chunks_route_as_one_row_at_a_time():
    """Rows far beyond one chunk of the descent (CHUNK_ROWS) and its SLOTS: complete
    rows, rows with holes and rows of levels never seen, in a tree with subset splits
    and surrogates, end where a walk of one row at a time ends (every use_surrogate),
    whatever the order of the rows."""
    from cartjit import CARTClassifier
    from cartjit.engine.predict import CHUNK_ROWS

    from references.naive_missing import flat_apply_missing

    rng = np.random.default_rng(3)
    n = 3000
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n),
                         rng.integers(0, 9, n)]).astype(np.float64)
    y = ((X[:, 0] + np.isin(X[:, 2], [1, 4, 6]) + 0.5 * rng.normal(size=n)) > 0.7)
    X = _with_holes(X, 0.1, 4)
    model = CARTClassifier(categorical_features=[2], max_surrogate=3).fit(X, y)
    tree = model.tree_
    assert tree.has_surrogates and (tree.level_row >= 0).any()
    m = 2 * CHUNK_ROWS + 77
    Xq = np.column_stack([rng.normal(size=m), rng.normal(size=m),
                          rng.integers(0, 11, m)]).astype(np.float64)  # codes 9, 10 unseen
    Xq = _with_holes(Xq, 0.15, 5)
    Xq[: CHUNK_ROWS // 2] = np.where(np.isnan(Xq[: CHUNK_ROWS // 2]), 0.0,
                                     Xq[: CHUNK_ROWS // 2])  # a run of complete rows
    for u in (0, 1, 2):
        want = flat_apply_missing(tree, Xq, u)
        np.testing.assert_array_equal(apply(tree, Xq, u), want)
        order = rng.permutation(m)
        np.testing.assert_array_equal(apply(tree, np.ascontiguousarray(Xq[order]), u),
                                      want[order])


@pytest.mark.parametrize("hole_share", [0.0005, 0.02, 0.3])
def test_blind_walk_leaves_every_row_with_a_hole_to_the_careful_walk(hole_share):
    """A tree of ordered splits with surrogates: rows whose values are all finite take
    the blind walk, the others the careful one. Rows with holes alone, in runs, at the
    ends of chunks and among complete rows, and a hole in a feature the tree never
    reads, end where a walk of one row at a time ends (every use_surrogate); the
    infinities of rows in both walks are counted."""
    from cartjit import CARTRegressor
    from cartjit.engine.predict import BLIND_SLOTS, CHUNK_ROWS
    from cartjit.engine.predict import apply as nodes_of

    from references.naive_missing import flat_apply_missing

    rng = np.random.default_rng(11)
    n = 4000
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=n)
    X[:, 3] = 0.0  # never split on
    model = CARTRegressor(max_surrogate=3, min_samples_leaf=3).fit(_with_holes(X, 0.1, 6), y)
    tree = model.tree_
    assert tree.has_surrogates and not (tree.level_row >= 0).any()
    m = 3 * CHUNK_ROWS + 5 * BLIND_SLOTS + 3
    Xq = rng.normal(size=(m, 4))
    Xq[rng.random(Xq.shape) < hole_share] = nan
    for r in (0, BLIND_SLOTS - 1, BLIND_SLOTS, CHUNK_ROWS - 1, CHUNK_ROWS, m - 1):
        Xq[r, r % 3] = nan
    Xq[100:100 + 2 * BLIND_SLOTS, 1] = nan  # a run of rows with holes
    Xq[200, 3] = nan  # a hole the tree never reads
    for u in (0, 1, 2):
        want = flat_apply_missing(tree, Xq, u)
        np.testing.assert_array_equal(apply(tree, Xq, u), want)
    bad = Xq.copy()
    inf_rows = [1, CHUNK_ROWS + 1, 2 * CHUNK_ROWS - 1]
    for r in inf_rows:
        bad[r, 2] = np.inf if r % 2 else -np.inf
    nodes, n_inf = nodes_of(tree.feature, tree.threshold, tree.left, bad,
                            routing_of(tree, 2))
    assert n_inf == len(inf_rows)
    keep = np.setdiff1d(np.arange(m), inf_rows)
    np.testing.assert_array_equal(nodes[keep], flat_apply_missing(tree, Xq, 2)[keep])


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("use_surrogate", [2, 1, 0])
def test_heldout_losses_equal_pruning_then_predicting(regression, use_surrogate):
    """A fold tree grown on 2/3 of iris with holes scores its held-out third at every
    α'_k exactly as pruning it to T(α'_k) and dropping the rows down does, cases that
    stop at an internal node included."""
    X, y = _iris()
    X = _with_holes(X, 0.15, 2)
    rng = np.random.default_rng(3)
    train = rng.random(150) < 2 / 3
    w = rng.integers(1, 4, 150).astype(np.float64)
    if regression:
        target, X = X[:, 3].copy(), np.ascontiguousarray(X[:, :3])
        keep = ~np.isnan(target)
        X, target, w, train = np.ascontiguousarray(X[keep]), target[keep], w[keep], train[keep]
        problem = Problem(X[train], np.empty(0, np.int32), target[train], w[train], False, 0)
        settings = _settings(SQUARED_ERROR, 0, 5, use_surrogate)
    else:
        target = y
        problem = Problem(np.ascontiguousarray(X[train]), y[train].astype(np.int32),
                          np.empty(0), w[train], False, 3)
        settings = _settings(GINI, 3, 5, use_surrogate)
    tree = fit_tree(problem, settings, None).tree
    hold = np.flatnonzero(~train)
    end = apply(tree, X[hold], use_surrogate)
    if use_surrogate < 2:
        assert np.any(tree.left[end] != LEAF), "some held-out case must stop inside"
    seq = np.unique(tree.alpha)
    alphas = np.append(np.sqrt(seq[:-1] * seq[1:]), seq[-1] * 2)
    direct = _direct_losses(tree, X[hold], target[hold], w[hold], alphas, use_surrogate,
                            regression)
    out_sum = np.zeros(alphas.shape[0])
    out_sq = np.zeros(alphas.shape[0])
    label = np.empty(0, np.int32) if regression else tree.label
    heldout_losses(FoldTree(tree.feature, tree.threshold, tree.left, tree.alpha, label,
                            tree.value, routing_of(tree, use_surrogate)),
                   HeldOut(X, hold.astype(np.int64),
                           np.empty(0, np.int32) if regression else y.astype(np.int32),
                           target if regression else np.empty(0), w, False),
                   LossTable(np.ones(3), 1.0 - np.eye(3), alphas, out_sum, out_sq))
    np.testing.assert_allclose(out_sum, direct, rtol=1e-12)


def test_cross_validation_with_holes_uses_the_fold_trees_surrogates():
    """R^CV with holes: the fold trees are grown with surrogates and score held-out
    rows through them; with use_surrogate 0 the cases that stop are scored at the node
    where they stop (the CV table differs, and both are valid risks)."""
    X, y = _iris()
    X = _with_holes(X, 0.1, 4)
    problem = Problem(X, y.astype(np.int32), np.empty(0), np.empty(0), True, 3)
    folds = np.arange(150) % 5
    res2 = cross_validate(problem, _settings(GINI, 3, 5, 2), folds)
    res0 = cross_validate(problem, _settings(GINI, 3, 5, 0), folds)
    for res in (res2, res0):
        risk = res.table["cv_risk"].to_numpy()
        assert np.all((risk >= 0) & (risk <= 1))
        # the root alone misclassifies 2/3 of the cases whatever the holes
        assert risk[-1] == pytest.approx(2 / 3)
    # recompute R^CV(T_k) of use_surrogate 2 fold by fold, directly
    fitted = res2.fitted
    seq = fitted.path[0]
    alphas = np.append(np.sqrt(seq[:-1] * seq[1:]), np.inf)
    wrong = np.zeros(alphas.shape[0])
    for v in range(5):
        train = folds != v
        sub = Problem(np.ascontiguousarray(X[train]), y[train].astype(np.int32), np.empty(0),
                      np.empty(0), True, 3)
        fold_tree = fit_tree(sub, _settings(GINI, 3, 5, 2, max_competitor=0), None).tree
        hold = np.flatnonzero(~train)
        wrong += _direct_losses(fold_tree, np.ascontiguousarray(X[hold]), y[hold],
                                np.ones(hold.shape[0]), np.minimum(alphas, 1e300), 2)
    np.testing.assert_allclose(res2.table["cv_risk"].to_numpy(), wrong / 150, rtol=1e-12)


# ----------------------------------------------------------------- validate

def _broken(**changes):
    tree = _tree()
    fields = tree._asdict()
    for name, edit in changes.items():
        arr = fields[name].copy()
        edit(arr)
        fields[name] = arr
    return Tree(**fields)


def _set(index, value):
    def edit(arr):
        arr[index] = value
    return edit


@pytest.mark.parametrize("changes, match", [
    (dict(n_primary=_set(1, 3)), "n_primary must be 0 at leaves"),
    (dict(n_primary=_set(2, 5)), r"n_primary of a split node must lie in \[1, n_node"),
    (dict(n_primary=_set(2, 0)), r"n_primary of a split node must lie in \[1, n_node"),
    (dict(majority_left=_set(0, 0)), "majority_left of a split node must be 1 when"),
    (dict(majority_left=_set(2, 1)), "majority_left of a split node must be 1 when"),
    (dict(majority_left=_set(0, 2)), "majority_left must be -1, 0 or 1"),
    (dict(majority_left=_set(3, -1)), "leaves must have level_row -1 and majority_left 0"),
    (dict(n_surrogates=_set(0, 4)), r"surrogate rows: rows \[start, start \+ count\)"),
    (dict(surrogate_start=_set(2, 1)), "surrogate rows: two nodes"),
    (dict(n_surrogates=_set(1, 1)), "surrogate rows: start and count must be 0 at leaves"),
    (dict(n_surrogates=_set(0, -1)), "surrogate rows: start and count must be non-neg"),
    (dict(surrogate_level_row=_set(1, 7)), "level row must be -1 or a row of level_sets"),
    (dict(surrogate_feature=_set(0, 0)), "other than the node's split feature"),
    (dict(surrogate_feature=_set(1, 1)), "a node lists the same feature twice"),
    (dict(surrogate_threshold=_set(0, nan)), "an ordered split needs a finite threshold"),
    (dict(surrogate_threshold=_set(1, 3.0)), "an ordered split needs a finite threshold"),
    (dict(surrogate_agree=_set(0, 1.5)), r"surrogate_agree must lie in \[0, 1\]"),
    (dict(surrogate_agree=_set(0, nan)), r"surrogate_agree must lie in \[0, 1\]"),
    (dict(surrogate_adj=_set(1, 0.0)), r"surrogate_adj must lie in \(0, 1\]"),
    (dict(surrogate_adj=_set(1, 1.2)), r"surrogate_adj must lie in \(0, 1\]"),
    (dict(surrogate_low_left=_set(0, 2)), "surrogate_low_left must be 0 or 1"),
    (dict(surrogate_agree=_set(1, 0.95)), "best first"),
    (dict(surrogate_count=_set(0, 1)), "cannot route more than its cases missing"),
    (dict(surrogate_count=_set(0, -1)), "surrogate_count must be non-negative"),
    (dict(level_sets=lambda a: a.__setitem__((1, 1, 0), np.uint64(1))),
     "the two level sets must be disjoint and non-empty"),
    (dict(n_competitors=_set(3, 1)), "competitor rows: start and count must be 0 at leaves"),
    (dict(competitor_start=_set(0, 1)), r"competitor rows: rows \[start, start \+ count\)"),
    (dict(competitor_improvement=_set(1, 0.0)), "competitor_improvement must be positive"),
    (dict(competitor_improvement=_set(1, 0.5)), "competitors must be listed best first"),
    (dict(competitor_count=_set(0, 11)), r"competitor_count must lie in \[1, n_node"),
    (dict(competitor_feature=_set(0, 0)), "other than the node's split feature"),
    (dict(competitor_level_row=_set(1, -1)), "an ordered split needs a finite threshold"),
    (dict(n_node_samples=_set(1, 5)), "must be the sum of its children's"),
    (dict(weighted_n_node_samples=_set(1, 5.0)), "must be the sum of its children's"),
])
def test_validate_rejects_each_broken_invariant(changes, match):
    validate(_tree())
    with pytest.raises(ValueError, match=match):
        validate(_broken(**changes))


def test_validate_table_dtypes_and_lengths():
    fields = _tree()._asdict()
    with pytest.raises(ValueError, match="surrogate_agree must be a 1-d float64"):
        validate(Tree(**{**fields, "surrogate_agree": fields["surrogate_agree"].astype(
            np.float32)}))
    with pytest.raises(ValueError, match="competitor table's columns must have the same"):
        validate(Tree(**{**fields, "competitor_count": fields["competitor_count"][:1]}))
    with pytest.raises(ValueError, match="n_primary must be int64"):
        validate(Tree(**{**fields, "n_primary": fields["n_primary"].astype(np.int32)}))


def test_validate_accepts_cases_that_stayed_and_bounds_the_children():
    """Node 0 holds 12 cases, 2 of them missing x0 and routed by nothing: its children
    hold 10. That is valid; children holding more than their parent, or fewer than
    its n_primary cases, are not."""
    tree = _tree(stayed=2)
    validate(tree)
    assert tree.n_node_samples[0] == 12 and tree.n_primary[0] == 10
    f = tree._asdict()
    more = dict(f, n_primary=np.array([8, 0, 4, 0, 0], np.int64),
                n_node_samples=np.array([9, 6, 4, 2, 2], np.int64),
                competitor_count=np.array([8, 7], np.int64))
    with pytest.raises(ValueError, match="cannot hold more cases than it"):
        validate(Tree(**more))
    fewer = dict(f, n_primary=np.array([11, 0, 4, 0, 0], np.int64))
    with pytest.raises(ValueError, match="must hold at least its n_primary"):
        validate(Tree(**fewer))
    heavy = dict(f, weighted_n_node_samples=np.array([9.0, 6, 4, 2, 2]))
    with pytest.raises(ValueError, match="cannot hold more case weight than it"):
        validate(Tree(**heavy))


# ----------------------------------------------------------------- rpart

def _correlated_with_holes(seed, n=200, p=3, frac=0.1):
    """Two classes from x0 + 0.8 x1 + noise; x1 then mixed with x0, so each is a good
    surrogate of the other; ``frac`` of the cells missing. Continuous values: no
    held-out value falls on a threshold."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = ((X[:, 0] + 0.8 * X[:, 1] + rng.normal(scale=0.7, size=n)) > 0).astype(int)
    X[:, 1] = X[:, 0] * 0.7 + X[:, 1] * 0.3
    X[rng.random(X.shape) < frac] = nan
    return np.ascontiguousarray(X), y


@pytest.mark.parity
@pytest.mark.parametrize("seed, use_surrogate", [(0, 0), (2, 0), (0, 2)])
def test_cross_validated_error_equals_rpart_predictions(seed, use_surrogate):
    """rpart's ``xpred.rpart`` (each held-out case's class at every row of the CP table,
    the fold trees grown with the same surrogate settings) gives the misclassification
    count of every T_k; cartjit's R^CV counts the same cases. With use_surrogate < 2
    rpart's own ``xerror`` may differ from its predictions: for a case that stops at an
    internal node its run-down stores the prediction for the remaining CP values but
    no loss, so the loss of the case scored before it counts instead; cartjit scores
    the case with the node where it stops (docs/maths.md §8). (On these data every fold
    tree prunes at the same steps in both programs; elsewhere rpart's one-pass
    complexities can move a fold tree's step, as tests/parity/test_rpart_cv.py shows.)"""
    from parity import rpart_runner
    from parity.conftest import require_rpart

    require_rpart()
    X, y = _correlated_with_holes(seed)
    folds = np.arange(X.shape[0]) % 5
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"]).assign(y=y)
    control = dict(cp=0, minsplit=2, minbucket=1, maxcompete=0, maxsurrogate=5,
                   usesurrogate=use_surrogate, maxdepth=30)
    res = rpart_runner.run_rpart(frame, "y", ["x0", "x1", "x2"], "class", control=control,
                                 xval_folds=folds + 1, xpred=True)
    wrong = (res["xpred"] != (y + 1)[:, None]).sum(axis=0)  # rows: root first
    problem = Problem(X, y.astype(np.int32), np.empty(0), np.empty(0), True, 2)
    ours = cross_validate(problem, _settings(GINI, 2, 5, use_surrogate), folds)
    risk = ours.table["cv_risk"].to_numpy()[::-1]  # root first, as rpart lists
    assert risk.shape == wrong.shape
    np.testing.assert_allclose(risk, wrong / X.shape[0], rtol=1e-12)
