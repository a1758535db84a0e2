"""The forests are made of the engine's trees, exactly (docs/forests.md).

* A forest of one tree, every feature, no bootstrap, is the single tree bit for bit
  (tree arrays, probabilities, predictions, end nodes), on numeric data, categorical
  columns and data with missing values, for classification and regression.
* With bootstrap, tree k is the single tree fitted with ``sample_weight`` = its in-bag
  counts (times the base weights), and with ``ccp_alpha`` that tree pruned.
* A forest is the same for any ``n_jobs``, and tree k does not depend on
  ``n_estimators``.
* The compiled prediction equals the trees' own predictions added in Python.
* ``max_features`` < p draws features per node once the engine does (strict xfail
  until ``cartjit.engine.search.FEATURE_SUBSETS``).
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from cartjit import (BaggedCARTClassifier, BaggedCARTRegressor, CARTClassifier,
                     CARTRegressor, RandomForestClassifier, RandomForestRegressor)
from cartjit.datasets import load_iris, make_classification, make_regression
from cartjit.engine.pruning import prune_tree
from cartjit.engine.tree import Tree
from cartjit.ensemble import FEATURE_SUBSETS

from references.forests import categorical_frame, slow_sums, with_holes


def same_tree(a: Tree, b: Tree):
    for name in Tree._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def _cls_numeric():
    return make_classification(300, n_features=6, n_classes=3, n_informative=4,
                               random_state=3)


def _reg_numeric():
    return make_regression(250, n_features=5, n_informative=3, random_state=4)


def _iris_holes():
    X, y = load_iris(return_X_y=True)
    return with_holes(X, 0.1, random_state=5), np.asarray(y)


DATA = {
    "numeric": _cls_numeric,
    "categorical": categorical_frame,
    "missing": _iris_holes,
}


@pytest.mark.parametrize("kind", sorted(DATA))
def test_one_tree_without_bootstrap_is_the_single_tree(kind):
    X, y = DATA[kind]()
    single = CARTClassifier(max_competitor=4).fit(X, y)
    forest = RandomForestClassifier(1, max_features=None, bootstrap=False,
                                    max_competitor=4).fit(X, y)
    same_tree(forest.estimators_[0].tree_, single.tree_)
    same_tree(forest.estimators_[0].tree_max_, single.tree_max_)
    np.testing.assert_array_equal(forest.predict_proba(X), single.predict_proba(X))
    np.testing.assert_array_equal(forest.predict(X), single.predict(X))
    np.testing.assert_array_equal(forest.apply(X)[:, 0], single.apply(X))
    # the forest's MDI is renormalised after the mean over trees: an ulp or two
    np.testing.assert_allclose(forest.feature_importances_, single.feature_importances_,
                               rtol=1e-14, atol=0)


@pytest.mark.parametrize("kind", ["numeric", "missing"])
def test_one_regression_tree_without_bootstrap_is_the_single_tree(kind):
    X, y = _reg_numeric()
    if kind == "missing":
        X = with_holes(X, 0.1, random_state=6)
    single = CARTRegressor().fit(X, y)
    forest = RandomForestRegressor(1, max_features=None, bootstrap=False,
                                   max_competitor=4).fit(X, y)
    same_tree(forest.estimators_[0].tree_, single.tree_)
    np.testing.assert_array_equal(forest.predict(X), single.predict(X))
    np.testing.assert_array_equal(forest.apply(X)[:, 0], single.apply(X))


@pytest.mark.parametrize("kind", sorted(DATA))
def test_each_bootstrap_tree_is_the_single_tree_with_its_counts(kind):
    X, y = DATA[kind]()
    forest = BaggedCARTClassifier(4, max_surrogate=5 if kind == "missing" else "auto",
                                  random_state=11).fit(X, y)
    for k in range(4):
        counts = forest.inbag_counts(k)
        assert counts.sum() == X.shape[0] and counts.max() > 1
        single = CARTClassifier(max_competitor=0,
                                max_surrogate=5 if kind == "missing" else "auto").fit(
            X, y, sample_weight=counts)
        view = forest.estimators_[k]
        np.testing.assert_array_equal(view.classes_, single.classes_)
        same_tree(view.tree_, single.tree_)
        np.testing.assert_array_equal(view.priors_, single.priors_)
        np.testing.assert_array_equal(view.class_weight_totals_, single.class_weight_totals_)


def test_bootstrap_counts_multiply_the_base_weights_and_pruned_trees():
    X, y = _reg_numeric()
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    forest = BaggedCARTRegressor(3, ccp_alpha=0.5, random_state=2).fit(X, y,
                                                                       sample_weight=w)
    for k in range(3):
        counts = forest.inbag_counts(k)
        single = CARTRegressor(max_competitor=0, ccp_alpha=0.5).fit(
            X, y, sample_weight=w * counts)
        same_tree(forest.estimators_[k].tree_max_, single.tree_max_)
        same_tree(forest.estimators_[k].tree_, single.tree_)
        same_tree(forest.estimators_[k].tree_, prune_tree(single.tree_max_, 0.5))
        assert forest.estimators_[k].tree_.n_nodes < single.tree_max_.n_nodes


def test_subsamples_without_replacement():
    X, y = _cls_numeric()
    forest = BaggedCARTClassifier(3, replace=False, max_samples=0.5, random_state=4).fit(X, y)
    assert forest.max_samples_ == 150
    for k in range(3):
        counts = forest.inbag_counts(k)
        assert counts.sum() == 150 and counts.max() == 1
        single = CARTClassifier(max_competitor=0).fit(X, y, sample_weight=counts)
        same_tree(forest.estimators_[k].tree_, single.tree_)


def _forest_arrays(est):
    f = est.forest_
    arrays = [f.feature, f.threshold, f.left, f.value, f.roots,
              *(a for a in f.routing if isinstance(a, np.ndarray))]
    return arrays + [est.tree_seeds_]


@pytest.mark.filterwarnings("ignore:.*in the bag of every tree")
@pytest.mark.parametrize("kind", ["numeric", "missing"])
def test_any_number_of_threads_gives_the_same_forest(kind):
    X, y = DATA[kind]()
    one = RandomForestClassifier(6, oob_score=True, n_jobs=1, random_state=7).fit(X, y)
    two = RandomForestClassifier(6, oob_score=True, n_jobs=2, random_state=7).fit(X, y)
    for a, b in zip(_forest_arrays(one), _forest_arrays(two)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one.oob_decision_function_, two.oob_decision_function_)
    np.testing.assert_array_equal(one.oob_error_curve_, two.oob_error_curve_)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_tree_k_does_not_depend_on_the_number_of_trees():
    X, y = _cls_numeric()
    small = BaggedCARTClassifier(2, random_state=3).fit(X, y)
    large = BaggedCARTClassifier(5, random_state=3).fit(X, y)
    for k in range(2):
        same_tree(small.estimators_[k].tree_, large.estimators_[k].tree_)
    np.testing.assert_array_equal(small.inbag_counts(), large.inbag_counts()[:2])
    other = BaggedCARTClassifier(2, random_state=4).fit(X, y)
    assert not np.array_equal(small.inbag_counts(), other.inbag_counts())


@pytest.mark.parametrize("kind", sorted(DATA))
def test_compiled_prediction_is_the_trees_added_in_python(kind):
    X, y = DATA[kind]()
    est = BaggedCARTClassifier(7, random_state=1).fit(X, y)
    expected = slow_sums(est, X, True) / 7
    np.testing.assert_array_equal(est.predict_proba(X), expected)
    np.testing.assert_array_equal(est.predict(X), est.classes_[np.argmax(expected, axis=1)])
    ends = np.column_stack([t.apply(X) for t in est.estimators_])
    np.testing.assert_array_equal(est.apply(X), ends)


def test_compiled_regression_prediction_is_the_trees_added_in_python():
    X, y = _reg_numeric()
    X = with_holes(X, 0.05, random_state=2)
    est = BaggedCARTRegressor(5, random_state=1).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), slow_sums(est, X, False)[:, 0] / 5)


def test_votes_count_the_trees_labels():
    X, y = _cls_numeric()
    est = BaggedCARTClassifier(5, voting="vote", random_state=1).fit(X, y)
    labels = np.stack([t.predict(X) for t in est.estimators_])
    shares = np.stack([(labels == c).mean(axis=0) for c in est.classes_], axis=1)
    np.testing.assert_allclose(est.predict_proba(X), shares, rtol=0, atol=1e-15)


def test_max_features_equal_to_p_is_bagging():
    X, y = _cls_numeric()
    a = RandomForestClassifier(3, max_features=None, random_state=5).fit(X, y)
    b = RandomForestClassifier(3, max_features=X.shape[1], random_state=5).fit(X, y)
    c = RandomForestClassifier(3, max_features=1.0, random_state=5).fit(X, y)
    for k in range(3):
        same_tree(a.estimators_[k].tree_, b.estimators_[k].tree_)
        same_tree(a.estimators_[k].tree_, c.estimators_[k].tree_)
    assert a.max_features_ == b.max_features_ == X.shape[1]


@pytest.mark.xfail(not FEATURE_SUBSETS, strict=True,
                   reason="per-node feature subsets not in the engine yet")
def test_max_features_draws_features_per_node():
    """Without bootstrap, the trees of a forest differ only by their feature draws: with
    m = 1 of 6 features they cannot all be the same tree, and the roots split on more
    than one feature."""
    X, y = _cls_numeric()
    est = RandomForestClassifier(8, max_features=1, bootstrap=False, random_state=0).fit(X, y)
    roots = {int(t.tree_.feature[0]) for t in est.estimators_}
    assert len(roots) > 1
    again = RandomForestClassifier(8, max_features=1, bootstrap=False, random_state=0,
                                   n_jobs=2).fit(X, y)
    for a, b in zip(est.estimators_, again.estimators_):
        same_tree(a.tree_, b.tree_)


@pytest.mark.xfail(not FEATURE_SUBSETS, strict=True,
                   reason="per-node feature subsets not in the engine yet")
def test_sqrt_features_change_the_forest():
    X, y = _cls_numeric()
    bag = RandomForestClassifier(4, max_features=None, random_state=0).fit(X, y)
    rf = RandomForestClassifier(4, max_features="sqrt", random_state=0).fit(X, y)
    assert rf.max_features_ == 2
    assert any(a.tree_.n_nodes != b.tree_.n_nodes
               or not np.array_equal(a.tree_.feature, b.tree_.feature)
               for a, b in zip(bag.estimators_, rf.estimators_))


@pytest.mark.parametrize("kind", ["categorical", "numeric holes"])
def test_compiled_prediction_over_several_chunks(kind):
    """Several chunks of rows, and in each both walks: rows with a missing value take the
    careful one, complete rows the blind one (numeric), or every row the careful one
    (subset splits)."""
    if kind == "categorical":
        X, y = categorical_frame(700, random_state=3)
        X.loc[::9, "x1"] = np.nan
    else:
        X, y = make_classification(700, n_features=5, n_classes=3, random_state=2)
        X = with_holes(X, 0.02, random_state=4)
    est = BaggedCARTClassifier(4, random_state=5).fit(X, y)
    np.testing.assert_array_equal(est.predict_proba(X), slow_sums(est, X, True) / 4)
    np.testing.assert_array_equal(est.apply(X),
                                  np.column_stack([t.apply(X) for t in est.estimators_]))


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cv_pruned_trees_are_the_cv_estimator_on_their_samples(task):
    """``prune="cv"``: tree k is T_max of its sample pruned at the α its own V-fold CV
    selects, i.e. CARTClassifierCV / CARTRegressorCV fitted with ``sample_weight`` = its
    counts and the tree's CV seed."""
    from cartjit import CARTClassifierCV, CARTRegressorCV
    from cartjit.engine.forest import cv_seed

    if task == "classification":
        X, y = _cls_numeric()
        est = BaggedCARTClassifier(3, prune="cv", prune_folds=5, random_state=6).fit(X, y)
        single_class = CARTClassifierCV
    else:
        X, y = _reg_numeric()
        est = BaggedCARTRegressor(3, prune="cv", prune_folds=5, prune_selection="min",
                                  random_state=6).fit(X, y)
        single_class = CARTRegressorCV
    selection = "1se" if task == "classification" else "min"
    for k in range(3):
        single = single_class(cv=5, selection=selection, max_competitor=0,
                              random_state=cv_seed(6, k)).fit(
            X, y, sample_weight=est.inbag_counts(k))
        view = est.estimators_[k]
        same_tree(view.tree_max_, single.tree_max_)
        same_tree(view.tree_, single.tree_)
        assert est.tree_alphas_[k] == single.alpha_ == view.ccp_alpha
        assert view.tree_.n_nodes < view.tree_max_.n_nodes


