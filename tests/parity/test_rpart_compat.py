"""Parity of ``compat="rpart"`` with R's rpart: the whole ``cptable``, the pruned trees.

Each case gives the same data and the same fold vector to ``rpart(..., xval = folds)``
and to ``CARTClassifierCV`` / ``CARTRegressorCV`` with ``compat="rpart"`` (numeric,
factor and missing data; classification with estimated and given priors and with an
asymmetric loss; regression; V in {5, 10} and leave-one-out; ``cp`` 0 and above). The
fold trees are fitted in R too, one rpart per training part with the case weights rpart
uses inside its cross-validation (π(j)/f(j), f the full sample's class frequencies),
so that every tree the table depends on can be compared. All fits of all cases run in
one ``Rscript`` call.

What must hold, case by case:

1. **Trees.** For every row of the table, the pruned tree of that row partitions the
   learning cases (those with every feature present) exactly as rpart's does (rpart's
   pruned tree: each case goes down from the root until a node whose ``complexity`` is
   at most the row's CP): the same splits, read through the cases they separate. The
   same for every fold tree, at the rows of its own table.
2. **The tables.** CP, nsplit and rel error equal rpart's to 1e-9 (relative; values of
   rounding size, below 1e-14, count as 0), for the full tree and every fold tree.
3. **Cross-validation.** ``cv_predictions_`` equals ``xpred.rpart`` at the points of
   every row but the root's (xpred is asked at +inf there, the table uses 10 x CP), and
   xerror and xstd equal rpart's (1e-9) on every row when every prediction does.

Exceptions, each detected and printed, never assumed:

* **Tied splits.** Where a tree differs (1), the first node where the two programs
  split differently is found (the shallowest rpart node whose cases form no node of
  cartjit's tree), and both splits are scored at its parent in exact rational
  arithmetic (Gini with the split-search class factors, or the squared error of the
  responses as the decimals they were recorded as; over the cases with the split
  variable present): they must tie exactly. rpart's choice between exactly tied splits
  follows its floating-point summation order; cartjit's takes the lowest variable
  index, then the lowest threshold (docs/maths.md §2). That case's cross-validation is
  then not compared.
* **Tied complexities.** rpart lists complexities that are equal in exact arithmetic
  but differ in their last bits as separate rows; cartjit merges them
  (cartjit/engine/rpart.py). Consecutive rpart rows within 1e-9 of each other are merged
  here, and the exact complexities (rational node risks, rpart's one-pass rule as
  ``rpart_rules`` states it, children in rpart's order) must show them equal.
* **Held-out cases through a tie.** rpart grows its fold trees inside its
  cross-validation with other floating-point weights than its separate fit of the
  same training part, so it may break an exact tie there otherwise. Every held-out
  case that ``xpred.rpart`` predicts otherwise must pass through a split of its fold
  tree that another split ties exactly (another cut, another variable separating the
  same cases, or another subset of a factor's levels, up to 12 levels); the rows of
  xerror and xstd that differ are then printed with the number of such cases.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from . import rpart_rules as rules
from . import rpart_runner

pytestmark = pytest.mark.parity

RTOL = 1e-9
ZERO = 1e-14
GROW = {"cp": 0, "minsplit": 2, "minbucket": 1, "maxcompete": 0, "maxsurrogate": 0,
        "maxdepth": 30, "usesurrogate": 2}


@dataclass(frozen=True)
class Case:
    """One comparison: a data set, its target and method, the folds and rpart's
    parameters."""

    id: str
    data: str
    target: str
    method: str                        # "class" or "anova"
    folds: str                         # "random:V:seed" or "loo"
    features: tuple | None = None
    priors: tuple | None = None
    loss: tuple | None = None
    criterion: str = "gini"           # "entropy" <-> parms$split = "information"
    cp: float = 0.0
    minsplit: int = 2
    minbucket: int = 1


CASES = [
    Case("kyphosis-10", "kyphosis", "Kyphosis", "class", "random:10:1"),
    # rpart's table is not the exact sequence here (docs/rpart-vs-exact.md)
    Case("kyphosis-entropy-10", "kyphosis", "Kyphosis", "class", "random:10:17",
         criterion="entropy"),
    Case("kyphosis-10-cp", "kyphosis", "Kyphosis", "class", "random:10:2", cp=0.02),
    Case("iris-5", "iris", "Species", "class", "random:5:3"),
    Case("iris-priors-5", "iris", "Species", "class", "random:5:1", priors=(0.2, 0.3, 0.5)),
    Case("iris-loss-10", "iris", "Species", "class", "random:10:4",
         loss=((0, 1, 2), (1, 0, 1), (3, 2, 0))),
    Case("pima-10-rpart-sizes", "MASS::Pima.tr", "type", "class", "random:10:5",
         minsplit=20, minbucket=7),
    Case("pima2-na-5", "MASS::Pima.tr2", "type", "class", "random:5:15"),
    Case("cu-summary-type-na-factors-10", "cu.summary", "Type", "class", "random:10:16",
         minsplit=10, minbucket=3),
    Case("birthwt-5", "MASS::birthwt", "low", "class", "random:5:6",
         features=("age", "lwt", "race", "smoke", "ptl", "ht", "ui", "ftv")),
    Case("trees-5", "trees", "Volume", "anova", "random:5:7"),
    Case("trees-10", "trees", "Volume", "anova", "random:10:14"),
    Case("swiss-loo", "swiss", "Fertility", "anova", "loo"),
    Case("stackloss-loo", "stackloss", "stack.loss", "anova", "loo"),
    Case("mtcars-10-cp", "mtcars", "mpg", "anova", "random:10:8", cp=0.005),
    Case("attitude-5", "attitude", "rating", "anova", "random:5:9"),
    Case("airquality-na-10", "airquality", "Ozone", "anova", "random:10:10"),
    Case("cu-summary-na-factors-5", "cu.summary", "Price", "anova", "random:5:11"),
    Case("solder-factors-10", "solder", "skips", "anova", "random:10:12",
         minsplit=20, minbucket=7),
    Case("car90-na-factors-5", "car90", "Price", "anova", "random:5:13",
         features=("Country", "Disp", "HP", "Mileage", "Type", "Weight", "Width",
                   "Reliability")),
]
CASE_IDS = [c.id for c in CASES]



# ----------------------------------------------------------------------------- data


@functools.lru_cache(maxsize=None)
def _frames():
    names = sorted({c.data for c in CASES} - {"airquality"})
    frames = rpart_runner.r_datasets(names, factors="category")
    frames["airquality"] = rpart_runner.r_dataset("airquality", complete_cases=False)
    return frames


def _data(case):
    df = _frames()[case.data]
    df = df[df[case.target].notna()].reset_index(drop=True)  # rpart drops them too
    if case.data == "MASS::birthwt":
        df = df.assign(low=np.where(df["low"] == 1, "low", "normal"))
    return df


def _features(case, df):
    return list(case.features) if case.features else [c for c in df.columns
                                                     if c != case.target]


def _folds(case, n):
    if case.folds == "loo":
        return np.arange(1, n + 1)
    _, v, seed = case.folds.split(":")
    return np.random.default_rng(int(seed)).permutation(np.arange(n) % int(v)) + 1


def _control(case, df, features):
    missing = bool(df[features].isna().to_numpy().any())
    return {**GROW, "cp": case.cp, "minsplit": case.minsplit, "minbucket": case.minbucket,
            "maxsurrogate": 5 if missing else 0}


def _class_codes(case, df):
    labels = df[case.target].astype(str).to_numpy()
    classes = np.unique(labels)
    return classes, np.searchsorted(classes, labels)


def _case_weights(case, df):
    """rpart's case weights inside its cross-validation: π(j)/f(j) (1 with estimated
    priors and for regression), f the full sample's class frequencies."""
    if case.method != "class" or case.priors is None:
        return np.ones(len(df))
    _, y = _class_codes(case, df)
    f = np.bincount(y) / len(y)
    return (np.array(case.priors) / f)[y]


