"""Missing values against a slow reference (tests/references/naive_missing.py).

The reference is first checked on its own: six-case examples worked by hand for every
rule (the scaled goodness of a split searched on the present cases, agreement and
adjusted agreement of an ordered surrogate under both surrogate styles, the "two cases
each way" rule, the categorical surrogate's direction per level and its acceptance
test, the routing of the cases missing the split feature under use_surrogate 0, 1 and
2, competitors, and the majority direction of prediction), an independent brute force
over every cut of a surrogate, ``tests/references/naive.py`` itself on complete data, and R's
rpart (depth-3 trees on random samples with holes, when Rscript and rpart are found).

Then cartjit's fitted tree must be the reference tree on small random learning samples
with holes (8 to 40 cases, 1 to 4 features mixing ordered and categorical ones, 2 or 3
classes with every criterion, priors and costs, or regression, with and without case
weights): primary splits, improvements, node sizes, ``n_primary``, every surrogate row
(feature, threshold or level sets, direction, agreement, adjusted agreement, count)
and every competitor row. Examples where float rounding could decide a tie (the
reference says so) are skipped with ``hypothesis.assume``; ``hypothesis.event`` records
how often (run with ``--hypothesis-show-statistics``). Exact ties between two
competitors or two surrogates must keep feature order (two fixed examples). On complete
data, asking for surrogates and competitors changes nothing else in the tree, nor the
cross-validation tables; prediction with holes follows the reference tree.
"""
from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from references.naive import level_set, naive_grow, naive_to_preorder
from references.naive_missing import (assert_same_missing_tree, flat_apply_missing,
                                      naive_grow_missing, naive_predict_missing, node_work,
                                      route, surrogates_given)
from references.strategies import missing_problem, missing_stopping, surrogate_settings

# Imported unconditionally: an import error is a defect to report, never a reason to skip.
from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor
from cartjit import _validation as V
from cartjit.engine.cv import cross_validate
from cartjit.engine.fit import Problem, Settings, fit_tree
from cartjit.engine.tree import Tree, validate

nan = np.nan
#: Multiplies every max_examples below (e.g. CARTJIT_HYPOTHESIS_SCALE=20 for a long hunt).
SCALE = float(os.environ.get("CARTJIT_HYPOTHESIS_SCALE", "1"))


def examples(n):
    return max(1, int(n * SCALE))


HYPOTHESIS = dict(deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.filter_too_much])


# ----------------------------------------------------------------------------------------
# the reference on its own: six cases worked by hand

# Primary x0 <= 3.5 on its five present cases (classes 0, 0, 0 | 1, 1: pure children);
# case 5 misses x0. x1 is present everywhere.
X_A = np.array([[1, 1], [2, 4], [3, 2], [4, 3], [5, 5], [nan, 6]], float)
Y_A = np.array([0, 0, 0, 1, 1, 1])


def test_goodness_is_scaled_by_the_present_fraction():
    # Empirical priors: c_j = 1/6, Q(t) = 1, Q_present = 5/6. On the present cases
    # i = 1 - (3/5)^2 - (2/5)^2 = 12/25 and both children are pure: Δi = 12/25, scaled
    # 12/25 * 5/6 = 2/5. x1 (all present): the best cut is 2.5, {0, 0} | {1, 0, 1, 1}:
    # 1/2 - (4/6)(3/8) = 1/4 (the cut at 4.5 ties it; the lower threshold wins).
    root = node_work(X_A, Y_A, max_competitor=4)
    assert (root.feature, root.threshold, root.n_primary) == (0, 3.5, 5)
    assert root.delta == pytest.approx(2 / 5, rel=1e-14)
    [c] = root.competitors
    assert (c.feature, c.threshold, c.count) == (1, 2.5, 6)
    assert c.improvement == pytest.approx(1 / 4, rel=1e-14)


def test_ordered_surrogate_agreement_and_adj_by_hand():
    # Directions of the five cases with x0: L L L R R; their x1: 1 4 2 3 5, sorted
    # 1L 2L 3R 4L 5R. Start: best = max(wL, wR) = 3. Cut 1|2: one case below, skipped.
    # Cut 2|3: "goes right" = w(L, x>c) + w(R, x<=c) = 1 + 0, "goes left" = 2 + 2 = 4 > 3:
    # kept (2.5, low goes left). Cut 3|4: right 1 + 1 = 2, left 2 + 1 = 3: no. Cut 4|5:
    # one case above, skipped. agree = 4/5; lcount = 3, rcount = 2 (case 5 has no
    # direction), majority 3/5, adj = (4/5 - 3/5)/(2/5) = 1/2 (both styles: every case
    # with x0 has x1).
    for style in (0, 1):
        root = node_work(X_A, Y_A, max_surrogate=5, surrogate_style=style)
        [s] = root.surrogates
        assert (s.feature, s.threshold, s.low_left) == (1, 2.5, 1)
        assert s.agree_exact == Fraction(4, 5)
        assert s.adj == pytest.approx(1 / 2, rel=1e-14)
        assert (root.lcount, root.rcount) == (3.0, 2.0)


