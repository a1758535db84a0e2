"""Model files of the forests: the layout and the checks :mod:`cartjit._modelfile` uses for
:class:`~cartjit.RandomForestClassifier`, :class:`~cartjit.RandomForestRegressor`,
:class:`~cartjit.BaggedCARTClassifier` and :class:`~cartjit.BaggedCARTRegressor`.

A forest file is a model file (the same zip of ``.npy`` members and ``metadata.json``,
read by the same strict parser; format 2). It stores each tree once, as T_max: the B
trees' node arrays concatenated into one flat array per column of
:class:`cartjit.engine.tree.Tree` (``forest/<column>``, each tree's node ids its own),
with the offsets of each tree's nodes (``forest/roots``) and of its rows of the level-set,
surrogate and competitor tables; per tree the α it was pruned at (``forest/alphas``, NaN
for T_max), its feature seed (``forest/seeds``) and, for classification, its priors and
class totals. The OOB results (``oob/...``) are stored as the fit left them.

Nothing that can be derived is trusted. On load, in order:

1. the offsets: ``roots`` starts at 0 and rises strictly to the number of nodes, the
   table offsets start at 0, never fall and end at the tables' lengths;
2. every tree, sliced out of the flat arrays (views, no copy), passes the single tree's
   checks (:func:`cartjit._modelfile._check_tree`: child links in range and after their
   parent, hence acyclic, depths, parents, counts, features, level sets, surrogate and
   competitor rows) and its derived columns (class counts of a split node the sum of its
   children's, the root's the tree's class totals, risks and labels from the counts,
   priors and costs; regression means and risks);
3. each tree's priors are those the fit derives from its class totals, its feature seed
   and its sample are redrawn from ``random_state`` (the root of tree b holds exactly the
   cases its redrawn sample puts in the bag), its α follows the parameters
   (``ccp_alpha``; ``cp`` times the root's risk; CV), and its pruned tree T(α) is
   derived from T_max by the pruning the fit used;
4. the OOB results agree with each other and with the redrawn samples: the number of
   trees each case is out of bag for, NaN exactly where it is 0, probabilities that sum
   to 1, the error the last point of its curve, the accuracy the confusion matrix's,
   the permutation importances the mean, standard error and ratio of the per-tree
   increases; a classifier's per-class curve is the overall curve's under the priors of
   the fit, and its last row the confusion matrix's (:func:`_class_curve`).

The fingerprint of the training rows (``train_digest`` in the metadata, 32 hexadecimal
digits) is kept, so that the out-of-bag proximities of a loaded forest check the rows they
are given as the fitted forest's do.

The flat forest the kernels predict from (``forest_``: class probabilities or means per
node, absolute child ids, the routing tables) and the impurity importances are not
stored: they are derived from the trees by the functions the fit used
(:func:`cartjit.engine.forest.combine_trees`: the values of
:func:`~cartjit.engine.forest.node_values`, the flat forest,
:func:`~cartjit.engine.forest.tree_importance`), so a loaded forest predicts
bit-identically and no file can hold a ``forest_`` that contradicts its trees. The work
is a fixed number of NumPy operations per tree (no Python object per node).
"""
from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np

from . import _modelfile as M
from .engine.limits import check_allocation
from .engine.tree import COMPETITOR_FIELDS, SURROGATE_FIELDS, TABLE_FIELDS, Tree

__all__ = ["encode_forest", "build_forest", "forest_members", "member_dtype",
           "check_forest_meta"]

#: The per-tree members besides the tree columns: offsets (B + 1,) and per-tree values.
_OFFSETS = ("roots", "level_rows", "surrogate_rows", "competitor_rows")
_PER_TREE = {"alphas": "<f8", "seeds": "<i8"}
_CLASS_PER_TREE = {"priors": "<f8", "class_totals": "<f8"}
#: The OOB members, by who has them.
_OOB = {"error_curve": "<f8", "n_trees": "<i8"}
_OOB_CLASS = {"decision_function": "<f8", "confusion": "<f8", "error_curve_by_class": "<f8"}
_OOB_REG = {"prediction": "<f8"}
_OOB_IMPORTANCE = {"importances": "<f8", "importances_se": "<f8",
                   "importances_scaled": "<f8", "importances_per_tree": "<f8"}
