"""From validated arrays to a fitted flat tree with its pruning sequence.

One function, :func:`fit_tree`, serves the estimators (the learning sample L) and the
cross-validation (each L - L_v), so that a fold tree is built by exactly the rules of
the full tree:

1. class set-up (docs/maths.md §1–2): priors π ("empirical" from the cases given, "equal", or
   fixed values), altered priors π'(j) ∝ π(j) Σ_i C(i|j) for the split search when
   the cost is not 0-1, and the per-class factors c_j = π'(j)/N_j of the kernels;
2. growing T_max (:func:`cartjit.engine.grow.grow`) on the presorted keys;
3. R(t) and the node labels j*(t) with the true π and C (docs/maths.md §1), or R(t) =
   Σ w (y - ȳ)² / W for regression (docs/maths.md §3);
4. best-first truncation for ``max_leaf_nodes``;
5. the per-node collapse α of the weakest-link sequence (:mod:`cartjit.engine.pruning`).

Nothing here is jitted.
"""
from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from .records import (I_FEATURE, I_LEFT, I_LEVEL_ROW, I_PARENT, I_RIGHT, F_THRESHOLD, S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT, S_THRESHOLD)
from .assembly import assemble_tree, routing_nodes
from .grow import grow
from .presort import presort
from .impurity import SQUARED_ERROR, min_risk_labels
from .predict import FoldTree, Routing
from .pruning import weakest_link, with_alpha
from .rpart import check_compat, cp_table_rows, rpart_pruning
from .scaling import check_class_tables, normalise, power_of_two, restore
from .tree import LEAF, Tree, subtree

__all__ = ["Problem", "Settings", "Fitted", "FoldFit", "fit_tree", "fit_fold",
           "split_factor", "class_risk", "with_alpha", "with_rpart_rules", "rpart_rows",
           "check_compat", "fitted_factor"]

#: Two classes whose expected costs Σ_j C(i|j) p(j,t) agree to this many ulps of p(t)
#: (times the largest cost) are tied for the node label; the lower index wins (docs/maths.md §1).
LABEL_TIE_ULPS = 64.0
_EPS = float(np.finfo(np.float64).eps)


class Problem(NamedTuple):
    """A validated learning sample: the arrays the kernels take (cases are rows)."""

    X: np.ndarray          # float64 (n, p), C-contiguous
    y_class: np.ndarray    # int32 class indices 0..J-1 (empty for regression)
    y_reg: np.ndarray      # float64 responses (empty for classification)
    w: np.ndarray          # float64 case weights, > 0; empty when unit_weights
    unit_weights: bool     # every weight is 1 (no weight array is kept)
    n_classes: int         # J; 0 for regression
    #: int64 (p,): L_f levels of a categorical feature f (X holds codes 0..L_f-1), 0 for an
    #: ordered feature; empty means every feature is ordered.
    n_levels: np.ndarray = np.zeros(0, dtype=np.int64)

    @property
    def is_classification(self) -> bool:
        return self.n_classes > 0


class Settings(NamedTuple):
    """Checked tree parameters, in the kernels' terms."""

    criterion: int
    max_depth: int                 # -1: no limit
    min_samples_split: int
    min_samples_leaf: int
    min_impurity_decrease: float
    max_leaf_nodes: int | None
    priors: object                 # "empirical", "equal" or an array of π
    cost: np.ndarray | None        # (J, J), cost[j, i] = C(i|j); None for regression
    default_cost: bool
    #: J > 2 classes: exhaustive subset search up to this many levels present at a node.
    max_categories_exhaustive: int = 12
    #: Surrogate splits kept per node (0: none), rpart's maxsurrogate.
    max_surrogate: int = 0
    #: 0: a case missing the split feature stays in the node; 1: surrogates, then stays;
    #: 2: surrogates, then the majority (rpart's usesurrogate).
    use_surrogate: int = 2
    #: 0: agreement over the cases with the split feature present; 1: over those with
    #: the surrogate present too (rpart's surrogatestyle).
    surrogate_style: int = 0
    #: Competitor splits kept per node, rpart's maxcompete.
    max_competitor: int = 0
    #: Features drawn at random for each node's split search (Breiman's m of a random
    #: forest); 0 searches every feature, as a single CART tree does.
    max_features: int = 0
    #: Seed of the per-node draws of ``max_features`` features (a tree's own seed,
    #: drawn by the forest in Python); unused when ``max_features`` is 0.
    feature_seed: int = 0


class Fitted(NamedTuple):
    """A fitted tree and the class quantities it was fitted with."""

    tree: Tree
    priors: np.ndarray | None      # π used for risks and labels
    class_totals: np.ndarray | None  # N_j of the cases the tree was grown on
    path: tuple                    # (α_k, |T~_k|, R(T_k)) of its weakest-link sequence


