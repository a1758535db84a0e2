"""Level steps of the growth against plain references: the competitor picks of
``_pick_competitors`` (chunked) and their table rows (``_rank_competitors``) against a
repeated scan in plain Python, on random Δ with exact ties, near ties inside the tie
tolerance, values at the floor and nodes that do not split."""
import numpy as np
import pytest

from cartjit import _builder as B
from cartjit._criteria import tie_tolerance
from cartjit._presort import Presorted


def _ranked(delta, f0, tol, max_comp):
    """The reference: max_comp rounds of one scan in feature order, a feature taken when
    it is above tol and beats the best so far by more than tol, taken ones left out."""
    taken = {f0}
    picks = []
    for _ in range(max_comp):
        best, bf = -np.inf, -1
        for f, v in enumerate(delta):
            if f not in taken and v > tol and v > best + tol:
                best, bf = v, f
        if bf < 0:
            break
        taken.add(bf)
        picks.append(bf)
    return picks


def _batch(rng, m, p):
    imp = rng.uniform(0.5, 2.0, m)
    tol = np.array([tie_tolerance(v) for v in imp])
    delta = rng.uniform(0.0, 1.0, (m, p))
    for j in range(m):
        kind = j % 5
        if kind == 1:  # a few values repeated exactly
            delta[j] = rng.choice(delta[j, :3], p)
        elif kind == 2:  # near ties: steps of a fraction of the tolerance
            delta[j] = delta[j, 0] + tol[j] * rng.integers(0, 6, p) * 0.4
        elif kind == 3:  # at and below the floor
            delta[j, rng.integers(0, p, p // 2)] = tol[j]
            delta[j, rng.integers(0, p, 2)] = -np.inf
    fr = B.Frontier(np.arange(m, dtype=np.int64), np.zeros(m, np.int64),
                    rng.integers(2, 50, m).astype(np.int64), np.zeros(m), np.zeros(m))
    fnode = np.zeros((m, 4))
    fnode[:, B.F_IMPURITY] = imp
    nodes = B.Nodes(np.zeros((m, 12), np.int32), fnode, np.zeros((m, 1)))
    splits = B._level_splits(m)
    splits.feat[:] = rng.integers(-1, p, m)
    pairs = B.Pairs(delta.ravel().copy(), np.zeros(m * p, np.int64), np.zeros(0, np.int64),
                    np.zeros(0, np.uint64))
    return fr, nodes, splits, pairs, tol, delta


@pytest.mark.parametrize("p,max_comp,n_chunks", [(1, 4, 1), (7, 4, 2), (20, 4, 3),
                                                 (20, 1, 1), (5, 9, 2)])
def test_competitor_picks_and_rows_match_repeated_scan(p, max_comp, n_chunks):
    rng = np.random.default_rng(p * 100 + max_comp)
    m = 300
    fr, nodes, splits, pairs, tol, delta = _batch(rng, m, p)
    rules = B.Rules(-1, 2, 1, 0.0, 1.0, True, 12, 0, 2, 0, max_comp)
    picks = np.full((m, max_comp), -7, dtype=np.int64)
    for c in range(n_chunks):
        B._pick_competitors(fr, nodes, rules, splits, pairs, picks, c, n_chunks)
    tables = B.Tables(np.zeros((16, 4), np.int64), np.zeros((16, 3)),
                      np.zeros((m * max_comp + 5, 3), np.int64),
                      np.zeros((m * max_comp + 5, 2)), np.array([0, 5, 0], np.int64))
    n_levels = np.zeros(p, dtype=np.int64)
    # only the number of features (rows of keys) and n_levels are read
    ps = Presorted(np.zeros((p, 1), np.int32), np.zeros((0, 1), np.int32),
                   np.full(p, -1, np.int64), n_levels, np.zeros((0, 1), np.uint16))
    B._rank_competitors(ps, fr, nodes, rules, splits, pairs, False, tables, picks)
    row = 5
    n_ties = 0
    for j in range(m):
        node = j  # node ids are the batch rows here
        if splits.feat[j] < 0:
            continue
        want = _ranked(delta[j], splits.feat[j], tol[j], max_comp)
        n_ties += len(set(delta[j])) < p
        got = list(picks[j, :len(want)])
        assert got == want, j
        if len(want) < max_comp:
            assert picks[j, len(want)] == -1
        assert nodes.inode[node, B.I_COMP_START] == row
        assert nodes.inode[node, B.I_N_COMP] == len(want)
        for r, f in enumerate(want):
            assert tables.comp_i[row + r, B.C_FEATURE] == f
            assert tables.comp_i[row + r, B.C_COUNT] == fr.end[j] - fr.start[j]
            assert tables.comp_f[row + r, B.C_IMPROVEMENT] == delta[j, f]
        row += len(want)
    assert tables.rows[1] == row
    assert p == 1 or n_ties > 0
