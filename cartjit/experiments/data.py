"""The data of an experiment: loading each dataset of a config and the checks that need it.

:func:`resolve` turns the :class:`~cartjit.experiments.config.DatasetSpec` entries of a checked
config into :class:`Data` records: the feature matrix as C-contiguous float64 (the layout
the kernels take, converted once here rather than once per cell), the target, a
fingerprint of the values (so that a changed CSV is noticed on ``--resume``) and the
settings of the sweep made concrete for this dataset (V resolved against N, criteria of
the dataset's task, class priors and costs checked against its classes). Problems are
:class:`~cartjit.experiments.config.ConfigError` naming the field. The size of the sweep
is checked too: the cells times their fold ids must fit the memory limit
(``CARTJIT_MEMORY_LIMIT``, see :func:`check_sweep_size`), so that ``n_repeats = 10**7``
is refused up front rather than planned for hours.

Sources:

* bundled: :func:`cartjit.datasets.load_dataset`, optionally a subset of its features;
* file: a CSV (:func:`pandas.read_csv`) or Parquet (:func:`pandas.read_parquet`, needs
  pyarrow) file with a target column and optionally a subset of feature columns; the
  task is ``classification`` unless the target has a float dtype (give ``task`` to say
  otherwise);
* synthetic: :func:`cartjit.datasets.make_classification` / ``make_regression``, features
  named ``x0, x1, ...`` and target ``y``;
* generator: ``n`` cases of a generator of :mod:`cartjit.datasets` found by name
  (:func:`cartjit.experiments.protocols.generator_function`), features ``x0, x1, ...``
  and target ``y``; its parameters are checked by the generator, and its errors are
  reported on the config's field (``datasets[2].params.noise``).

In a methods study (:mod:`cartjit.experiments.methods`) the protocol is checked against
the data too (V <= N, a test fraction that leaves test and learning cases, a cost matrix
with one row per class), each method against the dataset's task, and a ``test_file``
dataset's test rows are appended to its learning rows (``n_learn`` of them), so that
both are encoded together (the same level codes for a categorical feature).

Feature columns are kept as they are typed, as an estimator's
``categorical_features="from_dtype"`` would: numeric columns are split by thresholds,
string, boolean and pandas ``category`` columns (a CSV's text columns, a Parquet file's
dictionary columns, the factors of the bundled R datasets) by subsets of their levels,
and an *ordered* ``category`` by thresholds on its order. ``X`` holds level codes for
them and :attr:`Data.categorical` the indices of the subset-split features, which every
cell passes on as ``categorical_features``. Missing feature values (empty CSV cells,
Parquet nulls, NaN) stay missing (NaN in ``X``; docs/maths.md §8): the trees split on the
cases present and route the others by surrogate splits. Rows whose target is missing are
dropped, with one warning giving their number; a file with a header but no data rows is
refused as such.
:func:`read_table` and :func:`table_problem` are shared with ``cartjit show FILE``.
"""
from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine.limits import MemoryLimitError, check_allocation
from .._prepare import CLASSIFIER_CRITERIA, REGRESSOR_CRITERIA
from . import methods as _methods
from . import protocols as _protocols
from .config import ConfigError, canonical_json

__all__ = ["Data", "resolve", "load_frame", "read_table", "infer_task", "table_problem",
           "check_sweep_size", "count_sweep", "CELL_BYTES", "MAX_CELLS"]

#: Bytes a planned cell costs beyond its fold ids (its plan record, its stored result
#: and its rows of the long table): a deliberately low estimate, for the size check.
CELL_BYTES = 2048

#: The most cells a sweep may have (all datasets together): each cell is one
#: cross-validation and one file in the run's ``cells/`` directory, so a larger sweep
#: is a mistyped list or a job for several configs.
MAX_CELLS = 1_000_000


