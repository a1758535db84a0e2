"""Hostile model files: mutated saved files either load a valid tree that predicts, or
raise ModelFileError; none crashes the interpreter, hangs, or allocates without bound.

Hypothesis draws batches of mutations of saved files (truncation, flipped bytes,
out-of-range or cyclic indices, wrong dtypes, shapes that declare more than the file
holds, directory entries that declare huge sizes, edited or dropped JSON keys, missing
or extra members). Each batch is loaded in one child process (tests/references/hostile_child.py)
under an address-space limit and a timeout; a child that dies, times out or reports any
other exception fails the test, naming the mutation. The child also predicts with every
tree that loads, on random rows with out-of-range level codes and missing values. The
same mutations are made to forest files (:data:`FOREST_BASES`: the flat columns of every
tree, the per-tree members, the OOB results), each of whose trees the child predicts
with too.

``CARTJIT_HOSTILE_EXAMPLES`` sets the number of batches (default 4 of 77 mutations, 7 of
each kind: about 300 in CI; set it to 100 or more locally). One test runs the same in a child with
``NUMBA_BOUNDSCHECK=1`` and its own Numba cache, so that every kernel read on a loaded
tree is bounds-checked.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cartjit import save  # noqa: E402
from cartjit._modelfile import _expected_members  # noqa: E402

from references.modelfiles import (array_of, fitted_estimators, fitted_forests,  # noqa: E402
                                   npy, read_members, zip_members)

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
CHILD = TESTS / "references" / "hostile_child.py"

PER_KIND = 7  # a batch holds this many mutations of each kind (77 in all)
EXAMPLES = int(os.environ.get("CARTJIT_HOSTILE_EXAMPLES", "4"))
CHILD_TIMEOUT = 240  # seconds: starting Python, loading the kernels, the whole batch

#: The saved estimators the mutations start from: subset splits with surrogates,
#: cross-validation, ordered splits.
BASES = ("classifier-surrogates", "regressor-cv", "classifier-cv-categorical",
         "regressor-surrogates")
#: The saved forests: OOB results and importances with zero weights, pruned bagging by
#: vote, CV-pruned trees.
FOREST_BASES = ("forest-classifier", "forest-regressor", "bagged-classifier",
                "forest-cv-pruned")


@pytest.fixture(scope="module")
def base_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bases")
    fitted = {**fitted_estimators(), **fitted_forests()}
    out = {}
    for name in BASES + FOREST_BASES:
        path = save(fitted[name][0], directory / f"{name}.cartjit")
        out[name] = {"path": str(path), "bytes": path.read_bytes(),
                     "members": read_members(path)}
        assert sorted(out[name]["members"]) == sorted(MEMBER_NAMES[name]), name
    return out


# --------------------------------------------------------------------------- mutations

def _ints(n):
    return [-2**31, -2, -1, 0, 1, 2, 3, n - 1, n, n + 1, 2**31 - 1]


FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1.0, 0.5, 1e308, 5e-324]
UINTS = [0, 1, 2**63, 2**64 - 1, 0xFFFFFFFF, 1 << 40]


def set_element(arr, pick, choice):
    """``arr`` with one element (number ``pick`` modulo its size) set to a value
    picked (by ``choice``) among the dtype's interesting values."""
    arr = arr.copy()
    if arr.size == 0:
        return arr
    flat = arr.reshape(-1)
    i = pick % flat.size
    if arr.dtype.kind == "f":
        values = FLOATS
    elif arr.dtype.kind == "u":
        values = UINTS
    elif arr.dtype.kind == "b":
        values = [True, False]
    else:
        values = _ints(arr.shape[0])
        if arr.dtype.itemsize == 8:
            values = values + [2**62, -2**63]
    flat[i] = values[choice % len(values)]
    return arr


def npy_with_header(arr, header):
    """A .npy member whose header is ``header`` (a dict) and whose data are ``arr``'s
    bytes: the header may lie about the dtype or the shape."""
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    head = text + b" " * pad + b"\n"
    return np.lib.format.magic(1, 0) + len(head).to_bytes(2, "little") + head + arr.tobytes()


