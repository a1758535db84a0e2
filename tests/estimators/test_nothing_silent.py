"""Nothing silent: extreme but finite numbers give the right tree or a clear error.

* Units: scaling every weight, every cost or every regression response by a constant c
  changes no split, threshold or label; the reported quantities scale as they should
  (weighted counts × c for weights; risk and α × c for costs; means × c and squared
  errors × c² for y). The references are the same problem fitted at unit scale, and the
  expected scalings follow from the definitions (R(t) = Σ_j C(i|j) π(j) N_j(t)/N_j,
  R(t) = Σ w (y - ȳ)² / W), not from the code.
* What float64 cannot carry (too wide a range of weights or costs, y whose squared
  errors overflow or underflow) is refused with a ValueError naming the argument.
* Unbounded requests (n_repeats, classes) are refused before allocating.
* Misleading messages: score() names y; a class whose cases all have weight 0 is named
  when priors/cost are sized for it.
* A battery of adversarial inputs across the four estimators: each gives the reference
  tree or a ValueError/TypeError whose message names the argument.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit.engine.limits import MemoryLimitError

SCALE = float(os.environ.get("CARTJIT_HYPOTHESIS_SCALE", "1"))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow],
                max_examples=max(1, int(25 * SCALE)))

STRUCTURE = ("feature", "threshold", "left", "right", "parent", "depth", "n_node_samples")


def class_data(seed, n=120, n_classes=3, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    score = X[:, 0] + 0.7 * X[:, 1] + rng.normal(scale=0.8, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def reg_data(seed, n=120, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(scale=0.3, size=n)
    return X, y


def assert_same_structure(a, b):
    """Identical splits, thresholds, children and labels (a tree is its structure)."""
    for name in STRUCTURE + ("label",):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def assert_scaled(actual, reference, factor, rtol=1e-12, atol=0.0):
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(reference, dtype=float) * factor
    both_inf = np.isinf(actual) & np.isinf(expected)
    np.testing.assert_allclose(np.where(both_inf, 0, actual), np.where(both_inf, 0, expected),
                               rtol=rtol, atol=atol)


def quiet_fit(est, X, y, **kw):
    """Fit with every warning an error: nothing may be silently wrong or just warned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return est.fit(X, y, **kw)


COST3 = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0], [1.0, 5.0, 0.0]])
SCALES = [1e-150, 2.0**-300, 1e-100, 3e-7, 7.0, 1e100, 2.0**400, 1e150]


# ---------------------------------------------------------------------- units: weights

@pytest.mark.parametrize("c", SCALES)
@pytest.mark.parametrize("criterion", ["gini", "entropy", "twoing"])
def test_classifier_weights_scaled(c, criterion):
    X, y = class_data(1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.shape[0])
    ref = CARTClassifier(criterion=criterion).fit(X, y, sample_weight=w)
    est = quiet_fit(CARTClassifier(criterion=criterion), X, y, sample_weight=w * c)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.weighted_n_node_samples, ref.tree_.weighted_n_node_samples, c)
    assert_scaled(est.tree_.value, ref.tree_.value, c)
    assert_scaled(est.class_weight_totals_, ref.class_weight_totals_, c)
    # π, p(j|t), R(t) and α do not depend on the weights' unit
    np.testing.assert_allclose(est.tree_.risk, ref.tree_.risk, rtol=1e-12)
    np.testing.assert_allclose(est.tree_.alpha, ref.tree_.alpha, rtol=1e-9)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("c", SCALES + [1e-200, 1e200, 1e-300, 1e300])
def test_regressor_uniform_weights_equal_unit_weights(c):
    """The reported case: uniform weights 1e±200 gave a single leaf, 1e-160 another tree."""
    X, y = reg_data(3, n=300)
    ref = CARTRegressor().fit(X, y)
    est = quiet_fit(CARTRegressor(), X, y, sample_weight=np.full(y.shape[0], c))
    assert_same_structure(est.tree_, ref.tree_)
    # W(t) = c n(t), each product rounded once
    np.testing.assert_array_equal(est.tree_.weighted_n_node_samples,
                                  ref.tree_.n_node_samples * c)
    for name in ("value", "impurity", "risk", "alpha"):
        np.testing.assert_array_equal(getattr(est.tree_, name), getattr(ref.tree_, name))


@pytest.mark.parametrize("c", [1e-160, 1e-200, 1e200, 1e300])
def test_classifier_uniform_weights_equal_unit_weights(c):
    X, y = class_data(4)
    ref = CARTClassifier().fit(X, y)
    est = quiet_fit(CARTClassifier(), X, y, sample_weight=np.full(y.shape[0], c))
    assert_same_structure(est.tree_, ref.tree_)
    np.testing.assert_array_equal(est.tree_.risk, ref.tree_.risk)
    np.testing.assert_array_equal(est.tree_.alpha, ref.tree_.alpha)
    np.testing.assert_array_equal(est.tree_.value, ref.tree_.value * c)


@pytest.mark.parametrize("c", SCALES)
def test_regressor_weights_scaled(c):
    X, y = reg_data(5)
    w = np.random.default_rng(6).uniform(0.5, 2.0, size=y.shape[0])
    ref = CARTRegressor().fit(X, y, sample_weight=w)
    est = quiet_fit(CARTRegressor(), X, y, sample_weight=w * c)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.weighted_n_node_samples, ref.tree_.weighted_n_node_samples, c)
    # ȳ(t), i(t), R(t) = Σ w (y - ȳ)² / W and α do not depend on the weights' unit
    for name in ("value", "impurity", "risk"):
        np.testing.assert_allclose(getattr(est.tree_, name), getattr(ref.tree_, name),
                                   rtol=1e-10, err_msg=name)
    np.testing.assert_allclose(est.tree_.alpha, ref.tree_.alpha, rtol=1e-8)