_OOB_IMPORTANCE_CLASS = {"importances_by_class": "<f8",
                         "importances_by_class_scaled": "<f8"}
#: The table each offset member indexes (its first column).
_TABLE_OF = {"level_rows": "level_sets", "surrogate_rows": next(iter(SURROGATE_FIELDS)),
             "competitor_rows": next(iter(COMPETITOR_FIELDS))}
_RTOL = M._DERIVED_RTOL
#: The fingerprint of the training rows (:func:`cartjit.ensemble._digest`).
_DIGEST = re.compile(r"[0-9a-f]{32}")


def _is_classifier(name):
    return name.endswith("Classifier")


# --------------------------------------------------------------------------- saving

def encode_forest(est, members):
    """The metadata of a fitted forest (beyond format, estimator and parameters); its
    arrays go into ``members``."""
    trees = est._trees
    plan = est._plan_
    settings = est._settings
    meta = M.encode_features(est)
    meta.update(n_trees=len(trees), n_samples=_n_samples(est), n_rows=int(est._n_rows),
                rows=est._rows is not None, max_features=int(est.max_features_),
                max_samples=int(plan.n_samples), train_digest=est._train_digest, oob=None)
    for name in Tree._fields:  # the store's columns of every T_max (TreeStore)
        members[f"forest/{name}"] = trees.column(name)
    members["forest/roots"] = trees.roots
    for name, column in _TABLE_OF.items():
        members[f"forest/{name}"] = trees.rows[column]
    members["forest/alphas"] = np.asarray(est.tree_alphas_, dtype=np.float64)
    members["forest/seeds"] = np.asarray(est.tree_seeds_, dtype=np.int64)
    if est._is_classifier:
        meta["classes"] = M._levels(est.classes_)
        meta["split_cost_default"] = bool(settings.default_cost)
        priors = settings.priors
        meta["priors"] = priors if isinstance(priors, str) else \
            [float(v) for v in np.asarray(priors, dtype=np.float64)]
        members["cost"] = est.cost_
        members["forest/priors"] = trees.priors
        members["forest/class_totals"] = trees.class_totals
    if est._rows is not None:
        members["rows"] = est._rows
    if hasattr(est, "oob_error_"):
        meta["oob"] = {"score": M._plain(est.oob_score_, "oob_score_"),
                       "error": M._plain(est.oob_error_, "oob_error_"),
                       "importance": hasattr(est, "oob_importances_")}
        members["oob/error_curve"] = est.oob_error_curve_
        members["oob/n_trees"] = est.oob_n_trees_
        if est._is_classifier:
            members["oob/decision_function"] = est.oob_decision_function_
            members["oob/confusion"] = est.oob_confusion_
            members["oob/error_curve_by_class"] = est.oob_error_curve_by_class_
        else:
            meta["oob"]["rsq"] = M._plain(est.oob_rsq_, "oob_rsq_")
            members["oob/prediction"] = est.oob_prediction_
        if meta["oob"]["importance"]:
            for name in _OOB_IMPORTANCE:
                members[f"oob/{name}"] = getattr(est, f"oob_{name}_")
            if est._is_classifier:
                for name in _OOB_IMPORTANCE_CLASS:
                    members[f"oob/{name}"] = getattr(est, f"oob_{name}_")
    return meta


def _n_samples(est):
    """The number of cases that took part in the fit (the rows with a positive weight)."""
    return int(est._n_rows if est._rows is None else np.count_nonzero(est._rows))


# --------------------------------------------------------------------------- layout

def member_dtype(name):
    """The dtype string of a forest member (``forest/...``, ``oob/...``, ``rows``)."""
    if name == "rows":
        return "|b1"
    group, column = name.split("/", 1)
    if group == "forest":
        if column in _OFFSETS:
            return "<i8"
        table = {**_PER_TREE, **_CLASS_PER_TREE}
        return table[column] if column in table else M._TREE_DTYPES[column]
    return {**_OOB, **_OOB_CLASS, **_OOB_REG, **_OOB_IMPORTANCE,
            **_OOB_IMPORTANCE_CLASS}[column]


