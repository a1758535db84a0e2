"""Per-case cross-validated predictions (``cv_predictions_``) against R's ``xpred.rpart``
with the same fold vector (docs/rpart.md).

rpart is run with ``cp = 0, minsplit = 2, minbucket = 1, maxcompete = 0,
maxsurrogate = 0, xval = <fold ids>`` and ``xpred.rpart(fit, xval = <fold ids>, cp =
<points>)`` at +Inf for the first row of its CP table and at the geometric mean of
consecutive CPs for the others. On data where rpart's CP table is the exact sequence
(checked first), rpart's row r is cartjit's row K - 1 - r and its point is cartjit's
α'_k / R(root), so column r of rpart's matrix must equal column K - 1 - r of
``cv_predictions_`` (classes: rpart's class numbers are ``cv_predictions_ + 1``).

The one known difference is the side of a held-out value equal to a threshold of its
fold tree: cartjit sends x <= c left (docs/maths.md §2), rpart x < c. Every entry where
the two differ must be explained by it: the fold tree (refitted by cartjit on the
training part) pruned at the same α', descended with x < c, predicts what rpart
predicts, and the case's value equals a threshold on its path. On kyphosis with these
folds no entry differs at all.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from . import rpart_runner
from .test_rpart_cp import assert_exact_table
from .test_rpart_cv import GROW, fold_ids

pytestmark = pytest.mark.parity

CASES = [  # dataset, target, method, folds, most entries allowed to differ
    ("kyphosis", "Kyphosis", "class", "random:10:1", 0),
    ("iris", "Species", "class", "strat:10", 2),
    ("stackloss", "stack.loss", "anova", "random:5:2", 8),
]


@functools.lru_cache(maxsize=None)
def run_case(dataset, target, method, how):
    from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

    df = rpart_runner.r_dataset(dataset)
    features = [c for c in df.columns if c != target]
    X = df[features].to_numpy(dtype=np.float64)
    labels = df[target].to_numpy()
    cls = method == "class"
    y = np.unique(labels, return_inverse=True)[1] if cls else labels.astype(np.float64)
    folds = fold_ids(how, y)
    rp = rpart_runner.run_rpart(df, target, features, method, control=GROW,
                                xval_folds=folds, xpred=True)
    make = CARTClassifier if cls else CARTRegressor
    est = (CARTClassifierCV if cls else CARTRegressorCV)(
        cv=folds, cv_predictions=True).fit(X, labels if cls else y)
    return X, labels, folds, make, rp, est


def descend(tree, x, alpha, strict):
    """End node of x in T(alpha) of a flat tree, x < c (``strict``) or x <= c going left;
    also whether x met a threshold on the way."""
    t, on_threshold = 0, False
    while tree.left[t] >= 0 and alpha < tree.alpha[t]:
        v, c = x[tree.feature[t]], tree.threshold[t]
        on_threshold |= v == c
        t = int(tree.left[t]) if (v < c if strict else v <= c) else int(tree.right[t])
    return t, on_threshold


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_xpred(case):
    X, labels, folds, make, rp, est = run_case(*case[:4])
    cls = case[2] == "class"
    table, cp = est.cv_results_, rp["cptable"]
    K = len(table)
    assert_exact_table(cp, table)
    theirs = rp["xpred"]
    mine = est.cv_predictions_[:, ::-1] + (1 if cls else 0)
    assert theirs.shape == mine.shape == (X.shape[0], K)
    differ = np.argwhere(~np.isclose(theirs, mine, rtol=1e-12, atol=0))
    print(f"[{case[0]}] {K} rows, {X.shape[0]} cases: entries that differ "
          f"(case, rpart row): {differ.tolist()}")
    assert len(differ) <= case[4]
    points = table["alpha_prime"].to_numpy()[::-1]
    fold_trees = {}
    for i, r in differ:
        v = folds[i]
        if v not in fold_trees:
            train = folds != v
            fold_trees[v] = make().fit(X[train], labels[train] if cls else
                                       labels[train].astype(np.float64)).tree_max_
        tree = fold_trees[v]
        value = (lambda t: tree.label[t] + 1) if cls else (lambda t: tree.value[t, 0])
        node, met = descend(tree, X[i], points[r], strict=False)
        assert value(node) == mine[i, r]          # cartjit's own rule, by hand
        node, met = descend(tree, X[i], points[r], strict=True)
        assert met and value(node) == pytest.approx(theirs[i, r], rel=1e-12), (i, r)
