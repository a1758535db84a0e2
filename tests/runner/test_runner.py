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
    run_experiment(cfg, tmp_path / "again", backend="serial", quiet=True, warmup=False)
    a = pd.read_csv(out / "results.csv")
    b = pd.read_csv(tmp_path / "again" / "results.csv")
    pd.testing.assert_frame_equal(a.drop(columns="wall_time_s"), b.drop(columns="wall_time_s"))


def test_threads_backend_is_byte_identical(serial_run, tmp_path):
    cfg, out, _ = serial_run
    run_experiment(cfg, tmp_path / "threads", backend="threads", workers=2, quiet=True,
                   warmup=False)
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
        run_experiment(cfg, out, backend="serial", quiet=True, warmup=False)
    assert info.value.option == "--out"
    changed = write(tmp_path, SMALL.replace("seed = 7", "seed = 8"))
    with pytest.raises(RunError, match="config .* has changed") as info:
        run_experiment(changed, out, backend="serial", resume=True, quiet=True, warmup=False)
    assert info.value.option == "--resume"
    assert sorted(p.name for p in out.rglob("*")) == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="not a cartjit run directory"):
        run_experiment(cfg, other, backend="serial", resume=True, quiet=True, warmup=False)
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
    result = run_experiment(cfg, copy, backend="threads", workers=2, resume=True, quiet=True,
                            warmup=False)
    assert set(result.computed) == removed and result.reused == 3
    assert {p.name: p.read_bytes() for p in (copy / "cells").glob("*.json")
            if p.stem not in removed} == kept
    assert table_without_wall_time(copy) == table_without_wall_time(out)
    meta = json.loads((copy / "run.json").read_text())
    assert [inv["resume"] for inv in meta["invocations"]] == [False, True]
    assert meta["invocations"][1]["computed"] == result.computed
    # nothing left to do: a second resume computes nothing
    assert run_experiment(cfg, copy, resume=True, quiet=True, warmup=False).computed == []


def test_unreadable_cell_file_is_recomputed(serial_run, tmp_path):
    import shutil

    cfg, out, _ = serial_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = sorted((copy / "cells").glob("*.json"))[0]
    victim.write_text('{"truncated": ')
    with pytest.warns(RuntimeWarning, match="damaged file .*not valid JSON"):
        result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
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
        run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    saved = len(list((tmp_path / "out" / "cells").glob("*.json")))
    assert 0 < saved < 5
    assert not (tmp_path / "out" / "results.csv").exists()
    assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "failed"
    monkeypatch.setattr(runner, "compute_cell", real)
    result = run_experiment(cfg, tmp_path / "out", backend="serial", resume=True, quiet=True,
                            warmup=False)
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
    run_experiment(cfg, tmp_path / "o", backend="serial", quiet=True, warmup=False)
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
    run_experiment(cfg, tmp_path / "o", backend="threads", workers=2, quiet=True, warmup=False)
    cells = pd.read_csv(tmp_path / "o" / "cells.csv")
    assert cells["warnings"].str.contains("fewer than the 3 folds").all()
    # the run restored the warning machinery: a later warning is shown, not lost
    import warnings
    with pytest.warns(UserWarning, match="still visible"):
        warnings.warn("still visible", UserWarning)
    assert not getattr(warnings.showwarning, "_cartjit_router", False)


# --------------------------------------------------------------------------- layout

