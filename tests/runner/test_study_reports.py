"""The reports of a methods study: the comparison against the baseline, the ranks and the
tests across datasets, the CSV/LaTeX tables, the plots; the literature's data by name.

The expected numbers are computed here from results.csv with numpy and SciPy, not by
the module under test. One small study (two cheap trees, a bundled real data set of the
literature and a generator's fresh samples, 6 replications) runs once for the file.
"""
from __future__ import annotations

import csv
import importlib.util
import textwrap

import numpy as np
import pandas as pd
import pytest

from cartjit.datasets import make_waveform
from cartjit.experiments import study_reports
from cartjit.experiments.protocols import generate, generator_function
from cartjit.experiments.run import run_experiment

HAVE_SCIPY = importlib.util.find_spec("scipy") is not None
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None

STUDY = """\
[experiment]
name = "reports"

[study]
baseline = "deep"

[methods.stump]
estimator = "CARTClassifier"
max_depth = 1

[methods.deep]
estimator = "CARTClassifier"
max_depth = 4

[methods.mid]
estimator = "CARTClassifier"
max_depth = 2

[protocol]
kind = "split"
test_fraction = 0.2
n_repeats = 6
seed = 11

[[datasets]]
bundled = "glass"

[[datasets]]
name = "wave"
generator = "waveform"
n = 120
test_n = 300
protocol = { kind = "fresh", n_repeats = 6, seed = 5 }

[[datasets]]
bundled = "iris"
"""

#: The files that must not depend on the backend or the number of workers.
DETERMINISTIC = ("summary.md", "summary.csv", "summary/score.csv", "summary/score.tex",
                 "summary/paired.csv", "summary/paired.tex", "summary/ranks.csv",
                 "summary/ranks.tex")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    cfg = root / "study.toml"
    cfg.write_text(STUDY, encoding="utf-8")
    run_experiment(cfg, root / "a", backend="serial", quiet=True)
    return root


def long_table(out):
    return pd.read_csv(out / "results.csv")


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_generators_of_the_literature_plug_in_by_name():
    assert generator_function("waveform") is make_waveform
    X, y = generate("waveform", 50, {"noise": 1.0}, 3)
    X0, y0 = make_waveform(50, noise=1.0, random_state=3, return_X_y=True)
    assert X.shape == (50, 21) and X.flags.c_contiguous
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_paired_differences_and_wins_against_the_baseline(study):
    df = long_table(study / "a")
    rows = read_csv(study / "a" / "summary" / "paired.csv")
    assert [(r["dataset"], r["method"], r["baseline"]) for r in rows] == [
        (d, m, "deep") for d in ("glass", "wave", "iris") for m in ("stump", "mid")]
    for r in rows:
        sub = df[df["dataset"] == r["dataset"]]
        base = sub[sub["method"] == "deep"].set_index("replication")["score"]
        other = sub[sub["method"] == r["method"]].set_index("replication")["score"]
        d = (other - base.loc[other.index]).to_numpy()
        assert int(r["n"]) == d.size == 6
        assert float(r["mean_diff"]) == pytest.approx(d.mean(), abs=1e-15)
        assert float(r["se_diff"]) == pytest.approx(d.std(ddof=1) / np.sqrt(6), abs=1e-15)
        assert (int(r["wins"]), int(r["ties"]), int(r["losses"])) == (
            int((d < 0).sum()), int((d == 0).sum()), int((d > 0).sum()))
    md = (study / "a" / "summary.md").read_text()
    assert "**Baseline: deep**" in md
    assert md.count("Against the baseline deep (test error, paired by replication):") == 3


def test_ranks_and_friedman_across_the_datasets(study):
    df = long_table(study / "a")
    means = df.groupby(["dataset", "method"], sort=False)["score"].mean().unstack()
    means = means.loc[["glass", "wave", "iris"], ["stump", "deep", "mid"]]
    from_file = pd.read_csv(study / "a" / "summary" / "ranks.csv", index_col="dataset")
    # ranks by hand: 1 + the number of lower scores + half the number of equal others
    v = means.to_numpy()
    by_hand = np.array([[1 + (row < x).sum() + ((row == x).sum() - 1) / 2 for x in row]
                        for row in v])
    np.testing.assert_array_equal(from_file.loc[["glass", "wave", "iris"]].to_numpy(), by_hand)
    np.testing.assert_allclose(from_file.loc["average rank"].to_numpy(), by_hand.mean(axis=0))
    md = (study / "a" / "summary.md").read_text()
    assert "## Across the 3 datasets" in md
    if not HAVE_SCIPY:
        assert "SciPy is not installed" in md
        return
    from scipy import stats
    k, n = 3, 3
    r = by_hand.mean(axis=0)
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4)
    assert f"χ²_F = {chi2:.3f}" in md
    q = stats.studentized_range.ppf(0.95, k, np.inf) / np.sqrt(2)
    cd = q * np.sqrt(k * (k + 1) / (6 * n))
    assert f"CD = {cd:.3f} (q_α = {q:.3f}, k = 3 methods, N = 3 datasets)" in md
    assert "Wilcoxon's signed-rank test of each method against deep" in md


