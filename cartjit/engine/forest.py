"""Breiman's bagging and random forests on the CART engine (docs/forests.md).

A forest is B CART trees, each grown by :func:`cartjit.engine.fit.fit_tree` on a sample
of the learning cases, and stored as one flat structure (:class:`Forest`):

1. **Presort once** (:func:`cartjit.engine.presort.presort`). Tree b's sample is integer
   case weights on the shared presorted keys, never a copy of X: its in-bag cases are
   the keys filtered by :func:`cartjit.engine.presort.subset_keys` (as a cross-validation
   fold is grown), and its weights are the base case weights times the bootstrap counts
   (sampling with replacement: multinomial counts; without: 0/1).
2. **Seeds.** Everything random about tree b (its sample, the seed of its per-node
   feature draws, ``Settings.feature_seed``, and the permutations of the permutation
   importance) comes from ``SeedSequence(random_state, spawn_key=(b, stream))``
   (:func:`tree_seed_sequence`, one stream each), drawn in Python: tree b is the same whatever the number
   of threads, the order the trees are grown in, or ``n_estimators``.
3. **Growth.** The trees are grown on a pool of ``n_jobs`` Python threads, each tree on
   one thread (the kernels release the GIL), as the cross-validation grows its folds;
   each tree writes only its own slots, so the forest is bit-identical for any
   ``n_jobs``.
4. **Storage** (:func:`assemble_forest`): the trees' node arrays concatenated, child ids
   offset to absolute node ids, ``roots[b]`` the first node of tree b; the routing
   tables of every tree (:func:`cartjit.engine.predict.routing_of`) concatenated with
   their level-set and surrogate rows offset, so that one
   :class:`cartjit.engine.predict.Routing` routes a case in any tree.
5. **Prediction** is one compiled pass (:func:`forest_sums`, :func:`forest_apply`): the
   rows are cut into chunks run in parallel; a chunk walks its rows down tree 0, then
   tree 1, ..., keeping several rows in flight, and a row adds up its leaves' values in
   tree order (so the sums do not depend on the number of threads). A threshold decides
   a present value at an ordered split; everything else (subset splits, missing values,
   surrogates, the majority) is :func:`cartjit.engine.predict.route`, as for one tree.
6. **Out-of-bag** (:func:`oob_estimates`): each case's OOB value is the average over
   the trees for which it is out of bag, its error the per-case loss of docs/maths.md §5
   (step 6), and the OOB error after the first b trees for every b (the curve) is
   reduced over fixed chunks of cases, so it too is the same on any number of threads.
7. **Importance**: impurity-based (MDI, :func:`tree_importance`, per tree) and Breiman's
   OOB permutation importance (:func:`permutation_importance`), whose permutations come
   from a counter-based generator seeded per (tree, feature), so that they are the same
   on any number of threads.

Nothing here changes how a tree is grown: with ``max_features = 0`` (every feature), no
bootstrap and one tree, the forest's tree is the single tree of the same parameters.
"""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from .cv import cross_validate
from .fit import class_priors, fit_tree, split_factor
from .predict import STEP, Routing, check_use_surrogate, route, routing_of
from .presort import as_kernel_array, presort, subset_keys
from .pruning import prune_tree
from .scaling import Scale, check_class_tables, restore
from .speed import jit, jit_parallel, parallel_entry
from .tree import LEAF

__all__ = ["Forest", "ForestPlan", "ForestFit", "TreeFit", "OOBTargets", "OOBResult",
           "Importance", "VOTING", "grow_forest", "assemble_forest", "node_values",
           "tree_importance", "class_proba", "forest_sums", "forest_apply", "oob_estimates",
           "permutation_importance", "permutation", "decide", "tree_seed_sequence",
           "draw_counts", "inbag_mask", "oob_targets", "oob_rows", "risk_priors",
           "sample_risk", "permutation_seeds", "cv_seed"]

#: How a classification forest turns its trees into probabilities: ``"proba"`` averages
#: each tree's class probabilities p(j | t) at the case's leaf (scikit-learn's forests),
#: ``"vote"`` counts each tree's label j*(t) as one vote (R's randomForest).
VOTING = ("proba", "vote")

#: Rows per chunk of the compiled passes: a chunk walks its rows down every tree in
#: turn, so its rows of X stay in cache while the trees' nodes stream through.
CHUNK_ROWS = 256
#: Rows in flight while a chunk walks one tree (their chains of loads overlap).
SLOTS = 8
#: Rows per chunk of the out-of-bag pass: fixed, so that its per-chunk sums (the error
#: curve) are reduced alike on any number of threads.
OOB_CHUNK = 512


class Forest(NamedTuple):
    """A fitted forest as flat arrays: the node arrays of its B trees concatenated.

    Node ids are absolute: tree b holds nodes ``roots[b]`` to ``roots[b + 1] - 1``, its
    root first, in its own order (node ``roots[b] + i`` is node i of the tree). ``left``
    is -1 at a leaf, and the right child is ``left + 1`` (:attr:`right`); ``feature`` is
    -1 and ``threshold`` NaN at a leaf; a subset split has a NaN threshold and a row of
    ``routing.level_sets``. ``value`` holds what a case reaching the node contributes:
    class probabilities p(j | t) (``voting="proba"``), a one-hot vote for j*(t)
    (``"vote"``), or the mean ȳ(t) (regression). ``routing`` is every tree's
    :func:`cartjit.engine.predict.routing_of` table, its level-set and surrogate rows
    offset, so that ``route`` routes a case in any tree.
    """

    feature: np.ndarray    # int32 (N,), -1 at leaves
    threshold: np.ndarray  # float64 (N,), NaN at leaves and subset splits
    left: np.ndarray       # int32 (N,) absolute ids (int64 past 2**31 - 1 nodes), -1 leaf
    value: np.ndarray      # float64 (N, K)
    roots: np.ndarray      # int64 (B + 1,): tree b is nodes roots[b] .. roots[b+1] - 1
    routing: Routing       # level sets, surrogates, majority of every node

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0] - 1)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def right(self) -> np.ndarray:
        """The right child of every node (``left + 1``; -1 at a leaf)."""
        return np.where(self.left >= 0, self.left + 1, -1).astype(self.left.dtype)

    def __repr__(self) -> str:
        return (f"Forest(n_trees={self.n_trees}, n_nodes={self.n_nodes}, "
                f"n_values={int(self.value.shape[1]) if self.value.ndim == 2 else 0})")

    __str__ = __repr__


