"""Cost-complexity (weakest-link) pruning, docs/maths.md §4 (and the worked example of §6).

The expectations come from outside cartjit:

* exact node risks R(t) are recomputed from the learning cases that reach each node
  (rational arithmetic, :mod:`pruning_reference`), never read from cartjit's arrays;
* the exact sequence 0 = α_1 < … < α_K, |T~_k|, R(T_k) comes from enumerating EVERY
  pruned subtree of T_max (small trees) — T(α) read from cartjit's stored per-node α by
  the contract of cartjit/engine/tree.py must be a minimiser of R(T) + α|T~| and the smallest
  one, at each α_k, between them, just below them and above α_K;
* scikit-learn's ``cost_complexity_pruning_path`` for the impurity-weighted mode;
* docs/maths.md §6's iris sequences as fractions.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartjit import CARTClassifier, CARTRegressor, NotFittedError
from cartjit.datasets import load_iris

from references.pruning_reference import (all_pruned_subtrees, class_node_risks, exact_sequence,
                                          leaves_of, merge_ties, min_risk_by_size, node_masks,
                                          regression_node_risks, smallest_minimiser,
                                          subtree_from_alpha)

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ALPHA_RTOL = 1e-9


# ----------------------------------------------------------------------------- problems

# Dyadic priors, integer or dyadic responses: values with a finite binary expansion, so
# that ties in the data stay exact ties in floating point (a decimal 0.2 + 0.3 = 0.5 is not
# one for the binary 0.2, 0.3 and 0.5, and would show as two steps 1e-14 apart in exact
# arithmetic but one within the weakest-link loop's tie tolerance). Real-valued weights
# are random.
PRIOR_CHOICES = {2: [(0.25, 0.75), (0.5, 0.5), (0.625, 0.375)],
                 3: [(0.125, 0.375, 0.5), (0.5, 0.25, 0.25)]}


@st.composite
def class_problems(draw, max_points=12, max_n=40):
    """A small classification problem with at most ``max_points`` distinct rows of X.

    T_max's leaves partition the distinct rows, so it has at most ``max_points`` leaves
    (brute force stays cheap); repeated rows with different labels make impure leaves.
    """
    # sizes come from the seeded generator, not from hypothesis (which favours the
    # smallest values): most trees then have several leaves and pruning steps
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_points = int(rng.integers(3, max_points + 1))
    n_features = int(rng.integers(1, 4))
    n_classes = draw(st.integers(2, 3))
    n = int(rng.integers(max(n_points, n_classes), max_n + 1))
    palette = np.round(rng.normal(size=(n_points, n_features)), 1)
    rows = np.concatenate([np.arange(n_points), rng.integers(0, n_points, n - n_points)])
    X = palette[rows]
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)  # every class present
    weights = draw(st.sampled_from(["none", "int", "dyadic", "real"]))
    w = {"none": np.ones(n),
         "int": rng.integers(1, 5, n).astype(float),
         "dyadic": rng.integers(1, 17, n) / 8.0,
         "real": rng.uniform(0.3, 3.0, n)}[weights]
    priors = draw(st.sampled_from(["empirical", "equal", "given"]))
    if priors == "given":
        priors = np.array(draw(st.sampled_from(PRIOR_CHOICES[n_classes])))
    cost = None
    if draw(st.booleans()):
        cost = rng.integers(1, 5, (n_classes, n_classes)).astype(float)
        np.fill_diagonal(cost, 0.0)
    criterion = draw(st.sampled_from(["gini", "entropy", "twoing"]))
    return dict(X=X, y=y, w=w, n_classes=n_classes, priors=priors, cost=cost,
                criterion=criterion)


@st.composite
def reg_problems(draw, max_points=12, max_n=40):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_points = int(rng.integers(3, max_points + 1))
    n_features = int(rng.integers(1, 4))
    n = int(rng.integers(n_points, max_n + 1))
    palette = np.round(rng.normal(size=(n_points, n_features)), 1)
    rows = np.concatenate([np.arange(n_points), rng.integers(0, n_points, n - n_points)])
    X = palette[rows]
    kind = draw(st.sampled_from(["int", "dyadic"]))
    y = rng.integers(0, 8, n).astype(float) if kind == "int" else rng.integers(-40, 40, n) / 16
    weights = draw(st.sampled_from(["none", "int", "real"]))
    w = {"none": np.ones(n), "int": rng.integers(1, 5, n).astype(float),
         "real": rng.uniform(0.3, 3.0, n)}[weights]
    return dict(X=X, y=y, w=w)


def fit_class(p, **kw):
    est = CARTClassifier(criterion=p["criterion"], priors=p["priors"], cost=p["cost"], **kw)
    return est.fit(p["X"], p["y"], sample_weight=p["w"])


def fit_reg(p, **kw):
    return CARTRegressor(**kw).fit(p["X"], p["y"], sample_weight=p["w"])


def exact_risks(est, p):
    """Exact R(t) of every node of est.tree_max_, from the cases reaching it."""
    t = est.tree_max_
    masks = node_masks(t.left, t.right, t.feature, t.threshold, p["X"])
    if isinstance(est, CARTClassifier):
        priors = p["priors"]
        if isinstance(priors, str):
            priors = None if priors == "empirical" else np.full(p["n_classes"], 1 / p["n_classes"])
        risks, _ = class_node_risks(masks, p["y"], p["w"], p["n_classes"], priors, p["cost"])
    else:
        risks, _ = regression_node_risks(masks, p["y"], p["w"])
    return risks


def root_risk(p, regression=False):
    """R(root) without any tree: min_i Σ_j C(i|j) π(j), or the weighted variance of y."""
    w = p["w"]
    if regression:
        mean = np.sum(w * p["y"]) / w.sum()
        return float(np.sum(w * (p["y"] - mean) ** 2) / w.sum())
    J = p["n_classes"]
    if isinstance(p["priors"], str):
        tot = np.bincount(p["y"], weights=w, minlength=J)
        pi = tot / tot.sum() if p["priors"] == "empirical" else np.full(J, 1 / J)
    else:
        pi = np.asarray(p["priors"])
    C = 1 - np.eye(J) if p["cost"] is None else p["cost"]
    return float(np.min(pi @ C))


def close(a, b, scale):
    return abs(float(a) - float(b)) <= ALPHA_RTOL * max(abs(float(a)), abs(float(b))) + 1e-12 * scale


# ----------------------------------------------------------------------------- properties


def check_sequence_properties(est, r_root):
    tree = est.tree_max_
    path = est.cost_complexity_path()
    a = path["alpha"].to_numpy()
    leaves = path["n_leaves"].to_numpy()
    risk = path["risk"].to_numpy()
    assert list(path["k"]) == list(range(1, len(path) + 1))
    assert a[0] == 0.0
    assert np.all(np.diff(a) > 0), f"alpha not strictly increasing: {a}"
    assert np.all(np.diff(leaves) < 0), f"n_leaves not strictly decreasing: {leaves}"
    tol = 1e-9 * max(r_root, 1e-300)
    assert np.all(np.diff(risk) > -tol), f"risk decreases: {risk}"
    # at α_{k+1} T_k and T_{k+1} have the same cost-complexity
    for k in range(len(a) - 1):
        assert risk[k + 1] - risk[k] == pytest.approx(a[k + 1] * (leaves[k] - leaves[k + 1]),
                                                      rel=1e-7, abs=tol)
    assert leaves[-1] == 1
    assert risk[-1] == pytest.approx(r_root, rel=1e-12, abs=1e-300)
    if r_root > 0:
        np.testing.assert_allclose(path["cp"], a / r_root, rtol=1e-12)
        np.testing.assert_allclose(path["rel_error"], risk / r_root, rtol=1e-12)
    ap = path["alpha_prime"].to_numpy()
    np.testing.assert_allclose(ap[:-1], np.sqrt(a[:-1] * a[1:]), rtol=1e-15)
    assert ap[-1] == np.inf

    # R(t) >= R(t_L) + R(t_R) at every split of T_max
    internal = np.flatnonzero(tree.left >= 0)
    lhs = tree.risk[internal]
    rhs = tree.risk[tree.left[internal]] + tree.risk[tree.right[internal]]
    assert np.all(lhs >= rhs - tol), "R(t) < R(t_L) + R(t_R)"

    # per-node α: 0 at leaves, never increasing downwards
    na = tree.alpha
    assert np.all(na[tree.left < 0] == 0)
    assert np.all(na[tree.left[internal]] <= na[internal])
    assert np.all(na[tree.right[internal]] <= na[internal])

    # T(α_k) from the stored α has |T~_k| leaves and risk R(T_k), and each T_{k+1} is a
    # pruned subtree of T_k (its nodes are a subset, its splits a subset)
    prev = None
    for k in range(len(a)):
        kept = subtree_from_alpha(tree.left, tree.parent, na, a[k])
        lv = leaves_of(tree.left, tree.right, kept)
        assert len(lv) == leaves[k]
        assert sum(tree.risk[lv]) == pytest.approx(risk[k], rel=1e-9, abs=tol)
        nodes = kept | set(lv)
        if prev is not None:
            assert kept < prev[0] and nodes < prev[1], f"T_{k + 1} not a pruned subtree of T_{k}"
        prev = (kept, nodes)
        # and prune(α_k) gives exactly that subtree
        assert est.prune(float(a[k])).tree_.n_leaves == leaves[k]


@HYP
@given(p=class_problems(max_points=40, max_n=120))
def test_sequence_properties_classification(p):
    est = fit_class(p)
    check_sequence_properties(est, root_risk(p))


@HYP
@given(p=reg_problems(max_points=40, max_n=120))
def test_sequence_properties_regression(p):
    est = fit_reg(p)
    check_sequence_properties(est, root_risk(p, regression=True))


# ----------------------------------------------------------------------------- brute force


def check_against_enumeration(est, risks):
    """T(α) read from the stored per-node α minimises R + α|T~| and is the smallest minimiser."""
    tree = est.tree_max_
    left, right = tree.left, tree.right
    assert tree.n_leaves <= 12
    subtrees = all_pruned_subtrees(left, right, risks)
    scale = float(risks[0]) if risks[0] > 0 else 1.0

    # cartjit's node risks agree with the exact ones
    for t in range(tree.n_nodes):
        assert close(tree.risk[t], risks[t], scale), (t, tree.risk[t], float(risks[t]))

    # the knapsack DP of pruning_reference agrees with the enumeration
    by_size = {}
    for s in subtrees:
        if s.n_leaves not in by_size or s.risk < by_size[s.n_leaves]:
            by_size[s.n_leaves] = s.risk
    assert by_size == min_risk_by_size(left, right, risks)

    exact = exact_sequence(by_size)
    # no near-ties (distinct α closer than cartjit's tie tolerance) in these data
    assert merge_ties(exact, 1e-8) == exact
    path = est.cost_complexity_path()
    a = path["alpha"].to_numpy()
    assert len(a) == len(exact), (f"cartjit has {len(a)} steps {list(a)}, the exact sequence "
                                  f"{[float(s.alpha) for s in exact]}")
    for k, step in enumerate(exact):
        assert close(a[k], step.alpha, scale), (k, a[k], float(step.alpha))
        assert path["n_leaves"].iloc[k] == step.n_leaves
        assert close(path["risk"].iloc[k], step.risk, scale)

    def check_at(alpha_exact, alpha_float, expect_k):
        values = [s.risk + alpha_exact * s.n_leaves for s in subtrees]
        best = min(values)
        minimisers = [s for s, v in zip(subtrees, values) if v == best]
        smallest = min(m.n_leaves for m in minimisers)
        got = subtree_from_alpha(left, tree.parent, tree.alpha, alpha_float)
        got_risk = sum((risks[t] for t in leaves_of(left, right, got)), Fraction(0))
        got_leaves = len(leaves_of(left, right, got))
        assert got_risk + alpha_exact * got_leaves == best, \
            f"T({alpha_float}) does not minimise R + α|T~|"
        assert got_leaves == smallest, f"T({alpha_float}) is not the smallest minimiser"
        assert [m.internal for m in minimisers if m.n_leaves == smallest] == [got]
        # the DP of pruning_reference finds the same subtree
        assert smallest_minimiser(left, right, risks, alpha_exact) == (best, got)
        assert got_leaves == exact[expect_k].n_leaves

    K = len(exact)
    for k in range(K):
        # at α_k (cartjit's float value, judged at the exact breakpoint: ties -> smaller)
        check_at(exact[k].alpha, float(a[k]), k)
        if k + 1 < K:
            mid = (exact[k].alpha + exact[k + 1].alpha) / 2
            check_at(mid, float(mid), k)
        if k > 0:
            below = exact[k].alpha - (exact[k].alpha - exact[k - 1].alpha) / 1000
            check_at(below, float(below), k - 1)
    above = exact[-1].alpha * 2 + 1
    check_at(above, float(above), K - 1)

    # T_1 = T(0): R(T_1) = R(T_max) and T_1 is the smallest subtree with that risk
    r_max = sum((risks[t] for t in np.flatnonzero(left < 0)), Fraction(0))
    assert exact[0].risk == r_max
    t1 = subtree_from_alpha(left, tree.parent, tree.alpha, 0.0)
    same = [s for s in subtrees if s.risk == r_max]
    assert len(leaves_of(left, right, t1)) == min(s.n_leaves for s in same)
    t1_est = est.prune(0.0).tree_
    assert t1_est.n_leaves == len(leaves_of(left, right, t1))


@HYP
@given(p=class_problems())
def test_brute_force_classification(p):
    est = fit_class(p)
    check_against_enumeration(est, exact_risks(est, p))


@HYP
@given(p=reg_problems())
def test_brute_force_regression(p):
    est = fit_reg(p)
    check_against_enumeration(est, exact_risks(est, p))


def test_brute_force_sees_ties_and_zero_gain_splits():
    """A fixed case with a split that does not lower the risk (T_1 < T_max) and two
    branches with equal g pruned in one step."""
    X = np.array([0, 2, 3, 3, 5, 5, 6, 7, 8, 9], dtype=float).reshape(-1, 1)
    y = np.array([0, 1, 1, 1, 1, 0, 0, 0, 0, 1])
    est = CARTClassifier().fit(X, y)
    p = dict(X=X, y=y, w=np.ones(10), n_classes=2, priors="empirical", cost=None)
    check_against_enumeration(est, exact_risks(est, p))
    tree = est.tree_max_
    assert tree.n_leaves == 5
    path = est.cost_complexity_path()
    # by hand: R(root) = 1/2; T_1 drops the split that does not lower the risk (4 leaves,
    # R = 1/10); two branches with g = (R(t) - R(T_t)) / 1 = 1/10 go together (2 leaves,
    # R = 3/10); then the root split with g = (5/10 - 3/10) / 1 = 2/10.
    assert path["n_leaves"].tolist() == [4, 2, 1]
    np.testing.assert_allclose(path["alpha"], [0.0, 0.1, 0.2], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(path["risk"], [0.1, 0.3, 0.5], rtol=1e-12)
    internal = np.flatnonzero(tree.left >= 0)
    collapse_roots = [t for t in internal
                      if abs(tree.alpha[t] - 0.1) < 1e-12 and tree.alpha[tree.parent[t]] > 0.1 + 1e-12]
    assert len(collapse_roots) == 2


# ----------------------------------------------------------------------------- ccp_alpha, prune


def _step_of(path, alpha, est):
    """The row k of ``path`` whose tree T(alpha) is: α_k <= alpha < α_{k+1}, where an
    alpha within ``keeps_split``'s slack below α_{k+1} counts as α_{k+1} (an alpha of
    frac · α_K can land 1e-17 under a step)."""
    from cartjit.engine.pruning import ALPHA_ATOL
    bound = alpha + ALPHA_RTOL * alpha + ALPHA_ATOL * abs(float(est.tree_max_.risk[0]))
    return int(np.searchsorted(path["alpha"].to_numpy(), bound, side="right")) - 1


def _tree_arrays_equal(a, b):
    for name in a._fields:
        x, y = getattr(a, name), getattr(b, name)
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return False
    return True


@HYP
@given(p=class_problems(max_points=30, max_n=80), frac=st.floats(0, 1.2))
def test_prune_is_a_copy_and_equals_fitting_with_ccp_alpha(p, frac):
    est = fit_class(p)
    path = est.cost_complexity_path()
    alpha = float(frac * path["alpha"].iloc[-1])
    before = {name: np.copy(getattr(est.tree_, name)) for name in est.tree_._fields}
    pruned = est.prune(alpha)
    assert pruned is not est and pruned.ccp_alpha == alpha and est.ccp_alpha is None
    for name, arr in before.items():  # the original is untouched
        np.testing.assert_array_equal(getattr(est.tree_, name), arr)
    assert est.tree_.n_leaves == est.tree_max_.n_leaves
    refit = fit_class(p, ccp_alpha=alpha)
    assert _tree_arrays_equal(pruned.tree_, refit.tree_)
    np.testing.assert_array_equal(pruned.predict(p["X"]), refit.predict(p["X"]))
    # T(alpha) is the step k with α_k <= alpha < α_{k+1}, up to the documented slack
    k = _step_of(path, alpha, est)
    assert pruned.tree_.n_leaves == path["n_leaves"].iloc[k]


@HYP
@given(p=reg_problems(max_points=30, max_n=80), frac=st.floats(0, 1.2))
def test_prune_regressor(p, frac):
    est = fit_reg(p)
    path = est.cost_complexity_path()
    alpha = float(frac * path["alpha"].iloc[-1])
    pruned = est.prune(alpha)
    refit = fit_reg(p, ccp_alpha=alpha)
    assert _tree_arrays_equal(pruned.tree_, refit.tree_)
    assert est.tree_.n_leaves == est.tree_max_.n_leaves
    k = _step_of(path, alpha, est)
    assert pruned.tree_.n_leaves == path["n_leaves"].iloc[k]


def test_ccp_alpha_zero_gives_t1():
    # T_max is pure here (R = 0), so T_1 = T_max: every split is on the way to R = 0
    X = np.array([[0.], [1.], [2.], [3.], [4.], [5.]])
    y = np.array([0, 0, 0, 1, 0, 0])
    full = CARTClassifier().fit(X, y)
    assert full.tree_.n_leaves == 3
    assert CARTClassifier(ccp_alpha=0.0).fit(X, y).tree_.n_leaves == 3
    # impure leaves that all predict class 0: no split lowers the risk, T_1 is the root
    X = np.array([[0.], [0.], [1.], [1.], [2.], [2.]])
    y = np.array([0, 1, 0, 0, 0, 1])
    full = CARTClassifier().fit(X, y)
    assert full.tree_.n_leaves == 3
    t1 = CARTClassifier(ccp_alpha=0.0).fit(X, y)
    assert t1.tree_.n_leaves == 1
    assert full.cost_complexity_path()["n_leaves"].tolist() == [1]
    assert full.prune(0.0).tree_.n_leaves == 1


@pytest.mark.parametrize("bad, exc", [(-0.1, ValueError), (float("nan"), ValueError),
                                      (True, TypeError), (np.bool_(False), TypeError),
                                      ("0.1", TypeError), (None, TypeError)])
def test_bad_alpha_rejected(bad, exc):
    X = np.arange(10.0).reshape(-1, 1)
    y = np.arange(10) % 2
    est = CARTClassifier().fit(X, y)
    with pytest.raises(exc, match="alpha"):
        est.prune(bad)
    if bad is not None:
        with pytest.raises(exc, match="ccp_alpha"):
            CARTClassifier(ccp_alpha=bad).fit(X, y)
        with pytest.raises(exc, match="ccp_alpha"):
            CARTRegressor(ccp_alpha=bad).fit(X, y.astype(float))


def test_prune_and_path_need_a_fitted_estimator():
    with pytest.raises(NotFittedError):
        CARTClassifier().prune(0.1)
    with pytest.raises(NotFittedError):
        CARTRegressor().cost_complexity_path()


def test_path_risk_argument():
    X = np.arange(10.0).reshape(-1, 1)
    est = CARTClassifier().fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match="risk"):
        est.cost_complexity_path(risk="gini")


# ----------------------------------------------------------------------------- scikit-learn

try:
    from sklearn import tree as sklearn_tree
except ImportError:  # only the two tests below need it
    sklearn_tree = None

needs_sklearn = pytest.mark.skipif(sklearn_tree is None, reason="needs scikit-learn")


def _float32_normal(rng, shape):
    return rng.normal(size=shape).astype(np.float32).astype(np.float64)


def _same_partition(a_leaves, b_leaves):
    """Two leaf assignments describe the same partition of the cases."""
    pairs = set(zip(a_leaves.tolist(), b_leaves.tolist()))
    return len(pairs) == len(set(a_leaves.tolist())) == len(set(b_leaves.tolist()))


def _merge_close(values, rtol=1e-9):
    out = []
    for v in values:
        if out and abs(v - out[-1]) <= rtol * abs(v):
            continue
        out.append(v)
    return np.array(out)


@needs_sklearn
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_impurity_mode_matches_sklearn_classifier(seed, criterion):
    rng = np.random.default_rng(seed)
    n, p, J = 150, 4, 3
    X = _float32_normal(rng, (n, p))
    y = np.argmax(X @ rng.normal(size=(p, J)) + rng.normal(size=(n, J)), axis=1)
    w = rng.integers(2**19, 2**21, size=n) / 2.0**20   # exact sums: no spurious ties
    est = CARTClassifier(criterion=criterion).fit(X, y, sample_weight=w)
    sk = sklearn_tree.DecisionTreeClassifier(criterion=criterion, random_state=0)
    sk.fit(X, y, sample_weight=w)
    assert sk.get_n_leaves() == est.tree_max_.n_leaves
    assert _same_partition(sk.apply(X.astype(np.float32)), est.apply(X))
    ours = est.cost_complexity_path(risk="impurity")["alpha"].to_numpy()
    theirs = _merge_close(sk.cost_complexity_pruning_path(X, y, sample_weight=w).ccp_alphas)
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-14)


@needs_sklearn
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_impurity_mode_matches_sklearn_regressor(seed, weighted):
    rng = np.random.default_rng(seed)
    n = 120
    X = _float32_normal(rng, (n, 3))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    w = rng.integers(2**19, 2**21, size=n) / 2.0**20 if weighted else None
    est = CARTRegressor().fit(X, y, sample_weight=w)
    sk = sklearn_tree.DecisionTreeRegressor(random_state=0).fit(X, y, sample_weight=w)
    assert sk.get_n_leaves() == est.tree_max_.n_leaves
    assert _same_partition(sk.apply(X.astype(np.float32)), est.apply(X))
    ours = est.cost_complexity_path(risk="impurity")["alpha"].to_numpy()
    theirs = _merge_close(sk.cost_complexity_pruning_path(X, y, sample_weight=w).ccp_alphas)
    assert len(ours) == len(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-14)
    # for a regressor the impurity-weighted risk p(t)·Var(t) is R(t): both modes agree
    np.testing.assert_allclose(est.cost_complexity_path()["alpha"], ours, rtol=1e-9, atol=1e-15)


# ----------------------------------------------------------------------------- worked examples

IRIS_SEQUENCES = [  # docs/maths.md §6: (features, α_k as fractions, |T~_k|)
    (["petal_length", "petal_width"],
     [Fraction(0), Fraction(1, 150), Fraction(1, 75), Fraction(22, 75), Fraction(1, 3)],
     [7, 4, 3, 2, 1]),
    (None,
     [Fraction(0), Fraction(1, 300), Fraction(1, 150), Fraction(1, 75), Fraction(22, 75),
      Fraction(1, 3)],
     [9, 7, 4, 3, 2, 1]),
]


@pytest.mark.parametrize("features, alphas, leaves", IRIS_SEQUENCES)
def test_iris_sequences(features, alphas, leaves):
    X, y = load_iris(return_X_y=True)
    if features is not None:
        X = X[features]
    est = CARTClassifier().fit(X, y)
    path = est.cost_complexity_path()
    assert path["n_leaves"].tolist() == leaves
    for got, want in zip(path["alpha"], alphas):
        assert got == pytest.approx(float(want), rel=1e-12, abs=1e-15)
    assert path["risk"].iloc[-1] == pytest.approx(2 / 3, rel=1e-12)
    # the same per-node α read back through prune(): T(α) between the steps
    for k, n_leaves in enumerate(leaves):
        hi = float(alphas[k + 1]) if k + 1 < len(alphas) else float(alphas[k]) + 1
        assert est.prune(float(alphas[k] + (Fraction(hi) - alphas[k]) / 2)).get_n_leaves() == n_leaves


@pytest.mark.parametrize("features, alphas, leaves", IRIS_SEQUENCES)
def test_typed_alphas_give_the_tree_of_their_step(features, alphas, leaves):
    """α_k typed as the book's fraction (float(Fraction)), as the path's stored value or
    as an rpart cp (α = cp · R(root), R(root) = 2/3) gives T_k, through prune() and
    through ccp_alpha. The stored α_k carry rounding (1/75 is stored as
    0.013333333333333336, two ulps above float(1/75)): T(α) reads them with the
    documented relative slack, so the typed value is not taken as "just below α_k"."""
    X, y = load_iris(return_X_y=True)
    if features is not None:
        X = X[features]
    est = CARTClassifier().fit(X, y)
    stored = est.cost_complexity_path()["alpha"].to_numpy()
    root = Fraction(2, 3)
    for k, (alpha, n_leaves) in enumerate(zip(alphas, leaves)):
        cp = alpha / root  # rpart's complexity parameter of this step, e.g. 1/50 for 1/75
        typed = {"fraction": float(alpha), "stored": float(stored[k]),
                 "cp": float(cp) * float(est.tree_max_.risk[0]),
                 "cp_rounded": round(float(cp), 12) * (2 / 3)}
        for how, a in typed.items():
            assert est.prune(a).get_n_leaves() == n_leaves, (k, how, a)
            assert CARTClassifier(ccp_alpha=a).fit(X, y).get_n_leaves() == n_leaves, (k, how)
        # just below the step (beyond the slack) is still the previous, larger tree
        if k > 0:
            below = float(alpha) * (1 - 1e-6)
            assert est.prune(below).get_n_leaves() == leaves[k - 1], (k, below)
    if features is not None:
        assert stored[2] != float(Fraction(1, 75))  # the case the tolerance is for


def test_prune_tolerance_is_relative():
    """The slack scales with α: a regression tree on a scale of 1e6 and the same tree on
    a scale of 1e-6 prune at their own α_k alike, and a relative step of 1e-6 above or
    below α_k is outside the slack."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 2))
    y = np.round(X[:, 0] * 3 + rng.normal(size=80), 1)
    for scale in (1e-6, 1.0, 1e6):
        est = CARTRegressor().fit(X, y * scale)
        path = est.cost_complexity_path()
        for a, n_leaves in zip(path["alpha"].iloc[1:], path["n_leaves"].iloc[1:]):
            assert est.prune(a * (1 + 1e-12)).get_n_leaves() == n_leaves
            assert est.prune(a * (1 - 1e-12)).get_n_leaves() == n_leaves
            assert est.prune(a * (1 - 1e-6)).get_n_leaves() > n_leaves


