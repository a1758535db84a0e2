"""A forest grown on a Dask cluster is the forest grown here (docs/forests.md, "Threads
and clusters").

Two in-process ``LocalCluster``s (one worker of two threads; two workers of one thread)
grow forests with ``fit(..., scheduler=...)``, given the Client or the scheduler's
address. Checked against the local fit, bit for bit: every tree (T(α) and T_max, priors,
class totals), the flat forest, the in-bag bits and feature seeds of the engine's fit,
the α of each tree, the MDI, every OOB figure and the permutation importances; for
classification and regression, categorical and missing values, ``prune="cv"``, and
blocks of one tree. The local fit itself is checked for 1, 2 and 3 threads. Also: the
data reached each worker once and every block read that copy; the partition into
blocks; the errors (no dask, a bad argument, an unreachable scheduler, a scheduler
without workers, another cartjit's sources); Ctrl-C leaves the caller's Client usable
and prints nothing; the command line's ``--scheduler`` and ``--scheduler-file``. One
slow test grows two forests on a cluster of two worker processes, where everything
crosses a process boundary pickled.
"""
from __future__ import annotations

import _thread
import json
import logging
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("distributed", reason="growing a forest on a cluster needs "
                                          "dask.distributed (cartjit[dask])")

from distributed import Client, LocalCluster  # noqa: E402

from cartjit import (BaggedCARTRegressor, RandomForestClassifier,  # noqa: E402
                     RandomForestRegressor, _dask, load)
from cartjit import _prepare as P  # noqa: E402
from cartjit.datasets import load_iris, make_classification, make_regression  # noqa: E402
from cartjit.engine import forest as F  # noqa: E402
from cartjit.engine.tree import Tree  # noqa: E402

from references.forests import categorical_frame, with_holes  # noqa: E402


@pytest.fixture(scope="module")
def clusters():
    """``{name: Client}``: one worker with two threads, two workers with one each."""
    started = []
    try:
        out = {}
        for name, workers, threads in (("1x2", 1, 2), ("2x1", 2, 1)):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=threads,
                                   processes=False, dashboard_address=":0",
                                   silence_logs=logging.ERROR)
            client = Client(cluster, set_as_default=False)
            started.append((client, cluster))
            out[name] = client
        yield out
    finally:
        for client, cluster in started:
            client.close()
            cluster.close()


def _cls():
    return make_classification(160, n_features=5, n_classes=3, n_informative=3,
                               random_state=1)


def _reg_holes():
    X, y = make_regression(150, n_features=4, n_informative=3, random_state=2)
    return with_holes(X, 0.1, random_state=3), y


CASES = {
    "classification": (RandomForestClassifier, _cls,
                       dict(n_estimators=9, max_features=2, oob_score=True,
                            oob_importance=True, random_state=4)),
    "categorical": (RandomForestClassifier, categorical_frame,
                    dict(n_estimators=5, oob_score=True, voting="vote", cp=0.01,
                         random_state=5)),
    "regression-missing": (RandomForestRegressor, _reg_holes,
                           dict(n_estimators=7, oob_score=True, oob_importance=True,
                                random_state=6)),
    "prune-cv": (BaggedCARTRegressor, _reg_holes,
                 dict(n_estimators=3, prune="cv", prune_folds=3, oob_score=True,
                      random_state=7)),
}


def same_tree(a, b, what):
    for name in Tree._fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, (what, name)
        np.testing.assert_array_equal(x, y, err_msg=f"{what}: {name}")


