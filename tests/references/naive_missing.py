"""A slow, obviously-correct reference for missing values: one node's work, then a grower.

Plain Python over lists, written to be read next to docs/maths.md (missing values and
surrogate splits); the split search itself, the impurities and the tie rules are those of
``naive.py``, applied to the cases whose feature is present. Sums of case weights
that decide a surrogate (agreements, majorities, the direction of a level) are exact
rationals (:class:`fractions.Fraction` of the float weights), so that a tie is a tie.

X holds NaN for a missing value, in ordered and categorical columns alike (categorical
columns hold level codes 0..L-1). Zero-weight cases are dropped before growing.

The work at a node t holding the cases ``idx`` (R. rpart's rules, written from scratch):

(a) Primary split. For every feature m, the cases with x_m present are searched exactly
    as ``naive.py`` searches a node (its candidates, min_samples_leaf counted on
    present cases, its per-feature tie rule), with the node totals taken over the present
    cases: Δi_present. Features compare on the goodness Δi_present · Q_present / Q(t)
    (Q = Σ_j c_j N_j, or W for regression): a later feature must beat the best by more
    than tol = 16 ε i(t). A feature with no present case, or an ordered one with a single
    present value, offers nothing. The node's ``delta`` (cartjit's ``improvement``) is the
    scaled goodness; the stopping rules of ``naive.py`` apply to it.

(b) Surrogates of the chosen split (``surrogates_for``). The cases with the primary
    feature present get a direction; lcount, rcount are their weight sums (no priors).
    For every other feature f, over the cases with the primary AND f present:

    * ordered f: the cuts between consecutive distinct values, smallest first, each with
      at least 2 cases on either side; agreement of "x <= c goes right" = w(left & x > c)
      + w(right & x <= c), of "x <= c goes left" = w(left & x <= c) + w(right & x > c).
      best starts at max(wL, wR) of these cases; at each cut "goes right" is kept if
      strictly better than best, else "goes left" if strictly better; the first cut that
      reaches the final best is the surrogate. Its threshold is the midpoint
      (``cartjit.engine.scans.threshold_between``) of the cut's lower value a and the next
      value b' of f among ALL the node's cases with f present, those missing the primary
      feature included, as rpart computes it (rpart walks the node's cases sorted by f
      and takes the midpoint with the previous value seen); b' can be smaller than the
      next both-present value, and then a case missing the primary with a value between
      b' and that value goes above the threshold. ``rpart_midpoints=False`` takes the
      next both-present value instead. No strict improvement: no surrogate on f.
    * categorical f: per level, wl, wr (weights of cases going left / right) and nl, nr
      (their numbers); defdir = left if Σwl > Σwr else right; a level with no case goes
      nowhere; else right if wl < wr or (wl == wr and defdir is right), else left.
      agree = Σ of the chosen sides' weights; accepted only if the cases on the sides
      not chosen number more than 1 and those on the sides chosen more than 1.
    * surrogate_style 0: total = lcount + rcount, majority = max(lcount, rcount);
      style 1: total = wL + wR and majority = max(wL, wR) over the both-present cases.
      agree /= total; adj = (agree - majority/total) / (1 - majority/total); kept only
      if adj > 1e-10.

    Ranked by agree, descending (a later feature goes first only if strictly greater);
    the first ``max_surrogate`` are kept.

(c) Routing (``route``). A case missing the primary feature goes where the first
    surrogate that can route it sends it (its feature present; for a categorical one,
    its level in one of the two sets) when use_surrogate >= 1; else, with use_surrogate
    == 2, left if lcount > rcount, right if lcount < rcount; otherwise it stays in t
    (in neither child). ``surrogate_count`` counts the cases each surrogate routed.

(d) Competitors: every other feature's best split (its goodness > tol, as a primary),
    ranked by goodness descending, ties in feature order, the first ``max_competitor``;
    ``count`` = the node's cases with that feature present.

(e) ``naive_grow_missing`` grows a whole tree from (a)-(d); node sizes, values,
    impurities, risks and labels are over every case of the node. ``majority_left`` (the
    prediction's last resort) compares the children's numbers of cases: 1 left, 0 right,
    -1 when equal. ``n_primary``: the node's cases with the split feature present.

Ambiguity: ``node.ambiguous`` is set (as in ``naive.py``) where float rounding
could choose another primary split or stop, and also where a surrogate's choice, rank,
acceptance or the fit-time majority rests on weight sums that tie up to rounding (some
weight not a multiple of 2^-10, so that float sums in another order may round the other
way). ``node.competitors_ambiguous`` marks a competitor table whose order or cut rests on
a near tie (it changes no routing).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional

import numpy as np

from .naive import (NEAR_TIE_REL, TOL_FACTOR, NaiveNode, _Problem, assert_same_tree, level_set,
                    naive_to_preorder)

from cartjit.engine.scans import threshold_between

__all__ = ["Surrogate", "Competitor", "MissingNode", "naive_grow_missing", "node_work",
           "surrogates_given", "route", "assert_same_missing_tree", "naive_predict_missing",
           "flat_apply_missing", "WEIGHT_TIE_REL", "ADJ_MIN"]

#: rpart keeps a surrogate only if its adjusted agreement exceeds this.
ADJ_MIN = 1e-10
#: Weight sums closer than this (relative to the node's weight) tie up to rounding when
#: some weight is not a small dyadic number.
WEIGHT_TIE_REL = 1e-12
LEFT, RIGHT = 1, 0


@dataclass
class Surrogate:
    """One surrogate split; ``low_left`` is 1 when ``x <= threshold`` goes left (ordered
    feature); a categorical one has ``left_levels``/``right_levels`` and a NaN threshold."""

    feature: int
    threshold: float
    low_left: int
    left_levels: Optional[frozenset]
    right_levels: Optional[frozenset]
    agree: float
    adj: float
    agree_exact: Fraction = Fraction(0)
    count: int = 0

    def direction(self, x) -> Optional[int]:
        """LEFT, RIGHT, or None when it cannot route a case whose value is ``x``."""
        if math.isnan(x):
            return None
        if self.left_levels is None:
            low = x <= self.threshold
            return LEFT if low == bool(self.low_left) else RIGHT
        if x != math.floor(x):
            return None
        if int(x) in self.left_levels:
            return LEFT
        if int(x) in self.right_levels:
            return RIGHT
        return None


@dataclass
class Competitor:
    feature: int
    threshold: float
    left_levels: Optional[frozenset]
    right_levels: Optional[frozenset]
    improvement: float
    count: int


@dataclass
class MissingNode(NaiveNode):
    """A node of the reference tree with the missing-value fields."""

    n_primary: int = 0
    surrogates: list = field(default_factory=list)
    competitors: list = field(default_factory=list)
    stayed: list = field(default_factory=list)  # cases missing the primary, in no child
    lcount: float = 0.0
    rcount: float = 0.0
    competitors_ambiguous: bool = False
    why_ambiguous: str = ""
    #: categorical surrogate candidates whose levels were sent by the default direction
    #: on an exact tie (Σwl == Σwr and a level with wl == wr): with the two children
    #: named the other way round (as rpart may orient a split), they would go the other way
    orientation_ties: list = field(default_factory=list)


@dataclass
class _FeatureBest:
    """The best split of one feature at a node, on its present cases."""

    feature: int
    split: object           # naive._Split (delta: Δi on the present cases)
    present: list
    goodness: float         # Δi_present · Q_present / Q(t)
    ambiguous: bool         # another split of this feature could win by rounding
    alt_goodness: float = -math.inf  # best scaled Δ another breaking of key ties offers


class _MissingProblem(_Problem):
    """``naive.py``'s problem with the search and growth of the module docstring."""

    def __init__(self, *args, max_surrogate=0, use_surrogate=2, surrogate_style=0,
                 max_competitor=0, rpart_midpoints=True, **kw):
        super().__init__(*args, **kw)
        self.max_surrogate = max_surrogate
        self.use_surrogate = use_surrogate
        self.surrogate_style = surrogate_style
        self.max_competitor = max_competitor
        self.rpart_midpoints = rpart_midpoints
        self.wf = [Fraction(v) for v in self.w]

    # -- helpers -------------------------------------------------------------------------

    def present(self, idx, m):
        return [i for i in idx if not math.isnan(self.X[i][m])]

    def dyadic(self, idx) -> bool:
        return self.exact_weights(idx)

    def weight_tie(self, a: Fraction, b: Fraction, idx) -> bool:
        """Whether float sums could order a and b otherwise than the exact ones (equal
        ones included: sums of the same weights in another order may differ)."""
        if self.dyadic(idx):
            return False
        scale = sum((self.wf[i] for i in idx), Fraction(0))
        return abs(a - b) <= Fraction(WEIGHT_TIE_REL) * scale

    # -- (a) the primary split and the competitors ----------------------------------------

    def _judge_feature(self, split, feasible, alts, i_p) -> bool:
        """``naive.py``'s near-tie test within one feature's present cases."""
        tol, margin = TOL_FACTOR * i_p, NEAR_TIE_REL * i_p
        mine = split.partition()
        d = split.delta
        near = any(tol < abs(s.delta - d) <= margin for s in feasible
                   if s.partition() != mine)
        near |= split.inside_tie
        near |= any(s.delta >= d - margin and (s.partition() != mine)
                    for s in alts)
        return near

    def feature_bests(self, idx):
        """Every feature's best split at the node (features offering none left out)."""
        out = []
        self.unsure_features = set()
        Q = self.mass(idx)
        for m in range(self.n_features):
            p = self.present(idx, m)
            if not p:
                continue
            i_p = self.impurity(p)
            found, feasible, alts = self.best_of_feature(p, m, i_p)
            if found is None:
                # another breaking of tied level keys could offer an allowed split
                if any(s.delta > TOL_FACTOR * i_p for s in alts):
                    self.unsure_features.add(m)
                continue
            scale = self.mass(p) / Q
            goodness = found.delta * scale
            alt = max((s.delta for s in alts), default=-math.inf) * scale
            out.append(_FeatureBest(m, found, p, goodness,
                                    self._judge_feature(found, feasible, alts, i_p), alt))
        return out

    def choose(self, bests, i_t):
        """The primary: a later feature must beat the best goodness by more than tol."""
        tol = TOL_FACTOR * i_t
        best, found = -math.inf, None
        for fb in bests:
            if fb.goodness > best + tol:
                best, found = fb.goodness, fb
        return found

    def competitors_of(self, bests, primary, i_t):
        """(competitor rows, whether their order or cut rests on a near tie)."""
        tol = TOL_FACTOR * i_t
        margin = NEAR_TIE_REL * max([i_t] + [self.impurity(fb.present) for fb in bests])
        others = [fb for fb in bests if fb.feature != primary.feature]
        kept = [fb for fb in others if fb.goodness > tol]
        # a goodness near zero (above rounding noise) may fall either side of tol
        ambiguous = any(tol / 2 < fb.goodness <= margin for fb in others)
        ranked = sorted(kept, key=lambda fb: -fb.goodness)  # stable: feature order on ties
        for a, b in zip(ranked[:-1], ranked[1:]):
            # (an exact tie too: two features' goodness, computed by different sums,
            # can differ in the last bits; which comes first is then left to rounding)
            if abs(a.goodness - b.goodness) <= margin:
                ambiguous = True
        chosen = ranked[:self.max_competitor]
        ambiguous |= any(fb.ambiguous for fb in chosen)
        rows = [Competitor(fb.feature, fb.split.threshold, fb.split.left_levels,
                           fb.split.right_levels, fb.goodness, len(fb.present))
                for fb in chosen]
        return rows, ambiguous

    def primary_ambiguous(self, idx, bests, primary, i_t) -> str:
        """Why rounding could pick another primary split or stop ('' when it could not)."""
        tol = TOL_FACTOR * i_t
        margin = NEAR_TIE_REL * max([i_t] + [self.impurity(fb.present) for fb in bests])
        if primary.ambiguous:
            return "near tie within the split feature"
        if self.unsure_features:
            return f"ordering ties of feature(s) {sorted(self.unsure_features)}"
        d = primary.goodness
        for fb in bests:
            if fb is not primary and tol < abs(fb.goodness - d) <= margin:
                return f"near tie with feature {fb.feature}"
            if fb is not primary and fb.alt_goodness >= d - margin:
                return f"ordering ties of feature {fb.feature}"
        if tol < d <= margin:
            return "goodness close to zero"
        if self.min_impurity_decrease > 0:
            p_t = self.mass(idx) / self.root_mass
            gap = abs(p_t * d - self.min_impurity_decrease)
            if p_t * tol < gap <= p_t * margin:
                return "close to min_impurity_decrease"
        return ""

    # -- (b) surrogates --------------------------------------------------------------------

    def directions(self, idx, fb):
        """{case: LEFT/RIGHT} from the primary split, for its present cases."""
        left = set(fb.split.left)
        return {i: (LEFT if i in left else RIGHT) for i in fb.present}

    def surrogates_for(self, idx, fb):
        """(the node's surrogate rows ranked and cut, lcount, rcount, ambiguity reason)
        of the primary split ``fb``."""
        return self.surrogates_from_directions(idx, self.directions(idx, fb), fb.feature)

    def surrogates_from_directions(self, idx, dirs, primary_feature):
        """As ``surrogates_for``, the primary split given by ``dirs`` ({case: LEFT or
        RIGHT} for the cases with the primary feature present)."""
        D = [i for i in idx if i in dirs]
        self.orientation_ties = []
        self.tie_left, self.tie_left_close = self._rpart_right_is_left(D, dirs)
        lcount = sum((self.wf[i] for i in D if dirs[i] == LEFT), Fraction(0))
        rcount = sum((self.wf[i] for i in D if dirs[i] == RIGHT), Fraction(0))
        why = ""
        rows = []
        for f in range(self.n_features):
            if f == primary_feature:
                continue
            B = [i for i in D if not math.isnan(self.X[i][f])]
            if not B:
                continue
            if f in self.categorical:
                got, w = self._categorical_surrogate(f, B, dirs)
            else:
                got, w = self._ordered_surrogate(f, B, dirs, idx)
            why = why or w
            if got is None:
                continue
            agree_sum, s = got
            wL = sum((self.wf[i] for i in B if dirs[i] == LEFT), Fraction(0))
            wR = sum((self.wf[i] for i in B if dirs[i] == RIGHT), Fraction(0))
            if self.surrogate_style == 0:
                total, majority = lcount + rcount, max(lcount, rcount)
            else:
                total, majority = wL + wR, max(wL, wR)
            agree = agree_sum / total
            maj = majority / total
            adj = (agree - maj) / (1 - maj)
            if Fraction(ADJ_MIN) / 2 < adj <= 2 * Fraction(ADJ_MIN):
                why = why or f"surrogate {f}: adj {float(adj)!r} close to {ADJ_MIN}"
            if not adj > Fraction(ADJ_MIN):
                continue
            s.agree, s.adj, s.agree_exact = float(agree), float(adj), agree
            rows.append(s)
        ranked = sorted(rows, key=lambda s: -s.agree_exact)  # stable: feature order on ties
        for a, b in zip(ranked[:-1], ranked[1:]):
            if abs(a.agree_exact - b.agree_exact) <= \
                    Fraction(WEIGHT_TIE_REL) and not self.dyadic(D):
                why = why or f"surrogates {a.feature} and {b.feature} tie up to rounding"
        if self.weight_tie(lcount, rcount, D):
            why = why or "lcount and rcount tie up to rounding"
        return ranked[:self.max_surrogate], lcount, rcount, why

    def _ordered_surrogate(self, f, B, dirs, idx):
        """((agree_sum, Surrogate) or None, ambiguity reason) of ordered feature f."""
        xs = sorted({self.X[i][f] for i in B})
        wL = sum((self.wf[i] for i in B if dirs[i] == LEFT), Fraction(0))
        wR = sum((self.wf[i] for i in B if dirs[i] == RIGHT), Fraction(0))
        best = max(wL, wR)
        found = None
        why = ""
        node_values = sorted({self.X[i][f] for i in idx if not math.isnan(self.X[i][f])})
        for a, b in zip(xs[:-1], xs[1:]):
            low = [i for i in B if self.X[i][f] <= a]
            high = [i for i in B if self.X[i][f] > a]
            if len(low) < 2 or len(high) < 2:
                continue
            goes_right = (sum((self.wf[i] for i in high if dirs[i] == LEFT), Fraction(0))
                          + sum((self.wf[i] for i in low if dirs[i] == RIGHT), Fraction(0)))
            goes_left = (sum((self.wf[i] for i in low if dirs[i] == LEFT), Fraction(0))
                         + sum((self.wf[i] for i in high if dirs[i] == RIGHT), Fraction(0)))
            for value in (goes_right, goes_left):
                if self.weight_tie(value, best, B):
                    why = f"surrogate {f}: agreements tie up to rounding"
            if self.rpart_midpoints:
                b = min(v for v in node_values if v > a)
            c = threshold_between(a, b)
            if goes_right > best:
                best, found = goes_right, Surrogate(f, c, 0, None, None, 0.0, 0.0)
            elif goes_left > best:
                best, found = goes_left, Surrogate(f, c, 1, None, None, 0.0, 0.0)
        if found is None:
            return None, why
        return (best, found), why

    def _rpart_right_is_left(self, D, dirs):
        """(whether rpart numbers our left child 2k+1, whether that is close to a tie):
        rpart's 2k is the child of the smaller mean class number Σ_j j p(j | child)
        under the split-search priors (c_j), or the smaller mean response; on equal
        means the low side, our left, is its 2k+1. Exact sums over the primary feature's
        present cases ``D``."""
        num = {LEFT: Fraction(0), RIGHT: Fraction(0)}
        den = {LEFT: Fraction(0), RIGHT: Fraction(0)}
        for i in D:
            if self.task == "classification":
                a = Fraction(self.c[self.y[i]]) * self.wf[i]
                b = a * self.y[i]
            else:
                a = self.wf[i]
                b = a * Fraction(self.y[i])
            num[dirs[i]] += b
            den[dirs[i]] += a
        lhs, rhs = num[LEFT] * den[RIGHT], num[RIGHT] * den[LEFT]
        close = abs(lhs - rhs) <= Fraction(1, 10**9) * (abs(lhs) + abs(rhs))
        return not lhs < rhs, close and lhs != rhs

    def _categorical_surrogate(self, f, B, dirs):
        """((agree_sum, Surrogate) or None, ambiguity reason) of categorical feature f."""
        levels = sorted({int(self.X[i][f]) for i in B})
        wl = {c: Fraction(0) for c in levels}
        wr = {c: Fraction(0) for c in levels}
        nl = {c: 0 for c in levels}
        nr = {c: 0 for c in levels}
        for i in B:
            c = int(self.X[i][f])
            if dirs[i] == LEFT:
                wl[c] += self.wf[i]
                nl[c] += 1
            else:
                wr[c] += self.wf[i]
                nr[c] += 1
        why = ""
        sum_l, sum_r = sum(wl.values(), Fraction(0)), sum(wr.values(), Fraction(0))
        if self.weight_tie(sum_l, sum_r, B):
            why = f"surrogate {f}: default direction ties up to rounding"
        # on equal sums, the child rpart numbers 2k+1 (see _rpart_right_is_left)
        default_right = not (sum_l > sum_r or (sum_l == sum_r and self.tie_left))
        left, right = set(), set()
        agree = Fraction(0)
        chosen_n = other_n = 0
        for c in levels:
            if nl[c] + nr[c] == 0:
                continue
            if self.weight_tie(wl[c], wr[c], B):
                why = why or f"surrogate {f}: level {c} ties up to rounding"
            if wl[c] == wr[c] and sum_l == sum_r:
                if f not in self.orientation_ties:
                    self.orientation_ties.append(f)
                if self.tie_left_close:
                    why = why or f"surrogate {f}: the children's mean classes tie up to rounding"
            if wl[c] < wr[c] or (wl[c] == wr[c] and default_right):
                right.add(c)
                agree += wr[c]
                chosen_n += nr[c]
                other_n += nl[c]
            else:
                left.add(c)
                agree += wl[c]
                chosen_n += nl[c]
                other_n += nr[c]
        if not (other_n > 1 and chosen_n > 1):
            return None, why
        s = Surrogate(f, math.nan, -1, frozenset(left), frozenset(right), 0.0, 0.0)
        return (agree, s), why

    # -- (c) routing -------------------------------------------------------------------------

    def route(self, idx, fb, surrogates, lcount, rcount):
        """(left cases, right cases, cases staying) of the split, counting each
        surrogate's routed cases in ``Surrogate.count``."""
        left = set(fb.split.left)
        go_left, go_right, stay = [], [], []
        present = set(fb.present)
        for i in idx:
            if i in present:
                (go_left if i in left else go_right).append(i)
                continue
            d = None
            if self.use_surrogate >= 1:
                for s in surrogates:
                    d = s.direction(self.X[i][s.feature])
                    if d is not None:
                        s.count += 1
                        break
            if d is None and self.use_surrogate == 2 and lcount != rcount:
                d = LEFT if lcount > rcount else RIGHT
            if d is None:
                stay.append(i)
            else:
                (go_left if d == LEFT else go_right).append(i)
        return go_left, go_right, stay

    # -- (e) the grower ---------------------------------------------------------------------

    def record(self, idx, depth) -> MissingNode:
        base = super().record(idx, depth)
        return MissingNode(**{k: getattr(base, k) for k in base.__dataclass_fields__})

    def grow(self, idx, depth) -> MissingNode:
        node = self.record(idx, depth)
        if self.is_pure(idx):
            return node
        if len(idx) < self.min_samples_split:
            return node
        if self.max_depth is not None and depth >= self.max_depth:
            return node
        i_t = node.impurity
        tol = TOL_FACTOR * i_t
        bests = self.feature_bests(idx)
        primary = self.choose(bests, i_t)
        if primary is None:
            node.ambiguous = bool(self.unsure_features)
            return node
        node.why_ambiguous = self.primary_ambiguous(idx, bests, primary, i_t)
        node.second_delta = max((fb.goodness for fb in bests if fb is not primary),
                                default=-math.inf)
        d = primary.goodness
        if d <= tol:
            node.ambiguous = bool(node.why_ambiguous)
            return node
        p_t = self.mass(idx) / self.root_mass
        if p_t * (d + tol) < self.min_impurity_decrease:
            node.ambiguous = bool(node.why_ambiguous)
            return node
        split = primary.split
        node.feature, node.threshold, node.delta = primary.feature, split.threshold, d
        node.left_levels, node.right_levels = split.left_levels, split.right_levels
        node.n_primary = len(primary.present)
        if self.max_surrogate > 0:
            surrogates, lcount, rcount, why = self.surrogates_for(idx, primary)
            node.orientation_ties = list(self.orientation_ties)
        else:
            surrogates, why = [], ""
            dirs = self.directions(idx, primary)
            lcount = sum((self.wf[i] for i in dirs if dirs[i] == LEFT), Fraction(0))
            rcount = sum((self.wf[i] for i in dirs if dirs[i] == RIGHT), Fraction(0))
            if self.weight_tie(lcount, rcount, list(dirs)):
                why = "lcount and rcount tie up to rounding"
        node.why_ambiguous = node.why_ambiguous or why
        node.ambiguous = bool(node.why_ambiguous)
        node.surrogates = surrogates
        node.lcount, node.rcount = float(lcount), float(rcount)
        go_left, go_right, node.stayed = self.route(idx, primary, surrogates, lcount, rcount)
        if self.max_competitor > 0:
            node.competitors, node.competitors_ambiguous = self.competitors_of(
                bests, primary, i_t)
        node.majority_left = (1 if len(go_left) > len(go_right)
                              else 0 if len(go_left) < len(go_right) else -1)
        node.majority_ambiguous = False
        node.left = self.grow(go_left, depth + 1)
        node.right = self.grow(go_right, depth + 1)
        return node


