"""rpart's CP table on random small data sets: cartjit's rpart mode against R's rpart.

Hypothesis draws a seed; a NumPy generator seeded with it writes a batch of small data
sets (``BATCH`` of them): 10 to 60 rows, 1 to 4 features among integer grids (many
ties), pools of decimal values (duplicates), rounded normals and unordered factors of
2 to 4 levels, with holes (NA) in some of them and duplicated rows in some (switches
``CARTJIT_RPART_RANDOM_FACTORS``, ``_HOLES``, ``_NOSURROGATES``: see ``FACTORS``); a response of
2 to 4 classes (empirical or given priors, 0-1 or a random loss matrix) or a numeric one
(on a grid, or continuous). Each gets its own fold vector (2 to 5 folds, or
leave-one-out), ``minsplit``, ``minbucket`` and ``maxsurrogate`` (0 or 5). R runs rpart
on the whole batch in one ``Rscript`` call
(:func:`rpart_runner.run_rpart_many`) with ``cp = 0``, ``maxcompete = 0``,
``maxdepth = 30``, ``xval`` = the fold vector; cartjit gets the same data, the same
fold vector and the same settings (:func:`cartjit_cptable`). Every column of the two
CP tables ("CP", "nsplit", "rel error", "xerror", "xstd") must agree to ``RTOL``
(relative; CP also to ``CP_ATOL`` absolute).

Where they differ, the test looks for a cause that lies in rpart's floating-point
summation order rather than in its rules, in exact arithmetic (``fractions.Fraction``
on the binary values of the data), on the trees cartjit grows for the full sample and
for every training part:

* a split tie: at a split node, two candidate splits (on different features, or
  different partitions of the cases that have the feature) whose improvements, as rpart
  defines them (its weighted impurity sums, with the altered priors of a loss matrix),
  are exactly equal; rpart takes the first in variable order and split order unless
  rounding makes the later one larger;
* a label tie (only for ``xerror`` / ``xstd``): a node of a fold tree where two classes
  have exactly the same expected loss;
* a complexity tie: two nodes of the full tree whose one-pass complexities are exactly
  equal, or closer than rounding can tell apart (``NEAR_TIE``), which rpart may list as
  two rows a few ulps apart;
* a zero complexity: a split whose branch lowers the risk by exactly nothing, which
  rpart keeps (with a CP of about 1e-16) when its sums round the difference above 0;
* a collapse tie: g(t) equal to the complexity of a child whose kept branch has
  splits, so that collapsing it or not gives t the same complexity but another kept
  branch, which t's ancestors see (:func:`collapse_ties`);
* for ``xerror`` / ``xstd``, in the fold of a case whose ``xpred.rpart`` prediction
  differs from cartjit's (:func:`differing_cases`): a split tie in the fold tree that
  rpart's cross-validation grows itself (its cases in another order than a separate
  fit of the training part), where the tied splits part the cases otherwise or route
  that case otherwise (:func:`fold_split_ties`), a collapse tie, a label tie on the
  case's path, or a node on its path whose complexity equals an evaluation point
  exactly (:func:`point_ties`).

Such cases are counted apart (and printed); a difference with none of them fails. The
number of data sets is ``CARTJIT_RPART_RANDOM_N`` (default ``DEFAULT_N``, a CI-sized
run); run many more locally, e.g.::

    CARTJIT_RPART_RANDOM_N=1000 python -m pytest tests/parity/test_rpart_compat_random.py -s

Each batch prints how many data sets were compared and how they came out.

Stand-in. :func:`cartjit_cptable` uses ``CARTClassifierCV`` / ``CARTRegressorCV`` with
``compat="rpart"`` when the estimators have that parameter; otherwise (or with
``CARTJIT_RPART_RANDOM_SIDE=rules``) it derives the table from cartjit's default trees
by the rules of :mod:`rpart_rules` and a few more read from rpart's behaviour
(:func:`rules_cptable`):

* the complexities of rule 1 with the bound rpart passes down while growing
  (:func:`grown_complexities`): a node whose bound is 0 is not split;
* the evaluation points of rule 3, but the first row at 10 times its complexity
  (rpart's "close enough to infinity"), not +∞;
* fold trees grown with the priors that give every case the full sample's weight
  π(j)/f(j) while the case weights stay 1;
* the routing of cases missing the split feature (:func:`route_training`): surrogates,
  then the side that got more of the cases the primary split sent; on a tie, or with
  ``maxsurrogate = 0`` (rpart sets that default only where it looks for surrogates), none:
  the case stays in the node during growth, and in the run-down of a held-out case
  (:func:`route_held_out`) it goes to rpart's second child, the one with the larger
  mean; a factor level the node has not seen counts as missing;
* x < c to the smaller values, and rpart 4.1.19's scoring (rule 5).

That stand-in is also what the tie search walks. It misses some of rpart's choices
(``STAND_IN_SLACK``); the product may miss none.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from . import rpart_rules as rules
from . import rpart_runner

pytestmark = [pytest.mark.parity, pytest.mark.slow]

RTOL = 1e-9
#: absolute tolerance on CP (a fraction of R(root)): a complexity is a difference of
#: risks, R(t) - R(T_t), which rpart computes in floating point; where it is tiny
#: (1e-9 R(root) and below) its rounding is no longer small relative to it
CP_ATOL = 1e-12
COLUMNS = ("CP", "nsplit", "rel error", "xerror", "xstd")
#: data sets per Rscript call
BATCH = 50
#: data sets compared when CARTJIT_RPART_RANDOM_N is unset (CI)
DEFAULT_N = 150
MAXDEPTH = 30
#: given priors, by number of classes: dyadic, so that they sum to 1 exactly
PRIORS = {2: [(0.25, 0.75), (0.625, 0.375)],
          3: [(0.25, 0.25, 0.5), (0.125, 0.375, 0.5)],
          4: [(0.25, 0.25, 0.25, 0.25), (0.125, 0.125, 0.25, 0.5)]}


def n_datasets() -> int:
    raw = os.environ.get("CARTJIT_RPART_RANDOM_N", "").strip()
    if not raw:
        return DEFAULT_N
    message = f"CARTJIT_RPART_RANDOM_N must be a positive integer, got {raw!r}"
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(message) from None
    if value < 1:
        raise ValueError(message)
    return value


# ----------------------------------------------------------------------------- data


@dataclass
class RandomCase:
    """One random data set and the settings both programs get."""

    name: str
    df: pd.DataFrame                 # features (float with NaN, or categorical) and "y"
    features: list
    method: str                      # "class" or "anova"
    folds: np.ndarray                # ids 1..V
    minsplit: int
    minbucket: int
    maxsurrogate: int
    priors: tuple | None = None      # given priors (None: empirical)
    loss: np.ndarray | None = None   # L[true, predicted] (None: 0-1)

    @property
    def classes(self):
        return sorted(set(self.df["y"])) if self.method == "class" else None

    def describe(self) -> str:
        kinds = ",".join("f" if isinstance(self.df[c].dtype, pd.CategoricalDtype) else "x"
                         for c in self.features)
        holes = int(self.df[self.features].isna().to_numpy().sum())
        return (f"{self.name}: n={len(self.df)} [{kinds}] {self.method} "
                f"V={len(np.unique(self.folds))} minsplit={self.minsplit} "
                f"minbucket={self.minbucket} maxsurrogate={self.maxsurrogate} NA={holes}"
                + (f" priors={self.priors}" if self.priors else "")
                + (" loss" if self.loss is not None else ""))


def _switch(name: str) -> bool:
    """An on/off environment switch, on unless set to 0."""
    raw = os.environ.get(name, "").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(f"{name} must be 0 or 1, got {raw!r}")
    return raw != "0"


#: Unordered factors among the columns (CARTJIT_RPART_RANDOM_FACTORS=0: numeric only),
#: holes (NA) in some data sets (CARTJIT_RPART_RANDOM_HOLES=0: none), and with holes
#: maxsurrogate = 0 in half of them (CARTJIT_RPART_RANDOM_NOSURROGATES=0: always 5).
#: All three are on by default, in CI too.
FACTORS = _switch("CARTJIT_RPART_RANDOM_FACTORS")
HOLES = _switch("CARTJIT_RPART_RANDOM_HOLES")
NO_SURROGATES = _switch("CARTJIT_RPART_RANDOM_NOSURROGATES")


def _column(rng, n):
    if not FACTORS:
        kind = rng.choice(["grid", "pool", "normal"], p=[0.45, 0.35, 0.2])
    else:
        kind = rng.choice(["grid", "pool", "normal", "factor"], p=[0.35, 0.25, 0.15, 0.25])
    if kind == "grid":
        return rng.integers(0, rng.integers(2, 9), size=n).astype(float)
    if kind == "pool":
        pool = np.round(rng.normal(size=rng.integers(2, 7)), 1)
        return pool[rng.integers(0, len(pool), size=n)]
    if kind == "normal":
        return np.round(rng.normal(size=n), 2)
    levels = list("abcd"[:rng.integers(2, 5)])
    codes = rng.integers(0, len(levels), size=n)
    return pd.Categorical([levels[c] for c in codes], categories=levels)


def _numeric_view(col) -> np.ndarray:
    if isinstance(col, pd.Categorical):
        return col.codes.astype(float)
    return np.asarray(col, dtype=float)


def draw_case(rng: np.random.Generator, name: str) -> RandomCase:
    """One random data set with its settings (see the module docstring)."""
    while (case := _draw_case(rng, name)) is None:
        pass
    return case




def _draw_case(rng, name):
    method = "class" if rng.random() < 0.6 else "anova"
    n = int(rng.integers(10, 61))
    p = int(rng.integers(1, 5))
    cols = {f"x{j + 1}": _column(rng, n) for j in range(p)}
    features = list(cols)
    # a response that depends on the features, with noise
    signal = sum(_numeric_view(c) * rng.normal() for c in cols.values()) + rng.normal(size=n)
    if method == "class":
        J = int(rng.integers(2, 5))
        cuts = np.quantile(signal, np.sort(rng.uniform(0.1, 0.9, size=J - 1)))
        y = np.digitize(signal, cuts)
        flip = rng.random(n) < 0.15
        y[flip] = rng.integers(0, J, size=int(flip.sum()))
        y[rng.permutation(n)[:J]] = np.arange(J)          # every class present
        labels = np.array([f"k{j}" for j in range(J)])[y]
    else:
        y = signal if rng.random() < 0.5 else np.round(signal)  # ties in y, or not
        labels = np.round(y, 2)
    df = pd.DataFrame(cols)
    df["y"] = labels
    if rng.random() < 0.3:                                # duplicated rows
        k = int(rng.integers(1, max(2, n // 4)))
        df.iloc[rng.permutation(n)[:k]] = df.iloc[rng.permutation(n)[:k]].to_numpy()
        for c in features:
            if isinstance(cols[c], pd.Categorical):
                df[c] = pd.Categorical(df[c], categories=cols[c].categories)
    maxsurrogate = 0
    if HOLES and rng.random() < 0.4:                      # holes
        for c in rng.permutation(features)[:int(rng.integers(1, p + 1))]:
            miss = rng.random(n) < rng.uniform(0.05, 0.3)
            df.loc[miss, c] = np.nan
        # rpart grows with maxsurrogate = 0 by leaving the cases that miss the split
        # variable in the node (it sets no default direction), as rpart mode does; half
        # of the draws with holes use it (CARTJIT_RPART_RANDOM_NOSURROGATES=0: none)
        maxsurrogate = 0 if NO_SURROGATES and rng.random() < 0.5 else 5
    priors = loss = None
    if method == "class":
        J = len(set(df["y"]))
        if rng.random() < 0.3:
            options = PRIORS[J]
            priors = tuple(float(v) for v in
                           rng.permutation(options[int(rng.integers(len(options)))]))
        if rng.random() < 0.3:
            loss = rng.integers(1, 5, size=(J, J)).astype(float)
            np.fill_diagonal(loss, 0.0)
    folds = _draw_folds(rng, df["y"].to_numpy(), method)
    if folds is None:            # a class too rare for every training part to hold it
        return None
    minsplit = int(rng.integers(2, 8))
    minbucket = int(rng.integers(1, max(1, minsplit // 2) + 1))
    return RandomCase(name, df, features, method, folds, minsplit, minbucket, maxsurrogate,
                      priors, loss)


def _draw_folds(rng, y, method) -> np.ndarray:
    """A fold vector (ids 1..V): random folds, or leave-one-out for small n; for a
    classification every training part holds every class."""
    n = len(y)
    for _ in range(100):
        if n <= 25 and rng.random() < 0.15:
            folds = np.arange(1, n + 1)
        else:
            V = int(rng.integers(2, 6))
            folds = rng.permutation(np.arange(n) % V) + 1
        if method != "class" or all(
                len(set(y[folds != v])) == len(set(y)) for v in np.unique(folds)):
            return folds
    return None


# ----------------------------------------------------------------------------- the two sides


def rpart_results(cases: list[RandomCase]) -> list[dict]:
    """rpart's fit of every case (with its fits on the training parts), in one Rscript
    call."""
    jobs = []
    for c in cases:
        parms = rpart_runner.class_parms("gini", c.priors, c.loss) if c.method == "class" else None
        control = {"cp": 0, "minsplit": c.minsplit, "minbucket": c.minbucket,
                   "maxcompete": 0, "maxsurrogate": c.maxsurrogate, "maxdepth": MAXDEPTH}
        jobs.append(dict(df=c.df, target="y", features=c.features, method=c.method,
                         parms=parms, control=control, xval_folds=c.folds,
                         class_levels=c.classes, fold_fits=True, xpred=True))
    return rpart_runner.run_rpart_many(jobs, timeout=600)


def cptable(result: dict) -> pd.DataFrame:
    """rpart's ``fit$cptable`` with R's column names."""
    table = result["cptable"].rename(columns={"rel_error": "rel error"})
    return table[list(COLUMNS)].reset_index(drop=True)


def _tree_params(case: RandomCase) -> dict[str, Any]:
    params = dict(min_samples_split=case.minsplit, min_samples_leaf=case.minbucket,
                  max_depth=MAXDEPTH, max_surrogate=case.maxsurrogate, max_competitor=0,
                  use_surrogate=2, surrogate_style=0)
    if case.method == "class":
        params["cost"] = case.loss
    return params


def _has_rpart_mode() -> bool:
    from cartjit import CARTClassifierCV

    return "compat" in CARTClassifierCV().get_params()


def cartjit_side() -> str:
    """"product" (``compat="rpart"``) or "rules" (the stand-in, :func:`rules_cptable`)."""
    forced = os.environ.get("CARTJIT_RPART_RANDOM_SIDE", "").strip()
    if forced not in ("", "rules", "product"):
        raise ValueError(f"CARTJIT_RPART_RANDOM_SIDE must be 'rules' or 'product', got {forced!r}")
    return forced or ("product" if _has_rpart_mode() else "rules")


def cartjit_cptable(case: RandomCase) -> pd.DataFrame:
    """cartjit's CP table for ``case``: the one place that says which cartjit runs."""
    if cartjit_side() == "rules":
        return rules_cptable(case)
    from cartjit import CARTClassifierCV, CARTRegressorCV

    X, y = case.df[case.features], case.df["y"].to_numpy()
    if case.method == "class":
        est = CARTClassifierCV(compat="rpart", cv=case.folds, cp=0, selection="min",
                               priors="empirical" if case.priors is None else
                               np.array(case.priors), **_tree_params(case))
    else:
        est = CARTRegressorCV(compat="rpart", cv=case.folds, cp=0, selection="min",
                              **_tree_params(case))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*missing every feature")
        est.fit(X, y)
    return est.cptable_[list(COLUMNS)].reset_index(drop=True)


