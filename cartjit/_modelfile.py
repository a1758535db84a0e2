"""Model files: :func:`save` a fitted estimator and :func:`load` it back, without pickle.

A model file (suffix ``.cartjit`` by convention) is a zip archive in NumPy's ``.npz``
layout: one uncompressed ``.npy`` member per array (the flat tree's arrays, the class
priors and costs, the cross-validation table) and one ``metadata.json`` member (format
name and version, the estimator class, its parameters, the feature encoding and the
fitted scalars). docs/model-files.md documents every member, dtype, shape and key.

Loading never unpickles anything and trusts nothing in the file. In order:

1. the file's size is checked against the memory limit (:mod:`cartjit.engine.limits`) before
   it is read; the zip directory must list exactly the expected members, stored
   (uncompressed), whose sizes add up to no more than the file: a member cannot expand
   beyond the bytes on disk (no zip bomb), and each member's CRC is checked;
2. each ``.npy`` header must declare exactly the dtype written (little-endian, no
   object or structured dtype), C order, and a shape whose bytes are exactly the
   member's data: no size is taken from the file without being matched to bytes that
   are really there;
3. the metadata must be a JSON object with exactly the expected keys and types;
4. the arrays are checked against each other and against the metadata (shapes follow
   the number of nodes, feature indices are below the number of features, subset
   splits are on categorical features and name only their levels, surrogate and
   competitor tables are in range and used once, class tables match the classes), and
   then every invariant of the flat tree (:func:`cartjit.engine.tree.validate`: children
   after their parent, hence no cycle, ``right == left + 1``, finite thresholds, ...);
5. the columns derived from others (risks and labels from the class counts, priors and
   costs or from the impurities, the counts and means of split nodes from their
   children's, the pruned tree from T_max) must agree with their derivation.

Only then is an estimator built from the arrays; it predicts without refitting. Any
failure is a :class:`ModelFileError` (a ``ValueError``) saying what is wrong; a file
written by a newer cartjit says so. Nothing here is jitted.

The forests of :mod:`cartjit.ensemble` are saved and loaded by the same functions, as
format 2: :mod:`cartjit._forestfile` lays out their members and checks them (steps 4 and
5 for every tree, and what ties the trees to the forest's parameters and seeds); steps
1 to 3 are the ones above.
"""
from __future__ import annotations

import io
import json
import math
import os
import pathlib
import re
import struct
import zipfile
import zlib

import numpy as np

from .engine.limits import check_allocation
from .engine.tree import (COMPETITOR_FIELDS, LEAF, SURROGATE_FIELDS, TABLE_FIELDS, Tree,
                    subtree, validate)

__all__ = ["ModelFileError", "save", "load", "FORMAT_NAME", "FORMAT_VERSION"]

#: The ``format`` key of every model file.
FORMAT_NAME = "cartjit-model"
#: The newest format version this cartjit reads. A single tree is written as format 1 (as
#: before forests could be saved: an older cartjit still reads it), a forest as format 2
#: (an older cartjit then says it must be upgraded).
FORMAT_VERSION = 2
TREE_FORMAT_VERSION = 1
FOREST_FORMAT_VERSION = 2

_META = "metadata.json"
_ESTIMATORS = ("CARTClassifier", "CARTRegressor", "CARTClassifierCV", "CARTRegressorCV")
#: The forests (:mod:`cartjit.ensemble`), whose files :mod:`cartjit._forestfile` lays out.
FOREST_ESTIMATORS = ("RandomForestClassifier", "RandomForestRegressor",
                     "BaggedCARTClassifier", "BaggedCARTRegressor")
_KINDS = ("numeric", "nominal", "ordinal")  # the codes of _encoding: NUMERIC, NOMINAL, ORDINAL
_FAMILIES = ("number", "bool", "string")

#: dtype of every tree member (all little-endian); ``value`` and ``level_sets`` are 2-d
#: and 3-d, the others 1-d.
_TREE_DTYPES = {
    **{name: "<i4" for name in ("feature", "left", "right", "parent", "depth", "label",
                               "majority_left", "level_row", "surrogate_start",
                               "n_surrogates", "competitor_start", "n_competitors")},
    **{name: "<i8" for name in ("n_node_samples", "n_primary")},
    **{name: "<f8" for name in ("threshold", "weighted_n_node_samples", "value", "impurity",
                               "risk", "alpha", "improvement")},
    "level_sets": "<u8",
    **{name: np.dtype(dt).newbyteorder("<").str
       for name, dt in {**SURROGATE_FIELDS, **COMPETITOR_FIELDS}.items()},
}
#: The columns of ``cv_results_`` and their dtypes, in order.
CV_COLUMNS = {"k": "<i8", "alpha": "<f8", "alpha_prime": "<f8", "n_leaves": "<i8",
              "risk": "<f8", "cp": "<f8", "rel_error": "<f8", "cv_risk": "<f8",
              "cv_se": "<f8", "cv_std": "<f8", "xerror": "<f8", "xstd": "<f8",
              "selected": "|b1"}
#: The columns of ``test_results_`` (after ``prune_by_test_sample``), in order.
TEST_COLUMNS = {"k": "<i8", "alpha": "<f8", "alpha_prime": "<f8", "n_leaves": "<i8",
                "risk": "<f8", "cp": "<f8", "rel_error": "<f8", "test_risk": "<f8",
                "test_se": "<f8", "selected": "|b1"}
_CLASS_MEMBERS = {"priors": "<f8", "cost": "<f8", "class_weight_totals": "<f8"}
#: A CV estimator's per-case cross-validated predictions (``cv_predictions``): class
#: indices (-1: no part) or values, as float64, and class probabilities.
_XPRED_MEMBERS = {"cv_predictions": "<f8", "cv_proba": "<f8"}
_CV_MEMBERS = {"cv_risk_repeats": "<f8", "cv_se_repeats": "<f8", "folds": "<i8",
               "fold_alpha_values": "<f8", "fold_alpha_counts": "<i8"}

#: Longest JSON nesting accepted in the metadata, and the largest ``.npy`` header.
_MAX_NESTING = 32
_MAX_HEADER = 4096
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # every member gets it: the same model, the same bytes

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64")


class ModelFileError(ValueError):
    """A model file is damaged, was edited, or is not a cartjit model file."""


# --------------------------------------------------------------------------- saving

