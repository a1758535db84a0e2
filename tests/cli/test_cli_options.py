"""The tree options of ``cartjit show`` / ``cartjit fit`` against the estimators'
parameters, through the one table of :mod:`cartjit._cli_options`; the command line's
warnings and notes (one line each, said once)."""
from __future__ import annotations

import inspect
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit import (BaggedCARTClassifier, BaggedCARTRegressor, CARTClassifier,
                     CARTClassifierCV, CARTRegressor, CARTRegressorCV, RandomForestClassifier,
                     RandomForestRegressor)
from cartjit import _cli_options as T
from cartjit.__main__ import _fit_from_args, build_parser, main
from cartjit._cli_errors import run_guarded
from cartjit.datasets import load_dataset
from cartjit.export import export_text

ROOT = Path(__file__).resolve().parents[2]
CLASSES = {("classification", T.TREE): CARTClassifier, ("classification", T.CV): CARTClassifierCV,
           ("regression", T.TREE): CARTRegressor, ("regression", T.CV): CARTRegressorCV,
           ("classification", T.FOREST): RandomForestClassifier,
           ("regression", T.FOREST): RandomForestRegressor}
#: --bagging's classes: the forests' parameters, every feature by default.
BAGGING = {"classification": BaggedCARTClassifier, "regression": BaggedCARTRegressor}


def signature(cls):
    return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self"}


def subparser(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command]


# ------------------------------------------------------------- table vs estimators
def test_every_estimator_parameter_is_an_option_or_says_why_not():
    params = set().union(*(signature(cls) for cls in (*CLASSES.values(), *BAGGING.values())))
    table = {o.param for o in T.OPTIONS}
    assert len(table) == len(T.OPTIONS), "a parameter listed twice"
    assert table | set(T.NOT_OPTIONS) == params
    assert not table & set(T.NOT_OPTIONS)
    assert all(T.NOT_OPTIONS.values())


@pytest.mark.parametrize("option", T.OPTIONS, ids=lambda o: o.param)
def test_option_applies_to_the_estimators_that_take_it(option):
    """``tasks`` and ``kinds`` of each row say exactly which estimator classes take the
    parameter, and ``default`` is their default."""
    takers = {key for key, cls in CLASSES.items() if option.param in signature(cls)}
    assert {task for task, _ in takers} == set(option.tasks)
    assert {kind for _, kind in takers} == set(option.kinds)
    for task in option.tasks:  # bagging takes exactly the random forests' parameters
        assert set(signature(BAGGING[task])) == set(signature(CLASSES[task, T.FOREST]))
    for task, kind in takers:
        default = signature(CLASSES[task, kind])[option.param]
        if option.param == "criterion":
            assert default == ("gini" if task == "classification" else "squared_error")
        elif option.param == "max_features":  # said in the help as text
            assert default == ("sqrt" if task == "classification" else 1 / 3)
            assert signature(BAGGING[task])["max_features"] is None
            assert T._default_text(option) == ("sqrt for classification, 1/3 for "
                                               "regression; all with --bagging")
        else:
            assert default == option.default_for(kind), (task, kind, default)
            if kind == T.FOREST:
                assert signature(BAGGING[task])[option.param] == default


def test_option_spellings_follow_the_parameter_and_rpart():
    """The first spelling is the parameter with dashes; the aliases include rpart's name
    of every parameter docs/rpart.md maps one to."""
    for o in T.OPTIONS:
        assert o.flags[0] == "--" + o.param.replace("_", "-")
    flags = [f for o in T.OPTIONS for f in o.flags]
    assert len(flags) == len(set(flags))
    rpart_doc = (ROOT / "docs" / "rpart.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)`[^|]* \| `(\w+)`", rpart_doc, re.M)
    by_param = {o.param: o for o in T.OPTIONS}
    mapped = {(r, p) for r, p in rows if p in by_param}
    assert {p for _, p in mapped} >= {"min_samples_split", "min_samples_leaf", "max_depth",
                                      "cp", "max_surrogate", "use_surrogate",
                                      "surrogate_style", "max_competitor"}
    for rname, param in mapped:
        assert f"--{rname}" in by_param[param].flags, (rname, param)
    assert "--xval" in by_param["cv"].flags  # rpart's xval is the CV estimators' cv


@pytest.mark.parametrize("command", ["show", "fit"])
def test_each_command_offers_the_table_and_nothing_else_for_a_parameter(command):
    parser = subparser(command)
    by_dest = {}
    for action in parser._actions:
        by_dest.setdefault(action.dest, set()).update(action.option_strings)
    for o in T.OPTIONS:
        assert by_dest.get(o.param) == set(o.flags), o.param
    params = set().union(*(signature(cls) for cls in (*CLASSES.values(), *BAGGING.values())))
    hand_made = {dest for dest in by_dest if dest in params} - {o.param for o in T.OPTIONS}
    assert not hand_made
    # no hand-made option spells a parameter under another dest either
    strings = {s for a in parser._actions for s in a.option_strings}
    for p in params - set(T.NOT_OPTIONS):
        assert "--" + p.replace("_", "-") in strings


