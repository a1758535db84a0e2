"""Surrogate splits of one node on one feature (docs/maths.md §8).

A surrogate split mimics the node's primary split on another feature, so that a case
missing the primary feature can still be sent down. Every case of the node whose primary
feature is present has a direction, its *mark*: 1 (left) or 0 (right); a case missing
the primary feature is marked 2 and takes no part in the agreement. The agreement of a
split s on feature f is the case weight of the marked cases that s sends the way their
mark says, over the cases with f present.

* **ordered feature** — the node's cases with f present are scanned in increasing order
  of x_f. Between two consecutive distinct values (of any present case, marked or not)
  lies a candidate threshold, taken only when at least two marked cases lie on each side;
  both directions are tried, "x <= threshold goes right" first. A candidate must agree
  strictly more than the best so far, which starts at the majority (the larger of the
  marked weights going left and right among the cases with f present): the smallest
  threshold wins ties. The rule is rpart's (``choose_surg``).
* **categorical feature** — each level present among the marked cases goes the way most
  of its weight goes; an even split goes with the majority direction of the marked cases
  with f present. When those tie too, it goes to the child rpart numbers 2k+1: the one
  whose mean class number Σ_j j p(j | child) (under the split-search priors), or mean
  response, is not the smaller (``tie_left``). A level without a marked case is in neither
  set. The split is kept only when more than one marked case agrees with it and more than
  one disagrees (rpart's test as it is written, which rejects a level-for-level copy of a
  categorical primary split).

The agreement is then divided by a total: with ``style`` 0, the weight of every marked
case of the node (a case missing f counts as a disagreement), with ``style`` 1 the
weight of the marked cases with f present. The adjusted agreement compares it with the
majority rule over the same total, ``adj = (agree - majority) / (1 - majority)``.

Both searches return ``(agree, adj)`` with ``(0, 0)`` when no split qualifies; the
ordered one also the position of its threshold (the caller turns the kept ones into
thresholds: reading two rows of X per pair cost about a tenth of the search) and the
direction, the categorical one the side of each level in its scratch.
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .predict import _level_side
from .records import (I_N_SUR, I_SUR_START, LEFT, MISSING, RANK_TIE, RIGHT, S_ADJ, S_AGREE,
                      S_COUNT, S_FEATURE, S_LEVEL_ROW, S_LOW_LEFT, S_THRESHOLD)
from .scans import threshold_between
from .speed import _take_block

__all__ = ["ordered_surrogate", "categorical_surrogate", "LEVEL_LEFT", "LEVEL_RIGHT",
           "LEVEL_NONE", "MIN_ADJ", "MARK_PACK"]

#: Sides of a level in a categorical surrogate.
LEVEL_NONE, LEVEL_LEFT, LEVEL_RIGHT = 0, 1, 2

#: A surrogate is kept only when its adjusted agreement exceeds this (rounding can
#: leave a tiny positive value where the agreement equals the majority).
MIN_ADJ = 1e-10


@jit
def _fractions(agree, majority, both_total, w_left, w_right, style):
    """The agreement and the adjusted agreement as fractions of the style's total."""
    if style == 0:
        total = w_left + w_right
        majority = max(w_left, w_right)
    else:
        total = both_total
    a = agree / total
    m = majority / total
    return a, (a - m) / (1.0 - m)


# Inlined into the callers, which take every array once per feature: a call with this
# many array arguments costs about as much as a small node's scan.
@jit(inline="always")
def ordered_surrogate(row, start, end, shift, marks, w, unit_weights, ranks, high, w_left,
                      w_right, style):
    """Best ordered surrogate split on one feature; returns
    ``(agree, adj, pos, low_left)``: the threshold lies between the values of the cases
    of ``row[pos - 1]`` and ``row[pos]``, ``low_left`` 1 when ``x <= threshold`` goes
    left; ``(0, 0, -1, 0)`` when no threshold beats the majority.

    Parameters
    ----------
    row : int32 keys of the feature; ``row[start:end]`` are the node's cases with the
        feature present, in increasing order of it (cases are ``key >> shift``).
    marks : uint8 by case: 1 left, 0 right, 2 primary feature missing.
    w, unit_weights : case weights (unused with ``unit_weights``).
    ranks : int32 dense ranks of the feature by case, or empty when its values are
        distinct (then every position is a new value).
    high : float64 (3,) the marked cases of the segment: weight going left, weight going
        right, and their number (all start above the threshold).
    w_left, w_right : weight of the node's marked cases going left and right.
    style : 0 or 1, the total of the agreement (module docstring).
    """
    if unit_weights and ranks.shape[0] == 0:
        best, majority, both_total, best_i, low_left = _ordered_scan_distinct(
            row, start, end, shift, marks, high)
    elif unit_weights:
        best, majority, both_total, best_i, low_left = _ordered_scan_counts(
            row, start, end, shift, marks, ranks, high)
    else:
        best, majority, both_total, best_i, low_left = _ordered_scan(
            row, start, end, shift, marks, w, ranks, high)
    if best_i < 0:
        return 0.0, 0.0, np.int64(-1), 0
    a, adj = _fractions(best, majority, both_total, w_left, w_right, style)
    return a, adj, best_i, low_left


