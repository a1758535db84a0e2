"""Parity of the pruning sequence and of cross-validation with R's rpart
(docs/maths.md §4, §5, §9).

Both programs get the same data and the same fold id vector: rpart with ``cp=0,
minsplit=2, minbucket=1, maxcompete=0, maxsurrogate=0, xval=<ids>``, cartjit's
``CARTClassifierCV`` / ``CARTRegressorCV`` with ``cv=<ids>``.

**The pruning sequence.** cartjit's (α_k, |T~_k|, R(T_k)) must equal the exact sequence,
derived here without cartjit: exact node risks from the cases reaching each node of
T_max, the least risk of a pruned subtree for every leaf count (a dynamic programme,
checked against full enumeration in tests/engine/test_pruning.py) and the lower envelope of the
lines R*_m + α m. rpart's ``cptable`` is compared row by row with it. rpart computes
node complexities in one bottom-up pass and merges only bit-identical complexities, so
its table may have a row that the exact sequence does not (docs/maths.md §9). For every
such row the test shows, with the exact minimisation, that rpart's tree is not the
smallest minimiser of R + α|T~| at the α where rpart lists it; and it reproduces rpart's
whole table by applying the one-pass rule as :mod:`rpart_rules` states it to cartjit's
T_max, which shows that the one-pass rule (and the rounding of exact ties) is the whole
difference.

**Cross-validated risk.** rpart drops each held-out case down its fold tree at the
geometric midpoints of its own CP list (cartjit: of its own α list) and scores it with
π(y)/f(y) · L, where f(y) is the class frequency of the FULL sample: the R^CV of
docs/maths.md §5 with the full sample's N_j. So with empirical priors the two agree for
any folds (the kyphosis cases use random, not stratified, folds). With given priors
rpart grows each fold tree with the full sample's case weights π(j)/f(j), i.e. effective
fold priors ∝ π(j) N_j^(v) / N_j, while cartjit uses π; they agree when every training
part has the full sample's class proportions, so the priors and loss cases use exactly
stratified folds of iris.

Where the numbers differ, the test does not assume why. :mod:`rpart_rules` states
rpart's documented rules for cross-validation (one-pass complexities of each fold tree,
the evaluation points of its CP list, the run-down of a held-out case, the loss, xerror
and xstd); applied to rpart's own fold trees (rpart fitted on each training part) they
must reproduce rpart's xerror and xstd on every row, and the fold trees' complexities by
those rules must equal the ones rpart reports. A ladder from cartjit's CV to those rules,
changing one thing at a time, then attributes every differing row to its first cause
(see :func:`test_xerror_vs_rpart`): a held-out value equal to a threshold
(docs/maths.md §2: x <= c goes left; rpart: x < c), rpart's one-pass complexities on the
fold trees, fold-tree splits tied in exact arithmetic that rpart's rounding breaks
otherwise than the lowest-index rule of docs/maths.md §2, and rpart 4.1.19 reading the
loss matrix transposed when it scores held-out cases. On every row with the same α' and
none of these, cartjit's xerror and xstd equal rpart's.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from references.pruning_reference import (class_node_risks, exact_sequence, merge_ties,
                                          min_risk_by_size, node_masks, regression_node_risks,
                                          smallest_minimiser)

from . import rpart_rules as rules
from . import rpart_runner

pytestmark = pytest.mark.parity

GROW = {"cp": 0, "minsplit": 2, "minbucket": 1, "maxcompete": 0, "maxsurrogate": 0,
        "maxdepth": 30}
RTOL = 1e-9


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    dataset: str
    target: str
    method: str                       # "class" or "anova"
    folds: str                        # "strat:V", "random:V:seed" or "loo"
    features: tuple | None = None
    criterion: str = "gini"           # "entropy" <-> parms$split = "information"
    priors: tuple | None = None
    loss: tuple | None = None
    #: rows where cartjit and rpart must give the same xerror (at least)
    min_compared: int = 2


IRIS_PETALS = ("Petal.Length", "Petal.Width")
#: ``min_compared``: the rows where cartjit's xerror/xstd must equal rpart's, at least
#: (rpart 4.1.19; the test prints which rows differ and why). Deeper rows of data on a
#: grid mostly differ through held-out values equal to a threshold (x <= c vs x < c).
CASES = [
    Case("iris-gini-strat10", "iris", "Species", "class", "strat:10", min_compared=4),
    Case("iris-entropy-strat5", "iris", "Species", "class", "strat:5", criterion="entropy",
         min_compared=5),
    Case("iris-petals-strat5", "iris", "Species", "class", "strat:5", features=IRIS_PETALS,
         min_compared=4),
    Case("iris-equal-priors-strat10", "iris", "Species", "class", "strat:10",
         priors=(1 / 3, 1 / 3, 1 / 3), min_compared=4),
    Case("iris-given-priors-strat5", "iris", "Species", "class", "strat:5",
         priors=(0.2, 0.3, 0.5), min_compared=5),
    # a symmetric loss: rpart's transposed reading of the loss (see test_xerror_vs_rpart)
    # changes nothing; an asymmetric one: every row differs from cartjit's
    Case("iris-symmetric-loss-strat5", "iris", "Species", "class", "strat:5",
         loss=((0, 1, 2), (1, 0, 3), (2, 3, 0)), min_compared=3),
    Case("iris-asymmetric-loss-strat5", "iris", "Species", "class", "strat:5",
         loss=((0, 1, 2), (1, 0, 1), (3, 2, 0)), min_compared=0),
    # random (not stratified) folds: rpart scores with the full sample's frequencies
    Case("kyphosis-gini-random10", "kyphosis", "Kyphosis", "class", "random:10:1",
         min_compared=6),
    Case("kyphosis-entropy-random5", "kyphosis", "Kyphosis", "class", "random:5:2",
         criterion="entropy", min_compared=3),
    Case("kyphosis-gini-loo", "kyphosis", "Kyphosis", "class", "loo", min_compared=4),
    Case("swiss-random5", "swiss", "Fertility", "anova", "random:5:3", min_compared=3),
    Case("trees-random5", "trees", "Volume", "anova", "random:5:4", min_compared=7),
    Case("trees-loo", "trees", "Volume", "anova", "loo", min_compared=6),
    Case("mtcars-random5", "mtcars", "mpg", "anova", "random:5:5", min_compared=2),
    Case("stackloss-loo", "stackloss", "stack.loss", "anova", "loo", min_compared=4),
]


@functools.lru_cache(maxsize=None)
def _dataset(name: str) -> pd.DataFrame:
    return rpart_runner.r_dataset(name)


def fold_ids(how: str, y: np.ndarray) -> np.ndarray:
    """Fold ids 1..V (rpart's ``xval`` vector: fold v holds out the cases with id v)."""
    n = len(y)
    if how == "loo":
        return np.arange(1, n + 1)
    kind, v, *seed = how.split(":")
    v = int(v)
    rng = np.random.default_rng(int(seed[0]) if seed else 0)
    if kind == "random":
        return rng.permutation(np.arange(n) % v) + 1
    assert kind == "strat"
    ids = np.empty(n, dtype=np.int64)
    for cls in np.unique(y):
        idx = np.flatnonzero(y == cls)
        assert len(idx) % v == 0, "exact stratification needs n_j divisible by V"
        ids[rng.permutation(idx)] = np.arange(len(idx)) % v + 1
    return ids


# ----------------------------------------------------------------------------- fitting


@dataclass
class Fitted:
    case: Case
    X: np.ndarray
    y: np.ndarray                     # class indices or responses
    folds: np.ndarray
    features: list
    classes: Any
    rp: dict
    est: Any                          # the CV estimator
    make: Any                         # () -> plain estimator with the same tree parameters
    risks: list                       # exact R(t) of T_max


def _priors_arg(case):
    return "empirical" if case.priors is None else np.array(case.priors)


def _cost_arg(case):
    return None if case.loss is None else np.array(case.loss, dtype=float)


@functools.lru_cache(maxsize=None)
def fit_case(case: Case) -> Fitted:
    from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

    df = _dataset(case.dataset).copy()
    features = list(case.features) if case.features else [c for c in df.columns if c != case.target]
    X = df[features].to_numpy(dtype=np.float64)
    if case.method == "class":
        classes, y = np.unique(df[case.target].to_numpy(), return_inverse=True)
    else:
        classes, y = None, df[case.target].to_numpy(dtype=np.float64)
    folds = fold_ids(case.folds, y)
    if case.priors is not None or case.loss is not None:
        # exactly stratified: every training part has the full sample's proportions
        for v in np.unique(folds):
            np.testing.assert_array_equal(np.bincount(y[folds != v]) * len(y),
                                          np.bincount(y) * np.sum(folds != v))
    parms = rpart_runner.class_parms(case.criterion, case.priors, case.loss)
    rp = rpart_runner.run_rpart(df, case.target, features, case.method, parms=parms,
                                control=GROW, xval_folds=folds, xpred=True,
                                fold_fits=True)
    if case.method == "class":
        kw = dict(criterion=case.criterion, priors=_priors_arg(case), cost=_cost_arg(case))
        est = CARTClassifierCV(cv=folds, selection="min", **kw).fit(X, df[case.target].to_numpy())
        assert [str(c) for c in est.classes_] == rp["ylevels"]
        make = lambda: CARTClassifier(**kw)  # noqa: E731
        t = est.tree_max_
        masks = node_masks(t.left, t.right, t.feature, t.threshold, X)
        risks, _ = class_node_risks(masks, y, np.ones(len(y)), len(classes),
                                    None if case.priors is None else case.priors, case.loss)
    else:
        est = CARTRegressorCV(cv=folds, selection="min").fit(X, y)
        make = CARTRegressor
        t = est.tree_max_
        masks = node_masks(t.left, t.right, t.feature, t.threshold, X)
        risks, _ = regression_node_risks(masks, y, np.ones(len(y)))
    return Fitted(case, X, y, folds, features, classes, rp, est, make, risks)


def _close(a, b, rtol=RTOL, atol=0.0):
    a, b = float(a), float(b)
    return abs(a - b) <= max(rtol * max(abs(a), abs(b)), atol)


def merged_rpart_rows(cp: pd.DataFrame) -> pd.DataFrame:
    """rpart's cptable with consecutive rows of equal CP (to RTOL) merged into the first.

    rpart merges complexities only when they are bit-identical; two nodes with
    the same complexity in exact arithmetic but different rounding give two rows whose
    CPs differ in the last bits (the second, larger tree then "wins" on an interval of a
    few ulps)."""
    keep = [0]
    for r in range(1, len(cp)):
        if not _close(cp["CP"].iloc[r], cp["CP"].iloc[keep[-1]], atol=1e-15):
            keep.append(r)
    return cp.iloc[keep].reset_index(drop=True)


def merged_rule_rows(rows):
    """The table of rpart_rules.cp_rows with the same merging (consecutive CPs within RTOL)."""
    out = []
    for row in rows:
        if out and _close(row[0], out[-1][0], atol=0):
            continue
        out.append(row)
    return out


PARAMS = [pytest.param(c, id=c.id) for c in CASES]


# ----------------------------------------------------------------------------- sequence


@pytest.mark.parametrize("case", PARAMS)
def test_pruning_sequence_is_exact_and_explains_rpart(case):
    f = fit_case(case)
    tree = f.est.tree_max_
    R = f.risks
    R0 = R[0]
    scale = float(R0)
    table = f.est.cv_results_
    cp = f.rp["cptable"]

    # cartjit's T_max risks are the exact ones
    for t in range(tree.n_nodes):
        assert _close(tree.risk[t], R[t], atol=1e-12 * scale), t

    # 1. cartjit's sequence is the exact one, with the tie tolerance of docs/maths.md §4:
    #    steps whose exact α differ by less than RTOL (decimal ties broken by the binary
    #    representation of the data, ~1e-14) are one step
    best = min_risk_by_size(tree.left, tree.right, R)
    unmerged = exact_sequence(best)
    exact = merge_ties(unmerged, RTOL)
    near_ties = [s for s in unmerged if s not in exact]
    assert len(table) == len(exact), (
        f"cartjit: {list(table['n_leaves'])}, exact: {[s.n_leaves for s in exact]}")
    for k, s in enumerate(exact):
        assert table["n_leaves"].iloc[k] == s.n_leaves
        assert _close(table["alpha"].iloc[k], s.alpha, atol=1e-12 * scale)
        assert _close(table["risk"].iloc[k], s.risk, atol=1e-12 * scale)
        assert _close(table["cp"].iloc[k], s.alpha / R0, atol=1e-12)
        assert _close(table["rel_error"].iloc[k], s.risk / R0, atol=1e-12)

    # 2. rpart's cp=0 tree is T_1 (its last row) and its first row is the root
    assert cp["nsplit"].iloc[-1] + 1 == exact[0].n_leaves
    assert cp["nsplit"].iloc[0] == 0 and cp["rel_error"].iloc[0] == pytest.approx(1.0)

    # 3. the one-pass rule of rpart_rules, applied to cartjit's T_max, gives rpart's whole table
    ours = merged_rule_rows(rules.cp_rows(tree.left, tree.right, R))
    merged = merged_rpart_rows(cp)
    assert len(merged) == len(ours), (list(merged["nsplit"]), [s for _, s, _ in ours])
    for r, (c, s, risk) in enumerate(ours):
        assert merged["nsplit"].iloc[r] == s
        assert _close(merged["CP"].iloc[r], c / R0, atol=1e-15)
        assert _close(merged["rel_error"].iloc[r], risk / R0, atol=1e-12)

    # 4. row by row: every rpart row is an exact step, or provably not one
    def is_step(r, steps):
        m = int(cp["nsplit"].iloc[r]) + 1
        a_r = Fraction(float(cp["CP"].iloc[r])) * R0
        return any(s.n_leaves == m and _close(a_r, s.alpha, atol=1e-12 * scale)
                   and _close(cp["rel_error"].iloc[r], s.risk / R0, atol=1e-12) for s in steps)

    exact_by_leaves = {s.n_leaves: s for s in exact}
    wrong_rows, tie_rows, dup_rows = [], [], []
    tol = Fraction(1, 10**12) * R0
    for r in range(len(cp)):
        m = int(cp["nsplit"].iloc[r]) + 1
        a_r = Fraction(float(cp["CP"].iloc[r])) * R0
        rpart_risk = Fraction(float(cp["rel_error"].iloc[r])) * R0
        if is_step(r, exact):
            continue
        # m leaves is no step of the exact sequence (at this α): rpart's row is not exact
        s = exact_by_leaves.get(m)
        assert s is None or not _close(a_r, s.alpha, atol=1e-12 * scale)
        if is_step(r, near_ties):
            # rpart lists a step that is exact on the binary data but tied within the
            # tolerance with the next one (rpart merges bit-identical complexities only)
            tie_rows.append(r)
            continue
        if r > 0 and _close(cp["CP"].iloc[r], cp["CP"].iloc[r - 1], atol=1e-15):
            # an interval of a few ulps: two complexities equal in exact arithmetic,
            # rounded apart by rpart. At the exact α, rpart's tree only ties, and a
            # smaller tree (the exact step) attains the minimum.
            step = next(x for x in exact if _close(x.alpha, a_r, atol=1e-12 * scale))
            value, kept = smallest_minimiser(tree.left, tree.right, R, step.alpha)
            assert len(kept) + 1 == step.n_leaves < m
            assert abs(rpart_risk + step.alpha * m - value) <= tol
            dup_rows.append(r)
            continue
        # rpart says: T(α) has m leaves and risk rel_error·R(root) for α in [a_r, a_{r-1}).
        # Show at points of that interval that this tree is not the smallest minimiser.
        hi = Fraction(float(cp["CP"].iloc[r - 1])) * R0 if r > 0 else 2 * a_r + 1
        points = [a_r, (a_r + hi) / 2]
        refuted = []
        for a in points:
            value, kept = smallest_minimiser(tree.left, tree.right, R, a)
            size = len(kept) + 1
            rpart_value = rpart_risk + a * m
            if size != m and (value < rpart_value - tol
                              or (abs(value - rpart_value) <= tol and size < m)):
                refuted.append((float(a), size))
        assert refuted, (f"rpart row {r} (nsplit {m - 1}, CP {cp['CP'].iloc[r]!r}) is not in "
                         f"the exact sequence, but is not refuted at {points}")
        wrong_rows.append(r)
    print(f"[{case.id}] {len(exact)} exact steps ({len(near_ties)} merged near-ties); "
          f"rpart rows not exact: "
          f"{[(int(cp['nsplit'].iloc[r]), float(cp['CP'].iloc[r])) for r in wrong_rows]}; "
          f"rpart rows splitting a near-tie: {[int(cp['nsplit'].iloc[r]) for r in tie_rows]}; "
          f"rpart rows from rounded exact ties: {[int(cp['nsplit'].iloc[r]) for r in dup_rows]}")


def test_some_rpart_tables_differ_from_the_exact_sequence():
    """The branches above are exercised (rpart 4.1.19): on kyphosis with the information
    index rpart's one-pass rule lists a tree (nsplit 11) that is no smallest minimiser;
    on swiss and trees it splits a step tied in decimal arithmetic (binary rounding puts
    its two complexities 1e-14 apart); on trees and mtcars it lists rounding duplicates
    of one exact complexity."""
    for cid in ("kyphosis-entropy-random5", "swiss-random5", "trees-random5",
                "mtcars-random5"):
        f = fit_case(next(c for c in CASES if c.id == cid))
        cj = set(zip(f.est.cv_results_["n_leaves"] - 1, np.round(f.est.cv_results_["cp"], 12)))
        rp = set(zip(f.rp["cptable"]["nsplit"], np.round(f.rp["cptable"]["CP"], 12)))
        assert rp - cj, cid


# ----------------------------------------------------------------------------- xerror


def _go(tree, t, x, strict):
    """Child of t for x: cartjit (docs/maths.md §2) sends x <= c left; rpart sends x < c
    to the smaller-values side, so a held-out value equal to a threshold goes the other
    way in rpart."""
    v, c = x[tree.feature[t]], tree.threshold[t]
    return int(tree.left[t]) if (v < c if strict else v <= c) else int(tree.right[t])


def _descend(tree, x, node_cp, a, strict):
    """Leaf reached by x when descending while a < node_cp[node] (cartjit's contract with
    the per-node α, and rpart's rule with its complexities)."""
    t = 0
    while tree.left[t] >= 0 and a < node_cp[t]:
        t = _go(tree, t, x, strict)
    return t


def rpart_unit_risks(masks, y_tr, n_classes, prior_over_freq, C):
    """Exact node risks of a fold tree in rpart's terms, per unit of fold weight: cases of
    class j weigh π(j)/f(j) with f the FULL sample's frequency (rule 4 of
    :mod:`rpart_rules`)."""
    n_tr = len(y_tr)
    out = []
    for m in masks:
        cnt = np.bincount(y_tr[m], minlength=n_classes)
        out.append(min(sum(C[j][i] * int(cnt[j]) * prior_over_freq[j] for j in range(n_classes))
                       for i in range(n_classes)) / n_tr)
    return out


#: (rows, folds) of rpart's CP table (rpart 4.1.19) whose cross-validated losses the
#: rules of :mod:`rpart_rules` do not reproduce case by case from rpart trees fitted
#: separately on the training parts: in each case the held-out cases of one fold only,
#: whose separately fitted tree breaks a split tie otherwise than the fold tree inside
#: rpart's cross-validation. rpart's xerror/xstd on these rows are still checked
#: against its own predictions (X4); only the run-down of that fold is not explained.
REFIT_DIFFERS: dict[str, tuple] = {
    "iris-given-priors-strat5": ((6,), (1,)),
    "iris-asymmetric-loss-strat5": ((6,), (1,)),
    "mtcars-random5": (tuple(range(2, 25)), (2,)),
    "stackloss-loo": ((7, 8, 9, 10), (13,)),
}


@pytest.mark.parametrize("case", PARAMS)
def test_xerror_vs_rpart(case):
    """Per-case losses along a ladder from cartjit's CV to rpart's, one difference at a
    time:

    E0  cartjit: its fold trees, exact per-node α at its α', x <= c, loss C(pred|y);
    E1  the same with x < c (rpart's side for a value equal to a threshold);
    E2  rpart's one-pass complexities (:mod:`rpart_rules`, rule 1) on cartjit's fold
        trees, at the points of rpart's own CP list (rule 3);
    X3  rpart's own cross-validated predictions (``xpred.rpart``, the same folds and
        points), scored with C(pred|y);
    X4  the same scored as rpart 4.1.19 scores them, with L(pred, y): the loss matrix
        read transposed (https://github.com/bethatkinson/rpart/issues/74).

    X4 must give rpart's xerror/xstd on every row (the scoring rule, rule 5) and E0
    cartjit's cv_results_. The rest of rpart's cross-validation is checked by
    re-doing it with the rules of :mod:`rpart_rules` on rpart's fold trees, fitted by
    rpart on each training part (E4: rule 1 complexities, which must equal those rpart
    reports for these fits, the points of rule 3, the run-down of rule 4, the loss of
    rule 5): E4 must give the same loss as X4 for every case, except on the rows of
    :data:`REFIT_DIFFERS`, where a tree fitted separately on a training part breaks a
    split tie otherwise than the fold tree inside rpart's cross-validation (rpart
    orders tied values differently when it sorts a subset, and exact ties are then
    decided by rounding); those rows are explained only as far as the scoring rule.

    On rows where the α' agree and E0 and X4 lose the same on every case, cartjit's and
    rpart's numbers must agree; every other row is attributed to the first rung that
    changes.
    """
    f = fit_case(case)
    est, rp = f.est, f.rp
    cp = rp["cptable"]
    table = est.cv_results_
    R0 = f.risks[0]
    r0 = float(R0)
    n = len(f.y)
    is_class = case.method == "class"
    if is_class:
        J = len(f.classes)
        Nj = np.bincount(f.y, minlength=J)
        pi = [Fraction(int(c), n) for c in Nj] if case.priors is None else \
            [Fraction(float(p)) for p in case.priors]
        pof = [pi[j] * n / int(Nj[j]) for j in range(J)]              # π(j) / f(j)
        C = ([[Fraction(int(i != j)) for i in range(J)] for j in range(J)]
             if case.loss is None else [[Fraction(float(v)) for v in row] for row in case.loss])
        loss = (lambda yi, pred: float(pof[yi] * C[yi][pred]))
        loss_t = (lambda yi, pred: float(pof[yi] * C[pred][yi]))          # transposed
    else:
        loss = loss_t = (lambda yi, pred: (yi - pred) ** 2)

    r_cp = [float(c) * r0 for c in cp["CP"]]                       # decreasing
    r_points = rules.evaluation_points(r_cp)
    c_alpha = table["alpha"].to_numpy()
    c_points = list(table["alpha_prime"])
    K_r, K_c = len(r_points), len(c_points)
    E = {name: np.zeros((n, K)) for name, K in
         (("E0", K_c), ("E1", K_c), ("E2", K_r), ("E3", K_r), ("E4", K_r),
                        ("X3", K_r), ("X4", K_r))}
    xpred = rp["xpred"]
    assert xpred.shape == (n, K_r)
    xp = xpred.astype(np.int64) - 1 if is_class else xpred

    def fold_risks(masks, tr):
        if is_class:
            return rpart_unit_risks(masks, f.y[tr], J, pof, C)
        return regression_node_risks(masks, f.y[tr], np.ones(tr.sum()))[0]

    for v in np.unique(f.folds):
        tr, te = f.folds != v, f.folds == v
        # cartjit's fold tree
        if is_class:
            fold = f.make().fit(f.X[tr], f.classes[f.y[tr]])
            assert list(fold.classes_) == list(f.classes)
        else:
            fold = f.make().fit(f.X[tr], f.y[tr])
        ft = fold.tree_max_
        pred = ft.label if is_class else ft.value[:, 0]
        comp, _ = rules.one_pass_complexities(
            ft.left, ft.right,
            fold_risks(node_masks(ft.left, ft.right, ft.feature, ft.threshold, f.X[tr]), tr))
        # rpart's fold tree: its leaves must hold the cases rpart says they hold, and its
        # complexities by rule 1 must be the ones rpart reports
        rfit = rp["fold_fits"][int(v)]
        rt = rules.tree_from_rpart(rfit, f.features, case.method)
        rmasks = rules.membership(rt, f.X[tr], strict=True)
        leaf_of = np.full(int(tr.sum()), -1)
        for t in np.flatnonzero(rt.left < 0):
            leaf_of[rmasks[t]] = int(rfit["frame"]["node"].iloc[t])
        np.testing.assert_array_equal(leaf_of, rfit["where"])
        rrisk = fold_risks(rmasks, tr)
        rcomp, rinternal = rules.one_pass_complexities(rt.left, rt.right, rrisk)
        assert rinternal == frozenset(np.flatnonzero(rt.left >= 0).tolist())
        reported = rfit["frame"]["complexity"].to_numpy()
        for t in rinternal:
            assert _close(rcomp[t] / rrisk[0], reported[t], atol=1e-12), (v, t)
        for i in np.flatnonzero(te):
            x, yi = f.X[i], f.y[i]
            for k, a in enumerate(c_points):
                E["E0"][i, k] = loss(yi, pred[_descend(ft, x, ft.alpha, a, False)])
                E["E1"][i, k] = loss(yi, pred[_descend(ft, x, ft.alpha, a, True)])
            for r, a in enumerate(r_points):
                a = math.inf if a == math.inf else Fraction(a)
                E["E2"][i, r] = loss(yi, pred[_descend(ft, x, comp, a, True)])
                leaf = rules.descend(rt, x, rcomp, a, strict=True)
                E["E3"][i, r] = loss(yi, rt.value[leaf])
                E["E4"][i, r] = loss_t(yi, rt.value[leaf])
                E["X3"][i, r] = loss(yi, xp[i, r])
                E["X4"][i, r] = loss_t(yi, xp[i, r])

    # (a) cartjit = E0 on every row
    xe, xs = rules.xerror_xstd(E["E0"], r0)
    np.testing.assert_allclose(table["xerror"], xe, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(table["xstd"], xs, rtol=1e-12, atol=1e-14)
    # (b) rpart = X4 (its own predictions, scored by rule 5) on every row
    xe, xs = rules.xerror_xstd(E["X4"], r0)
    np.testing.assert_allclose(cp["xerror"], xe, rtol=RTOL)
    np.testing.assert_allclose(cp["xstd"], xs, rtol=RTOL)
    # (b') the rules on rpart's separately fitted fold trees: the same losses case by
    #      case, except on the declared rows
    same = lambda a, b: np.allclose(a, b, rtol=1e-12, atol=1e-12 * max(r0, 1e-300))  # noqa: E731
    refit_differs = [r for r in range(K_r) if not same(E["E4"][:, r], E["X4"][:, r])]
    off = ~np.isclose(E["E4"], E["X4"], rtol=1e-12, atol=1e-12 * max(r0, 1e-300))
    folds_off = sorted({int(v) for v in f.folds[off.any(axis=1)]})
    print(f"[{case.id}] rows where a separately fitted fold tree differs: {refit_differs} "
          f"(cases of folds {folds_off})")
    rows_ok, folds_ok = REFIT_DIFFERS.get(case.id, ((), ()))
    assert set(refit_differs) <= set(rows_ok), refit_differs
    assert set(folds_off) <= set(folds_ok), folds_off

    # (c) row by row
    compared, causes = [], {}
    for r in range(K_r):
        m = int(cp["nsplit"].iloc[r]) + 1
        hits = [k for k in range(K_c) if table["n_leaves"].iloc[k] == m
                and _close(c_alpha[k], r_cp[r], atol=1e-12 * r0)
                and (r == 0 or (k + 1 < K_c and _close(c_alpha[k + 1], r_cp[r - 1],
                                                       atol=1e-12 * r0)))]
        if not hits:
            causes.setdefault("different α' (sequence)", []).append(r)
            continue
        k = hits[0]
        if same(E["E0"][:, k], E["X4"][:, r]):
            assert _close(cp["xerror"].iloc[r], table["xerror"].iloc[k]), (r, k)
            assert _close(cp["xstd"].iloc[r], table["xstd"].iloc[k], atol=1e-12), (r, k)
            compared.append(r)
            continue
        for cause, a_, b_ in (("x == threshold", E["E0"][:, k], E["E1"][:, k]),
                              ("one-pass fold complexities", E["E1"][:, k], E["E2"][:, r]),
                              ("fold-tree split ties", E["E2"][:, r], E["X3"][:, r]),
                              ("transposed loss", E["X3"][:, r], E["X4"][:, r])):
            if not same(a_, b_):
                causes.setdefault(cause, []).append(r)
                break
    print(f"[{case.id}] rpart rows {K_r}, cartjit rows {K_c}; xerror/xstd equal on rows "
          f"{compared}; other rows by first cause: {causes}")
    assert len(compared) >= case.min_compared
    if case.loss is not None and not np.array_equal(np.array(case.loss), np.array(case.loss).T):
        # asymmetric loss: rpart's xerror differs from cartjit's already at the root row,
        # and only by the transposition (X3, rpart's predictions with the true loss, is
        # the R^CV of docs/maths.md §5)
        assert causes.get("transposed loss", [None])[0] == 0
    else:
        assert 0 in compared
        assert "transposed loss" not in causes
