"""The ``cartjit`` command line (also ``python -m cartjit``).

Subcommands:

``cartjit run CONFIG``
    Run the cross-validation sweep described by a TOML file
    (:mod:`cartjit.experiments`), writing the long table, the monograph-layout
    summaries, plots and ``run.json``.
``cartjit show DATASET`` / ``cartjit show FILE --target COL``
    Fit a tree on a bundled dataset or a CSV/Parquet file and print it
    (:func:`cartjit.export.export_text`) with its pruning sequence (or its
    cross-validation table with ``--cv``).
``cartjit compile``
    Compile every kernel ahead (Numba's on-disk cache), saying how long it took.
``cartjit datasets``
    List the bundled datasets.

Exit status: 0 on success, 1 when a run fails (failed cells, or a store that cannot be
written, e.g. a full disk), 2 for a bad config, bad options or bad input, 130 when
interrupted (finished cells are kept: rerun with ``--resume``).
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["main", "build_parser"]

_RUN_EPILOG = """\
examples:
  cartjit run experiments/monograph.toml --out results/monograph
  cartjit run experiments/monograph.toml --out results/monograph --resume
  cartjit run sweep.toml --backend dask --workers 4
  cartjit run sweep.toml --backend dask --scheduler tcp://10.0.0.5:8786

