"""Level steps of the growth against plain references: the competitor picks of
``_pick_competitors`` (chunked) and their table rows (``_rank_competitors``) against a
repeated scan in plain Python, on random Δ with exact ties, near ties inside the tie
tolerance, values at the floor and nodes that do not split."""
import numpy as np
import pytest

from cartjit.engine import grow as B
from cartjit.engine.children import _mark_sides, _number_splits
from cartjit.engine.choose import _choose, _pick_competitors, _rank_competitors
from cartjit.engine.records import C_COUNT, C_FEATURE, C_IMPROVEMENT, F_IMPROVEMENT, F_IMPURITY, F_THRESHOLD, F_WEIGHT, Frontier, I_COMP_START, I_FEATURE, I_LEFT, I_N_COMP, I_RIGHT, Nodes, Pairs, Rules, Tables
from cartjit.engine.impurity import tie_tolerance
from cartjit.engine.presort import Presorted


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
    fr = Frontier(np.arange(m, dtype=np.int64), np.zeros(m, np.int64),
                    rng.integers(2, 50, m).astype(np.int64), np.zeros(m), np.zeros(m))
    fnode = np.zeros((m, 4))
    fnode[:, F_IMPURITY] = imp
    nodes = Nodes(np.zeros((m, 12), np.int32), fnode, np.zeros((m, 1)))
    splits = B._level_splits(m)
    splits.feat[:] = rng.integers(-1, p, m)
    pairs = Pairs(delta.ravel().copy(), np.zeros(m * p, np.int64), np.zeros(0, np.int64),
                    np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    return fr, nodes, splits, pairs, tol, delta


@pytest.mark.parametrize("p,max_comp,n_chunks", [(1, 4, 1), (7, 4, 2), (20, 4, 3),
                                                 (20, 1, 1), (5, 9, 2)])
def test_competitor_picks_and_rows_match_repeated_scan(p, max_comp, n_chunks):
    rng = np.random.default_rng(p * 100 + max_comp)
    m = 300
    fr, nodes, splits, pairs, tol, delta = _batch(rng, m, p)
    rules = Rules(-1, 2, 1, 0.0, 1.0, True, 12, 0, 2, 0, max_comp)
    picks = np.full((m, max_comp), -7, dtype=np.int64)
    for c in range(n_chunks):
        _pick_competitors(fr, nodes, rules, splits, pairs, picks, c, n_chunks)
    tables = Tables(np.zeros((16, 4), np.int64), np.zeros((16, 3)),
                      np.zeros((m * max_comp + 5, 3), np.int64),
                      np.zeros((m * max_comp + 5, 2)), np.array([0, 5, 0], np.int64))
    n_levels = np.zeros(p, dtype=np.int64)
    # only the number of features (rows of keys) and n_levels are read
    ps = Presorted(np.zeros((p, 1), np.int32), np.zeros((0, 1), np.int32),
                   np.full(p, -1, np.int64), n_levels, np.zeros((0, 1), np.uint16))
    _rank_competitors(ps, fr, nodes, rules, splits, pairs, False, tables, picks)
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
        assert nodes.inode[node, I_COMP_START] == row
        assert nodes.inode[node, I_N_COMP] == len(want)
        for r, f in enumerate(want):
            assert tables.comp_i[row + r, C_FEATURE] == f
            assert tables.comp_i[row + r, C_COUNT] == fr.end[j] - fr.start[j]
            assert tables.comp_f[row + r, C_IMPROVEMENT] == delta[j, f]
        row += len(want)
    assert tables.rows[1] == row
    assert p == 1 or n_ties > 0


def _choice(delta, pos, tol):
    """The reference of step 2's choice: the first feature in order whose Δ beats the
    best so far by more than tol (pairs with a position only); -1 when none beats tol."""
    best, bf = -np.inf, -1
    for f in range(delta.shape[0]):
        if pos[f] >= 0 and delta[f] > best + tol:
            best, bf = delta[f], f
    return bf if bf >= 0 and best > tol else -1


@pytest.mark.parametrize("n_chunks", [1, 2, 3])
def test_choose_in_chunks_matches_reference(n_chunks):
    rng = np.random.default_rng(40 + n_chunks)
    m, p, n = 200, 6, 4000
    X = rng.normal(size=(n, p))
    X[:, 2] = np.round(X[:, 2], 1)
    # frontier: consecutive segments of a random permutation, each sorted on every feature
    sizes = rng.integers(2, 30, m)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    cases = rng.permutation(n)[:ends[-1]]
    keys = np.empty((p, ends[-1]), dtype=np.int32)
    for f in range(p):
        for s, e in zip(starts, ends):
            seg = cases[s:e]
            keys[f, s:e] = seg[np.argsort(X[seg, f], kind="stable")]
    fr, nodes, _, pairs, tol, delta = _batch(rng, m, p)
    fr = fr._replace(start=starts.astype(np.int64), end=ends.astype(np.int64))
    nodes.fnode[:, F_WEIGHT] = sizes
    pos = np.where(rng.random((m, p)) < 0.8,
                   starts[:, None] + rng.integers(1, 1000, (m, p)) % (sizes[:, None] - 1) + 1,
                   -1)
    pairs = pairs._replace(pos=pos.ravel().astype(np.int64))
    n_levels = np.zeros(p, dtype=np.int64)
    ps = Presorted(keys, np.zeros((0, n), np.int32), np.full(p, -1, np.int64), n_levels,
                   np.zeros((0, n), np.uint16))
    from cartjit.engine.scans import Targets
    from cartjit.engine.impurity import SQUARED_ERROR
    tg = Targets(np.zeros(0, np.int32), np.zeros(n), np.zeros(0), True, True, np.zeros(0),
                 SQUARED_ERROR, 0, 0)
    rules = Rules(-1, 2, 1, 0.0, float(sizes.sum()), True, 12, 0, 2, 0, 4)
    splits = B._level_splits(m)
    marks = np.full(n + 3, 7, dtype=np.uint8)
    for c in range(n_chunks):
        _choose(X, ps, fr, nodes, tg, rules, pairs, splits, c, n_chunks)
    assert (marks == 7).all()  # choosing marks nothing
    _mark_sides(ps, fr, splits, 0, marks)
    n_split, n_rows = _number_splits(ps, fr, nodes, splits, 1000, np.int64(0))
    assert n_rows == 0
    child = 1000
    for j in range(m):
        bf = _choice(delta[j], pos[j], tol[j])
        assert splits.feat[j] == bf, j
        if bf < 0:
            continue
        q = pos[j, bf]
        assert splits.pos[j] == q and splits.stop[j] == ends[j]
        assert splits.child_base[j] == child
        assert nodes.inode[j, I_LEFT] == child and nodes.inode[j, I_RIGHT] == child + 1
        assert nodes.inode[j, I_FEATURE] == bf
        assert nodes.fnode[j, F_IMPROVEMENT] == delta[j, bf]
        a, b = X[keys[bf, q - 1], bf], X[keys[bf, q], bf]
        assert a <= nodes.fnode[j, F_THRESHOLD] < b or (a == b)
        assert (marks[keys[bf, starts[j]:q]] == 1).all()
        assert (marks[keys[bf, q:ends[j]]] == 0).all()
        child += 2
    assert n_split == (child - 1000) // 2 > m // 4
    split_cases = np.concatenate([keys[0, starts[j]:ends[j]] for j in range(m)
                                  if splits.feat[j] >= 0])
    unsplit = np.setdiff1d(np.arange(n + 3), split_cases)
    assert (marks[unsplit] == 7).all()  # only the cases of split nodes are marked
