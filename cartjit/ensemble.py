"""Breiman's bagging (1996) and random forests (2001) of CART trees: the estimators.

:class:`RandomForestClassifier` and :class:`RandomForestRegressor` grow B cartjit trees,
each on a bootstrap sample of the cases (integer case weights on one presort), with
``max_features`` features drawn at each node, and store them as one flat forest
(:class:`cartjit.engine.forest.Forest`) predicted in one compiled pass.
:class:`BaggedCARTClassifier` and :class:`BaggedCARTRegressor` are bagging: the same
estimators with ``max_features=None`` (every feature at every node) by default.

The parameters and the data are checked by exactly the single trees' machinery
(:func:`cartjit._prepare.prepare`); the forest's own parameters are checked here. The
work is :mod:`cartjit.engine.forest`; docs/forests.md states the definitions (OOB error,
importance), the storage and the determinism.

**Per-node feature subsets.** ``max_features`` is passed to every tree
(``Settings.max_features``, with a per-tree ``feature_seed``), and the engine's split
search draws m features for each node (:mod:`cartjit.engine.draws`);
:data:`FEATURE_SUBSETS` says the engine does.
"""
from __future__ import annotations

import hashlib
import math
import numbers
import os
import warnings

import numpy as np

from . import _encoding as E
from . import _prepare as P
from . import _validation as V
from .engine import cache as _cache
from .engine import forest as F
from .engine import proximity as PX
from .engine.limits import check_allocation
from .engine.fit import Fitted
from .estimators import (CARTClassifier, CARTRegressor, _Base, _BaseCART,
                         _ClassifierMixin, _RegressorMixin)

__all__ = ["RandomForestClassifier", "RandomForestRegressor", "BaggedCARTClassifier",
           "BaggedCARTRegressor", "FEATURE_SUBSETS"]


def _engine_draws_subsets():
    """Whether the engine's split search draws ``max_features`` features per node (the
    constant ``cartjit.engine.search.FEATURE_SUBSETS``, absent until it does)."""
    from .engine import search

    return bool(getattr(search, "FEATURE_SUBSETS", False))


#: Whether ``max_features`` < p draws a random subset of features at each node. While
#: False, every node searches every feature and a random forest is bagging.
FEATURE_SUBSETS = _engine_draws_subsets()

#: ``max_samples=None`` without replacement: this fraction of the cases per tree
#: (ranger's default sample fraction without replacement, ≈ 1 - 1/e).
NO_REPLACEMENT_FRACTION = 0.632

#: The single tree's parameters a forest passes to every tree (and to its views,
#: :attr:`_BaseForest.estimators_`).
_TREE_PARAMS = ("criterion", "max_depth", "min_samples_split", "min_samples_leaf",
                "min_impurity_decrease", "max_leaf_nodes", "ccp_alpha", "cp",
                "categorical_features", "max_surrogate", "use_surrogate",
                "surrogate_style", "max_competitor")
_CLASS_PARAMS = ("priors", "class_weight", "cost", "max_categories_exhaustive")


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def resolve_max_features(value, n_features):
    """Breiman's m from ``max_features``: None (every feature: bagging), ``"sqrt"``
    (⌊√p⌋), ``"log2"`` (⌊log₂ p⌋), an int in [1, p] or a fraction in (0, 1] (⌊f p⌋), each
    at least 1."""
    p = int(n_features)
    if value is None:
        return p
    if isinstance(value, str):
        if value == "sqrt":
            return max(1, int(math.isqrt(p)))
        if value == "log2":
            return max(1, int(math.floor(math.log2(p)))) if p > 0 else 1
        raise ValueError(f"max_features must be None, 'sqrt', 'log2', an int in [1, "
                         f"n_features] or a float in (0, 1], got {value!r}")
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"max_features must be None, 'sqrt', 'log2', an int or a float, "
                        f"got {value!r}")
    if isinstance(value, numbers.Integral):
        if not 1 <= value <= p:
            raise ValueError(f"max_features must be in [1, n_features] = [1, {p}] as an "
                             f"int (features drawn at each node), got {value}")
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not (0.0 < f <= 1.0):
            raise ValueError(f"max_features must be in (0, 1] as a float (a fraction of "
                             f"the {p} features), got {value!r}")
        return max(1, int(f * p))
    raise TypeError(f"max_features must be None, 'sqrt', 'log2', an int or a float, got "
                    f"{value!r}")


def resolve_max_samples(value, n, bootstrap, replace):
    """Cases drawn per tree from ``max_samples`` over the n cases that take part."""
    if not bootstrap:
        if value is not None:
            raise ValueError(f"max_samples={value!r} sets the size of each tree's sample, "
                             "which needs bootstrap=True (without it every tree takes "
                             "every case)")
        return n
    if value is None:
        return n if replace else max(1, int(round(NO_REPLACEMENT_FRACTION * n)))
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"max_samples must be None, an int >= 1 or a float in (0, 1], got "
                        f"{value!r}")
    if isinstance(value, numbers.Integral):
        if value < 1:
            raise ValueError(f"max_samples must be >= 1 as an int (cases drawn per tree), "
                             f"got {value}: a tree needs at least one case")
        if not replace and value > n:
            raise ValueError(f"max_samples={value} cases cannot be drawn without "
                             f"replacement from the {n} cases that take part; give at "
                             f"most {n}, or replace=True")
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not (0.0 < f <= 1.0):
            raise ValueError(f"max_samples must be in (0, 1] as a float (a fraction of the "
                             f"cases), got {value!r}")
        size = int(round(f * n))
        if size < 1:
            raise ValueError(f"max_samples={value!r} draws round({f} * {n}) = 0 cases per "
                             "tree: a tree needs at least one case; give a larger "
                             "fraction or an int")
        return size
    raise TypeError(f"max_samples must be None, an int >= 1 or a float in (0, 1], got "
                    f"{value!r}")


