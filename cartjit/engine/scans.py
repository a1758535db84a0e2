"""Best split of one node on one feature: a single scan of the node's presorted cases.

The grower (:mod:`cartjit.engine.grow`) keeps, for every feature m, the node's cases
(rows of X, as int32) in increasing order of x_m as a segment of that feature's row of *keys*. Scanning a segment
from left to right moves one case at a time from t_R to t_L; a boundary between
positions i and i + 1 is a candidate threshold exactly when the two values differ, i.e.
between two consecutive distinct values (docs/maths.md §2). A feature with no tied
values in the learning sample has a candidate at every boundary; for a feature with
ties, ``ranks`` holds the dense rank of every case's value (equal values, equal rank)
and a boundary counts only where the rank changes. ``ranks`` is empty for features
without ties.

At each candidate both children must hold at least ``min_leaf`` cases; the proxy P(s) of
:mod:`cartjit.engine.impurity` is compared with the best so far of this feature, and replaces
it only when larger by more than the tie tolerance, so that the lowest threshold wins a
tie. The result is returned as Δi together with the split position ``pos`` (the left
child is the segment's first ``pos - start`` cases) and ``-inf`` when no candidate
exists.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .speed import jit
from .impurity import ENTROPY, GINI, tie_tolerance, xlogx
from .speed import LANES, compress_class_changes, prefetch

__all__ = ["Targets", "Segment", "threshold_between", "class_counts", "list_class_changes",
           "equal_factors", "best_split_gini_runs", "best_split_class_runs",
           "best_split_classification",
           "best_split_regression", "best_split_regression_unit"]


class Targets(NamedTuple):
    """What the tree predicts, by case, and how the keys carry it: one record that every
    kernel of the growth takes instead of nine arguments.

    A key is ``case << shift | class`` when ``mask`` (= 2**shift - 1) is not 0, else the
    case itself, whose class is ``y_class[case]``.
    """

    y_class: np.ndarray    # int32 class index by case (empty for regression)
    y_reg: np.ndarray      # float64 response by case (empty for classification)
    w: np.ndarray          # float64 case weight by case (may be empty with unit_weights)
    unit_weights: bool     # every weight is 1
    exact_sums: bool       # integer weights, totals below 2**53: running sums are exact
    factor: np.ndarray     # float64 per-class factors c_j (empty for regression)
    criterion: int         # a code of cartjit.engine.impurity
    shift: int             # bits of the class label in a key (0: not packed)
    mask: int              # 2**shift - 1
    xlogx: np.ndarray = np.empty(0)  # float64 k log2 k for k = 0..n (entropy with unit
                                     # weights, see best_split_class_runs; else empty)


class Segment(NamedTuple):
    """One node's cases on one feature: ``keys[start:end]`` in increasing order of the
    feature, and the feature's dense ranks by case (empty when it has no ties)."""

    keys: np.ndarray       # int32, one row of the presorted keys
    ranks: np.ndarray      # int32 rank by case, or empty
    start: int
    end: int


@jit(borrowed=True)
def threshold_between(a, b):
    """Step 2 (choose), the threshold: midpoint of consecutive distinct values a < b,
    never rounded up to b (docs/maths.md §2).

    Parameters
    ----------
    a, b : the largest value going left and the smallest going right.
    """
    c = a / 2.0 + b / 2.0
    if c >= b or not np.isfinite(c):
        c = a
    return c


#: Candidates whose proxies agree to this relative width are near-ties, decided on Δi.
NEAR_TIE = 1e-11

#: Cases ahead whose response the regression scans ask for
#: (:func:`cartjit.engine.speed.prefetch`):
#: the keys are cases scattered over y, and where y outgrows the caches each read would
#: otherwise wait for memory in turn (docs/design.md, "Speed machinery").
_AHEAD = np.uint64(128)


@jit(inline="always")
def delta_from_counts(left, right, factor, criterion, node_impurity):
    """Split search, precise Δi(s, t) of a classification split from both children's
    class counts.

    Gini uses Δi = p_L p_R Σ_j (p(j|t_L) - p(j|t_R))², entropy i(t) - p_L i(t_L) -
    p_R i(t_R), twoing its definition: no cancellation between large terms. Used for the
    best split of a feature and to settle near-ties of the proxy.

    Parameters
    ----------
    left, right : float64 (J,) weighted class counts of the children.
    factor : float64 (J,) per-class factors c_j.
    criterion : GINI, ENTROPY or TWOING.
    node_impurity : i(t) (entropy uses it).
    """
    ql_sum = 0.0
    qr_sum = 0.0
    for j in range(left.shape[0]):
        ql_sum += factor[j] * left[j]
        qr_sum += factor[j] * right[j]
    q = ql_sum + qr_sum
    pl = ql_sum / q
    pr = qr_sum / q
    if criterion == ENTROPY:
        il = 0.0
        ir = 0.0
        for j in range(left.shape[0]):
            il -= xlogx(factor[j] * left[j] / ql_sum)
            ir -= xlogx(factor[j] * right[j] / qr_sum)
        return node_impurity - pl * il - pr * ir
    acc = 0.0
    for j in range(left.shape[0]):
        d = factor[j] * left[j] / ql_sum - factor[j] * right[j] / qr_sum
        acc += d * d if criterion == GINI else abs(d)
    if criterion == GINI:
        return pl * pr * acc
    return pl * pr * 0.25 * acc * acc


#: Absolute margin of :func:`gini_certainly_below`: far above the rounding error of
#: either way of computing a Gini Δi (at most 2, a few ulps off).
GINI_SCREEN_MARGIN = 1e-12