# ------------------------------------------------------------------------------------------
# entry points


def _make_problem(X, y, sample_weight, task, n_classes, criterion, priors, cost, max_depth,
                  min_samples_split, min_samples_leaf, min_impurity_decrease, categorical,
                  max_categories_exhaustive, surrogate_kw):
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if criterion is None:
        criterion = "gini" if task == "classification" else "squared_error"
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d, got shape {X.shape}")
    if np.any(np.isinf(X)):
        raise ValueError("X must hold finite numbers or NaN (missing)")
    cats = frozenset(int(m) for m in (categorical or ()))
    for m in cats:
        if not 0 <= m < X.shape[1]:
            raise ValueError(f"categorical must hold feature indices in 0..{X.shape[1] - 1}, "
                             f"got {m}")
        col = X[:, m][~np.isnan(X[:, m])]
        if np.any(col < 0) or np.any(col != np.floor(col)):
            raise ValueError(f"categorical feature {m} must hold level codes (integers >= 0) "
                             "or NaN")
    for name, value, allowed in (("use_surrogate", surrogate_kw["use_surrogate"], (0, 1, 2)),
                                 ("surrogate_style", surrogate_kw["surrogate_style"], (0, 1))):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    for name in ("max_surrogate", "max_competitor"):
        value = surrogate_kw[name]
        if not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    n = X.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite and >= 0")
    keep = w > 0
    if not np.any(keep):
        raise ValueError("no case has positive weight")
    Xl = [[float(v) for v in row] for row in X[keep]]
    wl = [float(v) for v in w[keep]]
    y = np.asarray(y)
    if task == "classification":
        yl = [int(v) for v in y[keep]]
        if n_classes is None:
            n_classes = int(np.max(y)) + 1
    else:
        yl = [float(v) for v in y[keep]]
    prob = _MissingProblem(Xl, yl, wl, task, n_classes, criterion, priors, cost, max_depth,
                           min_samples_split, min_samples_leaf, min_impurity_decrease, cats,
                           max_categories_exhaustive, "cartjit", **surrogate_kw)
    prob.W_root = math.fsum(wl)
    prob.root_mass = prob.mass(list(range(len(yl))))
    return prob, np.flatnonzero(keep)