def forest_members(meta):
    """The member names (without ``.npy``) a forest file of ``meta`` holds; ``meta`` is
    not checked yet, so anything unexpected in it only changes the list."""
    classifier = _is_classifier(meta["estimator"])
    names = [f"forest/{n}" for n in Tree._fields + _OFFSETS + tuple(_PER_TREE)]
    if classifier:
        names += ["cost"] + [f"forest/{n}" for n in _CLASS_PER_TREE]
    if meta.get("rows") is True:
        names.append("rows")
    oob = meta.get("oob")
    if isinstance(oob, dict):
        names += [f"oob/{n}" for n in (*_OOB, *(_OOB_CLASS if classifier else _OOB_REG))]
        if oob.get("importance") is True:
            names += [f"oob/{n}" for n in _OOB_IMPORTANCE]
            if classifier:
                names += [f"oob/{n}" for n in _OOB_IMPORTANCE_CLASS]
    return names


def check_forest_meta(meta, where):
    """The keys and the scalar types of a forest file's metadata."""
    if meta["format_version"] < M.FOREST_FORMAT_VERSION:
        M._fail(where, f"a forest file has format {M.FOREST_FORMAT_VERSION} or later, got "
                       f"{meta['format_version']}")
    keys = {"format", "format_version", "cartjit_version", "estimator", "params",
            "n_features_in", "feature_names_in", "features", "max_surrogate",
            "use_surrogate", "n_trees", "n_samples", "n_rows", "rows", "max_features",
            "max_samples", "train_digest", "oob"}
    if _is_classifier(meta["estimator"]):
        keys |= {"classes", "split_cost_default", "priors"}
    M._exact_keys(meta, keys, "metadata.json", where)
    if not isinstance(meta["rows"], bool):
        M._fail(where, "rows must be true or false")
    digest = meta["train_digest"]
    if not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        M._fail(where, f"train_digest must be 32 lowercase hexadecimal digits, got "
                       f"{M._short(digest)}")
    oob = meta["oob"]
    if oob is not None:
        keys = {"score", "error", "importance"}
        if not _is_classifier(meta["estimator"]):
            keys.add("rsq")
        M._exact_keys(oob, keys, "oob", where)
        if not isinstance(oob["importance"], bool):
            M._fail(where, "oob.importance must be true or false")


# --------------------------------------------------------------------------- loading