def test_routing_under_each_use_surrogate():
    # Case 5 (x0 missing, x1 = 6 > 2.5) goes right by the surrogate; without surrogates
    # use_surrogate = 2 sends it with the heavier side of the present cases (lcount 3 >
    # rcount 2: left), and use_surrogate 0 leaves it in the root.
    expected = {  # (max_surrogate, use_surrogate): (left, right, stayed, count, majority)
        (5, 2): ([0, 1, 2], [3, 4, 5], [], 1, -1),  # 3 against 3: no majority
        (5, 1): ([0, 1, 2], [3, 4, 5], [], 1, -1),
        (5, 0): ([0, 1, 2], [3, 4], [5], 0, 1),
        (0, 2): ([0, 1, 2, 5], [3, 4], [], None, 1),
        (0, 1): ([0, 1, 2], [3, 4], [5], None, 1),
    }
    for (max_surrogate, use), (left, right, stayed, count, majority) in expected.items():
        root = node_work(X_A, Y_A, max_surrogate=max_surrogate, use_surrogate=use)
        assert route(root) == (left, right, stayed), (max_surrogate, use)
        assert root.n == 6 and root.left.n + root.right.n == 6 - len(stayed)
        assert root.majority_left == majority
        if count is not None:
            assert root.surrogates[0].count == count


def test_surrogate_styles_differ_when_the_surrogate_is_missing():
    # x1 is missing for case 2 (x0 present, goes left). Primary x0 <= 3.5 (Δ = 1/2 beats
    # x1's 12/25 * 5/6 = 2/5). Cases with both: x1 = 1L 2L 3R 4R 5R: best starts at 3;
    # cut 2|3 "goes left" = 2 + 3 = 5 > 3 (then cut 3|4 gives 4, cut 4|5 has one above).
    # Style 0: total lcount + rcount = 6, majority 3/6: agree 5/6, adj (5/6 - 1/2)/(1/2)
    # = 2/3. Style 1: total 5, majority 3/5: agree 1, adj 1.
    X = np.array([[1, 1], [2, 2], [3, nan], [4, 3], [5, 4], [6, 5]], float)
    for style, agree, adj in ((0, Fraction(5, 6), 2 / 3), (1, Fraction(1), 1.0)):
        root = node_work(X, Y_A, max_surrogate=5, surrogate_style=style)
        assert (root.feature, root.threshold) == (0, 3.5)
        [s] = root.surrogates
        assert (s.feature, s.threshold, s.low_left) == (1, 2.5, 1)
        assert s.agree_exact == agree and s.adj == pytest.approx(adj, rel=1e-14)


def test_two_cases_each_way_and_direction_of_a_surrogate():
    x = np.array([[0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6]], float)
    # five left, one right: the perfect cut 5|6 leaves one case above: refused
    got, lcount, rcount, _ = surrogates_given(x, [1, 1, 1, 1, 1, 0], primary_feature=0)
    assert got == [] and (lcount, rcount) == (5, 1)
    # four left then two right: x1 <= 4.5 goes left, agree 1, adj 1
    got, _, _, _ = surrogates_given(x, [1, 1, 1, 1, 0, 0], primary_feature=0)
    assert [(s.feature, s.threshold, s.low_left, s.agree, s.adj) for s in got] == \
        [(1, 4.5, 1, 1.0, 1.0)]
    # reversed: the low values go right (low_left 0)
    got, _, _, _ = surrogates_given(x, [0, 0, 1, 1, 1, 1], primary_feature=0)
    assert [(s.threshold, s.low_left, s.agree) for s in got] == [(2.5, 0, 1.0)]
    # a tie between directions at one cut: "goes right" is tried first
    got, _, _, _ = surrogates_given(x, [1, 1, 0, 0, 1, 1], primary_feature=0)
    # best starts at 4 (four left); cut 2|3: right 2 + 0 = 2, left 2 + 2 = 4 (not > 4);
    # cut 3|4: right 2 + 1 = 3, left 2 + 1 = 3; cut 4|5: right 2 + 2 = 4, left 2 = 2.
    assert got == []


def test_categorical_surrogate_directions_and_the_acceptance_test():
    # Primary x0 <= 3.5 (directions L L L R R R). x1 levels: 0 holds L L R (left, 2
    # agree, 1 disagrees), 1 holds L R R (right, 2 agree, 1 disagrees): agree 4/6,
    # accepted (2 > 1 disagreeing, 4 > 1 agreeing), adj (2/3 - 1/2)/(1/2) = 1/3.
    # x2 levels: 0 holds L L (left), 1 holds L R (a tie: Σwl = Σwr = 3, so the default
    # direction is right), 2 holds R R (right): agree 5/6 but a single case disagrees,
    # so rpart's test refuses it.
    X = np.array([[1, 0, 0], [2, 0, 0], [3, 1, 1], [4, 0, 1], [5, 1, 2], [6, 1, 2]], float)
    root = node_work(X, Y_A, categorical=[1, 2], max_surrogate=5, max_competitor=4)
    assert (root.feature, root.threshold) == (0, 3.5)
    [s] = root.surrogates
    assert (s.feature, s.left_levels, s.right_levels) == (1, {0}, {1})
    assert s.agree_exact == Fraction(2, 3) and s.adj == pytest.approx(1 / 3, rel=1e-14)
    assert math.isnan(s.threshold)
    # competitors: x2 (ordered by p(1|level) 0, 1/2, 1: {0} | {1, 2} ties {0, 1} | {2}
    # at 1/2 - (4/6)(3/8) = 1/4, the smaller set wins), then x1 with 1/2 - 4/9 = 1/18
    assert [(c.feature, c.left_levels, c.count) for c in root.competitors] == \
        [(2, {0}, 6), (1, {0}, 6)]
    assert [c.improvement for c in root.competitors] == pytest.approx([1 / 4, 1 / 18])


