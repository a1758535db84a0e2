"""Missing values at the input: encoding, missing targets, parameters, importance, summary.

What reaches the kernels (docs/maths.md §8): NaN for every kind of missing value in
every kind of column, level codes 0..L-1 untouched, infinity still refused; rows with a
missing target dropped with one warning; the four missing-value parameters checked and
listed by ``get_params``; rpart's variable importance with surrogate splits; the text of
``summary``. The expected values are computed here from the data (class counts, Gini
indices by hand), not read from the code under test.

The tests marked ``engine`` fit and predict on data with missing values; they need the
grower that searches splits on the present cases and builds surrogate splits, and the
prediction kernel that routes missing values.
"""
from __future__ import annotations

import importlib.util
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import cartjit
from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV,
                     summary)
from cartjit import _encoding as E
from cartjit.engine.tree import LEAF
from cartjit.export import export_text, node_numbers

ESTIMATORS = [CARTClassifier, CARTRegressor, CARTClassifierCV, CARTRegressorCV]
MISSING_PARAMS = {"max_surrogate": "auto", "use_surrogate": 2, "surrogate_style": 0,
                  "max_competitor": 4}

def _has_engine():
    import inspect

    from cartjit.engine.tree import apply
    return (importlib.util.find_spec("cartjit.engine.surrogates") is not None
            and "use_surrogate" in inspect.signature(apply).parameters)


engine = pytest.mark.skipif(not _has_engine(), reason="needs the missing-value grower "
                            "(surrogate splits) and the routing prediction kernel")


