"""The 16-key blocks (cartjit.engine.speed) and the lean Gini scan give what the scalar code gives.

Both paths are compiled on every machine: on a CPU without AVX-512, LLVM expands the
compress-store intrinsics lane by lane, so these tests check the block logic there too.
"""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor
from cartjit.engine import speed as _config
from cartjit.engine.records import Frontier, Splits, Work
from cartjit.engine.children import _partition
from cartjit.engine.speed import step_counters
from cartjit.engine.speed import _simd_flag
from cartjit.engine.speed import LANES
from cartjit.engine.impurity import GINI, impurity_from_counts
from cartjit.engine.scans import (Segment, Targets, best_split_classification,
                               best_split_gini_runs, list_class_changes)


@njit
def _list(keys, lo, hi, mask, simd, cand):
    return list_class_changes(keys, lo, hi, keys, mask, simd, cand)


def _reference_changes(keys, lo, hi, mask):
    cls = keys & mask
    inner = [i for i in range(lo + 1, hi) if cls[i] != cls[i - 1]]
    return [lo] + inner + ([hi] if hi > lo else [])


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_class_change_listing_matches_reference(n_classes):
    rng = np.random.default_rng(n_classes)
    bits = max(1, (n_classes - 1).bit_length())
    n = 200
    runs = np.repeat(rng.integers(0, n_classes, n), rng.integers(1, 6, n))[:n]
    keys = ((rng.permutation(n) << bits) | runs).astype(np.int32)
    mask = (1 << bits) - 1
    cand = np.empty(n + LANES, np.int32)  # a block may write 16 past its last position
    for lo in (1, 2, 7, 16, 17, 33):
        for length in list(range(0, 40)) + [63, 64, 65, 150]:
            hi = lo + length
            if hi >= n:
                continue
            expected = _reference_changes(keys, lo, hi, mask)
            for simd in (False, True):
                cand[:] = -7
                m = _list(keys, lo, hi, mask, simd, cand)
                assert list(cand[:m]) == expected, (lo, hi, simd)
                # nothing written past them (a 16-key block: past a block's room)
                assert np.all(cand[m + (LANES if simd else 0):] == -7), (lo, hi, simd)


def _partition_reference(row, start, end, goes_left, shift):
    seg = row[start:end]
    side = goes_left[seg >> shift].astype(bool)
    return np.concatenate([seg[side], seg[~side]])


@pytest.mark.parametrize("shift", [0, 2])
def test_partition_blocks_match_scalar_and_reference(shift):
    rng = np.random.default_rng(7 + shift)
    n, p = 300, 4
    keys = np.empty((p, n), np.int32)
    for f in range(p):
        keys[f] = (rng.permutation(n) << shift) | rng.integers(0, 1 << shift, n)
    goes_left = np.zeros(n + 3, np.uint8)
    goes_left[:n] = rng.random(n) < 0.4
    goes_left[n:] = 1  # the padding is never taken for a mark
    # Segments of every length class around the block size; feature 1 is "the split
    # feature" of the second node and stays as it is.
    f_start = np.array([0, 5, 40, 57, 140], np.int64)
    f_end = np.array([5, 40, 57, 140, 300], np.int64)
    split_feat = np.array([0, 1, 2, 3, 0], np.int64)
    sp_index = np.arange(5, dtype=np.int64)
    results = {}
    for simd in (False, True):
        out = keys.copy()
        work = Work(np.zeros((1, 16)), np.empty((1, n + LANES), np.int32), goes_left,
                    np.empty(0, np.int32), np.zeros((1, 0)), np.zeros((1, 0), np.int64),
                    np.zeros((1, 3)))
        zeros = np.zeros(5, np.int64)
        fr = Frontier(sp_index, f_start, f_end, np.zeros(5), np.zeros(5))
        splits = Splits(split_feat, zeros, zeros, f_end, np.zeros(5), np.zeros(5), zeros)
        _partition(out, shift, sp_index, np.full(5, 3, np.uint8), splits, fr, work, simd,
                   step_counters(1), 0, 1)
        results[simd] = out
        for j in range(5):
            for f in range(p):
                s, e = f_start[j], f_end[j]
                expected = (keys[f, s:e] if f == split_feat[j]
                            else _partition_reference(keys[f], s, e, goes_left, shift))
                assert np.array_equal(out[f, s:e], expected), (simd, j, f)
    assert np.array_equal(results[False], results[True])


