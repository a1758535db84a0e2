"""Reports of a methods study: the long table, the mean ± SE summary, the timings.

Assembled from the finished method cells in plan order (dataset, replication, method),
so the files do not depend on the backend or the order in which cells finished.

``results.csv`` / ``results.parquet``
    One row per (dataset, replication, method): the replication (``replication``,
    ``repeat``, ``fold``, ``seed``), the method (``method`` label, ``estimator``,
    ``params`` as JSON), the sizes of the learning and test samples, the measures of
    :data:`~cartjit.experiments.methods.METRIC_COLUMNS` (``score`` is the misclassification
    cost, the error rate under 0-1 cost, or the MSE: lower is better), and last the
    three times ``fit_time_s``, ``predict_time_s``, ``wall_time_s``, the only columns
    that differ between two runs of the same config.
``summary.md``, ``summary.csv``
    Per dataset and method: the number of replications, the mean of each measure with
    its standard error over the replications (sd / √R, ddof = 1), and the mean size of
    the fitted models.
``timings.md``
    Mean fit and predict times per dataset and method, apart from the summary so that
    the summary is reproducible.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from .config import canonical_json
from .methods import METRIC_COLUMNS
from .reports import _compile_markdown, _decimals, format_csv, put_long_table, report_writer

__all__ = ["study_table", "study_summary", "write_study_reports", "STUDY_COLUMNS"]

#: The long table's columns before the measures and the times.
STUDY_COLUMNS = ("dataset", "task", "protocol", "n_features", "n_learn", "n_test",
                 "replication", "repeat", "fold", "seed", "method", "estimator", "params",
                 "cell_id")
TIME_COLUMNS = ("fit_time_s", "predict_time_s", "wall_time_s")


def study_table(data, cells, results):
    """The long table of a study as a DataFrame (one row per cell, in plan order)."""
    by_name = {d.name: d for d in data}
    rows = []
    for cell in cells:
        res = results[cell.cell_id]
        row = {"dataset": cell.dataset, "task": cell.task, "protocol": cell.protocol["kind"],
               "n_features": by_name[cell.dataset].n_features, "n_learn": res["n_learn"],
               "n_test": res["n_test"], "replication": cell.replication,
               "repeat": cell.repeat, "fold": cell.fold, "seed": cell.seed,
               "method": cell.method, "estimator": cell.estimator,
               "params": canonical_json(cell.params), "cell_id": cell.cell_id}
        for name in METRIC_COLUMNS + TIME_COLUMNS:
            row[name] = res[name]
        row["warnings"] = " | ".join(res["warnings"])
        rows.append(row)
    columns = list(STUDY_COLUMNS) + list(METRIC_COLUMNS) + ["warnings"] + list(TIME_COLUMNS)
    df = pd.DataFrame(rows, columns=columns)
    for c in ("n_features", "n_learn", "n_test", "replication", "repeat", "fold", "seed"):
        df[c] = df[c].astype(np.int64)
    for c in ("score", "error", "cost", "mse", "rel_error") + TIME_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(np.float64)
    for c in ("n_trees", "n_nodes", "n_leaves"):
        df[c] = pd.array(df[c].tolist(), dtype="Int64")
    return df


def _mean_se(values):
    """Mean and standard error (sd / √R, ddof = 1; NaN with one value) of the
    non-missing ``values``."""
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce"), dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return math.nan, math.nan
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(v.mean()), se


def study_summary(df):
    """Per (dataset, method), in plan order: replications, mean and SE of each measure,
    and the mean model size."""
    rows = []
    for (ds, method), g in df.groupby(["dataset", "method"], sort=False):
        row = {"dataset": ds, "method": method, "estimator": g["estimator"].iloc[0],
               "task": g["task"].iloc[0], "replications": int(len(g))}
        for name in ("score", "error", "cost", "mse", "rel_error"):
            row[f"{name}_mean"], row[f"{name}_se"] = _mean_se(g[name])
        for name in ("n_trees", "n_nodes", "n_leaves"):
            row[f"{name}_mean"] = _mean_se(g[name].astype("Float64"))[0]
        rows.append(row)
    return pd.DataFrame(rows)


def _protocol_text(d):
    p = d.protocol
    strat = ", stratified" if p.get("stratify") else ""
    if p["kind"] == "cv":
        return (f"{p['V']}-fold cross-validation{strat}, {p['n_repeats']} partition(s): "
                f"{p['V'] * p['n_repeats']} replications (learn on V - 1 folds, test on "
                "the other)")
    if p["kind"] == "split":
        return (f"{p['n_repeats']} random learning/test splits{strat}, "
                f"{p['test_fraction']:g} of the {d.n_samples} cases in each test set")
    if p["kind"] == "fresh":
        g = p["generator"]
        return (f"{p['n_repeats']} replications, each learning on a fresh sample of "
                f"{g['n']} cases and testing on a fresh sample of {g['test_n']}")
    return (f"learning on the {d.n_learn} cases of the data file, testing on the "
            f"{d.n_samples - d.n_learn} of {os.path.basename(d.spec.test_path)}")


def _fmt(mean, se, dec):
    if not np.isfinite(mean):
        return ""
    return f"{mean:.{dec}f} ± {se:.{dec}f}" if np.isfinite(se) else f"{mean:.{dec}f}"


def _size(value):
    if not np.isfinite(value):
        return ""
    return f"{value:.1f}" if value != round(value) else str(int(round(value)))


def _dataset_markdown(d, table):
    """The summary table of one dataset."""
    classification = d.task == "classification"
    with_cost = classification and d.protocol.get("cost") is not None
    measures = ([("error", "test error")] + ([("cost", "test cost")] if with_cost else [])
                if classification else [("mse", "test MSE"), ("rel_error", "relative error")])
    dec = {name: _decimals(table[f"{name}_se"].tolist()) for name, _ in measures}
    head = ["method", "estimator", "R"] + [f"{label} (mean ± SE)" for _, label in measures] \
        + ["leaves", "nodes", "trees"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for _, r in table.iterrows():
        cells = [str(r["method"]).replace("|", "\\|"), f"`{r['estimator']}`",
                 str(int(r["replications"]))]
        cells += [_fmt(r[f"{name}_mean"], r[f"{name}_se"], dec[name]) for name, _ in measures]
        cells += [_size(r[f"{name}_mean"]) for name in ("n_leaves", "n_nodes", "n_trees")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _timings_markdown(df):
    lines = ["| dataset | method | cells | fit (s, mean) | predict (s, mean) | wall (s, total) |",
             "|---|---|---:|---:|---:|---:|"]
    total = 0.0
    for (ds, method), g in df.groupby(["dataset", "method"], sort=False):
        wall = float(g["wall_time_s"].sum())
        total += wall
        lines.append(f"| {ds} | {method} | {len(g)} | {g['fit_time_s'].mean():.4f} | "
                     f"{g['predict_time_s'].mean():.4f} | {wall:.3f} |")
    return (f"Times of each cell's fit and prediction; total {total:.2f} s of cell time. "
            "They measure the machine and the backend as much as the method.\n\n"
            + "\n".join(lines) + "\n")


def write_study_reports(out, config, data, cells, results, *, compile_info=None):
    """Write the study's report files into ``out``; returns their paths relative to it."""
    put, written = report_writer(out)
    df = study_table(data, cells, results)
    put_long_table(put, df)
    summary = study_summary(df)
    put("summary.csv", format_csv(summary))
    put("timings.md", f"# Timings: {config.name}\n\n" + _compile_markdown(compile_info)
        + _timings_markdown(df))
    md = [f"# {config.name}", ""]
    if config.description:
        md += [config.description.strip(), ""]
    md += ["Each method is fitted on the learning sample of every replication (doing its "
           "own model selection there, e.g. CART's cross-validated pruning) and scored on "
           "the test sample, the same samples for every method. **Tables: mean ± SE over "
           "the R replications** (SE = sd / √R; the folds of a cross-validation are not "
           "independent, so there it understates the uncertainty). Test error: the "
           "fraction of test cases misclassified; test cost: the mean cost C(i|j) of the "
           "test cases; relative error: test MSE over the test sample's variance "
           "(1 - R²). Leaves, nodes: mean size of the fitted tree, or summed over a "
           "forest's trees. Generated by `cartjit run`; one row per replication and "
           "method in `results.csv`.", ""]
    methods = {m.label: m for m in config.methods}
    for d in data:
        table = summary[summary["dataset"] == d.name]
        about = (f"{d.spec.format.upper()} file {os.path.basename(d.spec.path)}"
                 if d.spec.source == "file" else d.description.strip().rstrip("."))
        md += [f"## {d.name}", "",
               (f"N = {d.n_learn} learning and {d.n_samples - d.n_learn} test cases"
                if d.n_learn is not None else f"N = {d.n_samples} cases")
               + f", {d.n_features} features, {d.task}; {about}. "
               f"Protocol: {_protocol_text(d)}.", "",
               _dataset_markdown(d, table)]
    swept = [m for m in methods.values() if m.label != m.name]
    md += ["## Methods", "", "| method | estimator | parameters |", "|---|---|---|"]
    for m in config.methods:
        params = ", ".join(f"{k}={canonical_json(v)}" for k, v in m.params.items()) or "defaults"
        md.append(f"| {m.label.replace('|', chr(92) + '|')} | `{m.estimator}` | {params} |")
    md.append("")
    if swept:
        md += ["A method with a list of values for a parameter is one method per value "
               "(its label names the value).", ""]
    put("summary.md", "\n".join(md))
    return written
