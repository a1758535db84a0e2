"""Categorical input: which columns are categorical, their levels, codes and the errors.

The encoding layer (cartjit._encoding) is checked through the estimators' parameter
``categorical_features`` and their fitted attributes ``is_categorical_`` and
``categories_``: every accepted form of the parameter, every refusal (with the argument
or the column named), prediction-time checks of names and dtypes, unseen levels (one
warning, never an error), and scikit-learn compatibility with string columns. The
expected levels and codes are written from the data by hand, not read from the code.
"""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit import _encoding as E
from cartjit.datasets import load_play_golf

ESTIMATORS = [CARTClassifier, CARTRegressor]


def target_for(cls, n, seed=0):
    rng = np.random.default_rng(seed)
    if cls in (CARTClassifier, CARTClassifierCV):
        return np.array(["a", "b", "c"])[rng.integers(0, 3, n)]
    return rng.normal(size=n)


def mixed_frame(n=40, seed=0):
    """One column of each kind: string, unordered category, ordered category, bool, float."""
    rng = np.random.default_rng(seed)
    colour = np.array(["red", "green", "blue"])[rng.integers(0, 3, n)]
    shape = pd.Categorical(np.array(["square", "circle"])[rng.integers(0, 2, n)],
                           categories=["square", "circle", "star"])
    size = pd.Categorical(np.array(["S", "M", "L"])[rng.integers(0, 3, n)],
                          categories=["S", "M", "L"], ordered=True)
    return pd.DataFrame({"colour": colour, "shape": shape, "size": size,
                         "flag": rng.integers(0, 2, n).astype(bool),
                         "x": rng.normal(size=n)})


# --------------------------------------------------------------------------- from_dtype

@pytest.mark.parametrize("cls", ESTIMATORS)
def test_from_dtype_kinds_and_levels(cls):
    X = mixed_frame()
    est = cls().fit(X, target_for(cls, len(X)))
    # string, unordered category and bool are subset-split features; the ordered
    # category is ordinal (threshold splits on its order); the float column is numeric
    np.testing.assert_array_equal(est.is_categorical_, [True, True, False, True, False])
    assert list(est.categories_[0]) == ["blue", "green", "red"]          # sorted values
    assert list(est.categories_[1]) == ["square", "circle", "star"]      # declared order
    assert list(est.categories_[2]) == ["S", "M", "L"]                   # kept for display
    assert list(est.categories_[3]) == [False, True]
    assert est.categories_[4] is None
    assert est.n_features_in_ == 5
    assert list(est.feature_names_in_) == ["colour", "shape", "size", "flag", "x"]


def test_codes_are_the_level_positions():
    X = mixed_frame()
    arr, names, enc = E.fit_encode(X, "from_dtype")
    expected_colour = {"blue": 0.0, "green": 1.0, "red": 2.0}
    np.testing.assert_array_equal(arr[:, 0], [expected_colour[v] for v in X["colour"]])
    expected_shape = {"square": 0.0, "circle": 1.0, "star": 2.0}
    np.testing.assert_array_equal(arr[:, 1], [expected_shape[v] for v in X["shape"]])
    np.testing.assert_array_equal(arr[:, 2], [{"S": 0.0, "M": 1.0, "L": 2.0}[v]
                                              for v in X["size"]])
    np.testing.assert_array_equal(arr[:, 3], X["flag"].astype(float))
    np.testing.assert_array_equal(arr[:, 4], X["x"])
    assert arr.flags.c_contiguous and arr.dtype == np.float64
    # n_levels: L for subset-split features, 0 for ordinal and numeric ones
    np.testing.assert_array_equal(enc.n_levels, [3, 3, 0, 2, 0])
    assert list(enc.kind) == [E.NOMINAL, E.NOMINAL, E.ORDINAL, E.NOMINAL, E.NUMERIC]


def test_numeric_frame_and_numpy_have_no_categorical_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = target_for(CARTClassifier, 30)
    for data in (X, pd.DataFrame(X, columns=["a", "b", "c"])):
        est = CARTClassifier().fit(data, y)
        assert not est.is_categorical_.any()
        assert est.categories_ == [None, None, None]
    # with no categorical feature the tree is the plain numeric one
    est = CARTClassifier().fit(X, y)
    ref = CARTClassifier(categorical_features=None).fit(X, y)
    np.testing.assert_array_equal(est.tree_.threshold, ref.tree_.threshold)


