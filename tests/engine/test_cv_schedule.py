"""The cross-validation's schedule changes no number: fold trees scored in the pool that
grows them (threads) against one thread, and against scoring every fold tree after the
fits (``score_fold_trees``), bit for bit, on data large enough for the pool."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import CARTClassifierCV, CARTRegressorCV
from cartjit.engine.cv import FOLD_THREADS_MIN_VALUES, grow_cv_trees, make_folds, score_fold_trees
from cartjit._prepare import cross_validate_params
from cartjit.engine.presort import presort


def _data(regression, seed=0, n=1500, p=12):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)), 1)  # ties
    if regression:
        y = X[:, 0] ** 2 - X[:, 1] + rng.normal(size=n)
    else:
        y = np.argmax(X[:, :3] + rng.normal(size=(n, 3)), axis=1)
    w = rng.integers(1, 4, n).astype(np.float64)
    assert X.size >= FOLD_THREADS_MIN_VALUES
    return X, y, w


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("weights", [False, True])
def test_scores_equal_on_threads_and_after_the_fits(regression, weights):
    X, y, w = _data(regression, seed=int(regression) + 2 * int(weights))
    est = (CARTRegressorCV if regression else CARTClassifierCV)(cv=4, n_repeats=2,
                                                                random_state=5)
    sw = w if weights else None
    one = cross_validate_params(est, X, y, sw, n_threads=1)[1]
    two = cross_validate_params(est, X, y, sw, n_threads=2)[1]
    np.testing.assert_array_equal(one.cv_risk, two.cv_risk)
    np.testing.assert_array_equal(one.cv_se, two.cv_se)
    assert one.table.equals(two.table)
    # every fold tree scored after the fits (the schedule of rpart's rules)
    prep = cross_validate_params(est, X, y, sw, n_threads=2)[0]
    problem, settings = prep.problem, prep.settings
    plan = make_folds(4, problem.X.shape[0], n_repeats=2, random_state=5)
    np.testing.assert_array_equal(plan.folds, one.folds)
    keys = presort(problem.X, problem.n_levels, 1)
    full, folds, scores = grow_cv_trees(problem, settings, keys, plan, 2, lean=True)
    assert scores is None
    after = score_fold_trees(problem, settings, [f.tree for f in folds], plan, full.path[0],
                             priors=full.priors, class_totals=full.class_totals,
                             n_threads=2)
    np.testing.assert_array_equal(after[0], one.cv_risk)
    np.testing.assert_array_equal(after[1], one.cv_se)
