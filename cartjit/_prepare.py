"""An estimator's parameters and data, checked, and its cross-validated fit: no scikit-learn.

The estimators (:mod:`cartjit.estimators`) derive from scikit-learn's base classes when
it is installed, and importing those costs about a second. Everything a fit does with
the parameters and the data lives here instead, as functions of any object carrying the
estimator's parameters as attributes (``est``: an estimator, or a :class:`CVParams`), so
that the experiment runner fits its cells through :func:`cross_validate_params` without
importing scikit-learn, by exactly the steps of ``CARTClassifierCV.fit``.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from .engine import cache as _cache, speed as _config
from . import _encoding as E
from . import _validation as V
from .engine.cv import CV_PREDICTIONS, cross_validate, select_index
from .engine.fit import Problem, Settings, check_compat

__all__ = ["AUTO_SURROGATES", "MAX_EXHAUSTIVE", "CVParams", "check_params", "prepare",
           "check_cv_params", "cross_validate_params", "drop_missing_targets",
           "kernel_levels", "refuse_per_label", "select_index", "CLASSIFIER_CRITERIA",
           "REGRESSOR_CRITERIA"]

#: The criterion names each kind of tree accepts (the ``criterion`` parameter).
CLASSIFIER_CRITERIA = V.CLASSIFIER_CRITERIA
REGRESSOR_CRITERIA = V.REGRESSOR_CRITERIA

#: The weights of a fit with unit weights: none are stored (saves n doubles).
_UNIT_WEIGHTS = np.empty(0, dtype=np.float64)

#: ``max_surrogate="auto"``: surrogate splits kept per node when the training X has a
#: missing value (rpart's default maxsurrogate); 0 otherwise.
AUTO_SURROGATES = 5


#: The most levels an exhaustive subset search may take: 2^19 subsets per node and
#: feature already cost about a second; beyond that a fit could run for hours.
MAX_EXHAUSTIVE = 20


def _check_cp(cp, ccp_alpha):
    """``cp`` checked (a finite number >= 0, or None); an error when ``ccp_alpha`` is given
    too (both set the pruning: α = cp · R(root))."""
    cp = V.check_float(cp, "cp", allow_none=True)
    if cp is not None and ccp_alpha is not None:
        raise ValueError(
            f"cp and ccp_alpha both set the pruning (alpha = cp * R(root)): give one of "
            f"them, not both (cp={cp!r}, ccp_alpha={ccp_alpha!r})")
    return cp


def _check_exhaustive(value):
    value = V.check_int(value, "max_categories_exhaustive", low=1)
    if value > MAX_EXHAUSTIVE:
        raise ValueError(
            f"max_categories_exhaustive must be at most {MAX_EXHAUSTIVE} (the exhaustive "
            f"search of L levels evaluates 2^(L-1) - 1 subsets at every node), got {value}")
    return value


class _Prepared(NamedTuple):
    """Checked parameters and data of one ``fit``."""

    problem: Problem
    settings: Settings
    ccp_alpha: float | None
    cp: float | None             # rpart's relative complexity (None: not given)
    names: np.ndarray | None     # feature names (DataFrame input)
    classes: np.ndarray | None   # labels of the classes that take part
    rows: np.ndarray | None      # mask of the rows with positive weight; None: every row
    labels: np.ndarray | None    # y of every row (classification), for CV splitters
    encoding: E.Encoding         # how each feature was encoded (categorical features)


def _fill_missing_labels(y, keep):
    """y over every row, a missing label replaced by the first present one: the labels a
    scikit-learn splitter sees (the rows without a target take no part in any fold)."""
    out = np.array(y, copy=True)
    out[~keep] = y[np.flatnonzero(keep)[0]]
    return out


def check_params(est):
    """The estimator's tree parameters, checked: a dict."""
    max_depth = V.check_int(est.max_depth, "max_depth", low=0, allow_none=True)
    return dict(
        criterion=V.check_criterion(est.criterion, est._is_classifier),
        # A depth beyond int64 is no limit; capping keeps it a valid kernel argument.
        max_depth=-1 if max_depth is None else min(max_depth, 2**62),
        min_samples_split=V.check_int(est.min_samples_split, "min_samples_split", low=2),
        min_samples_leaf=V.check_int(est.min_samples_leaf, "min_samples_leaf", low=1),
        min_impurity_decrease=V.check_float(est.min_impurity_decrease,
                                            "min_impurity_decrease"),
        max_leaf_nodes=V.check_int(est.max_leaf_nodes, "max_leaf_nodes", low=2,
                                   allow_none=True),
        ccp_alpha=V.check_float(est.ccp_alpha, "ccp_alpha", allow_none=True),
        cp=_check_cp(getattr(est, "cp", None), est.ccp_alpha),
        compat=check_compat(getattr(est, "compat", "breiman")),
        max_categories_exhaustive=_check_exhaustive(
            getattr(est, "max_categories_exhaustive", 12)),
        missing=V.check_missing_params(est.max_surrogate, est.use_surrogate,
                                       est.surrogate_style, est.max_competitor),
    )