# ----------------------------------------------------------------------------- the stand-in


@dataclass
class Grown:
    """A cartjit tree of the full sample or of a training part, with its cases."""

    tree: Any
    rows: np.ndarray                 # row indices of the data it was grown on
    paths: dict                      # held-out row -> the nodes it visits
    members: list                    # per node: the training rows that reach it
    risks: list                      # exact node risks per unit of the training rows
    expected: list                   # per node: expected loss of each class / the mean
    larger_mean: list                # per split node: 1 if the right child's mean is larger


def _encode(est, df: pd.DataFrame, features) -> np.ndarray:
    """X as the kernels see it: numbers, or level codes (NaN: missing)."""
    X = np.empty((len(df), len(features)))
    for j, c in enumerate(features):
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype):
            code = {v: float(k) for k, v in enumerate(est.categories_[j])}
            X[:, j] = [code.get(v, np.nan) if not pd.isna(v) else np.nan for v in col]
        else:
            X[:, j] = col.to_numpy(dtype=float)
    return X


def _bits(words) -> frozenset:
    return frozenset(64 * w + b for w, word in enumerate(words) for b in range(64)
                     if (int(word) >> b) & 1)


def _direction(tree, threshold, row, low_left, v):
    """0 (left), 1 (right) or None (cannot route) for value v; x < c is the low side."""
    if math.isnan(v):
        return None
    if row < 0:
        return 0 if (v < threshold) == bool(low_left) else 1
    if int(v) in _bits(tree.level_sets[row, 0]):
        return 0
    if int(v) in _bits(tree.level_sets[row, 1]):
        return 1
    return None


