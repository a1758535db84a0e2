"""The forests' plots (cartjit.plotting): drawn headless, checked for what they show.

* ``plot_oob_error``: the OOB curve (and one curve per class) against 1..B trees,
  whole-number ticks, labelled axes;
* ``plot_forest_importance``: bars of the permutation importance or the MDI, largest on
  top, with ± 1 SE bars of the documented size;
* ``plot_proximity``: one point per case at its MDS coordinates, in its class colour;
* forests without what a plot needs, and bad arguments, are refused by name;
* each plot matches its baseline image in tests/ensemble/baseline_images/
  (``references.images``: redraw with ``CARTJIT_UPDATE_BASELINES=1`` after a
  deliberate change of the look, and look at every image).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")

from cartjit import (CARTClassifier, RandomForestClassifier,  # noqa: E402
                     RandomForestRegressor)
from cartjit.datasets import make_classification, make_regression  # noqa: E402
from cartjit.plotting import (CLASS_COLORS, plot_forest_importance,  # noqa: E402
                              plot_oob_error, plot_proximity)
from references.images import baseline_style, check_image  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*in the bag of every tree")
BASELINES = Path(__file__).resolve().parent / "baseline_images"


@pytest.fixture(autouse=True)
def deterministic_style():
    with baseline_style():
        yield


@pytest.fixture(scope="module")
def classifier():
    X, y = make_classification(150, n_features=5, n_informative=3, n_classes=3,
                               random_state=3)
    est = RandomForestClassifier(30, oob_importance=True, random_state=2).fit(X, y)
    return est, X, y


@pytest.fixture(scope="module")
def regressor():
    X, y = make_regression(100, n_features=4, n_informative=2, random_state=1)
    est = RandomForestRegressor(20, oob_score=True, random_state=0).fit(X, y)
    return est, X, y


def gid_lines(ax, prefix):
    return {line.get_gid(): line for line in ax.lines
            if (line.get_gid() or "").startswith(prefix)}


def test_oob_error_curve_and_its_classes(classifier, tmp_path):
    est, _, _ = classifier
    ax = plot_oob_error(est)
    lines = gid_lines(ax, "oob-error")
    overall = lines["oob-error"]
    np.testing.assert_array_equal(overall.get_xdata(), np.arange(1, 31))
    np.testing.assert_array_equal(overall.get_ydata(), est.oob_error_curve_)
    for j in range(3):
        line = lines[f"oob-error-{j}"]
        np.testing.assert_array_equal(line.get_ydata(), est.oob_error_curve_by_class_[:, j])
        assert mpl.colors.same_color(line.get_color(), CLASS_COLORS[j])
    assert ax.get_xlabel() == "number of trees" and ax.get_ylabel() == "OOB error"
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 30]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert [t.get_text() for t in ax.get_legend().get_texts()][:1] == ["class 0"]
    assert set(gid_lines(plot_oob_error(est, by_class=False), "oob-error")) == {"oob-error"}
    check_image(ax, "forest_oob_error", tmp_path, BASELINES)


def test_per_class_curves_follow_their_definition(classifier):
    """The last point of each class's curve is the OOB error rate of that class."""
    est, _, y = classifier
    conf = est.oob_confusion_
    rates = 1.0 - np.diag(conf) / conf.sum(axis=1)
    np.testing.assert_allclose(est.oob_error_curve_by_class_[-1], rates, rtol=1e-12)


def test_oob_error_of_a_regression(regressor):
    est, _, _ = regressor
    ax = plot_oob_error(est)
    assert ax.get_ylabel() == "OOB mean squared error"
    np.testing.assert_array_equal(gid_lines(ax, "oob-error")["oob-error"].get_ydata(),
                                  est.oob_error_curve_)


