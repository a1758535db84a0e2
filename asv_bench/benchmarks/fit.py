"""Growing T_max: fit time, and the size and quality of the tree grown.

Data: :func:`cartjit.datasets.make_classification` (3 classes) and
:func:`cartjit.datasets.make_regression`, 20 features, seed 0: the first n rows, n in
{10^4, 10^5} (and 10^6 with ``CARTJIT_ASV_LARGE=1``), of a draw of n + 50 000 rows
whose last rows are held out.
Estimators with their defaults: ``CARTClassifier(criterion="gini")`` and
``CARTRegressor()`` grow to purity (no depth limit, min_samples_leaf=1, no pruning).

The fit time covers the whole of ``fit`` (validation, presort, growth, risks and the
weakest-link sequence) with the JIT warmed in ``setup``. Fits of 10^6 rows are timed
once per run (see :func:`benchmarks.configure_timing`). Kernels run on Numba's
default number of threads (all cores) unless ``NUMBA_NUM_THREADS`` is set.
"""
from __future__ import annotations

from . import (N_HOLDOUT, TASKS, configure_timing, dataset, estimator, sizes, split,
               warm_jit)


class _FitTime:
    task = None
    params = [sizes()]
    param_names = ["n"]
    timeout = 1800.0
    rounds = 1

    def setup(self, n):
        configure_timing(self, n)
        self.X, self.y = dataset(self.task, n)
        warm_jit()

    def time_fit(self, n):
        estimator(self.task).fit(self.X, self.y)


class FitClassifier(_FitTime):
    """``CARTClassifier(criterion="gini").fit`` on 3 classes × 20 features."""

    task = "classification"


class FitRegressor(_FitTime):
    """``CARTRegressor().fit`` on 20 features."""

    task = "regression"


class TreeQuality:
    """Size, depth and hold-out score of T_max: quality regressions next to speed.

    All trees are grown once, in ``setup_cache``; the ``track_`` benchmarks read them.
    The trees are those timed by :class:`FitClassifier` / :class:`FitRegressor` (same
    rows). The score is accuracy (classification) or R^2 (regression) on the 50 000
    held-out rows of the same draw. A tree grown to purity overfits, so the score is
    a fingerprint of the algorithm (split choice, ties) more than a quality target.
    """

    params = [list(TASKS), sizes()]
    param_names = ["task", "n"]
    timeout = 600.0

    def setup_cache(self):
        warm_jit()
        out = {}
        for task in TASKS:
            for n in sizes():
                X, y, X_test, y_test = split(task, n, N_HOLDOUT)
                est = estimator(task).fit(X, y)
                out[task, n] = {
                    "n_leaves": int(est.tree_.n_leaves),
                    "depth": int(est.tree_.max_depth),
                    "score": float(est.score(X_test, y_test)),
                }
                del X, y, X_test, y_test, est
                split.cache_clear()
        return out

    setup_cache.timeout = 7200.0

    def track_n_leaves(self, cache, task, n):
        return cache[task, n]["n_leaves"]

    track_n_leaves.unit = "leaves"

    def track_depth(self, cache, task, n):
        return cache[task, n]["depth"]

    track_depth.unit = "levels"

    def track_holdout_score(self, cache, task, n):
        return cache[task, n]["score"]

    track_holdout_score.unit = "accuracy or R^2"