def _surrogate_direction(tree, t, x):
    """Where the surrogates of node t send x (0, 1), or None."""
    start = int(tree.surrogate_start[t])
    for k in range(start, start + int(tree.n_surrogates[t])):
        d = _direction(tree, tree.surrogate_threshold[k], int(tree.surrogate_level_row[k]),
                       int(tree.surrogate_low_left[k]), x[int(tree.surrogate_feature[k])])
        if d is not None:
            return d
    return None


def route_training(tree, X, rows, maxsurrogate):
    """The training rows that reach each node, and each split node's default direction,
    by rpart's rules of growth: x < c to the smaller values, then the surrogates in
    order, then (``usesurrogate = 2``) the side that got more of the cases the primary
    split sent (0 left, 1 right); on a tie there is no default and the case stays in
    the node. rpart sets the default where it looks for surrogates, so with
    ``maxsurrogate = 0`` there is none."""
    members: list[list[int]] = [[] for _ in range(len(tree.left))]
    default: list[int | None] = [None] * len(tree.left)
    members[0] = list(rows)
    for t in range(len(tree.left)):           # children have larger ids than parents
        if tree.left[t] < 0:
            continue
        f = int(tree.feature[t])
        primary = {i: _direction(tree, tree.threshold[t], int(tree.level_row[t]), 1, X[i, f])
                   for i in members[t]}
        n_left = sum(1 for d in primary.values() if d == 0)
        n_right = sum(1 for d in primary.values() if d == 1)
        if maxsurrogate > 0 and n_left != n_right:
            default[t] = 0 if n_left > n_right else 1
        for i in members[t]:
            d = primary[i]
            if d is None:
                d = _surrogate_direction(tree, t, X[i])
            if d is None:
                d = default[t]
            if d is not None:
                members[int(tree.left[t]) if d == 0 else int(tree.right[t])].append(i)
    return members, default


def route_held_out(tree, x, default, larger_mean) -> list[int]:
    """The nodes a held-out case visits in rpart's run-down of a fold tree, root first:
    as in growth, but a case that nothing sends on goes to rpart's second child 2k+1,
    the one with the larger mean (``larger_mean[t]``: 0 the left child, 1 the right):
    rpart's default direction is then 0, which is not LEFT."""
    t, path = 0, [0]
    while tree.left[t] >= 0:
        d = _direction(tree, tree.threshold[t], int(tree.level_row[t]), 1,
                       x[int(tree.feature[t])])
        if d is None:
            d = _surrogate_direction(tree, t, x)
        if d is None:
            d = default[t] if default[t] is not None else larger_mean[t]
        t = int(tree.left[t]) if d == 0 else int(tree.right[t])
        path.append(t)
    return path


def _y_codes(case: RandomCase) -> tuple[np.ndarray, int]:
    if case.method == "class":
        classes = case.classes
        return np.array([classes.index(v) for v in case.df["y"]]), len(classes)
    return case.df["y"].to_numpy(dtype=float), 0


def _priors(case: RandomCase, y: np.ndarray, J: int) -> list[Fraction]:
    counts = np.bincount(y, minlength=J)
    return ([Fraction(int(c), len(y)) for c in counts] if case.priors is None
            else [Fraction(float(p)) for p in case.priors])


def _class_scale(case: RandomCase, y: np.ndarray, J: int) -> list[Fraction]:
    """π(j) / f(j) with f the full sample's class frequencies: rpart's case weight."""
    counts = np.bincount(y, minlength=J)
    return [p * len(y) / int(c) for p, c in zip(_priors(case, y, J), counts)]


