"""Stability of the chosen trees: what each cell's chosen tree looks like, and how much
the trees of a run's replications agree.

Two correct runs of CART on the same data differ from one replication to the next: the
cross-validation picks another α, a new learning sample grows other splits. A run
records in every cell (:func:`tree_record`) the chosen tree's

* root feature (``root``, -1 when the tree is a single leaf) and the features its splits
  use (``features``, ascending column indices of the dataset);
* size |T̃| (``n_leaves``) and α (``alpha``: α_k of the CV selection, ``ccp_alpha`` of a
  tree fitted without CV);
* leaf of every learning case (``leaves``): the leaves numbered 0, 1, … in the order of
  the tree's node ids, written one case after the other as a text of fixed-width base-62
  digits (one character per case up to 62 leaves); ``.`` marks a case that was not
  learned from (a test case of the replication, a row without a target or of weight 0).

The sweep's cells hold one record per chosen row of the pruning sequence (the rows the
selection rules pick, ``result["stability"]["trees"]`` keyed by the row's position);
a methods study's cells hold one for a single-tree method of cartjit (``CARTClassifier``,
``CARTRegressor`` and their CV variants) under ``result["stability"]["tree"]``; other
methods (forests, other libraries) record none.

:func:`write_stability_reports` writes ``stability.md`` and ``stability/*.csv`` from
the records, per group of replications (a sweep: dataset, tree settings, V and rule; a
study: dataset and method): how often each feature is the root and is used at all, the
distribution of |T̃| and α, and the agreement of the partitions of the learning cases
(the adjusted Rand index of every pair of replications, on the cases both learned from).
Everything is computed from the records in the plan's order with exact integer
arithmetic where it counts, so the files are byte-identical on every backend.
"""
from __future__ import annotations

import io
import math
import warnings
from fractions import Fraction
from itertools import combinations

import numpy as np

__all__ = ["SINGLE_TREE_ESTIMATORS", "tree_record", "record_problem", "cv_cell_records",
           "method_cell_record",
           "encode_leaves", "decode_leaves", "adjusted_rand_index", "stability_tables",
           "write_stability_reports"]

#: The methods whose chosen tree is recorded (cartjit's single-tree estimators).
SINGLE_TREE_ESTIMATORS = ("CARTClassifier", "CARTRegressor", "CARTClassifierCV",
                          "CARTRegressorCV")

_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# --------------------------------------------------------------------------- encoding

def _width(n_leaves):
    width, capacity = 1, len(_DIGITS)
    while n_leaves > capacity:
        width += 1
        capacity *= len(_DIGITS)
    return width


def encode_leaves(codes, n_leaves):
    """The text of leaf numbers ``codes`` (ints in [0, n_leaves), -1 for none): fixed-width
    base-62 digits, ``.`` (repeated to the width) for -1."""
    width = _width(max(int(n_leaves), 1))
    base = len(_DIGITS)
    out = []
    for c in np.asarray(codes).tolist():
        if c < 0:
            out.append("." * width)
            continue
        digits = []
        for _ in range(width):
            c, r = divmod(c, base)
            digits.append(_DIGITS[r])
        out.append("".join(reversed(digits)))
    return "".join(out)


def decode_leaves(text, n_leaves, n_rows):
    """The leaf numbers of :func:`encode_leaves`' ``text`` (int64, -1 for none)."""
    width = _width(max(int(n_leaves), 1))
    if not isinstance(text, str) or len(text) != width * n_rows:
        raise ValueError(f"leaves: expected a text of {width * n_rows} characters "
                         f"({n_rows} cases), got {len(text) if isinstance(text, str) else text!r}")
    index = {ch: i for i, ch in enumerate(_DIGITS)}
    out = np.empty(n_rows, dtype=np.int64)
    for i in range(n_rows):
        chunk = text[i * width:(i + 1) * width]
        if chunk[0] == ".":
            out[i] = -1
            continue
        v = 0
        for ch in chunk:
            v = v * len(_DIGITS) + index[ch]
        out[i] = v
    return out


# --------------------------------------------------------------------------- records

