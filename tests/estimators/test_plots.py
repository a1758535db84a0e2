"""cartjit.plotting: every plot drawn headless, compared with a committed baseline image,
and checked for what it shows (boxes, rectangles, marked subtrees, bars).

The baselines in tests/estimators/baseline_images/ were drawn with matplotlib's test settings
(style "default", its bundled DejaVu fonts, no hinting) and checked by eye against the
trees. To redraw them after a deliberate change of the look, run
``CARTJIT_UPDATE_BASELINES=1 python -m pytest tests/estimators/test_plots.py`` and look at every
image before committing it.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressor,  # noqa: E402
                     CARTRegressorCV, NotFittedError)
from cartjit.datasets import load_iris, load_play_golf  # noqa: E402
from cartjit.plotting import (CLASS_COLORS, plot_cv, plot_importance,  # noqa: E402
                              plot_partition, plot_tree)
from references.images import check_image as compare_with_baseline  # noqa: E402
from references.images import baseline_style  # noqa: E402

BASELINES = Path(__file__).resolve().parent / "baseline_images"


@pytest.fixture(autouse=True)
def deterministic_style():
    """matplotlib's own test settings, restored afterwards."""
    with baseline_style():
        yield


def check_image(ax, name, tmp_path, *, dpi=50, tol=10):
    """Save the figure of ``ax`` and compare it with its baseline (RMS within ``tol``)."""
    compare_with_baseline(ax, name, tmp_path, BASELINES, dpi=dpi, tol=tol)


def node_boxes(ax):
    """{node id: text} of the node boxes plot_tree drew."""
    return {int(t.get_gid()[5:]): t.get_text() for t in ax.texts
            if (t.get_gid() or "").startswith("node-")}


def split_texts(ax):
    """{node id: text} of the split conditions plot_tree wrote under the boxes."""
    return {int(t.get_gid()[6:]): t.get_text() for t in ax.texts
            if (t.get_gid() or "").startswith("split-")}


def leaf_rectangles(ax):
    return [p for p in ax.patches if (p.get_gid() or "").startswith("leaf-")]


# --------------------------------------------------------------------------- fitted trees

@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def iris_tree(iris):
    X, y = iris
    return CARTClassifier().fit(X, y)


@pytest.fixture(scope="module")
def iris_petal(iris):
    X, y = iris
    Xp = X[["petal_length", "petal_width"]]
    return CARTClassifier().fit(Xp, y), Xp, y


