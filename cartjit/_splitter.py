"""Best split of one node on one feature: a single scan of the node's presorted cases.

The builder keeps, for every feature m, the node's cases in increasing order of x_m as a
segment of packed 64-bit *keys*: ``key = rank << 32 | case``, where ``rank`` is the dense
rank of the case's value of x_m among all learning cases (equal values, equal rank) and
``case`` its row in X. Scanning a segment from left to right moves one case at a time
from t_R to t_L; a boundary between positions i and i + 1 is a candidate threshold
exactly when their ranks differ, i.e. between two consecutive distinct values (SPEC §2).

At each candidate both children must hold at least ``min_leaf`` cases; the proxy P(s) of
:mod:`cartjit._criteria` is compared with the best so far of this feature, and replaces
it only when larger by more than the tie tolerance, so that the lowest threshold wins a
tie. The result is returned as Δi together with the split position ``pos`` (the left
child is the segment's first ``pos - start`` cases) and ``-inf`` when no candidate exists.
"""
from __future__ import annotations

import numpy as np

from ._config import jit
from ._criteria import classification_proxy

__all__ = ["CASE_MASK", "RANK_SHIFT", "threshold_between"]

RANK_SHIFT = 32
CASE_MASK = (1 << 32) - 1


@jit
def threshold_between(a, b):
    """Midpoint of consecutive distinct values a < b, never rounded up to b (SPEC §2)."""
    c = a / 2.0 + b / 2.0
    if c >= b or not np.isfinite(c):
        c = a
    return c


@jit
def best_split_classification(keys, start, end, y, w, unit_weights, total, factor,
                              criterion, q_total, offset, tol, min_leaf, left):
    """Scan segment ``keys[start:end]`` for the best split of a classification node.

    ``total`` are the node's weighted class counts N_j(t), ``factor`` the c_j of
    :mod:`cartjit._criteria`, ``q_total`` = Q(t), ``offset`` = a(t) and ``tol`` the tie
    tolerance on Δi; ``left`` is scratch space of length J. Returns (Δi, pos).
    """
    n_classes = total.shape[0]
    for j in range(n_classes):
        left[j] = 0.0
    n_node = end - start
    best_proxy = -np.inf
    best_pos = -1
    tol_proxy = tol * q_total
    rank = keys[start] >> RANK_SHIFT
    n_left = 0
    for i in range(start, end - 1):
        case = keys[i] & CASE_MASK
        if unit_weights:
            left[y[case]] += 1.0
        else:
            left[y[case]] += w[case]
        n_left += 1
        next_rank = keys[i + 1] >> RANK_SHIFT
        if next_rank == rank:
            continue
        rank = next_rank
        if n_left < min_leaf:
            continue
        if n_node - n_left < min_leaf:
            break
        proxy = classification_proxy(left, total, factor, criterion, q_total)
        if proxy > best_proxy + tol_proxy:
            best_proxy = proxy
            best_pos = i + 1
    if best_pos < 0:
        return -np.inf, -1
    return offset + best_proxy / q_total, best_pos


@jit
def best_split_regression(keys, start, end, y, w, unit_weights, mean, w_total, s_total,
                          tol, min_leaf):
    """Scan ``keys[start:end]`` for the best variance-reducing split (SPEC §3).

    Sums are taken of z = y - ``mean`` (the node mean), which keeps the proxy free of
    cancellation; ``w_total`` = W(t) and ``s_total`` = Σ w z over the node (zero up to
    rounding). Returns (Δi, pos).
    """
    n_node = end - start
    best_proxy = -np.inf
    best_pos = -1
    tol_proxy = tol * w_total
    rank = keys[start] >> RANK_SHIFT
    n_left = 0
    w_left = 0.0
    s_left = 0.0
    for i in range(start, end - 1):
        case = keys[i] & CASE_MASK
        if unit_weights:
            w_left += 1.0
            s_left += y[case] - mean
        else:
            w_left += w[case]
            s_left += w[case] * (y[case] - mean)
        n_left += 1
        next_rank = keys[i + 1] >> RANK_SHIFT
        if next_rank == rank:
            continue
        rank = next_rank
        if n_left < min_leaf:
            continue
        if n_node - n_left < min_leaf:
            break
        w_right = w_total - w_left
        s_right = s_total - s_left
        if w_left <= 0.0 or w_right <= 0.0:
            continue
        proxy = s_left * s_left / w_left + s_right * s_right / w_right
        if proxy > best_proxy + tol_proxy:
            best_proxy = proxy
            best_pos = i + 1
    if best_pos < 0:
        return -np.inf, -1
    return (best_proxy - s_total * s_total / w_total) / w_total, best_pos
