"""Forests: cartjit against scikit-learn, ranger and YDF, each in a fresh process.

The issue's forest benchmarks (docs/benchmarks.md, "Forests"). The data are
``cartjit.datasets.make_classification(n, 20, 3, random_state=0)`` (classification) and
``make_regression(n, 20, random_state=0)`` (regression): the first ``--train`` rows fit,
the next ``--rows`` rows are predicted. The main process draws them once and writes
them to ``--workdir`` (``.npy`` for Python, raw float64 columns for R), so that every
library reads the same rows. Each (library, task) then runs in its own subprocess:

* **fit** of ``--trees`` trees, m = ``--mtry`` features drawn per node, grown to purity
  (every library's minimum node size 1 and no depth limit), ``--jobs`` threads, one fit
  timed by the library's process (R: ``proc.time`` inside R, so R's start-up and the
  data's reading are not counted);
* **peak memory of the fit**: the process's high-water mark (``VmHWM`` of
  ``/proc/self/status``) after the fit, the mark reset (``clear_refs``) once the data
  are loaded and the library warmed up; ``base`` is the resident size at that reset;
* **stored bytes per node**: what the fitted forest holds per node (cartjit: the flat
  forest's arrays, and the model file; scikit-learn: the pickled forest; ranger:
  ``object.size`` of ``$forest``; YDF: the saved model's directory);
* **predict** ``--rows`` rows, best of ``--repeat``.

Wall and CPU times (every thread of the process; R's ``proc.time``) are both
recorded: on a shared host the CPU times are the steadier ratio.

``--parts importance`` times Breiman's OOB permutation importance: cartjit's fit with
``oob_score=True`` against ``oob_importance=True`` (their difference is the
importance's cost) beside R's ``randomForest`` without and with ``importance=TRUE`` on
the same ``--imp-train`` rows, ``--imp-trees`` trees, m = ``--mtry``. ``--parts big``
fits cartjit alone on ``--big-train`` rows and ``--big-trees`` trees (time and peak
memory). Results print as they come and are appended as JSON lines to ``--log``.

The issue's scale (hours on a shared 2-core host)::

    python asv_bench/peers_forest.py --train 1e5 --trees 500 --rows 1e6 \\
        --imp-train 1e5 --imp-trees 100 --big-train 1e6 --big-trees 100

A quick check::

    python asv_bench/peers_forest.py --train 5000 --trees 20 --rows 20000 \\
        --imp-train 5000 --imp-trees 20 --big-train 20000 --big-trees 5
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np

LIBS = ("cartjit", "scikit-learn", "ranger", "ydf")
TASKS = ("classification", "regression")
PARTS = ("fit", "importance", "big")


# ------------------------------------------------------------------ memory marks
def reset_peak():
    """Reset this process's high-water mark (Linux ``clear_refs`` 5); returns the
    resident size then, in bytes (None where /proc is not there)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return _status("VmRSS")


def peak():
    """This process's resident high-water mark since the last reset, in bytes."""
    return _status("VmHWM")


