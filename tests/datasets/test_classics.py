"""The classic real data sets: shapes, classes and missing cells against the literature,
against R's mlbench (through Rscript), the byte-identical export, and the local loaders."""
from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cartjit.datasets as ds
from cartjit.datasets import _classics

# name: (loader, mlbench name, cases, features, target, class counts, missing cells).
# The counts are the published ones: UCI's descriptions of the data sets, and the tables
# of Breiman (1996, "Bagging predictors", Table 1: breast cancer 699 cases 9 inputs 2
# classes, ionosphere 351/34/2, glass 214/9/6, soybean 683/35/19).
CLASSICS = {
    "breast_cancer": (ds.load_breast_cancer, "BreastCancer", 699, 9, "Class",
                      {"benign": 458, "malignant": 241}, 16),
    "ionosphere": (ds.load_ionosphere, "Ionosphere", 351, 34, "Class",
                   {"good": 225, "bad": 126}, 0),
    "glass": (ds.load_glass, "Glass", 214, 9, "Type",
              {"1": 70, "2": 76, "3": 17, "5": 13, "6": 9, "7": 29}, 0),
    "sonar": (ds.load_sonar, "Sonar", 208, 60, "Class", {"M": 111, "R": 97}, 0),
    "soybean": (ds.load_soybean, "Soybean", 683, 35, "Class", None, 2337),
    "vehicle": (ds.load_vehicle, "Vehicle", 846, 18, "Class",
                {"bus": 218, "opel": 212, "saab": 217, "van": 199}, 0),
    "vowel": (ds.load_vowel, "Vowel", 990, 10, "Class", None, 0),
    "votes": (ds.load_votes, "HouseVotes84", 435, 16, "Class",
              {"democrat": 267, "republican": 168}, 392),
}
N_CLASSES = {"soybean": 19, "vowel": 11}


@pytest.mark.parametrize("name", list(CLASSICS))
def test_classic_against_the_literature(name):
    load, _, n, p, target, counts, missing = CLASSICS[name]
    frame = load()
    assert frame.shape == (n, p + 1)
    assert frame.columns[-1] == target
    y = frame[target]
    assert y.map(type).eq(str).all()
    if counts is not None:
        assert y.value_counts().to_dict() == counts
    else:
        assert y.nunique() == N_CLASSES[name]
    if name == "vowel":
        assert set(y.value_counts()) == {90}  # 11 vowels x 90 utterances
    assert int(frame.isna().sum().sum()) == missing
    X, y2 = load(return_X_y=True)
    assert list(X.columns) == list(frame.columns[:-1])
    pd.testing.assert_series_equal(y2, y)
    # a fresh copy each time
    frame.iloc[0, 0] = frame.iloc[1, 0]
    frame[target] = "changed"
    assert (load()[target] != "changed").all()
    entry = ds.literature()[name]
    assert (entry.kind, entry.n_cases, entry.n_features, entry.target) == ("bundled", n, p,
                                                                           target)
    assert entry.licence.startswith("CC BY 4.0")


def test_representation_of_factors_and_missing_cells():
    bc = ds.load_breast_cancer()
    assert "Id" not in bc.columns
    # mlbench: five ordered factors, four unordered ones, all with the levels 1-10
    # (Mitoses has no 9)
    ordered = ["Cl.thickness", "Cell.size", "Cell.shape", "Marg.adhesion", "Epith.c.size"]
    for column in bc.columns[:-1]:
        dtype = bc[column].dtype
        assert isinstance(dtype, pd.CategoricalDtype)
        assert dtype.ordered == (column in ordered), column
        levels = [str(i) for i in range(1, 11) if column != "Mitoses" or i != 9]
        assert list(dtype.categories) == levels, column
    assert int(bc["Bare.nuclei"].isna().sum()) == 16
    iono = ds.load_ionosphere()
    assert list(iono["V2"].cat.categories) == ["0"] and iono["V3"].dtype == np.float64
    soy = ds.load_soybean()
    ordered = [c for c in soy.columns[:-1] if soy[c].dtype.ordered]
    assert ordered == ["plant.stand", "precip", "temp", "germ", "leaf.size"]
    votes = ds.load_votes()
    assert all(list(votes[c].cat.categories) == ["n", "y"] for c in votes.columns[:-1])
    vowel = ds.load_vowel()
    assert len(vowel["V1"].cat.categories) == 15


