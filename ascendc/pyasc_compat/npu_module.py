"""`torch.npu` / `torch_npu.npu`: the device module of the emulated "npu" device.

What pyasc scripts and their test harnesses call on it, over `rt` (docs/torch-npu.md lists it):
devices (`is_available`, `device_count`, `current_device`, `set_device`, `device(i)`), streams
and events (`current_stream`, `default_stream`, `Stream`, `Event`, `stream(s)`, `synchronize`),
memory statistics as torch_npu's caching allocator counts them (`memory_allocated`,
`max_memory_allocated`, `memory_reserved`, `max_memory_reserved`, `reset_peak_memory_stats`,
`memory_stats`, `empty_cache`), device facts (`get_device_name`, `get_device_properties`,
`get_soc_version`) and `utils` (the same functions, as `torch_npu.npu.utils` has them).

A stream is an `rt.Stream` (kernels launch on it: `kernel[n, torch.npu.current_stream()]`); an
event an `rt.Event` with torch's `enable_timing` / `wait(stream)` spellings.
"""
from __future__ import annotations

import contextlib
import threading
import types
from dataclasses import dataclass

import rt as _rt

_lock = threading.Lock()


class _Stats:
    """torch_npu allocator counters: bytes of live tensor blocks and of live segments."""

    def __init__(self):
        self.allocated = self.peak_allocated = 0
        self.reserved = self.peak_reserved = 0
        self.allocations = self.segments = 0

    def add(self, attr: str, n: int) -> None:
        with _lock:
            setattr(self, attr, getattr(self, attr) + n)
            self.peak_allocated = max(self.peak_allocated, self.allocated)
            self.peak_reserved = max(self.peak_reserved, self.reserved)


stats = _Stats()


def sync() -> None:
    """Wait for the current device's queued work (nothing to wait for without a device)."""
    try:
        _rt.current_device()
    except _rt.AclError:
        return
    _rt.synchronize_device()


def _index(device) -> int:
    if device is None:
        return current_device()
    if isinstance(device, str):
        device = device.split(":")[1] if ":" in device else 0
    idx = getattr(device, "index", device)
    return current_device() if idx is None else int(idx)


# -- devices ------------------------------------------------------------------------------------
def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    _rt.ensure_device()


def _count() -> int:
    """The device count, initialising the runtime (and device 0) on first use as torch_npu
    does."""
    try:
        return _rt.device_count()
    except _rt.AclError:
        _rt.ensure_device()
        return _rt.device_count()


def device_count() -> int:
    return _count()


def current_device() -> int:
    _rt.ensure_device()
    return _rt.current_device()


def set_device(device) -> None:
    idx = _index(device) if device is not None else 0
    if not 0 <= idx < _count():
        raise RuntimeError(f"torch.npu.set_device: device must be in [0, {_count()}), "
                           f"got device={device!r}")
    _rt.set_device(idx)


@contextlib.contextmanager
def device(dev):
    """`with torch.npu.device(i):` selects device i for the block."""
    prev = current_device()
    set_device(dev)
    try:
        yield
    finally:
        set_device(prev)


def synchronize(device=None) -> None:
    sync()


def get_device_name(device=None) -> str:
    _index(device)
    return _rt.get_soc_name()


def get_soc_version() -> str:
    _rt.ensure_device()
    return _rt.get_soc_name()


@dataclass(frozen=True)
class NpuDeviceProperties:
    name: str
    total_memory: int
    cube_core_num: int
    vector_core_num: int


def get_device_properties(device=None) -> NpuDeviceProperties:
    idx = _index(device)
    return NpuDeviceProperties(
        name=_rt.get_soc_name(), total_memory=_rt.get_mem_info()[1],
        cube_core_num=_rt.get_device_info(idx, _rt.DevAttr.CUBE_CORE_NUM),
        vector_core_num=_rt.get_device_info(idx, _rt.DevAttr.VECTOR_CORE_NUM))


def manual_seed(seed: int) -> None:
    """torch's generators are the CPU's here (tensors are made on the CPU, then copied)."""
    import torch
    torch.manual_seed(seed)


manual_seed_all = manual_seed


def _is_in_bad_fork() -> bool:
    return False


# -- streams and events -------------------------------------------------------------------------
class Stream(_rt.Stream):
    """`torch.npu.Stream(device=None, priority=0)`: an `rt.Stream` with torch's methods."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if device is not None:
            set_device(device)
        super().__init__(max(0, int(priority)))

    def wait_stream(self, other) -> None:
        ev = _rt.Event()
        ev.record(other)
        self.wait_event(ev)


def current_stream(device=None) -> _rt.Stream:
    _index(device)
    return _rt.current_stream()


def default_stream(device=None) -> _rt.Stream:
    return _rt.default_stream(_index(device))


def set_stream(s) -> None:
    raise NotImplementedError("torch.npu.set_stream is not supported by ascend-emu: use "
                              "`with torch.npu.stream(s):`")


def stream(s):
    """`with torch.npu.stream(s):` makes `s` the current stream (an rt.Stream is its own
    context manager)."""
    return s if s is not None else contextlib.nullcontext()


class Event(_rt.Event):
    """`torch.npu.Event(enable_timing=False, blocking=False)`: an `rt.Event` with torch's
    spellings (`wait(stream)`, `record(stream=None)`)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        super().__init__()
        self.enable_timing = bool(enable_timing)

    def wait(self, stream=None) -> None:
        (stream or _rt.current_stream()).wait_event(self)


# -- memory -------------------------------------------------------------------------------------
def memory_allocated(device=None) -> int:
    return stats.allocated


def max_memory_allocated(device=None) -> int:
    return stats.peak_allocated


def memory_reserved(device=None) -> int:
    return stats.reserved


def max_memory_reserved(device=None) -> int:
    return stats.peak_reserved


def reset_peak_memory_stats(device=None) -> None:
    with _lock:
        stats.peak_allocated, stats.peak_reserved = stats.allocated, stats.reserved


reset_max_memory_allocated = reset_peak_memory_stats


def memory_stats(device=None) -> dict:
    return {"allocated_bytes.all.current": stats.allocated,
            "allocated_bytes.all.peak": stats.peak_allocated,
            "reserved_bytes.all.current": stats.reserved,
            "reserved_bytes.all.peak": stats.peak_reserved,
            "allocation.all.current": stats.allocations,
            "segment.all.current": stats.segments}


def empty_cache() -> None:
    """Segments are freed with their last tensor here (nothing is cached to give back)."""
    sync()


NAMES = ("is_available", "is_initialized", "init", "device_count", "current_device",
         "set_device", "device", "synchronize", "get_device_name", "get_soc_version",
         "get_device_properties", "manual_seed", "manual_seed_all", "Stream", "current_stream",
         "default_stream", "set_stream", "stream", "Event", "memory_allocated",
         "max_memory_allocated", "memory_reserved", "max_memory_reserved",
         "reset_peak_memory_stats", "reset_max_memory_allocated", "memory_stats", "empty_cache")


def make_module(name: str = "torch.npu") -> types.ModuleType:
    """A module holding the functions above (and `utils`, the same set); torch's backend
    registration needs `_is_in_bad_fork` as well."""
    g = globals()
    mod = types.ModuleType(name, __doc__)
    utils = types.ModuleType(name + ".utils", "torch_npu.npu.utils on ascend-emu")
    for n in NAMES:
        setattr(mod, n, g[n])
        setattr(utils, n, g[n])
    mod._is_in_bad_fork = _is_in_bad_fork
    mod.utils = utils
    mod.__ascend_emu__ = True
    return mod


__all__ = ["make_module", "stats", "sync", *NAMES]