def tree_record(tree, alpha, X, rows=None, n_rows=None):
    """The record of the chosen ``tree`` (a :class:`cartjit.engine.tree.Tree`) at
    ``alpha``: see the module docstring. ``X`` holds the learning cases (encoded as the
    fit saw them); ``rows`` (int indices or a boolean mask over ``n_rows`` rows) says
    which rows of the dataset they are (default: all, in order)."""
    from ..engine.tree import LEAF, apply

    internal = tree.left != LEAF
    leaf_ids = np.flatnonzero(~internal)
    number = np.full(tree.n_nodes, -1, dtype=np.int64)
    number[leaf_ids] = np.arange(leaf_ids.shape[0])
    X = np.ascontiguousarray(X, dtype=np.float64)
    nodes = _apply_one_thread(apply, tree, X) if X.shape[0] else np.zeros(0, dtype=np.int64)
    codes = number[nodes]  # -1 for a case stopped at an internal node (no surrogate)
    if rows is None:
        full = codes
    else:
        rows = np.asarray(rows)
        if rows.dtype == bool:
            n_rows = rows.shape[0]
            rows = np.flatnonzero(rows)
        full = np.full(int(n_rows), -1, dtype=np.int64)
        full[rows] = codes
    n_leaves = int(leaf_ids.shape[0])
    return {"root": int(tree.feature[0]) if internal[0] else -1,
            "features": sorted({int(f) for f in tree.feature[internal]}),
            "n_leaves": n_leaves, "alpha": float(alpha),
            "leaves": encode_leaves(full, n_leaves)}


def _apply_one_thread(apply, tree, X):
    """``apply(tree, X)`` on one Numba thread: one small descent per record, which the
    launch of a parallel kernel would cost more than it saves (the setting is the
    calling thread's, restored after)."""
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return apply(tree, X)
    finally:
        numba.set_num_threads(before)


def cv_cell_records(prep, res, chosen):
    """The records of a sweep cell: one per row of ``chosen`` (rule -> 0-based row),
    keyed by the row's position, from ``prep``, ``res`` of
    :func:`cartjit._prepare.cross_validate_params`."""
    from ..engine.pruning import prune_tree

    table = res.table
    alphas = table["alpha"].to_numpy()
    n_rows = None if prep.rows is None else prep.rows.shape[0]
    trees = {}
    for row in sorted(set(chosen.values())):
        alpha = float(alphas[row])
        tree = prune_tree(res.fitted.tree, alpha)
        trees[str(row)] = tree_record(tree, alpha, prep.problem.X, prep.rows, n_rows)
    return {"trees": trees}


