"""Vector add: z = x + y, double-buffered (CopyIn -> Compute -> CopyOut), any length.

Each core owns a contiguous slice; full tiles move with data_copy, the ragged tail with
data_copy_pad (byte-exact GM access).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, empty_like, is_device, round_up

BUFFER_NUM = 2

#: What the AI Core vector unit's Add takes (Ascend C `Add`: half, float, int16, int32; bfloat16
#: on the 910B parts): the same float types as the other ops plus the vector integers. No float64
#: or int64: no emulated SoC (910B1-B4, 310P3) has them in the vector unit.
DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(asc.bfloat16.numpy),
          np.dtype(np.int32), np.dtype(np.int16))


@dataclass(frozen=True)
class AddTiling:
    total: int       # elements
    block_dim: int   # cores used
    per_core: int    # elements per core (the last core may get fewer)
    tile: int        # elements per UB buffer (multiple of 32 bytes)

    def __post_init__(self):
        if self.tile <= 0 or self.per_core <= 0 or self.block_dim <= 0:
            raise ValueError(f"AddTiling: tile, per_core and block_dim must be > 0, got {self}")


def add_tiling(total: int, dtype, block_dim: int | None = None, soc=None) -> AddTiling:
    """Split `total` elements over cores; UB holds 3 queues x BUFFER_NUM tiles."""
    if total <= 0:
        raise ValueError(f"add: length must be > 0, got total={total}")
    soc = soc or rt.get_soc()
    isz = check_dtype("add_tiling", dtype).itemsize
    align = 32 // isz
    cores = block_dim or min(rt.default_core_count(), ceil_div(total, 4096))
    cores = max(1, min(cores, ceil_div(total, align)))
    per_core = round_up(ceil_div(total, cores), align)
    cores = ceil_div(total, per_core)
    max_tile = (soc.ub_bytes // (3 * BUFFER_NUM)) // 32 * 32 // isz
    tile = min(max_tile, 8192)  # fixed per dtype: tile is a ConstExpr, so it picks the binary
    return AddTiling(total, cores, per_core, tile)


@asc.jit
def _add_tile(qx, qy, qz, xg, yg, zg, off, n, padded):
    """One tile: CopyIn (MTE2) -> Compute (V) -> CopyOut (MTE3)."""
    xl = qx.alloc_tensor(xg.dtype)
    yl = qy.alloc_tensor(yg.dtype)
    if padded:
        nbytes = n * xg.dtype.sizeof()
        asc.data_copy_pad(xl, xg[off:], asc.DataCopyExtParams(1, nbytes, 0, 0, 0))
        asc.data_copy_pad(yl, yg[off:], asc.DataCopyExtParams(1, nbytes, 0, 0, 0))
    else:
        asc.data_copy(xl, xg[off:], n)
        asc.data_copy(yl, yg[off:], n)
    qx.enque(xl)
    qy.enque(yl)
    xl = qx.deque(xg.dtype)
    yl = qy.deque(yg.dtype)
    zl = qz.alloc_tensor(zg.dtype)
    asc.add(zl, xl, yl, n)
    qz.enque(zl)
    qx.free_tensor(xl)
    qy.free_tensor(yl)
    zl = qz.deque(zg.dtype)
    if padded:
        asc.data_copy_pad(zg[off:], zl, asc.DataCopyExtParams(1, n * zg.dtype.sizeof(), 0, 0, 0))
    else:
        asc.data_copy(zg[off:], zl, n)
    qz.free_tensor(zl)


@asc.jit
def add_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, total: int,
               per_core: int, tile: asc.ConstExpr[int]):
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
    full = length // tile
    for t in range(full):
        _add_tile(qx, qy, qz, xg, yg, zg, t * tile, tile, False)
    tail = length - full * tile
    if tail > 0:
        _add_tile(qx, qy, qz, xg, yg, zg, full * tile, tail, True)


def check_dtype(api: str, dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"{api}: dtype must be one of float32, float16, bfloat16, int32, int16 "
                        f"(the AI Core vector unit's Add types), got dtype={dt}")
    return dt


def check_tiling(api: str, t: AddTiling, total: int, dtype, soc=None) -> None:
    """Raise ValueError unless `t` covers exactly `total` elements of `dtype` and fits UB: a
    tiling covering less would leave the rest of z unwritten (stale device memory)."""
    if not isinstance(t, AddTiling):
        raise TypeError(f"{api}: tiling must be an AddTiling, got tiling={t!r}")
    isz = np.dtype(dtype).itemsize
    soc = soc or rt.get_soc()
    if t.total != total:
        raise ValueError(f"{api}: tiling.total must equal the input's {total} elements, got "
                         f"tiling.total={t.total}")
    if t.block_dim * t.per_core < total:
        raise ValueError(f"{api}: tiling.block_dim * tiling.per_core must cover all {total} "
                         f"elements, got tiling.block_dim * tiling.per_core="
                         f"{t.block_dim} * {t.per_core} = {t.block_dim * t.per_core}")
    if (t.tile * isz) % 32:
        raise ValueError(f"{api}: tiling.tile * itemsize must be a multiple of 32 bytes, got "
                         f"tiling.tile={t.tile} ({t.tile * isz} bytes of {np.dtype(dtype)})")
    need = 3 * BUFFER_NUM * t.tile * isz
    if need > soc.ub_bytes:
        raise ValueError(f"{api}: tiling.tile must fit 3 x {BUFFER_NUM} buffers in UB "
                         f"({soc.ub_bytes} bytes on {soc.name}), got tiling.tile={t.tile} "
                         f"({need} bytes)")


def add_reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x.astype(np.float64) + y.astype(np.float64)).astype(x.dtype)


def add(x, y, *, out=None, stream=None, tiling: AddTiling | None = None, **launch_options):
    """z = x + y elementwise. numpy in -> numpy out (synchronous; into `out` if given, else a
    new array); rt.DeviceArray in -> DeviceArray out (`out` or a new one), launched
    asynchronously on `stream`.

    numpy in: the kernel works on the host arrays in place, mapped into the device's address
    space for the launch (rt.DeviceArray.map_host, like aclrtHostRegister): x and y read-only,
    the result written straight into z. What stays as a copy-in/copy-back launch would have it:
    a non-contiguous x or y is copied once to a contiguous array; an `out` that shares memory
    with x or y gets the result only after the kernel has finished (the kernel writes a fresh
    buffer, copied into `out`), so aliasing cannot change what the kernel reads. On a kernel
    fault x and y are unchanged (never written); `out` is unchanged when it shares memory with
    x or y, otherwise it may hold part of the result. Without the runtime's mapping (see
    `rt.DeviceArray.can_map_host`) x and y are copied to device memory and z back."""
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"add: x and y must have the same shape and dtype, got "
                         f"{x.shape}/{x.dtype} and {y.shape}/{y.dtype}")
    dev = is_device(x, y)
    check_dtype("add", x.dtype)
    if out is not None:
        check_out(out, x, dev)
    total = int(np.prod(x.shape))
    t = tiling or add_tiling(total, x.dtype)
    check_tiling("add", t, total, x.dtype, rt.get_soc(launch_options.get("soc")))
    launch = add_kernel[t.block_dim, stream] if stream is not None else add_kernel[t.block_dim]
    if dev:
        z = empty_like(x) if out is None else out
        launch(x, y, z, t.total, t.per_core, t.tile, **launch_options)
        return z
    rt.ensure_device()
    # a new result's pages are present before the cores write it (rt.host_empty): pages first
    # touched by the core threads fault concurrently and contend in the kernel (10-90 ms for
    # 64 MB here)
    z = rt.host_empty(x.shape, x.dtype) if out is None else out
    staged = out is not None and (np.may_share_memory(out, x) or np.may_share_memory(out, y))
    zk = rt.host_empty(x.shape, x.dtype) if staged else z      # what the kernel writes
    bufs = []
    try:
        if rt.DeviceArray.can_map_host():
            for a in (x, y):
                bufs.append(rt.DeviceArray.map_host(np.ascontiguousarray(a).reshape(-1),
                                                    write=False))
            bufs.append(rt.DeviceArray.map_host(zk.reshape(-1)))
        else:
            for a in (x, y):
                bufs.append(rt.to_device(np.ascontiguousarray(a).reshape(-1)))
            bufs.append(rt.device_empty((t.total,), x.dtype))
        launch(*bufs, t.total, t.per_core, t.tile, **launch_options)
        (stream or rt.current_stream()).synchronize()
        if not bufs[2].is_mapped_host:
            bufs[2].copy_to_host(out=zk.reshape(-1))
    finally:
        for b in bufs:
            b.free()
    if staged:
        np.copyto(z, zk)
    return z


def check_out(out, x, dev: bool) -> None:
    """`out` must be what add would return: x's kind, shape and dtype; a writable C-contiguous
    array on the host (the kernel writes it as one flat buffer)."""
    kind = rt.DeviceArray if dev else np.ndarray
    if not isinstance(out, kind) or out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"add: out must be a {kind.__name__} of shape {x.shape} and dtype "
                         f"{x.dtype}, got out={type(out).__name__} "
                         f"{getattr(out, 'shape', None)}/{getattr(out, 'dtype', None)}")
    if not dev and not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"add: out must be a writable C-contiguous array, got out with "
                         f"strides={out.strides}, writeable={out.flags.writeable}")
