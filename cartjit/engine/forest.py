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
   (:func:`tree_seed_sequence`, one stream each), drawn in Python: tree b is the same
   whatever the number of threads, the order the trees are grown in, or
   ``n_estimators``.
3. **Growth.** The trees are grown on a pool of ``n_jobs`` Python threads, each tree on
   one thread (the kernels release the GIL), as the cross-validation grows its folds;
   each tree writes only its own slots, so the forest is bit-identical for any
   ``n_jobs``.
4. **Storage** (:func:`combine_trees`): each tree is reduced on its thread, as soon as
   it is grown, to what the forest keeps (:func:`digest_tree`). The flat forest: the
   trees' node arrays concatenated, child ids offset to absolute node ids, ``roots[b]``
   the first node of tree b; one :class:`cartjit.engine.forest_passes.ForestRouting`
   for all trees, with a row only for the nodes with a subset split or surrogates
   (their level-set and surrogate rows offset) and the majority side of every node in 2
   bits: 16 bytes a node plus the values, where the routing is not needed. The trees
   themselves: a :class:`TreeStore`, each node's columns once.
5. **Prediction, out-of-bag, permutation importance**: the compiled passes of
   :mod:`cartjit.engine.forest_passes` (:func:`forest_sums`, :func:`forest_apply`,
   :func:`oob_estimates`, :func:`permutation_importance`, re-exported here), each the
   same on any number of threads. The kernels live there so that they carry no code of
   the modules this one imports to grow the trees (``fit``, ``cv``).
6. **Importance**: impurity-based (MDI, :func:`tree_importance`, per tree) here, and
   Breiman's OOB permutation importance, whose permutations are seeded per tree from
   ``random_state`` (:func:`permutation_seeds`).

Nothing here changes how a tree is grown: with ``max_features = 0`` (every feature), no
bootstrap and one tree, the forest's tree is the single tree of the same parameters.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import forest_passes as passes
from .cv import cross_validate, task_pool
from .fit import class_risk, fit_tree, split_factor
from .impurity import ENTROPY
from .forest_passes import (MAJORITY_LEFT, MAJORITY_RIGHT, MAJORITY_STOP, ForestRouting,
                            OOBResult, OOBTargets, Importance, decide, forest_apply,
                            forest_sums, inbag_mask, oob_estimates, oob_rows,
                            oob_targets, permutation, risk_priors,
                            sample_risk)
from .predict import check_use_surrogate
from .presort import presort, release_free_memory, subset_keys
from .pruning import prune_tree, weakest_link_threads
from .scaling import Scale, check_class_tables, restore
from .tree import LEAF, TABLE_FIELDS, Tree

__all__ = ["Forest", "ForestPlan", "ForestFit", "TreeFit", "TreePart", "TreeStore",
           "digest_tree", "combine_trees", "OOBTargets", "OOBResult",
           "Importance", "VOTING", "grow_forest", "grow_trees", "forest_fit",
           "assemble_forest", "node_values",
           "tree_importance", "class_proba", "forest_sums", "forest_apply", "oob_estimates",
           "permutation_importance", "permutation", "decide", "tree_seed_sequence",
           "draw_counts", "inbag_mask", "oob_targets", "oob_rows", "risk_priors",
           "sample_risk", "permutation_seeds", "cv_seed"]

#: How a classification forest turns its trees into probabilities: ``"proba"`` averages
#: each tree's class probabilities p(j | t) at the case's leaf (scikit-learn's forests),
#: ``"vote"`` counts each tree's label j*(t) as one vote (R's randomForest).
VOTING = ("proba", "vote")

#: Where the trees' parts take about this many bytes or more, the memory of the parts
#: is handed back to the operating system as their columns are copied (:func:`_gather`;
#: what it costs and spares: docs/design.md, "Figures behind the kernels' choices").
RELEASE_MIN_BYTES = 1 << 20


