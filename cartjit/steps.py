"""CART's steps as tables: what the kernels compute, shown one number at a time.

A fitted tree stores the outcome of every step (the chosen split of each node, the α at
which each node is pruned, the cross-validated risk of each subtree); these functions
lay out the computations behind them, as a course does by hand:

* :func:`split_candidates`: every candidate split of one node, with the counts on each
  side, the children's impurities and Δi (docs/maths.md §2, §3, §7, §8), marking the
  split the search chooses and the exact ties;
* :func:`multiway_gains`: the information gain of each feature split into all of its
  values at once (ID3's gain, which CART's binary splits are compared with);
* :func:`pruning_steps`: the weakest-link loop (§4): g_k(t) of every internal node of
  every T_k, the weakest links, α_{k+1} and the leaves of T_{k+1};
* :func:`cv_steps`: the cross-validation (§5): for every α'_k the pooled table N_ij of
  the held-out cases (true class j, predicted class i), R^CV(j) by class, R^CV and its
  SE, per fold if asked; the squared errors for a regression tree.

These are teaching views written in NumPy, not the kernels: they recompute each number
from the data and the fitted tree, in the engine's order of operations, so that their
chosen split, Δi and α agree with the fitted tree (tests/teaching/ checks them on random
trees). The tables are :class:`StepTable` DataFrames, printed with a caption that says
what the rows are. Pictures of the same steps are in :mod:`cartjit.plotting_steps`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from .engine.pruning import ALPHA_ATOL, ALPHA_RTOL, midpoints
from .engine.tree import LEAF

__all__ = ["StepTable", "split_candidates", "multiway_gains", "pruning_steps", "cv_steps",
           "CVSteps", "TIE_ULPS"]

#: Two candidates whose goodness differs by at most this many ulps of i(t) are tied
#: (docs/maths.md §2; the engine's ``TIE_ULPS``).
TIE_ULPS = 16.0
_EPS = float(np.finfo(np.float64).eps)


class StepTable(pd.DataFrame):
    """A DataFrame with a caption, printed above the table (``print(table)``).

    ``caption`` says what the rows are (the node, its impurity, the chosen split, ...);
    the numbers are shown with ``display.precision`` 4 and every column, and held in
    full. Any DataFrame operation returns a StepTable carrying the caption.
    """

    _metadata = ["caption"]

    @property
    def _constructor(self):
        return StepTable

    def __repr__(self):
        with pd.option_context("display.max_columns", None, "display.width", 160,
                               "display.precision", 4, "display.max_rows", 200):
            body = super().__repr__()
        caption = getattr(self, "caption", None)
        return f"{caption}\n{body}" if caption else body

    __str__ = __repr__

    def _repr_html_(self):  # notebooks: the caption above the HTML table
        html = super()._repr_html_()
        caption = getattr(self, "caption", None)
        return f"<p>{caption}</p>{html}" if caption else html


def _table(columns, caption, index=None):
    out = StepTable(columns, index=index)
    out.caption = caption
    return out


# --------------------------------------------------------------------------- the data

def _fitted(estimator, caller):
    """``estimator``, checked to be a fitted cartjit tree estimator."""
    tree = getattr(estimator, "tree_max_", None)
    if tree is None or not hasattr(estimator, "_is_classifier"):
        raise TypeError(f"{caller} needs a fitted CARTClassifier, CARTRegressor or a CV "
                        f"variant, got {type(estimator).__name__}"
                        + ("" if tree is not None or not hasattr(estimator, "_is_classifier")
                           else " that is not fitted (call fit first)"))
    return tree


class _Data:
    """The learning sample as the fit saw it: encoded X (level codes for nominal
    features, NaN for missing), y (class indices or responses) and positive weights,
    the rows without a target or with weight 0 dropped."""

    def __init__(self, estimator, X, y, sample_weight, caller):
        from . import _prepare as P

        with warnings.catch_warnings():  # the fit already said these
            warnings.simplefilter("ignore")
            prep = P.prepare(estimator, X, y, sample_weight)
        problem = prep.problem
        self.X = problem.X
        n = self.X.shape[0]
        self.w = np.ones(n) if problem.unit_weights else np.asarray(problem.w, float)
        self.unit = bool(problem.unit_weights)
        self.is_class = bool(estimator._is_classifier)
        self.n_classes = int(estimator.n_classes_) if self.is_class else 0
        self.n_levels = (problem.n_levels if problem.n_levels.shape[0]
                         else np.zeros(self.X.shape[1], dtype=np.int64))
        mismatch = self.X.shape[1] != estimator.n_features_in_
        if not mismatch:
            for a, b in zip(prep.encoding.categories, estimator.categories_):
                if (a is None) != (b is None) or (a is not None and (
                        len(a) != len(b) or not np.array_equal(np.asarray(a, dtype=object),
                                                               np.asarray(b, dtype=object)))):
                    mismatch = True
        if self.is_class:
            self.y = np.asarray(problem.y_class, dtype=np.int64)
            mismatch = mismatch or not np.array_equal(prep.classes, estimator.classes_)
            if not mismatch:
                totals = np.bincount(self.y, weights=self.w, minlength=estimator.n_classes_)
                mismatch = not np.allclose(totals, estimator.class_weight_totals_,
                                           rtol=1e-12, atol=0)
        else:
            self.y = np.asarray(problem.y_reg, dtype=np.float64)
            tree = estimator.tree_max_
            mismatch = mismatch or not (
                n == int(tree.n_node_samples[0])
                and math.isclose(self.w.sum(), float(tree.weighted_n_node_samples[0]),
                                 rel_tol=1e-12))
        if mismatch:
            raise ValueError(
                f"{caller}: X, y and sample_weight must be the learning sample the "
                f"estimator was fitted on (their features, classes or totals differ from "
                f"the fit's)")


def _split_factor(estimator):
    """c_j of the split search (docs/maths.md §2): p(j | t) ∝ c_j N_j(t)."""
    from .engine.fit import split_factor

    return split_factor(estimator.priors_, estimator.class_weight_totals_,
                        estimator.cost_, estimator._split_cost_default)


def _in_set(level_sets, row, side, codes):
    """Whether each level code of ``codes`` (int64, -1 for none) is in set ``side``
    (0 left, 1 right) of ``level_sets[row]``."""
    ok = codes >= 0
    c = np.where(ok, codes, 0)
    words = level_sets[row, side][c // 64]
    return ok & (((words >> (c % 64).astype(np.uint64)) & np.uint64(1)) == 1)


def _codes(x):
    return np.where(np.isnan(x), -1, np.nan_to_num(x, nan=-1.0)).astype(np.int64)


def _goes(tree, t, f, threshold, level_row, x, low_left=1):
    """(present, left) of the cases with values ``x`` at a split (or surrogate) on
    feature ``f``: present when the split can route the value (not missing; a level
    in one of the sets)."""
    if level_row >= 0:
        codes = _codes(x)
        left = _in_set(tree.level_sets, level_row, 0, codes)
        right = _in_set(tree.level_sets, level_row, 1, codes)
        return left | right, left
    present = ~np.isnan(x)
    left = np.zeros(x.shape[0], dtype=bool)
    left[present] = x[present] <= threshold
    if not low_left:
        left = np.where(present, ~left, False)
    return present, left


def _sides(estimator, tree, t, X, w):
    """The side of each case of node t in the fit (0 left, 1 right, -1 stays in t):
    the split, then the surrogates in rank order, then the majority of the weight
    sent by the split (docs/maths.md §8, ``use_surrogate``)."""
    f = int(tree.feature[t])
    present, left = _goes(tree, t, f, tree.threshold[t], int(tree.level_row[t]), X[:, f])
    side = np.where(present, np.where(left, 0, 1), -1)
    use = int(getattr(estimator, "_use_surrogate", 2))
    if use >= 1:
        start = int(tree.surrogate_start[t])
        for s in range(start, start + int(tree.n_surrogates[t])):
            todo = side < 0
            if not todo.any():
                break
            g = int(tree.surrogate_feature[s])
            ok, lft = _goes(tree, t, g, tree.surrogate_threshold[s],
                            int(tree.surrogate_level_row[s]), X[:, g],
                            int(tree.surrogate_low_left[s]))
            go = todo & ok
            side[go] = np.where(lft[go], 0, 1)
    rpart_no_default = (getattr(estimator, "compat", "breiman") == "rpart"
                        and int(getattr(estimator, "max_surrogate_", 0)) == 0)
    if use == 2 and not rpart_no_default and (side < 0).any():
        w_left = w[present & left].sum()
        w_right = w[present & ~left].sum()
        if w_left != w_right:
            side[side < 0] = 0 if w_left > w_right else 1
    return side


def _node_cases(estimator, tree, node, data, caller):
    """Indices of the learning cases in ``node`` of ``tree``, checked against the
    node's stored counts."""
    path = []
    t = node
    while t > 0:
        path.append(t)
        t = int(tree.parent[t])
    idx = np.arange(data.X.shape[0])
    for child in reversed(path):
        parent = int(tree.parent[child])
        side = _sides(estimator, tree, parent, data.X[idx], data.w[idx])
        idx = idx[side == (0 if child == tree.left[parent] else 1)]
    ok = idx.shape[0] == int(tree.n_node_samples[node])
    if ok and data.is_class:
        counts = np.bincount(data.y[idx], weights=data.w[idx],
                             minlength=tree.value.shape[1])
        ok = np.allclose(counts, tree.value[node], rtol=1e-9, atol=1e-9 * counts.sum())
    elif ok:
        ok = math.isclose(data.w[idx].sum(), float(tree.weighted_n_node_samples[node]),
                          rel_tol=1e-9)
    if not ok:
        raise ValueError(
            f"{caller}: the cases given do not reproduce node {node}'s counts "
            f"({idx.shape[0]} cases for the fit's {int(tree.n_node_samples[node])}); "
            f"X, y and sample_weight must be the learning sample of the fit")
    return idx