@jit(inline="always")
def gini_certainly_below(left, right, factor, bound):
    """Split search, screening: whether the Gini Δi of a split is certainly below
    ``bound``, from an estimate that multiplies by 1/Q_L and 1/Q_R where
    :func:`delta_from_counts` divides by them (two divisions instead of 2J + 2).

    A candidate whose precise Δi lies below ``best - tol`` can neither replace the best
    nor tie with it, so the searches skip its precise Δi when this returns True for
    ``bound = best - tol``; the estimate is off by a few ulps of numbers of order one,
    and :data:`GINI_SCREEN_MARGIN` keeps every skipped candidate well below the bound.
    Zero or non-finite weights on a side are never screened out.

    Parameters
    ----------
    left, right : float64 (J,) weighted class counts of the children.
    factor : float64 (J,) per-class factors c_j.
    bound : the Δi to compare with.
    """
    ql_sum = 0.0
    qr_sum = 0.0
    for j in range(left.shape[0]):
        ql_sum += factor[j] * left[j]
        qr_sum += factor[j] * right[j]
    if not (ql_sum > 0.0 and qr_sum > 0.0):
        return False
    inv_l = 1.0 / ql_sum
    inv_r = 1.0 / qr_sum
    acc = 0.0
    for j in range(left.shape[0]):
        d = factor[j] * (left[j] * inv_l - right[j] * inv_r)
        acc += d * d
    estimate = ql_sum * qr_sum / ((ql_sum + qr_sum) * (ql_sum + qr_sum)) * acc
    return estimate < bound - GINI_SCREEN_MARGIN


@jit(borrowed=True)
def class_counts(keys, start, pos, tg, out):
    """Node statistics: weighted class counts N_j of the cases at positions [start, pos).

    Parameters
    ----------
    keys : int32 one row of keys.
    start, pos : the position range.
    tg : :class:`Targets`.
    out : float64 (J,) output.
    """
    y = tg.y_class
    w = tg.w
    unit_weights = tg.unit_weights
    shift = tg.shift
    mask = tg.mask
    for j in range(out.shape[0]):
        out[j] = 0.0
    for i in range(start, pos):
        key = keys[i]
        out[key & mask if mask else y[key]] += 1.0 if unit_weights else w[key >> shift]


@jit(borrowed=True)
def _precise_class_delta(keys, pos, end, tg, left, total, right, node_impurity):
    """Split search, precise Δi: the split at ``pos`` given the left child's counts.

    With exact sums (integer weights) the right child's counts are ``total - left``;
    otherwise they are summed directly over its cases, because ``total - left`` loses
    the small counts of a lopsided split to cancellation and would break exact ties.

    Parameters
    ----------
    keys : int32 one row of keys; the right child is ``keys[pos:end]``.
    pos, end : split position and end of the segment.
    tg : :class:`Targets`.
    left, total : float64 (J,) counts of the left child and of the node.
    right : float64 (J,) scratch, receives the right child's counts.
    node_impurity : i(t) (entropy uses it).
    """
    if tg.exact_sums:
        for j in range(left.shape[0]):
            right[j] = total[j] - left[j]
    else:
        class_counts(keys, pos, end, tg, right)
    return delta_from_counts(left, right, tg.factor, tg.criterion, node_impurity)


#: Per-class factors c_j equal to this relative width count as one factor (the Gini fast
#: path). Empirical priors give c_j = (N_j / N) / N_j, equal to 1 / N up to an ulp or two;
#: a relative error e in the factors moves every proxy by at most 2 e times its size,
#: far inside the near-tie band (NEAR_TIE), where Δi is recomputed with the true factors.
EQUAL_FACTORS_RTOL = 1e-13


@jit(borrowed=True)
def _near_tie(seg, pos, best_pos, best_delta, tg, total, scratch, node_impurity, tol):
    """Split search, near-ties: settle a candidate at ``pos`` whose proxy is within the
    near-tie band of the best on the precise Δi.

    Computes the best's precise Δi if not yet known (from its left counts), then the
    candidate's. Returns the best Δi after the comparison and whether the candidate won
    (by more than ``tol``), in which case the best's left counts receive the candidate's.

    Parameters
    ----------
    seg : :class:`Segment` being scanned.
    pos, best_pos : candidate and best positions.
    best_delta : the best's precise Δi, or NaN when not yet computed.
    tg : :class:`Targets`.
    total : float64 (J,) the node's counts N_j(t).
    scratch : float64 (3J,) running left counts, the best's left counts and room for
        right counts, in that order.
    node_impurity, tol : i(t) and the tie tolerance on Δi.
    """
    n_classes = total.shape[0]
    left = scratch[:n_classes]
    best_left = scratch[n_classes:2 * n_classes]
    right = scratch[2 * n_classes:3 * n_classes]
    if np.isnan(best_delta):
        best_delta = _precise_class_delta(seg.keys, best_pos, seg.end, tg, best_left, total,
                                          right, node_impurity)
    d = _precise_class_delta(seg.keys, pos, seg.end, tg, left, total, right, node_impurity)
    if not d > best_delta + tol:
        return best_delta, False
    for j in range(n_classes):
        best_left[j] = left[j]
    return d, True


