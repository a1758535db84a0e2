"""Chunked kernels launched as one parallel loop (cartjit.engine.speed) against the same chunks
run one after the other and on a thread pool: every chunk runs once, with its own index,
the kernel's writes are the same, a chunk that raises is reported, and a grown tree does
not depend on the route the chunks took."""
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest

from cartjit.engine import speed as _team
from cartjit.engine.impurity import GINI, SQUARED_ERROR
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.speed import _take_block, step_counters
from cartjit.engine.speed import run_chunks

# The launchers are cached kernels: a signature with a type defined here (a NamedTuple of
# this module) would go into their cache index, which another process without this
# module could not load. Plain arrays and scalars only; the grower's NamedTuples are
# launched by the fits below.


@numba.njit(nogil=True)
def _fill(out, offsets, scale, flag, extra, c, n_chunks):
    """Chunk c writes its rows c, c + n_chunks, ... (an array, a float, a bool and a
    float, as the grower's kernels take scalars)."""
    for i in range(c, out.shape[0], n_chunks):
        out[i] = scale * i + offsets[c] + extra + (1.0 if flag else 0.0) + 1000 * c


@numba.njit(nogil=True)
def _raise_in_chunk_one(out, c, n_chunks):
    if c == 1:
        raise ValueError("chunk one")
    out[c] = 1.0


@numba.njit(nogil=True)
def _returns_a_value(out, c, n_chunks):
    out[c] = 1.0
    return c


@numba.njit(nogil=True)
def _take_units(taken, by, counter, c, n_chunks):
    """Chunk c takes units from the shared counter until none is left, adding 1 to
    ``taken[u]`` and recording itself in ``by[u]`` (a little work per unit, so that the
    chunks overlap)."""
    while True:
        u = _team.next_unit(counter, taken.shape[0])
        if u < 0:
            break
        acc = 0.0
        for i in range(2000):
            acc += i * 1e-9
        taken[u] += 1 + np.int64(acc > 1e9)
        by[u] = c


@pytest.mark.parametrize("n_chunks", [1, 2, 5])
def test_shared_units_are_each_taken_once(n_chunks):
    """``next_unit``: chunks launched together take every unit exactly once (an atomic
    counter), and with more than one chunk more than one chunk takes units (in some
    launch: on a busy machine a thread may wake after the others took every unit)."""
    shared = False
    for _ in range(20):
        taken = np.zeros(3000, dtype=np.int64)
        by = np.full(3000, -1, dtype=np.int64)
        counter = np.zeros(1, dtype=np.int64)
        _team.launch(n_chunks, _take_units, taken, by, counter)
        np.testing.assert_array_equal(taken, 1)
        assert counter[0] >= 3000
        assert set(np.unique(by).tolist()) <= set(range(n_chunks))
        shared |= np.unique(by).shape[0] > 1
    if n_chunks > 1 and numba.get_num_threads() > 1:
        assert shared


@pytest.mark.parametrize("n_chunks", [2, 3, 7])
def test_launch_runs_every_chunk_once_as_a_serial_loop_does(n_chunks):
    args = (np.arange(n_chunks, dtype=np.float64) * 3.0, 0.5, True, 0.25)
    want = np.zeros(50)
    run_chunks(None, n_chunks, _fill, want, *args)  # on the calling thread
    got = np.zeros(50)
    _team.launch(n_chunks, _fill, got, *args)
    np.testing.assert_array_equal(got, want)
    # every row was written by the chunk it belongs to
    np.testing.assert_array_equal(np.floor(got / 1000), np.arange(50) % n_chunks)


def test_launch_keeps_one_address_per_signature():
    args = (np.zeros(2), 1.0, False, 1.0)
    out = np.zeros(4)
    _team.launch(2, _fill, out, *args)
    first = _team.address(_fill, (out, *args))
    # other values of the same types: the same compiled signature
    assert _team.address(_fill, (np.ones(9), np.ones(5), 2.0, True, 3.0)) == first
    # a float32 array is another signature, with its own code
    other = _team.address(_fill, (np.zeros(4, dtype=np.float32), *args))
    assert other != first
    got = np.zeros(4, dtype=np.float32)
    _team.launch(2, _fill, got, *args)
    want = np.zeros(4, dtype=np.float32)
    run_chunks(None, 2, _fill, want, *args)
    np.testing.assert_array_equal(got, want)


def test_a_chunk_that_raises_is_reported():
    out = np.zeros(3)
    with pytest.raises(RuntimeError, match=r"_raise_in_chunk_one failed in chunk\(s\) \[1\]"):
        _team.launch(3, _raise_in_chunk_one, out)
    assert out[0] == 1.0 and out[2] == 1.0


def test_a_kernel_that_returns_a_value_is_refused():
    with pytest.raises(TypeError, match="_returns_a_value returns int64"):
        _team.launch(2, _returns_a_value, np.zeros(2))


def test_run_chunks_takes_the_launch_the_pool_or_the_caller_alike():
    args = (np.arange(4, dtype=np.float64), 0.5, False, 2.0)
    outs = []
    with ThreadPoolExecutor(1) as pool:
        for route in (None, pool, _team.LAUNCH):
            out = np.zeros(40)
            run_chunks(route, 4, _fill, out, *args)
            outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def _holes_problem(regression):
    rng = np.random.default_rng(5)
    n = 12_000
    X = rng.normal(size=(n, 6))
    X[:, 5] = rng.integers(0, 9, n)
    score = X[:, 0] + np.sin(2 * X[:, 1]) + (X[:, 5] % 3 == 1)
    X[rng.random(X.shape) < 0.1] = np.nan
    levels = np.array([0, 0, 0, 0, 0, 9], dtype=np.int64)
    if regression:
        return Problem(X, np.empty(0, np.int32), score, np.empty(0), True, 0, levels)
    return Problem(X, (score > 0.3).astype(np.int32), np.empty(0), np.empty(0), True, 2,
                   levels)


