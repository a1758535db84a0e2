"""Choosing the pruned subtree by V-fold cross-validation, docs/maths.md §5.

:func:`cross_validate` is the entry point (the CV estimators call nothing else here): it
presorts, grows the trees, scores them, selects k* and returns a :class:`CVResult`.

1. T_max is grown on all of L; its weakest-link sequence gives α_1 < … < α_K and
   T_1 > … > T_K, and the geometric midpoints α'_k = sqrt(α_k α_{k+1}) (α'_K = +∞).
2. L is split into V folds (:func:`make_folds`: a seeded random permutation, optionally
   stratified by class; user-given fold ids; V = N is leave-one-out).
3. For each fold v, T_max^(v) is grown on L - L_v *without sorting again*: the full
   sample's presorted keys are filtered by fold membership in one pass per feature
   (:func:`cartjit.engine.presort.subset_keys`). Its own pruning sequence is computed, and
   every held-out case is dropped down it once, scoring T^(v)(α'_k) for all k at once
   (:func:`cartjit.engine.predict.heldout_losses`); a case missing a split feature is routed
   by the fold tree's surrogates and majority as ``use_surrogate`` says, or stops at the
   node, which then predicts it for every α'_k.
4. R^CV(T_k) = Σ_j π(j) Σ_i C(i|j) N_ij(k) / N_j: each held-out case of class j adds
   w · π(j) W / N_j · C(i|j) and the sum is divided by W (N_j, W: the full sample's
   weighted class totals and total). Regression: the weighted mean squared held-out
   error. The standard error is rpart's ``xstd`` (Breiman §11.5):
   SE = sqrt(Σ w l² - (Σ w l)² / W) / W over the per-case losses l, which is the
   binomial sqrt(R (1 - R) / N) in the 0-1, empirical-prior, unit-weight case.
5. Selection: "min" takes the smallest R^CV (ties: the smaller tree); "1se" (or m-SE
   with a number m) the smallest tree with R^CV <= min + m SE. With rpart's ``cp`` given,
   only T(cp R(root)) and its subtrees are candidates (:func:`first_candidate`).
6. Optionally, the per-case predictions behind R^CV (rpart's ``xpred.rpart``): the node
   of its fold tree where every case ends for every α'_k (:func:`heldout_nodes`, the
   run-down of step 3 from the case's end node upwards), and :func:`fold_predictions`
   reads the fold trees' labels, class probabilities or means there.

Fold trees use the same parameters as the full tree. With empirical priors a fold tree
uses its own class proportions (what rpart does); with given priors, the given π.
The same held-out descent gives Breiman's test-sample estimate (:func:`sample_risk`):
R^ts(T_k) and its standard error from a second sample, for every T_k at once.

Fold fits and the full tree's fit run in parallel on ``n_threads`` threads (the kernels
release the GIL, :func:`grow_cv_trees`); every fold is computed independently and the
sums are reduced in fold order, so the results are identical whatever the number of
threads. Repeated CV draws a new partition per
repeat from ``SeedSequence([random_state, repeat])``.
"""
from __future__ import annotations

import contextlib
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from .grow import grow_setup
from .presort import presort, subset_keys
from .fit import fit_fold, fit_tree
from .limits import check_allocation
from .predict import routing_of, FoldTree, HeldOut, LossTable, heldout_losses
from .pruning import ALPHA_ATOL, ALPHA_RTOL, index_by_k, midpoints, path_columns
from .fit import class_priors, fitted_factor, with_rpart_rules
from .rpart import (evaluation_points, fold_priors, primary_weights, rpart_default_sides,
                     rpart_improvements, rpart_pruning, rpart_scale)
from .scaling import check_class_tables, normalise
from .tree import apply as apply_tree

__all__ = ["cross_validate", "CVResult", "make_folds", "FoldPlan", "grow_cv_trees",
           "score_fold_trees", "fold_scoring", "select_index", "first_candidate", "heldout_nodes",
           "fold_predictions", "fold_tree_arrays", "sample_risk", "SELECTION_TIE_RTOL",
           "CV_PREDICTIONS"]

#: The values of ``cv_predictions``: none kept, the predictions, the predictions and
#: (classification) the class probabilities.
CV_PREDICTIONS = (False, True, "proba")

#: R^CV values within this relative distance of the minimum count as ties (the
#: smaller tree wins).
SELECTION_TIE_RTOL = 1e-12


class FoldPlan(NamedTuple):
    """Fold ids for every repeat: ``folds[r, i]`` is the fold of case i in repeat r."""

    folds: np.ndarray      # int64 (n_repeats, n)
    n_folds: int
    loo: bool


#: A lower bound on the memory of one fitted fold tree (its arrays' headers alone).
FOLD_TREE_MIN_BYTES = 1024


class CVResult(NamedTuple):
    """What :func:`cross_validate` computes (the CV estimators' fitted attributes)."""

    fitted: object           # cartjit.engine.fit.Fitted: T_max on every case, with its sequence
    table: object            # pandas.DataFrame, one row per k (``cv_results_``)
    cv_risk: np.ndarray      # (n_repeats, K): R^CV(T_k) of each repeat
    cv_se: np.ndarray        # (n_repeats, K): its standard error
    best_index: int          # row k* of the selected subtree (0-based)
    alpha: float             # α_{k*}
    n_folds: int             # V
    folds: np.ndarray        # int64 (n_repeats, n_rows): fold of each row, -1: no part
    fold_alphas: list        # [repeat][fold]: the α sequence of each fold tree
    predictions: np.ndarray | None = None  # (n_rows, K') per-case CV predictions
    proba: np.ndarray | None = None        # (n_rows, K', J) their class probabilities


