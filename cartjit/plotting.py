"""Pictures of a fitted tree: :func:`plot_tree`, :func:`plot_partition`, :func:`plot_cv`,
:func:`plot_importance`; of a fitted forest: :func:`plot_oob_error`,
:func:`plot_forest_importance`, :func:`plot_proximity`.

Each function draws into the matplotlib ``Axes`` it is given, or into a new figure when
``ax`` is None, and returns the Axes. A new figure is a bare
``matplotlib.figure.Figure``: no pyplot, no GUI backend, nothing shown, so the functions
work headless (``ax.figure.savefig("tree.png")``); in a notebook or a pyplot script pass
``ax=plt.gca()`` or display ``ax.figure``. matplotlib is imported by the functions
themselves (the ``plot`` extra, ``pip install "cartjit[plot]"``), never by
``import cartjit``.

One look throughout, shared with the experiment runner's plots
(:mod:`cartjit.experiments.reports`): classes take the colours of :data:`CLASS_COLORS`
in the order of ``classes_`` (a box or a region is the class colour blended with white,
the more so the less pure the node), numbers (a regression tree's means) the sequential
colour map :data:`VALUE_CMAP`, and cross-validated risks are drawn as points with bars
of ± 1 SE (:data:`ERRORBAR_STYLE`) over the resubstitution risk as a grey dashed line
(:data:`RESUB_STYLE`).

The drawn artists carry a ``gid`` for whoever post-processes the figure (and for the
tests): ``node-<i>`` for the box of node i of ``tree_`` in :func:`plot_tree`,
``leaf-<i>`` for a rectangle of the region of node i in :func:`plot_partition`,
``cv-min`` and ``cv-choice`` for the two marked subtrees of :func:`plot_cv`,
``oob-error`` (and ``oob-error-<j>`` per class) for the curves of :func:`plot_oob_error`,
``importance-bar`` for the bars of both importance plots, ``mds-<j>`` (class j) or
``mds-points`` for the points of :func:`plot_proximity`.
"""
from __future__ import annotations

import numbers

import numpy as np

from .engine.tree import LEAF
from .export import CLASS_COLOURS, _blend, _checked, _conditions, _number

__all__ = ["plot_tree", "plot_partition", "plot_cv", "plot_importance", "plot_oob_error",
           "plot_forest_importance", "plot_proximity", "CLASS_COLORS", "VALUE_CMAP",
           "ERRORBAR_STYLE", "RESUB_STYLE"]

#: Class colours, in the order of ``classes_``: those of ``export_graphviz``
#: (matplotlib's "tab10"), then "tab20"'s light shades; more classes cycle.
CLASS_COLORS = tuple(CLASS_COLOURS) + ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                       "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
                                       "#dbdb8d", "#9edae5")
#: Colour map of a regression tree's values (boxes, regions and points).
VALUE_CMAP = "viridis"
#: Points with ± 1 SE bars: R^CV in :func:`plot_cv` and in the runner's plots.
ERRORBAR_STYLE = {"marker": "o", "markersize": 3.5, "linewidth": 1.2, "capsize": 2.5}
#: The resubstitution risk drawn for reference.
RESUB_STYLE = {"color": "0.5", "linestyle": "--", "linewidth": 1.0}
#: The line at min R^CV + 1 SE and the marks of the chosen subtrees.
_BOUND_STYLE = {"color": "0.35", "linestyle": ":", "linewidth": 1.0}
_MIN_COLOR = "#d62728"
_GRID_ALPHA = 0.3
_TITLE_SIZE = 10
_SMALL_SIZE = 8


# --------------------------------------------------------------------------- shared helpers

def _require_matplotlib(caller):
    """Import matplotlib, or say how to install it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"{caller} needs matplotlib, which is not installed: pip install "
                          "matplotlib (or pip install 'cartjit[plot]')") from exc


def _new_axes(ax, figsize, layout="constrained"):
    """``ax`` after checking it, or the Axes of a new bare Figure (no pyplot), laid out
    by matplotlib's constrained layout unless ``layout`` is None."""
    if ax is not None:
        from matplotlib.axes import Axes
        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
        return ax
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, dpi=100, layout=layout)
    return fig.add_subplot()


def style_axes(ax, *, grid=True):
    """The common look of a data plot: a light grid under the data."""
    if grid:
        ax.grid(True, alpha=_GRID_ALPHA)
        ax.set_axisbelow(True)


def size_axis(ax, leaves, *, log=None):
    """Tree size on the x axis: logarithmic when a tree has more than 30 leaves (or as
    ``log`` says), with plain numbers as tick labels, and ticks only at whole numbers of
    leaves (a close-up on a few sizes would otherwise tick 1.5, 2.5, ...). Returns
    whether it is logarithmic."""
    from matplotlib.ticker import MaxNLocator

    if log is None:
        log = float(np.max(leaves)) > 30
    if log:
        from matplotlib.ticker import FuncFormatter
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("size of tree (number of leaves $|\\tilde T_k|$)")
    return bool(log)


def class_color(j):
    """Colour of class index ``j`` (:data:`CLASS_COLORS`, cycling)."""
    return CLASS_COLORS[int(j) % len(CLASS_COLORS)]


def _tint(color, strength):
    """``color`` blended with white: strength 1 is the colour, 0 is white."""
    from matplotlib.colors import to_hex
    return _blend(to_hex(color), strength)


def _class_names(estimator, class_names):
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        if class_names is not None:
            raise ValueError("class_names is for classifiers; this is a regression tree")
        return None
    if class_names is None:
        return [str(c) for c in classes]
    names = [str(c) for c in class_names]
    if len(names) != len(classes):
        raise ValueError(f"class_names has {len(names)} entries but the estimator has "
                         f"{len(classes)} classes")
    return names


def _check_int(value, name, low, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be {'None or ' if allow_none else ''}an integer "
                         f">= {low}, got {value!r}")
    return int(value)


def _node_fill(tree, node, is_classifier, norm):
    """Fill colour of a node: its class colour, stronger the purer the node; or the
    value's colour on :data:`VALUE_CMAP`."""
    if is_classifier:
        counts = tree.value[node]
        total = counts.sum()
        J = counts.shape[0]
        top = counts.max() / total if total > 0 else 1.0
        purity = (top - 1.0 / J) / (1.0 - 1.0 / J) if J > 1 else 1.0
        return _tint(class_color(tree.label[node]), 0.15 + 0.55 * purity)
    import matplotlib
    cmap = matplotlib.colormaps[VALUE_CMAP]
    return _tint(cmap(norm(tree.value[node, 0])), 0.4)


def _value_norm(values):
    from matplotlib.colors import Normalize
    lo, hi = float(np.min(values)), float(np.max(values))
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return Normalize(lo, hi)


# --------------------------------------------------------------------------- plot_tree

