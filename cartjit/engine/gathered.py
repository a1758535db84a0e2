"""Regression scans over gathered responses: Δi of every threshold of a large node.

For squared error the decrease of a split at position i of a node sorted by x_m is

    Δi = (S_L² / W_L + S_R² / W_R − S² / W) / W_t,

with W and S the weights and weighted sums of the responses on each side. Reading the
responses in the order of the presorted keys jumps around memory (cases are scattered
over y), so for a large node the responses are first *gathered* in that order into a
contiguous buffer, and the scan runs over the buffer: the running sums are then
sequential. The scan ranks candidates by a cheap proxy of Δi computed block by block,
and computes Δi exactly (from centred sums, docs/maths.md §3) only for the candidates
that may be the best, so that the split chosen is the one an exact scan of every
threshold chooses. Below :data:`GATHER_MIN` cases the plain scan of
:mod:`cartjit.engine.scans` is used. The same gathering serves the subset search of a
categorical feature in a regression tree (:func:`_gathered_subset`).
"""
from __future__ import annotations

import numpy as np

from .speed import jit
from .impurity import tie_tolerance
from .scans import NEAR_TIE, _precise_reg_delta
from .subsets import CODE, NCASE, SCAN_CASES, level_run_end, subset_regression_scan


#: Candidates per block of the scan of :func:`_gathered_best`.
_SCAN_SKIP = 64


@jit(inline="always")
def _gathered_proxy(s_left_at, i, w_node, s_c):
    """The scan's proxy at gathered position i as the fraction num / den of
    :func:`cartjit.engine.scans.best_split_regression_unit` (S_L² n_R + S_R² n_L over
    n_L n_R), with S_L and n_L."""
    s_left = s_left_at[i]
    w_left = float(i + np.uint64(1))
    w_right = w_node - w_left
    s_right = s_c - s_left
    return (s_left * s_left * w_right + s_right * s_right * w_left, w_left * w_right,
            s_left, w_left)


@jit(inline="always")
def _block_top(s_left_at, i0, i1, w_node, s_c, scale, best_den, hi_num, tops):
    """The scan of :func:`_gathered_scan`, one block of candidates ``[i0, i1)`` that has a
    near-tie or better: ``(m, num, den)`` when walking the block from the state
    (``best_den``, ``hi_num``) would end on candidate m by a clear gain, else
    ``(-1, 0, 0)``. ``tops`` is float64 scratch of :data:`_SCAN_SKIP` slots.

    The walk's state after a candidate that wins depends on that candidate only (a
    clear gain leaves the precise Δi to be computed when needed; a near-tie win leaves
    the same Δi computed at once). So the walk ends the block on m as a clear gain when
    m is a clear gain over the state at the block's start and over every candidate
    before it in the block (whichever of them was best when the walk reached m), and no
    candidate after m is a near-tie of m or better. m is guessed at the block's largest
    proxy num / den (quotients of numbers >= 0, so their bits compare as integers: a
    maximum the compiler vectorises); the three conditions are then tested with the
    walk's own products, so the result is the walk's, bit for bit. Along a rising
    stretch of the proxy, where a walk takes a branch at nearly every candidate, this
    takes four loops without branches.
    """
    n_blk = i1 - i0
    for k in range(n_blk):
        num, den, _, _ = _gathered_proxy(s_left_at, i0 + k, w_node, s_c)
        tops[k] = num / den
    bits = tops[:n_blk].view(np.int64)
    top = bits[0]
    for k in range(n_blk):
        top = max(top, bits[k])
    k = np.uint64(0)
    while bits[k] != top:
        k += np.uint64(1)
    m = i0 + k
    num_m, den_m, _, _ = _gathered_proxy(s_left_at, m, w_node, s_c)
    clear = num_m * best_den > hi_num * den_m
    for i in range(i0, m):
        num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
        clear &= num_m * den > (num + scale * den) * den_m
    lo_m = num_m - scale * den_m
    for i in range(m + np.uint64(1), i1):
        num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
        clear &= not num * den_m >= lo_m * den
    if not clear:
        return np.int64(-1), 0.0, 0.0
    return np.int64(m), num_m, den_m


