"""End-to-end tests of the ``cartjit`` command line, in temporary directories."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from cartjit.__main__ import main

SMALL = """
    [experiment]
    name = "cli-small"
    [cv]
    V = [2, 5, 150]
    n_repeats = 2
    [[datasets]]
    bundled = "iris_petal"
    [[datasets]]
    bundled = "potato_yield"
    cv = { V = [3, "loo"], n_repeats = 2 }
"""


def write(tmp_path, text=SMALL, name="small.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def table_without_wall_time(out):
    """results.csv minus its last column, wall_time_s (the only machine-dependent one)."""
    lines = (Path(out) / "results.csv").read_text().splitlines()
    assert lines[0].endswith(",wall_time_s")
    return "\n".join(line.rsplit(",", 1)[0] for line in lines)


ROOT = Path(__file__).resolve().parents[2]


def child_env():
    """Environment of a child process: this checkout's cartjit first (also for the
    console script, which an editable install may point at another checkout)."""
    env = dict(os.environ, CI="1")
    env.pop("PYTHONHASHSEED", None)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    return env


# --------------------------------------------------------------------------- help

def test_help_of_the_console_script_and_of_python_m(tmp_path):
    out = subprocess.run([sys.executable, "-m", "cartjit", "--help"], capture_output=True,
                         text=True, timeout=120, env=child_env())
    assert out.returncode == 0
    for word in ("run", "show", "datasets"):
        assert word in out.stdout
    script = Path(sys.executable).with_name("cartjit")
    cmd = [str(script)] if script.exists() else ["cartjit"]
    try:
        out2 = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=120,
                              env=child_env())
    except FileNotFoundError:
        pytest.skip("the cartjit console script is not on PATH (pip install -e .)")
    assert out2.returncode == 0 and out2.stdout == out.stdout


_NO_BLAS_SCRIPT = """
import sys
import numpy as np
from cartjit.__main__ import _load_numba_without_blas
from cartjit.engine.presort import presort
_load_numba_without_blas()
keys = presort(np.array([[2.0, 1.0], [0.5, 3.0], [1.0, 2.0]])).keys
linalg_before = "scipy.linalg" in sys.modules
import scipy.linalg.cython_blas  # still importable afterwards
print(linalg_before, keys.tolist())
"""


def test_command_line_loads_numba_without_scipy_linalg():
    """Numba's BLAS probe is kept from importing scipy.linalg in the command line's
    process; kernels still run, and scipy.linalg can be imported afterwards."""
    pytest.importorskip("scipy")
    out = subprocess.run([sys.executable, "-c", _NO_BLAS_SCRIPT], capture_output=True,
                         text=True, timeout=300, env=child_env(), check=True)
    assert out.stdout.split() == ["False", "[[1,", "2,", "0],", "[0,", "2,", "1]]"]


@pytest.mark.parametrize("command", ["run", "show", "datasets"])
def test_each_subcommand_explains_itself(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: cartjit {command}" in text
    if command == "run":
        for option in ("--out", "--backend", "--scheduler", "--workers", "--resume",
                       "--quiet", "docs/experiments.md"):
            assert option in text


# --------------------------------------------------------------------------- run

def test_run_produces_the_tables_and_refuses_to_overwrite(tmp_path, capsys):
    cfg = write(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(cfg), "--out", str(out), "--backend", "serial"]) == 0
    err = capsys.readouterr().err
    assert "cli-small" in err and "done" in err
    for name in ("results.csv", "summary.md", "summary/iris_petal.csv",
                 "summary/potato_yield.csv", "run.json", "cells.csv"):
        assert (out / name).is_file(), name
    md = (out / "summary.md").read_text()
    assert "## iris_petal" in md and "## potato_yield" in md and "V = 15 (LOO)" in md
    df = pd.read_csv(out / "results.csv")
    assert set(df["dataset"]) == {"iris_petal", "potato_yield"}
    assert set(df.loc[df["dataset"] == "potato_yield", "V"]) == {3, 15}

    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "not empty" in err and "--resume" in err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before

    assert main(["run", str(cfg), "--out", str(out), "--resume"]) == 0
    assert "0 to compute" in capsys.readouterr().err


def test_default_out_dir_and_dry_run(tmp_path, monkeypatch, capsys):
    cfg = write(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(cfg), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "OK" in text and "8 cells" in text and str(Path("results") / "small") in text
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_backends_are_byte_identical(tmp_path):
    cfg = write(tmp_path)
    tables = {}
    backends = [("serial", []), ("threads", ["--workers", "2"])]
    try:
        import distributed  # noqa: F401
        backends.append(("dask", ["--workers", "2"]))
    except ImportError:
        pass
    for backend, extra in backends:
        out = tmp_path / backend
        assert main(["run", str(cfg), "--out", str(out), "--backend", backend, "--quiet",
                     *extra]) == 0
        tables[backend] = table_without_wall_time(out)
        meta = json.loads((out / "run.json").read_text())
        assert meta["invocations"][-1]["backend"] == backend
    assert tables["threads"] == tables["serial"]
    if "dask" in tables:
        assert tables["dask"] == tables["serial"]
    else:
        pytest.skip("dask.distributed is not installed: serial == threads checked, dask not "
                    "(pip install 'cartjit[dask]')")
    # the leave-one-out rows have no random partition: one cell, seed 0, same everywhere
    loo = pd.read_csv(tmp_path / "serial" / "results.csv")
    loo = loo[loo["loo"]]
    assert set(loo["repeat"]) == {0} and set(loo["seed"]) == {0}


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("text, words", [
    ("[[datasets]]\nname = 'no_such_data'\n", ["datasets[1].name", "not a bundled dataset"]),
    ("[[datasets]]\nname = 'iris'\nshuffle = true\n", ["datasets[1].shuffle", "unknown key"]),
    ("[cv]\nV = [2, 500]\n[[datasets]]\nname = 'iris'\n", ["cv.V", "V = 500", "N = 150"]),
    ("[cv]\nn_repeats = 2.5\n[[datasets]]\nname = 'iris'\n", ["cv.n_repeats", "integer"]),
    ("[tree]\nmin_samples_leaf = 'five'\n[[datasets]]\nname = 'iris'\n",
     ["tree.min_samples_leaf", "integer"]),
])
def test_bad_configs_name_the_field_and_leave_nothing(tmp_path, capsys, text, words):
    cfg = write(tmp_path, text, name="bad.toml")
    out = tmp_path / "out"
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(cfg) in err
    for word in words:
        assert word in err
    assert not out.exists()


def test_unwritable_output_dir(tmp_path, capsys):
    cfg = write(tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    assert main(["run", str(cfg), "--out", str(blocker / "out")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "cannot create" in err
    assert blocker.read_text() == "not a directory"
    assert main(["run", str(cfg), "--out", str(blocker)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_missing_config_and_bad_options(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["run", "x.toml", "--workers", "0"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["run", "x.toml", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    with pytest.raises(SystemExit):
        main(["run", "x.toml", "--scheduler", "tcp://127.0.0.1:1"])  # needs --backend dask
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- kill -9

KILL = """
    [experiment]
    name = "kill"
    [cv]
    V = [2, 3]
    n_repeats = 60
    [[datasets]]
    bundled = "iris_petal"