@pytest.mark.parametrize("k", [-900, -300, -70, 70, 300, 900])
def test_power_of_two_weights_are_exact(k):
    """Scaling by 2**k is exact in float64: every reported number scales bit for bit."""
    X, y = class_data(7)
    w = np.random.default_rng(8).integers(1, 6, size=y.shape[0]).astype(float)
    c = 2.0**k
    for est_cls, yy in ((CARTClassifier, y), (CARTRegressor, X[:, 0] + y)):
        ref = est_cls().fit(X, yy, sample_weight=w)
        est = quiet_fit(est_cls(), X, yy, sample_weight=w * c)
        assert_same_structure(est.tree_, ref.tree_)
        np.testing.assert_array_equal(est.tree_.weighted_n_node_samples,
                                      ref.tree_.weighted_n_node_samples * c)
        np.testing.assert_array_equal(est.tree_.risk, ref.tree_.risk)
        np.testing.assert_array_equal(est.tree_.alpha, ref.tree_.alpha)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), exponent=st.floats(-150, 150),
       classify=st.booleans(), ties=st.booleans())
def test_property_weights_scaled(seed, exponent, classify, ties):
    c = 10.0**exponent
    X, y = class_data(seed, n=80) if classify else reg_data(seed, n=80)
    if ties:  # tied values: the rank path of the split search
        X = np.round(X, 1)
    w = np.random.default_rng(seed + 1).uniform(0.25, 4.0, size=y.shape[0])
    est_cls = CARTClassifier if classify else CARTRegressor
    ref = est_cls().fit(X, y, sample_weight=w)
    est = quiet_fit(est_cls(), X, y, sample_weight=w * c)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.weighted_n_node_samples, ref.tree_.weighted_n_node_samples, c,
                  rtol=1e-11)
    np.testing.assert_allclose(est.tree_.risk, ref.tree_.risk, rtol=1e-9)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), exponent=st.floats(-150, 150),
       classify=st.booleans())
def test_property_uniform_weights_equal_unit(seed, exponent, classify):
    c = 10.0**exponent
    X, y = class_data(seed, n=80) if classify else reg_data(seed, n=80)
    est_cls = CARTClassifier if classify else CARTRegressor
    ref = est_cls().fit(X, y)
    est = quiet_fit(est_cls(), X, y, sample_weight=np.full(y.shape[0], c))
    assert_same_structure(est.tree_, ref.tree_)
    np.testing.assert_array_equal(est.tree_.risk, ref.tree_.risk)
    np.testing.assert_array_equal(est.tree_.weighted_n_node_samples,
                                  ref.tree_.n_node_samples * c)


# ------------------------------------------------------------------------ units: costs

@pytest.mark.parametrize("c", SCALES + [1e300, 1e308 / 5])
@pytest.mark.parametrize("priors", ["empirical", "equal", [0.2, 0.5, 0.3]])
def test_costs_scaled(c, priors):
    """R(t) and α are linear in C; the labels and the altered priors are not affected."""
    X, y = class_data(9)
    ref = CARTClassifier(cost=COST3, priors=priors).fit(X, y)
    est = quiet_fit(CARTClassifier(cost=COST3 * c, priors=priors), X, y)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.risk, ref.tree_.risk, c, rtol=1e-12)
    assert_scaled(est.tree_.alpha, ref.tree_.alpha, c, rtol=1e-9)
    np.testing.assert_array_equal(est.tree_.value, ref.tree_.value)
    path, ref_path = est.cost_complexity_path(), ref.cost_complexity_path()
    assert_scaled(path["alpha"], ref_path["alpha"], c, rtol=1e-9)
    assert_scaled(path["risk"], ref_path["risk"], c, rtol=1e-12)
    np.testing.assert_array_equal(path["n_leaves"], ref_path["n_leaves"])


def test_zero_one_cost_times_1e308():
    """The reported case: a one-leaf classifier with only a RuntimeWarning."""
    X, y = class_data(10)
    ref = CARTClassifier().fit(X, y)
    est = quiet_fit(CARTClassifier(cost=(1 - np.eye(3)) * 1e308), X, y)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.risk, ref.tree_.risk, 1e308)


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), exponent=st.floats(-150, 150), ties=st.booleans(),
       criterion=st.sampled_from(["gini", "entropy", "twoing"]))
def test_property_costs_scaled(seed, exponent, ties, criterion):
    c = 10.0**exponent
    X, y = class_data(seed, n=80)
    if ties:
        X = np.round(X, 1)
    cost = np.random.default_rng(seed).integers(1, 6, size=(3, 3)).astype(float)
    np.fill_diagonal(cost, 0.0)
    ref = CARTClassifier(criterion, cost=cost).fit(X, y)
    est = quiet_fit(CARTClassifier(criterion, cost=cost * c), X, y)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.risk, ref.tree_.risk, c, rtol=1e-11)
    assert_scaled(est.tree_.alpha, ref.tree_.alpha, c, rtol=1e-8)


# ---------------------------------------------------------------------------- units: y