def _altered_weights(case: RandomCase, y: np.ndarray, J: int) -> list[Fraction]:
    """rpart's split weight of a case of class j: π(j) Σ_i L[j, i] / N_j (up to a
    constant)."""
    counts = np.bincount(y, minlength=J)
    L = _loss(case, J)
    return [p * sum(L[j], Fraction(0)) / int(counts[j])
            for j, p in enumerate(_priors(case, y, J))]


def _loss(case: RandomCase, J: int) -> list[list[Fraction]]:
    """L[true][predicted] as fractions."""
    if case.loss is None:
        return [[Fraction(int(i != j)) for i in range(J)] for j in range(J)]
    return [[Fraction(float(v)) for v in row] for row in case.loss]


def _mean(case, members, y, weight) -> Fraction | None:
    """rpart's mean of a node: of y, or of the class index under the altered priors."""
    if not members:
        return None
    if case.method == "class":
        w = [weight[y[i]] for i in members]
        return sum((wi * int(y[i]) for wi, i in zip(w, members)), Fraction(0)) / sum(w)
    return sum((Fraction(float(y[i])) for i in members), Fraction(0)) / len(members)


def grow(case: RandomCase, rows: np.ndarray) -> Grown:
    """cartjit's default tree on ``rows``, grown as rpart grows it: a classification with
    the priors that give a case of class j the weight π(j)/f(j) of the full sample
    (π^(v)(j) ∝ π(j) N_j^(v) / N_j; the case weights stay 1, as rpart's do for the
    surrogates and the default direction), the loss as ``cost``; without surrogates the
    cases missing a split feature stay in the node (``use_surrogate=0``)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*missing every feature")
        return _grow(case, rows)


def _grow(case: RandomCase, rows: np.ndarray) -> Grown:
    from cartjit import CARTClassifier, CARTRegressor

    y, J = _y_codes(case)
    X = case.df[case.features].iloc[rows]
    params = _tree_params(case)
    if case.maxsurrogate == 0:
        params["use_surrogate"] = 0
    if case.method == "class":
        scale = _class_scale(case, y, J)
        counts = np.bincount(y[rows], minlength=J)
        priors = np.array([float(scale[j] * int(counts[j])) for j in range(J)])
        est = CARTClassifier(priors=priors / priors.sum(), **params).fit(X, y[rows])
        assert list(est.classes_) == list(range(J))
        L, weight = _loss(case, J), _altered_weights(case, y, J)
    else:
        est = CARTRegressor(**params).fit(X, y[rows])
        scale = L = weight = None
    tree = est.tree_max_
    Xall = _encode(est, case.df, case.features)
    members, default = route_training(tree, Xall, rows, case.maxsurrogate)
    risks, expected = [], []
    for m in members:
        if case.method == "class":
            cnt = np.bincount(y[m], minlength=J)
            exp = [sum(L[j][i] * scale[j] * int(cnt[j]) for j in range(J)) for i in range(J)]
            risks.append(min(exp) / len(rows))
            expected.append(exp)
        else:
            yy = [Fraction(float(v)) for v in y[m]]
            s = sum(yy, Fraction(0))
            risks.append((sum((v * v for v in yy), Fraction(0)) - s * s / len(yy)) / len(rows)
                         if yy else Fraction(0))
            expected.append(float(s / len(yy)) if yy else math.nan)
    larger = [0] * len(tree.left)
    for t in np.flatnonzero(tree.left >= 0):
        ml = _mean(case, members[tree.left[t]], y, weight)
        mr = _mean(case, members[tree.right[t]], y, weight)
        larger[t] = int(ml is not None and mr is not None and mr > ml)
    held_out = np.setdiff1d(np.arange(len(y)), rows)
    paths = {int(i): route_held_out(tree, Xall[i], default, larger) for i in held_out}
    return Grown(tree, rows, paths, members, risks, expected, larger)


def grown_complexities(left, right, risk, ties: list | None = None
                       ) -> tuple[list[Fraction], frozenset]:
    """rpart's complexities of the nodes of a tree grown with ``cp = 0``, and the nodes
    that split in its tree: rule 1 of :mod:`rpart_rules` (one bottom-up pass, the child
    of smaller complexity collapsed first, the right one on equality), with the bound
    that rpart passes down while it grows. A node is a leaf when its risk, or its bound,
    is 0; the bound of a left child is its parent's bound (capped by the parent's risk),
    that of a right child max((R(t) - R(left branch)) / (1 + its splits), R(t) -
    R(left child)), capped by the parent's bound. Then, from the root down, a
    complexity is capped by its parent's.

    ``ties``, when given, receives the nodes t where a collapse is decided by an exact
    tie: g(t) equals the complexity of a child whose kept branch has splits. Collapsing
    that child or not gives t the same complexity but a different kept branch, which
    its ancestors see; rpart decides by the rounding of its sums."""
    n = len(left)
    comp = [Fraction(0)] * n
    splits = [False] * n
    kept_splits = [0] * n

    def above(t, gt, c):
        if ties is not None and gt == comp[c] and kept_splits[c] > 0 and t not in ties:
            ties.append(t)
        return gt > comp[c]

    def part(t, bound):
        cap = min(risk[t], bound)
        if left[t] < 0 or cap <= 0:
            return risk[t], 0
        lc, rc = int(left[t]), int(right[t])
        l_risk, l_splits = part(lc, cap)
        r_bound = min(max((risk[t] - l_risk) / (l_splits + 1), risk[t] - risk[lc]), bound)
        r_risk, r_splits = part(rc, r_bound)

        def g():
            return (risk[t] - l_risk - r_risk) / (l_splits + r_splits + 1)

        if comp[rc] > comp[lc]:
            if above(t, g(), lc):
                l_risk, l_splits = risk[lc], 0
                if above(t, g(), rc):
                    r_risk, r_splits = risk[rc], 0
        elif above(t, g(), rc):
            r_risk, r_splits = risk[rc], 0
            if above(t, g(), lc):
                l_risk, l_splits = risk[lc], 0
        if g() <= 0:
            return risk[t], 0
        comp[t], splits[t] = g(), True
        kept_splits[t] = l_splits + r_splits + 1
        return l_risk + r_risk, kept_splits[t]

    part(0, risk[0])
    internal = set()
    stack = [0] if splits[0] else []
    while stack:
        t = stack.pop()
        internal.add(t)
        for c in (int(left[t]), int(right[t])):
            if splits[c]:
                comp[c] = min(comp[c], comp[t])
                stack.append(c)
    return [comp[t] if t in internal else Fraction(0) for t in range(n)], frozenset(internal)


def grown_cp_rows(left, right, risk) -> list[tuple[Fraction, int, Fraction]]:
    """Rule 2 of :mod:`rpart_rules` on :func:`grown_complexities`: (complexity, number
    of splits, R(T)), largest complexity first."""
    comp, internal = grown_complexities(left, right, risk)
    rows = []
    for a in sorted({comp[t] for t in internal} | {Fraction(0)}, reverse=True):
        kept, leaves, stack = 0, [], [0]
        while stack:
            t = stack.pop()
            if t in internal and comp[t] > a:
                kept += 1
                stack += [int(left[t]), int(right[t])]
            else:
                leaves.append(t)
        rows.append((a, kept, sum((risk[t] for t in leaves), Fraction(0))))
    return rows


def _prediction(case, expected, t):
    if case.method == "class":
        return expected[t].index(min(expected[t]))
    return expected[t]


def rules_cptable(case: RandomCase) -> pd.DataFrame:
    """The stand-in: rpart's CP table by the rules of :mod:`rpart_rules`, applied to
    cartjit's trees of the full sample and of the training parts."""
    y, J = _y_codes(case)
    n = len(y)
    full = grow(case, np.arange(n))
    rows = grown_cp_rows(full.tree.left, full.tree.right, full.risks)
    R0 = full.risks[0]
    points = rules.evaluation_points([float(a) for a, _, _ in rows])
    points[0] = 10 * float(rows[0][0])   # rpart: "close enough to infinity", not +inf
    scale = _class_scale(case, y, J) if case.method == "class" else None
    L = _loss(case, J) if case.method == "class" else None
    losses = np.zeros((n, len(rows)))
    for v in np.unique(case.folds):
        fold = grow(case, np.flatnonzero(case.folds != v))
        comp, _ = grown_complexities(fold.tree.left, fold.tree.right, fold.risks)
        for i in np.flatnonzero(case.folds == v):
            path = fold.paths[i]
            for k, a in enumerate(points):
                t = next((s for s in path if not a < comp[s]), path[-1])
                pred = _prediction(case, fold.expected, t)
                if case.method == "class":   # rpart 4.1.19: L read as L[predicted, true]
                    losses[i, k] = float(scale[y[i]] * L[pred][y[i]])
                else:
                    losses[i, k] = (y[i] - pred) ** 2
    xerror, xstd = rules.xerror_xstd(losses, float(R0))
    return pd.DataFrame({"CP": [float(a / R0) for a, _, _ in rows],
                         "nsplit": [s for _, s, _ in rows],
                         "rel error": [float(r / R0) for _, _, r in rows],
                         "xerror": xerror, "xstd": xstd})


