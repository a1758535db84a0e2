"""The pictures of the steps: the chosen split is drawn where the table and the fitted
tree put it, and the pruning sequence draws one panel per T_k with its leaves."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from cartjit import CARTClassifier, CARTRegressor  # noqa: E402
from cartjit.datasets import load_iris, load_play_golf, load_potato_yield  # noqa: E402
from cartjit.plotting_steps import plot_pruning_sequence, plot_split_candidates  # noqa: E402


def _by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def test_split_candidates_marks_the_fitted_split():
    X, y = load_iris(petal_only=True, return_X_y=True)
    est = CARTClassifier().fit(X, y)
    axes = plot_split_candidates(est, X, y)
    assert len(axes) == 2
    (mark,) = _by_gid(axes[0], "chosen")
    x, v = mark.get_data()
    assert x[0] == est.tree_.threshold[0] and v[0] == pytest.approx(est.tree_.improvement[0])
    assert _by_gid(axes[1], "tied")  # petal width <= 0.8 separates setosa as well
    (curve,) = _by_gid(axes[1], "delta-petal_width")
    assert len(curve.get_xdata()) == len(np.unique(X["petal_width"])) - 1


def test_split_candidates_bars_and_regression():
    X, y = load_play_golf(return_X_y=True)
    est = CARTClassifier(criterion="entropy").fit(X, y)
    axes = plot_split_candidates(est, X, y)
    assert "bits" in axes[0].get_ylabel()
    assert _by_gid(axes[1], "chosen") and not _by_gid(axes[0], "chosen")
    Xp, yp = load_potato_yield(return_X_y=True)
    reg = CARTRegressor(max_depth=1).fit(Xp, yp)
    (ax,) = plot_split_candidates(reg, Xp, yp)
    assert _by_gid(ax, "chosen")[0].get_xdata()[0] == 110


def test_pruning_sequence_panels():
    X, y = load_iris(petal_only=True, return_X_y=True)
    est = CARTClassifier().fit(X, y)
    axes = plot_pruning_sequence(est, X, y)
    path = est.cost_complexity_path()
    assert len(axes) == len(path) - 1
    for ax, (k, row) in zip(axes, path.iterrows()):
        leaves = {p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith("leaf-")}
        assert len(leaves) == row["n_leaves"]
        assert f"T_{{{k}}}" in ax.get_title()
    with pytest.raises(ValueError, match="ks"):
        plot_pruning_sequence(est, X, y, ks=[9])
    with pytest.raises(TypeError, match="Axes"):
        plot_pruning_sequence(est, X, y, ks=[1, 2], ax=[object()])