@jit(inline="always")
def _ordered_scan(row, start, end, shift, marks, w, ranks, high):
    """The scan of :func:`ordered_surrogate` with case weights: returns ``(best
    agreement, majority, marked weight, position of the best threshold or -1, low_left)``.
    """
    hl = high[0]  # weight of marked-left cases above the threshold
    hr = high[1]
    n_high = np.int64(high[2])
    both_total = hl + hr
    best = max(hl, hr)
    majority = best
    ll = 0.0  # marked-left cases at or below the threshold
    lr = 0.0
    n_low = 0
    best_i = np.int64(-1)
    low_left = 0
    tied = ranks.shape[0] > 0
    last = ranks[row[start] >> shift] if tied and end > start else 0
    i = start
    while i < end and n_high >= 2:
        case = row[i] >> shift
        if tied:
            new_value = ranks[case] != last
            last = ranks[case]
        else:
            new_value = i > start
        if n_low >= 2 and new_value:
            if hl + lr > best:  # x <= threshold goes right
                best = hl + lr
                best_i = i
                low_left = 0
            elif ll + hr > best:  # x <= threshold goes left
                best = ll + hr
                best_i = i
                low_left = 1
        # without branches (the marks come in no order a branch predictor could
        # learn): adding or taking 0.0 changes no sum, so these are the sums a
        # branch per case would form
        m = marks[case]
        marked = np.int64(m != 2)
        to_left = np.float64(m == 1)
        wi = w[case]
        wl = wi * to_left
        wr = wi * (np.float64(marked) - to_left)
        hl -= wl
        ll += wl
        hr -= wr
        lr += wr
        n_high -= marked
        n_low += marked
        i += 1
    return best, majority, both_total, best_i, low_left


@jit(inline="always")
def _ordered_scan_counts(row, start, end, shift, marks, ranks, high):
    """:func:`_ordered_scan` with unit weights, on integer counts.

    The float sums of :func:`_ordered_scan` are then whole numbers below 2**53, exact,
    so counts give the same comparisons and the same results. With
    ``d`` = (marked-right less marked-left cases at or below the threshold), the
    agreements are ``hl + d`` (low side right) and ``hr - d`` (low side left), ``hl`` and
    ``hr`` the segment's marked cases going left and right: one running difference and
    one running count, with one-cycle integer additions, instead of four float sums.
    """
    hl = np.int64(high[0])
    hr = np.int64(high[1])
    n_marked = hl + hr
    best = max(hl, hr)
    majority = best
    d = np.int64(0)
    n_low = np.int64(0)
    best_i = np.int64(-1)
    low_left = np.int64(0)
    tied = ranks.shape[0] > 0
    ushift = np.uint32(shift)
    last = ranks[row[start] >> shift] if tied and end > start else 0
    i = start
    # Unsigned indices (no negative-index wrap-around) and the best kept by selects,
    # not branches (docs/design.md, "Speed machinery").
    while i < end and n_marked - n_low >= 2:
        case = np.uint32(row[np.uint64(i)]) >> ushift
        if tied:
            rank = ranks[np.uint64(case)]
            new_value = rank != last
            last = rank
        else:
            new_value = i > start
        ok = n_low >= 2 and new_value
        agree_r = hl + d  # x <= threshold goes right
        agree_l = hr - d  # x <= threshold goes left
        take_r = ok and agree_r > best
        take_l = ok and not take_r and agree_l > best
        best = agree_r if take_r else (agree_l if take_l else best)
        best_i = i if take_r or take_l else best_i
        low_left = 1 if take_l else (0 if take_r else low_left)
        m = np.int64(marks[np.uint64(case)])
        # m: 0 right, 1 left, 2 not marked: d += 1, -1, 0; n_low += 1, 1, 0
        d += np.int64(m == 0) - np.int64(m == 1)
        n_low += np.int64(m != 2)
        i += 1
    return (np.float64(best), np.float64(majority), np.float64(n_marked), best_i,
            low_left)


