"""Batch prediction: drop many cases down a flat tree at once.

:func:`apply` returns the leaf reached by every row of X. Rows are processed in blocks;
within a block all rows advance one level per sweep (``node = left[node] + (x > c)``,
using ``right == left + 1``), which keeps many independent memory loads in flight
instead of walking one row from root to leaf at a time. Blocks run in parallel.

:func:`apply_path` scores a whole pruning sequence in one descent (SPEC §5, rpart's
``rundown``): a case that reaches node t is predicted by t in T(α) for every α at which
t is a leaf of T(α), i.e. α >= ``alpha[t]`` while all ancestors still have larger α.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._config import jit_parallel

__all__ = ["apply", "apply_path", "BLOCK"]

BLOCK = 64


@jit_parallel
def apply(feature, threshold, left, X):
    """Leaf id of every row of X (x_m <= c goes left; right child is ``left + 1``)."""
    n = X.shape[0]
    out = np.zeros(n, dtype=np.int64)
    n_blocks = (n + BLOCK - 1) // BLOCK
    for b in prange(n_blocks):
        start = b * BLOCK
        end = min(n, start + BLOCK)
        active = True
        while active:
            active = False
            for i in range(start, end):
                node = out[i]
                child = left[node]
                if child >= 0:
                    if X[i, feature[node]] > threshold[node]:
                        child += 1
                    out[i] = child
                    active = True
    return out


@jit_parallel
def apply_path(feature, threshold, left, alpha, X, alphas):
    """Node predicting each row of X in T(α) for each α in the increasing ``alphas``.

    Returns an (n_rows, len(alphas)) int64 array. One descent per row: at each node t on
    the row's path, the entries for α in [alpha[t], α of the previous node on the path)
    are set to t; the descent stops at a leaf of T_max.
    """
    n = X.shape[0]
    n_alpha = alphas.shape[0]
    out = np.empty((n, n_alpha), dtype=np.int64)
    for i in prange(n):
        node = 0
        hi = n_alpha  # entries [hi, n_alpha) are already assigned
        while True:
            # entries with alphas[k] >= alpha[node] not yet assigned predict at node
            lo = hi
            while lo > 0 and alphas[lo - 1] >= alpha[node]:
                lo -= 1
            for k in range(lo, hi):
                out[i, k] = node
            hi = lo
            child = left[node]
            if child < 0 or hi == 0:
                break
            if X[i, feature[node]] > threshold[node]:
                child += 1
            node = child
        for k in range(hi):
            out[i, k] = node
    return out
