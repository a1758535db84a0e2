#!/usr/bin/env python
"""Compare cartjit with scikit-learn's decision trees on the same data.

Three reports, each printed as Markdown, headed by the machine (CPU model, cores, load),
the versions of cartjit, scikit-learn, NumPy and Numba, and the exact command:

default        one process: seeded data from :mod:`cartjit.datasets`, then both
               libraries fit the same arrays ``--repeat`` times (interleaved, so that
               a busy machine slows both alike); best fit time, tree size and depth,
               best predict time on the training rows, agreement of the predictions
               on the training rows and on held-out rows of the same draw.
``--memory``   each fit in its own fresh interpreter: the RSS after imports, data
               and warm-up is the baseline; the peak RSS during the fit minus it is
               the fit's memory (Linux: the high-water mark is reset through
               ``/proc/self/clear_refs`` just before the fit; elsewhere psutil polls).
``--coldstart`` ``import`` + first fit (+ first predict) on iris in fresh interpreters:
               cartjit with an empty Numba cache (a new ``NUMBA_CACHE_DIR``), again
               with that cache populated, with ``CARTJIT_CACHE=0``; scikit-learn for
               reference.

Both libraries grow to purity with their defaults (``CARTClassifier(criterion="gini")``
/ ``CARTRegressor()``; ``DecisionTreeClassifier(random_state=0)`` /
``DecisionTreeRegressor(random_state=0)``); ``--criterion``, ``--priors``,
``--min-samples-leaf`` and ``--weights`` change the models as their help says (a twoing
tree is compared with scikit-learn's Gini, which has no twoing; equal priors with its
``class_weight="balanced"``). scikit-learn converts X to float32 in
``fit`` and ``predict``; that copy is part of its times. ``--threads N`` sets
``NUMBA_NUM_THREADS`` (cartjit's kernels and its thread pool) before Numba is imported;
scikit-learn's tree builder is single-threaded whatever the setting.

Examples::

    python asv_bench/peers.py --n 100000
    python asv_bench/peers.py --n 1000000 --task regression --repeat 3 --threads 8
    python asv_bench/peers.py --n 1000000 --memory
    python asv_bench/peers.py --criterion entropy --min-samples-leaf 5 --weights
    python asv_bench/peers.py --coldstart
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

# Environment as given, before this script changes anything (for the command line).
_ENV_AT_START = {k: v for k, v in os.environ.items()
                 if k.startswith(("NUMBA_", "CARTJIT_", "OMP_", "MKL_", "OPENBLAS_"))}


# --------------------------------------------------------------------------- arguments

def _positive_int(text):
    try:
        value = int(float(text)) if "e" in text.lower() else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text):
    return 0 if text.strip() == "0" else _positive_int(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="peers.py",
        description="cartjit against scikit-learn's DecisionTreeClassifier/Regressor on "
                    "the same seeded data; prints Markdown.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=_positive_int, default=100_000,
                   help="training rows (1e5 style accepted)")
    p.add_argument("--features", type=_positive_int, default=20, help="features")
    p.add_argument("--classes", type=_positive_int, default=3,
                   help="classes (classification only)")
    p.add_argument("--task", choices=("classification", "regression"),
                   default="classification")
    p.add_argument("--repeat", type=_positive_int, default=3,
                   help="timed fits / predicts per library (best is reported); "
                        "fresh interpreters per cache mode with --coldstart")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="NUMBA_NUM_THREADS for cartjit (default: Numba's, all cores)")
    p.add_argument("--holdout", type=_non_negative_int, default=50_000,
                   help="rows held out of the same draw for the agreement on new data "
                        "(0: none)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the generator")
    p.add_argument("--memory", action="store_true",
                   help="peak RSS of each fit, each in a fresh interpreter")
    p.add_argument("--coldstart", action="store_true",
                   help="import + first fit on iris in fresh interpreters")
    p.add_argument("--ydf", action="store_true",
                   help="also time YDF's CartLearner (grown to purity: no depth limit, "
                        "min_examples=1, no validation pruning; needs the bench extra)")
    p.add_argument("--criterion", choices=("gini", "entropy", "twoing"), default="gini",
                   help="classification criterion of cartjit; scikit-learn fits twoing "
                        "trees with Gini (it has no twoing)")
    p.add_argument("--priors", choices=("empirical", "equal"), default="empirical",
                   help="cartjit's priors; 'equal' gives scikit-learn "
                        "class_weight='balanced' and YDF class weights N / (J N_j)")
    p.add_argument("--min-samples-leaf", type=_positive_int, default=1,
                   help="min_samples_leaf of both libraries (YDF: min_examples)")
    p.add_argument("--weights", action="store_true",
                   help="integer case weights 1-3 (seeded), the same for every library")
    p.add_argument("--child", choices=("memory-cartjit", "memory-sklearn"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.classes < 2:
        p.error(f"--classes must be >= 2, got {args.classes}")
    if args.task == "regression" and (args.criterion != "gini" or args.priors != "empirical"):
        p.error("--criterion and --priors are classification options")
    _OPTIONS.update(criterion=args.criterion, priors=args.priors,
                    min_samples_leaf=args.min_samples_leaf, weights=args.weights,
                    seed=args.seed)
    return args


#: The model options of the command line (set by parse_args, read by the model makers).
_OPTIONS = {"criterion": "gini", "priors": "empirical", "min_samples_leaf": 1, "weights": False,
            "seed": 0}


def _options_text():
    """The non-default model options, for the report's title."""
    out = []
    if _OPTIONS["criterion"] != "gini":
        out.append(f"criterion={_OPTIONS['criterion']}")
    if _OPTIONS["priors"] != "empirical":
        out.append(f"priors={_OPTIONS['priors']}")
    if _OPTIONS["min_samples_leaf"] != 1:
        out.append(f"min_samples_leaf={_OPTIONS['min_samples_leaf']}")
    if _OPTIONS["weights"]:
        out.append("integer case weights 1-3")
    return (", " + ", ".join(out)) if out else ""