def cross_validate(problem, settings, cv, *, selection="1se", stratify=False, n_repeats=1,
                   random_state=0, rows=None, labels=None, n_threads=1, cp=None,
                   predictions=False, compat="breiman"):
    """Grow T_max, cross-validate its pruning sequence and select k* (steps 1-6 above).

    ``compat="rpart"`` follows rpart's rules instead (:func:`_rpart_cv`): rpart's table
    is the sequence, ``cp`` its growth bound.

    ``cp`` (rpart's relative complexity, None: 0) keeps the rows k >= k_c of the
    sequence, T_{k_c} = T(cp R(root)) (:func:`first_candidate`): the table, the risks,
    the selection and the predictions cover those rows only. ``predictions`` (one of
    :data:`CV_PREDICTIONS`) asks for the per-case predictions of step 6 (one repeat
    only); ``CVResult.predictions`` is over the caller's rows: class indices (-1 for a
    row that takes no part) or values (NaN), and with ``"proba"`` ``CVResult.proba``
    the class probabilities (NaN).

    ``problem`` holds the cases that take part (positive weight). ``rows`` is a boolean
    mask over the caller's rows marking them (``None``: every row takes part), and
    ``labels`` the caller's targets of all its rows, handed to a scikit-learn splitter's
    ``split`` (``None``: the class indices of ``problem``). Fold ids or splits given in
    ``cv`` are over the caller's rows; the rows that take no part are dropped from them.

    An integer V larger than the number of cases is an error, except when zero weights
    alone leave fewer than V cases: then V is capped at their number (leave-one-out)
    with a warning, so that a weighting never turns a valid ``cv`` into an error.

    Presorting happens here (the full sample's keys are sorted once and filtered for
    every fold). Returns a :class:`CVResult`.
    """
    n = problem.X.shape[0]
    n_rows = n if rows is None else rows.shape[0]
    if labels is None and rows is None and problem.is_classification:
        labels = problem.y_class
    if not isinstance(cv, (str, int, np.integer)):
        ids = fold_ids_from_splits(cv, n_rows, labels)
        if rows is not None:
            ids = np.asarray(ids)
            if ids.ndim == 1 and ids.shape[0] == n_rows:
                ids = ids[rows]  # fold ids follow the cases that take part
        cv = ids
    elif (isinstance(cv, (int, np.integer)) and not isinstance(cv, (bool, np.bool_))
            and n < cv <= n_rows and n >= 2):
        warnings.warn(
            f"cv = {int(cv)} folds but only {n} of the {n_rows} cases have a positive "
            f"weight: using {n} folds (leave-one-out)", UserWarning, stacklevel=3)
        cv = n
    plan = make_folds(cv, n, y=problem.y_class if stratify else None, stratify=stratify,
                      n_repeats=n_repeats, random_state=random_state)
    keys = presort(problem.X, problem.n_levels, n_threads)
    rpart = compat == "rpart"
    fold_settings, fold_scale = (_rpart_folds(problem, settings, plan) if rpart
                                 else (None, None))
    # with cp = 0 every tree's growth bound is 0: rpart's rules run in each tree's task
    in_task = rpart and not cp
    # Breiman's rules: the fold trees are scored as they are grown, at the full tree's
    # midpoints (rpart's rules first rework every tree's sequence, then score)
    scoring = None if rpart else (
        lambda full: fold_scoring(problem, settings, plan, full.path[0], priors=full.priors,
                                  class_totals=full.class_totals))
    fitted, fold_fits, scores = grow_cv_trees(problem, settings, keys, plan, n_threads,
                                              fold_settings=fold_settings,
                                              rpart_alpha=0.0 if in_task else None,
                                              rpart_growth=rpart, lean=not predictions,
                                              scoring=scoring)
    del keys
    points = fold_points = None
    if rpart:
        fitted, fold_fits, points, fold_points = _rpart_sequences(
            fitted, fold_fits, fold_scale, 0.0 if cp is None else cp, settings,
            done=in_task, problem=problem, plan=plan)
    alphas, n_leaves, tree_risk = fitted.path
    if scores is None:
        scores = score_fold_trees(problem, settings, [f.tree for f in fold_fits], plan,
                                  alphas, priors=fitted.priors,
                                  class_totals=fitted.class_totals, n_threads=n_threads,
                                  points=fold_points,
                                  transpose_cost=rpart and problem.is_classification)
    cv_risk, cv_se = scores
    root = float(fitted.tree.risk[0])
    first = 0 if cp is None or rpart else first_candidate(alphas, cp * root, root)
    pred = proba = None
    if predictions:
        pred, proba = fold_predictions(problem, fold_fits, plan, alphas[first:],
                                       use_surrogate=settings.use_surrogate,
                                       proba=predictions == "proba", full_alphas=alphas,
                                       fold_points=fold_points)
        if rows is not None:
            pred, proba = _over_rows(pred, rows), _over_rows(proba, rows)
    if first:
        alphas, n_leaves, tree_risk = alphas[first:], n_leaves[first:], tree_risk[first:]
        cv_risk, cv_se = cv_risk[:, first:], cv_se[:, first:]
    risk_mean = cv_risk.mean(axis=0)
    se_mean = cv_se.mean(axis=0)
    std = (cv_risk.std(axis=0, ddof=1) if cv_risk.shape[0] > 1
           else np.full_like(risk_mean, np.nan))
    k = select_index(risk_mean, se_mean, selection)

    import pandas as pd  # imported here, not at `import cartjit` (docs/design.md)

    # the table is made in one piece (a column inserted into a DataFrame costs more)
    columns = path_columns(alphas, n_leaves, tree_risk, root)
    if rpart:
        columns["alpha_prime"] = points  # rpart's evaluation points
    if first:
        columns["k"] += first
        # α'_k of the kept rows are those of the whole sequence (the last one is +inf)
        columns["alpha_prime"] = midpoints(fitted.path[0])[first:]
    n_k = alphas.shape[0]
    columns["cv_risk"] = risk_mean
    columns["cv_se"] = se_mean
    columns["cv_std"] = std
    columns["xerror"] = risk_mean / root if root > 0 else np.full(n_k, np.nan)
    columns["xstd"] = se_mean / root if root > 0 else np.full(n_k, np.nan)
    columns["selected"] = np.arange(n_k) == k
    if rpart:
        columns.update(_rpart_columns(columns))
    table = index_by_k(pd.DataFrame(columns))

    folds = plan.folds
    if rows is not None:
        folds = np.full((plan.folds.shape[0], n_rows), -1, dtype=np.int64)
        folds[:, rows] = plan.folds
    n_rep, n_f = plan.folds.shape[0], plan.n_folds
    fold_alphas = [[fold_fits[r * n_f + v].path[0] for v in range(n_f)]
                   for r in range(n_rep)]
    return CVResult(fitted, table, cv_risk, cv_se, int(k), float(alphas[k]), plan.n_folds,
                    folds, fold_alphas, pred, proba)


