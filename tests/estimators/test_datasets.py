"""Tests for cartjit.datasets: bundled data, the registry and the synthetic generators."""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from cartjit.datasets import (
    Dataset,
    list_datasets,
    load_dataset,
    load_iris,
    load_play_golf,
    load_potato_yield,
    make_classification,
    make_regression,
)

IRIS_COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width", "species"]

# docs/maths.md §6, in order
POTATO = [
    (206, 29), (188, 25), (219, 31), (372, 25), (345, 29), (231, 30), (203, 26),
    (170, 23), (55, 12), (91, 15), (292, 28), (141, 24), (129, 23), (170, 22), (324, 30),
]


_NEG_NOISE = r"^noise must be a real number >= 0 and finite, "
_NOISE_RANGE = r"label_noise must be a real number in \[0, 1\], "


def _entropy(labels) -> float:
    """Entropy in bits of a sequence of labels."""
    counts = np.array(list(pd.Series(labels).value_counts()), dtype=float)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def _gain(frame: pd.DataFrame, feature: str, target: str) -> float:
    """Entropy decrease of splitting ``frame`` on the values of ``feature``."""
    n = len(frame)
    after = sum(
        len(group) / n * _entropy(group[target]) for _, group in frame.groupby(feature)
    )
    return _entropy(frame[target]) - after


def _best_stump_accuracy(x: np.ndarray, y: np.ndarray, n_classes: int) -> float:
    """Training accuracy of the best two-leaf split on one feature (majority votes)."""
    order = np.argsort(x, kind="stable")
    onehot = np.eye(n_classes, dtype=np.int64)[y[order]]
    left = np.cumsum(onehot, axis=0)[:-1]
    right = left[-1] + onehot[-1] - left
    return float((left.max(axis=1) + right.max(axis=1)).max() / len(y))


# ---------------------------------------------------------------------------
# iris
# ---------------------------------------------------------------------------

def test_iris_shape_columns_dtypes():
    df = load_iris()
    assert isinstance(df, pd.DataFrame)
    assert df.shape == (150, 5)
    assert list(df.columns) == IRIS_COLUMNS
    for col in IRIS_COLUMNS[:4]:
        assert df[col].dtype == np.float64
    assert all(isinstance(v, str) for v in df["species"])
    assert list(df.index) == list(range(150))


def test_iris_class_counts_and_order():
    df = load_iris()
    assert df["species"].value_counts().to_dict() == {
        "setosa": 50, "versicolor": 50, "virginica": 50,
    }
    # classic order: 50 setosa, then 50 versicolor, then 50 virginica
    assert (df["species"].iloc[:50] == "setosa").all()
    assert (df["species"].iloc[50:100] == "versicolor").all()
    assert (df["species"].iloc[100:] == "virginica").all()


@pytest.mark.parametrize(
    "case, values, species",
    [
        (1, (5.1, 3.5, 1.4, 0.2), "setosa"),
        # cases 35 and 38 are where R (= Fisher 1936) and the UCI copy disagree
        (35, (4.9, 3.1, 1.5, 0.2), "setosa"),
        (38, (4.9, 3.6, 1.4, 0.1), "setosa"),
        (51, (7.0, 3.2, 4.7, 1.4), "versicolor"),
        (101, (6.3, 3.3, 6.0, 2.5), "virginica"),
        (150, (5.9, 3.0, 5.1, 1.8), "virginica"),
    ],
)
def test_iris_known_rows(case, values, species):
    row = load_iris().iloc[case - 1]
    assert tuple(row.iloc[:4]) == pytest.approx(values, abs=1e-12)
    assert row["species"] == species


