"""Row softmax over the last axis: y[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(...)).

Rows are spread over cores (a contiguous block of rows per core). fp16/bf16 rows are cast to fp32
in UB, computed in fp32 and cast back. Two schemes, picked by `softmax_tiling`:
- rows that fit UB: a tile of several rows moves GM->UB in one `data_copy_pad` (each row padded to
  32 bytes in UB, so ragged column counts need no special casing: every vector op counts exactly
  `cols` elements of a row);
- long rows (a row does not fit UB next to its buffers): one row at a time in column chunks,
  three passes over GM (running max, sum of exponentials, output).

The host side (`RowTiling`, `plan_rows`, `check_rows_input`, `check_tiling_for`) is shared with
kernels/norm.py; so are the row helpers of kernels/rows.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, empty_like, is_device, round_up
from .rows import load_rows, scalar_of, store_rows

BUFFER_NUM = 2
MAX_BLOCK_COUNT = 4095          # data_copy_pad block_count limit (rows per tile)
TILE_BYTES = 32 * 1024          # input bytes per tile (keeps several tiles in flight per core)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(asc.bfloat16.numpy))


# ---- host-side tiling arithmetic (shared with norm.py) ----------------------------------------

def check_rows_input(api: str, x) -> tuple[int, int]:
    """(rows, cols) of a row-wise op's input (last axis = the row); raises for bad inputs."""
    if np.dtype(x.dtype) not in FLOAT_DTYPES:
        raise TypeError(f"{api}: x must be float32, float16 or bfloat16, got dtype={x.dtype}")
    if len(x.shape) < 1 or x.shape[-1] == 0:
        raise ValueError(f"{api}: x must have at least 1 dim and a non-empty last axis, got "
                         f"shape={tuple(x.shape)}")
    cols = int(x.shape[-1])
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    if rows * cols >= 2**31:
        raise ValueError(f"{api}: x must have fewer than 2**31 elements, got shape={x.shape}")
    return rows, cols


def row_stride(cols: int, dtype) -> int:
    """Elements between rows in UB: a row padded to 32 bytes (as data_copy_pad lays it out), and
    to 64 bytes for 2-byte dtypes so the fp32 copy of a row is 32-byte aligned too."""
    return round_up(cols, 16 if np.dtype(dtype).itemsize == 2 else 8)


def reduce_tmp_elems(count: int) -> int:
    """fp32 elements of the shared tmp buffer for reduce_sum/reduce_max (no index) over `count`
    fp32 elements: Ascend C's minimum workLocal, up(2 * ceil(count / 64), 8)."""
    return round_up(2 * ceil_div(count, 64), 8)


def split_rows(rows: int, work_per_row: int, block_dim: int | None) -> tuple[int, int]:
    """(block_dim, rows_per_core): contiguous row blocks, at least ~4K elements per core."""
    cores = block_dim or min(rt.default_core_count(), ceil_div(rows * work_per_row, 4096))
    cores = max(1, min(cores, rows))
    per_core = ceil_div(rows, cores)
    return ceil_div(rows, per_core), per_core


