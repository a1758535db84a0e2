"""The cross-validation's lean fold trees (:func:`cartjit.engine.fit.fit_fold`) against the
full path: :func:`cartjit.engine.fit.fit_tree` on the same fold keys, turned into the
held-out descent's arrays by :func:`cartjit.engine.cv.fold_tree_arrays`. Every array must be
the same, bit for bit, and so must the sequence, whether the fold makes its own
:func:`cartjit.engine.grow.grow_setup` or takes one made once for every fold, as the
cross-validation does; the data have ties, and some cases
miss values, some features are categorical, weights and costs leave the kernels'
units (so the units are restored), and responses are large or tiny."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import _prepare as P
from cartjit.engine.grow import grow_setup
from cartjit.engine.cv import fold_tree_arrays, make_folds
from cartjit.engine.fit import fit_fold, fit_tree
from cartjit.engine.presort import presort, subset_keys
from cartjit.engine.scaling import normalise


def _data(seed, classification, n=120):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 1)  # ties
    X[:, 3] = rng.integers(0, 5, size=n)     # a categorical feature (codes)
    score = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=n)
    if classification:
        y = np.digitize(score, np.quantile(score, [0.33, 0.66]))
    else:
        y = np.round(score, 2)
    return X, y


CASES = [
    # (classification, missing values, weights, extra parameters, response factor)
    (True, False, None, {}, 1.0),
    (True, True, None, {}, 1.0),
    (True, False, "int", {"cost": [[0, 1, 3], [2, 0, 1], [1e5, 4, 0]]}, 1.0),
    (True, True, "big", {"criterion": "entropy", "priors": "equal"}, 1.0),
    (True, False, "same", {"categorical_features": [3], "min_samples_leaf": 3}, 1.0),
    (True, True, None, {"categorical_features": [3], "max_surrogate": 2,
                        "use_surrogate": 1}, 1.0),
    (False, False, None, {}, 1.0),
    (False, True, "big", {}, 1e12),
    (False, False, "int", {"categorical_features": [3]}, 1e-9),
    (False, True, None, {"max_surrogate": 0, "use_surrogate": 0}, 1.0),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("seed", [0, 1])
def test_fit_fold_matches_the_full_fold_tree(case, seed):
    classification, holes, weights, params, factor = CASES[case]
    X, y = _data(seed, classification)
    rng = np.random.default_rng(100 + seed)
    if holes:
        X[rng.random(X.shape) < 0.08] = np.nan
    y = y if classification else y * factor
    w = {None: None, "int": rng.integers(1, 4, size=X.shape[0]).astype(float),
         "big": rng.uniform(1e6, 1e9, size=X.shape[0]),
         "same": np.full(X.shape[0], 3.0)}[weights]
    est = P.CVParams(classification, **params)
    prep = P.prepare(est, X, y, w)
    problem, settings = prep.problem, prep.settings._replace(max_competitor=0)
    plan = make_folds(5, problem.X.shape[0], random_state=seed)
    keys = presort(problem.X, problem.n_levels, 1)
    norm_problem, norm_settings, scale = normalise(problem, settings)
    setup = grow_setup(norm_problem, norm_settings, keys.n_levels)
    for v, own_setup in zip(range(plan.n_folds), [False, True] * plan.n_folds):
        train = plan.folds[0] != v
        full = fit_tree(problem, settings, subset_keys(keys, train, 1), 1)
        lean = fit_fold(norm_problem, norm_settings, scale, subset_keys(keys, train, 1),
                        None if own_setup else setup)
        want = fold_tree_arrays(full.tree, settings.use_surrogate,
                                None if classification else full.tree.value)
        got = lean.tree
        for name in ("feature", "threshold", "left", "alpha", "label"):
            a, b = getattr(want, name), getattr(got, name)
            assert a.dtype == b.dtype and a.flags.c_contiguous and b.flags.c_contiguous
            np.testing.assert_array_equal(a, b, err_msg=name)
        if not classification:
            np.testing.assert_array_equal(want.value, got.value)
        for name in want.routing._fields:
            a, b = getattr(want.routing, name), getattr(got.routing, name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and a.shape == b.shape and b.flags.c_contiguous
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                assert a == b, name
        for a, b in zip(full.path, lean.path):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