def test_categorical_surrogate_level_routing_and_unknown_levels():
    # x0 missing for cases 6 and 7. Categorical x1: level 0 holds L L L, level 1 R R R
    # (a perfect surrogate, but no case disagrees: refused); level 2 only in case 7.
    # Weighted: case 6 weighs 5. lcount = rcount = 3: no fit-time majority, so under
    # use_surrogate = 2 both stay in the root.
    X = np.array([[1, 0], [2, 0], [3, 0], [4, 1], [5, 1], [6, 1], [nan, 0], [nan, 2]],
                 float)
    y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    root = node_work(X, y, categorical=[1], max_surrogate=5)
    assert root.surrogates == [] and root.feature == 0
    assert route(root) == ([0, 1, 2], [3, 4, 5], [6, 7])
    # an ordered x2 with one disagreeing case on each side is accepted; case 7 has x2
    X2 = np.column_stack([X, [1, 2, 7, 3, 8, 9, 0, 10]])
    root = node_work(X2, y, categorical=[1], max_surrogate=5, surrogate_style=1)
    # both-present: x2 = 1L 2L 3R 7L 8R 9R; best starts at 3; cut 2|3: left 2 + 3 = 5
    # (> 3, kept at 2.5); cut 3|7: right 1 + 1, left 2 + 2 = 4; cut 7|8: left 3 + 2 = 5
    # (not > 5). agree 5/6, adj (5/6 - 1/2)/(1/2) = 2/3.
    [s] = root.surrogates
    assert (s.feature, s.threshold, s.low_left) == (2, 2.5, 1)
    assert s.agree_exact == Fraction(5, 6)
    # case 6 (x2 = 0 <= 2.5) goes left, case 7 (x2 = 10) right: 4 against 4
    assert route(root) == ([0, 1, 2, 6], [3, 4, 5, 7], [])
    assert s.count == 2 and root.majority_left == -1


def test_prediction_walk_uses_surrogates_then_the_majority_then_stops():
    X = np.array([[1, 1], [2, 4], [3, 2], [4, 3], [5, 5], [6, 6], [nan, 6]], float)
    y = np.array([0, 0, 0, 1, 1, 1, 1])
    root = naive_grow_missing(X, y, max_surrogate=5, max_depth=1)
    # both children: left {0, 1, 2}, right {3, 4, 5, 6}: majority right
    assert root.majority_left == 0
    new = np.array([[2.0, 100.0], [nan, 1.0], [nan, 5.0], [nan, nan]])
    ends = [naive_predict_missing(root, x, use_surrogate=2) for x in new]
    assert [e is root.left for e in ends] == [True, True, False, False]
    ends = [naive_predict_missing(root, x, use_surrogate=1) for x in new]
    assert ends[3] is root  # no surrogate can route it, no majority asked: it stops
    ends = [naive_predict_missing(root, x, use_surrogate=0) for x in new]
    assert ends[1] is root and ends[0] is root.left


def test_reference_rejects_bad_arguments():
    with pytest.raises(ValueError, match="use_surrogate"):
        naive_grow_missing(X_A, Y_A, use_surrogate=3)
    with pytest.raises(ValueError, match="surrogate_style"):
        naive_grow_missing(X_A, Y_A, surrogate_style=2)
    with pytest.raises(ValueError, match="max_surrogate"):
        naive_grow_missing(X_A, Y_A, max_surrogate=-1)
    with pytest.raises(ValueError, match="finite numbers or NaN"):
        naive_grow_missing(np.array([[np.inf], [1.0]]), [0, 1])
    with pytest.raises(ValueError, match="categorical feature 1"):
        naive_grow_missing(np.array([[0, 0.5], [1, 1.0]]), [0, 1], categorical=[1])
    with pytest.raises(ValueError, match="directions"):
        surrogates_given(X_A, [1, 0, 2, 0, 0, 0], primary_feature=0)


# ----------------------------------------------------------------------------------------
# the reference on its own: brute force and tests/references/naive.py


def _brute_force_surrogate(x, dirs, w):
    """The best agreement of an ordered surrogate over every cut with two cases each
    way and both directions, or None when none beats max(wL, wR) (exact weights)."""
    keep = ~np.isnan(x)
    x, dirs, w = x[keep], dirs[keep], [Fraction(v) for v in w[keep]]
    start = max(sum((wi for wi, d in zip(w, dirs) if d == 1), Fraction(0)),
                sum((wi for wi, d in zip(w, dirs) if d == 0), Fraction(0)))
    best = None
    for c in np.unique(x)[:-1]:
        low = x <= c
        if low.sum() < 2 or (~low).sum() < 2:
            continue
        for low_dir in (0, 1):
            agree = sum((wi for wi, d, lo in zip(w, dirs, low)
                         if d == (low_dir if lo else 1 - low_dir)), Fraction(0))
            if agree > start and (best is None or agree > best):
                best = agree
    return best


@settings(max_examples=examples(150), **HYPOTHESIS)
@given(st.integers(6, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.one_of(st.integers(0, 6).map(float), st.just(nan)), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))))
def test_ordered_surrogate_is_the_brute_force_best(data):
    dirs, x, w = (np.array(a) for a in data)
    assume(0 < dirs.sum() < dirs.size)
    X = np.column_stack([np.zeros(x.size), x])
    got, _, _, _ = surrogates_given(X, dirs, w, primary_feature=0, surrogate_style=1)
    best = _brute_force_surrogate(x, dirs, w)
    keep = ~np.isnan(x)
    total = sum((Fraction(v) for v in w[keep]), Fraction(0))
    if best is None:
        assert got == []
        return
    # adj > 0 whenever the agreement beats the majority (style 1)
    [s] = got
    assert s.agree_exact == best / total
    low = x[keep] <= s.threshold
    agree = sum((Fraction(wi) for wi, d, lo in zip(w[keep], dirs[keep], low)
                 if d == (s.low_left if lo else 1 - s.low_left)), Fraction(0))
    assert agree == best  # the threshold and direction reach it
    # and no lower cut does (rpart keeps the first cut reaching the best; at most one
    # direction of a cut can beat max(wL, wR) >= half the weight, so the order in which
    # the two directions are tried never hides a better one)
    values = np.unique(x[keep])
    chosen = values[values <= s.threshold].max()
    for c in values[values < chosen]:
        lo = x[keep] <= c
        if lo.sum() < 2 or (~lo).sum() < 2:
            continue
        for low_dir in (0, 1):
            a = sum((Fraction(wi) for wi, d, l_ in zip(w[keep], dirs[keep], lo)
                     if d == (low_dir if l_ else 1 - low_dir)), Fraction(0))
            assert a < best