# ------------------------------------------------------------- docs vs table
def test_docs_section_is_the_table():
    doc = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    start, end = doc.index(T.DOC_BEGIN) + len(T.DOC_BEGIN), doc.index(T.DOC_END)
    assert doc[start:end] == "\n" + T.markdown(), \
        "docs/experiments.md is stale: run python -m cartjit._cli_options"
    for o in T.OPTIONS:
        for flag in o.flags:
            assert f"`{flag}`" in doc[start:end]


@pytest.mark.parametrize("command", ["show", "fit", "predict"])
def test_docs_synopsis_names_every_option(command):
    doc = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    synopsis = doc[doc.index("## The command line"):doc.index(T.DOC_END)]
    table = {f for o in T.OPTIONS for f in o.flags}
    for action in subparser(command)._actions:
        for s in action.option_strings:
            if s in table or s in ("-h", "--help"):
                continue
            assert re.search(rf"{re.escape(s)}(?![\w-])", synopsis), s


# ------------------------------------------------------------- values reach the estimator
def fitted(*argv):
    args = build_parser().parse_args(list(argv))
    out = _fit_from_args(args, args.command)
    assert not isinstance(out, int), out
    return out[0]


@pytest.mark.parametrize("argv, cls, params", [
    (["--cp", "0.01", "--minsplit", "20"], CARTClassifier,
     dict(cp=0.01, min_samples_split=20)),
    (["--min-samples-split", "20", "--minbucket", "7", "--maxdepth", "3"], CARTClassifier,
     dict(min_samples_split=20, min_samples_leaf=7, max_depth=3)),
    (["--priors", "0.2,0.3,0.5", "--max-leaf-nodes", "3"], CARTClassifier,
     dict(priors=[0.2, 0.3, 0.5], max_leaf_nodes=3)),
    (["--priors", "equal", "--cost", "0,1,1;5,0,1;1,1,0"], CARTClassifier,
     dict(priors="equal", cost=[[0, 1, 1], [5, 0, 1], [1, 1, 0]])),
    (["--max-surrogate", "3", "--usesurrogate", "1", "--surrogatestyle", "1",
      "--maxcompete", "2", "--alpha", "0.02"], CARTClassifier,
     dict(max_surrogate=3, use_surrogate=1, surrogate_style=1, max_competitor=2,
          ccp_alpha=0.02)),
    (["--class-weight", "setosa:2,virginica:0.5", "--criterion", "entropy"],
     CARTClassifier, dict(class_weight={"setosa": 2.0, "virginica": 0.5},
                          criterion="entropy")),
    (["--xval", "5", "--seed", "3", "--selection", "min", "--stratify", "--n-repeats",
      "2", "--compat", "rpart"], CARTClassifierCV,
     dict(cv=5, random_state=3, selection="min", stratify=True, n_repeats=2,
          compat="rpart")),
])
def test_options_fit_the_tree_the_estimator_fits(argv, cls, params):
    est = fitted("show", "iris", *argv)
    assert type(est) is cls
    got = est.get_params()
    for name, value in params.items():
        assert np.array_equal(np.asarray(got[name], dtype=object),
                              np.asarray(value, dtype=object)) \
            if not isinstance(value, dict) else got[name] == value, name
    ds = load_dataset("iris")
    ref = cls(**params).fit(ds.frame[list(ds.features)], ds.frame[ds.target])
    assert export_text(est) == export_text(ref)


@pytest.mark.parametrize("argv, cls, params", [
    (["--forest", "--ntree", "7", "--mtry", "2", "--seed", "4", "--oob-score", "--voting",
      "vote", "--minbucket", "3", "--maxcompete", "1"], RandomForestClassifier,
     dict(n_estimators=7, max_features=2, random_state=4, oob_score=True, voting="vote",
          min_samples_leaf=3, max_competitor=1)),
    (["--bagging", "--n-estimators", "5", "--bootstrap", "true", "--replace", "false",
      "--sampsize", "0.5", "--cp", "0.01", "--n-jobs", "2", "--priors", "equal"],
     BaggedCARTClassifier, dict(n_estimators=5, replace=False, max_samples=0.5, cp=0.01,
                                n_jobs=2, bootstrap=True, priors="equal")),
    (["--forest", "--ntree", "3", "--prune", "cv", "--prune-folds", "3",
      "--prune-selection", "min", "--max-features", "all", "--oob-importance"],
     RandomForestClassifier, dict(n_estimators=3, prune="cv", prune_folds=3,
                                  prune_selection="min", max_features=None,
                                  oob_importance=True)),
    (["--forest", "--ntree", "4", "--max-features", "0.5", "--bootstrap", "false",
      "--alpha", "0.01"], RandomForestClassifier,
     dict(n_estimators=4, max_features=0.5, bootstrap=False, ccp_alpha=0.01)),
])
@pytest.mark.filterwarnings("ignore:.* in the bag of every tree")
def test_forest_options_fit_the_forest_the_estimator_fits(argv, cls, params):
    est = fitted("show", "iris", *argv)
    assert type(est) is cls
    got = est.get_params()
    for name, value in params.items():
        assert got[name] == value, name
    ds = load_dataset("iris")
    X, y = ds.frame[list(ds.features)], ds.frame[ds.target]
    ref = cls(**params).fit(X, y)
    np.testing.assert_array_equal(est.predict_proba(X), ref.predict_proba(X))
    assert export_text(est, tree=1) == export_text(ref, tree=1)


