"""Variable importances: ``feature_importances_`` and ``variable_importance_``.

* ``feature_importances_`` is scikit-learn's definition: on continuous data (no ties, so
  both libraries grow the same tree) it equals sklearn's ``feature_importances_`` to
  1e-12, for Gini, entropy and squared error, with and without case weights; and it
  equals a slow recomputation from the node counts (p(t) and i(t) from the class
  counts and the priors, written here from docs/maths.md §1-2), including non-empirical
  priors and costs.
* ``variable_importance_`` is rpart's ``variable.importance`` without surrogates:
  Σ W(root) p(t) Δi(t) over the primary splits (W(t) Δi(t) with empirical priors and
  0-1 cost, the case here; priors, costs and entropy's nats are checked against rpart in
  ``tests/parity/test_rpart_categorical.py``), checked against the node membership of the
  training cases (the decrease of the weighted sum of squares, for regression) and
  against R's rpart when Rscript is available.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, NotFittedError
from cartjit.datasets import load_iris

LEAF = -1


def continuous_class(seed, n=160, p=4, n_classes=3):
    rng = np.random.default_rng(seed)
    # float32 values: scikit-learn's trees work on float32 copies of X
    X = rng.normal(size=(n, p)).astype(np.float32).astype(np.float64)
    score = X[:, 0] + 0.8 * X[:, 1] - 0.5 * X[:, 2] + rng.normal(scale=0.7, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def continuous_reg(seed, n=160, p=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(np.float32).astype(np.float64)
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * X[:, -1] + rng.normal(scale=0.3, size=n)
    return X, y


def split_signature(feature, threshold, n_samples, internal):
    """The multiset of (feature, threshold, n) of the splits: the tree up to node order
    (thresholds to 6 decimals: scikit-learn's are midpoints of float32 values)."""
    return sorted(zip(feature[internal].tolist(), np.round(threshold[internal], 6).tolist(),
                      n_samples[internal].tolist()))


def assert_same_tree(ours, theirs):
    t, s = ours.tree_, theirs.tree_
    mine = split_signature(t.feature, t.threshold, t.n_node_samples, t.left != LEAF)
    sk = split_signature(s.feature, s.threshold, s.n_node_samples, s.children_left != -1)
    assert mine == sk


# --------------------------------------------------------------------------- sklearn

@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_classifier_importances_equal_sklearn(criterion, weighted, seed):
    tree = pytest.importorskip("sklearn.tree")
    X, y = continuous_class(seed, n=1000)  # large nodes: no tied splits
    w = np.random.default_rng(seed + 10).integers(1, 4, size=len(y)).astype(float) \
        if weighted else None
    ours = CARTClassifier(criterion, max_depth=3, min_samples_leaf=10).fit(
        X, y, sample_weight=w)
    theirs = tree.DecisionTreeClassifier(criterion=criterion, max_depth=3, min_samples_leaf=10,
                                         random_state=0).fit(X, y, sample_weight=w)
    assert_same_tree(ours, theirs)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regressor_importances_equal_sklearn(weighted, seed):
    tree = pytest.importorskip("sklearn.tree")
    X, y = continuous_reg(seed, n=1000)
    w = np.random.default_rng(seed + 20).uniform(0.5, 2.0, size=len(y)) if weighted else None
    # leaves of at least 10 cases: no tiny node where two features give the same partition
    ours = CARTRegressor(max_depth=4, min_samples_leaf=10).fit(X, y, sample_weight=w)
    theirs = tree.DecisionTreeRegressor(max_depth=4, min_samples_leaf=10,
                                        random_state=0).fit(X, y, sample_weight=w)
    assert_same_tree(ours, theirs)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- slow recomputation

def gini(q):
    p = q / q.sum()
    return 1.0 - np.sum(p ** 2)


def entropy(q):
    p = q / q.sum()
    p = p[p > 0]
    return -np.sum(p * np.log2(p))


def slow_feature_importances(est, impurity):
    """Σ p(t) Δi(t) per feature from the class counts N_j(t) alone: q_j(t) = π'(j)
    N_j(t)/N_j with π' ∝ π(j) Σ_i C(i|j) (docs/maths.md §2), p(t) = Σ_j q_j(t),
    i(t) from q(t)/p(t), Δi = i(t) - p_L/p i(t_L) - p_R/p i(t_R); then normalised."""
    t = est.tree_
    altered = est.priors_ * est.cost_.sum(axis=1)
    altered = altered / altered.sum()
    q = t.value * (altered / est.class_weight_totals_)
    out = np.zeros(est.n_features_in_)
    for node in range(t.n_nodes):
        if t.left[node] == LEAF:
            continue
        L, R = t.left[node], t.right[node]
        p, pL, pR = q[node].sum(), q[L].sum(), q[R].sum()
        delta = impurity(q[node]) - pL / p * impurity(q[L]) - pR / p * impurity(q[R])
        out[t.feature[node]] += p * delta
    return out / out.sum()


@pytest.mark.parametrize("criterion, impurity", [("gini", gini), ("entropy", entropy)])
@pytest.mark.parametrize("params", [{}, {"priors": "equal"},
                                    {"priors": [0.5, 0.3, 0.2],
                                     "cost": [[0, 1, 4], [1, 0, 1], [2, 1, 0]]}])
def test_feature_importances_equal_a_slow_recomputation(criterion, impurity, params):
    X, y = continuous_class(3, n=120)
    kwargs = dict(params)
    if "cost" in kwargs:
        kwargs["cost"] = np.asarray(kwargs["cost"], dtype=float)
    est = CARTClassifier(criterion, max_depth=4, **kwargs).fit(X, y)
    assert est.tree_.n_leaves > 3
    np.testing.assert_allclose(est.feature_importances_,
                               slow_feature_importances(est, impurity), rtol=1e-10,
                               atol=1e-14)
    assert est.feature_importances_.sum() == pytest.approx(1.0, abs=1e-12)


def test_regressor_importances_from_the_cases_of_each_node():
    """p(t) Δi(t) = (SS(t) - SS(t_L) - SS(t_R)) / W, with SS the weighted sum of squares
    of the training cases that reach each node (read off decision_path)."""
    X, y = continuous_reg(4, n=100)
    w = np.random.default_rng(4).uniform(0.5, 2.0, size=len(y))
    est = CARTRegressor(max_depth=4).fit(X, y, sample_weight=w)
    ss = node_sums_of_squares(est, X, y, w)
    t = est.tree_
    expected = np.zeros(X.shape[1])
    for node in np.flatnonzero(t.left != LEAF):
        expected[t.feature[node]] += ss[node] - ss[t.left[node]] - ss[t.right[node]]
    np.testing.assert_allclose(est.feature_importances_, expected / expected.sum(),
                               rtol=1e-9)
    # variable_importance_: the same decreases, not normalised
    vi = est.variable_importance_
    for j, name in enumerate([f"x{j}" for j in range(X.shape[1])]):
        if expected[j] > 0:
            assert vi[name] == pytest.approx(expected[j], rel=1e-9)
        else:
            assert name not in vi.index


def node_sums_of_squares(est, X, y, w):
    indptr, indices = est.decision_path_arrays(X)
    ss = np.zeros(est.tree_.n_nodes)
    members = [[] for _ in range(est.tree_.n_nodes)]
    for i in range(X.shape[0]):
        for node in indices[indptr[i]:indptr[i + 1]]:
            members[node].append(i)
    for node, rows in enumerate(members):
        rows = np.asarray(rows)
        mean = np.average(y[rows], weights=w[rows])
        ss[node] = np.sum(w[rows] * (y[rows] - mean) ** 2)
    return ss


# --------------------------------------------------------------------------- variable_importance_

def test_classifier_variable_importance_is_weight_times_decrease():
    X, y = continuous_class(5, n=150)
    w = np.random.default_rng(5).integers(1, 5, size=len(y)).astype(float)
    est = CARTClassifier(max_depth=4).fit(X, y, sample_weight=w)
    t = est.tree_
    totals = np.zeros(X.shape[1])
    for node in np.flatnonzero(t.left != LEAF):
        # Gini decrease with empirical priors: proportions are the weighted counts
        n, nl, nr = t.value[node], t.value[t.left[node]], t.value[t.right[node]]
        delta = gini(n) - nl.sum() / n.sum() * gini(nl) - nr.sum() / n.sum() * gini(nr)
        totals[t.feature[node]] += n.sum() * delta
    vi = est.variable_importance_
    assert vi.name == "variable_importance"
    expected = pd.Series(totals, index=[f"x{j}" for j in range(4)])
    expected = expected[expected > 0].sort_values(ascending=False, kind="stable")
    assert list(vi.index) == list(expected.index)
    np.testing.assert_allclose(vi.to_numpy(), expected.to_numpy(), rtol=1e-10)


def test_iris_root_importance_by_hand():
    """Iris, Gini: the root split separates the 50 setosa, Δi = 2/3 - 100/150 · 1/2 = 1/3,
    so its rpart importance is 150 · 1/3 = 50 (rpart's printed ``improve``)."""
    X, y = load_iris(return_X_y=True)
    est = CARTClassifier(max_depth=1).fit(X, y)
    vi = est.variable_importance_
    assert list(vi.index) == ["petal_length"]
    assert vi["petal_length"] == pytest.approx(50.0, rel=1e-12)
    np.testing.assert_array_equal(est.feature_importances_, [0, 0, 1, 0])


def test_ties_in_importance_keep_feature_order():
    # two copies of one feature: the second is never used (lowest index wins ties), and
    # equal importances keep the order of the features
    X = np.array([[0, 5], [1, 4], [2, 3], [3, 2]] * 3, dtype=float)
    y = np.array([0, 0, 1, 1] * 3)
    est = CARTClassifier().fit(X, y)
    assert list(est.variable_importance_.index) == ["x0"]
    est = CARTClassifier().fit(np.column_stack([X[:, 0], -X[:, 0]]), y)
    assert list(est.variable_importance_.index) == ["x0"]


def test_single_leaf_and_names():
    X = pd.DataFrame({"a": np.arange(6.0), "b": np.ones(6)})
    est = CARTRegressor().fit(X, np.ones(6))
    assert est.tree_.n_nodes == 1
    np.testing.assert_array_equal(est.feature_importances_, [0.0, 0.0])
    vi = est.variable_importance_
    assert len(vi) == 0 and vi.name == "variable_importance"
    est = CARTRegressor().fit(X, np.arange(6.0) ** 2)
    assert list(est.variable_importance_.index) == ["a"]


def test_importances_follow_the_pruned_tree():
    X, y = continuous_class(6)
    est = CARTClassifier().fit(X, y)
    path = est.cost_complexity_path()
    pruned = est.prune(float(path["alpha"].iloc[-2]))  # two or three leaves
    assert pruned.tree_.n_leaves < est.tree_.n_leaves
    used = set(pruned.tree_.feature[pruned.tree_.left != LEAF].tolist())
    assert set(np.flatnonzero(pruned.feature_importances_ > 0).tolist()) == used
    assert not np.allclose(pruned.feature_importances_, est.feature_importances_)
    cv = CARTClassifierCV(cv=5).fit(X, y)
    assert cv.feature_importances_.sum() == pytest.approx(1.0) or cv.tree_.n_nodes == 1


def test_not_fitted():
    est = CARTClassifier()
    assert not hasattr(est, "feature_importances_")
    with pytest.raises(NotFittedError):
        est.variable_importance_


# --------------------------------------------------------------------------- R's rpart

R_SCRIPT = r"""
library(rpart)
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
method <- args[2]
f <- rpart(y ~ ., data = d, method = method,
           control = rpart.control(cp = 0, minsplit = 2, minbucket = 1, xval = 0,
                                   maxdepth = as.integer(args[3]), maxsurrogate = 0,
                                   maxcompete = 0))
vi <- f$variable.importance
for (n in names(vi)) cat(n, sprintf("%.17g", vi[[n]]), "\n")
"""


@pytest.mark.parity
@pytest.mark.parametrize("task", ["class", "anova"])
def test_variable_importance_equals_rpart(tmp_path, task):
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript not found")
    if task == "class":
        X, y = continuous_class(7, n=120, p=3)
        est = CARTClassifier(max_depth=3).fit(X, y)
    else:
        X, y = continuous_reg(7, n=120, p=3)
        est = CARTRegressor(max_depth=3).fit(X, y)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"]).assign(y=y)
    frame.to_csv(tmp_path / "d.csv", index=False, float_format="%.17g")
    (tmp_path / "vi.R").write_text(R_SCRIPT)
    out = subprocess.run([rscript, str(tmp_path / "vi.R"), str(tmp_path / "d.csv"), task,
                          "3"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        if "no package called" in out.stderr:
            pytest.skip("R's rpart is not installed")
        raise RuntimeError(out.stderr)
    r = {line.split()[0]: float(line.split()[1]) for line in out.stdout.splitlines() if line}
    vi = est.variable_importance_
    assert sorted(r) == sorted(vi.index)
    for name, value in r.items():
        assert vi[name] == pytest.approx(value, rel=1e-9), name