def json_paths(value, path=()):
    """Every path (keys and indices) into a JSON value."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from json_paths(v, path + (i,))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, 1, 2, -1, 5, 10**6, 2**63, 10**30])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "gini", "str", "int64", "object", "nominal", "ordinal",
                       "CARTRegressor", "CARTClassifierCV", "cartjit-model"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["dtype", "values", "ndarray", "float", "tuple", "dict", "kind"]),
        inner, max_size=3),
    max_leaves=8)


KINDS = ("truncate", "flip", "element", "cycle", "dtype", "shape", "resize", "json", "drop",
         "add", "zipsize")


@st.composite
def mutations(draw, kind=None, bases=BASES):
    """A mutation: (description, function of the base's bytes and members -> bytes)."""
    base = draw(st.sampled_from(bases))
    pick = draw(st.integers(0, 2**20))  # which element, JSON key, ...
    if kind is None:
        kind = draw(st.sampled_from(KINDS))
    where = draw(st.floats(0, 1))
    choice = draw(st.integers(0, 1000))
    if kind == "truncate":
        return (base, kind, where), lambda b, m: b[:int(where * len(b))]
    if kind == "flip":
        flips = draw(st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1,
                              max_size=4))

        def flip(b, m):
            data = bytearray(b)
            for at, mask in flips:
                data[min(int(at * len(data)), len(data) - 1)] ^= mask
            return bytes(data)
        return (base, kind, flips), flip
    member = draw(st.sampled_from(sorted(n for n in MEMBER_NAMES[base] if n.endswith(".npy"))))
    if kind == "element":
        def element(b, m):
            return zip_members(dict(m, **{member: npy(set_element(array_of(m[member]), pick,
                                                                  choice))}))
        return (base, kind, member, pick, choice), element
    if kind == "cycle":
        prefix = draw(st.sampled_from(
            ["forest"] if base in FOREST_BASES else
            ["tree_max"] if "tree/left.npy" not in MEMBER_NAMES[base] else ["tree", "tree_max"]))
        target = draw(st.floats(0, 1, exclude_max=True))

        def cycle(b, m):
            left = array_of(m[f"{prefix}/left.npy"]).copy()
            internal = np.flatnonzero(left >= 0)
            if internal.size == 0:
                return b
            i = internal[pick % internal.size]
            left[i] = int(target * (i + 1))  # a child id <= its parent's: a cycle
            right = array_of(m[f"{prefix}/right.npy"]).copy()
            right[i] = left[i] + 1
            return zip_members(dict(m, **{f"{prefix}/left.npy": npy(left),
                                          f"{prefix}/right.npy": npy(right)}))
        return (base, kind, prefix, pick, target), cycle
    if kind == "dtype":
        dtype = draw(st.sampled_from(["<i8", "<i4", "<i2", "<f4", "<f8", ">i4", ">f8", "|b1",
                                      "<u8", "|u1", "<c16"]))
        lie = draw(st.booleans())

        def retype(b, m):
            arr = array_of(m[member])
            if lie:  # the header says dtype, the data stay as they were
                header = {"descr": dtype, "fortran_order": False, "shape": arr.shape}
                return zip_members(dict(m, **{member: npy_with_header(arr, header)}))
            with np.errstate(invalid="ignore", over="ignore"):  # NaN to int: any value
                return zip_members(dict(m, **{member: npy(arr.astype(dtype))}))
        return (base, kind, member, dtype, lie), retype
    if kind == "shape":
        shape = draw(st.sampled_from([(2**40,), (2**31, 2), (0,), (), (1, 2**62), (3, 3, 3),
                                      (2**16, 2**16, 2**16), (-1,)]))
        fortran = draw(st.booleans())

        def reshape(b, m):
            arr = array_of(m[member])
            header = {"descr": arr.dtype.str, "fortran_order": fortran, "shape": shape}
            return zip_members(dict(m, **{member: npy_with_header(arr, header)}))
        return (base, kind, member, shape, fortran), reshape
    if kind == "resize":
        size = draw(st.sampled_from([0, 1, 2, 3, 7, 100, 1000]))

        def resize(b, m):
            arr = array_of(m[member])
            if arr.ndim == 0:
                return b
            new = np.resize(arr, (size,) + arr.shape[1:]) if arr.shape[0] else \
                np.zeros((size,) + arr.shape[1:], dtype=arr.dtype)
            return zip_members(dict(m, **{member: npy(new)}))
        return (base, kind, member, size), resize
    if kind == "json":
        op = draw(st.sampled_from(["set", "delete"]))
        value = draw(JSON_VALUES)

        def edit(b, m):
            meta = json.loads(m["metadata.json"])
            paths = [p for p in json_paths(meta) if p]
            path = paths[pick % len(paths)]
            parent = meta
            for key in path[:-1]:
                parent = parent[key]
            if op == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
            return zip_members(dict(m, **{"metadata.json": json.dumps(meta).encode()}))
        return (base, kind, op, pick, value), edit
    if kind == "drop":
        return (base, kind, member), lambda b, m: zip_members(
            {k: v for k, v in m.items() if k != member})
    if kind == "add":
        name = draw(st.sampled_from(["extra.npy", "tree/extra.npy", member + "x",
                                     "../escape.npy"]))
        return (base, kind, name), lambda b, m: zip_members(dict(m, **{name: m[member]}))
    size = draw(st.sampled_from([0, 1, 2**31, 2**32 - 1]))

    def zipsize(b, m):
        return declare_size(b, member, size)
    return (base, kind, member, size), zipsize


