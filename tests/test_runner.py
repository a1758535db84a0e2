"""The experiment runner: seeds, cells, the durable store, resume, backends, reports."""
from __future__ import annotations

import importlib.util
import json
import re
import textwrap
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifierCV
from cartjit.datasets import load_dataset
from cartjit.experiments.cells import cell_seed, compute_cell, plan_cells
from cartjit.experiments.config import read_config
from cartjit.experiments.data import resolve
from cartjit.experiments.reports import format_csv
from cartjit.experiments.run import RunError, run_experiment
from cartjit.experiments.store import CellStore, atomic_write

HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

SMALL = """
    [cv]
    V = [2, 5, "loo"]
    n_repeats = 2
    seed = 7
    [[datasets]]
    bundled = "iris_petal"
"""


def write(tmp_path, text=SMALL, name="small.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def table_without_wall_time(out):
    """results.csv with its last column (wall_time_s, the machine's timing) removed."""
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[0].endswith(",wall_time_s")
    return "\n".join(line.rsplit(",", 1)[0] for line in lines)


# --------------------------------------------------------------------------- seeds, cells

def test_cell_seed_is_a_stable_hash_of_the_partition_key():
    s = cell_seed(0, "iris", 5, 0, False)
    assert s == cell_seed(0, "iris", 5, 0, False)
    assert 0 <= s < 2**63
    assert len({s, cell_seed(0, "iris", 5, 1, False), cell_seed(1, "iris", 5, 0, False),
                cell_seed(0, "iris", 6, 0, False), cell_seed(0, "iris", 5, 0, True),
                cell_seed(0, "iris2", 5, 0, False)}) == 6
    # golden value: SHA-256 based, so it never changes between Python processes
    assert s == 748996357305449622  # sha256(b'{"V":5,"dataset":"iris","repeat":0,"seed":0,"stratify":false}')[:8] >> 1


def test_settings_share_partitions_and_loo_is_one_cell(tmp_path):
    cfg = read_config(write(tmp_path, SMALL.replace(
        "[[datasets]]", '[tree]\ncriterion = ["gini", "entropy"]\n[[datasets]]')))
    cells = plan_cells(resolve(cfg))
    assert len(cells) == 2 * (2 + 2 + 1)
    gini = [c for c in cells if c.settings["criterion"] == "gini"]
    entropy = [c for c in cells if c.settings["criterion"] == "entropy"]
    assert [c.seed for c in gini] == [c.seed for c in entropy]
    assert [c.order for c in cells] == list(range(len(cells)))
    loo = [c for c in gini if c.loo]
    assert len(loo) == 1 and loo[0].V == 150
    assert {c.settings_label for c in cells} == {"criterion=gini", "criterion=entropy"}


def test_explicit_seeds_are_used_as_given(tmp_path):
    cfg = read_config(write(tmp_path, SMALL.replace("seed = 7", "seeds = [11, 12]")
                            .replace("n_repeats = 2\n", "")))
    cells = plan_cells(resolve(cfg))
    assert [c.seed for c in cells if c.V == 5] == [11, 12]


def test_compute_cell_equals_the_cv_estimator(tmp_path):
    (d,) = resolve(read_config(write(tmp_path)))
    cell = next(c for c in plan_cells([d]) if c.V == 5 and c.repeat == 1)
    payload = {"task": cell.task, "settings": cell.settings, "V": 5, "loo": False,
               "stratify": False, "seed": cell.seed}
    res = compute_cell(payload, d.X, d.y, ("min", "1se", 0.5))
    est = CARTClassifierCV(cv=5, random_state=cell.seed, selection="min").fit(d.X, d.y)
    assert res["columns"]["cv_risk"] == est.cv_results_["cv_risk"].tolist()
    assert res["columns"]["n_leaves"] == [7, 4, 3, 2, 1]
    assert res["chosen"]["min"] == est.best_index_
    assert set(res["chosen"]) == {"min", "1se", "0.5se"}
    assert res["n_folds"] == 5 and res["wall_time_s"] > 0


# --------------------------------------------------------------------------- store

def test_atomic_write_and_temporaries(tmp_path):
    atomic_write(tmp_path / "a.json", "{}")
    assert (tmp_path / "a.json").read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    store = CellStore(tmp_path)
    store.dir.mkdir()
    (store.dir / ".abc.json.1.2.tmp").write_text("half a cel")
    (store.dir / "abc.json").write_text("{}")
    assert store.remove_temporaries() == 1
    assert [p.name for p in store.dir.iterdir()] == ["abc.json"]


# --------------------------------------------------------------------------- runs

@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serial")
    cfg = write(tmp)
    result = run_experiment(cfg, tmp / "out", backend="serial", quiet=True)
    return cfg, tmp / "out", result


def test_run_writes_every_output(serial_run):
    _, out, result = serial_run
    assert result.n_cells == 5 and len(result.computed) == 5 and result.reused == 0
    expected = ["results.csv", "summary.md", "cells.csv", "timings.md", "run.json",
                "config.toml", "summary/iris_petal.csv"]
    if HAVE_PYARROW:
        expected.append("results.parquet")
    if HAVE_MATPLOTLIB:
        expected.append("plots/iris_petal.png")
    for name in expected:
        assert (out / name).is_file(), name
    assert len(list((out / "cells").glob("*.json"))) == 5
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and meta["n_cells"] == 5
    for key in ("cartjit", "numpy", "numba", "python", "config_hash", "config", "started",
                "ended"):
        assert meta[key], key
    assert meta["invocations"][0]["backend"] == "serial"
    df = pd.read_csv(out / "results.csv")
    assert list(df.columns[-3:]) == ["chosen_min", "chosen_1se", "wall_time_s"]
    assert len(df) == 5 * 5 and df["chosen_min"].sum() == 5 and df["chosen_1se"].sum() == 5
    if HAVE_PYARROW:
        pq = pd.read_parquet(out / "results.parquet")
        assert list(df.columns) == list(pq.columns)
        np.testing.assert_array_equal(df["cv_risk"].to_numpy(), pq["cv_risk"].to_numpy())
    if HAVE_MATPLOTLIB:
        assert (out / "plots/iris_petal.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_table_layout_and_values(serial_run):
    _, out, _ = serial_run
    df = pd.read_csv(out / "results.csv")
    table = pd.read_csv(out / "summary/iris_petal.csv")
    # docs/maths.md §6: alpha = 0, 1/150, 1/75, 22/75, 1/3 with 7, 4, 3, 2, 1 leaves
    assert table["n_leaves"].tolist() == [7, 4, 3, 2, 1]
    assert [Fraction(a).limit_denominator(1000) for a in table["alpha"]] == [
        0, Fraction(1, 150), Fraction(1, 75), Fraction(22, 75), Fraction(1, 3)]
    v5 = df[df["V"] == 5].pivot(index="k", columns="repeat", values="cv_risk").to_numpy()
    np.testing.assert_allclose(table["V5_mean"], v5.mean(axis=1), rtol=1e-15)
    np.testing.assert_allclose(table["V5_std"], v5.std(axis=1, ddof=1), rtol=1e-12)
    assert "V150_loo" in table and "V150_std" not in table and "V150_mean" not in table
    md = (out / "summary.md").read_text()
    assert "V = 150 (LOO)" in md and "| V = 2 |" in md.replace(" | V = 5", " |")
    lines = md.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| k |") and "α_k" in line)

    def split(line):  # Markdown cells; "\\|" is an escaped pipe inside a cell
        return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]

    cols = split(lines[header])
    assert cols[4:] == ["V = 2", "V = 5", "V = 150 (LOO)"]
    first = split(lines[header + 2])
    assert first[:2] == ["1", "7"]
    assert "±" in first[4] and "±" in first[5] and "±" not in first[6]
    mean, std = (float(x) for x in first[5].split("±"))
    assert mean == pytest.approx(table["V5_mean"][0], abs=5e-4)
    assert std == pytest.approx(table["V5_std"][0], abs=5e-4)


def test_leave_one_out_is_deterministic(serial_run, tmp_path):
    cfg, out, _ = serial_run
    run_experiment(cfg, tmp_path / "again", backend="serial", quiet=True)
    a = pd.read_csv(out / "results.csv")
    b = pd.read_csv(tmp_path / "again" / "results.csv")
    pd.testing.assert_frame_equal(a.drop(columns="wall_time_s"), b.drop(columns="wall_time_s"))


def test_threads_backend_is_byte_identical(serial_run, tmp_path):
    cfg, out, _ = serial_run
    run_experiment(cfg, tmp_path / "threads", backend="threads", workers=2, quiet=True)
    assert table_without_wall_time(tmp_path / "threads") == table_without_wall_time(out)
    assert (tmp_path / "threads" / "summary.md").read_bytes() == (out / "summary.md").read_bytes()
    for name in ("summary/iris_petal.csv", "cells.csv"):
        a = pd.read_csv(tmp_path / "threads" / name)
        b = pd.read_csv(out / name)
        pd.testing.assert_frame_equal(a.drop(columns="wall_time_s", errors="ignore"),
                                      b.drop(columns="wall_time_s", errors="ignore"))


def test_refuses_non_empty_dir_and_changed_config(serial_run, tmp_path):
    cfg, out, _ = serial_run
    before = sorted(p.name for p in out.rglob("*"))
    with pytest.raises(RunError, match="not empty.*--resume") as info:
        run_experiment(cfg, out, backend="serial", quiet=True)
    assert info.value.option == "--out"
    changed = write(tmp_path, SMALL.replace("seed = 7", "seed = 8"))
    with pytest.raises(RunError, match="config .* has changed") as info:
        run_experiment(changed, out, backend="serial", resume=True, quiet=True)
    assert info.value.option == "--resume"
    assert sorted(p.name for p in out.rglob("*")) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="not a cartjit run directory"):
        run_experiment(cfg, other, backend="serial", resume=True, quiet=True)
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