def test_tables_as_latex_and_plots_per_dataset(study):
    out = study / "a"
    tex = (out / "summary" / "score.tex").read_text()
    assert tex.startswith("\\begin{tabular}{llll}\n\\toprule\ndataset & stump & deep & mid")
    assert "$\\pm$" in tex and "\\bottomrule" in tex
    score = read_csv(out / "summary" / "score.csv")
    df = long_table(out)
    for r in score:
        s = df[(df["dataset"] == r["dataset"]) & (df["method"] == r["method"])]["score"]
        assert float(r["score_mean"]) == pytest.approx(s.mean(), abs=1e-15)
    if not HAVE_MPL:
        return
    for name in ("glass", "wave", "iris"):
        assert (out / "plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "plots" / "cd_diagram.png").exists() == HAVE_SCIPY


def test_reports_are_identical_for_another_backend_and_worker_count(study):
    run_experiment(study / "study.toml", study / "b", backend="threads", workers=2,
                   quiet=True)
    for rel in DETERMINISTIC + tuple(f"plots/{p}.png" for p in ("glass", "wave", "iris")
                                     if HAVE_MPL):
        assert (study / "a" / rel).read_bytes() == (study / "b" / rel).read_bytes(), rel


def test_without_scipy_the_report_says_so_and_writes_the_rest(study, monkeypatch, tmp_path):
    real = study_reports._have
    monkeypatch.setattr(study_reports, "_have", lambda m: False if m == "scipy" else real(m))
    run_experiment(study / "study.toml", tmp_path / "c", quiet=True, backend="serial")
    md = (tmp_path / "c" / "summary.md").read_text()
    assert md.count("SciPy is not installed") == 1
    assert "Friedman's test:" not in md and not (tmp_path / "c" / "plots" /
                                                  "cd_diagram.png").exists()
    for rel in ("summary/ranks.csv", "summary/paired.csv", "summary/score.tex"):
        assert (tmp_path / "c" / rel).read_bytes() == (study / "a" / rel).read_bytes()


def test_one_dataset_has_no_comparison_across_datasets(tmp_path):
    cfg = tmp_path / "one.toml"
    cfg.write_text(textwrap.dedent("""\
        [methods.a]
        estimator = "CARTClassifier"
        max_depth = 1
        [methods.b]
        estimator = "CARTClassifier"
        max_depth = 3
        [protocol]
        kind = "split"
        test_fraction = 0.2
        n_repeats = 3
        [[datasets]]
        bundled = "iris"
        """), encoding="utf-8")
    run_experiment(cfg, tmp_path / "o", quiet=True, backend="serial")
    md = (tmp_path / "o" / "summary.md").read_text()
    assert "**Baseline: a**" in md and "Across the" not in md  # the first method by default
    assert not (tmp_path / "o" / "summary" / "ranks.csv").exists()
    assert read_csv(tmp_path / "o" / "summary" / "paired.csv")[0]["baseline"] == "a"


@pytest.mark.parametrize("name, methods, n_datasets", [
    ("breiman1996", ["cart", "bagging"], 6),
    ("breiman2001", ["tree", "bagging", "forest"], 13),
])
def test_the_published_study_configs_read(name, methods, n_datasets):
    from pathlib import Path

    from cartjit.experiments.config import read_config
    config = read_config(Path(__file__).resolve().parents[2] / "experiments" / f"{name}.toml")
    assert [m.label for m in config.methods] == methods
    assert config.baseline == methods[0] and len(config.datasets) == n_datasets
    assert all(d.protocol["n_repeats"] == 100 for d in config.datasets)
    if name == "breiman1996":  # the paper's protocol: 50 CV-pruned trees, 10 % test sets
        assert config.methods[1].params == {"n_estimators": 50, "prune": "cv",
                                            "prune_selection": "min", "voting": "vote"}
        assert {d.protocol["kind"] for d in config.datasets} == {"split", "fresh"}
        assert all(d.protocol["test_fraction"] == 0.1 for d in config.datasets
                   if d.protocol["kind"] == "split")


def test_means_equal_in_exact_arithmetic_tie_in_the_ranks():
    # 0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in their last bit as doubles
    assert (0.1 + 0.2 + 0.3) != (0.3 + 0.2 + 0.1)
    rows = []
    for ds, a, b, c in (("d1", [0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.5, 0.5, 0.5]),
                        ("d2", [0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3])):
        for method, scores in (("a", a), ("b", b), ("c", c)):
            rows += [{"dataset": ds, "method": method, "replication": r, "score": v}
                     for r, v in enumerate(scores)]
    cmp = study_reports.study_comparison(pd.DataFrame(rows), ["d1", "d2"], "a")
    assert cmp["ranks"].loc["d1"].tolist() == [1.5, 1.5, 3.0]
    assert cmp["ranks"].loc["d2"].tolist() == [1.0, 2.0, 3.0]
    paired = cmp["paired"].set_index(["dataset", "method"])
    assert paired.loc[("d1", "b"), ["wins", "ties", "losses"]].tolist() == [1, 1, 1]