# ----------------------------------------------------------------------------- exact ties


def _impurity_sum(case, members, y, weight) -> Fraction:
    """rpart's weighted impurity sum of a set of cases, exact: gini W - Σ A_j² / W with
    A_j the altered-prior weight of class j; anova Σ y² - (Σ y)² / n."""
    if case.method == "class":
        A: dict[int, Fraction] = {}
        for i in members:
            A[y[i]] = A.get(y[i], Fraction(0)) + weight[y[i]]
        W = sum(A.values(), Fraction(0))
        return W - sum((a * a for a in A.values()), Fraction(0)) / W if W else Fraction(0)
    yy = [Fraction(float(y[i])) for i in members]
    s = sum(yy, Fraction(0))
    return sum((v * v for v in yy), Fraction(0)) - s * s / len(yy) if yy else Fraction(0)


def _codes(case: RandomCase) -> np.ndarray:
    X = np.empty((len(case.df), len(case.features)))
    for j, c in enumerate(case.features):
        col = case.df[c]
        X[:, j] = (col.cat.codes.replace(-1, np.nan).to_numpy(dtype=float)
                   if isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy(dtype=float))
    return X


def split_candidates(case, X, y, members, weight):
    """Every split rpart weighs at a node holding ``members``: (improvement, feature,
    the cases it sends left among those that have the feature). The improvement is
    rpart's, on the cases that have the feature, without rescaling (as rpart compares
    them across features)."""
    out = []
    categorical = [isinstance(case.df[c].dtype, pd.CategoricalDtype) for c in case.features]
    for f in range(X.shape[1]):
        present = [i for i in members if not math.isnan(X[i, f])]
        values = sorted(set(X[present, f]))
        if len(values) < 2:
            continue
        total = _impurity_sum(case, present, y, weight)
        if categorical[f]:
            sides = [set(left) for r in range(1, len(values))
                     for left in combinations(values, r) if values[0] in left]
        else:
            sides = [{v for v in values if v <= c} for c in values[:-1]]
        for left in sides:
            lm = [i for i in present if X[i, f] in left]
            rm = [i for i in present if X[i, f] not in left]
            if len(lm) < case.minbucket or len(rm) < case.minbucket:
                continue
            gain = total - _impurity_sum(case, lm, y, weight) - _impurity_sum(case, rm, y, weight)
            out.append((gain, f, frozenset(lm)))
    return out


def is_split_tie(case: RandomCase, grown: Grown, t: int) -> bool:
    """Whether the best improvement at node t is attained by two different candidates
    (another feature, or another partition), in exact arithmetic."""
    y, J = _y_codes(case)
    weight = _altered_weights(case, y, J) if case.method == "class" else None
    cands = split_candidates(case, _codes(case), y, grown.members[t], weight)
    if not cands:
        return False
    best = max(g for g, _, _ in cands)
    return best > 0 and len({(f, p) for g, f, p in cands if g == best}) > 1


def _companions(case, X, f, left, members, x):
    """The cases of ``members`` (those with feature f present) that a held-out case
    with features ``x`` joins under the split of f sending ``left`` to one side, or None
    when the split cannot send it (x_f missing, or a level no case of the node has)."""
    present = [i for i in members if not math.isnan(X[i, f])]
    right = frozenset(i for i in present if i not in left)
    if math.isnan(x[f]):
        return None
    if isinstance(case.df[case.features[f]].dtype, pd.CategoricalDtype):
        if x[f] in {X[i, f] for i in left}:
            return left
        return right if x[f] in {X[i, f] for i in right} else None
    cut = (max(X[i, f] for i in left) + min(X[i, f] for i in right)) / 2
    low = left if X[next(iter(left)), f] < cut else right
    return low if x[f] < cut else (right if low is left else left)


def fold_split_ties(case: RandomCase, grown: Grown, held: list) -> list[int]:
    """Split nodes of a fold tree where two candidate splits tie exactly (as in
    :func:`is_split_tie`) and the choice matters: they part the node's cases
    differently, or they route a held-out case of ``held`` that reaches the node
    differently.
    rpart's cross-validation grows its fold trees with its cases in another order than
    a separate fit of the training part, so its summation order may resolve such a tie
    otherwise than that fit does."""
    y, J = _y_codes(case)
    weight = _altered_weights(case, y, J) if case.method == "class" else None
    X = _codes(case)
    out = []
    for t in np.flatnonzero(grown.tree.left >= 0):
        members = grown.members[t]
        cands = split_candidates(case, X, y, members, weight)
        if not cands:
            continue
        best = max(g for g, _, _ in cands)
        tied = [(f, p) for g, f, p in cands if g == best]
        if best <= 0 or len(tied) < 2:
            continue
        parts = {frozenset((p, frozenset(i for i in members if i not in p and
                                         not math.isnan(X[i, f])))) for f, p in tied}
        reach = [i for i in held if t in grown.paths[i]]
        if len(parts) > 1 or any(
                len({_companions(case, X, f, p, members, X[i]) for f, p in tied}) > 1
                for i in reach):
            out.append(int(t))
    return out


