"""What the step tables share: :class:`StepTable`, the check of the estimator, and the
learning sample as the fit saw it, sent down the tree to a node as the fit sent it."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd


__all__ = ["StepTable", "TIE_ULPS"]

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
        from .. import _prepare as P

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
    from ..engine.fit import split_factor

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
