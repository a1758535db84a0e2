"""split_candidates against the fitted trees: at every node of random trees the row it
marks chosen is the node's split, and its goodness is ``tree_max_.improvement`` to
1e-12; the best row of each other feature is that feature's competitor; and the
numbers of a row are those of a direct count (docs/maths.md §2, §3, §7, §8)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTRegressor
from cartjit.steps import split_candidates


def _levels(est, row, side, f):
    """The level names in set ``side`` of ``level_sets[row]``."""
    words = est.tree_max_.level_sets[row, side]
    cats = est.categories_[f]
    return {str(cats[c]) for c in range(len(cats))
            if (int(words[c // 64]) >> (c % 64)) & 1}


def _set(text):
    return set(text.strip("{}").split(", "))


def _close(a, b):
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


def _check_every_node(est, X, y, w=None):
    tree = est.tree_max_
    names = list(getattr(est, "feature_names_in_", [f"x{j}" for j in range(X.shape[1])]))
    for t in range(tree.n_nodes):
        table = split_candidates(est, X, y, node=t, sample_weight=w)
        chosen = table[table["chosen"]]
        if tree.left[t] < 0:
            assert chosen.empty, (t, chosen)
            continue
        assert len(chosen) == 1, (t, table)
        row = chosen.iloc[0]
        f = int(tree.feature[t])
        assert row["feature"] == names[f]
        value = row["goodness"] if "goodness" in table else row["delta_i"]
        assert _close(value, tree.improvement[t]), (t, value, tree.improvement[t])
        if tree.level_row[t] >= 0:
            assert np.isnan(row["threshold"])
            assert _set(row["left"]) == _levels(est, tree.level_row[t], 0, f)
            assert _set(row["right"]) == _levels(est, tree.level_row[t], 1, f)
        else:
            assert row["threshold"] == tree.threshold[t]
        # the competitors: the best of each other feature, in the same units
        start = int(tree.competitor_start[t])
        for c in range(start, start + int(tree.n_competitors[t])):
            g = int(tree.competitor_feature[c])
            rows = table[(table["feature"] == names[g]) & table["allowed"]]
            col = "goodness" if "goodness" in table else "delta_i"
            assert _close(rows[col].max(), tree.competitor_improvement[c]), (t, g)
    return tree.n_nodes


def _numeric(rng, n, p, ties=True):
    X = rng.normal(size=(n, p))
    return np.round(X, 1) if ties else X


@pytest.mark.parametrize("criterion", ["gini", "entropy", "twoing"])
def test_chosen_rows_are_the_fitted_splits_numeric(criterion):
    rng = np.random.default_rng(1)
    X = _numeric(rng, 120, 3)
    y = (X[:, 0] + 0.7 * X[:, 1] + rng.normal(scale=0.8, size=120) > 0).astype(int)
    y[rng.random(120) < 0.3] = 2
    est = CARTClassifier(criterion=criterion, max_depth=4).fit(X, y)
    assert _check_every_node(est, X, y) > 5


def test_chosen_rows_with_weights_priors_and_costs():
    rng = np.random.default_rng(2)
    X = _numeric(rng, 100, 3)
    y = (X[:, 0] - X[:, 2] + rng.normal(size=100) > 0).astype(int)
    w = rng.integers(0, 4, size=100).astype(float)  # zeros take no part
    est = CARTClassifier(max_depth=4, priors=[0.3, 0.7]).fit(X, y, sample_weight=w)
    assert _check_every_node(est, X, y, w) > 5
    cost = np.array([[0.0, 1.0], [3.0, 0.0]])
    est = CARTClassifier(criterion="entropy", cost=cost, max_depth=3,
                         min_samples_leaf=5).fit(X, y, sample_weight=w)
    assert _check_every_node(est, X, y, w) > 3


def test_chosen_rows_regression_with_weights():
    rng = np.random.default_rng(3)
    X = _numeric(rng, 150, 3)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(scale=0.3, size=150)
    w = rng.uniform(0.5, 2.0, size=150)
    est = CARTRegressor(max_depth=5, min_samples_leaf=3).fit(X, y, sample_weight=w)
    assert _check_every_node(est, X, y, w) > 10


def _categorical_frame(rng, n):
    return pd.DataFrame({
        "colour": pd.Categorical(rng.choice(list("abcdef"), size=n)),
        "size": rng.normal(size=n).round(1),
        "shape": pd.Categorical(rng.choice(["round", "square", "star", "oval"], size=n)),
    })


def test_chosen_rows_categorical_two_classes_and_regression():
    rng = np.random.default_rng(4)
    X = _categorical_frame(rng, 160)
    score = X["colour"].isin(["a", "c", "e"]).to_numpy() + 0.5 * X["size"].to_numpy()
    y = (score + rng.normal(scale=0.7, size=160) > 0.6).astype(int)
    est = CARTClassifier(max_depth=4).fit(X, y)
    assert est.tree_max_.has_subset_splits
    assert _check_every_node(est, X, y) > 5
    yr = score + rng.normal(scale=0.3, size=160)
    reg = CARTRegressor(max_depth=4).fit(X, yr)
    assert reg.tree_max_.has_subset_splits
    assert _check_every_node(reg, X, yr) > 5


def test_chosen_rows_categorical_three_classes_exhaustive():
    rng = np.random.default_rng(5)
    X = _categorical_frame(rng, 150)
    y = np.where(X["colour"].isin(["a", "b"]), 0, np.where(X["shape"] == "star", 1, 2))
    flip = rng.random(150) < 0.25
    y[flip] = rng.integers(0, 3, size=flip.sum())
    est = CARTClassifier(criterion="entropy", max_depth=4).fit(X, y)
    assert est.tree_max_.has_subset_splits
    assert _check_every_node(est, X, y) > 5


def test_chosen_rows_with_missing_values():
    rng = np.random.default_rng(6)
    X = _categorical_frame(rng, 160)
    X["size2"] = X["size"] + rng.normal(scale=0.5, size=160).round(1)
    y = ((X["size"] > 0).to_numpy() ^ X["colour"].isin(["a", "b"]).to_numpy()).astype(int)
    y[rng.random(160) < 0.15] ^= 1
    X.loc[rng.random(160) < 0.2, "size"] = np.nan
    X.loc[rng.random(160) < 0.15, "colour"] = np.nan
    w = rng.uniform(0.5, 1.5, size=160)
    est = CARTClassifier(max_depth=4).fit(X, y, sample_weight=w)
    assert est.tree_max_.has_surrogates
    assert _check_every_node(est, X, y, w) > 5
    table = split_candidates(est, X, y, sample_weight=w)
    assert {"n_missing", "share", "goodness"} <= set(table.columns)
    yr = X["size2"].to_numpy() * 2 + rng.normal(size=160)
    reg = CARTRegressor(max_depth=4, use_surrogate=1).fit(X, yr)
    assert _check_every_node(reg, X, yr) > 5


def test_a_row_is_a_direct_count():
    """One row recomputed by hand from the cases: counts, i(t_L), i(t_R), Δi (Gini)."""
    rng = np.random.default_rng(7)
    X = _numeric(rng, 80, 2)
    y = (X[:, 0] > 0.2).astype(int)
    y[:10] = 1 - y[:10]
    est = CARTClassifier(max_depth=1).fit(X, y)
    table = split_candidates(est, X, y)
    row = table.iloc[17]
    f = 0 if row["feature"] == "x0" else 1
    left = X[:, f] <= row["threshold"]

    def gini(v):
        p = np.bincount(v, minlength=2) / v.shape[0]
        return 1 - (p ** 2).sum()

    assert row["n_left"] == left.sum() and row["L[1]"] == y[left].sum()
    assert row["i_left"] == pytest.approx(gini(y[left]), abs=1e-14)
    assert row["i_right"] == pytest.approx(gini(y[~left]), abs=1e-14)
    expected = gini(y) - left.mean() * gini(y[left]) - (~left).mean() * gini(y[~left])
    assert row["delta_i"] == pytest.approx(expected, abs=1e-14)


def test_ties_are_marked():
    """Two copies of a feature: every candidate of the copy ties with the original's,
    and the lower feature index is chosen (docs/maths.md §2)."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=60).round(1)
    X = np.column_stack([x, x])
    y = (x + rng.normal(scale=0.5, size=60) > 0).astype(int)
    est = CARTClassifier(max_depth=1).fit(X, y)
    table = split_candidates(est, X, y)
    chosen = table[table["chosen"]].iloc[0]
    assert chosen["feature"] == "x0"
    twin = table[(table["feature"] == "x1") & (table["threshold"] == chosen["threshold"])]
    assert twin["tied"].all()