def first_difference(case: RandomCase, grown: Grown, result: dict,
                     unsplit: list | None = None, split: list | None = None) -> int | None:
    """The first node (cartjit's id) where rpart's tree (``result`` of one fit) splits
    otherwise than ``grown``, or where rpart splits and cartjit does not; None when
    every rpart split is cartjit's. The nodes that cartjit splits and rpart does not
    are appended to ``unsplit`` (rpart drops the branches that do not lower the risk,
    which may follow from a tied split below), those that both split to ``split``."""
    tree = grown.tree
    splits = {int(r.node): r for r in result["splits"].itertuples(index=False)}
    stack = [(1, 0)]
    while stack:
        k, t = stack.pop()
        if k not in splits:
            if unsplit is not None and tree.left[t] >= 0:
                unsplit.append(t)
            continue
        row = splits[k]
        if tree.left[t] < 0 or case.features.index(row.var) != tree.feature[t]:
            return t
        if split is not None:
            split.append(t)
        if int(row.ncat) in (-1, 1):
            if not math.isclose(float(row.threshold), float(tree.threshold[t]), rel_tol=1e-12):
                return t
            low_first = int(row.ncat) == -1
        else:
            if result.get("csplit") is None:
                return t                      # a fold fit: factor splits not exported
            part = rpart_runner.level_partition(result, k)
            cats = list(case.df[row.var].cat.categories)
            left = {cats[c] for c in _bits(tree.level_sets[tree.level_row[t], 0])}
            right = {cats[c] for c in _bits(tree.level_sets[tree.level_row[t], 1])}
            if {frozenset(left), frozenset(right)} != {frozenset(part.to_first),
                                                       frozenset(part.to_second)}:
                return t
            low_first = left == set(part.to_first)
        first, second = (tree.left[t], tree.right[t]) if low_first else (tree.right[t],
                                                                         tree.left[t])
        stack += [(2 * k, int(first)), (2 * k + 1, int(second))]
    return None


def _subtree(tree, t) -> list[int]:
    out, stack = [], [t]
    while stack:
        s = stack.pop()
        out.append(s)
        if tree.left[s] >= 0:
            stack += [int(tree.left[s]), int(tree.right[s])]
    return out


def label_ties(case: RandomCase, grown: Grown) -> list[int]:
    """Nodes where two classes have exactly the least expected loss."""
    if case.method != "class":
        return []
    return [t for t, exp in enumerate(grown.expected)
            if sum(1 for e in exp if e == min(exp)) > 1]


#: two complexities whose exact values differ by less than this (relative) are a tie
#: that rounding decides: each is a difference of sums of up to 60 risks, which rpart
#: rounds at every step (e.g. complexities of 0.000573664492995161(3) and (1) times R(root) in exact arithmetic, which
#: rpart listed as two rows and cartjit merges)
NEAR_TIE = 1e-12


def complexity_ties(case: RandomCase, grown: Grown, rp: pd.DataFrame) -> list[float]:
    """rpart rows a few ulps apart (relative 1e-12) whose CP is the one-pass complexity
    of two nodes exactly, or of two nodes whose exact complexities differ by less than
    ``NEAR_TIE``."""
    comp, internal = grown_complexities(grown.tree.left, grown.tree.right, grown.risks)
    # equal, or closer than rpart's rounding can tell apart (NEAR_TIE)
    shared = [c for c in {comp[t] for t in internal}
              if sum(1 for t in internal if abs(comp[t] - c) <= NEAR_TIE * c) > 1]
    R0 = grown.risks[0]
    cps = rp["CP"].to_numpy()
    out = []
    for r in range(1, len(cps)):
        if abs(cps[r] - cps[r - 1]) <= 1e-12 * cps[r - 1]:
            out += [float(c / R0) for c in shared
                    if math.isclose(float(c / R0), cps[r], rel_tol=1e-9)]
    return out


def collapse_ties(grown: Grown) -> list[int]:
    """The nodes of ``grown`` where one of rpart's collapses is an exact tie (see
    :func:`grown_complexities`), its children taken in rpart's order (the smaller mean
    first)."""
    tree = grown.tree
    first = [int(tree.left[t] if grown.larger_mean[t] else tree.right[t])
             for t in range(len(tree.left))]
    second = [int(tree.right[t] if grown.larger_mean[t] else tree.left[t])
              for t in range(len(tree.left))]
    ties: list[int] = []
    grown_complexities(first, second, grown.risks, ties)
    return ties


def explain(case: RandomCase, differing: set, result: dict) -> str | None:
    """An exact tie where rpart's summation order decides, that explains the columns
    that differ; None if there is none (see the module docstring)."""
    full = grow(case, np.arange(len(case.df)))
    unsplit: list[int] = []
    split: list[int] = []
    t = first_difference(case, full, result, unsplit, split)
    if t is not None:
        return f"split tie at node {t} of the full tree" if is_split_tie(case, full, t) else None
    _, internal = grown_complexities(full.tree.left, full.tree.right, full.risks)
    if kept := [t for t in split if t not in internal]:
        # the branch lowers the risk by nothing in exact arithmetic, by a rounding
        # error in rpart's sums (a CP row of about 1e-16)
        return f"splits {kept} of zero exact complexity kept by rounding"
    below = [s for t in unsplit for s in _subtree(full.tree, t) if full.tree.left[s] >= 0]
    if ties := [s for s in below if is_split_tie(case, full, s)]:
        return f"split tie at nodes {ties} of the full tree, below splits rpart drops"
    if differing - {"xerror", "xstd"}:
        if c := complexity_ties(case, full, result["cptable"]):
            return f"complexity tie {c}"
        if c := collapse_ties(full):
            return f"collapse tie at nodes {c} of the full tree"
        return None
    holes = bool(case.df[case.features].isna().to_numpy().any())
    if holes:
        # xpred.rpart (4.1.19) predicts otherwise than rpart's own cross-validation on
        # some draws with holes (the tables' xerror agree where its predictions do
        # not): every fold is searched, with all its held-out cases, and one fold
        # with a tie suffices
        by_fold = {int(v): [int(i) for i in np.flatnonzero(case.folds == v)]
                   for v in np.unique(case.folds)}
    else:
        by_fold = differing_cases(case, result)
    if by_fold is None:       # the same predictions: the table's own rounding
        return None
    found = []
    for v, cases in by_fold.items():
        fold = grow(case, np.flatnonzero(case.folds != v))
        here = []
        unsplit, split = [], []
        t = first_difference(case, fold, result["fold_fits"][v], unsplit, split)
        suspects = [t] if t is not None else [
            s for u in unsplit for s in _subtree(fold.tree, u) if fold.tree.left[s] >= 0]
        if ties := [s for s in suspects if is_split_tie(case, fold, s)]:
            here.append(f"split tie at nodes {ties}")
        _, internal = grown_complexities(fold.tree.left, fold.tree.right, fold.risks)
        if t is None and (kept := [s for s in split if s not in internal]):
            here.append(f"splits {kept} of zero exact complexity")
        if ties := collapse_ties(fold):
            here.append(f"collapse tie at nodes {ties}")
        if ties := point_ties(full, fold, cases):
            here.append(f"complexity at nodes {ties} equal to an evaluation point")
        if ties := fold_split_ties(case, fold, cases):
            here.append(f"split tie at nodes {ties} (rpart's own fold tree)")
        held = {s for i in cases for s in fold.paths[i]}
        if ties := [s for s in label_ties(case, fold) if s in held]:
            here.append(f"label tie at nodes {ties}")
        if not here:
            if holes:
                continue
            return None       # a fold whose differing cases no tie explains
        found.append(f"fold {v} (cases {cases}): " + ", ".join(here))
    return "; ".join(found) or None