@dataclass(frozen=True)
class Data:
    """One dataset, loaded and checked, with its concrete sweep settings."""

    name: str
    task: str
    X: np.ndarray                 # float64 (N, p), C-contiguous
    y: np.ndarray                 # labels (classification) or float64 (regression)
    feature_names: tuple
    target: str
    classes: tuple | None         # sorted class labels (as strings) for classification
    fingerprint: str              # sha256 of the values
    description: str
    V: tuple                      # resolved fold counts; N means leave-one-out
    n_repeats: int
    seed: int
    seeds: tuple | None
    stratify: bool
    settings: tuple               # list of tree-setting dicts (the product of [tree])
    spec: object                  # the DatasetSpec
    categorical: tuple = ()       # indices of the features split by subsets of levels
    protocol: dict | None = None  # a methods study: the protocol (config.PROTOCOL_KEYS)
    methods: tuple = ()           # ... its methods (config.MethodSpec) for this dataset
    n_learn: int | None = None    # test_file: the first n_learn rows learn, the rest test
    class_values: tuple = ()      # classification: the sorted labels, as in y

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


def _fail(config, where, message):
    raise ConfigError(config.file, where, message)


def read_table(path, fmt):
    """A CSV or Parquet file as a DataFrame; raises ValueError with a clear message that
    names the file (and, for a CSV, the line where pandas found the problem)."""
    name = str(path)
    try:
        if fmt == "csv":
            return pd.read_csv(path)
        return pd.read_parquet(path)
    except ImportError as exc:
        raise ValueError(f"reading Parquet ({name!r}) needs pyarrow (pip install "
                         f"pyarrow): {exc}") from None
    except FileNotFoundError:
        raise ValueError(f"file {name!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{name!r} is a directory, not a data file") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{name!r} is empty (no header, no data rows)") from None
    except UnicodeDecodeError as exc:
        line = _first_non_utf8_line(path)
        at = f" on line {line}" if line else ""
        raise ValueError(f"cannot read {name!r} as {fmt}: it holds a byte "
                         f"({exc.object[exc.start]:#04x}){at} that is not UTF-8; save the "
                         "file as UTF-8") from None
    except Exception as exc:  # parser errors of pandas / pyarrow, ragged rows among them
        raise ValueError(f"cannot read {name!r} as {fmt}: {str(exc).strip()}") from None


def _first_non_utf8_line(path):
    """The number (from 1) of the first line of ``path`` that is not UTF-8, or None:
    pandas' decoding error gives an offset in its read buffer, not in the file."""
    try:
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return number
    except OSError:
        return None
    return None


def infer_task(column):
    """``regression`` for a float target, else ``classification``."""
    return "regression" if column.dtype.kind == "f" else "classification"


def table_problem(frame, path, target):
    """Why ``frame`` (read from ``path``) cannot be used with ``target``, or None."""
    if target not in frame.columns:
        return (f"column {target!r} is not in {str(path)!r} (columns: "
                f"{', '.join(map(str, frame.columns))})")
    if len(frame) == 0:
        return (f"{str(path)!r} has a header ({', '.join(map(str, frame.columns))}) but no "
                "data rows")
    return None


def load_frame(config, spec):
    """``(frame, target, features, task, description)`` of one dataset spec."""
    if spec.source == "bundled":
        from ..datasets import list_datasets, load_dataset, load_literature
        if spec.bundled in list_datasets():
            ds = load_dataset(spec.bundled)
        else:  # a real data set of the literature (checked by the config)
            try:
                ds = load_literature(spec.bundled)
            except (OSError, ValueError, RuntimeError) as exc:
                _fail(config, f"{spec.where}.bundled", f"{spec.bundled!r} cannot be loaded: "
                                                       f"{exc}")
        return ds.frame, ds.target, list(ds.features), ds.task, ds.description
    if spec.source == "file":
        where = f"{spec.where}.path"
        try:
            frame = read_table(spec.path, spec.format)
        except ValueError as exc:
            hint = (" (relative paths are relative to the config file)"
                    if "does not exist" in str(exc) else "")
            _fail(config, where, f"{exc}{hint}")
        if spec.target not in frame.columns:
            _fail(config, f"{spec.where}.target", table_problem(frame, spec.path, spec.target))
        if len(frame) == 0:
            _fail(config, where, table_problem(frame, spec.path, spec.target))
        task = spec.task
        if task is None:
            task = infer_task(frame[spec.target])
        features = [c for c in frame.columns if c != spec.target]
        return frame, spec.target, features, task, f"{spec.format.upper()} file {spec.path}"
    if spec.source == "generator":
        return _generated_frame(config, spec, spec.generator["n"])
    from ..datasets import make_classification, make_regression
    params = dict(spec.synthetic)
    kind = params.pop("kind")
    gen = make_classification if kind == "classification" else make_regression
    X, y = gen(**params)
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    frame["y"] = y
    args = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return frame, "y", names, kind, f"synthetic {kind} ({args})"


