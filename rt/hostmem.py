"""Pinned host memory (`aclrtMallocHost` / `aclrtFreeHost`).

Each buffer is its own anonymous mmap, page-locked with ``mlock`` where the OS allows (root or a
large enough ``ulimit -l``); it is tracked as pinned either way, which is what makes
``memcpy_async`` from it truly asynchronous.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import threading
from bisect import bisect_right, insort

import numpy as np

from . import device
from .errors import AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_MEMORY_FREE

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    _libc.mlock.argtypes = _libc.munlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
except (OSError, AttributeError):   # not Linux/glibc: tracked as pinned, not locked
    _libc = None


class HostPtr(int):
    """A pinned host address (an ``int``) with ``.size``, ``.locked`` (mlock succeeded) and
    ``.as_array(dtype, shape)`` (a numpy view of the buffer)."""

    def __repr__(self) -> str:
        return f"HostPtr(0x{int(self):x}, size={self.size}, locked={self.locked})"

    def as_array(self, dtype=np.uint8, shape=None) -> np.ndarray:
        rec = _regions.get(int(self))
        if rec is None:
            raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                           f"HostPtr.as_array: ptr must be live pinned memory, "
                           f"got ptr=0x{int(self):x}")
        a = rec[1][: self.size].view(dtype)
        return a if shape is None else a.reshape(shape)


_lock = threading.Lock()
_regions: dict[int, tuple] = {}     # start -> (size, uint8 view, mmap, locked)
_starts: list[int] = []


def any_pinned() -> bool:
    """Whether any pinned buffer is live (copies look a host address up only then)."""
    return bool(_starts)


def malloc_host(size: int) -> HostPtr:
    """Mirrors `aclrtMallocHost`: `size` bytes of page-locked host memory (not zeroed on hardware;
    zeroed here)."""
    device.check_init("malloc_host")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"rt.malloc_host: size must be > 0, got size={size!r}")
    mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    u8 = np.frombuffer(mm, dtype=np.uint8)
    addr = u8.ctypes.data
    locked = _libc is not None and _libc.mlock(addr, size) == 0
    p = int.__new__(HostPtr, addr)
    p.size, p.locked = size, locked
    with _lock:
        _regions[addr] = (size, u8, mm, locked)
        insort(_starts, addr)
    return p


def free_host(ptr: int) -> None:
    """Mirrors `aclrtFreeHost`. Freeing an unknown or already freed pointer raises 207002."""
    addr = int(ptr)
    with _lock:
        rec = _regions.pop(addr, None)
        if rec is None:
            raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                           f"rt.free_host: ptr must be a live address returned by malloc_host, "
                           f"got ptr=0x{addr:x} (double free or not pinned memory)")
        del _starts[bisect_right(_starts, addr) - 1]
    size, u8, mm, locked = rec
    if locked:
        _libc.munlock(addr, size)
    del u8
    try:
        mm.close()
    except BufferError:     # a numpy view is still alive: unmapped when it goes
        pass


def region(addr: int) -> tuple[int, int, np.ndarray] | None:
    """(start, size, uint8 view) of the live pinned buffer containing `addr`, or None."""
    i = bisect_right(_starts, addr) - 1
    if i < 0:
        return None
    try:
        start = _starts[i]
        size, u8, _, _ = _regions[start]
    except (IndexError, KeyError):
        return None
    return (start, size, u8) if addr < start + size else None


def is_pinned(host) -> bool:
    """Whether `host` (a HostPtr, an int address or a numpy array) lies in pinned memory."""
    if isinstance(host, np.ndarray):
        if host.nbytes == 0:
            return False
        host = host.ctypes.data
    elif not isinstance(host, int):
        return False
    return region(int(host)) is not None


def _free_all_for_tests() -> None:
    for addr in list(_regions):
        free_host(addr)


# -- raw host addresses --------------------------------------------------------------------------
_maps_cache: list = []              # sorted [(start, end, readable, writable)] of /proc/self/maps


def _read_maps() -> list | None:
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out = []
    for ln in lines:
        parts = ln.split(None, 2)
        if len(parts) < 2:
            continue
        lo, hi = parts[0].split("-")
        perms = parts[1]
        out.append((int(lo, 16), int(hi, 16), perms[0] == "r", perms[1] == "w"))
    return out


def _covered(maps: list, addr: int, nbytes: int, write: bool) -> bool:
    end, pos = addr + nbytes, addr
    i = bisect_right(maps, (addr, float("inf"))) - 1
    i = max(i, 0)
    while pos < end and i < len(maps):
        lo, hi, r, w = maps[i]
        if lo > pos:
            return False
        if hi > pos:
            if not r or (write and not w):
                return False
            pos = hi
        i += 1
    return pos >= end


def host_range_ok(addr: int, nbytes: int, write: bool) -> bool:
    """Whether ``[addr, addr + nbytes)`` is mapped in this process (and writable if `write`),
    per /proc/self/maps (re-read when the cached copy does not cover it). True where the maps
    cannot be read (not Linux): then the address is trusted, as the C API does. A pointer into
    freed memory that is still mapped (heap) cannot be told from a live one."""
    global _maps_cache
    if nbytes <= 0:
        return True
    if _maps_cache and _covered(_maps_cache, addr, nbytes, write):
        return True
    maps = _read_maps()
    if maps is None:
        return True
    _maps_cache = maps
    return _covered(maps, addr, nbytes, write)
