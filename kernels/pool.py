"""2-D max / average pooling (NCHW, float32), GlobalAveragePool / GlobalMaxPool as the
whole-plane case.

Each core owns a block of (n, c) planes. Max pooling runs on dense UB rows when a band of
output rows fits UB (`kernels.maxpool.maxpool_gather_kernel`: vertical maxes in the repeat form,
then one GatherMask per kernel column picks every window's column); otherwise, when its padded
rows fit UB one element per 32-byte block, on the vector unit as `maxpool_kernel` (see its
docstring: vector maxes over block-shifted views and a WholeReduceMax that picks every sw-th
block, output rows leaving UB in batches). Global pooling of planes of at most 64 elements
(ResNet's 7x7 GlobalAveragePool) is one WholeReduceSum/Max repeat per plane
(`global_pool_kernel`). Otherwise (other average pooling, very wide rows), per output row, the
input rows its window covers (at most KH, clipped to the image) move GM -> UB in one
data_copy_pad (rows 32-byte padded in UB); the window maxima / sums are taken by scalar reads
(S pipe: any kernel, stride, padding) into an output segment that moves UB -> GM. Average
pooling divides by KH*KW (count_include_pad=1) or by the number of taps inside the image
(ONNX's default).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device, round_up
from .maxpool import gather_plan, launch_maxpool_gather

BUFFER_NUM = 2
MODES = {"max": 0, "avg": 1}
SPARSE_ROWS = 16384   # vector max pooling: UB elements for the KH sparse input rows (64 KiB)
SPARSE_ROW = 8192     # ... for one sparse row's running max, its window max, the dense output
REPEATS = 248         # WholeReduce repeats per call (<= 255, a multiple of 8: aligned dst)


@dataclass(frozen=True)
class PoolTiling:
    planes: int          # N * C
    h: int
    w: int
    oh: int
    ow: int
    kh: int
    kw: int
    stride: tuple
    pad: tuple           # (top, left, bottom, right)
    block_dim: int
    planes_per_core: int
    w_pad: int           # UB row stride (elements)
    ow_pad: int
    sparse_blocks: int = 0   # max pooling on the vector unit: blocks of a padded row (0: scalar)
    rows_per_store: int = 1  # output rows per UB -> GM copy (vector max pooling)

    def __post_init__(self):
        if min(self.oh, self.ow, self.planes) < 1:
            raise ValueError(f"PoolTiling: output must be non-empty, got {self}")
        ub = rt.get_soc().ub_bytes
        need = BUFFER_NUM * 4 * (self.kh * self.w_pad + self.ow_pad)
        if need > ub:
            raise ValueError(f"PoolTiling: KH input rows + an output row must fit UB "
                             f"({ub} bytes), got {need} bytes for kh={self.kh} w={self.w}")


def pool_tiling(x_shape, kernel, stride=None, padding=0, block_dim=None) -> PoolTiling:
    n, c, h, w = (int(s) for s in x_shape)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else (int(kernel[0]), int(kernel[1]))
    stride = (kh, kw) if stride is None else \
        ((stride, stride) if isinstance(stride, int) else tuple(int(s) for s in stride))
    pad = (padding,) * 4 if isinstance(padding, int) else tuple(int(p) for p in padding)
    pad = pad * 2 if len(pad) == 2 else pad
    oh = (h + pad[0] + pad[2] - kh) // stride[0] + 1
    ow = (w + pad[1] + pad[3] - kw) // stride[1] + 1
    planes = n * c
    cores = block_dim or min(rt.default_core_count(), planes,
                             max(1, planes * oh * ow * kh * kw // 4096))
    per = ceil_div(planes, cores)
    blocks = max(pad[1] + w, (ow - 1) * stride[1] + kw)
    fits = kh * blocks * 8 <= SPARSE_ROWS and (blocks + kw) * 8 <= SPARSE_ROW and \
        round_up(ow, 8) <= SPARSE_ROW
    return PoolTiling(planes, h, w, oh, ow, kh, kw, stride, pad, ceil_div(planes, per), per,
                      round_up(w, 8), round_up(ow, 8), blocks if fits else 0,
                      max(1, min(oh, SPARSE_ROW // round_up(ow, 8))))


@asc.jit
def _pool_row(xl, ol, r0, nr, ow, w, w_pad, kw, sw, pw, kh_total, mode, count_pad):
    asc.set_flag(asc.HardEvent.MTE2_S, 0)
    asc.wait_flag(asc.HardEvent.MTE2_S, 0)
    # the scalar unit writes ol: an earlier row's MTE3 copy out of this buffer must be done (a
    # VECOUT free_tensor -> alloc_tensor orders the vector pipe, not the scalar unit)
    asc.set_flag(asc.HardEvent.MTE3_S, 0)
    asc.wait_flag(asc.HardEvent.MTE3_S, 0)
    for q in range(ow):
        c0 = q * sw - pw
        acc = 0.0
        first = True
        cnt = 0
        for i in range(nr):
            for j in range(kw):
                iw = c0 + j
                if iw >= 0 and iw < w:
                    v = xl.get_value(i * w_pad + iw)
                    cnt += 1
                    if mode == 0:
                        if first or v > acc:
                            acc = v
                        first = False
                    else:
                        acc += v
        if mode == 1:
            if count_pad:
                acc = acc / (kh_total * kw)
            else:
                acc = acc / max(cnt, 1)
        ol.set_value(q, acc)
    asc.set_flag(asc.HardEvent.S_MTE3, 0)
    asc.wait_flag(asc.HardEvent.S_MTE3, 0)


@asc.jit
def pool_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, planes: int, h: int, w: int,
                oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                planes_per_core: int, count_pad: int, w_pad: asc.ConstExpr[int],
                ow_pad: asc.ConstExpr[int], kh_max: asc.ConstExpr[int],
                mode: asc.ConstExpr[int]):
    p0 = asc.get_block_idx() * planes_per_core
    npl = min(planes_per_core, planes - p0)
    if npl <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + p0 * h * w, npl * h * w)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + p0 * oh * ow, npl * oh * ow)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qx, BUFFER_NUM, kh_max * w_pad * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, ow_pad * y.dtype.sizeof())
    isz = x.dtype.sizeof()
    for pl in range(npl):
        for r in range(oh):
            top = r * sh - ph
            r0 = max(top, 0)
            r1 = min(top + kh, h)
            ol = qy.alloc_tensor(y.dtype)
            if r1 > r0:
                xl = qx.alloc_tensor(x.dtype)
                asc.data_copy_pad(xl, xg[(pl * h + r0) * w:],
                                  asc.DataCopyExtParams(r1 - r0, w * isz, 0, 0, 0))
                qx.enque(xl)
                xl = qx.deque(x.dtype)
                _pool_row(xl, ol, r0, r1 - r0, ow, w, w_pad, kw, sw, pw, kh, mode, count_pad)
                qx.free_tensor(xl)
            else:
                asc.duplicate(ol, 0.0, ow)
            qy.enque(ol)
            ol = qy.deque(y.dtype)
            asc.data_copy_pad(yg[(pl * oh + r) * ow:], ol,
                              asc.DataCopyExtParams(1, ow * isz, 0, 0, 0))
            qy.free_tensor(ol)


@asc.jit
def maxpool_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, planes: int, h: int, w: int,
                   oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                   planes_per_core: int, blocks: int, rows_per_store: int, neg_inf: float):
    """Max pooling on the vector unit. Each input row of a window moves GM -> UB as one-element
    blocks (one element per 32-byte block, after pw blocks of -inf: the padded row), so shifting
    by one input column is shifting by one aligned block: the rows' max (vector max), then the
    window max along W (kw - 1 vector maxes of block-shifted views), then one WholeReduceMax of
    lane 0 every sw blocks picks each output (a one-lane max is the value itself)."""
    p0 = asc.get_block_idx() * planes_per_core
    npl = min(planes_per_core, planes - p0)
    if npl <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + p0 * h * w, npl * h * w)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + p0 * oh * ow, npl * oh * ow)
    pipe = asc.TPipe()
    rows_buf = asc.TBuf(asc.TPosition.VECCALC)
    acc_buf = asc.TBuf(asc.TPosition.VECCALC)
    win_buf = asc.TBuf(asc.TPosition.VECCALC)
    out_buf = asc.TBuf(asc.TPosition.VECCALC)
    isz = x.dtype.sizeof()
    pipe.init_buffer(rows_buf, SPARSE_ROWS * isz)
    pipe.init_buffer(acc_buf, SPARSE_ROW * isz)
    pipe.init_buffer(win_buf, SPARSE_ROW * isz)
    pipe.init_buffer(out_buf, SPARSE_ROW * isz)
    rows = rows_buf.get(x.dtype)
    acc = acc_buf.get(x.dtype)
    win = win_buf.get(x.dtype)
    dense = out_buf.get(y.dtype)
    asc.duplicate(rows, neg_inf, SPARSE_ROWS)          # padding blocks stay -inf
    kb = 32 // isz
    span = blocks * kb
    ow8 = (ow + kb - 1) // kb * kb
    wide = ((ow - 1) * sw + 1) * kb                     # window maxima needed
    for pl in range(npl):
        for rs in range(0, oh, rows_per_store):
            nrs = min(rows_per_store, oh - rs)
            for i in range(nrs):
                top = (rs + i) * sh - ph
                r0 = max(top, 0)
                r1 = min(top + kh, h)
                if r1 <= r0:
                    asc.duplicate(dense[i * ow8:], 0.0, ow)
                    continue
                asc.set_flag(asc.HardEvent.V_MTE2, 0)   # earlier reads of the rows are done
                asc.wait_flag(asc.HardEvent.V_MTE2, 0)
                for k in range(r1 - r0):
                    asc.data_copy_pad(rows[k * span + pw * kb:], xg[(pl * h + r0 + k) * w:],
                                      asc.DataCopyExtParams(w, isz, 0, 0, 0))
                asc.set_flag(asc.HardEvent.MTE2_V, 0)
                asc.wait_flag(asc.HardEvent.MTE2_V, 0)
                asc.max(acc, rows, rows[(r1 - r0 - 1) * span:], span)
                for k in range(1, r1 - r0 - 1):
                    asc.max(acc, acc, rows[k * span:], span)
                asc.max(win, acc, acc, wide)
                for j in range(1, kw):
                    asc.max(win, win, acc[j * kb:], wide)
                for q0 in range(0, ow, REPEATS):
                    asc.whole_reduce_max(dense[i * ow8 + q0:], win[q0 * sw * kb:], 1,
                                         min(REPEATS, ow - q0), 1, 1, sw,
                                         asc.ReduceOrder.ORDER_ONLY_VALUE)
            asc.set_flag(asc.HardEvent.V_MTE3, 0)
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
            asc.data_copy_pad(yg[(pl * oh + rs) * ow:], dense,
                              asc.DataCopyExtParams(nrs, ow * isz, 0, 0, 0))
            asc.set_flag(asc.HardEvent.MTE3_V, 0)       # dense is rewritten next
            asc.wait_flag(asc.HardEvent.MTE3_V, 0)


@asc.jit
def global_pool_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, planes: int, hw: int,
                       planes_per_core: int, scale: float, mode: int):
    """Global pooling of planes of hw <= 64 elements on the vector unit: planes move GM -> UB as
    32-byte aligned rows (one strided copy per batch of planes), one WholeReduceSum/Max repeat
    per plane (mask = the plane's hw lanes) gives the sums / maxima, scaled by 1/hw for the
    average, and the batch leaves UB -> GM in one copy."""
    p0 = asc.get_block_idx() * planes_per_core
    npl = min(planes_per_core, planes - p0)
    if npl <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + p0 * hw, npl * hw)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + p0, npl)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    isz = x.dtype.sizeof()
    pipe.init_buffer(qx, BUFFER_NUM, SPARSE_ROW * isz)
    pipe.init_buffer(qy, BUFFER_NUM, REPEATS * isz)
    kb = 32 // isz
    row = (hw + kb - 1) // kb * kb
    batch = min(REPEATS, SPARSE_ROW // row)
    for b0 in range(0, npl, batch):
        nb = min(batch, npl - b0)
        xl = qx.alloc_tensor(x.dtype)
        asc.data_copy_pad(xl, xg[b0 * hw:], asc.DataCopyExtParams(nb, hw * isz, 0, 0, 0))
        qx.enque(xl)
        xl = qx.deque(x.dtype)
        yl = qy.alloc_tensor(y.dtype)
        if mode == 0:
            asc.whole_reduce_max(yl, xl, hw, nb, 1, 1, row // kb,
                                 asc.ReduceOrder.ORDER_ONLY_VALUE)
        else:
            asc.whole_reduce_sum(yl, xl, hw, nb, 1, 1, row // kb)
            asc.muls(yl, yl, scale, nb)
        qx.free_tensor(xl)
        qy.enque(yl)
        yl = qy.deque(y.dtype)
        asc.data_copy_pad(yg[b0:], yl, asc.DataCopyExtParams(1, nb * isz, 0, 0, 0))
        qy.free_tensor(yl)


def pool_reference(x, mode, kernel, stride=None, padding=0, count_include_pad=False):
    """float64 pooling (NCHW), returned as x's dtype."""
    t = pool_tiling(x.shape, kernel, stride, padding, block_dim=1)
    n, c = x.shape[:2]
    xf = np.asarray(x, np.float64)
    y = np.zeros((n, c, t.oh, t.ow))
    for r in range(t.oh):
        for q in range(t.ow):
            r0, c0 = r * t.stride[0] - t.pad[0], q * t.stride[1] - t.pad[1]
            win = xf[:, :, max(r0, 0):max(r0 + t.kh, 0), max(c0, 0):max(c0 + t.kw, 0)]
            if mode == "max":
                y[:, :, r, q] = win.max(axis=(2, 3))
            else:
                y[:, :, r, q] = win.sum(axis=(2, 3)) / (
                    t.kh * t.kw if count_include_pad else win.shape[2] * win.shape[3])
    return y.astype(x.dtype)


def launch_pool(x, y, mode: str, t: PoolTiling, stream, count_include_pad=False, dense=True,
                **launch_options) -> None:
    """Queue the pooling of device array x (N,C,H,W) into y (N,C,OH,OW) on `stream`
    (`dense=False`: max pooling skips the GatherMask kernel, for tests of the others)."""
    if t.oh == t.ow == 1 and (t.kh, t.kw) == (t.h, t.w) and not any(t.pad) and \
            t.h * t.w <= 64:
        global_pool_kernel[t.block_dim, stream](
            x, y, t.planes, t.h * t.w, t.planes_per_core, 1.0 / (t.h * t.w), MODES[mode],
            **launch_options)
        return
    plan = gather_plan(t) if mode == "max" and dense else None
    if plan is not None:
        launch_maxpool_gather(x, y, t, plan, stream, **launch_options)
        return
    if mode == "max" and t.sparse_blocks:
        maxpool_kernel[t.block_dim, stream](
            x, y, t.planes, t.h, t.w, t.oh, t.ow, t.kh, t.kw, t.stride[0], t.stride[1],
            t.pad[0], t.pad[1], t.planes_per_core, t.sparse_blocks, t.rows_per_store,
            float("-inf"), **launch_options)
        return
    pool_kernel[t.block_dim, stream](
        x, y, t.planes, t.h, t.w, t.oh, t.ow, t.kh, t.kw, t.stride[0], t.stride[1], t.pad[0],
        t.pad[1], t.planes_per_core, int(bool(count_include_pad)), t.w_pad, t.ow_pad,
        kh_bucket(t.kh), MODES[mode], **launch_options)


def kh_bucket(kh: int) -> int:
    """UB rows reserved (a ConstExpr: bucketed so few binaries are compiled)."""
    for b in (4, 8, 16, 64, 256):
        if kh <= b:
            return b
    return kh


def pool2d(x, mode: str, kernel, stride=None, padding=0, count_include_pad=False, *,
           stream=None, tiling: PoolTiling | None = None, **launch_options):
    """Max ("max") or average ("avg") pooling of NCHW float32 x. numpy in -> numpy out
    (synchronous); rt.DeviceArray in -> DeviceArray out, queued on `stream`."""
    if mode not in MODES:
        raise ValueError(f"pool2d: mode must be 'max' or 'avg', got mode={mode!r}")
    if np.dtype(x.dtype) != np.float32 or len(x.shape) != 4:
        raise TypeError(f"pool2d: x must be a 4-D float32 array, got dtype={x.dtype} "
                        f"shape={tuple(x.shape)}")
    t = tiling or pool_tiling(x.shape, kernel, stride, padding)
    if kh_bucket(t.kh) * t.w_pad * 4 * BUFFER_NUM > rt.get_soc().ub_bytes:
        raise ValueError(f"pool2d: {t.kh} input rows of width {t.w} do not fit UB")
    dev = is_device(x)
    rt.ensure_device()
    s = stream if stream is not None else rt.current_stream()
    xd = x if dev else rt.to_device(np.ascontiguousarray(x))
    y = rt.device_empty((x.shape[0], x.shape[1], t.oh, t.ow), np.float32)
    launch_pool(xd, y, mode, t, s, count_include_pad, **launch_options)
    if dev:
        return y
    s.synchronize()
    return y.copy_to_host()