class ForestPlan(NamedTuple):
    """The forest's own parameters, checked (the trees' are a ``Settings``)."""

    n_estimators: int
    max_features: int              # m features drawn per node; 0: every feature
    bootstrap: bool                # draw a sample per tree (else every case, count 1)
    replace: bool                  # with replacement (multinomial counts) or without
    n_samples: int                 # cases drawn per tree (with bootstrap)
    random_state: int
    ccp_alpha: float | None = None  # each tree pruned to T(α)
    cp: float | None = None        # or to T(cp · R(root)) of its own root
    voting: str = "proba"
    cv_folds: int = 0              # or by V-fold CV of its own sample (0: not)
    selection: object = "1se"      # the CV's selection rule


class TreeFit(NamedTuple):
    """One tree of a forest and the class quantities it was fitted with."""

    tree: "object"                 # Tree: T(α) with ccp_alpha/cp, else T_max
    tree_max: "object"             # Tree: T_max with its per-node α
    priors: np.ndarray | None      # π of the tree (its in-bag proportions if empirical)
    class_totals: np.ndarray | None  # N_j of its in-bag cases, bootstrap counts included
    alpha: float | None = None     # the α it was pruned at (None: T_max)


class ForestFit(NamedTuple):
    """What :func:`grow_forest` returns."""

    forest: Forest
    trees: list                    # TreeFit per tree
    inbag: np.ndarray              # uint8 (B, ceil(n / 8)) in-bag bits, little-endian
    feature_seeds: np.ndarray      # int64 (B,) Settings.feature_seed of each tree
    importance: np.ndarray         # float64 (B, p) each tree's normalised MDI


#: The streams of a tree's randomness (:func:`tree_seed_sequence`).
SAMPLE_STREAM, PERMUTATION_STREAM, FEATURE_STREAM, CV_STREAM = 0, 1, 2, 3


def tree_seed_sequence(random_state, b, stream=SAMPLE_STREAM):
    """The ``SeedSequence`` of one stream of tree b: its sample (``spawn_key=(b,)``), its
    permutations (``(b, 1)``), its feature seed (``(b, 2)``) or the seed of its
    cross-validation's folds (``(b, 3)``); a function of ``(random_state, b)`` alone."""
    key = (int(b),) if stream == 0 else (int(b), int(stream))
    return np.random.SeedSequence(int(random_state), spawn_key=key)


def draw_counts(plan, n, b):
    """Tree b's bootstrap counts over the n cases (int64) and its feature seed.

    Without ``bootstrap`` every case has count 1. With replacement the counts are those
    of ``n_samples`` uniform draws (multinomial); without, ``n_samples`` distinct cases
    have count 1.
    """
    feature_seed = int(tree_seed_sequence(plan.random_state, b, FEATURE_STREAM)
                       .generate_state(1, np.uint64)[0] >> np.uint64(1))
    if not plan.bootstrap:
        return np.ones(n, dtype=np.int64), feature_seed
    rng = np.random.default_rng(tree_seed_sequence(plan.random_state, b))
    if plan.replace:
        counts = np.bincount(rng.integers(0, n, plan.n_samples), minlength=n)
    else:
        counts = np.zeros(n, dtype=np.int64)
        counts[rng.choice(n, plan.n_samples, replace=False)] = 1
    return counts.astype(np.int64, copy=False), feature_seed


def inbag_mask(inbag, n):
    """The (B, n) boolean in-bag mask from the packed bits of :class:`ForestFit`."""
    return np.unpackbits(inbag, axis=1, count=n, bitorder="little").astype(bool)


def _tree_problem(problem, counts):
    """Tree b's problem (the same X, the weights times the counts) and the common weight
    of its in-bag cases when they all weigh the same (None otherwise): such a tree is
    fitted with unit weights and its counts scaled after, as
    :func:`cartjit.engine.scaling.normalise` fits equal weights."""
    in_bag = counts > 0
    if problem.unit_weights:
        w = counts.astype(np.float64)
    else:
        w = problem.w * counts
    w_in = w[in_bag]
    top = float(w_in.max())
    if float(w_in.min()) == top:
        return problem._replace(w=np.empty(0, dtype=np.float64), unit_weights=True), top
    return problem._replace(w=w, unit_weights=False), None


def cv_seed(random_state, b):
    """The ``random_state`` of tree b's cross-validation (``prune="cv"``)."""
    return int(tree_seed_sequence(random_state, b, CV_STREAM).generate_state(1)[0])


def _cv_pruned(problem, settings, plan, counts, b):
    """Tree b grown and pruned by the V-fold cross-validation of its own sample
    (:func:`cartjit.engine.cv.cross_validate`, Breiman's bagging of CV-pruned trees):
    the in-bag cases are copied out with their weights (the CV presorts and folds
    them), V is capped at their number. Returns ``(Fitted, α)``; α is None for a
    sample of one case (no CV: T_max)."""
    rows = np.flatnonzero(counts > 0)
    w = counts[rows].astype(np.float64)
    if not problem.unit_weights:
        w = w * problem.w[rows]
    cls = problem.is_classification
    sub = problem._replace(X=np.ascontiguousarray(problem.X[rows]),
                           y_class=problem.y_class[rows] if cls else problem.y_class,
                           y_reg=problem.y_reg if cls else problem.y_reg[rows],
                           w=w, unit_weights=False)
    if rows.shape[0] < 2:
        return fit_tree(sub, settings, None, n_threads=1, check=False), None
    res = cross_validate(sub, settings, min(int(plan.cv_folds), rows.shape[0]),
                         selection=plan.selection,
                         random_state=cv_seed(plan.random_state, b), n_threads=1)
    return res.fitted, float(res.alpha)


