"""Experiment config files: schema, defaults, and errors that name the file and the field."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

from cartjit.experiments.cells import plan_cells
from cartjit.experiments.config import ConfigError, read_config
from cartjit.experiments.data import resolve
from cartjit.experiments.run import config_fingerprint


def write(tmp_path, text, name="exp.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path, text):
    cfg = read_config(write(tmp_path, text))
    return cfg, resolve(cfg)


def error(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        resolve(read_config(path))
    assert str(path) in str(info.value)
    return info.value


# --------------------------------------------------------------------------- valid files

def test_minimal_config_gets_the_documented_defaults(tmp_path):
    cfg, data = load(tmp_path, """
        [[datasets]]
        name = "iris"
    """)
    assert cfg.name == "exp" and cfg.selection == ("min", "1se")
    (d,) = data
    assert d.name == "iris" and d.task == "classification" and d.n_samples == 150
    assert d.V == (10,) and d.n_repeats == 1 and d.seed == 0 and not d.stratify
    assert d.settings == ({"criterion": "gini", "priors": "empirical", "cost": "0-1",
                           "max_depth": "none", "min_samples_split": 2,
                           "min_samples_leaf": 1, "min_impurity_decrease": 0.0,
                           "max_leaf_nodes": "none"},)
    assert d.X.flags.c_contiguous and d.X.dtype == np.float64


def test_sweep_axes_overrides_and_loo(tmp_path):
    cfg, data = load(tmp_path, """
        [experiment]
        name = "sweep"
        [cv]
        V = [5, "loo"]
        n_repeats = 3
        selection = ["min", "1se", 0.5]
        [tree]
        criterion = ["gini", "entropy", "squared_error"]
        priors = ["empirical", [0.2, 0.3, 0.5]]
        max_depth = ["none", 3]
        [[datasets]]
        bundled = "iris_petal"
        [[datasets]]
        bundled = "potato_yield"
        cv = { V = [3, 15], n_repeats = 2 }
    """)
    iris, potato = data
    assert iris.V == (5, 150) and iris.n_repeats == 3
    # classification: 2 criteria x 2 priors x 2 depths; regression: squared_error x 2 depths
    assert len(iris.settings) == 8 and len(potato.settings) == 2
    assert {s["criterion"] for s in potato.settings} == {"squared_error"}
    assert "priors" not in potato.settings[0]
    assert potato.V == (3, 15) and potato.n_repeats == 2
    cells = plan_cells(data)
    # LOO is one cell whatever n_repeats says (one partition)
    assert len(cells) == 8 * (3 + 1) + 2 * (2 + 1)
    assert len({c.cell_id for c in cells}) == len(cells)
    assert cfg.selection == ("min", "1se", 0.5)


def test_features_subset_and_synthetic_expansion(tmp_path):
    _, data = load(tmp_path, """
        [[datasets]]
        name = "iris2"
        bundled = "iris"
        features = ["petal_width", "sepal_length"]
        [[datasets]]
        name = "syn"
        synthetic = "classification"
        n_samples = [50, 80]
        n_features = 4
        n_informative = 2
        [[datasets]]
        name = "synr"
        synthetic = "regression"
        n_samples = 40
        noise = 0.5
    """)
    assert data[0].feature_names == ("petal_width", "sepal_length")
    assert [d.name for d in data[1:]] == ["syn_n50", "syn_n80", "synr"]
    assert data[1].X.shape == (50, 4) and data[3].task == "regression"


def _frame():
    return pd.DataFrame({"a": np.arange(30.0), "b": np.arange(30) % 7,
                         "label": ["x", "y", "z"] * 10, "resp": np.linspace(0, 1, 30)})


def test_csv_file(tmp_path):
    _frame().to_csv(tmp_path / "d.csv", index=False)
    _, data = load(tmp_path, """
        [cv]
        V = 3
        [[datasets]]
        name = "c"
        path = "d.csv"
        target = "label"
        features = ["a", "b"]
        [[datasets]]
        name = "r"
        path = "d.csv"
        target = "resp"
        features = ["a"]
    """)
    assert data[0].task == "classification" and data[0].classes == ("x", "y", "z")
    assert data[0].feature_names == ("a", "b")
    assert data[1].task == "regression" and data[1].X.shape == (30, 1)


def test_parquet_file(tmp_path):
    pytest.importorskip("pyarrow", reason="reading Parquet needs pyarrow")
    _frame().to_parquet(tmp_path / "d.parquet")
    _, data = load(tmp_path, """
        [cv]
        V = 3
        [[datasets]]
        name = "p"
        path = "d.parquet"
        target = "label"
        task = "classification"
    """)
    assert data[0].feature_names == ("a", "b", "resp") and data[0].n_samples == 30


def test_hash_ignores_formatting_but_not_values_or_data(tmp_path):
    base = """
        [cv]
        V = [2, 5]
        n_repeats = 2
        [[datasets]]
        bundled = "iris_petal"
    """
    h1 = config_fingerprint(*load(tmp_path, base))[1]
    reordered = """
        # a comment
        [[datasets]]
        bundled = "iris_petal"

        [cv]
        n_repeats = 2
        V = [2, 5]
        [experiment]
        description = "does not change the results"
    """
    assert config_fingerprint(*load(tmp_path, reordered))[1] == h1
    changed = base.replace("n_repeats = 2", "n_repeats = 3")
    assert config_fingerprint(*load(tmp_path, changed))[1] != h1

    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}).to_csv(tmp_path / "f.csv", index=False)
    text = """
        [cv]
        V = 2
        [[datasets]]
        name = "f"
        path = "f.csv"
        target = "y"
    """
    h2 = config_fingerprint(*load(tmp_path, text))[1]
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 5.0], "y": [0, 1, 0, 1]}).to_csv(tmp_path / "f.csv", index=False)
    assert config_fingerprint(*load(tmp_path, text))[1] != h2


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text, field, words", [
    ("[[datasets]]\nname = 'iris'\n[run]\nx = 1\n", "run", "unknown key"),
    ("[[datasets]]\nname = 'iris'\ncolour = 'red'\n", "datasets[1].colour", "unknown key"),
    ("[cv]\nfolds = 5\n[[datasets]]\nname = 'iris'\n", "cv.folds", "unknown key"),
    ("[tree]\nmaxdepth = 5\n[[datasets]]\nname = 'iris'\n", "tree.maxdepth", "unknown key"),
    ("[[datasets]]\nname = 'iris'\ncv = { selection = 'min' }\n", "datasets[1].cv.selection",
     "whole run"),
    ("[[datasets]]\nname = 'nope'\n", "datasets[1].name", "not a bundled dataset"),
    ("[[datasets]]\nbundled = 'nope'\n", "datasets[1].bundled", "not a bundled dataset"),
    ("[cv]\nV = 5\n", "datasets", "required"),
    ("[cv]\nn_repeats = '3'\n[[datasets]]\nname = 'iris'\n", "cv.n_repeats", "integer"),
    ("[cv]\nn_repeats = 0\n[[datasets]]\nname = 'iris'\n", "cv.n_repeats", ">= 1"),
    ("[cv]\nV = [2.5]\n[[datasets]]\nname = 'iris'\n", "cv.V[0]", "integer >= 2"),
    ("[cv]\nV = [1]\n[[datasets]]\nname = 'iris'\n", "cv.V[0]", ">= 2"),
    ("[cv]\nV = ['all']\n[[datasets]]\nname = 'iris'\n", "cv.V[0]", "loo"),
    ("[cv]\nV = [5, 5]\n[[datasets]]\nname = 'iris'\n", "cv.V", "more than once"),
    ("[cv]\nstratify = 1\n[[datasets]]\nname = 'iris'\n", "cv.stratify", "true or false"),
    ("[cv]\nselection = 'max'\n[[datasets]]\nname = 'iris'\n", "cv.selection", "'min', '1se'"),
    ("[cv]\nseeds = [1, 2]\nn_repeats = 3\n[[datasets]]\nname = 'iris'\n", "cv.seeds",
     "one seed per repeat"),
    ("[tree]\ncriterion = 'gain'\n[[datasets]]\nname = 'iris'\n", "tree.criterion", "one of"),
    ("[tree]\nmax_depth = 1.5\n[[datasets]]\nname = 'iris'\n", "tree.max_depth", "none"),
    ("[tree]\nmin_samples_leaf = 0\n[[datasets]]\nname = 'iris'\n", "tree.min_samples_leaf",
     ">= 1"),
    ("[tree]\npriors = [0.5, 0.6]\n[[datasets]]\nname = 'iris'\n", "tree.priors", "sum to 1"),
    ("[tree]\ncost = [[0, 1], [1]]\n[[datasets]]\nname = 'iris'\n", "tree.cost", "square"),
    ("[tree]\ncost = [[1, 1], [1, 0]]\n[[datasets]]\nname = 'iris'\n", "tree.cost",
     "zero diagonal"),
    ("[[datasets]]\nsynthetic = 'classification'\nname = 's'\nn_samples = 1e6\n",
     "datasets[1].n_samples", "1_000_000"),
    ("[[datasets]]\nsynthetic = 'regression'\nname = 's'\nn_samples = 10\nn_classes = 3\n",
     "datasets[1].n_classes", "unknown key"),
    ("[[datasets]]\nname = 'f'\npath = 'x.csv'\n", "datasets[1].target", "required"),
    ("[[datasets]]\nname = 'iris'\n[[datasets]]\nbundled = 'iris'\n", "datasets[2].name",
     "already used"),
    ("[[datasets]]\nbundled = 'iris'\nsynthetic = 'regression'\n", "datasets[1]",
     "exactly one data source"),
    ("this is = not toml = at all", "", "not valid TOML"),
])
def test_schema_errors_name_the_field(tmp_path, text, field, words):
    err = error(tmp_path, text)
    assert err.field == field, str(err)
    assert words in str(err)


@pytest.mark.parametrize("text, field, words", [
    ("[cv]\nV = [200]\n[[datasets]]\nname = 'iris'\n", "cv.V", "more than the N = 150"),
    ("[[datasets]]\nname = 'iris'\ncv = { V = [2, 151] }\n", "datasets[1].cv.V", "N = 150"),
    ("[cv]\nV = [150, 'loo']\n[[datasets]]\nname = 'iris'\n", "cv.V", "same number of folds"),
    ("[[datasets]]\nname = 'iris'\nfeatures = ['petal_size']\n", "datasets[1].features",
     "not a feature column"),
    ("[cv]\nV = 2\n[[datasets]]\nname = 'play_golf'\nfeatures = ['play']\n",
     "datasets[1].features", "target column 'play'"),
    ("[tree]\npriors = [0.5, 0.5]\n[[datasets]]\nname = 'iris'\n", "tree.priors",
     "one entry per class"),
    ("[tree]\ncost = [[0, 1], [1, 0]]\n[[datasets]]\nname = 'iris'\n", "tree.cost",
     "shape (3, 3)"),
    ("[tree]\ncriterion = 'squared_error'\n[[datasets]]\nname = 'iris'\n", "tree.criterion",
     "no classification criterion"),
    ("[[datasets]]\nname = 'potato_yield'\ntree = { priors = 'equal' }\n",
     "datasets[1].tree.priors", "regression"),
    ("[[datasets]]\nname = 'potato_yield'\ncv = { stratify = true, V = 3 }\n",
     "datasets[1].cv.stratify", "regression"),
    ("[[datasets]]\nname = 'f'\npath = 'missing.csv'\ntarget = 'y'\n", "datasets[1].path",
     "does not exist"),
])
def test_data_dependent_errors_name_the_field(tmp_path, text, field, words):
    err = error(tmp_path, text)
    assert err.field == field, str(err)
    assert words in str(err)


def test_file_column_errors(tmp_path):
    pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "s": list("abab"), "y": [0, 1, 0, 1]}).to_csv(
        tmp_path / "f.csv", index=False)
    err = error(tmp_path, "[cv]\nV = 2\n[[datasets]]\nname = 'f'\npath = 'f.csv'\ntarget = 'z'\n")
    assert err.field == "datasets[1].target" and "'z' is not in" in str(err)
    # (a missing value in a feature column is accepted: tests/estimators/test_missing_input.py)
    # (a string column such as 's' is a categorical feature: tests/runner/test_runner.py)
    err = error(tmp_path, "[cv]\nV = 2\n[[datasets]]\nname = 'f'\npath = 'f.txt'\ntarget = 'y'\n")
    assert err.field == "datasets[1].path" and "format" in str(err)


@pytest.mark.parametrize("content, words", [
    (b"a,b,y\n1,2,x\n3,4,5,6\n", ["Expected 3 fields in line 3, saw 4"]),
    (b"a,b,y\n1,2,x\n1,2,caf\xe9\n3,4,x\n",
     ["0xe9) on line 3 that is not UTF-8", "save the file as UTF-8"]),
])
def test_unreadable_csv_names_the_file(tmp_path, content, words):
    """Ragged rows and bytes that are not UTF-8: the error names the CSV file, not only
    the config field."""
    (tmp_path / "bad.csv").write_bytes(content)
    err = error(tmp_path, "[cv]\nV = 2\n[[datasets]]\nname = 'f'\npath = 'bad.csv'\n"
                          "target = 'y'\n")
    assert err.field == "datasets[1].path"
    assert str(tmp_path / "bad.csv") in str(err)
    for word in words:
        assert word in str(err)
    assert not str(err).endswith("\n")


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        read_config(tmp_path / "absent.toml")
