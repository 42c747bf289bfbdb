"""The reduction step of rt.hccl's collectives as a kernel: dst = dst (+|*|max|min) src.

`rt.hccl` cannot import the kernel language (rt sits below ascendc), so this module registers
`reduce_on_device` with `rt.hccl.set_reducer` when imported (`import kernels.hccl_reduce`, or
`kernels.hccl_reduce.install()`). From then on the ring algorithms reduce each received chunk with
this kernel, launched on the rank's device (its core pool) on a private stream of that device;
dtype/op pairs the vector unit does not cover (`SUPPORTED`) stay with numpy (`Comm.stats` counts
both paths).
"""
from __future__ import annotations

import threading

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, round_up

BUFFER_NUM = 2
OPS = ("sum", "prod", "max", "min")
#: dtypes whose add/mul/max/min the emulated vector unit implements (the AI Core's vector ISA has
#: no 64-bit or 8-bit arithmetic; those stay with numpy)
SUPPORTED = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32), np.dtype(np.int16)}
try:
    from ml_dtypes import bfloat16 as _bf16
    SUPPORTED.add(np.dtype(_bf16))
except ImportError:                         # pragma: no cover
    pass


@asc.jit
def _reduce_tile(qa, qb, qc, dg, sg, off, n, padded, op: asc.ConstExpr[int]):
    al = qa.alloc_tensor(dg.dtype)
    bl = qb.alloc_tensor(sg.dtype)
    if padded:
        nbytes = n * dg.dtype.sizeof()
        asc.data_copy_pad(al, dg[off:], asc.DataCopyExtParams(1, nbytes, 0, 0, 0))
        asc.data_copy_pad(bl, sg[off:], asc.DataCopyExtParams(1, nbytes, 0, 0, 0))
    else:
        asc.data_copy(al, dg[off:], n)
        asc.data_copy(bl, sg[off:], n)
    qa.enque(al)
    qb.enque(bl)
    al = qa.deque(dg.dtype)
    bl = qb.deque(sg.dtype)
    cl = qc.alloc_tensor(dg.dtype)
    if op == 0:
        asc.add(cl, al, bl, n)
    elif op == 1:
        asc.mul(cl, al, bl, n)
    elif op == 2:
        asc.max(cl, al, bl, n)
    else:
        asc.min(cl, al, bl, n)
    qc.enque(cl)
    qa.free_tensor(al)
    qb.free_tensor(bl)
    cl = qc.deque(dg.dtype)
    if padded:
        asc.data_copy_pad(dg[off:], cl, asc.DataCopyExtParams(1, n * dg.dtype.sizeof(), 0, 0, 0))
    else:
        asc.data_copy(dg[off:], cl, n)
    qc.free_tensor(cl)


@asc.jit
def hccl_reduce_kernel(dst: asc.GlobalAddress, src: asc.GlobalAddress, total: int, per_core: int,
                       tile: asc.ConstExpr[int], op: asc.ConstExpr[int]):
    """dst[i] = dst[i] op src[i] for i < total; each core owns `per_core` elements."""
    base = asc.get_block_idx() * per_core
    length = min(per_core, total - base)
    if length <= 0:
        return
    dg = asc.GlobalTensor()
    dg.set_global_buffer(dst + base, length)
    sg = asc.GlobalTensor()
    sg.set_global_buffer(src + base, length)
    pipe = asc.TPipe()
    qa = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qb = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qc = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    pipe.init_buffer(qa, BUFFER_NUM, tile * dst.dtype.sizeof())
    pipe.init_buffer(qb, BUFFER_NUM, tile * src.dtype.sizeof())
    pipe.init_buffer(qc, BUFFER_NUM, tile * dst.dtype.sizeof())
    full = length // tile
    for t in range(full):
        _reduce_tile(qa, qb, qc, dg, sg, t * tile, tile, False, op)
    tail = length - full * tile
    if tail > 0:
        _reduce_tile(qa, qb, qc, dg, sg, full * tile, tail, True, op)


def reduce_tiling(total: int, dtype, cores: int | None = None):
    """(block_dim, per_core, tile) for `total` elements of `dtype`."""
    isz = np.dtype(dtype).itemsize
    align = 32 // isz
    cores = cores or min(rt.default_core_count(), ceil_div(total, 4096))
    cores = max(1, min(cores, ceil_div(total, align)))
    per_core = round_up(ceil_div(total, cores), align)
    cores = ceil_div(total, per_core)
    max_tile = (rt.get_soc().ub_bytes // (3 * BUFFER_NUM)) // 32 * 32 // isz
    return cores, per_core, min(max_tile, 8192)


_streams = threading.local()


def _stream_for(device: int) -> rt.Stream:
    cache = getattr(_streams, "by_device", None)
    if cache is None:
        cache = _streams.by_device = {}
    s = cache.get(device)
    if s is None or s.device != device:
        rt.set_device(device)                 # this thread (a stream worker) works on `device`
        s = cache[device] = rt.Stream()
    return s


def reduce_on_device(op: int, dtype, dst_ptr: int, src_ptr: int, count: int, device: int,
                     interpret: bool | None = None) -> bool:
    """The `rt.hccl` reducer: launch `hccl_reduce_kernel` on `device` and wait for it. Returns
    False (numpy does it) for dtypes outside `SUPPORTED` and for empty ranges."""
    dt = np.dtype(dtype)
    if dt not in SUPPORTED or count <= 0:
        return False
    dst = rt.DeviceArray((count,), dt, dst_ptr)
    src = rt.DeviceArray((count,), dt, src_ptr)
    stream = _stream_for(device)
    bd, per_core, tile = reduce_tiling(count, dt)
    opts = {} if interpret is None else {"interpret": interpret}
    hccl_reduce_kernel[bd, stream](dst, src, count, per_core, tile, op, **opts)
    stream.synchronize()
    return True


def install() -> None:
    """Make rt.hccl reduce with this kernel (done on import)."""
    rt.hccl.set_reducer(reduce_on_device)


def uninstall() -> None:
    """Back to numpy reductions."""
    rt.hccl.set_reducer(None)


install()
