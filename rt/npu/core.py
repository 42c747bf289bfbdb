"""One core of the NPU simulator (rt/npu/sim.py): the block it runs, its pipes, and the rules that
say when an instruction's dependencies are met.

Dependency kinds, and how to add one (for instance a flag between cores that are not the two
halves of one MIX block): `Core.ready` says whether the instruction at `idx` may start now (it
may call `sim.due(core, at)` for a dependency met at a later time: the simulator wakes the core
then); `Core.take` names what the instruction consumed, for its record (`Timeline.flows` /
`Timeline.handoffs`); and `Simulator.wakes` says which other cores a finished instruction may
unblock (the event loop examines only those). Flags between the instances of a launch replayed
from their own streams (`Instr.cross`) follow the rules of rt/npu/xcore.py: `xcore` holds the
launch's `CrossFlags` and the instance this core runs. The reference scan of the tests
(tests/npu_reference.py) examines every core at every event, so it needs only the first two.
"""
from __future__ import annotations

from .instr import PIPES, Instr
from .pipe import Pipe

_QUEUED = PIPES[1:]             # the pipes fed by the scalar unit's queues


class Core:
    """A core of the launch (AIC, AIV or AI Core), its `pipes` by name (`queued`: those the
    current block issues to, in PIPES order), the block it runs and its program counter `ptr`
    (the SCALAR unit's next instruction). Per block: `fired` flag key -> deque of (set record
    index, end, core) (shared by the two cores of a MIX block), `deps` index -> indices in the
    mate's sub-stream it waits for (GM hand-offs), `ended` index -> (end, record index)."""
    __slots__ = ("idx", "kind", "block", "ptr", "pipes", "queued", "fired", "deps", "ended",
                 "dep_pos", "mate", "awaited", "syncs", "arrived", "xcore")

    def __init__(self, idx: int, kind: str):
        self.idx, self.kind = idx, kind
        self.block = None
        self.pipes = {p: Pipe(p) for p in PIPES}

    def load(self, block, fired, deps, mate, xcore=None) -> None:
        self.block, self.ptr = (block or None), 0
        self.xcore = xcore          # (CrossFlags, (group, slot)) of a launch of streams
        for p in self.pipes.values():
            p.reset()
        self.fired = fired
        self.deps = deps
        self.ended = {}
        self.dep_pos = {}           # index -> how many of its deps were seen ended
        self.mate = mate            # the other core of this block in a MIX launch
        self.awaited = ()           # indices of this block the mate's GM hand-offs wait for
        used = {i.pipe for i in block or ()}
        self.queued = [self.pipes[p] for p in _QUEUED if p in used]
        self.syncs, self.arrived = 0, False

    def done(self) -> bool:
        return self.block is None or (self.ptr >= len(self.block) and not any(
            p.queue or p.running or p.inflight for p in self.pipes.values()))

    def drained(self) -> bool:
        """Every pipe but SCALAR idle, nothing queued, no copy in its latency."""
        return not any(p.queue or p.inflight or (p.running and p.name != "SCALAR")
                       for p in self.pipes.values())

    def ready(self, sim, idx: int, ins: Instr) -> bool:
        """Whether instruction `idx` (`ins`) may start now (module doc)."""
        if ins.cross:
            flags, inst = self.xcore
            if ins.cross[0] in ("set", "ib_set"):
                return not self.pipes[ins.pipe].inflight and flags.may_set(inst, ins)
            at = flags.due(inst, ins)
            return at is not None and sim.due(self, at)
        if ins.set_flag or ins.barrier in PIPES:  # runs after the pipe's copies have landed
            return not self.pipes[ins.pipe].inflight
        if ins.wait_flag:
            q = self.fired.get(ins.wait_flag)
            if not q:
                return False
            _, end, by = q[0]
            return sim.due(self, end + (sim.cross if by != self.idx else 0))
        if ins.barrier == "ALL":
            return self.drained()
        if ins.barrier == "SYNC_ALL":
            if not self.arrived:
                if not self.drained():
                    return False
                self.arrived = True
                sim.arrive(self)
            return sim.released(self)
        d = self.deps.get(idx)
        if d:
            ended = self.mate.ended
            k, n = self.dep_pos.get(idx, 0), len(d)      # d[:k] have ended already
            while k < n and d[k] in ended:
                k += 1
            if k < n:
                self.dep_pos[idx] = k
                return False
            return sim.due(self, max(ended[j] for j in d)[0] + sim.cross)
        return True

    def take(self, idx: int, ins: Instr) -> tuple:
        """(set record index of a wait_flag, or the set records of a cross-core wait; record
        index of a GM hand-off), consumed."""
        if ins.cross:
            return self.xcore[0].take(self.xcore[1], ins), None
        if ins.wait_flag:
            return self.fired[ins.wait_flag].popleft()[0], None
        d = self.deps.get(idx)
        if d:
            return None, max(self.mate.ended[j] for j in d)[1]
        return None, None
