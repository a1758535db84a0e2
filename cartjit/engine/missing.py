"""Missing values in the growth: the search over present cases, and marking sides.

A case whose value of feature m is missing (NaN, or the missing level of a categorical
feature) sorts after every present value, so a node's segment of row m is its present
cases ``[start, pend)`` followed by its missing ones ``[pend, end)``. Following rpart
(docs/maths.md §8):

- the best split of a (node, feature) pair is searched over the present cases only
  (:func:`_pair_best`, :func:`_present_best`), and its improvement is scaled by the
  share of the node's weight that is present;
- :func:`_search_mv` is step 1 of a level for data with missing values;
- once a node's split is chosen, :func:`_mark_mv` marks each case left or right by its
  split value, leaving cases whose value is missing to the surrogates
  (:mod:`cartjit.engine.surrogates`) or, failing those, to the majority side.

A bit per (case, feature) says whether a value is missing (:func:`_missing_bits`), so
that a kernel asks :func:`_is_missing` rather than reading X.
"""
from __future__ import annotations

import numpy as np

from .children import _reg_moments
from .speed import jit
from .gathered import (_SCAN_SKIP, _gathered_best, _gathered_moments_two, _gathered_subset,
                       _gathered_walk, _precise_two, _scaled)
from .impurity import SQUARED_ERROR, impurity_from_counts
from .predict import _level_side
from .records import (F_IMPURITY, F_WEIGHT, I_LEVEL_ROW, I_N_PRIMARY, LEFT, MISSING,
                      NodeSpan, RIGHT, Totals)
from .scans import Segment, class_counts
from .search import _ordered_best
from .subsets import level_run_end
from .subsets import _side_bits, _subset_pair, _write_level_sets
from .speed import _take_block


@jit(borrowed=True)
def _level_sets_of_pair(ps, f, span, nodes, tg, rules, pairs, k, work, level_sets, row):
    """Step 2, a subset split (primary or competitor) of pair ``k``: write its level sets
    to row ``row``, from ``pairs.left_bits`` or, when the pairs keep no bitsets, by
    searching the pair again on its present cases ``[span.start, span.pend)`` (with the
    first thread's scratch: the callers are serial); ``span`` is the :class:`NodeSpan`
    of the node on feature ``f``."""
    keys = ps.keys[f]
    codes = ps.ranks[ps.rank_row[f]]
    start = span.start
    pend = span.pend
    lm = work.level_i.shape[1] // 4
    from_bits = pairs.left_bits.shape[0] > 0
    bits = np.uint64(0)
    if from_bits:
        bits = pairs.left_bits[k]
    else:
        _pair_best(ps, f, span, nodes, tg, rules, work.level_f[0], work.level_i[0],
                   work.present[0])
    _write_level_sets(keys, start, pend, tg.shift, codes, from_bits, bits, work.level_i[0],
                      lm, level_sets, row)


# --------------------------------------------------------------------------- missing values
#
# With a missing value in X, or surrogates asked for, a level runs these steps instead
# (docs/maths.md §8): search_mv replaces steps 1 (every feature); mark_mv, surrogates,
# pick_surrogates, number_surrogates and send_missing complete step 2; partition_mv
# (three-way, every feature) runs before step 3.

