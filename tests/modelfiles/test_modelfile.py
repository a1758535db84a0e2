"""cartjit.save / cartjit.load: the round trip of every estimator kind, atomic writes,
and the errors that name what is wrong in a damaged or edited file."""
from __future__ import annotations

import io
import json
import os
import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest

import cartjit
from cartjit import ModelFileError, load, save
from cartjit._modelfile import FORMAT_VERSION
from cartjit.engine.tree import Tree
from cartjit.export import export_text

from references.modelfiles import (array_of, fitted_estimators, meta_of, read_members, with_array,
                                   with_meta, zip_members)


@pytest.fixture(scope="module")
def estimators():
    return fitted_estimators()


@pytest.fixture(scope="module")
def saved(estimators, tmp_path_factory):
    """{name: path of the saved model file}."""
    directory = tmp_path_factory.mktemp("models")
    return {name: save(est, directory / f"{name}.cartjit")
            for name, (est, _) in estimators.items()}


def same_tree(a: Tree, b: Tree):
    for name in Tree._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)  # NaN equals NaN here
        assert x.flags.c_contiguous and x.flags.writeable, name


def check_same_estimator(est, loaded, X):
    assert type(loaded) is type(est)
    assert sorted(vars(loaded)) == sorted(vars(est))  # every fitted attribute is back
    assert repr(loaded) == repr(est)
    same_tree(loaded.tree_, est.tree_)
    same_tree(loaded.tree_max_, est.tree_max_)
    np.testing.assert_array_equal(loaded.apply(X), est.apply(X))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    if hasattr(est, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
        np.testing.assert_array_equal(loaded.classes_, est.classes_)
        assert loaded.classes_.dtype == est.classes_.dtype
        for name in ("priors_", "cost_", "class_weight_totals_"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(est, name))
    assert export_text(loaded, show_alpha=True) == export_text(est, show_alpha=True)
    pd.testing.assert_series_equal(loaded.variable_importance_, est.variable_importance_)
    np.testing.assert_array_equal(loaded.is_categorical_, est.is_categorical_)
    for a, b in zip(loaded.categories_, est.categories_):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
    if hasattr(est, "feature_names_in_"):
        np.testing.assert_array_equal(loaded.feature_names_in_, est.feature_names_in_)
    if hasattr(est, "test_results_"):
        pd.testing.assert_frame_equal(loaded.test_results_, est.test_results_)
        assert (loaded.alpha_, loaded.best_index_) == (est.alpha_, est.best_index_)
    pd.testing.assert_frame_equal(loaded.cost_complexity_path(), est.cost_complexity_path())
    if hasattr(est, "cv_results_"):
        pd.testing.assert_frame_equal(loaded.cv_results_, est.cv_results_)
        for name in ("cv_risk_repeats_", "cv_se_repeats_", "folds_"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(est, name))
        for name in ("alpha_", "best_index_", "n_folds_", "n_repeats_"):
            assert getattr(loaded, name) == getattr(est, name)
        for name in ("cv_predictions_", "cv_proba_"):
            assert hasattr(loaded, name) == hasattr(est, name)
            if hasattr(est, name):
                a, b = getattr(loaded, name), getattr(est, name)
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
        assert len(loaded.fold_alphas_) == len(est.fold_alphas_)
        for rep_a, rep_b in zip(loaded.fold_alphas_, est.fold_alphas_):
            assert len(rep_a) == len(rep_b)
            for a, b in zip(rep_a, rep_b):
                np.testing.assert_array_equal(a, b)


NAMES = ["classifier-numeric", "classifier-pruned", "classifier-golf",
         "classifier-surrogates", "classifier-cv-categorical", "classifier-cv-priors",
         "regressor-numeric", "regressor-surrogates", "regressor-cv",
         "regressor-cv-surrogates"]


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(estimators, saved, name):
    est, X = estimators[name]
    check_same_estimator(est, load(saved[name]), X)


def _xpred_and_test_sample():
    """CV estimators keeping their per-case predictions, and a tree pruned by a test
    sample: attributes that exist only with those options."""
    from cartjit.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    holes = X.copy()
    holes.iloc[::7, 2] = np.nan
    out = {
        "cv-predictions": (cartjit.CARTClassifierCV(cv=5, cv_predictions=True,
                                                    random_state=1).fit(X, y), X),
        "cv-proba-cp": (cartjit.CARTClassifierCV(cv=4, cv_predictions="proba", cp=0.02,
                                                 random_state=2).fit(holes, y), holes),
        "regressor-cv-predictions": (cartjit.CARTRegressorCV(
            cv=5, cv_predictions=True, random_state=3).fit(X.iloc[:, :3], X.iloc[:, 3]),
            X.iloc[:, :3]),
    }
    for name, est in (("test-sample", cartjit.CARTClassifier()),
                      ("regressor-test-sample", cartjit.CARTRegressor())):
        target = y if name == "test-sample" else X.iloc[:, 3]
        features = X if name == "test-sample" else X.iloc[:, :3]
        est.fit(features.iloc[::2], target[::2])
        est.prune_by_test_sample(features.iloc[1::2], target[1::2])
        out[name] = (est, features)
    return out


def test_round_trip_of_cv_predictions_and_test_sample_choice(tmp_path):
    for name, (est, X) in _xpred_and_test_sample().items():
        assert hasattr(est, "cv_predictions_") or hasattr(est, "test_results_"), name
        check_same_estimator(est, load(save(est, tmp_path / f"{name}.cartjit")), X)


def test_edited_cv_predictions_are_refused(tmp_path):
    est, _ = _xpred_and_test_sample()["cv-proba-cp"]
    members = read_members(save(est, tmp_path / "m.cartjit"))
    pred = array_of(members["cv_predictions.npy"])
    bad = pred.copy()
    bad[0, 0] = 3.0  # iris has classes 0, 1, 2
    assert "class indices in [-1, 3)" in load_error(tmp_path,
                                                     with_array(members, "cv_predictions.npy", bad))
    assert "cv_predictions must have shape" in load_error(
        tmp_path, with_array(members, "cv_predictions.npy", pred[:, :1].copy()))
    proba = array_of(members["cv_proba.npy"]).copy()
    proba[1, 0, 0] = 1.5
    assert "probabilities in [0, 1]" in load_error(tmp_path,
                                                   with_array(members, "cv_proba.npy", proba))
    meta = meta_of(members)
    meta["cv"]["predictions"] = None  # the members are there but the metadata says none
    assert "unexpected member 'cv_predictions.npy'" in load_error(tmp_path,
                                                              with_meta(members, meta))


def test_round_trip_of_every_feature_encoding(tmp_path):
    # levels of every kind a column can give: ints, floats, bools, strings (object,
    # pandas string, category), an ordered category (ordinal), a listed integer column
    rng = np.random.default_rng(3)
    n = 80
    frame = pd.DataFrame({
        "icat": pd.Categorical(rng.integers(0, 4, n)),
        "fcat": pd.Categorical(rng.choice([0.5, 1.5, 2.5], n)),
        "b": rng.random(n) > 0.5,
        "s": pd.Series(rng.choice(["a", "b", "c"], n), dtype="string"),
        "o": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                            categories=["lo", "mid", "hi"], ordered=True),
        "num": rng.random(n),
        "listed": rng.integers(0, 3, n),
    })
    y = rng.integers(0, 3, n) * 1.5 + frame["num"].to_numpy()
    est = cartjit.CARTRegressor(categorical_features=["icat", "fcat", "b", "s", "listed"],
                                min_samples_leaf=3).fit(frame, y)
    kinds = est._encoding.kind.tolist()
    assert kinds == [1, 1, 1, 1, 2, 0, 1]  # nominal except o (ordinal) and num
    loaded = load(save(est, tmp_path / "m.cartjit"))
    assert loaded._encoding.family == est._encoding.family
    np.testing.assert_array_equal(loaded._encoding.kind, est._encoding.kind)
    check_same_estimator(est, loaded, frame)