@pytest.mark.parametrize("c", [1e-130, 2.0**-400, 1e-70, 1e70, 2.0**480, 1e150])
def test_regression_y_scaled(c):
    """ȳ × c; i(t), R(t), α × c² (c² itself may overflow: compare step by step)."""
    X, y = reg_data(11)
    ref = CARTRegressor().fit(X, y)
    est = quiet_fit(CARTRegressor(), X, y * c)
    assert_same_structure(est.tree_, ref.tree_)
    assert_scaled(est.tree_.value, ref.tree_.value, c, rtol=1e-12)
    for name in ("impurity", "risk"):
        assert_scaled(getattr(est.tree_, name) / c, getattr(ref.tree_, name), c,
                      rtol=1e-11)
    assert_scaled(est.tree_.alpha / c, ref.tree_.alpha, c, rtol=1e-8)


@pytest.mark.parametrize("c", [1e-200, 1e-140, 1e154, 1e200])
def test_regression_y_beyond_float64_refused(c):
    X, y = reg_data(12)
    with pytest.raises(ValueError, match=r"^y spans .*(overflow|underflow) float64"):
        CARTRegressor().fit(X, y * c)


def test_min_impurity_decrease_follows_y_units():
    """min_impurity_decrease is on Δi's scale, y²: scaling both by c² keeps the tree."""
    X, y = reg_data(13)
    ref = CARTRegressor(min_impurity_decrease=0.01).fit(X, y)
    c = 2.0**300
    est = quiet_fit(CARTRegressor(min_impurity_decrease=0.01 * c * c), X, y * c)
    assert_same_structure(est.tree_, ref.tree_)
    assert ref.tree_.n_leaves < CARTRegressor().fit(X, y).tree_.n_leaves


# ------------------------------------------------------------------------- units in CV

@pytest.mark.parametrize("c", [1e-150, 1e-40, 1e40, 1e150, 1e300])
def test_cv_classifier_costs_and_weights_scaled(c):
    """R^CV is linear in C and free of the weights' unit; its SE (rpart's xstd, which
    counts weights as cases) is linear in C and divided by sqrt(c) for weights × c, so
    the 1-SE choice may move with the weights' unit: compare the "min" rule there."""
    X, y = class_data(14, n=150)
    w = np.random.default_rng(15).uniform(0.5, 2.0, size=y.shape[0])
    ref = CARTClassifierCV(cost=COST3, cv=5).fit(X, y, sample_weight=w)
    by_cost = quiet_fit(CARTClassifierCV(cost=COST3 * c, cv=5), X, y, sample_weight=w)
    assert by_cost.best_index_ == ref.best_index_
    assert_same_structure(by_cost.tree_, ref.tree_)
    for col in ("cv_risk", "cv_se", "alpha", "alpha_prime", "risk"):
        assert_scaled(by_cost.cv_results_[col], ref.cv_results_[col], c, rtol=1e-8)
    np.testing.assert_allclose(by_cost.cv_results_["xerror"], ref.cv_results_["xerror"],
                               rtol=1e-9)
    ref_min = CARTClassifierCV(cost=COST3, cv=5, selection="min").fit(X, y, sample_weight=w)
    by_weight = quiet_fit(CARTClassifierCV(cost=COST3, cv=5, selection="min"), X, y,
                          sample_weight=w * c)
    assert by_weight.best_index_ == ref_min.best_index_
    assert_same_structure(by_weight.tree_, ref_min.tree_)
    for col in ("cv_risk", "alpha", "alpha_prime", "risk"):
        assert_scaled(by_weight.cv_results_[col], ref_min.cv_results_[col], 1.0, rtol=1e-8)
    assert_scaled(by_weight.cv_results_["cv_se"] * np.sqrt(c), ref_min.cv_results_["cv_se"],
                  1.0, rtol=1e-8)


@pytest.mark.parametrize("c", [1e-130, 1e-40, 1e40, 1e150])
def test_cv_regressor_y_and_weights_scaled(c):
    X, y = reg_data(16, n=150)
    ref = CARTRegressorCV(cv=5).fit(X, y)
    by_y = quiet_fit(CARTRegressorCV(cv=5), X, y * c)
    assert by_y.best_index_ == ref.best_index_
    assert_same_structure(by_y.tree_, ref.tree_)
    for col in ("cv_risk", "cv_se", "alpha", "risk"):
        assert_scaled(by_y.cv_results_[col] / c, ref.cv_results_[col], c, rtol=1e-8)
    w = np.random.default_rng(17).uniform(0.5, 2.0, size=y.shape[0])
    ref_w = CARTRegressorCV(cv=5, selection="min").fit(X, y, sample_weight=w)
    by_w = quiet_fit(CARTRegressorCV(cv=5, selection="min"), X, y, sample_weight=w * c)
    assert by_w.best_index_ == ref_w.best_index_
    np.testing.assert_allclose(by_w.cv_results_["cv_risk"], ref_w.cv_results_["cv_risk"],
                               rtol=1e-9)
    np.testing.assert_allclose(by_w.cv_results_["cv_se"] * np.sqrt(c),
                               ref_w.cv_results_["cv_se"], rtol=1e-8)


# ------------------------------------------------------------- refused: beyond float64

