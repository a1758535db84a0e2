"""``cartjit fit``, ``cartjit predict`` and ``cartjit show MODEL``, end to end in
temporary directories."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifierCV, CARTRegressor, load
from cartjit.__main__ import main
from cartjit.datasets import load_dataset

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def golf_csv(tmp_path):
    ds = load_dataset("play_golf")
    path = tmp_path / "golf.csv"
    ds.frame.to_csv(path, index=False)
    return path


def potato_frame():
    ds = load_dataset("potato_yield")
    return ds.frame, ds.target


def one_line_error(capsys, command):
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith(f"cartjit {command}: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def test_fit_with_the_rpart_layout(tmp_path, golf_csv, capsys):
    export = pytest.importorskip("cartjit.export")
    if not hasattr(export, "format_cp"):
        pytest.skip("format_cp is not in this cartjit.export")
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "--cv", "3", "--layout", "rpart",
                 "-o", str(model)]) == 0
    out = capsys.readouterr().out
    est = load(model)
    assert export.export_text(est, layout="rpart") in out
    assert export.format_cp(est) in out and "xerror" in out


def test_fit_csv_prints_the_cv_table_and_saves_the_model(tmp_path, capsys):
    ds = load_dataset("iris")
    ds.frame.to_csv(tmp_path / "iris.csv", index=False)
    model = tmp_path / "iris.cartjit"
    assert main(["fit", str(tmp_path / "iris.csv"), "--target", "species", "--cv", "10",
                 "--selection", "1se", "-o", str(model)]) == 0
    out = capsys.readouterr().out
    # the same estimator fitted here, independently of the command line
    X = ds.frame[list(ds.features)]
    est = CARTClassifierCV(cv=10, selection="1se", random_state=0).fit(X, ds.frame["species"])
    loaded = load(model)
    assert type(loaded) is CARTClassifierCV
    pd.testing.assert_frame_equal(loaded.cv_results_, est.cv_results_)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert "Pruning sequence with 10-fold cross-validation (selection '1se'" in out
    assert f"saved CARTClassifierCV ({est.tree_.n_leaves} leaves) to {model}" in out
    assert "petal_length <= 2.45" in out
    assert sorted(os.listdir(tmp_path)) == ["iris.cartjit", "iris.csv"]


def test_fit_parquet_then_predict_to_a_file(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    frame, target = potato_frame()
    frame.to_parquet(tmp_path / "potato.parquet")
    model = tmp_path / "potato.cartjit"
    assert main(["fit", str(tmp_path / "potato.parquet"), "--target", target,
                 "--max-depth", "2", "-o", str(model), "-q"]) == 0
    assert capsys.readouterr().out == ""
    features = [c for c in frame.columns if c != target]
    est = CARTRegressor(max_depth=2).fit(frame[features], frame[target])
    out = tmp_path / "pred.parquet"
    assert main(["predict", str(model), str(tmp_path / "potato.parquet"), "-o",
                 str(out)]) == 0
    got = pd.read_parquet(out)
    assert list(got.columns) == ["prediction"]
    np.testing.assert_array_equal(got["prediction"].to_numpy(), est.predict(frame[features]))
    assert f"{len(frame)} predictions written to {out}" in capsys.readouterr().err


def test_predict_proba_to_stdout_and_csv(tmp_path, golf_csv, capsys):
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    assert main(["predict", str(model), str(golf_csv), "--proba"]) == 0
    printed = capsys.readouterr().out
    frame = pd.read_csv(golf_csv)
    est = load(model)
    proba = est.predict_proba(frame[["temperature", "humidity"]])
    lines = printed.splitlines()
    assert lines[0] == "prediction,proba_no,proba_yes"
    assert len(lines) == len(frame) + 1
    # the first day: humidity high, temperature high (the tree of docs/maths.md §6)
    first = lines[1].split(",")
    assert first[0] == est.predict(frame.iloc[:1][["temperature", "humidity"]])[0]
    assert [float(v) for v in first[1:]] == pytest.approx(proba[0].tolist())
    # probabilities sum to one on every row
    table = pd.read_csv(pd.io.common.StringIO(printed))
    np.testing.assert_allclose(table[["proba_no", "proba_yes"]].sum(axis=1), 1.0)
    out = tmp_path / "p.csv"
    assert main(["predict", str(model), str(golf_csv), "-o", str(out)]) == 0
    assert pd.read_csv(out)["prediction"].tolist() == table["prediction"].tolist()


def test_show_a_model_file(tmp_path, golf_csv, capsys):
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model)]) == 0
    fitted_out = capsys.readouterr().out
    assert main(["show", str(model)]) == 0
    shown = capsys.readouterr().out
    assert shown.splitlines()[0] == f"{model}: a CARTClassifier model file"
    assert "temperature (categorical, 2 levels)" in shown
    # the same tree as fit printed, and as 'show' on the data file
    tree_lines = [line for line in shown.splitlines() if ") " in line and ": n=" in line]
    assert tree_lines and all(line in fitted_out for line in tree_lines)
    assert main(["show", str(golf_csv), "--target", "play"]) == 0
    shown_data = capsys.readouterr().out
    assert all(line in shown_data for line in tree_lines)
    assert "Variable importance" in shown and "Pruning sequence" in shown


def test_refusing_to_overwrite(tmp_path, golf_csv, capsys):
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model), "-q"]) == 0
    before = model.read_bytes()
    assert main(["fit", str(golf_csv), "--target", "play", "--criterion", "entropy",
                 "-o", str(model), "-q"]) == 2
    assert "already exists; give --overwrite" in one_line_error(capsys, "fit")
    assert model.read_bytes() == before
    assert main(["fit", str(golf_csv), "--target", "play", "--criterion", "entropy",
                 "-o", str(model), "-q", "--overwrite"]) == 0
    assert load(model).criterion == "entropy"
    out = tmp_path / "p.csv"
    out.write_text("keep me\n")
    assert main(["predict", str(model), str(golf_csv), "-o", str(out)]) == 2
    assert "already exists; give --overwrite" in one_line_error(capsys, "predict")
    assert out.read_text() == "keep me\n"
    assert main(["predict", str(model), str(golf_csv), "-o", str(out), "--overwrite"]) == 0
    assert out.read_text().startswith("prediction\n")


def test_errors_exit_2_with_one_line(tmp_path, golf_csv, capsys):
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    damaged = tmp_path / "damaged.cartjit"
    damaged.write_bytes(model.read_bytes()[:-100])
    other = tmp_path / "other.csv"
    pd.DataFrame({"a": [1, 2]}).to_csv(other, index=False)
    cases = [
        (["fit", str(tmp_path / "missing.csv"), "--target", "play", "-o",
          str(tmp_path / "m.cartjit")], "fit", "no such file"),
        (["fit", str(golf_csv), "--target", "nope", "-o", str(tmp_path / "m.cartjit")],
         "fit", "column 'nope' is not in"),
        (["fit", str(golf_csv), "--target", "play", "-o",
          str(tmp_path / "no" / "m.cartjit")], "fit", "does not exist"),
        (["fit", str(golf_csv), "--target", "play", "-o", str(tmp_path / "m.csv")],
         "fit", "would be a model file"),
        (["predict", str(tmp_path / "absent.cartjit"), str(golf_csv)], "predict",
         "no such model file"),
        (["predict", str(damaged), str(golf_csv)], "predict",
         "not a readable cartjit model file"),
        (["predict", str(model), str(tmp_path / "absent.csv")], "predict", "no such file"),
        (["predict", str(model), str(other)], "predict", "lacks the feature column(s)"),
        (["predict", str(model), str(golf_csv), "-o", str(tmp_path / "p.txt")], "predict",
         "must end with .csv or .parquet"),
        (["show", str(damaged)], "show", "not a readable cartjit model file"),
        (["show", str(model), "--cv", "5"], "show", "--cv is for fitting on data"),
        (["show", str(model), "--plot", str(tmp_path / "no" / "t.png")], "show",
         "does not exist"),
    ]
    for argv, command, expected in cases:
        assert main(argv) == 2, argv
        assert expected in one_line_error(capsys, command), argv
    assert sorted(os.listdir(tmp_path)) == ["damaged.cartjit", "golf.cartjit", "golf.csv",
                                            "other.csv"]


def test_predict_with_a_model_fitted_on_a_numpy_array(tmp_path, capsys):
    from cartjit import CARTClassifier, save

    ds = load_dataset("iris")
    X = ds.frame[list(ds.features)].to_numpy(dtype=np.float64)
    est = CARTClassifier(max_depth=2).fit(X, ds.frame["species"])
    model = save(est, tmp_path / "np.cartjit")
    data = tmp_path / "x.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(data, index=False)
    assert main(["predict", str(model), str(data)]) == 0
    got = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))["prediction"]
    assert got.tolist() == est.predict(X).tolist()
    pd.DataFrame(X[:, :3]).to_csv(data, index=False)
    assert main(["predict", str(model), str(data)]) == 2
    assert "fitted on 4 unnamed features" in one_line_error(capsys, "predict")


def test_predict_proba_of_a_regression_model(tmp_path, capsys):
    frame, target = potato_frame()
    frame.to_csv(tmp_path / "p.csv", index=False)
    model = tmp_path / "p.cartjit"
    assert main(["fit", str(tmp_path / "p.csv"), "--target", target, "-o", str(model),
                 "-q"]) == 0
    assert main(["predict", str(model), str(tmp_path / "p.csv"), "--proba"]) == 2
    assert "regression tree" in one_line_error(capsys, "predict")


def test_show_rules_dot_and_layout_of_a_model(tmp_path, golf_csv, capsys):
    export = pytest.importorskip("cartjit.export")
    if not hasattr(export, "export_rules") or not hasattr(export, "export_graphviz"):
        pytest.skip("export_rules / export_graphviz are not in this cartjit.export")
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model), "-q"]) == 0
    est = load(model)
    capsys.readouterr()
    assert main(["show", str(model), "--rules"]) == 0
    assert capsys.readouterr().out == export.export_rules(est)
    assert main(["show", str(model), "--dot"]) == 0
    dot = capsys.readouterr().out
    assert dot == export.export_graphviz(est) and dot.lstrip().startswith("digraph")
    assert main(["show", str(model), "--layout", "rpart"]) == 0
    shown = capsys.readouterr().out
    assert export.export_text(est, layout="rpart") in shown
    assert export.format_cp(est) in shown and "Root node error: 4/10" in shown


def test_show_plot_of_a_model(tmp_path, golf_csv, capsys):
    pytest.importorskip("matplotlib")
    plotting = pytest.importorskip("cartjit.plotting")
    assert hasattr(plotting, "plot_tree")
    model = tmp_path / "golf.cartjit"
    assert main(["fit", str(golf_csv), "--target", "play", "-o", str(model), "-q"]) == 0
    image = tmp_path / "tree.png"
    assert main(["show", str(model), "--plot", str(image)]) == 0
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    size = image.stat().st_size
    capsys.readouterr()
    assert main(["show", str(model), "--plot", str(image)]) == 2
    assert "already exists; give --overwrite" in one_line_error(capsys, "show")
    assert main(["show", str(model), "--plot", str(image), "--overwrite"]) == 0
    assert image.stat().st_size == size


def test_console_script_exit_status(tmp_path, golf_csv):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p]])
    model = tmp_path / "golf.cartjit"

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "cartjit", *argv], env=env,
                              capture_output=True, text=True, timeout=300)

    done = run("fit", str(golf_csv), "--target", "play", "-o", str(model), "-q")
    assert done.returncode == 0, done.stderr
    done = run("fit", str(golf_csv), "--target", "play", "-o", str(model), "-q")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("cartjit fit: error: ")
    done = run("predict", str(model), str(golf_csv))
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "prediction"