def save(estimator, path, *, overwrite=False) -> pathlib.Path:
    """Write a fitted cartjit estimator to ``path`` (a model file; suffix ``.cartjit``
    by convention) and return the path.

    The file holds the flat tree arrays of ``tree_`` and ``tree_max_`` with the fitted
    attributes (classes, feature names and levels, priors, costs, the cross-validation
    table of a CV estimator) and ``get_params()``; docs/model-files.md describes it.
    The write is atomic: a temporary file in the same directory is renamed over
    ``path``, so a crash leaves the old file or the new one, never a partial one. An
    existing ``path`` is refused (``FileExistsError``) unless ``overwrite=True``.

    A CV estimator fitted with a splitter object as ``cv`` (which JSON cannot hold) is
    saved with the fold ids it produced (``folds_[0]``) as ``cv``: refitting the loaded
    estimator uses the same partition.

    A fitted forest (:class:`~cartjit.RandomForestClassifier`,
    :class:`~cartjit.RandomForestRegressor`, :class:`~cartjit.BaggedCARTClassifier`,
    :class:`~cartjit.BaggedCARTRegressor`) is written as format 2
    (:mod:`cartjit._forestfile`): each tree's T_max in flat columns, its α, seed and
    class tables, and the OOB results.
    """
    from . import __version__
    from .estimators import _BaseCART

    name = type(estimator).__name__
    forest = name in FOREST_ESTIMATORS and _is_forest(estimator)
    if not forest and not (isinstance(estimator, _BaseCART) and name in _ESTIMATORS):
        raise TypeError(f"estimator must be a fitted "
                        f"{', '.join(_ESTIMATORS + FOREST_ESTIMATORS)}, got {name}")
    estimator._check_fitted()
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
    path = _as_path(path)
    members = {}
    meta = {"format": FORMAT_NAME,
            "format_version": FOREST_FORMAT_VERSION if forest else TREE_FORMAT_VERSION,
            "cartjit_version": __version__, "estimator": name,
            "params": _encode_params(estimator)}
    if forest:
        from ._forestfile import encode_forest
        meta.update(encode_forest(estimator, members))
        _write_atomic(path, _zip_bytes(meta, members), overwrite)
        return path
    meta.update(_encode_fitted(estimator, members))
    # T_max unpruned (no ccp_alpha): tree_ is tree_max_, stored once
    meta["tree_is_tree_max"] = estimator.tree_ is estimator.tree_max_
    for prefix, tree in (("tree", estimator.tree_), ("tree_max", estimator.tree_max_)):
        if prefix == "tree" and meta["tree_is_tree_max"]:
            continue
        for name in Tree._fields:
            members[f"{prefix}/{name}"] = getattr(tree, name)
    data = _zip_bytes(meta, members)
    _write_atomic(path, data, overwrite)
    return path


def _is_forest(estimator):
    from .ensemble import _BaseForest
    return isinstance(estimator, _BaseForest)


def _as_path(path):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return pathlib.Path(path)


