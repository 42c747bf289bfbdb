"""UB -> UB rearrangements with their own parameter structs: `copy` (CopyRepeatParams) and the
extended `transpose` (TransposeParamsExt).

`copy` mirrors `AscendC::Copy(dst, src, mask, repeatTime, CopyRepeatParams)` (Ascend C basic API,
"Copy"; pyasc: python/asc/language/basic/data_copy.py `copy`, param class `CopyRepeatParams` in
python/asc/language/core/types.py with four uint16 fields dst_stride, src_stride,
dst_repeat_size, src_repeat_size): a vector-unit copy between UB tensors of one 16- or 32-bit
dtype, in the repeat form of the vector ops: `repeat_time` repeats of 256 bytes, lanes picked by
`mask`, lane j of repeat r at block `r * repeat_size + (j // pb) * stride` (pb elements per 32 B
block). The strides are uint16 (UnaryRepeatParams' repeat strides are uint8), checked as such.
Repeats may reach past a tensor's end while they stay inside UB, as on the NPU, whose only bound
is UB's capacity (vecbase.ub_reach; checked mode warns; pyasc's test_copy case (1,) does this).

`transpose_ext` mirrors the enhanced `AscendC::Transpose(dst, src, sharedTmpBuffer,
TransposeParamsExt)` (Ascend C basic API "Transpose"; pyasc: python/asc/language/basic/
transpose.py, TransposeParamsExt in core/types.py: n/c/h/w sizes and a TransposeType):
TRANSPOSE_NCHW2NHWC and TRANSPOSE_NHWC2NCHW convert between [N,C,H,W] and [N,H,W,C] for 1-, 2- and
4-byte elements (dst must not be src: the docs forbid reuse for these types);
TRANSPOSE_ND2ND_B16 transposes one 16 x 16 block of uint16 (the only type Atlas A2 supports
there; dst may be src). The
other TransposeType values are reserved in Ascend C: refused. The shared tmp buffer must be a UB
tensor; its contents are not modelled (the result is computed directly) and its size is not
checked (the docs give a size for some products and none for others).
"""
from __future__ import annotations

from .. import core
from ..core import prim, check_local, level_of
from ..errors import FAULT, fault, KernelError
from .. import trace
from .movecore import pair_info
from ..visibility import vector_reads
from .vecbase import check_range, lanes_on, next_lane, pb_of, rep_index, ub_reach, vmask

__all__ = ["copy_rep", "transpose_ext"]

_OP_COPY, _OP_TRANSPOSE_EXT = trace.op("copy"), trace.op("transpose")
# TransposeType values (params.TransposeType; njit code reads plain ints)
_ND2ND_B16, _NCHW2NHWC, _NHWC2NCHW = 10, 11, 12


@prim
def _copy_fail_dtype(dsz, ssz, same):
    fault("copy: dst and src must have one 16- or 32-bit dtype (int16, uint16, float16, "
          "bfloat16, int32, uint32, float32), got element sizes dst={} src={} same_dtype={}",
          dsz, ssz, same)
    raise KernelError(FAULT)


@prim
def _copy_fail_level(ctx, what, t):
    fault("copy: {} must be a local tensor in UB (VECIN, VECCALC, VECOUT), got a tensor in "
          "{:level}", what, level_of(ctx, t))
    raise KernelError(FAULT)


@prim
def copy_rep(ctx, dst, src, mask, repeat_time, repeat_params, is_set_mask):
    """dst lanes = src lanes over `repeat_time` repeats (see the module doc); masked-off lanes
    keep dst. is_set_mask=False is accepted; the mask argument is still used (no mask register,
    as in the other repeat forms)."""
    api = "copy"
    same = pair_info(dst, src)[0]
    if not same or (dst.itemsize != 2 and dst.itemsize != 4):
        _copy_fail_dtype(dst.itemsize, src.itemsize, same)
    if level_of(ctx, dst) != core.UB:
        _copy_fail_level(ctx, "dst", dst)
    if level_of(ctx, src) != core.UB:
        _copy_fail_level(ctx, "src", src)
    check_range(api, "repeat_time", repeat_time, 0, 255)
    p = repeat_params
    check_range(api, "repeat_params.dst_stride", p.dst_stride, 0, 65535)
    check_range(api, "repeat_params.src_stride", p.src_stride, 0, 65535)
    check_range(api, "repeat_params.dst_repeat_size", p.dst_repeat_size, 0, 65535)
    check_range(api, "repeat_params.src_repeat_size", p.src_repeat_size, 0, 65535)
    eb = dst.itemsize
    m0, m1 = vmask(ctx, api, mask, eb)
    lanes = 256 // eb
    pb = pb_of(dst)
    # past a tensor's end but inside UB: runs as on the NPU (vecbase.ub_reach)
    d = ub_reach(ctx, api, "dst", dst, repeat_time, m0, m1, pb, p.dst_stride, p.dst_repeat_size)
    s = ub_reach(ctx, api, "src", src, repeat_time, m0, m1, pb, p.src_stride, p.src_repeat_size)
    vector_reads(ctx, api, "src", s, s.size * s.itemsize)
    for r in range(repeat_time):
        j, w0, w1 = next_lane(m0, m1)
        while j >= 0:
            d[rep_index(r, j, pb, p.dst_stride, p.dst_repeat_size)] = \
                s[rep_index(r, j, pb, p.src_stride, p.src_repeat_size)]
            j, w0, w1 = next_lane(w0, w1)
    core.count(ctx, core.C_VEC_OPS, repeat_time * lanes_on(m0, m1, lanes))
    trace.vec(ctx, _OP_COPY, eb, repeat_time, True)