def test_iris_column_sums_and_class_means_match_r():
    df = load_iris()
    # R: colSums(iris[1:4])
    sums = df[IRIS_COLUMNS[:4]].sum()
    assert list(sums) == pytest.approx([876.5, 458.6, 563.7, 179.9], abs=1e-9)
    # R: aggregate(. ~ Species, iris, mean)
    means = df.groupby("species")[IRIS_COLUMNS[:4]].mean()
    assert list(means.loc["setosa"]) == pytest.approx([5.006, 3.428, 1.462, 0.246])
    assert list(means.loc["versicolor"]) == pytest.approx([5.936, 2.770, 4.260, 1.326])
    assert list(means.loc["virginica"]) == pytest.approx([6.588, 2.974, 5.552, 2.026])


def test_iris_root_split_separates_setosa():
    # docs/maths.md §6: root split petal length <= 2.45 (midpoint of 1.9 and 3.0)
    df = load_iris()
    setosa = df["species"] == "setosa"
    assert df.loc[setosa, "petal_length"].max() == 1.9
    assert df.loc[~setosa, "petal_length"].min() == 3.0


def test_iris_petal_only():
    df = load_iris(petal_only=True)
    assert list(df.columns) == ["petal_length", "petal_width", "species"]
    assert df.shape == (150, 3)
    pd.testing.assert_frame_equal(df, load_iris()[["petal_length", "petal_width", "species"]])


def test_iris_return_X_y():
    X, y = load_iris(return_X_y=True)
    assert isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)
    assert list(X.columns) == IRIS_COLUMNS[:4]
    assert y.name == "species" and len(y) == 150
    Xp, yp = load_iris(petal_only=True, return_X_y=True)
    assert list(Xp.columns) == ["petal_length", "petal_width"]
    pd.testing.assert_series_equal(y, yp)


@pytest.mark.parity
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs Rscript")
def test_iris_equals_r_datasets_iris():
    script = (
        'd <- iris; cat(sprintf("%.1f,%.1f,%.1f,%.1f,%s\\n", d[[1]], d[[2]], d[[3]], '
        "d[[4]], as.character(d[[5]])), sep='')"
    )
    out = subprocess.run(
        ["Rscript", "-e", script], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    df = load_iris()
    assert len(out) == 150
    for i, line in enumerate(out):
        *nums, species = line.split(",")
        assert tuple(df.iloc[i, :4]) == pytest.approx(tuple(map(float, nums)), abs=1e-12)
        assert df.iloc[i, 4] == species


# ---------------------------------------------------------------------------
# potato yield
# ---------------------------------------------------------------------------

def test_potato_values_equal_spec():
    df = load_potato_yield()
    assert list(df.columns) == ["rainfall_mm", "yield_t_ha"]
    assert df.shape == (15, 2)
    assert (df.dtypes == np.float64).all()
    assert list(zip(df["rainfall_mm"], df["yield_t_ha"])) == [
        (float(a), float(b)) for a, b in POTATO
    ]


def test_potato_return_X_y_and_best_constant():
    X, y = load_potato_yield(return_X_y=True)
    assert list(X.columns) == ["rainfall_mm"] and y.name == "yield_t_ha"
    # the best constant is the mean: 372 / 15
    assert y.mean() == pytest.approx(sum(b for _, b in POTATO) / 15)
    assert y.sum() == 372.0


# ---------------------------------------------------------------------------
# play golf
# ---------------------------------------------------------------------------

def test_golf_shape_and_values():
    df = load_play_golf()
    assert list(df.columns) == ["temperature", "humidity", "play"]
    assert df.shape == (10, 3)
    assert set(df["temperature"]) == {"high", "normal"}
    assert set(df["humidity"]) == {"high", "normal"}
    assert set(df["play"]) == {"yes", "no"}
    assert all(isinstance(v, str) for col in df for v in df[col])


def test_golf_cell_counts_match_spec():
    df = load_play_golf()
    counts = df.groupby(["temperature", "humidity", "play"]).size().to_dict()
    assert counts == {
        ("high", "high", "no"): 3,
        ("normal", "high", "yes"): 2,
        ("normal", "high", "no"): 1,
        ("high", "normal", "yes"): 2,
        ("normal", "normal", "yes"): 2,
    }


def test_golf_entropy_gains_match_spec():
    df = load_play_golf()
    g_hum = _gain(df, "humidity", "play")
    g_temp = _gain(df, "temperature", "play")
    assert round(g_hum, 3) == 0.420
    assert round(g_temp, 3) == 0.125
    assert g_hum > g_temp  # the root split is humidity
    # the humidity = high branch then splits on temperature (positive gain)
    high = df[df["humidity"] == "high"]
    assert _gain(high, "temperature", "play") > 0.4
    # the humidity = normal branch is pure
    assert _entropy(df.loc[df["humidity"] == "normal", "play"]) == 0.0


def test_golf_return_X_y():
    X, y = load_play_golf(return_X_y=True)
    assert list(X.columns) == ["temperature", "humidity"]
    assert y.name == "play"
    assert y.value_counts().to_dict() == {"yes": 6, "no": 4}


# ---------------------------------------------------------------------------
# fresh copies
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    "loader, column, value",
    [
        (load_iris, "sepal_length", -1.0),
        (lambda: load_iris(petal_only=True), "petal_width", -1.0),
        (load_potato_yield, "rainfall_mm", -1.0),
        (load_play_golf, "humidity", "mutated"),
    ],
)
def test_loaders_return_fresh_copies(loader, column, value):
    before = loader()
    first = loader()
    first.loc[first.index[0], column] = value
    assert first[column].iloc[0] == value
    del first[column]
    again = loader()
    assert again[column].iloc[0] != value
    pd.testing.assert_frame_equal(again, before)


