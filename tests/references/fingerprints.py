"""Fingerprints of fitted trees, pruning paths and CV tables: a regression guard.

Every problem below is fitted through the public estimators and reduced to one SHA-256
per result (the bytes of every tree array, the pruning path, the CV table; for the
DataFrames with categorical columns and missing values also the level sets, the
surrogate and competitor tables and the variable importance). The trees
themselves are checked against the naive reference, the worked examples, scikit-learn
and rpart by the other tests; this corpus only says that a refactoring or a faster
kernel changed nothing at all, bit for bit.

    python tests/references/fingerprints.py --write  # record (only when a change is meant)
    python tests/references/fingerprints.py          # compare with data/fingerprints.json

``tests/engine/test_fingerprints.py`` runs the comparison.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STORE = HERE / "data" / "fingerprints.json"
if __name__ == "__main__":  # measure this checkout, not whichever cartjit is installed
    sys.path.insert(0, str(HERE.parents[1]))

TREE_FIELDS = ("feature", "threshold", "left", "right", "parent", "depth",
               "n_node_samples", "weighted_n_node_samples", "value", "impurity", "risk",
               "label", "alpha")


def _digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a))
        if a.dtype.kind == "f":
            a = a.astype(np.float64)
        elif a.dtype.kind in "iub":
            a = a.astype(np.int64)
        elif a.dtype.kind in "OUS":          # class labels: hash their text
            a = np.frombuffer("\x1f".join(map(str, a.ravel())).encode(), dtype=np.uint8)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


#: What a tree with categorical splits, surrogates and competitors adds to TREE_FIELDS.
SPLIT_TABLE_FIELDS = ("level_row", "level_sets", "majority_left", "n_primary",
                      "surrogate_start", "n_surrogates", "surrogate_feature",
                      "surrogate_threshold", "surrogate_level_row", "surrogate_low_left",
                      "surrogate_agree", "surrogate_adj", "surrogate_count",
                      "competitor_start", "n_competitors", "competitor_feature",
                      "competitor_threshold", "competitor_level_row",
                      "competitor_improvement", "competitor_count")


def _tree_digest(tree, fields=TREE_FIELDS):
    return _digest(*(getattr(tree, name) for name in fields))


def _path_digest(est):
    path = est.cost_complexity_path()
    return _digest(*(np.asarray(path[c], dtype=float) for c in sorted(path.columns)))


def _cv_digest(est):
    table = est.cv_results_
    cols = [c for c in sorted(table.columns)
            if np.issubdtype(np.asarray(table[c]).dtype, np.number)]
    return _digest(*(np.asarray(table[c], dtype=float) for c in cols),
                   np.array([est.alpha_]))


def _problems():
    from cartjit.datasets import (load_iris, load_potato_yield, make_classification,
                                  make_regression)
    iris_X, iris_y = load_iris(return_X_y=True)
    iris_X = np.asarray(iris_X, dtype=float)
    iris_y = np.asarray(iris_y)
    petal_X = iris_X[:, 2:]
    rng = np.random.default_rng(20261123)
    w_iris = rng.integers(1, 5, size=iris_y.shape[0]).astype(float)
    syn_X, syn_y = make_classification(n_samples=3000, n_features=8, n_classes=3,
                                       random_state=7)
    syn_X = np.asarray(syn_X, dtype=float)
    syn_y = np.asarray(syn_y)
    tied_X = np.round(syn_X, 1)          # many tied values: the rank path
    bin_X, bin_y = make_classification(n_samples=2000, n_features=6, n_classes=2,
                                       random_state=3)
    bin_X = np.asarray(bin_X, dtype=float)
    bin_y = np.asarray(bin_y)
    pot_X, pot_y = load_potato_yield(return_X_y=True)
    reg_X, reg_y = make_regression(n_samples=2000, n_features=6, random_state=5)
    reg_X = np.asarray(reg_X, dtype=float)
    reg_y = np.asarray(reg_y, dtype=float)
    w_reg = rng.uniform(0.5, 3.0, size=reg_y.shape[0])
    cost3 = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0], [1.0, 5.0, 0.0]])

    cls = [
        ("iris_gini", iris_X, iris_y, {}, None),
        ("iris_petal", petal_X, iris_y, {}, None),
        ("iris_entropy", iris_X, iris_y, {"criterion": "entropy"}, None),
        ("iris_twoing", iris_X, iris_y, {"criterion": "twoing"}, None),
        ("iris_equal", iris_X, iris_y, {"priors": "equal"}, None),
        ("iris_priors", iris_X, iris_y, {"priors": [0.5, 0.3, 0.2]}, None),
        ("iris_cost", iris_X, iris_y, {"cost": cost3}, None),
        ("iris_weights", iris_X, iris_y, {}, w_iris),
        ("iris_ccp", iris_X, iris_y, {"ccp_alpha": 1 / 150}, None),
        ("syn_gini", syn_X, syn_y, {}, None),
        ("syn_entropy", syn_X, syn_y, {"criterion": "entropy"}, None),
        ("syn_twoing", syn_X, syn_y, {"criterion": "twoing"}, None),
        ("syn_leaf5", syn_X, syn_y, {"min_samples_leaf": 5}, None),
        ("syn_depth4", syn_X, syn_y, {"max_depth": 4}, None),
        ("syn_maxleaf", syn_X, syn_y, {"max_leaf_nodes": 12}, None),
        ("syn_cost", syn_X, syn_y, {"cost": cost3}, None),
        ("tied_gini", tied_X, syn_y, {}, None),
        ("tied_equal", tied_X, syn_y, {"priors": "equal", "criterion": "entropy"}, None),
        ("bin_gini", bin_X, bin_y, {}, None),
        ("bin_split20", bin_X, bin_y, {"min_samples_split": 20,
                                       "min_impurity_decrease": 0.001}, None),
    ]
    reg = [
        ("potato", pot_X, pot_y, {}, None),
        ("reg_full", reg_X, reg_y, {}, None),
        ("reg_weights", reg_X, reg_y, {}, w_reg),
        ("reg_leaf5", reg_X, reg_y, {"min_samples_leaf": 5}, None),
        ("reg_tied", np.round(reg_X, 1), reg_y, {"max_depth": 8}, None),
    ]
    cv_cls = [
        ("cv_iris_petal", petal_X, iris_y, {"cv": 5, "n_repeats": 2, "random_state": 0}),
        ("cv_iris_loo", iris_X, iris_y, {"cv": "loo", "selection": "min"}),
        ("cv_syn", syn_X, syn_y, {"cv": 10, "random_state": 1, "stratify": True}),
        ("cv_syn_equal", tied_X, syn_y, {"cv": 5, "priors": "equal", "random_state": 2}),
    ]
    cv_reg = [
        ("cv_potato", pot_X, pot_y, {"cv": 5, "n_repeats": 3, "random_state": 0}),
        ("cv_reg", reg_X, reg_y, {"cv": 10, "random_state": 4, "selection": 0.5}),
    ]
    return cls, reg, cv_cls, cv_reg


def _mixed_frame(n, n_classes, holes, seed):
    """A seeded DataFrame of 4 numeric and 2 unordered categorical columns (6 and 12
    levels) with a fraction ``holes`` of every column's cells missing, and its target
    (``n_classes`` classes, or a numeric response when 0)."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    num = rng.normal(size=(n, 4))
    c6 = rng.integers(0, 6, n)
    c12 = rng.integers(0, 12, n)
    score = (num[:, 0] + np.sin(2 * num[:, 1]) + np.isin(c6, [0, 2, 3]) * 1.2
             + (c12 % 3 == 1) * np.sign(num[:, 2]) + rng.normal(scale=0.7, size=n))
    frame = pd.DataFrame({f"x{j}": num[:, j] for j in range(4)})
    frame["c6"] = pd.Categorical.from_codes(c6, [f"L{k}" for k in range(6)])
    frame["c12"] = pd.Categorical.from_codes(c12, [f"M{k:02d}" for k in range(12)])
    for col in frame.columns:
        frame.loc[rng.random(n) < holes, col] = np.nan
    if n_classes == 0:
        return frame, score
    cuts = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return frame, np.digitize(score, cuts)