def same_forest(a, b):
    """Every fitted array of ``a`` and ``b`` equal, bit for bit."""
    for name in ("feature", "threshold", "left", "value", "roots"):
        np.testing.assert_array_equal(getattr(a.forest_, name), getattr(b.forest_, name),
                                      err_msg=name)
    for name, x in a.forest_.routing._asdict().items():
        np.testing.assert_array_equal(x, getattr(b.forest_.routing, name), err_msg=name)
    assert len(a._trees) == len(b._trees)
    for k, (s, t) in enumerate(zip(a._trees, b._trees)):
        same_tree(s.tree, t.tree, f"tree {k}")
        same_tree(s.tree_max, t.tree_max, f"T_max of tree {k}")
        for name in ("priors", "class_totals"):
            x, y = getattr(s, name), getattr(t, name)
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=f"tree {k}: {name}")
        assert s.alpha == t.alpha
    fitted = sorted(n for n in vars(a) if n.endswith("_") and not n.startswith("_")
                    and n not in ("forest_", "cluster_"))
    assert fitted == sorted(n for n in vars(b) if n.endswith("_") and not n.startswith("_")
                            and n not in ("forest_", "cluster_"))
    for name in fitted:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name)
        elif isinstance(x, float):
            assert x == y or (np.isnan(x) and np.isnan(y)), name
    np.testing.assert_array_equal(a.feature_importances_, b.feature_importances_)
    for name in ("oob_score_", "oob_error_", "oob_importances_"):
        assert hasattr(a, name) == hasattr(b, name)


@pytest.fixture(scope="module")
def local_fits():
    """Each case fitted here on one thread, with the data."""
    out = {}
    for name, (cls, data, params) in CASES.items():
        X, y = data()
        with _quiet():
            out[name] = (cls(**params, n_jobs=1).fit(X, y), X, y)
    return out


class _quiet:
    """Hide the warning a few cases give (a case in the bag of every tree)."""

    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", UserWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


@pytest.mark.parametrize("case", sorted(CASES))
def test_any_number_of_threads_grows_the_same_forest(local_fits, case):
    cls, _, params = CASES[case]
    one, X, y = local_fits[case]
    for n_jobs in (2, 3):
        with _quiet():
            same_forest(one, cls(**params, n_jobs=n_jobs).fit(X, y))


@pytest.mark.parametrize("layout", ["1x2", "2x1"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cluster_grows_the_local_forest(clusters, local_fits, case, layout):
    cls, _, params = CASES[case]
    local, X, y = local_fits[case]
    client = clusters[layout]
    with _quiet():
        remote = cls(**params).fit(X, y, scheduler=client)
    same_forest(local, remote)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))
    if case == "classification":  # proximities: from the end nodes and the in-bag counts
        np.testing.assert_array_equal(remote.proximity(X), local.proximity(X))
    assert client.status == "running"  # the caller's client is left open

    record = remote.cluster_
    workers = sorted(client.scheduler_info()["workers"])
    assert sorted(record["workers"]) == workers
    # the data reached every worker once, and every block read its worker's copy
    assert record["shipped_to"] == workers
    assert record["blocks_reading_the_worker_copy"] == record["blocks"]
    assert sum(w["trees"] for w in record["workers"].values()) == params["n_estimators"]
    assert record["blocks"] == min(params["n_estimators"], _dask.BLOCKS_PER_THREAD * 2)


def test_the_engine_s_fit_on_a_cluster_equals_its_local_fit(clusters):
    """The in-bag bits, feature seeds and per-tree MDI of the engine's ForestFit, for a
    forest of more trees than blocks and one of fewer (blocks of one tree)."""
    X, y = _cls()
    for n_estimators in (11, 2):
        est = RandomForestClassifier(n_estimators, max_features=3, random_state=8)
        bootstrap, replace, voting = est._check_forest_params()
        prep = P.prepare(est, X, y, None)
        plan, _ = est._plan(*prep.problem.X.shape, bootstrap, replace, voting, prep)
        local = F.grow_forest(prep.problem, prep.settings, plan, 1)
        for client in clusters.values():
            remote, record = _dask.grow_forest_on(client, prep.problem, prep.settings,
                                                  plan)
            for name in ("inbag", "feature_seeds", "importance"):
                a, b = getattr(local, name), getattr(remote, name)
                assert a.dtype == b.dtype and a.shape == b.shape, name
                np.testing.assert_array_equal(a, b, err_msg=name)
            # the in-bag bits are each tree's bootstrap sample, drawn again from its seed
            for b in range(n_estimators):
                counts = F.draw_counts(plan, X.shape[0], b)[0]
                bits = np.unpackbits(remote.inbag[b], bitorder="little")[:X.shape[0]]
                np.testing.assert_array_equal(bits, counts > 0)


