"""cartjit.experiments.compare: the statistics of a comparative study, checked against
independent references.

- Demšar (2006, JMLR 7, 1-30): the worked example of §3.2.2 (Table 6: four C4.5 variants
  on 14 data sets; average ranks 3.143, 2.000, 2.893, 1.964; χ²_F = 9.28, F_F = 3.69 with
  3 and 39 degrees of freedom, rejected at α = 0.05 since F(3, 39) = 2.85; CD = 1.25 at
  α = 0.05 and 1.12 at α = 0.10, where C4.5 is worse than C4.5+m and C4.5+m+cf and
  C4.5+cf belongs to neither group), the Wilcoxon example of §3.1.3 (Table 2: R⁺ = 93,
  R⁻ = 12) and the Nemenyi critical values of Table 5(a) for k = 2..10;
- SciPy: ``rankdata`` for the ranks with ties, ``friedmanchisquare`` for the statistic,
  ``wilcoxon`` for the signed-rank statistic;
- small tables computed by hand (ties in ranks and in paired differences), the standard
  library's ``statistics.stdev`` for the standard errors.
"""
from __future__ import annotations

import io
import math
import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit.experiments import compare as C

BASELINES = Path(__file__).resolve().parent / "baseline_images"

# ---------------------------------------------------------------- Demšar (2006), Table 6

DEMSAR_METHODS = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
DEMSAR_DATASETS = ["adult (sample)", "breast cancer", "breast cancer wisconsin", "cmc",
                   "ionosphere", "iris", "liver disorders", "lung cancer", "lymphography",
                   "mushroom", "primary tumor", "rheum", "voting", "wine"]
# AUC as printed (three decimals; higher is better)
DEMSAR_AUC = [
    [0.763, 0.768, 0.771, 0.798], [0.599, 0.591, 0.590, 0.569],
    [0.954, 0.971, 0.968, 0.967], [0.628, 0.661, 0.654, 0.657],
    [0.882, 0.888, 0.886, 0.898], [0.936, 0.931, 0.916, 0.931],
    [0.661, 0.668, 0.609, 0.685], [0.583, 0.583, 0.563, 0.625],
    [0.775, 0.838, 0.866, 0.875], [1.000, 1.000, 1.000, 1.000],
    [0.940, 0.962, 0.965, 0.962], [0.619, 0.666, 0.614, 0.669],
    [0.972, 0.981, 0.975, 0.975], [0.957, 0.978, 0.946, 0.970],
]
# the ranks printed in parentheses beside them
DEMSAR_RANKS = [
    [4, 3, 2, 1], [1, 2, 3, 4], [4, 1, 2, 3], [4, 1, 3, 2], [4, 2, 3, 1],
    [1, 2.5, 4, 2.5], [3, 2, 4, 1], [2.5, 2.5, 4, 1], [4, 3, 2, 1],
    [2.5, 2.5, 2.5, 2.5], [4, 2.5, 1, 2.5], [3, 2, 4, 1], [4, 1, 2, 3], [3, 1, 4, 2],
]
VOTING = DEMSAR_DATASETS.index("voting")

# Table 5(a): q_0.05 and q_0.10 of the Nemenyi test for k = 2..10
NEMENYI_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
NEMENYI_Q10 = [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]


def demsar(table):
    return pd.DataFrame(table, index=pd.Index(DEMSAR_DATASETS, name="dataset"),
                        columns=DEMSAR_METHODS, dtype=float)


def long_from_matrix(matrix, score="error"):
    """One row per (dataset, method), replication 0: a matrix as a study's long table."""
    rows = [{"dataset": d, "method": m, "replication": 0, score: float(matrix.loc[d, m])}
            for d in matrix.index for m in matrix.columns]
    return pd.DataFrame(rows)


def study(seed=0, datasets=("waveform", "glass", "diabetes"), methods=("cart", "bag", "rf"),
          replications=6):
    rng = np.random.default_rng(seed)
    rows = []
    for d in datasets:
        for r in range(replications):
            for j, m in enumerate(methods):
                rows.append({"dataset": d, "method": m, "replication": r,
                             "error": 0.3 - 0.03 * j + rng.normal(0, 0.02),
                             "size": int(rng.integers(3, 30))})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- ranks and Friedman

