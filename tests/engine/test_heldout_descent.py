"""The held-out descent of the cross-validation (``_predict.heldout_losses``) against
plain references, on trees grown to purity on random data with tied values (many
subtrees, so many α'_k) and holes.

* where a node's range of α starts (the first k with ``alphas[k] >= alpha[t]``,
  found by bisection) against a scan of every k;
* the losses at increasing α against pruning the tree to T(α) and dropping the rows
  down it, one α at a time;
* the losses at α that are not in order (the descent then scans the α down the path)
  and at α with repeats and exact ties with node α, against a plain per-row rundown.
"""
from __future__ import annotations

import numpy as np
import pytest

from cartjit.engine.impurity import GINI, SQUARED_ERROR
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.predict import (FoldTree, HeldOut, LossTable, _first_at_least,
                              heldout_losses, routing_of)
from cartjit.engine.tree import LEAF, apply, subtree


def _first_by_scan(alphas, a):
    for k, v in enumerate(alphas):
        if v >= a:
            return k
    return len(alphas)


def test_first_at_least_equals_a_scan():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(0, 12))
        alphas = np.sort(rng.integers(0, 6, m).astype(np.float64))  # ties
        if m and rng.random() < 0.3:
            alphas[-1] = np.inf
        queries = np.r_[alphas, rng.integers(-1, 7, 5).astype(np.float64) / 2, np.nan,
                        np.inf, -np.inf]
        for a in queries:
            assert _first_at_least(alphas, a) == _first_by_scan(alphas, a), (alphas, a)


def _data(regression, seed, holes):
    rng = np.random.default_rng(seed)
    n = 400
    X = rng.integers(0, 8, (n, 4)).astype(np.float64)  # tied values
    X[:, 3] = rng.normal(size=n)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 8, n) > 10).astype(np.int32) + (X[:, 3] > 0.5)
    if regression:
        y = X[:, 0] - X[:, 2] + rng.normal(size=n)
    X[rng.random(X.shape) < holes] = np.nan
    w = rng.integers(1, 4, n).astype(np.float64)
    return np.ascontiguousarray(X), y, w, rng.random(n) < 0.7


def _fit(X, y, w, train, regression, use_surrogate):
    if regression:
        problem = Problem(np.ascontiguousarray(X[train]), np.empty(0, np.int32),
                          y[train].astype(np.float64), w[train], False, 0)
        settings = Settings(SQUARED_ERROR, -1, 2, 1, 0.0, None, None, None, True, 12, 3,
                            use_surrogate, 0, 0)
    else:
        problem = Problem(np.ascontiguousarray(X[train]), y[train].astype(np.int32),
                          np.empty(0), w[train], False, 3)
        settings = Settings(GINI, -1, 2, 1, 0.0, None, "empirical", 1.0 - np.eye(3), True,
                            12, 3, use_surrogate, 0, 0)
    return fit_tree(problem, settings, None).tree


def _losses(tree, X, y, w, rows, alphas, regression, use_surrogate):
    out_sum = np.zeros(alphas.shape[0])
    out_sq = np.zeros(alphas.shape[0])
    heldout_losses(
        FoldTree(tree.feature, tree.threshold, tree.left, tree.alpha,
                 np.empty(0, np.int32) if regression else tree.label, tree.value,
                 routing_of(tree, use_surrogate)),
        HeldOut(X, rows, np.empty(0, np.int32) if regression else y.astype(np.int32),
                y.astype(np.float64) if regression else np.empty(0), w, False),
        LossTable(np.ones(3), 1.0 - np.eye(3), alphas, out_sum, out_sq))
    return out_sum, out_sq


def _loss(tree, node, yi, regression):
    if regression:
        return (yi - tree.value[node, 0]) ** 2
    return float(tree.label[node] != yi)


def _paths(tree, X, rows, use_surrogate):
    """Each row's path, root to the node where it ends."""
    for e in apply(tree, X[rows], use_surrogate):
        path = [int(e)]
        while tree.parent[path[-1]] >= 0:
            path.append(int(tree.parent[path[-1]]))
        yield path[::-1]