def test_the_blocks_are_contiguous_and_even():
    for n_trees in (1, 3, 7, 8, 100, 1001):
        for slots in (1, 2, 3, 16):
            spans = _dask.blocks(n_trees, slots)
            assert spans[0][0] == 0 and spans[-1][1] == n_trees
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous
            sizes = [stop - start for start, stop in spans]
            assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1
            assert len(spans) == min(n_trees, _dask.BLOCKS_PER_THREAD * slots)


# ------------------------------------------------------------------------------ errors

@pytest.fixture
def iris():
    return load_iris(return_X_y=True)


def test_without_dask_the_error_names_the_extra(iris, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    with pytest.raises(ImportError, match=r'needs dask.distributed: pip install '
                                          r'"cartjit\[dask\]"'):
        RandomForestClassifier(2).fit(*iris, scheduler="tcp://127.0.0.1:8786")


@pytest.mark.parametrize("scheduler, error, match", [
    (8786, TypeError, "scheduler must be None, the address of a Dask scheduler"),
    ("  ", ValueError, "got an empty string"),
])
def test_a_bad_scheduler_is_named(iris, scheduler, error, match):
    with pytest.raises(error, match=match):
        RandomForestClassifier(2).fit(*iris, scheduler=scheduler)


def test_a_closed_client_is_refused(iris):
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0",
                                   silence_logs=logging.ERROR) as cluster:
        client = Client(cluster, set_as_default=False)
        client.close()
    with pytest.raises(ValueError, match="the Client given is closed, not running"):
        RandomForestClassifier(2).fit(*iris, scheduler=client)


def test_an_unreachable_scheduler_is_named(iris, monkeypatch):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(_dask, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(_dask.ClusterError,
                       match=f"scheduler: cannot connect to a Dask scheduler at "
                             f"'{address}'"):
        RandomForestClassifier(2).fit(*iris, scheduler=address)


def test_a_scheduler_without_workers_is_refused(iris, monkeypatch):
    monkeypatch.setattr(_dask, "WAIT_FOR_WORKERS_S", 0.5)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0",
                                   silence_logs=logging.ERROR) as cluster:
        address = cluster.scheduler_address
        with pytest.raises(_dask.ClusterError, match=f"scheduler: the Dask scheduler at "
                                                     f"{address} has no worker"):
            RandomForestClassifier(2).fit(*iris, scheduler=address)


def test_a_cluster_running_other_sources_is_refused(clusters, iris, monkeypatch):
    """The client's digest (the main thread) against the cluster's processes' (here
    threads of this process, as the workers are in-process): made to differ."""
    real = _dask.source_digest

    def digest():
        if threading.current_thread() is threading.main_thread():
            return real()
        return "other sources"

    monkeypatch.setattr(_dask, "source_digest", digest)
    with pytest.raises(_dask.ClusterError, match="runs other cartjit sources"):
        RandomForestClassifier(2).fit(*iris, scheduler=clusters["2x1"])


# ------------------------------------------------------------------------------ Ctrl-C

#: The held blocks of the Ctrl-C tests (module-level: the tasks are pickled by reference).
_STARTED, _RELEASE = threading.Event(), threading.Event()


def _held_block(*args):
    """A block that waits (at most 60 s) until released, then grows its trees."""
    _STARTED.set()
    _RELEASE.wait(60)
    return _GROW_BLOCK(*args)


_GROW_BLOCK = _dask._grow_block


def _hold_blocks(monkeypatch):
    """Blocks held until released: ``(started, release)``."""
    _STARTED.clear()
    _RELEASE.clear()
    monkeypatch.setattr(_dask, "_grow_block", _held_block)
    return _STARTED, _RELEASE


def _interrupt_when(started):
    def go():
        if started.wait(60):
            _thread.interrupt_main()  # Ctrl-C: SIGINT's KeyboardInterrupt in the main thread
    threading.Thread(target=go, daemon=True).start()


