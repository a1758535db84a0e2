"""Reading a tree as text: export_text(layout="rpart"), export_rules, format_cp / print_cp
and export_graphviz.

Golden files (tests/references/golden/) hold the expected text of small trees, checked by eye
against the trees' counts; CARTJIT_UPDATE_GOLDEN=1 rewrites them (then read the diff).
The rpart layout and the printcp table are also compared with R's own print(rpart(...))
and printcp() of the same trees (skipped without R unless CARTJIT_REQUIRE_R=1).
"""
from __future__ import annotations

import io
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cartjit
from cartjit import (CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV,
                     NotFittedError)
from cartjit.datasets import load_iris, load_play_golf, load_titanic, load_tooth_growth
from cartjit.export import (export_graphviz, export_rules, export_text, format_cp,
                            node_numbers, print_cp)

GOLDEN = Path(__file__).resolve().parents[1] / "references" / "golden"


def check_golden(name, text):
    path = GOLDEN / name
    if os.environ.get("CARTJIT_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


# --------------------------------------------------------------------------- trees

@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y, CARTClassifier().fit(X, y)


@pytest.fixture(scope="module")
def iris_cv():
    X, y = load_iris(return_X_y=True)
    return CARTClassifierCV(cv=10, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def golf():
    X, y = load_play_golf(return_X_y=True)
    return CARTClassifier("entropy").fit(X, y)


@pytest.fixture(scope="module")
def teeth():
    X, y = load_tooth_growth(return_X_y=True)
    return X, y, CARTRegressorCV(cv=10, random_state=0).fit(X, y)


def iris_with_holes():
    """Iris with a tenth of the petal measurements missing (seeded): surrogates route them."""
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    rng = np.random.default_rng(7)
    for col in ("petal_length", "petal_width"):
        X.loc[rng.random(len(X)) < 0.1, col] = np.nan
    return X, y


@pytest.fixture(scope="module")
def holes():
    X, y = iris_with_holes()
    return X, y, CARTClassifier(min_samples_leaf=5, ccp_alpha=0.01).fit(X, y)


# --------------------------------------------------------------------------- goldens

def rpart_layout(est):
    return export_text(est, layout="rpart")


#: golden file -> (fixture of the estimator, writer)
GOLDENS = {
    "iris_rpart.txt": ("iris", rpart_layout),
    "iris_rules.txt": ("iris", export_rules),
    "iris_cv.dot": ("iris_cv", export_graphviz),
    "iris_printcp.txt": ("iris_cv", format_cp),
    "play_golf_rpart.txt": ("golf", rpart_layout),
    "play_golf_rules.txt": ("golf", export_rules),
    "play_golf.dot": ("golf", export_graphviz),
    "tooth_growth_rpart.txt": ("teeth", rpart_layout),
    "tooth_growth_rules.txt": ("teeth", export_rules),
    "tooth_growth_printcp.txt": ("teeth", format_cp),
    "tooth_growth.dot": ("teeth", export_graphviz),
    "iris_missing_rpart.txt": ("holes", rpart_layout),
    "iris_missing_rules.txt": ("holes", export_rules),
    "iris_missing.dot": ("holes", lambda est: export_graphviz(est, surrogates=True)),
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(name, request):
    fixture, write = GOLDENS[name]
    est = request.getfixturevalue(fixture)
    est = est[2] if isinstance(est, tuple) else est
    assert fixture != "holes" or est.tree_.has_surrogates
    check_golden(name, write(est))


# --------------------------------------------------------------------------- rpart layout

NODE_LINE = re.compile(r"^( *)(\d+)\) (.*)$")


def parse_rpart_lines(text):
    """(indent, number, rest) of every node line."""
    return [(len(m[1]), int(m[2]), m[3]) for m in map(NODE_LINE.match, text.splitlines())
            if m]


def test_rpart_layout_numbers_and_losses_from_the_counts(iris):
    """Independent of the writer: the numbers follow rpart's 2k / 2k+1 scheme by
    indentation, every node appears once, and with the default priors the loss is the
    count of misclassified cases, n minus the largest class count, and yprob the counts
    over n."""
    X, y, est = iris
    text = export_text(est, layout="rpart", decimals=6)
    assert text.splitlines()[:5] == ["n= 150", "", "node), split, n, loss, yval, (yprob)",
                                     "      * denotes terminal node", ""]
    lines = parse_rpart_lines(text)
    assert len(lines) == est.tree_.n_nodes
    stack = []  # (depth, number) of the ancestors
    for indent, number, rest in lines:
        depth = (indent + len(str(number)) - 2) // 2  # numbers are right-aligned
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            assert number // 2 == stack[-1][1]
        else:
            assert number == 1 and rest.startswith("root 150 ")
        stack.append((depth, number))
        tokens = rest.replace("(", " ").replace(")", " ").split()
        leaf = tokens[-1] == "*"
        tokens = tokens[:-1] if leaf else tokens
        probs = np.array([float(t) for t in tokens[-3:]])
        label, loss, n = tokens[-4], float(tokens[-5]), int(tokens[-6])
        counts = probs * n
        assert loss == pytest.approx(n - counts.max(), abs=1e-4)
        assert label == est.classes_[np.argmax(probs)]
    assert sum(rest.endswith(" *") for _, _, rest in lines) == est.get_n_leaves()


def test_weights_in_the_rpart_layout_rules_and_dot():
    """setosa weighted 2: the root holds weight 200 of which versicolor and virginica,
    100, are misclassified; n stays the number of cases."""
    X, y = load_iris(return_X_y=True)
    w = np.where(y == "setosa", 2.0, 1.0)
    est = CARTClassifier(max_depth=1).fit(X, y, sample_weight=w)
    lines = export_text(est, layout="rpart").splitlines()
    assert lines[5] == "1) root 150 100 setosa (0.500 0.250 0.250)"
    assert lines[6] == "  2) petal_length< 2.45 50   0 setosa (1.000 0.000 0.000) *"
    assert export_rules(est).splitlines()[0] == \
        "if petal_length <= 2.45 then class = setosa (n=50, 100/100 = 1.000)"
    assert "n = 150 (weight 200)" in export_graphviz(est)


def test_rpart_layout_of_a_subset_split_and_a_cut(golf):
    text = export_text(golf, layout="rpart", max_depth=1)
    lines = text.splitlines()[5:]
    assert lines == ["1) root 10 4 yes (0.400 0.600)",
                     "  2) humidity=high 6 2 no (0.667 0.333) ...",
                     "  3) humidity=normal 4 0 yes (0.000 1.000) *"]


# --------------------------------------------------------------------------- R

def run_r_print(frame, target, method, folds, parms=None, minsplit=2, minbucket=1):
    """print(rpart(...)) and printcp() of R on ``frame`` (the tree grown to cp=0;
    xval = the given fold ids; rpart's ``parms``), as one text."""
    from parity import rpart_runner as rr
    from parity.conftest import require_rpart
    require_rpart()
    with tempfile.TemporaryDirectory(prefix="cartjit-print-") as tmp:
        work = Path(tmp)
        factors = {c: [str(v) for v in frame[c].cat.categories] for c in frame.columns
                   if isinstance(frame[c].dtype, pd.CategoricalDtype)}
        frame.assign(**{c: frame[c].astype(str) for c in factors}).to_csv(
            work / "data.csv", index=False)
        if method == "class":
            factors[target] = sorted({str(v) for v in frame[target]})
        script = f"""
suppressPackageStartupMessages(library(rpart))
d <- read.csv(file.path(commandArgs(trailingOnly = TRUE)[1], "data.csv"),
              stringsAsFactors = FALSE, check.names = FALSE)
levs <- {rr._r_literal(factors) if factors else 'list()'}
for (nm in names(levs)) d[[nm]] <- factor(d[[nm]], levels = levs[[nm]])
fit <- rpart({target} ~ ., data = d, method = "{method}",
             parms = {rr._r_literal(parms) if parms else 'NULL'},
             control = rpart.control(cp = 0, minsplit = {minsplit}, minbucket = {minbucket},
                                     xval = {rr._r_literal(np.asarray(folds))}))
print(fit)
printcp(fit)
"""
        return rr._run_r(script, work, 120).stdout


def same_tokens(ours, theirs, tol):
    """Two lines equal word by word, numbers within ``tol`` (relative, at least absolute)."""
    a = ours.replace("(", " ").replace(")", " ").split()
    b = theirs.replace("(", " ").replace(")", " ").split()
    if len(a) != len(b):
        return False
    for u, v in zip(a, b):
        try:
            if abs(float(u) - float(v)) > tol * max(1.0, abs(float(v))):
                return False
        except ValueError:
            if u != v:
                return False
    return True


#: The costs of the "iris, priors and costs" case: rows the true class, columns the
#: predicted one (cartjit's cost[i, j] and rpart's loss[i, j] alike)
IRIS_COST = np.array([[0.0, 1.0, 1.0], [2.0, 0.0, 3.0], [1.0, 1.0, 0.0]])

#: case -> (X, y, estimator, rpart's method and parms). The priors case stops at nodes
#: of 20 cases and leaves of 7 (rpart's minsplit and minbucket), above the small nodes
#: where two features separate the classes equally well and the two programs may pick
#: different ones; its xerror and xstd are not compared (with given priors rpart's fold
#: trees see other priors unless the folds keep the class proportions, and rpart 4.1
#: scores held-out cases with the loss matrix transposed: tests/parity/test_rpart_cv.py)
R_CASES = {
    "iris": lambda: (*load_iris(return_X_y=True), CARTClassifierCV(), "class", None),
    "iris, priors and costs": lambda: (
        *load_iris(return_X_y=True),
        CARTClassifierCV(priors=[0.5, 0.2, 0.3], cost=IRIS_COST, min_samples_split=20,
                         min_samples_leaf=7), "class",
        {"prior": [0.5, 0.2, 0.3], "loss": IRIS_COST}),
    "titanic": lambda: (*load_titanic(return_X_y=True), CARTClassifierCV(), "class", None),
    "tooth_growth": lambda: (*load_tooth_growth(return_X_y=True), CARTRegressorCV(),
                             "anova", None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(R_CASES))
def test_rpart_layout_and_printcp_match_r(case):
    """The same data, the same full tree (rpart cp=0, minsplit=2, minbucket=1) and the
    same folds in both: print.rpart's node lines (numbers, indentation, splits, n, loss,
    yval, yprob) agree up to the decimals printed, and printcp's table agrees line for
    line, formatting included."""
    X, y, est, method, parms = R_CASES[case]()
    # shuffled folds: with iris in class order, folds of arange(n) % 10 leave the three
    # classes tied in every training part, where rpart's root predicts otherwise
    folds = np.random.default_rng(1).permutation(len(y)) % 10 + 1  # rpart: groups 1..V
    est = est.set_params(cv=folds).fit(X, y)
    r_text = run_r_print(pd.concat([X, y], axis=1), y.name, method, folds, parms,
                         est.min_samples_split, est.min_samples_leaf)
    r_print, r_cp = r_text.split("\nClassification tree:" if method == "class"
                                 else "\nRegression tree:")
    # the printed tree: rpart's full tree is T_max
    ours = export_text(est.prune(0.0), layout="rpart", decimals=4).splitlines()
    theirs = [line.rstrip() for line in r_print.strip("\n").splitlines()]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert len(a) - len(a.lstrip()) == len(b) - len(b.lstrip()), (a, b)
        assert same_tokens(a, b, 1e-4), (a, b)
    # printcp from "Variables actually used" to the end of the table
    ours = format_cp(est).split("Variables actually used", 1)[1].split("\n\nSelected")[0]
    ours = [line.rstrip() for line in ours.strip().splitlines()]
    theirs = r_cp.split("Variables actually used", 1)[1]
    theirs = [line.rstrip() for line in theirs.strip().splitlines()]
    if parms is not None:  # CP, nsplit and rel error only
        cut = next(i for i, line in enumerate(ours) if "nsplit" in line)
        assert ours[:cut] == theirs[:cut]
        assert [line.split()[:-2] for line in ours[cut:]] == \
            [line.split()[:-2] for line in theirs[cut:]]
    else:
        assert ours == theirs


# --------------------------------------------------------------------------- rules

def rule_mask(conditions, X):
    """Rows of the DataFrame X meeting the conditions of one rule (its text form); an
    ordered categorical compares by the position of its levels."""
    def values(col, *bounds):
        x = X[col]
        if isinstance(x.dtype, pd.CategoricalDtype) and x.cat.ordered:
            cats = list(x.cat.categories)
            return (x.cat.codes.to_numpy(dtype=float),
                    *(float(cats.index(b)) for b in bounds))
        return (x.to_numpy(dtype=float), *(float(b) for b in bounds))

    mask = np.ones(len(X), dtype=bool)
    for cond in conditions.split(" and ") if conditions else []:
        if m := re.fullmatch(r"(\S+) in \{(.*)\}", cond):
            mask &= X[m[1]].astype(str).isin(m[2].split(", ")).to_numpy()
        elif m := re.fullmatch(r"(\S+) < (\S+) <= (\S+)", cond):
            x, lo, hi = values(m[2], m[1], m[3])
            mask &= (x > lo) & (x <= hi)
        elif m := re.fullmatch(r"(\S+) (<=|>) (\S+)", cond):
            x, bound = values(m[1], m[3])
            mask &= (x <= bound) if m[2] == "<=" else (x > bound)
        else:
            raise AssertionError(f"cannot read condition {cond!r}")
    return mask


def check_rules_select_the_leaves(est, X, **kwargs):
    text = export_rules(est, decimals=6, **kwargs)
    frame = export_rules(est, decimals=6, as_frame=True, **kwargs)
    lines = text.splitlines()
    assert len(lines) == len(frame) == est.get_n_leaves()
    leaves = est.apply(X)
    covered = np.zeros(len(X), dtype=int)
    for line, row in zip(lines, frame.itertuples()):
        conditions = re.fullmatch(r"(?:if (.*) then|always:) .*", line)[1] or ""
        assert conditions == row.rule
        mask = rule_mask(conditions, X)
        np.testing.assert_array_equal(mask, leaves == row.node)
        assert mask.sum() == row.n
        covered += mask
    assert np.all(covered == 1)


def test_rules_select_exactly_the_rows_of_their_leaf_iris(iris):
    X, y, est = iris
    check_rules_select_the_leaves(est, X)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rules_select_exactly_the_rows_of_their_leaf_categorical(seed):
    """Random data with nominal features of up to 11 levels (longer sets than
    export_text shows), an ordinal and an integer-valued numeric one (its midpoints
    print exactly): merged level sets and intervals select the leaf's rows."""
    rng = np.random.default_rng(seed)
    n = 300
    X = pd.DataFrame({
        "colour": pd.Categorical(rng.choice(list("abcdefghijk"), n)),
        "shape": pd.Categorical(rng.choice(["round", "square", "star"], n)),
        "size": rng.integers(0, 20, n).astype(float),
        "grade": pd.Categorical(rng.choice(["low", "mid", "high", "top"], n),
                                categories=["low", "mid", "high", "top"], ordered=True),
    })
    y = np.where((X["colour"].isin(list("abc"))) ^ (X["size"] > 9) ^ (rng.random(n) < 0.2)
                 ^ (X["grade"].cat.codes == 1), "yes", "no")
    est = CARTClassifier(min_samples_leaf=3).fit(X, y)
    assert est.tree_.has_subset_splits
    assert 3 in est.tree_.feature  # the ordinal feature is split on
    check_rules_select_the_leaves(est, X)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(12, 80),
       classify=st.booleans(), leaf=st.integers(1, 4))
def test_rules_select_the_leaves_of_random_trees(seed, n, classify, leaf):
    """Random nominal (2 to 12 levels: a rule lists a set in full where export_text cuts
    it after 8), ordinal and integer-valued numeric features,
    classification or regression: each rule selects exactly its leaf's rows."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "nom": pd.Categorical(rng.choice([f"L{i}" for i in range(int(rng.integers(2, 13)))],
                                         n)),
        "ord": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                              categories=["lo", "mid", "hi"], ordered=True),
        "num": rng.integers(-5, 6, n).astype(float),
    })
    if classify:
        y = rng.choice(["a", "b", "c"], n)
        est = CARTClassifier(min_samples_leaf=leaf).fit(X, y)
    else:
        y = rng.normal(size=n) + X["num"].to_numpy()
        est = CARTRegressor(min_samples_leaf=leaf).fit(X, y)
    check_rules_select_the_leaves(est, X)


def test_rules_list_long_level_sets_in_full():
    levels = list("abcdefghijkl")
    X = pd.DataFrame({"colour": pd.Categorical(levels * 3)})
    y = np.where(X["colour"].isin(levels[:10]), "yes", "no")
    est = CARTClassifier().fit(X, y)
    assert "colour in {a, b, c, d, e, f, g, h, ... (+2 more)}" in export_text(est)
    assert export_rules(est) == ("if colour in {a, b, c, d, e, f, g, h, i, j} then class = "
                                 "yes (n=30, 30/30 = 1.000)\n"
                                 "if colour in {k, l} then class = no (n=6, 6/6 = 1.000)\n")


def test_ordinal_splits_name_their_levels():
    """An ordered categorical splits on its level order: the rpart layout names the last
    level on the left and the first on the right, a rule an interval of levels."""
    grade = pd.Categorical(["low", "mid", "high", "top"] * 5,
                           categories=["low", "mid", "high", "top"], ordered=True)
    X = pd.DataFrame({"grade": grade})
    y = np.where(grade.codes == 0, "a", np.where(grade.codes == 3, "c", "b"))
    est = CARTClassifier().fit(X, y)
    splits = [line.split(") ")[1].split(" ")[0]
              for line in export_text(est, layout="rpart").splitlines()[6:]]
    assert sorted(splits) == sorted(["grade<=low", "grade>=mid", "grade<=high",
                                     "grade>=top"])
    assert "low < grade <= high then class = b" in export_rules(est)


def test_rules_text_merges_conditions(iris):
    lines = export_rules(iris[2]).splitlines()
    assert lines[0] == "if petal_length <= 2.45 then class = setosa (n=50, 50/50 = 1.000)"
    assert lines[1].startswith("if 2.45 < petal_length <= 4.95 and petal_width <= 1.65 then")
    assert all(line.count("petal_length") <= 1 for line in lines)


def test_rules_regression_weights_and_root():
    X, y = load_tooth_growth(return_X_y=True)
    est = CARTRegressor(max_depth=1).fit(X, y)
    lines = export_rules(est).splitlines()
    low = (X["dose"] <= 0.75).to_numpy()
    pattern = r"if dose (<=|>) 0\.75 then y = (\S+) \(n=(\d+)\)"
    parsed = [re.fullmatch(pattern, line).groups() for line in lines]
    assert [(op, int(n)) for op, _, n in parsed] == [("<=", 20), (">", 40)]
    assert float(parsed[0][1]) == pytest.approx(y[low].mean(), abs=5e-4)
    assert float(parsed[1][1]) == pytest.approx(y[~low].mean(), abs=5e-4)
    w = np.where(X["dose"] <= 0.75, 2.0, 1.0)
    est = CARTRegressor(max_depth=0).fit(X, y, sample_weight=w)
    assert export_rules(est) == (f"always: y = {np.average(y, weights=w):.3f} "
                                 "(n=60, weight 80)\n")


def test_rules_max_depth_and_class_names(iris):
    X, y, est = iris
    frame = export_rules(est, max_depth=1, as_frame=True)
    assert frame["node"].tolist() == [1, 2]
    text = export_rules(est, max_depth=1, class_names=["S", "Ve", "Vi"])
    assert text.splitlines()[1] == \
        "if petal_length > 2.45 then class = Ve (n=100, 50/100 = 0.500) ..."
    # a cut rule selects the rows passing through its node
    assert rule_mask(frame["rule"][1], X).sum() == 100


def test_rules_note_missing_value_routing(holes):
    X, y, est = holes
    text = export_rules(est)
    assert text.splitlines()[-1].startswith("Note: the rules read complete cases.")
    complete = X.notna().all(axis=1).to_numpy()
    frame = export_rules(est, as_frame=True, decimals=6)
    leaves = est.apply(X)
    for row in frame.itertuples():  # complete rows still follow their rule exactly
        mask = rule_mask(row.rule, X)
        np.testing.assert_array_equal(mask[complete], (leaves == row.node)[complete])


# --------------------------------------------------------------------------- DOT

def unquote(label):
    """A DOT quoted string back to its text (our escapes: \\\\, \\", \\n)."""
    assert label[0] == label[-1] == '"'
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m[1], m[1]), label[1:-1])


def parse_dot(text):
    pydot = pytest.importorskip("pydot")
    graphs = pydot.graph_from_dot_data(text)
    assert graphs and len(graphs) == 1
    graph = graphs[0]
    nodes = {n.get_name(): n for n in graph.get_nodes() if n.get_name() not in ("node", "edge")}
    return graph, nodes, graph.get_edges()


def test_dot_parses_back(iris):
    X, y, est = iris
    graph, nodes, edges = parse_dot(export_graphviz(est))
    t = est.tree_
    assert len(nodes) == t.n_nodes and len(edges) == t.n_nodes - 1
    tree_text = export_text(est)
    numbers = node_numbers(est)  # DOT names nodes by the numbers export_text prints
    for node in range(t.n_nodes):
        label = unquote(nodes[str(numbers[node])].get_label())
        assert f"n = {t.n_node_samples[node]}" in label
        assert label.endswith(f"class = {est.classes_[t.label[node]]}")
        if t.left[node] != -1:
            split = label.splitlines()[0]
            # the left child's condition
            assert f"{numbers[t.left[node]]}) {split}:" in tree_text
            assert nodes[str(numbers[node])].get("peripheries") is None
        else:
            assert nodes[str(numbers[node])].get("peripheries") == "2"
    answers = {(e.get_source(), e.get_destination()): e.get_label() for e in edges}
    left, right = str(numbers[t.left[0]]), str(numbers[t.right[0]])
    assert {left, right} == {"2", "3"}
    assert answers[("1", left)].strip('"') == "yes" and answers[("1", right)].strip('"') == "no"


def test_dot_hostile_names_survive(iris):
    X, y, est = iris
    # the tree splits on features 0, 2 and 3
    names = ['say "hi"', "unused", "two\nlines", "back\\slash <b>&amp;</b>"]
    classes = ['"q"', "a\\b", "<i>"]
    _, nodes, _ = parse_dot(export_graphviz(est, feature_names=names, class_names=classes))
    labels = [unquote(n.get_label()) for n in nodes.values()]
    text = "\n".join(labels)
    for name in names[:1] + names[2:]:
        assert name in text
    for c in classes:
        assert f"class = {c}" in text


def test_dot_max_depth_colours_and_options(iris, teeth):
    est = iris[2]
    _, nodes, edges = parse_dot(export_graphviz(est, max_depth=1))
    # named by the printed numbers: the root 1, its children 2 (setosa, the smaller
    # class, which rpart lists first) and 3, whose subtree is cut
    assert set(nodes) == {"1", "2", "3", "cut3"} and len(edges) == 3
    assert unquote(nodes["cut3"].get_label()) == "(...)"
    text = export_graphviz(est, filled=False, rounded=False)
    assert "fillcolor" not in text and "style" not in text
    # a pure node takes its class colour, the root of three equal classes is white
    _, nodes, _ = parse_dot(export_graphviz(est))
    assert nodes["1"].get("fillcolor") == '"#ffffff"'
    assert nodes["2"].get("fillcolor") == '"#1f77b4"'
    # regression: the larger the mean, the darker (smaller green channel) the fill
    reg = teeth[2]
    _, nodes, _ = parse_dot(export_graphviz(reg))
    mean = reg.tree_.value[:, 0]
    numbers = node_numbers(reg)
    green = [int(nodes[str(numbers[i])].get("fillcolor").strip('"')[3:5], 16)
             for i in range(len(mean))]
    order = np.argsort(mean, kind="stable")
    assert np.all(np.diff(np.array(green)[order]) <= 0)


def test_dot_surrogate_lines(holes):
    X, y, est = holes
    t = est.tree_
    _, nodes, _ = parse_dot(export_graphviz(est, surrogates=True))
    numbers = node_numbers(est)
    for node in range(t.n_nodes):
        label = unquote(nodes[str(numbers[node])].get_label())
        assert label.count("surrogate: ") == t.n_surrogates[node]
        missing = t.n_node_samples[node] - t.n_primary[node]
        assert (f"missing = {missing}" in label) == (t.left[node] != -1 and missing > 0)
    plain = export_graphviz(est)
    assert "surrogate" not in plain


# --------------------------------------------------------------------------- printcp

def test_printcp_columns_from_cv_results(iris_cv):
    text = format_cp(iris_cv)
    res = iris_cv.cv_results_
    table = [line.split() for line in text.split("\n\n")[4].splitlines()]
    assert table[0] == ["CP", "nsplit", "rel", "error", "xerror", "xstd"]
    rows = table[1:]
    assert len(rows) == len(res)
    # root first: nsplit increases, values are the cv_results_ rows read backwards
    for row, (_, r) in zip(rows, res.iloc[::-1].iterrows()):
        assert int(row[2]) == r["n_leaves"] - 1
        assert float(row[1]) == pytest.approx(r["alpha"] / iris_cv.tree_max_.risk[0],
                                              abs=5e-6)
        assert float(row[3]) == pytest.approx(r["risk"] / (100 / 150), abs=5e-6)
        assert float(row[4]) == pytest.approx(r["cv_risk"] / (100 / 150), abs=5e-6)
        assert float(row[5]) == pytest.approx(r["cv_se"] / (100 / 150), rel=1e-4)
    assert "Root node error: 100/150 = 0.66667" in text
    chosen = int(res.loc[res["selected"], "k"].iloc[0])  # the book's k of the choice
    assert res.index[res["selected"]][0] == chosen  # cv_results_ is indexed by k
    # rows count from the root: row r is T_k with k = K + 1 - r (K = 6 here)
    assert text.endswith(f"T_{chosen}, row {len(res) + 1 - chosen} (nsplit "
                         f"{res['n_leaves'][chosen] - 1}, CP 0.010)\n"
                         f"Row r is T_k with k = {len(res) + 1} - r (cv_results_.loc[k] "
                         "and cptable_.loc[k] are its rows)\n")


def test_print_cp_prints_format_cp_and_plain_estimators(iris, iris_cv):
    out = io.StringIO()
    print_cp(iris_cv, file=out)
    assert out.getvalue() == format_cp(iris_cv)
    text = format_cp(iris[2], digits=3)
    header = [line for line in text.splitlines() if "nsplit" in line]
    assert header == ["     CP nsplit rel error"]
    assert "xerror" not in text and "Selected" not in text


def test_r_number_format():
    """R's format(x, digits=5) of these vectors, as R 4 prints them."""
    from cartjit.export import _r_format
    assert _r_format([0.643125, 0.097484, 0.01], 5) == ["0.643125", "0.097484", "0.010000"]
    assert _r_format([1, 0.35687, 0.25939], 5) == ["1.00000", "0.35687", "0.25939"]
    assert _r_format([0.5, 0.44, 0.01, 0.005, 0], 5) == ["0.500", "0.440", "0.010",
                                                         "0.005", "0.000"]
    assert _r_format([1126.047], 5) == ["1126"]
    assert _r_format([0.5, 1.234e-7], 5) == ["5.000e-01", "1.234e-07"]
    assert _r_format([2.5e-5, 1.5e-5], 5) == ["2.5e-05", "1.5e-05"]


# --------------------------------------------------------------------------- arguments

def test_bad_arguments(iris, teeth):
    est = iris[2]
    with pytest.raises(ValueError, match="layout must be 'tree' or 'rpart'"):
        export_text(est, layout="R")
    with pytest.raises(ValueError, match="details=True or layout='rpart'"):
        export_text(est, layout="rpart", details=True)
    with pytest.raises(ValueError, match="class_names has 2 entries but the estimator has 3"):
        export_rules(est, class_names=["a", "b"])
    with pytest.raises(TypeError, match="class_names must be a sequence"):
        export_graphviz(est, class_names="abc")
    with pytest.raises(ValueError, match="class_names is for classifiers"):
        export_graphviz(teeth[2], class_names=["a"])
    with pytest.raises(ValueError, match="feature_names has 1 entries"):
        export_graphviz(est, feature_names=["a"])
    with pytest.raises(ValueError, match="max_depth"):
        export_rules(est, max_depth=-1)
    with pytest.raises(TypeError, match="as_frame must be True or False"):
        export_rules(est, as_frame="yes")
    with pytest.raises(TypeError, match="surrogates must be True or False"):
        export_graphviz(est, surrogates=1)
    with pytest.raises(ValueError, match="digits must be an integer from 1 to 15"):
        format_cp(est, digits=0)
    with pytest.raises(TypeError, match="format_cp needs a cartjit estimator"):
        format_cp(object())
    for writer in (export_rules, export_graphviz, format_cp):
        with pytest.raises(NotFittedError):
            writer(CARTClassifierCV())


def test_public_names():
    for name in ("export_rules", "export_graphviz", "format_cp", "print_cp"):
        assert name in cartjit.__all__
        assert getattr(cartjit, name) is getattr(cartjit.export, name)