def declare_size(data, name, size):
    """The zip ``data`` with the directory entry of ``name`` declaring ``size`` bytes
    (compressed and uncompressed)."""
    data = bytearray(data)
    pos = 0
    encoded = name.encode()
    while True:
        pos = data.find(b"PK\x01\x02", pos)
        if pos < 0:
            return bytes(data)
        name_len = int.from_bytes(data[pos + 28:pos + 30], "little")
        if data[pos + 46:pos + 46 + name_len] == encoded:
            data[pos + 20:pos + 24] = size.to_bytes(4, "little")
            data[pos + 24:pos + 28] = size.to_bytes(4, "little")
            return bytes(data)
        pos += 4


#: Member names of each base (the same for every file of an estimator class).
MEMBER_NAMES = {
    name: [m + ".npy" for m in _expected_members({"estimator": cls, "tree_is_tree_max": same})]
    + ["metadata.json"]
    for name, (cls, same) in {"classifier-surrogates": ("CARTClassifier", True),
                              "regressor-cv": ("CARTRegressorCV", False),
                              "classifier-cv-categorical": ("CARTClassifierCV", False),
                              "regressor-surrogates": ("CARTRegressor", True)}.items()}
#: The forests' member names: which members a forest file has follows from its class,
#: whether some rows took no part, and which OOB results were computed.
MEMBER_NAMES.update({
    name: [m + ".npy" for m in _expected_members(
        {"estimator": cls, "rows": rows, "oob": oob})] + ["metadata.json"]
    for name, (cls, rows, oob) in {
        "forest-classifier": ("RandomForestClassifier", False, {"importance": True}),
        "forest-regressor": ("RandomForestRegressor", True, {"importance": True}),
        "bagged-classifier": ("BaggedCARTClassifier", True, {"importance": False}),
        "forest-cv-pruned": ("RandomForestClassifier", False, None)}.items()})


# --------------------------------------------------------------------------- running