# --------------------------------------------------------------------------- impurity

def _class_impurity(q, criterion):
    """i(t) of each row of prior-weighted counts q (rows: nodes, columns: classes);
    twoing reports Gini (docs/maths.md §2)."""
    total = q.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(total > 0, q / np.where(total > 0, total, 1.0), 0.0)
        if criterion == "entropy":
            logs = np.where(p > 0, np.log2(np.where(p > 0, p, 1.0)), 0.0)
            return 0.0 - (p * logs).sum(axis=-1) + 0.0  # no -0.0
    return 1.0 - (p * p).sum(axis=-1)


def _class_delta(q_left, q_right, criterion):
    """(i_L, i_R, p_L i_L + p_R i_R, Δi) of candidate rows from their children's
    prior-weighted counts (docs/maths.md §2; twoing: the twoing value)."""
    q_l = q_left.sum(axis=1)
    q_r = q_right.sum(axis=1)
    q = q_l + q_r
    i_l = _class_impurity(q_left, criterion)
    i_r = _class_impurity(q_right, criterion)
    i_t = _class_impurity(q_left + q_right, criterion)
    p_l = q_l / q
    p_r = q_r / q
    weighted = p_l * i_l + p_r * i_r
    if criterion == "twoing":
        diff = np.abs(q_left / q_l[:, None] - q_right / q_r[:, None]).sum(axis=1)
        delta = p_l * p_r / 4.0 * diff * diff
    else:
        delta = i_t - weighted
    return i_l, i_r, weighted, delta


