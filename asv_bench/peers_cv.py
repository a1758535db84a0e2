"""Cross-validated pruning: cartjit against rpart and scikit-learn on the same data.

Measures, in one run on one dataset (``cartjit.datasets.make_classification``):

* cartjit: ``CARTClassifierCV(cv=V)`` — grow T_max, its pruning sequence, V fold trees
  (from the presorted sample), scoring of every α'_k, selection;
* rpart: ``rpart(y ~ ., method="class", cp=0, minsplit=2, minbucket=1, xval=V,
  maxcompete=0, maxsurrogate=0)`` timed inside R with ``system.time`` (the CSV load
  is excluded), through ``Rscript``;
* scikit-learn (``--sklearn``): ``GridSearchCV(DecisionTreeClassifier(random_state=0),
  {"ccp_alpha": 20 values from its cost_complexity_pruning_path}, cv=V)`` — the way
  to choose α by CV there, which refits once per α per fold (slow: ~10 min at 1e5);
* ``cost_complexity_path()`` against the fit time.

Prints a Markdown table with the ratios. Example::

    python asv_bench/peers_cv.py --n 100000 --folds 10 --sklearn
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np


def _machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}"


def time_rpart(X, y, folds, tmp):
    path = os.path.join(tmp, "data.csv")
    cols = [f"x{j}" for j in range(X.shape[1])]
    header = ",".join(cols + ["y"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="",
               fmt="%.17g")
    script = f"""
suppressMessages(library(rpart))
d <- read.csv("{path}")
d$y <- factor(d$y)
ctl <- rpart.control(cp = 0, minsplit = 2, minbucket = 1, xval = {folds},
                     maxcompete = 0, maxsurrogate = 0)
set.seed(1)
tm <- system.time(fit <- rpart(y ~ ., data = d, method = "class", control = ctl))
cat(tm[["elapsed"]], nrow(fit$cptable), sum(fit$frame$var == "<leaf>"), "\\n")
"""
    out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True,
                         check=True, timeout=3600)
    elapsed, n_rows, n_leaves = out.stdout.split()
    return float(elapsed), int(n_rows), int(n_leaves)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, default=1e5)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many cartjit runs")
    ap.add_argument("--sklearn", action="store_true", help="also time GridSearchCV (slow)")
    ap.add_argument("--no-rpart", action="store_true")
    args = ap.parse_args(argv)

    import numba

    import cartjit
    from cartjit.datasets import make_classification

    n = int(args.n)
    X, y = make_classification(n, args.features, args.classes, random_state=0)
    cartjit.CARTClassifierCV(cv=3).fit(X[:500], y[:500])  # compile / load the kernels

    best_cv = best_fit = best_path = np.inf
    for _ in range(args.repeat):
        t = time.perf_counter()
        cv = cartjit.CARTClassifierCV(cv=args.folds, random_state=0).fit(X, y)
        best_cv = min(best_cv, time.perf_counter() - t)
        t = time.perf_counter()
        est = cartjit.CARTClassifier().fit(X, y)
        best_fit = min(best_fit, time.perf_counter() - t)
        t = time.perf_counter()
        path = est.cost_complexity_path()
        best_path = min(best_path, time.perf_counter() - t)

    print(f"command: python {' '.join(sys.argv)}")
    print(f"machine: {_machine()}; numba threads {numba.get_num_threads()}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"data: n={n}, {args.features} features, {args.classes} classes, V={args.folds}\n")
    print("| what | time (s) | ratio cartjit/peer | notes |")
    print("|---|---|---|---|")
    print(f"| cartjit CARTClassifierCV | {best_cv:.3f} | | K={len(cv.cv_results_)} subtrees, "
          f"T_max {est.get_n_leaves()} leaves, chosen {cv.get_n_leaves()} |")
    print(f"| cartjit fit (T_max) | {best_fit:.3f} | | |")
    print(f"| cartjit cost_complexity_path() | {best_path:.4f} | {best_path / best_fit:.4f} "
          f"of the fit | {len(path)} rows |")
    if not args.no_rpart and shutil.which("Rscript"):
        with tempfile.TemporaryDirectory() as tmp:
            r_time, r_rows, r_leaves = time_rpart(X, y, args.folds, tmp)
        print(f"| rpart xval={args.folds} (cp=0) | {r_time:.3f} | {best_cv / r_time:.4f} | "
              f"cptable {r_rows} rows, cp=0 tree {r_leaves} leaves |")
    if args.sklearn:
        from sklearn.model_selection import GridSearchCV
        from sklearn.tree import DecisionTreeClassifier

        t = time.perf_counter()
        alphas = DecisionTreeClassifier(random_state=0).cost_complexity_pruning_path(
            X, y).ccp_alphas
        grid = np.unique(alphas[np.linspace(0, len(alphas) - 2, 20).astype(int)])
        gs = GridSearchCV(DecisionTreeClassifier(random_state=0), {"ccp_alpha": grid},
                          cv=args.folds).fit(X, y)
        sk = time.perf_counter() - t
        print(f"| sklearn path + GridSearchCV({len(grid)} ccp_alpha, cv={args.folds}) | "
              f"{sk:.1f} | {best_cv / sk:.5f} | best ccp_alpha {gs.best_params_['ccp_alpha']:.3g} |")


if __name__ == "__main__":
    main()