@pytest.mark.parametrize("weights, match", [
    (lambda n: np.where(np.arange(n) % 2 == 0, 1.0, 1e-70), "sample_weight spans"),
    (lambda n: np.where(np.arange(n) % 2 == 0, 1e300, 1e280), "sample_weight spans"),
    (lambda n: np.r_[np.ones(n - 1), 1e-13], "sample_weight spans"),
    (lambda n: np.full(n, 5e-324), "sample_weight has a positive entry"),
    (lambda n: np.full(n, 1e307), "sample_weight sums to more than"),
])
@pytest.mark.parametrize("est_cls", [CARTClassifier, CARTRegressor, CARTClassifierCV,
                                     CARTRegressorCV])
def test_weights_beyond_float64_refused(weights, match, est_cls):
    X, y = class_data(18)
    with pytest.raises(ValueError, match=match):
        est_cls().fit(X, y, sample_weight=weights(y.shape[0]))


@pytest.mark.parametrize("cost, match", [
    ([[0, 1, 1e-40], [1, 0, 1], [1, 1, 0]], "cost spans"),
    (np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]) * 1e-160, "cost has a positive entry"),
])
def test_costs_beyond_float64_refused(cost, match):
    X, y = class_data(19)
    with pytest.raises(ValueError, match=match):
        CARTClassifier(cost=cost).fit(X, y)


def test_priors_beyond_float64_refused():
    X, y = class_data(20)
    with pytest.raises(ValueError, match="priors span"):
        CARTClassifier(priors=[0.5, 0.5 - 1e-40, 1e-40]).fit(X, y)
    # a wide range that float64 carries is fitted, with the given priors
    est = quiet_fit(CARTClassifier(priors=[0.5, 0.5 - 1e-20, 1e-20]), X, y)
    np.testing.assert_array_equal(est.priors_, [0.5, 0.5 - 1e-20, 1e-20])
    assert np.all(np.isfinite(est.tree_.risk)) and est.tree_.n_leaves > 1


# ------------------------------------------------------------- unbounded requests

def test_huge_n_repeats_refused_up_front(monkeypatch):
    X, y = class_data(21, n=60)
    with pytest.raises(MemoryLimitError, match=r"n_repeats=10000000 partitions"):
        CARTClassifierCV(n_repeats=10**7).fit(X, y)
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "1M")
    with pytest.raises(MemoryLimitError, match=r"n_repeats=2000 partitions"):
        CARTRegressorCV(n_repeats=2000, cv=3).fit(X, X[:, 0])


def test_many_classes_refused_up_front(monkeypatch):
    rng = np.random.default_rng(22)
    X = rng.normal(size=(3000, 2))
    y = np.arange(3000)  # 3000 classes
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "64M")
    with pytest.raises(MemoryLimitError, match="default 0-1 cost matrix of 3000 classes"):
        CARTClassifier().fit(X, y)
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "100M")
    with pytest.raises(MemoryLimitError, match="a tree of 3000 classes"):
        CARTClassifier().fit(X, y)
    # a depth limit bounds the tables: 2**5 leaves of 3000 counts fit
    est = CARTClassifier(max_depth=5).fit(X, y)
    assert est.tree_.n_leaves <= 32


@pytest.mark.parametrize("params", [dict(max_leaf_nodes=10**30), dict(max_depth=10**30),
                                    dict(min_samples_split=10**30),
                                    dict(min_samples_leaf=10**30)])
def test_huge_integer_parameters_do_not_preallocate(params):
    X, y = class_data(23)
    est = CARTClassifier(**params).fit(X, y)
    ref = CARTClassifier().fit(X, y)
    if "max_leaf_nodes" in params or "max_depth" in params:  # no limit in effect
        assert_same_structure(est.tree_, ref.tree_)
    else:  # no node can split
        assert est.tree_.n_nodes == 1


# ---------------------------------------------------------------- misleading messages

@pytest.mark.parametrize("y_score, exc, match", [
    (lambda y: np.array(["a"] * y.shape[0]), TypeError, r"^y must be numeric"),
    (lambda y: np.full(y.shape[0], np.nan), ValueError, r"^Input y contains NaN"),
    (lambda y: y[:-1], ValueError, r"^y has 119 entries but X has 120 rows"),
    (lambda y: np.c_[y, y], ValueError, r"^y must be 1-dimensional"),
    (lambda y: y * 1e200, ValueError, r"^y spans"),
])
def test_regressor_score_names_y(y_score, exc, match):
    X, y = reg_data(24)
    est = CARTRegressor(max_depth=3).fit(X, y)
    with pytest.raises(exc, match=match):
        est.score(X, y_score(y))


def test_classifier_score_names_y():
    X, y = class_data(25)
    est = CARTClassifier(max_depth=3).fit(X, y)
    with pytest.raises(ValueError, match=r"^y must be 1-dimensional"):
        est.score(X, np.c_[y, y])
    assert est.score(X, y) == pytest.approx(np.mean(est.predict(X) == y))