def _shown_depth(tree, max_depth, max_leaves):
    """The deepest cut depth d <= max_depth at which the nodes of depth <= d end in at
    most ``max_leaves`` terminal boxes (true leaves, or internal nodes at depth d)."""
    leaf = tree.left == LEAF
    depth = tree.depth
    deepest = tree.max_depth if max_depth is None else min(max_depth, tree.max_depth)
    best = 0
    for d in range(deepest + 1):
        shown = np.count_nonzero(leaf & (depth <= d)) + np.count_nonzero(~leaf & (depth == d))
        if shown > max_leaves:
            break
        best = d
    return best


def _layout(tree, cut):
    """x of every node shown (leaves evenly spaced left to right, a parent centred over
    its children) and the list of nodes shown, for the tree cut at depth ``cut``."""
    x = np.full(tree.n_nodes, np.nan)
    shown = []
    stack = [0]
    next_x = 0
    while stack:  # depth-first, left child first: leaves come in left-to-right order
        node = stack.pop()
        shown.append(node)
        if tree.left[node] == LEAF or tree.depth[node] >= cut:
            x[node] = next_x
            next_x += 1
        else:
            stack.append(int(tree.right[node]))
            stack.append(int(tree.left[node]))
    for node in sorted(shown, reverse=True):  # children have larger ids than parents
        if np.isnan(x[node]):
            x[node] = 0.5 * (x[tree.left[node]] + x[tree.right[node]])
    return x, sorted(shown), next_x


def _split_label(tree, node, names, categories, decimals):
    """The left-going condition of a split node, on two lines when long."""
    f = int(tree.feature[node])
    thr = float(tree.threshold[node])
    if 0 < abs(thr) < 0.5 * 10.0 ** -decimals:  # not "x <= -0": two significant digits
        decimals = int(np.ceil(-np.log10(abs(thr)))) + 1
    left, _ = _conditions(tree, int(tree.level_row[node]), thr, names[f], categories[f],
                          decimals)
    if len(left) > 16:
        name = names[f]
        return name + "\n" + left[len(name):].strip()
    return left


def plot_tree(estimator, *, ax=None, feature_names=None, class_names=None, max_depth=None,
              max_leaves=50, decimals=2, fontsize=None):
    """Draw the fitted tree ``tree_`` as boxes joined by edges.

    Every node is a box holding the node's prediction and its number of learning cases;
    under a split node's box, its condition, as rpart.plot writes it: the cases that
    meet it take the ``yes`` edge, to the left, the others the ``no`` edge (a subset
    split names the levels going left). The prediction: for a classifier the
    class j*(t) and the share of its class among the node's cases (weighted), the box
    filled with the class colour, stronger the purer the node; for a regressor the mean
    ȳ(t), the box coloured by it. Leaves are spread evenly along the bottom and each
    parent is centred over its children.

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or their CV variants
    ax : matplotlib Axes, optional
        Draw here; by default a new figure sized to the tree.
    feature_names, class_names : sequences of str, optional
        Default ``feature_names_in_`` (or ``x0, x1, ...``) and ``classes_``.
    max_depth : int >= 0, optional
        Draw nodes down to this depth only.
    max_leaves : int >= 1, default 50
        Most terminal boxes drawn. A larger tree is cut at the deepest depth that keeps
        at most this many; a cut branch ends in a dashed box saying how many leaves it
        hides, and a note in the top left corner says where the tree was cut. The
        default draws whole the trees cross-validation usually chooses (a new figure
        grows up to 33 inches wide, the text down to 5 points).
    decimals : int >= 0, default 2
        Decimals of thresholds and means.
    fontsize : float, optional
        Text size; by default the largest (up to 11 points) at which neighbouring boxes
        of each level fit side by side and each level's boxes fit its height. A new
        figure is sized for 10-point text, within 33 × 14 inches.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_tree")
    tree, names = _checked(estimator, feature_names, decimals, max_depth, "plot_tree")
    max_leaves = _check_int(max_leaves, "max_leaves", 1)
    if fontsize is not None and (isinstance(fontsize, bool)
                                 or not isinstance(fontsize, numbers.Real) or not fontsize > 0):
        raise ValueError(f"fontsize must be None or a positive number, got {fontsize!r}")
    classes = _class_names(estimator, class_names)
    is_classifier = classes is not None
    categories = list(getattr(estimator, "categories_", None) or [None] * len(names))

    cut = _shown_depth(tree, max_depth, max_leaves)
    x, shown, n_boxes = _layout(tree, cut)
    leaf = tree.left == LEAF
    truncated = bool(np.any(~leaf[shown] & (tree.depth[shown] >= cut)))
    leaves_below = _leaves_below(tree)
    norm = None if is_classifier else _value_norm(tree.value[leaf, 0])

    labels, splits = {}, {}
    for node in shown:
        n = int(tree.n_node_samples[node])
        if is_classifier:
            counts = tree.value[node]
            share = counts[tree.label[node]] / counts.sum()
            lines = [classes[tree.label[node]], f"n={n}  {share:.0%}"]
        else:
            lines = [f"ȳ={_number(tree.value[node, 0], decimals)}", f"n={n}"]
        if not leaf[node]:
            if tree.depth[node] < cut:
                splits[node] = _split_label(tree, node, names, categories, decimals)
            else:
                lines.append(f"… {leaves_below[node]} leaves")
        labels[node] = "\n".join(lines)

    levels = cut + 1
    layout = (labels, splits, n_boxes, levels, x, tree.depth)
    if ax is None:
        # sized for text of _TREE_FONT points: each dimension grown from one inch a leaf
        # slot and a level until the text fits it (at most 33 × 14 inches)
        width, height = 1.05 * n_boxes + 0.4, 1.15 * levels + 0.5
        by_width, by_height = _font_limits(0.98 * width, 0.98 * height, *layout)
        figsize = (float(np.clip(width * max(1.0, _TREE_FONT / by_width), 3.0, 33.0)),
                   float(np.clip(height * max(1.0, _TREE_FONT / by_height), 1.8, 14.0)))
    new = ax is None
    ax = _new_axes(ax, figsize if new else None, layout=None)
    if new:
        ax.figure.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.99)
    if fontsize is None:
        fontsize = _fit_fontsize(ax, *layout)

    ax.set_xlim(-0.55, n_boxes - 0.45)
    ax.set_ylim(-cut - 0.55, 0.5)
    ax.set_axis_off()
    for node in shown:
        if node == 0 or tree.parent[node] < 0:
            continue
        p = int(tree.parent[node])
        ax.plot([x[p], x[node]], [-tree.depth[p], -tree.depth[node]], color="0.45",
                linewidth=0.9, zorder=1)
        is_left = tree.left[p] == node
        ax.text(x[p] + 0.62 * (x[node] - x[p]), -tree.depth[p] - 0.62,
                "yes" if is_left else "no", ha="center", va="center",
                fontsize=0.8 * fontsize, color="0.3", style="italic", zorder=2,
                bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none"})
    for node, text in splits.items():
        # under the box, as rpart.plot writes it: the condition of the "yes" branch
        rows = labels[node].count("\n") + 1
        below = 0.5 * (rows * 1.2 * fontsize + 0.6 * fontsize) + 2.0  # points
        ax.annotate(text, (x[node], -tree.depth[node]), xytext=(0, -below),
                    textcoords="offset points", ha="center", va="top", fontsize=fontsize,
                    zorder=2, gid=f"split-{node}",
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                          "edgecolor": "none"})
    for node in shown:
        cut_here = not leaf[node] and tree.depth[node] >= cut
        ax.text(x[node], -tree.depth[node], labels[node], ha="center", va="center",
                fontsize=fontsize, zorder=3, gid=f"node-{node}",
                fontweight="bold" if leaf[node] else "normal",
                bbox={"boxstyle": "round,pad=0.3",
                      "facecolor": _node_fill(tree, node, is_classifier, norm),
                      "edgecolor": "0.2", "linewidth": 1.2 if leaf[node] else 0.8,
                      "linestyle": "--" if cut_here else "-"})
    if truncated:
        why = f"max_depth={max_depth}" if (max_depth is not None and cut == max_depth
                                           and _shown_depth(tree, None, max_leaves) > cut) \
            else f"max_leaves={max_leaves}"
        ax.text(0.0, 1.0, f"Tree cut at depth {cut} ({why}): {tree.n_leaves} leaves in "
                f"all;\ndashed boxes hide their subtrees.", transform=ax.transAxes,
                ha="left", va="top", fontsize=_SMALL_SIZE, color="0.3",
                gid="truncation-note")
    return ax


def _leaves_below(tree):
    """Number of leaves of T_max's subtree under every node."""
    count = (tree.left == LEAF).astype(np.int64)
    for node in range(tree.n_nodes - 1, -1, -1):
        if tree.left[node] != LEAF:
            count[node] = count[tree.left[node]] + count[tree.right[node]]
    return count


