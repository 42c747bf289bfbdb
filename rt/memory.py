"""Device memory API: malloc/free, memset/memcpy, pool statistics, and the device-view backdoor.

Mirrors AscendCL's ``aclrtMalloc``/``aclrtFree``/``aclrtMemset``/``aclrtMemcpy``/``aclrtMemcpy2d``.
The pool itself is in ``rt.pool``, pinned host memory in ``rt.hostmem``, address checks and
mem-check in ``rt.memcheck``. All calls here are synchronous; the async variants are in ``rt.copy``
and build on :func:`prepare_copy` / :func:`prepare_memset`.

Operands of copies: a device address (``DevicePtr`` or int in a device's range), a ``DeviceArray``,
a pinned ``HostPtr``, a C-contiguous numpy array, a writable buffer (``bytearray``), or a raw host
address int (as ``acl.util.numpy_to_ptr`` gives; trusted, as the C API would).
"""
from __future__ import annotations

import ctypes
import enum
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import device as _dev
from . import hostmem
from . import sched
from .errors import (AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID,
                     ACL_ERROR_RT_MEMORY_FREE)
from .hostmem import HostPtr, malloc_host, free_host, is_pinned
from .memcheck import check_access, find_allocation, is_device_address
from .pool import ADDR_SHIFT, DevicePtr, MemMallocPolicy

_devices = _dev.DEVICES


class DeviceBuffer:
    """Base of typed device buffers (`rt.DeviceArray`): copies take one as an operand through its
    device address `ptr` and its size `nbytes`."""
    __slots__ = ()
    ptr: int
    nbytes: int


class MemcpyKind(enum.IntEnum):
    """Mirrors `aclrtMemcpyKind`."""
    HOST_TO_HOST = 0
    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3
    DEFAULT = 4
    HOST_TO_BUF_TO_DEVICE = 5
    INNER_DEVICE_TO_DEVICE = 6
    INTER_DEVICE_TO_DEVICE = 7


# kind -> (dst on device, src on device)
_SIDES = {0: (False, False), 1: (True, False), 2: (False, True), 3: (True, True),
          5: (True, False), 6: (True, True), 7: (True, True)}
_KIND_OF = {v: MemcpyKind(k) for k, v in _SIDES.items() if k < 4}
_KINDS = {**{int(k): k for k in MemcpyKind}, **{k: k for k in MemcpyKind}}


def malloc(size: int, policy: int = MemMallocPolicy.HUGE_FIRST) -> DevicePtr:
    """Mirrors `aclrtMalloc`: `size` bytes on the current device from the caching pool.

    Allocates ``align32(size) + 32`` bytes (`rt.pool.alloc_bytes`; kernels may reach all of
    them, host copies only `size`), 64-byte aligned; memory is not zeroed. OOM raises 207001
    (``ACL_ERROR_RT_MEMORY_ALLOCATION``) after one retry with the cache emptied.
    """
    if size.__class__ is not int and (not isinstance(size, int) or isinstance(size, bool)) \
            or size <= 0:
        raise AclError(ACL_ERROR_INVALID_PARAM, f"rt.malloc: size must be > 0, got size={size!r}")
    return _dev.get_device(api="rt.malloc").pool.malloc(size, policy)


# -- stream-ordered frees -------------------------------------------------------------------------
# allocation base -> {stream core: seq of the latest task queued on it that uses the allocation}
_uses: dict = {}
_deferred: set = set()              # bases freed by the user, waiting for queued work to pass
_uses_lock = threading.Lock()


def record_use(addrs, core, seq: int) -> None:
    """Note that task `seq` of stream `core` uses the allocations holding device addresses
    `addrs` (kernel launches and async copies call this), so a free waits for it."""
    with _uses_lock:
        for a in addrs:
            dev = _devices.get((a >> ADDR_SHIFT) - 0x100)
            if dev is None:
                continue
            blk = dev.pool.allocs.get(a)
            if blk is None:
                blk = dev.pool.block_at(a)
                if blk is None:
                    continue
            u = _uses.get(blk.addr)
            if u is None:
                _uses[blk.addr] = {core: seq}
            elif u.get(core, 0) < seq:
                u[core] = seq