def _fit_one(problem, settings, plan, presorted, b):
    """Grow, weigh and prune tree b; returns ``(TreeFit, counts > 0, feature seed)``."""
    n = problem.X.shape[0]
    counts, feature_seed = draw_counts(plan, n, b)
    in_bag = counts > 0
    own = settings._replace(max_features=int(plan.max_features),
                            feature_seed=int(feature_seed))
    if plan.cv_folds:
        fitted, alpha = _cv_pruned(problem, own, plan, counts, b)
        tree = fitted.tree if alpha is None else prune_tree(fitted.tree, alpha)
        return (TreeFit(tree, fitted.tree, fitted.priors, fitted.class_totals, alpha),
                in_bag, feature_seed)
    if plan.bootstrap:
        keys = subset_keys(presorted, in_bag.view(np.uint8), 1)
    else:  # every case: the tree consumes its own copy of the keys
        keys = presorted._replace(keys=presorted.keys.copy())
    tree_problem, common = _tree_problem(problem, counts)
    fitted = fit_tree(tree_problem, own, keys, n_threads=1, check=False)
    if common is not None and common != 1.0:
        fitted = restore(fitted, Scale(weight=common))
    tree_max = fitted.tree
    alpha = plan.ccp_alpha
    if plan.cp is not None:
        alpha = plan.cp * float(tree_max.risk[0])
    tree = tree_max if alpha is None else prune_tree(tree_max, alpha)
    return (TreeFit(tree, tree_max, fitted.priors, fitted.class_totals, alpha), in_bag,
            feature_seed)