def test_bundled_files_are_small():
    folder = resources.files("cartjit.datasets").joinpath("data")
    names = [f"{n}.csv" for n in CLASSICS] + ["classics_levels.csv"]
    total = sum(len(folder.joinpath(n).read_bytes()) for n in names)
    assert total < 1_000_000, total


@pytest.mark.filterwarnings("ignore:X. categorical column 'V2' has a single level")
@pytest.mark.filterwarnings("ignore:X. 1 row is missing every feature")
def test_classics_fit_with_categorical_and_missing_features():
    from cartjit import CARTClassifier
    for name in CLASSICS:
        X, y = CLASSICS[name][0](return_X_y=True)
        est = CARTClassifier(max_depth=1).fit(X, y)
        expected = [isinstance(X[c].dtype, pd.CategoricalDtype) and not X[c].dtype.ordered
                    for c in X.columns]
        assert est.is_categorical_.tolist() == expected, name
        assert est.score(X, y) > max(y.value_counts()) / len(y) - 1e-12, name


# ----------------------------------------------------------------- against R (mlbench)

_R_SUMMARY = r"""
out <- list()
for (item in c(%s)) {
  e <- new.env(); data(list = item, package = "mlbench", envir = e); d <- get(item, e)
  cl <- if ("Class" %%in%% names(d)) d$Class else d$Type
  fac <- names(d)[sapply(d, is.factor)]
  out[[item]] <- list(
    dim = dim(d),
    na = sum(is.na(d)),
    na_cols = as.list(colSums(is.na(d))),
    classes = as.list(table(cl)),
    levels = lapply(d[fac], levels),
    ordered = as.list(sapply(d[fac], is.ordered)),
    sums = as.list(sapply(d[!sapply(d, is.factor) & !sapply(d, is.character)],
                          function(x) sum(x, na.rm = TRUE)))
  )
}
for (item in names(out)) {
  o <- out[[item]]
  cat(item, "\t", paste(o$dim, collapse = " "), "\t", o$na, "\n", sep = "")
  pairs <- function(x) paste(names(x), unlist(x), sep = "=", collapse = "|")
  cat("CLASSES\t", pairs(o$classes), "\n", sep = "")
  cat("NA\t", pairs(o$na_cols), "\n", sep = "")
  for (f in names(o$levels))
    cat("LEVELS\t", f, "\t", o$ordered[[f]], "\t", paste(o$levels[[f]], collapse = "|"),
        "\n", sep = "")
  for (f in names(o$sums)) cat("SUM\t", f, "\t", sprintf("%%.10g", o$sums[[f]]), "\n", sep = "")
}
"""


def _parse_r_summary(text):
    out, current = {}, None
    for line in text.splitlines():
        parts = line.split("\t")
        if parts[0] == "CLASSES":
            out[current]["classes"] = dict(kv.split("=") for kv in parts[1].split("|"))
        elif parts[0] == "NA":
            out[current]["na_cols"] = {k: int(v) for k, v in
                                       (kv.split("=") for kv in parts[1].split("|"))}
        elif parts[0] == "LEVELS":
            out[current]["levels"][parts[1]] = (parts[2] == "TRUE", parts[3].split("|"))
        elif parts[0] == "SUM":
            out[current]["sums"][parts[1]] = float(parts[2])
        elif line.strip():
            current = parts[0]
            out[current] = {"dim": tuple(map(int, parts[1].split())), "na": int(parts[2]),
                            "levels": {}, "sums": {}}
    return out


def test_classics_against_r_mlbench(mlbench):
    items = ", ".join(json.dumps(v[1]) for v in CLASSICS.values())
    summary = _parse_r_summary(mlbench(_R_SUMMARY % items))
    for name, (load, item, *_rest) in CLASSICS.items():
        r = summary[item]
        frame = load()
        target = frame.columns[-1]
        dropped = 1 if name == "breast_cancer" else 0  # the Id column
        assert frame.shape == (r["dim"][0], r["dim"][1] - dropped), name
        assert int(frame.isna().sum().sum()) == r["na"], name
        for column, count in r["na_cols"].items():
            if column in frame.columns:
                assert int(frame[column].isna().sum()) == count, (name, column)
        counts = {k: int(v) for k, v in r["classes"].items()}
        assert frame[target].value_counts().to_dict() == counts, name
        for column, (ordered, levels) in r["levels"].items():
            if column == target:
                assert sorted(frame[target].unique()) == sorted(levels), name
                continue
            dtype = frame[column].dtype
            assert list(dtype.categories) == levels, (name, column)
            assert dtype.ordered == ordered, (name, column)
        for column, total in r["sums"].items():
            assert frame[column].sum() == pytest.approx(total, rel=1e-12), (name, column)