def naive_grow_missing(X, y, sample_weight=None, *, task="classification", n_classes=None,
                       criterion=None, priors="empirical", cost=None, max_depth=None,
                       min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0,
                       categorical=None, max_categories_exhaustive=12, max_surrogate=0,
                       use_surrogate=2, surrogate_style=0, max_competitor=0,
                       rpart_midpoints=True):
    """Grow the reference tree of the module docstring; return the root MissingNode.

    Arguments as ``naive.py``'s ``naive_grow``, X with NaN for missing values, and
    the surrogate settings (rpart's maxsurrogate, usesurrogate, surrogatestyle,
    maxcompete). ``MissingNode.cases`` and ``stayed`` hold row indices of X.
    """
    kw = dict(max_surrogate=max_surrogate, use_surrogate=use_surrogate,
              surrogate_style=surrogate_style, max_competitor=max_competitor,
              rpart_midpoints=rpart_midpoints)
    prob, rows = _make_problem(X, y, sample_weight, task, n_classes, criterion, priors, cost,
                               max_depth, min_samples_split, min_samples_leaf,
                               min_impurity_decrease, categorical, max_categories_exhaustive,
                               kw)
    root = prob.grow(list(range(len(prob.y))), 0)
    for node in naive_to_preorder(root):
        node.cases = [int(rows[i]) for i in node.cases]
        node.stayed = [int(rows[i]) for i in node.stayed]
    return root