@settings(max_examples=examples(60), **HYPOTHESIS)
@given(missing_problem(), missing_stopping())
def test_reference_on_complete_data_is_tests_naive(prob, stop):
    """Without a hole the reference grows tests/references/naive.py's tree (majority aside)."""
    X = np.where(np.isnan(prob["X"]), 0.0, prob["X"])
    prob = dict(prob, X=X)
    root = _naive(prob, stop, dict(max_surrogate=5, max_competitor=4))
    old = _naive_old(prob, stop)
    stack = [(root, old)]
    while stack:
        a, b = stack.pop()
        assert (a.n, a.is_leaf, a.feature, a.left_levels) == (b.n, b.is_leaf, b.feature,
                                                               b.left_levels)
        assert a.threshold == b.threshold or (math.isnan(a.threshold)
                                              and math.isnan(b.threshold))
        if not a.is_leaf:
            assert a.delta == b.delta and a.n_primary == a.n
            stack += [(a.left, b.left), (a.right, b.right)]


# ----------------------------------------------------------------------------------------
# fitting both


def _positive(prob):
    """X, y, w without the zero-weight rows (w None for unit weights)."""
    w = prob["w"]
    if w is None:
        return prob["X"], prob["y"], None
    keep = w > 0
    return prob["X"][keep], prob["y"][keep], w[keep]


def _naive(prob, stop, sur):
    kw = dict(stop, **sur, categorical=prob["categorical"])
    if prob["task"] == "regression":
        return naive_grow_missing(prob["X"], prob["y"], prob["w"], task="regression", **kw)
    return naive_grow_missing(prob["X"], prob["y"], prob["w"], n_classes=prob["J"],
                              criterion=prob["criterion"], priors=prob["priors"],
                              cost=prob["cost"], **kw)


def _naive_old(prob, stop):
    kw = dict(stop, categorical=prob["categorical"])
    if prob["task"] == "regression":
        return naive_grow(prob["X"], prob["y"], prob["w"], task="regression", **kw)
    return naive_grow(prob["X"], prob["y"], prob["w"], n_classes=prob["J"],
                      criterion=prob["criterion"], priors=prob["priors"], cost=prob["cost"],
                      **kw)


def problem_and_settings(prob, stop, sur):
    """cartjit's ``Problem`` and ``Settings`` of the problem, zero weights dropped."""
    X, y, w = _positive(prob)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n_levels = np.zeros(X.shape[1], dtype=np.int64)
    for m in prob["categorical"]:
        col = X[:, m]
        n_levels[m] = int(np.nanmax(col)) + 1 if np.any(~np.isnan(col)) else 1
    unit = w is None
    w_arr = np.empty(0) if unit else np.ascontiguousarray(w, dtype=np.float64)
    depth = stop["max_depth"]
    common = dict(max_depth=-1 if depth is None else depth,
                  min_samples_split=stop["min_samples_split"],
                  min_samples_leaf=stop["min_samples_leaf"],
                  min_impurity_decrease=stop["min_impurity_decrease"], max_leaf_nodes=None)
    levels = n_levels if n_levels.any() else np.zeros(0, dtype=np.int64)
    if prob["task"] == "regression":
        problem = Problem(X, np.empty(0, dtype=np.int32), np.asarray(y, np.float64), w_arr,
                          unit, 0, levels)
        return problem, Settings(V.check_criterion("squared_error", False), priors=None,
                                 cost=None, default_cost=True, **common, **sur)
    J = prob["J"]
    y = np.ascontiguousarray(y, dtype=np.int32)
    counts = np.bincount(y, weights=w, minlength=J).astype(np.float64)
    priors = prob["priors"]
    checked = V.check_priors(priors, counts)
    cost, default_cost = V.check_cost(prob["cost"], J)
    problem = Problem(X, y, np.empty(0), w_arr, unit, J, levels)
    return problem, Settings(V.check_criterion(prob["criterion"], True),
                             priors=priors if isinstance(priors, str) else checked,
                             cost=cost, default_cost=default_cost, **common, **sur)


def fit_engine(prob, stop, sur) -> Tree:
    """cartjit's tree (``cartjit.engine.fit.fit_tree``) of the problem, zero weights dropped."""
    return fit_tree(*problem_and_settings(prob, stop, sur), None, 1).tree


def _skip_if_ambiguous(root):
    reasons = [node.why_ambiguous or "near tie" for node in naive_to_preorder(root)
               if node.ambiguous]
    if reasons:
        event(f"skipped: {reasons[0].split(':')[0]}")
    assume(not reasons)


# ----------------------------------------------------------------------------------------
# cartjit against the reference


def check_tree_with_holes(prob, stop, sur):
    root = _naive(prob, stop, sur)
    _skip_if_ambiguous(root)
    tree = fit_engine(prob, stop, sur)
    validate(tree)
    skipped = assert_same_missing_tree(tree, root)
    if skipped["competitor_tables_skipped"]:
        event("competitor table not compared (near tie)")
    if any(node.surrogates for node in naive_to_preorder(root)):
        event("some surrogate")
    if any(node.stayed for node in naive_to_preorder(root)):
        event("some case stayed in a split node")


