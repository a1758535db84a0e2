"""export_text: the fitted tree as indented text (rpart's print layout)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressor, NotFittedError)
from cartjit.datasets import load_iris, load_potato_yield
from cartjit.export import export_text


@pytest.fixture(scope="module")
def iris_tree():
    X, y = load_iris(return_X_y=True)
    return CARTClassifier().fit(X, y)


def node_lines(text):
    return [line for line in text.splitlines() if re.match(r"\s*\d+\) ", line)]


def test_iris_tree_text(iris_tree):
    text = export_text(iris_tree)
    lines = node_lines(text)
    assert len(lines) == iris_tree.tree_.n_nodes == 17
    assert lines[0] == "0) root: n=150, counts [50, 50, 50] -> setosa, R=0.667"
    assert lines[1] == "  1) petal_length <= 2.45: n=50, counts [50, 0, 0] -> setosa, R=0 *"
    assert lines[2].startswith("  2) petal_length > 2.45: n=100, counts [0, 50, 50] -> versicolor")
    assert sum(line.endswith(" *") for line in lines) == iris_tree.get_n_leaves() == 9
    # indentation is two spaces per level and children follow their parent
    t = iris_tree.tree_
    for line in lines:
        node = int(line.split(")")[0])
        assert len(line) - len(line.lstrip()) == 2 * t.depth[node]
    assert "classes setosa, versicolor, virginica" in text and text.endswith("\n")


def test_leaf_risks_add_up_to_the_tree_risk(iris_tree):
    # 1/150 <= 0.01 < 1/75: T(0.01) = T_3, 4 leaves, R(T_3) = 4/150 (docs/maths.md §6)
    text = export_text(iris_tree.prune(0.01), decimals=6)
    leaves = [line for line in node_lines(text) if line.endswith(" *")]
    assert len(leaves) == 4
    total = sum(float(line.rsplit("R=", 1)[1][:-2]) for line in leaves)
    assert total == pytest.approx(4 / 150, abs=1e-5)


def test_feature_names_depth_and_alpha(iris_tree):
    names = ["a", "b", "c", "d"]
    text = export_text(iris_tree, feature_names=names, max_depth=1, show_alpha=True)
    lines = node_lines(text)
    assert lines[1].startswith("  1) c <= 2.45")
    assert lines[2].endswith(" ...") and len(lines) == 3
    assert "alpha=0.333" in lines[0]
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        export_text(iris_tree, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="decimals"):
        export_text(iris_tree, decimals=-1)


def test_regressor_and_numpy_input():
    X, y = load_potato_yield(return_X_y=True)
    est = CARTRegressor(max_depth=1).fit(X.to_numpy(), y.to_numpy())
    lines = node_lines(export_text(est))
    assert lines[0].startswith("0) root: n=15, mean=24.8, R=")
    assert lines[1].startswith("  1) x0 <= 110: n=2, mean=13.5")
    assert len(lines) == 3


def test_cv_estimator_prints_the_selected_subtree():
    X, y = load_iris(return_X_y=True)
    est = CARTClassifierCV(cv=10, selection="1se").fit(X, y)
    leaves = [line for line in node_lines(export_text(est)) if line.endswith(" *")]
    assert len(leaves) == est.get_n_leaves()


def test_weighted_counts():
    X, y = load_iris(return_X_y=True)
    w = np.where(y == "setosa", 2.0, 1.0)
    lines = node_lines(export_text(CARTClassifier(max_depth=1).fit(X, y, sample_weight=w)))
    assert lines[0].startswith("0) root: n=150 (weight 200), counts [100, 50, 50]")


def test_not_fitted():
    with pytest.raises(NotFittedError):
        export_text(CARTClassifier())


def test_export_text_is_importable_from_the_package():
    import cartjit
    assert "export_text" in cartjit.__all__
    assert cartjit.export_text is export_text
    X, y = load_iris(return_X_y=True)
    text = cartjit.export_text(CARTClassifier(max_depth=1).fit(X, y))
    assert text.splitlines()[2].startswith("0) root: n=150, counts [50, 50, 50]")
