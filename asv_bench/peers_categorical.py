#!/usr/bin/env python
"""Categorical features: cartjit's subset splits against rpart and one-hot scikit-learn.

The data are the three mixed problems of :mod:`mixed_data` (10 numeric and 5 unordered
categorical features): ``a`` 20 levels, 2 classes; ``b`` 20 levels, regression; ``c``
8 levels, 3 classes. Three reports, printed as Markdown under one header (command, CPU
from ``/proc/cpuinfo``, ``CARTJIT_SIMD``, versions, Numba threads, load average):

fit times      per kind, ``--size`` training rows, all grown to purity:

               * cartjit ``CARTClassifier`` / ``CARTRegressor`` with
                 ``max_competitor=0`` (no competitor splits, as rpart is run) on the
                 DataFrame
                 (``category`` columns: subset splits), after an untimed warm-up fit
                 on 300 rows of the same kind (its time is shown: the JIT compile or
                 cache load);
               * rpart on the same rows, written to a CSV whose categorical columns are
                 read as factors; only the ``rpart(...)`` call is timed, with
                 ``system.time`` inside one R process (``cp=0, minsplit=2,
                 minbucket=1, xval=0, maxcompete=0, maxsurrogate=0, maxdepth=30``: 30 is
                 rpart's largest depth, so its tree may stop short of purity);
               * scikit-learn ``DecisionTreeClassifier`` / ``DecisionTreeRegressor``
                 (defaults, ``random_state=0``) on the one-hot float64 array (the
                 encoding is done once, outside the timing).

               cartjit and scikit-learn fit ``--repeat`` times, interleaved; rpart
               ``--rpart-repeat`` (default ``--repeat``) times after one untimed call
               on 1,000 rows (rpart's regression tree takes minutes at 1e5: see
               ``--rpart-repeat``). Medians, all samples listed. The ratios
               cartjit / rpart (target <= 0.1) and cartjit / scikit-learn (target
               <= 0.5) are printed with the tree sizes.
numeric fit    the numeric-only case of ``peers.py`` (``make_classification``, 20
               features, 3 classes, ``--size`` rows): cartjit, rpart and scikit-learn,
               to check that numeric fits keep their figures (run it on two checkouts,
               or use ``ab.py``) and to set the categorical ratios beside numeric ones.
tree quality   per kind, ``--quality-size`` training rows and ``--holdout`` new rows of
               the same problem: leaves, depth and held-out accuracy or MSE of cartjit
               (subset splits; and, for reference, the level codes taken as numbers) and
               of one-hot scikit-learn, grown to purity and pruned: cartjit
               ``CARTClassifierCV`` / ``CARTRegressorCV`` (``--folds``-fold CV, 1-SE
               rule); scikit-learn ``ccp_alpha`` chosen by ``--folds``-fold
               ``GridSearchCV`` over 25 values of its ``cost_complexity_pruning_path``
               (largest mean score, and the 1-SE choice from the same grid). The same on
               ``cartjit.datasets.load_play_golf`` (10 days) by leave-one-out. A
               comparison, not an assertion.

Options: ``--size`` (1e5), ``--repeat`` (3), ``--rpart-repeat``, ``--threads N``
(``NUMBA_NUM_THREADS``, set before Numba is imported; rpart and scikit-learn's tree fits
are single-threaded),
``--json OUT`` (every figure and sample), ``--kinds a,b,c``, ``--no-rpart``,
``--no-numeric``, ``--no-timing``, ``--no-quality``, ``--quality-size``, ``--holdout``,
``--folds``, ``--seed``. Examples::

    python asv_bench/peers_categorical.py --size 1e5 --repeat 5 --rpart-repeat 1
    CARTJIT_SIMD=0 python asv_bench/peers_categorical.py --threads 1 --no-quality
    python asv_bench/peers_categorical.py --no-timing --no-numeric --json quality.json
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

import peers  # noqa: E402  (this folder is on sys.path; captures the environment as given)
from mixed_data import KINDS, make_mixed

TARGET_RPART = 0.1
TARGET_SKLEARN = 0.5
#: untimed warm-up rows (JIT compile or cache load)
WARM_UP_ROWS = 300
#: values of ccp_alpha tried by scikit-learn's grid search
GRID_SIZE = 25


# --------------------------------------------------------------------------- arguments

def _kinds(text):
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if not kinds or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {sorted(KINDS)}, got {text!r}")
    return list(dict.fromkeys(kinds))


def _folds(text):
    value = peers._positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="peers_categorical.py",
        description="cartjit's subset splits against rpart and one-hot scikit-learn on "
                    "mixed numeric/categorical data; prints Markdown.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--size", type=peers._positive_int, default=100_000,
                   help="training rows of the timed fits (1e5 style accepted)")
    p.add_argument("--repeat", type=peers._positive_int, default=3,
                   help="timed fits per library (the median is reported)")
    p.add_argument("--rpart-repeat", type=peers._positive_int, default=None,
                   help="timed rpart fits per kind (default: --repeat); a regression "
                        "tree grown to purity takes rpart minutes at 1e5")
    p.add_argument("--threads", type=peers._positive_int, default=None,
                   help="NUMBA_NUM_THREADS for cartjit (default: Numba's, all cores)")
    p.add_argument("--json", metavar="OUT", default=None,
                   help="also write every figure and sample to this JSON file")
    p.add_argument("--kinds", type=_kinds, default=list(KINDS),
                   help="problems to run, comma-separated (a: 20 levels, 2 classes; "
                        "b: 20 levels, regression; c: 8 levels, 3 classes)")
    p.add_argument("--quality-size", type=peers._positive_int, default=20_000,
                   help="training rows of the tree-quality comparison")
    p.add_argument("--holdout", type=peers._positive_int, default=50_000,
                   help="held-out rows (same problem, new rows) of the quality comparison")
    p.add_argument("--folds", type=_folds, default=10,
                   help="CV folds of the pruned trees (both libraries)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the training rows")
    p.add_argument("--no-rpart", action="store_true", help="skip rpart")
    p.add_argument("--no-numeric", action="store_true", help="skip the numeric-only fit")
    p.add_argument("--no-timing", action="store_true", help="skip the categorical fit times")
    p.add_argument("--no-quality", action="store_true", help="skip the quality comparison")
    args = p.parse_args(argv)
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    return args


# --------------------------------------------------------------------------- models

def _check_cartjit():
    """Stop with a clear message when the cartjit imported has no categorical support."""
    from cartjit import CARTClassifier

    if "categorical_features" not in CARTClassifier().get_params():
        raise SystemExit(
            "peers_categorical.py: the cartjit imported ("
            f"{peers._cartjit_root()}) has no categorical_features parameter; "
            "subset splits need a version that has it")


def _cartjit(task, cv=None, categorical="from_dtype"):
    from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

    if cv is None:
        # no competitor splits, as rpart is run (maxcompete = 0)
        model = (CARTClassifier(max_competitor=0) if task == "classification"
                 else CARTRegressor(max_competitor=0))
    else:
        model = (CARTClassifierCV(cv=cv) if task == "classification"
                 else CARTRegressorCV(cv=cv))
    return model.set_params(categorical_features=categorical)


def _sklearn(task, ccp_alpha=0.0):
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    cls = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
    return cls(random_state=0, ccp_alpha=ccp_alpha)


def _cartjit_size(model):
    tree = model.tree_
    subset = int((tree.level_row >= 0).sum()) if hasattr(tree, "level_row") else 0
    return int(tree.n_leaves), int(tree.max_depth), subset


def _sklearn_size(model):
    return int(model.get_n_leaves()), int(model.get_depth())


def _timed(fit):
    gc.collect()
    start = time.perf_counter()
    model = fit()
    return time.perf_counter() - start, model


# --------------------------------------------------------------------------- rpart

_R_SCRIPT = """\
suppressMessages(library(rpart))
d <- read.csv({path!r}, colClasses = c({classes}))
{factors}
{response}
ctl <- rpart.control(cp = 0, minsplit = 2, minbucket = 1, xval = 0, maxcompete = 0,
                     maxsurrogate = 0, maxdepth = 30)
