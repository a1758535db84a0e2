"""Pictures of CART's steps (docs/teaching.md): :func:`plot_split_candidates`, Δi
against the threshold for each feature at a node ("which x* is best?"), and
:func:`plot_pruning_sequence`, the nested subtrees T_1 ⊇ T_2 ⊇ … drawn side by side as
their partitions of two features.

Both draw from the tables of :mod:`cartjit.steps` and from :func:`cartjit.plot_partition`,
in the look of :mod:`cartjit.plotting`; like those they draw into the Axes given or into
a new bare matplotlib Figure (no pyplot), and import matplotlib only when called. The
drawn artists carry a ``gid``: ``delta-<feature>`` for a feature's curve or bars,
``chosen`` for the mark of the chosen split, ``tied`` for the ties.
"""
from __future__ import annotations

import numpy as np

from .plotting import _MIN_COLOR, _SMALL_SIZE, _TITLE_SIZE, _require_matplotlib, style_axes

__all__ = ["plot_split_candidates", "plot_pruning_sequence"]

_CURVE = "#1f77b4"


#: Panels per row of a new figure.
_PER_ROW = 4


def _panel_axes(axes, n, panel_size, caller):
    """``n`` Axes: those given (a sequence of n), or a new Figure's panels of
    ``panel_size`` inches, :data:`_PER_ROW` to a row (unused cells hidden)."""
    if axes is not None:
        from matplotlib.axes import Axes

        axes = [axes] if isinstance(axes, Axes) else list(np.ravel(np.asarray(axes,
                                                                              dtype=object)))
        if len(axes) != n or not all(isinstance(a, Axes) for a in axes):
            raise TypeError(f"{caller}: ax must be {n} matplotlib Axes (one per panel) or "
                            f"None, got {axes!r}")
        return axes
    from matplotlib.figure import Figure

    cols = min(n, _PER_ROW)
    rows = -(-n // cols)
    fig = Figure(figsize=(panel_size[0] * cols + 0.5, panel_size[1] * rows), dpi=100,
                 layout="constrained")
    grid = list(np.ravel(np.asarray(fig.subplots(rows, cols, squeeze=False), dtype=object)))
    for extra in grid[n:]:
        extra.set_visible(False)
    return grid[:n]


def plot_split_candidates(estimator, X, y, *, node=0, sample_weight=None, features=None,
                          ax=None, goodness=None):
    """Δi of every candidate split of a node, one panel per feature: "which x* is best?".

    For an ordered feature, Δi (the information gain in bits for entropy, the variance
    reduction for regression) against the threshold, a point per midpoint; for a
    nominal feature, a bar per subset split that the search considers. The chosen
    split is marked in red (``gid="chosen"``) and candidates tied with it by open
    circles (``gid="tied"``); candidates that leave fewer than ``min_samples_leaf``
    cases on a side are drawn in grey. The numbers are those of
    :func:`cartjit.steps.split_candidates`, which takes the same arguments.

    Parameters
    ----------
    estimator : CARTClassifier, CARTRegressor, CARTClassifierCV or CARTRegressorCV
        A fitted tree estimator.
    X : array-like or DataFrame of shape (n_samples, n_features)
        The learning sample of the fit, as for :func:`cartjit.steps.split_candidates`.
    y : array-like of shape (n_samples,)
        Its targets.
    node : int, default 0
        A node id of ``tree_max_``.
    sample_weight : array-like of shape (n_samples,), optional
        The case weights of the fit.
    features : str, int or sequence of them, optional
        The features to draw (default all).
    ax : matplotlib Axes or sequence of Axes, optional
        One Axes per feature shown (features with no candidate at the node are left
        out); when None, a new Figure with the panels four to a row.
    goodness : bool, optional
        Plot Δi scaled by the share of the node present (what features are compared by
        when values are missing, docs/maths.md §8). Default: when some case misses a
        feature.

    Returns
    -------
    list of matplotlib.axes.Axes
        The panels drawn on, one per feature.
    """
    _require_matplotlib("plot_split_candidates")
    from .steps import split_candidates

    table = split_candidates(estimator, X, y, node=node, sample_weight=sample_weight,
                             features=features)
    if table.empty:
        raise ValueError(f"node {node} has no candidate split (every feature has a single "
                         "value there)")
    if goodness is None:
        goodness = "goodness" in table.columns
    if goodness and "goodness" not in table.columns:
        table = table.assign(goodness=table["delta_i"])
    col = "goodness" if goodness else "delta_i"
    names = list(dict.fromkeys(table["feature"]))
    axes = _panel_axes(ax, len(names), (3.5, 3.2), "plot_split_candidates")
    criterion = estimator.criterion
    label = {"entropy": "information gain Δi (bits)", "gini": "Gini decrease Δi",
             "twoing": "twoing value", "squared_error": "variance reduction Δi"}.get(
        criterion, "Δi")
    if goodness:
        label += " × share present"
    top = float(table[col].max())
    for a, name in zip(axes, names):
        rows = table[table["feature"] == name]
        value = rows[col].to_numpy()
        ok = rows["allowed"].to_numpy()
        chosen = rows["chosen"].to_numpy()
        tied = rows["tied"].to_numpy()
        if rows["threshold"].notna().all():
            x = rows["threshold"].to_numpy()
            a.plot(x, value, color=_CURVE, linewidth=1.0, marker="o", markersize=3,
                   gid=f"delta-{name}")
            if (~ok).any():
                a.plot(x[~ok], value[~ok], linestyle="none", marker="o", markersize=3,
                       color="0.7")
            a.set_xlabel(f"threshold x* of {name}")
        else:
            x = np.arange(len(rows))
            a.bar(x, value, width=0.6, color=np.where(ok, _CURVE, "0.7").tolist(),
                  gid=f"delta-{name}")
            a.set_xticks(x)
            a.set_xlim(-0.7, len(rows) - 0.3)
            many = len(rows) > 3
            a.set_xticklabels(rows["left"].tolist(), rotation=60 if many else 0,
                              ha="right" if many else "center", fontsize=_SMALL_SIZE)
            a.set_xlabel(f"levels of {name} going left")
        if chosen.any():
            a.plot(x[chosen], value[chosen], linestyle="none", marker="o", markersize=8,
                   color=_MIN_COLOR, gid="chosen")
            a.axvline(x[chosen][0], color=_MIN_COLOR, linewidth=0.8, linestyle=":")
        if tied.any():
            a.plot(x[tied], value[tied], linestyle="none", marker="o", markersize=9,
                   markerfacecolor="none", color=_MIN_COLOR, gid="tied")
        a.set_title(name, fontsize=_TITLE_SIZE)
        a.set_ylim(min(0.0, float(value.min())), top * 1.08 if top > 0 else 1.0)
        style_axes(a)
    axes[0].set_ylabel(label)
    axes[0].figure.suptitle(getattr(table, "caption", "").split(";")[0],
                            fontsize=_TITLE_SIZE)
    return axes


def plot_pruning_sequence(estimator, X, y=None, *, features=(0, 1), ks=None, ax=None,
                          feature_names=None, class_names=None):
    """The pruned subtrees T_1 ⊇ T_2 ⊇ … side by side, as partitions of two features.

    Each T_k is drawn as the rectangles it cuts the plane of two features into (Breiman
    et al. 1984's picture of the optimal subtrees). Panel k is :func:`cartjit.plot_partition` of T_k = T(α_k), read off ``tree_max_``
    at the α_k of ``cost_complexity_path()`` (no refit), titled with k, |T~_k| and α_k.
    For a tree fitted on more than two features, the other features are held as
    :func:`cartjit.plot_partition` says.

    Parameters
    ----------
    estimator : CARTClassifier, CARTRegressor, CARTClassifierCV or CARTRegressorCV
        A fitted tree estimator.
    X : array-like or DataFrame of shape (n_samples, n_features_in_)
        The cases to draw, as for :func:`cartjit.plot_partition`.
    y : array-like of shape (n_samples,), optional
        Their classes or values (the points' colours).
    features : pair of feature indices or names, default (0, 1)
        The features on the x and y axes.
    ks : sequence of int, optional
        The k of the subtrees to draw (rows of ``cost_complexity_path()``); default all
        but the root alone, T_K.
    ax : sequence of matplotlib Axes, optional
        One per subtree; when None, a new Figure with the panels four to a row.
    feature_names : sequence of str, optional
        Names to show for the features, as for :func:`cartjit.plot_partition`.
    class_names : sequence of str, optional
        Names to show for the classes.

    Returns
    -------
    list of matplotlib.axes.Axes
        The panels drawn on, one per subtree.
    """
    _require_matplotlib("plot_pruning_sequence")
    from .plotting import plot_partition

    path = estimator.cost_complexity_path()
    if ks is None:
        ks = path["k"].tolist()[:-1] or path["k"].tolist()
    else:
        if isinstance(ks, (int, np.integer)):
            ks = [ks]
        ks = list(ks)
        bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, (int, np.integer))
               or k not in path.index]
        if bad or not ks:
            raise ValueError(f"ks must hold k's of the pruning sequence "
                             f"({path['k'].tolist()}), got {ks!r}")
    axes = _panel_axes(ax, len(ks), (3.4, 3.6), "plot_pruning_sequence")
    for a, k in zip(axes, ks):
        alpha = float(path.loc[k, "alpha"])
        pruned = estimator.prune(alpha)
        plot_partition(pruned, X, y, features=features, ax=a, feature_names=feature_names,
                       class_names=class_names)
        # plot_partition's notes (features held fixed, cases left out), its first line
        # ("Partition of …") aside
        held = "\n".join(line for line in a.get_title().splitlines()
                         if not line.startswith("Partition of"))
        a.set_title(f"$T_{{{k}}}$: {int(path.loc[k, 'n_leaves'])} leaves, "
                    f"α = {alpha:.4g}" + (f"\n{held}" if held else ""),
                    fontsize=_TITLE_SIZE)
    return axes