def test_string_levels_are_matched_whatever_the_spelling_order():
    """Renaming levels while keeping their sorted order changes nothing but the names."""
    X = mixed_frame(60, seed=3)[["colour", "x"]]
    y = target_for(CARTClassifier, 60, seed=3)
    renamed = X.assign(colour=X["colour"].map({"blue": "a", "green": "b", "red": "c"}))
    a = CARTClassifier().fit(X, y)
    b = CARTClassifier().fit(renamed, y)
    for field in ("feature", "threshold", "left", "n_node_samples", "level_row"):
        np.testing.assert_array_equal(getattr(a.tree_, field), getattr(b.tree_, field))
    np.testing.assert_array_equal(a.tree_.level_sets, b.tree_.level_sets)
    assert list(b.categories_[0]) == ["a", "b", "c"]


# --------------------------------------------------------------------------- explicit forms

@pytest.mark.parametrize("spec", [[0, 1, 3], ["colour", "shape", "flag"],
                                  [True, True, False, True, False],
                                  np.array([0, 1, 3]), np.array([True, True, False, True,
                                                                 False])])
def test_explicit_forms_agree(spec):
    X = mixed_frame()
    y = target_for(CARTClassifier, len(X))
    est = CARTClassifier(categorical_features=spec).fit(X, y)
    np.testing.assert_array_equal(est.is_categorical_, [True, True, False, True, False])
    assert list(est.categories_[1]) == ["square", "circle", "star"]
    ref = CARTClassifier().fit(X, y)  # from_dtype finds the same columns
    np.testing.assert_array_equal(est.tree_.feature, ref.tree_.feature)


def test_listing_a_numeric_column_makes_its_values_the_levels():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"code": rng.choice([10, 30, 20], 40), "x": rng.normal(size=40)})
    est = CARTRegressor(categorical_features=["code"]).fit(X, rng.normal(size=40))
    assert est.is_categorical_.tolist() == [True, False]
    assert est.categories_[0].tolist() == [10, 20, 30]


def test_listing_an_ordered_category_gives_subset_splits():
    X = mixed_frame()
    est = CARTClassifier(categorical_features=["size"]).fit(
        X[["size", "x"]], target_for(CARTClassifier, len(X)))
    assert est.is_categorical_.tolist() == [True, False]
    assert list(est.categories_[0]) == ["S", "M", "L"]


def test_bool_not_listed_is_numeric():
    X = mixed_frame()[["flag", "x"]]
    est = CARTClassifier(categorical_features=[1]).fit(X, target_for(CARTClassifier, 40))
    assert est.is_categorical_.tolist() == [False, True]
    assert est.categories_[0] is None


def test_none_keeps_ordered_categoricals_ordinal_and_refuses_strings():
    X = mixed_frame()
    y = target_for(CARTClassifier, len(X))
    est = CARTClassifier(categorical_features=None).fit(X[["size", "flag", "x"]], y)
    assert not est.is_categorical_.any()
    assert list(est.categories_[0]) == ["S", "M", "L"]
    with pytest.raises(TypeError, match=r"column 'colour' has dtype .* list it in "
                                        r"categorical_features"):
        CARTClassifier(categorical_features=None).fit(X, y)
    with pytest.raises(TypeError, match="column 'shape' is an unordered pandas categorical "
                                        "but is not listed in categorical_features"):
        CARTClassifier(categorical_features=["colour"]).fit(X, y)


def test_numpy_input_with_listed_columns():
    rng = np.random.default_rng(4)
    X = np.column_stack([rng.choice([2.5, -1.0, 7.0], 50), rng.normal(size=50)])
    est = CARTRegressor(categorical_features=[0]).fit(X, rng.normal(size=50))
    assert est.categories_[0].tolist() == [-1.0, 2.5, 7.0]
    assert est.is_categorical_.tolist() == [True, False]
    # strings in an object array
    Xo = np.empty((50, 2), dtype=object)
    Xo[:, 0] = rng.choice(["b", "a", "c"], 50)
    Xo[:, 1] = rng.normal(size=50)
    est = CARTClassifier(categorical_features=np.array([True, False])).fit(
        Xo, target_for(CARTClassifier, 50))
    assert est.categories_[0].tolist() == ["a", "b", "c"]
    assert not hasattr(est, "feature_names_in_")
    # a NumPy string array: every column listed
    Xs = np.array([["x", "p"], ["y", "q"], ["x", "q"], ["y", "p"]] * 5)
    est = CARTClassifier(categorical_features=[0, 1]).fit(Xs, ["u", "v", "u", "v"] * 5)
    assert est.categories_[1].tolist() == ["p", "q"]