invisible(rpart(y ~ ., data = d[seq_len(min(1000, nrow(d))), ], method = {method!r},
                control = ctl))
times <- numeric(0)
for (r in seq_len({repeat})) {{
  tm <- system.time(fit <- rpart(y ~ ., data = d, method = {method!r}, control = ctl))
  times <- c(times, tm[["elapsed"]])
}}
nodes <- as.numeric(rownames(fit$frame))
cat("TIMES", times, "\\n")
cat("LEAVES", sum(fit$frame$var == "<leaf>"), "\\n")
cat("DEPTH", max(floor(log2(nodes))), "\\n")
cat("VERSION", as.character(packageVersion("rpart")), R.version$major, R.version$minor, "\\n")
"""


def _r_script(frame, task, path, repeat):
    """R code: read the CSV (``category`` columns as factors with their levels in
    order, numeric columns as numbers), then time ``rpart`` ``repeat`` times."""
    classification = task == "classification"
    categorical = [c for c in frame.columns if str(frame[c].dtype) == "category"]
    classes = ", ".join(['"character"' if c in categorical else '"numeric"'
                         for c in frame.columns]
                        + ['"integer"' if classification else '"numeric"'])
    factors = "\n".join(
        f'd${c} <- factor(d${c}, levels = c('
        + ", ".join(f'"{level}"' for level in frame[c].cat.categories) + "))"
        for c in categorical)
    return _R_SCRIPT.format(
        path=path, classes=classes, factors=factors,
        response="d$y <- factor(d$y)" if classification else "",
        method="class" if classification else "anova", repeat=repeat)


def time_rpart(frame, y, task, repeat):
    """rpart's ``repeat`` fit times (s) on ``frame`` and ``y``, the last tree's leaves
    and depth, and rpart's version (a dict)."""
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        path = os.path.join(tmp, "data.csv")
        frame.assign(y=y).to_csv(path, index=False, float_format="%.17g")
        out = peers.rscript_records(["-e", _r_script(frame, task, path, repeat)])
    return {"times": [float(t) for t in out["TIMES"]], "leaves": int(out["LEAVES"][0]),
            "depth": int(out["DEPTH"][0]),
            "version": f"rpart {out['VERSION'][0]}, R {out['VERSION'][1]}.{out['VERSION'][2]}"}


