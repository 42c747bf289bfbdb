"""Cast primitives: dtype conversion with Ascend C's round modes and saturation."""
from __future__ import annotations

import numpy as np
from numba.extending import overload

from .. import core
from ..core import prim
from ..dtypes import (bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits, ld,
                      st)
from .vecbase import *  # noqa: F403
from .. import trace

_OP_CAST = trace.op("cast")

__all__ = ["cast_count", "cast_rep"]

# ---- cast ------------------------------------------------------------------------------------
CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD = range(7)


@jitable
def _round_int(v, mode):
    """Round a float to an integral float value with an Ascend C round mode."""
    if mode == CAST_FLOOR:
        return np.floor(v)
    if mode == CAST_CEIL:
        return np.ceil(v)
    if mode == CAST_TRUNC:
        return np.trunc(v)
    if mode == CAST_ROUND:
        t = np.trunc(v)
        return t + np.sign(v) if abs(v - t) >= 0.5 else t
    if mode == CAST_ODD:
        t = np.trunc(v)
        return t if (t == v or np.fmod(t, 2.0) != 0) else t + np.sign(v)
    return np.rint(v)


@jitable
def _rne_to(x, k):
    """x (float64) rounded to nearest-even in float kind k, as a float64 value."""
    if k == 1:
        return np.float64(f16_bits_to_f32(f32_to_f16_bits(np.float32(x))))
    if k == 2:
        return np.float64(bf16_bits_to_f32(f32_to_bf16_bits(np.float32(x))))
    if k == 3:
        return np.float64(np.float32(x))
    return x


@jitable
def _bits_of(v, k):
    """Bit pattern of a value v >= 0 exactly representable in kind k."""
    if k == 1:
        return np.uint64(f32_to_f16_bits(np.float32(v)))
    if k == 2:
        return np.uint64(f32_to_bf16_bits(np.float32(v)))
    if k == 3:
        return np.uint64(np.float32(v).view(np.uint32))
    return np.float64(v).view(np.uint64)


@jitable
def _from_bits(b, k):
    if k == 1:
        return np.float64(f16_bits_to_f32(np.uint16(b)))
    if k == 2:
        return np.float64(bf16_bits_to_f32(np.uint16(b)))
    if k == 3:
        return np.float64(np.uint32(b).view(np.float32))
    return np.uint64(b).view(np.float64)


@jitable
def _narrow(x, mode, k):
    """x (float64) rounded into float kind k with an Ascend C round mode (float64 result)."""
    r = _rne_to(x, k)
    if r == x or x != x or mode == CAST_NONE or mode == CAST_RINT:
        return r
    ax = abs(x)
    ar = abs(r)
    if ar > ax:
        u = ar
        t = _from_bits(_bits_of(ar, k) - np.uint64(1), k)
    else:
        t = ar
        u = _from_bits(_bits_of(ar, k) + np.uint64(1), k)
    neg = x < 0
    if mode == CAST_TRUNC:
        m = t
    elif mode == CAST_FLOOR:
        m = u if neg else t
    elif mode == CAST_CEIL:
        m = t if neg else u
    elif mode == CAST_ROUND:
        m = u if (u - ax) <= (ax - t) else t
    else:  # CAST_ODD
        m = t if (_bits_of(t, k) & np.uint64(1)) != 0 else u
    return -m if neg else m


def int_bounds(a):
    raise NotImplementedError


@overload(int_bounds)
def _ov_int_bounds(a):
    if dtype_kind(a) != 0:
        return lambda a: (0.0, 0.0)
    info = np.iinfo(np.dtype(str(a.dtype)))
    lo, hi = float(info.min), float(info.max)
    return lambda a: (lo, hi)


@jitable
def _cast_one(dst, i, v, mode, dk, sk, lo, hi):
    if dk == 0:
        if sk == 0:  # int -> int: saturate
            if v < lo:
                st(dst, i, lo)
            elif v > hi:
                st(dst, i, hi)
            else:
                st(dst, i, v)
        else:        # float -> int: round, saturate, NaN -> 0
            f = np.float64(v)
            if f != f:
                st(dst, i, 0)
            else:
                rr = _round_int(f, mode)
                if rr >= hi:
                    st(dst, i, hi)
                elif rr <= lo:
                    st(dst, i, lo)
                else:
                    st(dst, i, np.int64(rr))
    elif sk == dk:   # same float type: CAST_NONE copies, other modes round to integral
        if mode == CAST_NONE:
            st(dst, i, v)
        else:
            st(dst, i, _round_int(v, mode))
    elif sk != 0 and (dk == 4 or (dk == 3 and sk < 3)):  # widening float: exact
        st(dst, i, v)
    else:            # int -> float, narrowing float, f16 <-> bf16
        st(dst, i, _narrow(np.float64(v), mode, dk))


@jitable
def _cast_setup(api, dst, src, round_mode):
    check_range(api, "round_mode", round_mode, 0, 6)
    lo, hi = int_bounds(dst)
    return fkind(dst), fkind(src), lo, hi


@prim
def cast_count(ctx, dst, src, round_mode, count):
    """Mirrors `AscendC::Cast` (count form) with RoundMode `round_mode`."""
    api = "cast"
    check_count(ctx, api, "dst", dst, count)
    check_count(ctx, api, "src", src, count)
    dk, sk, lo, hi = _cast_setup(api, dst, src, round_mode)
    for i in range(count):
        _cast_one(dst, i, ld(src, i), round_mode, dk, sk, lo, hi)
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_CAST, max(dst.itemsize, src.itemsize), count, False)
    trace.tensor_access(ctx, _OP_CAST, src, count * src.itemsize, 0)
    trace.tensor_access(ctx, _OP_CAST, dst, count * dst.itemsize, 1)


@prim
def cast_rep(ctx, dst, src, round_mode, mask, repeat_times, repeat_params, is_set_mask):
    """Mirrors `AscendC::Cast` (mask + repeat form): lanes and mask follow the wider dtype,
    each operand's blocks are 32 bytes of its own dtype."""
    api = "cast"
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_un_params(api, p)
    dk, sk, lo, hi = _cast_setup(api, dst, src, round_mode)
    eb = max(dst.itemsize, src.itemsize)
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pd = pb_of(dst)
    ps = pb_of(src)
    # past an operand's end but inside UB: runs as on the NPU (vecbase.ub_reach)
    dst = ub_reach(ctx, api, "dst", dst, repeat_times, m0, m1, pd, p.dst_blk_stride,
                   p.dst_rep_stride)
    src = ub_reach(ctx, api, "src", src, repeat_times, m0, m1, ps, p.src_blk_stride,
                   p.src_rep_stride)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(src, rep_index(r, j, ps, p.src_blk_stride, p.src_rep_stride))
            _cast_one(dst, rep_index(r, j, pd, p.dst_blk_stride, p.dst_rep_stride), v,
                      round_mode, dk, sk, lo, hi)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))
    trace.vec(ctx, _OP_CAST, max(dst.itemsize, src.itemsize), repeat_times, True)
    trace.tensor_access(ctx, _OP_CAST, dst, dst.size * dst.itemsize, 1)   # (its reach)