#: The columns rpart's mode adds to ``cv_results_``: rpart's names for ``cp``,
#: ``n_leaves - 1`` and ``rel_error`` (``xerror`` and ``xstd`` are there in both modes).
RPART_COLUMNS = ("CP", "nsplit", "rel error")


def with_rpart_columns(table):
    """``table`` (a ``cv_results_``) with :data:`RPART_COLUMNS` appended (unchanged when
    it has them)."""
    if "CP" in table.columns:
        return table
    table = table.copy()
    for name, column in _rpart_columns(table).items():
        table[name] = column
    return table


def _rpart_columns(columns):
    """:data:`RPART_COLUMNS` from the columns ``cp``, ``n_leaves`` and ``rel_error`` of a
    ``cv_results_`` (a DataFrame, or the dict it is made from)."""
    return {"CP": columns["cp"], "nsplit": columns["n_leaves"] - 1,
            "rel error": columns["rel_error"]}


def _rpart_folds(problem, settings, plan):
    """rpart's fold set-up: the settings each fold tree is grown with, and the factor
    from the full sample's risk units to each fold tree's (:func:`cartjit.engine.rpart.
    fold_priors`; 1 for regression and for priors estimated from the data, where a fold
    tree's own proportions are rpart's)."""
    tasks = [(r, v) for r in range(plan.folds.shape[0]) for v in range(plan.n_folds)]
    scale = np.ones(len(tasks))
    if not problem.is_classification or (isinstance(settings.priors, str)
                                         and settings.priors == "empirical"):
        return None, scale
    w = None if problem.unit_weights else problem.w
    totals = np.bincount(problem.y_class, weights=w,
                         minlength=problem.n_classes).astype(np.float64)
    priors = class_priors(settings.priors, totals)
    out = []
    for i, (r, v) in enumerate(tasks):
        train = plan.folds[r] != v
        fold_totals = np.bincount(problem.y_class[train],
                                  weights=None if w is None else w[train],
                                  minlength=problem.n_classes).astype(np.float64)
        pri, scale[i] = fold_priors(priors, totals, fold_totals)
        out.append(settings._replace(priors=pri))
    return out, scale


