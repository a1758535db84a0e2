"""A slow, obviously-correct CART grower: the reference the Numba kernels are tested against.

Everything here is plain Python over lists, written to be read next to docs/maths.md §1–3; it
is exhaustive (every feature, every candidate threshold, every node is recomputed from
scratch) and recursive. Nothing is clever and nothing is fast. Sums use ``math.fsum`` so
that the reference is as close to the real-number answer as a float can be.

Growing rules (cartjit's documented behaviour, which the kernels must match exactly):

* Zero-weight cases are dropped before growing; weights must be >= 0.
* Classification: classes 0..J-1, N_j = weighted count of class j in the learning sample,
  priors π ("empirical" N_j/N, "equal" 1/J, or given), cost ``cost[j, i]`` = C(i|j)
  (rows true class, columns predicted class). The split search uses altered priors
  π'(j) ∝ π(j) Σ_i C(i|j) (normalised) when the cost is not the default 0-1, else π.
  c_j = π'(j)/N_j, q_j(t) = c_j N_j(t), Q(t) = Σ q_j(t), p(j|t) = q_j(t)/Q(t) and
  i(t) = φ(p(·|t)) (Gini, entropy in bits; twoing searches with the twoing rule and
  records the Gini index as the impurity).
* Candidate thresholds of feature m: c = a/2 + b/2 for consecutive distinct values a < b
  of x_m in the node (c = a if that rounds to b); x_m <= c goes left. Only candidates
  with >= min_samples_leaf cases (unweighted) on each side count.
* Δ = i(t) - (Q_L/Q) i(t_L) - (Q_R/Q) i(t_R); twoing Δ = (Q_L/Q)(Q_R/Q)/4 ·
  (Σ_j |p(j|t_L) - p(j|t_R)|)²; regression uses weights W instead of Q and the weighted
  variance as i(t).
* tol = 16 ε i(t). Per feature, a candidate replaces the feature's best only if
  Δ > best_f + tol; across features (index order) a feature's best replaces the overall
  best only if Δ_f > best + tol.
* Leaf if: pure; n < min_samples_split; depth >= max_depth; no candidate; best Δ <= tol;
  p(t) (Δ + tol) < min_impurity_decrease (p(t) = Q(t)/Q(root), or W(t)/W(root) in
  regression; the tol makes p(t) Δ equal to the threshold a pass, whatever the rounding).
* Recorded per node: n, weighted n, value (true-weight class counts N_j(t), or the
  weighted mean), i(t), the risk R(t) (true priors and costs: min_i Σ_j C(i|j) π(j)
  N_j(t)/N_j; regression Σ w (y - ȳ)² / W(root)) and the label argmin_i (lowest on ties;
  computed exactly, with a 1e-12 relative tie tolerance, see ``label_and_risk``).

Categorical features (docs/maths.md §7), the features listed in ``categorical``: X holds
their level codes, non-negative integers (as floats). A split of feature m at node t is a
partition of the levels present at t into two non-empty sets; it is written as the set S
of levels on the side holding the lowest code present (that side goes left) and its
complement R. Which partitions are candidates (``subset_search``):

* ``"exhaustive"``: all 2^(L-1) - 1 of them, always (the true optimum);
* ``"cartjit"`` (cartjit's documented rules): all of them when the problem has J > 2
  classes (whatever the node holds, as rpart decides) and L <=
  ``max_categories_exhaustive`` (None: no limit); otherwise the L - 1 prefixes of an
  ordering of the levels, ties by level code: with J = 2 by p(1 | b) = q_1(b) / (q_0(b) +
  q_1(b)), in regression by the weighted mean of y in the level (both computed exactly),
  and with J > 2 above the limit by the score v · p(· | b) on the first principal
  component v of the class proportions p(· | b), weighted by Q(b) (Coppersmith, Hong and
  Hosking 1999). With min_samples_leaf = 1 the first two give the optimum of the
  exhaustive search (Breiman et al. §4.2.2, §9.4; Fisher 1958); with a larger
  min_samples_leaf they need not.

Each child needs >= min_samples_leaf cases, and Δ is computed as for a threshold. Within
a feature, among the candidates whose Δ is within tol of the feature's best, the one with
the smallest Σ_{b ∈ S} 2^b wins; across features the rule above is unchanged. Every split
node records ``majority_left``: 1 when its left child holds more cases than its right
child, 0 when fewer, -1 when as many (counts, not weights, as rpart's prediction
compares them); a case whose level is in neither set goes to that child, or stops at
the node on -1.

Each node also records ``second_delta`` (the best Δ of a candidate that partitions its
cases differently) and ``ambiguous``: whether a different but nearly as good split
(within ``NEAR_TIE_REL`` · i(t) of the best, yet not within tol), a split value close to
the stopping thresholds, or an ordering tie whose breaking would change the candidates
(except exactly equal proportions p(1 | b) under small dyadic weights, which the level
code decides), leaves the choice to float rounding (or, for the principal component, to
the accuracy of the eigenvector), so that another correct implementation could choose
otherwise. ``ambiguous_anywhere`` says whether any node of a tree is ambiguous.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Optional, Sequence

import numpy as np

__all__ = ["NaiveNode", "naive_grow", "naive_split_delta", "naive_to_preorder",
           "naive_to_flat", "count_leaves", "ambiguous_anywhere", "assert_same_tree",
           "flat_apply", "level_set"]

EPS = 2.220446049250313e-16
TOL_FACTOR = 16 * EPS
#: Relative tolerance (of p(t) · max C) within which two classes tie for the label.
LABEL_TIE_REL = 1e-12
#: Two different splits whose Δ differ by more than tol but at most this times i(t) are a
#: near tie: float rounding may decide between them (see ``NaiveNode.ambiguous``).
NEAR_TIE_REL = 1e-9
#: A first principal component whose eigenvalue is less than 1/EIGEN_GAP times the
#: second is ill-determined: its direction, hence the order of the levels, depends on
#: how accurately it is computed (an iterative method converges like EIGEN_GAP^k).
EIGEN_GAP = 0.75
#: Ordering keys (p(1|b), means, component scores) closer than this, relative to the
#: largest key in magnitude, are treated as tied when looking for ambiguous orderings.
KEY_TIE_REL = 1e-9


@dataclass
class NaiveNode:
    """One node of the reference tree; ``left``/``right`` are None at a leaf.

    A subset split has ``left_levels``/``right_levels`` (frozensets of level codes) and a
    NaN ``threshold``; a threshold split has both None.
    """

    n: int
    weighted_n: float
    value: np.ndarray
    impurity: float
    risk: float
    label: int
    depth: int
    feature: int = -1
    threshold: float = math.nan
    delta: float = math.nan  # Δ of the chosen split
    left: Optional["NaiveNode"] = None
    right: Optional["NaiveNode"] = None
    left_levels: Optional[frozenset] = None
    right_levels: Optional[frozenset] = None
    majority_left: int = 0
    majority_ambiguous: bool = False  # never set: case counts are exact
    second_delta: float = -math.inf  # best Δ of a split partitioning the cases otherwise
    ambiguous: bool = False
    cases: list = field(default_factory=list, repr=False)  # learning-case ids (diagnostics)

    @property
    def is_leaf(self) -> bool:
        return self.left is None

    @property
    def is_subset_split(self) -> bool:
        return self.left_levels is not None


@dataclass
class _Split:
    """A candidate split: a threshold, or the level sets (S, R); the cases it sends each way."""

    feature: int
    threshold: float
    left_levels: Optional[frozenset]
    right_levels: Optional[frozenset]
    left: list
    right: list
    delta: float = math.nan
    inside_tie: bool = False  # an ordered cut between levels with (nearly) tied keys

    def partition(self) -> frozenset:
        """The partition of the node's cases, orientation ignored."""
        return frozenset((frozenset(self.left), frozenset(self.right)))

    def describe(self, fname) -> str:
        if self.left_levels is None:
            return f"{fname(self.feature)} <= {self.threshold!r}"
        return f"{fname(self.feature)} in {sorted(self.left_levels)}"