def _imports_of(path, root):
    """Modules a file under the package directory ``root`` imports (relative resolved)."""
    import ast

    package = ["cartjit", *path.relative_to(root).parent.parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                submodules = {f"{mod}.{a.name}" for a in node.names
                              if (root.joinpath(*mod.split(".")[1:], a.name + ".py")).exists()}
                if node.module is None or submodules:
                    found |= submodules or {f"{mod}.{a.name}" for a in node.names}
                else:
                    found.add(mod)
            else:
                found.add(node.module)
    return found


def test_runner_layout_has_no_cycle_and_engine_never_imports_it():
    from pathlib import Path

    import cartjit
    root = Path(cartjit.__file__).parent
    runner = {f"cartjit.experiments.{p.stem}": _imports_of(p, root)
              for p in (root / "experiments").glob("*.py") if p.stem != "__init__"}
    assert set(runner) >= {f"cartjit.experiments.{m}" for m in
                           ("config", "data", "cells", "backends", "store", "reports", "run")}
    # the runner uses the public engine only (estimators, datasets, the memory limit, the
    # kernel cache's state for its warm-up, the estimators' input encoding, so that
    # categorical columns are coded exactly as a fit codes them, and the plots' look),
    # and the CV estimators' fit steps without scikit-learn (_prepare), what the dask
    # backend shares with the forests grown on a cluster (_dask: the source digest, the
    # quiet teardown), and the flat tree's T(α) and descent for the stability records
    # (engine.tree, engine.pruning)
    engine_used = {m for deps in runner.values() for m in deps
                   if m.startswith("cartjit.") and not m.startswith("cartjit.experiments")}
    assert engine_used <= {"cartjit.estimators", "cartjit.datasets", "cartjit.engine.limits",
                           "cartjit.engine.cache", "cartjit._encoding", "cartjit.plotting",
                           "cartjit._prepare", "cartjit.__version__", "cartjit._dask",
                           "cartjit.engine.tree", "cartjit.engine.pruning",
                           "cartjit.ensemble"}, engine_used  # (cartjit compile's forests)
    # no cycle among the runner's modules
    graph = {m: {d for d in deps if d in runner} for m, deps in runner.items()}
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in graph[m]:
            assert state.get(d) != "open", f"import cycle: {' -> '.join(stack + [m, d])}"
            if d not in state:
                visit(d, stack + [m])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [])
    # nothing imported upward: no engine module imports the runner
    for p in root.glob("*.py"):
        if p.name == "__main__.py":
            continue
        assert not {m for m in _imports_of(p, root)
                    if m.startswith("cartjit.experiments")}, p.name
    for old in ("runner", "reports", "_config_file", "_experiment_data"):
        assert not (root / f"{old}.py").exists(), old


# --------------------------------------------------------------------------- damaged store

TINY = """
    [cv]
    V = [2, 3, 5]
    seed = 3
    [[datasets]]
    bundled = "iris_petal"
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A finished run of three cells, never modified (tests copy it)."""
    tmp = tmp_path_factory.mktemp("tiny")
    cfg = write(tmp, TINY, name="tiny.toml")
    run_experiment(cfg, tmp / "out", backend="serial", quiet=True)
    return cfg, tmp / "out"


def _copy(src, dst):
    import shutil
    shutil.copytree(src, dst)
    return dst


def _cell_doc(path):
    return json.loads(path.read_text())


def _reseal(doc):
    from cartjit.experiments.store import seal
    return seal({k: v for k, v in doc.items() if k != "sha256"})


def _short_column(doc):
    doc["result"]["columns"]["cv_risk"] = doc["result"]["columns"]["cv_risk"][:-1]
    return _reseal(doc)


def _wrong_type(doc):
    doc["result"]["n_folds"] = "five"
    return _reseal(doc)


def _missing_key(doc):
    del doc["result"]["chosen"]
    return _reseal(doc)


def _null_column(doc):
    doc["result"]["columns"]["alpha"] = None
    return _reseal(doc)


def _edited_value(doc):  # not resealed: the seal catches it
    doc["result"]["columns"]["cv_risk"][0] += 0.125
    return doc


def _other_cells_key(doc):
    doc["key"]["repeat"] = 99
    return _reseal(doc)


SHAPES = {
    "null": lambda doc: None,
    "a list": lambda doc: [doc],
    "an empty object": lambda doc: {},
    "a column one entry short": _short_column,
    "a field of the wrong type": _wrong_type,
    "a missing key": _missing_key,
    "a null column": _null_column,
    "an edited value": _edited_value,
    "another cell's key": _other_cells_key,
}


@pytest.mark.parametrize("damage", list(SHAPES))
def test_a_cell_file_of_the_wrong_shape_is_recomputed_with_a_warning(tiny_run, tmp_path, damage):
    cfg, out = tiny_run
    copy = _copy(out, tmp_path / "copy")
    victim = sorted((copy / "cells").glob("*.json"))[1]
    victim.write_text(json.dumps(SHAPES[damage](_cell_doc(victim))))
    with pytest.warns(RuntimeWarning, match=re.escape(str(victim))):
        result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
    assert result.computed == [victim.stem]
    assert table_without_wall_time(copy) == table_without_wall_time(out)
    # the damaged file is kept aside, never deleted
    assert len(list((copy / "damaged").iterdir())) == 1
    assert _cell_doc(victim)["sha256"]  # the recomputed cell is sealed again