def class_priors(setting, counts):
    """π from the ``priors`` setting and the weighted class counts N_j."""
    n_classes = counts.shape[0]
    if isinstance(setting, str):
        if setting == "empirical":
            return counts / counts.sum()
        return np.full(n_classes, 1.0 / n_classes)
    return np.asarray(setting, dtype=np.float64)


def _all_present(class_totals):
    """Whether every class has cases (N_j > 0), read from a list: the few classes of a
    small fit are checked faster so than by NumPy."""
    return all(n > 0.0 for n in class_totals.tolist())


def split_factor(priors, class_totals, cost, default_cost):
    """The per-class factors c_j = π'(j) / N_j of the split search (docs/maths.md §2).

    π' are the priors, altered to π'(j) ∝ π(j) Σ_i C(i|j) when the cost is not 0-1, and
    renormalised over the classes present (N_j > 0); absent classes get c_j = 0. Then
    Σ_j c_j N_j(t) = p(t) under the split-search priors.
    """
    if default_cost:
        split = priors
    else:  # costs near float64's largest would overflow the row sums: scale them (exact)
        scale = power_of_two(cost.max())
        split = priors * (cost.sum(axis=1) if scale == 1.0 else (cost / scale).sum(axis=1))
    if _all_present(class_totals):  # the usual case, where the masks below change nothing
        split = split / split.sum()
        return split / class_totals
    present = class_totals > 0
    split = np.where(present, split, 0.0)
    split = split / split.sum()
    return np.divide(split, class_totals, out=np.zeros_like(split), where=present)


def class_risk(value, priors, class_totals, cost):
    """R(t) = min_i Σ_j C(i|j) π(j) N_j(t)/N_j and j*(t), lowest index on ties
    (docs/maths.md §1).

    A class absent from the cases (N_j = 0, possible in a fold) contributes nothing.
    """
    if _all_present(class_totals):  # the usual case, where the mask changes nothing
        scale = priors / class_totals
    else:
        scale = np.divide(priors, class_totals, out=np.zeros_like(priors),
                          where=class_totals > 0)
    p_jt = value * scale  # p(j, t)
    risks = p_jt @ cost   # risks[t, i] = Σ_j p(j, t) C(i|j)
    # R(t), and j*(t) the lowest class within a few ulps of it, in one compiled pass
    # rather than NumPy calls (docs/design.md, "Speed machinery")
    return min_risk_labels(np.ascontiguousarray(risks), p_jt.sum(axis=1),
                           LABEL_TIE_ULPS * _EPS, float(cost.max()))


def _best_first(tree, improvement, q_weight, max_leaf_nodes):
    """Splits a best-first grower keeps with at most ``max_leaf_nodes`` leaves.

    The split chosen at a node does not depend on which other nodes are expanded, so
    best-first growth is T_max expanded from the root in decreasing order of the
    weighted impurity decrease p(t) Δi(t) (ties: lower node id first).
    """
    keep = np.zeros(tree.n_nodes, dtype=bool)
    heap = []
    if tree.left[0] != LEAF:
        heap.append((-q_weight[0] * improvement[0], 0))
    n_leaves = 1
    while heap and n_leaves < max_leaf_nodes:
        _, t = heapq.heappop(heap)
        keep[t] = True
        n_leaves += 1
        for c in (int(tree.left[t]), int(tree.right[t])):
            if tree.left[c] != LEAF:
                heapq.heappush(heap, (-q_weight[c] * improvement[c], c))
    return keep


def _node_risks(problem, settings, grown, priors, counts):
    """R(t) of every grown node and, for classification, its class j*(t) (-1 for
    regression): the resubstitution risk in the kernels' units."""
    if problem.is_classification:
        return class_risk(grown.value, priors, counts, settings.cost)
    assert settings.criterion == SQUARED_ERROR
    risk = np.maximum(grown.impurity, 0.0) * grown.weight / grown.weight[0]
    return risk, np.full(grown.n_nodes, -1, dtype=np.int32)


def _class_totals(problem, presorted):
    """The weighted class totals N_j of the cases listed in ``presorted`` (every case of
    ``problem``, or a fold's)."""
    w_cases = None if problem.unit_weights else problem.w
    if presorted.keys.shape[1] == problem.X.shape[0]:  # every case: no index needed
        y_cases = problem.y_class
    else:
        cases = presorted.keys[0]
        y_cases = problem.y_class[cases]
        w_cases = None if w_cases is None else w_cases[cases]
    return np.bincount(y_cases, weights=w_cases,
                       minlength=problem.n_classes).astype(np.float64)


