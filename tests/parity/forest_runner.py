"""cartjit's forests beside R's randomForest, ranger and ipred, and scikit-learn's forests,
on the same random train/test splits of real data sets.

For each data set of :data:`DATASETS`, :func:`draw_splits` draws ``n_splits`` random
train/test splits (70 % / 30 %) from a fixed seed; every method is fitted on each
training sample and scored on its test sample, and reports its out-of-bag (OOB) error
on the training sample. Errors are misclassification rates (classification) or mean
squared errors (regression). The R peers of one data set run in one ``Rscript`` process
(``forest_peers.R``), over all the splits.

The methods (all with B = ``n_trees`` trees, m = ``mtry`` features drawn at each node,
bootstrap samples of n out of n with replacement, trees grown to the end):

=====================  ============================================================
``cartjit_rf``         ``RandomForest*`` (``voting="vote"`` for classification, as
                       randomForest and ranger vote), on the filled-in data
``cartjit_rf_sur``     the same on the data with their missing values (surrogate
                       splits); only for data sets with missing values
``cartjit_rf_proba``   classification: the same forest with ``voting="proba"``,
                       scikit-learn's rule, beside scikit-learn
``cartjit_bag``        ``BaggedCART*`` (``voting="vote"``), on the data with their
                       missing values (surrogate splits)
``randomForest``       ``randomForest(nodesize = 1)`` on the filled-in data
``ranger``             ``ranger(min.node.size = 1, respect.unordered.factors =
                       "partition")`` on the filled-in data
``ipred``              ``ipredbagg`` of rpart trees, ``rpart.control(minsplit = 2, cp
                       = 0, xval = 0)``, on the data with their missing values
``sklearn``            ``RandomForest*`` of scikit-learn (``min_samples_leaf=1``), on
                       the filled-in data, factors as their level codes
=====================  ============================================================

**Node sizes.** randomForest's ``nodesize`` and ranger's ``min.node.size`` stop a node
whose bootstrap sample holds at most that many draws (repeated cases counted each
time), rpart (inside ipred) counts the rows of its bootstrap copy of the data the same
way, while cartjit's ``min_samples_split``/``min_samples_leaf`` count distinct in-bag
cases. The conventions agree only for trees grown to the end: nodesize 1, ranger's
min.node.size 1, rpart's minsplit 2 with cp 0 (ipred's own default for classification)
and cartjit's ``min_samples_split=2, min_samples_leaf=1`` all split every node whose
cases are not all alike. So every forest here is grown to the end, for regression too
(randomForest's default nodesize there is 5, ipred's rpart control for regression its
defaults minsplit 20, cp 0.01).

**Missing values.** randomForest stops at a missing value and ranger 0.14 does too
(missing-value handling came with ranger 0.16). For them, and for scikit-learn, each
split's missing values are filled in with the training sample's median (numbers) or
most frequent level (factors; ties to the first level), as randomForest's
``na.roughfix`` does, and cartjit's random forest (``cartjit_rf``) gets the same
filled-in data, so that the comparison is of the forests, not of the ways to handle a
missing value. ipred bags rpart trees, which handle missing values with surrogate
splits as cartjit's trees do: ``cartjit_bag`` and ``ipred`` get the data with their
missing values. ``cartjit_rf_sur`` (cartjit's forest with surrogates) is shown beside
the filled-in peers in the table of docs/forests.md but not held to them.

**Factors.** Unordered factors are split over groups of levels by cartjit, randomForest
and ranger (``respect.unordered.factors = "partition"``); scikit-learn's forests take
no factors, so they get the level codes as numbers. Factors whose levels are numeric
scores (BreastCancer's cytology grades, Ozone's day of the month) are given to every
method as numbers.

Run as a script, it prints the agreement table of docs/forests.md::

    NUMBA_NUM_THREADS=1 python tests/parity/forest_runner.py [--splits 20] [--trees 50]
"""
from __future__ import annotations

import functools
import math
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np
import pandas as pd

if __package__ in (None, ""):
    # run as a script: tests/ on sys.path, as pytest does, and this checkout's cartjit
    # before any installed one
    sys.path[:0] = [str(Path(__file__).resolve().parents[2]),
                    str(Path(__file__).resolve().parents[1])]

from parity import rpart_runner  # noqa: E402

__all__ = ["Dataset", "DATASETS", "SKLEARN_BAGGING", "pairs", "R_PACKAGES",
           "TRAIN_FRACTION", "load", "mtry", "draw_splits", "fills", "filled", "run_r_peers",
           "run_python", "run_dataset", "agreement", "missing_r_packages"]

