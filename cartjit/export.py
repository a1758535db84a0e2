"""A fitted tree as text: :func:`export_text` (cartjit's layout or R's ``print.rpart``),
:func:`export_rules` (one if/then rule per leaf), :func:`format_cp` / :func:`print_cp`
(the pruning and CV table of R's ``printcp``), :func:`export_graphviz` (DOT text) and
:func:`summary` (every node at length). docs/reading-trees.md shows each of them.

The default layout of :func:`export_text` is close to R's ``print.rpart``, which
readers of CART output know: one line per node, depth-first with the left child first,
indented two spaces per level, numbered as rpart numbers nodes (root 1, the children
of m are 2m and 2m + 1; :func:`node_numbers`, which every text view shares), leaves
marked with ``*``::

    node) split: n, class counts -> class, R(t)      (* leaf)
    1) root: n=150, counts [50, 50, 50] -> setosa, R=0.667
      2) petal_length <= 2.45: n=50, counts [50, 0, 0] -> setosa, R=0 *
      3) petal_length > 2.45: n=100, counts [0, 50, 50] -> versicolor, R=0.333
    ...

For a classifier the counts are the weighted class counts N_j(t) in the order of
``classes_`` and the class is the node label j*(t); for a regressor each node shows
the weighted mean ȳ(t). R is the node risk R(t) of docs/maths.md §1 and §3 (so the R
of the leaves add up to R(T)).

A split on a categorical feature (docs/maths.md §7) names the levels each child takes,
``humidity in {high}`` / ``humidity in {normal}``; a long set is cut after
:data:`MAX_LEVELS_SHOWN` levels with the number left out, ``{a, b, c, ... (+9 more)}``.
The sets list the levels present among the node's learning cases: any other level (and
one never seen in fit) is treated as a missing value there (docs/maths.md §8). A split
on an ordinal feature (an ordered pandas categorical) names the last level on the left,
``size <= medium`` / ``size > medium``.

:func:`summary` (``export_text(..., details=True)``) describes every node at length in
the spirit of R's ``summary.rpart``: sizes, risk, class counts and probabilities or mean
and MSE, the primary split and its competitors with their improvement and the number of
cases missing them, and the surrogate splits with their agreement (docs/maths.md §8).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .engine.tree import LEAF

__all__ = ["export_text", "export_rules", "export_graphviz", "format_cp", "print_cp",
           "summary", "node_numbers", "node_id", "MAX_LEVELS_SHOWN"]

#: Levels printed in one set of a categorical split before it is cut short.
MAX_LEVELS_SHOWN = 8


def _settled(x):
    """``x`` rounded to 12 significant digits: a printed figure then does not depend on
    the last bits of a sum (whose order may change), even at a rounding boundary such as
    384.7095 printed with 3 decimals."""
    return float(f"{float(x):.12g}")


def _number(x, decimals):
    x = _settled(x)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals > 0 else f"{x:.0f}"


def _risk(x, decimals):
    x = float(x)
    if x == 0:
        return "0"
    return f"{x:.{max(decimals, 1)}g}" if abs(x) < 10 ** -decimals else _number(x, decimals)


def _level_codes(words):
    """The level codes whose bits are set in a row of ``Tree.level_sets`` (uint64 words)."""
    codes = []
    for w, word in enumerate(words.tolist()):
        base = 64 * w
        while word:
            low = word & -word
            codes.append(base + low.bit_length() - 1)
            word ^= low
    return codes


def _levels_named(levels, codes):
    """The names of level codes (``#c`` for a code without a name)."""
    return [str(levels[c]) if levels is not None and c < len(levels) else f"#{c}"
            for c in codes]


def _level_set(levels, codes):
    """``{a, b, ...}`` for the given level codes, cut after MAX_LEVELS_SHOWN levels."""
    shown = _levels_named(levels, codes[:MAX_LEVELS_SHOWN])
    if len(codes) > MAX_LEVELS_SHOWN:
        shown.append(f"... (+{len(codes) - MAX_LEVELS_SHOWN} more)")
    return "{" + ", ".join(shown) + "}"


def _split_texts(tree, node, name, levels, decimals):
    """The (left, right) split conditions of an internal node."""
    row = int(tree.level_row[node]) if hasattr(tree, "level_row") else -1
    return _conditions(tree, row, float(tree.threshold[node]), name, levels, decimals)


def _conditions(tree, row, thr, name, levels, decimals):
    """``(x <= thr, x > thr)`` as text, or for a subset split (``row`` >= 0, a row of
    ``level_sets``) ``(x in {left levels}, x in {right levels})``."""
    if row >= 0:
        left = _level_set(levels, _level_codes(tree.level_sets[row, 0]))
        right = _level_set(levels, _level_codes(tree.level_sets[row, 1]))
        return f"{name} in {left}", f"{name} in {right}"
    if levels is not None and 0 <= thr < len(levels) - 1:
        # codes of an ordinal feature: the left child takes the levels up to floor(thr)
        last = str(levels[int(np.floor(thr))])
        return f"{name} <= {last}", f"{name} > {last}"
    text = _number(thr, decimals)
    return f"{name} <= {text}", f"{name} > {text}"


def _one_tree(estimator, tree, caller):
    """The estimator whose tree is printed: ``estimator`` itself (``tree`` None), or tree
    ``tree`` of a fitted forest (:mod:`cartjit.ensemble`), its view ``estimators_[tree]``:
    a fitted single tree, printed as any other."""
    from .ensemble import _BaseForest

    if not isinstance(estimator, _BaseForest):
        if tree is not None:
            raise TypeError(f"tree={tree!r} picks a tree of a forest, but "
                            f"{type(estimator).__name__} is a single tree: leave tree=None")
        return estimator
    if tree is None:
        raise TypeError(f"{caller} prints one tree of a forest: give tree=k, 0 <= k < "
                        f"n_estimators, to print tree k of the {type(estimator).__name__}")
    if isinstance(tree, (bool, np.bool_)) or not isinstance(tree, (int, np.integer)):
        raise TypeError(f"tree must be an int (the index of a tree), got {tree!r}")
    views = estimator.estimators_  # NotFittedError before fit
    if not 0 <= tree < len(views):
        raise ValueError(f"tree must lie in [0, {len(views)}) (the forest has "
                         f"{len(views)} trees), got {tree}")
    return views[int(tree)]


def _checked(estimator, feature_names, decimals, max_depth, caller):
    """``(tree_, feature names)`` after checking the common arguments."""
    tree = getattr(estimator, "tree_", None)
    if tree is None:
        from ._validation import not_fitted_error
        raise not_fitted_error(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            f"before {caller}.")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or decimals < 0:
        raise ValueError(f"decimals must be an integer >= 0, got {decimals!r}")
    if max_depth is not None and (isinstance(max_depth, bool)
                                  or not isinstance(max_depth, (int, np.integer))
                                  or max_depth < 0):
        raise ValueError(f"max_depth must be None or an integer >= 0, got {max_depth!r}")
    n_features = int(estimator.n_features_in_)
    if feature_names is None:
        names = getattr(estimator, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else \
            [f"x{j}" for j in range(n_features)]
    else:
        names = [str(n) for n in feature_names]
        if len(names) != n_features:
            raise ValueError(f"feature_names has {len(names)} entries but the estimator was "
                             f"fitted on {n_features} features")
    return tree, names


def export_text(estimator, feature_names=None, *, decimals=3, max_depth=None,
                show_alpha=False, details=False, layout="tree", tree=None):
    """The fitted tree of ``estimator`` as indented text (see the module docstring).

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or their CV variants, or a forest
        Its ``tree_`` is printed (T(ccp_alpha) or the CV-selected subtree); of a forest
        (:mod:`cartjit.ensemble`), the ``tree_`` of its tree ``tree``.
    feature_names : sequence of str, optional
        One name per feature; default ``feature_names_in_`` when the estimator was
        fitted on a DataFrame, else ``x0, x1, ...``.
    decimals : int, default 3
        Decimals of thresholds, means and risks.
    max_depth : int, optional
        Print nodes down to this depth only; a cut branch ends with ``...``.
    show_alpha : bool, default False
        Also print, for each split, the α at which it is pruned away (docs/maths.md §4).
    details : bool, default False
        Return :func:`summary` instead (every node at length: competitors, surrogates,
        improvements); ``show_alpha`` is then ignored (the summary shows α).
    layout : {"tree", "rpart"}, default "tree"
        "tree": the layout of the module docstring. "rpart": the layout of R's
        ``print.rpart`` (see :func:`_rpart_layout`): header ``n= N``, rpart's node
        numbers, ``split n loss yval (yprob)`` with ``*`` at the leaves;
        ``show_alpha`` is ignored there.
    tree : int, optional
        With a forest: the index k of the tree to print (0 <= k < ``n_estimators``), its
        single-tree view ``estimators_[k]``. Must be None for a single tree.

    Returns
    -------
    str
        The text, ending with a newline.
    """
    estimator = _one_tree(estimator, tree, "export_text")
    if not isinstance(details, (bool, np.bool_)):
        raise TypeError(f"details must be True or False, got {details!r}")
    if layout not in ("tree", "rpart"):
        raise ValueError(f"layout must be 'tree' or 'rpart', got {layout!r}")
    if details and layout == "rpart":
        raise ValueError("details=True gives the summary, which has no rpart layout: pass "
                         "details=True or layout='rpart', not both")
    if layout == "rpart":
        return _rpart_layout(estimator, feature_names, decimals, max_depth)
    if details:
        return summary(estimator, feature_names, decimals=decimals, max_depth=max_depth)
    tree, names = _checked(estimator, feature_names, decimals, max_depth, "export_text")
    numbers = _rpart_numbers(estimator, tree)
    n_features = int(estimator.n_features_in_)
    classes = getattr(estimator, "classes_", None)
    is_classifier = classes is not None
    categories = getattr(estimator, "categories_", None) or [None] * n_features

    lines = []
    if is_classifier:
        lines.append(f"{type(estimator).__name__}: {tree.n_nodes} nodes, {tree.n_leaves} "
                     f"leaves, depth {tree.max_depth}; classes "
                     f"{', '.join(str(c) for c in classes)}")
        lines.append("node) split: n, class counts -> class, R(t)    (* leaf)")
    else:
        lines.append(f"{type(estimator).__name__}: {tree.n_nodes} nodes, {tree.n_leaves} "
                     f"leaves, depth {tree.max_depth}")
        lines.append("node) split: n, mean of y, R(t)    (* leaf)")

    def describe(node):
        n = int(tree.n_node_samples[node])
        w = float(tree.weighted_n_node_samples[node])
        size = f"n={n}" if w == n else f"n={n} (weight {_number(w, decimals)})"
        risk = f"R={_risk(tree.risk[node], decimals)}"
        if is_classifier:
            counts = ", ".join(_number(v, decimals) for v in tree.value[node])
            body = f"{size}, counts [{counts}] -> {classes[tree.label[node]]}, {risk}"
        else:
            body = f"{size}, mean={_number(tree.value[node, 0], decimals)}, {risk}"
        if show_alpha and tree.left[node] != LEAF:
            body += f", alpha={_risk(tree.alpha[node], decimals)}"
        return body

    # depth-first, left child first, with an explicit stack (no recursion limit)
    stack = [(0, "root")]
    while stack:
        node, split = stack.pop()
        depth = int(tree.depth[node])
        leaf = tree.left[node] == LEAF
        line = f"{'  ' * depth}{numbers[node]}) {split}: {describe(node)}"
        if leaf:
            line += " *"
        elif max_depth is not None and depth >= max_depth:
            line += " ..."
            lines.append(line)
            continue
        lines.append(line)
        if not leaf:
            f = int(tree.feature[node])
            left, right = _split_texts(tree, node, names[f], categories[f], decimals)
            stack.append((int(tree.right[node]), right))
            stack.append((int(tree.left[node]), left))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- summary

def _first_is_left(estimator, tree):
    """Per internal node, whether its left child (``x <= c``, or the left level set) is
    the one rpart numbers 2k: rpart puts first the child with the smaller mean, the
    class index j weighted by p(j | child) under the split-search priors for a
    classifier (gini.c), the mean response for a regressor (anova.c); on a tie the
    right child comes first. (rpart decides from the cases present on the split
    feature; with missing values the children here also hold the cases surrogates sent,
    so on such a node the order may rarely differ from rpart's.)"""
    internal = tree.left != LEAF
    lc = np.where(internal, tree.left, 0)
    rc = np.where(internal, tree.right, 0)
    if tree.value.shape[1] == 1 and tree.label[0] < 0:  # regression: the mean
        mean = tree.value[:, 0]
    else:
        priors = getattr(estimator, "priors_", None)
        if priors is not None:
            from .engine.fit import split_factor
            factor = split_factor(priors, estimator.class_weight_totals_, estimator.cost_,
                                  getattr(estimator, "_split_cost_default", True))
        else:  # an estimator without its priors: the counts as they are
            factor = np.ones(tree.value.shape[1])
        p = tree.value * factor
        total = p.sum(axis=1)
        mean = np.divide(p @ np.arange(p.shape[1]), total, out=np.zeros_like(total),
                         where=total > 0)
    return internal & (mean[lc] < mean[rc])


def _rpart_numbers(estimator, tree):
    """rpart's node numbers: the root is 1, the children of node k are 2k and 2k + 1,
    2k going to the child rpart puts first (:func:`_first_is_left`). Python ints: a
    deep tree's numbers outgrow int64."""
    first_left = _first_is_left(estimator, tree)
    numbers = [0] * tree.n_nodes
    numbers[0] = 1
    for i in range(tree.n_nodes):  # children have larger ids than their parent
        if tree.left[i] != LEAF:
            a, b = int(tree.left[i]), int(tree.right[i])
            if not first_left[i]:
                a, b = b, a
            numbers[a] = 2 * numbers[i]
            numbers[b] = 2 * numbers[i] + 1
    return numbers


def node_numbers(estimator):
    """The printed number of every node of the fitted ``tree_``, by node id.

    Every text view of cartjit (:func:`export_text` in both layouts, :func:`summary`,
    ``export_rules(as_frame=True)``'s ``number``) numbers a node as rpart does (and as
    Breiman et al. draw t1, t2, t3, …): the root is 1 and the children of node m are
    2m and 2m + 1, 2m going to the child rpart lists first (the one with the smaller
    mean: the smaller class index weighted by p(j | child), or the smaller ȳ; ties the
    right child), which is usually but not always the left child (``x <= c``). The
    arrays of ``tree_`` and :meth:`apply` use the node *id* instead, the row of the
    node in those arrays (root 0, parents before children). ``node_numbers(est)[i]`` is
    the number of the node with id i; :func:`node_id` goes back. Python ints: the
    numbers of a deep tree outgrow int64 (docs/reading-trees.md, "Numbering").

    Returns
    -------
    list of int, one per node id.
    """
    tree, _ = _checked(estimator, None, 0, None, "node_numbers")
    return _rpart_numbers(estimator, tree)


def node_id(estimator, number):
    """The node id (row of ``tree_``'s arrays, as :meth:`apply` returns) of the node
    that the text views print as ``number`` (:func:`node_numbers`). A number that no
    node of ``tree_`` has is a ValueError."""
    if isinstance(number, (bool, np.bool_)) or not isinstance(number, (int, np.integer)):
        raise TypeError(f"number must be an int (a printed node number), got {number!r}")
    numbers = node_numbers(estimator)
    try:
        return numbers.index(int(number))
    except ValueError:
        raise ValueError(f"no node of tree_ is numbered {number!r}: the printed numbers "
                         f"are 1 (the root) and 2m, 2m + 1 below each split node m "
                         f"(node_numbers lists them)") from None


def _side(low_left):
    return "to the left" if low_left else "to the right"


def _split_line(tree, f, thr, row, low_left, names, categories, decimals):
    """One split as rpart's summary words it: the condition and where its cases go."""
    left, right = _conditions(tree, int(row), float(thr), names[f], categories[f], decimals)
    if row >= 0:  # a subset split: name both sets
        return f"{left} to the left, {right.split(' in ', 1)[1]} to the right"
    return f"{left} {_side(low_left)}"


def summary(estimator, feature_names=None, *, decimals=3, max_depth=None, tree=None, X=None,
            y=None, sample_weight=None):
    """Every node of the fitted tree at length, in the spirit of R's ``summary.rpart``.

    After a header, the pruning sequence (with the cross-validated columns for the CV
    estimators) and the variable importance (rpart's, in % of its total), one block per
    node in the order of the node numbers (rpart's: root 1, children 2m and 2m + 1, as in
    every text view; :func:`node_numbers`):

    * its number of learning cases and their weight; for a split node the α at which
      it is pruned and rpart's CP = α / R(root);
    * classification: the predicted class j*(t), the expected loss r(t) = R(t)/p(t) and
      P(node) = p(t) under the fitted priors, the weighted class counts N_j(t) and the
      probabilities p(j | t); regression: the mean ȳ(t) and the MSE (the weighted
      variance of y in the node);
    * a split node: its children and their sizes; ``Primary splits``, the chosen split
      then its competitors (the best split on each other feature, best first), each
      with rpart's improve W(root) p(t) Δi (the unit of
      ``variable_importance_``; the improvement of a feature with missing values is
      scaled by the fraction of the node present on it, docs/maths.md §8) and the number
      of the node's cases missing its feature; ``Surrogate splits`` with their agreement,
      adjusted agreement and the number of learning cases each routed; and where the
      cases that nothing routes go (the majority: the child with more learning cases).

    Thresholds read as in :func:`export_text`: ``x <= c to the left`` sends the cases
    with x <= c to the left child (a surrogate may send them right instead); a subset
    split names the levels of each side. ``max_depth`` limits the nodes described.
    With a forest, ``tree=k`` describes its tree k (as :func:`export_text`).

    Given the learning sample of the fit (``X``, ``y`` and, if the fit had them,
    ``sample_weight``), each split node also lists the splits that tie exactly with the
    chosen one, ``Tied with: x4 <= 0.8 (same partition)`` (or ``equal goodness
    (exact)``; or ``within the engine's tolerance`` where exact arithmetic is not
    available), and the header counts the nodes with a tie
    (:func:`cartjit.steps.tied_splits`, docs/reading-trees.md).
    """
    estimator = _one_tree(estimator, tree, "summary")
    tree, names = _checked(estimator, feature_names, decimals, max_depth, "summary")
    ties = _ties_by_node(estimator, X, y, sample_weight)
    n_features = int(estimator.n_features_in_)
    classes = getattr(estimator, "classes_", None)
    is_classifier = classes is not None
    categories = getattr(estimator, "categories_", None) or [None] * n_features
    fmt = lambda x: _number(x, decimals)  # noqa: E731
    risk = lambda x: _risk(x, decimals)  # noqa: E731

    # rpart's improve per unit of Δi at each node: W(root) p(t), in nats for entropy
    improve_scale = tree.weighted_n_node_samples[0] * estimator._node_weight(tree)
    if is_classifier and getattr(estimator, "criterion", None) == "entropy":
        improve_scale = improve_scale * np.log(2.0)
    if is_classifier:
        scale = np.divide(estimator.priors_, estimator.class_weight_totals_,
                          out=np.zeros_like(estimator.priors_),
                          where=estimator.class_weight_totals_ > 0)
        p_node = tree.value @ scale  # p(t) under the true priors
    r_root = float(tree.risk[0])

    lines = [f"{type(estimator).__name__}: {int(tree.n_node_samples[0])} cases (weight "
             f"{fmt(tree.weighted_n_node_samples[0])}), {tree.n_nodes} nodes, "
             f"{tree.n_leaves} leaves, depth {tree.max_depth}"
             + (f"; classes {', '.join(str(c) for c in classes)}" if is_classifier else "")]
    max_surrogate = getattr(estimator, "max_surrogate_", None)
    if max_surrogate is not None:
        lines.append(f"Surrogate splits: at most {max_surrogate} per node (use_surrogate="
                     f"{getattr(estimator, 'use_surrogate', 2)}, surrogate_style="
                     f"{getattr(estimator, 'surrogate_style', 0)}); competitor splits: at "
                     f"most {getattr(estimator, 'max_competitor', 0)} per node")
    if ties is not None:
        lines.append(f"Tied splits: {ties.caption}")
    lines.append("")
    lines.extend(_path_lines(estimator, decimals))
    importance = estimator.variable_importance_
    if len(importance):
        total = float(importance.sum())
        lines.append("Variable importance (rpart's, in % of the total):")
        lines.append("  " + ", ".join(f"{name} {100 * v / total:.0f}"
                                      for name, v in importance.items()))
        lines.append("")

    numbers = _rpart_numbers(estimator, tree)
    for node in sorted(range(tree.n_nodes), key=numbers.__getitem__):
        depth = int(tree.depth[node])
        if max_depth is not None and depth > max_depth:
            continue
        n = int(tree.n_node_samples[node])
        w = float(tree.weighted_n_node_samples[node])
        leaf = tree.left[node] == LEAF
        head = f"Node number {numbers[node]}: {n} observations"
        if w != n:
            head += f" (weight {fmt(w)})"
        if not leaf and not np.isnan(tree.alpha[node]):
            cp = float(tree.alpha[node]) / r_root if r_root > 0 else 0.0
            head += f", alpha={risk(tree.alpha[node])}, cp={risk(cp)}"
        lines.append(head + (" (leaf)" if leaf else ""))
        if is_classifier:
            p_t = float(p_node[node])
            loss = float(tree.risk[node]) / p_t if p_t > 0 else 0.0
            lines.append(f"  predicted class={classes[tree.label[node]]}  expected "
                         f"loss={risk(loss)}  P(node)={risk(p_t)}")
            lines.append("    class counts: " + " ".join(fmt(v) for v in tree.value[node]))
            prob = tree.value[node] * scale
            prob = prob / prob.sum() if prob.sum() > 0 else prob
            lines.append("   probabilities: " + " ".join(f"{v:.{max(decimals, 1)}f}"
                                                        for v in prob))
        else:
            lines.append(f"  mean={fmt(tree.value[node, 0])}, MSE={risk(tree.impurity[node])}")
        if not leaf:
            lines.extend(_split_lines(tree, node, names, categories, decimals,
                                      float(improve_scale[node]), numbers))
            for _, row in (ties.groups.get(node, ()) if ties is not None else ()):
                lines.append(f"  Tied with: {row['tied_with']} ({row['kind']})")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


class _Ties(NamedTuple):
    caption: str
    groups: dict     # node id of tree_ -> [(index, row)] of its tied splits


def _ties_by_node(estimator, X, y, sample_weight):
    """The exact ties of :func:`cartjit.steps.tied_splits` by node of ``tree_``, or None
    without ``X`` and ``y``."""
    if X is None and y is None:
        if sample_weight is not None:
            raise ValueError("summary: sample_weight is for listing tied splits, which "
                             "needs X and y as well")
        return None
    if X is None or y is None:
        raise ValueError("summary: give both X and y (the learning sample of the fit) to "
                         "list the tied splits, or neither")
    from .steps.ties import NOT_EXACT, tied_splits
    table = tied_splits(estimator, X, y, sample_weight=sample_weight)
    groups = {}
    for i, row in table.iterrows():
        if row["kind"] != NOT_EXACT:
            groups.setdefault(int(row["node"]), []).append((i, row))
    return _Ties(table.caption, groups)


def _path_lines(estimator, decimals):
    """The pruning sequence as a small table (CV columns for the CV estimators)."""
    table = getattr(estimator, "cv_results_", None)
    if table is not None:
        cols = ["k", "alpha", "cp", "n_leaves", "rel_error", "xerror", "xstd"]
        title = "Pruning sequence and cross-validation (xerror, xstd: R^CV and SE / R(root)):"
    else:
        try:
            table = estimator.cost_complexity_path()
        except Exception:  # a tree without its T_max (set by hand): no sequence to show
            return []
        cols = ["k", "alpha", "cp", "n_leaves", "rel_error"]
        title = "Pruning sequence (weakest link):"
    cols = [c for c in cols if c in table.columns]
    text = table[cols].to_string(index=False,
                                 float_format=lambda v: f"{v:.{max(decimals, 4)}g}")
    return [title] + ["  " + line for line in text.splitlines()] + [""]


def _split_lines(tree, node, names, categories, decimals, improve_scale, numbers):
    """The children (by their printed ``numbers``), primary and competitor splits,
    surrogates and majority of a node."""
    n = int(tree.n_node_samples[node])
    lc, rc = int(tree.left[node]), int(tree.right[node])
    out = [f"  left son={numbers[lc]} ({int(tree.n_node_samples[lc])} obs) right son="
           f"{numbers[rc]} ({int(tree.n_node_samples[rc])} obs)"]
    imp = lambda x: _risk(x * improve_scale, decimals)  # noqa: E731
    f = int(tree.feature[node])
    out.append("  Primary splits:")
    primary = _split_line(tree, f, tree.threshold[node], tree.level_row[node], 1, names,
                          categories, decimals)
    out.append(f"      {primary}, improve={imp(tree.improvement[node])}, "
               f"({n - int(tree.n_primary[node])} missing)")
    start = int(tree.competitor_start[node])
    for r in range(start, start + int(tree.n_competitors[node])):
        g = int(tree.competitor_feature[r])
        text = _split_line(tree, g, tree.competitor_threshold[r],
                           tree.competitor_level_row[r], 1, names, categories, decimals)
        out.append(f"      {text}, improve={imp(tree.competitor_improvement[r])}, "
                   f"({n - int(tree.competitor_count[r])} missing)")
    k = int(tree.n_surrogates[node])
    if k:
        out.append("  Surrogate splits:")
        start = int(tree.surrogate_start[node])
        for r in range(start, start + k):
            g = int(tree.surrogate_feature[r])
            text = _split_line(tree, g, tree.surrogate_threshold[r],
                               tree.surrogate_level_row[r], int(tree.surrogate_low_left[r]),
                               names, categories, decimals)
            out.append(f"      {text}, agree={tree.surrogate_agree[r]:.3f}, "
                       f"adj={tree.surrogate_adj[r]:.3f}, ({int(tree.surrogate_count[r])} "
                       "split)")
    if int(tree.n_primary[node]) < n:  # some cases miss the split feature
        where = {1: "left", 0: "right", -1: "none (the children tie: such cases stop here)"}
        out.append("  Majority direction (use_surrogate=2, for the cases no split routes): "
                   + where.get(int(tree.majority_left[node]), "?"))
    return out


# --------------------------------------------------------------------------- shared

class _View(NamedTuple):
    """What the writers below read off a fitted estimator, after checking arguments."""

    tree: object          # the Tree to write (``tree_``)
    names: list           # feature names
    categories: list      # level names per feature (None for a numeric feature)
    classes: list | None  # class names to show (None for a regressor)


def _view(estimator, feature_names, decimals, max_depth, caller, class_names=None):
    tree, names = _checked(estimator, feature_names, decimals, max_depth, caller)
    n_features = len(names)
    categories = getattr(estimator, "categories_", None) or [None] * n_features
    classes = getattr(estimator, "classes_", None)
    if class_names is not None:
        if classes is None:
            raise ValueError("class_names is for classifiers: this "
                             f"{type(estimator).__name__} predicts a number")
        if isinstance(class_names, str) or not hasattr(class_names, "__len__"):
            raise TypeError("class_names must be a sequence of names, one per class, got "
                            f"{class_names!r}")
        if len(class_names) != len(classes):
            raise ValueError(f"class_names has {len(class_names)} entries but the estimator "
                             f"has {len(classes)} classes ({', '.join(map(str, classes))})")
        classes = class_names
    classes = None if classes is None else [str(c) for c in classes]
    return _View(tree, names, list(categories), classes)


def _preorder(tree, max_depth, first_left=None):
    """Node ids depth-first, the first child (left unless ``first_left`` says otherwise)
    before the second, down to ``max_depth``."""
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if tree.left[node] != LEAF and (max_depth is None or tree.depth[node] < max_depth):
            a, b = int(tree.left[node]), int(tree.right[node])
            if first_left is not None and not first_left[node]:
                a, b = b, a
            stack.append(b)
            stack.append(a)
    return order


def _cut(tree, node, max_depth):
    """Whether ``node`` is a split node whose children ``max_depth`` leaves out."""
    return tree.left[node] != LEAF and max_depth is not None and tree.depth[node] >= max_depth


def _probabilities(estimator, tree, node):
    """p(j | t) under the fitted priors (the counts' shares without them)."""
    priors = getattr(estimator, "priors_", None)
    counts = tree.value[node]
    if priors is not None:
        totals = estimator.class_weight_totals_
        counts = counts * np.divide(priors, totals, out=np.zeros_like(priors),
                                    where=totals > 0)
    total = counts.sum()
    return counts / total if total > 0 else counts


# --------------------------------------------------------------------------- rpart layout

def _rpart_layout(estimator, feature_names, decimals, max_depth):
    """The tree as R's ``print.rpart`` prints it::

        n= 150

        node), split, n, loss, yval, (yprob)
              * denotes terminal node

         1) root 150 100 setosa (0.333 0.333 0.333)
           2) petal_length< 2.45 50   0 setosa (1.000 0.000 0.000) *
           3) petal_length>=2.45 100  50 versicolor (0.000 0.500 0.500)
           ...

    One line per node, depth-first, indented two spaces per level: rpart's node number
    (root 1, children 2k and 2k + 1, numbered and ordered as rpart orders them, see
    :func:`_first_is_left`), the split leading to the node as rpart writes it
    (``x< c`` and ``x>=c``; a level set ``x=a,b``; an ordinal feature by level names,
    ``size<=small`` and ``size>=medium``), the number of learning cases, the
    loss (classification: R(t) times the root's case weight, the weighted count of
    misclassified cases under the default priors and costs; regression: the deviance
    Σ w (y - ȳ(t))²), yval (the class, or the mean) and for classification p(j | t) in
    the order of the classes; `` *`` ends a leaf. A case exactly at a cut point goes to
    the ``<`` side here (``x <= c``), to the ``>=`` side in rpart; thresholds are
    midpoints between learning values, so no learning case sits on one.
    """
    view = _view(estimator, feature_names, decimals, max_depth, "export_text")
    tree = view.tree
    w_root = float(tree.weighted_n_node_samples[0])
    first_left = _first_is_left(estimator, tree)
    numbers = _rpart_numbers(estimator, tree)
    fmt = lambda x: _number(x, decimals)  # noqa: E731

    split_text = {0: "root"}
    for node in range(tree.n_nodes):
        if tree.left[node] == LEAF:
            continue
        f = int(tree.feature[node])
        name, levels = view.names[f], view.categories[f]
        row = int(tree.level_row[node])
        thr = float(tree.threshold[node])
        if row >= 0:
            left, right = (f"{name}={','.join(_levels_named(levels, _level_codes(bits)))}"
                           for bits in tree.level_sets[row])
        elif levels is not None and 0 <= thr < len(levels) - 1:
            last = int(np.floor(thr))  # an ordinal feature: codes up to floor(thr) go left
            left, right = f"{name}<={levels[last]}", f"{name}>={levels[last + 1]}"
        else:
            left, right = f"{name}< {fmt(thr)}", f"{name}>={fmt(thr)}"
        split_text[int(tree.left[node])] = left
        split_text[int(tree.right[node])] = right

    order = _preorder(tree, max_depth, first_left)
    loss = _column([float(tree.risk[i]) * w_root for i in order], decimals)
    width_number = max(len(str(numbers[i])) for i in order)
    if view.classes is not None:
        yval = []
        for i in order:
            probs = " ".join(f"{p:.{decimals}f}" for p in _probabilities(estimator, tree, i))
            yval.append(f"{view.classes[tree.label[i]]} ({probs})")
        head = "node), split, n, loss, yval, (yprob)"
    else:
        yval = _column(tree.value[order, 0], decimals)
        head = "node), split, n, deviance, yval"
    lines = [f"n= {int(tree.n_node_samples[0])}", "", head, "      * denotes terminal node",
             ""]
    for i, node in enumerate(order):
        line = (f"{'  ' * int(tree.depth[node])}{str(numbers[node]).rjust(width_number)}) "
                f"{split_text[node]} {int(tree.n_node_samples[node])} "
                f"{loss[i]} {yval[i]}")
        if tree.left[node] == LEAF:
            line += " *"
        elif _cut(tree, node, max_depth):
            line += " ..."
        lines.append(line)
    return "\n".join(lines) + "\n"


def _column(values, decimals):
    """Numbers with the same decimals, as many as the value needing most (at most
    ``decimals``), right-aligned to one width (R's ``format`` of a column)."""
    values = [_settled(v) for v in values]
    used = max(len(_number(v, decimals).partition(".")[2]) for v in values)
    texts = [f"{v:.{used}f}" for v in values]
    width = max(map(len, texts))
    return [t.rjust(width) for t in texts]


# --------------------------------------------------------------------------- rules

class _Rule(NamedTuple):
    """The path to one node as merged conditions: per feature in order of first use,
    ``(lo, hi)`` (lo < x <= hi, None for an open end; level codes for an ordinal
    feature) or a frozenset of level codes (a nominal feature)."""

    node: int
    conditions: dict


def _rules(view, max_depth):
    """One :class:`_Rule` per leaf (or per node at ``max_depth``), depth-first, left first."""
    tree = view.tree
    out = []
    stack = [(0, {})]
    while stack:
        node, cond = stack.pop()
        if tree.left[node] == LEAF or _cut(tree, node, max_depth):
            out.append(_Rule(node, cond))
            continue
        f = int(tree.feature[node])
        row = int(tree.level_row[node])
        children = []
        for side in (0, 1):
            c = dict(cond)
            if row >= 0:
                codes = frozenset(_level_codes(tree.level_sets[row, side]))
                c[f] = c[f] & codes if f in c else codes
            else:
                lo, hi = c.get(f, (None, None))
                thr = float(tree.threshold[node])
                if side == 0:
                    hi = thr if hi is None else min(hi, thr)
                else:
                    lo = thr if lo is None else max(lo, thr)
                c[f] = (lo, hi)
            children.append((int(tree.left[node]) + side, c))
        stack.append(children[1])
        stack.append(children[0])
    return out


def _condition_text(view, f, cond, decimals):
    name, levels = view.names[f], view.categories[f]
    if isinstance(cond, frozenset):  # every level: a rule is exact, however long
        return f"{name} in {{{', '.join(_levels_named(levels, sorted(cond)))}}}"
    lo, hi = cond
    if levels is not None:  # ordinal: thresholds between level codes
        show = lambda t: str(levels[int(np.floor(t))])  # noqa: E731
    else:
        show = lambda t: _number(t, decimals)  # noqa: E731
    if lo is not None and hi is not None:
        return f"{show(lo)} < {name} <= {show(hi)}"
    return f"{name} <= {show(hi)}" if lo is None else f"{name} > {show(lo)}"


def export_rules(estimator, feature_names=None, *, decimals=3, max_depth=None,
                 class_names=None, as_frame=False, tree=None):
    """One readable if/then rule per leaf of the fitted tree, left to right.

    ::

        if petal_length > 2.45 and petal_width <= 1.75 then class = versicolor (n=54, 49/54 = 0.907)

    A rule joins the conditions on the path from the root with ``and``, several
    conditions on one feature merged into one (``2.45 < petal_length <= 4.95``; a level
    set is the intersection of the sets on the path, ``colour in {red, blue}``, listed
    in full however long; an
    ordinal feature reads in level names, ``small < size <= large``). The rule ends with
    the node's prediction and support: for a classifier the class j*(t), the number of
    learning cases n(t), and the weighted count of the predicted class out of the node's
    weight with its share; for a regressor ``y = ȳ(t) (n=...)``. The rules of a tree
    cover every complete case exactly once: a case satisfies the conditions of the one
    leaf ``apply`` sends it to.

    A case missing a split feature is routed by the node's surrogate splits, then by
    the majority (docs/maths.md §8), so it can end in a leaf whose conditions it does
    not satisfy; when the tree has surrogate splits or such cases, a last line says so.

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or their CV variants
    feature_names : sequence of str, optional
        As in :func:`export_text`.
    decimals : int, default 3
        Decimals of thresholds, counts, shares and means.
    max_depth : int, optional
        Stop at this depth: a node there that still splits gives one rule (its own
        prediction), marked ``...``.
    class_names : sequence of str, optional
        Names shown for the classes, one per entry of ``classes_`` (classifiers only).
    as_frame : bool, default False
        Return a pandas DataFrame instead of text, one row per rule: ``node`` (the
        leaf's id in ``tree_``, what :meth:`apply` returns), ``number`` (the leaf's
        printed number, as in :func:`export_text`; :func:`node_numbers`), ``rule`` (the
        conditions joined with ``and``; empty for a tree that is only its root), ``n``,
        ``weight``, ``prediction`` (class name or mean) and, for a classifier, ``share``
        (the predicted class's share of the weight).
    tree : int, optional
        With a forest: the index of the tree (as :func:`export_text`).

    Returns
    -------
    str (ending with a newline) or pandas.DataFrame
    """
    estimator = _one_tree(estimator, tree, "export_rules")
    if not isinstance(as_frame, (bool, np.bool_)):
        raise TypeError(f"as_frame must be True or False, got {as_frame!r}")
    view = _view(estimator, feature_names, decimals, max_depth, "export_rules", class_names)
    tree = view.tree
    fmt = lambda x: _number(x, decimals)  # noqa: E731
    numbers = _rpart_numbers(estimator, tree)
    rows, lines = [], []
    for rule in _rules(view, max_depth):
        node = rule.node
        text = " and ".join(_condition_text(view, f, c, decimals)
                            for f, c in rule.conditions.items())
        n = int(tree.n_node_samples[node])
        w = float(tree.weighted_n_node_samples[node])
        row = {"node": node, "number": numbers[node], "rule": text, "n": n, "weight": w}
        if view.classes is not None:
            label = int(tree.label[node])
            count = float(tree.value[node, label])
            row["prediction"] = view.classes[label]
            row["share"] = count / w
            tail = (f"class = {view.classes[label]} (n={n}, {fmt(count)}/{fmt(w)} = "
                    f"{count / w:.{decimals}f})")
        else:
            row["prediction"] = float(tree.value[node, 0])
            tail = f"y = {fmt(tree.value[node, 0])} (n={n}"
            tail += ")" if w == n else f", weight {fmt(w)})"
        rows.append(row)
        line = f"if {text} then {tail}" if text else f"always: {tail}"
        lines.append(line + (" ..." if _cut(tree, node, max_depth) else ""))
    if as_frame:
        import pandas as pd
        return pd.DataFrame(rows)
    internal = tree.left != LEAF
    n_stop = int(np.count_nonzero(tree.n_primary[internal] < tree.n_node_samples[internal]))
    if tree.has_surrogates or n_stop:
        lines.append(f"Note: the rules read complete cases. A case missing a split feature "
                     f"is routed by surrogate splits ({int(np.count_nonzero(tree.n_surrogates))}"
                     f" nodes have some), then by the majority, and may end in a leaf whose "
                     f"conditions it does not meet.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- Graphviz

#: Fill colours of the classes (cycled beyond ten), blended with white by purity.
CLASS_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: Fill colour of the largest mean of a regression tree (white for the smallest).
VALUE_COLOUR = "#e58139"


def _dot_string(text):
    """``text`` as a DOT double-quoted string: backslashes and quotes escaped, a line
    break written as Graphviz's centred ``\\n``; ``<``, ``>`` and ``&`` need nothing
    inside quotes (only HTML-like labels would read them)."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{text}"'


def _blend(colour, alpha):
    """``colour`` (#rrggbb) mixed with white: alpha 0 is white, 1 the colour itself."""
    alpha = min(max(float(alpha), 0.0), 1.0)
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 - alpha * (255 - c)):02x}" for c in rgb)


def _surrogate_lines(tree, node, view, decimals):
    """The surrogate splits of a node as ``surrogate: <condition sent left> (agree a)``,
    and how many of its cases miss the split feature."""
    out = []
    start = int(tree.surrogate_start[node])
    for r in range(start, start + int(tree.n_surrogates[node])):
        g = int(tree.surrogate_feature[r])
        left, right = _conditions(tree, int(tree.surrogate_level_row[r]),
                                  float(tree.surrogate_threshold[r]), view.names[g],
                                  view.categories[g], decimals)
        cond = left if int(tree.surrogate_level_row[r]) >= 0 or \
            int(tree.surrogate_low_left[r]) else right
        out.append(f"surrogate: {cond} (agree {tree.surrogate_agree[r]:.3f})")
    missing = int(tree.n_node_samples[node]) - int(tree.n_primary[node])
    if missing:
        out.append(f"missing = {missing}")
    return out


def export_graphviz(estimator, feature_names=None, *, class_names=None, max_depth=None,
                    decimals=3, filled=True, surrogates=False, rounded=True, tree=None):
    """The fitted tree as Graphviz DOT text (a ``digraph``); no Graphviz install needed
    to make it (``dot -Tpng tree.dot -o tree.png`` draws it).

    One box per node, named by its printed number (as in :func:`export_text`;
    :func:`node_numbers`): a split node shows its question
    (``petal_length <= 2.45``, or ``colour in {red, blue}`` naming the levels that go
    left), then ``n = ...`` (and the weight when it differs), the class counts and the
    class j*(t) (or ``value = ȳ(t)``). The edge to the left child is labelled ``yes``,
    to the right child ``no``. Leaves have a double border. ``filled`` colours the
    boxes: by class from :data:`CLASS_COLOURS`, paler the less pure the node (the
    largest p(j | t) from 1/J, white, to 1); for a regressor from white (the smallest mean shown) to
    :data:`VALUE_COLOUR` (the largest). A split node at ``max_depth`` gets one dashed
    ``(...)`` child standing for its cut subtree. ``surrogates=True`` adds a node's
    surrogate splits (each as the condition it sends left, with its agreement) and the
    number of its cases missing the split feature. Names are escaped for DOT (quotes,
    backslashes; a newline in a name becomes a line break). With a forest, ``tree=k``
    draws its tree k (as :func:`export_text`).
    """
    estimator = _one_tree(estimator, tree, "export_graphviz")
    for name, value in (("filled", filled), ("surrogates", surrogates), ("rounded", rounded)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    view = _view(estimator, feature_names, decimals, max_depth, "export_graphviz",
                 class_names)
    tree = view.tree
    numbers = _rpart_numbers(estimator, tree)
    fmt = lambda x: _number(x, decimals)  # noqa: E731
    order = _preorder(tree, max_depth)
    style = ", ".join(s for s, on in (("filled", filled), ("rounded", rounded)) if on)
    lines = ["digraph Tree {",
             f'node [shape=box{f", style={_dot_string(style)}" if style else ""}, '
             'color="black", fontname="helvetica"] ;',
             'edge [fontname="helvetica"] ;']
    if view.classes is None and filled:
        shown = tree.value[order, 0]
        low, span = float(shown.min()), float(shown.max() - shown.min())
    for node in order:
        leaf = tree.left[node] == LEAF
        label = []
        if not leaf:
            f = int(tree.feature[node])
            label.append(_split_texts(tree, node, view.names[f], view.categories[f],
                                      decimals)[0])
            if surrogates:
                label.extend(_surrogate_lines(tree, node, view, decimals))
        n = int(tree.n_node_samples[node])
        w = float(tree.weighted_n_node_samples[node])
        label.append(f"n = {n}" + ("" if w == n else f" (weight {fmt(w)})"))
        attrs = []
        if view.classes is not None:
            label.append("counts = [" + ", ".join(fmt(v) for v in tree.value[node]) + "]")
            label.append(f"class = {view.classes[tree.label[node]]}")
            if filled:
                p = _probabilities(estimator, tree, node)
                j = len(p)
                alpha = (p.max() - 1 / j) / (1 - 1 / j) if j > 1 else 1.0
                colour = CLASS_COLOURS[int(tree.label[node]) % len(CLASS_COLOURS)]
                attrs.append(f'fillcolor="{_blend(colour, alpha)}"')
        else:
            label.append(f"value = {fmt(tree.value[node, 0])}")
            if filled:
                alpha = (float(tree.value[node, 0]) - low) / span if span > 0 else 1.0
                attrs.append(f'fillcolor="{_blend(VALUE_COLOUR, alpha)}"')
        if leaf:
            attrs.append("peripheries=2")
        name = numbers[node]
        lines.append(f"{name} [label={_dot_string(chr(10).join(label))}"
                     + "".join(", " + a for a in attrs) + "] ;")
        if node:
            parent = int(tree.parent[node])
            answer = "yes" if int(tree.left[parent]) == node else "no"
            lines.append(f'{numbers[parent]} -> {name} [label="{answer}"] ;')
        if _cut(tree, node, max_depth):
            lines.append(f'cut{name} [label="(...)", style="dashed"] ;')
            lines.append(f"{name} -> cut{name} ;")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- printcp

def _r_format(values, digits):
    """Numbers formatted together as R's ``format(x, digits=)`` does: enough significant
    digits (at most ``digits``) for the value needing most, the same number of
    decimals for all, scientific notation when that is narrower."""
    values = [float(v) for v in values]
    finite = [v for v in values if np.isfinite(v) and v != 0]
    sig, decimals = 1, 0
    for v in finite:
        mantissa, exponent = f"{abs(v):.{digits - 1}e}".split("e")
        used = len(mantissa.replace(".", "").rstrip("0")) or 1
        sig = max(sig, used)
        decimals = max(decimals, used - 1 - int(exponent))
    fixed = [f"{v:.{decimals}f}" if np.isfinite(v) else str(v) for v in values]
    sci = [f"{v:.{sig - 1}e}" if np.isfinite(v) else str(v) for v in values]
    if max(map(len, fixed), default=0) > max(map(len, sci), default=0):
        return sci
    return fixed


def format_cp(cv_estimator, digits=5):
    """The pruning (and cross-validation) table as R's ``printcp`` prints it::

        Classification tree:

        Variables actually used in tree construction:
        [1] petal_length petal_width

        Root node error: 100/150 = 0.66667

        n= 150

             CP nsplit rel error xerror     xstd
        1 0.500      0      1.00   1.19 0.049592
        ...

    One row per subtree T_k of the pruning sequence, the root first: CP = α_k / R(root)
    (rpart's complexity parameter), nsplit = ``|T~_k|`` - 1, rel error = R(T_k) / R(root)
    and, for the CV estimators, xerror = R^CV(T_k) / R(root) and xstd = SE / R(root)
    (``cv_results_``); a line names the tree T_k and the row the selection rule chose,
    and a last line how a row's number r gives the book's k of its tree (the rows count
    from the root as rpart's do, so k = K + 1 - r; docs/reading-trees.md). The variables
    are those split on in T_1, the largest tree of the sequence, sorted; the root node
    error is R(root)
    times the root's weight (rpart's ``dev``: misclassified weight, or the sum of squares)
    over the number of cases. Each column is formatted like R's with ``digits``
    significant digits. A plain estimator prints its cost-complexity path (CP, nsplit,
    rel error).
    """
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) or \
            not 1 <= digits <= 15:
        raise ValueError(f"digits must be an integer from 1 to 15, got {digits!r}")
    if not hasattr(cv_estimator, "cost_complexity_path"):
        raise TypeError("format_cp needs a cartjit estimator (CARTClassifierCV, "
                        f"CARTRegressorCV, CARTClassifier, CARTRegressor), got "
                        f"{type(cv_estimator).__name__}")
    tree, names = _checked(cv_estimator, None, 0, None, "format_cp")
    table = getattr(cv_estimator, "cv_results_", None)
    is_cv = table is not None
    if not is_cv:
        table = cv_estimator.cost_complexity_path()
    table = table.sort_values("alpha", ascending=False, kind="stable")
    # the largest tree of the sequence, T_1 = T(0) (T_max without its splits that lower
    # no risk), as rpart's own fit
    grown = cv_estimator.prune(0.0).tree_ if hasattr(cv_estimator, "tree_max_") else tree
    used = sorted({names[f] for f in grown.feature[grown.left != LEAF].tolist()})

    kind = "Classification" if getattr(cv_estimator, "classes_", None) is not None \
        else "Regression"
    lines = [f"{kind} tree:", ""]
    if used:
        lines.append("Variables actually used in tree construction:")
        lines.extend(_r_vector(used))
        lines.append("")
    n = int(tree.n_node_samples[0])
    dev = float(tree.risk[0]) * float(tree.weighted_n_node_samples[0])
    lines.append(f"Root node error: {_r_format([dev], digits)[0]}/{n} = "
                 f"{_r_format([dev / n], digits)[0]}")
    lines += ["", f"n= {n}", ""]

    columns = [("CP", _r_format(table["cp"], digits)),
               ("nsplit", [str(int(v) - 1) for v in table["n_leaves"]]),
               ("rel error", _r_format(table["rel_error"], digits))]
    if is_cv:
        columns += [("xerror", _r_format(table["xerror"], digits)),
                    ("xstd", _r_format(table["xstd"], digits))]
    rows = [str(i + 1) for i in range(len(table))]
    width = max(map(len, rows))
    widths = [max(len(head), *map(len, cells)) for head, cells in columns]
    lines.append(" " * width + "".join(" " + head.rjust(w)
                                       for (head, _), w in zip(columns, widths)))
    for i, row in enumerate(rows):
        lines.append(row.ljust(width) + "".join(" " + cells[i].rjust(w)
                                                for (_, cells), w in zip(columns, widths)))
    ks = [int(k) for k in table["k"]]  # decreasing, consecutive: row r is T_{k_1 + 1 - r}
    lines.append("")
    if is_cv:
        chosen = int(np.flatnonzero(table["selected"].to_numpy())[0])
        lines.append(f"Selected by selection={cv_estimator.selection!r}: T_{ks[chosen]}, "
                     f"row {chosen + 1} (nsplit {columns[1][1][chosen]}, CP "
                     f"{columns[0][1][chosen].strip()})")
    where = "cv_results_.loc[k] and cptable_.loc[k]" if is_cv else "cptable_.loc[k]"
    lines.append(f"Row r is T_k with k = {ks[0] + 1} - r ({where} are its rows)")
    return "\n".join(lines) + "\n"


def _r_vector(words, width=80):
    """A character vector as R prints it without quotes: items padded to one width,
    lines led by the index of their first item (``[1]``)."""
    size = max(map(len, words))
    lead = len(f"[{len(words)}]")
    per_line = max(1, (width - lead) // (size + 1))
    out = []
    for start in range(0, len(words), per_line):
        items = " ".join(w.ljust(size) for w in words[start:start + per_line])
        out.append(f"[{start + 1}]".rjust(lead) + " " + items.rstrip())
    return out


def print_cp(cv_estimator, digits=5, file=None):
    """Print :func:`format_cp` (to ``file``, default standard output)."""
    print(format_cp(cv_estimator, digits), end="", file=file)
