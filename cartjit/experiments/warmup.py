"""Compiling the kernels ahead: ``cartjit compile`` and the runner's warm-up.

The first fit after installing (or upgrading) cartjit compiles the Numba kernels, which
takes up to a minute or two; later processes load them from Numba's on-disk cache in well under a
second. :func:`compile_kernels` fits and cross-validates tiny problems of every kind
(classification with each criterion, given priors and a cost matrix, case weights,
regression, stratified and repeated CV, categorical features, prediction, and fits large
enough to grow on several threads), so that every kernel signature the
estimators use is compiled and cached (``cartjit compile``). ``cartjit run`` warms up
with :func:`compile_for_cells` before the cells, one tiny fit per distinct kind of cell
of its plan (the same estimator, settings, stratification and leave-one-out or not), which
compiles or loads exactly the kernels its cells use, and reports that time apart from the
cells' (``compile`` in ``run.json`` and ``timings.md``), so the first cells are not charged
for the compilation.

Whether anything was compiled is read from the dispatchers' own statistics
(``Dispatcher.stats.cache_misses``) after the warm-up. Compilation is announced when
Numba starts it (its ``numba:compile`` event, :mod:`cartjit.engine.cache`), so a warm-up
that only loads from the cache says nothing.
"""
from __future__ import annotations

import functools
import json
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..engine import cache as _cache

__all__ = ["CompileReport", "compile_kernels", "compile_for_cells", "cache_dir", "cache_state",
           "warm_up"]


@dataclass
class CompileReport:
    """What a warm-up did: its wall time, whether it compiled, where the cache is."""

    seconds: float
    compiled: bool
    n_compiled: int
    cache_dir: str
    announced: bool = False
    n_functions: int = 0  # every function Numba compiled, the NumPy helpers included

    def as_dict(self):
        return {"seconds": round(self.seconds, 4), "compiled": self.compiled,
                "n_compiled": self.n_compiled, "cache_dir": self.cache_dir}


def _dispatchers():
    """Numba dispatchers of the engine's modules (imported by the fits' checks)."""
    from .. import _prepare  # noqa: F401  (imports the engine, not scikit-learn)
    return _cache.dispatchers()


def cache_dir():
    """Directory of Numba's on-disk cache of cartjit's kernels."""
    _dispatchers()
    return _cache.cache_dir()


def cache_state():
    """``"empty"``, ``"stale"`` or ``"present"`` (:func:`cartjit.engine.cache.cache_state`)."""
    return _cache.cache_state(cache_dir())


def _misses():
    return sum(sum(d.stats.cache_misses.values()) for d in _dispatchers())


def compile_kernels(progress=None):
    """Fit tiny problems of every kind so that every kernel is compiled and cached.

    ``progress(i, n, label)`` is called before each of the ``n`` steps (``i`` from 1).
    """
    steps = kernel_steps()
    for i, (label, step) in enumerate(steps, 1):
        if progress is not None:
            progress(i, len(steps), label)
        step()