def test_return_X_y_copies_are_fresh():
    X, y = load_iris(return_X_y=True)
    X.iloc[0, 0] = -1.0
    y.iloc[0] = "mutated"
    df = load_iris()
    assert df.iloc[0, 0] == 5.1
    assert df["species"].iloc[0] == "setosa"


def test_registry_frames_are_fresh():
    a = load_dataset("potato_yield")
    a.frame["yield_t_ha"] = 0.0
    assert load_dataset("potato_yield").frame["yield_t_ha"].sum() == 372.0


def test_loader_flags_must_be_bool():
    with pytest.raises(TypeError, match=r"petal_only must be True or False, got 1"):
        load_iris(petal_only=1)
    with pytest.raises(TypeError, match=r"return_X_y must be True or False, got 'yes'"):
        load_play_golf(return_X_y="yes")


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------

def test_list_datasets_sorted_names():
    names = list_datasets()
    assert names == ["chickwts", "hair_eye_color", "infert", "insect_sprays", "iris",
                     "iris_petal", "npk", "play_golf", "potato_yield", "titanic",
                     "tooth_growth"]
    assert names == sorted(names)


@pytest.mark.parametrize(
    "name, target, task, features, shape",
    [
        ("iris", "species", "classification", tuple(IRIS_COLUMNS[:4]), (150, 5)),
        ("iris_petal", "species", "classification", ("petal_length", "petal_width"), (150, 3)),
        ("play_golf", "play", "classification", ("temperature", "humidity"), (10, 3)),
        ("potato_yield", "yield_t_ha", "regression", ("rainfall_mm",), (15, 2)),
    ],
)
def test_load_dataset(name, target, task, features, shape):
    ds = load_dataset(name)
    assert isinstance(ds, Dataset)
    assert ds._fields == ("name", "frame", "target", "features", "task", "description")
    assert ds.name == name
    assert ds.target == target
    assert ds.task == task
    assert ds.features == features
    assert isinstance(ds.features, tuple)
    assert isinstance(ds.frame, pd.DataFrame) and ds.frame.shape == shape
    assert list(ds.frame.columns) == [*features, target]
    assert isinstance(ds.description, str) and len(ds.description) > 20