def node_work(X, y, sample_weight=None, **kw):
    """The root's work alone: the root MissingNode of a tree of depth 1 (its primary
    split, surrogates, competitors, and the cases its children and it hold)."""
    return naive_grow_missing(X, y, sample_weight, max_depth=1, **kw)


def surrogates_given(X, directions, sample_weight=None, *, primary_feature,
                     categorical=None, max_surrogate=5, surrogate_style=0,
                     rpart_midpoints=True):
    """(b) alone: the surrogates of a primary split given by ``directions`` (one entry
    per row of X: 1 the primary sends it left, 0 right, -1 its primary feature is
    missing). Returns ``(rows, lcount, rcount, ambiguity reason)``; ``Surrogate.count``
    is 0 (nothing is routed here)."""
    X = np.asarray(X, dtype=float)
    directions = np.asarray(directions)
    if directions.shape != (X.shape[0],) or not np.all(np.isin(directions, (-1, 0, 1))):
        raise ValueError("directions must hold 1 (left), 0 (right) or -1 (missing), one "
                         f"per row of X ({X.shape[0]}), got {directions!r}")
    kw = dict(max_surrogate=max_surrogate, use_surrogate=2, surrogate_style=surrogate_style,
              max_competitor=0, rpart_midpoints=rpart_midpoints)
    prob, rows = _make_problem(X, np.zeros(X.shape[0]), sample_weight, "regression", None,
                               None, "empirical", None, None, 2, 1, 0.0, categorical, 12, kw)
    kept = directions[rows]
    dirs = {k: (LEFT if kept[k] == 1 else RIGHT) for k in range(len(rows)) if kept[k] >= 0}
    got, lcount, rcount, why = prob.surrogates_from_directions(
        list(range(len(rows))), dirs, primary_feature)
    return got, lcount, rcount, why


