"""The simulated problems of the tree literature, written from their published definitions.

Classification (the class is drawn first, uniformly over the classes, then the features
given the class):

:func:`make_waveform`
    The CART book's waveform recognition problem (Breiman, Friedman, Olshen and Stone
    1984, §2.6.2): 21 features, 3 classes, each case a random convex combination of two
    of three triangular waveforms plus Gaussian noise. Bayes error about 14 %.
:func:`make_led`, :func:`make_led24`
    The CART book's digit recognition problem (§2.6.1): the 7 segments of a LED display
    showing a digit, each segment flipped with probability 0.1. Bayes error 26 %.
    ``make_led24`` adds the book's 17 independent fair-coin noise variables (24
    features; same Bayes error).
:func:`make_twonorm`, :func:`make_threenorm`, :func:`make_ringnorm`
    Breiman's (1996, "Bias, variance and arcing classifiers") 20-dimensional Gaussian
    problems; Bayes errors 2.3 %, 10.5 % and 1.3 % (the exact values of the
    definitions: 2.28 %, 10.46 % and 1.24 %).

Regression (Friedman 1991, "Multivariate adaptive regression splines"):

:func:`make_friedman1`, :func:`make_friedman2`, :func:`make_friedman3`
    Friedman's three test functions with their standard Gaussian noise: standard
    deviations 1, 125 and 0.1 (the last two chosen, as in Breiman's bagging and arcing
    papers, for a signal-to-noise ratio of about 3:1, a ratio of standard deviations).

Every generator takes the number of cases ``n``, a ``noise`` level (its meaning is stated
per generator; the default is the published problem), ``random_state`` (``None``, an
integer seed >= 0 or a ``numpy.random.Generator``; the same seed gives the same data)
and ``return_X_y``. It returns a :class:`pandas.DataFrame` with the feature columns
``x1, x2, ...`` followed by the target (``class``, int64, for classification; ``y``,
float64, for regression), or, with ``return_X_y=True``, the arrays ``(X, y)`` as
:func:`make_classification` does: ``X`` float64 and C-contiguous, ``y`` int64 labels or
float64 responses. Class labels are those of the papers: 1, 2, 3 for the waveforms,
the digit 0-9 for the LED, 1 and 2 for the Gaussian problems.

Bad arguments are refused before anything is drawn, with a ``TypeError`` (wrong kind of
value) or ``ValueError`` (out of range) naming the argument; a request too large for the
memory limit gets :class:`~cartjit.engine.limits.MemoryLimitError`.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._common import _check_flag
from ._synthetic import _check_int, _check_real, _check_size, _make_rng

__all__ = [
    "make_waveform",
    "make_led",
    "make_led24",
    "make_twonorm",
    "make_threenorm",
    "make_ringnorm",
    "make_friedman1",
    "make_friedman2",
    "make_friedman3",
    "WAVEFORMS",
    "LED_SEGMENTS",
]


def _arrays_or_frame(X, y, target, return_X_y):
    """``(X, y)`` arrays, or one DataFrame with the columns ``x1 .. xp`` and ``target``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if return_X_y:
        return X, y
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(X.shape[1])])
    frame[target] = y
    return frame


# ------------------------------------------------------------------------- waveform

def _triangle(peak):
    """``max(6 - |m - peak|, 0)`` for m = 1 .. 21."""
    m = np.arange(1, 22, dtype=np.float64)
    return np.maximum(6.0 - np.abs(m - peak), 0.0)


#: The three base waveforms h1, h2, h3 of the CART book (§2.6.2), rows of a (3, 21)
#: array: triangles of height 6 with peaks at m = 7, 15 and 11.
WAVEFORMS = np.stack([_triangle(7), _triangle(15), _triangle(11)])
WAVEFORMS.setflags(write=False)

# class k (1, 2, 3) mixes u * h_a + (1 - u) * h_b with (a, b) = (1, 2), (1, 3), (2, 3)
_WAVE_PAIRS = ((0, 1), (0, 2), (1, 2))