def record_arrays(arrays, task) -> None:
    """`record_use` for the device arrays (None skipped) a queued task reads or writes."""
    addrs = []
    for a in arrays:
        try:
            addrs.append(int(a.ptr))
        except (AttributeError, AclError):      # None, or freed: the task fails on its own
            pass
    if addrs:
        record_use(addrs, task.core, task.seq)


def _pending_uses(base: int) -> list:
    with _uses_lock:
        u = _uses.pop(base, None)
    pending = [(c, s) for c, s in u.items() if c.completed < s] if u else []
    return pending + sched.queued_host_tasks((base >> ADDR_SHIFT) - 0x100)


def _free_after(pool, blk, serial: int, pending: list) -> None:
    """Free allocation `serial` (in `blk`) once every (stream core, seq) in `pending` is done."""
    base = blk.addr

    def release():
        with _uses_lock:
            _deferred.discard(base)
        try:
            pool.free_block(blk, serial)
        except Exception:   # noqa: BLE001 - the device was reset: the memory is gone already
            pass

    with _uses_lock:
        _deferred.add(base)
    if len(pending) == 1:               # the common case: one stream used it
        core, seq = pending[0]
        core.when_done(seq, release)
        return
    left = [len(pending)]
    lock = threading.Lock()

    def one_done():
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            release()

    for core, seq in pending:
        core.when_done(seq, one_done)


def free_block_ordered(pool, blk, serial: int) -> None:
    """Free allocation `serial` held in `blk` (a DeviceArray's), once the work queued on streams
    that uses it has run: the stream-ordered free of `free`."""
    if pool.allocs.get(blk.addr) is not blk or blk.serial != serial or blk.addr in _deferred:
        return
    pending = _pending_uses(blk.addr)
    if pending:
        _free_after(pool, blk, serial, pending)
    else:
        pool.free_block(blk, serial)


def free(ptr: int) -> None:
    """Mirrors `aclrtFree`. A double free or unknown pointer raises 207002 naming the pointer.

    Stream-ordered, like torch's caching allocator with `record_stream`: if kernels or async
    copies queued on streams still use the allocation, it goes back to the pool when the last of
    them has run (never to a new owner while queued work can still read or write it); the call
    itself returns at once."""
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        p = getattr(ptr, "ptr", None)       # a DeviceArray: free its memory
        if ptr is None or not isinstance(p, int):
            raise AclError(ACL_ERROR_INVALID_PARAM,
                           f"rt.free: ptr must be a device pointer returned by rt.malloc, got "
                           f"ptr={ptr!r}")
        ptr = p
    addr = int(ptr)
    dev = _devices.get((addr >> ADDR_SHIFT) - 0x100)
    if dev is None:
        _unknown_device(addr, "rt.free")
    blk = dev.pool.allocs.get(addr)
    if blk is not None and addr in _deferred:
        raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                       f"rt.free: ptr must be a live address returned by malloc, got "
                       f"ptr=0x{addr:x}: it was freed already (double free; the memory goes "
                       f"back to the pool when the work queued on it has run)")
    pending = _pending_uses(addr) if blk is not None else None
    if pending:
        _free_after(dev.pool, blk, blk.serial, pending)
        return
    dev.pool.free(addr, "rt.free")


def _unknown_device(addr: int, api: str) -> None:
    d = (addr >> ADDR_SHIFT) - 0x100
    why = (f"device {d} is not set (or was reset)" if 0 <= d < 0x100
           else "it is not a device address")
    raise AclError(ACL_ERROR_RT_MEMORY_FREE,
                   f"{api}: ptr must be a live address returned by malloc, "
                   f"got ptr=0x{addr:x}: {why}")


