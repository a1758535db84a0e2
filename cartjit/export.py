"""Text export of a fitted tree: :func:`export_text`.

The layout follows R's ``print.rpart``, which readers of CART output know: one line per
node, depth-first with the left child first, indented two spaces per level, numbered by
the node's id in the flat arrays (:mod:`cartjit._tree`), leaves marked with ``*``::

    node) split: n, class counts -> class, R(t)      (* leaf)
    0) root: n=150, counts [50, 50, 50] -> setosa, R=0.667
      1) petal_length <= 2.45: n=50, counts [50, 0, 0] -> setosa, R=0 *
      2) petal_length > 2.45: n=100, counts [0, 50, 50] -> versicolor, R=0.333
    ...

For a classifier the counts are the weighted class counts N_j(t) in the order of
``classes_`` and the class is the node label j*(t); for a regressor each node shows
the weighted mean ȳ(t). R is the node risk R(t) of docs/maths.md §1 and §3 (so the R of the leaves
add up to R(T)).

A split on a categorical feature (docs/maths.md §7) names the levels each child takes,
``humidity in {high}`` / ``humidity in {normal}``; a long set is cut after
:data:`MAX_LEVELS_SHOWN` levels with the number left out, ``{a, b, c, ... (+9 more)}``.
The sets list the levels present among the node's learning cases: any other level (and
one never seen in fit) goes to the child with more training weight. A split on an
ordinal feature (an ordered pandas categorical) names the last level on the left,
``size <= medium`` / ``size > medium``.
"""
from __future__ import annotations

import numpy as np

from ._tree import LEAF

__all__ = ["export_text", "MAX_LEVELS_SHOWN"]

#: Levels printed in one set of a categorical split before it is cut short.
MAX_LEVELS_SHOWN = 8


def _number(x, decimals):
    x = float(x)
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


def _level_set(levels, codes):
    """``{a, b, ...}`` for the given level codes, cut after MAX_LEVELS_SHOWN levels."""
    shown = [str(levels[c]) if levels is not None and c < len(levels) else f"#{c}"
             for c in codes[:MAX_LEVELS_SHOWN]]
    if len(codes) > MAX_LEVELS_SHOWN:
        shown.append(f"... (+{len(codes) - MAX_LEVELS_SHOWN} more)")
    return "{" + ", ".join(shown) + "}"


def _split_texts(tree, node, name, levels, decimals):
    """The (left, right) split conditions of an internal node."""
    row = int(tree.level_row[node]) if hasattr(tree, "level_row") else -1
    if row >= 0:
        left = _level_set(levels, _level_codes(tree.level_sets[row, 0]))
        right = _level_set(levels, _level_codes(tree.level_sets[row, 1]))
        return f"{name} in {left}", f"{name} in {right}"
    thr = float(tree.threshold[node])
    if levels is not None and 0 <= thr < len(levels) - 1:
        # codes of an ordinal feature: the left child takes the levels up to floor(thr)
        last = str(levels[int(np.floor(thr))])
        return f"{name} <= {last}", f"{name} > {last}"
    text = _number(thr, decimals)
    return f"{name} <= {text}", f"{name} > {text}"


def export_text(estimator, feature_names=None, *, decimals=3, max_depth=None,
                show_alpha=False):
    """The fitted tree of ``estimator`` as indented text (see the module docstring).

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or their CV variants
        Its ``tree_`` is printed (T(ccp_alpha) or the CV-selected subtree).
    feature_names : sequence of str, optional
        One name per feature; default ``feature_names_in_`` when the estimator was
        fitted on a DataFrame, else ``x0, x1, ...``.
    decimals : int, default 3
        Decimals of thresholds, means and risks.
    max_depth : int, optional
        Print nodes down to this depth only; a cut branch ends with ``...``.
    show_alpha : bool, default False
        Also print, for each split, the α at which it is pruned away (docs/maths.md §4).

    Returns
    -------
    str
        The text, ending with a newline.
    """
    tree = getattr(estimator, "tree_", None)
    if tree is None:
        from ._validation import not_fitted_error
        raise not_fitted_error(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "before export_text.")
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
        line = f"{'  ' * depth}{node}) {split}: {describe(node)}"
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