def _status(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# ------------------------------------------------------------------ data
def write_data(workdir, task, n_train, n_rows, tag):
    """Draw the rows of ``task`` and write them for Python and R; returns the stem."""
    from cartjit.datasets import make_classification, make_regression
    n = n_train + n_rows
    if task == "classification":
        X, y = make_classification(n, 20, 3, random_state=0)
    else:
        X, y = make_regression(n, 20, random_state=0)
    stem = os.path.join(workdir, f"{tag}_{task}_{n_train}_{n_rows}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    np.save(stem + "_Xtr.npy", X[:n_train])
    np.save(stem + "_ytr.npy", y[:n_train])
    np.save(stem + "_Xte.npy", X[n_train:])
    # R reads columns: X transposed in C order is X in Fortran order
    np.ascontiguousarray(X[:n_train].T).tofile(stem + "_Xtr.f64")
    np.ascontiguousarray(X[n_train:].T).tofile(stem + "_Xte.f64")
    np.asarray(y[:n_train], dtype=np.float64).tofile(stem + "_ytr.f64")
    return stem


# ------------------------------------------------------------------ Python workers
def _python_worker(spec):
    """One fit (and prediction) in this fresh process; returns the record."""
    lib, task, stem = spec["lib"], spec["task"], spec["stem"]
    Xtr = np.load(stem + "_Xtr.npy")
    ytr = np.load(stem + "_ytr.npy")
    Xte = np.load(stem + "_Xte.npy") if spec["predict"] else None
    cls = task == "classification"
    trees, m, jobs = spec["trees"], spec["mtry"], spec["jobs"]
    rec = {"lib": lib, "task": task, "part": spec["part"], "train": int(Xtr.shape[0]),
           "trees": trees, "mtry": m, "jobs": jobs}
    if lib == "cartjit":
        import cartjit
        Est = cartjit.RandomForestClassifier if cls else cartjit.RandomForestRegressor
        extra = spec.get("extra", {})
        Est(2, max_features=m, n_jobs=jobs, **extra).fit(Xtr[:300], ytr[:300]).predict(
            Xtr[:10])  # compiled or loaded before the clock starts
        make = lambda: Est(trees, max_features=m, n_jobs=jobs, random_state=0, **extra)
        rec["extra"] = extra
    elif lib == "scikit-learn":
        from sklearn import ensemble as sk
        Est = sk.RandomForestClassifier if cls else sk.RandomForestRegressor
        make = lambda: Est(trees, max_features=m, n_jobs=jobs, random_state=0)
    else:  # ydf
        import ydf
        cols = {f"x{j}": Xtr[:, j].copy() for j in range(Xtr.shape[1])}
        cols["y"] = ytr.astype(np.int64) if cls else ytr
        task_ = ydf.Task.CLASSIFICATION if cls else ydf.Task.REGRESSION
        kw = dict(label="y", task=task_, num_trees=trees, num_candidate_attributes=m,
                  max_depth=-1, min_examples=1, num_threads=jobs,
                  compute_oob_performances=False, random_seed=1)
        small = {k: v[:300] for k, v in cols.items()}
        ydf.RandomForestLearner(**{**kw, "num_trees": 2}).train(small)
        make = None
    rec["base_bytes"] = reset_peak()
    t = time.perf_counter()
    c = time.process_time()
    if lib == "ydf":
        model = ydf.RandomForestLearner(**kw).train(cols)
    else:
        model = make().fit(Xtr, ytr)
    rec["fit_s"] = time.perf_counter() - t
    rec["fit_cpu_s"] = time.process_time() - c
    rec["fit_peak_bytes"] = peak()
    rec.update(_stored(lib, model))
    if Xte is not None:
        if lib == "ydf":
            data = {f"x{j}": Xte[:, j].copy() for j in range(Xte.shape[1])}
            try:  # its fast engine refuses trees of more than 2^16 nodes or so
                model.predict({k: v[:10] for k, v in data.items()}, num_threads=jobs)
                slow = False
            except ValueError as e:
                rec["ydf_engine"] = f"slow ({e})"
                slow = True
            run = lambda: model.predict(data, num_threads=jobs, use_slow_engine=slow)
        else:
            run = lambda: model.predict(Xte)
        times, cpu = [], []
        for _ in range(spec["repeat"]):
            t = time.perf_counter()
            c = time.process_time()
            run()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        rec["predict_rows"] = int(Xte.shape[0])
        rec["predict_s"] = min(times)
        rec["predict_cpu_s"] = min(cpu)
        rec["predict_all_s"] = times
    return rec


def _stored(lib, model):
    """Nodes and stored bytes of a fitted forest."""
    if lib == "cartjit":
        fo = model.forest_
        flat = fo.nbytes  # every array of the flat forest, its routing's included
        import cartjit
        with tempfile.TemporaryDirectory() as d:
            path = cartjit.save(model, os.path.join(d, "forest"))
            size = os.path.getsize(path)
        held = len(pickle.dumps(model, protocol=5))  # the estimator, its trees and all
        return {"nodes": fo.n_nodes, "stored_bytes": flat, "file_bytes": size,
                "pickle_bytes": held}
    if lib == "scikit-learn":
        nodes = sum(e.tree_.node_count for e in model.estimators_)
        return {"nodes": nodes, "stored_bytes": len(pickle.dumps(model, protocol=5))}
    # ydf
    with tempfile.TemporaryDirectory() as d:
        model.save(d)
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d)
                   for f in fs)
    return {"nodes": int(model.num_nodes()), "stored_bytes": size}


