"""The real data sets of the classic tree and forest studies.

Bundled (CSV files in ``cartjit/datasets/data``, exported from R's mlbench 2.1 by
``data/export_classics.R``, which rewrites them byte for byte). All of them come from
the UCI Machine Learning Repository, which licenses them under CC BY 4.0:

========================  =====  ========  =======  ===================================
loader                    cases  features  classes  UCI data set (mlbench name)
========================  =====  ========  =======  ===================================
``load_breast_cancer``      699         9        2  Breast Cancer Wisconsin (Original)
                                                    (BreastCancer), 16 cells missing
``load_ionosphere``         351        34        2  Ionosphere (Ionosphere)
``load_glass``              214         9        6  Glass Identification (Glass)
``load_sonar``              208        60        2  Connectionist Bench, Sonar (Sonar)
``load_soybean``            683        35       19  Soybean (Large) (Soybean),
                                                    2,337 cells missing
``load_vehicle``            846        18        4  Statlog (Vehicle Silhouettes)
                                                    (Vehicle)
``load_vowel``              990        10       11  Connectionist Bench, Vowel
                                                    Recognition (Vowel)
``load_votes``              435        16        2  Congressional Voting Records
                                                    (HouseVotes84), 392 cells missing
========================  =====  ========  =======  ===================================

R's factors become pandas ``category`` columns with R's levels in R's order: an R
``ordered`` factor becomes an *ordered* categorical, which cartjit splits as an ordinal
feature (as rpart does), and an unordered factor becomes an unordered categorical.
A missing cell (R's ``NA``) is NaN. The target is a column of strings (R's labels).

Local files. Two data sets are not bundled, and their loaders read a file that you
supply:

``load_pima_diabetes``
    The Pima Indians diabetes data (768 cases, 8 features). UCI withdrew it, citing its
    licence (by 2018), and states no licence for it, so cartjit does not redistribute
    it. The loader
    reads the CSV that ``export_classics.R`` writes with the word ``pima``. It looks
    for the file given as ``path``, then in the folder named by ``CARTJIT_DATA_DIR``,
    and finally asks R's mlbench through ``Rscript`` if R is installed.
``load_heart``
    The Cleveland heart disease data (303 cases, 13 features). UCI licenses it under
    CC BY 4.0, but neither mlbench nor MASS carries it, so no R script can rewrite it.
    The loader reads UCI's ``processed.cleveland.data``.

Without the file, both raise ``FileNotFoundError``, and the message says how to get
the file.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import _check_flag, _finish

__all__ = [
    "load_breast_cancer",
    "load_ionosphere",
    "load_glass",
    "load_sonar",
    "load_soybean",
    "load_vehicle",
    "load_vowel",
    "load_votes",
    "load_pima_diabetes",
    "load_heart",
    "DATA_DIR_VARIABLE",
]

#: The environment variable naming a folder of local data files (Pima, heart).
DATA_DIR_VARIABLE = "CARTJIT_DATA_DIR"


def _data_file(filename):
    return resources.files(__package__).joinpath("data").joinpath(filename)


@lru_cache(maxsize=1)
def _levels_table():
    """``{dataset: {column: (ordered, levels)}}`` from ``classics_levels.csv``."""
    with _data_file("classics_levels.csv").open("rb") as handle:
        table = pd.read_csv(handle, dtype=str, keep_default_na=False)
    out = {}
    for (dataset, column), rows in table.groupby(["dataset", "column"], sort=False):
        ordered = rows["ordered"].iloc[0] == "TRUE"
        out.setdefault(dataset, {})[column] = (ordered, tuple(rows["level"]))
    return out


def _parse_r_csv(source, levels, label):
    """Read a CSV written by R's ``write.csv``: ``NA`` is missing, factor columns
    become categoricals with R's levels (ordered where R's factor is ordered)."""
    frame = pd.read_csv(source, dtype={c: str for c in levels}, keep_default_na=False,
                        na_values=["NA"])
    for column, (ordered, lvls) in levels.items():
        if column not in frame.columns:
            raise ValueError(f"{label}: the factor column {column!r} is missing; "
                             f"columns are {list(frame.columns)}")
        values = frame[column]
        bad = values.notna() & ~values.isin(lvls)
        if bad.any():
            raise ValueError(f"{label}: column {column!r} holds "
                             f"{values[bad].iloc[0]!r}, which is not one of R's levels "
                             f"{list(lvls)}")
        frame[column] = pd.Categorical(values, categories=list(lvls), ordered=ordered)
    return frame


@lru_cache(maxsize=None)
def _bundled(name):
    with _data_file(f"{name}.csv").open("rb") as handle:
        return _parse_r_csv(handle, _levels_table()[name], f"bundled file {name}.csv")


def _classic(name, target, return_X_y, drop=()):
    _check_flag("return_X_y", return_X_y)
    frame = _bundled(name).drop(columns=list(drop)).copy(deep=True)
    frame[target] = frame[target].astype(str)
    # the target last, as in every loader of cartjit.datasets
    frame = frame[[c for c in frame.columns if c != target] + [target]]
    return _finish(frame, target, return_X_y)


def load_breast_cancer(*, return_X_y=False):
    """Load the original Wisconsin breast cancer data (699 cases, 16 missing cells).

    Fine-needle aspirates of breast masses graded by W. H. Wolberg on nine cytological
    characteristics, each on a 1-10 scale. The values are mlbench's ``BreastCancer``. The
    sample code number ``Id`` is dropped: it is not a feature, and some codes repeat.
    This is *not* scikit-learn's ``load_breast_cancer``, which is the later 569-case
    diagnostic (WDBC) data.

    Returns
    -------
    frame : pandas.DataFrame
        699 rows, nine categoricals with the grades as levels, as in mlbench.
        ``Cl.thickness, Cell.size, Cell.shape, Marg.adhesion, Epith.c.size`` are
        ordered (split as ordinal). ``Bare.nuclei, Bl.cromatin, Normal.nucleoli,
        Mitoses`` are unordered (split as nominal), because mlbench stores them as
        unordered factors. To treat them as grades, make them ordered with
        ``frame[c].cat.as_ordered()``. ``Bare.nuclei`` has 16 missing cells. The
        target ``Class`` is ``benign`` (458) or ``malignant`` (241).
    X, y : pandas.DataFrame, pandas.Series
        With ``return_X_y=True``.

    References
    ----------
    W. H. Wolberg and O. L. Mangasarian (1990), Multisurface method of pattern
    separation for medical diagnosis applied to breast cytology. *PNAS* 87,
    9193-9196. UCI Machine Learning Repository, Breast Cancer Wisconsin (Original),
    CC BY 4.0.
    """
    return _classic("breast_cancer", "Class", return_X_y, drop=("Id",))


def load_ionosphere(*, return_X_y=False):
    """Load the Johns Hopkins ionosphere radar data (351 cases, 34 features).

    Returns
    -------
    frame : pandas.DataFrame
        ``V1`` (categorical, levels 0 and 1) and ``V2`` (categorical, the single
        level 0: constant) as in mlbench. ``V3 .. V34`` are floats. The target ``Class``
        is ``good`` (225) or ``bad`` (126).

    References
    ----------
    V. G. Sigillito, S. P. Wing, L. V. Hutton and K. B. Baker (1989), Classification
    of radar returns from the ionosphere using neural networks. *Johns Hopkins APL
    Technical Digest* 10, 262-266. UCI Ionosphere, CC BY 4.0.
    """
    return _classic("ionosphere", "Class", return_X_y)


def load_glass(*, return_X_y=False):
    """Load the forensic glass identification data (214 cases, 9 features, 6 classes).

    Returns
    -------
    frame : pandas.DataFrame
        Refractive index ``RI`` and the oxide contents ``Na, Mg, Al, Si, K, Ca, Ba,
        Fe`` (weight percent), floats. The target ``Type`` is ``1, 2, 3, 5, 6, 7`` (as
        strings; no type 4 in the data) with 70, 76, 17, 13, 9 and 29 cases.

    References
    ----------
    I. W. Evett and E. J. Spiehler (1987), Rule induction in forensic science.
    Central Research Establishment, Home Office Forensic Science Service. UCI Glass
    Identification, CC BY 4.0.
    """
    return _classic("glass", "Type", return_X_y)


def load_sonar(*, return_X_y=False):
    """Load Gorman and Sejnowski's sonar data (208 cases, 60 features).

    Returns
    -------
    frame : pandas.DataFrame
        ``V1 .. V60`` are the energies in 60 frequency bands, between 0 and 1. The target
        ``Class`` is ``M`` (metal cylinder, 111) or ``R`` (rock, 97).

    References
    ----------
    R. P. Gorman and T. J. Sejnowski (1988), Analysis of hidden units in a layered
    network trained to classify sonar targets. *Neural Networks* 1, 75-89. UCI
    Connectionist Bench (Sonar, Mines vs. Rocks), CC BY 4.0.
    """
    return _classic("sonar", "Class", return_X_y)


def load_soybean(*, return_X_y=False):
    """Load the large soybean disease data (683 cases, 35 features, 19 classes).

    The 683 cases of mlbench's ``Soybean``: UCI's ``soybean-large.data`` (307 cases)
    and ``soybean-large.test`` (376) together.

    Returns
    -------
    frame : pandas.DataFrame
        35 categorical features (``plant.stand, precip, temp, germ, leaf.size``
        ordered, the others unordered, with mlbench's levels), 2,337 missing cells in
        all. The target ``Class`` is one of 19 disease names.

    References
    ----------
    R. S. Michalski and R. L. Chilausky (1980), Learning by being told and learning
    from examples. *International Journal of Policy Analysis and Information Systems*
    4(2), 125-161. UCI Soybean (Large), CC BY 4.0.
    """
    return _classic("soybean", "Class", return_X_y)


def load_vehicle(*, return_X_y=False):
    """Load the Turing Institute vehicle silhouettes (846 cases, 18 features, 4 classes).

    Returns
    -------
    frame : pandas.DataFrame
        18 shape measures of a silhouette (mlbench's names: ``Comp, Circ, D.Circ, ...``),
        numeric. The target ``Class`` is ``bus`` (218), ``opel`` (212), ``saab`` (217)
        or ``van`` (199).

    References
    ----------
    J. P. Siebert (1987), Vehicle recognition using rule based methods. Turing
    Institute Research Memorandum TIRM-87-018. UCI Statlog (Vehicle Silhouettes),
    CC BY 4.0.
    """
    return _classic("vehicle", "Class", return_X_y)


def load_vowel(*, return_X_y=False):
    """Load Deterding's vowel recognition data as mlbench has it (990 cases, 11 classes).

    Returns
    -------
    frame : pandas.DataFrame
        ``V1`` is the speaker, an unordered categorical with 15 levels (0-14).
        ``V2 .. V10`` are nine numeric speech features. The target ``Class`` is one of the
        11 vowels (``hid, hId, hEd, ...``), 90 cases each. UCI's file has ten
        numeric features per case. mlbench's version, kept here, has nine.

    References
    ----------
    D. H. Deterding (1989), Speaker normalisation for automatic speech recognition.
    PhD thesis, University of Cambridge. UCI Connectionist Bench (Vowel Recognition,
    Deterding Data), CC BY 4.0.
    """
    return _classic("vowel", "Class", return_X_y)


def load_votes(*, return_X_y=False):
    """Load the 1984 United States Congressional voting records (435 cases, 16 votes).

    Returns
    -------
    frame : pandas.DataFrame
        ``V1 .. V16`` are the votes, unordered categoricals with levels ``n`` and ``y``.
        392 cells are missing (no ``yea`` or ``nay`` recorded). The target ``Class`` is
        ``democrat`` (267) or ``republican`` (168).

    References
    ----------
    Congressional Quarterly Almanac, 98th Congress, 2nd session 1984, Volume XL.
    J. C. Schlimmer (1987), PhD thesis, University of California, Irvine. UCI
    Congressional Voting Records, CC BY 4.0.
    """
    return _classic("votes", "Class", return_X_y)


# --------------------------------------------------------------------- local files

_PIMA_COLUMNS = ("pregnant", "glucose", "pressure", "triceps", "insulin", "mass",
                 "pedigree", "age", "diabetes")
_PIMA_FILES = {True: ("pima_indians_diabetes.csv", "PimaIndiansDiabetes2"),
               False: ("pima_indians_diabetes_raw.csv", "PimaIndiansDiabetes")}


def _local_path(path, filename):
    """The file to read: ``path`` (a file or a folder), else ``$CARTJIT_DATA_DIR``."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file or folder path (str or os.PathLike) or "
                            f"None, got {path!r} of type {type(path).__name__}")
        candidate = Path(path)
        if candidate.is_dir():
            candidate = candidate / filename
        if not candidate.is_file():
            raise FileNotFoundError(f"path: no file {str(candidate)!r}")
        return candidate
    folder = os.environ.get(DATA_DIR_VARIABLE, "").strip()
    if folder and (Path(folder) / filename).is_file():
        return Path(folder) / filename
    return None


def _pima_from_r(item):
    """mlbench's Pima data as CSV text, from ``Rscript`` (None without R or mlbench)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None
    code = (f"suppressPackageStartupMessages(library(mlbench)); data({item}); "
            f"write.csv({item}, stdout(), row.names = FALSE)")
    try:
        done = subprocess.run([rscript, "-e", code], capture_output=True, text=True,
                              timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def load_pima_diabetes(path=None, *, zeros_as_missing=True, return_X_y=False):
    """Load the Pima Indians diabetes data (768 cases, 8 features) from a local source.

    This data set is not bundled: the UCI repository withdrew it, citing its licence,
    and no licence to redistribute it is stated. The loader looks for it in this order:

    1. ``path``: the CSV file, or a folder that holds it under the standard name
       (``pima_indians_diabetes.csv``, or ``pima_indians_diabetes_raw.csv`` with
       ``zeros_as_missing=False``);
    2. that file in the folder named by the environment variable ``CARTJIT_DATA_DIR``;
    3. R's mlbench through ``Rscript``, if R and mlbench are installed.

    To write the files once: ``Rscript cartjit/datasets/data/export_classics.R DIR
    pima`` (from a source checkout), then set ``CARTJIT_DATA_DIR=DIR``.

    Parameters
    ----------
    path : str, os.PathLike or None
        The file or folder to read.
    zeros_as_missing : bool, default True
        True: mlbench's ``PimaIndiansDiabetes2``, in which the physically impossible
        zeros of ``glucose, pressure, triceps, insulin, mass`` are missing (652
        cells). False: ``PimaIndiansDiabetes``, the UCI file as the older studies
        (Breiman 1996) used it, zeros kept.
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        768 rows, the numeric ``pregnant, glucose, pressure, triceps, insulin, mass,
        pedigree, age`` and the target ``diabetes`` (``neg`` 500, ``pos`` 268).

    Raises
    ------
    FileNotFoundError
        ``path`` names no file, or nothing is found and R cannot provide the data.
    ValueError
        The file does not hold the 768 cases and 9 columns of the data.

    References
    ----------
    J. W. Smith, J. E. Everhart, W. C. Dickson, W. C. Knowler and R. S. Johannes
    (1988), Using the ADAP learning algorithm to forecast the onset of diabetes
    mellitus. *Proceedings of the Symposium on Computer Applications and Medical
    Care*, 261-265. Original owners: National Institute of Diabetes and Digestive and
    Kidney Diseases.
    """
    zeros_as_missing = _check_flag("zeros_as_missing", zeros_as_missing)
    _check_flag("return_X_y", return_X_y)
    filename, item = _PIMA_FILES[zeros_as_missing]
    found = _local_path(path, filename)
    if found is not None:
        label = str(found)
        source = found
    else:
        text = _pima_from_r(item)
        if text is None:
            raise FileNotFoundError(
                f"the Pima Indians diabetes data are not bundled with cartjit (UCI "
                f"withdrew them over their licence). Write them with R's mlbench: "
                f"Rscript cartjit/datasets/data/export_classics.R DIR pima, then pass "
                f"path=DIR or set {DATA_DIR_VARIABLE}=DIR; or install R and mlbench, "
                f"which this loader then asks directly")
        label = f"R's mlbench::{item}"
        source = io.StringIO(text)
    frame = _parse_r_csv(source, {}, label)
    if tuple(frame.columns) != _PIMA_COLUMNS or len(frame) != 768:
        raise ValueError(f"{label}: expected 768 rows with the columns "
                         f"{list(_PIMA_COLUMNS)}, got {len(frame)} rows with "
                         f"{list(frame.columns)}")
    frame["diabetes"] = frame["diabetes"].astype(str)
    for column in _PIMA_COLUMNS[:-1]:
        frame[column] = frame[column].astype(np.float64)
    return _finish(frame, "diabetes", return_X_y)


_HEART_COLUMNS = ("age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach",
                  "exang", "oldpeak", "slope", "ca", "thal", "num")
# UCI's codes of the nominal columns, as categoricals (the others stay numeric)
_HEART_NOMINAL = {"cp": ("1", "2", "3", "4"), "restecg": ("0", "1", "2"),
                  "slope": ("1", "2", "3"), "thal": ("3", "6", "7")}
HEART_URL = ("https://archive.ics.uci.edu/dataset/45/heart+disease "
             "(file processed.cleveland.data)")


def load_heart(path=None, *, binary=True, return_X_y=False):
    """Load the Cleveland heart disease data (303 cases, 13 features) from UCI's file.

    Not bundled: UCI licenses the data under CC BY 4.0, but R's mlbench and MASS do
    not carry them, so no committed script could regenerate a bundled copy. Download
    ``processed.cleveland.data`` from the UCI repository (``HEART_URL``) and pass its
    path, or put it in the folder named by ``CARTJIT_DATA_DIR``.

    Parameters
    ----------
    path : str, os.PathLike or None
        UCI's ``processed.cleveland.data``, or a folder that holds it.
    binary : bool, default True
        True: the usual two-class target ``disease`` (``absent`` for ``num = 0``,
        ``present`` for 1-4). False: UCI's ``num`` (0-4) as an integer target.
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        303 rows. ``age, sex, trestbps, chol, fbs, thalach, exang, oldpeak, ca`` are
        numeric. ``cp`` (chest pain type 1-4), ``restecg`` (0-2), ``slope`` (1-3) and
        ``thal`` (3 normal, 6 fixed defect, 7 reversible defect) are unordered
        categoricals. UCI's ``?`` is missing: 4 cells of ``ca`` and 2 of ``thal``.

    Raises
    ------
    FileNotFoundError
        No file: the message gives the UCI address.
    ValueError
        The file is not UCI's 303 x 14 table.

    References
    ----------
    R. Detrano, A. Janosi, W. Steinbrunn, M. Pfisterer, J. Schmid, S. Sandhu, K. Guppy,
    S. Lee and V. Froelicher (1989), International application of a new probability
    algorithm for the diagnosis of coronary artery disease. *American Journal of
    Cardiology* 64, 304-310. UCI Heart Disease, CC BY 4.0.
    """
    binary = _check_flag("binary", binary)
    _check_flag("return_X_y", return_X_y)
    found = _local_path(path, "processed.cleveland.data")
    if found is None:
        raise FileNotFoundError(
            f"the Cleveland heart data are not bundled with cartjit; download "
            f"processed.cleveland.data from {HEART_URL} and pass path=FILE, or put it "
            f"in the folder named by {DATA_DIR_VARIABLE}")
    frame = pd.read_csv(found, header=None, names=list(_HEART_COLUMNS), na_values=["?"],
                        keep_default_na=False, dtype=str)
    if frame.shape != (303, 14) or frame.isna().all(axis=1).any():
        raise ValueError(f"{found}: expected UCI's processed.cleveland.data, 303 rows of "
                         f"14 comma-separated values, got {frame.shape[0]} rows")
    for column in _HEART_COLUMNS:
        if column in _HEART_NOMINAL:
            continue
        try:
            frame[column] = frame[column].astype(np.float64)
        except ValueError as exc:
            raise ValueError(f"{found}: column {column!r} is not numeric ({exc})") from None
    for column, levels in _HEART_NOMINAL.items():
        # UCI writes the codes as 1.0, 2.0, ...: compare them as numbers
        codes = pd.to_numeric(frame[column], errors="coerce")
        text = codes.map(lambda v: "" if pd.isna(v) else f"{v:g}").where(codes.notna())
        if (text.notna() & ~text.isin(levels)).any() or (
                codes.isna() & frame[column].notna()).any():
            raise ValueError(f"{found}: column {column!r} holds a code outside "
                             f"{list(levels)}")
        frame[column] = pd.Categorical(text, categories=list(levels))
    if binary:
        frame["disease"] = np.where(frame["num"] > 0, "present", "absent")
        frame = frame.drop(columns=["num"])
        return _finish(frame, "disease", return_X_y)
    frame["num"] = frame["num"].astype(np.int64)
    return _finish(frame, "num", return_X_y)
