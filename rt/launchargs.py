"""A kernel launch's argument checks (`rt.launch`): the binary implements `rt.KernelBinary`,
device buffers live on the stream's device, `reads` / `writes` are indices into the args, and
under `ASCEND_MEM_CHECK=1` every device buffer is live and listed for the race check."""

from __future__ import annotations

import os

from .errors import (AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
from .hostmem import is_mapped_address, mapped_view
from .kernel import missing_members
from .memcheck import check_access, device_address, device_of


def check_binary(binary) -> str:
    missing = missing_members(binary)
    if missing:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       "launch: binary must implement rt.KernelBinary (a str `name`, a callable "
                       "`run_blocks(first, last, block_dim, args, barrier=None)`, "
                       "`needs_all_resident`, `shuffle_blocks`, `counters`, `last_counters`), "
                       f"got binary={binary!r} without {', '.join(missing)}")
    return binary.name



def device_args(args, name: str, device_id: int) -> list:
    """[(index, device address)] of the device-buffer args; each must be on `device_id`."""
    out = []
    for i, a in enumerate(args):
        addr = device_address(a)
        if addr is not None:
            d = device_of(addr)
            if d != device_id:
                raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                               f"launch: kernel {name}: args[{i}] must live on the stream's "
                               f"device {device_id}, got args[{i}] on device {d} "
                               f"(address {addr:#x}); copy it over first")
            out.append((i, addr))
    return out


def _index_set(v, nargs: int, what: str, name: str) -> set:
    try:
        out = {int(i) for i in v}
    except (TypeError, ValueError):
        out = None
    if out is None or any(not 0 <= i < nargs for i in out):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"launch: {what} must be indices into args in [0, {nargs}), got "
                       f"{what}={v!r} (kernel {name})")
    return out


def arg_accesses(binary, args, bufs, name: str, reads, writes):
    """Under `ASCEND_MEM_CHECK=1`: check each device-buffer arg is live (use after free raises
    now, 507042) and list [(addr, is_write)] for the race check."""
    n = len(args)
    rset = _index_set(reads, n, "reads", name) if reads is not None else None
    wset = _index_set(writes, n, "writes", name) if writes is not None else None
    if os.environ.get("ASCEND_MEM_CHECK") != "1":
        return None
    if wset is None and rset is None:
        gw = getattr(binary, "gm_writes", None)
        got = gw(args) if callable(gw) else None
        if got is not None:
            wset = _index_set(got, n, "gm_writes", name)
    out = []
    for i, addr in bufs:
        a = args[i]
        nbytes = getattr(a, "nbytes", 0) if not isinstance(a, int) else 0
        if is_mapped_address(addr):         # host memory mapped in (rt.hostmem.host_register)
            mapped_view(addr, nbytes, f"launch: kernel {name}",
                        ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW, f"args[{i}]")
        else:
            check_access(addr, max(1, nbytes), f"launch: kernel {name}",
                         ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW, f"args[{i}]")
        if wset is not None:
            is_write = i in wset
        else:
            is_write = rset is None or i not in rset
        out.append((addr, is_write))
    return out