#: Segments of at least this many cases take :func:`_unit_scan_gathered`; below, the
#: walk's set-up outweighs what the gathering saves.
GATHER_MIN = 1024
#: The largest segment :func:`_unit_scan_gathered` takes (its scratch: 2 values a case
#: and thread, 16 n bytes a thread for n cases); larger ones take the scan on the keys.
#: In effect every segment from GATHER_MIN up: a large node's near-ties each add up the
#: right side's responses again, read from the gathered row here rather than from y by
#: scattered cases.
GATHER_MAX = 1 << 30


@jit
def _unit_scan_gathered(keys, start, end, tg, mean, s_total, imp, min_leaf, g_row, iota):
    """:func:`cartjit.engine.scans.best_split_regression_unit` on ``keys[start:end]``, the
    same ``(Δi, pos)`` bit for bit: one pass gathers the responses in the feature's
    order into ``g_row`` and forms the running Σ (y - ȳ) after each case by the scan's
    own additions in the scan's order; :func:`_gathered_walk` then takes the candidates
    in blocks without branches where the proxy rises (see :func:`_block_top`), and the
    precise Δi of the best is :func:`cartjit.engine.scans._precise_reg_delta` on the
    gathered responses (the same operations). ``g_row`` holds at least
    2 (end - start) + :data:`_SCAN_SKIP` values, ``iota`` 0 .. end - start - 1."""
    n = end - start
    nu = np.uint64(n)
    ys = g_row[:n]
    s_left_at = g_row[n:2 * n]
    y = tg.y_reg
    s_left = 0.0
    for k in range(nu):
        v = y[np.uint64(keys[np.uint64(start) + k])]
        ys[k] = v
        s_left += v - mean
        s_left_at[k] = s_left
    pos, best_sl, delta = _gathered_walk(n, mean, s_total, imp, tg, min_leaf, ys, s_left_at,
                                         iota, g_row[g_row.shape[0] - _SCAN_SKIP:])
    if pos < 0:
        return -np.inf, np.int64(-1)
    if np.isnan(delta):
        delta = _precise_reg_delta(iota, pos, n, ys, tg.w, tg.unit_weights, mean,
                                   float(pos), best_sl)
    return delta, np.int64(start) + pos


@jit(inline="always")
def _gathered_best(row, start, pend, w_total, tg, min_leaf, gathered, iota):
    """Step 1 (missing values, regression, unit weights, a feature without ties), one
    (node, feature) pair with cases missing the feature: what :func:`_present_best`
    computes on the present cases ``row[start:pend]`` (their moments as
    :func:`_reg_moments`, then the scan of
    :func:`cartjit.engine.scans.best_split_regression_unit`, Δ scaled by their share of the
    node), with the same operations in the same order, so the same bits.

    The second pass of the moments forms S_L at every position (the running Σ (y - ȳ)
    in the feature's order) exactly as the scan does; it keeps them in the second half
    of ``gathered``, so the scan reads them instead of adding up its own sum case after
    case, a chain of dependent additions. The first pass copies the responses, in the
    feature's order, to the first half, which the second pass and the precise Δi of
    near-ties read (through the identity keys ``iota``; the Δi by
    :func:`cartjit.engine.scans._precise_reg_delta`, which with unit weights does the same
    operations as the scan's inlined copy: a call, so no third inlined copy to compile).
    ``tg`` is :class:`cartjit.engine.scans.Targets` (unit weights). ``gathered`` holds at
    least 2 (pend - start) + :data:`_SCAN_SKIP` values: its last :data:`_SCAN_SKIP` are
    the scan's scratch.
    """
    n_present = pend - start
    ys = gathered[:n_present]
    s_left_at = gathered[n_present:2 * n_present]
    w_sum, mean, s_c, var = _gathered_moments(row, start, pend, tg.y_reg, ys, s_left_at)
    return _gathered_scan(start, n_present, w_sum, mean, s_c, var, w_total, tg, min_leaf,
                          ys, s_left_at, iota, gathered[gathered.shape[0] - _SCAN_SKIP:])


