"""rpart's ``maxdepth`` and cartjit's ``max_depth`` on a larger problem.

rpart cannot grow below depth 30 (its node numbers are 32-bit), so a comparison of the
two programs at ``cp = 0`` on data that grows deeper must give cartjit
``max_depth=30`` too: without it cartjit's T_max goes deeper and its table gets more
rows. On ``make_classification(10_000, 20, 3, random_state=0)`` (the problem of
``asv_bench/peers_rpart_mode.py`` at 1e4 rows) the unbounded tree reaches depth 36;
with ``max_depth=30`` the full tree's table (``xval = 0``) is rpart's row for row. (At
1e5 rows some rows differ: exact ties between splits, decided by rpart's rounding.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier
from cartjit.datasets import make_classification

from . import rpart_runner

pytestmark = pytest.mark.parity

N, P, J = 10_000, 20, 3


def _data():
    X, y = make_classification(N, P, J, random_state=0)
    cols = [f"x{j}" for j in range(P)]
    df = pd.DataFrame(X, columns=cols)
    df["y"] = y.astype(str)
    return X, y, df, cols


def _fit(X, y, **kw):
    return CARTClassifier(compat="rpart", cp=0, max_competitor=0, **kw).fit(X, y)


def test_depth_30_table_equals_rparts():
    X, y, df, cols = _data()
    res = rpart_runner.run_rpart(
        df, "y", cols, "class",
        control=dict(cp=0, minsplit=2, minbucket=1, maxcompete=0, maxsurrogate=0,
                     maxdepth=30, xval=0))
    theirs = res["cptable"].reset_index(drop=True)
    unbounded = _fit(X, y)
    ours = _fit(X, y, max_depth=30)
    # the bound binds: without it the tree is deeper than rpart can grow
    assert int(unbounded.tree_max_.depth.max()) > 30
    assert int(ours.tree_max_.depth.max()) == 30
    # rpart's deepest node is at depth 30 too (node k is at depth floor(log2 k))
    assert int(np.floor(np.log2(res["frame"]["node"].max()))) == 30
    table = ours.cptable_.reset_index(drop=True)
    assert len(table) == len(theirs)
    np.testing.assert_array_equal(table["nsplit"].to_numpy(), theirs["nsplit"].to_numpy())
    np.testing.assert_allclose(table["CP"].to_numpy(), theirs["CP"].to_numpy(),
                               rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(table["rel error"].to_numpy(),
                               theirs["rel_error"].to_numpy(), rtol=1e-9, atol=1e-12)
    assert len(unbounded.cptable_) != len(theirs) or not np.array_equal(
        unbounded.cptable_["nsplit"].to_numpy(), theirs["nsplit"].to_numpy())
    assert int((res["frame"]["var"] == "<leaf>").sum()) == ours.tree_.n_nodes // 2 + 1