def test_a_directory_where_a_cell_file_should_be(tiny_run, tmp_path):
    cfg, out = tiny_run
    copy = _copy(out, tmp_path / "copy")
    victim = sorted((copy / "cells").glob("*.json"))[0]
    victim.unlink()
    victim.mkdir()
    (victim / "x").write_text("user data")
    with pytest.warns(RuntimeWarning, match=re.escape(str(victim))):
        result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
    assert result.computed == [victim.stem] and victim.is_file()
    moved = list((copy / "damaged").iterdir())
    assert len(moved) == 1 and (moved[0] / "x").read_text() == "user data"
    assert table_without_wall_time(copy) == table_without_wall_time(out)


@pytest.mark.parametrize("damage", ["not json", "a list", "no config_hash", "edited",
                                    "a directory"])
def test_a_damaged_run_json_is_rebuilt(tiny_run, tmp_path, damage):
    cfg, out = tiny_run
    copy = _copy(out, tmp_path / "copy")
    run_json = copy / "run.json"
    doc = json.loads(run_json.read_text())
    if damage == "not json":
        run_json.write_bytes(run_json.read_bytes()[:40])
    elif damage == "a list":
        run_json.write_text("[1, 2]")
    elif damage == "no config_hash":
        del doc["config_hash"]
        run_json.write_text(json.dumps(_reseal(doc)))
    elif damage == "edited":
        doc["n_cells"] = 2
        run_json.write_text(json.dumps(doc))
    else:
        run_json.unlink()
        run_json.mkdir()
    with pytest.warns(RuntimeWarning, match="run.json"):
        result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
    assert result.computed == [] and result.reused == 3
    meta = json.loads(run_json.read_text())
    assert meta["status"] == "complete" and "rebuilt" in meta
    assert table_without_wall_time(copy) == table_without_wall_time(out)


def test_resume_needs_a_run_json_or_a_cells_directory(tiny_run, tmp_path):
    cfg, out = tiny_run
    other = tmp_path / "other"
    other.mkdir()
    (other / "run.json").write_text("garbage")
    with pytest.raises(RunError, match="does not look like a cartjit run") as info:
        run_experiment(cfg, other, backend="serial", resume=True, quiet=True, warmup=False)
    assert info.value.option == "--resume"
    assert [p.name for p in other.iterdir()] == ["run.json"]


# --------------------------------------------------------------------------- disk full

def _fail_writes_after(monkeypatch, n_ok, err=None):
    import errno

    import cartjit.experiments.store as store
    real = store._write_file
    calls = {"n": 0}

    def write_file(path, data, fsync):
        if "cells" in str(path):
            calls["n"] += 1
            if calls["n"] > n_ok:
                raise err or OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, fsync)

    monkeypatch.setattr(store, "_write_file", write_file)


