"""Launches whose cores synchronise with each other: MIX kernels (each block is an AI Core group,
1 AIC + 1 or 2 AIVs, all running the kernel at once) and kernels using cross-core or inter-block
flags (rt.crossflags).

A binary opts in with a `mix` attribute (a `MixSpec`): the cores of a group and whether the kernel
synchronises across groups. The instances of one group can block on each other, so they always
run at once, each on its own thread. How many groups run at once:

- synchronisation inside a group only (cross-core flags in modes 1 and 2): as many groups as the
  core pool has workers (`ASCEND_EMU_CORES`), each a *slot* of one thread per core of the group;
  a slot runs one group after another, taking the next one (in order; shuffled in checked mode)
  when the first of its threads is done with its last, so a launch of 48 groups on 2 workers
  uses 6 threads for MIX_AIC_1_2, not 144, and a slot on a CPU other processes hold runs fewer;
- across groups (mode 0, ib_set / ib_wait, sync_all): every group at once, as the hardware runs
  them; the caller bounds `block_dim` by the SoC's AI Cores (rt does not know the kernel type).

In an intra-group launch the threads of slot s are pinned to one CPU of the process's affinity
set (the s-th, modulo their number) while they run the launch, and given back their own
affinity after: a group's AIC and AIVs then hand tiles over on one CPU, so the thread a set
wakes runs at once on the CPU its waker leaves, and the S, P and O tiles stay in that CPU's
caches (docs/performance.md has the numbers). `ASCEND_EMU_PIN_GROUPS=0` (read at each launch)
leaves them to the OS scheduler; one slot, or one CPU, is never pinned. In a pinned launch a
flag set defers the wake of the thread it releases until the setter sleeps or ends
(rt.crossnative's deferred wakes: each thread runs until it must wait, instead of the released
one preempting its waker at every hand-off); `ASCEND_EMU_LAZY_WAKE=0` wakes at once.

Threads come from the resident-core set of rt.resident and are reused. Each instance runs through
the core pool's range runner (`CorePool._run_range`), so a fault is recorded as any block's, the
others are released and skip their work, and `CorePool.cancel` (op timeout, device reset) stops
them as it stops a resident launch: the launch's `CrossCoreLaunch` is aborted (releasing blocked
waits) and the instances no thread has started yet count as done.

Fidelity: the ordering the flags give, and instances of a group truly concurrent. Approximated:
a slot of an intra-group launch takes its next group when the first of its threads is free, not
when all of its cores are; more threads than CPUs time-slice.
"""
from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass

from .crossflags import CrossCoreLaunch
from .resident import PROCESS_CPUS, start_threads

__all__ = ["MixSpec", "dispatch_mix"]



@dataclass(frozen=True)
class MixSpec:
    """How a binary's launch runs: `roles` the cores of one group, in order ("AIC", "AIV", ...);
    `across_groups` whether the kernel synchronises between groups; `check_limit` whether a flag
    counter past its hardware limit is an error (checked mode); `check_gm_order` whether GM one
    instance writes and another reads must be ordered by the flags (checked mode, rt.gmorder)."""
    roles: tuple
    across_groups: bool
    check_limit: bool = True
    check_gm_order: bool = False


def dispatch_mix(task, pool, run_instance, register) -> None:
    """Start kernel `task` (a `rt.sched.KernelTask` whose binary has a `mix` spec) on group slots.

    `run_instance(group, wid, instance)` runs one instance through the pool's range runner;
    `register(task, launch)` is called with the launch's `CrossCoreLaunch` before any instance
    starts (the pool keeps it, to abort on cancel)."""
    spec = task.binary.mix
    bd = task.block_dim
    launch = CrossCoreLaunch(bd, spec.roles, spec.across_groups, spec.check_limit,
                             spec.check_gm_order)
    task.left = len(launch.instances)
    task.ranges = []
    task.entries = []                   # nothing for CorePool.assist to take
    task.pool = pool
    order = list(range(bd))
    if task.binary.shuffle_blocks:
        random.shuffle(order)
    slots = bd if spec.across_groups else min(bd, pool.n)
    cpus = None if spec.across_groups else slot_cpus(slots)
    feed = _GroupFeed(order, slots, spec.across_groups)
    jobs = []
    for s in range(slots):
        cpu = None if cpus is None else cpus[s]
        for k in range(len(spec.roles)):
            jobs.append(lambda k=k, s=s, cpu=cpu: _run_slot(launch, feed, k, s, run_instance,
                                                            cpu))
    launch.slots = slots
    if cpus is not None and os.environ.get("ASCEND_EMU_LAZY_WAKE", "1") != "0":
        launch.defer_wakes()
    register(task, launch)
    start_threads(jobs)


def slot_cpus(slots: int):
    """The CPU the threads of each of `slots` slots are pinned to, or None (not pinned: one slot,
    one CPU in the process's affinity set, no sched_setaffinity, or ASCEND_EMU_PIN_GROUPS=0).
    The process's set is the one it had when rt was imported, whichever thread asks."""
    if slots < 2 or os.environ.get("ASCEND_EMU_PIN_GROUPS", "1") == "0" or not hasattr(
            os, "sched_setaffinity"):
        return None
    # not the calling thread's set: a launch is often dispatched from a slot's thread of the
    # launch before it on its stream, pinned to one CPU at that moment
    cpus = PROCESS_CPUS
    if len(cpus) < 2:
        return None
    return [cpus[s % len(cpus)] for s in range(slots)]


class _GroupFeed:
    """Hands a launch's groups (in `order`) to its slots. Intra-group launches: as the slots
    free up: the i-th group of slot s is the one the first of its threads done with its
    (i-1)-th takes next, and every thread of the slot runs the same groups in the same order,
    so a slot whose CPU other processes hold runs fewer groups instead of the launch waiting
    for a fixed share. `fixed` (launches across groups: every group resident at once, one per
    slot; a thread done early must not take a group its slot's other threads cannot reach):
    slot s runs order[s::slots]."""

    def __init__(self, order, slots: int, fixed: bool):
        self._left = iter(() if fixed else order)
        self._runs = [list(order[s::slots]) if fixed else [] for s in range(slots)]
        self._lock = threading.Lock()

    def groups(self, slot: int):
        """The groups of `slot`, in order (an iterator for one of its threads)."""
        runs = self._runs[slot]
        i = 0
        while True:
            with self._lock:
                if i == len(runs):
                    runs.append(next(self._left, None))
                g = runs[i]
            if g is None:
                return
            yield g
            i += 1


def _run_slot(launch, feed, k, wid, run_instance, cpu=None) -> None:
    """One thread of a slot: core `k` of each group `feed` gives slot `wid`, in order; on CPU
    `cpu` if not None (the thread's own affinity is given back after)."""
    old = None
    if cpu is not None:
        try:
            old = os.sched_getaffinity(0)
            os.sched_setaffinity(0, (cpu,))
        except OSError:         # a CPU taken away meanwhile: run where the OS puts us
            old = None
    try:
        for g in feed.groups(wid):
            if not launch.claim():
                return
            run_instance(g, wid, launch.instance(g, k))
    finally:
        if old is not None:
            try:
                os.sched_setaffinity(0, old)
            except OSError:     # none of them left: keep the pinned CPU
                pass