def run_batch(tmp_path, base_files, batch, env_extra=None):
    """Write the mutated files of ``batch``, load them in one child, check each result."""
    directory = tmp_path / "mutants"
    directory.mkdir(exist_ok=True)
    files, labels = [], []
    for i, (label, mutate) in enumerate(batch):
        base = base_files[label[0]]
        path = directory / f"m{i}.cartjit"
        path.write_bytes(mutate(base["bytes"], base["members"]))
        files.append(str(path))
        labels.append(repr(label))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"files": files,
                               "warm_up": [b["path"] for b in base_files.values()]}))
    progress = tmp_path / "progress.txt"
    env = dict(os.environ, NUMBA_NUM_THREADS="2", PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(TESTS), *[p for p in os.environ.get("PYTHONPATH", "").split(
            os.pathsep) if p]]))
    env.update(env_extra or {})
    try:
        done = subprocess.run([sys.executable, str(CHILD), str(job), str(progress)],
                              env=env, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child timed out at mutation {last_started(progress, labels)}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(results) != len(files):
        pytest.fail(f"the child exited with status {done.returncode} at mutation "
                    f"{last_started(progress, labels)}:\n{done.stderr[-3000:]}")
    bad = [(labels[r["index"]], r) for r in results if r["outcome"] == "unexpected"]
    if bad:
        label, r = bad[0]
        pytest.fail(f"{len(bad)} mutation(s) neither loaded nor raised ModelFileError; "
                    f"first: {label}\n{r['during']}: {r['error']}\n{r['where']}")
    return [r["outcome"] for r in results]


def batches(per_kind, bases=BASES):
    """Lists of mutations with ``per_kind`` of every kind."""
    return st.tuples(*[mutations(kind, bases) for kind in KINDS
                       for _ in range(per_kind)]).map(list)


def last_started(progress, labels):
    try:
        lines = progress.read_text().split()
    except OSError:
        return "(before the first mutation)"
    return labels[int(lines[-1])] if lines else "(before the first mutation)"


#: No shrinking: a failure names its mutation already, and each shrink step is a child.
NO_SHRINK = dict(deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])


@settings(max_examples=EXAMPLES, **NO_SHRINK)
@given(batch=batches(PER_KIND))
def test_mutated_files_load_or_raise_model_file_error(tmp_path, base_files, batch):
    outcomes = run_batch(tmp_path, base_files, batch)
    assert set(outcomes) <= {"loaded", "refused"}
    if os.environ.get("CARTJIT_HOSTILE_REPORT"):
        print("outcomes", [(label, outcome) for (label, _), outcome in zip(batch, outcomes)])


@settings(max_examples=EXAMPLES, **NO_SHRINK)
@given(batch=batches(PER_KIND, FOREST_BASES))
def test_mutated_forest_files_load_or_raise_model_file_error(tmp_path, base_files, batch):
    outcomes = run_batch(tmp_path, base_files, batch)
    assert set(outcomes) <= {"loaded", "refused"}
    assert "refused" in outcomes


def test_unmutated_files_load_in_the_child(tmp_path, base_files):
    batch = [((name, "none"), lambda b, m: b) for name in BASES + FOREST_BASES]
    assert run_batch(tmp_path, base_files, batch) == ["loaded"] * len(BASES + FOREST_BASES)


def test_every_kind_of_mutation_is_drawn():
    kinds = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(mutations())
    def collect(mutation):
        kinds.add(mutation[0][1])
    collect()
    assert kinds == set(KINDS)


@pytest.mark.slow
@settings(max_examples=1, **NO_SHRINK)
@given(batch=batches(2 * PER_KIND))
def test_loaded_trees_predict_with_bounds_checking(tmp_path, base_files, batch):
    # Numba compiles the kernels anew, bounds-checked, into a cache of their own
    cache = tmp_path / "numba-cache"
    cache.mkdir(exist_ok=True)
    unmutated = [((name, "none"), lambda b, m: b) for name in BASES]
    outcomes = run_batch(tmp_path, base_files, unmutated + batch,
                         {"NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(cache)})
    assert outcomes[:len(BASES)] == ["loaded"] * len(BASES)
    assert set(outcomes) <= {"loaded", "refused"}
    # the prediction kernels were compiled there, bounds-checked (not loaded from the
    # package's cache)
    assert any(name.endswith(".nbi") for _, _, names in os.walk(cache) for name in names)


def test_a_zip_directory_cannot_declare_more_than_the_file(base_files, tmp_path):
    from cartjit import ModelFileError, load

    base = base_files["regressor-cv"]
    path = tmp_path / "bomb.cartjit"
    path.write_bytes(declare_size(base["bytes"], "tree/value.npy", 2**32 - 1))
    with zipfile.ZipFile(path) as zf:  # the directory does declare it
        assert zf.getinfo("tree/value.npy").file_size == 2**32 - 1
    with pytest.raises(ModelFileError, match="more than the file's"):
        load(path)