#: The text size a new figure of plot_tree is sized for (points).
_TREE_FONT = 10.0


def _font_limits(width, height, labels, splits, n_boxes, levels, x, depth):
    """The largest font sizes (points) that the width and the height of a drawing area
    of ``width`` × ``height`` inches allow: neighbouring boxes of each level do not
    overlap (as rpart.plot's ``prp`` sizes its text, each box needs only the room
    between it and its neighbours, so a wide split under a parent centred over several
    leaf slots does not shrink every box to one slot), the outermost boxes stay inside
    the axes, and the tallest box with its split and an edge label fits in one level."""
    slot = width / (n_boxes + 0.1)  # inches per leaf slot
    level = height / (levels + 0.05)

    def chars(node):  # widest line of the box and of the split written under it
        text = labels[node] + ("\n" + splits[node] if node in splits else "")
        return max(len(line) for line in text.split("\n"))

    by_width = np.inf
    for d in sorted({int(depth[n]) for n in labels}):
        row = sorted((float(x[n]), chars(n)) for n in labels if depth[n] == d)
        # the axes' edges as neighbours of no width, at -0.55 and n_boxes - 0.45
        row = [(-0.55, 0)] + row + [(n_boxes - 0.45, 0)]
        for (xa, ca), (xb, cb) in zip(row[:-1], row[1:]):
            need = 0.5 * (ca + cb) if ca and cb else float(max(ca, cb))
            room = (xb - xa) * slot * (1.0 if ca and cb else 2.0)
            by_width = min(by_width, 72.0 * 0.9 * room / (0.58 * need + 1.0))
    rows = max(labels[n].count("\n") + 1 + (splits[n].count("\n") + 1 if n in splits else 0)
               for n in labels) + 1
    by_height = 72.0 * 0.62 * level / (1.25 * rows + 0.8)
    return by_width, by_height


def _fit_fontsize(ax, *layout):
    """The largest font size (5 to 11 points) that :func:`_font_limits` allows in
    ``ax``."""
    fig = ax.figure
    pos = ax.get_position()
    limits = _font_limits(fig.get_figwidth() * pos.width, fig.get_figheight() * pos.height,
                          *layout)
    return float(np.clip(min(limits), 5.0, 11.0))


# --------------------------------------------------------------------------- plot_partition

def _feature_index(feature, names, what):
    if isinstance(feature, str):
        if feature not in names:
            raise ValueError(f"{what}: no feature named {feature!r}; the features are "
                             f"{', '.join(names)}")
        return names.index(feature)
    if isinstance(feature, bool) or not isinstance(feature, numbers.Integral):
        raise TypeError(f"{what} must be a feature index or name, got {feature!r}")
    if not 0 <= feature < len(names):
        raise ValueError(f"{what} must be in [0, {len(names)}), got {feature}")
    return int(feature)


def _in_set(tree, row, side, code):
    """Whether level ``code`` is in side ``side`` (0 left, 1 right) of level_sets[row]."""
    words = tree.level_sets[row, side]
    return code // 64 < words.shape[0] and bool((int(words[code // 64]) >> (code % 64)) & 1)


def _route(tree, node, value):
    """Where a case with ``value`` on node's split feature goes: True left, False right,
    None when the split cannot place it (missing, or a level absent from the node)."""
    if np.isnan(value):
        return None
    row = int(tree.level_row[node])
    if row < 0:
        return bool(value <= tree.threshold[node])
    code = int(value)
    if _in_set(tree, row, 0, code):
        return True
    if _in_set(tree, row, 1, code):
        return False
    return None


def _regions(tree, held, axes, use_surrogate):
    """The pieces of the plane (x0, x1, y0, y1) and the node each ends in, by sending
    boxes down the tree: a split on a plotted feature cuts the box (a subset split into
    runs of neighbouring levels), a split on another feature sends it whole where the
    held value goes. Where a split cannot place the box (a held value missing, or
    levels absent from the node: surrogates and the majority decide), the box is cut at
    every threshold of the subtree below and each cell is sent down the tree alone.
    ``axes``: (feature, lo, hi, nominal) of the x and y axes."""
    out = []
    stack = [(0, ((axes[0][1], axes[0][2]), (axes[1][1], axes[1][2])))]
    plotted = {axes[0][0]: 0, axes[1][0]: 1}
    while stack:
        node, box = stack.pop()
        if tree.left[node] == LEAF:
            out.append((node, box))
            continue
        left, right = int(tree.left[node]), int(tree.right[node])
        f = int(tree.feature[node])
        a = plotted.get(f)
        if a is None:
            side = _route(tree, node, held[f])
            if side is None:
                out.extend(_cells(tree, node, held, box, axes, use_surrogate))
            else:
                stack.append((left if side else right, box))
            continue
        lo, hi = box[a]
        row = int(tree.level_row[node])
        if row < 0:  # x <= threshold goes left (numeric or ordinal codes)
            thr = float(tree.threshold[node])
            if thr >= hi:
                stack.append((left, box))
            elif thr <= lo:
                stack.append((right, box))
            else:
                stack.append((right, _with(box, a, (thr, hi))))
                stack.append((left, _with(box, a, (lo, thr))))
            continue
        codes = range(int(round(lo + 0.5)), int(round(hi - 0.5)) + 1)
        dest = [0 if _in_set(tree, row, 0, c) else 1 if _in_set(tree, row, 1, c) else 2
                for c in codes]
        start = 0
        for k in range(1, len(dest) + 1):  # runs of neighbouring levels going alike
            if k == len(dest) or dest[k] != dest[start]:
                part = _with(box, a, (codes[start] - 0.5, codes[k - 1] + 0.5))
                if dest[start] == 2:
                    out.extend(_cells(tree, node, held, part, axes, use_surrogate))
                else:
                    stack.append((left if dest[start] == 0 else right, part))
                start = k
    return [(node, x0, x1, y0, y1) for node, ((x0, x1), (y0, y1)) in out]