def test_disk_full_stops_the_run_clearly_and_resume_completes_it(tiny_run, tmp_path,
                                                                   monkeypatch, capsys):
    from cartjit.__main__ import main

    cfg, out = tiny_run
    target = tmp_path / "full"
    _fail_writes_after(monkeypatch, 1)
    assert main(["run", str(cfg), "--out", str(target), "--backend", "serial", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device (ENOSPC)" in err and "--resume" in err
    assert str(target / "cells") in err and "Traceback" not in err
    assert len(list((target / "cells").glob("*.json"))) == 1
    assert not [p for p in (target / "cells").iterdir() if p.name.endswith(".tmp")]
    assert json.loads((target / "run.json").read_text())["status"] == "failed"
    monkeypatch.undo()
    result = run_experiment(cfg, target, backend="serial", resume=True, quiet=True, warmup=False)
    assert len(result.computed) == 2 and result.reused == 1
    assert table_without_wall_time(target) == table_without_wall_time(out)


def test_any_oserror_writing_the_store_is_reported_with_the_file(tiny_run, tmp_path,
                                                                 monkeypatch):
    cfg, _ = tiny_run
    _fail_writes_after(monkeypatch, 0, PermissionError(13, "Permission denied"))
    with pytest.raises(RunError, match=r"(?s)cannot write .*cells.*Permission denied.*--resume"):
        run_experiment(cfg, tmp_path / "o", backend="threads", workers=2, quiet=True, warmup=False)


# --------------------------------------------------------------------------- lock

def test_a_second_run_on_a_locked_directory_is_refused(tiny_run, tmp_path):
    import os

    from cartjit.experiments.store import RunLock

    cfg, out = tiny_run
    copy = _copy(out, tmp_path / "copy")
    held = RunLock(copy).acquire()
    try:
        before = (copy / "run.json").read_bytes()
        with pytest.raises(RunError, match=f"in use by another cartjit run .*process "
                                           f"{os.getpid()}") as info:
            run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
        assert info.value.option == "--out"
        assert (copy / "run.json").read_bytes() == before
    finally:
        held.release()
    again = run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
    assert again.reused == 3


def test_a_lock_held_by_another_process_and_a_stale_one(tiny_run, tmp_path, capsys):
    import subprocess
    import sys

    from cartjit.experiments.store import LOCK_FILE

    cfg, out = tiny_run
    copy = _copy(out, tmp_path / "copy")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from cartjit.experiments.store import "
         "RunLock; RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)",
         str(copy)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunError, match=f"process {holder.pid}"):
            run_experiment(cfg, copy, backend="serial", resume=True, quiet=True, warmup=False)
    finally:
        holder.kill()
        holder.wait()
    # the holder died without releasing: its lock file names a dead pid, and is taken over
    assert str(holder.pid) in (copy / LOCK_FILE).read_text()
    result = run_experiment(cfg, copy, backend="serial", resume=True, quiet=False)
    assert result.reused == 3
    assert f"left by process {holder.pid}" in capsys.readouterr().err


# --------------------------------------------------------------------------- unbounded

@pytest.mark.parametrize("entry, field", [
    ('synthetic = "classification"\nname = "s"\nn_samples = 9000000000000', "n_samples"),
    ('synthetic = "regression"\nname = "s"\nn_samples = 1000\nn_features = 100000000000',
     "n_samples"),
    ('synthetic = "classification"\nname = "s"\nn_samples = 100000\nn_classes = 1000000000',
     "n_samples"),
])
def test_huge_synthetic_data_are_refused_up_front(tmp_path, monkeypatch, entry, field):
    from cartjit.experiments.config import ConfigError

    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "8G")
    cfg = write(tmp_path, "[[datasets]]\n" + entry + "\n")
    with pytest.raises(ConfigError, match="memory limit") as info:
        read_config(cfg)
    assert info.value.field == f"datasets[1].{field}"


def test_a_huge_number_of_repeats_is_refused_before_planning(tmp_path, monkeypatch):
    import time

    from cartjit.experiments.config import ConfigError

    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "8G")
    cfg = write(tmp_path, SMALL.replace("n_repeats = 2", "n_repeats = 10000000"))
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"20_000_001 cells .*memory limit") as info:
        run_experiment(cfg, tmp_path / "o", quiet=True, dry_run=True)
    assert info.value.field == "cv.n_repeats"
    assert time.perf_counter() - t0 < 5
    assert not (tmp_path / "o").exists()


def test_a_header_only_csv_says_it_has_no_data_rows(tmp_path):
    from cartjit.experiments.config import ConfigError

    (tmp_path / "h.csv").write_text("a,b,y\n")
    cfg = write(tmp_path, '[[datasets]]\nname = "h"\npath = "h.csv"\ntarget = "y"\n')
    with pytest.raises(ConfigError, match="has a header .* but no data rows") as info:
        resolve(read_config(cfg))
    assert info.value.field == "datasets[1].path"
    assert "not numeric" not in str(info.value)


# --------------------------------------------------------------------------- compile

def test_the_warm_up_is_timed_apart_from_the_cells(tiny_run):
    _, out = tiny_run
    meta = json.loads((out / "run.json").read_text())
    inv = meta["invocations"][0]
    assert set(inv["timings_s"]) == {"setup", "compile", "cells", "reports"}
    assert inv["compile"]["seconds"] > 0 and isinstance(inv["compile"]["compiled"], bool)
    assert inv["timings_s"]["compile"] >= inv["compile"]["seconds"]
    text = (out / "timings.md").read_text()
    assert "kernel warm-up" in text and "not in the cell times" in text