def _reg_delta(w_left, s_left, ss_left, w_right, s_right, ss_right):
    """(Var_L, Var_R, weighted variance, Δi) of candidate rows from the children's
    weights W, centred sums S = Σ w (y - ȳ) and sums of squares Σ w (y - ȳ)²
    (docs/maths.md §3): Δi = (S_L²/W_L + S_R²/W_R - S²/W) / W."""
    w = w_left + w_right
    s = s_left + s_right
    var_l = (ss_left - s_left * s_left / w_left) / w_left
    var_r = (ss_right - s_right * s_right / w_right) / w_right
    weighted = (w_left * var_l + w_right * var_r) / w
    delta = (s_left * s_left / w_left + s_right * s_right / w_right - s * s / w) / w
    return var_l, var_r, weighted, delta


def _threshold_between(a, b):
    """The midpoint of docs/maths.md §2, never rounded up to b."""
    c = a / 2.0 + b / 2.0
    return np.where((c >= b) | ~np.isfinite(c), a, c)


# --------------------------------------------------------------------------- candidates

def _sums(data, idx, group, n_groups, y_center):
    """Per group (a value or a level of the feature): the number of cases and either
    the weighted class counts (classification) or W, Σ w z, Σ w z² with z = y - ȳ."""
    n = np.bincount(group, minlength=n_groups).astype(np.int64)
    w = data.w[idx]
    if data.is_class:
        J = int(data.n_classes)
        counts = np.zeros((n_groups, J))
        np.add.at(counts, (group, data.y[idx]), w)
        return n, counts
    z = data.y[idx] - y_center
    stats = np.zeros((n_groups, 3))
    np.add.at(stats[:, 0], group, w)
    np.add.at(stats[:, 1], group, w * z)
    np.add.at(stats[:, 2], group, w * z * z)
    return n, stats


