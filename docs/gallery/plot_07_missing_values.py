"""
Missing values and surrogate splits
===================================

A case that misses the feature of a node's split is sent down by a *surrogate*: the
split on another feature that best mimics the primary one (docs/maths.md §8). In the
simulated data below the class depends on x₀ alone, x₁ is a noisy copy of x₀, and x₂
is noise; a fifth of the cases miss x₀. The page computes the root's best surrogate by
hand — its threshold, agreement and adjusted agreement — checks that the fitted tree
found the same, and that the cases without x₀ went the way the surrogate sends them.
"""

# %%
import numpy as np
import pandas as pd

from cartjit import CARTClassifier, CARTClassifierCV, summary

rng = np.random.default_rng(8)
n = 300
x0 = rng.random(n)
X = pd.DataFrame({"x0": x0, "x1": x0 + rng.normal(0, 0.15, n), "x2": rng.random(n)})
y = np.where((x0 > 0.5) != (rng.random(n) < 0.05), "b", "a")
blank = rng.choice(n, size=n // 5, replace=False)
X.loc[blank, "x0"] = np.nan
clf = CARTClassifier(max_depth=2).fit(X, y)
print(summary(clf, max_depth=1))

# %%
# The root's primary split and its surrogates
# -------------------------------------------
# The primary split is chosen on the 240 cases that have x₀ (its Δi scaled by that
# fraction, §8). For every other feature g and every threshold c, the *agreement* is
# the fraction of those 240 cases that "x_g ≤ c" (or "> c") sends the way the primary
# split sends them (a case missing x_g agrees with nothing); the *majority* m is the
# fraction the larger side holds, and adj = (agree − m)/(1 − m).
tree = clf.tree_
names = list(clf.feature_names_in_)
f = tree.feature[0]
print("primary:", names[f], "<=", tree.threshold[0])
values = X.to_numpy()
present = ~np.isnan(values[:, f])
goes_left = values[present, f] <= tree.threshold[0]
majority = max(goes_left.mean(), 1 - goes_left.mean())

best = (0.0, None, None)
for g in range(values.shape[1]):
    if g == f:
        continue
    xg = values[present, g]
    has = ~np.isnan(xg)
    levels = np.unique(xg[has])
    for lo, hi in zip(levels[:-1], levels[1:]):
        c = (lo + hi) / 2
        below = xg[has] <= c
        if min(below.sum(), (~below).sum()) < 2:  # two cases each side at least
            continue
        for below_left in (False, True):  # "x_g <= c goes right" tried first
            sends_left = below if below_left else ~below
            agree = np.sum(sends_left == goes_left[has]) / len(goes_left)
            if agree > best[0]:
                best = (agree, g, c)
agree, g, c = best
adj = (agree - majority) / (1 - majority)
print(f"best surrogate by hand: {names[g]} <= {c}, agree {agree:.3f}, adj {adj:.3f}")

first = tree.surrogate_start[0]
assert tree.surrogate_feature[first] == g
assert tree.surrogate_threshold[first] == c
assert abs(tree.surrogate_agree[first] - agree) < 1e-12
assert abs(tree.surrogate_adj[first] - adj) < 1e-12

# %%
# Where the cases without x₀ went
# -------------------------------
# Each of them reached the child that the surrogate points to.
below_left = tree.surrogate_low_left[first]
child_of = clf.decision_path_arrays(X)
indptr, indices = child_of
for i in blank:
    second = indices[indptr[i] + 1]  # the node after the root on case i's path
    sent_left = (values[i, g] <= c) == bool(below_left)
    assert second == (tree.left[0] if sent_left else tree.right[0])
print(f"the {len(blank)} cases without x0 followed the surrogate")

# %%
# Cross-validation works the same way: the held-out cases that miss a feature are
# sent down each fold tree by its surrogates.
cv = CARTClassifierCV(cv=10, random_state=0).fit(X, y)
print(cv.cv_results_[["n_leaves", "cv_risk", "cv_se", "selected"]])
error = np.mean(cv.predict(X) != y)
assert cv.tree_.feature[0] == 0  # the chosen tree splits on x0 first, as the data do
print("resubstitution error of the chosen tree:", error)
