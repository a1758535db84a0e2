"""Hypothesis strategies shared by the property tests of the naive reference
(``test_naive_parity.py``) and of subset splits (``test_categorical_bruteforce.py``)."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


@st.composite
def class_tables(draw, n_classes):
    """``(priors, cost)`` for ``n_classes`` classes: "empirical", "equal" or given priors,
    and no cost (0-1) or a random cost matrix with a zero diagonal in which every true
    class costs something to misclassify."""
    J = n_classes
    prior_kind = draw(st.sampled_from(["empirical", "equal", "given"]))
    if prior_kind == "given":
        a = np.array(draw(st.lists(st.integers(1, 6), min_size=J, max_size=J)), float)
        priors = a / a.sum()
    else:
        priors = prior_kind
    cost = None
    if J > 1 and draw(st.booleans()):
        cost = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 5.0]),
                                      min_size=J * J, max_size=J * J))).reshape(J, J)
        np.fill_diagonal(cost, 0.0)
        for j in range(J):
            if cost[j].sum() == 0:  # every true class must cost something to misclassify
                cost[j, (j + 1) % J] = 1.0
    return priors, cost
