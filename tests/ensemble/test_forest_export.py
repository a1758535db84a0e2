"""Tree k of a forest through the text exporters: ``export_text(forest, tree=k)`` (and
``export_rules``, ``export_graphviz``, ``summary``) prints the view ``estimators_[k]``
exactly as the single-tree exporters print a tree; bad ``tree`` values name the
argument."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import (CARTClassifier, NotFittedError, RandomForestClassifier,
                     RandomForestRegressor, export_graphviz, export_rules, export_text,
                     summary)
from cartjit.datasets import load_iris

from references.modelfiles import mixed_frame


@pytest.fixture(scope="module")
def forest():
    X, y = load_iris(return_X_y=True)
    return RandomForestClassifier(5, random_state=2, ccp_alpha=0.01).fit(X, y)


@pytest.mark.parametrize("k", [0, 4])
def test_tree_k_prints_as_its_view(forest, k):
    view = forest.estimators_[k]
    assert export_text(forest, tree=k) == export_text(view)
    assert export_text(forest, tree=np.int64(k), layout="rpart") == \
        export_text(view, layout="rpart")
    assert export_text(forest, tree=k, details=True) == summary(view)
    assert summary(forest, tree=k, max_depth=1) == summary(view, max_depth=1)
    assert export_rules(forest, tree=k) == export_rules(view)
    assert export_graphviz(forest, tree=k, surrogates=True) == \
        export_graphviz(view, surrogates=True)


def test_the_trees_differ_and_are_pruned(forest):
    texts = {export_text(forest, tree=k) for k in range(5)}
    assert len(texts) == 5  # five bootstrap samples, five trees
    view = forest.estimators_[1]
    assert view.tree_.n_nodes < view.tree_max_.n_nodes  # printed: T(ccp_alpha)
    assert f"{view.tree_.n_nodes} nodes" in export_text(forest, tree=1)


@pytest.mark.filterwarnings("ignore:.*missing")
def test_categorical_regression_forest_tree():
    frame, _, y = mixed_frame()
    reg = RandomForestRegressor(3, max_features=None, random_state=0, max_depth=3).fit(
        frame, y)
    text = export_text(reg, tree=2)
    assert text == export_text(reg.estimators_[2])
    assert " in {" in text  # a subset split of a categorical feature
    assert summary(reg, tree=2) == summary(reg.estimators_[2])  # with its surrogates


@pytest.mark.parametrize("tree, error, message", [
    (None, TypeError, "export_text prints one tree of a forest: give tree=k"),
    (5, ValueError, r"tree must lie in \[0, 5\) \(the forest has 5 trees\), got 5"),
    (-1, ValueError, r"tree must lie in \[0, 5\)"),
    (1.0, TypeError, "tree must be an int"),
    (True, TypeError, "tree must be an int"),
    ("0", TypeError, "tree must be an int"),
])
def test_bad_tree_names_the_argument(forest, tree, error, message):
    with pytest.raises(error, match=message):
        export_text(forest, tree=tree)


def test_tree_of_a_single_tree_or_unfitted_forest_is_refused():
    X, y = load_iris(return_X_y=True)
    single = CARTClassifier(max_depth=2).fit(X, y)
    with pytest.raises(TypeError, match="tree=0 picks a tree of a forest, but "
                                        "CARTClassifier is a single tree"):
        export_text(single, tree=0)
    with pytest.raises(TypeError, match="tree=1"):
        export_rules(single, tree=1)
    with pytest.raises(NotFittedError):
        export_text(RandomForestClassifier(), tree=0)