@njit
def _both_scans(seg, tg, total, min_leaf, simd, scratch, cand, by_runs=True):
    """The lean Gini scan and the general scan (by runs, or case by case) on one segment."""
    imp = impurity_from_counts(total, tg.factor, GINI)
    d1, p1 = best_split_gini_runs(seg, tg, total, imp, min_leaf, simd, scratch, cand)
    d2, p2 = best_split_classification(seg, tg, total, imp, min_leaf, by_runs, simd,
                                       scratch, cand)
    return d1, p1, d2, p2


def test_lean_gini_scan_equals_general_scan():
    """The same split and a bit-identical Δi, exact ties between splits included."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(2, 120))
        k = int(rng.integers(2, 5))
        bits = max(1, (k - 1).bit_length())
        if trial % 4 == 0:  # symmetric class patterns: exact ties between splits
            half = rng.integers(0, k, max(1, n // 2))
            labels = np.concatenate([half, half[::-1]])[:n]
            n = labels.shape[0]
        else:
            labels = np.repeat(rng.integers(0, k, n), rng.integers(1, 8, n))[:n]
        keys = ((np.arange(n) << bits) | labels).astype(np.int32)
        y = labels.astype(np.int32)
        total = np.bincount(labels, minlength=k).astype(np.float64)
        factor = np.full(k, 1.0 / n)
        min_leaf = int(rng.integers(1, 4))
        for simd in (False, True):
            # Targets as the grower builds them: unit weights, labels in the keys.
            tg = Targets(y, np.empty(0), np.empty(0), True, True, factor, GINI, bits,
                         (1 << bits) - 1)
            seg = Segment(keys, keys[:0], 0, n)
            d1, p1, d2, p2 = _both_scans(seg, tg, total, min_leaf, simd, np.zeros(3 * k),
                                         np.empty(n + LANES, np.int32))
            assert p1 == p2, (trial, simd)
            assert d1 == d2 or (np.isinf(d1) and np.isinf(d2)), (trial, simd, d1, d2)


def _data(n, p, k, seed, tied=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if tied:
        X[:, 0] = np.round(X[:, 0], 1)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.7, size=n) > 0.3).astype(int)
    y += (X[:, 2] > 1.0).astype(int) * (k - 2)
    return X, y


def _same_tree(a, b):
    for name in ("feature", "threshold", "left", "right", "n_node_samples", "value",
                 "impurity", "alpha"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("params", [
    {},
    {"min_samples_leaf": 3},
    {"criterion": "entropy"},
    {"criterion": "twoing"},
    {"priors": [0.2, 0.3, 0.5]},
    {"weights": True},
    {"tied": True},
])
def test_whole_trees_identical_with_and_without_blocks(params, monkeypatch):
    params = dict(params)
    X, y = _data(3000, 5, 3, seed=11, tied=params.pop("tied", False))
    w = np.random.default_rng(0).integers(1, 4, X.shape[0]).astype(float) \
        if params.pop("weights", False) else None
    trees = {}
    for simd in (False, True):
        monkeypatch.setattr(_config, "SIMD", simd)
        trees[simd] = CARTClassifier(**params).fit(X, y, sample_weight=w).tree_
    _same_tree(trees[False], trees[True])


def test_regression_and_cv_identical_with_and_without_blocks(monkeypatch):
    X, y = _data(2000, 4, 3, seed=5)
    yr = X[:, 0] * 2.0 + np.sin(X[:, 1])
    out = {}
    for simd in (False, True):
        monkeypatch.setattr(_config, "SIMD", simd)
        reg = CARTRegressor().fit(X, yr).tree_
        cv = CARTClassifierCV(cv=5, random_state=1).fit(X, y)
        out[simd] = (reg, cv.tree_, cv.cv_results_)
    _same_tree(out[False][0], out[True][0])
    _same_tree(out[False][1], out[True][1])
    np.testing.assert_array_equal(out[False][2]["cv_risk"], out[True][2]["cv_risk"])


def test_simd_flag_values(monkeypatch):
    assert _simd_flag("1", True) is True and _simd_flag(" on ", True) is True
    with pytest.warns(RuntimeWarning, match="without AVX-512F: running the scalar loops"):
        assert _simd_flag("1", False) is False  # the blocks are AVX-512 instructions
    assert _simd_flag("auto", False) is False and _simd_flag(None, True) is True
    assert _simd_flag("0") is False and _simd_flag("no") is False
    assert _simd_flag("auto") == _simd_flag(None) == _simd_flag("")
    with pytest.raises(ValueError, match="CARTJIT_SIMD must be auto, 0 or 1"):
        _simd_flag("maybe")


_ONE_SIGNATURE_SCRIPT = """
import json
import sys
import numpy as np
from numba.core.registry import CPUDispatcher
import cartjit
from cartjit.datasets import load_iris