def _rpart_sequences(fitted, fold_fits, fold_scale, cp, settings, done=False,
                     problem=None, plan=None):
    """rpart's complexities on the full tree (growth bound α_c = cp R(root)) and on every
    fold tree (α_c in the fold's units), and the points at which each fold tree scores
    each row: ``(fitted, fold_fits, points, fold_points)`` (``done``: the trees carry
    rpart's complexities already, grown with α_c = 0). The fold trees route their
    held-out cases as rpart does (:func:`strict_thresholds`,
    :func:`cartjit.engine.rpart.rpart_default_sides`). The points are in the full
    sample's units (:func:`cartjit.engine.rpart.evaluation_points`) and, one row per fold
    tree, in its own (times the fold's factor). ``problem`` and ``plan`` (the cases and
    the folds) give each fold tree's learning cases, whose weights sent by each split
    set rpart's default direction where some of them miss the split variable."""
    alpha_c = cp * float(fitted.tree.risk[0])
    if not done:
        fitted = with_rpart_rules(fitted, settings, alpha_c)
    points = evaluation_points(fitted.path[0])
    # rpart's improvement threshold runs over the whole fit: the full tree, then the
    # fold trees of a repeat in fold order, in the full tree's units
    full_factor = fitted_factor(fitted, settings)
    start, _ = rpart_scale(fitted.tree, alpha_c, full_factor)
    n_folds = len(fold_fits) if plan is None else plan.n_folds
    holes = (problem is not None and settings.max_surrogate > 0
             and bool(np.isnan(problem.X).any()))
    folds = []
    for i, (f, s) in enumerate(zip(fold_fits, fold_scale)):
        if i % n_folds == 0:
            iscale = start
        factor = fitted_factor(f, settings)
        improve = rpart_improvements(f.tree, full_factor)
        after, keep = rpart_scale(f.tree, alpha_c * s, factor, iscale=iscale,
                                  improve=improve)
        if not done or not np.array_equal(keep, f.tree.alpha > 0):
            tree, path = rpart_pruning(f.tree, alpha_c * s, factor, iscale=iscale,
                                       improve=improve)
            f = f._replace(tree=tree, path=path)
        iscale = after
        sent = None
        if holes:
            train = plan.folds[i // n_folds] != i % n_folds
            w = np.ones(int(train.sum())) if problem.unit_weights else problem.w[train]
            sent = primary_weights(f.tree, problem.X[train], w)
        tree = rpart_default_sides(strict_thresholds(f.tree), factor,
                                   settings.max_surrogate, sent)
        folds.append(f._replace(tree=tree))
    fold_points = points[None, :] * fold_scale[:, None]
    for i, f in enumerate(folds):
        fold_points[i] = _snap_points(fold_points[i], f.tree)
    return fitted, folds, points, fold_points


def _snap_points(points, tree):
    """``points`` with every value within the tie tolerance of a complexity of ``tree``
    replaced by that complexity. A point equal to a node's complexity in exact
    arithmetic (rpart's 10 CP, or a geometric midpoint that is rational) finds the node
    collapsed, as rpart's run-down does in exact arithmetic (it descends while the
    point is below the complexity); the scaling to the fold's units must not let
    rounding decide."""
    alphas = np.unique(tree.alpha[tree.alpha > 0])
    if alphas.shape[0] == 0:
        return points
    atol = ALPHA_ATOL * abs(float(tree.risk[0]))
    at = np.searchsorted(alphas, points)
    out = points.copy()
    for j in (np.maximum(at - 1, 0), np.minimum(at, alphas.shape[0] - 1)):
        a = alphas[j]
        near = np.abs(points - a) <= ALPHA_RTOL * a + atol
        out[near] = a[near]
    return out


def strict_thresholds(tree):
    """``tree`` sending x < c, instead of x <= c, to the side of the smaller values, at
    its splits and its ordered surrogates (as rpart routes a case): every threshold c
    is replaced by the largest double below it, so x <= c' exactly when x < c. The fold
    trees of ``compat="rpart"`` route their held-out cases so."""
    with np.errstate(invalid="ignore"):
        return tree._replace(
            threshold=np.nextafter(tree.threshold, -np.inf),
            surrogate_threshold=np.nextafter(tree.surrogate_threshold, -np.inf))


def first_candidate(alphas, alpha, root_risk):
    """Row index k_c (0-based) of T(alpha) in the sequence ``alphas`` (α_1 = 0 < α_2 <
    …): the last α_k at most ``alpha (1 + ALPHA_RTOL) + ALPHA_ATOL R(root)``, the
    tolerance of :func:`cartjit.engine.pruning.keeps_split`, so that T_{k_c} is the tree
    ``prune(alpha)`` gives (a node collapses at its α_k, stored as the same double)."""
    bound = alpha + ALPHA_RTOL * alpha + ALPHA_ATOL * abs(root_risk)
    return int(np.searchsorted(alphas, bound, side="right")) - 1


def _over_rows(values, rows):
    """``values`` over the cases that take part, spread over the caller's ``rows`` (a
    boolean mask); the other rows get -1 (integers) or NaN."""
    if values is None:
        return None
    fill = -1 if values.dtype.kind == "i" else np.nan
    out = np.full((rows.shape[0],) + values.shape[1:], fill, dtype=values.dtype)
    out[rows] = values
    return out


def heldout_nodes(tree, X, use_surrogate, points):
    """Cross-validated predictions: the node of ``tree`` (a fold tree, with its per-node
    collapse α) where each row of X ends in T(α) for every α of ``points`` (increasing),
    as an int32 array (rows, K).

    Each row is dropped once down T_max^(v) (:func:`cartjit.engine.tree.apply`: its leaf, or
    the internal node where a missing value stops it, which then stands for every α).
    Going up from there, the per-node α never decreases (a node collapses no earlier
    than its descendants), and an ancestor a is the row's end node for the α from
    alpha[a] up to its parent's collapse: the rule of rpart's ``rundown`` and of
    :func:`cartjit.engine.predict.heldout_losses`. Each node of the path marks the first
    column of its range (shallower nodes written last), and a running maximum over the
    columns carries the marks forward; O(depth + K) per row, in NumPy.
    """
    end = apply_tree(tree, X, use_surrogate).astype(np.int64)
    m, K = end.shape[0], points.shape[0]
    mark = np.zeros((m, K), dtype=np.int32)  # node + 1 at the first column of its range
    mark[:, 0] = end + 1
    row = np.arange(m)
    cur = tree.parent[end].astype(np.int64)
    while True:
        on = np.flatnonzero(cur >= 0)
        if on.shape[0] == 0:
            break
        node = cur[on]
        first = np.searchsorted(points, tree.alpha[node], side="left")
        keep = first < K
        mark[row[on[keep]], first[keep]] = node[keep] + 1
        cur[on] = tree.parent[node]
    at = np.where(mark > 0, np.arange(K, dtype=np.int32), 0)
    np.maximum.accumulate(at, axis=1, out=at)
    return mark[row[:, None], at] - 1


def fold_tree_arrays(tree, use_surrogate, value=None):
    """The :class:`cartjit.engine.predict.FoldTree` of a fitted tree (``value``: its node values
    in the kernels' units for regression; default the tree's own)."""
    label = tree.label if value is None else np.empty(0, dtype=np.int32)
    return FoldTree(tree.feature, tree.threshold, tree.left, tree.alpha, label,
                    tree.value if value is None else value, routing_of(tree, use_surrogate))


def fold_predictions(problem, fold_fits, plan, alphas, *, use_surrogate, proba=False,
                     full_alphas=None, fold_points=None):
    """Per-case cross-validated predictions (step 6; rpart's ``xpred.rpart``).

    For every case i (of ``problem``) and every k, what the tree of i's fold pruned at
    α'_k predicts for it: α'_k the midpoints of ``full_alphas`` (default ``alphas``)
    at the positions of ``alphas`` (the last sequence rows). Returns ``(pred, proba)``:
    class indices (int64) or means (float64), shape (n, K); with ``proba`` the class
    probabilities p(j | t) of each fold tree's end node, with that fold tree's priors
    (n, K, J), else None. Cases are routed as ``use_surrogate`` says. One repeat only.
    ``fold_points`` (one increasing row per fold, in its units) replaces the α'_k.
    """
    if plan.folds.shape[0] != 1:
        raise ValueError("cv_predictions needs a single partition: use n_repeats=1")
    full = alphas if full_alphas is None else full_alphas
    points = midpoints(np.asarray(full, dtype=np.float64))[full.shape[0] - alphas.shape[0]:]
    n, K = problem.X.shape[0], points.shape[0]
    J = problem.n_classes
    check_allocation(n * K * (4 + 8 + (8 * J if proba else 0)),
                     f"cross-validated predictions of {n} cases at {K} values of alpha",
                     "use cv_predictions=False, or a cp that keeps fewer rows")
    tasks = [(v, fold_fits[v].tree, np.flatnonzero(plan.folds[0] == v))
             for v in range(plan.n_folds)]
    cls = problem.is_classification
    pred = np.empty((n, K), dtype=np.int64 if cls else np.float64)
    prob = np.empty((n, K, J)) if proba and cls else None
    for v, t, held in tasks:
        at = heldout_nodes(t, np.ascontiguousarray(problem.X[held]), use_surrogate,
                           points if fold_points is None else fold_points[v])
        if cls:
            pred[held] = t.label[at]
            if prob is not None:
                f = fold_fits[v]
                factor = np.divide(f.priors, f.class_totals, out=np.zeros(J),
                                   where=f.class_totals > 0)
                scaled = t.value[at] * factor
                prob[held] = scaled / scaled.sum(axis=2, keepdims=True)
        else:
            pred[held] = t.value[at, 0]
    return pred, prob


def _check_cv_int(cv, n):
    if isinstance(cv, (bool, np.bool_)) or not isinstance(cv, (int, np.integer)):
        raise TypeError(f"cv must be an int >= 2, 'loo' or an array of fold ids, got {cv!r}")
    if cv < 2:
        raise ValueError(f"cv must be >= 2 folds, got {cv}")
    if cv > n:
        raise ValueError(f"cv = {cv} folds is more than the number of cases ({n}); "
                         "use at most n folds (cv='loo' for leave-one-out)")
    return int(cv)


def make_folds(cv, n, *, y=None, stratify=False, n_repeats=1, random_state=0):
    """The fold ids of every repeat (see :class:`FoldPlan`).

    ``cv`` is V (an int), ``"loo"`` (V = n), an array of n fold labels (any values;
    each distinct value is one fold, as in rpart's ``xval`` vector), or scikit-learn
    style (train, test) index pairs / a splitter with ``split``, whose test sets must
    partition the cases. Random folds have
    sizes differing by at most one; stratified folds deal each class's shuffled cases
    round-robin so every fold gets ⌊n_j/V⌋ or ⌈n_j/V⌉ of class j.
    """
    if isinstance(n_repeats, (bool, np.bool_)) or not isinstance(n_repeats, (int, np.integer)):
        raise TypeError(f"n_repeats must be an int >= 1, got {n_repeats!r}")
    if n_repeats < 1:
        raise ValueError(f"n_repeats must be >= 1, got {n_repeats}")
    if n < 2:
        raise ValueError(f"cross-validation needs at least 2 cases, got {n} sample(s) "
                         "(n_samples = 1 cannot be split into folds)")
    if isinstance(cv, str):
        if cv != "loo":
            raise ValueError(f"cv must be an int >= 2, 'loo' or an array of fold ids, got {cv!r}")
        _warn_loo_repeats(n_repeats)
        return FoldPlan(np.arange(n, dtype=np.int64)[None, :], n, True)
    if isinstance(cv, (float, np.floating)):
        raise TypeError(f"cv must be an int >= 2, 'loo' or an array of fold ids, got {cv!r}")
    if isinstance(cv, (int, np.integer, bool, np.bool_)):
        v = _check_cv_int(cv, n)
        if v == n:  # leave-one-out: every partition is the same
            _warn_loo_repeats(n_repeats)
            return FoldPlan(np.arange(n, dtype=np.int64)[None, :], n, True)
        if stratify and y is None:
            raise ValueError("stratify=True needs class labels (classification only)")
        # The fold ids, and the n_repeats × V fold trees kept for scoring (a tree's
        # arrays and objects take well over FOLD_TREE_MIN_BYTES even as a single leaf).
        check_allocation(int(n_repeats) * (n * 8 + v * FOLD_TREE_MIN_BYTES),
                         f"n_repeats={int(n_repeats)} partitions of {n} fold ids and "
                         f"{int(n_repeats) * v} fold trees", "ask for fewer repeats")
        folds = np.empty((n_repeats, n), dtype=np.int64)
        if stratify:
            counts = np.bincount(y)
            small = np.flatnonzero((counts > 0) & (counts < v))
            if small.size:
                warnings.warn(
                    f"stratify: class index {int(small[0])} has {int(counts[small[0]])} cases, "
                    f"fewer than the {v} folds, so some folds have none of it; the other "
                    "classes are still stratified", UserWarning, stacklevel=3)
        for r in range(n_repeats):
            rng = np.random.default_rng(np.random.SeedSequence([int(random_state), r]))
            if stratify:
                order = np.concatenate([rng.permutation(np.flatnonzero(y == j))
                                        for j in range(int(y.max()) + 1)])
                folds[r, order] = np.arange(n) % v
            else:
                folds[r, rng.permutation(n)] = np.arange(n) % v
        return FoldPlan(folds, v, False)
    ids = np.asarray(fold_ids_from_splits(cv, n, y))
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"cv fold ids must be a 1-d array with one id per case ({n}), "
                         f"got shape {ids.shape}")
    if ids.dtype.kind not in "biuOUS":
        raise TypeError(f"cv fold ids must be integers or labels, got dtype {ids.dtype}")
    labels, folds = np.unique(ids, return_inverse=True)
    if labels.shape[0] < 2:
        raise ValueError("cv fold ids must name at least 2 different folds")
    if n_repeats != 1:
        raise ValueError("n_repeats > 1 needs random folds; with given fold ids use n_repeats=1")
    loo = labels.shape[0] == n
    return FoldPlan(folds.reshape(1, -1).astype(np.int64), int(labels.shape[0]), loo)