@jit(borrowed=True)
def _missing_bits(X, out, c, n_chunks):
    """Set-up (missing values): ``out[f, case >> 3]`` bit ``case & 7`` set when the case
    misses feature f; ``out`` uint8 (p, ceil(n / 8)) zeros. Chunk c of n_chunks takes
    the c-th of as many ranges of whole bytes (their cases, rows of X), the last one
    the cases past the last whole byte too: the chunks write different bytes.

    Finding a node's missing tail (:func:`_present_end`) reads one bit per look-up from
    the feature's own small row instead of a strided, rarely cached row of X.
    """
    n, p = X.shape
    # A whole byte at a time: its 8 cases' flags of a feature (8 neighbouring rows of X)
    # are packed in a register, without a branch, and stored once (a third of the time
    # of a branch and a read-modify-write per cell).
    n_full = n >> 3
    for byte in range(n_full * c // n_chunks, n_full * (c + 1) // n_chunks):
        base = byte * 8
        for f in range(p):
            bits = np.uint8(0)
            for k in range(8):
                bits |= np.uint8(np.isnan(X[base + k, f])) << np.uint8(k)
            out[f, byte] = bits
    if c == n_chunks - 1:
        for case in range(n_full * 8, n):
            for f in range(p):
                if np.isnan(X[case, f]):
                    out[f, case >> 3] |= np.uint8(1 << (case & 7))


@jit(borrowed=True)
def missing_tally(X, per_column):
    """Set-up (missing values): adds to ``per_column[f]`` (int64, p) the cases missing
    feature f; returns the number of cases missing every feature. One pass over the
    rows of X (for :func:`cartjit._encoding.warn_missing`)."""
    n, p = X.shape
    n_every = 0
    for case in range(n):
        k = 0
        for f in range(p):
            m = np.isnan(X[case, f])
            per_column[f] += m
            k += m
        n_every += k == p
    return n_every


@jit(inline="always")
def _is_missing(bits, key, shift):
    """Whether the case of ``key`` misses the feature of the bitmap row ``bits``."""
    case = key >> shift
    return (bits[case >> 3] >> (case & 7)) & 1 != 0


@jit(inline="always")
def _present_end(row, start, end, shift, bits):
    """End of the node's cases with the feature present: missing values sort last, so
    they end the segment ``row[start:end]``; ``bits`` is the feature's row of
    :func:`_missing_bits`. The look-ups are independent (predicted to go on), so they
    overlap."""
    i = end
    while i > start and _is_missing(bits, row[i - 1], shift):
        i -= 1
    return i


@jit
def _pair_best(ps, f, span, nodes, tg, rules, level_f, level_i, counts):
    """Step 1 (missing values), one (node, categorical feature) pair, searched again for
    the sides of its subset split (:func:`_level_sets_of_pair`): the best split of the
    node's cases with ``f`` present, ``[start, pend)`` of its keys; returns ``(Δ, pos)``
    with Δ = Δi of those cases × their share Q_present(t) / Q(t) of the node (rpart's
    weighting of the goodness of split), and leaves the split's sides in ``level_i``.
    With ``pend == end`` it is the plain search, and serves the subset splits of
    complete-data fits too. It is the subset branch of :func:`_present_best`, which
    :func:`_search_mv` inlines; only that branch is compiled here.

    Parameters
    ----------
    ps : :class:`cartjit.engine.presort.Presorted`.
    f : the feature (categorical).
    span : :class:`NodeSpan`, the node, its positions start, pend, end on ``f``'s keys,
        and its ȳ(t) and Σ w (y - ȳ(t)) (regression).
    nodes, tg, rules : as :func:`_search`.
    level_f, level_i : this thread's scratch (``level_i`` of 4 L_max).
    counts : float64 (>= J,) scratch for the present cases' class counts.
    """
    if span.pend - span.start < 2:
        return -np.inf, np.int64(-1)
    row = ps.keys[f]
    tot, scale = _present_totals(row, span, nodes, tg, counts[:nodes.value.shape[1]], True,
                                 True)
    d, pos = _subset_pair(Segment(row, ps.codes[ps.rank_row[f]], span.start, span.pend), tg,
                          rules, tot.total, tot.imp, tot.mean, level_f, level_i,
                          level_i.shape[0] // 4)
    if pos >= 0:
        d *= scale
    return d, pos


@jit(inline="always")
def _label_counts(row, lo, hi, tg, counts):
    """:func:`cartjit.engine.scans.class_counts` of ``row[lo:hi]`` into ``counts``: with two
    classes packed in the keys and unit weights, the class-1 count is the sum of the
    label bits, added in a register (a loop the compiler vectorises) instead of a
    read-modify-write of ``counts`` a case; the counts are whole numbers either way, so
    the same values."""
    if tg.mask != 0 and tg.unit_weights and counts.shape[0] == 2:
        n1 = np.int64(0)
        umask = np.uint32(tg.mask)
        for i in range(np.uint64(lo), np.uint64(hi)):
            n1 += np.int64(np.uint32(row[i]) & umask)
        counts[0] = np.float64(hi - lo - n1)
        counts[1] = np.float64(n1)
    else:
        class_counts(row, lo, hi, tg, counts)


@jit(inline="always")
def _present_totals(row, span, nodes, tg, counts, reg, cls):
    """The :class:`Totals` of the node ``span.node`` over its cases with the feature of
    ``row`` present, ``[span.start, span.pend)``, and their share of the node (Q_present(t)
    / Q(t) for classification, their weight's for regression), ``(totals, share)``; the
    node's own totals and 1 when none is missing. ``counts`` float64 (J,) scratch takes
    the present cases' class counts; ``reg``, ``cls`` the scan marks (``None`` for a task
    the fit is not: its code is then not compiled in)."""
    node = span.node
    start = span.start
    pend = span.pend
    end = span.end
    mean = span.mean
    s_sum = span.sum
    imp = nodes.fnode[node, F_IMPURITY]
    w_total = nodes.fnode[node, F_WEIGHT]
    total = nodes.value[node]
    scale = 1.0
    if pend < end:
        if reg is None or (cls is not None and tg.criterion != SQUARED_ERROR):
            if tg.exact_sums and 2 * (end - pend) < end - start:
                # exact counts: the node's less the missing tail's
                _label_counts(row, pend, end, tg, counts)
                for cl in range(counts.shape[0]):
                    counts[cl] = total[cl] - counts[cl]
            else:
                _label_counts(row, start, pend, tg, counts)
            q_node = 0.0
            q_present = 0.0
            for cl in range(counts.shape[0]):
                q_node += tg.factor[cl] * total[cl]
                q_present += tg.factor[cl] * counts[cl]
            total = counts
            imp = impurity_from_counts(counts, tg.factor, tg.criterion)
            scale = q_present / q_node
        else:
            w_present, mean, s_sum, imp, _ = _reg_moments(row, start, pend, tg)
            scale = w_present / w_total
            w_total = w_present
    return Totals(total, imp, mean, w_total, s_sum), scale


# Inlined into _search_mv, which walks feature by feature with every array taken once:
# a call with this many array arguments costs about as much as a small pair's scan.
@jit(inline="always")
def _present_best(row, rk, codes, span, nodes, tg, rules, scratch, cand, level_f, level_i,
                  counts, reg, cls):
    """Step 1 (missing values), one (node, feature) pair on its feature's arrays: the best
    split of the node's cases with the feature present, scaled by their share of the
    node (:func:`_present_totals`), as :func:`_pair_best`. ``row`` the feature's keys,
    ``rk`` its ranks (empty when it has no ties), ``codes`` its uint16 level codes
    (empty when it is ordered; ``None`` when no feature of the fit is categorical: the
    subset search is then not compiled in), ``span`` the :class:`NodeSpan` of the node
    on them, ``counts`` float64 (J,) scratch; ``reg``, ``cls`` the scan marks."""
    start = span.start
    pend = span.pend
    if pend - start < 2:
        return -np.inf, np.int64(-1)
    tot, scale = _present_totals(row, span, nodes, tg, counts, reg, cls)
    is_cat = False if codes is None else codes.shape[0] > 0
    if is_cat:
        d, pos = _subset_pair(Segment(row, codes, start, pend), tg, rules, tot.total,
                              tot.imp, tot.mean, level_f, level_i, level_i.shape[0] // 4)
    else:
        d, pos = _ordered_best(Segment(row, rk, start, pend), tg, rules, tot,
                               rk.shape[0] > 0, scratch, cand, None, 0, None, reg, cls, cls,
                               cls)
    if pos >= 0:
        d *= scale
    return d, pos


@jit(borrowed=True)
def _search_mv(ps, fr, nodes, tg, rules, work, pairs, scan, cat, reg, cls, c, n_chunks):
    """Step 1 (missing values): the best split of every (frontier node, feature) pair,
    on the node's cases with the feature present (:func:`_pair_best`); also records how
    many cases have it present.

    The pairs are shared out as the chunks go (:func:`_take_block`): a chunk takes a
    block of one feature's nodes at a time, that feature's arrays taken once per block,
    its own features first, until none is left. Each pair's result depends on the pair
    only.

    Parameters as :func:`_search`, with ``scan`` the :class:`MissingScan` (the bitmap of
    :func:`_missing_bits`, the scratch of the pairs of :func:`_gathered_best`, the step's
    counters); ``cat`` the categorical features, or ``None`` when there are none;
    ``reg``, ``cls`` the scan marks of regression and classification
    (:func:`search_marks`).

    Numba prunes the branches of a ``None`` ``cat``, ``reg`` or ``cls`` before typing:
    data with missing values and no categorical feature compile no subset search, a
    classification fit no regression scan and the reverse.
    """
    missing = scan.bits
    iota = scan.iota
    units = scan.units
    keys = ps.keys
    p = keys.shape[0]
    lm = work.level_i.shape[1] // 4
    shift = tg.shift
    scratch = work.scratch[c]
    cand = work.buffers[c]
    level_f = work.level_f[c]
    level_i = work.level_i[c]
    counts = work.present[c][:nodes.value.shape[1]]
    keep_bits = pairs.left_bits.shape[0] > 0
    n_fr = fr.node.shape[0]
    no_codes = ps.codes.reshape(-1)[:0]  # the type of a row of codes, empty
    ys = scan.ys[c]
    tops = ys[ys.shape[0] - _SCAN_SKIP:] if ys.shape[0] > 0 else ys
    drawing = rules.max_features > 0  # random feature subsets (cartjit.engine.draws)
    while True:
        f, j, j_end = _take_block(units, c, n_chunks, p, n_fr)
        if f < 0:
            break
        row = keys[f]
        bits = missing[f]
        is_cat = False if cat is None else ps.n_levels[f] > 0
        tied = ps.rank_row[f] >= 0
        rk = ps.ranks[ps.rank_row[f]] if tied else work.no_ranks
        codes = ps.codes[ps.rank_row[f]] if is_cat else no_codes
        if reg is None:  # classification: neither gathered scan compiled in
            gather = False
            gather_cat = False
        else:
            # regression, unit weights, a feature without ties: _gathered_best
            gather = ys.shape[0] > 0 and not is_cat and not tied
            # ... a categorical feature: _gathered_subset
            gather_cat = False if cat is None else ys.shape[0] > 0 and is_cat
        while j < j_end:
            k = j * p + f
            start = fr.start[j]
            end = fr.end[j]
            pend = _present_end(row, start, end, shift, bits)
            pairs.present[k] = pend - start
            if drawing and work.drawn[j, f] == 0:  # not among the node's m features
                pairs.delta[k] = -np.inf
                pairs.pos[k] = -1
                j += 1
                continue
            if gather and pend < end and pend - start >= 2:
                # with the block's next pair of this feature, when it is one too: their
                # moments at once (_gathered_moments_two)
                j2 = j + 1
                if j2 < j_end and not (drawing and work.drawn[j2, f] == 0):
                    start2 = fr.start[j2]
                    end2 = fr.end[j2]
                    pend2 = _present_end(row, start2, end2, shift, bits)
                    if pend2 < end2 and pend2 - start2 >= 2:
                        k2 = j2 * p + f
                        pairs.present[k2] = pend2 - start2
                        na = pend - start
                        nb = pend2 - start2
                        ys_a = ys[:na]
                        sl_a = ys[na:2 * na]
                        ys_b = ys[2 * na:2 * na + nb]
                        sl_b = ys[2 * na + nb:2 * (na + nb)]
                        wa, ma, sca, va, wb, mb, scb, vb = _gathered_moments_two(
                            row, start, pend, start2, pend2, tg.y_reg, ys_a, sl_a, ys_b,
                            sl_b)
                        pa, sla, da = _gathered_walk(na, ma, sca, va, tg,
                                                     rules.min_samples_leaf, ys_a, sl_a,
                                                     iota, tops)
                        pb, slb, db = _gathered_walk(nb, mb, scb, vb, tg,
                                                     rules.min_samples_leaf, ys_b, sl_b,
                                                     iota, tops)
                        if pa >= 0 and pb >= 0 and np.isnan(da) and np.isnan(db):
                            da, db = _precise_two(ys_a, pa, na, ma, sla, ys_b, pb, nb, mb,
                                                  slb)
                        pairs.delta[k], pairs.pos[k] = _scaled(
                            pa, da, start, na, ma, sla, wa,
                            nodes.fnode[fr.node[j], F_WEIGHT], tg, ys_a, iota)
                        pairs.delta[k2], pairs.pos[k2] = _scaled(
                            pb, db, start2, nb, mb, slb, wb,
                            nodes.fnode[fr.node[j2], F_WEIGHT], tg, ys_b, iota)
                        j = j2 + 1
                        continue
                d, pos = _gathered_best(row, start, pend, nodes.fnode[fr.node[j], F_WEIGHT],
                                        tg, rules.min_samples_leaf, ys, iota)
            elif gather_cat and pend < end and pend - start >= 2:
                d, pos = _gathered_subset(row, codes, start, pend,
                                          nodes.fnode[fr.node[j], F_WEIGHT], tg,
                                          rules.min_samples_leaf, ys, level_f, level_i, lm)
            else:
                span = NodeSpan(fr.node[j], start, pend, end, fr.mean[j], fr.sum[j])
                if cat is None:  # (None: the subset search is not compiled in)
                    d, pos = _present_best(row, rk, None, span, nodes, tg, rules, scratch,
                                           cand, level_f, level_i, counts, reg, cls)
                else:
                    d, pos = _present_best(row, rk, codes, span, nodes, tg, rules, scratch,
                                           cand, level_f, level_i, counts, reg, cls)
            pairs.delta[k] = d
            pairs.pos[k] = pos
            if pos >= 0 and is_cat and keep_bits:
                pairs.left_bits[k], pairs.level_bits[k] = _side_bits(level_i, lm,
                                                                     pend - start)
            j += 1


@jit(inline="always")
def _level_sets_from_bits(bits, present, level_sets, row):
    """Step 2, a subset split (a competitor, or the split of :func:`_mark_mv`) whose
    sides the search kept (``Pairs.left_bits`` and ``Pairs.level_bits``, at most 64
    levels: one word): write row ``row`` of the level sets, the left set the levels
    present in ``bits``, the right set the other levels present (rather than finding the
    levels present again in the segment)."""
    level_sets[row, 0, 0] = present & bits
    level_sets[row, 1, 0] = present & ~bits


@jit(inline="always")
def _tie_terms(key, case, tg):
    """Step 2 (missing values), one marked case of :func:`_mark_mv`: its weight w and
    the terms c_y w and c_y y w (regression: w and w y) of the sums that decide which
    child rpart numbers 2k."""
    wi = 1.0 if tg.unit_weights else tg.w[case]
    if tg.criterion != SQUARED_ERROR:
        cl = key & tg.mask if tg.mask else tg.y_class[case]
        a = tg.factor[cl] * wi
        return wi, a, a * cl
    return wi, wi, wi * tg.y_reg[case]


@jit(borrowed=True)
def _mark_mv(X, ps, fr, nodes, tg, rules, splits, pairs, work, level_sets, c, n_chunks):
    """Step 2 (missing values), after :func:`_choose`: mark every case of each split
    node LEFT or RIGHT by the split, or MISSING when its split feature is missing;
    write a subset split's level sets; record the cases
    with the split feature present and the weight the split sends each way, and set
    ``splits.pos`` to ``start`` + the present cases it sends left (for
    :func:`_send_missing`).

    Chunk c takes the batch rows c, c + n_chunks, ...: the nodes own disjoint cases,
    marks, rows of ``splits`` and level-set rows (reserved by :func:`_choose`), so the
    chunks write nothing in common. A subset split whose sides the pairs did not keep
    (``pairs.left_bits`` empty) is searched again with the first thread's scratch: then
    the caller runs one chunk.

    Parameters as :func:`_record_subsets`, with ``X`` the cases and ``pairs`` the batch's
    :class:`Pairs` (``present`` filled by :func:`_search_mv`), ``level_sets`` ``None``
    when no feature is categorical (the subset code is then not compiled); ``c,
    n_chunks`` this chunk and the number of chunks.
    """
    p = ps.keys.shape[0]
    marks = work.goes_left
    shift = tg.shift
    ushift = np.uint64(shift)
    no_codes = ps.codes.reshape(-1)[:0]  # the type of a row of codes, empty
    for j in range(c, fr.node.shape[0], n_chunks):
        f = splits.feat[j]
        if f < 0:
            continue
        node = fr.node[j]
        start = fr.start[j]
        end = fr.end[j]
        pend = start + pairs.present[j * p + f]
        nodes.inode[node, I_N_PRIMARY] = pend - start
        row = ps.keys[f]
        is_cat = False if level_sets is None else ps.n_levels[f] > 0
        pos = splits.pos[j]
        lrow = nodes.inode[node, I_LEVEL_ROW]
        if is_cat:
            k = j * p + f
            if pairs.left_bits.shape[0] > 0:
                _level_sets_from_bits(pairs.left_bits[k], pairs.level_bits[k], level_sets,
                                      lrow)
            else:
                span = NodeSpan(node, start, pend, end, fr.mean[j], fr.sum[j])
                _level_sets_of_pair(ps, f, span, nodes, tg, rules, pairs, k, work,
                                    level_sets, lrow)
        w_left = 0.0
        w_right = 0.0
        n_left = 0
        # Σ c_y y w and Σ c_y w by side (regression: Σ y w and Σ w): rpart numbers the
        # child with the smaller mean class number (mean response) 2k
        num_l = 0.0
        den_l = 0.0
        num_r = 0.0
        den_r = 0.0
        # The cases are marked and summed run by run: an ordered split's two ranges, or a
        # subset split's runs of one level (the segment comes grouped by level, so the
        # side is looked up once a run). A run adds to its side's sums, taken into
        # registers and put back, so each side sums its cases in order as a branch per
        # case would, without one.
        codes = ps.codes[ps.rank_row[f]] if is_cat else no_codes
        i = start
        while i < pend:
            if is_cat:
                code = codes[np.uint64(row[np.uint64(i)]) >> ushift]
                run_end = level_run_end(row, codes, ushift, i, pend, code)
                left = _level_side(code, lrow, level_sets) == 0
            else:
                left = i < pos
                run_end = pos if left else pend
            if left:
                ws, nums, dens = w_left, num_l, den_l
                n_left += run_end - i
            else:
                ws, nums, dens = w_right, num_r, den_r
            mark = LEFT if left else RIGHT
            for q in range(np.uint64(i), np.uint64(run_end)):
                key = row[q]
                case = np.uint64(key >> shift)
                marks[case] = mark
                wi, a, b = _tie_terms(key, case, tg)
                ws += wi
                nums += b
                dens += a
            if left:
                w_left, num_l, den_l = ws, nums, dens
            else:
                w_right, num_r, den_r = ws, nums, dens
            i = run_end
        splits.tie_left[j] = 0 if num_l * den_r < num_r * den_l else 1
        for i in range(pend, end):
            marks[row[i] >> shift] = MISSING
        splits.w_left[j] = w_left
        splits.w_right[j] = w_right
        # until _send_missing adds the cases it sends: the left child's end among the
        # present cases
        splits.pos[j] = start + n_left
