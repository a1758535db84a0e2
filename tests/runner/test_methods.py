"""Methods studies in the runner: [methods.NAME], [protocol], per-replication results.

Small data, few replications and forests of a few trees: the whole file runs in seconds
once the kernels are compiled.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifierCV, CARTRegressorCV
from cartjit.datasets import load_dataset, make_classification
from cartjit.experiments.config import ConfigError, read_config
from cartjit.experiments.data import resolve
from cartjit.experiments.protocols import (cv_folds, method_seed, replication_seed,
                                           split_rows)
from cartjit.experiments.run import RunError, run_experiment

import study_helpers

HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None


def write(tmp_path, text, name="study.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def rows_of(out):
    """results.csv as a list of dicts."""
    with open(out / "results.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def table_without_times(out):
    """results.csv without its three time columns (the machine's, not the method's)."""
    with open(out / "results.csv", newline="") as fh:
        table = list(csv.reader(fh))
    assert table[0][-3:] == ["fit_time_s", "predict_time_s", "wall_time_s"]
    return [row[:-3] for row in table]


def multiset(X):
    return Counter(map(tuple, np.asarray(X).tolist()))


# --------------------------------------------------------------------------- protocols

def test_split_rows_take_round_f_n_test_cases_and_stratify_by_largest_remainder():
    learn, test = split_rows(150, 0.1, seed=3)
    assert len(test) == 15 and len(learn) == 135
    assert np.array_equal(np.sort(np.concatenate([learn, test])), np.arange(150))
    again = split_rows(150, 0.1, seed=3)
    assert np.array_equal(again[1], test)
    assert not np.array_equal(split_rows(150, 0.1, seed=4)[1], test)
    # classes of 7, 13 and 80 cases, f = 0.25: 25 test cases; exact shares 1.75, 3.25
    # and 20 -> floors 1, 3, 20 and the one left over to the largest remainder (0.75)
    y = np.repeat([0, 1, 2], [7, 13, 80])
    _, test = split_rows(100, 0.25, seed=0, y=y)
    assert np.bincount(y[test]).tolist() == [2, 3, 20]


def test_cv_folds_are_a_partition_with_balanced_sizes_and_classes():
    y = np.repeat([0, 1, 2], [10, 20, 31])
    folds = cv_folds(61, 4, seed=9, y=y)
    sizes = np.bincount(folds, minlength=4)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 61
    for j in range(3):
        per = np.bincount(folds[y == j], minlength=4)
        assert per.max() - per.min() <= 1
    plain = cv_folds(61, 4, seed=9)
    assert np.bincount(plain).max() - np.bincount(plain).min() <= 1


def test_replication_seed_is_the_documented_hash_and_leaves_the_method_out():
    doc = b'{"dataset":"iris","protocol":"split","repeat":2,"seed":7}'
    expected = int.from_bytes(hashlib.sha256(doc).digest()[:8], "big") >> 1
    assert replication_seed(7, "iris", "split", 2) == expected
    assert 0 <= method_seed(expected) < 2**32


# --------------------------------------------------------------------------- pairing

RECORDER = """
    [methods.a]
    estimator = "study_helpers.RowRecorder"
    tag = 1
    [methods.b]
    estimator = "study_helpers.RowRecorder"
    tag = 2
    [protocol]
    {protocol}
    seed = 11
    [[datasets]]
    {dataset}