def test_zero_weight_class_named_when_priors_sized_for_it():
    """Zero-weight cases are dropped rows; a label left with none is not in classes_,
    and priors/cost given for it are refused naming it."""
    X, y = class_data(26)
    labels = np.array(["ant", "bee", "cat"])[y]
    w = (y != 1).astype(float)
    with pytest.raises(ValueError, match=r"priors has 3 entries.*\['bee'\].*sample_weight 0"):
        CARTClassifier(priors=[0.2, 0.3, 0.5]).fit(X, labels, sample_weight=w)
    with pytest.raises(ValueError, match=r"cost has 3 entries.*\['bee'\]"):
        CARTClassifier(cost=COST3).fit(X, labels, sample_weight=w)
    with pytest.raises(ValueError, match=r"priors has 3 entries.*\['bee'\]"):
        CARTClassifierCV(priors=[0.2, 0.3, 0.5], cv=3).fit(X, labels, sample_weight=w)
    est = CARTClassifier(priors=[0.4, 0.6], cost=COST3[:2, :2] + [[0, 0], [1, 0]]).fit(
        X, labels, sample_weight=w)
    np.testing.assert_array_equal(est.classes_, ["ant", "cat"])
    dropped = CARTClassifier(priors=[0.4, 0.6], cost=COST3[:2, :2] + [[0, 0], [1, 0]]).fit(
        X[w > 0], labels[w > 0])
    assert_same_structure(est.tree_, dropped.tree_)


# -------------------------------------------------------------------------- battery

def _battery():
    """(id, estimator class, params, data transform, expectation).

    The transform maps the reference (X, y, w) to the adversarial one; the expectation is
    "same" (the reference tree), "scaled" (same structure, quantities rescaled; checked
    above in detail, here the structure only) or (exception, text the message contains).
    """
    cases = []
    classifiers = [CARTClassifier, CARTClassifierCV]
    regressors = [CARTRegressor, CARTRegressorCV]
    every = classifiers + regressors

    def add(name, ests, params, transform, expect):
        for est in ests:
            cases.append(pytest.param(est, params, transform, expect,
                                      id=f"{name}-{est.__name__}"))

    ident = lambda X, y, w: (X, y, w)  # noqa: E731
    for c in (1e-300, 1e-150, 1e-20, 1e20, 1e150, 1e300):
        # the CV's SE counts weights as cases (× 1/sqrt(c)), so its 1-SE choice moves
        # with the weights' unit: the CV estimators are compared on the "min" rule
        add(f"weights*{c:g}", every, {}, lambda X, y, w, c=c: (X, y, w * c), "same")
        add(f"uniform-weights={c:g}", every, {},
            lambda X, y, w, c=c: (X, y, np.full(y.shape[0], c)), "unit")
    for c in (1e-150, 1e-30, 1e30, 1e150, 1e300):
        add(f"cost*{c:g}", classifiers, {"cost": COST3 * c}, ident, "same-cost")
    for c in (1e-130, 1e-30, 1e30, 1e150):
        add(f"y*{c:g}", regressors, {}, lambda X, y, w, c=c: (X, y * c, w), "same")
    for c in (1e-200, 1e200):
        add(f"y*{c:g}", regressors, {}, lambda X, y, w, c=c: (X, y * c, w),
            (ValueError, "y spans"))
    for bad, text in ((np.nan, "sample_weight must be finite"),
                      (np.inf, "sample_weight must be finite"),
                      (-1.0, "sample_weight"), (1e-320, "sample_weight"),
                      (1e308, "sample_weight")):
        add(f"weight={bad:g}", every, {},
            lambda X, y, w, bad=bad: (X, y, np.r_[w[:-1], bad] if bad != 1e308
                                      else np.full(y.shape[0], bad)),
            (ValueError, text))
    for tiny in (1e-80, 1e-12):
        add(f"weights-range-{tiny:g}", every, {},
            lambda X, y, w, tiny=tiny: (X, y, np.r_[w[:-1], tiny]),
            (ValueError, "sample_weight spans"))
    for bad, text in ((np.nan, "cost must be finite"), (np.inf, "cost must be finite"),
                      (-1.0, "cost must be finite"), (1e-200, "cost has a positive"),
                      (1e-40, "cost spans")):
        cost = COST3.copy()
        cost[0, 1] = bad
        add(f"cost01={bad:g}", classifiers, {"cost": cost}, ident, (ValueError, text))
    for priors, text in (([0.5, 0.5, np.nan], "priors"), ([0.5, 0.5, np.inf], "priors"),
                         ([1.0, 1e-300, 1e-300], "priors span"),
                         ([0.5, 0.5], "priors must have one entry per class"),
                         ([0.5, 0.6, -0.1], "priors must all be > 0")):
        add(f"priors={priors}", classifiers, {"priors": priors}, ident, (ValueError, text))
    for name, value in (("max_depth", 10**30), ("max_leaf_nodes", 10**30)):
        add(f"{name}=huge", every, {name: value}, ident, "same")
    for name, value in (("min_samples_split", 10**30), ("min_samples_leaf", 10**30)):
        add(f"{name}=huge", every, {name: value}, ident, "root")
    for name, value, exc in (("max_depth", -(10**30), ValueError),
                             ("min_samples_leaf", 2.5, TypeError),
                             ("min_impurity_decrease", np.inf, ValueError),
                             ("min_impurity_decrease", np.nan, ValueError),
                             ("max_leaf_nodes", 1, ValueError)):
        add(f"{name}={value}", every, {name: value}, ident, (exc, name))
    for name, value, exc in (("cv", 10**30, ValueError), ("n_repeats", 10**7, ValueError),
                             ("n_repeats", 0, ValueError), ("random_state", -1, ValueError),
                             ("selection", np.inf, ValueError), ("cv", 2.5, TypeError)):
        add(f"{name}={value}", [CARTClassifierCV, CARTRegressorCV], {name: value}, ident,
            (exc, name))
    # a missing target drops its row, with a warning: the tree of the other rows
    add("y-nan", every, {}, lambda X, y, w: (X, np.r_[y[:-1], np.nan], w), "drop-last")
    add("y-inf", regressors, {}, lambda X, y, w: (X, np.r_[y[:-1], np.inf], w),
        (ValueError, "y contains infinity"))
    add("y-huge-int", regressors, {},
        lambda X, y, w: (X, np.array(list(y[:-1]) + [10**400], dtype=object), w),
        (ValueError, "Input y contains infinity or a value too large"))
    add("X-huge-int", every, {},
        lambda X, y, w: (np.array([[10**400] * X.shape[1]] + X[1:].tolist(), dtype=object),
                         y, w), (TypeError, "X must contain numbers"))
    add("weight-huge-int", every, {}, lambda X, y, w: (X, y, 10**400),
        (ValueError, "sample_weight must be finite"))
    add("weight-scalar-1e-200", every, {}, lambda X, y, w: (X, y, 1e-200), "unit")
    for name in ("min_impurity_decrease", "ccp_alpha"):
        add(f"{name}=huge-int", [CARTClassifier, CARTRegressor], {name: 10**400}, ident,
            (ValueError, name))
    add("priors-huge-int", classifiers, {"priors": [10**400, 1, 1]}, ident,
        (TypeError, "priors"))
    add("cost-huge-int", classifiers, {"cost": [[0, 10**400, 1], [1, 0, 1], [1, 1, 0]]},
        ident, (TypeError, "cost"))
    add("X-huge", every, {}, lambda X, y, w: (np.r_[X[:-1], [[1e308] * X.shape[1]]], y, w),
        "any")
    return cases


