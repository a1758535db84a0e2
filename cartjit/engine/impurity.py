"""Impurity functions of docs/maths.md §2–3, computed from class counts or centred sums.

Criteria are selected by integer codes so that one compiled kernel serves all of them:

=========  =====================================================================
``GINI``    φ(p) = 1 - Σ_j p_j²
``ENTROPY`` φ(p) = -Σ_j p_j log2 p_j, with 0 log 0 = 0
``TWOING``  Breiman's two-superclass rule: Δ = p_L p_R / 4 · (Σ_j |p(j|t_L) - p(j|t_R)|)²;
            the node impurity reported for twoing trees is the Gini index
``SQUARED_ERROR``  regression: i(t) = weighted variance of y in t
=========  =====================================================================

Classification quantities are computed from *prior-weighted* counts
q_j(t) = c_j N_j(t), where N_j(t) is the weighted count of class j in node t and
c_j = π'(j) / N_j folds the (altered, docs/maths.md §2) prior into the count, so that
p(j|t) = q_j(t) / Q(t) with Q(t) = Σ_j q_j(t), and p(t_L)/p(t) = Q(t_L)/Q(t).

The split search does not evaluate Δi directly at every candidate. It maximises a
*proxy* P(s) with Δi(s, t) = a(t) + P(s) / Q(t) for a constant a(t) of the node:

* Gini:    P = Σ_j q_jL² / Q_L + Σ_j q_jR² / Q_R,  a = i(t) - 1
* entropy: P = -(Q_L i(t_L) + Q_R i(t_R)),          a = i(t)
* twoing:  P = Q(t) Δ (the criterion itself),       a = 0
* squared error, with z = y - ȳ(t), S = Σ w z, W = Σ w:
           P = S_L² / W_L + S_R² / W_R,             a = -S(t)² / W(t)²  (scale W)

so comparing proxies with a tolerance of ``tol · Q(t)`` is comparing Δi with ``tol``.
"""
from __future__ import annotations

import numpy as np

from .speed import jit

__all__ = ["GINI", "ENTROPY", "TWOING", "SQUARED_ERROR", "CLASSIFICATION_CRITERIA",
           "REGRESSION_CRITERIA", "TIE_ULPS", "xlogx_table"]

GINI = 0
ENTROPY = 1
TWOING = 2
SQUARED_ERROR = 3

CLASSIFICATION_CRITERIA = {"gini": GINI, "entropy": ENTROPY, "twoing": TWOING}
REGRESSION_CRITERIA = {"squared_error": SQUARED_ERROR}

#: Two splits whose Δi differ by at most ``TIE_ULPS`` ulps of i(t) are tied
#: (docs/maths.md §2).
TIE_ULPS = 16.0
_EPS = np.finfo(np.float64).eps


@jit
def tie_tolerance(node_impurity):
    """Split search and choice, ties: the tolerance on Δi below which two candidate
    splits count as tied (docs/maths.md §2).

    Parameters
    ----------
    node_impurity : i(t).
    """
    return TIE_ULPS * _EPS * node_impurity


@jit
def impurity_from_counts(counts, factor, criterion):
    """Node statistics: i(t) = φ(p(1|t), …, p(J|t)) with p(j|t) ∝ factor_j · counts_j
    (twoing reports Gini).

    Parameters
    ----------
    counts : float64 (J,) weighted class counts N_j(t).
    factor : float64 (J,) c_j.
    criterion : GINI, ENTROPY or TWOING.
    """
    total = 0.0
    for j in range(counts.shape[0]):
        total += factor[j] * counts[j]
    if total <= 0.0:
        return 0.0
    acc = 0.0
    if criterion == ENTROPY:
        for j in range(counts.shape[0]):
            p = factor[j] * counts[j] / total
            if p > 0.0:
                acc -= p * np.log2(p)
        return acc
    for j in range(counts.shape[0]):
        p = factor[j] * counts[j] / total
        acc += p * p
    return 1.0 - acc


@jit
def xlogx(x):
    """Entropy terms: x log2 x with 0 log 0 = 0.

    Parameters
    ----------
    x : a non-negative number.
    """
    if x > 0.0:
        return x * np.log2(x)
    return 0.0


@jit
def xlogx_table(n):
    """Entropy with unit weights, the split search's table: k log2 k for k = 0..n
    (:func:`xlogx` of each integer count).

    Parameters
    ----------
    n : the largest count (the number of cases).
    """
    out = np.empty(n + 1)
    for k in range(n + 1):
        out[k] = xlogx(float(k))
    return out


@jit
def min_risk_labels(risks, p_sum, tol_ulps, cost_max):
    """Each node's least risk R(t) = min_i risks[t, i] and the lowest class i with
    risks[t, i] <= R(t) + tol_ulps * p_sum[t] * cost_max (0 when none is, as NumPy's
    argmax of no True), ``p_sum[t]`` the row's Σ_j p(j, t): the products in that order,
    as NumPy computes ``tol_ulps * p_sum * cost_max``. Returns ``(best, label)``, float64
    and int32."""
    m, n_classes = risks.shape
    best = np.empty(m, dtype=np.float64)
    label = np.zeros(m, dtype=np.int32)
    for t in range(m):
        b = risks[t, 0]
        for i in range(1, n_classes):
            r = risks[t, i]
            if r < b or r != r:  # a NaN carries through, as in NumPy's min
                b = r
        best[t] = b
        bound = b + tol_ulps * p_sum[t] * cost_max
        for i in range(n_classes):
            if risks[t, i] <= bound:
                label[t] = i
                break
    return best, label
