"""Slow, obvious references for the forests (tests/ensemble/), from the trees alone.

Each function reads a fitted forest only through its single trees
(``est.estimators_[k]``, fitted :class:`cartjit.CARTClassifier`/``CARTRegressor``
views), its in-bag counts (``est.inbag_counts(k)``) and, for the permutations, the
engine's documented permutation of a tree's OOB cases; everything else is a plain
Python loop over trees and cases. Sums are taken in tree order, as the compiled passes
take them, so that equal inputs give equal bits.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from cartjit.engine import forest as F


def tree_values(tree_est, X, classification):
    """What tree ``tree_est`` adds to the forest for each row: p(j | t) or ȳ(t)."""
    if classification:
        return tree_est.predict_proba(X)
    return tree_est.predict(X)[:, None]


def slow_sums(est, X, classification):
    """Σ_k value of tree k at each row, added in tree order."""
    acc = None
    for tree in est.estimators_:
        v = tree_values(tree, X, classification)
        acc = v.copy() if acc is None else acc + v
    return acc


def slow_oob(est, X, classification):
    """(average over each case's OOB trees, number of them), case by case."""
    n = X.shape[0]
    counts = est.inbag_counts()
    values = [tree_values(t, X, classification) for t in est.estimators_]
    k = values[0].shape[1]
    out = np.full((n, k), np.nan)
    n_oob = np.zeros(n, dtype=np.int64)
    for i in range(n):
        acc = np.zeros(k)
        for b, v in enumerate(values):
            if counts[b, i] == 0:
                acc = acc + v[i]
                n_oob[i] += 1
        if n_oob[i]:
            out[i] = acc / n_oob[i]
    return out, n_oob


def class_error(est, y_idx, wrong, w):
    """The error of scored cases (docs/forests.md): with empirical priors the weighted
    share of wrong predictions (0-1 cost), with equal priors the mean over the classes
    present of each class's share."""
    if isinstance(est.priors, str) and est.priors == "equal":
        rates = [np.sum(w[y_idx == j] * wrong[y_idx == j]) / np.sum(w[y_idx == j])
                 for j in range(est.n_classes_) if np.any(y_idx == j)]
        return float(np.mean(rates))
    return float(np.sum(w * wrong) / np.sum(w))


def slow_permutation_importance(est, X, y, random_state=0):
    """Breiman's importance from the trees: per tree k, its error on its OOB cases,
    before and after feature j is permuted among them (the engine's permutation for the
    tree's seed), Δ_kj the increase; the mean over trees and randomForest's SE.
    Classification (0-1 cost): the tree predicts its class of largest p(j | t), and the
    error is :func:`class_error`; regression: the mean squared error."""
    classification = hasattr(est, "classes_")
    n, p = X.shape
    w = np.ones(n)
    if classification:
        y_idx = np.searchsorted(est.classes_, y)
    seeds = F.permutation_seeds(random_state, len(est.estimators_))

    def error(tree, rows, Xr):
        if classification:
            pred = np.argmax(tree.predict_proba(Xr), axis=1)
            return class_error(est, y_idx[rows], pred != y_idx[rows], w[rows])
        loss = (y[rows] - tree.predict(Xr)) ** 2
        return float(np.sum(w[rows] * loss) / np.sum(w[rows]))

    deltas = np.zeros((len(est.estimators_), p))
    for b, tree in enumerate(est.estimators_):
        rows = np.flatnonzero(est.inbag_counts(b) == 0)
        base = error(tree, rows, X[rows])
        for j in range(p):
            perm = F.permutation(seeds[b], j, rows.shape[0])
            Xp = X[rows].copy()
            Xp[:, j] = X[rows[perm], j]
            deltas[b, j] = error(tree, rows, Xp) - base
    raw = deltas.mean(axis=0)
    se = np.sqrt(np.maximum((deltas ** 2).mean(axis=0) - raw ** 2, 0) / deltas.shape[0])
    return deltas, raw, se


def categorical_frame(n=240, random_state=0):
    """A classification DataFrame with two string columns (5 and 4 levels), two numeric
    ones, and a label depending on both kinds."""
    rng = np.random.default_rng(random_state)
    a = rng.choice(list("abcde"), n)
    b = rng.choice(["u", "v", "w", "z"], n)
    x1 = rng.normal(size=n)
    x2 = rng.normal(size=n)
    score = np.isin(a, ["a", "c"]) * 1.5 + (b == "w") * 1.0 + x1
    y = np.where(score + 0.5 * rng.normal(size=n) > 1.0, "yes", "no").astype(object)
    y[np.argsort(x2)[:60]] = "maybe"
    X = pd.DataFrame({"a": a, "x1": x1, "b": b, "x2": x2})
    return X, y


def with_holes(X, fraction=0.1, random_state=0):
    """A float copy of X with ``fraction`` of its cells set to NaN."""
    rng = np.random.default_rng(random_state)
    X = np.array(X, dtype=np.float64, copy=True)
    X[rng.random(X.shape) < fraction] = np.nan
    return X


def slow_proximity(est, X, oob, Y=None):
    """Breiman's proximities pair by pair from each tree's own ``apply`` and the in-bag
    counts: the share of trees (for which both cases are out of bag, with ``oob``) in
    which the two cases end in the same node; 0 for a pair never out of bag together,
    1 on the diagonal (Y None)."""
    ends_x = np.stack([t.apply(X) for t in est.estimators_], axis=1)
    ends_y = ends_x if Y is None else np.stack([t.apply(Y) for t in est.estimators_],
                                               axis=1)
    out_of_bag = est.inbag_counts().T == 0  # (n, B)
    n, n_trees = ends_x.shape
    m = ends_y.shape[0]
    prox = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            if Y is None and i == j:
                prox[i, j] = 1.0
                continue
            same = trees = 0
            for b in range(n_trees):
                if oob and not (out_of_bag[i, b] and out_of_bag[j, b]):
                    continue
                trees += 1
                same += ends_x[i, b] == ends_y[j, b]
            prox[i, j] = same / trees if trees else 0.0
    return prox


def slow_outlier(prox, classes):
    """randomForest's outlier measure case by case: n / Σ_{k of its class} prox²,
    minus the class median, over the class MAD (1.4826 · median |· - median|)."""
    n = prox.shape[0]
    raw = np.array([n / sum(prox[i, k] ** 2 for k in range(n) if classes[k] == classes[i])
                    for i in range(n)])
    out = np.empty(n)
    for c in set(classes.tolist()):
        at = classes == c
        med = np.median(raw[at])
        mad = 1.4826 * np.median(np.abs(raw[at] - med))
        out[at] = (raw[at] - med) / mad
    return out
