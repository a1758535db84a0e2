"""Seeded mixed numeric/categorical problems for the categorical benchmarks.

:func:`make_mixed` draws ``n_samples`` rows of 10 numeric features ``x0`` ... ``x9``
(independent standard normal) and 5 unordered categorical features ``c0`` ... ``c4``,
each with the same number of levels, in one of three settings:

===== ======== ===================== ===============================================
kind  levels   response              categorical part
===== ======== ===================== ===============================================
``a`` 20       2 classes             one latent score, thresholded
``b`` 20       regression            the same kind of score plus Gaussian noise
``c`` 8        3 classes             one score per class, arg max (multinomial logit)
===== ======== ===================== ===============================================

Each latent score is a sum of terms in which the categorical features act through
*subsets of levels*, not through any order of their codes, plus numeric terms:

* ``c0``, ``c1``: a main effect ``w (2 [c in S] - 1) + 0.3 z_c`` (S a random subset of
  the levels, ``z_c`` a per-level normal draw, so the levels are not merely two groups);
* ``c2``: the same kind of subset effect with its sign set by ``x0 > 0`` (it reverses
  across a numeric split, so the best subset of ``c2`` differs between branches);
* ``c3``, ``c4``: an interaction ``[c3 in S3] XOR [c4 in S4]``;
* numerics: an oblique linear term in ``x0, x1, x2``, ``sin(2 x3)``, ``x4 sign(x5)``
  and a staircase in ``x6``; ``x7``, ``x8``, ``x9`` are noise.

For ``c`` every class has its own subsets and per-level draws, so the class
proportions of the levels are not ordered along one axis (no ordering theorem: subset
search or a heuristic). The noise (logistic for ``a``, Gumbel per class for ``c``, so that
``P(y | x)`` is a logit model; Gaussian for ``b``) makes trees grown to purity deep.

The problem (subsets, weights, level frequencies, threshold) is drawn from its own
stream, seeded by ``problem_state`` and the kind only; the rows are drawn from another,
seeded by ``random_state``. Draws of any size with the same ``problem_state`` are the same
problem, so held-out rows are simply another ``random_state``. Level frequencies are
uneven (a Dirichlet draw) but every level has a probability of at least 1/(4 L).

The result carries the same rows three ways: a pandas DataFrame whose categorical
columns have dtype ``category`` (all levels declared, named ``L00``, ``L01``, ...),
the one-hot encoding of it for scikit-learn (``pandas.get_dummies`` on the categorical
columns, numeric columns first, float64), and the level codes as numbers (for an
ordered split on the codes, the encoding subset splits are meant to beat).

Example::

    from mixed_data import make_mixed
    train = make_mixed("a", 100_000)
    test = make_mixed("a", 50_000, random_state=1)
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = ["KINDS", "MixedData", "make_mixed", "with_holes"]

N_NUMERIC = 10
N_CATEGORICAL = 5

#: kind -> (levels per categorical feature, classes; 0 for regression)
KINDS = {"a": (20, 2), "b": (20, 0), "c": (8, 3)}

_KIND_SEED = {"a": 1, "b": 2, "c": 3}
#: rows of the problem's own calibration sample (fixes the threshold of kind a)
_CALIBRATION_ROWS = 20_000


class MixedData(NamedTuple):
    """The rows of one draw of :func:`make_mixed`, in three encodings.

    Attributes
    ----------
    kind : str
        ``"a"``, ``"b"`` or ``"c"``.
    task : str
        ``"classification"`` or ``"regression"``.
    frame : pandas.DataFrame
        ``x0`` ... ``x9`` (float64), then ``c0`` ... ``c4`` (unordered ``category``,
        levels ``L00`` ...).
    y : numpy.ndarray
        int64 class labels 0 .. J-1, or float64 responses.
    onehot : numpy.ndarray
        float64 (n, 10 + 5 L), C-contiguous: the numeric columns, then one 0/1 column
        per level of each categorical feature (every declared level, seen or not).
    onehot_columns : list of str
        Column names of ``onehot`` (``c0_L00`` ...).
    ordinal : numpy.ndarray
        float64 (n, 15), C-contiguous: the numeric columns, then the level codes.
    n_levels : int
        Levels of each categorical feature.
    categorical : list of str
        Names of the categorical columns of ``frame``.
    """

    kind: str
    task: str
    frame: pd.DataFrame
    y: np.ndarray
    onehot: np.ndarray
    onehot_columns: list
    ordinal: np.ndarray
    n_levels: int
    categorical: list


# --------------------------------------------------------------------------- arguments

def _check_seed(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r} of type "
                        f"{type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value}")
    return int(value)


def _check_args(kind, n_samples, random_state, problem_state):
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    if isinstance(n_samples, (bool, np.bool_)) or not isinstance(n_samples, numbers.Integral):
        raise TypeError(f"n_samples must be a positive integer, got {n_samples!r} of type "
                        f"{type(n_samples).__name__}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples}")
    return int(n_samples), _check_seed("random_state", random_state), \
        _check_seed("problem_state", problem_state)


# --------------------------------------------------------------------------- problem

def _subset(rng, n_levels):
    """A random subset of the levels as a 0/1 vector, neither empty nor full."""
    while True:
        member = rng.integers(0, 2, n_levels)
        if 0 < member.sum() < n_levels:
            return member


def _level_effect(rng, n_levels, weight):
    """``weight (2 [level in S] - 1) + 0.3 z``: a subset effect with per-level spread."""
    return weight * (2.0 * _subset(rng, n_levels) - 1.0) + 0.3 * rng.standard_normal(n_levels)


def _draw_problem(kind, problem_state):
    """Everything but the rows: level frequencies, subsets, weights, threshold."""
    n_levels, n_classes = KINDS[kind]
    rng = np.random.default_rng([problem_state, _KIND_SEED[kind], 0])
    freq = rng.dirichlet(np.full(n_levels, 2.0), size=N_CATEGORICAL)
    freq = 0.75 * freq + 0.25 / n_levels  # every level at least 1/(4 L)
    n_scores = n_classes if n_classes > 2 else 1
    scores = []
    for _ in range(n_scores):
        oblique = rng.standard_normal(3)
        scores.append({
            "oblique": oblique / np.linalg.norm(oblique),
            "numeric": rng.uniform(0.6, 1.0, 3) * rng.choice([-1.0, 1.0], 3),
            "main0": _level_effect(rng, n_levels, 1.0),
            "main1": _level_effect(rng, n_levels, 0.8),
            "flip2": _level_effect(rng, n_levels, 1.0),
            "xor3": _subset(rng, n_levels),
            "xor4": _subset(rng, n_levels),
            "xor_weight": rng.uniform(0.8, 1.2),
        })
    problem = {"n_levels": n_levels, "n_classes": n_classes, "freq": freq,
               "scores": scores, "threshold": 0.0}
    if n_classes == 2:  # threshold at the score's median: balanced classes at any n
        crng = np.random.default_rng([problem_state, _KIND_SEED[kind], 2])
        X, codes = _draw_features(crng, problem, _CALIBRATION_ROWS)
        noisy = _latent(problem, X, codes)[:, 0] + crng.logistic(size=_CALIBRATION_ROWS)
        problem["threshold"] = float(np.median(noisy))
    return problem


# --------------------------------------------------------------------------- rows

def _draw_features(rng, problem, n):
    X = rng.standard_normal((n, N_NUMERIC))
    n_levels = problem["n_levels"]
    codes = np.empty((n, N_CATEGORICAL), dtype=np.int64)
    for k in range(N_CATEGORICAL):
        cdf = np.cumsum(problem["freq"][k])
        cdf[-1] = 1.0
        codes[:, k] = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"),
                                 n_levels - 1)
    return X, codes


def _latent(problem, X, codes):
    """(n, number of scores) latent scores of the rows, before noise."""
    out = np.empty((X.shape[0], len(problem["scores"])))
    for j, s in enumerate(problem["scores"]):
        a, b, c = s["numeric"]
        numeric = (X[:, :3] @ s["oblique"] + a * np.sin(2.0 * X[:, 3])
                   + b * X[:, 4] * np.sign(X[:, 5]) + c * np.floor(2.0 * X[:, 6]) / 2.0)
        side = np.where(X[:, 0] > 0.0, 1.0, -1.0)
        xor = s["xor3"][codes[:, 3]] ^ s["xor4"][codes[:, 4]]
        categorical = (s["main0"][codes[:, 0]] + s["main1"][codes[:, 1]]
                       + side * s["flip2"][codes[:, 2]]
                       + s["xor_weight"] * (2.0 * xor - 1.0))
        out[:, j] = numeric + categorical
    return out


def _response(rng, problem, latent):
    n = latent.shape[0]
    n_classes = problem["n_classes"]
    if n_classes == 0:
        return latent[:, 0] + rng.standard_normal(n)
    if n_classes == 2:
        return (latent[:, 0] + rng.logistic(size=n) > problem["threshold"]).astype(np.int64)
    return np.argmax(latent + rng.gumbel(size=latent.shape), axis=1).astype(np.int64)


def _encodings(X, codes, n_levels):
    levels = [f"L{level:02d}" for level in range(n_levels)]
    columns = {f"x{j}": X[:, j] for j in range(N_NUMERIC)}
    categorical = [f"c{k}" for k in range(N_CATEGORICAL)]
    for k, name in enumerate(categorical):
        columns[name] = pd.Categorical.from_codes(codes[:, k], categories=levels)
    frame = pd.DataFrame(columns)
    dummies = pd.get_dummies(frame, columns=categorical, dtype=np.float64)
    onehot = np.ascontiguousarray(dummies.to_numpy(dtype=np.float64))
    ordinal = np.ascontiguousarray(np.column_stack([X, codes.astype(np.float64)]))
    return frame, onehot, [str(c) for c in dummies.columns], ordinal, categorical


def make_mixed(kind, n_samples=100_000, *, random_state=0, problem_state=0):
    """Draw ``n_samples`` rows of the mixed problem ``kind``.

    Parameters
    ----------
    kind : {"a", "b", "c"}
        ``a``: 20 levels, 2 classes; ``b``: 20 levels, regression; ``c``: 8 levels,
        3 classes (see the module docstring for the model).
    n_samples : int >= 1, default 100000
        Rows to draw.
    random_state : int >= 0, default 0
        Seed of the rows. Another value gives new rows of the same problem (held out).
    problem_state : int >= 0, default 0
        Seed of the problem itself (subsets, weights, level frequencies).

    Returns
    -------
    MixedData
        The rows as a DataFrame with ``category`` columns, as a one-hot float array and
        as level codes, with the response ``y``.

    Raises
    ------
    ValueError, TypeError
        For an unknown ``kind`` or a bad ``n_samples`` or seed (naming the argument).
    """
    n, random_state, problem_state = _check_args(kind, n_samples, random_state,
                                                 problem_state)
    problem = _draw_problem(kind, problem_state)
    rng = np.random.default_rng([random_state, _KIND_SEED[kind], 1])
    X, codes = _draw_features(rng, problem, n)
    y = _response(rng, problem, _latent(problem, X, codes))
    frame, onehot, onehot_columns, ordinal, categorical = _encodings(
        X, codes, problem["n_levels"])
    task = "regression" if problem["n_classes"] == 0 else "classification"
    return MixedData(kind, task, frame, y, onehot, onehot_columns, ordinal,
                     problem["n_levels"], categorical)


def with_holes(frame, fraction, seed=7):
    """A copy of ``frame`` with a fraction ``fraction`` of every column's cells set
    missing (NaN), at random positions drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    mask = rng.random(frame.shape) < fraction
    for k, col in enumerate(frame.columns):
        out.loc[mask[:, k], col] = np.nan
    return out
