"""Small data, where the Python between the kernels is most of the time.

* ``SmallFit``: ``CARTClassifier().fit`` on Fisher's iris (150 cases, 4 features), next
  to scikit-learn's ``DecisionTreeClassifier().fit`` on the same data when it is
  installed (the reference the fit time is compared with);
* ``SmallCV``: ``CARTClassifierCV`` on iris with leave-one-out (``cv=150``: 150 fold
  trees) and with V = 10 repeated 10 times;
* ``CVTime``: ``CARTClassifierCV(cv=10)`` on the classification data of ``fit.py``
  (n in {10^4, 10^5}), the fold trees grown from the presorted sample.

The JIT is warmed in ``setup``; every time covers the whole ``fit`` (validation,
presort, growth, the fold trees, scoring and the ``cv_results_`` table).
"""
from __future__ import annotations

from . import configure_timing, dataset, sizes, warm_jit


def _iris():
    from cartjit.datasets import load_iris

    return load_iris(return_X_y=True)


class SmallFit:
    """``fit`` on iris: cartjit and, when installed, scikit-learn."""

    number = 20
    repeat = (5, 20, 20.0)

    def setup(self):
        self.X, self.y = _iris()
        warm_jit()

    def time_fit_iris(self):
        from cartjit import CARTClassifier

        CARTClassifier().fit(self.X, self.y)

    def time_fit_iris_sklearn(self):
        try:
            from sklearn.tree import DecisionTreeClassifier
        except ImportError:  # pragma: no cover - the reference is optional
            raise NotImplementedError("scikit-learn is not installed") from None
        DecisionTreeClassifier().fit(self.X, self.y)


class SmallCV:
    """``CARTClassifierCV.fit`` on iris: leave-one-out and repeated 10-fold CV."""

    repeat = (3, 10, 30.0)

    def setup(self):
        self.X, self.y = _iris()
        warm_jit()

    def time_leave_one_out_iris(self):
        from cartjit import CARTClassifierCV

        CARTClassifierCV(cv=150).fit(self.X, self.y)

    def time_cv10_repeated_iris(self):
        from cartjit import CARTClassifierCV

        CARTClassifierCV(cv=10, n_repeats=10).fit(self.X, self.y)

    def track_loo_n_leaves(self):
        from cartjit import CARTClassifierCV

        return int(CARTClassifierCV(cv=150).fit(self.X, self.y).get_n_leaves())


class CVTime:
    """``CARTClassifierCV(cv=10).fit`` on 3 classes × 20 features."""

    params = [[n for n in sizes() if n <= 100_000]]
    param_names = ["n"]
    timeout = 1800.0

    def setup(self, n):
        configure_timing(self, n)
        self.X, self.y = dataset("classification", n)
        warm_jit()

    def time_cv10(self, n):
        from cartjit import CARTClassifierCV

        CARTClassifierCV(cv=10, random_state=0).fit(self.X, self.y)
