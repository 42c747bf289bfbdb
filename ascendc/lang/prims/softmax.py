"""asc.adv.softmax: Ascend C's SoftMax (ND format) on the vector unit, as CANN implements it for
910B (highlevel_api lib/activation/softmax.h -> impl/activation/softmax/softmax_base_impl.h,
membase/v220/softmax_impl.h, common/softmax_impl/softmax_generic_nd_impl.h,
softmax_common/softmax_tiling_func.h). Not a surface row: asc.adv calls it (ascendc/adv/softmax.py).

src is read as [m, k] from its ShapeInfo (LocalTensor.set_shape_info: m = the product of all dims
but the last, k = the last; rows [om, ok] of the original shape are the real data). Per row:
  max = rowmax(src[:ok]);  dst[:k] = exp(src[:k] - max);  sum = rowsum(dst[:ok]);  dst[:k] /= sum
in float32 (float16 data is cast to float32 first and the results cast back, round to nearest
even); the columns [ok, k) of the padding take part in the sub / exp / div as on the NPU. sum and
max get one 32-byte block per row ([m, 8] float32 or [m, 16] float16), the row's value repeated.
Rows are processed in chunks of the tiling's split_m rows; a tiling whose src_m / src_k differ
from the shape (a default `SoftmaxTiling()` has 0, 0) is recomputed in the kernel from the
temporary space (SoftMaxTilingFunc), as Ascend C does. The temporary space is temp_buffer, or
without it the UB the TPipe has not handed out (PopStackBuffer).
"""
from collections import namedtuple

import numpy as np
from numba.extending import overload

from .. import core, trace
from ..core import level_of, prim
from ..dtypes import ld, st
from ..errors import FAULT, fault, KernelError
from ..positions import UB
from .autotensor import auto_use   # LocalTensorAuto's syncs (insert_sync)
from .shapeinfo import R_INFO, S_DIM, S_ODIM, S_OSHAPE, S_SHAPE, find_shape
from ..state import STATE
from ..visibility import vector_reads

# Ascend C SoftMaxTiling (softmax_tilingdata.h) with pyasc's snake_case names (adv/tiling.py)
TILING_FIELDS = ("src_m", "src_k", "src_size", "out_max_m", "out_max_k", "out_max_size",
                 "split_m", "split_k", "split_size", "reduce_m", "reduce_k", "reduce_size",
                 "range_m", "tail_m", "tail_split_size", "tail_reduce_size")
SoftmaxTilingRecord = namedtuple("SoftmaxTilingRecord", TILING_FIELDS)

API = "asc.adv.softmax"
FLOAT_REPEAT = 64        # float32 lanes of one 256-byte repeat
BASIC_TILE = 8           # SOFTMAX_BASIC_TILE_NUM
_DT_NAMES = ("a non-float dtype", "float16", "float32")
_PIPE_V = 1              # PipeID.PIPE_V
_OP_MAX, _OP_SUB = trace.op("whole_reduce_max"), trace.op("sub")
_OP_EXP, _OP_SUM = trace.op("exp"), trace.op("whole_reduce_sum")
_OP_DIV, _OP_BRCB, _OP_CAST = trace.op("div"), trace.op("brcb"), trace.op("cast")


def float_code(a):
    """1 for a float16 tensor, 2 for float32, 0 for anything else."""
    if a.dtype.names == ("f16",):
        return 1
    return 2 if a.dtype == np.float32 else 0


@overload(float_code)
def _float_code(a):
    from numba import types
    dt = a.dtype
    if isinstance(dt, types.Record):
        c = 1 if list(dt.fields) == ["f16"] else 0
    else:
        c = 2 if dt == types.float32 else 0
    return lambda a: c


@prim
def _check_ub(ctx, what, t):
    lv = level_of(ctx, t)
    if lv != UB:
        fault("asc.adv.softmax: {} must be a LocalTensor in UB (VECIN/VECCALC/VECOUT), got a "
              "tensor in {:level}", what, lv)
        raise KernelError(FAULT)


