"""The worked examples of docs/maths.md §6: Fisher's iris, potato yield and play golf.

Every expected number here comes from docs/maths.md §6 (or is recomputed in the test by
brute force), never from a run of cartjit.

Reading the pruning sequence. ``tree_.alpha[t]`` is the α at which node t becomes a leaf
(docs/maths.md §4, the contract in ``cartjit.engine.tree``): the α_k are 0 and the distinct
values of alpha at the internal nodes; node t is in T(α) when every strict ancestor a has
alpha[a] > α, and is a leaf of T(α) when it is in T(α) and alpha[t] <= α.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTRegressor
from cartjit.engine.tree import validate
from cartjit.datasets import load_iris, load_play_golf, load_potato_yield

# ----------------------------------------------------------------------------- helpers


def alpha_sequence(tree):
    """α_1 = 0 < α_2 < ... < α_K: 0 and the distinct collapse α of the internal nodes."""
    internal = tree.left != -1
    return sorted({0.0, *map(float, tree.alpha[internal])})


def leaves_of_pruned(tree, alpha):
    """The leaves of T(α), walked from the root with the rule of the module docstring."""
    leaves = []
    stack = [0]
    while stack:
        t = stack.pop()  # every strict ancestor of t has alpha > α, so t is in T(α)
        if tree.left[t] == -1 or tree.alpha[t] <= alpha:
            leaves.append(t)
        else:
            stack.extend((int(tree.left[t]), int(tree.right[t])))
    return sorted(leaves)


def assert_alphas(actual, expected):
    """α compared as exact fractions (and to 1e-12 absolute)."""
    assert len(actual) == len(expected), (actual, expected)
    for a, e in zip(actual, expected):
        assert Fraction(a).limit_denominator(1000) == e, (a, e)
        assert abs(a - float(e)) < 1e-12, (a, e)


def misclassification_rate(clf, X, y):
    return float(np.mean(clf.predict(X) != np.asarray(y)))


def check_pruning_sequence(X, y, expected_alphas, expected_leaves):
    clf = CARTClassifier().fit(X, y)
    tree = clf.tree_
    validate(tree)
    alphas = alpha_sequence(tree)
    assert_alphas(alphas, expected_alphas)
    assert [len(leaves_of_pruned(tree, a)) for a in alphas] == expected_leaves
    # The last tree is the root alone.
    assert leaves_of_pruned(tree, alphas[-1]) == [0]

    # Independent check of the risks along the sequence. With empirical priors and 0-1
    # cost R(T) is the resubstitution error rate, and each weakest-link step removes
    # |T_k| - |T_{k+1}| leaves at cost α_{k+1} each:
    #   R(T_{k+1}) = R(T_k) + α_{k+1} (|T_k| - |T_{k+1}|).
    # R(T_k) from the flat tree (sum of leaf risks) and from predictions of the pruned
    # estimator (ccp_alpha=α_k, a different code path) must both follow this.
    r_expected = misclassification_rate(CARTClassifier(ccp_alpha=0.0).fit(X, y), X, y)
    for k, a in enumerate(expected_alphas):
        if k > 0:
            r_expected += float(a) * (expected_leaves[k - 1] - expected_leaves[k])
        r_tree = float(tree.risk[leaves_of_pruned(tree, float(alphas[k]))].sum())
        assert r_tree == pytest.approx(r_expected, abs=1e-12)
        pruned = CARTClassifier(ccp_alpha=float(alphas[k])).fit(X, y)
        assert pruned.get_n_leaves() == expected_leaves[k]
        assert misclassification_rate(pruned, X, y) == pytest.approx(r_expected, abs=1e-12)
    # R(root) with empirical priors: 1 - 50/150 (three classes of 50).
    assert float(tree.risk[0]) == pytest.approx(2 / 3, abs=1e-15)
    return clf


def assert_root_is_petal_length_2_45(clf):
    tree = clf.tree_
    assert clf.feature_names_in_[tree.feature[0]] == "petal_length"
    # Midpoint between the largest setosa petal length (1.9) and the smallest other (3.0).
    assert tree.threshold[0] == pytest.approx(2.45, abs=1e-12)


# ----------------------------------------------------------------------------- iris


def test_iris_all_four_features():
    X, y = load_iris(return_X_y=True)
    clf = check_pruning_sequence(
        X, y,
        [Fraction(0), Fraction(1, 300), Fraction(1, 150), Fraction(1, 75), Fraction(22, 75),
         Fraction(1, 3)],
        [9, 7, 4, 3, 2, 1])
    assert clf.get_n_leaves() == 9  # T_max
    assert_root_is_petal_length_2_45(clf)
    # The root's left child is all setosa.
    left = clf.tree_.left[0]
    assert clf.tree_.left[left] == -1
    assert clf.classes_[clf.tree_.label[left]] == "setosa"
    assert clf.tree_.value[left].tolist() == [50.0, 0.0, 0.0]


def test_iris_petal_features():
    X, y = load_iris(petal_only=True, return_X_y=True)
    clf = check_pruning_sequence(
        X, y,
        [Fraction(0), Fraction(1, 150), Fraction(1, 75), Fraction(22, 75), Fraction(1, 3)],
        [7, 4, 3, 2, 1])
    assert_root_is_petal_length_2_45(clf)
    tree = clf.tree_

    # docs/maths.md §6 says "T_max has 7 leaves"; that is T_1 = T(0). The grown maximal
    # tree has 8 leaves: one split has two children that both predict virginica, so it does not
    # lower the misclassification risk (R(t) = R(t_L) + R(t_R)) and T_1 drops it.
    assert clf.get_n_leaves() == 8
    assert len(leaves_of_pruned(tree, 0.0)) == 7
    assert CARTClassifier(ccp_alpha=0.0).fit(X, y).get_n_leaves() == 7
    zero = [t for t in range(tree.n_nodes) if tree.left[t] != -1 and tree.alpha[t] == 0.0]
    assert len(zero) == 1
    t = zero[0]
    l, r = tree.left[t], tree.right[t]
    assert tree.left[l] == -1 and tree.left[r] == -1
    assert clf.classes_[tree.label[l]] == clf.classes_[tree.label[r]] == "virginica"
    assert tree.risk[t] == pytest.approx(tree.risk[l] + tree.risk[r], abs=1e-15)

    # T_max is not pure: some cases with identical petal measurements belong to different
    # species and cannot be separated by any split. Find them in the data directly.
    frame = load_iris(petal_only=True)
    groups = frame.groupby(["petal_length", "petal_width"])["species"].nunique()
    mixed = groups[groups > 1]
    assert len(mixed) == 1
    pl, pw = mixed.index[0]
    same = frame[(frame.petal_length == pl) & (frame.petal_width == pw)]
    assert len(same) == 3
    leaf_ids = clf.apply(same[["petal_length", "petal_width"]])
    assert len(set(leaf_ids)) == 1
    impure = [t for t in np.flatnonzero(tree.left == -1) if np.count_nonzero(tree.value[t]) > 1]
    assert impure == [leaf_ids[0]]
    assert tree.n_node_samples[leaf_ids[0]] == 3


def test_iris_petal_tmax_matches_sklearn_leaf_count():
    sklearn_tree = pytest.importorskip("sklearn.tree")
    X, y = load_iris(petal_only=True, return_X_y=True)
    sk = sklearn_tree.DecisionTreeClassifier(random_state=0).fit(X, y)
    assert CARTClassifier().fit(X, y).get_n_leaves() == sk.get_n_leaves() == 8


# ----------------------------------------------------------------------------- potato yield

POTATO = [(206, 29), (188, 25), (219, 31), (372, 25), (345, 29), (231, 30), (203, 26),
          (170, 23), (55, 12), (91, 15), (292, 28), (141, 24), (129, 23), (170, 22),
          (324, 30)]


def test_potato_yield_data_is_the_worked_example():
    X, y = load_potato_yield(return_X_y=True)
    assert list(zip(X["rainfall_mm"], y)) == [(float(a), float(b)) for a, b in POTATO]


def test_potato_yield_root_is_mean_and_best_split_brute_force():
    X, y = load_potato_yield(return_X_y=True)
    x = np.array([r for r, _ in POTATO], dtype=float)
    yy = np.array([v for _, v in POTATO], dtype=float)

    # Brute force: every midpoint of consecutive distinct rainfall values; the variance
    # reduction Var(t) - p_L Var(t_L) - p_R Var(t_R) (docs/maths.md §3).
    values = np.unique(x)
    best = None
    for lo, hi in zip(values[:-1], values[1:]):
        c = (lo + hi) / 2
        left = x <= c
        gain = yy.var() - left.mean() * yy[left].var() - (~left).mean() * yy[~left].var()
        if best is None or gain > best[0] + 1e-12:
            best = (gain, c)
    best_gain, best_c = best
    # The optimum is unique (no other midpoint within 1e-9 of it).
    gains = []
    for lo, hi in zip(values[:-1], values[1:]):
        left = x <= (lo + hi) / 2
        gains.append(yy.var() - left.mean() * yy[left].var() - (~left).mean() * yy[~left].var())
    assert sum(g > best_gain - 1e-9 for g in gains) == 1

    stump = CARTRegressor(max_depth=1).fit(X, y)
    tree = stump.tree_
    validate(tree)
    assert tree.n_nodes == 3
    assert tree.value[0, 0] == pytest.approx(yy.mean(), rel=1e-14)
    assert tree.threshold[0] == best_c
    left = x <= best_c
    assert tree.value[tree.left[0], 0] == pytest.approx(yy[left].mean(), rel=1e-14)
    assert tree.value[tree.right[0], 0] == pytest.approx(yy[~left].mean(), rel=1e-14)
    # The impurity arrays give back the same variance reduction.
    w = tree.weighted_n_node_samples
    l, r = tree.left[0], tree.right[0]
    gain = tree.impurity[0] - w[l] / w[0] * tree.impurity[l] - w[r] / w[0] * tree.impurity[r]
    assert gain == pytest.approx(best_gain, rel=1e-12)
    # R(root) = Σ (y - ȳ)² / N, the variance of y.
    assert tree.risk[0] == pytest.approx(yy.var(), rel=1e-12)
    # A single leaf predicts the mean everywhere.
    leaf = CARTRegressor(max_depth=0).fit(X, y)
    assert leaf.get_n_leaves() == 1
    np.testing.assert_allclose(leaf.predict(X), yy.mean(), rtol=1e-14)


# ----------------------------------------------------------------------------- play golf


def entropy_bits(counts):
    p = np.asarray(counts, dtype=float)
    p = p[p > 0] / p.sum()
    return float(-(p * np.log2(p)).sum())


def golf_encoded():
    frame = load_play_golf()
    X = (frame[["temperature", "humidity"]] == "high").astype(int)  # high = 1, normal = 0
    return X, frame["play"]


def split_gain(tree, t):
    w = tree.weighted_n_node_samples
    l, r = tree.left[t], tree.right[t]
    return tree.impurity[t] - w[l] / w[t] * tree.impurity[l] - w[r] / w[t] * tree.impurity[r]


def test_play_golf_counts_are_the_worked_example():
    frame = load_play_golf()
    counts = frame.groupby(["temperature", "humidity", "play"]).size().to_dict()
    assert counts == {("high", "high", "no"): 3, ("normal", "high", "yes"): 2,
                      ("normal", "high", "no"): 1, ("high", "normal", "yes"): 2,
                      ("normal", "normal", "yes"): 2}


def _levels(clf, t, side):
    """Level names of one side of subset split t (side 0: left, 1: right)."""
    tree = clf.tree_
    word = int(tree.level_sets[tree.level_row[t], side, 0])
    levels = clf.categories_[tree.feature[t]]
    return {str(levels[c]) for c in range(len(levels)) if word >> c & 1}


def test_play_golf_entropy_tree():
    """The worked example on the data as it comes, string columns: both features are
    categorical and the splits are subset splits (docs/maths.md §6, §7)."""
    X, y = load_play_golf(return_X_y=True)
    clf = CARTClassifier(criterion="entropy").fit(X, y)
    tree = clf.tree_
    validate(tree)
    assert list(clf.is_categorical_) == [True, True]
    # Expected gains from docs/maths.md §6, recomputed from the counts: 6 yes / 4 no at the root;
    # humidity high: 2 yes / 4 no, normal: 4 yes; temperature high: 2/3, normal: 4/1.
    root = entropy_bits([6, 4])
    humidity_gain = root - 0.6 * entropy_bits([2, 4])
    temperature_gain = root - 0.5 * entropy_bits([2, 3]) - 0.5 * entropy_bits([4, 1])
    assert humidity_gain == pytest.approx(0.420, abs=5e-4)
    assert temperature_gain == pytest.approx(0.125, abs=5e-4)

    assert clf.feature_names_in_[tree.feature[0]] == "humidity"
    assert tree.impurity[0] == pytest.approx(root, rel=1e-12)  # in bits
    assert split_gain(tree, 0) == pytest.approx(humidity_gain, rel=1e-12)
    assert tree.improvement[0] == pytest.approx(humidity_gain, rel=1e-12)
    assert split_gain(tree, 0) == pytest.approx(0.420, abs=5e-4)

    # A subset split: "high" has the lowest level code, so its side is the left child.
    assert np.isnan(tree.threshold[0])
    assert _levels(clf, 0, 0) == {"high"} and _levels(clf, 0, 1) == {"normal"}
    high, normal = tree.left[0], tree.right[0]
    assert tree.left[normal] == -1  # humidity normal: 4 × play, pure
    assert clf.classes_[tree.label[normal]] == "yes"
    assert tree.left[high] != -1
    assert clf.feature_names_in_[tree.feature[high]] == "temperature"
    assert _levels(clf, high, 0) == {"high"} and _levels(clf, high, 1) == {"normal"}
    assert split_gain(tree, high) == pytest.approx(
        entropy_bits([2, 4]) - 0.5 * entropy_bits([2, 1]), rel=1e-12)
    assert clf.get_n_leaves() == 3  # (normal, high) holds 2 yes / 1 no with identical X

    # Temperature alone: the root gain is the ≈ 0.125 bits of docs/maths.md §6.
    temp = CARTClassifier(criterion="entropy", max_depth=1).fit(X[["temperature"]], y)
    assert split_gain(temp.tree_, 0) == pytest.approx(temperature_gain, rel=1e-12)
    assert split_gain(temp.tree_, 0) == pytest.approx(0.125, abs=5e-4)
    assert split_gain(tree, 0) > split_gain(temp.tree_, 0)

    # The 0/1 encoding of each two-level feature gives the same tree by thresholds.
    Xe, ye = golf_encoded()
    enc = CARTClassifier(criterion="entropy").fit(Xe, ye).tree_
    assert enc.n_leaves == tree.n_leaves
    assert sorted(enc.improvement) == pytest.approx(sorted(tree.improvement), rel=1e-12)
