"""Choosing the subtree by V-fold cross-validation, docs/maths.md §5.

The reference is slow and explicit: for every fold, a ``CARTClassifier`` /
``CARTRegressor`` is fitted on the training part; for every α'_k = sqrt(α_k α_{k+1})
(α'_K = +∞) of the FULL tree's sequence it is pruned with ``.prune(α'_k)`` and predicts
the held-out cases. Each held-out case of class j adds

    l = π(j) W / N_j · C(pred | j)      (classification; π, N_j, W of the full sample)
    l = (y - pred)²                      (regression)

with its weight w, R^CV = Σ w l / W and SE = sqrt(Σ w l² - (Σ w l)² / W) / W. Fold trees
with empirical priors use their own class proportions and with given priors the given π,
which is what fitting a ``CARTClassifier`` on the fold does.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

TOL = dict(rtol=1e-12, atol=1e-15)
ROOT_ALPHA = np.finfo(np.float64).max  # prune() takes finite α; T(max float) is the root


# ----------------------------------------------------------------------------- data


def class_data(seed, n=90, n_classes=3, n_features=3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, n_features)), 1)  # some ties in x
    score = X @ rng.normal(size=(n_features, n_classes)) + rng.normal(size=(n, n_classes))
    y = np.argmax(score, axis=1)
    y[:n_classes] = np.arange(n_classes)
    return X, y


def reg_data(seed, n=70, n_features=3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, n_features)), 1)
    y = np.round(X[:, 0] ** 2 + X[:, 1] + rng.normal(scale=0.7, size=n), 2)
    return X, y


def balanced_folds(seed, n, v):
    """Fold ids 0..v-1, sizes within one of each other, in random order."""
    return np.random.default_rng(seed).permutation(np.arange(n) % v)


# ----------------------------------------------------------------------------- reference


def full_priors(y, w, n_classes, priors):
    tot = np.bincount(y, weights=w, minlength=n_classes)
    if isinstance(priors, str):
        return tot / tot.sum() if priors == "empirical" else np.full(n_classes, 1 / n_classes)
    return np.asarray(priors, dtype=float)


def reference_cv(make, X, y, w, folds, *, classification, priors="empirical", cost=None):
    """(alphas, cv_risk, cv_se) by the slow recipe of the module docstring."""
    full = make().fit(X, y, sample_weight=w)
    alphas = full.cost_complexity_path()["alpha"].to_numpy()
    a_prime = list(np.sqrt(alphas[:-1] * alphas[1:])) + [np.inf]
    W = w.sum()
    if classification:
        J = len(full.classes_)
        yi = np.searchsorted(full.classes_, y)
        pi = full_priors(yi, w, J, priors)
        Nj = np.bincount(yi, weights=w, minlength=J)
        C = 1 - np.eye(J) if cost is None else np.asarray(cost, dtype=float)
    s = np.zeros(len(a_prime))
    sq = np.zeros(len(a_prime))
    for v in np.unique(folds):
        tr, te = folds != v, folds == v
        fold_est = make().fit(X[tr], y[tr], sample_weight=w[tr])
        for k, a in enumerate(a_prime):
            pred = fold_est.prune(float(a) if np.isfinite(a) else ROOT_ALPHA).predict(X[te])
            if classification:
                pj = np.searchsorted(full.classes_, pred)
                l = pi[yi[te]] * W / Nj[yi[te]] * C[yi[te], pj]
            else:
                l = (y[te] - pred) ** 2
            s[k] += np.sum(w[te] * l)
            sq[k] += np.sum(w[te] * l * l)
    risk = s / W
    se = np.sqrt(np.maximum(sq - s * s / W, 0.0)) / W
    return alphas, risk, se, float(full.tree_max_.risk[0])


def check_against_reference(est, ref):
    alphas, risk, se, root = ref
    res = est.cv_results_
    np.testing.assert_allclose(res["alpha"], alphas, rtol=1e-15, atol=0)
    np.testing.assert_allclose(res["cv_risk"], risk, **TOL)
    np.testing.assert_allclose(res["cv_se"], se, **TOL)
    np.testing.assert_allclose(res["xerror"], risk / root, **TOL)
    np.testing.assert_allclose(res["xstd"], se / root, **TOL)
    assert res["cv_std"].isna().all()  # one repeat


CLASS_CASES = {
    "gini": dict(criterion="gini"),
    "entropy": dict(criterion="entropy"),
    "twoing": dict(criterion="twoing"),
    "equal-priors": dict(priors="equal"),
    "given-priors": dict(priors=np.array([0.5, 0.3, 0.2])),
    "cost": dict(cost=np.array([[0, 1, 4], [2, 0, 1], [1, 3, 0]], dtype=float)),
    "entropy-priors-cost": dict(criterion="entropy", priors=np.array([0.25, 0.25, 0.5]),
                                cost=np.array([[0, 2, 1], [1, 0, 1], [5, 1, 0]], dtype=float)),
}


@pytest.mark.parametrize("case, weights", [
    ("gini", "unit"), ("gini", "real"), ("entropy", "unit"), ("entropy", "int"),
    ("twoing", "real"), ("equal-priors", "unit"), ("equal-priors", "int"),
    ("given-priors", "unit"), ("given-priors", "real"), ("cost", "unit"), ("cost", "int"),
    ("entropy-priors-cost", "real"),
])
def test_classifier_cv_matches_reference(case, weights):
    params = CLASS_CASES[case]
    X, y = class_data(seed=len(case) + 7 * len(weights))
    n = len(y)
    rng = np.random.default_rng(3)
    w = {"unit": np.ones(n), "int": rng.integers(1, 5, n).astype(float),
         "real": rng.uniform(0.3, 3.0, n)}[weights]
    folds = balanced_folds(11, n, 5)
    for v in range(5):  # every class in every training part (given priors need it)
        assert len(np.unique(y[folds != v])) == 3
    est = CARTClassifierCV(cv=folds, **params).fit(X, y, sample_weight=None if weights == "unit" else w)
    ref = reference_cv(lambda: CARTClassifier(**params), X, y, w, folds, classification=True,
                       priors=params.get("priors", "empirical"), cost=params.get("cost"))
    check_against_reference(est, ref)
    assert len(est.cv_results_) >= 3
    if case == "gini" and weights == "unit":
        # 0-1 cost, empirical priors, unit weights: SE is the binomial sqrt(R (1 - R) / N)
        r = est.cv_results_["cv_risk"].to_numpy()
        np.testing.assert_allclose(est.cv_results_["cv_se"], np.sqrt(r * (1 - r) / n), **TOL)
    # each fold's own sequence is that of a classifier fitted on its training part
    for v in range(5):
        fold_alphas = CARTClassifier(**params).fit(
            X[folds != v], y[folds != v], sample_weight=w[folds != v]).cost_complexity_path()["alpha"]
        np.testing.assert_allclose(est.fold_alphas_[0][v], fold_alphas, rtol=1e-12)


def test_fold_trees_use_fold_proportions_with_empirical_priors():
    """The reference recipe (empirical priors re-estimated on each fold) differs from
    fitting the fold trees with the full sample's π: cartjit must follow the former."""
    X, y = class_data(seed=5, n=60)
    rng = np.random.default_rng(0)
    # class 0 mostly in fold 0, so the training parts have different class proportions
    # (but every class is in every training part)
    folds = np.where((y == 0) & (rng.uniform(size=60) < 0.8), 0, np.arange(60) % 3)
    for v in range(3):
        assert len(np.unique(y[folds != v])) == 3
    est = CARTClassifierCV(cv=folds).fit(X, y)
    ref = reference_cv(lambda: CARTClassifier(), X, y, np.ones(60), folds, classification=True)
    check_against_reference(est, ref)
    pi_full = np.bincount(y) / 60
    alt = reference_cv(lambda: CARTClassifier(priors=pi_full), X, y, np.ones(60), folds,
                       classification=True)
    assert not np.allclose(alt[1], ref[1]), "test data do not separate the two conventions"


