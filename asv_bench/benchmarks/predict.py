"""Batch prediction: fresh rows through a tree grown to purity on 10^5 rows.

2 × 10^5 rows are predicted by default, 10^6 with ``CARTJIT_ASV_LARGE=1``. One seeded
draw (seed 0) of 10^5 + that many rows: the tree is grown on the first 10^5, once
per benchmark class in ``setup_cache`` (asv passes it pickled to the benchmarks), and
the other rows are predicted; the draw is repeated in ``setup``. The tree has
about 13 000 leaves (classification) or 100 000 (regression: every training case is
its own leaf), so the timing is dominated by the descent, not by the bookkeeping
around it. Prediction runs on Numba's default number of threads.
"""
from __future__ import annotations

from . import estimator, large, split, warm_jit

N_TRAIN = 100_000
N_PREDICT = 1_000_000 if large() else 200_000


def _fit(task):
    warm_jit()
    X, y, _, _ = split(task, N_TRAIN, N_PREDICT)
    model = estimator(task).fit(X, y)
    split.cache_clear()
    return model


class _Predict:
    task = None
    timeout = 600.0
    warmup_time = 0.0

    def setup(self, model):
        warm_jit()
        _, _, self.X, _ = split(self.task, N_TRAIN, N_PREDICT)


class PredictClassifier(_Predict):
    """``CARTClassifier`` (Gini, 3 classes) grown on 10^5 rows, ``N_PREDICT`` rows to predict."""

    task = "classification"

    def setup_cache(self):
        return _fit("classification")

    setup_cache.timeout = 600.0

    def time_predict(self, model):
        model.predict(self.X)

    def time_predict_proba(self, model):
        model.predict_proba(self.X)

    def time_apply(self, model):
        model.apply(self.X)


class PredictRegressor(_Predict):
    """``CARTRegressor`` grown on 10^5 rows, ``N_PREDICT`` rows to predict."""

    task = "regression"

    def setup_cache(self):
        return _fit("regression")

    setup_cache.timeout = 600.0

    def time_predict(self, model):
        model.predict(self.X)
