"""Experiment configuration files: the TOML schema, its defaults and its validation.

An experiment is a sweep of cross-validation runs (docs/maths.md §5) over datasets, numbers of
folds V, repeated random partitions and tree settings. It is described by a TOML file
(read with :mod:`tomllib`) with four tables::

    [experiment]            # optional: name and description, for the reports
    [cv]                    # V values, n_repeats, seed(s), stratify, selection rules
    [tree]                  # criterion, priors, cost and the tree parameters
    [[datasets]]            # one table per dataset (bundled, CSV/Parquet file, synthetic)

Every value of ``[tree]`` and ``V`` of ``[cv]`` may be a list: the sweep is the
cartesian product. A ``[[datasets]]`` entry may override any key of ``[cv]`` (but
``selection``) and of ``[tree]`` in its own ``cv`` / ``tree`` sub-table. The full
reference, with every key, type and default, is ``docs/experiments.md``.

:func:`read_config` checks the file alone (types, allowed values, unknown keys);

:func:`cartjit.experiments.data.resolve` then loads the data and checks what depends
on it (V <= N, feature names, one prior per class). Every problem is a
:class:`ConfigError` whose message starts with the file and the dotted name of the
field, e.g. ``monograph.toml: datasets[2].cv.V: ...`` (datasets are numbered from 1,
in the order of the file). Nothing is written anywhere while a config is checked.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from ..engine.limits import MemoryLimitError, check_allocation
from .._prepare import CLASSIFIER_CRITERIA, REGRESSOR_CRITERIA

__all__ = ["ConfigError", "DatasetSpec", "ExperimentConfig", "read_config", "canonical_json",
           "TREE_DEFAULTS", "CV_DEFAULTS", "selection_label"]

TASKS = ("classification", "regression")
SYNTHETIC_KINDS = ("classification", "regression")
FILE_FORMATS = ("csv", "parquet")
#: The format of a data file told by its extension (when ``format`` is not given).
FORMAT_BY_EXTENSION = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def format_from_extension(path):
    """``"csv"`` or ``"parquet"`` from the extension of ``path``, or ``None``."""
    return FORMAT_BY_EXTENSION.get(os.path.splitext(path)[1].lower())

#: Defaults of ``[tree]`` (``criterion`` and the class settings depend on the task).
TREE_DEFAULTS = {
    "criterion": None,               # gini (classification) / squared_error (regression)
    "priors": "empirical",
    "cost": "0-1",
    "max_depth": "none",
    "min_samples_split": 2,
    "min_samples_leaf": 1,
    "min_impurity_decrease": 0.0,
    "max_leaf_nodes": "none",
}
#: Keys of ``[tree]`` that concern classification only.
CLASS_ONLY = ("priors", "cost")

#: Defaults of ``[cv]``.
CV_DEFAULTS = {
    "V": [10],
    "n_repeats": 1,
    "seed": 0,
    "seeds": None,
    "stratify": False,
    "selection": ["min", "1se"],
}

_TOP_KEYS = ("experiment", "cv", "tree", "datasets")
_EXPERIMENT_KEYS = ("name", "description")
_DATASET_COMMON = ("name", "cv", "tree")
_BUNDLED_KEYS = ("bundled", "features", "task")
_FILE_KEYS = ("path", "format", "target", "features", "task")
_SYNTH_KEYS = {
    "classification": ("synthetic", "n_samples", "n_features", "n_classes", "n_informative",
                       "label_noise", "random_state"),
    "regression": ("synthetic", "n_samples", "n_features", "n_informative", "noise",
                   "random_state"),
}


class ConfigError(ValueError):
    """A problem with an experiment configuration, naming the file and the field."""

    def __init__(self, file, field_name, message):
        self.file = str(file)
        self.field = field_name
        self.message = message
        where = f"{self.file}: {field_name}" if field_name else self.file
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of the sweep, as written in the file (data not loaded yet).

    ``source`` is ``"bundled"``, ``"file"`` or ``"synthetic"``; ``cv`` and ``tree`` are
    the merged settings (global table, then the entry's own sub-table), with every
    sweep axis as a list. ``where`` is the field prefix for error messages.
    """

    name: str
    source: str
    where: str
    bundled: str | None = None
    path: str | None = None
    format: str | None = None
    target: str | None = None
    features: tuple | None = None
    task: str | None = None
    synthetic: dict | None = None
    cv: dict = field(default_factory=dict)
    tree: dict = field(default_factory=dict)
    cv_where: dict = field(default_factory=dict)    # key -> field name it came from
    tree_where: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentConfig:
    """A checked configuration file."""

    file: str
    name: str
    description: str
    datasets: tuple
    selection: tuple
    text: str                      # the file as read, copied into the output directory