def build_forest(meta, arrays, where):
    """The fitted forest of a file whose members have been read (:func:`cartjit.load`);
    :class:`cartjit.ModelFileError` for anything that does not hold together."""
    from . import _prepare as P
    from . import ensemble
    from .engine import forest as F
    from .engine.fit import Problem

    p, names, encoding = M.decode_features(meta, where)
    est = getattr(ensemble, meta["estimator"])()
    M.decode_params(est, meta["params"], where)
    classifier = est._is_classifier
    n_trees = M._int(meta["n_trees"], "n_trees", where, 1, 2**31 - 1)
    n = M._int(meta["n_samples"], "n_samples", where, 1, 2**40)
    n_rows = M._int(meta["n_rows"], "n_rows", where, n, 2**40)
    try:
        bootstrap, replace, voting = est._check_forest_params()
        params = P.check_params(est)
        n_jobs = ensemble.resolve_n_jobs(est.n_jobs)
    except (TypeError, ValueError) as exc:
        M._fail(where, f"a saved parameter is invalid: {exc}")
    if int(est.n_estimators) != n_trees:
        M._fail(where, f"n_trees is {n_trees} but the parameter n_estimators is "
                       f"{est.n_estimators}")
    rows = None
    if meta["rows"]:
        rows = arrays["rows"]
        if rows.shape != (n_rows,) or int(np.count_nonzero(rows)) != n:
            M._fail(where, f"rows must mark {n} of {n_rows} rows (n_samples of n_rows)")
    elif n_rows != n:
        M._fail(where, "n_rows differs from n_samples but no rows member says which rows "
                       "took part")

    max_surrogate = M._int(meta["max_surrogate"], "max_surrogate", where, 0, 2**31 - 1)
    use_surrogate = M._int(meta["use_surrogate"], "use_surrogate", where, 0, 2)
    if params["missing"][1] != use_surrogate or (est.max_surrogate != "auto"
                                      and est.max_surrogate != max_surrogate):
        M._fail(where, "max_surrogate and use_surrogate must be the parameters' (or, for "
                       "max_surrogate='auto', a number)")
    if classifier:
        classes = M._decode_levels(meta["classes"], "classes", where)
        n_classes = int(classes.shape[0])
        cost = arrays["cost"]
        if cost.shape != (n_classes, n_classes) or not (
                np.all(np.isfinite(cost)) and np.all(cost >= 0) and not np.any(np.diag(cost))):
            M._fail(where, f"cost must be a finite, non-negative ({n_classes}, {n_classes}) "
                           "matrix with a zero diagonal")
        default_cost = meta["split_cost_default"]
        if not isinstance(default_cost, bool):
            M._fail(where, "split_cost_default must be true or false")
        priors = _settings_priors(meta["priors"], n_classes, where)
    else:
        classes, n_classes, cost, default_cost, priors = None, 0, None, True, None
    settings = P.tree_settings(params, priors, cost, default_cost, max_surrogate)
    n_levels = encoding.n_levels
    problem = Problem(np.empty((0, p)), np.empty(0, dtype=np.int32), np.empty(0),
                      np.empty(0), True, n_classes, P.kernel_levels(encoding))
    prep = P._Prepared(problem, settings, params["ccp_alpha"], params["cp"], names,
                       classes, None, None, encoding)
    try:
        plan, m = est._plan(n, p, bootstrap, replace, voting, prep)
    except (TypeError, ValueError) as exc:
        M._fail(where, f"a saved parameter is invalid: {exc}")
    if m != meta["max_features"] or plan.n_samples != meta["max_samples"]:
        M._fail(where, f"max_features and max_samples must be what the parameters give "
                       f"for {p} features and {n} cases ({m} and {plan.n_samples})")

    # the samples are drawn again below: n and the sample size are bounded first
    try:
        check_allocation(16 * (n + plan.n_samples), f"redrawing the samples of {n} cases")
    except ValueError as exc:  # MemoryLimitError
        M._fail(where, str(exc))
    trees_max = _slice_trees(arrays, n_trees, n_levels, meta, where)
    per_tree = _per_tree(arrays, n_trees, n_classes, where)
    drawn = _redraw(plan, n, n_trees)
    if not np.array_equal(per_tree["seeds"], drawn.seeds):
        M._fail(where, "forest/seeds must be the feature seeds random_state gives")
    fits = [_tree_fit(b, tree_max, per_tree, int(drawn.in_bag[b]), settings, plan,
                      classifier, where) for b, tree_max in enumerate(trees_max)]

    est.forest_, est._trees, est._tree_importance = F.combine_trees(
        fits, settings, plan.voting, n_classes, p)
    est._plan_ = plan
    est._n_jobs = n_jobs
    est._rows = rows
    est._n_rows = n_rows
    est._train_digest = meta["train_digest"]
    est.tree_seeds_ = per_tree["seeds"]
    est.tree_alphas_ = per_tree["alphas"]
    est.n_features_in_ = p
    est.max_features_ = m
    est.max_samples_ = plan.n_samples
    est.max_surrogate_ = max_surrogate
    est._use_surrogate = use_surrogate
    est._encoding = encoding
    est._settings = settings
    est.is_categorical_ = encoding.is_categorical.copy()
    est.categories_ = list(encoding.categories)
    if names is not None:
        est.feature_names_in_ = names
    est._prep_view = prep
    if classifier:
        est.classes_ = classes
        est.n_classes_ = n_classes
        est.cost_ = cost
    if meta["oob"] is not None:
        if not (est.oob_score or est.oob_importance):
            M._fail(where, "the file holds OOB results but oob_score and oob_importance "
                           "are off")
        _set_oob(est, meta["oob"], arrays, drawn, where)
    elif est.oob_score or est.oob_importance:
        M._fail(where, "oob_score or oob_importance is on but the file holds no OOB "
                       "results")
    return est


