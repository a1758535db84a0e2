"""Categorical features: fit and predict with subset splits on mixed data.

Data: :func:`mixed_data.make_mixed` (``asv_bench/mixed_data.py``), 10 numeric and 5
unordered categorical features as a pandas DataFrame with ``category`` columns, seed 0:

``a``  20 levels, 2 classes (ordered scan of the levels by class-1 proportion);
``b``  20 levels, regression (ordered scan by mean response);
``c``  8 levels, 3 classes (every subset of the levels present searched).

Fits: n = 10^4 (and 10^5 with ``CARTJIT_ASV_LARGE=1``), ``CARTClassifier()`` /
``CARTRegressor()`` with their defaults (grown to purity, ``categorical_features=
"from_dtype"``), on the DataFrame: the time includes turning the categorical columns
into level codes. Predictions: ``PREDICT_ROWS`` new rows of the same problem (another
seed), as a DataFrame, by trees grown on the largest fit size. ``CategoricalTreeQuality``
tracks the size of those trees, their number of subset splits and their held-out score,
so that a change of split choice shows next to the speed. The JIT is warmed in
``setup`` on 300 rows of each kind (the subset-split kernels are not all reached by the
numeric warm-up of :func:`benchmarks.warm_jit`).
"""
from __future__ import annotations

import functools
import os
import sys

from . import configure_timing, large, max_n, warm_jit

# mixed_data.py sits beside this package; asv makes only the package itself importable.
_ASV_BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ASV_BENCH not in sys.path:
    sys.path.insert(0, _ASV_BENCH)

from mixed_data import KINDS, make_mixed  # noqa: E402

#: Fit sizes: 10^4 by default, 10^5 too with CARTJIT_ASV_LARGE=1 (CARTJIT_ASV_MAX_N caps).
FIT_SIZES = (10_000, 100_000)
#: Rows predicted: new rows of the same problem (random_state=1).
PREDICT_ROWS = 1_000_000 if large() else 200_000
#: Rows held out to score the trees of ``CategoricalTreeQuality``.
HOLDOUT_ROWS = 50_000


def fit_sizes():
    """The fit sizes of this run: 10^4 (+ 10^5 when large), none above CARTJIT_ASV_MAX_N."""
    candidates = FIT_SIZES if large() else FIT_SIZES[:1]
    cap = max_n()
    kept = [n for n in candidates if cap is None or n <= cap]
    return kept or [min(candidates)]


@functools.lru_cache(maxsize=2)
def draw(kind, n, random_state=0):
    """``make_mixed(kind, n, random_state=random_state)``, memoised per process."""
    return make_mixed(kind, n, random_state=random_state)


def estimator(task):
    """A fresh estimator with the defaults (grown to purity, categories from the dtype)."""
    from cartjit import CARTClassifier, CARTRegressor

    return CARTClassifier() if task == "classification" else CARTRegressor()


@functools.lru_cache(maxsize=None)
def warm_categorical():
    """Fit and predict a 300-row tree of every kind once per process (and the numeric
    warm-up), so that no timed call compiles. Returns the seconds it took."""
    import time

    start = time.perf_counter()
    warm_jit()
    for kind in KINDS:
        tiny = make_mixed(kind, 300, random_state=12345)
        model = estimator(tiny.task).fit(tiny.frame, tiny.y)
        model.predict(tiny.frame)
        if tiny.task == "classification":
            model.predict_proba(tiny.frame)
    return time.perf_counter() - start


def _grow_all():
    """The tree of every kind at the largest fit size: {kind: fitted estimator}."""
    warm_categorical()
    n = max(fit_sizes())
    models = {}
    for kind in KINDS:
        data = draw(kind, n)
        models[kind] = estimator(data.task).fit(data.frame, data.y)
    draw.cache_clear()
    return models


class FitCategorical:
    """``fit`` on the DataFrame of each kind: subset splits on the 5 categorical features."""

    params = [list(KINDS), fit_sizes()]
    param_names = ["kind", "n"]
    timeout = 1800.0
    rounds = 1

    def setup(self, kind, n):
        configure_timing(self, n)
        data = draw(kind, n)
        self.task, self.frame, self.y = data.task, data.frame, data.y
        warm_categorical()

    def time_fit(self, kind, n):
        estimator(self.task).fit(self.frame, self.y)


class PredictCategorical:
    """``predict`` / ``apply`` of ``PREDICT_ROWS`` new rows (a DataFrame) per kind."""

    params = [list(KINDS)]
    param_names = ["kind"]
    timeout = 600.0
    warmup_time = 0.0

    def setup_cache(self):
        return _grow_all()

    setup_cache.timeout = 1800.0

    def setup(self, models, kind):
        warm_categorical()
        self.frame = draw(kind, PREDICT_ROWS, random_state=1).frame

    def time_predict(self, models, kind):
        models[kind].predict(self.frame)

    def time_apply(self, models, kind):
        models[kind].apply(self.frame)


class PredictProbaCategorical:
    """``predict_proba`` of ``PREDICT_ROWS`` new rows by the classifiers (kinds a and c)."""

    params = [[k for k, (_, classes) in KINDS.items() if classes]]
    param_names = ["kind"]
    timeout = 600.0
    warmup_time = 0.0

    def setup_cache(self):
        return _grow_all()

    setup_cache.timeout = 1800.0

    def setup(self, models, kind):
        warm_categorical()
        self.frame = draw(kind, PREDICT_ROWS, random_state=1).frame

    def time_predict_proba(self, models, kind):
        models[kind].predict_proba(self.frame)


class CategoricalTreeQuality:
    """Leaves, depth, subset-split nodes and held-out score of the trees grown on mixed data.

    One tree per kind and fit size, grown once in ``setup_cache``; the score is accuracy
    (a, c) or R^2 (b) on ``HOLDOUT_ROWS`` new rows of the same problem (random_state=1).
    Grown to purity, so read the score as a fingerprint of the split choice.
    """

    params = [list(KINDS), fit_sizes()]
    param_names = ["kind", "n"]
    timeout = 600.0

    def setup_cache(self):
        warm_categorical()
        out = {}
        for kind in KINDS:
            test = make_mixed(kind, HOLDOUT_ROWS, random_state=1)
            for n in fit_sizes():
                data = draw(kind, n)
                model = estimator(data.task).fit(data.frame, data.y)
                tree = model.tree_
                out[kind, n] = {
                    "n_leaves": int(tree.n_leaves),
                    "depth": int(tree.max_depth),
                    "subset_splits": int((tree.level_row >= 0).sum()),
                    "score": float(model.score(test.frame, test.y)),
                }
                draw.cache_clear()
        return out

    setup_cache.timeout = 3600.0

    def track_n_leaves(self, cache, kind, n):
        return cache[kind, n]["n_leaves"]

    track_n_leaves.unit = "leaves"

    def track_depth(self, cache, kind, n):
        return cache[kind, n]["depth"]

    track_depth.unit = "levels"

    def track_subset_splits(self, cache, kind, n):
        return cache[kind, n]["subset_splits"]

    track_subset_splits.unit = "nodes"

    def track_holdout_score(self, cache, kind, n):
        return cache[kind, n]["score"]

    track_holdout_score.unit = "accuracy or R^2"
