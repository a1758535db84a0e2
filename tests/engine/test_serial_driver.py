"""The compiled growth driver (one thread, no missing values) grows the tree the Python
level loop grows: every array of the fitted tree is equal, bit for bit."""
import numpy as np
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor
from cartjit.engine import grow as _builder
from cartjit.engine.choose import _fill_competitors
from cartjit.datasets import load_iris


def _data(seed, n=300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 1] = np.round(X[:, 1], 1)          # tied values
    X[:, 4] = rng.integers(0, 6, n)         # a categorical feature
    y = (X[:, 0] + 0.5 * X[:, 1] + (X[:, 4] > 2) > 0.3).astype(int) + (X[:, 2] > 1)
    w = rng.integers(1, 4, n).astype(float)
    return X, y, w


CASES = [
    ("gini", lambda: CARTClassifier(), False),
    ("entropy weights", lambda: CARTClassifier("entropy"), True),
    ("twoing subsets", lambda: CARTClassifier("twoing", categorical_features=[4]), False),
    ("competitors", lambda: CARTClassifier(categorical_features=[4], max_competitor=3), False),
    ("leaf nodes and depth", lambda: CARTClassifier(max_leaf_nodes=6, max_depth=4,
                                                    min_samples_leaf=3), True),
    ("regression", lambda: CARTRegressor(categorical_features=[4]), True),
    ("rpart", lambda: CARTClassifier(compat="rpart", categorical_features=[4]), False),
]


def _fit_both(make, X, y, w):
    trees = []
    for compiled in (True, False):
        _builder.COMPILED_DRIVER = compiled
        try:
            trees.append(make().fit(X, y, sample_weight=w).tree_max_)
        finally:
            _builder.COMPILED_DRIVER = True
    return trees


@pytest.mark.parametrize("name,make,weighted", CASES, ids=[c[0] for c in CASES])
def test_driver_grows_the_python_loops_tree(name, make, weighted):
    X, y, w = _data(7)
    if isinstance(make(), CARTRegressor):
        y = X[:, 0] + np.where(X[:, 4] > 2, 1.0, 0.0)
    a, b = _fit_both(make, X, y, w if weighted else None)
    assert a.n_nodes > 5
    for field in a._fields:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_driver_leave_one_out_matches():
    X, y = load_iris(return_X_y=True)
    res = []
    for compiled in (True, False):
        _builder.COMPILED_DRIVER = compiled
        try:
            res.append(CARTClassifierCV(cv=150).fit(X, y).cv_results_)
        finally:
            _builder.COMPILED_DRIVER = True
    assert res[0].equals(res[1])
    assert len(res[0]) > 2


def _globals_left(kernel, none_arg):
    """The global names a kernel still refers to once Numba has pruned its branches for
    a call with ``none_arg`` typed ``None`` (the pass Numba runs before typing)."""
    from numba.core import ir, types
    from numba.core.analysis import dead_branch_prune
    from numba.core.compiler import run_frontend

    code = kernel.py_func.__code__
    names = code.co_varnames[:code.co_argcount]
    func_ir = run_frontend(kernel.py_func)
    dead_branch_prune(func_ir, [types.none if n == none_arg else types.int64
                                for n in names])
    return {st.value.name for blk in func_ir.blocks.values()
            for st in blk.find_insts(ir.Assign)
            if isinstance(st.value, (ir.Global, ir.FreeVar))}


SUBSET_KERNELS = {"_search_subsets", "_record_subsets", "_level_sets_of_pair",
                  "_level_sets_from_bits", "_partition_split_feature"}


def test_numeric_fit_compiles_no_subset_code():
    """Without categorical features the driver gets ``cat=None`` and the competitors
    ``level_sets=None``: the subset kernels are pruned before typing, so a numeric fit
    never compiles them (most of a cold start otherwise); with the arrays they stay."""
    driver = _globals_left(_builder._grow_serial, "cat")
    assert "_search" in driver and "_fill_competitors" in driver
    assert not driver & SUBSET_KERNELS
    competitors = _globals_left(_fill_competitors, "level_sets")
    assert "threshold_between" in competitors
    assert not competitors & SUBSET_KERNELS
    assert {"_search_subsets", "_record_subsets"} <= _globals_left(_builder._grow_serial, "")
    assert {"_level_sets_of_pair", "_level_sets_from_bits"} <= _globals_left(
        _fill_competitors, "")


@pytest.mark.parametrize("name,make,weighted", CASES[:3] + CASES[5:6],
                         ids=[c[0] for c in CASES[:3] + CASES[5:6]])