def _with(box, a, interval):
    return (interval, box[1]) if a == 0 else (box[0], interval)


def _cells(tree, node, held, box, axes, use_surrogate):
    """``box`` cut at every threshold of a plotted feature (primary or surrogate split)
    in the subtree of ``node`` and at every level of a nominal axis; each cell sent down
    the tree from the root; cells of one node merged into rectangles."""
    sub, stack = [], [node]
    while stack:
        i = stack.pop()
        sub.append(i)
        if tree.left[i] != LEAF:
            stack += [int(tree.left[i]), int(tree.right[i])]
    sub = np.asarray(sub)
    rows = np.concatenate([np.arange(s, s + c) for s, c in
                           zip(tree.surrogate_start[sub], tree.n_surrogates[sub])] + [[]])
    rows = rows.astype(np.int64)
    edges = []
    for (f, _, _, nominal), (lo, hi) in zip(axes, box):
        if nominal:
            e = np.arange(round(lo + 0.5), round(hi - 0.5) + 2) - 0.5
        else:
            thr = np.concatenate([
                tree.threshold[sub][(tree.feature[sub] == f) & (tree.level_row[sub] < 0)],
                tree.surrogate_threshold[rows][(tree.surrogate_feature[rows] == f)
                                               & (tree.surrogate_level_row[rows] < 0)]])
            thr = np.unique(thr[(thr > lo) & (thr < hi)])
            e = np.concatenate([[lo], thr, [hi]])
        edges.append(e)
    ex, ey = edges
    cell_node = _nodes_at(tree, held, axes, 0.5 * (ex[1:] + ex[:-1]),
                          0.5 * (ey[1:] + ey[:-1]), use_surrogate)
    return [(n, ((x0, x1), (y0, y1))) for n, x0, x1, y0, y1 in _rectangles(cell_node, ex, ey)]