def make_waveform(n, *, noise=1.0, random_state=None, return_X_y=False):
    """Sample the CART book's waveform recognition problem (21 features, 3 classes).

    Definition (Breiman et al. 1984, §2.6.2): with the triangular waveforms
    ``h1(m) = max(6 - |m - 7|, 0)``, ``h2(m) = h1(m - 8)``, ``h3(m) = h1(m - 4)``
    (m = 1 .. 21; peaks at 7, 15 and 11), a case of class 1, 2 or 3 (prior 1/3 each) is

    ``x_m = u h_a(m) + (1 - u) h_b(m) + noise * e_m``,  m = 1 .. 21,

    with (a, b) = (1, 2) for class 1, (1, 3) for class 2 and (2, 3) for class 3,
    ``u`` uniform on [0, 1] and ``e_m`` independent standard normal. Class 1 thus
    mixes the two outer waveforms and classes 2 and 3 mix an outer one with the middle
    one. This is the labelling of the book's generator at UCI and of R's
    ``mlbench.waveform``. Some texts shift the waveforms around m = 11 instead, which
    permutes the class labels but leaves the problem unchanged.

    Bayes error: about 0.14 in the book. The exact Bayes error of this definition is
    0.1329 (a numerical integration, docs/datasets.md). The Bayes rule has a closed
    form: given the class, ``x`` is a Gaussian smeared along a segment.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 1.0
        Standard deviation of the Gaussian noise ``e``, >= 0 (the book: 1).
    random_state : None, int >= 0 or numpy.random.Generator, default None
        Seed of ``numpy.random.default_rng``.
    return_X_y : bool, default False
        Return ``(X, y)`` arrays instead of a DataFrame.

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x21`` (float64) and ``class`` (int64: 1, 2, 3).
    X, y : ndarray
        With ``return_X_y=True``: ``X`` (n, 21) float64, ``y`` (n,) int64.

    References
    ----------
    L. Breiman, J. H. Friedman, R. A. Olshen and C. J. Stone (1984), *Classification
    and Regression Trees*, Wadsworth, §2.6.2, pp. 49-55.
    """
    n = _check_int("n", n, minimum=1)
    noise = _check_real("noise", noise, low=0.0)
    return_X_y = _check_flag("return_X_y", return_X_y)
    _check_size(n, 21)
    rng = _make_rng(random_state)
    y = rng.integers(1, 4, size=n, dtype=np.int64)
    u = rng.random(n)
    e = rng.standard_normal((n, 21))
    X = np.empty((n, 21))
    for k, (a, b) in enumerate(_WAVE_PAIRS, start=1):
        rows = np.flatnonzero(y == k)
        uk = u[rows, None]
        X[rows] = uk * WAVEFORMS[a] + (1.0 - uk) * WAVEFORMS[b]
    X += noise * e
    return _arrays_or_frame(X, y, "class", return_X_y)


# ------------------------------------------------------------------------------ LED

#: The lit segments of each digit 0-9 (rows), in the book's numbering of the segments
#: (§2.6.1, Figure 2.7): x1 top, x2 upper left, x3 upper right, x4 middle, x5 lower
#: left, x6 lower right, x7 bottom.
LED_SEGMENTS = np.array(
    [
        [1, 1, 1, 0, 1, 1, 1],  # 0
        [0, 0, 1, 0, 0, 1, 0],  # 1
        [1, 0, 1, 1, 1, 0, 1],  # 2
        [1, 0, 1, 1, 0, 1, 1],  # 3
        [0, 1, 1, 1, 0, 1, 0],  # 4
        [1, 1, 0, 1, 0, 1, 1],  # 5
        [1, 1, 0, 1, 1, 1, 1],  # 6
        [1, 0, 1, 0, 0, 1, 0],  # 7
        [1, 1, 1, 1, 1, 1, 1],  # 8
        [1, 1, 1, 1, 0, 1, 1],  # 9
    ],
    dtype=np.int64,
)
LED_SEGMENTS.setflags(write=False)


