"""The CART book's waveform experiment (Breiman et al. 1984, §3.4 and §2.6.2):
R^CV(T_k) against R^ts(T_k) along the pruning sequence.

One learning sample of 300 waveform cases, a test sample of 5,000: the tree grown on the
learning sample, its weakest-link sequence T_1 > T_2 > ... > {t_1}, the 10-fold
cross-validation estimate R^CV(T_k) ± SE of each subtree (from the learning sample only)
and the test-sample estimate R^ts(T_k) ± SE (from the 5,000 test cases), side by side.
Then the same over ``--repeats`` fresh learning samples, to see how far the CV estimate
of the chosen tree lies from its test-sample error on average.

    python experiments/cart_waveform.py --out experiments/results/cart_waveform

writes ``sequence.csv`` and ``sequence.md`` (the first learning sample's sequence),
``repeats.csv`` and ``repeats.md`` (one row per learning sample) and, with matplotlib,
``sequence.png``. Seeds are fixed: the files are the same on every run.
"""
from __future__ import annotations

import argparse
import io
import os

import numpy as np
import pandas as pd

from cartjit import CARTClassifierCV
from cartjit.datasets import make_waveform
from cartjit.experiments.compare import format_table

N_LEARN, N_TEST, SEED = 300, 5000, 1984


def one_sample(r, selection="1se"):
    """The joined table of learning sample ``r`` (seeds derived from SEED and r)."""
    X, y = make_waveform(N_LEARN, random_state=SEED + 2 * r, return_X_y=True)
    Xt, yt = make_waveform(N_TEST, random_state=SEED + 2 * r + 1, return_X_y=True)
    est = CARTClassifierCV(cv=10, selection=selection, random_state=SEED + r).fit(X, y)
    cv = est.cv_results_
    ts = est.test_sample_path(Xt, yt)
    table = pd.DataFrame({"k": cv["k"], "n_leaves": cv["n_leaves"], "alpha": cv["alpha"],
                          "R_resub": cv["risk"], "R_cv": cv["cv_risk"], "R_cv_se": cv["cv_se"],
                          "R_ts": ts.loc[cv.index, "test_risk"],
                          "R_ts_se": ts.loc[cv.index, "test_se"],
                          "selected_1se": cv["selected"]})
    cv_risk = table["R_cv"].to_numpy()
    k_min = int(np.flatnonzero(cv_risk == cv_risk.min())[-1])  # ties: the smaller tree
    table["selected_min"] = np.arange(len(table)) == k_min
    return table.reset_index(drop=True)


def _markdown(table):
    lines = ["| k | leaves | α_k | R(T_k) | R^CV(T_k) ± SE | R^ts(T_k) ± SE | chosen |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for _, r in table.iterrows():
        chosen = ", ".join(name for name, col in (("1-SE", "selected_1se"),
                                                  ("min", "selected_min")) if r[col])
        lines.append(f"| {int(r['k'])} | {int(r['n_leaves'])} | {r['alpha']:.4f} | "
                     f"{r['R_resub']:.3f} | {r['R_cv']:.3f} ± {r['R_cv_se']:.3f} | "
                     f"{r['R_ts']:.3f} ± {r['R_ts_se']:.3f} | {chosen} |")
    return "\n".join(lines) + "\n"


def _plot(table, path):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.4, 4.0), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    x = table["n_leaves"].to_numpy()
    ax.errorbar(x, table["R_cv"], yerr=table["R_cv_se"], fmt="o-", ms=3, capsize=2,
                label="$R^{CV}(T_k)$, 10-fold, ± 1 SE")
    ax.errorbar(x * 1.02, table["R_ts"], yerr=table["R_ts_se"], fmt="s-", ms=3, capsize=2,
                label="$R^{ts}(T_k)$, 5,000 test cases, ± 1 SE")
    ax.plot(x, table["R_resub"], ":", color="grey", label="$R(T_k)$ (resubstitution)")
    ax.set_xscale("log")
    ax.set_xlabel("leaves of $T_k$")
    ax.set_ylabel("misclassification rate")
    ax.set_title(f"Waveform: {N_LEARN} learning cases, {N_TEST:,} test cases", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--repeats", type=int, default=20,
                        help="fresh learning samples for the summary (default 20)")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    first = one_sample(0)
    first.to_csv(os.path.join(args.out, "sequence.csv"), index=False,
                 float_format="%.17g", lineterminator="\n")
    with open(os.path.join(args.out, "sequence.md"), "w", encoding="utf-8") as fh:
        fh.write(_markdown(first))
    rows = []
    for r in range(args.repeats):
        t = first if r == 0 else one_sample(r)
        row = {"sample": r, "T1_leaves": int(t["n_leaves"].iloc[0])}
        for rule in ("1se", "min"):
            c = t[t[f"selected_{rule}"]].iloc[0]
            row[f"{rule}_leaves"] = int(c["n_leaves"])
            row[f"{rule}_R_cv"] = float(c["R_cv"])
            row[f"{rule}_R_ts"] = float(c["R_ts"])
        best = t.iloc[int(np.argmin(t["R_ts"].to_numpy()))]
        row["best_ts_leaves"] = int(best["n_leaves"])
        row["best_R_ts"] = float(best["R_ts"])
        rows.append(row)
    rep = pd.DataFrame(rows)
    rep.to_csv(os.path.join(args.out, "repeats.csv"), index=False, float_format="%.17g",
               lineterminator="\n")
    mean = rep.mean(numeric_only=True)
    se = rep.std(ddof=1, numeric_only=True) / np.sqrt(len(rep))
    summary = pd.DataFrame({
        "quantity": ["leaves of the chosen tree", "R^CV of the chosen tree",
                     "R^ts of the chosen tree", "R^CV - R^ts of the chosen tree"],
        "1-SE rule": [f"{mean['1se_leaves']:.1f} ± {se['1se_leaves']:.1f}",
                      f"{mean['1se_R_cv']:.4f} ± {se['1se_R_cv']:.4f}",
                      f"{mean['1se_R_ts']:.4f} ± {se['1se_R_ts']:.4f}",
                      _diff(rep, "1se")],
        "minimum rule": [f"{mean['min_leaves']:.1f} ± {se['min_leaves']:.1f}",
                         f"{mean['min_R_cv']:.4f} ± {se['min_R_cv']:.4f}",
                         f"{mean['min_R_ts']:.4f} ± {se['min_R_ts']:.4f}",
                         _diff(rep, "min")]})
    with open(os.path.join(args.out, "repeats.md"), "w", encoding="utf-8") as fh:
        fh.write(f"Over {len(rep)} learning samples of {N_LEARN} cases (each with its own "
                 f"test sample of {N_TEST:,}), mean ± SE:\n\n" + format_table(summary)
                 + f"\nThe tree of smallest R^ts in each sequence: {mean['best_ts_leaves']:.1f}"
                 f" leaves and R^ts = {mean['best_R_ts']:.4f} on average.\n")
    try:
        _plot(first, os.path.join(args.out, "sequence.png"))
    except ImportError:
        print("matplotlib is not installed: no sequence.png")
    print(_markdown(first))
    print(open(os.path.join(args.out, "repeats.md"), encoding="utf-8").read())


def _diff(rep, rule):
    d = rep[f"{rule}_R_cv"] - rep[f"{rule}_R_ts"]
    return f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f}"


if __name__ == "__main__":
    main()
