"""Reports of a methods study: the long table, the comparison of the methods, the timings.

Assembled from the finished method cells in plan order (dataset, replication, method),
so the files do not depend on the backend, the number of workers or the order in which
cells finished; the statistics are those of :mod:`cartjit.experiments.compare`.

``results.csv`` / ``results.parquet``
    One row per (dataset, replication, method): the replication (``replication``,
    ``repeat``, ``fold``, ``seed``), the method (``method`` label, ``estimator``,
    ``params`` as JSON), the sizes of the learning and test samples, the measures of
    :data:`~cartjit.experiments.methods.METRIC_COLUMNS` (``score`` is the misclassification
    cost, the error rate under 0-1 cost, or the MSE: lower is better), and last the
    three times ``fit_time_s``, ``predict_time_s``, ``wall_time_s``, the only columns
    that differ between two runs of the same config.
``summary.md``
    Per dataset: mean ± SE of each measure and of the tree size per method; each method
    against the baseline (``[study] baseline``, the first method by default) as the mean
    paired difference of the score ± SE with its wins, ties and losses; the plot
    ``plots/<dataset>.png``. Across the datasets (two or more): the average ranks,
    Friedman's and Iman and Davenport's tests, Nemenyi's critical difference with its
    diagram ``plots/cd_diagram.png`` and Wilcoxon's signed-rank test of each method
    against the baseline (Demšar 2006). Without SciPy the tests are left out (one line
    says so); without matplotlib the plots.
``summary.csv``
    Per dataset and method: the number of replications, the mean of each measure with
    its standard error over the replications (sd / √R, ddof = 1), and the mean size of
    the fitted models.
``summary/score.csv``, ``summary/score.tex``
    The score, mean ± SE, datasets × methods (CSV: every digit, one row per dataset and
    method; LaTeX: a booktabs ``tabular``).
``summary/paired.csv``, ``summary/paired.tex``
    Each method against the baseline (:func:`~cartjit.experiments.compare.paired_differences`).
``summary/ranks.csv``, ``summary/ranks.tex``
    The rank of each method on each dataset and the average rank (two or more datasets).
``timings.md``
    Fit and predict times (mean ± SE) per dataset and method, apart from the summary so
    that the summary is reproducible.
"""
from __future__ import annotations

import io
import math
import os
import re
import warnings

import numpy as np
import pandas as pd

from . import compare
from .config import canonical_json
from .methods import METRIC_COLUMNS
from .reports import (_compile_markdown, _decimals, _have, format_csv, put_long_table,
                      report_writer)

__all__ = ["study_table", "study_summary", "study_comparison", "write_study_reports",
           "STUDY_COLUMNS"]

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
        for name in ("n_trees", "n_nodes"):
            row[f"{name}_mean"] = _mean_se(g[name].astype("Float64"))[0]
        row["n_leaves_mean"], row["n_leaves_se"] = _mean_se(g["n_leaves"].astype("Float64"))
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


def _measures(d):
    """``(column, label)`` of the measures shown for dataset ``d``."""
    if d.task != "classification":
        return [("mse", "test MSE"), ("rel_error", "relative error")]
    with_cost = d.protocol.get("cost") is not None
    return [("error", "test error")] + ([("cost", "test cost")] if with_cost else [])


def _score_label(d):
    """What ``score`` is on dataset ``d``."""
    if d.task != "classification":
        return "test MSE"
    return "test cost" if d.protocol.get("cost") is not None else "test error"


