"""Per-node random feature subsets (cartjit.engine.draws) against a plain Python
SplitMix64 and Fisher–Yates, and their distribution over many nodes."""
from __future__ import annotations

import numpy as np
import pytest

from cartjit.engine.draws import draw_features, draw_frontier

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _reference(seed, node, p, m):
    """The draw of docs/forests.md written with Python integers."""
    state = _mix((seed + GOLDEN * (node + 1)) & M64)
    order = list(range(p))
    for i in range(m):
        state = (state + GOLDEN) & M64
        u = (_mix(state) >> 11) / 2.0**53
        k = min(i + int(u * (p - i)), p - 1)
        order[i], order[k] = order[k], order[i]
    return sorted(order[:m])


@pytest.mark.parametrize("seed", [0, 1, 2**63 + 5, 2**64 - 1])
@pytest.mark.parametrize("p,m", [(1, 1), (5, 2), (20, 4), (20, 20), (37, 6)])
def test_a_node_s_draw_is_the_reference_draw(seed, p, m):
    order = np.empty(p, dtype=np.int64)
    drawn = np.empty(p, dtype=np.uint8)
    for node in (0, 1, 2, 17, 10**6):
        draw_features(np.uint64(seed), node, p, m, order, drawn)
        assert np.flatnonzero(drawn).tolist() == _reference(seed, node, p, m)


def test_the_frontier_rows_are_the_nodes_draws():
    p, m = 12, 3
    ids = np.array([4, 9, 0, 33], dtype=np.int64)
    drawn = np.full((6, p), 7, dtype=np.uint8)
    draw_frontier(np.uint64(11), ids, 4, m, np.empty(p, dtype=np.int64), drawn)
    for j, node in enumerate(ids):
        assert np.flatnonzero(drawn[j]).tolist() == _reference(11, int(node), p, m)
    assert (drawn[4:] == 7).all()  # rows past the batch untouched


def test_every_feature_is_drawn_as_often_as_any_other():
    p, m, n = 10, 3, 20_000
    ids = np.arange(n, dtype=np.int64)
    drawn = np.zeros((n, p), dtype=np.uint8)
    draw_frontier(np.uint64(2024), ids, n, m, np.empty(p, dtype=np.int64), drawn)
    assert (drawn.sum(axis=1) == m).all()
    freq = drawn.mean(axis=0)
    se = np.sqrt(m / p * (1 - m / p) / n)
    assert np.all(np.abs(freq - m / p) < 5 * se), freq
    # pairs too: each pair of features drawn together with probability m(m-1)/(p(p-1))
    together = (drawn[:, 0] & drawn[:, 1]).mean()
    q = m * (m - 1) / (p * (p - 1))
    assert abs(together - q) < 5 * np.sqrt(q * (1 - q) / n)


def test_different_seeds_and_nodes_draw_differently():
    p, m = 30, 5
    order = np.empty(p, dtype=np.int64)
    a, b = np.empty(p, dtype=np.uint8), np.empty(p, dtype=np.uint8)
    draw_features(np.uint64(1), 3, p, m, order, a)
    draw_features(np.uint64(2), 3, p, m, order, b)
    assert not np.array_equal(a, b)
    draw_features(np.uint64(1), 4, p, m, order, b)
    assert not np.array_equal(a, b)
