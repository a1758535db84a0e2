"""Comparing methods: the statistics of a comparative study (docs/studies.md).

The input is the long table of a study: a pandas DataFrame with one row per (dataset,
method, replication) and numeric measures such as the test error, the misclassification
cost or the mean squared error (the *score*, lower is better), the tree or forest size,
the fit and predict times. The column names are given by :class:`Columns`. Datasets and
methods keep the order of their first appearance in the table (the order of the study's
plan), never an alphabetical one, so that every table and plot follows the config.

Within one dataset (replications paired by their number, the same learning/test split
for every method):

- :func:`summarize`: mean ± SE over the replications of each measure, per dataset and
  method; :func:`mean_se_table` lays one measure out as datasets × methods;
- :func:`paired_differences`: each method against a baseline, the mean paired difference
  ± SE and the wins, ties and losses; unpaired results are refused;
- :func:`plot_dataset`: the score of each method with ± 1 SE bars.

Across datasets (Demšar 2006, "Statistical comparisons of classifiers over multiple data
sets", JMLR 7, 1-30), on the datasets × methods matrix of mean scores
(:func:`score_matrix`):

- :func:`rank_matrix`, :func:`average_ranks`: rank 1 is the best method of a dataset,
  ties get the average of the ranks they span;
- :func:`friedman_test`: Friedman's χ²_F and Iman and Davenport's F_F with p-values;
- :func:`nemenyi_q`, :func:`critical_difference`, :func:`nemenyi_groups`: Nemenyi's
  critical difference and the groups of methods it cannot tell apart;
  :func:`cd_diagram` draws them;
- :func:`wilcoxon_test`: Wilcoxon's signed-rank test for two methods.

:func:`format_table` writes any of these tables as Markdown, CSV or LaTeX (no optional
package needed); :func:`comparison_markdown` assembles the whole comparison as one
Markdown text.

Optional packages: the p-values and the studentized range need SciPy (``pip install
'cartjit[stats]'``), the plots matplotlib (``pip install 'cartjit[plot]'``); each is
imported by the function that needs it, which raises an :class:`ImportError` saying how
to install it. Everything else needs only numpy and pandas.
"""
from __future__ import annotations

import csv
import io
import math
import numbers
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = ["Columns", "COLUMNS", "FriedmanResult", "WilcoxonResult", "summarize",
           "mean_se_table", "paired_differences", "score_matrix", "rank_matrix",
           "average_ranks", "friedman_test", "nemenyi_q", "critical_difference",
           "nemenyi_groups", "wilcoxon_test", "cd_diagram", "plot_dataset", "format_table",
           "comparison_markdown"]


class Columns(NamedTuple):
    """Names of the key columns of a study's long table.

    Attributes
    ----------
    dataset : str
        The dataset of a row.
    method : str
        The method (a named estimator with its settings) of a row.
    replication : str
        The replication of a row: the number of the learning/test split (or fold), the
        same for every method on a dataset, which is what pairs two methods' results.
    """

    dataset: str = "dataset"
    method: str = "method"
    replication: str = "replication"


#: The default key columns: ``dataset``, ``method``, ``replication``.
COLUMNS = Columns()


class FriedmanResult(NamedTuple):
    """Friedman's test of k methods on N datasets (:func:`friedman_test`).

    Attributes
    ----------
    average_ranks : pandas.Series
        R_j, the average rank of each method (1 = best), indexed by method.
    n_datasets : int
        N.
    n_methods : int
        k.
    chi2 : float
        χ²_F = 12N / (k(k+1)) [Σ_j R_j² − k(k+1)²/4].
    chi2_pvalue : float
        P(χ²_{k−1} ≥ χ²_F).
    f : float
        Iman and Davenport's F_F = (N−1) χ²_F / (N(k−1) − χ²_F); infinite when every
        dataset ranks the methods in the same order.
    f_pvalue : float
        P(F_{k−1, (k−1)(N−1)} ≥ F_F).
    df1, df2 : int
        The degrees of freedom of F_F: k − 1 and (k − 1)(N − 1).
    """

    average_ranks: pd.Series
    n_datasets: int
    n_methods: int
    chi2: float
    chi2_pvalue: float
    f: float
    f_pvalue: float
    df1: int
    df2: int


class WilcoxonResult(NamedTuple):
    """Wilcoxon's signed-rank test of two methods over N datasets (:func:`wilcoxon_test`).

    Attributes
    ----------
    method_a, method_b : str
        The two methods; the differences are d_i = score_a − score_b.
    n_datasets : int
        N, the number of datasets (zero differences included).
    r_plus : float
        The sum of the ranks of |d_i| over the datasets where d_i > 0 (a scored higher
        than b: with errors, b is the better there), plus its share of the zero
        differences' ranks as ``zero_method`` says.
    r_minus : float
        The same for d_i < 0.
    statistic : float
        T = min(R⁺, R⁻).
    pvalue : float
        The two-sided p-value of :func:`scipy.stats.wilcoxon`.
    zero_method : str
        How zero differences were treated ("zsplit", "wilcox" or "pratt").
    """

    method_a: str
    method_b: str
    n_datasets: int
    r_plus: float
    r_minus: float
    statistic: float
    pvalue: float
    zero_method: str


# --------------------------------------------------------------------------- checks

def _scipy_stats(caller):
    """``scipy.stats``, or an ImportError that says how to install SciPy."""
    try:
        import scipy.stats
    except ImportError as exc:
        raise ImportError(f"{caller} needs SciPy, which is not installed: pip install "
                          "'cartjit[stats]' (or pip install scipy)") from exc
    return scipy.stats


