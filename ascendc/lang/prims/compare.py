"""Compare and select primitives: element comparisons into bit masks, selection by a mask."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .. import core
from ..core import prim
from ..dtypes import ld, st
from ..errors import FAULT, fault, KernelError
from .vecbase import *  # noqa: F403
from .. import trace

_OP_COMPARE, _OP_COMPARE_SCALAR, _OP_SELECT = (trace.op("compare"), trace.op("compare_scalar"),
                                              trace.op("select"))

__all__ = ["compare_count", "compare_rep", "compare_scalar_count", "compare_scalar_rep",
           "select_count", "select_rep"]

# ---- compare / select ------------------------------------------------------------------------
LT, GT, EQ, LE, GE, NE = range(6)


@jitable
def _cmp(x, y, mode):
    if mode == LT:
        return x < y
    if mode == GT:
        return x > y
    if mode == EQ:
        return x == y
    if mode == LE:
        return x <= y
    if mode == GE:
        return x >= y
    return x != y


def ld_or(x, i, s):
    """ld(x, i) for a tensor x; the prepared scalar s otherwise."""
    raise NotImplementedError


@overload(ld_or)
def _ov_ld_or(x, i, s):
    if isinstance(x, types.Array):
        return lambda x, i, s: ld(x, i)
    return lambda x, i, s: s


def scalar_or_zero(a, x):
    """x rounded to a's dtype when x is a scalar; a zero of a's compute type for a tensor x."""
    raise NotImplementedError


@overload(scalar_or_zero)
def _ov_scalar_or_zero(a, x):
    if isinstance(x, types.Array):
        return lambda a, x: as_elem(a, 0)
    return lambda a, x: as_elem(a, x)


def _read_if_tensor(ctx, op_id, x, nbytes):
    """The sanitizer's read record of operand x when it is a tensor (nothing for a scalar)."""
    raise NotImplementedError


@overload(_read_if_tensor)
def _ov_read_if_tensor(ctx, op_id, x, nbytes):
    if isinstance(x, types.Array):
        return lambda ctx, op_id, x, nbytes: trace.tensor_access(ctx, op_id, x, nbytes, 0)
    return lambda ctx, op_id, x, nbytes: None


def _reach_if_tensor(ctx, op_id, x, repeat, lanes, pb, blk, rep):
    """A repeat form's read of tensor operand x over its reach (the farthest lane of its last
    repeat; strides may leave gaps, so initcheck does not judge it); nothing for a scalar."""
    raise NotImplementedError


@overload(_reach_if_tensor)
def _ov_reach_if_tensor(ctx, op_id, x, repeat, lanes, pb, blk, rep):
    if isinstance(x, types.Array):
        def impl(ctx, op_id, x, repeat, lanes, pb, blk, rep):
            if repeat > 0:
                last = rep_index(repeat - 1, lanes - 1, pb, blk, rep) + 1
                trace.read_unchecked(ctx, op_id, x.ctypes.data, last * x.itemsize)
        return impl
    return lambda ctx, op_id, x, repeat, lanes, pb, blk, rep: None


@jitable
def _cmp_setup(ctx, api, dst, src0, src1, cmp_mode):
    check_range(api, "cmp_mode", cmp_mode, 0, 5)
    if dst.itemsize != 1:
        fault("{}: dst dtype must be uint8 or int8 (one bit per element), got "
              "dtype={}", api, dtname(dst))
        raise KernelError(FAULT)
    require_int(api, "dst", dst)
    if is_arr(src1):
        require_same(api, "src1", src1, src0)


