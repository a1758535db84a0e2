"""Stability of the chosen trees: the records in the cell files, the adjusted Rand index,
and stability.md / stability/*.csv (identical on every backend).

Each record is checked against the estimator refitted by hand with the cell's seed; the
index against scikit-learn's ``adjusted_rand_score`` and a pair-counting definition.
"""
from __future__ import annotations

import csv
import json
import textwrap
from itertools import combinations
from math import comb

import numpy as np
import pytest

from cartjit import CARTClassifierCV
from cartjit.datasets import load_dataset
from cartjit.experiments.cells import plan_cells, plan_method_cells
from cartjit.experiments.config import read_config
from cartjit.experiments.data import resolve
from cartjit.experiments.protocols import method_seed, split_rows
from cartjit.experiments.run import run_experiment
from cartjit.experiments.stability import (adjusted_rand_index, decode_leaves,
                                           encode_leaves)

SWEEP = """
    [cv]
    V = [3, 5]
    n_repeats = 3
    seed = 11
    selection = ["min", "1se"]
    [[datasets]]
    bundled = "iris"
"""

STUDY = """
    [methods.tree]
    estimator = "cart_cv"
    cv = 4
    [methods.bag]
    estimator = "bagging"
    n_estimators = 2
    [protocol]
    kind = "split"
    test_fraction = 0.25
    n_repeats = 4
    seed = 2
    [[datasets]]
    bundled = "iris"
"""


