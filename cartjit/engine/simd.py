"""Sixteen keys at a time: the compress-store steps of the split search and the partition.

Two loops touch every presorted key at every depth level: the listing of the positions
where the class changes (:mod:`cartjit.engine.scans`, scan by runs) and the stable
partition of a split node's segments (:mod:`cartjit.engine.grow`). Both keep some of a
block of keys and pack them to the front of an output, a *compress*. Scalar code does
that one key at a time with a data-dependent write pointer; CPUs with AVX-512 do it for
sixteen 32-bit keys in one instruction (``vpcompressd``). The keys are packed in a
register and the whole register stored (sixteen lanes, so an output needs room for
sixteen past its last key): compressing straight to memory, LLVM's
``llvm.masked.compressstore``, is microcoded on AMD's AVX-512 CPUs and made the
partition slower than the scalar loop there. Numba has no vector types, so the two blocks
below are written as :func:`numba.core.extending.intrinsic` functions that build the
LLVM IR directly; kernels call them on whole blocks of 16 and finish the tail with the
scalar loop.

They are used only when :data:`cartjit.engine.config.SIMD` is on (by default: when Numba
compiles for a CPU with AVX-512F). On other targets (the tests force them on) LLVM
expands the portable intrinsics into a loop per lane, correct but slower than the
scalar code. Either way the
results are identical, key for key; the tests run both.

One more intrinsic lives here, :func:`prefetch`: no vector code, it asks for a cache
line ahead of its use (the responses of scattered cases, the rows of a prediction), on
every path whatever ``SIMD`` says.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic

from . import config as _config

__all__ = ["LANES", "compress_class_changes", "compress_partition", "prefetch"]

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
    if not _config.AVX512:  # the portable form; on AVX-512 a register compress below
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