def _nodes_at(tree, held, axes, xs, ys, use_surrogate, chunk=1 << 16):
    """Node reached by every point (xs[i], ys[j]) with the other features held:
    an array (len(xs), len(ys)), computed a chunk of points at a time."""
    from .engine.tree import apply as apply_tree
    fi, fj = axes[0][0], axes[1][0]
    out = np.empty(xs.size * ys.size, dtype=np.int64)
    for start in range(0, out.size, chunk):
        idx = np.arange(start, min(start + chunk, out.size))
        grid = np.tile(held, (idx.size, 1))
        grid[:, fi] = xs[idx // ys.size]
        grid[:, fj] = ys[idx % ys.size]
        out[idx] = apply_tree(tree, np.ascontiguousarray(grid), use_surrogate)
    return out.reshape(xs.size, ys.size)


def plot_partition(estimator, X, y=None, *, features=(0, 1), ax=None, feature_names=None,
                   class_names=None, resolution=None):
    """The rectangles into which the tree cuts the plane of two features, with the cases.

    Each leaf reached in the plane is drawn as its rectangle, filled with its prediction
    (class colour, or the value's colour for a regressor) in a light tint and outlined;
    the cases of ``X`` are drawn on top, coloured by ``y`` (their true class or value)
    when it is given. For a tree fitted on exactly the two features this is the whole
    partition, the picture textbooks draw of a tree over two features. A tree fitted on
    more features is cut by the plane in which every other feature is held at its
    **median** in ``X`` (numeric or ordinal features; ordinal ones at the level of the
    median code, rounded down) or its **most frequent level** (nominal features; ties to
    the first level); the title says so.

    A nominal (unordered categorical) feature on an axis shows its levels as categories
    ``0 .. L-1`` along it, labelled by name, and a leaf's region is drawn as one
    rectangle per level interval it covers (it need not be one rectangle: a subset split
    sends any set of levels left). The cases there are jittered sideways by up to ±0.3
    so that they do not hide each other; an ordinal feature is shown on its level codes.
    Cases missing a plotted feature (or with a level of it unseen in fit) are left out;
    the title counts them.

    Parameters
    ----------
    estimator : fitted CARTClassifier, CARTRegressor or their CV variants
    X : array-like or DataFrame of shape (n_samples, ``n_features_in_``)
        Cases to draw, in the columns the estimator was fitted on (a DataFrame fitted by
        name must have the same columns).
    y : array-like (n_samples,), optional
        Their classes (labels from ``classes_``) or values; without it the cases are
        drawn in grey.
    features : pair of feature indices or names, default (0, 1)
        The features on the x and y axes.
    ax : matplotlib Axes, optional
    feature_names, class_names : sequences of str, optional
    resolution : int in [2, 2000], optional
        Instead of filled rectangles, colour the plane by predicting every point of a
        ``resolution`` × ``resolution`` grid (the rectangles are still outlined): a check
        of the exact rectangles, which the two pictures should agree with.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_partition")
    tree, names = _checked(estimator, feature_names, 0, None, "plot_partition")
    classes = _class_names(estimator, class_names)
    is_classifier = classes is not None
    if isinstance(features, (str, bytes)) or not hasattr(features, "__len__") \
            or len(features) != 2:
        raise ValueError(f"features must be a pair (i, j) of feature indices or names, got "
                         f"{features!r}")
    fi = _feature_index(features[0], names, "features[0]")
    fj = _feature_index(features[1], names, "features[1]")
    if fi == fj:
        raise ValueError(f"features must name two different features, got {features!r}")
    resolution = _check_int(resolution, "resolution", 2, allow_none=True)
    if resolution is not None and resolution > 2000:
        raise ValueError(f"resolution must be an integer in [2, 2000], got {resolution}")
    Xenc = estimator._check_predict_X(X)  # the codes the tree sees (checks shape, names)
    n, p = Xenc.shape
    if n == 0:
        raise ValueError("X must hold at least one case")
    if y is not None:
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-d with one entry per row of X ({n}), got shape "
                             f"{y.shape}")
    nominal = np.asarray(getattr(estimator, "is_categorical_", np.zeros(p, bool)), bool)
    categories = list(getattr(estimator, "categories_", None) or [None] * p)

    # the other features held fixed: median (numeric, ordinal), most frequent level
    held = np.empty(p)
    for f in range(p):
        col = Xenc[:, f][~np.isnan(Xenc[:, f])]
        if categories[f] is not None:
            col = col[col >= 0]  # -1: a level unseen in fit
        if col.size == 0:
            held[f] = np.nan
        elif nominal[f]:
            values, counts = np.unique(col, return_counts=True)
            held[f] = values[np.argmax(counts)]
        elif categories[f] is not None:
            held[f] = np.floor(np.median(col))
        else:
            held[f] = np.median(col)

    axes_info = []
    for f in (fi, fj):
        col = Xenc[:, f]
        finite = col[~np.isnan(col)]
        if nominal[f]:
            lo, hi = -0.5, len(categories[f]) - 0.5
        else:
            vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0., 1.)
            pad = 0.05 * (vmax - vmin) if vmax > vmin else 0.5
            lo, hi = vmin - pad, vmax + pad
        axes_info.append((f, lo, hi, bool(nominal[f])))
    use_surrogate = int(getattr(estimator, "_use_surrogate", 2))
    regions = _regions(tree, held, axes_info, use_surrogate)

    norm = None
    if not is_classifier:
        values = tree.value[[r[0] for r in regions], 0]
        if y is not None:
            values = np.concatenate([values, y.astype(float)])
        norm = _value_norm(values)
    ax = _new_axes(ax, (6.4, 4.8))
    for node, x0, x1, y0, y1 in sorted(regions, key=lambda r: (r[0], r[3], r[1])):
        _rectangle(ax, tree, node, (x0, y0, x1 - x0, y1 - y0), is_classifier, norm,
                   filled=resolution is None)
    if resolution is not None:
        _raster(ax, tree, held, axes_info, resolution, use_surrogate, is_classifier, norm)

    # the cases
    keep = np.ones(n, dtype=bool)
    for f in (fi, fj):  # missing, or a level unseen in fit (code -1): not drawn
        keep &= ~np.isnan(Xenc[:, f]) & ((Xenc[:, f] >= 0) | (categories[f] is None))
    # a categorical feature held at a level cuts a real slice of the cases: only those
    # at that level lie in the plane drawn (a numeric one held at its median cuts a
    # slice of no width: every case is drawn, projected onto the plane)
    sliced = [f for f in range(p) if f not in (fi, fj) and categories[f] is not None
              and not np.isnan(held[f])]
    in_slice = np.ones(n, dtype=bool)
    for f in sliced:
        in_slice &= Xenc[:, f] == held[f]
    off_slice = int(np.count_nonzero(keep & ~in_slice))
    keep &= in_slice
    px, py = Xenc[keep, fi].copy(), Xenc[keep, fj].copy()
    rng = np.random.default_rng(0)
    for coords, f in ((px, fi), (py, fj)):
        if nominal[f]:
            coords += rng.uniform(-0.3, 0.3, coords.shape[0])
    scatter = {"s": 18, "edgecolors": "0.15", "linewidths": 0.5, "zorder": 3}
    if y is None:
        ax.scatter(px, py, color="0.4", **scatter)
    elif is_classifier:
        codes = _class_codes(estimator, y[keep])
        for j, name in enumerate(classes):
            sel = codes == j
            if sel.any():
                ax.scatter(px[sel], py[sel], color=class_color(j), label=name, **scatter)
        other = codes < 0
        if other.any():
            ax.scatter(px[other], py[other], color="white", label="other", **scatter)
        ax.legend(fontsize=_SMALL_SIZE, loc="best", framealpha=0.85)
    else:
        pts = ax.scatter(px, py, c=y[keep].astype(float), cmap=VALUE_CMAP, norm=norm,
                         **scatter)
        ax.figure.colorbar(pts, ax=ax, label="y (points) and leaf mean (regions)")

    for axis, (f, lo, hi, _) in zip("xy", axes_info):
        getattr(ax, f"set_{axis}lim")(lo, hi)
        getattr(ax, f"set_{axis}label")(names[f])
        if nominal[f]:
            L = len(categories[f])
            getattr(ax, f"set_{axis}ticks")(np.arange(L), [str(c) for c in categories[f]])
        elif categories[f] is not None:
            codes = np.arange(len(categories[f]))
            inside = codes[(codes > lo) & (codes < hi)]
            getattr(ax, f"set_{axis}ticks")(inside, [str(categories[f][c]) for c in inside])
    title = f"Partition of {names[fi]} × {names[fj]}"
    if p > 2:
        others = [f for f in range(p) if f not in (fi, fj)]
        shown = ", ".join(f"{names[f]}={_held_text(held[f], categories[f], nominal[f])}"
                          for f in others[:3])
        more = f", … ({len(others) - 3} more)" if len(others) > 3 else ""
        title += f"\nother features held at median / mode: {shown}{more}"
    if off_slice:
        title += (f"\n(cases drawn: those in the slice; {off_slice} at other levels of "
                  f"{', '.join(names[f] for f in sliced)} not drawn)")
    unusable = int(np.count_nonzero(~keep)) - off_slice
    if unusable:
        title += f"\n({unusable} cases missing a plotted feature, or with a level unseen " \
                 "in fit, not drawn)"
    ax.set_title(_wrap_to_axes(ax, title, _TITLE_SIZE), fontsize=_TITLE_SIZE)
    return ax


def _wrap_to_axes(ax, text, fontsize):
    """``text`` with each line wrapped to the width of the figure less a margin for the
    axis labels (a title or label wider than the figure is clipped at its edge), at
    about 0.6 em a character."""
    import textwrap

    width_pt = ax.figure.get_figwidth() * 72.0 * 0.85
    chars = max(20, int(width_pt / (0.6 * fontsize)))
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False)
                     for line in text.split("\n"))


def _held_text(value, levels, nominal):
    if np.isnan(value):
        return "missing"
    if levels is not None:
        return str(levels[int(value)])
    return f"{value:.3g}"


def _class_codes(estimator, y):
    """Index in ``classes_`` of each label of ``y`` (-1 for a label not among them)."""
    classes = np.asarray(estimator.classes_)
    codes = np.full(y.shape[0], -1, dtype=np.int64)
    for j, c in enumerate(classes.tolist()):
        codes[np.asarray([v == c for v in y.tolist()], dtype=bool)] = j
    return codes


def _rectangles(cell_node, ex, ey):
    """Merge the cells of each node into rectangles: runs along x of equal node, then
    equal runs stacked along y. Yields (node, x0, x1, y0, y1)."""
    nx, ny = cell_node.shape
    out = []
    open_runs = {}  # (node, i0, i1) -> first row j of a stack of equal runs
    for j in range(ny):
        col = cell_node[:, j]
        starts = np.flatnonzero(np.concatenate([[True], col[1:] != col[:-1]]))
        ends = np.concatenate([starts[1:] - 1, [nx - 1]])
        row_runs = list(zip(col[starts].tolist(), starts.tolist(), ends.tolist()))
        nxt = {}
        for key in row_runs:
            if key in open_runs:
                nxt[key] = open_runs.pop(key)
            else:
                nxt[key] = j
        for (node, i0, i1), j0 in open_runs.items():
            out.append((node, ex[i0], ex[i1 + 1], ey[j0], ey[j]))
        open_runs = nxt
    for (node, i0, i1), j0 in open_runs.items():
        out.append((node, ex[i0], ex[i1 + 1], ey[j0], ey[ny]))
    return sorted(out, key=lambda r: (r[0], r[3], r[1]))


def _rectangle(ax, tree, node, xywh, is_classifier, norm, filled):
    from matplotlib.patches import Rectangle
    if is_classifier:
        face = _tint(class_color(tree.label[node]), 0.3)
    else:
        import matplotlib
        face = _tint(matplotlib.colormaps[VALUE_CMAP](norm(tree.value[node, 0])), 0.45)
    ax.add_patch(Rectangle(xywh[:2], xywh[2], xywh[3], facecolor=face if filled else "none",
                           edgecolor="0.25", linewidth=0.9, zorder=1 if filled else 2,
                           gid=f"leaf-{node}"))


def _raster(ax, tree, held, axes, resolution, use_surrogate, is_classifier, norm):
    """The plane coloured by predicting a resolution × resolution grid of points."""
    (_, xlo, xhi, _), (_, ylo, yhi, _) = axes
    xs = np.linspace(xlo, xhi, resolution + 1)
    ys = np.linspace(ylo, yhi, resolution + 1)
    node = _nodes_at(tree, held, axes, 0.5 * (xs[1:] + xs[:-1]), 0.5 * (ys[1:] + ys[:-1]),
                     use_surrogate).T  # rows: y
    from matplotlib.colors import to_rgb
    if is_classifier:
        palette = np.array([to_rgb(_tint(class_color(j), 0.3))
                            for j in range(tree.value.shape[1])])
        rgb = palette[tree.label[node]]
    else:
        import matplotlib
        cmap = matplotlib.colormaps[VALUE_CMAP]
        rgb = np.array([to_rgb(_tint(c, 0.45))
                        for c in cmap(norm(tree.value[node.ravel(), 0]))])
        rgb = rgb.reshape(resolution, resolution, 3)
    ax.imshow(rgb, origin="lower", extent=(xlo, xhi, ylo, yhi), aspect="auto",
              interpolation="nearest", zorder=0, gid="raster")


# --------------------------------------------------------------------------- plot_cv

def _cv_table(cv_estimator, caller):
    _checked(cv_estimator, None, 0, None, caller)
    table = getattr(cv_estimator, "cv_results_", None)
    if table is None:
        raise TypeError(f"{caller} needs a fitted CARTClassifierCV or CARTRegressorCV "
                        f"(with cv_results_), got a {type(cv_estimator).__name__}")
    return table


def plot_cv(cv_estimator, *, ax=None, selection=None):
    """The cross-validated risk of the pruning sequence, like rpart's ``plotcp``.

    For each subtree T_k of the pruning sequence: rpart's ``xerror`` (R^CV(T_k) / R(root),
    the cross-validated risk relative to the root's) against the tree size ``|T~_k|``
    (number of leaves), with bars of ± 1 SE (``xstd``); the resubstitution error
    ``rel_error`` (R(T_k) / R(root)) as a grey dashed line; a dotted horizontal line at
    the minimum + 1 SE (the bound of Breiman's 1-SE rule). The subtree with the smallest
    R^CV (the ``"min"`` rule; ties to the smaller tree) is filled red, and the subtree of
    ``selection`` ringed. The top axis gives rpart's CP of each tree's α'_k interval (the
    geometric midpoint sqrt(cp_k cp_{k+1}) that ``plotcp`` prints; α'_k / R(root)). With
    more than 30 leaves the size axis is logarithmic.

    Parameters
    ----------
    cv_estimator : fitted CARTClassifierCV or CARTRegressorCV
    ax : matplotlib Axes, optional
    selection : "min", "1se" or a number m >= 0, optional
        The rule whose subtree is ringed (the m-SE rule draws its line at min + m SE);
        default the estimator's own ``selection``, i.e. its ``tree_``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_cv")
    table = _cv_table(cv_estimator, "plot_cv")
    if selection is None:
        selection = cv_estimator.selection
    # row positions (the arrays below are read by position)
    chosen = cv_estimator.select_k(selection, as_k=False)  # validates selection
    k_min = cv_estimator.select_k("min", as_k=False)
    m = 0.0 if selection == "min" else 1.0 if selection == "1se" else float(selection)

    leaves = table["n_leaves"].to_numpy(dtype=float)
    xerr = table["xerror"].to_numpy(dtype=float)
    xstd = table["xstd"].to_numpy(dtype=float)
    rel = table["rel_error"].to_numpy(dtype=float)
    cp_mid = table["alpha_prime"].to_numpy(dtype=float) / _root_risk(table)

    ax = _new_axes(ax, (6.4, 4.4))
    style_axes(ax)
    ax.errorbar(leaves, xerr, yerr=xstd, color=class_color(0),
                label="cross-validated, ± 1 SE", **ERRORBAR_STYLE)
    ax.plot(leaves, rel, label="resubstitution", **RESUB_STYLE)
    m_line = m if m > 0 else 1.0
    bound = xerr[k_min] + m_line * xstd[k_min]
    ax.axhline(bound, label=f"min + {_number(m_line, 2)} SE", **_BOUND_STYLE)
    ax.plot([leaves[k_min]], [xerr[k_min]], "o", color=_MIN_COLOR, markersize=7, zorder=4,
            gid="cv-min", label=f"minimum: {int(leaves[k_min])} leaves")
    rule = {"min": "min rule", "1se": "1-SE rule"}.get(selection, f"{_number(m, 2)}-SE rule")
    ax.plot([leaves[chosen]], [xerr[chosen]], "o", markerfacecolor="none",
            markeredgecolor="black", markersize=12, markeredgewidth=1.5, zorder=5,
            gid="cv-choice", label=f"{rule}: {int(leaves[chosen])} leaves")
    log_x = size_axis(ax, leaves)
    ax.set_ylabel("relative error: $R^{CV}(T_k)\\,/\\,R(t_1)$")
    ax.legend(fontsize=_SMALL_SIZE, loc="best")
    folds = getattr(cv_estimator, "n_folds_", None)
    repeats = int(getattr(cv_estimator, "n_repeats_", 1))
    ax.set_title(f"{type(cv_estimator).__name__}: {folds}-fold cross-validation"
                 + (f", {repeats} repeats (mean)" if repeats > 1 else ""),
                 fontsize=_TITLE_SIZE)

    top = ax.secondary_xaxis("top")
    shown = _spaced(ax, leaves, [_cp_text(c) for c in cp_mid], log_x)
    top.set_xticks(leaves[shown], [_cp_text(c) for c in cp_mid[shown]],
                   fontsize=_SMALL_SIZE)
    top.set_xlabel("cp (α' / R(root))", fontsize=_SMALL_SIZE + 1)
    if not log_x:
        ax.set_xticks(leaves[shown], [str(int(v)) for v in leaves[shown]])
    return ax


def _root_risk(table):
    """R(root) from the table: the risk of the one-leaf tree (the last row)."""
    r = float(table["risk"].to_numpy()[-1])
    return r if r > 0 else 1.0


def _cp_text(c):
    return "Inf" if not np.isfinite(c) else f"{c:.2g}"


def _spaced(ax, leaves, labels, log_x):
    """Rows whose tick labels (``_SMALL_SIZE`` points) do not overlap on the x axis of
    ``ax``, the smallest trees kept first."""
    pos = np.log(leaves) if log_x else leaves.astype(float)
    lo, hi = pos.min(), pos.max()
    span = (hi - lo) * 1.1 if hi > lo else 1.0
    width_in = ax.figure.get_figwidth() * ax.get_position().width * 0.85
    char = 0.6 * _SMALL_SIZE / 72.0 / width_in * span  # one character in units of pos
    keep, last = [], None
    for i in np.argsort(pos, kind="stable"):
        if last is None or pos[i] - pos[last] >= char * (0.5 * (len(labels[i])
                                                                 + len(labels[last])) + 1):
            keep.append(i)
            last = i
    return np.asarray(sorted(keep), dtype=np.int64)


# --------------------------------------------------------------------------- plot_importance

def _surrogate_note(estimator):
    """What rpart's importance of ``estimator`` counts: its surrogate splits, or the
    primary splits alone and why (no surrogates computed, or none found)."""
    tree = estimator.tree_
    if int(tree.n_surrogates.sum()) > 0:
        return "surrogates included"
    if int(getattr(estimator, "max_surrogate_", 0)) == 0:
        asked = getattr(estimator, "max_surrogate", None)
        why = ("max_surrogate='auto' computes none on complete data; "
               "max_surrogate=5 as in rpart" if asked == "auto" else "max_surrogate=0")
        return f"primary splits only: no surrogate splits computed ({why})"
    return "primary splits only: no surrogate split beats the majority rule"



def plot_importance(estimator, *, ax=None, kind="rpart", max_features=20):
    """Horizontal bars of the variable importances, the largest on top.

    ``kind="rpart"`` draws rpart's ``variable.importance`` (:attr:`variable_importance_`:
    the improvement of each feature's primary splits plus the adjusted agreement times
    the improvement of its surrogate splits), each bar labelled with its share of the
    total as ``summary.rpart`` prints it, the axis label saying whether surrogate splits
    were computed and counted (``max_surrogate="auto"`` computes none on complete data,
    so only the split features appear: fit with ``max_surrogate=5`` for rpart's
    figures); ``kind="impurity"`` scikit-learn's normalised
    impurity importance (:attr:`feature_importances_`, primary splits only). Features of
    zero importance are left out; at most ``max_features`` bars (a note counts the rest).

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_importance")
    _, all_names = _checked(estimator, None, 0, None, "plot_importance")
    if kind not in ("rpart", "impurity"):
        raise ValueError(f"kind must be 'rpart' or 'impurity', got {kind!r}")
    max_features = _check_int(max_features, "max_features", 1)
    if kind == "rpart":
        series = estimator.variable_importance_
        names = [str(n) for n in series.index]
        values = series.to_numpy(dtype=float)
        xlabel = "rpart variable importance (improvement)\n" + _surrogate_note(estimator)
    else:
        values = np.asarray(estimator.feature_importances_, dtype=float)
        order = np.argsort(-values, kind="stable")
        order = order[values[order] > 0]
        names, values = [all_names[j] for j in order], values[order]
        xlabel = "impurity importance (normalised, primary splits)"
    total = float(values.sum())
    left_out = max(0, len(values) - max_features)
    names, values = names[:max_features], values[:max_features]

    ax = _new_axes(ax, (6.0, float(np.clip(0.32 * len(values) + 1.3, 2.0, 9.0))))
    style_axes(ax)
    ax.grid(False, axis="y")
    pos = np.arange(len(values))[::-1]
    bars = ax.barh(pos, values, color=class_color(0), height=0.7)
    for bar, v in zip(bars, values):
        bar.set_gid("importance-bar")
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                f" {100 * v / total:.0f}%" if total > 0 else "", va="center",
                fontsize=_SMALL_SIZE)
    ax.set_yticks(pos, names)
    ax.set_xlabel(_wrap_to_axes(ax, xlabel, _TITLE_SIZE))
    if len(values):
        ax.set_xlim(0, 1.12 * float(values.max()))
    else:
        ax.text(0.5, 0.5, "no split: every importance is 0", transform=ax.transAxes,
                ha="center", va="center")
    ax.set_title(f"Variable importance of {type(estimator).__name__}"
                 + (f" ({left_out} more features not shown)" if left_out else ""),
                 fontsize=_TITLE_SIZE)
    return ax


# --------------------------------------------------------------------------- forests

def _forest(forest, caller):
    """``forest`` after checking it is a fitted forest of :mod:`cartjit.ensemble`."""
    from .ensemble import _BaseForest

    if not isinstance(forest, _BaseForest):
        raise TypeError(f"{caller} needs a fitted forest (RandomForestClassifier, "
                        f"RandomForestRegressor, BaggedCART*), got a "
                        f"{type(forest).__name__}")
    forest._check_fitted()
    return forest


def _forest_feature_names(forest):
    names = getattr(forest, "feature_names_in_", None)
    return ([str(n) for n in names] if names is not None
            else [f"x{j}" for j in range(forest.n_features_in_)])


def plot_oob_error(forest, *, ax=None, by_class=True):
    """The out-of-bag error after each number of trees b = 1, ..., B, like
    randomForest's ``plot.randomForest``: ``oob_error_curve_`` (the error of the cases
    out of bag at least once among the first b trees) as a black line, and for a
    classifier with ``by_class`` each class's own curve (``oob_error_curve_by_class_``,
    the weighted mean cost of that class's cases) in its class colour. The forest must
    have been fitted with ``oob_score=True`` (or ``oob_importance=True``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_oob_error")
    from matplotlib.ticker import MaxNLocator

    forest = _forest(forest, "plot_oob_error")
    if not isinstance(by_class, (bool, np.bool_)):
        raise TypeError(f"by_class must be True or False, got {by_class!r}")
    curve = getattr(forest, "oob_error_curve_", None)
    if curve is None:
        raise ValueError("plot_oob_error needs the out-of-bag estimates: fit the forest "
                         "with oob_score=True")
    trees = np.arange(1, curve.shape[0] + 1)
    ax = _new_axes(ax, (6.4, 4.0))
    style_axes(ax)
    classifier = hasattr(forest, "classes_")
    per_class = getattr(forest, "oob_error_curve_by_class_", None)
    if classifier and by_class and per_class is not None:
        for j, name in enumerate(_class_names(forest, None)):
            ax.plot(trees, per_class[:, j], color=class_color(j), linewidth=1.0,
                    label=f"class {name}", gid=f"oob-error-{j}")
    ax.plot(trees, curve, color="black", linewidth=1.5, label="OOB", gid="oob-error")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0.5, max(1.5, trees[-1] + 0.5))
    ax.set_xlabel("number of trees")
    ax.set_ylabel("OOB error" if classifier else "OOB mean squared error")
    if classifier and by_class and per_class is not None:
        ax.legend(fontsize=_SMALL_SIZE, loc="best")
    ax.set_title(f"{type(forest).__name__}: out-of-bag error after each tree",
                 fontsize=_TITLE_SIZE)
    return ax


def _mdi_se(forest):
    """The standard error over the trees of the forest's MDI: each tree's normalised
    importance over the trees that split, scaled as their mean is normalised."""
    per_tree = forest._tree_importance
    per_tree = per_tree[per_tree.sum(axis=1) > 0]
    if per_tree.shape[0] < 2:
        return np.zeros(forest.n_features_in_)
    total = per_tree.mean(axis=0).sum()
    return per_tree.std(axis=0, ddof=1) / np.sqrt(per_tree.shape[0]) / total


def plot_forest_importance(forest, *, ax=None, kind="permutation", max_features=20):
    """Horizontal bars of a forest's variable importances with ± 1 SE bars, the largest
    on top (randomForest's ``varImpPlot``, with the error bars).

    ``kind="permutation"``: Breiman's OOB permutation importance
    (``oob_importances_``, the mean increase of the trees' OOB error when the feature is
    permuted) ± its standard error ``oob_importances_se_``; the forest must have been
    fitted with ``oob_importance=True``. ``kind="mdi"``: the impurity importance
    (``feature_importances_``) ± the standard error of the trees' own importances
    (scaled alike). At most ``max_features`` bars (a note counts the rest).

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_forest_importance")
    forest = _forest(forest, "plot_forest_importance")
    if kind not in ("permutation", "mdi"):
        raise ValueError(f"kind must be 'permutation' or 'mdi', got {kind!r}")
    max_features = _check_int(max_features, "max_features", 1)
    if kind == "permutation":
        if not hasattr(forest, "oob_importances_"):
            raise ValueError("kind='permutation' needs the permutation importance: fit the "
                             "forest with oob_importance=True (or give kind='mdi')")
        values = np.asarray(forest.oob_importances_, dtype=float)
        se = np.asarray(forest.oob_importances_se_, dtype=float)
        xlabel = "permutation importance (increase of the OOB error) ± 1 SE"
    else:
        values = np.asarray(forest.feature_importances_, dtype=float)
        se = _mdi_se(forest)
        xlabel = "impurity importance (MDI) ± 1 SE over the trees"
    names = _forest_feature_names(forest)
    order = np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")
    left_out = max(0, len(order) - max_features)
    order = order[:max_features]

    ax = _new_axes(ax, (6.0, float(np.clip(0.32 * len(order) + 1.3, 2.0, 9.0))))
    style_axes(ax)
    ax.grid(False, axis="y")
    pos = np.arange(len(order))[::-1]
    bars = ax.barh(pos, values[order], xerr=se[order], color=class_color(0), height=0.7,
                   error_kw={"capsize": ERRORBAR_STYLE["capsize"], "elinewidth": 1.0,
                             "ecolor": "black"})
    for bar in bars:
        bar.set_gid("importance-bar")
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_yticks(pos, [names[j] for j in order])
    ax.set_xlabel(_wrap_to_axes(ax, xlabel, _TITLE_SIZE))
    ax.set_title(f"Variable importance of {type(forest).__name__}"
                 + (f" ({left_out} more features not shown)" if left_out else ""),
                 fontsize=_TITLE_SIZE)
    return ax


def plot_proximity(forest, X, y=None, *, ax=None, oob=True):
    """The cases of X in the first two dimensions of the classical scaling of
    1 - proximity (randomForest's ``MDSplot``; :meth:`proximity_mds` of the forest),
    coloured by ``y``: class colours in the order of ``classes_`` for a classifier,
    :data:`VALUE_CMAP` for a regression's responses, one colour without ``y``. With
    ``oob=True`` (default) X must be the rows given to ``fit``. Each axis label gives
    its dimension's share of the positive eigenvalues.

    Returns
    -------
    matplotlib.axes.Axes
    """
    _require_matplotlib("plot_proximity")
    forest = _forest(forest, "plot_proximity")
    coords, values = forest.proximity_mds(X, 2, oob=oob)
    n = coords.shape[0]
    if y is not None:
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be one value per row of X ({n}), got shape {y.shape}")
    xy = np.zeros((n, 2))
    xy[:, :coords.shape[1]] = coords
    positive = values[values > 0].sum()
    ax = _new_axes(ax, (5.6, 4.8))
    style_axes(ax)
    classifier = hasattr(forest, "classes_")
    if y is None:
        ax.scatter(xy[:, 0], xy[:, 1], s=14, color=class_color(0), gid="mds-points")
    elif classifier:
        codes = _class_codes(forest, y)
        if np.any(codes < 0):
            raise ValueError(f"y holds labels that are not among the forest's classes_ "
                             f"{list(forest.classes_)}")
        for j, name in enumerate(_class_names(forest, None)):
            at = codes == j
            if at.any():
                ax.scatter(xy[at, 0], xy[at, 1], s=14, color=class_color(j), label=name,
                           gid=f"mds-{j}")
        ax.legend(fontsize=_SMALL_SIZE, loc="best", title="class",
                  title_fontsize=_SMALL_SIZE)
    else:
        points = ax.scatter(xy[:, 0], xy[:, 1], s=14, c=y.astype(float), cmap=VALUE_CMAP,
                            gid="mds-points")
        ax.figure.colorbar(points, ax=ax, label="y")
    for d in range(2):
        share = (f" ({100 * values[d] / positive:.0f}% of the positive eigenvalues)"
                 if d < coords.shape[1] and positive > 0 else " (eigenvalue <= 0)")
        (ax.set_xlabel if d == 0 else ax.set_ylabel)(f"dimension {d + 1}{share}",
                                                     fontsize=_SMALL_SIZE + 1)
    ax.set_title(f"{type(forest).__name__}: MDS of 1 - "
                 + ("out-of-bag " if oob else "") + "proximity", fontsize=_TITLE_SIZE)
    return ax
