"""Generic loops of the vector primitives: count and repeat forms of binary, unary and
tensor-scalar ops, each taking its element operation as a first-class (IR-inlined) function."""
from __future__ import annotations

from .. import core
from ..dtypes import ld, st
from .vecbase import *  # noqa: F403  (the checks and mask helpers)

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
    # sizes compared inline (a call per check costs ~50 ns of argument passing and reference
    # counting per tile); the failing check is found and reported out of line, as before
    if n < 0 or n > dst.size or n > a.size or n > b.size:
        check_count(ctx, api, "dst", dst, n)
        check_count(ctx, api, "src0", a, n)
        check_count(ctx, api, "src1", b, n)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    # dst is src0 (in place): pass one array for both so LLVM sees no aliasing and vectorises
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _bin_loop(a, a, b, n, op)
    else:
        _bin_loop(dst, a, b, n, op)
    ctx[2][0].counters[core.C_VEC_OPS] += n   # core.count, inline


@inline
def binary_rep(ctx, api, dst, a, b, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src0", a, dst)
    require_same(api, "src1", b, dst)
    check_bin_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src0", a, repeat, m0, m1, lanes, pb, p.src0_blk_stride,
                 p.src0_rep_stride)
    check_extent(api, "src1", b, repeat, m0, m1, lanes, pb, p.src1_blk_stride,
                 p.src1_rep_stride)
    n_on = prefix_lanes(m0, m1)
    kb = per_block(dst)
    for r in range(repeat):
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
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


@inline
def unary_count(ctx, api, dst, a, n, op):
    check_count(ctx, api, "dst", dst, n)
    check_count(ctx, api, "src", a, n)
    require_same(api, "src", a, dst)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _un_loop(a, a, n, op)
    else:
        _un_loop(dst, a, n, op)
    core.count(ctx, core.C_VEC_OPS, n)


@inline
def unary_rep(ctx, api, dst, a, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src", a, repeat, m0, m1, lanes, pb, p.src_blk_stride, p.src_rep_stride)
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
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


@inline
def scalar_count(ctx, api, dst, a, scalar, n, op):
    check_count(ctx, api, "dst", dst, n)
    check_count(ctx, api, "src", a, n)
    require_same(api, "src", a, dst)
    s = as_elem(a, scalar)
    if vecable(dst) and dst.ctypes.data == a.ctypes.data:
        _sc_loop(a, a, s, n, op)
    else:
        _sc_loop(dst, a, s, n, op)
    core.count(ctx, core.C_VEC_OPS, n)


@inline
def scalar_rep(ctx, api, dst, a, scalar, mask, repeat, p, op):
    check_range(api, "repeat_times", repeat, 0, 255)
    require_same(api, "src", a, dst)
    check_un_params(api, p)
    s = as_elem(a, scalar)
    eb = dst.itemsize
    m0, m1 = vmask(api, mask, eb)
    lanes = 256 // eb
    pb = 32 // eb
    check_extent(api, "dst", dst, repeat, m0, m1, lanes, pb, p.dst_blk_stride, p.dst_rep_stride)
    check_extent(api, "src", a, repeat, m0, m1, lanes, pb, p.src_blk_stride, p.src_rep_stride)
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
    core.count(ctx, core.C_VEC_OPS, repeat * lanes_on(m0, m1, lanes))


