"""LayerNorm and RMSNorm over the last axis.

layernorm: y = (x - mean) / sqrt(var + eps) * gamma + beta   (biased variance, two-pass: centred)
rmsnorm:   y = x / sqrt(mean(x^2) + eps) * gamma

One kernel serves both (`rms` is a runtime flag: both share one compiled specialisation). Rows
are spread over cores; fp16/bf16 are computed in fp32 in UB (cast in, cast out); gamma/beta are
loaded once per core and cast to fp32. The tiling comes from kernels/softmax.py, the row
helpers from kernels/rows.py: rows that fit UB move several at a time (each row 32-byte padded
in UB by data_copy_pad, vector ops count exactly `cols`); longer rows take a chunked scheme
(passes over GM: mean, variance, output; rmsnorm: sum of squares, output).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc

from ._host import empty_like, is_device
from .rows import load_rows, scalar_of, store_rows
from .softmax import BUFFER_NUM, RowTiling, check_rows_input, check_tiling_for, plan_rows


@dataclass(frozen=True)
class LayerNormTiling(RowTiling):
    """RowTiling of `layernorm`. Besides the double-buffered in/out rows (and an fp32 work row
    for fp16/bf16), UB holds three fp32 rows (squares, gamma, beta) and the reduce scratch: a row
    fits one tile when cols <= 6984 (fp32) / 8144 (fp16/bf16). Longer rows take the chunked
    scheme (three passes over GM: mean, variance, output), so any cols works."""


@dataclass(frozen=True)
class RmsNormTiling(RowTiling):
    """RowTiling of `rmsnorm`: as LayerNormTiling without beta, one tile when cols <= 8144
    (fp32) / 9760 (fp16/bf16); longer rows take the chunked scheme (two passes over GM)."""


def _tiling(cls, api, rows, cols, dtype, rms, block_dim, soc, chunk):
    wide = int(np.dtype(dtype).itemsize < 4)
    return plan_rows(cls, api, rows, cols, dtype, f32_tile_rows=wide,
                     f32_fixed_rows=2 if rms else 3, f32_chunks=2, block_dim=block_dim, soc=soc,
                     chunk=chunk)


def layernorm_tiling(rows: int, cols: int, dtype, block_dim=None, soc=None,
                     chunk=None) -> LayerNormTiling:
    """Tiling for `layernorm`; `chunk` forces the chunked scheme (a multiple of 64)."""
    return _tiling(LayerNormTiling, "layernorm", rows, cols, dtype, False, block_dim, soc, chunk)


def rmsnorm_tiling(rows: int, cols: int, dtype, block_dim=None, soc=None,
                   chunk=None) -> RmsNormTiling:
    """Tiling for `rmsnorm`; `chunk` forces the chunked scheme (a multiple of 64)."""
    return _tiling(RmsNormTiling, "rmsnorm", rows, cols, dtype, True, block_dim, soc, chunk)


# ---- kernels -------------------------------------------------------------------------------------

@asc.jit
def _cast_in(q, g, off, n, dst):
    """n fp16/bf16 elements g[off:] -> fp32 dst (through a VECIN buffer of q)."""
    t = load_rows(q, g, off, 1, n, 0)
    asc.cast(dst, t, asc.RoundMode.CAST_NONE, n)
    q.free_tensor(t)


@asc.jit
def _copy_in(q, g, off, n, dst):
    """n fp32 elements g[off:] -> dst (through a VECIN buffer of q, then UB -> UB)."""
    t = load_rows(q, g, off, 1, n, 0)
    asc.data_copy(dst, t, (n + 7) // 8 * 8)
    q.free_tensor(t)


@asc.jit
def _rstd(red, sq, tmp, n, inv_n, eps):
    """1 / sqrt(sum(sq[:n]) * inv_n + eps), computed by the vector unit on red[0]."""
    asc.reduce_sum(red, sq, tmp, n)
    asc.muls(red, red, inv_n, 1)
    asc.adds(red, red, eps, 1)
    asc.rsqrt(red, red, 1)
    return scalar_of(red)


@asc.jit
def _norm_rows(dst, src, gam, bet, sq, red, tmp, nrows, cols, stride, eps, rms):
    """fp32 rows (stride elements apart): dst = norm(src) * gamma (+ beta), row by row."""
    inv_n = 1.0 / cols
    for r in range(nrows):
        s = src[r * stride:]
        d = dst[r * stride:]
        if rms:
            asc.mul(sq, s, s, cols)
            rstd = _rstd(red, sq, tmp, cols, inv_n, eps)
            asc.muls(d, s, rstd, cols)
            asc.mul(d, d, gam, cols)
        else:
            asc.reduce_sum(red, s, tmp, cols)
            mean = scalar_of(red) * inv_n
            asc.adds(d, s, -mean, cols)
            asc.mul(sq, d, d, cols)
            rstd = _rstd(red, sq, tmp, cols, inv_n, eps)
            asc.muls(d, d, rstd, cols)
            asc.mul(d, d, gam, cols)
            asc.add(d, d, bet, cols)


@asc.jit
def norm_kernel(x: asc.GlobalAddress, gamma: asc.GlobalAddress, beta: asc.GlobalAddress,
                y: asc.GlobalAddress, rows: int, cols: int, rows_per_core: int, tile_rows: int,
                stride: int, tmp_elems: int, eps: float, rms: bool,
                wide: asc.ConstExpr[bool]):
    """Rows that fit UB: gamma/beta to fp32 once, then per tile CopyIn -> norm rows -> CopyOut."""
    first = asc.get_block_idx() * rows_per_core
    nrows = min(rows_per_core, rows - first)
    if nrows <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + first * cols, nrows * cols)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + first * cols, nrows * cols)
    gg = asc.GlobalTensor()
    gg.set_global_buffer(gamma, cols)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(beta, cols)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work_buf = asc.TBuf(asc.TPosition.VECCALC)
    par_buf = asc.TBuf(asc.TPosition.VECCALC)
    sq_buf = asc.TBuf(asc.TPosition.VECCALC)
    red_buf = asc.TBuf(asc.TPosition.VECCALC)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qx, BUFFER_NUM, tile_rows * stride * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, tile_rows * stride * y.dtype.sizeof())
    pipe.init_buffer(work_buf, tile_rows * stride * 4 if wide else 32)
    pipe.init_buffer(par_buf, stride * 4 if rms else 2 * stride * 4)
    pipe.init_buffer(sq_buf, stride * 4)
    pipe.init_buffer(red_buf, 32)
    pipe.init_buffer(tmp_buf, tmp_elems * 4)
    work = work_buf.get(asc.float32)
    gam = par_buf.get(asc.float32)
    bet = par_buf.get_with_offset(stride, 0 if rms else stride * 4, asc.float32)
    sq = sq_buf.get(asc.float32)
    red = red_buf.get(asc.float32)
    tmp = tmp_buf.get(asc.float32)
    if wide:  # gamma (and beta) -> fp32, once per core
        _cast_in(qx, gg, 0, cols, gam)
        if not rms:
            _cast_in(qx, bg, 0, cols, bet)
    else:
        _copy_in(qx, gg, 0, cols, gam)
        if not rms:
            _copy_in(qx, bg, 0, cols, bet)
    for t in range((nrows + tile_rows - 1) // tile_rows):
        r0 = t * tile_rows
        nr = min(tile_rows, nrows - r0)
        xl = load_rows(qx, xg, r0 * cols, nr, cols, 0)
        yl = qy.alloc_tensor(y.dtype)
        if wide:
            n = (nr - 1) * stride + cols
            asc.cast(work, xl, asc.RoundMode.CAST_NONE, n)
            _norm_rows(work, work, gam, bet, sq, red, tmp, nr, cols, stride, eps, rms)
            asc.cast(yl, work, asc.RoundMode.CAST_RINT, n)
        else:
            _norm_rows(yl, xl, gam, bet, sq, red, tmp, nr, cols, stride, eps, rms)
        qx.free_tensor(xl)
        qy.enque(yl)
        store_rows(qy, yg, r0 * cols, nr, cols, 0)


@asc.jit
def norm_long_kernel(x: asc.GlobalAddress, gamma: asc.GlobalAddress, beta: asc.GlobalAddress,
                     y: asc.GlobalAddress, rows: int, cols: int, rows_per_core: int, chunk: int,
                     tmp_elems: int, eps: float, rms: bool, wide: asc.ConstExpr[bool]):
    """Rows longer than UB, one row at a time in column chunks. Passes over GM per row:
    p=0 mean (layernorm only), p=1 sum of squares of x - mean, p=2 output (gamma/beta chunks
    loaded alongside)."""
    first = asc.get_block_idx() * rows_per_core
    nrows = min(rows_per_core, rows - first)
    if nrows <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + first * cols, nrows * cols)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + first * cols, nrows * cols)
    gg = asc.GlobalTensor()
    gg.set_global_buffer(gamma, cols)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(beta, cols)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work_buf = asc.TBuf(asc.TPosition.VECCALC)
    par_buf = asc.TBuf(asc.TPosition.VECCALC)
    red_buf = asc.TBuf(asc.TPosition.VECCALC)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qx, BUFFER_NUM, chunk * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, chunk * y.dtype.sizeof())
    pipe.init_buffer(work_buf, chunk * 4)
    pipe.init_buffer(par_buf, chunk * 4)
    pipe.init_buffer(red_buf, 32)
    pipe.init_buffer(tmp_buf, tmp_elems * 4)
    work = work_buf.get(asc.float32)
    par = par_buf.get(asc.float32)
    red = red_buf.get(asc.float32)
    tmp = tmp_buf.get(asc.float32)
    nch = (cols + chunk - 1) // chunk
    inv_n = 1.0 / cols
    for r in range(nrows):
        base = r * cols
        mean = 0.0
        rstd = 0.0
        for p in range(1 if rms else 0, 3):
            acc = 0.0
            for c in range(nch):
                w = min(chunk, cols - c * chunk)
                xl = load_rows(qx, xg, base + c * chunk, 1, w, 0)
                if wide:
                    asc.cast(work, xl, asc.RoundMode.CAST_NONE, w)
                    asc.adds(work, work, -mean, w)
                else:
                    asc.adds(work, xl, -mean, w)
                qx.free_tensor(xl)
                if p < 2:
                    if p == 1:
                        asc.mul(work, work, work, w)
                    asc.reduce_sum(red, work, tmp, w)
                    acc = acc + scalar_of(red)
                    continue
                asc.muls(work, work, rstd, w)
                if wide:
                    _cast_in(qx, gg, c * chunk, w, par)
                else:
                    _copy_in(qx, gg, c * chunk, w, par)
                asc.mul(work, work, par, w)
                if not rms:
                    if wide:
                        _cast_in(qx, bg, c * chunk, w, par)
                    else:
                        _copy_in(qx, bg, c * chunk, w, par)
                    asc.add(work, work, par, w)
                yl = qy.alloc_tensor(y.dtype)
                if wide:
                    asc.cast(yl, work, asc.RoundMode.CAST_RINT, w)
                else:
                    asc.data_copy(yl, work, (w + 7) // 8 * 8)
                qy.enque(yl)
                store_rows(qy, yg, base + c * chunk, 1, w, 0)
            if p == 0:
                mean = acc * inv_n
            elif p == 1:
                asc.duplicate(red, acc * inv_n + eps, 8)
                asc.rsqrt(red, red, 8)
                rstd = scalar_of(red)


# ---- host ----------------------------------------------------------------------------------------

def layernorm_reference(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                        eps: float = 1e-5) -> np.ndarray:
    """LayerNorm over the last axis in float64 (biased variance), returned in x's dtype."""
    a = np.asarray(x).astype(np.float64)
    mean = a.mean(axis=-1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=-1, keepdims=True)
    g, b = (np.asarray(v).astype(x.dtype).astype(np.float64) for v in (gamma, beta))
    return ((a - mean) / np.sqrt(var + eps) * g + b).astype(x.dtype)