# ----------------------------------------------------------------------------- the kernel

def _kernel_vs_heap(tree):
    """cartjit's weakest-link kernel against the earlier heap loop
    (pruning_reference.heap_weakest_link): the same floats, bit for bit."""
    from cartjit.engine.pruning import weakest_link
    from references.pruning_reference import heap_weakest_link
    args = (tree.left, tree.right, tree.parent, tree.risk)
    got = weakest_link(*args)
    want = heap_weakest_link(*args)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
        assert a.tobytes() == b.astype(a.dtype).tobytes()
    return got


@pytest.mark.parametrize("seed", range(6))
def test_weakest_link_matches_heap_loop(seed):
    """Regression trees to purity (most nodes, most steps), with integer responses
    (many exactly tied g) and real ones; classification trees with ties and zero-gain
    splits; weighted cases."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 1500))
    X = rng.integers(0, 6, size=(n, 3)).astype(float) if seed % 2 else rng.normal(size=(n, 4))
    w = rng.uniform(0.5, 2.0, n) if seed >= 4 else None
    y = rng.integers(0, 4, n).astype(float) if seed % 3 else rng.normal(size=n)
    steps = _kernel_vs_heap(CARTRegressor().fit(X, y, sample_weight=w).tree_)[1]
    assert steps.shape[0] > 10
    yc = rng.integers(0, 3, n)
    _kernel_vs_heap(CARTClassifier(min_samples_split=2, min_samples_leaf=1)
                    .fit(X, yc, sample_weight=w).tree_)


def test_weakest_link_matches_heap_loop_on_other_risks():
    """The impurity mode's node risks (pruning_sequence's ``risk``) and a chain-shaped
    tree (depth n / 2)."""
    from cartjit.engine.pruning import weakest_link
    from references.pruning_reference import heap_weakest_link
    rng = np.random.default_rng(7)
    X = rng.normal(size=(600, 3))
    tree = CARTRegressor().fit(X, X[:, 0] ** 2 + rng.normal(size=600)).tree_
    _kernel_vs_heap(tree._replace(risk=tree.impurity * tree.weighted_n_node_samples))
    # a chain: node 2i + 1 is a leaf, 2i + 2 splits again; integer risks (exact ties)
    m = 80
    n = 2 * m + 1
    left = np.full(n, -1, dtype=np.int32)
    right = np.full(n, -1, dtype=np.int32)
    parent = np.full(n, -1, dtype=np.int32)
    for i in range(m):
        t = 0 if i == 0 else 2 * i
        left[t], right[t] = 2 * i + 1, 2 * i + 2
        parent[2 * i + 1] = parent[2 * i + 2] = t
    risk = np.zeros(n)
    for t in range(n - 1, -1, -1):
        below = 0.0 if left[t] < 0 else risk[left[t]] + risk[right[t]]
        risk[t] = below + float(rng.integers(0, 40))
    got = weakest_link(left, right, parent, risk)
    want = heap_weakest_link(left, right, parent, risk)
    for a, b in zip(got, want):
        assert a.tobytes() == b.astype(a.dtype).tobytes()
    assert got[1].shape[0] > 3


# ------------------------------------------------------------- the loop shared out by branches

def _bfs_tree(rng, n_splits, top_gain=None, zero_gain=0.0, integer=False):
    """A random binary tree numbered breadth-first (children after their parent), with
    leaf risks drawn at random and R(t) = R(T_t) + a gain >= 0 at each split: ``integer``
    gains (exact ties of g), a share ``zero_gain`` of zero gains (splits T_1 prunes), and
    ``top_gain`` (a tiny gain) at the splits of the first levels, so that they collapse
    while the branches below still have collapses to make."""
    left = [-1]
    right = [-1]
    depth = [0]
    open_ = [0]
    while n_splits > 0 and open_:
        t = open_.pop(int(rng.integers(0, len(open_))) if len(open_) > 4 else 0)
        left[t] = len(left)
        right[t] = len(left) + 1
        for _ in range(2):
            open_.append(len(left))
            left.append(-1)
            right.append(-1)
            depth.append(depth[t] + 1)
        n_splits -= 1
    # renumber breadth-first so that ids increase downwards level by level
    order = [0]
    for t in order:
        if left[t] >= 0:
            order += [left[t], right[t]]
    new = {t: i for i, t in enumerate(order)}
    n = len(order)
    L = np.full(n, -1, dtype=np.int32)
    R = np.full(n, -1, dtype=np.int32)
    P = np.full(n, -1, dtype=np.int32)
    D = np.zeros(n, dtype=np.int64)
    for t in order:
        i = new[t]
        D[i] = depth[t]
        if left[t] >= 0:
            L[i], R[i] = new[left[t]], new[right[t]]
            P[L[i]] = P[R[i]] = i
    risk = np.zeros(n)
    for t in range(n - 1, -1, -1):
        if L[t] < 0:
            risk[t] = float(rng.integers(0, 50)) if integer else rng.uniform(0, 50)
            continue
        gain = float(rng.integers(0, 20)) if integer else rng.exponential(5.0)
        if rng.random() < zero_gain:
            gain = 0.0
        if top_gain is not None and D[t] < 3:
            gain = top_gain
        risk[t] = risk[L[t]] + risk[R[t]] + gain
    return L, R, P, risk


def _threads_vs_loop(left, right, parent, risk, n_threads):
    from cartjit.engine.pruning import weakest_link, weakest_link_threads
    want = weakest_link(left, right, parent, risk)
    got = weakest_link_threads(left, right, parent, risk, n_threads)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return got


@pytest.mark.parametrize("per_thread", [1, 2, 5])
@pytest.mark.parametrize("n_threads", [2, 3])
def test_weakest_link_by_branches_is_the_loop(monkeypatch, n_threads, per_thread):
    """The loop shared out by branches gives the one loop's floats, bit for bit: trees
    grown to purity (regression with integer and real responses, weighted cases,
    classification with zero-gain splits), random trees with exact ties of g across
    branches, zero gains, and tiny gains at the top (the nodes above the branches then
    collapse while their branches have collapses left, which those nodes' α cut off)."""
    import cartjit.engine.pruning as pruning
    monkeypatch.setattr(pruning, "THREADED_MIN_SPLITS", 20)
    monkeypatch.setattr(pruning, "BRANCHES_PER_THREAD", per_thread)
    rng = np.random.default_rng(10 * n_threads + per_thread)
    n = 1500
    X = rng.normal(size=(n, 4))
    for y, w in ((rng.integers(0, 5, n).astype(float), None), (rng.normal(size=n), None),
                 (rng.normal(size=n), rng.uniform(0.5, 2.0, n))):
        tree = CARTRegressor().fit(X, y, sample_weight=w).tree_
        _threads_vs_loop(tree.left, tree.right, tree.parent, tree.risk, n_threads)
    tree = CARTClassifier(min_samples_split=2, min_samples_leaf=1).fit(
        X.round(1), rng.integers(0, 3, n)).tree_
    _threads_vs_loop(tree.left, tree.right, tree.parent, tree.risk, n_threads)
    cut = 0
    for case in range(12):
        integer = case % 2 == 0
        top_gain = (0.5 if integer else 1e-3) if case % 3 == 0 else None
        left, right, parent, risk = _bfs_tree(rng, int(rng.integers(60, 900)), top_gain,
                                              zero_gain=0.1 * (case % 4), integer=integer)
        alpha = _threads_vs_loop(left, right, parent, risk, n_threads)[0]
        internal = pruning._first_tree(left, right, parent, risk)[2]
        br = pruning._branches(left, right, internal, n_threads)
        if br is not None:
            # a branch root that collapsed with the node above it: its branch was cut
            cut += int(np.any(alpha[br.root] == alpha[parent[br.root]]))
    assert cut >= 2


def test_weakest_link_by_branches_small_and_single(monkeypatch):
    """Below the threshold, with one thread, and where T_1 has too few splits to share
    out (a root whose split T_1 prunes), the one loop runs."""
    import cartjit.engine.pruning as pruning
    rng = np.random.default_rng(3)
    left, right, parent, risk = _bfs_tree(rng, 200)
    _threads_vs_loop(left, right, parent, risk, 2)
    monkeypatch.setattr(pruning, "THREADED_MIN_SPLITS", 10)
    _threads_vs_loop(left, right, parent, risk, 1)
    flat = risk.copy()
    flat[0] = risk[left < 0].sum() - 1.0  # no gain at the root: T_1 is the root
    alpha = _threads_vs_loop(left, right, parent, flat, 2)[0]
    assert not alpha.any()
    assert pruning._branches(left, right, pruning._first_tree(left, right, parent, flat)[2],
                             2) is None


def _numpy_risk_labels(value, priors, class_totals, cost):
    """R(t) and j*(t) as whole-array NumPy expressions: the min over classes, and the
    first class whose risk is within LABEL_TIE_ULPS ulps (scaled) of it."""
    from cartjit.engine.fit import _EPS, LABEL_TIE_ULPS

    scale = np.divide(priors, class_totals, out=np.zeros_like(priors),
                      where=class_totals > 0)
    p_jt = value * scale
    risks = p_jt @ cost
    best = risks.min(axis=1)
    tol = LABEL_TIE_ULPS * _EPS * p_jt.sum(axis=1) * cost.max()
    return best, np.argmax(risks <= (best + tol)[:, None], axis=1).astype(np.int32)


@pytest.mark.parametrize("seed", range(6))
def test_class_risk_is_the_numpy_expression(seed):
    """class_risk's compiled minimum and label give the doubles and classes of the
    NumPy expression, with exact ties, near ties within the tolerance, an absent class,
    unequal priors and costs, and a NaN row."""
    from cartjit.engine.fit import class_risk

    rng = np.random.default_rng(seed)
    n_classes = 2 + seed % 4
    value = rng.integers(0, 4, size=(300, n_classes)).astype(np.float64)
    value[:20] = value[:20, :1]  # every class the same count
    value[20:40, 1] = value[20:40, 0] * (1 + 2e-15)  # a count a few ulps from another
    class_totals = np.full(n_classes, 50.0)  # equal N_j: equal counts, equal p(j, t)
    if seed % 2:
        class_totals[-1] = 0.0  # a class absent from the cases (a fold's)
        value[:, -1] = 0.0
    priors = (np.full(n_classes, 1.0 / n_classes) if seed % 3 == 0
              else rng.dirichlet(np.ones(n_classes)))
    cost = np.ones((n_classes, n_classes)) - np.eye(n_classes)
    if seed >= 3:
        cost = cost * rng.integers(1, 5, size=cost.shape)
    if seed == 5:
        value[50] = np.nan
    got = class_risk(value, priors, class_totals, cost)
    want = _numpy_risk_labels(value, priors, class_totals, cost)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == np.int32
    if seed == 0:  # equal priors, unit costs, two classes: ties, exact and within ulps
        risks = value * (priors / class_totals) @ cost
        assert (risks[:20, 0] == risks[:20, 1]).all()
        near = slice(20, 40)
        assert (risks[near, 0] != risks[near, 1]).any()
        assert (got[1][:40] == 0).all()  # the lowest class wins every tie