def kernel_steps():
    """The steps of :func:`compile_kernels`: ``(label, function)`` pairs, one per
    criterion of each task, then the larger fits."""
    from ..estimators import (CARTClassifier, CARTClassifierCV, CARTRegressor,
                              CARTRegressorCV, CLASSIFIER_CRITERIA, REGRESSOR_CRITERIA)
    rng = np.random.default_rng(0)
    n = 60
    X = np.ascontiguousarray(rng.standard_normal((n, 3)))
    X[:, 2] = np.round(X[:, 2])  # ties
    y3 = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    y2 = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    yr = X[:, 0] * 2.0 + np.sin(X[:, 1]) + 0.1 * rng.standard_normal(n)
    w = rng.integers(1, 4, size=n).astype(np.float64)
    # missing values (docs/maths.md §8): present-case search, surrogate and competitor
    # splits, routing; column 2 is also fitted as a categorical feature with holes
    Xm = X.copy()
    Xm[::5, 0] = np.nan
    Xm[1::7, 1] = np.nan
    Xm[2::6, 2] = np.nan
    every = np.isnan(Xm).all(axis=1)
    Xm[every, 2] = X[every, 2]  # no case misses every feature (that would warn)

    def classification_missing(criterion):
        CARTClassifier(criterion).fit(Xm, y3, sample_weight=w).predict(X)
        CARTClassifier(criterion, categorical_features=[2], use_surrogate=1).fit(Xm, y2)
        CARTClassifierCV(criterion, cv=3, random_state=0).fit(Xm, y3)

    def classification(criterion):
        for y in (y2, y3):
            est = CARTClassifier(criterion).fit(X, y)
            est.predict(X)
            est.predict_proba(X)
            est.cost_complexity_path()
            CARTClassifier(criterion, ccp_alpha=0.01).fit(X, y, sample_weight=w)
        J = 3
        cost = np.ones((J, J)) - np.eye(J)
        cost[0, 1] = 2.0
        CARTClassifier(criterion, priors="equal", cost=cost, max_depth=3).fit(X, y3)
        CARTClassifier(criterion, priors=np.array([0.2, 0.3, 0.5])).fit(X, y3)
        CARTClassifier(criterion, priors=np.array([0.2, 0.3, 0.5]),
                       categorical_features=[2]).fit(X, y3)
        for stratify in (False, True):
            CARTClassifierCV(criterion, cv=5, random_state=0, stratify=stratify).fit(X, y3)
        CARTClassifierCV(criterion, cv=3, n_repeats=2, random_state=1).fit(
            X, y3, sample_weight=w)
        CARTClassifierCV(criterion, cv="loo").fit(X[:20], y3[:20])

    def classification_categorical(criterion):
        # categorical features: subset splits (two classes: ordered scan; three:
        # exhaustive search, and the heuristic order beyond max_categories_exhaustive)
        for y in (y2, y3):
            CARTClassifier(criterion, categorical_features=[2]).fit(X, y).predict(X)
        CARTClassifier(criterion, categorical_features=[2], max_categories_exhaustive=2,
                       ccp_alpha=0.01).fit(X, y3, sample_weight=w)
        CARTClassifierCV(criterion, categorical_features=[2], cv=3, random_state=0).fit(X, y3)

    def regression_missing(criterion):
        CARTRegressor(criterion, surrogate_style=1).fit(Xm, yr).predict(X)
        CARTRegressor(criterion, categorical_features=[2]).fit(Xm, yr, sample_weight=w)
        CARTRegressorCV(criterion, cv=3, random_state=0).fit(Xm, yr)

    def regression(criterion):
        est = CARTRegressor(criterion).fit(X, yr)
        est.predict(X)
        est.cost_complexity_path()
        CARTRegressor(criterion, min_samples_leaf=3).fit(X, yr, sample_weight=w)
        CARTRegressorCV(criterion, cv=5, random_state=0).fit(X, yr)
        CARTRegressorCV(criterion, cv=3, n_repeats=2, random_state=1).fit(
            X, yr, sample_weight=w)
        CARTRegressorCV(criterion, cv="loo").fit(X[:20], yr[:20])

    def regression_categorical(criterion):
        CARTRegressor(criterion, categorical_features=[2]).fit(X, yr).predict(X)
        CARTRegressorCV(criterion, categorical_features=[2], cv=3, random_state=0).fit(
            X, yr, sample_weight=w)

    def large():
        # complete regression data with a segment of GATHER_MIN cases or more (the gathered
        # scan of the serial growth)
        Xb = np.ascontiguousarray(rng.standard_normal((1100, 2)))
        CARTRegressor(max_depth=2).fit(Xb, Xb[:, 0] + np.sin(Xb[:, 1]))
        _compile_threaded(CARTClassifier, CARTRegressor)

    steps = []
    for task, criteria, parts in (
            ("classification", CLASSIFIER_CRITERIA,
             (classification, classification_categorical, classification_missing)),
            ("regression", REGRESSOR_CRITERIA,
             (regression, regression_categorical, regression_missing))):
        for c in criteria:
            for what, part in zip(("numeric features", "categorical features",
                                   "missing values"), parts):
                steps.append((f"{task} ({c}), {what}", functools.partial(part, c)))
    steps.append(("larger fits (the gathered scan, several threads)", large))
    steps.append(("forests (bagging, random features, out-of-bag, importance)",
                  functools.partial(_forests, X, Xm, y3, yr)))
    return steps


def _forests(X, Xm, y3, yr):
    """The forests' kernels (cartjit.engine.forest_passes): prediction by the blind and
    the careful walk, the out-of-bag pass and the permutation importance, for both
    tasks, on complete data, with holes and with a categorical feature."""
    import warnings

    from ..ensemble import RandomForestClassifier, RandomForestRegressor

    with warnings.catch_warnings():  # three trees leave cases without an OOB value
        warnings.simplefilter("ignore", UserWarning)
        _forest_fits(RandomForestClassifier, RandomForestRegressor, X, Xm, y3, yr)


def _forest_fits(classifier, regressor, X, Xm, y3, yr):
    """:func:`_forests`' fits."""
    for data in (X, Xm):
        for cat in (None, [2]):
            rf = classifier(3, max_features=2, oob_score=True, oob_importance=True,
                            categorical_features=cat, random_state=0).fit(data, y3)
            rf.predict_proba(X)
            rf.apply(X)
            rr = regressor(3, oob_score=True, oob_importance=True,
                           categorical_features=cat, random_state=0).fit(data, yr)
            rr.predict(X)


