"""Hypothesis strategies shared by the property tests of the naive reference
(``test_naive_parity.py``), of subset splits (``test_categorical_bruteforce.py``) and of
missing values (``test_missing_bruteforce.py``)."""
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


@st.composite
def holes(draw, n):
    """A mask of n entries marking missing values: none, a few, many or most."""
    rate = draw(st.sampled_from([0, 1, 2, 3, 5, 8]))  # in tenths
    return np.array(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))) < rate


def _noisy_copy(draw, source, kind, n):
    """A column that mostly follows ``source`` (a surrogate worth finding): a monotone
    image of it (or its level codes, for a categorical column) with a few entries
    redrawn; the source's holes are filled first."""
    base = np.where(np.isnan(source), 0.0, source)
    if kind == "cat":
        cut = draw(st.sampled_from(sorted(set(base.tolist()))))
        col = (base > cut).astype(float) + (base > cut + 1).astype(float)
    else:
        col = draw(st.sampled_from([1.0, -1.0, 0.5])) * base + draw(st.integers(-2, 2))
    for r in draw(st.lists(st.integers(0, n - 1), max_size=max(1, n // 5))):
        col[r] = float(draw(st.integers(0, 2))) if kind == "cat" else float(
            draw(st.integers(-3, 6)))
    return col


@st.composite
def missing_problem(draw, task=None, n_rows=(8, 40), n_features=(1, 4), classes=(2, 3),
                    real_weights=True, copies=False, levels=(2, 5),
                    kinds=("num", "num", "cat")):
    """A small learning sample with holes (NaN) in ordered and categorical features.

    Categorical columns hold dense level codes 0..L-1 (every code present among the rows
    where the value is given, so that an estimator's level encoding is the identity);
    ordered ones small integers or a pool of floats (ties). Weights: none, small
    integers (zeros included), multiples of 1/4, or (``real_weights``) arbitrary reals.
    A column after the first is, half the time (always with ``copies``), a noisy copy
    of an earlier one, so that surrogate splits have something to find. Classification
    gets priors and costs from :func:`class_tables`; zero weights are kept. A column's
    kind is drawn from ``kinds``; a categorical one has up to ``levels`` levels.
    """
    n = draw(st.integers(*n_rows))
    p = draw(st.integers(*n_features))
    kinds = [draw(st.sampled_from(list(kinds))) for _ in range(p)]
    columns = []
    for m, kind in enumerate(kinds):
        if m > 0 and (copies or draw(st.booleans())):  # a noisy copy of an earlier column
            col = _noisy_copy(draw, columns[draw(st.integers(0, m - 1))], kind, n)
        elif kind == "cat":
            L = draw(st.integers(*levels))
            codes = np.array(draw(st.lists(st.integers(0, L - 1), min_size=n, max_size=n)))
            col = np.unique(codes, return_inverse=True)[1].astype(float)
        elif draw(st.booleans()):
            col = np.array(draw(st.lists(st.integers(-1, 5), min_size=n, max_size=n)), float)
        else:
            pool = draw(st.lists(st.floats(-50, 50, allow_nan=False, allow_subnormal=False),
                                 min_size=1, max_size=6))
            col = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
        mask = draw(holes(n))
        col[mask] = np.nan
        if kind == "cat" and np.any(~mask):  # dense codes among the given values
            given = np.unique(col[~mask], return_inverse=True)[1]
            col[~mask] = given.astype(float)
        columns.append(col)
    X = np.column_stack(columns)
    categorical = [m for m, kind in enumerate(kinds) if kind == "cat"]
    kinds_w = ["none", "none", "int", "quarter"] + (["real"] if real_weights else [])
    kind_w = draw(st.sampled_from(kinds_w))
    if kind_w == "none":
        w = None
    elif kind_w == "int":
        w = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), float)
    elif kind_w == "quarter":
        w = np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)), float) / 4
    else:
        w = np.array(draw(st.lists(st.sampled_from([0.1, 0.3, 0.7, 1.0, 1.5, 2.9]),
                                   min_size=n, max_size=n)))
    if task is None:
        task = draw(st.sampled_from(["classification", "classification", "regression"]))
    prob = dict(X=X, categorical=categorical, task=task)
    if task == "regression":
        if draw(st.booleans()):
            y = np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float)
        else:
            pool = draw(st.lists(st.floats(-100, 100, allow_nan=False, allow_subnormal=False)
                                 .map(lambda v: 0.0 if abs(v) < 1e-100 else v),
                                 min_size=1, max_size=6))
            y = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
        if w is not None and not np.any(w > 0):
            w[0] = 1.0
        prob.update(y=y, w=w)
        return prob
    k = draw(st.sampled_from(list(classes)))
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    if w is not None:  # every class keeps a case of positive weight
        for g in np.unique(y):
            members = np.flatnonzero(y == g)
            if w[members].sum() <= 0:
                w[members[0]] = 1.0
    classes_, yi = np.unique(y, return_inverse=True)
    J = classes_.shape[0]
    priors, cost = draw(class_tables(J))
    prob.update(y=yi, J=J, w=w, priors=priors, cost=cost,
                criterion=draw(st.sampled_from(["gini", "gini", "entropy", "twoing"])))
    return prob


@st.composite
def surrogate_settings(draw):
    """max_surrogate, use_surrogate, surrogate_style and max_competitor."""
    return dict(max_surrogate=draw(st.sampled_from([0, 1, 2, 5, 5])),
                use_surrogate=draw(st.sampled_from([0, 1, 2, 2])),
                surrogate_style=draw(st.sampled_from([0, 1])),
                max_competitor=draw(st.sampled_from([0, 1, 4, 4])))


@st.composite
def missing_stopping(draw):
    return dict(max_depth=draw(st.one_of(st.none(), st.integers(1, 4))),
                min_samples_split=draw(st.sampled_from([2, 2, 2, 3, 5])),
                min_samples_leaf=draw(st.sampled_from([1, 1, 1, 2, 3])),
                min_impurity_decrease=draw(st.sampled_from([0.0, 0.0, 0.0, 0.0, 0.01])))