def test_the_fixtures_cover_subset_splits_and_surrogates(estimators):
    kinds = {name: (est.tree_max_.has_subset_splits, est.tree_max_.has_surrogates)
             for name, (est, _) in estimators.items()}
    assert kinds["classifier-surrogates"] == (True, True)
    assert kinds["regressor-surrogates"] == (True, True)
    assert kinds["classifier-cv-categorical"][0]
    assert sorted(NAMES) == sorted(estimators)


def test_loaded_estimator_refits_and_pickles(estimators, saved):
    est, X = estimators["classifier-cv-priors"]
    loaded = load(saved["classifier-cv-priors"])
    np.testing.assert_array_equal(loaded.get_params()["cost"], est.get_params()["cost"])
    y = est.classes_[np.argmax(est.predict_proba(X), axis=1)]
    again = pickle.loads(pickle.dumps(loaded))
    check_same_estimator(est, again, X)
    refit = loaded.fit(X, y)  # the parameters came back usable
    assert refit.tree_.n_nodes >= 1


def test_pickle_still_works(estimators):
    for name, (est, X) in estimators.items():
        check_same_estimator(est, pickle.loads(pickle.dumps(est)), X)


def test_same_model_same_bytes(estimators, tmp_path):
    est, _ = estimators["classifier-surrogates"]
    a = save(est, tmp_path / "a.cartjit").read_bytes()
    b = save(est, tmp_path / "b.cartjit").read_bytes()
    assert a == b