# ----------------------------------------------------------------------------------------
# impurity functions of a probability vector


def gini(p: Sequence[float]) -> float:
    return 1.0 - math.fsum(pj * pj for pj in p)


def entropy(p: Sequence[float]) -> float:
    return -math.fsum(pj * math.log2(pj) for pj in p if pj > 0.0)


def weighted_variance(ys: Sequence[float], ws: Sequence[float]) -> float:
    """Σ w (y - ȳ)² / W, computed in two passes."""
    W = math.fsum(ws)
    mean = math.fsum(w * y for y, w in zip(ys, ws)) / W
    return math.fsum(w * (y - mean) ** 2 for y, w in zip(ys, ws)) / W


def candidate_thresholds(values: Sequence[float]) -> list[float]:
    """Midpoints a/2 + b/2 of consecutive distinct values, never equal to b."""
    distinct = sorted(set(values))
    out = []
    for a, b in zip(distinct[:-1], distinct[1:]):
        c = a / 2.0 + b / 2.0
        if c == b:
            c = a
        out.append(c)
    return out


def canonical_key(levels) -> int:
    """Σ_{b ∈ S} 2^b: among tied subset splits the smallest wins."""
    return sum(1 << int(b) for b in levels)


def _tied_runs(order, keys):
    """Split ``order`` (levels sorted by key) into runs of (nearly) tied keys."""
    scale = max((abs(float(keys[b])) for b in order), default=0.0)
    runs = [[order[0]]]
    for a, b in zip(order[:-1], order[1:]):
        if abs(float(keys[b]) - float(keys[a])) <= KEY_TIE_REL * scale:
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _subsets(levels):
    """Every proper non-empty subset of ``levels`` (a list), as tuples."""
    out = []
    for mask in range(1, (1 << len(levels)) - 1):
        out.append(tuple(b for k, b in enumerate(levels) if mask >> k & 1))
    return out


# ----------------------------------------------------------------------------------------
# the grower


