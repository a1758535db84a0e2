"""The flat tree: one NamedTuple of parallel per-node arrays.

Contract
--------
A fitted tree with ``n_nodes`` nodes is a :class:`Tree` whose fields are all NumPy
arrays with ``n_nodes`` rows (``value`` has ``n_nodes`` rows and ``n_values`` columns).
Node ``i`` is described by row ``i`` of every array.

* Node 0 is the root: ``parent[0] == -1`` and ``depth[0] == 0``.
* ``left[i] == LEAF`` (-1) marks a leaf; then ``right[i] == LEAF``,
  ``feature[i] == LEAF`` and ``threshold[i]`` is NaN.
* An internal node ``i`` sends a case with ``x[feature[i]] <= threshold[i]`` to
  ``left[i]`` and every other case to ``right[i]`` (docs/maths.md §2). ``threshold[i]`` is the
  midpoint of two consecutive distinct values of that feature among the node's
  learning cases, never equal to the larger of the two.
* Children have larger ids than their parent, ``right[i] == left[i] + 1``,
  ``parent[left[i]] == parent[right[i]] == i`` and ``depth[child] == depth[i] + 1``.
  Every node but the root is the child of exactly one node.
* ``n_node_samples[i]`` counts the learning cases (of non-zero weight) in node ``i``;
  ``weighted_n_node_samples[i]`` is their total case weight. Both are the sums of the
  children's values when every case of a split node has its split feature
  (``n_primary[i] == n_node_samples[i]``); otherwise at least those sums, as cases
  missing it may stay in the node (see ``n_primary`` below).
* ``value[i]``: for classification the weighted class counts N_j(t), one column per
  class (``n_values == J``), summing to ``weighted_n_node_samples[i]``; for regression a
  single column holding the weighted mean ȳ(t).
* ``impurity[i]``: i(t) under the fitted criterion (Gini, entropy, or for twoing the
  Gini index), computed with the priors used by the split search; for regression the
  weighted variance of y in the node.
* ``risk[i]``: R(t) = r(t) p(t) with the true priors and costs for classification, and
  Σ w (y - ȳ(t))² / W for regression (docs/maths.md §1, §3). ``risk[i] >= risk[left[i]] +
  risk[right[i]]`` up to rounding.
* ``label[i]``: the class index j*(t) = argmin_i Σ_j C(i|j) p(j|t) (lowest index on
  ties) for classification; -1 for regression.
* ``alpha[i]``: the cost-complexity parameter at which node ``i`` becomes a leaf of the
  pruned subtree T(α) (docs/maths.md §4): 0 for the leaves of T_max and for splits removed in
  T_1; for the other internal nodes the α_k of the weakest-link step that prunes them.
  Along any root-to-leaf path ``alpha`` never increases. Node ``i`` belongs to T(α) when
  every strict ancestor ``a`` has ``alpha[a] > α``, and is a leaf of T(α) when it
  belongs and ``alpha[i] <= α``. NaN until the pruning sequence is computed.

* ``improvement[i]``: Δi(t) of the node's split (0 at leaves), under the criterion and
  split-search priors (for twoing the twoing value); the variable importances are built
  from it.

Subset splits of categorical features (docs/maths.md §7):

* ``level_row[i]`` is -1 unless node ``i`` splits a categorical feature by a subset of its
  levels; then ``threshold[i]`` is NaN and ``level_sets[level_row[i]]`` holds two bitsets
  of the feature's level codes: ``[0]`` the levels going left, ``[1]`` those going right
  (code c is bit ``c % 64`` of word ``c // 64``). The two sets are disjoint and
  non-empty; a level in neither (absent from the node's learning cases, or never seen in
  training) cannot be routed by the split.
* ``majority_left[i]`` is 1 when a case that cannot be routed at split ``i`` goes left:
  the left child holds at least as much case weight as the right; 0 otherwise and at
  leaves.
* ``level_sets`` is the one array without a row per node: (m, 2, n_words) uint64, one
  row per subset split ever grown (a pruned subtree keeps the table and drops the rows it
  no longer points to), n_words = 0 when no feature is categorical.

Missing values, surrogate and competitor splits (docs/maths.md §8):

* ``majority_left[i]`` (internal nodes): where a case goes that neither the split nor a
  surrogate can route: 1 left, 0 right, -1 neither (the children hold equal numbers of
  learning cases; the case stops at node ``i``, which then predicts for it). It compares
  ``n_node_samples`` of the two children; 0 at leaves.
* ``n_primary[i]``: the node's learning cases whose split feature is present (0 at
  leaves). Cases missing it went down by surrogates, by the majority, or stayed in node
  ``i`` (``use_surrogate`` < 2): then the children hold fewer cases than their parent.
* ``surrogate_start[i]``, ``n_surrogates[i]``: rows ``[start, start + n)`` of the
  surrogate table hold the node's surrogate splits, best first (0, 0 at leaves and when
  none). A row: ``surrogate_feature``; ``surrogate_threshold`` with ``surrogate_low_left``
  (1: ``x <= threshold`` goes left, 0: it goes right) for an ordered feature, or
  ``surrogate_level_row`` (a row of ``level_sets``: [0] left, [1] right; -1 for an
  ordered feature, whose threshold is otherwise NaN); ``surrogate_agree`` and
  ``surrogate_adj``, the agreement and adjusted agreement; ``surrogate_count``, the
  learning cases it routed.
* ``competitor_start[i]``, ``n_competitors[i]``: rows of the competitor table, the best
  splits on other features, best first: ``competitor_feature``, ``competitor_threshold``
  / ``competitor_level_row`` (as for surrogates; an ordered competitor sends
  ``x <= threshold`` left), ``competitor_improvement`` (in the units of ``improvement``),
  ``competitor_count`` (cases with the feature present).

The tables keep rows that a pruned subtree no longer points to, as ``level_sets`` does.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["LEAF", "Tree", "validate", "subtree", "apply", "without_surrogates"]

LEAF = -1

_INT_FIELDS = ("feature", "left", "right", "parent", "depth", "label", "majority_left",
               "level_row", "surrogate_start", "n_surrogates", "competitor_start",
               "n_competitors")
_INT64_FIELDS = ("n_node_samples", "n_primary")
_FLOAT_FIELDS = ("threshold", "weighted_n_node_samples", "impurity", "risk", "alpha",
                 "improvement")
#: The surrogate and competitor tables, one row per surrogate or competitor split.
SURROGATE_FIELDS = {"surrogate_feature": np.int32, "surrogate_threshold": np.float64,
                    "surrogate_level_row": np.int32, "surrogate_low_left": np.int32,
                    "surrogate_agree": np.float64, "surrogate_adj": np.float64,
                    "surrogate_count": np.int64}
COMPETITOR_FIELDS = {"competitor_feature": np.int32, "competitor_threshold": np.float64,
                     "competitor_level_row": np.int32, "competitor_improvement": np.float64,
                     "competitor_count": np.int64}
#: Fields without a row per node.
TABLE_FIELDS = ("level_sets",) + tuple(SURROGATE_FIELDS) + tuple(COMPETITOR_FIELDS)


class Tree(NamedTuple):
    """A fitted CART tree stored as parallel per-node arrays (see the module docstring)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray
    impurity: np.ndarray
    risk: np.ndarray
    label: np.ndarray
    alpha: np.ndarray
    improvement: np.ndarray
    majority_left: np.ndarray
    level_row: np.ndarray
    level_sets: np.ndarray
    n_primary: np.ndarray
    surrogate_start: np.ndarray
    n_surrogates: np.ndarray
    competitor_start: np.ndarray
    n_competitors: np.ndarray
    surrogate_feature: np.ndarray
    surrogate_threshold: np.ndarray
    surrogate_level_row: np.ndarray
    surrogate_low_left: np.ndarray
    surrogate_agree: np.ndarray
    surrogate_adj: np.ndarray
    surrogate_count: np.ndarray
    competitor_feature: np.ndarray
    competitor_threshold: np.ndarray
    competitor_level_row: np.ndarray
    competitor_improvement: np.ndarray
    competitor_count: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.left == LEAF))

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if self.n_nodes else 0

    def is_leaf(self) -> np.ndarray:
        return self.left == LEAF

    @property
    def has_subset_splits(self) -> bool:
        """Whether some node splits a categorical feature by a subset of its levels."""
        return bool(np.any(self.level_row >= 0))

    @property
    def has_surrogates(self) -> bool:
        """Whether some node has a surrogate split."""
        return bool(np.any(self.n_surrogates > 0))

    def node_fields(self):
        """Names of the fields with one row per node."""
        return tuple(name for name in self._fields if name not in TABLE_FIELDS)

    def __repr__(self) -> str:
        """A one-line summary (the arrays are many kilobytes): the sizes, the task
        (``n_classes`` for classification, ``regression``) and how many distinct
        features the splits use."""
        if not self.n_nodes:
            return "Tree(n_nodes=0)"
        task = ("regression" if self.label[0] < 0
                else f"n_classes={int(self.value.shape[1])}")
        internal = self.left != LEAF
        used = int(np.unique(self.feature[internal]).shape[0])
        return (f"Tree(n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, "
                f"max_depth={self.max_depth}, {task}, features_used={used})")

    __str__ = __repr__


