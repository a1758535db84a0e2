"""Class labels of a target with missing values: a pandas float column gives the labels
a NumPy array gives (float64), a nullable column (Int64, boolean, ...) those of its NumPy
dtype, so that the model saves; ``cartjit fit --task classification`` on a 0/1 column
with an empty cell (read as floats) then works, as the note of the inferred task
advises, and so does ``cartjit fit`` on a Parquet file's nullable integer target."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, load, save
from cartjit.__main__ import main
from cartjit.export import export_text


def frame():
    rng = np.random.default_rng(5)
    x = rng.normal(size=40)
    g = rng.choice(["u", "v", "w"], 40)
    y = np.where((x > 0) | (g == "u"), 1.0, 0.0)
    y[[3, 17]] = np.nan
    return pd.DataFrame({"x": x, "g": g, "y": y})


@pytest.mark.parametrize("cls", [CARTClassifier, CARTClassifierCV])
def test_pandas_float_target_with_missing_labels_as_numpy(cls):
    data = frame()
    kw = {"cv": 4, "random_state": 0} if cls is CARTClassifierCV else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the 2 dropped rows, said by fit
        from_pandas = cls(**kw).fit(data[["x"]], data["y"])
        from_numpy = cls(**kw).fit(data[["x"]], data["y"].to_numpy())
    assert from_pandas.classes_.dtype == np.float64
    assert from_pandas.classes_.tolist() == [0.0, 1.0]
    assert np.array_equal(from_pandas.classes_, from_numpy.classes_)
    assert export_text(from_pandas) == export_text(from_numpy)
    assert np.array_equal(from_pandas.predict(data[["x"]]), from_numpy.predict(data[["x"]]))


@pytest.mark.parametrize("dtype, numpy_dtype", [("Int64", np.int64), ("UInt8", np.uint8),
                                                ("boolean", np.bool_)])
@pytest.mark.parametrize("cls", [CARTClassifier, CARTClassifierCV])
def test_nullable_target_with_missing_labels_in_its_numpy_dtype(cls, dtype, numpy_dtype,
                                                               tmp_path):
    """Labels of a nullable column with a missing entry are those of the same column
    without it (not Python objects), and the model saves and loads."""
    data = frame()
    kw = {"cv": 4, "random_state": 0} if cls is CARTClassifierCV else {}
    y = data["y"].astype(dtype)
    with pytest.warns(UserWarning, match="y is missing on 2 of the 40 rows"):
        est = cls(**kw).fit(data[["x"]], y)
    complete = data.dropna()
    ref = cls(**kw).fit(complete[["x"]], complete["y"].astype(numpy_dtype))
    assert est.classes_.dtype == numpy_dtype and ref.classes_.dtype == numpy_dtype
    assert np.array_equal(est.classes_, ref.classes_)
    assert export_text(est) == export_text(ref)
    save(est, tmp_path / "m.cartjit")
    back = load(tmp_path / "m.cartjit")
    assert np.array_equal(back.classes_, est.classes_)
    assert np.array_equal(back.predict(data[["x"]]), est.predict(data[["x"]]))


def test_nullable_string_target_keeps_object_labels():
    data = frame()
    y = pd.Series(np.where(data["y"] == 1, "yes", "no"), dtype="string")
    y[data["y"].isna()] = pd.NA
    with pytest.warns(UserWarning, match="y is missing on 2 of the 40 rows"):
        est = CARTClassifier().fit(data[["x"]], y)
    assert est.classes_.tolist() == ["no", "yes"]


def test_cli_fit_task_classification_of_a_float_target_with_an_empty_cell(tmp_path,
                                                                          capsys):
    data = frame()
    data.to_csv(tmp_path / "d.csv", index=False)
    model = tmp_path / "m.cartjit"
    assert main(["fit", str(tmp_path / "d.csv"), "--target", "y", "--task",
                 "classification", "-o", str(model), "-q"]) == 0
    err = capsys.readouterr().err
    assert "error" not in err, err
    est = load(model)
    assert est.classes_.tolist() == [0.0, 1.0]
    data.drop(columns="y").to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(model), str(tmp_path / "new.csv"), "--proba"]) == 0
    out = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    assert list(out.columns) == ["prediction", "proba_0.0", "proba_1.0"]
    assert len(out) == 40
    assert np.array_equal(out["prediction"].to_numpy(), est.predict(data[["x", "g"]]))


def test_cli_fit_a_parquet_nullable_integer_target_with_a_null(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    data = frame()
    data["y"] = data["y"].astype("Int64")
    data.to_parquet(tmp_path / "d.parquet")
    model = tmp_path / "m.cartjit"
    assert main(["fit", str(tmp_path / "d.parquet"), "--target", "y", "-o", str(model),
                 "-q"]) == 0
    err = capsys.readouterr().err
    assert "error" not in err and "y is missing on 2 of the 40 rows" in err, err
    assert load(model).classes_.tolist() == [0, 1]