def test_load_dataset_matches_loaders():
    pd.testing.assert_frame_equal(load_dataset("iris").frame, load_iris())
    pd.testing.assert_frame_equal(load_dataset("iris_petal").frame, load_iris(petal_only=True))
    pd.testing.assert_frame_equal(load_dataset("play_golf").frame, load_play_golf())
    pd.testing.assert_frame_equal(load_dataset("potato_yield").frame, load_potato_yield())


def test_load_dataset_unknown_name():
    with pytest.raises(ValueError, match=r"name must be one of .*'iris'.*'iris_petal'.*"
                       r"'play_golf'.*'potato_yield'.*got 'wine'"):
        load_dataset("wine")
    with pytest.raises(ValueError, match=r"got 'Iris'"):
        load_dataset("Iris")


def test_load_dataset_non_string_name():
    with pytest.raises(TypeError, match=r"name must be a string, got 3 of type int.*iris"):
        load_dataset(3)


# ---------------------------------------------------------------------------
# make_classification
# ---------------------------------------------------------------------------

def test_make_classification_shapes_dtypes_contiguity():
    X, y = make_classification(1000, n_features=7, n_classes=4, n_informative=3)
    assert X.shape == (1000, 7) and y.shape == (1000,)
    assert X.dtype == np.float64 and y.dtype == np.int64
    assert X.flags.c_contiguous and y.flags.c_contiguous
    assert y.min() >= 0 and y.max() <= 3
    assert set(np.unique(y)) == {0, 1, 2, 3}
    assert np.isfinite(X).all()


def test_make_classification_defaults():
    X, y = make_classification(500)
    assert X.shape == (500, 20)
    assert set(np.unique(y)) <= {0, 1, 2}
    assert len(np.unique(y)) == 3


def test_make_classification_no_ties():
    X, _ = make_classification(5000, n_features=5)
    for j in range(X.shape[1]):
        assert len(np.unique(X[:, j])) == X.shape[0]


def test_make_classification_deterministic():
    X1, y1 = make_classification(800, 6, 3, n_informative=4, random_state=7)
    X2, y2 = make_classification(800, 6, 3, n_informative=4, random_state=7)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X3, y3 = make_classification(800, 6, 3, n_informative=4, random_state=8)
    assert not np.array_equal(X1, X3)
    assert not np.array_equal(y1, y3)


def test_make_classification_label_noise_fraction():
    X0, y0 = make_classification(2000, 6, 3, n_informative=4, label_noise=0.0, random_state=3)
    X1, y1 = make_classification(2000, 6, 3, n_informative=4, label_noise=0.1, random_state=3)
    np.testing.assert_array_equal(X0, X1)  # noise is drawn after everything else
    assert int((y0 != y1).sum()) == 200  # exactly round(0.1 * 2000) labels flipped
    _, y_all = make_classification(2000, 6, 3, n_informative=4, label_noise=1.0, random_state=3)
    assert (y_all != y0).all()


def test_make_classification_is_nonlinear():
    # clean labels are not explained by any single axis-parallel split ...
    X, y = make_classification(4000, 5, 3, n_informative=5, label_noise=0.0, random_state=0)
    best = max(_best_stump_accuracy(X[:, j], y, 3) for j in range(5))
    assert best < 0.8
    # ... but the labels depend on X (not a trivial constant)
    assert np.bincount(y).min() > 0.1 * len(y)


def test_make_classification_single_informative_and_two_classes():
    X, y = make_classification(300, n_features=1, n_classes=2, n_informative=1,
                               label_noise=0.0)
    assert X.shape == (300, 1)
    # with one informative feature the clean rule is a threshold on it
    assert _best_stump_accuracy(X[:, 0], y, 2) == 1.0