@prim
def _ext_fail(what, a, b):
    if what == 0:
        fault("transpose: params.transpose_type must be TRANSPOSE_ND2ND_B16, "
              "TRANSPOSE_NCHW2NHWC or TRANSPOSE_NHWC2NCHW (the others are reserved in Ascend C), "
              "got transpose_type={}", a)
        raise KernelError(FAULT)
    elif what == 1:
        fault("transpose: dst and src must have one dtype, got element sizes dst={} src={}",
              a, b)
        raise KernelError(FAULT)
    elif what == 2:
        fault("transpose: TRANSPOSE_ND2ND_B16 takes uint16 on Atlas A2 (use the 2-argument "
              "transpose for int16/float16), got a dtype of element size {} that is not uint16",
              a)
        raise KernelError(FAULT)
    else:
        fault("transpose: dst must not be src for TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW "
              "(Ascend C forbids reuse), got the same tensor at element offset {}", a)
        raise KernelError(FAULT)


@prim
def transpose_ext(ctx, dst, src, shared_tmp_buffer, params):
    """The enhanced transpose (see the module doc)."""
    api = "transpose"
    kind = params.transpose_type + 0      # + 0: a plain int (an IntEnum member from Python)
    if kind != _ND2ND_B16 and kind != _NCHW2NHWC and kind != _NHWC2NCHW:
        _ext_fail(0, kind, 0)
    same, dname = pair_info(dst, src)[:2]
    if not same:
        _ext_fail(1, dst.itemsize, src.itemsize)
    for what, t in (("dst", dst), ("src", src)):
        if level_of(ctx, t) != core.UB:
            _copy_fail_level(ctx, what, t)
    if level_of(ctx, shared_tmp_buffer) != core.UB:
        _copy_fail_level(ctx, "shared_tmp_buffer", shared_tmp_buffer)
    if kind == _ND2ND_B16:
        if dname != "uint16":          # Ascend C docs, Transpose: A2 supports uint16_t here
            _ext_fail(2, dst.itemsize, 0)
        check_local(ctx, api, "dst", dst, 256)
        check_local(ctx, api, "src", src, 256)
        vector_reads(ctx, api, "src", src, 512)
        block = src[:256].copy()
        for i in range(16):
            for j in range(16):
                dst[j * 16 + i] = block[i * 16 + j]
        core.count(ctx, core.C_VEC_OPS, 256)
        trace.vec(ctx, _OP_TRANSPOSE_EXT, 2, 1, True)
        trace.tensor_access(ctx, _OP_TRANSPOSE_EXT, src, 512, 0)   # (the sanitizer's records)
        trace.tensor_access(ctx, _OP_TRANSPOSE_EXT, dst, 512, 1)
        return
    n, c, h, w = params.n_size, params.c_size, params.h_size, params.w_size
    check_range(api, "params.n_size", n, 0, 65535)
    check_range(api, "params.c_size", c, 0, 65535)
    check_range(api, "params.h_size", h, 0, 65535)
    check_range(api, "params.w_size", w, 0, 65535)
    total = n * c * h * w
    check_local(ctx, api, "dst", dst, total)
    check_local(ctx, api, "src", src, total)
    vector_reads(ctx, api, "src", src, total * src.itemsize)
    if dst.ctypes.data == src.ctypes.data:
        _ext_fail(3, 0, 0)
    hw = h * w
    for b in range(n):
        base = b * c * hw
        for ch in range(c):
            for p in range(hw):
                if kind == _NCHW2NHWC:
                    dst[base + p * c + ch] = src[base + ch * hw + p]
                else:
                    dst[base + ch * hw + p] = src[base + p * c + ch]
    core.count(ctx, core.C_VEC_OPS, total)
    trace.vec(ctx, _OP_TRANSPOSE_EXT, dst.itemsize, (total * dst.itemsize + 255) // 256, True)
    trace.tensor_access(ctx, _OP_TRANSPOSE_EXT, src, total * src.itemsize, 0)
    trace.tensor_access(ctx, _OP_TRANSPOSE_EXT, dst, total * dst.itemsize, 1)
