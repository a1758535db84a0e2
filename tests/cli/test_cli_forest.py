"""The command line with forests: ``cartjit fit --forest/--bagging``, ``cartjit show`` of a
forest model file (its summary, ``--tree K``), ``cartjit predict`` with it; errors are
one line with status 2. End to end through ``python -m cartjit`` where the process
matters (the console, the files), in process otherwise."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit import (BaggedCARTRegressor, RandomForestClassifier, export_text, load)
from cartjit.__main__ import main

from references.modelfiles import mixed_frame

ROOT = Path(__file__).resolve().parents[2]


def cli(cwd, *argv):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "cartjit", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def own_lines(stderr):
    return [line for line in stderr.splitlines() if "compiling" not in line]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A CSV with categorical features and missing values, a class and a numeric target."""
    directory = tmp_path_factory.mktemp("forest-cli")
    frame, y_class, y_reg = mixed_frame(150, seed=4)
    frame["label"] = y_class
    frame["y"] = y_reg
    frame.to_csv(directory / "train.csv", index=False)
    frame.drop(columns=["label", "y"]).head(40).to_csv(directory / "new.csv", index=False)
    return directory


@pytest.fixture(scope="module")
def forest_model(data):
    proc = cli(data, "fit", "train.csv", "--target", "label", "--features", "colour",
               "size", "flag", "x", "z", "--forest", "--ntree", "7", "--mtry", "2",
               "--seed", "3", "--oob-score", "--oob-importance", "--max-depth", "6",
               "-o", "forest.cartjit")
    assert proc.returncode == 0, proc.stderr
    return data / "forest.cartjit", proc.stdout


def test_fit_forest_saves_the_forest_the_options_ask_for(forest_model):
    path, stdout = forest_model
    est = load(path)
    assert type(est) is RandomForestClassifier
    params = est.get_params()
    assert (params["n_estimators"], params["max_features"], params["random_state"],
            params["max_depth"], params["oob_score"], params["oob_importance"]) == \
        (7, 2, 3, 6, True, True)
    assert "RandomForestClassifier: 7 trees of" in stdout
    assert f"OOB error {est.oob_error_:.4g}" in stdout
    assert f"saved RandomForestClassifier (7 trees, {est.forest_.n_nodes} nodes)" in stdout
    for name in ("colour", "size", "flag", "x", "z"):
        assert f"\n{name} " in stdout  # a row of the importance table


def test_predict_with_a_forest_file_is_the_loaded_forests_prediction(data, forest_model):
    path, _ = forest_model
    proc = cli(data, "predict", str(path), "new.csv", "--proba")
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(io.StringIO(proc.stdout), keep_default_na=False)
    est = load(path)
    new = pd.read_csv(data / "new.csv")
    new["colour"] = new["colour"].astype(object)
    new["size"] = new["size"].astype(object)
    assert list(out.columns) == ["prediction"] + [f"proba_{c}" for c in est.classes_]
    assert out["prediction"].tolist() == est.predict(new).tolist()
    # the probabilities printed by pandas' CSV writer read back to the same floats
    np.testing.assert_array_equal(out.iloc[:, 1:].to_numpy(), est.predict_proba(new))


def test_show_tree_k_prints_tree_k_as_export_text_does(data, forest_model):
    path, _ = forest_model
    proc = cli(data, "show", str(path), "--tree", "4")
    assert proc.returncode == 0, proc.stderr
    est = load(path)
    assert "tree 4 of the 7 trees of the RandomForestClassifier" in proc.stdout
    assert export_text(est, tree=4) in proc.stdout
    assert export_text(est, tree=3) not in proc.stdout


def test_show_forest_file_prints_its_summary(capsys, forest_model):
    path, _ = forest_model
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    est = load(path)
    assert out.startswith(f"{path}: a RandomForestClassifier model file\n")
    assert "2 of the 5 features drawn at each node" in out
    assert "raw, se, scaled: OOB permutation importance" in out
    assert "'--tree K' prints tree K (0 to 6)." in out
    table = est.importance_table().sort_values("mdi", ascending=False)
    shown = [line.split()[0] for line in out.splitlines()
             if line.split() and line.split()[0] in table.index]
    assert shown == list(table.index)


