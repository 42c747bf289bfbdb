"""Linux futexes for the native cross-core waits of rt.crossflags: the address of libc's
`syscall` that compiled kernel code calls (ascendc/lang/prims/crosscore.py: FUTEX_WAIT on an
instance's blocked word, FUTEX_WAKE from the setter), the syscall numbers, and a wake from
Python (a launch's abort).

Available on Linux on x86_64 and aarch64 (little-endian: a futex is the low 32 bits of an int64
word); `ASCEND_EMU_FUTEX=0` turns it off for launches made after (their waits block in
rt.crossflags, as everywhere else).
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys

__all__ = ["SYSCALL", "FUTEX_SLICE_NS", "FUTEX_SLICES", "SPINS", "futex_available", "wake"]

FUTEX_SLICE_NS = 10_000_000     # a futex sleep ends after this, to look at the launch again
FUTEX_SLICES = 5                # ... and after this many a wait blocks in `wait_native`
# looks at the counter before a futex sleep (busy, no syscall). 0: on 2 CPUs shared by 6 threads
# the setter seldom runs meanwhile; sched_yield there gave the CPU to other processes (docs/
# performance.md)
SPINS = 0
_FUTEX_WAKE_PRIVATE = 129
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def _libc_syscall():
    """(address of libc's `syscall`, its ctypes function, SYS_futex), or None
    where futexes on the low half of an int64 word are not available (not Linux, an unknown
    machine, big-endian)."""
    nr = _SYS_FUTEX.get(platform.machine().lower())
    if not sys.platform.startswith("linux") or nr is None or sys.byteorder != "little":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long] * 7
    return ctypes.cast(fn, ctypes.c_void_p).value, fn, nr


SYSCALL = _libc_syscall()


def futex_available() -> bool:
    """Do native waits of launches made now sleep on futexes (Linux; not ASCEND_EMU_FUTEX=0)?"""
    return SYSCALL is not None and os.environ.get("ASCEND_EMU_FUTEX", "1") != "0"


def wake(addr: int) -> None:
    """FUTEX_WAKE one sleeper on the word at `addr` (nothing without futexes)."""
    if SYSCALL is not None:
        SYSCALL[1](SYSCALL[2], addr, _FUTEX_WAKE_PRIVATE, 1, 0, 0, 0)