def _evaluate(data, n_left, n_right, left, right, criterion, factor):
    """The candidate rows' columns from the two sides' statistics."""
    if data.is_class:
        i_l, i_r, weighted, delta = _class_delta(left * factor, right * factor, criterion)
    else:
        i_l, i_r, weighted, delta = _reg_delta(left[:, 0], left[:, 1], left[:, 2],
                                               right[:, 0], right[:, 1], right[:, 2])
    return i_l, i_r, weighted, delta


def _level_names(estimator, f, present_codes):
    cats = estimator.categories_[f]
    return [str(cats[c]) if cats is not None else str(c) for c in present_codes]


def _set_text(names):
    return "{" + ", ".join(names) + "}"


def _ordered_candidates(data, idx, x, criterion, factor, y_center):
    """Every midpoint of the present values of an ordered feature, lowest first."""
    values, group = np.unique(x, return_inverse=True)
    m = values.shape[0]
    if m < 2:
        return None
    n, stats = _sums(data, idx, group, m, y_center)
    n_left = np.cumsum(n)[:-1]
    n_right = np.cumsum(n[::-1])[::-1][1:]
    left = np.cumsum(stats, axis=0)[:-1]
    right = np.cumsum(stats[::-1], axis=0)[::-1][1:]  # suffix sums
    thr = _threshold_between(values[:-1], values[1:])
    return dict(threshold=thr, n_left=n_left, n_right=n_right, left=left, right=right,
                order=np.arange(m - 1), key=np.arange(m - 1),
                left_text=[f"<= {t:.6g}" for t in thr],
                right_text=[f"> {t:.6g}" for t in thr], searched=np.ones(m - 1, bool))


def _subset_masks(n_lv, order=None):
    """Splits of ``n_lv`` present levels as boolean masks over them (the side of level
    0, which the left child receives), with their canonical keys Σ_{b∈S} 2^b:
    the L - 1 prefixes of ``order``, or every one of the 2^(L-1) - 1 subsets in the
    Gray-code order of the engine's exhaustive search."""
    if order is not None:
        masks = []
        for k in range(1, n_lv):
            first = np.zeros(n_lv, dtype=bool)
            first[order[:k]] = True
            masks.append(first if first[0] else ~first)
        return masks
    full = (1 << (n_lv - 1)) - 1
    masks = []
    for i in range(1 << (n_lv - 1)):
        g = i ^ (i >> 1)
        if g == full:
            continue
        mask = np.zeros(n_lv, dtype=bool)
        mask[0] = True
        for b in range(1, n_lv):
            mask[b] = (g >> (b - 1)) & 1
        masks.append(mask)
    return masks


