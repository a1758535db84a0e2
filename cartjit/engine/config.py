"""The single source of cartjit's JIT flags.

Every kernel in the package is decorated with :func:`jit` or :func:`jit_parallel` from
this module; no other module passes flags to Numba. The flags can be overridden with
environment variables read once, at import time:

``CARTJIT_CACHE``
    ``1`` (default) writes compiled kernels to Numba's on-disk cache so a new process
    loads them in milliseconds; ``0`` turns caching off (useful with some
    multiprocessing set-ups, or to measure a cold start).
``CARTJIT_PARALLEL``
    ``1`` (default) compiles the ``prange`` loops of the parallel kernels as parallel
    loops; ``0`` compiles them serially (``prange`` becomes ``range``), and a fit on
    several threads hands its chunks to a Python thread pool (:mod:`cartjit.engine.team`).
``CARTJIT_SIMD``
    ``auto`` (default) lets the split search and the partition handle 16 keys per
    instruction (:mod:`cartjit.engine.simd`) when Numba compiles for a CPU with AVX-512F;
    ``1`` forces those blocks on any CPU (LLVM then expands them lane by lane: correct,
    slower; the tests use it), ``0`` forces the scalar loops. Results are identical.

``fastmath`` is always off: exact comparisons of impurity decreases decide the splits
(docs/maths.md §2), and reassociated sums would change which split wins a tie. Every kernel is
compiled with ``nogil=True`` so that Python threads (the experiment runner's threads
backend) can run kernels concurrently. The split search, the partition and the kernels
they call are compiled without Numba's reference counting (``borrowed``, :func:`jit`).

The number of threads is Numba's own setting (``NUMBA_NUM_THREADS``, or
``numba.set_num_threads``); results never depend on it.
"""
from __future__ import annotations

import os

from numba import njit

__all__ = ["CACHE", "PARALLEL", "SIMD", "jit", "jit_parallel"]


def _parse_flag(name: str, raw: str, allowed: str = "0 or 1") -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"environment variable {name} must be {allowed}, got {raw!r}")


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return _parse_flag(name, raw)


def _target_has_avx512() -> bool:
    """Whether Numba compiles for a CPU with AVX-512F (its target, not the host's)."""
    from numba.core import config

    if config.CPU_NAME:  # NUMBA_CPU_NAME: an explicit, perhaps portable, target
        return "+avx512f" in (config.CPU_FEATURES or "")
    try:
        import llvmlite.binding as llvm

        return bool(llvm.get_host_cpu_features().get("avx512f", False))
    except Exception:  # noqa: BLE001 - no feature query: the scalar loops are always right
        return False


#: The messages of the CARTJIT_* variables that could not be read, each naming the
#: variable and its allowed values. A bad value does not fail ``import cartjit`` (the
#: command line could then only print a traceback): the flag takes its default, and
#: every fit and every command refuses to run with the message (:func:`check_settings`).
_SETTING_ERRORS: list = []


def _read_setting(read, *args, default):
    """``read(*args)``, or ``default`` with its error kept for :func:`check_settings`."""
    try:
        return read(*args)
    except ValueError as exc:
        _SETTING_ERRORS.append(str(exc))
        return default


def check_settings():
    """Raise ``ValueError`` naming the first CARTJIT_* variable that could not be read."""
    if _SETTING_ERRORS:
        raise ValueError(_SETTING_ERRORS[0])


CACHE: bool = _read_setting(_env_flag, "CARTJIT_CACHE", True, default=True)
PARALLEL: bool = _read_setting(_env_flag, "CARTJIT_PARALLEL", True, default=True)


#: Whether Numba compiles for a CPU with AVX-512F (asked once, at import).
AVX512: bool = _target_has_avx512()


def _simd_flag(raw, has_avx512=AVX512) -> bool:
    """``CARTJIT_SIMD``: ``auto`` (or unset) follows the target CPU, else 0 or 1. The
    16-key blocks are AVX-512 instructions: ``1`` on a target without AVX-512F warns
    and runs the scalar loops."""
    if raw is None or raw.strip().lower() in ("", "auto"):
        return has_avx512
    on = _parse_flag("CARTJIT_SIMD", raw, "auto, 0 or 1")
    if on and not has_avx512:
        import warnings

        warnings.warn("CARTJIT_SIMD=1 asks for AVX-512 blocks but Numba compiles for a CPU "
                      "without AVX-512F: running the scalar loops (the results are the "
                      "same)", RuntimeWarning, stacklevel=2)
        return False
    return on


SIMD: bool = _read_setting(_simd_flag, os.environ.get("CARTJIT_SIMD"), default=AVX512)