def test_export_script_rewrites_the_bundled_files_byte_for_byte(mlbench, tmp_path):
    version = mlbench('cat(as.character(packageVersion("mlbench")))').strip()
    if not version.startswith("2.1"):
        pytest.skip(f"the bundled files come from mlbench 2.1; R has mlbench {version}")
    script = Path(_classics.__file__).parent / "data" / "export_classics.R"
    mlbench(f"commandArgs <- function(trailingOnly = FALSE) c({json.dumps(str(tmp_path))}); "
            f"source({json.dumps(str(script))})")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted([f"{n}.csv" for n in CLASSICS] + ["classics_levels.csv"])
    folder = resources.files("cartjit.datasets").joinpath("data")
    for filename in written:
        assert (tmp_path / filename).read_bytes() == folder.joinpath(filename).read_bytes(), \
            filename


# ----------------------------------------------------------------------- Pima (local)

def test_pima_from_r_and_from_an_exported_folder(mlbench, tmp_path, monkeypatch):
    monkeypatch.delenv("CARTJIT_DATA_DIR", raising=False)
    script = Path(_classics.__file__).parent / "data" / "export_classics.R"
    mlbench(f"commandArgs <- function(trailingOnly = FALSE) "
            f"c({json.dumps(str(tmp_path))}, 'pima'); source({json.dumps(str(script))})")
    from_r = ds.load_pima_diabetes()
    from_dir = ds.load_pima_diabetes(tmp_path)
    pd.testing.assert_frame_equal(from_r, from_dir)
    monkeypatch.setenv("CARTJIT_DATA_DIR", str(tmp_path))
    pd.testing.assert_frame_equal(ds.load_pima_diabetes(), from_dir)
    for frame, missing in ((from_dir, 652), (ds.load_pima_diabetes(zeros_as_missing=False), 0)):
        # Smith et al. (1988): 768 women, 268 with diabetes; mlbench: 652 zeros recoded
        assert frame.shape == (768, 9)
        assert frame["diabetes"].value_counts().to_dict() == {"neg": 500, "pos": 268}
        assert int(frame.isna().sum().sum()) == missing
    assert from_dir.isna().sum().to_dict() == {
        "pregnant": 0, "glucose": 5, "pressure": 35, "triceps": 227, "insulin": 374,
        "mass": 11, "pedigree": 0, "age": 0, "diabetes": 0}
    raw = ds.load_literature("pima_diabetes_raw").frame
    assert int((raw[["glucose", "pressure", "triceps", "insulin", "mass"]] == 0)
               .sum().sum()) == 652


def test_pima_without_a_source_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.delenv("CARTJIT_DATA_DIR", raising=False)
    monkeypatch.setattr(_classics.shutil, "which", lambda name: None)
    with pytest.raises(FileNotFoundError, match=r"not bundled.*export_classics\.R DIR "
                                                r"pima.*CARTJIT_DATA_DIR"):
        ds.load_pima_diabetes()
    with pytest.raises(FileNotFoundError, match=r"^path: no file"):
        ds.load_pima_diabetes(tmp_path / "nothing.csv")
    with pytest.raises(FileNotFoundError, match=r"pima_indians_diabetes_raw\.csv"):
        ds.load_pima_diabetes(tmp_path, zeros_as_missing=False)
    with pytest.raises(TypeError, match=r"^path must be a file or folder path"):
        ds.load_pima_diabetes(3)
    bad = tmp_path / "pima_indians_diabetes.csv"
    bad.write_text('"a","b"\n1,2\n')
    with pytest.raises(ValueError, match=r"expected 768 rows with the columns"):
        ds.load_pima_diabetes(tmp_path)


# ---------------------------------------------------------------------- heart (local)

