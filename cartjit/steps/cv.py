"""The V-fold cross-validation (docs/maths.md §5), one table per α'_k."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._common import _fitted, _table

__all__ = ["CVSteps", "cv_steps"]


class CVSteps:
    """The numbers behind ``cv_results_`` (:func:`cv_steps`): two or three tables.

    Parameters
    ----------
    counts, risk : StepTable
        The tables described below.
    folds : StepTable, optional
        The per-fold table (``by_fold=True``).

    Attributes
    ----------
    counts : StepTable
        Classification: the N_ij tables, indexed by (k, [fold,] true class j), one
        column per predicted class i holding N_ij(k), the weighted count of held-out
        class-j cases that T^(v)(α'_k) labels i, and ``N_j`` (their row sum).
        Regression: per (k, [fold]) the number of held-out cases ``n``, their weight
        ``weight``, the weighted sum of squared errors ``sse`` and its mean ``mse``.
    risk : StepTable
        One row per k: ``alpha_prime``, ``n_leaves``, for classification ``R_cv[c]``
        (R^CV(j) = Σ_i C(i|j) N_ij(k) / N_j, the class's cross-validated error rate or
        cost), then ``cv_risk`` (R^CV) and ``cv_se`` (its SE), as in ``cv_results_``.
    """

    def __init__(self, counts, risk, folds=None):
        self.counts = counts
        self.risk = risk
        self.folds = folds

    def _tables(self):
        return [t for t in (self.risk, self.folds, self.counts) if t is not None]

    def __repr__(self):
        return "\n\n".join(repr(t) for t in self._tables())

    __str__ = __repr__

    def _repr_html_(self):
        return "".join(t._repr_html_() for t in self._tables())


def cv_steps(estimator, y, *, sample_weight=None, by_fold=False):
    """The cross-validation of a fitted CV estimator, step by step (docs/maths.md §5).

    For every T_k of the table, each held-out case of fold v is dropped down the fold
    tree pruned at α'_k, T^(v)(α'_k); over all folds, N_ij(k) is the weighted count of
    class-j cases labelled i, and

        R^CV(j) = Σ_i C(i|j) N_ij(k) / N_j,   R^CV(T_k) = Σ_j π(j) R^CV(j),

    with N_j the full sample's class totals; SE = √(Σ w l² - (Σ w l)² / W) / W over the
    per-case losses l = π(j) W / N_j · C(i|j). For regression, l is the squared
    held-out error and R^CV their weighted mean. These reproduce ``cv_risk`` and
    ``cv_se`` of ``cv_results_``.

    Parameters
    ----------
    estimator : CARTClassifierCV or CARTRegressorCV fitted with ``cv_predictions=True``
        (or ``"proba"``), which keeps every case's held-out prediction, and
        ``compat="breiman"`` (rpart's rules score at other points with another loss,
        docs/maths.md §9).
    y : array-like of shape (n_samples,)
        The targets of the fit (the same rows).
    sample_weight : array-like of shape (n_samples,), optional
        The case weights of the fit.
    by_fold : bool, default False
        Also split the tables by fold: ``counts`` is then indexed by (k, fold, j) (or
        (k, fold)), and ``folds`` gives each fold's share of R^CV.

    Returns
    -------
    CVSteps
        ``risk``, ``folds`` and ``counts``, printed one above the other.
    """
    caller = "cv_steps"
    _fitted(estimator, caller)
    if not hasattr(estimator, "folds_"):
        raise TypeError(f"{caller} needs a fitted CARTClassifierCV or CARTRegressorCV, "
                        f"got {type(estimator).__name__}")
    if getattr(estimator, "compat", "breiman") == "rpart":
        raise ValueError(f"{caller} shows the cross-validation of docs/maths.md §5; with "
                         "compat='rpart' the points and the loss are rpart's (§9)")
    pred = getattr(estimator, "cv_predictions_", None)
    if pred is None:
        raise ValueError(f"{caller} needs the held-out predictions: fit the estimator "
                         "with cv_predictions=True")
    if not isinstance(by_fold, (bool, np.bool_)):
        raise TypeError(f"by_fold must be True or False, got {by_fold!r}")
    folds = estimator.folds_[0]
    n = folds.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{caller}: y must be the fit's targets, one per row ({n}), got "
                         f"shape {y.shape}")
    if sample_weight is None:
        w = np.ones(n)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"{caller}: sample_weight must have one weight per row ({n}), "
                             f"got shape {w.shape}")
    part = folds >= 0
    table = estimator.cv_results_
    ks = table["k"].to_numpy()
    w_p, f_p, pred_p = w[part], folds[part], pred[part]
    W = w_p.sum()
    fold_ids = np.unique(f_p)
    if estimator._is_classifier:
        lookup = {c: i for i, c in enumerate(estimator.classes_.tolist())}
        try:
            yc = np.array([lookup[v] for v in y[part].tolist()], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"{caller}: y holds a label that is not a class of the fit: "
                             f"{exc.args[0]!r}") from None
        J = estimator.n_classes_
        totals = np.bincount(yc, weights=w_p, minlength=J)
        if not np.allclose(totals, estimator.class_weight_totals_, rtol=1e-12, atol=0):
            raise ValueError(f"{caller}: y and sample_weight must be those of the fit "
                             "(their class totals differ from the fit's)")
        priors, cost = estimator.priors_, estimator.cost_
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(totals > 0, priors * W / totals, 0.0)
    else:
        yr = np.asarray(y[part], dtype=np.float64)
        if not math.isclose(W, float(estimator.tree_max_.weighted_n_node_samples[0]),
                            rel_tol=1e-12):
            raise ValueError(f"{caller}: sample_weight must be that of the fit")
    count_rows, count_index, risk_rows, risk_index = [], [], [], []
    fold_rows, fold_index = [], []
    for col, k in enumerate(ks):
        p = pred_p[:, col]
        if estimator._is_classifier:
            loss = scale[yc] * cost[yc, p]
        else:
            loss = (yr - p) ** 2
        s1 = (w_p * loss).sum()
        s2 = (w_p * loss * loss).sum()
        row = {"alpha_prime": table["alpha_prime"].iloc[col],
               "n_leaves": int(table["n_leaves"].iloc[col])}
        groups = [(None, np.ones(p.shape[0], dtype=bool))]
        if by_fold:
            groups = [(int(v), f_p == v) for v in fold_ids]
        if estimator._is_classifier:
            N = np.zeros((J, J))
            np.add.at(N, (yc, p), w_p)
            with np.errstate(divide="ignore", invalid="ignore"):
                by_class = np.where(totals > 0, (N * cost).sum(axis=1) / totals, np.nan)
            for j, c in enumerate(estimator.classes_):
                row[f"R_cv[{c}]"] = by_class[j]
            for v, m in groups:
                Nv = np.zeros((J, J))
                np.add.at(Nv, (yc[m], p[m]), w_p[m])
                for j, c in enumerate(estimator.classes_):
                    count_rows.append(list(Nv[j]) + [Nv[j].sum()])
                    count_index.append((k, c) if v is None else (k, v, c))
        else:
            for v, m in groups:
                sse = (w_p[m] * loss[m]).sum()
                count_rows.append([int(m.sum()), w_p[m].sum(), sse, sse / w_p[m].sum()])
                count_index.append(k if v is None else (k, v))
        row["cv_risk"] = s1 / W
        row["cv_se"] = math.sqrt(max(s2 - s1 * s1 / W, 0.0)) / W
        risk_rows.append(row)
        risk_index.append(k)
        if by_fold:
            for v, m in groups:
                fold_rows.append({"alpha_prime": row["alpha_prime"],
                                  "n_leaves": row["n_leaves"], "n": int(m.sum()),
                                  "contribution": (w_p[m] * loss[m]).sum() / W,
                                  "fold_risk": (w_p[m] * loss[m]).sum() / w_p[m].sum()})
                fold_index.append((k, v))
    if estimator._is_classifier:
        names = ["k", "true"] if not by_fold else ["k", "fold", "true"]
        counts = pd.DataFrame(count_rows, columns=[str(c) for c in estimator.classes_]
                              + ["N_j"], index=pd.MultiIndex.from_tuples(count_index,
                                                                         names=names))
        if np.all(w == 1.0):
            counts = counts.round().astype(np.int64)
        what = ("N_ij(k): held-out cases of true class j (rows) labelled i (columns) by "
                "their fold's tree at α'_k")
    else:
        index = (pd.Index(count_index, name="k") if not by_fold
                 else pd.MultiIndex.from_tuples(count_index, names=["k", "fold"]))
        counts = pd.DataFrame(count_rows, columns=["n", "weight", "sse", "mse"],
                              index=index)
        what = "held-out squared errors of each T_k's fold trees at α'_k"
    risk = pd.DataFrame(risk_rows, index=pd.Index(risk_index, name="k"))
    per_fold = None
    if by_fold:
        per_fold = _table(pd.DataFrame(fold_rows, index=pd.MultiIndex.from_tuples(
            fold_index, names=["k", "fold"])),
            "each fold's share of R^CV (contribution: Σ w l / W over its held-out cases, "
            "adding up to R^CV) and its own mean loss (fold_risk)")
    return CVSteps(_table(counts, what + (", by fold" if by_fold else "")),
                   _table(risk, "R^CV(T_k) and its SE (docs/maths.md §5)"), per_fold)