class _Problem:
    """The fixed quantities of one fit: data, weights, per-class factors, settings."""

    def __init__(self, X, y, w, task, n_classes, criterion, priors, cost, max_depth,
                 min_samples_split, min_samples_leaf, min_impurity_decrease,
                 categorical=frozenset(), max_categories_exhaustive=None,
                 subset_search="cartjit"):
        self.X = X  # list of rows (lists of float)
        self.y = y  # list of int (classification) or float (regression)
        self.w = w  # list of float, all > 0
        self.task = task
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.categorical = frozenset(categorical)
        self.max_categories_exhaustive = max_categories_exhaustive
        self.subset_search = subset_search
        self.n_features = len(X[0]) if X else 0
        if task == "classification":
            J = n_classes
            self.J = J
            N = [math.fsum(wi for yi, wi in zip(y, w) if yi == j) for j in range(J)]
            self.N_class = N
            Ntot = math.fsum(w)
            if isinstance(priors, str) and priors == "empirical":
                pi = [N[j] / Ntot for j in range(J)]
            elif isinstance(priors, str) and priors == "equal":
                pi = [1.0 / J] * J
            else:
                pi = [float(v) for v in np.asarray(priors, dtype=float).ravel()]
                if len(pi) != J:
                    raise ValueError(f"priors must have {J} entries, got {len(pi)}")
            self.pi = pi
            self.priors_kind = priors if isinstance(priors, str) else "given"
            if cost is None:
                C = [[0.0 if i == j else 1.0 for i in range(J)] for j in range(J)]
                default_cost = True
            else:
                C = [[float(v) for v in row] for row in np.asarray(cost, dtype=float)]
                default_cost = all(C[j][i] == (0.0 if i == j else 1.0)
                                   for j in range(J) for i in range(J))
            self.C = C  # C[j][i] = C(i|j)
            if default_cost:
                pi_alt = list(pi)
            else:
                raw = [pi[j] * math.fsum(C[j]) for j in range(J)]
                s = math.fsum(raw)
                pi_alt = [r / s for r in raw]
            self.pi_alt = pi_alt
            # c_j = π'(j) / N_j (a class with N_j = 0 never appears in a node)
            self.c = [pi_alt[j] / N[j] if N[j] > 0 else 0.0 for j in range(J)]
        else:
            self.J = 1
        self.root_mass = None  # Q(root) or W(root), set by grow()
        self.W_root = None

    # -- per-node quantities -------------------------------------------------------------

    def class_counts(self, idx) -> list[float]:
        return [math.fsum(self.w[i] for i in idx if self.y[i] == j) for j in range(self.J)]

    def q(self, counts) -> list[float]:
        return [self.c[j] * counts[j] for j in range(self.J)]

    def mass(self, idx) -> float:
        """Q(t) for classification, W(t) for regression."""
        if self.task == "classification":
            return math.fsum(self.q(self.class_counts(idx)))
        return math.fsum(self.w[i] for i in idx)

    def impurity(self, idx) -> float:
        if self.task == "classification":
            q = self.q(self.class_counts(idx))
            Q = math.fsum(q)
            p = [qj / Q for qj in q]
            if self.criterion == "entropy":
                return entropy(p)
            return gini(p)  # gini, and twoing records the Gini index
        return weighted_variance([self.y[i] for i in idx], [self.w[i] for i in idx])

    def delta(self, idx, left, right, i_t) -> float:
        """Δ(s, t) of the split of node ``idx`` into ``left`` and ``right``."""
        if self.task == "classification" and self.criterion == "twoing":
            qL = self.q(self.class_counts(left))
            qR = self.q(self.class_counts(right))
            QL, QR = math.fsum(qL), math.fsum(qR)
            Q = self.mass(idx)
            pL = [v / QL for v in qL]
            pR = [v / QR for v in qR]
            s = math.fsum(abs(a - b) for a, b in zip(pL, pR))
            return (QL / Q) * (QR / Q) / 4.0 * s * s
        M = self.mass(idx)
        ML, MR = self.mass(left), self.mass(right)
        return i_t - (ML / M) * self.impurity(left) - (MR / M) * self.impurity(right)

    def is_pure(self, idx) -> bool:
        ys = [self.y[i] for i in idx]
        return max(ys) == min(ys)

    def label_and_risk(self, idx):
        """j*(t) and R(t) = min_i R_i(t), R_i(t) = Σ_j C(i|j) π(j) N_j(t) / N_j.

        Computed in exact rational arithmetic on the given floats (weights, priors,
        costs; "equal" priors are exactly 1/J and "empirical" ones exactly N_j/N), so that
        a tie is a tie. Classes whose R_i(t) exceeds the minimum by at most
        ``LABEL_TIE_REL`` · p(t) · max C are tied too (priors such as 1/3 and 2/6 given
        as rounded floats); ties go to the lowest class index.
        """
        J = self.J
        w = [Fraction(v) for v in self.w]
        Nt = [sum((w[i] for i in idx if self.y[i] == j), Fraction(0)) for j in range(J)]
        N = [sum((w[i] for i in range(len(w)) if self.y[i] == j), Fraction(0))
             for j in range(J)]
        if self.priors_kind == "empirical":
            total = sum(N, Fraction(0))
            pi = [N[j] / total for j in range(J)]
        elif self.priors_kind == "equal":
            pi = [Fraction(1, J)] * J
        else:
            pi = [Fraction(v) for v in self.pi]
        C = [[Fraction(v) for v in row] for row in self.C]
        p_jt = [pi[j] * Nt[j] / N[j] if N[j] > 0 else Fraction(0) for j in range(J)]
        risks = [sum((C[j][i] * p_jt[j] for j in range(J)), Fraction(0)) for i in range(J)]
        best = min(risks)
        tol = Fraction(LABEL_TIE_REL) * sum(p_jt, Fraction(0)) * max(max(r) for r in C)
        label = next(i for i in range(J) if risks[i] <= best + tol)
        return label, float(best)

    def record(self, idx, depth) -> NaiveNode:
        W = math.fsum(self.w[i] for i in idx)
        i_t = self.impurity(idx)
        if self.task == "classification":
            counts = self.class_counts(idx)
            label, risk = self.label_and_risk(idx)
            return NaiveNode(n=len(idx), weighted_n=W, value=np.array(counts, dtype=float),
                             impurity=i_t, risk=risk, label=label, depth=depth,
                             cases=list(idx))
        ys = [self.y[i] for i in idx]
        ws = [self.w[i] for i in idx]
        mean = math.fsum(w * y for y, w in zip(ys, ws)) / W
        risk = math.fsum(w * (y - mean) ** 2 for y, w in zip(ys, ws)) / self.W_root
        return NaiveNode(n=len(idx), weighted_n=W, value=np.array([mean]),
                         impurity=i_t, risk=risk, label=-1, depth=depth, cases=list(idx))

    # -- candidates of one feature -------------------------------------------------------

    def _feasible(self, split) -> bool:
        return (len(split.left) >= self.min_samples_leaf
                and len(split.right) >= self.min_samples_leaf)

    def threshold_candidates(self, idx, m):
        """The threshold splits of ordered feature m, by increasing threshold."""
        out = []
        for c in candidate_thresholds([self.X[i][m] for i in idx]):
            left = [i for i in idx if self.X[i][m] <= c]
            right = [i for i in idx if not self.X[i][m] <= c]
            out.append(_Split(m, c, None, None, left, right))
        return out

    def levels_at(self, idx, m):
        """{level code: its cases} of categorical feature m at the node."""
        by_level = {}
        for i in idx:
            by_level.setdefault(int(self.X[i][m]), []).append(i)
        return by_level

    def subset_split(self, idx, m, side) -> _Split:
        """The split of feature m sending the levels in ``side`` one way, the rest the other;
        S (the left set) is the side holding the lowest level code present."""
        by_level = self.levels_at(idx, m)
        levels = frozenset(by_level)
        side = frozenset(side)
        S = side if min(levels) in side else levels - side
        R = levels - S
        left = [i for i in idx if int(self.X[i][m]) in S]
        right = [i for i in idx if int(self.X[i][m]) in R]
        return _Split(m, math.nan, S, R, left, right)

    def exact_weights(self, idx) -> bool:
        """Whether every weight at the node is a multiple of 2^-10 (sums and small
        products of them are exact in float64)."""
        return all(Fraction(self.w[i]).denominator <= 1024 for i in idx)

    def subset_rule(self, idx, n_levels) -> str:
        """"all", "ordered" or "heuristic": which subsets of the levels are searched."""
        if self.subset_search == "exhaustive":
            return "all"
        if self.task == "classification" and self.J > 2:
            limit = self.max_categories_exhaustive
            return "all" if limit is None or n_levels <= limit else "heuristic"
        return "ordered"

    def level_keys(self, idx, by_level, rule):
        """The ordering key of every level present: exact where the maths allows.

        Returns ``(keys, degenerate)``; ``degenerate`` is True when the principal
        component is ill-determined (``EIGEN_GAP``): then any ordering may come out.
        """
        if rule == "ordered" and self.task == "regression":
            keys = {}
            for b, cases in by_level.items():
                W = sum((Fraction(self.w[i]) for i in cases), Fraction(0))
                keys[b] = sum((Fraction(self.w[i]) * Fraction(self.y[i]) for i in cases),
                              Fraction(0)) / W
            return keys, False
        if rule == "ordered":  # two classes: by p(1 | b)
            j2 = 1
            keys = {}
            for b, cases in by_level.items():
                q = [Fraction(self.c[j]) * sum((Fraction(self.w[i]) for i in cases
                                                if self.y[i] == j), Fraction(0))
                     for j in range(self.J)]
                keys[b] = q[j2] / sum(q, Fraction(0))
            return keys, False
        # first principal component of the class proportions, weighted by Q(b)
        levels = sorted(by_level)
        q = np.array([self.q(self.class_counts(by_level[b])) for b in levels])
        Qb = q.sum(axis=1)
        P = q / Qb[:, None]
        mean = (Qb[:, None] * P).sum(axis=0) / Qb.sum()
        D = P - mean
        cov = (Qb[:, None] * D).T @ D / Qb.sum()
        vals, vecs = np.linalg.eigh(cov)
        top = vals[-1]
        degenerate = top <= 0.0 or vals[-2] >= top * EIGEN_GAP
        v = vecs[:, -1]
        scores = P @ v
        return {b: float(s) for b, s in zip(levels, scores)}, degenerate

    def subset_candidates(self, idx, m):
        """(candidates, alternatives) of categorical feature m.

        ``candidates`` are the splits the rule searches, by increasing Σ_{b∈S} 2^b for the
        exhaustive search and in scan order otherwise. ``alternatives`` are the other
        partitions a different breaking of (near) ties between ordering keys would
        offer: the union of the runs of tied levels before a cut plus any part of the run
        at the cut (all partitions when the principal component is ill-determined). A
        candidate that cuts inside such a run is marked ``inside_tie``.
        """
        by_level = self.levels_at(idx, m)
        levels = sorted(by_level)
        if len(levels) < 2:
            return [], []
        rule = self.subset_rule(idx, len(levels))
        if rule == "all":
            # S holds the lowest level and any subset of the others but all of them
            cands = [self.subset_split(idx, m, (levels[0],) + sub)
                     for sub in [()] + _subsets(levels[1:])]
            cands.sort(key=lambda s: canonical_key(s.left_levels))
            return cands, []
        keys, degenerate = self.level_keys(idx, by_level, rule)
        order = sorted(levels, key=lambda b: (keys[b], b))
        cands = [self.subset_split(idx, m, order[:k]) for k in range(1, len(levels))]
        runs = [levels] if degenerate else _tied_runs(order, keys)
        if rule == "ordered" and self.task == "classification" and self.exact_weights(idx):
            # equal proportions, exactly: the level code decides (cross-multiplied
            # weighted counts compare exactly when the weights are small dyadic numbers)
            runs = [piece for run in runs for piece in
                    ([[b] for b in run] if len({keys[b] for b in run}) == 1 else [run])]
        boundaries = set(itertools.accumulate(len(run) for run in runs))
        for k, split in enumerate(cands, start=1):
            split.inside_tie = k not in boundaries
        seen = {canonical_key(s.left_levels) for s in cands}
        alts = []
        before = []
        for run in runs:
            parts = _subsets(run) if len(run) > 1 else []
            for part in parts:
                split = self.subset_split(idx, m, tuple(before) + part)
                if canonical_key(split.left_levels) not in seen:
                    seen.add(canonical_key(split.left_levels))
                    alts.append(split)
            before += run
        return cands, alts

    # -- the split search ----------------------------------------------------------------

    def best_of_feature(self, idx, m, i_t):
        """(the feature's chosen split or None, its feasible candidates, its alternatives)."""
        tol = TOL_FACTOR * i_t
        if m in self.categorical:
            cands, alts = self.subset_candidates(idx, m)
        else:
            cands, alts = self.threshold_candidates(idx, m), []
        feasible = [s for s in cands if self._feasible(s)]
        alts = [s for s in alts if self._feasible(s)]
        for s in feasible + alts:
            s.delta = self.delta(idx, s.left, s.right, i_t)
        if not feasible:
            return None, [], alts
        if m in self.categorical:
            top = max(s.delta for s in feasible)
            tied = [s for s in feasible if s.delta >= top - tol]
            return min(tied, key=lambda s: canonical_key(s.left_levels)), feasible, alts
        best_f, found_f = -math.inf, None
        for s in feasible:
            if s.delta > best_f + tol:
                best_f, found_f = s.delta, s
        return found_f, feasible, alts

    def best_split(self, idx, i_t):
        """(the chosen split or None, every feasible candidate, alternatives)."""
        tol = TOL_FACTOR * i_t
        best = -math.inf
        found = None
        everything, alternatives = [], []
        for m in range(self.n_features):
            found_f, feasible, alts = self.best_of_feature(idx, m, i_t)
            everything += feasible
            alternatives += alts
            if found_f is not None and found_f.delta > best + tol:
                best, found = found_f.delta, found_f
        return found, everything, alternatives

    def judge(self, node, idx, split, everything, alternatives):
        """Set ``second_delta`` and ``ambiguous`` of a node whose best split is ``split``."""
        i_t = node.impurity
        tol, margin = TOL_FACTOR * i_t, NEAR_TIE_REL * i_t
        mine = split.partition()
        others = [s.delta for s in everything if s.partition() != mine]
        node.second_delta = max(others, default=-math.inf)
        d = split.delta
        near = any(tol < abs(o - d) <= margin for o in others)
        # another breaking of tied keys would not offer this split, or would offer a
        # better one, or this partition on a lower feature (which would then win)
        near |= split.inside_tie
        near |= any(s.delta >= d - margin
                    and (s.partition() != mine or s.feature != split.feature)
                    for s in alternatives)
        near |= tol < d <= margin
        if self.min_impurity_decrease > 0:
            p_t = self.mass(idx) / self.root_mass
            gap = abs(p_t * d - self.min_impurity_decrease)
            near |= p_t * tol < gap <= p_t * margin
        node.ambiguous = near

    def judge_majority(self, node, split):
        """``majority_left`` from the children's case counts: 1 more left, 0 more
        right, -1 as many."""
        n_left, n_right = len(split.left), len(split.right)
        node.majority_left = 1 if n_left > n_right else (0 if n_left < n_right else -1)

    def grow(self, idx, depth) -> NaiveNode:
        node = self.record(idx, depth)
        if self.is_pure(idx):
            return node
        if len(idx) < self.min_samples_split:
            return node
        if self.max_depth is not None and depth >= self.max_depth:
            return node
        split, everything, alternatives = self.best_split(idx, node.impurity)
        if split is None:
            # another breaking of tied keys could offer an allowed split
            node.ambiguous = any(s.delta > TOL_FACTOR * node.impurity for s in alternatives)
            return node
        self.judge(node, idx, split, everything, alternatives)
        d = split.delta
        if d <= TOL_FACTOR * node.impurity:
            return node
        p_t = self.mass(idx) / self.root_mass
        # p(t) Δ equal to the threshold up to the tie tolerance passes (cartjit's rule)
        if p_t * (d + TOL_FACTOR * node.impurity) < self.min_impurity_decrease:
            return node
        node.feature, node.threshold, node.delta = split.feature, split.threshold, d
        node.left_levels, node.right_levels = split.left_levels, split.right_levels
        self.judge_majority(node, split)
        node.left = self.grow(split.left, depth + 1)
        node.right = self.grow(split.right, depth + 1)
        return node