"""


def recorder_config(tmp_path, protocol, dataset='bundled = "iris"'):
    """A study of two RowRecorder methods (tags 1 and 2) with ``protocol``."""
    study_helpers.RowRecorder.seen.clear()
    indent = "\n    "
    return write(tmp_path, RECORDER.replace("{protocol}", protocol.replace("\n", indent))
                 .replace("{dataset}", dataset.replace("\n", indent)))


@pytest.mark.parametrize("protocol, n_reps", [
    ('kind = "split"\ntest_fraction = 0.2\nn_repeats = 3', 3),
    ('kind = "split"\ntest_fraction = 0.2\nn_repeats = 2\nstratify = true', 2),
    ('kind = "cv"\nV = 4\nn_repeats = 2', 8),
])
def test_every_method_learns_and_tests_on_the_same_rows(tmp_path, protocol, n_reps):
    cfg = recorder_config(tmp_path, protocol)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    X, y = load_dataset("iris").frame.iloc[:, :4].to_numpy(float), \
        load_dataset("iris").frame["species"].to_numpy()
    seen = study_helpers.RowRecorder.seen
    seeds = sorted({s for s, _ in seen})
    assert len(seeds) == n_reps
    everything = multiset(X)
    tests_by_repeat = {}
    for row in rows_of(tmp_path / "out"):
        s = method_seed(int(row["seed"]), int(row["fold"]))
        learn, test = seen[(s, 1)]
        learn_b, test_b = seen[(s, 2)]
        assert np.array_equal(learn, learn_b) and np.array_equal(test, test_b)  # paired
        assert multiset(learn) + multiset(test) == everything  # disjoint, all rows
        assert int(row["n_learn"]) == len(learn) and int(row["n_test"]) == len(test)
        if "split" in protocol:
            assert len(test) == 30
        tests_by_repeat.setdefault(row["repeat"], set()).add(
            tuple(map(tuple, test.tolist())))
        if "stratify" in protocol:  # the test rows' species: 10 of each
            labels = [y[np.flatnonzero((X == r).all(axis=1))[0]] for r in test]
            assert sorted(Counter(labels).values()) == [10, 10, 10]
    if "cv" in protocol:  # the test folds of a partition cover every case once
        for folds in tests_by_repeat.values():
            assert sum((multiset(np.array(f)) for f in folds), Counter()) == everything


def test_fresh_protocol_draws_new_samples_shared_by_the_methods(tmp_path):
    cfg = recorder_config(tmp_path, 'kind = "fresh"\nn_repeats = 3',
                          'name = "gen"\ngenerator = "classification"\nn = 40\ntest_n = 70\n'
                          'params = { n_features = 4, n_classes = 2, n_informative = 2 }')
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    seen = study_helpers.RowRecorder.seen
    seeds = sorted({s for s, _ in seen})
    assert len(seeds) == 3
    learns = []
    for s in seeds:
        (la, ta), (lb, tb) = seen[(s, 1)], seen[(s, 2)]
        assert la.shape == (40, 4) and ta.shape == (70, 4)
        assert np.array_equal(la, lb) and np.array_equal(ta, tb)
        assert not multiset(la) & multiset(ta)
        learns.append(la)
    assert not np.array_equal(learns[0], learns[1])
    rows = rows_of(tmp_path / "out")
    assert {(r["n_learn"], r["n_test"]) for r in rows} == {("40", "70")}


# --------------------------------------------------------------------------- measures

def test_error_is_that_of_the_estimator_fitted_on_the_replications_rows(tmp_path):
    cfg = write(tmp_path, """
        [methods.tree]
        estimator = "CARTClassifierCV"
        cv = 5
        [protocol]
        kind = "split"
        test_fraction = 0.3
        n_repeats = 2
        seed = 4
        [[datasets]]
        bundled = "iris"
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    X, y = load_dataset("iris").frame.iloc[:, :4].to_numpy(float), \
        load_dataset("iris").frame["species"].to_numpy()
    for row in rows_of(tmp_path / "out"):
        learn, test = split_rows(150, 0.3, int(row["seed"]))
        est = CARTClassifierCV(cv=5, random_state=method_seed(int(row["seed"]))).fit(
            X[learn], y[learn])
        wrong = np.mean(est.predict(X[test]) != y[test])
        assert float(row["error"]) == wrong == float(row["score"]) == float(row["cost"])
        assert int(row["n_leaves"]) == est.tree_.n_leaves
        assert int(row["n_nodes"]) == est.tree_.n_nodes and row["n_trees"] == "1"