def write(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def pair_counting_ari(a, b):
    """The Rand index adjusted by its expectation, from the pairs of cases directly."""
    n = len(a)
    same_a = [a[i] == a[j] for i, j in combinations(range(n), 2)]
    same_b = [b[i] == b[j] for i, j in combinations(range(n), 2)]
    index = sum(x and y for x, y in zip(same_a, same_b))
    pa, pb, pairs = sum(same_a), sum(same_b), comb(n, 2)
    expected = pa * pb / pairs
    maximum = (pa + pb) / 2
    return 1.0 if maximum == expected else (index - expected) / (maximum - expected)


def leaf_partition_agrees(codes, nodes):
    """The leaves of a record and the node ids of ``apply`` make the same partition."""
    return adjusted_rand_index(codes, nodes) == 1.0 and \
        len(set(codes.tolist())) == len(set(nodes.tolist()))


# --------------------------------------------------------------------------- pieces

def test_adjusted_rand_index_against_pair_counting_and_scikit_learn():
    rng = np.random.default_rng(0)
    cases = [(rng.integers(0, k, 40), rng.integers(0, m, 40)) for k, m in
             [(2, 3), (4, 4), (1, 3), (5, 1), (7, 2)]]
    cases += [(np.zeros(10), np.zeros(10)), (np.arange(10), np.arange(10)),
              (np.array([0, 0, 1, 1]), np.array([5, 5, 9, 9]))]
    for a, b in cases:
        assert adjusted_rand_index(a, b) == pytest.approx(pair_counting_ari(a, b), abs=1e-12)
    assert adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    metrics = pytest.importorskip("sklearn.metrics")
    for a, b in cases:
        assert adjusted_rand_index(a, b) == pytest.approx(
            metrics.adjusted_rand_score(a, b), abs=1e-12)


def test_leaves_round_trip_with_wide_digits_and_unlearned_cases():
    for n_leaves in (1, 5, 62, 63, 4000):
        rng = np.random.default_rng(n_leaves)
        codes = rng.integers(-1, n_leaves, 200)
        text = encode_leaves(codes, n_leaves)
        width = 1 if n_leaves <= 62 else 2 if n_leaves <= 62 ** 2 else 3
        assert len(text) == 200 * width
        assert np.array_equal(decode_leaves(text, n_leaves, 200), codes)
    with pytest.raises(ValueError, match="leaves"):
        decode_leaves("0123", 5, 3)


# --------------------------------------------------------------------------- sweeps

@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stability_sweep")
    cfg = write(tmp, SWEEP, "sweep.toml")
    run_experiment(cfg, tmp / "serial", backend="serial", quiet=True)
    run_experiment(cfg, tmp / "threads", backend="threads", workers=2, quiet=True)
    return cfg, tmp


def cell_result(out, cell):
    return json.loads((out / "cells" / f"{cell.cell_id}.json").read_text())["result"]


def test_sweep_records_are_the_refitted_chosen_trees(sweep):
    cfg, tmp = sweep
    config = read_config(cfg)
    cells = plan_cells(resolve(config))
    X, y = load_dataset("iris").frame.iloc[:, :4], load_dataset("iris").frame.iloc[:, 4]
    for cell in cells:
        result = cell_result(tmp / "serial", cell)
        for rule, row in result["chosen"].items():
            rec = result["stability"]["trees"][str(row)]
            est = CARTClassifierCV(cv=cell.V, random_state=cell.seed, selection=rule,
                                   stratify=cell.stratify).fit(X, y)
            tree = est.tree_
            assert rec["n_leaves"] == tree.n_leaves
            assert rec["alpha"] == est.alpha_
            assert rec["root"] == (int(tree.feature[0]) if tree.left[0] >= 0 else -1)
            assert rec["features"] == sorted({int(f) for f in tree.feature[tree.left >= 0]})
            codes = decode_leaves(rec["leaves"], rec["n_leaves"], len(y))
            assert (codes >= 0).all()
            assert leaf_partition_agrees(codes, est.apply(X))


def test_sweep_stability_files_are_identical_across_backends_and_match_the_records(sweep):
    cfg, tmp = sweep
    for name in ("stability.md", "stability/trees.csv", "stability/features.csv"):
        assert (tmp / "serial" / name).read_bytes() == (tmp / "threads" / name).read_bytes()
    cells = plan_cells(resolve(read_config(cfg)))
    with open(tmp / "serial" / "stability" / "trees.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2  # V in (3, 5) x rules (min, 1se)
    for row in rows:
        V = int(row["group"].split("V=")[1].split(",")[0])
        rule = row["group"].rsplit("rule=", 1)[1]
        recs = []
        for cell in cells:
            if cell.V == V:
                res = cell_result(tmp / "serial", cell)
                recs.append(res["stability"]["trees"][str(res["chosen"][rule])])
        assert int(row["n_trees"]) == len(recs) == 3
        sizes = sorted(r["n_leaves"] for r in recs)
        assert (int(row["leaves_min"]), float(row["leaves_median"]),
                int(row["leaves_max"])) == (sizes[0], sizes[1], sizes[2])
        pairs = [pair_counting_ari(decode_leaves(p["leaves"], p["n_leaves"], 150).tolist(),
                                   decode_leaves(q["leaves"], q["n_leaves"], 150).tolist())
                 for p, q in combinations(recs, 2)]
        assert float(row["ari_mean"]) == pytest.approx(np.mean(pairs), abs=1e-12)
        assert float(row["ari_min"]) == pytest.approx(min(pairs), abs=1e-12)
    text = (tmp / "serial" / "stability.md").read_text()
    assert "## iris: V=3, rule=min" in text and "| petal_length |" in text


# --------------------------------------------------------------------------- studies

def test_study_records_single_trees_on_their_learning_rows(tmp_path):
    cfg = write(tmp_path, STUDY, "study.toml")
    run_experiment(cfg, tmp_path / "a", backend="serial", quiet=True)
    run_experiment(cfg, tmp_path / "b", backend="threads", workers=2, quiet=True)
    for name in ("stability.md", "stability/trees.csv", "stability/features.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    cells = plan_method_cells(resolve(read_config(cfg)))
    frame = load_dataset("iris").frame
    X, y = frame.iloc[:, :4], frame.iloc[:, 4]
    records = []
    for cell in cells:
        result = cell_result(tmp_path / "a", cell)
        if cell.method == "bag":
            assert "stability" not in result
            continue
        rec = result["stability"]["tree"]
        learn, _ = split_rows(len(y), 0.25, cell.seed)
        est = CARTClassifierCV(cv=4, random_state=method_seed(cell.seed, cell.fold)).fit(
            X.iloc[learn], y.iloc[learn])
        assert rec["n_leaves"] == est.tree_.n_leaves and rec["alpha"] == est.alpha_
        codes = decode_leaves(rec["leaves"], rec["n_leaves"], len(y))
        assert np.array_equal(np.flatnonzero(codes >= 0), np.sort(learn))
        assert leaf_partition_agrees(codes[np.sort(learn)], est.apply(X.iloc[np.sort(learn)]))
        records.append(codes)
    assert len(records) == 4
    pairs = []
    for p, q in combinations(records, 2):
        both = (p >= 0) & (q >= 0)
        pairs.append(pair_counting_ari(p[both].tolist(), q[both].tolist()))
    with open(tmp_path / "a" / "stability" / "trees.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["dataset"], row["group"], row["n_trees"]) == ("iris", "tree", "4")
    assert float(row["ari_mean"]) == pytest.approx(np.mean(pairs), abs=1e-12)


def test_cells_without_records_are_counted_and_left_out_on_resume(sweep, tmp_path):
    import shutil

    from cartjit.experiments.store import seal
    cfg, tmp = sweep
    out = tmp_path / "old"
    shutil.copytree(tmp / "serial", out)
    cell = plan_cells(resolve(read_config(cfg)))[0]
    path = out / "cells" / f"{cell.cell_id}.json"
    doc = json.loads(path.read_text())
    del doc["result"]["stability"]  # as an older cartjit wrote it
    path.write_text(json.dumps(seal(doc)))
    again = run_experiment(cfg, out, backend="serial", quiet=True, resume=True)
    assert again.reused == 6 and not again.computed
    text = (out / "stability.md").read_text()
    assert "*2 chosen tree(s) have no usable record" in text  # its min and 1se trees
    with open(out / "stability" / "trees.csv", newline="") as fh:
        counts = {row["group"]: int(row["n_trees"]) for row in csv.DictReader(fh)}
    assert counts == {"V=3, rule=min": 2, "V=3, rule=1se": 2, "V=5, rule=min": 3,
                      "V=5, rule=1se": 3}
