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

Categorical data from R's ``datasets`` package (public-domain data that R has shipped
for decades; written once from R with ``write.csv``, values unchanged). Their factors
are pandas ``category`` columns with R's levels in R's order, so that a fit with
``categorical_features="from_dtype"`` sees the levels rpart sees, with the same codes:

``chickwts``
    Weights (g) of 71 chicks after six weeks on one of six feed supplements (``feed``):
    regression on one six-level factor.
``insect_sprays``
    Counts of insects on 72 agricultural experimental units treated with one of six
    insecticides (``spray``, A-F): regression on one six-level factor.
``infert``
    248 women of a matched case-control study of infertility after abortions:
    ``education`` (three levels), ``age``, ``parity``, ``induced`` and ``spontaneous``
    (counts of prior abortions, 2 meaning 2 or more), target ``case`` (1 infertile,
    0 control); R's matching columns ``stratum`` and ``pooled.stratum`` are left out.
``tooth_growth``
    Length of odontoblasts in 60 guinea pigs given vitamin C at three doses (mg/day,
    numeric ``dose``) by one of two delivery methods (``supp``: ``OJ`` orange juice or
    ``VC`` ascorbic acid): regression on a factor and a number.
``npk``
    A classical N, P, K (nitrogen, phosphate, potassium) factorial experiment on the
    growth of peas in six blocks of four plots: ``yield`` (pounds per plot) against the
    factors ``block`` (1-6) and ``N``, ``P``, ``K`` (0 or 1).
``titanic``
    The 2201 people aboard the Titanic, one row each, from R's ``Titanic`` table of
    counts: ``class`` (1st, 2nd, 3rd, Crew), ``sex``, ``age`` (Child, Adult), target
    ``survived`` (No, Yes).
``hair_eye_color``
    592 statistics students, one row each, from R's ``HairEyeColor`` table of counts:
    ``hair`` (4 levels) and ``sex``, target ``eye`` colour (4 classes: Brown, Blue,
    Hazel, Green), a small problem with more than two classes and categorical features.

MASS's ``housing`` (with its ``Freq`` weights) is not bundled.

Each ``load_*`` function returns a fresh :class:`pandas.DataFrame` (mutating it never
affects a later load), or ``(X, y)`` with ``return_X_y=True``. The experiment runner
uses the registry: :func:`list_datasets` and :func:`load_dataset`, which returns a
:class:`Dataset` record.

Synthetic generators (re-exported from :mod:`cartjit.datasets._synthetic`):
:func:`make_classification` and :func:`make_regression`, seeded with
``numpy.random.default_rng``.

The literature's data (docs/datasets.md):

* generators written from their published definitions
  (:mod:`cartjit.datasets._generators`): :func:`make_waveform`, :func:`make_led`,
  :func:`make_led24`, :func:`make_twonorm`, :func:`make_threenorm`,
  :func:`make_ringnorm`, :func:`make_friedman1`, :func:`make_friedman2`,
  :func:`make_friedman3`;
* the real data sets of the classic studies (:mod:`cartjit.datasets._classics`):
  bundled UCI sets exported from R's mlbench (:func:`load_breast_cancer`,
  :func:`load_ionosphere`, :func:`load_glass`, :func:`load_sonar`,
  :func:`load_soybean`, :func:`load_vehicle`, :func:`load_vowel`, :func:`load_votes`)
  and two read from local files (:func:`load_pima_diabetes`, :func:`load_heart`);
* their registry: :func:`literature` (name -> :class:`LiteratureEntry`: task, size,
  citation, licence, provenance, Bayes error or noise variance) and
  :func:`load_literature`, which returns a :class:`Dataset`.

References
----------
R. A. Fisher (1936), The use of multiple measurements in taxonomic problems.
*Annals of Eugenics* 7(2), 179-188.

E. Anderson (1935), The irises of the Gaspe Peninsula. *Bulletin of the American Iris
Society* 59, 2-5.

