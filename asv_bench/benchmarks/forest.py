"""Random forests: fit and prediction, and the flat forest's bytes per node.

``N_TRAIN`` = 2 × 10^4 rows (10^5 with ``CARTJIT_ASV_LARGE=1``) of the benchmark data,
``N_TREES`` = 50 trees, m = 4 of the 20 features drawn per node, grown to purity, on
Numba's and the forest's default threads; ``N_PREDICT`` = 10^5 fresh rows of the same
draw predicted (10^6 with ``CARTJIT_ASV_LARGE=1``). The comparison with scikit-learn,
ranger and YDF at the issue's scale is ``asv_bench/peers_forest.py``
(docs/benchmarks.md, "Forests").
"""
from __future__ import annotations

from . import large, split, warm_jit

N_TRAIN = 100_000 if large() else 20_000
N_PREDICT = 1_000_000 if large() else 100_000
N_TREES = 50
M = 4


def _forest(task):
    import cartjit
    Est = (cartjit.RandomForestClassifier if task == "classification"
           else cartjit.RandomForestRegressor)
    return Est(N_TREES, max_features=M, random_state=0, n_jobs=2)


def _fitted(task):
    warm_jit()
    X, y, _, _ = split(task, N_TRAIN, N_PREDICT)
    model = _forest(task).fit(X, y)
    model.predict(X[:10])  # the prediction kernels compiled or loaded here
    split.cache_clear()
    return model


class _ForestBench:
    task = None
    timeout = 1200.0
    warmup_time = 0.0
    number = 1
    repeat = 3

    def setup(self, model):
        warm_jit()
        self.Xtr, self.ytr, self.X, _ = split(self.task, N_TRAIN, N_PREDICT)

    def time_fit(self, model):
        _forest(self.task).fit(self.Xtr, self.ytr)

    def time_predict(self, model):
        model.predict(self.X)

    def track_bytes_per_node(self, model):
        """The flat forest's arrays (routing table included) per node."""
        fo = model.forest_
        return fo.nbytes / fo.n_nodes

    track_bytes_per_node.unit = "bytes"


class ForestClassifier(_ForestBench):
    """``RandomForestClassifier`` (3 classes)."""

    task = "classification"

    def setup_cache(self):
        return _fitted("classification")

    setup_cache.timeout = 1200.0


class ForestRegressor(_ForestBench):
    """``RandomForestRegressor``."""

    task = "regression"

    def setup_cache(self):
        return _fitted("regression")

    setup_cache.timeout = 1200.0
