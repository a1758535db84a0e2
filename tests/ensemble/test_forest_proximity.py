"""Proximities, nearest cases, outlier measure and MDS (docs/forests.md, "Proximities").

* The compiled proximities (out of bag and all-case, among the training cases and from
  new rows to them) equal a pair-by-pair reference from each tree's own ``apply`` and the
  in-bag counts, bit for bit; they are symmetric, 1 on the diagonal and in [0, 1].
* ``nearest`` equals a stable sort of the dense rows (ties to the smaller index), also
  where most proximities tie.
* A dense matrix over ``CARTJIT_MEMORY_LIMIT`` is refused, naming the variable, while
  ``nearest`` still answers.
* The outlier measure equals randomForest's definition computed case by case, and the
  classical scaling reproduces Euclidean distances.
* Bad input names the argument.
"""
from __future__ import annotations

import numpy as np
import pytest

from cartjit import RandomForestClassifier, RandomForestRegressor
from cartjit.datasets import make_classification, make_regression
from cartjit.engine import proximity as PX

from references.forests import (categorical_frame, slow_outlier, slow_proximity,
                                with_holes)

pytestmark = pytest.mark.filterwarnings("ignore:.*in the bag of every tree")


@pytest.fixture(scope="module")
def fitted():
    X, y = make_classification(120, n_features=4, n_informative=3, n_classes=3, random_state=4)
    X = with_holes(X, 0.08, random_state=2)  # missing values: some cases stop early
    est = RandomForestClassifier(15, max_features=2, random_state=5).fit(X, y)
    return est, X, y


def stable_nearest(prox, k, diagonal):
    """The k largest of each row by a stable sort (ties: smaller index first)."""
    n, m = prox.shape
    index = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        cand = np.array([j for j in range(m) if not (diagonal and j == i)])
        index[i] = cand[np.argsort(-prox[i, cand], kind="stable")][:k]
    return index, np.take_along_axis(prox, index, axis=1)


@pytest.mark.parametrize("oob", [True, False])
def test_proximities_are_the_pairwise_reference(fitted, oob):
    est, X, _ = fitted
    prox = est.proximity(X, oob=oob)
    np.testing.assert_array_equal(prox, slow_proximity(est, X, oob))
    assert np.array_equal(prox, prox.T)
    assert np.all(np.diag(prox) == 1.0)
    assert prox.min() >= 0.0 and prox.max() <= 1.0
    assert 0.0 < prox[~np.eye(len(X), dtype=bool)].mean() < 0.5  # neither empty nor full


def test_oob_is_the_default_and_differs_from_all_case(fitted):
    est, X, _ = fitted
    np.testing.assert_array_equal(est.proximity(X), est.proximity(X, oob=True))
    assert not np.array_equal(est.proximity(X, oob=True), est.proximity(X, oob=False))


def test_new_rows_against_the_training_cases(fitted):
    est, X, _ = fitted
    X_new = with_holes(make_classification(30, n_features=4, n_informative=3, n_classes=3,
                                           random_state=9)[0], 0.05, random_state=3)
    prox = est.proximity(X_new, X)
    assert prox.shape == (30, 120)
    np.testing.assert_array_equal(prox, slow_proximity(est, X_new, False, Y=X))
    # the training rows as new rows: their all-case proximities
    np.testing.assert_array_equal(est.proximity(X[:7], X)[:, 7:],
                                  est.proximity(X, oob=False)[:7, 7:])


def test_rows_that_take_no_part_are_out_of_every_bag():
    X, y = make_regression(80, n_features=3, n_informative=2, random_state=1)
    w = np.ones(80)
    w[[3, 40]] = 0.0
    est = RandomForestRegressor(12, random_state=2).fit(X, y, sample_weight=w)
    prox = est.proximity(X)
    np.testing.assert_array_equal(prox, slow_proximity(est, X, True))
    assert est.inbag_counts()[:, [3, 40]].sum() == 0


def test_categorical_training_frame_is_recognised():
    X, y = categorical_frame(90, random_state=3)
    est = RandomForestClassifier(10, random_state=1).fit(X, y)
    np.testing.assert_array_equal(est.proximity(X), slow_proximity(est, X, True))
    other = X.copy()
    other["x1"] = other["x1"] + 1.0
    with pytest.raises(ValueError, match="oob=True: X must be the 90 rows given to fit"):
        est.proximity(other)
    assert est.proximity(other, oob=False).shape == (90, 90)


@pytest.mark.parametrize("oob", [True, False])
def test_nearest_is_a_stable_sort_of_the_dense_rows(fitted, oob):
    est, X, _ = fitted
    dense = est.proximity(X, oob=oob)
    for k in (1, 6, 119):
        index, prox = est.nearest(X, k, oob=oob)
        want_index, want_prox = stable_nearest(dense, k, True)
        np.testing.assert_array_equal(index, want_index)
        np.testing.assert_array_equal(prox, want_prox)
        assert not np.any(index == np.arange(len(X))[:, None])  # never the case itself