def _case_weights(n):
    """--weights: integer weights 1, 2 or 3 (seeded), else None."""
    if not _OPTIONS["weights"]:
        return None
    import numpy as np

    return np.random.default_rng(_OPTIONS["seed"] + 1).integers(1, 4, n).astype(np.float64)


def _fit(model, X, y):
    """``model.fit`` with the case weights of --weights (every library takes them)."""
    w = _case_weights(X.shape[0])
    return model.fit(X, y) if w is None else model.fit(X, y, sample_weight=w)


# --------------------------------------------------------------------------- machine

def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _mem_total_gib():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def _cartjit_root():
    """The sys.path entry cartjit is imported from (children are pointed at it)."""
    import importlib.util

    spec = importlib.util.find_spec("cartjit")
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


def _git_state(root):
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "cartjit"],
                               capture_output=True, text=True, timeout=10)
        state = commit.stdout.strip()
        if dirty.stdout.strip():
            state += " + uncommitted changes under cartjit/"
        return state
    except (OSError, subprocess.SubprocessError):
        return None


def header(title, argv):
    """Markdown lines: title, machine, versions, command."""
    import numba
    import numpy
    import sklearn

    import cartjit

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "n/a"
    root = _cartjit_root()
    git = _git_state(root)
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(_ENV_AT_START.items()))
    command = shlex.join(["python", *argv])
    lines = [
        f"## {title}",
        "",
        f"- command: `{(env + ' ') if env else ''}{command}`",
        f"- machine: {_cpu_model()}; nproc {affinity} (os.cpu_count {os.cpu_count()}); "
        f"{_mem_total_gib():.1f} GiB RAM; load average {load} (at start); "
        f"{platform.system()} {platform.release()}",
        f"- versions: cartjit {cartjit.__version__} ({root}"
        f"{', git ' + git if git else ''}), scikit-learn {sklearn.__version__}, "
        f"numpy {numpy.__version__}, numba {numba.__version__}, "
        f"python {platform.python_version()}",
        f"- numba threads: {numba.get_num_threads()}"
        f" (NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'unset')}); "
        "scikit-learn's tree fit is single-threaded",
    ]
    return lines


