"""Cold start: what a new process pays before its first tree (a cost users pay).

``timeraw_`` benchmarks: asv runs the returned code in a fresh interpreter and times
the statement (not the setup code, which only sets environment variables before
Numba is imported). The statement is what a user types::

    import cartjit
    from cartjit.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    cartjit.CARTClassifier().fit(X, y)          # stage "fit"
    # .predict(X) as well                       # stage "fit_predict"

Cache modes, set through the environment of the fresh interpreter:

``cold``  ``NUMBA_CACHE_DIR`` is a new empty directory for every sample: the first use
          after installing (or after editing a kernel's source): every kernel is
          compiled and written to the cache.
``warm``  ``NUMBA_CACHE_DIR`` is a directory populated once in ``setup_cache`` by the
          same code: every later process, kernels loaded from the cache.
``off``   ``CARTJIT_CACHE=0`` (and an empty ``NUMBA_CACHE_DIR``): compiled in every
          process, nothing written; what users who turn the cache off pay each time.

By default only ``cold`` and ``warm`` of the stage ``fit_predict`` run (each cold
sample compiles every kernel: tens of seconds on a small machine);
``CARTJIT_ASV_LARGE=1`` adds ``off`` and the stage ``fit``.

The directories live in the working directory asv gives ``setup_cache``, which it
removes afterwards.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

from . import cartjit_root, large

MODES = ("cold", "warm", "off") if large() else ("cold", "warm")
STAGES = ("fit", "fit_predict") if large() else ("fit_predict",)

_STATEMENT = {
    "import": "import cartjit\n",
    "fit": textwrap.dedent("""\
        import cartjit
        from cartjit.datasets import load_iris
        X, y = load_iris(return_X_y=True)
        cartjit.CARTClassifier().fit(X, y)
        """),
    "fit_predict": textwrap.dedent("""\
        import cartjit
        from cartjit.datasets import load_iris
        X, y = load_iris(return_X_y=True)
        cartjit.CARTClassifier().fit(X, y).predict(X)
        """),
}


def _env_setup(cache_dir, cache_on):
    """Setup code of the fresh interpreter: path and environment before any import."""
    return textwrap.dedent(f"""\
        import os, sys
        sys.path.insert(0, {cartjit_root()!r})
        os.environ["NUMBA_CACHE_DIR"] = {cache_dir!r}
        os.environ["CARTJIT_CACHE"] = {"1" if cache_on else "0"!r}
        """)


class ColdStart:
    """Import + first fit (+ first predict) of a classifier on iris, new interpreter."""

    params = [list(MODES), list(STAGES)]
    param_names = ["cache", "stage"]
    # One sample is one fresh interpreter (tens of seconds when compiling on a busy
    # machine): no warm-up sample, 2 to 5 samples, one round.
    number = 1
    repeat = (2, 5, 60.0)
    rounds = 1
    warmup_time = 0.0
    timeout = 1200.0

    def setup_cache(self):
        root = os.path.abspath("cartjit-coldstart")
        os.makedirs(root, exist_ok=True)
        warm = os.path.join(root, "warm")
        os.makedirs(warm, exist_ok=True)
        code = _env_setup(warm, True) + _STATEMENT["fit_predict"]
        subprocess.run([sys.executable, "-c", code], check=True)
        return {"root": root, "warm": warm}

    setup_cache.timeout = 1200.0

    def timeraw_first_tree(self, dirs, cache, stage):
        if cache == "warm":
            setup = _env_setup(dirs["warm"], True)
        else:
            # A new empty directory for every sample (this runs once per sample).
            fresh = tempfile.mkdtemp(prefix=f"{cache}-", dir=dirs["root"])
            setup = _env_setup(fresh, cache == "cold")
        return _STATEMENT[stage], setup


class Import:
    """``import cartjit`` alone in a fresh interpreter (nothing is compiled at import)."""

    number = 1
    repeat = (3, 10, 30.0)
    warmup_time = 0.0

    def timeraw_import(self):
        return _STATEMENT["import"], f"import sys; sys.path.insert(0, {cartjit_root()!r})"


def _counts_module():
    """asv_bench/coldstart_counts.py (outside this package), loaded by its path."""
    import importlib.util

    path = os.path.join(cartjit_root(), "asv_bench", "coldstart_counts.py")
    spec = importlib.util.spec_from_file_location("cartjit_coldstart_counts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CompiledFunctions:
    """How many functions the first fit of each kind compiles (Numba's ``numba:compile``
    events: cartjit's kernels and the NumPy helpers compiled for them), in a fresh
    interpreter with an empty cache, alone or after a first numeric classification fit
    (asv_bench/coldstart_counts.py, which also times them). A count that grows is
    compile time every new user pays."""

    params = [["numeric", "regression", "categorical_cv", "missing_cv"],
              ["first", "after_numeric"]]
    param_names = ["kind", "in_process"]
    number = 1
    repeat = 1
    rounds = 1
    timeout = 1200.0

    def setup(self, kind, in_process):
        if kind == "numeric" and in_process == "after_numeric":
            raise NotImplementedError  # the same as "first"

    def track_functions(self, kind, in_process):
        sample = _counts_module().measure_kind(kind, in_process == "after_numeric")
        return sample["functions"]

    track_functions.unit = "functions"
