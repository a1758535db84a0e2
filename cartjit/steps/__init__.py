"""CART's steps as tables: what the kernels compute, shown one number at a time.

A fitted tree stores the outcome of every step (the chosen split of each node, the α at
which each node is pruned, the cross-validated risk of each subtree); these functions
lay out the computations behind them, as a course does by hand:

* :func:`split_candidates`: every candidate split of one node, with the counts on each
  side, the children's impurities and Δi (docs/maths.md §2, §3, §7, §8), marking the
  split the search chooses and the exact ties;
* :func:`multiway_gains`: the information gain of each feature split into all of its
  values at once (ID3's gain, which CART's binary splits are compared with);
* :func:`pruning_steps`: the weakest-link loop (§4): g_k(t) of every internal node of
  every T_k, the weakest links, α_{k+1} and the leaves of T_{k+1};
* :func:`cv_steps`: the cross-validation (§5): for every α'_k the pooled table N_ij of
  the held-out cases (true class j, predicted class i), R^CV(j) by class, R^CV and its
  SE, per fold if asked; the squared errors for a regression tree;
* :func:`tied_splits`: the split nodes whose chosen split ties exactly with another
  (the same partition of the node's cases, or equal goodness in exact arithmetic).

These are teaching views written in NumPy, not the kernels: they recompute each number
from the data and the fitted tree, in the engine's order of operations, so that their
chosen split, Δi and α agree with the fitted tree (tests/teaching/ checks them on random
trees). The tables are :class:`StepTable` DataFrames, printed with a caption that says
what the rows are. Pictures of the same steps are in :mod:`cartjit.plotting_steps`.

The package: :mod:`._common` (the tables, the data, a node's cases), :mod:`.splits`,
:mod:`.pruning`, :mod:`.cv`, :mod:`.ties`.
"""
from __future__ import annotations

from ._common import TIE_ULPS, StepTable
from .cv import CVSteps, cv_steps
from .pruning import pruning_steps
from .splits import multiway_gains, split_candidates
from .ties import tied_splits

__all__ = ["StepTable", "split_candidates", "multiway_gains", "pruning_steps", "cv_steps",
           "CVSteps", "TIE_ULPS", "tied_splits"]