@jit(inline="always")
def list_class_changes(keys, lo, hi, y, mask, simd, cand):
    """Split search, pass 1 of the scan by runs: list lo, every class change strictly
    between lo and hi, and hi (when hi > lo) in ``cand``; returns how many.

    A class change at i means the cases at i - 1 and i differ in class. Branch-free:
    every position is written and only a change advances the count. With ``simd`` and
    labels in the keys, blocks of 16 positions are compared and packed at once
    (:func:`cartjit.engine.speed.compress_class_changes`); the scalar loop finishes the tail.

    Parameters
    ----------
    keys : int32 one row of keys.
    lo, hi : first and last candidate positions.
    y : int32 class by case (read when ``mask`` is 0).
    mask : 2**shift - 1 for labels in the keys, else 0.
    simd : 16-key blocks (labels in the keys only).
    cand : int32 output, room for hi - lo + 1 positions (16 more with ``simd``: a
        block stores all sixteen lanes).
    """
    cand[0] = lo
    n_cand = 1
    i0 = lo + 1
    if simd and mask:
        while i0 + LANES <= hi:
            n_cand += compress_class_changes(keys, i0, mask, cand, n_cand)
            i0 += LANES
    # Unsigned indices spare every access Numba's negative-index wrap-around.
    key = keys[np.uint64(i0 - 1)]
    prev = key & mask if mask else y[np.uint64(key)]
    u_cand = np.uint64(n_cand)
    for i in range(np.uint64(i0), np.uint64(hi)):
        key = keys[i]
        cls = key & mask if mask else y[np.uint64(key)]
        cand[u_cand] = i
        u_cand += np.uint64(cls != prev)
        prev = cls
    n_cand = np.int64(u_cand)
    if hi > lo:
        cand[n_cand] = hi
        n_cand += 1
    return n_cand


@jit(borrowed=True)
def equal_factors(total, factor):
    """Split search, mode test: whether the classes present (N_j > 0) share one factor
    c_j, to EQUAL_FACTORS_RTOL (then the unit-weight Gini proxy applies).

    Parameters
    ----------
    total : float64 (J,) the node's counts N_j(t).
    factor : float64 (J,) c_j.
    """
    c_min = np.inf
    c_max = 0.0
    for j in range(total.shape[0]):
        if total[j] > 0.0:
            c_min = min(c_min, factor[j])
            c_max = max(c_max, factor[j])
    return c_max - c_min <= EQUAL_FACTORS_RTOL * c_max


@jit(inline="always")
def _gini_delta_exact_right(left, total, factor):
    """Split search (lean Gini), precise Δi: :func:`delta_from_counts` for Gini with
    right counts ``total - left`` (exact sums), operation for operation, so that the lean
    scan gives the general scan's Δi bit for bit. A twin on purpose: the lean scan
    calling the general :func:`_near_tie` and :func:`_precise_class_delta` instead (many
    array arguments) makes the search of the deep levels markedly slower.

    Parameters
    ----------
    left, total : float64 (J,) counts of the left child and of the node.
    factor : float64 (J,) c_j.
    """
    ql_sum = 0.0
    qr_sum = 0.0
    for j in range(left.shape[0]):
        ql_sum += factor[j] * left[j]
        qr_sum += factor[j] * (total[j] - left[j])
    q = ql_sum + qr_sum
    acc = 0.0
    for j in range(left.shape[0]):
        d = factor[j] * left[j] / ql_sum - factor[j] * (total[j] - left[j]) / qr_sum
        acc += d * d
    return (ql_sum / q) * (qr_sum / q) * acc


@jit(borrowed=True)
def best_split_gini_runs(seg, tg, total, node_impurity, min_leaf, simd, scratch, cand):
    """Split search, the common case: Gini by runs with the lean proxy.

    :func:`best_split_classification` without its other modes, for Gini, unit weights,
    one factor for the classes present (:func:`equal_factors`), labels in the keys
    (``tg.mask`` > 0) and a feature without ties: the scan by runs with the fast proxy,
    exactly as the general function does it, visiting the same candidates in the same
    order with the same comparisons. Free of the general function's other modes, of its
    per-scan set-up and of its calls, it is the fast path of most classification fits.
    Near-ties are settled as :func:`_near_tie`
    settles them. Returns ``(Δi, pos)`` as the general function does, bit for bit: Δi is
    :func:`delta_from_counts`'s Gini, computed with the same operations.

    Parameters
    ----------
    seg : :class:`Segment` (its ranks are not read).
    tg : :class:`Targets`.
    total : float64 (J,) the node's counts N_j(t).
    node_impurity : i(t), which sets the tie tolerance.
    min_leaf : least number of cases in a child.
    simd : list class changes 16 keys at a time.
    scratch : float64 (>= 2J,) running left counts and the best's left counts.
    cand : int32 room for the segment's candidates.
    """
    keys = seg.keys
    start = seg.start
    end = seg.end
    mask = tg.mask
    factor = tg.factor
    tol = tie_tolerance(node_impurity)
    n_classes = total.shape[0]
    left = scratch[:n_classes]
    best_left = scratch[n_classes:2 * n_classes]
    n_node = end - start
    lo = start + min_leaf
    hi = end - min_leaf
    if lo > hi:
        return -np.inf, -1
    n_cand = list_class_changes(keys, lo, hi, tg.y_class, mask, simd, cand)
    sq_l = 0.0
    sq_r = 0.0
    for j in range(n_classes):
        left[j] = 0.0
        sq_r += total[j] * total[j]
    for i in range(start, lo):  # the cases before the first candidate, one by one
        cls = keys[i] & mask
        l_c = left[cls]
        sq_l += 2.0 * l_c + 1.0
        sq_r -= 2.0 * (total[cls] - l_c) - 1.0
        left[cls] = l_c + 1.0
    scale = NEAR_TIE * n_node
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf
    best_pos = np.int64(-1)  # not a literal: callees would compile a second signature
    best_delta = np.nan  # the best's precise Δi, once a near-tie has needed it
    cur = lo
    # Unsigned indices spare the loop Numba's negative-index wrap-around.
    umask = np.uint64(mask)
    ub = np.uint64(0)
    u_cand = np.uint64(n_cand)
    pos = lo
    num = 0.0
    den = 1.0
    while True:
        # The hot loop only finds the next candidate in or above the near-tie band
        # (num / den >= lo_num / best_den, which every outright winner is as well:
        # lo_num <= hi_num); the rare cases are settled below, out of its way.
        hit = False
        while ub < u_cand:
            pos = cand[ub]
            ub += np.uint64(1)
            if pos > cur:  # cases [cur, pos) are one run of one class
                cls = np.uint64(keys[np.uint64(pos - 1)]) & umask
                l_c = left[cls]
                r = float(pos - cur)
                sq_l += r * (2.0 * l_c + r)
                sq_r -= r * (2.0 * (total[cls] - l_c) - r)
                left[cls] = l_c + r
                cur = pos
            n_left = pos - start
            n_right = n_node - n_left
            num = sq_l * n_right + sq_r * n_left
            den = float(n_left) * float(n_right)
            if num * best_den >= lo_num * den:
                hit = True
                break
        if not hit:
            break
        if num * best_den > hi_num * den:
            best_delta = np.nan
            for j in range(n_classes):
                best_left[j] = left[j]
        else:  # a near-tie, settled as _near_tie does
            if np.isnan(best_delta):
                best_delta = _gini_delta_exact_right(best_left, total, factor)
            d = _gini_delta_exact_right(left, total, factor)
            if not d > best_delta + tol:
                continue
            best_delta = d
            for j in range(n_classes):
                best_left[j] = left[j]
        best_den = den
        hi_num = num + scale * den
        lo_num = num - scale * den
        best_pos = pos
    if best_pos < 0:
        return -np.inf, -1
    if not np.isnan(best_delta):
        return best_delta, best_pos
    return _gini_delta_exact_right(best_left, total, factor), best_pos