# --------------------------------------------------------------------------- models

def _make_data(task, n, features, classes, seed):
    from cartjit.datasets import make_classification, make_regression

    if task == "classification":
        return make_classification(n, features, classes, random_state=seed)
    return make_regression(n, features, random_state=seed)


def _draw(args):
    """One draw of n + holdout rows (a draw of another size is another problem)."""
    X, y = _make_data(args.task, args.n + args.holdout, args.features, args.classes,
                      args.seed)
    return X[:args.n], y[:args.n], X[args.n:], y[args.n:]


def _cartjit_model(task):
    from cartjit import CARTClassifier, CARTRegressor

    leaf = _OPTIONS["min_samples_leaf"]
    if task == "classification":
        return CARTClassifier(criterion=_OPTIONS["criterion"], priors=_OPTIONS["priors"],
                              min_samples_leaf=leaf)
    return CARTRegressor(min_samples_leaf=leaf)


def _sklearn_model(task):
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    leaf = _OPTIONS["min_samples_leaf"]
    if task == "classification":
        criterion = "entropy" if _OPTIONS["criterion"] == "entropy" else "gini"
        weight = "balanced" if _OPTIONS["priors"] == "equal" else None
        return DecisionTreeClassifier(random_state=0, criterion=criterion,
                                      class_weight=weight, min_samples_leaf=leaf)
    return DecisionTreeRegressor(random_state=0, min_samples_leaf=leaf)


class _YDFTree:
    """YDF's ``CartLearner`` behind ``fit`` / ``predict``, grown as the other two are.

    No depth limit (``max_depth=-1``), ``min_examples=1`` and ``validation_ratio=0``
    (YDF holds out 10 % of the rows to prune by default): the tree is grown to purity on
    every row, as cartjit's and scikit-learn's are. Its threads are NUMBA_NUM_THREADS
    when set (the thread count cartjit gets), else all cores. The columns are handed over
    as a dict of NumPy arrays; that conversion is part of the timed fit and predict.
    """

    def __init__(self, task):
        self.task = task
        self.model = None
        self.classes = None

    def _columns(self, X):
        return {f"x{i}": X[:, i] for i in range(X.shape[1])}

    def fit(self, X, y, sample_weight=None):
        import numpy as np
        import ydf

        threads = os.environ.get("NUMBA_NUM_THREADS")
        data = self._columns(X)
        weights = None
        if self.task == "classification":
            self.classes, data["y"] = np.unique(y, return_inverse=True)
            kind = ydf.Task.CLASSIFICATION
            if _OPTIONS["priors"] == "equal":  # scikit-learn's "balanced" weights
                counts = np.bincount(data["y"])
                balanced = y.shape[0] / (counts.shape[0] * counts)
                sample_weight = balanced[data["y"]] * (1.0 if sample_weight is None
                                                       else sample_weight)
        else:
            data["y"] = y
            kind = ydf.Task.REGRESSION
        if sample_weight is not None:
            data["w"] = np.asarray(sample_weight, dtype=np.float64)
            weights = "w"
        learner = ydf.CartLearner(label="y", task=kind, max_depth=-1,
                                  min_examples=_OPTIONS["min_samples_leaf"],
                                  validation_ratio=0.0, weights=weights,
                                  num_threads=int(threads) if threads else None)
        self.model = learner.train(data, verbose=0)
        return self

    def predict(self, X):
        import numpy as np

        out = np.asarray(self.model.predict(self._columns(X)))
        if self.task != "classification":
            return out
        if out.ndim == 1:  # two classes: the probability of the second
            return self.classes[(out > 0.5).astype(np.int64)]
        return self.classes[np.argmax(out, axis=1)]

    def size(self):
        """Leaves and depth of the tree."""
        stack, leaves, depth = [(self.model.get_tree(0).root, 0)], 0, 0
        while stack:
            node, d = stack.pop()
            depth = max(depth, d)
            if hasattr(node, "neg_child"):
                stack += [(node.neg_child, d + 1), (node.pos_child, d + 1)]
            else:
                leaves += 1
        return leaves, depth


def _ydf_model(task):
    return _YDFTree(task)


