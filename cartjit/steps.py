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

    Parameters
    ----------
    data, index, columns, dtype, copy : see :class:`pandas.DataFrame`
        As for a DataFrame; ``caption`` is set after construction.
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
    """Level codes of a nominal column, -1 where missing."""
    return np.nan_to_num(x, nan=-1.0).astype(np.int64)


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


def _evaluate(data, left, right, criterion, factor):
    """(i_L, i_R, weighted, Δi) of the candidate rows from the two sides' statistics."""
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


def _ordered_candidates(data, idx, x, criterion, factor, y_center, levels=None):
    """Every midpoint of the present values of an ordered feature, lowest first;
    ``levels``: the level names of an ordinal feature (its values are level codes)."""
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
                left_text=([f"<= {t:.6g}" for t in thr] if levels is None
                           else [f"<= {levels[int(t)]}" for t in thr]),
                right_text=([f"> {t:.6g}" for t in thr] if levels is None
                            else [f"> {levels[int(t)]}" for t in thr]),
                searched=np.ones(m - 1, bool))


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
                       all_subsets, max_levels, name):
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
            f"feature {name!r} has {n_lv} levels at this node, more than "
            f"max_categories_exhaustive={estimator.max_categories_exhaustive}: the engine "
            "then scans the L - 1 splits of a principal-component ordering (a heuristic, "
            "docs/maths.md §7), which this table does not reproduce; leave the feature "
            "out with features=")
    searched_order = None if exhaustive else _level_order(data, n, stats)
    if all_subsets or exhaustive:
        if n_lv > max_levels:
            raise ValueError(
                f"feature {name!r} has {n_lv} levels at this node: listing its 2^(L-1) - 1 = "
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



def _feature_block(estimator, data, idx, f, name, node_total, search):
    """One feature's candidates at a node: ``(block, n_missing, best)``, ``block`` the
    table's columns (None when the feature offers no split) and ``best`` the row the
    search keeps (-1: none). ``node_total`` is Q(t) (W(t) for regression); ``search``
    holds (criterion, factor, min_samples_leaf, all_subsets, max_levels)."""
    criterion, factor, min_leaf, all_subsets, max_levels = search
    x_all = data.X[idx, f]
    present = ~np.isnan(x_all)
    sub = idx[present]
    x = x_all[present]
    n_missing = int(np.count_nonzero(~present))
    if sub.shape[0] < 2:
        return None, n_missing, -1
    w = data.w[sub]
    if data.is_class:  # the present cases' i(P_f) and share Q(P_f)/Q(t)
        q_p = factor * np.bincount(data.y[sub], weights=w, minlength=data.n_classes)
        i_p = float(_class_impurity(q_p[None, :], criterion)[0])
        share = float(q_p.sum()) / node_total if node_total > 0 else 0.0
        center = None
    else:
        w_p = w.sum()
        center = (w * data.y[sub]).sum() / w_p
        z = data.y[sub] - center
        i_p = float((w * z * z).sum() / w_p)
        share = w_p / node_total
    if data.n_levels[f] > 0:
        cand = _subset_candidates(estimator, data, sub, x, f, criterion, factor, center,
                                  all_subsets, max_levels, name)
    else:
        cats = estimator.categories_[f]
        cand = _ordered_candidates(data, sub, x, criterion, factor, center,
                                   None if cats is None else [str(c) for c in cats])
    if cand is None:
        return None, n_missing, -1
    i_l, i_r, weighted, delta = _evaluate(data, cand["left"], cand["right"], criterion,
                                          factor)
    allowed = (cand["n_left"] >= min_leaf) & (cand["n_right"] >= min_leaf)
    best = _search_best(delta, cand["key"], allowed & cand["searched"],
                        TIE_ULPS * _EPS * i_p)
    block = {"feature": [name] * delta.shape[0], "threshold": cand["threshold"],
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
                 share=np.full(delta.shape[0], share), goodness=delta * share)
    return block, n_missing, best


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
    estimator : CARTClassifier, CARTRegressor, CARTClassifierCV or CARTRegressorCV
        A fitted tree estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        The features of the learning sample of the fit (the same rows).
    y : array-like of shape (n_samples,)
        Its targets. Rows without a target take no part, as in the fit.
    node : int, default 0
        A node id of ``tree_max_`` (the root is 0; equal to the ids of ``tree_`` and of
        :meth:`apply` when the estimator was not pruned).
    sample_weight : array-like of shape (n_samples,), optional
        The case weights of the fit. Rows of weight 0 take no part, as in the fit.
    features : str, int or sequence of them, optional
        The features (names or indices) whose candidates to list; default all.
    all_subsets : bool, default False
        For a nominal feature of a two-class or regression tree, list every one of the
        2^(L-1) - 1 subsets, not only the L - 1 of the ordering; the column
        ``searched`` says which ones the search scans (the ordering theorem: the best
        of all is among them, when ``min_samples_leaf`` allows every subset).
    max_levels : int, default 12
        The most levels present at the node for which every subset is listed (at most
        20).

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
        w_node = float(data.w[idx].sum())
        mean_node = (data.w[idx] * data.y[idx]).sum() / w_node
        z = data.y[idx] - mean_node
        i_node = float((data.w[idx] * z * z).sum() / w_node)
    tol_node = TIE_ULPS * _EPS * i_node
    node_total = q_node if data.is_class else w_node  # Q(t), or W(t)
    search = (criterion, factor, int(estimator.min_samples_leaf), all_subsets, max_levels)
    blocks = []
    best_by_feature = []
    any_missing = False
    for f in feats:
        block, n_missing, row = _feature_block(estimator, data, idx, f, names[f],
                                               node_total, search)
        any_missing |= n_missing > 0
        if block is None:
            continue
        best_by_feature.append((block["goodness"][row] if row >= 0 else -np.inf,
                                len(blocks), row))
        blocks.append(block)
    # across features (feature order): a later feature wins by more than the tolerance
    best, chosen_block, chosen_row = -np.inf, -1, -1
    for g, b, r in best_by_feature:
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


# --------------------------------------------------------------------------- multiway gains

def multiway_gains(X, y, *, sample_weight=None, criterion="entropy"):
    """The impurity decrease of splitting the cases into one child per value of a feature.

    ID3's information gain with ``criterion="entropy"``, for comparison with CART's
    binary splits (:func:`split_candidates`). A feature with values v_1, …, v_m sends the cases into m children; its gain is
    i(t) - Σ_v (N(v)/N) i(t_v), with i the entropy in bits or the Gini index and the
    proportions weighted by ``sample_weight``. No fit is needed: this is a property of
    the data. A binary feature gives the same gain as its CART split; a feature of more
    values gives at least the gain of any of its binary splits.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_samples, n_features)
        The cases; every distinct value of a feature is a child (the cases missing the
        feature are left out for it).
    y : array-like of shape (n_samples,)
        The class labels.
    sample_weight : array-like of shape (n_samples,), optional
        Case weights (default 1).
    criterion : {"entropy", "gini"}, default "entropy"
        The impurity: entropy in bits, or the Gini index.

    Returns
    -------
    StepTable
        One row per feature: ``n_values``, ``i_parent`` (i(t) of the cases with the
        feature present), ``weighted`` (Σ_v (N(v)/N) i(t_v)) and ``gain``, sorted by
        decreasing gain (ties in feature order).
    """
    if criterion not in ("entropy", "gini"):
        raise ValueError(f"criterion must be 'entropy' or 'gini', got {criterion!r}")
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != frame.shape[0]:
        raise ValueError(f"y must be 1-d with one label per row of X ({frame.shape[0]}), "
                         f"got shape {labels.shape}")
    w = (np.ones(frame.shape[0]) if sample_weight is None
         else np.asarray(sample_weight, dtype=np.float64))
    if w.shape != (frame.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must hold one finite weight >= 0 per row of X")
    classes, codes = np.unique(labels, return_inverse=True)
    rows = []
    for col in frame.columns:
        values = frame[col]
        present = values.notna().to_numpy()
        keys, groups = np.unique(values[present].astype(str).to_numpy(), return_inverse=True)
        counts = np.zeros((keys.shape[0], classes.shape[0]))
        np.add.at(counts, (groups, codes[present]), w[present])
        parent = counts.sum(axis=0)
        i_parent = float(_class_impurity(parent[None, :], criterion)[0])
        sizes = counts.sum(axis=1)
        weighted = float((sizes / sizes.sum() * _class_impurity(counts, criterion)).sum())
        rows.append({"feature": str(col), "n_values": int(keys.shape[0]),
                     "i_parent": i_parent, "weighted": weighted,
                     "gain": i_parent - weighted})
    out = pd.DataFrame(rows).sort_values("gain", ascending=False, kind="stable")
    unit = " (bits)" if criterion == "entropy" else ""
    return _table(out.reset_index(drop=True),
                  f"multiway gain of each feature{unit}: i(t) - Σ_v (N(v)/N) i(t_v)")


# --------------------------------------------------------------------------- pruning

def _branches(tree, internal):
    """R(T_t) and |T~_t| of every node of the subtree whose internal nodes are
    ``internal``, summed bottom-up (children first), as the weakest-link loop sums."""
    n = tree.n_nodes
    branch = np.array(tree.risk, dtype=np.float64, copy=True)
    leaves = np.ones(n, dtype=np.float64)
    for t in range(n - 1, -1, -1):
        if internal[t]:
            l, r = tree.left[t], tree.right[t]
            branch[t] = branch[l] + branch[r]
            leaves[t] = leaves[l] + leaves[r]
    return branch, leaves


def _below(tree, t, internal):
    """The internal nodes of the branch T_t (t included) among ``internal``."""
    out, stack = [], [t]
    while stack:
        u = stack.pop()
        if internal[u]:
            out.append(u)
            stack += [int(tree.left[u]), int(tree.right[u])]
    return out


def _leaves_of(tree, internal):
    """The leaves of the subtree with these internal nodes, in id order."""
    present = np.zeros(tree.n_nodes, dtype=bool)
    present[0] = True
    for t in range(tree.n_nodes):
        if present[t] and internal[t]:
            present[tree.left[t]] = present[tree.right[t]] = True
    return tuple(int(t) for t in np.flatnonzero(present & ~internal))


def _weakest_link_replay(tree):
    """The weakest-link loop of docs/maths.md §4, one step at a time: a list of steps,
    each (k, internal mask of T_k, R(T_t), |T~_t|, g, weakest links, α_{k+1}), k = 0
    being T_max → T_1 when they differ; and the per-node α the loop stores."""
    n = tree.n_nodes
    risk = np.asarray(tree.risk, dtype=np.float64)
    atol = ALPHA_ATOL * abs(float(risk[0]))
    alpha = np.zeros(n)
    internal = tree.left != LEAF
    steps = []
    branch, leaves = _branches(tree, internal)
    # T_1: every split that does not lower the risk (top-down, within the tolerance)
    first = np.zeros(n, dtype=bool)
    for t in range(n):
        if internal[t] and (t == 0 or first[tree.parent[t]]):
            first[t] = not (risk[t] - branch[t] <= atol)
    dropped = internal & ~first
    if dropped.any():
        g = np.full(n, np.nan)
        g[internal] = (risk[internal] - branch[internal]) / (leaves[internal] - 1.0)
        tops = [t for t in np.flatnonzero(dropped)
                if t == 0 or not dropped[tree.parent[t]]]
        steps.append((0, internal.copy(), branch, leaves, g, tuple(int(t) for t in tops),
                       0.0))
    internal = first
    k = 1
    while internal.any():
        branch, leaves = _branches(tree, internal)
        g = np.full(n, np.nan)
        g[internal] = (risk[internal] - branch[internal]) / (leaves[internal] - 1.0)
        g_min = float(np.nanmin(g))
        bound = g_min + ALPHA_RTOL * g_min + atol
        weakest = [int(t) for t in np.flatnonzero(internal & (g <= bound))]
        # a weakest link inside another one's branch goes with it
        tops = [t for t in weakest if not any(
            a in weakest for a in _ancestors(tree, t))]
        steps.append((k, internal.copy(), branch, leaves, g, tuple(tops), g_min))
        nxt = internal.copy()
        for t in tops:
            for u in _below(tree, t, internal):
                alpha[u] = g_min
                nxt[u] = False
        internal = nxt
        k += 1
    return steps, alpha


def _ancestors(tree, t):
    out = []
    while t > 0:
        t = int(tree.parent[t])
        out.append(t)
    return out


def pruning_steps(estimator, *, by="node"):
    """The weakest-link pruning of ``tree_max_`` step by step (docs/maths.md §4).

    For each k, every internal node t of T_k with R(t), R(T_t), |T~_t| and
    g_k(t) = (R(t) - R(T_t)) / (|T~_t| - 1); the weakest links are the nodes of least
    g_k (within the loop's tolerance, 10⁻⁹ g + 10⁻¹² R(root)), α_{k+1} = min_t g_k(t),
    and T_{k+1} is T_k with the weakest links made leaves. When T_max holds splits that
    do not lower the risk, step k = 0 shows how T_1 = T(0) drops them (the nodes with
    R(t) = R(T_t), α_1 = 0). The numbers are those the fit's loop computes: the α of
    every node (``tree_max_.alpha``) is the α_{k+1} of the step that collapses it.

    Parameters
    ----------
    estimator : a fitted CARTClassifier, CARTRegressor or a CV variant, with
        ``compat="breiman"`` (rpart's one-pass complexities are not a weakest-link loop:
        docs/maths.md §9).
    by : {"node", "step"}, default "node"
        "node": one row per (k, internal node of T_k), indexed by (k, node), with
        ``risk_node`` (R(t)), ``risk_branch`` (R(T_t)), ``leaves_branch`` (|T~_t|), ``g``
        and ``weakest``. "step": one row per k with ``alpha`` (α_k), ``n_leaves`` and
        ``risk`` of T_k, ``weakest`` (the node ids collapsed), ``alpha_next``
        (α_{k+1}), ``n_leaves_next`` and ``leaves_next`` (the leaf ids of T_{k+1});
        k = K, the root alone, closes the table.

    Returns
    -------
    StepTable
        Node ids are those of ``tree_max_``.
    """
    tree = _fitted(estimator, "pruning_steps")
    if getattr(estimator, "compat", "breiman") == "rpart":
        raise ValueError("pruning_steps replays the exact weakest-link loop of "
                         "docs/maths.md §4; with compat='rpart' the sequence is rpart's "
                         "one-pass complexities (docs/maths.md §9), fit with "
                         "compat='breiman' to see the loop")
    if by not in ("node", "step"):
        raise ValueError(f"by must be 'node' or 'step', got {by!r}")
    steps, _ = _weakest_link_replay(tree)
    risk = np.asarray(tree.risk, dtype=np.float64)
    if by == "node":
        rows = []
        for k, internal, branch, leaves, g, tops, _a in steps:
            weak = set(tops)
            for t in np.flatnonzero(internal):
                rows.append({"k": k, "node": int(t), "risk_node": risk[t],
                             "risk_branch": branch[t], "leaves_branch": int(leaves[t]),
                             "g": g[t], "weakest": int(t) in weak})
        out = pd.DataFrame(rows).set_index(["k", "node"])
        return _table(out, "weakest-link pruning: g_k(t) = (R(t) - R(T_t)) / (|T~_t| - 1) "
                           "for every internal node t of T_k; the weakest links are "
                           "collapsed, α_{k+1} = min g_k(t)")
    rows = []
    for i, (k, internal, branch, leaves, g, tops, a_next) in enumerate(steps):
        nxt = internal.copy()
        for t in tops:
            for u in _below(tree, t, internal):
                nxt[u] = False
        alpha_k = 0.0 if k <= 1 else steps[i - 1][6]
        after = _leaves_of(tree, nxt)
        rows.append({"k": k, "alpha": alpha_k if k else np.nan,
                     "n_leaves": int(leaves[0]), "risk": branch[0], "weakest": tops,
                     "alpha_next": a_next, "n_leaves_next": len(after),
                     "leaves_next": after})
    last = steps[-1] if steps else None
    rows.append({"k": (last[0] + 1) if last else 1,
                 "alpha": last[6] if last else 0.0, "n_leaves": 1, "risk": risk[0],
                 "weakest": (), "alpha_next": np.nan, "n_leaves_next": np.nan,
                 "leaves_next": ()})
    out = pd.DataFrame(rows).set_index("k", drop=False)
    out["n_leaves_next"] = out["n_leaves_next"].astype("Int64")
    out.index.name = None
    return _table(out, "weakest-link pruning by step: T_k (α_k, |T~_k|, R(T_k)), its "
                       "weakest links and T_{k+1} (k = 0: T_max → T_1)")


# --------------------------------------------------------------------------- cross-validation

class CVSteps:
    """The numbers behind ``cv_results_`` (:func:`cv_steps`): two or three tables.

    Parameters
    ----------
    counts, risk : StepTable
        The tables described below.
    folds : StepTable, optional
        The per-fold table (``by_fold=True``).

    Attributes
    ----------
    counts : StepTable
        Classification: the N_ij tables, indexed by (k, [fold,] true class j), one
        column per predicted class i holding N_ij(k), the weighted count of held-out
        class-j cases that T^(v)(α'_k) labels i, and ``N_j`` (their row sum).
        Regression: per (k, [fold]) the number of held-out cases ``n``, their weight
        ``weight``, the weighted sum of squared errors ``sse`` and its mean ``mse``.
    risk : StepTable
        One row per k: ``alpha_prime``, ``n_leaves``, for classification ``R_cv[c]``
        (R^CV(j) = Σ_i C(i|j) N_ij(k) / N_j, the class's cross-validated error rate or
        cost), then ``cv_risk`` (R^CV) and ``cv_se`` (its SE), as in ``cv_results_``.
    """

    def __init__(self, counts, risk, folds=None):
        self.counts = counts
        self.risk = risk
        self.folds = folds

    def _tables(self):
        return [t for t in (self.risk, self.folds, self.counts) if t is not None]

    def __repr__(self):
        return "\n\n".join(repr(t) for t in self._tables())

    __str__ = __repr__

    def _repr_html_(self):
        return "".join(t._repr_html_() for t in self._tables())


def cv_steps(estimator, y, *, sample_weight=None, by_fold=False):
    """The cross-validation of a fitted CV estimator, step by step (docs/maths.md §5).

    For every T_k of the table, each held-out case of fold v is dropped down the fold
    tree pruned at α'_k, T^(v)(α'_k); over all folds, N_ij(k) is the weighted count of
    class-j cases labelled i, and

        R^CV(j) = Σ_i C(i|j) N_ij(k) / N_j,   R^CV(T_k) = Σ_j π(j) R^CV(j),

    with N_j the full sample's class totals; SE = √(Σ w l² - (Σ w l)² / W) / W over the
    per-case losses l = π(j) W / N_j · C(i|j). For regression, l is the squared
    held-out error and R^CV their weighted mean. These reproduce ``cv_risk`` and
    ``cv_se`` of ``cv_results_``.

    Parameters
    ----------
    estimator : CARTClassifierCV or CARTRegressorCV fitted with ``cv_predictions=True``
        (or ``"proba"``), which keeps every case's held-out prediction, and
        ``compat="breiman"`` (rpart's rules score at other points with another loss,
        docs/maths.md §9).
    y : array-like of shape (n_samples,)
        The targets of the fit (the same rows).
    sample_weight : array-like of shape (n_samples,), optional
        The case weights of the fit.
    by_fold : bool, default False
        Also split the tables by fold: ``counts`` is then indexed by (k, fold, j) (or
        (k, fold)), and ``folds`` gives each fold's share of R^CV.

    Returns
    -------
    CVSteps
        ``risk``, ``folds`` and ``counts``, printed one above the other.
    """
    caller = "cv_steps"
    _fitted(estimator, caller)
    if not hasattr(estimator, "folds_"):
        raise TypeError(f"{caller} needs a fitted CARTClassifierCV or CARTRegressorCV, "
                        f"got {type(estimator).__name__}")
    if getattr(estimator, "compat", "breiman") == "rpart":
        raise ValueError(f"{caller} shows the cross-validation of docs/maths.md §5; with "
                         "compat='rpart' the points and the loss are rpart's (§9)")
    pred = getattr(estimator, "cv_predictions_", None)
    if pred is None:
        raise ValueError(f"{caller} needs the held-out predictions: fit the estimator "
                         "with cv_predictions=True")
    if not isinstance(by_fold, (bool, np.bool_)):
        raise TypeError(f"by_fold must be True or False, got {by_fold!r}")
    folds = estimator.folds_[0]
    n = folds.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{caller}: y must be the fit's targets, one per row ({n}), got "
                         f"shape {y.shape}")
    if sample_weight is None:
        w = np.ones(n)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"{caller}: sample_weight must have one weight per row ({n}), "
                             f"got shape {w.shape}")
    part = folds >= 0
    table = estimator.cv_results_
    ks = table["k"].to_numpy()
    w_p, f_p, pred_p = w[part], folds[part], pred[part]
    W = w_p.sum()
    fold_ids = np.unique(f_p)
    if estimator._is_classifier:
        lookup = {c: i for i, c in enumerate(estimator.classes_.tolist())}
        try:
            yc = np.array([lookup[v] for v in y[part].tolist()], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"{caller}: y holds a label that is not a class of the fit: "
                             f"{exc.args[0]!r}") from None
        J = estimator.n_classes_
        totals = np.bincount(yc, weights=w_p, minlength=J)
        if not np.allclose(totals, estimator.class_weight_totals_, rtol=1e-12, atol=0):
            raise ValueError(f"{caller}: y and sample_weight must be those of the fit "
                             "(their class totals differ from the fit's)")
        priors, cost = estimator.priors_, estimator.cost_
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(totals > 0, priors * W / totals, 0.0)
    else:
        yr = np.asarray(y[part], dtype=np.float64)
        if not math.isclose(W, float(estimator.tree_max_.weighted_n_node_samples[0]),
                            rel_tol=1e-12):
            raise ValueError(f"{caller}: sample_weight must be that of the fit")
    count_rows, count_index, risk_rows, risk_index = [], [], [], []
    fold_rows, fold_index = [], []
    for col, k in enumerate(ks):
        p = pred_p[:, col]
        if estimator._is_classifier:
            loss = scale[yc] * cost[yc, p]
        else:
            loss = (yr - p) ** 2
        s1 = (w_p * loss).sum()
        s2 = (w_p * loss * loss).sum()
        row = {"alpha_prime": table["alpha_prime"].iloc[col],
               "n_leaves": int(table["n_leaves"].iloc[col])}
        groups = [(None, np.ones(p.shape[0], dtype=bool))]
        if by_fold:
            groups = [(int(v), f_p == v) for v in fold_ids]
        if estimator._is_classifier:
            N = np.zeros((J, J))
            np.add.at(N, (yc, p), w_p)
            with np.errstate(divide="ignore", invalid="ignore"):
                by_class = np.where(totals > 0, (N * cost).sum(axis=1) / totals, np.nan)
            for j, c in enumerate(estimator.classes_):
                row[f"R_cv[{c}]"] = by_class[j]
            for v, m in groups:
                Nv = np.zeros((J, J))
                np.add.at(Nv, (yc[m], p[m]), w_p[m])
                for j, c in enumerate(estimator.classes_):
                    count_rows.append(list(Nv[j]) + [Nv[j].sum()])
                    count_index.append((k, c) if v is None else (k, v, c))
        else:
            for v, m in groups:
                sse = (w_p[m] * loss[m]).sum()
                count_rows.append([int(m.sum()), w_p[m].sum(), sse, sse / w_p[m].sum()])
                count_index.append(k if v is None else (k, v))
        row["cv_risk"] = s1 / W
        row["cv_se"] = math.sqrt(max(s2 - s1 * s1 / W, 0.0)) / W
        risk_rows.append(row)
        risk_index.append(k)
        if by_fold:
            for v, m in groups:
                fold_rows.append({"alpha_prime": row["alpha_prime"],
                                  "n_leaves": row["n_leaves"], "n": int(m.sum()),
                                  "contribution": (w_p[m] * loss[m]).sum() / W,
                                  "fold_risk": (w_p[m] * loss[m]).sum() / w_p[m].sum()})
                fold_index.append((k, v))
    if estimator._is_classifier:
        names = ["k", "true"] if not by_fold else ["k", "fold", "true"]
        counts = pd.DataFrame(count_rows, columns=[str(c) for c in estimator.classes_]
                              + ["N_j"], index=pd.MultiIndex.from_tuples(count_index,
                                                                         names=names))
        if np.all(w == 1.0):
            counts = counts.round().astype(np.int64)
        what = ("N_ij(k): held-out cases of true class j (rows) labelled i (columns) by "
                "their fold's tree at α'_k")
    else:
        index = (pd.Index(count_index, name="k") if not by_fold
                 else pd.MultiIndex.from_tuples(count_index, names=["k", "fold"]))
        counts = pd.DataFrame(count_rows, columns=["n", "weight", "sse", "mse"],
                              index=index)
        what = "held-out squared errors of each T_k's fold trees at α'_k"
    risk = pd.DataFrame(risk_rows, index=pd.Index(risk_index, name="k"))
    per_fold = None
    if by_fold:
        per_fold = _table(pd.DataFrame(fold_rows, index=pd.MultiIndex.from_tuples(
            fold_index, names=["k", "fold"])),
            "each fold's share of R^CV (contribution: Σ w l / W over its held-out cases, "
            "adding up to R^CV) and its own mean loss (fold_risk)")
    return CVSteps(_table(counts, what + (", by fold" if by_fold else "")),
                   _table(risk, "R^CV(T_k) and its SE (docs/maths.md §5)"), per_fold)
