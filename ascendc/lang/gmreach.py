"""GM over-reach: accesses past a GM argument's end but inside its allocation.

On the NPU a GM argument is only an address: a kernel that reads or writes a little past a
tensor's end (pyasc's tests do on tail shapes) runs as long as it stays inside memory the runtime
allocated, and ``aclrtMalloc`` allocates ``align32(size) + 32`` bytes (`rt.pool.alloc_bytes`).
So a kernel's view of a GM argument reaches its allocation's end (`rt.memory.kernel_view`; a
numpy argument's device buffer is such an allocation, rt.array.HostArgs), and only an access
beyond it traps (the messages of core.check_gm, which name the argument and its own size).

Checked mode (`CheckedOptions.report_gm_overreach`, FLAG_REPORT_OVERREACH) notes the farthest
access past each argument's end (`note`, called by the GM bounds checks of the data-movement
primitives and of scalar GM access) and the launcher warns once per launch per argument:
``"<kernel>: GM argument '<name>' accessed past its end by <n> bytes (offset <o>), inside its
allocation of <s> bytes (hardware tolerates this)"``: `n` bytes past the argument's end, `o` the
byte offset (from the argument's start) where that access begins, `s` the bytes from the
argument's start to its allocation's end.

State (state.py): ``gm_bytes[k]`` what argument k reaches, ``gm_size[k]`` its own bytes (set by
the launcher for the first ``gm_preset`` arguments, else by core.register_gm to ``gm_bytes``),
``gm_over[k]`` / ``gm_over_off[k]`` the farthest over-reach and where it began.
"""
from __future__ import annotations

import warnings

import numpy as np

from .core import prim

__all__ = ["note", "set_gm_sizes", "read_overreach", "overreach_message", "warn_overreach"]


@prim
def note(st, addr, nbytes):
    """Checked mode: GM bytes [addr, addr + nbytes) are accessed; if they reach past the end of
    the argument holding `addr` (the one whose start is nearest below it), remember how far."""
    k, best = -1, np.int64(-1)
    for j in range(st.ngm):
        b = st.gm_addr[j]
        if b <= addr < b + st.gm_bytes[j] and b > best:
            k, best = j, b
    if k >= 0:
        over = addr + nbytes - best - st.gm_size[k]
        if over > st.gm_over[k]:
            st.gm_over[k] = over
            st.gm_over_off[k] = addr - best


def set_gm_sizes(st, gms, report) -> None:
    """Before a run of blocks: the own bytes of the launch's GM arguments `gms` ([(binaries.GMArg,
    bytes reached)] in registration order); with `report` (over-reach is noted), the notes
    cleared."""
    sizes = st.gm_size          # one field lookup, not one per argument
    n = min(len(gms), len(sizes))
    sizes[:n] = [g[0].nbytes for g in gms[:n]]
    st.gm_preset = n
    if report:
        st.gm_over[:] = 0
        st.gm_over_off[:] = 0


def read_overreach(st, ngm: int) -> dict:
    """{argument index: (bytes past its end, offset)} noted by the blocks just run."""
    n = min(ngm, len(st.gm_over))
    return {k: (int(st.gm_over[k]), int(st.gm_over_off[k])) for k in range(n)
            if st.gm_over[k] > 0}


def overreach_message(kernel: str, name: str, over: int, offset: int, reach: int) -> str:
    return (f"{kernel}: GM argument {name!r} accessed past its end by {over} bytes (offset "
            f"{offset}), inside its allocation of {reach} bytes (hardware tolerates this)")


def merge_overreach(into: dict, over) -> None:
    """Fold one block range's over-reach notes (read_overreach) into a launch's: per argument,
    the farthest reach wins."""
    for k, v in (over or {}).items():
        if v[0] > into.get(k, (0, 0))[0]:
            into[k] = v


def warn_overreach(kernel: str, gms, over: dict) -> None:
    """The launch's warnings: one per argument of `over` (read_overreach, merged over the
    launch's block ranges); `gms` as set_gm_sizes had them."""
    for k, (n, off) in sorted(over.items()):
        warnings.warn(overreach_message(kernel, gms[k][0].name, n, off, gms[k][1]),
                      RuntimeWarning, stacklevel=3)