def test_numpy_from_dtype_still_refuses_strings():
    Xs = np.array([["x", "p"], ["y", "q"]] * 5)
    with pytest.raises(TypeError, match="X has string dtype.*categorical_features"):
        CARTClassifier().fit(Xs, [0, 1] * 5)
    # a string column that is not listed is never parsed as numbers
    with pytest.raises(TypeError, match="column 1 has strings"):
        CARTClassifier(categorical_features=[0]).fit(Xs, [0, 1] * 5)


# --------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("spec, error, words", [
    ([5], ValueError, r"feature indices \[5\] out of range: X has 5 features"),
    ([-1], ValueError, r"feature indices \[-1\] out of range"),
    (["colour", "hue"], ValueError, r"names \['hue'\], which are not columns of X"),
    ([True, False], ValueError, r"boolean mask must have one entry per feature \(5\), got 2"),
    ([0, 0], ValueError, r"lists \[0\] more than once"),
    (["x", "x"], ValueError, r"lists \['x'\] more than once"),
    ([0.0, 1.0], TypeError, r"entries of type\(s\) \['float'\]"),
    ([0, "x"], TypeError, r"entries of type\(s\) \['int', 'str'\]"),
    (3, TypeError, r"to list one column give a list, e.g. \[3\]"),
    ("colour", ValueError, r"got the string 'colour' \(to list one column, give a list"),
    ("auto", ValueError, r"categorical_features must be 'from_dtype', None"),
    ([[0, 1]], ValueError, "one-dimensional"),
])
def test_bad_categorical_features(spec, error, words):
    X = mixed_frame()
    with pytest.raises(error, match=words):
        CARTClassifier(categorical_features=spec).fit(X, target_for(CARTClassifier, 40))


def test_names_with_numpy_input_are_refused():
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="lists feature names .* but X has no feature names"):
        CARTRegressor(categorical_features=["a"]).fit(X, np.arange(10.0))


def test_empty_list_means_no_categorical_feature():
    X = mixed_frame()[["flag", "x"]]
    est = CARTRegressor(categorical_features=[]).fit(X, np.arange(40.0))
    assert not est.is_categorical_.any()


def test_mixed_types_are_refused_naming_column_and_types():
    X = pd.DataFrame({"m": np.array(["a", 1, "b", 2.5] * 5, dtype=object),
                      "x": np.arange(20.0)})
    with pytest.raises(TypeError, match=r"column 'm' mixes values of types "
                                        r"\['float', 'int', 'str'\]"):
        CARTClassifier().fit(X, [0, 1] * 10)
    X = pd.DataFrame({"m": np.array([True, 1] * 10, dtype=object)})
    with pytest.raises(TypeError, match="column 'm' mixes values of types"):
        CARTClassifier().fit(X, [0, 1] * 10)


def test_other_value_types_are_refused():
    import datetime
    X = pd.DataFrame({"d": np.array([datetime.date(2020, 1, i % 3 + 1) for i in range(12)],
                                    dtype=object)})
    with pytest.raises(TypeError, match="column 'd' holds values of type date"):
        CARTClassifier().fit(X, [0, 1] * 6)