def test_resume_computes_only_missing_cells(serial_run, tmp_path):
    import shutil

    cfg, out, _ = serial_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    cells = sorted((copy / "cells").glob("*.json"))
    removed = {p.stem for p in cells[:2]}
    for p in cells[:2]:
        p.unlink()
    kept = {p.name: p.read_bytes() for p in cells[2:]}
    (copy / "results.csv").unlink()
    result = run_experiment(cfg, copy, backend="threads", workers=2, resume=True, quiet=True)
    assert set(result.computed) == removed and result.reused == 3
    assert {p.name: p.read_bytes() for p in (copy / "cells").glob("*.json")
            if p.stem not in removed} == kept
    assert table_without_wall_time(copy) == table_without_wall_time(out)
    meta = json.loads((copy / "run.json").read_text())
    assert [inv["resume"] for inv in meta["invocations"]] == [False, True]
    assert meta["invocations"][1]["computed"] == result.computed
    # nothing left to do: a second resume computes nothing
    assert run_experiment(cfg, copy, resume=True, quiet=True).computed == []


def test_unreadable_cell_file_is_recomputed(serial_run, tmp_path):
    import shutil

    cfg, out, _ = serial_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = sorted((copy / "cells").glob("*.json"))[0]
    victim.write_text('{"truncated": ')
    with pytest.warns(RuntimeWarning, match="damaged file .*not valid JSON"):
        result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True)
    assert result.computed == [victim.stem]
    assert table_without_wall_time(copy) == table_without_wall_time(out)


