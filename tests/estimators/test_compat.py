"""``compat``: the exact weakest-link sequence ("breiman", the default) or rpart's rules
("rpart", cartjit/engine/rpart.py, docs/rpart-vs-exact.md).

Here without R: parameter checks, the default left as it was, rpart's one-pass rule on a
tree worked by hand where its table is not the exact sequence, rpart's fold priors and its
transposed reading of the loss, threads, ``cptable_`` and model files. Agreement with rpart
itself is tests/parity/test_rpart_compat.py.
"""
from __future__ import annotations

import os
import tempfile
from fractions import Fraction
from typing import NamedTuple

import numba
import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit.engine.pruning import weakest_link
from cartjit.engine.rpart import (fold_priors, one_pass, primary_weights, rpart_default_sides,
                            rpart_pruning)
from cartjit.datasets import load_iris

ESTIMATORS = (CARTClassifier, CARTRegressor, CARTClassifierCV, CARTRegressorCV)


def _iris():
    X, y = load_iris(return_X_y=True)
    return np.asarray(X, dtype=float), np.asarray(y)


def _data(est_cls, n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 1)
    if est_cls in (CARTClassifier, CARTClassifierCV):
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(int) + (X[:, 1] > 1)
    else:
        y = np.round(X[:, 0] * 2 + rng.normal(size=n), 1)
    return X, y


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("bad", ["RPART", "exact", "", None, 1, True])
def test_compat_must_be_a_known_name(est_cls, bad):
    X, y = _data(est_cls, n=40)
    with pytest.raises(ValueError, match="compat"):
        est_cls(compat=bad).fit(X, y)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_default_is_breiman_and_changes_nothing(est_cls):
    X, y = _data(est_cls)
    kw = {"cv": 5} if est_cls in (CARTClassifierCV, CARTRegressorCV) else {}
    a = est_cls(**kw).fit(X, y)
    b = est_cls(compat="breiman", **kw).fit(X, y)
    assert a.get_params()["compat"] == "breiman"
    for name in ("left", "threshold", "feature", "alpha", "risk"):
        np.testing.assert_array_equal(getattr(a.tree_, name), getattr(b.tree_, name))
        np.testing.assert_array_equal(getattr(a.tree_max_, name), getattr(b.tree_max_, name))
    if kw:
        assert a.cv_results_.equals(b.cv_results_)
        assert "CP" not in a.cv_results_.columns  # rpart's names only in rpart's mode
    # cptable_ in the breiman mode: the exact sequence in rpart's layout, root first
    path = a.cost_complexity_path()
    ct = a.cptable_
    cols = ["CP", "nsplit", "rel error"] + (["xerror", "xstd"] if kw else [])
    assert list(ct.columns) == cols
    if not kw:
        np.testing.assert_array_equal(ct["CP"], path["cp"].to_numpy()[::-1])
        np.testing.assert_array_equal(ct["nsplit"], path["n_leaves"].to_numpy()[::-1] - 1)
        np.testing.assert_array_equal(ct["rel error"], path["rel_error"].to_numpy()[::-1])
    else:
        np.testing.assert_array_equal(ct["xerror"], a.cv_results_["xerror"].to_numpy()[::-1])


