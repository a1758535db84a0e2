"""
Potato yield: the best regression split
=======================================

The regression example of :doc:`the mathematics <../maths>` (§6): the yield of 15
potato fields (t/ha) against the rainfall (mm). The best constant predictor is the mean
ȳ = 24.8 t/ha, with risk R(root) = Var(y) = 2072/75. A split at a threshold c lowers
the risk to the weighted variances of the two sides; the best threshold is the one that
lowers it most. ``split_candidates`` lists every midpoint with its Δi (the variance
reduction); the page checks the text's exact fractions and the plot shows the classic
"which x* is best?" figure.
"""

# %%
from fractions import Fraction

import numpy as np

from cartjit import CARTRegressor, plot_split_candidates, split_candidates
from cartjit.datasets import load_potato_yield

X, y = load_potato_yield(return_X_y=True)
rain = X.iloc[:, 0].to_numpy()  # the rainfall, mm
y = np.asarray(y, dtype=float)
stump = CARTRegressor(max_depth=1).fit(X, y)
table = split_candidates(stump, X, y)
print(table)

# %%
# The root: ȳ = 372/15 and Var(y) = 2072/75.
assert Fraction(float(np.mean(y))).limit_denominator(100) == Fraction(372, 15)
assert abs(stump.tree_.value[0, 0] - 24.8) < 1e-12
assert abs(stump.tree_max_.impurity[0] - 2072 / 75) < 1e-12

# %%
# The chosen split, rainfall ≤ 110 mm (midway between the dry fields' 91 mm and the
# next, 129 mm), reduces the variance by 12769/650; the runner-up, ≤ 135 mm, by
# 3721/225. Δi is recomputed here from the two sides' values, by hand.
best = table[table.chosen].iloc[0]
assert best.threshold == 110.0
assert abs(best.delta_i - 12769 / 650) < 1e-12
runner_up = table.sort_values("delta_i", ascending=False).iloc[1]
assert runner_up.threshold == 135.0
assert abs(runner_up.delta_i - 3721 / 225) < 1e-12
for row in table.itertuples():
    left = y[rain <= row.threshold]
    right = y[rain > row.threshold]
    by_hand = np.var(y) - (len(left) * np.var(left) + len(right) * np.var(right)) / len(y)
    assert abs(row.delta_i - by_hand) < 1e-9
# and the fitted tree stored the chosen Δi
assert abs(stump.tree_max_.improvement[0] - 12769 / 650) < 1e-12

# %%
# Δi against the threshold: the peak at 110 mm.
plot_split_candidates(stump, X, y)
