"""Reports of an experiment: the long table, the monograph-layout summaries, plots, timings.

Everything here is assembled from the finished cells (:mod:`cartjit.experiments.cells`,
read back by :mod:`cartjit.experiments.store`), always in
the plan's cell order, so the files do not depend on the backend or on the order in
which cells finished.

``results.csv`` / ``results.parquet``
    The tidy long table: one row per (cell, k). Floats are written as the shortest
    text that reads back to the same double (``repr``), so the CSV is byte-identical
    whenever the results are; ``wall_time_s`` (the last column) measures the machine
    and is the one column that differs between two runs of the same config.
``summary.md`` and ``summary/<group>.csv``
    For each dataset and tree setting, the table of the worked examples (docs/maths.md
    §6): rows k and |T~_k| (with α_k and R(T_k)), columns V, cells R^CV(T_k) as "mean ±
    sd over repeats" (the standard deviation of R^CV across the random partitions); the
    leave-one-out column has a single partition and no ±. Both the table and its plot
    say what their ± means. A second table counts how often each T_k is chosen by the
    "min" and "1se" rules.
``plots/<group>.png``
    R^CV (mean over repeats) against the number of leaves, one line per V with bars of
    ± 1 SE (the standard error of docs/maths.md §5 that the 1-SE rule uses, averaged over
    repeats; labelled as such, since it is not the sd of the table), and the
    resubstitution risk R(T_k) for reference. Needs matplotlib (the
    ``plot`` extra); without it the plots are skipped with a note.
``cells.csv``, ``timings.md``
    One row per cell (chosen subtrees, fold count, wall time), and wall time per
    dataset and V, with the kernels' compilation (or loading) before the cells reported
    on its own line: kept apart from ``summary.md`` so that the summary is reproducible.
"""
from __future__ import annotations

import csv
import importlib
import importlib.util
import io
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .config import canonical_json, selection_label
from .plotter import plot_group
from .store import CELL_COLUMNS, atomic_write

__all__ = ["long_table", "format_csv", "summary_table", "summary_markdown", "write_reports",
           "report_writer", "put_long_table", "LONG_COLUMNS"]

#: Columns of the long table before the ``chosen_<rule>`` columns and ``wall_time_s``:
#: the cell's key, then its per-k columns (:data:`~cartjit.experiments.store.CELL_COLUMNS`).
LONG_COLUMNS = (
    "dataset", "task", "n_samples", "n_features", "settings", "criterion", "priors", "cost",
    "max_depth", "min_samples_split", "min_samples_leaf", "min_impurity_decrease",
    "max_leaf_nodes", "V", "loo", "repeat", "seed", "cell_id") + CELL_COLUMNS


# --------------------------------------------------------------------------- long table

def _setting_text(value):
    if isinstance(value, str):
        return value
    return canonical_json(value)


def long_table(config, data, cells, results):
    """The long table as a DataFrame (one row per cell and k, in plan order)."""
    by_name = {d.name: d for d in data}
    rules = [selection_label(r) for r in config.selection]
    parts = []
    for cell in cells:
        res = results[cell.cell_id]
        cols = res["columns"]
        K = len(cols["k"])
        d = by_name[cell.dataset]
        s = cell.settings
        frame = {
            "dataset": [cell.dataset] * K,
            "task": [cell.task] * K,
            "n_samples": [d.n_samples] * K,
            "n_features": [d.n_features] * K,
            "settings": [cell.settings_label] * K,
            "criterion": [s["criterion"]] * K,
            "priors": [_setting_text(s["priors"]) if "priors" in s else None] * K,
            "cost": [_setting_text(s["cost"]) if "cost" in s else None] * K,
            "max_depth": [None if s["max_depth"] == "none" else s["max_depth"]] * K,
            "min_samples_split": [s["min_samples_split"]] * K,
            "min_samples_leaf": [s["min_samples_leaf"]] * K,
            "min_impurity_decrease": [float(s["min_impurity_decrease"])] * K,
            "max_leaf_nodes": [None if s["max_leaf_nodes"] == "none" else s["max_leaf_nodes"]] * K,
            "V": [cell.V] * K,
            "loo": [cell.loo] * K,
            "repeat": [cell.repeat] * K,
            "seed": [cell.seed] * K,
            "cell_id": [cell.cell_id] * K,
        }
        for name in CELL_COLUMNS:
            frame[name] = cols[name]
        for rule in rules:
            kk = res["chosen"][rule]
            frame[f"chosen_{rule}"] = [i == kk for i in range(K)]
        frame["wall_time_s"] = [float(res["wall_time_s"])] * K
        parts.append(frame)
    columns = list(LONG_COLUMNS) + [f"chosen_{r}" for r in rules] + ["wall_time_s"]
    merged = {c: [v for p in parts for v in p[c]] for c in columns}
    df = pd.DataFrame(merged, columns=columns)
    for c in ("max_depth", "max_leaf_nodes"):
        df[c] = pd.array(df[c].tolist(), dtype="Int64")
    for c in ("n_samples", "n_features", "min_samples_split", "min_samples_leaf", "V",
              "repeat", "k", "n_leaves"):
        df[c] = df[c].astype(np.int64)
    df["seed"] = df["seed"].astype(np.int64)
    for c in ("dataset", "task", "settings", "criterion", "priors", "cost", "cell_id"):
        df[c] = df[c].astype(object)
    return df