#: The warm-up's second fit has at least this many cells, so that cartjit's fit grows on
#: threads there (from 65,536 cells) and compiles that route's launchers untimed too.
WARM_UP_CELLS = 70_000


def _warm_up(task, lib, features, classes):
    """First fits + predict on a tiny problem (300 rows) and on one of
    :data:`WARM_UP_CELLS` cells: JIT compile/cache load of the one-thread and the
    threaded routes, lazy imports. Returns their total time (s)."""
    start = time.perf_counter()
    for rows in (300, max(300, -(-WARM_UP_CELLS // features))):
        X, y = _make_data(task, rows, features, classes, 12345)
        _fit(_MAKERS[lib](task), X, y).predict(X)
    return time.perf_counter() - start


_MAKERS = {"cartjit": _cartjit_model, "sklearn": _sklearn_model, "ydf": _ydf_model}


def _size(model, lib):
    if lib == "ydf":
        return model.size()
    if lib == "cartjit":
        return int(model.tree_.n_leaves), int(model.tree_.max_depth)
    return int(model.get_n_leaves()), int(model.get_depth())


def _agree(task, a, b):
    import numpy as np

    if a.shape[0] == 0:
        return float("nan")
    if task == "classification":
        return float(np.mean(a == b))
    return float(np.mean(np.abs(a - b) <= 1e-9 * np.maximum(1.0, np.abs(b))))


def _score(task, pred, y):
    import numpy as np

    if y.shape[0] == 0:
        return float("nan")
    if task == "classification":
        return float(np.mean(pred == y))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - pred) ** 2)) / ss_tot if ss_tot > 0 else float("nan")


def _fmt_s(t):
    return f"{t:.3f}" if t < 100 else f"{t:.1f}"


def median_of(values):
    """The median of ``values`` (NaN when there are none)."""
    return statistics.median(values) if len(values) else float("nan")


def samples_text(times):
    """Every sample, three decimals, comma-separated (the tables' "(...)" column)."""
    return ", ".join(f"{t:.3f}" for t in times)


def _ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "n/a"


# --------------------------------------------------------------------------- reports

def report_timing(args, argv):
    import cartjit.datasets  # noqa: F401  (imports Numba: not part of the draw's time)

    t0 = time.perf_counter()
    X, y, X_test, y_test = _draw(args)
    t_data = time.perf_counter() - t0
    libs = ("cartjit", "sklearn") + (("ydf",) if args.ydf else ())
    warm = {lib: _warm_up(args.task, lib, args.features, args.classes) for lib in libs}
    make = _MAKERS
    fit_times = {lib: [] for lib in libs}
    models = {}
    for _ in range(args.repeat):
        for lib in libs:  # interleaved: load on the machine hits both alike
            model = make[lib](args.task)
            gc.collect()
            start = time.perf_counter()
            _fit(model, X, y)
            fit_times[lib].append(time.perf_counter() - start)
            models[lib] = model
    pred_times = {lib: [] for lib in libs}
    preds = {}
    for _ in range(args.repeat):
        for lib in libs:
            start = time.perf_counter()
            preds[lib] = models[lib].predict(X)
            pred_times[lib].append(time.perf_counter() - start)
    test_preds = {lib: (models[lib].predict(X_test) if X_test.shape[0] else y_test)
                  for lib in libs}
    size = {lib: _size(models[lib], lib) for lib in libs}
    score_name = "accuracy" if args.task == "classification" else "R^2"
    tol = "" if args.task == "classification" else " (tolerance below)"

    lines = header(f"cartjit vs scikit-learn{' and YDF' if args.ydf else ''}: {args.task}, n={args.n:,}, "
                   f"{args.features} features"
                   + (f", {args.classes} classes" if args.task == "classification" else "")
                   + _options_text(), argv)
    import numba
    lines += [
        f"- numba threading layer: {numba.threading_layer()}",
        f"- data: cartjit.datasets.make_{args.task}(random_state={args.seed}), one draw of "
        f"{args.n + args.holdout:,} rows: the first {args.n:,} train, the last "
        f"{args.holdout:,} are held out; {_fmt_s(t_data)} s to draw",
        f"- untimed warm-up fits+predicts on 300 rows and on {WARM_UP_CELLS:,} cells: cartjit {_fmt_s(warm['cartjit'])} s "
        f"(JIT compile or cache load), scikit-learn {_fmt_s(warm['sklearn'])} s"
        + (f", YDF {_fmt_s(warm['ydf'])} s" if "ydf" in warm else ""),
        "",
    ]
    lines += _timing_table(args, libs, fit_times, pred_times, size, preds, test_preds,
                           y_test, score_name, tol)
    if args.task == "regression":
        lines += ["Tolerance: regression predictions agree when they differ by at most "
                  "1e-9 · max(1, abs(the peer's prediction)).", ""]
    lines += [
        "All fit times (s): " + "; ".join(
            f"{lib} " + ", ".join(_fmt_s(t) for t in fit_times[lib]) for lib in libs),
        "All predict times (s): " + "; ".join(
            f"{lib} " + ", ".join(_fmt_s(t) for t in pred_times[lib]) for lib in libs),
    ]
    return lines