def test_all_subsets_contain_the_ordered_best():
    rng = np.random.default_rng(9)
    X = _categorical_frame(rng, 120)
    y = X["colour"].isin(["b", "d", "f"]).to_numpy().astype(int)
    y[rng.random(120) < 0.2] ^= 1
    est = CARTClassifier(max_depth=1).fit(X, y)
    every = split_candidates(est, X, y, features="colour", all_subsets=True)
    assert len(every) == 2 ** 5 - 1
    assert every["searched"].sum() == 5
    # the ordering theorem: the best of all 31 is one of the 5 scanned
    assert every["delta_i"].max() == every.loc[every["searched"], "delta_i"].max()


def test_bad_input_is_named():
    rng = np.random.default_rng(10)
    X = _numeric(rng, 40, 2)
    y = (X[:, 0] > 0).astype(int)
    est = CARTClassifier(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="node"):
        split_candidates(est, X, y, node=99)
    with pytest.raises(TypeError, match="node"):
        split_candidates(est, X, y, node=1.5)
    with pytest.raises(ValueError, match="features"):
        split_candidates(est, X, y, features="nope")
    with pytest.raises(ValueError, match="learning sample"):
        split_candidates(est, X, 1 - y)
    with pytest.raises(TypeError, match="fitted"):
        split_candidates(CARTClassifier(), X, y)


