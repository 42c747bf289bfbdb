"""The reduction step of the collectives: `dst = dst op src` on device memory.

rt must not import the kernel language (tests/test_layering.py), so the reduction kernel lives
in `kernels/hccl_reduce.py` and registers itself here with `set_reducer` when imported (then HCCL
reduces with a kernel launched on the device's cores). Without one, or for a dtype/op the kernel
does not cover, the reduction is numpy's (`numpy_reduce`). `Comm.stats` counts both paths.

A reducer is `fn(op, dtype, dst_ptr, src_ptr, count, device) -> bool`: reduce `count` elements
of `dtype` at device address `src_ptr` into `dst_ptr` (both on `device`, op 0..3 =
sum/prod/max/min) and return True, or return False to leave it to numpy. It runs on the stream
worker of the collective and must not use that stream.
"""
from __future__ import annotations

import threading

import numpy as np

UFUNCS = (np.add, np.multiply, np.maximum, np.minimum)

_lock = threading.Lock()
_reducer = None


def set_reducer(fn) -> None:
    """Register the reduction kernel (`None` goes back to numpy)."""
    global _reducer
    if fn is not None and not callable(fn):
        raise TypeError(f"set_reducer: fn must be callable or None, got fn={fn!r}")
    with _lock:
        _reducer = fn


def get_reducer():
    return _reducer


def numpy_reduce(op: int, dst: np.ndarray, src: np.ndarray) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        UFUNCS[op](dst, src, out=dst)