def method_cell_record(fitted, n_rows):
    """The record of a methods-study cell whose method is one of cartjit's single trees
    (:data:`SINGLE_TREE_ESTIMATORS`), else None. ``fitted`` is what
    :func:`cartjit.experiments.methods.compute_method_cell` filled in: the cell's fitted
    estimator, its learning data and their rows ``learn`` among the dataset's ``n_rows``.
    The ``fresh`` protocol's learning cases are new every replication and have no rows
    of the dataset (``learn`` is None), so its record has no ``leaves``."""
    from .._prepare import prepare

    est, Xl, yl, learn = fitted["estimator"], fitted["X"], fitted["y"], fitted["learn"]
    cls = type(est)
    if cls.__name__ not in SINGLE_TREE_ESTIMATORS or not cls.__module__.startswith("cartjit"):
        return None
    alpha = getattr(est, "alpha_", None)
    if alpha is None:  # a tree without CV: its ccp_alpha, or rpart's cp times R(root)
        cp = getattr(est, "cp", None)
        alpha = (est.ccp_alpha if est.ccp_alpha is not None else
                 cp * float(est.tree_max_.risk[0]) if cp is not None else 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep = prepare(est, Xl, yl, None)
    rows = np.arange(Xl.shape[0]) if prep.rows is None else np.flatnonzero(prep.rows)
    if learn is not None:  # learn: the replication's row indices in the dataset
        rows = np.asarray(learn)[rows]
    record = tree_record(est.tree_, alpha, prep.problem.X, rows,
                         n_rows if learn is not None else Xl.shape[0])
    if learn is None:
        del record["leaves"]
    return record


# --------------------------------------------------------------------------- agreement

def _comb2(n):
    return n * (n - 1) // 2


def adjusted_rand_index(a, b):
    """The adjusted Rand index of two partitions given as labels (Hubert and Arabie 1985).

    With the contingency table n_ij of the two labellings, row sums a_i, column sums b_j
    and n cases, index = Σ C(n_ij, 2), expected = Σ C(a_i, 2) Σ C(b_j, 2) / C(n, 2),
    maximum = (Σ C(a_i, 2) + Σ C(b_j, 2)) / 2, and ARI = (index - expected) / (maximum -
    expected): 1 for identical partitions, about 0 for independent ones. When the
    maximum equals the expectation (both partitions are one block, or both put every
    case alone) the partitions are identical and the index is 1. Computed in exact
    integer arithmetic, rounded once.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"adjusted_rand_index: a and b must be 1-d of the same length, got "
                         f"shapes {a.shape} and {b.shape}")
    n = a.shape[0]
    if n < 2:
        return 1.0
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    nb = int(bi.max()) + 1
    _, nij = np.unique(ai.astype(np.int64) * nb + bi, return_counts=True)
    index = sum(_comb2(int(v)) for v in nij)
    sum_a = sum(_comb2(int(v)) for v in np.bincount(ai))
    sum_b = sum(_comb2(int(v)) for v in np.bincount(bi))
    expected = Fraction(sum_a * sum_b, _comb2(n))
    maximum = Fraction(sum_a + sum_b, 2)
    if maximum == expected:
        return 1.0
    return float((index - expected) / (maximum - expected))


# --------------------------------------------------------------------------- reports

def _records_of(config, cells, results):
    """``[(group key, group label, record)]`` in plan order; records absent from a cell
    (one computed by an older cartjit) are counted as missing."""
    from .config import selection_label
    out = []
    missing = 0
    if config.methods:
        for cell in cells:
            res = results.get(cell.cell_id) or {}
            rec = (res.get("stability") or {}).get("tree")
            if record_problem(rec) is not None:  # a forest, or a cell of an older cartjit
                missing += cell.estimator in SINGLE_TREE_ESTIMATORS + ("cart", "cart_cv")
                continue
            out.append(((cell.dataset, cell.method), {"dataset": cell.dataset,
                                                      "group": cell.method}, rec))
        return out, missing
    rules = [selection_label(r) for r in config.selection]
    for cell in cells:
        res = results.get(cell.cell_id) or {}
        for rule in rules:
            trees = (res.get("stability") or {}).get("trees")
            row = (res.get("chosen") or {}).get(rule)
            if not isinstance(trees, dict) or row is None or \
                    record_problem(trees.get(str(row))) is not None:
                missing += 1
                continue
            group = f"{cell.settings_label + ', ' if cell.settings_label else ''}" \
                    f"V={'N (LOO)' if cell.loo else cell.V}, rule={rule}"
            key = (cell.dataset, cell.settings_index, cell.V, rule)
            out.append((key, {"dataset": cell.dataset, "group": group},
                        trees[str(row)]))
    return out, missing


def record_problem(rec, n_rows=None):
    """Why ``rec`` is not a well-formed record (for ``n_rows`` cases), or None."""
    if not isinstance(rec, dict):
        return "not an object"
    ints = (int,)
    if not isinstance(rec.get("root"), ints) or not isinstance(rec.get("n_leaves"), ints) \
            or rec["n_leaves"] < 1 or isinstance(rec.get("alpha"), bool) \
            or not isinstance(rec.get("alpha"), (int, float)):
        return "root, n_leaves or alpha is missing or not a number"
    features = rec.get("features")
    if not isinstance(features, list) or not all(isinstance(f, int) for f in features):
        return "features is not a list of integers"
    if "leaves" in rec:
        text = rec["leaves"]
        width = _width(rec["n_leaves"])
        if not isinstance(text, str) or len(text) % width or (
                n_rows is not None and len(text) != width * n_rows) or \
                set(text) - set(_DIGITS) - {"."}:
            return "leaves is not a text of leaf digits, one per case"
    return None


def _quantiles(values):
    """(min, lower quartile, median, upper quartile, max) of ``values`` (NumPy's linear
    interpolation)."""
    v = np.asarray(values, dtype=np.float64)
    return [float(x) for x in np.quantile(v, [0.0, 0.25, 0.5, 0.75, 1.0])]


def _pair_ari(records):
    """The adjusted Rand index of every pair of records with leaves, on the cases both
    learned from (pairs sharing fewer than 2 cases are left out)."""
    decoded = [decode_leaves(r["leaves"], r["n_leaves"], len(r["leaves"]) //
                             _width(max(r["n_leaves"], 1)))
               for r in records if "leaves" in r]
    out = []
    for p, q in combinations(decoded, 2):
        if p.shape != q.shape:
            continue
        both = (p >= 0) & (q >= 0)
        if np.count_nonzero(both) >= 2:
            out.append(adjusted_rand_index(p[both], q[both]))
    return out


def stability_tables(config, data, cells, results):
    """``(summary, features, missing)``: the per-group table (replications, |T̃| and α
    quartiles, mean / min / median pairwise ARI, the commonest root) and the per-feature
    table (root share, use share), as lists of dicts in plan order; ``missing`` counts
    the chosen trees without a record."""
    names = {d.name: list(d.feature_names) for d in data}
    records, missing = _records_of(config, cells, results)
    groups = {}
    for key, label, rec in records:
        groups.setdefault(key, (label, []))[1].append(rec)
    summary, features = [], []
    for key, (label, recs) in groups.items():
        feat = names[label["dataset"]]
        n = len(recs)
        roots = [r["root"] for r in recs]
        sizes = _quantiles([r["n_leaves"] for r in recs])
        alphas = _quantiles([r["alpha"] for r in recs])
        ari = _pair_ari(recs)
        counts = {f: roots.count(f) for f in sorted(set(roots))}
        top = max(counts, key=lambda f: (counts[f], -f))
        summary.append({
            **label, "n_trees": n,
            "root_mode": "(leaf)" if top < 0 else feat[top],
            "root_mode_share": counts[top] / n,
            "n_roots": len(counts),
            "leaves_min": int(sizes[0]), "leaves_q1": sizes[1], "leaves_median": sizes[2],
            "leaves_q3": sizes[3], "leaves_max": int(sizes[4]),
            "leaves_mean": float(np.mean([r["n_leaves"] for r in recs])),
            "alpha_min": alphas[0], "alpha_median": alphas[2], "alpha_max": alphas[4],
            "ari_pairs": len(ari),
            "ari_mean": float(np.mean(ari)) if ari else float("nan"),
            "ari_min": float(min(ari)) if ari else float("nan"),
            "ari_median": float(np.median(ari)) if ari else float("nan")})
        used = {}
        for r in recs:
            for f in r["features"]:
                used[f] = used.get(f, 0) + 1
        for f in range(len(feat)):
            if counts.get(f, 0) or used.get(f, 0):
                features.append({**label, "feature": feat[f], "root_share": counts.get(f, 0) / n,
                                 "used_share": used.get(f, 0) / n})
        if counts.get(-1, 0):
            features.append({**label, "feature": "(no split)", "root_share": counts[-1] / n,
                             "used_share": 0.0})
    return summary, features, missing


def _csv(rows, columns):
    from .reports import format_csv
    import pandas as pd
    return format_csv(pd.DataFrame(rows, columns=list(columns)))


def _g(x, digits=3):
    if isinstance(x, float) and math.isnan(x):
        return "–"
    return f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def write_stability_reports(out, config, data, cells, results):
    """Write ``stability.md``, ``stability/trees.csv`` and ``stability/features.csv`` into
    ``out`` (atomically); returns their paths relative to ``out``."""
    from .reports import report_writer
    put, written = report_writer(out)
    summary, features, missing = stability_tables(config, data, cells, results)
    sum_cols = ("dataset", "group", "n_trees", "root_mode", "root_mode_share", "n_roots",
                "leaves_min", "leaves_q1", "leaves_median", "leaves_q3", "leaves_max",
                "leaves_mean", "alpha_min", "alpha_median", "alpha_max", "ari_pairs",
                "ari_mean", "ari_min", "ari_median")
    feat_cols = ("dataset", "group", "feature", "root_share", "used_share")
    put("stability/trees.csv", _csv(summary, sum_cols))
    put("stability/features.csv", _csv(features, feat_cols))
    md = io.StringIO()
    md.write(f"# Stability of the chosen trees: {config.name}\n\n")
    what = ("each dataset and method (a single tree of cartjit), over the replications "
            "of the protocol" if config.methods else
            "each dataset, tree setting, V and selection rule, over the repeats of the "
            "random partition (T_max is grown on all the cases, so only the chosen α "
            "varies)")
    md.write(f"For {what}: the chosen trees' root feature, the features they use, their "
             "size |T̃| and α, and the agreement of their partitions of the learning "
             "cases: the adjusted Rand index (ARI: 1 identical, about 0 no better than "
             "chance) of every pair of replications, on the cases both learned from. "
             "Tables: `stability/trees.csv`, `stability/features.csv`.\n\n")
    if missing:
        md.write(f"*{missing} chosen tree(s) have no usable record (cells computed by an "
                 "older cartjit): they are left out.*\n\n")
    if not summary:
        md.write("No chosen tree was recorded (no single-tree method in this run).\n")
    for row in summary:
        md.write(f"## {row['dataset']}: {row['group']}\n\n")
        md.write(f"{row['n_trees']} trees. Root: {row['root_mode']} in "
                 f"{100 * row['root_mode_share']:.0f} % ({row['n_roots']} distinct roots). "
                 f"|T̃|: median {_g(row['leaves_median'])} (range {row['leaves_min']}–"
                 f"{row['leaves_max']}, quartiles {_g(row['leaves_q1'])}–"
                 f"{_g(row['leaves_q3'])}). α: median {_g(row['alpha_median'], 4)} (range "
                 f"{_g(row['alpha_min'], 4)}–{_g(row['alpha_max'], 4)}). ARI over "
                 f"{row['ari_pairs']} pairs: mean {_g(row['ari_mean'])}, median "
                 f"{_g(row['ari_median'])}, min {_g(row['ari_min'])}.\n\n")
        rows = [f for f in features if f["dataset"] == row["dataset"]
                and f["group"] == row["group"]]
        md.write("| feature | root | used |\n|---|---:|---:|\n")
        for f in sorted(rows, key=lambda f: (-f["used_share"], -f["root_share"])):
            md.write(f"| {f['feature']} | {100 * f['root_share']:.0f} % | "
                     f"{100 * f['used_share']:.0f} % |\n")
        md.write("\n")
    put("stability.md", md.getvalue())
    return written