#: The R packages the peers need besides rpart.
R_PACKAGES = ("randomForest", "ranger", "ipred", "mlbench")

TRAIN_FRACTION = 0.7
SEED = 40


class Dataset(NamedTuple):
    """One real data set: where it comes from, its target and what to do with it."""

    name: str
    source: str            # "mlbench::<name>" (exported by R) or "cartjit" (bundled)
    target: str
    task: str              # "class" or "reg"
    drop: tuple = ()       # columns left out
    as_numbers: tuple = ()  # factors whose level labels are numbers, given as numbers


DATASETS = {d.name: d for d in (
    Dataset("Sonar", "mlbench::Sonar", "Class", "class"),
    Dataset("Glass", "mlbench::Glass", "Type", "class"),
    # V2 is constant; V1 a 0/1 indicator
    Dataset("Ionosphere", "mlbench::Ionosphere", "Class", "class", ("V2",), ("V1",)),
    Dataset("PimaIndiansDiabetes2", "mlbench::PimaIndiansDiabetes2", "diabetes", "class"),
    Dataset("BreastCancer", "mlbench::BreastCancer", "Class", "class", ("Id",),
            ("Cl.thickness", "Cell.size", "Cell.shape", "Marg.adhesion", "Epith.c.size",
             "Bare.nuclei", "Bl.cromatin", "Normal.nucleoli", "Mitoses")),
    Dataset("HouseVotes84", "mlbench::HouseVotes84", "Class", "class"),
    Dataset("titanic", "cartjit", "survived", "class"),
    Dataset("BostonHousing", "mlbench::BostonHousing", "medv", "reg"),
    Dataset("Servo", "mlbench::Servo", "Class", "reg"),
    # V4 (the ozone reading) is the target; V2 (day of the month) a number
    Dataset("Ozone", "mlbench::Ozone", "V4", "reg", (), ("V2",)),
)}

#: Data sets on which scikit-learn's forest is also compared at m = p (below).
SKLEARN_BAGGING = ("HouseVotes84", "titanic")


def pairs(name: str) -> list:
    """(cartjit's method, its peer) for data set ``name``: the pairs whose mean paired
    difference is held to two standard errors."""
    classif = DATASETS[name].task == "class"
    out = [("cartjit_rf", "randomForest"), ("cartjit_rf", "ranger"),
           ("cartjit_rf_proba" if classif else "cartjit_rf", "sklearn"),
           ("cartjit_bag", "ipred")]
    if name in SKLEARN_BAGGING:
        out.append(("cartjit_bag_proba" if classif else "cartjit_bag", "sklearn_bag"))
    return out


def missing_r_packages() -> list[str]:
    """The packages of :data:`R_PACKAGES` that Rscript cannot load (all of them when
    there is no Rscript)."""
    return list(_missing_r_packages())


@functools.lru_cache(maxsize=1)
def _missing_r_packages() -> tuple:
    import subprocess

    exe = rpart_runner.rscript_path()
    if exe is None:
        return R_PACKAGES
    code = ("for (p in c(" + ", ".join(f'"{p}"' for p in R_PACKAGES) + ")) "
            "if (!requireNamespace(p, quietly = TRUE)) cat(p, '\\n')")
    try:
        proc = subprocess.run([exe, "--vanilla", "-e", code], capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return R_PACKAGES
    if proc.returncode != 0:
        return R_PACKAGES
    return tuple(proc.stdout.split())


# --------------------------------------------------------------------------- data

@functools.lru_cache(maxsize=1)
def _r_frames() -> dict:
    """Every mlbench data set of :data:`DATASETS`, exported by one R process."""
    names = [d.source for d in DATASETS.values() if d.source.startswith("mlbench::")]
    return rpart_runner.r_datasets(names, factors="category")


def load(name: str) -> pd.DataFrame:
    """Data set ``name`` as a DataFrame: numbers float64, factors pandas categoricals
    (R's levels, unordered), the target last (class labels as strings); rows whose
    target is missing are left out."""
    spec = DATASETS[name]
    if spec.source == "cartjit":
        import cartjit.datasets
        frame = getattr(cartjit.datasets, f"load_{name}")()
    else:
        frame = _r_frames()[spec.source].copy()
    frame = frame.drop(columns=list(spec.drop))
    frame = frame[frame[spec.target].notna()]
    # A row missing every feature is left out: rpart's na.rpart drops it, and ipred's
    # predict() (0.9-13) then pairs its trees' predictions with the wrong rows.
    features = frame.drop(columns=[spec.target])
    frame = frame[features.notna().any(axis=1)].reset_index(drop=True)
    out = {}
    for col in frame.columns:
        s = frame[col]
        if col == spec.target:
            continue
        if col in spec.as_numbers:
            out[col] = pd.to_numeric(s.astype(object), errors="raise").astype(np.float64)
        elif isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object:
            cats = (list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype)
                    else sorted(s.dropna().unique()))
            out[col] = pd.Categorical(s.astype(object), categories=cats, ordered=False)
        else:
            out[col] = s.astype(np.float64)
    y = frame[spec.target]
    out[spec.target] = (y.astype(str) if spec.task == "class" else y.astype(np.float64))
    return pd.DataFrame(out)