def _exact_sqrt(q: Fraction) -> Fraction | None:
    """sqrt(q) when it is rational, else None."""
    a, b = math.isqrt(q.numerator), math.isqrt(q.denominator)
    return Fraction(a, b) if a * a == q.numerator and b * b == q.denominator else None


def point_ties(full: Grown, fold: Grown, cases: list) -> list[int]:
    """Nodes on the paths of ``cases`` in a fold tree whose exact complexity equals an
    evaluation point exactly: 10 times the root's complexity, or the geometric mean of
    two consecutive rows' complexities of the full tree when it is rational (the units
    agree: rpart scales its points by
    the fold's share of the weight, and the risks here are per case of the tree's own
    sample). rpart descends below a node while the point is below its complexity, which
    rounding decides on such a tie."""
    comp, internal = grown_complexities(full.tree.left, full.tree.right, full.risks)
    values = sorted({comp[t] for t in internal} | {Fraction(0)}, reverse=True)
    points = {r for a, b in zip(values, values[1:]) if (r := _exact_sqrt(a * b)) is not None}
    points.add(10 * values[0])                    # the root's row
    fcomp, finternal = grown_complexities(fold.tree.left, fold.tree.right, fold.risks)
    on_path = {s for i in cases for s in fold.paths[i]}
    return sorted(int(s) for s in finternal & on_path if fcomp[s] in points)


def differing_cases(case: RandomCase, result: dict) -> dict | None:
    """The cases whose cross-validated predictions differ, by fold: rpart's
    ``xpred.rpart`` (``result["xpred"]``, with the same folds) against cartjit's
    ``cv_predictions_``, at the points of every row (the first at +inf in
    ``xpred.rpart``, at 10 times its CP in rpart's run-down and here: the fold trees
    are their roots at both unless a fold's root has a complexity above that). None
    when none differs."""
    from cartjit import CARTClassifierCV, CARTRegressorCV

    X, y = case.df[case.features], case.df["y"].to_numpy()
    kw = dict(compat="rpart", cv=case.folds, cp=0, selection="min", cv_predictions=True,
              **_tree_params(case))
    if case.method == "class":
        est = CARTClassifierCV(priors="empirical" if case.priors is None else
                               np.array(case.priors), **kw)
    else:
        est = CARTRegressorCV(**kw)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*missing every feature")
        est.fit(X, y)
    ours = est.cv_predictions_[:, ::-1].astype(float) + (case.method == "class")
    theirs = result["xpred"]
    if ours.shape != theirs.shape:
        return {int(v): [int(i) for i in np.flatnonzero(case.folds == v)]
                for v in np.unique(case.folds)}
    close = np.isclose(ours, theirs, rtol=RTOL, atol=1e-12)
    # the first column: xpred.rpart's +inf finds every fold tree at its root; where
    # cartjit's fold tree is not at its root at 10 CP (its cases' predictions vary),
    # rpart's run-down is not either, and the column says nothing
    for v in np.unique(case.folds):
        held = case.folds == v
        if np.ptp(ours[held, 0]) > 0:
            close[held, 0] = True
    rows = np.flatnonzero(~close.all(axis=1))
    out: dict[int, list[int]] = {}
    for i in rows:
        out.setdefault(int(case.folds[i]), []).append(int(i))
    return out or None


# ----------------------------------------------------------------------------- comparison


def differing_columns(rp: pd.DataFrame, cj: pd.DataFrame) -> set:
    """The columns where two CP tables differ (all of them when the lengths do). When
    rpart finds no split it does not cross-validate (its table then holds 0 for xerror
    and xstd): only the first three columns are compared."""
    if len(rp) != len(cj):
        return set(COLUMNS)
    columns = COLUMNS[:3] if len(rp) == 1 else COLUMNS
    return {col for col in columns
            if not np.allclose(rp[col].to_numpy(dtype=float), cj[col].to_numpy(dtype=float),
                               rtol=RTOL, atol=CP_ATOL if col == "CP" else 1e-300)}


@dataclass
class Tally:
    equal: int = 0
    ties: list = field(default_factory=list)
    failures: list = field(default_factory=list)


def compare_batch(seed: int, size: int) -> Tally:
    """Draw ``size`` cases from ``seed``, run rpart on all of them at once, compare."""
    rng = np.random.default_rng(seed)
    cases = [draw_case(rng, f"seed{seed}-{i}") for i in range(size)]
    tally = Tally()
    for case, res in zip(cases, rpart_results(cases)):
        rp = cptable(res)
        cj = cartjit_cptable(case)
        diff = differing_columns(rp, cj)
        if not diff:
            tally.equal += 1
            continue
        why = explain(case, diff, res)
        entry = (case.describe(), sorted(diff), why, rp, cj)
        (tally.ties if why else tally.failures).append(entry)
    return tally


def _batches() -> int:
    return max(1, math.ceil(n_datasets() / BATCH))


#: with the stand-in, the share of a batch allowed to differ without an exact tie:
#: the stand-in replays rpart's rules on cartjit's default trees and misses some of
#: rpart's choices (e.g. between surrogates of equal agreement in a fold tree); the
#: product (compat="rpart") gets none
STAND_IN_SLACK = 0.05
#: with the product, the share allowed to differ without an exact tie: none. (Draws
#: that differed once, each from a tie rounding decides: seed 98965034 data set 10, a
#: collapse tie; seed 277116 data set 26, two complexities 2e-16 apart; seed 150 data
#: set 24, a split tie in a fold tree rpart's cross-validation grows itself.)
PRODUCT_SLACK = 0.0