def make_led(n, *, noise=0.1, n_noise=0, random_state=None, return_X_y=False):
    """Sample the CART book's digit recognition problem with a faulty LED display.

    Definition (Breiman et al. 1984, §2.6.1): the digit 0-9 is drawn with probability
    1/10 each; ``x1 .. x7`` are its seven segments (1 lit, 0 dark; numbering in
    :data:`LED_SEGMENTS`), each independently flipped with probability ``noise``. The
    book's 24-variable version (:func:`make_led24`) appends ``n_noise = 17`` variables
    ``x8 .. x24``, each 0 or 1 with probability 1/2, independent of everything else.

    Bayes error: 0.26 in the book (noise 0.1; exactly 0.2600 by enumerating the 128
    segment patterns). The noise variables do not change it.
    The Bayes rule picks the digit whose segments are nearest in Hamming distance.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 0.1
        Probability, in [0, 1], that a segment is flipped.
    n_noise : int, default 0
        Number of pure-noise binary variables appended, >= 0 (the book's second
        version: 17).
    random_state : None, int >= 0 or numpy.random.Generator, default None
        Seed of ``numpy.random.default_rng``.
    return_X_y : bool, default False
        Return ``(X, y)`` arrays instead of a DataFrame.

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x{7 + n_noise}`` (float64, 0 or 1) and ``class`` (int64, the
        digit 0-9).
    X, y : ndarray
        With ``return_X_y=True``.

    References
    ----------
    Breiman et al. (1984), *Classification and Regression Trees*, §2.6.1, pp. 43-49.
    """
    n = _check_int("n", n, minimum=1)
    noise = _check_real("noise", noise, low=0.0, high=1.0)
    n_noise = _check_int("n_noise", n_noise, minimum=0)
    return_X_y = _check_flag("return_X_y", return_X_y)
    _check_size(n, 7 + n_noise)
    rng = _make_rng(random_state)
    y = rng.integers(0, 10, size=n, dtype=np.int64)
    flips = rng.random((n, 7)) < noise
    segments = LED_SEGMENTS[y] ^ flips
    extra = rng.integers(0, 2, size=(n, n_noise))
    X = np.hstack([segments, extra]).astype(np.float64)
    return _arrays_or_frame(X, y, "class", return_X_y)


def make_led24(n, *, noise=0.1, random_state=None, return_X_y=False):
    """The CART book's 24-variable LED problem: :func:`make_led` with ``n_noise=17``.

    Seven noisy segments (``x1 .. x7``) and 17 fair-coin noise variables
    (``x8 .. x24``); Bayes error 0.26 (Breiman et al. 1984, §2.6.1 and §3.5.1).
    """
    return make_led(n, noise=noise, n_noise=17, random_state=random_state,
                    return_X_y=return_X_y)


# ------------------------------------------------------------ Breiman's Gaussians

def _gaussian_start(n, noise, n_features, return_X_y, random_state):
    n = _check_int("n", n, minimum=1)
    noise = _check_real("noise", noise, low=0.0)
    n_features = _check_int("n_features", n_features, minimum=1)
    return_X_y = _check_flag("return_X_y", return_X_y)
    _check_size(n, n_features)
    rng = _make_rng(random_state)
    y = rng.integers(1, 3, size=n, dtype=np.int64)
    return n, noise, n_features, return_X_y, rng, y


def make_twonorm(n, *, noise=1.0, n_features=20, random_state=None, return_X_y=False):
    """Sample Breiman's twonorm problem (20 features, 2 classes).

    Definition (Breiman 1996b): class 1 (prior 1/2) is normal with mean
    ``(a, ..., a)`` and class 2 normal with mean ``(-a, ..., -a)``, both with
    covariance ``noise**2`` times the identity, ``a = 2 / sqrt(n_features)``.

    Bayes error: 2.3 % (Breiman), that is ``Phi(-2)`` = 0.0228 for ``noise = 1`` and
    any ``n_features``; the Bayes rule is the sign of the sum of the features.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 1.0
        Standard deviation of each coordinate, >= 0 (Breiman: 1).
    n_features : int, default 20
        Dimension, >= 1 (Breiman: 20).
    random_state : None, int >= 0 or numpy.random.Generator, default None
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x20`` (float64) and ``class`` (int64: 1, 2).
    X, y : ndarray
        With ``return_X_y=True``.

    References
    ----------
    L. Breiman (1996b), Bias, variance, and arcing classifiers. Technical Report 460,
    Statistics Department, University of California, Berkeley.
    """
    n, noise, d, return_X_y, rng, y = _gaussian_start(n, noise, n_features, return_X_y,
                                                      random_state)
    a = 2.0 / math.sqrt(d)
    sign = np.where(y == 1, 1.0, -1.0)
    X = sign[:, None] * a + noise * rng.standard_normal((n, d))
    return _arrays_or_frame(X, y, "class", return_X_y)


