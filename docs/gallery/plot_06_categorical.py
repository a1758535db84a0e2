"""
Categorical predictors: subset splits
=====================================

A categorical feature with L levels splits a node into a subset of its levels and the
rest: 2^(L−1) − 1 candidate splits. For two classes (and for regression) CART need not
try them all: ordering the levels by the proportion of class 1 (by the mean) and
splitting that order like a numeric feature finds the best subset (Breiman et al.
1984, §4.2.2), L − 1 candidates instead. This page fits the Titanic data (2,201
people: class, sex, age; survived or not), whose features are all categorical, and
checks every split of the tree against the brute force over all subsets.
"""

# %%
from itertools import combinations

import numpy as np

from cartjit import CARTClassifier, export_text, node_numbers
from cartjit.datasets import load_titanic

X, y = load_titanic(return_X_y=True)
clf = CARTClassifier(max_depth=3).fit(X, y)
print(export_text(clf))


# %%
# The brute force
# ---------------
# At a node t with class proportions p(j | t), a split into t_L and t_R decreases the
# Gini impurity by Δi = i(t) − p_L i(t_L) − p_R i(t_R) (docs/maths.md §2). Every
# subset of the levels present at the node is tried; the fitted split must reach the
# maximum, and its stored Δi must be that maximum.
def gini(counts):
    n = counts.sum()
    return 1.0 - np.sum((counts / n) ** 2) if n else 0.0


def best_subset(column, labels):
    levels = sorted(set(column))
    counts = {lv: np.array([np.sum((column == lv) & (labels == c)) for c in ("No", "Yes")],
                           dtype=float) for lv in levels}
    total = sum(counts.values())
    n = total.sum()
    best = (-np.inf, None)
    for size in range(1, len(levels)):
        for left in combinations(levels, size):
            if levels[0] not in left:  # each split once: the first level goes left
                continue
            cl = sum(counts[lv] for lv in left)
            cr = total - cl
            delta = gini(total) - cl.sum() / n * gini(cl) - cr.sum() / n * gini(cr)
            if delta > best[0] + 1e-12:
                best = (delta, set(left))
    return best


tree = clf.tree_
names = np.asarray(clf.feature_names_in_)
indptr, indices = clf.decision_path_arrays(X)
rows_of = {}
for i in range(len(y)):
    for node in indices[indptr[i]:indptr[i + 1]]:
        rows_of.setdefault(int(node), []).append(i)

number = node_numbers(clf)  # the printed numbers (root 1, children 2m and 2m + 1)
checked = 0
for node in range(tree.n_nodes):
    if tree.left[node] == -1:
        continue
    rows = np.array(rows_of[node])
    f = tree.feature[node]
    chosen_delta = tree.improvement[node]
    # the best Δi over every feature's every subset
    deltas = {names[g]: best_subset(X.iloc[rows, g].astype(str).to_numpy(),
                                    np.asarray(y)[rows])
              for g in range(X.shape[1])}
    top = max(d for d, _ in deltas.values())
    assert abs(chosen_delta - top) <= 1e-12, (node, chosen_delta, top)
    assert abs(deltas[names[f]][0] - top) <= 1e-12
    # the cases the fitted split sends left are one side of the best subset
    left_rows = set(rows_of.get(int(tree.left[node]), []))
    left_levels = set(X.iloc[sorted(left_rows), f].astype(str))
    best_left = deltas[names[f]][1]
    present = set(X.iloc[rows, f].astype(str))
    assert left_levels in (best_left, present - best_left)
    print(f"node {number[node]}: {names[f]} in {sorted(left_levels)}, Δi = {chosen_delta:.5f} "
          "(brute force: the same)")
    checked += 1
assert checked == np.sum(tree.left != -1)