def _check_categorical(categorical, X):
    """The set of categorical feature indices, checked against X (codes: integers >= 0)."""
    if categorical is None:
        return frozenset()
    cats = frozenset(int(m) for m in categorical)
    p = X.shape[1]
    bad = [m for m in cats if not 0 <= m < p]
    if bad:
        raise ValueError(f"categorical must hold feature indices in 0..{p - 1}, got {bad}")
    for m in cats:
        col = X[:, m]
        if np.any(~np.isfinite(col)) or np.any(col < 0) or np.any(col != np.floor(col)):
            raise ValueError(f"categorical feature {m} must hold level codes (integers >= 0)")
    return cats


def _make_problem(X, y, sample_weight, task, n_classes, criterion, priors, cost, max_depth,
                  min_samples_split, min_samples_leaf, min_impurity_decrease, categorical,
                  max_categories_exhaustive, subset_search):
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if criterion is None:
        criterion = "gini" if task == "classification" else "squared_error"
    allowed = (("gini", "entropy", "twoing") if task == "classification"
               else ("squared_error",))
    if criterion not in allowed:
        raise ValueError(f"criterion must be one of {allowed}, got {criterion!r}")
    if subset_search not in ("cartjit", "exhaustive"):
        raise ValueError("subset_search must be 'cartjit' or 'exhaustive', got "
                         f"{subset_search!r}")
    if max_categories_exhaustive is not None and max_categories_exhaustive < 1:
        raise ValueError("max_categories_exhaustive must be None or an integer >= 1, got "
                         f"{max_categories_exhaustive!r}")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError("X must be 2-d")
    cats = _check_categorical(categorical, X)
    n = X.shape[0]
    y = np.asarray(y)
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite and >= 0")
    keep = w > 0
    if not np.any(keep):
        raise ValueError("no case has positive weight")
    Xl = [[float(v) for v in row] for row in X[keep]]
    wl = [float(v) for v in w[keep]]
    if task == "classification":
        yl = [int(v) for v in y[keep]]
        if n_classes is None:
            n_classes = int(np.max(y)) + 1
    else:
        yl = [float(v) for v in y[keep]]
    prob = _Problem(Xl, yl, wl, task, n_classes, criterion, priors, cost, max_depth,
                    min_samples_split, min_samples_leaf, min_impurity_decrease, cats,
                    max_categories_exhaustive, subset_search)
    prob.W_root = math.fsum(wl)
    prob.root_mass = prob.mass(list(range(len(yl))))
    return prob, np.flatnonzero(keep)