BATTERY = _battery()


def test_battery_size():
    """The battery's size is reported; it must not shrink by accident."""
    assert len(BATTERY) >= 150, len(BATTERY)


@pytest.mark.parametrize("est_cls, params, transform, expect", BATTERY)
def test_battery(est_cls, params, transform, expect):
    if est_cls in (CARTClassifier, CARTClassifierCV):
        X, y = class_data(30, n=90)
    else:
        X, y = reg_data(30, n=90)
    w = np.random.default_rng(31).uniform(0.5, 2.0, size=y.shape[0])
    extra = ({"cv": 3, "selection": "min"} if est_cls in (CARTClassifierCV, CARTRegressorCV)
             else {})
    extra = {k: v for k, v in extra.items() if k not in params}
    X2, y2, w2 = transform(X, y, w)
    if expect == "drop-last":
        with pytest.warns(UserWarning, match=f"y is missing on 1 of the {y.shape[0]} rows"):
            est = est_cls(**extra, **params).fit(X2, y2, sample_weight=w2)
        ref = est_cls(**extra, **params).fit(X[:-1], y[:-1], sample_weight=w[:-1])
        assert_same_structure(est.tree_, ref.tree_)
        return
    if isinstance(expect, tuple):
        exc, text = expect
        with pytest.raises(exc) as info:
            est_cls(**extra, **params).fit(X2, y2, sample_weight=w2)
        assert text in str(info.value), str(info.value)
        return
    est = quiet_fit(est_cls(**extra, **params), X2, y2, sample_weight=w2)
    if expect == "any":
        assert est.tree_.n_nodes >= 1 and np.all(np.isfinite(est.tree_.risk))
        return
    if expect == "root":
        assert est.tree_.n_nodes == 1
        return
    if expect == "unit":
        ref = est_cls(**extra).fit(X, y)
    elif expect == "same-cost":
        ref = est_cls(**extra, cost=COST3).fit(X, y, sample_weight=w)
    else:
        ref_params = {k: v for k, v in params.items()
                      if k not in ("max_depth", "max_leaf_nodes")}
        ref = est_cls(**extra, **ref_params).fit(X, y, sample_weight=w)
    assert_same_structure(est.tree_, ref.tree_)
    if y2 is y and est_cls in (CARTClassifier, CARTClassifierCV):
        np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    elif y2 is y:  # weighted means Σ w y / Σ w: rounding may differ in the last bit
        np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-14)
    if est_cls in (CARTClassifierCV, CARTRegressorCV):
        assert est.best_index_ == ref.best_index_


# ------------------------------------------------- the widest accepted range is carried

def _two_groups(seed, classify):
    """Group A (x < 0): one class / constant y. Group B (x > 0): a problem of its own.
    The root separates A from B; below it, B's subtree is B's own tree."""
    rng = np.random.default_rng(seed)
    n = 60
    xa = rng.uniform(-10, -1, size=(n, 2))
    xb = rng.uniform(1, 10, size=(n, 2))
    if classify:
        ya = np.zeros(n, dtype=int)
        yb = 1 + (xb[:, 0] + 0.5 * xb[:, 1] + rng.normal(scale=1.5, size=n) > 8).astype(int)
    else:
        ya = np.zeros(n)
        yb = 100 + np.sin(xb[:, 0]) + 0.3 * xb[:, 1] + rng.normal(scale=0.2, size=n)
    u = rng.uniform(0.5, 2.0, size=n)
    return xa, ya, xb, yb, u


@pytest.mark.parametrize("classify", [True, False])
@pytest.mark.parametrize("a_weight, b_exponent", [(1.0, -20), (1.0, -32),
                                                  (2.0**-990, -1021), (2.0**800, 768)])