class _Redrawn(NamedTuple):
    """What the samples redrawn from ``random_state`` say of the trees and the cases."""

    seeds: np.ndarray    # int64 (B,): each tree's feature seed
    in_bag: np.ndarray   # int64 (B,): the distinct cases in each tree's sample
    has_oob: np.ndarray  # bool (B,): whether a case is out of each tree's bag
    n_oob: np.ndarray    # int64 (n,): the trees each case is out of the bag of


def _redraw(plan, n, n_trees):
    """Every tree's sample drawn again (:func:`cartjit.engine.forest.draw_counts`), one
    at a time: memory O(n + B), not O(n B)."""
    from .engine.forest import draw_counts

    seeds = np.zeros(n_trees, dtype=np.int64)
    in_bag = np.zeros(n_trees, dtype=np.int64)
    n_oob = np.zeros(n, dtype=np.int64)
    for b in range(n_trees):
        counts, seeds[b] = draw_counts(plan, n, b)
        out = counts == 0
        n_oob += out
        in_bag[b] = n - int(np.count_nonzero(out))
    return _Redrawn(seeds, in_bag, in_bag < n, n_oob)


def _settings_priors(value, n_classes, where):
    """The ``priors`` setting of the fit: a name, or n_classes positive numbers summing
    to 1."""
    if value in ("empirical", "equal"):
        return value
    if not (isinstance(value, list) and len(value) == n_classes
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        M._fail(where, f"priors must be 'empirical', 'equal' or {n_classes} numbers")
    arr = np.array(value, dtype=np.float64)
    if not (np.all(np.isfinite(arr)) and np.all(arr > 0) and abs(arr.sum() - 1.0) <= 1e-9):
        M._fail(where, "priors must be positive, finite and sum to 1")
    return arr


def _checked_offsets(arrays, name, n_trees, size, strict, where):
    off = arrays[f"forest/{name}"]
    steps = np.diff(off)
    if off.shape != (n_trees + 1,) or off[0] != 0 or off[-1] != size or \
            np.any(steps <= 0 if strict else steps < 0):
        M._fail(where, f"forest/{name} must be {n_trees + 1} offsets rising "
                       f"{'strictly ' if strict else ''}from 0 to {size}")
    return off


def _slice_trees(arrays, n_trees, n_levels, meta, where):
    """T_max of every tree: views into the flat columns, each checked as a single tree."""
    flat = M._tree_of(arrays, "forest", where)  # shapes: one row per node, tables aligned
    roots = _checked_offsets(arrays, "roots", n_trees, flat.n_nodes, True, where)
    tables = {name: _checked_offsets(arrays, name, n_trees,
                                     getattr(flat, column).shape[0], False, where)
              for name, column in _TABLE_OF.items()}
    which = {"level_sets": "level_rows", **{f: "surrogate_rows" for f in SURROGATE_FIELDS},
             **{f: "competitor_rows" for f in COMPETITOR_FIELDS}}
    trees = []
    for b in range(n_trees):
        fields = {}
        for name in Tree._fields:
            off = tables[which[name]] if name in TABLE_FIELDS else roots
            fields[name] = getattr(flat, name)[off[b]:off[b + 1]]
        tree = Tree(**fields)
        M._check_tree(tree, f"forest tree {b}", meta, n_levels, where)
        trees.append(tree)
    return trees


def _per_tree(arrays, n_trees, n_classes, where):
    out = {name: arrays[f"forest/{name}"] for name in _PER_TREE}
    for name, arr in out.items():
        if arr.shape != (n_trees,):
            M._fail(where, f"forest/{name} must have shape ({n_trees},)")
    if n_classes:
        for name in _CLASS_PER_TREE:
            arr = arrays[f"forest/{name}"]
            if arr.shape != (n_trees, n_classes) or not np.all(np.isfinite(arr)) or \
                    np.any(arr < 0):
                M._fail(where, f"forest/{name} must be ({n_trees}, {n_classes}) finite "
                               "numbers >= 0")
            out[name] = arr
    return out


class _ClassTables:
    """What :func:`cartjit._modelfile._check_derived` reads of a classifier, for one tree."""

    def __init__(self, priors, totals, cost):
        self.priors_, self.class_weight_totals_, self.cost_ = priors, totals, cost


def _tree_fit(b, tree_max, per_tree, in_bag, settings, plan, classifier, where):
    """Tree b's :class:`cartjit.engine.forest.TreeFit`, its priors, sample (``in_bag``
    distinct cases drawn) and α checked, T(α) derived."""
    from .engine.fit import class_priors
    from .engine.forest import TreeFit
    from .engine.pruning import prune_tree

    what = f"forest tree {b}"
    if classifier != (int(tree_max.label[0]) >= 0):
        M._fail(where, f"{what} is not a {'classification' if classifier else 'regression'}"
                       " tree")
    priors = totals = None
    if classifier:
        priors, totals = per_tree["priors"][b], per_tree["class_totals"][b]
        if tree_max.value.shape[1] != totals.shape[0] or not np.any(totals > 0):
            M._fail(where, f"{what}: its value must have one column per class, and some "
                           "class must have cases")
        with np.errstate(all="ignore"):
            expected = class_priors(settings.priors, totals)
        if not np.all(np.abs(expected - priors) <= _RTOL):
            M._fail(where, f"{what}: forest/priors must be the priors its class totals give")
        tables = _ClassTables(priors, totals, settings.cost)
    elif tree_max.value.shape[1] != 1:
        M._fail(where, f"{what}: a regression tree has one value column")
    M._check_derived(tree_max, what, tables if classifier else None, where)
    if int(tree_max.n_node_samples[0]) != in_bag:
        M._fail(where, f"{what}: its root holds {int(tree_max.n_node_samples[0])} cases, "
                       f"but the sample random_state draws for it has {in_bag}")
    alpha = float(per_tree["alphas"][b])
    alpha = _checked_alpha(alpha, tree_max, plan, what, where)
    if alpha is not None and np.all(np.isnan(tree_max.alpha)):
        M._fail(where, f"{what}: a pruned tree needs the α of T_max's nodes")
    tree = tree_max if alpha is None else prune_tree(tree_max, alpha)
    return TreeFit(tree, tree_max, priors, totals, alpha)


def _checked_alpha(alpha, tree_max, plan, what, where):
    """Tree b's α (None: T_max), as the parameters set it."""
    if plan.cv_folds:
        if math.isnan(alpha):
            return None
        expected = alpha if math.isfinite(alpha) and alpha >= 0 else None
    elif plan.cp is not None:
        expected = plan.cp * float(tree_max.risk[0])
    else:
        expected = plan.ccp_alpha
    if expected is None and math.isnan(alpha):
        return None
    if expected is None or alpha != expected:
        M._fail(where, f"{what}: forest/alphas must be the α the parameters give "
                       f"({'NaN' if expected is None else expected}), got {alpha}")
    return expected


def _set_oob(est, oob, arrays, drawn, where):
    """The OOB attributes, checked against the redrawn samples (:class:`_Redrawn`) and
    against each other."""
    n_trees = drawn.seeds.shape[0]
    got = arrays["oob/n_trees"]
    expected = est._over_rows(drawn.n_oob, 0)
    if got.shape != expected.shape or not np.array_equal(got, expected):
        M._fail(where, "oob/n_trees must count the trees each case is out of bag for, as "
                       "random_state draws the samples")
    has = expected > 0
    curve = arrays["oob/error_curve"]
    if curve.shape != (n_trees,) or np.any(np.isinf(curve)) or np.any(curve < 0):
        M._fail(where, f"oob/error_curve must be {n_trees} errors >= 0 (NaN: no case out of "
                       "bag yet)")
    error = _number(oob["error"], "oob.error", where)
    # the accuracy lies in [0, 1]; R² may be negative
    score = _number(oob["score"], "oob.score", where, 0.0 if est._is_classifier else None)
    if not _same(error, float(curve[-1])):
        M._fail(where, "oob.error must be the last point of oob/error_curve")
    if est._is_classifier:
        j = est.n_classes_
        dec = arrays["oob/decision_function"]
        conf = arrays["oob/confusion"]
        if dec.shape != (expected.shape[0], j) or conf.shape != (j, j):
            M._fail(where, f"oob/decision_function and oob/confusion must have shapes "
                           f"({expected.shape[0]}, {j}) and ({j}, {j})")
        present = dec[has]
        if np.any(~np.isnan(dec[~has])) or np.any(np.isnan(present)) or \
                np.any(present < 0) or np.any(present > 1) or \
                np.any(np.abs(present.sum(axis=1) - 1.0) > 1e-9):
            M._fail(where, "oob/decision_function must hold probabilities summing to 1 for "
                           "the cases out of bag at least once, NaN for the others")
        if not (np.all(np.isfinite(conf)) and np.all(conf >= 0)):
            M._fail(where, "oob/confusion must hold finite weights >= 0")
        total = float(conf.sum())
        if not _same(score, float(np.trace(conf) / total) if total > 0 else float("nan")):
            M._fail(where, "oob.score must be the accuracy of oob/confusion")
        est.oob_decision_function_ = dec
        est.oob_confusion_ = conf
        est.oob_error_curve_by_class_ = _class_curve(arrays, curve, conf, est, where)
    else:
        pred = arrays["oob/prediction"]
        if pred.shape != expected.shape or np.any(~np.isnan(pred[~has])) or \
                not np.all(np.isfinite(pred[has])):
            M._fail(where, "oob/prediction must be finite for the cases out of bag at "
                           "least once, NaN for the others")
        est.oob_prediction_ = pred
        est.oob_rsq_ = _number(oob["rsq"], "oob.rsq", where, low=None)
    est.oob_error_curve_ = curve
    est.oob_error_ = error
    est.oob_score_ = score
    est.oob_n_trees_ = got
    if oob["importance"]:
        if not est.oob_importance:
            M._fail(where, "the file holds OOB importances but oob_importance is off")
        _set_oob_importance(est, arrays, drawn.has_oob, where)
    elif est.oob_importance:
        M._fail(where, "oob_importance is on but the file holds no OOB importances")


def _class_curve(arrays, curve, conf, est, where):
    """``oob/error_curve_by_class``, checked against ``oob/error_curve`` and
    ``oob/confusion``. Row b holds, per class j, L_j / W_j: the weighted mean cost
    C(pred | j) of the class-j cases out of bag among the first b + 1 trees (NaN: none),
    so (:func:`cartjit.engine.forest_passes.oob_estimates`)

    - it lies in [0, max_i C(i | j)], and a class once scored stays scored (its NaNs
      come first);
    - its last row is that of the confusion matrix: W_j its row sum, L_j the row's
      weights times their costs;
    - the overall curve is :func:`~cartjit.engine.forest_passes.sample_risk` of it: with
      priors π (or "equal") Σ π(j) L_j / W_j over the scored classes divided by their
      Σ π(j), exactly; with empirical priors Σ L_j / Σ W_j, a mean of the classes' rates
      weighted by W_j, known at the last tree only (the confusion's row sums), so before
      it the curve lies between the smallest and the largest rate.
    """
    from .engine.forest_passes import risk_priors, sample_risk

    name = "oob/error_curve_by_class"
    n_trees, j = curve.shape[0], est.n_classes_
    by_class = arrays["oob/error_curve_by_class"]
    if by_class.shape != (n_trees, j):
        M._fail(where, f"{name} must have shape ({n_trees}, {j})")
    scored = ~np.isnan(by_class)
    top = est.cost_.max(axis=1)
    if np.any(np.isinf(by_class)) or np.any(by_class < 0) or \
            np.any(by_class > top * (1 + _RTOL)) or np.any(scored[:-1] & ~scored[1:]):
        M._fail(where, f"{name} must hold per class a mean cost between 0 and the class's "
                       "largest cost, NaN until the class's first case is out of bag")
    if np.any(scored.any(axis=1) == np.isnan(curve)):
        M._fail(where, f"{name} must be NaN for every class exactly where oob/error_curve "
                       "is NaN")
    weight = conf.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        last = np.where(weight > 0, (conf * est.cost_).sum(axis=1) / weight, np.nan)
    if not _close(by_class[-1], last):
        M._fail(where, f"the last row of {name} must be the mean cost of each class's row "
                       "of oob/confusion")
    priors = risk_priors(est._settings)
    if priors is None:  # empirical: the overall error weighs the classes by W_j
        with np.errstate(invalid="ignore"):
            rates = np.where(scored, by_class, 0.0)
            low = np.where(scored, by_class, np.inf).min(axis=1)
            high = rates.max(axis=1)
        inside = np.isnan(curve) | ((curve >= low - _RTOL * np.maximum(np.abs(low), 1.0))
                                    & (curve <= high + _RTOL * np.maximum(high, 1.0)))
        total = weight.sum()
        overall = float((weight * rates[-1]).sum() / total) if total > 0 else float("nan")
        exact = _same(float(curve[-1]), overall)
    else:
        inside = True
        exact = _close(curve, sample_risk(np.where(scored, by_class, 0.0),
                                          scored.astype(np.float64), priors))
    if not (np.all(inside) and exact):
        M._fail(where, f"oob/error_curve must be the error {name} gives with the priors "
                       "of the fit (and the class weights of oob/confusion)")
    return by_class


def _set_oob_importance(est, arrays, present, where):
    """The permutation importances; ``present``: the trees with OOB cases."""
    from .engine.forest_passes import _mean_se

    p = est.n_features_in_
    delta = arrays["oob/importances_per_tree"]
    if delta.shape != (present.shape[0], p):
        M._fail(where, f"oob/importances_per_tree must have shape "
                       f"({present.shape[0]}, {p})")
    if np.any(np.isinf(delta)) or np.any(np.isnan(delta[present])) or \
            np.any(~np.isnan(delta[~present])):
        M._fail(where, "oob/importances_per_tree must be finite for the trees with OOB "
                       "cases and NaN for the others")
    derived = _mean_se(delta, np.broadcast_to(present[:, None], delta.shape))
    for name, value in zip(("importances", "importances_se", "importances_scaled"), derived):
        got = arrays[f"oob/{name}"]
        if got.shape != (p,) or not _close(got, value):
            M._fail(where, f"oob/{name} must be what oob/importances_per_tree gives "
                           "(their mean, standard error and ratio)")
        setattr(est, f"oob_{name}_", got)
    est.oob_importances_per_tree_ = delta
    if est._is_classifier:
        raw, scaled = (arrays[f"oob/{name}"] for name in _OOB_IMPORTANCE_CLASS)
        if raw.shape != (p, est.n_classes_) or scaled.shape != raw.shape or \
                np.any(np.isinf(raw)) or np.any(np.isnan(raw) != np.isnan(scaled)):
            M._fail(where, f"oob/importances_by_class and its scaled version must have shape "
                           f"({p}, {est.n_classes_}), finite or NaN (a class no OOB case has) "
                           "at the same places")
        est.oob_importances_by_class_ = raw
        est.oob_importances_by_class_scaled_ = scaled


def _number(value, what, where, low=0.0):
    """A float of the metadata (NaN allowed, as ``_plain`` tags it)."""
    value = M._decode_param(value, what, where)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or \
            math.isinf(value) or (low is not None and value < low):
        M._fail(where, f"{what} must be a finite number{'' if low is None else ' >= 0'} "
                       f"or NaN, got {M._short(value)}")
    return float(value)


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= _RTOL * max(abs(b), 1.0)


def _close(a, b):
    """Equal up to :data:`_RTOL`, NaN where NaN, infinities equal."""
    with np.errstate(invalid="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b)) | \
            (np.abs(a - b) <= _RTOL * np.maximum(np.abs(b), 1.0))
    return bool(np.all(same))