def naive_grow(X, y, sample_weight=None, *, task="classification", n_classes=None,
               criterion=None, priors="empirical", cost=None, max_depth=None,
               min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0,
               categorical=None, max_categories_exhaustive=12, subset_search="cartjit"):
    """Grow a CART tree by the rules of the module docstring; return the root NaiveNode.

    For classification ``y`` holds class indices 0..n_classes-1 (``n_classes`` defaults
    to ``max(y) + 1``); ``priors`` and ``cost`` are indexed by class index.
    ``categorical`` lists the features whose values are level codes (subset splits);
    ``max_categories_exhaustive`` (None: no limit) and ``subset_search`` choose which
    subsets are searched (module docstring). ``NaiveNode.cases`` hold row indices of X.
    """
    prob, rows = _make_problem(X, y, sample_weight, task, n_classes, criterion, priors,
                               cost, max_depth, min_samples_split, min_samples_leaf,
                               min_impurity_decrease, categorical, max_categories_exhaustive,
                               subset_search)
    root = prob.grow(list(range(len(prob.y))), 0)
    for node in naive_to_preorder(root):
        node.cases = [int(rows[i]) for i in node.cases]
    return root


def naive_split_delta(X, y, sample_weight, go_left, *, task="classification",
                      n_classes=None, criterion=None, priors="empirical", cost=None):
    """Δ of the root split that sends the rows with ``go_left`` left (zero weights dropped).

    Lets a split found by other means (a heuristic) be scored by the reference.
    """
    prob, rows = _make_problem(X, y, sample_weight, task, n_classes, criterion, priors,
                               cost, None, 2, 1, 0.0, None, None, "cartjit")
    go_left = np.asarray(go_left, dtype=bool)[rows]
    idx = list(range(len(prob.y)))
    left = [i for i in idx if go_left[i]]
    right = [i for i in idx if not go_left[i]]
    if not left or not right:
        raise ValueError("go_left must send some case of positive weight each way")
    return prob.delta(idx, left, right, prob.impurity(idx))


