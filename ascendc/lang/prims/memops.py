"""Byte-copy and address intrinsics for the primitives (LLVM IR, cacheable in njit code).

`stream_copy(d, doff, s, soff, n)`: d[doff:doff+n] = s[soff:soff+n] (uint8 arrays, no overlap)
where the 64-byte-aligned middle of the destination is written with non-temporal (streaming)
stores, then `sfence`. A UB->GM copy of a large output then costs no read-for-ownership of the
GM lines and does not evict the core's working set: about 3/4 of the DRAM traffic of a plain
copy. Only the cost changes, never the bytes written. Off x86 it is a plain memcpy. Launches
whose cores hand GM to each other (MIX kernels) never stream (movecore.streams).

`scatter1/2/4/8(t, do, dstep, s, so)`: the n 32-byte chunks of one contiguous run of s to n
places dstep elements apart in t, every load issued before the first store (Nd2Nz's row -> C0
strips: a row read in address order, which the CPU's prefetchers follow).
"""
from __future__ import annotations

import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

__all__ = ["scatter1", "scatter2", "scatter4", "scatter8", "stream_copy", "voidptr"]

_X86 = platform.machine().lower() in ("x86_64", "amd64")
_I8P = ir.IntType(8).as_pointer()
_I64 = ir.IntType(64)


@intrinsic
def voidptr(typingctx, addr):
    """The integer `addr` as a `void*` (for `numba.carray`: an array over memory that no NRT
    reference count owns; compiler/rawptr.py says why the generated `_run` needs that)."""
    if not isinstance(addr, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], context.get_value_type(types.voidptr))
    return types.voidptr(addr), codegen


def _byte_ptr(context, builder, aty, a, off):
    arr = context.make_array(aty)(context, builder, a)
    return builder.gep(builder.bitcast(arr.data, _I8P), [off])


def stream_copy(d, doff, s, soff, n):
    """d[doff:doff+n] = s[soff:soff+n] with streaming stores in njit code (see module doc);
    a plain slice copy from Python."""
    d[doff:doff + n] = s[soff:soff + n]


@overload(stream_copy)
def _ov_stream_copy(d, doff, s, soff, n):
    return lambda d, doff, s, soff, n: _stream_copy(d, doff, s, soff, n)


@intrinsic
def _stream_copy(typingctx, d, doff, s, soff, n):
    if not (isinstance(d, types.Array) and isinstance(s, types.Array)):
        return None
    sig = types.void(d, types.int64, s, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        dp = _byte_ptr(context, builder, signature.args[0], args[0], args[1])
        sp = _byte_ptr(context, builder, signature.args[2], args[2], args[3])
        nb = args[4]
        if not _X86:
            cgutils.raw_memcpy(builder, dp, sp, nb, 1)
            return context.get_dummy_value()
        head = builder.and_(builder.sub(_I64(0), builder.ptrtoint(dp, _I64)), _I64(63))
        head = builder.select(builder.icmp_unsigned("<", nb, head), nb, head)
        cgutils.raw_memcpy(builder, dp, sp, head, 1)
        nvec = builder.lshr(builder.sub(nb, head), _I64(6))
        vty = ir.VectorType(_I64, 8)
        dv = builder.bitcast(builder.gep(dp, [head]), vty.as_pointer())
        sv = builder.bitcast(builder.gep(sp, [head]), vty.as_pointer())
        nontemporal = builder.module.add_metadata([ir.IntType(32)(1)])
        with cgutils.for_range(builder, nvec) as loop:
            v = builder.load(builder.gep(sv, [loop.index]), align=1)
            store = builder.store(v, builder.gep(dv, [loop.index]), align=64)
            store.set_metadata("nontemporal", nontemporal)
        done = builder.add(head, builder.shl(nvec, _I64(6)))
        cgutils.raw_memcpy(builder, builder.gep(dp, [done]), builder.gep(sp, [done]),
                           builder.sub(nb, done), 1)
        sfence = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse.sfence")
        builder.call(sfence, [])
        return context.get_dummy_value()
    return sig, codegen


def _make_scatter(n):
    """Intrinsic scatter(t, do, dstep, s, so): the n 32-byte chunks at element so of s (one
    contiguous run) to elements do, do + dstep, ... of t (same element width), all loads issued
    before the first store."""
    @intrinsic
    def scatter(typingctx, t, do, dstep, s, so):
        if not (isinstance(t, types.Array) and isinstance(s, types.Array)):
            return None
        sig = types.void(t, types.int64, types.int64, s, types.int64)

        def codegen(context, builder, signature, args):
            t_, do_, dstep_, s_, so_ = args
            vty = ir.VectorType(ir.IntType(8), 32).as_pointer()
            tp = context.make_array(signature.args[0])(context, builder, t_).data
            sp = context.make_array(signature.args[3])(context, builder, s_).data
            sp = builder.bitcast(builder.gep(sp, [so_]), vty)
            vals = [builder.load(builder.gep(sp, [_I64(j)]), align=1) for j in range(n)]
            for j in range(n):
                off = builder.add(do_, builder.mul(dstep_, _I64(j)))
                builder.store(vals[j], builder.bitcast(builder.gep(tp, [off]), vty), align=1)
            return context.get_dummy_value()
        return sig, codegen
    return scatter


scatter1, scatter2, scatter4, scatter8 = (_make_scatter(n) for n in (1, 2, 4, 8))

