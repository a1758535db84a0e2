"""Fitted estimators of every kind, and tools to take a model file apart and edit it,
for the model file tests (tests/modelfiles/: test_modelfile.py, test_modelfile_strict.py,
test_hostile_files.py)."""
from __future__ import annotations

import io
import json
import warnings
import zipfile

import numpy as np
import pandas as pd

from cartjit import CARTClassifier, CARTClassifierCV, CARTRegressor, CARTRegressorCV
from cartjit.datasets import load_dataset, load_iris

#: Every member gets this date, as cartjit writes them.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def mixed_frame(n=120, seed=0):
    """A DataFrame with a string, a category, a bool and two numeric columns, with
    missing values in three of them (so the trees have subset splits and surrogates),
    and a class and a numeric target."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue", "white"], n).astype(object),
        "size": pd.Categorical(rng.choice(["S", "M", "L", "XL", "XXL"], n)),
        "flag": rng.random(n) > 0.5,
        "x": rng.normal(size=n),
        "z": rng.normal(size=n),
    })
    signal = frame["colour"].isin(["red", "blue"]).to_numpy() ^ (frame["x"] > 0.3).to_numpy()
    y_class = np.where(signal, "yes", "no").astype(object)
    flip = rng.random(n) < 0.1
    y_class[flip] = np.where(y_class[flip] == "yes", "no", "yes")
    y_reg = 2.0 * signal + frame["z"].to_numpy() + 0.3 * rng.normal(size=n)
    frame["z"] = frame["z"] + 0.2 * frame["x"]  # a surrogate for x
    frame.loc[rng.random(n) < 0.15, "colour"] = None
    frame.loc[rng.random(n) < 0.15, "x"] = np.nan
    frame.loc[rng.random(n) < 0.1, "size"] = np.nan
    return frame, y_class, y_reg


def fitted_estimators():
    """{name: (estimator, X to predict on)}: each estimator kind on numeric data, on a
    categorical DataFrame, and on data with missing values (surrogate splits)."""
    X_frame, y_iris = load_iris(return_X_y=True)
    X_iris = X_frame.to_numpy(dtype=np.float64)  # NumPy input: no feature names
    golf = load_dataset("play_golf")
    Xg, yg = golf.frame[list(golf.features)], golf.frame[golf.target]
    frame, y_class, y_reg = mixed_frame()
    complete = frame.dropna()
    rows = complete.index.to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {
            "classifier-numeric": (CARTClassifier().fit(X_iris, y_iris), X_iris),
            "classifier-pruned": (CARTClassifier(ccp_alpha=0.01, criterion="entropy")
                                  .fit(X_iris, y_iris), X_iris),
            "classifier-golf": (CARTClassifier().fit(Xg, yg), Xg),
            "classifier-surrogates": (CARTClassifier(max_depth=4).fit(frame, y_class), frame),
            "classifier-cv-categorical": (CARTClassifierCV(cv=5, max_surrogate=2)
                                          .fit(complete, y_class[rows]), frame),
            "classifier-cv-priors": (CARTClassifierCV(
                cv=4, priors=[0.3, 0.2, 0.5], n_repeats=2, selection=0.5,
                cost=[[0, 1, 2], [1, 0, 1], [1, 1, 0]]).fit(X_frame, y_iris), X_frame),
            "regressor-numeric": (CARTRegressor(max_depth=3).fit(X_iris[:, 1:], X_iris[:, 0]),
                                  X_iris[:, 1:]),
            "regressor-surrogates": (CARTRegressor(min_samples_leaf=5).fit(frame, y_reg),
                                     frame),
            "regressor-cv": (CARTRegressorCV(cv="loo", selection="min")
                             .fit(X_iris[:, 1:], X_iris[:, 0]), X_iris[:, 1:]),
            "regressor-cv-surrogates": (CARTRegressorCV(cv=np.arange(120) % 3)
                                        .fit(frame, y_reg), frame),
        }
    return out


def fitted_forests():
    """{name: (forest, X to predict on, y)}: each forest estimator, on categorical data
    with missing values (subset splits, surrogates), with OOB results and importances,
    case weights with zeros (rows that take no part), pruned trees (ccp_alpha, cp, CV)
    and both votings."""
    from cartjit import (BaggedCARTClassifier, BaggedCARTRegressor, RandomForestClassifier,
                         RandomForestRegressor)

    frame, y_class, y_reg = mixed_frame()
    X_frame, y_iris = load_iris(return_X_y=True)
    w = np.ones(len(frame))
    w[::9] = 0.0
    w[1::7] = 2.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {
            "forest-classifier": (RandomForestClassifier(
                12, oob_score=True, oob_importance=True, random_state=5, max_depth=5)
                .fit(frame, y_class), frame, y_class),
            "forest-regressor": (RandomForestRegressor(
                10, oob_score=True, oob_importance=True, min_samples_leaf=3)
                .fit(frame, y_reg, sample_weight=w), frame, y_reg),
            "bagged-classifier": (BaggedCARTClassifier(
                6, cp=0.02, voting="vote", priors="equal", max_samples=0.7, replace=False,
                oob_score=True).fit(frame, y_class, sample_weight=w), frame, y_class),
            "bagged-regressor": (BaggedCARTRegressor(5, ccp_alpha=0.05, max_surrogate=2)
                                 .fit(frame, y_reg), frame, y_reg),
            "forest-cv-pruned": (RandomForestClassifier(
                4, prune="cv", prune_folds=3, max_features=2,
                cost=[[0, 1, 2], [1, 0, 1], [3, 1, 0]]).fit(X_frame, y_iris),
                X_frame, y_iris),
            "forest-no-bootstrap": (RandomForestRegressor(3, bootstrap=False, max_depth=4)
                                    .fit(X_frame.iloc[:, 1:], X_frame.iloc[:, 0]),
                                    X_frame.iloc[:, 1:], X_frame.iloc[:, 0]),
        }
    return out


# --------------------------------------------------------------------------- editing

def read_members(path):
    """{member name: bytes} of a model file, in archive order."""
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def zip_members(members):
    """The bytes of a model file holding ``members`` ({name: bytes}), stored."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, ZIP_DATE), data)
    return buf.getvalue()


def npy(arr):
    out = io.BytesIO()
    np.lib.format.write_array(out, np.asarray(arr), version=(1, 0), allow_pickle=False)
    return out.getvalue()


def array_of(data):
    return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)


def meta_of(members):
    return json.loads(members["metadata.json"])


def with_meta(members, meta):
    out = dict(members)
    out["metadata.json"] = json.dumps(meta).encode()
    return out


def with_array(members, name, arr):
    out = dict(members)
    out[name] = npy(arr)
    return out
