"""What the first fit of each kind compiles: functions, wall time and CPU time.

Every measurement runs in a fresh interpreter with a new, empty ``NUMBA_CACHE_DIR``
(the first use after installing). The child counts Numba's ``numba:compile`` events
(one per function compiled: cartjit's kernels and the NumPy helpers Numba compiles for
them, such as ``np.empty`` for each dtype and rank; loading from the cache is no
event) and times each stage; the parent reports the child's wall time and its CPU time
(``resource.getrusage(RUSAGE_CHILDREN)``, user + system), which a busy machine inflates
far less than the wall time, since Numba compiles on one thread.

Stages, each a fresh process: a first fit of one kind alone, and the same kind after a
first numeric classification fit (what a session that starts with iris then pays)::

    python asv_bench/coldstart_counts.py                  # every kind, once
    python asv_bench/coldstart_counts.py --repeat 3       # best and worst of three
    python asv_bench/coldstart_counts.py --kinds numeric categorical_cv --compile
    python asv_bench/coldstart_counts.py --json out.json

``--compile`` adds ``python -m cartjit compile`` from an empty cache. The table is
printed in the Markdown of docs/benchmarks.md, with the CPU model and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD_HEAD = textwrap.dedent("""\
    import json, sys, time
    t_start = time.perf_counter()
    from numba.core import event

    counts = {"cartjit": 0, "other": 0}
    depth = [0]

    class Count(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            module = getattr(getattr(d, "py_func", None), "__module__", "") or ""
            counts["cartjit" if module.startswith("cartjit") else "other"] += 1

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    import numpy as np
    import cartjit
    from cartjit.datasets import load_iris, load_titanic
    stages = []

    def stage(name, fn):
        before = dict(counts)
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        stages.append({"stage": name, "wall_s": time.perf_counter() - t0,
                       "cpu_s": time.process_time() - c0,
                       "cartjit": counts["cartjit"] - before["cartjit"],
                       "other": counts["other"] - before["other"]})

    X, y = load_iris(return_X_y=True)
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    Xm = X.copy()
    Xm[::7, 2] = np.nan
    Xt, yt = load_titanic(return_X_y=True)
    """)

#: the first fit of each kind (what the user types)
KINDS = {
    "numeric": ("numeric classification fit, iris",
                "cartjit.CARTClassifier().fit(X, y)"),
    "numeric_predict": ("numeric classification fit and predict, iris",
                        "cartjit.CARTClassifier().fit(X, y).predict(X)"),
    "regression": ("regression fit, iris (column 0 on the others)",
                   "cartjit.CARTRegressor().fit(X[:, 1:], X[:, 0])"),
    "numeric_cv": ("CARTClassifierCV(cv=10), iris",
                   "cartjit.CARTClassifierCV(cv=10, random_state=0).fit(X, y)"),
    "categorical_cv": ("CARTClassifierCV(cv=10), titanic (categorical)",
                       "cartjit.CARTClassifierCV(cv=10, random_state=0).fit(Xt, yt)"),
    "missing_cv": ("CARTClassifierCV(cv=10), iris with missing values",
                   "cartjit.CARTClassifierCV(cv=10, random_state=0).fit(Xm, y)"),
}


def _child_code(kind, after_numeric):
    code = _CHILD_HEAD
    if after_numeric:
        code += 'stage("numeric first", lambda: cartjit.CARTClassifier().fit(X, y))\n'
    code += f"stage({kind!r}, lambda: {KINDS[kind][1]})\n"
    code += ('print("@@" + json.dumps({"stages": stages, '
             '"total_s": time.perf_counter() - t_start}))\n')
    return code


def _run(argv, env_extra=None):
    """Run argv in a fresh process on an empty cache: (wall s, child CPU s, stdout)."""
    with tempfile.TemporaryDirectory(prefix="cartjit-cold-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, CARTJIT_CACHE="1")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.update(env_extra or {})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def measure_kind(kind, after_numeric):
    wall, cpu, proc = _run([sys.executable, "-c", _child_code(kind, after_numeric)])
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1]
    data = json.loads(line[2:])
    last = data["stages"][-1]
    notices = [ln for ln in proc.stderr.splitlines() if "compiling" in ln]
    return {"kind": kind, "after_numeric": after_numeric, "process_wall_s": wall,
            "process_cpu_s": cpu, "stage_wall_s": last["wall_s"], "stage_cpu_s": last["cpu_s"],
            "functions": last["cartjit"] + last["other"], "cartjit_functions": last["cartjit"],
            "numba_helpers": last["other"], "notices": len(notices)}


def measure_compile():
    wall, cpu, proc = _run([sys.executable, "-m", "cartjit", "compile"])
    return {"kind": "cartjit compile", "process_wall_s": wall, "process_cpu_s": cpu,
            "summary": proc.stdout.strip().splitlines()[-1]}


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def git_head():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=ROOT).stdout.strip()
    except OSError:
        return "?"


def _span(values, fmt="{:.1f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if f"{lo:.1f}" == f"{hi:.1f}" else f"{fmt.format(lo)}–{fmt.format(hi)}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=list(KINDS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--compile", action="store_true", help="also time 'cartjit compile'")
    ap.add_argument("--alone-only", action="store_true",
                    help="skip the runs after a first numeric fit")
    ap.add_argument("--json", help="write every sample here")
    args = ap.parse_args(argv)
    print(f"# {cpu_model()}, {os.cpu_count()} CPUs, load average at start "
          f"{os.getloadavg()[0]:.2f}, git {git_head()}", flush=True)
    samples = []
    for kind in args.kinds:
        for after in ((False,) if args.alone_only or kind == "numeric" else (False, True)):
            for _ in range(args.repeat):
                s = measure_kind(kind, after)
                samples.append(s)
                print("  " + json.dumps(s), file=sys.stderr, flush=True)
    if args.compile:
        for _ in range(args.repeat):
            s = measure_compile()
            samples.append(s)
            print("  " + json.dumps(s), file=sys.stderr, flush=True)
    print("\n| first fit | in the process | functions compiled (cartjit + NumPy helpers) "
          "| stage wall s | stage CPU s | process wall s | process CPU s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for kind in args.kinds:
        for after in (False, True):
            group = [s for s in samples if s.get("kind") == kind and s["after_numeric"] == after]
            if not group:
                continue
            s = group[0]
            print(f"| {KINDS[kind][0]} | {'after a numeric fit' if after else 'first'} "
                  f"| {s['functions']} ({s['cartjit_functions']} + {s['numba_helpers']}) "
                  f"| {_span([g['stage_wall_s'] for g in group])} "
                  f"| {_span([g['stage_cpu_s'] for g in group])} "
                  f"| {_span([g['process_wall_s'] for g in group])} "
                  f"| {_span([g['process_cpu_s'] for g in group])} |")
    group = [s for s in samples if s["kind"] == "cartjit compile"]
    if group:
        print(f"| `cartjit compile` | first | | | "
              f"| {_span([g['process_wall_s'] for g in group])} "
              f"| {_span([g['process_cpu_s'] for g in group])} |")
        print(f"\n{group[0]['summary']}")
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(samples, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
