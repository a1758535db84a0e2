"""The experiment runner on a real Dask cluster started from the command line.

A ``dask scheduler`` and two ``dask worker`` processes (one thread each,
``NUMBA_NUM_THREADS=1``, the Numba cache settings of this environment, this checkout's
cartjit on ``PYTHONPATH``) are started as a user would, and ``cartjit run --backend dask
--scheduler ADDR`` runs as a subprocess. Checked: the cells equal the serial backend's
bit for bit, each ran in one of the two worker processes, each dataset reached each
worker once (the cells read the worker's copy, not data sent with them), ``--resume``
computes only what is missing, and a wrong address, a cluster without workers or one
running other cartjit sources are refused, naming ``--scheduler``. Every process is
killed at the end, whatever happened.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from cartjit.experiments import RunError, run_experiment  # noqa: E402
from cartjit.experiments import backends  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90

CONFIG = """
[experiment]
name = "cluster"
[cv]
n_repeats = 3
seed = 5
selection = ["min", "1se"]
[[datasets]]
bundled = "iris_petal"
cv = { V = [3, 5] }
[[datasets]]
bundled = "iris"
cv = { V = [4], n_repeats = 2 }
tree = { criterion = "entropy" }
"""
N_CELLS = 2 * 3 + 2  # iris_petal: 2 V x 3 repeats; iris: 1 V x 2 repeats


def child_env():
    """This checkout's cartjit first on the path; one Numba thread; the cache settings
    (NUMBA_CACHE_DIR, CARTJIT_CACHE) of this environment, so the workers load the
    kernels the client compiled."""
    env = dict(os.environ, CI="1", NUMBA_NUM_THREADS="1")
    env.pop("PYTHONHASHSEED", None)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    return env


class Processes:
    """Processes started in their own process groups, with their output in files."""

    def __init__(self, directory):
        self.directory = directory
        self.procs = {}

    def start(self, name, *args):
        log = open(self.directory / f"{name}.log", "wb")
        self.procs[name] = (subprocess.Popen(
            [sys.executable, "-m", "dask", *args], stdout=log, stderr=subprocess.STDOUT,
            env=child_env(), cwd=self.directory, start_new_session=True), log)

    def logs(self):
        return "\n".join(f"--- {name} (exit status {proc.poll()}):\n"
                         + (self.directory / f"{name}.log").read_text(errors="replace")[-3000:]
                         for name, (proc, _) in self.procs.items())

    def check_running(self, what):
        for name, (proc, _) in self.procs.items():
            if proc.poll() is not None:
                pytest.fail(f"{name} exited while {what}:\n{self.logs()}")

    def stop(self):
        """SIGTERM each group (nanny and worker process), SIGKILL what is left."""
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            for proc, _ in self.procs.values():
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + grace
            for proc, _ in self.procs.values():
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for proc, log in self.procs.values():
            log.close()
            try:  # the whole group is gone, not only its leader
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                continue
            os.killpg(proc.pid, signal.SIGKILL)


def read_scheduler_file(path, procs):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        procs.check_running("starting")
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)
    pytest.fail(f"no scheduler file {path} after {START_TIMEOUT_S} s:\n{procs.logs()}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``(address, scheduler file, {worker address: pid}, address of a scheduler with no
    worker)``; the workers' process ids are asked by a client of the test's own."""
    from distributed import Client

    directory = tmp_path_factory.mktemp("cluster")
    procs = Processes(directory)
    try:
        sfile, lonely_file = directory / "scheduler.json", directory / "lonely.json"
        for name, path in (("scheduler", sfile), ("lonely-scheduler", lonely_file)):
            procs.start(name, "scheduler", "--host", "127.0.0.1", "--port", "0",
                        "--no-dashboard", "--scheduler-file", str(path))
        address = read_scheduler_file(sfile, procs)
        lonely = read_scheduler_file(lonely_file, procs)
        for i in range(2):
            procs.start(f"worker-{i}", "worker", address, "--nthreads", "1",
                        "--no-dashboard", "--name", f"worker-{i}")
        with Client(address, timeout=START_TIMEOUT_S) as client:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                procs.check_running("waiting for the workers")
                try:
                    client.wait_for_workers(2, timeout=1.0)
                    break
                except TimeoutError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"the two workers did not join {address} within "
                                    f"{START_TIMEOUT_S} s:\n{procs.logs()}")
            pids = client.run(os.getpid)
        procs.check_running("the cluster was started")
        yield address, sfile, pids, lonely
        procs.check_running("the tests ran")
    finally:
        procs.stop()