_NAMES = {"cartjit": "cartjit", "sklearn": "scikit-learn", "ydf": "YDF CartLearner"}


def _timing_table(args, libs, fit_times, pred_times, size, preds, test_preds, y_test,
                  score_name, tol):
    """The Markdown table of report_timing: one column per library, then cartjit's ratio
    to each peer."""
    peers = libs[1:]
    best_fit = {lib: min(fit_times[lib]) for lib in libs}
    best_pred = {lib: min(pred_times[lib]) for lib in libs}

    def row(label, cells, ratios=()):
        return "| " + " | ".join([label, *cells, *ratios]) + " |"

    head = row("", [_NAMES[lib] for lib in libs], [f"cartjit / {lib}" for lib in peers])
    out = [head, "|---" + "|---:" * (len(libs) + len(peers)) + "|"]
    out.append(row(f"fit time (s), best of {args.repeat}",
                   [_fmt_s(best_fit[lib]) for lib in libs],
                   [_ratio(best_fit["cartjit"], best_fit[lib]) for lib in peers]))
    out.append(row("leaves", [f"{size[lib][0]:,}" for lib in libs],
                   [_ratio(size["cartjit"][0], size[lib][0]) for lib in peers]))
    out.append(row("depth", [str(size[lib][1]) for lib in libs], ["" for _ in peers]))
    out.append(row(f"predict time on the {args.n:,} training rows (s), best of "
                   f"{args.repeat}", [_fmt_s(best_pred[lib]) for lib in libs],
                   [_ratio(best_pred["cartjit"], best_pred[lib]) for lib in peers]))
    out.append(row(f"prediction agreement with cartjit, training rows{tol}",
                   ["", *(f"{_agree(args.task, preds['cartjit'], preds[lib]):.4f}"
                          for lib in peers)], ["" for _ in peers]))
    out.append(row(f"prediction agreement with cartjit, {args.holdout:,} held-out "
                   f"rows{tol}",
                   ["", *(f"{_agree(args.task, test_preds['cartjit'], test_preds[lib]):.4f}"
                          for lib in peers)], ["" for _ in peers]))
    out.append(row(f"held-out {score_name}",
                   [f"{_score(args.task, test_preds[lib], y_test):.4f}" for lib in libs],
                   ["" for _ in peers]))
    out.append("")
    return out


# ---- memory

# the asv memory benchmark's measurement (this script's folder is on sys.path)
from benchmarks.memory import measure_peak  # noqa: E402


def child_memory(args):
    """Runs in a fresh interpreter: one fit, its memory as JSON on stdout."""
    import resource

    lib = args.child.split("-", 1)[1]
    X, y, _, _ = _draw(args)
    _warm_up(args.task, lib, args.features, args.classes)
    model = (_cartjit_model if lib == "cartjit" else _sklearn_model)(args.task)
    start = time.perf_counter()
    before, peak, method = measure_peak(lambda: _fit(model, X, y))
    elapsed = time.perf_counter() - start
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    maxrss *= 1 if sys.platform == "darwin" else 1024
    print(json.dumps({"lib": lib, "before": before, "peak": peak, "method": method,
                      "process_peak": maxrss, "fit_s": elapsed,
                      "x_bytes": int(X.nbytes), "leaves": _size(model, lib)[0]}))


