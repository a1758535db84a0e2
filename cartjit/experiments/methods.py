"""Methods of a study: estimators named in a config, fitted and scored on one replication.

A config's ``[methods.NAME]`` table names an estimator and its parameters::

    [methods.cart_1se]
    estimator = "CARTClassifierCV"         # cartjit's, by its class name
    selection = "1se"
    [methods.rf]
    estimator = "random_forest"            # either task: cartjit's forest for the task
    n_estimators = 100
    max_features = [2, 4]                  # a list sweeps: rf[max_features=2], ...
    [methods.sk_rf]
    estimator = "sklearn.ensemble.RandomForestClassifier"   # any import path

:func:`resolve_estimator` turns the name into a class, once per process (cached): the
class names of cartjit's estimators (:data:`CARTJIT_ESTIMATORS`), the task-generic
aliases of :data:`TASK_ALIASES` (the classifier or the regressor, after the dataset's
task), or ``module.Class``, imported with :mod:`importlib`. :func:`check_method` checks
the parameters against the class without data (unknown names, and the values the
estimator checks before a fit). :func:`compute_method_cell` is one cell: fit on the
replication's learning rows, predict its test rows, and measure (test error or
misclassification cost, MSE and relative error, the size of the tree or forest, the fit
and predict times).

The runner gives a method that has a ``random_state`` parameter and does not set it the
replication's seed (:func:`cartjit.experiments.protocols.method_seed`, the same for every
method of the replication), and cartjit's estimators the dataset's categorical features
(``categorical_features``) unless the method sets them.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import time

import numpy as np

from . import protocols

__all__ = ["CARTJIT_ESTIMATORS", "TASK_ALIASES", "EstimatorError", "resolve_estimator",
           "estimator_task", "check_method", "method_params", "compute_method_cell",
           "model_size", "METRIC_COLUMNS"]

#: cartjit's estimators by class name: the module that defines them and their task.
CARTJIT_ESTIMATORS = {
    "CARTClassifier": ("cartjit.estimators", "classification"),
    "CARTRegressor": ("cartjit.estimators", "regression"),
    "CARTClassifierCV": ("cartjit.estimators", "classification"),
    "CARTRegressorCV": ("cartjit.estimators", "regression"),
    "RandomForestClassifier": ("cartjit.ensemble", "classification"),
    "RandomForestRegressor": ("cartjit.ensemble", "regression"),
    "BaggedCARTClassifier": ("cartjit.ensemble", "classification"),
    "BaggedCARTRegressor": ("cartjit.ensemble", "regression"),
}
#: Names for either task: (classifier, regressor) among :data:`CARTJIT_ESTIMATORS`.
TASK_ALIASES = {
    "cart": ("CARTClassifier", "CARTRegressor"),
    "cart_cv": ("CARTClassifierCV", "CARTRegressorCV"),
    "random_forest": ("RandomForestClassifier", "RandomForestRegressor"),
    "bagging": ("BaggedCARTClassifier", "BaggedCARTRegressor"),
}

#: The measures of a method cell, in the order of the long table (None where they do not
#: apply: ``error``/``cost`` for regression, ``mse``/``rel_error`` for classification,
#: sizes of a model that reports none).
METRIC_COLUMNS = ("score", "error", "cost", "mse", "rel_error", "n_trees", "n_nodes",
                  "n_leaves")


class EstimatorError(ValueError):
    """An estimator name or its parameters cannot be used (the message says why)."""


def _class_names(task=None):
    return [n for n, (_, t) in CARTJIT_ESTIMATORS.items() if task in (None, t)]


@functools.lru_cache(maxsize=None)
def resolve_estimator(name, task=None):
    """The estimator class of ``name`` for ``task`` (``None``: the classifier of an alias).

    Cached: each process imports and looks up a class once, however many cells use it.
    Raises :class:`EstimatorError` for an unknown name, a module that cannot be imported
    or an attribute that is not an estimator class.
    """
    if name in TASK_ALIASES:
        name = TASK_ALIASES[name][task == "regression"]
    if name in CARTJIT_ESTIMATORS:
        module, attr = CARTJIT_ESTIMATORS[name][0], name
    elif "." in name:
        module, attr = name.rsplit(".", 1)
    else:
        raise EstimatorError(
            f"unknown estimator {name!r}; cartjit's are {', '.join(_class_names())}, and "
            f"{', '.join(repr(a) for a in TASK_ALIASES)} name the classifier or the "
            "regressor after the dataset's task; any other scikit-learn-compatible "
            "estimator is given by its import path, e.g. "
            "\"sklearn.ensemble.RandomForestClassifier\"")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise EstimatorError(f"cannot import {name!r}: no module {exc.name!r} (is the "
                             "package installed in this environment?)") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party import
        raise EstimatorError(f"cannot import {name!r}: importing module {module!r} failed "
                             f"({type(exc).__name__}: {exc})") from None
    cls = getattr(mod, attr, None)
    if cls is None:
        raise EstimatorError(f"cannot import {name!r}: module {module!r} has no "
                             f"{attr!r}")
    if not (inspect.isclass(cls) and callable(getattr(cls, "fit", None))
            and callable(getattr(cls, "predict", None))):
        raise EstimatorError(f"{name!r} is not an estimator class (a class with fit and "
                             f"predict methods), it is {type(cls).__name__} {cls!r}")
    return cls


def estimator_task(cls):
    """``"classification"``, ``"regression"`` or ``None`` (not known) for a class."""
    for name, (_, task) in CARTJIT_ESTIMATORS.items():
        if cls.__name__ == name and cls.__module__.startswith("cartjit"):
            return task
    kind = getattr(cls, "_estimator_type", None)
    if kind is None:
        try:  # scikit-learn >= 1.6 keeps it in the tags of an instance
            from sklearn.base import is_classifier, is_regressor
            inst = cls()
            kind = ("classifier" if is_classifier(inst) else
                    "regressor" if is_regressor(inst) else None)
        except Exception:  # noqa: BLE001 - no scikit-learn, or no default constructor
            kind = None
    return {"classifier": "classification", "regressor": "regression"}.get(kind)


@functools.lru_cache(maxsize=None)
def _parameter_names(cls):
    """The parameters of ``cls``'s constructor (``get_params`` of a default instance,
    else its signature)."""
    try:
        return set(cls().get_params(deep=False))
    except Exception:  # noqa: BLE001 - no default constructor, or no get_params
        sig = inspect.signature(cls)
        return {n for n, p in sig.parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _check_values(est):
    """The checks an estimator makes of its parameters before any data (cartjit's own
    checks; scikit-learn's ``_validate_params``); raises ValueError / TypeError."""
    module = type(est).__module__
    if module.startswith("cartjit"):
        from .. import _prepare
        _prepare.check_params(est)
        if hasattr(est, "_check_cv_params"):
            est._check_cv_params()
        if hasattr(est, "_check_forest_params"):
            from ..ensemble import resolve_n_jobs
            est._check_forest_params()
            resolve_n_jobs(est.n_jobs)
    elif callable(getattr(est, "_validate_params", None)):
        est._validate_params()


def check_method(name, params, task=None):
    """Check a method: its estimator resolves and takes ``params``. Returns the class.

    Raises :class:`EstimatorError` whose ``field`` is the parameter at fault (or None for
    the estimator name itself).
    """
    cls = resolve_estimator(name, task)
    allowed = _parameter_names(cls)
    for key in params:
        if key not in allowed:
            err = EstimatorError(f"{cls.__name__} has no parameter {key!r}; its parameters "
                                 f"are {', '.join(sorted(allowed))}")
            err.field = key
            raise err
    try:
        est = cls(**params)
        _check_values(est)
    except (TypeError, ValueError) as exc:
        text = str(exc)
        hits = [k for k in params if k in text]
        err = EstimatorError(f"{cls.__name__}: {text}")
        err.field = max(hits, key=len) if hits else None
        raise err from None
    return cls


def method_params(cls, params, seed, categorical):
    """The parameters a cell fits with: the method's, plus the runner's ``random_state``
    and (for cartjit's estimators) ``categorical_features`` where the method has that
    parameter and leaves it unset."""
    out = dict(params)
    allowed = _parameter_names(cls)
    if "random_state" in allowed and "random_state" not in out:
        out["random_state"] = seed
    if (cls.__module__.startswith("cartjit") and "categorical_features" in allowed
            and "categorical_features" not in out):
        out["categorical_features"] = list(categorical)
    return out


def model_size(est):
    """``(n_trees, n_nodes, n_leaves)`` of a fitted tree or forest (sums over a forest's
    trees): cartjit's ``tree_`` / ``forest_``, scikit-learn's ``tree_`` (``node_count``)
    or ``estimators_`` of trees; ``None`` for what a model does not report."""
    forest = getattr(est, "forest_", None)
    if forest is not None:
        return int(forest.n_trees), int(forest.n_nodes), int(np.count_nonzero(forest.left < 0))
    tree = getattr(est, "tree_", None)
    if tree is not None:
        size = _tree_size(tree)
        if size is not None:
            return (1,) + size
    members = getattr(est, "estimators_", None)
    if isinstance(members, (list, np.ndarray)) and len(members):
        sizes = [_tree_size(getattr(m, "tree_", None)) for m in np.ravel(members)]
        if all(s is not None for s in sizes):
            return len(sizes), sum(s[0] for s in sizes), sum(s[1] for s in sizes)
        return len(sizes), None, None
    return None, None, None


def _tree_size(tree):
    if tree is None:
        return None
    nodes = getattr(tree, "n_nodes", getattr(tree, "node_count", None))
    leaves = getattr(tree, "n_leaves", None)
    if nodes is None or leaves is None:
        return None
    return int(nodes), int(leaves)


def _metrics(task, y_true, pred, cost, classes):
    """The measures of one test sample (see :data:`METRIC_COLUMNS`)."""
    out = dict.fromkeys(("error", "cost", "mse", "rel_error"))
    if task == "classification":
        wrong = np.asarray(pred) != np.asarray(y_true)
        out["error"] = float(np.mean(wrong))
        if cost is None:
            out["cost"] = out["error"]
        else:
            index = {c: i for i, c in enumerate(classes)}
            t = np.array([index[v] for v in np.asarray(y_true).tolist()])
            p = np.array([index.get(v, -1) for v in np.asarray(pred).tolist()])
            C = np.asarray(cost, dtype=np.float64)
            out["cost"] = float(np.mean(np.where(p >= 0, C[t, np.maximum(p, 0)], np.nan)))
        out["score"] = out["cost"]
    else:
        y = np.asarray(y_true, dtype=np.float64)
        resid = y - np.asarray(pred, dtype=np.float64)
        out["mse"] = float(np.mean(resid ** 2))
        var = float(np.mean((y - y.mean()) ** 2))
        out["rel_error"] = out["mse"] / var if var > 0 else None
        out["score"] = out["mse"]
    return out


def _rows(spec, X, y):
    """``(X_learn, y_learn, X_test, y_test, learn)`` of the cell's replication; ``learn``
    is the learning rows' indices in the dataset (None for the ``fresh`` protocol, whose
    cases are new samples)."""
    protocol = spec["protocol"]
    if protocol["kind"] == "fresh":
        return (*protocols.fresh_samples(spec["generator"], spec["seed"]), None)
    learn, test = protocols.replication_rows(protocol, spec, X.shape[0], y)
    return X[learn], y[learn], X[test], y[test], learn


def compute_method_cell(spec, X, y, fitted=None):
    """One method cell (``spec`` is :func:`cartjit.experiments.cells.cell_payload`'s dict):
    fit the method on the replication's learning rows, predict its test rows. Returns the
    measures, ``n_learn``, ``n_test``, ``fit_time_s``, ``predict_time_s`` and
    ``wall_time_s`` (warnings are added by the caller). A dict ``fitted`` receives the
    fitted ``estimator``, its learning data ``X`` and ``y`` and their rows ``learn``
    (:func:`_rows`), for the stability record."""
    t_start = time.perf_counter()
    cls = resolve_estimator(spec["estimator"], spec["task"])
    Xl, yl, Xt, yt, learn = _rows(spec, X, y)
    params = method_params(cls, spec["params"], spec["method_seed"], spec["categorical"])
    est = cls(**params)
    t0 = time.perf_counter()
    est.fit(Xl, yl)
    t1 = time.perf_counter()
    if fitted is not None:
        fitted.update(estimator=est, X=Xl, y=yl, learn=learn)
    pred = est.predict(Xt)
    t2 = time.perf_counter()
    out = _metrics(spec["task"], yt, pred, spec["protocol"].get("cost"), spec["classes"])
    out["n_trees"], out["n_nodes"], out["n_leaves"] = model_size(est)
    out.update(n_learn=int(len(yl)), n_test=int(len(yt)), fit_time_s=t1 - t0,
               predict_time_s=t2 - t1, wall_time_s=time.perf_counter() - t_start)
    return out