def test_too_many_levels_are_refused_naming_column_and_count():
    n = E.MAX_LEVELS + 1
    X = pd.DataFrame({"id": [f"case{i}" for i in range(n)], "x": np.zeros(n)})
    with pytest.raises(ValueError, match=rf"column 'id' has {n} distinct levels, more than "
                                         rf"MAX_LEVELS = {E.MAX_LEVELS}"):
        CARTRegressor().fit(X, np.arange(float(n)))


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_missing_values_in_a_categorical_column(missing):
    """A missing value is no level: it is NaN for the engine (docs/maths.md §8)."""
    values = np.array(["a", "b", "a", missing] * 5, dtype=object)
    X = pd.DataFrame({"c": values, "x": np.arange(20.0)})
    est = CARTClassifier().fit(X, [0, 1] * 10)
    assert list(est.categories_[0]) == ["a", "b"]
    # and in a pandas category, a bool column with pd.NA, and a listed NumPy column
    X["c"] = pd.Categorical(values)
    assert list(CARTClassifier().fit(X, [0, 1] * 10).categories_[0]) == ["a", "b"]
    X = pd.DataFrame({"b": pd.array([True, None, False, True] * 5, dtype="boolean")})
    with pytest.warns(UserWarning, match="5 rows are missing every feature"):
        assert list(CARTClassifier().fit(X, [0, 1] * 10).categories_[0]) == [False, True]
    Xn = np.column_stack([np.array([1.0, np.nan, 2.0, 1.0] * 5), np.arange(20.0)])
    est = CARTClassifier(categorical_features=[0]).fit(Xn, [0, 1] * 10)
    assert list(est.categories_[0]) == [1.0, 2.0]


def test_a_single_level_warns():
    X = pd.DataFrame({"c": ["only"] * 10, "x": np.arange(10.0)})
    y = np.arange(10.0) ** 2
    with pytest.warns(UserWarning, match="column 'c' has a single level in the training "
                                         "data \\('only'\\): it can never be split on"):
        CARTRegressor().fit(X, y)
    # a declared category with one level present warns too
    X["c"] = pd.Categorical(["p"] * 10, categories=["p", "q"])
    with pytest.warns(UserWarning, match="column 'c' has a single level"):
        CARTRegressor().fit(X, y)