#: Change of d (marked-right less marked-left cases below the threshold) by mark: a
#: case marked right (0) adds one, left (1) takes one, unmarked (2) nothing.
_MARK_STEP = np.array([1, -1, 0], dtype=np.int64)
#: Marked-left cases (low 32 bits) and marked cases (high 32 bits) a case adds by mark:
#: right (0), left (1), unmarked (2).
MARK_PACK = np.array([1 << 32, (1 << 32) + 1, 0], dtype=np.int64)
#: Positions per block of :func:`_ordered_scan_distinct`.
_SCAN_BLOCK = 64


@jit(inline="always")
def _first_at(row, lo, hi, ushift, marks, d, target):
    """Position of the first candidate in ``(lo, hi]`` whose running difference, ``d`` at
    ``lo``, equals ``target`` (``lo`` itself when ``d`` does)."""
    if d == target:
        return lo
    i = lo
    while i < hi:
        d += _MARK_STEP[np.uint64(marks[np.uint64(np.uint32(row[np.uint64(i)]) >> ushift)])]
        i += 1
        if d == target:
            return i
    return np.int64(-1)


@jit(inline="always")
def _ordered_scan_distinct(row, start, end, shift, marks, high):
    """:func:`_ordered_scan_counts` for a feature without ties (every position past the
    first is a new value), unit weights.

    The candidates are the positions with at least two marked cases on each side: one
    range ``[lo, hi]``, found by walking in from both ends. At each candidate the two
    agreements are ``hl + d`` and ``hr - d``, which sum to the marked cases; the best
    so far is at least half of them, so at most one of the two can beat it, and the
    strict-improvement walk of :func:`_ordered_scan_counts` ends at the first position
    of the largest of all candidates' agreements: the first position where d is
    largest (low side right) or smallest (low side left), the earlier one when both
    give the same agreement. The range is walked in blocks keeping only the largest
    and smallest d (one addition, a max and a min per case, no selects); the block
    where either first reached its final value is walked again to find the position.
    Same results, in integers, as :func:`_ordered_scan_counts`.
    """
    hl = np.int64(high[0])
    hr = np.int64(high[1])
    n_marked = hl + hr
    majority = max(hl, hr)
    none = (np.float64(majority), np.float64(majority), np.float64(n_marked),
            np.int64(-1), np.int64(0))
    if n_marked < 4:
        return none
    ushift = np.uint32(shift)
    # lo: the first position with two marked cases below it
    d = np.int64(0)
    n_low = np.int64(0)
    i = start
    while i < end and n_low < 2:
        m = marks[np.uint64(np.uint32(row[np.uint64(i)]) >> ushift)]
        d += _MARK_STEP[np.uint64(m)]
        n_low += np.int64(m != 2)
        i += 1
    lo = i
    # hi: the last position with two marked cases at or above it
    hi = end
    n_high = np.int64(0)
    while hi > lo and n_high < 2:
        hi -= 1
        n_high += np.int64(marks[np.uint64(np.uint32(row[np.uint64(hi)]) >> ushift)] != 2)
    if n_low < 2 or n_high < 2:
        return none
    d_max = d
    d_min = d
    # the block where each first reached its value (-1: the candidate lo) and d there
    at_max = np.int64(-1)
    at_min = np.int64(-1)
    d0_max = d
    d0_min = d
    b = lo
    while b < hi:
        b_end = min(b + _SCAN_BLOCK, hi)
        d0 = d
        top = d
        bottom = d
        for k in range(np.uint64(b), np.uint64(b_end)):
            d += _MARK_STEP[np.uint64(marks[np.uint64(np.uint32(row[k]) >> ushift)])]
            top = max(top, d)
            bottom = min(bottom, d)
        if top > d_max:
            d_max = top
            at_max = b
            d0_max = d0
        if bottom < d_min:
            d_min = bottom
            at_min = b
            d0_min = d0
        b = b_end
    agree_r = hl + d_max  # x <= threshold goes right
    agree_l = hr - d_min  # x <= threshold goes left
    best = max(agree_r, agree_l)
    if best <= majority:
        return none
    p_r = np.int64(-1)
    p_l = np.int64(-1)
    if agree_r == best:
        p_r = lo if at_max < 0 else _first_at(row, at_max, min(at_max + _SCAN_BLOCK, hi),
                                              ushift, marks, d0_max, d_max)
    if agree_l == best:
        p_l = lo if at_min < 0 else _first_at(row, at_min, min(at_min + _SCAN_BLOCK, hi),
                                              ushift, marks, d0_min, d_min)
    if p_l < 0 or (p_r >= 0 and p_r < p_l):
        return np.float64(best), np.float64(majority), np.float64(n_marked), p_r, np.int64(0)
    return np.float64(best), np.float64(majority), np.float64(n_marked), p_l, np.int64(1)


