"""tied_splits and summary's "Tied with" lines, against a brute-force exact search.

The reference walks the fitted tree's splits by hand (no missing values), lists every
midpoint split of every feature at every split node, and computes its goodness with
Python's fractions (Gini, squared error) or with 80-digit decimal logarithms (entropy):
the ties are the splits whose value equals the chosen split's.
"""
from __future__ import annotations

from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, summary
from cartjit.datasets import load_iris
from cartjit.steps import tied_splits
from cartjit.steps.ties import EXACT, SAME_PARTITION, WITHIN_TOLERANCE


def node_cases(tree, X):
    """Row indices of every node of ``tree``, by sending X down its thresholds."""
    cases = {0: np.arange(X.shape[0])}
    for t in range(tree.n_nodes):
        if tree.left[t] < 0:
            continue
        idx = cases[t]
        go = X[idx, tree.feature[t]] <= tree.threshold[t]
        cases[int(tree.left[t])] = idx[go]
        cases[int(tree.right[t])] = idx[~go]
    return cases


def gini_value(y_left, y_right, classes):
    def gini(ys):
        n = len(ys)
        return 1 - sum(Fraction(int(np.sum(ys == c)), n) ** 2 for c in classes)
    n_l, n_r = len(y_left), len(y_right)
    n = n_l + n_r
    return -(Fraction(n_l, n) * gini(y_left) + Fraction(n_r, n) * gini(y_right))


def entropy_value(y_left, y_right, classes):
    getcontext().prec = 80

    def h(ys):
        n = len(ys)
        out = Decimal(0)
        for c in classes:
            k = int(np.sum(ys == c))
            if k:
                p = Decimal(k) / Decimal(n)
                out -= p * p.ln()
        return out
    n_l, n_r = len(y_left), len(y_right)
    return -(Decimal(n_l) * h(y_left) + Decimal(n_r) * h(y_right))


def sse_value(y_left, y_right):
    def between(ys):
        s = sum(Fraction(float(v)) for v in ys)
        return s * s / len(ys)
    return between(y_left) + between(y_right)


def reference_ties(est, X, y, value, min_leaf=1):
    """{(node, feature, threshold)} of the splits tied with each chosen split of
    ``tree_`` (goodness equal in the exactness of ``value``), and the same-partition
    ones."""
    tree = est.tree_
    cases = node_cases(tree, X)
    ties, same = set(), set()
    for t in range(tree.n_nodes):
        if tree.left[t] < 0:
            continue
        idx = cases[t]
        f0, c0 = int(tree.feature[t]), float(tree.threshold[t])
        left0 = X[idx, f0] <= c0
        best = value(y[idx][left0], y[idx][~left0])
        for f in range(X.shape[1]):
            vals = np.unique(X[idx, f])
            for a, b in zip(vals[:-1], vals[1:]):
                c = a / 2 + b / 2
                if f == f0 and c == c0:
                    continue
                left = X[idx, f] <= c
                if left.sum() < min_leaf or (~left).sum() < min_leaf:
                    continue
                v = value(y[idx][left], y[idx][~left])
                if isinstance(v, Decimal):
                    equal = abs(v - best) < Decimal(10) ** -60
                else:
                    equal = v == best
                if equal:
                    ties.add((t, f, c))
                    if np.array_equal(left, left0) or np.array_equal(left, ~left0):
                        same.add((t, f, c))
    return ties, same


def found(table, est):
    names = [f"x{j}" for j in range(est.n_features_in_)]
    rows = table[table["kind"].isin([SAME_PARTITION, EXACT])]
    ties = {(int(r.node), names.index(r.feature), float(r.threshold))
            for r in rows.itertuples()}
    same = {(int(r.node), names.index(r.feature), float(r.threshold))
            for r in rows.itertuples() if r.kind == SAME_PARTITION}
    return ties, same


def coarse_classification(seed, n=90, p=4, levels=4, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, p)).astype(float)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, size=n)) % classes
    return X, y.astype(int)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_exact_ties_are_those_of_the_brute_force_search(seed, criterion):
    X, y = coarse_classification(seed)
    X[:, 3] = X[:, 2]  # a duplicated column: every split on x2 has a twin on x3
    est = CARTClassifier(criterion=criterion, min_samples_leaf=3).fit(X, y)
    value = gini_value if criterion == "gini" else entropy_value
    expected, expected_same = reference_ties(est, X, y,
                                             lambda a, b: value(a, b, np.unique(y)), 3)
    table = tied_splits(est, X, y)
    ties, same = found(table, est)
    assert ties == expected
    assert same == expected_same
    assert table["exact"].all()
    assert any(f == 3 for _, f, _ in same) or not any(
        est.tree_.feature[t] == 2 for t in range(est.tree_.n_nodes) if est.tree_.left[t] >= 0)
    assert f"{table['node'].nunique()} of" in table.caption


