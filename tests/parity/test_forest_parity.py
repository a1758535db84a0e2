"""cartjit's forests agree with R's randomForest and ranger, ipred's bagging and
scikit-learn's forests, in the statistical sense (issue 40, "How it is checked").

On each of ten real data sets (seven classification, three regression; HouseVotes84,
titanic, BostonHousing, Servo and Ozone with factors, PimaIndiansDiabetes2,
BreastCancer, HouseVotes84 and Ozone with missing values) ``forest_runner`` draws 20
random train/test splits (70 % / 30 %) from a fixed seed and fits every method on each
training sample with the same m, the same number of trees (100), bootstrap samples of
n out of n and trees grown to the end (the only node size on which the packages'
conventions agree; forest_runner's docstring has the mapping). For each pair (cartjit's
method, its peer) and each of the test error (misclassification rate or mean squared
error on the test sample) and the OOB error, the mean over the splits of the paired
difference cartjit − peer must lie within two standard errors of zero, the standard
error being that of the paired differences (their sd / √20).

The pairs:

* cartjit's ``RandomForest*`` (classification: ``voting="vote"``) and randomForest;
* the same and ranger (``respect.unordered.factors = "partition"``: every split of a
  factor's levels in two groups, as cartjit and randomForest search);
* cartjit's ``RandomForest*`` with ``voting="proba"`` (classification) and
  scikit-learn's forest, which averages the trees' probabilities; scikit-learn takes
  factors as their level codes (ordered), which is its own rule, not a tolerance;
* cartjit's ``BaggedCART*`` and ``ipred::ipredbagg`` (rpart trees,
  ``rpart.control(minsplit = 2, cp = 0, xval = 0)``).

Missing values: randomForest and ranger 0.14 take none, so for them (and for
scikit-learn) each split's missing values are filled in with the training sample's
median or most frequent level (randomForest's ``na.roughfix``) and cartjit's random
forest is compared on the same filled-in data. ipred's rpart trees and cartjit's bagged
trees both send a case with a missing value down surrogate splits: they get the data
with their missing values.

Each data set's R peers run in one Rscript process; the module runs in about two
minutes on two cores. It needs Rscript with rpart, randomForest, ranger, ipred and
mlbench (Debian: r-cran-rpart r-cran-randomforest r-cran-ranger r-cran-ipred
r-cran-mlbench): without them it is skipped, with ``CARTJIT_REQUIRE_R=1`` it fails.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from parity import forest_runner as FR
from parity.conftest import r_required

pytestmark = pytest.mark.parity

N_SPLITS = 20
N_TREES = 100


def _require_peers():
    missing = FR.missing_r_packages()
    if missing:
        msg = (f"R's {', '.join(missing)} cannot be loaded by Rscript; install "
               + " ".join(f"r-cran-{p.lower()}" for p in missing))
        if r_required():
            pytest.fail(msg + " (required because CARTJIT_REQUIRE_R=1)", pytrace=False)
        pytest.skip(msg)


@functools.lru_cache(maxsize=None)
def _results(name):
    with warnings.catch_warnings():
        # scikit-learn warns when a case is in the bag of every tree (none is scored)
        warnings.simplefilter("ignore", UserWarning)
        return FR.run_dataset(name, N_SPLITS, N_TREES)


def _have_sklearn():
    try:
        import sklearn  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_data_sets_cover_what_the_issue_asks():
    """At least eight real data sets, both tasks, with factors and with missing values;
    at least twenty splits each, each with a test sample."""
    _require_peers()
    assert len(FR.DATASETS) >= 8 and N_SPLITS >= 20
    tasks, with_factors, with_missing = set(), set(), set()
    for name, spec in FR.DATASETS.items():
        df = FR.load(name)
        X = df.drop(columns=[spec.target])
        tasks.add(spec.task)
        if any(str(X[c].dtype) == "category" for c in X.columns):
            with_factors.add(spec.task)
        if X.isna().to_numpy().any():
            with_missing.add(spec.task)
        train = FR.draw_splits(name, len(df), N_SPLITS)
        assert train.shape == (N_SPLITS, len(df))
        assert (train.sum(axis=1) == round(FR.TRAIN_FRACTION * len(df))).all()
        assert len({row.tobytes() for row in train}) == N_SPLITS  # 20 different splits
    assert tasks == {"class", "reg"}
    assert with_factors == {"class", "reg"} and with_missing == {"class", "reg"}


@pytest.mark.parametrize("name", list(FR.DATASETS))
def test_every_method_scores_every_split_better_than_no_model(name):
    """Each method reports a finite test and OOB error for every split, and its mean
    test error beats the rule that ignores X (the training majority class, or the
    training mean)."""
    _require_peers()
    res = _results(name)
    spec = FR.DATASETS[name]
    df = FR.load(name)
    y = df[spec.target].to_numpy()
    train = FR.draw_splits(name, len(df), N_SPLITS)
    if spec.task == "class":
        baseline = np.mean([np.mean(y[~tr] != max(set(y[tr]), key=list(y[tr]).count))
                            for tr in train])
    else:
        baseline = np.mean([np.mean((y[~tr] - y[tr].mean()) ** 2) for tr in train])
    methods = {"cartjit_rf", "cartjit_bag", "randomForest", "ranger", "ipred"}
    if spec.task == "class":
        methods.add("cartjit_rf_proba")
    if _have_sklearn():
        methods.add("sklearn")
    assert set(res.method) == methods
    for method, rows in res.groupby("method"):
        assert sorted(rows.split) == list(range(N_SPLITS)), method
        assert np.isfinite(rows[["test_error", "oob_error"]].to_numpy()).all(), method
        assert rows.test_error.mean() < baseline, (method, rows.test_error.mean(), baseline)


@pytest.mark.parametrize("error", ["test_error", "oob_error"])
@pytest.mark.parametrize("pair", FR.PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("name", list(FR.DATASETS))
def test_mean_paired_difference_within_two_standard_errors(name, pair, error):
    _require_peers()
    if pair[1] == "sklearn" and not _have_sklearn():
        pytest.skip("scikit-learn is not installed")
    a = FR.agreement(_results(name), *pair, error)
    assert a["n"] == N_SPLITS
    assert abs(a["diff"]) <= 2 * a["se"], (
        f"{name}, {error}: {pair[0]} {a['ours']:.5g} vs {pair[1]} {a['peer']:.5g}, "
        f"mean paired difference {a['diff']:.3g} ± {a['se']:.3g} (SE over {a['n']} "
        "splits)")