@pytest.mark.parametrize("argv, message", [
    (["--tree", "7"], "cartjit show: error: --tree: the forest has 7 trees, numbered 0 to "
                      "6; got 7"),
    (["--rules"], "cartjit show: error: --rules prints one tree, and this is a forest of 7 "
                  "trees: give --tree K (0 to 6) too"),
    (["--forest"], "cartjit show: error: --forest is for fitting on data"),
])
def test_show_forest_file_errors_are_one_line(capsys, forest_model, argv, message):
    path, _ = forest_model
    assert main(["show", str(path), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(message)


def test_show_tree_k_with_rules_and_dot(capsys, forest_model):
    path, _ = forest_model
    est = load(path)
    assert main(["show", str(path), "--tree", "1", "--rules"]) == 0
    from cartjit import export_graphviz, export_rules
    assert capsys.readouterr().out == export_rules(est, tree=1)
    assert main(["show", str(path), "--tree", "0", "--dot"]) == 0
    assert capsys.readouterr().out == export_graphviz(est, tree=0)


def test_bagging_regression_end_to_end(data):
    proc = cli(data, "fit", "train.csv", "--target", "y", "--features", "colour", "size",
               "x", "z", "--bagging", "--n-estimators", "4", "--cp", "0.01",
               "--bootstrap", "true", "--replace", "false", "--sampsize", "0.8", "-q",
               "-o", "bagged.cartjit")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    est = load(data / "bagged.cartjit")
    assert type(est) is BaggedCARTRegressor
    assert est.max_features_ == 4 and est.max_samples_ == 120 and not est.replace
    assert np.all(est.tree_alphas_ > 0)  # each tree pruned at cp x its own R(root)
    pred = cli(data, "predict", "bagged.cartjit", "new.csv", "--proba")
    assert pred.returncode == 2
    assert own_lines(pred.stderr) == [
        "cartjit predict: error: --proba: 'bagged.cartjit' holds a regression forest, "
        "which has no class probabilities"]


def test_fit_refuses_to_overwrite_a_forest_file(data, forest_model):
    path, _ = forest_model
    before = path.read_bytes()
    proc = cli(data, "fit", "train.csv", "--target", "label", "--forest", "--ntree", "2",
               "-o", str(path))
    assert proc.returncode == 2
    assert own_lines(proc.stderr) == [f"cartjit fit: error: -o: {str(path)!r} already "
                                      "exists; give --overwrite to replace it"]
    assert path.read_bytes() == before


def test_a_damaged_forest_file_is_one_line_without_traceback(data, forest_model, tmp_path):
    path, _ = forest_model
    data_bytes = bytearray(path.read_bytes())
    at = data_bytes.find(b'"n_trees": 7')
    assert at > 0
    data_bytes[at:at + 12] = b'"n_trees": 8'
    bad = tmp_path / "bad.cartjit"
    bad.write_bytes(bytes(data_bytes))
    proc = cli(data, "predict", str(bad), "new.csv")
    assert proc.returncode == 2
    lines = own_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("cartjit predict: error: ")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_tree_of_a_single_tree_model_is_refused(capsys, tmp_path):
    model = tmp_path / "t.cartjit"
    assert main(["fit", "iris", "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    assert main(["show", str(model), "--tree", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "cartjit show: error: --tree 0 picks a tree of a forest, and this is a single "
        "CARTClassifier")


def test_fit_forest_refuses_the_rpart_layout(capsys, tmp_path):
    assert main(["fit", "iris", "--forest", "--layout", "rpart", "-o",
                 str(tmp_path / "f.cartjit")]) == 2
    assert "--layout rpart prints one tree" in capsys.readouterr().err
    assert not (tmp_path / "f.cartjit").exists()