output (in --out):
  results.csv, results.parquet  long table, one row per (cell, k)
  summary.md, summary/*.csv     monograph-layout tables (rows k, columns V)
  plots/*.png                   R^CV against leaves, one line per V (needs matplotlib)
  cells.csv, timings.md         one row per cell; wall times
  run.json, config.toml         versions, config and its hash, times, backend
  cells/*.json                  one file per finished cell (what --resume reuses)
  damaged/                      files --resume found damaged and set aside

The first run after installing compiles the kernels (10-30 s, said on stderr and timed
apart from the cells); 'cartjit compile' does it ahead. The config format is
documented in docs/experiments.md."""


def _int_at_least(low):
    """An argparse type: an integer >= ``low``, with a message saying so."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}")
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value
    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _cv_arg(text):
    if text == "loo":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2 or 'loo', got {text!r}")
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2 or 'loo', got {value}")
    return value


def build_parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="cartjit",
        description="CART classification and regression trees (Breiman et al. 1984) with "
                    "Numba kernels: run cross-validation experiments from TOML configs and "
                    "print fitted trees.",
        epilog="Run 'cartjit COMMAND --help' for the options of a command.")
    parser.add_argument("--version", action="version", version=f"cartjit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run", help="run a cross-validation sweep described by a TOML config",
        description="Run the sweep of CONFIG: every (dataset, V, repeat, tree settings) "
                    "cell is one V-fold cross-validation of the pruning sequence (docs/maths.md §5). "
                    "Each finished cell is saved at once, so an interrupted run loses no "
                    "finished cell and --resume computes only what is missing. Results are "
                    "identical whatever the backend or the number of workers.",
        epilog=_RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("config", metavar="CONFIG", help="the experiment file (TOML)")
    run.add_argument("--out", metavar="DIR",
                     help="output directory (default: results/<CONFIG stem> in the current "
                          "directory); must be empty or absent unless --resume")
    run.add_argument("--backend", choices=("serial", "threads", "dask"), default="threads",
                     help="serial: one cell at a time (each using Numba's threads for its "
                          "folds); threads (default): a pool of threads running whole cells; "
                          "dask: a dask.distributed cluster (needs cartjit[dask])")
    group = run.add_mutually_exclusive_group()
    group.add_argument("--workers", type=_positive_int, metavar="N",
                       help="threads (threads backend) or worker processes of the local Dask "
                            "cluster (dask backend); default: the number of CPUs")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="address of an existing dask.distributed scheduler, e.g. "
                            "tcp://host:8786 (with --backend dask)")
    run.add_argument("--resume", action="store_true",
                     help="complete the run in a non-empty --out: reuse its finished cells "
                          "and compute only the missing ones (refused if the config changed)")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="print nothing but errors (the progress bar is also off when "
                          "stderr is not a terminal or CI is set)")
    run.add_argument("--dry-run", action="store_true",
                     help="check the config and its data, print the number of cells, and "
                          "write nothing")
    run.add_argument("--fsync", action="store_true",
                     help="flush each cell file to the disk (fsync) before counting it done: "
                          "finished cells then survive a power loss too, not only a killed "
                          "process (costs a few ms per cell)")

    show = sub.add_parser(
        "show", help="fit a tree on a bundled dataset or a CSV/Parquet file and print it",
        description="Fit CARTClassifier / CARTRegressor on a bundled dataset, or on a CSV "
                    "or Parquet file with --target COL, and print the tree as indented text "
                    "(split rules, n, class counts or means, node risk R(t); * marks "
                    "leaves), the variable importance and the pruning sequence. String, "
                    "boolean and categorical columns are categorical features, split by "
                    "subsets of their levels. Missing values (empty cells) are allowed: "
                    "surrogate splits route them; rows with a missing target are dropped. "
                    "With --cv the subtree is chosen by cross-validation and the CV table "
                    "is printed.",
        epilog="examples:\n  cartjit show iris\n  cartjit show iris_petal --cv 10 "
               "--selection min\n  cartjit show potato_yield --max-depth 2\n"
               "  cartjit show data.csv --target y --max-depth 3\n  cartjit show play_golf "
               "--criterion entropy",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("dataset", metavar="DATASET",
                      help="a bundled dataset (see 'cartjit datasets'), or the path of a "
                           ".csv or .parquet file (then give --target)")
    show.add_argument("--target", metavar="COL",
                      help="with a file: the column to predict (the others are features)")
    show.add_argument("--task", choices=("classification", "regression"),
                      help="with a file: the kind of tree (default: regression for a "
                           "float target, classification otherwise)")
    show.add_argument("--features", nargs="+", metavar="NAME",
                      help="use only these feature columns")
    show.add_argument("--criterion", help="gini, entropy or twoing (classification; default "
                                          "gini); squared_error (regression)")
    show.add_argument("--max-depth", type=_nonneg_int, metavar="D", help="depth limit")
    show.add_argument("--min-samples-leaf", type=_positive_int, default=1, metavar="N",
                      help="minimum cases in a leaf (default 1)")
    show.add_argument("--alpha", type=float, metavar="A",
                      help="print the pruned subtree T(A) instead of T_max")
    show.add_argument("--cv", type=_cv_arg, metavar="V",
                      help="choose the subtree by V-fold cross-validation (an integer or 'loo')")
    show.add_argument("--selection", default="1se",
                      help="with --cv: 'min', '1se' (default) or a number m (m-SE rule)")
    show.add_argument("--seed", type=_nonneg_int, default=0, help="with --cv: fold seed")
    show.add_argument("--decimals", type=_nonneg_int, default=3, help="decimals (default 3)")
    show.add_argument("--show-alpha", action="store_true",
                      help="print for each split the alpha at which it is pruned")
    show.add_argument("--summary", action="store_true",
                      help="describe every node at length instead (rpart's summary: "
                           "competitor and surrogate splits, improvements, missing counts)")

    sub.add_parser("datasets", help="list the bundled datasets",
                   description="List the bundled datasets with their size and task.")
    sub.add_parser(
        "compile", help="compile every kernel ahead (Numba's on-disk cache)",
        description="Compile every Numba kernel ahead by fitting and cross-validating tiny "
                    "problems of every kind (classification with each criterion, priors, "
                    "costs, case weights, regression), and say how long it took and where "
                    "the cache is. The first fit after installing otherwise compiles them "
                    "(10-30 s); later processes load them from the cache.")
    return parser


def _cmd_run(args):
    from .experiments import ConfigError, RunError, run_experiment

    try:
        result = run_experiment(args.config, args.out, backend=args.backend,
                                workers=args.workers, scheduler=args.scheduler,
                                resume=args.resume, quiet=args.quiet,
                                fsync=args.fsync, dry_run=args.dry_run)
    except ConfigError as exc:
        print(f"cartjit run: error in config {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("cartjit run: error: out of memory; lower the size of the sweep or of its "
              "data (see CARTJIT_MEMORY_LIMIT in docs/experiments.md)", file=sys.stderr)
        return 1
    except RunError as exc:
        print(f"cartjit run: error: {exc}", file=sys.stderr)
        return 2 if exc.option else 1
    except KeyboardInterrupt:
        print("\ncartjit run: interrupted; finished cells are saved: rerun with --resume "
              "to complete the run", file=sys.stderr)
        return 130
    if args.dry_run:
        print(f"{args.config}: OK, {result.n_cells} cells; output would go to {result.out}")
    return 0


def _cmd_show(args):
    import numpy as np

    from .estimators import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
    from .export import export_text

    loaded = _show_data(args)
    if isinstance(loaded, int):
        return loaded
    ds = loaded
    features = list(ds.features)
    if args.features:
        if ds.target in args.features:
            print(f"cartjit show: error: --features: {ds.target!r} is the target column of "
                  f"{args.dataset}; a column cannot be both the target and a feature",
                  file=sys.stderr)
            return 2
        bad = [f for f in args.features if f not in features]
        if bad:
            print(f"cartjit show: error: --features: {bad[0]!r} is not a feature of "
                  f"{args.dataset} ({', '.join(features)})", file=sys.stderr)
            return 2
        features = list(args.features)
    X = ds.frame[features]  # string, bool and category columns are categorical features
    y = ds.frame[ds.target]
    # Missing feature values are routed by surrogate splits; rows with a missing target
    # are dropped by fit, which warns with their number (docs/maths.md §8).
    classification = ds.task == "classification"
    if not classification and y.dtype.kind not in "biuf":
        print(f"cartjit show: error: --task regression needs a numeric target, but "
              f"{ds.target!r} has dtype {y.dtype}", file=sys.stderr)
        return 2
    _announce_compile()
    criterion = args.criterion or ("gini" if classification else "squared_error")
    params = dict(max_depth=args.max_depth, min_samples_leaf=args.min_samples_leaf)
    selection = args.selection
    if selection not in ("min", "1se"):
        try:
            selection = float(selection)
        except ValueError:
            print(f"cartjit show: error: --selection must be 'min', '1se' or a number, got "
                  f"{selection!r}", file=sys.stderr)
            return 2
    try:
        if args.cv is not None:
            cls = CARTClassifierCV if classification else CARTRegressorCV
            est = cls(criterion, cv=args.cv, selection=selection, random_state=args.seed,
                      **params).fit(X, y)
        else:
            cls = CARTClassifier if classification else CARTRegressor
            est = cls(criterion, ccp_alpha=args.alpha, **params).fit(X, y)
    except (TypeError, ValueError) as exc:
        print(f"cartjit show: error: {exc}", file=sys.stderr)
        return 2
    print(f"{ds.name}: {ds.description}")
    shown = [f"{f} (categorical, {len(est.categories_[j])} levels)"
             if est.is_categorical_[j] else f for j, f in enumerate(features)]
    print(f"N = {X.shape[0]}, features: {', '.join(shown)}; target: {ds.target}")
    print()
    if args.summary:
        print(export_text(est, decimals=args.decimals, details=True), end="")
        return 0
    print(export_text(est, decimals=args.decimals, show_alpha=args.show_alpha), end="")
    print()
    importance = est.variable_importance_
    if len(importance):
        total = float(importance.sum())
        print("Variable importance (rpart's, as % of the total): " + ", ".join(
            f"{name} {100 * v / total:.0f}" for name, v in importance.items()))
        print()
    if args.cv is not None:
        table = est.cv_results_.drop(columns=["cv_std"])
        print(f"Pruning sequence with {est.n_folds_}-fold cross-validation "
              f"(selection {args.selection!r}: k = {est.best_index_ + 1}):")
    else:
        table = est.cost_complexity_path()
        note = f"; T(alpha={args.alpha}) printed above" if args.alpha is not None else \
            "; T_max printed above"
        print(f"Pruning sequence (weakest link, docs/maths.md §4){note}:")
    with np.printoptions(precision=args.decimals):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.{max(args.decimals, 4)}g}"))
    return 0


def _show_data(args):
    """The :class:`~cartjit.datasets.Dataset` to show, or an exit status after a message."""
    import os

    from .datasets import Dataset, list_datasets, load_dataset

    def fail(message):
        print(f"cartjit show: error: {message}", file=sys.stderr)
        return 2

    from .experiments.config import format_from_extension

    name = args.dataset
    fmt = format_from_extension(name)
    is_file = fmt is not None or os.sep in name or os.path.exists(name)
    if not is_file:
        if name not in list_datasets():
            return fail(f"DATASET must be a bundled dataset ({', '.join(list_datasets())}) "
                        f"or a .csv/.parquet file, got {name!r}")
        if args.target is not None or args.task is not None:
            return fail(f"--target and --task are for files; the bundled dataset {name!r} "
                        "has its own target")
        return load_dataset(name)
    from .experiments.data import infer_task, read_table, table_problem
    if not os.path.exists(name):
        return fail(f"{name!r}: no such file")
    if fmt is None:
        return fail(f"{name!r}: cannot tell the format from the extension; use a .csv or "
                    ".parquet file")
    if args.target is None:
        return fail(f"{name!r} is a file: give --target COL, the column to predict")
    try:
        frame = read_table(name, fmt)
    except ValueError as exc:
        return fail(str(exc))
    problem = table_problem(frame, name, args.target)
    if problem is not None:
        return fail(f"--target: {problem}" if args.target not in frame.columns else problem)
    task = args.task or infer_task(frame[args.target])
    features = tuple(c for c in frame.columns if c != args.target)
    if not features:
        return fail(f"{name!r} has no feature columns besides the target {args.target!r}")
    return Dataset(name, frame, args.target, features, task, f"{fmt.upper()} file {name}")


def _announce_compile():
    """Say on stderr, once, that the kernels are being compiled (only when they are)."""
    from . import estimators
    from ._cache import notice_once
    assert estimators  # imported for the engine's modules, whose cache is checked
    notice_once(lambda message: print(message, file=sys.stderr, flush=True))


def _cmd_compile(args):
    from .experiments.warmup import cache_state, warm_up

    before = cache_state()
    report = warm_up(announce=lambda m: print(m, file=sys.stderr, flush=True))
    if report.compiled:
        print(f"cartjit compile: compiled {report.n_compiled} kernel signature(s) in "
              f"{report.seconds:.1f} s; cached in {report.cache_dir}")
    else:
        print(f"cartjit compile: every kernel was already compiled (cache {before}); loading "
              f"and checking them took {report.seconds:.1f} s; cache in {report.cache_dir}")
    return 0


def _cmd_datasets(args):
    from .datasets import list_datasets, load_dataset

    for name in list_datasets():
        ds = load_dataset(name)
        print(f"{name:14s} {ds.task:15s} N={len(ds.frame):<5d} p={len(ds.features):<3d} "
              f"{ds.description}")
    return 0


def main(argv=None):
    """Entry point of the ``cartjit`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "run":
        if args.scheduler and args.backend != "dask":
            parser.error("--scheduler needs --backend dask")
        return _cmd_run(args)
    if args.command == "show":
        return _cmd_show(args)
    if args.command == "compile":
        return _cmd_compile(args)
    return _cmd_datasets(args)


if __name__ == "__main__":
    sys.exit(main())
