"""Host-side plumbing shared by the kernel wrappers: numpy or rt.DeviceArray in, same kind out."""
from __future__ import annotations


import rt


def is_device(*xs) -> bool:
    """True if the inputs are rt.DeviceArrays (async path), False for host arrays."""
    kinds = {isinstance(x, rt.DeviceArray) for x in xs}
    if len(kinds) > 1:
        raise TypeError("inputs must be all numpy arrays or all rt.DeviceArray, got a mix")
    return kinds.pop()


def empty_like(x, shape=None, dtype=None):
    shape = x.shape if shape is None else shape
    dtype = x.dtype if dtype is None else dtype
    if isinstance(x, rt.DeviceArray):
        return rt.device_empty(shape, dtype)
    return rt.host_empty(shape, dtype)     # a large result's pages reused, not faulted again


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b