# ----------------------------------------------------------------------------- a hand tree
#
#            0: R = 18
#          /           \
#    1: R = 5          2: R = 12
#    /      \          /       \
#  3: 0    4: 2      5: 1     6: R = 6
#                             /      \
#                           7: 0    8: 2
#
# rpart's one-pass rule, children in order (left first):
#   node 6: g = 6 - 0 - 2 = 4;  node 1: g = 5 - 0 - 2 = 3;
#   node 2: g = (12 - 1 - 2) / 2 = 9/2 > 4 = g(6), so 6 collapses: g = 12 - 1 - 6 = 5;
#   node 0: branches 1 (risk 2, one split) and 2 (risk 7, one split):
#           g = (18 - 2 - 7) / 3 = 3, not above g(1) = 3: nothing collapses.
#   capped from the root down: 1, 2 and 6 all get 3.
# rpart's table: CP 3 with the root alone (risk 18), CP 0 with 4 splits (risk 5).
# The exact sequence (Breiman §3.3): α_1 = 0 (5 leaves, risk 5); α_2 = 3 (node 1 goes:
# 4 leaves, risk 8); α_3 = min((18 - 8)/3, (12 - 7)/1...) = 10/3 (the root). rpart's table
# lacks the 4-leaf tree: its one level of look-ahead keeps branch 2 whole at node 0.
LEFT = np.array([1, 3, 5, -1, -1, -1, 7, -1, -1])
RIGHT = np.array([2, 4, 6, -1, -1, -1, 8, -1, -1])
PARENT = np.array([-1, 0, 0, 1, 1, 2, 2, 6, 6])
RISK = np.array([18.0, 5, 12, 0, 2, 1, 6, 0, 2])


class _HandTree(NamedTuple):
    """The fields of a flat tree that rpart's pruning reads."""

    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    risk: np.ndarray
    value: np.ndarray
    alpha: np.ndarray
    improvement: np.ndarray
    impurity: np.ndarray

    @property
    def n_nodes(self):
        return self.left.shape[0]


def _hand_tree():
    # regression means increasing from left to right: rpart grows the left child first
    value = np.arange(9, dtype=float)[:, None]
    # every split lowers the sum of squares by a fair share: rpart's improvement
    # threshold drops none
    improvement = np.where(LEFT >= 0, 1.0, 0.0)
    return _HandTree(LEFT, RIGHT, PARENT, RISK, value, np.zeros(9), improvement,
                     np.ones(9))


def test_one_pass_on_the_hand_tree():
    comp, keep, iscale = one_pass(LEFT, RIGHT, PARENT, RISK, np.ones(9), 0.0, 0.0, 1e-9,
                                  1e-12 * 18)
    assert iscale == 1.0
    np.testing.assert_array_equal(np.flatnonzero(keep), [0, 1, 2, 6])
    np.testing.assert_allclose(comp[keep], [3, 3, 3, 3], rtol=1e-15)


def test_hand_tree_rpart_table_is_not_the_exact_sequence():
    tree, (values, n_leaves, risk) = rpart_pruning(_hand_tree(), 0.0)
    np.testing.assert_allclose(values, [0, 3], rtol=1e-15)
    np.testing.assert_array_equal(n_leaves, [5, 1])
    np.testing.assert_allclose(risk, [5, 18], rtol=1e-15)
    np.testing.assert_allclose(tree.alpha, [3, 3, 3, 0, 0, 0, 3, 0, 0], rtol=1e-15)
    _, alphas, exact_leaves, exact_risk = weakest_link(LEFT, RIGHT, PARENT, RISK)
    np.testing.assert_allclose(alphas, [0, 3, 10 / 3], rtol=1e-15)
    np.testing.assert_array_equal(exact_leaves, [5, 4, 1])
    np.testing.assert_allclose(exact_risk, [5, 8, 18], rtol=1e-15)


def test_hand_tree_growth_bound():
    """With α_c = 3.5 (rpart's cp = 3.5/18): node 1's g = 3 <= α_c, so it does not
    split; the root then has g = (18 - 5 - 7) / 2 = 3 <= α_c (node 2 keeps g = 5, node 6
    collapsed into it): the tree is the root alone, and the table one row at α_c."""
    tree, (values, n_leaves, risk) = rpart_pruning(_hand_tree(), 3.5)
    np.testing.assert_array_equal(values, [3.5])
    np.testing.assert_array_equal(n_leaves, [1])
    np.testing.assert_array_equal(risk, [18])
    assert not tree.alpha.any()


