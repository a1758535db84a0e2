"""The engine's speed machinery, behind one door: flags, launching, shared work, SIMD.

Every other engine module computes a step of CART; this one decides how fast it runs,
and is the only one that knows how. What a kernel author needs from it:

**Decorating.** Every kernel is decorated with :func:`jit` (serial) or
:func:`jit_parallel` (``prange`` loops), never with Numba's own decorators, so that the
flags below apply everywhere. ``@jit(borrowed=True)`` marks a kernel that only reads
and writes arrays its caller owns: compiled without reference counting, it may not
allocate nor return an array (tests check it). ``@jit(inline="always")`` is for small
helpers called in inner loops.

**Arguments.** A kernel takes C-contiguous, writable arrays, scalars and NamedTuples of
them (:func:`cartjit.engine.presort.as_kernel_array` makes arrays so); a kernel is
compiled once per signature, and a stray layout would compile another.

**Chunks.** A step that can run on several threads is written as one kernel
``step(*args, c, n_chunks)`` that does chunk ``c`` of ``n_chunks`` and returns nothing;
it does not know how it is run. The driver calls ``run_chunks(pool, n_chunks, step,
*args)`` with ``pool = chunk_pool(n_threads)``: one chunk on the calling thread for one
thread; otherwise one parallel launch on Numba's threads (:func:`launch`, which calls
the kernel through its compiled address, :func:`_call_at`) where the threading layer
allows it, or a thread pool. Chunk ``c`` must write the same memory whichever thread
runs it, so that the result never depends on the route nor on the number of threads.

**Sharing work.** Chunks that share a step's units as they go take them from counters
made by :func:`step_counters`: :func:`next_unit` (one atomic counter),
:func:`_take_block` ((row, feature) blocks, each chunk's own features first) and
:func:`_take_case_block` (the same over blocks of cases, :func:`_case_blocks`);
:func:`_block` cuts rows into consecutive blocks and :func:`_chunk_walk` walks a level's
(node, feature) pairs by feature.

**Sixteen keys at a time.** :func:`compress_class_changes` and :func:`compress_partition`
pack the kept keys of a block of :data:`LANES` keys (AVX-512 ``vpcompressd``) when
:data:`SIMD` is on; the caller keeps the scalar loop for the tail and for ``SIMD`` off,
and both give the same keys. :func:`prefetch` asks for a cache line ahead of its use.

**Settings** (environment variables, read once at import):

``CARTJIT_CACHE``
    ``1`` (default) keeps compiled kernels in Numba's on-disk cache, so that a new
    process loads them in milliseconds; ``0`` compiles in every process. A change to any
    module of :data:`ENGINE_MODULES` drops every cached kernel (:func:`drop_stale_kernels`).
``CARTJIT_PARALLEL``
    ``1`` (default) compiles ``prange`` loops as parallel loops; ``0`` compiles them as
    plain loops, and several threads then run chunks on a Python thread pool.
``CARTJIT_SIMD``
    ``auto`` (default) turns the sixteen-key blocks on when Numba compiles for a CPU with
    AVX-512F; ``1`` forces them on any CPU (LLVM expands them lane by lane: correct,
    slower; the tests use it); ``0`` forces the scalar loops.

A bad value does not fail the import: :func:`check_settings` raises the message in every
fit and command. ``fastmath`` is always off: exact comparisons of impurity decreases
decide splits (docs/maths.md §2). Every kernel is compiled ``nogil=True``, so that
Python threads can run kernels at once. The number of threads is Numba's own setting
(``NUMBA_NUM_THREADS``). docs/design.md ("Speed machinery") gives the measurements
behind these choices.
"""
from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from llvmlite import ir
from numba import _dispatcher, njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic

__all__ = ['CACHE', 'LANES', 'LAUNCH', 'LAUNCHERS', 'PARALLEL', 'SIMD', 'address', 'chunk_pool', 'compress_class_changes', 'compress_partition', 'jit', 'jit_parallel', 'launch', 'launch_pool', 'next_unit', 'parallel_entry', 'prefetch', 'run_chunks']


# --------------------------------------------------------------------------- flags

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