def device_view(ptr: int, nbytes: int, api: str = "rt.device_view",
                code: int = ACL_ERROR_RT_PARAM_INVALID) -> np.ndarray:
    """A writable uint8 numpy view of ``[ptr, ptr + nbytes)`` of device memory (emulator backdoor).

    The range must lie inside one live allocation, else `AclError(code)` (use after free is named
    as such). Kernels pass the AI Core trap codes as `code`.
    """
    dev = _devices.get((ptr >> ADDR_SHIFT) - 0x100)
    if dev is not None:
        blk = dev.pool.allocs.get(ptr)
        if blk is not None and 0 <= nbytes <= blk.req:
            off = ptr - dev.arena.base
            return dev.arena.u8[off:off + nbytes]
    return _checked_view(ptr, nbytes, api, code, "ptr")


def kernel_view(ptr: int, nbytes: int, api: str = "rt.kernel_view",
                code: int = ACL_ERROR_RT_PARAM_INVALID) -> np.ndarray:
    """What a kernel reaches through a GM argument of `nbytes` bytes at `ptr`: a writable uint8
    view from `ptr` to the end of its allocation (`rt.pool.alloc_bytes`: ``align32(size) + 32``
    for a malloc'd buffer; a mapped host buffer's registered bytes), at least `nbytes` long.
    ``[ptr, ptr + nbytes)`` must lie inside one live allocation (the checks of `device_view`)."""
    dev = _devices.get((ptr >> ADDR_SHIFT) - 0x100)
    if dev is not None:
        blk = dev.pool.allocs.get(ptr)
        if blk is not None and 0 <= nbytes <= blk.req:       # fast path: an allocation's base
            off = ptr - dev.arena.base
            return dev.arena.u8[off:off + blk.real]
    if hostmem.is_mapped_address(ptr):
        reg = hostmem.mapped_region(ptr)
        n = reg[0] + reg[1] - ptr if reg is not None else nbytes
        return hostmem.mapped_view(ptr, max(n, nbytes), api, code, "ptr")
    blk = check_access(ptr, nbytes, api, code, "ptr")
    dev = _devices[(ptr >> ADDR_SHIFT) - 0x100]
    off = int(ptr) - dev.arena.base
    return dev.arena.u8[off:off + max(nbytes, blk.addr + blk.real - int(ptr))]


def _checked_view(ptr: int, nbytes: int, api: str, code: int, role: str,
                  rounded: bool = False) -> np.ndarray:
    if hostmem.is_mapped_address(ptr):      # host memory mapped into the device (host_register)
        return hostmem.mapped_view(ptr, nbytes, api, code, role)
    check_access(ptr, nbytes, api, code, role, rounded)
    dev = _devices[(ptr >> ADDR_SHIFT) - 0x100]
    off = int(ptr) - dev.arena.base
    return dev.arena.u8[off:off + nbytes]


def _u8(a: np.ndarray, api: str, role: str) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: {role} array must be C-contiguous, got {role}.strides={a.strides}; "
                       f"use np.ascontiguousarray")
    return a.reshape(-1).view(np.uint8)