def _generator_error(config, spec, exc):
    """A generator's own error about its arguments, on the config field it names."""
    gen, text = spec.generator, str(exc)
    hits = [k for k in gen["params"] if k in text]
    if hits:
        where = f"{spec.where}.params.{max(hits, key=len)}"
    elif "random_state" in text:
        where = f"{spec.where}.random_state"
    elif any(w in text for w in ("n_samples", "n ", "n=")):
        where = f"{spec.where}.n"
    else:
        where = f"{spec.where}.params"
    _fail(config, where, f"generator {gen['name']!r}: {type(exc).__name__}: {text}")


def _generate(config, spec, n):
    """``(X, y)`` of ``n`` cases of a generator dataset; its errors on the config field."""
    gen = spec.generator
    try:
        return _protocols.generate(gen["name"], n, gen["params"], gen["random_state"])
    except (TypeError, ValueError, MemoryLimitError) as exc:
        _generator_error(config, spec, exc)


def _generated_frame(config, spec, n):
    """The frame of a generator dataset: checked on a small sample first, then the size of
    ``n`` (and ``test_n``) cases against the memory limit, then generated."""
    gen = spec.generator
    X, y = _generate(config, spec, min(n, 64))
    for size, key in ((n, "n"), (gen["test_n"], "test_n")):
        if size is None:
            continue
        try:
            check_allocation(8 * size * (X.shape[1] + 1),
                             f"{size:_} cases of generator {gen['name']!r} with "
                             f"{X.shape[1]} features", f"lower {key}")
        except MemoryLimitError as exc:
            _fail(config, f"{spec.where}.{key}", str(exc))
    if n > X.shape[0]:
        X, y = _generate(config, spec, n)
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    frame["y"] = y
    task = "regression" if np.asarray(y).dtype.kind == "f" else "classification"
    args = ", ".join(f"{k}={v}" for k, v in sorted(gen["params"].items()))
    return frame, "y", names, task, (f"generator {gen['name']}(n={n}"
                                      + (f", {args}" if args else "")
                                      + f", random_state={gen['random_state']})")


def _fingerprint(X, y, names, target, categorical=()):
    h = hashlib.sha256()
    h.update(canonical_json([list(names), target, list(X.shape)]).encode())
    if categorical:  # only then: fingerprints of all-numeric data stay as they were
        h.update(canonical_json({"categorical": list(categorical)}).encode())
    h.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    if y.dtype.kind in "biuf":
        h.update(str(y.dtype).encode())
        h.update(np.ascontiguousarray(y).tobytes())
    else:
        h.update(canonical_json([str(v) for v in y]).encode())
    return h.hexdigest()