def test_regression_options_and_categorical_features(tmp_path):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"g": rng.integers(0, 5, 80), "x": rng.normal(size=80)})
    frame["y"] = np.where(frame.g % 2 == 0, 1.5, -1.0) + 0.1 * frame.x
    path = tmp_path / "reg.csv"
    frame.to_csv(path, index=False)
    est = fitted("show", str(path), "--target", "y", "--categorical-features", "g",
                 "--min-impurity-decrease", "0.01", "--max-surrogate", "2")
    assert type(est) is CARTRegressor
    assert list(est.is_categorical_) == [True, False]
    ref = CARTRegressor(categorical_features=["g"], min_impurity_decrease=0.01,
                        max_surrogate=2).fit(frame[["g", "x"]], frame["y"])
    assert export_text(est) == export_text(ref)
    assert "{0, 2, 4}" in export_text(est) or "{1, 3}" in export_text(est)


# ------------------------------------------------------------- errors name the option
def error_line(capsys, *argv):
    status = main(list(argv))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert status == 2 and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv, expected", [
    (["--alpha", "-1"], "cartjit show: error: --alpha: must be a number >= 0, got '-1'"),
    (["--ccp-alpha", "x"], "cartjit show: error: --ccp-alpha: must be a number >= 0, "
                           "got 'x'"),
    (["--minsplit", "1"], "cartjit show: error: --minsplit: must be an integer >= 2, "
                          "got '1'"),
    (["--cp", "inf"], "cartjit show: error: --cp: must be a number >= 0, got 'inf'"),
    (["--usesurrogate", "3"], "cartjit show: error: --usesurrogate: must be one of 0, 1, "
                              "2, got '3'"),
    (["--seed", "3"], "cartjit show: error: --seed is for cross-validation or forests: "
                      "give --cv V, --forest or --bagging too"),
    (["--stratify"], "cartjit show: error: --stratify is for cross-validation: give --cv V "
                     "too"),
    (["--ntree", "3"], "cartjit show: error: --ntree is for forests: give --forest or "
                       "--bagging too"),
    (["--forest", "--cv", "3"], "cartjit show: error: --cv is not an option of forests "
                                "(--forest, --bagging) (a forest prunes its trees by --prune "
                                "cv)"),
    (["--bagging", "--compat", "rpart"], "cartjit show: error: --compat is not an option of "
                                         "forests (--forest, --bagging)"),
    (["--bagging", "--mtry", "2"], "cartjit show: error: --mtry: --bagging searches every "
                                   "feature at every node; drawing some of them is a random "
                                   "forest: give --forest instead"),
    (["--forest", "--max-features", "0"], "cartjit show: error: --max-features: must be "
                                          "'sqrt', 'log2', 'all' or a number of features: an "
                                          "integer >= 1 or a fraction in (0, 1] written with "
                                          "a decimal point, got '0'"),
    (["--forest", "--bootstrap", "no"], "cartjit show: error: --bootstrap: must be true or "
                                        "false, got 'no'"),
    (["--forest", "--n-jobs", "0"], "cartjit show: error: --n-jobs: must be -1 (every CPU) "
                                    "or an integer >= 1, got '0'"),
    (["--forest", "--max-features", "9"], "cartjit show: error: --max-features: "
                                          "max_features must be in [1, n_features] = [1, 4] "
                                          "as an int (features drawn at each node), got 9"),
    (["--alpha", "0.1", "--cv", "5"], "cartjit show: error: --alpha and --cv both choose "
                                      "the subtree: give one of them"),
    (["--alpha", "0.1", "--cp", "0.1"], "cartjit show: error: --alpha and --cp both "
                                        "choose the pruned subtree: give one of them"),
])
def test_option_errors_name_the_option_given(capsys, argv, expected):
    line = error_line(capsys, "show", "iris", *argv)
    assert line == expected
    assert "ccp_alpha" not in line and "min_samples_split" not in line