def test_a_failing_cell_keeps_the_others(tmp_path, monkeypatch):
    import cartjit.experiments.cells as runner

    cfg = write(tmp_path)
    real = runner.compute_cell
    calls = []

    def flaky(spec, X, y, selection):
        calls.append(spec["V"])
        if spec["V"] == 5 and spec["seed"] % 2 == 0 or len(calls) == 3:
            raise RuntimeError("boom")
        return real(spec, X, y, selection)

    monkeypatch.setattr(runner, "compute_cell", flaky)
    with pytest.raises(RunError, match="(?s)failed.*boom"):
        run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True)
    saved = len(list((tmp_path / "out" / "cells").glob("*.json")))
    assert 0 < saved < 5
    assert not (tmp_path / "out" / "results.csv").exists()
    assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "failed"
    monkeypatch.setattr(runner, "compute_cell", real)
    result = run_experiment(cfg, tmp_path / "out", backend="serial", resume=True, quiet=True)
    assert len(result.computed) == 5 - saved and (tmp_path / "out" / "results.csv").exists()


def test_format_csv_round_trips_floats_exactly():
    values = [0.1, 1 / 3, 2 / 150, 1e-300, float("inf"), 22 / 75, np.nextafter(1.0, 2.0)]
    df = pd.DataFrame({"x": values, "flag": [True] * 7, "n": range(7)})
    text = format_csv(df)
    back = pd.read_csv(__import__("io").StringIO(text))
    assert back["x"].tolist() == values
    assert text.splitlines()[1] == "0.1,True,0"


def test_iris_spec_sequences_in_a_run(tmp_path):
    cfg = write(tmp_path, """
        [cv]
        V = "loo"
        [[datasets]]
        bundled = "iris"
    """)
    run_experiment(cfg, tmp_path / "o", backend="serial", quiet=True)
    table = pd.read_csv(tmp_path / "o" / "summary" / "iris.csv")
    # docs/maths.md §6, all four features: 9 leaves, alpha = 0, 1/300, 1/150, 1/75, 22/75, 1/3
    assert table["n_leaves"].tolist() == [9, 7, 4, 3, 2, 1]
    np.testing.assert_allclose(table["alpha"], [0, 1 / 300, 1 / 150, 1 / 75, 22 / 75, 1 / 3],
                               rtol=1e-12, atol=1e-15)
    d = load_dataset("iris")
    est = CARTClassifierCV(cv="loo").fit(d.frame[list(d.features)], d.frame[d.target])
    np.testing.assert_array_equal(table["V150_loo"], est.cv_results_["cv_risk"])


def test_cell_warnings_are_recorded_per_cell_and_not_swallowed(tmp_path):
    # a class of 2 cases with 3 stratified folds: make_folds warns in every cell
    y = ["a"] * 20 + ["b"] * 20 + ["c"] * 2
    pd.DataFrame({"x": np.arange(42.0), "y": y}).to_csv(tmp_path / "w.csv", index=False)
    cfg = write(tmp_path, """
        [cv]
        V = 3
        n_repeats = 6
        stratify = true
        [[datasets]]
        name = "w"
        path = "w.csv"
        target = "y"
    """)
    run_experiment(cfg, tmp_path / "o", backend="threads", workers=2, quiet=True)
    cells = pd.read_csv(tmp_path / "o" / "cells.csv")
    assert cells["warnings"].str.contains("fewer than the 3 folds").all()
    # the run restored the warning machinery: a later warning is shown, not lost
    import warnings
    with pytest.warns(UserWarning, match="still visible"):
        warnings.warn("still visible", UserWarning)
    assert not getattr(warnings.showwarning, "_cartjit_router", False)