def _encode_features(config, spec, frame, features):
    """``(X, categorical)``: the feature columns as float64 (level codes for categorical
    and ordinal columns) and the indices of the subset-split features."""
    from .. import _encoding
    where = f"{spec.where}.features"
    sub = frame[features]
    with warnings.catch_warnings():
        # a single-level column is reported by every cell that fits it
        warnings.simplefilter("ignore", UserWarning)
        try:
            X, _, enc = _encoding.fit_encode(sub, "from_dtype")
        except (TypeError, ValueError) as exc:
            text = str(exc).replace("Input X contains", "the data contain")
            if "infinity" in text:
                bad = [c for c in features if sub[c].dtype.kind in "biuf"
                       and np.isinf(sub[c].to_numpy(dtype=np.float64, na_value=np.nan)).any()]
                if bad:
                    text = f"column {bad[0]!r} has infinite values"
            _fail(config, where, f"dataset {spec.name!r}: {text.removeprefix('X: ')}")
    categorical = tuple(int(j) for j in np.flatnonzero(enc.is_categorical))
    return np.ascontiguousarray(X), categorical


def _settings_axes(config, spec, task, n_classes):
    """The options of each tree setting of this dataset, checked against its task and
    number of classes: ``{key: [options]}``, in sweep order (the product is
    :func:`_settings_product`)."""
    tree, where = spec.tree, spec.tree_where
    crit_all = tree["criterion"]
    own = where["criterion"].startswith(spec.where + ".")
    valid = CLASSIFIER_CRITERIA if task == "classification" else REGRESSOR_CRITERIA
    if crit_all == [None]:
        criteria = ["gini" if task == "classification" else "squared_error"]
    else:
        criteria = [c for c in crit_all if c in valid]
        wrong = [c for c in crit_all if c not in valid]
        if own and wrong:
            _fail(config, where["criterion"], f"{wrong[0]!r} is not a {task} criterion "
                                              f"(allowed: {', '.join(valid)})")
        if not criteria:
            if task == "regression":
                criteria = ["squared_error"]
            else:
                _fail(config, where["criterion"],
                      f"lists no classification criterion ({', '.join(valid)}) but dataset "
                      f"{spec.name!r} ({spec.where}) is a classification problem")
    keys = ["criterion", "priors", "cost", "max_depth", "min_samples_split",
            "min_samples_leaf", "min_impurity_decrease", "max_leaf_nodes"]
    axes = {"criterion": criteria}
    for key in keys[1:]:
        if task == "regression" and key in ("priors", "cost"):
            continue
        axes[key] = list(tree[key])
    if task == "classification":
        # the config checked the values (positive priors summing to 1, a square cost
        # matrix >= 0 with a zero diagonal); what needs the data is the number of classes
        for p in axes["priors"]:
            if not isinstance(p, str) and len(p) != n_classes:
                _fail(config, where["priors"], f"for dataset {spec.name!r} with {n_classes} "
                                               f"classes: priors must have one entry per "
                                               f"class ({n_classes}), got {len(p)}")
        for c in axes["cost"]:
            if isinstance(c, str):
                continue
            if len(c) != n_classes:
                _fail(config, where["cost"], f"for dataset {spec.name!r} with {n_classes} "
                                             f"classes: cost must have shape ({n_classes}, "
                                             f"{n_classes}) (rows: true class, columns: "
                                             f"predicted class), got ({len(c)}, {len(c)})")
            zero = [j for j, row in enumerate(c) if sum(row) <= 0]
            if zero:
                _fail(config, where["cost"], f"for dataset {spec.name!r}: cost row "
                                             f"{zero[0]} (true class {zero[0]}) is all zero: "
                                             "every class needs a positive cost of being "
                                             "misclassified")
    return axes


def _settings_product(axes):
    """The concrete tree settings: one dict per combination of ``axes``, in sweep
    order (the last key varies fastest)."""
    combos = [{}]
    for key, opts in axes.items():
        combos = [dict(c, **{key: o}) for c in combos for o in opts]
    return tuple(combos)


def _resolve_V(config, spec, n):
    out, origin = [], {}
    where = spec.cv_where["V"]
    for v in spec.cv["V"]:
        folds = n if v == "loo" else v
        if v != "loo" and v > n:
            _fail(config, where, f"V = {v} folds is more than the N = {n} cases of dataset "
                                 f"{spec.name!r}; use at most N (V = N, or \"loo\", is "
                                 "leave-one-out)")
        if folds in origin:
            _fail(config, where, f"{origin[folds]!r} and {v!r} are the same number of folds "
                                 f"for dataset {spec.name!r} (N = {n})")
        origin[folds] = v
        out.append(folds)
    return tuple(sorted(out))


