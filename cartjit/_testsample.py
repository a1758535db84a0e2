"""Breiman's test-sample estimate R^ts(T_k) of every tree of the pruning sequence, with its
standard error (Breiman et al. 1984, §3.4 and §11.2; §8.5 for regression).

A second sample L_2, not used to grow T_max, is dropped down every T_k of the
weakest-link sequence at once (one descent per case through the per-node collapse α,
:func:`cartjit._predict.heldout_losses`, scored at the midpoints α'_k, which lie inside
the interval of T_k). With N_ij the (weighted) number of class-j cases of L_2 that T_k
labels i, and N_j = Σ_i N_ij:

* given priors π (``priors`` given or ``"equal"``, or set by ``class_weight``):

      R^ts(T_k) = Σ_j π(j) R_j,    R_j = Σ_i C(i|j) N_ij / N_j,

      SE = sqrt( Σ_j (π(j) / N_j)² (Σ_i C(i|j)² N_ij - (Σ_i C(i|j) N_ij)² / N_j) ),

  the class-by-class binomial (multinomial) variance of §11.2, N_j held fixed; every
  class with π(j) > 0 needs a case in L_2;
* priors estimated from the data (``"empirical"``): π(j) = N_j / N is taken from L_2
  itself, so R^ts is the mean cost Σ_n w_n C(d(x_n)|j_n) / W of L_2's cases and its SE
  the one of a mean of W independent costs, sqrt(Σ w l² - (Σ w l)² / W) / W (with 0-1
  cost the binomial sqrt(R^ts (1 - R^ts) / N));
* regression: R^ts is the (weighted) mean squared error of L_2 and the SE that of a mean
  of the squared errors, the same formula with l = (y - ȳ(t))².

Weights count as cases in the SE, as in the cross-validation's SE (docs/maths.md §5).
"""
from __future__ import annotations

import numpy as np

from ._cv import fold_tree_arrays
from ._predict import HeldOut, LossTable, heldout_losses
from ._pruning import midpoints

__all__ = ["sample_risk"]


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
    """``(R^ts, SE)`` of T_1..T_K, arrays of shape (K,), as the module docstring says.

    ``tree`` is T_max with its per-node α, ``alphas`` its sequence α_1..α_K; ``X`` the
    test cases in the kernels' encoding (float64, NaN missing); ``y`` int32 class
    indices (``cost`` given, J × J, ``cost[j, i]`` = C(i|j)) or float64 responses
    (``cost`` None); ``w`` float64 weights, or None for unit weights. ``priors``: π for
    the stratified estimate; None estimates them from the test sample.
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