def test_a_feature_equal_to_the_target_warns():
    X = load_play_golf()
    with pytest.warns(UserWarning, match="feature 'play' equals the target y on every row"):
        CARTClassifier().fit(X, X["play"])
    rng = np.random.default_rng(5)
    Xn = rng.normal(size=(30, 2))
    with pytest.warns(UserWarning, match="feature 1 equals the target"):
        CARTRegressor().fit(Xn, Xn[:, 1].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CARTRegressor().fit(Xn, Xn[:, 1] + 1.0)  # merely related: no warning


@pytest.mark.parametrize("value, error", [(0, ValueError), (-3, ValueError),
                                          (2.5, TypeError), (True, TypeError),
                                          ("12", TypeError)])
def test_max_categories_exhaustive_is_checked(value, error):
    X = mixed_frame()
    with pytest.raises(error, match="max_categories_exhaustive must be"):
        CARTClassifier(max_categories_exhaustive=value).fit(X, target_for(CARTClassifier, 40))
    with pytest.raises(error, match="max_categories_exhaustive must be"):
        CARTClassifierCV(max_categories_exhaustive=value, cv=3).fit(
            X, target_for(CARTClassifier, 40))


def test_regressors_have_no_max_categories_exhaustive():
    assert "max_categories_exhaustive" in CARTClassifier().get_params()
    assert "max_categories_exhaustive" in CARTClassifierCV().get_params()
    assert "max_categories_exhaustive" not in CARTRegressor().get_params()
    assert "max_categories_exhaustive" not in CARTRegressorCV().get_params()
    for cls in (CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV):
        assert cls().get_params()["categorical_features"] == "from_dtype"


# --------------------------------------------------------------------------- predicting

@pytest.fixture(scope="module")
def fitted():
    X = mixed_frame(80, seed=7)
    y = target_for(CARTClassifier, 80, seed=7)
    return CARTClassifier(max_depth=3).fit(X, y), X


def test_predict_matches_by_value_not_by_category_codes(fitted):
    est, X = fitted
    ref = est.predict(X)
    reordered = X.assign(shape=X["shape"].cat.reorder_categories(["star", "circle",
                                                                  "square"]),
                         colour=pd.Categorical(X["colour"]))  # category instead of str
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every level was seen: no warning
        np.testing.assert_array_equal(est.predict(reordered), ref)
        np.testing.assert_array_equal(est.predict(X.astype({"colour": object})), ref)


def test_predict_checks_names_and_dtypes(fitted):
    est, X = fitted
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(X.rename(columns={"colour": "hue"}))
    with pytest.raises(TypeError, match="column 'x' was numeric in fit but holds "
                                        "non-numeric values here"):
        est.predict(X.assign(x=X["x"].astype(str)))
    with pytest.raises(TypeError, match="column 'x' was numeric in fit but is a pandas "
                                        "categorical here"):
        est.predict(X.assign(x=pd.Categorical(X["x"])))
    with pytest.raises(TypeError, match="categorical column 'colour' held strings in fit "
                                        "but holds numbers here"):
        est.predict(X.assign(colour=np.arange(len(X))))
    with pytest.raises(TypeError, match="categorical column 'flag' held booleans in fit "
                                        "but holds strings here"):
        est.predict(X.assign(flag=X["flag"].astype(str)))
    assert est.predict(X.assign(colour=X["colour"].where(X.index != 3, None))).shape == (
        len(X),)  # a missing value: routed by surrogates or the majority
    with pytest.raises(ValueError, match="X has 4 features, but CARTClassifier is "
                                         "expecting 5"):
        est.predict(X.iloc[:, :4].to_numpy())


def test_unseen_levels_warn_once_and_never_raise(fitted):
    est, X = fitted
    Xu = X.copy()
    Xu["colour"] = Xu["colour"].astype(object)
    Xu.loc[[0, 1, 2], "colour"] = ["purple", "teal", "purple"]
    Xu["shape"] = Xu["shape"].cat.add_categories(["hexagon"])
    Xu.loc[5, "shape"] = "hexagon"
    with pytest.warns(UserWarning) as record:
        pred = est.predict(Xu)
    texts = [str(w.message) for w in record if "not seen in fit" in str(w.message)]
    assert len(texts) == 1, texts
    text = texts[0]
    assert "column 'colour': 3 rows ('purple', 'teal')" in text
    assert "column 'shape': 1 row ('hexagon')" in text
    assert "treated as a missing value" in text
    assert pred.shape == (len(X),)
    # the encoded rows carry code -1 (the engine routes it to the majority child)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        codes = E.transform(Xu, est._encoding, 5, est)
    assert codes[0, 0] == codes[1, 0] == codes[2, 0] == -1.0
    assert codes[5, 1] == -1.0 and codes[4, 1] >= 0


def test_unseen_levels_of_an_ordinal_feature(fitted):
    est, X = fitted
    bigger = pd.CategoricalDtype(["XS", "S", "M", "L", "XL"], ordered=True)
    Xo = X.assign(size=X["size"].astype(str).astype(bigger))
    Xo.loc[[0, 1], "size"] = ["XS", "XL"]
    with pytest.warns(UserWarning, match=r"column 'size': 2 rows \('XS', 'XL'\).*placed "
                                         "between its neighbours"):
        codes = E.transform(Xo, est._encoding, 5, est)
    # XS comes before S (code 0), XL after L (code 2)
    assert codes[0, 2] == -0.5 and codes[1, 2] == 2.5
    # as plain strings its place is unknown: a clear error
    Xs = X.assign(size=X["size"].astype(str))
    Xs.loc[0, "size"] = "XL"
    with pytest.raises(ValueError, match="ordinal column 'size' holds levels not seen in "
                                         r"fit \('XL'\), whose place in the order is unknown"):
        est.predict(Xs)


def test_numpy_predict_after_numpy_fit_with_unseen_numbers():
    rng = np.random.default_rng(8)
    X = np.column_stack([rng.choice([1.0, 2.0, 3.0], 60), rng.normal(size=60)])
    est = CARTRegressor(categorical_features=[0]).fit(X, rng.normal(size=60))
    X2 = X[:5].copy()
    X2[0, 0] = 4.0
    with pytest.warns(UserWarning, match=r"column 0: 1 row \(4.0\)"):
        est.predict(X2)
    with pytest.raises(TypeError, match="categorical column 0 held numbers in fit but "
                                        "holds strings"):
        est.predict(X2.astype(str))


# --------------------------------------------------------------------------- scikit-learn

def test_clone_pickle_cross_val_score_and_pipeline_with_string_columns():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y = load_play_golf(return_X_y=True)
    X = pd.concat([X] * 3, ignore_index=True)
    y = pd.concat([y] * 3, ignore_index=True)
    est = CARTClassifier(categorical_features=["temperature", "humidity"])
    copy = clone(est)
    assert copy.get_params()["categorical_features"] == ["temperature", "humidity"]
    scores = cross_val_score(CARTClassifier(), X, y, cv=3)
    assert scores.shape == (3,) and np.all((0 <= scores) & (scores <= 1))
    pipe = make_pipeline(FunctionTransformer(lambda f: f.copy()), CARTClassifier())
    pipe.fit(X, y)
    np.testing.assert_array_equal(pipe.predict(X), CARTClassifier().fit(X, y).predict(X))
    fitted = CARTClassifierCV(cv=3).fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(X), fitted.predict(X))
    assert list(again.categories_[0]) == ["high", "normal"]
    assert sklearn  # imported for its model selection tools