def without_surrogates(n_nodes: int) -> dict:
    """The missing-value fields of a tree of ``n_nodes`` nodes without surrogate or
    competitor splits (every case's split feature present): keyword arguments for
    :class:`Tree` besides ``n_primary``, which equals ``n_node_samples`` at internal
    nodes and is 0 at leaves."""
    fields = {name: np.zeros(n_nodes, dtype=np.int32)
              for name in ("surrogate_start", "n_surrogates", "competitor_start",
                           "n_competitors")}
    for name, dtype in {**SURROGATE_FIELDS, **COMPETITOR_FIELDS}.items():
        fields[name] = np.empty(0, dtype=dtype)
    return fields


def validate(tree: Tree, *, rtol: float = 1e-9) -> None:
    """Check every invariant of the contract; raise ``ValueError`` naming the first broken one."""
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a cartjit Tree, got {type(tree).__name__}")
    n = tree.feature.shape[0] if isinstance(tree.feature, np.ndarray) else -1
    if n < 1:
        raise ValueError("tree must have at least one node (the root)")
    for name in Tree._fields:
        arr = getattr(tree, name)
        if not isinstance(arr, np.ndarray):
            raise ValueError(f"tree.{name} must be a numpy array")
        if name in TABLE_FIELDS:
            continue
        if arr.shape[0] != n:
            raise ValueError(f"tree.{name} has {arr.shape[0]} rows, expected {n}")
    for name in _INT_FIELDS:
        if getattr(tree, name).dtype != np.int32:
            raise ValueError(f"tree.{name} must be int32, got {getattr(tree, name).dtype}")
    for name in _INT64_FIELDS:
        if getattr(tree, name).dtype != np.int64:
            raise ValueError(f"tree.{name} must be int64")
    for name in _FLOAT_FIELDS:
        if getattr(tree, name).dtype != np.float64:
            raise ValueError(f"tree.{name} must be float64")
    if tree.value.ndim != 2 or tree.value.dtype != np.float64:
        raise ValueError("tree.value must be a 2-d float64 array")

    ids = np.arange(n)
    leaf = tree.left == LEAF
    if tree.parent[0] != -1 or tree.depth[0] != 0:
        raise ValueError("node 0 must be the root (parent -1, depth 0)")
    if np.any((tree.right == LEAF) != leaf) or np.any((tree.feature == LEAF) != leaf):
        raise ValueError("left, right and feature must all be LEAF exactly at the leaves")
    if np.any(~np.isnan(tree.threshold[leaf])):
        raise ValueError("leaves must have a NaN threshold")
    internal = ids[~leaf]
    _validate_subsets(tree, leaf)
    ordered = internal[tree.level_row[internal] < 0]
    if np.any(~np.isfinite(tree.threshold[ordered])):
        raise ValueError("internal nodes with an ordered split must have finite thresholds")
    lc, rc = tree.left[internal], tree.right[internal]
    if np.any(lc <= internal) or np.any(rc != lc + 1) or np.any(rc >= n):
        raise ValueError("children must have larger ids than their parent, with right == left + 1")
    if np.any(tree.parent[lc] != internal) or np.any(tree.parent[rc] != internal):
        raise ValueError("parent must point back from each child to its parent")
    if np.any(tree.depth[lc] != tree.depth[internal] + 1) or \
            np.any(tree.depth[rc] != tree.depth[internal] + 1):
        raise ValueError("depth of a child must be its parent's depth + 1")
    child_count = np.zeros(n, dtype=np.int64)
    np.add.at(child_count, lc, 1)
    np.add.at(child_count, rc, 1)
    if child_count[0] != 0 or np.any(child_count[1:] != 1):
        raise ValueError("every node but the root must be the child of exactly one node")
    if np.any(tree.n_node_samples < 1):
        raise ValueError("every node must hold at least one case")
    _validate_missing(tree, leaf, internal, rtol)
    # A case missing the split feature may stay in its node (use_surrogate < 2, or a tie
    # of the majority), so the children hold at most their parent's cases; where every
    # case has the split feature (n_primary == n_node_samples) they hold all of them.
    n_s = tree.n_node_samples
    complete = tree.n_primary[internal] == n_s[internal]
    below = n_s[lc] + n_s[rc]
    if np.any(below[complete] != n_s[internal][complete]):
        raise ValueError("n_node_samples of a split node whose cases all have the split "
                         "feature (n_primary == n_node_samples) must be the sum of its "
                         "children's")
    if np.any(below > n_s[internal]):
        raise ValueError("the children of a split node cannot hold more cases than it")
    if np.any(below < tree.n_primary[internal]):
        raise ValueError("the children of a split node must hold at least its n_primary "
                         "cases (those with the split feature present)")
    w = tree.weighted_n_node_samples
    if np.any(w <= 0):
        raise ValueError("weighted_n_node_samples must be positive")
    w_below = w[lc] + w[rc]
    if not np.allclose(w[internal][complete], w_below[complete], rtol=rtol, atol=0):
        raise ValueError("weighted_n_node_samples of a split node whose cases all have the "
                         "split feature must be the sum of its children's")
    if np.any(w_below > w[internal] * (1 + rtol)):
        raise ValueError("the children of a split node cannot hold more case weight than it")
    if np.any(tree.impurity < -rtol) or np.any(~np.isfinite(tree.impurity)):
        raise ValueError("impurity must be finite and non-negative")
    scale = max(float(tree.risk[0]), 1e-300)
    if np.any(tree.risk < -rtol * scale):
        raise ValueError("risk must be non-negative")
    if np.any(tree.risk[internal] < tree.risk[lc] + tree.risk[rc] - rtol * scale):
        raise ValueError("R(t) >= R(t_L) + R(t_R) must hold at every split")
    if tree.label[0] >= 0:  # classification
        if tree.value.shape[1] < 1 or np.any(tree.value < 0):
            raise ValueError("class counts in value must be non-negative")
        if not np.allclose(tree.value.sum(axis=1), w, rtol=rtol, atol=0):
            raise ValueError("class counts in value must sum to weighted_n_node_samples")
        if np.any(tree.label < 0) or np.any(tree.label >= tree.value.shape[1]):
            raise ValueError("label must be a class index for every node")
    elif np.any(tree.label != -1) or tree.value.shape[1] != 1:
        raise ValueError("a regression tree has label -1 and one value column")
    a = tree.alpha
    if not np.all(np.isnan(a)):
        if np.any(np.isnan(a)) or np.any(a < 0):
            raise ValueError("alpha must be non-negative at every node once computed")
        if np.any(a[leaf] != 0):
            raise ValueError("alpha must be 0 at the leaves of T_max")
        if np.any(a[lc] > a[internal]) or np.any(a[rc] > a[internal]):
            raise ValueError("alpha must never increase from a node to its children")