def _load_one(config, spec, plan=True):
    """The :class:`Data` of one dataset spec; with ``plan=False`` only its number of
    cells (the data are loaded and checked, the settings are counted, not listed).

    An error about a dataset read from a file names that file (the config field alone
    does not say which of two files with the same columns is wrong)."""
    try:
        return _load_checked(config, spec, plan)
    except ConfigError as exc:
        if spec.source != "file" or spec.path in exc.message:
            raise
        raise ConfigError(exc.file, exc.field,
                          f"{exc.message} (data file {spec.path!r})") from None


def _with_test_rows(config, spec, frame, target):
    """A test_file dataset: its test file's rows appended to the learning rows (same
    columns); returns ``(frame, n_learn)``."""
    where = f"{spec.where}.test_path"
    try:
        test = read_table(spec.test_path, spec.format)
    except ValueError as exc:
        _fail(config, where, str(exc))
    missing = [c for c in frame.columns if c not in test.columns]
    if missing:
        _fail(config, where, f"the test file {spec.test_path!r} has no column {missing[0]!r} "
                             f"of the learning file (columns: {', '.join(map(str, test.columns))})")
    if len(test) == 0:
        _fail(config, where, f"the test file {spec.test_path!r} has no data rows")
    both = pd.concat([frame, test[list(frame.columns)]], ignore_index=True)
    return both, len(frame)