def _operand(x, nbytes: int, api: str, role: str, write: bool):
    """(on_device, uint8 view of nbytes, pinned) for a copy operand."""
    if isinstance(x, int) and not isinstance(x, bool):
        a = int(x)
        if 0x100 <= (a >> ADDR_SHIFT) < 0x200:
            dev = _devices.get((a >> ADDR_SHIFT) - 0x100)
            blk = dev.pool.allocs.get(a) if dev is not None else None
            if blk is not None and nbytes <= blk.req:           # fast path: an allocation's base
                off = a - dev.arena.base
                return True, dev.arena.u8[off:off + nbytes], False
            return True, _checked_view(a, nbytes, api, ACL_ERROR_RT_PARAM_INVALID, role,
                                       rounded=True), False
        if a <= 0:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: {role} must be a valid pointer, got {role}=0x{a:x}")
        reg = hostmem.region(a) if hostmem.any_pinned() else None
        if reg is not None:
            start, size, u8 = reg
            if a + nbytes > start + size:
                raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                               f"{api}: count must fit in the pinned buffer at 0x{start:x} (size "
                               f"{size}) from {role}=0x{a:x}, got count={nbytes}")
            return False, u8[a - start:a - start + nbytes], True
        if nbytes == 0:
            return False, np.empty(0, np.uint8), False
        if not hostmem.host_range_ok(a, nbytes, write):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: {role} must point to {'writable ' if write else ''}host "
                           f"memory of this process for count bytes, got {role}=0x{a:x}, "
                           f"count={nbytes}: not a mapped{' writable' if write else ''} range "
                           f"(not from numpy, rt.malloc_host or a device allocation)")
        buf = (ctypes.c_ubyte * nbytes).from_address(a)
        return False, np.frombuffer(buf, dtype=np.uint8), False
    if isinstance(x, np.ndarray):
        u8 = _u8(x, api, role)
        view, pinned = u8, None
    elif isinstance(x, (bytes, bytearray, memoryview)):
        view, pinned = np.frombuffer(x, dtype=np.uint8), False
    else:
        if not isinstance(x, DeviceBuffer):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: {role} must be a device pointer, DeviceArray, HostPtr, host "
                           f"address or numpy array, got {role}={type(x).__name__}")
        if nbytes > x.nbytes:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: count must be <= {role}.nbytes, got count={nbytes}, "
                           f"{role}.nbytes={x.nbytes}")
        return True, _checked_view(x.ptr, nbytes, api, ACL_ERROR_RT_PARAM_INVALID, role), False
    if nbytes > view.size:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: count must be <= {role}'s size in bytes, got count={nbytes}, "
                       f"{role} size={view.size}")
    if write and not view.flags.writeable:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID, f"{api}: {role} must be writable, got a "
                                                   f"read-only {type(x).__name__}")
    if pinned is None:
        pinned = hostmem.any_pinned() and view.size > 0 and \
            hostmem.region(view.ctypes.data) is not None
    return False, view[:nbytes], pinned


def _where(on_dev: bool) -> str:
    return "device" if on_dev else "host"


def _check_kind(kind, dst_dev: bool, src_dev: bool, api: str) -> MemcpyKind:
    k = _KINDS.get(kind) if isinstance(kind, int) else None
    if k is None:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: kind must be a MemcpyKind in [0, 7], got kind={kind!r}")
    kind = k
    if kind == 4:
        return _KIND_OF[(dst_dev, src_dev)]
    if _SIDES[kind] != (dst_dev, src_dev):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: kind must match where the pointers live, got kind={kind.name} with "
                       f"dst on {_where(dst_dev)}, src on {_where(src_dev)}; use "
                       f"MemcpyKind.{_KIND_OF[(dst_dev, src_dev)].name} or DEFAULT")
    return kind


class CopyPlan:
    """A validated copy or memset: ``run()`` does it. ``kind`` is the resolved direction,
    ``nbytes`` the byte count, ``pageable`` True when a host side is not pinned (so an async copy
    must complete before returning), ``device_ranges`` [(addr, nbytes, "r"|"w")] for race checks."""
    __slots__ = ("dst", "src", "value", "nbytes", "kind", "pageable", "device_ranges")

    def run(self) -> None:
        if self.src is None:
            self.dst.fill(self.value)
        elif self.nbytes:
            np.copyto(self.dst, self.src)


def _ranges(dst, dst_dev, src, src_dev, nbytes):
    out = []
    for x, on, mode in ((dst, dst_dev, "w"), (src, src_dev, "r")):
        if on and x is not None:
            out.append((int(x.ptr if hasattr(x, "ptr") else x), nbytes, mode))
    return out


