"""Model files are read strictly: the ``.npy`` headers by a grammar of cartjit's own
(damaged, garbage or crafted headers with a valid zip CRC end in
:class:`cartjit.ModelFileError` naming the file and the member, or in a correct load;
never in another exception), and every stored column that can be derived from others is
checked against its derivation (depths from the child links, the pruned tree from T_max)."""
from __future__ import annotations

import random

import numpy as np
import pytest

import cartjit
from cartjit import CARTClassifier, ModelFileError
from cartjit._modelfile import _NPY_HEADER
from cartjit.datasets import load_iris

from references.modelfiles import array_of, npy, read_members, with_array, zip_members


@pytest.fixture(scope="module")
def iris_file(tmp_path_factory):
    X, y = load_iris(return_X_y=True)
    est = CARTClassifier().fit(X.to_numpy(), y)
    path = tmp_path_factory.mktemp("npy") / "iris.cartjit"
    cartjit.save(est, path)
    return est, path, read_members(path)


def _write(tmp_path, members, name="edited.cartjit"):
    path = tmp_path / name
    path.write_bytes(zip_members(members))
    return path


def _with_member_bytes(members, name, raw):
    out = dict(members)
    out[name] = bytes(raw)
    return out


def _header_end(raw):
    return 10 + int.from_bytes(raw[8:10], "little")


def test_numpy_headers_match_the_grammar():
    for arr in (np.zeros(0, "<f8"), np.arange(17, dtype="<i4"), np.ones((3, 4)),
                np.zeros((2, 2, 3), "<u8"), np.array(5.0), np.zeros((0, 3), "|b1")):
        raw = npy(arr)
        assert _NPY_HEADER.fullmatch(raw[10:_header_end(raw)].decode("ascii"))


@pytest.mark.parametrize("edit, message", [
    (lambda h: h.replace(b"}", b" "), "header is damaged"),
    (lambda h: h.replace(b"'shape': (", b"'shape': [("), "header is damaged"),
    (lambda h: h.replace(b"False", b"Fals("), "header is damaged"),
    (lambda h: h.replace(b"'descr'", b"'descr\""), "header is damaged"),
    (lambda h: h.replace(b"<i4", b"<q9"), "names no dtype"),
    (lambda h: h.replace(b"{", b"\xff"), "not ASCII"),
    (lambda h: h.replace(b"'fortran_order': False", b"'fortran_order': 0    "),
     "header is damaged"),
    (lambda h: b"{" + b"(" * (len(h) - 2) + b"\n", "header is damaged"),
    (lambda h: h.replace(b"False, ", b"__import__('os').system('true'), "[:len(b"False, ")]),
     "header is damaged"),
])
def test_damaged_header_is_a_model_file_error(iris_file, tmp_path, edit, message):
    _, _, members = iris_file
    name = "tree_max/left.npy"
    raw = members[name]
    end = _header_end(raw)
    header = edit(raw[10:end])
    header = header[:end - 10].ljust(end - 10, b" ")
    path = _write(tmp_path, _with_member_bytes(members, name, raw[:10] + header + raw[end:]))
    with pytest.raises(ModelFileError) as err:
        cartjit.load(path)
    assert str(path) in str(err.value)
    assert name in str(err.value)
    assert message in str(err.value)


def test_header_length_and_version_are_checked(iris_file, tmp_path):
    _, _, members = iris_file
    name = "tree_max/right.npy"
    raw = bytearray(members[name])
    longer = raw[:8] + (60000).to_bytes(2, "little") + raw[10:]
    with pytest.raises(ModelFileError, match="header declares 60000 bytes"):
        cartjit.load(_write(tmp_path, _with_member_bytes(members, name, longer)))
    version = raw[:6] + b"\x02\x00" + raw[8:]
    with pytest.raises(ModelFileError, match="not a version 1.0"):
        cartjit.load(_write(tmp_path, _with_member_bytes(members, name, version)))
    with pytest.raises(ModelFileError, match="no magic"):
        cartjit.load(_write(tmp_path, _with_member_bytes(members, name, b"\x93NUMPX" + raw[6:])))


def test_random_header_damage_never_escapes(iris_file, tmp_path):
    """Bit flips, random bytes, punctuation and moved characters in the headers of random
    members (the zip rebuilt around them, so its CRCs are valid): each
    file either loads, predicting as the original does, or raises ModelFileError."""
    est, _, members = iris_file
    X = load_iris(return_X_y=True)[0].to_numpy()
    expected = est.predict_proba(X)
    names = [n for n in members if n.endswith(".npy")]
    rng = random.Random(20261129)
    outcomes = {"loaded": 0, "refused": 0}
    for trial in range(400):
        name = rng.choice(names)
        raw = bytearray(members[name])
        end = _header_end(raw)
        i = rng.randrange(0, end) if trial % 4 == 0 else rng.randrange(10, end)
        if trial % 4 == 0:
            raw[i] ^= 1 << rng.randrange(8)
        elif trial % 4 == 1:
            raw[i] = rng.randrange(256)
        elif trial % 4 == 2:
            raw[i] = rng.choice(b"(){}[]'\",:0123456789 \nTFx<>|=")
        else:  # a character moved: the header keeps its length, its text shifts
            del raw[i]
            raw.insert(rng.randrange(10, end), rng.choice(b" ,)}"))
        path = _write(tmp_path, _with_member_bytes(members, name, raw))
        try:
            loaded = cartjit.load(path)
        except ModelFileError as exc:
            assert str(path) in str(exc)
            outcomes["refused"] += 1
            continue
        outcomes["loaded"] += 1
        np.testing.assert_array_equal(loaded.predict_proba(X), expected)
    assert outcomes["refused"] > 300