def class_data(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return X, y


def target(est_cls, y):
    if est_cls in (CARTClassifier, CARTClassifierCV):
        return y
    return y * 2.0 + 0.5 + 0.1 * np.arange(y.shape[0]) / y.shape[0]


def cv_kw(est_cls):
    return {"cv": 3} if est_cls in (CARTClassifierCV, CARTRegressorCV) else {}


# ------------------------------------------------------------------ encoding of missing values

def test_numpy_nan_stays_nan_and_infinity_is_refused():
    X = np.array([[1.0, np.nan], [np.nan, 2.0], [3.0, 4.0]])
    arr, names, enc = E.fit_encode(X, "from_dtype")
    assert names is None and not enc.coded
    np.testing.assert_array_equal(np.isnan(arr), np.isnan(X))
    assert arr[2, 1] == 4.0 and arr.flags.c_contiguous and arr.dtype == np.float64
    with pytest.raises(ValueError, match="X contains infinity"):
        E.fit_encode(np.array([[1.0, np.nan], [np.inf, 2.0]]), "from_dtype")
    with pytest.raises(ValueError, match="X contains infinity"):
        E.transform(np.array([[1.0, -np.inf]]), enc, 2)
    np.testing.assert_array_equal(np.isnan(E.transform(X, enc, 2)), np.isnan(X))


def test_object_numbers_with_none_are_numeric_with_nan():
    X = np.array([[1, None], [None, 2.5], [3, 4]], dtype=object)
    arr, _, enc = E.fit_encode(X, None)
    assert not enc.coded
    np.testing.assert_array_equal(np.isnan(arr), [[False, True], [True, False],
                                                  [False, False]])
    assert arr[1, 1] == 2.5


def test_every_missing_kind_of_a_dataframe_becomes_nan():
    frame = pd.DataFrame({
        "num": [1.5, np.nan, 3.0, 4.0, 5.0],
        "int_na": pd.array([1, None, 3, 4, 5], dtype="Int64"),
        "obj": np.array(["b", None, "a", np.nan, "b"], dtype=object),
        "cat": pd.Categorical(["x", "y", None, "x", "y"], categories=["y", "x"]),
        "flag": pd.array([True, pd.NA, False, True, False], dtype="boolean"),
        "text": pd.array(["u", "v", pd.NA, "u", "v"], dtype="string"),
        "size": pd.Categorical(["S", None, "L", "M", "S"], categories=["S", "M", "L"],
                               ordered=True),
    })
    arr, names, enc = E.fit_encode(frame, "from_dtype")
    assert list(names) == list(frame.columns)
    expected_missing = frame.isna().to_numpy()
    np.testing.assert_array_equal(np.isnan(arr), expected_missing)
    # the codes of the present values are unchanged by the missing ones
    assert arr[0, 0] == 1.5 and arr[2, 1] == 3.0
    assert list(enc.categories[2]) == ["a", "b"]          # sorted levels, no None level
    np.testing.assert_array_equal(arr[[0, 2, 4], 2], [1, 0, 1])
    assert list(enc.categories[3]) == ["y", "x"]          # declared categories
    np.testing.assert_array_equal(arr[[0, 1, 3, 4], 3], [1, 0, 1, 0])
    assert list(enc.categories[4]) == [False, True]
    np.testing.assert_array_equal(arr[[0, 2, 3, 4], 4], [1, 0, 1, 0])
    assert list(enc.categories[5]) == ["u", "v"]
    np.testing.assert_array_equal(arr[[0, 1, 3, 4], 5], [0, 1, 0, 1])
    assert enc.kind[6] == E.ORDINAL
    np.testing.assert_array_equal(arr[[0, 2, 3, 4], 6], [0, 2, 1, 0])
    np.testing.assert_array_equal(enc.kind, [E.NUMERIC, E.NUMERIC] + [E.NOMINAL] * 4
                                  + [E.ORDINAL])


def test_prediction_encodes_missing_as_nan_and_unseen_as_minus_one():
    fit_frame = pd.DataFrame({"c": ["a", "b", "a", "b"], "x": [1.0, 2.0, 3.0, 4.0]})
    _, _, enc = E.fit_encode(fit_frame, "from_dtype")
    new = pd.DataFrame({"c": ["b", None, "zzz", np.nan], "x": [np.nan, 1.0, 2.0, 3.0]})
    with pytest.warns(UserWarning, match=r"column 'c': 1 row \('zzz'\).*treated as a "
                                         "missing value"):
        arr = E.transform(new, enc, 2)
    np.testing.assert_array_equal(arr[:, 0][[0, 2]], [1, -1])
    assert np.isnan(arr[1, 0]) and np.isnan(arr[3, 0]) and np.isnan(arr[0, 1])
    as_category = new.assign(c=pd.Categorical(new["c"]))
    with pytest.warns(UserWarning, match="zzz"):
        arr2 = E.transform(as_category, enc, 2)
    np.testing.assert_array_equal(arr2, arr)


def test_listed_numpy_column_with_nan_keeps_its_codes():
    X = np.column_stack([[2.0, np.nan, 5.0, 2.0, 5.0], np.arange(5.0)])
    arr, _, enc = E.fit_encode(X, [0])
    assert list(enc.categories[0]) == [2.0, 5.0]
    assert np.isnan(arr[1, 0])
    np.testing.assert_array_equal(arr[[0, 2, 3, 4], 0], [0, 1, 0, 1])


def test_all_missing_categorical_column_has_no_level_and_no_single_level_warning():
    frame = pd.DataFrame({"c": np.array([None, None, None], dtype=object),
                          "x": [1.0, 2.0, 3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arr, _, enc = E.fit_encode(frame, ["c"])
    assert len(enc.categories[0]) == 0 and np.isnan(arr[:, 0]).all()


def test_warn_missing_names_empty_columns_and_counts_empty_rows():
    X = np.array([[np.nan, 1.0, np.nan], [np.nan, np.nan, np.nan], [np.nan, 2.0, 3.0],
                  [np.nan, np.nan, np.nan]])
    with pytest.warns(UserWarning) as record:
        total = E.warn_missing(X, np.array(["a", "b", "c"], dtype=object))
    texts = [str(r.message) for r in record]
    assert total == 4 + 2 + 3 == 9  # column by column
    assert any("feature(s) 'a' are missing on every row" in t for t in texts)
    assert any("2 rows are missing every feature" in t for t in texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert E.warn_missing(np.ones((3, 2)), None) == 0
        assert E.has_missing(np.array([[1e308, 1e308]])) is False  # overflow is no NaN
    assert E.has_missing(np.array([[1e308, 1e308], [np.nan, 0.0]])) is True


@pytest.mark.parametrize("p", [1, 3, 64, 65, 200])
def test_warn_missing_counts_as_a_plain_count(p):
    # the compiled tally against numpy on the whole array, few and many features
    rng = np.random.default_rng(p)
    n = 3 * (1 << 16) // p + 17
    X = rng.normal(size=(n, p))
    X[rng.random((n, p)) < rng.uniform(0.05, 0.9, size=p)] = np.nan
    X[rng.choice(n, 5, replace=False)] = np.nan  # rows missing everything
    X[:, 0] = np.nan if p > 2 else X[:, 0]       # a column missing everywhere
    miss = np.isnan(X)
    n_every = int(miss.all(axis=1).sum())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        total = E.warn_missing(X, None)
    assert total == int(miss.sum())
    texts = [str(r.message) for r in record]
    if n_every and not miss.all():
        rows = "row is" if n_every == 1 else "rows are"
        assert any(f"X: {n_every} {rows} missing every feature" in t for t in texts), texts
    assert any("on every row" in t for t in texts) == bool(miss.all(axis=0).any())


# ------------------------------------------------------------------------ missing targets

@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_rows_with_missing_target_are_dropped_with_one_warning(est_cls):
    X, y = class_data(1)
    yt = target(est_cls, y).astype(float)
    yy = yt.copy()
    drop = [3, 17, 40]
    yy[drop] = np.nan
    with pytest.warns(UserWarning, match=r"y is missing on 3 of the 60 rows; those rows "
                                         r"are dropped") as record:
        est = est_cls(**cv_kw(est_cls)).fit(X, yy)
    assert sum("y is missing" in str(r.message) for r in record) == 1
    keep = np.setdiff1d(np.arange(60), drop)
    ref = est_cls(**cv_kw(est_cls)).fit(X[keep], yt[keep])
    for name in ("feature", "threshold", "n_node_samples", "value"):
        np.testing.assert_array_equal(getattr(est.tree_, name), getattr(ref.tree_, name))
    assert est.tree_.n_node_samples[0] == 57
    if est_cls in (CARTClassifierCV, CARTRegressorCV):
        assert est.folds_.shape[1] == 60 and np.all(est.folds_[:, drop] == -1)
        np.testing.assert_array_equal(est.folds_[:, keep], ref.folds_)


def test_a_splitter_sees_every_row_and_the_rows_without_target_take_no_part():
    StratifiedKFold = pytest.importorskip("sklearn.model_selection").StratifiedKFold
    X, y = class_data(16, n=45)
    labels = np.array(["no", "yes"], dtype=object)[y]
    labels[[0, 9]] = None
    with pytest.warns(UserWarning, match="y is missing on 2 of the 45 rows"):
        est = CARTClassifierCV(cv=StratifiedKFold(3)).fit(X, labels)
    assert np.all(est.folds_[:, [0, 9]] == -1)
    assert np.all(np.delete(est.folds_, [0, 9], axis=1) >= 0)


def test_missing_labels_of_every_kind():
    X, y = class_data(2, n=40)
    words = np.array(["no", "yes"], dtype=object)[y]
    cases = {
        "None": np.where(np.arange(40) == 5, None, words),
        "nan": np.where(np.arange(40) == 5, np.nan, words),
        "pd.NA": pd.Series(pd.array(np.where(np.arange(40) == 5, None, words),
                                    dtype="string")),
        "category": pd.Series(pd.Categorical(np.where(np.arange(40) == 5, None, words))),
        "Int64": pd.Series(pd.array(np.where(np.arange(40) == 5, None, y), dtype="Int64")),
    }
    ref = CARTClassifier().fit(np.delete(X, 5, axis=0), np.delete(y, 5))
    for kind, labels in cases.items():
        with pytest.warns(UserWarning, match="y is missing on 1 of the 40 rows; that row"):
            est = CARTClassifier().fit(X, labels)
        assert len(est.classes_) == 2, kind
        np.testing.assert_array_equal(est.tree_.threshold, ref.tree_.threshold, err_msg=kind)


def test_missing_target_with_weights_and_all_missing():
    X, y = class_data(3, n=30)
    yy = y.astype(float)
    yy[:2] = np.nan
    w = np.ones(30)
    w[2:] = 0.0
    with pytest.raises(ValueError, match="sample_weight is 0 on every row with a target"):
        with pytest.warns(UserWarning, match="y is missing"):
            CARTClassifier().fit(X, yy, sample_weight=w)
    with pytest.raises(ValueError, match=r"y is missing on every row \(30\)"):
        CARTRegressor().fit(X, np.full(30, np.nan))
    # score does not drop rows: a NaN in the y it is given is an error naming y
    est = CARTRegressor(max_depth=2).fit(X, y.astype(float))
    with pytest.raises(ValueError, match="Input y contains NaN"):
        est.score(X, yy)
    est = CARTClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="Input y contains 2 missing labels"):
        est.score(X, yy)
    with pytest.raises(ValueError, match="Input y contains 1 missing labels"):
        est.score(X, np.where(np.arange(30) == 4, None, y))


# ------------------------------------------------------------------------ parameters

@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_missing_value_parameters_in_get_params_and_clone(est_cls):
    clone = pytest.importorskip("sklearn.base").clone
    est = est_cls()
    params = est.get_params()
    for name, default in MISSING_PARAMS.items():
        assert params[name] == default, name
    est.set_params(max_surrogate=3, use_surrogate=1, surrogate_style=1, max_competitor=0)
    copy = clone(est)
    assert {k: copy.get_params()[k] for k in MISSING_PARAMS} == {
        "max_surrogate": 3, "use_surrogate": 1, "surrogate_style": 1, "max_competitor": 0}
    custom = est_cls(max_surrogate=2, use_surrogate=0, surrogate_style=1, max_competitor=7)
    assert "max_surrogate=2" in repr(custom) and "max_competitor=7" in repr(custom)


@pytest.mark.parametrize("est_cls", ESTIMATORS)
@pytest.mark.parametrize("name, value, exc, words", [
    ("max_surrogate", -1, ValueError, "max_surrogate must be 'auto' or an integer >= 0"),
    ("max_surrogate", "all", ValueError, "max_surrogate must be 'auto' or an integer"),
    ("max_surrogate", 1.5, TypeError, "max_surrogate must be 'auto' or an integer"),
    ("max_surrogate", True, TypeError, "max_surrogate"),
    ("use_surrogate", 3, ValueError, r"use_surrogate must be one of \[0, 1, 2\], got 3"),
    ("use_surrogate", "2", TypeError, r"use_surrogate must be one of \[0, 1, 2\]"),
    ("use_surrogate", None, TypeError, "use_surrogate"),
    ("surrogate_style", 2, ValueError, r"surrogate_style must be one of \[0, 1\], got 2"),
    ("surrogate_style", 0.0, TypeError, "surrogate_style"),
    ("max_competitor", -1, ValueError, "max_competitor must be >= 0"),
    ("max_competitor", 2.5, TypeError, "max_competitor must be an integer >= 0"),
    ("max_competitor", None, TypeError, "max_competitor"),
])
def test_bad_missing_value_parameters_are_named(est_cls, name, value, exc, words):
    X, y = class_data(4, n=30)
    with pytest.raises(exc, match=words):
        est_cls(**{name: value}, **cv_kw(est_cls)).fit(X, target(est_cls, y))


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_max_surrogate_resolved_without_missing_values(est_cls):
    X, y = class_data(5, n=40)
    assert est_cls(**cv_kw(est_cls)).fit(X, target(est_cls, y)).max_surrogate_ == 0
    est = est_cls(max_surrogate=3, **cv_kw(est_cls)).fit(X, target(est_cls, y))
    assert est.max_surrogate_ == 3


def test_estimators_declare_that_they_take_nan():
    pytest.importorskip("sklearn")
    est = CARTClassifier()
    assert est.__sklearn_tags__().input_tags.allow_nan
    assert est._more_tags()["allow_nan"]


def test_summary_is_exported():
    assert "summary" in cartjit.__all__ and cartjit.summary is summary


# ------------------------------------------------- variable importance with surrogates

def _gini(counts):
    counts = np.asarray(counts, dtype=float)
    p = counts / counts.sum()
    return 1.0 - float(np.sum(p * p))


def _node_cases(est, X):
    """For every node of ``est.tree_``: the rows of X that reach it (complete X, ordered
    splits), found by following the thresholds."""
    t = est.tree_
    cases = {0: np.arange(X.shape[0])}
    for node in range(t.n_nodes):
        if t.left[node] == LEAF:
            continue
        rows = cases[node]
        go_left = X[rows, t.feature[node]] <= t.threshold[node]
        cases[int(t.left[node])] = rows[go_left]
        cases[int(t.right[node])] = rows[~go_left]
    return cases


def _with_surrogates(tree, rows):
    """``tree`` with the surrogate table filled by hand: ``rows`` maps a node to a list
    of (feature, threshold, low_left, agree, adj, count)."""
    fields = {"surrogate_feature": [], "surrogate_threshold": [], "surrogate_level_row": [],
              "surrogate_low_left": [], "surrogate_agree": [], "surrogate_adj": [],
              "surrogate_count": []}
    start = np.zeros(tree.n_nodes, dtype=np.int32)
    count = np.zeros(tree.n_nodes, dtype=np.int32)
    for node, surrogates in rows.items():
        start[node] = len(fields["surrogate_feature"])
        count[node] = len(surrogates)
        for f, thr, low_left, agree, adj, n in surrogates:
            fields["surrogate_feature"].append(f)
            fields["surrogate_threshold"].append(thr)
            fields["surrogate_level_row"].append(-1)
            fields["surrogate_low_left"].append(low_left)
            fields["surrogate_agree"].append(agree)
            fields["surrogate_adj"].append(adj)
            fields["surrogate_count"].append(n)
    dtypes = {"surrogate_feature": np.int32, "surrogate_threshold": np.float64,
              "surrogate_level_row": np.int32, "surrogate_low_left": np.int32,
              "surrogate_agree": np.float64, "surrogate_adj": np.float64,
              "surrogate_count": np.int64}
    arrays = {k: np.asarray(v, dtype=dtypes[k]) for k, v in fields.items()}
    return tree._replace(surrogate_start=start, n_surrogates=count, **arrays)


def test_variable_importance_adds_adjusted_agreement_times_improve():
    """rpart's definition: primary improve W(t) Δi(t) to the split feature, adj × that
    improve to each surrogate's feature (empirical priors, 0-1 cost, Gini)."""
    X, y = class_data(6, n=80)
    est = CARTClassifier(max_depth=2).fit(X, y)
    t = est.tree_
    split_nodes = [i for i in range(t.n_nodes) if t.left[i] != LEAF]
    assert len(split_nodes) >= 2
    cases = _node_cases(est, X)
    improve = {}
    for node in split_nodes:  # W(t) Δi(t), from the class counts of the data
        rows, lrows = cases[node], cases[int(t.left[node])]
        rrows = cases[int(t.right[node])]
        counts = lambda r: np.bincount(y[r], minlength=2)  # noqa: E731
        improve[node] = (len(rows) * _gini(counts(rows)) - len(lrows) * _gini(counts(lrows))
                         - len(rrows) * _gini(counts(rrows)))
    a, b = split_nodes[0], split_nodes[1]
    est.tree_ = _with_surrogates(t, {a: [(2, 0.1, 1, 0.9, 0.5, 3), (1, -0.2, 0, 0.8, 0.25, 1)],
                                     b: [(2, 0.3, 0, 0.7, 0.4, 2)]})
    expected = np.zeros(3)
    for node in split_nodes:
        expected[t.feature[node]] += improve[node]
    expected[2] += 0.5 * improve[a] + 0.4 * improve[b]
    expected[1] += 0.25 * improve[a]
    got = est.variable_importance_
    for j in range(3):
        if expected[j] > 0:
            assert got[f"x{j}"] == pytest.approx(expected[j], rel=1e-12), j
    assert list(got.index) == [f"x{j}" for j in np.argsort(-expected, kind="stable")
                               if expected[j] > 0]
    # scikit-learn's importance counts the primary splits only
    primary = np.zeros(3)
    for node in split_nodes:
        primary[t.feature[node]] += improve[node]
    np.testing.assert_allclose(est.feature_importances_, primary / primary.sum(), rtol=1e-12)


def test_variable_importance_without_surrogates_is_unchanged():
    X, y = class_data(7, n=80)
    est = CARTClassifier(max_depth=1).fit(X, y)
    t = est.tree_
    cases = _node_cases(est, X)
    c = lambda r: np.bincount(y[r], minlength=2)  # noqa: E731
    improve = (80 * _gini(c(cases[0])) - len(cases[1]) * _gini(c(cases[1]))
               - len(cases[2]) * _gini(c(cases[2])))
    imp = est.variable_importance_
    assert list(imp.index) == [f"x{t.feature[0]}"]
    assert imp.iloc[0] == pytest.approx(improve, rel=1e-12)


# ------------------------------------------------------------------------ summary

def _blocks(text):
    """The node blocks of a summary: {printed node number: its lines}, in their order."""
    blocks, current = {}, None
    for line in text.splitlines():
        m = re.match(r"Node number (\d+): (\d+) observations", line)
        if m:
            current = int(m.group(1))
            blocks[current] = [line]
        elif current is not None and line.strip():
            blocks[current].append(line)
        elif not line.strip():
            current = None
    return blocks


def test_summary_of_a_fitted_classifier_states_its_counts():
    from cartjit.datasets import load_iris
    X, y = load_iris(return_X_y=True)  # a DataFrame: named features
    est = CARTClassifier().fit(X, y)
    text = summary(est)
    t = est.tree_
    blocks = _blocks(text)
    # rpart numbering, derived here from the counts: the root is 1, the children of
    # node m are 2m and 2m + 1, 2m the child with the smaller mean class number (rpart's
    # order of the two sides; on a tie the right child)
    number = {0: 1}
    for node in range(t.n_nodes):  # parents come before their children
        if t.left[node] != LEAF:
            kids = [int(t.left[node]), int(t.right[node])]
            means = [float(np.arange(3) @ t.value[k]) / float(t.value[k].sum()) for k in kids]
            first, second = kids if means[0] < means[1] else kids[::-1]
            number[first], number[second] = 2 * number[node], 2 * number[node] + 1
    assert list(blocks) == sorted(number.values())  # every node once, by number
    assert node_numbers(est) == [number[i] for i in range(t.n_nodes)]
    assert text.startswith("CARTClassifier: 150 cases (weight 150)")
    # class counts by hand from the data
    root = blocks[1]
    assert root[0].startswith("Node number 1: 150 observations")
    assert "    class counts: 50 50 50" in root
    assert "   probabilities: 0.333 0.333 0.333" in root
    # the root split: petal length <= 2.45 separates the 50 setosa (Gini improve by hand:
    # 150 (2/3) - 100 (1/2) = 50), no case missing
    assert any(re.fullmatch(r"\s+petal_length <= 2\.45 to the left, improve=50, "
                            r"\(0 missing\)", line) for line in root)
    assert "  left son=2 (50 obs) right son=3 (100 obs)" in root
    assert "  predicted class=setosa  expected loss=0.667  P(node)=1" in root
    for node in range(t.n_nodes):
        head = blocks[number[node]][0]
        assert head.startswith(f"Node number {number[node]}: "
                               f"{int(t.n_node_samples[node])} observations")
        if t.left[node] != LEAF:
            lc, rc = int(t.left[node]), int(t.right[node])
            assert (f"  left son={number[lc]} ({int(t.n_node_samples[lc])} obs) right "
                    f"son={number[rc]} ({int(t.n_node_samples[rc])} obs)") in blocks[number[node]]
    assert "Variable importance (rpart's, in % of the total):" in text
    assert export_text(est, details=True) == text
    assert len(_blocks(summary(est, max_depth=1))) == 3


def test_summary_of_a_regressor_gives_mean_and_mse():
    from cartjit.datasets import load_potato_yield
    X, y = load_potato_yield(return_X_y=True)
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    est = CARTRegressor(max_depth=1).fit(X, y)
    root = _blocks(summary(est, decimals=4))[1]
    m = re.fullmatch(r"  mean=([0-9.]+), MSE=([0-9.]+)", root[1])
    assert float(m.group(1)) == pytest.approx(y.mean(), abs=1e-4)
    assert float(m.group(2)) == pytest.approx(np.mean((y - y.mean()) ** 2), abs=1e-4)
    cases = _node_cases(est, X)
    ss = lambda r: float(np.sum((y[r] - y[r].mean()) ** 2))  # noqa: E731
    improve = ss(cases[0]) - ss(cases[1]) - ss(cases[2])
    line = next(line for line in root if "improve=" in line)
    assert float(re.search(r"improve=([0-9.e+-]+),", line).group(1)) == pytest.approx(
        improve, rel=1e-3)


def test_summary_shows_hand_made_surrogates_competitors_and_missing_counts():
    """A tree whose missing-value tables are filled by hand: every line is checked."""
    X = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0)[::-1],
                      "c": pd.Categorical(list("pqrpqrpqrp"))})
    y = (np.arange(10) >= 5).astype(int)
    est = CARTClassifier(max_depth=1).fit(X, y)
    t = est.tree_
    assert t.n_nodes == 3 and t.feature[0] in (0, 1)
    n_levels = len(est.categories_[2])
    words = max(1, (n_levels + 63) // 64)
    sets = np.zeros((t.level_sets.shape[0] + 1, 2, max(words, t.level_sets.shape[2])),
                    dtype=np.uint64)
    sets[:t.level_sets.shape[0], :, :t.level_sets.shape[2]] = t.level_sets
    row = t.level_sets.shape[0]
    p, q, r = (list(est.categories_[2]).index(v) for v in "pqr")
    sets[row, 0, 0] = np.uint64((1 << p) | (1 << r))
    sets[row, 1, 0] = np.uint64(1 << q)
    est.tree_ = _with_surrogates(t, {0: [(1 - int(t.feature[0]), 4.5, 0, 0.8, 0.6, 2)]})
    est.tree_ = est.tree_._replace(
        level_sets=sets,
        n_primary=np.array([7, 0, 0], dtype=np.int64), majority_left=np.array(
            [-1, 0, 0], dtype=np.int32),
        competitor_start=np.zeros(3, dtype=np.int32),
        n_competitors=np.array([1, 0, 0], dtype=np.int32),
        competitor_feature=np.array([2], dtype=np.int32),
        competitor_threshold=np.array([np.nan]),
        competitor_level_row=np.array([row], dtype=np.int32),
        competitor_improvement=np.array([0.01]),
        competitor_count=np.array([9], dtype=np.int64))
    root = _blocks(summary(est))[1]
    other = "ab"[1 - int(t.feature[0])]
    assert f"      {other} <= 4.5 to the right, agree=0.800, adj=0.600, (2 split)" in root
    assert "  Surrogate splits:" in root and "  Primary splits:" in root
    assert any(line.endswith("(3 missing)") for line in root)  # 10 cases, 7 present
    # the competitor: rpart's improve W(root) p(t) Δi = 10 × 0.01, 1 case missing
    assert "      c in {p, r} to the left, {q} to the right, improve=0.1, (1 missing)" in root
    assert any("Majority direction" in line and "tie" in line for line in root)
    # importance: the surrogate's feature gets 0.6 × the root's improve (W Δi = 10 × 1/2)
    imp = est.variable_importance_
    assert imp[other] == pytest.approx(0.6 * 5.0, rel=1e-12)


def test_summary_errors_name_the_argument():
    X, y = class_data(8, n=30)
    est = CARTClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="decimals"):
        summary(est, decimals=-1)
    with pytest.raises(ValueError, match="max_depth"):
        summary(est, max_depth=-2)
    with pytest.raises(ValueError, match="feature_names has 1 entries"):
        summary(est, ["a"])
    with pytest.raises(TypeError, match="details must be True or False"):
        export_text(est, details="yes")
    with pytest.raises(cartjit.NotFittedError, match="before summary"):
        summary(CARTClassifier())


# ------------------------------------------------------------------------ runner and CLI

def test_runner_accepts_empty_cells_and_drops_rows_without_target(tmp_path):
    from cartjit.experiments.config import read_config
    from cartjit.experiments.data import resolve
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                          "s": ["u", "v", None, "u", "v", "u", "v", "u"],
                          "y": [0, 1, 0, 1, 0, 1, np.nan, 1]})
    frame.to_csv(tmp_path / "f.csv", index=False)
    (tmp_path / "c.toml").write_text("[cv]\nV = 2\n[[datasets]]\nname = 'f'\npath = 'f.csv'\n"
                                     "target = 'y'\ntask = 'classification'\n")
    with pytest.warns(UserWarning, match="target 'y' is missing on 1 of the 8 rows"):
        (data,) = resolve(read_config(tmp_path / "c.toml"))
    assert data.n_samples == 7
    assert np.isnan(data.X[1, 0]) and np.isnan(data.X[2, 1])
    assert data.categorical == (1,)


