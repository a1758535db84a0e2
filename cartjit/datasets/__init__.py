"""Small bundled datasets and seeded synthetic problems.

Bundled datasets (CSV files in ``cartjit/datasets/data``, read with pandas):

``iris``
    Fisher's iris data (Fisher 1936; collected by Anderson 1935): 150 flowers, 50 of
    each of *Iris setosa*, *versicolor* and *virginica*, four measurements in cm. The
    worked example of docs/maths.md §6. The values are those of R's ``datasets::iris``, because
    R's ``rpart`` is cartjit's test oracle. R's copy follows Fisher's paper; the UCI
    repository's ``iris.data`` differs from it in two cases (case 35 has petal width
    0.1 instead of 0.2, case 38 reads 4.9, 3.1, 1.5, 0.1 instead of 4.9, 3.6, 1.4, 0.1;
    see the UCI errata), and so do copies taken from it, such as scikit-learn's before
    version 0.20.
``iris_petal``
    The same 150 cases with only petal length and petal width (docs/maths.md §6, first problem).
``potato_yield``
    Rainfall (mm) and potato yield (t/ha) on 15 fields, a one-feature regression
    example from the worked examples of docs/maths.md §6.
``play_golf``
    Ten days with two categorical features, temperature and humidity (``high`` /
    ``normal``), and whether golf was played (``yes`` / ``no``); a classification
    example from the worked examples of docs/maths.md §6. With entropy the root split is on
    humidity (gain about 0.420 bits, against 0.125 for temperature).

Each ``load_*`` function returns a fresh :class:`pandas.DataFrame` (mutating it never
affects a later load), or ``(X, y)`` with ``return_X_y=True``. The experiment runner
uses the registry: :func:`list_datasets` and :func:`load_dataset`, which returns a
:class:`Dataset` record.

Synthetic generators (re-exported from :mod:`cartjit.datasets._synthetic`):
:func:`make_classification` and :func:`make_regression`, seeded with
``numpy.random.default_rng``.

References
----------
R. A. Fisher (1936), The use of multiple measurements in taxonomic problems.
*Annals of Eugenics* 7(2), 179-188.

E. Anderson (1935), The irises of the Gaspe Peninsula. *Bulletin of the American Iris
Society* 59, 2-5.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import NamedTuple

import pandas as pd

from ._synthetic import make_classification, make_regression

__all__ = [
    "Dataset",
    "list_datasets",
    "load_dataset",
    "load_iris",
    "load_play_golf",
    "load_potato_yield",
    "make_classification",
    "make_regression",
]

_IRIS_FEATURES = ("sepal_length", "sepal_width", "petal_length", "petal_width")
_IRIS_PETAL = ("petal_length", "petal_width")


class Dataset(NamedTuple):
    """One dataset of the registry, as returned by :func:`load_dataset`.

    Attributes
    ----------
    name : str
        The registry name.
    frame : pandas.DataFrame
        The data: the feature columns followed by the target column. A fresh copy.
    target : str
        Name of the target column of ``frame``.
    features : tuple of str
        Names of the feature columns of ``frame``, in order.
    task : str
        ``"classification"`` or ``"regression"``.
    description : str
        One paragraph on what the data are and where they come from.
    """

    name: str
    frame: pd.DataFrame
    target: str
    features: tuple
    task: str
    description: str


@lru_cache(maxsize=None)
def _read_csv(filename: str) -> pd.DataFrame:
    """Parse one bundled CSV once; callers must copy before handing it out."""
    path = resources.files(__name__).joinpath("data").joinpath(filename)
    with path.open("rb") as handle:
        return pd.read_csv(handle)


def _check_flag(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def _finish(frame, target, return_X_y):
    """Return ``frame`` (already a fresh copy), or split it into ``(X, y)``."""
    if return_X_y:
        return frame.drop(columns=[target]), frame[target].copy()
    return frame


def load_iris(*, petal_only=False, return_X_y=False):
    """Load Fisher's iris data (150 cases, 3 classes of 50).

    The values are R's ``datasets::iris`` (R's ``rpart`` is cartjit's test oracle),
    which follow Fisher (1936); the UCI copy differs in cases 35 and 38 (see the
    module docstring). Rows are in the classic order: cases 1-50 setosa, 51-100
    versicolor, 101-150 virginica.

    Parameters
    ----------
    petal_only : bool, default False
        Keep only ``petal_length`` and ``petal_width`` as features (the first
        worked example of docs/maths.md §6).
    return_X_y : bool, default False
        Return ``(X, y)`` instead of one DataFrame.

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``sepal_length, sepal_width, petal_length, petal_width, species``
        (or ``petal_length, petal_width, species`` with ``petal_only=True``);
        measurements in cm as float64, ``species`` as the strings ``setosa``,
        ``versicolor`` and ``virginica``. A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``: the feature columns and the ``species`` Series.

    References
    ----------
    R. A. Fisher (1936), The use of multiple measurements in taxonomic problems.
    *Annals of Eugenics* 7(2), 179-188.
    """
    _check_flag("petal_only", petal_only)
    _check_flag("return_X_y", return_X_y)
    features = _IRIS_PETAL if petal_only else _IRIS_FEATURES
    frame = _read_csv("iris.csv")[[*features, "species"]].copy(deep=True)
    return _finish(frame, "species", return_X_y)


def load_potato_yield(*, return_X_y=False):
    """Load the potato yield data: rainfall against yield on 15 fields.

    A one-feature regression example from the worked examples of docs/maths.md §6: the best
    constant predictor is the mean yield, and the best single split maximizes the
    reduction in the sum of squared deviations.

    Parameters
    ----------
    return_X_y : bool, default False
        Return ``(X, y)`` instead of one DataFrame.

    Returns
    -------
    frame : pandas.DataFrame
        15 rows, columns ``rainfall_mm`` (mm) and ``yield_t_ha`` (t/ha), both
        float64, in the order of docs/maths.md §6. A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``: the ``rainfall_mm`` column and the ``yield_t_ha``
        Series.
    """
    _check_flag("return_X_y", return_X_y)
    frame = _read_csv("potato_yield.csv").astype("float64").copy(deep=True)
    return _finish(frame, "yield_t_ha", return_X_y)


def load_play_golf(*, return_X_y=False):
    """Load the play-golf data: ten days, two categorical features.

    A classification example from the worked examples of docs/maths.md §6. Temperature and
    humidity are each ``high`` or ``normal``; the target ``play`` is ``yes`` or
    ``no``. Counts per (temperature, humidity): (high, high) 3 no; (normal, high)
    2 yes and 1 no; (high, normal) 2 yes; (normal, normal) 2 yes. With entropy the
    root split is humidity (gain about 0.420 bits, against 0.125 for temperature),
    and the humidity = high branch then splits on temperature.

    Parameters
    ----------
    return_X_y : bool, default False
        Return ``(X, y)`` instead of one DataFrame.

    Returns
    -------
    frame : pandas.DataFrame
        10 rows, columns ``temperature, humidity, play`` holding strings. A fresh
        copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``: the two feature columns and the ``play`` Series.
    """
    _check_flag("return_X_y", return_X_y)
    frame = _read_csv("play_golf.csv").copy(deep=True)
    return _finish(frame, "play", return_X_y)


# name -> (loader, target, task, description). Immutable: a tuple of tuples.
_REGISTRY = (
    (
        "iris",
        load_iris,
        "species",
        "classification",
        "Fisher's iris data (Fisher 1936), R's datasets::iris values: 150 flowers, "
        "50 each of setosa, versicolor and virginica, four measurements in cm.",
    ),
    (
        "iris_petal",
        lambda: load_iris(petal_only=True),
        "species",
        "classification",
        "Fisher's iris data with only petal length and petal width "
        "(the first worked example of docs/maths.md §6).",
    ),
    (
        "play_golf",
        load_play_golf,
        "play",
        "classification",
        "Play golf: 10 days, categorical temperature and humidity (high/normal), "
        "target play (yes/no); worked examples of docs/maths.md §6.",
    ),
    (
        "potato_yield",
        load_potato_yield,
        "yield_t_ha",
        "regression",
        "Potato yield: rainfall (mm) against yield (t/ha) on 15 fields; "
        "worked examples of docs/maths.md §6.",
    ),
)


def list_datasets():
    """Names of the bundled datasets, for :func:`load_dataset`.

    Returns
    -------
    list of str
        Sorted: ``["iris", "iris_petal", "play_golf", "potato_yield"]``.
    """
    return sorted(entry[0] for entry in _REGISTRY)


def load_dataset(name):
    """Load a bundled dataset by name, with its metadata.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`.

    Returns
    -------
    Dataset
        ``Dataset(name, frame, target, features, task, description)``; ``frame`` is
        a fresh DataFrame, ``features`` the tuple of its non-target columns.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        ``name`` is not a registered dataset; the message lists the allowed names.
    """
    if not isinstance(name, str):
        raise TypeError(
            f"name must be a string, got {name!r} of type {type(name).__name__}; "
            f"allowed names: {', '.join(list_datasets())}"
        )
    for entry_name, loader, target, task, description in _REGISTRY:
        if entry_name == name:
            frame = loader()
            features = tuple(col for col in frame.columns if col != target)
            return Dataset(entry_name, frame, target, features, task, description)
    raise ValueError(
        f"name must be one of {', '.join(repr(n) for n in list_datasets())}, got {name!r}"
    )