@jit(inline="always")
def _gathered_moments(row, start, pend, y, ys, s_left_at):
    """The moments of :func:`_gathered_best`'s present cases ``row[start:pend]``:
    ``(W, ȳ, Σ (y - ȳ), variance)`` as :func:`_reg_moments` (unit weights), with the
    responses copied to ``ys`` and the running Σ (y - ȳ) to ``s_left_at``."""
    nu = np.uint64(pend - start)
    ustart = np.uint64(start)
    zero = np.uint64(0)
    w_sum, s, constant = _sums_from(row, ustart, zero, nu, y, ys, 0.0, 0.0, True,
                                    y[np.uint64(row[ustart])])
    mean = s / w_sum
    s_c, ss_c = _centred_from(ys, s_left_at, zero, nu, mean, 0.0, 0.0)
    return w_sum, mean, s_c, _variance(w_sum, s_c, ss_c, constant)


@jit(inline="always")
def _sums_from(row, u0, k0, n, y, ys, w, s, constant, first):
    """The first pass of :func:`_gathered_moments` from position ``k0`` to ``n`` of the
    cases ``row[u0:]``, continuing the sums ``w``, ``s`` and ``constant``."""
    for k in range(k0, n):
        yi = y[np.uint64(row[u0 + k])]
        ys[k] = yi
        w += 1.0
        s += yi
        constant &= yi == first
    return w, s, constant


@jit(inline="always")
def _centred_from(ys, s_left_at, k0, n, mean, s_c, ss_c):
    """The second pass of :func:`_gathered_moments` from position ``k0`` to ``n``,
    continuing the sums ``s_c`` and ``ss_c``."""
    for k in range(k0, n):
        z = ys[k] - mean
        s_c += z
        ss_c += z * z
        s_left_at[k] = s_c
    return s_c, ss_c


@jit(inline="always")
def _variance(w_sum, s_c, ss_c, constant):
    """The variance of :func:`_reg_moments` from its centred sums (0 when all y are
    equal or rounding makes it negative)."""
    var = (ss_c - s_c * s_c / w_sum) / w_sum
    if var < 0.0 or constant:
        var = 0.0
    return var


@jit(inline="always")
def _gathered_moments_two(row, a0, a1, b0, b1, y, ys_a, sl_a, ys_b, sl_b):
    """:func:`_gathered_moments` of two pairs of one feature at once, ``row[a0:a1]`` and
    ``row[b0:b1]`` (two nodes: disjoint cases): each pair's chains of additions take
    the same operations in the same order as alone (the same bits), and the two
    chains, independent, overlap in the processor instead of waiting for one another.
    Returns the moments of the first pair, then of the second."""
    na = np.uint64(a1 - a0)
    nb = np.uint64(b1 - b0)
    both = min(na, nb)
    ua = np.uint64(a0)
    ub = np.uint64(b0)
    wa = 0.0
    wb = 0.0
    sa = 0.0
    sb = 0.0
    fa = y[np.uint64(row[ua])]
    fb = y[np.uint64(row[ub])]
    ca = True
    cb = True
    for k in range(both):
        ya = y[np.uint64(row[ua + k])]
        yb = y[np.uint64(row[ub + k])]
        ys_a[k] = ya
        ys_b[k] = yb
        wa += 1.0
        wb += 1.0
        sa += ya
        sb += yb
        ca &= ya == fa
        cb &= yb == fb
    wa, sa, ca = _sums_from(row, ua, both, na, y, ys_a, wa, sa, ca, fa)
    wb, sb, cb = _sums_from(row, ub, both, nb, y, ys_b, wb, sb, cb, fb)
    ma = sa / wa
    mb = sb / wb
    sca = 0.0
    scb = 0.0
    ssa = 0.0
    ssb = 0.0
    for k in range(both):
        za = ys_a[k] - ma
        zb = ys_b[k] - mb
        sca += za
        scb += zb
        ssa += za * za
        ssb += zb * zb
        sl_a[k] = sca
        sl_b[k] = scb
    sca, ssa = _centred_from(ys_a, sl_a, both, na, ma, sca, ssa)
    scb, ssb = _centred_from(ys_b, sl_b, both, nb, mb, scb, ssb)
    return (wa, ma, sca, _variance(wa, sca, ssa, ca),
            wb, mb, scb, _variance(wb, scb, ssb, cb))


