"""`bilinear_interpolation`: Ascend C's BilinearInterpolation (ISASI), float16.

Ascend C basic API "BilinearInterpolation"; pyasc: python/asc/language/basic/vec_binary.py
`bilinear_interpolation(dst, src0, src0_offset, src1, mask, h_repeat, repeat_mode,
dst_blk_stride, v_r_offset, v_repeat, shared_tmp_buffer)`. Per the docs: vertical iteration v
runs h_repeat horizontal iterations; horizontal iteration t = v * h_repeat + h reads 8 offsets
src0_offset[t*8 .. t*8+7] (bytes into src0, each the start of a 32-byte block), multiplies block
b by src1[t] (repeat_mode False) or src1[t*8 + b] (True), and accumulates block by block into
dst's 8 blocks at v * v_r_offset elements + b * dst_blk_stride blocks (the dst address stays the
same across the horizontal iterations; the first one writes, the next ones add, which is what
makes a NaN-filled fresh dst come out right on hardware too). Lanes whose mask bit is off keep
dst. Arithmetic: float16 results, each product and each sum rounded to float16 (computed in
float32). The shared tmp buffer must be a UB tensor; its use is not modelled.
"""
from __future__ import annotations

from .. import core
from ..core import prim, level_of
from ..dtypes import ld, st
from ..errors import FAULT, fault, KernelError
from .. import trace
from .vecbase import as_elem, check_range, lane_on, vmask
from ..visibility import vector_reads

__all__ = ["bilinear_interpolation"]

_OP_BILINEAR = trace.op("bilinear_interpolation")
_API = "bilinear_interpolation"
_NAMES = ("dst", "src0", "src1", "src0_offset", "shared_tmp_buffer")


@prim
def _fail(what, a, b):
    if what == 0:
        fault("bilinear_interpolation: dst, src0 and src1 must be float16 and src0_offset "
              "uint32, got element sizes dst/src0/src1={} src0_offset={}", a, b)
        raise KernelError(FAULT)
    elif what == 1:
        fault("bilinear_interpolation: src0_offset[{}] must be a 32-byte aligned byte offset of "
              "a block inside src0, got {}", a, b)
        raise KernelError(FAULT)
    elif what == 2:
        fault("bilinear_interpolation: {} must hold every element the iterations touch, got "
              "index={}", "dst" if a == 0 else ("src0_offset" if a == 1 else "src1"), b)
        raise KernelError(FAULT)
    else:
        fault("bilinear_interpolation: {} must be a local tensor in UB (VECIN, VECCALC, VECOUT), "
              "got a tensor in {:level}", _NAMES[a], b)
        raise KernelError(FAULT)


@prim
def bilinear_interpolation(ctx, dst, src0, src0_offset, src1, mask, h_repeat, repeat_mode,
                           dst_blk_stride, v_r_offset, v_repeat, shared_tmp_buffer):
    if dst.itemsize != 2 or src0.itemsize != 2 or src1.itemsize != 2 or \
            src0_offset.itemsize != 4:
        _fail(0, dst.itemsize * 100 + src0.itemsize * 10 + src1.itemsize, src0_offset.itemsize)
    # written out: a tuple of differently typed arrays cannot be iterated in njit code
    if level_of(ctx, dst) != core.UB:
        _fail(3, 0, level_of(ctx, dst))
    if level_of(ctx, src0) != core.UB:
        _fail(3, 1, level_of(ctx, src0))
    if level_of(ctx, src1) != core.UB:
        _fail(3, 2, level_of(ctx, src1))
    if level_of(ctx, src0_offset) != core.UB:
        _fail(3, 3, level_of(ctx, src0_offset))
    if level_of(ctx, shared_tmp_buffer) != core.UB:
        _fail(3, 4, level_of(ctx, shared_tmp_buffer))
    check_range(_API, "h_repeat", h_repeat, 0, 255)
    check_range(_API, "v_repeat", v_repeat, 0, 255)
    check_range(_API, "dst_blk_stride", dst_blk_stride, 0, 65535)
    check_range(_API, "v_r_offset", v_r_offset, 0, 65535)
    m0, m1 = vmask(ctx, _API, mask, 2)
    iters = h_repeat * v_repeat
    if iters == 0:
        return
    if iters * 8 > src0_offset.size:
        _fail(2, 1, iters * 8 - 1)
    need1 = iters * 8 if repeat_mode else iters
    if need1 > src1.size:
        _fail(2, 2, need1 - 1)
    far = (v_repeat - 1) * v_r_offset + 7 * dst_blk_stride * 16 + 15
    if far >= dst.size:
        _fail(2, 0, far)
    vector_reads(ctx, _API, "src0_offset", src0_offset, iters * 8 * 4)   # (visibility.py)
    vector_reads(ctx, _API, "src1", src1, need1 * 2)
    vector_reads(ctx, _API, "src0", src0, src0.size * 2)
    for k in range(iters * 8):
        off = src0_offset[k]
        if off % 32 != 0 or off // 2 + 16 > src0.size:
            _fail(1, k, off)
    for v in range(v_repeat):
        for h in range(h_repeat):
            t = v * h_repeat + h
            for b in range(8):
                base0 = src0_offset[t * 8 + b] // 2
                s = ld(src1, t * 8 + b) if repeat_mode else ld(src1, t)
                d0 = v * v_r_offset + b * dst_blk_stride * 16
                for e in range(16):
                    if not lane_on(m0, m1, b * 16 + e):
                        continue
                    p = as_elem(dst, ld(src0, base0 + e) * s)
                    st(dst, d0 + e, p if h == 0 else ld(dst, d0 + e) + p)
    core.count(ctx, core.C_VEC_OPS, iters * 128 * 2)
    trace.vec(ctx, _OP_BILINEAR, 2, iters, True)
