"""Seeded synthetic problems for benchmarks and scaling experiments.

Two generators, both vectorised NumPy driven by one ``numpy.random.default_rng``
stream, so the same ``random_state`` always gives the same arrays:

:func:`make_classification`
    Labels that depend on a few informative features through a nonlinear rule which
    mixes oblique linear scores with sign (XOR-like) interactions between pairs of
    axes. An axis-parallel tree can only approximate the oblique boundaries with a
    staircase of splits, so a good tree has to be deep; a fraction of the labels is
    then flipped at random so that the pruning step has something to prune.
:func:`make_regression`
    A response that is a sum of smooth, curved, step and interaction terms in the
    informative features, plus Gaussian noise.

The features are independent standard normal draws, stored as a float64 C-contiguous
array: continuous, so ties between cases do not occur in practice. The informative
features are columns picked at random (from the same seeded stream) among the
``n_features`` columns; the rest are pure noise.

Both generators validate their arguments before drawing anything: a bad argument gets
a ``TypeError`` (wrong kind of value) or a ``ValueError`` (value out of range) naming
the argument, the value given and what is allowed. A request whose arrays would not fit
the memory limit (``CARTJIT_MEMORY_LIMIT``, half the physical memory by default; see
:func:`cartjit.engine.limits.check_allocation`) is refused up front with a
:class:`~cartjit.engine.limits.MemoryLimitError` (a ``ValueError``): 9e12 rows, or a million
classes, fail at once instead of swapping the machine.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..engine.limits import check_allocation

__all__ = ["make_classification", "make_regression"]


# ---------------------------------------------------------------------------
# argument checks (private; nothing here is jitted)
# ---------------------------------------------------------------------------

def _check_int(name, value, *, minimum, maximum=None, max_name=None):
    """Return ``value`` as a Python int, or raise naming ``name``.

    Python ints and NumPy integers are accepted; bools, floats (even integral
    ones such as ``5.0``) and everything else raise ``TypeError``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer, got {value!r} of type {type(value).__name__}"
        )
    value = int(value)
    if maximum is None:
        if value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    elif not minimum <= value <= maximum:
        bound = f"{max_name} = {maximum}" if max_name else str(maximum)
        raise ValueError(
            f"{name} must be an integer between {minimum} and {bound}, got {value}"
        )
    return value