class Forest(NamedTuple):
    """A fitted forest as flat arrays: the node arrays of its B trees concatenated.

    Node ids are absolute: tree b holds nodes ``roots[b]`` to ``roots[b + 1] - 1``, its
    root first, in its own order (node ``roots[b] + i`` is node i of the tree). ``left``
    is -1 at a leaf, and the right child is ``left + 1`` (:attr:`right`); ``feature`` is
    -1 and ``threshold`` NaN at a leaf; a subset split has a NaN threshold and a row of
    ``routing.level_sets``. ``value`` holds what a case reaching the node contributes:
    class probabilities p(j | t) (``voting="proba"``), a one-hot vote for j*(t)
    (``"vote"``), or the mean ȳ(t) (regression). ``routing`` routes a case where a
    threshold cannot (:class:`cartjit.engine.forest_passes.ForestRouting`: rows only for
    the nodes with a subset split or surrogates, their level-set and surrogate rows
    offset to the concatenated tables, and every node's majority side).
    """

    feature: np.ndarray    # int32 (N,), -1 at leaves
    threshold: np.ndarray  # float64 (N,), NaN at leaves and subset splits
    left: np.ndarray       # int32 (N,) absolute ids (int64 past 2**31 - 1 nodes), -1 leaf
    value: np.ndarray      # float64 (N, K)
    roots: np.ndarray      # int64 (B + 1,): tree b is nodes roots[b] .. roots[b+1] - 1
    routing: ForestRouting  # subset splits, surrogates (only where a node has them), and
    #                         the majority side of every node (2 bits)

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0] - 1)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays, the routing's included."""
        return (sum(a.nbytes for a in (self.feature, self.threshold, self.left,
                                        self.value, self.roots)) + self.routing.nbytes)

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
    trees: "TreeStore"             # the trees (store[b]: tree b's TreeFit)
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
    ``n_jobs`` Python threads, each on one thread, and each is reduced to what the
    forest keeps (:func:`digest_tree`) on its thread as soon as it is grown, so that
    the full trees never all coexist. Returns a :class:`ForestFit`.
    """
    if problem.is_classification:  # the same check for every tree: made once, here
        check_class_tables(problem.X.shape[0], problem.n_classes, settings)
    parts, inbag, seeds = grow_trees(problem, settings, plan, 0, int(plan.n_estimators),
                                     n_jobs, digest=True)
    return forest_fit(problem, settings, plan, parts, inbag, seeds)


def grow_trees(problem, settings, plan, start, stop, n_jobs=1, presorted=None,
               digest=False):
    """Trees ``start`` to ``stop - 1`` of the forest of ``plan``: ``(TreeFit list, in-bag
    bits (stop - start, ceil(n / 8)), feature seeds)``; with ``digest`` each tree is
    a :class:`TreePart` (:func:`digest_tree`) instead. Tree b depends on b alone, so
    the blocks of any partition of 0..B-1, grown anywhere (a Dask worker's block,
    :mod:`cartjit._dask`), make the same forest. ``presorted``: the presort of
    ``problem.X`` when the caller has it (it is only read), else made here."""
    n = problem.X.shape[0]
    # one presort for every tree (the CV-pruned trees presort their own samples)
    if presorted is None and not plan.cv_folds:
        presorted = presort(problem.X, problem.n_levels, max(1, int(n_jobs)))
    n_trees = int(stop) - int(start)
    inbag = np.zeros((n_trees, (n + 7) // 8), dtype=np.uint8)
    seeds = np.zeros(n_trees, dtype=np.int64)
    shape = (settings, plan.voting, problem.n_classes, problem.X.shape[1])

    def one(b):
        fit, in_bag, seed = _fit_one(problem, settings, plan, presorted, b)
        inbag[b - start] = np.packbits(in_bag, bitorder="little")  # tree b's own row
        seeds[b - start] = seed
        return digest_tree(fit, *shape) if digest else fit

    if n_jobs > 1 and n_trees > 1:
        with task_pool(min(int(n_jobs), n_trees)) as pool:
            trees = list(pool.map(one, range(start, stop)))
    else:
        trees = [one(b) for b in range(start, stop)]
    return trees, inbag, seeds


def forest_fit(problem, settings, plan, trees, inbag, seeds):
    """The :class:`ForestFit` of the grown ``trees`` (all B, in the order of b; each a
    :class:`TreeFit` or its :class:`TreePart`) with their in-bag bits and feature seeds:
    the flat forest, the store of the trees, each tree's MDI. ``trees`` (a list) is
    emptied on the way (:func:`combine_trees`)."""
    forest, store, importance = combine_trees(trees, settings, plan.voting,
                                              problem.n_classes, problem.X.shape[1])
    return ForestFit(forest, store, inbag, seeds, importance)


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


#: ``majority_left + 1`` (stop, right, left) to the routing's codes.
_MAJORITY_CODE = np.array([MAJORITY_STOP, MAJORITY_RIGHT, MAJORITY_LEFT], dtype=np.uint8)
#: No routing or surrogate rows (shared, never written).
_NO_ROWS = np.zeros((0, 3), dtype=np.int64)


def _forest_part(tree, values, use_surrogate):
    """Tree ``tree``'s share of the flat forest (:func:`assemble_forest`), its node ids
    and table rows its own: ``feature``, ``threshold``, ``left``, ``value``; the nodes
    with a routing row (a subset split, or surrogates where ``use_surrogate`` >= 1) and
    their rows, the surrogate rows (none with ``use_surrogate`` 0); the level sets; and
    with ``use_surrogate`` 2 each node's majority side (``MAJORITY_*``, uint8)."""
    with_sur = use_surrogate > 0
    lr, ns = tree.level_row, tree.n_surrogates
    ids = np.flatnonzero((lr >= 0) | (ns > 0) if with_sur else lr >= 0)
    part = {"feature": tree.feature, "threshold": tree.threshold, "left": tree.left,
            "value": values, "nodes": ids.astype(np.int64), "rows": _NO_ROWS,
            "level_sets": tree.level_sets}
    if ids.shape[0]:
        lr, ns = lr[ids].astype(np.int64), ns[ids].astype(np.int64) * with_sur
        part["rows"] = np.column_stack([lr, np.where(ns > 0, tree.surrogate_start[ids], 0),
                                        ns]).astype(np.int64)
    if with_sur:
        part["sur"] = _NO_ROWS
        part["sur_threshold"] = tree.surrogate_threshold
        if tree.surrogate_feature.shape[0]:
            part["sur"] = np.column_stack([
                tree.surrogate_feature, tree.surrogate_level_row,
                tree.surrogate_low_left]).astype(np.int64)
    if use_surrogate == 2:
        code = _MAJORITY_CODE[tree.majority_left + 1]  # -1, 0, 1: stop, right, left
        code[tree.left < 0] = MAJORITY_STOP
        part["majority"] = code
    return part