def route(node: MissingNode):
    """(left cases, right cases, staying cases) of a grown split node, as row indices."""
    return node.left.cases, node.right.cases, node.stayed


# ------------------------------------------------------------------------------------------
# prediction


def naive_predict_missing(root: MissingNode, x, use_surrogate=2) -> MissingNode:
    """The node of the reference tree where a case with values ``x`` ends (rpart's rule:
    primary, then surrogates in order, then the children's sizes, else it stops)."""
    node = root
    while not node.is_leaf:
        v = float(x[node.feature])
        d = None
        if not math.isnan(v):
            if node.is_subset_split:
                if v == math.floor(v) and int(v) in node.left_levels:
                    d = LEFT
                elif v == math.floor(v) and int(v) in node.right_levels:
                    d = RIGHT
            else:
                d = LEFT if v <= node.threshold else RIGHT
        if d is None and use_surrogate > 0:
            for s in node.surrogates:
                d = s.direction(float(x[s.feature]))
                if d is not None:
                    break
        if d is None and use_surrogate == 2 and node.majority_left != -1:
            d = LEFT if node.majority_left == 1 else RIGHT
        if d is None:
            return node
        node = node.left if d == LEFT else node.right
    return node


def flat_apply_missing(tree, X, use_surrogate=2) -> np.ndarray:
    """The node of cartjit's flat ``tree`` where each row of X ends, one row at a time,
    reading its surrogate table (X as the kernels see it: NaN or a code in neither set,
    -1 included, is missing at that node)."""
    X = np.asarray(X, dtype=float)
    out = np.empty(X.shape[0], dtype=np.int64)

    def direction(feature, threshold, row, low_left, v):
        if math.isnan(v):
            return None
        if row < 0:
            low = v <= threshold
            return LEFT if low == bool(low_left) else RIGHT
        if v != math.floor(v) or v < 0:
            return None
        if int(v) in level_set(tree.level_sets[row, 0]):
            return LEFT
        if int(v) in level_set(tree.level_sets[row, 1]):
            return RIGHT
        return None

    for r in range(X.shape[0]):
        i = 0
        while int(tree.left[i]) != -1:
            f = int(tree.feature[i])
            d = direction(f, float(tree.threshold[i]), int(tree.level_row[i]), 1,
                          float(X[r, f]))
            if d is None and use_surrogate > 0:
                start = int(tree.surrogate_start[i])
                for k in range(start, start + int(tree.n_surrogates[i])):
                    g = int(tree.surrogate_feature[k])
                    d = direction(g, float(tree.surrogate_threshold[k]),
                                  int(tree.surrogate_level_row[k]),
                                  int(tree.surrogate_low_left[k]), float(X[r, g]))
                    if d is not None:
                        break
            if d is None and use_surrogate == 2 and int(tree.majority_left[i]) != -1:
                d = LEFT if int(tree.majority_left[i]) == 1 else RIGHT
            if d is None:
                break
            i = int(tree.left[i]) if d == LEFT else int(tree.right[i])
        out[r] = i
    return out


