"""Breiman's test-sample estimate R^ts(T_k) and its SE (``test_sample_path``), and the
selection by it (``prune_by_test_sample``).

The reference is slow and explicit: for every row of the pruning sequence the fitted
estimator is pruned with ``.prune(α_k)``, predicts the test sample, and R^ts and SE are
computed here from the predictions with the formulas of Breiman et al. §11.2 (given
priors: class by class) or of a mean (priors estimated from the test sample, and
regression). Two small cases are worked by hand.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit.datasets import load_iris


def class_data(seed, n=160, n_classes=3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 1)
    score = X @ rng.normal(size=(3, n_classes)) + rng.normal(size=(n, n_classes))
    y = np.argmax(score, axis=1)
    y[:2 * n_classes] = np.tile(np.arange(n_classes), 2)
    return X, y


def reg_data(seed, n=120):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 1)
    y = np.round(X[:, 0] ** 2 + X[:, 1] + rng.normal(scale=0.7, size=n), 2)
    return X, y


def slow_path(est, X, y, w=None, priors=None):
    """(R^ts, SE) of every row of ``cost_complexity_path()``, from ``prune(α_k).predict``.

    ``priors`` None: estimated from the test sample (a weighted mean of the per-case
    costs, or squared errors); else the class-by-class estimate with these π."""
    w = np.ones(len(y)) if w is None else w
    out = []
    for alpha in est.cost_complexity_path()["alpha"]:
        pred = est.prune(float(alpha)).predict(X)
        if isinstance(est, CARTRegressor):
            loss = (y - pred) ** 2
        else:
            idx = {c: i for i, c in enumerate(est.classes_)}
            loss = np.array([est.cost_[idx[a], idx[b]] for a, b in zip(y, pred)])
        if priors is None:
            W = w.sum()
            s, sq = np.sum(w * loss), np.sum(w * loss ** 2)
            out.append((s / W, math.sqrt(max(sq - s * s / W, 0.0)) / W))
            continue
        risk = var = 0.0
        for j, c in enumerate(est.classes_):
            m = y == c
            n_j = w[m].sum()
            s, sq = np.sum(w[m] * loss[m]), np.sum(w[m] * loss[m] ** 2)
            risk += priors[j] * s / n_j
            var += (priors[j] / n_j) ** 2 * (sq - s * s / n_j)
        out.append((risk, math.sqrt(max(var, 0.0))))
    return np.array(out)


def check(table, ref):
    np.testing.assert_allclose(table["test_risk"], ref[:, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(table["test_se"], ref[:, 1], rtol=1e-9, atol=1e-14)


# ----------------------------------------------------------------------------- by hand


def test_worked_classification():
    """Learning sample x = 1, 2, 3, 4 with classes 0, 0, 1, 1: T_1 splits at 2.5 (R = 0),
    T_2 is the root (R = 1/2, α_2 = 1/2; a 2-2 tie labels it class 0). Test sample
    x = 1, 2, 3, 4, 2.6 with classes 0, 1, 1, 1, 0.

    Empirical priors (from the test sample): T_1 errs on x = 2 and x = 2.6, R^ts = 2/5,
    SE = sqrt(0.4 · 0.6 / 5); the root errs on the three class-1 cases, R^ts = 3/5 with
    the same SE.

    Equal priors (class by class, N_0 = 2, N_1 = 3): T_1 has R_0 = 1/2, R_1 = 1/3, so
    R^ts = 5/12 and SE² = (1/4)² (1 - 1/2) + (1/6)² (1 - 1/3) = 1/32 + 1/54; the root
    has R_0 = 0, R_1 = 1, R^ts = 1/2 and SE = 0 (no case varies within its class)."""
    X = np.array([[1.0], [2.0], [3.0], [4.0]])
    y = np.array([0, 0, 1, 1])
    Xt = np.array([[1.0], [2.0], [3.0], [4.0], [2.6]])
    yt = np.array([0, 1, 1, 1, 0])
    table = CARTClassifier().fit(X, y).test_sample_path(Xt, yt)
    assert list(table["n_leaves"]) == [2, 1]
    np.testing.assert_allclose(table["alpha"], [0.0, 0.5])
    np.testing.assert_allclose(table["risk"], [0.0, 0.5])
    np.testing.assert_allclose(table["test_risk"], [0.4, 0.6], rtol=1e-15)
    np.testing.assert_allclose(table["test_se"], [math.sqrt(0.048)] * 2, rtol=1e-14)
    table = CARTClassifier(priors="equal").fit(X, y).test_sample_path(Xt, yt)
    np.testing.assert_allclose(table["test_risk"], [5 / 12, 0.5], rtol=1e-15)
    np.testing.assert_allclose(table["test_se"], [math.sqrt(1 / 32 + 1 / 54), 0.0],
                               rtol=1e-14, atol=1e-15)


def test_worked_regression():
    """x = 1, 2, 3, 4 with y = 1, 1, 3, 3: T_1 predicts 1 left of 2.5 and 3 right, the
    root 2. Test x = 1, 3, 4 with y = 2, 3, 5: T_1's squared errors 1, 0, 4 (R^ts = 5/3,
    SE = sqrt(17 - 25/3) / 3), the root's 0, 1, 9 (R^ts = 10/3, SE = sqrt(82 - 100/3) / 3)."""
    X = np.array([[1.0], [2.0], [3.0], [4.0]])
    table = CARTRegressor().fit(X, np.array([1.0, 1.0, 3.0, 3.0])).test_sample_path(
        np.array([[1.0], [3.0], [4.0]]), np.array([2.0, 3.0, 5.0]))
    np.testing.assert_allclose(table["test_risk"], [5 / 3, 10 / 3], rtol=1e-15)
    np.testing.assert_allclose(table["test_se"],
                               [math.sqrt(17 - 25 / 3) / 3, math.sqrt(82 - 100 / 3) / 3],
                               rtol=1e-14)


