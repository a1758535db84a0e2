"""cv_steps against cv_results_: its N_ij tables give R^CV and the SE of every row
(docs/maths.md §5), pooled and fold by fold; and the tables match fold trees refitted
independently with the public estimator."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressorCV
from cartjit.datasets import load_iris
from cartjit.steps import cv_steps


def _risk_from_counts(est, counts):
    """R^CV = Σ_j π(j) Σ_i C(i|j) N_ij / N_j from one k's table."""
    N = counts.drop(columns="N_j").to_numpy(dtype=float)
    totals = est.class_weight_totals_
    return float((est.priors_ / totals * (N * est.cost_).sum(axis=1)).sum())


def test_counts_give_the_cv_risk_classification():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(120, 3)).round(1)
    y = np.where(X[:, 0] > 0.3, "a", np.where(X[:, 1] > 0, "b", "c"))
    flip = rng.random(120) < 0.2
    y[flip] = rng.choice(["a", "b", "c"], size=flip.sum())
    w = rng.integers(1, 3, size=120).astype(float)
    cost = np.array([[0, 1, 1], [2, 0, 1], [1, 3, 0]], dtype=float)
    for kw in ({}, {"priors": [0.5, 0.3, 0.2], "cost": cost}):
        est = CARTClassifierCV(cv=5, cv_predictions=True, **kw).fit(X, y, sample_weight=w)
        steps = cv_steps(est, y, sample_weight=w, by_fold=True)
        res = est.cv_results_
        np.testing.assert_allclose(steps.risk["cv_risk"], res["cv_risk"], rtol=1e-12)
        np.testing.assert_allclose(steps.risk["cv_se"], res["cv_se"], rtol=1e-12)
        pooled = cv_steps(est, y, sample_weight=w)
        for k in res.index:
            assert _risk_from_counts(est, pooled.counts.loc[k]) == pytest.approx(
                res.loc[k, "cv_risk"], rel=1e-12)
            by_fold = steps.counts.loc[k].groupby(level="true", sort=False).sum()
            np.testing.assert_allclose(by_fold.loc[pooled.counts.loc[k].index],
                                       pooled.counts.loc[k])
        contrib = steps.folds.groupby(level="k")["contribution"].sum()
        np.testing.assert_allclose(contrib, res["cv_risk"], rtol=1e-12)


def test_regression_and_missing_values():
    rng = np.random.default_rng(22)
    X = rng.normal(size=(100, 2))
    y = X[:, 0] ** 2 + rng.normal(scale=0.3, size=100)
    X[rng.random(100) < 0.15, 1] = np.nan
    w = rng.uniform(0.5, 2, size=100)
    est = CARTRegressorCV(cv=4, cv_predictions=True).fit(X, y, sample_weight=w)
    steps = cv_steps(est, y, sample_weight=w, by_fold=True)
    np.testing.assert_allclose(steps.risk["cv_risk"], est.cv_results_["cv_risk"], rtol=1e-12)
    np.testing.assert_allclose(steps.risk["cv_se"], est.cv_results_["cv_se"], rtol=1e-12)
    sse = steps.counts.groupby(level="k")["sse"].sum()
    np.testing.assert_allclose(sse / w.sum(), est.cv_results_["cv_risk"], rtol=1e-12)


def test_fold_trees_refitted_by_hand():
    """Each fold's tree grown by CARTClassifier on the other folds and pruned at α'_k
    labels the held-out cases as the N_ij tables say (empirical priors: the fold's own
    proportions, docs/maths.md §5)."""
    X, y = load_iris(petal_only=True, return_X_y=True)
    est = CARTClassifierCV(cv=5, cv_predictions=True).fit(X, y)
    steps = cv_steps(est, y)
    folds = est.folds_[0]
    res = est.cv_results_
    classes = list(est.classes_)
    expected = {k: np.zeros((3, 3), dtype=int) for k in res.index}
    for v in np.unique(folds):
        train, test = folds != v, folds == v
        fold_tree = CARTClassifier().fit(X[train], y[train])
        for k in res.index:
            pred = fold_tree.prune(res.loc[k, "alpha_prime"]).predict(X[test])
            for true, label in zip(y[test], pred):
                expected[k][classes.index(true), classes.index(label)] += 1
    for k in res.index:
        got = steps.counts.loc[k].drop(columns="N_j").to_numpy()
        np.testing.assert_array_equal(got, expected[k])


def test_needs_the_predictions():
    X, y = load_iris(petal_only=True, return_X_y=True)
    with pytest.raises(ValueError, match="cv_predictions=True"):
        cv_steps(CARTClassifierCV(cv=3).fit(X, y), y)
    with pytest.raises(TypeError, match="CV"):
        cv_steps(CARTClassifier().fit(X, y), y)
    est = CARTClassifierCV(cv=3, cv_predictions=True).fit(X, y)
    with pytest.raises(ValueError, match="y"):
        cv_steps(est, y[:10])


def test_cp_rows_and_missing_targets():
    """With ``cp`` the table starts at k_c; rows without a target take no part."""
    X, y = load_iris(return_X_y=True)
    est = CARTClassifierCV(cv=5, cp=0.02, cv_predictions=True).fit(X, y)
    steps = cv_steps(est, y)
    assert steps.risk.index.tolist() == est.cv_results_["k"].tolist()
    assert steps.risk.index[0] > 1
    np.testing.assert_allclose(steps.risk["cv_risk"], est.cv_results_["cv_risk"], rtol=1e-12)
    y2 = np.asarray(y, dtype=object).copy()
    y2[:3] = None
    with pytest.warns(UserWarning, match="missing"):
        est = CARTClassifierCV(cv=5, cv_predictions=True).fit(X, y2)
    steps = cv_steps(est, y2)
    np.testing.assert_allclose(steps.risk["cv_risk"], est.cv_results_["cv_risk"], rtol=1e-12)
    assert steps.counts.loc[1, "N_j"].sum() == 147
