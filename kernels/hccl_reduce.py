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

import rt

from .eltwise import BINARY, binary_kernel, eltwise_tiling

OPS = ("sum", "prod", "max", "min")
#: dtypes whose add/mul/max/min the emulated vector unit implements (the AI Core's vector ISA has
#: no 64-bit or 8-bit arithmetic; those stay with numpy)
SUPPORTED = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32), np.dtype(np.int16)}
try:
    from ml_dtypes import bfloat16 as _bf16
    SUPPORTED.add(np.dtype(_bf16))
except ImportError:                         # pragma: no cover
    pass


# rt.hccl's op numbers -> kernels.eltwise's binary ops (the reduction is its binary_kernel,
# dst = dst op src in place)
_BINARY_OP = {0: BINARY["add"], 1: BINARY["mul"], 2: BINARY["max"], 3: BINARY["min"]}


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
    """The `rt.hccl` reducer: launch kernels.eltwise's `binary_kernel` (in place) on `device`
    and wait for it. Returns False (numpy does it) for dtypes outside `SUPPORTED` and for empty
    ranges."""
    dt = np.dtype(dtype)
    if dt not in SUPPORTED or count <= 0:
        return False
    dst = rt.DeviceArray((count,), dt, dst_ptr)
    src = rt.DeviceArray((count,), dt, src_ptr)
    stream = _stream_for(device)
    t = eltwise_tiling(count, dt)
    opts = {} if interpret is None else {"interpret": interpret}
    binary_kernel[t.block_dim, stream](dst, src, dst, t.total, t.per_core, t.tile,
                                        _BINARY_OP[op], **opts)
    stream.synchronize()
    return True


def install() -> None:
    """Make rt.hccl reduce with this kernel (done on import)."""
    rt.hccl.set_reducer(reduce_on_device)


def uninstall() -> None:
    """Back to numpy reductions."""
    rt.hccl.set_reducer(None)


install()
