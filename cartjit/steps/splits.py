"""Every candidate split of a node (docs/maths.md §2, §3, §7, §8), and ID3's multiway
gains to compare them with."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..engine.tree import LEAF
from ._common import (TIE_ULPS, _EPS, _Data, _codes, _fitted, _node_cases, _split_factor,
                      _table)

__all__ = ["split_candidates", "multiway_gains"]


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