def prepare_copy(dst, src, count: int, kind, api: str = "rt.memcpy") -> CopyPlan:
    """Validate a 1-D copy of `count` bytes and return its `CopyPlan` (nothing copied yet)."""
    if not isinstance(count, int) or count < 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: count must be >= 0, got count={count!r}")
    dst_dev, d, dst_pin = _operand(dst, count, api, "dst", True)
    src_dev, s, src_pin = _operand(src, count, api, "src", False)
    plan = CopyPlan()
    plan.kind = _check_kind(kind, dst_dev, src_dev, api)
    plan.dst, plan.src, plan.value, plan.nbytes = d, s, 0, count
    plan.pageable = (not dst_dev and not dst_pin) or (not src_dev and not src_pin)
    plan.device_ranges = _ranges(dst, dst_dev, src, src_dev, count)
    return plan


def copy_bytes(dst, src, count: int, kind=MemcpyKind.DEFAULT, api: str = "rt.memcpy") -> None:
    """Copy `count` bytes now (the synchronous core of `memcpy` and of `rt.copy`'s async copies)."""
    prepare_copy(dst, src, count, kind, api).run()


def memcpy(dst, src, count: int, kind=MemcpyKind.DEFAULT) -> None:
    """Mirrors `aclrtMemcpy(dst, destMax, src, count, kind)` (destMax is the facade's business:
    `count` may not exceed the destination's allocation). `kind` must match the pointers;
    ``DEFAULT`` infers it. Synchronous."""
    prepare_copy(dst, src, count, kind, "rt.memcpy").run()


def prepare_memset(ptr, max_count: int, value: int, count: int, api: str = "rt.memset") -> CopyPlan:
    """Validate a memset and return its `CopyPlan`."""
    if (not isinstance(count, int) or not isinstance(max_count, int) or count < 0
            or count > max_count):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: count must be in [0, max_count], got count={count!r}, "
                       f"max_count={max_count!r}")
    if not isinstance(value, int) or not 0 <= value <= 255:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: value must be a byte value in [0, 255], got value={value!r}")
    on_dev, view, pinned = _operand(ptr, count, api, "dst", True)
    plan = CopyPlan()
    plan.dst, plan.src, plan.value, plan.nbytes = view, None, value, count
    plan.kind = MemcpyKind.DEVICE_TO_DEVICE if on_dev else MemcpyKind.HOST_TO_HOST
    plan.pageable = not on_dev and not pinned
    plan.device_ranges = _ranges(ptr, on_dev, None, False, count)
    return plan


def memset(ptr, max_count: int, value: int, count: int) -> None:
    """Mirrors `aclrtMemset(devPtr, maxCount, value, count)`: set `count` bytes to byte `value`.
    Synchronous."""
    prepare_memset(ptr, max_count, value, count).run()


def prepare_copy_2d(dst, dpitch: int, src, spitch: int, width: int, height: int, kind,
                    api: str = "rt.memcpy_2d") -> CopyPlan:
    """Validate a pitched copy of `height` rows of `width` bytes and return its `CopyPlan`."""
    for name, v in (("dpitch", dpitch), ("spitch", spitch), ("width", width), ("height", height)):
        if not isinstance(v, int) or v < 0:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"{api}: {name} must be >= 0, got {name}={v!r}")
    if width > dpitch or width > spitch:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: width must be <= dpitch and <= spitch, got width={width}, "
                       f"dpitch={dpitch}, spitch={spitch}")
    dn = dpitch * (height - 1) + width if height and width else 0
    sn = spitch * (height - 1) + width if height and width else 0
    dst_dev, d, dst_pin = _operand(dst, dn, api, "dst", True)
    src_dev, s, src_pin = _operand(src, sn, api, "src", False)
    plan = CopyPlan()
    plan.kind = _check_kind(kind, dst_dev, src_dev, api)
    if dn:
        d = as_strided(d, (height, width), (dpitch, 1))
        s = as_strided(s, (height, width), (spitch, 1), writeable=False)
    plan.dst, plan.src, plan.value, plan.nbytes = d, s, 0, width * height
    plan.pageable = (not dst_dev and not dst_pin) or (not src_dev and not src_pin)
    plan.device_ranges = [(int(x.ptr if hasattr(x, "ptr") else x), n, m)
                          for x, on, n, m in ((dst, dst_dev, dn, "w"), (src, src_dev, sn, "r"))
                          if on]
    return plan