def _majority_end(tree, row):
    """The end node of ``row`` in ``tree`` by the rules of docs/maths.md §8 for a tree
    without surrogates or subset splits, the majority read from the children's case
    counts (not from ``majority_left``): a present value takes the threshold, a missing
    one the child with more learning cases, and a tie stops the case."""
    t = 0
    while tree.left[t] >= 0:
        x = row[tree.feature[t]]
        left, right = tree.left[t], tree.right[t]
        if not np.isnan(x):
            t = left if x <= tree.threshold[t] else right
            continue
        n_left, n_right = tree.n_node_samples[left], tree.n_node_samples[right]
        if n_left == n_right:
            return t
        t = left if n_left > n_right else right
    return t


@pytest.mark.parametrize("use_surrogate", [0, 1, 2])
def test_holes_met_by_a_forest_grown_without_them(use_surrogate):
    """A forest grown on complete numeric data keeps no routing row, only each node's
    majority side (2 bits, with use_surrogate=2): rows with holes end where the rules
    send them, its storage is 16 bytes a node plus the values."""
    X, y = _cls_numeric()
    est = RandomForestClassifier(4, use_surrogate=use_surrogate, random_state=2).fit(X, y)
    holes = with_holes(X, 0.3, random_state=1)
    holes[:5] = np.nan  # rows missing everything: the majority alone routes them
    ends = est.apply(holes)
    for k, tree_est in enumerate(est.estimators_):
        tree = tree_est.tree_
        if use_surrogate == 2:
            want = [_majority_end(tree, row) for row in holes]
        else:  # a missing value stops the case where it is met
            want = [_majority_end(tree._replace(n_node_samples=np.zeros_like(
                tree.n_node_samples)), row) for row in holes]
        np.testing.assert_array_equal(ends[:, k], want)
        np.testing.assert_array_equal(ends[:, k], tree_est.apply(holes))
    np.testing.assert_array_equal(est.predict_proba(holes), slow_sums(est, holes, True) / 4)
    f = est.forest_
    assert f.routing.nodes.shape[0] == 0 and f.routing.sur.shape[0] == 0
    n, k = f.n_nodes, f.value.shape[1]
    majority = -(-n // 4) if use_surrogate == 2 else 0
    assert f.nbytes == (16 + 8 * k) * n + 8 * (f.n_trees + 1) + majority


def test_routing_rows_only_where_a_node_needs_one():
    """Categorical columns and holes: the forest keeps a routing row exactly for the
    nodes with a subset split or surrogates, and predicts as its trees."""
    X, y = categorical_frame()
    X = X.copy()
    X.loc[::7, "x1"] = np.nan
    est = BaggedCARTClassifier(3, random_state=5).fit(X, y)
    f = est.forest_
    want = np.concatenate([np.flatnonzero((t.tree_.level_row >= 0)
                                          | (t.tree_.n_surrogates > 0)) + f.roots[b]
                           for b, t in enumerate(est.estimators_)])
    assert want.shape[0] > 0
    np.testing.assert_array_equal(f.routing.nodes, want)
    ends = np.column_stack([t.apply(X) for t in est.estimators_])
    np.testing.assert_array_equal(est.apply(X), ends)


def _store_of(fits, est):
    """A TreeStore built from ``fits`` (a copy of the list: the store empties it)."""
    from cartjit.engine.forest import combine_trees
    settings = est._settings
    n_classes = est.n_classes_ if hasattr(est, "n_classes_") else 0
    _, store, _ = combine_trees(list(fits), settings, est._plan_.voting, n_classes,
                                est.n_features_in_)
    return store


@pytest.mark.filterwarnings("ignore:.*in the bag of every tree")
@pytest.mark.parametrize("small", ["none", "some", "all"])
@pytest.mark.parametrize("kind", ["numeric", "missing", "pruned", "regression", "costs"])
def test_the_store_gives_back_every_tree_bit_for_bit(kind, small, monkeypatch):
    """The estimator keeps its trees once (TreeStore: columns concatenated, constant
    columns as one value, derivable ones derived again (risks, labels and α too),
    counts kept at the leaves, some read from the flat forest; a small tree's columns
    as they are); each tree comes back as grown, also where one tree breaks a rule the
    others follow (its column is then kept) and where small and larger trees mix, and,
    where no tree counts as small, the store pickles smaller than the trees alone,
    though it holds the flat forest too."""
    import cartjit.engine.forest as forest_module
    if kind == "regression":
        X, y = _reg_numeric()
        est = RandomForestRegressor(4, random_state=1).fit(X, y)
    else:
        X, y = _iris_holes() if kind == "missing" else _cls_numeric()
        extra = ({"ccp_alpha": 0.01} if kind == "pruned" else
                 {"priors": [0.5, 0.3, 0.2], "cost": [[0, 1, 2], [1, 0, 1], [3, 1, 0]]}
                 if kind == "costs" else {})
        est = RandomForestClassifier(4, random_state=1, **extra).fit(X, y)
    fits = list(est._trees)
    sizes = sorted(f.tree_max.n_nodes for f in fits)
    monkeypatch.setattr(forest_module, "SMALL_TREE_NODES",
                        {"none": 0, "some": sizes[len(sizes) // 2], "all": 10 ** 9}[small])
    # tree 1 breaks rules of the others (as no grown tree does): its weights are not
    # its counts' sums, one node's depth is off, the root's count is not its
    # children's sum and its risks are not those of its counts (nor its α, then); the
    # store must keep them as given
    t1 = fits[1].tree_max
    broken = t1._replace(
        weighted_n_node_samples=t1.weighted_n_node_samples * (1 + 2e-16),
        depth=t1.depth + np.int32(t1.depth.shape[0] > 0),
        n_node_samples=t1.n_node_samples + (np.arange(t1.n_nodes) == 0),
        risk=t1.risk * (1 + 2e-16))
    fits[1] = fits[1]._replace(tree_max=broken,
                               tree=broken if fits[1].alpha is None
                               else prune_tree(broken, fits[1].alpha))
    store = _store_of(fits, est)
    for want, got in zip(fits, store):
        same_tree(got.tree_max, want.tree_max)
        same_tree(got.tree, want.tree)
        assert got.alpha == want.alpha
    # the store with the flat forest it reads from, against the trees (not on iris,
    # whose trees of about 15 nodes weigh less than a store's fixed fields)
    if small == "none" and kind != "missing":
        assert len(pickle.dumps(store)) < len(pickle.dumps([f.tree_max for f in fits]))