def test_regression_ties_in_exact_arithmetic():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, size=(60, 3)).astype(float)
    y = (X[:, 0] * 2 + rng.integers(0, 3, size=60)).astype(float) / 4  # dyadic: exact
    X[:, 2] = 2 - X[:, 0]  # a mirrored column: the same partitions, sides swapped
    est = CARTRegressor(min_samples_leaf=2).fit(X, y)
    expected, expected_same = reference_ties(est, X, y, sse_value, 2)
    ties, same = found(tied_splits(est, X, y), est)
    assert ties == expected and same == expected_same
    assert same  # the mirrored column ties at the root


def test_iris_root_ties_petal_length_with_petal_width_by_partition():
    X, y = load_iris(return_X_y=True)
    est = CARTClassifierCV(random_state=0).fit(X, y)
    table = tied_splits(est, X, y)
    root = table[table["node"] == 0]
    assert list(root["kind"]) == [SAME_PARTITION]
    assert root["feature"].iloc[0] == "petal_width"
    # the same 50 cases (the setosa) on the left: checked from the data directly
    assert np.array_equal(X["petal_length"].to_numpy() <= 2.45,
                          X["petal_width"].to_numpy() <= root["threshold"].iloc[0])
    text = summary(est, X=X, y=y)
    assert "Tied with: petal_width <= 0.8 (same partition)" in text
    assert "Tied splits: 1 of 3 split nodes" in text
    assert "Tied with" not in summary(est)


def test_non_integer_weights_fall_back_to_the_engine_tolerance():
    X, y = coarse_classification(3)
    X[:, 3] = X[:, 2] * 10  # a rescaled twin of x2
    w = np.full(len(y), 0.5)
    est = CARTClassifier(min_samples_leaf=3).fit(X, y, sample_weight=w)
    table = tied_splits(est, X, y, sample_weight=w)
    assert not table[table["kind"] == EXACT].shape[0]
    assert set(table["kind"]) <= {SAME_PARTITION, WITHIN_TOLERANCE}
    assert (table.loc[table["kind"] == WITHIN_TOLERANCE, "exact"] == False).all()  # noqa: E712
    # with unit weights the same data give the same ties, now decided exactly
    unit = tied_splits(CARTClassifier(min_samples_leaf=3).fit(X, y), X, y)
    assert set(zip(table["node"], table["tied_with"])) == \
        set(zip(unit["node"], unit["tied_with"]))


def test_bad_arguments():
    X, y = load_iris(return_X_y=True)
    est = CARTClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="both X and y"):
        summary(est, X=X)
    with pytest.raises(ValueError, match="sample_weight"):
        summary(est, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="learning sample"):
        tied_splits(est, X.iloc[:100], y.iloc[:100])
    with pytest.raises(TypeError, match="fitted"):
        tied_splits(object(), X, y)


def test_gini_ties_under_given_priors_use_the_exact_class_factors():
    X, y = coarse_classification(4)
    X[:, 3] = 3 - X[:, 1]
    priors = [0.2, 0.3, 0.5]
    est = CARTClassifier(priors=priors, min_samples_leaf=3).fit(X, y)
    totals = np.bincount(y)
    c = [Fraction(p) / int(n) for p, n in zip(priors, totals)]  # π_j / N_j, exactly

    def value(a, b):  # -(p_L i_L + p_R i_R) up to the node's factor, with q_j = c_j n_j
        def side(ys):
            q = [c[j] * int(np.sum(ys == j)) for j in range(3)]
            s = sum(q)
            return s, 1 - sum((v / s) ** 2 for v in q)
        (sl, gl), (sr, gr) = side(a), side(b)
        return -(sl * gl + sr * gr) / (sl + sr)
    expected, expected_same = reference_ties(est, X, y, value, 3)
    ties, same = found(tied_splits(est, X, y), est)
    assert ties == expected and same == expected_same and same