def test_ordinal_rpart_mode_and_cases_that_stay():
    """An ordered categorical is split by its codes (named by level); rpart's mode
    without surrogates and use_surrogate=0 leave the cases missing the split feature in
    the node, which the tables follow (docs/maths.md §8, §9)."""
    rng = np.random.default_rng(13)
    n = 120
    X = pd.DataFrame({
        "grade": pd.Categorical(rng.choice(["lo", "mid", "hi"], size=n),
                                categories=["lo", "mid", "hi"], ordered=True),
        "x": rng.normal(size=n).round(1)})
    y = (X["grade"].cat.codes.to_numpy() + rng.normal(size=n) > 1).astype(int)
    est = CARTClassifier(max_depth=3).fit(X, y)
    assert _check_every_node(est, X, y) > 3
    grade = split_candidates(est, X, y, features="grade")
    assert grade["left"].tolist() == ["<= lo", "<= mid"]
    X.loc[rng.random(n) < 0.2, "x"] = np.nan
    for kw in ({"compat": "rpart", "max_surrogate": 0}, {"use_surrogate": 0}):
        est = CARTClassifier(**kw).fit(X, y)
        assert _check_every_node(est, X, y) > 5


def test_many_levels_with_three_classes():
    rng = np.random.default_rng(14)
    X = pd.DataFrame({"c": pd.Categorical(rng.choice(list("abcdefghijklmn"), size=200))})
    y = rng.integers(0, 3, size=200)
    est = CARTClassifier(max_depth=1).fit(X, y)
    with pytest.raises(ValueError, match="max_categories_exhaustive"):
        split_candidates(est, X, y)
    est = CARTClassifier(max_depth=1, max_categories_exhaustive=14).fit(X, y)
    with pytest.raises(ValueError, match="max_levels"):
        split_candidates(est, X, y)
    table = split_candidates(est, X, y, max_levels=14)
    assert len(table) == 2 ** 13 - 1
    assert table["chosen"].sum() == 1
    assert table.loc[table["chosen"], "delta_i"].item() == pytest.approx(
        est.tree_max_.improvement[0], abs=1e-12)
