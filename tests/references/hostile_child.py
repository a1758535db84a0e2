"""Child process of tests/modelfiles/test_hostile_files.py: load each model file of a job and, when
it loads, predict with it (a forest: with each of its trees and with the forest's
passes); print one JSON line per file.

Usage: python hostile_child.py JOB.json PROGRESS_FILE

The job lists model files. Before each one, its index is written to the progress file
(so that the parent can name the file that killed the child). After loading the
kernels, the address space is limited (RLIMIT_AS) to what the process holds plus
``HOSTILE_AS_MARGIN`` bytes: a file that makes ``load`` allocate without bound kills the
child with a MemoryError instead of swapping the machine.

Each result is ``{"index": i, "outcome": ...}``: ``"loaded"`` (the estimator loaded and
predicted: nodes in range, probabilities or values finite), ``"refused"`` (a
ModelFileError), or ``"unexpected"`` with the exception, which fails the test.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

from cartjit import ModelFileError, load
from cartjit.engine.tree import apply as apply_tree
from cartjit.engine.tree import validate


def random_codes(est, rng, n=97):
    """Rows of float64 as the kernels see them: level codes for categorical features
    (with codes out of range and NaN), numbers for the others (with NaN)."""
    p = est.n_features_in_
    X = rng.normal(scale=3.0, size=(n, p))
    for j, levels in enumerate(est.categories_):
        if levels is not None:
            X[:, j] = rng.integers(-2, len(levels) + 3, size=n)
    X[rng.random((n, p)) < 0.15] = np.nan
    return np.ascontiguousarray(X)


def predict_forest(est, rng):
    """Predict with every tree of a forest, and with the forest's own passes; check the
    nodes are in range and the sums finite."""
    from cartjit.engine.forest import forest_apply, forest_sums

    X = random_codes(est, rng)
    sizes = np.diff(est.forest_.roots)
    for k, tree_est in enumerate(est.estimators_):
        validate(tree_est.tree_)
        assert tree_est.tree_.n_nodes == sizes[k]
    nodes = forest_apply(est.forest_, X)
    assert nodes.shape == (X.shape[0], est.n_estimators_)
    assert np.all((nodes >= 0) & (nodes < sizes[None, :]))
    sums = forest_sums(est.forest_, X)
    assert sums.shape[0] == X.shape[0] and np.all(np.isfinite(sums))
    if hasattr(est, "classes_"):
        proba = sums / est.n_estimators_
        assert np.all((proba >= -1e-12) & (proba <= 1 + 1e-12))
    assert np.all(np.isfinite(est.feature_importances_))


def predict_all(est, rng):
    """Predict with every tree of the estimator, every ``use_surrogate``; check the
    result is in range and finite."""
    if hasattr(est, "forest_"):
        return predict_forest(est, rng)
    X = random_codes(est, rng)
    for tree in (est.tree_, est.tree_max_):
        validate(tree)
        for use in (0, 1, 2):
            nodes = apply_tree(tree, X, use_surrogate=use)
            assert nodes.shape == (X.shape[0],)
            assert np.all((nodes >= 0) & (nodes < tree.n_nodes))
    nodes = apply_tree(est.tree_, X, use_surrogate=est._use_surrogate)
    if hasattr(est, "classes_"):
        proba = est._leaf_proba(nodes)
        labels = est.classes_[est.tree_.label[nodes]]
        assert labels.shape == (X.shape[0],) and proba.shape[1] == len(est.classes_)
    else:
        assert np.all(np.isfinite(est.tree_.value[nodes, 0]))
    if hasattr(est, "cv_results_"):
        assert est.cv_results_.shape[0] >= 1


def limit_address_space():
    import resource

    margin = int(os.environ.get("HOSTILE_AS_MARGIN", str(3 << 30)))
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + margin, vm + margin))


def check_boundscheck_is_on():
    """With NUMBA_BOUNDSCHECK=1 an out-of-range index in a kernel is an IndexError."""
    from numba import njit

    @njit
    def read(a, i):
        return a[i]
    try:
        read(np.zeros(3), 5)
    except IndexError:
        return
    raise AssertionError("NUMBA_BOUNDSCHECK=1 is set but a kernel read out of bounds")


def main():
    job_path, progress_path = sys.argv[1], sys.argv[2]
    with open(job_path) as fh:
        job = json.load(fh)
    rng = np.random.default_rng(0)
    if os.environ.get("NUMBA_BOUNDSCHECK") == "1":
        check_boundscheck_is_on()
    for path in job["warm_up"]:  # kernels compiled or loaded before the limit is set
        predict_all(load(path), rng)
    if sys.platform.startswith("linux"):
        limit_address_space()
    with open(progress_path, "w") as progress:
        for i, path in enumerate(job["files"]):
            progress.write(f"{i}\n")
            progress.flush()
            try:
                est = load(path)
            except ModelFileError:
                outcome = {"outcome": "refused"}
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                outcome = {"outcome": "unexpected", "during": "load",
                           "error": "".join(traceback.format_exception_only(exc)).strip(),
                           "where": traceback.format_exc()[-1500:]}
            else:
                try:
                    predict_all(est, rng)
                    outcome = {"outcome": "loaded"}
                except BaseException as exc:  # noqa: BLE001 - reported to the parent
                    outcome = {"outcome": "unexpected", "during": "predict",
                               "error": "".join(
                                   traceback.format_exception_only(exc)).strip(),
                               "where": traceback.format_exc()[-1500:]}
            print(json.dumps({"index": i, **outcome}), flush=True)


if __name__ == "__main__":
    main()