@pytest.mark.parametrize("side", ["left", "right"])
def test_depths_must_follow_the_child_links(iris_file, tmp_path, side):
    _, _, members = iris_file
    left = array_of(members["tree_max/left.npy"])
    depth = array_of(members["tree_max/depth.npy"]).copy()
    internal = np.flatnonzero(left >= 0)
    child = left[internal[-1]] + (side == "right")
    depth[child] += 3
    path = _write(tmp_path, with_array(members, "tree_max/depth.npy", depth))
    with pytest.raises(ModelFileError, match="depth of a child"):
        cartjit.load(path)


@pytest.fixture(scope="module")
def pruned_file(tmp_path_factory):
    X, y = load_iris(return_X_y=True)
    est = CARTClassifier(ccp_alpha=0.01).fit(X.to_numpy(), y)
    assert est.tree_ is not est.tree_max_ and est.tree_.n_nodes < est.tree_max_.n_nodes
    path = tmp_path_factory.mktemp("pruned") / "pruned.cartjit"
    cartjit.save(est, path)
    return path, read_members(path)


def test_the_pruned_tree_is_checked_against_tree_max(pruned_file, tmp_path):
    path, members = pruned_file
    cartjit.load(path)  # as written: loads
    # the label of a leaf changed to another valid class: every invariant of a flat tree
    # still holds, but the tree is no longer T_max pruned
    label = array_of(members["tree/label.npy"]).copy()
    left = array_of(members["tree/left.npy"])
    leaf = int(np.flatnonzero(left < 0)[0])
    label[leaf] = (label[leaf] + 1) % 3
    with pytest.raises(ModelFileError, match="tree/label differs from tree_max pruned"):
        cartjit.load(_write(tmp_path, with_array(members, "tree/label.npy", label)))
    # T_max stored as the pruned tree is T(α) for an α below every stored α: it loads
    swapped = dict(members)
    for name in members:
        if name.startswith("tree/"):
            swapped[name] = members["tree_max/" + name[len("tree/"):]]
    loaded = cartjit.load(_write(tmp_path, swapped, "swapped.cartjit"))
    np.testing.assert_array_equal(loaded.tree_.left, loaded.tree_max_.left)


def test_a_tree_that_cuts_between_equal_alphas_is_refused(pruned_file, tmp_path):
    path, members = pruned_file
    alpha = array_of(members["tree_max/alpha.npy"]).copy()
    left = array_of(members["tree_max/left.npy"])
    internal = np.flatnonzero(left >= 0)
    # every split of T_max gets the same α: no α prunes to the stored tree's splits
    alpha[internal] = 1.0
    with pytest.raises(ModelFileError, match="not a pruned subtree"):
        cartjit.load(_write(tmp_path, with_array(members, "tree_max/alpha.npy", alpha)))


def _edit_classifier(members, edit):
    """The iris file with ``edit(arrays)`` applied to copies of its tree_max columns."""
    cols = {n: array_of(members[f"tree_max/{n}.npy"]).copy()
            for n in ("left", "value", "risk", "label", "n_node_samples")}
    edit(cols)
    out = dict(members)
    for n in ("value", "risk", "label"):
        out = with_array(out, f"tree_max/{n}.npy", cols[n])
    return out


def _swap_counts_at_root(cols):
    cols["value"][0, [0, 1]] = cols["value"][0, [1, 0]] + [1.0, -1.0]


def _raise_root_risk(cols):
    cols["risk"][0] *= 1.01


def _relabel_a_leaf(cols):
    leaf = np.flatnonzero((cols["left"] < 0) & (cols["n_node_samples"] > 5))[0]
    cols["label"][leaf] = (cols["label"][leaf] + 1) % cols["value"].shape[1]


@pytest.mark.parametrize("edit, message", [
    (_swap_counts_at_root, "sum of its children's class counts"),
    (_raise_root_risk, "least misclassification cost under the class counts"),
    (_relabel_a_leaf, "label must be a class of least misclassification cost"),
])
def test_derived_classification_columns_are_checked(iris_file, tmp_path, edit, message):
    _, _, members = iris_file
    path = _write(tmp_path, _edit_classifier(members, edit))
    with pytest.raises(ModelFileError, match=message) as err:
        cartjit.load(path)
    assert str(path) in str(err.value)


def test_root_counts_must_be_the_class_weight_totals(iris_file, tmp_path):
    _, _, members = iris_file
    totals = array_of(members["class_weight_totals.npy"]) * 1e-300
    path = _write(tmp_path, with_array(members, "class_weight_totals.npy", totals))
    with pytest.raises(ModelFileError, match="value of the root must be the class weight"):
        cartjit.load(path)


@pytest.fixture(scope="module")
def regression_file(tmp_path_factory):
    X = load_iris(return_X_y=True)[0].to_numpy()
    est = cartjit.CARTRegressor(max_depth=3).fit(X[:, 1:], X[:, 0])
    path = tmp_path_factory.mktemp("reg") / "sepal.cartjit"
    cartjit.save(est, path)
    return read_members(path)


@pytest.mark.parametrize("column, message", [
    ("value", "weighted mean of its children's"),
    ("risk", "impurity times its share"),
])
def test_derived_regression_columns_are_checked(regression_file, tmp_path, column, message):
    arr = array_of(regression_file[f"tree_max/{column}.npy"]).copy()
    arr[0] *= 1.01
    path = _write(tmp_path, with_array(regression_file, f"tree_max/{column}.npy", arr))
    with pytest.raises(ModelFileError, match=message):
        cartjit.load(path)
    # the file as saved loads
    cartjit.load(_write(tmp_path, regression_file, "as-saved.cartjit"))
