"""Cells: the plan of a sweep, the seeds, one cell's computation and its warnings.

Cells
    One cell is one cross-validation run (docs/maths.md §5): one dataset, one number of
    folds V, one repeat (one random partition) and one combination of tree settings,
    fitted as :class:`~cartjit.CARTClassifierCV` / :class:`~cartjit.CARTRegressorCV`
    with ``n_repeats=1`` fit it, by the same functions (:mod:`cartjit._prepare`) but
    without the estimator objects, so that a run never imports scikit-learn.
    Leave-one-out (V = N) has a single partition, so it is one cell whatever ``n_repeats`` says. The cells are listed in a fixed order (datasets in file
    order, then settings, V ascending, repeat), and every table is sorted in that order,
    never in the order cells finish.

Seeds
    A cell's ``random_state`` is derived from its key: the first 8 bytes of the SHA-256
    of the canonical JSON of ``{seed, dataset, V, repeat, stratify}`` (63 bits), never
    Python's ``hash()``. The tree settings are deliberately *not* part of it, so that
    different settings are compared on the same partitions (paired comparisons). With
    ``seeds = [...]`` in the config, repeat r uses ``seeds[r]`` as given.

Method cells
    In a methods study (a config with ``[methods]``) one cell is one method fitted and
    tested on one replication of the protocol of one dataset (:class:`MethodCell`;
    :mod:`cartjit.experiments.protocols` draws the rows, :mod:`.methods` fits). Cells
    are listed dataset by dataset, then by replication, then by method, so the methods of
    a replication run next to each other. A replication's seed
    (:func:`~cartjit.experiments.protocols.replication_seed`) leaves the method out:
    every method is fitted and tested on the same rows.

Determinism
    A cell's result depends only on its key: the CV estimators give identical results
    whatever the number of Numba threads, so every backend, with any number of workers
    and in any completion order, writes byte-identical result tables (apart from the
    ``wall_time_s`` column, which measures the machine).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .config import canonical_json, selection_label, sha256_hex
from .store import CELL_COLUMNS, INT_COLUMNS, KEY_FORMAT

__all__ = ["Cell", "MethodCell", "plan_method_cells", "cell_key", "cell_seed",
           "settings_labels", "plan_cells", "count_cells",
           "compute_cell", "cell_payload", "compute_single_threaded", "route_cell_warnings",
           "route_warnings_in_this_process"]


@dataclass(frozen=True)
class Cell:
    """One CV run of the sweep; ``order`` is its place in every table."""

    order: int
    cell_id: str
    dataset: str
    task: str
    V: int
    loo: bool
    repeat: int
    seed: int
    stratify: bool
    settings_index: int
    settings: dict = field(hash=False)
    settings_label: str = ""
    settings_slug: str = ""
    dataset_fingerprint: str = ""
    categorical: tuple = ()      # indices of the dataset's subset-split features

    @property
    def key(self) -> dict:
        return cell_key(self.dataset_fingerprint, self)


@dataclass(frozen=True)
class MethodCell:
    """One method on one replication of a methods study; ``order`` is its place in
    every table. ``repeat`` and ``fold`` number the replication (``fold`` is 0 but for
    the cv protocol); ``seed`` is the replication's (of the partition, for cv)."""

    order: int
    cell_id: str
    dataset: str
    task: str
    replication: int
    repeat: int
    fold: int
    seed: int
    method: str                   # the method's label
    method_index: int
    estimator: str
    params: dict = field(hash=False)
    protocol: dict = field(hash=False, default_factory=dict)
    dataset_fingerprint: str = ""
    categorical: tuple = ()
    n_learn: int | None = None
    class_values: tuple = ()

    kind = "method"

    @property
    def key(self) -> dict:
        """Everything the result depends on (the method's parameters as given)."""
        return {"format": KEY_FORMAT, "study": 1, "dataset": self.dataset,
                "data": self.dataset_fingerprint, "protocol": self.protocol,
                "repeat": self.repeat, "fold": self.fold, "seed": self.seed,
                "method": self.method, "estimator": self.estimator, "params": self.params}


def plan_method_cells(data):
    """Every cell of a methods study over the resolved ``data``, in table order."""
    from .protocols import replication_seed
    cells = []
    for d in data:
        protocol = d.protocol
        kind = protocol["kind"]
        folds = protocol["V"] if kind == "cv" else 1
        for r in range(protocol["n_repeats"]):
            seed = replication_seed(protocol.get("seed", 0), d.name, kind, r)
            for v in range(folds):
                for m_index, m in enumerate(d.methods):
                    proto = MethodCell(
                        order=len(cells), cell_id="", dataset=d.name, task=d.task,
                        replication=r * folds + v, repeat=r, fold=v, seed=seed,
                        method=m.label, method_index=m_index, estimator=m.estimator,
                        params=m.params, protocol=_key_protocol(protocol),
                        dataset_fingerprint=d.fingerprint, categorical=tuple(d.categorical),
                        n_learn=d.n_learn, class_values=d.class_values)
                    cid = sha256_hex(proto.key)[:24]
                    cells.append(MethodCell(**{**proto.__dict__, "cell_id": cid}))
    return cells