def tree_settings(params, priors, cost, default_cost, max_surrogate):
    """The kernels' :class:`Settings` of the checked parameters (:func:`check_params`),
    the class tables of the fit (None for regression) and the resolved ``max_surrogate``
    (a number, not ``"auto"``). A model file rebuilds a fit's settings with it too."""
    _, use_surrogate, surrogate_style, max_competitor = params["missing"]
    return Settings(params["criterion"], params["max_depth"],
                    params["min_samples_split"], params["min_samples_leaf"],
                    params["min_impurity_decrease"], params["max_leaf_nodes"],
                    priors, cost, default_cost, params["max_categories_exhaustive"],
                    max_surrogate=max_surrogate, use_surrogate=use_surrogate,
                    surrogate_style=surrogate_style, max_competitor=max_competitor)


def prepare(est, X, y, sample_weight):
    """Check the parameters and the data; return a :class:`_Prepared`.

    The kind of fit (:mod:`cartjit.engine.cache`) is named once the data are checked; a
    checking kernel that compiles before that is announced under it.
    """
    _config.check_settings()  # a CARTJIT_* variable that could not be read
    _cache.doing(None)
    try:
        return _checked(est, X, y, sample_weight)
    except BaseException:
        _cache.doing("the kernels")
        raise


def _checked(est, X, y, sample_weight):
    params = check_params(est)
    X, names, encoding = E.fit_encode(X, est.categorical_features)
    n_rows = X.shape[0]
    y_dtype = getattr(y, "dtype", None)
    y, y_missing = V.missing_targets(y, n_rows)
    y_all = y
    if sample_weight is None:
        w, ones = _UNIT_WEIGHTS, True
    else:
        w, ones = V.check_sample_weight(sample_weight, n_rows)
        if ones:  # unit weights are not stored: the kernels take 1 for every case
            w = _UNIT_WEIGHTS
    keep = None  # the rows with a target; None: every row
    if y_missing.any():
        keep = drop_missing_targets(y_missing, n_rows)
        X, y = np.ascontiguousarray(X[keep]), V.present_targets(y[keep], y_dtype)
        if not ones:
            w = w[keep]
            if not np.any(w > 0):
                raise ValueError(
                    "sample_weight is 0 on every row with a target: no case is left "
                    "to fit")
    y_given = y
    if est._is_classifier:
        labels, y_enc = V.check_y_class(y, X.shape[0])
        classes = labels
    else:
        labels = classes = None
        y_enc = V.check_y_reg(y, X.shape[0])
    rows = None
    X_all = X
    if not ones and np.any(w == 0):
        rows = w > 0  # zero-weight cases take no part in the fit
        X, y_enc, w = np.ascontiguousarray(X[rows]), y_enc[rows], w[rows]
        if est._is_classifier:
            present, y_enc = np.unique(y_enc, return_inverse=True)
            if present.shape[0] < labels.shape[0]:
                refuse_per_label(est, labels, present)
            classes = labels[present]
            y_enc = np.ascontiguousarray(y_enc.reshape(-1), dtype=np.int32)
    if est._is_classifier:
        n_classes = classes.shape[0]
        counts = np.bincount(y_enc, weights=None if ones else w,
                             minlength=n_classes).astype(np.float64)
        priors = est.priors
        class_weight = getattr(est, "class_weight", None)
        if class_weight is not None:
            if not (isinstance(priors, str) and priors == "empirical"):
                raise ValueError(
                    "class_weight and priors both set the class priors: give one of "
                    f"them (priors={priors!r}, class_weight={class_weight!r})")
            priors = V.check_class_weight(class_weight, labels, classes, counts)
        checked = V.check_priors(priors, counts)
        cost, default_cost = V.check_cost(est.cost, n_classes)
        problem = Problem(X, y_enc, np.empty(0), w, ones, n_classes,
                          kernel_levels(encoding))
        # "empirical"/"equal" stay names: fold trees take their own proportions
        priors = priors if isinstance(priors, str) else checked
        y_rows = y_all if keep is None else _fill_missing_labels(y_all, keep)
    else:
        problem = Problem(X, np.empty(0, dtype=np.int32), y_enc, w, ones, 0,
                          kernel_levels(encoding))
        priors, cost, default_cost = None, None, True
        y_rows = None
    max_surrogate = params["missing"][0]
    n_missing = E.warn_missing(problem.X, names)
    if max_surrogate == "auto":
        max_surrogate = AUTO_SURROGATES if n_missing else 0
    settings = tree_settings(params, priors, cost, default_cost, max_surrogate)
    E.warn_target_in_features(problem.X if rows is None else X_all, encoding, y_given,
                              names)
    _cache.doing(_cache.describe_fit(est._is_classifier, est.criterion,
                                     problem.n_levels.any(), n_missing > 0, hasattr(est, "cv")))
    if keep is not None:  # rows: over the caller's rows, as cv fold ids are
        full = np.zeros(n_rows, dtype=bool)
        full[np.flatnonzero(keep)[rows] if rows is not None else keep] = True
        rows = full
    return _Prepared(problem, settings, params["ccp_alpha"], params["cp"], names, classes,
                     rows, y_rows, encoding)


