"""Importances of a forest (docs/forests.md, "Importance").

* MDI: each tree's normalised impurity importance (the single tree's
  ``feature_importances_``), averaged over the trees that split and normalised to 1.
* Breiman's OOB permutation importance against a slow reference built from the trees
  (each tree's OOB error before and after one feature is permuted among its OOB cases,
  with the engine's documented permutation), for classification and regression; the
  permutations are permutations, a function of (seed, feature) alone; the result does
  not depend on the number of threads; a feature the trees never use has importance 0.
"""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import BaggedCARTClassifier, BaggedCARTRegressor, RandomForestClassifier
from cartjit.datasets import make_classification, make_regression
from cartjit.engine import forest as F

from references.forests import slow_permutation_importance, with_holes

pytestmark = pytest.mark.filterwarnings("ignore:.*in the bag of every tree")


def test_mdi_sums_to_one_and_is_the_trees_mean():
    X, y = make_classification(250, n_features=6, n_classes=3, random_state=4)
    est = BaggedCARTClassifier(6, max_depth=4, random_state=0).fit(X, y)
    per_tree = np.array([t.feature_importances_ for t in est.estimators_])
    mean = per_tree.mean(axis=0)
    np.testing.assert_allclose(est.feature_importances_, mean / mean.sum(), rtol=1e-14)
    assert est.feature_importances_.sum() == pytest.approx(1.0, rel=1e-14)


def test_mdi_leaves_out_trees_that_do_not_split():
    X = np.zeros((20, 2))
    X[:, 0] = np.arange(20)
    y = (np.arange(20) >= 10).astype(int)
    est = BaggedCARTClassifier(3, max_depth=0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.feature_importances_, [0.0, 0.0])
    est = BaggedCARTClassifier(3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.feature_importances_, [1.0, 0.0])


@pytest.mark.parametrize("priors", ["empirical", "equal"])
def test_permutation_importance_against_the_slow_reference(priors):
    X, y = make_classification(200, n_features=5, n_classes=3, random_state=6)
    est = BaggedCARTClassifier(5, oob_importance=True, priors=priors,
                               random_state=3).fit(X, y)
    deltas, raw, se = slow_permutation_importance(est, X, y, random_state=3)
    np.testing.assert_allclose(est.oob_importances_per_tree_, deltas, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(est.oob_importances_, raw, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(est.oob_importances_se_, se, rtol=1e-9, atol=1e-15)
    scaled = np.where(se > 0, raw / np.where(se > 0, se, 1), 0.0)
    np.testing.assert_allclose(est.oob_importances_scaled_, scaled, rtol=1e-9, atol=1e-12)
    assert est.oob_importances_by_class_.shape == (5, 3)


def test_regression_permutation_importance_against_the_slow_reference():
    X, y = make_regression(180, n_features=4, n_informative=2, random_state=2)
    X = with_holes(X, 0.05, random_state=3)
    est = BaggedCARTRegressor(4, oob_importance=True, random_state=1).fit(X, y)
    deltas, raw, _ = slow_permutation_importance(est, X, y, random_state=1)
    np.testing.assert_allclose(est.oob_importances_per_tree_, deltas, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(est.oob_importances_, raw, rtol=1e-10, atol=1e-12)


def test_per_class_importance_is_the_class_error_increase():
    X, y = make_classification(200, n_features=4, n_classes=2, n_informative=3,
                               random_state=1)
    est = BaggedCARTClassifier(5, oob_importance=True, random_state=0).fit(X, y)
    # with two classes and empirical priors, the overall increase is the class-weighted
    # mean of the per-class increases of each tree
    seeds = F.permutation_seeds(0, 5)
    for b, tree in enumerate(est.estimators_):
        rows = np.flatnonzero(est.inbag_counts(b) == 0)
        share = np.bincount(y[rows], minlength=2) / rows.shape[0]
        j = 0
        perm = F.permutation(seeds[b], j, rows.shape[0])
        Xp = X[rows].copy()
        Xp[:, j] = X[rows[perm], j]
        before = tree.predict(X[rows]) != y[rows]
        after = tree.predict(Xp) != y[rows]
        per_class = [after[y[rows] == c].mean() - before[y[rows] == c].mean() for c in (0, 1)]
        assert est.oob_importances_per_tree_[b, j] == pytest.approx(
            np.dot(share, per_class), abs=1e-12)


def test_permutations_are_permutations_of_seed_and_feature():
    a = F.permutation(12345, 3, 50)
    assert sorted(a.tolist()) == list(range(50))
    np.testing.assert_array_equal(a, F.permutation(12345, 3, 50))
    assert not np.array_equal(a, F.permutation(12345, 4, 50))
    assert not np.array_equal(a, F.permutation(12346, 3, 50))
    assert F.permutation(1, 0, 1).tolist() == [0]
    assert F.permutation(1, 0, 0).tolist() == []


def test_permutation_importance_threads_and_unused_features():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    X[:, 3] = 1.0  # a constant: never split on
    one = RandomForestClassifier(8, oob_importance=True, n_jobs=1, random_state=5).fit(X, y)
    two = RandomForestClassifier(8, oob_importance=True, n_jobs=2, random_state=5).fit(X, y)
    np.testing.assert_array_equal(one.oob_importances_per_tree_, two.oob_importances_per_tree_)
    assert one.oob_importances_[3] == 0.0 and one.oob_importances_scaled_[3] == 0.0
    assert one.oob_importances_[0] > one.oob_importances_[2]
    table = one.importance_table()
    assert list(table.columns) == ["mdi", "raw", "se", "scaled", "raw[0]", "raw[1]"]
    assert table.index.tolist() == ["x0", "x1", "x2", "x3"]