# --------------------------------------------------------------------------- fit times

def warm_up(kind, cv=False):
    """First fit + predict of a tiny draw of ``kind`` (``cv``: and a 3-fold CV fit, with
    and without subset splits): compile or load the kernels. Returns the seconds."""
    tiny = make_mixed(kind, WARM_UP_ROWS, random_state=12345)
    start = time.perf_counter()
    _cartjit(tiny.task).fit(tiny.frame, tiny.y).predict(tiny.frame)
    if cv:
        _cartjit(tiny.task, 3).fit(tiny.frame, tiny.y)
        _cartjit(tiny.task, 3, None).fit(tiny.ordinal, tiny.y).predict(tiny.ordinal)
    return time.perf_counter() - start


def time_kind(kind, args):
    """Fit times, sizes and warm-up of one kind: a dict (JSON-ready)."""
    warm = warm_up(kind)
    data = make_mixed(kind, args.size, random_state=args.seed)
    times = {"cartjit": [], "sklearn": []}
    for _ in range(args.repeat):  # interleaved: background load hits both alike
        t, ours = _timed(lambda: _cartjit(data.task).fit(data.frame, data.y))
        times["cartjit"].append(t)
        t, theirs = _timed(lambda: _sklearn(data.task).fit(data.onehot, data.y))
        times["sklearn"].append(t)
    result = {"kind": kind, "task": data.task, "n": args.size, "levels": data.n_levels,
              "warm_up_s": warm, "times": times,
              "cartjit_size": _cartjit_size(ours), "sklearn_size": _sklearn_size(theirs),
              "onehot_columns": data.onehot.shape[1]}
    del ours, theirs
    if not args.no_rpart:
        result["rpart"] = time_rpart(data.frame, data.y, data.task,
                                     args.rpart_repeat or args.repeat)
        times["rpart"] = result["rpart"]["times"]
    result["median"] = {lib: peers.median_of(t) for lib, t in times.items()}
    return result


def time_numeric(args):
    """The numeric-only case of peers.py: cartjit and scikit-learn on 20 features, 3 classes."""
    from cartjit import CARTClassifier
    from cartjit.datasets import make_classification
    from sklearn.tree import DecisionTreeClassifier

    Xs, ys = make_classification(WARM_UP_ROWS, 20, 3, random_state=12345)
    CARTClassifier(max_competitor=0).fit(Xs, ys).predict(Xs)
    X, y = make_classification(args.size, 20, 3, random_state=args.seed)
    times = {"cartjit": [], "sklearn": []}
    for _ in range(args.repeat):
        t, ours = _timed(lambda: CARTClassifier(max_competitor=0).fit(X, y))
        times["cartjit"].append(t)
        t, theirs = _timed(lambda: DecisionTreeClassifier(random_state=0).fit(X, y))
        times["sklearn"].append(t)
    result = {"n": args.size, "times": times, "cartjit_size": _cartjit_size(ours),
              "sklearn_size": _sklearn_size(theirs)}
    if not args.no_rpart:
        import pandas as pd

        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
        result["rpart"] = time_rpart(frame, y, "classification",
                                     args.rpart_repeat or args.repeat)
        times["rpart"] = result["rpart"]["times"]
    result["median"] = {lib: peers.median_of(t) for lib, t in times.items()}
    return result


