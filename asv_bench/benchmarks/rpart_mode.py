"""Cross-validated pruning in rpart mode and in the exact mode, on one fold vector.

``CARTClassifierCV(cv=folds, compat=..., max_competitor=0)`` (with ``cp=0`` in rpart
mode) on the seeded classification data of :func:`benchmarks.dataset` (20 features, 3
classes), V = 10 folds given as one fold vector (ids 1..10, a seeded permutation), at
n = 10^4 and 10^5 (the sizes of :func:`benchmarks.sizes`). rpart mode should cost no more
than the exact mode; ``track_`` benchmarks report the length of the CP table
(``cptable_``) and the least ``xerror``, so that a change of the sequence shows next to
the time. Versions of cartjit without ``compat`` skip these benchmarks.
"""
from __future__ import annotations

import functools

import numpy as np

from . import configure_timing, dataset, sizes, warm_jit

V = 10
FOLD_SEED = 1
MODES = ("breiman", "rpart")


def fold_vector(n, seed=FOLD_SEED):
    """Fold ids 1..V: a seeded random permutation of ``arange(n) % V`` (+1)."""
    return np.random.default_rng(seed).permutation(np.arange(n) % V) + 1


def estimator(compat, folds):
    from cartjit import CARTClassifierCV

    if "compat" not in CARTClassifierCV().get_params():
        raise NotImplementedError("this cartjit has no compat parameter")
    extra = {"cp": 0} if compat == "rpart" else {}
    return CARTClassifierCV(cv=folds, compat=compat, selection="min", max_competitor=0,
                            **extra)


@functools.lru_cache(maxsize=None)
def warm_rpart_mode():
    """Fit both modes on 300 rows once per process (compiles or loads the kernels)."""
    warm_jit()
    X, y = dataset("classification", 300)
    for compat in MODES:
        estimator(compat, fold_vector(300)).fit(X, y)
    return True


@functools.lru_cache(maxsize=4)
def fitted(compat, n):
    """The fitted estimator of one mode and size (for the ``track_`` benchmarks)."""
    X, y = dataset("classification", n)
    return estimator(compat, fold_vector(n)).fit(X, y)


class RpartModeCV:
    """``fit`` of ``CARTClassifierCV`` with V = 10 given folds, per mode."""

    params = [list(MODES), sizes((10_000, 100_000))]
    param_names = ["compat", "n"]
    timeout = 1800.0

    def setup(self, compat, n):
        configure_timing(self, n)
        self.X, self.y = dataset("classification", n)
        self.folds = fold_vector(n)
        estimator(compat, self.folds)          # NotImplementedError: skipped
        warm_rpart_mode()

    def time_fit(self, compat, n):
        estimator(compat, self.folds).fit(self.X, self.y)

    def track_cptable_rows(self, compat, n):
        return len(fitted(compat, n).cptable_)

    track_cptable_rows.unit = "rows"

    def track_min_xerror(self, compat, n):
        return float(fitted(compat, n).cptable_["xerror"].min())

    track_min_xerror.unit = "relative risk"
