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

import heapq
import inspect
import warnings

import numba
import numpy as np

from . import _validation as V
from ._builder import (F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, I_DEPTH,
                       I_FEATURE, I_LEFT, I_N, I_PARENT, I_RIGHT, grow, presort)
from ._criteria import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA
from ._predict import apply as _apply_kernel
from ._pruning import weakest_link
from ._tree import LEAF, Tree, subtree

__all__ = ["CARTClassifier", "CARTRegressor", "NotFittedError"]

NotFittedError = V.NotFittedError


# --------------------------------------------------------------------------- helpers

#: Two classes whose expected costs Σ_j C(i|j) p(j,t) agree to this many ulps of p(t)
#: (times the largest cost) are tied for the node label; the lower index wins (SPEC §1).
_LABEL_TIE_ULPS = 64.0

def _class_risk(value, priors, class_counts, cost):
    """R(t) = min_i Σ_j C(i|j) π(j) N_j(t)/N_j and j*(t) (lowest index on ties), SPEC §1."""
    p_jt = value * (priors / class_counts)  # p(j, t)
    risks = p_jt @ cost  # risks[t, i] = Σ_j p(j,t) C(i|j), cost[j, i] = C(i|j)
    best = risks.min(axis=1)
    # Risks equal up to rounding are ties, won by the lowest class index.
    tol = _LABEL_TIE_ULPS * np.finfo(np.float64).eps * p_jt.sum(axis=1) * cost.max()
    label = np.argmax(risks <= (best + tol)[:, None], axis=1).astype(np.int32)
    return best, label