@jitable
def _cmp_count(ctx, api, dst, src0, src1, cmp_mode, count):
    _cmp_setup(ctx, api, dst, src0, src1, cmp_mode)
    check_count(ctx, api, "src0", src0, count)
    check_count(ctx, api, "src1", src1, count)
    eb = src0.itemsize
    n = (count * eb // 256) * 256 // eb  # hardware skips the tail that is not 256 B aligned
    if n // 8 > dst.size:
        fault("{}: dst must hold one bit per compared element ({} bytes), got "
              "size={}", api, n // 8, dst.size)
        raise KernelError(FAULT)
    s = scalar_or_zero(src0, src1)
    for k in range(n // 8):
        w = 0
        for b in range(8):
            i = k * 8 + b
            if _cmp(ld(src0, i), ld_or(src1, i, s), cmp_mode):
                w |= 1 << b
        st(dst, k, w)
    core.count(ctx, core.C_VEC_OPS, n)


@jitable
def _cmp_rep(ctx, api, dst, src0, src1, cmp_mode, repeat, s0b, s0r, s1b, s1r):
    _cmp_setup(ctx, api, dst, src0, src1, cmp_mode)
    check_range(api, "repeat_times", repeat, 0, 255)
    eb = src0.itemsize
    lanes = 256 // eb
    pb = 32 // eb
    full = np.uint64(0xFFFFFFFFFFFFFFFF)
    m1 = full if lanes > 64 else np.uint64(0)
    m0 = full if lanes >= 64 else (np.uint64(1) << np.uint64(lanes)) - np.uint64(1)
    # past an operand's end but inside UB: runs as on the NPU (vecbase.ub_reach); dst takes
    # lanes // 8 bytes per repeat
    src0 = ub_reach(ctx, api, "src0", src0, repeat, m0, m1, pb, s0b, s0r)
    src1 = ub_reach(ctx, api, "src1", src1, repeat, m0, m1, pb, s1b, s1r)
    dst = reach_to(ctx, api, "dst", dst, repeat * (lanes // 8) - 1)
    s = scalar_or_zero(src0, src1)
    for r in range(repeat):
        for k in range(lanes // 8):
            w = 0
            for b in range(8):
                j = k * 8 + b
                v0 = ld(src0, rep_index(r, j, pb, s0b, s0r))
                v1 = ld_or(src1, rep_index(r, j, pb, s1b, s1r), s)
                if _cmp(v0, v1, cmp_mode):
                    w |= 1 << b
            st(dst, r * (lanes // 8) + k, w)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes)


@prim
def compare_count(ctx, dst, src0, src1, cmp_mode, count):
    """Mirrors `AscendC::Compare` (count form): bit i of dst (uint8, little-endian bit order) is
    `src0[i] <cmp_mode> src1[i]`; only the 256-byte-aligned part of `count` is compared."""
    _cmp_count(ctx, "compare", dst, src0, src1, cmp_mode, count)
    trace.vec(ctx, _OP_COMPARE, src0.itemsize, count, False)
    _cmp_count_access(ctx, _OP_COMPARE, dst, src0, src1, count)


@jitable
def _cmp_count_access(ctx, op_id, dst, src0, src1, count):
    """The sanitizer's records of a compare's count form: the 256-byte-aligned part read, one
    bit per element of it written."""
    n = (count * src0.itemsize // 256) * 256 // src0.itemsize
    trace.tensor_access(ctx, op_id, src0, n * src0.itemsize, 0)
    _read_if_tensor(ctx, op_id, src1, n * src0.itemsize)
    trace.tensor_access(ctx, op_id, dst, n // 8, 1)


@jitable
def _cmp_rep_access(ctx, op_id, dst, src0, src1, repeat, s0b, s0r, s1b, s1r):
    lanes = 256 // src0.itemsize
    _reach_if_tensor(ctx, op_id, src0, repeat, lanes, 32 // src0.itemsize, s0b, s0r)
    _reach_if_tensor(ctx, op_id, src1, repeat, lanes, 32 // src0.itemsize, s1b, s1r)
    trace.tensor_access(ctx, op_id, dst, repeat * (lanes // 8), 1)


@prim
def compare_rep(ctx, dst, src0, src1, cmp_mode, mask, repeat_times, repeat_params, is_set_mask):
    """Mirrors `AscendC::Compare` (repeat form, BinaryRepeatParams). On A2 the mask is a
    reserved parameter: every lane is compared; repeat r writes bits [r*lanes, (r+1)*lanes)."""
    p = repeat_params
    check_bin_params("compare", p)
    _cmp_rep(ctx, "compare", dst, src0, src1, cmp_mode, repeat_times, p.src0_blk_stride,
             p.src0_rep_stride, p.src1_blk_stride, p.src1_rep_stride)
    trace.vec(ctx, _OP_COMPARE, src0.itemsize, repeat_times, True)
    _cmp_rep_access(ctx, _OP_COMPARE, dst, src0, src1, repeat_times, p.src0_blk_stride,
                    p.src0_rep_stride, p.src1_blk_stride, p.src1_rep_stride)


@prim
def compare_scalar_count(ctx, dst, src0, src1, cmp_mode, count):
    """Mirrors `AscendC::CompareScalar` (count form): bit i = `src0[i] <cmp_mode> src1`."""
    _cmp_count(ctx, "compare_scalar", dst, src0, src1, cmp_mode, count)
    trace.vec(ctx, _OP_COMPARE_SCALAR, src0.itemsize, count, False)
    _cmp_count_access(ctx, _OP_COMPARE_SCALAR, dst, src0, src1, count)


@prim
def compare_scalar_rep(ctx, dst, src0, src1, cmp_mode, mask, repeat_times, repeat_params,
                       is_set_mask):
    """Mirrors `AscendC::CompareScalar` (repeat form, UnaryRepeatParams; mask reserved)."""
    p = repeat_params
    check_un_params("compare_scalar", p)
    _cmp_rep(ctx, "compare_scalar", dst, src0, src1, cmp_mode, repeat_times, p.src_blk_stride,
             p.src_rep_stride, 0, 0)
    trace.vec(ctx, _OP_COMPARE_SCALAR, src0.itemsize, repeat_times, True)
    _cmp_rep_access(ctx, _OP_COMPARE_SCALAR, dst, src0, src1, repeat_times, p.src_blk_stride,
                    p.src_rep_stride, 0, 0)


@jitable
def _sel_bit(sel, i, nb):
    return (np.uint64(ld(sel, i // nb)) >> np.uint64(i % nb)) & np.uint64(1)


@jitable
def _sel_setup(api, dst, sel_mask, src0, src1, sel_mode):
    check_range(api, "sel_mode", sel_mode, 0, 2)
    require_int(api, "sel_mask", sel_mask)
    require_same(api, "src0", src0, dst)
    if is_arr(src1):
        require_same(api, "src1", src1, dst)
        if sel_mode == 1:
            fault("{}: src1 must be a scalar in sel_mode 1 (VSEL_TENSOR_SCALAR_MODE)"
                  ", got a tensor with sel_mode=1", api)
            raise KernelError(FAULT)
    elif sel_mode != 1:
        fault("{}: src1 must be a tensor in sel_mode 0 and 2, got a scalar with "
              "sel_mode={}", api, sel_mode)
        raise KernelError(FAULT)


@jitable
def _sel_need(api, sel_mask, nbits):
    if nbits > sel_mask.size * sel_mask.itemsize * 8:
        fault("{}: sel_mask must hold {} bits, got size={} ({} bits)", api, nbits,
              sel_mask.size, sel_mask.size * sel_mask.itemsize * 8)
        raise KernelError(FAULT)


@prim
def select_count(ctx, dst, sel_mask, src0, src1, sel_mode, count):
    """Mirrors `AscendC::Select` (count form): dst[i] = src0[i] if bit else src1 (tensor or,
    in mode 1, scalar). Mode 0 reuses the first 256/sizeof(T) bits for every repeat."""
    api = "select"
    _sel_setup(api, dst, sel_mask, src0, src1, sel_mode)
    check_count(ctx, api, "dst", dst, count)
    check_count(ctx, api, "src0", src0, count)
    check_count(ctx, api, "src1", src1, count)
    lanes = 256 // dst.itemsize
    nb = sel_mask.itemsize * 8
    _sel_need(api, sel_mask, min(count, lanes) if sel_mode == 0 else count)
    s = scalar_or_zero(dst, src1)
    for i in range(count):
        bit = _sel_bit(sel_mask, i % lanes if sel_mode == 0 else i, nb)
        st(dst, i, ld(src0, i) if bit != 0 else ld_or(src1, i, s))
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_SELECT, dst.itemsize, count, False)
    bits = min(count, lanes) if sel_mode == 0 else count
    trace.tensor_access(ctx, _OP_SELECT, sel_mask, (bits + nb - 1) // nb * sel_mask.itemsize, 0)
    trace.tensor_access(ctx, _OP_SELECT, src0, count * dst.itemsize, 0)
    _read_if_tensor(ctx, _OP_SELECT, src1, count * dst.itemsize)
    trace.tensor_access(ctx, _OP_SELECT, dst, count * dst.itemsize, 1)


@prim
def select_rep(ctx, dst, sel_mask, src0, src1, sel_mode, mask, repeat_times, repeat_params,
               is_set_mask):
    """Mirrors `AscendC::Select` (mask + repeat form): masked-off lanes keep dst; modes 1/2
    consume 256/sizeof(T) bits of sel_mask per repeat, mode 0 reuses the first ones."""
    api = "select"
    _sel_setup(api, dst, sel_mask, src0, src1, sel_mode)
    check_range(api, "repeat_times", repeat_times, 0, 255)
    p = repeat_params
    check_bin_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    # past an operand's end but inside UB: runs as on the NPU (vecbase.ub_reach)
    dst = ub_reach(ctx, api, "dst", dst, repeat_times, m0, m1, pb, p.dst_blk_stride,
                   p.dst_rep_stride)
    src0 = ub_reach(ctx, api, "src0", src0, repeat_times, m0, m1, pb, p.src0_blk_stride,
                    p.src0_rep_stride)
    src1 = ub_reach(ctx, api, "src1", src1, repeat_times, m0, m1, pb, p.src1_blk_stride,
                    p.src1_rep_stride)
    nb = sel_mask.itemsize * 8
    jmax = top_lane(m0, m1)
    if repeat_times > 0 and jmax >= 0:     # the farthest sel_mask bit read, likewise
        last_bit = jmax if sel_mode == 0 else (repeat_times - 1) * lanes + jmax
        sel_mask = reach_to(ctx, api, "sel_mask", sel_mask, last_bit // nb)
    s = scalar_or_zero(dst, src1)
    for r in range(repeat_times):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            bit = _sel_bit(sel_mask, j if sel_mode == 0 else r * lanes + j, nb)
            k0 = rep_index(r, j, pb, p.src0_blk_stride, p.src0_rep_stride)
            k1 = rep_index(r, j, pb, p.src1_blk_stride, p.src1_rep_stride)
            v = ld(src0, k0) if bit != 0 else ld_or(src1, k1, s)
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), v)
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_times * lanes_on(m0, m1, lanes))
    trace.vec(ctx, _OP_SELECT, dst.itemsize, repeat_times, True)
    if repeat_times > 0 and jmax >= 0:      # the sanitizer's records (reads over their reach)
        top = jmax if sel_mode == 0 else (repeat_times - 1) * lanes + jmax
        trace.read_unchecked(ctx, _OP_SELECT, sel_mask.ctypes.data,
                             (top // nb + 1) * sel_mask.itemsize)
        _reach_if_tensor(ctx, _OP_SELECT, src0, repeat_times, lanes, pb, p.src0_blk_stride,
                         p.src0_rep_stride)
        _reach_if_tensor(ctx, _OP_SELECT, src1, repeat_times, lanes, pb, p.src1_blk_stride,
                         p.src1_rep_stride)
        trace.write_reach(ctx, _OP_SELECT, dst.ctypes.data,
                          (rep_index(repeat_times - 1, lanes - 1, pb, p.dst_blk_stride,
                                     p.dst_rep_stride) + 1) * dst.itemsize)
