"""Batch prediction: drop many cases down a flat tree at once.

:func:`apply` returns the leaf reached by every row of X, rows in parallel, each
walking ``node = left[node] + (x > c)`` (using ``right == left + 1``). Measured here, this
plain per-row walk beat a block-of-rows sweep that advanced 64 rows one level at a time
(the sweep's bookkeeping cost more than the extra memory parallelism gained).

:func:`heldout_losses` scores a whole pruning sequence in one descent (SPEC §5, rpart's
``rundown``): a case that reaches node t is predicted by t in T(α) for every α at which
t is a leaf of T(α), i.e. α >= ``alpha[t]`` while all ancestors still have larger α.
It is serial (the cross-validation runs folds in parallel threads instead).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._config import jit, jit_parallel

__all__ = ["apply", "heldout_losses"]


@jit_parallel
def apply(feature, threshold, left, X):
    """Leaf id of every row of X (x_m <= c goes left; the right child is ``left + 1``).

    Rows run in parallel; each walks from the root while ``left`` is not -1, loading
    one threshold and one child id per level.
    """
    n = X.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in prange(n):
        node = 0
        child = left[0]
        while child >= 0:
            if X[i, feature[node]] > threshold[node]:
                child += 1
            node = child
            child = left[node]
        out[i] = node
    return out


@jit
def heldout_losses(feature, threshold, left, alpha, label, value, X, rows, y_class,
                   y_reg, w, class_scale, cost, alphas, out_sum, out_sq):
    """Add each held-out row's weighted loss under T(α) for every α in ``alphas``.

    One descent per row of ``X[rows]`` (rpart's ``rundown``): at each node t on the
    row's path, the α in [alpha[t], α of the previous node) have t as the row's leaf in
    T(α) (``alphas`` increasing). The loss is ``class_scale[y] · cost[y, label[t]]``
    for classification (``label`` non-empty) and ``(y - value[t, 0])²`` for regression.
    ``out_sum[k]`` receives Σ w·loss and ``out_sq[k]`` Σ w·loss² for α = ``alphas[k]``;
    both are accumulated through difference arrays, so a row costs O(depth), not O(K).
    """
    n_alpha = alphas.shape[0]
    d_sum = np.zeros(n_alpha + 1)
    d_sq = np.zeros(n_alpha + 1)
    is_class = label.shape[0] > 0
    for r in range(rows.shape[0]):
        i = rows[r]
        node = 0
        hi = n_alpha
        while True:
            lo = hi
            while lo > 0 and alphas[lo - 1] >= alpha[node]:
                lo -= 1
            if lo < hi:
                if is_class:
                    loss = class_scale[y_class[i]] * cost[y_class[i], label[node]]
                else:
                    e = y_reg[i] - value[node, 0]
                    loss = e * e
                d_sum[lo] += w[i] * loss
                d_sum[hi] -= w[i] * loss
                d_sq[lo] += w[i] * loss * loss
                d_sq[hi] -= w[i] * loss * loss
            hi = lo
            child = left[node]
            if hi == 0 or child < 0:
                break
            if X[i, feature[node]] > threshold[node]:
                child += 1
            node = child
    acc = 0.0
    acc2 = 0.0
    for k in range(n_alpha):
        acc += d_sum[k]
        acc2 += d_sq[k]
        out_sum[k] += acc
        out_sq[k] += acc2