@settings(max_examples=_batches(), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_random_cptables_equal_rparts(seed):
    size = min(BATCH, n_datasets())
    tally = compare_batch(seed, size)
    side = cartjit_side()
    print(f"\n[rpart random, seed {seed}, cartjit side: {side}] {size} data sets "
          f"compared: {tally.equal} equal in every column, {len(tally.ties)} differ where "
          f"an exact tie lets rpart's summation order decide, {len(tally.failures)} differ "
          "otherwise")
    for desc, diff, why, _, _ in tally.ties:
        print(f"  tie  {desc}: {diff} <- {why}")
    for desc, diff, _, rp, cj in tally.failures:
        print(f"  FAIL {desc}: {diff}\n rpart:\n{rp}\n cartjit:\n{cj}")
    assert tally.equal + len(tally.ties) + len(tally.failures) == size
    allowed = int((PRODUCT_SLACK if side == "product" else STAND_IN_SLACK) * size)
    assert len(tally.failures) <= allowed, [f[:2] for f in tally.failures]


# ----------------------------------------------------------------------------- regressions

#: seed 98965034, data set 10 (a regression, minsplit 2, minbucket 1, 3 folds): values
#: in tenths, y whole numbers
_COLLAPSE_TIE = dict(
    x1=[-3, 0, -3, -13, -3, 0, -13, -3, -13, -3, -3, -3, -3, 0, -3, -3, -3, -3, -3, -3, -3,
        -13, -3, -3, -3, -3, -3, -3, -3, -3, 0, 0, 0, 0, -3, -3, -3, -3, 0, -13, 0, -3, -3],
    x2=[-2, 8, -2, 8, -13, 8, -13, -15, -2, -13, 8, -15, -2, -2, -15, 8, -13, -13, -13, -2,
        -13, -13, -13, 8, -13, -2, -13, 8, 8, 8, 8, -15, -15, 8, 8, -2, -13, -15, -15, -13,
        -13, 8, -15],
    x3=[6, 6, -2, 6, -2, -2, 11, 11, -2, 11, -2, -2, 1, 1, 6, 11, 6, -2, 11, 1, -2, -2, -2,
        1, -2, -2, 11, -2, 11, 6, 6, 11, 11, -2, 6, 1, -2, 1, 1, 6, 6, 6, 6],
    y=[-1, -1, -1, -3, -2, 0, -4, -2, -2, -3, 1, -1, -1, -1, -2, -1, -1, 0, -3, -1, 0, -3,
       -2, 1, 0, 0, -2, 0, -1, -1, -1, -2, -2, 2, 0, 1, 0, -1, -1, -3, -1, -1, -3],
    fold=[3, 1, 3, 1, 1, 1, 1, 3, 2, 3, 1, 2, 2, 2, 3, 1, 3, 3, 3, 2, 1, 1, 2, 3, 2, 2, 3, 1,
          2, 2, 1, 2, 3, 1, 1, 1, 3, 3, 2, 2, 1, 3, 2])


def test_collapse_tie_is_rounding_not_rule():
    """The draw that once differed in one CP (0.001004 against rpart's 0.000904).

    Its tree has a node t of 8 cases (sum of squares 7/8) whose children are 2 cases of
    y = -1 (SS 0) and a node u of 6 cases (SS 5/6); u parts into 2 cases (SS 0) and a
    node w of 4 cases (SS 3/4), which parts into 1 case (SS 0) and 3 cases that cannot
    be split (SS 2/3). By the one-pass rule, g(w) = 3/4 - 2/3 = 1/12 and at u
    g = (5/6 - 2/3) / 2 = 1/12: u's collapse of w is an exact tie. Keeping w (cartjit's
    rule on a tie), g(t) = (7/8 - 2/3) / 3 = 5/72; collapsing it (rpart, whose sums
    round g above g(w) here), g(t) = (7/8 - 3/4) / 2 = 1/16. Every other number of the
    two tables agrees, and the test names the tie.
    """
    d = _COLLAPSE_TIE
    df = pd.DataFrame({c: np.array(d[c], dtype=float) / 10 for c in ("x1", "x2", "x3")})
    df["y"] = np.array(d["y"], dtype=float)
    case = RandomCase("collapse-tie", df, ["x1", "x2", "x3"], "anova",
                      np.array(d["fold"]), minsplit=2, minbucket=1, maxsurrogate=0)
    result = rpart_results([case])[0]
    rp, cj = cptable(result), cartjit_cptable(case)
    y = [Fraction(v) for v in d["y"]]
    root = sum(v * v for v in y) - sum(y) ** 2 / len(y)        # rpart's R(root), exact
    row = int(np.argmin(np.abs(cj["CP"].to_numpy() - float(Fraction(5, 72) / root))))
    assert cj["CP"][row] == pytest.approx(float(Fraction(5, 72) / root), rel=1e-12)
    assert rp["CP"][row] == pytest.approx(float(Fraction(1, 16) / root), rel=1e-12)
    others = np.arange(len(rp)) != row
    assert len(rp) == len(cj)
    for col in COLUMNS:
        np.testing.assert_allclose(rp[col][others], cj[col][others], rtol=RTOL, atol=1e-15)
    for col in COLUMNS[1:]:
        np.testing.assert_allclose(rp[col][row], cj[col][row], rtol=RTOL)
    assert differing_columns(rp, cj) == {"CP"}
    assert "collapse tie" in explain(case, {"CP"}, result)


def test_improvement_threshold_carries_into_the_folds():
    """rpart drops a split whose improvement is at most 1e-10 times the largest met so
    far in the run, fold trees included. Four cases x = 1..4, y = 0, 1, 1, δ (δ = 1e-5)
    and four more x = 11..14, y = 2: the root's improvement (its share of the sum of
    squares removed) is about 0.82; the only split of the first four cases (minbucket
    2) removes δ²/4 of their sum of squares, about 1, an improvement of 2.5e-11 < 1e-10
    × 0.82. rpart drops it in the full tree (its complexity, 4.5e-12 R(root), is above
    the tie tolerance) and in fold 1, whose training part is those four cases alone (by
    itself that part splits). So both folds' trees are their roots at every row, and
    xerror is the same on both rows, computed here by hand."""
    delta = Fraction(1e-5)
    ys = [Fraction(0), Fraction(1), Fraction(1), delta] + [Fraction(2)] * 4
    df = pd.DataFrame({"x": [1.0, 2, 3, 4, 11, 12, 13, 14], "y": [float(v) for v in ys]})
    folds = np.array([2, 2, 2, 2, 1, 1, 1, 1])
    case = RandomCase("threshold", df, ["x"], "anova", folds, minsplit=4, minbucket=2,
                      maxsurrogate=0)
    result = rpart_results([case])[0]
    rp, cj = cptable(result), cartjit_cptable(case)
    assert differing_columns(rp, cj) == set()
    root = sum(v * v for v in ys) - sum(ys) ** 2 / 8
    fold1 = sum(ys[:4]) / 4                       # fold 1's tree: its root
    held = 4 * (2 - fold1) ** 2 + sum((v - 2) ** 2 for v in ys[:4])
    assert list(cj["nsplit"]) == [0, 1]
    np.testing.assert_allclose(cj["xerror"], [float(held / root)] * 2, rtol=1e-12)