@jit(borrowed=True)
def best_split_class_runs(seg, tg, total, node_impurity, min_leaf, simd, scratch, cand):
    """Split search by runs, the modes besides the lean Gini scan: Gini with unequal
    factors (priors) or case weights, entropy with unit or integer weights (a table
    ``tg.xlogx``), and twoing, for labels in the keys (``tg.mask`` > 0) and a feature
    without ties.

    :func:`best_split_classification` without its case-by-case mode: the same
    candidates (where the class changes, and the first and last), the same counts
    (weights added case by case in the same order), the same near-tie rule
    (:func:`_near_tie`) and the same precise Δi of the best
    (:func:`_precise_class_delta`), bit for bit. Per candidate:

    * Gini: the proxy of the general scan, operation for operation;
    * entropy: no logarithm per class. With unit or integer weights (exact sums) the
      counts are integers k, and x log2 x of c_j k is c_j (k log2 k + k log2 c_j),
      with k log2 k read from the table ``tg.xlogx`` (T[k], k = 0 up to the total
      weight); when the classes present share one factor c (:func:`equal_factors`),
      the proxy divided by c is Σ_j T[L_j] - T[W_L] + Σ_j T[R_j] - T[W_R], with no
      logarithm at all; otherwise the totals Q_L, Q_R take one each. The proxy moves by a few ulps of its terms (of order Q(t)
      log2 n), far inside the near-tie band (64 ``NEAR_TIE`` Q(t)), where Δi is
      settled exactly as before;
    * twoing: the proxy (Σ_j |q_jL Q_R - q_jR Q_L|)² / (Q_L Q_R) = 4 Q(t)² Δ, compared
      by cross-multiplication (no division; the general scan divides 2J + 2 times),
      within a few ulps of 4 Q(t)² Δ, far inside the band. Twoing is half the
      largest two-class Gini decrease over the partitions of the classes into two
      superclasses; a run of one class moves the counts along a line, along which
      each of those is convex (strictly, unless the superclasses are pure), so their
      maximum is too, and the best split and every exact tie with it lie at an end of
      a run or at the first or last candidate, as for Gini and entropy.

    Returns ``(Δi, pos)``, or ``(-inf, -1)`` when there is no candidate.

    Parameters
    ----------
    seg : :class:`Segment` (its ranks are not read).
    tg : :class:`Targets` (``tg.xlogx`` filled for entropy).
    total : float64 (J,) the node's counts N_j(t).
    node_impurity : i(t); the tie tolerance on Δi follows from it.
    min_leaf : least number of cases in a child.
    simd : list class changes 16 keys at a time.
    scratch : float64 (3J,) running left counts, the best's left counts, right counts.
    cand : int32 room for the segment's candidates.
    """
    keys = seg.keys
    start = seg.start
    end = seg.end
    mask = tg.mask
    factor = tg.factor
    criterion = tg.criterion
    table = tg.xlogx
    tol = tie_tolerance(node_impurity)
    n_classes = total.shape[0]
    left = scratch[:n_classes]
    best_left = scratch[n_classes:2 * n_classes]
    right = scratch[2 * n_classes:3 * n_classes]
    lo = start + min_leaf
    hi = end - min_leaf
    if lo > hi:
        return -np.inf, -1
    n_cand = list_class_changes(keys, lo, hi, tg.y_class, mask, simd, cand)
    q_total = 0.0
    for j in range(n_classes):
        left[j] = 0.0
        q_total += factor[j] * total[j]
    one_factor = criterion == ENTROPY and equal_factors(total, factor)
    c_one = 1.0
    if one_factor:
        c_one = 0.0
        for j in range(n_classes):
            if total[j] > 0.0:
                c_one = max(c_one, factor[j])
        one_factor = c_one > 0.0
        if not one_factor:
            c_one = 1.0
    if criterion == GINI:
        scale = NEAR_TIE * q_total
    elif criterion == ENTROPY:
        scale = NEAR_TIE * 64.0 * q_total / c_one
    else:  # twoing's proxy is 4 Q(t)² Δ
        scale = NEAR_TIE * 4.0 * q_total * q_total
    logs = criterion == ENTROPY and not one_factor
    if logs:  # log2 c_j in the right counts' room (refilled after a near-tie used it)
        _log2_factors(factor, right)
    unit = tg.unit_weights
    w = tg.w
    ushift = np.uint64(tg.shift)
    umask = np.uint64(mask)
    for i in range(np.uint64(start), np.uint64(lo)):  # the cases before the first candidate
        key = np.uint64(keys[i])
        left[key & umask] += 1.0 if unit else w[key >> ushift]
    best_delta = np.nan
    best_pos = np.int64(-1)  # not a literal: callees would compile a second signature
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf
    cur = lo
    for b in range(n_cand):
        pos = cand[np.uint64(b)]
        if pos > cur:  # cases [cur, pos) are one run of one class
            cls = np.uint64(keys[np.uint64(pos - 1)]) & umask
            if unit:
                left[cls] += float(pos - cur)
            else:
                l_c = left[cls]
                for i in range(np.uint64(cur), np.uint64(pos)):  # the case-by-case order
                    l_c += w[np.uint64(keys[i]) >> ushift]
                left[cls] = l_c
            cur = pos
        den = 1.0
        if criterion == GINI:
            ql_sum = 0.0
            qr_sum = 0.0
            sq_ql = 0.0
            sq_qr = 0.0
            for j in range(n_classes):
                ql = factor[j] * left[j]
                qr = factor[j] * (total[j] - left[j])
                ql_sum += ql
                qr_sum += qr
                sq_ql += ql * ql
                sq_qr += qr * qr
            num = sq_ql * qr_sum + sq_qr * ql_sum
            den = ql_sum * qr_sum
        elif criterion == ENTROPY:
            if one_factor:  # the counts and their sums are exact integers
                acc = 0.0
                k_left = 0.0
                k_right = 0.0
                for j in range(n_classes):
                    k_l = left[j]
                    k_r = total[j] - left[j]
                    k_left += k_l
                    k_right += k_r
                    acc += table[np.int64(k_l)] + table[np.int64(k_r)]
                num = acc - table[np.int64(k_left)] - table[np.int64(k_right)]
            else:
                ql_sum = 0.0
                qr_sum = 0.0
                s_l = 0.0
                s_r = 0.0
                for j in range(n_classes):
                    c = factor[j]
                    k_l = left[j]
                    k_r = total[j] - left[j]
                    s_l += c * (table[np.int64(k_l)] + k_l * right[j])
                    s_r += c * (table[np.int64(k_r)] + k_r * right[j])
                    ql_sum += c * k_l
                    qr_sum += c * k_r
                num = s_l - xlogx(ql_sum) + s_r - xlogx(qr_sum)
        else:  # twoing: (Σ_j |q_jL Q_R - q_jR Q_L|)² / (Q_L Q_R) = 4 Q(t)² Δ
            ql_sum = 0.0
            qr_sum = 0.0
            for j in range(n_classes):
                ql_sum += factor[j] * left[j]
                qr_sum += factor[j] * (total[j] - left[j])
            acc = 0.0
            for j in range(n_classes):
                acc += abs(factor[j] * left[j] * qr_sum
                           - factor[j] * (total[j] - left[j]) * ql_sum)
            num = acc * acc
            den = ql_sum * qr_sum
            if not den > 0.0:  # a side of no weight: never a candidate, as in the
                num = np.nan   # general scan, whose Δ is then NaN
                den = 1.0
        if num * best_den > hi_num * den:
            best_delta = np.nan  # computed when needed
            for j in range(n_classes):
                best_left[j] = left[j]
        elif num * best_den >= lo_num * den:
            # pos as int64, as the other scans pass it: one compiled _near_tie serves all
            best_delta, won = _near_tie(seg, np.int64(pos), best_pos, best_delta, tg, total,
                                        scratch, node_impurity, tol)
            if logs:
                _log2_factors(factor, right)
            if not won:
                continue
        else:
            continue
        best_den = den
        hi_num = num + scale * den
        lo_num = num - scale * den
        best_pos = pos
    if best_pos < 0:
        return -np.inf, -1
    if np.isnan(best_delta):
        best_delta = _precise_class_delta(keys, best_pos, end, tg, best_left, total, right,
                                          node_impurity)
    return best_delta, best_pos