def _table_rows(tree, leaf, start, count, size, what):
    """The rows ``[start, start + count)`` of a table of ``size`` rows used by each node:
    in range, none at leaves, no row used twice. Returns (node of each row, row ids)."""
    if np.any(count < 0) or np.any(start < 0):
        raise ValueError(f"{what}: start and count must be non-negative")
    if np.any(count[leaf] != 0) or np.any(start[leaf] != 0):
        raise ValueError(f"{what}: start and count must be 0 at leaves")
    if np.any(start.astype(np.int64) + count > size):
        raise ValueError(f"{what}: rows [start, start + count) must lie in the table "
                         f"({size} rows)")
    owner = np.repeat(np.arange(start.shape[0]), count)
    rows = (np.repeat(start.astype(np.int64) - np.cumsum(count) + count, count)
            + np.arange(owner.shape[0]))
    if np.unique(rows).shape[0] != rows.shape[0]:
        raise ValueError(f"{what}: two nodes (or one node twice) use the same table row")
    return owner, rows


def _table(tree, fields, what):
    """The columns of a surrogate or competitor table: 1-d, right dtype, same length."""
    size = None
    for name, dtype in fields.items():
        arr = getattr(tree, name)
        if arr.ndim != 1 or arr.dtype != dtype:
            raise ValueError(f"tree.{name} must be a 1-d {np.dtype(dtype).name} array")
        if size is None:
            size = arr.shape[0]
        elif arr.shape[0] != size:
            raise ValueError(f"the {what} table's columns must have the same length "
                             f"(tree.{name} has {arr.shape[0]} rows, expected {size})")
    return size