def make_threenorm(n, *, noise=1.0, n_features=20, random_state=None, return_X_y=False):
    """Sample Breiman's threenorm problem (20 features, 2 classes).

    Definition (Breiman 1996b): class 1 (prior 1/2) is drawn with probability 1/2 each
    from the normal with mean ``(a, ..., a)`` and the normal with mean ``(-a, ..., -a)``;
    class 2 is normal with mean ``(a, -a, a, -a, ...)``; all with covariance
    ``noise**2`` times the identity, ``a = 2 / sqrt(n_features)``.

    Bayes error: 10.5 % (Breiman), for ``noise = 1``.

    Parameters are those of :func:`make_twonorm`; ``class`` is 1 or 2.

    References
    ----------
    L. Breiman (1996b), Bias, variance, and arcing classifiers. Technical Report 460,
    Statistics Department, University of California, Berkeley.
    """
    n, noise, d, return_X_y, rng, y = _gaussian_start(n, noise, n_features, return_X_y,
                                                      random_state)
    a = 2.0 / math.sqrt(d)
    half = rng.integers(0, 2, size=n)  # which of class 1's two means
    alternating = np.where(np.arange(d) % 2 == 0, a, -a)
    mean = np.where((y == 1)[:, None],
                    np.where(half == 0, a, -a)[:, None] * np.ones(d),
                    alternating[None, :])
    X = mean + noise * rng.standard_normal((n, d))
    return _arrays_or_frame(X, y, "class", return_X_y)


def make_ringnorm(n, *, noise=1.0, n_features=20, random_state=None, return_X_y=False):
    """Sample Breiman's ringnorm problem (20 features, 2 classes).

    Definition (Breiman 1996b): class 1 (prior 1/2) is normal with mean zero and
    covariance 4 times the identity; class 2 normal with mean ``(a, ..., a)`` and
    unit covariance. Here both standard deviations are multiplied by ``noise``
    (class 1: ``2 * noise``, class 2: ``noise``).

    The shift: ``a = 2 / sqrt(n_features)``, as in the DELVE archive's description of
    Breiman's data. R's mlbench uses ``a = 1 / sqrt(d)``. Breiman states a Bayes error
    of 1.3 %. With ``a = 2 / sqrt(20)`` the exact Bayes error is 1.24 %, and with
    ``a = 1 / sqrt(20)`` it is 1.50 % (both from the noncentral chi-square
    distribution; docs/datasets.md). Only the first agrees with the paper's figure. The
    Bayes rule compares the two Gaussian densities, so the boundary is a sphere around
    class 2.

    Parameters are those of :func:`make_twonorm`; ``class`` is 1 or 2.

    References
    ----------
    L. Breiman (1996b), Bias, variance, and arcing classifiers. Technical Report 460,
    Statistics Department, University of California, Berkeley.
    """
    n, noise, d, return_X_y, rng, y = _gaussian_start(n, noise, n_features, return_X_y,
                                                      random_state)
    a = 2.0 / math.sqrt(d)
    one = y == 1
    scale = np.where(one, 2.0 * noise, noise)
    X = np.where(one, 0.0, a)[:, None] + scale[:, None] * rng.standard_normal((n, d))
    return _arrays_or_frame(X, y, "class", return_X_y)


# ------------------------------------------------------------------------ Friedman

def friedman1_function(X):
    """Friedman's #1 without noise: ``10 sin(pi x1 x2) + 20 (x3 - 1/2)^2 + 10 x4 + 5 x5``."""
    X = np.asarray(X, dtype=np.float64)
    return (10.0 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20.0 * (X[:, 2] - 0.5) ** 2
            + 10.0 * X[:, 3] + 5.0 * X[:, 4])


def friedman2_function(X):
    """Friedman's #2 without noise: ``sqrt(x1^2 + (x2 x3 - 1 / (x2 x4))^2)``."""
    X = np.asarray(X, dtype=np.float64)
    return np.sqrt(X[:, 0] ** 2 + (X[:, 1] * X[:, 2] - 1.0 / (X[:, 1] * X[:, 3])) ** 2)


def friedman3_function(X):
    """Friedman's #3 without noise: ``atan((x2 x3 - 1 / (x2 x4)) / x1)``."""
    X = np.asarray(X, dtype=np.float64)
    return np.arctan((X[:, 1] * X[:, 2] - 1.0 / (X[:, 1] * X[:, 3])) / X[:, 0])