def test_an_unpruned_tree_is_stored_once(estimators, saved):
    for name, (est, _) in estimators.items():
        members = read_members(saved[name])
        loaded = load(saved[name])
        same = est.tree_ is est.tree_max_
        assert meta_of(members)["tree_is_tree_max"] == same
        assert ("tree/left.npy" in members) == (not same)
        assert (loaded.tree_ is loaded.tree_max_) == same


def test_the_file_is_a_zip_of_npy_members_and_json(saved):
    members = read_members(saved["classifier-cv-categorical"])
    meta = meta_of(members)
    assert meta["format"] == "cartjit-model" and meta["format_version"] == 1
    assert meta["estimator"] == "CARTClassifierCV"
    assert meta["cartjit_version"] == cartjit.__version__
    assert meta["classes"] == {"dtype": "str", "values": ["no", "yes"]}
    features = {f["kind"] for f in meta["features"]}
    assert features == {"nominal", "numeric"}
    assert array_of(members["tree/feature.npy"]).dtype == np.int32
    assert array_of(members["tree/level_sets.npy"]).dtype == np.uint64
    with zipfile.ZipFile(saved["classifier-cv-categorical"]) as zf:
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}
    # np.load reads the arrays too (without pickle): the .npz layout
    with np.load(saved["classifier-cv-categorical"], allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["tree/left"], array_of(members["tree/left.npy"]))


def test_save_refuses_to_overwrite(estimators, tmp_path):
    est, _ = estimators["classifier-numeric"]
    path = tmp_path / "m.cartjit"
    assert save(est, str(path)) == path
    before = path.read_bytes()
    other, _ = estimators["regressor-numeric"]
    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True"):
        save(other, path)
    assert path.read_bytes() == before
    save(other, path, overwrite=True)
    assert type(load(path)).__name__ == "CARTRegressor"
    assert sorted(os.listdir(tmp_path)) == ["m.cartjit"]  # no temporary file left


def test_failed_write_leaves_nothing(estimators, tmp_path, monkeypatch):
    est, _ = estimators["classifier-numeric"]
    path = tmp_path / "m.cartjit"
    path.write_bytes(b"old")

    def boom(fd):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        save(est, path, overwrite=True)
    assert path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["m.cartjit"]


def test_save_bad_arguments(estimators, tmp_path):
    est, _ = estimators["classifier-numeric"]
    with pytest.raises(TypeError, match="estimator must be a fitted"):
        save("tree", tmp_path / "m.cartjit")
    with pytest.raises(cartjit.NotFittedError):
        save(cartjit.CARTClassifier(), tmp_path / "m.cartjit")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save(est, tmp_path / "no" / "m.cartjit")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        save(est, tmp_path, overwrite=True)
    with pytest.raises(TypeError, match="path must be"):
        save(est, 3)
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        save(est, tmp_path / "m.cartjit", overwrite="yes")