R Core Team, R: A language and environment for statistical computing, package
``datasets`` (help pages ``?chickwts``, ``?InsectSprays``, ``?infert``,
``?ToothGrowth``, ``?npk``, ``?Titanic``, ``?HairEyeColor`` give the full sources below).

Anonymous (1948), *Biometrika* 35, 214 (chickwts); D. R. McNeil (1977), *Interactive
Data Analysis*, Wiley.

G. Beall (1942), The transformation of data from entomological field experiments.
*Biometrika* 29, 243-262 (InsectSprays).

D. Trichopoulos, N. Handanos, J. Danezis, A. Kalandidi and V. Kalapothaki (1976),
Induced abortion and secondary infertility. *British Journal of Obstetrics and
Gynaecology* 83, 645-650 (infert).

E. W. Crampton (1947), The growth of the odontoblast of the incisor teeth as a criterion
of vitamin C intake of the guinea pig. *The Journal of Nutrition* 33(5), 491-504
(ToothGrowth).

W. N. Venables and B. D. Ripley (2002), *Modern Applied Statistics with S*, 4th ed.,
Springer (npk, after an Imperial College exercise).

R. J. MacG. Dawson (1995), The "unusual episode" data revisited. *Journal of Statistics
Education* 3(3); British Board of Trade (1912), Report on the loss of the S.S. Titanic
(Titanic).

R. D. Snee (1974), Graphical display of two-way contingency tables. *The American
Statistician* 28, 9-12; M. Friendly (1992), Graphical methods for categorical data,
SAS User Group International Conference Proceedings 17, 190-200 (HairEyeColor).
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import NamedTuple

import pandas as pd

from ._common import _check_flag, _finish
from ._synthetic import make_classification, make_regression
from ._generators import (
    make_friedman1,
    make_friedman2,
    make_friedman3,
    make_led,
    make_led24,
    make_ringnorm,
    make_threenorm,
    make_twonorm,
    make_waveform,
)
from ._classics import (
    load_breast_cancer,
    load_glass,
    load_heart,
    load_ionosphere,
    load_pima_diabetes,
    load_sonar,
    load_soybean,
    load_vehicle,
    load_votes,
    load_vowel,
)
from ._literature import LiteratureEntry, literature, load_literature