def test_demsar_ranks_of_the_printed_auc():
    """Ranking the printed AUCs (higher is better) gives the paper's ranks on every data set
    but voting, where C4.5+cf and C4.5+m+cf both print 0.975 (the paper ranked the
    unrounded values 2 and 3; the printed ones tie at 2.5)."""
    ranks = C.rank_matrix(demsar(DEMSAR_AUC), lower_is_better=False)
    expected = demsar(DEMSAR_RANKS)
    others = [d for d in DEMSAR_DATASETS if d != "voting"]
    pd.testing.assert_frame_equal(ranks.loc[others], expected.loc[others])
    assert ranks.loc["voting"].tolist() == [4.0, 1.0, 2.5, 2.5]
    assert expected.loc["voting"].tolist() == [4.0, 1.0, 2.0, 3.0]


def test_demsar_friedman_from_the_paper_s_ranks():
    """§3.2.2: average ranks 3.143, 2.000, 2.893, 1.964; χ²_F = 9.28; F_F = 3.69 with 3
    and 39 degrees of freedom; the critical F(3, 39) at α = 0.05 is 2.85, so rejected."""
    stats = pytest.importorskip("scipy.stats")
    # the ranks are themselves scores (lower is better) that rank to themselves
    result = C.friedman_test(demsar(DEMSAR_RANKS))
    assert result.average_ranks.index.tolist() == DEMSAR_METHODS
    np.testing.assert_allclose(result.average_ranks, [3.143, 2.000, 2.893, 1.964], atol=5e-4)
    assert (result.n_datasets, result.n_methods) == (14, 4)
    assert round(result.chi2, 2) == 9.28
    assert round(result.f, 2) == 3.69
    assert (result.df1, result.df2) == (3, 39)
    assert round(float(stats.f.ppf(0.95, 3, 39)), 2) == 2.85
    assert result.f_pvalue < 0.05
    assert 0.01 < result.chi2_pvalue < 0.05  # P(χ²_3 ≥ 9.28) = 0.026


def test_demsar_friedman_from_the_printed_auc():
    """The printed AUCs tie on voting: the ranks of C4.5+cf and C4.5+m+cf move by 0.5/14
    each, which the statistic follows (computed by hand from those ranks)."""
    pytest.importorskip("scipy")
    result = C.friedman_test(demsar(DEMSAR_AUC), lower_is_better=False)
    r = np.array([44, 28, 41, 27]) / 14  # rank sums with voting's tie
    np.testing.assert_allclose(result.average_ranks, r, rtol=1e-12)
    chi2 = 12 * 14 / (4 * 5) * (np.sum(r ** 2) - 4 * 25 / 4)
    assert result.chi2 == pytest.approx(chi2, rel=1e-12)
    assert result.f == pytest.approx(13 * chi2 / (14 * 3 - chi2), rel=1e-12)


def test_ranks_with_ties_against_scipy_rankdata():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(20):
        scores = rng.integers(0, 4, size=(rng.integers(1, 6), rng.integers(2, 7))) / 8
        ranks = C.rank_matrix(scores).to_numpy()
        np.testing.assert_array_equal(ranks, stats.rankdata(scores, axis=1))
        ranks_high = C.rank_matrix(scores, lower_is_better=False).to_numpy()
        np.testing.assert_array_equal(ranks_high, stats.rankdata(-scores, axis=1))


def test_friedman_by_hand_with_ties():
    """Three datasets, three methods, ties on two datasets:
    ranks (1, 2, 3), (2.5, 2.5, 1), (3, 1.5, 1.5); R = (6.5, 6, 5.5)/3;
    χ²_F = 12·3/(3·4) [Σ R_j² − 3·4²/4] = 3 (108.5/9 − 12) = 1/6;
    F_F = 2 (1/6) / (3·2 − 1/6) = 2/35."""
    pytest.importorskip("scipy")
    scores = pd.DataFrame([[0.1, 0.2, 0.3], [0.2, 0.2, 0.1], [0.3, 0.1, 0.1]],
                          columns=["a", "b", "c"])
    ranks = C.rank_matrix(scores)
    assert ranks.to_numpy().tolist() == [[1, 2, 3], [2.5, 2.5, 1], [3, 1.5, 1.5]]
    result = C.friedman_test(scores)
    np.testing.assert_allclose(result.average_ranks, [6.5 / 3, 2.0, 5.5 / 3])
    assert result.chi2 == pytest.approx(1 / 6, rel=1e-12)
    assert result.f == pytest.approx(2 / 35, rel=1e-12)