@jit(inline="always")
def categorical_surrogate(row, start, end, tg, marks, codes, n_levels, w_left, w_right,
                          style, tie_left, lw, side, counts):
    """Best categorical surrogate split on one feature; returns ``(agree, adj)``, with
    ``(0, 0)`` when it does not qualify, and leaves ``side[c]`` (LEVEL_NONE, LEVEL_LEFT or
    LEVEL_RIGHT) for every level code c < ``n_levels``.

    Parameters
    ----------
    row, start, end, marks : as :func:`ordered_surrogate`.
    tg : :class:`cartjit.engine.scans.Targets`: the keys' ``shift`` and the case weights
        ``w`` (unused with ``unit_weights``).
    codes : int32 level code by case.
    n_levels : L, the feature's number of levels.
    w_left, w_right, style : as :func:`ordered_surrogate`.
    tie_left : 1 when equal weights default to the left child (module docstring).
    lw : float64 (>= 2L) scratch: weight of marked-left / marked-right cases by level
        present.
    side : int64 (>= L) output.
    counts : int64 (>= 3L) scratch: marked-left / marked-right cases and code by level
        present.

    Only the levels present (the segment's runs) are summed and visited, in code order
    (the runs', ascending): the sums over every code of the level-by-level tables this
    replaces added 0.0 for a level absent, which changes no sum, so the results are
    the same; a small node holds a few of the L levels.
    """
    # the segment comes grouped by level: each level's run is summed in registers,
    # without branches on the marks (as in ordered_surrogate), with unsigned indices
    w = tg.w
    unit_weights = tg.unit_weights
    ushift = np.uint32(tg.shift)
    n_run = 0
    i = start
    while i < end:
        c = codes[np.uint64(np.uint32(row[np.uint64(i)]) >> ushift)]
        sl = 0.0
        sr = 0.0
        nl = np.int64(0)
        nm = np.int64(0)
        while i < end:
            case = np.uint64(np.uint32(row[np.uint64(i)]) >> ushift)
            if codes[case] != c:
                break
            m = marks[case]
            marked = np.int64(m != 2)
            to_left = np.int64(m == 1)
            if not unit_weights:
                wi = w[case]
                sl += wi * np.float64(to_left)
                sr += wi * np.float64(marked - to_left)
            nl += to_left
            nm += marked
            i += 1
        if unit_weights:  # sums of ones: the counts, exactly
            sl = np.float64(nl)
            sr = np.float64(nm - nl)
        lw[2 * n_run] = sl
        lw[2 * n_run + 1] = sr
        counts[3 * n_run] = nl
        counts[3 * n_run + 1] = nm - nl
        counts[3 * n_run + 2] = c
        n_run += 1
    for c in range(n_levels):
        side[c] = LEVEL_NONE
    sum_l = 0.0
    sum_r = 0.0
    for r in range(n_run):
        sum_l += lw[2 * r]
        sum_r += lw[2 * r + 1]
    default_left = sum_l > sum_r or (sum_l == sum_r and tie_left == 1)
    majority = sum_l if default_left else sum_r
    agree = 0.0
    n_agree = 0
    n_disagree = 0
    for r in range(n_run):
        wl = lw[2 * r]
        wr = lw[2 * r + 1]
        nl = counts[3 * r]
        nr = counts[3 * r + 1]
        c = counts[3 * r + 2]
        if nl + nr == 0:
            side[c] = LEVEL_NONE
        elif wl < wr or (wl == wr and not default_left):
            side[c] = LEVEL_RIGHT
            agree += wr
            n_agree += nr
            n_disagree += nl
        else:
            side[c] = LEVEL_LEFT
            agree += wl
            n_agree += nl
            n_disagree += nr
    if not (n_agree > 1 and n_disagree > 1):
        return 0.0, 0.0
    return _fractions(agree, majority, sum_l + sum_r, w_left, w_right, style)