@jit(inline="always")
def _log2_factors(factor, out):
    """log2 c_j into ``out`` (0 where c_j is 0: its terms vanish with x log x)."""
    for j in range(factor.shape[0]):
        out[j] = np.log2(factor[j]) if factor[j] > 0.0 else 0.0


@jit(borrowed=True)
def best_split_classification(seg, tg, total, node_impurity, min_leaf, by_runs, simd,
                              scratch, cand):
    """Split search: the best split of a classification node on one feature.

    Candidates are the positions ``pos`` with at least ``min_leaf`` cases on each side
    (and, where ``seg.ranks`` is given, a change of value between ``pos - 1`` and
    ``pos``), visited in increasing order. They are ranked by the proxy P(s) of
    :mod:`cartjit.engine.impurity`, compared by cross-multiplication so that the loop does no
    division. A candidate whose proxy exceeds the best by more than the relative width
    ``NEAR_TIE`` replaces it; one within that width is a near-tie, settled on the
    precise Δi of :func:`_precise_class_delta` with the tie tolerance (so the lower
    threshold keeps a tie). The returned Δi of the best split is precise too.

    ``by_runs`` (Gini or entropy on a feature without ties; ``cand`` has room for the
    segment's length) visits only the candidates where the proxy can be largest. Along
    a run of consecutive cases of one class, moving them one by one from t_R to t_L
    moves the counts along a line, and for a strictly concave φ the impurity decrease
    is a strictly convex function of the number moved (the children's weighted
    impurities Q φ(q / Q) are perspectives of φ, concave in the counts, and strictly so
    along this line unless the node is pure). So a split strictly inside a run is
    strictly worse than one at an end of it: the best split, and every exact tie with
    it, lies where the class changes or at the first or last candidate. A branch-free
    first pass lists those positions in ``cand``; the scan then updates the counts once
    per run (``simd``: see :func:`list_class_changes`).

    With unit weights and one factor for the classes present, the Gini proxy is
    proportional to Σ L_j² / n_L + Σ R_j² / n_R on integer counts, whose sums of squares
    are updated exactly in O(1) per case or run (the *fast* mode); every other case
    ranks the candidates on the prior-weighted counts q_j = c_j N_j. One function for
    both (split into one function per mode, the entropy, weighted and twoing fits were
    slower). Returns (Δi, pos), or (-inf, -1) when there is no candidate.

    Parameters
    ----------
    seg : :class:`Segment` of the node on the feature.
    tg : :class:`Targets` (labels, weights, factors c_j, criterion).
    total : float64 (J,) the node's weighted class counts N_j(t).
    node_impurity : i(t); the tie tolerance on Δi follows from it.
    min_leaf : least number of cases in a child.
    by_runs : scan by runs of one class.
    simd : list class changes 16 keys at a time.
    scratch : float64 (3J,) running left counts, the best's left counts, right counts.
    cand : int32 room for the segment's candidates.
    """
    keys = seg.keys
    ranks = seg.ranks
    start = seg.start
    end = seg.end
    y = tg.y_class
    w = tg.w
    unit_weights = tg.unit_weights
    shift = tg.shift
    mask = tg.mask
    factor = tg.factor
    criterion = tg.criterion
    tol = tie_tolerance(node_impurity)
    n_classes = total.shape[0]
    left = scratch[:n_classes]
    best_left = scratch[n_classes:2 * n_classes]
    right = scratch[2 * n_classes:3 * n_classes]
    n_node = end - start
    lo = start + min_leaf
    hi = end - min_leaf
    if lo > hi:
        return -np.inf, -1
    has_ties = ranks.shape[0] > 0
    if by_runs:
        n_cand = list_class_changes(keys, lo, hi, y, mask, simd, cand)
    else:
        n_cand = hi - lo + 1

    q_total = 0.0
    sq_l = 0.0
    sq_r = 0.0
    for j in range(n_classes):
        left[j] = 0.0
        q_total += factor[j] * total[j]
        sq_r += total[j] * total[j]
    fast = criterion == GINI and unit_weights and equal_factors(total, factor)
    # The size of the proxy sets the width of the near-tie band.
    if fast:
        scale = NEAR_TIE * n_node
    elif criterion == GINI:
        scale = NEAR_TIE * q_total
    elif criterion == ENTROPY:
        scale = NEAR_TIE * 64.0 * q_total
    else:
        scale = NEAR_TIE
    best_delta = np.nan
    best_pos = np.int64(-1)  # not a literal: callees would compile a second signature
    # The best proxy is held as the fraction best_num / best_den (best_den > 0); with
    # hi_num = best_num + scale best_den and lo_num = best_num - scale best_den, a
    # candidate num / den beats it outright when num best_den > hi_num den and is a
    # near-tie when it is >= lo_num den.
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf

    cur = start  # left holds the counts of the cases [start, cur)
    for b in range(n_cand):
        pos = cand[b] if by_runs else lo + b
        if by_runs and cur >= lo:  # cases [cur, pos) are one run of one class
            if pos > cur:
                key = keys[pos - 1]
                cls = key & mask if mask else y[key]
                l_c = left[cls]
                if unit_weights:
                    r = float(pos - cur)
                    sq_l += r * (2.0 * l_c + r)
                    sq_r -= r * (2.0 * (total[cls] - l_c) - r)
                    left[cls] = l_c + r
                else:
                    for i in range(cur, pos):  # the case-by-case order of additions
                        l_c += w[keys[i] >> shift]
                    left[cls] = l_c
        else:
            for i in range(cur, pos):
                key = keys[i]
                cls = key & mask if mask else y[key]
                if fast:
                    l_c = left[cls]
                    sq_l += 2.0 * l_c + 1.0
                    sq_r -= 2.0 * (total[cls] - l_c) - 1.0
                    left[cls] = l_c + 1.0
                elif unit_weights:
                    left[cls] += 1.0
                else:
                    left[cls] += w[key >> shift]
        cur = pos
        if has_ties and ranks[keys[pos] >> shift] == ranks[keys[pos - 1] >> shift]:
            continue
        if fast:
            n_left = pos - start
            n_right = n_node - n_left
            num = sq_l * n_right + sq_r * n_left
            den = float(n_left) * float(n_right)
        else:
            ql_sum = 0.0
            qr_sum = 0.0
            if criterion == GINI:
                sq_ql = 0.0
                sq_qr = 0.0
                for j in range(n_classes):
                    ql = factor[j] * left[j]
                    qr = factor[j] * (total[j] - left[j])
                    ql_sum += ql
                    qr_sum += qr
                    sq_ql += ql * ql
                    sq_qr += qr * qr
                num = sq_ql * qr_sum + sq_qr * ql_sum
                den = ql_sum * qr_sum
            elif criterion == ENTROPY:
                s_l = 0.0
                s_r = 0.0
                for j in range(n_classes):
                    ql = factor[j] * left[j]
                    qr = factor[j] * (total[j] - left[j])
                    ql_sum += ql
                    qr_sum += qr
                    s_l += xlogx(ql)
                    s_r += xlogx(qr)
                num = -(xlogx(ql_sum) - s_l) - (xlogx(qr_sum) - s_r)
                den = 1.0
            else:
                for j in range(n_classes):
                    right[j] = total[j] - left[j]
                num = delta_from_counts(left, right, factor, criterion, node_impurity)
                den = 1.0
        if num * best_den > hi_num * den:
            best_delta = np.nan  # computed when needed
            # Keeping the best's counts costs J copies per improvement; recounting them
            # at the end rescanned half of every segment.
            for j in range(n_classes):
                best_left[j] = left[j]
        elif num * best_den >= lo_num * den:
            best_delta, won = _near_tie(seg, pos, best_pos, best_delta, tg, total, scratch,
                                        node_impurity, tol)
            if not won:
                continue
        else:
            continue
        best_den = den
        hi_num = num + scale * den
        lo_num = num - scale * den
        best_pos = pos
    if best_pos < 0:
        return -np.inf, -1
    if np.isnan(best_delta):
        best_delta = _precise_class_delta(keys, best_pos, end, tg, best_left, total, right,
                                          node_impurity)
    return best_delta, best_pos