def test_ctrl_c_leaves_the_caller_s_client_usable(clusters, iris, monkeypatch, capfd):
    client = clusters["2x1"]
    started, release = _hold_blocks(monkeypatch)
    _interrupt_when(started)
    try:
        with pytest.raises(KeyboardInterrupt):
            RandomForestClassifier(20).fit(*iris, scheduler=client)
    finally:
        release.set()
    assert client.status == "running"
    assert client.submit(sum, [1, 2]).result() == 3  # still usable
    monkeypatch.undo()
    again = RandomForestClassifier(3, random_state=1).fit(*iris, scheduler=client)
    assert again.cluster_["blocks"] == 3
    assert "Traceback" not in capfd.readouterr().err


def test_ctrl_c_on_the_command_line_is_one_line(clusters, tmp_path, monkeypatch, capfd):
    from cartjit.__main__ import main

    address = clusters["2x1"].scheduler.address
    started, release = _hold_blocks(monkeypatch)
    _interrupt_when(started)
    try:
        status = main(["fit", "iris", "--forest", "--n-estimators", "20", "--scheduler",
                       address, "-o", str(tmp_path / "f.cartjit")])
    finally:
        release.set()
    err = capfd.readouterr().err
    assert status == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "cartjit fit: interrupted; no file was left half written", err
    assert "Traceback" not in err and not (tmp_path / "f.cartjit").exists()


# ------------------------------------------------------------------------ command line

def test_the_command_line_grows_the_local_forest_on_a_cluster(clusters, tmp_path, capfd):
    from cartjit.__main__ import main

    address = clusters["2x1"].scheduler.address
    sfile = tmp_path / "scheduler.json"
    sfile.write_text(json.dumps({"address": address}))
    args = ["fit", "iris", "--forest", "--n-estimators", "6", "--oob-score", "-q"]
    assert main([*args, "-o", str(tmp_path / "here.cartjit")]) == 0
    assert main([*args, "--scheduler", address, "-o", str(tmp_path / "a.cartjit")]) == 0
    assert main([*args, "--scheduler-file", str(sfile), "-o",
                 str(tmp_path / "f.cartjit")]) == 0
    here = load(tmp_path / "here.cartjit")
    for name in ("a", "f"):
        there = load(tmp_path / f"{name}.cartjit")
        for field in ("feature", "threshold", "left", "value", "roots"):
            np.testing.assert_array_equal(getattr(here.forest_, field),
                                          getattr(there.forest_, field))
        assert there.oob_score_ == here.oob_score_
    capfd.readouterr()

    assert main(["fit", "iris", "--scheduler", address, "-o",
                 str(tmp_path / "t.cartjit")]) == 2
    assert "--scheduler grows a forest's trees on a Dask cluster: it needs --forest or " \
           "--bagging" in capfd.readouterr().err
    assert main(["fit", "iris", "--forest", "--scheduler-file", str(tmp_path / "no.json"),
                 "-o", str(tmp_path / "t.cartjit")]) == 2
    assert "--scheduler-file: cannot read" in capfd.readouterr().err
    assert not (tmp_path / "t.cartjit").exists()


# ------------------------------------------------------------- worker processes

@pytest.mark.slow
def test_worker_processes_grow_the_local_forest(local_fits):
    """Two worker processes (``NUMBA_NUM_THREADS=1``, this checkout first on their path):
    the problem, the presorts and the trees cross process boundaries, pickled, and the
    forest is still the local one bit for bit."""
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR,
                      env={"NUMBA_NUM_THREADS": "1", "PYTHONPATH": path}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        for case in ("classification", "regression-missing"):
            cls, _, params = CASES[case]
            local, X, y = local_fits[case]
            with _quiet():
                remote = cls(**params).fit(X, y, scheduler=cluster.scheduler_address)
            same_forest(local, remote)
            pids = {w["pid"] for w in remote.cluster_["workers"].values()}
            assert len(pids) == 2 and os.getpid() not in pids
            assert remote.cluster_["blocks_reading_the_worker_copy"] == \
                remote.cluster_["blocks"]
        assert client.status == "running"