def test_splitter_cv_is_saved_as_its_fold_ids(tmp_path):
    sklearn = pytest.importorskip("sklearn.model_selection")
    X, y = cartjit.datasets.load_iris(return_X_y=True)
    est = cartjit.CARTClassifierCV(cv=sklearn.StratifiedKFold(5)).fit(X, y)
    loaded = load(save(est, tmp_path / "m.cartjit"))
    np.testing.assert_array_equal(loaded.cv, est.folds_[0])
    refit = cartjit.CARTClassifierCV(**loaded.get_params()).fit(X, y)
    pd.testing.assert_frame_equal(refit.cv_results_, est.cv_results_)


def test_load_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "absent.cartjit")
    with pytest.raises(IsADirectoryError):
        load(tmp_path)


# --------------------------------------------------------------------------- errors

def rewrite(tmp_path, members, name="edited.cartjit"):
    path = tmp_path / name
    path.write_bytes(zip_members(members))
    return path


@pytest.fixture()
def members(saved):
    return read_members(saved["classifier-surrogates"])


def load_error(tmp_path, members):
    with pytest.raises(ModelFileError) as info:
        load(rewrite(tmp_path, members))
    return str(info.value)


def test_unchanged_rewrite_loads(tmp_path, members, estimators):
    est, X = estimators["classifier-surrogates"]
    check_same_estimator(est, load(rewrite(tmp_path, members)), X)


def test_newer_format_says_so(tmp_path, members):
    meta = meta_of(members)
    meta["format_version"] = FORMAT_VERSION + 1
    meta["new_key"] = "anything"
    message = load_error(tmp_path, with_meta(members, meta))
    assert f"written by a newer cartjit 0.1.0 (format {FORMAT_VERSION + 1}); this one " \
           f"reads up to {FORMAT_VERSION}" in message


@pytest.mark.parametrize("edit, expected", [
    (lambda m: m.update(estimator="RandomForest"), "unknown estimator class 'RandomForest'"),
    (lambda m: m.update(format="something"), "not a cartjit model file"),
    (lambda m: m.pop("classes"), "lacks the key 'classes'"),
    (lambda m: m.update(extra=1), "unexpected key 'extra'"),
    (lambda m: m.update(n_features_in=2), "feature_names_in must be null or a list of 2"),
    (lambda m: m.update(n_features_in="5"), "n_features_in must be an integer"),
    (lambda m: m["params"].update(criterion="bogus"), "a saved parameter is invalid"),
    (lambda m: m["params"].pop("max_depth"), "params lacks the key 'max_depth'"),
    (lambda m: m["params"].update(max_depth={"ndarray": [[1], [2, 3]], "dtype": "int64"}),
     "ragged"),
    (lambda m: m["params"].update(cost={"ndarray": [1], "dtype": "object"}),
     "array dtype 'object' is not allowed"),
    (lambda m: m["classes"].update(values=["no"]), "classes has 1 labels"),
    (lambda m: m["classes"].update(values=["no", "no"]), "values must be distinct"),
    (lambda m: m["feature_names_in"].pop(), "feature_names_in must be null or a list of 5"),
    (lambda m: m["features"][0]["levels"]["values"].pop(), "beyond the feature's levels"),
    (lambda m: m["features"][0].update(kind="numeric", levels=None), "not categorical"),
    (lambda m: m["features"][3].update(kind="nominal", levels={"dtype": "float64",
                                                               "values": [1.0, 2.0]}),
     "categorical feature is split by a threshold"),
    (lambda m: m.update(use_surrogate=3), "use_surrogate must lie in [0, 2]"),
])
def test_edited_metadata(tmp_path, members, edit, expected):
    meta = meta_of(members)
    edit(meta)
    assert expected in load_error(tmp_path, with_meta(members, meta))


def test_metadata_not_json(tmp_path, members):
    edited = dict(members, **{"metadata.json": b"{\"format\": NaN}"})
    assert "not valid JSON" in load_error(tmp_path, edited)
    edited = dict(members, **{"metadata.json": b"[" * 100000 + b"]" * 100000})
    message = load_error(tmp_path, edited)
    assert "nested" in message or "JSON" in message


def test_missing_and_extra_members(tmp_path, members):
    edited = dict(members)
    del edited["tree_max/left.npy"]
    assert "member 'tree_max/left.npy' is missing" in load_error(tmp_path, edited)
    edited = dict(members, **{"evil.pkl": b"cos\nsystem\n"})
    assert "unexpected member 'evil.pkl'" in load_error(tmp_path, edited)
    edited = dict(members)
    del edited["metadata.json"]
    assert "no metadata.json" in load_error(tmp_path, edited)