def mtry(name: str, df: pd.DataFrame) -> int:
    """randomForest's default m: ⌊√p⌋ (classification), max(1, ⌊p/3⌋) (regression)."""
    p = df.shape[1] - 1
    if DATASETS[name].task == "class":
        return max(1, math.isqrt(p))
    return max(1, p // 3)


def draw_splits(name: str, n: int, n_splits: int) -> np.ndarray:
    """(n_splits, n) bool: True for the training cases of each split, from a seed of
    the data set's name."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    n_train = int(round(TRAIN_FRACTION * n))
    train = np.zeros((n_splits, n), dtype=bool)
    for s in range(n_splits):
        train[s, rng.permutation(n)[:n_train]] = True
    return train


def fills(X: pd.DataFrame, train: np.ndarray) -> dict:
    """Per column with a missing value: the training sample's median (numbers) or most
    frequent level (factors, ties to the first level), randomForest's na.roughfix."""
    out = {}
    for col in X.columns:
        s = X[col]
        if not s.isna().any():
            continue
        t = s[train]
        if isinstance(s.dtype, pd.CategoricalDtype):
            counts = t.value_counts(sort=False).reindex(s.cat.categories).to_numpy()
            out[col] = s.cat.categories[int(np.argmax(counts))]
        else:
            out[col] = float(np.median(t.dropna().to_numpy()))
    return out


def filled(X: pd.DataFrame, values: dict) -> pd.DataFrame:
    """X with each column's missing values replaced by ``values[column]``."""
    return X.fillna(values) if values else X


# --------------------------------------------------------------------------- R

def run_r_peers(name: str, df: pd.DataFrame, train: np.ndarray, split_fills: list,
                n_trees: int, m: int, peers: Sequence[str] = ("randomForest", "ranger",
                                                               "ipred"),
                timeout: float = 1200) -> pd.DataFrame:
    """The R peers on every split, in one Rscript process: a DataFrame of split,
    method, test_error, oob_error."""
    spec = DATASETS[name]
    levels = {c: [str(v) for v in df[c].cat.categories] for c in df.columns
              if isinstance(df[c].dtype, pd.CategoricalDtype)}
    classes = sorted(df[spec.target].unique()) if spec.task == "class" else []
    params = {
        ".columns": list(df.columns), ".target": spec.target, ".task": spec.task,
        ".char_target": [spec.target] if spec.task == "class" else [],
        ".levels": levels, ".classes": classes, ".ntree": int(n_trees), ".mtry": int(m),
        ".seed": SEED, ".peers": list(peers)}
    with tempfile.TemporaryDirectory(prefix="cartjit-forest-") as tmp:
        work = Path(tmp)
        lines = []
        for k, v in params.items():
            if isinstance(v, list) and not v:
                v = "character(0)"
            elif isinstance(v, dict) and not v:
                v = "list()"
            else:
                v = rpart_runner._r_literal(v)
            lines.append(f"{k} <- {v}")
        (work / "params.R").write_text("\n".join(lines) + "\n", encoding="utf-8")
        data = pd.DataFrame({c: rpart_runner._encode_column(df[c].astype(object)
                                                             if c in levels else df[c])[0]
                             for c in df.columns})
        data.to_csv(work / "data.csv", index=False)
        pd.DataFrame(train.T.astype(int),
                     columns=[f"s{s}" for s in range(train.shape[0])]).to_csv(
            work / "splits.csv", index=False)
        rows = [(s, col, repr(v) if isinstance(v, float) else str(v))
                for s, values in enumerate(split_fills) for col, v in values.items()]
        if rows:
            pd.DataFrame(rows, columns=["split", "column", "value"]).to_csv(
                work / "fills.csv", index=False)
        script = (Path(__file__).with_name("forest_peers.R")).read_text(encoding="utf-8")
        rpart_runner._run_r(script, work, timeout)
        out = pd.read_csv(work / "results.csv")
    return out


# --------------------------------------------------------------------------- Python

def _errors(task, pred, truth):
    if task == "class":
        return float(np.mean(np.asarray(pred) != np.asarray(truth)))
    return float(np.mean((np.asarray(pred, dtype=np.float64) - truth) ** 2))


def _sklearn_oob(est, y, classification):
    """scikit-learn's OOB misclassification rate, or OOB mean squared error."""
    if classification:
        return 1.0 - est.oob_score_
    return float(np.nanmean((est.oob_prediction_ - y) ** 2))


def run_python(name: str, df: pd.DataFrame, train: np.ndarray, split_fills: list,
               n_trees: int, m: int, sklearn: bool = True, surrogates: bool = False,
               n_jobs: int = 2) -> pd.DataFrame:
    """cartjit's forests (and scikit-learn's, when ``sklearn`` and it imports; and
    ``cartjit_rf_sur`` when ``surrogates`` and the data have missing values) on every
    split: a DataFrame of split, method, test_error, oob_error. scikit-learn runs on one
    thread (its thread pool costs more than it saves on these small samples)."""
    from cartjit import (BaggedCARTClassifier, BaggedCARTRegressor,
                         RandomForestClassifier, RandomForestRegressor)

    spec = DATASETS[name]
    classif = spec.task == "class"
    X, y = df.drop(columns=[spec.target]), df[spec.target].to_numpy()
    surrogates = surrogates and bool(X.isna().to_numpy().any())
    if sklearn:
        try:
            import sklearn.ensemble as skl
        except ImportError:
            sklearn = False
    rows = []
    common = dict(min_samples_split=2, min_samples_leaf=1, oob_score=True, n_jobs=n_jobs)
    for s in range(train.shape[0]):
        tr, te = train[s], ~train[s]
        Xf = filled(X, split_fills[s])
        fits = []
        if classif:
            fits.append(("cartjit_rf", Xf, RandomForestClassifier(
                n_trees, max_features=m, voting="vote", random_state=s, **common)))
            fits.append(("cartjit_rf_proba", Xf, RandomForestClassifier(
                n_trees, max_features=m, voting="proba", random_state=s, **common)))
            if surrogates:
                fits.append(("cartjit_rf_sur", X, RandomForestClassifier(
                    n_trees, max_features=m, voting="vote", random_state=s, **common)))
            fits.append(("cartjit_bag", X, BaggedCARTClassifier(
                n_trees, voting="vote", random_state=s, **common)))
        else:
            fits.append(("cartjit_rf", Xf, RandomForestRegressor(
                n_trees, max_features=m, random_state=s, **common)))
            if surrogates:
                fits.append(("cartjit_rf_sur", X, RandomForestRegressor(
                    n_trees, max_features=m, random_state=s, **common)))
            fits.append(("cartjit_bag", X, BaggedCARTRegressor(
                n_trees, random_state=s, **common)))
        if sklearn and classif and name in SKLEARN_BAGGING:
            fits.append(("cartjit_bag_proba", Xf, BaggedCARTClassifier(
                n_trees, voting="proba", random_state=s, **common)))
        for method, data, est in fits:
            est.fit(data[tr], y[tr])
            rows.append((s, method, _errors(spec.task, est.predict(data[te]), y[te]),
                         float(est.oob_error_)))
        if sklearn:
            codes = Xf.apply(lambda c: c.cat.codes.astype(np.float64)
                             if isinstance(c.dtype, pd.CategoricalDtype) else c)
            Z = codes.to_numpy(dtype=np.float64)
            cls = skl.RandomForestClassifier if classif else skl.RandomForestRegressor
            est = cls(n_trees, max_features=m, min_samples_leaf=1, oob_score=True,
                      random_state=s).fit(Z[tr], y[tr])
            rows.append((s, "sklearn", _errors(spec.task, est.predict(Z[te]), y[te]),
                         _sklearn_oob(est, y[tr], classif)))
            if name in SKLEARN_BAGGING:
                est = cls(n_trees, max_features=None, min_samples_leaf=1, oob_score=True,
                          random_state=s).fit(Z[tr], y[tr])
                rows.append((s, "sklearn_bag", _errors(spec.task, est.predict(Z[te]), y[te]),
                             _sklearn_oob(est, y[tr], classif)))
    return pd.DataFrame(rows, columns=["split", "method", "test_error", "oob_error"])


# --------------------------------------------------------------------------- together

def run_dataset(name: str, n_splits: int = 20, n_trees: int = 50, sklearn: bool = True,
                surrogates: bool = False, n_jobs: int = 2) -> pd.DataFrame:
    """Every method on ``n_splits`` splits of data set ``name``: split, method,
    test_error, oob_error. The R process runs while Python fits its forests."""
    from concurrent.futures import ThreadPoolExecutor

    df = load(name)
    X = df.drop(columns=[DATASETS[name].target])
    train = draw_splits(name, len(df), n_splits)
    split_fills = [fills(X, train[s]) for s in range(n_splits)]
    m = mtry(name, df)
    def timed(f, *args, **kwargs):
        t = time.perf_counter()
        return f(*args, **kwargs), time.perf_counter() - t

    with ThreadPoolExecutor(1) as pool:
        r = pool.submit(timed, run_r_peers, name, df, train, split_fills, n_trees, m)
        py, t_py = timed(run_python, name, df, train, split_fills, n_trees, m,
                         sklearn=sklearn, surrogates=surrogates, n_jobs=n_jobs)
        r, t_r = r.result()
    out = pd.concat([py, r], ignore_index=True)
    out.attrs["seconds"] = {"python": t_py, "R": t_r}
    return out


def agreement(results: pd.DataFrame, ours: str, peer: str, error: str) -> dict:
    """The paired comparison of two methods over the splits for ``error``
    ("test_error" or "oob_error"): their mean errors, the mean difference ours − peer,
    its standard error (sd of the differences / √S) and S."""
    wide = results.pivot(index="split", columns="method", values=error)
    d = (wide[ours] - wide[peer]).to_numpy()
    s = len(d)
    return {"ours": float(wide[ours].mean()), "peer": float(wide[peer].mean()),
            "diff": float(d.mean()), "se": float(d.std(ddof=1) / math.sqrt(s)), "n": s}


def _table(results: dict, error: str) -> str:
    """One markdown table of ``error`` over the data sets: each method's mean, and each
    pair's mean paired difference ± its standard error (|z| > 2 in bold)."""
    means = ("cartjit_rf", "randomForest", "ranger", "sklearn", "cartjit_bag", "ipred")
    diffs = (("cartjit_rf", "randomForest"), ("cartjit_rf", "ranger"),
             ("cartjit_rf*", "sklearn"), ("cartjit_bag", "ipred"),
             ("cartjit_bag*", "sklearn_bag"), ("cartjit_rf_sur", "randomForest"))
    head = ["data set", "task", "n", "m", "cartjit RF", "randomForest", "ranger",
            "scikit-learn", "cartjit bagging", "ipred", "RF − randomForest", "RF − ranger",
            "RF* − scikit-learn", "bagging − ipred", "bagging* − scikit-learn (m = p)",
            "RF, surrogates − randomForest"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, res in results.items():
        spec = DATASETS[name]
        fmt = "{:.4f}" if spec.task == "class" else "{:.2f}"
        df = load(name)
        have = set(res.method)
        wide = res.pivot(index="split", columns="method", values=error)
        cells = [name, spec.task, str(len(df)), str(mtry(name, df))]
        cells += [fmt.format(wide[m].mean()) if m in have else "–" for m in means]
        for ours, peer in diffs:
            if ours.endswith("*"):  # the averaging forest: voting="proba"
                ours = ours[:-1] + ("_proba" if spec.task == "class" else "")
            if ours not in have or peer not in have:
                cells.append("–")
                continue
            a = agreement(res, ours, peer, error)
            text = fmt.format(a["diff"]) + " ± " + fmt.format(a["se"])
            cells.append(f"**{text}**" if abs(a["diff"]) > 2 * a["se"] else text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    import argparse

    import cartjit

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--splits", type=int, default=20)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--save", help="also write every split's errors to this CSV file")
    ap.add_argument("datasets", nargs="*", default=list(DATASETS))
    args = ap.parse_args(argv)
    print(f"cartjit from {Path(cartjit.__file__).parent}", file=sys.stderr)
    results = {}
    for name in args.datasets:
        t = time.perf_counter()
        results[name] = run_dataset(name, args.splits, args.trees, surrogates=True,
                                    n_jobs=args.jobs)
        sec = results[name].attrs["seconds"]
        print(f"{name}: {time.perf_counter() - t:.1f} s (Python {sec['python']:.1f} s, R "
              f"{sec['R']:.1f} s)", file=sys.stderr)
    if args.save:
        pd.concat([r.assign(dataset=k) for k, r in results.items()]).to_csv(args.save,
                                                                              index=False)
    for error in ("test_error", "oob_error"):
        print(_table(results, error))
        print()


if __name__ == "__main__":
    main()