@pytest.mark.parametrize("kind", ["permutation", "mdi"])
def test_importance_bars_with_standard_errors(classifier, kind, tmp_path):
    est, _, _ = classifier
    ax = plot_forest_importance(est, kind=kind)
    bars = [p for p in ax.patches if p.get_gid() == "importance-bar"]
    if kind == "permutation":
        values, se = est.oob_importances_, est.oob_importances_se_
        assert "permutation importance" in ax.get_xlabel()
    else:
        values = est.feature_importances_
        per_tree = est._tree_importance
        se = per_tree.std(axis=0, ddof=1) / np.sqrt(30) / per_tree.mean(axis=0).sum()
        assert "MDI" in ax.get_xlabel()
    order = np.argsort(-values, kind="stable")
    widths = [b.get_width() for b in sorted(bars, key=lambda b: -b.get_y())]
    np.testing.assert_allclose(widths, values[order])
    labels = {t.get_position()[1]: t.get_text() for t in ax.get_yticklabels()}
    assert [labels[y] for y in sorted(labels, reverse=True)] == [f"x{j}" for j in order]
    (caps,) = [c for c in ax.containers if hasattr(c, "errorbar") and c.errorbar]
    segments = caps.errorbar.lines[2][0].get_segments()
    half = sorted(abs(s[1][0] - s[0][0]) / 2 for s in segments)
    np.testing.assert_allclose(half, np.sort(se), rtol=1e-9, atol=1e-15)
    check_image(ax, f"forest_importance_{kind}", tmp_path, BASELINES)


def test_importance_keeps_max_features(classifier):
    est, _, _ = classifier
    ax = plot_forest_importance(est, max_features=2)
    assert len([p for p in ax.patches if p.get_gid() == "importance-bar"]) == 2
    assert "(3 more features not shown)" in ax.get_title()


def test_proximity_points_in_class_colours(classifier, tmp_path):
    est, X, y = classifier
    ax = plot_proximity(est, X, y)
    coords, values = est.proximity_mds(X, 2)
    for j in range(3):
        (points,) = [c for c in ax.collections if c.get_gid() == f"mds-{j}"]
        np.testing.assert_allclose(points.get_offsets(), coords[y == j])
        assert mpl.colors.same_color(points.get_facecolor()[0], CLASS_COLORS[j])
    share = 100 * values[0] / values[values > 0].sum()
    assert ax.get_xlabel() == f"dimension 1 ({share:.0f}% of the positive eigenvalues)"
    assert ax.get_ylabel().startswith("dimension 2 (")
    assert "out-of-bag proximity" in ax.get_title()
    check_image(ax, "forest_proximity", tmp_path, BASELINES)


def test_proximity_of_a_regression_without_oob(regressor):
    est, X, y = regressor
    ax = plot_proximity(est, X, y, oob=False)
    (points,) = [c for c in ax.collections if c.get_gid() == "mds-points"]
    assert points.get_offsets().shape == (100, 2)
    np.testing.assert_array_equal(points.get_array(), y)
    assert "out-of-bag" not in ax.get_title()


def test_plots_draw_into_a_given_axes(classifier):
    from matplotlib.figure import Figure

    est, X, _ = classifier
    ax = Figure().add_subplot()
    assert plot_oob_error(est, ax=ax) is ax
    assert plot_proximity(est, X, ax=ax) is ax


def test_forests_without_what_a_plot_needs_are_refused(classifier):
    est, X, y = classifier
    plain = RandomForestClassifier(5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="oob_score=True"):
        plot_oob_error(plain)
    with pytest.raises(ValueError, match="oob_importance=True"):
        plot_forest_importance(plain)
    assert plot_forest_importance(plain, kind="mdi") is not None
    with pytest.raises(TypeError, match="needs a fitted forest"):
        plot_oob_error(CARTClassifier().fit(X, y))
    with pytest.raises(Exception, match="not fitted"):
        plot_forest_importance(RandomForestClassifier())
    with pytest.raises(ValueError, match="kind must be 'permutation' or 'mdi'"):
        plot_forest_importance(est, kind="gini")
    with pytest.raises(ValueError, match="max_features must be an integer >= 1"):
        plot_forest_importance(est, max_features=0)
    with pytest.raises(TypeError, match="by_class must be True or False"):
        plot_oob_error(est, by_class="yes")
    with pytest.raises(ValueError, match=r"y must be one value per row of X \(150\)"):
        plot_proximity(est, X, y[:10])
    with pytest.raises(ValueError, match="not among the forest's classes_"):
        plot_proximity(est, X, y + 7)


@pytest.mark.parametrize("name", ["plot_oob_error", "plot_forest_importance",
                                  "plot_proximity"])
def test_a_missing_matplotlib_is_named(classifier, monkeypatch, name):
    import cartjit.plotting as plotting

    est, X, _ = classifier
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    args = (est, X) if name == "plot_proximity" else (est,)
    with pytest.raises(ImportError, match=rf"{name} needs matplotlib"):
        getattr(plotting, name)(*args)