def grow_forest(problem, settings, plan, n_jobs=1):
    """Grow the forest of ``plan`` on ``problem`` with the trees' ``settings``.

    ``problem`` holds the cases that take part (positive weight; the caller drops the
    others), ``settings`` the trees' parameters (``max_features`` and ``feature_seed``
    are set per tree from ``plan``). The features are presorted once; the trees grow on
    ``n_jobs`` Python threads, each on one thread. Returns a :class:`ForestFit`.
    """
    n, p = problem.X.shape
    if problem.is_classification:  # the same check for every tree: made once, here
        check_class_tables(n, problem.n_classes, settings)
    # one presort for every tree (the CV-pruned trees presort their own samples)
    presorted = None if plan.cv_folds else presort(problem.X, problem.n_levels,
                                                   max(1, int(n_jobs)))
    n_trees = int(plan.n_estimators)
    inbag = np.zeros((n_trees, (n + 7) // 8), dtype=np.uint8)
    seeds = np.zeros(n_trees, dtype=np.int64)

    def one(b):
        fit, in_bag, seed = _fit_one(problem, settings, plan, presorted, b)
        inbag[b] = np.packbits(in_bag, bitorder="little")  # tree b's own row
        seeds[b] = seed
        return fit

    if n_jobs > 1 and n_trees > 1:
        with ThreadPoolExecutor(min(int(n_jobs), n_trees)) as pool:
            trees = list(pool.map(one, range(n_trees)))
    else:
        trees = [one(b) for b in range(n_trees)]
    del presorted
    values = [node_values(t, settings, plan.voting, problem.n_classes) for t in trees]
    forest = assemble_forest([t.tree for t in trees], values, settings.use_surrogate)
    importance = np.stack([tree_importance(t, settings, p) for t in trees]) if trees \
        else np.zeros((0, p))
    return ForestFit(forest, trees, inbag, seeds, importance)


def class_proba(value, priors, class_totals):
    """p(j | t) = π(j) N_j(t)/N_j, normalised over j (docs/maths.md §1), for the rows of
    ``value``; a class absent from the tree's cases (N_j = 0) has p(j | t) = 0."""
    if np.all(class_totals > 0):
        scale = priors / class_totals
    else:
        scale = np.divide(priors, class_totals, out=np.zeros_like(priors),
                          where=class_totals > 0)
    scaled = value * scale
    return scaled / scaled.sum(axis=1, keepdims=True)


def node_values(fit, settings, voting, n_classes):
    """What a case reaching each node of ``fit.tree`` adds to the forest's sums: p(j | t)
    (as the single tree's ``predict_proba``), a one-hot vote for j*(t), or ȳ(t)."""
    tree = fit.tree
    if n_classes == 0:
        return np.ascontiguousarray(tree.value[:, :1], dtype=np.float64)
    if voting == "vote":
        out = np.zeros((tree.n_nodes, n_classes))
        out[np.arange(tree.n_nodes), tree.label] = 1.0
        return out
    return np.ascontiguousarray(class_proba(tree.value, fit.priors, fit.class_totals))


def tree_importance(fit, settings, n_features):
    """The MDI of one tree, scikit-learn's definition (as the single tree's
    ``feature_importances_``): Σ p(t) Δi(t) per feature over the split nodes of
    ``fit.tree``, p(t) under the split-search priors (the weight fraction for
    regression), normalised to sum to 1; all zeros for a single leaf."""
    tree = fit.tree
    if fit.priors is None:
        weight = tree.weighted_n_node_samples / tree.weighted_n_node_samples[0]
    else:
        weight = tree.value @ split_factor(fit.priors, fit.class_totals, settings.cost,
                                           settings.default_cost)
    per_node = weight * tree.improvement
    split = tree.left != LEAF
    totals = np.zeros(n_features, dtype=np.float64)
    np.add.at(totals, tree.feature[split], per_node[split])
    total = totals.sum()
    return totals / total if total > 0 else totals


def assemble_forest(trees, values, use_surrogate=2):
    """One :class:`Forest` of the flat ``trees`` (:class:`cartjit.engine.tree.Tree`) with
    the per-node ``values`` of each (:func:`node_values`)."""
    sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
    roots = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum(sizes, out=roots[1:])
    n_total = int(roots[-1])
    index = np.int32 if n_total < np.iinfo(np.int32).max else np.int64
    routings = [routing_of(t, use_surrogate) for t in trees]
    n_words = max([int(r.level_sets.shape[2]) for r in routings], default=0)
    level_rows = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([r.level_sets.shape[0] for r in routings], out=level_rows[1:])
    sur_rows = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([r.sur.shape[0] for r in routings], out=sur_rows[1:])
    level_sets = np.zeros((int(level_rows[-1]), 2, n_words), dtype=np.uint64)
    nodes, surs, left = [], [], []
    for b, (t, r) in enumerate(zip(trees, routings)):
        left.append(np.where(t.left >= 0, t.left.astype(np.int64) + roots[b], -1))
        node = r.node.copy()
        node[:, 0] = np.where(node[:, 0] >= 0, node[:, 0] + level_rows[b], -1)
        node[:, 2] = np.where(node[:, 3] > 0, node[:, 2] + sur_rows[b], 0)
        nodes.append(node)
        sur = r.sur.copy()
        sur[:, 1] = np.where(sur[:, 1] >= 0, sur[:, 1] + level_rows[b], -1)
        surs.append(sur)
        sets = r.level_sets
        level_sets[level_rows[b]:level_rows[b + 1], :, :sets.shape[2]] = sets
    cat = (lambda parts, shape, dtype: np.ascontiguousarray(
        np.concatenate(parts) if parts else np.zeros(shape, dtype), dtype=dtype))
    routing = Routing(cat(nodes, (0, 4), np.int64), cat(surs, (0, 3), np.int64),
                      cat([r.sur_threshold for r in routings], (0,), np.float64),
                      level_sets, any(r.subset_splits for r in routings),
                      check_use_surrogate(use_surrogate))
    n_values = values[0].shape[1] if values else 1
    return Forest(cat([t.feature for t in trees], (0,), np.int32),
                  cat([t.threshold for t in trees], (0,), np.float64),
                  cat(left, (0,), index), cat(values, (0, n_values), np.float64),
                  roots, routing)


# --------------------------------------------------------------------------- the kernels

class ForestArrays(NamedTuple):
    """A :class:`Forest` as the kernels read it (:func:`_kernel_arrays`)."""

    step: np.ndarray       # STEP records: threshold, child0 (itself at a leaf or a
    #                        subset split), feature
    left: np.ndarray       # int64 (N,), -1 at leaves
    feature: np.ndarray    # int64 (N,), 0 at leaves
    threshold: np.ndarray  # float64 (N,), +inf at leaves
    roots: np.ndarray      # int64 (B + 1,)
    value: np.ndarray      # float64 (N, K)


def _kernel_arrays(forest):
    """The kernels' view of ``forest``: leaves as self-loops with an infinite threshold,
    subset splits as self-loops (they leave the fast step for ``route``). The routing
    travels beside it (``forest.routing``): a ``prange`` loop cannot take a record
    nested in a record."""
    left = forest.left.astype(np.int64)
    is_leaf = left < 0
    n = left.shape[0]
    feat = np.where(is_leaf, 0, forest.feature).astype(np.int64)
    thr = np.where(is_leaf, np.inf, forest.threshold).astype(np.float64)
    step = np.empty(n, dtype=STEP)
    step["threshold"] = thr
    own = is_leaf | (forest.routing.node[:, 0] >= 0)
    step["child0"] = np.where(own, np.arange(n), left)
    step["feature"] = feat
    return ForestArrays(step, left, feat, thr, as_kernel_array(forest.roots, np.int64),
                        as_kernel_array(forest.value, np.float64))


@jit
def _routed(X, i, t, left, feature, threshold, routing):
    """The child of node t that :func:`route` sends row i to, or -1 where it stops (a
    call, so that the walk's loop stays small)."""
    d = route(X, i, t, feature, threshold, routing)
    return left[t] + d if d >= 0 else np.int64(-1)


@jit
def _walk_rows(fa, routing, X, rows, n_rows, root, ends):
    """The end node, in the tree whose root is ``root``, of rows ``rows[:n_rows]`` of X,
    written to ``ends[:n_rows]``: :data:`SLOTS` rows in flight, each stepped in turn; a
    present value at an ordered split takes the threshold, anything else ``route``."""
    step, left = fa.step, fa.left
    slot = np.full(SLOTS, -1, dtype=np.int64)
    node = np.zeros(SLOTS, dtype=np.int64)
    nxt = 0
    active = 0
    for s in range(SLOTS):
        if nxt < n_rows:
            slot[s] = nxt
            node[s] = root
            nxt += 1
            active += 1
    while active > 0:
        for s in range(SLOTS):
            k = slot[s]
            if k < 0:
                continue
            t = node[s]
            rec = step[t]
            child = np.int64(rec.child0)
            if child != t:
                x = X[rows[k], rec.feature]
                if x == x:
                    node[s] = child + np.int64(x > rec.threshold)
                    continue
            if left[t] >= 0:  # a missing value, or a subset split
                d = _routed(X, rows[k], t, left, fa.feature, fa.threshold, routing)
                if d >= 0:
                    node[s] = d
                    continue
            ends[k] = t  # a leaf, or the case stops at t
            if nxt < n_rows:
                slot[s] = nxt
                node[s] = root
                nxt += 1
            else:
                slot[s] = -1
                active -= 1


#: Rows the blind walk keeps in flight, and its sweeps between two checks for rows
#: that reached a leaf (the values of :mod:`cartjit.engine.predict`'s blind walk).
BLIND_SLOTS = 16
BLIND_SWEEPS = 4


@jit
def _blind_rows(fa, xs, p, rows, n_rows, root, ends):
    """:func:`_walk_rows` for a tree of ordered splits and rows whose values are all
    finite: :data:`BLIND_SWEEPS` sweeps over :data:`BLIND_SLOTS` slots step every slot
    without a test (a leaf is a self-loop whose threshold is +inf), then a check ends
    the rows that reached a leaf. ``xs`` is X flattened (p values a row)."""
    step = fa.step
    leaf = root
    while np.int64(step[leaf].child0) != leaf:  # a leaf, for the empty slots
        leaf = np.int64(step[leaf].child0)
    slot = np.full(BLIND_SLOTS, -1, dtype=np.int64)
    base = np.zeros(BLIND_SLOTS, dtype=np.int64)
    node = np.full(BLIND_SLOTS, leaf, dtype=np.int64)
    nxt = 0
    active = 0
    for s in range(BLIND_SLOTS):
        if nxt < n_rows:
            slot[s] = nxt
            base[s] = rows[nxt] * p
            node[s] = root
            nxt += 1
            active += 1
    while active > 0:
        for _ in range(BLIND_SWEEPS):
            for s in range(BLIND_SLOTS):
                us = np.uint64(s)
                rec = step[np.uint64(node[us])]
                x = xs[np.uint64(base[us] + rec.feature)]
                node[us] = np.int64(rec.child0) + np.int64(x > rec.threshold)
        for s in range(BLIND_SLOTS):
            k = slot[s]
            t = node[s]
            if k < 0 or np.int64(step[t].child0) != t:
                continue
            ends[k] = t
            if nxt < n_rows:
                slot[s] = nxt
                base[s] = rows[nxt] * p
                node[s] = root
                nxt += 1
            else:
                slot[s] = -1
                base[s] = 0
                node[s] = leaf
                active -= 1


@jit(inline="always")
def _split_rows(X, lo, m, subset_splits, rows):
    """Rows lo .. lo + m - 1 of X into ``rows``: those the blind walk may take (every
    value finite, and no subset split in the forest) first, the others after; returns
    how many come first."""
    n_blind = 0
    n_other = 0
    for i in range(lo, lo + m):
        finite = not subset_splits
        if finite:
            for f in range(X.shape[1]):
                if not np.isfinite(X[i, f]):
                    finite = False
                    break
        if finite:
            rows[n_blind] = i
            n_blind += 1
        else:
            n_other += 1
            rows[m - n_other] = i
    # the others were written from the end: put them back in row order
    a = n_blind
    b = m - 1
    while a < b:
        tmp = rows[a]
        rows[a] = rows[b]
        rows[b] = tmp
        a += 1
        b -= 1
    return n_blind


@jit(inline="always")
def _chunk_ends(fa, routing, X, rows, m, n_blind, root, ends):
    """The end nodes of ``rows[:m]`` in the tree rooted at ``root`` (into ``ends[:m]``):
    the blind walk for the first ``n_blind`` rows, the careful walk for the others."""
    p = X.shape[1]
    if n_blind > 0 and p > 0:
        _blind_rows(fa, X.reshape(X.shape[0] * p), p, rows, n_blind, root, ends)
    else:
        n_blind = 0
    if m > n_blind:
        _walk_rows(fa, routing, X, rows[n_blind:], m - n_blind, root, ends[n_blind:])


@jit_parallel
def _forest_sums(fa, routing, X, chunk_rows, out):
    """Prediction: ``out[i] += value[end node of row i in tree b]`` for b = 0, 1, ...
    in that order (``out`` zeroed by the caller), chunks of rows in parallel."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_values = fa.value.shape[1]
    n_chunks = (n + chunk_rows - 1) // chunk_rows
    for c in prange(n_chunks):
        lo = c * chunk_rows
        m = min(n, lo + chunk_rows) - lo
        rows = np.empty(m, dtype=np.int64)
        ends = np.empty(m, dtype=np.int64)
        n_blind = _split_rows(X, lo, m, routing.subset_splits, rows)
        for b in range(n_trees):
            _chunk_ends(fa, routing, X, rows, m, n_blind, fa.roots[b], ends)
            for k in range(m):
                t = ends[k]
                i = rows[k]
                for j in range(n_values):
                    out[i, j] += fa.value[t, j]


@jit_parallel
def _forest_leaves(fa, routing, X, chunk_rows, out):
    """``out[i, b]`` = the node (of tree b's own numbering) where row i ends in tree b."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_chunks = (n + chunk_rows - 1) // chunk_rows
    for c in prange(n_chunks):
        lo = c * chunk_rows
        m = min(n, lo + chunk_rows) - lo
        rows = np.empty(m, dtype=np.int64)
        ends = np.empty(m, dtype=np.int64)
        n_blind = _split_rows(X, lo, m, routing.subset_splits, rows)
        for b in range(n_trees):
            root = fa.roots[b]
            _chunk_ends(fa, routing, X, rows, m, n_blind, root, ends)
            for k in range(m):
                out[rows[k], b] = ends[k] - root


@contextlib.contextmanager
def _threads(n_threads):
    """Numba's threads for the parallel passes: ``n_threads`` (None: Numba's own
    setting), capped at the threads it started; restored after."""
    if n_threads is None:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _rows(X):
    return as_kernel_array(X, np.float64)


def forest_sums(forest, X, n_threads=None):
    """Σ_b value[end node of each row of X in tree b], added in tree order (float64,
    (n, K)); divided by B it is the forest's prediction. X: float64 (n, p), NaN missing,
    no infinity (the caller checks)."""
    X = _rows(X)
    out = np.zeros((X.shape[0], forest.value.shape[1]), dtype=np.float64)
    if X.shape[0] == 0 or forest.n_trees == 0:
        return out
    fa = _kernel_arrays(forest)
    with _threads(n_threads), parallel_entry():
        _forest_sums(fa, forest.routing, X, CHUNK_ROWS, out)
    return out


def forest_apply(forest, X, n_threads=None):
    """The node where each row of X ends in each tree: int64 (n, B), node ids of each
    tree's own numbering (a leaf, or an internal node where a missing value stops)."""
    X = _rows(X)
    out = np.zeros((X.shape[0], forest.n_trees), dtype=np.int64)
    if X.shape[0] == 0 or forest.n_trees == 0:
        return out
    fa = _kernel_arrays(forest)
    with _threads(n_threads), parallel_entry():
        _forest_leaves(fa, forest.routing, X, CHUNK_ROWS, out)
    return out


@jit(inline="always")
def _decide_row(v, cost, use_cost):
    """The class predicted from the (average) values ``v``: the lowest index of the
    largest value, or with ``use_cost`` the lowest index of the least expected cost
    Σ_j C(i|j) v_j (``cost[j, i]`` = C(i|j); docs/maths.md §1)."""
    k = v.shape[0]
    best = 0
    if use_cost:
        best_cost = np.inf
        for i in range(k):
            e = 0.0
            for j in range(k):
                e += cost[j, i] * v[j]
            if e < best_cost:
                best_cost = e
                best = i
    else:
        for i in range(1, k):
            if v[i] > v[best]:
                best = i
    return best


@jit
def _decide(values, cost, use_cost, out):
    for i in range(values.shape[0]):
        out[i] = _decide_row(values[i], cost, use_cost)


def decide(values, cost, use_cost):
    """The class index predicted from each row of ``values`` (n, J): the largest value,
    or with ``use_cost`` the least expected cost under ``cost`` (ties: lowest index)."""
    values = as_kernel_array(values, np.float64)
    out = np.empty(values.shape[0], dtype=np.int64)
    if values.shape[0]:
        _decide(values, as_kernel_array(cost, np.float64), bool(use_cost), out)
    return out


# --------------------------------------------------------------------------- out of bag

class OOBTargets(NamedTuple):
    """The learning cases' targets and how a prediction is made and costed."""

    y_class: np.ndarray      # int32 class indices (empty for regression)
    y_reg: np.ndarray        # float64 responses (empty for classification)
    w: np.ndarray            # float64 case weights (empty with unit_weights)
    unit_weights: bool
    n_classes: int           # J; 0 for regression
    cost: np.ndarray         # float64 (J, J) C(i|j) as cost[j, i] (empty: regression)
    use_cost: bool           # predict by least expected cost (else the largest value)


def oob_targets(problem, settings, voting):
    """:class:`OOBTargets` of ``problem`` (the learning cases) and ``settings``."""
    w = as_kernel_array(problem.w, np.float64)
    if not problem.is_classification:
        return OOBTargets(np.zeros(0, np.int32), as_kernel_array(problem.y_reg, np.float64),
                          w, bool(problem.unit_weights), 0, np.zeros((0, 0)), False)
    use_cost = voting == "proba" and not settings.default_cost
    return OOBTargets(as_kernel_array(problem.y_class, np.int32), np.zeros(0), w,
                      bool(problem.unit_weights), int(problem.n_classes),
                      as_kernel_array(settings.cost, np.float64), bool(use_cost))


def risk_priors(settings):
    """The priors of the OOB error: None where they are estimated from the cases
    scored (``priors="empirical"``), else π."""
    if isinstance(settings.priors, str):
        if settings.priors == "empirical":
            return None
        return None if settings.priors != "equal" else "equal"
    return np.asarray(settings.priors, dtype=np.float64)


def sample_risk(class_loss, class_weight, priors):
    """The error of scored cases from their per-class sums, along the last axis:
    ``class_loss[..., j]`` = Σ w C(pred|j) and ``class_weight[..., j]`` = Σ w over the
    class-j cases scored. With ``priors`` None (empirical) the weighted mean cost Σ_j
    L_j / Σ_j W_j; with π (or ``"equal"``) Σ_j π(j) L_j / W_j over the classes with
    scored cases, divided by their Σ π(j) (docs/maths.md §5; Breiman's test-sample
    estimate). Regression passes one column of squared errors: their weighted mean.
    NaN where nothing was scored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if priors is None or class_loss.shape[-1] == 1:
            total = class_weight.sum(axis=-1)
            return np.where(total > 0, class_loss.sum(axis=-1) / total, np.nan)
        n_classes = class_loss.shape[-1]
        pi = (np.full(n_classes, 1.0 / n_classes) if isinstance(priors, str)
              else np.asarray(priors, dtype=np.float64))
        present = class_weight > 0
        rate = np.where(present, class_loss / np.where(present, class_weight, 1.0), 0.0)
        mass = (present * pi).sum(axis=-1)
        return np.where(mass > 0, (rate * pi).sum(axis=-1) / mass, np.nan)


@jit(inline="always")
def _case_loss(tg, i, v, is_class):
    """The predicted class of case i from its average values ``v`` (-1 for regression)
    and its loss: the cost C(pred | y) or the squared error."""
    if is_class:
        pred = _decide_row(v, tg.cost, tg.use_cost)
        y = tg.y_class[i]
        return tg.cost[y, pred], pred
    e = tg.y_reg[i] - v[0]
    return e * e, np.int64(-1)


@jit_parallel
def _oob_pass(fa, routing, X, inbag, tg, sums, counts, pred, chunk_loss, chunk_weight):
    """Out of bag: ``sums[i]`` += the value of row i's end node in every tree b for
    which case i is out of bag (``inbag[b]``'s bit i clear), in tree order, and
    ``counts[i]`` the number of those trees; ``pred[i]`` the class its average predicts.
    After tree b, ``chunk_loss[c, b, j]`` = Σ w_i l_i and ``chunk_weight[c, b, j]`` =
    Σ w_i over the class-j cases (j = 0 for regression) of chunk c with at least one OOB
    tree among 0..b, l_i their loss then (:func:`_case_loss`). Chunks of
    :data:`OOB_CHUNK` rows run in parallel."""
    n = X.shape[0]
    n_trees = fa.roots.shape[0] - 1
    n_values = fa.value.shape[1]
    is_class = tg.n_classes > 0
    n_chunks = chunk_loss.shape[0]
    for c in prange(n_chunks):
        lo = c * OOB_CHUNK
        m = min(n, lo + OOB_CHUNK) - lo
        rows = np.empty(m, dtype=np.int64)
        ends = np.empty(m, dtype=np.int64)
        loss = np.zeros(m)
        avg = np.empty(n_values)
        for b in range(n_trees):
            k = 0
            for i in range(lo, lo + m):
                if not (inbag[b, i >> 3] >> (i & 7)) & 1:
                    rows[k] = i
                    k += 1
            _walk_rows(fa, routing, X, rows, k, fa.roots[b], ends)
            for r in range(k):
                i = rows[r]
                t = ends[r]
                counts[i] += 1
                for j in range(n_values):
                    sums[i, j] += fa.value[t, j]
                for j in range(n_values):
                    avg[j] = sums[i, j] / counts[i]
                loss[i - lo], pred[i] = _case_loss(tg, i, avg, is_class)
            for i in range(lo, lo + m):
                if counts[i] > 0:
                    wi = 1.0 if tg.unit_weights else tg.w[i]
                    j = tg.y_class[i] if is_class else 0
                    chunk_loss[c, b, j] += wi * loss[i - lo]
                    chunk_weight[c, b, j] += wi


class OOBResult(NamedTuple):
    """Out-of-bag estimates over the learning cases (:func:`oob_estimates`)."""

    value: np.ndarray     # float64 (n, K): average over each case's OOB trees (NaN: none)
    n_trees: np.ndarray   # int64 (n,): trees for which the case is out of bag
    pred: np.ndarray      # int64 (n,): predicted class (-1: none, or regression)
    curve: np.ndarray     # float64 (B,): OOB error after the first b trees (NaN: no case)
    curve_weight: np.ndarray  # float64 (B,): weight of the cases with an OOB prediction


def oob_estimates(forest, X, inbag, targets, priors=None, n_threads=None):
    """The out-of-bag value of every learning case and the OOB error after each tree.

    ``X`` holds the learning cases (those of ``targets``), ``inbag`` the packed in-bag
    bits of :class:`ForestFit`. A case's OOB value is the average of ``forest.value`` at
    its end nodes in the trees for which it is out of bag, its prediction the class (or
    mean) of that average, and ``curve[b - 1]`` the error (:func:`sample_risk` with
    ``priors``, :func:`risk_priors`) after the first b trees of the cases with at least
    one OOB tree among them. The per-chunk sums are reduced in chunk order.
    """
    X = _rows(X)
    n = X.shape[0]
    n_trees = forest.n_trees
    k = forest.value.shape[1]
    sums = np.zeros((n, k))
    counts = np.zeros(n, dtype=np.int64)
    pred = np.full(n, -1, dtype=np.int64)
    n_chunks = (n + OOB_CHUNK - 1) // OOB_CHUNK
    slots = max(targets.n_classes, 1)
    chunk_loss = np.zeros((n_chunks, n_trees, slots))
    chunk_weight = np.zeros((n_chunks, n_trees, slots))
    if n and n_trees:
        fa = _kernel_arrays(forest)
        with _threads(n_threads), parallel_entry():
            _oob_pass(fa, forest.routing, X, as_kernel_array(inbag, np.uint8), targets,
                      sums, counts, pred, chunk_loss, chunk_weight)
    loss = np.zeros((n_trees, slots))
    weight = np.zeros((n_trees, slots))
    for c in range(n_chunks):  # in chunk order, whatever ran them
        loss += chunk_loss[c]
        weight += chunk_weight[c]
    curve = sample_risk(loss, weight, priors)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = sums / counts[:, None]
    value[counts == 0] = np.nan
    return OOBResult(value, counts, pred, curve, weight.sum(axis=1))


# --------------------------------------------------------------------------- importance

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@jit(inline="always")
def _mix(z):
    """splitmix64's output function (Steele, Lea & Flood 2014)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@jit
def _permutation(seed, j, m, out):
    """``out[:m]`` = a permutation of 0..m-1, a function of (``seed``, ``j``) alone: a
    Fisher-Yates shuffle driven by splitmix64 from the state ``mix(seed + (j + 1) γ)``
    (each swap index a 64-bit draw modulo i + 1; the bias is below m / 2**64)."""
    state = _mix(np.uint64(seed) + np.uint64(j + 1) * _GOLDEN)
    for i in range(m):
        out[i] = i
    for i in range(m - 1, 0, -1):
        state = state + _GOLDEN
        r = _mix(state) % np.uint64(i + 1)
        k = np.int64(r)
        tmp = out[i]
        out[i] = out[k]
        out[k] = tmp


def permutation(seed, j, m):
    """The permutation of m OOB cases that :func:`permutation_importance` applies to
    feature j of a tree whose permutation seed is ``seed`` (case k takes the value of
    case ``perm[k]``)."""
    out = np.empty(m, dtype=np.int64)
    _permutation(np.uint64(seed), np.int64(j), np.int64(m), out)
    return out


@jit
def _end_node(fa, routing, xb, root):
    """The end node of the one row of ``xb`` (1, p) in the tree rooted at ``root``."""
    step, left = fa.step, fa.left
    t = root
    while True:
        rec = step[t]
        child = np.int64(rec.child0)
        if child != t:
            x = xb[0, rec.feature]
            if x == x:
                t = child + np.int64(x > rec.threshold)
                continue
        if left[t] < 0:
            return t
        d = _routed(xb, 0, t, left, fa.feature, fa.threshold, routing)
        if d < 0:
            return t
        t = d


@jit_parallel
def _permuted_losses(fa, routing, X, oob, oob_start, tg, node_pred, seeds, loss):
    """Permutation importance: task (b, j) for b < B, j in -1..p-1 walks tree b's OOB
    cases ``oob[oob_start[b]:oob_start[b + 1]]`` with feature j permuted among them
    (j = -1: none) and writes to ``loss[b, j + 1, y]`` Σ w C(pred | y) over its class-y
    cases (classification; ``node_pred`` the class each node predicts) or Σ w (y - ȳ)²
    (regression, y = 0)."""
    n_trees = fa.roots.shape[0] - 1
    p = X.shape[1]
    is_class = tg.n_classes > 0
    n_tasks = n_trees * (p + 1)
    for task in prange(n_tasks):
        b = task // (p + 1)
        j = task % (p + 1) - 1
        lo = oob_start[b]
        m = oob_start[b + 1] - lo
        perm = np.empty(m, dtype=np.int64)
        if j >= 0:
            _permutation(np.uint64(seeds[b]), np.int64(j), np.int64(m), perm)
        xb = np.empty((1, p))
        root = fa.roots[b]
        for k in range(m):
            i = oob[lo + k]
            for f in range(p):
                xb[0, f] = X[i, f]
            if j >= 0:
                xb[0, j] = X[oob[lo + perm[k]], j]
            t = _end_node(fa, routing, xb, root)
            wi = 1.0 if tg.unit_weights else tg.w[i]
            if is_class:
                y = tg.y_class[i]
                loss[b, j + 1, y] += wi * tg.cost[y, node_pred[t]]
            else:
                e = tg.y_reg[i] - fa.value[t, 0]
                loss[b, j + 1, 0] += wi * e * e


class Importance(NamedTuple):
    """Breiman's OOB permutation importance (:func:`permutation_importance`)."""

    delta: np.ndarray           # float64 (B, p): Δ_bj, NaN for a tree without OOB cases
    raw: np.ndarray             # float64 (p,): mean of Δ_bj over the trees
    se: np.ndarray              # float64 (p,): its standard error
    scaled: np.ndarray          # float64 (p,): raw / se (0 where both are 0)
    raw_by_class: np.ndarray    # float64 (p, J): per class (classification), else (p, 0)
    se_by_class: np.ndarray     # float64 (p, J)
    scaled_by_class: np.ndarray  # float64 (p, J)
    tree_error: np.ndarray      # float64 (B,): each tree's own OOB error


def _mean_se(delta, present):
    """randomForest's mean and standard error over the trees (axis 0) where
    ``present``: mean Δ and sqrt((mean Δ² - (mean Δ)²) / B'), B' the trees counted;
    scaled = mean / SE (0 where both are 0)."""
    count = present.sum(axis=0)
    d = np.where(present, delta, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=0) / count
        var = (d * d).sum(axis=0) / count - mean * mean
        se = np.sqrt(np.maximum(var, 0.0) / count)
        scaled = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    mean = np.where(count > 0, mean, np.nan)
    se = np.where(count > 0, se, np.nan)
    scaled = np.where(count > 0, scaled, np.nan)
    return mean, se, scaled


def oob_rows(inbag, n):
    """Every tree's out-of-bag cases, in case order: ``(rows, start)`` with tree b's in
    ``rows[start[b]:start[b + 1]]``."""
    mask = ~inbag_mask(inbag, n)
    start = np.zeros(mask.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=start[1:])
    return np.ascontiguousarray(np.nonzero(mask)[1], dtype=np.int64), start


def permutation_seeds(random_state, n_trees):
    """Each tree's permutation seed: a function of (``random_state``, b)."""
    return np.array([tree_seed_sequence(random_state, b, PERMUTATION_STREAM)
                     .generate_state(1, np.uint64)[0] for b in range(n_trees)],
                    dtype=np.uint64)


def permutation_importance(forest, X, inbag, targets, priors=None, random_state=0,
                           n_threads=None):
    """Breiman's OOB permutation importance (Breiman 2001, §10; randomForest's type 1).

    For tree b with OOB cases O_b, e_b is the tree's own error on O_b (each case
    predicted by the tree alone, :func:`sample_risk` with ``priors``), and e_bj the
    same after the values of feature j are permuted among O_b (:func:`permutation`,
    seeded per tree from ``random_state``). Δ_bj = e_bj - e_b; ``raw`` is its mean over
    the trees, ``se`` = sqrt((mean Δ² - raw²) / B) as randomForest computes it,
    ``scaled`` = raw / se. Per class c (classification): the same with e the weighted
    mean cost C(pred | c) of the class-c cases of O_b. Regression: squared errors
    (randomForest's %IncMSE).
    """
    X = _rows(X)
    n, p = X.shape
    n_trees = forest.n_trees
    rows, start = oob_rows(inbag, n)
    is_class = targets.n_classes > 0
    slots = max(targets.n_classes, 1)
    loss = np.zeros((n_trees, p + 1, slots))
    if is_class:
        node_pred = decide(forest.value, targets.cost, targets.use_cost)
    else:
        node_pred = np.zeros(0, dtype=np.int64)
    seeds = permutation_seeds(random_state, n_trees)
    if n_trees and n:
        fa = _kernel_arrays(forest)
        with _threads(n_threads), parallel_entry():
            _permuted_losses(fa, forest.routing, X, rows, start, targets, node_pred, seeds,
                             loss)
    w = np.ones(n) if targets.unit_weights else targets.w
    mask = ~inbag_mask(inbag, n)
    y = targets.y_class if is_class else np.zeros(n, dtype=np.int64)
    weight = np.zeros((n_trees, slots))
    for b in range(n_trees):
        weight[b] = np.bincount(y[mask[b]], weights=w[mask[b]], minlength=slots)
    err = sample_risk(loss, weight[:, None, :], priors)  # (B, p + 1)
    delta = err[:, 1:] - err[:, :1]
    present = np.broadcast_to((weight.sum(axis=1) > 0)[:, None], delta.shape)
    raw, se, scaled = _mean_se(delta, present)
    if is_class:
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = loss / weight[:, None, :]
        cdelta = rate[:, 1:, :] - rate[:, :1, :]  # (B, p, J)
        cpresent = np.broadcast_to((weight > 0)[:, None, :], cdelta.shape)
        craw, cse, cscaled = _mean_se(cdelta, cpresent)
    else:
        craw = cse = cscaled = np.zeros((p, 0))
    return Importance(delta, raw, se, scaled, craw, cse, cscaled, err[:, 0])