def _level_order(data, n, stats):
    """The engine's order of the present levels for the ordered scan: by p(class 1 |
    level) compared as cross products (two classes), or by the centred mean of y;
    equal keys keep code order."""
    import functools

    n_lv = n.shape[0]
    if data.is_class:
        def cmp(a, b):
            lo = stats[b, 1] * stats[a, 0]  # b before a when N1(b) N0(a) < N1(a) N0(b)
            hi = stats[a, 1] * stats[b, 0]
            if lo < hi:
                return 1
            if hi < lo:
                return -1
            return (a > b) - (a < b)
        return np.array(sorted(range(n_lv), key=functools.cmp_to_key(cmp)), dtype=np.int64)
    score = stats[:, 1] / stats[:, 0]
    return np.argsort(score, kind="stable")


def _subset_candidates(estimator, data, idx, x, f, criterion, factor, y_center,
                       all_subsets, max_levels):
    """The subset splits of a nominal feature that the engine's search considers (the
    L - 1 splits of the ordering for two classes and for regression; every subset for
    more classes), or every subset with ``all_subsets``."""
    codes = _codes(x)
    present_codes, group = np.unique(codes, return_inverse=True)
    n_lv = present_codes.shape[0]
    if n_lv < 2:
        return None
    n, stats = _sums(data, idx, group, n_lv, y_center)
    exhaustive = data.is_class and data.n_classes > 2
    if exhaustive and n_lv > estimator.max_categories_exhaustive:
        raise ValueError(
            f"feature {f} has {n_lv} levels at this node, more than "
            f"max_categories_exhaustive={estimator.max_categories_exhaustive}: the engine "
            "then scans the L - 1 splits of a principal-component ordering (a heuristic, "
            "docs/maths.md §7), which this table does not reproduce; leave the feature "
            "out with features=")
    searched_order = None if exhaustive else _level_order(data, n, stats)
    if all_subsets or exhaustive:
        if n_lv > max_levels:
            raise ValueError(
                f"feature {f} has {n_lv} levels at this node: listing its 2^(L-1) - 1 = "
                f"{(1 << (n_lv - 1)) - 1} subset splits needs max_levels >= {n_lv} "
                f"(max_levels={max_levels})")
        masks = _subset_masks(n_lv)
        if searched_order is None:
            searched = np.ones(len(masks), dtype=bool)
        else:
            scanned = {tuple(m) for m in _subset_masks(n_lv, searched_order)}
            searched = np.array([tuple(m) in scanned for m in masks], dtype=bool)
    else:
        masks = _subset_masks(n_lv, searched_order)
        searched = np.ones(len(masks), dtype=bool)
    masks = np.array(masks, dtype=bool)
    n_left = masks.astype(np.int64) @ n
    n_right = n.sum() - n_left
    left = masks.astype(np.float64) @ stats
    right = (~masks).astype(np.float64) @ stats
    keys = np.array([sum(1 << b for b in np.flatnonzero(m)) for m in masks], dtype=object)
    names = _level_names(estimator, f, present_codes)
    return dict(threshold=np.full(len(masks), np.nan), n_left=n_left, n_right=n_right,
                left=left, right=right, order=np.arange(len(masks)), key=keys,
                left_text=[_set_text([names[b] for b in np.flatnonzero(m)]) for m in masks],
                right_text=[_set_text([names[b] for b in np.flatnonzero(~m)])
                            for m in masks],
                searched=searched)


def _search_best(delta, key, allowed, tol):
    """The engine's scan over one feature's candidates in their visiting order: a
    candidate replaces the best when its Δi is larger by more than ``tol``, or within
    ``tol`` and canonically first (smaller key). Returns the row or -1."""
    best, best_row = -np.inf, -1
    for r in range(delta.shape[0]):
        if not allowed[r]:
            continue
        d = delta[r]
        if d > best + tol or (best_row >= 0 and d >= best - tol and key[r] < key[best_row]):
            best, best_row = d, r
    return best_row