def _key_protocol(protocol):
    """The protocol as it enters a cell's key and payload (JSON values only)."""
    return json.loads(canonical_json(protocol))


def cell_key(fingerprint, cell):
    """The canonical key of a cell: everything its result depends on."""
    return {"format": KEY_FORMAT, "dataset": cell.dataset, "data": fingerprint,
            "V": cell.V, "loo": cell.loo, "repeat": cell.repeat, "seed": cell.seed,
            "stratify": cell.stratify, "settings": cell.settings}


def cell_seed(base_seed, dataset, V, repeat, stratify):
    """``random_state`` of a cell: 63 bits of SHA-256 of its partition key (module doc)."""
    digest = hashlib.sha256(canonical_json(
        {"seed": int(base_seed), "dataset": dataset, "V": int(V), "repeat": int(repeat),
         "stratify": bool(stratify)}).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _value_text(value):
    return value if isinstance(value, str) else canonical_json(value)


def settings_labels(settings_list):
    """Per settings dict: (label, slug) naming only the keys that vary in the sweep."""
    keys = list(settings_list[0]) if settings_list else []
    varying = [k for k in keys
               if len({canonical_json(s[k]) for s in settings_list}) > 1]
    out = []
    for s in settings_list:
        label = ", ".join(f"{k}={_value_text(s[k])}" for k in varying)
        parts = []
        for k in varying:
            v = s[k]
            if isinstance(v, (list, dict)):
                opts = []
                for other in settings_list:
                    if canonical_json(other[k]) not in opts:
                        opts.append(canonical_json(other[k]))
                v = f"{opts.index(canonical_json(v)) + 1}"
            parts.append(f"{k}-{v}")
        slug = "_".join(parts)
        slug = "".join(c if c.isalnum() or c in "._-" else "-" for c in slug)
        out.append((label, slug))
    return out


def count_cells(d):
    """Number of cells of one resolved dataset, without listing them."""
    per_settings = sum(1 if V == d.n_samples else d.n_repeats for V in d.V)
    return per_settings * len(d.settings)


def plan_cells(data):
    """Every cell of the sweep over the resolved ``data``, in table order."""
    cells = []
    for d in data:
        labels = settings_labels(list(d.settings))
        for s_index, settings in enumerate(d.settings):
            for V in d.V:
                loo = V == d.n_samples
                stratify = d.stratify and not loo
                for r in range(1 if loo else d.n_repeats):
                    if loo:
                        seed = 0
                    elif d.seeds is not None:
                        seed = int(d.seeds[r])
                    else:
                        seed = cell_seed(d.seed, d.name, V, r, stratify)
                    proto = Cell(order=len(cells), cell_id="", dataset=d.name, task=d.task,
                                 V=int(V), loo=loo, repeat=r, seed=seed, stratify=stratify,
                                 settings_index=s_index, settings=settings,
                                 settings_label=labels[s_index][0],
                                 settings_slug=labels[s_index][1],
                                 dataset_fingerprint=d.fingerprint,
                                 categorical=tuple(d.categorical))
                    cid = sha256_hex(cell_key(d.fingerprint, proto))[:24]
                    cells.append(Cell(**{**proto.__dict__, "cell_id": cid}))
    return cells


# --------------------------------------------------------------------------- one cell

def _estimator(task, settings, cv, stratify, seed, categorical=()):
    """The parameters of the cell's CV estimator (:class:`~cartjit.CARTClassifierCV` or
    :class:`~cartjit.CARTRegressorCV`, ``n_repeats=1``), as a plain
    :class:`cartjit._prepare.CVParams`: fitted without importing scikit-learn."""
    from .._prepare import CVParams
    common = dict(
        categorical_features=list(categorical) if categorical else None,
        max_depth=None if settings["max_depth"] == "none" else settings["max_depth"],
        min_samples_split=settings["min_samples_split"],
        min_samples_leaf=settings["min_samples_leaf"],
        min_impurity_decrease=settings["min_impurity_decrease"],
        max_leaf_nodes=None if settings["max_leaf_nodes"] == "none" else settings["max_leaf_nodes"],
        cv=cv, n_repeats=1, selection="min", random_state=seed)
    if task == "classification":
        priors = settings["priors"]
        cost = settings["cost"]
        return CVParams(
            True, criterion=settings["criterion"],
            priors=priors if isinstance(priors, str) else np.asarray(priors),
            cost=None if cost == "0-1" else np.asarray(cost, dtype=np.float64),
            stratify=stratify, **common)
    return CVParams(False, criterion=settings["criterion"], **common)


def _fit_cell(params, X, y):
    """The cell's CV fit: ``(prepared, result)`` of
    :func:`cartjit._prepare.cross_validate_params` (``result.table`` is
    ``cv_results_``)."""
    import numba

    from .._prepare import cross_validate_params
    return cross_validate_params(params, X, y, n_threads=numba.get_num_threads())


#: Per-thread list collecting the warnings of the cell that thread is running.
_CELL_WARNINGS = threading.local()


def compute_cell(spec, X, y, selection):
    """Run one cell; ``spec`` is the plain dict of :func:`cell_payload`. Pure function.

    Returns a dict: the per-k columns of ``cv_results_`` (:data:`CELL_COLUMNS`, as
    lists), the 0-based row position chosen by each selection rule (the rule of
    ``select_k``; the stored results keep positions, the reports print ``columns["k"]``
    of them), the number of folds, any warnings, the wall time of the fit, and the
    records of the chosen trees (``stability``: :mod:`cartjit.experiments.stability`;
    a method cell holds one for a single-tree method).
    """
    if spec.get("kind") == "method":
        from .methods import compute_method_cell
        from .stability import method_cell_record
        fitted = {}
        result, messages = _with_warnings(lambda: compute_method_cell(spec, X, y, fitted))
        result["warnings"] = sorted(set(messages))
        record = method_cell_record(fitted, X.shape[0])
        if record is not None:
            result["stability"] = {"tree": record}
        return result
    est = _estimator(spec["task"], spec["settings"], "loo" if spec["loo"] else spec["V"],
                     spec["stratify"], spec["seed"], spec.get("categorical", ()))

    def fit():
        t0 = time.perf_counter()
        prep, fitted = _fit_cell(est, X, y)
        return prep, fitted, time.perf_counter() - t0

    (prep, fitted, wall), messages = _with_warnings(fit)
    res, n_folds = fitted.table, fitted.n_folds
    cols = {}
    for name in CELL_COLUMNS:
        values = res[name].to_numpy()
        cols[name] = [int(v) for v in values] if name in INT_COLUMNS \
            else [float(v) for v in values]
    from .._prepare import select_index
    risk, se = res["cv_risk"].to_numpy(), res["cv_se"].to_numpy()
    chosen = {selection_label(rule): int(select_index(risk, se, rule)) for rule in selection}
    from .stability import cv_cell_records
    return {"columns": cols, "chosen": chosen, "n_folds": int(n_folds),
            "warnings": sorted(set(messages)), "wall_time_s": wall,
            "stability": cv_cell_records(prep, fitted, chosen)}


def _with_warnings(work):
    """``(work(), messages)``: the value of ``work()`` and the warnings it raised."""
    if getattr(warnings.showwarning, "_cartjit_router", False):
        # warnings.catch_warnings is not thread-safe: under the run's router each
        # thread collects its own cell's warnings
        messages = []
        _CELL_WARNINGS.messages = messages
        try:
            value = work()
        finally:
            _CELL_WARNINGS.messages = None
        return value, messages
    with warnings.catch_warnings(record=True) as caught:  # one thread: the standard way
        warnings.simplefilter("always")
        value = work()
    return value, [str(w.message) for w in caught]


def _make_router(original):
    def show(message, category, filename, lineno, file=None, line=None):
        sink = getattr(_CELL_WARNINGS, "messages", None)
        if sink is not None:
            sink.append(str(message))
        else:
            original(message, category, filename, lineno, file, line)
    show._cartjit_router = True
    return show


@contextlib.contextmanager
def route_cell_warnings():
    """While cells run: every warning goes to the list of the cell of its thread.

    Entered once, in the main thread, around a backend; other warnings are shown as usual
    (every time: the filter is "always" inside, so each cell records its own).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _make_router(warnings.showwarning)
        yield


def route_warnings_in_this_process():
    """Install the router for good in a Dask worker process (its threads run cells)."""
    if not getattr(warnings.showwarning, "_cartjit_router", False):
        warnings.simplefilter("always")
        warnings.showwarning = _make_router(warnings.showwarning)


def cell_payload(cell):
    """What a worker needs to compute ``cell``: a plain, picklable dict."""
    if getattr(cell, "kind", None) == "method":
        from .protocols import method_seed
        return {"kind": "method", "task": cell.task, "estimator": cell.estimator,
                "params": cell.params, "protocol": cell.protocol,
                "generator": cell.protocol.get("generator"), "seed": cell.seed,
                "fold": cell.fold, "method_seed": method_seed(cell.seed, cell.fold),
                "categorical": list(cell.categorical), "n_learn": cell.n_learn,
                "classes": list(cell.class_values)}
    return {"task": cell.task, "settings": cell.settings, "V": cell.V, "loo": cell.loo,
            "stratify": cell.stratify, "seed": cell.seed,
            "categorical": list(cell.categorical)}


def compute_single_threaded(payload, X, y, selection):
    """A cell on one Numba thread (threads and Dask backends); the setting is per thread."""
    import numba
    numba.set_num_threads(1)
    return compute_cell(payload, X, y, selection)
