"""Reused host buffers for results handed back as numpy arrays (`host_empty`).

A kernel wrapper given numpy inputs returns a new numpy array. Allocated with `np.empty`, a large
result is a fresh anonymous mmap each call: glibc unmaps blocks above 32 MiB on free, so every
call pays one page fault per 4 KiB of its result again (about 4 ms for 64 MiB here, as much as
the kernel's own work on it). Like torch's caching host allocator, `host_empty` keeps the pages of
a result the program has dropped and hands them to the next result of the same size: the array
is a plain ndarray whose base is a lease; when the last view of it dies, the lease returns its
buffer to the cache. Contents are unspecified, as with `np.empty`.

Only results of at least `MIN_BYTES` go through the cache (smaller ones come from malloc's own
free lists cheaply), and it keeps at most `MAX_CACHED_BYTES` of idle buffers (`empty_host_cache`
drops them all). A buffer is in use by one array at a time, so reuse can never alias two live
results.
"""
from __future__ import annotations

import threading
from collections import deque

import numpy as np

MIN_BYTES = 1 << 20
MAX_CACHED_BYTES = 1 << 30
_PAGE = 4096

_lock = threading.Lock()
_idle: dict[int, list[np.ndarray]] = {}    # capacity in bytes -> idle uint8 buffers
_idle_bytes = 0
# buffers of dead leases not yet filed in _idle: a lease's __del__ only appends here (atomic, and
# allocates no object the GC tracks) and files them if _lock is free. It never waits for _lock:
# __del__ runs inside a GC pass, which an allocation made while this thread holds _lock can
# start (host_cache_stats' generator did), and a blocking acquire there deadlocks.
_returned: deque = deque()


class _Lease:
    """Owns one cached buffer while an array (and its views) uses it; gives it back on death."""

    __slots__ = ("buf", "__array_interface__")

    def __init__(self, buf: np.ndarray, shape: tuple, dtype: np.dtype):
        self.buf = buf
        self.__array_interface__ = {"data": (buf.ctypes.data, False), "shape": shape,
                                    "typestr": dtype.str, "descr": dtype.descr, "version": 3}

    def __del__(self):
        try:
            _give_back(self.buf)
        except Exception:       # interpreter shutdown: module globals may be gone
            pass


def _give_back(buf: np.ndarray) -> None:
    _returned.append(buf)
    if _lock.acquire(blocking=False):   # held (by this thread in a GC pass, or another): filed
        try:                            # by the next holder
            _file_returned()
        finally:
            _lock.release()


def _file_returned() -> None:
    """Move the buffers of dead leases into _idle (caller holds _lock)."""
    global _idle_bytes
    while True:
        try:
            buf = _returned.popleft()
        except IndexError:
            return
        if _idle_bytes + buf.nbytes > MAX_CACHED_BYTES:
            continue                        # dropped: freed with the last reference
        _idle.setdefault(buf.nbytes, []).append(buf)
        _idle_bytes += buf.nbytes


def _take(cap: int) -> np.ndarray | None:
    global _idle_bytes
    with _lock:
        _file_returned()
        bufs = _idle.get(cap)
        if not bufs:
            return None
        _idle_bytes -= cap
        return bufs.pop()


def host_empty(shape, dtype=np.float32) -> np.ndarray:
    """A C-contiguous numpy array of `shape`/`dtype` with unspecified contents (as `np.empty`),
    its pages already present: reused from a dropped result of the same size, or fresh and
    touched once here (one thread faulting them in, not the kernel's cores contending)."""
    dt = np.dtype(dtype)
    shape = tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    if any(s < 0 for s in shape):
        raise ValueError(f"rt.host_empty: shape must be non-negative, got shape={shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes < MIN_BYTES or dt.hasobject:
        return np.empty(shape, dt)
    cap = -(-nbytes // _PAGE) * _PAGE
    buf = _take(cap)
    if buf is None:
        buf = np.empty(cap, np.uint8)
        buf.fill(0)                         # fault the pages in on this one thread
    out = np.asarray(_Lease(buf, shape, dt))
    # an extension dtype (bfloat16) comes back from the array interface as raw bytes (|V2)
    return out if out.dtype == dt else out.view(dt)


def empty_host_cache() -> int:
    """Drop every idle cached buffer; returns the bytes released."""
    global _idle_bytes
    with _lock:
        _file_returned()
        freed, _idle_bytes = _idle_bytes, 0
        _idle.clear()
    return freed


def host_cache_stats() -> dict:
    """{"idle_bytes": bytes held for reuse, "idle_buffers": how many}."""
    with _lock:
        _file_returned()
        return {"idle_bytes": _idle_bytes, "idle_buffers": sum(len(v) for v in _idle.values())}
