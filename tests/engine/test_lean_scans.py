"""The lean split scans against the general ones they stand in for.

``best_split_class_runs`` (Gini with unequal factors, entropy, twoing; unit or integer
weights, labels in the keys) must pick the split that the general scan picks case by case and
return its Δi bit for bit; ``best_split_regression_unit`` the same against the general
regression scan given weights of 1 (a weight of 1 multiplies exactly, so the sums are
the same). Segments include symmetric class or response patterns, whose splits tie
exactly, and equal factors up to an ulp (empirical priors).
"""
import numpy as np

from cartjit.engine.impurity import ENTROPY, GINI, TWOING, impurity_from_counts, xlogx_table
from cartjit.engine.speed import LANES
from cartjit.engine.scans import (Segment, Targets, best_split_class_runs,
                               best_split_classification, best_split_regression,
                               best_split_regression_unit)
from cartjit.engine.impurity import tie_tolerance


def _labels(rng, n, k, trial):
    if trial % 4 == 0:  # symmetric pattern: exact ties between splits
        half = rng.integers(0, k, max(1, n // 2))
        return np.concatenate([half, half[::-1]])[:n]
    return np.repeat(rng.integers(0, k, n), rng.integers(1, 8, n))[:n]


def _factor(rng, labels, k, trial):
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    if trial % 3 == 0:  # empirical priors: c_j = (N_j / N) / N_j, equal up to an ulp
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(counts > 0, (counts / counts.sum()) / counts, 1.0)
        return f
    if trial % 3 == 1:  # equal priors
        with np.errstate(divide="ignore"):
            return np.where(counts > 0, (1.0 / k) / np.maximum(counts, 1), 1.0)
    return rng.uniform(0.2, 3.0, k)


def test_class_runs_scan_equals_case_by_case_scan():
    rng = np.random.default_rng(11)
    checked = 0
    for trial in range(600):
        n = int(rng.integers(2, 150))
        k = int(rng.integers(2, 6))
        bits = max(1, (k - 1).bit_length())
        labels = _labels(rng, n, k, trial)
        n = labels.shape[0]
        keys = ((np.arange(n) << bits) | labels).astype(np.int32)
        y = labels.astype(np.int32)
        total = np.bincount(labels, minlength=k).astype(np.float64)
        factor = _factor(rng, labels, k, trial)
        min_leaf = int(rng.integers(1, 4))
        weighted = trial % 5 == 4
        w = rng.integers(1, 4, n).astype(np.float64) if weighted else np.ones(n)
        if weighted:
            total = np.bincount(labels, weights=w, minlength=k)
        for criterion in (GINI, ENTROPY, TWOING):
            imp = impurity_from_counts(total, factor, criterion)
            table = xlogx_table(int(w.sum())) if criterion == ENTROPY else np.empty(0)
            unit = Targets(y, np.empty(0), w if weighted else np.empty(0), not weighted,
                           True, factor, criterion, bits, (1 << bits) - 1, table)
            # the general scan, case by case, with the weights (of 1) given explicitly
            general = Targets(y, np.empty(0), w, False, True, factor, criterion,
                              bits, (1 << bits) - 1, table)
            seg = Segment(keys, keys[:0], 0, n)
            for simd in (False, True):
                d1, p1 = best_split_class_runs(seg, unit, total, imp, min_leaf, simd,
                                               np.zeros(3 * k), np.empty(n + LANES, np.int32))
                d2, p2 = best_split_classification(seg, general, total, imp, min_leaf,
                                                   False, simd, np.zeros(3 * k),
                                                   np.empty(n + LANES, np.int32))
                assert p1 == p2, (trial, criterion, simd, d1, d2)
                assert d1 == d2 or (np.isinf(d1) and np.isinf(d2)), (trial, criterion, d1, d2)
                checked += p1 >= 0
    assert checked > 1000


def test_regression_unit_scan_equals_general_scan():
    rng = np.random.default_rng(5)
    for trial in range(800):
        n = int(rng.integers(2, 200))
        if trial % 4 == 0:  # symmetric responses: exact ties between splits
            half = rng.normal(size=max(1, n // 2))
            y = np.concatenate([half, half[::-1]])[:n]
        elif trial % 4 == 1:  # few values, runs of equal responses
            y = rng.integers(0, 3, n).astype(np.float64)
        else:
            y = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4)
        n = y.shape[0]
        keys = rng.permutation(n).astype(np.int32)
        mean = y.sum() / n
        z = y[keys] - mean
        s_c = 0.0
        for v in z:
            s_c += v
        var = max(float(np.mean((y - mean) ** 2)), 0.0)
        min_leaf = int(rng.integers(1, 5))
        seg = Segment(keys, keys[:0], 0, n)
        d1, p1 = best_split_regression_unit(keys, 0, n, y, mean, s_c, var,
                                            tie_tolerance(var), min_leaf)
        d2, p2 = best_split_regression(seg, y, np.ones(n), False, mean, float(n), s_c, var,
                                       min_leaf)
        assert p1 == p2, (trial, d1, d2)
        assert d1 == d2 or (np.isinf(d1) and np.isinf(d2)), (trial, d1, d2)