def _child_argv(args, child):
    argv = [sys.executable, os.path.abspath(__file__), "--child", child,
            "--n", str(args.n), "--features", str(args.features),
            "--classes", str(args.classes), "--task", args.task,
            "--holdout", str(args.holdout), "--seed", str(args.seed),
            "--min-samples-leaf", str(args.min_samples_leaf)]
    if args.task == "classification":
        argv += ["--criterion", args.criterion, "--priors", args.priors]
    if args.weights:
        argv.append("--weights")
    return argv


def _child_env(extra=None):
    env = dict(os.environ)
    root = _cartjit_root()
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def report_memory(args, argv):
    results = {}
    for lib in ("cartjit", "sklearn"):
        proc = subprocess.run(_child_argv(args, f"memory-{lib}"), capture_output=True,
                              text=True, env=_child_env())
        if proc.returncode != 0:
            raise RuntimeError(f"memory child for {lib} failed:\n{proc.stderr}")
        results[lib] = json.loads(proc.stdout.strip().splitlines()[-1])
    mib = 2.0 ** 20
    c, s = results["cartjit"], results["sklearn"]
    inc = {k: r["peak"] - r["before"] for k, r in results.items()}
    lines = header(f"Peak memory of one fit: {args.task}, n={args.n:,}, {args.features} "
                   "features" + (f", {args.classes} classes"
                                 if args.task == "classification" else ""), argv)
    lines += [
        f"- each fit in its own fresh interpreter; baseline = RSS after imports, the data "
        f"({c['x_bytes'] / mib:.1f} MiB of float64 X for {args.n:,} training rows, one draw "
        f"of {args.n + args.holdout:,}) and the warm-up fits (300 rows, {WARM_UP_CELLS:,} "
        f"cells); peak measured by "
        f"{c['method']}",
        "- the scikit-learn child imports cartjit too (the data come from cartjit.datasets)",
        "",
        "| | cartjit | scikit-learn | cartjit / sklearn |",
        "|---|---:|---:|---:|",
        f"| RSS before the fit (MiB) | {c['before'] / mib:.1f} | {s['before'] / mib:.1f} | |",
        f"| peak RSS during the fit (MiB) | {c['peak'] / mib:.1f} | {s['peak'] / mib:.1f} | |",
        f"| **fit's peak increase (MiB)** | {inc['cartjit'] / mib:.1f} | "
        f"{inc['sklearn'] / mib:.1f} | {_ratio(inc['cartjit'], inc['sklearn'])} |",
        f"| whole-process peak, ru_maxrss (MiB) | {c['process_peak'] / mib:.1f} | "
        f"{s['process_peak'] / mib:.1f} | |",
        f"| fit time in the child (s) | {_fmt_s(c['fit_s'])} | {_fmt_s(s['fit_s'])} | |",
        f"| leaves | {c['leaves']:,} | {s['leaves']:,} | |",
    ]
    return lines


# ---- cold start

_COLD_CODE = """\
import json, time
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
{load}
t2 = time.perf_counter()
model = {model}.fit(X, y)
t3 = time.perf_counter()
model.predict(X)
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "data": t2 - t1, "fit": t3 - t2, "predict": t4 - t3}}))
"""


def _cold_code(lib, iris_csv):
    if lib == "cartjit":
        return _COLD_CODE.format(
            imports="import cartjit",
            load="from cartjit.datasets import load_iris\nX, y = load_iris(return_X_y=True)",
            model="cartjit.CARTClassifier()")
    return _COLD_CODE.format(
        imports="import sklearn.tree",
        load=f"import pandas as pd\nframe = pd.read_csv({iris_csv!r})\n"
             "X, y = frame.drop(columns='species'), frame['species']",
        model="sklearn.tree.DecisionTreeClassifier(random_state=0)")