def _rundown(tree, X, y, w, rows, alphas, regression, use_surrogate):
    """One row at a time: its path (root to the node where it ends), and for each α the
    first node of the path that T(α) does not split (alpha[t] <= α), or the end node."""
    out_sum = np.zeros(alphas.shape[0])
    out_sq = np.zeros(alphas.shape[0])
    for i, path in zip(rows, _paths(tree, X, rows, use_surrogate)):
        for k, a in enumerate(alphas):
            t = next((t for t in path if tree.alpha[t] <= a), path[-1])
            loss = _loss(tree, t, y[i], regression)
            out_sum[k] += w[i] * loss
            out_sq[k] += w[i] * loss * loss
    return out_sum, out_sq


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("use_surrogate", [0, 2])
def test_heldout_losses_equal_pruning_then_predicting(regression, use_surrogate):
    X, y, w, train = _data(regression, 1 + use_surrogate, 0.1)
    tree = _fit(X, y, w, train, regression, use_surrogate)
    seq = np.unique(tree.alpha)
    assert seq.shape[0] > 10, "the test needs many subtrees"
    alphas = np.append(np.sqrt(seq[:-1] * seq[1:]), np.inf)
    rows = np.flatnonzero(~train).astype(np.int64)
    end = apply(tree, X[rows], use_surrogate)
    if use_surrogate == 0:
        assert np.any(tree.left[end] != LEAF), "some held-out case must stop inside"
    got, _ = _losses(tree, X, y, w, rows, alphas, regression, use_surrogate)
    want = []
    for a in alphas:
        pruned = subtree(tree, tree.alpha > a)
        at = apply(pruned, X[rows], use_surrogate)
        want.append(sum(w[i] * _loss(pruned, t, y[i], regression) for i, t in zip(rows, at)))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _scan_rundown(tree, X, y, w, rows, alphas, regression, use_surrogate):
    """The rundown by positions, for α in any order: down the row's path, node t takes
    the positions from where a scan down from the previous node's first position stops
    (at the first α below alpha[t]) up to that first position; the node where the row
    ends takes every position left."""
    out_sum = np.zeros(alphas.shape[0])
    out_sq = np.zeros(alphas.shape[0])
    for i, path in zip(rows, _paths(tree, X, rows, use_surrogate)):
        hi = alphas.shape[0]
        for j, t in enumerate(path):
            lo = hi
            while lo > 0 and alphas[lo - 1] >= tree.alpha[t]:
                lo -= 1
            if j == len(path) - 1:
                lo = 0
            loss = _loss(tree, t, y[i], regression)
            out_sum[lo:hi] += w[i] * loss
            out_sq[lo:hi] += w[i] * loss * loss
            hi = lo
    return out_sum, out_sq


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("order", ["ties", "shuffled"])
def test_heldout_losses_equal_a_rundown(regression, order):
    """α with repeats and exactly equal to node α (the bisection's ties) against T(α),
    and α out of order (the descent then scans) against the rundown by positions."""
    X, y, w, train = _data(regression, 7, 0.05)
    tree = _fit(X, y, w, train, regression, 2)
    rng = np.random.default_rng(3)
    seq = np.unique(tree.alpha)
    alphas = np.sort(np.r_[0.0, rng.choice(seq, 15), seq[::4], 2 * seq[-1]])
    rows = np.flatnonzero(~train).astype(np.int64)
    if order == "shuffled":
        alphas = rng.permutation(alphas)
        want_sum, want_sq = _scan_rundown(tree, X, y, w, rows, alphas, regression, 2)
    else:
        want_sum, want_sq = _rundown(tree, X, y, w, rows, alphas, regression, 2)
        np.testing.assert_allclose(
            _scan_rundown(tree, X, y, w, rows, alphas, regression, 2)[0], want_sum,
            rtol=1e-12)
    got_sum, got_sq = _losses(tree, X, y, w, rows, alphas, regression, 2)
    np.testing.assert_allclose(got_sum, want_sum, rtol=1e-12)
    np.testing.assert_allclose(got_sq, want_sq, rtol=1e-12)