def naive_to_preorder(root: NaiveNode) -> list[NaiveNode]:
    """The nodes in preorder (node, left subtree, right subtree)."""
    out = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        if not node.is_leaf:
            stack.append(node.right)
            stack.append(node.left)
    return out


def count_leaves(root: NaiveNode) -> int:
    return sum(1 for node in naive_to_preorder(root) if node.is_leaf)


def ambiguous_anywhere(root: NaiveNode) -> bool:
    """Whether float rounding could change a split or a stop somewhere in the tree."""
    return any(node.ambiguous for node in naive_to_preorder(root))


# ----------------------------------------------------------------------------------------
# comparison with cartjit's flat tree


def _close(a: float, b: float, rel: float, abs_: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)


def level_set(bits) -> frozenset:
    """The level codes of one bitset row (uint64 words; code c is bit c % 64 of word c // 64)."""
    out = set()
    for word_index, word in enumerate(np.asarray(bits, dtype=np.uint64)):
        word = int(word)
        for bit in range(64):
            if word >> bit & 1:
                out.add(64 * word_index + bit)
    return frozenset(out)


def _to_reference_codes(codes, categories, m):
    """cartjit's level codes of feature m as the reference's (``categories[m][c]``)."""
    if categories is None or categories[m] is None:
        return frozenset(codes)
    levels = categories[m]
    return frozenset(int(levels[c]) for c in codes)


