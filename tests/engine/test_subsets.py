"""The engine's subset splits (docs/maths.md §7), through the engine's own entry points.

The estimators' categorical input, the brute-force comparison with an exhaustive search
and the rpart parity have their own test modules; this one checks what the engine
promises about trees with subset splits: the stored level sets describe the partition
the grower made, prediction routes every code (absent and unseen levels included) as
documented, and pruning, cross-validation, threads, label packing and the SIMD switch
leave such trees intact.
"""
from __future__ import annotations

import numpy as np
import pytest

from cartjit.engine import grow as _builder
from cartjit.engine.impurity import ENTROPY, GINI, SQUARED_ERROR, TWOING
from cartjit.engine.cv import cross_validate
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.pruning import prune_tree
from cartjit.engine.tree import LEAF, apply, subtree, validate


def _problem(X, y, n_levels, *, n_classes=None, w=None):
    X = np.ascontiguousarray(X, dtype=np.float64)
    unit = w is None
    w = np.empty(0) if unit else np.asarray(w, dtype=np.float64)
    n_levels = np.asarray(n_levels, dtype=np.int64)
    if n_classes:
        return Problem(X, np.asarray(y, np.int32), np.empty(0), w, unit, n_classes, n_levels)
    return Problem(X, np.empty(0, np.int32), np.asarray(y, np.float64), w, unit, 0, n_levels)


def _settings(criterion=GINI, n_classes=2, *, priors="empirical", min_leaf=1,
              max_exhaustive=12, max_depth=-1):
    cost = None if criterion == SQUARED_ERROR else np.ones((n_classes, n_classes)) - np.eye(n_classes)
    return Settings(criterion, max_depth, 2, min_leaf, 0.0, None,
                    None if criterion == SQUARED_ERROR else priors, cost, True, max_exhaustive)