def test_cost_and_regression_measures_against_numpy(tmp_path):
    train = load_dataset("iris").frame
    cfg = write(tmp_path, """
        [methods.mean]
        estimator = "study_helpers.RowRecorder"
        [protocol]
        kind = "split"
        test_fraction = 0.25
        n_repeats = 2
        [[datasets]]
        bundled = "potato_yield"
        [[datasets]]
        bundled = "iris"
        protocol = { cost = [[0, 1, 5], [2, 0, 1], [1, 1, 0]] }
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    potato = load_dataset("potato_yield")
    yp = potato.frame[potato.target].to_numpy(float)
    y = train["species"].to_numpy()
    classes = sorted(set(y))
    C = np.array([[0, 1, 5], [2, 0, 1], [1, 1, 0]], float)
    for row in rows_of(tmp_path / "out"):
        if row["dataset"] == "potato_yield":
            learn, test = split_rows(len(yp), 0.25, int(row["seed"]))
            mse = np.mean((yp[test] - yp[learn].mean()) ** 2)
            assert float(row["mse"]) == pytest.approx(mse, rel=1e-12)
            assert float(row["rel_error"]) == pytest.approx(mse / np.var(yp[test]), rel=1e-12)
            assert row["error"] == "" and row["n_leaves"] == ""
        else:
            learn, test = split_rows(150, 0.25, int(row["seed"]))
            values, counts = np.unique(y[learn], return_counts=True)
            guess = values[np.argmax(counts)]
            cost = np.mean([C[classes.index(t), classes.index(guess)] for t in y[test]])
            assert float(row["cost"]) == pytest.approx(cost, rel=1e-12)
            assert float(row["score"]) == float(row["cost"])
            assert float(row["error"]) == np.mean(y[test] != guess)


def test_forest_sizes_are_summed_over_the_trees(tmp_path):
    cfg = write(tmp_path, """
        [methods.rf]
        estimator = "random_forest"
        n_estimators = [2, 5]
        [protocol]
        kind = "cv"
        V = 3
        [[datasets]]
        bundled = "iris_petal"
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    rows = rows_of(tmp_path / "out")
    assert {r["method"] for r in rows} == {"rf[n_estimators=2]", "rf[n_estimators=5]"}
    for r in rows:
        B, nodes, leaves = int(r["n_trees"]), int(r["n_nodes"]), int(r["n_leaves"])
        assert B == (2 if "=2" in r["method"] else 5)
        assert nodes == 2 * leaves - B  # binary trees: one node fewer than twice the leaves
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "rf[n_estimators=5]" in summary and "mean ± SE" in summary


def test_test_file_protocol_learns_on_the_file_and_tests_on_the_test_file(tmp_path):
    frame = make_classification(90, 3, 2, n_informative=2, random_state=1)
    X, y = frame
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y)
    df.iloc[:60].to_csv(tmp_path / "learn.csv", index=False)
    df.iloc[60:].to_csv(tmp_path / "test.csv", index=False)
    cfg = write(tmp_path, """
        [methods.tree]
        estimator = "cart_cv"
        cv = 4
        [protocol]
        kind = "test_file"
        [[datasets]]
        name = "file"
        path = "learn.csv"
        test_path = "test.csv"
        target = "y"
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    (row,) = rows_of(tmp_path / "out")
    seed = method_seed(int(row["seed"]))
    est = CARTClassifierCV(cv=4, random_state=seed).fit(X[:60], y[:60])
    assert (row["n_learn"], row["n_test"]) == ("60", "30")
    assert float(row["error"]) == np.mean(est.predict(X[60:]) != y[60:])
    assert "N = 60 learning and 30 test cases" in (tmp_path / "out" / "summary.md").read_text()


@pytest.mark.skipif(not HAVE_SKLEARN, reason="needs scikit-learn")
def test_a_scikit_learn_estimator_by_import_path(tmp_path):
    from sklearn.tree import DecisionTreeRegressor
    cfg = write(tmp_path, """
        [methods.sk]
        estimator = "sklearn.tree.DecisionTreeRegressor"
        max_depth = 2
        [methods.cart]
        estimator = "CARTRegressorCV"
        cv = 3
        [protocol]
        kind = "cv"
        V = 3
        [[datasets]]
        bundled = "potato_yield"
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    potato = load_dataset("potato_yield")
    X = potato.frame[list(potato.features)].to_numpy(float)
    y = potato.frame[potato.target].to_numpy(float)
    rows = rows_of(tmp_path / "out")
    assert [r["method"] for r in rows[:2]] == ["sk", "cart"]
    for r in rows:
        folds = cv_folds(len(y), 3, int(r["seed"]))
        learn, test = folds != int(r["fold"]), folds == int(r["fold"])
        seed = method_seed(int(r["seed"]), int(r["fold"]))
        if r["method"] == "sk":
            est = DecisionTreeRegressor(max_depth=2, random_state=seed).fit(X[learn], y[learn])
            assert int(r["n_nodes"]) == est.tree_.node_count
        else:
            est = CARTRegressorCV(cv=3, random_state=seed).fit(X[learn], y[learn])
        mse = np.mean((est.predict(X[test]) - y[test]) ** 2)
        assert float(r["mse"]) == pytest.approx(mse, rel=1e-12)


# --------------------------------------------------------------------------- determinism

DEMO = """
    [methods.tree]
    estimator = "cart_cv"
    cv = 5
    [methods.bag]
    estimator = "bagging"
    n_estimators = 3
    [protocol]
    kind = "split"
    test_fraction = 0.2
    n_repeats = 3
    seed = 3
    [[datasets]]
    bundled = "iris"
    [[datasets]]
    bundled = "potato_yield"
    protocol = { kind = "cv", V = 3 }
"""


def test_backends_and_resume_give_identical_tables(tmp_path):
    cfg = write(tmp_path, DEMO)
    a = run_experiment(cfg, tmp_path / "a", backend="serial", quiet=True)
    assert a.n_cells == 3 * 2 + 3 * 2
    run_experiment(cfg, tmp_path / "b", backend="threads", workers=2, quiet=True)
    assert table_without_times(tmp_path / "a") == table_without_times(tmp_path / "b")
    summary = (tmp_path / "a" / "summary.md").read_bytes()
    assert (tmp_path / "b" / "summary.md").read_bytes() == summary
    assert (tmp_path / "a" / "summary.csv").read_bytes() == \
        (tmp_path / "b" / "summary.csv").read_bytes()
    # a run that lost some cells (killed) completes with --resume, computing only those
    cells = sorted((tmp_path / "b" / "cells").iterdir())
    for p in cells[:5]:
        p.unlink()
    again = run_experiment(cfg, tmp_path / "b", backend="threads", workers=2, quiet=True,
                           resume=True)
    assert (again.reused, len(again.computed)) == (len(cells) - 5, 5)
    assert table_without_times(tmp_path / "b") == table_without_times(tmp_path / "a")
    assert (tmp_path / "b" / "summary.md").read_bytes() == summary
    # a changed method is another config: --resume refuses to mix the results
    write(tmp_path, DEMO.replace("n_estimators = 3", "n_estimators = 4"))
    with pytest.raises(RunError, match="has changed"):
        run_experiment(cfg, tmp_path / "b", quiet=True, resume=True)


def test_the_example_config_reads_and_counts_its_cells():
    config = Path(__file__).resolve().parents[2] / "experiments" / "methods_demo.toml"
    res = run_experiment(config, "/nonexistent/dry", dry_run=True, quiet=True)
    assert res.n_cells == 2 * 10 * 4


# --------------------------------------------------------------------------- config errors

GOOD_HEAD = '[methods.m]\nestimator = "cart_cv"\n'
IRIS = '\n[[datasets]]\nbundled = "iris"\n'


@pytest.mark.parametrize("text, field, words", [
    ('[methods.m]\nestimator = "Foo"\n[protocol]\nkind = "cv"' + IRIS,
     "methods.m.estimator", "unknown estimator 'Foo'"),
    ('[methods.m]\nestimator = "no_such_package_xyz.Model"\n[protocol]\nkind = "cv"' + IRIS,
     "methods.m.estimator", "no module 'no_such_package_xyz'"),
    ('[methods.m]\nestimator = "cartjit.NoSuchEstimator"\n[protocol]\nkind = "cv"' + IRIS,
     "methods.m.estimator", "has no 'NoSuchEstimator'"),
    ('[methods.m]\nestimator = "cartjit.export_text"\n[protocol]\nkind = "cv"' + IRIS,
     "methods.m.estimator", "is not an estimator class"),
    ('[methods.m]\nestimator = "cart_cv"\nfoo = 1\n[protocol]\nkind = "cv"' + IRIS,
     "methods.m.foo", "has no parameter 'foo'"),
    ('[methods.m]\nestimator = "random_forest"\nn_estimators = 0\n[protocol]\nkind = "cv"'
     + IRIS, "methods.m.n_estimators", "n_estimators must be >= 1"),
    ('[methods.m]\nestimator = "cart_cv"\nmin_samples_leaf = []\n[protocol]\nkind = "cv"'
     + IRIS, "methods.m.min_samples_leaf", "must not be an empty array"),
    ('[methods.m]\nestimator = "CARTClassifierCV"\n[protocol]\nkind = "cv"\n[[datasets]]\n'
     'bundled = "potato_yield"', "methods.m.estimator", "is a classification estimator"),
    (GOOD_HEAD + '[protocol]\nkind = "split"\ntest_fraction = 1.0' + IRIS,
     "protocol.test_fraction", "must be a number in (0, 1)"),
    (GOOD_HEAD + '[protocol]\nkind = "split"\ntest_fraction = 0' + IRIS,
     "protocol.test_fraction", "must be a number in (0, 1)"),
    (GOOD_HEAD + '[protocol]\nkind = "split"\ntest_fraction = 0.001' + IRIS,
     "protocol.test_fraction", "gives 0 test case(s)"),
    (GOOD_HEAD + '[protocol]\nkind = "split"' + IRIS,
     "protocol.test_fraction", "is required with kind = \"split\""),
    (GOOD_HEAD + '[protocol]\nkind = "split"\ntest_fraction = 0.1\nn_repeats = 0' + IRIS,
     "protocol.n_repeats", "must be an integer >= 1"),
    (GOOD_HEAD + '[protocol]\nkind = "cv"\nn_repeats = 2.5' + IRIS,
     "protocol.n_repeats", "must be an integer"),
    (GOOD_HEAD + '[protocol]\nkind = "cv"\nV = 151' + IRIS, "protocol.V", "more than the N = 150"),
    (GOOD_HEAD + '[protocol]\nkind = "cv"\ntest_fraction = 0.2' + IRIS,
     "protocol.test_fraction", "does not apply to protocol kind 'cv'"),
    (GOOD_HEAD + '[protocol]\nkind = "bootstrap"' + IRIS, "protocol.kind", "must be one of"),
    (GOOD_HEAD + IRIS, "protocol.kind", "is required in a methods study"),
    (GOOD_HEAD + '[protocol]\nkind = "test_file"' + IRIS, "protocol.kind", "needs a test file"),
    (GOOD_HEAD + '[protocol]\nkind = "fresh"' + IRIS, "protocol.kind", "not a generator"),
    (GOOD_HEAD + '[protocol]\nkind = "fresh"\n[[datasets]]\ngenerator = "classification"\n'
     'n = 50', "datasets[1].test_n", "is required for kind = \"fresh\""),
    (GOOD_HEAD + '[protocol]\nkind = "fresh"\n[[datasets]]\ngenerator = "classification"\n'
     'n = 50\ntest_n = 20\nparams = { label_noise = 1.5 }', "datasets[1].params.label_noise",
     "label_noise must be a real number in [0, 1]"),
    (GOOD_HEAD + '[protocol]\nkind = "fresh"\n[[datasets]]\ngenerator = "classification"\n'
     'n = 50\ntest_n = 20\nparams = { n_classes = 1 }', "datasets[1].params.n_classes",
     "n_classes"),
    (GOOD_HEAD + '[protocol]\nkind = "fresh"\n[[datasets]]\ngenerator = "nosuch"\nn = 50',
     "datasets[1].generator", "is not a generator of cartjit.datasets"),
    (GOOD_HEAD + '[protocol]\nkind = "cv"\ncost = [[0, 1], [1, 0]]' + IRIS,
     "protocol.cost", "cost must have shape (3, 3)"),
    (GOOD_HEAD + '[cv]\nV = 5\n[protocol]\nkind = "cv"' + IRIS, "cv", "belongs to the CV sweep"),
    ('[protocol]\nkind = "cv"' + IRIS, "protocol", "applies to a methods study"),
    (GOOD_HEAD + '[study]\nbaseline = "nosuch"\n[protocol]\nkind = "cv"' + IRIS,
     "study.baseline", "'nosuch' is not a method of this study; the methods are m"),
    (GOOD_HEAD + '[study]\nbaseline = 3\n[protocol]\nkind = "cv"' + IRIS,
     "study.baseline", "must be a string"),
    (GOOD_HEAD + 'max_depth = [1, 2]\n[study]\nbaseline = "m"\n[protocol]\nkind = "cv"'
     + IRIS, "study.baseline", "is swept into 2 methods"),
    (GOOD_HEAD + '[study]\nalpha = 0.1\n[protocol]\nkind = "cv"' + IRIS, "study.alpha",
     "unknown"),
    ('[study]\nbaseline = "m"' + IRIS, "study", "applies to a methods study"),
    (GOOD_HEAD + '[protocol]\nkind = "cv"\n[[datasets]]\nbundled = "nosuch_data"',
     "datasets[1].bundled", "'nosuch_data' is not a bundled dataset"),
    ('[cv]\nV = 5' + IRIS + 'protocol = { kind = "cv" }', "datasets[1].protocol",
     "applies to a methods study"),
])
def test_bad_study_configs_name_the_field(tmp_path, text, field, words):
    cfg = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        resolve(read_config(cfg))
    assert info.value.field == field, str(info.value)
    assert words in info.value.message
    assert str(info.value).startswith(f"{cfg}: {field}: ")


@pytest.mark.slow
def test_the_dask_backend_gives_the_serial_tables(tmp_path):
    pytest.importorskip("distributed")
    cfg = write(tmp_path, DEMO)
    run_experiment(cfg, tmp_path / "a", backend="serial", quiet=True)
    res = run_experiment(cfg, tmp_path / "d", backend="dask", workers=2, quiet=True)
    assert len(res.computed) == res.n_cells == 12
    assert table_without_times(tmp_path / "d") == table_without_times(tmp_path / "a")
    assert (tmp_path / "d" / "summary.md").read_bytes() == \
        (tmp_path / "a" / "summary.md").read_bytes()
