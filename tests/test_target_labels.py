"""Class labels of a float target with missing values: a pandas column gives the labels
a NumPy array gives (float64), so that the model saves; ``cartjit fit --task
classification`` on a 0/1 column with an empty cell (read as floats) then works, as the
note of the inferred task advises."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, load
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


def test_nullable_integer_target_still_drops_its_missing_rows():
    data = frame()
    y = data["y"].astype("Int64")
    with pytest.warns(UserWarning, match="y is missing on 2 of the 40 rows"):
        est = CARTClassifier().fit(data[["x"]], y)
    assert est.classes_.tolist() == [0, 1]


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