def fit_rows(ub_bytes: int, fixed: int, per_row: int, rows_per_core: int, stride: int,
             isz: int) -> int:
    """Rows per UB tile (0 if not even one row fits next to `fixed` bytes of buffers)."""
    fit = (ub_bytes - fixed) // per_row if ub_bytes > fixed else 0
    cap = max(1, TILE_BYTES // (stride * isz))
    return max(0, min(fit, cap, rows_per_core, MAX_BLOCK_COUNT))


def fit_chunk(ub_bytes: int, per_col: int, fixed: int, isz: int) -> int:
    """Columns per chunk for the long-row scheme: a multiple of 64 elements that fits UB
    (`per_col` bytes per column plus `fixed`), at most TILE_BYTES of input."""
    return max(64, min((ub_bytes - fixed) // per_col, TILE_BYTES // isz) // 64 * 64)


# ---- kernel helpers ------------------------------------------------------------------------------

@asc.jit
def _softmax_rows(dst, src, red, tmp, nrows, cols, stride):
    """fp32 rows (stride elements apart): dst = softmax(src), one row at a time."""
    for r in range(nrows):
        s = src[r * stride:]
        d = dst[r * stride:]
        asc.reduce_max(red, s, tmp, cols)
        m = scalar_of(red)
        asc.adds(d, s, -m, cols)
        asc.exp(d, d, cols)
        asc.reduce_sum(red, d, tmp, cols)
        total = scalar_of(red)
        asc.muls(d, d, 1.0 / total, cols)


# ---- tiling --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowTiling:
    """How a row-wise kernel (softmax, layernorm, rmsnorm) cuts a (rows, cols) input.

    Rows go to cores in contiguous blocks of `rows_per_core`. When a row fits UB (`chunk == cols`)
    a tile holds `tile_rows` rows, `stride` elements apart (the row padded to 32 bytes, 64 for
    2-byte dtypes). Otherwise rows are processed one at a time in column chunks of `chunk`
    elements (`tile_rows == 1`, `stride == chunk` rounded to 64), several passes over GM.
    """
    rows: int
    cols: int
    block_dim: int       # cores used
    rows_per_core: int   # rows per core (the last core may get fewer)
    tile_rows: int       # rows per UB tile
    stride: int          # UB elements between rows of a tile / UB elements of a chunk
    chunk: int           # columns per UB tile (== cols unless the row is chunked)
    tmp_elems: int       # fp32 elements of the reduce scratch buffer

    def __post_init__(self):
        name = type(self).__name__
        if min(self.rows, self.cols, self.block_dim, self.rows_per_core, self.tile_rows,
               self.stride, self.chunk, self.tmp_elems) <= 0:
            raise ValueError(f"{name}: all sizes must be > 0, got {self}")
        if self.chunked and self.tile_rows != 1:
            raise ValueError(f"{name}: a chunked row (chunk < cols) needs tile_rows=1, got {self}")
        if self.tile_rows > MAX_BLOCK_COUNT:
            raise ValueError(f"{name}: tile_rows must be <= {MAX_BLOCK_COUNT} (data_copy_pad "
                             f"block_count), got {self}")
        if self.block_dim * self.rows_per_core < self.rows:
            raise ValueError(f"{name}: block_dim * rows_per_core must cover all rows, got {self}")
        if self.chunked and (self.chunk % 64 or self.stride != self.chunk):
            raise ValueError(f"{name}: a chunked row needs chunk a multiple of 64 and "
                             f"stride == chunk, got {self}")

    @property
    def chunked(self) -> bool:
        return self.chunk < self.cols


def plan_rows(cls, api: str, rows: int, cols: int, dtype, *, f32_tile_rows: int,
              f32_fixed_rows: int, f32_chunks: int, block_dim=None, soc=None, chunk=None):
    """A `cls` (RowTiling subclass) for a kernel whose UB holds, besides the double-buffered
    in/out queues of `dtype` rows and the reduce scratch: `f32_tile_rows` fp32 rows per tile
    row, `f32_fixed_rows` fp32 rows (whatever tile_rows is) and, in the chunked scheme,
    `f32_chunks` fp32 chunk buffers. `chunk` forces the chunked scheme (a multiple of 64)."""
    if rows <= 0 or cols <= 0:
        raise ValueError(f"{api}: rows and cols must be > 0, got rows={rows} cols={cols}")
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    stride = row_stride(cols, dtype)
    cores, per_core = split_rows(rows, stride, block_dim)
    if chunk is None:
        tmp = reduce_tmp_elems(cols)
        per_row = 2 * BUFFER_NUM * stride * isz + 4 * stride * f32_tile_rows
        fixed = 32 + 4 * tmp + 4 * stride * f32_fixed_rows
        tile_rows = fit_rows(soc.ub_bytes, fixed, per_row, per_core, stride, isz)
        if tile_rows:
            return cls(rows, cols, cores, per_core, tile_rows, stride, cols, tmp)
        chunk = min(fit_chunk(soc.ub_bytes, 2 * BUFFER_NUM * isz + 4 * f32_chunks + 1, 1024, isz),
                    max(64, (cols - 1) // 64 * 64))
    if chunk <= 0 or chunk % 64:
        raise ValueError(f"{api}: chunk must be a positive multiple of 64, got chunk={chunk}")
    if chunk >= cols:  # a forced chunk holding the whole row: one-row tiles
        return cls(rows, cols, cores, per_core, 1, stride, cols, reduce_tmp_elems(cols))
    return cls(rows, cols, cores, per_core, 1, chunk, chunk, reduce_tmp_elems(chunk))


def check_tiling_for(api: str, t: RowTiling, rows: int, cols: int, dtype) -> None:
    """Raise ValueError unless tiling `t` was made for this input (rows, cols, UB row layout)."""
    if (t.rows, t.cols) != (rows, cols):
        raise ValueError(f"{api}: tiling must be for rows={rows} cols={cols}, got {t}")
    if not t.chunked and t.stride != row_stride(cols, dtype):
        raise ValueError(f"{api}: tiling stride must be {row_stride(cols, dtype)} (the UB row "
                         f"data_copy_pad lays out for cols={cols} of {np.dtype(dtype)}), got {t}")


@dataclass(frozen=True)
class SoftmaxTiling(RowTiling):
    """RowTiling of `softmax`. A row fits one UB tile when its double-buffered in/out rows, an
    fp32 work row for fp16/bf16 and the reduce scratch fit the 192 KB UB: cols <= 12184 for fp32
    (16 bytes a column), <= 16208 for fp16/bf16 (12 bytes a column). Longer rows take the chunked
    scheme (three passes over GM: max, sum of exp, output), so any cols works."""


def softmax_tiling(rows: int, cols: int, dtype, block_dim: int | None = None, soc=None,
                   chunk: int | None = None) -> SoftmaxTiling:
    """Tiling for `softmax` of a (rows, cols) array of `dtype`; `chunk` forces the long-row
    scheme with that many columns per chunk (a multiple of 64)."""
    wide = int(np.dtype(dtype).itemsize < 4)
    return plan_rows(SoftmaxTiling, "softmax", rows, cols, dtype, f32_tile_rows=wide,
                     f32_fixed_rows=0, f32_chunks=1, block_dim=block_dim, soc=soc, chunk=chunk)


# ---- kernels -------------------------------------------------------------------------------------

@asc.jit
def softmax_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, rows: int, cols: int,
                   rows_per_core: int, tile_rows: int, stride: int, tmp_elems: int,
                   wide: asc.ConstExpr[bool]):
    """Rows that fit UB: CopyIn a tile of rows -> (cast) softmax per row (cast) -> CopyOut."""
    first = asc.get_block_idx() * rows_per_core
    nrows = min(rows_per_core, rows - first)
    if nrows <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + first * cols, nrows * cols)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + first * cols, nrows * cols)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work_buf = asc.TBuf(asc.TPosition.VECCALC)
    red_buf = asc.TBuf(asc.TPosition.VECCALC)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qx, BUFFER_NUM, tile_rows * stride * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, tile_rows * stride * y.dtype.sizeof())
    pipe.init_buffer(work_buf, tile_rows * stride * 4 if wide else 32)
    pipe.init_buffer(red_buf, 32)
    pipe.init_buffer(tmp_buf, tmp_elems * 4)
    work = work_buf.get(asc.float32)
    red = red_buf.get(asc.float32)
    tmp = tmp_buf.get(asc.float32)
    for t in range((nrows + tile_rows - 1) // tile_rows):
        r0 = t * tile_rows
        nr = min(tile_rows, nrows - r0)
        xl = load_rows(qx, xg, r0 * cols, nr, cols, 0)
        yl = qy.alloc_tensor(y.dtype)
        if wide:
            n = (nr - 1) * stride + cols
            asc.cast(work, xl, asc.RoundMode.CAST_NONE, n)
            _softmax_rows(work, work, red, tmp, nr, cols, stride)
            asc.cast(yl, work, asc.RoundMode.CAST_RINT, n)
        else:
            _softmax_rows(yl, xl, red, tmp, nr, cols, stride)
        qx.free_tensor(xl)
        qy.enque(yl)
        store_rows(qy, yg, r0 * cols, nr, cols, 0)


@asc.jit
def softmax_long_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, rows: int, cols: int,
                        rows_per_core: int, chunk: int, tmp_elems: int,
                        wide: asc.ConstExpr[bool]):
    """Rows longer than UB, one row at a time in column chunks; three passes over GM: the row
    max, the sum of exp(x - max), then the output exp(x - max) / sum."""
    first = asc.get_block_idx() * rows_per_core
    nrows = min(rows_per_core, rows - first)
    if nrows <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + first * cols, nrows * cols)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + first * cols, nrows * cols)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    work_buf = asc.TBuf(asc.TPosition.VECCALC)
    red_buf = asc.TBuf(asc.TPosition.VECCALC)
    tmp_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qx, BUFFER_NUM, chunk * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, chunk * y.dtype.sizeof())
    pipe.init_buffer(work_buf, chunk * 4)
    pipe.init_buffer(red_buf, 32)
    pipe.init_buffer(tmp_buf, tmp_elems * 4)
    work = work_buf.get(asc.float32)
    red = red_buf.get(asc.float32)
    tmp = tmp_buf.get(asc.float32)
    nch = (cols + chunk - 1) // chunk
    for r in range(nrows):
        base = r * cols
        m = 0.0
        for c in range(nch):
            w = min(chunk, cols - c * chunk)
            xl = load_rows(qx, xg, base + c * chunk, 1, w, 0)
            if wide:
                asc.cast(work, xl, asc.RoundMode.CAST_NONE, w)
                asc.reduce_max(red, work, tmp, w)
            else:
                asc.reduce_max(red, xl, tmp, w)
            qx.free_tensor(xl)
            mc = scalar_of(red)
            m = mc if c == 0 else max(m, mc)
        total = 0.0
        for p in range(2):  # p == 0: sum of exp(x - m); p == 1: the output
            for c in range(nch):
                w = min(chunk, cols - c * chunk)
                xl = load_rows(qx, xg, base + c * chunk, 1, w, 0)
                if wide:
                    asc.cast(work, xl, asc.RoundMode.CAST_NONE, w)
                    asc.adds(work, work, -m, w)
                else:
                    asc.adds(work, xl, -m, w)
                qx.free_tensor(xl)
                asc.exp(work, work, w)
                if p == 0:
                    asc.reduce_sum(red, work, tmp, w)
                    total = total + scalar_of(red)
                else:
                    yl = qy.alloc_tensor(y.dtype)
                    if wide:
                        asc.muls(work, work, 1.0 / total, w)
                        asc.cast(yl, work, asc.RoundMode.CAST_RINT, w)
                    else:
                        asc.muls(yl, work, 1.0 / total, w)
                    qy.enque(yl)
                    store_rows(qy, yg, base + c * chunk, 1, w, 0)