X, y = load_iris(return_X_y=True)
X, y = np.asarray(X), np.asarray(y)
cartjit.CARTClassifierCV(cv=5).fit(X, y).predict_proba(X)
cartjit.CARTClassifier(criterion="entropy", priors="equal").fit(
    X, y, sample_weight=np.full(150, 2.0)).prune(0.01)
cartjit.CARTClassifier(criterion="twoing").fit(X, y)
cartjit.CARTRegressorCV(cv=5).fit(X[:, :3], X[:, 3]).predict(X[:, :3])
counts = {}
for name, mod in list(sys.modules.items()):
    if name.startswith("cartjit"):
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                counts[name + "." + attr] = len(obj.signatures)
print(json.dumps(counts))
"""

#: Kernels the fits above call from Python: each compiled (or loaded) exactly once.
#: (Kernels called only by kernels list no signature when their caller comes from the
#: cache, so for them only "not more than one" can be checked.)
#: Small fits on one thread grow in one compiled call (``_grow_serial``), which calls the
#: search, choice, children and partition kernels itself.
_REACHED = ("engine.presort._sort_features", "engine.presort._dense_ranks",
            "engine.presort._subset_rows", "engine.predict.heldout_losses")
#: Kernels compiled once per set of scan marks (``cartjit.engine.search.search_marks``), so
#: that a fit compiles only the scans it can reach: the fits above use three sets (Gini
#: with one class factor; the other criteria; regression).
_PER_MARKS = {"engine.grow._grow_serial": 3, "engine.search._search": 3,
              # grows the node tables (int32 and float64 rows), the level sets (uint64,
              # three axes) and the competitor tables (int64): one signature per array
              # type, listed when _grow_serial compiles in this process
              "engine.grow._more_rows": 4}


def test_each_kernel_compiles_one_signature():
    """A literal argument (``0``, ``-1``) in a kernel-to-kernel call, or a record built
    with other field types, makes Numba compile the callee a second time: compile time
    users pay on a cold start. A fresh process fitting classifiers (every criterion,
    weights, CV), regressors and CV compiles (or loads) every kernel once, and those
    with scan marks once per set of marks."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _ONE_SIGNATURE_SCRIPT], capture_output=True,
                         text=True, timeout=600, check=True)
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    allowed = {"cartjit." + k: v for k, v in _PER_MARKS.items()}
    more = {k: v for k, v in counts.items() if v > allowed.get(k, 1)}
    assert more == {}, more
    for name in _REACHED:
        assert counts.get("cartjit." + name) == 1, (name, counts.get("cartjit." + name))
    assert counts.get("cartjit.engine.grow._grow_serial") == 3