def drop_missing_targets(y_missing, n_rows):
    """The mask of rows with a target; one warning says how many rows are dropped
    (rpart's default ``na.action``, which drops them)."""
    n_drop = int(np.count_nonzero(y_missing))
    if n_drop == n_rows:
        raise ValueError(f"y is missing on every row ({n_rows}): there is nothing to fit")
    which = "that row is" if n_drop == 1 else "those rows are"
    warnings.warn(
        f"y is missing on {n_drop} of the {n_rows} rows; {which} dropped from the "
        "fit (as rpart's default na.action does)", UserWarning,
        stacklevel=V.user_stacklevel())
    return ~y_missing


def kernel_levels(encoding):
    """``Problem.n_levels``: L_f of the subset-split features (empty when none)."""
    if not encoding.kind.any():  # every feature numeric (0), as NumPy input always is
        return np.zeros(0, dtype=np.int64)
    n_levels = encoding.n_levels
    return n_levels if n_levels.any() else np.zeros(0, dtype=np.int64)


def refuse_per_label(est, labels, present):
    """Refuse ``priors``/``cost`` sized for every label of y when some label's cases
    all have weight 0 (so it is not one of ``classes_``), naming that label."""
    absent = labels[np.setdiff1d(np.arange(labels.shape[0]), present)].tolist()
    for name in ("priors", "cost"):
        value = getattr(est, name, None)
        if value is None or isinstance(value, str):
            continue
        try:
            size = np.shape(value)[0] if np.ndim(value) else 0
        except ValueError:  # ragged: check_priors/check_cost will say so
            continue
        if size == labels.shape[0]:
            raise ValueError(
                f"{name} has {size} entries, one per label of y, but the cases of "
                f"class(es) {absent} all have sample_weight 0; zero-weight cases take no "
                "part in the fit (as if dropped), so classes_ holds only the "
                f"{present.shape[0]} classes with positive weight and {name} needs one "
                f"entry per class of those: drop the entries of {absent}, or give some "
                "of their cases a positive weight")


