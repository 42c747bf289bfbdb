"""Device address checks, and the mem-check mode's use-after-free detection.

With ``ASCEND_MEM_CHECK=1`` (read when a device is set) a freed block is *quarantined*: it is not
reused until the quarantine holds more than 1/8 of the device's memory (or 4096 blocks), or until
``empty_cache``/an allocation that would otherwise fail releases it. An access to a quarantined
block (``device_view``, ``memcpy``/``memset``, a kernel launch's arguments) raises ``AclError``
saying "use after free" with the pointer and where it was freed; freeing it again is a double free
naming the first free. Without mem-check, the same accesses are still refused (the block is not a
live allocation), but the message cannot say where it was freed once the memory is reused.

The other half of mem-check, with ``ASCEND_MEM_CHECK=1`` read at each call: cross-stream race
detection with vector clocks, a `rt.sched.StreamHook` (`RaceDetector`). Each stream has a clock
(stream id -> epoch); every submitted task ticks its stream's entry and merges the host's clock (the
host orders what it submits after what it has synchronized). An event record captures the stream's
clock, `wait_event` merges it in, and a host synchronize merges the stream's (or event's) clock into
the host's. An access to an allocation races with the last one from another stream unless that
access's epoch is covered by the accessing stream's clock.
"""
from __future__ import annotations

import os
import threading

from . import device as _dev
from . import sched
from .errors import AclError, ACL_ERROR_RT_PARAM_INVALID
from .pool import ADDR_SHIFT, DevicePtr, LIVE, QUARANTINED, Block


def enabled(device: int | None = None) -> bool:
    """Whether mem-check is on for `device` (default: the current device)."""
    return _dev.get_device(device, api="memcheck.enabled").pool.quarantine is not None


def device_of(addr: int) -> int | None:
    """The device id whose address range holds `addr`, or None for a host address."""
    d = (int(addr) >> ADDR_SHIFT) - 0x100
    return d if 0 <= d < 0x100 else None


def is_device_address(addr) -> bool:
    """Whether `addr` is in some device's address range (allocated or not)."""
    return isinstance(addr, int) and 0x100 <= (int(addr) >> ADDR_SHIFT) < 0x200


def device_address(obj) -> int | None:
    """The device address held by a DeviceArray / DevicePtr / device-range int, else None."""
    ptr = getattr(obj, "ptr", None) if not isinstance(obj, int) else obj
    if ptr is None or isinstance(ptr, bool) or not isinstance(ptr, int):
        return None
    return int(ptr) if is_device_address(int(ptr)) else None


def find_allocation(addr: int) -> tuple[DevicePtr, int] | None:
    """``(base, size)`` of the live allocation containing device address `addr`, or None."""
    addr = int(addr)
    dev = _dev.DEVICES.get((addr >> ADDR_SHIFT) - 0x100)
    if dev is None:
        return None
    blk = dev.pool.block_at(addr)
    if blk is None or blk.state != LIVE or addr >= blk.addr + blk.req:
        return None
    p = int.__new__(DevicePtr, blk.addr)
    p.device, p.size = dev.id, blk.req
    return p, blk.req


def locate(addr: int) -> Block | None:
    """The block (live, free or quarantined) containing device address `addr`, or None."""
    d = device_of(addr)
    dev = _dev.DEVICES.get(d) if d is not None else None
    return dev.pool.block_at(int(addr)) if dev is not None else None


def check_access(addr: int, nbytes: int, api: str, code: int = ACL_ERROR_RT_PARAM_INVALID,
                 role: str = "ptr", rounded: bool = False) -> Block:
    """Raise `AclError(code)` unless ``[addr, addr + nbytes)`` lies in one live allocation: its
    requested size, or with `rounded` the allocation as CANN rounds it (``align32(size) + 32``,
    what the host copy APIs check a count against).

    Returns the live block. The message names the API, the pointer, and why: use after free (with
    where it was freed, under mem-check), an overrun (by how many bytes), free memory, an unset
    device or a host address. Launch passes the AI Core trap codes as `code`.
    """
    addr, nbytes = int(addr), int(nbytes)
    head = f"{api}: {role} range must lie inside one live allocation, got {role}=0x{addr:x}, " \
           f"nbytes={nbytes}"
    if nbytes < 0:
        raise AclError(code, f"{api}: nbytes must be >= 0, got nbytes={nbytes}")
    d = device_of(addr)
    if d is None:
        raise AclError(code, f"{head}: it is a host address, not a device address")
    dev = _dev.DEVICES.get(d)
    if dev is None:
        raise AclError(code, f"{head}: device {d} is not set (or was reset); "
                             f"call rt.set_device({d}) and allocate first")
    blk = dev.pool.block_at(addr)
    if blk is None:
        raise AclError(code, f"{head}: it is not inside any allocation of device {d}")
    if blk.state == QUARANTINED:
        raise AclError(code, f"{head}: use after free: the allocation at 0x{blk.addr:x} "
                             f"(size {blk.req}) was freed at {blk.freed_where}")
    if blk.state != LIVE:
        hint = "" if dev.pool.quarantine is not None else " set ASCEND_MEM_CHECK=1 to find out"
        raise AclError(code, f"{head}: it points into free memory (use after free?{hint})")
    size = blk.real if rounded else blk.req
    end = blk.addr + size
    what = f"(size {blk.req}, {blk.real} bytes as allocated)" if rounded else f"(size {blk.req})"
    if addr >= end:
        raise AclError(code, f"{head}: it lies in the 32-byte padding after the allocation at "
                             f"0x{blk.addr:x} {what}")
    if addr + nbytes > end:
        raise AclError(code, f"{head}: it overruns the allocation at 0x{blk.addr:x} {what} by "
                             f"{addr + nbytes - end} bytes")
    return blk