def _compile_threaded(classifier, regressor):
    """Fits large enough to grow on several threads (80,000 cells, above the engine's
    threshold of 65,536): the launchers of the chunked steps (cartjit.engine.speed) are
    compiled per signature, and a regression tree grown to purity runs the weakest-link
    loop by branches. Nothing to do on one thread."""
    import numba

    if numba.get_num_threads() < 2:
        return
    rng = np.random.default_rng(1)
    n = 20_000
    X = np.ascontiguousarray(rng.standard_normal((n, 4)))
    X[:, 3] = rng.integers(0, 5, n)
    y2 = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    yr = X[:, 0] + np.sin(X[:, 1])
    Xm = X.copy()
    Xm[::9, 0] = np.nan
    Xm[1::11, 3] = np.nan
    for Xi in (X, Xm):
        for cat in ([], [3]):
            classifier(max_depth=3, categorical_features=cat).fit(Xi, y2)
            regressor(max_depth=3, categorical_features=cat).fit(Xi, yr)
    # the other kernels of step 1 (cartjit.engine.search.SEARCH_KERNELS): without the lean
    # Gini scan, and with every classification scan (class factors that differ)
    classifier("entropy", max_depth=3).fit(X, y2)
    classifier(max_depth=3, priors=[0.3, 0.7]).fit(X, y2)
    # a tree of thousands of splits: the weakest-link loop shared out by branches
    regressor().fit(X, yr)


def compile_for_cells(cells):
    """One tiny fit per distinct kind of cell: compiles (or loads) what the cells use.

    Best effort: a kind whose tiny fit fails (say, settings that need more cases) is
    skipped; its cells then compile what they need themselves.
    """
    from .cells import _estimator, _fit_cell
    from .stability import cv_cell_records
    rng = np.random.default_rng(0)
    n = 40
    X = np.ascontiguousarray(rng.standard_normal((n, 3)))
    seen = set()
    X_cat = X.copy()
    X_cat[:, 0] = np.arange(n) % 4  # a categorical feature with four levels
    if any(getattr(cell, "kind", None) == "method" for cell in cells):
        _warm_methods(cells, X, X_cat)
        return
    for cell in cells:
        kind = (cell.task, json.dumps(cell.settings, sort_keys=True), cell.stratify, cell.loo,
                bool(cell.categorical))
        if kind in seen:
            continue
        seen.add(kind)
        s = cell.settings
        if cell.task == "classification":
            J = len(s["priors"]) if not isinstance(s["priors"], str) else \
                len(s["cost"]) if not isinstance(s["cost"], str) else 3
            y = np.arange(n, dtype=np.int64) % J
        else:
            y = X[:, 0] + 0.5 * X[:, 1]
        est = _estimator(cell.task, s, "loo" if cell.loo else 3, cell.stratify, 0,
                         (0,) if cell.categorical else ())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                prep, res = _fit_cell(est, X_cat if cell.categorical else X, y)
                cv_cell_records(prep, res, {"min": 0})  # the descent of the records
            except Exception:  # noqa: BLE001 - best effort, see the docstring
                pass


def _warm_methods(cells, X, X_cat):
    """:func:`compile_for_cells` of a methods study: one tiny fit and prediction per
    distinct cartjit method (forests of two trees), which also imports and resolves
    every estimator class once before the cells (other estimators are resolved only)."""
    from .methods import method_params, resolve_estimator
    n = X.shape[0]
    seen = set()
    for cell in cells:
        cls = resolve_estimator(cell.estimator, cell.task)
        kind = (cls, json.dumps(cell.params, sort_keys=True), bool(cell.categorical),
                len(cell.class_values))
        if kind in seen or not cls.__module__.startswith("cartjit"):
            continue
        seen.add(kind)
        params = method_params(cls, cell.params, 0, (0,) if cell.categorical else ())
        if "n_estimators" in cls().get_params():
            params["n_estimators"] = 2
        if cell.task == "classification":
            y = np.arange(n, dtype=np.int64) % max(2, len(cell.class_values))
        else:
            y = X[:, 0] + 0.5 * X[:, 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                data = X_cat if cell.categorical else X
                cls(**params).fit(data, y).predict(data)
            except Exception:  # noqa: BLE001 - best effort, as compile_for_cells
                pass


def warm_up(announce=None, work=None, progress=None):
    """Compile (or load) the kernels now; returns a :class:`CompileReport`.

    ``work`` is what to run (default :func:`compile_kernels`, every kernel, which calls
    ``progress(i, n, label)`` before each step). ``announce(text)`` (e.g. a print to
    stderr) is called once, when Numba starts compiling the first function (nothing is
    said when everything loads from the cache); the fits' own per-kind notices
    (:mod:`cartjit.engine.cache`) are held back meanwhile.
    """
    directory = cache_dir()
    before = _misses()
    functions = _cache.compiled_count()
    t0 = time.perf_counter()
    with _cache.quiet(announce):
        if work is None:
            compile_kernels(progress)
        else:
            work()
    seconds = time.perf_counter() - t0
    n = _misses() - before
    functions = _cache.compiled_count() - functions
    return CompileReport(seconds, n > 0 or functions > 0, n, directory, functions > 0,
                         functions)
