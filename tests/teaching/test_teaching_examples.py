"""The worked examples of docs/maths.md §6 and the classic weather table, reproduced
through the teaching tables (docs/teaching.md): the iris α sequences and the
leave-one-out columns of the two CV tables, the potato-yield split, the play-golf
gains."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor
from cartjit.datasets import load_iris, load_play_golf, load_potato_yield
from cartjit.steps import cv_steps, multiway_gains, pruning_steps, split_candidates

ROOT = Path(__file__).resolve().parents[2]
MONOGRAPH = ROOT / "experiments" / "results" / "monograph" / "summary"


def _entropy(*counts):
    p = np.array(counts, dtype=float) / sum(counts)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


@pytest.mark.parametrize("petal_only, leaves, alphas", [
    (True, [7, 4, 3, 2, 1], ["0", "1/150", "1/75", "22/75", "1/3"]),
    (False, [9, 7, 4, 3, 2, 1], ["0", "1/300", "1/150", "1/75", "22/75", "1/3"]),
])
def test_iris_alpha_sequences(petal_only, leaves, alphas):
    X, y = load_iris(petal_only=petal_only, return_X_y=True)
    est = CARTClassifier().fit(X, y)
    steps = pruning_steps(est, by="step")
    body = steps[steps["k"] >= 1]
    assert body["n_leaves"].tolist() == leaves
    np.testing.assert_allclose(body["alpha"], [float(Fraction(a)) for a in alphas],
                               rtol=1e-12, atol=1e-15)
    # each step adds α_{k+1} per leaf removed: R(T_{k+1}) = R(T_k) + α_{k+1} ΔL
    for (_, a), (_, b) in zip(body.iloc[:-1].iterrows(), body.iloc[1:].iterrows()):
        assert b["risk"] == pytest.approx(
            a["risk"] + b["alpha"] * (a["n_leaves"] - b["n_leaves"]), abs=1e-12)
    assert (steps["k"].iloc[0] == 0) == petal_only  # T_max has 8 leaves with the petals


@pytest.mark.parametrize("name, petal_only", [("iris_petal", True), ("iris", False)])
def test_iris_leave_one_out_columns_of_the_cv_tables(name, petal_only):
    """The V = 150 (leave-one-out) column of the two CV tables of docs/maths.md §6
    (experiments/monograph.toml), recomputed from the N_ij tables."""
    table = pd.read_csv(MONOGRAPH / f"{name}.csv")
    X, y = load_iris(petal_only=petal_only, return_X_y=True)
    est = CARTClassifierCV(cv="loo", cv_predictions=True).fit(X, y)
    steps = cv_steps(est, y)
    errors = []
    for k in steps.risk.index:
        N = steps.counts.loc[k].drop(columns="N_j").to_numpy()
        errors.append((N.sum() - np.trace(N)) / 150)  # misclassified held-out cases
    np.testing.assert_allclose(errors, table["V150_loo"], rtol=1e-12)
    np.testing.assert_allclose(steps.risk["cv_risk"], table["V150_loo"], rtol=1e-12)
    np.testing.assert_allclose(steps.risk["cv_se"], table["V150_loo_se"], rtol=1e-12)
    r = np.asarray(errors)
    np.testing.assert_allclose(steps.risk["cv_se"], np.sqrt(r * (1 - r) / 150), rtol=1e-9)


def test_potato_yield_split():
    X, y = load_potato_yield(return_X_y=True)
    est = CARTRegressor(max_depth=1).fit(X, y)
    table = split_candidates(est, X, y)
    assert len(table) == 13  # 14 distinct rainfalls (170 twice)
    best = table[table["chosen"]].iloc[0]
    assert best["threshold"] == 110 and best["n_left"] == 2
    assert best["mean_left"] == pytest.approx(13.5) and best["mean_right"] == pytest.approx(345 / 13)
    assert best["delta_i"] == pytest.approx(12769 / 650, rel=1e-12)
    assert best["weighted"] == pytest.approx(3113 / 390, rel=1e-12)
    second = table.sort_values("delta_i").iloc[-2]
    assert second["threshold"] == 135
    assert second["delta_i"] == pytest.approx(3721 / 225, rel=1e-12)


def test_play_golf_ten_days():
    X, y = load_play_golf(return_X_y=True)
    est = CARTClassifier(criterion="entropy").fit(X, y)
    root = split_candidates(est, X, y).set_index("feature")
    assert root.loc["humidity", "delta_i"] == pytest.approx(
        _entropy(6, 4) - 0.6 * _entropy(2, 4), rel=1e-12)
    assert round(root.loc["humidity", "delta_i"], 3) == 0.420
    assert round(root.loc["temperature", "delta_i"], 3) == 0.125
    assert root.loc["humidity", "chosen"]
    high = split_candidates(est, X, y, node=int(est.tree_.left[0]))
    assert round(high["delta_i"].iloc[0], 3) == 0.459


#: The 14-day weather table (Quinlan 1986, "Induction of decision trees", Table 1).
WEATHER = """outlook,temperature,humidity,windy,play
sunny,hot,high,false,no
sunny,hot,high,true,no
overcast,hot,high,false,yes
rain,mild,high,false,yes
rain,cool,normal,false,yes
rain,cool,normal,true,no
overcast,cool,normal,true,yes
sunny,mild,high,false,no
sunny,cool,normal,false,yes
rain,mild,normal,false,yes
sunny,mild,normal,true,yes
overcast,mild,high,true,yes
overcast,hot,normal,false,yes
rain,mild,high,true,no"""


def test_play_golf_fourteen_days():
    import io

    frame = pd.read_csv(io.StringIO(WEATHER), dtype=str)
    X, y = frame.drop(columns="play"), frame["play"]
    gains = multiway_gains(X, y).set_index("feature")["gain"]
    # the published figures (0.246, 0.151, 0.048, 0.029 bits) come from rounded
    # intermediate entropies: exactly 0.2467, 0.1518, 0.0481, 0.0292
    published = {"outlook": 0.246, "humidity": 0.151, "windy": 0.048, "temperature": 0.029}
    for f, value in published.items():
        assert gains[f] == pytest.approx(value, abs=1e-3)
    assert gains["outlook"] == pytest.approx(
        _entropy(9, 5) - 5 / 14 * _entropy(2, 3) - 4 / 14 * 0 - 5 / 14 * _entropy(3, 2),
        rel=1e-12)
    assert gains.index[0] == "outlook"
    # CART's binary splits: the two-valued features give the same gains; outlook's best
    # subset split, {overcast} against {rain, sunny}, gains less than its three-way split
    est = CARTClassifier(criterion="entropy", max_depth=1).fit(X, y)
    table = split_candidates(est, X, y)
    best = table.loc[table.groupby("feature")["delta_i"].idxmax()].set_index("feature")
    assert best.loc["humidity", "delta_i"] == pytest.approx(gains["humidity"], rel=1e-12)
    assert best.loc["windy", "delta_i"] == pytest.approx(gains["windy"], rel=1e-12)
    root = _entropy(9, 5)
    assert best.loc["outlook", "delta_i"] == pytest.approx(root - 10 / 14 * _entropy(5, 5),
                                                           rel=1e-12)
    assert {best.loc["outlook", "left"], best.loc["outlook", "right"]} == {
        "{overcast}", "{rain, sunny}"}
    assert table.loc[table["chosen"], "feature"].item() == "outlook"


@pytest.mark.parametrize("name, petal_only, Vs", [("iris_petal", True, [2, 5, 25]),
                                                  ("iris", False, [6, 15, 50, 75])])
def test_iris_repeated_cv_columns(name, petal_only, Vs):
    """The repeated-partition columns of the CV tables of docs/maths.md §6 (mean, std
    and mean SE of R^CV over the 10 partitions of experiments/monograph.toml), rebuilt
    from each partition's N_ij tables."""
    from cartjit.experiments.cells import cell_seed

    table = pd.read_csv(MONOGRAPH / f"{name}.csv")
    X, y = load_iris(petal_only=petal_only, return_X_y=True)
    for V in Vs:
        risks, ses = [], []
        for r in range(10):
            est = CARTClassifierCV(cv=V, random_state=cell_seed(1984, name, V, r, False),
                                   cv_predictions=True).fit(X, y)
            steps = cv_steps(est, y)
            risks.append([(N.sum() - np.trace(N)) / 150 for N in (
                steps.counts.loc[k].drop(columns="N_j").to_numpy()
                for k in steps.risk.index)])
            ses.append(steps.risk["cv_se"].to_numpy())
        np.testing.assert_allclose(np.mean(risks, axis=0), table[f"V{V}_mean"], rtol=1e-12)
        np.testing.assert_allclose(np.std(risks, axis=0, ddof=1), table[f"V{V}_std"],
                                   rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(np.mean(ses, axis=0), table[f"V{V}_se"], rtol=1e-12)