def test_friedman_statistic_against_scipy():
    """Without ties, χ²_F is scipy's friedmanchisquare; with ties, scipy divides by
    1 − Σ(t³ − t) / (N k (k² − 1)) (t the sizes of the tied groups), which we undo by hand."""
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for n, k in [(5, 3), (14, 4), (30, 6), (3, 10)]:
        scores = rng.random((n, k))
        ours = C.friedman_test(scores)
        theirs = stats.friedmanchisquare(*scores.T)
        assert ours.chi2 == pytest.approx(theirs.statistic, rel=1e-10)
        assert ours.chi2_pvalue == pytest.approx(theirs.pvalue, rel=1e-8)
        tied = rng.integers(0, 3, size=(n, k)).astype(float)
        tied[0] = np.arange(k)  # one data set without ties: scipy's correction is not 0
        groups = sum(float(np.sum(c ** 3 - c)) for row in tied
                     for c in [np.unique(row, return_counts=True)[1]])
        correction = 1 - groups / (n * k * (k * k - 1))
        assert C.friedman_test(tied).chi2 == pytest.approx(
            stats.friedmanchisquare(*tied.T).statistic * correction, rel=1e-10)


def test_friedman_edge_cases():
    pytest.importorskip("scipy")
    same_order = np.tile([0.1, 0.2, 0.3], (4, 1))  # every data set agrees
    result = C.friedman_test(same_order)
    assert result.chi2 == pytest.approx(4 * 2)  # N (k − 1), the largest value
    assert result.f == math.inf and result.f_pvalue == 0.0
    all_tied = np.full((4, 3), 0.2)
    result = C.friedman_test(all_tied)
    assert result.chi2 == 0.0 and result.f == 0.0 and result.chi2_pvalue == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2 datasets"):
        C.friedman_test(np.array([[0.1, 0.2]]))
    with pytest.raises(ValueError, match="at least 2 methods"):
        C.friedman_test(np.array([[0.1], [0.2]]))


# ---------------------------------------------------------------- Nemenyi

@pytest.mark.parametrize("alpha, table", [(0.05, NEMENYI_Q05), (0.10, NEMENYI_Q10)])
def test_nemenyi_q_against_demsar_table_5(alpha, table):
    pytest.importorskip("scipy")
    for k, q in zip(range(2, 11), table):
        # the table has three decimals (its k = 3 and k = 7 entries are 0.0007 off the
        # studentized range: 2.3437 and 2.9483)
        assert C.nemenyi_q(k, alpha) == pytest.approx(q, abs=1e-3), k


def test_demsar_critical_difference_and_groups():
    pytest.importorskip("scipy")
    ranks = C.average_ranks(demsar(DEMSAR_RANKS))
    cd05 = C.critical_difference(4, 14, 0.05)
    cd10 = C.critical_difference(4, 14, 0.10)
    assert round(cd05, 2) == 1.25
    assert round(cd10, 2) == 1.12
    for k, q in zip(range(2, 11), NEMENYI_Q05):
        assert C.critical_difference(k, 10) == pytest.approx(
            q * math.sqrt(k * (k + 1) / 60), abs=1e-3 * math.sqrt(k * (k + 1) / 60))
    # α = 0.05: the best and the worst differ by 1.179 < 1.25, no difference found
    assert C.nemenyi_groups(ranks, cd05) == [("C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5")]
    # α = 0.10: C4.5 is worse than C4.5+m and C4.5+m+cf; C4.5+cf sits in both groups
    assert C.nemenyi_groups(ranks, cd10) == [("C4.5+m+cf", "C4.5+m", "C4.5+cf"),
                                             ("C4.5+cf", "C4.5")]