@jit(inline="always")
def _gathered_scan(start, n_present, w_sum, mean, s_c, var, w_total, tg, min_leaf, ys,
                   s_left_at, iota, tops):
    """The scan of :func:`_gathered_best` on its pair's gathered responses ``ys`` and
    running sums ``s_left_at`` (:func:`_gathered_moments`): ``(Δ scaled by the present
    share of the node, position)``, or ``(-inf, -1)``; ``tops`` is the scratch of
    :func:`_block_top`."""
    pos, s_left, delta = _gathered_walk(n_present, mean, s_c, var, tg, min_leaf, ys,
                                        s_left_at, iota, tops)
    return _scaled(pos, delta, start, n_present, mean, s_left, w_sum, w_total, tg, ys, iota)


@jit(inline="always")
def _gathered_walk(n_present, mean, s_c, var, tg, min_leaf, ys, s_left_at, iota, tops):
    """The walk of :func:`_gathered_scan` over the candidates: ``(pos, S_L, Δi)`` of the
    best, position relative to the pair's first present case, Δi NaN when no near-tie
    needed it (:func:`_gathered_scan` then computes it, as the scan on the keys does);
    ``(-1, 0, NaN)`` when no position may split."""
    # the scan of best_split_regression_unit on positions 0 .. n_present - 1
    m = max(min_leaf, 1)
    lo = m
    hi = n_present - m
    if lo > hi:
        return np.int64(-1), 0.0, np.nan
    tol = tie_tolerance(var)
    w_node = float(n_present)
    scale = NEAR_TIE * w_node * var
    best_delta = np.nan
    best_pos = np.int64(-1)
    best_sl = 0.0
    best_den = 1.0
    hi_num = -np.inf
    lo_num = -np.inf
    # Blocks of _SCAN_SKIP candidates: a candidate does something only when
    # num * best_den >= lo_num * den (a near-tie or better; hi_num >= lo_num), so a
    # block is first tested for one with the state at its start, in a loop without
    # branches (vectorised), and walked case by case only when it has one. The walk
    # computes the same num and den by the same operations: the same results.
    i0 = np.uint64(lo - 1)
    u_hi = np.uint64(hi)
    while i0 < u_hi:
        i1 = min(i0 + np.uint64(_SCAN_SKIP), u_hi)
        hit = False
        for i in range(i0, i1):
            num, den, _, _ = _gathered_proxy(s_left_at, i, w_node, s_c)
            hit |= num * best_den >= lo_num * den
        if not hit:
            i0 = i1
            continue
        m, num_m, den_m = _block_top(s_left_at, i0, i1, w_node, s_c, scale, best_den,
                                     hi_num, tops)
        if m >= 0:
            # the walk would end the block on m, by a clear gain: go there directly
            best_delta = np.nan
            best_den = den_m
            hi_num = num_m + scale * den_m
            lo_num = num_m - scale * den_m
            best_pos = np.int64(m) + 1
            best_sl = s_left_at[np.uint64(m)]
            i0 = i1
            continue
        for i in range(i0, i1):
            num, den, s_left, w_left = _gathered_proxy(s_left_at, i, w_node, s_c)
            if num * best_den > hi_num * den:
                best_delta = np.nan
            elif num * best_den >= lo_num * den:  # a near-tie
                pos = np.int64(i) + 1
                if np.isnan(best_delta):
                    best_delta = _precise_reg_delta(iota, best_pos, n_present, ys, tg.w,
                                                    tg.unit_weights, mean, float(best_pos),
                                                    best_sl)
                d = _precise_reg_delta(iota, pos, n_present, ys, tg.w, tg.unit_weights,
                                       mean, w_left, s_left)
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
        i0 = i1
    return best_pos, best_sl, best_delta


