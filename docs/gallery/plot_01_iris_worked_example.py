"""
Fisher's iris: the pruning sequence and its cross-validation
=============================================================

The worked example of :doc:`the mathematics <../maths>` (§6). A classification tree on
the two petal measurements of Fisher's iris data (150 cases, three species of 50,
Gini splits, empirical priors, 0-1 cost) is grown to T_max and pruned by the weakest
link. Every number the text states is computed here and checked: the sequence
α_1 < α_2 < … with its trees and risks, the geometric means α'_k at which the
cross-validation scores each T_k, leave-one-out cross-validation done by hand (one
tree refitted per left-out case and per α'_k, the slow way the book describes), and
the two tables of the experiment runner reproduced from the committed results.
"""

# %%
# The pruning sequence
# --------------------
# ``cost_complexity_path()`` lists α_k, ``|T̃_k|`` and R(T_k) for k = 1, …, K (rpart's
# ``cptable_`` is the same table scaled by R(root)). The text's figures are exact
# fractions of the 150 cases.
from fractions import Fraction
from pathlib import Path
import tempfile

import numpy as np
import pandas as pd

from cartjit import CARTClassifier, CARTClassifierCV, plot_cv, print_cp
from cartjit.datasets import load_iris

X, y = load_iris(petal_only=True, return_X_y=True)
tree = CARTClassifier().fit(X, y)
path = tree.cost_complexity_path()
print(path)

expected_alpha = [Fraction(0), Fraction(1, 150), Fraction(1, 75), Fraction(22, 75),
                  Fraction(1, 3)]
expected_leaves = [7, 4, 3, 2, 1]
expected_risk = [Fraction(r, 150) for r in (1, 4, 6, 50, 100)]
assert [Fraction(a).limit_denominator(1000) for a in path.alpha] == expected_alpha
assert path.n_leaves.tolist() == expected_leaves
assert np.allclose(path.risk, [float(r) for r in expected_risk], rtol=0, atol=1e-15)
# each step adds α_{k+1} for every leaf it removes (docs/maths.md §4)
for k in range(1, 5):
    removed = expected_leaves[k - 1] - expected_leaves[k]
    assert expected_risk[k] == expected_risk[k - 1] + expected_alpha[k] * removed

# %%
# The geometric means α'_k
# ------------------------
# The cross-validation scores T_k at α'_k = √(α_k α_{k+1}), the middle of the
# interval [α_k, α_{k+1}) on which T_k is the smallest minimising subtree.
cv = CARTClassifierCV(cv="loo").fit(X, y)
table = cv.cv_results_
alpha = [float(a) for a in expected_alpha]
alpha_prime = [np.sqrt(alpha[k] * alpha[k + 1]) for k in range(4)] + [np.inf]
assert np.allclose(table.alpha_prime, alpha_prime, rtol=1e-12, atol=0)
print(table[["alpha", "alpha_prime", "n_leaves", "risk", "cv_risk", "cv_se"]])

# %%
# Leave-one-out by hand
# ---------------------
# The slow procedure of the book: leave case i out, grow and prune a tree on the
# other 149 at each α'_k, classify case i. Refitting is exactly what cartjit avoids
# (one fold tree, scored for every α'_k in one descent), so the two must agree.
wrong = np.zeros(5)
for i in range(len(y)):
    learn = np.arange(len(y)) != i
    for k, a in enumerate(alpha_prime):
        fold_tree = CARTClassifier(ccp_alpha=min(a, 1.0)).fit(X[learn], y[learn])
        wrong[k] += fold_tree.predict(X[i:i + 1])[0] != y[i]
by_hand = wrong / len(y)
print("R^CV(T_k) by hand:", by_hand)
assert np.array_equal(table.cv_risk.to_numpy(), by_hand)

# %%
# rpart's printout of the same table (``printcp``): the rows are numbered as rpart
# numbers them, and the last line says which k each row is.
print_cp(cv)

# %%
# The cross-validated risk against the tree size, with ± 1 SE bars.
plot_cv(cv)

# %%
# The experiment runner's two tables
# ----------------------------------
# ``experiments/monograph.toml`` repeats the random partitions ten times for each V
# (2, 5, 25 and 150 on the petal measurements; 6, 15, 50, 75 and 150 on all four) and
# writes the mean ± sd of R^CV(T_k). Run again here, it reproduces the committed
# tables to the last bit.
from cartjit.experiments import run_experiment

root = Path.cwd()
while not (root / "experiments" / "monograph.toml").exists():
    root = root.parent
committed = root / "experiments" / "results" / "monograph" / "summary"
with tempfile.TemporaryDirectory() as out:
    run_experiment(root / "experiments" / "monograph.toml", Path(out) / "monograph",
                   quiet=True)
    for name in ("iris_petal", "iris"):
        ours = pd.read_csv(Path(out) / "monograph" / "summary" / f"{name}.csv")
        theirs = pd.read_csv(committed / f"{name}.csv")
        pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
        print(name)
        print(ours[["k", "n_leaves", "alpha"] + [c for c in ours if c.endswith("_mean")
                                                 or c.endswith("_loo")]]
              .round(3).to_string(index=False))
    petal = pd.read_csv(Path(out) / "monograph" / "summary" / "iris_petal.csv")
# the runner's leave-one-out column is the hand computation above
assert np.array_equal(petal.V150_loo.to_numpy(), by_hand)