def _warn_loo_repeats(n_repeats):
    if n_repeats > 1:
        warnings.warn(f"leave-one-out has a single partition: n_repeats={n_repeats} would repeat "
                      "the same computation, so it runs once (cv_std is NaN)", UserWarning,
                      stacklevel=4)


def _is_split_list(cv):
    """A list of (train, test) index pairs, as scikit-learn's splitters produce."""
    if not isinstance(cv, (list, tuple)) or not cv:
        return False
    return all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in cv)


def fold_ids_from_splits(cv, n, y=None):
    """Fold ids for a scikit-learn splitter (``split(X, y)``) or a list of (train, test)
    pairs over n cases; any other ``cv`` is returned unchanged."""
    if hasattr(cv, "split"):
        cv = list(cv.split(np.zeros((n, 1)), y))
    if _is_split_list(cv):
        return _folds_from_splits(cv, n)
    return cv


def _folds_from_splits(splits, n):
    """Fold ids from (train, test) pairs whose test sets partition the n cases."""
    folds = np.full(n, -1, dtype=np.int64)
    for v, (train, test) in enumerate(splits):
        test = np.asarray(test)
        if test.dtype == bool:
            test = np.flatnonzero(test)
        if test.size and (test.min() < 0 or test.max() >= n):
            raise ValueError(f"cv split {v}: test indices must lie in [0, {n})")
        if np.any(folds[test] >= 0):
            raise ValueError(f"cv split {v}: a case is in more than one test set; V-fold CV "
                             "needs test sets that partition the cases")
        folds[test] = v
        train = np.asarray(train)
        if train.dtype == bool:
            train = np.flatnonzero(train)
        expected = np.setdiff1d(np.arange(n), test)
        if not np.array_equal(np.sort(train), expected):
            raise ValueError(f"cv split {v}: the training set must be every case not in its "
                             "test set")
    if np.any(folds < 0):
        raise ValueError("cv splits: every case must be in exactly one test set")
    return folds