#: ``no_cfunc_wrapper``: a kernel is called from Python (its CPython wrapper), from other
#: kernels, or by address (:func:`address`, its native entry point); never as a C
#: callback, so the C wrapper Numba would otherwise lower and compile for each is left out.
_COMMON = dict(cache=CACHE, nogil=True, fastmath=False, error_model="numpy",
               no_cfunc_wrapper=True)


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
#: they import from (constants and record types are compiled in). tests/engine/test_cache.py
#: derives this set from the sources and checks it is listed here. Editing another
#: module (the estimators, the model files, the input checks) keeps the cached kernels.
ENGINE_MODULES = ("assembly", "children", "choose", "draws", "forest_passes", "gathered",
                  "grow", "impurity", "missing", "predict", "presort", "proximity",
                  "pruning", "records", "rpart", "scans", "search", "speed", "subsets",
                  "surrogates", "tree")


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
    count a reference it does not hold), which tests/engine/test_borrowed.py checks. Where
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


# --------------------------------------------------------------------------- launching chunks
#
# A launch runs the chunks of one call as the iterations of one ``prange`` loop on
# Numba's threads, which wait for work by spinning a while, so that a launch costs a few
# microseconds where a Python thread pool costs tens (a worker woken from sleep, a queue
# and a lock each way). The loop body calls the kernel through the address of its
# compiled signature (:func:`_call_at`, looked up once per process by :func:`address`)
# rather than by name: named, the kernel's code would be linked into the loop and
# optimised again, which makes cold compiles several times longer. The launchers (one
# per number of kernel arguments, :data:`LAUNCHERS`: a ``prange`` loop cannot capture a
# tuple of arrays and records) are compiled and cached once per type signature, so only
# the engine's own types
# may be launched: a type defined outside cartjit (a test's NamedTuple, say) would leave
# a cache index that a process without its module cannot load.
#
# A launch is used only where the threading layer may be entered from several Python
# threads at once (``omp``, ``tbb``; ``workqueue`` would abort the process) and with
# ``CARTJIT_PARALLEL`` on: :func:`launch_pool` says so, and :func:`run_chunks` falls back
# to a thread pool otherwise.

@intrinsic
def _call_at(typingctx, addr, args):
    """Call the compiled function at address ``addr`` with the members of the tuple
    ``args``: Numba's calling convention for a function of those argument types that
    returns nothing (:func:`address` checks the kernel is one). True if it raised."""
    sig = types.boolean(addr, args)

    def codegen(context, builder, signature, llargs):
        argtys = tuple(signature.args[1].types)
        values = [builder.extract_value(llargs[1], i) for i in range(len(argtys))]
        fnty = context.call_conv.get_function_type(types.none, argtys)
        fnptr = builder.inttoptr(llargs[0], fnty.as_pointer())
        status, _ = context.call_conv.call_function(builder, fnptr, types.none, argtys,
                                                    values)
        return status.is_error

    return sig, codegen


