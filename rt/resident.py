"""All-resident launches: one thread per block and an all-blocks barrier (Ascend C `SyncAll`).

A binary whose `needs_all_resident` attribute is true (its kernel calls SyncAll) needs every
block of its launch running at once: on hardware SyncAll makes each core wait until all the
launch's cores have arrived. Such a launch does not go through the core pool's ranges (its
`ASCEND_EMU_CORES` workers run blocks one after another); each block gets its own thread from a
set of resident-core threads that grows to the largest block_dim seen and is reused, and the
blocks share one `BlockBarrier`, passed as `run_blocks(b, b + 1, block_dim, args, barrier=bar)`.

When a block fails, its error is recorded first and the barrier is then aborted, so the blocks
waiting at it (or arriving later) return at once; their failures are consequences and are not
reported. A block that ends while others wait at the barrier would hang the NPU: the barrier
breaks and the waiting blocks report it. The caller checks block_dim against the SoC's cores
(rt does not know the kernel type); rt runs whatever it is given.

Stopping (device reset, op execute timeout): each block runs through the core pool's range
runner, registered like a pool range, so `CorePool.cancel` raises its stop exception in the
blocks running Python code (interpret mode; the thread then returns to the idle set) and aborts
the barrier, releasing the blocks that wait at it. A block inside compiled (nopython) code cannot
be interrupted: its thread stays busy until that code returns, if ever, and later launches start
new threads; the stopped launch is completed at once either way.

Fidelity: matches SyncAll's ordering (nothing after the barrier in any block runs before every
block has reached it). Approximated: more threads than CPUs may run at once, so the OS
time-slices them; a barrier costs tens of microseconds per block here (a GIL hand-off each).
"""
from __future__ import annotations

import os
import queue
import random
import threading


class BlockBarrier:
    """The barrier of one resident launch: `parties` blocks; `wait()` returns 0 when all passed,
    -1 if aborted (another block failed), or k > 0 if it broke because k blocks ended without
    reaching it."""

    def __init__(self, parties: int):
        self.parties = parties
        self._cv = threading.Condition(threading.Lock())
        self._waiting = 0
        self._ended = 0
        self._gen = 0
        self.broken = False
        self.ended_blocks = 0          # > 0: broken by blocks that ended (a would-be hang)
        self.fail_lock = threading.Lock()   # a block's failure is recorded under it

    def begin(self) -> bool:
        """A block starts (rt's range runner asks; a plain barrier always lets it run)."""
        return True

    def wait(self) -> int:
        with self._cv:
            if self.broken:
                return self.ended_blocks or -1
            self._waiting += 1
            if self._waiting + self._ended == self.parties:
                if self._ended:
                    return self._break(self._ended)
                self._waiting = 0
                self._gen += 1
                self._cv.notify_all()
                return 0
            gen = self._gen
            while gen == self._gen and not self.broken:
                self._cv.wait()
            return 0 if gen != self._gen else (self.ended_blocks or -1)

    def leave(self) -> None:
        """A block has ended normally: it will not arrive again."""
        with self._cv:
            self._ended += 1
            if self._waiting and not self.broken and self._waiting + self._ended == self.parties:
                self._break(self._ended)

    def abort(self) -> None:
        """Break the barrier: blocks waiting (or arriving later) return -1."""
        with self._cv:
            if not self.broken:
                self.broken = True
                self._cv.notify_all()

    def _break(self, ended: int) -> int:
        self.broken = True
        self.ended_blocks = ended
        self._cv.notify_all()
        return ended


# the CPUs the process may run on, as the importing thread saw them (none: no affinity API)
PROCESS_CPUS = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") \
    else ()


class _ResidentCores:
    """Threads that each run one block of a resident launch; idle ones are reused."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: list = []
        self._count = 0

    def start(self, jobs) -> None:
        with self._lock:
            take = min(len(jobs), len(self._idle))
            qs = [self._idle.pop() for _ in range(take)]
            for _ in range(len(jobs) - take):
                q = queue.SimpleQueue()
                threading.Thread(target=self._loop, args=(q,), name=f"rt-resident-{self._count}",
                                 daemon=True).start()
                self._count += 1
                qs.append(q)
        for q, job in zip(qs, jobs):
            q.put(job)

    def _loop(self, q) -> None:
        if PROCESS_CPUS:   # a thread started from one pinned to a CPU (rt.mixlaunch) inherits
            try:            # that CPU: resident threads start on the process's whole set
                os.sched_setaffinity(0, PROCESS_CPUS)
            except OSError:
                pass
        while True:
            job = q.get()
            try:
                job()
            except BaseException:   # noqa: BLE001 - a stray stop must not kill a pooled thread
                pass                # (the range runner has recorded the block's outcome)
            del job
            with self._lock:
                self._idle.append(q)


_cores = _ResidentCores()


def start_threads(jobs) -> None:
    """Run each of `jobs` (callables) on its own resident-core thread (reused when idle)."""
    _cores.start(jobs)


def dispatch_resident(task, pool, run_block) -> None:
    """Start every block of kernel `task` on its own thread.

    `task` is a `rt.sched.KernelTask`; `run_block(b)` runs block b with the launch's barrier (the
    core pool's range runner: it records the block's fault, tells the barrier the block ended or
    failed, and completes the task after its last block; `CorePool.cancel` interrupts blocks
    running Python code and aborts the barrier). Blocks start in shuffled order when the
    binary's `shuffle_blocks` is true (checked mode).
    """
    bd = task.block_dim
    task.left = bd
    task.ranges = []
    task.entries = []                   # nothing for CorePool.assist to take
    task.pool = pool
    order = list(range(bd))
    if task.binary.shuffle_blocks:
        random.shuffle(order)
    _cores.start([lambda b=b: run_block(b) for b in order])