@prim
def _dims(ctx, src):
    """(m, k, om, ok) of src's shape info and original shape."""
    i = find_shape(ctx, src)
    if i < 0 or ctx[STATE][0].shapes[i, R_INFO + S_DIM] == 0:
        fault("asc.adv.softmax: src must carry its shape (src.set_shape_info(asc.ShapeInfo("
              "asc.array(asc.int32, (m, k))))), got a tensor without shape info")
        raise KernelError(FAULT)
    rec = ctx[STATE][0].shapes[i]
    out = np.zeros(4, np.int64)
    for which in range(2):
        at_dim = R_INFO + (S_DIM if which == 0 else S_ODIM)
        at = R_INFO + (S_SHAPE if which == 0 else S_OSHAPE)
        n = rec[at_dim]
        size = np.int64(1)
        for d in range(n):
            size *= rec[at + d]
        k = rec[at + n - 1]
        if k <= 0:
            fault("asc.adv.softmax: the last axis of src's shape must be > 0, got k={}", k)
            raise KernelError(FAULT)
        out[2 * which] = size // k
        out[2 * which + 1] = k
    return out[0], out[1], out[2], out[3]


@prim
def _check_size(what, size, need, blk):
    if size < need and blk:
        fault("asc.adv.softmax: {} must hold one 32-byte block per row, m * {} = {} "
              "elements, got {} elements", what, blk, need, size)
        raise KernelError(FAULT)
    if size < need:
        fault("asc.adv.softmax: {} must hold the shape's m * k = {} elements, got {} "
              "elements", what, need, size)
        raise KernelError(FAULT)


@prim
def _split_m(work_floats, isz, blk, m, k, om):
    """SoftMaxTilingFunc's reduceM (rows per chunk) for `work_floats` floats of temporary space."""
    per_row = blk + FLOAT_REPEAT + (k if isz == 2 else 0)
    r = work_floats // per_row
    r = min(r, m)
    if om > r > BASIC_TILE:
        r = r // BASIC_TILE * BASIC_TILE
    return min(r, om), per_row


@prim
def _row(dst, sm, mx, src, r, k, ok, blk, buf, lanes):
    """One row: max, exp(x - max), sum, divide; sum / max broadcast to a 32-byte block (buf: k
    floats, lanes: FLOAT_REPEAT floats of scratch)."""
    base = r * k
    m = np.float32(-np.inf)
    for j in range(ok):
        v = np.float32(ld(src, base + j))
        if v > m or v != v:          # a NaN stays the max
            m = v
    for j in range(k):
        buf[j] = np.exp(np.float32(ld(src, base + j)) - m)
    lanes[:] = 0                                   # Add of 64-lane chunks, then a lane tree
    for j in range(ok):
        lanes[j % FLOAT_REPEAT] += buf[j]
    w = FLOAT_REPEAT // 2
    while w >= 1:
        for j in range(w):
            lanes[j] = lanes[j] + lanes[j + w]
        w //= 2
    s = lanes[0]
    for j in range(k):
        st(dst, base + j, buf[j] / s)
    for j in range(blk):
        st(mx, r * blk + j, m)
        st(sm, r * blk + j, s)