# -- races between streams ----------------------------------------------------------------------
def races_enabled() -> bool:
    """Whether the race detector runs (``ASCEND_MEM_CHECK=1``, read at each call)."""
    return os.environ.get("ASCEND_MEM_CHECK") == "1"


def _merge(dst: dict, src: dict | None) -> None:
    if src:
        for k, v in src.items():
            if dst.get(k, 0) < v:
                dst[k] = v


class RaceDetector(sched.StreamHook):
    """Vector clocks over streams, events and the host; refuses a task whose device buffer access
    is not ordered after another stream's last conflicting access (`AclError` 107000)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.host_clock: dict = {}
        # allocation base -> [last write (sid, epoch, what) | None, {sid: (epoch, what) of reads}]
        self.shadow: dict = {}

    def submitted(self, core, task, accesses) -> None:
        """Check every access of `task` first and record them only if all pass: a refused task
        (it raises here, so it never runs) leaves no trace that could flag later work."""
        if not races_enabled():
            return
        with self.lock:
            vc = dict(core.clock) if core.clock is not None else {}
            _merge(vc, self.host_clock)
            epoch = vc[core.id] = vc.get(core.id, 0) + 1
            plan = []
            for addr, is_write in accesses or ():
                plan.append(self._check(core.id, vc, addr, is_write, task))
            core.clock = vc
            what = f"{task.kind} {task.name!r}"
            for base, is_write in plan:
                rec = self.shadow.get(base)
                if is_write or rec is None:
                    rec = self.shadow[base] = [None, {}]
                if is_write:
                    rec[0] = (core.id, epoch, what)
                else:
                    rec[1][core.id] = (epoch, what)

    def _check(self, sid, vc, addr, is_write, task) -> tuple:
        """(allocation base, is_write) of an access, after checking it is ordered after the last
        conflicting access of another stream (a read conflicts with a write, a write with both)."""
        found = find_allocation(addr)
        base = int(found[0]) if found else int(addr)
        rec = self.shadow.get(base)
        if rec is not None:
            last_w, reads = rec
            others = [last_w] if last_w is not None else []
            if is_write:
                others += [(s, e, w) for s, (e, w) in reads.items()]
            for other_sid, other_epoch, other_what in others:
                if other_sid != sid and vc.get(other_sid, 0) < other_epoch:
                    what = f"{task.kind} {task.name!r}"
                    raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                                   f"mem-check: access to buffer {addr:#x} (allocation {base:#x}) "
                                   f"must be ordered after stream {other_sid}'s {other_what}, "
                                   f"got stream {sid}'s {what} with no event or synchronize in "
                                   f"between; record an event on stream {other_sid} and "
                                   f"wait_event it on stream {sid}")
        return base, is_write

    def recorded(self, core, event) -> None:
        if not races_enabled():
            return
        with self.lock:
            vc = dict(core.clock or {})
            _merge(vc, self.host_clock)
            event.clock = vc

    def waited(self, core, event) -> None:
        if not races_enabled():
            return
        with self.lock:
            if core.clock is None:
                core.clock = {}
            _merge(core.clock, event.clock)

    def host_waited(self, obj) -> None:
        if races_enabled() and obj.clock:
            with self.lock:
                _merge(self.host_clock, obj.clock)

    def device_reset(self, device_id: int) -> None:
        """Drop the access history of a device's allocations."""
        lo = (0x100 + device_id) << ADDR_SHIFT
        with self.lock:
            for base in [b for b in self.shadow if lo <= b < lo + (1 << ADDR_SHIFT)]:
                del self.shadow[base]


#: The race detector, registered with the streams' hooks.
races = sched.add_hook(RaceDetector())
