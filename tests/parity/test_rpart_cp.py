"""``cp`` against R: ``CARTClassifier(cp=c)`` / ``CARTRegressor(cp=c)`` grow the tree that
``prune(rpart(..., cp = 0), cp = c)`` gives (docs/rpart.md).

rpart is run with ``cp = 0, minsplit = 2, minbucket = 1, maxcompete = 0,
maxsurrogate = 0, maxdepth = 30, xval = 0`` and pruned in R by ``prune()`` at every CP of its table and
at the geometric midpoints between consecutive CPs. On data where rpart's CP table is
the exact weakest-link sequence (checked first: same numbers of splits and the same CP
to 1e-9; where they differ, docs/maths.md §9 and tests/parity/test_rpart_cv.py say why)
the two pruned trees must be the same: the same number of leaves, the same partition of
the learning cases into leaves (rpart's ``where`` after ``prune``) and the same splits
(variable and threshold).
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pytest

from . import rpart_runner
from .test_rpart_cv import GROW

pytestmark = pytest.mark.parity

# After the fit of rpart_runner's script: prune at every value of .prune_cps and write the
# pruned frame (node, var) and where (the node of every learning case).
_R_PRUNE = r"""
source(file.path(.outdir, "prune_cps.R"))
for (.i in seq_along(.prune_cps)) {
  .pf <- prune(fit, cp = .prune_cps[.i])
  .nd <- as.numeric(rownames(.pf$frame))
  .write_df(data.frame(node = .nd, var = as.character(.pf$frame$var)),
            sprintf("pruned%03d_frame.csv", .i))
  .write_df(data.frame(node = .nd[.pf$where]), sprintf("pruned%03d_where.csv", .i))
}
"""

CASES = [  # dataset, target, method, features (None: all), priors (None: empirical)
    ("iris", "Species", "class", None, None),
    ("iris", "Species", "class", ("Petal.Length", "Petal.Width"), (0.25, 0.25, 0.5)),
    ("kyphosis", "Kyphosis", "class", None, None),
    ("attitude", "rating", "anova", None, None),
    ("faithful", "eruptions", "anova", None, None),
]
IDS = ["iris", "iris-petals-priors", "kyphosis", "attitude", "faithful"]
# Not here: stackloss, whose root splits on Air.Flow or Water.Temp alike (the same
# partition, an exact tie that rpart's rounding breaks the other way).


def rpart_pruned(df, target, features, method, parms, cps):
    """rpart's cp = 0 fit and, for every cp of ``cps``, ``prune(fit, cp)``'s frame and
    where (through rpart_runner's own script, with the pruning appended)."""
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        work = Path(tmp)
        read = rpart_runner._write_job(work, df, target, features, method, parms, GROW)
        (work / "prune_cps.R").write_text(
            f".prune_cps <- {rpart_runner._r_literal(np.asarray(cps, dtype=float))}\n",
            encoding="utf-8")
        rpart_runner._run_r(rpart_runner._R_RPART + _R_PRUNE, work,
                            rpart_runner.DEFAULT_TIMEOUT)
        fit = read()
        pruned = []
        for i in range(1, len(cps) + 1):
            frame = rpart_runner._read_r_csv(work / f"pruned{i:03d}_frame.csv",
                                             string_cols=["var"], int_cols=["node"])
            where = rpart_runner._read_r_csv(work / f"pruned{i:03d}_where.csv",
                                             int_cols=["node"])["node"].to_numpy()
            pruned.append((frame, where))
    return fit, pruned


def assert_exact_table(cptable, path):
    """The precondition of these tests: rpart's CP table is cartjit's sequence (``path``,
    a ``cost_complexity_path()`` or ``cv_results_``) row for row, in reverse order: the
    same numbers of splits and the same CP to 1e-9."""
    assert len(cptable) == len(path)
    np.testing.assert_array_equal(cptable["nsplit"].to_numpy() + 1,
                                  path["n_leaves"].to_numpy()[::-1])
    np.testing.assert_allclose(cptable["CP"].to_numpy(), path["cp"].to_numpy()[::-1],
                               rtol=1e-9, atol=1e-15)


@functools.lru_cache(maxsize=None)
def run_case(dataset, target, method, features, priors):
    from cartjit import CARTClassifier, CARTRegressor

    df = rpart_runner.r_dataset(dataset)
    features = list(features) if features else [c for c in df.columns if c != target]
    X = df[features].to_numpy(dtype=np.float64)
    y = df[target].to_numpy()
    parms = None if priors is None else {"prior": list(priors)}
    if method == "class":
        make = functools.partial(CARTClassifier, priors="empirical" if priors is None
                                 else np.array(priors))
    else:
        make, y = CARTRegressor, y.astype(np.float64)
    # the CPs of rpart's table (computed by a first run) and the midpoints between them
    first = rpart_runner.run_rpart(df, target, features, method, parms=parms, control=GROW)
    table = first["cptable"]["CP"].to_numpy()
    cps = list(table) + list(np.sqrt(table[:-1] * table[1:])) + [0.0]
    fit, pruned = rpart_pruned(df, target, features, method, parms, cps)
    return X, y, features, make, fit, cps, pruned


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cp_prunes_as_rpart_prune(case):
    X, y, features, make, fit, cps, pruned = run_case(*case)
    full = make().fit(X, y)
    path = full.cost_complexity_path()
    assert_exact_table(fit["cptable"], path)
    thresholds = {int(r.node): (r.var, float(r.threshold))
                  for r in fit["splits"].itertuples(index=False)}
    for cp, (frame, where) in zip(cps, pruned):
        est = make(cp=float(cp)).fit(X, y)
        tree = est.tree_
        internal = frame["var"].to_numpy() != "<leaf>"
        assert tree.n_leaves == int((~internal).sum()), cp
        # the same partition of the learning cases into leaves
        ours = est.apply(X)
        pairs = set(zip(ours.tolist(), where.tolist()))
        assert len(pairs) == len(set(ours.tolist())) == len(set(where.tolist())), cp
        # the same splits
        theirs = sorted((thresholds[int(k)][0], thresholds[int(k)][1])
                        for k in frame["node"].to_numpy()[internal])
        split = tree.left >= 0
        mine = sorted((features[f], float(c)) for f, c in
                      zip(tree.feature[split], tree.threshold[split]))
        assert [v for v, _ in mine] == [v for v, _ in theirs], cp
        np.testing.assert_allclose([c for _, c in mine], [c for _, c in theirs], rtol=1e-12)