@jit(borrowed=True)
def _precise_reg_delta(keys, pos, end, y, w, unit_weights, mean, w_left, s_left):
    """Split search (regression), precise Δi: the variance reduction of the split at
    ``pos`` given the left child's W and Σ w z.

    The right child's sums are taken directly over its cases (z = y - node mean), not as
    node total minus left, so that exact ties between features stay exact.

    Parameters
    ----------
    keys : int32 one row of keys (cases); the right child is ``keys[pos:end]``.
    pos, end : split position and end of the segment.
    y, w, unit_weights : responses and weights by case (``Targets`` fields).
    mean : the node mean ȳ(t).
    w_left, s_left : W and Σ w z of the left child.
    """
    w_right = 0.0
    s_right = 0.0
    for i in range(pos, end):
        case = keys[i]
        wi = 1.0 if unit_weights else w[case]
        w_right += wi
        s_right += wi * (y[case] - mean)
    w_node = w_left + w_right
    s_node = s_left + s_right
    return (s_left * s_left / w_left + s_right * s_right / w_right
            - s_node * s_node / w_node) / w_node


@jit(inline="always")
def _precise_reg_delta_unit(keys, pos, end, y, mean, w_left, s_left):
    """:func:`_precise_reg_delta` for unit weights, operation for operation (a weight of
    1 multiplies exactly), inlined: called once per (node, feature) pair, the call cost
    as much as a small node's scan.

    Parameters
    ----------
    keys : int32 one row of keys (cases); the right child is ``keys[pos:end]``.
    pos, end : split position and end of the segment.
    y : float64 response by case.
    mean : the node mean ȳ(t).
    w_left, s_left : W and Σ z of the left child.
    """
    w_right = 0.0
    s_right = 0.0
    nk = np.uint64(keys.shape[0])
    for i in range(np.uint64(pos), np.uint64(end)):
        if i + _AHEAD < nk:
            prefetch(y, np.uint64(keys[i + _AHEAD]))
        w_right += 1.0
        s_right += y[np.uint64(keys[i])] - mean
    w_node = w_left + w_right
    s_node = s_left + s_right
    return (s_left * s_left / w_left + s_right * s_right / w_right
            - s_node * s_node / w_node) / w_node