def test_nemenyi_groups_by_hand():
    ranks = pd.Series({"a": 1.0, "b": 1.4, "c": 2.2, "d": 3.0, "e": 3.1})
    assert C.nemenyi_groups(ranks, 1.0) == [("a", "b"), ("b", "c"), ("c", "d", "e")]
    assert C.nemenyi_groups(ranks, 0.05) == []
    assert C.nemenyi_groups(ranks, 5.0) == [("a", "b", "c", "d", "e")]
    # exactly CD apart is a significant difference ("differ by at least the CD")
    assert C.nemenyi_groups({"x": 1.0, "y": 2.0}, 1.0) == []


# ---------------------------------------------------------------- Wilcoxon

# Table 2: AUC of C4.5 and C4.5+m, in thousandths so that equal differences are exactly
# equal (0.005 on adult and iris)
TABLE2_C45 = [763, 599, 954, 628, 882, 936, 661, 583, 775, 1000, 940, 619, 972, 957]
TABLE2_C45M = [768, 591, 971, 661, 888, 931, 668, 583, 838, 1000, 962, 666, 981, 978]


def test_wilcoxon_demsar_table_2():
    """§3.1.3: d = C4.5+m − C4.5; R⁺ = 93, R⁻ = 12 (the two zero differences split);
    T = 12 <= 21, the exact critical value for N = 14 at α = 0.05: rejected."""
    stats = pytest.importorskip("scipy.stats")
    matrix = pd.DataFrame({"C4.5": TABLE2_C45, "C4.5+m": TABLE2_C45M},
                          index=DEMSAR_DATASETS, dtype=float)
    result = C.wilcoxon_test(matrix, "C4.5+m", "C4.5")
    assert (result.r_plus, result.r_minus, result.statistic) == (93.0, 12.0, 12.0)
    assert result.n_datasets == 14 and result.zero_method == "zsplit"
    assert result.pvalue < 0.05
    d = np.array(TABLE2_C45M, float) - np.array(TABLE2_C45, float)
    assert result.pvalue == stats.wilcoxon(d, zero_method="zsplit").pvalue
    swapped = C.wilcoxon_test(matrix, "C4.5", "C4.5+m")
    assert (swapped.r_plus, swapped.r_minus) == (12.0, 93.0)


@pytest.mark.parametrize("zero_method", ["zsplit", "wilcox", "pratt"])
def test_wilcoxon_rank_sums_against_scipy(zero_method):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    for _ in range(10):
        a = rng.integers(0, 6, size=12).astype(float)
        b = rng.integers(0, 6, size=12).astype(float)
        if np.all(a == b):
            continue
        # the normal approximation: "auto" runs a permutation test with ties (a second)
        result = C.wilcoxon_test(pd.DataFrame({"a": a, "b": b}), "a", "b",
                                 zero_method=zero_method, method="asymptotic")
        theirs = stats.wilcoxon(a - b, zero_method=zero_method, method="asymptotic")
        assert result.statistic == pytest.approx(theirs.statistic)
        assert result.pvalue == pytest.approx(theirs.pvalue)
        n = np.sum(a != b) if zero_method != "zsplit" else a.size
        # all the ranks, less those of the zeros where they are dropped
        zeros_rank = 0.0
        if zero_method == "pratt":
            zeros_rank = np.sum(stats.rankdata(np.abs(a - b))[a == b])
        total = n * (n + 1) / 2 if zero_method != "pratt" else a.size * (a.size + 1) / 2
        assert result.r_plus + result.r_minus == pytest.approx(total - zeros_rank)


def test_wilcoxon_bad_input():
    pytest.importorskip("scipy")
    m = pd.DataFrame({"a": [0.1, 0.2, 0.3], "b": [0.1, 0.2, 0.3], "c": [0.2, 0.1, 0.4]})
    with pytest.raises(ValueError, match="same score on every dataset"):
        C.wilcoxon_test(m, "a", "b")
    with pytest.raises(ValueError, match="'z' is not a column"):
        C.wilcoxon_test(m, "a", "z")
    with pytest.raises(ValueError, match="zero_method"):
        C.wilcoxon_test(m, "a", "c", zero_method="drop")
    with pytest.raises(ValueError, match="must differ"):
        C.wilcoxon_test(m, "a", "a")