def _fmt(value):
    """Text of one value: shortest round-trip repr for floats, '' for missing."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return ""
        return repr(v)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def format_csv(df):
    """``df`` as CSV text with exact float formatting (see the module docstring)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(df.columns))
    columns = [df[c].tolist() for c in df.columns]
    for row in zip(*columns):
        writer.writerow([_fmt(v) for v in row])
    return buf.getvalue()


# --------------------------------------------------------------------------- summary tables

def _groups(df):
    """(dataset, settings) groups of the long table, in plan order."""
    keys = list(dict.fromkeys(zip(df["dataset"], df["settings"])))
    return [(ds, st, df[(df["dataset"] == ds) & (df["settings"] == st)]) for ds, st in keys]


def summary_table(group):
    """Numeric monograph-layout table of one (dataset, settings) group of the long table.

    Rows k; columns ``k, n_leaves, alpha, risk``, then per V either ``V<V>_mean``,
    ``V<V>_std``, ``V<V>_se`` (random partitions; std over repeats, ddof=1, NaN with one
    repeat) or ``V<V>_loo``, ``V<V>_loo_se`` (leave-one-out), then the counts of how
    often each k was chosen per rule and V (``V<V>_chosen_<rule>``).
    """
    first = group[group["cell_id"] == group["cell_id"].iloc[0]]
    base = first[["k", "n_leaves", "alpha", "risk"]].reset_index(drop=True)
    K = len(base)
    out = {c: base[c].to_numpy() for c in base.columns}
    rules = [c[len("chosen_"):] for c in group.columns if c.startswith("chosen_")]
    for V, gv in group.groupby("V", sort=True):
        loo = bool(gv["loo"].iloc[0])
        risk = np.vstack([g["cv_risk"].to_numpy() for _, g in gv.groupby("repeat", sort=True)])
        se = np.vstack([g["cv_se"].to_numpy() for _, g in gv.groupby("repeat", sort=True)])
        leaves = np.vstack([g["n_leaves"].to_numpy() for _, g in gv.groupby("repeat", sort=True)])
        if risk.shape[1] != K or np.any(leaves != base["n_leaves"].to_numpy()):
            raise ValueError(f"cells of dataset {group['dataset'].iloc[0]!r} disagree on the "
                             "pruning sequence of the full tree")
        if loo:
            out[f"V{V}_loo"] = risk[0]
            out[f"V{V}_loo_se"] = se[0]
        else:
            out[f"V{V}_mean"] = risk.mean(axis=0)
            out[f"V{V}_std"] = risk.std(axis=0, ddof=1) if risk.shape[0] > 1 else np.full(K, np.nan)
            out[f"V{V}_se"] = se.mean(axis=0)
        for rule in rules:
            chosen = np.vstack([g[f"chosen_{rule}"].to_numpy() for _, g in gv.groupby("repeat", sort=True)])
            out[f"V{V}_chosen_{rule}"] = chosen.sum(axis=0).astype(np.int64)
    return pd.DataFrame(out)


