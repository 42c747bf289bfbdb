"""The words a MIX launch's cross-core flags are counted in natively (rt.crossflags: a launch
that needs no rule only its lock can keep: no counter limit, no GM order, no flags between
groups), by the kernel's own primitives (ascendc/lang/prims/crosscore.py) with atomic operations
and no Python.

The kernel's primitives count mode 1 / 2 sets and take waits on `ctr` / `arr` / `rel` (numpy
arrays whose addresses each instance's control block holds). A wait finding its counter at 0
first blocks natively where Linux futexes are available (rt.futex): it writes 2 + the flag id
in its `blk` word and sleeps on it (FUTEX_WAIT, in slices of `FUTEX_SLICE_NS`), and a set
raising that counter clears the word and wakes it (FUTEX_WAKE); an abort clears every such word
and wakes its sleeper (`wake_sleepers`). After `FUTEX_SLICES` slices (a long wait, maybe a
deadlock), or without futexes (other systems, or ASCEND_EMU_FUTEX=0), the wait calls the
launch's `wait_native`, which marks the instance blocked (`mark_blocked`: `blk` 1, then a full
fence) and blocks under the launch's lock until the counter is above 0; a native set raises the
counter first and then, if the target's `blk` is 1, calls the launch's `wake`: one of the two
always sees the other's write. Deadlock detection is unchanged, only later by up to the futex
slices: one asleep on its futex counts as running, and a blocked one whose counter is above 0
is woken rather than reported. `glob` counts the futex sleeps, wakes and waits that went on to
`wait_native`.

Deferred wakes (`CTL_DEFER`, set by rt.mixlaunch when a group's instances are pinned to one
CPU): a set that clears a sleeper's word does not wake it at once but records it in the setter's
`pend` word, and the setter makes the wakes it owes just before it sleeps itself, and when its
instance ends (`flush`). On one CPU the woken thread could not run beside its waker anyway; woken
at once it preempts the waker (Linux favours a thread that slept), which soon blocks on the next
hand-off, so the threads ping-pong a context switch or two per flag. Deferred, each runs until
it must wait, as far ahead as the flags let it: the same order of events, fewer switches.
"""
from __future__ import annotations

import threading

import numpy as np

from . import futex as _futex
from .futex import FUTEX_SLICE_NS, FUTEX_SLICES, futex_available

__all__ = ["NativeWords", "CTL_WORDS", "CTL_DEFER", "GLOB_WORDS"]

# an instance's control block (`Instance.ctl`, int64 words): 0 native (1/0), 1 the instance's
# index, 2 address of the counters (instances x flag ids), 3 of the blocked words (one per
# instance), 4 of the arrivals (instances x 2 x flag ids: mode 1, mode 2 to the AIC), 5 of the
# released rounds (groups x 2 x flag ids), 6 the group's first instance, 7 its AIC's slot (-1:
# none), 8 bit s: slot s of a group is an AIV, 9 cores per group, 10 the group, 11 address of
# the launch's shared words (`glob`), 12 address of libc's `syscall` (0: no futexes), 13 its
# number of futex, 14-15 a struct timespec of one futex slice, 16 futex slices before blocking
# in `wait_native`, 17 looks at the counter before sleeping (rt.futex.SPINS), 18 1: a set defers
# the futex wakes it owes (`defer_wakes`), 19 address of the instance's word of deferred wakes
CTL_WORDS = 20
CTL_DEFER = 18
# the launch's shared words: 0 aborted, 1 futex sleeps, 2 futex wakes, 3 native waits that went
# on to `wait_native`, 4 wakes deferred (made later: by the native code before a sleep, counted
# in 2, or at the instance's end, counted in 5; 5 is written under a Python lock, not atomically)
GLOB_WORDS = 6


class NativeWords:
    """The counters, blocked words, arrivals, released rounds and shared words of one launch of
    `groups` groups of `cores` cores, and their control blocks (futexes only when `native`)."""

    def __init__(self, groups: int, cores: int, flag_ids: int, native: bool):
        n_inst = groups * cores
        self.native, self.cores = native, cores
        self.ctr = np.zeros((n_inst, flag_ids), np.int64)
        self.blk = np.zeros(n_inst, np.int64)          # 1 while an instance blocks (native)
        self.arr = np.zeros((n_inst, 2, flag_ids), np.int64)
        self.rel = np.zeros((groups, 2, flag_ids), np.int64)
        self.glob = np.zeros(GLOB_WORDS, np.int64)
        self.pend = np.zeros(n_inst, np.int64)         # bit s: wake slot s of its group later
        self._fence = threading.Lock()
        self._blk_addr = self.blk.ctypes.data          # (numpy's .ctypes costs microseconds)
        self._sys = _futex.SYSCALL if native and futex_available() else (0, None, 0)
        self.futexes = self._sys[0] != 0

    def control_blocks(self, aic_slot: int, aiv_mask: int) -> np.ndarray:
        """The CTL_WORDS of every instance (row i: instance i, of group i // cores; its group's
        AIC slot, -1 for none, and the bit mask of its AIV slots), built in one go: a launch
        makes them on the critical path before its threads start."""
        n_inst = len(self.blk)
        idx = np.arange(n_inst, dtype=np.int64)
        group = idx // self.cores
        ctl = np.empty((n_inst, CTL_WORDS), np.int64)
        ctl[:] = np.array([int(self.native), 0, self.ctr.ctypes.data, self.blk.ctypes.data,
                           self.arr.ctypes.data, self.rel.ctypes.data, 0, aic_slot, aiv_mask,
                           self.cores, 0, self.glob.ctypes.data, self._sys[0], self._sys[2], 0,
                           FUTEX_SLICE_NS, FUTEX_SLICES, _futex.SPINS, 0, 0], np.int64)
        ctl[:, 1] = idx
        ctl[:, 6] = group * self.cores
        ctl[:, 10] = group
        ctl[:, 19] = self.pend.ctypes.data + 8 * idx
        return ctl

    def flush(self, index: int) -> None:
        """Instance `index` ends: the futex wakes it deferred (`defer_wakes`), now."""
        p = int(self.pend[index])
        if p:
            self.pend[index] = 0
            base = index - index % self.cores
            for s in range(self.cores):
                if p >> s & 1:
                    with self._fence:
                        self.glob[5] += 1
                    _futex.wake(self._blk_addr + 8 * (base + s))

    def _full_fence(self) -> None:
        with self._fence:           # a lock's acquire and release: a full fence
            pass

    def mark_blocked(self, index: int) -> None:
        """Instance `index` blocks in the launch: its word 1, before its counter is read again."""
        self.blk[index] = 1
        self._full_fence()

    def wake_sleepers(self) -> None:
        """Abort: wake the instances asleep on their futexes (they see `glob[0]` and return)."""
        self.glob[0] = 1
        self._full_fence()          # the store above before the reads of `blk`
        for i in range(len(self.blk)):  # every word: a deferred wake may have cleared it
            if self.blk[i] >= 2:
                self.blk[i] = 0
            _futex.wake(self._blk_addr + 8 * i)