@functools.lru_cache(maxsize=1)
def _rpart_results():
    """Every case's rpart with ``xval = folds``, and rpart on every training part, in one
    R process."""
    jobs, where = [], []
    for case in CASES:
        df = _data(case)
        feats = _features(case, df)
        folds = _folds(case, len(df))
        ctrl = _control(case, df, feats)
        parms = (rpart_runner.class_parms(case.criterion, case.priors, case.loss)
                 if case.method == "class" else None)
        jobs.append(dict(df=df, target=case.target, features=feats, method=case.method,
                         parms=parms, control=ctrl, xval_folds=folds, xpred=True))
        where.append((case.id, None))
        w = _case_weights(case, df)
        fold_parms = (rpart_runner.class_parms(case.criterion, None, case.loss)
                      if case.method == "class" else None)
        for v in np.unique(folds):
            train = folds != v
            jobs.append(dict(df=df[train].reset_index(drop=True), target=case.target,
                             features=feats, method=case.method, parms=fold_parms,
                             control={**ctrl, "cp": 0}, weights=w[train]))
            where.append((case.id, int(v)))
    out: dict = {}
    for (cid, v), res in zip(where, rpart_runner.run_rpart_many(jobs)):
        out.setdefault(cid, {})[v] = res
    return out


# ----------------------------------------------------------------------------- cartjit