# ------------------------------------------------------------------------------------------
# comparison with cartjit's flat tree


def _same_split(tree, got_row, got_threshold, got_low_left, threshold, left_levels,
                right_levels, low_left=None):
    """'' when a table row (its level row, threshold, low_left) is the reference's split
    (``low_left`` None: not compared), else what differs."""
    if left_levels is None:
        if got_row != -1:
            return f"level_row {got_row}, expected -1"
        if float(got_threshold) != threshold:
            return f"threshold {float(got_threshold)!r}, expected {threshold!r}"
        if low_left is not None and int(got_low_left) != low_left:
            return f"low_left {int(got_low_left)}, expected {low_left}"
        return ""
    if got_row < 0:
        return f"level_row {got_row}, expected a row of level_sets"
    got = (level_set(tree.level_sets[got_row, 0]), level_set(tree.level_sets[got_row, 1]))
    if got != (left_levels, right_levels):
        return (f"level sets {sorted(got[0])} | {sorted(got[1])}, expected "
                f"{sorted(left_levels)} | {sorted(right_levels)}")
    return ""


def assert_same_missing_tree(tree, root: MissingNode, *, rel=1e-9,
                             check_competitors=True) -> dict:
    """Assert that cartjit's flat ``tree`` is the reference tree ``root``: every field of
    ``naive.py``'s ``assert_same_tree`` (with ``improvement`` the scaled goodness
    and the new ``majority_left``), then ``n_primary`` and the surrogate and competitor
    rows of every split node. Competitor tables marked ambiguous are not compared;
    returns ``{"competitor_tables_skipped": k}``."""
    assert_same_tree(tree, root, rel=rel)
    skipped = 0
    stack = [(0, root, "root")]
    while stack:
        i, node, path = stack.pop()
        if node.is_leaf:
            continue

        def fail(what, got, expected):
            raise AssertionError(f"trees differ at {path} (cartjit node {i}): {what}: "
                                 f"cartjit {got!r}, naive {expected!r}")

        if int(tree.n_primary[i]) != node.n_primary:
            fail("n_primary", int(tree.n_primary[i]), node.n_primary)
        n_s = int(tree.n_surrogates[i])
        if n_s != len(node.surrogates):
            got = [int(tree.surrogate_feature[k]) for k in
                   range(int(tree.surrogate_start[i]), int(tree.surrogate_start[i]) + n_s)]
            fail("surrogate features", got, [s.feature for s in node.surrogates])
        for r, s in enumerate(node.surrogates):
            k = int(tree.surrogate_start[i]) + r
            if int(tree.surrogate_feature[k]) != s.feature:
                fail(f"surrogate {r} feature", int(tree.surrogate_feature[k]), s.feature)
            why = _same_split(tree, int(tree.surrogate_level_row[k]),
                              tree.surrogate_threshold[k], tree.surrogate_low_left[k],
                              s.threshold, s.left_levels, s.right_levels, s.low_left)
            if why:
                fail(f"surrogate {r} (x{s.feature}) split", why, "")
            for name, got, want in (("agree", tree.surrogate_agree[k], s.agree),
                                    ("adj", tree.surrogate_adj[k], s.adj)):
                if not math.isclose(float(got), want, rel_tol=rel, abs_tol=1e-12):
                    fail(f"surrogate {r} (x{s.feature}) {name}", float(got), want)
            if int(tree.surrogate_count[k]) != s.count:
                fail(f"surrogate {r} (x{s.feature}) count", int(tree.surrogate_count[k]),
                     s.count)
        if check_competitors and node.competitors_ambiguous:
            skipped += 1
        elif check_competitors:
            n_c = int(tree.n_competitors[i])
            start = int(tree.competitor_start[i])
            if n_c != len(node.competitors):
                fail("competitor features",
                     [int(tree.competitor_feature[k]) for k in range(start, start + n_c)],
                     [c.feature for c in node.competitors])
            for r, c in enumerate(node.competitors):
                k = start + r
                if int(tree.competitor_feature[k]) != c.feature:
                    fail(f"competitor {r} feature", int(tree.competitor_feature[k]),
                         c.feature)
                why = _same_split(tree, int(tree.competitor_level_row[k]),
                                  tree.competitor_threshold[k], None, c.threshold,
                                  c.left_levels, c.right_levels)
                if why:
                    fail(f"competitor {r} (x{c.feature}) split", why, "")
                if not math.isclose(float(tree.competitor_improvement[k]), c.improvement,
                                    rel_tol=rel, abs_tol=1e-12 * max(node.impurity, 1e-300)):
                    fail(f"competitor {r} (x{c.feature}) improvement",
                         float(tree.competitor_improvement[k]), c.improvement)
                if int(tree.competitor_count[k]) != c.count:
                    fail(f"competitor {r} (x{c.feature}) count",
                         int(tree.competitor_count[k]), c.count)
        cond = (f"x{node.feature} in {sorted(node.left_levels)}" if node.is_subset_split
                else f"x{node.feature} <= {node.threshold!r}")
        stack.append((int(tree.right[i]), node.right, f"{path} > R[not {cond}]"))
        stack.append((int(tree.left[i]), node.left, f"{path} > L[{cond}]"))
    return {"competitor_tables_skipped": skipped}