def _check_columns(columns):
    if not isinstance(columns, Columns):
        raise TypeError(f"columns must be a cartjit.experiments.compare.Columns, got "
                        f"{type(columns).__name__}")
    return columns


def _check_frame(results, name="results"):
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(results).__name__}")
    if results.empty:
        raise ValueError(f"{name} is empty: there is nothing to compare")
    return results


def _require(results, needed, name="results", keys=()):
    """``results`` has the columns ``needed``; those in ``keys`` have no missing value."""
    missing = [c for c in needed if c not in results.columns]
    if missing:
        raise ValueError(f"{name} has no column {missing[0]!r}; its columns are "
                         f"{list(results.columns)}")
    for key in keys:
        absent = results[key].isna().to_numpy()
        if absent.any():
            raise ValueError(f"column {key!r} of {name} has {int(absent.sum())} missing "
                             f"value(s) (first at row {results.index[absent][0]!r}): every "
                             "row must name its " + key)


def _check_measure(results, measure, name="results"):
    """``measure`` is a numeric column of ``results`` with finite values only."""
    if not isinstance(measure, str):
        raise TypeError(f"a measure must be a column name (str), got {measure!r}")
    _require(results, [measure], name)
    col = results[measure]
    if col.dtype == bool or not pd.api.types.is_numeric_dtype(col):
        raise TypeError(f"column {measure!r} of {name} must be numeric, got dtype "
                        f"{col.dtype}")
    values = col.to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise ValueError(f"column {measure!r} of {name} has {bad.size} value(s) that are "
                         f"missing or not finite (first at row {results.index[bad[0]]!r}): "
                         "every result must be a finite number")


def _check_unique_keys(results, keys, name="results"):
    dup = results.duplicated(subset=keys, keep=False)
    if dup.any():
        row = results.loc[dup, keys].iloc[0]
        what = ", ".join(f"{k}={row[k]!r}" for k in keys)
        raise ValueError(f"{name} has {int(dup.sum())} rows with the same ({', '.join(keys)}),"
                         f" e.g. {what}: each must appear once")


def _ordered(values):
    """Distinct values in the order of their first appearance."""
    return list(pd.unique(pd.Series(values)))


def _check_alpha(alpha):
    if (not isinstance(alpha, numbers.Real) or isinstance(alpha, bool)
            or not 0.0 < float(alpha) < 1.0):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def _check_count(value, name, low):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# --------------------------------------------------------------------------- within a dataset

def _default_measures(results, columns):
    keys = set(columns)
    return [c for c in results.columns if c not in keys
            and pd.api.types.is_numeric_dtype(results[c]) and results[c].dtype != bool]


def summarize(results, measures=None, *, columns=COLUMNS):
    """Mean ± SE over the replications of each measure, per dataset and method.

    Parameters
    ----------
    results : pandas.DataFrame
        The long table: one row per (dataset, method, replication).
    measures : list of str, optional
        The numeric columns to summarize (for example ``["error", "size", "fit_time"]``).
        By default every numeric column that is not a key column.
    columns : Columns, optional
        The names of the key columns. The replication column may be absent; when it is
        present, each (dataset, method, replication) must appear once.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, method) in the order of first appearance, with the
        columns ``dataset``, ``method`` (as named by ``columns``), ``n`` (the number of
        replications) and, per measure m, ``m_mean`` and ``m_se``: the mean and its
        standard error s / √n, s the standard deviation over the replications (n − 1 in
        its denominator); NaN with a single replication.
    """
    _check_frame(results)
    columns = _check_columns(columns)
    keys = [columns.dataset, columns.method]
    _require(results, keys, keys=keys)
    if measures is None:
        measures = _default_measures(results, columns)
        if not measures:
            raise ValueError("results has no numeric column to summarize besides the keys "
                             f"{list(columns)}")
    elif isinstance(measures, str):
        measures = [measures]
    measures = list(measures)
    for m in measures:
        _check_measure(results, m)
    if columns.replication in results.columns:
        _require(results, [], keys=[columns.replication])
        _check_unique_keys(results, keys + [columns.replication])
    rows = []
    for (dataset, method), group in results.groupby(keys, sort=False):
        n = len(group)
        row = {columns.dataset: dataset, columns.method: method, "n": n}
        for m in measures:
            values = group[m].to_numpy(dtype=float)
            row[f"{m}_mean"] = float(values.mean())
            row[f"{m}_se"] = (float(values.std(ddof=1) / math.sqrt(n)) if n > 1
                              else float("nan"))
        rows.append(row)
    return pd.DataFrame(rows)


def _plus_minus(mean, se, digits):
    text = f"{mean:.{digits}f}"
    return text if not np.isfinite(se) else f"{text} ± {se:.{digits}f}"


def mean_se_table(summary, measure, *, digits=3, columns=COLUMNS):
    """One measure of :func:`summarize` as a datasets × methods table of "mean ± SE".

    Parameters
    ----------
    summary : pandas.DataFrame
        The output of :func:`summarize`.
    measure : str
        The measure, for example ``"error"`` (the columns ``error_mean`` and
        ``error_se`` are used).
    digits : int, optional
        Decimals of the mean and of the SE.
    columns : Columns, optional
        The names of the key columns.

    Returns
    -------
    pandas.DataFrame
        Rows the datasets, columns the methods (both in order of first appearance),
        cells the text "mean ± SE" ("mean" alone where the SE is undefined, an empty
        text where a method has no result on a dataset).
    """
    _check_frame(summary, "summary")
    columns = _check_columns(columns)
    digits = _check_count(digits, "digits", 0)
    mean, se = f"{measure}_mean", f"{measure}_se"
    _require(summary, [columns.dataset, columns.method, mean, se], "summary")
    datasets = _ordered(summary[columns.dataset])
    methods = _ordered(summary[columns.method])
    table = pd.DataFrame("", index=pd.Index(datasets, name=columns.dataset),
                         columns=methods, dtype=object)
    for d, m, mu, s in zip(summary[columns.dataset], summary[columns.method],
                           summary[mean], summary[se]):
        table.loc[d, m] = _plus_minus(float(mu), float(s), digits)
    return table


