"""Bad input gets a clear ValueError / TypeError naming the argument.

Never a Numba typing error, a crash inside a kernel or a silently wrong fit. Every test
matches the name of the offending argument in the message. ``cartjit.NotFittedError``
subclasses both ``ValueError`` and ``AttributeError``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cartjit
from cartjit import CARTClassifier, CARTRegressor, NotFittedError

ESTIMATORS = [CARTClassifier, CARTRegressor]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    return X, y


def target_for(est_cls, y):
    return y if est_cls is CARTClassifier else y.astype(float) * 2.5 + 0.25


# ----------------------------------------------------------------------------- X


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("bad, match", [(np.inf, "X contains infinity"),
                                        (-np.inf, "X contains infinity")])
def test_non_finite_X(est_cls, data, bad, match):
    """Infinity is refused in fit and predict (NaN is a missing value: it is accepted,
    tests/estimators/test_missing_input.py)."""
    X, y = data
    X = X.copy()
    X[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        est_cls().fit(X, target_for(est_cls, y))
    fitted = est_cls().fit(data[0], target_for(est_cls, y))
    with pytest.raises(ValueError, match=match):
        fitted.predict(X)


def test_infinity_among_missing_values_is_still_refused(data):
    X, y = data
    frame = pd.DataFrame({"a": pd.array([1, None] + [3] * 28, dtype="Int64"),
                          "b": np.r_[np.inf, X[1:, 0]]})
    with pytest.raises(ValueError, match="X contains infinity"):
        CARTClassifier().fit(frame, y)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_empty_X(est_cls):
    with pytest.raises(ValueError, match=r"0 sample\(s\).*X must have at least 1 sample"):
        est_cls().fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match=r"0 feature\(s\).*X must have at least one feature"):
        est_cls().fit(np.empty((5, 0)), np.zeros(5))


def test_one_sample_fits_a_single_leaf(data):
    """One case is a valid (if tiny) learning sample: the tree is the root alone."""
    X, _ = data
    clf = CARTClassifier().fit(X[:1], ["a"])
    assert clf.tree_.n_nodes == 1 and clf.get_n_leaves() == 1 and clf.get_depth() == 0
    assert list(clf.predict(X[:4])) == ["a"] * 4
    np.testing.assert_array_equal(clf.predict_proba(X[:4]), np.ones((4, 1)))
    reg = CARTRegressor().fit(X[:1], [3.5])
    assert reg.tree_.n_nodes == 1
    np.testing.assert_array_equal(reg.predict(X[:4]), np.full(4, 3.5))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_mismatched_lengths(est_cls, data):
    X, y = data
    match = r"inconsistent numbers of samples.*X has 30 rows but y has 29"
    with pytest.raises(ValueError, match=match):
        est_cls().fit(X, target_for(est_cls, y)[:-1])


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_wrong_number_of_features_at_predict(est_cls, data):
    X, y = data
    est = est_cls().fit(X, target_for(est_cls, y))
    for method in ("predict", "apply", "decision_path"):
        with pytest.raises(ValueError, match=r"X has 2 features, but .* is expecting 3 features"):
            getattr(est, method)(X[:, :2])
    with pytest.raises(ValueError, match=r"X has 4 features, but .* is expecting 3 features"):
        est.predict(np.c_[X, X[:, 0]])


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_sparse_input(est_cls, data):
    sparse = pytest.importorskip("scipy.sparse")
    X, y = data
    with pytest.raises(TypeError, match="X is a sparse matrix.*not supported"):
        est_cls().fit(sparse.csr_matrix(X), target_for(est_cls, y))
    est = est_cls().fit(X, target_for(est_cls, y))
    with pytest.raises(TypeError, match="X is a sparse matrix"):
        est.predict(sparse.csc_matrix(X))
    with pytest.raises(TypeError, match="y is sparse"):
        est_cls().fit(X, sparse.csr_matrix(target_for(est_cls, y).reshape(-1, 1)))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("shape", [(30, 3, 1), (30,), ()])
def test_X_not_2d(est_cls, data, shape):
    X, y = data
    bad = X.reshape(shape) if len(shape) == 3 else X[:, 0].reshape(shape) if shape else 3.0
    with pytest.raises(ValueError, match=r"Expected 2D array.*X must have shape"):
        est_cls().fit(bad, target_for(est_cls, y))
    est = est_cls().fit(X, target_for(est_cls, y))
    if shape:
        with pytest.raises(ValueError, match=r"Expected 2D array.*X must have shape"):
            est.predict(X.reshape(30, 3, 1))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_string_X(est_cls, data):
    X, y = data
    yt = target_for(est_cls, y)
    with pytest.raises(TypeError, match="X has string dtype"):
        est_cls().fit(np.array([["a", "b"]] * 30), yt)
    # Numeric-looking strings are not parsed behind the user's back either.
    with pytest.raises(TypeError, match="X has string dtype"):
        est_cls().fit(X.astype(str), yt)
    with pytest.raises(TypeError, match="X must contain numbers"):
        est_cls().fit(np.array([[1.0, "a"]] * 30, dtype=object), yt)
    # A string column is categorical by default; without categorical features it is
    # refused, naming the column.
    with pytest.raises(TypeError, match="X: column 'colour' has dtype"):
        est_cls(categorical_features=None).fit(pd.DataFrame({"colour": ["red", "blue"] * 15}),
                                               yt)
    est = est_cls().fit(X, yt)
    with pytest.raises(TypeError, match="X has string dtype"):
        est.predict(X.astype(str))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_complex(est_cls, data):
    X, y = data
    with pytest.raises(ValueError, match="Complex data not supported: X"):
        est_cls().fit(X + 1j, target_for(est_cls, y))
    with pytest.raises(ValueError, match="Complex data not supported: y"):
        est_cls().fit(X, target_for(est_cls, y) + 0j)


def test_other_X_dtypes(data):
    X, y = data
    with pytest.raises(TypeError, match="X must be numeric, got dtype datetime64"):
        CARTClassifier().fit(np.array(["2020-01-01"] * 30, dtype="datetime64[D]").reshape(-1, 1), y)
    with pytest.raises(TypeError, match="X must be an array-like"):
        CARTClassifier().fit(None, y)
    with pytest.raises(ValueError, match="X could not be converted"):
        CARTClassifier().fit([[1.0, 2.0], [3.0]], [0, 1])
    with pytest.raises(TypeError, match="X: feature names are only supported if all"):
        CARTClassifier().fit(pd.DataFrame(X, columns=["a", 1, "c"]), y)


# ----------------------------------------------------------------------------- y


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("bad, match", [(np.inf, "y contains infinity")])
def test_non_finite_y(est_cls, data, bad, match):
    """Infinity in y is refused (a NaN is a missing target: its row is dropped with a
    warning, tests/estimators/test_missing_input.py)."""
    X, y = data
    yy = target_for(est_cls, y).astype(float)
    yy[5] = bad
    with pytest.raises(ValueError, match=match):
        est_cls().fit(X, yy)


def test_none_labels_are_missing_targets(data):
    X, y = data
    labels = np.array(["a", "b"] * 15, dtype=object)
    labels[4] = None
    with pytest.warns(UserWarning, match="y is missing on 1 of the 30 rows"):
        est = CARTClassifier().fit(X, labels)
    np.testing.assert_array_equal(est.classes_, ["a", "b"])
    labels[:] = None
    with pytest.raises(ValueError, match="y is missing on every row"):
        CARTClassifier().fit(X, labels)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_bad_y_shape(est_cls, data):
    X, y = data
    with pytest.raises(ValueError, match="y must be 1-dimensional"):
        est_cls().fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="target y is None"):
        est_cls().fit(X, None)


def test_classifier_rejects_continuous_y(data):
    X, _ = data
    with pytest.raises(ValueError, match="Unknown label type: continuous. y"):
        CARTClassifier().fit(X, X[:, 0])


def test_classifier_rejects_mixed_label_types(data):
    X, _ = data
    with pytest.raises(TypeError, match="y mixes label types"):
        CARTClassifier().fit(X, np.array(["a", 1] * 15, dtype=object))


def test_regressor_rejects_string_y(data):
    X, _ = data
    with pytest.raises(TypeError, match="y must be numeric for regression"):
        CARTRegressor().fit(X, ["a"] * 30)


# ----------------------------------------------------------------------------- sample_weight


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_bad_sample_weight(est_cls, data):
    X, y = data
    yt = target_for(est_cls, y)
    w = np.ones(30)
    w[2] = -0.5
    with pytest.raises(ValueError, match="Negative values in data passed to sample_weight"):
        est_cls().fit(X, yt, sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight must have at least one positive"):
        est_cls().fit(X, yt, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(29,\), expected \(30,\)"):
        est_cls().fit(X, yt, sample_weight=np.ones(29))
    with pytest.raises(ValueError, match="sample_weight must be 1D array or scalar"):
        est_cls().fit(X, yt, sample_weight=np.ones((30, 1)))
    for bad in (np.nan, np.inf):
        ww = np.ones(30)
        ww[0] = bad
        with pytest.raises(ValueError, match="sample_weight must be finite"):
            est_cls().fit(X, yt, sample_weight=ww)
    ww[0] = np.nan
    with pytest.raises(ValueError, match=r"sample_weight has 1 missing \(NaN\) entries"):
        est_cls().fit(X, yt, sample_weight=ww)
    with pytest.raises(TypeError, match="sample_weight must be numeric"):
        est_cls().fit(X, yt, sample_weight=["a"] * 30)
    with pytest.raises(TypeError, match="sample_weight must be an array of weights or a number"):
        est_cls().fit(X, yt, sample_weight=True)
    with pytest.raises(ValueError, match="sample_weight must have at least one positive"):
        est_cls().fit(X, yt, sample_weight=0.0)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_bad_sample_weight_in_score(est_cls, data):
    X, y = data
    yt = target_for(est_cls, y)
    est = est_cls().fit(X, yt)
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(3,\), expected \(30,\)"):
        est.score(X, yt, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="Negative values in data passed to sample_weight"):
        est.score(X, yt, sample_weight=-np.ones(30))
    with pytest.raises(ValueError, match="sample_weight must have at least one positive"):
        est.score(X, yt, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match="y has 29 entries but X has 30 rows"):
        est.score(X, yt[:-1])


# ----------------------------------------------------------------------------- priors, cost


@pytest.mark.parametrize("priors, exc, match", [
    ([0.3, 0.3], ValueError, "priors must sum to 1, got sum 0.6"),
    ([0.3, 0.3, 0.4], ValueError, r"priors must have one entry per class \(2\)"),
    ([[0.5, 0.5]], ValueError, r"priors must have one entry per class \(2\)"),
    ([0.0, 1.0], ValueError, "priors must all be > 0"),
    ([-0.5, 1.5], ValueError, "priors must all be > 0"),
    ([np.nan, 0.5], ValueError, "priors must all be > 0"),
    ("uniform", ValueError, r"priors must be one of \['empirical', 'equal'\]"),
    (["a", "b"], TypeError, "priors must be 'empirical', 'equal' or an array"),
    ({0: 0.5, 1: 0.5}, TypeError, "priors must be 'empirical', 'equal' or an array"),
])
def test_bad_priors(data, priors, exc, match):
    X, y = data
    with pytest.raises(exc, match=match):
        CARTClassifier(priors=priors).fit(X, y)


@pytest.mark.parametrize("cost, exc, match", [
    (np.ones((3, 3)) - np.eye(3), ValueError, r"cost must have shape \(2, 2\).*got shape \(3, 3\)"),
    ([0, 1], ValueError, r"cost must have shape \(2, 2\)"),
    ([[0, -1], [1, 0]], ValueError, "cost must be finite and >= 0"),
    ([[0, np.nan], [1, 0]], ValueError, "cost must be finite and >= 0"),
    ([[0, np.inf], [1, 0]], ValueError, "cost must be finite and >= 0"),
    ([[1, 1], [1, 0]], ValueError, "cost must have a zero diagonal"),
    ([[0, 0], [1, 0]], ValueError, "cost row 0 .* is all zero"),
    ("high", TypeError, "cost must be a numeric array"),
])
def test_bad_cost(data, cost, exc, match):
    X, y = data
    with pytest.raises(exc, match=match):
        CARTClassifier(cost=cost).fit(X, y)


# ----------------------------------------------------------------------------- hyper-parameters


@pytest.mark.parametrize("est_cls, criterion", [
    (CARTClassifier, "mse"), (CARTClassifier, "squared_error"), (CARTClassifier, None),
    (CARTClassifier, ["gini"]), (CARTClassifier, "Gini"),
    (CARTRegressor, "gini"), (CARTRegressor, "absolute_error"),
])
def test_unknown_criterion(data, est_cls, criterion):
    X, y = data
    with pytest.raises(ValueError, match="criterion must be one of"):
        est_cls(criterion=criterion).fit(X, target_for(est_cls, y))


INT_PARAMS = [("max_depth", 0, True), ("min_samples_split", 2, False),
              ("min_samples_leaf", 1, False), ("max_leaf_nodes", 2, True)]


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("name, low, allows_none", INT_PARAMS)
@pytest.mark.parametrize("value", [True, False, np.True_, 2.0, 1.5, "3", [3]])
def test_integer_parameter_types(est_cls, data, name, low, allows_none, value):
    X, y = data
    with pytest.raises(TypeError, match=f"{name} must be an integer >= {low}"):
        est_cls(**{name: value}).fit(X, target_for(est_cls, y))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("name, low, allows_none", INT_PARAMS)
def test_integer_parameter_values(est_cls, data, name, low, allows_none):
    X, y = data
    yt = target_for(est_cls, y)
    for value in (low - 1, -5):
        with pytest.raises(ValueError, match=f"{name} must be >= {low}, got {value}"):
            est_cls(**{name: value}).fit(X, yt)
    est_cls(**{name: low}).fit(X, yt)  # the smallest allowed value fits
    est_cls(**{name: np.int64(low + 1)}).fit(X, yt)  # numpy integers are integers
    if allows_none:
        est_cls(**{name: None}).fit(X, yt)
    else:
        with pytest.raises(TypeError, match=f"{name} must be an integer"):
            est_cls(**{name: None}).fit(X, yt)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("name", ["min_impurity_decrease", "ccp_alpha"])
def test_float_parameters(est_cls, data, name):
    X, y = data
    yt = target_for(est_cls, y)
    for value in (True, "0.1", [0.1]):
        with pytest.raises(TypeError, match=f"{name} must be a real number"):
            est_cls(**{name: value}).fit(X, yt)
    for value in (-0.1, np.nan, np.inf):
        with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0"):
            est_cls(**{name: value}).fit(X, yt)
    est_cls(**{name: 0}).fit(X, yt)


def test_set_params_unknown_name():
    with pytest.raises(ValueError,
                       match="Invalid parameter 'max_dept' for estimator CARTClassifier"):
        CARTClassifier().set_params(max_dept=3)
    with pytest.raises(ValueError, match="Invalid parameter 'priors' for estimator CARTRegressor"):
        CARTRegressor().set_params(priors="equal")


def test_bad_parameters_leave_no_fitted_state(data):
    """A fit that fails on a bad parameter must not leave the estimator looking fitted."""
    X, y = data
    est = CARTClassifier(max_depth=-1)
    with pytest.raises(ValueError):
        est.fit(X, y)
    with pytest.raises(NotFittedError):
        est.predict(X)


# ----------------------------------------------------------------------------- not fitted


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_not_fitted(est_cls, data):
    X, y = data
    est = est_cls()
    methods = [("predict", (X,)), ("apply", (X,)), ("decision_path", (X,)),
               ("get_depth", ()), ("get_n_leaves", ()), ("score", (X, target_for(est_cls, y)))]
    if est_cls is CARTClassifier:
        methods += [("predict_proba", (X,)), ("predict_log_proba", (X,))]
    for method, args in methods:
        with pytest.raises(NotFittedError,
                           match=f"This {est_cls.__name__} instance is not fitted yet"):
            getattr(est, method)(*args)
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert cartjit.NotFittedError is NotFittedError


def test_not_fitted_is_also_sklearns():
    exceptions = pytest.importorskip("sklearn.exceptions")
    with pytest.raises(exceptions.NotFittedError):
        CARTClassifier().predict(np.zeros((2, 2)))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_huge_integer_parameters_mean_no_limit(est_cls, data):
    """Integers beyond int64 are valid values (no limit), not a crash in the kernel."""
    X, y = data
    yt = target_for(est_cls, y)
    ref = est_cls().fit(X, yt)
    for name in ("max_depth", "max_leaf_nodes"):
        est = est_cls(**{name: 10**30}).fit(X, yt)
        assert est.get_params()[name] == 10**30
        np.testing.assert_array_equal(est.tree_.threshold, ref.tree_.threshold)
    for name in ("min_samples_split", "min_samples_leaf"):
        assert est_cls(**{name: 10**30}).fit(X, yt).get_n_leaves() == 1