# ---------------------------------------------------------------- within a dataset

def test_summarize_mean_and_se_against_the_standard_library():
    df = study()
    summary = C.summarize(df, ["error", "size"])
    assert summary.columns.tolist() == ["dataset", "method", "n", "error_mean", "error_se",
                                        "size_mean", "size_se"]
    assert summary["dataset"].tolist() == ["waveform"] * 3 + ["glass"] * 3 + ["diabetes"] * 3
    assert summary["method"].tolist() == ["cart", "bag", "rf"] * 3
    for row in summary.itertuples():
        sel = df[(df.dataset == row.dataset) & (df.method == row.method)]
        for m in ("error", "size"):
            values = [float(v) for v in sel[m]]
            assert getattr(row, f"{m}_mean") == pytest.approx(statistics.fmean(values))
            assert getattr(row, f"{m}_se") == pytest.approx(
                statistics.stdev(values) / math.sqrt(len(values)))
        assert row.n == 6
    # default measures: the numeric columns that are not keys
    assert C.summarize(df).columns.tolist() == summary.columns.tolist()


def test_summarize_one_replication_has_no_se():
    df = study(replications=1)
    summary = C.summarize(df, "error")
    assert summary["error_se"].isna().all()
    table = C.mean_se_table(summary, "error", digits=2)
    assert "±" not in "".join(table.to_numpy().ravel())


def test_mean_se_table_by_hand():
    df = pd.DataFrame({"dataset": ["d1"] * 4 + ["d2"] * 4,
                       "method": ["b", "a"] * 4,
                       "replication": [0, 0, 1, 1] * 2,
                       "error": [0.1, 0.2, 0.3, 0.2, 0.5, 0.25, 0.5, 0.25]})
    table = C.mean_se_table(C.summarize(df, "error"), "error", digits=3)
    # d1, b: 0.1 and 0.3 → mean 0.2, sd 0.1414, SE 0.1; d1, a: 0.2 twice → SE 0
    assert table.index.tolist() == ["d1", "d2"] and table.columns.tolist() == ["b", "a"]
    assert table.loc["d1", "b"] == "0.200 ± 0.100"
    assert table.loc["d1", "a"] == "0.200 ± 0.000"
    assert table.loc["d2", "b"] == "0.500 ± 0.000"


def test_paired_differences_by_hand_with_ties_and_tolerance():
    df = pd.DataFrame({
        "dataset": ["d"] * 8,
        "method": ["base"] * 4 + ["new"] * 4,
        # the replications in another order for "new": pairing is by number, not row
        "replication": [0, 1, 2, 3, 3, 2, 1, 0],
        "error": [0.30, 0.20, 0.25, 0.40, 0.41, 0.25, 0.10, 0.20]})
    # d = new − base per replication: 0: −0.10, 1: −0.10, 2: 0, 3: +0.01
    out = C.paired_differences(df, "base")
    assert len(out) == 1
    row = out.iloc[0]
    d = [0.20 - 0.30, 0.10 - 0.20, 0.25 - 0.25, 0.41 - 0.40]
    assert (row["dataset"], row["method"], row["baseline"], row["n"]) == ("d", "new", "base", 4)
    assert row["mean_diff"] == pytest.approx(statistics.fmean(d))
    assert row["se_diff"] == pytest.approx(statistics.stdev(d) / 2)
    assert (row["wins"], row["ties"], row["losses"]) == (2, 1, 1)
    row = C.paired_differences(df, "base", tol=0.02).iloc[0]
    assert (row["wins"], row["ties"], row["losses"]) == (2, 2, 0)