#: Below this many (case, feature) values the folds run on the calling thread: a small
#: fold fit is mostly Python holding the GIL, so threads would only add hand-offs.
FOLD_THREADS_MIN_VALUES = 1 << 14


@contextlib.contextmanager
def task_pool(n_threads):
    """A pool of ``n_threads`` Python threads for independent tasks (the trees of a
    cross-validation or of a forest), shut down on the way out: after every task when
    the block ends normally; when it raises (``KeyboardInterrupt`` on Ctrl-C, or the
    command line's SIGTERM) the tasks not started yet are cancelled and only the
    running ones are waited for. A running task is a compiled call that cannot be
    interrupted and writes into arrays its caller owns, so it always ends before the
    exception goes on; waiting for the queued ones too (``with ThreadPoolExecutor``)
    would hold Ctrl-C up for the rest of the cross-validation.

    A worker whose start the exception interrupted (``submit`` starts the workers, and
    waits for each to run) is unknown to the pool, which would not wait for it: the
    pool's workers are also found by their name and joined."""
    token = object()  # alive as long as the pool: its id names this pool's workers
    prefix = f"cartjit-tasks-{id(token)}_"
    pool = ThreadPoolExecutor(n_threads, thread_name_prefix=prefix[:-1])
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for t in threading.enumerate():
            while t.name.startswith(prefix):
                try:
                    t.join()
                    break
                except RuntimeError:  # started a moment ago, not yet running
                    time.sleep(0.001)
        raise
    pool.shutdown(wait=True)


def _run_tasks(fn, tasks, n_threads):
    if n_threads > 1 and len(tasks) > 1:
        with task_pool(min(n_threads, len(tasks))) as pool:
            return list(pool.map(fn, tasks))
    return [fn(t) for t in tasks]


def grow_cv_trees(problem, settings, keys, plan, n_threads=1, fold_settings=None,
                  rpart_alpha=None, rpart_growth=False, lean=False, scoring=None):
    """T_max and T_max^(v) for every (repeat, fold): :func:`fit_tree`'s results.

    Returns ``(full, folds, scores)``, the folds in (repeat, fold) order; each result carries its
    tree (with the per-node collapse α) and its pruning sequence. Fold trees are grown
    with the surrogate settings of the full tree (their surrogates route the held-out
    cases, as in rpart's cross-validation) but without competitors. ``keys``
    (the full sample's :func:`cartjit.engine.presort.presort`) are never written while other
    trees read them: each fold grows from its own filtered copy, and the full tree
    either consumes them last (one thread) or grows from a copy of its own. On threads
    the full tree, the largest task, is started first and runs beside the folds, so no
    thread idles while it grows. ``fold_settings`` (one per fold, in that order) replaces
    the full tree's settings for the folds (rpart's fold priors); ``rpart_alpha`` and
    ``rpart_growth`` are :func:`cartjit.engine.fit.fit_tree`'s, for every tree.

    ``lean=True`` asks only for what :func:`score_fold_trees` reads: the folds are then
    :func:`cartjit.engine.fit.fit_fold`'s records (the same α, labels and means, without the
    :class:`cartjit.engine.tree.Tree`; the units are set once for every fold) wherever the
    fold trees follow Breiman's rules without ``max_leaf_nodes``.

    ``scoring`` (None: ``scores`` is None) scores the fold trees in the same pool:
    ``scoring(full)`` gives :func:`fold_scoring`'s ``(score, result)`` for the full
    tree's sequence; it is called once T_max is grown, a task per fold tree then scores
    it (queued behind the fits, so that a thread whose fits are done scores while the
    others still grow), and ``scores`` is ``result()``.
    """
    # A fold tree's surrogates route its held-out cases; its competitors are never read.
    base = settings._replace(max_competitor=0)
    if problem.is_classification:  # the same check for every tree: made once, here
        check_class_tables(problem.X.shape[0], problem.n_classes, settings)
    lean = (lean and fold_settings is None and rpart_alpha is None and not rpart_growth
            and settings.max_leaf_nodes is None)
    if lean:
        norm_problem, norm_base, scale = normalise(problem, base)
        setup = grow_setup(norm_problem, norm_base, keys.n_levels)  # the same for every fold

    def run(task):
        if task is None:
            own = keys if n_threads == 1 else keys._replace(keys=keys.keys.copy())
            return fit_tree(problem, settings, own, n_threads=1, rpart_alpha=rpart_alpha,
                            rpart_growth=rpart_growth, check=False)
        r, v = task
        in_train = plan.folds[r] != v
        if lean:
            return fit_fold(norm_problem, norm_base, scale, subset_keys(keys, in_train, 1),
                            setup)
        own = (base if fold_settings is None else
               fold_settings[r * plan.n_folds + v]._replace(max_competitor=0))
        return fit_tree(problem, own, subset_keys(keys, in_train, 1), n_threads=1,
                        rpart_alpha=rpart_alpha, rpart_growth=rpart_growth, check=False)

    folds = [(r, v) for r in range(plan.folds.shape[0]) for v in range(plan.n_folds)]
    if problem.X.size < FOLD_THREADS_MIN_VALUES:
        n_threads = 1
    at = len(folds) if n_threads == 1 else 0  # where the full tree's task goes
    tasks = folds[:at] + [None] + folds[at:]
    if scoring is None:
        results = _run_tasks(run, tasks, n_threads)
        return results.pop(at), results, None
    if n_threads == 1:
        results = [run(t) for t in tasks]
        full = results.pop(at)
        score, result = scoring(full)
        for i, f in enumerate(results):
            score(i, f.tree)
        return full, results, result()

    def run_full():
        full = run(None)
        return full, scoring(full)

    def score_task(i):
        score = fits[at].result()[1][0]
        score(i, fits[i + 1].result().tree)  # the full tree's task is first (at = 0)

    with task_pool(min(n_threads, len(tasks))) as pool:
        # First in, first out: every fit has started before a scoring task waits on one.
        fits = [pool.submit(run_full) if t is None else pool.submit(run, t) for t in tasks]
        scored = [pool.submit(score_task, i) for i in range(len(folds))]
        for f in scored:
            f.result()
    full, (_, result) = fits[at].result()
    return full, [f.result() for f in fits[at + 1:]], result()