def _split_columns(tree, owner, rows, feature, threshold, level_row, what):
    """An ordered split row has a finite threshold and level row -1, a subset split row a
    NaN threshold and a valid row of level_sets with disjoint, non-empty sides; its
    feature is not the node's own and appears once per node."""
    f, thr, lr = feature[rows], threshold[rows], level_row[rows]
    if np.any(f < 0) or np.any(f == tree.feature[owner]):
        raise ValueError(f"{what}: the feature must be a feature index other than the "
                         "node's split feature")
    pairs = owner.astype(np.int64) * (int(f.max(initial=0)) + 1) + f
    if np.unique(pairs).shape[0] != pairs.shape[0]:
        raise ValueError(f"{what}: a node lists the same feature twice")
    ordered = lr < 0
    if np.any(lr < -1) or np.any(lr >= tree.level_sets.shape[0]):
        raise ValueError(f"{what}: the level row must be -1 or a row of level_sets")
    if np.any(~np.isfinite(thr[ordered])) or np.any(~np.isnan(thr[~ordered])):
        raise ValueError(f"{what}: an ordered split needs a finite threshold, a subset "
                         "split a NaN one")
    sets = tree.level_sets[lr[~ordered]]
    if np.any(sets[:, 0] & sets[:, 1]) or np.any(~sets[:, 0].any(axis=1)) or \
            np.any(~sets[:, 1].any(axis=1)):
        raise ValueError(f"{what}: the two level sets must be disjoint and non-empty")