def memcpy_2d(dst, dpitch: int, src, spitch: int, width: int, height: int, kind) -> None:
    """Mirrors `aclrtMemcpy2d`: copy `height` rows of `width` bytes between pitched buffers."""
    prepare_copy_2d(dst, dpitch, src, spitch, width, height, kind).run()


def memory_stats(device: int | None = None) -> dict:
    """Like ``torch.cuda.memory_stats``: the caching pool's counters for `device` (default current).

    Keys: ``allocated_bytes.all.{current,peak,allocated,freed}``, ``reserved_bytes.all.*``,
    ``active_bytes.all.*``, ``allocation.all.*``, ``segment.all.*``,
    ``requested_bytes.all.current``, ``num_alloc_retries``, ``num_ooms``."""
    return _dev.get_device(device, api="rt.memory_stats").pool.stats()


def empty_cache(device: int | None = None) -> int:
    """Like ``torch.cuda.empty_cache``: give fully free cached segments (and mem-check's quarantine)
    back to the device; returns the bytes released."""
    return _dev.get_device(device, api="rt.empty_cache").pool.empty_cache()


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def memory_summary(device: int | None = None) -> str:
    """Like ``torch.cuda.memory_summary``: a text table of `memory_stats` for `device`."""
    dev = _dev.get_device(device, api="rt.memory_summary")
    st = dev.pool.stats()
    rows = [("Allocated memory", "allocated_bytes", _fmt), ("Active memory", "active_bytes", _fmt),
            ("Reserved memory", "reserved_bytes", _fmt), ("Allocations", "allocation", str),
            ("Segments", "segment", str)]
    w = 77
    lines = ["=" * w, f" rt memory summary, device {dev.id} ({dev.soc.name}), capacity "
             f"{_fmt(dev.arena.capacity)}, mem-check "
             f"{'on' if dev.pool.quarantine is not None else 'off'}",
             "-" * w, f" {'Metric':<18}|{'Cur Usage':>14} |{'Peak Usage':>14} |{'Tot Alloc':>12} |"
             f"{'Tot Freed':>12}", "-" * w]
    for label, key, f in rows:
        lines.append(f" {label:<18}|{f(st[key + '.all.current']):>14} |"
                     f"{f(st[key + '.all.peak']):>14} |"
                     f"{f(st[key + '.all.allocated']):>12} |{f(st[key + '.all.freed']):>12}")
    cached = st["reserved_bytes.all.current"] - st["allocated_bytes.all.current"]
    lines += ["-" * w, f" Cached (free in pool): {_fmt(cached)}   Requested: "
              f"{_fmt(st['requested_bytes.all.current'])}   OOMs: {st['num_ooms']}   "
              f"Alloc retries: {st['num_alloc_retries']}", "=" * w]
    return "\n".join(lines)


__all__ = ["DeviceBuffer", "DevicePtr", "HostPtr", "MemMallocPolicy", "MemcpyKind", "malloc",
           "free", "malloc_host", "free_host", "memset", "memcpy", "memcpy_2d", "memory_stats",
           "memory_summary", "empty_cache", "device_view", "kernel_view", "find_allocation",
           "is_device_address", "is_pinned", "copy_bytes", "prepare_copy", "prepare_memset",
           "prepare_copy_2d", "CopyPlan"]