def _dataset_markdown(d, table):
    """The summary table of one dataset."""
    measures = _measures(d)
    dec = {name: _decimals(table[f"{name}_se"].tolist()) for name, _ in measures}
    dec_leaves = _decimals(table["n_leaves_se"].tolist())
    head = ["method", "estimator", "R"] + [f"{label} (mean ± SE)" for _, label in measures] \
        + ["leaves (mean ± SE)", "nodes", "trees"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for _, r in table.iterrows():
        cells = [_md(r["method"]), f"`{r['estimator']}`", str(int(r["replications"]))]
        cells += [_fmt(r[f"{name}_mean"], r[f"{name}_se"], dec[name]) for name, _ in measures]
        cells.append(_fmt(r["n_leaves_mean"], r["n_leaves_se"], dec_leaves))
        cells += [_size(r[f"{name}_mean"]) for name in ("n_nodes", "n_trees")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _md(text):
    return str(text).replace("|", "\\|")


def _slug(name):
    """A file name for a dataset's plot: its name with anything but letters, digits,
    ``.``, ``_`` and ``-`` replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(name))


def _timings_markdown(df):
    lines = ["| dataset | method | cells | fit (s, mean ± SE) | predict (s, mean ± SE) | "
             "wall (s, total) |", "|---|---|---:|---:|---:|---:|"]
    total = 0.0
    for (ds, method), g in df.groupby(["dataset", "method"], sort=False):
        wall = float(g["wall_time_s"].sum())
        total += wall
        fit, pred = _mean_se(g["fit_time_s"]), _mean_se(g["predict_time_s"])
        lines.append(f"| {ds} | {_md(method)} | {len(g)} | {_fmt(*fit, 4)} | "
                     f"{_fmt(*pred, 4)} | {wall:.3f} |")
    return (f"Times of each cell's fit and prediction; total {total:.2f} s of cell time. "
            "They measure the machine and the backend as much as the method.\n\n"
            + "\n".join(lines) + "\n")


# --------------------------------------------------------------------------- the comparison

def _png(ax):
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _by_dataset_text(frame, data, dec, text):
    """A datasets × methods table of ``text(row, decimals)`` (rows of ``frame`` per
    (dataset, method)), datasets and methods in plan order."""
    methods = list(pd.unique(frame["method"]))
    table = pd.DataFrame("", index=pd.Index([d.name for d in data], name="dataset"),
                         columns=methods, dtype=object)
    for _, r in frame.iterrows():
        table.loc[r["dataset"], r["method"]] = text(r, dec[r["dataset"]])
    return table


def study_comparison(df, data, baseline, *, alpha=0.05):
    """The comparison of a study's methods, as a dict of its parts (see
    :func:`write_study_reports`): ``paired`` (each method against ``baseline`` on each
    dataset), ``score`` (mean ± SE of the score), ``ranks`` (rank matrix, two or more
    datasets), ``friedman``, ``cd``, ``groups``, ``wilcoxon`` (None without SciPy or
    with fewer than two datasets), ``scipy`` (whether SciPy is installed) and
    ``note`` (why a part is missing, or None)."""
    keys = df[["dataset", "method", "replication", "score"]].copy()
    keys["score"] = pd.to_numeric(keys["score"], errors="coerce").astype(np.float64)
    out = {"scipy": _have("scipy"), "ranks": None, "friedman": None, "cd": None,
           "groups": None, "wilcoxon": None, "note": None, "paired": None}
    out["score"] = compare.summarize(keys, ["score"]) if np.isfinite(keys["score"]).all() \
        else None
    if out["score"] is None:
        out["note"] = ("some replications have no finite score: the paired comparison and "
                       "the ranks are left out")
        return out
    methods = list(pd.unique(keys["method"]))
    if len(methods) >= 2:
        out["paired"] = compare.paired_differences(keys, baseline, "score")
    if len(data) < 2 or len(methods) < 2:
        return out
    # means equal in exact arithmetic (two methods with the same errors on the same
    # splits, summed in another order) may differ in their last bits: 12 significant
    # digits decide the ranks, so such means tie
    matrix = compare.score_matrix(keys, "score").map(lambda v: float(f"{v:.12g}"))
    out["ranks"] = compare.rank_matrix(matrix)
    if not out["scipy"]:
        return out
    n, k = matrix.shape
    out["friedman"] = compare.friedman_test(matrix)
    out["cd"] = compare.critical_difference(k, n, alpha)
    out["q"] = compare.nemenyi_q(k, alpha)
    out["groups"] = compare.nemenyi_groups(out["friedman"].average_ranks, out["cd"])
    rows = []
    for method in methods:
        if method == baseline:
            continue
        if not np.any(matrix[method] != matrix[baseline]):
            rows.append((method, None))
            continue
        with warnings.catch_warnings():  # SciPy's note on small samples
            warnings.simplefilter("ignore")
            rows.append((method, compare.wilcoxon_test(matrix, method, baseline)))
    out["wilcoxon"] = rows
    return out


def _paired_markdown(paired, label, dec):
    lines = [f"| method | R | {label}: method − baseline (mean ± SE) | wins | ties | losses |",
             "|---|---:|---:|---:|---:|---:|"]
    for _, r in paired.iterrows():
        lines.append(f"| {_md(r['method'])} | {int(r['n'])} | "
                     f"{_fmt(r['mean_diff'], r['se_diff'], dec)} | {int(r['wins'])} | "
                     f"{int(r['ties'])} | {int(r['losses'])} |")
    return "\n".join(lines) + "\n"


def _across_markdown(cmp, data, baseline, alpha, plots):
    """The section across the datasets."""
    ranks = cmp["ranks"]
    n, k = ranks.shape
    avg = ranks.mean(axis=0)
    md = [f"## Across the {n} datasets", "",
          "Each dataset ranks the methods by their mean score (1 = the lowest; tied means "
          "share the mean of their ranks); the average ranks, Friedman's test of the "
          "hypothesis that all methods are equivalent, and Nemenyi's critical difference "
          "(Demšar 2006, \"Statistical comparisons of classifiers over multiple data "
          "sets\", JMLR 7, 1-30).", "",
          "| method | " + " | ".join(_md(d) for d in ranks.index) + " | average rank |",
          "|---|" + "---:|" * (n + 1)]
    for m in ranks.columns:
        md.append(f"| {_md(m)} | " + " | ".join(f"{v:g}" for v in ranks[m])
                  + f" | {avg[m]:.3f} |")
    md.append("")
    if not cmp["scipy"]:
        md += ["*(SciPy is not installed: no Friedman, Nemenyi or Wilcoxon test and no CD "
               "diagram; `pip install \"cartjit[stats]\"`.)*", ""]
        return md, None
    fr, cd = cmp["friedman"], cmp["cd"]
    groups = cmp["groups"]
    md += [f"Friedman's test: χ²_F = {fr.chi2:.3f} (df {fr.df1}, p = {fr.chi2_pvalue:.3g}); "
           f"Iman and Davenport's F_F = {fr.f:.3f} (df {fr.df1} and {fr.df2}, "
           f"p = {fr.f_pvalue:.3g}).", "",
           f"Nemenyi's critical difference at α = {alpha:g}: CD = {cd:.3f} (q_α = "
           f"{cmp['q']:.3f}, k = {k} methods, N = {n} datasets); methods whose average "
           "ranks differ by less than CD are not significantly different. Groups: "
           + ("; ".join("{" + ", ".join(_md(g) for g in grp) + "}" for grp in groups)
              or "none (every pair differs by at least CD)") + ".", ""]
    png = None
    if plots:
        png = _png(compare.cd_diagram(fr.average_ranks, cd,
                                      title=f"Average ranks over {n} datasets"))
        md += ["![critical-difference diagram](plots/cd_diagram.png)", ""]
    rows = cmp["wilcoxon"]
    if rows:
        md += [f"Wilcoxon's signed-rank test of each method against {_md(baseline)} over the "
               f"{n} datasets' mean scores (R+: the rank sum of the datasets where the "
               "method's score is higher, R-: lower; zero differences split; p two-sided, "
               "not adjusted for the number of methods):", "",
               "| method | R+ | R- | T | p |", "|---|---:|---:|---:|---:|"]
        for method, w in rows:
            md.append(f"| {_md(method)} | " + (
                "same mean score as the baseline on every dataset | | | |" if w is None else
                f"{w.r_plus:g} | {w.r_minus:g} | {w.statistic:g} | {w.pvalue:.3g} |"))
        md.append("")
    return md, png


def _put_tables(put, cmp, data, dec):
    """The CSV and LaTeX files of ``summary/``."""
    score = cmp["score"]
    put("summary/score.csv", compare.format_table(score.rename(columns={"n": "replications"}),
                                                  "csv"))
    put("summary/score.tex", compare.format_table(_by_dataset_text(
        score, data, dec, lambda r, d: _fmt(r["score_mean"], r["score_se"], d)), "latex"))
    if cmp["paired"] is not None:
        paired = cmp["paired"]
        put("summary/paired.csv", compare.format_table(paired, "csv"))
        put("summary/paired.tex", compare.format_table(_by_dataset_text(
            paired, [d for d in data], dec,
            lambda r, d: f"{_fmt(r['mean_diff'], r['se_diff'], d)} "
                         f"({int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])})"), "latex"))
    if cmp["ranks"] is not None:
        ranks = cmp["ranks"].copy()
        ranks.loc["average rank"] = ranks.mean(axis=0)
        ranks.index.name = "dataset"
        put("summary/ranks.csv", compare.format_table(ranks, "csv"))
        put("summary/ranks.tex", compare.format_table(ranks, "latex", digits=3))


def write_study_reports(out, config, data, cells, results, *, compile_info=None):
    """Write the study's report files into ``out``; returns their paths relative to it."""
    put, written = report_writer(out)
    df = study_table(data, cells, results)
    put_long_table(put, df)
    summary = study_summary(df)
    put("summary.csv", format_csv(summary))
    put("timings.md", f"# Timings: {config.name}\n\n" + _compile_markdown(compile_info)
        + _timings_markdown(df))
    methods = {m.label: m for m in config.methods}
    baseline = config.baseline if config.baseline in methods else config.methods[0].label
    alpha = 0.05
    cmp = study_comparison(df, data, baseline, alpha=alpha)
    plots = _have("matplotlib") and cmp["score"] is not None
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
           f"forest's trees. **Baseline: {_md(baseline)}**; each other method is compared "
           "with it replication by replication: the mean of the paired differences of "
           "the score (negative: the method did better) ± its SE, and the replications "
           "where the method did better (wins), exactly as well (ties) or worse (losses). "
           "Generated by `cartjit run`; one row per replication and method in "
           "`results.csv`, the tables as CSV and LaTeX in `summary/`.", ""]
    if not _have("matplotlib"):
        md += ["*(matplotlib is not installed: no plots; `pip install \"cartjit[plot]\"`.)*",
               ""]
    if cmp["note"]:
        md += [f"*({cmp['note']}.)*", ""]
    dec = {}
    for d in data:
        table = summary[summary["dataset"] == d.name]
        label = _score_label(d)
        dec[d.name] = _decimals(table["score_se"].tolist())
        about = (f"{d.spec.format.upper()} file {os.path.basename(d.spec.path)}"
                 if d.spec.source == "file" else d.description.strip().rstrip("."))
        md += [f"## {d.name}", "",
               (f"N = {d.n_learn} learning and {d.n_samples - d.n_learn} test cases"
                if d.n_learn is not None else f"N = {d.n_samples} cases")
               + f", {d.n_features} features, {d.task}; {about}. "
               f"Protocol: {_protocol_text(d)}.", "",
               _dataset_markdown(d, table)]
        if cmp["paired"] is not None:
            paired = cmp["paired"][cmp["paired"]["dataset"] == d.name]
            md += [f"Against the baseline {_md(baseline)} ({label}, paired by replication):",
                   "", _paired_markdown(paired, label, dec[d.name])]
        if plots:
            ax = compare.plot_dataset(cmp["score"], d.name, "score")
            ax.set_ylabel(f"{label}: mean; bars ± 1 SE")
            put(f"plots/{_slug(d.name)}.png", _png(ax))
            md += [f"![{d.name}: {label} by method, bars ± 1 SE](plots/{_slug(d.name)}.png)",
                   ""]
    if cmp["score"] is not None:
        _put_tables(put, cmp, data, dec)
    if cmp["ranks"] is not None:
        across, png = _across_markdown(cmp, data, baseline, alpha, plots)
        md += across
        if png is not None:
            put("plots/cd_diagram.png", png)
    swept = [m for m in methods.values() if m.label != m.name]
    md += ["## Methods", "", "| method | estimator | parameters |", "|---|---|---|"]
    for m in config.methods:
        params = ", ".join(f"{k}={canonical_json(v)}" for k, v in m.params.items()) or "defaults"
        md.append(f"| {_md(m.label)} | `{m.estimator}` | {params} |")
    md.append("")
    if swept:
        md += ["A method with a list of values for a parameter is one method per value "
               "(its label names the value).", ""]
    put("summary.md", "\n".join(md))
    return written