@pytest.mark.parametrize("argv, start", [
    (["--priors", "0.5,0.5"], "cartjit show: error: --priors: priors must have one entry "
                              "per class (3)"),
    (["--priors", "a,b"], "cartjit show: error: --priors: must be 'empirical', 'equal' or "
                          "one number per class"),
    (["--cost", "0,1;1"], "cartjit show: error: --cost: must be a square matrix"),
    (["--cost", "0,1;1,0"], "cartjit show: error: --cost: cost must have shape (3, 3)"),
    (["--class-weight", "tulip:2"], "cartjit show: error: --class-weight: 'tulip' is not "
                                    "a class of the target"),
    (["--categorical-features", "nope"], "cartjit show: error: --categorical-features: "),
])
def test_refused_values_name_the_option(capsys, argv, start):
    assert error_line(capsys, "show", "iris", *argv).startswith(start)


def test_classification_options_are_refused_for_a_regression_tree(capsys):
    line = error_line(capsys, "show", "potato_yield", "--priors", "equal")
    assert line == ("cartjit show: error: --priors is for classification trees, and this "
                    "is a regression tree (see --task)")


def test_tree_options_are_refused_with_a_model_file(capsys, tmp_path):
    model = tmp_path / "m.cartjit"
    assert main(["fit", "iris", "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    line = error_line(capsys, "show", str(model), "--minsplit", "20")
    assert line.startswith("cartjit show: error: --minsplit is for fitting on data")


# ------------------------------------------------------------- the inferred task
def test_inferred_task_is_said_with_why_and_how_to_change_it(capsys, tmp_path):
    y = [0.0, 1.0] * 15 + [np.nan]
    frame = pd.DataFrame({"x": np.arange(31.0), "y": y})
    path = tmp_path / "holes.csv"
    frame.to_csv(path, index=False)
    assert main(["show", str(path), "--target", "y"]) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if line.startswith("cartjit show: note: ")]
    assert notes == ["cartjit show: note: a regression tree, because the target 'y' is "
                     "read as decimal numbers: its 2 distinct values are whole numbers, but "
                     "1 empty cell makes the column decimal; give --task classification to "
                     "classify its values instead"]
    assert main(["show", str(path), "--target", "y", "--task", "classification"]) == 0
    assert "note:" not in capsys.readouterr().err
    frame.dropna().astype({"y": int}).to_csv(path, index=False)
    assert main(["show", str(path), "--target", "y"]) == 0
    err = capsys.readouterr().err
    assert ("cartjit show: note: a classification tree, because the target 'y' holds "
            "integers (2 classes); give --task regression to predict it as a number") in err
    assert main(["fit", str(path), "--target", "y", "-q", "-o",
                 str(tmp_path / "m.cartjit")]) == 0
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------- warnings
def test_warnings_are_one_line_each_said_once(capsys):
    def body():
        for _ in range(3):
            warnings.warn("the same thing\n  on two lines", UserWarning)
        warnings.warn("another thing", RuntimeWarning)
        return 0

    assert run_guarded("show", body) == 0
    assert capsys.readouterr().err.splitlines() == [
        "cartjit show: warning: the same thing on two lines",
        "cartjit show: warning: another thing"]
    # the display is restored afterwards, and a second command says its warnings again
    assert run_guarded("show", body) == 0
    assert len(capsys.readouterr().err.splitlines()) == 2


def test_warnings_turned_into_errors_still_raise(capsys):
    def body():
        warnings.warn("boom", UserWarning)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            run_guarded("show", body)


def test_predict_proba_says_the_unseen_level_warning_once(tmp_path):
    """In a real process (the console's own warning display): one line, counts right."""
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"c": rng.choice(list("abc"), 60), "x": rng.normal(size=60)})
    train["y"] = np.where(train.c == "a", "yes", "no")
    train.to_csv(tmp_path / "train.csv", index=False)
    new = train.head(8).copy()
    new.loc[3, "c"] = "z"
    new.to_csv(tmp_path / "new.csv", index=False)
    run = dict(cwd=tmp_path, capture_output=True, text=True, timeout=600,
               env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    fit = subprocess.run([sys.executable, "-m", "cartjit", "fit", "train.csv", "--target",
                          "y", "-o", "m.cartjit", "-q"], **run)
    assert fit.returncode == 0, fit.stderr
    proc = subprocess.run([sys.executable, "-m", "cartjit", "predict", "m.cartjit",
                           "new.csv", "--proba"], **run)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "compiling" not in line]
    assert lines == [
        "cartjit predict: warning: X holds levels not seen in fit in column 'c': 1 row "
        "('z') (of its 8 rows); such a level is treated as a missing value of its column "
        "(at a split on it, the row follows the surrogate splits, then the majority)"]
    assert len(pd.read_csv(__import__("io").StringIO(proc.stdout))) == 8
