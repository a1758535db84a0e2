"""
rpart's tables
==============

``rpart(Species ~ ., iris)`` is the first tree many people grow in R. The same tree in
cartjit takes rpart's defaults spelled out (minsplit 20, minbucket 7, maxdepth 30,
cp 0.01, five surrogates) and ``compat="rpart"`` for rpart's pruning rules
(docs/rpart.md). The page checks rpart's printed figures: the CP table's ``CP``,
``nsplit`` and ``rel error`` columns, and ``variable.importance``, as rpart 4.1
prints them. With R installed, it also hands rpart's own fold vector to cartjit and
compares the cross-validated columns ``xerror`` and ``xstd``.
"""

# %%
import shutil
import subprocess

import numpy as np

from cartjit import CARTClassifierCV, print_cp, summary
from cartjit.datasets import load_iris

X, y = load_iris(return_X_y=True)
rpart_defaults = dict(min_samples_split=20, min_samples_leaf=7, max_depth=30, cp=0.01,
                      max_surrogate=5, compat="rpart")
fit = CARTClassifierCV(cv=10, random_state=0, **rpart_defaults).fit(X, y)
print_cp(fit)

# %%
# ``cptable_`` is ``fit$cptable``, the root first. rpart prints
#
# .. code-block:: text
#
#       CP nsplit rel error
#     1 0.50      0      1.00
#     2 0.44      1      0.50
#     3 0.01      2      0.06
table = fit.cptable_
print(table)
assert np.allclose(table["CP"], [0.50, 0.44, 0.01], rtol=0, atol=1e-12)
assert table["nsplit"].tolist() == [0, 1, 2]
assert np.allclose(table["rel error"], [1.00, 0.50, 0.06], rtol=0, atol=1e-12)

# %%
# ``variable.importance``: each feature's improvements as the primary split plus its
# surrogates' improvements weighted by their adjusted agreement. rpart gives
# Petal.Width 88.96940, Petal.Length 81.34496, Sepal.Length 54.09606,
# Sepal.Width 36.01309, which ``summary(fit)`` rounds to percentages 34, 31, 21, 14.
imp = fit.variable_importance_
print(imp)
rpart_importance = {"petal_width": 88.96940419, "petal_length": 81.34495554,
                    "sepal_length": 54.09605825, "sepal_width": 36.01309249}
for name, value in rpart_importance.items():
    assert abs(imp[name] - value) < 1e-6, (name, imp[name], value)
percent = np.round(100 * imp / imp.sum()).astype(int)
assert percent.tolist() == [34, 31, 21, 14]
print(summary(fit))

# %%
# The cross-validated columns depend on the random folds. Given rpart's fold vector
# (``xval = folds``), cartjit's ``xerror`` and ``xstd`` are rpart's, digit for digit.
if shutil.which("Rscript"):
    script = """
    suppressMessages(library(rpart)); set.seed(1)
    folds <- sample(rep(1:10, length.out = 150))
    f <- rpart(Species ~ ., iris, xval = folds)
    cat(folds, "\\n"); cat(sprintf("%.17g", f$cptable[, "xerror"]), "\\n")
    cat(sprintf("%.17g", f$cptable[, "xstd"]), "\\n")
    """
    lines = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    folds = np.array(lines[0].split(), dtype=int)
    xerror = np.array(lines[1].split(), dtype=float)
    xstd = np.array(lines[2].split(), dtype=float)
    same_folds = CARTClassifierCV(cv=folds, **rpart_defaults).fit(X, y)
    print(same_folds.cptable_)
    assert np.allclose(same_folds.cptable_["xerror"], xerror, rtol=1e-12, atol=0)
    assert np.allclose(same_folds.cptable_["xstd"], xstd, rtol=1e-12, atol=0)
    print("xerror and xstd equal rpart's:", xerror, xstd)
else:
    print("Rscript is not installed: the comparison of xerror with rpart is skipped")