# ----------------------------------------------------------------------------- slow reference


@pytest.mark.parametrize("seed", [0, 1])
def test_empirical_priors_match_the_slow_path(seed):
    X, y = class_data(seed)
    est = CARTClassifier().fit(X[:100], y[:100])
    table = est.test_sample_path(X[100:], y[100:])
    assert list(table.columns) == ["k", "alpha", "alpha_prime", "n_leaves", "risk", "cp",
                                   "rel_error", "test_risk", "test_se"]
    path = est.cost_complexity_path()
    assert table[path.columns].equals(path)
    check(table, slow_path(est, X[100:], y[100:]))


@pytest.mark.parametrize("kw", [{"priors": "equal"}, {"priors": [0.5, 0.3, 0.2]},
                                {"class_weight": "balanced"},
                                {"priors": "equal",
                                 "cost": [[0, 1, 4], [2, 0, 1], [1, 3, 0]]}])
def test_given_priors_and_costs_match_the_slow_path(kw):
    X, y = class_data(3)
    est = CARTClassifier(**kw).fit(X[:100], y[:100])
    rng = np.random.default_rng(0)
    w = rng.integers(1, 4, size=60).astype(float)
    ref = slow_path(est, X[100:], y[100:], w=w, priors=est.priors_)
    check(est.test_sample_path(X[100:], y[100:], sample_weight=w), ref)


def test_cost_with_empirical_priors_matches_the_slow_path():
    X, y = class_data(4)
    est = CARTClassifier(cost=[[0, 1, 4], [2, 0, 1], [1, 3, 0]]).fit(X[:100], y[:100])
    check(est.test_sample_path(X[100:], y[100:]), slow_path(est, X[100:], y[100:]))


def test_regression_matches_the_slow_path_with_missing_values():
    X, y = reg_data(1)
    X[np.random.default_rng(2).random(X.shape) < 0.1] = np.nan
    for use in (0, 1, 2):
        est = CARTRegressor(max_surrogate=3, use_surrogate=use).fit(X[:80], y[:80])
        check(est.test_sample_path(X[80:], y[80:]), slow_path(est, X[80:], y[80:]))


def test_integer_weights_equal_duplicated_test_rows():
    X, y = class_data(5)
    est = CARTClassifier(priors="equal").fit(X[:100], y[:100])
    w = np.random.default_rng(3).integers(0, 4, size=60)
    w[:3] = 1  # every class keeps a case
    dup = 100 + np.repeat(np.arange(60), w)
    a = est.test_sample_path(X[100:], y[100:], sample_weight=w.astype(float))
    b = est.test_sample_path(X[dup], y[dup])
    np.testing.assert_allclose(a["test_risk"], b["test_risk"], rtol=1e-12)
    np.testing.assert_allclose(a["test_se"], b["test_se"], rtol=1e-12)


