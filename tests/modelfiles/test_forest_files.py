"""Model files of the forests: a loaded forest is the saved one (bit-identical predictions,
OOB results, importances, trees), and a file whose columns contradict each other is
refused with a ModelFileError that says which."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from cartjit import ModelFileError, export_text, load, save
from cartjit import _modelfile as M
from cartjit.engine import forest as F

from references.modelfiles import (array_of, fitted_forests, meta_of, read_members,
                                   with_array, with_meta, zip_members)

OOB_ATTRIBUTES = ("oob_score_", "oob_error_", "oob_error_curve_", "oob_n_trees_",
                  "oob_decision_function_", "oob_confusion_", "oob_prediction_", "oob_rsq_",
                  "oob_importances_", "oob_importances_se_", "oob_importances_scaled_",
                  "oob_importances_per_tree_", "oob_importances_by_class_",
                  "oob_importances_by_class_scaled_")


@pytest.fixture(scope="module")
def forests():
    return fitted_forests()


@pytest.fixture(scope="module")
def saved(forests, tmp_path_factory):
    directory = tmp_path_factory.mktemp("forests")
    return {name: save(est, directory / f"{name}.cartjit")
            for name, (est, _, _) in forests.items()}


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object:  # labels: equal values, not equal pointers
        return b.dtype == object and a.shape == b.shape and a.tolist() == b.tolist()
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# --------------------------------------------------------------------------- round trip

NAMES = ("forest-classifier", "forest-regressor", "bagged-classifier", "bagged-regressor",
         "forest-cv-pruned", "forest-no-bootstrap")


@pytest.mark.parametrize("name", NAMES)
def test_a_loaded_forest_is_the_saved_one(forests, saved, name):
    est, X, y = forests[name]
    got = load(saved[name])
    assert type(got) is type(est)
    assert {k: str(v) for k, v in got.get_params().items()} == \
        {k: str(v) for k, v in est.get_params().items()}
    assert same(got.predict(X), est.predict(X))
    assert same(got.apply(X), est.apply(X))
    if hasattr(est, "predict_proba"):
        assert same(got.predict_proba(X), est.predict_proba(X))
        assert same(got.classes_, est.classes_)
    assert got.score(X, y) == est.score(X, y)
    for field in F.Forest._fields[:-1]:
        assert same(getattr(got.forest_, field), getattr(est.forest_, field)), field
    for field in got.forest_.routing._fields:
        a, b = getattr(got.forest_.routing, field), getattr(est.forest_.routing, field)
        assert same(a, b) if isinstance(a, np.ndarray) else a == b, field
    assert same(got.feature_importances_, est.feature_importances_)
    assert got.importance_table().equals(est.importance_table())
    for attr in ("tree_seeds_", "tree_alphas_", "max_features_", "max_samples_",
                 "n_features_in_", "is_categorical_") + OOB_ATTRIBUTES:
        assert hasattr(got, attr) == hasattr(est, attr), attr
        if hasattr(est, attr):
            assert same(getattr(got, attr), getattr(est, attr)), attr
    assert same(got.inbag_counts(), est.inbag_counts())
    k = est.n_estimators_ - 1
    assert export_text(got, tree=k) == export_text(est, tree=k)
    assert same(got.estimators_[k].tree_.value, est.estimators_[k].tree_.value)
    assert same(got.estimators_[0].predict(X), est.estimators_[0].predict(X))


def test_the_same_forest_gives_the_same_bytes(forests, saved, tmp_path):
    """Saving a loaded forest writes the file it was read from, byte for byte."""
    for name, path in saved.items():
        again = save(load(path), tmp_path / f"{name}.cartjit")
        assert again.read_bytes() == path.read_bytes(), name


def test_each_tree_is_stored_once_as_t_max(forests, saved):
    """The file holds T_max of every tree (the pruned trees and the flat forest_ are
    derived on load), in flat columns with offsets, and no per-tree member."""
    est, _, _ = forests["bagged-regressor"]
    members = read_members(saved["bagged-regressor"])
    roots = array_of(members["forest/roots.npy"])
    assert same(roots, np.concatenate([[0], np.cumsum(
        [t.tree_max_.n_nodes for t in est.estimators_])]).astype(np.int64))
    left = array_of(members["forest/left.npy"])
    assert left.shape == (roots[-1],)
    pruned = sum(t.tree_.n_nodes for t in est.estimators_)
    assert pruned < roots[-1]  # ccp_alpha pruned the trees: T_max is what is stored
    assert not any(n.startswith(("tree/", "tree_max/")) for n in members)
    meta = meta_of(members)
    assert meta["format_version"] == M.FOREST_FORMAT_VERSION == 2
    assert meta["n_trees"] == 5 and meta["oob"] is None


def test_a_forest_file_is_refused_by_name_where_a_model_is_overwritten(forests, saved):
    est, _, _ = forests["forest-classifier"]
    before = saved["forest-classifier"].read_bytes()
    with pytest.raises(FileExistsError, match="already exists"):
        save(est, saved["forest-classifier"])
    assert saved["forest-classifier"].read_bytes() == before


def test_an_unfitted_forest_is_not_saved(tmp_path):
    from cartjit import RandomForestClassifier
    from cartjit import NotFittedError

    with pytest.raises(NotFittedError):
        save(RandomForestClassifier(), tmp_path / "x.cartjit")
    assert not (tmp_path / "x.cartjit").exists()


def test_tree_files_keep_format_1(tmp_path):
    from cartjit import CARTClassifier
    from cartjit.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    path = save(CARTClassifier(max_depth=2).fit(X, y), tmp_path / "t.cartjit")
    assert meta_of(read_members(path))["format_version"] == 1


# --------------------------------------------------------------------------- contradictions

def edited(saved, name, tmp_path, change):
    """Write the file of ``name`` with ``change(members)`` applied; return its path."""
    members = read_members(saved[name])
    path = tmp_path / "edited.cartjit"
    path.write_bytes(zip_members(change(members)))
    return path


def array_edit(member, edit):
    def change(members):
        arr = array_of(members[member]).copy()
        edit(arr)
        return with_array(members, member, arr)
    return change


def meta_edit(edit):
    def change(members):
        meta = meta_of(members)
        edit(meta)
        return with_meta(members, meta)
    return change


def set_item(arr, index, value):
    arr[index] = value


CONTRADICTIONS = {
    "roots not rising": ("forest-classifier", "forest/roots.npy",
                         lambda a: set_item(a, 2, a[1]), "forest/roots must be"),
    "roots past the nodes": ("forest-classifier", "forest/roots.npy",
                             lambda a: set_item(a, -1, a[-1] + 1), "forest/roots must be"),
    "table offsets": ("forest-regressor", "forest/surrogate_rows.npy",
                      lambda a: set_item(a, 1, a[-1] + 5), "forest/surrogate_rows must be"),
    "child out of its tree": ("forest-classifier", "forest/left.npy",
                              lambda a: set_item(a, np.flatnonzero(a > 0)[0], 10**6),
                              "forest tree 0"),
    "child before its parent": ("bagged-regressor", "forest/left.npy",
                                lambda a: set_item(a, 0, 0), "forest tree 0"),
    "seed": ("forest-classifier", "forest/seeds.npy", lambda a: set_item(a, 3, a[3] + 1),
             "forest/seeds must be the feature seeds"),
    "alpha": ("bagged-regressor", "forest/alphas.npy", lambda a: set_item(a, 1, 0.5),
              "forest tree 1: forest/alphas"),
    "alpha of an unpruned tree": ("forest-classifier", "forest/alphas.npy",
                                  lambda a: set_item(a, 0, 0.0), "forest tree 0: forest/alphas"),
    "priors": ("forest-classifier", "forest/priors.npy",
               lambda a: set_item(a, (2, 0), a[2, 0] * 0.5), "forest tree 2: forest/priors"),
    "class totals": ("forest-classifier", "forest/class_totals.npy",
                     lambda a: set_item(a, (1, 1), a[1, 1] + 1.0), "forest tree 1"),
    "class counts": ("forest-classifier", "forest/value.npy",
                     lambda a: set_item(a, (0, 0), a[0, 0] + 1.0),
                     "forest tree 0: class counts in value must sum"),
    "regression mean": ("forest-regressor", "forest/value.npy",
                        lambda a: set_item(a, (0, 0), a[0, 0] + 0.25), "forest tree 0/value"),
    "root cases": ("forest-classifier", "forest/n_node_samples.npy",
                   lambda a: set_item(a, 0, a[0] + 1), "forest tree 0"),
    "risk": ("forest-regressor", "forest/risk.npy", lambda a: set_item(a, 0, a[0] * 2),
             "forest tree 0/risk"),
    "oob counts": ("forest-classifier", "oob/n_trees.npy", lambda a: set_item(a, 0, a[0] + 1),
                   "oob/n_trees must count"),
    "oob curve": ("forest-regressor", "oob/error_curve.npy",
                  lambda a: set_item(a, -1, a[-1] + 1.0), "oob.error must be the last"),
    "oob decision": ("bagged-classifier", "oob/decision_function.npy",
                     lambda a: set_item(a, (np.flatnonzero(~np.isnan(a[:, 0]))[0], 0), 0.99),
                     "oob/decision_function must hold probabilities"),
    "oob confusion": ("forest-classifier", "oob/confusion.npy",
                      lambda a: set_item(a, (0, 0), a[0, 0] + 3.0),
                      "oob.score must be the accuracy"),
    "importances": ("forest-classifier", "oob/importances.npy",
                    lambda a: set_item(a, 0, a[0] + 0.01), "oob/importances must be"),
    "importance se": ("forest-regressor", "oob/importances_se.npy",
                      lambda a: set_item(a, 1, a[1] * 1.5), "oob/importances_se must be"),
    "rows": ("forest-regressor", "rows.npy", lambda a: set_item(a, np.flatnonzero(~a)[0], True),
             "rows must mark"),
}


@pytest.mark.parametrize("case", list(CONTRADICTIONS))
def test_contradicting_columns_are_refused(saved, tmp_path, case):
    name, member, edit, message = CONTRADICTIONS[case]
    path = edited(saved, name, tmp_path, array_edit(member, edit))
    with pytest.raises(ModelFileError, match=message.replace("(", r"\(")):
        load(path)


META_CONTRADICTIONS = {
    "n_estimators": ("forest-classifier",
                     lambda m: m["params"].update(n_estimators=13), "n_trees is 12"),
    "n_trees": ("forest-classifier", lambda m: m.update(n_trees=11), "n_trees is 11 but"),
    "max_features": ("forest-classifier", lambda m: m.update(max_features=4),
                     "max_features and max_samples must be"),
    "max_samples": ("bagged-classifier", lambda m: m.update(max_samples=3),
                    "max_features and max_samples must be"),
    "random_state": ("forest-classifier", lambda m: m["params"].update(random_state=6),
                     "forest tree 0: its root holds|forest/seeds"),
    "oob dropped": ("forest-classifier", lambda m: m["params"].update(oob_score=False,
                                                                       oob_importance=False),
                    "the file holds OOB results"),
    "oob score": ("forest-regressor", lambda m: m["oob"].update(score=float("nan")),
                  "oob.score|not JSON"),
    "priors setting": ("forest-classifier", lambda m: m.update(priors="equal"),
                       "forest/priors must be the priors"),
    "voting": ("bagged-classifier", lambda m: m["params"].update(voting="ballot"),
               "a saved parameter is invalid"),
    "format 1": ("forest-classifier", lambda m: m.update(format_version=1),
                 "a forest file has format 2"),
    "newer": ("forest-classifier", lambda m: m.update(format_version=3),
              "written by a newer cartjit"),
    "n_samples": ("forest-no-bootstrap", lambda m: m.update(n_samples=2**41, n_rows=2**41),
                  "n_samples must lie in"),
    "huge sample": ("forest-no-bootstrap", lambda m: m.update(
        n_samples=2**40 - 1, n_rows=2**40 - 1, max_samples=2**40 - 1),
                    "memory limit|its root holds"),
    "extra key": ("bagged-regressor", lambda m: m.update(trees=[]), "unexpected key"),
}


@pytest.mark.parametrize("case", list(META_CONTRADICTIONS))
def test_contradicting_metadata_is_refused(saved, tmp_path, case):
    name, edit, message = META_CONTRADICTIONS[case]
    path = edited(saved, name, tmp_path, meta_edit(edit))
    with pytest.raises(ModelFileError, match=message):
        load(path)


def test_a_missing_or_extra_member_is_refused(saved, tmp_path):
    path = edited(saved, "forest-regressor", tmp_path,
                  lambda m: {k: v for k, v in m.items() if k != "oob/prediction.npy"})
    with pytest.raises(ModelFileError, match="'oob/prediction.npy' is missing"):
        load(path)
    path = edited(saved, "bagged-regressor", tmp_path,
                  lambda m: dict(m, **{"tree/left.npy": m["forest/left.npy"]}))
    with pytest.raises(ModelFileError, match="unexpected member 'tree/left.npy'"):
        load(path)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_a_truncated_forest_file_is_refused(saved, tmp_path, fraction):
    data = saved["forest-classifier"].read_bytes()
    path = tmp_path / "cut.cartjit"
    path.write_bytes(data[:int(fraction * len(data))])
    with pytest.raises(ModelFileError):
        load(path)


def test_flipped_bytes_load_the_same_forest_or_are_refused(forests, saved, tmp_path):
    """Any one flipped byte, at 300 places: a ModelFileError, or a forest that still
    predicts (a byte of a zip header field that nothing reads)."""
    est, X, _ = forests["bagged-classifier"]
    data = bytearray(saved["bagged-classifier"].read_bytes())
    path = tmp_path / "flip.cartjit"
    loaded = 0
    for at in np.linspace(0, len(data) - 1, 300).astype(int):
        data[at] ^= 0x41
        path.write_bytes(bytes(data))
        data[at] ^= 0x41
        try:
            got = load(path)
        except ModelFileError:
            continue
        loaded += 1
        assert got.predict_proba(X).shape == (len(X), 2)
    assert loaded < 300


def test_the_flat_forest_is_derived_not_read(saved, tmp_path):
    """No member holds forest_'s probabilities: the class counts of the trees are the
    only values stored, and forest_.value is derived from them."""
    members = read_members(saved["forest-classifier"])
    value = array_of(members["forest/value.npy"])
    assert np.all(value == np.round(value))  # class counts, not probabilities
    assert value.max() > 1
    with zipfile.ZipFile(saved["forest-classifier"]) as zf:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    assert json.loads(members["metadata.json"])["estimator"] == "RandomForestClassifier"
