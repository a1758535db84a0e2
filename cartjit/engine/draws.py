"""Random feature subsets per node: Breiman's m of a random forest, drawn reproducibly.

A random forest searches each node's split among m features drawn at random from the
p (Breiman 2001). Here the draw of node t of a tree is a function of the tree's seed and
of t's id alone: the node ids of a grown tree are assigned breadth-first and do not
depend on the number of threads nor on the order in which a level's work is done, so a
tree is the same on any number of threads, and a forest the same whatever order its
trees are grown in.

The draw is a partial Fisher–Yates shuffle of 0, ..., p - 1 driven by SplitMix64
(Steele, Lea & Flood 2014), a generator of 64-bit words from one 64-bit state that
passes BigCrush and takes a few instructions a word; its state starts from the tree's
seed and the node id, mixed, so that neighbouring nodes get unrelated draws. Each pick
takes the high 53 bits of a word as a uniform on [0, 1) and scales it to the number of
features left (an error of order 2⁻⁵³ from a uniform pick, far below any effect a
forest can show).

:func:`draw_frontier` writes the draws of a batch of frontier nodes as a 0/1 mask,
``drawn[j, f] == 1`` when feature f may split the batch's node j; step 1 of a level
searches only those pairs (:mod:`cartjit.engine.search`).
"""
from __future__ import annotations

import numpy as np

from .speed import jit

__all__ = ["draw_features", "draw_frontier", "GOLDEN"]

#: SplitMix64's increment (2⁶⁴ / φ, odd).
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2⁻⁵³


@jit(inline="always")
def _mix(z):
    """SplitMix64's output function of a state ``z`` (uint64)."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@jit(inline="always")
def draw_features(seed, node, p, m, order, drawn):
    """Mark ``m`` of the ``p`` features drawn for node ``node`` of the tree with ``seed``:
    ``drawn[f] = 1`` for the m features, 0 for the others. ``order`` (int64, p) is
    scratch; ``drawn`` (uint8, p) the output."""
    state = _mix(np.uint64(seed) + GOLDEN * (np.uint64(node) + np.uint64(1)))
    for f in range(p):
        order[f] = f
        drawn[f] = 0
    for i in range(m):
        state += GOLDEN
        u = float(_mix(state) >> np.uint64(11)) * _TO_UNIT
        k = i + int(u * (p - i))
        if k >= p:  # u * (p - i) rounded up to p - i
            k = p - 1
        pick = order[k]
        order[k] = order[i]
        order[i] = pick
        drawn[pick] = 1


@jit(borrowed=True)
def draw_frontier(seed, node_ids, n_nodes, m, order, drawn):
    """The draws of the first ``n_nodes`` nodes of ``node_ids`` (their ids in the tree):
    row j of ``drawn`` (uint8, (≥ n_nodes, p)) for node ``node_ids[j]``; ``order``
    (int64, p) scratch."""
    p = drawn.shape[1]
    for j in range(n_nodes):
        draw_features(seed, node_ids[j], p, m, order, drawn[j])
