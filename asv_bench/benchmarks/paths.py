"""Fit time off the default path: other criteria, priors, case weights, leaf sizes.

``FitClassifier`` (in :mod:`benchmarks.fit`) times the default classification fit
(Gini, unit weights, empirical priors, ``min_samples_leaf=1``). Each setting here
changes one of those, on the same rows (3 classes × 20 features, seed 0, grown to
purity), so a path that falls behind the default shows up next to it:

``entropy``       ``criterion="entropy"``
``twoing``        ``criterion="twoing"``
``priors_equal``  ``priors="equal"`` (every class's factor π(j)/N_j differs from 1)
``min_leaf_5``    ``min_samples_leaf=5``
``weights``       case weights drawn from {1, 2, 3} (seed 1): integer weights, the
                  exact-sum path
``tied``          X rounded to 2 decimals: many tied values per feature (the runs of
                  equal x)

``asv_bench/peers.py`` compares the same settings with scikit-learn's
(``--criterion``, ``--priors``, ``--min-samples-leaf``).
"""
from __future__ import annotations

import numpy as np

from . import configure_timing, dataset, sizes, warm_jit

SETTINGS = ("entropy", "twoing", "priors_equal", "min_leaf_5", "weights", "tied")


def _setting(name, X, y):
    """``(estimator keyword arguments, X, fit keyword arguments)`` of a setting."""
    if name == "entropy":
        return {"criterion": "entropy"}, X, {}
    if name == "twoing":
        return {"criterion": "twoing"}, X, {}
    if name == "priors_equal":
        return {"priors": "equal"}, X, {}
    if name == "min_leaf_5":
        return {"min_samples_leaf": 5}, X, {}
    if name == "weights":
        w = np.random.default_rng(1).integers(1, 4, X.shape[0]).astype(np.float64)
        return {}, X, {"sample_weight": w}
    if name == "tied":
        return {}, np.ascontiguousarray(np.round(X, 2)), {}
    raise ValueError(f"setting must be one of {SETTINGS!r}, got {name!r}")


class FitPaths:
    """``CARTClassifier(**setting).fit`` on 3 classes × 20 features, grown to purity."""

    params = [list(SETTINGS), sizes()]
    param_names = ["setting", "n"]
    timeout = 1800.0

    def setup(self, setting, n):
        from cartjit import CARTClassifier

        configure_timing(self, n)
        X, y = dataset("classification", n)
        kwargs, self.X, self.fit_kwargs = _setting(setting, X, y)
        self.y = y
        self.make = lambda: CARTClassifier(**kwargs)
        warm_jit()
        # the setting's own kernels (another criterion compiles other code)
        self.make().fit(self.X[:300], self.y[:300],
                        **{k: v[:300] for k, v in self.fit_kwargs.items()})

    def time_fit(self, setting, n):
        self.make().fit(self.X, self.y, **self.fit_kwargs)