# ---- host ----------------------------------------------------------------------------------------

def softmax_reference(x: np.ndarray) -> np.ndarray:
    """Row softmax over the last axis in float64, returned in x's dtype."""
    a = np.asarray(x).astype(np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def softmax(x, *, stream=None, tiling: SoftmaxTiling | None = None, **launch_options):
    """Softmax over the last axis of x (float32/float16/bfloat16, any leading shape).
    numpy in -> numpy out (synchronous); rt.DeviceArray in -> DeviceArray out, launched
    asynchronously on `stream`. `launch_options` go to the launch (interpret=, checked=)."""
    rows, cols = check_rows_input("softmax", x)
    dev = is_device(x)
    t = tiling or softmax_tiling(rows, cols, x.dtype)
    check_tiling_for("softmax", t, rows, cols, x.dtype)
    y = empty_like(x)
    xs, ys = (x, y) if dev else (np.ascontiguousarray(x).reshape(-1), y.reshape(-1))
    wide = np.dtype(x.dtype).itemsize < 4
    kernel = softmax_long_kernel if t.chunked else softmax_kernel
    launch = kernel[t.block_dim, stream] if stream is not None else kernel[t.block_dim]
    if t.chunked:
        launch(xs, ys, rows, cols, t.rows_per_core, t.chunk, t.tmp_elems, wide, **launch_options)
    else:
        launch(xs, ys, rows, cols, t.rows_per_core, t.tile_rows, t.stride, t.tmp_elems, wide,
               **launch_options)
    return y
