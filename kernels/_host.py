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


_CONSTANTS: dict = {}   # device id -> (rt Device, {key: DeviceArray}): read-only kernel inputs


def device_constant(key, build, device=None) -> rt.DeviceArray:
    """A DeviceArray holding `build()` (a numpy array) on `device` (the current one if None),
    cached by `key`: kernels only read it (GatherMask patterns built from a geometry, like a
    weight layout), so launches on any stream may share it. Freed when the device is reset (a
    reset hook), never earlier, since an asynchronous launch may still be reading it."""
    dev = rt.device.get_device(device)
    entry = _CONSTANTS.get(dev.id)
    if entry is None or entry[0] is not dev:
        entry = _CONSTANTS[dev.id] = (dev, {})
        dev.reset_hooks.append(_drop_constants)
    arr = entry[1].get(key)
    if arr is None:
        arr = entry[1][key] = rt.to_device(build(), device=dev.id)
    return arr


def _drop_constants(dev) -> None:
    entry = _CONSTANTS.get(dev.id)
    if entry is not None and entry[0] is dev:
        del _CONSTANTS[dev.id]
        for arr in entry[1].values():
            arr.free()