@pytest.mark.parametrize("seed, weights", [(0, "unit"), (1, "int"), (2, "real")])
def test_regressor_cv_matches_reference(seed, weights):
    X, y = reg_data(seed, n=50)
    n = len(y)
    rng = np.random.default_rng(seed + 100)
    w = {"unit": np.ones(n), "int": rng.integers(1, 5, n).astype(float),
         "real": rng.uniform(0.3, 3.0, n)}[weights]
    folds = balanced_folds(seed, n, 6)
    est = CARTRegressorCV(cv=folds).fit(X, y, sample_weight=None if weights == "unit" else w)
    ref = reference_cv(lambda: CARTRegressor(), X, y, w, folds, classification=False)
    check_against_reference(est, ref)
    assert len(est.cv_results_) >= 5


def test_fold_labels_may_be_any_values():
    X, y = class_data(seed=2, n=40)
    ids = balanced_folds(1, 40, 4)
    labels = np.array(["d", "a", "c", "b"])[ids]
    a = CARTClassifierCV(cv=ids).fit(X, y).cv_results_
    b = CARTClassifierCV(cv=labels).fit(X, y).cv_results_
    c = CARTClassifierCV(cv=ids * 10 + 3).fit(X, y).cv_results_
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)


# ----------------------------------------------------------------------------- LOO


