"""Best subset split of one node on one categorical feature (docs/maths.md §7).

A categorical feature's column of X holds level codes, and its presorted keys list the
cases by code, so a node's segment comes grouped by level, levels in increasing code
order. One pass over the segment gathers, for every level present at the node, its
weighted class counts (or its weight W and centred sum Σ w (y - ȳ(t))) and its number
of cases. The split sends a set S of the present levels one way and the rest the other;
L present levels give 2^(L-1) - 1 distinct splits. Three searches:

* **ordered scan** — two classes, or regression: by the ordering theorem (Breiman et
  al. 1984, §4.2.2 and §9.4; Fisher 1958 for least squares) the best split is one of
  the L - 1 splits of the levels sorted by p(class 1 | level) under the split-search
  priors, or by the mean of y. O(n + L log L) per node and feature. With
  ``min_leaf`` > 1 it is the best of those L - 1 splits that leave ``min_leaf`` cases
  on each side, which may miss a subset that is not a prefix of the order (rpart
  searches the same way);
* **exhaustive** — more than two classes in the problem (whatever the node holds, as
  rpart decides) and at most ``max_exhaustive`` levels present: every one of the
  2^(L-1) - 1 subsets, visited in Gray-code order so that one level changes side per
  step;
* **principal-component ordering** — more classes and more levels: the levels are
  sorted by their score on the first principal component of the class proportions
  p(j | level) (weighted by p(level); Coppersmith, Hong & Hosking 1999) and the L - 1
  splits of that order are scanned. This is a heuristic: the result is not guaranteed
  to be the best subset.

Δi is computed for every candidate from both children's counts (the right child's as
suffix sums, never as a difference of large totals). Ties: a candidate replaces the
best when its Δi is larger by more than the tie tolerance; within the tolerance the
*canonical* split wins. A split is written as the set S of levels on the side holding
the lowest level code present at the node (S goes to the left child), and S ranks
before S' when the highest level code in which they differ belongs to S' (the smaller
binary number Σ 2^code).

The searches return ``(Δi, n_left)`` with ``n_left`` the number of cases in S, or
``(-inf, -1)`` when no split leaves ``min_leaf`` cases on both sides; the side of every
present level is left in the integer scratch (:data:`SIDE`).
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .impurity import GINI, tie_tolerance
from .scans import (GINI_SCREEN_MARGIN, delta_from_counts, equal_factors,
                        gini_certainly_below)
from .impurity import SQUARED_ERROR
from .records import F_IMPURITY
from .scans import Segment
from .speed import _chunk_walk

__all__ = ["best_subset_classification", "best_subset_regression", "subset_regression_scan",
           "level_run_end",
           "int_scratch_size", "float_scratch_size", "left_levels_bits", "BITSET_LEVELS",
           "CODE", "NCASE", "SIDE", "JACOBI_SWEEPS"]

# Blocks of the integer scratch (each ``n_levels_max`` long): the code of each present
# level, its number of cases, its rank in the scan order, and its side (1: in S).
CODE, NCASE, RANK, SIDE = 0, 1, 2, 3
_N_INT_BLOCKS = 4

#: Unit weights and packed labels: up to this many classes the counts of a level's
#: run are kept in one integer, :data:`FIELD_BITS` bits a class.
PACKED_CLASSES = 3
FIELD_BITS = 21
FIELD_LIMIT = (1 << (FIELD_BITS - 1)) - 1

#: Most sweeps of Jacobi rotations for the first principal component (a handful
#: suffice: each sweep squares the off-diagonal mass, roughly).
JACOBI_SWEEPS = 50


def int_scratch_size(n_levels_max):
    """Length of the integer scratch of one thread."""
    return _N_INT_BLOCKS * max(1, n_levels_max)


def float_scratch_size(n_levels_max, n_classes):
    """Length of the float scratch of one thread: per-level statistics and their
    suffix sums (J or 2 per level), the sort scores, and room for vectors of J."""
    width = max(2, n_classes)
    lm = max(1, n_levels_max)
    return 2 * lm * width + lm + 2 * n_classes * n_classes + 6 * width


# --------------------------------------------------------------------------- statistics

#: A level's run of cases is looked up case by case for this many positions; a longer
#: run's end is found by galloping and bisection (see :func:`level_run_end`).
RUN_LINEAR = 32


@jit(inline="always")
def level_run_end(keys, codes, ushift, i, end, code):
    """The end of the run of level ``code`` that starts at position ``i`` of ``keys``
    (one past its last case, ``end`` at most): the segment is grouped by level, so the
    run is a range.

    The first :data:`RUN_LINEAR` positions are looked up one by one (independent
    look-ups, which the CPU overlaps); past them the end is bracketed by doubling steps
    and bisected, so a run of r cases costs O(log r) look-ups of the codes, scattered
    reads by case, instead of r.
    """
    stop = min(end, i + RUN_LINEAR)
    j = i + 1
    while j < stop:
        if codes[np.uint64(keys[np.uint64(j)]) >> ushift] != code:
            return j
        j += 1
    if j >= end:
        return end
    lo = j - 1  # in the run
    hi = end    # past the run, or the segment's end
    step = RUN_LINEAR
    while lo + step < end:
        probe = lo + step
        if codes[np.uint64(keys[np.uint64(probe)]) >> ushift] != code:
            hi = probe
            break
        lo = probe
        step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if codes[np.uint64(keys[np.uint64(mid)]) >> ushift] == code:
            lo = mid
        else:
            hi = mid
    return hi


#: Packed labels and unit weights: segments of up to this many cases find their level
#: runs by one branch-free pass (:func:`_packed_level_scan`), longer ones run by run.
SCAN_CASES = 1024


@jit(inline="always")
def _packed_level_scan(keys, codes, ushift, mask, start, end, n_classes, stats, ints, lm):
    """Per present level: class counts, code and number of cases, for packed labels
    and unit weights, in one pass over the segment without a branch per case; returns
    the number of levels present.

    Every case writes its code, the position after it and the packed class counts of
    the cases up to it (one integer, :data:`FIELD_BITS` bits a class) to slot k of the
    CODE, NCASE and RANK blocks, and a change of code advances k first, so slot k ends
    up holding the end of run k: the loop never waits for a mispredicted end of run,
    and the scattered look-ups of the codes overlap. A run's counts are the difference
    of two running totals, all exact integers (the segment is shorter than
    :data:`FIELD_LIMIT`), so they equal the run-by-run sums. k stays below the number
    of levels present, at most ``lm``.
    """
    code_at = np.uint64(CODE * lm)
    end_at = np.uint64(NCASE * lm)
    upto_at = np.uint64(RANK * lm)
    ubits = np.uint64(FIELD_BITS)
    umask = np.uint64(mask)
    one = np.uint64(1)
    prev = codes[np.uint64(keys[np.uint64(start)]) >> ushift]
    acc = np.uint64(0)
    k = np.uint64(0)
    for i in range(np.uint64(start), np.uint64(end)):
        key = np.uint64(keys[i])
        code = codes[key >> ushift]
        k += np.uint64(code != prev)
        acc += one << ((key & umask) * ubits)
        ints[code_at + k] = code
        ints[end_at + k] = i + one
        ints[upto_at + k] = acc
        prev = code
    n_lv = np.int64(k) + 1
    field = np.uint64(FIELD_LIMIT)
    for r in range(n_lv - 1, -1, -1):  # backwards: slot r - 1 is read after slot r
        first = start if r == 0 else ints[NCASE * lm + r - 1]
        before = np.uint64(0) if r == 0 else np.uint64(ints[RANK * lm + r - 1])
        counts = np.uint64(ints[RANK * lm + r]) - before
        ints[NCASE * lm + r] = ints[NCASE * lm + r] - first
        for j in range(n_classes):
            stats[r * n_classes + j] = float((counts >> (np.uint64(j) * ubits)) & field)
    return n_lv


@jit(inline="always")
def _class_level_stats(seg, tg, n_classes, stats, ints, lm):
    """Per present level (in code order): weighted class counts ``stats[k*J + j]``, code
    and number of cases; returns the number of levels present.

    The segment comes grouped by level, so each level is one run of cases, summed in
    registers: with two classes packed in the keys and unit weights, the run's class-1
    count is the sum of its labels; with up to :data:`PACKED_CLASSES` classes, one
    integer holds all the run's counts. Every count and weight is added in case order, as
    a case-by-case pass would add it.

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` whose ``ranks`` hold the codes by case.
    tg : :class:`cartjit.engine.scans.Targets`.
    n_classes : J.
    stats : float64 scratch, receives L J counts.
    ints : int64 scratch (blocks of ``lm``).
    lm : the block length.
    """
    keys = seg.keys
    codes = seg.ranks
    shift = tg.shift
    mask = tg.mask
    y = tg.y_class
    w = tg.w
    unit = tg.unit_weights
    end = seg.end
    two_packed = n_classes == 2 and mask != 0
    ushift = np.uint64(shift)
    if (mask != 0 and unit and n_classes <= PACKED_CLASSES
            and end - seg.start <= SCAN_CASES):
        return _packed_level_scan(keys, codes, ushift, mask, seg.start, end, n_classes,
                                  stats, ints, lm)
    k = 0
    i = seg.start
    while i < end:
        run = i
        code = codes[np.uint64(keys[np.uint64(i)]) >> ushift]
        base = k * n_classes
        if two_packed and unit:
            i = level_run_end(keys, codes, ushift, i, end, code)
            n1 = 0
            for q in range(np.uint64(run), np.uint64(i)):
                n1 += keys[q] & mask
            stats[base] = float(i - run - n1)
            stats[base + 1] = float(n1)
        elif two_packed:
            w0 = 0.0
            w1 = 0.0
            while i < end:
                key = keys[i]
                case = key >> shift
                if codes[case] != code:
                    break
                if key & mask:
                    w1 += w[case]
                else:
                    w0 += w[case]
                i += 1
            stats[base] = w0
            stats[base + 1] = w1
        elif mask != 0 and unit and n_classes <= PACKED_CLASSES:
            # one integer holds the run's counts, FIELD_BITS bits a class, emptied into
            # the float counts before a field can fill up
            for j in range(n_classes):
                stats[base + j] = 0.0
            i = level_run_end(keys, codes, ushift, i, end, code)
            q = run
            while q < i:
                acc = np.int64(0)
                stop = min(i, q + FIELD_LIMIT)
                for t in range(np.uint64(q), np.uint64(stop)):
                    acc += np.int64(1) << ((keys[t] & mask) * FIELD_BITS)
                for j in range(n_classes):
                    stats[base + j] += float((acc >> (j * FIELD_BITS)) & FIELD_LIMIT)
                q = stop
        else:
            for j in range(n_classes):
                stats[base + j] = 0.0
            while i < end:
                key = keys[i]
                case = key >> shift
                if codes[case] != code:
                    break
                cls = key & mask if mask else y[case]
                stats[base + cls] += 1.0 if unit else w[case]
                i += 1
        ints[CODE * lm + k] = code
        ints[NCASE * lm + k] = i - run
        k += 1
    return k


@jit(borrowed=True)
def _reg_level_stats(seg, y, w, unit, mean, stats, ints, lm):
    """Per present level (in code order): weight W and centred sum Σ w (y - ȳ(t)) in
    ``stats[2k]``, ``stats[2k + 1]``, code and number of cases; returns how many levels.
    Each level's run of cases is summed in registers, in case order.

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` whose ``ranks`` hold the codes by case.
    y, w, unit : responses, weights, unit weights.
    mean : ȳ(t).
    stats : float64 scratch, receives 2 L values.
    ints : int64 scratch (blocks of ``lm``).
    lm : the block length.
    """
    keys = seg.keys
    codes = seg.ranks
    end = seg.end
    k = 0
    i = seg.start
    while i < end:
        run = i
        code = codes[keys[i]]
        w_run = 0.0
        s_run = 0.0
        if unit:
            while i < end:
                case = keys[i]
                if codes[case] != code:
                    break
                w_run += 1.0
                s_run += y[case] - mean
                i += 1
        else:
            while i < end:
                case = keys[i]
                if codes[case] != code:
                    break
                wi = w[case]
                w_run += wi
                s_run += wi * (y[case] - mean)
                i += 1
        stats[2 * k] = w_run
        stats[2 * k + 1] = s_run
        ints[CODE * lm + k] = code
        ints[NCASE * lm + k] = i - run
        k += 1
    return k


#: A subset split's left-going levels fit one uint64 bitset when every code is below this.
BITSET_LEVELS = 64


@jit(borrowed=True)
def left_levels_bits(ints, lm, n_cases):
    """The codes of the levels in S (the side a search left in :data:`SIDE`) as one
    bitset (code c is bit c; every code below :data:`BITSET_LEVELS`); ``n_cases`` is
    the number of cases searched, which the levels' counts add up to."""
    bits = np.uint64(0)
    seen = 0
    lvl = 0
    while seen < n_cases:
        seen += ints[NCASE * lm + lvl]
        if ints[SIDE * lm + lvl]:
            bits |= np.uint64(1) << np.uint64(ints[CODE * lm + lvl])
        lvl += 1
    return bits