@pytest.mark.parametrize("regression", [False, True])
def test_a_tree_is_the_same_by_launch_by_pool_and_on_one_thread(regression, monkeypatch):
    problem = _holes_problem(regression)
    cost = None if regression else 1.0 - np.eye(2)
    settings = Settings(SQUARED_ERROR if regression else GINI, 14, 20, 7, 0.0, None,
                        None if regression else "empirical", cost, True, 12, 5, 2, 0, 4)
    one = fit_tree(problem, settings, None, 1).tree
    by_launch = fit_tree(problem, settings, None, 2).tree
    monkeypatch.setattr(_team, "_shared", False)  # as without a suitable threading layer
    assert _team.launch_pool() is None
    by_pool = fit_tree(problem, settings, None, 2).tree
    assert one.n_nodes > 100
    for name in one._fields:
        a = getattr(one, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, getattr(by_launch, name), err_msg=name)
            np.testing.assert_array_equal(a, getattr(by_pool, name), err_msg=name)


def test_launch_is_offered_only_with_a_layer_that_several_threads_may_enter(monkeypatch):
    monkeypatch.setattr(_team, "_shared", None)
    offered = _team.launch_pool()
    layer = numba.threading_layer()
    if layer in ("omp", "tbb") and _team.PARALLEL and numba.config.NUMBA_NUM_THREADS > 1:
        assert offered is _team.LAUNCH
    else:
        assert offered is None


def test_cartjit_compile_compiles_the_launchers_of_threaded_fits():
    # cartjit compile (experiments.warmup.compile_kernels) ends with fits large enough
    # to grow on two threads: afterwards such a fit compiles no launcher signature
    from cartjit.estimators import CARTClassifier, CARTRegressor
    from cartjit.experiments import warmup

    if numba.get_num_threads() < 2 or _team.launch_pool() is None:
        pytest.skip("one Numba thread, or no threading layer for launches: nothing to compile")
    warmup._compile_threaded(CARTClassifier, CARTRegressor)
    before = {n: len(f.signatures) for n, f in _team.LAUNCHERS.items()}
    assert sum(before.values()) >= 8  # the steps of complete and missing-value fits
    rng = np.random.default_rng(2)
    n = 20_000
    X = rng.standard_normal((n, 5))
    X[:, 4] = rng.integers(0, 4, n)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    CARTClassifier(max_depth=4, categorical_features=[4]).fit(X, y)
    CARTRegressor(max_depth=4).fit(X, np.nan_to_num(X[:, 1]))
    assert {n: len(f.signatures) for n, f in _team.LAUNCHERS.items()} == before


def test_fits_launching_from_several_python_threads_at_once_are_right():
    # two fits on two threads each, started from two Python threads at the same time:
    # the layer gives each calling thread its own team; the trees are those of one thread
    problem = _holes_problem(False)
    settings = Settings(GINI, 14, 20, 7, 0.0, None, "empirical", 1.0 - np.eye(2), True, 12,
                        5, 2, 0, 4)
    want = fit_tree(problem, settings, None, 1).tree
    with ThreadPoolExecutor(2) as pool:
        trees = [f.result() for f in [pool.submit(lambda: fit_tree(problem, settings, None,
                                                                   2).tree)
                                      for _ in range(4)]]
    for got in trees:
        for name in want._fields:
            a = getattr(want, name)
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, getattr(got, name), err_msg=name)



@numba.njit(nogil=True)
def _cover_blocks(seen, when, tick, counters, p, c, n_chunks):
    """Chunk c takes blocks of (row, feature) pairs until none is left, counting each
    pair it covers in ``seen[f, j]`` and, when it runs alone, the order of its blocks in
    ``when[f, j]``."""
    n_rows = seen.shape[1]
    while True:
        f, j0, j1 = _take_block(counters, c, n_chunks, p, n_rows)
        if f < 0:
            break
        tick[c] += 1
        for j in range(j0, j1):
            seen[f, j] += 1
            when[f, j] = tick[c] * n_chunks + c


@pytest.mark.parametrize("n_chunks, p, n_rows", [(1, 5, 7), (2, 15, 1), (2, 15, 40),
                                                 (3, 4, 100), (2, 20, 3)])
def test_blocks_cover_every_pair_once_and_chunks_start_with_their_own(n_chunks, p, n_rows):
    """``_take_block``: the chunks of a step cover every (row, feature) pair exactly once,
    launched together or one after the other; a chunk takes the blocks of its own
    features (f mod n) before any other's (the last chunk, run first and alone, takes
    all, its own first)."""
    for launched in (False, True):
        seen = np.zeros((p, n_rows), dtype=np.int64)
        when = np.zeros((p, n_rows), dtype=np.int64)
        tick = np.zeros(n_chunks, dtype=np.int64)
        counters = step_counters(n_chunks)
        if launched:
            _team.launch(n_chunks, _cover_blocks, seen, when, tick, counters, p)
        else:
            for c in reversed(range(n_chunks)):
                _cover_blocks(seen, when, tick, counters, p, c, n_chunks)
            assert tick[:n_chunks - 1].sum() == 0  # the first chunk run took every block
        np.testing.assert_array_equal(seen, 1)
        if not launched and n_chunks > 1:
            own = np.arange(p) % n_chunks == n_chunks - 1
            assert when[own].max() < when[~own].min()