def arr(members, name):
    return array_of(members[name]).copy()


def test_wrong_dtype_and_shape(tmp_path, members):
    left = arr(members, "tree_max/left.npy")
    message = load_error(tmp_path, with_array(members, "tree_max/left.npy", left.astype(np.int64)))
    assert "member 'tree_max/left.npy' has dtype <i8; expected <i4" in message
    message = load_error(tmp_path, with_array(members, "tree_max/left.npy", left[:-1]))
    assert "tree_max/left has" in message and "rows" in message
    message = load_error(tmp_path, with_array(members, "tree_max/value.npy",
                                              arr(members, "tree_max/value.npy")[:, 0]))
    assert "tree_max/value must be 2-d" in message
    message = load_error(tmp_path, with_array(members, "priors.npy", np.array([1.0])))
    assert "priors, class_weight_totals and cost must have shapes" in message


def test_object_array_is_refused_without_unpickling(tmp_path, members):
    # an object-dtype .npy member (a pickle inside): its header is refused, its data
    # never read
    header = {"descr": "|O", "fortran_order": False, "shape": (3,)}
    raw = np.lib.format.magic(1, 0)
    head = repr(header).encode() + b" " * 20 + b"\n"
    raw += len(head).to_bytes(2, "little") + head + pickle.dumps([1, 2, 3])
    message = load_error(tmp_path, dict(members, **{"tree_max/left.npy": raw}))
    assert "has dtype |O; expected <i4" in message


@pytest.mark.parametrize("node_edit, expected", [
    (lambda a: a["tree_max/left.npy"].__setitem__(1, 0), "children must have larger ids"),
    (lambda a: a["tree_max/left.npy"].__setitem__(0, 10**6), "children must have larger ids"),
    (lambda a: a["tree_max/feature.npy"].__setitem__(0, 5), "must lie in [0, 5)"),
    (lambda a: a["tree_max/feature.npy"].__setitem__(0, -7), "must lie in [0, 5)"),
    (lambda a: a["tree_max/parent.npy"].__setitem__(2, 2), "parent must point back"),
    (lambda a: a["tree_max/value.npy"].__setitem__((3, 0), np.nan), "tree_max/value must be finite"),
    (lambda a: a["tree_max/weighted_n_node_samples.npy"].__setitem__(0, np.inf), "finite"),
    (lambda a: a["tree_max/n_surrogates.npy"].__setitem__(0, 10**9), "surrogate counts"),
    (lambda a: a["tree_max/surrogate_start.npy"].__setitem__(0, -1), "surrogate rows"),
    (lambda a: a["tree_max/level_row.npy"].__setitem__(0, 10**6), "points past level_sets"),
    (lambda a: a["tree_max/label.npy"].__setitem__(0, 2), "label must be a class index"),
])
def test_edited_tree_arrays(tmp_path, members, node_edit, expected):
    arrays = {name: arr(members, name) for name in members if name.startswith("tree_max/")}
    node_edit(arrays)
    edited = dict(members)
    for name, value in arrays.items():
        edited = with_array(edited, name, value)
    assert expected in load_error(tmp_path, edited)


def test_nan_threshold_at_an_ordered_split(tmp_path, members):
    thr = arr(members, "tree_max/threshold.npy")
    ordered = np.flatnonzero(np.isfinite(thr))[0]
    thr[ordered] = np.nan
    message = load_error(tmp_path, with_array(members, "tree_max/threshold.npy", thr))
    assert "finite thresholds" in message


def test_level_sets_shared_or_beyond_the_levels(tmp_path, members):
    rows = arr(members, "tree_max/level_row.npy")
    used = np.flatnonzero(rows >= 0)
    rows[used[1]] = rows[used[0]]
    message = load_error(tmp_path, with_array(members, "tree_max/level_row.npy", rows))
    assert "share a row of level_sets" in message
    sets = arr(members, "tree_max/level_sets.npy")
    sets[rows[used[0]], 0, 0] |= np.uint64(1) << np.uint64(40)  # level 40 of 4
    message = load_error(tmp_path, with_array(members, "tree_max/level_sets.npy", sets))
    assert "beyond the feature's levels" in message


