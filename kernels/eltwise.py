"""Element-wise vector kernels for model ops: unary (relu, exp, abs, sqrt, ...) over any length,
and binary ops (add, sub, mul, div, max, min) of two same-shape tensors or of a (rows, cols)
tensor with a length-cols row vector broadcast over the rows (bias add).

Unary/binary: each core owns a contiguous slice, tiles move with data_copy and the ragged tail
with data_copy_pad (as kernels/add.py). Row broadcast: each core owns a block of rows; the
broadcast row stays in UB, every row is one data_copy_pad in and out. The op is a ConstExpr, so
each op is its own compiled binary.

Also two kernels of kernels.conv2d's path (documented there): `deinterleave2_kernel` (x split
into its even and odd elements, for stride-2 convolutions) and `bias_act_kernel` (the
convolution's bias / residual / ReLU epilogue).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device, round_up
from .add import BUFFER_NUM as _ADD_BUFFERS, add_tiling

BUFFER_NUM = _ADD_BUFFERS        # eltwise_tiling is add_tiling: the same UB split
UNARY = {"relu": 0, "exp": 1, "abs": 2, "sqrt": 3, "ln": 4, "reciprocal": 5}
BINARY = {"add": 0, "sub": 1, "mul": 2, "div": 3, "max": 4, "min": 5}
DTYPES = (np.dtype(np.float32), np.dtype(np.float16))
MAX_BCAST_COLS = 8192


@dataclass(frozen=True)
class EltwiseTiling:
    total: int       # elements (flat ops) or rows (row broadcast)
    block_dim: int   # cores used
    per_core: int    # elements (rows) per core
    tile: int        # UB tile in elements (flat) / UB row stride (row broadcast)

    def __post_init__(self):
        if min(self.total, self.block_dim, self.per_core, self.tile) <= 0:
            raise ValueError(f"EltwiseTiling: all sizes must be > 0, got {self}")


def eltwise_tiling(total: int, dtype, block_dim: int | None = None, soc=None) -> EltwiseTiling:
    """Flat split over cores: kernels/add.py's rule (3 queues x BUFFER_NUM tiles in UB, tile fixed
    per dtype)."""
    if total <= 0:
        raise ValueError(f"eltwise: length must be > 0, got total={total}")
    t = add_tiling(total, dtype, block_dim, soc)
    return EltwiseTiling(t.total, t.block_dim, t.per_core, t.tile)


def bcast_tiling(rows: int, cols: int, dtype, block_dim: int | None = None) -> EltwiseTiling:
    if rows <= 0 or not 0 < cols <= MAX_BCAST_COLS:
        raise ValueError(f"eltwise: row broadcast needs rows > 0 and 0 < cols <= "
                         f"{MAX_BCAST_COLS}, got rows={rows} cols={cols}")
    cores = block_dim or min(rt.default_core_count(), ceil_div(rows * cols, 4096))
    cores = max(1, min(cores, rows))
    per_core = ceil_div(rows, cores)
    stride = round_up(cols, 32 // np.dtype(dtype).itemsize)
    return EltwiseTiling(rows, ceil_div(rows, per_core), per_core, stride)


@asc.jit
def _unary(dst, src, n, op):
    if op == 0:
        asc.relu(dst, src, n)
    elif op == 1:
        asc.exp(dst, src, n)
    elif op == 2:
        asc.abs(dst, src, n)
    elif op == 3:
        asc.sqrt(dst, src, n)
    elif op == 4:
        asc.ln(dst, src, n)
    else:
        asc.reciprocal(dst, src, n)


@asc.jit
def _binary(dst, a, b, n, op):
    if op == 0:
        asc.add(dst, a, b, n)
    elif op == 1:
        asc.sub(dst, a, b, n)
    elif op == 2:
        asc.mul(dst, a, b, n)
    elif op == 3:
        asc.div(dst, a, b, n)
    elif op == 4:
        asc.max(dst, a, b, n)
    else:
        asc.min(dst, a, b, n)


@asc.jit
def _copy_in(q, g, off, n, padded):
    t = q.alloc_tensor(g.dtype)
    if padded:
        asc.data_copy_pad(t, g[off:], asc.DataCopyExtParams(1, n * g.dtype.sizeof(), 0, 0, 0))
    else:
        asc.data_copy(t, g[off:], n)
    q.enque(t)
    return q.deque(g.dtype)


@asc.jit
def _copy_out(q, g, off, n, padded):
    t = q.deque(g.dtype)
    if padded:
        asc.data_copy_pad(g[off:], t, asc.DataCopyExtParams(1, n * g.dtype.sizeof(), 0, 0, 0))
    else:
        asc.data_copy(g[off:], t, n)
    q.free_tensor(t)


@asc.jit
def unary_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, total: int, per_core: int,
                 tile: asc.ConstExpr[int], op: asc.ConstExpr[int]):
    base = asc.get_block_idx() * per_core
    length = min(per_core, total - base)
    if length <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, length)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + base, length)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qz = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qx, BUFFER_NUM, tile * x.dtype.sizeof())
    pipe.init_buffer(qz, BUFFER_NUM, tile * z.dtype.sizeof())
    for off in range(0, length, tile):
        n = min(tile, length - off)
        padded = n < tile
        xl = _copy_in(qx, xg, off, n, padded)
        zl = qz.alloc_tensor(z.dtype)
        _unary(zl, xl, n, op)
        qz.enque(zl)
        qx.free_tensor(xl)
        _copy_out(qz, zg, off, n, padded)


@asc.jit
def binary_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, total: int,
                  per_core: int, tile: asc.ConstExpr[int], op: asc.ConstExpr[int]):
    base = asc.get_block_idx() * per_core
    length = min(per_core, total - base)
    if length <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, length)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + base, length)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + base, length)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qy = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qz = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qx, BUFFER_NUM, tile * x.dtype.sizeof())
    pipe.init_buffer(qy, BUFFER_NUM, tile * y.dtype.sizeof())
    pipe.init_buffer(qz, BUFFER_NUM, tile * z.dtype.sizeof())
    for off in range(0, length, tile):
        n = min(tile, length - off)
        padded = n < tile
        xl = _copy_in(qx, xg, off, n, padded)
        yl = _copy_in(qy, yg, off, n, padded)
        zl = qz.alloc_tensor(z.dtype)
        _binary(zl, xl, yl, n, op)
        qz.enque(zl)
        qx.free_tensor(xl)
        qy.free_tensor(yl)
        _copy_out(qz, zg, off, n, padded)


@asc.jit
def bcast_kernel(x: asc.GlobalAddress, b: asc.GlobalAddress, z: asc.GlobalAddress, rows: int,
                 cols: int, rows_per_core: int, stride: asc.ConstExpr[int],
                 op: asc.ConstExpr[int]):
    """z[r, :] = x[r, :] op b[:] for this core's rows; b is loaded once."""
    r0 = asc.get_block_idx() * rows_per_core
    nr = min(rows_per_core, rows - r0)
    if nr <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + r0 * cols, nr * cols)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, cols)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + r0 * cols, nr * cols)
    pipe = asc.TPipe()
    qb = asc.TQue(asc.TPosition.VECIN, 1)
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qz = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qb, 1, stride * b.dtype.sizeof())
    pipe.init_buffer(qx, BUFFER_NUM, stride * x.dtype.sizeof())
    pipe.init_buffer(qz, BUFFER_NUM, stride * z.dtype.sizeof())
    bl = _copy_in(qb, bg, 0, cols, True)
    for r in range(nr):
        xl = _copy_in(qx, xg, r * cols, cols, True)
        zl = qz.alloc_tensor(z.dtype)
        _binary(zl, xl, bl, cols, op)
        qz.enque(zl)
        qx.free_tensor(xl)
        _copy_out(qz, zg, r * cols, cols, True)
    qb.free_tensor(bl)