#: Up to this many levels the scan order is found by an insertion sort.
INSERTION_LEVELS = 24


# --------------------------------------------------------------------------- tie rule

@jit(inline="always")
def _prefix_before(ints, lm, n_lv, ka, kb):
    """Tie rule for two splits of one scan order: whether the split after the first
    ``ka`` levels of the order ranks before the one after ``kb`` (canonical order).

    Level k (present-index, increasing code) is in the first ``k*`` of the order when
    its rank is below k*; each split is normalised to the side holding level 0.
    """
    r0 = ints[RANK * lm]
    in_a0 = r0 < ka
    in_b0 = r0 < kb
    for lvl in range(n_lv - 1, -1, -1):
        r = ints[RANK * lm + lvl]
        ma = (r < ka) == in_a0
        mb = (r < kb) == in_b0
        if ma != mb:
            return mb
    return False


@jit(inline="always")
def _set_sides_from_prefix(ints, lm, n_lv, k):
    """The sides of the split after the first ``k`` levels of the scan order, S being
    the side of level 0; returns the number of cases in S."""
    in0 = ints[RANK * lm] < k
    n_left = 0
    for lvl in range(n_lv):
        side = (ints[RANK * lm + lvl] < k) == in0
        ints[SIDE * lm + lvl] = 1 if side else 0
        if side:
            n_left += ints[NCASE * lm + lvl]
    return n_left


