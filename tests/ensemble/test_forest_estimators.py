"""The forests as estimators: scikit-learn's checks, parameters, views of the trees,
and bad input refused with a message naming the argument.

Only the tests marked ``needs_sklearn`` use scikit-learn.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from cartjit import (BaggedCARTClassifier, BaggedCARTRegressor, CARTClassifier,
                     RandomForestClassifier, RandomForestRegressor, export_text)
from cartjit.datasets import load_iris, make_classification
from cartjit.engine.forest import Forest

from references.forests import categorical_frame

try:
    import sklearn
    from sklearn.base import clone
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:
    sklearn = None

needs_sklearn = pytest.mark.skipif(sklearn is None, reason="needs scikit-learn")
pytestmark = pytest.mark.filterwarnings("ignore:.*in the bag of every tree")


def _expected_failed_checks(estimator):
    """The checks a bootstrap forest fails by design, as scikit-learn's own forests do.

    A tree's sample is drawn over the cases, so integer weights are not repeated rows
    (``check_sample_weight_equivalence_on_dense_data``), and unpruned trees keep pure
    minority leaves under any prior (``check_class_weight_classifiers``, as for the
    single unpruned tree, tests/estimators/test_estimators.py; trees pruned by their CV
    pass it, as the CV estimators do).
    """
    failed = {"check_sample_weight_equivalence_on_dense_data":
              "a bootstrap sample is drawn over the cases: integer weights are not "
              "repeated rows"}
    unpruned = (estimator.prune is None and estimator.ccp_alpha is None
                and estimator.cp is None)
    if isinstance(estimator, RandomForestClassifier) and unpruned:
        failed["check_class_weight_classifiers"] = (
            "unpruned trees keep pure minority leaves under any prior")
    return failed


if sklearn is not None:
    @parametrize_with_checks([RandomForestClassifier(5), RandomForestRegressor(5),
                              BaggedCARTClassifier(4, oob_score=True),
                              BaggedCARTRegressor(3, ccp_alpha=0.0),
                              BaggedCARTClassifier(3, prune="cv", prune_folds=3)],
                             expected_failed_checks=_expected_failed_checks)
    def test_sklearn_estimator_checks(estimator, check):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*does not inherit from")
            warnings.filterwarnings("ignore", message=".*in the bag of every tree")
            check(estimator)
else:
    @needs_sklearn
    def test_sklearn_estimator_checks():
        pass


@needs_sklearn
def test_clone_and_params():
    est = RandomForestClassifier(7, max_features=2, oob_score=True, priors="equal")
    again = clone(est)
    assert again.get_params() == est.get_params()
    assert BaggedCARTClassifier().max_features is None
    assert RandomForestRegressor().max_features == pytest.approx(1 / 3)
    assert RandomForestClassifier().max_features == "sqrt"


def test_views_of_the_trees_are_fitted_single_trees():
    X, y = categorical_frame()
    est = BaggedCARTClassifier(3, random_state=0).fit(X, y)
    assert isinstance(est.forest_, Forest) and est.forest_.n_trees == 3
    tree = est.estimators_[1]
    assert isinstance(tree, CARTClassifier)
    assert tree.classes_.tolist() == est.classes_.tolist()
    assert "a in {" in export_text(tree) or "b in {" in export_text(tree)
    assert tree.predict(X).shape == (X.shape[0],)
    assert est.estimators_[1] is tree  # built once
    assert est.n_estimators_ == 3
    assert list(est.feature_names_in_) == ["a", "x1", "b", "x2"]
    assert est.is_categorical_.tolist() == [True, False, True, False]
    n_nodes = sum(t.tree_.n_nodes for t in est.estimators_)
    assert est.forest_.n_nodes == n_nodes
    assert est.forest_.roots.tolist()[-1] == n_nodes


def test_pickle_round_trip():
    X, y = load_iris(return_X_y=True)
    est = RandomForestClassifier(4, oob_score=True, random_state=1).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict_proba(X), est.predict_proba(X))
    assert again.oob_score_ == est.oob_score_


def test_a_tree_whose_sample_lacks_a_class():
    X = np.arange(12, dtype=float)[:, None]
    y = np.array([0] * 10 + [1, 2])
    est = BaggedCARTClassifier(6, random_state=2).fit(X, y)
    lacking = [t for t in est.estimators_ if np.any(t.class_weight_totals_ == 0)]
    assert lacking  # rare classes miss some bootstrap samples
    for t in lacking:
        proba = t.predict_proba(X)
        assert np.isfinite(proba).all()
        np.testing.assert_allclose(proba[:, t.class_weight_totals_ == 0], 0.0)
    assert np.isfinite(est.predict_proba(X)).all()


def test_refit_forgets_the_earlier_fit():
    X, y = load_iris(return_X_y=True)
    est = RandomForestClassifier(3, oob_score=True, random_state=0).fit(X, y)
    assert hasattr(est, "oob_score_")
    est.set_params(oob_score=False).fit(X, y)
    assert not hasattr(est, "oob_score_") and not hasattr(est, "oob_error_curve_")


# ----------------------------------------------------------------------------- bad input

@pytest.fixture(scope="module")
def small():
    X, y = make_classification(40, n_features=4, n_classes=2, n_informative=2,
                               random_state=0)
    return X, y


@pytest.mark.parametrize("params, error, match", [
    (dict(n_estimators=0), ValueError, "n_estimators must be >= 1"),
    (dict(n_estimators=2.5), TypeError, "n_estimators must be an integer"),
    (dict(max_features=0), ValueError, r"max_features must be in \[1, n_features\]"),
    (dict(max_features=5), ValueError, r"max_features must be in \[1, n_features\] = \[1, 4\]"),
    (dict(max_features=1.5), ValueError, r"max_features must be in \(0, 1\]"),
    (dict(max_features=0.0), ValueError, r"max_features must be in \(0, 1\]"),
    (dict(max_features="auto"), ValueError, "max_features must be None, 'sqrt', 'log2'"),
    (dict(max_features=True), TypeError, "max_features must be"),
    (dict(max_samples=0.001), ValueError, "a tree needs at least one case"),
    (dict(max_samples=0), ValueError, "max_samples must be >= 1"),
    (dict(max_samples=1.5), ValueError, r"max_samples must be in \(0, 1\]"),
    (dict(max_samples="half"), TypeError, "max_samples must be None"),
    (dict(max_samples=41, replace=False), ValueError, "without replacement from the 40"),
    (dict(max_samples=0.5, bootstrap=False), ValueError, "needs bootstrap=True"),
    (dict(oob_score=True, bootstrap=False), ValueError, "oob_score=True needs out-of-bag"),
    (dict(oob_importance=True, bootstrap=False), ValueError, "oob_importance=True needs"),
    (dict(oob_score=True, replace=False, max_samples=1.0), ValueError,
     "draws all 40 cases without replacement"),
    (dict(bootstrap="yes"), TypeError, "bootstrap must be True or False"),
    (dict(replace=1), TypeError, "replace must be True or False"),
    (dict(oob_score=None), TypeError, "oob_score must be True or False"),
    (dict(n_jobs=0), ValueError, "n_jobs must be None, -1"),
    (dict(n_jobs=1.0), TypeError, "n_jobs must be None, -1"),
    (dict(random_state=-1), ValueError, "random_state must be >= 0"),
    (dict(voting="soft"), ValueError, "voting must be one of"),
    (dict(criterion="squared_error"), ValueError, "criterion"),
    (dict(min_samples_leaf=0), ValueError, "min_samples_leaf must be >= 1"),
    (dict(ccp_alpha=0.1, cp=0.1), ValueError, "give one of them"),
    (dict(prune="yes"), ValueError, "prune must be None or 'cv'"),
    (dict(prune="cv", ccp_alpha=0.1), ValueError, "prune='cv' chooses each tree's alpha"),
    (dict(prune="cv", prune_folds=1), ValueError, "prune_folds must be >= 2"),
    (dict(prune_selection="best"), ValueError, "selection"),
])
def test_bad_parameters_name_the_argument(small, params, error, match):
    X, y = small
    with pytest.raises(error, match=match):
        RandomForestClassifier(**{"n_estimators": 3, **params}).fit(X, y)


def test_regression_bad_input(small):
    X, y = small
    with pytest.raises(ValueError, match="criterion"):
        RandomForestRegressor(2, criterion="gini").fit(X, y.astype(float))
    with pytest.raises(ValueError, match="infinity"):
        RandomForestRegressor(2).fit(X, y.astype(float)).predict(np.full((1, 4), np.inf))


def test_predict_before_fit_and_wrong_width(small):
    X, y = small
    est = RandomForestClassifier(2)
    with pytest.raises(Exception, match="not fitted"):
        est.predict(X)
    est.fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        est.predict(X[:, :3])
