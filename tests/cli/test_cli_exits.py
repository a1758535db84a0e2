"""How the command line ends: one line and an exit status for every failure of a shell.

Each case runs ``python -m cartjit`` in a child process, bounded in time: outputs that
cannot be written (no permission, a read-only or full file system, a device), standard
output that fails (``/dev/full``, a closed pipe), signals (SIGINT, SIGTERM, SIGKILL then
the next write), bad settings (``CARTJIT_MEMORY_LIMIT``), dry runs of huge sweeps, and
predictions from several Python threads under Numba's ``workqueue`` layer. The file
system cases mount small tmpfs file systems, so they run as root only (skipped with the
reason otherwise).
"""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240
ROOT_ONLY = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="mounting a tmpfs (read-only or full file system) needs root")


def child_env(**extra):
    env = dict(os.environ, CI="1", **extra)
    env.pop("PYTHONHASHSEED", None)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    return env


def cartjit(*args, cwd, stdout=subprocess.PIPE, env=None, timeout=TIMEOUT):
    return subprocess.run([sys.executable, "-m", "cartjit", *map(str, args)], cwd=cwd,
                          stdout=stdout, stderr=subprocess.PIPE, text=True,
                          env=env or child_env(), timeout=timeout)


def one_line(proc, command):
    """The one stderr line of a failed command (and no traceback); ``proc`` is a
    finished :func:`subprocess.run` or the text of a child's stderr. Notes and
    warnings the command said before failing are not failures."""
    err = proc if isinstance(proc, str) else proc.stderr
    assert "Traceback" not in err, err
    errors = [line for line in err.strip().splitlines()
              if line.startswith(f"cartjit {command}: ")
              and not line.startswith((f"cartjit {command}: note: ",
                                       f"cartjit {command}: warning: "))]
    assert len(errors) == 1, err
    return errors[0]