def test_make_classification_accepts_numpy_integers():
    X, y = make_classification(np.int64(50), np.int32(4), np.int64(2), n_informative=np.int8(2))
    assert X.shape == (50, 4)
    assert set(np.unique(y)) <= {0, 1}


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        ({"n_samples": 0}, ValueError, r"n_samples must be an integer >= 1, got 0"),
        ({"n_samples": -5}, ValueError, r"n_samples must be an integer >= 1, got -5"),
        ({"n_samples": 10.0}, TypeError, r"n_samples must be an integer, got 10\.0 of type float"),
        ({"n_samples": True}, TypeError, r"n_samples must be an integer, got True of type bool"),
        ({"n_samples": "10"}, TypeError, r"n_samples must be an integer, got '10'"),
        ({"n_features": 0}, ValueError, r"n_features must be an integer >= 1, got 0"),
        ({"n_features": 2.5}, TypeError, r"n_features must be an integer, got 2\.5"),
        ({"n_classes": 1}, ValueError, r"n_classes must be an integer >= 2, got 1"),
        ({"n_classes": False}, TypeError, r"n_classes must be an integer, got False of type bool"),
        ({"n_informative": 0}, ValueError,
         r"n_informative must be an integer between 1 and n_features = 20, got 0"),
        ({"n_features": 3, "n_informative": 4}, ValueError,
         r"n_informative must be an integer between 1 and n_features = 3, got 4"),
        ({"n_informative": 21}, ValueError,
         r"n_informative must be an integer between 1 and n_features = 20, got 21"),
        ({"label_noise": -0.1}, ValueError, _NOISE_RANGE + r"got -0\.1"),
        ({"label_noise": 1.5}, ValueError, _NOISE_RANGE + r"got 1\.5"),
        ({"label_noise": float("nan")}, ValueError, _NOISE_RANGE + r"got nan"),
        ({"label_noise": "0.1"}, TypeError, r"label_noise must be a real number, got '0\.1'"),
        ({"label_noise": True}, TypeError, r"label_noise must be a real number, got True"),
        ({"random_state": -1}, ValueError, r"random_state must be an integer seed >= 0, got -1"),
        ({"random_state": 1.5}, TypeError, r"random_state must be None, an integer seed >= 0 "
                                           r"or a numpy\.random\.Generator, got 1\.5"),
    ],
)
def test_make_classification_bad_arguments(kwargs, exc, pattern):
    args = {"n_samples": 100, **kwargs}
    with pytest.raises(exc, match=pattern):
        make_classification(**args)


# ---------------------------------------------------------------------------
# make_regression
# ---------------------------------------------------------------------------