def _check_real(name, value, *, low, high=None):
    """Return ``value`` as a finite Python float in ``[low, high]``, or raise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    allowed = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g} and finite"
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be a real number {allowed}, got {value!r}")
    return value


def _make_rng(random_state):
    """``numpy.random.default_rng`` for an int seed >= 0, ``None`` or a Generator."""
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(
        random_state, numbers.Integral
    ):
        raise TypeError(
            "random_state must be None, an integer seed >= 0 or a "
            f"numpy.random.Generator, got {random_state!r} of type "
            f"{type(random_state).__name__}"
        )
    if random_state < 0:
        raise ValueError(f"random_state must be an integer seed >= 0, got {random_state}")
    return np.random.default_rng(int(random_state))


def _check_size(n_samples, n_features, n_classes=None):
    """Refuse ``n_samples x n_features`` float64 features (and, for ``n_classes``, the
    ``n_samples x n_classes`` score array) when they would not fit the memory limit."""
    extra = 1 if n_classes is None else n_classes
    check_allocation(8 * n_samples * (n_features + extra),
                     f"n_samples={n_samples:_} x n_features={n_features:_} float64 features"
                     + (f" and the n_samples x n_classes={n_classes:_} class scores"
                        if n_classes is not None else ""),
                     "ask for fewer cases, features or classes")


def _informative(rng, n_features, n_informative):
    """Pick the informative columns (drawn before X: one seed, one problem for any n)."""
    return np.sort(rng.choice(n_features, size=n_informative, replace=False))


# ---------------------------------------------------------------------------
# public generators
# ---------------------------------------------------------------------------

def make_classification(
    n_samples,
    n_features=20,
    n_classes=3,
    *,
    n_informative=5,
    label_noise=0.1,
    random_state=0,
):
    """Generate a seeded multi-class problem that needs a deep tree.

    Parameters
    ----------
    n_samples : int
        Number of cases, >= 1.
    n_features : int, default 20
        Number of features (columns of ``X``), >= 1.
    n_classes : int, default 3
        Number of classes, >= 2. Labels are ``0 .. n_classes - 1``.
    n_informative : int, default 5
        Number of features the labels depend on, between 1 and ``n_features``.
        They are columns chosen at random (from the seeded stream); the other
        columns are noise.
    label_noise : float, default 0.1
        Fraction of the cases, in ``[0, 1]``, whose label is flipped: exactly
        ``round(label_noise * n_samples)`` cases, chosen uniformly at random without
        replacement, each get a different class drawn uniformly from the other
        ``n_classes - 1`` classes.
    random_state : int, None or numpy.random.Generator, default 0
        Seed for ``numpy.random.default_rng``. The same seed gives identical arrays.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, n_features)
        Independent standard normal features, C-contiguous.
    y : ndarray of int64, shape (n_samples,)
        Class labels in ``0 .. n_classes - 1``.

    Raises
    ------
    TypeError
        A size is not an integer (bools and floats are refused), or ``label_noise``
        is not a real number.
    ValueError
        A size or ``label_noise`` is out of range.

    Notes
    -----
    With ``Z`` the informative columns, the clean label is

    ``argmax_k ( Z @ W[:, k]  +  a_k * sign(Z[:, p_k]) * sign(Z[:, q_k]) )``

    where ``W`` holds random unit-length directions (one oblique linear score per
    class) and each class gets an XOR-like sign interaction between two informative
    axes ``p_k, q_k`` with a weight ``a_k`` drawn from ``U(0.5, 1.5)``. The oblique
    scores force staircase boundaries and the sign products force splits whose
    value only shows after a split on another axis, so greedy trees must grow deep.
    Beyond ``X`` itself, memory use is one ``(n_samples, n_classes)`` float64 score
    array and a few length-``n_samples`` temporaries. At ``n_samples = 10**6`` with
    the defaults the time is dominated by drawing ``X`` (about a second).

    Examples
    --------
    >>> X, y = make_classification(1000, n_features=8, n_classes=3, random_state=1)
    >>> X.shape, X.dtype, y.dtype
    ((1000, 8), dtype('float64'), dtype('int64'))
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    n_features = _check_int("n_features", n_features, minimum=1)
    n_classes = _check_int("n_classes", n_classes, minimum=2)
    n_informative = _check_int(
        "n_informative", n_informative, minimum=1, maximum=n_features, max_name="n_features"
    )
    label_noise = _check_real("label_noise", label_noise, low=0.0, high=1.0)
    _check_size(n_samples, n_features, n_classes)  # X and the score array
    rng = _make_rng(random_state)

    # The problem (informative columns, class directions, interactions) is drawn first,
    # so that the same seed defines the same problem for every n_samples; X follows,
    # and its first rows are the same for every n_samples too.
    informative = _informative(rng, n_features, n_informative)
    # one oblique linear score per class over the informative features
    W = rng.standard_normal((n_informative, n_classes))
    W /= np.linalg.norm(W, axis=0, keepdims=True)
    weights = rng.uniform(0.5, 1.5, size=n_classes)
    pairs = []
    for k in range(n_classes):
        if n_informative >= 2:
            p, q = informative[rng.choice(n_informative, size=2, replace=False)]
        else:
            p = q = informative[0]  # degenerate: sign(z)**2 == 1, a constant shift
        pairs.append((p, q))
    X = rng.standard_normal((n_samples, n_features), dtype=np.float64)

    # zero rows for the noise features: one BLAS product, no copy of the columns
    W_full = np.zeros((n_features, n_classes))
    W_full[informative] = W
    scores = X @ W_full  # (n_samples, n_classes)
    # XOR-like sign interactions between pairs of distinct informative axes
    for k, (p, q) in enumerate(pairs):
        same_sign = np.signbit(X[:, p]) == np.signbit(X[:, q])
        scores[:, k] += np.where(same_sign, weights[k], -weights[k])

    y = np.argmax(scores, axis=1).astype(np.int64)
    del scores

    n_flip = int(round(label_noise * n_samples))
    if n_flip > 0:
        flip = rng.choice(n_samples, size=n_flip, replace=False)
        shift = rng.integers(1, n_classes, size=n_flip)
        y[flip] = (y[flip] + shift) % n_classes

    return X, y


