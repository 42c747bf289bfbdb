"""Atomic accumulation into GM: `set_atomic_add(dtype)` / `set_atomic_none()` mirror Ascend C's
SetAtomicAdd<T>() / SetAtomicNone(). While the mode is on, a fixpipe to GM adds its values to
the destination instead of overwriting it, each element one atomic read-modify-write (cores of
a launch run as concurrent threads here, so the adds are real atomic operations, LLVM
`atomicrmw fadd`): several cores may accumulate into the same GM bytes with no flag between
them, in whatever order they land (float sums are then not bit-reproducible, as on the NPU).

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


@prim
def fix_loop_atomic(dst, src, nsz, msz, sstr, dstr, nd, soff, dnd, cfg, relu):
    """cube._fix_loop for a float32 GM dst under set_atomic_add: each element atomically added."""
    nstrip = (nsz + 15) // 16
    base = np.int64(dst.ctypes.data)
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
                for e in range(w):
                    v = np.float32(src[o + e])
                    if relu and v < 0:
                        v = np.float32(0.0)
                    _fadd(base + (d + e) * 4, v)
