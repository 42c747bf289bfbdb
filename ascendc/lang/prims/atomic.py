"""Atomic accumulation into GM: `set_atomic_add(dtype)` / `set_atomic_none()` mirror Ascend C's
SetAtomicAdd<T>() / SetAtomicNone(). While the mode is on, a fixpipe to GM adds its values to
the destination instead of overwriting it, each element one atomic read-modify-write (cores of
a launch run as concurrent threads here, so the adds are really atomic: each element is added
under the lock word of its 256-byte granule, core.ATOMIC_LOCKS): several cores may accumulate
into the same GM bytes with no flag between them, in whatever order they land (float sums are
then not bit-reproducible, as on the NPU).

Emulated: float32 only, and only the fixpipe path (L0C -> GM; the hardware also applies the
mode to MTE3's UB -> GM copies; a data_copy to GM inside an atomic section overwrites here).
The mode is a bit of the core's options (state.FLAG_ATOMIC_ADD),
cleared by set_atomic_none; checked mode's GM-order check (rt.gmorder) lets two cores' atomic
adds overlap but still reports an atomic add against another core's read or plain write that no
flag orders. The NPU view times an atomic fixpipe as a plain one.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ..core import prim
from ..errors import FAULT, fault, KernelError
from ..state import FLAG_ATOMIC_ADD, STATE
from .movecore import dtype_name_of

__all__ = ["set_atomic_add", "set_atomic_none"]


@intrinsic
def _fadd(typingctx, addr, v):
    """*(float *)addr += v, atomically (monotonic: the cores order it with their flags)."""
    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.FloatType().as_pointer())
        builder.atomic_rmw("fadd", ptr, args[1], "monotonic")
        return context.get_dummy_value()
    return types.void(types.int64, types.float32), codegen


def _dtype_info(dt):
    """(is float32, name) of a dtype argument; compile-time constants in njit code."""


@overload(_dtype_info)
def _dtype_info_ov(dt):
    inner = getattr(dt, "dtype", None) or getattr(dt, "instance_type", None) or dt
    r = (inner == types.float32, dtype_name_of(inner))
    return lambda dt: r


@prim
def set_atomic_add(ctx, dtype):
    """Mirrors SetAtomicAdd<T>(): later fixpipes to GM add into it (float32 only)."""
    ok, name = _dtype_info(dtype)
    if not ok:
        fault("set_atomic_add: dtype must be float32 (the only atomic type emulated), got "
              "dtype={}", name)
        raise KernelError(FAULT)
    st = ctx[STATE][0]
    st.options = st.options | FLAG_ATOMIC_ADD


@prim
def set_atomic_none(ctx):
    """Mirrors SetAtomicNone(): fixpipes overwrite GM again."""
    st = ctx[STATE][0]
    st.options = st.options & ~FLAG_ATOMIC_ADD


@intrinsic
def _add_to(typingctx, addr, v):
    """*(float *)addr += v, a plain load and store (under a lock word)."""
    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.FloatType().as_pointer())
        builder.store(builder.fadd(builder.load(ptr), args[1]), ptr)
        return context.get_dummy_value()
    return types.void(types.int64, types.float32), codegen


@intrinsic
def _lock(typingctx, addr):
    """Spin until the int32 lock word at addr goes 0 -> 1 (acquire)."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        ptr = builder.inttoptr(args[0], i32.as_pointer())
        spin = builder.append_basic_block("spin")
        held = builder.append_basic_block("held")
        builder.branch(spin)
        builder.position_at_end(spin)
        res = builder.cmpxchg(ptr, ir.Constant(i32, 0), ir.Constant(i32, 1), "acquire",
                              "monotonic")
        builder.cbranch(builder.extract_value(res, 1), held, spin)
        builder.position_at_end(held)
        return context.get_dummy_value()
    return types.void(types.int64), codegen


@intrinsic
def _unlock(typingctx, addr):
    """Release the int32 lock word at addr (store 0, release)."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        ptr = builder.inttoptr(args[0], i32.as_pointer())
        builder.store_atomic(ir.Constant(i32, 0), ptr, "release", 4)
        return context.get_dummy_value()
    return types.void(types.int64), codegen


_GRANULE_SHIFT = 8          # one lock word per 256-byte GM granule (modulo the table)
_LOCK_MASK = 4095           # core.ATOMIC_LOCKS has 4096 words


@prim
def fix_loop_atomic(dst, src, nsz, msz, sstr, dstr, nd, soff, dnd, cfg, relu, locks):
    """fixpipe._fix_loop for a float32 GM dst under set_atomic_add: each element added under the
    lock word of its 256-byte granule (`locks`: the address of core.ATOMIC_LOCKS, shared by
    every core of the process), so the adds of concurrent cores never lose one; a thread holds
    one lock word at a time, kept while consecutive elements stay in its granule. One
    lock-prefixed instruction per granule instead of one compare-and-swap per element (about
    5 ns each on x86: the one-pass FlashAttention backward makes tens of millions); a row of
    16 (or fewer) elements inside one granule is added as one loop under its lock. With no
    lock table (locks == 0), one atomic add per element."""
    nstrip = (nsz + 15) // 16
    base = np.int64(dst.ctypes.data)
    held = np.int64(-1)
    for i in range(nd):
        for a in range(msz if cfg == 0 else nstrip):
            for b in range(nstrip if cfg == 0 else msz):
                r, j = (a, b) if cfg == 0 else (b, a)
                w = min(16, nsz - j * 16)
                o = i * soff + j * sstr * 16 + r * 16
                if cfg == 0:
                    d = i * dnd + r * dstr + j * 16
                else:
                    d = i * dnd + j * dstr * 16 + r * 16
                if locks != 0:
                    first = (base + d * 4) >> _GRANULE_SHIFT
                    if first == (base + (d + w - 1) * 4) >> _GRANULE_SHIFT:
                        g0 = first & _LOCK_MASK
                        if g0 != held:      # the whole row in one granule: one lock
                            if held >= 0:
                                _unlock(locks + held * 4)
                            _lock(locks + g0 * 4)
                            held = g0
                        at = base + d * 4
                        for e in range(w):
                            v = np.float32(src[o + e])
                            if relu and v < 0:
                                v = np.float32(0.0)
                            _add_to(at + e * 4, v)
                        continue
                for e in range(w):
                    v = np.float32(src[o + e])
                    if relu and v < 0:
                        v = np.float32(0.0)
                    addr = base + (d + e) * 4
                    if locks == 0:
                        _fadd(addr, v)
                        continue
                    g = (addr >> _GRANULE_SHIFT) & _LOCK_MASK
                    if g != held:
                        if held >= 0:
                            _unlock(locks + held * 4)
                        _lock(locks + g * 4)
                        held = g
                    _add_to(addr, v)
    if held >= 0:
        _unlock(locks + held * 4)
