"""pruning_steps against the fitted trees: the α it gives every node is the stored
``tree_max_.alpha``, its steps are ``cost_complexity_path()``, and each g_k(t) is the
risk of t minus the risk of the leaves of T_k below it, per leaf removed
(docs/maths.md §4)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTRegressor
from cartjit.steps import pruning_steps


def _leaves_below(tree, t, internal):
    out, stack = [], [t]
    while stack:
        u = stack.pop()
        if internal[u]:
            stack += [tree.left[u], tree.right[u]]
        else:
            out.append(u)
    return out


def _check(est):
    tree = est.tree_max_
    nodes = pruning_steps(est)
    steps = pruning_steps(est, by="step")
    path = est.cost_complexity_path()
    body = steps[steps["k"] >= 1]
    assert body["k"].tolist() == path["k"].tolist()
    np.testing.assert_allclose(body["alpha"], path["alpha"], rtol=1e-12, atol=1e-15)
    assert body["n_leaves"].tolist() == path["n_leaves"].tolist()
    np.testing.assert_allclose(body["risk"], path["risk"], rtol=1e-12, atol=1e-15)
    # every node's α: the α_{k+1} of the step that removes it (0 at T_max -> T_1)
    alpha = np.zeros(tree.n_nodes)
    for k, row in steps.iterrows():
        if not row["weakest"]:
            continue
        internal = np.zeros(tree.n_nodes, dtype=bool)
        internal[nodes.loc[k].index.to_numpy()] = True
        for t in row["weakest"]:
            stack = [t]
            while stack:
                u = stack.pop()
                if tree.left[u] >= 0 and (internal[u] or k == 0):
                    alpha[u] = row["alpha_next"]
                    stack += [tree.left[u], tree.right[u]]
    np.testing.assert_allclose(alpha, tree.alpha, rtol=1e-12, atol=1e-15)
    # g_k(t) from the leaves of T_k below t, and the weakest links hold the least g
    for k in nodes.index.get_level_values(0).unique():
        block = nodes.loc[k]
        internal = np.zeros(tree.n_nodes, dtype=bool)
        internal[block.index.to_numpy()] = True
        for t, row in block.iterrows():
            below = _leaves_below(tree, t, internal)
            assert row["leaves_branch"] == len(below)
            g = (tree.risk[t] - tree.risk[below].sum()) / (len(below) - 1)
            assert row["g"] == pytest.approx(g, rel=1e-9, abs=1e-15)
        assert block.loc[block["weakest"], "g"].max() <= block["g"].min() * (1 + 1e-9) + 1e-12
    return len(path)


def test_every_node_alpha_classification():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 3)).round(1)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.8, size=200) > 0).astype(int)
    y[rng.random(200) < 0.2] = 2
    w = rng.integers(1, 4, size=200).astype(float)
    assert _check(CARTClassifier().fit(X, y, sample_weight=w)) > 5
    assert _check(CARTClassifier(priors="equal", criterion="entropy").fit(X, y)) > 5
    cost = np.array([[0, 1, 2], [1, 0, 1], [4, 1, 0]], dtype=float)
    assert _check(CARTClassifier(cost=cost, min_samples_leaf=3).fit(X, y)) > 3


def test_every_node_alpha_regression():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(150, 2))
    y = np.where(X[:, 0] > 0, 2.0, 0.0) + X[:, 1] + rng.normal(scale=0.5, size=150)
    assert _check(CARTRegressor(min_samples_leaf=4).fit(X, y)) > 5


def test_tmax_to_t1_step():
    """Iris petals: T_max has a split whose children are both virginica, which lowers
    no risk; step k = 0 drops it at g = 0, leaving T_1 with 7 leaves (docs/maths.md §6)."""
    from cartjit.datasets import load_iris

    X, y = load_iris(petal_only=True, return_X_y=True)
    est = CARTClassifier().fit(X, y)
    _check(est)
    steps = pruning_steps(est, by="step")
    first = steps.iloc[0]
    assert first["k"] == 0 and first["n_leaves"] == 8 and first["n_leaves_next"] == 7
    assert first["alpha_next"] == 0 and len(first["weakest"]) == 1
    t = first["weakest"][0]
    tree = est.tree_max_
    assert tree.label[tree.left[t]] == tree.label[tree.right[t]]
    assert tree.risk[t] == pytest.approx(tree.risk[tree.left[t]] + tree.risk[tree.right[t]])


def test_bad_input():
    X = np.arange(10.0).reshape(-1, 1)
    y = np.array([0, 1] * 5)
    with pytest.raises(ValueError, match="by"):
        pruning_steps(CARTClassifier().fit(X, y), by="leaf")
    with pytest.raises(ValueError, match="rpart"):
        pruning_steps(CARTClassifier(compat="rpart").fit(X, y))
    with pytest.raises(TypeError, match="fitted"):
        pruning_steps(pd.DataFrame())