def _samples(times):
    return "; ".join(f"{lib} " + ", ".join(peers._fmt_s(t) for t in ts)
                     for lib, ts in times.items())


def timing_lines(results, numeric, args):
    lines = [f"### Fit times, grown to purity, median of {args.repeat}", "",
             "| kind | cartjit | rpart | scikit-learn one-hot | cartjit / rpart "
             f"(≤ {TARGET_RPART}) | cartjit / sklearn (≤ {TARGET_SKLEARN}) | leaves "
             "cartjit / rpart / sklearn | depth cartjit / rpart / sklearn | subset-split "
             "nodes | warm-up (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r["median"]
        rp = r.get("rpart")
        name = (f"{r['kind']}: {r['levels']} levels, "
                + ("regression" if r["task"] == "regression" else
                   f"{3 if r['kind'] == 'c' else 2} classes") + f", n={r['n']:,}")
        lines.append(
            f"| {name} | {peers._fmt_s(m['cartjit'])} | "
            f"{peers._fmt_s(m['rpart']) if rp else 'n/a'} | {peers._fmt_s(m['sklearn'])} "
            f"({r['onehot_columns']} columns) | "
            f"{_verdict(m['cartjit'], m.get('rpart'), TARGET_RPART)} | "
            f"{_verdict(m['cartjit'], m['sklearn'], TARGET_SKLEARN)} | "
            f"{r['cartjit_size'][0]:,} / {_count(rp, 'leaves')} / "
            f"{r['sklearn_size'][0]:,} | {r['cartjit_size'][1]} / "
            f"{_count(rp, 'depth')} / {r['sklearn_size'][1]} | "
            f"{r['cartjit_size'][2]:,} | {r['warm_up_s']:.2f} |")
    if numeric:
        m = numeric["median"]
        rp = numeric.get("rpart")
        lines.append(
            f"| numeric only: peers.py default case, 20 features, 3 classes, "
            f"n={numeric['n']:,} | {peers._fmt_s(m['cartjit'])} | "
            f"{peers._fmt_s(m['rpart']) if rp else 'n/a'} | {peers._fmt_s(m['sklearn'])} | "
            f"{_verdict(m['cartjit'], m.get('rpart'), TARGET_RPART)} | "
            f"{_verdict(m['cartjit'], m['sklearn'], TARGET_SKLEARN)} | "
            f"{numeric['cartjit_size'][0]:,} / {_count(rp, 'leaves')} / "
            f"{numeric['sklearn_size'][0]:,} | {numeric['cartjit_size'][1]} / "
            f"{_count(rp, 'depth')} / {numeric['sklearn_size'][1]} | | |")
    lines += ["", "All fit times (s):"]
    for r in results:
        lines.append(f"- {r['kind']}: {_samples(r['times'])}")
    if numeric:
        lines.append(f"- numeric only: {_samples(numeric['times'])}")
    rparts = [r["rpart"] for r in [*results, numeric or {}] if "rpart" in r]
    if rparts:
        lines += ["", f"- {rparts[0]['version']}; rpart stops at depth 30 "
                  "(its largest maxdepth), so where the other trees are deeper its tree is "
                  "smaller and its time a lower bound for a tree grown to purity"]
    return lines


def _count(rpart, key):
    return "n/a" if rpart is None else f"{rpart[key]:,}"


def _verdict(ours, theirs, target):
    if theirs is None or not theirs > 0:
        return "n/a"
    ratio = ours / theirs
    return f"**{ratio:.3f}**" + ("" if ratio <= target else " (misses)")


# --------------------------------------------------------------------------- quality

def _score(task, y_true, y_pred):
    import numpy as np

    if task == "classification":
        return float(np.mean(y_true == y_pred))
    return float(np.mean((y_true - y_pred) ** 2))


def _alpha_grid(model, X, y):
    """GRID_SIZE values of scikit-learn's pruning path, trees of about 1 .. N leaves.

    The path's alphas increase as the tree shrinks; position len - k prunes to about k
    leaves, so positions taken geometrically from the end span tree sizes evenly on a
    log scale.
    """
    import numpy as np

    alphas = model.cost_complexity_pruning_path(X, y).ccp_alphas
    back = np.unique(np.geomspace(1, len(alphas), GRID_SIZE).astype(np.int64))
    return np.unique(alphas[len(alphas) - back])


def _one_se_index(cv_results, folds):
    """Largest ccp_alpha whose mean CV score is within one SE of the best (1-SE rule)."""
    import numpy as np

    mean = np.asarray(cv_results["mean_test_score"])
    se = np.asarray(cv_results["std_test_score"]) / np.sqrt(folds)
    best = int(np.argmax(mean))
    alphas = np.asarray(cv_results["param_ccp_alpha"], dtype=np.float64)
    ok = np.flatnonzero(mean >= mean[best] - se[best])
    return int(ok[np.argmax(alphas[ok])])


def sklearn_pruned(task, X, y, folds, cv=None):
    """scikit-learn's tree pruned at the ccp_alpha of a grid search: (best, 1-SE) models."""
    from sklearn.model_selection import GridSearchCV

    grid = _alpha_grid(_sklearn(task), X, y)
    scoring = "accuracy" if task == "classification" else "neg_mean_squared_error"
    search = GridSearchCV(_sklearn(task), {"ccp_alpha": grid}, cv=cv or folds,
                          scoring=scoring).fit(X, y)
    one_se = grid[_one_se_index(search.cv_results_, folds)]
    return search.best_estimator_, _sklearn(task, ccp_alpha=one_se).fit(X, y)


def _row(name, model, size, task, y_test, X_test, fit_s):
    return {"model": name, "leaves": size[0], "depth": size[1],
            "score": _score(task, y_test, model.predict(X_test)), "fit_s": fit_s}


def quality_kind(kind, args):
    """Leaves, depth and held-out score of each model on one kind (list of dicts)."""
    warm_up(kind, cv=True)
    train = make_mixed(kind, args.quality_size, random_state=args.seed)
    test = make_mixed(kind, args.holdout, random_state=args.seed + 1)
    task, rows = train.task, []
    cases = [
        ("cartjit, subset splits, grown to purity", None, train.frame, test.frame, "from_dtype"),
        (f"cartjit, subset splits, {args.folds}-fold CV, 1-SE", args.folds, train.frame,
         test.frame, "from_dtype"),
        ("cartjit, level codes as numbers, grown to purity", None, train.ordinal,
         test.ordinal, None),
        (f"cartjit, level codes as numbers, {args.folds}-fold CV, 1-SE", args.folds,
         train.ordinal, test.ordinal, None),
    ]
    for name, cv, X, X_test, categorical in cases:
        t, model = _timed(lambda: _cartjit(task, cv, categorical).fit(X, train.y))
        rows.append(_row(name, model, _cartjit_size(model), task, test.y, X_test, t))
    t, model = _timed(lambda: _sklearn(task).fit(train.onehot, train.y))
    rows.append(_row("scikit-learn, one-hot, grown to purity", model, _sklearn_size(model),
                     task, test.y, test.onehot, t))
    t, (best, one_se) = _timed(lambda: sklearn_pruned(task, train.onehot, train.y,
                                                      args.folds))
    rows.append(_row(f"scikit-learn, one-hot, ccp_alpha by {args.folds}-fold "
                     "GridSearchCV (best mean score)", best, _sklearn_size(best), task,
                     test.y, test.onehot, t))
    rows.append(_row("scikit-learn, one-hot, the same grid, 1-SE", one_se,
                     _sklearn_size(one_se), task, test.y, test.onehot, None))
    return {"kind": kind, "task": task, "n_train": args.quality_size,
            "n_test": args.holdout, "rows": rows}


def quality_play_golf():
    """Leave-one-out on the ten play-golf days: full and pruned trees of both libraries."""
    import numpy as np
    import pandas as pd
    from sklearn.model_selection import KFold

    from cartjit.datasets import load_play_golf

    X, y = load_play_golf(return_X_y=True)
    X = X.astype("category")
    y = np.asarray(y)
    onehot = pd.get_dummies(X, dtype=np.float64).to_numpy()
    n = len(y)
    models = {
        "cartjit, subset splits, grown to purity":
            lambda Xc, _o, yy: _cartjit("classification").fit(Xc, yy),
        "cartjit, subset splits, leave-one-out CV, 1-SE":
            lambda Xc, _o, yy: _cartjit("classification", "loo").fit(Xc, yy),
        "scikit-learn, one-hot, grown to purity":
            lambda _c, Xo, yy: _sklearn("classification").fit(Xo, yy),
        "scikit-learn, one-hot, ccp_alpha by leave-one-out GridSearchCV":
            lambda _c, Xo, yy: sklearn_pruned("classification", Xo, yy, len(yy),
                                              cv=KFold(len(yy)))[0],
    }
    rows = []
    for name, fit in models.items():
        hits = []
        for i in range(n):
            keep = np.arange(n) != i
            model = fit(X[keep], onehot[keep], y[keep])
            Xi = X.iloc[[i]] if name.startswith("cartjit") else onehot[[i]]
            hits.append(bool(model.predict(Xi)[0] == y[i]))
        full = fit(X, onehot, y)
        size = _cartjit_size(full) if name.startswith("cartjit") else _sklearn_size(full)
        rows.append({"model": name, "leaves": size[0], "depth": size[1],
                     "score": float(np.mean(hits)), "fit_s": None})
    return {"kind": "play_golf", "task": "classification", "n_train": n - 1,
            "n_test": 1, "rows": rows}


def quality_lines(results, args):
    lines = ["### Tree quality on held-out rows", ""]
    for r in results:
        score = "accuracy" if r["task"] == "classification" else "MSE"
        if r["kind"] == "play_golf":
            lines.append("**play golf** (`cartjit.datasets.load_play_golf`, 10 days, two "
                         "two-level features): leave-one-out accuracy; leaves and depth "
                         "of the tree fitted on all ten days")
        else:
            lines.append(f"**kind {r['kind']}**: {r['n_train']:,} training rows, "
                         f"{r['n_test']:,} held-out rows (same problem, new rows)")
        lines += ["", f"| model | leaves | depth | held-out {score} | fit time (s) |",
                  "|---|---:|---:|---:|---:|"]
        for row in r["rows"]:
            fit_s = "" if row["fit_s"] is None else peers._fmt_s(row["fit_s"])
            lines.append(f"| {row['model']} | {row['leaves']:,} | {row['depth']} | "
                         f"{row['score']:.4f} | {fit_s} |")
        lines.append("")
    lines.append(f"scikit-learn's grid: {GRID_SIZE} values of its pruning path "
                 "(trees of about 1 to N leaves, geometrically); its 1-SE rule uses "
                 "the fold scores' standard deviation / sqrt(folds). The fit time of a "
                 "grid search includes the path and every refit.")
    return lines


# --------------------------------------------------------------------------- main

def _header(args, argv):
    import cartjit.engine.speed as config

    lines = peers.header("cartjit subset splits vs rpart and one-hot scikit-learn", argv)
    lines += [
        f"- CARTJIT_SIMD={os.environ.get('CARTJIT_SIMD', 'unset')} (16-key blocks "
        f"{'on' if config.SIMD else 'off'})",
        "- data: asv_bench/mixed_data.py make_mixed(kind, n, random_state="
        f"{args.seed}); held-out rows random_state={args.seed + 1}",
    ]
    return lines


def _threading_layer():
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run
        return "not started"


def main(argv=None):
    argv = sys.argv if argv is None else argv
    args = parse_args(argv[1:])
    peers.set_numba_threads(args.threads)
    if not args.no_rpart and not args.no_timing and shutil.which("Rscript") is None:
        raise SystemExit("peers_categorical.py: Rscript not found; install R with rpart "
                         "or pass --no-rpart")
    _check_cartjit()
    header = _header(args, argv)  # before the work: the load average is the one at start
    timing = [time_kind(kind, args) for kind in args.kinds] if not args.no_timing else []
    numeric = time_numeric(args) if not args.no_numeric else None
    quality = []
    if not args.no_quality:
        quality = [quality_kind(kind, args) for kind in args.kinds] + [quality_play_golf()]
    header.append(f"- numba threading layer: {_threading_layer()}")
    lines = header + [""]
    if timing or numeric:
        lines += timing_lines(timing, numeric, args) + [""]
    if quality:
        lines += quality_lines(quality, args)
    print("\n".join(lines), flush=True)
    if args.json:
        report = {"command": shlex.join(["python", *argv]), "cpu": peers._cpu_model(),
                  "cartjit_simd": os.environ.get("CARTJIT_SIMD", "unset"),
                  "header": header, "timing": timing, "numeric": numeric,
                  "quality": quality}
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=_jsonable)
    return 0


def _jsonable(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
