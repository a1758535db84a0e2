"""Chunked kernels on Numba's own threads: one parallel launch per step.

The grower cuts each step of a level into chunks c = 0 .. n - 1 of one kernel,
``fn(*args, c, n)`` (:func:`cartjit.engine.presort.run_chunks`). Handed to a Python thread
pool, a chunk reaches its worker through a queue and a lock, and the caller waits for
the result on another: on the machines measured that costs about 50 µs a call (a
worker woken from sleep), as much as a whole chunk of many steps of a deep tree, and a
10⁵-row fit with surrogates makes some 220 calls. Here the chunks of a call are the
iterations of one ``prange`` loop instead: Numba's OpenMP threads wait for work by
spinning a while, so a launch costs a few microseconds.

The loop body calls the kernel through its address (:func:`_call_at`), with Numba's
own calling convention, rather than by name: a ``prange`` loop that names a kernel
links the kernel's code into its own and optimises it again, which took the cold
compile of a 10⁵-row fit with surrogates from 51 to 139 s. The launchers (one per
number of kernel arguments, :data:`LAUNCHERS`) are compiled once per type signature
and cached like every kernel; the address of each kernel's compiled signature is
looked up once per process (:func:`address`). A launcher's cache index records the
types of its arguments, so only the engine's own types may be launched: a type defined
outside cartjit (a test's NamedTuple, say) would leave an index that a process without
its module cannot load.

Chunks may also share a step's work out as they go, each taking the next unit from a
counter incremented atomically (:func:`next_unit`; the grower's searches and partition
take blocks of (node, feature) pairs so), so that a chunk on a slower core takes fewer.

The launch is used only where the threading layer may be entered from several Python
threads at once (``omp``, ``tbb``; the ``workqueue`` layer would abort the process,
docs/design.md), and with ``CARTJIT_PARALLEL`` on: :func:`launch_pool` says so, and
:func:`cartjit.engine.presort.run_chunks` falls back to a thread pool otherwise. Chunk c
writes the same memory whichever thread runs it, so results do not depend on the
route.
"""
from __future__ import annotations

import contextlib
import threading

import numba
import numpy as np
from numba import _dispatcher, prange, types
from numba.core.extending import intrinsic

from .config import PARALLEL, jit, jit_parallel
from .config import jit

__all__ = ["LAUNCH", "launch_pool", "launch", "address", "LAUNCHERS", "next_unit",
           "parallel_entry"]


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


@jit_parallel
def _launch12(addr, n, failed, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11):
    for c in prange(n):
        failed[c] = _call_at(addr, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11,
                                    np.int64(c), n))


#: The launcher of a kernel by its number of arguments before ``(c, n)``.
LAUNCHERS = {1: _launch1, 2: _launch2, 3: _launch3, 4: _launch4, 5: _launch5, 6: _launch6, 7: _launch7,
             8: _launch8, 9: _launch9, 10: _launch10, 11: _launch11, 12: _launch12}

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
    """The ``pool`` of :func:`cartjit.engine.presort.run_chunks` that launches chunks as one
    parallel loop (:func:`launch`); nothing to shut down."""

    def shutdown(self, wait=True):
        pass


#: The pool value for :func:`cartjit.engine.presort.run_chunks` that means :func:`launch`.
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

# --------------------------------------------------------------------------- level steps

@jit(inline="always")
def _block(m, c, n_chunks):
    """Rows ``[j0, j1)`` of chunk c when ``m`` rows are cut into ``n_chunks``
    consecutive blocks of nearly equal size. Loop over them as ``for j in range(j1)``,
    skipping ``j < j0``: a loop from 0 lets the compiler drop the checks for negative
    indices at every access by ``j`` (a loop from ``j0`` made step 2 half as slow
    again)."""
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
    each, ``counters[k * COUNTER_STRIDE]``, :func:`cartjit.engine.team.next_unit`): a chunk on
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