@jit(borrowed=True)
def _search_surrogates(X, ps, fr, tg, rules, splits, pairs, sp, work, sur, units, c,
                       n_chunks):
    """Step 2 (surrogates): the best surrogate split of every (split node, other feature)
    pair (:mod:`cartjit.engine.surrogates`), on the marks of :func:`_mark_mv`.

    The pairs are shared out as the chunks go, a block of one feature's split nodes at
    a time, like :func:`_search_mv`'s (``units`` the step's counters).

    Parameters
    ----------
    X, ps, fr, tg, rules, splits, pairs : as :func:`_mark_mv`.
    sp : int64 batch rows of the split nodes.
    work : :class:`Work`.
    sur : :class:`SurrogatePairs` output, pair (j, f) at ``j * p + f``.
    units : the step's counters (:func:`step_counters`).
    c, n_chunks : this chunk (its scratch) and the number of chunks.
    """
    p = ps.keys.shape[0]
    lm = work.level_i.shape[1] // 4
    lw = work.level_f[c]
    ints = work.level_i[c]
    side = ints[3 * lm:4 * lm]
    level_counts = ints[:3 * lm]
    high = work.present[c][:3]
    marks = work.goes_left
    shift = tg.shift
    style = rules.surrogate_style
    n_sp = sp.shape[0]
    while True:
        f, t, t_end = _take_block(units, c, n_chunks, p, n_sp)
        if f < 0:
            break
        row = ps.keys[f]
        n_levels = ps.n_levels[f]
        rk = ps.ranks[ps.rank_row[f]] if ps.rank_row[f] >= 0 else work.no_ranks
        while t < t_end:
            j = sp[t]
            t += 1
            kk = j * p + f
            sur.agree[kk] = 0.0
            sur.adj[kk] = 0.0
            f0 = splits.feat[j]
            if f == f0:
                continue
            start = fr.start[j]
            end = fr.end[j]
            pend = start + pairs.present[kk]
            if pend - start < 2:
                continue
            if n_levels > 0:
                # the codes' uint16 row (half the cache footprint of their ranks)
                a, adj = categorical_surrogate(row, start, pend, tg, marks,
                                               ps.codes[ps.rank_row[f]], n_levels,
                                               splits.w_left[j], splits.w_right[j], style,
                                               splits.tie_left[j], lw, side, level_counts)
                pos = np.int64(-1)
                low = _pack_sides(side, n_levels) if n_levels <= SIDE_BITS else 1
            else:
                # the marked cases with f present: the node's, less those missing f
                # (summed directly when weights could round)
                _marked_totals(row, start, pend, end, tg, marks, splits.w_left[j],
                               splits.w_right[j], pairs.present[j * p + f0], high)
                a, adj, pos, low = ordered_surrogate(row, start, pend, shift, marks, tg.w,
                                                     tg.unit_weights, rk, high,
                                                     splits.w_left[j], splits.w_right[j],
                                                     style)
            # a surrogate no better than the majority is never kept
            sur.agree[kk] = a if adj > MIN_ADJ else 0.0
            sur.adj[kk] = adj
            sur.pos[kk] = pos
            sur.low_left[kk] = low


#: Categorical surrogates of at most this many levels keep their sides from the search
#: (SurrogatePairs.low_left), so that _write_surrogates need not search the pair again.
SIDE_BITS = 31


@jit(inline="always")
def _pack_sides(side, n_levels):
    """The sides of a categorical surrogate's levels (``side[c]``, LEVEL_NONE, LEVEL_LEFT
    or LEVEL_RIGHT, c < ``n_levels`` <= SIDE_BITS) as one int64: bit c set for a level
    going left, bit c + 32 for one going right."""
    packed = np.int64(0)
    for c in range(n_levels):
        if side[c] == LEVEL_LEFT:
            packed |= np.int64(1) << np.int64(c)
        elif side[c] == LEVEL_RIGHT:
            packed |= np.int64(1) << np.int64(c + 32)
    return packed


