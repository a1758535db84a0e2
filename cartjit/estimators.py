"""scikit-learn style CART estimators: :class:`CARTClassifier` and :class:`CARTRegressor`.

Thin Python over the kernels: parameters are stored untouched by ``__init__`` and
checked in ``fit``; ``fit`` validates and converts the data (:mod:`cartjit._validation`),
presorts and grows T_max (:mod:`cartjit._builder`), computes the risks R(t), the node
labels and the weakest-link pruning sequence (:mod:`cartjit._pruning`), and keeps the
flat tree as ``tree_`` (:mod:`cartjit._tree`). No Numba code lives here.

The estimators follow scikit-learn's conventions (``get_params``/``set_params``, fitted
attributes ending in ``_``, ``fit`` returning ``self``) without importing scikit-learn:
it is a test dependency, not a runtime one.
"""
from __future__ import annotations

import copy
import inspect
import warnings

import numba
import numpy as np

from . import _validation as V
from ._presort import presort
from ._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from ._cv import (fold_ids_from_splits, grow_cv_trees, make_folds, path_table,
                  pruning_sequence, score_fold_trees, select_index)
from ._fit import Problem, Settings, fit_tree, split_factor
from ._predict import apply as _apply_kernel
from ._tree import subtree

__all__ = ["CARTClassifier", "CARTRegressor", "CARTClassifierCV", "CARTRegressorCV",
           "NotFittedError"]

NotFittedError = V.NotFittedError

#: The weights of a fit with unit weights: none are stored (saves n doubles).
_UNIT_WEIGHTS = np.empty(0, dtype=np.float64)


