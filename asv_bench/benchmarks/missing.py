"""Missing values: fit with surrogate splits, and predict through them.

Data: :func:`mixed_data.make_mixed` kinds ``a`` (2 classes) and ``b`` (regression), 10
numeric and 5 categorical features of 20 levels, with ``MISSING`` of the cells of
every feature set missing (a seeded mask: ``mixed_data.with_holes``). Fits grow with
rpart's defaults but ``cp = 0`` (``min_samples_split=20, min_samples_leaf=7,
max_depth=30``), 5 surrogates and 4 competitors, at n = 10^4 (and 10^5 with
``CARTJIT_ASV_LARGE=1``). ``FitComplete`` times the same fit on the rows without holes
with ``max_surrogate`` 0 and 5: what surrogates cost where nothing is missing.
``PredictMissing`` predicts ``PREDICT_ROWS`` new rows with holes by the tree of the
largest fit size.
"""
from __future__ import annotations

import functools
import os
import sys

from . import configure_timing, large, max_n, warm_jit

_ASV_BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ASV_BENCH not in sys.path:
    sys.path.insert(0, _ASV_BENCH)

from mixed_data import make_mixed, with_holes  # noqa: E402

KINDS = ("a", "b")
MISSING = 0.1
FIT_SIZES = (10_000, 100_000)
PREDICT_ROWS = 1_000_000 if large() else 200_000


def fit_sizes():
    """10^4 (+ 10^5 when large), none above CARTJIT_ASV_MAX_N."""
    candidates = FIT_SIZES if large() else FIT_SIZES[:1]
    cap = max_n()
    kept = [n for n in candidates if cap is None or n <= cap]
    return kept or [min(candidates)]


@functools.lru_cache(maxsize=4)
def draw(kind, n, random_state=0, holes=True):
    """(task, frame, y) of ``make_mixed``, with holes unless ``holes`` is False."""
    data = make_mixed(kind, n, random_state=random_state)
    frame = with_holes(data.frame, MISSING, seed=7 + random_state) if holes else data.frame
    return data.task, frame, data.y


def estimator(task, max_surrogate=5):
    from cartjit import CARTClassifier, CARTRegressor

    cls = CARTClassifier if task == "classification" else CARTRegressor
    return cls(min_samples_split=20, min_samples_leaf=7, max_depth=30,
               max_surrogate=max_surrogate, max_competitor=4)


@functools.lru_cache(maxsize=None)
def warm_missing():
    """Fit and predict a 300-row tree of each kind with holes (compiles the kernels)."""
    warm_jit()
    for kind in KINDS:
        task, frame, y = draw(kind, 300, random_state=12345)
        estimator(task).fit(frame, y).predict(frame)
        estimator(task).fit(draw(kind, 300, 12345, False)[1], y)
    return True


class FitMissing:
    """``fit`` with holes, 5 surrogates."""

    params = [list(KINDS), fit_sizes()]
    param_names = ["kind", "n"]
    timeout = 1800.0
    rounds = 1

    def setup(self, kind, n):
        configure_timing(self, n)
        self.task, self.frame, self.y = draw(kind, n)
        warm_missing()

    def time_fit(self, kind, n):
        estimator(self.task).fit(self.frame, self.y)


class FitComplete:
    """``fit`` without holes, with ``max_surrogate`` 0 or 5."""

    params = [list(KINDS), fit_sizes(), [0, 5]]
    param_names = ["kind", "n", "max_surrogate"]
    timeout = 1800.0
    rounds = 1

    def setup(self, kind, n, max_surrogate):
        configure_timing(self, n)
        self.task, self.frame, self.y = draw(kind, n, holes=False)
        warm_missing()

    def time_fit(self, kind, n, max_surrogate):
        estimator(self.task, max_surrogate).fit(self.frame, self.y)


class PredictMissing:
    """``predict`` of ``PREDICT_ROWS`` new rows with holes."""

    params = [list(KINDS)]
    param_names = ["kind"]
    timeout = 600.0
    warmup_time = 0.0

    def setup_cache(self):
        warm_missing()
        n = max(fit_sizes())
        models = {}
        for kind in KINDS:
            task, frame, y = draw(kind, n)
            models[kind] = estimator(task).fit(frame, y)
        return models

    setup_cache.timeout = 1800.0

    def setup(self, models, kind):
        warm_missing()
        self.frame = draw(kind, PREDICT_ROWS, random_state=1)[1]

    def time_predict(self, models, kind):
        models[kind].predict(self.frame)