def test_paired_differences_against_a_slow_reference():
    df = study(seed=5)
    out = C.paired_differences(df, "rf")
    assert out["method"].tolist() == ["cart", "bag"] * 3
    for row in out.itertuples():
        base = df[(df.dataset == row.dataset) & (df.method == "rf")]
        other = df[(df.dataset == row.dataset) & (df.method == row.method)]
        d = [float(other[other.replication == r].error.iloc[0])
             - float(base[base.replication == r].error.iloc[0]) for r in range(6)]
        assert row.mean_diff == pytest.approx(statistics.fmean(d))
        assert row.se_diff == pytest.approx(statistics.stdev(d) / math.sqrt(6))
        assert (row.wins, row.ties, row.losses) == (sum(x < 0 for x in d),
                                                    sum(x == 0 for x in d),
                                                    sum(x > 0 for x in d))


def test_unpaired_results_are_refused():
    df = study()
    missing = df.drop(df.index[(df.dataset == "glass") & (df.method == "bag")
                               & (df.replication == 4)])
    with pytest.raises(ValueError, match=r"unpaired results on dataset 'glass': 'bag' lacks "
                                         r"replication\(s\) 4"):
        C.paired_differences(missing, "cart")
    extra = df.drop(df.index[(df.dataset == "glass") & (df.method == "cart")
                             & (df.replication == 2)])
    with pytest.raises(ValueError, match=r"the baseline 'cart' lacks replication\(s\) 2"):
        C.paired_differences(extra, "cart")
    absent = df[~((df.dataset == "diabetes") & (df.method == "rf"))]
    with pytest.raises(ValueError, match="'rf' has no result on dataset 'diabetes'"):
        C.paired_differences(absent, "cart")
    no_base = df[~((df.dataset == "diabetes") & (df.method == "cart"))]
    with pytest.raises(ValueError, match="baseline 'cart' has no result on dataset"):
        C.paired_differences(no_base, "cart")
    twice = pd.concat([df, df.iloc[[0]]])
    with pytest.raises(ValueError, match="same \\(dataset, method, replication\\)"):
        C.paired_differences(twice, "cart")
    with pytest.raises(ValueError, match="baseline 'knn' is not a method"):
        C.paired_differences(df, "knn")
    with pytest.raises(ValueError, match="tol must be"):
        C.paired_differences(df, "cart", tol=-1)


def test_bad_results_get_clear_messages():
    df = study()
    with pytest.raises(TypeError, match="results must be a pandas DataFrame"):
        C.summarize(df.to_dict())
    with pytest.raises(ValueError, match="results is empty"):
        C.summarize(df.iloc[:0])
    with pytest.raises(ValueError, match="no column 'method'"):
        C.summarize(df.drop(columns="method"))
    with pytest.raises(ValueError, match="no column 'mse'"):
        C.score_matrix(df, "mse")
    unnamed = df.astype({"method": object})
    unnamed.loc[4, "method"] = None
    for call in (C.summarize, C.score_matrix, lambda r: C.paired_differences(r, "cart")):
        with pytest.raises(ValueError, match="column 'method' of results has 1 missing"):
            call(unnamed)
    nan = df.copy()
    nan.loc[3, "error"] = np.nan
    with pytest.raises(ValueError, match="'error' of results has 1 value"):
        C.paired_differences(nan, "cart")
    text = df.assign(error=df["error"].astype(str))
    with pytest.raises(TypeError, match="'error' of results must be numeric"):
        C.summarize(text, "error")
    with pytest.raises(ValueError, match="has no result on dataset"):
        C.score_matrix(df[~((df.dataset == "glass") & (df.method == "rf"))])
    with pytest.raises(TypeError, match="columns must be"):
        C.summarize(df, columns=("dataset", "method", "replication"))
    renamed = df.rename(columns={"replication": "split"})
    cols = C.Columns(replication="split")
    assert len(C.paired_differences(renamed, "cart", columns=cols)) == 6
    with pytest.raises(ValueError, match="alpha must be"):
        C.critical_difference(3, 5, alpha=1.5)
    with pytest.raises(ValueError, match="k must be an integer >= 2"):
        C.nemenyi_q(1)
    with pytest.raises(ValueError, match="n_datasets must be"):
        C.critical_difference(3, 0)
    with pytest.raises(ValueError, match="non-finite"):
        C.average_ranks(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="cd must be"):
        C.nemenyi_groups({"a": 1.0, "b": 2.0}, 0)
    with pytest.raises(ValueError, match=r"numbers in \[1, 2\]"):
        C.nemenyi_groups({"a": 1.0, "b": 2.5}, 1.0)