def test_hand_tree_children_order_decides_ties():
    """rpart collapses the second child first when the two complexities are equal: with
    the children of node 0 grown right first (larger mean on the left), node 0 sees
    branch 2 first; the rows do not change (they depend on the complexities only)."""
    t = _hand_tree()
    flipped = t._replace(value=-t.value)
    _, a = rpart_pruning(t, 0.0)
    _, b = rpart_pruning(flipped, 0.0)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-15)


def test_fold_priors():
    """π = (0.2, 0.8), full class totals (10, 40), the fold keeps (5, 40): rpart's case
    weights π(j)/N_j give the fold π_v ∝ (0.2 · 5/10, 0.8 · 40/40) = (0.1, 0.8), so
    π_v = (1/9, 8/9), Z = 0.9, and its points scale by (45/50) / 0.9 = 1."""
    pri, scale = fold_priors(np.array([0.2, 0.8]), np.array([10.0, 40.0]),
                             np.array([5.0, 40.0]))
    np.testing.assert_allclose(pri, [1 / 9, 8 / 9], rtol=1e-15)
    assert scale == pytest.approx(1.0, rel=1e-15)
    pri, scale = fold_priors(np.array([0.5, 0.5]), np.array([10.0, 40.0]),
                             np.array([10.0, 20.0]))
    # (0.5, 0.25) -> Z = 0.75, π_v = (2/3, 1/3), scale = (30/50) / 0.75 = 0.8
    np.testing.assert_allclose(pri, [2 / 3, 1 / 3], rtol=1e-15)
    assert scale == pytest.approx(0.8, rel=1e-15)


# ----------------------------------------------------------------------------- estimators


def test_rpart_mode_tables_and_trees():
    X, y = _iris()
    est = CARTClassifier(compat="rpart").fit(X, y)
    ct = est.cptable_
    assert list(ct.columns) == ["CP", "nsplit", "rel error"]
    assert ct["CP"].is_monotonic_decreasing and ct["CP"].iloc[-1] == 0
    assert ct["nsplit"].iloc[0] == 0 and ct["rel error"].iloc[0] == 1
    root = est.tree_max_.risk[0]
    for cp, nsplit, rel in ct.itertuples(index=False):
        t = est.prune(cp * root).tree_
        assert t.n_leaves - 1 == nsplit
        assert t.risk[t.left < 0].sum() / root == pytest.approx(rel, rel=1e-12)
        # the plain estimator at that cp grows rpart(..., cp = c) and keeps all of it
        assert CARTClassifier(compat="rpart", cp=cp).fit(X, y).tree_.n_leaves - 1 == nsplit
    # the cp > 0 table ends at cp (rpart's does): its rows are those above cp, then cp
    cut = CARTClassifier(compat="rpart", cp=0.015).fit(X, y).cptable_
    np.testing.assert_array_equal(cut["CP"].to_numpy()[:-1], ct["CP"][ct["CP"] > 0.015])
    assert cut["CP"].iloc[-1] == pytest.approx(0.015, rel=1e-15)


def test_rpart_cv_results_and_transposed_loss():
    """rpart's rows in ``cv_results_`` with its column names; a held-out case of class j
    predicted i costs cost[i, j] (rpart 4.1.19 reads its loss matrix transposed), which
    ``cv_predictions_`` shows case by case."""
    X, y = _iris()
    cost = np.array([[0, 1, 2], [1, 0, 1], [5, 2, 0]], dtype=float)
    folds = np.random.default_rng(3).permutation(np.arange(150) % 5)
    est = CARTClassifierCV(compat="rpart", cost=cost, cv=folds, cv_predictions=True)
    est.fit(X, y)
    res = est.cv_results_
    for a, b in (("CP", "cp"), ("rel error", "rel_error")):
        np.testing.assert_array_equal(res[a], res[b])
    np.testing.assert_array_equal(res["nsplit"], res["n_leaves"] - 1)
    pred = est.cv_predictions_
    yi = np.searchsorted(est.classes_, y)[:, None]
    root = est.tree_max_.risk[0]
    transposed = cost[pred, yi].mean(axis=0) / root
    np.testing.assert_allclose(res["xerror"], transposed, rtol=1e-12)
    straight = cost[yi, pred].mean(axis=0) / root
    assert not np.allclose(res["xerror"], straight)
    # the root's row is evaluated at 10 times its complexity, rpart's stand-in for +inf
    assert res["alpha_prime"].iloc[-1] == pytest.approx(10 * res["alpha"].iloc[-1])
    ct = est.cptable_
    np.testing.assert_array_equal(ct["xerror"], res["xerror"].to_numpy()[::-1])