def check_cv_params(est):
    """The CV parameters checked; returns ``cv_predictions``."""
    if not isinstance(est.stratify, (bool, np.bool_)):
        raise TypeError(f"stratify must be True or False, got {est.stratify!r}")
    if est.stratify and not est._is_classifier:
        raise ValueError("stratify=True needs class labels: it is for CARTClassifierCV only")
    if est.random_state is not None:
        V.check_int(est.random_state, "random_state", low=0)
    select_index(np.zeros(1), np.zeros(1), est.selection)  # validates selection
    keep = getattr(est, "cv_predictions", False)
    allowed = CV_PREDICTIONS if est._is_classifier else CV_PREDICTIONS[:2]
    if not any(keep is a or (isinstance(keep, str) and keep == a) for a in allowed):
        raise ValueError(f"cv_predictions must be one of {list(allowed)}, got {keep!r}"
                         + ("" if est._is_classifier or keep != "proba" else
                            " (class probabilities are for CARTClassifierCV)"))
    if keep is not False and est.n_repeats != 1:
        raise ValueError(
            f"cv_predictions={keep!r} needs a single partition of the cases, but "
            f"n_repeats={est.n_repeats!r}: use n_repeats=1")
    return keep


#: The parameters of ``CARTClassifierCV`` / ``CARTRegressorCV`` and their defaults
#: (tests/estimators/test_estimators.py checks them against the estimators' signatures).
CV_DEFAULTS = {
    True: dict(criterion="gini", priors="empirical", class_weight=None, cost=None,
               max_depth=None, min_samples_split=2, min_samples_leaf=1,
               min_impurity_decrease=0.0, max_leaf_nodes=None, cp=None,
               categorical_features="from_dtype", max_categories_exhaustive=12,
               max_surrogate="auto", use_surrogate=2, surrogate_style=0, max_competitor=4,
               cv=10, stratify=False, n_repeats=1, selection="1se", random_state=0,
               cv_predictions=False, compat="breiman"),
    False: dict(criterion="squared_error", max_depth=None, min_samples_split=2,
                min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None, cp=None,
                categorical_features="from_dtype", max_surrogate="auto", use_surrogate=2,
                surrogate_style=0, max_competitor=4, cv=10, n_repeats=1, selection="1se",
                random_state=0, cv_predictions=False, compat="breiman"),
}


class CVParams:
    """The parameters of a CV estimator as plain attributes (no scikit-learn base).

    ``CVParams(True, criterion="gini", cv=5)`` carries what
    ``CARTClassifierCV("gini", cv=5)`` would; unknown names raise ``TypeError``.
    """

    ccp_alpha = None  # the CV estimators choose alpha themselves
    stratify = False  # the regressor has no stratify parameter

    def __init__(self, classifier, **params):
        defaults = CV_DEFAULTS[bool(classifier)]
        unknown = set(params) - set(defaults)
        if unknown:
            raise TypeError(f"unknown parameter(s) {sorted(unknown)}")
        self._is_classifier = bool(classifier)
        self.__dict__.update(defaults)
        self.__dict__.update(params)


def cross_validate_params(est, X, y, sample_weight=None, n_threads=1):
    """``CARTClassifierCV.fit``/``CARTRegressorCV.fit`` up to the fitted attributes:
    checks ``est``'s parameters and the data, grows T_max and cross-validates its
    pruning sequence. Returns ``(prepared, result)``: :func:`prepare`'s record and
    :func:`cartjit.engine.cv.cross_validate`'s."""
    keep = check_cv_params(est)
    prep = prepare(est, X, y, sample_weight)
    res = cross_validate(
        prep.problem, prep.settings, est.cv, selection=est.selection,
        stratify=bool(est.stratify), n_repeats=est.n_repeats,
        random_state=0 if est.random_state is None else est.random_state,
        rows=prep.rows, labels=prep.labels, n_threads=n_threads,
        cp=prep.cp, predictions=keep, compat=est.compat)
    return prep, res
