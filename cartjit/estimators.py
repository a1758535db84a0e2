"""scikit-learn estimators for CART: :class:`CARTClassifier`, :class:`CARTRegressor` and
their cross-validated variants :class:`CARTClassifierCV` and :class:`CARTRegressorCV`.

Thin Python over a few modules: ``fit`` checks the parameters and the data
(:mod:`cartjit._prepare`, without scikit-learn, which the experiment runner calls
directly) and hands them to :func:`cartjit.engine.fit.fit_tree` (which presorts, grows T_max,
computes the risks R(t), the labels and the weakest-link sequence) or to
:func:`cartjit.engine.cv.cross_validate`; pruning is :mod:`cartjit.engine.pruning`.
The fitted flat tree is kept as ``tree_`` (:mod:`cartjit.engine.tree`). No Numba code lives
here, and no kernel is called from here.

When scikit-learn is installed the estimators are scikit-learn estimators: they derive
from ``sklearn.base.BaseEstimator`` and ``ClassifierMixin``/``RegressorMixin`` (tags,
HTML repr, ``clone``, metadata routing of ``sample_weight``), and pass
``sklearn.utils.estimator_checks.check_estimator``. Without it cartjit still imports
and works: a small base class gives ``get_params``/``set_params`` and the repr.
"""
from __future__ import annotations

import copy
import inspect
import warnings

import numba
import numpy as np

from .engine import cache as _cache
from . import _encoding as E
from . import _prepare as P
from . import _validation as V
from .engine.cv import sample_risk, select_index, with_rpart_columns
from .engine.fit import fit_tree, rpart_rows, split_factor, with_rpart_rules
from .engine.pruning import index_by_k, path_table, prune_tree, pruning_sequence
from .engine.tree import LEAF
from .engine.tree import apply as _apply_tree

try:  # scikit-learn is optional: a run-time dependency only if the user has it
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _ClassifierMixin
    from sklearn.base import RegressorMixin as _RegressorMixin
except ImportError:  # pragma: no cover - exercised by a subprocess test without sklearn
    _Base = _ClassifierMixin = _RegressorMixin = None

__all__ = ["CARTClassifier", "CARTRegressor", "CARTClassifierCV", "CARTRegressorCV",
           "NotFittedError", "CLASSIFIER_CRITERIA", "REGRESSOR_CRITERIA", "HAVE_SKLEARN"]

NotFittedError = V.NotFittedError

#: The criterion names each kind of tree accepts (the ``criterion`` parameter).
CLASSIFIER_CRITERIA = V.CLASSIFIER_CRITERIA
REGRESSOR_CRITERIA = V.REGRESSOR_CRITERIA

#: Whether the estimators derive from scikit-learn's base classes.
HAVE_SKLEARN = _Base is not None