def _pairs_text(values):
    shown = ", ".join(repr(v) for v in values[:5])
    return shown + (f" and {len(values) - 5} more" if len(values) > 5 else "")


def _paired(results, dataset, method, baseline, score, columns):
    """The (method, baseline) scores of one dataset, aligned by replication."""
    rep = columns.replication
    sub = results[results[columns.dataset] == dataset]
    base = sub[sub[columns.method] == baseline].set_index(rep)[score]
    other = sub[sub[columns.method] == method].set_index(rep)[score]
    if other.empty:
        raise ValueError(f"unpaired results: method {method!r} has no result on dataset "
                         f"{dataset!r}, where the baseline {baseline!r} has {len(base)}")
    in_base, in_other = set(base.index), set(other.index)
    only_base = [r for r in base.index if r not in in_other]
    only_other = [r for r in other.index if r not in in_base]
    if only_base or only_other:
        parts = []
        if only_base:
            parts.append(f"{method!r} lacks replication(s) {_pairs_text(only_base)}")
        if only_other:
            parts.append(f"the baseline {baseline!r} lacks replication(s) "
                         f"{_pairs_text(only_other)}")
        raise ValueError(f"unpaired results on dataset {dataset!r}: " + "; ".join(parts)
                         + ". A paired comparison needs every method on the same "
                         f"replications ({rep!r}) as the baseline")
    return other.loc[base.index].to_numpy(dtype=float), base.to_numpy(dtype=float)


def paired_differences(results, baseline, score="error", *, tol=0.0, columns=COLUMNS):
    """Each method against a baseline on each dataset, paired by replication.

    For a method and a dataset with replications i = 1..n, d_i = score of the method −
    score of the baseline on replication i (negative: the method did better, scores
    being errors or costs).

    Parameters
    ----------
    results : pandas.DataFrame
        The long table: one row per (dataset, method, replication).
    baseline : str
        The method the others are compared with.
    score : str, optional
        The column compared (lower is better).
    tol : float, optional
        The tie tolerance: |d_i| <= tol is a tie. The default 0 counts only exact
        equality as a tie (two methods that chose the same tree on a split).
    columns : Columns, optional
        The names of the key columns.

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, method other than the baseline), in order of first
        appearance, with the columns ``dataset``, ``method``, ``baseline``, ``n`` (the
        number of pairs), ``mean_diff`` (the mean of d_i), ``se_diff`` (its standard
        error s_d / √n, NaN when n = 1), ``wins`` (d_i < −tol: the method did better),
        ``ties`` (|d_i| <= tol) and ``losses`` (d_i > tol).

    Raises
    ------
    ValueError
        When the results are not paired: a (dataset, method, replication) appears twice,
        or a method lacks a replication the baseline has on a dataset (or has one the
        baseline lacks), or the baseline has no result on a dataset.
    """
    _check_frame(results)
    columns = _check_columns(columns)
    keys = list(columns)
    _require(results, keys, keys=keys)
    _check_measure(results, score)
    _check_unique_keys(results, keys)
    if (not isinstance(tol, numbers.Real) or isinstance(tol, bool) or not math.isfinite(tol)
            or tol < 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    methods = _ordered(results[columns.method])
    if baseline not in methods:
        raise ValueError(f"baseline {baseline!r} is not a method of results; the methods "
                         f"are {methods}")
    rows = []
    for dataset in _ordered(results[columns.dataset]):
        sub = results[results[columns.dataset] == dataset]
        if not (sub[columns.method] == baseline).any():
            raise ValueError(f"unpaired results: the baseline {baseline!r} has no result "
                             f"on dataset {dataset!r}")
        for method in methods:
            if method == baseline:
                continue
            ours, theirs = _paired(results, dataset, method, baseline, score, columns)
            d = ours - theirs
            n = d.size
            rows.append({columns.dataset: dataset, columns.method: method,
                         "baseline": baseline, "n": n, "mean_diff": float(d.mean()),
                         "se_diff": (float(d.std(ddof=1) / math.sqrt(n)) if n > 1
                                     else float("nan")),
                         "wins": int(np.sum(d < -tol)), "ties": int(np.sum(np.abs(d) <= tol)),
                         "losses": int(np.sum(d > tol))})
    return pd.DataFrame(rows, columns=[columns.dataset, columns.method, "baseline", "n",
                                       "mean_diff", "se_diff", "wins", "ties", "losses"])


# --------------------------------------------------------------------------- across datasets

def score_matrix(results, score="error", *, columns=COLUMNS):
    """The datasets × methods matrix of the mean score over the replications.

    Parameters
    ----------
    results : pandas.DataFrame
        The long table (one row per dataset, method and replication; the replication
        column may be absent when there is one row per dataset and method).
    score : str, optional
        The column to average (lower is better).
    columns : Columns, optional
        The names of the key columns.

    Returns
    -------
    pandas.DataFrame
        Rows the datasets, columns the methods, both in order of first appearance.

    Raises
    ------
    ValueError
        When a method has no result on some dataset: the tests across datasets need
        every method on every dataset.
    """
    _check_frame(results)
    columns = _check_columns(columns)
    keys = [columns.dataset, columns.method]
    _require(results, keys, keys=keys)
    _check_measure(results, score)
    if columns.replication in results.columns:
        _require(results, [], keys=[columns.replication])
        _check_unique_keys(results, keys + [columns.replication])
    datasets = _ordered(results[columns.dataset])
    methods = _ordered(results[columns.method])
    means = results.groupby(keys, sort=False)[score].mean()
    matrix = pd.DataFrame(np.nan, index=pd.Index(datasets, name=columns.dataset),
                          columns=pd.Index(methods, name=columns.method))
    for (d, m), v in means.items():
        matrix.loc[d, m] = float(v)
    if matrix.isna().to_numpy().any():
        d, m = next((d, m) for d in datasets for m in methods if np.isnan(matrix.loc[d, m]))
        raise ValueError(f"method {m!r} has no result on dataset {d!r}: the comparison "
                         "across datasets needs every method on every dataset")
    return matrix


def _as_matrix(matrix, low_k=2):
    """A checked datasets × methods DataFrame of finite numbers (≥ 1 row, ≥ low_k columns)."""
    if isinstance(matrix, np.ndarray):
        if matrix.ndim != 2:
            raise ValueError(f"matrix must be 2-D (datasets × methods), got shape "
                             f"{matrix.shape}")
        matrix = pd.DataFrame(matrix)
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError("matrix must be a pandas DataFrame (datasets × methods, as "
                        f"score_matrix gives) or a 2-D numpy array, got "
                        f"{type(matrix).__name__}")
    if matrix.shape[0] < 1:
        raise ValueError("matrix has no dataset (row)")
    if matrix.shape[1] < low_k:
        raise ValueError(f"a comparison needs at least {low_k} methods (columns), got "
                         f"{matrix.shape[1]}")
    if not matrix.columns.is_unique:
        raise ValueError(f"the methods (columns) of matrix must be distinct, got "
                         f"{list(matrix.columns)}")
    try:
        values = matrix.to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"matrix must hold numbers only: {exc}") from None
    if not np.isfinite(values).all():
        raise ValueError("matrix has missing or non-finite values: every method needs a "
                         "finite score on every dataset")
    return pd.DataFrame(values, index=matrix.index, columns=matrix.columns)