def test_leave_one_out_is_deterministic_and_matches_reference():
    X, y = class_data(seed=4, n=30)
    n = len(y)
    res = [CARTClassifierCV(cv=cv, random_state=rs).fit(X, y).cv_results_
           for cv, rs in [("loo", 0), ("loo", 17), (n, 0), (n, 5), (np.arange(n), 0),
                          (np.arange(n)[::-1], 0)]]
    for r in res[1:]:
        pd.testing.assert_frame_equal(res[0], r)
    est = CARTClassifierCV(cv="loo").fit(X, y)
    assert est.n_folds_ == n
    np.testing.assert_array_equal(np.sort(est.folds_[0]), np.arange(n))
    ref = reference_cv(lambda: CARTClassifier(), X, y, np.ones(n), np.arange(n),
                       classification=True)
    check_against_reference(est, ref)


def test_leave_one_out_regressor():
    X, y = reg_data(seed=3, n=16)
    a = CARTRegressorCV(cv="loo").fit(X, y)
    b = CARTRegressorCV(cv=16, random_state=9).fit(X, y)
    pd.testing.assert_frame_equal(a.cv_results_, b.cv_results_)
    ref = reference_cv(lambda: CARTRegressor(), X, y, np.ones(16), np.arange(16),
                       classification=False)
    check_against_reference(a, ref)


# ----------------------------------------------------------------------------- threads

_THREAD_SCRIPT = textwrap.dedent("""
    import json, sys
    import numba
    import numpy as np
    from cartjit import CARTClassifierCV, CARTRegressorCV
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(150, 4)), 1)
    y = np.argmax(X @ rng.normal(size=(4, 3)) + rng.normal(size=(150, 3)), axis=1)
    w = rng.uniform(0.5, 2.0, 150)
    yr = X[:, 0] ** 2 + rng.normal(size=150)
    c = CARTClassifierCV(cv=5, n_repeats=2, random_state=3, criterion="entropy").fit(X, y, sample_weight=w)
    r = CARTRegressorCV(cv=6, n_repeats=2, random_state=4).fit(X, yr, sample_weight=w)
    def hexed(df):
        return {k: [float(v).hex() for v in df[k]] for k in df.columns if df[k].dtype.kind == "f"}
    print(json.dumps({"threads": numba.get_num_threads(), "c": hexed(c.cv_results_),
                      "r": hexed(r.cv_results_), "c_alpha": float(c.alpha_).hex(),
                      "c_folds": c.folds_.tolist(), "r_alpha": float(r.alpha_).hex()}))
""")


