"""Kernels compiled without reference counting (``jit(borrowed=True)``) return no array.

A borrowed kernel makes no reference-count updates, so an array it returned would reach
its caller one reference short; Numba refuses an allocation or the return of a new array
there but allows returning an argument. Every compiled signature of every borrowed kernel
is checked after fits that reach them (classification, regression, categorical
features, missing values): all of them where this process compiles the kernels, the
grower's entry points where they come from Numba's cache.
"""
import importlib

import numpy as np
import pytest
from numba import types
from numba.core.registry import CPUDispatcher

from cartjit import CARTClassifier, CARTRegressor
from cartjit.engine import speed as _config

ENGINE = [importlib.import_module(f"cartjit.engine.{name}") for name in _config.ENGINE_MODULES]


def _borrowed_kernels():
    found = []
    for mod in ENGINE:
        for name, obj in vars(mod).items():
            if (isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__
                    and obj.targetoptions.get("_nrt") is False):
                found.append((f"{mod.__name__}.{name}", obj))
    return found


def _has_array(ty):
    if isinstance(ty, types.Array):
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_has_array(t) for t in ty.types)
    return False


def _fit_everything():
    from cartjit.engine import grow as _builder
    Xs = np.random.default_rng(1).normal(size=(40, 4))
    Xs[:, 3] = np.arange(40) % 5
    _builder.COMPILED_DRIVER = False  # the kernels called from Python, as with threads
    try:
        CARTClassifier(categorical_features=[3]).fit(Xs, np.arange(40) % 3)
    finally:
        _builder.COMPILED_DRIVER = True
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    X[:, 3] = rng.integers(0, 5, 400)
    y = (X[:, 0] + (X[:, 3] > 2) > 0.5).astype(int) + (X[:, 1] > 1)
    for est in (CARTClassifier(categorical_features=[3]),
                CARTRegressor(categorical_features=[3])):
        est.fit(X, y.astype(float) if isinstance(est, CARTRegressor) else y)
    X[rng.random(400) < 0.1, 0] = np.nan
    CARTClassifier(categorical_features=[3]).fit(X, y)


@pytest.mark.skipif(not _config._NRT_OPTION, reason="this Numba has no _nrt switch")
def test_borrowed_kernels_return_no_array():
    _fit_everything()
    kernels = _borrowed_kernels()
    names = {name for name, _ in kernels}
    assert {"cartjit.engine.search._search", "cartjit.engine.children._partition",
            "cartjit.engine.scans.best_split_gini_runs",
            "cartjit.engine.subsets.best_subset_classification"} <= names
    checked = set()
    for name, disp in kernels:
        for sig in disp.signatures:
            ret = disp.overloads[sig].signature.return_type
            assert not _has_array(ret), f"{name}{sig} returns {ret}"
            checked.add(name)
    # Kernels loaded from Numba's cache carry their callees compiled in, so a callee has
    # signatures to check only where this process compiled it (an empty cache); the
    # kernels the grower calls from Python always have theirs.
    assert {"cartjit.engine.search._search_gini", "cartjit.engine.subsets._search_subsets",
            "cartjit.engine.children._partition", "cartjit.engine.children._children",
            "cartjit.engine.choose._choose"} <= checked


def test_every_kernel_sets_reference_counting_explicitly():
    # a kernel without the flag would inherit its first caller's setting
    if not _config._NRT_OPTION:
        pytest.skip("this Numba has no _nrt switch")
    for mod in ENGINE:
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__:
                assert "_nrt" in obj.targetoptions, f"{mod.__name__}.{name}"