def cli_run(*args, cwd):
    proc = subprocess.Popen([sys.executable, "-m", "cartjit", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=cwd)
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.pid, proc.returncode, err


def cell_results(out):
    """Per cell id: its key and its result without the wall time (the machine's)."""
    cells = {}
    for path in sorted((out / "cells").glob("*.json")):
        doc = json.loads(path.read_text())
        result = dict(doc["result"])
        del result["wall_time_s"]
        cells[doc["cell_id"]] = (doc["key"], result)
    return cells


def table_without_wall_time(out):
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[0].endswith(",wall_time_s")
    return [line.rsplit(",", 1)[0] for line in lines]


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    directory = tmp_path_factory.mktemp("serial")
    cfg = directory / "cluster.toml"
    cfg.write_text(CONFIG)
    run_experiment(cfg, directory / "out", backend="serial", quiet=True)
    return cfg, directory / "out"


def test_a_run_on_the_cluster_equals_the_serial_run(cluster, serial, tmp_path):
    address, _, worker_pids, _ = cluster
    cfg, serial_out = serial
    out = tmp_path / "out"
    pid, status, err = cli_run(str(cfg), "--out", str(out), "--backend", "dask",
                               "--scheduler", address, cwd=tmp_path)
    assert status == 0, err
    assert f"backend dask at {address}" in err

    expected = cell_results(serial_out)
    assert len(expected) == N_CELLS
    assert cell_results(out) == expected  # numbers bit for bit (JSON round-trips floats)
    assert table_without_wall_time(out) == table_without_wall_time(serial_out)
    assert (out / "summary.md").read_text() == (serial_out / "summary.md").read_text()

    meta = json.loads((out / "run.json").read_text())
    inv = meta["invocations"][-1]
    assert inv["scheduler"] == address and inv["computed"] and len(inv["computed"]) == N_CELLS
    record = inv["dask"]
    # every cell ran in one of the two worker processes (their ids asked by our own
    # client), none in the client
    workers = record["workers"]
    assert {a: w["pid"] for a, w in workers.items()} == worker_pids
    assert pid not in worker_pids.values() and os.getpid() not in worker_pids.values()
    assert sum(w["cells"] for w in workers.values()) == N_CELLS
    assert all(w["cells"] >= 1 for w in workers.values()), workers
    assert all(w["nthreads"] == 1 and w["numba_threads"] == 1 for w in workers.values())
    # each dataset was shipped once to each worker, and every cell read its worker's
    # copy: data sent with each cell would not be that copy
    sizes = {"iris_petal": 150 * 2 * 8 + 150 * 8, "iris": 150 * 4 * 8 + 150 * 8}
    assert set(record["datasets"]) == set(sizes)
    for name, d in record["datasets"].items():
        assert d["shipped_to"] == sorted(worker_pids), name
        assert d["bytes"] == sizes[name]
        assert d["cells_reading_the_worker_copy"] == d["cells"] == (6 if name ==
                                                                    "iris_petal" else 2)


def test_resume_on_the_cluster_computes_only_what_is_missing(cluster, serial, tmp_path):
    _, sfile, worker_pids, _ = cluster
    cfg, serial_out = serial
    out = tmp_path / "out"
    status = cli_run(str(cfg), "--out", str(out), "--backend", "dask", "--scheduler-file",
                     str(sfile), "--quiet", cwd=tmp_path)[1]
    assert status == 0
    files = sorted((out / "cells").glob("*.json"))
    removed = files[:3]
    for path in removed:
        path.unlink()
    kept = {p: p.stat().st_mtime_ns for p in files[3:]}

    status, err = cli_run(str(cfg), "--out", str(out), "--backend", "dask",
                          "--scheduler-file", str(sfile), "--resume", cwd=tmp_path)[1:]
    assert status == 0, err
    assert f"{N_CELLS - 3} already done, 3 to compute" in err
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # not recomputed
    inv = json.loads((out / "run.json").read_text())["invocations"][-1]
    assert sorted(inv["computed"]) == sorted(p.stem for p in removed)
    assert sum(w["cells"] for w in inv["dask"]["workers"].values()) == 3
    assert cell_results(out) == cell_results(serial_out)

    # complete: nothing is sent to the cluster at all
    status, err = cli_run(str(cfg), "--out", str(out), "--backend", "dask", "--scheduler",
                          "tcp://127.0.0.1:1", "--resume", cwd=tmp_path)[1:]
    assert status == 0, err
    assert "0 to compute" in err
    assert "dask" not in json.loads((out / "run.json").read_text())["invocations"][-1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_that_is_not_there_is_named(serial, tmp_path, monkeypatch):
    cfg, _ = serial
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_S", 1.0)
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(RunError) as info:
        run_experiment(cfg, tmp_path / "out", backend="dask", scheduler=address,
                       quiet=True, warmup=False)
    assert info.value.option == "--scheduler"
    assert f"cannot connect to a Dask scheduler at '{address}'" in str(info.value)
    assert not (tmp_path / "out").exists()  # nothing left behind


def test_a_scheduler_without_workers_is_refused(cluster, serial, tmp_path, monkeypatch):
    lonely = cluster[3]
    cfg, _ = serial
    monkeypatch.setattr(backends, "WAIT_FOR_WORKERS_S", 1.0)
    with pytest.raises(RunError) as info:
        run_experiment(cfg, tmp_path / "out", backend="dask", scheduler=lonely, quiet=True,
                       warmup=False)
    assert info.value.option == "--scheduler"
    assert f"the Dask scheduler at {lonely} has no worker" in str(info.value)
    assert f"dask worker {lonely} --nthreads 1" in str(info.value)


def test_a_cluster_running_other_cartjit_sources_is_refused(cluster, serial, tmp_path,
                                                             monkeypatch):
    address = cluster[0]
    cfg, _ = serial
    monkeypatch.setattr(backends, "_source_digest", lambda: "not these sources")
    with pytest.raises(RunError) as info:
        run_experiment(cfg, tmp_path / "out", backend="dask", scheduler=address, quiet=True,
                       warmup=False)
    assert info.value.option == "--scheduler"
    assert f"the Dask scheduler at {address} runs other cartjit sources" in str(info.value)


def test_scheduler_file_errors_name_the_option(tmp_path, capsys):
    from cartjit.__main__ import main

    cfg = tmp_path / "c.toml"
    cfg.write_text(CONFIG)
    for path, words in ((tmp_path / "absent.json", "cannot read"),
                        (cfg, "is not a Dask scheduler file")):
        assert main(["run", str(cfg), "--backend", "dask", "--scheduler-file",
                     str(path)]) == 2
        err = capsys.readouterr().err
        assert "--scheduler-file" in err and words in err and str(path) in err
    with pytest.raises(SystemExit):
        main(["run", str(cfg), "--scheduler-file", str(cfg)])
    assert "--scheduler-file needs --backend dask" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