def _rank_row(values):
    """Ranks 1..k of ``values`` in increasing order, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size)
    i = 0
    while i < values.size:
        j = i
        while j + 1 < values.size and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def rank_matrix(matrix, *, lower_is_better=True):
    """The rank of each method on each dataset.

    Parameters
    ----------
    matrix : pandas.DataFrame or numpy.ndarray
        Datasets × methods scores (:func:`score_matrix`).
    lower_is_better : bool, optional
        True for errors, costs and MSE (rank 1 = the lowest score); False for accuracy
        or AUC (rank 1 = the highest).

    Returns
    -------
    pandas.DataFrame
        The same shape and labels: on each dataset the best method gets rank 1, the next
        rank 2, ...; methods with exactly equal scores get the mean of the ranks they
        span (two methods tied for the first place both get 1.5).
    """
    matrix = _as_matrix(matrix)
    sign = 1.0 if _check_bool(lower_is_better, "lower_is_better") else -1.0
    values = sign * matrix.to_numpy()
    ranks = np.vstack([_rank_row(row) for row in values])
    return pd.DataFrame(ranks, index=matrix.index, columns=matrix.columns)


def average_ranks(matrix, *, lower_is_better=True):
    """R_j, the rank of each method averaged over the datasets (1 = best).

    Parameters
    ----------
    matrix : pandas.DataFrame or numpy.ndarray
        Datasets × methods scores (:func:`score_matrix`).
    lower_is_better : bool, optional
        As in :func:`rank_matrix`.

    Returns
    -------
    pandas.Series
        Indexed by method, in the order of the matrix's columns.
    """
    return rank_matrix(matrix, lower_is_better=lower_is_better).mean(axis=0)


def friedman_test(matrix, *, lower_is_better=True):
    """Friedman's test that k methods are equivalent over N datasets, and Iman and
    Davenport's F.

    Each dataset ranks the methods (:func:`rank_matrix`); with R_j the average rank of
    method j, χ²_F = 12N / (k(k+1)) [Σ_j R_j² − k(k+1)²/4], referred to χ² with k − 1
    degrees of freedom, and F_F = (N−1) χ²_F / (N(k−1) − χ²_F), referred to F with k − 1
    and (k − 1)(N − 1) degrees of freedom (Demšar 2006, §3.2.2; F_F is the less
    conservative of the two). The statistic is Demšar's, without the correction for
    ties that :func:`scipy.stats.friedmanchisquare` divides by (the two agree when no
    dataset has tied scores).

    Parameters
    ----------
    matrix : pandas.DataFrame or numpy.ndarray
        Datasets × methods scores (:func:`score_matrix`); at least 2 datasets and 2
        methods.
    lower_is_better : bool, optional
        As in :func:`rank_matrix`.

    Returns
    -------
    FriedmanResult

    Raises
    ------
    ImportError
        Without SciPy (the p-values): ``pip install 'cartjit[stats]'``.
    """
    stats = _scipy_stats("friedman_test")
    matrix = _as_matrix(matrix)
    n, k = matrix.shape
    if n < 2:
        raise ValueError(f"Friedman's test needs at least 2 datasets (rows), got {n}")
    ranks = average_ranks(matrix, lower_is_better=lower_is_better)
    r = ranks.to_numpy()
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(r * r)) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(chi2, 0.0)  # rounding can leave -1e-16 when all ranks are equal
    df1, df2 = k - 1, (k - 1) * (n - 1)
    denominator = n * (k - 1) - chi2
    if denominator <= 1e-12 * n * (k - 1):  # every dataset ranks the methods alike
        f, f_pvalue = math.inf, 0.0
    else:
        f = (n - 1) * chi2 / denominator
        f_pvalue = float(stats.f.sf(f, df1, df2))
    return FriedmanResult(ranks, n, k, chi2, float(stats.chi2.sf(chi2, df1)), f, f_pvalue,
                          df1, df2)


def nemenyi_q(k, alpha=0.05):
    """The critical value q_α of Nemenyi's test for k methods.

    q_α is the 1 − α quantile of the studentized range of k means with infinite degrees
    of freedom, divided by √2 (Demšar 2006, Table 5(a): 2.569 for k = 4 at α = 0.05).

    Parameters
    ----------
    k : int
        The number of methods, at least 2.
    alpha : float, optional
        The significance level, in (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ImportError
        Without SciPy (:data:`scipy.stats.studentized_range`).
    """
    k = _check_count(k, "k", 2)
    alpha = _check_alpha(alpha)
    stats = _scipy_stats("nemenyi_q")
    return float(stats.studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0))


def critical_difference(k, n_datasets, alpha=0.05):
    """Nemenyi's critical difference CD = q_α √(k(k+1) / (6N)).

    Two methods whose average ranks over N datasets differ by at least CD perform
    significantly differently at level α (Demšar 2006, §3.2.2: CD = 1.25 for k = 4,
    N = 14, α = 0.05).

    Parameters
    ----------
    k : int
        The number of methods, at least 2.
    n_datasets : int
        N, at least 1.
    alpha : float, optional
        The significance level, in (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ImportError
        Without SciPy (:func:`nemenyi_q`).
    """
    n_datasets = _check_count(n_datasets, "n_datasets", 1)
    q = nemenyi_q(k, alpha)
    return q * math.sqrt(k * (k + 1) / (6.0 * n_datasets))


def _check_ranks(ranks):
    if isinstance(ranks, dict):
        ranks = pd.Series(ranks, dtype=float)
    if not isinstance(ranks, pd.Series):
        raise TypeError(f"average ranks must be a pandas Series (or a dict) of method -> "
                        f"rank, got {type(ranks).__name__}")
    if len(ranks) < 2 or not ranks.index.is_unique:
        raise ValueError(f"average ranks must name at least 2 distinct methods, got "
                         f"{list(ranks.index)}")
    values = ranks.to_numpy(dtype=float)
    if not np.isfinite(values).all() or values.min() < 1 or values.max() > len(ranks):
        raise ValueError(f"average ranks must be numbers in [1, {len(ranks)}], got "
                         f"{values.tolist()}")
    return pd.Series(values, index=ranks.index)


def _check_cd(cd):
    if (not isinstance(cd, numbers.Real) or isinstance(cd, bool) or not math.isfinite(cd)
            or cd <= 0):
        raise ValueError(f"cd must be a finite number > 0, got {cd!r}")
    return float(cd)


def nemenyi_groups(ranks, cd):
    """The groups of methods that Nemenyi's test cannot tell apart.

    Methods are sorted by average rank; a group is a maximal run of consecutive methods
    whose ranks span less than ``cd`` (two methods differ significantly when their
    ranks differ by at least CD). Groups of a single method are not listed. These are
    the thick lines of the CD diagram.

    Parameters
    ----------
    ranks : pandas.Series or dict
        Average rank of each method (:func:`average_ranks`).
    cd : float
        The critical difference (:func:`critical_difference`).

    Returns
    -------
    list of tuple
        Each group's methods, best first; groups in order of their best member.
    """
    ranks = _check_ranks(ranks)
    cd = _check_cd(cd)
    ordered = ranks.sort_values(kind="stable")
    names, r = list(ordered.index), ordered.to_numpy()
    groups, last_end = [], 0
    for i in range(len(r)):
        j = i
        while j + 1 < len(r) and r[j + 1] - r[i] < cd:
            j += 1
        if j > i and j >= last_end:  # not inside the previous group
            groups.append(tuple(names[i:j + 1]))
            last_end = j + 1
    return groups


def _rank_sums(d, zero_method):
    """R⁺ and R⁻ of the differences ``d`` (the Wilcoxon signed-rank sums)."""
    if zero_method == "wilcox":
        d = d[d != 0]
    ranks = _rank_row(np.abs(d))
    if zero_method == "pratt":
        keep = d != 0
        d, ranks = d[keep], ranks[keep]
    zero = ranks[d == 0].sum() / 2.0  # only "zsplit" has zeros left
    return float(ranks[d > 0].sum() + zero), float(ranks[d < 0].sum() + zero)


def wilcoxon_test(matrix, method_a, method_b, *, zero_method="zsplit", method="auto"):
    """Wilcoxon's signed-rank test for two methods over the datasets.

    The differences d_i = score_a − score_b on the N datasets are ranked by |d_i| (ties
    averaged); R⁺ sums the ranks of the positive ones, R⁻ of the negative ones, and
    T = min(R⁺, R⁻) (Demšar 2006, §3.1.3). The p-value is :func:`scipy.stats.wilcoxon`'s
    (two-sided).

    Parameters
    ----------
    matrix : pandas.DataFrame
        Datasets × methods scores (:func:`score_matrix`).
    method_a, method_b : str
        Two columns of ``matrix``.
    zero_method : {"zsplit", "wilcox", "pratt"}, optional
        Zero differences: "zsplit" (the default, as in Demšar 2006) ranks them and
        splits their ranks evenly between R⁺ and R⁻ (Demšar drops one of an odd number
        of zeros first; SciPy does not, and neither does this function); "wilcox" drops
        them before ranking; "pratt" ranks them, then drops them.
    method : {"auto", "exact", "asymptotic"}, optional
        How :func:`scipy.stats.wilcoxon` computes the p-value. "auto": the exact
        distribution when there are no ties and no zeros (N <= 50); with ties or zeros
        and N <= 13, a permutation test over all 2^N sign changes (exact and
        deterministic, about a second); otherwise the normal approximation.

    Returns
    -------
    WilcoxonResult

    Raises
    ------
    ImportError
        Without SciPy (the p-value).
    """
    stats = _scipy_stats("wilcoxon_test")
    matrix = _as_matrix(matrix)
    if zero_method not in ("zsplit", "wilcox", "pratt"):
        raise ValueError(f"zero_method must be 'zsplit', 'wilcox' or 'pratt', got "
                         f"{zero_method!r}")
    if method not in ("auto", "exact", "asymptotic"):
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    for name in (method_a, method_b):
        if name not in matrix.columns:
            raise ValueError(f"method {name!r} is not a column of matrix; the methods are "
                             f"{list(matrix.columns)}")
    if method_a == method_b:
        raise ValueError(f"method_a and method_b must differ, got {method_a!r} twice")
    d = matrix[method_a].to_numpy() - matrix[method_b].to_numpy()
    if not np.any(d != 0):
        raise ValueError(f"{method_a!r} and {method_b!r} have the same score on every "
                         "dataset: there is no difference to test")
    r_plus, r_minus = _rank_sums(d, zero_method)
    pvalue = float(stats.wilcoxon(d, zero_method=zero_method, method=method).pvalue)
    return WilcoxonResult(str(method_a), str(method_b), int(d.size), r_plus, r_minus,
                          min(r_plus, r_minus), pvalue, zero_method)


# --------------------------------------------------------------------------- plots

def _plot_tools(caller):
    from ..plotting import _require_matplotlib
    _require_matplotlib(caller)
    from .. import plotting
    return plotting


def cd_diagram(ranks, cd, *, ax=None, title=None):
    """Demšar's critical-difference diagram.

    The average ranks on an axis from 1 to k, the best (lowest) rank on the right; each
    method hangs from its rank by a line to its name, the better half on the right and
    the worse half on the left; a thick line joins each group of methods whose ranks
    differ by less than the CD (:func:`nemenyi_groups`); the CD is drawn as a segment
    above the axis.

    Parameters
    ----------
    ranks : pandas.Series or dict
        Average rank of each method (:func:`average_ranks` or
        ``friedman_test(...).average_ranks``).
    cd : float
        The critical difference (:func:`critical_difference`).
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default a new bare Figure (no pyplot), saved with
        ``ax.figure.savefig(path)``.
    title : str, optional
        A title above the diagram.

    Returns
    -------
    matplotlib.axes.Axes
        The drawn artists carry a ``gid``: ``cd-axis`` (the rank axis), ``cd-bar`` (the
        CD segment, from rank k to k − CD), ``cd-method-<i>`` (the line of the i-th
        method of ``ranks``, starting at its rank) and ``cd-label-<i>`` (its name),
        ``cd-group-<j>`` (the j-th group of :func:`nemenyi_groups`).
    """
    plotting = _plot_tools("cd_diagram")
    ranks = _check_ranks(ranks)
    cd = _check_cd(cd)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    k = len(ranks)
    groups = nemenyi_groups(ranks, cd)
    half = (k + 1) // 2
    ax = plotting._new_axes(ax, (6.4, 1.3 + 0.26 * half + 0.12 * len(groups)))
    span = k - 1
    ink = {"color": "black", "linewidth": 1.0}
    ax.plot([1, k], [0, 0], gid="cd-axis", **ink)
    for t in range(1, k + 1):
        ax.plot([t, t], [0, 0.08], **ink)
        ax.text(t, 0.13, str(t), ha="center", va="bottom", fontsize=8)
    y_bar = 0.62
    ax.plot([k, k - cd], [y_bar, y_bar], gid="cd-bar", **ink)
    for x in (k, k - cd):
        ax.plot([x, x], [y_bar - 0.05, y_bar + 0.05], **ink)
    ax.text(k - cd / 2, y_bar + 0.07, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8)
    position = {name: i for i, name in enumerate(ranks.index)}
    for j, group in enumerate(groups):
        lo, hi = ranks[list(group)].min(), ranks[list(group)].max()
        y = -0.14 - 0.1 * j
        ax.plot([lo - 0.02 * span, hi + 0.02 * span], [y, y], color="black", linewidth=3.0,
                solid_capstyle="butt", gid=f"cd-group-{j}")
    top = -0.14 - 0.1 * len(groups) - 0.12
    ordered = ranks.sort_values(kind="stable")
    right, left = list(ordered.index[:half]), list(ordered.index[half:])[::-1]
    for side, names in ((1, right), (-1, left)):
        end = 1 - 0.08 * span if side == 1 else k + 0.08 * span
        for i, name in enumerate(names):
            r, y = float(ranks[name]), top - 0.26 * i
            ax.plot([r, r, end], [0, y, y], gid=f"cd-method-{position[name]}", **ink)
            ax.text(end, y, f" {name} ({r:.2f}) " if side == 1 else f" ({r:.2f}) {name} ",
                    ha="left" if side == 1 else "right", va="center", fontsize=8,
                    gid=f"cd-label-{position[name]}")
    ax.set_xlim(k + 0.55 * span, 1 - 0.55 * span)  # reversed: the best rank on the right
    ax.set_ylim(top - 0.26 * max(len(right), len(left)) + 0.05, y_bar + 0.3)
    ax.set_axis_off()
    if title is not None:
        ax.set_title(title, fontsize=10)
    return ax


def plot_dataset(summary, dataset, measure="error", *, ax=None, columns=COLUMNS):
    """The mean of one measure per method on one dataset, with bars of ± 1 SE.

    Parameters
    ----------
    summary : pandas.DataFrame
        The output of :func:`summarize`.
    dataset : str
        The dataset to draw.
    measure : str, optional
        The measure (``<measure>_mean`` and ``<measure>_se`` are drawn).
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default a new bare Figure (no pyplot).
    columns : Columns, optional
        The names of the key columns.

    Returns
    -------
    matplotlib.axes.Axes
        Method j (in order of first appearance) is drawn in the j-th class colour as
        a point with its bar, with ``gid`` ``mean-se-<j>``.
    """
    plotting = _plot_tools("plot_dataset")
    _check_frame(summary, "summary")
    columns = _check_columns(columns)
    mean, se = f"{measure}_mean", f"{measure}_se"
    _require(summary, [columns.dataset, columns.method, "n", mean, se], "summary")
    rows = summary[summary[columns.dataset] == dataset]
    if rows.empty:
        raise ValueError(f"dataset {dataset!r} is not in summary; the datasets are "
                         f"{_ordered(summary[columns.dataset])}")
    methods = [str(m) for m in rows[columns.method]]
    ax = plotting._new_axes(ax, (max(4.0, 1.0 + 0.7 * len(methods)), 3.6))
    plotting.style_axes(ax)
    for j, (mu, s) in enumerate(zip(rows[mean], rows[se])):
        ax.errorbar([j], [mu], yerr=[0.0 if not np.isfinite(s) else s],
                    color=plotting.class_color(j), gid=f"mean-se-{j}",
                    **plotting.ERRORBAR_STYLE)
    ax.set_xticks(range(len(methods)), methods,
                  rotation=30 if max(len(m) for m in methods) > 8 else 0,
                  ha="right" if max(len(m) for m in methods) > 8 else "center")
    ax.set_xlim(-0.5, len(methods) - 0.5)
    n = sorted(set(int(v) for v in rows["n"]))
    reps = f"{n[0]}" if len(n) == 1 else f"{n[0]}-{n[-1]}"
    ax.set_ylabel(f"{measure}: mean over replications; bars ± 1 SE")
    ax.set_title(f"{dataset} ({reps} replications)", fontsize=10)
    return ax


# --------------------------------------------------------------------------- tables as text

def _cell(value, fmt, digits):
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return ""
        if fmt == "csv":
            return repr(v)
        return f"{v:.{digits}f}" if digits is not None else f"{v:.4g}"
    return "" if value is None else str(value)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$",
                  "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "±": r"$\pm$", "−": r"$-$"}


def _latex(text):
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def format_table(frame, fmt="markdown", *, digits=None, caption=None, label=None):
    """A table as Markdown, CSV or LaTeX text.

    Parameters
    ----------
    frame : pandas.DataFrame
        Any table of this module (:func:`summarize`, :func:`mean_se_table`,
        :func:`paired_differences`, :func:`score_matrix`, ...). A named or non-default
        index is written as the first column(s).
    fmt : {"markdown", "csv", "latex"}, optional
        "markdown": a pipe table, numbers right-aligned. "csv": comma-separated, floats
        as the shortest text that reads back to the same double, so that the file is
        byte-identical whenever the results are. "latex": a ``tabular`` with the rules
        of the ``booktabs`` package (``\\usepackage{booktabs}``), inside a ``table``
        when a caption or label is given; "±" is written ``$\\pm$``.
    digits : int, optional
        Decimals of the floats in Markdown and LaTeX; by default 4 significant digits.
        CSV always keeps every digit.
    caption, label : str, optional
        LaTeX only: the table's caption and ``\\label``.

    Returns
    -------
    str
    """
    _check_frame(frame, "frame")
    if fmt not in ("markdown", "csv", "latex"):
        raise ValueError(f"fmt must be 'markdown', 'csv' or 'latex', got {fmt!r}")
    if digits is not None:
        digits = _check_count(digits, "digits", 0)
    for name, value in (("caption", caption), ("label", label)):
        if value is not None and (fmt != "latex" or not isinstance(value, str)):
            raise ValueError(f"{name} is for fmt='latex' and must be a str, got {value!r} "
                             f"with fmt={fmt!r}")
    if not (isinstance(frame.index, pd.RangeIndex) and frame.index.name is None):
        frame = frame.reset_index()
    header = [str(c) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and frame[c].dtype != bool
               for c in frame.columns]
    body = [[_cell(v, fmt, digits) for v in row]
            for row in zip(*(frame[c].tolist() for c in frame.columns))]
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(body)
        return buf.getvalue()
    if fmt == "markdown":
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
        rule = "|" + "|".join("---:" if num else "---" for num in numeric) + "|"
        return "\n".join([line(header), rule] + [line(r) for r in body]) + "\n"
    lines = [r"\begin{tabular}{" + "".join("r" if num else "l" for num in numeric) + "}",
             r"\toprule", " & ".join(_latex(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex(c) for c in row) + r" \\" for row in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption is not None or label is not None:
        inner = [r"\centering"]
        if caption is not None:
            inner.append(r"\caption{" + _latex(caption) + "}")
        if label is not None:
            inner.append(r"\label{" + label + "}")
        lines = [r"\begin{table}[htbp]"] + inner + lines + [r"\end{table}"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the whole comparison

def _paired_table(paired, digits, columns):
    """Datasets × methods cells "mean diff ± SE (wins/ties/losses)"."""
    datasets = _ordered(paired[columns.dataset])
    methods = _ordered(paired[columns.method])
    table = pd.DataFrame("", index=pd.Index(datasets, name=columns.dataset),
                         columns=methods, dtype=object)
    for _, row in paired.iterrows():
        table.loc[row[columns.dataset], row[columns.method]] = (
            f"{_plus_minus(row['mean_diff'], row['se_diff'], digits)} "
            f"({row['wins']}/{row['ties']}/{row['losses']})")
    return table


def comparison_markdown(results, score="error", baseline=None, *, measures=None, alpha=0.05,
                        digits=3, tol=0.0, columns=COLUMNS):
    """The whole comparison of a study as one Markdown text.

    Sections: mean ± SE of each measure per dataset and method (:func:`summarize`); with
    a ``baseline``, each method against it (:func:`paired_differences`); with at least
    two datasets, the average ranks of the score, Friedman's test, Nemenyi's critical
    difference and its groups (:func:`friedman_test`, :func:`critical_difference`,
    :func:`nemenyi_groups`) and, with a baseline, Wilcoxon's signed-rank test of each
    method against it (:func:`wilcoxon_test`; p-values not adjusted for the number of
    methods). Without SciPy the tests are replaced by a note saying how to install it.

    Parameters
    ----------
    results : pandas.DataFrame
        The long table: one row per (dataset, method, replication).
    score : str, optional
        The column compared (lower is better).
    baseline : str, optional
        The method the others are compared with.
    measures : list of str, optional
        The measures summarized; by default every numeric column but the keys.
    alpha : float, optional
        The significance level of the critical difference.
    digits : int, optional
        Decimals of the means, SEs and differences.
    tol : float, optional
        The tie tolerance of the wins/ties/losses.
    columns : Columns, optional
        The names of the key columns.

    Returns
    -------
    str
    """
    alpha = _check_alpha(alpha)
    digits = _check_count(digits, "digits", 0)
    if measures is None:
        _check_frame(results)
        measures = [score] + [m for m in _default_measures(results, _check_columns(columns))
                              if m != score]
    summary = summarize(results, measures, columns=columns)
    out = ["## Mean ± SE over the replications", ""]
    for m in ([measures] if isinstance(measures, str) else measures):
        out += [f"### {m}", "", format_table(mean_se_table(summary, m, digits=digits,
                                                           columns=columns))]
    if baseline is not None:
        paired = paired_differences(results, baseline, score, tol=tol, columns=columns)
        out += [f"## Against the baseline {baseline}", "",
                f"Mean paired difference of {score} (method − {baseline}) ± SE over the "
                f"replications, and (wins/ties/losses) of the method"
                + (" (ties: exact equality)" if tol == 0 else f" (ties: |difference| <= {tol!r})")
                + ".", "", format_table(_paired_table(paired, digits, columns))]
    matrix = score_matrix(results, score, columns=columns)
    n, k = matrix.shape
    if n < 2 or k < 2:
        return "\n".join(out)
    ranks = average_ranks(matrix)
    out += [f"## Across the {n} datasets", "",
            f"Average rank of {score} (1 = best; ties share their mean rank):", "",
            format_table(pd.DataFrame({"method": [str(c) for c in ranks.index],
                                       "average rank": ranks.to_numpy()}),
                         digits=digits)]
    try:
        fr = friedman_test(matrix)
        cd = critical_difference(k, n, alpha)
    except ImportError as exc:
        out += [f"The tests need SciPy: {exc}", ""]
        return "\n".join(out)
    groups = nemenyi_groups(ranks, cd)
    out += [f"Friedman's test: χ²_F = {fr.chi2:.{digits}f} (df {fr.df1}, p = "
            f"{fr.chi2_pvalue:.3g}); Iman–Davenport F_F = {fr.f:.{digits}f} (df {fr.df1}, "
            f"{fr.df2}; p = {fr.f_pvalue:.3g}).", "",
            f"Nemenyi's critical difference at α = {alpha:g}: CD = {cd:.{digits}f} "
            f"(q_α = {nemenyi_q(k, alpha):.3f}, k = {k}, N = {n}). Groups not significantly "
            "different: " + ("; ".join("{" + ", ".join(str(g) for g in grp) + "}"
                                       for grp in groups) or "none") + ".", ""]
    if baseline is not None:
        rows = []
        for method in matrix.columns:
            if method == baseline or not np.any(matrix[method] != matrix[baseline]):
                continue
            w = wilcoxon_test(matrix, method, baseline)
            rows.append({"method": str(method), "R+": w.r_plus, "R-": w.r_minus,
                         "T": w.statistic, "p": w.pvalue})
        if rows:
            out += [f"Wilcoxon's signed-rank test of each method against {baseline} over "
                    f"the datasets (R+: datasets where the method's {score} is higher; "
                    "p not adjusted for the number of methods):", "",
                    format_table(pd.DataFrame(rows), digits=digits)]
    return "\n".join(out)