def test_score_matrix_averages_over_replications():
    df = study()
    matrix = C.score_matrix(df)
    assert matrix.index.tolist() == ["waveform", "glass", "diabetes"]
    assert matrix.columns.tolist() == ["cart", "bag", "rf"]
    for d in matrix.index:
        for m in matrix.columns:
            sel = df[(df.dataset == d) & (df.method == m)].error
            assert matrix.loc[d, m] == pytest.approx(statistics.fmean(sel))


# ---------------------------------------------------------------- tables as text

def test_markdown_table_text():
    frame = pd.DataFrame({"method": ["cart", "a|b"], "rank": [1.5, 2.25], "n": [3, 4]})
    assert C.format_table(frame) == ("| method | rank | n |\n"
                                     "|---|---:|---:|\n"
                                     "| cart | 1.5 | 3 |\n"
                                     "| a\\|b | 2.25 | 4 |\n")
    assert C.format_table(frame, digits=1).splitlines()[3] == "| a\\|b | 2.2 | 4 |"


def test_csv_reads_back_to_the_same_doubles():
    summary = C.summarize(study(), ["error", "size"])
    text = C.format_table(summary, "csv")
    back = pd.read_csv(io.StringIO(text))
    pd.testing.assert_frame_equal(back, summary)
    assert text == C.format_table(C.summarize(study(), ["error", "size"]), "csv")


