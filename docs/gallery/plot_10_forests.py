"""
One tree, bagging and a random forest
=====================================

Breiman's twonorm problem (1996): two classes, each a 20-dimensional normal
distribution with identity covariance, centred at (a, …, a) and (−a, …, −a) with
a = 2/√20. The Bayes rule (the sign of Σ x_j) errs with probability Φ(−2) ≈ 0.0228.
Five pure-noise features are added. A single pruned tree, bagged trees (every feature
at every node) and a random forest (m = ⌊√25⌋ = 5 features drawn at each node) are
grown on 600 cases and judged on 20,000 fresh ones. The out-of-bag estimate needs no
fresh cases: the page checks it against the fresh-sample error.
"""

# %%
from math import erf, sqrt

import matplotlib.pyplot as plt
import numpy as np

from cartjit import (BaggedCARTClassifier, CARTClassifierCV, RandomForestClassifier,
                     plot_forest_importance, plot_oob_error)


def twonorm(n, rng, n_noise=5):
    a = 2 / np.sqrt(20)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 20 + n_noise))
    X[:, :20] += np.where(y == 1, a, -a)[:, None]
    return X, y


rng = np.random.default_rng(1996)
X, y = twonorm(600, rng)
X_new, y_new = twonorm(20_000, rng)
bayes = 0.5 * (1 + erf(-2 / sqrt(2)))  # Φ(−2)
bayes_new = np.mean((X_new[:, :20].sum(axis=1) > 0) != y_new)
print(f"Bayes error {bayes:.4f}; the Bayes rule on the fresh cases {bayes_new:.4f}")

# %%
# The three methods, 200 trees for each ensemble.
models = {
    "one tree (10-fold CV, 1-SE)": CARTClassifierCV(cv=10, random_state=0),
    "bagging (m = 25)": BaggedCARTClassifier(200, oob_score=True, random_state=0),
    "random forest (m = 5)": RandomForestClassifier(200, oob_score=True,
                                                   oob_importance=True, random_state=0),
}
error = {}
for name, model in models.items():
    model.fit(X, y)
    error[name] = float(np.mean(model.predict(X_new) != y_new))
    oob = f", OOB error {1 - model.oob_score_:.3f}" if hasattr(model, "oob_score_") else ""
    print(f"{name:28s} error on fresh cases {error[name]:.3f}{oob}")

se = np.sqrt(bayes * (1 - bayes) / len(y_new))
assert all(e > bayes - 3 * se for e in error.values())
assert error["random forest (m = 5)"] < error["bagging (m = 25)"] \
    < error["one tree (10-fold CV, 1-SE)"]

# %%
# The out-of-bag estimate
# -----------------------
# Each case is predicted by the trees whose bootstrap sample left it out (about a third
# of them). Its error estimates the forest's error on new cases: within a few standard
# errors of the 600 learning cases here.
forest = models["random forest (m = 5)"]
oob_error = 1 - forest.oob_score_
se_oob = np.sqrt(oob_error * (1 - oob_error) / len(y))
print(f"OOB {oob_error:.3f} ± {se_oob:.3f}, fresh cases {error['random forest (m = 5)']:.3f}")
assert abs(oob_error - error["random forest (m = 5)"]) < 3 * se_oob
plot_oob_error(forest)

# %%
# Permutation importance
# ----------------------
# Breiman's measure: the rise of each tree's OOB error when one feature's values are
# permuted among its OOB cases, averaged over the trees. The five noise features
# (x20–x24) come last.
imp = forest.oob_importances_
order = np.argsort(imp)
print("least important:", sorted(order[:5].tolist()))
assert sorted(order[:5].tolist()) == [20, 21, 22, 23, 24]
fig, ax = plt.subplots(figsize=(6, 6))
plot_forest_importance(forest, ax=ax, max_features=25)
fig.tight_layout()