#: From this many cases the held-out rows are found by a radix sort of the fold ids.
HELD_RADIX_MIN_CASES = 4096


def score_fold_trees(problem, settings, fold_trees, plan, full_alpha_seq, *, priors=None,
                     class_totals=None, n_threads=1, points=None, transpose_cost=False):
    """Cross-validated risk of every T_k for every repeat.

    ``fold_trees`` are fitted trees (:class:`cartjit.engine.tree.Tree`) or the arrays of
    :func:`cartjit.engine.fit.fit_fold` (:class:`cartjit.engine.predict.FoldTree`), in (repeat,
    fold) order. ``full_alpha_seq`` is α_1..α_K of the full tree; ``priors`` and
    ``class_totals`` its π and N_j (classification). Returns ``(cv_risk, cv_se)``,
    each of shape (n_repeats, K). Fold trees are scored at the midpoints α'_k, or at ``points``
    (one increasing row per fold tree, in its units) when given. ``transpose_cost``
    scores a class-j case labelled i with C(j|i) instead of C(i|j), as rpart 4.1.19
    does (docs/maths.md §9). The work is :func:`fold_scoring`'s, one fold tree a task.
    """
    score, result = fold_scoring(problem, settings, plan, full_alpha_seq, priors=priors,
                                 class_totals=class_totals, points=points,
                                 transpose_cost=transpose_cost)
    if problem.X.size < FOLD_THREADS_MIN_VALUES:
        n_threads = 1
    _run_tasks(lambda i: score(i, fold_trees[i]), list(range(len(fold_trees))), n_threads)
    return result()


def fold_scoring(problem, settings, plan, full_alpha_seq, *, priors=None, class_totals=None,
                 points=None, transpose_cost=False):
    """:func:`score_fold_trees` in pieces: ``(score, result)``. ``score(i, tree)`` drops
    the held-out cases of task i (repeat i // V, fold i % V) down its fold tree and
    keeps their sums (tasks may run on any threads, in any order); ``result()``, once
    every task is scored, adds them up in task order and returns ``(cv_risk, cv_se)``.
    """
    alpha_prime = midpoints(np.asarray(full_alpha_seq, dtype=np.float64))
    # Losses are summed (and squared) in the kernels' units, see cartjit.engine.scaling.
    problem, settings, scale = normalise(problem, settings, uniform=False)
    if class_totals is not None:
        class_totals = class_totals / scale.weight
    w_total = float(problem.X.shape[0] if problem.unit_weights else problem.w.sum())
    if problem.is_classification:
        class_scale = np.divide(priors * w_total, class_totals,
                                out=np.zeros_like(priors), where=class_totals > 0)
        cost = np.ascontiguousarray(settings.cost.T if transpose_cost else settings.cost,
                                    dtype=np.float64)
    else:
        class_scale = np.empty(0)
        cost = np.zeros((1, 1))
    n_rep = plan.folds.shape[0]
    n_tasks = n_rep * plan.n_folds
    # every fold's held-out rows in increasing order: one stable sort per repeat (a radix
    # sort of 16-bit fold ids on many cases)
    held = []
    for r in range(n_rep):
        ids = plan.folds[r]
        if ids.shape[0] > HELD_RADIX_MIN_CASES and plan.n_folds <= np.iinfo(np.int16).max:
            ids = ids.astype(np.int16)
        order = np.argsort(ids, kind="stable").astype(np.int64, copy=False)
        ends = np.cumsum(np.bincount(plan.folds[r], minlength=plan.n_folds))
        held.extend(np.split(order, ends[:-1]))
    sums = np.zeros((n_tasks, alpha_prime.shape[0]))
    squares = np.zeros((n_tasks, alpha_prime.shape[0]))

    def score(i, t):
        rows, out_sum, out_sq = held[i], sums[i], squares[i]
        if isinstance(t, FoldTree):  # cartjit.engine.fit.fit_fold's arrays, ȳ(t) in user units
            arrays = t if problem.is_classification else t._replace(value=t.value / scale.y)
        else:
            arrays = fold_tree_arrays(t, settings.use_surrogate,
                                      None if problem.is_classification
                                      else t.value / scale.y)
        heldout_losses(arrays,
                       HeldOut(problem.X, rows, problem.y_class, problem.y_reg, problem.w,
                               problem.unit_weights),
                       LossTable(class_scale, cost,
                                 alpha_prime if points is None else points[i],
                                 out_sum, out_sq))

    def result():
        K = alpha_prime.shape[0]
        cv_risk = np.zeros((n_rep, K))
        cv_sq = np.zeros((n_rep, K))
        for i in range(n_tasks):  # fixed order: deterministic
            r = i // plan.n_folds
            cv_risk[r] += sums[i]
            cv_sq[r] += squares[i]
        var = np.maximum(cv_sq - cv_risk * cv_risk / w_total, 0.0)
        # R^CV does not depend on the weights' unit; the SE counts weights as cases, so
        # weights × c divide it by sqrt(c) (rpart's xstd) whatever the kernels' units.
        cls = problem.is_classification
        return (scale.to_loss_units(cv_risk / w_total, cls),
                scale.to_loss_units(np.sqrt(var) / w_total / np.sqrt(scale.weight), cls))

    return score, result


