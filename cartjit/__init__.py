"""cartjit: CART classification and regression trees with Numba-compiled kernels.

Grow a tree, prune it by cost-complexity (weakest link) and choose the pruned subtree by
V-fold cross-validation, following Breiman, Friedman, Olshen & Stone (1984) and R's rpart.
"""
from __future__ import annotations

from ._tree import Tree, validate
from ._validation import NotFittedError
from .estimators import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from .export import export_text

__version__ = "0.1.0"

__all__ = ["CARTClassifier", "CARTClassifierCV", "CARTRegressor", "CARTRegressorCV",
           "NotFittedError", "Tree", "export_text", "validate", "__version__"]