@jit(inline="always")
def _unpack_sides(packed, n_levels, side):
    """:func:`_pack_sides` undone into ``side[:n_levels]``."""
    for c in range(n_levels):
        if (packed >> np.int64(c)) & 1:
            side[c] = LEVEL_LEFT
        elif (packed >> np.int64(c + 32)) & 1:
            side[c] = LEVEL_RIGHT
        else:
            side[c] = LEVEL_NONE


@jit(inline="always")
def _marked_totals(row, start, pend, end, tg, marks, w_left, w_right, n_marked, out):
    """Surrogates: weight of the marked cases (split feature present) going left and
    right among ``row[start:pend]``, and their number, into ``out[:3]``.

    With exact sums (unit or integer weights) they are the node's totals (``w_left``,
    ``w_right``, ``n_marked``) less the missing tail ``row[pend:end]``; otherwise summed
    directly.
    """
    shift = tg.shift
    if tg.unit_weights:
        # the tail's marked-left and marked cases counted without a branch a case
        packed = np.int64(0)
        ushift = np.uint32(shift)
        for i in range(np.uint64(pend), np.uint64(end)):
            packed += MARK_PACK[np.uint64(marks[np.uint64(np.uint32(row[i]) >> ushift)])]
        n_l = packed & np.int64(0xFFFFFFFF)
        n_m = packed >> np.int64(32)
        out[0] = w_left - np.float64(n_l)
        out[1] = w_right - np.float64(n_m - n_l)
        out[2] = n_marked - n_m
        return
    if tg.exact_sums:
        hl = w_left
        hr = w_right
        n = n_marked
        lo = pend
        hi = end
        sign = -1.0
    else:
        hl = 0.0
        hr = 0.0
        n = 0
        lo = start
        hi = pend
        sign = 1.0
    for i in range(lo, hi):
        case = row[i] >> shift
        m = marks[case]
        if m == 2:
            continue
        wi = 1.0 if tg.unit_weights else tg.w[case]
        if m == 1:
            hl += sign * wi
        else:
            hr += sign * wi
        n += 1 if sign > 0 else -1
    out[0] = hl
    out[1] = hr
    out[2] = n


# Inlined into _send_missing (a call per case missing the split feature), which like the
# other kernels of missing values that run in chunks is compiled borrowed, so that the
# threads do not contend for the reference counts of the tables they share.
@jit(inline="always")
def _surrogate_goes(X, case, f, table, r, is_cat):
    """Routing by surrogate row ``r`` of ``table`` (:class:`SurrogateTable`): LEFT, RIGHT,
    or MISSING when it cannot route."""
    x = X[case, f]
    if is_cat:  # the level's side, as prediction reads it
        side = _level_side(x, table.sur_i[r, S_LEVEL_ROW], table.level_sets)
        return MISSING if side < 0 else (LEFT if side == 0 else RIGHT)
    if np.isnan(x):
        return MISSING
    low = table.sur_i[r, S_LOW_LEFT]
    if x <= table.sur_f[r, S_THRESHOLD]:
        return LEFT if low == 1 else RIGHT
    return RIGHT if low == 1 else LEFT


@jit(inline="always")
def _best_untaken(score, base, p, picks, first, n_taken, tol, floor):
    """Ranking of the surrogates: the feature f not yet taken (in
    ``picks[first:first + n_taken]``, at most ``max_surrogate`` of them) with the largest
    ``score[base + f]`` above ``floor``; a later feature must beat the best so far by
    more than ``tol``, so values equal up to rounding keep feature order. -1 when none
    is left."""
    best = -np.inf
    bf = np.int64(-1)
    for f in range(p):
        v = score[base + f]
        if v > floor and v > best + tol:
            taken = False
            for r in range(first, first + n_taken):
                taken |= picks[r] == f
            if not taken:
                best = v
                bf = f
    return bf