def _mixed_problems():
    """Categorical features, missing values, surrogates and competitors: (name, task,
    frame, y, params, sample weights)."""
    rows = []
    for name, n_classes, holes in (("mixed2", 2, 0.1), ("mixed3", 3, 0.2),
                                   ("mixed_reg", 0, 0.1), ("mixed2_complete", 2, 0.0)):
        frame, y = _mixed_frame(3000, n_classes, holes, seed=len(rows) + 11)
        task = "regression" if n_classes == 0 else "classification"
        rows.append((name, task, frame, y, {"max_surrogate": 5}, None))
    frame, y = _mixed_frame(3000, 2, 0.1, seed=11)
    w = np.random.default_rng(5).integers(1, 4, size=3000).astype(float)
    rows += [
        ("mixed2_weights", "classification", frame, y, {"max_surrogate": 5}, w),
        ("mixed2_style1", "classification", frame, y,
         {"max_surrogate": 3, "surrogate_style": 1, "use_surrogate": 1,
          "min_samples_leaf": 7, "criterion": "entropy"}, None),
        ("mixed2_nosur", "classification", frame, y, {"max_surrogate": 0}, None),
    ]
    return rows


def corpus():
    """Name -> SHA-256 of every result of the corpus."""
    from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
    cls, reg, cv_cls, cv_reg = _problems()
    out = {}
    for group, make in ((cls, CARTClassifier), (reg, CARTRegressor)):
        for name, X, y, params, w in group:
            est = make(**params).fit(X, y, sample_weight=w)
            out[f"{name}/tree"] = _tree_digest(est.tree_)
            out[f"{name}/path"] = _path_digest(est)
            out[f"{name}/predict"] = _digest(est.predict(X))
    for group, make in ((cv_cls, CARTClassifierCV), (cv_reg, CARTRegressorCV)):
        for name, X, y, params in group:
            est = make(**params).fit(X, y)
            out[f"{name}/tree"] = _tree_digest(est.tree_)
            out[f"{name}/cv"] = _cv_digest(est)
    for name, task, X, y, params, w in _mixed_problems():
        make = CARTClassifier if task == "classification" else CARTRegressor
        est = make(**params).fit(X, y, sample_weight=w)
        out[f"{name}/tree"] = _tree_digest(est.tree_, TREE_FIELDS + SPLIT_TABLE_FIELDS)
        out[f"{name}/path"] = _path_digest(est)
        out[f"{name}/predict"] = _digest(est.predict(X))
        out[f"{name}/importance"] = _digest(np.asarray(est.variable_importance_,
                                                       dtype=float))
    frame, y = _mixed_frame(1500, 3, 0.1, seed=21)
    est = CARTClassifierCV(cv=5, random_state=3, max_surrogate=5).fit(frame, y)
    out["cv_mixed3/tree"] = _tree_digest(est.tree_, TREE_FIELDS + SPLIT_TABLE_FIELDS)
    out["cv_mixed3/cv"] = _cv_digest(est)
    return out


def compare(current, stored):
    """Names whose fingerprint differs from (or is missing in) the stored corpus."""
    return sorted(k for k in stored if current.get(k) != stored[k])


def main(argv):
    import cartjit
    print("cartjit from", Path(cartjit.__file__).parent)
    current = corpus()
    if "--write" in argv:
        STORE.parent.mkdir(exist_ok=True)
        STORE.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(current)} fingerprints to {STORE}")
        return 0
    stored = json.loads(STORE.read_text())
    diff = compare(current, stored)
    print(f"{len(stored) - len(diff)} of {len(stored)} fingerprints identical")
    for name in diff:
        print("  differs:", name)
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
