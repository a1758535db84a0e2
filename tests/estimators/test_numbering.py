"""One numbering for the rows of the pruning sequence (the book's k) and one for the
nodes (rpart's: root 1, children 2m and 2m + 1), the same in every table and view
(docs/reading-trees.md, "Numbering"); the old 0-based spellings with their warnings; the
short repr of ``Tree``."""
from __future__ import annotations

import io
import re
import warnings

import numpy as np
import pytest

import cartjit
from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor
from cartjit.datasets import load_iris
from cartjit.export import (export_graphviz, export_rules, export_text, format_cp,
                            node_id, node_numbers, print_cp, summary)

LEAF = -1


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def bounded(iris):
    """A CV fit whose rows start at k_c = 3: cp · R(root) = 0.015 × 2/3 = 0.01 lies in
    [α_3, α_4) = [1/150, 2/150), so k = position + 3 (not the + 1 of a 0-based index
    against a 1-based k)."""
    X, y = iris
    est = CARTClassifierCV(cv=10, random_state=0, cp=0.015).fit(X, y)
    assert int(est.cv_results_["k"].iloc[0]) == 3
    return est


def _select(risk, se, m):
    """The book's rule by hand: the largest k (the smallest tree) with R^CV within
    m SE of the minimum (m = 0: the minimum itself)."""
    best = np.flatnonzero(risk == risk.min())[-1]
    return int(np.flatnonzero(risk <= risk[best] + m * se[best] + 1e-12)[-1])