"""


@pytest.mark.slow
def test_sigkill_then_resume_loses_nothing_and_computes_nothing_twice(tmp_path):
    cfg = write(tmp_path, KILL, name="kill.toml")
    total = 120
    out = tmp_path / "killed"
    cells = out / "cells"
    proc = subprocess.Popen([sys.executable, "-m", "cartjit", "run", str(cfg), "--out",
                             str(out), "--backend", "threads", "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=child_env())
    deadline = time.monotonic() + 120
    n = 0
    while time.monotonic() < deadline and proc.poll() is None:
        n = len(list(cells.glob("*.json"))) if cells.is_dir() else 0
        if n >= 5:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    survivors = {p.name: p.read_bytes() for p in cells.glob("*.json")}
    assert 5 <= len(survivors) < total, len(survivors)
    assert not (out / "results.csv").exists()
    for raw in survivors.values():  # every file is a complete cell (atomic writes)
        assert json.loads(raw)["invocation"] == 0

    # rerunning without --resume refuses
    again = subprocess.run([sys.executable, "-m", "cartjit", "run", str(cfg), "--out", str(out),
                            "--quiet"], capture_output=True, text=True, env=child_env(),
                           timeout=300)
    assert again.returncode == 2 and "--resume" in again.stderr

    assert main(["run", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert [inv["resume"] for inv in meta["invocations"]] == [False, True]
    assert meta["invocations"][0]["status"] == "running"  # killed: never finished
    computed = meta["invocations"][1]["computed"]
    assert meta["invocations"][1]["reused"] == len(survivors)
    # no cell computed twice, none lost
    assert not {f"{c}.json" for c in computed} & set(survivors)
    assert len(computed) + len(survivors) == total
    for name, raw in survivors.items():
        assert (cells / name).read_bytes() == raw
    assert not [p for p in cells.iterdir() if p.name.endswith(".tmp")]

    fresh = tmp_path / "fresh"
    assert main(["run", str(cfg), "--out", str(fresh), "--quiet"]) == 0
    assert table_without_wall_time(out) == table_without_wall_time(fresh)


# --------------------------------------------------------------------------- show

def test_show_prints_the_tree_and_the_pruning_table(capsys):
    assert main(["show", "iris"]) == 0
    text = capsys.readouterr().out
    assert "1) root: n=150, counts [50, 50, 50] -> setosa" in text
    assert "2) petal_length <= 2.45: n=50, counts [50, 0, 0] -> setosa, R=0 *" in text
    assert text.count(" *\n") == 9  # T_max has 9 leaves (docs/maths.md §6)
    assert "Pruning sequence" in text and "rel_error" in text

    assert main(["show", "iris_petal", "--cv", "10", "--selection", "min"]) == 0
    text = capsys.readouterr().out
    assert "cv_risk" in text and "10-fold" in text

    assert main(["show", "potato_yield", "--max-depth", "1"]) == 0
    text = capsys.readouterr().out
    assert "mean=24.8" in text and text.count(" *\n") == 2


def test_show_errors(capsys):
    assert main(["show", "nope"]) == 2
    assert "DATASET must be a bundled dataset" in capsys.readouterr().err
    assert main(["show", "play_golf", "--features", "play"]) == 2
    assert "'play' is the target column" in capsys.readouterr().err
    assert main(["show", "iris", "--features", "petal_size"]) == 2
    assert "--features" in capsys.readouterr().err


def test_datasets_lists_the_registry(capsys):
    assert main(["datasets"]) == 0
    text = capsys.readouterr().out
    for name in ("iris", "iris_petal", "play_golf", "potato_yield"):
        assert name in text


# --------------------------------------------------------------------------- show FILE

def test_show_fits_a_csv_or_parquet_file(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal(60)
    frame = pd.DataFrame({"x": x, "z": rng.standard_normal(60),
                          "label": np.where(x > 0.3, "hi", "lo"), "y": 2.0 * x})
    frame.drop(columns="y").to_csv(tmp_path / "c.csv", index=False)
    assert main(["show", str(tmp_path / "c.csv"), "--target", "label"]) == 0
    text = capsys.readouterr().out
    assert "N = 60, features: x, z; target: label" in text
    # the label is a threshold on x: the root splits on x; its left child holds "lo"
    # (class index 1), so rpart's number 2 goes to the right child and the left is 3
    assert "\n  3) x <= " in text and "\n  2) x > " in text
    assert "CARTClassifier" in text and "Pruning sequence" in text
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pytest.skip("Parquet needs pyarrow")
    frame.drop(columns="label").to_parquet(tmp_path / "r.parquet")
    assert main(["show", str(tmp_path / "r.parquet"), "--target", "y", "--cv", "5"]) == 0
    text = capsys.readouterr().out
    assert "CARTRegressor" in text and "cv_risk" in text


def test_show_file_errors_exit_2_with_a_message(tmp_path, capsys):
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "y": [0, 1, 0]}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "h.csv").write_text("a,y\n")
    cases = [
        (["show", str(tmp_path / "missing.csv"), "--target", "y"], "no such file"),
        (["show", str(tmp_path / "d.csv")], "give --target"),
        (["show", str(tmp_path / "d.csv"), "--target", "q"], "column 'q' is not in"),
        (["show", str(tmp_path / "h.csv"), "--target", "y"], "no data rows"),
        (["show", "iris", "--target", "species"], "--target and --task are for files"),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)


# --------------------------------------------------------------------------- compile

def test_compile_says_how_long_and_where(capsys):
    assert main(["compile"]) == 0
    out = capsys.readouterr().out
    assert "cartjit compile:" in out and " s" in out and "cache" in out


# --------------------------------------------------------------------------- categorical

def test_show_play_golf_splits_its_categorical_features(capsys):
    assert main(["show", "play_golf", "--criterion", "entropy"]) == 0
    text = capsys.readouterr().out
    assert ("features: temperature (categorical, 2 levels), humidity (categorical, "
            "2 levels); target: play") in text
    assert "\n  2) humidity " in text and "\n    4) temperature " in text
    assert "Variable importance (rpart's, as % of the total): humidity 60, temperature 40" \
        in text


def test_show_a_file_with_a_string_column(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(1)
    colour = rng.choice(["red", "green", "blue", "grey"], 80)
    frame = pd.DataFrame({"colour": colour, "x": rng.standard_normal(80),
                          "label": np.where(np.isin(colour, ["red", "grey"]), "warm", "cold")})
    frame.to_csv(tmp_path / "c.csv", index=False)
    assert main(["show", str(tmp_path / "c.csv"), "--target", "label"]) == 0
    text = capsys.readouterr().out
    assert "features: colour (categorical, 4 levels), x; target: label" in text
    assert "\n  2) colour " in text
    assert main(["show", str(tmp_path / "c.csv"), "--target", "label", "--features",
                 "label"]) == 2
    assert "'label' is the target column" in capsys.readouterr().err


def test_datasets_lists_the_r_datasets(capsys):
    assert main(["datasets"]) == 0
    text = capsys.readouterr().out
    for name in ("chickwts", "insect_sprays", "infert", "tooth_growth", "npk", "titanic",
                 "hair_eye_color"):
        assert name in text


_RUN_MODULES_SCRIPT = """
import sys
from cartjit.__main__ import main
status = main(["run", sys.argv[1], "--out", sys.argv[2], "--backend", "serial", "--quiet"])
print(status, "sklearn" in sys.modules, "cartjit.estimators" in sys.modules)
"""


def test_run_imports_neither_the_estimators_nor_scikit_learn(tmp_path):
    """``cartjit run`` fits its cells by the engine's steps; importing scikit-learn (about
    half a second, most of a small sweep's import time) is left to code that asks for it."""
    pytest.importorskip("sklearn")
    cfg = write(tmp_path)
    out = subprocess.run([sys.executable, "-c", _RUN_MODULES_SCRIPT, str(cfg),
                          str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=600, env=child_env(), check=True)
    assert out.stdout.split() == ["0", "False", "False"], out.stderr
    assert (tmp_path / "out" / "results.csv").is_file()


def test_imports_leave_the_collector_as_found():
    """The command line's imports run with the garbage collector off and leave it as
    they found it: on (collecting again), or off where the caller had turned it off."""
    import gc

    from cartjit.__main__ import _import_without_collections
    was = gc.isenabled()
    try:
        gc.enable()
        _import_without_collections("run")
        assert gc.isenabled()
        assert "cartjit.experiments" in sys.modules and "pandas" in sys.modules
        gc.disable()
        _import_without_collections("fit")
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