def make_regression(
    n_samples,
    n_features=20,
    *,
    n_informative=5,
    noise=1.0,
    random_state=0,
):
    """Generate a seeded nonlinear regression problem.

    Parameters
    ----------
    n_samples : int
        Number of cases, >= 1.
    n_features : int, default 20
        Number of features (columns of ``X``), >= 1.
    n_informative : int, default 5
        Number of features the response depends on, between 1 and ``n_features``.
        They are columns chosen at random (from the seeded stream).
    noise : float, default 1.0
        Standard deviation (>= 0) of the Gaussian noise added to the response.
    random_state : int, None or numpy.random.Generator, default 0
        Seed for ``numpy.random.default_rng``. The same seed gives identical arrays.

    Returns
    -------
    X : ndarray of float64, shape (n_samples, n_features)
        Independent standard normal features, C-contiguous.
    y : ndarray of float64, shape (n_samples,)
        The response.

    Raises
    ------
    TypeError
        A size is not an integer (bools and floats are refused), or ``noise`` is not
        a real number.
    ValueError
        A size is out of range, or ``noise`` is negative or not finite.

    Notes
    -----
    With ``z_0, z_1, ...`` the informative columns and ``c_m`` weights drawn from
    ``U(1, 3)``, the noiseless response is ``f = sum_m c_m g_m(z_m)`` where ``g_m``
    cycles through ``sin(2 z)``, ``z**2 - 1``, ``2 * [z > 0.5] - 1``, ``z`` and
    ``tanh(3 z)``, plus, when there are at least two informative features, an
    interaction term ``z_0 * z_1``. Then ``y = f + noise * e`` with ``e`` standard
    normal.

    Examples
    --------
    >>> X, y = make_regression(500, n_features=4, n_informative=2, random_state=3)
    >>> X.shape, y.shape, y.dtype
    ((500, 4), (500,), dtype('float64'))
    """
    n_samples = _check_int("n_samples", n_samples, minimum=1)
    n_features = _check_int("n_features", n_features, minimum=1)
    n_informative = _check_int(
        "n_informative", n_informative, minimum=1, maximum=n_features, max_name="n_features"
    )
    noise = _check_real("noise", noise, low=0.0)
    _check_size(n_samples, n_features)
    rng = _make_rng(random_state)

    # the problem first (same for every n_samples), then X, then the noise
    informative = _informative(rng, n_features, n_informative)
    coef = rng.uniform(1.0, 3.0, size=n_informative)
    X = rng.standard_normal((n_samples, n_features), dtype=np.float64)

    terms = (
        lambda z: np.sin(2.0 * z),
        lambda z: z * z - 1.0,
        lambda z: np.where(z > 0.5, 1.0, -1.0),
        lambda z: z,
        lambda z: np.tanh(3.0 * z),
    )
    y = np.zeros(n_samples, dtype=np.float64)
    for m, col in enumerate(informative):
        y += coef[m] * terms[m % len(terms)](X[:, col])
    if n_informative >= 2:
        y += X[:, informative[0]] * X[:, informative[1]]

    y += noise * rng.standard_normal(n_samples)
    return X, y
