"""Experiment configuration files: the TOML schema, its defaults and its validation.

An experiment is a sweep of cross-validation runs (docs/maths.md §5) over datasets, numbers of
folds V, repeated random partitions and tree settings. It is described by a TOML file
(read with :mod:`tomllib`) with four tables::

    [experiment]            # optional: name and description, for the reports
    [cv]                    # V values, n_repeats, seed(s), stratify, selection rules
    [tree]                  # criterion, priors, cost and the tree parameters
    [[datasets]]            # one table per dataset (bundled, CSV/Parquet file, synthetic,
                            # a generator of cartjit.datasets)

A *methods study* replaces ``[cv]`` and ``[tree]`` by ``[methods.NAME]`` tables (each an
estimator and its parameters, a list sweeping a parameter) and a ``[protocol]`` table
(V-fold CV, random learning/test splits, a generator's fresh samples or a test file;
:mod:`cartjit.experiments.protocols`); a dataset may override keys of ``[protocol]`` in
its own ``protocol`` sub-table. The guide is ``docs/studies.md``.

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
from . import methods as _methods
from . import protocols as _protocols

__all__ = ["ConfigError", "DatasetSpec", "ExperimentConfig", "MethodSpec", "read_config",
           "canonical_json", "TREE_DEFAULTS", "CV_DEFAULTS", "PROTOCOL_DEFAULTS",
           "selection_label"]

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

#: Defaults of ``[protocol]`` (a methods study); ``kind`` has none.
PROTOCOL_DEFAULTS = {"n_repeats": 1, "seed": 0, "V": 10, "stratify": False, "cost": "0-1"}
#: The keys of ``[protocol]`` each kind takes.
PROTOCOL_KEYS = {
    "cv": ("kind", "V", "n_repeats", "seed", "stratify", "cost"),
    "split": ("kind", "test_fraction", "n_repeats", "seed", "stratify", "cost"),
    "fresh": ("kind", "n_repeats", "seed", "cost"),
    "test_file": ("kind", "n_repeats", "cost"),
}

_TOP_KEYS = ("experiment", "cv", "tree", "datasets", "methods", "protocol", "study")
_STUDY_KEYS = ("baseline",)
_EXPERIMENT_KEYS = ("name", "description")
_DATASET_COMMON = ("name", "cv", "tree", "protocol")
_BUNDLED_KEYS = ("bundled", "features", "task")
_FILE_KEYS = ("path", "format", "target", "features", "task", "test_path")
_GENERATOR_KEYS = ("generator", "n", "test_n", "random_state", "params", "features")
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
    generator: dict | None = None    # name, n, test_n, random_state, params
    test_path: str | None = None     # the test file of the test_file protocol
    protocol: dict | None = None     # a methods study: the merged protocol
    protocol_where: dict = field(default_factory=dict)


@dataclass(frozen=True)
class MethodSpec:
    """One method of a study, one combination of its swept parameters.

    ``label`` names it in every table (``rf``, or ``rf[max_features=2]`` in a sweep),
    ``name`` is its ``[methods.NAME]``, ``estimator`` the estimator as written (a class
    name of cartjit, an alias for either task, or an import path), ``params`` its
    parameters for this combination and ``where`` the field prefix of its table.
    """

    label: str
    name: str
    estimator: str
    params: dict
    where: str


@dataclass(frozen=True)
class ExperimentConfig:
    """A checked configuration file."""

    file: str
    name: str
    description: str
    datasets: tuple
    selection: tuple
    text: str                      # the file as read, copied into the output directory
    methods: tuple = ()            # a methods study: its MethodSpec's; () for a CV sweep
    baseline: str | None = None    # a methods study: the label of its baseline method


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
    """Names ``bundled`` accepts and their task: the bundled datasets of
    :func:`cartjit.datasets.load_dataset` and the real data sets of
    :func:`cartjit.datasets.literature` (``breast_cancer``, ``soybean``, ...; the local
    ones, such as ``pima_diabetes``, read R's mlbench or a local file when loaded)."""
    from ..datasets import _REGISTRY, literature
    out = {entry[0]: entry[3] for entry in _REGISTRY}
    for name, entry in literature().items():
        if entry.kind != "generator":
            out.setdefault(name, entry.task)
    return out


def _check_dataset(chk, entry, where, config_dir):
    """One ``[[datasets]]`` table -> list of (spec fields) dicts (synthetic may expand)."""
    chk.table(entry, where)
    sources = [k for k in ("bundled", "path", "synthetic", "generator") if k in entry]
    registry = _bundled_registry()
    if len(sources) > 1:
        chk.fail(where, f"give exactly one data source, got {' and '.join(sources)}")
    if not sources:
        if "name" not in entry:
            chk.fail(where, "needs a data source: bundled = NAME, path = FILE (with target), "
                            "synthetic = \"classification\" / \"regression\" or generator = "
                            "NAME (with n); or a name that is a bundled dataset "
                            f"({', '.join(sorted(registry))})")
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
        test_path = None
        if "test_path" in entry:
            raw = chk.string(entry["test_path"], f"{where}.test_path")
            test_path = os.path.normpath(raw if os.path.isabs(raw)
                                         else os.path.join(config_dir, raw))
            if format_from_extension(test_path) not in (None, fmt):
                chk.fail(f"{where}.test_path", f"{raw!r} is not a {fmt} file like path; "
                                               "give the test sample in the same format")
        specs = [dict(source="file", path=path, format=fmt, target=target, task=task,
                      features=features, name=name, test_path=test_path)]
    elif source == "generator":
        specs = [_check_generator(chk, entry, where)]
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


def _check_generator(chk, entry, where):
    """A ``generator = NAME`` dataset: ``n`` cases (and ``test_n`` for the fresh
    protocol) from ``cartjit.datasets.make_<NAME>`` with ``params``; the values of the
    parameters are checked with the data (``data.resolve``), by the generator itself."""
    chk.keys(entry, _DATASET_COMMON + _GENERATOR_KEYS, where)
    gname = chk.string(entry["generator"], f"{where}.generator")
    try:
        _protocols.generator_function(gname)
    except LookupError:
        chk.fail(f"{where}.generator", f"{gname!r} is not a generator of cartjit.datasets; "
                                       "the generators are "
                                       f"{', '.join(_protocols.generator_names())}")
    if "n" not in entry:
        chk.fail(f"{where}.n", "is required for a generator dataset: the number of "
                               "(learning) cases")
    n = chk.integer(entry["n"], f"{where}.n", low=2)
    test_n = (chk.integer(entry["test_n"], f"{where}.test_n", low=1)
              if "test_n" in entry else None)
    random_state = chk.integer(entry.get("random_state", 0), f"{where}.random_state", low=0)
    params = chk.table(entry.get("params", {}), f"{where}.params")
    for key in ("random_state", "n", "n_samples"):
        if key in params:
            chk.fail(f"{where}.params.{key}", f"give {'n' if key != 'random_state' else key}"
                                              f" in the dataset's table, not in params")
    name = chk.string(entry.get("name", gname), f"{where}.name")
    features = (chk.string_list(entry["features"], f"{where}.features")
                if "features" in entry else None)
    return dict(source="generator", name=name, features=features,
                generator=dict(name=gname, n=n, test_n=test_n, random_state=random_state,
                               params=dict(params)))


# --------------------------------------------------------------------------- protocol

def _check_protocol(chk, table, where):
    """The keys of one ``[protocol]`` table (global or a dataset's), checked one by one;
    the combination is checked by :func:`_merge_protocol`. Returns ``(values, fields)``."""
    chk.table(table, where)
    every = sorted({k for keys in PROTOCOL_KEYS.values() for k in keys})
    chk.keys(table, tuple(every), where)
    out, fields = {}, {}
    for key, value in table.items():
        w = f"{where}.{key}"
        if key == "kind":
            out[key] = chk.string(value, w, _protocols.PROTOCOL_KINDS)
        elif key == "V":
            out[key] = chk.integer(value, w, low=2)
        elif key == "n_repeats":
            out[key] = chk.integer(value, w, low=1)
        elif key == "seed":
            out[key] = chk.integer(value, w, low=0)
        elif key == "stratify":
            out[key] = chk.boolean(value, w)
        elif key == "test_fraction":
            f = chk.real(value, w)
            if not 0.0 < f < 1.0:
                chk.fail(w, f"must be a number in (0, 1), the fraction of the cases held "
                            f"out for testing (e.g. 0.1), got {value!r}")
            out[key] = f
        else:  # cost
            out[key] = _check_cost_option(chk, value, w)
        fields[key] = w
    return out, fields


def _merge_protocol(chk, glob, glob_fields, own, own_fields, where, spec):
    """A dataset's protocol: the global ``[protocol]`` with its own sub-table over it (a
    sub-table that gives ``kind`` replaces the global table), checked for its kind."""
    if "kind" in own:
        values, fields = dict(own), dict(own_fields)
    else:
        values, fields = {**glob, **own}, {**glob_fields, **own_fields}
    if "kind" not in values:
        chk.fail(f"{where}.protocol" if own else "protocol.kind",
                 "is required in a methods study: kind = \"cv\" (V-fold cross-validation), "
                 "\"split\" (random learning/test splits), \"fresh\" (a generator's "
                 "fresh samples) or \"test_file\" (a given test file)")
    kind = values["kind"]
    for key in values:
        if key not in PROTOCOL_KEYS[kind]:
            chk.fail(fields[key], f"does not apply to protocol kind {kind!r} (its keys: "
                                  f"{', '.join(PROTOCOL_KEYS[kind])})")
    for key in PROTOCOL_KEYS[kind]:
        if key not in values and key in PROTOCOL_DEFAULTS:
            values[key] = PROTOCOL_DEFAULTS[key]
            fields[key] = f"protocol.{key}"
    kind_field = fields["kind"]
    if kind == "split" and "test_fraction" not in values:
        chk.fail(f"{kind_field.rsplit('.', 1)[0]}.test_fraction",
                 "is required with kind = \"split\": the fraction of the cases in each "
                 "test set, in (0, 1) (Breiman 1996: 0.1)")
    if kind == "fresh":
        gen = spec.get("generator")
        if gen is None:
            chk.fail(kind_field, f"kind = \"fresh\" draws new samples from a generator, "
                                 f"but dataset {spec['name']!r} ({where}) is not a generator "
                                 "dataset (generator = NAME, n, test_n)")
        if gen["test_n"] is None:
            chk.fail(f"{where}.test_n", f"is required for kind = \"fresh\": the size of "
                                        f"each fresh test sample of dataset {spec['name']!r}")
    elif spec.get("generator") is not None and spec["generator"]["test_n"] is not None:
        chk.fail(f"{where}.test_n", f"is used by the protocol kind \"fresh\" only; "
                                    f"dataset {spec['name']!r} has kind {kind!r}")
    if kind == "test_file":
        if spec.get("source") != "file" or spec.get("test_path") is None:
            chk.fail(kind_field, f"kind = \"test_file\" needs a test file: give dataset "
                                 f"{spec['name']!r} ({where}) path = ..., target = ... and "
                                 "test_path = ...")
        if values["n_repeats"] != 1:
            chk.fail(fields["n_repeats"], "must be 1 with kind = \"test_file\" (one "
                                          f"learning and one test sample), got "
                                          f"{values['n_repeats']}")
    elif spec.get("test_path") is not None:
        chk.fail(f"{where}.test_path", f"is used by the protocol kind \"test_file\" only; "
                                       f"dataset {spec['name']!r} has kind {kind!r}")
    if kind == "cv" and values["stratify"] and spec.get("task") == "regression":
        chk.fail(fields["stratify"], f"stratify needs class labels, but dataset "
                                     f"{spec['name']!r} is a regression problem")
    return values, fields


# --------------------------------------------------------------------------- methods

def _check_study(chk, doc, methods):
    """``[study]``: the label of the baseline method (``baseline = "NAME"``, a method's
    name when it has one label, or a label such as ``rf[max_features=2]``); the first
    method of the config by default."""
    table = chk.table(doc.get("study", {}), "study")
    chk.keys(table, _STUDY_KEYS, "study")
    if "baseline" not in table:
        return methods[0].label
    given = chk.string(table["baseline"], "study.baseline")
    labels = [m.label for m in methods]
    if given in labels:
        return given
    named = [m.label for m in methods if m.name == given]
    if len(named) == 1:
        return named[0]
    if named:
        chk.fail("study.baseline", f"method {given!r} is swept into {len(named)} methods "
                                   f"({', '.join(named)}); name one of them")
    chk.fail("study.baseline", f"{given!r} is not a method of this study; the methods are "
                               f"{', '.join(labels)}")


def _method_value(value):
    """A parameter value as given in TOML, with the string ``"none"`` for None."""
    if isinstance(value, str) and value == "none":
        return None
    if isinstance(value, list):
        return [_method_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _method_value(v) for k, v in value.items()}
    return value


def _check_methods(chk, table):
    """The ``[methods.NAME]`` tables: a tuple of :class:`MethodSpec`, one per
    combination of each method's swept parameters, in file order."""
    chk.table(table, "methods")
    if not table:
        chk.fail("methods", "must name at least one method: [methods.NAME] with "
                            "estimator = ...")
    out = []
    for name, entry in table.items():
        where = f"methods.{name}"
        if not name or not all(c.isalnum() or c in "_-." for c in name):
            chk.fail(where, f"a method's name may hold letters, digits and _ - . only, got "
                            f"{name!r}")
        chk.table(entry, where)
        if "estimator" not in entry:
            chk.fail(f"{where}.estimator", "is required: cartjit's estimator class (e.g. "
                                           "\"CARTClassifierCV\"), an alias for either task ("
                                           f"{', '.join(_methods.TASK_ALIASES)}) or an import "
                                           "path (\"module.Class\")")
        estimator = chk.string(entry["estimator"], f"{where}.estimator")
        axes = {}
        for key, value in entry.items():
            if key == "estimator":
                continue
            value = _method_value(value)
            if isinstance(value, list):
                if not value:
                    chk.fail(f"{where}.{key}", "must not be an empty array (an array lists "
                                               "the values to sweep; give one value that "
                                               "is an array as [[...]])")
                _no_duplicates(chk, value, f"{where}.{key}")
                axes[key] = value
            else:
                axes[key] = [value]
        combos = [{}]
        for key, opts in axes.items():
            combos = [dict(c, **{key: o}) for c in combos for o in opts]
        varying = [k for k, opts in axes.items() if len(opts) > 1]
        tasks = ((None,) if estimator not in _methods.TASK_ALIASES
                 else ("classification", "regression"))
        for params in combos:
            for task in tasks:
                try:
                    _methods.check_method(estimator, params, task)
                except _methods.EstimatorError as exc:
                    key = getattr(exc, "field", None)
                    chk.fail(f"{where}.{key}" if key else f"{where}.estimator", str(exc))
            label = name if not varying else name + "[" + ", ".join(
                f"{k}={v if isinstance(v, str) else canonical_json(v)}"
                for k, v in ((k, params[k]) for k in varying)) + "]"
            out.append(MethodSpec(label=label, name=name, estimator=estimator,
                                  params=params, where=where))
    if len(out) > 10_000:
        chk.fail("methods", f"lists {len(out):_} methods after the sweeps; split the study")
    return tuple(out)


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

    study = "methods" in doc
    if not study and "protocol" in doc:
        chk.fail("protocol", "applies to a methods study: add [methods.NAME] tables (or "
                             "remove [protocol] to run the CV sweep of [cv] and [tree])")
    for key in ("cv", "tree") if study else ():
        if key in doc:
            chk.fail(key, f"[{key}] belongs to the CV sweep; in a methods study the "
                          "protocol is [protocol] and the tree settings are parameters of "
                          "each [methods.NAME]")
    methods = _check_methods(chk, doc["methods"]) if study else ()
    baseline = _check_study(chk, doc, methods) if study else None
    if not study and "study" in doc:
        chk.fail("study", "applies to a methods study: add [methods.NAME] tables")
    protocol_global, protocol_fields = (_check_protocol(chk, doc.get("protocol", {}),
                                                        "protocol") if study else ({}, {}))
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
            for key in ("cv", "tree") if study else ("protocol",):
                if key in entry:
                    chk.fail(f"{where}.{key}", "applies to a methods study ([methods])"
                             if key == "protocol" else
                             f"belongs to the CV sweep; in a methods study a dataset "
                             "may override [protocol] in its own protocol sub-table")
            protocol, protocol_where = None, {}
            if study:
                own, own_fields = _check_protocol(chk, entry.get("protocol", {}),
                                                  f"{where}.protocol")
                protocol, protocol_where = _merge_protocol(
                    chk, protocol_global, protocol_fields, own, own_fields, where, spec)
            elif spec.get("test_path") is not None or (
                    spec.get("generator") is not None and spec["generator"]["test_n"]):
                key = "test_path" if spec.get("test_path") else "test_n"
                chk.fail(f"{where}.{key}", "is used by a methods study's protocol "
                                           "(test_file / fresh); the CV sweep has no test "
                                           "sample")
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
                cv_where=cvw, tree_where=trw, generator=spec.get("generator"),
                test_path=spec.get("test_path"), protocol=protocol,
                protocol_where=protocol_where))
    return ExperimentConfig(file=path, name=name, description=description,
                            datasets=tuple(specs), selection=selection, text=text,
                            methods=methods, baseline=baseline)