def _run_cold(lib, iris_csv, env):
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _cold_code(lib, iris_csv)],
                          capture_output=True, text=True, env=_child_env(env))
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"cold-start child ({lib}) failed:\n{proc.stderr}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def report_coldstart(args, argv):
    from importlib import resources

    iris_csv = str(resources.files("cartjit.datasets") / "data" / "iris.csv")
    rows = {"cartjit, empty cache (cold)": [], "cartjit, populated cache (warm)": [],
            "cartjit, CARTJIT_CACHE=0 (off)": [], "scikit-learn": []}
    with tempfile.TemporaryDirectory(prefix="cartjit-coldstart-") as tmp:
        for r in range(args.repeat):
            cache = os.path.join(tmp, f"cache-{r}")
            os.makedirs(cache)
            on = {"NUMBA_CACHE_DIR": cache, "CARTJIT_CACHE": "1"}
            rows["cartjit, empty cache (cold)"].append(_run_cold("cartjit", iris_csv, on))
            rows["cartjit, populated cache (warm)"].append(_run_cold("cartjit", iris_csv, on))
            off_dir = os.path.join(tmp, f"off-{r}")
            os.makedirs(off_dir)
            off = {"NUMBA_CACHE_DIR": off_dir, "CARTJIT_CACHE": "0"}
            rows["cartjit, CARTJIT_CACHE=0 (off)"].append(_run_cold("cartjit", iris_csv, off))
            rows["scikit-learn"].append(_run_cold("sklearn", iris_csv, None))

    lines = header("Cold start: import + first fit + first predict on iris, fresh "
                   "interpreters", argv)
    lines += [
        f"- {args.repeat} round(s); each round: a new empty NUMBA_CACHE_DIR (cold), the "
        "same directory again (warm), CARTJIT_CACHE=0 with another empty directory (off), "
        "scikit-learn; medians shown, all wall times listed below",
        "- stage times measured inside the child; wall = the whole subprocess, "
        "interpreter start-up included",
        "",
        "| | import (s) | load iris (s) | first fit (s) | first predict (s) | wall (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    for name, runs in rows.items():
        cells = [_fmt_s(median_of([run[key] for run in runs]))
                 for key in ("import", "data", "fit", "predict", "wall")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("All wall times (s): " + "; ".join(
        f"{name} " + ", ".join(_fmt_s(run["wall"]) for run in runs)
        for name, runs in rows.items()))
    return lines


# --------------------------------------------------------------------------- shared by the peers scripts

def set_numba_threads(threads):
    """``--threads``: set NUMBA_NUM_THREADS, which Numba reads once, when it is first
    imported (nothing before this imports it, and child processes inherit it)."""
    if threads is None:
        return
    if "numba" in sys.modules:
        raise RuntimeError("--threads must be applied before numba is imported")
    os.environ["NUMBA_NUM_THREADS"] = str(threads)


def rscript_records(argv, timeout=7200):
    """Run ``Rscript`` with ``argv`` and read its output lines ``KEY value ...`` into
    {KEY: [value, ...]}; a failed run raises with R's error output."""
    proc = subprocess.run(["Rscript", *argv], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"rpart failed:\n{proc.stderr}")
    out = {}
    for line in proc.stdout.splitlines():
        key, *values = line.split()
        out[key] = values
    return out


def time_fits(make, X, y, repeat):
    """Wall times (s) of ``repeat`` fits of fresh estimators ``make()``, and the last."""
    times, est = [], None
    for _ in range(repeat):
        est = make()
        start = time.perf_counter()
        est.fit(X, y)
        times.append(time.perf_counter() - start)
    return times, est


# --------------------------------------------------------------------------- main

def main(argv=None):
    argv = sys.argv if argv is None else argv
    args = parse_args(argv[1:])
    set_numba_threads(args.threads)
    if args.child:
        child_memory(args)
        return 0
    sections = []
    if args.memory:
        sections.append(report_memory)
    if args.coldstart:
        sections.append(report_coldstart)
    if not sections:
        sections.append(report_timing)
    for i, section in enumerate(sections):
        if i:
            print()
        print("\n".join(section(args, argv)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
