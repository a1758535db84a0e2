"""Random feature subsets per node (Breiman's m): every split of a forest's tree is the
best split among the features drawn for its node, and nothing else changes.

The draws are recomputed here from the reference of tests/engine/test_draws.py (plain
Python integers), and each node's split is compared with a depth-one CART tree grown on
the node's cases and the drawn features only."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTRegressor
from cartjit.datasets import make_classification, make_regression
from cartjit.ensemble import RandomForestClassifier, RandomForestRegressor

from engine.test_draws import _reference  # noqa: E402  (the plain-integer draw)


def _node_cases(tree, X):
    """Cases (rows of X) reaching each node of a tree of ordered splits, complete X."""
    reach = {0: np.arange(X.shape[0])}
    order = [0]
    for t in order:
        left = tree.left[t]
        if left < 0:
            continue
        rows = reach[t]
        goes_left = X[rows, tree.feature[t]] <= tree.threshold[t]
        reach[left], reach[tree.right[t]] = rows[goes_left], rows[~goes_left]
        order += [left, tree.right[t]]
    return reach


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("m", [1, 2, 4])
def test_each_split_is_the_best_among_the_node_s_drawn_features(task, m):
    p = 6
    if task == "classification":
        X, y = make_classification(300, n_features=p, n_classes=3, random_state=1)
        forest = RandomForestClassifier(3, max_features=m, bootstrap=False, random_state=7,
                                        min_samples_leaf=3).fit(X, y)
        single = CARTClassifier
    else:
        X, y = make_regression(300, n_features=p, random_state=1)
        forest = RandomForestRegressor(3, max_features=m, bootstrap=False, random_state=7,
                                       min_samples_leaf=3).fit(X, y)
        single = CARTRegressor
    seeds = forest.tree_seeds_
    checked = 0
    for k, est in enumerate(forest.estimators_):
        tree = est.tree_
        for t, rows in _node_cases(tree, X).items():
            drawn = _reference(int(seeds[k]), int(t), p, m)
            stump = single(max_depth=1, min_samples_leaf=3).fit(X[rows][:, drawn], y[rows])
            if tree.left[t] < 0:
                # a leaf of the forest's tree: no drawn feature splits it (or a rule
                # stops it, as it stops the stump)
                if stump.tree_.left[0] >= 0:
                    assert len(rows) < 2 * 3 or tree.impurity[t] == 0, (k, t)
                continue
            assert tree.feature[t] in drawn, (k, t, drawn)
            assert stump.tree_.left[0] >= 0, (k, t)
            assert drawn[stump.tree_.feature[0]] == tree.feature[t], (k, t)
            assert stump.tree_.threshold[0] == tree.threshold[t], (k, t)
            checked += 1
    assert checked > 20


def test_the_same_draws_on_one_and_two_threads_and_any_order_of_trees():
    X, y = make_classification(2000, n_features=8, n_classes=2, random_state=3)
    a = RandomForestClassifier(6, max_features=2, random_state=11, n_jobs=1).fit(X, y)
    b = RandomForestClassifier(6, max_features=2, random_state=11, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    for ta, tb in zip(a.estimators_, b.estimators_):
        np.testing.assert_array_equal(ta.tree_.feature, tb.tree_.feature)
        np.testing.assert_array_equal(ta.tree_.threshold, tb.tree_.threshold)


def test_m_of_p_equal_to_p_is_the_single_tree():
    X, y = make_classification(400, n_features=5, n_classes=3, random_state=2)
    forest = RandomForestClassifier(1, max_features=5, bootstrap=False,
                                    random_state=0).fit(X, y)
    single = CARTClassifier().fit(X, y)
    np.testing.assert_array_equal(forest.estimators_[0].tree_.feature, single.tree_.feature)
    np.testing.assert_array_equal(forest.estimators_[0].tree_.threshold,
                                  single.tree_.threshold)


@pytest.mark.parametrize("kind", ["categorical", "numeric holes"])
def test_subset_splits_and_missing_values_split_only_on_drawn_features(kind):
    """The subset search (categorical features) and the search over present cases
    (missing values) skip the features not drawn too; threads change nothing."""
    from references.forests import categorical_frame, with_holes

    if kind == "categorical":
        X, y = categorical_frame(600, random_state=3)
        X.loc[::11, "x1"] = np.nan
    else:
        X, y = make_classification(600, n_features=6, n_classes=3, random_state=2)
        X = with_holes(X, 0.05, random_state=4)
    p = X.shape[1]
    a = RandomForestClassifier(4, max_features=2, max_surrogate=2, random_state=1,
                               n_jobs=1).fit(X, y)
    b = RandomForestClassifier(4, max_features=2, max_surrogate=2, random_state=1,
                               n_jobs=2).fit(X, y)
    checked = 0
    for k, (ea, eb) in enumerate(zip(a.estimators_, b.estimators_)):
        ta = ea.tree_
        np.testing.assert_array_equal(ta.feature, eb.tree_.feature)
        np.testing.assert_array_equal(ta.threshold, eb.tree_.threshold)
        for t in np.flatnonzero(ta.left >= 0):
            assert ta.feature[t] in _reference(int(a.tree_seeds_[k]), int(t), p, 2)
            checked += 1
    assert checked > 10
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