@jit(borrowed=True)
def _pick_surrogates(p, fr, rules, splits, sur, c, n_chunks):
    """Step 2 (surrogates), after :func:`_search_surrogates`: for each split node of the
    batch, the surrogates it keeps, best first (agreement first, feature order on ties
    to within RANK_TIE, agreement above 0: adjusted agreement above MIN_ADJ), into
    ``sur.pick[j * max_surrogate:]``, -1 after the last when fewer.

    Chunk c takes the batch rows c, c + n_chunks, ...: each writes only its own picks
    (in chunks, not serially with the writing of the table rows).

    Parameters
    ----------
    p : the number of features.
    fr, rules, splits : as :func:`_search_surrogates`.
    sur : :class:`SurrogatePairs` (``agree`` filled in).
    c, n_chunks : this chunk and the number of chunks.
    """
    m = rules.max_surrogate
    for j in range(c, fr.node.shape[0], n_chunks):
        first = j * m
        n_sur = 0
        if splits.feat[j] >= 0:
            while n_sur < m:
                bf = _best_untaken(sur.agree, j * p, p, sur.pick, first, n_sur, RANK_TIE,
                                   0.0)
                if bf < 0:
                    break
                sur.pick[first + n_sur] = bf
                n_sur += 1
        if n_sur < m:
            sur.pick[first + n_sur] = -1


@jit(borrowed=True)
def _number_surrogates(ps, fr, nodes, rules, splits, sur, tables):
    """Step 2 (surrogates), serial, after :func:`_pick_surrogates`: give each split node's
    surrogates their rows of the surrogate table, in node order (``I_SUR_START``,
    ``I_N_SUR``), and its categorical surrogates their rows of the level sets, in the
    same order (from ``sur.level_row[j]``), advancing ``tables.rows[0]`` and
    ``tables.rows[2]``; :func:`_send_missing` writes the rows.

    Parameters as :func:`_pick_surrogates`, with ``ps`` the presort (the features'
    numbers of levels), ``nodes`` the node tables and ``tables`` the surrogate table.
    """
    m = rules.max_surrogate
    row = tables.rows[0]
    level_row = tables.rows[2]
    for j in range(fr.node.shape[0]):
        sur.level_row[j] = level_row
        if splits.feat[j] < 0:
            continue
        n_sur = 0
        while n_sur < m and sur.pick[j * m + n_sur] >= 0:
            level_row += ps.n_levels[sur.pick[j * m + n_sur]] > 0
            n_sur += 1
        node = fr.node[j]
        nodes.inode[node, I_SUR_START] = row
        nodes.inode[node, I_N_SUR] = n_sur
        row += n_sur
    tables.rows[0] = row
    tables.rows[2] = level_row


@jit(inline="always")
def _write_surrogates(X, ps, j, start, tg, rules, splits, pairs, sur, work, c, table,
                      first, n_sur):
    """:func:`_send_missing`, one split node (batch row j): write its surrogates' rows of
    the surrogate table (from ``first``; feature, agreements, threshold or level-set
    row, direction, count 0) and its categorical surrogates' level sets (rows from
    ``sur.level_row[j]``), in the order :func:`_pick_surrogates` ranked them. The sides
    of a categorical surrogate come from ``sur.low_left`` (at most SIDE_BITS levels), or
    from searching the pair again with chunk c's scratch. ``table`` is the
    :class:`SurrogateTable` (the surrogate table and the level sets)."""
    p = ps.keys.shape[0]
    level_sets = table.level_sets
    lm = work.level_i.shape[1] // 4
    shift = tg.shift
    lrow = sur.level_row[j]
    for r in range(n_sur):
        bf = sur.pick[j * rules.max_surrogate + r]
        kk = j * p + bf
        row_s = first + r
        table.sur_i[row_s, S_FEATURE] = bf
        table.sur_i[row_s, S_COUNT] = 0
        table.sur_f[row_s, S_AGREE] = sur.agree[kk]
        table.sur_f[row_s, S_ADJ] = sur.adj[kk]
        n_levels = ps.n_levels[bf]
        if n_levels > 0:
            side = work.level_i[c][3 * lm:4 * lm]
            if n_levels <= SIDE_BITS:  # kept by the search
                _unpack_sides(sur.low_left[kk], n_levels, side)
            else:
                categorical_surrogate(ps.keys[bf], start, start + pairs.present[kk], tg,
                                      work.goes_left, ps.ranks[ps.rank_row[bf]], n_levels,
                                      splits.w_left[j], splits.w_right[j],
                                      rules.surrogate_style, splits.tie_left[j],
                                      work.level_f[c], side, work.level_i[c][:3 * lm])
            for s in range(2):
                for wd in range(level_sets.shape[2]):
                    level_sets[lrow, s, wd] = 0
            for code in range(n_levels):
                if side[code] != LEVEL_NONE:
                    s = 0 if side[code] == LEVEL_LEFT else 1
                    level_sets[lrow, s, code >> 6] |= np.uint64(1) << np.uint64(code & 63)
            table.sur_i[row_s, S_LEVEL_ROW] = lrow
            table.sur_i[row_s, S_LOW_LEFT] = 1
            table.sur_f[row_s, S_THRESHOLD] = np.nan
            lrow += 1
        else:
            keys_s = ps.keys[bf]
            pos = sur.pos[kk]
            table.sur_i[row_s, S_LEVEL_ROW] = -1
            table.sur_i[row_s, S_LOW_LEFT] = sur.low_left[kk]
            table.sur_f[row_s, S_THRESHOLD] = threshold_between(
                X[keys_s[pos - 1] >> shift, bf], X[keys_s[pos] >> shift, bf])