def fit_tree(problem, settings, presorted, n_threads=1, rpart_alpha=None,
             rpart_growth=False, check=True):
    """Grow, score and prune-sequence a tree on the cases listed in ``presorted``.

    ``presorted`` is :func:`cartjit.engine.presort.presort`'s result, or a fold's
    :func:`cartjit.engine.presort.subset_keys`; its keys are consumed. ``None`` presorts all
    of ``problem.X`` here, so that the keys can be freed as soon as the tree is grown.
    Class totals, empirical priors and the root weight are those of these cases.

    Weights, costs and responses reach the kernels divided by a power of two that keeps
    them in float64's comfortable range, and the results are scaled back, exactly
    (:mod:`cartjit.engine.scaling`).

    ``rpart_alpha`` (α_c, in the units of the fitted risks) replaces step 5 by rpart's
    rules (:func:`with_rpart_rules`, here on the kernels' units, which only scales the
    results by a power of two). ``rpart_growth`` grows as rpart does where that differs
    (``compat="rpart"``): without surrogates (``max_surrogate`` 0) a case missing the
    split variable stays in the node, as rpart sets no default direction then.
    ``check=False`` skips the up-front size check of the class tables
    (:func:`cartjit.engine.scaling.check_class_tables`, a function of ``problem`` and
    ``settings`` alone), for a caller that made it once for many trees.
    """
    problem, settings, scale = normalise(problem, settings)
    if check and problem.is_classification:
        check_class_tables(problem.X.shape[0], problem.n_classes, settings)
    if presorted is None:
        presorted = presort(problem.X, problem.n_levels, n_threads)
    n_cases = presorted.keys.shape[1]
    if problem.is_classification:
        counts = _class_totals(problem, presorted)
        priors = class_priors(settings.priors, counts)
        factor = split_factor(priors, counts, settings.cost, settings.default_cost)
    else:
        counts = priors = None
        factor = np.empty(0)
    grow_settings = settings
    if rpart_growth and settings.max_surrogate == 0:
        grow_settings = settings._replace(use_surrogate=0)
    grown = grow(problem, presorted, factor, grow_settings, n_threads)
    # The keys are spent: when this frame holds the only reference (presorted here),
    # they are freed before the tree is assembled, lowering the peak memory.
    del presorted
    risk, label = _node_risks(problem, settings, grown, priors, counts)
    # The growth's over-allocated tables are spent too: the assembly frees each as soon
    # as its columns are copied, lowering the peak memory (docs/design.md).
    holder = [grown]
    del grown
    tree = assemble_tree(holder, risk, label)
    del risk, label
    q_weight = None
    if settings.max_leaf_nodes is not None and tree.n_leaves > settings.max_leaf_nodes:
        # p(t) under the split-search priors (the tree's copies of the grown columns)
        q_weight = (tree.value @ factor if problem.is_classification
                    else tree.weighted_n_node_samples / tree.weighted_n_node_samples[0])
    if q_weight is not None:
        keep = _best_first(tree, tree.improvement, q_weight, settings.max_leaf_nodes)
        tree = subtree(tree, keep)
    assert tree.n_node_samples[0] == n_cases
    if rpart_alpha is None:
        tree, path = with_alpha(tree, n_threads)
    else:
        units = (scale.cost if problem.is_classification else scale.y * scale.y)
        tree, path = rpart_pruning(tree, rpart_alpha / units,
                                   factor if problem.is_classification else None)
    return restore(Fitted(tree, priors, counts, path), scale)


class FoldFit(NamedTuple):
    """A fold tree as the cross-validation scores it (:func:`fit_fold`)."""

    tree: FoldTree   # the arrays of the held-out descent; α and ȳ(t) in the user's units
    path: tuple      # (α_k, |T~_k|, R(T_k)) of its weakest-link sequence


#: The node values a classification fold tree passes (the held-out descent reads labels).
_NO_VALUES = np.zeros((0, 1), dtype=np.float64)
#: The surrogate tables of a fold tree without surrogates (never written: no rows).
_NO_SURROGATES = np.zeros((0, 3), dtype=np.int64)
_NO_THRESHOLDS = np.zeros(0, dtype=np.float64)


