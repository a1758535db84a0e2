"""export_text: the fitted tree as indented text (rpart's print layout)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressor, NotFittedError)
from cartjit.datasets import load_iris, load_potato_yield
from cartjit.export import export_text, node_id


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
    # rpart's numbers: the root 1, the children of m are 2m and 2m + 1
    assert lines[0] == "1) root: n=150, counts [50, 50, 50] -> setosa, R=0.667"
    assert lines[1] == "  2) petal_length <= 2.45: n=50, counts [50, 0, 0] -> setosa, R=0 *"
    assert lines[2].startswith("  3) petal_length > 2.45: n=100, counts [0, 50, 50] -> versicolor")
    assert sum(line.endswith(" *") for line in lines) == iris_tree.get_n_leaves() == 9
    # indentation is two spaces per level and children follow their parent
    t = iris_tree.tree_
    for line in lines:
        number = int(line.split(")")[0])
        node = node_id(iris_tree, number)
        # a heap number m lies at depth floor(log2 m)
        assert len(line) - len(line.lstrip()) == 2 * t.depth[node] == \
            2 * (number.bit_length() - 1)
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
    assert lines[1].startswith("  2) c <= 2.45")
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
    assert lines[0].startswith("1) root: n=15, mean=24.8, R=")
    assert lines[1].startswith("  2) x0 <= 110: n=2, mean=13.5")  # the smaller mean: 2m
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
    assert lines[0].startswith("1) root: n=150 (weight 200), counts [100, 50, 50]")


def test_not_fitted():
    with pytest.raises(NotFittedError):
        export_text(CARTClassifier())


def test_export_text_is_importable_from_the_package():
    import cartjit
    assert "export_text" in cartjit.__all__
    assert cartjit.export_text is export_text
    X, y = load_iris(return_X_y=True)
    text = cartjit.export_text(CARTClassifier(max_depth=1).fit(X, y))
    assert text.splitlines()[2].startswith("1) root: n=150, counts [50, 50, 50]")


# --------------------------------------------------------------------------- categorical

def test_play_golf_text_names_the_levels():
    """The play-golf tree of docs/maths.md §6, written by hand from its counts: humidity at
    the root (high: 4 no, 2 yes; normal: 4 yes), then temperature under humidity = high
    (high: 3 no; normal: 1 no, 2 yes). The lowest level code (high) is on the left."""
    from cartjit.datasets import load_play_golf
    X, y = load_play_golf(return_X_y=True)
    text = export_text(CARTClassifier("entropy").fit(X, y))
    assert text == (
        "CARTClassifier: 5 nodes, 3 leaves, depth 2; classes no, yes\n"
        "node) split: n, class counts -> class, R(t)    (* leaf)\n"
        "1) root: n=10, counts [4, 6] -> yes, R=0.4\n"
        "  2) humidity in {high}: n=6, counts [4, 2] -> no, R=0.2\n"
        "    4) temperature in {high}: n=3, counts [3, 0] -> no, R=0 *\n"
        "    5) temperature in {normal}: n=3, counts [1, 2] -> yes, R=0.1 *\n"
        "  3) humidity in {normal}: n=4, counts [0, 4] -> yes, R=0 *\n")


def _one_subset_split(left_codes, right_codes, n_levels):
    """A hand-built three-node tree whose root splits feature 0 by level subsets."""
    from types import SimpleNamespace

    from cartjit.engine.tree import Tree, validate, without_surrogates

    n_words = (n_levels + 63) // 64
    sets = np.zeros((1, 2, n_words), dtype=np.uint64)
    for side, codes in enumerate((left_codes, right_codes)):
        for c in codes:
            sets[0, side, c // 64] |= np.uint64(1) << np.uint64(c % 64)
    i32 = lambda v: np.asarray(v, dtype=np.int32)  # noqa: E731
    f64 = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    tree = Tree(feature=i32([0, -1, -1]), threshold=f64([np.nan] * 3), left=i32([1, -1, -1]),
                right=i32([2, -1, -1]), parent=i32([-1, 0, 0]), depth=i32([0, 1, 1]),
                n_node_samples=np.asarray([30, 20, 10], dtype=np.int64),
                weighted_n_node_samples=f64([30, 20, 10]),
                value=f64([[20, 10], [18, 2], [2, 8]]), impurity=f64([0.44, 0.18, 0.32]),
                risk=f64([1 / 3, 2 / 30, 2 / 30]), label=i32([0, 0, 1]),
                alpha=f64([0.1, 0, 0]), improvement=f64([0.2, 0, 0]),
                majority_left=i32([1, 0, 0]), level_row=i32([0, -1, -1]), level_sets=sets,
                n_primary=np.asarray([30, 0, 0], dtype=np.int64), **without_surrogates(3))
    validate(tree)
    levels = np.asarray([f"L{c}" for c in range(n_levels)], dtype=object)
    return SimpleNamespace(tree_=tree, n_features_in_=1, classes_=np.array(["a", "b"]),
                           categories_=[levels], feature_names_in_=np.array(["grade"]))


def test_subset_split_lines_from_the_bitsets():
    est = _one_subset_split([0, 3], [1, 2], 4)
    lines = node_lines(export_text(est))
    assert lines[1] == "  2) grade in {L0, L3}: n=20, counts [18, 2] -> a, R=0.067 *"
    assert lines[2] == "  3) grade in {L1, L2}: n=10, counts [2, 8] -> b, R=0.067 *"


def test_long_level_sets_are_cut_and_codes_beyond_64_are_read():
    left = list(range(0, 140, 2))     # 70 levels, over three 64-bit words
    right = [1, 65, 129]
    est = _one_subset_split(left, right, 140)
    lines = node_lines(export_text(est))
    assert lines[1].startswith("  2) grade in {L0, L2, L4, L6, L8, L10, L12, L14, "
                               "... (+62 more)}: n=20")
    assert lines[2].startswith("  3) grade in {L1, L65, L129}: n=10")


def test_ordinal_split_names_the_last_level_on_the_left():
    import pandas as pd
    size = pd.Categorical(["S", "M", "L", "XL"] * 10, categories=["S", "M", "L", "XL"],
                          ordered=True)
    X = pd.DataFrame({"size": size})
    y = np.where(np.asarray(size.codes) <= 1, "small", "big")
    lines = node_lines(export_text(CARTClassifier().fit(X, y)))
    # rpart numbers first (2m) the child with the smaller class index, here the right
    assert lines[1].startswith("  3) size <= M: n=20, counts [0, 20] -> small")
    assert lines[2].startswith("  2) size > M: n=20, counts [20, 0] -> big")