@jit(inline="always")
def best_split_regression_unit(keys, start, end, y, mean, s_total, node_impurity, tol,
                               min_leaf):
    """Split search (regression), the common case: unit weights and a feature without
    ties, every position a candidate. :func:`best_split_regression` without its other
    modes, with the same sums in the same order (W_L counts the cases exactly, W(t) is
    the node's count), the same candidates in the same order and the same near-tie rule;
    the proxy S_L²/W_L + S_R²/W_R is compared as a fraction (S_L² n_R + S_R² n_L) /
    (n_L n_R) by cross-multiplication, so the loop does no division (it did two per
    case). The two ways of computing the proxy differ by a few ulps of W(t) Var(t), far
    inside the near-tie band, where Δi is settled by :func:`_precise_reg_delta` as
    before; the returned Δi is that function's, bit for bit.

    Parameters
    ----------
    keys : int32 one row of keys (cases); the node is ``keys[start:end]``.
    start, end : the node's position range.
    y : float64 response by case.
    mean : ȳ(t).
    s_total : Σ (y - ȳ(t)) over the node.
    node_impurity, tol : Var(t) and the tie tolerance on Δi.
    min_leaf : least number of cases in a child.
    """
    n_node = end - start
    m = max(min_leaf, 1)
    lo = start + m  # first candidate position: the left child is [start, pos)
    hi = end - m
    if lo > hi:
        return -np.inf, -1
    w_node = float(n_node)
    scale = NEAR_TIE * w_node * node_impurity
    s_left = 0.0
    nk = np.uint64(keys.shape[0])
    # Unsigned indices spare the loops Numba's negative-index wrap-around.
    for i in range(np.uint64(start), np.uint64(lo - 1)):
        if i + _AHEAD < nk:
            prefetch(y, np.uint64(keys[i + _AHEAD]))
        s_left += y[np.uint64(keys[i])] - mean
    best_delta = np.nan  # the best's precise Δi, once a near-tie has needed it
    best_pos = np.int64(-1)  # not a literal: callees would compile a second signature
    best_sl = 0.0
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf
    w_left = float(lo - 1 - start)
    for i in range(np.uint64(lo - 1), np.uint64(hi)):
        if i + _AHEAD < nk:
            prefetch(y, np.uint64(keys[i + _AHEAD]))
        s_left += y[np.uint64(keys[i])] - mean
        w_left += 1.0
        w_right = w_node - w_left
        s_right = s_total - s_left
        num = s_left * s_left * w_right + s_right * s_right * w_left
        den = w_left * w_right
        if num * best_den > hi_num * den:
            best_delta = np.nan  # computed when needed
        elif num * best_den >= lo_num * den:  # a near-tie
            pos = np.int64(i) + 1
            if np.isnan(best_delta):
                best_delta = _precise_reg_delta_unit(keys, best_pos, end, y, mean,
                                                     float(best_pos - start), best_sl)
            d = _precise_reg_delta_unit(keys, pos, end, y, mean, w_left, s_left)
            if not d > best_delta + tol:
                continue
            best_delta = d
        else:
            continue
        best_den = den
        hi_num = num + scale * den
        lo_num = num - scale * den
        best_pos = np.int64(i) + 1
        best_sl = s_left
    if best_pos < 0:
        return -np.inf, -1
    if np.isnan(best_delta):
        best_delta = _precise_reg_delta_unit(keys, best_pos, end, y, mean,
                                             float(best_pos - start), best_sl)
    return best_delta, best_pos


