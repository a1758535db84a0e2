"""Per-case cross-validated predictions (``cv_predictions=True``: ``cv_predictions_``,
``cv_proba_``), rpart's ``xpred.rpart``.

The reference is slow and explicit: for every fold a ``CARTClassifier`` /
``CARTRegressor`` is fitted on the training part with the same parameters, pruned with
``.prune(α'_k)`` at every α'_k of the FULL tree's sequence (``cv_results_``'s
``alpha_prime``; α'_K = +∞ gives the root) and asked to predict its held-out cases.
The per-case predictions must also give back ``cv_risk``: the mean 0-1 loss (empirical
priors, unit weights) or the mean squared error of each column.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from test_cv import class_data, reg_data

ROOT_ALPHA = np.finfo(np.float64).max  # prune() takes finite α; T(max float) is the root


def slow_predictions(make, X, y, folds, alpha_prime, w=None, proba=False):
    """(n, K) predictions (and (n, K, J) probabilities) by refitting every fold tree."""
    n, K = X.shape[0], alpha_prime.shape[0]
    pred = np.full((n, K), np.nan)
    prob = None
    for v in np.unique(folds[folds >= 0]):
        train, test = folds != v, folds == v
        if w is not None:
            train &= w > 0
        fold = make().fit(X[train], y[train], sample_weight=None if w is None else w[train])
        for k, a in enumerate(alpha_prime):
            pruned = fold.prune(ROOT_ALPHA if np.isinf(a) else float(a))
            pred[test, k] = pruned.predict(X[test])
            if proba:
                if prob is None:
                    prob = np.full((n, K, len(fold.classes_)), np.nan)
                prob[np.ix_(np.flatnonzero(test), [k], np.arange(len(fold.classes_)))] = \
                    pruned.predict_proba(X[test])[:, None, :]
    return pred, prob


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_classification_matches_refitted_fold_trees(seed):
    X, y = class_data(seed)
    est = CARTClassifierCV(cv=5, random_state=seed, cv_predictions="proba").fit(X, y)
    folds = est.folds_[0]
    ap = est.cv_results_["alpha_prime"].to_numpy()
    pred, prob = slow_predictions(CARTClassifier, X, y, folds, ap, proba=True)
    assert est.cv_predictions_.shape == (X.shape[0], len(est.cv_results_))
    assert est.cv_predictions_.dtype == np.int64
    np.testing.assert_array_equal(est.classes_[est.cv_predictions_], pred)
    np.testing.assert_allclose(est.cv_proba_, prob, rtol=1e-12, atol=1e-15)
    # empirical priors, 0-1 cost, unit weights: R^CV is the error rate of each column
    np.testing.assert_allclose(est.cv_results_["cv_risk"],
                               (est.cv_predictions_ != y[:, None]).mean(axis=0), rtol=1e-12)


def test_given_priors_and_cost_match_refitted_fold_trees():
    X, y = class_data(7)
    kw = dict(priors=np.array([0.5, 0.3, 0.2]),
              cost=np.array([[0.0, 1.0, 3.0], [2.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))
    est = CARTClassifierCV(cv=4, random_state=3, cv_predictions=True, **kw).fit(X, y)
    pred, _ = slow_predictions(lambda: CARTClassifier(**kw), X, y, est.folds_[0],
                               est.cv_results_["alpha_prime"].to_numpy())
    np.testing.assert_array_equal(est.classes_[est.cv_predictions_], pred)
    assert not hasattr(est, "cv_proba_")


@pytest.mark.parametrize("seed", [0, 1])
def test_regression_matches_refitted_fold_trees(seed):
    X, y = reg_data(seed)
    est = CARTRegressorCV(cv=7, random_state=seed, cv_predictions=True).fit(X, y)
    pred, _ = slow_predictions(CARTRegressor, X, y, est.folds_[0],
                               est.cv_results_["alpha_prime"].to_numpy())
    assert est.cv_predictions_.dtype == np.float64
    np.testing.assert_array_equal(est.cv_predictions_, pred)
    np.testing.assert_allclose(est.cv_results_["cv_risk"],
                               ((est.cv_predictions_ - y[:, None]) ** 2).mean(axis=0),
                               rtol=1e-12)


def test_missing_values_follow_the_fold_trees_surrogates():
    X, y = class_data(11, n=120)
    rng = np.random.default_rng(4)
    X[rng.random(X.shape) < 0.15] = np.nan
    for use in (0, 1, 2):
        kw = dict(max_surrogate=3, use_surrogate=use)
        est = CARTClassifierCV(cv=4, cv_predictions=True, **kw).fit(X, y)
        pred, _ = slow_predictions(lambda: CARTClassifier(**kw), X, y, est.folds_[0],
                                   est.cv_results_["alpha_prime"].to_numpy())
        np.testing.assert_array_equal(est.classes_[est.cv_predictions_], pred, err_msg=use)


def test_categorical_features_and_given_fold_ids():
    rng = np.random.default_rng(5)
    n = 100
    df = pd.DataFrame({"colour": pd.Categorical(rng.choice(list("abcdef"), n)),
                       "x": np.round(rng.normal(size=n), 1)})
    y = np.where(df["colour"].isin(["a", "c", "e"]) ^ (df["x"] > 0.5), "yes", "no")
    folds = rng.permutation(np.arange(n) % 5) + 1   # rpart-style ids 1..V
    est = CARTClassifierCV(cv=folds, cv_predictions=True).fit(df, y)
    got = est.classes_[est.cv_predictions_]
    ref = np.empty(got.shape, dtype=object)  # the slow reference, on the DataFrame
    for v in np.unique(folds):
        train, test = folds != v, folds == v
        fold = CARTClassifier().fit(df[train], y[train])
        for k, a in enumerate(est.cv_results_["alpha_prime"]):
            ref[test, k] = fold.prune(ROOT_ALPHA if np.isinf(a) else float(a)).predict(df[test])
    np.testing.assert_array_equal(got, ref.astype(got.dtype))


def test_zero_weight_rows_take_no_part():
    X, y = class_data(3)
    w = np.ones(X.shape[0])
    w[[5, 17, 40]] = 0.0
    w[[1, 2]] = 3.0
    est = CARTClassifierCV(cv=5, cv_predictions="proba").fit(X, y, sample_weight=w)
    assert np.all(est.cv_predictions_[w == 0] == -1)
    assert np.all(np.isnan(est.cv_proba_[w == 0]))
    pred, _ = slow_predictions(CARTClassifier, X, y, est.folds_[0],
                               est.cv_results_["alpha_prime"].to_numpy(), w=w)
    keep = w > 0
    np.testing.assert_array_equal(est.classes_[est.cv_predictions_[keep]], pred[keep])


def test_cp_keeps_the_columns_of_the_kept_rows():
    X, y = reg_data(2)
    full = CARTRegressorCV(cv=5, cv_predictions=True).fit(X, y)
    cp = float(full.cv_results_["cp"].iloc[3])
    cut = CARTRegressorCV(cv=5, cp=cp, cv_predictions=True).fit(X, y)
    assert list(cut.cv_results_["k"]) == list(full.cv_results_["k"].iloc[3:])
    np.testing.assert_array_equal(cut.cv_predictions_, full.cv_predictions_[:, 3:])


def test_default_keeps_nothing_and_a_refit_drops_stale_predictions():
    X, y = class_data(0)
    est = CARTClassifierCV(cv=3).fit(X, y)
    assert not hasattr(est, "cv_predictions_") and not hasattr(est, "cv_proba_")
    est.set_params(cv_predictions="proba").fit(X, y)
    assert est.cv_proba_.shape == (X.shape[0], len(est.cv_results_), 3)
    est.set_params(cv_predictions=False).fit(X, y)
    assert not hasattr(est, "cv_predictions_") and not hasattr(est, "cv_proba_")


@pytest.mark.parametrize("bad", ["yes", 1, None, "PROBA"])
def test_bad_cv_predictions(bad):
    X, y = class_data(0)
    with pytest.raises(ValueError, match="cv_predictions"):
        CARTClassifierCV(cv=3, cv_predictions=bad).fit(X, y)


def test_refused_combinations():
    X, y = reg_data(0)
    with pytest.raises(ValueError, match="cv_predictions.*CARTClassifierCV"):
        CARTRegressorCV(cv=3, cv_predictions="proba").fit(X, y)
    with pytest.raises(ValueError, match="cv_predictions.*n_repeats"):
        CARTRegressorCV(cv=3, n_repeats=2, cv_predictions=True).fit(X, y)