def test_labels_and_dataframes():
    pd = pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True)
    X = pd.DataFrame(np.asarray(X, dtype=float), columns=["sl", "sw", "pl", "pw"])
    names = np.array(["setosa", "versicolor", "virginica"])[np.unique(y, return_inverse=True)[1]]
    order = np.random.default_rng(0).permutation(len(names))
    train, test = order[:100], order[100:]
    est = CARTClassifier().fit(X.iloc[train], names[train])
    table = est.test_sample_path(X.iloc[test], names[test])
    check(table, slow_path(est, X.iloc[test], names[test]))


# ----------------------------------------------------------------------------- selection


@pytest.mark.parametrize("selection", ["min", "1se", 0.5])
def test_prune_by_test_sample_keeps_the_selected_tree(selection):
    X, y = class_data(6, n=300)
    est = CARTClassifier().fit(X[:150], y[:150])
    assert est.prune_by_test_sample(X[150:], y[150:], selection=selection) is est
    t = est.test_results_
    risk, se = t["test_risk"].to_numpy(), t["test_se"].to_numpy()
    best = risk.min()
    k_min = int(np.flatnonzero(risk <= best * (1 + 1e-12))[-1])
    m = {"min": 0.0, "1se": 1.0}.get(selection, selection)
    bound = risk[k_min] + m * se[k_min]
    k = int(np.flatnonzero(risk <= bound * (1 + 1e-12))[-1])
    assert est.best_index_ == k and list(np.flatnonzero(t["selected"])) == [k]
    assert est.alpha_ == t["alpha"].iloc[k]
    assert est.get_n_leaves() == t["n_leaves"].iloc[k]
    np.testing.assert_array_equal(est.tree_.feature, est.prune(est.alpha_).tree_.feature)
    np.testing.assert_array_equal(est.tree_.left, est.prune(est.alpha_).tree_.left)


def test_prune_by_test_sample_regression_and_what_is_forgotten():
    X, y = reg_data(0, n=240)
    est = CARTRegressor(cp=0.0).fit(X[:120], y[:120])
    est.prune_by_test_sample(X[120:], y[120:], selection="min")
    k = int(np.argmin(est.test_results_["test_risk"].to_numpy()[::-1]))
    k = len(est.test_results_) - 1 - k
    assert est.best_index_ == k
    assert est.get_params()["cp"] == 0.0  # parameters untouched
    copy = est.prune(0.0)                  # a pruned copy is another tree: nothing kept
    assert not hasattr(copy, "test_results_") and not hasattr(copy, "alpha_")
    est.fit(X[:120], y[:120])              # a refit forgets the selection
    assert not hasattr(est, "test_results_") and not hasattr(est, "best_index_")


def test_cv_estimators_have_the_path_but_not_the_pruning():
    X, y = class_data(7)
    est = CARTClassifierCV(cv=5).fit(X[:100], y[:100])
    table = est.test_sample_path(X[100:], y[100:])
    check(table, slow_path(est, X[100:], y[100:]))
    assert not hasattr(est, "prune_by_test_sample")
    with pytest.raises(AttributeError, match="cross-validation"):
        est.prune_by_test_sample(X[100:], y[100:])
    assert not hasattr(CARTRegressorCV(), "prune_by_test_sample")


# ----------------------------------------------------------------------------- bad input


def test_bad_test_samples():
    X, y = class_data(8)
    est = CARTClassifier(priors="equal").fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="not classes of the fitted tree: 7"):
        est.test_sample_path(X[100:102], np.array([0, 7]))
    with pytest.raises(ValueError, match="missing labels"):
        est.test_sample_path(X[100:102], np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match=r"no case .* of class\(es\) \[2\]"):
        est.test_sample_path(X[100:102], np.array([0, 1]))
    with pytest.raises(ValueError, match="y has 3 entries|3"):
        est.test_sample_path(X[100:102], np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="selection"):
        est.prune_by_test_sample(X[100:], y[100:], selection="best")
    with pytest.raises(ValueError, match="sample_weight"):
        est.test_sample_path(X[100:], y[100:], sample_weight=-np.ones(60))
    with pytest.raises(Exception, match="not fitted"):
        CARTRegressor().test_sample_path(X, y.astype(float))
    # empirical priors: a class absent from the test sample is no error (π from the sample)
    emp = CARTClassifier().fit(X[:100], y[:100])
    assert np.isfinite(emp.test_sample_path(X[100:102], np.array([0, 1]))["test_risk"]).all()
