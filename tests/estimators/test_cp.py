"""rpart's relative complexity ``cp`` beside ``ccp_alpha``: α = cp · R(root).

R(root) is the resubstitution risk of the root under the fitted priors and costs (for a
regressor the variance of y), the scale of the ``cp`` column of
``cost_complexity_path()``. The agreement with R's ``prune(rpart(..., cp = 0), cp = c)``
is tests/parity/test_rpart_cp.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit.datasets import load_iris

TREE_FIELDS = ("feature", "threshold", "left", "value", "risk", "alpha")


def iris():
    X, y = load_iris(return_X_y=True)
    return np.asarray(X, dtype=float), np.asarray(y)


def reg_data(seed=0, n=80):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 1)
    y = np.round(X[:, 0] ** 2 + X[:, 1] + rng.normal(scale=0.5, size=n), 2)
    return X, y


def same_tree(a, b):
    for name in TREE_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_iris_petals_by_hand():
    """Iris on the petal features: R(root) = 100/150 = 2/3 (0-1 cost, empirical priors),
    and the steps α = 1/75 (3 leaves) and α = 0.29333... = 22/75 (2 leaves) of
    docs/maths.md §6 are cp = (1/75)/(2/3) = 0.02 and (22/75)/(2/3) = 0.44."""
    X, y = iris()
    X = X[:, 2:]
    assert CARTClassifier(cp=0.02).fit(X, y).get_n_leaves() == 3
    assert CARTClassifier(cp=0.44).fit(X, y).get_n_leaves() == 2
    assert CARTClassifier(cp=0.5).fit(X, y).get_n_leaves() == 1   # α_K = 1/3: cp 0.5
    assert CARTClassifier(cp=0.4999).fit(X, y).get_n_leaves() == 2
    assert CARTClassifier(cp=0.0199).fit(X, y).get_n_leaves() > 3


@pytest.mark.parametrize("kw", [{}, {"priors": "equal"},
                                {"cost": np.array([[0, 1, 4], [1, 0, 1], [2, 1, 0.0]])},
                                {"criterion": "entropy", "priors": [0.2, 0.3, 0.5]}])
def test_cp_is_alpha_over_root_risk_classifier(kw):
    X, y = iris()
    big = CARTClassifier(**kw).fit(X, y)
    root = float(big.tree_max_.risk[0])
    path = big.cost_complexity_path()
    for cp in list(path["cp"]) + [0.0, 0.013, 0.1, 0.37, 1.0, 5.0]:
        by_cp = CARTClassifier(cp=cp, **kw).fit(X, y)
        by_alpha = CARTClassifier(ccp_alpha=cp * root, **kw).fit(X, y)
        same_tree(by_cp.tree_, by_alpha.tree_)
        same_tree(by_cp.tree_max_, big.tree_max_)
    # each row's cp gives that row's tree
    for cp, n_leaves in zip(path["cp"], path["n_leaves"]):
        assert CARTClassifier(cp=float(cp), **kw).fit(X, y).get_n_leaves() == n_leaves


def test_cp_is_alpha_over_root_risk_regressor():
    X, y = reg_data()
    big = CARTRegressor().fit(X, y)
    root = float(big.tree_max_.risk[0])
    assert root == pytest.approx(np.var(y), rel=1e-12)  # R(root): the variance of y
    for cp in [0.0, 0.001, 0.01, 0.05, 0.2, 0.9]:
        same_tree(CARTRegressor(cp=cp).fit(X, y).tree_,
                  CARTRegressor(ccp_alpha=cp * root).fit(X, y).tree_)
    # the scale of y does not matter: cp is relative
    a = CARTRegressor(cp=0.01).fit(X, y)
    b = CARTRegressor(cp=0.01).fit(X, 1000.0 * y)
    np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
    np.testing.assert_array_equal(a.tree_.left, b.tree_.left)


def test_weights_do_not_change_what_cp_means():
    X, y = iris()
    w = np.random.default_rng(1).integers(1, 4, size=y.shape[0]).astype(float)
    dup = np.repeat(np.arange(y.shape[0]), w.astype(int))
    for cp in (0.01, 0.05):
        a = CARTClassifier(cp=cp).fit(X, y, sample_weight=w)
        b = CARTClassifier(cp=cp).fit(X[dup], y[dup])
        np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)
        np.testing.assert_array_equal(a.tree_.threshold, b.tree_.threshold)


def test_neither_keeps_today_default():
    X, y = iris()
    est = CARTClassifier().fit(X, y)
    assert est.get_params()["cp"] is None and est.get_params()["ccp_alpha"] is None
    same_tree(est.tree_, est.tree_max_)
    assert CARTClassifierCV().get_params()["cp"] is None
    assert "ccp_alpha" not in CARTRegressorCV().get_params()


@pytest.mark.parametrize("cls", [CARTClassifier, CARTRegressor])
def test_both_is_an_error_naming_both(cls):
    X, y = reg_data()
    with pytest.raises(ValueError, match=r"cp and ccp_alpha.*cp=0\.01.*ccp_alpha=0\.1"):
        cls(cp=0.01, ccp_alpha=0.1).fit(X, y.astype(int) if cls is CARTClassifier else y)


@pytest.mark.parametrize("bad, exc", [(-0.1, ValueError), (np.inf, ValueError),
                                      (np.nan, ValueError), ("0.01", TypeError),
                                      (True, TypeError)])
@pytest.mark.parametrize("cls", [CARTClassifier, CARTRegressor, CARTClassifierCV,
                                 CARTRegressorCV])
def test_bad_cp(cls, bad, exc):
    X, y = reg_data()
    y = y.astype(int) if cls in (CARTClassifier, CARTClassifierCV) else y
    with pytest.raises(exc, match="cp"):
        cls(cp=bad).fit(X, y)


def test_prune_copy_forgets_cp_so_a_refit_gives_the_same_tree():
    X, y = iris()
    est = CARTClassifier(cp=0.02).fit(X, y)
    alpha = float(est.cost_complexity_path()["alpha"].iloc[-2])
    pruned = est.prune(alpha)
    assert pruned.cp is None and pruned.ccp_alpha == alpha and est.cp == 0.02
    refit = CARTClassifier(**pruned.get_params()).fit(X, y)
    same_tree(refit.tree_, pruned.tree_)


# ----------------------------------------------------------------------------- CV


@pytest.mark.parametrize("cls, data", [(CARTClassifierCV, iris), (CARTRegressorCV, reg_data)])
def test_cv_cp_keeps_the_subtrees_of_t_cp(cls, data):
    """cp on a CV estimator: the candidates are T(cp R(root)) and its subtrees; the other
    rows of the table (the same folds, so the same R^CV) are dropped."""
    X, y = data()
    full = cls(cv=5, selection="min").fit(X, y)
    table = full.cv_results_
    for row in range(len(table)):
        cp = float(table["cp"].iloc[row])
        for c in (cp, cp * 1.0001 if row + 1 < len(table) else cp):
            cut = cls(cv=5, selection="min", cp=c).fit(X, y)
            kept = table.iloc[row:].reset_index(drop=True)
            got = cut.cv_results_.drop(columns="selected")
            assert list(got.columns) == list(kept.drop(columns="selected").columns)
            for col in got.columns:
                np.testing.assert_array_equal(got[col].to_numpy(), kept[col].to_numpy(),
                                              err_msg=col)
            np.testing.assert_array_equal(cut.cv_risk_repeats_,
                                          full.cv_risk_repeats_[:, row:])
            # the selection among the kept rows
            risk = kept["cv_risk"].to_numpy()   # "min": ties go to the smaller tree
            best = row + int(np.flatnonzero(risk <= risk.min() * (1 + 1e-12))[-1])
            assert cut.best_index_ == best - row
            assert cut.cv_results_["selected"].iloc[cut.best_index_]
            assert cut.alpha_ == table["alpha"].iloc[best]
            assert cut.get_n_leaves() == table["n_leaves"].iloc[best]
            same_tree(cut.tree_max_, full.tree_max_)


def test_cv_cp_zero_is_the_default():
    X, y = iris()
    a = CARTClassifierCV(cv=5).fit(X, y)
    b = CARTClassifierCV(cv=5, cp=0.0).fit(X, y)
    assert a.cv_results_.equals(b.cv_results_)
    assert a.best_index_ == b.best_index_


def test_cv_cp_at_least_the_root_leaves_the_root():
    X, y = iris()
    est = CARTClassifierCV(cv=5, cp=1.0).fit(X, y)
    assert len(est.cv_results_) == 1 and est.get_n_leaves() == 1
    assert est.cv_results_["k"].iloc[0] == len(CARTClassifierCV(cv=5).fit(X, y).cv_results_)