def test_latex_table_escapes_and_rules():
    table = pd.DataFrame({"data_set": ["R&D 50%"], "cart": ["0.200 ± 0.010"]}).set_index(
        "data_set")
    text = C.format_table(table, "latex", caption="Test error", label="tab:error")
    assert text.splitlines() == [
        r"\begin{table}[htbp]", r"\centering", r"\caption{Test error}",
        r"\label{tab:error}", r"\begin{tabular}{ll}", r"\toprule",
        r"data\_set & cart \\", r"\midrule", r"R\&D 50\% & 0.200 $\pm$ 0.010 \\",
        r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    bare = C.format_table(pd.DataFrame({"x": [0.5]}), "latex")
    assert bare.splitlines()[0] == r"\begin{tabular}{r}"
    with pytest.raises(ValueError, match="fmt must be"):
        C.format_table(table, "html")
    with pytest.raises(ValueError, match="caption is for fmt='latex'"):
        C.format_table(table, "markdown", caption="x")


# ---------------------------------------------------------------- without SciPy

def test_without_scipy(monkeypatch):
    """SciPy absent: the tests say how to install it; the rest works."""
    for name in list(sys.modules):
        if name == "scipy" or name.startswith("scipy."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    matrix = demsar(DEMSAR_RANKS)
    for call in (lambda: C.friedman_test(matrix), lambda: C.nemenyi_q(4),
                 lambda: C.critical_difference(4, 14),
                 lambda: C.wilcoxon_test(matrix, "C4.5", "C4.5+m")):
        with pytest.raises(ImportError, match=r"pip install 'cartjit\[stats\]'"):
            call()
    np.testing.assert_allclose(C.average_ranks(matrix), [3.143, 2.0, 2.893, 1.964], atol=5e-4)
    df = study()
    assert len(C.summarize(df)) == 9 and len(C.paired_differences(df, "cart")) == 6
    text = C.comparison_markdown(df, "error", "cart")
    assert "The tests need SciPy" in text and "cartjit[stats]" in text


# ---------------------------------------------------------------- the whole comparison

def test_comparison_markdown_of_demsar_s_example():
    pytest.importorskip("scipy")
    df = long_from_matrix(demsar(DEMSAR_RANKS), "rank")
    text = C.comparison_markdown(df, "rank", "C4.5", digits=2)
    assert "χ²_F = 9.28 (df 3" in text and "F_F = 3.69 (df 3, 39" in text
    assert "CD = 1.25" in text and "q_α = 2.569" in text
    assert "{C4.5+m+cf, C4.5+m, C4.5+cf, C4.5}" in text
    assert "| C4.5+m+cf | 1.96 |" in text and "| C4.5 | 3.14 |" in text
    # one replication per dataset: the means have no SE and the pairs none either
    assert "| adult (sample) | 4.00 | 3.00 | 2.00 | 1.00 |" in text
    assert "| adult (sample) | -1.00 (1/0/0) | -2.00 (1/0/0) | -3.00 (1/0/0) |" in text
    # Wilcoxon of C4.5+m against C4.5 on the ranks, by hand: d = rank(C4.5+m) − rank(C4.5)
    # has two zeros (lung cancer, mushroom: ranks 1, 2), five |d| = 1 (ranks 3-7, 5 each),
    # two 1.5 (8.5), two 2 (10.5), three 3 (13); d > 0 on breast cancer (1) and iris
    # (1.5): R+ = 5 + 8.5 + (1 + 2)/2 = 15, R- = 105 − 15 = 90
    assert "| C4.5+m | 15.00 | 90.00 | 15.00 |" in text
    assert C.comparison_markdown(df, "rank", "C4.5") == C.comparison_markdown(
        df, "rank", "C4.5")


# ---------------------------------------------------------------- plots

def _lines(ax, prefix):
    return {line.get_gid(): line for line in ax.lines
            if (line.get_gid() or "").startswith(prefix)}


def test_cd_diagram_draws_ranks_groups_and_cd(tmp_path):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    pytest.importorskip("scipy")
    from references.images import baseline_style, check_image

    ranks = C.average_ranks(demsar(DEMSAR_RANKS))
    cd = C.critical_difference(4, 14, 0.10)
    with baseline_style():
        ax = C.cd_diagram(ranks, cd, title="Demšar (2006), Table 6, α = 0.10")
        axis = _lines(ax, "cd-axis")["cd-axis"]
        assert axis.get_xdata().tolist() == [1, 4]
        bar = _lines(ax, "cd-bar")["cd-bar"]
        assert abs(bar.get_xdata()[0] - bar.get_xdata()[1]) == pytest.approx(cd)
        methods = _lines(ax, "cd-method-")
        for i, name in enumerate(DEMSAR_METHODS):
            x = methods[f"cd-method-{i}"].get_xdata()
            assert x[0] == pytest.approx(ranks[name])
            # the better half ends on the right (ranks reversed: towards rank 1)
            assert (x[-1] < 1) == (name in ("C4.5+m+cf", "C4.5+m"))
        labels = {t.get_gid(): t.get_text() for t in ax.texts
                  if (t.get_gid() or "").startswith("cd-label-")}
        assert labels["cd-label-0"].strip() == "(3.14) C4.5"
        assert labels["cd-label-3"].strip() == "C4.5+m+cf (1.96)"
        groups = _lines(ax, "cd-group-")
        assert len(groups) == 2
        spans = sorted((min(g.get_xdata()), max(g.get_xdata())) for g in groups.values())
        assert spans[0][0] < 1.964 and 2.893 < spans[0][1] < 3.143  # m+cf .. cf
        assert 1.964 < spans[1][0] < 2.893 and spans[1][1] > 3.143  # cf .. C4.5
        lo, hi = ax.get_xlim()
        assert lo > hi  # the best (lowest) rank on the right
        check_image(ax, "cd_diagram_demsar", tmp_path, BASELINES)


def test_plot_dataset_draws_mean_and_se():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    summary = C.summarize(study(), ["error"])
    ax = C.plot_dataset(summary, "glass")
    rows = summary[summary.dataset == "glass"]
    for j, (mu, se) in enumerate(zip(rows.error_mean, rows.error_se)):
        line = next(line for line in ax.lines if line.get_gid() == f"mean-se-{j}")
        assert line.get_ydata()[0] == pytest.approx(mu)
    bars = [c for c in ax.collections if c.get_segments()]
    spans = sorted(float(s[1][1] - s[0][1]) for c in bars for s in c.get_segments())
    np.testing.assert_allclose(spans, sorted(2 * rows.error_se), rtol=1e-9)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cart", "bag", "rf"]
    assert "glass (6 replications)" == ax.get_title()
    with pytest.raises(ValueError, match="dataset 'iris' is not in summary"):
        C.plot_dataset(summary, "iris")