# ------------------------------------------------------------------ R workers
_R_COMMON = r"""
args <- commandArgs(trailingOnly = TRUE)
stem <- args[1]; task <- args[2]; trees <- as.integer(args[3]); mtry <- as.integer(args[4])
jobs <- as.integer(args[5]); ntr <- as.integer(args[6]); nte <- as.integer(args[7])
repeats <- as.integer(args[8]); p <- 20L
status <- function(key) {
  l <- grep(paste0("^", key, ":"), readLines("/proc/self/status"), value = TRUE)
  as.numeric(strsplit(trimws(sub(paste0(key, ":"), "", l)), " +")[[1]][1]) * 1024
}
reset_peak <- function() { writeLines("5", "/proc/self/clear_refs"); status("VmRSS") }
readm <- function(f, n) {
  m <- matrix(readBin(f, "double", n * p), nrow = n)
  colnames(m) <- paste0("x", 1:p); m
}
Xtr <- readm(paste0(stem, "_Xtr.f64"), ntr)
y <- readBin(paste0(stem, "_ytr.f64"), "double", ntr)
if (task == "classification") y <- factor(y)
out <- function(...) { v <- list(...); cat(sprintf("%s=%.17g\n", names(v), unlist(v)), sep = "") }
"""

_R_RANGER = _R_COMMON + r"""
suppressMessages(library(ranger))
invisible(ranger(x = Xtr[1:300, ], y = y[1:300], num.trees = 2, mtry = mtry,
                 num.threads = jobs, min.node.size = 1, seed = 1))
base <- reset_peak()
t0 <- proc.time()
rf <- ranger(x = Xtr, y = y, num.trees = trees, mtry = mtry, num.threads = jobs,
             min.node.size = 1, seed = 1, verbose = FALSE)
el <- proc.time() - t0
hw <- status("VmHWM")
nodes <- sum(sapply(rf$forest$child.nodeIDs, function(t) length(t[[1]])))
out(fit_s = el[["elapsed"]], fit_cpu_s = el[["user.self"]] + el[["sys.self"]],
    base_bytes = base, fit_peak_bytes = hw, nodes = nodes,
    stored_bytes = as.numeric(object.size(rf$forest)))
if (nte > 0) {
  Xte <- readm(paste0(stem, "_Xte.f64"), nte)
  best <- Inf; best_cpu <- Inf
  for (r in 1:repeats) {
    t0 <- proc.time()
    pr <- predict(rf, data = Xte, num.threads = jobs)
    el <- proc.time() - t0
    best <- min(best, el[["elapsed"]])
    best_cpu <- min(best_cpu, el[["user.self"]] + el[["sys.self"]])
  }
  out(predict_rows = nte, predict_s = best, predict_cpu_s = best_cpu)
}
"""

_R_RANDOMFOREST = _R_COMMON + r"""
suppressMessages(library(randomForest))
imp <- as.logical(args[9])
set.seed(1)
base <- reset_peak()
t0 <- proc.time()
rf <- randomForest(x = Xtr, y = y, ntree = trees, mtry = mtry, importance = imp)
el <- proc.time() - t0
out(fit_s = el[["elapsed"]], fit_cpu_s = el[["user.self"]] + el[["sys.self"]],
    base_bytes = base, fit_peak_bytes = status("VmHWM"))
"""