def test_a_tree_where_a_case_stays_meets_the_tree_contract():
    """use_surrogate=0: case 5 of X_A (x0 missing) stays in the root, so the children
    hold 3 + 2 of its 6 cases; ``validate`` accepts such a tree (the children hold at
    most their parent's cases and weight)."""
    for use, sizes in ((0, [6, 3, 2]), (2, [6, 4, 2])):
        est = CARTClassifier(max_surrogate=0, use_surrogate=use, max_depth=1).fit(X_A, Y_A)
        assert est.tree_max_.n_node_samples.tolist() == sizes
        assert est.tree_max_.n_primary.tolist() == [5, 0, 0]
        validate(est.tree_max_)


def test_competitors_tied_exactly_rank_in_feature_order():
    """x0 (ordered) and x1 (categorical) cut the six cases the same way ({3} against the
    rest), so their goodness is the same number; x2 (present for two cases) is the
    primary. Ties rank in feature order: x0 first, whatever the last bits of the two
    computations."""
    X = np.array([[1, 0, nan], [1, 0, 1], [1, 2, nan], [2, 1, 0], [1, 2, nan], [1, 2, nan]])
    y = np.array([2, -3, -3, 3, -1, -3], float)
    prob = dict(X=X, categorical=[1], task="regression", y=y, w=None)
    stop = dict(max_depth=1, min_samples_split=2, min_samples_leaf=1,
                min_impurity_decrease=0.0)
    sur = dict(max_surrogate=0, use_surrogate=0, surrogate_style=0, max_competitor=4)
    root = _naive(prob, stop, sur)
    assert root.feature == 2 and [c.feature for c in root.competitors] == [0, 1]
    tree = fit_engine(prob, stop, sur)
    start = int(tree.competitor_start[0])
    assert tree.feature[0] == 2
    assert tree.competitor_feature[start:start + 2].tolist() == [0, 1]


def test_surrogates_tied_exactly_rank_in_feature_order():
    """x1 and x2 agree with the primary split (x3 <= 0.5) on the same cases with the
    same weights, so their agreements are the same number; with weights such as 0.1 the
    float sums, taken in each feature's order, may differ in the last bit. Ties keep
    feature order: x1 first."""
    X = np.full((28, 4), nan)
    X[:, 1], X[:, 3] = 0.0, 0.0
    X[[4, 27]] = [1, 1, 1, 0]
    X[[11, 13]] = [nan, 0, 0, 1]
    y = np.zeros(28, dtype=int)
    y[26] = 1
    w = np.full(28, 0.1)
    w[4], w[13] = 0.3, 2.9
    prob = dict(X=X, categorical=[], task="classification", y=y, J=2, w=w,
                priors="empirical", cost=None, criterion="gini")
    stop = dict(max_depth=1, min_samples_split=2, min_samples_leaf=1,
                min_impurity_decrease=0.0)
    sur = dict(max_surrogate=5, use_surrogate=0, surrogate_style=0, max_competitor=0)
    root = _naive(prob, stop, sur)
    assert root.feature == 3
    assert [s.feature for s in root.surrogates] == [1, 2]
    assert root.surrogates[0].agree_exact == root.surrogates[1].agree_exact
    tree = fit_engine(prob, stop, sur)
    start = int(tree.surrogate_start[0])
    assert tree.feature[0] == 3
    assert tree.surrogate_feature[start:start + 2].tolist() == [1, 2]


@settings(max_examples=examples(500), **HYPOTHESIS)
@given(missing_problem(n_features=(2, 4)), missing_stopping(), surrogate_settings())
def test_tree_with_holes_is_the_reference_tree(prob, stop, sur):
    check_tree_with_holes(prob, stop, sur)


@settings(max_examples=examples(300), **HYPOTHESIS)
@given(missing_problem(n_features=(2, 4), copies=True), missing_stopping(),
       surrogate_settings())
def test_tree_with_holes_and_surrogates_is_the_reference_tree(prob, stop, sur):
    """As above, every feature after the first a noisy copy of an earlier one."""
    check_tree_with_holes(prob, stop, sur)


@settings(max_examples=examples(100), **HYPOTHESIS)
@given(missing_problem(n_features=(2, 4)), missing_stopping(), surrogate_settings())
def test_estimator_tree_with_holes_is_the_reference_tree(prob, stop, sur):
    """The same through CARTClassifier / CARTRegressor, NaN in the X they are given."""
    root = _naive(prob, stop, sur)
    _skip_if_ambiguous(root)
    est = _estimator(prob, **stop, **sur).fit(prob["X"], prob["y"], sample_weight=prob["w"])
    # the strategy's codes are dense (0..L-1 among the given values), so the estimator's
    # level codes are ours and the level sets compare as they are
    assert_same_missing_tree(est.tree_max_, root)


@settings(max_examples=examples(60), **HYPOTHESIS)
@given(missing_problem(n_rows=(30, 70), n_features=(2, 3), classes=(2, 2), levels=(33, 45),
                       kinds=("cat", "cat", "num")),
       missing_stopping(), surrogate_settings())
def test_tree_with_holes_many_levels_is_the_reference_tree(prob, stop, sur):
    """Categorical features of more than 31 levels: their surrogate sides and
    competitor level sets are found again from the cases rather than kept from the
    search (two classes or regression: the ordering theorem keeps the reference fast)."""
    check_tree_with_holes(prob, stop, sur)


@pytest.mark.slow
@settings(max_examples=examples(5000), **HYPOTHESIS)
@given(missing_problem(), missing_stopping(), surrogate_settings())
def test_tree_with_holes_is_the_reference_tree_long(prob, stop, sur):
    check_tree_with_holes(prob, stop, sur)