def temporaries(directory):
    return sorted(p.name for p in Path(directory).iterdir() if p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with iris.csv and a fitted iris.cartjit."""
    from cartjit import CARTClassifier, save
    from cartjit.datasets import load_dataset

    d = tmp_path_factory.mktemp("exits")
    ds = load_dataset("iris")
    ds.frame.to_csv(d / "iris.csv", index=False)
    est = CARTClassifier().fit(ds.frame[list(ds.features)], ds.frame[ds.target])
    save(est, d / "iris.cartjit")
    return d


@pytest.fixture
def mounted(tmp_path):
    """``mount(options)``: a fresh tmpfs under tmp_path (unmounted afterwards)."""
    points = []

    def mount(options):
        point = tmp_path / f"mnt{len(points)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        points.append(point)
        return point

    yield mount
    for point in points:
        subprocess.run(["umount", str(point)], capture_output=True)


def fill(directory):
    """Fill a small file system to the last byte."""
    with open(directory / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 512)
        except OSError:
            pass


# --------------------------------------------------------------------------- outputs

def writes(work, out_dir):
    """(command, args, the file it would write) for each command that writes a file."""
    return [("predict", ["predict", work / "iris.cartjit", work / "iris.csv", "-o",
                         out_dir / "p.csv"], out_dir / "p.csv"),
            ("show", ["show", work / "iris.cartjit", "--plot", out_dir / "t.png"],
             out_dir / "t.png"),
            ("fit", ["fit", work / "iris.csv", "--target", "species", "-q", "-o",
                     out_dir / "m.cartjit"], out_dir / "m.cartjit")]


def check_refused(work, out_dir, *reasons):
    for command, args, target in writes(work, out_dir):
        if command == "show":
            pytest.importorskip("matplotlib")
        proc = cartjit(*args, cwd=work)
        line = one_line(proc, command)
        assert proc.returncode == 2, proc.stderr
        assert line.startswith(f"cartjit {command}: error: ")
        assert repr(str(target)) in line and any(r in line for r in reasons), line
        assert not target.exists()
        assert temporaries(out_dir) == []


def test_a_directory_without_write_permission(work, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into a directory without write permission")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        check_refused(work, ro, "not writable")
    finally:
        ro.chmod(0o755)


@ROOT_ONLY
def test_a_read_only_file_system(work, mounted):
    check_refused(work, mounted("ro,size=1m"), "not writable", "read-only")


@ROOT_ONLY
def test_a_full_file_system(work, mounted):
    full = mounted("size=64k")
    fill(full)
    check_refused(work, full, "no space left on the device")
    # the plot and the model are refused whole; the file system is still full
    assert sorted(p.name for p in full.iterdir()) == ["filler"]


@ROOT_ONLY
def test_a_disk_that_fills_up_while_the_predictions_are_written(work, mounted, tmp_path):
    big = tmp_path / "big.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.random((20_000, 4)) * 7, columns=["sepal_length", "sepal_width",
                                                       "petal_length", "petal_width"]
                 ).to_csv(big, index=False)
    full = mounted("size=64k")
    proc = cartjit("predict", work / "iris.cartjit", big, "-o", full / "p.csv", cwd=work)
    assert proc.returncode == 2
    assert "no space left on the device" in one_line(proc, "predict")
    assert list(full.iterdir()) == []  # no partial table, no temporary file


def test_outputs_that_are_not_regular_files_are_refused(work, tmp_path):
    proc = cartjit("fit", "iris.csv", "--target", "species", "-q", "-o", "/dev/null",
                   "--overwrite", cwd=work)
    assert proc.returncode == 2
    assert "'/dev/null' is not a regular file" in one_line(proc, "fit")
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    proc = cartjit("predict", "iris.cartjit", "iris.csv", "-o", fifo, "--overwrite",
                   cwd=work)
    assert proc.returncode == 2
    assert "is not a regular file" in one_line(proc, "predict")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    if os.geteuid() == 0:  # a character device of one's own making needs root
        dev = tmp_path / "m.cartjit"
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        proc = cartjit("fit", "iris.csv", "--target", "species", "-q", "-o", dev,
                       "--overwrite", cwd=work)
        assert proc.returncode == 2 and "is not a regular file" in one_line(proc, "fit")
        assert stat.S_ISCHR(os.stat(dev).st_mode)


def test_save_refuses_a_device():
    from cartjit import CARTRegressor, save

    est = CARTRegressor().fit(np.arange(10.0).reshape(-1, 1), np.arange(10.0))
    with pytest.raises(ValueError, match="not a regular file"):
        save(est, "/dev/null", overwrite=True)


# --------------------------------------------------------------------------- stdout

@pytest.mark.parametrize("args", [["show", "iris"], ["datasets"],
                                  ["predict", "iris.cartjit", "iris.csv"],
                                  ["fit", "iris.csv", "--target", "species", "-o",
                                   "full.cartjit", "--overwrite"]],
                         ids=["show", "datasets", "predict", "fit"])
def test_standard_output_on_a_full_device(work, args):
    with open("/dev/full", "w") as full:
        proc = cartjit(*args, cwd=work, stdout=full)
    assert proc.returncode == 2
    line = one_line(proc, args[0])
    assert "cannot write to standard output: no space left on the device" in line
    assert "Exception ignored" not in proc.stderr
    if args[0] == "fit":  # the model was saved whole before the printing failed
        from cartjit import load
        assert load(work / "full.cartjit").tree_.n_leaves > 1
    assert temporaries(work) == []


def test_a_closed_pipe_ends_quietly_as_unix_tools_do(work, tmp_path):
    # the reader closes the pipe at once: every write fails with EPIPE
    for args in (["show", "iris"], ["datasets"], ["predict", "iris.cartjit", "iris.csv"]):
        proc = subprocess.Popen([sys.executable, "-m", "cartjit", *args], cwd=work,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=child_env())
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.wait(timeout=TIMEOUT)
        assert proc.returncode == 141, (args, err)
        # nothing but, on a cold kernel cache, the notice that kernels compile
        assert [line for line in err.splitlines()
                if not line.startswith("cartjit: compiling ")] == [], err
    # and the shell's own pipe into head
    proc = subprocess.run(["bash", "-c", f"'{sys.executable}' -m cartjit show iris | head -1"],
                          cwd=work, capture_output=True, text=True, env=child_env(),
                          timeout=TIMEOUT)
    assert proc.stdout.startswith("iris: ") and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr


# --------------------------------------------------------------------------- signals

#: A child that runs ``main(argv)`` with ``os.fsync`` slowed down: it touches FLAG and
#: sleeps, so that a signal can be sent while the model file is being written.
SLOW_WRITE = textwrap.dedent("""
    import os, sys, time
    flag = sys.argv[1]
    def slow(fd):
        open(flag, "w").close()
        time.sleep(120)
    os.fsync = slow
    from cartjit.__main__ import main
    sys.exit(main(sys.argv[2:]))
""")


def start_slow_write(work, flag, model):
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITE, str(flag), "fit", "iris.csv", "--target",
         "species", "--criterion", "entropy", "-q", "-o", str(model), "--overwrite"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env())


def wait_for(path, proc):
    deadline = time.monotonic() + TIMEOUT
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the child never reached the write"
        time.sleep(0.01)


def test_sigterm_while_the_model_is_written_keeps_the_old_one(work, tmp_path):
    model = work / "victim.cartjit"
    model.write_bytes((work / "iris.cartjit").read_bytes())
    before = model.read_bytes()
    flag = tmp_path / "writing"
    proc = start_slow_write(work, flag, model)
    wait_for(flag, proc)
    assert [n for n in temporaries(work) if n.startswith(".victim.cartjit.")]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert one_line(err, "fit") == ("cartjit fit: terminated (SIGTERM); no file was "
                                     "left half written")
    assert model.read_bytes() == before
    assert temporaries(work) == []


def test_the_next_write_removes_what_a_killed_write_left(work, tmp_path):
    model = work / "killed.cartjit"
    model.write_bytes((work / "iris.cartjit").read_bytes())
    flag = tmp_path / "writing"
    proc = start_slow_write(work, flag, model)
    wait_for(flag, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT)
    left = [n for n in temporaries(work) if n.startswith(".killed.cartjit.")]
    assert len(left) == 1, temporaries(work)  # SIGKILL: no cleanup possible
    proc = cartjit("fit", "iris.csv", "--target", "species", "-q", "-o", model,
                   "--overwrite", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert [n for n in temporaries(work) if n.startswith(".killed.cartjit.")] == []


def test_sigint_half_way_through_a_fit(work, tmp_path):
    data = tmp_path / "slow.csv"
    rng = np.random.default_rng(1)
    X = rng.random((200_000, 8))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(8)])
    frame["y"] = (X[:, 0] + rng.random(len(X)) > 1).astype(int)
    frame.to_csv(data, index=False)
    model = tmp_path / "m.cartjit"
    proc = subprocess.Popen([sys.executable, "-m", "cartjit", "fit", data, "--target", "y",
                             "--cv", "10", "-o", model], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env())
    # wait until the child has imported everything and is fitting: 2 s of CPU
    deadline = time.monotonic() + TIMEOUT
    ticks = os.sysconf("SC_CLK_TCK")
    while True:
        assert proc.poll() is None, "the fit ended before it could be interrupted"
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / ticks >= 2.0:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    assert one_line(err, "fit") == ("cartjit fit: interrupted; no file was left half "
                                     "written")
    assert out == "" and not model.exists()
    assert temporaries(tmp_path) == []


def test_sigterm_during_a_run_keeps_the_finished_cells(tmp_path):
    import json

    (tmp_path / "kill.toml").write_text('[cv]\nV = [2, 3]\nn_repeats = 60\n'
                                        '[[datasets]]\nbundled = "iris_petal"\n')
    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, "-m", "cartjit", "run", "kill.toml", "--out",
                             out, "--workers", "2", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())
    deadline = time.monotonic() + TIMEOUT
    while not ((out / "cells").is_dir() and len(list((out / "cells").glob("*.json"))) >= 5):
        assert proc.poll() is None, "the run ended before it could be terminated"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and "rerun with --resume" in err
    assert json.loads((out / "run.json").read_text())["invocations"][-1]["status"] == \
        "interrupted"
    assert temporaries(out / "cells") == []


# --------------------------------------------------------------------------- settings

@pytest.mark.parametrize("value", ["lots", "-5G"])
@pytest.mark.parametrize("args", [["run", "sweep.toml", "--dry-run"], ["show", "iris"],
                                  ["fit", "iris.csv", "--target", "species", "-o", "x.cartjit"],
                                  ["predict", "iris.cartjit", "iris.csv"]],
                         ids=["run", "show", "fit", "predict"])
def test_a_bad_memory_limit(work, value, args):
    (work / "sweep.toml").write_text('[[datasets]]\nbundled = "iris"\n')
    proc = cartjit(*args, cwd=work, env=child_env(CARTJIT_MEMORY_LIMIT=value))
    assert proc.returncode == 2
    line = one_line(proc, args[0])
    assert f"CARTJIT_MEMORY_LIMIT={value!r} is not a size" in line
    assert "K, M, G or T" in line and "0/none" in line
    assert not (work / "x.cartjit").exists()


@pytest.mark.parametrize("variable, value, allowed", [
    ("CARTJIT_CACHE", "lots", "0 or 1"), ("CARTJIT_PARALLEL", "2", "0 or 1"),
    ("CARTJIT_SIMD", "maybe", "auto, 0 or 1")])
@pytest.mark.parametrize("args", [["show", "iris"],
                                  ["fit", "iris.csv", "--target", "species", "-o", "x.cartjit"]],
                         ids=["show", "fit"])
def test_a_bad_jit_flag(work, variable, value, allowed, args):
    """A CARTJIT_* flag that cannot be read does not fail ``import cartjit`` (which would
    leave the command a traceback): the command refuses in one line."""
    proc = cartjit(*args, cwd=work, env=child_env(**{variable: value}))
    assert proc.returncode == 2
    line = one_line(proc, args[0])
    assert f"environment variable {variable} must be {allowed}, got {value!r}" in line
    assert not (work / "x.cartjit").exists()


def test_a_bad_jit_flag_refuses_every_fit(tmp_path):
    code = ("import cartjit\nfrom cartjit.datasets import load_iris\n"
            "X, y = load_iris(return_X_y=True)\n"
            "try:\n    cartjit.CARTClassifier().fit(X, y)\n"
            "except ValueError as exc:\n    print('refused:', exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=child_env(CARTJIT_PARALLEL="sometimes"),
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert ("refused: environment variable CARTJIT_PARALLEL must be 0 or 1, got "
            "'sometimes'") in proc.stdout


# --------------------------------------------------------------------------- dry runs

def options(start, stop, scale=1):
    return "[" + ", ".join(str(i * scale) for i in range(start, stop)) + "]"


HUGE_TREE = f"""
[tree]
max_depth = {options(0, 100)}
min_samples_leaf = {options(1, 101)}
min_samples_split = {options(2, 102)}
min_impurity_decrease = {options(0, 300, 0.001)}
[[datasets]]
bundled = "iris"
"""


@pytest.mark.parametrize("limit", ["8G", "0"])
def test_a_dry_run_of_three_hundred_million_settings_is_refused_at_once(tmp_path, limit):
    (tmp_path / "huge.toml").write_text(HUGE_TREE)
    t0 = time.perf_counter()
    proc = cartjit("run", "huge.toml", "--dry-run", cwd=tmp_path, timeout=60,
                   env=child_env(CARTJIT_MEMORY_LIMIT=limit))
    assert time.perf_counter() - t0 < 30
    assert proc.returncode == 2
    line = one_line(proc, "run")
    assert "huge.toml: tree: dataset 'iris': 300_000_000 cells" in line
    assert "100 max_depth x 100 min_samples_split x 100 min_samples_leaf x 300 " \
           "min_impurity_decrease" in line
    # without a memory limit the bound on the number of cells refuses it
    assert ("memory limit" in line) if limit != "0" else \
        ("more than the 1_000_000 cells a sweep may have" in line)


def test_a_dry_run_of_a_thousand_synthetic_datasets_generates_none(tmp_path):
    entries = "".join(f'[[datasets]]\nname = "s{i}"\nsynthetic = "classification"\n'
                      f"n_samples = 1000000\n\n" for i in range(1000))
    (tmp_path / "many.toml").write_text(entries)
    t0 = time.perf_counter()
    proc = cartjit("run", "many.toml", "--dry-run", cwd=tmp_path, timeout=60)
    assert time.perf_counter() - t0 < 30
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("many.toml: OK, 1000 cells;")
    # a real run is refused up front: 1000 x 10^6 x 23 values would not fit
    proc = cartjit("run", "many.toml", "--out", "o", cwd=tmp_path, timeout=60,
                   env=child_env(CARTJIT_MEMORY_LIMIT="8G"))
    assert proc.returncode == 2
    assert "the 1_000 synthetic datasets together would need 171.4 GiB" in one_line(
        proc, "run")
    assert not (tmp_path / "o").exists()


def test_the_bound_on_cells_counts_every_dataset(tmp_path, monkeypatch):
    from cartjit.experiments.config import ConfigError, read_config
    from cartjit.experiments.data import MAX_CELLS, count_sweep

    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "0")
    half = MAX_CELLS // 2 + 1  # two datasets of this many repeats: one cell too many
    cfg = tmp_path / "two.toml"
    cfg.write_text(f'[cv]\nV = 2\nn_repeats = {half}\n[[datasets]]\nbundled = "iris"\n'
                   '[[datasets]]\nbundled = "potato_yield"\n')
    with pytest.raises(ConfigError, match=f"the sweep has {2 * half:_} cells up to dataset "
                                          "'potato_yield'") as info:
        count_sweep(read_config(cfg))
    assert info.value.field == "datasets[2]"
    cfg.write_text(f'[cv]\nV = 2\nn_repeats = {half - 1}\n[[datasets]]\nbundled = "iris"\n'
                   '[[datasets]]\nbundled = "potato_yield"\n')
    assert count_sweep(read_config(cfg)) == 2 * (half - 1) <= MAX_CELLS


# --------------------------------------------------------------------------- threads

PREDICT_IN_THREADS = textwrap.dedent("""
    import sys, threading
    import numba
    import numpy as np
    from cartjit import load
    est = load(sys.argv[1])
    X = np.random.default_rng(0).random((50_000, 4)) * 7
    want = est.predict(X)
    bad = []
    def work():
        for _ in range(10):
            if not (est.predict(X) == want).all():
                bad.append(1)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(numba.threading_layer(), len(bad))
""")


def test_predict_from_four_threads_under_the_workqueue_layer(work):
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", PREDICT_IN_THREADS,
                           str(work / "iris.cartjit")], capture_output=True, text=True,
                          env=child_env(NUMBA_THREADING_LAYER="workqueue",
                                        NUMBA_NUM_THREADS="2"), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["workqueue", "0"]


# --------------------------------------------------------------------------- atomic writes

def test_stale_temporaries_are_those_of_writers_that_no_longer_run(tmp_path):
    from cartjit._atomic import remove_stale_temps, replacing

    target = tmp_path / "m.cartjit"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    names = {"dead": f".m.cartjit.{int(dead.stdout)}-0a1b2c3d.tmp",
             "alive": f".m.cartjit.{os.getpid()}-0a1b2c3d.tmp",
             "legacy": ".m.cartjit.k2j_x9q1.tmp",           # an earlier cartjit's name
             "other": ".n.cartjit.1-0a1b2c3d.tmp",          # another target's
             "plain": "m.cartjit.tmp"}
    for name in names.values():
        (tmp_path / name).write_text("part")
    removed = {p.name for p in remove_stale_temps(target)}
    assert removed == {names["dead"], names["legacy"]}
    assert {p.name for p in tmp_path.iterdir()} == {names["alive"], names["other"],
                                                    names["plain"]}

    target.write_text("old")
    with pytest.raises(RuntimeError):
        with replacing(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("stopped half-way")
    assert target.read_text() == "old"
    with replacing(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "new"
    assert {p.name for p in tmp_path.iterdir()} == {"m.cartjit", names["alive"],
                                                    names["other"], names["plain"]}
