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
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Sequence

import numpy as np

__all__ = ["NaiveNode", "naive_grow", "naive_to_preorder", "naive_to_flat", "count_leaves",
           "assert_same_tree"]

EPS = 2.220446049250313e-16
TOL_FACTOR = 16 * EPS
#: Relative tolerance (of p(t) · max C) within which two classes tie for the label.
LABEL_TIE_REL = 1e-12


@dataclass
class NaiveNode:
    """One node of the reference tree; ``left``/``right`` are None at a leaf."""

    n: int
    weighted_n: float
    value: np.ndarray
    impurity: float
    risk: float
    label: int
    depth: int
    feature: int = -1
    threshold: float = math.nan
    delta: float = math.nan  # Δ of the chosen split (for diagnostics only)
    left: Optional["NaiveNode"] = None
    right: Optional["NaiveNode"] = None

    @property
    def is_leaf(self) -> bool:
        return self.left is None


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


# ----------------------------------------------------------------------------------------
# the grower


class _Problem:
    """The fixed quantities of one fit: data, weights, per-class factors, settings."""

    def __init__(self, X, y, w, task, n_classes, criterion, priors, cost, max_depth,
                 min_samples_split, min_samples_leaf, min_impurity_decrease):
        self.X = X  # list of rows (lists of float)
        self.y = y  # list of int (classification) or float (regression)
        self.w = w  # list of float, all > 0
        self.task = task
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
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
                             impurity=i_t, risk=risk, label=label, depth=depth)
        ys = [self.y[i] for i in idx]
        ws = [self.w[i] for i in idx]
        mean = math.fsum(w * y for y, w in zip(ys, ws)) / W
        risk = math.fsum(w * (y - mean) ** 2 for y, w in zip(ys, ws)) / self.W_root
        return NaiveNode(n=len(idx), weighted_n=W, value=np.array([mean]),
                         impurity=i_t, risk=risk, label=-1, depth=depth)

    # -- the split search ----------------------------------------------------------------

    def best_split(self, idx, i_t):
        """(feature, threshold, Δ, left, right) of the best split, or None if no candidate."""
        tol = TOL_FACTOR * i_t
        best = -math.inf
        found = None
        for m in range(self.n_features):
            best_f = -math.inf
            found_f = None
            for c in candidate_thresholds([self.X[i][m] for i in idx]):
                left = [i for i in idx if self.X[i][m] <= c]
                right = [i for i in idx if not self.X[i][m] <= c]
                if len(left) < self.min_samples_leaf or len(right) < self.min_samples_leaf:
                    continue
                d = self.delta(idx, left, right, i_t)
                if d > best_f + tol:
                    best_f, found_f = d, (m, c, d, left, right)
            if found_f is not None and best_f > best + tol:
                best, found = best_f, found_f
        return found

    def grow(self, idx, depth) -> NaiveNode:
        node = self.record(idx, depth)
        if self.is_pure(idx):
            return node
        if len(idx) < self.min_samples_split:
            return node
        if self.max_depth is not None and depth >= self.max_depth:
            return node
        split = self.best_split(idx, node.impurity)
        if split is None:
            return node
        m, c, d, left, right = split
        if d <= TOL_FACTOR * node.impurity:
            return node
        p_t = self.mass(idx) / self.root_mass
        # p(t) Δ equal to the threshold up to the tie tolerance passes (cartjit's rule)
        if p_t * (d + TOL_FACTOR * node.impurity) < self.min_impurity_decrease:
            return node
        node.feature, node.threshold, node.delta = m, c, d
        node.left = self.grow(left, depth + 1)
        node.right = self.grow(right, depth + 1)
        return node


def naive_grow(X, y, sample_weight=None, *, task="classification", n_classes=None,
               criterion=None, priors="empirical", cost=None, max_depth=None,
               min_samples_split=2, min_samples_leaf=1, min_impurity_decrease=0.0):
    """Grow a CART tree by the rules of the module docstring; return the root NaiveNode.

    For classification ``y`` holds class indices 0..n_classes-1 (``n_classes`` defaults
    to ``max(y) + 1``); ``priors`` and ``cost`` are indexed by class index.
    """
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if criterion is None:
        criterion = "gini" if task == "classification" else "squared_error"
    allowed = (("gini", "entropy", "twoing") if task == "classification"
               else ("squared_error",))
    if criterion not in allowed:
        raise ValueError(f"criterion must be one of {allowed}, got {criterion!r}")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError("X must be 2-d")
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
                    min_samples_split, min_samples_leaf, min_impurity_decrease)
    idx = list(range(len(yl)))
    prob.W_root = math.fsum(wl)
    prob.root_mass = prob.mass(idx)
    return prob.grow(idx, 0)


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


# ----------------------------------------------------------------------------------------
# comparison with cartjit's flat tree


def _close(a: float, b: float, rel: float, abs_: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_)


def assert_same_tree(tree, root: NaiveNode, feature_names=None, *, rel=1e-9) -> None:
    """Assert that cartjit's flat ``tree`` and the naive tree ``root`` are the same tree.

    Walks both from the root in parallel; on the first difference raises
    ``AssertionError`` with the path (e.g. ``root > L[x1 <= 2.5] > R[x0 <= 1]``).
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
    risk_abs = 1e-12 * max(float(root.risk), 1.0) * y_scale * y_scale
    stack = [(0, root, "root")]
    while stack:
        i, node, path = stack.pop()

        def fail(what, got, expected):
            raise AssertionError(
                f"trees differ at {path} (cartjit node {i}): {what}: cartjit {got!r}, "
                f"naive {expected!r}\n  naive node: n={node.n} w={node.weighted_n!r} "
                f"value={node.value.tolist()} impurity={node.impurity!r} "
                f"risk={node.risk!r} label={node.label} split="
                f"{'leaf' if node.is_leaf else (fname(node.feature), node.threshold, node.delta)}")

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
        if float(tree.threshold[i]) != node.threshold:
            fail("threshold", float(tree.threshold[i]), node.threshold)
        cond = f"{fname(node.feature)} <= {node.threshold!r}"
        stack.append((int(tree.right[i]), node.right, f"{path} > R[not {cond}]"))
        stack.append((int(tree.left[i]), node.left, f"{path} > L[{cond}]"))


def naive_to_flat(root: NaiveNode):
    """The naive tree as a cartjit flat ``Tree`` (children allocated in pairs, alpha NaN).

    Lets the naive grower be checked against the flat-tree contract with
    ``cartjit._tree.validate`` and lets ``assert_same_tree`` be tested on itself.
    """
    from cartjit._tree import LEAF, Tree

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
    f = dict(
        feature=np.full(n, LEAF, np.int32), threshold=np.full(n, np.nan),
        left=np.full(n, LEAF, np.int32), right=np.full(n, LEAF, np.int32),
        parent=np.full(n, -1, np.int32), depth=np.zeros(n, np.int32),
        n_node_samples=np.zeros(n, np.int64), weighted_n_node_samples=np.zeros(n),
        value=np.zeros((n, J)), impurity=np.zeros(n), risk=np.zeros(n),
        label=np.full(n, -1, np.int32), alpha=np.full(n, np.nan),
        improvement=np.zeros(n), majority_left=np.zeros(n, np.int32),
        level_row=np.full(n, -1, np.int32), level_sets=np.zeros((0, 2, 0), np.uint64),
    )
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
    return Tree(**f)