def fit_fold(problem, settings, scale, presorted, setup=None):
    """A fold tree T_max^(v) and its sequence, only as far as the cross-validation reads
    them: :func:`fit_tree`'s tree on the cases of ``presorted`` (a fold's
    :func:`cartjit.engine.presort.subset_keys`, consumed), without ``max_leaf_nodes`` nor
    rpart's rules, returned as a :class:`FoldFit`.

    ``problem`` and ``settings`` are in the kernels' units already and ``scale`` is
    their :class:`cartjit.engine.scaling.Scale` (:func:`cartjit.engine.scaling.normalise`, made
    once for every fold). The steps and the arithmetic are :func:`fit_tree`'s (class
    totals, priors and factors of the fold's cases, R(t) and j*(t), the weakest-link
    pass, the units restored as :func:`cartjit.engine.scaling.restore` does), so α, the labels
    and the means are the same doubles; only the :class:`cartjit.engine.tree.Tree` is never
    assembled: the columns the held-out descent reads (:class:`cartjit.engine.predict.FoldTree`,
    :func:`cartjit.engine.predict.routing_of`'s routing) are taken from the grown node tables.
    ``setup`` is :func:`cartjit.engine.grow.grow_setup`'s record for ``problem`` and
    ``settings``, made once for every fold (None: made here).
    """
    is_class = problem.is_classification
    if is_class:
        counts = _class_totals(problem, presorted)
        priors = class_priors(settings.priors, counts)
        factor = split_factor(priors, counts, settings.cost, settings.default_cost)
    else:
        factor = np.empty(0)
    grown = grow(problem, presorted, factor, settings, 1, setup)
    del presorted
    inode = grown.inode
    feature, left, right, parent = inode.T[[I_FEATURE, I_LEFT, I_RIGHT, I_PARENT]]
    if is_class:
        risk, label = _node_risks(problem, settings, grown, priors, counts)
        value = _NO_VALUES
    else:
        risk, _ = _node_risks(problem, settings, grown, None, None)
        label = np.empty(0, dtype=np.int32)  # the held-out descent reads the means
        value = grown.value.copy()
    alpha, alphas, n_leaves, tree_risk = weakest_link(left, right, parent, risk)
    if (scale.cost if is_class else scale.y) != 1.0:  # restore's units
        alpha = scale.to_loss_units(alpha, is_class)
        alphas = scale.to_loss_units(alphas, is_class)
        tree_risk = scale.to_loss_units(tree_risk, is_class)
        if not is_class:
            value = value * scale.y
    # routing_of's tables
    node = routing_nodes(inode)
    sur_i, sur_f = grown.tables.sur_i, grown.tables.sur_f
    if sur_i.shape[0]:
        # the surrogates' integers pass through the tree's int32 columns, as in routing_of
        sur = np.ascontiguousarray(
            sur_i[:, [S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT]].astype(np.int32), dtype=np.int64)
        sur_threshold = np.ascontiguousarray(sur_f[:, S_THRESHOLD])
    else:
        sur, sur_threshold = _NO_SURROGATES, _NO_THRESHOLDS
    level_sets = grown.level_sets
    if level_sets.shape[0]:
        routing = Routing(node, sur, sur_threshold, level_sets.copy(),
                          bool(np.any(inode[:, I_LEVEL_ROW] >= 0)),
                          int(settings.use_surrogate))
    else:  # no subset split
        routing = Routing(node, sur, sur_threshold, level_sets, False,
                          int(settings.use_surrogate))
    threshold = np.ascontiguousarray(grown.fnode[:, F_THRESHOLD])
    return FoldFit(FoldTree(feature, threshold, left, alpha, label, value, routing),
                   (alphas, n_leaves, tree_risk))


def fitted_factor(fitted, settings):
    """The split-search class factors c_j of a fitted classification tree (None for
    regression): they order its children for rpart (:func:`cartjit.engine.rpart.rpart_order`)."""
    if fitted.priors is None:
        return None
    return split_factor(fitted.priors, fitted.class_totals, settings.cost,
                        settings.default_cost)


def with_rpart_rules(fitted, settings, alpha_c):
    """``fitted`` with rpart's per-node complexities and table in place of the exact
    sequence (``compat="rpart"``, :mod:`cartjit.engine.rpart`), for the growth bound
    ``alpha_c`` (absolute: cp · R(root))."""
    tree, path = rpart_pruning(fitted.tree, alpha_c, fitted_factor(fitted, settings))
    return fitted._replace(tree=tree, path=path)


def rpart_rows(tree, alpha_c):
    """rpart's table ``(values, n_leaves, risk)`` of a tree that stores rpart's
    complexities (:func:`with_rpart_rules`): its splits are the nodes with a positive
    value, and the table ends at ``alpha_c``."""
    keep = tree.alpha > 0
    if not keep.any():
        return np.array([float(alpha_c)]), np.ones(1, np.int64), tree.risk[:1].copy()
    values = np.unique(np.r_[tree.alpha[keep], float(alpha_c)])
    return cp_table_rows(tree, tree.alpha, keep, values)