# ------------------------------------------------------------ with the missing-value grower

def _missing_data(seed=9, n=120, frac=0.15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[:, 1] = X[:, 0] + rng.normal(scale=0.3, size=n)  # a good surrogate of x0
    y = (X[:, 0] > 0).astype(int)
    holes = rng.random((n, 3)) < frac
    holes[holes.all(axis=1), 2] = False  # no row misses every feature (that one warns)
    Xm = X.copy()
    Xm[holes] = np.nan
    return X, Xm, y


@engine
@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_fit_and_predict_with_missing_values(est_cls):
    _, Xm, y = _missing_data()
    yt = target(est_cls, y)
    est = est_cls(**cv_kw(est_cls)).fit(Xm, yt)
    assert est.max_surrogate_ == 5
    t = est.tree_
    assert t.n_node_samples[0] == Xm.shape[0] and t.has_surrogates
    nodes = est.apply(Xm)
    assert nodes.shape == (Xm.shape[0],) and np.all((nodes >= 0) & (nodes < t.n_nodes))
    pred = est.predict(Xm)
    assert pred.shape == (Xm.shape[0],)
    if est_cls in (CARTClassifier, CARTClassifierCV):
        np.testing.assert_allclose(est.predict_proba(Xm).sum(axis=1), 1.0)
    indptr, indices = est.decision_path_arrays(Xm)
    np.testing.assert_array_equal(indices[indptr[1:] - 1], nodes)  # each path ends there
    assert np.isfinite(est.score(Xm, yt))
    row_all_missing = np.full((1, 3), np.nan)
    assert est.apply(row_all_missing).shape == (1,)


@engine
def test_dataframe_with_missing_categorical_values_fits():
    rng = np.random.default_rng(10)
    colour = rng.choice(["red", "green", "blue"], size=90).astype(object)
    y = np.isin(colour, ["red"]).astype(int)
    colour[::9] = None
    X = pd.DataFrame({"colour": colour, "x": rng.normal(size=90)})
    est = CARTClassifier().fit(X, y)
    assert est.max_surrogate_ == 5 and est.is_categorical_[0]
    assert est.predict(X).shape == (90,)
    text = summary(est)
    blocks = _blocks(text)
    n_missing = int(np.sum(pd.isna(X["colour"])))
    if est.tree_.feature[0] == 0:
        assert any(line.endswith(f"({n_missing} missing)") for line in blocks[1])


@engine
def test_all_missing_feature_warns_and_is_never_split_on():
    X, y = class_data(11, n=60)
    X[:, 2] = np.nan
    with pytest.warns(UserWarning, match=r"feature\(s\) 2 are missing on every row"):
        est = CARTClassifier(max_surrogate=2).fit(X, y)
    t = est.tree_
    assert not np.any(t.feature == 2) and not np.any(t.surrogate_feature == 2)


@engine
def test_rows_missing_every_feature_warn_with_their_count():
    X, y = class_data(12, n=60)
    X[[4, 9], :] = np.nan
    with pytest.warns(UserWarning, match="2 rows are missing every feature"):
        est = CARTClassifier().fit(X, y)
    assert est.tree_.n_node_samples[0] == 60


@engine
def test_a_copied_feature_gets_the_importance_of_its_original():
    """x1 is an exact copy of x0: it never wins a split (ties go to the lower index) and
    is a perfect surrogate (adj 1) wherever x0 splits, so rpart's importance gives it
    exactly x0's share."""
    rng = np.random.default_rng(13)
    x0 = rng.normal(size=100)
    X = np.column_stack([x0, x0, rng.normal(size=100)])
    y = (x0 + 0.5 * X[:, 2] > 0).astype(int)
    est = CARTClassifier(max_depth=3, max_surrogate=5).fit(X, y)
    assert not np.any(est.tree_.feature == 1)
    imp = est.variable_importance_
    assert imp["x1"] == pytest.approx(imp["x0"], rel=1e-12)


@engine
def test_use_surrogate_decides_where_a_missing_value_stops():
    """use_surrogate=0: a row missing the root's feature ends at the root and gets its
    label; 1: a row missing every feature ends there too; 2: it follows majority_left."""
    X, Xm, y = _missing_data(14)
    row = np.full((1, 3), np.nan)
    for u in (0, 1):
        est = CARTClassifier(use_surrogate=u).fit(Xm, y)
        t = est.tree_
        assert est.apply(row)[0] == 0
        assert est.predict(row)[0] == est.classes_[t.label[0]]
        probe = X[:1].copy()
        probe[0, t.feature[0]] = np.nan
        if u == 0:
            assert est.apply(probe)[0] == 0
    est = CARTClassifier(use_surrogate=2).fit(Xm, y)
    t = est.tree_
    node = 0  # walk the majority directions by hand
    while t.left[node] != LEAF and t.majority_left[node] != -1:
        node = int(t.left[node] if t.majority_left[node] == 1 else t.right[node])
    assert est.apply(row)[0] == node


@engine
def test_cli_show_summary_on_a_csv_with_empty_cells(tmp_path, capsys):
    from cartjit.__main__ import main
    _, Xm, y = _missing_data(15)
    frame = pd.DataFrame(Xm, columns=["a", "b", "c"])
    frame["y"] = np.where(y == 1, "yes", "no")
    frame.loc[7, "y"] = None
    frame.to_csv(tmp_path / "holes.csv", index=False)
    status = main(["show", str(tmp_path / "holes.csv"), "--target", "y", "--summary",
                   "--max-depth", "2"])
    captured = capsys.readouterr()
    out = captured.out
    assert status == 0
    # the command says fit's warning as its own line on stderr
    assert ("cartjit show: warning: y is missing on 1 of the 120 rows; that row is "
            "dropped") in captured.err
    assert "Node number 1: 119 observations" in out
    assert "Surrogate splits:" in out and "missing)" in out
