"""Protocols of a methods study: how each replication splits learning and test cases.

A *protocol* (the ``[protocol]`` table of a config with ``[methods]``) says how a
method's error is measured on a dataset. Every replication gives a learning sample, on
which each method fits (and does its own model selection: CART's cross-validated
pruning, a forest's settings), and a test sample that no method sees before it predicts:

``cv``
    V-fold cross-validation, repeated ``n_repeats`` times: replication (r, v) learns on
    every fold of partition r but fold v and tests on fold v. Stratified partitions deal
    each class's cases round the folds in a random order.
``split``
    ``n_repeats`` random learning/test splits with a test fraction f in (0, 1): the test
    sample is round(f N) cases drawn without replacement (stratified: each class gives
    its share, by largest remainders, so the total is still round(f N)). Breiman (1996)
    used 100 random 10 % test sets.
``fresh``
    A generator's fresh samples: replication r learns on a new sample of ``n`` cases and
    tests on a new sample of ``test_n`` cases, both drawn from the generator with seeds
    of the replication (the CART book's waveform experiment: 300 learning cases, 5,000
    test cases).
``test_file``
    A given test file: learn on the dataset, test on the rows of ``test_path`` (one
    replication).

Pairing and determinism: the rows of replication r depend only on the protocol, the
dataset and :func:`replication_seed` (the config's ``seed``, the dataset's name, the
protocol's kind and r), never on the method, so every method of a study is fitted and
tested on the same cases, and a replication's rows are the same on every backend, worker
count and after ``--resume``. The draws use ``numpy.random.default_rng`` seeded by that
integer; nothing here uses global random state.

Generators are looked up by name through :func:`generator_function`, the one place that
maps a config's ``generator = "NAME"`` to a function of ``cartjit.datasets``.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json

import numpy as np

__all__ = ["PROTOCOL_KINDS", "replication_seed", "method_seed", "cv_folds", "split_rows",
           "replication_rows", "generator_function", "generate", "fresh_samples",
           "n_replications"]

#: The protocols a methods study can use.
PROTOCOL_KINDS = ("cv", "split", "fresh", "test_file")


def _digest(doc):
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":"))
                          .encode()).digest()


def replication_seed(base_seed, dataset, kind, repeat):
    """The seed of one replication (of one partition, for ``cv``): 63 bits of the
    SHA-256 of ``{seed, dataset, protocol, repeat}``. The method is not part of it, so
    every method sees the same rows (paired comparisons)."""
    doc = {"seed": int(base_seed), "dataset": dataset, "protocol": kind,
           "repeat": int(repeat)}
    return int.from_bytes(_digest(doc)[:8], "big") >> 1


def method_seed(rep_seed, fold=0):
    """The ``random_state`` the runner gives a method that has one and did not set it:
    32 bits (scikit-learn's range) derived from the replication's seed and fold, the same
    for every method of the replication (common random numbers)."""
    return int.from_bytes(_digest({"replication": int(rep_seed), "fold": int(fold),
                                   "use": "method"})[:4], "big")


def n_replications(protocol):
    """Replications of a protocol: V x n_repeats for ``cv``, n_repeats otherwise."""
    if protocol["kind"] == "cv":
        return protocol["V"] * protocol["n_repeats"]
    return protocol["n_repeats"]


def _class_codes(y):
    """Integer codes of the labels ``y`` (sorted classes), for stratification."""
    _, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.ravel()


def cv_folds(n, V, seed, y=None):
    """Fold ids 0..V-1 of ``n`` cases: a random permutation dealt round the folds, or with
    ``y`` (stratified) each class's cases dealt in turn, continuing where the last class
    stopped, so fold sizes differ by at most one."""
    rng = np.random.default_rng(seed)
    folds = np.empty(n, dtype=np.int64)
    if y is None:
        folds[rng.permutation(n)] = np.arange(n) % V
        return folds
    codes = _class_codes(y)
    order = np.concatenate([rng.permutation(np.flatnonzero(codes == j))
                            for j in range(int(codes.max()) + 1)])
    folds[order] = np.arange(n) % V
    return folds


def _largest_remainder(counts, total):
    """Integers proportional to ``counts`` summing to ``total`` (largest remainders,
    ties to the lower index)."""
    exact = counts * (total / counts.sum())
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    order = np.argsort(-(exact - out), kind="stable")
    out[order[:short]] += 1
    return out


def split_rows(n, test_fraction, seed, y=None):
    """``(learn, test)`` row indices (sorted) of a random split with round(f n) test cases;
    stratified when ``y`` is given."""
    rng = np.random.default_rng(seed)
    n_test = int(round(test_fraction * n))
    if y is None:
        test = rng.choice(n, size=n_test, replace=False)
    else:
        codes = _class_codes(y)
        members = [np.flatnonzero(codes == j) for j in range(int(codes.max()) + 1)]
        take = _largest_remainder(np.array([len(m) for m in members], dtype=float), n_test)
        test = np.concatenate([rng.choice(m, size=int(k), replace=False)
                               for m, k in zip(members, take)])
    mask = np.zeros(n, dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def replication_rows(protocol, spec, n, y):
    """``(learn, test)`` row indices of a cell's replication over the dataset's ``n`` rows
    (``cv``, ``split``, ``test_file``; ``spec`` is the cell's payload)."""
    kind = protocol["kind"]
    strat = y if protocol.get("stratify") else None
    if kind == "cv":
        folds = cv_folds(n, protocol["V"], spec["seed"], strat)
        return np.flatnonzero(folds != spec["fold"]), np.flatnonzero(folds == spec["fold"])
    if kind == "split":
        return split_rows(n, protocol["test_fraction"], spec["seed"], strat)
    if kind == "test_file":
        n_learn = spec["n_learn"]
        return np.arange(n_learn), np.arange(n_learn, n)
    raise ValueError(f"protocol kind {kind!r} has no rows of its own")


# --------------------------------------------------------------------------- generators

def generator_function(name):
    """The function of ``cartjit.datasets`` behind ``generator = "NAME"``:
    ``make_<NAME>``, e.g. ``make_classification``, ``make_regression``.

    The one lookup of a generator by name: the runner calls nothing else.
    Raises :class:`LookupError` for a name that is not a generator.
    """
    from .. import datasets
    fn = getattr(datasets, f"make_{name}", None) if isinstance(name, str) else None
    if fn is None or not callable(fn):
        raise LookupError(name)
    return fn


def generator_names():
    """The names ``generator`` accepts (every ``make_*`` of ``cartjit.datasets``)."""
    from .. import datasets
    return sorted(n[len("make_"):] for n in dir(datasets)
                  if n.startswith("make_") and callable(getattr(datasets, n)))


def _size_argument(fn):
    """The name of a generator's first parameter, the number of cases (``n_samples`` for
    make_classification, ``n`` for the literature's generators)."""
    return next(iter(inspect.signature(fn).parameters))


def generate(name, n, params, random_state):
    """``(X, y)`` of ``n`` cases from generator ``name`` with ``params``: X as
    C-contiguous float64 (a generator with a ``return_X_y`` parameter, such as
    ``make_waveform``, is asked for ``(X, y)``)."""
    fn = generator_function(name)
    params = dict(params)
    if "return_X_y" in inspect.signature(fn).parameters:
        # the literature's generators return a DataFrame unless asked for (X, y)
        if params.pop("return_X_y", True) is not True:
            raise ValueError(f"generator {name!r}: params.return_X_y is set by the runner; "
                             "leave it out")
        params["return_X_y"] = True
    X, y = fn(**{_size_argument(fn): int(n)}, **params, random_state=int(random_state))
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    return X, np.asarray(y)


@functools.lru_cache(maxsize=8)
def _fresh_cached(name, params_json, n, test_n, rep_seed):
    params = json.loads(params_json)
    seeds = [int.from_bytes(_digest({"replication": rep_seed, "sample": s})[:8], "big") >> 1
             for s in ("learn", "test")]
    Xl, yl = generate(name, n, params, seeds[0])
    Xt, yt = generate(name, test_n, params, seeds[1])
    for a in (Xl, yl, Xt, yt):
        a.setflags(write=False)  # shared by the methods of the replication
    return Xl, yl, Xt, yt


def fresh_samples(generator, rep_seed):
    """``(X_learn, y_learn, X_test, y_test)`` of a ``fresh`` replication: new samples of
    ``n`` and ``test_n`` cases, seeded from the replication's seed. The last few are kept
    (read-only), so the methods of one replication running one after the other generate
    them once."""
    return _fresh_cached(generator["name"], json.dumps(generator["params"], sort_keys=True),
                         int(generator["n"]), int(generator["test_n"]), int(rep_seed))