def test_make_regression_shapes_dtypes_contiguity():
    X, y = make_regression(1000, n_features=6, n_informative=3)
    assert X.shape == (1000, 6) and y.shape == (1000,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.flags.c_contiguous and y.flags.c_contiguous
    assert np.isfinite(X).all() and np.isfinite(y).all()
    assert make_regression(10)[0].shape == (10, 20)


def test_make_regression_deterministic():
    X1, y1 = make_regression(500, 5, n_informative=3, random_state=11)
    X2, y2 = make_regression(500, 5, n_informative=3, random_state=11)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X3, y3 = make_regression(500, 5, n_informative=3, random_state=12)
    assert not np.array_equal(X1, X3)
    assert not np.array_equal(y1, y3)


def test_make_regression_noise_is_additive_gaussian():
    X0, y0 = make_regression(5000, 4, n_informative=2, noise=0.0, random_state=5)
    X1, y1 = make_regression(5000, 4, n_informative=2, noise=1.0, random_state=5)
    X2, y2 = make_regression(5000, 4, n_informative=2, noise=2.0, random_state=5)
    np.testing.assert_array_equal(X0, X1)
    np.testing.assert_allclose(y2 - y0, 2.0 * (y1 - y0), rtol=1e-9, atol=1e-9)
    e = y1 - y0
    assert abs(e.mean()) < 0.1 and abs(e.std() - 1.0) < 0.05


def test_make_regression_depends_on_informative_features_only():
    X, y = make_regression(3000, 6, n_informative=2, noise=0.0, random_state=2)
    # exactly 2 columns carry signal; correlating y with x, x**2 and sign(x) catches
    # the linear, curved and step terms (noise columns stay near 0.03 here)
    signal = []
    for j in range(6):
        x = X[:, j]
        c = max(abs(np.corrcoef(x, y)[0, 1]), abs(np.corrcoef(x * x, y)[0, 1]),
                abs(np.corrcoef(np.sign(x), y)[0, 1]))
        signal.append(c)
    assert sum(c > 0.1 for c in signal) == 2
    assert y.std() > 0.5


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        ({"n_samples": 0}, ValueError, r"n_samples must be an integer >= 1, got 0"),
        ({"n_samples": 3.0}, TypeError, r"n_samples must be an integer, got 3\.0"),
        ({"n_samples": True}, TypeError, r"n_samples must be an integer, got True of type bool"),
        ({"n_features": -1}, ValueError, r"n_features must be an integer >= 1, got -1"),
        ({"n_informative": 30}, ValueError,
         r"n_informative must be an integer between 1 and n_features = 20, got 30"),
        ({"n_informative": 0}, ValueError,
         r"n_informative must be an integer between 1 and n_features = 20, got 0"),
        ({"noise": -1.0}, ValueError, _NEG_NOISE + r"got -1\.0"),
        ({"noise": float("inf")}, ValueError, _NEG_NOISE + r"got inf"),
        ({"noise": None}, TypeError, r"noise must be a real number, got None"),
    ],
)
def test_make_regression_bad_arguments(kwargs, exc, pattern):
    args = {"n_samples": 100, **kwargs}
    with pytest.raises(exc, match=pattern):
        make_regression(**args)


def test_generators_validate_before_drawing():
    # a bad later argument fails fast even with a huge n_samples
    with pytest.raises(ValueError, match="label_noise"):
        make_classification(10**12, label_noise=2.0)
    with pytest.raises(ValueError, match="noise"):
        make_regression(10**12, noise=-1.0)


def test_entropy_helper_sanity():
    assert _entropy(["a", "b"]) == pytest.approx(1.0)
    assert _entropy(["a"] * 4) == 0.0
    assert math.isclose(_entropy(["a", "a", "b", "b", "c", "c", "d", "d"]), 2.0)


@pytest.mark.parametrize("gen, kwargs", [
    ("make_classification", dict(n_samples=9 * 10**12)),
    ("make_classification", dict(n_samples=1000, n_classes=10**9)),
    ("make_regression", dict(n_samples=10**6, n_features=10**8)),
])
def test_generators_refuse_sizes_over_the_memory_limit(monkeypatch, gen, kwargs):
    import cartjit.datasets as ds
    from cartjit.engine.limits import MemoryLimitError

    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "8G")
    with pytest.raises(MemoryLimitError, match="n_samples=.*memory limit"):
        getattr(ds, gen)(**kwargs)


# ---------------------------------------------------------------------------
# categorical data from R's datasets package
# ---------------------------------------------------------------------------

from cartjit.datasets import (load_chickwts, load_hair_eye_color, load_infert,  # noqa: E402
                              load_insect_sprays, load_npk, load_titanic,
                              load_tooth_growth)