@settings(max_examples=examples(60), **HYPOTHESIS)
@given(missing_problem(n_features=(2, 4)), st.data())
def test_prediction_follows_the_surrogates_like_a_slow_walk(prob, data):
    """apply() with holes (and never-seen levels) in new rows: cartjit's node is the slow
    walk's over its own tables, and the reference tree's node for the same case."""
    sur = dict(max_surrogate=5, use_surrogate=data.draw(st.sampled_from([0, 1, 2])),
               surrogate_style=0, max_competitor=0)
    stop = dict(max_depth=None, min_samples_split=2, min_samples_leaf=1,
                min_impurity_decrease=0.0)
    root = _naive(prob, stop, sur)
    _skip_if_ambiguous(root)
    est = _estimator(prob, **sur).fit(prob["X"], prob["y"], sample_weight=prob["w"])
    X_new = prob["X"].copy()
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    X_new[rng.random(X_new.shape) < 0.3] = nan
    for m in prob["categorical"]:  # a level never seen in training: missing everywhere
        X_new[rng.random(X_new.shape[0]) < 0.2, m] = np.nanmax(prob["X"][:, m], initial=0) + 1
    got = est.apply(X_new)
    tree = est.tree_
    np.testing.assert_array_equal(got, flat_apply_missing(tree, X_new, sur["use_surrogate"]))
    ids = _node_ids(tree, root)
    want = [ids[id(naive_predict_missing(root, x, sur["use_surrogate"]))] for x in X_new]
    np.testing.assert_array_equal(got, want)


@settings(max_examples=examples(40), **HYPOTHESIS)
@given(missing_problem(n_features=(2, 4), copies=True), st.sampled_from([0, 1]))
def test_learning_cases_are_predicted_where_the_fit_left_them(prob, use):
    """use_surrogate 0 or 1 routes a case the same way when fitting and predicting
    (primary, then surrogates, else it stops), so apply() on the learning sample gives
    the node where each case ended during the fit: its leaf, or the split node where it
    stayed."""
    sur = dict(max_surrogate=5, use_surrogate=use, surrogate_style=0, max_competitor=0)
    stop = dict(max_depth=None, min_samples_split=2, min_samples_leaf=1,
                min_impurity_decrease=0.0)
    root = _naive(prob, stop, sur)
    _skip_if_ambiguous(root)
    est = _estimator(prob, **sur).fit(prob["X"], prob["y"], sample_weight=prob["w"])
    ids = _node_ids(est.tree_max_, root)
    ended = {}
    for node in naive_to_preorder(root):  # preorder: a deeper node comes later
        for r in (node.cases if node.is_leaf else node.stayed):
            ended[r] = ids[id(node)]
    rows = sorted(ended)
    assert len(rows) == root.n
    assert est.tree_ is est.tree_max_  # no ccp_alpha: apply() walks T_max
    np.testing.assert_array_equal(est.apply(prob["X"][rows]), [ended[r] for r in rows])


def _node_ids(tree, root):
    """{id(reference node): cartjit node id}, walking both trees in parallel."""
    out = {}
    stack = [(0, root)]
    while stack:
        i, node = stack.pop()
        out[id(node)] = i
        if not node.is_leaf:
            stack += [(int(tree.left[i]), node.left), (int(tree.right[i]), node.right)]
    return out


SURROGATE_ONLY = ("n_surrogates", "surrogate_start", "surrogate_feature",
                  "surrogate_threshold", "surrogate_level_row", "surrogate_low_left",
                  "surrogate_agree", "surrogate_adj", "surrogate_count")
LEVEL_TABLE = ("level_row", "level_sets")
COMPETITOR_ONLY = ("n_competitors", "competitor_start", "competitor_feature",
                   "competitor_threshold", "competitor_level_row", "competitor_improvement",
                   "competitor_count")


def _primary_sets(tree):
    """{node: (left levels, right levels)} of the subset splits of a flat tree."""
    return {i: (level_set(tree.level_sets[r, 0]), level_set(tree.level_sets[r, 1]))
            for i, r in enumerate(tree.level_row) if r >= 0}


def _complete(prob):
    X = np.where(np.isnan(prob["X"]), 0.0, prob["X"])
    return dict(prob, X=X)


def _estimator(prob, **kw):
    if prob["task"] == "regression":
        return CARTRegressor(categorical_features=prob["categorical"], **kw)
    return CARTClassifier(criterion=prob["criterion"], priors=prob["priors"],
                          cost=prob["cost"], categorical_features=prob["categorical"], **kw)


@settings(max_examples=examples(100), **HYPOTHESIS)
@given(missing_problem(), missing_stopping(), surrogate_settings())
def test_complete_data_surrogates_change_nothing_else(prob, stop, sur):
    """No hole anywhere: surrogates and competitors change no other field of the tree
    (compared array by array with a fit that asks for neither)."""
    prob = _complete(prob)
    none = dict(sur, max_surrogate=0, max_competitor=0)
    plain, rich = fit_engine(prob, stop, none), fit_engine(prob, stop, sur)
    for name in Tree._fields:
        if name in SURROGATE_ONLY or name in COMPETITOR_ONLY or name in LEVEL_TABLE:
            continue
        np.testing.assert_array_equal(getattr(plain, name), getattr(rich, name),
                                      err_msg=f"{name} with {sur}")
    # the level-set table also holds the rows of subset competitors and surrogates: the
    # primary splits' sets must be the same, wherever their rows are
    assert _primary_sets(plain) == _primary_sets(rich)
    assert not plain.has_surrogates and not np.any(plain.n_competitors)
    split = rich.left != -1
    np.testing.assert_array_equal(rich.n_primary[split], rich.n_node_samples[split])
    np.testing.assert_array_equal(rich.n_primary[~split], 0)