def test_nearest_with_many_ties_and_to_other_rows():
    X, y = make_classification(150, n_features=3, n_informative=2, n_classes=2, random_state=6)
    est = RandomForestClassifier(3, random_state=0).fit(X, y)  # proximities k/3: ties
    dense = est.proximity(X, oob=False)
    assert len(np.unique(dense)) <= 4
    index, prox = est.nearest(X, 20, oob=False)
    want = stable_nearest(dense, 20, True)
    np.testing.assert_array_equal(index, want[0])
    np.testing.assert_array_equal(prox, want[1])
    # rows of X against the cases of Y: the case itself is a candidate
    index, prox = est.nearest(X[:10], 5, X)
    want = stable_nearest(est.proximity(X[:10], X), 5, False)
    np.testing.assert_array_equal(index, want[0])
    assert np.all(prox[:, 0] == 1.0)


def test_a_dense_matrix_over_the_memory_limit_is_refused(fitted, monkeypatch):
    est, X, _ = fitted
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "64K")  # 120² doubles are 112.5 KiB
    with pytest.raises(ValueError, match=r"120 × 120 .*CARTJIT_MEMORY_LIMIT.*nearest"):
        est.proximity(X)
    with pytest.raises(ValueError, match="CARTJIT_MEMORY_LIMIT"):
        est.outlier(X)
    with pytest.raises(ValueError, match="CARTJIT_MEMORY_LIMIT"):
        est.proximity_mds(X)
    index, _ = est.nearest(X, 3)  # no dense matrix: answered
    assert index.shape == (120, 3)
    monkeypatch.setenv("CARTJIT_MEMORY_LIMIT", "1M")
    assert est.proximity(X).shape == (120, 120)


def test_threads_give_the_same_proximities(fitted):
    est, X, y = fitted
    two = RandomForestClassifier(15, max_features=2, random_state=5, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(two.proximity(X), est.proximity(X))
    np.testing.assert_array_equal(two.nearest(X, 4)[0], est.nearest(X, 4)[0])


def test_outlier_measure_is_randomforest_s(fitted):
    est, X, y = fitted
    prox = est.proximity(X)
    out = est.outlier(X, y)
    np.testing.assert_allclose(out, slow_outlier(prox, np.asarray(y)), rtol=1e-12)
    np.testing.assert_allclose(est.outlier(X), slow_outlier(prox, np.zeros(len(X))),
                               rtol=1e-12)
    for c in np.unique(y):  # normalised within each class
        assert np.median(out[y == c]) == pytest.approx(0.0, abs=1e-12)


def test_an_outlying_case_has_the_largest_measure():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = (X[:, 0] > 0).astype(int)
    X[7] = [0.05, 9.0]  # far from every case of its class in the second feature
    est = RandomForestClassifier(200, max_features=2, random_state=1).fit(X, y)
    assert int(np.argmax(est.outlier(X, y))) == 7


def test_classical_scaling_reproduces_euclidean_distances():
    rng = np.random.default_rng(2)
    points = rng.normal(size=(12, 2)) * [3.0, 1.0]
    dist = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
    coords, values = PX.classical_scaling(dist, 2)
    got = np.sqrt(((coords[:, None, :] - coords[None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_allclose(got, dist, atol=1e-10)
    assert values[0] >= values[1] > 1e-6 and np.all(np.abs(values[2:]) < 1e-9)
    # asked for more dimensions than are positive: only the positive ones
    assert PX.classical_scaling(dist, 5)[0].shape == (12, 2)


def test_proximity_mds_scales_one_minus_proximity(fitted):
    est, X, _ = fitted
    coords, values = est.proximity_mds(X, 3)
    want, want_values = PX.classical_scaling(1.0 - est.proximity(X), 3)
    np.testing.assert_array_equal(coords, want)
    np.testing.assert_array_equal(values, want_values)
    assert coords.shape == (120, 3) and values[0] >= values[1] >= values[2] > 0


def test_bad_input_names_the_argument(fitted):
    est, X, y = fitted
    with pytest.raises(ValueError, match="k must be >= 1"):
        est.nearest(X, 0)
    with pytest.raises(ValueError, match=r"k must be in \[1, 119\]"):
        est.nearest(X, 120)
    with pytest.raises(ValueError, match=r"k must be in \[1, 5\] \(the rows of Y\)"):
        est.nearest(X, 6, X[:5])
    with pytest.raises(TypeError, match="k must be an integer"):
        est.nearest(X, 2.5)
    with pytest.raises(ValueError, match="X has 3 features"):
        est.proximity(X[:, :3], oob=False)
    with pytest.raises(ValueError, match=r"Y must be 2-d with the 4 features of fit, got shape \(120, 2\)"):
        est.proximity(X, X[:, :2])
    with pytest.raises(ValueError, match="oob=True: X must be the 120 rows"):
        est.proximity(X[:50])
    with pytest.raises(ValueError, match="oob=True: X must be .* other values"):
        est.nearest(X + 1.0, 3)
    with pytest.raises(ValueError, match="between X and Y give oob=False"):
        est.proximity(X, X, oob=True)
    with pytest.raises(TypeError, match="oob must be"):
        est.proximity(X, oob="yes")
    with pytest.raises(ValueError, match=r"y must be one label per row of X \(120\)"):
        est.outlier(X, y[:-1])
    with pytest.raises(ValueError, match="n_components must be >= 1"):
        est.proximity_mds(X, 0)
    with pytest.raises(ValueError, match="n_components must be <= the 120 rows"):
        est.proximity_mds(X, 121)
    unfitted = RandomForestClassifier(3)
    with pytest.raises(Exception, match="not fitted"):
        unfitted.proximity(X)
