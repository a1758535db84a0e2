"""
The weakest link and the cross-validation, step by step
=======================================================

The iris example of :doc:`the mathematics <../maths>` (§4–§6), replayed one step at a
time. ``pruning_steps`` lists, for each subtree T_k, every internal node t with
g_k(t) = (R(t) − R(T_t)) / (``|T̃_t|`` − 1); the nodes of least g are the weakest links,
collapsed to give T_{k+1}, and their g is α_{k+1}. ``cv_steps`` gives, for each T_k,
the pooled table N_ij of held-out cases of class j labelled i by their fold's tree
pruned at α'_k; R^CV(j) = N_ij summed over i ≠ j, divided by N_j, and R^CV their
prior-weighted sum. The page checks each step against a direct computation, and draws
the nested subtrees.
"""

# %%
from fractions import Fraction

import numpy as np

from cartjit import (CARTClassifier, CARTClassifierCV, cv_steps, plot_pruning_sequence,
                     pruning_steps)
from cartjit.datasets import load_iris

X, y = load_iris(petal_only=True, return_X_y=True)
est = CARTClassifier().fit(X, y)
steps = pruning_steps(est, by="step")
print(steps)

# %%
# The α's are the text's 1/150, 1/75, 22/75 and 1/3, and each step's weakest links
# are the nodes of least g, recomputed here from R(t), R(T_t) and ``|T̃_t|`` (a node of
# least g below another one goes with it: it is not a link of its own).
alphas = [Fraction(a).limit_denominator(1000) for a in steps.alpha_next.dropna()]
assert alphas == [0, Fraction(1, 150), Fraction(1, 75), Fraction(22, 75), Fraction(1, 3)]
by_node = pruning_steps(est)
parent = est.tree_max_.parent


def below_another(node, group):
    up = parent[node]
    while up >= 0:
        if up in group:
            return True
        up = parent[up]
    return False


for k in range(1, 5):
    table = by_node.loc[k]
    g = (table.risk_node - table.risk_branch) / (table.leaves_branch - 1)
    assert np.allclose(g, table.g, rtol=0, atol=1e-15)
    least = set(table.index[np.isclose(g, g.min(), rtol=1e-9, atol=0)])
    weakest = {t for t in least if not below_another(t, least)}
    assert weakest == set(table.index[table.weakest])
    assert abs(g.min() - float(alphas[k])) < 1e-12
print(by_node.loc[1])

# %%
# Every node's stored α (the α at which it is pruned away) is the g of the step that
# collapsed it.
tree = est.tree_max_
for k in range(1, 5):
    table = by_node.loc[k]
    for node in table.index[table.weakest]:
        assert abs(tree.alpha[node] - table.g[node]) < 1e-12

# %%
# The cross-validation's N_ij tables
# ----------------------------------
# With the empirical priors and 0-1 costs, R^CV(T_k) is the fraction of held-out cases
# misclassified: the off-diagonal of N_ij over N.
cv = CARTClassifierCV(cv=10, random_state=0, cv_predictions=True).fit(X, y)
cv_table = cv_steps(cv, y)
print(cv_table.risk)
print(cv_table.counts.loc[1])
for k in cv.cv_results_.index:
    counts = cv_table.counts.loc[k].drop(columns="N_j").to_numpy(dtype=float)
    wrong = counts.sum() - np.trace(counts)
    assert counts.sum() == len(y)
    assert abs(wrong / len(y) - cv.cv_results_.cv_risk[k]) < 1e-12

# %%
# The nested subtrees T_1 ⊇ T_2 ⊇ … as partitions of the petal plane.
plot_pruning_sequence(est, X, y)