def _validate_missing(tree, leaf, internal, rtol):
    """The fields of missing values: n_primary, majority_left, the surrogate and the
    competitor tables (see the module docstring)."""
    n_s, n_p = tree.n_node_samples, tree.n_primary
    if np.any(n_p[leaf] != 0):
        raise ValueError("n_primary must be 0 at leaves")
    if np.any(n_p[internal] < 1) or np.any(n_p > n_s):
        raise ValueError("n_primary of a split node must lie in [1, n_node_samples]")
    lc = tree.left[internal]
    n_l, n_r = n_s[lc], n_s[lc + 1]
    expected = np.where(n_l > n_r, 1, np.where(n_l < n_r, 0, -1))
    if np.any(tree.majority_left[internal] != expected):
        raise ValueError("majority_left of a split node must be 1 when its left child holds "
                         "more cases (n_node_samples), 0 when fewer, -1 when as many")

    size = _table(tree, SURROGATE_FIELDS, "surrogate")
    owner, rows = _table_rows(tree, leaf, tree.surrogate_start, tree.n_surrogates, size,
                              "surrogate rows")
    _split_columns(tree, owner, rows, tree.surrogate_feature, tree.surrogate_threshold,
                   tree.surrogate_level_row, "a surrogate split")
    agree, adj = tree.surrogate_agree[rows], tree.surrogate_adj[rows]
    if np.any(~(agree >= 0)) or np.any(agree > 1 + rtol):
        raise ValueError("surrogate_agree must lie in [0, 1]")
    if np.any(~(adj > 0)) or np.any(adj > 1 + rtol):
        raise ValueError("surrogate_adj must lie in (0, 1]")
    if np.any((tree.surrogate_low_left[rows] != 0) & (tree.surrogate_low_left[rows] != 1)):
        raise ValueError("surrogate_low_left must be 0 or 1")
    # best first: within a node, agreement never increases (beyond rounding: values
    # equal up to rounding keep feature order)
    same = owner[1:] == owner[:-1]
    if np.any(agree[1:][same] > agree[:-1][same] + rtol):
        raise ValueError("a node's surrogates must be listed best first (agreement "
                         "non-increasing)")
    count = tree.surrogate_count[rows]
    routed = np.zeros(n_s.shape[0], dtype=np.int64)
    np.add.at(routed, owner, count)
    if np.any(count < 0) or np.any(routed > n_s - n_p):
        raise ValueError("surrogate_count must be non-negative, and a node's surrogates "
                         "cannot route more than its cases missing the split feature")

    size = _table(tree, COMPETITOR_FIELDS, "competitor")
    owner, rows = _table_rows(tree, leaf, tree.competitor_start, tree.n_competitors, size,
                              "competitor rows")
    _split_columns(tree, owner, rows, tree.competitor_feature, tree.competitor_threshold,
                   tree.competitor_level_row, "a competitor split")
    imp = tree.competitor_improvement[rows]
    if np.any(~(imp > 0)) or np.any(~np.isfinite(imp)):
        raise ValueError("competitor_improvement must be positive and finite")
    same = owner[1:] == owner[:-1]
    if np.any(imp[1:][same] > imp[:-1][same] * (1 + rtol)):
        raise ValueError("a node's competitors must be listed best first (improvement "
                         "non-increasing)")
    count = tree.competitor_count[rows]
    if np.any(count < 1) or np.any(count > n_s[owner]):
        raise ValueError("competitor_count must lie in [1, n_node_samples]")


