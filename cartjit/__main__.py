"""The ``cartjit`` command line (also ``python -m cartjit``).

Subcommands:

``cartjit run CONFIG``
    Run the cross-validation sweep described by a TOML file
    (:mod:`cartjit.experiments`), writing the long table, the monograph-layout
    summaries, plots and ``run.json``.
``cartjit show DATASET`` / ``cartjit show FILE --target COL`` / ``cartjit show MODEL``
    Fit a tree on a bundled dataset or a CSV/Parquet file, or read a model file, and
    print it (:func:`cartjit.export.export_text`; ``--rules``, ``--dot``, ``--layout
    rpart``; ``--plot out.png`` draws it) with its pruning sequence (or its
    cross-validation table with ``--cv``).
``cartjit fit DATA --target COL -o MODEL``
    Fit a tree (chosen by cross-validation with ``--cv``; a random forest with
    ``--forest``, bagged trees with ``--bagging``) on a CSV/Parquet file or a bundled
    dataset, print it (a forest: its summary), and save it as a model file
    (:func:`cartjit.save`). ``show`` fits the same way; ``show MODEL --tree K`` prints
    tree K of a forest.
``cartjit predict MODEL DATA``
    Predict the rows of a CSV/Parquet file with a saved model, tree or forest
    (``--proba`` for the class probabilities), to the terminal or to ``-o`` a
    CSV/Parquet file.
``cartjit compile``
    Compile every kernel ahead (Numba's on-disk cache), saying how long it took.
``cartjit datasets``
    List the bundled datasets.

Exit status: 0 on success, 1 when a run fails (failed cells, or a store that cannot be
written, e.g. a full disk), 2 for a bad config, bad options or bad input (a missing file
or column, a damaged model file, an output that exists without ``--overwrite``) and for
an output that cannot be used (no permission, a read-only or full file system, not a
regular file, a failing standard output), 130 when interrupted (finished cells are kept:
rerun with ``--resume``), 143 when terminated (SIGTERM), 141 with nothing printed when
standard output is a closed pipe. Each failure is one line on stderr
(:mod:`cartjit._cli_errors`); files are written atomically (:mod:`cartjit._atomic`).
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
  cartjit run sweep.toml --backend dask --scheduler-file scheduler.json

output (in --out):
  results.csv, results.parquet  long table, one row per (cell, k)
  summary.md, summary/*.csv     monograph-layout tables (rows k, columns V)
  plots/*.png                   R^CV against leaves, one line per V (needs matplotlib)
  cells.csv, timings.md         one row per cell; wall times
  run.json, config.toml         versions, config and its hash, times, backend
  cells/*.json                  one file per finished cell (what --resume reuses)
  damaged/                      files --resume found damaged and set aside

The first run after installing compiles the kernels (up to a minute or two, said on stderr and timed
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


def _add_fit_options(parser, command):
    """The data and tree options shared by ``show`` and ``fit``; the tree options come
    from the table of :mod:`cartjit._cli_options`."""
    from ._cli_options import add_options

    parser.add_argument("--target", metavar="COL",
                        help="with a file: the column to predict (the others are features)")
    parser.add_argument("--task", choices=("classification", "regression"),
                        help="with a file: the kind of tree (default: regression for a "
                             "float target, classification otherwise; said on stderr)")
    parser.add_argument("--features", nargs="+", metavar="NAME",
                        help="use only these feature columns")
    parser.add_argument("--decimals", type=_nonneg_int, default=3,
                        help="decimals (default 3)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--forest", action="store_true",
                      help="fit a random forest (RandomForestClassifier / "
                           "RandomForestRegressor) instead of one tree: its options below "
                           "say 'needs --forest or --bagging' (docs/forests.md)")
    kind.add_argument("--bagging", action="store_true",
                      help="fit Breiman's bagging (BaggedCARTClassifier / "
                           "BaggedCARTRegressor): a forest whose trees search every feature "
                           "at every node")
    where = parser.add_argument_group(
        "where a forest grows", "by default on --n-jobs threads of the local process; or on "
                                "the workers of an existing dask.distributed cluster, the "
                                "same forest bit for bit (needs cartjit[dask]; docs/forests.md)")
    cluster = where.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS",
                         help="with --forest or --bagging: grow the trees on the workers "
                              "of the Dask scheduler at ADDRESS, e.g. tcp://host:8786")
    cluster.add_argument("--scheduler-file", metavar="FILE",
                         help="with --forest or --bagging: the scheduler of the JSON file "
                              "written by 'dask scheduler --scheduler-file FILE'")
    add_options(parser.add_argument_group(
        "tree and forest options", "parameters of the estimators, named after them (and "
                                   "rpart's or randomForest's names); an option not given "
                                   "keeps the estimator's default (docs/experiments.md)"))


def build_parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="cartjit",
        description="CART classification and regression trees (Breiman et al. 1984) with "
                    "Numba kernels: run cross-validation experiments from TOML configs, "
                    "fit trees on CSV/Parquet files and save them as model files, predict "
                    "with them, and print or draw them.",
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
    group.add_argument("--scheduler-file", metavar="FILE",
                       help="the JSON file written by 'dask scheduler --scheduler-file "
                            "FILE': use that scheduler (with --backend dask)")
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
        "show", help="print a tree: fitted on a bundled dataset or a CSV/Parquet file, or "
                     "read from a model file",
        description="Fit CARTClassifier / CARTRegressor on a bundled dataset, or on a CSV "
                    "or Parquet file with --target COL, or read a model file written by "
                    "'cartjit fit' (or cartjit.save), and print the tree as indented text "
                    "(split rules, n, class counts or means, node risk R(t); * marks "
                    "leaves), the variable importance and the pruning sequence. String, "
                    "boolean and categorical columns are categorical features, split by "
                    "subsets of their levels. Missing values (empty cells) are allowed: "
                    "surrogate splits route them; rows with a missing target are dropped. "
                    "With --cv the subtree is chosen by cross-validation and the CV table "
                    "is printed. --rules, --dot and --layout rpart print the tree in other "
                    "forms; --plot draws it.",
        epilog="examples:\n  cartjit show iris\n  cartjit show iris_petal --cv 10 "
               "--selection min\n  cartjit show potato_yield --max-depth 2\n"
               "  cartjit show data.csv --target y --max-depth 3\n  cartjit show play_golf "
               "--criterion entropy\n  cartjit show iris --cp 0.01 --minsplit 20 --priors equal\n"
               "  cartjit show iris --cost '0,1,1;5,0,1;1,1,0'\n"
               "  cartjit show model.cartjit --rules\n"
               "  cartjit show model.cartjit --plot tree.png\n"
               "  cartjit show iris --forest --n-estimators 200 --oob-score\n"
               "  cartjit show forest.cartjit --tree 3",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("dataset", metavar="DATASET",
                      help="a bundled dataset (see 'cartjit datasets'), the path of a "
                           ".csv or .parquet file (then give --target), or a model file")
    _add_fit_options(show, "show")
    show.add_argument("--tree", type=_nonneg_int, metavar="K",
                      help="with a forest: print its tree K (0 to n_estimators - 1) as a "
                           "single tree is printed, instead of the forest's summary")
    show.add_argument("--show-alpha", action="store_true",
                      help="print for each split the alpha at which it is pruned")
    form = show.add_mutually_exclusive_group()
    form.add_argument("--summary", action="store_true",
                      help="describe every node at length instead (rpart's summary: "
                           "competitor and surrogate splits, improvements, missing counts)")
    form.add_argument("--rules", action="store_true",
                      help="print one if/then rule per leaf instead of the tree")
    form.add_argument("--dot", action="store_true",
                      help="print the tree as Graphviz DOT text instead (render it with "
                           "'dot -Tpng')")
    form.add_argument("--layout", choices=("tree", "rpart"), default="tree",
                      help="the text layout: tree (default) or rpart (as R's print.rpart, "
                           "and the pruning table as its printcp)")
    show.add_argument("--plot", metavar="OUT.png",
                      help="also draw the tree into this image file (needs matplotlib)")
    show.add_argument("--overwrite", action="store_true",
                      help="with --plot: replace an existing image")

    fit = sub.add_parser(
        "fit", help="fit a tree or a forest on a CSV/Parquet file and save it as a model file",
        description="Fit CARTClassifier / CARTRegressor (CARTClassifierCV / CARTRegressorCV "
                    "with --cv; a random forest with --forest, bagged trees with --bagging) "
                    "on DATA, print the tree (and the cross-validation table) or the "
                    "forest's summary, and save the fitted estimator to the model file -o: a versioned file "
                    "of arrays and JSON that 'cartjit predict', 'cartjit show' and "
                    "cartjit.load read back without pickle (docs/model-files.md). Features "
                    "are treated as in 'cartjit show'.",
        epilog="examples:\n  cartjit fit data.csv --target y -o model.cartjit\n"
               "  cartjit fit data.parquet --target label --cv 10 --selection 1se "
               "-o model.cartjit\n  cartjit fit iris --cv 10 -o iris.cartjit\n"
               "  cartjit fit data.csv --target y --forest --oob-score -o forest.cartjit\n"
               "  cartjit fit data.csv --target y --bagging --n-estimators 50 "
               "-o bagged.cartjit",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("dataset", metavar="DATA",
                     help="a .csv or .parquet file (give --target), or a bundled dataset")
    _add_fit_options(fit, "fit")
    fit.add_argument("-o", "--output", metavar="MODEL", required=True,
                     help="the model file to write (suffix .cartjit by convention)")
    fit.add_argument("--overwrite", action="store_true",
                     help="replace MODEL if it exists (refused otherwise)")
    fit.add_argument("--layout", choices=("tree", "rpart"), default="tree",
                     help="how to print the tree and its pruning table: tree (default) or "
                          "rpart (as R's print.rpart and printcp)")
    fit.add_argument("--quiet", "-q", action="store_true",
                     help="print nothing but errors")

    predict = sub.add_parser(
        "predict", help="predict the rows of a CSV/Parquet file with a model file",
        description="Read the model file MODEL and predict every row of DATA (a .csv or "
                    ".parquet file holding the model's feature columns, by name; other "
                    "columns, such as the target, are ignored); MODEL may hold a tree or "
                    "a forest. Writes one row per row of DATA: the column 'prediction', and "
                    "with --proba one column 'proba_<class>' per class. Missing values are routed as in fit.",
        epilog="examples:\n  cartjit predict model.cartjit new.csv\n"
               "  cartjit predict model.cartjit new.parquet --proba -o predictions.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    predict.add_argument("model", metavar="MODEL", help="a model file ('cartjit fit -o')")
    predict.add_argument("dataset", metavar="DATA", help="a .csv or .parquet file")
    predict.add_argument("-o", "--output", metavar="OUT",
                         help="write the predictions to this .csv or .parquet file "
                              "(default: print them as CSV)")
    predict.add_argument("--proba", action="store_true",
                         help="add the class probabilities (classification models)")
    predict.add_argument("--overwrite", action="store_true",
                         help="replace OUT if it exists (refused otherwise)")

    sub.add_parser("datasets", help="list the bundled datasets",
                   description="List the bundled datasets with their size and task.")
    sub.add_parser(
        "compile", help="compile every kernel ahead (Numba's on-disk cache)",
        description="Compile every Numba kernel ahead by fitting and cross-validating tiny "
                    "problems of every kind (classification with each criterion, priors, "
                    "costs, case weights, regression), reporting each step that compiled, "
                    "and say how long it took and where the cache is. The first fit of each "
                    "kind otherwise compiles its kernels; later processes load them from "
                    "the cache.")
    return parser


def _cmd_run(args):
    from .experiments import ConfigError, RunError, run_experiment

    if args.scheduler_file is not None:
        from .experiments.backends import BackendError, scheduler_from_file
        try:
            args.scheduler = scheduler_from_file(args.scheduler_file)
        except BackendError as exc:
            return _error("run", exc)
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


def _error(command, message):
    """Print ``cartjit COMMAND: error: MESSAGE`` on one line of stderr; return 2."""
    print(f"cartjit {command}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _fit_from_args(args, command):
    """Fit the estimator the options ask for: ``(estimator, dataset, feature names)``, or
    an exit status after a message."""
    from .estimators import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV

    loaded = _show_data(args, command)
    if isinstance(loaded, int):
        return loaded
    ds = loaded
    features = list(ds.features)
    if args.features:
        if ds.target in args.features:
            return _error(command, f"--features: {ds.target!r} is the target column of "
                                   f"{args.dataset}; a column cannot be both the target "
                                   "and a feature")
        bad = [f for f in args.features if f not in features]
        if bad:
            return _error(command, f"--features: {bad[0]!r} is not a feature of "
                                   f"{args.dataset} ({', '.join(features)})")
        features = list(args.features)
    X = ds.frame[features]  # string, bool and category columns are categorical features
    y = ds.frame[ds.target]
    # Missing feature values are routed by surrogate splits; rows with a missing target
    # are dropped by fit, which warns with their number (docs/maths.md §8).
    classification = ds.task == "classification"
    if not classification and y.dtype.kind not in "biuf":
        return _error(command, f"--task regression needs a numeric target, but "
                               f"{ds.target!r} has dtype {y.dtype}")
    from ._cli_options import (CV, FOREST, TREE, OptionError, estimator_params,
                               option_for_message)
    kind = FOREST if args.forest or args.bagging else CV if "cv" in _given(args) else TREE
    try:
        params = estimator_params(args, ds.task, kind)
        if "class_weight" in params:
            params["class_weight"] = _class_weight_labels(params["class_weight"], y,
                                                          _given(args)["class_weight"])
        if args.bagging and params.get("max_features") is not None:
            raise OptionError(f"{_given(args)['max_features']}: --bagging searches every "
                              "feature at every node; drawing some of them is a random "
                              "forest: give --forest instead")
    except OptionError as exc:
        return _error(command, exc)
    _announce_compile()
    if kind == FOREST:
        from . import ensemble
        cls = getattr(ensemble, ("BaggedCART" if args.bagging else "RandomForest")
                      + ("Classifier" if classification else "Regressor"))
    else:
        cls = {(True, False): CARTClassifier, (True, True): CARTClassifierCV,
               (False, False): CARTRegressor, (False, True): CARTRegressorCV}[
            (classification, kind == CV)]
    scheduler = _scheduler_of(args, command, kind)
    if isinstance(scheduler, int):
        return scheduler
    try:
        est = cls(**params).fit(X, y, **({} if scheduler is None else
                                         {"scheduler": scheduler}))
    except (TypeError, ValueError) as exc:
        return _error(command, option_for_message(args, exc))
    except (ImportError, RuntimeError) as exc:
        from ._dask import ClusterError
        if isinstance(exc, ClusterError):
            return _error(command, f"{_scheduler_flag(args)}: {exc.reason}")
        if isinstance(exc, ImportError) and "cartjit[dask]" in str(exc):
            return _error(command, f"{_scheduler_flag(args)} needs dask.distributed: pip "
                                   "install \"cartjit[dask]\"")
        raise
    return est, ds, features


def _scheduler_flag(args):
    return "--scheduler-file" if args.scheduler_file is not None else "--scheduler"


def _scheduler_of(args, command, kind):
    """The address given by --scheduler or --scheduler-file (None: neither), or an exit
    status after a message."""
    from ._cli_options import FOREST
    if args.scheduler is None and args.scheduler_file is None:
        return None
    if kind != FOREST:
        return _error(command, f"{_scheduler_flag(args)} grows a forest's trees on a Dask "
                               "cluster: it needs --forest or --bagging")
    if args.scheduler_file is None:
        return args.scheduler
    from .experiments.backends import BackendError, scheduler_from_file
    try:
        return scheduler_from_file(args.scheduler_file)
    except BackendError as exc:
        return _error(command, exc)


def _given(args):
    """``{parameter: option as given}`` of the tree options on the command line."""
    from ._cli_options import given
    return given(args)


def _class_weight_labels(weights, y, flag):
    """``--class-weight`` as the estimator takes it: the labels given as text matched to
    the labels of ``y`` (read from a file they may be numbers)."""
    from ._cli_options import OptionError

    if not isinstance(weights, dict):
        return weights
    labels = {str(v): v for v in y.dropna().unique()}
    unknown = [k for k in weights if k not in labels]
    if unknown:
        raise OptionError(f"{flag}: {unknown[0]!r} is not a class of the target (classes: "
                          f"{', '.join(sorted(labels))})")
    return {labels[k]: w for k, w in weights.items()}


def _is_forest(est):
    return hasattr(est, "forest_")


def _cmd_show(args):
    if _is_model_file(args.dataset):
        misplaced = [f"--{name}" for name in ("target", "task", "features")
                     if getattr(args, name) is not None] + list(_given(args).values()) + \
            [f"--{name}" for name in ("forest", "bagging") if getattr(args, name)]
        if misplaced:
            return _error("show", f"{misplaced[0]} is for fitting on data; "
                                  f"{args.dataset!r} is a model file, fitted already")
        est = _load_model(args.dataset, "show")
        if isinstance(est, int):
            return est
        kind = "cross-validated " if hasattr(est, "cv_results_") else ""
        header = [f"{args.dataset}: a {kind}{type(est).__name__} model file",
                  f"features: {_describe_features(est, _feature_names(est))}"]
        return _print_model(est, args, "show", header)
    fitted = _fit_from_args(args, "show")
    if isinstance(fitted, int):
        return fitted
    est, ds, features = fitted
    return _print_model(est, args, "show", _data_header(ds, est, features))


def _print_model(est, args, command, header):
    """Print a single tree (:func:`_print_estimator`), a forest's summary, or with
    ``--tree K`` tree K of a forest as a single tree is printed."""
    if not _is_forest(est):
        if args.tree is not None:
            return _error(command, f"--tree {args.tree} picks a tree of a forest, and this "
                                   f"is a single {type(est).__name__}")
        return _print_estimator(est, args, command, header)
    n_trees = est.n_estimators_
    if args.tree is None:
        asked = [flag for flag, on in (("--rules", args.rules), ("--dot", args.dot),
                                       ("--summary", args.summary),
                                       ("--show-alpha", args.show_alpha),
                                       ("--plot", args.plot is not None),
                                       ("--layout rpart", args.layout == "rpart")) if on]
        if asked:
            return _error(command, f"{asked[0]} prints one tree, and this is a forest of "
                                   f"{n_trees} trees: give --tree K (0 to {n_trees - 1}) too")
        print("\n".join(header))
        print()
        print(_forest_summary(est, args.decimals), end="")
        return 0
    if args.tree >= n_trees:
        return _error(command, f"--tree: the forest has {n_trees} trees, numbered 0 to "
                               f"{n_trees - 1}; got {args.tree}")
    tree = est.estimators_[args.tree]
    return _print_estimator(tree, args, command, header + [
        f"tree {args.tree} of the {n_trees} trees of the {type(est).__name__}"])


def _forest_summary(est, decimals):
    """A forest in a few lines: its trees, its OOB error, its importance table."""
    import numpy as np

    leaves = np.diff(est.forest_.roots) // 2 + 1  # a binary tree of m nodes: (m + 1) / 2
    lines = [f"{type(est).__name__}: {est.n_estimators_} trees of {int(leaves.min())} to "
             f"{int(leaves.max())} leaves (mean {float(leaves.mean()):.1f}); "
             f"{est.max_features_} of the {est.n_features_in_} features drawn at each node; "
             + (f"samples of {est.max_samples_} cases drawn "
                f"{'with' if est.replace else 'without'} replacement" if est.bootstrap
                else "every tree grown on every case")]
    if hasattr(est, "oob_error_"):
        if hasattr(est, "classes_"):
            lines.append(f"OOB error {est.oob_error_:.{max(decimals, 4)}g} (the "
                         f"misclassification cost of docs/forests.md), OOB accuracy "
                         f"{est.oob_score_:.{max(decimals, 4)}g}")
        else:
            lines.append(f"OOB mean squared error {est.oob_error_:.{max(decimals, 4)}g}, "
                         f"OOB R^2 {est.oob_score_:.{max(decimals, 4)}g}")
    else:
        lines.append("OOB error: not computed (fit with --oob-score)")
    oob = "; raw, se, scaled: OOB permutation importance" \
        if hasattr(est, "oob_importances_") else ""
    lines += ["", f"Variable importance (mdi: mean decrease in impurity{oob}):",
              est.importance_table().sort_values("mdi", ascending=False).to_string(
                  float_format=lambda v: f"{v:.{max(decimals, 4)}g}"),
              "", f"'--tree K' prints tree K (0 to {est.n_estimators_ - 1})."]
    return "\n".join(lines) + "\n"


def _data_header(ds, est, features):
    return [f"{ds.name}: {ds.description}",
            f"N = {len(ds.frame)}, features: {_describe_features(est, features)}; "
            f"target: {ds.target}"]


def _describe_features(est, names):
    return ", ".join(f"{f} (categorical, {len(est.categories_[j])} levels)"
                     if est.is_categorical_[j] else str(f) for j, f in enumerate(names))


def _feature_names(est):
    names = getattr(est, "feature_names_in_", None)
    return [f"x{j}" for j in range(est.n_features_in_)] if names is None else list(names)


def _print_estimator(est, args, command, header):
    """Print the tree in the form the options ask for: DOT text or rules alone (ready
    for a pipe), else the ``header`` lines, the tree and (for the tree and rpart
    layouts) its variable importance and pruning table; draw it with ``--plot``."""
    from . import export

    if args.plot is not None:
        status = _plot(est, args, command)
        if status:
            return status
    if args.rules or args.dot:
        name = "export_rules" if args.rules else "export_graphviz"
        writer = getattr(export, name, None)
        if writer is None:
            return _error(command, f"--{'rules' if args.rules else 'dot'} needs "
                                   f"cartjit.export.{name}, which this cartjit lacks")
        print(writer(est, decimals=args.decimals), end="")
        return 0
    print("\n".join(header))
    print()
    if args.summary:
        print(export.export_text(est, decimals=args.decimals, details=True), end="")
        return 0
    export_text = export.export_text
    layout = {"layout": "rpart"} if args.layout == "rpart" else {}  # "tree": the default
    print(export_text(est, decimals=args.decimals, show_alpha=args.show_alpha, **layout),
          end="")
    print()
    importance = est.variable_importance_
    if len(importance):
        total = float(importance.sum())
        print("Variable importance (rpart's, as % of the total): " + ", ".join(
            f"{name} {100 * v / total:.0f}" for name, v in importance.items()))
        print()
    _print_pruning(est, args)
    return 0


def _print_pruning(est, args):
    """The cross-validation table of a CV estimator, else the pruning sequence; rpart's
    printcp table with ``--layout rpart``."""
    import numpy as np

    if args.layout == "rpart":
        from .export import format_cp
        print(format_cp(est), end="")
        return
    if hasattr(est, "cv_results_"):
        table = est.cv_results_.drop(columns=["cv_std"])
        print(f"Pruning sequence with {est.n_folds_}-fold cross-validation "
              f"(selection {est.selection!r}: k = {est.best_k_}):")
    else:
        table = est.cost_complexity_path()
        alpha = est.ccp_alpha
        cp = getattr(est, "cp", None)
        note = f"; T(alpha={alpha}) printed above" if alpha is not None else \
            f"; T(cp={cp}) printed above" if cp is not None else "; T_max printed above"
        print(f"Pruning sequence (weakest link, docs/maths.md §4){note}:")
    with np.printoptions(precision=args.decimals):
        print(table.to_string(index=False,
                              float_format=lambda v: f"{v:.{max(args.decimals, 4)}g}"))


def _plot(est, args, command):
    """Draw the tree into ``args.plot``; an exit status after a message, or None."""
    import os

    target = args.plot
    problem = _output_problem(target, args.overwrite, (".png", ".svg", ".pdf"))
    if problem:
        return _error(command, f"--plot: {problem}")
    try:
        from .plotting import plot_tree
        ax = plot_tree(est)
    except ImportError as exc:
        return _error(command, f"--plot needs matplotlib (pip install matplotlib): {exc}")
    from ._atomic import replacing
    from ._cli_errors import CommandError, describe_os_error
    fmt = os.path.splitext(target)[1].lower().lstrip(".")
    try:
        with replacing(target) as tmp:
            ax.figure.savefig(tmp, bbox_inches="tight", format=fmt)
    except OSError as exc:
        raise CommandError(describe_os_error(exc, f"--plot: cannot write {target!r}")) \
            from None
    print(f"tree drawn into {target}", file=sys.stderr)
    return None


def _output_problem(path, overwrite, suffixes=None):
    """Why ``path`` cannot be written (a message), or None; ``suffixes``: the file name
    endings allowed (None: any)."""
    import os

    suffix = os.path.splitext(path)[1].lower()
    if suffixes is not None and suffix not in suffixes:
        return f"{path!r}: the file name must end with {' or '.join(suffixes)}"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"{path!r}: the directory {directory!r} does not exist"
    if os.path.isdir(path):
        return f"{path!r} is a directory"
    if not os.access(directory, os.W_OK | os.X_OK):
        return (f"{path!r}: the directory {directory!r} is not writable (no permission, "
                "or a read-only file system); choose a directory you may write to")
    if os.path.exists(path) and not os.path.isfile(path):
        return (f"{path!r} is not a regular file (a device, a pipe or a socket); name a "
                "file to write")
    if os.path.exists(path) and not overwrite:
        return f"{path!r} already exists; give --overwrite to replace it"
    return None


def _is_model_file(name):
    """Whether ``name`` names a model file: a ``.cartjit`` path, or an existing file that
    is neither CSV nor Parquet and opens like a zip archive (as model files do)."""
    import os

    from .experiments.config import format_from_extension

    if name.lower().endswith(".cartjit"):
        return True
    if format_from_extension(name) is not None or not os.path.isfile(name):
        return False
    try:
        with open(name, "rb") as fh:
            return fh.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def _load_model(path, command):
    """The estimator of a model file, or an exit status after a message."""
    import os

    from ._modelfile import ModelFileError, load

    if not os.path.exists(path):
        return _error(command, f"{path!r}: no such model file")
    try:
        return load(path)
    except (ModelFileError, OSError, ValueError) as exc:
        return _error(command, exc)


def _cmd_fit(args):
    import os

    if os.path.splitext(args.output)[1].lower() in (".csv", ".parquet"):
        return _error("fit", f"-o: {args.output!r} would be a model file, not a data "
                             "file; name it MODEL.cartjit")
    if (args.forest or args.bagging) and args.layout == "rpart":
        return _error("fit", "--layout rpart prints one tree, and a forest is summarised; "
                             "'cartjit show MODEL --tree K --layout rpart' prints tree K")
    problem = _output_problem(args.output, args.overwrite)
    if problem:
        return _error("fit", f"-o: {problem}")
    fitted = _fit_from_args(args, "fit")
    if isinstance(fitted, int):
        return fitted
    est, ds, features = fitted
    from ._modelfile import save
    from ._cli_errors import CommandError, describe_os_error
    try:
        save(est, args.output, overwrite=args.overwrite)
    except (FileExistsError, FileNotFoundError, IsADirectoryError, ValueError) as exc:
        return _error("fit", f"-o: {exc}")
    except OSError as exc:
        raise CommandError(describe_os_error(exc, f"-o: cannot write {args.output!r}")) \
            from None
    if not args.quiet and _is_forest(est):
        print("\n".join(_data_header(ds, est, features)))
        print()
        print(_forest_summary(est, args.decimals), end="")
        print()
        print(f"saved {type(est).__name__} ({est.n_estimators_} trees, "
              f"{est.forest_.n_nodes} nodes) to {args.output}")
    elif not args.quiet:
        print("\n".join(_data_header(ds, est, features)))
        print()
        from .export import export_text
        layout = {"layout": "rpart"} if args.layout == "rpart" else {}
        print(export_text(est, decimals=args.decimals, **layout), end="")
        print()
        _print_pruning(est, args)
        print()
        print(f"saved {type(est).__name__} ({est.tree_.n_leaves} leaves) to {args.output}")
    return 0


def _cmd_predict(args):
    import os

    import pandas as pd

    from .experiments.config import format_from_extension
    from .experiments.data import read_table

    if args.output is not None:
        problem = _output_problem(args.output, args.overwrite, (".csv", ".parquet"))
        if problem:
            return _error("predict", f"-o: {problem}")
    est = _load_model(args.model, "predict")
    if isinstance(est, int):
        return est
    if args.proba and not hasattr(est, "predict_proba"):
        what = "forest" if _is_forest(est) else "tree"
        return _error("predict", f"--proba: {args.model!r} holds a regression {what}, which "
                                 "has no class probabilities")
    fmt = format_from_extension(args.dataset)
    if not os.path.exists(args.dataset):
        return _error("predict", f"{args.dataset!r}: no such file")
    if fmt is None:
        return _error("predict", f"{args.dataset!r}: cannot tell the format from the "
                                 "extension; use a .csv or .parquet file")
    try:
        frame = read_table(args.dataset, fmt)
    except ValueError as exc:
        return _error("predict", exc)
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        absent = [str(n) for n in names if n not in frame.columns]
        if absent:
            return _error("predict", f"{args.dataset!r} lacks the feature column(s) "
                                     f"{', '.join(map(repr, absent))} of the model")
        X = frame[list(names)]
    elif frame.shape[1] != est.n_features_in_:
        return _error("predict", f"the model was fitted on {est.n_features_in_} unnamed "
                                 f"features; {args.dataset!r} has {frame.shape[1]} columns")
    else:  # a model fitted on a NumPy array: the columns in order, numbers only
        X = frame.to_numpy()
    _announce_compile()
    try:
        if _is_forest(est):  # each warning of the two encodings of X is said once
            out = pd.DataFrame({"prediction": est.predict(X)})
            proba = est.predict_proba(X) if args.proba else None
        else:
            leaves = est.apply(X)  # X encoded and checked once: each warning said once
            out = pd.DataFrame({"prediction": est._predict_leaves(leaves)})
            proba = est._leaf_proba(leaves) if args.proba else None
        if args.proba:
            for j, label in enumerate(est.classes_):
                out[f"proba_{label}"] = proba[:, j]
    except (TypeError, ValueError) as exc:
        return _error("predict", exc)
    if args.output is None:
        out.to_csv(sys.stdout, index=False)
        sys.stdout.flush()
        return 0
    return _write_table(out, args.output, "predict")


def _write_table(frame, path, command):
    """Write ``frame`` to ``path`` (CSV or Parquet by its suffix) atomically."""
    import os

    from ._atomic import replacing
    from ._cli_errors import CommandError, describe_os_error
    suffix = os.path.splitext(path)[1].lower()
    try:
        with replacing(path) as tmp:
            if suffix == ".parquet":
                frame.to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
    except ImportError as exc:
        return _error(command, f"writing Parquet needs pyarrow (pip install pyarrow): {exc}")
    except OSError as exc:
        raise CommandError(describe_os_error(exc, f"-o: cannot write {path!r}")) from None
    print(f"{len(frame)} predictions written to {path}", file=sys.stderr)
    return 0


def _show_data(args, command="show"):
    """The :class:`~cartjit.datasets.Dataset` to fit, or an exit status after a message."""
    import os

    from .datasets import Dataset, list_datasets, load_dataset

    def fail(message):
        return _error(command, message)

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
    if args.task is None and frame[args.target].dtype.kind in "biuf" and \
            not getattr(args, "quiet", False):  # a numeric target: either kind of tree
        print(f"cartjit {command}: note: "
              f"{_task_reason(frame[args.target], args.target, task)}", file=sys.stderr)
    features = tuple(c for c in frame.columns if c != args.target)
    if not features:
        return fail(f"{name!r} has no feature columns besides the target {args.target!r}")
    return Dataset(name, frame, args.target, features, task, f"{fmt.upper()} file {name}")


def _task_reason(column, target, task):
    """Which kind of tree was inferred from the numeric target ``column``, why, and how
    to ask for the other (one line)."""
    import numpy as np

    present = column.dropna()
    n_missing = len(column) - len(present)
    distinct = present.nunique()
    if task == "regression":
        whole = len(present) > 0 and bool(np.all(np.mod(present.to_numpy(), 1) == 0))
        why = f"the target {target!r} holds decimal numbers"
        if whole and n_missing:
            cells = "cell makes" if n_missing == 1 else "cells make"
            why = (f"the target {target!r} is read as decimal numbers: its {distinct} "
                   f"distinct values are whole numbers, but {n_missing} empty {cells} the "
                   "column decimal")
        elif whole:
            why += f" (written as decimals; {distinct} distinct whole values)"
        return (f"a regression tree, because {why}; give --task classification to "
                "classify its values instead")
    kind = "booleans" if column.dtype.kind == "b" else "integers"
    return (f"a classification tree, because the target {target!r} holds {kind} "
            f"({distinct} classes); give --task regression to predict it as a number")


def _announce_compile():
    """Say on stderr, once, that the kernels are being compiled (only when they are)."""
    from . import estimators
    from .engine.cache import notice_once
    assert estimators  # imported for the engine's modules, whose cache is checked
    notice_once(lambda message: print(message, file=sys.stderr, flush=True))


def _cmd_compile(args):
    import time

    from .engine import cache as _cache
    from .experiments.warmup import cache_state, warm_up

    def err(text):
        print(text, file=sys.stderr, flush=True)

    before = cache_state()
    t0 = time.perf_counter()
    done = {"step": None, "count": _cache.compiled_count()}

    def step_done():
        """One line per step that compiled something (none when all is cached)."""
        if done["step"] is None:
            return
        i, n, label = done["step"]
        count = _cache.compiled_count()
        if count > done["count"]:
            err(f"cartjit compile: [{i}/{n}] {label}: {count - done['count']} function(s) "
                f"compiled, {time.perf_counter() - t0:.1f} s elapsed")
        done["count"] = count

    def progress(i, n, label):
        step_done()
        done["step"] = (i, n, label)

    report = warm_up(announce=err, progress=progress)
    step_done()
    if report.compiled:
        print(f"cartjit compile: compiled {report.n_compiled} kernel signature(s) "
              f"({report.n_functions} functions with the NumPy helpers they call) in "
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


def _import_without_collections(command):
    """Import what ``command`` runs on, with the garbage collector off meanwhile.

    Importing Numba, pandas and the runner (or the estimators) builds ~200,000 objects,
    which set off full collections that find nothing to free. The modules and their objects live
    as long as the process: once imported they go to the permanent generation
    (``gc.freeze``), which later full collections do not walk, and the collector is on
    again for what the command itself allocates.

    ``run`` does not import the estimators: the runner fits its cells by the engine's
    steps (:mod:`cartjit._prepare`), and the estimators would import scikit-learn where
    it is installed, about half a second of the monograph sweep's 1.5-2 seconds.
    """
    import gc
    import importlib
    enabled = gc.isenabled()
    gc.disable()
    try:
        _load_numba_without_blas()
        for name in ("pandas",) + (
                ("cartjit.experiments",) if command == "run" else ("cartjit.estimators",)):
            importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _load_numba_without_blas():
    """Load Numba's NumPy implementations without importing scipy.linalg.

    Numba imports them when it loads its first kernel, and on import probes for BLAS by
    importing ``scipy.linalg.cython_blas``, which imports all of scipy.linalg (a tenth
    to a third of a second before the first fit of ``cartjit run``).
    No kernel of cartjit calls BLAS (no ``np.dot``, ``@`` or ``np.linalg`` inside a
    kernel), so the command line process, which runs only cartjit's kernels, makes the
    probe fail at once by marking that module absent for the moment of the import. Numba
    then gives NumPy's inner products (``np.correlate``, ``np.convolve``) plain loops in
    this process only; ``np.dot`` and ``np.linalg`` still import scipy when compiled.
    Nothing happens when that module or Numba's implementations are already loaded.
    """
    blas = "scipy.linalg.cython_blas"
    if blas in sys.modules or "numba.np.arraymath" in sys.modules:
        return
    sys.modules[blas] = None  # `import scipy.linalg.cython_blas` raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    except ImportError:  # no Numba: the import of cartjit will say so
        pass
    finally:
        if sys.modules.get(blas, 0) is None:
            del sys.modules[blas]


def main(argv=None):
    """Entry point of the ``cartjit`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from ._cli_errors import run_guarded
    return run_guarded(args.command, lambda: _dispatch(parser, args))


def _dispatch(parser, args):
    """Run the command of ``args``; its exit status (:mod:`cartjit._cli_errors` turns
    what it raises into one line and a status)."""
    if args.command in ("run", "show", "fit", "predict"):
        _import_without_collections(args.command)
    if args.command == "run":
        for option, value in (("--scheduler", args.scheduler),
                              ("--scheduler-file", args.scheduler_file)):
            if value and args.backend != "dask":
                parser.error(f"{option} needs --backend dask")
        return _cmd_run(args)
    if args.command in ("show", "fit", "predict"):
        command = {"show": _cmd_show, "fit": _cmd_fit, "predict": _cmd_predict}[args.command]
        return command(args)
    if args.command == "compile":
        return _cmd_compile(args)
    return _cmd_datasets(args)


if __name__ == "__main__":
    sys.exit(main())
