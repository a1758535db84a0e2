"""Growth with missing values gives the same tree, surrogate and competitor tables
whatever the number of threads.

The per-node steps of a level with missing values (marking the cases, ranking the
surrogates and competitors, sending the cases missing the split feature, the
competitors' thresholds and level sets) run in chunks of nodes on the thread pool, with
the table rows laid out in node order by a serial pass first; these fits are large
enough for growth to use threads (cartjit.engine.presort.PARALLEL_MIN_KEYS).
"""
import numpy as np
import pytest

from cartjit.engine.impurity import GINI, SQUARED_ERROR
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.presort import PARALLEL_MIN_KEYS
from cartjit.engine.tree import TABLE_FIELDS

N = 20_000
#: levels of the categorical columns: few, more than a packed side word holds (31),
#: and more than one bitset word (64), which take the slower paths
LEVELS = (6, 40, 70)


def _data(seed, frac):
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(N, 3))
    num[:, 2] = np.round(num[:, 2], 1)  # tied values
    cat = np.column_stack([rng.integers(0, L, N) for L in LEVELS]).astype(float)
    X = np.column_stack([num, cat])
    # the categorical columns track the numeric ones, so they make surrogates
    X[:, 3] = np.clip(np.floor((num[:, 0] + 3) * LEVELS[0] / 6), 0, LEVELS[0] - 1)
    score = num[:, 0] + np.sin(2 * num[:, 1]) + (X[:, 4] % 3 == 1) - 0.5 * (X[:, 5] % 5 == 0)
    X[rng.random(X.shape) < frac] = np.nan
    return np.ascontiguousarray(X), score + 0.5 * rng.normal(size=N)


def _settings(criterion, use_surrogate, max_surrogate=5, max_competitor=4):
    cost = None if criterion == SQUARED_ERROR else 1.0 - np.eye(2)
    return Settings(criterion, 12, 20, 7, 0.0, None,
                    None if criterion == SQUARED_ERROR else "empirical", cost, True, 12,
                    max_surrogate, use_surrogate, 0, max_competitor)


def _problem(X, score, regression, weighted):
    w = np.random.default_rng(1).integers(1, 4, N).astype(float) if weighted else np.empty(0)
    levels = np.array([0, 0, 0, *LEVELS], dtype=np.int64)
    if regression:
        return Problem(X, np.empty(0, np.int32), score, w, not weighted, 0, levels)
    return Problem(X, (score > 0.3).astype(np.int32), np.empty(0), w, not weighted, 2,
                   levels)


@pytest.mark.parametrize("regression, weighted, use_surrogate, frac", [
    (False, False, 2, 0.1), (False, True, 1, 0.2), (True, False, 2, 0.1),
    (True, True, 0, 0.1)])
def test_trees_with_holes_do_not_depend_on_the_number_of_threads(regression, weighted,
                                                                 use_surrogate, frac):
    X, score = _data(3, frac)
    assert X.size >= PARALLEL_MIN_KEYS
    problem = _problem(X, score, regression, weighted)
    settings = _settings(SQUARED_ERROR if regression else GINI, use_surrogate)
    one = fit_tree(problem, settings, None, 1).tree
    two = fit_tree(problem, settings, None, 2).tree
    assert one.n_nodes > 100
    assert one.surrogate_feature.shape[0] > 50
    assert one.competitor_feature.shape[0] > 50
    # categorical surrogates of each width were kept
    kept = set(one.surrogate_feature[one.surrogate_level_row >= 0].tolist())
    assert {3, 4} <= kept
    for name in one._fields:
        a, b = getattr(one, name), getattr(two, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name)
    for name in TABLE_FIELDS:
        assert getattr(one, name).shape == getattr(two, name).shape, name


@pytest.mark.parametrize("regression, n_threads", [(False, 1), (True, 2)])
def test_no_unwritten_table_row_is_read(monkeypatch, regression, n_threads):
    """The surrogate and competitor tables are allocated without clearing (their worst
    case is large): filled with a sentinel instead, the trees and tables come out the
    same, so every row kept was written before it was read."""
    from cartjit.engine import grow as _builder

    X, score = _data(5, 0.1)
    problem = _problem(X, score, regression, False)
    settings = _settings(SQUARED_ERROR if regression else GINI, 2)
    plain = fit_tree(problem, settings, None, n_threads).tree

    def sentinel(shape, dtype):
        fill = -987654321 if np.issubdtype(dtype, np.integer) else 1.2345e300
        return np.full(shape, fill, dtype=dtype)

    monkeypatch.setattr(_builder, "_uncleared", sentinel)
    filled = fit_tree(problem, settings, None, n_threads).tree
    assert plain.surrogate_feature.shape[0] > 50 and plain.competitor_feature.shape[0] > 50
    for name in plain._fields:
        a, b = getattr(plain, name), getattr(filled, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=name)
