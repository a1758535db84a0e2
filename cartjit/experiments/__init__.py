"""The experiment runner: ``cartjit run CONFIG``, as a pipeline of small modules.

=================  ========================================================================
``config``         the TOML schema, its defaults and its checks (:func:`read_config`)
``data``           loading each dataset and the checks that need the data (:func:`resolve`)
``cells``          the plan of cells, their seeds, one cell's computation and its warnings
``backends``       where cells run: ``serial``, ``threads``, ``dask``
``store``          the output layout, atomic writes, the sealed cell files, the lock
``reports``        the long table, the summaries, plots and timings
``warmup``         compiling the kernels ahead (``cartjit compile``, the run's warm-up)
``run``            the orchestration: :func:`run_experiment`
``methods``        a methods study's estimators: resolved by name, checked, one method cell
``protocols``      a methods study's replications: seeds, learning/test rows, generators
``study_reports``  a methods study's long table, mean ± SE summary and timings
``stability``      each cell's chosen tree, recorded; stability.md over the replications
=================  ========================================================================

The engine (``cartjit.estimators`` and the kernels under it) never imports this package;
the runner fits its cells by the CV estimators' own steps (:mod:`cartjit._prepare`),
without importing scikit-learn (a methods study fits the estimators themselves,
docs/studies.md).
Import order within the package goes one way: ``protocols`` <- ``methods`` <- ``config``
<- ``data``, ``store`` <- ``cells`` <- ``backends``, ``reports`` <- ``study_reports`` <-
``run``; ``stability`` (imported by ``cells`` and ``run``) imports ``methods``,
``protocols``, ``config`` and ``reports`` inside its functions. The user guides are docs/experiments.md and docs/studies.md.
"""
from .config import ConfigError, ExperimentConfig, read_config
from .data import resolve
from .run import RunError, RunResult, run_experiment

__all__ = ["ConfigError", "ExperimentConfig", "RunError", "RunResult", "read_config",
           "resolve", "run_experiment"]