@jit(borrowed=True)
def best_split_regression(seg, y, w, unit_weights, mean, w_total, s_total, node_impurity,
                          min_leaf):
    """Split search (regression): the best variance-reducing split (docs/maths.md §3).

    Sums are taken of z = y - ``mean`` (the node mean), which keeps the proxy free of
    cancellation. Candidates are ranked by the proxy S_L²/W_L + S_R²/W_R; near-ties
    (within ``NEAR_TIE`` of W(t) Var(t)) and the returned best are settled on the
    precise Δi of :func:`_precise_reg_delta`. Returns (Δi, pos), or (-inf, -1).

    Parameters
    ----------
    seg : :class:`Segment` of the node on the feature.
    y, w, unit_weights : responses and weights by case (``Targets`` fields, not the
        record, which is four arrays wide: this is called once per node and feature).
    mean : ȳ(t).
    w_total, s_total : W(t) and Σ w z over the node (zero up to rounding).
    node_impurity : Var(t); the tie tolerance follows from it.
    min_leaf : least number of cases in a child.
    """
    keys = seg.keys
    ranks = seg.ranks
    end = seg.end
    tol = tie_tolerance(node_impurity)
    if unit_weights and ranks.shape[0] == 0:
        return best_split_regression_unit(keys, seg.start, end, y, mean, s_total,
                                          node_impurity, tol, min_leaf)
    n_node = end - seg.start
    best_delta = np.nan
    best_pos = np.int64(-1)  # not a literal: callees would compile a second signature
    best_wl = 0.0
    best_sl = 0.0
    hi = -np.inf
    lo = -np.inf
    scale = NEAR_TIE * w_total * node_impurity
    has_ties = ranks.shape[0] > 0
    n_left = 0
    w_left = 0.0
    s_left = 0.0
    for i in range(seg.start, end - 1):
        case = keys[i]
        if unit_weights:
            w_left += 1.0
            s_left += y[case] - mean
        else:
            w_left += w[case]
            s_left += w[case] * (y[case] - mean)
        n_left += 1
        if has_ties and ranks[keys[i + 1]] == ranks[case]:
            continue
        if n_left < min_leaf:
            continue
        if n_node - n_left < min_leaf:
            break
        w_right = w_total - w_left
        s_right = s_total - s_left
        if w_left <= 0.0 or w_right <= 0.0:
            continue
        proxy = s_left * s_left / w_left + s_right * s_right / w_right
        if proxy > hi:
            best_delta = np.nan  # computed when needed
        elif proxy >= lo:
            if np.isnan(best_delta):
                best_delta = _precise_reg_delta(keys, best_pos, end, y, w, unit_weights,
                                                mean, best_wl, best_sl)
            d = _precise_reg_delta(keys, i + 1, end, y, w, unit_weights, mean, w_left,
                                   s_left)
            if not d > best_delta + tol:
                continue
            best_delta = d
        else:
            continue
        hi = proxy + scale
        lo = proxy - scale
        best_pos = i + 1
        best_wl = w_left
        best_sl = s_left
    if best_pos < 0:
        return -np.inf, -1
    if np.isnan(best_delta):
        best_delta = _precise_reg_delta(keys, best_pos, end, y, w, unit_weights, mean,
                                        best_wl, best_sl)
    return best_delta, best_pos