def rmsnorm_reference(x: np.ndarray, gamma: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """RMSNorm over the last axis in float64, returned in x's dtype."""
    a = np.asarray(x).astype(np.float64)
    g = np.asarray(gamma).astype(x.dtype).astype(np.float64)
    return (a / np.sqrt((a * a).mean(axis=-1, keepdims=True) + eps) * g).astype(x.dtype)


def _param(api, name, v, x, cols, dev):
    """gamma/beta as a flat array of x's dtype and kind (host arrays are cast; device arrays
    must match)."""
    if tuple(v.shape) != (cols,):
        raise ValueError(f"{api}: {name} must have shape ({cols},) (the last axis of x), got "
                         f"{name}.shape={tuple(v.shape)}")
    if dev:
        if not is_device(v) or np.dtype(v.dtype) != np.dtype(x.dtype):
            raise TypeError(f"{api}: {name} must be an rt.DeviceArray of x's dtype {x.dtype} "
                            f"when x is one, got {type(v).__name__} of dtype {v.dtype}")
        return v
    if is_device(v):
        raise TypeError(f"{api}: {name} must be a numpy array when x is, got an rt.DeviceArray")
    return np.ascontiguousarray(v, dtype=x.dtype)


def _run(api, x, gamma, beta, eps, rms, tiling, stream, launch_options):
    rows, cols = check_rows_input(api, x)
    if not float(eps) > 0:
        raise ValueError(f"{api}: eps must be > 0, got eps={eps}")
    dev = is_device(x)
    g = _param(api, "gamma", gamma, x, cols, dev)
    b = g if beta is None else _param(api, "beta", beta, x, cols, dev)
    t = tiling or _tiling(RmsNormTiling if rms else LayerNormTiling, api, rows, cols, x.dtype,
                          rms, None, None, None)
    check_tiling_for(api, t, rows, cols, x.dtype)
    y = empty_like(x)
    xs, ys = (x, y) if dev else (np.ascontiguousarray(x).reshape(-1), y.reshape(-1))
    wide = np.dtype(x.dtype).itemsize < 4
    kernel = norm_long_kernel if t.chunked else norm_kernel
    launch = kernel[t.block_dim, stream] if stream is not None else kernel[t.block_dim]
    size = (t.chunk,) if t.chunked else (t.tile_rows, t.stride)
    launch(xs, g, b, ys, rows, cols, t.rows_per_core, *size, t.tmp_elems, float(eps), rms, wide,
           **launch_options)
    return y


def layernorm(x, gamma, beta, eps: float = 1e-5, *, stream=None,
              tiling: LayerNormTiling | None = None, **launch_options):
    """LayerNorm over the last axis of x (float32/float16/bfloat16, any leading shape) with
    gamma, beta of shape (cols,). numpy in -> numpy out (synchronous); rt.DeviceArray in ->
    DeviceArray out, launched asynchronously on `stream`. `launch_options`: interpret=, checked=."""
    return _run("layernorm", x, gamma, beta, eps, False, tiling, stream, launch_options)


def rmsnorm(x, gamma, eps: float = 1e-6, *, stream=None, tiling: RmsNormTiling | None = None,
            **launch_options):
    """RMSNorm over the last axis of x (float32/float16/bfloat16, any leading shape) with gamma
    of shape (cols,). numpy in -> numpy out (synchronous); rt.DeviceArray in -> DeviceArray out,
    launched asynchronously on `stream`. `launch_options`: interpret=, checked=."""
    return _run("rmsnorm", x, gamma, None, eps, True, tiling, stream, launch_options)