@intrinsic
def _fetch_add(typingctx, counter):
    """Atomically add 1 to ``counter[0]`` (int64, 1-d) and return its value before."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64
            and counter.ndim == 1):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, signature, llargs):
        ary = context.make_array(signature.args[0])(context, builder, llargs[0])
        one = context.get_constant(types.int64, 1)
        return builder.atomic_rmw("add", ary.data, one, "monotonic")

    return sig, codegen


@jit(inline="always")
def next_unit(counter, n_units):
    """The next unit of work of a step whose chunks share it out as they go (a chunk
    takes units until none is left, so a chunk on a slower core takes fewer): a unit
    index below ``n_units``, or -1 when every unit has been taken. ``counter[0]`` (int64)
    counts the units handed out, 0 before the step starts; the increment is atomic, and
    the writes of the units are seen by the caller when the launch has ended."""
    u = _fetch_add(counter)
    return u if u < n_units else np.int64(-1)


# One launcher per number of kernel arguments before (c, n): chunk c of n runs
# fn(a0, ..., c, n); failed[c] says whether it raised.

@jit_parallel
def _launch1(addr, n, failed, a0):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, np.int64(c), n))


@jit_parallel
def _launch2(addr, n, failed, a0, a1):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, np.int64(c), n))


@jit_parallel
def _launch3(addr, n, failed, a0, a1, a2):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, np.int64(c), n))


@jit_parallel
def _launch4(addr, n, failed, a0, a1, a2, a3):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, np.int64(c), n))


@jit_parallel
def _launch5(addr, n, failed, a0, a1, a2, a3, a4):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, np.int64(c), n))


@jit_parallel
def _launch6(addr, n, failed, a0, a1, a2, a3, a4, a5):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, np.int64(c), n))


@jit_parallel
def _launch7(addr, n, failed, a0, a1, a2, a3, a4, a5, a6):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, np.int64(c), n))


@jit_parallel
def _launch8(addr, n, failed, a0, a1, a2, a3, a4, a5, a6, a7):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, a7, np.int64(c), n))


@jit_parallel
def _launch9(addr, n, failed, a0, a1, a2, a3, a4, a5, a6, a7, a8):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, a7, a8, np.int64(c), n))


@jit_parallel
def _launch10(addr, n, failed, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9,
                                    np.int64(c), n))


@jit_parallel
def _launch11(addr, n, failed, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10,
                                    np.int64(c), n))


#: The launcher of a kernel by its number of arguments before ``(c, n)``.
LAUNCHERS = {1: _launch1, 2: _launch2, 3: _launch3, 4: _launch4, 5: _launch5, 6: _launch6, 7: _launch7,
             8: _launch8, 9: _launch9, 10: _launch10, 11: _launch11}

_ADDRESSES = {}  # (kernel, argument fingerprints) -> address of the compiled signature
_fingerprint = _dispatcher.compute_fingerprint  # Numba's own key of an argument's type


def address(fn, args):
    """Address of ``fn``'s compiled signature for ``(*args, c, n)`` (compiled, or loaded
    from the cache, the first time). ``TypeError`` if that signature returns a value:
    :func:`_call_at` calls functions that return nothing."""
    key = (fn,) + tuple((type(a), _fingerprint(a)) for a in args)
    found = _ADDRESSES.get(key)
    if found is not None:
        return found
    argtys = tuple(numba.typeof(a) for a in args) + (types.int64, types.int64)
    fn.compile(argtys)
    cres = fn.overloads[argtys]
    if cres.signature.return_type != types.none:
        raise TypeError(f"{fn.py_func.__name__} returns {cres.signature.return_type}: only "
                        "kernels that return nothing run as chunks")
    found = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    _ADDRESSES[key] = found
    return found


def launch(n_chunks, fn, *args):
    """Run ``fn(*args, c, n_chunks)`` for every chunk c as one parallel loop; returns
    when every chunk has ended. ``RuntimeError`` if a chunk raised (the grower's chunked
    kernels index without checks and do not raise; a raise is reported, not lost)."""
    if len(args) not in LAUNCHERS:
        raise TypeError(f"{fn.py_func.__name__} takes {len(args)} arguments before (c, n); "
                        f"a launch passes {min(LAUNCHERS)} to {max(LAUNCHERS)}")
    failed = np.zeros(n_chunks, dtype=np.bool_)
    LAUNCHERS[len(args)](address(fn, args), n_chunks, failed, *args)
    if failed.any():
        raise RuntimeError(f"{fn.py_func.__name__} failed in chunk(s) "
                           f"{np.flatnonzero(failed).tolist()}")


class _Launch:
    """The ``pool`` of :func:`run_chunks` that launches chunks as one
    parallel loop (:func:`launch`); nothing to shut down."""

    def shutdown(self, wait=True):
        pass


#: The pool value for :func:`run_chunks` that means :func:`launch`.
LAUNCH = _Launch()

_LAYER = threading.Lock()
_shared = None


def _layer_is_shared():
    """Whether several Python threads may enter Numba's threading layer at once: the
    ``omp`` and ``tbb`` layers, not ``workqueue`` (it aborts the process). Starts the
    layer if no parallel loop has run yet; None where there is no layer."""
    global _shared
    if _shared is None:
        with _LAYER:
            if _shared is None:
                try:
                    try:
                        layer = numba.threading_layer()
                    except ValueError:  # no parallel loop has run yet: start them
                        from numba.np.ufunc.parallel import _launch_threads
                        _launch_threads()
                        layer = numba.threading_layer()
                    _shared = layer in ("omp", "tbb")
                except Exception:  # noqa: BLE001 - no layer at all
                    _shared = False
    return _shared


@contextlib.contextmanager
def parallel_entry():
    """Around a call of a ``parallel=True`` kernel from code that any Python thread may
    run (prediction): one thread at a time where the threading layer may not be entered
    by several at once (``workqueue``), which would abort the process; nothing else
    where it may, or where ``CARTJIT_PARALLEL=0`` compiled the kernel serially. The
    launches of the grower never need it (:func:`launch_pool`)."""
    if not PARALLEL or _layer_is_shared():
        yield
        return
    with _ENTRY:
        yield


#: Held around a parallel kernel where the threading layer is ``workqueue``.
_ENTRY = threading.Lock()


def launch_pool():
    """:data:`LAUNCH` where chunks may run as parallel loops (``CARTJIT_PARALLEL`` on,
    more than one Numba thread, and a threading layer that several Python threads may
    enter at once: :func:`_layer_is_shared`), else None."""
    usable = PARALLEL and numba.config.NUMBA_NUM_THREADS > 1 and _layer_is_shared()
    return LAUNCH if usable else None

# --------------------------------------------------------------------------- sharing a step's work

@jit(inline="always")
def _block(m, c, n_chunks):
    """Rows ``[j0, j1)`` of chunk c when ``m`` rows are cut into ``n_chunks``
    consecutive blocks of nearly equal size. Loop over them as ``for j in range(j1)``,
    skipping ``j < j0``: a loop from 0 lets the compiler drop the checks for negative
    indices at every access by ``j``."""
    return m * c // n_chunks, m * (c + 1) // n_chunks


#: Blocks of a feature's rows per chunk in a step whose chunks share the (row, feature)
#: pairs out as they go (:func:`_take_block`): enough for a fast chunk to take over a
#: slow one's share, few enough that a block is long.
BLOCKS_PER_CHUNK = 4

#: int64 slots per chunk in a step's counters (:func:`_take_block`): one cache line each.
COUNTER_STRIDE = 8


#: Cases per block of a level's search (:func:`_case_blocks`): each chunk searches its
#: features over one block of nodes before the next, so the responses of the block's
#: cases (a cache line each: cases are scattered over y) are read from memory by the
#: first of those features and from the core's cache by the others.
CASE_BLOCK = 8192


@jit
def _case_blocks(start, end, per_block):
    """Bounds of the blocks of a frontier's rows for :func:`_take_case_block`: rows
    ``[bounds[b], bounds[b + 1])``, consecutive rows holding about ``per_block`` cases
    together (a larger node alone)."""
    m = start.shape[0]
    bounds = np.empty(m + 1, dtype=np.int64)
    bounds[0] = 0
    n_blk = 0
    held = 0
    for j in range(m):
        if held >= per_block:
            n_blk += 1
            bounds[n_blk] = j
            held = 0
        held += end[j] - start[j]
    n_blk += 1
    bounds[n_blk] = m
    return bounds[:n_blk + 1]


@jit
def step_counters(n_chunks):
    """The counters of one step shared out by :func:`_take_block` (zero; a kernel, so
    that the one-thread driver makes them too)."""
    return np.zeros(max(1, n_chunks) * COUNTER_STRIDE, dtype=np.int64)


@jit(inline="always")
def _take_block(counters, c, n_chunks, p, n_rows):
    """The next block of (row, feature) pairs for chunk c of a step whose chunks share
    the pairs out as they go: ``(f, j0, j1)``, rows ``[j0, j1)`` of feature f, or
    ``(-1, 0, 0)`` when none is left.

    Feature f belongs to chunk f mod n_chunks, and each feature's rows are cut into
    about :data:`BLOCKS_PER_CHUNK` × n_chunks consecutive blocks. A chunk takes the
    blocks of its own features first, then those left of the other chunks' (one counter
    each, ``counters[k * COUNTER_STRIDE]``, :func:`next_unit`): a chunk on
    a slower core leaves some of its blocks to the others instead of holding up the
    step, and otherwise the searches and partitions of a feature run on the same thread
    level after level, so its keys stay in that core's caches (when the two cores of a
    virtual machine sit on different core complexes, a cache line written by one and
    read by the other crosses between them)."""
    n_blk = max(1, min(n_rows, BLOCKS_PER_CHUNK * n_chunks))
    own, n_feat, u = _next_own_unit(counters, c, n_chunks, p, n_blk)
    if u < 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    fi = u // n_blk
    b = u - fi * n_blk
    return own + fi * n_chunks, n_rows * b // n_blk, n_rows * (b + 1) // n_blk


@jit(inline="always")
def _take_case_block(counters, c, n_chunks, p, bounds):
    """:func:`_take_block` over the blocks of rows ``bounds`` (:func:`_case_blocks`),
    block by block: a chunk takes each of its own features on a block before the next
    block (then, as there, the blocks left of the other chunks' features)."""
    n_blk = bounds.shape[0] - 1
    own, n_feat, u = _next_own_unit(counters, c, n_chunks, p, n_blk)
    if u < 0:
        return np.int64(-1), np.int64(0), np.int64(0)
    b = u // n_feat
    fi = u - b * n_feat
    return own + fi * n_chunks, bounds[b], bounds[b + 1]


@jit(inline="always")
def _next_own_unit(counters, c, n_chunks, p, n_blk):
    """The next unit of :func:`_take_block` or :func:`_take_case_block` for chunk c,
    ``n_blk`` blocks a feature: ``(owner, its number of features, unit)``, the owner
    the chunk whose features the unit is of (c's own first), or ``(-1, 0, -1)``."""
    for k in range(n_chunks):
        own = c + k
        if own >= n_chunks:
            own -= n_chunks
        n_feat = (p - own + n_chunks - 1) // n_chunks
        u = next_unit(counters[own * COUNTER_STRIDE:], n_feat * n_blk)
        if u >= 0:
            return np.int64(own), np.int64(n_feat), u
    return np.int64(-1), np.int64(0), np.int64(-1)


@jit(inline="always")
def _chunk_walk(f, p, c, n_chunks):
    """Feature-by-feature walks of a level's (node, feature) pairs ``k = t * p + f``,
    chunk c taking those with k ≡ c (mod n_chunks): the first node index t of feature
    ``f`` in chunk c (``n_chunks`` when there is none) and the step between them."""
    step = 1
    while (step * p) % n_chunks != 0:
        step += 1
    t = 0
    while t < n_chunks and (t * p + f) % n_chunks != c:
        t += 1
    return t, step


def run_chunks(pool, n_chunks, fn, *args):
    """Run ``fn(*args, c, n_chunks)`` for every chunk c, in the pool when there is one
    (:func:`chunk_pool`).

    ``pool`` :data:`LAUNCH`: the chunks run as one parallel loop of Numba's
    threads (:func:`launch`, a few microseconds a call). A thread pool: the
    calling thread runs chunk 0 itself while the pool runs the others: a pool of
    ``n - 1`` workers keeps n threads busy, and the wake-up of a worker overlaps the
    caller's own chunk instead of adding to every call. Every chunk has ended when this
    returns, also when one raises (the kernels write into shared arrays).
    """
    if pool is None or n_chunks <= 1:
        for c in range(n_chunks):
            fn(*args, c, n_chunks)
        return
    if pool is LAUNCH:
        launch(n_chunks, fn, *args)
        return
    futures = [pool.submit(fn, *args, c, n_chunks) for c in range(1, n_chunks)]
    try:
        fn(*args, 0, n_chunks)
    finally:
        for fut in futures:
            fut.result()


def chunk_pool(n_threads):
    """The ``pool`` argument of :func:`run_chunks` for ``n_threads`` threads: None for
    one; chunks launched as one parallel loop where the threading layer allows
    (:func:`launch_pool`); else a thread pool of ``n_threads - 1`` workers
    (the caller runs a chunk too), which the caller shuts down."""
    if n_threads <= 1:
        return None
    return launch_pool() or ThreadPoolExecutor(n_threads - 1)


# --------------------------------------------------------------------------- sixteen keys at a time
#
# Two loops touch every presorted key at every depth level: the listing of the positions
# where the class changes (the scan by runs, :mod:`cartjit.engine.scans`) and the stable
# partition of a split node's segments (:mod:`cartjit.engine.children`). Both keep some
# keys of a block and pack them to the front of an output, a *compress*: one key at a
# time with a data-dependent write pointer in scalar code, sixteen 32-bit keys in one
# AVX-512 instruction (``vpcompressd``). The keys are packed in a register and the whole
# register stored, so an output needs room for sixteen keys past its last one (LLVM's
# ``llvm.masked.compressstore`` straight to memory is microcoded on AMD's AVX-512 CPUs).
# Numba has no vector types, so the blocks are intrinsics that build the LLVM IR.

#: Keys handled by one call.
LANES = 16

_I1 = ir.IntType(1)
_I8 = ir.IntType(8)
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_V32 = ir.VectorType(_I32, LANES)
_V64 = ir.VectorType(_I64, LANES)
_MASK = ir.VectorType(_I1, LANES)
_ZEROS = ir.Constant(ir.VectorType(_I32, LANES), [0] * LANES)


def _int32_array(ty):
    return isinstance(ty, types.Array) and ty.ndim == 1 and ty.dtype == types.int32


def _splat(builder, value, vec_type):
    """A vector with every lane equal to ``value``."""
    v = builder.insert_element(ir.Constant(vec_type, None), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vec_type, None), _ZEROS)