# --------------------------------------------------------------------------- helpers

def canonical_json(obj) -> str:
    """JSON with sorted keys and no spaces: the input of every hash of the runner."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def sha256_hex(obj) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def _type_name(value):
    names = {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
             dict: "table"}
    return names.get(type(value), type(value).__name__)


class _Checker:
    """Raises :class:`ConfigError` for one file; small typed accessors."""

    def __init__(self, file):
        self.file = file

    def fail(self, where, message):
        raise ConfigError(self.file, where, message)

    def table(self, value, where):
        if not isinstance(value, dict):
            self.fail(where, f"must be a table, got {_type_name(value)} {value!r}")
        return value

    def keys(self, table, allowed, where, hint=""):
        for key in table:
            if key not in allowed:
                prefix = f"{where}.{key}" if where else key
                self.fail(prefix, f"unknown key {key!r}; allowed keys here are "
                                  f"{', '.join(allowed)}{hint}")

    def string(self, value, where, choices=None):
        if not isinstance(value, str):
            self.fail(where, f"must be a string, got {_type_name(value)} {value!r}")
        if choices is not None and value not in choices:
            self.fail(where, f"must be one of {', '.join(repr(c) for c in choices)}, "
                             f"got {value!r}")
        return value

    def boolean(self, value, where):
        if not isinstance(value, bool):
            self.fail(where, f"must be true or false, got {_type_name(value)} {value!r}")
        return value

    def integer(self, value, where, low=None, high=None):
        if isinstance(value, bool) or not isinstance(value, int):
            hint = ""
            if isinstance(value, float) and value.is_integer():
                hint = f" (write it without a decimal point or exponent, e.g. {int(value):_})"
            self.fail(where, f"must be an integer, got {_type_name(value)} {value!r}{hint}")
        return self._bounded(value, where, low, high, "an integer", str, str(value))

    def real(self, value, where, low=None, high=None):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, f"must be a number, got {_type_name(value)} {value!r}")
        value = float(value)
        if not math.isfinite(value):
            self.fail(where, f"must be a finite number, got {value!r}")
        return self._bounded(value, where, low, high, "a number", "{:g}".format, repr(value))

    def _bounded(self, value, where, low, high, kind, fmt, shown):
        """``value`` if within [low, high] (either may be None), else the error."""
        if low is not None and value < low:
            self.fail(where, f"must be {kind} >= {fmt(low)}, got {shown}")
        if high is not None and value > high:
            self.fail(where, f"must be {kind} <= {fmt(high)}, got {shown}")
        return value

    def string_list(self, value, where):
        if not isinstance(value, list) or not value:
            self.fail(where, f"must be a non-empty array of strings, got {_type_name(value)} "
                             f"{value!r}")
        for i, item in enumerate(value):
            self.string(item, f"{where}[{i}]")
        if len(set(value)) != len(value):
            dup = next(v for v in value if value.count(v) > 1)
            self.fail(where, f"lists {dup!r} more than once")
        return tuple(value)


def _options(value):
    """A sweep axis: a scalar is one option, an array its list of options."""
    return list(value) if isinstance(value, list) else [value]


def _no_duplicates(chk, options, where, key=lambda v: canonical_json(v)):
    seen = set()
    for opt in options:
        k = key(opt)
        if k in seen:
            chk.fail(where, f"lists the value {opt!r} more than once (each value is one "
                            "column of the sweep)")
        seen.add(k)


# --------------------------------------------------------------------------- [tree]

def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_priors_option(chk, value, where):
    if isinstance(value, str):
        return chk.string(value, where, ("empirical", "equal"))
    if isinstance(value, list) and value and all(_is_number(v) for v in value):
        vec = [chk.real(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if any(v <= 0 for v in vec):
            chk.fail(where, f"given priors must all be > 0, got {vec}")
        if abs(sum(vec) - 1.0) > 1e-8:
            chk.fail(where, f"given priors must sum to 1, got sum {sum(vec)!r}")
        return vec
    chk.fail(where, "must be 'empirical', 'equal' or an array of one positive number per "
                    f"class summing to 1, got {_type_name(value)} {value!r}")


def _is_vector(v):
    return all(_is_number(x) for x in v)


def _is_matrix(v):
    return (isinstance(v, list) and v and all(isinstance(r, list) for r in v)
            and all(_is_number(x) for r in v for x in r))


def _check_cost_option(chk, value, where):
    if isinstance(value, str):
        return chk.string(value, where, ("0-1",))
    if _is_matrix(value):
        n = len(value)
        rows = []
        for i, row in enumerate(value):
            if len(row) != n:
                chk.fail(where, f"must be a square matrix (one row per true class, one "
                                f"column per predicted class); row {i + 1} has {len(row)} "
                                f"entries, expected {n}")
            rows.append([chk.real(x, f"{where}[{i}][{j}]", low=0.0) for j, x in enumerate(row)])
        if any(rows[i][i] != 0 for i in range(n)):
            chk.fail(where, "must have a zero diagonal (C(j|j) = 0)")
        return rows
    chk.fail(where, "must be '0-1' or a square matrix [[...], ...] of costs C(i|j) (row j: "
                    f"true class, column i: predicted class), got {_type_name(value)} {value!r}")


def _nested_options(chk, value, where, is_one, check_one):
    """Options of a key whose one value may itself be an array (priors: a vector of
    numbers; cost: a matrix): an array of anything else is a sweep over its entries.
    The caller has refused an empty array and checks for duplicates."""
    if isinstance(value, list) and not is_one(value):
        return [check_one(chk, v, f"{where}[{i}]") for i, v in enumerate(value)]
    return [check_one(chk, value, where)]


def _int_or_word_options(chk, value, where, low, word, meaning):
    """Options that are each an integer >= ``low`` or the string ``word`` (``meaning``)."""
    allowed = f"an integer >= {low} or \"{word}\" ({meaning})"
    opts = []
    for i, v in enumerate(_options(value)):
        w = f"{where}[{i}]" if isinstance(value, list) else where
        if isinstance(v, str):
            if v != word:
                chk.fail(w, f"must be {allowed}, got {v!r}")
            opts.append(word)
        else:
            if isinstance(v, bool) or not isinstance(v, int):
                chk.fail(w, f"must be {allowed}, got {_type_name(v)} {v!r}")
            opts.append(chk.integer(v, w, low=low))
    return opts


def _check_tree(chk, table, where, *, per_dataset_task=None):
    """Sweep options of a ``[tree]`` table; returns ``({key: [options]}, {key: field})``."""
    chk.table(table, where)
    chk.keys(table, tuple(TREE_DEFAULTS), where)
    out, fields = {}, {}
    for key, value in table.items():
        w = f"{where}.{key}"
        if isinstance(value, list) and not value:
            chk.fail(w, "must not be an empty array")
        if key == "criterion":
            allowed = CLASSIFIER_CRITERIA + REGRESSOR_CRITERIA
            opts = [chk.string(v, f"{w}[{i}]" if isinstance(value, list) else w, allowed)
                    for i, v in enumerate(_options(value))]
        elif key == "priors":
            opts = _nested_options(chk, value, w, _is_vector, _check_priors_option)
        elif key == "cost":
            opts = _nested_options(chk, value, w, _is_matrix, _check_cost_option)
        elif key in ("max_depth", "max_leaf_nodes"):
            opts = _int_or_word_options(chk, value, w, 0 if key == "max_depth" else 2,
                                        "none", "no limit")
        elif key in ("min_samples_split", "min_samples_leaf"):
            low = 2 if key == "min_samples_split" else 1
            opts = [chk.integer(v, f"{w}[{i}]" if isinstance(value, list) else w, low=low)
                    for i, v in enumerate(_options(value))]
        else:  # min_impurity_decrease
            opts = [chk.real(v, f"{w}[{i}]" if isinstance(value, list) else w, low=0.0)
                    for i, v in enumerate(_options(value))]
        _no_duplicates(chk, opts, w)
        if per_dataset_task == "regression" and key in CLASS_ONLY:
            chk.fail(w, f"{key} concerns classification, but this dataset is a regression "
                        "problem")
        out[key], fields[key] = opts, w
    return out, fields


# --------------------------------------------------------------------------- [cv]

def selection_label(rule) -> str:
    """Column suffix of a selection rule: ``min``, ``1se``, ``0.5se``."""
    if rule == "min":
        return "min"
    if rule == "1se":
        return "1se"
    return f"{float(rule):g}se"


def _check_V(chk, value, where):
    opts = _int_or_word_options(chk, value, where, 2, "loo", "leave-one-out")
    if not opts:
        chk.fail(where, "must not be an empty array")
    _no_duplicates(chk, opts, where)
    return opts


def _check_cv(chk, table, where, *, top):
    chk.table(table, where)
    allowed = tuple(CV_DEFAULTS) if top else tuple(k for k in CV_DEFAULTS if k != "selection")
    hint = "" if top else " (selection applies to the whole run: set it in [cv])"
    chk.keys(table, allowed, where, hint)
    out, fields = {}, {}
    for key, value in table.items():
        w = f"{where}.{key}"
        if key == "V":
            out[key] = _check_V(chk, value, w)
        elif key == "n_repeats":
            out[key] = chk.integer(value, w, low=1)
        elif key == "seed":
            out[key] = chk.integer(value, w, low=0)
        elif key == "seeds":
            if not isinstance(value, list) or not value:
                chk.fail(w, f"must be a non-empty array of integers >= 0, got "
                            f"{_type_name(value)} {value!r}")
            out[key] = [chk.integer(v, f"{w}[{i}]", low=0) for i, v in enumerate(value)]
        elif key == "stratify":
            out[key] = chk.boolean(value, w)
        else:  # selection
            rules = []
            for i, v in enumerate(_options(value)):
                wi = f"{w}[{i}]" if isinstance(value, list) else w
                if isinstance(v, str):
                    rules.append(chk.string(v, wi, ("min", "1se")))
                elif _is_number(v):
                    rules.append(chk.real(v, wi, low=0.0))
                else:
                    chk.fail(wi, "must be \"min\", \"1se\" or a number m >= 0 (the m-SE "
                                 f"rule), got {_type_name(v)} {v!r}")
            if not rules:
                chk.fail(w, "must not be an empty array")
            _no_duplicates(chk, rules, w, key=selection_label)
            out[key] = rules
        fields[key] = w
    return out, fields


# --------------------------------------------------------------------------- datasets

def _bundled_registry():
    from ..datasets import _REGISTRY
    return {entry[0]: entry[3] for entry in _REGISTRY}


def _check_dataset(chk, entry, where, config_dir):
    """One ``[[datasets]]`` table -> list of (spec fields) dicts (synthetic may expand)."""
    chk.table(entry, where)
    sources = [k for k in ("bundled", "path", "synthetic") if k in entry]
    registry = _bundled_registry()
    if len(sources) > 1:
        chk.fail(where, f"give exactly one data source, got {' and '.join(sources)}")
    if not sources:
        if "name" not in entry:
            chk.fail(where, "needs a data source: bundled = NAME, path = FILE (with target) "
                            "or synthetic = \"classification\" / \"regression\"; or a name "
                            f"that is a bundled dataset ({', '.join(sorted(registry))})")
        name = chk.string(entry["name"], f"{where}.name")
        if name not in registry:
            chk.fail(f"{where}.name", f"{name!r} is not a bundled dataset (bundled: "
                                      f"{', '.join(sorted(registry))}); to read a file give "
                                      "path = \"...\" and target = \"...\", for generated "
                                      "data synthetic = \"classification\" or \"regression\"")
        sources = ["bundled"]
        entry = dict(entry, bundled=name)
    source = sources[0]
    common = {}
    if source == "bundled":
        chk.keys(entry, _DATASET_COMMON + _BUNDLED_KEYS, where)
        bundled = chk.string(entry["bundled"], f"{where}.bundled")
        if bundled not in registry:
            chk.fail(f"{where}.bundled", f"{bundled!r} is not a bundled dataset; the bundled "
                                         f"datasets are {', '.join(sorted(registry))}")
        task = registry[bundled]
        if "task" in entry:
            given = chk.string(entry["task"], f"{where}.task", TASKS)
            if given != task:
                chk.fail(f"{where}.task", f"bundled dataset {bundled!r} is a {task} problem, "
                                          f"not {given}")
        name = chk.string(entry.get("name", bundled), f"{where}.name")
        features = (chk.string_list(entry["features"], f"{where}.features")
                    if "features" in entry else None)
        common = dict(source="bundled", bundled=bundled, task=task, features=features)
        specs = [dict(common, name=name)]
    elif source == "path":
        chk.keys(entry, _DATASET_COMMON + _FILE_KEYS, where)
        raw_path = chk.string(entry["path"], f"{where}.path")
        path = raw_path if os.path.isabs(raw_path) else os.path.join(config_dir, raw_path)
        path = os.path.normpath(path)
        if "format" in entry:
            fmt = chk.string(entry["format"], f"{where}.format", FILE_FORMATS)
        else:
            fmt = format_from_extension(path)
            if fmt is None:
                chk.fail(f"{where}.path", f"cannot tell the format of {raw_path!r} from its "
                                          "extension (.csv, .parquet); give format = "
                                          "\"csv\" or \"parquet\"")
        if "target" not in entry:
            chk.fail(f"{where}.target", "is required with path: the name of the column to "
                                        "predict")
        target = chk.string(entry["target"], f"{where}.target")
        if "name" not in entry:
            chk.fail(f"{where}.name", "is required for a file dataset (it names the results)")
        name = chk.string(entry["name"], f"{where}.name")
        task = chk.string(entry["task"], f"{where}.task", TASKS) if "task" in entry else None
        features = (chk.string_list(entry["features"], f"{where}.features")
                    if "features" in entry else None)
        if features is not None and target in features:
            chk.fail(f"{where}.features", f"lists the target column {target!r}")
        specs = [dict(source="file", path=path, format=fmt, target=target, task=task,
                      features=features, name=name)]
    else:
        kind = chk.string(entry["synthetic"], f"{where}.synthetic", SYNTHETIC_KINDS)
        chk.keys(entry, _DATASET_COMMON + _SYNTH_KEYS[kind], where)
        if "name" not in entry:
            chk.fail(f"{where}.name", "is required for a synthetic dataset (it names the "
                                      "results)")
        name = chk.string(entry["name"], f"{where}.name")
        if "n_samples" not in entry:
            chk.fail(f"{where}.n_samples", "is required for a synthetic dataset (an integer "
                                           "or an array of integers)")
        ns = _options(entry["n_samples"])
        if not ns:
            chk.fail(f"{where}.n_samples", "must not be an empty array")
        ns = [chk.integer(v, f"{where}.n_samples" + (f"[{i}]" if isinstance(entry["n_samples"], list) else ""), low=2)
              for i, v in enumerate(ns)]
        _no_duplicates(chk, ns, f"{where}.n_samples")
        params = {"n_features": 20, "n_informative": 5, "random_state": 0}
        if kind == "classification":
            params.update(n_classes=3, label_noise=0.1)
        else:
            params.update(noise=1.0)
        for key in list(params):
            if key in entry:
                w = f"{where}.{key}"
                if key in ("label_noise", "noise"):
                    params[key] = chk.real(entry[key], w, low=0.0,
                                           high=1.0 if key == "label_noise" else None)
                else:
                    low = {"n_features": 1, "n_informative": 1, "n_classes": 2,
                           "random_state": 0}[key]
                    params[key] = chk.integer(entry[key], w, low=low)
        if params["n_informative"] > params["n_features"]:
            chk.fail(f"{where}.n_informative", f"must be <= n_features = "
                                               f"{params['n_features']}, got "
                                               f"{params['n_informative']}")
        for i, n in enumerate(ns):
            width = params["n_features"] + (params["n_classes"] if kind == "classification"
                                             else 1)
            try:
                check_allocation(8 * n * width, f"a synthetic dataset of n_samples={n:_} x "
                                                f"n_features={params['n_features']:_}"
                                 + (f" (n_classes={params['n_classes']:_})"
                                    if kind == "classification" else ""),
                                 "ask for fewer cases or features")
            except MemoryLimitError as exc:
                chk.fail(f"{where}.n_samples" + (f"[{i}]" if isinstance(entry["n_samples"], list)
                                                 else ""), str(exc))
        specs = []
        for n in ns:
            label = name if len(ns) == 1 else f"{name}_n{n}"
            specs.append(dict(source="synthetic", task=kind, name=label,
                              synthetic=dict(params, kind=kind, n_samples=n)))
    for spec in specs:
        if not spec["name"] or any(c in spec["name"] for c in "/\\\0"):
            chk.fail(f"{where}.name", f"must be a non-empty name without slashes, got "
                                      f"{spec['name']!r}")
    return specs


# --------------------------------------------------------------------------- reading

def read_config(path) -> ExperimentConfig:
    """Read and check an experiment file; every problem is a :class:`ConfigError`."""
    path = os.fspath(path)
    chk = _Checker(path)
    try:
        with open(path, "rb") as fh:
            raw_bytes = fh.read()
    except FileNotFoundError:
        chk.fail("", "no such file")
    except IsADirectoryError:
        chk.fail("", "is a directory, not a TOML file")
    except OSError as exc:
        chk.fail("", f"cannot be read: {exc.strerror or exc}")
    try:
        text = raw_bytes.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        chk.fail("", f"is not UTF-8 text: {exc}")
    except tomllib.TOMLDecodeError as exc:
        chk.fail("", f"is not valid TOML: {exc}")
    chk.keys(doc, _TOP_KEYS, "", " (top-level tables)")

    exp = chk.table(doc.get("experiment", {}), "experiment")
    chk.keys(exp, _EXPERIMENT_KEYS, "experiment")
    name = chk.string(exp.get("name", os.path.splitext(os.path.basename(path))[0]),
                      "experiment.name")
    description = chk.string(exp.get("description", ""), "experiment.description")

    cv_global, cv_fields = _check_cv(chk, doc.get("cv", {}), "cv", top=True)
    tree_global, tree_fields = _check_tree(chk, doc.get("tree", {}), "tree")
    selection = tuple(cv_global.pop("selection", CV_DEFAULTS["selection"]))
    cv_fields.pop("selection", None)

    if "datasets" not in doc:
        chk.fail("datasets", "is required: add at least one [[datasets]] table, e.g. "
                             "[[datasets]] bundled = \"iris\"")
    entries = doc["datasets"]
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        chk.fail("datasets", "must be one or more [[datasets]] tables")
    config_dir = os.path.dirname(os.path.abspath(path))
    specs, seen = [], {}
    for i, entry in enumerate(entries, start=1):
        where = f"datasets[{i}]"
        for spec in _check_dataset(chk, entry, where, config_dir):
            if spec["name"] in seen:
                chk.fail(f"{where}.name", f"the name {spec['name']!r} is already used by "
                                          f"{seen[spec['name']]}; give each dataset its own "
                                          "name")
            seen[spec["name"]] = where
            cv_own, cv_own_fields = _check_cv(chk, entry.get("cv", {}), f"{where}.cv",
                                              top=False)
            tree_own, tree_own_fields = _check_tree(
                chk, entry.get("tree", {}), f"{where}.tree",
                per_dataset_task=spec.get("task"))
            cv = {k: v for k, v in CV_DEFAULTS.items() if k != "selection"}
            cv.update(cv_global)
            cv.update(cv_own)
            cvw = {k: f"cv.{k}" for k in cv}
            cvw.update(cv_fields)
            cvw.update(cv_own_fields)
            if cv["seeds"] is not None:
                repeats_set = "n_repeats" in cv_own or "n_repeats" in cv_global
                if repeats_set and len(cv["seeds"]) != cv["n_repeats"]:
                    chk.fail(cvw["seeds"], f"has {len(cv['seeds'])} seeds but n_repeats = "
                                           f"{cv['n_repeats']} ({cvw['n_repeats']}): give "
                                           "one seed per repeat, or leave n_repeats out")
                cv["n_repeats"] = len(cv["seeds"])
            tree = {k: _options(v) for k, v in TREE_DEFAULTS.items()}
            tree.update(tree_global)
            tree.update(tree_own)
            trw = {k: f"tree.{k}" for k in tree}
            trw.update(tree_fields)
            trw.update(tree_own_fields)
            specs.append(DatasetSpec(
                name=spec["name"], source=spec["source"], where=where,
                bundled=spec.get("bundled"), path=spec.get("path"), format=spec.get("format"),
                target=spec.get("target"), features=spec.get("features"),
                task=spec.get("task"), synthetic=spec.get("synthetic"), cv=cv, tree=tree,
                cv_where=cvw, tree_where=trw))
    return ExperimentConfig(file=path, name=name, description=description,
                            datasets=tuple(specs), selection=selection, text=text)