__all__ = [
    "Dataset",
    "LiteratureEntry",
    "literature",
    "load_literature",
    "load_breast_cancer",
    "load_glass",
    "load_heart",
    "load_ionosphere",
    "load_pima_diabetes",
    "load_sonar",
    "load_soybean",
    "load_vehicle",
    "load_votes",
    "load_vowel",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "make_led",
    "make_led24",
    "make_ringnorm",
    "make_threenorm",
    "make_twonorm",
    "make_waveform",
    "list_datasets",
    "load_dataset",
    "load_chickwts",
    "load_hair_eye_color",
    "load_infert",
    "load_insect_sprays",
    "load_iris",
    "load_npk",
    "load_play_golf",
    "load_potato_yield",
    "load_titanic",
    "load_tooth_growth",
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


# --------------------------------------------------------------------------- R datasets

#: R's factor levels, in R's order, of the categorical columns of the R datasets.
_R_LEVELS = {
    "chickwts.csv": {"feed": ("casein", "horsebean", "linseed", "meatmeal", "soybean",
                              "sunflower")},
    "insect_sprays.csv": {"spray": ("A", "B", "C", "D", "E", "F")},
    "infert.csv": {"education": ("0-5yrs", "6-11yrs", "12+ yrs")},
    "tooth_growth.csv": {"supp": ("OJ", "VC")},
    "npk.csv": {"block": ("1", "2", "3", "4", "5", "6"), "N": ("0", "1"), "P": ("0", "1"),
                "K": ("0", "1")},
    "titanic.csv": {"class": ("1st", "2nd", "3rd", "Crew"), "sex": ("Male", "Female"),
                    "age": ("Child", "Adult")},
    "hair_eye_color.csv": {"hair": ("Black", "Brown", "Red", "Blond"),
                           "sex": ("Male", "Female")},
}


def _r_frame(filename):
    """A bundled R dataset with its factors as pandas categoricals (R's levels)."""
    frame = _read_csv(filename).copy(deep=True)
    for column, levels in _R_LEVELS[filename].items():
        values = frame[column].astype(str)
        frame[column] = pd.Categorical(values, categories=list(levels))
        if frame[column].isna().any():  # a value that is not one of R's levels
            raise ValueError(f"{filename}: column {column!r} holds a value outside "
                             f"{list(levels)}; the bundled file is damaged")
    return frame


def _expand_counts(frame, count="freq"):
    """One row per case of a table of counts (R's ``as.data.frame`` of a table)."""
    rows = frame.index.repeat(frame[count].to_numpy())
    return frame.loc[rows].drop(columns=[count]).reset_index(drop=True)


def load_chickwts(*, return_X_y=False):
    """Load R's ``chickwts``: weights of 71 chicks on six feed supplements.

    An experiment on the effectiveness of feed supplements on the growth rate of
    chickens: newly hatched chicks were randomly allocated into six groups, each given
    a different supplement, and weighed after six weeks.

    Returns
    -------
    frame : pandas.DataFrame
        71 rows: ``feed`` (categorical, 6 levels: casein, horsebean, linseed, meatmeal,
        soybean, sunflower) and ``weight`` (g, the regression target). A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    Anonymous (1948), *Biometrika* 35, 214. R's ``datasets::chickwts``.
    """
    _check_flag("return_X_y", return_X_y)
    return _finish(_r_frame("chickwts.csv"), "weight", return_X_y)


def load_insect_sprays(*, return_X_y=False):
    """Load R's ``InsectSprays``: insect counts on 72 units under six insecticides.

    Returns
    -------
    frame : pandas.DataFrame
        72 rows: ``spray`` (categorical, A-F) and ``count`` (the regression target).
        A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    G. Beall (1942), *Biometrika* 29, 243-262. R's ``datasets::InsectSprays``.
    """
    _check_flag("return_X_y", return_X_y)
    return _finish(_r_frame("insect_sprays.csv"), "count", return_X_y)


def load_infert(*, return_X_y=False):
    """Load R's ``infert``: infertility after spontaneous and induced abortion.

    A matched case-control study: 83 women with secondary infertility (cases) and
    165 controls. R's matching columns ``stratum`` and ``pooled.stratum`` are left out.

    Returns
    -------
    frame : pandas.DataFrame
        248 rows: ``education`` (categorical: 0-5yrs, 6-11yrs, 12+ yrs), ``age``
        (years), ``parity`` (count), ``induced`` and ``spontaneous`` (prior abortions:
        0, 1, 2 meaning 2 or more), and the target ``case`` (1 case, 0 control).
        A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    D. Trichopoulos et al. (1976), *British Journal of Obstetrics and Gynaecology* 83,
    645-650. R's ``datasets::infert``.
    """
    _check_flag("return_X_y", return_X_y)
    return _finish(_r_frame("infert.csv"), "case", return_X_y)


def load_tooth_growth(*, return_X_y=False):
    """Load R's ``ToothGrowth``: odontoblast length in 60 guinea pigs.

    Each animal received one of three doses of vitamin C (0.5, 1 and 2 mg/day) by one
    of two delivery methods, orange juice or ascorbic acid.

    Returns
    -------
    frame : pandas.DataFrame
        60 rows: ``supp`` (categorical: OJ, VC), ``dose`` (mg/day, numeric) and the
        regression target ``len``. A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    E. W. Crampton (1947), *The Journal of Nutrition* 33(5), 491-504. R's
    ``datasets::ToothGrowth``.
    """
    _check_flag("return_X_y", return_X_y)
    return _finish(_r_frame("tooth_growth.csv"), "len", return_X_y)


def load_npk(*, return_X_y=False):
    """Load R's ``npk``: a 2^3 factorial N, P, K experiment on peas in six blocks.

    Returns
    -------
    frame : pandas.DataFrame
        24 rows: ``block`` (categorical, 1-6), ``N``, ``P``, ``K`` (categorical, 0 or 1:
        nutrient applied or not) and the regression target ``yield`` (pounds per
        plot). A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    W. N. Venables and B. D. Ripley (2002), *Modern Applied Statistics with S*.
    R's ``datasets::npk``.
    """
    _check_flag("return_X_y", return_X_y)
    return _finish(_r_frame("npk.csv"), "yield", return_X_y)


def load_titanic(*, return_X_y=False):
    """Load R's ``Titanic`` as one row per person aboard (2201 rows).

    The file holds R's table of counts (``as.data.frame(Titanic)``, 32 rows with a
    count each); the loader repeats each row by its count, in the table's order.

    Returns
    -------
    frame : pandas.DataFrame
        2201 rows: ``class`` (categorical: 1st, 2nd, 3rd, Crew), ``sex`` (Male, Female),
        ``age`` (Child, Adult) and the target ``survived`` (the strings No, Yes).
        A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    R. J. MacG. Dawson (1995), *Journal of Statistics Education* 3(3). R's
    ``datasets::Titanic``.
    """
    _check_flag("return_X_y", return_X_y)
    frame = _expand_counts(_r_frame("titanic.csv"))
    frame["survived"] = frame["survived"].astype(str)
    return _finish(frame, "survived", return_X_y)


def load_hair_eye_color(*, return_X_y=False):
    """Load R's ``HairEyeColor`` as one row per student (592 rows).

    The file holds R's table of counts (32 rows); the loader repeats each row by its
    count. Eye colour has four classes, so a categorical split with more than two
    classes searches subsets of the levels (``max_categories_exhaustive``).

    Returns
    -------
    frame : pandas.DataFrame
        592 rows: ``hair`` (categorical: Black, Brown, Red, Blond), ``sex`` (Male,
        Female) and the target ``eye`` (the strings Brown, Blue, Hazel, Green).
        A fresh copy.
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    R. D. Snee (1974), *The American Statistician* 28, 9-12. R's
    ``datasets::HairEyeColor``.
    """
    _check_flag("return_X_y", return_X_y)
    frame = _expand_counts(_r_frame("hair_eye_color.csv"))
    frame["eye"] = frame["eye"].astype(str)
    frame = frame[["hair", "sex", "eye"]]
    return _finish(frame, "eye", return_X_y)


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
    (
        "chickwts",
        load_chickwts,
        "weight",
        "regression",
        "R's chickwts: weight (g) of 71 chicks against feed supplement (6 levels).",
    ),
    (
        "insect_sprays",
        load_insect_sprays,
        "count",
        "regression",
        "R's InsectSprays: insect counts on 72 units against insecticide (6 levels).",
    ),
    (
        "infert",
        load_infert,
        "case",
        "classification",
        "R's infert: 248 women, infertility case/control against education (3 levels), "
        "age, parity and prior abortions.",
    ),
    (
        "tooth_growth",
        load_tooth_growth,
        "len",
        "regression",
        "R's ToothGrowth: odontoblast length of 60 guinea pigs against vitamin C "
        "delivery (OJ/VC) and dose.",
    ),
    (
        "npk",
        load_npk,
        "yield",
        "regression",
        "R's npk: pea yield on 24 plots against block (6 levels) and N, P, K (0/1).",
    ),
    (
        "titanic",
        load_titanic,
        "survived",
        "classification",
        "R's Titanic, one row per person: survival of 2201 people against class (4 "
        "levels), sex and age.",
    ),
    (
        "hair_eye_color",
        load_hair_eye_color,
        "eye",
        "classification",
        "R's HairEyeColor, one row per student: eye colour (4 classes) of 592 "
        "students against hair colour (4 levels) and sex.",
    ),
)


def list_datasets():
    """Names of the bundled datasets, for :func:`load_dataset`.

    Returns
    -------
    list of str
        Sorted by name.
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