def test_widest_weight_range_carried(classify, a_weight, b_exponent):
    """Weights spanning up to the accepted limit (the total is 2**39 of the smallest):
    B's cases (weights u 2**b) alone under a node must be split exactly as B alone with
    weights u: nothing vanishes or underflows."""
    xa, ya, xb, yb, u = _two_groups(40, classify)
    X, y = np.r_[xa, xb], np.r_[ya, yb]
    w = np.r_[np.full(xa.shape[0], a_weight), u * 2.0**b_exponent]
    est_cls = CARTClassifier if classify else CARTRegressor
    full = quiet_fit(est_cls(), X, y, sample_weight=w).tree_
    alone = est_cls().fit(xb, yb, sample_weight=u).tree_
    assert full.feature[0] == 0 and -1 < full.threshold[0] < 1
    assert full.left[full.left[0]] == -1  # A is a leaf
    b_side = full.threshold > 0.5
    np.testing.assert_array_equal(np.sort(full.threshold[b_side]),
                                  np.sort(alone.threshold[~np.isnan(alone.threshold)]))
    assert full.n_leaves == alone.n_leaves + 1
    rng = np.random.default_rng(41)
    probe = rng.uniform(1, 10, size=(300, 2))
    ours = est_cls().fit(X, y, sample_weight=w).predict(probe)
    if classify:
        np.testing.assert_array_equal(ours, est_cls().fit(xb, yb, sample_weight=u).predict(probe))
    else:
        np.testing.assert_allclose(ours, est_cls().fit(xb, yb, sample_weight=u).predict(probe),
                                   rtol=1e-13)


def test_one_step_beyond_the_widest_range_refused():
    xa, ya, xb, yb, u = _two_groups(42, False)
    w = np.r_[np.ones(xa.shape[0]), u * 2.0**-40]
    with pytest.raises(ValueError, match="sample_weight spans .* too small"):
        CARTRegressor().fit(np.r_[xa, xb], np.r_[ya, yb], sample_weight=w)


def test_cost_complexity_path_impurity_with_huge_costs():
    """p(t) under the altered priors (the impurity-weighted path) with costs near
    float64's largest: the row sums Σ_i C(i|j) must not overflow."""
    X, y = class_data(43)
    ref = CARTClassifier(cost=COST3).fit(X, y).cost_complexity_path(risk="impurity")
    big = quiet_fit(CARTClassifier(cost=COST3 * 3e307), X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = big.cost_complexity_path(risk="impurity")
    np.testing.assert_allclose(path["alpha"], ref["alpha"], rtol=1e-12)


@pytest.mark.parametrize("value", [1e150, -1e150, 1e-300, 5e-324])
def test_constant_extreme_y(value):
    """A constant y, however large or small, is one leaf with zero risk, also in CV."""
    X, _ = reg_data(44, n=40)
    y = np.full(40, value)
    est = quiet_fit(CARTRegressor(), X, y)
    assert est.tree_.n_nodes == 1 and est.tree_.risk[0] == 0
    assert est.predict(X[:1])[0] == pytest.approx(value, rel=1e-14)  # Σ w y / W, rounded
    cv = quiet_fit(CARTRegressorCV(cv=4), X, y)
    assert cv.tree_.n_nodes == 1
    # held-out errors are the rounding errors of the fold means: a few ulps of y
    bound = (abs(value) * 1e-15) ** 2
    for col in ("cv_risk", "cv_se"):
        assert np.all(np.isfinite(cv.cv_results_[col]))
        assert np.all(cv.cv_results_[col] <= bound), cv.cv_results_[col]


@pytest.mark.parametrize("value", [1e300, -1e160])
def test_constant_huge_y_refused(value):
    """Even a constant y this large is refused: the rounding errors of its means (one
    ulp of y) square beyond float64 in the held-out losses."""
    X, _ = reg_data(45, n=40)
    with pytest.raises(ValueError, match="^y spans .* overflow float64"):
        CARTRegressorCV(cv=4).fit(X, np.full(40, value))


@settings(**SETTINGS)
@given(seed=st.integers(0, 10**6), exponent=st.floats(-130, 150), ties=st.booleans())
def test_property_regression_y_scaled(seed, exponent, ties):
    c = 10.0**exponent
    X, y = reg_data(seed, n=80)
    if ties:
        X = np.round(X, 1)
    ref = CARTRegressor().fit(X, y)
    est = quiet_fit(CARTRegressor(), X, y * c)
    assert_same_structure(est.tree_, ref.tree_)
    # A node mean near zero is a difference of much larger responses: its rounding is
    # relative to the scale of y, not to the mean (seed 1189, exponent 1 gives a mean
    # that differs by 3.7e-12 of itself), hence the absolute part.
    scale = abs(c) * float(np.abs(ref.tree_.value).max())
    assert_scaled(est.tree_.value, ref.tree_.value, c, rtol=1e-12, atol=1e-12 * scale)
    assert_scaled(est.tree_.risk / c, ref.tree_.risk, c, rtol=1e-10)


# --------------------------------------------------------------------------- categorical

import pandas as pd  # noqa: E402


def _categorical_frame(seed, n=90, levels=("a", "b", "c", "d")):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"cat": rng.choice(list(levels), n), "x": rng.normal(size=n)})
    return X, rng