class _BaseCART:
    """Shared parameter handling, fitting pipeline and tree queries."""

    _criteria: dict = {}
    _is_classifier = False

    # -- scikit-learn protocol ------------------------------------------------------
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        """Parameters of this estimator, as passed to ``__init__``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set parameters by name; returns ``self``. Unknown names raise ``ValueError``."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                    f"Valid parameters are: {valid!r}.")
            setattr(self, key, value)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
                    if p.name != "self"}
        parts = []
        for name in self._param_names():
            value = getattr(self, name)
            default = defaults.get(name)
            same = value is default
            if not same:
                try:
                    same = bool(value == default)
                except Exception:  # arrays and the like
                    same = False
            if not same:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tree_")

    def __sklearn_tags__(self):
        from sklearn.utils import (ClassifierTags, InputTags, RegressorTags, Tags,
                                   TargetTags)
        return Tags(
            estimator_type="classifier" if self._is_classifier else "regressor",
            target_tags=TargetTags(required=True, one_d_labels=True, two_d_labels=False,
                                   positive_only=False, multi_output=False,
                                   single_output=True),
            classifier_tags=ClassifierTags(multi_class=True, multi_label=False)
            if self._is_classifier else None,
            regressor_tags=None if self._is_classifier else RegressorTags(),
            input_tags=InputTags(allow_nan=False, sparse=False, two_d_array=True),
        )

    # -- parameters -----------------------------------------------------------------
    def _check_params(self):
        criterion = V.check_choice(self.criterion, "criterion", self._criteria)
        max_depth = V.check_int(self.max_depth, "max_depth", low=0, allow_none=True)
        return dict(
            criterion=self._criteria[criterion],
            # A depth beyond int64 is no limit; capping keeps it a valid kernel argument.
            max_depth=-1 if max_depth is None else min(max_depth, 2**62),
            min_samples_split=V.check_int(self.min_samples_split, "min_samples_split", low=2),
            min_samples_leaf=V.check_int(self.min_samples_leaf, "min_samples_leaf", low=1),
            min_impurity_decrease=V.check_float(self.min_impurity_decrease,
                                                "min_impurity_decrease"),
            max_leaf_nodes=V.check_int(self.max_leaf_nodes, "max_leaf_nodes", low=2,
                                       allow_none=True),
            ccp_alpha=V.check_float(self.ccp_alpha, "ccp_alpha", allow_none=True),
        )

    # -- fitting --------------------------------------------------------------------
    def _check_fit_input(self, X, y, sample_weight):
        X, names = V.check_X(X, estimator=self)
        if sample_weight is None:
            w, ones = _UNIT_WEIGHTS, True
        else:
            w, ones = V.check_sample_weight(sample_weight, X.shape[0])
            if ones:  # unit weights are not stored: the kernels take 1 for every case
                w = _UNIT_WEIGHTS
        if self._is_classifier:
            classes, y_enc = V.check_y_class(y, X.shape[0])
        else:
            classes, y_enc = None, V.check_y_reg(y, X.shape[0])
        self._kept_rows = None
        if not ones and np.any(w == 0):
            keep = w > 0  # zero-weight cases take no part in the fit
            self._kept_rows = keep
            X, y_enc, w = np.ascontiguousarray(X[keep]), y_enc[keep], w[keep]
            if self._is_classifier:
                present, y_enc = np.unique(y_enc, return_inverse=True)
                classes = classes[present]
                y_enc = np.ascontiguousarray(y_enc.reshape(-1), dtype=np.int32)
        return X, names, y_enc, classes, w, ones

    def _prepare(self, X, y, sample_weight):
        """Check parameters and data; return (Problem, Settings, ccp_alpha, names, classes)."""
        params = self._check_params()
        X, names, y_enc, classes, w, ones = self._check_fit_input(X, y, sample_weight)
        if self._is_classifier:
            n_classes = classes.shape[0]
            counts = np.bincount(y_enc, weights=None if ones else w,
                                 minlength=n_classes).astype(np.float64)
            priors = self.priors if isinstance(self.priors, str) else None
            checked = V.check_priors(self.priors, counts)
            cost, default_cost = V.check_cost(self.cost, n_classes)
            problem = Problem(X, y_enc, np.empty(0), w, ones, n_classes)
            priors = priors if priors is not None else checked
        else:
            problem = Problem(X, np.empty(0, dtype=np.int32), y_enc, w, ones, 0)
            priors, cost, default_cost = None, None, True
        settings = Settings(params["criterion"], params["max_depth"],
                            params["min_samples_split"], params["min_samples_leaf"],
                            params["min_impurity_decrease"], params["max_leaf_nodes"],
                            priors, cost, default_cost)
        return problem, settings, params["ccp_alpha"], names, classes

    def _score_inputs(self, X, y, sample_weight, dtype=None):
        """``(predict(X), y as a 1-d array, checked weights)`` for :meth:`score`."""
        pred = self.predict(X)
        y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y, dtype=dtype).reshape(-1)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {pred.shape[0]} rows")
        w, _ = V.check_sample_weight(sample_weight, pred.shape[0])
        return pred, y, w

    def _set_fitted(self, fitted, problem, settings, ccp_alpha, names, classes):
        """Store the fitted tree (T_max and T(ccp_alpha)) and the fitted attributes."""
        self.tree_max_ = fitted.tree
        self.tree_ = fitted.tree if ccp_alpha is None else _prune_tree(fitted.tree, ccp_alpha)
        self.n_features_in_ = problem.X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        if self._is_classifier:
            self.classes_ = classes
            self.n_classes_ = classes.shape[0]
            self.priors_ = fitted.priors
            self.cost_ = settings.cost
            self.class_weight_totals_ = fitted.class_totals
            self._split_cost_default = settings.default_cost

    def fit(self, X, y, sample_weight=None):
        """Grow T_max on (X, y) with optional case weights (then prune to ``ccp_alpha``).

        Returns ``self``.
        """
        problem, settings, ccp_alpha, names, classes = self._prepare(X, y, sample_weight)
        n_threads = numba.get_num_threads()
        fitted = fit_tree(problem, settings, None, n_threads)  # presorts, frees the keys
        self._set_fitted(fitted, problem, settings, ccp_alpha, names, classes)
        return self

    # -- pruning --------------------------------------------------------------------
    def cost_complexity_path(self, risk="cost"):
        """The weakest-link pruning sequence of ``tree_max_`` as a DataFrame (no refit).

        One row per k = 1..K: ``alpha`` (α_k), ``alpha_prime`` (the geometric midpoint
        sqrt(α_k α_{k+1}) used by cross-validation, +inf for k = K), ``n_leaves``
        (|T~_k|), ``risk`` (R(T_k): misclassification cost for classifiers, mean squared
        error for regressors), ``cp`` (rpart's CP = α_k / R(root)) and ``rel_error``
        (R(T_k) / R(root)).

        ``risk="impurity"`` runs the same weakest-link loop with R(t) = p(t) i(t), the
        impurity-weighted risk that scikit-learn's ``cost_complexity_pruning_path``
        prunes on (useful when moving over; not CART's sequence).
        """
        self._check_fitted()
        tree = self.tree_max_
        if risk == "cost":
            node_risk = tree.risk
        elif risk == "impurity":
            node_risk = self._node_weight() * tree.impurity
        else:
            raise ValueError(f"risk must be 'cost' or 'impurity', got {risk!r}")
        alphas, n_leaves, tree_risk = pruning_sequence(tree, node_risk)
        return path_table(alphas, n_leaves, tree_risk, float(node_risk[0]))

    def _node_weight(self):
        """p(t) of every node of ``tree_max_`` under the split-search priors."""
        tree = self.tree_max_
        if not self._is_classifier:
            return tree.weighted_n_node_samples / tree.weighted_n_node_samples[0]
        factor = split_factor(self.priors_, self.class_weight_totals_, self.cost_,
                              self._split_cost_default)
        return tree.value @ factor

    def prune(self, alpha):
        """A copy of this fitted estimator whose ``tree_`` is T(alpha), without refitting.

        T(α) is the smallest subtree of ``tree_max_`` minimising R(T) + α |T~| (SPEC
        §4), read off the stored per-node collapse α. The copy's ``ccp_alpha`` is set
        to ``alpha``, so refitting it reproduces the same tree.
        """
        self._check_fitted()
        if not (isinstance(alpha, (float, np.floating)) and alpha == np.inf):
            alpha = V.check_float(alpha, "alpha")  # +inf is allowed: T(inf) is the root
        pruned = copy.copy(self)
        pruned.ccp_alpha = alpha
        pruned.tree_ = _prune_tree(self.tree_max_, alpha)
        return pruned

    # -- queries --------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "tree_"):
            raise V.not_fitted_error(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator.")

    def _check_predict_X(self, X):
        self._check_fitted()
        has_names = hasattr(X, "columns") and hasattr(X, "dtypes")
        fitted_names = getattr(self, "feature_names_in_", None)
        if has_names:
            cols = list(X.columns)
            str_names = bool(cols) and all(isinstance(c, str) for c in cols)
            if fitted_names is None and str_names:
                warnings.warn(
                    f"X has feature names, but {type(self).__name__} was fitted without "
                    "feature names", UserWarning, stacklevel=3)
            elif fitted_names is not None and str_names and (
                    len(cols) != len(fitted_names) or np.any(np.asarray(cols, dtype=object) != fitted_names)):
                unexpected = [c for c in cols if c not in set(fitted_names)]
                missing = [c for c in fitted_names if c not in set(cols)]
                msg = "The feature names should match those that were passed during fit.\n"
                if unexpected:
                    msg += f"Feature names unseen at fit time:\n- {unexpected}\n"
                if missing:
                    msg += f"Feature names seen at fit time, yet now missing:\n- {missing}\n"
                if not unexpected and not missing:
                    msg += "Feature names must be in the same order as they were in fit.\n"
                raise ValueError(msg)
        elif fitted_names is not None:
            warnings.warn(
                f"X does not have valid feature names, but {type(self).__name__} was "
                "fitted with feature names", UserWarning, stacklevel=3)
        arr, _ = V.check_X(X, estimator=self, n_features=self.n_features_in_,
                           check_finite=False)  # checked by the apply kernel
        return arr

    def apply(self, X):
        """Index of the leaf of ``tree_`` that each row of X reaches."""
        X = self._check_predict_X(X)
        t = self.tree_
        leaves, n_bad = _apply_kernel(t.feature, t.threshold, t.left, X)
        if n_bad:
            V.raise_non_finite(X)
        return leaves

    def decision_path(self, X):
        """Node indicator (scipy CSR matrix, n_samples × n_nodes) of each row's path.

        Needs scipy (installed with scikit-learn); :meth:`decision_path_arrays` gives the
        same information as plain ``(indptr, indices)`` arrays.
        """
        indptr, indices = self.decision_path_arrays(X)
        try:
            from scipy.sparse import csr_matrix
        except ImportError as exc:  # pragma: no cover - scipy is present with sklearn
            raise ImportError(
                "decision_path returns a scipy.sparse matrix and needs scipy; install it "
                "(pip install scipy) or use decision_path_arrays()") from exc
        data = np.ones(indices.shape[0], dtype=np.int64)
        return csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, self.tree_.n_nodes))

    def decision_path_arrays(self, X):
        """``(indptr, indices)``: row i's path is ``indices[indptr[i]:indptr[i+1]]``, root first."""
        leaves = self.apply(X)
        t = self.tree_
        lengths = t.depth[leaves].astype(np.int64) + 1
        indptr = np.zeros(leaves.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=np.int64)
        node = leaves.copy()
        pos = indptr[1:] - 1  # fill each path from its leaf back to the root
        alive = np.ones(leaves.shape[0], dtype=bool)
        while alive.any():
            idx = np.flatnonzero(alive)
            indices[pos[idx]] = node[idx]
            pos[idx] -= 1
            node[idx] = t.parent[node[idx]]
            alive[idx] = node[idx] >= 0
        return indptr, indices

    def get_depth(self):
        """Depth of ``tree_`` (a single leaf has depth 0)."""
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self):
        """Number of leaves of ``tree_``."""
        self._check_fitted()
        return self.tree_.n_leaves


class _CVMixin:
    """V-fold cross-validation of the pruning sequence (SPEC §5), shared by the CV estimators."""

    def select_k(self, selection):
        """Row position in ``cv_results_`` of the subtree a selection rule chooses.

        ``selection`` is what the ``selection`` parameter takes: ``"min"``, ``"1se"`` or a
        number m (the m-SE rule), applied to the fitted ``cv_risk`` and ``cv_se`` columns;
        ties go to the smaller tree. The fitted tree is the one of ``self.selection``.
        """
        self._check_fitted()
        res = self.cv_results_
        return select_index(res["cv_risk"].to_numpy(), res["cv_se"].to_numpy(), selection)

    ccp_alpha = None  # the CV estimators choose α themselves

    stratify = False  # CARTRegressorCV has no stratify parameter

    def _check_cv_params(self):
        if not isinstance(self.stratify, (bool, np.bool_)):
            raise TypeError(f"stratify must be True or False, got {self.stratify!r}")
        if self.stratify and not self._is_classifier:
            raise ValueError("stratify=True needs class labels: it is for CARTClassifierCV only")
        if self.random_state is not None:
            V.check_int(self.random_state, "random_state", low=0)
        select_index(np.zeros(1), np.zeros(1), self.selection)  # validates selection

    def fit(self, X, y, sample_weight=None):
        """Grow T_max, compute its pruning sequence, cross-validate it and keep T_{k*}.

        Returns ``self``.
        """
        self._check_cv_params()
        problem, settings, _, names, classes = self._prepare(X, y, sample_weight)
        n = problem.X.shape[0]
        cv = self.cv
        if self._kept_rows is not None and not isinstance(cv, (str, int, np.integer)):
            n_rows = self._kept_rows.shape[0]
            labels = np.asarray(y) if self._is_classifier and self.stratify else None
            ids = np.asarray(fold_ids_from_splits(cv, n_rows, labels))
            if ids.ndim == 1 and ids.shape[0] == n_rows:
                cv = ids[self._kept_rows]  # fold ids follow the cases that take part
        seed = 0 if self.random_state is None else self.random_state
        plan = make_folds(cv, n, y=problem.y_class if self.stratify else None,
                          stratify=self.stratify, n_repeats=self.n_repeats, random_state=seed)
        n_threads = numba.get_num_threads()
        keys = presort(problem.X)
        fitted, fold_fits = grow_cv_trees(problem, settings, keys, plan, n_threads)
        fold_trees = [f.tree for f in fold_fits]
        alphas, n_leaves, tree_risk = fitted.path
        cv_risk, cv_se = score_fold_trees(problem, settings, fold_trees, plan, alphas,
                                          priors=fitted.priors,
                                          class_totals=fitted.class_totals,
                                          n_threads=n_threads)
        risk_mean = cv_risk.mean(axis=0)
        se_mean = cv_se.mean(axis=0)
        std = cv_risk.std(axis=0, ddof=1) if cv_risk.shape[0] > 1 else np.full_like(risk_mean, np.nan)
        k = select_index(risk_mean, se_mean, self.selection)

        self._set_fitted(fitted, problem, settings, float(alphas[k]), names, classes)
        root = float(fitted.tree.risk[0])
        table = path_table(alphas, n_leaves, tree_risk, root)
        table["cv_risk"] = risk_mean
        table["cv_se"] = se_mean
        table["cv_std"] = std
        table["xerror"] = risk_mean / root if root > 0 else np.nan
        table["xstd"] = se_mean / root if root > 0 else np.nan
        table["selected"] = np.arange(len(table)) == k
        self.cv_results_ = table
        self.cv_risk_repeats_ = cv_risk
        self.cv_se_repeats_ = cv_se
        self.alpha_ = float(alphas[k])
        self.best_index_ = int(k)
        self.n_folds_ = plan.n_folds
        self.n_repeats_ = plan.folds.shape[0]
        folds = plan.folds
        if self._kept_rows is not None:
            full = np.full((folds.shape[0], self._kept_rows.shape[0]), -1, dtype=np.int64)
            full[:, self._kept_rows] = folds
            folds = full
        self.folds_ = folds
        n_rep, n_f = plan.folds.shape[0], plan.n_folds
        self.fold_alphas_ = [[fold_fits[r * n_f + v].path[0] for v in range(n_f)]
                             for r in range(n_rep)]
        return self


def _prune_tree(tree, alpha):
    """T(α) as a new Tree: keep the splits of nodes whose collapse α exceeds ``alpha``."""
    return subtree(tree, tree.alpha > alpha)


#: The criterion names each kind of tree accepts (the ``criterion`` parameter).
CLASSIFIER_CRITERIA = tuple(CLASSIFICATION_CRITERIA)
REGRESSOR_CRITERIA = tuple(REGRESSION_CRITERIA)


# --------------------------------------------------------------------------- classifier

class CARTClassifier(_BaseCART):
    """CART classification tree (Breiman, Friedman, Olshen & Stone 1984).

    Parameters
    ----------
    criterion : {"gini", "entropy", "twoing"}, default "gini"
        Impurity used by the split search (SPEC §2).
    priors : "empirical", "equal" or array of shape (n_classes,), default "empirical"
        Class priors π(j). Given priors must be positive and sum to 1, in the order of
        ``classes_``.
    cost : array of shape (n_classes, n_classes) or None
        Misclassification costs, ``cost[j, i]`` = C(i|j), the cost of predicting class
        i for a case of true class j (rows: true class, columns: predicted), zero
        diagonal. ``None`` is 0-1 cost. A non-default cost alters the priors of the split
        search, π'(j) ∝ π(j) Σ_i C(i|j) (rpart's approach); risk, labels and pruning use
        the true π and C.
    max_depth : int or None
        Nodes at this depth are leaves (the root has depth 0); ``None``: no limit.
    min_samples_split : int, default 2
        A node with fewer cases (of non-zero weight) is a leaf.
    min_samples_leaf : int, default 1
        Every split leaves at least this many cases on each side.
    min_impurity_decrease : float, default 0
        A node splits only if p(t) Δi >= this (p(t) under the split-search priors).
    max_leaf_nodes : int or None
        Best-first growth: expand nodes in decreasing order of p(t) Δi until this many
        leaves.
    ccp_alpha : float or None, default None
        ``None`` keeps T_max; a number α >= 0 keeps the pruned subtree T(α) (SPEC §4;
        ``0.0`` gives T_1, which drops splits that do not lower the risk).

    Attributes
    ----------
    tree_ : Tree
        The fitted flat tree (see :mod:`cartjit._tree`).
    tree_max_ : Tree
        T_max (after ``max_leaf_nodes``) with its pruning sequence, before ``ccp_alpha``.
    classes_, n_classes_, n_features_in_, feature_names_in_ (DataFrame input only),
    priors_ (π), cost_ (C), class_weight_totals_ (N_j, weighted class totals).
    """

    _criteria = CLASSIFICATION_CRITERIA
    _is_classifier = True

    def __init__(self, criterion="gini", *, priors="empirical", cost=None, max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0,
                 max_leaf_nodes=None, ccp_alpha=None):
        self.criterion = criterion
        self.priors = priors
        self.cost = cost
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_leaf_nodes = max_leaf_nodes
        self.ccp_alpha = ccp_alpha

    def _leaf_proba(self, leaves):
        scaled = self.tree_.value[leaves] * (self.priors_ / self.class_weight_totals_)
        return scaled / scaled.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Class j*(t) of the leaf each row reaches (minimum expected cost, SPEC §1)."""
        leaves = self.apply(X)
        return self.classes_[self.tree_.label[leaves]]

    def predict_proba(self, X):
        """p(j | t) of the leaf each row reaches, with the fitted priors (columns: ``classes_``)."""
        return self._leaf_proba(self.apply(X))

    def predict_log_proba(self, X):
        """Natural logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """(Weighted) accuracy of :meth:`predict` on (X, y)."""
        pred, y, w = self._score_inputs(X, y, sample_weight)
        return float(np.average(pred == y, weights=w))


# --------------------------------------------------------------------------- regressor

class CARTRegressor(_BaseCART):
    """CART regression tree: least-squares splits (variance reduction), SPEC §3.

    Parameters are those of :class:`CARTClassifier` without ``priors`` and ``cost``;
    ``criterion`` is ``"squared_error"``. R(t) = Σ_{i∈t} w_i (y_i - ȳ(t))² / W, so R(T)
    is the resubstitution mean squared error, and ``ccp_alpha`` is on that scale.
    """

    _criteria = REGRESSION_CRITERIA

    def __init__(self, criterion="squared_error", *, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_leaf_nodes = max_leaf_nodes
        self.ccp_alpha = ccp_alpha

    def predict(self, X):
        """Weighted mean ȳ(t) of the leaf each row reaches."""
        leaves = self.apply(X)
        return self.tree_.value[leaves, 0]

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R² of :meth:`predict` on (X, y)."""
        pred, y, w = self._score_inputs(X, y, sample_weight, dtype=np.float64)
        ss_res = np.sum(w * (y - pred) ** 2)
        ss_tot = np.sum(w * (y - np.average(y, weights=w)) ** 2)
        if ss_tot == 0:
            return 1.0 if ss_res == 0 else 0.0
        return float(1.0 - ss_res / ss_tot)



# --------------------------------------------------------------------------- CV estimators

_CV_DOC = """
    Cross-validation parameters
    ---------------------------
    cv : int, "loo", array of shape (n_samples,) or splits, default 10
        V folds (2 <= V <= n), leave-one-out, one fold id per case (any labels, like
        rpart's ``xval`` vector), or scikit-learn style (train, test) index pairs or a
        splitter object whose test sets partition the cases.
    stratify : bool, default False
        Deal each class's cases round-robin over the folds (classification only).
    n_repeats : int, default 1
        Repeated CV: a new random partition per repeat; R^CV is averaged and its
        standard deviation over repeats reported (``cv_std``).
    selection : "min", "1se" or float m >= 0, default "1se"
        "min": the smallest R^CV (ties to the smaller tree); "1se": the smallest tree
        with R^CV <= min + SE (Breiman's rule); a number m: the m-SE rule.
    random_state : int >= 0 or None, default 0
        Seed of the fold partitions (None means 0: results are always reproducible).

    Attributes
    ----------
    cv_results_ : pandas.DataFrame
        One row per k: ``k``, ``alpha`` (α_k), ``alpha_prime`` (α'_k), ``n_leaves``,
        ``risk`` (R(T_k)), ``cp`` (α_k / R(root)), ``rel_error``, ``cv_risk`` (R^CV mean
        over repeats), ``cv_se`` (its SE, mean over repeats), ``cv_std`` (std of R^CV
        over repeats, NaN with one repeat), ``xerror``/``xstd`` (rpart's scaling by
        R(root)) and ``selected``.
    alpha_, best_index_ : the chosen α_k and its row index; ``tree_`` is T(alpha_).
    folds_ : int array (n_repeats, n_samples), fold of each case (-1: zero weight).
    fold_alphas_ : list (repeats) of lists (folds) of each fold tree's α sequence.
    cv_risk_repeats_, cv_se_repeats_ : arrays (n_repeats, K).
"""


class CARTClassifierCV(_CVMixin, CARTClassifier):
    __doc__ = ("""CART classifier pruned by V-fold cross-validation of the pruning sequence.

    Grows T_max, computes its weakest-link sequence, cross-validates every T_k as in
    SPEC §5 (fold trees grown once each from the presorted sample, scored for all α'_k
    in one descent per held-out case) and keeps the selected subtree. Tree parameters
    are those of :class:`CARTClassifier` (without ``ccp_alpha``).
    """ + _CV_DOC)

    def __init__(self, criterion="gini", *, priors="empirical", cost=None, max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0,
                 max_leaf_nodes=None, cv=10, stratify=False, n_repeats=1, selection="1se",
                 random_state=0):
        super().__init__(criterion, priors=priors, cost=cost, max_depth=max_depth,
                         min_samples_split=min_samples_split,
                         min_samples_leaf=min_samples_leaf,
                         min_impurity_decrease=min_impurity_decrease,
                         max_leaf_nodes=max_leaf_nodes)
        del self.ccp_alpha
        self.cv = cv
        self.stratify = stratify
        self.n_repeats = n_repeats
        self.selection = selection
        self.random_state = random_state


class CARTRegressorCV(_CVMixin, CARTRegressor):
    __doc__ = ("""CART regression tree pruned by V-fold cross-validation (SPEC §5).

    R^CV is the weighted mean squared held-out error; R(T) the resubstitution MSE.
    Tree parameters are those of :class:`CARTRegressor` (without ``ccp_alpha``).
    """ + _CV_DOC)

    def __init__(self, criterion="squared_error", *, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None, cv=10,
                 n_repeats=1, selection="1se", random_state=0):
        super().__init__(criterion, max_depth=max_depth, min_samples_split=min_samples_split,
                         min_samples_leaf=min_samples_leaf,
                         min_impurity_decrease=min_impurity_decrease,
                         max_leaf_nodes=max_leaf_nodes)
        del self.ccp_alpha
        self.cv = cv
        self.n_repeats = n_repeats
        self.selection = selection
        self.random_state = random_state