@jit(inline="always")
def _before(a, b, score, stats, by_odds):
    """Scan order: whether level a may precede level b. ``by_odds`` (two classes):
    p(1 | a) <= p(1 | b), compared as N_1(a) N_0(b) <= N_1(b) N_0(a) — the same order
    under any priors (positive factors), and exact for integer counts, so levels with
    equal proportions stay in code order; otherwise ``score[a] <= score[b]``."""
    if by_odds:
        return stats[2 * a + 1] * stats[2 * b] <= stats[2 * b + 1] * stats[2 * a]
    return score[a] <= score[b]


#: Counts up to this size multiply exactly (their products stay below 2**53).
EXACT_COUNT = float(1 << 26)


@jit(inline="always")
def _total_preorder(score, stats, by_odds, n_lv):
    """Whether :func:`_before` orders the ``n_lv`` levels as a total preorder, so that
    the stable sort has one result, which :func:`_rank_by_counting` finds too: by the
    odds, when every count is a whole number up to :data:`EXACT_COUNT` (the cross
    products are then exact, the comparison that of the proportions); by the scores,
    when none is NaN."""
    ok = True
    if by_odds:
        for i in range(2 * n_lv):
            v = stats[i]
            ok &= v == np.floor(v) and v >= 0.0 and v <= EXACT_COUNT
    else:
        for i in range(n_lv):
            ok &= not np.isnan(score[i])
    return ok