def test_declared_sizes_must_match_the_bytes(tmp_path, members):
    raw = bytearray(members["tree_max/left.npy"])
    # the header declares 2**40 entries; the member holds the few it had
    text = raw[10:10 + int.from_bytes(raw[8:10], "little")].decode("latin1")
    n = array_of(bytes(raw)).shape[0]
    text = text.replace(f"({n},)", f"({2**40},)")
    new = bytes(raw[:8]) + len(text).to_bytes(2, "little") + text.encode("latin1") + \
        bytes(raw[10 + int.from_bytes(raw[8:10], "little"):])
    message = load_error(tmp_path, dict(members, **{"tree_max/left.npy": new}))
    assert f"declares shape ({2**40},)" in message


def zip_with_declared_size(members, name, size):
    """A model file whose directory entry for ``name`` declares ``size`` bytes."""
    data = bytearray(zip_members(members))
    pos = 0
    while True:
        pos = data.find(b"PK\x01\x02", pos)
        if pos < 0:
            raise AssertionError(name)
        name_len = int.from_bytes(data[pos + 28:pos + 30], "little")
        if data[pos + 46:pos + 46 + name_len].decode() == name:
            break
        pos += 4
    data[pos + 24:pos + 28] = size.to_bytes(4, "little")  # uncompressed size
    data[pos + 20:pos + 24] = size.to_bytes(4, "little")  # compressed size
    return bytes(data)


def test_zip_bomb_sizes_are_refused_before_reading(tmp_path, members):
    path = tmp_path / "bomb.cartjit"
    path.write_bytes(zip_with_declared_size(members, "tree_max/value.npy", 2**32 - 1))
    with pytest.raises(ModelFileError, match="more than the file's"):
        load(path)
    # a deflated member is refused whatever it declares
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path.write_bytes(buf.getvalue())
    with pytest.raises(ModelFileError, match="is compressed"):
        load(path)


def test_truncated_and_foreign_files(tmp_path, saved):
    data = saved["regressor-cv"].read_bytes()
    path = tmp_path / "cut.cartjit"
    for cut in (0, 10, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(ModelFileError):
            load(path)
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ModelFileError, match="not a zip archive"):
        load(path)
    flipped = bytearray(data)
    flipped[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(flipped))
    with pytest.raises(ModelFileError):
        load(path)


def test_cv_tables_are_checked(tmp_path, saved):
    members = read_members(saved["classifier-cv-priors"])
    meta = meta_of(members)
    meta["cv"]["best_index"] = 99
    assert "cv.best_index must lie in" in load_error(tmp_path, with_meta(members, meta))
    counts = array_of(members["fold_alpha_counts.npy"]).copy()
    counts[0, 0] += 1
    message = load_error(tmp_path, with_array(members, "fold_alpha_counts.npy", counts))
    assert "fold_alpha_counts" in message
    folds = array_of(members["folds.npy"]).copy()
    folds[0, 0] = 7
    assert "folds must be" in load_error(tmp_path, with_array(members, "folds.npy", folds))


def test_memory_limit_applies_to_the_file(saved, monkeypatch):
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "1K")
    with pytest.raises(ValueError, match="over the memory limit"):
        load(saved["classifier-numeric"])


def test_metadata_is_plain_json(saved):
    # no NaN or Infinity: any JSON reader takes it
    raw = read_members(saved["regressor-cv"])["metadata.json"].decode()
    json.loads(raw, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_file_written_before_compat_loads_as_the_exact_mode(estimators, saved, tmp_path):
    """Model files saved before the estimators had ``compat`` keep loading: their
    parameters lack it, and they were fitted by the exact (Breiman) rules."""
    for name, (est, _) in estimators.items():
        members = read_members(saved[name])
        meta = meta_of(members)
        assert meta["params"].pop("compat") == "breiman"
        path = tmp_path / f"{name}-old.cartjit"
        path.write_bytes(zip_members(with_meta(members, meta)))
        back = load(path)
        assert back.get_params()["compat"] == "breiman"
        same_tree(back.tree_, est.tree_)