# ---- host ----------------------------------------------------------------------------------------

_NP_UNARY = {"relu": lambda a: np.maximum(a, 0), "exp": np.exp, "abs": np.abs, "sqrt": np.sqrt,
             "ln": np.log, "reciprocal": lambda a: 1 / a}
_NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
              "max": np.maximum, "min": np.minimum}


def unary_reference(op: str, x: np.ndarray) -> np.ndarray:
    return _NP_UNARY[op](x.astype(np.float64)).astype(x.dtype)


def binary_reference(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _NP_BINARY[op](x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


def _check(api, op, table, *xs):
    if op not in table:
        raise ValueError(f"{api}: op must be one of {sorted(table)}, got op={op!r}")
    for x in xs:
        if np.dtype(x.dtype) not in DTYPES or np.dtype(x.dtype) != np.dtype(xs[0].dtype):
            raise TypeError(f"{api}: inputs must all be float32 or all float16, got "
                            f"{[str(np.dtype(v.dtype)) for v in xs]}")


def _run(kernel, t, ins, out_shape, dtype, stream, out, launch_options, *extra):
    dev = is_device(*ins)
    launch = kernel[t.block_dim, stream] if stream is not None else kernel[t.block_dim]
    if dev:
        z = out if out is not None else rt.device_empty(out_shape, dtype, device=ins[0].device)
        launch(*ins, z, *extra, **launch_options)
        return z
    z = rt.host_empty(out_shape, dtype)
    launch(*[np.ascontiguousarray(a).reshape(-1) for a in ins], z.reshape(-1), *extra,
           **launch_options)
    return z


def unary(op: str, x, *, stream=None, out=None, tiling: EltwiseTiling | None = None,
          **launch_options):
    """z = op(x) elementwise (op in UNARY). numpy in -> numpy out; rt.DeviceArray in ->
    DeviceArray out (`out` if given) launched asynchronously on `stream`."""
    _check("unary", op, UNARY, x)
    t = tiling or eltwise_tiling(int(np.prod(x.shape)), x.dtype)
    return _run(unary_kernel, t, [x], x.shape, x.dtype, stream, out, launch_options,
                t.total, t.per_core, t.tile, UNARY[op])


def binary(op: str, x, y, *, stream=None, out=None, tiling: EltwiseTiling | None = None,
           **launch_options):
    """z = x op y. Same shapes: elementwise. y of shape (x.shape[-1],): broadcast over the rows
    of x (bias add). numpy in -> numpy out; rt.DeviceArray in -> DeviceArray out (`out` if
    given) launched asynchronously on `stream`."""
    _check("binary", op, BINARY, x, y)
    if tuple(x.shape) == tuple(y.shape):
        t = tiling or eltwise_tiling(int(np.prod(x.shape)), x.dtype)
        return _run(binary_kernel, t, [x, y], x.shape, x.dtype, stream, out, launch_options,
                    t.total, t.per_core, t.tile, BINARY[op])
    cols = int(x.shape[-1]) if len(x.shape) else 0
    if tuple(y.shape) != (cols,):
        raise ValueError(f"binary: y must have x's shape or shape (x.shape[-1],), got "
                         f"x.shape={tuple(x.shape)} y.shape={tuple(y.shape)}")
    rows = int(np.prod(x.shape[:-1]))
    t = tiling or bcast_tiling(rows, cols, x.dtype)
    return _run(bcast_kernel, t, [x, y], x.shape, x.dtype, stream, out, launch_options,
                rows, cols, t.per_core, t.tile, BINARY[op])


# ---- data movement and epilogues for kernels.conv2d --------------------------------------------

EPI_BUFFERS = 2       # bias_act_kernel's queue depth


@asc.jit
def deinterleave2_kernel(x: asc.GlobalAddress, xp: asc.GlobalAddress, half: int,
                         pairs_per_core: int, pairs: asc.ConstExpr[int]):
    """xp[p * half + i] = x[2i + p] (p = 0, 1): the even then the odd elements of x (2 * half
    elements). A pass moves `pairs` pairs GM -> UB densely (one copy), then per phase one
    GatherMask in counter mode with the built-in pattern 1 (even lanes) or 2 (odd lanes) packs
    that phase's elements into a dense row (bit for bit), UB -> GM. `pairs` and
    `pairs_per_core` are multiples of 8 (32-byte aligned rows in UB)."""
    i0 = asc.get_block_idx() * pairs_per_core
    n = min(pairs_per_core, half - i0)
    if n <= 0:
        return
    sz = x.dtype.sizeof()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * half)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(xp, 2 * half)
    pipe = asc.TPipe()
    src = asc.TBuf(asc.TPosition.VECCALC)
    dense = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(src, 2 * pairs * sz)
    pipe.init_buffer(dense, 2 * pairs * sz)
    sb = src.get(x.dtype)
    dnb = dense.get(x.dtype)
    for s in range(i0, i0 + n, pairs):
        m = min(pairs, i0 + n - s)
        asc.set_flag(asc.HardEvent.V_MTE2, 0)       # the previous pass's picks are done
        asc.wait_flag(asc.HardEvent.V_MTE2, 0)
        asc.data_copy_pad(sb, xg[2 * s:], asc.DataCopyExtParams(1, 2 * m * sz, 0, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        for p in range(2):
            asc.gather_mask(dnb[p * pairs:], sb, p + 1, True, 2 * m,
                            asc.GatherMaskParams(1, 1, 8, 0))
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        for p in range(2):
            asc.data_copy_pad(pg[p * half + s:], dnb[p * pairs:],
                              asc.DataCopyExtParams(1, m * sz, 0, 0, 0))
        asc.set_flag(asc.HardEvent.MTE3_V, 0)       # dnb is rewritten by the next pass
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)


@asc.jit
def bias_act_kernel(y: asc.GlobalAddress, bias: asc.GlobalAddress, res: asc.GlobalAddress,
                    out: asc.GlobalAddress, rows: int, p: int, oc: int, rows_per_core: int,
                    has_bias: int, has_res: int, relu: int, tile: asc.ConstExpr[int]):
    """The convolution's epilogue on the vector cores (what ATC fuses after a Conv): row r of
    out (rows x p) = act(y[r] + bias[r % oc] + res[r]), bias / residual / ReLU each optional.
    Rows are moved in blocks (one strided copy per block of rows, 32-byte aligned in UB)."""
    r0 = asc.get_block_idx() * rows_per_core
    nrows = min(rows_per_core, rows - r0)
    if nrows <= 0:
        return
    sz = y.dtype.sizeof()
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y, rows * p)
    rg = asc.GlobalTensor()
    rg.set_global_buffer(res, rows * p)
    og = asc.GlobalTensor()
    og.set_global_buffer(out, rows * p)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(bias, oc)
    pipe = asc.TPipe()
    qy = asc.TQue(asc.TPosition.VECIN, EPI_BUFFERS)
    qr = asc.TQue(asc.TPosition.VECIN, EPI_BUFFERS)
    qo = asc.TQue(asc.TPosition.VECOUT, EPI_BUFFERS)
    pipe.init_buffer(qy, EPI_BUFFERS, tile * sz)
    pipe.init_buffer(qr, EPI_BUFFERS, tile * sz)
    pipe.init_buffer(qo, EPI_BUFFERS, tile * sz)
    cl = min(p, tile)
    c32 = (cl * sz + 31) // 32 * 32 // sz
    rows_per_tile = max(1, tile // c32)
    for rb in range(r0, r0 + nrows, rows_per_tile):
        nr = min(rows_per_tile, r0 + nrows - rb)
        for c0 in range(0, p, cl):
            n = min(cl, p - c0)
            n32 = (n * sz + 31) // 32 * 32 // sz
            total = nr * n32
            yl = qy.alloc_tensor(y.dtype)
            asc.data_copy_pad(yl, yg[rb * p + c0:],
                              asc.DataCopyExtParams(nr, n * sz, (p - n) * sz, 0, 0))
            qy.enque(yl)
            rl = qr.alloc_tensor(y.dtype)
            if has_res != 0:
                asc.data_copy_pad(rl, rg[rb * p + c0:],
                                  asc.DataCopyExtParams(nr, n * sz, (p - n) * sz, 0, 0))
            qr.enque(rl)
            yl = qy.deque(y.dtype)
            rl = qr.deque(y.dtype)
            ol = qo.alloc_tensor(y.dtype)
            if has_bias != 0:
                for i in range(nr):
                    asc.adds(ol[i * n32:], yl[i * n32:], bg.get_value((rb + i) % oc), n)
                if has_res != 0 and relu != 0:
                    asc.add_relu(ol, ol, rl, total)
                elif has_res != 0:
                    asc.add(ol, ol, rl, total)
                elif relu != 0:
                    asc.relu(ol, ol, total)
            elif has_res != 0 and relu != 0:
                asc.add_relu(ol, yl, rl, total)
            elif has_res != 0:
                asc.add(ol, yl, rl, total)
            else:
                asc.relu(ol, yl, total)
            qy.free_tensor(yl)
            qr.free_tensor(rl)
            qo.enque(ol)
            ol = qo.deque(y.dtype)
            asc.data_copy_pad(og[rb * p + c0:], ol,
                              asc.DataCopyExtParams(nr, n * sz, 0, (p - n) * sz, 0))
            qo.free_tensor(ol)