def _load_block(builder, data, index):
    """The 16 int32 at ``data[index:index + 16]`` (no alignment assumed)."""
    ptr = builder.bitcast(builder.gep(data, [index]), _V32.as_pointer())
    return builder.load(ptr, align=4)


def _compress_store(builder, values, data, index, keep):
    """Write the lanes of ``values`` where ``keep`` is set to ``data[index:]``, packed,
    and perhaps anything after them up to ``data[index + 15]``, so ``data`` needs room
    for sixteen from ``index`` on. On AVX-512 the lanes are packed in a register
    (``vpcompressd`` to a register) and all sixteen stored: compressing straight to
    memory is microcoded on AMD's AVX-512 CPUs, several times slower. Elsewhere (a
    forced ``simd``, as the tests do) LLVM's portable ``masked.compressstore``."""
    ptr = builder.gep(data, [index])
    if not AVX512:  # the portable form; on AVX-512 a register compress below
        fnty = ir.FunctionType(ir.VoidType(), [_V32, _I32.as_pointer(), _MASK])
        fn = cgutils.get_or_insert_function(builder.module, fnty,
                                            "llvm.masked.compressstore.v16i32")
        builder.call(fn, [values, ptr, keep])
        return
    fnty = ir.FunctionType(_V32, [_V32, _V32, _MASK])
    fn = cgutils.get_or_insert_function(builder.module, fnty,
                                        "llvm.x86.avx512.mask.compress.v16i32")
    packed = builder.call(fn, [values, _ZEROS, keep])
    builder.store(packed, builder.bitcast(ptr, _V32.as_pointer()), align=4)