def _mixed_data(n=600, levels=9, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, n)
    z = rng.normal(size=n)
    u = rng.integers(0, 5, n)
    score = (x % 3) + (z > 0.3) + 0.5 * (u == 2) + rng.normal(scale=0.4, size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    X = np.column_stack([x, z, u]).astype(float)
    return X, y.astype(np.int32), [levels, 0, 5]


def _bits(row_sets, side):
    """Level codes of one side of a level-set row."""
    out = set()
    for wd, word in enumerate(row_sets[side]):
        for b in range(64):
            if int(word) >> b & 1:
                out.add(64 * wd + b)
    return out


def _walk(tree, x):
    """Slow reference of prediction: one row down the tree, as documented (these trees
    have no surrogates: a level a split cannot route goes with the majority, or stops
    at the node when its children hold equal numbers of cases)."""
    t = 0
    while tree.left[t] != LEAF:
        v = x[tree.feature[t]]
        if tree.level_row[t] < 0:
            right = v > tree.threshold[t]
        else:
            sets = tree.level_sets[tree.level_row[t]]
            code = int(v) if v >= 0 and v == int(v) else -1
            if code in _bits(sets, 0):
                right = False
            elif code in _bits(sets, 1):
                right = True
            elif tree.majority_left[t] == -1:
                return t
            else:
                right = not tree.majority_left[t]
        t = tree.left[t] + int(right)
    return t


def _node_cases(tree, X):
    """Cases reaching every node, by walking the learning sample down the tree."""
    members = {0: np.arange(X.shape[0])}
    for t in range(tree.n_nodes):
        if tree.left[t] == LEAF:
            continue
        idx = members[t]
        go_right = np.array([_walk_step(tree, t, X[i]) for i in idx], dtype=bool)
        members[tree.left[t]] = idx[~go_right]
        members[tree.right[t]] = idx[go_right]
    return members


def _walk_step(tree, t, x):
    v = x[tree.feature[t]]
    if tree.level_row[t] < 0:
        return v > tree.threshold[t]
    return int(v) in _bits(tree.level_sets[tree.level_row[t]], 1)


@pytest.mark.parametrize("criterion", [GINI, ENTROPY, TWOING])
def test_level_sets_describe_the_partition(criterion):
    X, y, levels = _mixed_data()
    tree = fit_tree(_problem(X, y, levels, n_classes=3), _settings(criterion, 3), None).tree
    validate(tree)
    assert tree.has_subset_splits
    members = _node_cases(tree, X)
    for t in range(tree.n_nodes):
        assert members[t].shape[0] == tree.n_node_samples[t]
        if tree.level_row[t] < 0:
            continue
        f = tree.feature[t]
        sets = tree.level_sets[tree.level_row[t]]
        present = set(np.unique(X[members[t], f]).astype(int))
        left, right = _bits(sets, 0), _bits(sets, 1)
        # the two sets partition exactly the levels present at the node
        assert left | right == present and not left & right
        # the left child holds the side with the lowest code present (canonical form)
        assert min(present) in left
        assert set(np.unique(X[members[tree.left[t]], f]).astype(int)) == left
        n_left = tree.n_node_samples[tree.left[t]]
        n_right = tree.n_node_samples[tree.right[t]]
        assert tree.majority_left[t] == (1 if n_left > n_right else
                                         0 if n_left < n_right else -1)
        assert np.isnan(tree.threshold[t])


def test_prediction_routes_absent_and_unseen_levels_to_the_majority():
    X, y, levels = _mixed_data(seed=1)
    tree = fit_tree(_problem(X, y, levels, n_classes=3), _settings(GINI, 3), None).tree
    rng = np.random.default_rng(5)
    Xt = np.column_stack([rng.integers(-1, 12, 3000), rng.normal(size=3000),
                          rng.integers(-1, 7, 3000)]).astype(float)
    Xt[::7, 0] = -1.0  # never seen in training
    Xt[::11, 2] = 99.0  # a code beyond every level set
    got = apply(tree, Xt)
    want = np.array([_walk(tree, x) for x in Xt])
    np.testing.assert_array_equal(got, want)
    stops = tree.left[got] != LEAF  # only at a split whose children tie
    assert np.all(tree.majority_left[got[stops]] == -1)


def test_many_levels_use_several_bitset_words():
    rng = np.random.default_rng(2)
    n, levels = 3000, 150
    x = rng.integers(0, levels, n)
    effect = rng.normal(size=levels)
    y = effect[x] + rng.normal(scale=0.3, size=n)
    tree = fit_tree(_problem(x[:, None], y, [levels]), _settings(SQUARED_ERROR), None).tree
    validate(tree)
    assert tree.level_sets.shape[2] == 3
    high = [t for t in range(tree.n_nodes) if tree.level_row[t] >= 0
            and max(_bits(tree.level_sets[tree.level_row[t]], 0)
                    | _bits(tree.level_sets[tree.level_row[t]], 1)) >= 128]
    assert high, "some split must use the third word"
    Xt = np.arange(-1, levels + 5, dtype=float)[:, None]
    np.testing.assert_array_equal(apply(tree, Xt), [_walk(tree, r) for r in Xt])
    # the root split is the best of the L - 1 splits of the levels sorted by mean y
    means = np.array([y[x == b].mean() for b in range(levels)])
    order = np.argsort(means, kind="stable")
    sse = ((y - y.mean()) ** 2).sum()
    best = 0.0
    for k in range(1, levels):
        m = np.isin(x, order[:k])
        d = sse - ((y[m] - y[m].mean()) ** 2).sum() - ((y[~m] - y[~m].mean()) ** 2).sum()
        best = max(best, d / n)
    assert tree.improvement[0] == pytest.approx(best, rel=1e-9)


def test_pruning_and_subtree_keep_level_sets():
    X, y, levels = _mixed_data(seed=3)
    tree = fit_tree(_problem(X, y, levels, n_classes=3), _settings(GINI, 3), None).tree
    for alpha in (0.0, 0.002, 0.01, 0.05):
        pruned = prune_tree(tree, alpha)
        validate(pruned)
        for t in range(pruned.n_nodes):
            if pruned.level_row[t] >= 0:
                assert pruned.left[t] != LEAF
        # a pruned tree predicts what the full tree's kept ancestors decide
        leaves = apply(pruned, X)
        assert np.all(pruned.left[leaves] == LEAF)
    keep = np.zeros(tree.n_nodes, bool)
    keep[0] = True
    root_only = subtree(tree, keep)
    validate(root_only)
    assert root_only.n_nodes == 3


def test_threads_label_packing_and_simd_leave_the_tree_unchanged(monkeypatch):
    rng = np.random.default_rng(4)
    n = 40_000  # above the size where growth uses threads
    X = np.column_stack([rng.integers(0, 30, n), rng.normal(size=n),
                         rng.integers(0, 6, n)]).astype(float)
    y = ((X[:, 0] % 4 == 1) ^ (X[:, 1] > 0) ^ (rng.random(n) < 0.2)).astype(np.int32)
    y = y + (X[:, 2] == 3)
    prob = _problem(X, y, [30, 0, 6], n_classes=3)
    ref = fit_tree(prob, _settings(GINI, 3), None, 1).tree
    two = fit_tree(prob, _settings(GINI, 3), None, 2).tree
    monkeypatch.setattr(_builder, "PACK_LABELS", False)
    unpacked = fit_tree(prob, _settings(GINI, 3), None, 1).tree
    for name in ref.node_fields():
        np.testing.assert_array_equal(getattr(ref, name), getattr(two, name), err_msg=name)
        np.testing.assert_array_equal(getattr(ref, name), getattr(unpacked, name),
                                      err_msg=name)
    np.testing.assert_array_equal(ref.level_sets, two.level_sets)
    np.testing.assert_array_equal(ref.level_sets, unpacked.level_sets)


def test_heuristic_above_the_exhaustive_limit_gives_a_valid_split():
    X, y, levels = _mixed_data(n=800, levels=9, n_classes=4, seed=6)
    exact = fit_tree(_problem(X[:, :1], y, levels[:1], n_classes=4),
                     _settings(GINI, 4, max_depth=1), None).tree
    approx = fit_tree(_problem(X[:, :1], y, levels[:1], n_classes=4),
                      _settings(GINI, 4, max_depth=1, max_exhaustive=3), None).tree
    validate(approx)
    assert approx.level_row[0] >= 0
    assert approx.improvement[0] <= exact.improvement[0] * (1 + 1e-12)
    assert approx.improvement[0] > 0.5 * exact.improvement[0]


def test_cross_validation_scores_fold_trees_with_subset_splits():
    X, y, levels = _mixed_data(seed=7)
    prob = _problem(X, y, levels, n_classes=3)
    res = cross_validate(prob, _settings(GINI, 3), 5, n_threads=1)
    table = res.table
    assert np.all(np.isfinite(table["cv_risk"]))
    # every fold tree's held-out loss at α = 0 (T_max of the fold) is its misclassification
    # rate: recompute it from scratch for the first repeat with the same folds
    folds = res.folds[0]
    wrong = 0
    for v in np.unique(folds):
        train = folds != v
        sub = prob._replace(X=np.ascontiguousarray(X[train]), y_class=y[train])
        fold_tree = fit_tree(sub, _settings(GINI, 3), None).tree
        leaves = apply(fold_tree, np.ascontiguousarray(X[~train]))
        wrong += np.sum(fold_tree.label[leaves] != y[~train])
    assert table["cv_risk"].iloc[0] == pytest.approx(wrong / y.shape[0], abs=1e-12)


# --------------------------------------------------------------------------- scan order

def _order_by_insertion(score, stats, by_odds, n_lv):
    """The scan order as the stable sorts by the ``_before`` relation find it, written
    out in Python: up to 24 levels an insertion sort (level a moves ahead of every level
    b with b not before a), above a bottom-up merge sort (the two can differ only where
    the relation is not a total preorder: NaN scores)."""
    def before(a, b):
        if by_odds:
            return stats[2 * a + 1] * stats[2 * b] <= stats[2 * b + 1] * stats[2 * a]
        return score[a] <= score[b]
    order = list(range(n_lv))
    if n_lv > 24:
        width = 1
        while width < n_lv:
            merged = []
            for lo in range(0, n_lv, 2 * width):
                a, b = order[lo:lo + width], order[lo + width:lo + 2 * width]
                while a and b:
                    merged.append(a.pop(0) if before(a[0], b[0]) else b.pop(0))
                merged += a + b
            order = merged
            width *= 2
        return order
    for i in range(1, n_lv):
        lvl = order[i]
        pos = i
        while pos > 0 and not before(order[pos - 1], lvl):
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = lvl
    return order


_sort_levels_kernel = None


def _sort_levels(score, stats, by_odds, n_lv, lm=32):
    """``cartjit.engine.subsets._sort_levels`` through a small kernel (it is inlined in the
    engine): returns (order, rank) as lists."""
    global _sort_levels_kernel
    if _sort_levels_kernel is None:
        from numba import njit
        from cartjit.engine import subsets as _subsets

        @njit
        def kernel(score, stats, by_odds, n_lv, ints, lm):
            _subsets._sort_levels(score, stats, by_odds, n_lv, ints, lm)

        _sort_levels_kernel = kernel
    from cartjit.engine.subsets import RANK, SIDE
    ints = np.full(4 * lm, -1, dtype=np.int64)
    _sort_levels_kernel(np.asarray(score, np.float64), np.asarray(stats, np.float64),
                        by_odds, n_lv, ints, lm)
    return (ints[SIDE * lm:SIDE * lm + n_lv].tolist(),
            ints[RANK * lm:RANK * lm + n_lv].tolist())


@pytest.mark.parametrize("kind", ["odds", "odds_weighted", "scores", "scores_nan"])
def test_scan_order_is_the_stable_sort_for_every_kind_of_count(kind):
    """The level order of the subset scans (counted ranks for whole counts and for
    scores without NaN, the insertion sort otherwise) equals the stable insertion sort
    by the same relation, ties in code order, on many random sets of levels with ties:
    whole counts with equal proportions and empty classes, fractional weights, equal
    scores, and NaN scores. Each level's rank is its position in the order."""
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(400):
        n_lv = int(rng.integers(1, 30))
        by_odds = kind.startswith("odds")
        if kind == "odds":
            stats = rng.integers(0, 4, 2 * n_lv).astype(float)
            stats[0::2] += (stats[0::2] + stats[1::2] == 0)  # a present level has a case
            if trial % 3 == 0:
                stats *= 1 << 20  # large whole counts: products still exact
        elif kind == "odds_weighted":
            stats = rng.integers(1, 5, 2 * n_lv) * rng.choice([0.1, 0.3, 1.0], 2 * n_lv)
        else:
            stats = np.ones(2 * n_lv)
        score = np.round(rng.normal(size=n_lv), 1)
        if kind == "scores_nan":
            score[rng.random(n_lv) < 0.2] = np.nan
        order, rank = _sort_levels(score, stats, by_odds, n_lv)
        expected = _order_by_insertion(score, stats, by_odds, n_lv)
        assert order == expected, (kind, trial, score, stats)
        assert [order[r] for r in rank] == list(range(n_lv))
        checked += n_lv > 1 and len(set(np.round(score, 1))) < n_lv  # ties were present
    assert checked > 50


def test_scan_order_falls_back_where_the_relation_is_not_a_total_preorder():
    """Counts past 2**26 (cross products no longer exact) and NaN scores take the
    insertion sort, whose order on such input can differ from a ranking by counting;
    the result is the insertion sort's."""
    big = float(1 << 27)
    stats = np.array([3.0, big + 1, 1.0, big / 3, 5.0, big - 7])
    order, _ = _sort_levels(np.zeros(3), stats, True, 3)
    assert order == _order_by_insertion(np.zeros(3), stats, True, 3)
    score = np.array([np.nan, 1.0, 0.0, np.nan, -1.0])
    order, _ = _sort_levels(score, np.ones(10), False, 5)
    assert order == _order_by_insertion(score, np.ones(10), False, 5)