def _run_with_threads(n):
    env = dict(os.environ, NUMBA_NUM_THREADS=str(n))
    out = subprocess.run([sys.executable, "-c", _THREAD_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_results_identical_whatever_the_number_of_threads():
    one, two = _run_with_threads(1), _run_with_threads(2)
    assert one["threads"] == 1 and two["threads"] == 2
    one.pop("threads")
    two.pop("threads")
    assert one == two  # bit for bit (floats compared as hex strings)


# ----------------------------------------------------------------------------- folds


def test_random_state_controls_the_folds():
    X, y = class_data(seed=6, n=80)
    a = CARTClassifierCV(cv=5, random_state=1).fit(X, y)
    b = CARTClassifierCV(cv=5, random_state=1).fit(X, y)
    c = CARTClassifierCV(cv=5, random_state=2).fit(X, y)
    np.testing.assert_array_equal(a.folds_, b.folds_)
    pd.testing.assert_frame_equal(a.cv_results_, b.cv_results_)
    assert not np.array_equal(a.folds_, c.folds_)
    # random folds: V folds with sizes within one of n / V
    sizes = np.bincount(a.folds_[0])
    assert len(sizes) == 5 and sizes.max() - sizes.min() <= 1
    # random folds equal the same fold ids given explicitly
    d = CARTClassifierCV(cv=a.folds_[0]).fit(X, y)
    pd.testing.assert_frame_equal(a.cv_results_, d.cv_results_)
    # None means a fixed seed too (reproducible)
    e = CARTClassifierCV(cv=5, random_state=None).fit(X, y)
    f = CARTClassifierCV(cv=5, random_state=None).fit(X, y)
    np.testing.assert_array_equal(e.folds_, f.folds_)


@pytest.mark.parametrize("v", [3, 5, 7, 10])
def test_stratified_folds(v):
    X, y = class_data(seed=8, n=101)
    est = CARTClassifierCV(cv=v, stratify=True, n_repeats=3, random_state=4).fit(X, y)
    nj = np.bincount(y)
    assert est.folds_.shape == (3, 101)
    for r in range(3):
        counts = np.array([[np.sum((est.folds_[r] == f) & (y == j)) for j in range(3)]
                           for f in range(v)])
        assert np.all(np.abs(counts - nj / v) < 1), counts
    assert not np.array_equal(est.folds_[0], est.folds_[1])


def test_repeated_cv():
    X, y = class_data(seed=9, n=80)
    est = CARTClassifierCV(cv=4, n_repeats=5, random_state=2).fit(X, y)
    rep = est.cv_risk_repeats_
    assert rep.shape == (5, len(est.cv_results_)) and est.n_repeats_ == 5
    np.testing.assert_allclose(est.cv_results_["cv_risk"], rep.mean(axis=0), **TOL)
    np.testing.assert_allclose(est.cv_results_["cv_std"], rep.std(axis=0, ddof=1), **TOL)
    np.testing.assert_allclose(est.cv_results_["cv_se"], est.cv_se_repeats_.mean(axis=0), **TOL)
    assert len({tuple(f) for f in est.folds_.tolist()}) == 5  # a new partition per repeat
    # each repeat is the CV with that repeat's folds given explicitly
    for r in range(5):
        one = CARTClassifierCV(cv=est.folds_[r]).fit(X, y).cv_results_
        np.testing.assert_allclose(one["cv_risk"], rep[r], **TOL)
        np.testing.assert_allclose(one["cv_se"], est.cv_se_repeats_[r], **TOL)


def test_repeated_cv_regressor():
    X, y = reg_data(seed=2, n=50)
    est = CARTRegressorCV(cv=5, n_repeats=3, random_state=0).fit(X, y)
    rep = est.cv_risk_repeats_
    np.testing.assert_allclose(est.cv_results_["cv_std"], rep.std(axis=0, ddof=1), **TOL)
    for r in range(3):
        ref = reference_cv(lambda: CARTRegressor(), X, y, np.ones(50), est.folds_[r],
                           classification=False)
        np.testing.assert_allclose(rep[r], ref[1], **TOL)


# ----------------------------------------------------------------------------- selection


def expected_index(table, selection):
    """Selection rules from the table alone (k grows as trees get smaller)."""
    r = table["cv_risk"].to_numpy()
    se = table["cv_se"].to_numpy()
    best = r.min()
    k_min = max(k for k in range(len(r)) if r[k] <= best * (1 + 1e-12))
    if selection == "min":
        return k_min
    m = 1.0 if selection == "1se" else float(selection)
    bound = r[k_min] + m * se[k_min]
    return max(k for k in range(len(r)) if r[k] <= bound * (1 + 1e-12))


@pytest.mark.parametrize("selection", ["min", "1se", 0, 0.5, 2.0, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selection_rules(selection, seed):
    for est, X, y in [(CARTClassifierCV(cv=5, selection=selection, random_state=seed),
                       *class_data(seed, n=120)),
                      (CARTRegressorCV(cv=5, selection=selection, random_state=seed),
                       *reg_data(seed, n=80))]:
        est.fit(X, y)
        t = est.cv_results_
        k = expected_index(t, selection)
        assert est.best_index_ == k
        assert est.alpha_ == t["alpha"].iloc[k]
        assert t["selected"].tolist() == [i == k for i in range(len(t))]
        assert est.tree_.n_leaves == t["n_leaves"].iloc[k]
        # tree_ is T(alpha_) of the full tree
        plain = (CARTClassifier() if isinstance(est, CARTClassifier) else CARTRegressor()).fit(X, y)
        assert plain.prune(est.alpha_).tree_.n_leaves == est.tree_.n_leaves
        np.testing.assert_array_equal(plain.prune(est.alpha_).predict(X), est.predict(X))


def test_min_rule_ties_go_to_the_smaller_tree():
    # unit weights, empirical priors, 0-1 cost: R^CV is a multiple of 1/n, ties are common
    for seed in range(200):
        X, y = class_data(seed, n=40, n_classes=2)
        est = CARTClassifierCV(cv=4, selection="min", random_state=seed).fit(X, y)
        r = est.cv_results_["cv_risk"].to_numpy()
        at_min = np.flatnonzero(np.isclose(r, r.min(), rtol=1e-12, atol=0))
        if len(at_min) >= 2:
            assert est.best_index_ == at_min[-1]
            assert est.tree_.n_leaves == est.cv_results_["n_leaves"].iloc[at_min[-1]]
            assert est.tree_.n_leaves < est.cv_results_["n_leaves"].iloc[at_min[0]]
            return
    pytest.fail("no tie at the minimum found in 200 seeds")


def test_one_se_picks_a_smaller_tree_than_min_when_within_one_se():
    for seed in range(50):
        X, y = class_data(seed, n=100)
        a = CARTClassifierCV(cv=5, selection="min", random_state=seed).fit(X, y)
        b = CARTClassifierCV(cv=5, selection="1se", random_state=seed).fit(X, y)
        pd.testing.assert_frame_equal(a.cv_results_.drop(columns="selected"),
                                      b.cv_results_.drop(columns="selected"))
        if b.best_index_ > a.best_index_:
            t = a.cv_results_
            assert t["cv_risk"].iloc[b.best_index_] <= (
                t["cv_risk"].iloc[a.best_index_] + t["cv_se"].iloc[a.best_index_])
            return
    pytest.fail("1se never chose a smaller tree than min")


# ----------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def small():
    X, y = class_data(seed=1, n=30)
    return X, y


@pytest.mark.parametrize("cv, exc", [
    (1, ValueError), (0, ValueError), (-3, ValueError), (31, ValueError),
    (2.5, (TypeError, ValueError)), (True, TypeError), ("kfold", ValueError), (None, (TypeError, ValueError)),
    (np.zeros(29, dtype=int), ValueError), (np.zeros((30, 1), dtype=int), ValueError),
    (np.zeros(30, dtype=int), ValueError), (np.full(30, 0.5), TypeError),
])
def test_bad_cv(small, cv, exc):
    X, y = small
    with pytest.raises(exc, match=r"\bcv\b"):
        CARTClassifierCV(cv=cv).fit(X, y)
    with pytest.raises(exc, match=r"\bcv\b"):
        CARTRegressorCV(cv=cv).fit(X, y.astype(float))


def test_single_fold_message(small):
    X, y = small
    with pytest.raises(ValueError, match="at least 2"):
        CARTClassifierCV(cv=np.ones(30, dtype=int)).fit(X, y)


@pytest.mark.parametrize("n_repeats, cv, exc", [
    (0, 5, ValueError), (-1, 5, ValueError), (1.5, 5, TypeError), (True, 5, TypeError),
    (2, np.arange(30) % 3, ValueError),
])
def test_bad_n_repeats(small, n_repeats, cv, exc):
    X, y = small
    with pytest.raises(exc, match="n_repeats"):
        CARTClassifierCV(cv=cv, n_repeats=n_repeats).fit(X, y)
    with pytest.raises(exc, match="n_repeats"):
        CARTRegressorCV(cv=cv, n_repeats=n_repeats).fit(X, y.astype(float))


@pytest.mark.parametrize("selection, exc", [
    ("best", ValueError), ("1SE", ValueError), (-0.5, ValueError), (-1, ValueError),
    (float("nan"), ValueError), (float("inf"), ValueError), (True, TypeError), (None, TypeError),
])
def test_bad_selection(small, selection, exc):
    X, y = small
    with pytest.raises(exc, match="selection"):
        CARTClassifierCV(selection=selection, cv=3).fit(X, y)
    with pytest.raises(exc, match="selection"):
        CARTRegressorCV(selection=selection, cv=3).fit(X, y.astype(float))


def test_stratify_with_regressor(small):
    X, y = small
    with pytest.raises(TypeError, match="stratify"):
        CARTRegressorCV(stratify=True)
    est = CARTRegressorCV(cv=3)
    est.stratify = True
    with pytest.raises(ValueError, match="stratify"):
        est.fit(X, y.astype(float))


def test_stratify_must_be_bool(small):
    X, y = small
    with pytest.raises(TypeError, match="stratify"):
        CARTClassifierCV(cv=3, stratify="yes").fit(X, y)


def test_stratify_with_a_class_rarer_than_v_warns():
    X, y = class_data(seed=3, n=40, n_classes=2)
    y = y.copy()
    y[:] = 0
    y[[1, 5, 9]] = 1  # 3 cases of class 1, 5 folds
    with pytest.warns(UserWarning, match="stratify"):
        est = CARTClassifierCV(cv=5, stratify=True).fit(X, y)
    # the common class is still stratified, the rare one in distinct folds
    counts0 = np.bincount(est.folds_[0][y == 0], minlength=5)
    assert counts0.max() - counts0.min() <= 1
    assert len(set(est.folds_[0][y == 1])) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CARTClassifierCV(cv=3, stratify=True).fit(X, y)  # 3 >= V: no warning


def test_bad_random_state(small):
    X, y = small
    with pytest.raises(ValueError, match="random_state"):
        CARTClassifierCV(cv=3, random_state=-1).fit(X, y)


def test_zero_weights_leaving_fewer_cases_than_folds_cap_v():
    """V = 10 with 10 rows of which 5 have positive weight: V is capped at 5 with a
    warning, which is leave-one-out on the 5 cases that take part (the same as fitting
    those 5 rows alone with cv='loo'); V above the number of rows is still an error."""
    X, y = class_data(seed=3, n=10, n_classes=2)
    w = np.array([1.0, 0, 2, 0, 1, 0, 3, 0, 1, 0])
    keep = w > 0
    with pytest.warns(UserWarning, match=r"cv = 10 folds but only 5 of the 10 cases"):
        est = CARTClassifierCV(cv=10).fit(X, y, sample_weight=w)
    ref = CARTClassifierCV(cv="loo").fit(X[keep], y[keep], sample_weight=w[keep])
    assert est.n_folds_ == 5
    pd.testing.assert_frame_equal(est.cv_results_, ref.cv_results_)
    np.testing.assert_array_equal(est.folds_[0, ~keep], -1)
    np.testing.assert_array_equal(est.folds_[0, keep], ref.folds_[0])
    with pytest.warns(UserWarning, match="leave-one-out"):
        CARTRegressorCV(cv=7).fit(X, y.astype(float), sample_weight=w)
    with pytest.raises(ValueError, match=r"\bcv\b"):
        CARTClassifierCV(cv=11).fit(X, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cap, no warning: 5 folds on 5 cases
        CARTClassifierCV(cv=5).fit(X, y, sample_weight=w)


def test_one_class_left_by_the_weights_predicts_it():
    """scikit-learn's one-label check: weights that keep one class leave a root-only
    tree predicting it (V capped at the 5 cases that take part)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(10, 10))
    y = np.arange(10) % 2
    with pytest.warns(UserWarning, match="leave-one-out"):
        est = CARTClassifierCV().fit(X, y, sample_weight=y.astype(float))
    np.testing.assert_array_equal(est.classes_, [1])
    np.testing.assert_array_equal(est.predict(rng.uniform(size=(10, 10))), np.ones(10))
