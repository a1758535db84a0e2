"""
Pre-pruning against post-pruning
================================

Stopping rules (a maximum depth, a minimum node size) decide while the tree grows;
CART grows T_max and prunes it afterwards, choosing the subtree by cross-validation.
The data here are simulated, so the best possible error is known: a case (x₁, x₂) in
the unit square is class 1 inside the quarter disc x₁² + x₂² < 0.6 and class 0
outside, and 15 % of the labels are flipped at random, so the Bayes error is 0.15. Two
more features are pure noise. Each tree is judged on 20,000 fresh cases.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from cartjit import CARTClassifier, CARTClassifierCV, plot_importance, plot_partition

FLIP = 0.15


def sample(n, rng):
    X = rng.random((n, 4))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 0.6).astype(int)
    flip = rng.random(n) < FLIP
    return X, np.where(flip, 1 - y, y)


rng = np.random.default_rng(1984)
X, y = sample(600, rng)
X_new, y_new = sample(20_000, rng)

# %%
# Three trees: stopped early, grown to purity, and pruned by 10-fold CV (1-SE rule).
trees = {
    "pre-pruned (depth ≤ 2)": CARTClassifier(max_depth=2).fit(X, y),
    "T_max": CARTClassifier().fit(X, y),
    "CV-pruned (1-SE)": CARTClassifierCV(cv=10, random_state=0).fit(X, y),
}
errors = {}
for name, tree in trees.items():
    errors[name] = float(np.mean(tree.predict(X_new) != y_new))
    print(f"{name:24s} {tree.get_n_leaves():4d} leaves, "
          f"error on new cases {errors[name]:.3f}")

# No tree beats the Bayes rule (up to sampling error of 20,000 cases), T_max is far
# from it, and the pruned tree is the closest of the three.
se = np.sqrt(FLIP * (1 - FLIP) / len(y_new))
assert all(e > FLIP - 3 * se for e in errors.values())
assert errors["CV-pruned (1-SE)"] < errors["T_max"]
assert errors["CV-pruned (1-SE)"] < errors["pre-pruned (depth ≤ 2)"]

# %%
# The partitions of (x₁, x₂): the fixed depth cuts the disc coarsely, T_max chases the
# flipped labels, the pruned tree keeps the boundary's shape. The dashed arc is the
# Bayes boundary. (The noise features are held at their medians in the plot.)
fig, axes = plt.subplots(1, 3, figsize=(12, 4))
theta = np.linspace(0, np.pi / 2, 100)
for ax, (name, tree) in zip(axes, trees.items()):
    plot_partition(tree, X, y, features=(0, 1), ax=ax)
    ax.plot(np.sqrt(0.6) * np.cos(theta), np.sqrt(0.6) * np.sin(theta), "k--", lw=1)
    ax.set_title(f"{name}\n{tree.get_n_leaves()} leaves, error {errors[name]:.3f}",
                 fontsize=9)
fig.tight_layout()

# %%
# Feature importance of the pruned tree: ``feature_importances_`` is scikit-learn's
# measure (Σ p(t) Δi(t) over the splits on a feature); the plot draws rpart's, which
# adds the surrogate splits. The noise features x₃ and x₄ get the least by both.
pruned = trees["CV-pruned (1-SE)"]
importance = pruned.feature_importances_
print("importance:", np.round(importance, 3))
assert min(importance[0], importance[1]) > max(importance[2], importance[3])
rpart_importance = pruned.variable_importance_
print(rpart_importance.round(2))
noise = rpart_importance.reindex(["x2", "x3"]).fillna(0.0)
assert min(rpart_importance["x0"], rpart_importance["x1"]) > noise.max()
plot_importance(pruned)