def resolve_n_jobs(value):
    """Python threads that grow trees: None is 1, -1 every CPU, else an int >= 1."""
    if value is None:
        return 1
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"n_jobs must be None, -1 or an int >= 1, got {value!r}")
    if value == -1:
        return max(1, os.cpu_count() or 1)
    if value < 1:
        raise ValueError(f"n_jobs must be None, -1 (every CPU) or an int >= 1, got {value}")
    return int(value)


def resolve_random_state(value):
    """The forest's seed: an int >= 0; None means 0 (results always reproducible, as
    for the CV estimators)."""
    if value is None:
        return 0
    return V.check_int(value, "random_state", low=0)


class _BaseForest(_Base):
    """Shared fitting, prediction, out-of-bag estimates and importances."""

    _is_classifier = False
    _tree_class = CARTRegressor

    def __sklearn_is_fitted__(self):
        return hasattr(self, "forest_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = False
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_y": True, "allow_nan": True}

    # the single tree's input checks and scores, shared
    _score_inputs = _BaseCART._score_inputs
    _check_predict_X = _BaseCART._check_predict_X

    def _check_fitted(self):
        if not hasattr(self, "forest_"):
            raise V.not_fitted_error(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator.")

    # -- parameters ------------------------------------------------------------------
    def _check_forest_params(self):
        """The forest's own parameters that do not depend on the data, checked."""
        V.check_int(self.n_estimators, "n_estimators", low=1)
        bootstrap = _check_bool(self.bootstrap, "bootstrap")
        replace = _check_bool(self.replace, "replace")
        oob_score = _check_bool(self.oob_score, "oob_score")
        oob_importance = _check_bool(self.oob_importance, "oob_importance")
        for name, asked in (("oob_score", oob_score), ("oob_importance", oob_importance)):
            if asked and not bootstrap:
                raise ValueError(
                    f"{name}=True needs out-of-bag cases, which only bootstrap=True "
                    "leaves: with bootstrap=False every tree is grown on every case")
        voting = getattr(self, "voting", "proba")
        if voting not in F.VOTING:
            raise ValueError(f"voting must be one of {list(F.VOTING)}, got {voting!r}")
        if self.prune is not None and not (isinstance(self.prune, str)
                                           and self.prune == "cv"):
            raise ValueError(f"prune must be None or 'cv', got {self.prune!r}")
        if self.prune == "cv":
            for name in ("ccp_alpha", "cp"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"prune='cv' chooses each tree's alpha by cross-validation of its "
                        f"own sample; {name}={getattr(self, name)!r} would set it too: "
                        f"give one of them")
        V.check_int(self.prune_folds, "prune_folds", low=2)
        P.select_index(np.zeros(1), np.zeros(1), self.prune_selection)  # checks it
        resolve_max_features(self.max_features, 1 << 30)  # the type and sign
        return bootstrap, replace, voting

    def _plan(self, n, p, bootstrap, replace, voting, prep):
        m = resolve_max_features(self.max_features, p)
        n_samples = resolve_max_samples(self.max_samples, n, bootstrap, replace)
        if (self.oob_score or self.oob_importance) and not replace and n_samples >= n:
            raise ValueError(
                f"oob_score/oob_importance need out-of-bag cases, but max_samples draws "
                f"all {n} cases without replacement: give max_samples < {n}, or "
                "replace=True")
        return F.ForestPlan(int(self.n_estimators), 0 if m >= p else m, bootstrap,
                            replace, n_samples, resolve_random_state(self.random_state),
                            prep.ccp_alpha, prep.cp, voting,
                            int(self.prune_folds) if self.prune == "cv" else 0,
                            self.prune_selection), m

    # -- fit -------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None, scheduler=None):
        """Grow the forest on (X, y), optionally with case weights (each tree's weights
        are these times its bootstrap counts). Returns ``self``.

        ``scheduler``: None grows the trees here, on ``n_jobs`` threads; the address of
        a Dask scheduler (``"tcp://host:8786"``) or a ``distributed.Client`` grows them
        on that cluster's workers, the data shipped once to each (needs
        ``cartjit[dask]``; docs/forests.md, "Threads and clusters"). The forest is the
        same bit for bit; ``cluster_`` then records what ran where."""
        bootstrap, replace, voting = self._check_forest_params()
        n_jobs = resolve_n_jobs(self.n_jobs)
        resolve_random_state(self.random_state)
        if scheduler is not None:
            from . import _dask
            _dask.check_scheduler(scheduler)
        prep = P.prepare(self, X, y, sample_weight)
        problem = prep.problem
        n, p = problem.X.shape
        plan, m = self._plan(n, p, bootstrap, replace, voting, prep)
        record = None
        if scheduler is None:
            res = F.grow_forest(problem, prep.settings, plan, n_jobs)
        else:
            res, record = _dask.grow_forest_on(scheduler, problem, prep.settings, plan)
        for name in list(self.__dict__):  # an earlier fit's attributes
            if name.endswith("_") and not name.startswith("__") or name == "_views":
                del self.__dict__[name]
        self.forest_ = res.forest
        if record is not None:
            self.cluster_ = record
        self._trees = res.trees  # a TreeStore: each node's columns once
        self._train_digest = _digest(problem.X)
        self._tree_importance = res.importance
        self._plan_ = plan
        self._n_jobs = n_jobs
        self._rows = prep.rows
        self._n_rows = n if prep.rows is None else int(prep.rows.shape[0])
        self.tree_seeds_ = res.feature_seeds
        self.tree_alphas_ = self._trees.alphas.copy()
        self.n_features_in_ = p
        self.max_features_ = m
        self.max_samples_ = plan.n_samples
        self.max_surrogate_ = int(prep.settings.max_surrogate)
        self._use_surrogate = int(prep.settings.use_surrogate)
        self._encoding = prep.encoding
        self._settings = prep.settings
        self.is_categorical_ = prep.encoding.is_categorical.copy()
        self.categories_ = list(prep.encoding.categories)
        if prep.names is not None:
            self.feature_names_in_ = prep.names
        # what the views of the trees need of the fit, without the data
        self._prep_view = prep._replace(
            problem=problem._replace(X=np.empty((0, p)), y_class=np.empty(0, np.int32),
                                     y_reg=np.empty(0), w=np.empty(0)),
            labels=None, rows=None)
        if self._is_classifier:
            self.classes_ = prep.classes
            self.n_classes_ = int(prep.classes.shape[0])
            self.cost_ = prep.settings.cost
        if self.oob_score or self.oob_importance:
            self._fit_oob(problem, prep.settings, res, plan)
        return self

    def _over_rows(self, values, fill):
        """Per-case values over the caller's rows (``fill`` where a row takes no part)."""
        if self._rows is None:
            return values
        out = np.full((self._n_rows,) + values.shape[1:], fill, dtype=values.dtype)
        out[self._rows] = values
        return out

    def _fit_oob(self, problem, settings, res, plan):
        targets = F.oob_targets(problem, settings, plan.voting)
        priors = F.risk_priors(settings)
        _cache.doing("the kernels of forest prediction")
        oob = F.oob_estimates(res.forest, problem.X, res.inbag, targets, priors,
                              self._n_jobs)
        missing = int(np.count_nonzero(oob.n_trees == 0))
        if missing:
            warnings.warn(
                f"{missing} of the {problem.X.shape[0]} cases are in the bag of every "
                "tree: they have no out-of-bag prediction (NaN) and are left out of the "
                "OOB estimates; more trees would give them one", UserWarning,
                stacklevel=3)
        has = oob.n_trees > 0
        w = np.ones(problem.X.shape[0]) if problem.unit_weights else problem.w
        self.oob_error_curve_ = oob.curve
        self.oob_error_ = float(oob.curve[-1])
        self.oob_n_trees_ = self._over_rows(oob.n_trees, 0)
        if self._is_classifier:
            self.oob_decision_function_ = self._over_rows(oob.value, np.nan)
            self.oob_error_curve_by_class_ = oob.class_curve
            J = self.n_classes_
            conf = np.zeros((J, J))
            np.add.at(conf, (problem.y_class[has], oob.pred[has]), w[has])
            self.oob_confusion_ = conf
            self.oob_score_ = (float(np.trace(conf) / conf.sum()) if conf.sum() > 0
                               else float("nan"))
        else:
            pred = oob.value[:, 0]
            self.oob_prediction_ = self._over_rows(pred, np.nan)
            y = problem.y_reg
            self.oob_score_ = _r2(y[has], pred[has], w[has])
            mean = np.average(y, weights=w)
            var = float(np.average((y - mean) ** 2, weights=w))
            self.oob_rsq_ = (1.0 - self.oob_error_ / var) if var > 0 else float("nan")
        if self.oob_importance:
            imp = F.permutation_importance(res.forest, problem.X, res.inbag, targets,
                                           priors, plan.random_state, self._n_jobs)
            self.oob_importances_ = imp.raw
            self.oob_importances_se_ = imp.se
            self.oob_importances_scaled_ = imp.scaled
            self.oob_importances_per_tree_ = imp.delta
            if self._is_classifier:
                self.oob_importances_by_class_ = imp.raw_by_class
                self.oob_importances_by_class_scaled_ = imp.scaled_by_class

    # -- the trees -------------------------------------------------------------------
    @property
    def n_estimators_(self):
        """The number of trees grown."""
        self._check_fitted()
        return self.forest_.n_trees

    def _tree_params(self):
        names = _TREE_PARAMS + (_CLASS_PARAMS if self._is_classifier else ())
        return {name: getattr(self, name) for name in names}

    @property
    def estimators_(self):
        """The trees as fitted single-tree estimators (:class:`cartjit.CARTClassifier`
        or :class:`cartjit.CARTRegressor`), one per tree, built on first access and
        sharing the forest's arrays: ``tree_`` (pruned when ``ccp_alpha``/``cp`` is
        set), ``tree_max_``, and for classification ``priors_`` and
        ``class_weight_totals_`` of the tree's own sample. They predict, print
        (``export_text``) and prune like any fitted tree."""
        self._check_fitted()
        views = self.__dict__.get("_views")
        if views is None:
            views = [self._view(k) for k in range(self.forest_.n_trees)]
            self.__dict__["_views"] = views
        return views

    def _view(self, k):
        fit = self._trees[k]
        cls = self._tree_class
        if fit.class_totals is not None and not np.all(fit.class_totals > 0):
            cls = _TreeWithAbsentClasses
        est = cls(**self._tree_params())
        est._set_fitted(Fitted(fit.tree_max, fit.priors, fit.class_totals, ()),
                        self._prep_view, None)
        est.tree_ = fit.tree
        if self.prune == "cv" and fit.alpha is not None:
            est.ccp_alpha = fit.alpha  # refitted on its sample, the same pruned tree
        return est

    def inbag_counts(self, tree=None):
        """How many times each case is in the sample of ``tree`` (an int; None: every
        tree, an int array (n_estimators, n_samples)), over the rows given to ``fit``
        (0 for a row that takes no part). Drawn again from the seeds: the sample of
        tree k is a function of ``random_state`` and k alone."""
        self._check_fitted()
        plan = self._plan_
        n = int(np.count_nonzero(self._rows)) if self._rows is not None else self._n_rows
        trees = range(plan.n_estimators) if tree is None else [int(tree)]
        out = np.stack([self._over_rows(F.draw_counts(plan, n, b)[0], 0) for b in trees])
        return out if tree is None else out[0]

    # -- prediction ------------------------------------------------------------------
    def _sums(self, X):
        X = self._check_predict_X(X)
        _cache.doing("the kernels of forest prediction")
        return F.forest_sums(self.forest_, X, self._n_jobs)

    def apply(self, X):
        """The node where each row ends in each tree: int64 (n_samples, n_estimators),
        node ids of each tree's own ``tree_`` (a leaf, or an internal node where a
        missing value stops it)."""
        X = self._check_predict_X(X)
        _cache.doing("the kernels of forest prediction")
        return F.forest_apply(self.forest_, X, self._n_jobs)

    # -- importances -----------------------------------------------------------------
    @property
    def feature_importances_(self):
        """Impurity-based importances (MDI), scikit-learn's definition: each tree's
        normalised ``feature_importances_`` (Σ p(t) Δi(t) per feature over its split
        nodes), averaged over the trees that split at all, normalised to sum to 1 (all
        zeros when no tree splits)."""
        self._check_fitted()
        per_tree = self._tree_importance
        splits = per_tree.sum(axis=1) > 0
        if not splits.any():
            return np.zeros(self.n_features_in_)
        mean = per_tree[splits].mean(axis=0)
        return mean / mean.sum()

    def importance_table(self):
        """The importances as a pandas DataFrame indexed by feature: ``mdi``
        (:attr:`feature_importances_`) and, after a fit with ``oob_importance=True``,
        ``raw``, ``se`` and ``scaled`` (Breiman's permutation importance; randomForest's
        ``MeanDecreaseAccuracy``/``%IncMSE`` is ``scaled``) and, for classification, a
        column of raw importance per class."""
        import pandas as pd  # imported here: pandas costs time at `import cartjit`

        self._check_fitted()
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = [f"x{j}" for j in range(self.n_features_in_)]
        table = {"mdi": self.feature_importances_}
        if hasattr(self, "oob_importances_"):
            table.update(raw=self.oob_importances_, se=self.oob_importances_se_,
                         scaled=self.oob_importances_scaled_)
            if self._is_classifier:
                for j, c in enumerate(self.classes_.tolist()):
                    table[f"raw[{c}]"] = self.oob_importances_by_class_[:, j]
        return pd.DataFrame(table, index=pd.Index([str(n) for n in names], dtype=object))

    # -- proximities -----------------------------------------------------------------
    def _proximity_rows(self, X, name, oob):
        """X checked and encoded as for prediction; with ``oob`` it must be the rows
        given to ``fit``, in order (the in-bag counts are per row)."""
        X = self._check_predict_X(X) if name == "X" else self._encode(X, name)
        if oob:
            rows = X if self._rows is None or X.shape[0] != self._n_rows else X[self._rows]
            digest = getattr(self, "_train_digest", None)
            if X.shape[0] != self._n_rows or (digest is not None and _digest(rows) != digest):
                raise ValueError(
                    f"oob=True: {name} must be the {self._n_rows} rows given to fit, in the "
                    f"same order (out-of-bag proximities count the trees for which both "
                    f"cases are out of the bag), got {X.shape[0]} rows"
                    + (" with other values" if X.shape[0] == self._n_rows else "")
                    + "; give oob=False for proximities over every tree")
        return X

    def _encode(self, X, name):
        shape = np.shape(X)
        if len(shape) != 2 or shape[1] != self.n_features_in_:
            raise ValueError(f"{name} must be 2-d with the {self.n_features_in_} features "
                             f"of fit, got shape {shape}")
        V.check_feature_names(X, getattr(self, "feature_names_in_", None),
                              type(self).__name__)
        return E.transform(X, self._encoding, self.n_features_in_, self, name=name)

    def _proximity_setup(self, X, Y, oob):
        """``(X, Y, oob)``: ``oob`` checked and resolved (None: out of bag among the rows
        of X, every tree between X and Y), X and Y checked and encoded."""
        if oob is not None and not isinstance(oob, (bool, np.bool_)):
            raise TypeError(f"oob must be True, False or None, got {oob!r}")
        if oob is None:
            oob = Y is None
        if oob and Y is not None:
            raise ValueError("oob=True gives the proximities of the training cases among "
                             "themselves; between X and Y give oob=False (every tree)")
        Xc = self._proximity_rows(X, "X", oob)
        Yc = None if Y is None else self._proximity_rows(Y, "Y", False)
        return Xc, Yc, bool(oob)

    def _members(self, Xc, Yc, oob):
        """The end nodes of X's rows, their out-of-bag bits (None: every tree) and the
        member lists of the reference cases: Y's rows, or X's own."""
        _cache.doing("the kernels of forest proximities")
        ends = F.forest_apply(self.forest_, Xc, self._n_jobs)
        bits = PX.oob_bits(self.inbag_counts() > 0) if oob else None
        ref_ends = ends if Yc is None else F.forest_apply(self.forest_, Yc, self._n_jobs)
        return ends, bits, PX.leaf_members(ref_ends, self.forest_.roots, bits)

    def proximity(self, X, Y=None, *, oob=None):
        """Breiman's proximities (docs/forests.md, "Proximities, outliers, MDS and the
        forests' plots"): the fraction of trees in which two cases end in the same
        node.

        With Y None, the (n, n) proximities among the rows of X: out of bag by default
        (``oob=None`` or True; X must then be the rows given to ``fit``, in order), the
        fraction of the trees for which both cases are out of the bag in which they
        share a node (randomForest's ``oob.prox=TRUE``; 0 for a pair never out of bag
        together); ``oob=False`` counts every tree (all-case proximity) and takes any
        rows. With Y, the (n, m) all-case proximities of the rows of X to those of Y
        (for example new cases to the training cases). 1 on the diagonal; symmetric.

        The matrix takes 8 n m bytes: a request over ``CARTJIT_MEMORY_LIMIT`` is refused
        with a ``ValueError`` (:meth:`nearest` needs no dense matrix)."""
        self._check_fitted()
        Xc, Yc, oob = self._proximity_setup(X, Y, oob)
        n, m = Xc.shape[0], Xc.shape[0] if Yc is None else Yc.shape[0]
        check_allocation(8 * n * m, f"proximity: a dense {n} × {m} float64 matrix",
                         "nearest(X, k) gives each case's k nearest cases without it")
        ends, bits, ref = self._members(Xc, Yc, oob)
        return PX.proximity_matrix(ends, ref, bits, diagonal=Yc is None,
                                   n_threads=self._n_jobs)

    def nearest(self, X, k, Y=None, *, oob=None):
        """The k cases of largest proximity to each row of X, without the dense matrix:
        ``(index, proximity)``, int64 and float64 arrays (n, k), the nearest first, ties
        to the smaller index. With Y None they are the other rows of X (the case itself
        left out; k <= n - 1), out of bag as :meth:`proximity` by default; with Y, rows
        of Y (k <= m), every tree. Where fewer than k cases share a node with a case,
        cases of proximity 0 fill its row in index order. The result equals a stable
        sort by decreasing proximity of each row of :meth:`proximity`."""
        self._check_fitted()
        Xc, Yc, oob = self._proximity_setup(X, Y, oob)
        n_ref = Xc.shape[0] - 1 if Yc is None else Yc.shape[0]
        V.check_int(k, "k", low=1)
        if k > n_ref:
            raise ValueError(f"k must be in [1, {n_ref}] (the "
                             + ("other rows of X" if Yc is None else "rows of Y")
                             + f"), got {k}")
        n_trees = self.forest_.n_trees
        check_allocation(12 * (Xc.shape[0] + (0 if Yc is None else Yc.shape[0])) * n_trees,
                         f"nearest: the end nodes of {Xc.shape[0]} cases in {n_trees} trees",
                         "give fewer rows of X at a time (with Y), or grow fewer trees")
        ends, bits, ref = self._members(Xc, Yc, oob)
        return PX.nearest(ends, ref, int(k), bits, diagonal=Yc is None,
                          n_threads=self._n_jobs)

    def outlier(self, X, y=None, *, oob=True):
        """Breiman & Cutler's outlier measure of each row of X (randomForest's
        ``outlier``): for case i of class j, n / Σ_{k of class j} prox(i, k)², normalised
        within each class by its median and MAD (1.4826 · the median absolute
        deviation, R's ``mad``). ``y`` gives each row's class (for a classifier, the
        training targets); None puts every case in one class (the measure randomForest
        offers a regression through ``outlier(proximity)``). Proximities as
        :meth:`proximity` (out of bag by default); large values mark cases unlike the
        rest of their class."""
        self._check_fitted()
        oob = self._check_oob(oob)
        if y is not None:
            y = np.asarray(y)
            n = len(X)
            if y.ndim != 1 or y.shape[0] != n:
                raise ValueError(f"y must be one label per row of X ({n}), got shape "
                                 f"{y.shape}")
        prox = self.proximity(X, oob=oob)
        return PX.outlier_measure(prox, np.zeros(prox.shape[0]) if y is None else y)

    def proximity_mds(self, X, n_components=2, *, oob=True):
        """Classical multidimensional scaling of 1 - proximity (randomForest's
        ``MDSplot``, R's ``cmdscale``): ``(coordinates, eigenvalues)``, the rows of X
        in ``n_components`` dimensions (fewer when fewer eigenvalues are positive) and
        every eigenvalue of the doubly centred matrix, largest first."""
        self._check_fitted()
        V.check_int(n_components, "n_components", low=1)
        prox = self.proximity(X, oob=self._check_oob(oob))
        if n_components > prox.shape[0]:
            raise ValueError(f"n_components must be <= the {prox.shape[0]} rows of X, got "
                             f"{n_components}")
        return PX.classical_scaling(1.0 - prox, int(n_components))

    @staticmethod
    def _check_oob(oob):
        if not isinstance(oob, (bool, np.bool_)):
            raise TypeError(f"oob must be True or False, got {oob!r}")
        return bool(oob)


class _TreeWithAbsentClasses(CARTClassifier):
    """A tree of a forest whose sample lacks some class (N_j = 0; a single tree drops
    such a class from ``classes_``): p(j | t) = 0 for it."""

    def _leaf_proba(self, leaves):
        return F.class_proba(self.tree_.value[leaves], self.priors_,
                             self.class_weight_totals_)


def _digest(X):
    """A fingerprint of the encoded training rows (NaN made one value), so that the
    out-of-bag proximities can check they are given the rows ``fit`` was."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    canon = np.where(np.isnan(X), np.nan, X)
    h = hashlib.blake2b(repr(canon.shape).encode(), digest_size=16)
    h.update(canon.tobytes())
    return h.hexdigest()


def _r2(y, pred, w):
    """Weighted R² of ``pred`` (NaN without cases)."""
    if y.shape[0] == 0:
        return float("nan")
    ss_res = float(np.sum(w * (y - pred) ** 2))
    ss_tot = float(np.sum(w * (y - np.average(y, weights=w)) ** 2))
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot


_FOREST_DOC = """
    Parameters
    ----------
    n_estimators : int >= 1
        B, the number of trees.
    max_features : None, "sqrt", "log2", int or float
        Breiman's m, the features drawn at random at each node for its split search:
        None every feature (bagging), "sqrt" ⌊√p⌋, "log2" ⌊log₂ p⌋, an int in [1, p], a
        float f in (0, 1] ⌊f p⌋ (at least 1). The resolved m is ``max_features_``. A
        node none of whose m features can split is a leaf (Breiman's rule).
    bootstrap : bool, default True
        Grow each tree on a sample of the cases; False grows every tree on every case.
    replace : bool, default True
        Draw the sample with replacement (bootstrap counts, Breiman's bagging) or without
        (a subsample; each drawn case has count 1).
    max_samples : None, int or float
        The sample size of each tree: an int (without replacement at most n), a fraction
        in (0, 1] of the n cases that take part (rounded; refused when it rounds to 0),
        or None: n with replacement, 0.632 n without (ranger's default). Needs
        ``bootstrap=True``. The resolved size is ``max_samples_``.
    oob_score : bool, default False
        Compute the out-of-bag estimates (below). Needs ``bootstrap=True``.
    oob_importance : bool, default False
        Compute Breiman's OOB permutation importance (below; it implies the OOB pass).
        Needs ``bootstrap=True``.
    random_state : int >= 0 or None, default 0
        The seed. Tree k's sample, the seed of its per-node feature draws and its
        permutations come from ``SeedSequence(random_state, spawn_key=(k, ...))``: tree k is
        the same whatever ``n_jobs`` and ``n_estimators``. None means 0 (as for the CV
        estimators: results are always reproducible).
    n_jobs : int or None, default None
        Python threads growing trees (each tree on one thread; the kernels release the
        GIL) and Numba threads predicting: None is 1, -1 every CPU. The forest is
        bit-identical for any value.
    ccp_alpha, cp : float or None
        Bagging of pruned trees: each tree is pruned to T(α) of its own sequence, with α
        = ``ccp_alpha``, or α = ``cp`` · R(root) of that tree (docs/maths.md §4). None
        (both) keeps every tree's T_max.
    prune : None or "cv", default None
        "cv": each tree is pruned by the V-fold cross-validation of its own sample
        (Breiman's bagging of CV-pruned trees; the single tree's CV, docs/maths.md §5):
        V = ``prune_folds`` (capped at the sample's distinct cases), the subtree chosen
        by ``prune_selection`` ("min", "1se" or a number m), the folds seeded per tree
        from ``random_state``. A case drawn several times is one case of weight its
        count, so its copies share a fold. Not with ``ccp_alpha`` or ``cp``. Each tree's
        sample is copied (X's in-bag rows) and presorted for its CV.
    prune_folds : int >= 2, default 10
    prune_selection : "min", "1se" or float, default "1se"

    The tree parameters are those of the single tree (docs in its class), passed to
    every tree; ``max_competitor`` defaults to 0 here (competitors are only reported,
    :func:`cartjit.summary` of a tree of ``estimators_``), and ``compat`` is not offered
    (rpart's rules are for one tree).

    Attributes
    ----------
    forest_ : cartjit.engine.forest.Forest
        The trees as one flat structure (docs/forests.md).
    estimators_ : list of fitted single-tree estimators (views of the trees).
    n_estimators_, n_features_in_, feature_names_in_ (DataFrame input), max_features_,
    max_samples_, max_surrogate_, is_categorical_, categories_ : as named.
    tree_seeds_ : int64 (n_estimators,), each tree's per-node feature seed.
    tree_alphas_ : float64 (n_estimators,), the α each tree was pruned at (NaN: T_max).
    feature_importances_ : MDI (scikit-learn's definition), summing to 1.
    oob_score_ : accuracy (classification) or R² (regression) of the OOB predictions,
        weighted by ``sample_weight``, over the cases that have one.
    oob_error_ : the OOB error: the weighted mean per-case loss of docs/maths.md §5
        (misclassification cost with the fitted priors and costs, which with empirical
        priors and 0-1 cost is the OOB misclassification rate), or the OOB mean squared
        error for regression.
    oob_error_curve_ : float64 (n_estimators,), the OOB error after the first b trees
        (b = 1..B), over the cases out of bag at least once among them
        (randomForest's ``err.rate[, "OOB"]`` / ``mse``).
    oob_n_trees_ : int (n_samples,), the trees for which each case is out of bag.
    oob_importances_, oob_importances_se_, oob_importances_scaled_ : (n_features,),
        with ``oob_importance=True``: Breiman's permutation importance, the mean over the
        trees of the increase of each tree's OOB error when the feature is permuted
        among its OOB cases, its standard error (randomForest's) and their ratio
        (randomForest's scaled importance); ``oob_importances_per_tree_`` (B, p) holds
        each tree's increase.
"""


class RandomForestClassifier(_ClassifierMixin, _BaseForest):
    __doc__ = ("""Random forest of CART classification trees (Breiman 2001).

    Tree parameters (``criterion``, ``priors``, ``class_weight``, ``cost``,
    ``max_depth``, ``min_samples_split``, ``min_samples_leaf``,
    ``min_impurity_decrease``, ``max_leaf_nodes``, ``categorical_features``,
    ``max_categories_exhaustive``, ``max_surrogate``, ``use_surrogate``,
    ``surrogate_style``, ``max_competitor``) are :class:`cartjit.CARTClassifier`'s.
    With empirical priors each tree's priors are its own sample's class proportions.

    voting : "proba" or "vote", default "proba"
        "proba" averages the trees' class probabilities p(j | t) at the case's leaf
        (scikit-learn's forests) and predicts the class of least expected cost under
        that average (the largest probability with 0-1 cost); "vote" counts each tree's
        label j*(t) as a vote (randomForest), ``predict_proba`` being the vote shares,
        and predicts the most voted class. Ties go to the lowest class index.

    Classification attributes: ``classes_``, ``n_classes_``, ``cost_``,
    ``oob_decision_function_`` (n_samples, n_classes: the average over each case's OOB
    trees; NaN for a case never out of bag or taking no part), ``oob_confusion_``
    (n_classes × n_classes, weight of the cases of true class j (row) with OOB
    prediction i (column)), ``oob_error_curve_by_class_`` (n_estimators, n_classes: the
    weighted mean cost of each class's cases out of bag among the first b trees;
    randomForest's ``err.rate`` per class), ``oob_importances_by_class_`` and
    ``oob_importances_by_class_scaled_`` (n_features, n_classes).
    """ + _FOREST_DOC)

    _is_classifier = True
    _tree_class = CARTClassifier

    def __init__(self, n_estimators=100, *, criterion="gini", max_features="sqrt",
                 bootstrap=True, replace=True, max_samples=None, oob_score=False,
                 oob_importance=False, voting="proba", priors="empirical",
                 class_weight=None, cost=None, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None, cp=None, categorical_features="from_dtype",
                 max_categories_exhaustive=12, max_surrogate="auto", use_surrogate=2,
                 surrogate_style=0, max_competitor=0, prune=None, prune_folds=10,
                 prune_selection="1se", random_state=0, n_jobs=None):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.replace = replace
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.oob_importance = oob_importance
        self.voting = voting
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
        self.prune = prune
        self.prune_folds = prune_folds
        self.prune_selection = prune_selection
        self.random_state = random_state
        self.n_jobs = n_jobs

    def predict_proba(self, X):
        """The forest's class probabilities (columns: ``classes_``): the average of the
        trees' p(j | t), or their vote shares (``voting="vote"``)."""
        return self._sums(X) / self.forest_.n_trees

    def predict_log_proba(self, X):
        """Natural logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of least expected cost under :meth:`predict_proba` (the most
        probable with 0-1 cost; the most voted with ``voting="vote"``)."""
        proba = self.predict_proba(X)
        use_cost = self.voting == "proba" and not self._settings.default_cost
        return self.classes_[F.decide(proba, self.cost_, use_cost)]

    score = CARTClassifier.score


class RandomForestRegressor(_RegressorMixin, _BaseForest):
    __doc__ = ("""Random forest of CART regression trees (Breiman 2001).

    Tree parameters (``criterion``, ``max_depth``, ``min_samples_split``,
    ``min_samples_leaf``, ``min_impurity_decrease``, ``max_leaf_nodes``,
    ``categorical_features``, ``max_surrogate``, ``use_surrogate``,
    ``surrogate_style``, ``max_competitor``) are :class:`cartjit.CARTRegressor`'s. The
    prediction is the average of the trees' leaf means. ``max_features`` defaults to
    1/3 (⌊p/3⌋, randomForest's m for regression).

    Regression attributes: ``oob_prediction_`` (n_samples: the average over each case's
    OOB trees; NaN for a case never out of bag or taking no part), ``oob_rsq_`` (1 -
    ``oob_error_`` / Var(y), Var over every learning case, weighted: randomForest's
    ``rsq``; × 100 its "% Var explained").
    """ + _FOREST_DOC)

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_features=1 / 3,
                 bootstrap=True, replace=True, max_samples=None, oob_score=False,
                 oob_importance=False, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None, cp=None, categorical_features="from_dtype",
                 max_surrogate="auto", use_surrogate=2, surrogate_style=0,
                 max_competitor=0, prune=None, prune_folds=10, prune_selection="1se",
                 random_state=0, n_jobs=None):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.replace = replace
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.oob_importance = oob_importance
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
        self.prune = prune
        self.prune_folds = prune_folds
        self.prune_selection = prune_selection
        self.random_state = random_state
        self.n_jobs = n_jobs

    def predict(self, X):
        """The average of the trees' means ȳ(t) at each row's end nodes."""
        return self._sums(X)[:, 0] / self.forest_.n_trees

    score = CARTRegressor.score


class BaggedCARTClassifier(RandomForestClassifier):
    __doc__ = ("""Breiman's bagging (1996) of CART classification trees.

    :class:`RandomForestClassifier` with ``max_features=None`` by default: every node
    searches every feature, and the trees differ by their bootstrap samples only. With
    ``ccp_alpha`` or ``cp`` each tree is pruned (Breiman bagged pruned trees). The
    parameters and attributes are :class:`RandomForestClassifier`'s.
    """)

    def __init__(self, n_estimators=100, *, criterion="gini", max_features=None,
                 bootstrap=True, replace=True, max_samples=None, oob_score=False,
                 oob_importance=False, voting="proba", priors="empirical",
                 class_weight=None, cost=None, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None, cp=None, categorical_features="from_dtype",
                 max_categories_exhaustive=12, max_surrogate="auto", use_surrogate=2,
                 surrogate_style=0, max_competitor=0, prune=None, prune_folds=10,
                 prune_selection="1se", random_state=0, n_jobs=None):
        super().__init__(
            n_estimators, criterion=criterion, max_features=max_features,
            bootstrap=bootstrap, replace=replace, max_samples=max_samples,
            oob_score=oob_score, oob_importance=oob_importance, voting=voting,
            priors=priors, class_weight=class_weight, cost=cost, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_impurity_decrease=min_impurity_decrease, max_leaf_nodes=max_leaf_nodes,
            ccp_alpha=ccp_alpha, cp=cp, categorical_features=categorical_features,
            max_categories_exhaustive=max_categories_exhaustive,
            max_surrogate=max_surrogate, use_surrogate=use_surrogate,
            surrogate_style=surrogate_style, max_competitor=max_competitor, prune=prune,
            prune_folds=prune_folds, prune_selection=prune_selection,
            random_state=random_state, n_jobs=n_jobs)


class BaggedCARTRegressor(RandomForestRegressor):
    __doc__ = ("""Breiman's bagging (1996) of CART regression trees.

    :class:`RandomForestRegressor` with ``max_features=None`` by default (every feature
    at every node). The parameters and attributes are :class:`RandomForestRegressor`'s.
    """)

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_features=None,
                 bootstrap=True, replace=True, max_samples=None, oob_score=False,
                 oob_importance=False, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, max_leaf_nodes=None,
                 ccp_alpha=None, cp=None, categorical_features="from_dtype",
                 max_surrogate="auto", use_surrogate=2, surrogate_style=0,
                 max_competitor=0, prune=None, prune_folds=10, prune_selection="1se",
                 random_state=0, n_jobs=None):
        super().__init__(
            n_estimators, criterion=criterion, max_features=max_features,
            bootstrap=bootstrap, replace=replace, max_samples=max_samples,
            oob_score=oob_score, oob_importance=oob_importance, max_depth=max_depth,
            min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
            min_impurity_decrease=min_impurity_decrease, max_leaf_nodes=max_leaf_nodes,
            ccp_alpha=ccp_alpha, cp=cp, categorical_features=categorical_features,
            max_surrogate=max_surrogate, use_surrogate=use_surrogate,
            surrogate_style=surrogate_style, max_competitor=max_competitor, prune=prune,
            prune_folds=prune_folds, prune_selection=prune_selection,
            random_state=random_state, n_jobs=n_jobs)
