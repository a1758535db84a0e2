"""
Cost-complexity pruning of a regression tree
============================================

Efron et al.'s diabetes data (442 patients, ten baseline measurements, a measure of
disease progression a year later), as distributed with scikit-learn. A regression tree
grown to purity fits the learning cases almost perfectly and predicts new ones badly;
the weakest-link sequence T_1 ⊃ T_2 ⊃ … ⊃ {root} trades its size against its
resubstitution risk R(T) (the mean squared error), and 10-fold cross-validation picks
one tree of the sequence. The page checks the sequence's defining properties, the 1-SE
rule against its definition, and that the chosen tree predicts held-out cases better
than T_max.
"""

# %%
# The data: three quarters to learn from, one quarter held out.
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from cartjit import CARTRegressor, CARTRegressorCV, plot_cv

root = Path.cwd()
while not (root / "experiments" / "data" / "diabetes.csv").exists():
    root = root.parent
frame = pd.read_csv(root / "experiments" / "data" / "diabetes.csv")
X = frame.drop(columns="progression").to_numpy()
y = frame["progression"].to_numpy()
rng = np.random.default_rng(2004)
test = np.zeros(len(y), dtype=bool)
test[rng.choice(len(y), size=len(y) // 4, replace=False)] = True
X_learn, y_learn, X_test, y_test = X[~test], y[~test], X[test], y[test]

# %%
# The weakest-link sequence
# -------------------------
# Each row is one T_k: α_k, its leaves ``|T̃_k|`` and R(T_k). Along the sequence α grows,
# the trees shrink, and R(T_k) grows; T_k minimises R_α(T) = R(T) + α ``|T̃|`` for α in
# [α_k, α_{k+1}), so the slope between consecutive rows is −α_{k+1}.
full = CARTRegressor().fit(X_learn, y_learn)
path = full.cost_complexity_path()
print(path[["alpha", "n_leaves", "risk"]].head(8))
print("...", len(path), "trees")
assert np.all(np.diff(path.alpha) > 0)
assert np.all(np.diff(path.n_leaves) < 0)
assert np.all(np.diff(path.risk) >= 0)
a = path.alpha.to_numpy()
n = path.n_leaves.to_numpy()
r = path.risk.to_numpy()
assert np.allclose(np.diff(r), a[1:] * -np.diff(n), rtol=1e-9, atol=1e-9)
# R(root) is the variance of the learning targets (weights 1/N)
assert np.isclose(r[-1], np.var(y_learn), rtol=1e-12)

# %%
# Resubstitution against held-out risk
# ------------------------------------
# Pruning to each α_k (no refit: T(α) is a mask of T_max) and scoring the held-out
# quarter shows why the resubstitution risk cannot choose the tree.
test_mse = []
for alpha in a:
    pruned = CARTRegressor(ccp_alpha=alpha).fit(X_learn, y_learn)
    test_mse.append(float(np.mean((pruned.predict(X_test) - y_test) ** 2)))
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.step(n, r, where="post", label="R(T_k), learning cases")
ax.step(n, test_mse, where="post", label="mean squared error, held-out cases")
ax.set_xscale("log")
ax.set_xlabel("leaves |T̃_k|")
ax.set_ylabel("mean squared error")
ax.legend()
fig.tight_layout()

# %%
# Choosing by cross-validation
# ----------------------------
# The 1-SE rule: the smallest tree whose R^CV is within one standard error of the
# smallest R^CV. Recomputed here from ``cv_results_`` and compared with the fitted
# choice.
cv = CARTRegressorCV(cv=10, random_state=1).fit(X_learn, y_learn)
res = cv.cv_results_
best = res.cv_risk.idxmin()
bound = res.cv_risk[best] + res.cv_se[best]
one_se = max(k for k in res.index if res.cv_risk[k] <= bound)  # larger k: smaller tree
assert cv.best_k_ == one_se
assert cv.tree_.n_leaves == res.n_leaves[one_se]
print(res[["n_leaves", "alpha", "cv_risk", "cv_se", "selected"]].loc[max(1, best - 3):one_se + 3])
plot_cv(cv)

# %%
# The chosen tree predicts the held-out quarter better than T_max does.
chosen_mse = float(np.mean((cv.predict(X_test) - y_test) ** 2))
tmax_mse = test_mse[0]
print(f"held-out MSE: T_max ({n[0]} leaves) {tmax_mse:.0f}, "
      f"chosen ({cv.tree_.n_leaves} leaves) {chosen_mse:.0f}")
assert chosen_mse < tmax_mse