@settings(max_examples=examples(30), **HYPOTHESIS)
@given(missing_problem(), missing_stopping())
def test_estimators_ask_for_surrogates_only_with_holes(prob, stop):
    """max_surrogate="auto": none on complete data (the tree of max_surrogate=0), five
    when the training X has a hole (the tree of max_surrogate=5)."""
    for X in (_complete(prob)["X"], prob["X"]):
        data = dict(prob, X=X)
        trees = [_estimator(data, max_surrogate=k, **stop)
                 .fit(X, prob["y"], sample_weight=prob["w"]).tree_ for k in ("auto", 0, 5)]
        same = trees[2] if np.isnan(X).any() else trees[1]
        for name in Tree._fields:
            np.testing.assert_array_equal(getattr(trees[0], name), getattr(same, name),
                                          err_msg=name)


@settings(max_examples=examples(25), **HYPOTHESIS)
@given(missing_problem(n_rows=(12, 40)), missing_stopping(), surrogate_settings())
def test_complete_data_cv_tables_do_not_depend_on_surrogates(prob, stop, sur):
    """No hole, ordered features: the cross-validation tables
    (``cartjit.engine.cv.cross_validate``, 3 folds) are the same with and without surrogates
    and competitors, to the last bit. (A categorical level that a fold tree's node never
    saw is missing there: surrogates route it, so with categorical features the tables
    may differ.)"""
    import pandas as pd

    prob = dict(_complete(prob), categorical=[])
    assume(prob["w"] is None or np.count_nonzero(prob["w"]) >= 3)
    tables = []
    for k in (dict(sur, max_surrogate=0, max_competitor=0), sur):
        problem, settings_ = problem_and_settings(prob, stop, k)
        res = cross_validate(problem, settings_, 3, random_state=0)
        tables.append(pd.DataFrame(res.table))
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)


@settings(max_examples=examples(10), **HYPOTHESIS)
@given(missing_problem(task="classification", n_rows=(12, 40), real_weights=False))
def test_complete_data_cv_estimator_does_not_depend_on_surrogates(prob):
    import pandas as pd

    prob = dict(_complete(prob), categorical=[])
    tables = []
    for k in (0, 5):
        est = CARTClassifierCV(criterion=prob["criterion"], priors=prob["priors"],
                               cost=prob["cost"], categorical_features=prob["categorical"],
                               cv=3, random_state=0, max_surrogate=k)
        est.fit(prob["X"], prob["y"], sample_weight=prob["w"])
        tables.append(pd.DataFrame(est.cv_results_))
    pd.testing.assert_frame_equal(tables[0], tables[1], check_exact=True)


# ----------------------------------------------------------------------------------------
# the reference against R's rpart (root node: primary, competitors, surrogates, routing)


def _rpart_runner():
    """tests/parity/rpart_runner.py, or a skip (a failure with CARTJIT_REQUIRE_R=1)."""
    from parity import rpart_runner
    if not rpart_runner.have_rpart():
        if os.environ.get("CARTJIT_REQUIRE_R", "").strip() == "1":
            pytest.fail("Rscript with rpart is required (CARTJIT_REQUIRE_R=1)")
        pytest.skip("Rscript with the rpart package not found")
    return rpart_runner


def _random_rpart_problem(rng):
    """A small sample with holes: integer features (some categorical), y, weights."""
    n, p = int(rng.integers(10, 40)), int(rng.integers(2, 5))
    categorical = [m for m in range(p) if rng.random() < 0.3]
    X = np.empty((n, p))
    for m in range(p):
        X[:, m] = rng.integers(0, rng.integers(2, 5) if m in categorical else 8, n)
        X[rng.random(n) < rng.choice([0.0, 0.1, 0.3]), m] = nan
        given = ~np.isnan(X[:, m])
        if m in categorical and given.any():
            X[given, m] = np.unique(X[given, m], return_inverse=True)[1]
    task = "class" if rng.random() < 0.6 else "anova"
    if task == "class":
        y = np.unique(rng.integers(0, rng.integers(2, 4), n), return_inverse=True)[1]
    else:
        y = rng.integers(-3, 4, n).astype(float)
    w = None if rng.random() < 0.6 else rng.integers(1, 4, n).astype(float)
    return dict(X=X, y=y, w=w, categorical=categorical, task=task,
                style=int(rng.integers(0, 2)), use=int(rng.integers(0, 3)))


def _rpart_frame(prob):
    import pandas as pd

    X = prob["X"]
    df = pd.DataFrame({
        f"x{m}": (pd.Series([None if math.isnan(v) else f"L{int(v)}" for v in X[:, m]])
                  if m in prob["categorical"] else X[:, m])
        for m in range(X.shape[1])})
    df["y"] = [f"c{v}" for v in prob["y"]] if prob["task"] == "class" else prob["y"]
    return df


def _rpart_levels(result, var, row, ncat):
    """(levels to node 2k, levels to node 2k+1) of row ``row`` (1-based) of csplit."""
    names = result["factor_levels"][var]
    codes = result["csplit"].iloc[int(round(row)) - 1].to_numpy()[:ncat]
    first = frozenset(int(v[1:]) for v, c in zip(names, codes) if int(c) == 1)
    second = frozenset(int(v[1:]) for v, c in zip(names, codes) if int(c) == 3)
    return first, second