def _plain(value, where):
    """A parameter value as JSON: arrays, tuples, dicts and non-finite floats tagged."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OUS":
            items = value.tolist()
            return {"ndarray": _plain(items, where), "dtype": "str"}
        if value.dtype.name not in _DTYPE_NAMES:
            raise ValueError(f"cannot save {where}: an array of dtype {value.dtype}")
        return {"ndarray": _plain(value.tolist(), where), "dtype": value.dtype.name}
    if isinstance(value, (list, tuple)):
        items = [_plain(v, where) for v in value]
        return items if isinstance(value, list) else {"tuple": items}
    if isinstance(value, dict):
        return {"dict": [[_plain(k, where), _plain(v, where)] for k, v in value.items()]}
    raise ValueError(f"cannot save {where}: a {type(value).__name__} is not a number, "
                     "string, list, array or dict")


def _encode_params(est):
    params = est.get_params(deep=False)
    if "cv" in params:
        cv = params["cv"]
        if not (cv is None or isinstance(cv, (str, int, np.integer, list, tuple,
                                              np.ndarray))):
            params["cv"] = est.folds_[0]  # a splitter object: the fold ids it produced
    return {name: _plain(value, f"parameter {name}") for name, value in params.items()}


def _levels(values):
    """Levels or class labels as JSON: ``{"dtype": ..., "values": [...]}``."""
    arr = np.asarray(values)
    if arr.dtype.kind == "O":
        if not all(isinstance(v, str) for v in arr.tolist()):
            raise ValueError("cannot save labels or levels mixing strings and other values")
        return {"dtype": "str", "values": arr.tolist()}
    if arr.dtype.kind in "US":
        return {"dtype": "str", "values": [str(v) for v in arr.tolist()]}
    if arr.dtype.name not in _DTYPE_NAMES:
        raise ValueError(f"cannot save labels or levels of dtype {arr.dtype}")
    items = [_plain(v, "a level") for v in arr.tolist()]
    return {"dtype": arr.dtype.name, "values": items}


def encode_features(est):
    """The features of a fitted estimator (single tree or forest) as metadata: their
    number, names, kinds and levels, and the surrogate settings the fit resolved."""
    enc = est._encoding
    names = getattr(est, "feature_names_in_", None)
    return {
        "n_features_in": int(est.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
        "features": [{"kind": _KINDS[int(k)], "family": fam,
                      "levels": None if cats is None else _levels(cats)}
                     for k, cats, fam in zip(enc.kind, enc.categories, enc.family)],
        "max_surrogate": int(est.max_surrogate_),
        "use_surrogate": int(est._use_surrogate),
    }


def _encode_fitted(est, members):
    """The fitted attributes: scalars and labels into the returned metadata, arrays
    into ``members``."""
    meta = encode_features(est)
    if est._is_classifier:
        meta["classes"] = _levels(est.classes_)
        meta["split_cost_default"] = bool(est._split_cost_default)
        members["priors"] = est.priors_
        members["cost"] = est.cost_
        members["class_weight_totals"] = est.class_weight_totals_
    if hasattr(est, "cv_results_"):
        _table_members(est.cv_results_, "cv_results", CV_COLUMNS, members)
        members["cv_risk_repeats"] = est.cv_risk_repeats_
        members["cv_se_repeats"] = est.cv_se_repeats_
        members["folds"] = est.folds_
        flat = [np.asarray(a, dtype=np.float64) for rep in est.fold_alphas_ for a in rep]
        members["fold_alpha_values"] = (np.concatenate(flat) if flat
                                        else np.empty(0, dtype=np.float64))
        members["fold_alpha_counts"] = np.asarray(
            [[len(a) for a in rep] for rep in est.fold_alphas_],
            dtype=np.int64).reshape(len(est.fold_alphas_), -1)
        kept = None
        if hasattr(est, "cv_predictions_"):
            kept = "proba" if hasattr(est, "cv_proba_") else "predictions"
            members["cv_predictions"] = est.cv_predictions_
            if kept == "proba":
                members["cv_proba"] = est.cv_proba_
        meta["cv"] = {"alpha": _plain(est.alpha_, "alpha_"),
                      "best_index": int(est._best_index), "n_folds": int(est.n_folds_),
                      "n_repeats": int(est.n_repeats_), "predictions": kept}
    else:
        meta["test_sample"] = None
        if hasattr(est, "test_results_"):  # prune_by_test_sample's choice
            _table_members(est.test_results_, "test_results", TEST_COLUMNS, members)
            meta["test_sample"] = {"alpha": _plain(est.alpha_, "alpha_"),
                                   "best_index": int(est._best_index)}
    return meta


def _table_members(table, prefix, columns, members):
    """The columns of a results table (``cv_results_``, ``test_results_``) as members
    ``prefix/column``; a table with other columns cannot be saved. rpart's column names
    that ``compat="rpart"`` adds are copies of stored columns: they are not written, and
    the CV estimators add them back when the table is set."""
    from .engine.cv import RPART_COLUMNS
    table = table.drop(columns=[c for c in RPART_COLUMNS if c in table.columns])
    if list(table.columns) != list(columns):
        raise ValueError(f"cannot save {prefix}_ with columns {list(table.columns)}; "
                         f"expected {list(columns)}")
    for name in columns:
        members[f"{prefix}/{name}"] = table[name].to_numpy()


def _member_dtype(name):
    """The dtype string a member is written with (and must be read with)."""
    if name.startswith(("forest/", "oob/")) or name == "rows":
        from ._forestfile import member_dtype
        return member_dtype(name)
    if name.startswith(("tree/", "tree_max/")):
        return _TREE_DTYPES[name.split("/", 1)[1]]
    if name.startswith("cv_results/"):
        return CV_COLUMNS[name.split("/", 1)[1]]
    if name.startswith("test_results/"):
        return TEST_COLUMNS[name.split("/", 1)[1]]
    return {**_CLASS_MEMBERS, **_CV_MEMBERS, **_XPRED_MEMBERS}[name]


def _zip_bytes(meta, members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(zipfile.ZipInfo(_META, _ZIP_DATE),
                    json.dumps(meta, indent=1, allow_nan=False).encode("utf-8"))
        for name, arr in members.items():
            arr = np.ascontiguousarray(arr, dtype=np.dtype(_member_dtype(name)))
            out = io.BytesIO()
            np.lib.format.write_array(out, arr, version=(1, 0), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(name + ".npy", _ZIP_DATE), out.getvalue())
    return buf.getvalue()


def _write_atomic(path, data, overwrite):
    """Write ``data`` to a temporary file beside ``path``, flush it to the disk, then
    move it over ``path`` (or link it there when ``path`` must not exist yet).

    The temporary file (``.NAME.PID-RANDOM.tmp``, :mod:`cartjit._atomic`) is removed on
    any exception, and the ones that killed writes left beside ``path`` are removed
    first. A ``path`` that exists but is not a regular file (a device such as
    ``/dev/null``, a pipe, a socket) is refused: a rename would replace it."""
    from ._atomic import exists_error, replacing

    directory = path.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot save to {str(path)!r}: the directory "
                                f"{str(directory)!r} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"cannot save to {str(path)!r}: it is a directory")
    if path.exists() and not path.is_file():
        raise ValueError(f"cannot save to {str(path)!r}: it is not a regular file (a "
                         "device, a pipe or a socket); name a file")
    if path.exists() and not overwrite:
        raise exists_error(path)
    with replacing(path, overwrite=overwrite) as tmp:  # 0o666 less the umask
        tmp.write_bytes(data)


# --------------------------------------------------------------------------- loading

#: What reading a damaged zip or ``.npy`` member can raise (zipfile and numpy's header
#: parser); each becomes a ModelFileError.
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, struct.error,
                ValueError, TypeError, NotImplementedError, RuntimeError, KeyError,
                IndexError, OverflowError, UnicodeDecodeError, SyntaxError, zlib.error)


def load(path):
    """Read a model file written by :func:`save` and return the fitted estimator (a
    single tree or a forest).

    Nothing is unpickled, and every array is checked before any kernel can see it
    (see the module docstring and docs/model-files.md); the estimator then predicts
    without refitting. Raises :class:`ModelFileError` for a damaged, edited or foreign
    file (or one written by a newer cartjit, saying so), ``FileNotFoundError`` when
    ``path`` does not exist.
    """
    path = _as_path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{str(path)!r} is a directory, not a model file")
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        check_allocation(size, f"the model file {str(path)!r} ({size} bytes)")
        data = fh.read(size + 1)
    where = str(path)
    try:
        meta, arrays = _read_zip(data, where)
    except ModelFileError:
        raise
    except RecursionError:
        raise ModelFileError(f"{where}: metadata.json is nested too deeply") from None
    except _READ_ERRORS as exc:
        raise ModelFileError(f"{where} is not a readable cartjit model file "
                             f"({type(exc).__name__}: {exc})") from None
    return _build(meta, arrays, where)


def _fail(where, message):
    raise ModelFileError(f"{where}: {message}")


def _read_zip(data, where):
    """(metadata dict, {member name: array}) of a model file's bytes, the sizes and
    dtypes of the members checked against the zip directory and the headers."""
    if not data.startswith(b"PK\x03\x04"):
        _fail(where, "not a cartjit model file (not a zip archive)")
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            _fail(where, "a member appears twice in the archive")
        if _META not in names:
            _fail(where, "no metadata.json member: not a cartjit model file")
        total = 0
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                _fail(where, f"member {info.filename!r} is compressed; model files store "
                             "members uncompressed")
            total += info.file_size
        if total > len(data):
            _fail(where, f"the members declare {total} bytes, more than the file's "
                         f"{len(data)}: the file is damaged")
        meta = _read_meta(zf.read(_META), where)
        expected = {n + ".npy" for n in _expected_members(meta)}
        missing = sorted(expected - set(names))
        extra = sorted(set(names) - expected - {_META})
        if missing:
            _fail(where, f"member {missing[0]!r} is missing"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        if extra:
            _fail(where, f"unexpected member {extra[0]!r} (a file of "
                         f"{meta['estimator']} has no such member)")
        arrays = {}
        for name in sorted(expected):
            arrays[name[:-4]] = _read_npy(zf.read(name), name, _member_dtype(name[:-4]),
                                          where)
    return meta, arrays


#: The header of a version 1.0 ``.npy`` member as NumPy writes it: the dict literal with
#: its three keys in sorted order (a comma after the last one optional), a shape tuple of
#: non-negative integers (``()``, ``(n,)``, ``(n, m)``, ...), spaces up to the alignment
#: and one final newline. Nothing else is accepted, and nothing of it is evaluated.
_NPY_HEADER = re.compile(
    r"\{'descr': '(?P<descr>[<>|=]?[a-zA-Z][0-9]{0,4})', "
    r"'fortran_order': (?P<fortran>True|False), "
    r"'shape': \((?P<shape>|[0-9]{1,19},|[0-9]{1,19}(?:, [0-9]{1,19}){1,31})\)(?:, )?\} *\n")


def _npy_header(raw, name, where):
    """(dtype, fortran_order, shape, data offset) of one ``.npy`` member's bytes, read
    by the strict grammar of :data:`_NPY_HEADER` (magic, version 1.0, little-endian
    header length, the header within the member); :class:`ModelFileError` otherwise."""
    if len(raw) < 10 or raw[:6] != b"\x93NUMPY":
        _fail(where, f"member {name!r}: not a .npy array (no magic string)")
    if raw[6:8] != b"\x01\x00":
        _fail(where, f"member {name!r}: not a version 1.0 .npy array")
    (length,) = struct.unpack("<H", raw[8:10])
    if length > _MAX_HEADER or 10 + length > len(raw):
        _fail(where, f"member {name!r}: its .npy header declares {length} bytes, more "
                     "than the member holds")
    try:
        text = raw[10:10 + length].decode("ascii")
    except UnicodeDecodeError:
        _fail(where, f"member {name!r}: its .npy header is not ASCII")
    found = _NPY_HEADER.fullmatch(text)
    if found is None:
        _fail(where, f"member {name!r}: its .npy header is damaged ({_short(text)})")
    try:
        got = np.dtype(found["descr"])
    except TypeError:
        _fail(where, f"member {name!r}: its .npy header names no dtype "
                     f"({found['descr']!r})")
    shape = tuple(int(s) for s in found["shape"].replace(",", " ").split())
    return got, found["fortran"] == "True", shape, 10 + length


def _read_npy(raw, name, dtype, where):
    """The array of one ``.npy`` member: version 1.0 header, exactly ``dtype``, C order,
    and data bytes exactly as many as the shape needs."""
    got, fortran, shape, offset = _npy_header(raw, name, where)
    if got.str != dtype or got.hasobject or got.fields is not None:
        _fail(where, f"member {name!r} has dtype {got.str}; expected {dtype}")
    if fortran:
        _fail(where, f"member {name!r} is in Fortran order; expected C order")
    count = math.prod(shape)
    if count * got.itemsize != len(raw) - offset:
        _fail(where, f"member {name!r} declares shape {shape} ({count * got.itemsize} "
                     f"bytes) but holds {len(raw) - offset} bytes of data")
    native = got.newbyteorder("=")
    if count == 0:
        return np.empty(shape, dtype=native)
    arr = np.frombuffer(raw, dtype=got, count=count, offset=offset).reshape(shape)
    return arr.astype(native, copy=True)


def _read_meta(raw, where):
    try:
        text = raw.decode("utf-8")
        meta = json.loads(text, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        _fail(where, f"metadata.json is not valid JSON ({exc})")
    if not isinstance(meta, dict):
        _fail(where, "metadata.json must hold a JSON object")
    fmt = meta.get("format")
    if fmt != FORMAT_NAME:
        _fail(where, f"not a cartjit model file (format {fmt!r}, expected {FORMAT_NAME!r})")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        _fail(where, f"format_version must be a positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        written = meta.get("cartjit_version")
        by = f" {written}" if isinstance(written, str) and len(written) < 40 else ""
        _fail(where, f"written by a newer cartjit{by} (format {version}); this one reads "
                     f"up to {FORMAT_VERSION}: upgrade cartjit to load it")
    keys = {"format", "format_version", "cartjit_version", "estimator", "params",
            "n_features_in", "feature_names_in", "features", "max_surrogate",
            "use_surrogate", "tree_is_tree_max"}
    estimator = meta.get("estimator")
    if estimator in FOREST_ESTIMATORS:
        from ._forestfile import check_forest_meta
        check_forest_meta(meta, where)
        _check_depth(meta, where)
        return meta
    if estimator not in _ESTIMATORS:
        _fail(where, f"unknown estimator class {_short(estimator)}; expected one of "
                     f"{', '.join(_ESTIMATORS + FOREST_ESTIMATORS)}")
    if estimator.startswith("CARTClassifier"):
        keys |= {"classes", "split_cost_default"}
    keys |= {"cv"} if estimator.endswith("CV") else {"test_sample"}
    _exact_keys(meta, keys, "metadata.json", where)
    if not isinstance(meta["tree_is_tree_max"], bool):
        _fail(where, "tree_is_tree_max must be true or false")
    _check_depth(meta, where)
    return meta


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _exact_keys(obj, keys, what, where):
    if not isinstance(obj, dict):
        _fail(where, f"{what} must be a JSON object")
    missing = sorted(keys - set(obj))
    extra = sorted(set(obj) - keys)
    if missing:
        _fail(where, f"{what} lacks the key {missing[0]!r}")
    if extra:
        _fail(where, f"{what} has an unexpected key {_short(extra[0])}")


def _check_depth(value, where, depth=0):
    if depth > _MAX_NESTING:
        _fail(where, f"metadata.json is nested deeper than {_MAX_NESTING} levels")
    if isinstance(value, dict):
        for v in value.values():
            _check_depth(v, where, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_depth(v, where, depth + 1)


def _expected_members(meta):
    if meta["estimator"] in FOREST_ESTIMATORS:
        from ._forestfile import forest_members
        return forest_members(meta)
    prefixes = ("tree_max",) if meta["tree_is_tree_max"] else ("tree", "tree_max")
    names = [f"{prefix}/{name}" for prefix in prefixes for name in Tree._fields]
    if meta["estimator"].startswith("CARTClassifier"):
        names += list(_CLASS_MEMBERS)
    if meta["estimator"].endswith("CV"):
        names += [f"cv_results/{c}" for c in CV_COLUMNS] + list(_CV_MEMBERS)
        cv = meta.get("cv")
        kept = cv.get("predictions") if isinstance(cv, dict) else None
        if kept in ("predictions", "proba"):
            names.append("cv_predictions")
        if kept == "proba":
            names.append("cv_proba")
    elif isinstance(meta.get("test_sample"), dict):
        names += [f"test_results/{c}" for c in TEST_COLUMNS]
    return names


# --------------------------------------------------------------------------- checks

def _int(value, what, where, low=None, high=None):
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"{what} must be an integer, got {_short(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(where, f"{what} must lie in [{low}, {high}], got {value}")
    return value


def _decode_levels(obj, what, where):
    """A level or label array from its JSON form (see :func:`_levels`)."""
    _exact_keys(obj, {"dtype", "values"}, what, where)
    dtype, values = obj["dtype"], obj["values"]
    if not isinstance(values, list) or not values:
        _fail(where, f"{what}: values must be a non-empty list")
    if dtype == "str":
        if not all(isinstance(v, str) for v in values):
            _fail(where, f"{what}: every value of dtype str must be a string")
        arr = np.array(values, dtype=object)
    elif dtype in _DTYPE_NAMES:
        if not all(isinstance(v, (int, float)) for v in values):
            _fail(where, f"{what}: every value of dtype {dtype} must be a number")
        try:
            with np.errstate(all="raise"):
                arr = np.array(values, dtype=dtype)
        except (OverflowError, ValueError, FloatingPointError):
            _fail(where, f"{what}: a value does not fit dtype {dtype}")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            _fail(where, f"{what}: values must be finite")
    else:
        _fail(where, f"{what}: dtype must be 'str' or one of {', '.join(_DTYPE_NAMES)}, "
                     f"got {_short(dtype)}")
    if len(set(arr.tolist())) != arr.shape[0]:
        _fail(where, f"{what}: values must be distinct")
    return arr


def _decode_param(value, what, where):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode_param(v, what, where) for v in value]
    if isinstance(value, dict) and len(value) == 1 and "float" in value:
        if value["float"] not in ("inf", "-inf", "nan"):
            _fail(where, f"{what}: a tagged float must be 'inf', '-inf' or 'nan'")
        return float(value["float"])
    if isinstance(value, dict) and len(value) == 1 and "tuple" in value \
            and isinstance(value["tuple"], list):
        return tuple(_decode_param(v, what, where) for v in value["tuple"])
    if isinstance(value, dict) and len(value) == 1 and "dict" in value \
            and isinstance(value["dict"], list):
        items = value["dict"]
        if not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
            _fail(where, f"{what}: a tagged dict holds [key, value] pairs")
        out = {}
        for k, v in items:
            k = _decode_param(k, what, where)
            if not isinstance(k, (bool, int, float, str)):
                _fail(where, f"{what}: a dict key must be a number or a string")
            out[k] = _decode_param(v, what, where)
        return out
    if isinstance(value, dict) and set(value) == {"ndarray", "dtype"}:
        dtype = value["dtype"]
        if dtype != "str" and dtype not in _DTYPE_NAMES:
            _fail(where, f"{what}: array dtype {_short(dtype)} is not allowed")
        items = _decode_param(value["ndarray"], what, where)
        try:
            with np.errstate(all="raise"):
                arr = np.array(items, dtype=object if dtype == "str" else dtype)
        except (OverflowError, ValueError, TypeError, FloatingPointError):
            _fail(where, f"{what}: the array is ragged or does not fit dtype {dtype}")
        if arr.dtype == object and not all(isinstance(v, str) for v in arr.ravel().tolist()):
            _fail(where, f"{what}: an array of dtype str must hold strings")
        return arr
    _fail(where, f"{what}: {_short(value)} is not a saved parameter value")


def _tree_of(arrays, prefix, where):
    fields = {name: arrays[f"{prefix}/{name}"] for name in Tree._fields}
    n = fields["feature"].shape[0]
    for name, arr in fields.items():
        ndim = 3 if name == "level_sets" else 2 if name == "value" else 1
        if arr.ndim != ndim:
            _fail(where, f"{prefix}/{name} must be {ndim}-d, got shape {arr.shape}")
        if name not in TABLE_FIELDS and arr.shape[0] != n:
            _fail(where, f"{prefix}/{name} has {arr.shape[0]} rows; {prefix}/feature has {n}")
    for table in (SURROGATE_FIELDS, COMPETITOR_FIELDS):
        sizes = {fields[name].shape[0] for name in table}
        if len(sizes) != 1:
            _fail(where, f"the columns of {prefix}'s {next(iter(table)).split('_')[0]} "
                         "table differ in length")
    if n < 1:
        _fail(where, f"{prefix} has no node")
    return Tree(**fields)


def _check_tree(tree, prefix, meta, n_levels, where):
    """What :func:`cartjit.engine.tree.validate` cannot know (the features, their levels,
    bounds that keep its own work proportional to the file) and then validate."""
    p = meta["n_features_in"]
    internal = tree.left != LEAF
    float_fields = ("weighted_n_node_samples", "value", "impurity", "risk", "improvement")
    for name in float_fields:
        if not np.all(np.isfinite(getattr(tree, name))):
            _fail(where, f"{prefix}/{name} must be finite (it holds NaN or infinity)")
    if np.any(np.isinf(tree.alpha)):
        _fail(where, f"{prefix}/alpha must not be infinite")
    feature = tree.feature[internal]
    if np.any(feature < 0) or np.any(feature >= p):
        _fail(where, f"{prefix}/feature of a split node must lie in [0, {p}) "
                     "(n_features_in)")
    for kind, fields in (("surrogate", SURROGATE_FIELDS), ("competitor", COMPETITOR_FIELDS)):
        size = getattr(tree, f"{kind}_feature").shape[0]
        count = getattr(tree, f"n_{kind}s" if kind == "surrogate" else "n_competitors")
        if np.any(count < 0) or int(count.astype(np.int64).sum()) > size:
            _fail(where, f"{prefix}: the nodes' {kind} counts must be non-negative and "
                         f"add up to at most the table's {size} rows")
        f = getattr(tree, f"{kind}_feature")
        if np.any(f < 0) or np.any(f >= p):
            _fail(where, f"{prefix}/{kind}_feature must lie in [0, {p}) (n_features_in)")
    lm = int(n_levels.max(initial=0))
    n_words = -(-lm // 64)
    if tree.level_sets.shape[1:] != (2, n_words):
        _fail(where, f"{prefix}/level_sets must have shape (m, 2, {n_words}) for "
                     f"{lm} levels at most, got {tree.level_sets.shape}")
    # Every row of level_sets a split uses: one split per row, its feature nominal, and
    # bits only for that feature's levels.
    used_rows, used_features = [tree.level_row[internal]], [feature]
    for kind, start, count in (("surrogate", tree.surrogate_start, tree.n_surrogates),
                               ("competitor", tree.competitor_start, tree.n_competitors)):
        size = getattr(tree, f"{kind}_feature").shape[0]
        if np.any(start < 0) or np.any(start.astype(np.int64) + count > size):
            _fail(where, f"{prefix}: {kind} rows [start, start + count) must lie in the "
                         f"table ({size} rows)")
        rows = (np.repeat(start.astype(np.int64) - np.cumsum(count) + count, count)
                + np.arange(int(count.sum())))
        used_rows.append(getattr(tree, f"{kind}_level_row")[rows])
        used_features.append(getattr(tree, f"{kind}_feature")[rows])
    level_row = np.concatenate(used_rows).astype(np.int64)
    split_feature = np.concatenate(used_features).astype(np.int64)
    subset = level_row >= 0
    level_row, split_feature = level_row[subset], split_feature[subset]
    if np.any(level_row >= tree.level_sets.shape[0]):
        _fail(where, f"{prefix}: a level row points past level_sets")
    if np.unique(level_row).shape[0] != level_row.shape[0]:
        _fail(where, f"{prefix}: two splits share a row of level_sets")
    if np.any(n_levels[split_feature] == 0):
        _fail(where, f"{prefix}: a subset split is on a feature that is not categorical")
    if np.any(n_levels[feature[tree.level_row[internal] < 0]] > 0):
        _fail(where, f"{prefix}: a categorical feature is split by a threshold")
    if level_row.shape[0]:
        n_bits = n_levels[split_feature]
        code = np.arange(64 * n_words)
        allowed = code[None, :] < n_bits[:, None]
        bits = np.unpackbits(tree.level_sets[level_row].astype("<u8").view(np.uint8).reshape(
            level_row.shape[0], 2, -1), axis=2, bitorder="little").astype(bool)
        if np.any(bits & ~allowed[:, None, :]):
            _fail(where, f"{prefix}: a level set names a level code beyond the feature's "
                         "levels")
    try:
        validate(tree)
    except ValueError as exc:
        _fail(where, f"{prefix}: {exc}")


#: The relative slack of a derived column: the saved one is the same float64 arithmetic,
#: so this only leaves room for another summation order (a BLAS product).
_DERIVED_RTOL = 1e-9


def _check_derived(tree, prefix, classifier, where):
    """The columns that follow from others must agree with them (``validate`` checks
    the links, depths, parents and the sums of counts and weights): at a split whose
    children hold all its cases, the class counts add up (classification) or the mean
    is the weighted mean of the children's (regression); the root's class counts are
    the class weight totals; each node's risk R(t) is the one its class counts, the
    priors and the costs give (classification; docs/maths.md §1) or its impurity times
    its share of the weight (regression), and its label a class of least risk.
    ``classifier`` is the estimator with its class tables set, or None for a regression
    tree. Every comparison is written so that a NaN (an overflow on crafted numbers)
    fails it."""
    with np.errstate(all="ignore"):
        problem = _derived_problem(tree, classifier)
    if problem:
        _fail(where, f"{prefix}{problem}")


def _derived_problem(tree, classifier):
    internal = np.flatnonzero(tree.left != LEAF)
    lc, rc = tree.left[internal], tree.right[internal]
    n_s, w = tree.n_node_samples, tree.weighted_n_node_samples
    held = internal[n_s[lc] + n_s[rc] == n_s[internal]]
    hl, hr = tree.left[held], tree.right[held]
    if not np.all(np.abs(w[hl] + w[hr] - w[held]) <= _DERIVED_RTOL * w[held]):
        return (": weighted_n_node_samples of a split node whose children hold all its "
                "cases must be the sum of its children's")
    value = tree.value
    if classifier is None:
        share = w[hl] / (w[hl] + w[hr])
        mean = share * value[hl, 0] + (1.0 - share) * value[hr, 0]
        scale = np.maximum(np.abs(value[hl, 0]), np.abs(value[hr, 0]))
        if not np.all(np.abs(mean - value[held, 0]) <= _DERIVED_RTOL * scale):
            return ("/value of a split node whose children hold all its cases must be the "
                    "weighted mean of its children's")
        risk = np.maximum(tree.impurity, 0.0) * (w / w[0])
        if not np.all(np.abs(risk - tree.risk) <= _DERIVED_RTOL * risk[0]):
            return "/risk must be each node's impurity times its share of the root's weight"
        return None
    if not np.all(np.abs(value[hl] + value[hr] - value[held])
                  <= _DERIVED_RTOL * w[held][:, None]):
        return ("/value of a split node whose children hold all its cases must be the sum "
                "of its children's class counts")
    totals = classifier.class_weight_totals_
    if not np.all(np.abs(value[0] - totals) <= _DERIVED_RTOL * totals):
        return "/value of the root must be the class weight totals (class_weight_totals)"
    # a class absent from a forest tree's sample (N_j = 0) has p(j, t) = 0
    p_jt = value * np.divide(classifier.priors_, totals, out=np.zeros_like(totals),
                             where=totals > 0)
    cost = classifier.cost_
    risks = p_jt @ cost  # risks[t, i] = Σ_j p(j, t) C(i|j)
    best = risks.min(axis=1)
    slack = _DERIVED_RTOL * p_jt.sum(axis=1) * float(cost.max())
    if not np.all(np.abs(best - tree.risk) <= slack):
        return ("/risk must be each node's least misclassification cost under the class "
                "counts, priors and costs")
    chosen = risks[np.arange(risks.shape[0]), tree.label]
    if not np.all(chosen <= best + slack):
        return "/label must be a class of least misclassification cost at every node"
    return None


def _check_pruned(tree, tree_max, where):
    """``tree`` must be T(α) of ``tree_max`` for some α, as pruning derives it: the
    subtree keeping the splits of the m internal nodes with the largest α (m being the
    stored tree's number of splits, with no tie at the cut), equal column for column."""
    internal = tree_max.left != LEAF
    alpha = tree_max.alpha[internal]
    m = int(np.count_nonzero(tree.left != LEAF))
    if np.all(np.isnan(tree_max.alpha)) or m > alpha.shape[0]:
        _fail(where, "tree is not a pruned subtree of tree_max (tree_max has no α, or "
                     "fewer splits)")
    ranked = np.sort(alpha)[::-1]
    cut = ranked[m] if m < ranked.shape[0] else -np.inf
    keep = internal & (tree_max.alpha > cut)
    if int(np.count_nonzero(keep)) != m:
        _fail(where, "tree is not a pruned subtree of tree_max (its number of splits "
                     "falls between nodes of equal α)")
    expected = subtree(tree_max, keep)
    for name in Tree._fields:
        a, b = getattr(expected, name), getattr(tree, name)
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            _fail(where, f"tree/{name} differs from tree_max pruned to the same splits: "
                         "tree is not T(α) of tree_max")


def decode_features(meta, where):
    """``(p, feature names or None, Encoding)`` of the metadata :func:`encode_features`
    wrote, checked."""
    from . import _encoding as E

    p = _int(meta["n_features_in"], "n_features_in", where, 1, E.MAX_LEVELS ** 2)
    names = meta["feature_names_in"]
    if names is not None:
        if not isinstance(names, list) or len(names) != p or \
                not all(isinstance(s, str) for s in names):
            _fail(where, f"feature_names_in must be null or a list of {p} strings")
        names = np.array(names, dtype=object)
    features = meta["features"]
    if not isinstance(features, list) or len(features) != p:
        _fail(where, f"features must be a list of {p} entries (n_features_in)")
    kinds, categories, families = [], [], []
    for j, feat in enumerate(features):
        what = f"features[{j}]"
        _exact_keys(feat, {"kind", "family", "levels"}, what, where)
        if feat["kind"] not in _KINDS or feat["family"] not in _FAMILIES:
            _fail(where, f"{what}: kind must be one of {_KINDS} and family one of "
                         f"{_FAMILIES}")
        kind = _KINDS.index(feat["kind"])
        if kind == E.NUMERIC:
            if feat["levels"] is not None:
                _fail(where, f"{what}: a numeric feature has no levels")
            levels = None
        else:
            levels = _decode_levels(feat["levels"], f"{what}.levels", where)
            if levels.shape[0] > E.MAX_LEVELS:
                _fail(where, f"{what}: more than {E.MAX_LEVELS} levels")
        kinds.append(kind)
        categories.append(levels)
        families.append(feat["family"])
    encoding = E.Encoding(np.array(kinds, dtype=np.int8), tuple(categories), tuple(families))
    return p, names, encoding


def decode_params(est, params, where):
    """Set the saved ``params`` (exactly the estimator's parameters) on ``est``."""
    _exact_keys(params, set(est.get_params(deep=False)), "params", where)
    est.set_params(**{k: _decode_param(v, f"parameter {k}", where) for k, v in params.items()})


def _build(meta, arrays, where):
    from . import estimators

    if meta["estimator"] in FOREST_ESTIMATORS:
        from ._forestfile import build_forest
        return build_forest(meta, arrays, where)
    p, names, encoding = decode_features(meta, where)
    n_levels = encoding.n_levels

    cls = getattr(estimators, meta["estimator"])
    est = cls()
    params = meta["params"]
    if isinstance(params, dict) and "compat" not in params:
        # written before the estimators had ``compat``: those files are the exact mode
        params = dict(params, compat="breiman")
    decode_params(est, params, where)
    try:
        est._check_params()
        if hasattr(est, "_check_cv_params"):
            est._check_cv_params()
    except (TypeError, ValueError) as exc:
        _fail(where, f"a saved parameter is invalid: {exc}")

    prefixes = ("tree_max",) if meta["tree_is_tree_max"] else ("tree", "tree_max")
    trees = {prefix: _tree_of(arrays, prefix, where) for prefix in prefixes}
    for prefix, tree in trees.items():
        _check_tree(tree, prefix, meta, n_levels, where)
    tree_max = trees["tree_max"]
    tree = trees.get("tree", tree_max)
    if tree is not tree_max:
        _check_pruned(tree, tree_max, where)
    classifier = est._is_classifier
    n_values = tree_max.value.shape[1]
    for prefix, t in trees.items():
        if classifier != (int(t.label[0]) >= 0) or t.value.shape[1] != n_values:
            _fail(where, f"{prefix} is not a {'classification' if classifier else 'regression'}"
                         f" tree with {n_values} value columns")
    est.tree_max_, est.tree_ = tree_max, tree
    est.n_features_in_ = p
    est.max_surrogate_ = _int(meta["max_surrogate"], "max_surrogate", where, 0, 2**31 - 1)
    est._use_surrogate = _int(meta["use_surrogate"], "use_surrogate", where, 0, 2)
    est._encoding = encoding
    est.is_categorical_ = encoding.is_categorical.copy()
    est.categories_ = list(encoding.categories)
    if names is not None:
        est.feature_names_in_ = names
    if classifier:
        _set_classes(est, meta, arrays, n_values, where)
    for prefix, t in trees.items():
        _check_derived(t, prefix, est if classifier else None, where)
    if meta["estimator"].endswith("CV"):
        _set_cv(est, meta, arrays, tree_max, where)
    elif meta["test_sample"] is not None:
        _set_test_sample(est, meta["test_sample"], arrays, tree_max, where)
    return est


def _check_choice(choice, k, what, where):
    """The chosen row and α of a selection over ``k`` rows (CV or test sample)."""
    best = _int(choice["best_index"], f"{what}.best_index", where, 0, k - 1)
    alpha = choice["alpha"]
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or \
            not (math.isfinite(alpha) and alpha >= 0):
        _fail(where, f"{what}.alpha must be a finite number >= 0, got {_short(alpha)}")
    return best, float(alpha)


def _set_test_sample(est, choice, arrays, tree_max, where):
    import pandas as pd

    if not isinstance(choice, dict):
        _fail(where, "test_sample must be null or an object")
    _exact_keys(choice, {"alpha", "best_index"}, "test_sample", where)
    columns = {name: arrays[f"test_results/{name}"] for name in TEST_COLUMNS}
    k = columns["k"].shape[0]
    if k < 1 or any(c.shape != (k,) for c in columns.values()):
        _fail(where, "the test_results columns must be 1-d and of one length (at least 1)")
    best, alpha = _check_choice(choice, k, "test_sample", where)
    from .engine.pruning import index_by_k
    est.test_results_ = index_by_k(pd.DataFrame(columns))
    est.alpha_ = alpha
    est.best_index_ = best


def _set_classes(est, meta, arrays, n_classes, where):
    classes = _decode_levels(meta["classes"], "classes", where)
    if classes.shape[0] != n_classes:
        _fail(where, f"classes has {classes.shape[0]} labels but the tree's value has "
                     f"{n_classes} columns")
    priors, cost, totals = arrays["priors"], arrays["cost"], arrays["class_weight_totals"]
    if priors.shape != (n_classes,) or totals.shape != (n_classes,) or \
            cost.shape != (n_classes, n_classes):
        _fail(where, f"priors, class_weight_totals and cost must have shapes ({n_classes},),"
                     f" ({n_classes},) and ({n_classes}, {n_classes})")
    if not (np.all(np.isfinite(priors)) and np.all(priors > 0)
            and abs(float(priors.sum()) - 1.0) <= 1e-9):
        _fail(where, "priors must be positive, finite and sum to 1")
    if not (np.all(np.isfinite(totals)) and np.all(totals > 0)):
        _fail(where, "class_weight_totals must be positive and finite")
    if not (np.all(np.isfinite(cost)) and np.all(cost >= 0) and not np.any(np.diag(cost))):
        _fail(where, "cost must be finite and non-negative with a zero diagonal")
    if not isinstance(meta["split_cost_default"], bool):
        _fail(where, "split_cost_default must be true or false")
    est.classes_ = classes
    est.n_classes_ = n_classes
    est.priors_ = priors
    est.cost_ = cost
    est.class_weight_totals_ = totals
    est._split_cost_default = meta["split_cost_default"]


def _set_cv(est, meta, arrays, tree_max, where):
    import pandas as pd

    cv = meta["cv"]
    _exact_keys(cv, {"alpha", "best_index", "n_folds", "n_repeats", "predictions"}, "cv",
                where)
    columns = {name: arrays[f"cv_results/{name}"] for name in CV_COLUMNS}
    k = columns["k"].shape[0]
    if k < 1 or any(c.shape != (k,) for c in columns.values()):
        _fail(where, "the cv_results columns must be 1-d and of one length (at least 1)")
    n_repeats = _int(cv["n_repeats"], "cv.n_repeats", where, 1)
    n_folds = _int(cv["n_folds"], "cv.n_folds", where, 2)
    best, alpha = _check_choice(cv, k, "cv", where)
    risk, se = arrays["cv_risk_repeats"], arrays["cv_se_repeats"]
    if risk.shape != (n_repeats, k) or se.shape != (n_repeats, k):
        _fail(where, f"cv_risk_repeats and cv_se_repeats must have shape ({n_repeats}, {k})")
    folds = arrays["folds"]
    if folds.ndim != 2 or folds.shape[0] != n_repeats or \
            np.any(folds < -1) or np.any(folds >= n_folds):
        _fail(where, f"folds must be ({n_repeats}, n) fold ids in [-1, {n_folds})")
    counts, values = arrays["fold_alpha_counts"], arrays["fold_alpha_values"]
    if counts.shape != (n_repeats, n_folds) or np.any(counts < 0) or \
            int(counts.sum()) != values.shape[0] or values.ndim != 1:
        _fail(where, f"fold_alpha_counts must be ({n_repeats}, {n_folds}) non-negative "
                     "counts adding up to the length of fold_alpha_values")
    ends = np.cumsum(counts.ravel())
    pieces = np.split(values, ends[:-1])
    est.cv_results_ = pd.DataFrame(columns)
    est.cv_risk_repeats_ = risk
    est.cv_se_repeats_ = se
    est.alpha_ = float(alpha)
    est.best_index_ = best
    est.n_folds_ = n_folds
    est.n_repeats_ = n_repeats
    est.folds_ = folds
    est.fold_alphas_ = [pieces[r * n_folds:(r + 1) * n_folds] for r in range(n_repeats)]
    if cv["predictions"] is not None:
        _set_cv_predictions(est, cv["predictions"], arrays, folds.shape[1], k, where)


def _set_cv_predictions(est, kept, arrays, n, k, where):
    """``cv_predictions_`` (and ``cv_proba_``): one row per case, one column per row of
    ``cv_results_``; -1 (classes) or NaN (values) for a case that takes no part."""
    if kept not in ("predictions", "proba"):
        _fail(where, f"cv.predictions must be null, 'predictions' or 'proba', got "
                     f"{_short(kept)}")
    pred = arrays["cv_predictions"]
    if pred.shape != (n, k):
        _fail(where, f"cv_predictions must have shape ({n}, {k})")
    if est._is_classifier:
        j = est.n_classes_
        if not np.all((pred == np.round(pred)) & (pred >= -1) & (pred < j)):
            _fail(where, f"cv_predictions must hold class indices in [-1, {j})")
        est.cv_predictions_ = pred.astype(np.int64)
    else:
        if np.any(np.isinf(pred)):
            _fail(where, "cv_predictions must be finite (NaN for a case that takes no part)")
        est.cv_predictions_ = pred
    if kept == "proba":
        if not est._is_classifier:
            _fail(where, "cv_proba belongs to a classifier")
        proba = arrays["cv_proba"]
        if proba.shape != (n, k, est.n_classes_):
            _fail(where, f"cv_proba must have shape ({n}, {k}, {est.n_classes_})")
        if np.any(np.isinf(proba)) or np.any(proba < 0) or np.any(proba > 1):
            _fail(where, "cv_proba must hold probabilities in [0, 1] (NaN: no part)")
        est.cv_proba_ = proba