@prim
def softmax_nd(ctx, dst, sm, mx, src, work, work_given, tiling, basic_block, data_format_nz):
    """Mirrors AscendC::SoftMax(dst, sum, max, src[, sharedTmpBuffer], tiling) in ND format."""
    if data_format_nz:
        fault("asc.adv.softmax: data_format_nz=True (NZ input) is not supported, got "
              "data_format_nz=True")
        raise KernelError(FAULT)
    ct, cd, cs, cm = float_code(src), float_code(dst), float_code(sm), float_code(mx)
    if ct == 0 or cd != ct:
        fault("asc.adv.softmax: src and dst must have one dtype, float16 or float32, got "
              "src={} dst={}", _DT_NAMES[ct], _DT_NAMES[cd])
        raise KernelError(FAULT)
    if cs != cm or not (cs == ct or (ct == 1 and cs == 2)):
        fault("asc.adv.softmax: sum and max must have src's dtype (or float32 for float16 src), "
              "got src={} sum={} max={}", _DT_NAMES[ct], _DT_NAMES[cs], _DT_NAMES[cm])
        raise KernelError(FAULT)
    _check_ub(ctx, "dst", dst)
    _check_ub(ctx, "sum", sm)
    _check_ub(ctx, "max", mx)
    _check_ub(ctx, "src", src)
    isz = src.itemsize
    blk = 32 // sm.itemsize
    m, k, om, ok = _dims(ctx, src)
    if (k * isz) % 32 != 0:
        fault("asc.adv.softmax: the last axis of src's shape must be 32-byte aligned (a multiple "
              "of {} elements), got k={}", 32 // isz, k)
        raise KernelError(FAULT)
    if ok > k or om > m:
        fault("asc.adv.softmax: src's original shape must fit in its shape, got original "
              "[{}, {}] in shape [{}, {}]", om, ok, m, k)
        raise KernelError(FAULT)
    if basic_block and (m % BASIC_TILE != 0 or k % FLOAT_REPEAT != 0):
        fault("asc.adv.softmax: basic_block=True needs m % 8 == 0 and k % 64 == 0, got "
              "m={} k={}", m, k)
        raise KernelError(FAULT)
    _check_size("src", src.size, m * k, 0)
    _check_size("dst", dst.size, m * k, 0)
    _check_size("sum", sm.size, m * blk, blk)
    _check_size("max", mx.size, m * blk, blk)
    vector_reads(ctx, "asc.adv.softmax", "src", src, m * k * isz)     # (visibility.py)
    if work_given:
        _check_ub(ctx, "temp_buffer", work)
        wbytes = np.int64(work.size * work.itemsize)
    else:
        s = ctx[STATE][0]
        wbytes = s.level_size[UB] - s.level_used[UB]
    split, per_row = _split_m(wbytes // 4, isz, blk, m, k, om)
    if tiling[0] == m and tiling[1] == k:          # the given tiling is for this shape
        split = np.int64(tiling[6])
        if split <= 0 or tiling[12] * split + tiling[13] != om:
            fault("asc.adv.softmax: tiling must split the shape's {} rows, got split_m={} "
                  "range_m={} tail_m={}", om, tiling[6], tiling[12], tiling[13])
            raise KernelError(FAULT)
    if split <= 0 or split * per_row * 4 > wbytes:
        fault("asc.adv.softmax: the temporary space must hold {} bytes per row of a chunk "
              "(rows: {}), got {} bytes{}", per_row * 4, max(split, 1), wbytes,
              "" if work_given else " of free UB")
        raise KernelError(FAULT)
    # LocalTensorAuto tensors: the flags insert_sync puts before a vector op (no-op otherwise)
    auto_use(ctx, _PIPE_V, src, src, 0)
    auto_use(ctx, _PIPE_V, dst, dst, 1)
    auto_use(ctx, _PIPE_V, sm, sm, 1)
    auto_use(ctx, _PIPE_V, mx, mx, 1)
    if work_given:
        auto_use(ctx, _PIPE_V, work, work, 1)
    buf = np.empty(k, np.float32)
    lanes = np.empty(FLOAT_REPEAT, np.float32)
    for r in range(om):
        _row(dst, sm, mx, src, r, k, ok, blk, buf, lanes)
    core.count(ctx, core.C_VEC_OPS, om * (4 * k + ok + 2 * blk))
    if trace.on(ctx):
        chunks = (om + split - 1) // split
        for c in range(chunks):
            rows = min(split, om - c * split)
            if isz == 2:
                trace.vec(ctx, _OP_CAST, 4, rows * k, False)
            trace.vec(ctx, _OP_MAX, 4, rows * ok, False)
            trace.vec(ctx, _OP_BRCB, 4, rows * blk, False)
            trace.vec(ctx, _OP_SUB, 4, rows * k, False)
            trace.vec(ctx, _OP_EXP, 4, rows * k, False)
            trace.vec(ctx, _OP_SUM, 4, rows * ok, False)
            trace.vec(ctx, _OP_BRCB, 4, rows * blk, False)
            trace.vec(ctx, _OP_DIV, 4, rows * k, False)
            if isz == 2:
                trace.vec(ctx, _OP_CAST, 4, rows * k, False)
        # the sanitizer's records (with the last vector op): each row's ok columns read (the
        # padding columns are read too but discarded), dst's rows, sum and max written
        a = np.int64(src.ctypes.data)
        for r in range(om):
            trace.access(ctx, _OP_DIV, a + r * k * isz, ok * isz, 0)
        trace.tensor_access(ctx, _OP_DIV, dst, om * k * isz, 1)
        trace.tensor_access(ctx, _OP_DIV, sm, om * blk * sm.itemsize, 1)
        trace.tensor_access(ctx, _OP_DIV, mx, om * blk * mx.itemsize, 1)


def tiling_record(t) -> SoftmaxTilingRecord:
    """A SoftmaxTiling (object, record or None) as the record softmax_nd takes."""
    if t is None:
        return SoftmaxTilingRecord(*([0] * len(TILING_FIELDS)))
    return SoftmaxTilingRecord(*(int(getattr(t, f)) for f in TILING_FIELDS))