@jit(inline="always")
def _rank_by_counting(score, stats, by_odds, n_lv, order, rank):
    """The stable sort of :func:`_sort_levels` when :func:`_total_preorder` holds:
    level a's position is the number of levels strictly before it plus the number of
    equal ones with a lower code. Every pair is compared, without a branch (vectorised):
    for the few levels of a small node, faster than the insertion sort, whose stops the
    processor mispredicts."""
    for a in range(n_lv):
        r = np.int64(0)
        if by_odds:
            n0_a = stats[2 * a]
            n1_a = stats[2 * a + 1]
            for b in range(n_lv):
                lo = stats[2 * b + 1] * n0_a  # b before a: N1(b) N0(a) < N1(a) N0(b)
                hi = n1_a * stats[2 * b]
                r += (lo < hi) | ((lo == hi) & (b < a))
        else:
            s_a = score[a]
            for b in range(n_lv):
                s_b = score[b]
                r += (s_b < s_a) | ((s_b == s_a) & (b < a))
        rank[a] = r
    for a in range(n_lv):
        order[rank[a]] = a


@jit(inline="always")
def _sort_levels(score, stats, by_odds, n_lv, ints, lm):
    """The scan order: present levels sorted by :func:`_before`, ties in code order (a
    stable bottom-up merge sort, written out: NumPy's stable ``argsort`` costs seconds
    of compilation). Leaves the order in the SIDE block (scratch until the sides are
    set) and each level's rank in the RANK block; returns the order (a view)."""
    order = ints[SIDE * lm:SIDE * lm + n_lv]
    tmp = ints[RANK * lm:RANK * lm + n_lv]
    if n_lv <= INSERTION_LEVELS and _total_preorder(score, stats, by_odds, n_lv):
        _rank_by_counting(score, stats, by_odds, n_lv, order, tmp)
        return order
    for i in range(n_lv):
        order[i] = i
    if n_lv <= INSERTION_LEVELS:  # few levels: an insertion sort, also stable
        for i in range(1, n_lv):
            lvl = order[i]
            pos = i
            while pos > 0 and not _before(order[pos - 1], lvl, score, stats, by_odds):
                order[pos] = order[pos - 1]
                pos -= 1
            order[pos] = lvl
        for pos in range(n_lv):
            tmp[order[pos]] = pos
        return order
    width = 1
    while width < n_lv:
        for lo in range(0, n_lv, 2 * width):
            mid = min(lo + width, n_lv)
            hi = min(lo + 2 * width, n_lv)
            a = lo
            b = mid
            for k in range(lo, hi):
                if a < mid and (b >= hi or _before(order[a], order[b], score, stats,
                                                   by_odds)):
                    tmp[k] = order[a]
                    a += 1
                else:
                    tmp[k] = order[b]
                    b += 1
        for k in range(n_lv):
            order[k] = tmp[k]
        width *= 2
    for pos in range(n_lv):
        tmp[order[pos]] = pos
    return order


# --------------------------------------------------------------------------- classification