def _fake_cleveland(rng, n=303):
    """A file in the layout of UCI's processed.cleveland.data (values made up)."""
    rows = []
    for i in range(n):
        ca = "?" if i in (10, 20, 30, 40) else f"{rng.integers(0, 4)}.0"
        thal = "?" if i in (50, 60) else f"{rng.choice([3, 6, 7])}.0"
        rows.append(",".join([
            f"{rng.integers(29, 78)}.0", f"{rng.integers(0, 2)}.0",
            f"{rng.integers(1, 5)}.0", f"{rng.integers(94, 201)}.0",
            f"{rng.integers(126, 565)}.0", f"{rng.integers(0, 2)}.0",
            f"{rng.integers(0, 3)}.0", f"{rng.integers(71, 203)}.0",
            f"{rng.integers(0, 2)}.0", f"{rng.integers(0, 63) / 10:.1f}",
            f"{rng.integers(1, 4)}.0", ca, thal, f"{rng.integers(0, 5)}",
        ]))
    return "\n".join(rows) + "\n"


def test_heart_reads_uci_layout(tmp_path, monkeypatch):
    monkeypatch.delenv("CARTJIT_DATA_DIR", raising=False)
    path = tmp_path / "processed.cleveland.data"
    path.write_text(_fake_cleveland(np.random.default_rng(0)))
    frame = ds.load_heart(path)
    assert frame.shape == (303, 14) and frame.columns[-1] == "disease"
    raw = pd.read_csv(path, header=None)
    expected = np.where(raw[13] > 0, "present", "absent")
    np.testing.assert_array_equal(frame["disease"].to_numpy(dtype=str), expected)
    assert int(frame["ca"].isna().sum()) == 4 and int(frame["thal"].isna().sum()) == 2
    assert list(frame["thal"].cat.categories) == ["3", "6", "7"]
    assert list(frame["cp"].cat.categories) == ["1", "2", "3", "4"]
    assert frame["age"].dtype == np.float64
    multi = ds.load_heart(tmp_path, binary=False)
    assert multi.columns[-1] == "num" and multi["num"].tolist() == raw[13].tolist()
    monkeypatch.setenv("CARTJIT_DATA_DIR", str(tmp_path))
    pd.testing.assert_frame_equal(ds.load_heart(), frame)
    assert ds.load_literature("heart").frame.shape == (303, 14)


def test_heart_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("CARTJIT_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"processed\.cleveland\.data from "
                                                r"https://archive\.ics\.uci\.edu"):
        ds.load_heart()
    short = tmp_path / "processed.cleveland.data"
    short.write_text(_fake_cleveland(np.random.default_rng(1), n=20))
    with pytest.raises(ValueError, match=r"expected UCI's processed\.cleveland\.data, 303 "
                                         r"rows of 14 comma-separated values, got 20 rows"):
        ds.load_heart(short)
    lines = _fake_cleveland(np.random.default_rng(2)).splitlines()
    fields = lines[0].split(",")
    fields[2] = "9.0"  # chest pain type: 1-4
    short.write_text("\n".join([",".join(fields)] + lines[1:]) + "\n")
    with pytest.raises(ValueError, match=r"column 'cp' holds a code outside "
                                         r"\['1', '2', '3', '4'\]"):
        ds.load_heart(short)
    fields[2], fields[0] = "1.0", "old"
    short.write_text("\n".join([",".join(fields)] + lines[1:]) + "\n")
    with pytest.raises(ValueError, match=r"column 'age' is not numeric"):
        ds.load_heart(short)
    with pytest.raises(TypeError, match=r"^binary must be True or False"):
        ds.load_heart(short, binary="no")


def test_level_table_damage_is_reported():
    levels = {"x": (False, ("a", "b"))}
    with pytest.raises(ValueError, match=r"column 'x' holds 'c', which is not one of R's "
                                         r"levels \['a', 'b'\]"):
        _classics._parse_r_csv(io.StringIO('"x","y"\n"a",1\n"c",2\n'), levels, "test")
    frame = _classics._parse_r_csv(io.StringIO('"x","y"\n"a",1\nNA,NA\n'), levels, "t")
    assert frame["x"].isna().tolist() == [False, True]
    assert np.isnan(frame["y"].iloc[1])
