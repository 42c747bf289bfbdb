"""Device address checks, and the mem-check mode's use-after-free detection.

With ``ASCEND_MEM_CHECK=1`` (read when a device is set) a freed block is *quarantined*: it is not
reused until the quarantine holds more than 1/8 of the device's memory (or 4096 blocks), or until
``empty_cache``/an allocation that would otherwise fail releases it. An access to a quarantined
block (``device_view``, ``memcpy``/``memset``, a kernel launch's arguments) raises ``AclError``
saying "use after free" with the pointer and where it was freed; freeing it again is a double free
naming the first free. Without mem-check, the same accesses are still refused (the block is not a
live allocation), but the message cannot say where it was freed once the memory is reused.

(Cross-stream race detection, the other half of mem-check, lives with the streams.)
"""
from __future__ import annotations

from . import device as _dev
from .errors import AclError, ACL_ERROR_RT_PARAM_INVALID
from .pool import ADDR_SHIFT, LIVE, QUARANTINED, Block


def enabled(device: int | None = None) -> bool:
    """Whether mem-check is on for `device` (default: the current device)."""
    return _dev.get_device(device, api="memcheck.enabled").pool.quarantine is not None


def device_of(addr: int) -> int | None:
    """The device id whose address range holds `addr`, or None for a host address."""
    d = (int(addr) >> ADDR_SHIFT) - 0x100
    return d if 0 <= d < 0x100 else None


def locate(addr: int) -> Block | None:
    """The block (live, free or quarantined) containing device address `addr`, or None."""
    d = device_of(addr)
    dev = _dev._devices.get(d) if d is not None else None
    return dev.pool.block_at(int(addr)) if dev is not None else None


def check_access(addr: int, nbytes: int, api: str, code: int = ACL_ERROR_RT_PARAM_INVALID,
                 role: str = "ptr") -> Block:
    """Raise `AclError(code)` unless ``[addr, addr + nbytes)`` lies in one live allocation.

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
    dev = _dev._devices.get(d)
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
        raise AclError(code, f"{head}: it points into free memory (use after free?"
                             f"{'' if dev.pool.quarantine is not None else ' set ASCEND_MEM_CHECK=1 to find out'})")
    end = blk.addr + blk.req
    if addr >= end:
        raise AclError(code, f"{head}: it lies in the 32-byte padding after the allocation at "
                             f"0x{blk.addr:x} (size {blk.req})")
    if addr + nbytes > end:
        raise AclError(code, f"{head}: it overruns the allocation at 0x{blk.addr:x} (size "
                             f"{blk.req}) by {addr + nbytes - end} bytes")
    return blk