def make_friedman1(n, *, noise=1.0, n_features=10, random_state=None, return_X_y=False):
    """Sample Friedman's regression problem #1 (10 features, 5 of them irrelevant).

    Definition (Friedman 1991, §4.3): ``x`` uniform on ``[0, 1]^n_features`` and

    ``y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + noise * e``,

    ``e`` standard normal; ``x6 ..`` do not enter. Noise variance 1 in the paper
    (``noise = 1``); the noise-free function has variance about 24.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 1.0
        Standard deviation of the Gaussian noise, >= 0.
    n_features : int, default 10
        Number of features, >= 5.
    random_state : None, int >= 0 or numpy.random.Generator, default None
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x10`` and ``y``, float64.
    X, y : ndarray
        With ``return_X_y=True``.

    References
    ----------
    J. H. Friedman (1991), Multivariate adaptive regression splines. *The Annals of
    Statistics* 19(1), 1-67.
    """
    n = _check_int("n", n, minimum=1)
    noise = _check_real("noise", noise, low=0.0)
    n_features = _check_int("n_features", n_features, minimum=5)
    return_X_y = _check_flag("return_X_y", return_X_y)
    _check_size(n, n_features)
    rng = _make_rng(random_state)
    X = rng.random((n, n_features))
    y = friedman1_function(X) + noise * rng.standard_normal(n)
    return _arrays_or_frame(X, y, "y", return_X_y)


def _friedman_sample(function, n, noise, random_state, return_X_y):
    """Friedman's #2 or #3 (``function`` of the inputs) with Gaussian noise, checked."""
    n = _check_int("n", n, minimum=1)
    noise = _check_real("noise", noise, low=0.0)
    return_X_y = _check_flag("return_X_y", return_X_y)
    _check_size(n, 4)
    rng = _make_rng(random_state)
    X = _friedman_inputs(rng, n)
    y = function(X) + noise * rng.standard_normal(n)
    return _arrays_or_frame(X, y, "y", return_X_y)


def _friedman_inputs(rng, n):
    """Friedman's #2 and #3 inputs: x1 ~ U(0, 100), x2 ~ U(40 pi, 560 pi),
    x3 ~ U(0, 1), x4 ~ U(1, 11)."""
    low = np.array([0.0, 40.0 * np.pi, 0.0, 1.0])
    high = np.array([100.0, 560.0 * np.pi, 1.0, 11.0])
    return low + (high - low) * rng.random((n, 4))


def make_friedman2(n, *, noise=125.0, random_state=None, return_X_y=False):
    """Sample Friedman's regression problem #2 (4 features, an impedance).

    Definition (Friedman 1991, §4.4): ``x1 ~ U(0, 100)``, ``x2 ~ U(40 pi, 560 pi)``,
    ``x3 ~ U(0, 1)``, ``x4 ~ U(1, 11)`` independent, and

    ``y = (x1^2 + (x2 x3 - 1 / (x2 x4))^2)^(1/2) + noise * e``.

    The standard noise (Friedman; Breiman 1996a) has standard deviation 125 (variance
    15,625), chosen for a 3:1 signal-to-noise ratio: the noise-free function has
    standard deviation about 379, three times the noise's.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 125.0
        Standard deviation of the Gaussian noise, >= 0.
    random_state : None, int >= 0 or numpy.random.Generator, default None
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x4`` and ``y``, float64.
    X, y : ndarray
        With ``return_X_y=True``.

    References
    ----------
    J. H. Friedman (1991), *The Annals of Statistics* 19(1), 1-67. L. Breiman (1996a),
    Bagging predictors. *Machine Learning* 24, 123-140.
    """
    return _friedman_sample(friedman2_function, n, noise, random_state, return_X_y)


def make_friedman3(n, *, noise=0.1, random_state=None, return_X_y=False):
    """Sample Friedman's regression problem #3 (4 features, a phase angle).

    Inputs as in :func:`make_friedman2`, and

    ``y = atan((x2 x3 - 1 / (x2 x4)) / x1) + noise * e``.

    The standard noise (Friedman; Breiman 1996a) has standard deviation 0.1 (variance
    0.01), for a signal-to-noise ratio of about 3:1: the noise-free function has
    standard deviation about 0.32.

    Parameters
    ----------
    n : int
        Number of cases, >= 1.
    noise : float, default 0.1
        Standard deviation of the Gaussian noise, >= 0.
    random_state : None, int >= 0 or numpy.random.Generator, default None
    return_X_y : bool, default False

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``x1 .. x4`` and ``y``, float64.
    X, y : ndarray
        With ``return_X_y=True``.

    References
    ----------
    J. H. Friedman (1991), *The Annals of Statistics* 19(1), 1-67. L. Breiman (1996a),
    Bagging predictors. *Machine Learning* 24, 123-140.
    """
    return _friedman_sample(friedman3_function, n, noise, random_state, return_X_y)