def _load_checked(config, spec, plan):
    frame, target, all_features, task, description = load_frame(config, spec)
    n_learn = None
    if spec.protocol is not None and spec.protocol["kind"] == "test_file":
        frame, n_learn = _with_test_rows(config, spec, frame, target)
    if spec.features is not None:
        if target in spec.features:
            _fail(config, f"{spec.where}.features",
                  f"lists the target column {target!r} of dataset {spec.name!r}; a column "
                  "cannot be both the target and a feature")
        missing = [f for f in spec.features if f not in all_features]
        if missing:
            _fail(config, f"{spec.where}.features",
                  f"{missing[0]!r} is not a feature column of dataset {spec.name!r} "
                  f"(available: {', '.join(map(str, all_features))})")
        features = list(spec.features)
    else:
        features = all_features
    if not features:
        _fail(config, spec.where, f"dataset {spec.name!r} has no feature columns")
    ycol = frame[target]
    if ycol.isna().any():
        n_missing = int(ycol.isna().sum())
        if n_missing == len(frame):
            _fail(config, f"{spec.where}.target" if spec.source == "file" else spec.where,
                  f"target {target!r} of dataset {spec.name!r} is missing on every row")
        warnings.warn(f"dataset {spec.name!r}: target {target!r} is missing on {n_missing} "
                      f"of the {len(frame)} rows; they are dropped (as rpart's default "
                      "na.action does)", UserWarning, stacklevel=2)
        keep = ycol.notna().to_numpy()
        if n_learn is not None:
            n_learn = int(keep[:n_learn].sum())
            if n_learn == 0 or n_learn == int(keep.sum()):
                _fail(config, f"{spec.where}.target", f"dataset {spec.name!r}: no "
                      f"{'learning' if n_learn == 0 else 'test'} row has a target")
        frame = frame[keep].reset_index(drop=True)
        ycol = frame[target]
    X, categorical = _encode_features(config, spec, frame, features)
    if task == "regression":
        if ycol.dtype.kind not in "biuf":
            _fail(config, f"{spec.where}.task",
                  f"dataset {spec.name!r} is a regression problem but its target "
                  f"{target!r} is not numeric (dtype {ycol.dtype})")
        y = np.ascontiguousarray(ycol.to_numpy(dtype=np.float64))
        classes = None
    else:
        if ycol.dtype.kind == "f" and not np.all(np.mod(ycol.to_numpy(), 1) == 0):
            _fail(config, f"{spec.where}.task",
                  f"dataset {spec.name!r} is a classification problem but its target "
                  f"{target!r} holds non-integer numbers; set task = \"regression\"")
        y = ycol.to_numpy()
        if y.dtype.kind not in "biu":
            y = np.asarray([str(v) for v in y], dtype=object) if y.dtype.kind != "f" \
                else y.astype(np.int64)
        classes = tuple(str(c) for c in np.unique(y))
        if len(classes) < 2:
            _fail(config, spec.where, f"target {target!r} of dataset {spec.name!r} has only "
                                      f"one class ({classes[0]!r})")
    n = X.shape[0]
    if n < 2:
        _fail(config, spec.where, f"dataset {spec.name!r} has {n} case(s); CV needs at least 2")
    cv = spec.cv
    if cv["stratify"] and task == "regression" and spec.cv_where["stratify"].startswith(spec.where + "."):
        _fail(config, spec.cv_where["stratify"], f"stratify needs class labels, but dataset "
                                                 f"{spec.name!r} is a regression problem")
    n_classes = 0 if classes is None else len(classes)
    if spec.protocol is not None:
        n_cells, protocol, methods = _study_plan(config, spec, task, n_classes,
                                                 n if n_learn is None else n_learn, y)
        if not plan:
            return n_cells
        return Data(
            name=spec.name, task=task, X=X, y=y, feature_names=tuple(map(str, features)),
            target=str(target), classes=classes,
            fingerprint=_fingerprint(X, y, features, target, categorical),
            description=description, V=(), n_repeats=protocol["n_repeats"],
            seed=protocol.get("seed", 0), seeds=None,
            stratify=bool(protocol.get("stratify")), settings=(), spec=spec,
            categorical=categorical, protocol=protocol, methods=methods, n_learn=n_learn,
            class_values=() if classes is None else tuple(np.unique(y).tolist()))
    V, n_cells, axes = _plan_size(config, spec, task, n_classes, n)
    if not plan:
        return n_cells
    settings = _settings_product(axes)
    return Data(
        name=spec.name, task=task, X=X, y=y, feature_names=tuple(map(str, features)),
        target=str(target), classes=classes,
        fingerprint=_fingerprint(X, y, features, target, categorical),
        description=description, V=V, n_repeats=cv["n_repeats"],
        seed=cv["seed"], seeds=None if cv["seeds"] is None else tuple(cv["seeds"]),
        stratify=bool(cv["stratify"]) and task == "classification", settings=settings,
        spec=spec, categorical=categorical)


def _plan_size(config, spec, task, n_classes, n):
    """``(V, cells, axes)`` of one dataset of ``n`` cases: its resolved fold counts, its
    number of cells (counted, not listed: refused above :data:`MAX_CELLS` or the memory
    limit) and the options of each tree setting."""
    axes = _settings_axes(config, spec, task, n_classes)
    V = _resolve_V(config, spec, n)
    n_repeats = spec.cv["n_repeats"]
    n_settings = math.prod(len(opts) for opts in axes.values())
    per_settings = sum(1 if v == n else n_repeats for v in V)
    n_cells = per_settings * n_settings
    what = (f"dataset {spec.name!r}: {n_cells:_} cells (n_repeats={n_repeats:_} x "
            f"{len(V)} values of V x {n_settings:_} tree settings"
            + (f": {' x '.join(f'{len(o)} {k}' for k, o in axes.items() if len(o) > 1)}"
               if n_settings > 1 else "") + ")")
    widest = max(axes, key=lambda k: len(axes[k]))
    where = (spec.tree_where[widest].rsplit(".", 1)[0] if n_settings > per_settings
             else spec.cv_where["n_repeats"])
    try:
        check_allocation(n_cells * (8 * n + CELL_BYTES), f"{what} with {n:_} fold ids each",
                         "lower n_repeats or the number of V values and settings")
    except MemoryLimitError as exc:
        _fail(config, where, str(exc))
    if n_cells > MAX_CELLS:
        _fail(config, where, f"{what} is more than the {MAX_CELLS:_} cells a sweep may "
                             "have; split it into several configs, or give fewer repeats, "
                             "values of V or tree settings")
    return V, n_cells, axes