@pytest.mark.parametrize("est_cls", [CARTClassifierCV, CARTRegressorCV])
def test_rpart_mode_threads_identical(est_cls):
    X, y = _data(est_cls, n=3000, seed=4)  # large enough for the folds to run on threads
    before = numba.get_num_threads()
    out = []
    try:
        for k in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(k)
            out.append(est_cls(compat="rpart", cv=5).fit(X, y))
    finally:
        numba.set_num_threads(before)
    a, b = out
    assert a.cv_results_.equals(b.cv_results_)
    np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_rpart_mode_model_file_round_trip(est_cls):
    from cartjit import load, save

    X, y = _data(est_cls)
    kw = {"cv": 5} if est_cls in (CARTClassifierCV, CARTRegressorCV) else {}
    est = est_cls(compat="rpart", cp=0.001, **kw).fit(X, y)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.cartjit")
        save(est, path)
        back = load(path)
    assert back.compat == "rpart"
    assert back.cptable_.equals(est.cptable_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    if kw:
        assert back.cv_results_.equals(est.cv_results_)


def test_exact_fractions_of_the_hand_tree():
    """The hand computation above in exact arithmetic (no floating point involved)."""
    g6 = Fraction(6 - 0 - 2)
    g2 = Fraction(12 - 1 - 2, 2)
    assert g2 > g6
    g2 = Fraction(12 - 1 - 6)
    g0 = Fraction(18 - 2 - 7, 3)
    assert g0 == 3 and min(g0, g2, g6) == 3
    assert Fraction(18 - 8, 3) == Fraction(10, 3)


def test_rpart_mode_path_and_test_sample_follow_the_mode():
    """In the rpart mode ``cost_complexity_path()`` and ``test_sample_path`` list rpart's
    rows, so that each row's α given to ``prune`` gives that row's tree."""
    X, y = _iris()
    est = CARTClassifier(compat="rpart", criterion="entropy").fit(X, y)
    path = est.cost_complexity_path()
    np.testing.assert_array_equal(path["cp"], est.cptable_["CP"].to_numpy()[::-1])
    for alpha, n_leaves in zip(path["alpha"], path["n_leaves"]):
        assert est.prune(alpha).get_n_leaves() == n_leaves
    ts = est.test_sample_path(X, y)
    np.testing.assert_array_equal(ts["n_leaves"], path["n_leaves"])
    # the resubstitution estimate on the learning sample is R(T_k) itself
    np.testing.assert_allclose(ts["test_risk"], path["risk"], rtol=1e-12, atol=1e-15)


class _SidesTree(NamedTuple):
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    weighted_n_node_samples: np.ndarray
    majority_left: np.ndarray


def test_rpart_default_sides():
    """Where rpart's cross-validation sends a case nothing can route: the child with
    more weight, the second child (rpart's order: the larger mean second) on a tie,
    always the second without surrogates."""
    from cartjit.engine.rpart import rpart_default_sides

    left = np.array([1, 3, -1, -1, -1])
    right = np.array([2, 4, -1, -1, -1])
    # node 0: left child mean 5 > right child mean 1, so rpart grows the right child
    # first; weights 10 (left) and 30 (right). node 1: means 0 < 2, weights 5 and 5.
    value = np.array([[3.0], [5.0], [1.0], [0.0], [2.0]])
    w = np.array([40.0, 10, 30, 5, 5])
    tree = _SidesTree(left, right, value, w, np.zeros(5, dtype=np.int8))
    with_sur = rpart_default_sides(tree, None, 5).majority_left
    np.testing.assert_array_equal(with_sur[:2], [0, 0])  # heavier child 2; tie: second, 4
    without = rpart_default_sides(tree, None, 0).majority_left
    np.testing.assert_array_equal(without[:2], [1, 0])   # the second child: 1 and 4


def test_rpart_improvement_threshold():
    """rpart drops a split whose improvement (for regression the share of the node's
    sum of squares it removes) is at most 1e-10 times the largest met before. x = 1..4,
    y = 0, 1, 1, δ with δ = 1e-5 and minbucket 2: one split, removing δ²/4 of a sum of
    squares of about 1 (2.5e-11). Alone, that is the largest improvement met and the
    split stays; beside four cases x = 11..14, y = 2, after a root split of improvement
    about 0.82, it goes, although its complexity (4.5e-12 R(root)) is above the tie
    tolerance; the exact mode keeps it."""
    delta = 1e-5
    X = np.array([[1.0], [2], [3], [4], [11], [12], [13], [14]])
    y = np.array([0, 1, 1, delta, 2, 2, 2, 2])
    kw = dict(cp=0, min_samples_split=4, min_samples_leaf=2)
    alone = CARTRegressor(compat="rpart", **kw).fit(X[:4], y[:4])
    assert list(alone.cptable_["nsplit"]) == [0, 1]
    ss = float(np.sum((y[:4] - y[:4].mean()) ** 2))
    np.testing.assert_allclose(alone.cptable_["CP"].iloc[0], delta ** 2 / 4 / ss, rtol=1e-4)
    both = CARTRegressor(compat="rpart", **kw).fit(X, y)
    assert list(both.cptable_["nsplit"]) == [0, 1]
    assert both.tree_.n_leaves == 2
    exact = CARTRegressor(**kw).fit(X, y)
    assert list(exact.cptable_["nsplit"]) == [0, 1, 2]



def test_rpart_default_side_counts_the_split_own_cases():
    """rpart's default direction (a held-out case that neither the split nor a surrogate
    can send) follows the weights the split itself sent, not the children's, which also
    hold the cases the surrogates sent. Root split on x1: 3 cases of small x1 (y 0) and
    4 of large x1 (y 10); 3 cases miss x1 and have a small x2, so the surrogate on x2
    sends them with the small ones (their y of 10 makes x2 the weaker split). The
    children weigh 6 and 4, the split sent 3 and 4: rpart's default is the child of the
    larger values, its second."""
    nan = np.nan
    X = np.array([[1, 1], [2, 2], [3, 3], [11, 11], [12, 12], [13, 13], [14, 14],
                  [nan, 1.5], [nan, 2.5], [nan, 0.5]])
    y = np.array([0, 0, 0, 10, 10, 10, 10, 10, 10, 10], dtype=float)
    est = CARTRegressor(max_surrogate=5, max_depth=1).fit(X, y)
    tree = est.tree_max_
    assert tree.feature[0] == 0 and tree.n_surrogates[0] >= 1
    left, right = tree.left[0], tree.right[0]
    assert (tree.n_node_samples[left], tree.n_node_samples[right]) == (6, 4)
    sent_left, sent_right = primary_weights(tree, X, np.ones(10))
    assert (sent_left[0], sent_right[0]) == (3, 4)
    assert not sent_left[1:].any() and not sent_right[1:].any()
    # the child of the smaller mean (left, 30/6 against 10) is rpart's first
    by_sent = rpart_default_sides(tree, None, 5, (sent_left, sent_right))
    by_children = rpart_default_sides(tree, None, 5)
    assert by_sent.majority_left[0] == 0          # the second child: right
    assert by_children.majority_left[0] == 1      # the children's weights: left
