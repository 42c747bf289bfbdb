"""Pinned host memory (`aclrtMallocHost` / `aclrtFreeHost`) and host memory mapped into a
device's address space (`aclrtHostRegister` / `aclrtHostUnregister`).

Each pinned buffer is its own anonymous mmap, page-locked with ``mlock`` where the OS allows (root
or a large enough ``ulimit -l``); it is tracked as pinned either way, which is what makes
``memcpy_async`` from it truly asynchronous.

A *mapped* host buffer (`host_register`) gets a device address in the top half of its device's
address range (`MAPPED_WINDOW`, above any arena): a kernel given that address reads and writes the
host buffer itself, with the same bounds as an allocation of its size (`mapped_view`). A read-only
registration hands out read-only views. Fidelity: as with aclrtHostRegister, the kernel works on
the host memory in place (no copy in or back); the registration must outlive the work using it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import threading
from bisect import bisect_right, insort

import numpy as np

from . import device
from .errors import (AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_MEMORY_FREE,
                     ACL_ERROR_RT_PARAM_INVALID)
from .pool import ADDR_SHIFT, device_base

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


def host_range_ok(addr: int, nbytes: int, write: bool, fresh: bool = False) -> bool:
    """Whether ``[addr, addr + nbytes)`` is mapped in this process (and writable if `write`),
    per /proc/self/maps (re-read when the cached copy does not cover it, or always with
    `fresh`: a cached mapping may have been unmapped since). True where the maps cannot be read
    (not Linux): then the address is trusted, as the C API does. A pointer into freed memory that
    is still mapped (heap) cannot be told from a live one."""
    global _maps_cache
    if nbytes <= 0:
        return True
    if not fresh and _maps_cache and _covered(_maps_cache, addr, nbytes, write):
        return True
    maps = _read_maps()
    if maps is None:
        return True
    _maps_cache = maps
    return _covered(maps, addr, nbytes, write)


# -- host memory mapped into a device's address space (aclrtHostRegister) -----------------------
#: Offset of the mapped-host window inside each device's address range: above any arena (a
#: device's HBM is far below 2**39 bytes), so a mapped address never meets an allocation.
MAPPED_WINDOW = 1 << (ADDR_SHIFT - 1)
_MAP_ALIGN = 64                     # like malloc's blocks: every mapped address is 64-byte aligned
_mapped: dict[int, tuple] = {}      # device address -> (nbytes, uint8 view of the host buffer)
_mapped_starts: list[int] = []


def is_mapped_address(addr) -> bool:
    """Whether `addr` lies in some device's mapped-host window (registered or not)."""
    return isinstance(addr, int) and 0x100 <= (int(addr) >> ADDR_SHIFT) < 0x200 and \
        bool(int(addr) & MAPPED_WINDOW)


def host_register(ary: np.ndarray, device_id: int, write: bool = True) -> int:
    """Mirrors `aclrtHostRegister` + `aclrtHostGetDevicePointer`: map the C-contiguous host array
    `ary` into device `device_id`'s address space and return its device address. With
    `write=False` views of it are read-only (a read-only `ary` must be registered so)."""
    if not isinstance(ary, np.ndarray) or not ary.flags.c_contiguous:
        got = f"strides={ary.strides}" if isinstance(ary, np.ndarray) else \
            f"ary={type(ary).__name__}"
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"rt.host_register: ary must be a C-contiguous numpy array, got {got}")
    if write and not ary.flags.writeable:
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       "rt.host_register: ary must be writable for a writable mapping, got a "
                       "read-only array (register it with write=False)")
    u8 = ary.reshape(-1).view(np.uint8)
    if not write:
        u8 = u8.view()
        u8.flags.writeable = False
    lo = device_base(device_id) + MAPPED_WINDOW
    need = max(_MAP_ALIGN, -(-u8.size // _MAP_ALIGN) * _MAP_ALIGN)
    with _lock:
        addr = lo                                       # first fit in the window
        for start in _mapped_starts[bisect_right(_mapped_starts, lo - 1):]:
            if start >= addr + need or start >> ADDR_SHIFT != lo >> ADDR_SHIFT:
                break
            n = _mapped[start][0]
            addr = max(addr, start + max(_MAP_ALIGN, -(-n // _MAP_ALIGN) * _MAP_ALIGN))
        _mapped[addr] = (u8.size, u8)
        insort(_mapped_starts, addr)
    return addr


def host_unregister(addr: int) -> None:
    """Mirrors `aclrtHostUnregister`: the mapping at device address `addr` ends (later kernel
    accesses through it fail as accesses to unmapped device memory)."""
    with _lock:
        if _mapped.pop(int(addr), None) is None:
            raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                           f"rt.host_unregister: addr must be a live mapped address returned by "
                           f"host_register, got addr=0x{int(addr):x} (unregistered twice?)")
        del _mapped_starts[bisect_right(_mapped_starts, int(addr)) - 1]


def mapped_region(addr: int) -> tuple[int, int, np.ndarray] | None:
    """(device address, nbytes, uint8 host view) of the live mapping containing `addr`, or None
    (an address in the 64-byte padding after a mapping is in none)."""
    i = bisect_right(_mapped_starts, addr) - 1
    if i < 0:
        return None
    try:
        start = _mapped_starts[i]
        n, u8 = _mapped[start]
    except (IndexError, KeyError):
        return None
    return (start, n, u8) if addr < start + max(n, 1) else None


def mapped_view(addr: int, nbytes: int, api: str = "rt.device_view",
                code: int = ACL_ERROR_RT_PARAM_INVALID, role: str = "ptr") -> np.ndarray:
    """The uint8 host view of ``[addr, addr + nbytes)`` of mapped host memory; AclError(code)
    unless the range lies inside one live mapping (the bounds an allocation of that size has)."""
    addr, nbytes = int(addr), int(nbytes)
    reg = mapped_region(addr)
    head = (f"{api}: {role} range must lie inside one live allocation, got {role}=0x{addr:x}, "
            f"nbytes={nbytes}")
    if reg is None:
        raise AclError(code, f"{head}: it is in the mapped-host window but inside no live "
                             f"mapping (unregistered host memory?)")
    start, n, u8 = reg
    if nbytes < 0 or addr + nbytes > start + n:
        raise AclError(code, f"{head}: it overruns the mapped host buffer at 0x{start:x} (size "
                             f"{n}) by {addr + nbytes - start - n} bytes")
    return u8[addr - start:addr - start + nbytes]


def _unregister_for_tests() -> None:
    for addr in list(_mapped):
        host_unregister(addr)