def _study_plan(config, spec, task, n_classes, n, y):
    """``(cells, protocol, methods)`` of one dataset of a methods study with ``n``
    learning cases: the protocol checked against the data, the methods that apply to its
    task, and the number of cells (replications x methods), refused above
    :data:`MAX_CELLS` or the memory limit."""
    protocol, where = dict(spec.protocol), spec.protocol_where
    kind = protocol["kind"]
    if kind == "cv" and protocol["V"] > n:
        _fail(config, where["V"], f"V = {protocol['V']} folds is more than the N = {n} "
                                  f"cases of dataset {spec.name!r}")
    if kind == "split":
        n_test = int(round(protocol["test_fraction"] * n))
        if n_test < 1 or n - n_test < 2:
            _fail(config, where["test_fraction"],
                  f"test_fraction = {protocol['test_fraction']:g} of the N = {n} cases of "
                  f"dataset {spec.name!r} gives {n_test} test case(s) and {n - n_test} "
                  "learning case(s); each split needs at least 1 test and 2 learning cases")
    if protocol.get("stratify") and task == "regression":
        _fail(config, where["stratify"], f"stratify needs class labels, but dataset "
                                         f"{spec.name!r} is a regression problem")
    cost = protocol.get("cost", "0-1")
    if cost != "0-1":
        if task == "regression":
            _fail(config, where["cost"], f"a cost matrix concerns classification, but "
                                         f"dataset {spec.name!r} is a regression problem")
        if len(cost) != n_classes:
            _fail(config, where["cost"], f"for dataset {spec.name!r} with {n_classes} "
                                         f"classes: cost must have shape ({n_classes}, "
                                         f"{n_classes}), got ({len(cost)}, {len(cost)})")
    protocol["cost"] = None if cost == "0-1" else cost
    if kind == "fresh":
        protocol["generator"] = {k: spec.generator[k] for k in ("name", "n", "test_n",
                                                                 "params")}
    methods = []
    for m in config.methods:
        cls = _methods.resolve_estimator(m.estimator, task)
        own = _methods.estimator_task(cls)
        if own is not None and own != task:
            _fail(config, f"{m.where}.estimator",
                  f"{m.estimator!r} is a {own} estimator, but dataset {spec.name!r} "
                  f"({spec.where}) is a {task} problem"
                  + (f"; the alias {_alias_of(m.estimator)!r} picks the estimator of "
                     "each dataset's task" if _alias_of(m.estimator) else ""))
        methods.append(m)
    n_cells = _protocols.n_replications(protocol) * len(methods)
    what = (f"dataset {spec.name!r}: {n_cells:_} cells ({_protocols.n_replications(protocol):_}"
            f" replications x {len(methods)} methods)")
    try:
        check_allocation(n_cells * CELL_BYTES, what, "lower n_repeats or the number of "
                                                     "methods")
    except MemoryLimitError as exc:
        _fail(config, where["n_repeats"], str(exc))
    if n_cells > MAX_CELLS:
        _fail(config, where["n_repeats"], f"{what} is more than the {MAX_CELLS:_} cells a "
                                          "sweep may have; split the study into several "
                                          "configs, or give fewer replications or methods")
    return n_cells, protocol, tuple(methods)


def _alias_of(estimator):
    """The task-generic alias of one of cartjit's class names, or None."""
    for alias, names in _methods.TASK_ALIASES.items():
        if estimator in names:
            return alias
    return None