def test_cache_state_reads_the_cache_directory(tmp_path, monkeypatch):
    import os

    import cartjit.engine.grow  # noqa: F401  (the engine module whose index files we fake)
    from cartjit.experiments import warmup

    monkeypatch.setattr(warmup, "cache_dir", lambda: str(tmp_path))
    assert warmup.cache_state() == "empty"
    index = tmp_path / "grow.some_kernel-10.py311.nbi"
    index.write_bytes(b"")
    assert warmup.cache_state() == "present"
    old = os.path.getmtime(cartjit.engine.grow.__file__) - 100
    os.utime(index, (old, old))
    assert warmup.cache_state() == "stale"


@pytest.mark.slow
def test_a_cold_cache_is_announced_once_and_timed_apart(tmp_path):
    import os
    import subprocess
    import sys

    cfg = write(tmp_path, TINY, name="tiny.toml")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), CI="1")
    runs = []
    for name in ("cold", "warm"):
        proc = subprocess.run([sys.executable, "-m", "cartjit", "run", str(cfg), "--out",
                               str(tmp_path / name), "--backend", "serial"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append((proc.stderr, json.loads((tmp_path / name / "run.json").read_text())))
    (cold_err, cold), (warm_err, warm) = runs
    assert cold_err.count("compiling the kernels") == 1
    assert cold["invocations"][0]["compile"]["compiled"] is True
    assert "compiling" not in warm_err
    assert warm["invocations"][0]["compile"]["compiled"] is False
    # compilation is charged to the warm-up, not to the first cells
    assert cold["invocations"][0]["timings_s"]["compile"] > 3
    assert cold["invocations"][0]["timings_s"]["cells"] < 3
    assert table_without_wall_time(tmp_path / "cold") == table_without_wall_time(tmp_path / "warm")


# --------------------------------------------------------------------------- labels

def test_summary_and_plot_say_what_their_plus_minus_is(serial_run):
    _, out, _ = serial_run
    md = (out / "summary.md").read_text()
    assert "mean ± sd over repeats" in md
    assert "R^CV(T_k) per V: mean ± sd over the 2 repeats" in md
    if HAVE_MATPLOTLIB:
        assert "bars ± 1 SE" in md and "not the ± sd of the table" in md
    assert "docs/maths.md §4–5" in md


# --------------------------------------------------------------------------- corruption

def _mutations(path):
    """Ways to damage one file: bytes, JSON shape, values, type."""
    raw = path.read_bytes()
    out = {"truncated": raw[: len(raw) // 2], "empty": b"", "binary junk": bytes(range(256))}
    if raw:
        i = len(raw) // 3
        out["a flipped byte"] = raw[:i] + bytes([raw[i] ^ 0x55]) + raw[i + 1:]
    if path.suffix == ".json":
        out["JSON null"] = b"null"
        out["JSON list"] = b"[]"
        doc = json.loads(raw)
        if isinstance(doc, dict) and "result" in doc:
            changed = json.loads(raw)
            changed["result"]["wall_time_s"] = -1
            out["a changed value"] = json.dumps(changed).encode()
    return out


@pytest.mark.slow
def test_every_file_of_a_finished_run_damaged_in_turn(tiny_run, tmp_path):
    """Each file of a 3-cell run, damaged each way: --resume recomputes or refuses
    clearly, and whenever it finishes the tables equal the untouched run's."""
    import shutil
    import warnings

    cfg, out = tiny_run
    expected = table_without_wall_time(out)
    expected_summary = (out / "summary/iris_petal.csv").read_bytes()
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert len([f for f in files if f.parts[0] == "cells"]) == 3
    n, refused = 0, []
    for rel in files:
        for how, content in list(_mutations(out / rel).items()) + [("a directory", None)]:
            copy = tmp_path / f"c{n}"
            n += 1
            shutil.copytree(out, copy)
            target = copy / rel
            if content is None:
                target.unlink()
                target.mkdir()
            else:
                target.write_bytes(content)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    run_experiment(cfg, copy, backend="serial", resume=True, quiet=True,
                                   warmup=False)
                except RunError as exc:  # refused: clearly, naming the file
                    assert str(rel.name) in str(exc) and "Traceback" not in str(exc), (rel, how)
                    refused.append((str(rel), how))
                    shutil.rmtree(copy)
                    continue
            assert table_without_wall_time(copy) == expected, (rel, how)
            assert (copy / "summary/iris_petal.csv").read_bytes() == expected_summary, (rel, how)
            shutil.rmtree(copy)
    assert n > 60
    # only a directory in place of a report output stops a resume (it is not ours to
    # delete); every damaged cell file, run.json, config.toml or lock file is handled
    assert all(how == "a directory" and rel.split("/")[0] not in ("cells", "run.json")
               for rel, how in refused), refused


# --------------------------------------------------------------------------- categorical

CATEGORICAL = """
    [cv]
    V = [3]
    n_repeats = 2
    seed = 11
    [[datasets]]
    bundled = "play_golf"
    tree = { criterion = "entropy" }
    [[datasets]]
    name = "colours"
    path = "colours.csv"
    target = "label"
"""


def colours_csv(tmp_path, n=60):
    rng = np.random.default_rng(2)
    colour = rng.choice(["red", "green", "blue"], n)
    frame = pd.DataFrame({"x": rng.standard_normal(n), "colour": colour,
                          "label": np.where(colour == "green", "g", "other")})
    frame.to_csv(tmp_path / "colours.csv", index=False)
    return frame


def test_string_columns_are_categorical_features_of_every_cell(tmp_path):
    frame = colours_csv(tmp_path)
    data = resolve(read_config(write(tmp_path, CATEGORICAL)))
    golf, colours = data
    assert golf.categorical == (0, 1) and colours.categorical == (1,)
    # X holds the level codes (sorted levels: blue 0, green 1, red 2)
    np.testing.assert_array_equal(colours.X[:, 1], frame["colour"].map(
        {"blue": 0.0, "green": 1.0, "red": 2.0}).to_numpy())
    cells = plan_cells(data)
    assert {c.categorical for c in cells if c.dataset == "colours"} == {(1,)}
    # a cell is the CV estimator fitted on the DataFrame itself, string column included
    cell = next(c for c in cells if c.dataset == "colours")
    from cartjit.experiments.cells import cell_payload
    result = compute_cell(cell_payload(cell), colours.X, colours.y, ("min",))
    direct = CARTClassifierCV(cv=cell.V, n_repeats=1, selection="min",
                              random_state=cell.seed).fit(frame[["x", "colour"]],
                                                          frame["label"])
    np.testing.assert_allclose(result["columns"]["cv_risk"],
                               direct.cv_results_["cv_risk"].to_numpy(), rtol=1e-12)


def test_categorical_flags_enter_the_data_fingerprint(tmp_path):
    from cartjit.experiments.data import _fingerprint
    X, y = np.zeros((4, 2)), np.arange(4)
    plain = _fingerprint(X, y, ["a", "b"], "y")
    assert _fingerprint(X, y, ["a", "b"], "y", ()) == plain  # numeric data: unchanged
    assert _fingerprint(X, y, ["a", "b"], "y", (1,)) != plain


def test_a_categorical_run_end_to_end(tmp_path):
    colours_csv(tmp_path)
    out = tmp_path / "out"
    run_experiment(write(tmp_path, CATEGORICAL), out, backend="serial", quiet=True)
    table = pd.read_csv(out / "results.csv")
    assert set(table["dataset"]) == {"play_golf", "colours"}
    assert np.isfinite(table["cv_risk"]).all()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "categorical: colour" in summary


def test_missing_values_in_a_string_column_are_missing_values(tmp_path):
    frame = colours_csv(tmp_path)
    frame.loc[3, "colour"] = None
    frame.to_csv(tmp_path / "colours.csv", index=False)
    data = {d.name: d for d in resolve(read_config(write(tmp_path, CATEGORICAL)))}
    colours = data["colours"]
    j = colours.feature_names.index("colour")
    assert np.isnan(colours.X[3, j]) and np.isnan(colours.X[:, j]).sum() == 1


def test_a_run_does_not_import_scikit_learn(tmp_path):
    """The cells are fitted by the CV estimators' steps without the estimator objects
    (cartjit._prepare): a run never pays for importing scikit-learn (nor scipy.stats,
    which it imports; Numba may load scipy's core and BLAS bindings)."""
    import os
    import subprocess
    import sys

    import cartjit
    cfg = write(tmp_path, TINY, name="tiny.toml")
    root = os.path.dirname(os.path.dirname(os.path.abspath(cartjit.__file__)))
    code = ("import sys\nfrom cartjit.experiments import run_experiment\n"
            f"run_experiment({str(cfg)!r}, {str(tmp_path / 'out')!r}, backend='threads', "
            "workers=2, quiet=True)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'\n"
            "             or m.startswith('scipy.stats')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=root), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert (tmp_path / "out" / "summary.md").exists()


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="needs matplotlib")
def test_the_plot_helper_draws_the_same_bytes(serial_run, tmp_path):
    """The plots drawn by the helper process are byte for byte those drawn in-process;
    a helper that cannot answer makes the run draw them itself."""
    import io
    import subprocess
    import sys

    import cartjit.experiments.plotter as plotter_module
    from cartjit.experiments.plotter import PlotWorker
    from cartjit.experiments.reports import plot_group
    _, out, _ = serial_run
    table = pd.read_csv(next((out / "summary").glob("*.csv")))
    here = io.BytesIO()
    plot_group(table, "iris_petal: N = 150", here)
    columns = {c: table[c].to_numpy() for c in table.columns}
    with PlotWorker() as worker:
        assert worker.submit([("a", columns, "iris_petal: N = 150")])
        assert worker.submit([("b", columns, "again"), ("c", columns, "iris_petal: N = 150")])
        assert worker.has("b") and not worker.has("d")
        pngs = worker.results()
    assert pngs is not None and pngs["a"] == here.getvalue() == pngs["c"] != pngs["b"]
    broken = PlotWorker()
    broken.proc.kill()
    broken.proc.wait()
    assert not broken.submit([("x", columns, "x")]) or broken.results() is None
    silent = PlotWorker()  # a helper that never answers: the run stops waiting
    silent.proc.kill()
    silent.proc.wait()
    silent.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    silent._requests = [["y"]]
    before, plotter_module.ANSWER_TIMEOUT_S = plotter_module.ANSWER_TIMEOUT_S, 0.5
    try:
        assert silent.results() is None and not silent.alive
    finally:
        plotter_module.ANSWER_TIMEOUT_S = before
    broken.close()


def test_a_tree_settings_sweep_is_summarised_side_by_side(tmp_path):
    """A sweep over the criterion: one section for the dataset, with the settings in one
    side-by-side table (their minima equal to those of each setting's own table), then a
    subsection per setting."""
    cfg = write(tmp_path, """
        [cv]
        V = [5, "loo"]
        n_repeats = 2
        seed = 3
        [[datasets]]
        bundled = "iris_petal"
        tree = { criterion = ["gini", "entropy"] }
    """)
    run_experiment(cfg, tmp_path / "out", backend="serial", quiet=True, warmup=False)
    out = tmp_path / "out"
    md = (out / "summary.md").read_text()
    lines = md.splitlines()
    assert lines.count("## iris_petal") == 1
    assert "### criterion=gini" in lines and "### criterion=entropy" in lines
    assert not any(line.startswith("## iris_petal (") for line in lines)
    head = next(i for i, line in enumerate(lines) if line.startswith("| setting |"))
    rows = {}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        rows[cells[0]] = cells
    assert set(rows) == {"criterion=gini", "criterion=entropy"}
    for label, slug in (("criterion=gini", "iris_petal__criterion-gini"),
                        ("criterion=entropy", "iris_petal__criterion-entropy")):
        table = pd.read_csv(out / "summary" / f"{slug}.csv")
        assert rows[label][1] == str(len(table))
        assert rows[label][2] == str(int(table["n_leaves"].iloc[0]))
        i = int(table["V5_mean"].idxmin())
        mean = float(rows[label][3].split("±")[0])
        assert mean == pytest.approx(table["V5_mean"].iloc[i], abs=5e-4)
        assert rows[label][3].endswith(f"({int(table['n_leaves'].iloc[i])})")
        j = int(table["V150_loo"].idxmin())
        assert rows[label][4].endswith(f"({int(table['n_leaves'].iloc[j])})")
    assert md.index("| setting |") < md.index("### criterion=gini")