def select_index(cv_risk, cv_se, selection):
    """Index k of the chosen subtree: "min", "1se", or a number m for the m-SE rule.

    k increases as trees get smaller, so ties go to the largest k.
    """
    if isinstance(selection, str):
        if selection == "min":
            m = None
        elif selection == "1se":
            m = 1.0
        else:
            raise ValueError(f"selection must be 'min', '1se' or a number m >= 0 (m-SE rule), "
                             f"got {selection!r}")
    elif isinstance(selection, (bool, np.bool_)) or not isinstance(selection, (int, float, np.number)):
        raise TypeError(f"selection must be 'min', '1se' or a number m >= 0, got {selection!r}")
    else:
        m = float(selection)
        if not np.isfinite(m) or m < 0:
            raise ValueError(f"selection as an m-SE rule needs a finite m >= 0, got {selection!r}")
    best = float(np.min(cv_risk))
    k_min = int(np.flatnonzero(cv_risk <= best + SELECTION_TIE_RTOL * abs(best))[-1])
    if m is None:
        return k_min
    bound = cv_risk[k_min] + m * cv_se[k_min]
    return int(np.flatnonzero(cv_risk <= bound + SELECTION_TIE_RTOL * abs(bound))[-1])



# --------------------------------------------------------------------------- test sample


def _sums(tree_arrays, X, rows, y_class, y_reg, w, unit, class_scale, cost, points):
    """Σ w l and Σ w l² over ``rows`` for every α'_k (one descent per case)."""
    out_sum = np.zeros(points.shape[0])
    out_sq = np.zeros(points.shape[0])
    heldout_losses(tree_arrays, HeldOut(X, rows, y_class, y_reg, w, unit),
                   LossTable(class_scale, cost, points, out_sum, out_sq))
    return out_sum, out_sq


def _mean_and_se(s, sq, total):
    """A weighted mean of losses and its standard error, weights counted as cases."""
    return s / total, np.sqrt(np.maximum(sq - s * s / total, 0.0)) / total


def sample_risk(tree, use_surrogate, alphas, X, y, w, *, priors=None, cost=None):
    """Breiman's test-sample estimate: ``(R^ts, SE)`` of T_1..T_K, arrays of shape (K,)
    (Breiman et al. 1984, §3.4 and §11.2; §8.5 for regression).

    A second sample L_2, not used to grow T_max, goes down T_max once per case and is
    scored for every T_k at once (the held-out descent of the folds, at the midpoints
    α'_k, which lie inside the interval of T_k). With N_ij the (weighted) number of
    class-j cases of L_2 that T_k labels i and N_j = Σ_i N_ij:

    * given ``priors`` π: R^ts(T_k) = Σ_j π(j) Σ_i C(i|j) N_ij / N_j and
      SE = sqrt(Σ_j (π(j) / N_j)² (Σ_i C(i|j)² N_ij - (Σ_i C(i|j) N_ij)² / N_j)), the
      class-by-class variance of §11.2 with the N_j held fixed (every class with
      π(j) > 0 needs a case of positive weight);
    * ``priors`` None (estimated from L_2, π(j) = N_j / N): R^ts is the mean cost
      Σ w l / W of L_2's cases and SE = sqrt(Σ w l² - (Σ w l)² / W) / W, the SE of a
      mean (the binomial sqrt(R (1 - R) / N) with 0-1 cost and unit weights);
    * regression (``cost`` None): the same mean and SE over the squared errors.

    Weights count as cases in the SE, as in the cross-validation. ``tree`` is T_max
    with its per-node α, ``alphas`` its sequence α_1..α_K; ``X`` the test cases in the
    kernels' encoding (float64, NaN missing); ``y`` int32 class indices (``cost``
    J × J, ``cost[j, i]`` = C(i|j)) or float64 responses; ``w`` float64 weights, or
    None for unit weights.
    """
    points = midpoints(np.asarray(alphas, dtype=np.float64))
    n = X.shape[0]
    unit = w is None
    w_arr = np.empty(0) if unit else w
    total = float(n if unit else w.sum())
    if cost is None:  # regression
        arrays = fold_tree_arrays(tree, use_surrogate, tree.value)
        s, sq = _sums(arrays, X, np.arange(n, dtype=np.int64), np.empty(0, np.int32), y,
                      w_arr, unit, np.empty(0), np.zeros((1, 1)), points)
        return _mean_and_se(s, sq, total)
    arrays = fold_tree_arrays(tree, use_surrogate)
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    ones = np.ones(cost.shape[0])
    y_reg = np.empty(0)
    if priors is None:
        s, sq = _sums(arrays, X, np.arange(n, dtype=np.int64), y, y_reg, w_arr, unit, ones,
                      cost, points)
        return _mean_and_se(s, sq, total)
    risk = np.zeros(points.shape[0])
    var = np.zeros(points.shape[0])
    for j in np.flatnonzero(np.asarray(priors) > 0):
        rows = np.flatnonzero(y == j).astype(np.int64)
        n_j = float(rows.shape[0] if unit else w[rows].sum())
        s, sq = _sums(arrays, X, rows, y, y_reg, w_arr, unit, ones, cost, points)
        risk += priors[j] * s / n_j
        var += (priors[j] / n_j) ** 2 * np.maximum(sq - s * s / n_j, 0.0)
    return risk, np.sqrt(var)