def _validate_subsets(tree, leaf):
    """The subset-split fields: rows in range and used once, sets disjoint and non-empty."""
    sets = tree.level_sets
    if sets.dtype != np.uint64 or sets.ndim != 3 or sets.shape[1] != 2:
        raise ValueError("tree.level_sets must be a (m, 2, n_words) uint64 array")
    rows = tree.level_row
    if np.any(rows[leaf] != -1) or np.any(tree.majority_left[leaf] != 0):
        raise ValueError("leaves must have level_row -1 and majority_left 0")
    if np.any((tree.majority_left < -1) | (tree.majority_left > 1)):
        raise ValueError("majority_left must be -1, 0 or 1")
    used = rows[rows >= 0]
    if np.any(rows < -1) or np.any(used >= sets.shape[0]):
        raise ValueError("level_row must be -1 or a row of level_sets")
    if np.unique(used).shape[0] != used.shape[0]:
        raise ValueError("two nodes share a row of level_sets")
    if np.any(~np.isnan(tree.threshold[rows >= 0])):
        raise ValueError("a subset split must have a NaN threshold")
    both = sets[used]
    if np.any(both[:, 0] & both[:, 1]):
        raise ValueError("a level cannot go both left and right")
    if np.any(~both[:, 0].any(axis=1)) or np.any(~both[:, 1].any(axis=1)):
        raise ValueError("both sides of a subset split need at least one level")