def assert_same_tree(tree, root: NaiveNode, feature_names=None, *, rel=1e-9,
                     categories=None, check_ordered_majority=True) -> None:
    """Assert that cartjit's flat ``tree`` and the naive tree ``root`` are the same tree.

    Walks both from the root in parallel; on the first difference raises
    ``AssertionError`` with the path (e.g. ``root > L[x1 <= 2.5] > R[x0 in [1, 3]]``).
    Subset splits are compared through ``level_row``/``level_sets``; ``categories`` (as
    the estimators' ``categories_``) maps cartjit's level code c of feature m to the
    reference's code ``categories[m][c]`` (None: the same codes). ``majority_left`` is
    compared at subset splits, and at threshold splits too unless
    ``check_ordered_majority`` is False (never where ``majority_ambiguous``);
    ``improvement`` at every split.
    """
    def fname(m):
        if feature_names is not None and 0 <= m < len(feature_names):
            return str(feature_names[m])
        return f"x{m}"

    W_root = float(root.weighted_n)
    classification = root.label >= 0
    # absolute tolerances for quantities that can be (near) zero, scaled to the problem
    y_scale = 1.0 if classification else 1.0 + abs(float(root.value[0]))
    value_abs = 1e-12 * max(W_root, 1.0) if classification else 1e-12 * y_scale
    imp_abs = 1e-9 if classification else 1e-9 * max(1.0, float(root.impurity))
    # The reference forms a classification Δi as i(t) - p_L i(t_L) - p_R i(t_R), with each
    # impurity 1 - Σ p² (or a sum of p log p), so it carries an absolute error of a few
    # ulps of 1 whatever its size (the engine's p_L p_R Σ (p_L(j) - p_R(j))² does not):
    # a Δi of 5e-11 under weights from 0.01 to 100 came out 2.3e-16 off the exact value,
    # the engine's 1.7e-13 relatively. 16 ulps of 1 allow for that.
    delta_abs = 16 * np.finfo(np.float64).eps if classification else 0.0
    risk_abs = 1e-12 * max(float(root.risk), 1.0) * y_scale * y_scale
    stack = [(0, root, "root")]
    while stack:
        i, node, path = stack.pop()

        def fail(what, got, expected):
            split = ("leaf" if node.is_leaf else
                     (fname(node.feature), sorted(node.left_levels), sorted(node.right_levels),
                      node.delta) if node.is_subset_split else
                     (fname(node.feature), node.threshold, node.delta))
            raise AssertionError(
                f"trees differ at {path} (cartjit node {i}): {what}: cartjit {got!r}, "
                f"naive {expected!r}\n  naive node: n={node.n} w={node.weighted_n!r} "
                f"value={node.value.tolist()} impurity={node.impurity!r} "
                f"risk={node.risk!r} label={node.label} split={split}")

        leaf = int(tree.left[i]) == -1
        if leaf != node.is_leaf:
            fail("is leaf", leaf, node.is_leaf)
        if int(tree.n_node_samples[i]) != node.n:
            fail("n_node_samples", int(tree.n_node_samples[i]), node.n)
        if not _close(tree.weighted_n_node_samples[i], node.weighted_n, rel, 0.0):
            fail("weighted_n_node_samples", float(tree.weighted_n_node_samples[i]),
                 node.weighted_n)
        got_value = np.asarray(tree.value[i], dtype=float)
        if got_value.shape != node.value.shape:
            fail("value shape", got_value.shape, node.value.shape)
        for k in range(got_value.shape[0]):
            if not _close(got_value[k], node.value[k], rel, value_abs):
                fail(f"value[{k}]", got_value.tolist(), node.value.tolist())
        if not _close(tree.impurity[i], node.impurity, 1e-9, imp_abs):
            fail("impurity", float(tree.impurity[i]), node.impurity)
        if not _close(tree.risk[i], node.risk, rel, risk_abs):
            fail("risk", float(tree.risk[i]), node.risk)
        if int(tree.label[i]) != node.label:
            fail("label", int(tree.label[i]), node.label)
        if leaf:
            continue
        if int(tree.feature[i]) != node.feature:
            fail("feature", fname(int(tree.feature[i])), fname(node.feature))
        row = int(tree.level_row[i])
        if node.is_subset_split:
            if row < 0:
                fail("level_row (subset split)", row, ">= 0")
            if not math.isnan(float(tree.threshold[i])):
                fail("threshold (subset split)", float(tree.threshold[i]), math.nan)
            m = node.feature
            got_left = _to_reference_codes(level_set(tree.level_sets[row, 0]), categories, m)
            got_right = _to_reference_codes(level_set(tree.level_sets[row, 1]), categories, m)
            if got_left != node.left_levels:
                fail("left level set", sorted(got_left), sorted(node.left_levels))
            if got_right != node.right_levels:
                fail("right level set", sorted(got_right), sorted(node.right_levels))
            cond = f"{fname(m)} in {sorted(node.left_levels)}"
        else:
            if row != -1:
                fail("level_row (threshold split)", row, -1)
            if float(tree.threshold[i]) != node.threshold:
                fail("threshold", float(tree.threshold[i]), node.threshold)
            cond = f"{fname(node.feature)} <= {node.threshold!r}"
        if (node.is_subset_split or check_ordered_majority) and \
                not node.majority_ambiguous and \
                int(tree.majority_left[i]) != node.majority_left:
            fail("majority_left", int(tree.majority_left[i]), node.majority_left)
        if not _close(tree.improvement[i], node.delta, 1e-9,
                      max(1e-12 * max(float(node.impurity), imp_abs), delta_abs)):
            fail("improvement", float(tree.improvement[i]), node.delta)
        stack.append((int(tree.right[i]), node.right, f"{path} > R[not {cond}]"))
        stack.append((int(tree.left[i]), node.left, f"{path} > L[{cond}]"))