def _printed_nodes(text):
    """{printed number: n} of the node lines of export_text (either layout)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^ *(\d+)\) (root|\S.*?)(?::)? (?:n=)?(\d+)[ ,(]", line)
        if m:
            out[int(m[1])] = int(m[3])
    return out


def test_one_fit_one_numbering_everywhere(bounded):
    est = bounded
    res = est.cv_results_
    t = est.tree_
    ks = res["k"].to_numpy()
    K = len(est.cost_complexity_path())
    # ---- the rows of the sequence: k, indexed by k, in every table
    assert list(ks) == list(range(3, K + 1))
    assert list(res.index) == list(ks)
    for rule, m in (("min", 0.0), ("1se", 1.0), (0.5, 0.5)):
        k = int(ks[_select(res["cv_risk"].to_numpy(), res["cv_se"].to_numpy(), m)])
        assert est.select_k(rule, as_k=True) == k
        assert res.loc[k, "k"] == k
    assert est.best_k_ == est.select_k(est.selection, as_k=True)
    assert bool(res.loc[est.best_k_, "selected"]) and int(res["selected"].sum()) == 1
    assert res.loc[est.best_k_, "n_leaves"] == t.n_leaves
    path = est.cost_complexity_path()
    assert list(path.index) == list(range(1, K + 1))
    assert path.loc[est.best_k_, "n_leaves"] == t.n_leaves
    cpt = est.cptable_
    assert cpt.index.name == "k" and list(cpt.index) == list(ks[::-1])  # root first
    for k in ks:
        assert cpt.loc[k, "nsplit"] == res.loc[k, "n_leaves"] - 1
        assert cpt.loc[k, "xerror"] == res.loc[k, "xerror"]
    # printcp: rows count from the root (rpart's), row r is T_{K+1-r}
    text = format_cp(est)
    rows = [line.split() for line in text.splitlines() if re.match(r"^\d+ ", line)]
    assert len(rows) == len(ks)
    for r, cells in enumerate(rows, start=1):
        assert int(cells[0]) == r
        assert int(cells[2]) == res.loc[K + 1 - r, "n_leaves"] - 1
    r_best = K + 1 - est.best_k_
    assert f"T_{est.best_k_}, row {r_best} (nsplit {t.n_leaves - 1}," in text
    assert text.endswith(f"Row r is T_k with k = {K + 1} - r (cv_results_.loc[k] and "
                         "cptable_.loc[k] are its rows)\n")
    out = io.StringIO()
    print_cp(est, file=out)
    assert out.getvalue() == text
    # ---- the nodes: rpart's numbers, derived here from the child links alone
    numbers = node_numbers(est)
    assert numbers[0] == 1
    for i in range(t.n_nodes):
        if t.left[i] != LEAF:
            kids = {numbers[int(t.left[i])], numbers[int(t.right[i])]}
            assert kids == {2 * numbers[i], 2 * numbers[i] + 1}
        assert node_id(est, numbers[i]) == i
        assert numbers[i].bit_length() - 1 == t.depth[i]
    want = {numbers[i]: int(t.n_node_samples[i]) for i in range(t.n_nodes)}
    assert _printed_nodes(export_text(est)) == want
    assert _printed_nodes(export_text(est, layout="rpart")) == want
    blocks = re.findall(r"^Node number (\d+): (\d+) observations", summary(est), re.M)
    assert [int(m) for m, _ in blocks] == sorted(want)  # by number, each node once
    assert {int(m): int(n) for m, n in blocks} == want
    frame = export_rules(est, as_frame=True)
    leaves = np.flatnonzero(t.left == LEAF)
    assert sorted(frame["node"]) == sorted(leaves.tolist())
    assert list(frame["number"]) == [numbers[i] for i in frame["node"]]
    dot = export_graphviz(est)
    assert sorted(int(v) for v in re.findall(r"^(\d+) \[label=", dot, re.M)) == sorted(want)
    edges = {(int(a), int(b)) for a, b in re.findall(r"^(\d+) -> (\d+) ", dot, re.M)}
    assert edges == {(m // 2, m) for m in want if m > 1}
    # apply gives ids; the numbers of the leaves a case reaches map through node_numbers
    X, _ = load_iris(return_X_y=True)
    reached = est.apply(X)
    assert {numbers[i] for i in reached} <= {numbers[i] for i in leaves}


def test_the_numbers_of_a_deep_tree_stay_exact():
    """A chain of 70 splits: the numbers outgrow int64 and stay exact Python ints."""
    x = np.arange(71, dtype=float)[:, None]
    y = (np.arange(71) % 2).astype(int)
    est = CARTClassifier().fit(x, y)
    t = est.tree_
    assert t.max_depth >= 64
    numbers = node_numbers(est)
    deepest = int(np.argmax(t.depth))
    assert numbers[deepest].bit_length() - 1 == t.depth[deepest]
    assert node_id(est, numbers[deepest]) == deepest
    assert f"{numbers[deepest]}) " in export_text(est)


def test_node_id_refuses_numbers_it_does_not_have(bounded):
    est = bounded
    present = set(node_numbers(est))
    absent = next(m for m in range(1, 10 ** 4) if m not in present)
    with pytest.raises(ValueError, match=f"no node of tree_ is numbered {absent}"):
        node_id(est, absent)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="no node of tree_ is numbered"):
            node_id(est, bad)
    for bad in (True, 2.0, "2", None):
        with pytest.raises(TypeError, match="number must be an int"):
            node_id(est, bad)
    with pytest.raises(cartjit.NotFittedError):
        node_numbers(CARTClassifier())
    assert cartjit.node_numbers is node_numbers and cartjit.node_id is node_id


def test_select_k_returns_k_and_warns_without_as_k(bounded):
    est = bounded
    res = est.cv_results_
    for rule in ("min", "1se", 2):
        with pytest.warns(FutureWarning, match="select_k\\(selection\\) now returns the "
                                               "tree's k.*as_k=False for the position"):
            plain = est.select_k(rule)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            position = est.select_k(rule, as_k=False)
            k = est.select_k(rule, as_k=True)
        # the new meaning: k, the label of the row; the position reads the same row
        assert plain == k and int(res["k"].iloc[position]) == k
        assert res.loc[plain].equals(res.iloc[position])
        # the bounded fit keeps the rows 3, ..., K: k = position + 3
        assert k - position == 3
    for bad in ("yes", 1, None.__class__):
        with pytest.raises(TypeError, match="as_k must be True or False"):
            est.select_k("min", as_k=bad)
    with pytest.raises(ValueError, match="selection must be"):
        est.select_k("max", as_k=True)


def test_best_index_is_deprecated_for_best_k(bounded, iris):
    est = bounded
    with pytest.warns(FutureWarning, match="best_index_ is deprecated.*best_k_"):
        position = est.best_index_
    assert est.cv_results_.iloc[position].equals(est.cv_results_.loc[est.best_k_])
    assert est.best_k_ == position + 3
    unfitted = CARTClassifierCV()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not hasattr(unfitted, "best_index_") and not hasattr(unfitted, "best_k_")
        assert not hasattr(CARTClassifier().fit(*iris), "best_k_")


def test_test_sample_choice_is_numbered_by_k(iris):
    X, y = iris
    rng = np.random.default_rng(0)
    test = rng.permutation(len(y))[:50]
    learn = np.setdiff1d(np.arange(len(y)), test)
    est = CARTClassifier().fit(X.iloc[learn], y.iloc[learn])
    table = est.test_sample_path(X.iloc[test], y.iloc[test])
    assert list(table.index) == list(table["k"]) == list(range(1, len(table) + 1))
    est.prune_by_test_sample(X.iloc[test], y.iloc[test], selection="min")
    k = _select(table["test_risk"].to_numpy(), table["test_se"].to_numpy(), 0.0) + 1
    assert est.best_k_ == k and bool(est.test_results_.loc[k, "selected"])
    assert est.test_results_.loc[k, "n_leaves"] == est.tree_.n_leaves
    est.fit(X, y)  # a new fit drops the choice
    assert not hasattr(est, "best_k_") and "_best_index" not in vars(est)


def test_saved_and_loaded_choices_keep_k(bounded, iris, tmp_path):
    loaded = cartjit.load(cartjit.save(bounded, tmp_path / "cv.cartjit"))
    assert loaded.best_k_ == bounded.best_k_
    assert list(loaded.cv_results_.index) == list(bounded.cv_results_.index)
    X, y = iris
    est = CARTClassifier().fit(X.iloc[::2], y.iloc[::2])
    est.prune_by_test_sample(X.iloc[1::2], y.iloc[1::2])
    back = cartjit.load(cartjit.save(est, tmp_path / "ts.cartjit"))
    assert back.best_k_ == est.best_k_
    assert list(back.test_results_.index) == list(est.test_results_["k"])


def test_tree_repr_is_one_short_line(iris):
    X, y = iris
    stump = CARTClassifier(max_depth=1).fit(X, y).tree_
    # a stump: 3 nodes, 2 leaves, depth 1, iris's 3 classes, one feature split on
    assert repr(stump) == "Tree(n_nodes=3, n_leaves=2, max_depth=1, n_classes=3, features_used=1)"
    assert str(stump) == repr(stump)
    big = CARTRegressor().fit(X, np.arange(len(y), dtype=float)).tree_
    text = repr(big)
    assert "\n" not in text and len(text) < 100
    assert text == (f"Tree(n_nodes={len(big.feature)}, n_leaves={int((big.left == -1).sum())}, "
                    f"max_depth={int(big.depth.max())}, regression, "
                    f"features_used={len(set(big.feature[big.left != -1].tolist()))})")
    assert repr(big._replace(**{f: getattr(big, f)[:0] for f in big.node_fields()})) == \
        "Tree(n_nodes=0)"
