"""
A methods study: one tree, bagging and a forest on the same splits
==================================================================

``cartjit run`` also runs the comparisons the literature publishes (docs/studies.md):
several methods, each judged on the same random learning/test splits of several
datasets, with the statistics of Demšar (2006) across datasets. This page runs a small
study — a CV-pruned tree, bagged trees and a random forest on iris, on Breiman's
twonorm (fresh samples from its generator) and on the glass data — and checks the
report against its own long table: the splits are paired, each paired difference and
its wins, ties and losses are the per-replication differences, and the average ranks
are those of the mean errors.
"""

# %%
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from cartjit.experiments import run_experiment

CONFIG = """
[experiment]
name = "gallery_study"
description = "A CV-pruned tree against bagging and a random forest, 10 replications."

[methods.tree]
estimator = "cart_cv"

[methods.bagging]
estimator = "bagging"
n_estimators = 25

[methods.forest]
estimator = "random_forest"
n_estimators = 25

[protocol]
kind = "split"
test_fraction = 0.2
n_repeats = 10
seed = 2006

[[datasets]]
bundled = "iris"
protocol = { stratify = true }

[[datasets]]
name = "twonorm"
generator = "twonorm"
n = 300
test_n = 2000
protocol = { kind = "fresh", n_repeats = 10 }

[[datasets]]
bundled = "glass"
"""

work = Path(tempfile.mkdtemp())
(work / "study.toml").write_text(CONFIG)
run_experiment(work / "study.toml", work / "out", quiet=True)
report = (work / "out" / "summary.md").read_text()
print(report[:3000])

# %%
# The long table: one row per (dataset, replication, method).
results = pd.read_csv(work / "out" / "results.csv")
print(results[["dataset", "replication", "method", "n_learn", "n_test", "error",
               "n_leaves"]].head(9))

# Paired: within a dataset and replication every method had the same seed and sizes.
for _, group in results.groupby(["dataset", "replication"]):
    assert group.seed.nunique() == 1
    assert group.n_learn.nunique() == 1 and group.n_test.nunique() == 1

# %%
# Each method against the baseline (the first method, the tree): the mean of the
# per-replication differences, its standard error, and the wins, ties and losses.
paired = pd.read_csv(work / "out" / "summary" / "paired.csv")
print(paired)
wide = results.pivot_table(index=["dataset", "replication"], columns="method",
                           values="score")
for row in paired.itertuples():
    diff = (wide.loc[row.dataset, row.method] - wide.loc[row.dataset, row.baseline])
    assert np.isclose(row.mean_diff, diff.mean(), rtol=1e-12, atol=1e-15)
    assert np.isclose(row.se_diff, diff.std(ddof=1) / np.sqrt(len(diff)),
                      rtol=1e-12, atol=1e-15, equal_nan=True)
    assert (row.wins, row.ties, row.losses) == ((diff < 0).sum(), (diff == 0).sum(),
                                                (diff > 0).sum())

# %%
# Across the datasets: the average ranks of the mean errors (1 = the lowest; ties share
# their ranks), recomputed with SciPy.
ranks = pd.read_csv(work / "out" / "summary" / "ranks.csv", index_col=0)
means = results.groupby(["dataset", "method"]).score.mean().unstack()
ours = means.apply(lambda r: pd.Series(stats.rankdata(r), index=r.index), axis=1)
methods = ["tree", "bagging", "forest"]
for dataset in ["iris", "twonorm", "glass"]:
    assert np.allclose(ranks.loc[dataset, methods], ours.loc[dataset, methods])
assert np.allclose(ranks.loc["average rank", methods], ours[methods].mean())
print(ranks)