def check_sweep_size(config, d):
    """Refuse a sweep whose cells and fold ids would not fit the memory limit.

    The estimate is ``cells x (N x 8 bytes of fold ids + CELL_BYTES)``, a lower bound of
    what planning, storing and tabulating the cells needs; it is checked with
    :func:`cartjit.engine.limits.check_allocation` before any cell is planned (by
    :func:`resolve`, from the counts of the settings, before they are listed).
    """
    if d.protocol is not None:  # a methods study: checked by _study_plan
        return _protocols.n_replications(d.protocol) * len(d.methods)
    per_settings = sum(1 if V == d.n_samples else d.n_repeats for V in d.V)
    n_cells = per_settings * len(d.settings)
    try:
        check_allocation(n_cells * (8 * d.n_samples + CELL_BYTES),
                         f"dataset {d.name!r}: {n_cells:_} cells (n_repeats={d.n_repeats:_} "
                         f"x {len(d.V)} values of V x {len(d.settings)} tree settings) with "
                         f"{d.n_samples:_} fold ids each",
                         "lower n_repeats or the number of V values and settings")
    except MemoryLimitError as exc:
        _fail(config, d.spec.cv_where["n_repeats"], str(exc))
    return n_cells


def _check_total(config, spec, total):
    if total > MAX_CELLS:
        _fail(config, spec.where, f"the sweep has {total:_} cells up to dataset "
                                  f"{spec.name!r}, more than the {MAX_CELLS:_} cells a "
                                  "sweep may have; split it into several configs")


def _synthetic_width(spec):
    params = spec.synthetic
    return params["n_features"] + (params["n_classes"] if params["kind"] == "classification"
                                   else 1)


def _count_synthetic(config, spec):
    """The number of cells of a synthetic dataset, from its parameters alone (its values
    are not generated)."""
    params = spec.synthetic
    task, n = params["kind"], params["n_samples"]
    if spec.features is not None:
        names = [f"x{j}" for j in range(params["n_features"])]
        bad = [f for f in spec.features if f not in names]
        if bad:
            _fail(config, f"{spec.where}.features",
                  f"{bad[0]!r} is not a feature column of dataset {spec.name!r} "
                  f"(available: x0 .. x{params['n_features'] - 1})")
    cv = spec.cv
    if cv["stratify"] and task == "regression" and \
            spec.cv_where["stratify"].startswith(spec.where + "."):
        _fail(config, spec.cv_where["stratify"], f"stratify needs class labels, but dataset "
                                                 f"{spec.name!r} is a regression problem")
    return _plan_size(config, spec, task, params.get("n_classes", 0), n)[1]


def count_sweep(config):
    """The number of cells of the sweep of ``config``, counted without listing them.

    What ``cartjit run --dry-run`` reports: bundled and file datasets are loaded and
    checked as :func:`resolve` does, one at a time; synthetic datasets are checked from
    their parameters (their values are not generated); the tree settings are counted,
    never listed. A sweep over :data:`MAX_CELLS` cells, or whose cells would not fit the
    memory limit, is refused.
    """
    total = 0
    for spec in config.datasets:
        if spec.source == "synthetic" and spec.protocol is None:
            total += _count_synthetic(config, spec)
        else:
            total += _load_one(config, spec, plan=False)
        _check_total(config, spec, total)
    return total


def resolve(config):
    """Load every dataset of ``config`` and check what depends on the data.

    The sizes come first: the synthetic datasets together must fit the memory limit,
    and each dataset's cells are counted (and refused above :data:`MAX_CELLS` or the
    memory limit) before its settings are listed."""
    synthetic = [spec for spec in config.datasets if spec.source == "synthetic"]
    if len(synthetic) > 1:
        nbytes = sum(8 * spec.synthetic["n_samples"] * _synthetic_width(spec)
                     for spec in synthetic)
        try:
            check_allocation(nbytes, f"the {len(synthetic):_} synthetic datasets together",
                             "ask for fewer or smaller datasets, or split the sweep")
        except MemoryLimitError as exc:
            _fail(config, "datasets", str(exc))
    data, total = [], 0
    for spec in config.datasets:
        d = _load_one(config, spec)
        total += check_sweep_size(config, d)
        _check_total(config, spec, total)
        data.append(d)
    return tuple(data)