def _decimals(se_values):
    """Decimals that show the standard errors with two significant digits (0..6).

    The precision of the table follows its statistical uncertainty: iris (SE ~ 0.02)
    gets 3 decimals, a million cases (SE ~ 0.0004) 5, MSEs in the thousands none.
    """
    vals = np.abs(np.asarray([v for v in se_values if np.isfinite(v)], dtype=float))
    vals = vals[vals > 0]
    if not vals.size:
        return 3
    return int(min(6, max(0, 1 - math.floor(math.log10(np.median(vals))))))


def _g(x):
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _pick_rows(table, max_rows):
    """Row positions to show when K is large: ends, the minima, the chosen trees."""
    K = len(table)
    if K <= max_rows:
        return list(range(K))
    keep = set(range(3)) | set(range(K - 3, K))
    for col in table.columns:
        if col.endswith("_mean") or col.endswith("_loo"):
            i = int(np.nanargmin(table[col].to_numpy()))
            keep |= set(range(max(0, i - 3), min(K, i + 4)))
        if "_chosen_" in col:
            keep |= set(np.flatnonzero(table[col].to_numpy() > 0).tolist())
    return sorted(keep)


def summary_markdown(table, n_repeats, rules=("min", "1se"), max_rows=40):
    """The summary table (and the chosen-subtree counts) as Markdown text."""
    Vs = []
    for c in table.columns:
        if c.startswith("V") and (c.endswith("_mean") or c.endswith("_loo")):
            Vs.append((int(c[1:].split("_")[0]), c.endswith("_loo")))
    se_values = []
    for V, loo in Vs:
        se_values.extend(table[f"V{V}_loo_se" if loo else f"V{V}_se"].tolist())
    dec = _decimals(se_values)
    head = ["k", "\\|T̃_k\\|", "α_k", "R(T_k)"] + [
        f"V = {V} (LOO)" if loo else f"V = {V}" for V, loo in Vs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    rows = _pick_rows(table, max_rows)
    prev = -1
    for i in rows:
        if i != prev + 1:
            lines.append("| ⋮ " * len(head) + "|")
        prev = i
        r = table.iloc[i]
        cells = [str(int(r["k"])), str(int(r["n_leaves"])), _g(float(r["alpha"])),
                 f"{float(r['risk']):.{dec}f}"]
        for V, loo in Vs:
            if loo:
                cells.append(f"{float(r[f'V{V}_loo']):.{dec}f}")
            else:
                m, s = float(r[f"V{V}_mean"]), float(r[f"V{V}_std"])
                cells.append(f"{m:.{dec}f} ± {s:.{dec}f}" if np.isfinite(s) else f"{m:.{dec}f}")
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    rules = [r for r in rules if any(c.endswith(f"_chosen_{r}") for c in table.columns)]
    if rules:
        head2 = ["k", "\\|T̃_k\\|"] + [f"V = {V} (LOO)" if loo else f"V = {V}" for V, loo in Vs]
        lines = ["| " + " | ".join(head2) + " |", "|" + "---:|" * len(head2)]
        shown = [i for i in range(len(table))
                 if any(table[f"V{V}_chosen_{r}"].iloc[i] > 0 for V, _ in Vs for r in rules)]
        for i in shown:
            r = table.iloc[i]
            cells = [str(int(r["k"])), str(int(r["n_leaves"]))]
            for V, loo in Vs:
                cells.append(" / ".join(str(int(r[f"V{V}_chosen_{rule}"])) for rule in rules))
            lines.append("| " + " | ".join(cells) + " |")
        text += ("\nTimes each T_k was chosen over the repeats, by rule "
                 + " / ".join(f"`{r}`" for r in rules) + " (rows never chosen are left out):\n\n"
                 + "\n".join(lines) + "\n")
    return text


def settings_markdown(entries):
    """One dataset's tree settings side by side (a sweep over, say, the criterion):
    ``entries`` holds ``(settings label, summary table, number of repeats)``; one row a
    setting with the size of T_1 and the number of trees K of its pruning sequence, then
    per V the smallest mean R^CV (± sd over the repeats) and the size |T̃_k| of that tree.
    """
    Vs = []
    for _, table, _ in entries:
        for c in table.columns:
            if c.startswith("V") and (c.endswith("_mean") or c.endswith("_loo")):
                key = (int(c[1:].split("_")[0]), c.endswith("_loo"))
                if key not in Vs:
                    Vs.append(key)
    se_values = []
    for _, table, _ in entries:
        for V, loo in Vs:
            col = f"V{V}_loo_se" if loo else f"V{V}_se"
            if col in table.columns:
                se_values.extend(table[col].tolist())
    dec = _decimals(se_values)
    head = ["setting", "K", "\\|T̃_1\\|"] + [
        f"V = {V} (LOO): min R^CV (\\|T̃_k\\|)" if loo else f"V = {V}: min R^CV (\\|T̃_k\\|)"
        for V, loo in Vs]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for label, table, _ in entries:
        cells = [label or "(defaults)", str(len(table)), str(int(table["n_leaves"].iloc[0]))]
        for V, loo in Vs:
            col = f"V{V}_loo" if loo else f"V{V}_mean"
            if col not in table.columns:
                cells.append("")
                continue
            i = int(np.nanargmin(table[col].to_numpy()))
            m = float(table[col].iloc[i])
            s = np.nan if loo else float(table[f"V{V}_std"].iloc[i])
            value = f"{m:.{dec}f} ± {s:.{dec}f}" if np.isfinite(s) else f"{m:.{dec}f}"
            cells.append(f"{value} ({int(table['n_leaves'].iloc[i])})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- plots

def _have(module):
    """Whether the optional ``module`` (matplotlib, scipy) can be imported."""
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


# --------------------------------------------------------------------------- writing

def _settings_text(cell):
    s = cell.settings
    parts = [s["criterion"]]
    if cell.task == "classification":
        pri = s["priors"]
        parts.append(f"{pri} priors" if isinstance(pri, str) else f"priors {canonical_json(pri)}")
        parts.append("0-1 cost" if s["cost"] == "0-1" else f"cost {canonical_json(s['cost'])}")
    for key, default in (("max_depth", "none"), ("min_samples_split", 2),
                         ("min_samples_leaf", 1), ("min_impurity_decrease", 0.0),
                         ("max_leaf_nodes", "none")):
        if s[key] != default:
            parts.append(f"{key}={s[key]}")
    return ", ".join(parts)


def _slug(cell):
    return cell.dataset if not cell.settings_slug else f"{cell.dataset}__{cell.settings_slug}"


def cells_table(config, data, cells, results):
    """One row per cell: its key, the trees chosen by each rule, folds and wall time."""
    rules = [selection_label(r) for r in config.selection]
    by_name = {d.name: d for d in data}
    rows = []
    for cell in cells:
        res = results[cell.cell_id]
        cols = res["columns"]
        row = {"dataset": cell.dataset, "n_samples": by_name[cell.dataset].n_samples,
               "settings": cell.settings_label, "V": cell.V, "loo": cell.loo,
               "repeat": cell.repeat, "seed": cell.seed, "cell_id": cell.cell_id,
               "n_folds": res["n_folds"], "K": len(cols["k"]),
               "leaves_T1": cols["n_leaves"][0]}
        for rule in rules:
            kk = res["chosen"][rule]
            row[f"k_{rule}"] = cols["k"][kk]
            row[f"leaves_{rule}"] = cols["n_leaves"][kk]
            row[f"cv_risk_{rule}"] = cols["cv_risk"][kk]
        row["warnings"] = " | ".join(res.get("warnings", []))
        row["wall_time_s"] = res["wall_time_s"]
        rows.append(row)
    return pd.DataFrame(rows)


def _compile_markdown(info):
    if info is None:
        return ("No kernel warm-up in this invocation (no cell to compute, or it was "
                "turned off): the first cells include loading the kernels.\n\n")
    what = ("compiled the kernels (first use after installing or upgrading cartjit)"
            if info["compiled"] else "loaded the compiled kernels from Numba's cache")
    return (f"Before the cells, the kernel warm-up {what} in {info['seconds']:.2f} s "
            f"(cache: `{info['cache_dir']}`); this time is not in the cell times below.\n\n")


def _timings_markdown(ctab):
    lines = ["| dataset | N | settings | V | cells | fold fits | wall time (s) | per cell (s) | per fit (ms) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    total = 0.0
    for (ds, st, V), g in ctab.groupby(["dataset", "settings", "V"], sort=False):
        fits = int((g["n_folds"] + 1).sum())
        wall = float(g["wall_time_s"].sum())
        total += wall
        lines.append(f"| {ds} | {int(g['n_samples'].iloc[0])} | {st or '-'} | {V} | {len(g)} | "
                     f"{fits} | {wall:.3f} | {wall / len(g):.4f} | {1e3 * wall / fits:.2f} |")
    return ("Wall time of each cell's fit (CV estimator `fit`, full tree and fold trees), "
            f"summed; total {total:.2f} s of cell time. It measures the machine and the "
            "backend, not the method.\n\n" + "\n".join(lines) + "\n")


def _categorical_text(d):
    """``; categorical: a, b`` naming the features split by subsets of their levels."""
    names = [d.feature_names[j] for j in getattr(d, "categorical", ())]
    if not names:
        return ""
    return f"; categorical: {', '.join(names[:8])}{', …' if len(names) > 8 else ''}"


def _plot_columns(table):
    """A summary table's columns as plain arrays, what the plot helper takes."""
    return {c: table[c].to_numpy() for c in table.columns}


def group_plot_job(config, data, group_cells, results):
    """``(key, columns, title)`` of the plot of one (dataset, settings) group, from its
    cells alone (all finished): what :meth:`PlotWorker.submit` takes, so that a group's
    plot can be drawn while the other groups' cells run. The table is the one
    :func:`write_reports` draws (the group's rows of the long table, in plan order)."""
    df = long_table(config, data, group_cells, results)
    ((ds, st, group),) = _groups(df)
    n = next(d.n_samples for d in data if d.name == ds)
    title = ds if not st else f"{ds} ({st})"
    return (ds, st), _plot_columns(summary_table(group)), f"{title}: N = {n}"


def report_writer(out):
    """``(put, written)``: ``put(rel, content)`` writes ``out/rel`` atomically (making its
    folder) and appends ``rel`` to the list ``written``."""
    out = Path(out)
    written = []

    def put(rel, content):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, content, fsync=False)
        written.append(rel)

    return put, written


def put_long_table(put, df):
    """The long table ``df`` as ``results.csv`` and, with pyarrow, ``results.parquet``."""
    put("results.csv", format_csv(df))
    try:
        import pyarrow  # noqa: F401
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        put("results.parquet", buf.getvalue())
    except ImportError:
        warnings.warn("pyarrow is not installed: results.parquet was not written (pip install "
                      "pyarrow); results.csv holds the same table", RuntimeWarning, stacklevel=3)


def write_reports(out, config, data, cells, results, *, max_rows=40, compile_info=None,
                  plotter=None):
    """Write every report file into ``out``; returns their paths relative to ``out``.

    ``compile_info`` is the warm-up record of this invocation (``CompileReport.as_dict``),
    reported in ``timings.md`` apart from the cells. ``plotter`` (a
    :class:`~cartjit.experiments.plotter.PlotWorker`) draws the plots in its process
    while the tables are written; without it, or if it fails, they are drawn here.
    """
    put, written = report_writer(out)
    df = long_table(config, data, cells, results)
    by_name = {d.name: d for d in data}
    first_cell = {}
    for cell in cells:
        first_cell.setdefault((cell.dataset, cell.settings_label), cell)
    groups = []
    for ds, st, group in _groups(df):
        title = ds if not st else f"{ds} ({st})"
        groups.append((ds, st, group, summary_table(group), title))
    helper = (plotter is not None and plotter.alive
              and importlib.util.find_spec("matplotlib") is not None)
    if helper:  # the plots not sent yet (while their cells ran) go now
        helper = plotter.submit(
            [((ds, st), _plot_columns(table), f"{title}: N = {by_name[ds].n_samples}")
             for ds, st, _, table, title in groups if not plotter.has((ds, st))])

    put_long_table(put, df)

    ctab = cells_table(config, data, cells, results)
    put("cells.csv", format_csv(ctab))
    put("timings.md", f"# Timings: {config.name}\n\n" + _compile_markdown(compile_info)
        + _timings_markdown(ctab))

    pngs = plotter.results() if helper else None  # None: drawn here instead
    plots = pngs is not None or _have("matplotlib")
    rules = tuple(selection_label(r) for r in config.selection)
    md = [f"# {config.name}", ""]
    if config.description:
        md += [config.description.strip(), ""]
    md += ["Cross-validated risk R^CV(T_k) of the pruning sequence T_1 > T_2 > … > T_K "
           "(docs/maths.md §4–5), for each dataset and V. **Tables: mean ± sd over "
           "repeats**, the standard deviation of R^CV across the repeated random "
           "partitions (leave-one-out has one partition, so no ±). "
           + ("**Plots: the same means, with bars of ± 1 SE**, the standard error of R^CV "
              "(docs/maths.md §5, the one the 1-SE rule uses), averaged over the repeats. "
              if plots else "")
           + "α_k: the cost-complexity parameter at which T_k becomes optimal; R(T_k): "
           "resubstitution risk. Generated by `cartjit run`; the long table is "
           "`results.csv`.", ""]
    if not plots:
        md += ["*(matplotlib is not installed: no plots; `pip install \"cartjit[plot]\"`.)*", ""]
    def n_repeats_of(group):
        return len({int(v) for v in group.loc[~group["loo"], "repeat"]})

    sweeps = {}  # dataset -> its groups, where a sweep gives it several tree settings
    for ds, st, group, table, _ in groups:
        sweeps.setdefault(ds, []).append((st, table, n_repeats_of(group)))
    sweeps = {ds: entries for ds, entries in sweeps.items() if len(entries) > 1}
    for ds, st, group, table, title in groups:
        cell = first_cell[(ds, st)]
        d = by_name[ds]
        slug = _slug(cell)
        put(f"summary/{slug}.csv", format_csv(table))
        n_rep = n_repeats_of(group)
        facts = (f"N = {d.n_samples} cases, {d.n_features} features "
                 f"({', '.join(d.feature_names[:8])}{', …' if d.n_features > 8 else ''}"
                 f"{_categorical_text(d)}), {d.task}")
        if ds in sweeps and sweeps[ds][0][0] == st:  # the dataset's first setting
            md += [f"## {ds}", "", facts + f"; {len(sweeps[ds])} tree settings.", "",
                   "The settings side by side: the number of trees K of each pruning "
                   "sequence, the size of T_1, and per V the smallest mean R^CV (± sd over "
                   "the repeats) with the size of that tree. Each setting's own table "
                   "follows.", "", settings_markdown(sweeps[ds])]
        md += [f"### {st}" if ds in sweeps else f"## {title}", "",
               (f"{_settings_text(cell)}" if ds in sweeps else f"{facts}; {_settings_text(cell)}")
               + (f"; {n_rep} repeat{'s' if n_rep != 1 else ''} of each random partition"
                  if n_rep else "") + (", stratified" if cell.stratify else "") + ".", ""]
        md.append(f"R^CV(T_k) per V: mean ± sd over the {n_rep} repeats" if n_rep > 1 else
                  "R^CV(T_k) per V (one partition each, so no ±)")
        md.append("")
        md.append(summary_markdown(table, n_rep, rules=rules, max_rows=max_rows))
        if plots:
            if pngs is not None:
                put(f"plots/{slug}.png", pngs[(ds, st)])
            else:
                png = io.BytesIO()
                plot_group(table, f"{title}: N = {d.n_samples}", png)
                put(f"plots/{slug}.png", png.getvalue())
            md += ["", f"![{title}: R^CV, mean over repeats, bars ± 1 SE](plots/{slug}.png)",
                   "", "*Plot: mean R^CV over the repeats; bars ± 1 SE (mean standard error "
                   "over the repeats), not the ± sd of the table.*"]
        md.append("")
    put("summary.md", "\n".join(md))
    return written