_COMMON = dict(cache=CACHE, nogil=True, fastmath=False, error_model="numpy")


def _has_nrt_option():
    """Whether this Numba takes the per-kernel reference-counting switch (``_nrt``)."""
    try:
        from numba.core.cpu import CPUTargetOptions

        return hasattr(CPUTargetOptions, "_nrt")
    except ImportError:
        return False


#: Numba's reference counting per kernel: on for every kernel (said explicitly: a
#: callee left unset would inherit its first caller's setting), off for ``borrowed``
#: kernels, when this Numba has the switch.
_NRT_OPTION = _has_nrt_option()
if _NRT_OPTION:
    _COMMON["_nrt"] = True


#: The modules whose code a compiled kernel may carry: those defining kernels, and those
#: they import from (constants and record types are compiled in). tests/test_cache.py
#: derives this set from the sources and checks it is listed here. Editing another
#: module (the estimators, the model files, the input checks) keeps the cached kernels.
ENGINE_MODULES = ("assembly", "children", "choose", "config", "gathered", "grow", "impurity",
                  "missing", "predict", "presort", "pruning", "records", "rpart", "scans",
                  "search", "simd", "subsets", "surrogates", "team", "tree")


def _engine_stamp(package_dir):
    """(name, size, mtime) of every engine module: a kernel compiled into one module
    carries the code of the kernels it calls in the others."""
    stamp = []
    for module in sorted(ENGINE_MODULES):
        name = module + ".py"
        st = os.stat(os.path.join(package_dir, name))
        stamp.append(f"{name} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(stamp)


def drop_stale_kernels():
    """Delete the cached kernels of every engine module when any engine module changed.

    Numba invalidates a cached kernel when *its own* source file changes, but a kernel
    has the kernels it calls in other modules compiled into it (the grower calls the
    split searches): after an edit or a partial update of one module, the others would
    load stale copies of its code, silently. So the cache directory keeps a stamp of all
    engine modules (``cartjit-engine.stamp``), and a different stamp removes cartjit's
    index and data files there before any kernel loads. Called once, at import.
    """
    if not CACHE:
        return
    import numba

    package_dir = os.path.dirname(os.path.abspath(__file__))
    directory = numba.config.CACHE_DIR or os.path.join(package_dir, "__pycache__")
    stamp_file = os.path.join(directory, "cartjit-engine.stamp")
    try:
        stamp = _engine_stamp(package_dir)
    except OSError:  # an engine module missing: its import will say so; nothing to stamp
        return
    try:
        with open(stamp_file, encoding="utf-8") as fh:
            if fh.read() == stamp:
                return
    except OSError:
        pass
    try:
        # made here if it does not exist yet (a new NUMBA_CACHE_DIR, or no __pycache__
        # with PYTHONDONTWRITEBYTECODE): an unstamped cache would be emptied again by
        # the next process, which would compile every kernel a second time
        os.makedirs(directory, exist_ok=True)
        modules = {n[:-3] for n in os.listdir(package_dir) if n.endswith(".py")}
        for name in os.listdir(directory):
            if name.endswith((".nbi", ".nbc")) and name.split(".", 1)[0] in modules:
                try:
                    os.remove(os.path.join(directory, name))
                except OSError:
                    pass
        tmp = f"{stamp_file}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(stamp)
        os.replace(tmp, stamp_file)
    except OSError:  # a read-only install: Numba's own per-module check still applies
        pass


drop_stale_kernels()


def jit(func=None, *, borrowed=False, **extra):
    """Decorate a serial kernel (``@jit``) with the package-wide flags.

    ``borrowed=True`` marks a kernel that only reads and writes arrays its caller owns
    for the whole call: it is compiled without Numba's reference counting, which
    otherwise adds an atomic increment and decrement of every array argument, view and
    record field at every call (threads touching the same arrays contend for those
    counters). Numba refuses to compile an allocation in such a kernel, or the return of
    an array it did not receive; it must not return an array at all (its caller would
    count a reference it does not hold), which tests/test_borrowed.py checks. Where
    Numba lacks the switch the mark is ignored.
    """
    flags = dict(_COMMON, **extra)
    if borrowed and _NRT_OPTION:
        flags["_nrt"] = False
    if func is None:
        return lambda f: njit(**flags)(f)
    return njit(**flags)(func)


def jit_parallel(func=None, **extra):
    """Decorate a kernel whose ``prange`` loops run in parallel when ``PARALLEL``."""
    flags = dict(_COMMON, parallel=PARALLEL, **extra)
    if func is None:
        return lambda f: njit(**flags)(f)
    return njit(**flags)(func)