@jit(borrowed=True)
def _send_missing(X, ps, fr, nodes, tg, rules, splits, pairs, sur, work, table, c,
                  n_chunks):
    """Step 2 (missing values), after :func:`_number_surrogates`: write each split
    node's surrogate rows (:func:`_write_surrogates`), then send its cases missing the
    split feature down by its surrogates (``use_surrogate`` >= 1,
    counting the cases each surrogate sends) and then by the majority
    (``use_surrogate`` == 2); a case still unsent stays in the node. Sets the children's
    ranges (``splits.pos``, ``splits.stop``).

    Chunk c takes the batch rows c, c + n_chunks, ...: each node writes, reads and
    counts only its own surrogate and level-set rows and marks only its own cases, so
    the result does not depend on the chunks.

    Parameters
    ----------
    X, ps, fr, nodes, tg, rules, splits, pairs : as :func:`_mark_mv`.
    sur : :class:`SurrogatePairs` (picked and numbered).
    work : :class:`Work`; chunk c's scratch serves here.
    table : :class:`SurrogateTable`, the surrogate table and the level sets (rows
        reserved by :func:`_number_surrogates`).
    c, n_chunks : this chunk and the number of chunks.
    """
    p = ps.keys.shape[0]
    marks = work.goes_left
    shift = tg.shift
    for j in range(c, fr.node.shape[0], n_chunks):
        f0 = splits.feat[j]
        if f0 < 0:
            continue
        node = fr.node[j]
        start = fr.start[j]
        end = fr.end[j]
        pend = start + pairs.present[j * p + f0]
        first = nodes.inode[node, I_SUR_START]
        n_sur = nodes.inode[node, I_N_SUR]
        _write_surrogates(X, ps, j, start, tg, rules, splits, pairs, sur, work, c, table,
                          first, n_sur)
        # the cases missing the split feature end its segment
        row = ps.keys[f0]
        w_left = splits.w_left[j]
        w_right = splits.w_right[j]
        # the present cases, counted by _mark_mv; then those sent here
        n_left = splits.pos[j] - start
        n_right = pend - start - n_left
        # The first surrogate routes most of these cases: its sides are found first for
        # all of them, in a loop of independent look-ups of X (scattered rows, which the
        # CPU overlaps), into this chunk's buffer; the other surrogates serve the rest.
        by_first = rules.use_surrogate > 0 and n_sur > 0
        first_go = work.buffers[c]
        n_first = 0
        if by_first:
            fs = table.sur_i[first, S_FEATURE]
            is_cat = ps.n_levels[fs] > 0
            for i in range(pend, end):
                first_go[i - pend] = _surrogate_goes(X, row[i] >> shift, fs, table, first,
                                                     is_cat)
        for i in range(pend, end):
            case = row[i] >> shift
            go = MISSING
            if by_first:
                go = first_go[i - pend]
                if go != MISSING:
                    n_first += 1
                else:
                    for r in range(first + 1, first + n_sur):
                        fs = table.sur_i[r, S_FEATURE]
                        go = _surrogate_goes(X, case, fs, table, r, ps.n_levels[fs] > 0)
                        if go != MISSING:
                            table.sur_i[r, S_COUNT] += 1
                            break
            if go == MISSING and rules.use_surrogate == 2:
                if w_left > w_right:
                    go = LEFT
                elif w_right > w_left:
                    go = RIGHT
            marks[case] = go
            n_left += go == LEFT
            n_right += go == RIGHT
        if by_first:
            table.sur_i[first, S_COUNT] += n_first
        splits.pos[j] = start + n_left
        splits.stop[j] = start + n_left + n_right
