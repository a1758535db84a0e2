"""cartjit's Numba kernels grow exactly the tree of the slow reference, tests/references/naive.py.

Hypothesis draws small learning samples full of ties and duplicate values (small integer
features, repeated float pools, adjacent floats whose midpoint rounds), with integer and
fractional case weights (zeros included), priors, cost matrices, every criterion and the
stopping parameters; the fitted flat tree must equal the naive tree node by node
(features, exact thresholds, node sizes, class counts / means, impurity, risk, label).
Invariance properties (integer weights = duplicated rows, monotone transforms of a
feature) and ``cartjit.engine.tree.validate`` are checked on every fitted tree.

The naive grower is itself checked first, without cartjit: the worked examples of docs/maths.md §6,
agreement with scikit-learn on data without ties, and the flat-tree contract.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartjit.engine.tree import validate

from references.naive import (assert_same_tree, count_leaves, fix_weights, naive_grow,
                              naive_to_flat, naive_to_preorder)
from references.strategies import class_tables

# Imported unconditionally: if the estimators cannot be imported, every test here fails
# (an import error is a defect to report, never a reason to skip).
from cartjit import CARTClassifier, CARTRegressor

#: Multiplies every max_examples below (e.g. CARTJIT_HYPOTHESIS_SCALE=20 for a long hunt).
SCALE = float(os.environ.get("CARTJIT_HYPOTHESIS_SCALE", "1"))


def examples(n):
    return max(1, int(n * SCALE))


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


# ----------------------------------------------------------------------------------------
# strategies


@st.composite
def feature_column(draw, n):
    """One feature column of length n, built to contain ties and awkward midpoints."""
    kind = draw(st.sampled_from(["small_int", "small_int", "float_pool", "float",
                                 "adjacent", "huge"]))
    if kind == "small_int":
        hi = draw(st.integers(0, 4))
        vals = draw(st.lists(st.integers(-1, hi), min_size=n, max_size=n))
        return np.array(vals, dtype=float)
    if kind == "float_pool":
        pool = draw(st.lists(st.floats(-50, 50, allow_nan=False, allow_subnormal=False),
                             min_size=1, max_size=5))
        return np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    if kind == "float":
        return np.array(draw(st.lists(
            st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
            min_size=n, max_size=n)))
    if kind == "adjacent":
        # consecutive floats: a/2 + b/2 rounds to b for half of them (threshold guard)
        base = draw(st.sampled_from([0.1, 1.0, 3.0, -7.5, 1e10, 2.0 ** 52]))
        ladder = [base]
        for _ in range(3):
            ladder.append(float(np.nextafter(ladder[-1], np.inf)))
        return np.array(draw(st.lists(st.sampled_from(ladder), min_size=n, max_size=n)))
    # huge magnitudes: a + b overflows, a/2 + b/2 does not
    pool = [-1.7e308, -1e308, 0.0, 1e308, 1.7e308]
    return np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))


@st.composite
def weights(draw, n):
    kind = draw(st.sampled_from([None, "int", "frac", "float"]))
    if kind is None:
        return None
    if kind == "int":
        w = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    elif kind == "frac":
        w = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.75, 3.1, 0.1,
                                           0.3, 0.01, 100.0]),
                          min_size=n, max_size=n))
    else:
        w = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.01, 10.0)),
                          min_size=n, max_size=n))
    return np.array(w, dtype=float)


@st.composite
def stopping(draw):
    return dict(
        max_depth=draw(st.one_of(st.none(), st.integers(1, 6))),
        min_samples_split=draw(st.sampled_from([2, 2, 2, 3, 4, 6, 9])),
        min_samples_leaf=draw(st.sampled_from([1, 1, 1, 2, 3, 5])),
        min_impurity_decrease=draw(st.sampled_from([0.0, 0.0, 0.0, 1e-3, 0.01, 0.05])),
    )


@st.composite
def classification_problem(draw):
    n = draw(st.integers(1, 40))
    p = draw(st.integers(1, 4))
    X = np.column_stack([draw(feature_column(n)) for _ in range(p)])
    k = draw(st.integers(2, 4))
    codes = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    # labels need not be 0..J-1: classes_ = np.unique(y) defines the class index
    label_set = draw(st.sampled_from([np.arange(k), np.array([-3, 2, 7, 40])[:k],
                                      np.array(["virginica", "b", "zeta", "a"])[:k]]))
    y = label_set[codes]
    classes, yi = np.unique(y, return_inverse=True)
    J = classes.shape[0]
    w = fix_weights(draw(weights(n)), yi)
    priors, cost = draw(class_tables(J))
    criterion = draw(st.sampled_from(["gini", "entropy", "twoing"]))
    return dict(X=X, y=y, yi=yi, J=J, w=w, priors=priors, cost=cost, criterion=criterion,
                stop=draw(stopping()))


@st.composite
def regression_problem(draw):
    n = draw(st.integers(1, 40))
    p = draw(st.integers(1, 4))
    X = np.column_stack([draw(feature_column(n)) for _ in range(p)])
    if draw(st.booleans()):
        y = np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float)
    else:
        # |y| < 1e-100 becomes 0: a y spread below 2**-450 is refused (its squared errors
        # underflow float64), and the naive reference would compute them as 0
        pool = draw(st.lists(st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
                             .map(lambda v: 0.0 if abs(v) < 1e-100 else v),
                             min_size=1, max_size=8))
        y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    w = fix_weights(draw(weights(n)), np.zeros(n))
    return dict(X=X, y=y, w=w, stop=draw(stopping()))


# ----------------------------------------------------------------------------------------
# fitting helpers


def fit_classifier(prob, **over):
    kw = dict(criterion=prob["criterion"], priors=prob["priors"], cost=prob["cost"],
              **prob["stop"])
    kw.update(over)
    est = CARTClassifier(**kw).fit(prob["X"], prob["y"], sample_weight=prob["w"])
    np.testing.assert_array_equal(est.classes_, np.unique(prob["y"]))
    validate(est.tree_)
    return est.tree_


def naive_classifier(prob, **over):
    kw = dict(criterion=prob["criterion"], priors=prob["priors"], cost=prob["cost"],
              **prob["stop"])
    kw.update(over)
    return naive_grow(prob["X"], prob["yi"], prob["w"], task="classification",
                      n_classes=prob["J"], **kw)


def fit_regressor(prob, **over):
    kw = dict(prob["stop"])
    kw.update(over)
    est = CARTRegressor(**kw).fit(prob["X"], prob["y"], sample_weight=prob["w"])
    validate(est.tree_)
    return est.tree_


def naive_regressor(prob, **over):
    kw = dict(prob["stop"])
    kw.update(over)
    return naive_grow(prob["X"], prob["y"], prob["w"], task="regression", **kw)


def assert_same_flat_trees(a, b, *, b_weights_are_a_counts=False, thresholds=True):
    """Two cartjit trees are the same tree (same node numbering is not required)."""
    stack = [(0, 0, "root")]
    while stack:
        i, k, path = stack.pop()
        leaf_a, leaf_b = a.left[i] == -1, b.left[k] == -1
        assert leaf_a == leaf_b, f"{path}: leaf {leaf_a} vs {leaf_b}"
        if b_weights_are_a_counts:
            assert b.weighted_n_node_samples[k] == a.n_node_samples[i], path
        else:
            assert a.n_node_samples[i] == b.n_node_samples[k], path
        np.testing.assert_allclose(a.weighted_n_node_samples[i],
                                   b.weighted_n_node_samples[k], rtol=1e-9, err_msg=path)
        np.testing.assert_allclose(a.value[i], b.value[k], rtol=1e-9, atol=1e-12,
                                   err_msg=path)
        np.testing.assert_allclose(a.impurity[i], b.impurity[k], rtol=1e-9, atol=1e-12,
                                   err_msg=path)
        np.testing.assert_allclose(a.risk[i], b.risk[k], rtol=1e-9, atol=1e-12,
                                   err_msg=path)
        assert a.label[i] == b.label[k], path
        if leaf_a:
            continue
        assert a.feature[i] == b.feature[k], f"{path}: feature {a.feature[i]} vs {b.feature[k]}"
        if thresholds:
            assert a.threshold[i] == b.threshold[k], (
                f"{path}: threshold {a.threshold[i]!r} vs {b.threshold[k]!r}")
        stack.append((a.right[i], b.right[k], path + ">R"))
        stack.append((a.left[i], b.left[k], path + ">L"))


def node_members(tree, X):
    """For every node, the row indices of X that reach it."""
    members = [None] * tree.n_nodes
    members[0] = np.arange(X.shape[0])
    for i in range(tree.n_nodes):  # children have larger ids than parents
        if tree.left[i] != -1:
            rows = members[i]
            go_left = X[rows, tree.feature[i]] <= tree.threshold[i]
            members[tree.left[i]] = rows[go_left]
            members[tree.right[i]] = rows[~go_left]
    return members


def midpoint(a, b):
    c = a / 2.0 + b / 2.0
    return a if c == b else c


# ----------------------------------------------------------------------------------------
# the naive grower on its own


def iris():
    """Fisher's iris as bundled with cartjit (R's values); classes 0, 1, 2 as in classes_."""
    from cartjit.datasets import load_iris
    X, species = load_iris(return_X_y=True)
    return X.to_numpy(dtype=float), np.unique(species.to_numpy(), return_inverse=True)[1]


def play_golf():
    # temperature (0 = high, 1 = normal), humidity (0 = high, 1 = normal), play (1 = yes)
    rows = ([(0, 0, 0)] * 3 + [(1, 0, 1)] * 2 + [(1, 0, 0)] + [(0, 1, 1)] * 2
            + [(1, 1, 1)] * 2)
    a = np.array(rows, dtype=float)
    return a[:, :2], a[:, 2].astype(int)


def potato():
    from cartjit.datasets import load_potato_yield
    X, y = load_potato_yield(return_X_y=True)
    X, y = X.to_numpy(dtype=float).reshape(-1, 1), y.to_numpy(dtype=float)
    assert X.shape == (15, 1) and (X[0, 0], y[0]) == (206, 29)
    return X, y


def test_naive_iris_petal_features():
    X, y = iris()
    root = naive_grow(X[:, 2:], y)
    assert (root.feature, root.threshold) == (0, 2.45)  # petal length <= 2.45
    assert (root.left.n, root.right.n) == (50, 100) and root.left.is_leaf
    assert root.risk == pytest.approx(2 / 3)
    # T_max has 8 leaves; one split (46 cases [0, 1, 45] -> [0, 1, 2] + [0, 0, 43]) does
    # not lower the risk, so T_1 = T(0) has the 7 leaves quoted in docs/maths.md §6.
    assert count_leaves(root) == 8
    no_gain = [nd for nd in naive_to_preorder(root) if not nd.is_leaf
               and math.isclose(nd.risk, nd.left.risk + nd.right.risk, abs_tol=1e-12)]
    assert [nd.value.tolist() for nd in no_gain] == [[0.0, 1.0, 45.0]]
    assert sum(nd.risk for nd in naive_to_preorder(root) if nd.is_leaf) == pytest.approx(1 / 150)


def test_naive_iris_all_features():
    X, y = iris()
    root = naive_grow(X, y)
    assert count_leaves(root) == 9
    assert root.feature in (2, 3)  # petal length and petal width tie at the root
    assert root.feature == 2 and root.threshold == 2.45  # the lowest feature wins the tie
    assert sum(nd.risk for nd in naive_to_preorder(root) if nd.is_leaf) == 0.0


def test_naive_play_golf_entropy():
    X, y = play_golf()
    root = naive_grow(X, y, criterion="entropy")
    assert root.feature == 1  # humidity
    assert root.delta == pytest.approx(0.420, abs=5e-4)
    assert root.impurity == pytest.approx(-(0.6 * math.log2(0.6) + 0.4 * math.log2(0.4)))
    high = root.left  # humidity = high (coded 0)
    assert high.value.tolist() == [4.0, 2.0]
    assert high.feature == 0  # then temperature
    assert root.right.is_leaf and root.right.value.tolist() == [0.0, 4.0]
    # temperature alone: gain ≈ 0.125 bits
    t = naive_grow(X[:, :1], y, criterion="entropy", max_depth=1)
    assert t.delta == pytest.approx(0.125, abs=5e-4)


def test_naive_potato_regression():
    X, y = potato()
    root = naive_grow(X, y, task="regression", max_depth=1)
    assert root.value[0] == pytest.approx(y.mean())
    assert root.impurity == pytest.approx(y.var())
    assert root.risk == pytest.approx(y.var())
    # brute force the best single split by the variance reduction
    best = max(
        (y.var() - (np.mean(X[:, 0] <= c) * y[X[:, 0] <= c].var()
                    + np.mean(X[:, 0] > c) * y[X[:, 0] > c].var()), c)
        for c in np.unique(X[:, 0])[:-1])
    assert root.delta == pytest.approx(best[0])
    assert root.left.n == int(np.sum(X[:, 0] <= best[1]))


def test_naive_threshold_guard():
    a = 1.0
    b = float(np.nextafter(a, np.inf))
    root = naive_grow(np.array([[a], [b]]), np.array([0, 1]))
    assert root.threshold == a  # a/2 + b/2 rounds to b, so the threshold is a
    c = float(np.nextafter(b, np.inf))
    root = naive_grow(np.array([[b], [c]]), np.array([0, 1]))
    assert root.threshold in (b,) or b < root.threshold < c
    root = naive_grow(np.array([[1.7e308], [-1.7e308]]), np.array([0, 1]))
    assert root.threshold == 0.0


def test_naive_ties_go_to_lowest_feature_then_threshold():
    # both features give the same partition: feature 0 wins
    X = np.array([[0, 5], [1, 6], [2, 7], [3, 8]], float)
    y = np.array([0, 0, 1, 1])
    root = naive_grow(X, y)
    assert (root.feature, root.threshold) == (0, 1.5)
    # symmetric data: thresholds 0.5 and 2.5 tie exactly; the lowest one wins
    X = np.array([[0], [1], [2], [3]], float)
    y = np.array([1, 0, 0, 1])
    root = naive_grow(X, y, max_depth=1)
    assert root.threshold == 0.5


@settings(max_examples=examples(60), **SETTINGS)
@given(classification_problem())
def test_naive_classifier_meets_contract(prob):
    root = naive_classifier(prob)
    flat = naive_to_flat(root)
    validate(flat)
    assert_same_tree(flat, root)


@settings(max_examples=examples(40), **SETTINGS)
@given(regression_problem())
def test_naive_regressor_meets_contract(prob):
    root = naive_regressor(prob)
    flat = naive_to_flat(root)
    validate(flat)
    assert_same_tree(flat, root)


def test_assert_same_tree_detects_differences():
    X, y = iris()
    root = naive_grow(X[:, 2:], y)
    flat = naive_to_flat(root)
    assert_same_tree(flat, root)
    internal = int(np.flatnonzero(flat.left != -1)[-1])
    for field, change in [("threshold", lambda a: np.nextafter(a, np.inf)),
                          ("feature", lambda a: 1 - a),
                          ("n_node_samples", lambda a: a + 1),
                          ("value", lambda a: a * (1 + 1e-6)),
                          ("impurity", lambda a: a + 1e-6),
                          ("risk", lambda a: a * (1 + 1e-6) + 1e-9),
                          ("label", lambda a: (a + 1) % 3)]:
        arr = getattr(flat, field).copy()
        arr[internal] = change(arr[internal])
        with pytest.raises(AssertionError, match=field if field != "value" else "value"):
            assert_same_tree(flat._replace(**{field: arr}), root, ["petal length",
                                                                   "petal width"])
    # a leaf where the naive tree splits
    left = flat.left.copy()
    left[internal] = -1
    with pytest.raises(AssertionError, match="is leaf"):
        assert_same_tree(flat._replace(left=left), root)


def _decrease(y, left, criterion):
    """Impurity decrease of splitting the cases y into y[left] and y[~left] (unit weights)."""
    def imp(v):
        if criterion == "squared_error":
            return v.var()
        p = np.bincount(v, minlength=3) / v.size
        if criterion == "gini":
            return 1 - np.sum(p ** 2)
        p = p[p > 0]
        return -np.sum(p * np.log2(p))
    return imp(y) - left.mean() * imp(y[left]) - (~left).mean() * imp(y[~left])


@settings(max_examples=examples(100), **SETTINGS)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(["gini", "entropy", "squared_error"]))
def test_naive_agrees_with_sklearn_without_ties(seed, criterion):
    """scikit-learn grows the same T_max, up to how exact ties between splits are broken.

    Values are distinct and float32-exact. Where the two trees partition a node
    differently the two splits must have the same Δ (a tie, which scikit-learn breaks by
    a random feature order); the comparison stops there.
    """
    sklearn_tree = pytest.importorskip("sklearn.tree")
    DecisionTreeClassifier = sklearn_tree.DecisionTreeClassifier
    DecisionTreeRegressor = sklearn_tree.DecisionTreeRegressor
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(2, 40)), int(rng.integers(1, 4))
    X = rng.permutation(n * p).reshape(n, p).astype(np.float64) / 4 + rng.integers(0, 9, p)
    if criterion == "squared_error":
        y = rng.normal(size=n)
        root = naive_grow(X, y, task="regression")
        sk = DecisionTreeRegressor(random_state=0).fit(X, y).tree_
    else:
        y = rng.integers(0, 3, n)
        root = naive_grow(X, y, criterion=criterion)
        sk = DecisionTreeClassifier(criterion=criterion, random_state=0).fit(X, y).tree_
    stack = [(0, root, np.arange(n))]
    while stack:
        i, node, rows = stack.pop()
        assert rows.size == node.n == sk.n_node_samples[i]
        assert (sk.children_left[i] == -1) == node.is_leaf
        if node.is_leaf:
            continue
        ours = X[rows, node.feature] <= node.threshold
        theirs = X[rows, sk.feature[i]] <= sk.threshold[i]
        if not np.array_equal(ours, theirs):
            assert _decrease(y[rows], theirs, criterion) == pytest.approx(
                _decrease(y[rows], ours, criterion), rel=1e-9, abs=1e-12)
            continue
        if sk.feature[i] == node.feature:
            assert sk.threshold[i] == pytest.approx(node.threshold, rel=1e-6)
        stack.append((sk.children_left[i], node.left, rows[ours]))
        stack.append((sk.children_right[i], node.right, rows[~ours]))


# ----------------------------------------------------------------------------------------
# cartjit against the naive grower


@pytest.mark.parametrize("criterion", ["gini", "entropy", "twoing"])
@pytest.mark.parametrize("features", [slice(2, 4), slice(0, 4)])
def test_iris_same_tree(criterion, features):
    X, y = iris()
    X = X[:, features]
    names = ["sepal length", "sepal width", "petal length", "petal width"][features]
    tree = CARTClassifier(criterion=criterion).fit(X, y).tree_
    validate(tree)
    root = naive_grow(X, y, criterion=criterion)
    assert count_leaves(root) >= 8
    assert_same_tree(tree, root, names)


def test_iris_priors_and_cost_same_tree():
    X, y = iris()
    cost = np.array([[0, 1, 1], [1, 0, 4], [2, 1, 0]], float)
    for priors in ["equal", [0.2, 0.3, 0.5]]:
        tree = CARTClassifier(priors=priors, cost=cost).fit(X, y, np.arange(150) % 3).tree_
        validate(tree)
        assert_same_tree(tree, naive_grow(X, y, np.arange(150) % 3, priors=priors,
                                          cost=cost))


def test_golf_and_potato_same_tree():
    X, y = play_golf()
    tree = CARTClassifier(criterion="entropy").fit(X, y).tree_
    assert_same_tree(tree, naive_grow(X, y, criterion="entropy"), ["temperature", "humidity"])
    assert tree.feature[0] == 1
    X, y = potato()
    tree = CARTRegressor().fit(X, y).tree_
    validate(tree)
    assert_same_tree(tree, naive_grow(X, y, task="regression"), ["rainfall"])


@pytest.mark.slow
@settings(max_examples=examples(800), **SETTINGS)
@given(classification_problem())
def test_classifier_same_tree_as_naive(prob):
    tree = fit_classifier(prob)
    root = naive_classifier(prob)
    assert_same_tree(tree, root)


@st.composite
def tie_free_classification_problem(draw):
    """Features without ties, where Gini and entropy scan by runs of one class: labels
    come in runs along x_0 (long runs, so that min_samples_leaf lands inside one)."""
    n = draw(st.integers(2, 60))
    p = draw(st.integers(1, 3))
    k = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = np.column_stack([rng.permutation(n) * draw(st.sampled_from([1.0, -0.5, 1e-3]))
                         + draw(st.sampled_from([0.0, 7.25])) for _ in range(p)])
    runs = rng.integers(1, draw(st.integers(2, 12)), size=n)
    labels = np.repeat(rng.integers(0, k, size=n), runs)[:n]
    y = labels[np.argsort(np.argsort(X[:, 0]))]  # runs of one class in x_0 order
    classes, yi = np.unique(y, return_inverse=True)
    J = classes.shape[0]
    w = fix_weights(draw(weights(n)), yi)
    priors = draw(st.sampled_from(["empirical", "empirical", "equal"]))
    criterion = draw(st.sampled_from(["gini", "entropy"]))
    stop = draw(stopping())
    return dict(X=X, y=y, yi=yi, J=J, w=w, priors=priors, cost=None, criterion=criterion,
                stop=stop)


@pytest.mark.slow
@settings(max_examples=examples(300), **SETTINGS)
@given(tie_free_classification_problem())
def test_scan_by_class_runs_same_tree_as_naive(prob):
    assert_same_tree(fit_classifier(prob), naive_classifier(prob))


@settings(max_examples=examples(200), **SETTINGS)
@given(st.one_of(classification_problem(), tie_free_classification_problem()))
def test_labels_looked_up_same_tree_as_packed(prob):
    """Labels packed into the keys and labels looked up by case (the path for more
    classes than the keys have room for) grow the same tree."""
    from cartjit.engine import grow as _builder
    packed = fit_classifier(prob)
    _builder.PACK_LABELS = False
    try:
        looked_up = fit_classifier(prob)
    finally:
        _builder.PACK_LABELS = True
    assert_same_flat_trees(packed, looked_up)


@settings(max_examples=examples(200), **SETTINGS)
@given(st.one_of(classification_problem(), tie_free_classification_problem()))
def test_blocks_of_16_same_tree_as_scalar(prob):
    """The 16-key compress blocks of the search and the partition (cartjit.engine.speed) and
    the scalar loops grow the same tree."""
    from cartjit.engine import speed as _config
    saved = _config.SIMD
    try:
        _config.SIMD = True
        blocks = fit_classifier(prob)
        _config.SIMD = False
        scalar = fit_classifier(prob)
    finally:
        _config.SIMD = saved
    assert_same_flat_trees(blocks, scalar)


def test_label_bits():
    from cartjit.engine.grow import label_bits
    assert label_bits(0, 10) == 0  # regression
    assert label_bits(2, 10) == 1
    assert label_bits(3, 10) == 2
    assert label_bits(4, 10) == 2
    assert label_bits(5, 10) == 3
    assert label_bits(256, 10) == 8
    assert label_bits(3, 2**29) == 2  # the largest case index, 2**29 - 1, fits in 29 bits
    assert label_bits(3, 2**29 + 1) == 0
    assert label_bits(300, 2**22) == 9
    assert label_bits(300, 2**22 + 1) == 0


@pytest.mark.slow
@settings(max_examples=examples(500), **SETTINGS)
@given(regression_problem())
def test_regressor_same_tree_as_naive(prob):
    tree = fit_regressor(prob)
    root = naive_regressor(prob)
    assert_same_tree(tree, root)


# Regression tests for a bug the property tests above found (fixed in fae19e7): the right
# child's sums were taken as total - left, which cancels when the left side holds most of
# the (non-integer) weight. The Δ of one partition then differed between the scan that
# sees it with the heavy side on the left and the one that sees it on the right by more
# than the 16-ulp tie tolerance, so an exact tie between two features went to the higher.
@pytest.mark.parametrize("criterion", ["gini", "entropy", "twoing"])
def test_exact_tie_mirrored_feature_classification(criterion):
    # x1 reverses x0, so both offer the partitions {0}|{1,2} and {0,1}|{2}; the best,
    # {0,1}|{2}, is x0 <= 1.5 and x1 <= 0.5 with the same Δ: feature 0 must win.
    X = np.array([[0.0, 2.0], [1.0, 1.0], [2.0, 0.0]])
    y = np.array([0, 1, 0])
    w = np.array([0.1, 0.3, 100.0])
    tree = CARTClassifier(criterion=criterion).fit(X, y, w).tree_
    assert_same_tree(tree, naive_grow(X, y, w, criterion=criterion))
    assert (tree.feature[0], tree.threshold[0]) == (0, 1.5)


def test_exact_tie_pure_children_classification():
    # The node of cases 0, 1, 2, 4 splits into a pure class-0 case and pure class 1 both
    # by x0 <= 1.5 and by x1 <= -2.5; with x0 the class-1 count of the pure right child
    # comes out as total - left != 0.
    X = np.array([[1.0, -2.0], [2.0, -3.0], [0.0, -2.0], [0.0, 0.0],
                  [0.0, -1.141522819409147]])
    y = np.array([1, 0, 1, 0, 1])
    w = np.array([8.265008721575201, 0.5, 6.0, 1.0, 2.3681658669650796])
    tree = CARTClassifier().fit(X, y, w).tree_
    assert_same_tree(tree, naive_grow(X, y, w))


def test_exact_tie_mirrored_feature_regression():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 0.0])
    w = np.array([2.0, 0.01])
    tree = CARTRegressor().fit(X, y, w).tree_
    assert_same_tree(tree, naive_grow(X, y, w, task="regression"))
    assert (tree.feature[0], tree.threshold[0]) == (0, 0.5)


# ----------------------------------------------------------------------------------------
# invariance properties


@st.composite
def integer_weighted_problem(draw, task):
    n = draw(st.integers(1, 25))
    p = draw(st.integers(1, 3))
    X = np.column_stack([
        np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), float)
        for _ in range(p)])
    if task == "classification":
        y = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    else:
        y = np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float)
    w = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), float)
    w = fix_weights(w, y if task == "classification" else np.zeros(n))
    return X, y, w


@settings(max_examples=examples(150), **SETTINGS)
@given(integer_weighted_problem("classification"),
       st.sampled_from(["gini", "entropy", "twoing"]), st.sampled_from(["empirical", "equal"]))
def test_integer_weights_equal_duplicated_rows_classification(data, criterion, priors):
    X, y, w = data
    reps = w.astype(int)
    weighted = CARTClassifier(criterion=criterion, priors=priors).fit(X, y, w).tree_
    duplicated = CARTClassifier(criterion=criterion, priors=priors).fit(
        np.repeat(X, reps, axis=0), np.repeat(y, reps)).tree_
    validate(weighted)
    validate(duplicated)
    assert_same_flat_trees(duplicated, weighted, b_weights_are_a_counts=True)


@settings(max_examples=examples(100), **SETTINGS)
@given(integer_weighted_problem("regression"))
def test_integer_weights_equal_duplicated_rows_regression(data):
    X, y, w = data
    reps = w.astype(int)
    weighted = CARTRegressor().fit(X, y, w).tree_
    duplicated = CARTRegressor().fit(np.repeat(X, reps, axis=0), np.repeat(y, reps)).tree_
    validate(weighted)
    validate(duplicated)
    assert_same_flat_trees(duplicated, weighted, b_weights_are_a_counts=True)


MONOTONE = {
    "cube": lambda x: x ** 3 + x,
    "exp": np.exp,
    "affine": lambda x: 3.0 * x - 7.0,
}


@settings(max_examples=examples(150), **SETTINGS)
@given(integer_weighted_problem("classification"), st.sampled_from(sorted(MONOTONE)),
       st.integers(0, 2), st.sampled_from(["gini", "entropy", "twoing", "regression"]))
def test_monotone_transform_changes_no_split(data, fname, m, criterion):
    X, y, w = data
    m = m % X.shape[1]
    f = MONOTONE[fname]
    X2 = X.copy()
    X2[:, m] = f(X[:, m])
    assert np.unique(X2[:, m]).size == np.unique(X[:, m]).size  # still strictly monotone
    if criterion == "regression":
        est = lambda: CARTRegressor()  # noqa: E731
        y = y.astype(float) ** 2
    else:
        est = lambda: CARTClassifier(criterion=criterion)  # noqa: E731
    a = est().fit(X, y, w).tree_
    b = est().fit(X2, y, w).tree_
    validate(a)
    validate(b)
    assert_same_flat_trees(a, b, thresholds=False)
    np.testing.assert_array_equal(a.left, b.left)  # same numbering: compare by node id
    # thresholds: the other features' are unchanged; feature m's is the midpoint of the
    # transformed pair of node values around the original threshold
    keep = w > 0
    members = node_members(a, X[keep])
    for i in np.flatnonzero(a.left != -1):
        if a.feature[i] != m:
            assert a.threshold[i] == b.threshold[i]
            continue
        vals = X[keep][members[i], m]
        lo = vals[vals <= a.threshold[i]].max()
        hi = vals[vals > a.threshold[i]].min()
        assert a.threshold[i] == midpoint(lo, hi)
        assert b.threshold[i] == midpoint(f(lo), f(hi))


@pytest.mark.slow
@settings(max_examples=examples(300), **SETTINGS)
@given(st.one_of(classification_problem(), regression_problem()), st.integers(0, 3),
       st.booleans())
def test_appended_copy_or_mirror_of_a_feature_changes_nothing(prob, m, mirror):
    """A last feature that repeats (or reverses) feature m offers exactly the partitions
    feature m offers, with the same Δ; ties go to the lower feature, so it never wins."""
    X = prob["X"]
    m = m % X.shape[1]
    extra = -X[:, m] if mirror else X[:, m]
    wider = dict(prob, X=np.column_stack([X, extra]))
    fit = fit_classifier if "yi" in prob else fit_regressor
    a, b = fit(prob), fit(wider)
    assert np.all(b.feature < X.shape[1]), f"the appended copy of x{m} won a split"
    assert_same_flat_trees(a, b)
