"""Generic loops of the vector primitives: count and repeat forms of binary, unary and
tensor-scalar ops, each taking its element operation as a first-class (IR-inlined) function."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from .. import core
from ..dtypes import ld, st
from .borrow import borrowed
from .vecbase import *  # noqa: F403  (the checks and mask helpers)
from ..state import STATE
from ..visibility import in_flight

# ---- generic loops ---------------------------------------------------------------------------

@inline
def _bin_loop(dst, a, b, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i), ld(b, i)))


@inline
def _un_loop(dst, a, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i)))


@inline
def _sc_loop(dst, a, s, n, op):
    for i in range(n):
        st(dst, i, op(ld(a, i), s))


@inline
def binary_count(ctx, api, dst, a, b, n, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    b = borrowed(b)
    # sizes compared inline (a call per check costs ~50 ns of argument passing and reference
    # counting per tile); the failing check is found and reported out of line, as before
    if n < 0 or n > dst.size or n > a.size or n > b.size:
        check_count(ctx, api, "dst", dst, n)
        check_count(ctx, api, "src0", a, n)
        check_count(ctx, api, "src1", b, n)
    if in_flight(ctx):
        vector_reads(ctx, api, "src0", a, n)
        vector_reads(ctx, api, "src1", b, n)
        vector_reads(ctx, api, "dst", dst, n)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    # dst is src0 (in place): pass one array for both so LLVM sees no aliasing and vectorises
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _bin_loop(a, a, b, n, op)
    else:
        _bin_loop(dst, a, b, n, op)
    ctx[STATE][0].counters[core.C_VEC_OPS] += n   # core.count, inline


# ---- contiguous fast path of the binary repeat form ---------------------------------------------
# A prefix mask (lanes 0..n-1) with dst and src0 block strides 1 makes each repeat's lanes one
# contiguous run, so a repeat is a plain loop over n elements in the lane walk's order: LLVM
# vectorises it (with its own runtime overlap test, so overlapping operands keep the walk's
# result). Passing one array for dst and src0 when they are the same run lets it skip that test
# (an exact overlap would otherwise fail it and run scalar).

@inline
def _runs(dst, a, b, repeat, n, drs, ars, brs, kb, op):
    for r in range(repeat):
        i0 = np.uint64(r * drs * kb)
        ia = np.uint64(r * ars * kb)
        ib = np.uint64(r * brs * kb)
        for q in range(np.uint64(n)):
            st(dst, i0 + q, op(ld(a, ia + q), ld(b, ib + q)))


@inline
def _runs_in_place(a, b, repeat, n, ars, brs, kb, op):
    for r in range(repeat):
        ia = np.uint64(r * ars * kb)
        ib = np.uint64(r * brs * kb)
        for q in range(np.uint64(n)):
            st(a, ia + q, op(ld(a, ia + q), ld(b, ib + q)))


@inline
def _runs_block_bcast(dst, a, b, repeat, n, drs, ars, brs, kb, op):
    """src1 block stride 0: repeat r reads the same kb src1 elements in every block. When they
    are one value (bit for bit: brcb's output), the repeat is a run against that scalar, read
    first: the caller made sure no dst write of the call can change src1. Otherwise the repeat
    is walked block by block as before."""
    bits = uint_view(b)
    in_place = dst.ctypes.data == a.ctypes.data and drs == ars
    for r in range(repeat):
        ib = r * brs * kb
        one = True
        for q in range(1, kb):
            one &= bits[ib + q] == bits[ib]
        i0 = np.uint64(r * drs * kb)
        ia = np.uint64(r * ars * kb)
        s = ld(b, ib)
        if one and in_place:
            for q in range(np.uint64(n)):
                st(a, ia + q, op(ld(a, ia + q), s))
        elif one:
            for q in range(np.uint64(n)):
                st(dst, i0 + q, op(ld(a, ia + q), s))
        else:
            d0 = r * drs * kb
            a0 = r * ars * kb
            for blk in range((n + kb - 1) // kb):
                for q in range(min(kb, n - blk * kb)):
                    st(dst, d0 + blk * kb + q, op(ld(a, a0 + blk * kb + q), ld(b, ib + q)))


def uint_view(a):
    """Tensor a's elements as same-width unsigned ints (their bits)."""
    raise NotImplementedError


@overload(uint_view)
def _ov_uint_view(a):
    ut = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[elem_bytes_of(a)]
    return lambda a: a.view(ut)


def binary_rep_runs(dst, a, b, repeat, n_on, p, kb, op):
    """The contiguous fast path (see above) of binary_rep when it applies (returns True)."""
    raise NotImplementedError


def _binary_rep_runs(dst, a, b, repeat, n_on, p, kb, op):
    if (n_on <= 0 or repeat <= 0 or p.dst_blk_stride != 1 or p.src0_blk_stride != 1
            or (p.src1_blk_stride != 1 and p.src1_blk_stride != 0) or n_on > 8 * kb):
        return False
    drs, ars, brs = p.dst_rep_stride, p.src0_rep_stride, p.src1_rep_stride
    if p.src1_blk_stride == 0:
        d_span = (repeat - 1) * drs * kb + n_on
        if spans_overlap(dst, d_span, b, (repeat - 1) * brs * kb + min(n_on, kb)):
            return False
        _runs_block_bcast(dst, a, b, repeat, n_on, drs, ars, brs, kb, op)
    elif dst.ctypes.data == a.ctypes.data and drs == ars:
        _runs_in_place(a, b, repeat, n_on, ars, brs, kb, op)
    else:
        _runs(dst, a, b, repeat, n_on, drs, ars, brs, kb, op)
    return True


@overload(binary_rep_runs, inline="always")
def _ov_binary_rep_runs(dst, a, b, repeat, n_on, p, kb, op):
    if isinstance(dst.dtype, types.Record):     # float16/bfloat16 storage: the block walk
        return lambda dst, a, b, repeat, n_on, p, kb, op: False
    return _binary_rep_runs


@inline
def binary_rep(ctx, api, dst, a, b, mask, repeat, p, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    b = borrowed(b)
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    check_bin_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    # past an operand's end but inside UB: runs as on the NPU (vecbase.ub_reach)
    dst = ub_reach(ctx, api, "dst", dst, repeat, m0, m1, pb, p.dst_blk_stride, p.dst_rep_stride)
    a = ub_reach(ctx, api, "src0", a, repeat, m0, m1, pb, p.src0_blk_stride, p.src0_rep_stride)
    b = ub_reach(ctx, api, "src1", b, repeat, m0, m1, pb, p.src1_blk_stride, p.src1_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    done = binary_rep_runs(dst, a, b, repeat, n_on, p, kb, op)
    for r in range(0 if done else repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src0_rep_stride + blk * p.src0_blk_stride) * kb
                ib = (r * p.src1_rep_stride + blk * p.src1_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        st(dst, idst + q, op(ld(a, ia + q), ld(b, ib + q)))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        st(dst, idst + q, op(ld(a, ia + q), ld(b, ib + q)))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            va = ld(a, rep_index(r, j, pb, p.src0_blk_stride, p.src0_rep_stride))
            vb = ld(b, rep_index(r, j, pb, p.src1_blk_stride, p.src1_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(va, vb))
            j, w0, w1 = next_lane(w0, w1)
    ctx[STATE][0].counters[core.C_VEC_OPS] += repeat * lanes_on(m0, m1, lanes)


@inline
def unary_count(ctx, api, dst, a, n, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    if n < 0 or n > dst.size or n > a.size:     # inline, as binary_count
        check_count(ctx, api, "dst", dst, n)
        check_count(ctx, api, "src", a, n)
    if in_flight(ctx):
        vector_reads(ctx, api, "src", a, n)
        vector_reads(ctx, api, "dst", dst, n)
    require_same(api, "src", a, dst)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _un_loop(a, a, n, op)
    else:
        _un_loop(dst, a, n, op)
    ctx[STATE][0].counters[core.C_VEC_OPS] += n


@inline
def unary_rep(ctx, api, dst, a, mask, repeat, p, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    dst = ub_reach(ctx, api, "dst", dst, repeat, m0, m1, pb, p.dst_blk_stride, p.dst_rep_stride)
    a = ub_reach(ctx, api, "src", a, repeat, m0, m1, pb, p.src_blk_stride, p.src_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src_rep_stride + blk * p.src_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(a, rep_index(r, j, pb, p.src_blk_stride, p.src_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(v))
            j, w0, w1 = next_lane(w0, w1)
    ctx[STATE][0].counters[core.C_VEC_OPS] += repeat * lanes_on(m0, m1, lanes)


@inline
def scalar_count(ctx, api, dst, a, scalar, n, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    if n < 0 or n > dst.size or n > a.size:     # inline, as binary_count
        check_count(ctx, api, "dst", dst, n)
        check_count(ctx, api, "src", a, n)
    if in_flight(ctx):
        vector_reads(ctx, api, "src", a, n)
        vector_reads(ctx, api, "dst", dst, n)
    require_same(api, "src", a, dst)
    s = as_elem(a, scalar)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _sc_loop(a, a, s, n, op)
    else:
        _sc_loop(dst, a, s, n, op)
    ctx[STATE][0].counters[core.C_VEC_OPS] += n


@inline
def scalar_rep(ctx, api, dst, a, scalar, mask, repeat, p, op):
    ctx, dst, a = borrowed(ctx), borrowed(dst), borrowed(a)     # no refcounting (cubegemm)
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    s = as_elem(a, scalar)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    dst = ub_reach(ctx, api, "dst", dst, repeat, m0, m1, pb, p.dst_blk_stride, p.dst_rep_stride)
    a = ub_reach(ctx, api, "src", a, repeat, m0, m1, pb, p.src_blk_stride, p.src_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
        if n_on >= 0:   # lanes 0..n_on-1: block by block, same order as the lane walk
            for blk in range((n_on + kb - 1) // kb):
                ia = (r * p.src_rep_stride + blk * p.src_blk_stride) * kb
                idst = (r * p.dst_rep_stride + blk * p.dst_blk_stride) * kb
                if n_on == 8 * kb:
                    for q in range(kb):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v, s))
                else:
                    for q in range(min(kb, n_on - blk * kb)):
                        v = ld(a, ia + q)
                        st(dst, idst + q, op(v, s))
            continue
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            v = ld(a, rep_index(r, j, pb, p.src_blk_stride, p.src_rep_stride))
            st(dst, rep_index(r, j, pb, p.dst_blk_stride, p.dst_rep_stride), op(v, s))
            j, w0, w1 = next_lane(w0, w1)
    ctx[STATE][0].counters[core.C_VEC_OPS] += repeat * lanes_on(m0, m1, lanes)