def _same_as_rpart_node(node, k, res, prob):
    """Compare the reference node ``node`` with rpart's node number ``k`` (its size,
    split, competitors, surrogates) and recurse into the children; returns the number of
    split nodes compared. A subtree under an ambiguous node, or under an exact tie that
    rpart's rounding broke the other way, is not compared."""
    frame = res["frame"].set_index("node")
    assert int(frame.n[k]) == node.n, f"node {k}: n"
    rows = res["all_splits"][res["all_splits"].node == k]
    assert node.is_leaf == rows.empty, f"node {k}: leaf"
    if node.is_leaf or node.ambiguous:
        return 0
    prim = rows[rows.kind == "primary"].iloc[0]
    # rpart's improve is ours times W(root) p(t) (classification, empirical priors: the
    # node's weight W(t)), or ΔSS / SS(t) = ours / i(t) (anova)
    unit = node.weighted_n if prob["task"] == "class" else 1.0 / node.impurity
    assert float(prim.improve) / unit == pytest.approx(node.delta, rel=1e-9)
    if prim["var"] != f"x{node.feature}":
        return 0  # an exact tie between features, decided by rounding in rpart
    if prim.ncat >= 2:
        first, second = _rpart_levels(res, prim["var"], prim["index"], prim.ncat)
        if {first, second} != {node.left_levels, node.right_levels}:
            return 0  # an exact tie between partitions, decided by rounding in rpart
        flip = first != node.left_levels
    else:
        if prim["index"] != node.threshold:
            return 0  # an exact tie between thresholds
        flip = prim.ncat == 1  # rpart sends x >= threshold to node 2k
    assert int(prim["count"]) == node.n_primary
    comp = rows[rows.kind == "competitor"]
    theirs = [(v, i / unit, c) for v, i, c in zip(comp["var"], comp.improve, comp["count"])]
    mine = [(f"x{c.feature}", c.improvement, c.count) for c in node.competitors]
    # the same values in the same order; features may swap only where values tie
    # (rpart orders exact ties by the rounding of its floats)
    assert [i for _, i, _ in theirs] == pytest.approx([i for _, i, _ in mine], rel=1e-9)
    theirs, mine = ({v: (i, c) for v, i, c in rows_} for rows_ in (theirs, mine))
    assert theirs.keys() == mine.keys()
    for v in mine:
        assert theirs[v][0] == pytest.approx(mine[v][0], rel=1e-9) and \
            theirs[v][1] == mine[v][1], v
    if flip and node.orientation_ties:
        # a categorical surrogate sent a tied level by the default direction, which
        # names the children the other way round in rpart: not comparable from here on
        return 1
    sur = rows[rows.kind == "surrogate"]
    assert list(sur["var"]) == [f"x{s.feature}" for s in node.surrogates]
    for s, (_, r) in zip(node.surrogates, sur.iterrows()):
        assert float(r.improve) == pytest.approx(s.agree, rel=1e-12)
        assert float(r.adj) == pytest.approx(s.adj, rel=1e-9, abs=1e-12)
        if prob["use"] > 0:
            assert int(r["count"]) == s.count
        if r.ncat >= 2:
            first, second = _rpart_levels(res, r["var"], r["index"], r.ncat)
            assert ((second, first) if flip else (first, second)) == \
                (s.left_levels, s.right_levels)
        else:
            assert float(r["index"]) == s.threshold
            low_to_first = r.ncat == -1  # x < threshold goes to node 2k
            assert int(low_to_first != flip) == s.low_left
    first, second = (node.right, node.left) if flip else (node.left, node.right)
    return (1 + _same_as_rpart_node(first, 2 * k, res, prob)
            + _same_as_rpart_node(second, 2 * k + 1, res, prob))


def test_reference_is_rpart_on_samples_with_holes():
    """The reference (with rpart's surrogate midpoints, its default) grows rpart's
    tree (depth 3, cp < 0 so that rpart prunes nothing) on random samples with holes:
    at every node the size (after routing), the primary split and its improvement (up
    to rpart's units), the number of cases with its feature present, the competitors and
    every surrogate (split, direction, agree, adj, count). rpart breaks exact ties by the
    rounding of its floats; there the subtree is not compared."""
    runner = _rpart_runner()
    rng = np.random.default_rng(20261123)
    probs = [_random_rpart_problem(rng) for _ in range(120)]
    probs = [p for p in probs if np.unique(p["y"]).size > 1]
    jobs = [dict(df=_rpart_frame(p), target="y",
                 features=[f"x{m}" for m in range(p["X"].shape[1])], method=p["task"],
                 weights=p["w"],
                 control=dict(cp=-1, minsplit=2, minbucket=1, maxcompete=4, maxsurrogate=5,
                              usesurrogate=p["use"], surrogatestyle=p["style"], maxdepth=3))
            for p in probs]
    compared = 0
    for prob, res in zip(probs, runner.run_rpart_many(jobs)):
        root = naive_grow_missing(
            prob["X"], prob["y"], prob["w"], categorical=prob["categorical"], max_depth=3,
            task="classification" if prob["task"] == "class" else "regression",
            max_surrogate=5, use_surrogate=prob["use"], surrogate_style=prob["style"],
            max_competitor=4, rpart_midpoints=True)
        compared += _same_as_rpart_node(root, 1, res, prob)
    assert compared > 300


def test_surrogate_threshold_takes_the_next_value_of_the_node():
    # Cases 0-3 have the primary (L L R R) and x1 = 0 0 3 3: the cut between 0 and 3 is
    # perfect. Case 4 misses the primary and has x1 = 1: rpart's midpoint is taken with
    # the next value of x1 among all the node's cases, 0.5 (not 1.5), so that case 4
    # goes with the values above the cut.
    X = np.array([[0, 0], [0, 0], [0, 3], [0, 3], [0, 1]], float)
    [s], _, _, _ = surrogates_given(X, [1, 1, 0, 0, -1], primary_feature=0)
    assert (s.threshold, s.low_left, s.agree) == (0.5, 1, 1.0)
    [s], _, _, _ = surrogates_given(X, [1, 1, 0, 0, -1], primary_feature=0,
                                    rpart_midpoints=False)
    assert s.threshold == 1.5