@jit(inline="always")
def _scaled(pos, delta, start, n_present, mean, s_left, w_sum, w_total, tg, ys, iota):
    """The end of :func:`_gathered_scan` after :func:`_gathered_walk`: ``(Δ scaled by the
    present share, position)``, Δi computed here when still NaN."""
    if pos < 0:
        return -np.inf, np.int64(-1)
    if np.isnan(delta):
        delta = _precise_reg_delta(iota, pos, n_present, ys, tg.w, tg.unit_weights, mean,
                                   float(pos), s_left)
    return delta * (w_sum / w_total), pos + start


@jit(inline="always")
def _precise_two(ys_a, pa, na, ma, sla, ys_b, pb, nb, mb, slb):
    """:func:`cartjit.engine.scans._precise_reg_delta` (unit weights, gathered responses) of
    two pairs' best positions at once, ``pa`` of ``ys_a[:na]`` (node mean ``ma``, S_L
    ``sla``) and ``pb`` of ``ys_b[:nb]``: each right child's sums take the same
    operations in the same order as alone (a weight of 1 multiplies exactly), so the
    same bits, and the two chains of additions overlap. Returns both Δi."""
    ua = np.uint64(pa)
    ub = np.uint64(pb)
    la = np.uint64(na) - ua
    lb = np.uint64(nb) - ub
    both = min(la, lb)
    wa = 0.0
    wb = 0.0
    sa = 0.0
    sb = 0.0
    for k in range(both):
        wa += 1.0
        wb += 1.0
        sa += 1.0 * (ys_a[ua + k] - ma)
        sb += 1.0 * (ys_b[ub + k] - mb)
    for k in range(both, la):
        wa += 1.0
        sa += 1.0 * (ys_a[ua + k] - ma)
    for k in range(both, lb):
        wb += 1.0
        sb += 1.0 * (ys_b[ub + k] - mb)
    return (_delta_of_sums(float(pa), sla, wa, sa), _delta_of_sums(float(pb), slb, wb, sb))


@jit(inline="always")
def _delta_of_sums(w_left, s_left, w_right, s_right):
    """The closing formula of :func:`cartjit.engine.scans._precise_reg_delta`, operation for
    operation."""
    w_node = w_left + w_right
    s_node = s_left + s_right
    return (s_left * s_left / w_left + s_right * s_right / w_right
            - s_node * s_node / w_node) / w_node


@jit(inline="always")
def _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                        min_leaf, level_f, level_i, lm):
    """The end of :func:`_gathered_subset`: the subset scan of the ``n_lv`` levels' sums
    (:func:`cartjit.engine.subsets.subset_regression_scan`, the variance from the centred sums
    as :func:`_variance` forms it), ``(Δ scaled by the present share, position)`` or
    ``(-inf, -1)``."""
    var = _variance(w_sum, s_c, ss_c, constant)
    d, n_left = subset_regression_scan(n_lv, n_present, var, min_leaf, level_f, level_i,
                                       lm)
    if n_left < 0:
        return -np.inf, np.int64(-1)
    return d * (w_sum / w_total), start + n_left