def test_driver_on_tables_allocated_in_python_or_compiled(monkeypatch, name, make, weighted):
    """A small growth's tables are allocated inside the compiled driver, a larger one's
    by NumPy: the same data grown both ways, and by the Python loop, gives the same
    tree; so does data past SMALL_FIT_ROWS."""
    for n in (300, _builder.SMALL_FIT_ROWS // 2 + 200):
        X, y, w = _data(11, n)
        if isinstance(make(), CARTRegressor):
            y = X[:, 0] + np.where(X[:, 4] > 2, 1.0, 0.0)
        w = w if weighted else None
        small = make().fit(X, y, sample_weight=w).tree_max_
        monkeypatch.setattr(_builder, "SMALL_FIT_ROWS", 0)  # tables from Python
        large = make().fit(X, y, sample_weight=w).tree_max_
        monkeypatch.undo()
        loop, = _fit_both(make, X, y, w)[1:]
        assert small.n_nodes > 5
        for field in small._fields:
            for other in (large, loop):
                np.testing.assert_array_equal(getattr(small, field), getattr(other, field),
                                              err_msg=f"{n} {field}")


def _missing_data(seed, n=300):
    X, y, w = _data(seed, n)
    rng = np.random.default_rng(seed + 1)
    X[rng.random(X.shape) < 0.1] = np.nan   # every feature, the categorical one too
    return X, y, w


MISSING_CASES = [
    ("gini", lambda: CARTClassifier(), False),
    ("entropy weights surrogates", lambda: CARTClassifier("entropy", max_surrogate=2), True),
    ("subsets competitors", lambda: CARTClassifier(categorical_features=[4],
                                                   max_competitor=3), False),
    ("regression", lambda: CARTRegressor(categorical_features=[4]), False),
    ("regression weights", lambda: CARTRegressor(), True),
    ("rpart", lambda: CARTClassifier(compat="rpart", categorical_features=[4]), False),
]


@pytest.mark.parametrize("name,make,weighted", MISSING_CASES,
                         ids=[c[0] for c in MISSING_CASES])
def test_driver_grows_the_python_loops_tree_with_missing_values(name, make, weighted):
    """The missing-value path (NaN in X, surrogates) in the compiled driver: the same
    kernels in the same order as the Python loop, so every array of the tree is equal."""
    X, y, w = _missing_data(5)
    if isinstance(make(), CARTRegressor):
        y = np.nan_to_num(X[:, 0]) + np.where(X[:, 4] > 2, 1.0, 0.0)
    a, b = _fit_both(make, X, y, w if weighted else None)
    assert a.n_nodes > 5 and int(a.n_surrogates.sum()) > 0
    for field in a._fields:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_driver_with_missing_values_allocates_as_grow_does(monkeypatch):
    """Past SMALL_FIT_ROWS the tables come from Python, below it from the driver: on
    the missing-value path too, the same tree either way and by the Python loop."""
    make = lambda: CARTClassifier(categorical_features=[4])  # noqa: E731
    X, y, w = _missing_data(9, 600)
    small = make().fit(X, y).tree_max_
    monkeypatch.setattr(_builder, "SMALL_FIT_ROWS", 0)
    large = make().fit(X, y).tree_max_
    monkeypatch.undo()
    loop = _fit_both(make, X, y, None)[1]
    for field in small._fields:
        for other in (large, loop):
            np.testing.assert_array_equal(getattr(small, field), getattr(other, field),
                                          err_msg=field)


def test_missing_value_driver_compiles_no_complete_data_search():
    """Each path's code hangs on an argument that is None on the other path: the
    complete-data driver compiles no missing-value step, the missing-value driver no
    complete-data search (Numba prunes ``x is not None`` only where x is None)."""
    complete = _globals_left(_builder._grow_serial, "mv")
    assert "_search" in complete
    assert not complete & {"_search_mv", "_missing_step", "_partition_mv", "_missing_bits"}
    missing = _globals_left(_builder._grow_serial, "unit")
    assert {"_search_mv", "_missing_step", "_partition_mv"} <= missing
    assert not missing & {"_search", "_record_subsets", "_case_blocks"}


def test_forest_with_missing_values_grows_the_same_on_either_driver():
    """A random forest's trees (m features drawn per node, bootstrap weights) on data
    with missing values: the compiled driver and the Python loop grow the same trees."""
    from cartjit import RandomForestClassifier

    X, y, _ = _missing_data(13)
    forests = []
    for compiled in (True, False):
        _builder.COMPILED_DRIVER = compiled
        try:
            forests.append(RandomForestClassifier(4, max_features=2, random_state=1)
                           .fit(X, y).forest_)
        finally:
            _builder.COMPILED_DRIVER = True
    a, b = forests
    assert a.n_nodes > 20
    for field in ("feature", "threshold", "left", "value"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
