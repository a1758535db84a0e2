"""Exact rescaling of weights, costs and regression responses around the kernels.

Scaling every case weight, every cost or every response by a positive constant c is a
change of units: the tree (features, thresholds, children, labels) must not change, and
the reported quantities scale exactly as the quantities they measure:

================================  ==============  ============  ==================
quantity                          weights × c     costs × c     responses y × c
================================  ==============  ============  ==================
``value`` (classification)        × c             —             n/a
``value`` (regression, ȳ(t))      —               n/a           × c
``weighted_n_node_samples``, N_j  × c             —             —
``impurity``, Δi (regression)     —               n/a           × c²
``risk`` R(t), α, R(T_k)          —               × c           × c²
================================  ==============  ============  ==================

(With priors, p(j, t) = π(j) N_j(t) / N_j and R(t) do not depend on the weights' unit;
for regression R(t) = Σ w (y - ȳ)² / W does not either.)

The kernels, however, square weighted sums (the Gini proxy Σ q_j² / Q, the regression
proxy S² / W) and multiply costs into risks, so in float64 a weight of 1e-200 (or
1e200) underflows (overflows) inside the split search and gives a wrong tree with no
error. :func:`normalise` therefore divides the weights, the costs and the responses by a
power of two — an exact operation — chosen from their largest magnitude whenever that
lies outside ``[2**-64, 2**64]`` (values inside the window are passed through untouched,
so ordinary fits do not pay for a copy), and :func:`restore` multiplies the reported
quantities back, exactly. Weights that are all equal are fitted as unit weights (the
same tree, exactly) and the weighted counts multiplied by the common weight afterwards.

What cannot be carried is refused by the input checks (:mod:`cartjit._validation`),
with the limits below: a smallest positive weight that would vanish in the sums of
weights (below 2**-40 of the total), costs or priors spanning too many orders of
magnitude (the smallest would underflow in the kernels' squared sums once the largest
is brought near 1), a weight total that overflows, and responses whose squared errors
overflow or underflow float64.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Scale", "normalise", "restore", "power_of_two", "MAX_WEIGHT_RANGE",
           "MAX_COST_RANGE", "MAX_PRIOR_RANGE", "MIN_COST", "MIN_Y_SPREAD", "MAX_Y_SPREAD",
           "WINDOW"]

#: Largest magnitudes in [1/WINDOW, WINDOW] are passed to the kernels unchanged.
WINDOW = 2.0**64

#: Total weight / smallest positive case weight. The split search takes the right
#: side's sums as the node's minus the left's (W_R = W - W_L, N_j(t_R) = N_j(t) - N_j(t_L)),
#: so a weight below 2**-53 of the total vanishes from them: a node's worth of such cases
#: would weigh exactly 0 there, and its splits would be skipped or decided on rounding.
#: Below this bound the smallest weight keeps at least 13 bits in any sum of weights.
#: (It also keeps a class share q_j(t) >= 2**-(40 + 100 + 100) with the prior and cost
#: bounds below, whose square, the Gini proxy, stays far inside float64's normal range.)
MAX_WEIGHT_RANGE = 2.0**40
#: Largest / smallest positive off-diagonal cost.
MAX_COST_RANGE = 2.0**100
#: Largest / smallest prior.
MAX_PRIOR_RANGE = 2.0**100
#: The smallest positive cost: risks p(t) C below it would reach float64's subnormals.
MIN_COST = 2.0**-500
#: A regression response whose spread max(y) - min(y) is positive but below this has
#: squared errors (risks, α) below 2**-900, where float64 loses precision to underflow.
MIN_Y_SPREAD = 2.0**-450
#: Above this spread, or this magnitude (a mean is rounded to an ulp of y), the squared
#: errors (impurity, risk, α, held-out losses) may overflow.
MAX_Y_SPREAD = math.sqrt(np.finfo(np.float64).max) / 4.0


class Scale(NamedTuple):
    """Factors from the kernels' units back to the user's (1.0: unchanged)."""

    weight: float = 1.0   # user weights = kernel weights × weight
    y: float = 1.0        # user responses = kernel responses × y
    cost: float = 1.0     # user costs = kernel costs × cost

    def to_loss_units(self, values, is_classification):
        """Risks, α or squared errors times the cost's factor, or the response's squared
        (in two steps: the square alone may overflow where the product does not)."""
        if is_classification:
            return values * self.cost
        return values * self.y * self.y

    @property
    def identity(self):
        return self.weight == 1.0 and self.y == 1.0 and self.cost == 1.0


def power_of_two(largest):
    """2**e with ``largest / 2**e`` in [1, 2), or 1.0 when ``largest`` is 0 or already
    lies in [1/WINDOW, WINDOW]."""
    largest = float(largest)
    if largest == 0.0 or 1.0 / WINDOW <= largest <= WINDOW:
        return 1.0
    return math.ldexp(1.0, math.frexp(largest)[1] - 1)


def normalise(problem, settings, *, uniform=True):
    """``(problem, settings, Scale)`` in the kernels' units (see the module docstring).

    ``uniform=True`` fits equal weights as unit weights (the caller restores the counts
    with :func:`restore`); ``False`` keeps them, which the held-out scoring needs, since
    its results do not depend on the weights' unit. ``min_impurity_decrease`` is on the
    scale of Δi, which for regression is y², so it is rescaled with y.
    """
    w_scale = y_scale = cost_scale = 1.0
    if not problem.unit_weights and problem.w.size:
        w = problem.w
        w_max = float(w.max())
        if uniform and float(w.min()) == w_max:
            problem = problem._replace(w=np.empty(0, dtype=np.float64), unit_weights=True)
            w_scale = w_max
        else:
            w_scale = power_of_two(w_max)
            if w_scale != 1.0:
                problem = problem._replace(w=w / w_scale)
    if problem.is_classification:
        if settings.cost is not None and settings.cost.size:
            cost_scale = power_of_two(settings.cost.max())
            if cost_scale != 1.0:
                settings = settings._replace(cost=settings.cost / cost_scale)
    elif problem.y_reg.size:
        y = problem.y_reg
        y_scale = power_of_two(max(float(y.max()), -float(y.min())))  # max |y|, no copy
        if y_scale != 1.0:
            problem = problem._replace(y_reg=problem.y_reg / y_scale)
            # two divisions: y_scale² alone may overflow when the y are all huge and equal
            settings = settings._replace(
                min_impurity_decrease=settings.min_impurity_decrease / y_scale / y_scale)
    return problem, settings, Scale(w_scale, y_scale, cost_scale)


def restore(fitted, scale):
    """A :class:`cartjit.engine.fit.Fitted` in the user's units (exact for powers of two)."""
    if scale.identity:
        return fitted
    tree = fitted.tree
    is_class = fitted.priors is not None
    changes = {}
    class_totals = fitted.class_totals
    if scale.weight != 1.0:
        changes["weighted_n_node_samples"] = tree.weighted_n_node_samples * scale.weight
        if is_class:
            changes["value"] = tree.value * scale.weight
            class_totals = class_totals * scale.weight
    alphas, n_leaves, path_risk = fitted.path
    if (scale.cost if is_class else scale.y) != 1.0:
        def units(values):
            return scale.to_loss_units(values, is_class)
        changes["risk"] = units(tree.risk)
        changes["alpha"] = units(tree.alpha)
        alphas, path_risk = units(alphas), units(path_risk)
        if not is_class:  # Δi and the variance are squared errors too; ȳ scales with y
            changes["value"] = tree.value * scale.y
            changes["impurity"] = units(tree.impurity)
            changes["improvement"] = units(tree.improvement)
            changes["competitor_improvement"] = units(tree.competitor_improvement)
    return fitted._replace(tree=tree._replace(**changes), class_totals=class_totals, path=(alphas, n_leaves, path_risk))


#: J-column node tables alive at once while a classification tree is assembled: the
#: grower's class counts, the tree's copy, and p(j, t) and the risks of every label.
_CLASS_TABLES = 4


def check_class_tables(n_cases, n_classes, settings):
    """Refuse up front a classification fit whose J-column node tables cannot fit.

    The estimate is the tree grown until its leaves are pure, bounded by ``max_depth``
    and ``min_samples_leaf``: at least one leaf per class present (at most one per
    ``min_samples_leaf`` cases), so 2 L - 1 nodes of J float64 values per table.
    """
    from .limits import check_allocation

    if n_classes <= 1:
        return
    leaves = min(n_classes, max(1, n_cases // max(1, settings.min_samples_leaf)))
    if settings.max_depth >= 0:
        leaves = min(leaves, 2 ** min(settings.max_depth, 62))
    nbytes = _CLASS_TABLES * (2 * leaves - 1) * n_classes * 8
    check_allocation(
        nbytes, f"a tree of {n_classes} classes ({2 * leaves - 1} nodes of {n_classes} "
        "weighted class counts each, in the node tables)",
        "fewer classes (merge rare labels) or a smaller max_depth would need less")