def _feature_names(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return [f"x{j}" for j in range(estimator.n_features_in_)]
    return [str(s) for s in names]


def _feature_list(estimator, features):
    names = _feature_names(estimator)
    if features is None:
        return list(range(len(names)))
    if isinstance(features, (str, int, np.integer)):
        features = [features]
    out = []
    for f in features:
        if isinstance(f, str):
            if f not in names:
                raise ValueError(f"features: {f!r} is not a feature of the fit "
                                 f"(features: {names})")
            out.append(names.index(f))
        elif isinstance(f, (int, np.integer)) and not isinstance(f, bool) \
                and 0 <= f < len(names):
            out.append(int(f))
        else:
            raise ValueError(f"features must hold feature names or indices in "
                             f"[0, {len(names)}), got {f!r}")
    return sorted(set(out))


def _node_id(tree, node, caller):
    if isinstance(node, bool) or not isinstance(node, (int, np.integer)):
        raise TypeError(f"{caller}: node must be an int (a node id), got {node!r}")
    if not 0 <= node < tree.n_nodes:
        raise ValueError(f"{caller}: node must be a node id of tree_max_ in "
                         f"[0, {tree.n_nodes}), got {node!r}")
    return int(node)


def split_candidates(estimator, X, y, *, node=0, sample_weight=None, features=None,
                     all_subsets=False, max_levels=12):
    """Every candidate split of one node of a fitted tree, with the numbers behind Δi.

    The cases of ``node`` are found by sending the learning sample down ``tree_max_``
    as the fit sent it (splits, surrogates, majority: docs/maths.md §8), checked against
    the node's stored counts. For each feature, the candidates are those of the
    engine's search (docs/maths.md §2, §7): for an ordered feature every midpoint of two
    consecutive distinct values among the node's cases; for a nominal feature the
    subset splits, written as the set S of levels on the side of the lowest level code
    present (S goes to the left child) — the L - 1 splits of the levels ordered by
    p(class 1 | level) (two classes) or by their mean of y (regression), which by the
    ordering theorem hold the best one, or all 2^(L-1) - 1 of them for more classes.
    With missing values each feature's candidates use the cases that have it, and
    features are compared by Δi times the share of the node present (§8).

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or a CV variant
    X, y, sample_weight : the learning sample of the fit (the same rows; rows without
        a target or with weight 0 take no part, as in the fit).
    node : int, default 0
        A node id of ``tree_max_`` (the root is 0; equal to the ids of ``tree_`` and of
        :meth:`apply` when the estimator was not pruned).
    features : feature names or indices, optional
        The features whose candidates to list (default all).
    all_subsets : bool, default False
        For a nominal feature of a two-class or regression tree, list every one of the
        2^(L-1) - 1 subsets, not only the L - 1 of the ordering; the column
        ``searched`` says which ones the search scans (the ordering theorem: the best
        of all is among them, when ``min_samples_leaf`` allows every subset).
    max_levels : int, default 12
        The most levels present for which every subset is listed.

    Returns
    -------
    StepTable
        One row per candidate, by feature then threshold (or subset in the order the
        search visits them): ``feature``, ``threshold`` (NaN for a subset split),
        ``left`` and ``right`` (the condition or the set of levels of each side),
        ``n_left``, ``n_right`` (cases), the weighted class counts on each side
        (``L[class]``, ``R[class]``) or, for regression, ``w_left``, ``w_right`` and the
        means ``mean_left``, ``mean_right``; ``i_left``, ``i_right`` (i(t_L), i(t_R):
        Gini, entropy in bits, or the variance), ``weighted`` (p_L i(t_L) + p_R
        i(t_R)), ``delta_i`` (Δi = i(t) - weighted, the information gain in bits for
        entropy, the twoing value for twoing), ``allowed`` (each side holds
        ``min_samples_leaf`` cases), ``searched`` (with ``all_subsets``), and when
        some case of the node misses a listed feature ``n_missing``, ``share``
        (Q(P_f)/Q(t), the part of the node present) and ``goodness`` (Δi · share, what
        features are compared by; ``tree_max_.improvement`` of the chosen split);
        ``chosen`` marks the split of the node (none at a leaf) and ``tied`` the other
        candidates whose goodness is within 16 ulps of i(t) of the chosen one's
        (docs/maths.md §2: ties go to the lowest feature, then the lowest threshold or
        the canonical subset). The caption gives the node, its counts and i(t).
        Probabilities use the split-search priors (altered by the costs, §2).
    """
    caller = "split_candidates"
    tree = _fitted(estimator, caller)
    node = _node_id(tree, node, caller)
    if not isinstance(all_subsets, (bool, np.bool_)):
        raise TypeError(f"all_subsets must be True or False, got {all_subsets!r}")
    if isinstance(max_levels, bool) or not isinstance(max_levels, (int, np.integer)) \
            or not 2 <= max_levels <= 20:
        raise ValueError(f"max_levels must be an int in [2, 20], got {max_levels!r}")
    feats = _feature_list(estimator, features)
    data = _Data(estimator, X, y, sample_weight, caller)
    idx = _node_cases(estimator, tree, node, data, caller)
    names = _feature_names(estimator)
    criterion = estimator.criterion
    if data.is_class:
        factor = _split_factor(estimator)
        counts = np.bincount(data.y[idx], weights=data.w[idx], minlength=data.n_classes)
        q_node = float((factor * counts).sum())
        i_node = float(_class_impurity((factor * counts)[None, :], criterion)[0])
    else:
        factor = None
        w_node = data.w[idx].sum()
        mean_node = (data.w[idx] * data.y[idx]).sum() / w_node
        z = data.y[idx] - mean_node
        i_node = float((data.w[idx] * z * z).sum() / w_node)
    tol_node = TIE_ULPS * _EPS * i_node
    min_leaf = int(estimator.min_samples_leaf)
    blocks = []
    best_by_feature = []
    any_missing = False
    for f in feats:
        x_all = data.X[idx, f]
        present = ~np.isnan(x_all)
        sub = idx[present]
        x = x_all[present]
        if data.is_class:
            c_p = np.bincount(data.y[sub], weights=data.w[sub], minlength=data.n_classes)
            q_p = float((factor * c_p).sum())
            i_p = float(_class_impurity((factor * c_p)[None, :], criterion)[0])
            share = q_p / q_node if q_node > 0 else 0.0
            center = None
        else:
            w_p = data.w[sub].sum()
            center = (data.w[sub] * data.y[sub]).sum() / w_p if w_p > 0 else 0.0
            zz = data.y[sub] - center
            i_p = float((data.w[sub] * zz * zz).sum() / w_p) if w_p > 0 else 0.0
            share = w_p / w_node
        n_missing = int(np.count_nonzero(~present))
        any_missing |= n_missing > 0
        if sub.shape[0] < 2:
            continue
        if data.n_levels[f] > 0:
            cand = _subset_candidates(estimator, data, sub, x, f, criterion, factor, center,
                                      all_subsets, max_levels)
        else:
            cand = _ordered_candidates(data, sub, x, criterion, factor, center)
        if cand is None:
            continue
        i_l, i_r, weighted, delta = _evaluate(data, cand["n_left"], cand["n_right"],
                                              cand["left"], cand["right"], criterion,
                                              factor)
        allowed = (cand["n_left"] >= min_leaf) & (cand["n_right"] >= min_leaf)
        searchable = allowed & cand["searched"]
        row = _search_best(delta, cand["key"], searchable, TIE_ULPS * _EPS * i_p)
        goodness = delta * share
        best_by_feature.append((f, goodness[row] if row >= 0 else -np.inf,
                                len(blocks), row))
        block = {"feature": [names[f]] * delta.shape[0], "threshold": cand["threshold"],
                 "left": cand["left_text"], "right": cand["right_text"],
                 "n_left": cand["n_left"], "n_right": cand["n_right"]}
        if data.is_class:
            for j, c in enumerate(estimator.classes_):
                block[f"L[{c}]"] = cand["left"][:, j]
            for j, c in enumerate(estimator.classes_):
                block[f"R[{c}]"] = cand["right"][:, j]
        else:
            block["w_left"] = cand["left"][:, 0]
            block["w_right"] = cand["right"][:, 0]
            block["mean_left"] = center + cand["left"][:, 1] / cand["left"][:, 0]
            block["mean_right"] = center + cand["right"][:, 1] / cand["right"][:, 0]
        block.update(i_left=i_l, i_right=i_r, weighted=weighted, delta_i=delta,
                     allowed=allowed, searched=cand["searched"],
                     n_missing=np.full(delta.shape[0], n_missing),
                     share=np.full(delta.shape[0], share), goodness=goodness)
        blocks.append(block)
    # across features (feature order): a later feature wins by more than the tolerance
    best, chosen_block, chosen_row = -np.inf, -1, -1
    for f, g, b, r in best_by_feature:
        if r >= 0 and g > best + tol_node:
            best, chosen_block, chosen_row = g, b, r
    is_split = tree.left[node] != LEAF
    if not is_split or not best > tol_node:
        chosen_block = -1
    frames = []
    for b, block in enumerate(blocks):
        m = len(block["delta_i"])
        chosen = np.zeros(m, dtype=bool)
        if b == chosen_block:
            chosen[chosen_row] = True
        block["chosen"] = chosen
        usable = block["allowed"] & block["searched"]
        block["tied"] = (usable & ~chosen & (chosen_block >= 0)
                         & (np.abs(block["goodness"] - best) <= tol_node))
        frames.append(pd.DataFrame(block))
    columns = (["feature", "threshold", "left", "right", "n_left", "n_right"]
               + ([f"L[{c}]" for c in estimator.classes_]
                  + [f"R[{c}]" for c in estimator.classes_] if data.is_class
                  else ["w_left", "w_right", "mean_left", "mean_right"])
               + ["i_left", "i_right", "weighted", "delta_i", "allowed", "searched",
                  "n_missing", "share", "goodness", "chosen", "tied"])
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {c: [] for c in columns})
    out = out[columns]
    drop = []
    if not (all_subsets and any(data.n_levels[f] > 0 for f in feats)):
        drop.append("searched")
    if not any_missing:
        drop += ["n_missing", "share", "goodness"]
    if data.is_class and data.unit:
        for c in out.columns:
            if c.startswith(("L[", "R[")):
                out[c] = out[c].round().astype(np.int64)
    if not data.is_class and data.unit:
        drop += ["w_left", "w_right"]
    out = out.drop(columns=drop)
    unit = {"entropy": " bits", "gini": "", "twoing": " (Gini)"}.get(criterion, "")
    if data.is_class:
        counts_text = ", ".join(f"{c}: {v:g}" for c, v in zip(estimator.classes_, counts))
        head = (f"node {node}: {idx.shape[0]} cases ({counts_text}), "
                f"i(t) = {i_node:.6g}{unit} ({criterion})")
    else:
        head = (f"node {node}: {idx.shape[0]} cases, mean {mean_node:.6g}, "
                f"i(t) = Var(y; t) = {i_node:.6g}")
    if chosen_block >= 0:
        r = out.index[out["chosen"]][0]
        what = "goodness" if any_missing else "delta_i"
        sep = " in " if np.isnan(out.at[r, "threshold"]) else " "
        head += (f"; chosen: {out.at[r, 'feature']}{sep}{out.at[r, 'left']} "
                 f"({what} {out.at[r, what]:.6g})")
    elif not is_split:
        head += "; a leaf of tree_max_ (no split chosen)"
    result = _table(out, head)
    return result
