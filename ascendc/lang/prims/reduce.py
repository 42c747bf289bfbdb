"""Reduction primitives: reduce_sum/max/min (count and repeat forms), whole_reduce_sum/max/min.

Semantics follow Ascend C (`ReduceSum`, `ReduceMax`, `ReduceMin`, `WholeReduceSum/Max/Min`):
- reduce_*: dst[0] = the result; with `cal_index=True`, dst[1] holds the index of the (first)
  max/min, stored as the raw bits of an unsigned integer of dst's width (uint16 in a float16 /
  bfloat16 slot, uint32 in a float32 slot), as Ascend C does; read it back with a view.
  Repeat form: `repeat_time` repeats of 256 B with block stride 1 and `src_rep_stride` blocks
  between repeats; the index of lane j of repeat r is `r * src_rep_stride * (32 // itemsize) + j`.
- shared_tmp_buffer must hold at least Ascend C's minimum workLocal size, in elements of the
  operand dtype (`epb` = 32 // itemsize, `epr` = 256 // itemsize, `R1` = repeat_time in the
  repeat form, ceil(count / epr) in the count form, `up(x, m)` = ceil(x / m) * m):
    reduce_sum:                  up(R1, epb)
    reduce_max/min, no index:    up(2 * R1, epb)
    reduce_max/min, cal_index:   up(2 * R1, epb) + up(c2, epb) [+ up(c3, epb) if c2 > 2],
                                 where c2 = ceil(2 * R1 / epr) * 2, c3 = ceil(c2 / epr) * 2.
  The buffer is not needed for the result here; in checked mode (NaN fill on) its first
  required elements are overwritten with NaN bytes, as hardware leaves them undefined.
- whole_reduce_*: one result per repeat, written at dst[r * dst_rep_stride * unit] where unit is
  1 element for sums and ORDER_ONLY_VALUE, 2 elements (value, index) for ORDER_VALUE_INDEX /
  ORDER_INDEX_VALUE and 4 bytes (a uint32 index) for ORDER_ONLY_INDEX; the index is the lane
  within the repeat.
- count/repeat 0 (and an empty mask) are no-ops, as on A2.

Approximations: float sums accumulate in float64 and round once, in an order that differs from
hardware's binary tree (results agree within the shared tolerance, not bit for bit); max/min
propagate NaN (the first NaN's index is reported). Ties report the smallest index, as documented.
"""
from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from .. import core
from ..dtypes import ld, st
from ..errors import FAULT, fault, KernelError
from ..core import prim
from .vecbase import (check_count, check_range, lanes_on, next_lane, per_block, prefix_lanes,
                      put_bits, reach_to, rep_far, rep_index, require_same, spans_overlap,
                      vecable, vmask)
from .. import trace
from .borrow import borrowed
from .minmax import acc_zero, vmax, vmin
from ..state import MEM, STATE

_OP_RSUM, _OP_RMAX, _OP_RMIN = (trace.op("reduce_sum"), trace.op("reduce_max"),
                             trace.op("reduce_min"))
_OP_WSUM, _OP_WMAX, _OP_WMIN = (trace.op("whole_reduce_sum"), trace.op("whole_reduce_max"),
                                trace.op("whole_reduce_min"))

__all__ = [
    "reduce_sum_count", "reduce_sum_rep", "reduce_max_count", "reduce_max_rep",
    "reduce_min_count", "reduce_min_rep", "whole_reduce_sum", "whole_reduce_max",
    "whole_reduce_min",
]

_jit = prim  # cached nogil dispatcher typed with non-literal arguments (see vector.prim)
_rj = register_jitable(nogil=True, error_model="numpy")
_rj_fast = register_jitable(nogil=True, error_model="numpy", fastmath={"reassoc"})

ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX = range(4)

# ---- shared checks ---------------------------------------------------------------------------

@_rj
def _up(x, m):
    return (x + m - 1) // m * m