def _best_first(inode, fnode, value, max_leaf_nodes, q_weight):
    """Keep the splits a best-first grower would make with at most ``max_leaf_nodes`` leaves.

    The split chosen at a node does not depend on which other nodes are expanded, so
    best-first growth is T_max expanded from the root in decreasing order of the
    weighted impurity decrease p(t) Δi(t) (ties: lower node id first).
    """
    n = inode.shape[0]
    keep = np.zeros(n, dtype=bool)
    heap = []
    if inode[0, I_LEFT] >= 0:
        heap.append((-q_weight[0] * fnode[0, F_IMPROVEMENT], 0))
    n_leaves = 1
    while heap and n_leaves < max_leaf_nodes:
        _, t = heapq.heappop(heap)
        keep[t] = True
        n_leaves += 1
        for c in (inode[t, I_LEFT], inode[t, I_RIGHT]):
            if inode[c, I_LEFT] >= 0:
                heapq.heappush(heap, (-q_weight[c] * fnode[c, F_IMPROVEMENT], int(c)))
    return keep


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
            max_depth=-1 if max_depth is None else max_depth,
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
        w, ones = V.check_sample_weight(sample_weight, X.shape[0])
        if self._is_classifier:
            classes, y_enc = V.check_y_class(y, X.shape[0])
        else:
            classes, y_enc = None, V.check_y_reg(y, X.shape[0])
        if not ones and np.any(w == 0):
            keep = w > 0  # zero-weight cases take no part in the fit
            X, y_enc, w = np.ascontiguousarray(X[keep]), y_enc[keep], w[keep]
            if self._is_classifier:
                present, y_enc = np.unique(y_enc, return_inverse=True)
                classes = classes[present]
                y_enc = np.ascontiguousarray(y_enc.reshape(-1), dtype=np.int32)
        return X, names, y_enc, classes, w, ones

    def _grow(self, X, y_class, y_reg, w, ones, factor, n_classes, params, keys=None):
        n_threads = numba.get_num_threads()
        if keys is None:
            keys = presort(X, n_threads)
        return grow(X, keys, y_class, y_reg, w, ones, factor, n_classes,
                    params["criterion"], params["max_depth"], params["min_samples_split"],
                    params["min_samples_leaf"], params["min_impurity_decrease"], n_threads)

    def _finish(self, inode, fnode, value, risk, label, params, q_weight):
        """Assemble the Tree, apply max_leaf_nodes, compute α and apply ccp_alpha."""
        tree = Tree(
            feature=inode[:, I_FEATURE].astype(np.int32),
            threshold=fnode[:, F_THRESHOLD].copy(),
            left=inode[:, I_LEFT].astype(np.int32),
            right=inode[:, I_RIGHT].astype(np.int32),
            parent=inode[:, I_PARENT].astype(np.int32),
            depth=inode[:, I_DEPTH].astype(np.int32),
            n_node_samples=inode[:, I_N].astype(np.int64),
            weighted_n_node_samples=fnode[:, F_WEIGHT].copy(),
            value=value,
            impurity=np.maximum(fnode[:, F_IMPURITY], 0.0),
            risk=risk,
            label=label,
            alpha=np.full(inode.shape[0], np.nan),
        )
        self._improvement = fnode[:, F_IMPROVEMENT].copy()
        if params["max_leaf_nodes"] is not None and tree.n_leaves > params["max_leaf_nodes"]:
            keep = _best_first(inode, fnode, value, params["max_leaf_nodes"], q_weight)
            old = np.flatnonzero(_present_nodes(tree, keep))
            tree = subtree(tree, keep)
            self._improvement = np.where(tree.left >= 0, self._improvement[old], 0.0)
        tree = _with_alpha(tree)
        self.tree_max_ = tree
        if params["ccp_alpha"] is not None:
            tree = _prune_tree(tree, params["ccp_alpha"])
        return tree

    # -- queries --------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "tree_"):
            raise NotFittedError(
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
        arr, _ = V.check_X(X, estimator=self, n_features=self.n_features_in_)
        return arr

    def apply(self, X):
        """Index of the leaf of ``tree_`` that each row of X reaches."""
        X = self._check_predict_X(X)
        t = self.tree_
        return _apply_kernel(t.feature, t.threshold, t.left, X)

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


def _present_nodes(tree, keep_internal):
    present = np.zeros(tree.n_nodes, dtype=bool)
    present[0] = True
    split = keep_internal & (tree.left != LEAF)
    for i in range(tree.n_nodes):
        if present[i] and split[i]:
            present[tree.left[i]] = True
            present[tree.right[i]] = True
    return present


def _with_alpha(tree):
    alpha, _, _, _ = weakest_link(tree.left, tree.right, tree.parent, tree.risk)
    return tree._replace(alpha=alpha)


def _prune_tree(tree, alpha):
    """T(α) as a new Tree: keep the splits of nodes whose collapse α exceeds ``alpha``."""
    return subtree(tree, tree.alpha > alpha)


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

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on (X, y) with optional case weights; returns ``self``."""
        params = self._check_params()
        X, names, y_enc, classes, w, ones = self._check_fit_input(X, y, sample_weight)
        n_classes = classes.shape[0]
        counts = np.bincount(y_enc, weights=w, minlength=n_classes).astype(np.float64)
        priors = V.check_priors(self.priors, counts)
        cost, default_cost = V.check_cost(self.cost, n_classes)
        split_priors = priors if default_cost else priors * cost.sum(axis=1)
        split_priors = split_priors / split_priors.sum()
        factor = np.ascontiguousarray(split_priors / counts)

        inode, fnode, value = self._grow(X, y_enc, np.empty(0), w, ones, factor, n_classes,
                                         params)
        risk, label = _class_risk(value, priors, counts, cost)
        q_weight = value @ factor  # p(t) under the split-search priors
        tree = self._finish(inode, fnode, value, risk, label, params, q_weight)

        self.classes_ = classes
        self.n_classes_ = n_classes
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.priors_ = priors
        self.cost_ = cost
        self.class_weight_totals_ = counts
        self.tree_ = tree
        return self

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
        pred = self.predict(X)
        y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y).reshape(-1)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {pred.shape[0]} rows")
        return float(np.average(pred == y, weights=sample_weight))


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

    def fit(self, X, y, sample_weight=None):
        """Grow the tree on (X, y) with optional case weights; returns ``self``."""
        params = self._check_params()
        X, names, y_reg, _, w, ones = self._check_fit_input(X, y, sample_weight)
        inode, fnode, value = self._grow(X, np.empty(0, dtype=np.int32), y_reg, w, ones,
                                         np.empty(0), 0, params)
        w_root = fnode[0, F_WEIGHT]
        risk = fnode[:, F_IMPURITY].clip(min=0.0) * fnode[:, F_WEIGHT] / w_root
        label = np.full(inode.shape[0], -1, dtype=np.int32)
        tree = self._finish(inode, fnode, value, risk, label, params, fnode[:, F_WEIGHT] / w_root)
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.tree_ = tree
        return self

    def predict(self, X):
        """Weighted mean ȳ(t) of the leaf each row reaches."""
        leaves = self.apply(X)
        return self.tree_.value[leaves, 0]

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R² of :meth:`predict` on (X, y)."""
        pred = self.predict(X)
        y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y, dtype=np.float64).reshape(-1)
        if y.shape[0] != pred.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {pred.shape[0]} rows")
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        ss_res = np.sum(w * (y - pred) ** 2)
        ss_tot = np.sum(w * (y - np.average(y, weights=w)) ** 2)
        if ss_tot == 0:
            return 1.0 if ss_res == 0 else 0.0
        return float(1.0 - ss_res / ss_tot)

