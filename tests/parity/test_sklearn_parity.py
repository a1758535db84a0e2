"""cartjit's unpruned trees equal scikit-learn's on continuous data without ties.

CART's split search (docs/maths.md §2) and scikit-learn's ``DecisionTreeClassifier`` /
``DecisionTreeRegressor`` (``splitter="best"``, all features) are the same algorithm: the
exhaustive search over the midpoints between consecutive distinct values, maximising the
weighted impurity decrease, with the same stopping rules for ``max_depth``,
``min_samples_split``, ``min_samples_leaf``, ``min_impurity_decrease`` and best-first growth
under ``max_leaf_nodes``. So on data where the best split at every
node is unique, the two trees must agree node by node.

scikit-learn works on float32 X; the features are drawn as float32-representable numbers
so that both libraries see the same values (sklearn then computes the midpoint in float64,
as cartjit does).

Ties. The one legitimate difference is the choice among splits whose improvement is
exactly equal: cartjit takes the lowest feature index (docs/maths.md §2), sklearn the first feature
of a random permutation. Two kinds of ties occur:

* Different features inducing the *same* partition of the node's cases (e.g. a node of two
  cases: every feature separates them, possibly sending opposite cases left). The two
  trees stay identical as partitions of the learning sample; the walk below accepts a
  different feature there when the two sets of cases are the same (left and right maybe
  swapped) and cartjit's feature is the lower index, and keeps walking.
* Different partitions with equal improvement. With unit weights and class labels they are
  common in small nodes (the improvement depends only on class counts). The main
  classification tests therefore give both libraries the same random continuous case
  weights, which make equal improvements of different partitions essentially impossible,
  and assert that no such tie occurs. A separate unit-weight test allows them but checks by
  brute force that every divergence is a genuine tie that cartjit breaks by the rule of docs/maths.md §2.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

sklearn_tree = pytest.importorskip("sklearn.tree")

from cartjit import CARTClassifier, CARTRegressor  # noqa: E402
from cartjit.engine.tree import validate  # noqa: E402

DecisionTreeClassifier = sklearn_tree.DecisionTreeClassifier
DecisionTreeRegressor = sklearn_tree.DecisionTreeRegressor

THRESHOLD_RTOL = 1e-6


# ----------------------------------------------------------------------------- helpers


def float32_normal(rng, shape):
    """Standard normal values that are exactly representable in float32."""
    return rng.normal(size=shape).astype(np.float32).astype(np.float64)


def dyadic_weights(rng, n):
    """Case weights in [0.5, 2) with 20 fractional bits.

    Continuous enough that different partitions never have exactly equal improvements,
    yet every sum of up to a few thousand of them is exact in float64. Exact sums matter:
    with arbitrary float weights sklearn's Gini of a *pure* node can come out as 4e-16
    (class total and node total summed in different orders), above its EPSILON, and
    sklearn then splits the pure node with zero improvement; docs/maths.md §2 (and cartjit) make a
    pure node a leaf.
    """
    return rng.integers(2**19, 2**21, size=n) / 2.0**20


def classification_data(seed, n, n_classes, n_features=4):
    """Labels that depend on X (plus noise), so that the trees have some structure."""
    rng = np.random.default_rng(seed)
    X = float32_normal(rng, (n, n_features))
    scores = X @ rng.normal(size=(n_features, n_classes)) + rng.normal(size=(n, n_classes))
    y = np.argmax(scores, axis=1)
    # Every class present (make the first few rows cover all classes).
    y[:n_classes] = np.arange(n_classes)
    w = dyadic_weights(rng, n)
    return X, y, w


def regression_data(seed, n, n_features=4):
    rng = np.random.default_rng(seed)
    X = float32_normal(rng, (n, n_features))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    return X, y


def impurity(y, w, kind, n_classes):
    """Brute-force i(t) from the cases of a node (weights w)."""
    W = w.sum()
    if kind == "squared_error":
        mean = np.sum(w * y) / W
        return np.sum(w * (y - mean) ** 2) / W
    p = np.bincount(y, weights=w, minlength=n_classes) / W
    if kind == "gini":
        return 1.0 - np.sum(p ** 2)
    p = p[p > 0]
    return -np.sum(p * np.log2(p))


def improvement(y, w, go_left, kind, n_classes):
    """Δi(s, t) = i(t) - p_L i(t_L) - p_R i(t_R) (docs/maths.md §2/§3) by brute force."""
    W = w.sum()
    wl, wr = w[go_left].sum(), w[~go_left].sum()
    return (impurity(y, w, kind, n_classes)
            - wl / W * impurity(y[go_left], w[go_left], kind, n_classes)
            - wr / W * impurity(y[~go_left], w[~go_left], kind, n_classes))


def walk(cj_tree, sk_tree, X, y, w, kind, n_classes):
    """Walk both trees from the root; return (feature_tie_nodes, divergences).

    At every pair of corresponding nodes the two hold the same learning cases (asserted).
    Equal features with thresholds equal within 1e-6 relative must induce the same
    partition. A different feature is accepted when the partition is identical and
    cartjit's feature index is the lower one (a tie, broken by the rule of docs/maths.md §2). Different
    partitions are returned as ``divergences`` (node pairs with both improvements), not
    descended into.
    """
    feature_ties = []  # cartjit ids of the nodes split on another feature than sklearn's
    divergences = []
    stack = [(0, 0, np.arange(X.shape[0]))]
    while stack:
        a, b, idx = stack.pop()
        a_leaf = cj_tree.left[a] == -1
        b_leaf = sk_tree.children_left[b] == -1
        assert a_leaf == b_leaf, (
            f"cartjit node {a} is {'a leaf' if a_leaf else 'split'} but sklearn node {b} is "
            f"{'a leaf' if b_leaf else 'split'} ({idx.size} cases)")
        assert cj_tree.n_node_samples[a] == idx.size == sk_tree.n_node_samples[b]
        # i(t): Gini, entropy in bits, or the weighted variance in both libraries.
        assert math.isclose(cj_tree.impurity[a], sk_tree.impurity[b], rel_tol=1e-9, abs_tol=1e-9), (
            f"node {a}: impurity {cj_tree.impurity[a]!r} vs sklearn {sk_tree.impurity[b]!r}")
        if a_leaf:
            continue
        fa, ta = int(cj_tree.feature[a]), float(cj_tree.threshold[a])
        fb, tb = int(sk_tree.feature[b]), float(sk_tree.threshold[b])
        left_a = X[idx, fa] <= ta
        left_b = X[idx, fb] <= tb
        # docs/maths.md §2: the threshold is the midpoint of the two consecutive distinct values of
        # the node's cases on either side of the cut.
        lo, hi = X[idx[left_a], fa].max(), X[idx[~left_a], fa].min()
        assert math.isclose(ta, (lo + hi) / 2, rel_tol=1e-15, abs_tol=1e-300), (
            f"node {a}: threshold {ta!r} is not the midpoint of {lo!r} and {hi!r}")
        if fa == fb and math.isclose(ta, tb, rel_tol=THRESHOLD_RTOL, abs_tol=1e-12):
            np.testing.assert_array_equal(left_a, left_b)
        elif np.array_equal(left_a, left_b) or np.array_equal(left_a, ~left_b):
            # The same two sets of cases (possibly with left and right swapped, when the
            # features order them oppositely): the improvement is the same number.
            feature_ties.append(a)
            assert fa < fb, (f"node {a}: same partition by features {fa} (cartjit) and {fb} "
                             "(sklearn); cartjit must take the lowest feature index")
        else:
            da = improvement(y[idx], w[idx], left_a, kind, n_classes)
            db = improvement(y[idx], w[idx], left_b, kind, n_classes)
            divergences.append((a, b, idx.size, (fa, ta, da), (fb, tb, db)))
            continue
        swapped = not np.array_equal(left_a, left_b)
        sk_l, sk_r = int(sk_tree.children_left[b]), int(sk_tree.children_right[b])
        if swapped:
            sk_l, sk_r = sk_r, sk_l
        stack.append((int(cj_tree.left[a]), sk_l, idx[left_a]))
        stack.append((int(cj_tree.right[a]), sk_r, idx[~left_a]))
    return feature_ties, divergences


def assert_same_tree(cj, sk, X, y, w, kind, n_classes):
    validate(cj.tree_)
    feature_ties, divergences = walk(cj.tree_, sk.tree_, X, y, w, kind, n_classes)
    assert not divergences, f"trees diverge at (cartjit node, sklearn node, n, ...): {divergences}"
    assert cj.tree_.n_nodes == sk.tree_.node_count
    assert cj.get_n_leaves() == sk.get_n_leaves()
    assert cj.get_depth() == sk.get_depth()
    # Same partition of the learning sample: same predictions on it. On fresh rows, the
    # trees agree wherever a row's path avoids the nodes split on a different (tied)
    # feature.
    Xt = fresh_rows(X.shape[0], X.shape[1])
    path = cj.decision_path(Xt).toarray().astype(bool)
    clean = ~path[:, feature_ties].any(axis=1)
    # Unpruned regression trees end in one-case leaves, so the two-case nodes above them
    # (all feature ties) are met by many rows; still a good share must be comparable.
    assert clean.mean() > 0.1
    for data, rows in ((X, slice(None)), (Xt, clean)):
        if kind == "squared_error":
            np.testing.assert_allclose(cj.predict(data)[rows], sk.predict(data)[rows],
                                       rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_array_equal(cj.predict(data)[rows], sk.predict(data)[rows])
    return feature_ties


def fresh_rows(seed, n_features, n=500):
    """Rows not in the learning sample, to compare predictions on."""
    return float32_normal(np.random.default_rng(10_000 + seed), (n, n_features))


# ----------------------------------------------------------------------------- tests

SIZES = [50, 200, 700, 2000]


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("n_classes", [2, 3, 4])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", [0, 1])
def test_classifier_matches_sklearn(seed, n, n_classes, criterion):
    X, y, w = classification_data(seed, n, n_classes)
    cj = CARTClassifier(criterion=criterion).fit(X, y, sample_weight=w)
    sk = DecisionTreeClassifier(criterion=criterion, random_state=0).fit(X, y, sample_weight=w)
    assert_same_tree(cj, sk, X, y, w, criterion, n_classes)
    np.testing.assert_array_equal(cj.classes_, sk.classes_)
    # p(j|t) with empirical priors is the weighted class share of the leaf: sklearn's
    # predict_proba on the learning sample.
    np.testing.assert_allclose(cj.predict_proba(X), sk.predict_proba(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regressor_matches_sklearn(seed, n):
    X, y = regression_data(seed, n)
    w = np.ones(n)
    cj = CARTRegressor().fit(X, y)
    sk = DecisionTreeRegressor(random_state=0).fit(X, y)
    assert_same_tree(cj, sk, X, y, w, "squared_error", 0)
    # Leaf means are the same numbers (up to summation order).
    leaves = cj.tree_.left == -1
    assert np.sort(cj.tree_.value[leaves, 0]) == pytest.approx(
        np.sort(sk.tree_.value[sk.tree_.children_left == -1, 0, 0]), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regressor_matches_sklearn_with_weights(seed):
    X, y = regression_data(seed, 400)
    w = dyadic_weights(np.random.default_rng(seed + 77), 400)
    cj = CARTRegressor().fit(X, y, sample_weight=w)
    sk = DecisionTreeRegressor(random_state=0).fit(X, y, sample_weight=w)
    assert_same_tree(cj, sk, X, y, w, "squared_error", 0)


def param_id(params):
    return ",".join(f"{k}={v}" for k, v in params.items())


STOPPING = [
    dict(max_depth=1),
    dict(max_depth=3),
    dict(max_depth=6),
    dict(min_samples_leaf=5),
    dict(min_samples_leaf=20),
    dict(min_samples_split=30),
    dict(max_depth=4, min_samples_leaf=7),
    # Best-first growth: both expand leaves in decreasing order of p(t) Δi.
    dict(max_leaf_nodes=2),
    dict(max_leaf_nodes=20),
    dict(max_leaf_nodes=15, max_depth=4),
    # Both split only when p(t) Δi >= min_impurity_decrease.
    dict(min_impurity_decrease=0.001),
    dict(min_impurity_decrease=0.01),
]


@pytest.mark.parametrize("params", STOPPING, ids=param_id)
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("seed", [3, 4])
def test_classifier_stopping_rules_match_sklearn(seed, criterion, params):
    X, y, w = classification_data(seed, 600, 3, n_features=5)
    cj = CARTClassifier(criterion=criterion, **params).fit(X, y, sample_weight=w)
    sk = DecisionTreeClassifier(criterion=criterion, random_state=0, **params).fit(
        X, y, sample_weight=w)
    assert_same_tree(cj, sk, X, y, w, criterion, 3)
    if "max_depth" in params:
        assert cj.get_depth() <= params["max_depth"]
    if "min_samples_leaf" in params:
        assert cj.tree_.n_node_samples[cj.tree_.left == -1].min() >= params["min_samples_leaf"]
    if "max_leaf_nodes" in params:
        assert cj.get_n_leaves() <= params["max_leaf_nodes"]


@pytest.mark.parametrize("params", STOPPING, ids=param_id)
@pytest.mark.parametrize("seed", [3, 4])
def test_regressor_stopping_rules_match_sklearn(seed, params):
    X, y = regression_data(seed, 600, n_features=5)
    cj = CARTRegressor(**params).fit(X, y)
    sk = DecisionTreeRegressor(random_state=0, **params).fit(X, y)
    assert_same_tree(cj, sk, X, y, np.ones(600), "squared_error", 0)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unit_weight_classifier_differs_only_at_genuine_ties(seed, criterion):
    """Without weights, different partitions with equal Δi occur in small nodes.

    Where the trees diverge, both splits must have the same improvement (checked by brute
    force), and cartjit's must come first in the order of docs/maths.md §2 (lowest feature, then lowest
    threshold). The nodes above the first divergence must agree exactly, and with
    max_depth=3 on 1000 cases (nodes of >= ~100 cases) there must be no divergence at all.
    """
    n_classes = 3
    X, y, _ = classification_data(seed, 1000, n_classes)
    w = np.ones(X.shape[0])
    cj = CARTClassifier(criterion=criterion).fit(X, y)
    sk = DecisionTreeClassifier(criterion=criterion, random_state=0).fit(X, y)
    _, divergences = walk(cj.tree_, sk.tree_, X, y, w, criterion, n_classes)
    for a, b, n_cases, (fa, ta, da), (fb, tb, db) in divergences:
        assert da == pytest.approx(db, rel=1e-9, abs=1e-12), (
            f"node {a} ({n_cases} cases): cartjit split x{fa} <= {ta} (Δi {da}) vs sklearn "
            f"x{fb} <= {tb} (Δi {db}) is not a tie")
        assert (fa, ta) < (fb, tb), f"node {a}: tie not broken by lowest feature/threshold"
    np.testing.assert_array_equal(cj.predict(X), sk.predict(X))  # both trees are pure

    cj3 = CARTClassifier(criterion=criterion, max_depth=3).fit(X, y)
    sk3 = DecisionTreeClassifier(criterion=criterion, max_depth=3, random_state=0).fit(X, y)
    assert_same_tree(cj3, sk3, X, y, w, criterion, n_classes)