def _count(builder, keep):
    """How many lanes of ``keep`` are set, as an int64."""
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_I16, [_I16]),
                                        "llvm.ctpop.i16")
    return builder.zext(builder.call(fn, [builder.bitcast(keep, _I16)]), _I64)


@intrinsic
def compress_class_changes(typingctx, keys, i, mask, out, n_out):
    """Split search, pass 1 of the scan by runs, one block: append every k in
    [i, i + 16) where the class changes to ``out[n_out:]``.

    The class of a key is ``key & mask``; a change at k means ``keys[k] & mask !=
    keys[k - 1] & mask`` (so i >= 1). Positions are written in increasing order as
    int32; returns how many were written. The caller guarantees i + 16 <= len(keys)
    and room for 16 more in ``out``.

    Parameters
    ----------
    keys : int32 one row of keys, labels in the low bits.
    i : first position of the block (>= 1).
    mask : 2**shift - 1.
    out : int32 candidate positions.
    n_out : how many ``out`` holds already.
    """
    if not (_int32_array(keys) and _int32_array(out) and isinstance(i, types.Integer)
            and isinstance(mask, types.Integer) and isinstance(n_out, types.Integer)):
        return None
    sig = types.int64(keys, i, mask, out, n_out)

    def codegen(context, builder, signature, args):
        keys_v, i_v, mask_v, out_v, n_out_v = args
        i_v = context.cast(builder, i_v, signature.args[1], types.int64)
        n_out_v = context.cast(builder, n_out_v, signature.args[4], types.int64)
        mask_v = context.cast(builder, mask_v, signature.args[2], types.int64)
        data = context.make_array(signature.args[0])(context, builder, keys_v).data
        out_data = context.make_array(signature.args[3])(context, builder, out_v).data
        lane_mask = _splat(builder, builder.trunc(mask_v, _I32), _V32)
        cur = builder.and_(_load_block(builder, data, i_v), lane_mask)
        prev = builder.and_(_load_block(builder, data, builder.sub(i_v, ir.Constant(_I64, 1))),
                            lane_mask)
        changed = builder.icmp_unsigned("!=", cur, prev)
        positions = builder.add(_splat(builder, builder.trunc(i_v, _I32), _V32),
                                ir.Constant(_V32, list(range(LANES))))
        _compress_store(builder, positions, out_data, n_out_v, changed)
        return _count(builder, changed)

    return sig, codegen