@_rj
def tmp_need(eb, r1, minmax, cal_index):
    """Ascend C's minimum sharedTmpBuffer size (elements) for a first round of r1 repeats."""
    epb = 32 // eb
    epr = 256 // eb
    if not minmax:
        return _up(r1, epb)
    c1 = 2 * r1
    if not cal_index:
        return _up(c1, epb)
    c2 = (c1 + epr - 1) // epr * 2
    need = _up(c1, epb) + _up(c2, epb)
    if c2 > 2:
        need += _up((c2 + epr - 1) // epr * 2, epb)
    return need


@_rj
def check_tmp(ctx, api, tmp, need):
    if tmp.size < need:
        fault("{}: shared_tmp_buffer must hold at least {} elements ({} bytes, "
              "Ascend C's minimum workLocal size), got size={}", api, need,
              need * tmp.itemsize, tmp.size)
        raise KernelError(FAULT)


@_rj
def clobber_tmp(ctx, tmp, need):
    """Checked mode: the buffer's contents are undefined after the call; fill them with NaN."""
    if ctx[STATE][0].options & core.FLAG_NAN_FILL:
        off = core.local_offset(ctx, tmp)
        if off >= 0:
            nb = min(need, tmp.size) * tmp.itemsize
            ctx[MEM][off:off + nb] = 0xFF


@_rj
def check_dst(ctx, api, dst, n):
    if dst.size < n:
        fault("{}: dst must hold {} elements (the result{}), got size={}", api, n,
              " and its index" if n > 1 else "", dst.size)
        raise KernelError(FAULT)


@_rj
def check_index_range(api, src, last_index, cal_index):
    if cal_index and src.itemsize == 2 and last_index > 65535:
        fault("{}: indices must fit in uint16 for 16-bit dtypes when cal_index=True"
              " (Ascend C limit), got last index={}", api, last_index)
        raise KernelError(FAULT)


# ---- count-form kernels (vectorised) ---------------------------------------------------------

@_rj_fast
def sum_n(src, n):
    t = acc_zero(src)
    for i in range(n):
        t += ld(src, i)
    return t


@_rj
def max_n(src, n):
    m = ld(src, 0)
    for i in range(1, n):
        m = vmax(m, ld(src, i))
    return m


@_rj
def min_n(src, n):
    m = ld(src, 0)
    for i in range(1, n):
        m = vmin(m, ld(src, i))
    return m


@_rj
def first_index(src, n, m):
    """Smallest i < n with src[i] == m (NaN matches NaN); chunks are tested with a vectorisable
    count before being scanned."""
    nan = m != m
    ch = 64
    for b in range((n + ch - 1) // ch):
        lo = b * ch
        hi = min(n, lo + ch)
        hits = 0
        for i in range(lo, hi):
            v = ld(src, i)
            hits += (v == m) or (nan and v != v)
        if hits:
            for i in range(lo, hi):
                v = ld(src, i)
                if v == m or (nan and v != v):
                    return i
    return 0


@_rj
def _reduce_count_setup(ctx, api, dst, src, tmp, count, minmax, cal_index):
    check_count(ctx, api, "src", src, count)
    require_same(api, "shared_tmp_buffer", tmp, src)
    require_same(api, "src", src, dst)
    if count == 0:
        return 0
    need = tmp_need(src.itemsize, (count + 256 // src.itemsize - 1) // (256 // src.itemsize),
                    minmax, cal_index)
    check_tmp(ctx, api, tmp, need)
    check_dst(ctx, api, dst, 2 if cal_index else 1)
    check_index_range(api, src, count - 1, cal_index)
    return need


@_jit
def reduce_sum_count(ctx, dst, src, shared_tmp_buffer, count):
    """Mirrors `AscendC::ReduceSum` (count form): dst[0] = sum(src[:count])."""
    api = "reduce_sum"
    need = _reduce_count_setup(ctx, api, dst, src, shared_tmp_buffer, count, False, False)
    if count == 0:
        return
    total = sum_n(src, count)
    clobber_tmp(ctx, shared_tmp_buffer, need)
    st(dst, 0, total)
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_RSUM, src.itemsize, count, False)
    trace.tensor_access(ctx, _OP_RSUM, src, count * src.itemsize, 0)
    trace.tensor_access(ctx, _OP_RSUM, dst, 1 * dst.itemsize, 1)


@_jit
def reduce_max_count(ctx, dst, src, shared_tmp_buffer, count, cal_index):
    """Mirrors `AscendC::ReduceMax` (count form): dst[0] = max, dst[1] = index bits if
    cal_index."""
    api = "reduce_max"
    need = _reduce_count_setup(ctx, api, dst, src, shared_tmp_buffer, count, True, cal_index)
    if count == 0:
        return
    m = max_n(src, count)
    idx = first_index(src, count, m) if cal_index else 0
    clobber_tmp(ctx, shared_tmp_buffer, need)
    st(dst, 0, m)
    if cal_index:
        put_bits(dst, 1, idx)
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_RMAX, src.itemsize, count, False)
    trace.tensor_access(ctx, _OP_RMAX, src, count * src.itemsize, 0)
    trace.tensor_access(ctx, _OP_RMAX, dst, (2 if cal_index else 1) * dst.itemsize, 1)


@_jit
def reduce_min_count(ctx, dst, src, shared_tmp_buffer, count, cal_index):
    """Mirrors `AscendC::ReduceMin` (count form): dst[0] = min, dst[1] = index bits if
    cal_index."""
    api = "reduce_min"
    need = _reduce_count_setup(ctx, api, dst, src, shared_tmp_buffer, count, True, cal_index)
    if count == 0:
        return
    m = min_n(src, count)
    idx = first_index(src, count, m) if cal_index else 0
    clobber_tmp(ctx, shared_tmp_buffer, need)
    st(dst, 0, m)
    if cal_index:
        put_bits(dst, 1, idx)
    core.count(ctx, core.C_VEC_OPS, count)
    trace.vec(ctx, _OP_RMIN, src.itemsize, count, False)
    trace.tensor_access(ctx, _OP_RMIN, src, count * src.itemsize, 0)
    trace.tensor_access(ctx, _OP_RMIN, dst, (2 if cal_index else 1) * dst.itemsize, 1)


# ---- repeat forms ----------------------------------------------------------------------------

@_rj
def _reduce_rep_setup(ctx, api, dst, src, tmp, mask, repeat, srs, minmax, cal_index):
    """Checks; returns (m0, m1, need, src). repeat_time may exceed 255 (Ascend C allows int32).
    src reached past its end stays inside UB, as on the NPU (vecbase.reach_to)."""
    check_range(api, "repeat_time", repeat, 0, 2147483647)
    check_range(api, "src_rep_stride", srs, 0, 65535)
    require_same(api, "shared_tmp_buffer", tmp, src)
    require_same(api, "src", src, dst)
    eb = src.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    far = rep_far(repeat, m0, m1, 32 // eb, 1, srs)
    if far < 0:
        return m0, m1, 0, src
    src = reach_to(ctx, api, "src", src, far)
    need = tmp_need(eb, repeat, minmax, cal_index)
    check_tmp(ctx, api, tmp, need)
    check_dst(ctx, api, dst, 2 if cal_index else 1)
    check_index_range(api, src, far, cal_index)
    return m0, m1, need, src


@_rj
def _rep_minmax(src, m0, m1, repeat, srs, is_max):
    """(value, index) of the first extreme over the selected lanes of all repeats."""
    pb = 32 // src.itemsize
    best = ld(src, 0)
    bi = -1
    for r in range(repeat):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            k = r * srs * pb + j
            v = ld(src, k)
            if bi < 0 or best == best and (v != v or (v > best if is_max else v < best)):
                best = v
                bi = k
            j, w0, w1 = next_lane(w0, w1)
    return best, bi


@_jit
def reduce_sum_rep(ctx, dst, src, shared_tmp_buffer, mask, repeat_time, src_rep_stride):
    """Mirrors `AscendC::ReduceSum` (mask + repeat form): dst[0] = sum of the selected lanes."""
    api = "reduce_sum"
    m0, m1, need, src = _reduce_rep_setup(ctx, api, dst, src, shared_tmp_buffer, mask,
                                          repeat_time, src_rep_stride, False, False)
    if need == 0:
        return
    pb = 32 // src.itemsize
    t = acc_zero(src)
    for r in range(repeat_time):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            t += ld(src, r * src_rep_stride * pb + j)
            j, w0, w1 = next_lane(w0, w1)
    clobber_tmp(ctx, shared_tmp_buffer, need)
    st(dst, 0, t)
    core.count(ctx, core.C_VEC_OPS, repeat_time * lanes_on(m0, m1, 256 // src.itemsize))
    trace.vec(ctx, _OP_RSUM, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_RSUM, dst, dst.itemsize, 1)


@_rj
def _reduce_mm_rep(ctx, api, dst, src, tmp, mask, repeat, srs, cal_index, is_max):
    m0, m1, need, src = _reduce_rep_setup(ctx, api, dst, src, tmp, mask, repeat, srs, True,
                                          cal_index)
    if need == 0:
        return
    v, k = _rep_minmax(src, m0, m1, repeat, srs, is_max)
    clobber_tmp(ctx, tmp, need)
    st(dst, 0, v)
    if cal_index:
        put_bits(dst, 1, k)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, 256 // src.itemsize))


@_jit
def reduce_max_rep(ctx, dst, src, shared_tmp_buffer, mask, repeat_time, src_rep_stride,
                   cal_index):
    """Mirrors `AscendC::ReduceMax` (mask + repeat form)."""
    _reduce_mm_rep(ctx, "reduce_max", dst, src, shared_tmp_buffer, mask, repeat_time,
                   src_rep_stride, cal_index, True)
    trace.vec(ctx, _OP_RMAX, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_RMAX, dst, (2 if cal_index else 1) * dst.itemsize, 1)


@_jit
def reduce_min_rep(ctx, dst, src, shared_tmp_buffer, mask, repeat_time, src_rep_stride,
                   cal_index):
    """Mirrors `AscendC::ReduceMin` (mask + repeat form)."""
    _reduce_mm_rep(ctx, "reduce_min", dst, src, shared_tmp_buffer, mask, repeat_time,
                   src_rep_stride, cal_index, False)
    trace.vec(ctx, _OP_RMIN, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_RMIN, dst, (2 if cal_index else 1) * dst.itemsize, 1)


# ---- whole reduce: one result per repeat ---------------------------------------------------------

@_rj
def _whole_setup(ctx, api, dst, src, mask, repeat, drs, sbs, srs, unit, width):
    """Checks; returns (m0, m1, active, dst, src). `unit`: dst elements per dst_rep_stride step,
    `width`: dst elements written per repeat. dst and src reached past their ends stay inside UB,
    as on the NPU (vecbase.reach_to)."""
    check_range(api, "repeat_time", repeat, 0, 255)
    check_range(api, "dst_rep_stride", drs, 0, 65535)
    check_range(api, "src_blk_stride", sbs, 0, 65535)
    check_range(api, "src_rep_stride", srs, 0, 65535)
    require_same(api, "src", src, dst)
    eb = src.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    far = rep_far(repeat, m0, m1, 32 // eb, sbs, srs)
    if far < 0:
        return m0, m1, False, dst, src
    src = reach_to(ctx, api, "src", src, far)
    dst = reach_to(ctx, api, "dst", dst, (repeat - 1) * drs * unit + width - 1)
    return m0, m1, True, dst, src


@_rj
def _sums_by_four(dst, src, repeat, n, drs, step):
    """whole_reduce_sum of contiguous runs, four repeats at a time (four independent sums, each
    in the walk's order: the same bits); dst and src are apart. Returns the repeats done."""
    done = repeat // 4 * 4
    for r in range(0, done, 4):
        i0 = np.uint64(r * step)
        i1 = np.uint64((r + 1) * step)
        i2 = np.uint64((r + 2) * step)
        i3 = np.uint64((r + 3) * step)
        t0 = acc_zero(src)
        t1 = acc_zero(src)
        t2 = acc_zero(src)
        t3 = acc_zero(src)
        for q in range(np.uint64(n)):
            t0 += ld(src, i0 + q)
            t1 += ld(src, i1 + q)
            t2 += ld(src, i2 + q)
            t3 += ld(src, i3 + q)
        st(dst, r * drs, t0)
        st(dst, (r + 1) * drs, t1)
        st(dst, (r + 2) * drs, t2)
        st(dst, (r + 3) * drs, t3)
    return done


@_jit
def whole_reduce_sum(ctx, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, is_set_mask):
    """Mirrors `AscendC::WholeReduceSum`: dst[r * dst_rep_stride] = sum of repeat r's lanes."""
    ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)   # no refcounting (cubegemm)
    api = "whole_reduce_sum"
    m0, m1, active, dst, src = _whole_setup(ctx, api, dst, src, mask, repeat_time,
                                            dst_rep_stride, src_blk_stride, src_rep_stride, 1,
                                            1)
    if not active:
        return
    pb = 32 // src.itemsize
    n_on = prefix_lanes(m0, m1)
    kb = per_block(src)
    first = 0
    if (n_on > 0 and src_blk_stride == 1 and vecable(src) and not spans_overlap(
            dst, (repeat_time - 1) * dst_rep_stride + 1, src,
            (repeat_time - 1) * src_rep_stride * kb + n_on)):
        first = _sums_by_four(dst, src, repeat_time, n_on, dst_rep_stride, src_rep_stride * kb)
    for r in range(first, repeat_time):
        t = acc_zero(src)
        if n_on >= 0:   # lanes 0..n_on-1, block by block
            for blk in range((n_on + kb - 1) // kb):
                i0 = (r * src_rep_stride + blk * src_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        t += ld(src, i0 + q)
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        t += ld(src, i0 + q)
            st(dst, r * dst_rep_stride, t)
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            t += ld(src, rep_index(r, j, pb, src_blk_stride, src_rep_stride))
            j, w0, w1 = next_lane(w0, w1)
        st(dst, r * dst_rep_stride, t)
    core.count(ctx, core.C_VEC_OPS, repeat_time * lanes_on(m0, m1, 256 // src.itemsize))
    trace.vec(ctx, _OP_WSUM, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_WSUM, dst, dst.size * dst.itemsize, 1)   # (its reach)


@_rj
def _run_extreme(src, i0, n, is_max):
    """The value-only whole_reduce result of the run src[i0:i0+n] (n >= 1) as `_whole_mm`'s walk
    gives it: the first NaN, else the first element equal to the extreme (of +0/-0 ties the
    first). One vectorised pass finds the extreme and counts NaNs; a NaN or a zero extreme (the
    only values whose bits can differ among equals) rescans."""
    u = np.uint64(i0)
    m = ld(src, u)
    nans = 0
    for q in range(np.uint64(n)):
        v = ld(src, u + q)
        m = vmax(m, v) if is_max else vmin(m, v)
        nans += v != v
    if nans == 0 and m != 0:
        return m
    for q in range(np.uint64(n)):
        v = ld(src, u + q)
        if (nans != 0 and v != v) or (nans == 0 and v == m):
            return v
    return m


@_rj
def _whole_mm(ctx, api, dst, src, mask, repeat, drs, sbs, srs, order, is_max):
    check_range(api, "order", order, 0, 3)
    eb = dst.itemsize
    if order == ORDER_ONLY_INDEX and eb not in (2, 4):
        fault("{}: dst dtype must be 16- or 32-bit for ORDER_ONLY_INDEX (a uint32 "
              "index per repeat), got {}-bit elements", api, eb * 8)
        raise KernelError(FAULT)
    if order == ORDER_ONLY_VALUE:
        unit = 1
        width = 1
    elif order == ORDER_ONLY_INDEX:
        unit = 4 // eb
        width = unit
    else:
        unit = 2
        width = 2
    m0, m1, active, dst, src = _whole_setup(ctx, api, dst, src, mask, repeat, drs, sbs, srs,
                                            unit, width)
    if not active:
        return
    walk = repeat
    pb = 32 // eb
    n_on = prefix_lanes(m0, m1)
    kb = per_block(src)
    if n_on > 0 and order == ORDER_ONLY_VALUE and sbs == 1 and vecable(src):
        for r in range(repeat):     # each repeat one contiguous run: vectorised
            st(dst, r * drs, _run_extreme(src, r * srs * kb, n_on, is_max))
        walk = 0                    # done
    for r in range(walk):
        best = ld(src, 0)
        bj = -1
        if n_on >= 0 and order == ORDER_ONLY_VALUE:  # no index: a plain extremum, NaN wins
            best = ld(src, r * srs * kb)
            first_nan = best
            nan = False
            for blk in range((n_on + kb - 1) // kb):
                i0 = (r * srs + blk * sbs) * kb
                for q in range(min(kb, n_on - blk * kb)):
                    v = ld(src, i0 + q)
                    if v != v:
                        if not nan:
                            first_nan = v
                        nan = True
                    elif v > best if is_max else v < best:
                        best = v
            if nan:
                best = first_nan
        elif n_on >= 0:   # lanes 0..n_on-1, block by block
            for blk in range((n_on + kb - 1) // kb):
                i0 = (r * srs + blk * sbs) * kb
                for q in range(min(kb, n_on - blk * kb)):
                    v = ld(src, i0 + q)
                    if bj < 0 or best == best and (v != v or (v > best if is_max else v < best)):
                        best = v
                        bj = blk * kb + q
        else:
            j, w0, w1 = next_lane(m0, m1)
            while j >= 0:
                v = ld(src, rep_index(r, j, pb, sbs, srs))
                if bj < 0 or best == best and (v != v or (v > best if is_max else v < best)):
                    best = v
                    bj = j
                j, w0, w1 = next_lane(w0, w1)
        base = r * drs * unit
        if order == ORDER_VALUE_INDEX:
            st(dst, base, best)
            put_bits(dst, base + 1, bj)
        elif order == ORDER_INDEX_VALUE:
            put_bits(dst, base, bj)
            st(dst, base + 1, best)
        elif order == ORDER_ONLY_VALUE:
            st(dst, base, best)
        else:  # a uint32 index: one 32-bit slot, or low/high halves of two 16-bit slots
            put_bits(dst, base, bj)
            if unit == 2:
                put_bits(dst, base + 1, 0)
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, 256 // eb))


@_jit
def whole_reduce_max(ctx, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order, is_set_mask):
    """Mirrors `AscendC::WholeReduceMax`: per repeat the max and/or its lane index (ReduceOrder
    `order`)."""
    ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)   # no refcounting (cubegemm)
    _whole_mm(ctx, "whole_reduce_max", dst, src, mask, repeat_time, dst_rep_stride,
              src_blk_stride, src_rep_stride, order, True)
    trace.vec(ctx, _OP_WMAX, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_WMAX, dst, dst.size * dst.itemsize, 1)   # (its reach)


@_jit
def whole_reduce_min(ctx, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order, is_set_mask):
    """Mirrors `AscendC::WholeReduceMin`: per repeat the min and/or its lane index."""
    ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)   # no refcounting (cubegemm)
    _whole_mm(ctx, "whole_reduce_min", dst, src, mask, repeat_time, dst_rep_stride,
              src_blk_stride, src_rep_stride, order, False)
    trace.vec(ctx, _OP_WMIN, src.itemsize, repeat_time, True)
    trace.tensor_access(ctx, _OP_WMIN, dst, dst.size * dst.itemsize, 1)   # (its reach)