@jit(inline="always")
def _gathered_subset_small(row, codes, start, pend, w_total, min_leaf, y, gathered,
                           level_f, level_i, lm):
    """:func:`_gathered_subset` on a segment of at most
    :data:`cartjit.engine.subsets.SCAN_CASES` cases, the same operations in the same order
    (the same bits), with no branch a case: a small node's levels have runs of a few
    cases, and the run-by-run loops mispredicted the end of each run, in both passes.

    The first pass reads every case's code (as :func:`cartjit.engine.subsets._packed_level_scan`
    does): a change of code moves to the next level's slots, where each case writes the
    code and the position after it (so each slot ends with its run's end), and the
    case's level goes to the second half of ``gathered``. The second pass restarts a
    level's sums at its first case (0 + the case's terms, as the run-by-run loop adds
    them to 0) and writes the running sums to the level's slots at every case."""
    n_present = pend - start
    nu = np.uint64(n_present)
    ustart = np.uint64(start)
    ys = gathered[:n_present]
    run_of = gathered[n_present:2 * n_present]
    code_at = np.uint64(CODE * lm)
    end_at = np.uint64(NCASE * lm)
    first = y[np.uint64(row[ustart])]
    prev = codes[np.uint64(row[ustart])]
    w_sum = 0.0
    s = 0.0
    constant = True
    k = np.uint64(0)
    for q in range(nu):
        case = np.uint64(row[ustart + q])
        code = codes[case]
        yi = y[case]
        k += np.uint64(code != prev)
        ys[q] = yi
        w_sum += 1.0
        s += yi
        constant &= yi == first
        level_i[code_at + k] = code
        level_i[end_at + k] = np.int64(q) + 1
        run_of[q] = np.float64(k)
        prev = code
    n_lv = np.int64(k) + 1
    for r in range(n_lv - 1, 0, -1):  # run ends -> numbers of cases (backwards)
        level_i[NCASE * lm + r] -= level_i[NCASE * lm + r - 1]
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    w_run = 0.0
    s_run = 0.0
    last = -1.0
    for q in range(nu):
        z = ys[q] - mean
        s_c += z
        ss_c += z * z
        r = run_of[q]
        fresh = r != last
        w_run = (0.0 if fresh else w_run) + 1.0
        s_run = (0.0 if fresh else s_run) + z
        slot = np.uint64(2) * np.uint64(r)
        level_f[slot] = w_run
        level_f[slot + np.uint64(1)] = s_run
        last = r
    return _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                               min_leaf, level_f, level_i, lm)


@jit(inline="always")
def _gathered_subset(row, codes, start, pend, w_total, tg, min_leaf, gathered, level_f,
                     level_i, lm):
    """Step 1 (missing values, regression, unit weights, a categorical feature), one
    (node, feature) pair with cases missing the feature: what :func:`_present_best`
    computes on the present cases ``row[start:pend]`` (their moments as
    :func:`_reg_moments`, the levels' sums as
    :func:`cartjit.engine.subsets._reg_level_stats`, then
    :func:`cartjit.engine.subsets.subset_regression_scan`, Δ scaled by their share of the
    node), with the same operations in the same order, so the same bits; leaves the
    sides in ``level_i``.

    The segment comes grouped by level: the first pass finds each level's run by
    galloping over the codes (:func:`cartjit.engine.subsets.level_run_end`) and copies the
    responses, in the segment's order, to ``gathered``; the second reads them from
    there for the centred moments of the cases and of each level at once. Two passes
    over the cases instead of three, and one of scattered reads instead of three.
    """
    y = tg.y_reg
    n_present = pend - start
    ys = gathered[:n_present]
    if n_present <= SCAN_CASES:
        return _gathered_subset_small(row, codes, start, pend, w_total, min_leaf, y,
                                      gathered, level_f, level_i, lm)
    ushift = np.uint64(0)
    w_sum = 0.0
    s = 0.0
    first = y[np.uint64(row[np.uint64(start)])]
    constant = True
    n_lv = 0
    i = start
    while i < pend:
        code = codes[np.uint64(row[np.uint64(i)])]
        run_end = level_run_end(row, codes, ushift, i, pend, code)
        for q in range(np.uint64(i), np.uint64(run_end)):
            yi = y[np.uint64(row[q])]
            ys[q - np.uint64(start)] = yi
            w_sum += 1.0
            s += yi
            constant &= yi == first
        level_i[CODE * lm + n_lv] = code
        level_i[NCASE * lm + n_lv] = run_end - i
        n_lv += 1
        i = run_end
    mean = s / w_sum
    s_c = 0.0
    ss_c = 0.0
    q0 = np.uint64(0)
    for k in range(n_lv):
        q1 = q0 + np.uint64(level_i[NCASE * lm + k])
        w_run = 0.0
        s_run = 0.0
        for q in range(q0, q1):
            z = ys[q] - mean
            s_c += z
            ss_c += z * z
            w_run += 1.0
            s_run += z
        level_f[2 * k] = w_run
        level_f[2 * k + 1] = s_run
        q0 = q1
    return _scaled_subset_scan(n_lv, n_present, w_sum, s_c, ss_c, constant, w_total, start,
                               min_leaf, level_f, level_i, lm)