if _Base is None:
    class _Base:
        """``get_params``/``set_params`` and the repr, when scikit-learn is absent."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            """Parameters of this estimator, as passed to ``__init__``."""
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            """Set parameters by name; returns ``self``. Unknown names raise ``ValueError``."""
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(
                        f"Invalid parameter {key!r} for estimator {type(self).__name__}. "
                        f"Valid parameters are: {valid!r}.")
                setattr(self, key, value)
            return self

        def __repr__(self):
            defaults = {p.name: p.default
                        for p in inspect.signature(type(self).__init__).parameters.values()
                        if p.name != "self"}
            parts = []
            for name in self._get_param_names():
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

    class _ClassifierMixin:
        _estimator_type = "classifier"

    class _RegressorMixin:
        _estimator_type = "regressor"


class _BaseCART(_Base):
    """Shared parameter handling, fitting pipeline and tree queries."""

    _is_classifier = False

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tree_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_y": True, "allow_nan": True}

    # -- parameters and data (cartjit._prepare) --------------------------------------
    def _check_params(self):
        return P.check_params(self)

    def _prepare(self, X, y, sample_weight):
        """Check the parameters and the data; return a ``_Prepared``."""
        return P.prepare(self, X, y, sample_weight)

    _drop_missing_targets = staticmethod(P.drop_missing_targets)
    _kernel_levels = staticmethod(P.kernel_levels)

    def _refuse_per_label(self, labels, present):
        P.refuse_per_label(self, labels, present)

    def _score_inputs(self, X, y, sample_weight, dtype=None):
        """``(predict(X), y as a 1-d array, checked weights)`` for :meth:`score`."""
        pred = self.predict(X)
        try:
            n_y = len(y)
        except TypeError:  # None or a scalar: the checks below say what y must be
            n_y = pred.shape[0]
        if n_y != pred.shape[0]:
            raise ValueError(f"y has {n_y} entries but X has {pred.shape[0]} rows")
        if self._is_classifier:
            y, missing = V.missing_targets(y, pred.shape[0])  # shape checked, labels as given
            if missing.any():
                raise ValueError(
                    f"Input y contains {int(np.count_nonzero(missing))} missing labels (NaN "
                    "or None): score compares every prediction with its label; drop those "
                    "rows first")
        else:  # numeric, finite, squared errors within float64 (names y otherwise)
            y = V.check_y_reg(y, pred.shape[0])
        w, _ = V.check_sample_weight(sample_weight, pred.shape[0], for_fit=False)
        return pred, y, w

    def _set_fitted(self, fitted, prep, alpha):
        """Store T_max and T(alpha) (T_max for ``None``) and the fitted attributes."""
        self.tree_max_ = fitted.tree
        self.tree_ = fitted.tree if alpha is None else prune_tree(fitted.tree, alpha)
        self.n_features_in_ = prep.problem.X.shape[1]
        self.max_surrogate_ = int(prep.settings.max_surrogate)
        self._use_surrogate = int(prep.settings.use_surrogate)
        self._encoding = prep.encoding
        self.is_categorical_ = prep.encoding.is_categorical.copy()
        self.categories_ = list(prep.encoding.categories)
        if prep.names is not None:
            self.feature_names_in_ = prep.names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        if self._is_classifier:
            self.classes_ = prep.classes
            self.n_classes_ = prep.classes.shape[0]
            self.priors_ = fitted.priors
            self.cost_ = prep.settings.cost
            self.class_weight_totals_ = fitted.class_totals
            self._split_cost_default = prep.settings.default_cost

    def fit(self, X, y, sample_weight=None):
        """Grow T_max on (X, y) with optional case weights (then prune to ``ccp_alpha``,
        or to α = ``cp`` · R(root)).

        Returns ``self``.
        """
        prep = self._prepare(X, y, sample_weight)
        rpart = self.compat == "rpart"
        # rpart's rules with no growth bound run inside the fit
        in_fit = rpart and not prep.ccp_alpha and not prep.cp
        fitted = fit_tree(prep.problem, prep.settings, None, numba.get_num_threads(),
                          rpart_alpha=0.0 if in_fit else None, rpart_growth=rpart)
        alpha = prep.ccp_alpha
        if prep.cp is not None:  # rpart's scale: α = cp · R(root) of T_max
            alpha = prep.cp * float(fitted.tree.risk[0])
        if rpart:  # rpart's complexities, grown with its bound α_c
            alpha = 0.0 if alpha is None else alpha
            if not in_fit:
                fitted = with_rpart_rules(fitted, prep.settings, alpha)
        self._set_fitted(fitted, prep, alpha)
        self._forget_test_sample()
        return self

    # -- the test-sample estimate ---------------------------------------------------
    #: What :meth:`prune_by_test_sample` records (a new fit or a pruned copy drops it).
    _TEST_SAMPLE_ATTRS = ("test_results_", "alpha_", "_best_index")

    @property
    def best_k_(self):
        """The book's k of the chosen subtree T_k (after :meth:`prune_by_test_sample`, or
        of a CV estimator's fit): ``cv_results_.loc[best_k_]`` (``test_results_.loc``)
        is its row (docs/reading-trees.md, "Numbering")."""
        table = self.__dict__.get("_cv_results")
        if table is None:
            table = self.__dict__.get("test_results_")
        if table is None or "_best_index" not in self.__dict__:
            raise AttributeError("best_k_")
        return int(table["k"].iloc[self.__dict__["_best_index"]])

    @property
    def best_index_(self):
        """Deprecated: the 0-based row *position* of the chosen subtree
        (``cv_results_.iloc[best_index_]``); the tables are indexed by k, so use
        :attr:`best_k_` (``cv_results_.loc[best_k_]``)."""
        try:
            position = self.__dict__["_best_index"]
        except KeyError:
            raise AttributeError("best_index_") from None
        warnings.warn("best_index_ is deprecated: it is the 0-based row position of the "
                      "chosen subtree (use it with .iloc), while the results tables are "
                      "indexed by the book's k; use best_k_ (table.loc[best_k_])",
                      FutureWarning, stacklevel=2)
        return position

    @best_index_.setter
    def best_index_(self, position):
        self.__dict__["_best_index"] = int(position)

    def _forget_test_sample(self):
        for name in self._TEST_SAMPLE_ATTRS:
            if name in self.__dict__:
                delattr(self, name)

    def _test_targets(self, y, n):
        """y of a test sample as the kernels take it: class indices into ``classes_``
        (a label that is not one of them is an error) or float64 responses."""
        if not self._is_classifier:
            return V.check_y_reg(y, n)
        y, missing = V.missing_targets(y, n)
        if missing.any():
            raise ValueError(
                f"y_test contains {int(np.count_nonzero(missing))} missing labels (NaN or "
                "None): every test case needs its class; drop those rows first")
        lookup = {c: i for i, c in enumerate(self.classes_.tolist())}
        codes = np.fromiter((lookup.get(v, -1) for v in np.asarray(y).tolist()),
                            dtype=np.int32, count=n)
        if np.any(codes < 0):
            unknown = sorted({repr(v) for v in np.asarray(y)[codes < 0].tolist()})[:5]
            raise ValueError(
                f"y_test has labels that are not classes of the fitted tree: "
                f"{', '.join(unknown)} (classes_ = {self.classes_.tolist()!r})")
        return codes

    def _priors_from_test_sample(self):
        """Whether the fit estimated π from the learning sample ("empirical" priors, no
        class_weight): the test-sample estimate then estimates π from the test sample."""
        priors = self.priors
        return (isinstance(priors, str) and priors == "empirical"
                and getattr(self, "class_weight", None) is None)

    def test_sample_path(self, X_test, y_test, sample_weight=None):
        """Breiman's test-sample estimate R^ts(T_k) of every tree of the pruning sequence
        of ``tree_max_``, with its standard error (Breiman et al. 1984, §3.4, §11.2;
        §8.5 for regression; docs/rpart.md).

        (X_test, y_test) is a sample not used in the fit, optionally weighted. Returns a
        DataFrame with one row per T_k, indexed by k: the columns of
        :meth:`cost_complexity_path` (``k``, ``alpha``, ``alpha_prime``, ``n_leaves``,
        ``risk`` (the resubstitution R(T_k)), ``cp``, ``rel_error``) and ``test_risk``
        (R^ts(T_k)) and ``test_se`` (its SE). Classification: with given priors
        (``priors`` given or ``"equal"``, or set by ``class_weight``) R^ts = Σ_j π(j)
        Σ_i C(i|j) N_ij / N_j over the test cases, N_ij the weight of the class-j test
        cases labelled i, with the class-by-class SE of §11.2, and every class with π(j)
        > 0 needs a test case; with ``priors="empirical"`` the priors are estimated from
        the test sample, so R^ts is the mean misclassification cost of the test cases
        and SE the one of a mean. Regression: the mean squared error of the test cases
        and the SE of that mean. Weights count as cases in the SE. ``tree_`` is not
        changed (see :meth:`prune_by_test_sample`); ``ccp_alpha`` and ``cp`` do not
        restrict the rows.
        """
        X = self._check_predict_X(X_test)
        n = X.shape[0]
        y = self._test_targets(y_test, n)
        w, ones = V.check_sample_weight(sample_weight, n, for_fit=False)
        priors = cost = None
        if self._is_classifier:
            cost = self.cost_
            if not self._priors_from_test_sample():
                priors = self.priors_
                present = np.bincount(y, weights=None if ones else w,
                                      minlength=self.n_classes_)
                lacking = np.flatnonzero((priors > 0) & (present <= 0))
                if lacking.size:
                    raise ValueError(
                        "the test-sample estimate with given priors averages the error rate "
                        "of every class, but y_test has no case (of positive weight) of "
                        f"class(es) {self.classes_[lacking].tolist()!r}; give test cases of "
                        "every class with a positive prior")
        tree = self.tree_max_
        alphas, n_leaves, tree_risk = self._sequence()
        risk, se = sample_risk(tree, self._use_surrogate, alphas, X, y,
                               None if ones else w, priors=priors, cost=cost)
        table = path_table(alphas, n_leaves, tree_risk, float(tree.risk[0]))
        table["test_risk"] = risk
        table["test_se"] = se
        return table

    def prune_by_test_sample(self, X_test, y_test, sample_weight=None, selection="1se"):
        """Keep the T_k that the test-sample estimate selects (Breiman et al. 1984, §3.4).

        Computes :meth:`test_sample_path` and selects a row as the CV estimators do:
        ``selection="min"`` the smallest R^ts (ties: the smaller tree), ``"1se"`` the
        smallest tree with R^ts <= min + SE (of the minimum), a number m the m-SE rule.
        ``tree_`` becomes that T_k (in place; no refit) and ``test_results_`` (the table,
        indexed by k, with a ``selected`` column), ``alpha_`` (its α_k) and ``best_k_``
        (its k) are recorded. The parameters (``ccp_alpha``, ``cp``) are not changed: a new
        ``fit`` grows and prunes as they say and drops these attributes;
        ``prune(est.alpha_)`` on a refitted estimator gives the same tree. Returns
        ``self``.
        """
        select_index(np.zeros(1), np.zeros(1), selection)  # checks selection first
        table = self.test_sample_path(X_test, y_test, sample_weight)
        k = select_index(table["test_risk"].to_numpy(), table["test_se"].to_numpy(),
                         selection)
        table["selected"] = np.arange(len(table)) == k
        alpha = float(table["alpha"].iloc[k])
        self.tree_ = prune_tree(self.tree_max_, alpha)
        self.test_results_ = table
        self.alpha_ = alpha
        self.best_index_ = int(k)
        return self

    # -- pruning --------------------------------------------------------------------
    def cost_complexity_path(self, risk="cost"):
        """The weakest-link pruning sequence of ``tree_max_`` as a DataFrame (no refit).

        One row per k = 1..K, indexed by k (``loc[k]`` is the row of T_k): ``alpha``
        (α_k), ``alpha_prime`` (the geometric midpoint sqrt(α_k α_{k+1}) used by
        cross-validation, +inf for k = K), ``n_leaves`` (|T~_k|), ``risk`` (R(T_k):
        misclassification cost for classifiers, mean squared error for regressors),
        ``cp`` (rpart's CP = α_k / R(root)) and ``rel_error`` (R(T_k) / R(root)). Any
        ``alpha`` of this table (or ``cp`` times R(root)) given to :meth:`prune` or
        ``ccp_alpha`` gives the tree of its row. With ``compat="rpart"`` the rows are
        rpart's table (``cptable_`` in increasing α), and so are those of
        :meth:`test_sample_path`.

        ``risk="impurity"`` runs the same weakest-link loop with R(t) = p(t) i(t), the
        impurity-weighted risk that scikit-learn's ``cost_complexity_pruning_path``
        prunes on (useful when moving over; not CART's sequence).
        """
        self._check_fitted()
        tree = self.tree_max_
        if risk == "cost":
            return path_table(*self._sequence(), float(tree.risk[0]))
        if risk == "impurity":
            node_risk = self._node_weight() * tree.impurity
        else:
            raise ValueError(f"risk must be 'cost' or 'impurity', got {risk!r}")
        alphas, n_leaves, tree_risk = pruning_sequence(tree, node_risk)
        return path_table(alphas, n_leaves, tree_risk, float(node_risk[0]))

    @property
    def cptable_(self):
        """The pruning sequence in the layout of rpart's ``fit$cptable``: one row per
        tree, the root first, indexed by the book's k of the tree (so decreasing k: row
        ``loc[k]`` is T_k; rpart's own row labels 1, 2, … count from the root), with the
        columns ``CP`` (α / R(root)), ``nsplit`` (leaves - 1) and ``rel error`` (R(T) /
        R(root)), and on the CV estimators ``xerror`` and ``xstd``. With
        ``compat="rpart"`` these are rpart's rows (its one-pass complexities, down to
        ``cp``); with ``compat="breiman"`` the exact sequence of
        ``cost_complexity_path()`` (docs/rpart-vs-exact.md)."""
        self._check_fitted()
        if hasattr(self, "cv_results_"):
            res = self.cv_results_
            values, n_leaves, risk = (res["alpha"].to_numpy(), res["n_leaves"].to_numpy(),
                                      res["risk"].to_numpy())
        else:
            values, n_leaves, risk = self._sequence()
        table = path_table(values, n_leaves, risk, float(self.tree_max_.risk[0]))
        out = table[["cp", "n_leaves", "rel_error"]].iloc[::-1]
        if hasattr(self, "cv_results_"):  # its rows may start at k_c > 1 (``cp``)
            out.index = res.index[::-1]
        out.index.name = "k"
        out.columns = ["CP", "nsplit", "rel error"]
        out["nsplit"] -= 1
        if hasattr(self, "cv_results_"):
            out["xerror"] = res["xerror"].to_numpy()[::-1]
            out["xstd"] = res["xstd"].to_numpy()[::-1]
        return out

    def _sequence(self):
        """(α_k, |T~_k|, R(T_k)) of ``tree_max_`` in the fitted mode: the exact
        weakest-link sequence, or rpart's table (``compat="rpart"``), increasing α."""
        if self.compat == "rpart":
            return self._rpart_rows()
        return pruning_sequence(self.tree_max_)

    def _rpart_rows(self):
        """rpart's table of ``tree_max_`` (``compat="rpart"``), read off the stored
        complexities; it ends at the growth bound α_c (``ccp_alpha``, or ``cp`` ·
        R(root), or 0)."""
        root = float(self.tree_max_.risk[0])
        alpha_c = self.ccp_alpha if self.ccp_alpha is not None else (
            0.0 if self.cp is None else self.cp * root)
        return rpart_rows(self.tree_max_, alpha_c)

    def _node_weight(self, tree=None):
        """p(t) of every node of ``tree`` (default ``tree_max_``) under the split-search
        priors."""
        tree = self.tree_max_ if tree is None else tree
        if not self._is_classifier:
            return tree.weighted_n_node_samples / tree.weighted_n_node_samples[0]
        factor = split_factor(self.priors_, self.class_weight_totals_, self.cost_,
                              self._split_cost_default)
        return tree.value @ factor

    def prune(self, alpha):
        """A copy of this fitted estimator whose ``tree_`` is T(alpha), without refitting.

        T(α) is the smallest subtree of ``tree_max_`` minimising R(T) + α |T~|
        (docs/maths.md §4), read off the stored per-node collapse α: a split is kept iff
        its α exceeds ``alpha · (1 + 1e-9) + 1e-12 · R(root)``. This relative slack (the
        weakest-link loop's own tie tolerance, far below the gap between two steps) lets
        an α typed from the path, from a book or from an rpart ``cp`` (α = cp · R(root))
        give the tree of that step although the stored α_k carries rounding: on the iris
        petal tree, ``prune(1/75)`` gives the 3 leaves of α_3 = 1/75. ``alpha`` may be
        +inf (the root). The copy's ``ccp_alpha`` is set to ``alpha`` (and its ``cp`` to
        None), so refitting it reproduces the same tree.
        """
        self._check_fitted()
        if not (isinstance(alpha, (float, np.floating)) and alpha == np.inf):
            alpha = V.check_float(alpha, "alpha")  # +inf is allowed: T(inf) is the root
        pruned = copy.copy(self)
        pruned.ccp_alpha = alpha
        if hasattr(pruned, "cp"):
            pruned.cp = None
        pruned._forget_test_sample()
        pruned.tree_ = prune_tree(self.tree_max_, alpha)
        return pruned

    # -- queries --------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "tree_"):
            raise V.not_fitted_error(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator.")

    def _check_predict_X(self, X, check_finite=True):
        self._check_fitted()
        V.check_feature_names(X, getattr(self, "feature_names_in_", None),
                              type(self).__name__)
        return E.transform(X, self._encoding, self.n_features_in_, self,
                           check_finite=check_finite)

    def apply(self, X):
        """Index of the node of ``tree_`` where each row of X ends: a leaf, or an
        internal node where a missing value stops it (docs/maths.md §8: no surrogate
        can route it, and ``use_surrogate`` < 2 or the children are tied)."""
        # first: it raises NotFittedError before fit; infinity is counted by the kernel
        X = self._check_predict_X(X, check_finite=False)
        _cache.doing("the kernels of prediction")
        return _apply_tree(self.tree_, X, use_surrogate=self._use_surrogate)

    def decision_path(self, X):
        """Node indicator (scipy CSR matrix, n_samples × n_nodes) of each row's path.

        Needs scipy (``pip install scipy``, or cartjit's ``sklearn`` extra);
        :meth:`decision_path_arrays` gives the same information as plain
        ``(indptr, indices)`` arrays without it.
        """
        indptr, indices = self.decision_path_arrays(X)
        try:
            from scipy.sparse import csr_matrix
        except ImportError as exc:
            raise ImportError(
                "decision_path returns a scipy.sparse matrix and needs scipy, which is not "
                "installed: pip install scipy (or pip install 'cartjit[sklearn]'), or use "
                "decision_path_arrays(), which returns the same paths as numpy arrays"
            ) from exc
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

    # -- importances ----------------------------------------------------------------
    def _feature_totals(self, per_node):
        """Σ over the split nodes of ``tree_`` of ``per_node``, per feature."""
        tree = self.tree_
        split = tree.left != LEAF
        totals = np.zeros(self.n_features_in_, dtype=np.float64)
        np.add.at(totals, tree.feature[split], per_node[split])
        return totals

    @property
    def feature_importances_(self):
        """Impurity-based importances (scikit-learn's definition), summing to 1.

        For each feature, Σ p(t) Δi(t) over the split nodes t of ``tree_`` that split
        on it, with p(t) the node's probability under the split-search priors (its
        fraction of the case weight for regression and for empirical priors with 0-1
        cost) and Δi(t) the impurity decrease of the split (``tree_.improvement``; for
        twoing the twoing value; with missing values scaled by the fraction of the node
        present on the split feature, docs/maths.md §8); primary splits only (surrogates
        count in :attr:`variable_importance_`); normalised to sum to 1, all zeros for a
        single leaf.
        On the same tree it equals scikit-learn's ``feature_importances_``. Like any
        impurity-based importance it favours features with many possible splits
        (continuous features, categorical features with many levels).
        """
        self._check_fitted()
        tree = self.tree_
        totals = self._feature_totals(self._node_weight(tree) * tree.improvement)
        total = totals.sum()
        return totals / total if total > 0 else totals

    def _improve(self, tree=None):
        """rpart's ``improve`` of every node's split: W(root) p(t) Δi(t) (0 at leaves),
        in natural-log units for entropy; see :attr:`variable_importance_`."""
        tree = self.tree_ if tree is None else tree
        per_node = tree.weighted_n_node_samples[0] * self._node_weight(tree) * tree.improvement
        if self._is_classifier and self.criterion == "entropy":
            per_node = per_node * np.log(2.0)  # rpart's information is in nats
        return per_node

    def _surrogate_totals(self, per_node):
        """Σ over the split nodes t of ``tree_`` and their surrogate splits s of
        adj(s) × ``per_node[t]``, per feature of s."""
        tree = self.tree_
        totals = np.zeros(self.n_features_in_, dtype=np.float64)
        nodes = np.flatnonzero((tree.left != LEAF) & (tree.n_surrogates > 0))
        if nodes.shape[0] == 0:
            return totals
        counts = tree.n_surrogates[nodes].astype(np.int64)
        # the table rows of every node's surrogates, and the node each row belongs to
        owner = np.repeat(nodes, counts)
        offset = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = tree.surrogate_start[owner].astype(np.int64) + offset
        np.add.at(totals, tree.surrogate_feature[rows],
                  tree.surrogate_adj[rows] * per_node[owner])
        return totals

    @property
    def variable_importance_(self):
        """rpart's ``variable.importance``, as a pandas Series.

        For each feature, the sum of rpart's ``improve`` over the split nodes t of
        ``tree_`` that split on it, plus, over the split nodes that have a surrogate
        split on it (docs/maths.md §8), the adjusted agreement of that surrogate times
        the node's ``improve``. rpart's ``improve`` of a split is W(root) p(t) Δi(t),
        with W(root) the total case weight, p(t) the node's probability under the
        split-search priors (its weight fraction for regression and for empirical priors
        with 0-1 cost, so the term is W(t) Δi(t)) and Δi(t) the impurity decrease
        (``tree_.improvement``, scaled by the fraction of the node present on the split
        feature when values are missing; for entropy in natural-log units, as rpart's
        ``information`` split, i.e. bits × ln 2). For regression this is the decrease
        of the weighted sum of squares. Competitor splits add nothing. rpart builds
        surrogates on complete data too: with ``max_surrogate="auto"`` (none on complete
        data) give ``max_surrogate=5`` to reproduce its importance there. Not normalised
        (see :attr:`feature_importances_` for scikit-learn's normalised importance, which
        counts the primary splits only). Indexed by feature name
        (``feature_names_in_``, else ``x0, x1, ...``); only features with positive
        importance, sorted by decreasing importance (ties in feature order); named
        ``"variable_importance"``.
        """
        import pandas as pd  # imported here: pandas costs time at `import cartjit`

        self._check_fitted()
        per_node = self._improve()
        totals = self._feature_totals(per_node) + self._surrogate_totals(per_node)
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = [f"x{j}" for j in range(self.n_features_in_)]
        order = np.argsort(-totals, kind="stable")
        order = order[totals[order] > 0]
        return pd.Series(totals[order], index=pd.Index([str(names[j]) for j in order],
                                                       dtype=object),
                         name="variable_importance", dtype=np.float64)

    def get_depth(self):
        """Depth of ``tree_`` (a single leaf has depth 0)."""
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self):
        """Number of leaves of ``tree_``."""
        self._check_fitted()
        return self.tree_.n_leaves


class _CVMixin:
    """V-fold cross-validation of the pruning sequence (docs/maths.md §5), shared by the
    CV estimators; the work is :func:`cartjit.engine.cv.cross_validate`."""

    ccp_alpha = None  # the CV estimators choose α themselves

    stratify = False  # CARTRegressorCV has no stratify parameter

    def _forget_test_sample(self):
        """Nothing to forget: ``alpha_`` and ``best_index_`` are the CV's choice."""

    @property
    def cv_results_(self):
        """One row per candidate subtree (see the class docstring); with
        ``compat="rpart"`` also rpart's column names ``CP``, ``nsplit``, ``rel error``."""
        try:
            return self.__dict__["_cv_results"]
        except KeyError:
            raise AttributeError("cv_results_") from None

    @cv_results_.setter
    def cv_results_(self, table):
        if getattr(self, "compat", "breiman") == "rpart":
            table = with_rpart_columns(table)
        self.__dict__["_cv_results"] = index_by_k(table)

    @property
    def prune_by_test_sample(self):
        """Not for the CV estimators, which select T_k by cross-validation."""
        raise AttributeError(
            f"{type(self).__name__} selects its subtree by cross-validation; "
            "prune_by_test_sample is a method of CARTClassifier and CARTRegressor "
            "(test_sample_path works here too)")

    def select_k(self, selection, *, as_k=None):
        """The book's k of the subtree a selection rule chooses among the rows of
        ``cv_results_`` (``cv_results_.loc[k]`` is its row).

        ``selection`` is what the ``selection`` parameter takes: ``"min"``, ``"1se"`` or a
        number m (the m-SE rule), applied to the fitted ``cv_risk`` and ``cv_se`` columns;
        ties go to the smaller tree. The fitted tree is the one of ``self.selection``
        (its k is :attr:`best_k_`).

        Earlier versions returned the 0-based row *position* (for ``.iloc``). Not giving
        ``as_k`` returns k with a FutureWarning saying so, since code that used the
        answer with ``.iloc`` would now read the wrong row; ``as_k=True`` returns k
        without it and ``as_k=False`` returns the position (docs/reading-trees.md,
        "Numbering").
        """
        if as_k is None:
            warnings.warn("select_k(selection) now returns the tree's k (the row "
                          "cv_results_.loc[k]), no longer the 0-based row position: use "
                          "as_k=False for the position (cv_results_.iloc[...]), as_k=True "
                          "to silence this warning", FutureWarning, stacklevel=2)
            as_k = True
        elif not isinstance(as_k, (bool, np.bool_)):
            raise TypeError(f"as_k must be True or False, got {as_k!r}")
        self._check_fitted()
        res = self.cv_results_
        position = select_index(res["cv_risk"].to_numpy(), res["cv_se"].to_numpy(),
                                selection)
        return int(res["k"].iloc[position]) if as_k else position

    def _check_cv_params(self):
        return P.check_cv_params(self)

    def fit(self, X, y, sample_weight=None):
        """Grow T_max, compute its pruning sequence, cross-validate it and keep T_{k*}.

        Returns ``self``.
        """
        prep, res = P.cross_validate_params(self, X, y, sample_weight,
                                            n_threads=numba.get_num_threads())
        self._set_fitted(res.fitted, prep, res.alpha)
        self.cv_results_ = res.table
        self.cv_risk_repeats_ = res.cv_risk
        self.cv_se_repeats_ = res.cv_se
        self.alpha_ = res.alpha
        self.best_index_ = res.best_index
        self.n_folds_ = res.n_folds
        self.n_repeats_ = res.folds.shape[0]
        self.folds_ = res.folds
        self.fold_alphas_ = res.fold_alphas
        for name, value in (("cv_predictions_", res.predictions), ("cv_proba_", res.proba)):
            if value is not None:
                setattr(self, name, value)
            elif hasattr(self, name):  # from an earlier fit
                delattr(self, name)
        return self


# --------------------------------------------------------------------------- classifier

class CARTClassifier(_ClassifierMixin, _BaseCART):
    """CART classification tree (Breiman, Friedman, Olshen & Stone 1984).

    Parameters
    ----------
    criterion : {"gini", "entropy", "twoing"}, default "gini"
        Impurity used by the split search (docs/maths.md §2).
    priors : "empirical", "equal" or array of shape (n_classes,), default "empirical"
        Class priors π(j). Given priors must be positive and sum to 1, in the order of
        ``classes_``. With "empirical" (π(j) = N_j / N) a cross-validation fold tree
        takes its own fold's proportions, as rpart does; "equal" and given priors are
        the same for every fold.
        ``classes_`` holds the labels of y with positive total weight: a
        case of weight 0 is a dropped row, so a label whose cases all have weight 0 is
        not a class of the fit, and priors or cost sized for it are refused with an
        error naming it (give them for the remaining classes).
    class_weight : "balanced", dict {label: weight} or None, default None
        The scikit-learn way to set priors: π(j) ∝ class_weight_j × N_j, N_j the
        weighted count of class j (a class missing from the dict has weight 1), which
        grows the tree that weighting each case of class j by class_weight_j would.
        "balanced" (class_weight_j = N / (J N_j)) therefore gives equal priors; unlike
        scikit-learn, whose "balanced" counts cases, N_j includes ``sample_weight``. The
        resulting π is fixed for the cross-validation folds. Setting both ``priors``
        (other than "empirical") and ``class_weight`` is an error.
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
        ``None`` keeps T_max; a number α >= 0 keeps the pruned subtree T(α)
        (docs/maths.md §4; ``0.0`` gives T_1, which drops splits that do not lower the
        risk). α is compared with the stored per-node α with a relative slack of 1e-9
        (see :meth:`prune`), so an α_k of the path or a book's fraction such as 1/75
        gives the tree of that step.
    cp : float or None, default None
        rpart's relative complexity: the pruned subtree T(α) with α = cp · R(root),
        R(root) the resubstitution risk of the root under the fitted priors and costs
        (the scale of the ``cp`` column of :meth:`cost_complexity_path`; for a regressor
        the variance of y). ``CARTClassifier(cp=c)`` gives the tree of R's
        ``prune(rpart(..., cp = 0), cp = c)`` wherever rpart's CP table is the exact
        sequence (docs/rpart.md). Unlike rpart's ``cp`` it does not stop the growth:
        T_max is grown whole (``tree_max_``) and pruned. Give ``cp`` or ``ccp_alpha``,
        not both (a ``ValueError``); with neither, ``tree_`` is T_max.
    categorical_features : "from_dtype", None, array of int, array of str or bool mask
        Which features are unordered categoricals, split by subsets of their levels
        {x ∈ S} vs {x ∉ S} (docs/maths.md §7) instead of by thresholds.
        ``"from_dtype"``: the pandas columns of dtype ``category``, object/string and
        bool; an *ordered* ``category`` column is ordinal (split by thresholds on its
        categories' order); NumPy input has none. ``None``: none. Otherwise the
        categorical columns as feature indices, feature names (DataFrame input) or a
        boolean mask of length n_features; a listed column's levels are its declared
        categories (``category`` dtype), ``[False, True]`` (bool) or its sorted distinct
        values (numbers, or strings in an object array). A missing value (NaN, None,
        pd.NA) is no level: it is a missing value of the feature (see below). More than
        ``cartjit._encoding.MAX_LEVELS`` (16384) levels are refused. At prediction a
        level not seen in fit is treated as a missing value of its feature (with a
        ``UserWarning``).
    max_categories_exhaustive : int in [1, 20], default 12
        With more than two classes in the problem (as rpart decides, whatever the node
        holds), a categorical feature with at most this many levels present at a node
        is searched there over all 2^(L-1) - 1 subsets (exact);
        above it, the levels are ordered by the first principal component of their
        class proportions (Coppersmith, Hong & Hosking 1999) and only the L - 1 splits
        of that order are scanned: fast, usually close, not guaranteed optimal. With two
        classes (and for regression) the L - 1 splits of the order by p(class 1 | level)
        (by the mean of y) are exact for any L.
    max_surrogate : "auto" or int >= 0, default "auto"
        Surrogate splits kept per split node (rpart's ``maxsurrogate``): the splits on
        other features that best reproduce the node's split, by agreement, among those
        with a positive adjusted agreement (docs/maths.md §8). They route the cases
        missing the split feature, in fit and in prediction, and count in
        :attr:`variable_importance_`. ``"auto"``: 5 (rpart's default) when the training
        X has a missing value, else 0 (surrogates then have nothing to route; set an int
        to get them anyway). The value used is ``max_surrogate_``.
    use_surrogate : {0, 1, 2}, default 2
        What a case missing the split feature does (rpart's ``usesurrogate``), in fit and
        in prediction: 0 stops at the node (the node predicts for it; in fit it goes to
        neither child); 1 follows the first surrogate whose feature it has, else stops;
        2 as 1, then goes to the child with more learning cases (stops when they tie).
    surrogate_style : {0, 1}, default 0
        How a surrogate's agreement is counted (rpart's ``surrogatestyle``): 0 as a
        fraction of the cases with the split feature present (a surrogate missing on
        many of them scores low), 1 as a fraction of those with the surrogate's feature
        present too.
    max_competitor : int >= 0, default 4
        Competitor splits recorded per split node (rpart's ``maxcompete``): the best
        split on each other feature, best first. They are only reported
        (:func:`cartjit.summary`); they change no split.
    compat : "breiman" or "rpart", default "breiman"
        The pruning rules. "breiman": the exact weakest-link sequence (docs/maths.md
        §4). "rpart": rpart's rules (docs/maths.md §9, docs/rpart-vs-exact.md): its
        one-pass node complexities, its bound on the growth (``cp`` then stops the
        growth as in ``rpart(..., cp = c)``; None means 0, the whole table) and, in the
        CV estimators, its cross-validation. The defaults of the other parameters do
        not change. Either way ``cptable_`` gives the table in rpart's layout.

    Missing values (NaN in X, None or pd.NA in a DataFrame column) are allowed in fit and
    prediction (docs/maths.md §8): each feature's split is searched on the cases that
    have it, its goodness scaled by their share of the node, and the cases missing the
    chosen feature follow the surrogates (then the majority). A feature missing on every
    case gives a ``UserWarning`` (it can never be split on), as do cases missing every
    feature (they are kept). Rows with a missing y are dropped, with one ``UserWarning``
    giving their number (rpart's default ``na.action``); a missing ``sample_weight``
    entry is an error. Infinity is refused.

    Attributes
    ----------
    tree_ : Tree
        The fitted flat tree (see :mod:`cartjit.engine.tree`).
    tree_max_ : Tree
        T_max (after ``max_leaf_nodes``) with its pruning sequence, before ``ccp_alpha``
        (with ``compat="rpart"``, rpart's complexity of each node that splits in
        rpart's tree, 0 elsewhere).
    cptable_ : pandas.DataFrame
        The sequence in the layout of rpart's ``fit$cptable``, the root first: ``CP``,
        ``nsplit``, ``rel error`` (derived from ``tree_max_``; not a stored attribute).
    classes_, n_classes_, n_features_in_, feature_names_in_ (DataFrame input only),
    priors_ (π), cost_ (C), class_weight_totals_ (N_j, weighted class totals).
    is_categorical_ : bool array (n_features,)
        True for the features split by subsets of their levels.
    categories_ : list (n_features,)
        For a categorical or ordinal feature the array of its levels (level code c is
        ``categories_[f][c]``); None for a numeric feature.
    max_surrogate_ : int
        The number of surrogate splits kept per node (``max_surrogate`` resolved).
    feature_importances_ : array (n_features,)
        scikit-learn's impurity-based importance of each feature in ``tree_``,
        normalised to sum to 1 (see the property).
    variable_importance_ : pandas.Series
        rpart's ``variable.importance`` (primary and surrogate splits) of the features
        used by ``tree_``, not normalised, largest first (see the property).
    test_results_, alpha_, best_k_ : after :meth:`prune_by_test_sample` only
        (``best_index_``, the 0-based row position, is deprecated)
        The test-sample table of :meth:`test_sample_path` with a ``selected`` column,
        the selected α_k and its row (a new ``fit`` drops them).

    Notes
    -----
    Units do not matter: weights × c give the same tree with weighted counts × c, and
    costs × c the same tree with risks and α × c, for any c > 0 that float64 holds
    (the kernels see them divided by a power of two, exactly). Refused, because float64
    cannot carry them: a positive weight below 2**-40 of the weight total (the sums of
    weights would drop it), positive weights below 2.2e-308 or a total beyond float64,
    costs whose positive entries span more than 2**100 or fall below 2**-500, and
    priors spanning more than 2**100.
    """

    _is_classifier = True

    def __init__(self, criterion="gini", *, priors="empirical", class_weight=None, cost=None,
                 max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_impurity_decrease=0.0, max_leaf_nodes=None, ccp_alpha=None, cp=None,
                 categorical_features="from_dtype", max_categories_exhaustive=12,
                 max_surrogate="auto", use_surrogate=2, surrogate_style=0,
                 max_competitor=4, compat="breiman"):
        self.criterion = criterion
        self.priors = priors
        self.class_weight = class_weight
        self.cost = cost
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_leaf_nodes = max_leaf_nodes
        self.ccp_alpha = ccp_alpha
        self.cp = cp
        self.categorical_features = categorical_features
        self.max_categories_exhaustive = max_categories_exhaustive
        self.max_surrogate = max_surrogate
        self.use_surrogate = use_surrogate
        self.surrogate_style = surrogate_style
        self.max_competitor = max_competitor
        self.compat = compat

    def _leaf_proba(self, leaves):
        scaled = self.tree_.value[leaves] * (self.priors_ / self.class_weight_totals_)
        return scaled / scaled.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Class j*(t) of the node where each row ends (minimum expected cost,
        docs/maths.md §1)."""
        return self._predict_leaves(self.apply(X))

    def _predict_leaves(self, leaves):
        """:meth:`predict` for the nodes ``leaves`` of :meth:`apply`: with
        :meth:`_leaf_proba`, labels and probabilities from one encoding of X (whose
        checks, and warnings, then run once)."""
        return self.classes_[self.tree_.label][leaves]  # one gather over the rows

    def predict_proba(self, X):
        """p(j | t) of the node where each row ends, with the fitted priors (columns: ``classes_``)."""
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

class CARTRegressor(_RegressorMixin, _BaseCART):
    """CART regression tree: least-squares splits (variance reduction), docs/maths.md §3.

    Parameters (missing values and surrogate splits included) are those of
    :class:`CARTClassifier` without ``priors``, ``cost``, ``class_weight`` and
    ``max_categories_exhaustive`` (the levels of a categorical
    feature are ordered by the mean of y at the node, and the L - 1 splits of that order
    include the best subset split for any L); ``criterion`` is ``"squared_error"``.
    Fitted attributes are those of :class:`CARTClassifier` without the class ones. R(t) = Σ_{i∈t} w_i (y_i - ȳ(t))² / W, so R(T)
    is the resubstitution mean squared error, and ``ccp_alpha`` is on that scale.

    Units do not matter: y × c gives the same tree with means × c and squared errors
    (impurity, risk, α: ``min_impurity_decrease`` and ``ccp_alpha`` are on that scale)
    × c²; weights × c the same tree with
    weighted counts × c. A y with a value or a spread max(y) - min(y) beyond about
    3.4e153 (its squared errors overflow), or a positive spread below 2**-450 (they
    underflow), is refused, as are weights beyond the classifier's limits.
    """


    def __init__(self, criterion="squared_error", *, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None, cp=None, categorical_features="from_dtype",
                 max_surrogate="auto", use_surrogate=2, surrogate_style=0, max_competitor=4,
                 compat="breiman"):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.max_leaf_nodes = max_leaf_nodes
        self.ccp_alpha = ccp_alpha
        self.cp = cp
        self.categorical_features = categorical_features
        self.max_surrogate = max_surrogate
        self.use_surrogate = use_surrogate
        self.surrogate_style = surrogate_style
        self.max_competitor = max_competitor
        self.compat = compat

    def predict(self, X):
        """Weighted mean ȳ(t) of the node where each row ends (a leaf, or where a
        missing value stops it)."""
        return self._predict_leaves(self.apply(X))

    def _predict_leaves(self, leaves):
        """:meth:`predict` for the nodes ``leaves`` of :meth:`apply`."""
        return self.tree_.value[:, 0][leaves]

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
    Parameters
    ----------
    cv : int, "loo", array of shape (n_samples,) or splits, default 10
        V folds (2 <= V <= n), leave-one-out, one fold id per case (any labels, like
        rpart's ``xval`` vector), or scikit-learn style (train, test) index pairs or a
        splitter object whose test sets partition the cases (a classifier's splitter is
        given y, so ``StratifiedKFold`` works). Cases of zero weight take no part; if
        they leave fewer cases than V (but at least 2), V is capped at that number
        (leave-one-out) with a warning.
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
    cp : float or None, default None
        rpart's relative complexity as a bound on the candidates: with α_c = cp ·
        R(root), only T(α_c) (the T_{k_c} that ``prune(α_c)`` gives) and its subtrees
        T_{k_c}, …, T_K are cross-validated and selected; ``cv_results_`` has those rows
        (``k`` keeps its number in the whole sequence, ``alpha`` and ``alpha_prime`` are
        those of the whole sequence, so the first row's α'_{k_c} = sqrt(α_{k_c}
        α_{k_c+1}) may lie below α_c). The fold trees are grown whole and scored at
        those α'_k. ``tree_max_`` stays T_max. None (or 0) keeps every row. In rpart,
        ``cp`` also stops the growth of the full and fold trees; rpart's CP table then
        ends at cp, as these rows do (docs/rpart.md).
    cv_predictions : False, True or "proba" (classifier only), default False
        Keep the per-case cross-validated predictions (rpart's ``xpred.rpart``):
        ``cv_predictions_`` and, with "proba", ``cv_proba_``. They cost n × K numbers
        (n × K × J for "proba") and need ``n_repeats=1``.

    Attributes
    ----------
    cv_results_ : pandas.DataFrame
        One row per k, indexed by k (``cv_results_.loc[k]``): ``k``, ``alpha`` (α_k),
        ``alpha_prime`` (α'_k), ``n_leaves``,
        ``risk`` (R(T_k)), ``cp`` (α_k / R(root)), ``rel_error``, ``cv_risk`` (R^CV mean
        over repeats), ``cv_se`` (its SE, mean over repeats), ``cv_std`` (std of R^CV
        over repeats, NaN with one repeat), ``xerror``/``xstd`` (rpart's scaling by
        R(root)) and ``selected``. The SE counts weights as cases (rpart's ``xstd``):
        weights × c leave R^CV unchanged and divide the SE by sqrt(c).
        With ``compat="rpart"`` the rows are rpart's (its CP list, evaluated at its
        points, rpart's fold priors and loss; docs/rpart.md), ``alpha_prime`` holds
        those points, and rpart's names ``CP``, ``nsplit`` and ``rel error`` are added.
    cptable_ : pandas.DataFrame, rpart's ``fit$cptable``: ``CP``, ``nsplit``,
        ``rel error``, ``xerror``, ``xstd``, the root first.
    alpha_, best_k_ : the chosen α_k and its k (``cv_results_.loc[best_k_]``); ``tree_``
        is T(``alpha_``). ``best_index_``, the 0-based row position, is deprecated.
    folds_ : int array (n_repeats, n_samples), fold of each case (-1: zero weight or
        missing target).
    fold_alphas_ : list (repeats) of lists (folds) of each fold tree's α sequence.
    cv_risk_repeats_, cv_se_repeats_ : arrays (n_repeats, K).
    cv_predictions_ : array (n_samples, K), with ``cv_predictions`` only
        Column k (the row k of ``cv_results_``) holds, for every case, what the tree of
        its fold pruned at α'_k predicts for it: the class *index* into ``classes_``
        (int64, -1 for a case that takes no part; ``classes_[cv_predictions_]`` gives
        the labels; rpart's ``xpred.rpart`` gives that index + 1) or the mean (float64,
        NaN for no part). A case missing a split feature is routed as in prediction
        (``use_surrogate``). R^CV is the mean loss of these predictions.
    cv_proba_ : array (n_samples, K, n_classes), with ``cv_predictions="proba"`` only
        p(j | t) at each of those end nodes, with the fold tree's own priors (NaN for
        no part).
"""


class CARTClassifierCV(_CVMixin, CARTClassifier):
    __doc__ = ("""CART classifier pruned by V-fold cross-validation of the pruning sequence.

    Grows T_max, computes its weakest-link sequence, cross-validates every T_k as in
    docs/maths.md §5 (fold trees grown once each from the presorted sample, scored for
    all α'_k in one descent per held-out case) and keeps the selected subtree. Tree parameters
    are those of :class:`CARTClassifier` (without ``ccp_alpha``; ``cp`` bounds the
    candidates, see below).
    """ + _CV_DOC)

    def __init__(self, criterion="gini", *, priors="empirical", class_weight=None, cost=None,
                 max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_impurity_decrease=0.0, max_leaf_nodes=None, cp=None,
                 categorical_features="from_dtype", max_categories_exhaustive=12,
                 max_surrogate="auto", use_surrogate=2, surrogate_style=0, max_competitor=4,
                 cv=10, stratify=False, n_repeats=1, selection="1se", random_state=0,
                 cv_predictions=False, compat="breiman"):
        super().__init__(criterion, priors=priors, class_weight=class_weight, cost=cost,
                         max_depth=max_depth,
                         min_samples_split=min_samples_split,
                         min_samples_leaf=min_samples_leaf,
                         min_impurity_decrease=min_impurity_decrease,
                         max_leaf_nodes=max_leaf_nodes, cp=cp,
                         categorical_features=categorical_features,
                         max_categories_exhaustive=max_categories_exhaustive,
                         max_surrogate=max_surrogate, use_surrogate=use_surrogate,
                         surrogate_style=surrogate_style, max_competitor=max_competitor,
                         compat=compat)
        del self.ccp_alpha
        self.cv = cv
        self.stratify = stratify
        self.n_repeats = n_repeats
        self.selection = selection
        self.random_state = random_state
        self.cv_predictions = cv_predictions


class CARTRegressorCV(_CVMixin, CARTRegressor):
    __doc__ = ("""CART regression tree pruned by V-fold cross-validation (docs/maths.md §5).

    R^CV is the weighted mean squared held-out error; R(T) the resubstitution MSE.
    Tree parameters are those of :class:`CARTRegressor` (without ``ccp_alpha``; ``cp``
    bounds the candidates, see below).
    """ + _CV_DOC)

    def __init__(self, criterion="squared_error", *, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None, cp=None,
                 categorical_features="from_dtype", max_surrogate="auto", use_surrogate=2,
                 surrogate_style=0, max_competitor=4, cv=10, n_repeats=1, selection="1se",
                 random_state=0, cv_predictions=False, compat="breiman"):
        super().__init__(criterion, max_depth=max_depth, min_samples_split=min_samples_split,
                         min_samples_leaf=min_samples_leaf,
                         min_impurity_decrease=min_impurity_decrease,
                         max_leaf_nodes=max_leaf_nodes, cp=cp,
                         categorical_features=categorical_features,
                         max_surrogate=max_surrogate, use_surrogate=use_surrogate,
                         surrogate_style=surrogate_style, max_competitor=max_competitor,
                         compat=compat)
        del self.ccp_alpha
        self.cv = cv
        self.n_repeats = n_repeats
        self.selection = selection
        self.random_state = random_state
        self.cv_predictions = cv_predictions
