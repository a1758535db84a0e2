"""Breiman's proximities of a forest's cases, and what is read from them.

The proximity of two cases is the fraction of trees in which they end in the same node
(Breiman 2001; Breiman & Cutler's manual):

* **all-case**: prox(i, j) = (1/B) Σ_b 1[t_b(i) = t_b(j)] over the B trees, every case
  dropped down every tree;
* **out of bag**: prox(i, j) = Σ_b 1[t_b(i) = t_b(j), i ∈ O_b, j ∈ O_b] / P(i, j), with
  O_b the cases out of tree b's sample and P(i, j) = #{b : i ∈ O_b, j ∈ O_b} the trees
  for which both are out of bag (randomForest's ``oob.prox=TRUE``); 0 where P(i, j) = 0.

A case is its own neighbour: prox(i, i) = 1. t_b(i) is the node where case i ends in
tree b (:func:`cartjit.engine.forest.forest_apply`): a leaf, or an internal node where a
missing value stops it.

The pass never forms the pairs of a tree. For each tree it lists the members of every
end node (:func:`leaf_members`: a counting sort of the (case, tree) end nodes, the
out-of-bag members only for OOB proximities); a query case i then visits, in each tree
(for which it is out of bag), the members of its own end node and counts them in a
scratch row. A row of the dense matrix (:func:`proximity_matrix`) or the k largest of
it (:func:`nearest`) follows from that row alone: the work is Σ_i Σ_b |node of i in b|
and the memory, beside the answer, the member lists (4 bytes a (case, tree)) and one
scratch row per thread. The rows are cut into chunks run in parallel; each row is
written by one chunk, so the result does not depend on the number of threads. P(i, j)
is the population count of the AND of the two cases' out-of-bag bits (one bit a tree),
taken only for the j that share a node with i.

:func:`outlier_measure` (Breiman & Cutler's outlyingness) and :func:`classical_scaling`
(the MDS coordinates of randomForest's ``MDSplot``) are numpy on the dense matrix.
docs/forests.md ("Proximities, outliers, MDS and the forests' plots") states the
definitions.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import prange

from .forest_passes import _threads
from .presort import as_kernel_array
from .speed import jit, jit_parallel, parallel_entry

__all__ = ["LeafMembers", "leaf_members", "oob_bits", "proximity_matrix", "nearest",
           "outlier_measure", "classical_scaling", "PROXIMITY_CHUNK"]

#: Query rows per chunk of the parallel passes.
PROXIMITY_CHUNK = 64

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


class LeafMembers(NamedTuple):
    """The reference cases grouped by end node, every tree's nodes in turn: with u =
    ``roots[b] + t`` the absolute id of node t of tree b, its members are
    ``members[start[u]:start[u + 1]]``, in case order (the out-of-bag members only when
    built with ``bits``)."""

    roots: np.ndarray    # int64 (B + 1,): tree b's nodes are roots[b] .. roots[b + 1] - 1
    start: np.ndarray    # int64 (N + 1,)
    members: np.ndarray  # int32: case indices
    bits: np.ndarray     # uint64 (n, W): bit b of case i set when i is out of tree b's bag
    n_cases: int


def oob_bits(in_bag):
    """The out-of-bag bits of every case from the (B, n) boolean in-bag mask: uint64
    (n, ⌈B / 64⌉), bit b (of word b // 64) set when the case is out of tree b's bag."""
    out_of_bag = ~np.asarray(in_bag, dtype=bool)
    n_trees, n = out_of_bag.shape
    words = max(1, (n_trees + 63) // 64)
    packed = np.zeros((n, words * 8), dtype=np.uint8)
    if n_trees:
        packed[:, :(n_trees + 7) // 8] = np.packbits(out_of_bag.T, axis=1,
                                                     bitorder="little")
    return np.ascontiguousarray(packed.view("<u8").astype(np.uint64))


@jit(inline="always")
def _is_out(bits, i, b):
    return (bits[i, b >> 6] >> np.uint64(b & 63)) & np.uint64(1)


@jit(inline="always")
def _popcount(x):
    """The number of set bits of a uint64 (the SWAR count)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@jit
def _node_sizes(ends, roots, bits, use_oob, start):
    """``start[t + 1]`` += the (case, tree) pairs that end in absolute node t = ``roots[b]
    + ends[i, b]`` (the pairs whose case is in tree b's bag left out when ``use_oob``),
    then ``start`` summed up: the offsets of the member lists."""
    n, n_trees = ends.shape
    for i in range(n):
        for b in range(n_trees):
            if use_oob and not _is_out(bits, i, b):
                continue
            start[roots[b] + ends[i, b] + 1] += 1
    for t in range(start.shape[0] - 1):
        start[t + 1] += start[t]


@jit
def _fill_members(ends, roots, bits, use_oob, start, members):
    """The member lists at the offsets ``start``: a counting sort of the (case, tree)
    pairs by end node, cases in increasing order within a node."""
    n, n_trees = ends.shape
    fill = start[:-1].copy()
    for i in range(n):
        for b in range(n_trees):
            if use_oob and not _is_out(bits, i, b):
                continue
            t = roots[b] + ends[i, b]
            members[fill[t]] = i
            fill[t] += 1


def leaf_members(ends, roots, bits=None):
    """:class:`LeafMembers` of the reference cases whose end nodes are ``ends`` (int64
    (n, B), each tree's own numbering) in a forest whose tree b is nodes ``roots[b]`` ..
    ``roots[b + 1] - 1``; with ``bits`` (:func:`oob_bits`) only the out-of-bag members."""
    ends = as_kernel_array(ends, np.int64)
    roots = as_kernel_array(roots, np.int64)
    n = ends.shape[0]
    use_oob = bits is not None
    bits = (as_kernel_array(bits, np.uint64) if use_oob
            else np.zeros((n, 1), dtype=np.uint64))
    start = np.zeros(int(roots[-1]) + 1, dtype=np.int64)
    if n and ends.shape[1]:
        _node_sizes(ends, roots, bits, use_oob, start)
    members = np.empty(int(start[-1]), dtype=np.int32)
    if members.shape[0]:
        _fill_members(ends, roots, bits, use_oob, start, members)
    return LeafMembers(roots, start, members, bits, n)


@jit(inline="always")
def _gather(q_ends, q_bits, ref, use_oob, i, acc, touched):
    """Count in ``acc[j]`` the trees in which query case i and reference case j end in
    the same node (both out of bag with ``use_oob``); the j counted for the first time
    are appended to ``touched``. Returns how many there are."""
    n_touched = 0
    n_trees = q_ends.shape[1]
    for b in range(n_trees):
        if use_oob and not _is_out(q_bits, i, b):
            continue
        t = ref.roots[b] + q_ends[i, b]
        for s in range(ref.start[t], ref.start[t + 1]):
            j = ref.members[s]
            if acc[j] == 0.0:
                touched[n_touched] = j
                n_touched += 1
            acc[j] += 1.0
    return n_touched


@jit(inline="always")
def _value(count, q_bits, ref, use_oob, i, j, n_trees):
    """prox(i, j) from the number of trees ``count`` where both end in the same node:
    divided by B, or by P(i, j), the trees for which both are out of bag."""
    if not use_oob:
        return count / n_trees
    pairs = np.uint64(0)
    for w in range(q_bits.shape[1]):
        pairs += _popcount(q_bits[i, w] & ref.bits[j, w])
    return count / np.float64(pairs) if pairs > 0 else 0.0


@jit_parallel
def _proximity_rows(q_ends, q_bits, ref, use_oob, diagonal, out):
    """Dense proximities: ``out[i, j]`` = prox(query i, reference j) (``out`` zeroed by
    the caller), 1 at j = i when the queries are the references (``diagonal``)."""
    m, n_trees = q_ends.shape
    n_chunks = (m + PROXIMITY_CHUNK - 1) // PROXIMITY_CHUNK
    for c in prange(n_chunks):
        touched = np.empty(ref.n_cases, dtype=np.int64)
        for i in range(c * PROXIMITY_CHUNK, min(m, (c + 1) * PROXIMITY_CHUNK)):
            row = out[i]
            n_touched = _gather(q_ends, q_bits, ref, use_oob, i, row, touched)
            for q in range(n_touched):
                j = touched[q]
                row[j] = _value(row[j], q_bits, ref, use_oob, i, j, n_trees)
            if diagonal:
                row[i] = 1.0


@jit(inline="always")
def _keep_best(j, v, index_row, prox_row, filled, k):
    """Insert candidate (j, v) into the best-first row ``index_row[:filled]`` /
    ``prox_row[:filled]`` of at most k entries (larger proximity first, then the smaller
    index); returns the new length."""
    pos = filled
    while pos > 0 and (prox_row[pos - 1] < v or (prox_row[pos - 1] == v
                                                   and index_row[pos - 1] > j)):
        pos -= 1
    if pos >= k:
        return filled
    last = min(filled, k - 1)
    for q in range(last, pos, -1):
        index_row[q] = index_row[q - 1]
        prox_row[q] = prox_row[q - 1]
    index_row[pos] = j
    prox_row[pos] = v
    return min(filled + 1, k)


@jit_parallel
def _nearest_rows(q_ends, q_bits, ref, use_oob, diagonal, index, prox):
    """The k = ``index.shape[1]`` reference cases of largest proximity to each query
    case, largest first, ties to the smaller index, the case itself left out when the
    queries are the references (``diagonal``); cases of proximity 0 fill the row in
    index order when fewer than k share a node with it. The candidates (the cases that
    share a node with the query) go through a best-first buffer of k entries."""
    m, n_trees = q_ends.shape
    k = index.shape[1]
    n_chunks = (m + PROXIMITY_CHUNK - 1) // PROXIMITY_CHUNK
    for c in prange(n_chunks):
        acc = np.zeros(ref.n_cases)
        touched = np.empty(ref.n_cases, dtype=np.int64)
        for i in range(c * PROXIMITY_CHUNK, min(m, (c + 1) * PROXIMITY_CHUNK)):
            n_touched = _gather(q_ends, q_bits, ref, use_oob, i, acc, touched)
            filled = 0
            for q in range(n_touched):
                j = touched[q]
                if diagonal and j == i:
                    continue
                v = _value(acc[j], q_bits, ref, use_oob, i, j, n_trees)
                filled = _keep_best(j, v, index[i], prox[i], filled, k)
            j = 0
            while filled < k:  # proximity 0, in index order
                if acc[j] == 0.0 and not (diagonal and j == i):
                    index[i, filled] = j
                    prox[i, filled] = 0.0
                    filled += 1
                j += 1
            for q in range(n_touched):
                acc[touched[q]] = 0.0


def _query(q_ends, q_bits):
    q_ends = as_kernel_array(q_ends, np.int64)
    if q_bits is None:
        return q_ends, np.zeros((q_ends.shape[0], 1), dtype=np.uint64), False
    return q_ends, as_kernel_array(q_bits, np.uint64), True


def proximity_matrix(q_ends, ref, q_bits=None, diagonal=False, n_threads=None):
    """prox(i, j) of every query case i (end nodes ``q_ends`` (m, B)) and reference case
    j (``ref``, :func:`leaf_members`): float64 (m, n). OOB proximities when ``q_bits``
    (the queries' :func:`oob_bits`) is given and ``ref`` holds out-of-bag members only;
    ``diagonal``: the queries are the references (prox(i, i) = 1)."""
    q_ends, q_bits, use_oob = _query(q_ends, q_bits)
    out = np.zeros((q_ends.shape[0], ref.n_cases), dtype=np.float64)
    if out.size:
        with _threads(n_threads), parallel_entry():
            _proximity_rows(q_ends, q_bits, ref, use_oob, bool(diagonal), out)
    return out


def nearest(q_ends, ref, k, q_bits=None, diagonal=False, n_threads=None):
    """The ``k`` reference cases of largest proximity to each query case, without the
    dense matrix: ``(index, prox)``, int64 and float64 (m, k), largest first, ties to
    the smaller index (as a stable sort of a row of :func:`proximity_matrix` by
    decreasing proximity), the case itself left out when ``diagonal``. The caller
    checks 1 <= k <= the candidates."""
    q_ends, q_bits, use_oob = _query(q_ends, q_bits)
    m = q_ends.shape[0]
    index = np.zeros((m, int(k)), dtype=np.int64)
    prox = np.zeros((m, int(k)), dtype=np.float64)
    if m and k:
        with _threads(n_threads), parallel_entry():
            _nearest_rows(q_ends, q_bits, ref, use_oob, bool(diagonal), index, prox)
    return index, prox


# --------------------------------------------------------------------------- from the matrix

#: R's ``mad`` constant: the MAD of a normal sample estimates its standard deviation.
MAD_SCALE = 1.4826


def outlier_measure(prox, classes):
    """Breiman & Cutler's outlyingness of every case (randomForest's ``outlier``): for
    case i of class j, out(i) = n / Σ_{k in class j} prox(i, k)² (n the number of cases,
    k = i included), then within each class (out - median) / MAD, MAD =
    1.4826 · median |out - median| (R's ``mad``). A class whose MAD is 0 gives its
    cases (out - median) / MAD as IEEE division does (0 where out = median)."""
    prox = np.asarray(prox, dtype=np.float64)
    classes = np.asarray(classes)
    n = prox.shape[0]
    out = np.empty(n, dtype=np.float64)
    for label in np.unique(classes):
        members = np.flatnonzero(classes == label)
        block = prox[np.ix_(members, members)]
        total = (block * block).sum(axis=1)
        raw = n / np.where(total == 0, 1.0, total)
        centre = np.median(raw)
        mad = MAD_SCALE * np.median(np.abs(raw - centre))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[members] = (raw - centre) / mad if mad > 0 else np.where(
                raw == centre, 0.0, np.sign(raw - centre) * np.inf)
    return out


def classical_scaling(dist, n_components):
    """Classical (Torgerson) multidimensional scaling of the distances ``dist`` (n, n),
    as R's ``cmdscale``: the doubly centred B = -½ J D² J, its eigenvalues λ_1 >= λ_2 >=
    ..., and coordinates v_k √λ_k for the first ``n_components`` with λ_k > 0 (fewer
    columns when fewer are positive). Each column's sign makes its entry of largest
    magnitude positive. Returns ``(coordinates (n, c), eigenvalues (n,))``, every
    eigenvalue of B in decreasing order."""
    d = np.asarray(dist, dtype=np.float64)
    d2 = d * d
    b = -0.5 * (d2 - d2.mean(axis=0)[None, :] - d2.mean(axis=1)[:, None] + d2.mean())
    b = 0.5 * (b + b.T)
    values, vectors = np.linalg.eigh(b)
    values, vectors = values[::-1], vectors[:, ::-1]
    scale = max(1.0, float(np.abs(values).max(initial=0.0)))
    keep = np.flatnonzero(values[:n_components] > 1e-12 * scale)
    coords = vectors[:, keep] * np.sqrt(values[keep])
    if coords.size:
        big = np.argmax(np.abs(coords), axis=0)
        coords = coords * np.sign(coords[big, np.arange(coords.shape[1])])
    return coords, values