def naive_to_flat(root: NaiveNode):
    """The naive tree as a cartjit flat ``Tree`` (children allocated in pairs, alpha NaN).

    Lets the naive grower be checked against the flat-tree contract with
    ``cartjit.engine.tree.validate`` and lets ``assert_same_tree`` be tested on itself. Subset
    splits get one ``level_sets`` row each, in preorder, with as many 64-bit words as the
    largest level code of a subset split needs.
    """
    from cartjit.engine.tree import LEAF, Tree, without_surrogates

    order = []  # (node, parent id)
    ids = {}
    left, right = {}, {}
    stack = [(root, -1)]
    next_id = 1
    ids[id(root)] = 0
    while stack:
        node, parent = stack.pop()
        order.append((node, parent))
        i = ids[id(node)]
        if not node.is_leaf:
            ids[id(node.left)], ids[id(node.right)] = next_id, next_id + 1
            left[i], right[i] = next_id, next_id + 1
            next_id += 2
            stack.append((node.right, i))
            stack.append((node.left, i))
    n = next_id
    J = root.value.shape[0]
    subset_nodes = [node for node, _ in order if not node.is_leaf and node.is_subset_split]
    top = max((max(nd.left_levels | nd.right_levels) for nd in subset_nodes), default=-1)
    n_words = (top + 64) // 64 if top >= 0 else 0
    f = dict(
        feature=np.full(n, LEAF, np.int32), threshold=np.full(n, np.nan),
        left=np.full(n, LEAF, np.int32), right=np.full(n, LEAF, np.int32),
        parent=np.full(n, -1, np.int32), depth=np.zeros(n, np.int32),
        n_node_samples=np.zeros(n, np.int64), weighted_n_node_samples=np.zeros(n),
        value=np.zeros((n, J)), impurity=np.zeros(n), risk=np.zeros(n),
        label=np.full(n, -1, np.int32), alpha=np.full(n, np.nan),
        improvement=np.zeros(n), majority_left=np.zeros(n, np.int32),
        level_row=np.full(n, -1, np.int32),
        level_sets=np.zeros((len(subset_nodes), 2, n_words), np.uint64),
        n_primary=np.zeros(n, np.int64), **without_surrogates(n),
    )
    rows = 0
    for node, parent in order:
        i = ids[id(node)]
        f["parent"][i] = parent
        f["depth"][i] = node.depth
        f["n_node_samples"][i] = node.n
        f["weighted_n_node_samples"][i] = node.weighted_n
        f["value"][i] = node.value
        f["impurity"][i] = node.impurity
        f["risk"][i] = node.risk
        f["label"][i] = node.label
        if not node.is_leaf:
            f["feature"][i] = node.feature
            f["threshold"][i] = node.threshold
            f["left"][i], f["right"][i] = left[i], right[i]
            f["improvement"][i] = node.delta
            f["majority_left"][i] = node.majority_left
            f["n_primary"][i] = node.n
            if node.is_subset_split:
                f["level_row"][i] = rows
                for side, levels in enumerate((node.left_levels, node.right_levels)):
                    for c in levels:
                        f["level_sets"][rows, side, c // 64] |= np.uint64(1 << (c % 64))
                rows += 1
    return Tree(**f)


def flat_apply(tree, X) -> np.ndarray:
    """The leaf of cartjit's flat ``tree`` reached by every row of X, one row at a time.

    X holds what the kernels see: numbers for ordered features, level codes for
    categorical ones (-1, or any code in neither level set of a subset split, cannot be
    routed there and goes to the child ``majority_left`` names, or stops there on -1:
    the node itself is returned).
    """
    X = np.asarray(X, dtype=float)
    out = np.empty(X.shape[0], dtype=np.int64)
    for r in range(X.shape[0]):
        i = 0
        while int(tree.left[i]) != -1:
            x = float(X[r, int(tree.feature[i])])
            row = int(tree.level_row[i])
            if row < 0:
                go_left = x <= float(tree.threshold[i])
            else:
                code = int(x) if x == math.floor(x) else -1
                if code >= 0 and code in level_set(tree.level_sets[row, 0]):
                    go_left = True
                elif code >= 0 and code in level_set(tree.level_sets[row, 1]):
                    go_left = False
                elif int(tree.majority_left[i]) == -1:
                    break
                else:
                    go_left = int(tree.majority_left[i]) == 1
            i = int(tree.left[i]) if go_left else int(tree.right[i])
        out[r] = i
    return out


def fix_weights(w, groups):
    """Give every group (class) at least one case of positive weight."""
    if w is None:
        return None
    w = w.copy()
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        if w[members].sum() <= 0:
            w[members[0]] = 1.0
    return w
