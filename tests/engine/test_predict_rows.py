"""The batch descent (``_predict.apply``) against a plain walk, one row at a time, for
row counts around its slots, its read-ahead (``PREFETCH_ROWS``) and its chunks, and
feature counts around a cache line of values; tied values in the data, and infinities
counted whatever the row's position."""
from __future__ import annotations

import numpy as np
import pytest

import cartjit
from cartjit.engine.predict import CHUNK_ROWS, PREFETCH_ROWS, SLOTS
from cartjit.engine.tree import apply
from references.naive import flat_apply


@pytest.mark.parametrize("p", [1, 3, 8, 9, 20])
def test_apply_equals_a_plain_walk(p):
    rng = np.random.default_rng(p)
    X = rng.integers(0, 6, (600, p)).astype(np.float64)  # ties
    X[:, 0] += rng.normal(size=600)
    y = (np.floor(X.sum(axis=1)).astype(int) + rng.integers(0, 3, 600)) % 3
    tree = cartjit.CARTClassifier().fit(X, y).tree_
    assert tree.n_nodes > 50
    counts = [1, 2, SLOTS - 1, SLOTS + 1, PREFETCH_ROWS - 1, PREFETCH_ROWS,
              PREFETCH_ROWS + 1, 2 * PREFETCH_ROWS + SLOTS, CHUNK_ROWS + PREFETCH_ROWS + 3]
    big = rng.integers(0, 6, (max(counts), p)).astype(np.float64)
    big[:, 0] += rng.normal(size=big.shape[0])
    want = flat_apply(tree, big)
    for m in counts:
        np.testing.assert_array_equal(apply(tree, np.ascontiguousarray(big[:m])), want[:m])
        # the last rows of a larger X (read-ahead past them stays inside X)
        np.testing.assert_array_equal(apply(tree, np.ascontiguousarray(big[-m:])), want[-m:])


def test_infinity_is_found_in_every_position():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    model = cartjit.CARTClassifier().fit(X, y)
    new = rng.normal(size=(CHUNK_ROWS + 2 * PREFETCH_ROWS, 5))
    for r in (0, PREFETCH_ROWS - 1, PREFETCH_ROWS, new.shape[0] - 1):
        bad = new.copy()
        bad[r, r % 5] = -np.inf
        with pytest.raises(ValueError, match="infinity"):
            model.predict(bad)
    model.predict(new)