def subtree(tree: Tree, keep_internal: np.ndarray, *, return_index: bool = False):
    """The pruned subtree that keeps the splits of the internal nodes in ``keep_internal``.

    ``keep_internal`` is a boolean mask over the nodes; a node is kept as a split node
    when it and every one of its ancestors are marked (leaves of ``tree`` are never
    split). The result is renumbered to satisfy the contract: nodes keep their relative
    order, so children still follow parents. With ``return_index`` the old ids of the
    kept nodes are returned as well (``(tree, old_ids)``).
    """
    n = tree.n_nodes
    keep_split = np.asarray(keep_internal, dtype=bool) & (tree.left != LEAF)
    present = np.zeros(n, dtype=bool)
    present[0] = True
    # Ids increase from parents to children, so one forward pass settles presence.
    for i in range(n):
        if present[i] and keep_split[i]:
            present[tree.left[i]] = True
            present[tree.right[i]] = True
    split = present & keep_split
    old = np.flatnonzero(present)
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[old] = np.arange(old.shape[0])
    fields = {name: getattr(tree, name) for name in TABLE_FIELDS}
    for name in tree.node_fields():
        fields[name] = getattr(tree, name)[old].copy()
    s = split[old]
    fields["left"] = np.where(s, new_id[tree.left[old]], LEAF).astype(np.int32)
    fields["right"] = np.where(s, new_id[tree.right[old]], LEAF).astype(np.int32)
    fields["feature"] = np.where(s, fields["feature"], LEAF).astype(np.int32)
    fields["threshold"] = np.where(s, fields["threshold"], np.nan)
    fields["improvement"] = np.where(s, fields["improvement"], 0.0)
    fields["majority_left"] = np.where(s, fields["majority_left"], 0).astype(np.int32)
    fields["level_row"] = np.where(s, fields["level_row"], -1).astype(np.int32)
    for name in ("n_primary", "surrogate_start", "n_surrogates", "competitor_start",
                 "n_competitors"):
        fields[name] = np.where(s, fields[name], 0).astype(fields[name].dtype)
    par = tree.parent[old]
    fields["parent"] = np.where(par >= 0, new_id[np.maximum(par, 0)], -1).astype(np.int32)
    if not np.all(np.isnan(fields["alpha"])):
        fields["alpha"] = np.where(s, fields["alpha"], 0.0)
    if return_index:
        return Tree(**fields), old
    return Tree(**fields)


def apply(tree: Tree, X: np.ndarray, use_surrogate: int = 2) -> np.ndarray:
    """The node at which every row of X (C-contiguous float64, checked shape, NaN for a
    missing value) ends: a leaf, or an internal node where a case missing the split
    feature stops (see ``majority_left``; docs/maths.md §8).

    ``use_surrogate`` (rpart's usesurrogate): 0, a case missing the split feature stops
    at the node; 1, the node's surrogate splits route it, else it stops; 2, the
    surrogates, then the majority (``majority_left``). Raises ``ValueError`` if X holds
    infinity (checked while the rows are read).
    """
    from .predict import apply as nodes_of, routing_of  # the batch kernels

    routing = routing_of(tree, use_surrogate)
    nodes, n_inf = nodes_of(tree.feature, tree.threshold, tree.left, X, routing)
    if n_inf:
        raise ValueError("Input X contains infinity or a value too large for "
                         "dtype('float64'): only finite values and NaN (missing) are allowed")
    return nodes