def _pack_majority(code):
    """The nodes' majority sides (``MAJORITY_*``, uint8, one a node) as
    :attr:`cartjit.engine.forest_passes.ForestRouting.majority`: 2 bits a node, four
    nodes a byte, node t in bits 2 (t % 4) and 2 (t % 4) + 1 of byte t // 4."""
    n = code.shape[0]
    quads = np.zeros(4 * ((n + 3) // 4), dtype=np.uint8)
    quads[:n] = code
    quads = quads.reshape(-1, 4)
    return np.ascontiguousarray(quads[:, 0] | (quads[:, 1] << 2) | (quads[:, 2] << 4)
                                | (quads[:, 3] << 6), dtype=np.uint8)


def _gather(take, sizes, tail, dtype, release):
    """One array of the pieces ``take(0)``, ``take(1)``, ... (``sizes[b]`` rows each,
    ``tail`` the shape of a row), filled piece by piece. ``take(b)`` drops its source's
    reference to the piece, so that, with ``release``, the memory of the pieces copied
    is handed back to the operating system every :data:`RELEASE_MIN_BYTES`
    (:func:`cartjit.engine.presort.release_free_memory`): the C library would keep it,
    in holes too small for the whole, and the pieces and the whole would take memory
    in full at once."""
    if not release:  # small: one concatenation (fewer NumPy calls)
        pieces = [take(b) for b in range(len(sizes))]
        if not pieces:
            return np.empty((0,) + tuple(tail), dtype=dtype)
        return np.ascontiguousarray(np.concatenate(pieces).astype(dtype, copy=False))
    out = np.empty((int(sum(sizes)),) + tuple(tail), dtype=dtype)
    at = freed = 0
    for b, size in enumerate(sizes):
        piece = take(b)
        out[at:at + size] = piece
        at += size
        freed += piece.nbytes
        del piece
        if freed >= RELEASE_MIN_BYTES:
            release_free_memory()
            freed = 0
    if freed:
        release_free_memory()
    return out


def _pop_concat(parts, key, shape, dtype, offset=None, release=False):
    """``parts[b][key]`` concatenated over b (:func:`_gather`: each part's array dropped
    as soon as it is copied), ``offset(b, array)`` applied to each first; ``shape`` is
    that of the result without parts (its trailing dimensions those of every part)."""
    sizes = [part[key].shape[0] for part in parts]

    def take(b):
        x = parts[b].pop(key)
        return x if offset is None else offset(b, x)

    return _gather(take, sizes, shape[1:], dtype, release)


def _concat_forest(parts, use_surrogate):
    """The :class:`Forest` of the trees' :func:`_forest_part` dicts (all B, in the order
    of b), emptied column by column as the forest's columns are made."""
    roots = _offsets([p["left"].shape[0] for p in parts])
    n_total = int(roots[-1])
    index = np.int32 if n_total < np.iinfo(np.int32).max else np.int64
    n_words = max([int(p["level_sets"].shape[2]) for p in parts], default=0)
    level_rows = _offsets([p["level_sets"].shape[0] for p in parts])
    with_sur = use_surrogate > 0
    sur_rows = _offsets([p["sur"].shape[0] if with_sur else 0 for p in parts])
    level_sets = np.zeros((int(level_rows[-1]), 2, n_words), dtype=np.uint64)
    for b, part in enumerate(parts):
        sets = part.pop("level_sets")
        level_sets[level_rows[b]:level_rows[b + 1], :, :sets.shape[2]] = sets

    def local_rows(b, rows):
        out = rows.copy()
        out[:, 0] = np.where(rows[:, 0] >= 0, rows[:, 0] + level_rows[b], -1)
        out[:, 1] = np.where(rows[:, 2] > 0, rows[:, 1] + sur_rows[b], 0)
        return out

    def local_sur(b, sur):
        out = sur.copy()
        out[:, 1] = np.where(sur[:, 1] >= 0, sur[:, 1] + level_rows[b], -1)
        return out

    subset_splits = bool(np.any([np.any(p["rows"][:, 0] >= 0) for p in parts]))
    n_values = parts[0]["value"].shape[1] if parts else 1
    big = n_total * (16 + 8 * n_values) >= RELEASE_MIN_BYTES
    feature = _pop_concat(parts, "feature", (0,), np.int32, release=big)
    threshold = _pop_concat(parts, "threshold", (0,), np.float64, release=big)
    left = _pop_concat(parts, "left", (0,), index,
                       lambda b, x: np.where(x >= 0, x.astype(np.int64) + roots[b], -1),
                       release=big)
    value = _pop_concat(parts, "value", (0, n_values), np.float64, release=big)
    nodes = _pop_concat(parts, "nodes", (0,), np.int64, lambda b, x: x + roots[b])
    rows = _pop_concat(parts, "rows", (0, 3), np.int64, local_rows)
    if with_sur:
        sur = _pop_concat(parts, "sur", (0, 3), np.int64, local_sur)
        sur_threshold = _pop_concat(parts, "sur_threshold", (0,), np.float64)
    else:
        sur, sur_threshold = np.zeros((0, 3), np.int64), np.zeros(0, np.float64)
    majority = np.zeros(0, dtype=np.uint8)
    if use_surrogate == 2:
        majority = _pack_majority(_pop_concat(parts, "majority", (0,), np.uint8))
    routing = ForestRouting(nodes, rows, sur, sur_threshold, level_sets, majority,
                            subset_splits, use_surrogate)
    return Forest(feature, threshold, left, value, roots, routing)


def assemble_forest(trees, values, use_surrogate=2):
    """One :class:`Forest` of the flat ``trees`` (:class:`cartjit.engine.tree.Tree`) with
    the per-node ``values`` of each (:func:`node_values`).

    The routing (:class:`cartjit.engine.forest_passes.ForestRouting`) takes a row only
    for the nodes with a subset split, or with surrogate splits where ``use_surrogate``
    >= 1 lets a case take them; their level-set and surrogate rows offset to the
    concatenated tables (no surrogate table when ``use_surrogate`` is 0); and, where
    ``use_surrogate`` is 2, every node's majority side in 2 bits."""
    use_surrogate = check_use_surrogate(use_surrogate)
    return _concat_forest([_forest_part(t, v, use_surrogate)
                           for t, v in zip(trees, values)], use_surrogate)


class TreePart(NamedTuple):
    """One tree of a forest reduced to what the forest keeps (:func:`digest_tree`)."""

    nodes: dict            # its share of the flat forest (:func:`_forest_part`)
    columns: dict          # T_max's columns for the TreeStore (:func:`_store_part`)
    n_nodes: int           # the nodes of T_max
    importance: np.ndarray  # float64 (p,): its MDI (:func:`tree_importance`)
    priors: np.ndarray | None
    class_totals: np.ndarray | None
    alpha: float | None


def digest_tree(fit, settings, voting, n_classes, n_features):
    """Tree ``fit`` (a :class:`TreeFit`) reduced to a :class:`TreePart`: its share of the
    flat forest (from its pruned tree, with :func:`node_values`), its MDI, and the
    columns of its T_max that the :class:`TreeStore` keeps, copied, so that nothing of
    the grown tree stays alive once ``fit`` is dropped (a tree under
    :data:`SMALL_TREE_NODES` nodes keeps its own arrays)."""
    use_surrogate = check_use_surrogate(settings.use_surrogate)
    nodes = _forest_part(fit.tree, node_values(fit, settings, voting, n_classes),
                         use_surrogate)
    if fit.tree.n_nodes >= SMALL_TREE_NODES:
        for key in ("feature", "threshold", "left", "sur_threshold"):
            if key in nodes:  # the tree's columns are views of its grown tables
                nodes[key] = nodes[key].copy()
    costs = None if n_classes == 0 else _Costs(fit.priors, fit.class_totals,
                                                *_forest_costs(settings))
    columns = _store_part(fit.tree_max, fit.tree is fit.tree_max, costs)
    return TreePart(nodes, columns, fit.tree_max.n_nodes,
                    tree_importance(fit, settings, n_features), fit.priors,
                    fit.class_totals, fit.alpha)


def combine_trees(trees, settings, voting, n_classes, n_features):
    """The flat :class:`Forest`, the :class:`TreeStore` and the per-tree MDI (B, p) of
    ``trees`` (all B, in the order of b; each a :class:`TreeFit` or a
    :class:`TreePart`). The list is emptied as its trees are digested and combined."""
    parts = []
    for b in range(len(trees)):
        t, trees[b] = trees[b], None
        parts.append(t if isinstance(t, TreePart) else
                     digest_tree(t, settings, voting, n_classes, n_features))
        del t
    trees.clear()
    importance = (np.stack([t.importance for t in parts]) if parts
                  else np.zeros((0, n_features)))
    forest = _concat_forest([t.nodes for t in parts],
                            check_use_surrogate(settings.use_surrogate))
    store = TreeStore(parts, forest, _forest_costs(settings) if n_classes else None)
    return forest, store, importance


#: The node columns of a tree that :class:`TreeStore` can derive from its other
#: columns, by the rules of the contract (:mod:`cartjit.engine.tree`), each from
#: ``left``, ``n_node_samples``, ``value`` and those before it in this order.
DERIVABLE = ("impurity", "right", "parent", "depth", "majority_left", "n_primary",
             "weighted_n_node_samples", "risk", "label", "alpha")


class _Costs(NamedTuple):
    """What a classification tree's risks and impurities are computed with."""

    priors: np.ndarray        # the tree's π(j)
    class_totals: np.ndarray  # the tree's N_j
    cost: np.ndarray          # C(i|j), every tree's
    default_cost: bool        # C is 0-1 (the split search's priors are π)
    criterion: int            # impurity.GINI, ENTROPY or TWOING


def _forest_costs(settings):
    """The part of :class:`_Costs` every tree of a classification forest shares."""
    return settings.cost, bool(settings.default_cost), int(settings.criterion)


def _class_impurity(value, costs):
    """The Gini index i(t) of every node from its class counts, operation for operation
    as the growth computes it (:func:`cartjit.engine.impurity.impurity_from_counts`,
    p(j|t) ∝ c_j N_j(t) with c_j the split search's factors; twoing trees report it
    too). Entropy has no rule here: NumPy's ``log2`` differs from the compiled one in
    the last bit at a few nodes of most trees, so such a tree keeps its column."""
    factor = split_factor(costs.priors, costs.class_totals, costs.cost, costs.default_cost)
    q = value * factor
    total = q[:, 0].copy()
    for j in range(1, q.shape[1]):
        total += q[:, j]
    out = np.zeros(q.shape[0], dtype=np.float64)
    some = total > 0.0
    p = q[some] / total[some, None]
    acc = np.zeros(p.shape[0], dtype=np.float64)
    for j in range(p.shape[1]):
        acc += p[:, j] * p[:, j]
    out[some] = 1.0 - acc
    return out


def _derive(name, get, costs=None, memo=None):
    """Column ``name`` (:data:`DERIVABLE`) of a tree, ``get(k)`` giving its column k:
    a Gini or twoing tree's i(t) from its class counts (:func:`_class_impurity`); the
    right child ``left + 1``; the parent; the depth; the majority side (1 when the
    left child holds more learning cases, 0 fewer, -1 as many; 0 at a leaf);
    ``n_primary`` as without missing values (the node's cases at a split, 0 at a leaf);
    the weight as the sum of the class counts; R(t) and j*(t) as the fit computes them
    from the class counts and ``costs`` (:class:`_Costs`,
    :func:`cartjit.engine.fit.class_risk`), or for a regression tree (``costs`` None)
    R(t) = max(i(t), 0) W(t) / W(root); the per-node α of the weakest-link pass
    (:func:`cartjit.engine.pruning.with_alpha`). ``None`` where there is no rule (a
    regression's impurities, weights and labels, an entropy tree's impurities). A tree
    whose column the rule does not give bit for bit keeps that column
    (:class:`TreeStore` checks). ``memo``, a dict for one tree, keeps what several
    columns share (the risks with the labels, the tree's levels)."""
    memo = {} if memo is None else memo
    if name == "impurity":  # no rule for regression, nor entropy (_class_impurity)
        if costs is None or costs.criterion == ENTROPY:
            return None
        return _class_impurity(get("value"), costs)
    if name in ("risk", "label"):
        if costs is not None:
            if "class_risk" not in memo:
                memo["class_risk"] = class_risk(get("value"), costs.priors,
                                                costs.class_totals, costs.cost)
            risk, label = memo["class_risk"]
            return risk if name == "risk" else label
        if name == "label":
            return None
        weight = get("weighted_n_node_samples")
        return np.maximum(get("impurity"), 0.0) * weight / weight[0]
    if name == "alpha":
        return weakest_link_threads(get("left"), get("right"), get("parent"), get("risk"),
                                    1)[0]
    left, n_cases, value = get("left"), get("n_node_samples"), get("value")
    split = left >= 0
    inner = np.flatnonzero(split)
    kids = left[inner].astype(np.int64)
    if name == "right":
        return np.where(split, left + 1, -1).astype(np.int32)
    if name == "parent":
        out = np.full(left.shape[0], -1, dtype=np.int32)
        out[kids] = inner
        out[kids + 1] = inner
        return out
    if name == "depth":
        out = np.zeros(left.shape[0], dtype=np.int32)
        for d, level in enumerate(_levels(left, memo)):
            kids = left[level].astype(np.int64)
            out[kids] = d + 1
            out[kids + 1] = d + 1
        return out
    if name == "majority_left":
        out = np.zeros(left.shape[0], dtype=np.int32)
        n_left, n_right = n_cases[kids], n_cases[kids + 1]
        out[inner] = np.where(n_left > n_right, 1, np.where(n_left == n_right, -1, 0))
        return out
    if name == "n_primary":
        return np.where(split, n_cases, 0).astype(np.int64)
    if value.shape[1] < 2:  # regression: the weights are not the values' sum
        return None
    return value.sum(axis=1)


#: The node columns whose split nodes hold the sum of their two children's (counts and
#: weights of the learning cases, where every weight is an integer, as a bootstrap's
#: counts are): :class:`TreeStore` keeps them at the leaves only (:class:`_Leaves`).
SUMMED = ("n_node_samples", "value", "weighted_n_node_samples")


class _Leaves(NamedTuple):
    """A summed column (:data:`SUMMED`) of one tree kept at its leaves, in node order."""

    values: np.ndarray


def _levels(left, memo=None):
    """The split nodes of the tree of ``left`` level by level from the root (children
    ``left`` and ``left + 1``), kept in ``memo`` when given."""
    if memo is not None and "levels" in memo:
        return memo["levels"]
    levels, level = [], np.zeros(min(1, left.shape[0]), dtype=np.int64)
    while level.shape[0]:
        inner = level[left[level] >= 0]
        if inner.shape[0]:
            levels.append(inner)
        kids = left[inner].astype(np.int64)
        level = np.concatenate([kids, kids + 1])
    if memo is not None:
        memo["levels"] = levels
    return levels


def _sum_up(left, leaves, memo=None):
    """The column whose leaves (``left`` -1, in node order) hold ``leaves`` and whose
    split nodes hold the sum of their children's, left + right (children ``left`` and
    ``left + 1``), filled from the deepest level up."""
    out = np.empty((left.shape[0],) + leaves.shape[1:], dtype=leaves.dtype)
    out[left < 0] = leaves
    for inner in reversed(_levels(left, memo)):
        kids = left[inner].astype(np.int64)
        out[inner] = out[kids] + out[kids + 1]
    return out


def _bits(a):
    """A 1-d array's elements as unsigned integers of their size (NaNs compare equal
    to themselves, bit for bit)."""
    return a.view(f"u{a.dtype.itemsize}")


def _same_bits(a, b):
    """Whether two 1-d arrays hold the same bits in the same shape and dtype."""
    return (a is not None and a.dtype == b.dtype and a.shape == b.shape
            and bool(np.array_equal(_bits(a), _bits(b))))


#: A tree of fewer nodes keeps its columns as they are (:func:`_store_part`): its
#: checks and copies, a few dozen NumPy calls, would cost more than its memory is worth
#: (docs/benchmarks.md, "Storage and the fit's memory").
SMALL_TREE_NODES = 512

#: The tree's int64 columns: counts, which the store keeps as int32 where they fit.
_COUNT_FIELDS = ("n_node_samples", "n_primary", "surrogate_count", "competitor_count")

#: How :func:`_store_part` marks a column it does not keep: derived again
#: (:data:`DERIVABLE`), or read from the flat forest.
DERIVED, SHARED = "derived", "shared"


def _store_part(tree, unpruned, costs):
    """The columns of T_max ``tree`` for the :class:`TreeStore` (``costs`` its
    :class:`_Costs`, None for regression): each a copy, or
    :data:`DERIVED` where the tree follows the rule that derives it (:func:`_derive`,
    from its own columns), its leaves' values (:class:`_Leaves`) where its split nodes
    hold their children's sums (:data:`SUMMED`), :data:`SHARED` for
    ``feature``, ``threshold``, ``left`` (and a regression's ``value``) where the tree
    is not pruned (the flat forest holds the same numbers, ``left`` as absolute ids), a
    1-element array where every node holds that one value (node columns only); counts
    as int32 where they fit."""
    if tree.n_nodes < SMALL_TREE_NODES:  # its own arrays: checks would cost more
        return {name: getattr(tree, name) for name in Tree._fields}
    node_fields = tree.node_fields()
    shared = ("feature", "threshold", "left") + (("value",) if costs is None else ())
    out, memo = {}, {}
    for name in Tree._fields:
        col = getattr(tree, name)
        if unpruned and name in shared:
            out[name] = SHARED
        elif name in DERIVABLE and _same_bits(
                _derive(name, lambda k: getattr(tree, k), costs, memo), col):
            out[name] = DERIVED
        elif name in SUMMED and _same_sums(tree.left, col, memo):
            leaves = col[tree.left < 0]
            out[name] = _Leaves(_narrow(leaves) if leaves.dtype == np.int64
                                else leaves.copy())
        elif (name in node_fields and col.ndim == 1 and col.shape[0]
              and np.all(_bits(col) == _bits(col)[0])):
            out[name] = col[:1].copy()
        else:
            out[name] = _narrow(col) if col.dtype == np.int64 else col.copy()
    return out


def _same_sums(left, col, memo=None):
    """Whether column ``col`` of the tree of ``left`` is the sum of its leaves'
    (:func:`_sum_up`), bit for bit."""
    full = _sum_up(left, col[left < 0], memo)
    return bool(np.array_equal(_bits(full.reshape(-1)), _bits(col.reshape(-1))))


def _fits_int32(counts):
    """Whether every value of ``counts`` fits an int32 (and none is negative)."""
    return not counts.shape[0] or (int(counts.min()) >= 0
                                   and int(counts.max()) < 2 ** 31)


def _narrow(counts):
    """int64 ``counts`` as an int32 copy where every value fits, else an int64 copy."""
    return counts.astype(np.int32) if _fits_int32(counts) else counts.copy()


class TreeStore:
    """The trees of a fitted forest, each node's columns kept once (docs/forests.md,
    "The flat forest").

    ``store[b]`` is tree b's :class:`TreeFit` (T_max, its pruned tree, priors, class
    totals, α), equal bit for bit to the one the fit grew: the columns of T_max are
    kept concatenated over the trees (tree b's nodes ``roots[b]`` to ``roots[b + 1] -
    1``) and sliced without a copy, except

    * a column that holds one value in every node of every tree (``level_row`` -1 and
      the surrogate and competitor columns 0 without categorical features or missing
      values, for instance): its value, filled again for the tree;
    * the columns the rules of the tree derive from ``left``, ``n_node_samples`` and
      ``value`` (:data:`DERIVABLE`: the structure, the weights, i(t), R(t), j*(t), α),
      where every tree follows them: derived again;
    * the counts and weights whose split nodes hold their children's sum
      (:data:`SUMMED`), where every tree's do: kept at the leaves (:attr:`summed`, tree
      b's leaves at ``leaf_roots[b]`` ..) and summed up again;
    * where no tree is pruned, ``feature`` and ``threshold`` (and a regression's
      ``value``, ȳ(t)): views of the flat forest's own columns, which hold the same
      numbers; and ``left``, the forest's absolute child ids made local again;
    * counts (int64 columns) whose values fit are kept as int32 (:attr:`narrowed`)
      and widened again for the tree.

    A tree under :data:`SMALL_TREE_NODES` nodes brings its columns as they are (a
    column is then left out only if every tree allows it). A pruned tree T(α) is not
    kept: it is T_max pruned again at its α (:func:`cartjit.engine.pruning.prune_tree`,
    as the fit and a model file's load do).
    A tree is assembled when asked for and not kept.
    """

    def __init__(self, parts, forest, costs=None):
        """The store of the trees' :class:`TreePart` list ``parts`` (all B, in the order
        of b) and their flat ``forest``, ``costs`` a classification's ``(cost,
        default_cost, criterion)`` (:class:`_Costs`; None for regression); each part's
        columns are dropped as they are concatenated."""
        self.forest = forest
        self.costs = costs
        self.n_trees = len(parts)
        self.alphas = np.array([np.nan if t.alpha is None else t.alpha for t in parts],
                               dtype=np.float64)
        self.priors = (np.stack([t.priors for t in parts])
                       if parts and parts[0].priors is not None else None)
        self.class_totals = (np.stack([t.class_totals for t in parts])
                             if parts and parts[0].class_totals is not None else None)
        self.roots = _offsets([t.n_nodes for t in parts])
        self.rows = {name: _offsets([t.columns[name].shape[0] for t in parts])
                     for name in ("level_sets", "surrogate_feature", "competitor_feature")}
        self.shared, self.derived, self.constant, self.columns = (), (), {}, {}
        self.summed, self.leaf_roots = {}, None  # kept at the leaves: their offsets
        self.narrowed = ()  # int64 counts kept as int32
        # the inputs of the derived columns first: materialising another needs them
        first = ("left", "n_node_samples", "value") + DERIVABLE
        order = first + tuple(name for name in Tree._fields if name not in first)
        big = int(self.roots[-1]) * 64 >= RELEASE_MIN_BYTES
        for name in order:
            marks = [t.columns[name] for t in parts]
            for t in parts:
                t.columns[name] = None
            if marks and all(isinstance(m, str) and m == SHARED for m in marks):
                self.shared += (name,)
            elif marks and all(isinstance(m, str) and m == DERIVED for m in marks):
                self.derived += (name,)
            elif marks and all(isinstance(m, _Leaves) for m in marks):
                self.summed[name] = self._leaves(name, marks, big)
            elif marks and name not in TABLE_FIELDS and self._one_value(marks):
                self.constant[name] = marks[0]
            else:
                self.columns[name] = self._concatenated(name, marks, big)
            marks = None
        for t in parts:
            t.columns.clear()

    def _concatenated(self, name, marks, release):
        """Column ``name`` of every tree from the trees' ``marks`` (emptied as they are
        copied, :func:`_gather`); int64 counts as int32 where every value fits."""
        offsets = self.rows[self._table_of(name)] if name in TABLE_FIELDS else self.roots
        first = self._materialise(0, name, marks[0])
        tail, dtype = first.shape[1:], first.dtype
        del first
        if name in _COUNT_FIELDS:  # int64 counts: exact in half the bytes, where large
            dtype = np.dtype(np.int64)
            if release and all(_fits_int32(self._materialise(b, name, m))
                               for b, m in enumerate(marks)):
                dtype = np.dtype(np.int32)
                self.narrowed += (name,)
        sizes = np.diff(offsets).tolist()

        if not release and all(isinstance(m, np.ndarray) and m.ndim > 1 or
                               isinstance(m, np.ndarray) and m.shape[0] == n
                               for m, n in zip(marks, sizes)):
            return np.ascontiguousarray(np.concatenate(marks).astype(dtype, copy=False))

        def take(b):
            mark, marks[b] = marks[b], None
            if isinstance(mark, np.ndarray) and (mark.ndim != 1 or mark.shape[0] == sizes[b]
                                                 or name in TABLE_FIELDS):
                return mark  # the column itself (the usual case, and a small tree's)
            return self._materialise(b, name, mark)

        return _gather(take, sizes, tail, dtype, release)

    def __setstate__(self, state):
        """A store pickled before the counts were kept at the leaves and the risks
        derived holds none of them: it reads as it did."""
        self.__dict__.update(state)
        self.__dict__.setdefault("summed", {})
        self.__dict__.setdefault("leaf_roots", None)
        self.__dict__.setdefault("costs", None)

    def _leaves(self, name, marks, release):
        """Summed column ``name`` of every tree at its leaves, from the trees'
        :class:`_Leaves` ``marks`` (emptied as they are copied)."""
        if self.leaf_roots is None:
            self.leaf_roots = _offsets([m.values.shape[0] for m in marks])
        first = marks[0].values
        dtype = first.dtype
        if name in _COUNT_FIELDS:
            if all(m.values.dtype == np.int32 for m in marks):
                self.narrowed += (name,)
            else:
                dtype = np.dtype(np.int64)

        def take(b):
            mark, marks[b] = marks[b], None
            return mark.values

        return _gather(take, np.diff(self.leaf_roots).tolist(), first.shape[1:], dtype,
                       release)

    @staticmethod
    def _one_value(marks):
        """Whether every mark is a 1-element array of the same bits."""
        first = marks[0]
        if not (isinstance(first, np.ndarray) and first.shape == (1,)):
            return False
        return all(isinstance(m, np.ndarray) and m.shape == (1,) and m.dtype == first.dtype
                   and _bits(m)[0] == _bits(first)[0] for m in marks)

    def _materialise(self, b, name, mark):
        """Tree b's column ``name`` in full, from its mark (:func:`_store_part`); the
        columns a derived one comes from are in the store by then."""
        if isinstance(mark, str) and mark == SHARED:
            return self._from_forest(name, int(self.forest.roots[b]),
                                     int(self.forest.roots[b + 1]))
        if isinstance(mark, str):  # DERIVED
            return self._derived(b, name, lambda k: self._node_column(b, k))
        if isinstance(mark, _Leaves):  # counts summed in int64 where kept as int32
            leaves = mark.values
            return _sum_up(self._node_column(b, "left"),
                           leaves.astype(np.int64) if leaves.dtype == np.int32 else leaves)
        n = int(self.roots[b + 1] - self.roots[b])
        if name not in TABLE_FIELDS and mark.ndim == 1 and mark.shape[0] != n:
            return np.full(n, mark[0], dtype=mark.dtype)  # one value for every node
        return mark

    def _from_forest(self, name, lo, hi):
        """Column ``name`` of the tree at nodes ``lo`` .. ``hi - 1`` of the flat forest:
        a view, or for ``left`` the local child ids of the forest's absolute ones."""
        col = getattr(self.forest, name)[lo:hi]
        if name == "left":
            return np.where(col >= 0, col - lo, -1).astype(np.int32)
        return col

    def _node_column(self, b, name):
        """Node column ``name`` of tree b's T_max, however the store keeps it."""
        lo, hi = int(self.roots[b]), int(self.roots[b + 1])
        if name in self.shared:
            return self._from_forest(name, lo, hi)
        if name in self.constant:
            return np.full(hi - lo, self.constant[name][0], dtype=self.constant[name].dtype)
        if name in self.columns:
            col = self.columns[name][lo:hi]
            return col.astype(np.int64) if name in self.narrowed else col
        if name in self.summed:
            leaves = self.summed[name][self.leaf_roots[b]:self.leaf_roots[b + 1]]
            return _sum_up(self._node_column(b, "left"),
                           leaves.astype(np.int64) if name in self.narrowed else leaves)
        return self._derived(b, name, lambda k: self._node_column(b, k))

    def _derived(self, b, name, get, memo=None):
        """Derived column ``name`` of tree b (:func:`_derive`), ``get(k)`` its column k."""
        costs = (None if self.costs is None else
                 _Costs(self.priors[b], self.class_totals[b], *self.costs))
        return _derive(name, get, costs, memo)

    def __len__(self):
        return self.n_trees

    def __iter__(self):
        return (self[b] for b in range(self.n_trees))

    @staticmethod
    def _table_of(name):
        """The offsets (:attr:`rows`) of a table column."""
        return ("level_sets" if name == "level_sets" else
                "surrogate_feature" if name.startswith("surrogate_") else
                "competitor_feature")

    def tree_max(self, b):
        """T_max of tree b (a :class:`cartjit.engine.tree.Tree`)."""
        cols = {}
        for name in Tree._fields:
            if name in TABLE_FIELDS:
                rows = self.rows[self._table_of(name)]
                cols[name] = self.columns[name][rows[b]:rows[b + 1]]
                if name in self.narrowed:
                    cols[name] = cols[name].astype(np.int64)
            elif name not in self.derived:
                cols[name] = self._node_column(b, name)
        memo = {}
        for name in DERIVABLE:  # in its order: each from the ones before it
            if name in self.derived:
                cols[name] = self._derived(b, name, cols.__getitem__, memo)
        return Tree(**cols)

    def column(self, name):
        """Column ``name`` of every tree's T_max, concatenated (a model file's member)."""
        if name in self.columns:
            col = self.columns[name]
            return col.astype(np.int64) if name in self.narrowed else col
        if name in self.shared and name != "left":
            return getattr(self.forest, name)
        if name in self.constant:
            return np.full(int(self.roots[-1]), self.constant[name][0],
                           dtype=self.constant[name].dtype)
        return np.concatenate([self._node_column(b, name) for b in range(self.n_trees)])

    def __getitem__(self, b):
        if not -self.n_trees <= b < self.n_trees:
            raise IndexError(f"tree {b} of a forest of {self.n_trees}")
        b = int(b) % self.n_trees
        tree_max = self.tree_max(b)
        alpha = None if np.isnan(self.alphas[b]) else float(self.alphas[b])
        tree = tree_max if alpha is None else prune_tree(tree_max, alpha)
        return TreeFit(tree, tree_max,
                       None if self.priors is None else self.priors[b],
                       None if self.class_totals is None else self.class_totals[b], alpha)


def _offsets(sizes):
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def permutation_seeds(random_state, n_trees):
    """Each tree's permutation seed: a function of (``random_state``, b)."""
    return np.array([tree_seed_sequence(random_state, b, PERMUTATION_STREAM)
                     .generate_state(1, np.uint64)[0] for b in range(n_trees)],
                    dtype=np.uint64)


def permutation_importance(forest, X, inbag, targets, priors=None, random_state=0,
                           n_threads=None):
    """Breiman's OOB permutation importance of ``forest``
    (:func:`cartjit.engine.forest_passes.permutation_importance`), each tree's
    permutations seeded from ``random_state`` (:func:`permutation_seeds`)."""
    return passes.permutation_importance(forest, X, inbag, targets, priors,
                                         permutation_seeds(random_state, forest.n_trees),
                                         n_threads)