def _cartjit(case, df, feats, *, cv=None, weights=None, rows=None, priors=None, cp=None):
    from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

    ctrl = _control(case, df, feats)
    kw = dict(compat="rpart", cp=case.cp if cp is None else cp,
              min_samples_split=case.minsplit,
              min_samples_leaf=case.minbucket, max_surrogate=ctrl["maxsurrogate"],
              max_competitor=0)
    X = df[feats] if rows is None else df[feats][rows].reset_index(drop=True)
    y = df[case.target] if rows is None else df[case.target][rows].reset_index(drop=True)
    if case.method == "class":
        kw.update(criterion=case.criterion,
                  priors=priors if priors is not None else
                  ("empirical" if case.priors is None else np.array(case.priors)),
                  cost=None if case.loss is None else np.array(case.loss, dtype=float))
        est = (CARTClassifierCV(cv=cv, cv_predictions=True, **kw) if cv is not None
               else CARTClassifier(**kw))
        y = y.astype(str).to_numpy()
    else:
        est = (CARTRegressorCV(cv=cv, cv_predictions=True, **kw) if cv is not None
               else CARTRegressor(**kw))
        y = y.to_numpy(dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "X has missing values" notes
        return est.fit(X, y, sample_weight=weights), X


def _fold_priors(case, df, train):
    """The priors rpart's fold tree sees: π_v(j) ∝ π(j) N_j^(v) / N_j."""
    if case.method != "class" or case.priors is None:
        return None
    _, y = _class_codes(case, df)
    share = np.array(case.priors) * np.bincount(y[train], minlength=len(case.priors)) \
        / np.bincount(y)
    return share / share.sum()


# ----------------------------------------------------------------------------- trees


def _rpart_nodes(res):
    """rpart's frame as {node: (is_leaf, complexity)} and each case's leaf node."""
    fr = res["frame"]
    nodes = {int(k): (str(v) == "<leaf>", float(c))
             for k, v, c in zip(fr["node"], fr["var"], fr["complexity"])}
    return nodes, np.asarray(res["where"], dtype=np.int64)


def _chain(leaf):
    """Node ids from the root (1) down to ``leaf`` (rpart numbers node k's children 2k
    and 2k + 1)."""
    out = []
    while leaf >= 1:
        out.append(leaf)
        leaf //= 2
    return out[::-1]


def _rpart_partition(res, cp):
    """The node of rpart's tree pruned at ``cp`` where each learning case ends."""
    nodes, where = _rpart_nodes(res)
    end = np.empty(len(where), dtype=np.int64)
    for i, leaf in enumerate(where):
        for k in _chain(int(leaf)):
            leaf_here, comp = nodes[k]
            if leaf_here or comp <= cp:
                end[i] = k
                break
    return end


def _same_partition(a, b):
    pairs = np.unique(np.stack([a, b]), axis=1).shape[1]
    return pairs == np.unique(a).shape[0] == np.unique(b).shape[0]


def _cartjit_partition(est, X, alpha):
    return est.prune(alpha).apply(X)


def _node_sets(est, X):
    """Frozen sets of the learning cases of every node of cartjit's ``tree_max_`` that
    rpart's tree uses (the splits with a positive stored complexity and their
    children)."""
    from cartjit.engine.tree import apply as apply_tree
    t = est.tree_max_
    leaf = apply_tree(t, est._check_predict_X(X), est._use_surrogate)
    members: dict[int, list[int]] = {}
    for i, node in enumerate(leaf):
        node = int(node)
        while node >= 0:
            members.setdefault(node, []).append(i)
            node = int(t.parent[node])
    return {node: frozenset(v) for node, v in members.items()}, members


# ----------------------------------------------------------------------------- exact ties


def _decimal(values):
    """Responses as the exact decimals they were recorded as (the shortest repr of each
    double): data sets hold values such as 10.3, whose ties are ties of the decimals."""
    return [Fraction(repr(float(v))) for v in values]


def _class_factors(case, df):
    """Exact split-search class factors c_j ∝ π(j) Σ_i L(j, i) / N_j (full sample)."""
    classes, y = _class_codes(case, df)
    n_j = np.bincount(y)
    J = len(classes)
    pri = ([Fraction(int(c), len(y)) for c in n_j] if case.priors is None
           else [Fraction(p) for p in case.priors])
    loss = (np.ones((J, J)) - np.eye(J)) if case.loss is None else np.array(case.loss)
    return [pri[j] * sum(Fraction(float(v)) for v in loss[j]) / int(n_j[j])
            for j in range(J)]


def _gini_mass(idx, y, w, factors):
    p = [Fraction(0)] * len(factors)
    for i in idx:
        p[y[i]] += factors[y[i]] * w[i]
    tot = sum(p)
    if tot == 0:
        return Fraction(0)
    return tot - sum(q * q for q in p) / tot  # p(A) i(A) for the Gini index


def _ss(idx, yv, w):
    if not idx:
        return Fraction(0)
    sw = sum(w[i] for i in idx)
    s = sum(w[i] * yv[i] for i in idx)
    return sum(w[i] * yv[i] * yv[i] for i in idx) - s * s / sw


def _goodness(case, left, right, y, w, factors):
    """Exact decrease of p(A) i(A) (Gini) or of the sum of squares, from the present
    cases of a node to the two sides of a split."""
    assert case.criterion == "gini", "ties are scored exactly for Gini and squared error"
    both = sorted(left | right)
    if case.method == "class":
        f = functools.partial(_gini_mass, y=y, w=w, factors=factors)
    else:
        f = functools.partial(_ss, yv=y, w=w)
    return f(both) - f(sorted(left)) - f(sorted(right))


def _exact_inputs(case, df, rows, weights):
    """The training part ``df[rows]``, its responses (class indices, or exact decimals),
    its case weights and the class factors, as exact numbers."""
    sub = df[rows].reset_index(drop=True)
    w = [Fraction(float(v)) for v in weights]
    if case.method == "class":
        _, y = _class_codes(case, df)
        return sub, list(y[rows]), w, _class_factors(case, df)
    return sub, _decimal(sub[case.target]), w, None


def _exact_tie(case, df, feats, rows, res, est, X, weights):
    """The first split where rpart's tree (``res``, fitted on ``df[rows]``) and cartjit's
    (``est``) differ, scored exactly: ``(description, rpart's goodness, cartjit's)``."""
    sets, _ = _node_sets(est, X)
    by_set = {s: node for node, s in sets.items()}
    nodes, where = _rpart_nodes(res)
    r_sets: dict[int, set] = {}
    for i, leaf in enumerate(where):
        for k in _chain(int(leaf)):
            r_sets.setdefault(k, set()).add(i)
    sub, y, w, factors = _exact_inputs(case, df, rows, weights)
    for k in sorted(r_sets):
        if k == 1 or frozenset(r_sets[k]) in by_set:
            continue
        p = k // 2
        c = by_set[frozenset(r_sets[p])]
        t = est.tree_max_
        rvar = str(res["frame"].set_index("node").loc[p, "var"])
        cvar = feats[int(t.feature[c])]
        r_present = set(np.flatnonzero(sub[rvar].notna().to_numpy())) & r_sets[p]
        c_present = set(np.flatnonzero(sub[cvar].notna().to_numpy())) & r_sets[p]
        g_r = _goodness(case, r_sets[2 * p] & r_present, r_sets[2 * p + 1] & r_present,
                        y, w, factors)
        left = sets[int(t.left[c])] & c_present
        right = sets[int(t.right[c])] & c_present
        g_c = _goodness(case, set(left), set(right), y, w, factors)
        return f"rpart node {p} splits on {rvar}, cartjit on {cvar}", g_r, g_c
    return None


def _tied_nodes(case, df, feats, rows, est, X, weights, nodes):
    """The splits of cartjit's tree (``est``, fitted on ``df[rows]``) that another split
    on an ordered variable ties exactly (rational arithmetic, over the node's cases
    with each variable present, both sides holding ``minbucket`` cases): another cut,
    or another variable separating the same cases (which routes new cases otherwise).
    There rpart's choice follows its rounding. Only ``nodes`` are examined."""
    sets, members = _node_sets(est, X)
    t = est.tree_max_
    sub, y, w, factors = _exact_inputs(case, df, rows, weights)
    tied = set()
    for c in sorted(nodes):
        if not t.alpha[c] > 0:
            continue
        cases = set(members[int(c)])
        cvar = feats[int(t.feature[c])]
        c_present = set(np.flatnonzero(sub[cvar].notna().to_numpy())) & cases
        chosen = (frozenset(sets[int(t.left[c])] & c_present),
                  frozenset(sets[int(t.right[c])] & c_present))
        best = _goodness(case, set(chosen[0]), set(chosen[1]), y, w, factors)
        for var in feats:
            col = sub[var]
            if isinstance(col.dtype, pd.CategoricalDtype) and not col.dtype.ordered:
                if _tied_subset(case, col, cases, var == cvar, chosen, best, y, w, factors):
                    tied.add(int(c))
                continue
            x = (col.cat.codes.to_numpy().astype(float) if isinstance(col.dtype,
                 pd.CategoricalDtype) else col.to_numpy(dtype=float))
            idx = sorted((i for i in cases if not np.isnan(x[i])), key=lambda i: x[i])
            for cut in range(case.minbucket, len(idx) - case.minbucket + 1):
                if x[idx[cut - 1]] == x[idx[cut]]:
                    continue
                low, high = frozenset(idx[:cut]), frozenset(idx[cut:])
                if var == cvar and {low, high} == set(chosen):
                    continue  # the chosen split itself
                if _goodness(case, set(low), set(high), y, w, factors) == best:
                    tied.add(int(c))
    return tied


def _tied_subset(case, col, cases, same_var, chosen, best, y, w, factors, max_levels=12):
    """Whether a split of the unordered factor ``col`` into two sets of its levels present
    at the node (each side with ``minbucket`` cases) ties ``best`` exactly, other than
    the chosen split itself (all 2^(L-1) - 1 partitions, L <= ``max_levels``)."""
    codes = col.cat.codes.to_numpy()
    by_level: dict[int, list[int]] = {}
    for i in cases:
        if codes[i] >= 0:
            by_level.setdefault(int(codes[i]), []).append(i)
    levels = sorted(by_level)
    if len(levels) < 2 or len(levels) > max_levels:
        return False
    first, rest = levels[0], levels[1:]
    for mask in range(0, 1 << len(rest)):
        side = {first} | {lv for b, lv in enumerate(rest) if mask >> b & 1}
        if len(side) == len(levels):
            continue
        low = frozenset(i for lv in side for i in by_level[lv])
        high = frozenset(i for lv in levels if lv not in side for i in by_level[lv])
        if len(low) < case.minbucket or len(high) < case.minbucket:
            continue
        if same_var and {low, high} == set(chosen):
            continue
        if _goodness(case, set(low), set(high), y, w, factors) == best:
            return True
    return False


# ----------------------------------------------------------------------------- tables


def _merge_ties(table):
    """rpart's rows without those within RTOL below the previous kept row (a tie group
    keeps its first row); returns the kept table and the number of rows dropped."""
    cp = table["CP"].to_numpy()
    keep = [0]
    for r in range(1, len(cp)):
        if cp[keep[-1]] - cp[r] > RTOL * cp[r]:
            keep.append(r)
    out = table.iloc[keep].reset_index(drop=True)
    out.attrs["rows"] = keep
    return out, len(cp) - len(keep)


def _exact_row_count(case, df, est, X):
    """Rows of rpart's table in exact arithmetic: rational node risks of cartjit's
    T_max, rpart's one-pass rule (``rpart_rules``) at cp = 0."""
    sets, members = _node_sets(est, X)
    t = est.tree_max_
    if case.method == "class":
        _, y = _class_codes(case, df)
        classes = np.unique(y)
        loss = (np.ones((len(classes),) * 2) - np.eye(len(classes))) if case.loss is None \
            else np.array(case.loss)
        # π(j)/N_j: the split-search factors without the row sums of the loss
        pri = [f / sum(Fraction(float(v)) for v in loss[j])
               for j, f in enumerate(_class_factors(case, df))]
        risk = []
        for node in range(t.n_nodes):
            idx = members.get(node, [])
            cnt = [sum(1 for i in idx if y[i] == j) for j in range(len(classes))]
            risk.append(min(sum(Fraction(float(loss[j, i])) * pri[j] * cnt[j]
                                for j in range(len(classes)))
                            for i in range(len(classes))))
    else:
        yv = _decimal(df[case.target])
        ones = [Fraction(1)] * len(yv)
        risk = [_ss(members.get(node, []), yv, ones) for node in range(t.n_nodes)]
    from cartjit.engine.rpart import rpart_order
    first, second = rpart_order(t, _float_factors(est) if case.method == "class" else None)
    return len(rules.cp_rows(first, second, risk))


def _float_factors(est):
    """The split-search class factors of a fitted classifier (they order its children
    for rpart)."""
    from cartjit.engine.fit import split_factor
    return split_factor(est.priors_, est.class_weight_totals_, est.cost_,
                        est._split_cost_default)


def _close(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    small = (np.abs(a) < ZERO) & (np.abs(b) < ZERO)
    return small | (np.abs(a - b) <= RTOL * np.maximum(np.abs(a), np.abs(b)))


# ----------------------------------------------------------------------------- the test


def _check_tree(case, df, feats, rows, res, est, X, weights, where, notes):
    """Rule 1 for one tree at every row of its own table; returns True when every
    row's partition agrees, else checks the exact tie and returns False."""
    table, dropped = _merge_ties(res["cptable"].rename(columns={"rel_error": "rel error"}))
    ours = est.cptable_
    root = float(est.tree_max_.risk[0])
    agree = len(table) == len(ours)
    # cases missing a feature are routed while growing (rpart's ``where``) by rules
    # that prediction (cartjit's ``apply``) may not follow: the complete cases decide
    complete = ~X.isna().to_numpy().any(axis=1)
    if agree:
        for r, cp in enumerate(table["CP"]):
            a = _rpart_partition(res, float(cp))[complete]
            b = _cartjit_partition(est, X, float(ours["CP"].iloc[r]) * root)[complete]
            if not _same_partition(a, b):
                agree = False
                break
    if agree:
        for col in ("CP", "nsplit", "rel error"):
            ok = _close(ours[col], table[col])
            assert ok.all(), (f"[{where}] {col} differs at rows {np.flatnonzero(~ok)}:\n"
                              f"{ours}\n{table}")
        return True, table, dropped
    tie = _exact_tie(case, df, feats, rows, res, est, X, weights)
    assert tie is not None, f"[{where}] the trees differ but no differing split is found"
    what, g_r, g_c = tie
    assert g_r == g_c, (f"[{where}] {what}: not a tie, rpart's goodness {float(g_r)!r}, "
                        f"cartjit's {float(g_c)!r}")
    notes.append(f"[{where}] exact tie: {what} (goodness {float(g_r)!r} both)")
    return False, table, dropped


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_rpart_compat_parity(case):
    results = _rpart_results()[case.id]
    df = _data(case)
    feats = _features(case, df)
    folds = _folds(case, len(df))
    est, X = _cartjit(case, df, feats, cv=folds)
    rp = results[None]
    notes: list[str] = []
    all_rows = np.ones(len(df), dtype=bool)
    full_ok, table, dropped = _check_tree(case, df, feats, all_rows, rp, est, X,
                                          _case_weights(case, df), case.id, notes)
    ours = est.cptable_
    if dropped:
        # rpart's extra rows are complexities tied in exact arithmetic
        assert case.cp == 0, "tie groups are checked at cp = 0"
        assert _exact_row_count(case, df, est, X) == len(ours), (
            f"[{case.id}] rpart has {dropped} row(s) within 1e-9 of another, but exact "
            "arithmetic does not merge them")
        notes.append(f"[{case.id}] {dropped} rpart row(s) tied in exact arithmetic")
    folds_ok = True
    w = _case_weights(case, df)
    fold_fits = {}
    for v in np.unique(folds):
        train = folds != v
        fest, fX = _cartjit(case, df, feats, rows=train, weights=None,
                            priors=_fold_priors(case, df, train), cp=0.0)
        fold_fits[int(v)] = (train, fest)
        ok, _, _ = _check_tree(case, df, feats, train, results[int(v)], fest, fX, w[train],
                               f"{case.id} fold {v}", notes)
        folds_ok &= ok
    if not (full_ok and folds_ok):
        print("\n".join(notes))
        return
    bad = ~(_close(ours["xerror"], table["xerror"]) & _close(ours["xstd"], table["xstd"]))
    # cv_predictions_ is xpred.rpart's: every case predicted otherwise is accounted for
    # (rpart's fold trees inside its cross-validation may break an exact tie otherwise
    # than its separate fit of the same training part), and xerror/xstd differ only
    # where some prediction does
    _explain_predictions(case, df, feats, est, folds, fold_fits, rp, table, w, bad, notes)
    print("\n".join(notes) or f"[{case.id}] every tree, every column and every "
          "cross-validated prediction equal")


def _explain_predictions(case, df, feats, est, folds, fold_fits, rp, table, w, bad, notes):
    from cartjit.engine.tree import apply as apply_tree
    X = df[feats]
    K = len(table)
    ours = est.cv_predictions_[:, ::-1]
    if case.method == "class":
        ours = ours + 1.0  # rpart's class numbers
    xp = np.asarray(rp["xpred"], dtype=float)[:, table.attrs["rows"]]
    # the root's row: rpart's xpred is at +inf, the table at 10 x its CP
    differ = ~np.isclose(ours[:, 1:K], xp[:, 1:K], rtol=RTOL, atol=0)
    if not differ.any():
        assert not bad.any(), (f"[{case.id}] xerror differs at rows "
                                   f"{np.flatnonzero(bad)} but every cross-validated "
                                   "prediction is xpred.rpart's")
        return
    Xe = est._check_predict_X(X)
    tied_cache = {}
    n_tied = 0
    for i in np.unique(np.nonzero(differ)[0]):
        v = int(folds[i])
        train, fest = fold_fits[v]
        t = fest.tree_max_
        node = int(apply_tree(t, Xe[i:i + 1], fest._use_surrogate)[0])
        path = set()
        while node >= 0:
            path.add(node)
            node = int(t.parent[node])
        todo = path - tied_cache.setdefault(v, ({}, set()))[1]
        if todo:
            Xf = df[feats][train].reset_index(drop=True)
            found = _tied_nodes(case, df, feats, train, fest, Xf, w[train], todo)
            tied_cache[v][0].update(dict.fromkeys(found))
            tied_cache[v][1].update(todo)
        assert path & set(tied_cache[v][0]), (
            f"[{case.id}] case {i} (fold {v}) is predicted otherwise than by xpred.rpart "
            "and no split on its path in its fold tree is exactly tied")
        n_tied += 1
    notes.append(f"[{case.id}] xerror/xstd differ at {int(bad.sum())} row(s): "
                 f"{n_tied} held-out case(s) pass through exactly tied splits of their "
                 "fold tree (rpart's cross-validation breaks such ties by its rounding)")
