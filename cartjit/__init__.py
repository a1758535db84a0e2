"""cartjit: CART classification and regression trees with Numba-compiled kernels.

Grow a tree, prune it by cost-complexity (weakest link) and choose the pruned subtree by
V-fold cross-validation, following Breiman, Friedman, Olshen & Stone (1984) and R's rpart.

The estimators, ``export_text``, ``summary`` and the plots are imported on first use: with
scikit-learn installed the estimators derive from its base classes, and importing those
costs about a second, which ``import cartjit`` alone (the command line,
``cartjit.datasets``) need not pay; the plots import matplotlib only when called.
"""
from __future__ import annotations

import importlib

from .engine.tree import Tree, validate
from ._validation import NotFittedError

__version__ = "0.1.0"

__all__ = ["BaggedCARTClassifier", "BaggedCARTRegressor", "CARTClassifier",
           "CARTClassifierCV", "CARTRegressor", "CARTRegressorCV", "ModelFileError", "NotFittedError", "Tree", "export_graphviz", "export_rules",
           "export_text", "format_cp", "load", "node_id", "node_numbers", "plot_cv",
           "plot_forest_importance", "plot_importance", "plot_oob_error", "plot_proximity",
           "plot_partition", "plot_tree", "print_cp", "RandomForestClassifier",
           "RandomForestRegressor", "save", "summary", "validate", "__version__",
           "split_candidates", "multiway_gains", "pruning_steps", "cv_steps",
           "plot_split_candidates", "plot_pruning_sequence"]

_LAZY = {"CARTClassifier": "estimators", "CARTClassifierCV": "estimators",
         "CARTRegressor": "estimators", "CARTRegressorCV": "estimators",
         "RandomForestClassifier": "ensemble", "RandomForestRegressor": "ensemble",
         "BaggedCARTClassifier": "ensemble", "BaggedCARTRegressor": "ensemble",
         "export_text": "export", "summary": "export", "export_rules": "export",
         "export_graphviz": "export", "format_cp": "export", "print_cp": "export",
         "node_numbers": "export", "node_id": "export",
         "plot_tree": "plotting", "plot_partition": "plotting", "plot_cv": "plotting",
         "plot_importance": "plotting", "plot_oob_error": "plotting",
         "plot_forest_importance": "plotting", "plot_proximity": "plotting",
         "save": "_modelfile", "load": "_modelfile", "ModelFileError": "_modelfile",
         "split_candidates": "steps", "multiway_gains": "steps", "pruning_steps": "steps",
         "cv_steps": "steps", "plot_split_candidates": "plotting_steps",
         "plot_pruning_sequence": "plotting_steps"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