# Facts about R's data (its help pages, and table() / sum() in R): rows, target, the
# levels of each factor in R's order with their counts, and the sum of a numeric column.
R_DATA = [
    (load_chickwts, 71, "weight", {"feed": {"casein": 12, "horsebean": 10, "linseed": 12,
                                            "meatmeal": 11, "soybean": 14,
                                            "sunflower": 12}}, ("weight", 18553)),
    (load_insect_sprays, 72, "count", {"spray": dict.fromkeys("ABCDEF", 12)},
     ("count", 684)),
    (load_infert, 248, "case", {"education": {"0-5yrs": 12, "6-11yrs": 120,
                                              "12+ yrs": 116}}, ("case", 83)),
    (load_tooth_growth, 60, "len", {"supp": {"OJ": 30, "VC": 30}}, ("len", 1128.8)),
    (load_npk, 24, "yield", {"block": {str(b): 4 for b in range(1, 7)},
                             "N": {"0": 12, "1": 12}}, ("yield", 1317.0)),
    (load_titanic, 2201, "survived", {"class": {"1st": 325, "2nd": 285, "3rd": 706,
                                                "Crew": 885},
                                      "sex": {"Male": 1731, "Female": 470}}, None),
    (load_hair_eye_color, 592, "eye", {"hair": {"Black": 108, "Brown": 286, "Red": 71,
                                                "Blond": 127},
                                       "sex": {"Male": 279, "Female": 313}}, None),
]


@pytest.mark.parametrize("loader, n, target, factors, total", R_DATA,
                         ids=[row[0].__name__ for row in R_DATA])
def test_r_datasets_rows_levels_and_values(loader, n, target, factors, total):
    frame = loader()
    assert len(frame) == n and frame.columns[-1] == target
    for column, counts in factors.items():
        col = frame[column]
        assert isinstance(col.dtype, pd.CategoricalDtype) and not col.cat.ordered
        assert list(col.cat.categories) == list(counts)  # R's level order
        assert col.value_counts(sort=False).to_dict() == counts
    if total is not None:
        assert frame[total[0]].sum() == pytest.approx(total[1], rel=1e-12)
    X, y = loader(return_X_y=True)
    assert list(X.columns) == list(frame.columns[:-1]) and y.name == target
    with pytest.raises(TypeError, match="return_X_y must be True or False"):
        loader(return_X_y=1)


def test_tables_of_counts_are_expanded_to_one_row_per_case():
    titanic = load_titanic()
    assert titanic["survived"].value_counts().to_dict() == {"No": 1490, "Yes": 711}
    # the 23 female crew members: 3 died, 20 survived (R: Titanic["Crew", "Female", , ])
    crew_f = titanic[(titanic["class"] == "Crew") & (titanic["sex"] == "Female")]
    assert crew_f["survived"].value_counts().to_dict() == {"Yes": 20, "No": 3}
    eyes = load_hair_eye_color()
    assert eyes["eye"].value_counts().to_dict() == {"Brown": 220, "Blue": 215, "Hazel": 93,
                                                    "Green": 64}
    assert list(eyes.columns) == ["hair", "sex", "eye"]


def test_r_datasets_are_registered_and_fit_with_categorical_features():
    from cartjit import CARTClassifier, CARTRegressor
    for name in ("chickwts", "insect_sprays", "infert", "tooth_growth", "npk", "titanic",
                 "hair_eye_color"):
        ds = load_dataset(name)
        assert name in list_datasets()
        X, y = ds.frame[list(ds.features)], ds.frame[ds.target]
        cls = CARTClassifier if ds.task == "classification" else CARTRegressor
        est = cls(max_depth=2).fit(X, y)
        expected = [isinstance(X[c].dtype, pd.CategoricalDtype) for c in ds.features]
        assert est.is_categorical_.tolist() == expected, name


def test_r_datasets_match_r(tmp_path):
    """The bundled values are R's (skipped without Rscript)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        pytest.skip("Rscript not found")
    out = tmp_path / "cw.csv"
    subprocess.run([rscript, "-e", f"write.csv(chickwts, '{out}', row.names=FALSE)"],
                   check=True, capture_output=True, timeout=120)
    r = pd.read_csv(out)
    ours = load_chickwts()
    assert list(ours["feed"].astype(str)) == list(r["feed"])
    np.testing.assert_array_equal(ours["weight"].to_numpy(), r["weight"].to_numpy())