def _run_r(code, spec, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as f:
        f.write(code)
        script = f.name
    try:
        argv = ["Rscript", "--vanilla", script, spec["stem"], spec["task"],
                str(spec["trees"]), str(spec["mtry"]), str(spec["jobs"]),
                str(spec["train"]), str(spec["rows"] if spec["predict"] else 0),
                str(spec["repeat"]), *extra]
        res = subprocess.run(argv, capture_output=True, text=True)
    finally:
        os.unlink(script)
    if res.returncode:
        raise RuntimeError(f"Rscript failed ({res.returncode}): {res.stderr[-2000:]}")
    rec = {k: spec[k] for k in ("lib", "task", "part", "train", "trees", "mtry", "jobs")}
    for line in res.stdout.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            rec[k] = float(v)
    return rec


def run_one(spec):
    """The record of one (library, task, part) in a fresh process."""
    if spec["lib"] == "ranger":
        return _run_r(_R_RANGER, spec)
    if spec["lib"] == "randomForest":
        return _run_r(_R_RANDOMFOREST, spec, [str(spec["importance"]).upper()])
    res = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                         capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"worker failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ the runs
def _mib(b):
    return f"{b / 2**20:.0f} MiB" if b else "?"


def _show(rec):
    s = (f"{rec['lib']:>12} {rec['task']:<14} {rec['part']:<10} fit {rec['fit_s']:.2f} s "
         f"(cpu {rec.get('fit_cpu_s', float('nan')):.2f}), peak {_mib(rec.get('fit_peak_bytes'))}"
         f" over base {_mib(rec.get('base_bytes'))}")
    if rec.get("nodes"):
        s += f", {int(rec['nodes'])} nodes, {rec['stored_bytes'] / rec['nodes']:.1f} B/node"
        if rec.get("file_bytes"):
            s += (f" (file {rec['file_bytes'] / rec['nodes']:.1f}, pickled estimator "
                  f"{rec['pickle_bytes'] / rec['nodes']:.1f})")
    if "predict_s" in rec:
        s += (f"; predict {int(rec['predict_rows'])} rows {rec['predict_s']:.3f} s "
              f"(cpu {rec.get('predict_cpu_s', float('nan')):.3f})")
    if rec.get("extra"):
        s += f" {rec['extra']}"
    print(s, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--train", type=float, default=1e5)
    ap.add_argument("--rows", type=float, default=1e6)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--mtry", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="predictions timed (best)")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--imp-train", type=float, default=1e5)
    ap.add_argument("--imp-trees", type=int, default=100)
    ap.add_argument("--big-train", type=float, default=1e6)
    ap.add_argument("--big-trees", type=int, default=100)
    ap.add_argument("--workdir", default=None, help="where the data files go (a temp dir)")
    ap.add_argument("--log", default=None, help="append each record as a JSON line")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_python_worker(json.loads(args.worker))))
        return
    libs = args.libs.split(",")
    tasks = args.tasks.split(",")
    parts = args.parts.split(",")
    for name, given, allowed in (("--libs", libs, LIBS), ("--tasks", tasks, TASKS),
                                 ("--parts", parts, PARTS)):
        bad = [v for v in given if v not in allowed]
        if bad:
            ap.error(f"{name}: {bad} not among {list(allowed)}")
    workdir = args.workdir or tempfile.mkdtemp(prefix="peers_forest_")
    os.makedirs(workdir, exist_ok=True)
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True,
                         text=True).stdout.strip()
    print(f"command: python {' '.join(sys.argv)}")
    print(f"{cpu}; load average {os.getloadavg()}; data in {workdir}", flush=True)
    base = dict(mtry=args.mtry, jobs=args.jobs, repeat=args.repeat)

    def record(spec):
        try:
            rec = run_one(spec)
        except RuntimeError as e:
            print(f"{spec['lib']} {spec['task']} {spec['part']}: {e}", flush=True)
            return None
        rec["load"] = os.getloadavg()[0]
        if rec.get("fit_peak_bytes") and rec.get("base_bytes"):
            rec["fit_extra_bytes"] = rec["fit_peak_bytes"] - rec["base_bytes"]
        _show(rec)
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps(rec) + "\n")
        return rec

    if "fit" in parts:
        n_train, n_rows = int(args.train), int(args.rows)
        for task in tasks:
            stem = write_data(workdir, task, n_train, n_rows, "fit")
            got = {}
            for lib in libs:
                got[lib] = record(dict(base, lib=lib, task=task, part="fit", stem=stem,
                                       trees=args.trees, train=n_train, rows=n_rows,
                                       predict=True))
            _ratios(got)
    if "importance" in parts:
        n_train = int(args.imp_train)
        stem = write_data(workdir, "classification", n_train, 0, "imp")
        spec = dict(base, task="classification", part="importance", stem=stem,
                    trees=args.imp_trees, train=n_train, rows=0, predict=False)
        a = record(dict(spec, lib="cartjit", extra={"oob_score": True}))
        b = record(dict(spec, lib="cartjit", extra={"oob_importance": True}))
        c = record(dict(spec, lib="randomForest", importance=False))
        d = record(dict(spec, lib="randomForest", importance=True))
        if a and b and c and d:
            ours, theirs = b["fit_s"] - a["fit_s"], d["fit_s"] - c["fit_s"]
            print(f"importance adds: cartjit {ours:.2f} s, randomForest {theirs:.2f} s, "
                  f"ratio {ours / theirs:.3f}", flush=True)
    if "big" in parts:
        n_train = int(args.big_train)
        stem = write_data(workdir, "classification", n_train, 0, "big")
        record(dict(base, lib="cartjit", task="classification", part="big", stem=stem,
                    trees=args.big_trees, train=n_train, rows=0, predict=False))


def _ratios(got):
    ours = got.get("cartjit")
    peers = {k: v for k, v in got.items() if k != "cartjit" and v}
    if not ours or not peers:
        return
    for key, what in (("fit_s", "fit"), ("fit_cpu_s", "fit, CPU time"),
                      ("predict_s", "predict"), ("predict_cpu_s", "predict, CPU time"),
                      ("fit_extra_bytes", "fit peak memory over base")):
        if key not in ours or any(key not in v for v in peers.values()):
            continue
        best = min(peers, key=lambda k: peers[k][key])
        print(f"  {what}: cartjit / fastest peer ({best}) = "
              f"{ours[key] / peers[best][key]:.3f}", flush=True)


if __name__ == "__main__":
    main()