def test_cv_estimators_take_categorical_features():
    X = mixed_frame(60, seed=9)
    yc = target_for(CARTClassifier, 60, seed=9)
    yr = target_for(CARTRegressor, 60, seed=9)
    for est, y in ((CARTClassifierCV(cv=3), yc), (CARTRegressorCV(cv=3), yr)):
        est.fit(X, y)
        np.testing.assert_array_equal(est.is_categorical_, [True, True, False, True, False])
        assert est.predict(X).shape == (60,)


# --------------------------------------------------------------------------- the fitted tree

def entropy_bits(counts):
    p = np.asarray(counts, dtype=float) / np.sum(counts)
    p = p[p > 0]
    return float(-np.sum(p * np.log2(p)))


def test_play_golf_entropy_tree_by_hand():
    """docs/maths.md §6: the root splits humidity, gain H(4/10) - 6/10 H(4/6) ≈ 0.420 bits
    (against 0.125 for temperature); then temperature under humidity = high."""
    X, y = load_play_golf(return_X_y=True)
    est = CARTClassifier("entropy").fit(X, y)
    t = est.tree_
    gain = entropy_bits([4, 6]) - 6 / 10 * entropy_bits([4, 2]) - 4 / 10 * entropy_bits([4])
    assert round(gain, 3) == 0.420
    assert t.feature[0] == 1 and np.isnan(t.threshold[0]) and t.level_row[0] >= 0
    assert t.improvement[0] == pytest.approx(gain, rel=1e-12)
    # the left child holds the lowest level code present (high = code 0)
    assert t.level_sets[t.level_row[0], 0, 0] == 1 and t.level_sets[t.level_row[0], 1, 0] == 2
    left = t.left[0]
    assert t.n_node_samples[left] == 6 and t.feature[left] == 0
    gain_t = entropy_bits([4, 2]) - 3 / 6 * entropy_bits([3]) - 3 / 6 * entropy_bits([1, 2])
    assert t.improvement[left] == pytest.approx(gain_t, rel=1e-12)
    assert t.n_leaves == 3
    # variable importance: W(t) Δi(t) in nats (rpart's information split), 10 × 0.420 ln 2
    # for humidity and 6 × gain_t ln 2 for temperature
    vi = est.variable_importance_
    assert list(vi.index) == ["humidity", "temperature"]
    np.testing.assert_allclose(vi.to_numpy(), np.log(2) * np.array([10 * gain, 6 * gain_t]),
                               rtol=1e-12)


def test_unseen_levels_go_to_the_majority_child():
    """An unseen humidity goes, at the root, to the heavier child (humidity = high: 6
    cases against 4), where temperature decides."""
    X, y = load_play_golf(return_X_y=True)
    est = CARTClassifier("entropy").fit(X, y)
    t = est.tree_
    assert t.majority_left[0] == 1
    new = pd.DataFrame({"temperature": ["high", "normal", "mild"],
                        "humidity": ["damp", "damp", "high"]})
    with pytest.warns(UserWarning, match="not seen in fit"):
        leaves = est.apply(new)
    high = t.left[0]
    assert leaves[0] == t.left[high] and leaves[1] == t.right[high]
    # an unseen temperature under humidity = high goes to the child with more cases,
    # or stops at humidity = high when they hold as many
    heavier = {1: t.left[high], 0: t.right[high], -1: high}[int(t.majority_left[high])]
    assert leaves[2] == heavier
    with pytest.warns(UserWarning):
        pred = est.predict(new)
    assert pred.tolist() == ["no", "yes", est.classes_[t.label[heavier]]]


@pytest.mark.parametrize("value", [0, 21, 2.5, "12"])
def test_max_categories_exhaustive_is_bounded(value):
    X = np.array([[0.0], [1.0], [2.0], [0.0]])
    with pytest.raises((ValueError, TypeError), match="max_categories_exhaustive"):
        CARTClassifier(max_categories_exhaustive=value, categorical_features=[0]).fit(
            X, [0, 1, 2, 0])