@jit(borrowed=True)
def _leading_eigenvector(a, v, J):
    """The eigenvector of the largest eigenvalue of the symmetric J × J matrix ``a``
    (row-major, destroyed): returns the column of ``v`` that holds it.

    Cyclic Jacobi rotations (each zeroes one off-diagonal entry) until the off-diagonal
    mass is negligible: accurate even when the two largest eigenvalues are close, where
    the power method converges slowly. ``v`` (J × J) receives the eigenvectors as
    columns. Deterministic.
    """
    for r in range(J):
        for c in range(J):
            v[r * J + c] = 1.0 if r == c else 0.0
    for _ in range(JACOBI_SWEEPS):
        off = 0.0
        diag = 0.0
        for r in range(J):
            diag += a[r * J + r] * a[r * J + r]
            for c in range(r + 1, J):
                off += a[r * J + c] * a[r * J + c]
        if off <= 1e-30 * diag or off == 0.0:
            break
        for p in range(J - 1):
            for q in range(p + 1, J):
                apq = a[p * J + q]
                if apq == 0.0:
                    continue
                theta = (a[q * J + q] - a[p * J + p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
                if theta < 0.0:
                    t = -t
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for k in range(J):
                    akp = a[k * J + p]
                    akq = a[k * J + q]
                    a[k * J + p] = c * akp - s * akq
                    a[k * J + q] = s * akp + c * akq
                for k in range(J):
                    apk = a[p * J + k]
                    aqk = a[q * J + k]
                    a[p * J + k] = c * apk - s * aqk
                    a[q * J + k] = s * apk + c * aqk
                for k in range(J):
                    vkp = v[k * J + p]
                    vkq = v[k * J + q]
                    v[k * J + p] = c * vkp - s * vkq
                    v[k * J + q] = s * vkp + c * vkq
    best = 0
    for r in range(1, J):
        if a[r * J + r] > a[best * J + best]:
            best = r
    return best


@jit(borrowed=True)
def _first_component_scores(stats, n_lv, n_classes, factor, score, work):
    """Heuristic order: score of every level on the first principal component of the
    class proportions p(j | level), weighted by the level's Q (Coppersmith, Hong &
    Hosking 1999), the component from :func:`_leading_eigenvector`.

    Parameters
    ----------
    stats : float64 L J class counts.
    n_lv, n_classes : L and J.
    factor : float64 (J,) c_j.
    score : float64 (L,) output.
    work : float64 scratch of 2 J J + J.
    """
    J = n_classes
    cov = work[:J * J]
    vecs = work[J * J:2 * J * J]
    mean = work[2 * J * J:2 * J * J + J]
    for j in range(J):
        mean[j] = 0.0
    q_all = 0.0
    for lvl in range(n_lv):
        for j in range(J):
            q = factor[j] * stats[lvl * J + j]
            q_all += q
            mean[j] += q
    for j in range(J):
        mean[j] /= q_all
    for a in range(J * J):
        cov[a] = 0.0
    for lvl in range(n_lv):
        q = 0.0
        for j in range(J):
            q += factor[j] * stats[lvl * J + j]
        for a in range(J):
            da = factor[a] * stats[lvl * J + a] / q - mean[a]
            for b in range(J):
                db = factor[b] * stats[lvl * J + b] / q - mean[b]
                cov[a * J + b] += q * da * db
    col = _leading_eigenvector(cov, vecs, J)
    for lvl in range(n_lv):
        q = 0.0
        for j in range(J):
            q += factor[j] * stats[lvl * J + j]
        sc = 0.0
        for j in range(J):
            sc += vecs[j * J + col] * factor[j] * stats[lvl * J + j] / q
        score[lvl] = sc


@jit(inline="always")
def _class_ordered_scan(stats, n_lv, n_classes, score, ints, lm, suf, left, tg,
                        node_impurity, n_node, min_leaf, tol):
    """Scan the L - 1 splits of the levels sorted by ``score`` (ties: lower code first);
    returns (Δi, k) of the best, k the number of levels of the order before it."""
    J = n_classes
    order = _sort_levels(score, stats, J == 2, n_lv, ints, lm)
    # suffix sums: suf[k J + j] = Σ_{pos >= k} counts of order[pos]
    for j in range(J):
        suf[(n_lv - 1) * J + j] = stats[order[n_lv - 1] * J + j]
    for pos in range(n_lv - 2, 0, -1):
        lvl = order[pos]
        for j in range(J):
            suf[pos * J + j] = suf[(pos + 1) * J + j] + stats[lvl * J + j]
    for j in range(J):
        left[j] = 0.0
    n_left = 0
    best = -np.inf
    best_k = -1
    screen = tg.criterion == GINI
    for k in range(1, n_lv):
        lvl = order[k - 1]
        for j in range(J):
            left[j] += stats[lvl * J + j]
        n_left += ints[NCASE * lm + lvl]
        if n_left < min_leaf or n_node - n_left < min_leaf:
            continue
        right = suf[k * J:(k + 1) * J]
        if screen and best_k >= 0 and gini_certainly_below(left, right, tg.factor,
                                                           best - tol):
            continue
        d = delta_from_counts(left, right, tg.factor, tg.criterion, node_impurity)
        if d > best + tol or (d >= best - tol and best_k >= 0
                              and _prefix_before(ints, lm, n_lv, k, best_k)):
            best = d
            best_k = k
    return best, best_k


@jit(inline="always")
def _class_exhaustive(stats, n_lv, n_classes, ints, lm, left, right, total, tg,
                      node_impurity, n_node, min_leaf, tol):
    """Every split of the present levels: S = {level 0} ∪ {level b + 1 : bit b of g}
    for g < 2^(L-1) - 1, in Gray-code order; returns (Δi, g) of the best (g = -1: none).

    With exact sums (integer weights) S's counts are updated by one level per step and
    the other side's are the node's minus S's; otherwise both are summed afresh.

    Gini candidates are screened (skipped when their Δi is certainly below the best's
    less the tie tolerance). With exact sums and one factor for the classes present,
    Δi = Σ_j l_j²/(Q Q_L) + Σ_j r_j²/(Q Q_R) - Σ_j N_j²/Q², so the screen compares
    ``sq_l Q_R + sq_r Q_L`` with ``B Q_L Q_R``, B set at each new best: no division per
    candidate. Every product is of integers or off by a few ulps, far inside
    :data:`GINI_SCREEN_MARGIN`; other problems screen with
    :func:`cartjit.engine.scans.gini_certainly_below`. Screened candidates cannot change
    the result, so both screens give the same split.
    """
    J = n_classes
    n_sub = np.int64(1) << (n_lv - 1)
    full = n_sub - 1
    exact = tg.exact_sums
    factor = tg.factor
    criterion = tg.criterion
    for j in range(J):
        left[j] = stats[j]
    n_left = ints[NCASE * lm]
    g = np.int64(0)
    best = -np.inf
    best_g = np.int64(-1)
    screen = criterion == GINI
    lean = screen and exact and equal_factors(total, factor)
    q = 0.0
    sq_t = 0.0
    for j in range(J):
        q += total[j]
        sq_t += total[j] * total[j]
    b_lean = -np.inf
    for i in range(n_sub):
        if i > 0:
            b = 0
            while not (i >> b) & 1:
                b += 1
            lvl = b + 1
            bit = np.int64(1) << b
            sign = -1.0 if g & bit else 1.0
            n_left += (-1 if g & bit else 1) * ints[NCASE * lm + lvl]
            g ^= bit
            if exact:
                for j in range(J):
                    left[j] += sign * stats[lvl * J + j]
        if g == full:
            continue
        if n_left < min_leaf or n_node - n_left < min_leaf:
            continue
        if lean:
            q_l = 0.0
            q_r = 0.0
            sq_l = 0.0
            sq_r = 0.0
            for j in range(J):
                l_j = left[j]
                r_j = total[j] - l_j
                right[j] = r_j
                q_l += l_j
                q_r += r_j
                sq_l += l_j * l_j
                sq_r += r_j * r_j
            if q_l > 0.0 and q_r > 0.0 and sq_l * q_r + sq_r * q_l < b_lean * q_l * q_r:
                continue
        elif exact:
            for j in range(J):
                right[j] = total[j] - left[j]
        else:
            for j in range(J):
                left[j] = stats[j]
                right[j] = 0.0
            for lvl in range(1, n_lv):
                into_left = (g >> (lvl - 1)) & 1
                for j in range(J):
                    if into_left:
                        left[j] += stats[lvl * J + j]
                    else:
                        right[j] += stats[lvl * J + j]
        if (screen and not lean and best_g >= 0
                and gini_certainly_below(left, right, factor, best - tol)):
            continue
        d = delta_from_counts(left, right, factor, criterion, node_impurity)
        if d > best + tol or (d >= best - tol and best_g >= 0 and g < best_g):
            best = d
            best_g = g
            if lean:
                b_lean = (best - tol - GINI_SCREEN_MARGIN + sq_t / (q * q)) * q
    return best, best_g


@jit(borrowed=True)
def best_subset_classification(seg, tg, total, node_impurity, min_leaf, max_exhaustive,
                               fs, ints, lm):
    """Split search (categorical, classification): the best subset split of a node on
    one feature; returns ``(Δi, n_left)`` or ``(-inf, -1)`` (see the module docstring).

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` (``ranks``: the codes by case).
    tg : :class:`cartjit.engine.scans.Targets`.
    total : float64 (J,) N_j(t).
    node_impurity : i(t), which sets the tie tolerance.
    min_leaf : least number of cases in a child.
    max_exhaustive : exhaustive search up to this many present levels (J > 2 present).
    fs : float64 scratch of :func:`float_scratch_size`.
    ints : int64 scratch of :func:`int_scratch_size`; receives the sides.
    lm : the largest number of levels of a feature (the block length of ``ints``).
    """
    J = total.shape[0]
    n_lv = _class_level_stats(seg, tg, J, fs, ints, lm)
    if n_lv < 2:
        return -np.inf, np.int64(-1)
    stats = fs[:lm * J]
    suf = fs[lm * J:2 * lm * J]
    score = fs[2 * lm * J:2 * lm * J + lm]
    vec = fs[2 * lm * J + lm:]
    left = vec[:J]
    right = vec[J:2 * J]
    n_node = seg.end - seg.start
    tol = tie_tolerance(node_impurity)
    if J > 2 and n_lv <= max_exhaustive:
        best, g = _class_exhaustive(stats, n_lv, J, ints, lm, left, right, total, tg,
                                    node_impurity, n_node, min_leaf, tol)
        if g < 0:
            return -np.inf, np.int64(-1)
        n_left = 0
        for lvl in range(n_lv):
            side = lvl == 0 or (g >> (lvl - 1)) & 1
            ints[SIDE * lm + lvl] = 1 if side else 0
            if side:
                n_left += ints[NCASE * lm + lvl]
        return best, np.int64(n_left)
    if J > 2:
        _first_component_scores(stats, n_lv, J, tg.factor, score, vec[2 * J:])
    best, k = _class_ordered_scan(stats, n_lv, J, score, ints, lm, suf, left, tg,
                                  node_impurity, n_node, min_leaf, tol)
    if k < 0:
        return -np.inf, np.int64(-1)
    return best, np.int64(_set_sides_from_prefix(ints, lm, n_lv, k))


# --------------------------------------------------------------------------- regression

@jit(borrowed=True)
def best_subset_regression(seg, y, w, unit, mean, node_impurity, min_leaf, fs, ints, lm):
    """Split search (categorical, regression): the best subset split, by the L - 1
    splits of the levels sorted by their mean of y; returns ``(Δi, n_left)`` or
    ``(-inf, -1)``. Δi = (S_L²/W_L + S_R²/W_R - S²/W) / W on the centred sums, the
    right child's summed from the end of the order.

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` (``ranks``: the codes by case).
    y, w, unit : responses, weights and unit weights (``Targets`` fields).
    mean : ȳ(t).
    node_impurity : Var(t), which sets the tie tolerance.
    min_leaf : least number of cases in a child.
    fs, ints, lm : scratch as for :func:`best_subset_classification`.
    """
    n_lv = _reg_level_stats(seg, y, w, unit, mean, fs, ints, lm)
    return subset_regression_scan(n_lv, seg.end - seg.start, node_impurity, min_leaf, fs,
                                  ints, lm)


@jit(borrowed=True)
def subset_regression_scan(n_lv, n_node, node_impurity, min_leaf, fs, ints, lm):
    """The search of :func:`best_subset_regression` once the ``n_lv`` levels' W and
    centred sums are in ``fs`` and their codes and numbers of cases in ``ints`` (as
    :func:`_reg_level_stats` leaves them), ``n_node`` cases in all; returns
    ``(Δi, n_left)`` or ``(-inf, -1)``, and leaves the sides in ``ints``."""
    if n_lv < 2:
        return -np.inf, np.int64(-1)
    suf = fs[2 * lm:4 * lm]
    score = fs[4 * lm:5 * lm]
    tol = tie_tolerance(node_impurity)
    for lvl in range(n_lv):
        score[lvl] = fs[2 * lvl + 1] / fs[2 * lvl]
    order = _sort_levels(score, fs, False, n_lv, ints, lm)
    last = order[n_lv - 1]
    suf[2 * (n_lv - 1)] = fs[2 * last]
    suf[2 * (n_lv - 1) + 1] = fs[2 * last + 1]
    for pos in range(n_lv - 2, 0, -1):
        lvl = order[pos]
        suf[2 * pos] = suf[2 * (pos + 1)] + fs[2 * lvl]
        suf[2 * pos + 1] = suf[2 * (pos + 1) + 1] + fs[2 * lvl + 1]
    w_left = 0.0
    s_left = 0.0
    n_left = 0
    best = -np.inf
    best_k = -1
    for k in range(1, n_lv):
        lvl = order[k - 1]
        w_left += fs[2 * lvl]
        s_left += fs[2 * lvl + 1]
        n_left += ints[NCASE * lm + lvl]
        if n_left < min_leaf or n_node - n_left < min_leaf:
            continue
        w_right = suf[2 * k]
        s_right = suf[2 * k + 1]
        w_node = w_left + w_right
        s_node = s_left + s_right
        d = (s_left * s_left / w_left + s_right * s_right / w_right
             - s_node * s_node / w_node) / w_node
        if d > best + tol or (d >= best - tol and best_k >= 0
                              and _prefix_before(ints, lm, n_lv, k, best_k)):
            best = d
            best_k = k
    if best_k < 0:
        return -np.inf, np.int64(-1)
    return best, np.int64(_set_sides_from_prefix(ints, lm, n_lv, best_k))

@jit(borrowed=True)
def _search_subsets(ps, fr, nodes, tg, rules, work, pairs, cat, c, n_chunks):
    """Step 1, search, categorical features: the best subset split of every (frontier
    node, categorical feature) pair in chunk c.

    A kernel of its own, run only when some feature is categorical, so that fits
    without categorical features never compile the subset search. The codes are read
    from ``ps.codes`` (uint16, half the cache footprint of their int32 row of
    ``ps.ranks``).

    Parameters
    ----------
    ps, fr, nodes, tg, rules, work : as :func:`_search`.
    pairs : :class:`Pairs` output; the pairs of categorical features are written.
    cat : int64 the categorical features.
    c, n_chunks : this chunk (pairs c, c + n_chunks, ... of the node × ``cat`` pairs).
    """
    p = ps.keys.shape[0]
    n_cat = cat.shape[0]
    n_fr = fr.node.shape[0]
    lm = work.level_i.shape[1] // 4
    # Feature by feature, with this chunk's scratch and the feature's rows taken once:
    # taking an array out of a record is an atomic reference count, which threads
    # taking the same array contend for, and small pairs cost little more than that.
    level_f = work.level_f[c]
    level_i = work.level_i[c]
    value = nodes.value
    fnode = nodes.fnode
    keep_bits = pairs.left_bits.shape[0] > 0
    for fi in range(n_cat):
        f = cat[fi]
        seg_keys = ps.keys[f]
        codes = ps.codes[ps.rank_row[f]]
        j, step = _chunk_walk(fi, n_cat, c, n_chunks)
        if j == n_chunks:
            continue
        while j < n_fr:
            start = fr.start[j]
            end = fr.end[j]
            k = j * p + f
            pos = np.int64(-1)
            d = -np.inf
            if end - start >= 2 and (rules.max_features == 0 or work.drawn[j, f] != 0):
                node = fr.node[j]
                d, pos = _subset_pair(Segment(seg_keys, codes, start, end), tg, rules,
                                      value[node], fnode[node, F_IMPURITY], fr.mean[j],
                                      level_f, level_i, lm)
            pairs.delta[k] = d
            pairs.pos[k] = pos
            if pos >= 0 and keep_bits:
                pairs.left_bits[k], pairs.level_bits[k] = _side_bits(level_i, lm,
                                                                     end - start)
            j += step


@jit(inline="always")
def _subset_pair(seg, tg, rules, total, imp, mean, level_f, level_i, lm):
    """Step 1, one (node, categorical feature) pair: the best subset split of ``seg``;
    returns ``(Δi, pos)`` (``(-inf, -1)`` when none) and leaves its sides in
    ``level_i``.

    Parameters
    ----------
    seg : :class:`cartjit.engine.scans.Segment` of the cases searched (``ranks``: codes).
    tg, rules : :class:`cartjit.engine.scans.Targets`, :class:`Rules`.
    total : float64 (J,) class counts of those cases (classification).
    imp : their impurity.
    mean : their ȳ (regression).
    level_f, level_i, lm : this thread's level scratch and its block length.
    """
    if tg.criterion != SQUARED_ERROR:
        d, n_left = best_subset_classification(seg, tg, total, imp, rules.min_samples_leaf,
                                               rules.max_exhaustive, level_f, level_i, lm)
    else:
        d, n_left = best_subset_regression(seg, tg.y_reg, tg.w, tg.unit_weights, mean, imp,
                                           rules.min_samples_leaf, level_f, level_i, lm)
    if n_left < 0:
        return -np.inf, np.int64(-1)
    return d, seg.start + n_left


@jit(borrowed=True)
def _write_level_sets(keys, start, end, shift, codes, from_bits, bits, level_i, lm,
                      level_sets, row):
    """Step 2, a subset split: write the level sets of row ``row``. A level goes left
    when its code's bit is set in ``bits`` (``from_bits``), or when the search left it
    in S in ``level_i``: ``keys[start:end]`` lists the cases grouped by level, levels in
    code order, so the k-th run of equal codes is present level k."""
    for side in range(2):
        for wd in range(level_sets.shape[2]):
            level_sets[row, side, wd] = 0
    ushift = np.uint64(shift)
    k = 0
    i = start
    while i < end:
        code = codes[np.uint64(keys[np.uint64(i)]) >> ushift]
        if from_bits:
            go = np.int64((bits >> np.uint64(code)) & np.uint64(1))
        else:
            go = level_i[SIDE * lm + k]
        level_sets[row, 1 - go, code >> 6] |= np.uint64(1) << np.uint64(code & 63)
        k += 1
        i = level_run_end(keys, codes, ushift, i, end, code)


@jit(inline="always")
def _side_bits(ints, lm, n_cases):
    """Step 1, a subset split just found: the codes of the levels in S (the side the
    search left in :data:`cartjit.engine.subsets.SIDE`) and those of every level searched,
    as two bitsets (code c is bit c; every code below :data:`BITSET_LEVELS`), from one
    walk over the levels (as :func:`cartjit.engine.subsets.left_levels_bits`); ``n_cases``
    is the number of cases searched, which the levels' counts add up to."""
    bits = np.uint64(0)
    present = np.uint64(0)
    seen = 0
    lvl = 0
    while seen < n_cases:
        seen += ints[NCASE * lm + lvl]
        code_bit = np.uint64(1) << np.uint64(ints[CODE * lm + lvl])
        present |= code_bit
        if ints[SIDE * lm + lvl]:
            bits |= code_bit
        lvl += 1
    return bits, present
