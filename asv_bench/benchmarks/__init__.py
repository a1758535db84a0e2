"""asv benchmarks of cartjit, one module per area.

``fit``        time to grow T_max (classification: Gini, grown to purity; regression:
               squared error), and ``track_`` of tree size / depth / hold-out score so
               that quality regressions show next to speed.
``predict``    batch prediction of 10^6 rows by a tree grown on 10^5.
``forest``     fit and prediction of a random forest (50 trees, m = 4), and the flat
               forest's bytes per node.
``coldstart``  ``timeraw_``: import + first fit in a fresh interpreter, with an empty,
               a populated and a disabled Numba cache (compile time is a cost users
               pay), and ``track_`` of the functions the first fit of each kind
               compiles.
``memory``     ``peakmem_`` of a fit, and ``track_`` of the fit's own peak RSS increase.
``runner``     the wall time of ``cartjit run`` on the monograph sweep, new process per
               sample, warm kernel cache, serial and threads backends.

This module holds the helpers they share (nothing here is a benchmark): the sizes,
seeded data memoised per process (asv re-runs ``setup`` before every sample), and the
JIT warm-up. All data come from :mod:`cartjit.datasets` with fixed seeds.

Sizes. By default every benchmark stays at or below ``DEFAULT_MAX_N`` = 10^5 training
rows (and predicts 2 × 10^5 rows), and the cold start runs its two main cases, so that
``asv run --quick`` finishes in a few minutes on a two-core machine. The large sizes
(fits and memory at 10^6 rows, 10^6 rows predicted, every cold-start case) are run
only when asked for:

``CARTJIT_ASV_LARGE=1``
    adds them (``0`` or unset: the default sizes).
``CARTJIT_ASV_MAX_N``
    drops the sizes above it from every parameter list (after ``CARTJIT_ASV_LARGE``),
    e.g. ``CARTJIT_ASV_MAX_N=10000`` for the quickest check.

Results recorded with different settings have different parameter lists, so compare
runs made with the same ones.
"""
from __future__ import annotations

import functools
import os

N_FEATURES = 20
N_CLASSES = 3
#: Training sizes of the fit benchmarks (above DEFAULT_MAX_N only with CARTJIT_ASV_LARGE).
SIZES = (10_000, 100_000, 1_000_000)
#: The largest size run by default.
DEFAULT_MAX_N = 100_000
#: From this size on a fit is timed once per round (``number = repeat = 1``).
BIG = 1_000_000
#: Seed of every draw.
TRAIN_SEED = 0
#: Rows held out of every draw (scored by ``fit.TreeQuality``).
N_HOLDOUT = 50_000
TASKS = ("classification", "regression")


def large():
    """Whether ``CARTJIT_ASV_LARGE`` asks for the large sizes (``1``; ``0``/unset: no)."""
    raw = os.environ.get("CARTJIT_ASV_LARGE", "").strip().lower()
    if raw in ("", "0", "no", "false", "off"):
        return False
    if raw in ("1", "yes", "true", "on"):
        return True
    raise ValueError(f"CARTJIT_ASV_LARGE must be 0 or 1, got {raw!r}")


def max_n():
    """The ``CARTJIT_ASV_MAX_N`` cap, or None."""
    raw = os.environ.get("CARTJIT_ASV_MAX_N", "").strip()
    if not raw:
        return None
    try:
        value = int(float(raw))
    except ValueError:
        raise ValueError(
            f"CARTJIT_ASV_MAX_N must be an integer number of rows, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"CARTJIT_ASV_MAX_N must be >= 1, got {raw!r}")
    return value


def sizes(candidates=SIZES):
    """``candidates`` without those above ``DEFAULT_MAX_N`` (unless ``CARTJIT_ASV_LARGE``)
    or above ``CARTJIT_ASV_MAX_N`` (never empty)."""
    cap = max_n()
    if not large():
        cap = DEFAULT_MAX_N if cap is None else min(cap, DEFAULT_MAX_N)
    kept = [n for n in candidates if cap is None or n <= cap]
    return kept or [min(candidates)]


def configure_timing(bench, n):
    """Set asv's sampling attributes on ``bench`` for a fit of ``n`` rows.

    asv reads ``number``, ``repeat`` and ``warmup_time`` again after ``setup``, so a
    parameterised benchmark may set them per parameter. Small fits: one call per sample,
    3 to 10 samples within 60 s. Big fits: exactly one timed call (no warm-up call;
    the JIT is warmed in ``setup`` on a tiny problem). ``asv run --quick`` overrides
    both with a single call.
    """
    bench.number = 1
    bench.warmup_time = 0.0
    if n >= BIG:
        bench.repeat = 1
    else:
        bench.repeat = (3, 10, 60.0)


def generate(task, n, seed=TRAIN_SEED):
    """Seeded ``(X, y)`` from :mod:`cartjit.datasets`: 20 features (3 classes).

    Beware: the generators draw the problem itself (informative columns, directions)
    after ``X``, so draws of different sizes are different problems. Training and
    hold-out rows must therefore come from one draw: see :func:`split`.
    """
    from cartjit.datasets import make_classification, make_regression

    if task == "classification":
        return make_classification(n, N_FEATURES, N_CLASSES, random_state=seed)
    if task == "regression":
        return make_regression(n, N_FEATURES, random_state=seed)
    raise ValueError(f"task must be one of {TASKS!r}, got {task!r}")


@functools.lru_cache(maxsize=2)
def split(task, n_train, n_test=N_HOLDOUT):
    """One seeded draw of ``n_train + n_test`` rows: ``(X, y, X_test, y_test)``.

    The first ``n_train`` rows train, the rest are held out (same problem). The parts
    are views of one C-contiguous draw (row slices, so still C-contiguous), memoised
    per process (asv re-runs ``setup`` before every sample); no estimator writes to
    its input.
    """
    X, y = generate(task, n_train + n_test)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def dataset(task, n):
    """The ``n`` training rows of :func:`split`: what the fit benchmarks grow on."""
    X, y, _, _ = split(task, n)
    return X, y


def estimator(task):
    """A fresh estimator with the defaults (grown to purity, no pruning)."""
    from cartjit import CARTClassifier, CARTRegressor

    if task == "classification":
        return CARTClassifier(criterion="gini")
    if task == "regression":
        return CARTRegressor()
    raise ValueError(f"task must be one of {TASKS!r}, got {task!r}")


def cartjit_root():
    """The sys.path entry that the benchmark process imports cartjit from.

    asv strips ``PYTHONPATH`` from the environment its benchmark processes pass on
    (``ASV_PYTHONPATH`` reaches only the benchmark process itself), so a benchmark that
    starts a fresh interpreter names this entry explicitly, to time the same cartjit.
    """
    import importlib.util

    spec = importlib.util.find_spec("cartjit")
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


@functools.lru_cache(maxsize=None)
def warm_jit():
    """Compile (or load from the cache) every kernel a fit and a prediction reach.

    A tiny tree of each kind is fitted and used for prediction once per process, so
    that no timed call pays for compilation. Returns the seconds it took.
    """
    import time

    start = time.perf_counter()
    for task in TASKS:
        X, y = generate(task, 300, seed=12345)
        est = estimator(task).fit(X, y)
        est.predict(X)
        if task == "classification":
            est.predict_proba(X)
    return time.perf_counter() - start