@pytest.fixture(scope="module")
def iris_cv(iris):
    X, y = iris
    return CARTClassifierCV(cv=10, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def golf():
    X, y = load_play_golf(return_X_y=True)
    return CARTClassifier().fit(X, y), X, y


@pytest.fixture(scope="module")
def iris_regression(iris):
    """petal width from petal length and sepal length: a regression tree on two features."""
    X, _ = iris
    Xr = X[["petal_length", "sepal_length"]]
    yr = X["petal_width"].to_numpy()
    return CARTRegressor(max_depth=3).fit(Xr, yr), Xr, yr


@pytest.fixture(scope="module")
def big_tree():
    """A tree of well over 30 leaves (noisy labels, grown to purity)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.8 * rng.normal(size=400) > 0).astype(int)
    return CARTClassifier().fit(X, y)


# --------------------------------------------------------------------------- plot_tree

def test_plot_tree_iris(iris_tree, tmp_path):
    ax = plot_tree(iris_tree)
    boxes = node_boxes(ax)
    t = iris_tree.tree_
    assert sorted(boxes) == list(range(t.n_nodes)) == list(range(17))
    # the root: the majority class (first of a three-way tie) and its share
    assert boxes[0] == "setosa\nn=150  33%"
    assert boxes[1] == "setosa\nn=50  100%"  # the pure setosa leaf
    assert boxes[2] == "versicolor\nn=100  50%"
    # the split of each internal node under its box; a long condition on two lines
    splits = split_texts(ax)
    assert sorted(splits) == np.flatnonzero(t.left != -1).tolist()
    assert splits[0] == "petal_length\n<= 2.45" and splits[2] == "petal_width\n<= 1.75"
    assert not any(t.get_gid() == "truncation-note" for t in ax.texts)
    # one yes/no label per edge; yes on the left child
    edges = [t for t in ax.texts if t.get_text() in ("yes", "no")]
    assert len(edges) == t.n_nodes - 1
    # leaves evenly spaced on one row per depth, parents centred over their children
    xy = {int(b.get_gid()[5:]): b.get_position() for b in ax.texts
          if (b.get_gid() or "").startswith("node-")}
    leaves = np.flatnonzero(t.left == -1)
    assert sorted(x for x, _ in (xy[i] for i in leaves)) == list(range(9))
    for i in np.flatnonzero(t.left != -1):
        assert xy[i][0] == pytest.approx((xy[t.left[i]][0] + xy[t.right[i]][0]) / 2)
        assert xy[i][1] == -t.depth[i]
        assert xy[t.left[i]][0] < xy[t.right[i]][0]
    check_image(ax, "tree_iris", tmp_path)


def test_plot_tree_categorical_levels(golf, tmp_path):
    est, _, _ = golf
    ax = plot_tree(est)
    boxes = node_boxes(ax)
    assert len(boxes) == est.tree_.n_nodes == 5
    assert boxes[0] == "yes\nn=10  60%" and boxes[1] == "no\nn=6  67%"
    assert split_texts(ax) == {0: "humidity\nin {high}", 1: "temperature\nin {high}"}
    check_image(ax, "tree_golf", tmp_path)


def test_plot_tree_regression(iris_regression, tmp_path):
    est, _, y = iris_regression
    ax = plot_tree(est, decimals=2)
    boxes = node_boxes(ax)
    assert len(boxes) == est.tree_.n_nodes
    assert np.mean(y) == pytest.approx(1.199333, abs=1e-6)  # trailing zeros dropped
    assert boxes[0] == "ȳ=1.2\nn=150"
    assert split_texts(ax)[0] == "petal_length\n<= 2.45"
    check_image(ax, "tree_regression", tmp_path)


def test_plot_tree_truncates_large_trees(big_tree, tmp_path):
    t = big_tree.tree_
    assert t.n_leaves > 50
    ax = plot_tree(big_tree, max_leaves=30)
    boxes = node_boxes(ax)
    drawn = np.array(sorted(boxes))
    cut = int(t.depth[drawn].max())
    # the nodes drawn are exactly those down to the cut depth ...
    assert np.array_equal(drawn, np.flatnonzero(t.depth <= cut))
    leaf = t.left == -1

    def terminal(d):  # boxes at the bottom when cut at depth d, counted independently
        return int(np.sum(leaf & (t.depth <= d)) + np.sum(~leaf & (t.depth == d)))

    # ... the deepest cut with at most 30 terminal boxes
    assert terminal(cut) <= 30 < terminal(cut + 1)
    note = [x for x in ax.texts if x.get_gid() == "truncation-note"]
    assert len(note) == 1 and f"cut at depth {cut}" in note[0].get_text()
    assert f"{t.n_leaves} leaves in all" in note[0].get_text()
    hidden = [i for i in drawn if not leaf[i] and t.depth[i] == cut]
    assert hidden and all("leaves" in boxes[i] for i in hidden)
    assert sorted(split_texts(ax)) == [i for i in drawn if not leaf[i] and t.depth[i] < cut]
    check_image(ax, "tree_truncated", tmp_path, dpi=25)


def test_plot_tree_draws_a_cv_sized_tree_whole():
    """A 35-leaf tree (the size the CV chose in the first-hour report) is drawn whole by
    default, with readable text."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.6 * rng.normal(size=600) > 0).astype(int)
    full = CARTClassifier().fit(X, y)
    path = full.cost_complexity_path()
    fits = path[(path["n_leaves"] > 30) & (path["n_leaves"] <= 50)]
    assert len(fits), path["n_leaves"].tolist()
    est = full.prune(float(fits["alpha"].iloc[-1]))  # the smallest: 34 leaves
    assert 30 < est.tree_.n_leaves <= 50
    ax = plot_tree(est)
    assert len(node_boxes(ax)) == est.tree_.n_nodes
    assert not any(t.get_gid() == "truncation-note" for t in ax.texts)
    assert min(t.get_fontsize() for t in ax.texts if (t.get_gid() or "").startswith("node-")) >= 5


def test_plot_tree_text_fills_a_titanic_sized_figure():
    """The text is sized to the figure (at least 9 points on the titanic tree, which
    was drawn at 5-6 points in wide empty margins), and no two boxes of a level
    overlap."""
    from cartjit.datasets import load_dataset
    ds = load_dataset("titanic")
    est = CARTClassifier().fit(ds.frame[list(ds.features)], ds.frame[ds.target])
    ax = plot_tree(est)
    nodes = [t for t in ax.texts if (t.get_gid() or "").startswith("node-")]
    assert len(nodes) == est.tree_.n_nodes
    assert min(t.get_fontsize() for t in nodes) >= 9
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = ax.figure
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = {int(t.get_gid()[5:]): t.get_bbox_patch().get_window_extent(renderer)
             for t in nodes}
    depth = est.tree_.depth
    for d in set(depth.tolist()):
        row = sorted((b.x0, b.x1) for n, b in boxes.items() if depth[n] == d)
        assert all(a1 <= b0 for (_, a1), (b0, _) in zip(row[:-1], row[1:])), d
    assert all(b.x0 >= 0 and b.x1 <= fig.bbox.width for b in boxes.values())


def test_plot_tree_max_depth_and_max_leaves(iris_tree):
    ax = plot_tree(iris_tree, max_depth=1)
    assert sorted(node_boxes(ax)) == [0, 1, 2]
    note = [x.get_text() for x in ax.texts if x.get_gid() == "truncation-note"]
    assert len(note) == 1 and "max_depth=1" in note[0]
    ax = plot_tree(iris_tree, max_leaves=3)  # depth 1 ends in 2 boxes, depth 2 in 3
    assert sorted(node_boxes(ax)) == [0, 1, 2, 3, 4]
    ax = plot_tree(iris_tree, max_leaves=1)  # the root alone
    assert sorted(node_boxes(ax)) == [0]


def test_plot_tree_small_thresholds_keep_two_significant_digits():
    X = np.array([[-0.01], [-0.005], [-0.001], [0.002], [0.01]])
    est = CARTClassifier().fit(X, [0, 0, 1, 1, 1])
    # the midpoint of -0.005 and -0.001; with 2 decimals it would read "x0 <= -0"
    assert est.tree_.threshold[0] == pytest.approx(-0.003)
    assert split_texts(plot_tree(est)) == {0: "x0 <= -0.003"}


def test_plot_tree_draws_into_a_given_axes(iris_tree):
    from matplotlib.figure import Figure
    fig = Figure()
    ax = fig.add_subplot(1, 2, 2)
    assert plot_tree(iris_tree, ax=ax, fontsize=6,
                     feature_names=["a", "b", "c", "d"]) is ax
    assert split_texts(ax)[0] == "c <= 2.45"


# --------------------------------------------------------------------------- plot_partition

def test_plot_partition_two_features(iris_petal, tmp_path):
    est, X, y = iris_petal
    ax = plot_partition(est, X, y)
    rects = leaf_rectangles(ax)
    t = est.tree_
    leaves = set(np.flatnonzero(t.left == -1).tolist())
    # one rectangle per leaf (every leaf holds cases, so every leaf is in the picture)
    assert len(rects) == t.n_leaves
    assert {int(r.get_gid()[5:]) for r in rects} == leaves
    # the rectangles tile the plotting area
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    area = sum(r.get_width() * r.get_height() for r in rects)
    assert area == pytest.approx((x1 - x0) * (y1 - y0))
    # each case lies in the rectangle of the leaf the estimator sends it to
    node = est.apply(X)
    pts = X.to_numpy()
    for r in rects:
        inside = ((pts[:, 0] >= r.get_x()) & (pts[:, 0] <= r.get_x() + r.get_width())
                  & (pts[:, 1] >= r.get_y()) & (pts[:, 1] <= r.get_y() + r.get_height()))
        leaf = int(r.get_gid()[5:])
        assert np.all(inside[node == leaf])
        strictly = ((pts[:, 0] > r.get_x()) & (pts[:, 0] < r.get_x() + r.get_width())
                    & (pts[:, 1] > r.get_y()) & (pts[:, 1] < r.get_y() + r.get_height()))
        assert np.all(node[strictly] == leaf)
    assert [h.get_label() for h in ax.get_legend().legend_handles] == \
        ["setosa", "versicolor", "virginica"]
    check_image(ax, "partition_iris", tmp_path)


def test_plot_partition_other_features_held(iris_tree, iris):
    X, y = iris
    ax = plot_partition(iris_tree, X, y, features=("petal_length", "petal_width"))
    title = ax.get_title()
    assert f"sepal_length={np.median(X['sepal_length']):.3g}" in title
    assert f"sepal_width={np.median(X['sepal_width']):.3g}" in title
    # every rectangle predicts what the estimator predicts at its centre
    for r in leaf_rectangles(ax):
        cx, cy = r.get_x() + r.get_width() / 2, r.get_y() + r.get_height() / 2
        row = pd.DataFrame([[np.median(X["sepal_length"]), np.median(X["sepal_width"]),
                             cx, cy]], columns=X.columns)
        assert est_node(iris_tree, row) == int(r.get_gid()[5:])


def est_node(est, row):
    return int(est.apply(row)[0])


def test_plot_partition_raster_agrees_with_rectangles(iris_petal):
    est, X, y = iris_petal
    ax = plot_partition(est, X, y, resolution=60)
    (image,) = ax.images
    rgb = np.asarray(image.get_array())[:, :, :3]
    x0, x1, y0, y1 = image.get_extent()
    xs = np.linspace(x0, x1, 61)
    ys = np.linspace(y0, y1, 61)
    rects = leaf_rectangles(ax)
    assert all(r.get_facecolor()[3] == 0 for r in rects)  # outlines only
    colour = {j: np.array(mpl.colors.to_rgb(CLASS_COLORS[j])) for j in range(3)}
    for i in range(0, 60, 7):
        for j in range(0, 60, 7):
            cx, cy = (xs[j] + xs[j + 1]) / 2, (ys[i] + ys[i + 1]) / 2
            (r,) = [r for r in rects if r.get_x() < cx < r.get_x() + r.get_width()
                    and r.get_y() < cy < r.get_y() + r.get_height()]
            label = est.tree_.label[int(r.get_gid()[5:])]
            # a light tint of the leaf's class colour
            assert np.allclose(rgb[i, j], 1 - 0.3 * (1 - colour[label]), atol=0.5 / 255)


def test_plot_partition_categorical_axes(golf, tmp_path):
    est, X, y = golf
    ax = plot_partition(est, X, y, features=("temperature", "humidity"))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["high", "normal"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["high", "normal"]
    rects = leaf_rectangles(ax)
    # humidity normal (both temperatures), humidity high × temperature high / normal
    assert len(rects) == 3 == est.tree_.n_leaves
    check_image(ax, "partition_golf", tmp_path)


def test_plot_partition_levels_apart_in_one_leaf():
    """A subset split sending blue and red left, green right: the left leaf's region is
    two rectangles, one per run of neighbouring levels (blue | green | red)."""
    colour = np.repeat(["blue", "green", "red"], 20)
    X = pd.DataFrame({"colour": colour, "w": np.tile(np.arange(20.0), 3)})
    y = (colour == "green").astype(int)
    est = CARTClassifier().fit(X, y)
    assert est.tree_.n_leaves == 2
    ax = plot_partition(est, X, y, features=("colour", "w"))
    rects = sorted(leaf_rectangles(ax), key=lambda r: r.get_x())
    assert [r.get_x() for r in rects] == [-0.5, 0.5, 1.5]
    assert all(r.get_width() == 1.0 for r in rects)
    blue, green, red = (int(r.get_gid()[5:]) for r in rects)
    assert blue == red != green
    assert est.tree_.label[green] == 1 and est.tree_.label[blue] == 0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["blue", "green", "red"]


def test_plot_partition_ordinal_axis():
    size = pd.Categorical(np.tile(["S", "M", "L", "XL"], 10),
                          categories=["S", "M", "L", "XL"], ordered=True)
    X = pd.DataFrame({"size": size, "w": np.arange(40.0)})
    y = (X["size"].cat.codes >= 2).astype(int).to_numpy()
    est = CARTClassifier().fit(X, y)
    ax = plot_partition(est, X, y, features=("size", "w"))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["S", "M", "L", "XL"]
    rects = sorted(leaf_rectangles(ax), key=lambda r: r.get_x())
    assert len(rects) == 2 and rects[0].get_x() + rects[0].get_width() == 1.5  # M | L
    assert split_texts(plot_tree(est)) == {0: "size <= M"}


def test_trees_with_missing_values_and_surrogates(iris):
    X, y = iris
    X = X.copy()
    X.iloc[::7, 2] = np.nan  # petal_length missing in 22 cases
    est = CARTClassifier(max_surrogate=3).fit(X, y)
    assert est.tree_.has_surrogates
    assert sorted(node_boxes(plot_tree(est))) == list(range(est.tree_.n_nodes))
    ax = plot_partition(est, X, y, features=(2, 3))
    assert "22 cases missing a plotted feature" in ax.get_title()
    assert sum(len(c.get_offsets()) for c in ax.collections) == 150 - 22
    ax = plot_partition(est, X, y, features=(0, 3))  # petal_length held at its median
    assert f"petal_length={np.nanmedian(X['petal_length']):.3g}" in ax.get_title()


def check_regions_against_apply(est, X, features, ax, n_points=300, seed=0):
    """Random points of the drawn area, the other features held as plot_partition says
    (median; most frequent level, the first on ties; computed here with pandas): the
    estimator's own apply sends each point to the node of the rectangle it lies in."""
    rng = np.random.default_rng(seed)
    rows = {}
    for j, col in enumerate(X.columns):
        values = X[col]
        if j in features:
            continue
        if isinstance(values.dtype, pd.CategoricalDtype) and values.cat.ordered:
            code = np.floor(np.median(values.cat.codes[values.notna()]))
            rows[col] = pd.Categorical([values.cat.categories[int(code)]] * n_points,
                                       categories=values.cat.categories, ordered=True)
        elif values.dtype.kind in "fi":
            rows[col] = np.full(n_points, values.median())
        else:
            rows[col] = [values.mode().iloc[0]] * n_points
    coords = []
    for axis, j in zip("xy", features):
        levels = est.categories_[j] if est.is_categorical_[j] else None
        if levels is not None:
            codes = rng.integers(0, len(levels), n_points)
            rows[X.columns[j]] = pd.Categorical(np.asarray(levels)[codes],
                                                categories=X[X.columns[j]].cat.categories)
            coords.append(codes.astype(float))
        else:
            lo, hi = getattr(ax, f"get_{axis}lim")()
            c = rng.uniform(lo, hi, n_points)
            rows[X.columns[j]] = c
            coords.append(c)
    points = pd.DataFrame(rows)[list(X.columns)]
    node = est.apply(points)
    rects = leaf_rectangles(ax)
    box = np.array([[r.get_x(), r.get_x() + r.get_width(), r.get_y(),
                     r.get_y() + r.get_height()] for r in rects])
    ids = np.array([int(r.get_gid()[5:]) for r in rects])
    px, py = coords
    for k in range(n_points):
        inside = (box[:, 0] < px[k]) & (px[k] < box[:, 1]) & (box[:, 2] < py[k]) \
            & (py[k] < box[:, 3])
        assert inside.sum() == 1 and ids[inside][0] == node[k], (k, px[k], py[k])


def test_regions_agree_with_apply(iris_tree, iris, golf):
    X, y = iris
    ax = plot_partition(iris_tree, X, y, features=(2, 3))
    check_regions_against_apply(iris_tree, X, (2, 3), ax)
    ax = plot_partition(iris_tree, X, y, features=(0, 2))
    check_regions_against_apply(iris_tree, X, (0, 2), ax)
    est, Xg, yg = golf
    Xg = Xg.astype("category")
    ax = plot_partition(est, Xg, yg, features=(1, 0))
    check_regions_against_apply(est, Xg, (1, 0), ax)


def test_regions_where_a_split_cannot_place_the_plane(iris, monkeypatch):
    """Where the held value is missing (a column of NaN) or a level of a nominal axis is
    absent from a node, surrogates and the majority route the cases: the box is then
    cut cell by cell, and the picture still agrees with apply."""
    import cartjit.plotting as plotting
    calls = []
    cells = plotting._cells
    monkeypatch.setattr(plotting, "_cells",
                        lambda tree, node, *a: calls.append(node) or cells(tree, node, *a))
    X, y = iris
    est = CARTClassifier(max_surrogate=3).fit(X, y)
    Xn = X.copy()
    Xn["sepal_length"] = np.nan  # held at "missing": its splits go by surrogates
    ax = plot_partition(est, Xn, y, features=(2, 3))
    assert calls and "sepal_length=missing" in ax.get_title()
    check_regions_against_apply(est, Xn, (2, 3), ax)
    from cartjit.datasets import load_titanic
    Xt, yt = load_titanic(return_X_y=True)
    est = CARTClassifier(max_surrogate=3).fit(Xt, yt)
    calls.clear()
    ax = plot_partition(est, Xt, yt, features=("class", "age"))
    assert calls  # no crew among the children: that split cannot place the level Crew
    check_regions_against_apply(est, Xt, (0, 2), ax)


def test_plot_partition_regression(iris_regression, tmp_path):
    est, X, y = iris_regression
    ax = plot_partition(est, X, y)
    assert len(leaf_rectangles(ax)) == est.tree_.n_leaves
    assert len(ax.figure.axes) == 2  # the colour bar
    check_image(ax, "partition_regression", tmp_path)


def test_plot_partition_without_y_and_with_missing(iris_petal):
    est, X, _ = iris_petal
    X = X.copy()
    X.iloc[:4, 0] = np.nan
    ax = plot_partition(est, X)
    assert "4 cases missing a plotted feature" in ax.get_title()
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(X) - 4


# --------------------------------------------------------------------------- plot_cv

def _marked(ax, gid):
    (line,) = [ln for ln in ax.lines if ln.get_gid() == gid]
    return float(line.get_xdata()[0]), float(line.get_ydata()[0])


def test_plot_cv_marks_min_and_one_se(iris_cv, tmp_path):
    res = iris_cv.cv_results_
    ax = plot_cv(iris_cv)
    cv, se = res["cv_risk"].to_numpy(), res["cv_se"].to_numpy()
    leaves = res["n_leaves"].to_numpy()
    # computed here from the table: the smallest tree with the least R^CV, and the
    # smallest tree within one SE of it
    k_min = max(np.flatnonzero(cv == cv.min()), key=lambda k: -leaves[k])
    k_1se = max(np.flatnonzero(cv <= cv[k_min] + se[k_min] + 1e-12),
                key=lambda k: -leaves[k])
    x_min, y_min = _marked(ax, "cv-min")
    x_choice, _ = _marked(ax, "cv-choice")
    assert x_min == leaves[k_min] == 7
    assert x_choice == leaves[k_1se] == iris_cv.tree_.n_leaves == 4
    root = res["risk"].iloc[-1]
    assert y_min == pytest.approx(cv[k_min] / root)
    bound = [ln for ln in ax.lines if ln.get_label().startswith("min + 1 SE")]
    assert len(bound) == 1
    assert bound[0].get_ydata()[0] == pytest.approx((cv[k_min] + se[k_min]) / root)
    # rpart's plotcp: the top axis labels the geometric-mean cp of each tree
    (top,) = [a for a in ax.child_axes]
    labels = dict(zip(top.get_xticks(), (t.get_text() for t in top.get_xticklabels())))
    assert labels[1] == "Inf" and labels[9] == "0"  # sqrt(cp_k cp_k+1), as plotcp
    assert labels[4] == f"{np.sqrt(res['cp'].iloc[2] * res['cp'].iloc[3]):.2g}"
    check_image(ax, "cv_iris", tmp_path)


def test_plot_cv_selection_min(iris_cv):
    ax = plot_cv(iris_cv, selection="min")
    assert _marked(ax, "cv-choice")[0] == _marked(ax, "cv-min")[0] == 7
    ax = plot_cv(iris_cv, selection=2.0)
    assert any(ln.get_label() == "min + 2 SE" for ln in ax.lines)


def test_plot_cv_regression_log_axis(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(300, 2))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.3 * rng.normal(size=300)
    est = CARTRegressorCV(cv=5, random_state=1).fit(X, y)
    assert est.cv_results_["n_leaves"].max() > 30
    ax = plot_cv(est)
    assert ax.get_xscale() == "log"
    assert _marked(ax, "cv-choice")[0] == est.tree_.n_leaves
    check_image(ax, "cv_regression", tmp_path)


# --------------------------------------------------------------------------- plot_importance

def test_plot_importance(iris_cv, tmp_path):
    ax = plot_importance(iris_cv)
    imp = iris_cv.variable_importance_
    bars = [p for p in ax.patches if p.get_gid() == "importance-bar"]
    assert len(bars) == len(imp)
    # the largest on top: y positions decrease with the rank
    assert [b.get_width() for b in sorted(bars, key=lambda b: -b.get_y())] == \
        pytest.approx(sorted(imp.to_numpy(), reverse=True))
    ticks = sorted(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert [name for _, name in ticks[::-1]] == list(imp.index)
    check_image(ax, "importance_iris", tmp_path)


def test_plot_importance_says_whether_surrogates_were_counted(iris):
    X, y = iris
    auto = CARTClassifier().fit(X, y)  # complete data: "auto" computes no surrogate
    assert auto.max_surrogate_ == 0 and auto.tree_.n_surrogates.sum() == 0
    ax = plot_importance(auto)
    label = ax.get_xlabel()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(ax.figure)
    ax.figure.canvas.draw()
    box = ax.xaxis.label.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= ax.figure.bbox.width  # the note is not clipped
    assert "primary splits only" in label and "surrogates included" not in label
    assert "max_surrogate='auto'" in " ".join(label.split()) and "max_surrogate=5" in label
    split_features = {X.columns[f] for f in auto.tree_.feature[auto.tree_.feature >= 0]}
    assert set(auto.variable_importance_.index) == split_features  # split features only
    five = CARTClassifier(max_surrogate=5).fit(X, y)
    assert five.tree_.n_surrogates.sum() > 0
    assert "surrogates included" in plot_importance(five).get_xlabel()
    assert len(five.variable_importance_) == 4  # every contributing feature, as rpart
    none = CARTClassifier(max_surrogate=0).fit(X, y)
    assert "(max_surrogate=0)" in plot_importance(none).get_xlabel()


def test_plot_importance_impurity_and_max_features(iris_tree):
    ax = plot_importance(iris_tree, kind="impurity", max_features=2)
    bars = [p for p in ax.patches if p.get_gid() == "importance-bar"]
    fi = iris_tree.feature_importances_
    assert [b.get_width() for b in sorted(bars, key=lambda b: -b.get_y())] == \
        pytest.approx(np.sort(fi)[::-1][:2])
    assert f"({np.count_nonzero(fi) - 2} more features not shown)" in ax.get_title()


def _scattered(ax):
    return sum(c.get_offsets().shape[0] for c in ax.collections
               if hasattr(c, "get_offsets") and c.get_offsets().shape[0])


def test_a_slice_through_a_categorical_feature_draws_its_cases_only():
    from cartjit.datasets import load_dataset
    ds = load_dataset("titanic")
    X, y = ds.frame[list(ds.features)], ds.frame[ds.target]
    est = CARTClassifier().fit(X, y)
    ax = plot_partition(est, X, y, features=("class", "sex"))
    adults = int((X["age"] == "Adult").sum())
    assert adults < len(X)
    assert _scattered(ax) == adults
    assert f"{len(X) - adults} at other levels of age not drawn" in " ".join(ax.get_title().split())
    # on the two features the tree was fitted on, every case is drawn
    both = CARTClassifier().fit(X[["class", "sex"]], y)
    ax = plot_partition(both, X[["class", "sex"]], y)
    assert _scattered(ax) == len(X)


def test_a_long_partition_title_stays_inside_the_figure(iris):
    X, y = iris
    wide = X.rename(columns={c: f"{c} measured in centimetres at the field station"
                             for c in X.columns})
    est = CARTClassifier().fit(wide, y)
    ax = plot_partition(est, wide, y, features=(2, 3))
    fig = ax.figure
    fig.canvas.draw()
    box = ax.title.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert "held at median" in ax.get_title()


# --------------------------------------------------------------------------- the runner's look

def test_runner_plot_uses_the_same_look(tmp_path):
    from cartjit.experiments.reports import plot_group
    table = pd.DataFrame({"k": [1, 2, 3], "n_leaves": [5, 3, 1], "alpha": [0, .1, .3],
                          "risk": [.1, .2, .6], "V10_mean": [.3, .25, .7],
                          "V10_std": [np.nan] * 3, "V10_se": [.04, .03, .05]})
    path = tmp_path / "group.png"
    plot_group(table, "t", path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("leaves", [[2, 3], [1, 2, 3, 4, 5], [3, 4, 5, 6, 7, 8], [1, 9, 17]])
def test_tree_sizes_are_ticked_at_whole_numbers(leaves):
    """The size axis of plot_cv and of the runner's plots (a close-up on a few sizes
    ticked 1.5, 2.5, ... before)."""
    from matplotlib.figure import Figure

    from cartjit.plotting import size_axis
    ax = Figure().subplots()
    ax.plot(leaves, np.linspace(0.1, 0.5, len(leaves)))
    assert size_axis(ax, np.array(leaves, dtype=float)) is False
    ax.figure.canvas.draw()
    lo, hi = ax.get_xlim()
    shown = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert len(shown) >= 2
    assert all(float(t).is_integer() for t in shown), shown
    assert all("." not in t.get_text() for t in ax.get_xticklabels() if t.get_text())


# --------------------------------------------------------------------------- bad input

def test_unfitted_estimators_are_refused(iris):
    X, y = iris
    for call in (lambda: plot_tree(CARTClassifier()),
                 lambda: plot_partition(CARTClassifier(), X, y),
                 lambda: plot_cv(CARTClassifierCV()),
                 lambda: plot_importance(CARTRegressor())):
        with pytest.raises(NotFittedError, match="not fitted"):
            call()


def test_bad_arguments(iris_tree, iris_cv, iris, iris_petal):
    X, y = iris
    with pytest.raises(TypeError, match="plot_cv needs a fitted CARTClassifierCV"):
        plot_cv(iris_tree)
    with pytest.raises(ValueError, match="selection"):
        plot_cv(iris_cv, selection="best")
    with pytest.raises(ValueError, match="two different features"):
        plot_partition(iris_tree, X, y, features=(2, 2))
    with pytest.raises(ValueError, match=r"features\[1\] must be in \[0, 4\)"):
        plot_partition(iris_tree, X, y, features=(0, 4))
    with pytest.raises(ValueError, match="no feature named 'petal'"):
        plot_partition(iris_tree, X, y, features=("petal", 0))
    with pytest.raises(ValueError, match="features must be a pair"):
        plot_partition(iris_tree, X, y, features=0)
    with pytest.raises(ValueError, match="y must be 1-d"):
        plot_partition(iris_tree, X, y[:10])
    with pytest.raises(ValueError, match="resolution"):
        plot_partition(iris_tree, X, y, resolution=1)
    with pytest.raises(ValueError, match="max_leaves"):
        plot_tree(iris_tree, max_leaves=0)
    with pytest.raises(ValueError, match="max_depth"):
        plot_tree(iris_tree, max_depth=-1)
    with pytest.raises(ValueError, match="fontsize"):
        plot_tree(iris_tree, fontsize=0)
    with pytest.raises(ValueError, match="class_names has 2 entries"):
        plot_tree(iris_tree, class_names=["a", "b"])
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        plot_tree(iris_tree, ax="here")
    with pytest.raises(ValueError, match="kind must be 'rpart' or 'impurity'"):
        plot_importance(iris_tree, kind="gain")
    with pytest.raises(ValueError, match="max_features"):
        plot_importance(iris_tree, max_features=0)
    est, Xp, _ = iris_petal
    with pytest.raises(ValueError, match="feature"):
        plot_partition(est, X, y)  # four columns for a tree fitted on two


@pytest.mark.slow
def test_headless_without_pyplot(tmp_path):
    """In a fresh interpreter with no display, the four plots save PNGs and never import
    pyplot or a GUI backend."""
    code = """
import sys
from cartjit import CARTClassifierCV, plot_tree, plot_partition, plot_cv, plot_importance
from cartjit.datasets import load_iris
X, y = load_iris(return_X_y=True)
est = CARTClassifierCV(cv=5).fit(X, y)
for i, ax in enumerate([plot_tree(est), plot_partition(est, X, y, features=(2, 3)),
                        plot_cv(est), plot_importance(est)]):
    ax.figure.savefig(sys.argv[1] + f"/{i}.png")
assert "matplotlib.pyplot" not in sys.modules, "pyplot was imported"
print(sorted(m for m in sys.modules if m.startswith("matplotlib.backends.backend_")))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MPLBACKEND")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "backend_agg" in out.stdout and "tk" not in out.stdout and "qt" not in out.stdout
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [f"{i}.png" for i in range(4)]