@intrinsic
def compress_partition(typingctx, row, i, shift, goes_left, buf, wl, wr):
    """Step 4 (partition), one block: stable partition of the 16 keys ``row[i:i + 16]``
    by ``goes_left[key >> shift]``.

    Keys whose case goes left are written packed to ``row[wl:]``, the others to
    ``buf[wr:]``; returns how many went left. In place is safe when wl <= i: the block
    is read before it is written. ``goes_left`` (uint8, 0 or 1) is read four bytes at a
    time, so it needs 3 bytes of padding past the largest case.

    Parameters
    ----------
    row : int32 one row of keys, partitioned in place.
    i : first position of the block.
    shift : bits of the class label in a key.
    goes_left : uint8 mark by case (padded by 3 bytes).
    buf : int32 side buffer for the keys going right.
    wl, wr : write positions in ``row`` and ``buf``.
    """
    if not (_int32_array(row) and _int32_array(buf) and isinstance(goes_left, types.Array)
            and goes_left.ndim == 1 and goes_left.dtype == types.uint8
            and all(isinstance(t, types.Integer) for t in (i, shift, wl, wr))):
        return None
    sig = types.int64(row, i, shift, goes_left, buf, wl, wr)

    def codegen(context, builder, signature, args):
        row_v, i_v, shift_v, gl_v, buf_v, wl_v, wr_v = args
        i_v, shift_v, wl_v, wr_v = (
            context.cast(builder, v, t, types.int64)
            for v, t in zip((i_v, shift_v, wl_v, wr_v),
                            (signature.args[1], signature.args[2], signature.args[5],
                             signature.args[6])))
        data = context.make_array(signature.args[0])(context, builder, row_v).data
        gl_data = context.make_array(signature.args[3])(context, builder, gl_v).data
        buf_data = context.make_array(signature.args[4])(context, builder, buf_v).data
        keys = _load_block(builder, data, i_v)
        cases = builder.lshr(keys, _splat(builder, builder.trunc(shift_v, _I32), _V32))
        # Gather goes_left[case] as the low byte of a 4-byte load at its address.
        base = _splat(builder, builder.ptrtoint(gl_data, _I64), _V64)
        ptrs = builder.inttoptr(builder.add(base, builder.zext(cases, _V64)),
                                ir.VectorType(_I32.as_pointer(), LANES))
        gty = ir.FunctionType(_V32, [ir.VectorType(_I32.as_pointer(), LANES), _I32, _MASK,
                                     _V32])
        gather = cgutils.get_or_insert_function(builder.module, gty,
                                                "llvm.masked.gather.v16i32.v16p0i32")
        bytes4 = builder.call(gather, [ptrs, ir.Constant(_I32, 1),
                                       ir.Constant(_MASK, [1] * LANES), ir.Constant(_V32, None)])
        left = builder.icmp_unsigned("!=", builder.and_(bytes4, _splat(builder, ir.Constant(_I32, 255),
                                                                       _V32)), _ZEROS)
        _compress_store(builder, keys, data, wl_v, left)
        _compress_store(builder, keys, buf_data, wr_v, builder.not_(left))
        return _count(builder, left)

    return sig, codegen


@intrinsic
def prefetch(typingctx, arr, index):
    """Ask for the cache line of ``arr[index]`` (1-d, C-contiguous) without waiting for
    it: LLVM's ``prefetch`` (read, keep in every cache level), which Numba does not
    expose. A hint only: it changes no value and never faults."""
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), _I8.as_pointer())
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                          ir.Constant(_I32, 1)])
        return context.get_dummy_value()

    return sig, codegen