@pytest.mark.parametrize("levels", [
    (-1.7976931348623157e308, -5e-324, 0.0, 1.7976931348623157e308),   # extreme numbers
    (1.0, np.nextafter(1.0, 2.0), np.nextafter(np.nextafter(1.0, 2.0), 2.0), 2.0),  # 1 ulp
    ("", " ", "é", "\U0001F600"),                                         # odd strings
])
def test_extreme_levels_are_just_levels(levels):
    """Levels are matched by value: the tree depends only on which cases share a level,
    so any four distinct levels give the tree of the codes 0..3 in the same order."""
    rng = np.random.default_rng(50)
    codes = rng.integers(0, 4, 80)
    x = rng.normal(size=80)
    y = np.where(np.isin(codes, [0, 3]), 1.0, 0.0) + 0.3 * x + rng.normal(scale=0.1,
                                                                          size=80)
    values = np.asarray(levels, dtype=object)[codes]
    if isinstance(levels[0], float):
        values = values.astype(np.float64)
    X = np.empty((80, 2), dtype=object) if values.dtype == object else np.empty((80, 2))
    X[:, 0], X[:, 1] = values, x
    est = CARTRegressor(categorical_features=[0]).fit(X, y)
    ref = CARTRegressor(categorical_features=[0]).fit(
        np.column_stack([codes.astype(float), x]), y)
    assert sorted(est.categories_[0].tolist()) == sorted(levels)
    assert_same_structure(est.tree_, ref.tree_)
    np.testing.assert_array_equal(est.tree_.level_sets, ref.tree_.level_sets)
    np.testing.assert_array_equal(est.predict(X), ref.predict(np.column_stack(
        [codes.astype(float), x])))


def test_max_levels_is_accepted_and_one_more_refused():
    from cartjit._encoding import MAX_LEVELS
    n = MAX_LEVELS
    X = np.column_stack([np.arange(n, dtype=float), np.zeros(n)])
    y = np.arange(n) % 2
    est = CARTClassifier(categorical_features=[0], max_depth=1).fit(X, y)
    assert len(est.categories_[0]) == MAX_LEVELS
    X1 = np.column_stack([np.arange(n + 1, dtype=float), np.zeros(n + 1)])
    with pytest.raises(ValueError, match=f"column 0 has {n + 1} distinct levels"):
        CARTClassifier(categorical_features=[0]).fit(X1, np.arange(n + 1) % 2)


@pytest.mark.parametrize("est_cls", [CARTClassifier, CARTRegressor])
def test_categorical_weights_scaled_change_nothing(est_cls):
    """Weights × c: the same subset splits, weighted counts × c."""
    X, rng = _categorical_frame(51)
    y = (X["cat"].isin(["a", "d"]).to_numpy() ^ (X["x"].to_numpy() > 0.8)).astype(int)
    y = y if est_cls is CARTClassifier else y + rng.normal(scale=0.1, size=len(y))
    w = rng.integers(1, 4, size=len(y)).astype(float)
    ref = est_cls().fit(X, y, sample_weight=w)
    for c in (2.0**-30, 1e-200, 3e250):
        est = quiet_fit(est_cls(), X, y, sample_weight=w * c)
        assert_same_structure(est.tree_, ref.tree_)
        np.testing.assert_array_equal(est.tree_.level_sets, ref.tree_.level_sets)
        assert_scaled(est.tree_.weighted_n_node_samples, ref.tree_.weighted_n_node_samples,
                      c)


@pytest.mark.parametrize("est_cls", [CARTClassifier, CARTRegressor, CARTClassifierCV,
                                     CARTRegressorCV])
def test_categorical_integer_weights_equal_duplicated_rows(est_cls):
    X, rng = _categorical_frame(52, n=60)
    y = X["cat"].isin(["b", "c"]).to_numpy().astype(int)
    if est_cls in (CARTRegressor, CARTRegressorCV):
        y = y + rng.normal(scale=0.2, size=len(y))
    w = rng.integers(1, 4, size=len(y))
    dup = X.loc[X.index.repeat(w)].reset_index(drop=True)
    y_dup = np.repeat(y, w)
    kw = {"cv": 3} if est_cls in (CARTClassifierCV, CARTRegressorCV) else {}
    if kw:  # the CV partitions differ between the two; compare the full trees only
        a = est_cls(**kw).fit(X, y, sample_weight=w.astype(float)).tree_max_
        b = est_cls(**kw).fit(dup, y_dup).tree_max_
    else:
        a = est_cls().fit(X, y, sample_weight=w.astype(float)).tree_
        b = est_cls().fit(dup, y_dup).tree_
    for name in ("feature", "threshold", "left", "level_row"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.level_sets, b.level_sets)
    np.testing.assert_allclose(a.weighted_n_node_samples, b.weighted_n_node_samples,
                               rtol=1e-12)


@pytest.mark.parametrize("est_cls", [CARTClassifier, CARTRegressor])
@pytest.mark.parametrize("bad, error, words", [
    # (a None in the column is a missing value, accepted: tests/estimators/test_missing_input.py)
    (lambda X: X.assign(cat=np.where(X.index % 2, X["cat"], 7).astype(object)),
     TypeError, "mixes values of types"),
    (lambda X: X.assign(cat=X["cat"].str.encode("utf-8")), TypeError, "holds bytes"),
])
def test_categorical_battery_names_the_column(est_cls, bad, error, words):
    X, rng = _categorical_frame(53, n=40)
    y = rng.integers(0, 2, 40) if est_cls is CARTClassifier else rng.normal(size=40)
    with pytest.raises(error, match=f"column 'cat'.*{words}|{words}.*column 'cat'"):
        est_cls().fit(bad(X), y)
    fitted = est_cls().fit(X, y)
    with pytest.raises(error, match="column 'cat'"):
        fitted.predict(bad(X))
