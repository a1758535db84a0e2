"""The nodes whose chosen split ties exactly with another split (docs/reading-trees.md).

At many nodes of a tree grown on real data another split is exactly as good as the chosen
one: it sends the very same cases left (``x3 <= 2.45`` and ``x4 <= 0.8`` on iris), or its
counts give the same goodness in exact arithmetic. The search keeps the first of them in
its order (the lowest feature, then the lowest threshold or the canonical subset,
docs/maths.md §2); another correct program that scans in another order, or rounds
differently, keeps another one, and its tree, pruning sequence and CV table differ from
there on. :func:`tied_splits` lists those ties for the split nodes of ``tree_``.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from ..engine.tree import LEAF
from ._common import _Data, _fitted, _node_cases, _table
from .splits import split_candidates

__all__ = ["tied_splits", "SAME_PARTITION", "EXACT", "WITHIN_TOLERANCE", "NOT_EXACT"]

#: The kinds of tie, from the strongest.
SAME_PARTITION = "same partition"
EXACT = "equal goodness (exact)"
WITHIN_TOLERANCE = "equal goodness (within the engine's tolerance)"
NOT_EXACT = "engine tie, not equal in exact arithmetic"

#: Candidates whose float goodness is this close (relative) to the chosen one's are
#: checked in exact arithmetic (exactly equal values differ by a few ulps at most).
_SCREEN_RTOL = 1e-9


def _node_pairs(tree, tree_max):
    """``(id in tree, id in tree_max)`` of every split node of ``tree`` (a pruned subtree
    of ``tree_max``), by walking both from the root."""
    out, stack = [], [(0, 0)]
    while stack:
        t, m = stack.pop()
        if tree.left[t] == LEAF:
            continue
        out.append((t, m))
        stack.append((int(tree.right[t]), int(tree_max.right[m])))
        stack.append((int(tree.left[t]), int(tree_max.left[m])))
    return sorted(out)


def _sides_of(estimator, data, idx, f, row):
    """``(present, left)`` masks over the node's cases ``idx`` of a candidate ``row`` of
    :func:`split_candidates` on feature ``f``; None when its subset cannot be read."""
    x = data.X[idx, f]
    if not np.isnan(row["threshold"]):
        present = ~np.isnan(x)
        return present, present & (x <= row["threshold"])
    cats = estimator.categories_[f]
    names = [str(c) for c in cats] if cats is not None else None
    text = str(row["left"])
    inner = text[1:-1].split(", ") if text.startswith("{") and text.endswith("}") else []
    right = str(row["right"])[1:-1].split(", ")
    code = {}
    for c in range(len(names) if names is not None else int(np.nanmax(x)) + 1):
        code[names[c] if names is not None else str(c)] = c
    if not inner or any(s not in code for s in inner + right):
        return None
    codes = np.nan_to_num(x, nan=-1.0).astype(np.int64)
    left = np.isin(codes, [code[s] for s in inner])
    return left | np.isin(codes, [code[s] for s in right]), left


def _integer_weights(w):
    return bool(np.all(np.isfinite(w)) and np.all(w == np.round(w)))


def _exact_factor(estimator):
    """The class factors c_j = π'(j) / N_j of the split search (docs/maths.md §2) as
    Fractions: the priors as given (empirical: N_j / N, equal: 1 / J, else the floats
    given, each an exact rational), altered by the row sums of the costs when these are
    not 0-1, normalised over the classes present."""
    totals = [Fraction(float(v)) for v in estimator.class_weight_totals_]
    J = len(totals)
    setting = getattr(estimator, "priors", "empirical")
    if isinstance(setting, str) and setting == "empirical":
        prior = list(totals)
    elif isinstance(setting, str):
        prior = [Fraction(1, J)] * J
    else:
        prior = [Fraction(float(v)) for v in estimator.priors_]
    if not estimator._split_cost_default:
        cost = np.asarray(estimator.cost_, dtype=np.float64)
        prior = [p * sum(Fraction(float(v)) for v in cost[j]) for j, p in enumerate(prior)]
    prior = [p if n > 0 else Fraction(0) for p, n in zip(prior, totals)]
    total = sum(prior)
    return [p / total / n if n > 0 else Fraction(0) for p, n in zip(prior, totals)]


def _class_goodness(data, idx, present, left, factor, criterion, node_total):
    """The goodness Δi · Q(P)/Q(t) of a classification split as a Fraction, from the
    integer class counts and the exact class factors (Gini, twoing)."""
    J = data.n_classes
    y, w = data.y[idx], data.w[idx]
    c = factor

    def q(mask):
        n = np.bincount(y[mask], weights=w[mask], minlength=J)
        return [c[j] * int(round(n[j])) for j in range(J)]

    ql, qr = q(present & left), q(present & ~left)
    sl, sr = sum(ql), sum(qr)
    s = sl + sr
    if sl == 0 or sr == 0:
        return None
    if criterion == "twoing":
        diff = sum(abs(a / sl - b / sr) for a, b in zip(ql, qr))
        delta = sl / s * sr / s / 4 * diff * diff
    else:
        def gini(qs, tot):
            return 1 - sum((v / tot) ** 2 for v in qs)
        qp = [a + b for a, b in zip(ql, qr)]
        delta = gini(qp, s) - sl / s * gini(ql, sl) - sr / s * gini(qr, sr)
    return delta * s / node_total


def _entropy_key(data, idx, left):
    """An exact key of the children's weighted entropy N_L H_L + N_R H_R (nats), for a
    split without missing values and equal class factors: exp of it is the Fraction
    N_L^N_L N_R^N_R / Π_j N_Lj^N_Lj N_Rj^N_Rj, and equal keys are equal goodness."""
    J = data.n_classes
    y, w = data.y[idx], data.w[idx]
    num, den = 1, 1
    for mask in (left, ~left):
        n = [int(round(v)) for v in np.bincount(y[mask], weights=w[mask], minlength=J)]
        total = sum(n)
        num *= total ** total
        for v in n:
            den *= v ** v
    return Fraction(num, den)


def _reg_goodness(data, idx, present, left):
    """(S_L²/W_L + S_R²/W_R - S_P²/W_P) / W(t) of a regression split in exact arithmetic
    (S: Σ w y, W: Σ w, on the cases present): its Δi times the share present."""
    y, w = data.y[idx], data.w[idx]

    def sums(mask):
        ws = [int(round(v)) for v in w[mask]]
        return sum(ws), sum(Fraction(float(v)) * k for v, k in zip(y[mask], ws))

    wl, sl = sums(present & left)
    wr, sr = sums(present & ~left)
    wt = sum(int(round(v)) for v in w)
    if wl == 0 or wr == 0:
        return None
    return (sl * sl / wl + sr * sr / wr - (sl + sr) ** 2 / (wl + wr)) / wt


def _exact_value(estimator, data, idx, sides, criterion, factor, node_total):
    """An exact value that is equal for two splits of the node exactly when their
    goodness is (a Fraction, or an entropy key), or None when not computable here."""
    present, left = sides
    if data.is_class:
        if criterion == "entropy":
            counts = np.bincount(data.y[idx], minlength=data.n_classes)
            uniform = len({c for c, n in zip(factor, counts) if n > 0}) <= 1
            if not (uniform and present.all()):
                return None
            return ("entropy", _entropy_key(data, idx, left))
        return ("fraction", _class_goodness(data, idx, present, left, factor, criterion,
                                            node_total))
    return ("fraction", _reg_goodness(data, idx, present, left))


def _split_text(row):
    sep = " in " if np.isnan(row["threshold"]) else " "
    return f"{row['feature']}{sep}{row['left']}"


def tied_splits(estimator, X, y, *, sample_weight=None):
    """The splits tied with the chosen split of each split node of ``tree_``.

    For every split node, the candidates of :func:`split_candidates` (those the search
    may choose: ``allowed``, and ``searched`` for subsets) that tie with the chosen split:

    * ``same partition``: it sends exactly the same cases of the node left (or exactly
      the ones the chosen split sends right), neither feature missing at the node;
    * ``equal goodness (exact)``: its goodness equals the chosen one's in exact arithmetic,
      computed with fractions from the integer class counts and the priors (Gini,
      twoing; empirical priors as N_j / N, equal ones as 1 / J, given ones and costs as
      the exact numbers their floats are) or
      from the responses (squared error), which needs integer case weights; for entropy,
      whose logarithms are not rational, the children's weighted entropies are compared
      as exact products of powers, which needs equal class factors (empirical priors
      and unit costs) and no missing values;
    * ``equal goodness (within the engine's tolerance)``: where exact arithmetic is not
      available (non-integer weights; entropy with other priors or missing values), a
      candidate within 16 ulps of i(t) of the chosen goodness (``tied`` of
      :func:`split_candidates`);
    * ``engine tie, not equal in exact arithmetic``: within that tolerance, but exact
      arithmetic says the goodness differs (listed for completeness).

    The search keeps the first of tied splits in its order (lowest feature, then lowest
    threshold or canonical subset, docs/maths.md §2).

    Parameters
    ----------
    estimator : CARTClassifier, CARTRegressor, CARTClassifierCV or CARTRegressorCV
        A fitted tree estimator.
    X, y, sample_weight : the learning sample of the fit, as for :func:`split_candidates`.

    Returns
    -------
    StepTable
        One row per tied candidate, by node: ``node`` (the id in ``tree_``),
        ``node_max`` (in ``tree_max_``), ``n_cases``, ``chosen`` and ``tied_with`` (the
        splits as text), ``feature`` and ``threshold`` of the tied split (NaN for a
        subset split), ``kind`` (above), ``exact`` (True when decided in exact
        arithmetic), ``goodness_chosen`` and ``goodness`` (floats; Δi when no case
        misses a feature). The caption counts the split nodes with a tie.
    """
    caller = "tied_splits"
    tree_max = _fitted(estimator, caller)
    tree = estimator.tree_
    data = _Data(estimator, X, y, sample_weight, caller)
    integer = _integer_weights(data.w)
    criterion = estimator.criterion
    factor = _exact_factor(estimator) if data.is_class and integer else None
    names = (list(map(str, estimator.feature_names_in_))
             if getattr(estimator, "feature_names_in_", None) is not None
             else [f"x{j}" for j in range(estimator.n_features_in_)])
    rows = []
    pairs = _node_pairs(tree, tree_max)
    for t, m in pairs:
        table = split_candidates(estimator, X, y, node=m, sample_weight=sample_weight)
        if not table["chosen"].any():
            continue
        good = "goodness" if "goodness" in table.columns else "delta_i"
        r0 = int(np.flatnonzero(table["chosen"].to_numpy())[0])
        chosen = table.iloc[r0]
        best = float(chosen[good])
        usable = table["allowed"].to_numpy().copy()
        if "searched" in table.columns:
            usable &= table["searched"].to_numpy()
        g = table[good].to_numpy()
        near = table["tied"].to_numpy() | (np.abs(g - best) <= _SCREEN_RTOL * abs(best))
        candidates = np.flatnonzero(usable & near & ~table["chosen"].to_numpy())
        if not candidates.shape[0]:
            continue
        idx = _node_cases(estimator, tree_max, m, data, caller)
        if data.is_class:
            counts = np.bincount(data.y[idx], weights=data.w[idx], minlength=data.n_classes)
            node_total = sum(c * int(round(n))
                             for c, n in zip(factor, counts)) if integer else None
        else:
            node_total = None
        f0 = names.index(chosen["feature"])
        s0 = _sides_of(estimator, data, idx, f0, chosen)
        e0 = (_exact_value(estimator, data, idx, s0, criterion, factor, node_total)
              if integer and s0 is not None else None)
        for r in candidates:
            row = table.iloc[int(r)]
            f = names.index(row["feature"])
            s = _sides_of(estimator, data, idx, f, row)
            kind, exact = None, False
            if s is not None and s0 is not None and s[0].all() and s0[0].all() and (
                    np.array_equal(s[1], s0[1]) or np.array_equal(s[1], ~s0[1])):
                kind, exact = SAME_PARTITION, True
            else:
                e = (_exact_value(estimator, data, idx, s, criterion, factor, node_total)
                     if e0 is not None and s is not None else None)
                if e is not None and e[1] is not None and e0[1] is not None \
                        and e[0] == e0[0]:
                    exact = True
                    if e == e0:
                        kind = EXACT
                    elif bool(row["tied"]):
                        kind = NOT_EXACT
                elif bool(row["tied"]):
                    kind = WITHIN_TOLERANCE
            if kind is None:
                continue
            rows.append({"node": t, "node_max": m, "n_cases": int(idx.shape[0]),
                         "chosen": _split_text(chosen), "tied_with": _split_text(row),
                         "feature": row["feature"], "threshold": float(row["threshold"]),
                         "kind": kind, "exact": exact, "goodness_chosen": best,
                         "goodness": float(row[good])})
    columns = ["node", "node_max", "n_cases", "chosen", "tied_with", "feature", "threshold",
               "kind", "exact",
               "goodness_chosen", "goodness"]
    out = pd.DataFrame(rows, columns=columns)
    real = out[out["kind"] != NOT_EXACT]
    n_tied = int(real["node"].nunique())
    loose = int(real.loc[real["kind"] == WITHIN_TOLERANCE, "node"].nunique())
    caption = (f"{n_tied} of {len(pairs)} split nodes of tree_ have a split tied with the "
               "chosen one (same partition, or equal goodness in exact arithmetic)")
    if loose:
        why = ("the case weights are not integers" if not integer else
               "entropy with unequal class factors or missing values")
        caption += (f"; at {loose} of them only within the engine's tolerance of 16 ulps "
                    f"of i(t) ({why}: no exact arithmetic)")
    return _table(out, caption)
