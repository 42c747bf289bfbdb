"""A deterministic discrete-event model of the AI Cores' pipes (DESIGN §6, issue 9 §2).

Input: one instruction list per block (`Instr`, in the order the block issued them), a
`PipeModel` and the number of cores. The model:
- Each core has the pipes of msOpProf's trace: SCALAR, VECTOR, CUBE, MTE1, MTE2, MTE3, FIXPIPE.
  The SCALAR unit walks the block's instructions in program order and issues each one
  (`scalar_issue_cycles`); SCALAR work (and a wait on SCALAR) runs on it, every other instruction
  goes to its pipe's queue. Pipe queues are unbounded (assumption: the hardware's issue queues
  have a finite depth, so the scalar unit can run ahead here further than on an NPU).
- Each pipe runs its queue in order, one instruction at a time. An instruction starts when its
  pipe is free and its dependency is met; it costs a start-up latency plus its work over the
  pipe's throughput (vector and cube start-up is charged only when the pipe was idle, the rule of
  pto-isa's cost model, docs/npu-model.md §1.4).
- `set_flag(A->B, id)` runs on pipe A after A's earlier work; `wait_flag(A->B, id)` runs on pipe B
  and starts only once a matching set has completed, matched first-in first-out per (A, B, id).
  A wait whose set never comes is a deadlock: `simulate` raises. `barrier` of a pipe is a 1-flag
  instruction on that pipe (pipes are in order already); `barrier="ALL"` stops the SCALAR unit
  until every pipe of the core has drained. Flags are per core and reset with each block.
- Data moved to or from GM (`model.GM_PATHS`) first pays its path's start-up latency, then streams
  at min(per-core path bandwidth, fair share of the chip's HBM bandwidth). The share is max-min
  fair (water-filling) over all transfers streaming at that moment, on every core: a transfer
  capped below its share leaves the rest to the others. Rates change only when a transfer starts
  or ends, so the model stays event-driven.
- Blocks are placed in index order on the first free core (lowest core index first): with more
  blocks than cores they run in waves. A launch overhead is added once.
Everything is arithmetic on the recorded sizes: the same input gives the same cycles anywhere.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .model import GM_PATHS, PipeModel

PIPES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXPIPE")
_EPS = 1e-9


@dataclass
class Instr:
    """One instruction a block issued. `pipe` in msOpProf's spelling (PIPES); `path` the DMA path
    ("GM->UB", ...: model.PATHS) of a copy; `shape` (m, n, k) of an mmad; `src` "file:line" of
    the kernel source. Dependencies: `set_flag` / `wait_flag` = (src pipe, dst pipe, event id),
    `barrier` = a pipe name or "ALL"."""
    block: int
    pipe: str
    name: str
    bytes: int = 0
    elements: int = 0
    repeats: int = 0
    macs: int = 0
    dtype_bytes: int = 0
    path: str = ""
    shape: tuple = ()
    src: str = ""
    set_flag: tuple | None = None
    wait_flag: tuple | None = None
    barrier: str | None = None


@dataclass
class Timeline:
    """The simulated run: `records[i]` = (instr, core, pipe, start, end) in cycles, in the order
    the instructions completed; `issues[i]` = (instr, core, start, end) the SCALAR unit's issue
    slot of each non-SCALAR instruction (part of SCALAR's busy time, not of `records`);
    `flows[i]` = (set record index, wait record index), each wait_flag with the set_flag it
    consumed (matched first-in first-out); `busy[core][pipe]` busy cycles (SCALAR includes issuing);
    `makespan` the cycles from the first start to the last end; `total_cycles` adds the launch
    overhead; `us` is `total_cycles` in microseconds at the model's clock."""
    soc: str
    n_cores: int
    clock_hz: float
    records: list = field(default_factory=list)
    issues: list = field(default_factory=list)
    flows: list = field(default_factory=list)
    busy: dict = field(default_factory=dict)
    makespan: float = 0.0
    launch_cycles: float = 0.0

    @property
    def total_cycles(self) -> float:
        return self.makespan + self.launch_cycles

    @property
    def us(self) -> float:
        return self.total_cycles / self.clock_hz * 1e6

    def pipe_busy(self, pipe: str) -> float:
        """Busy cycles of `pipe` summed over the cores."""
        return sum(b.get(pipe, 0.0) for b in self.busy.values())


class _Op:
    __slots__ = ("core", "pipe", "idx", "ins", "start", "end", "stream", "remaining", "cap",
                 "rate", "dispatch", "partner")

    def __init__(self, core, pipe, idx, ins, start, end, stream=0.0, cap=0.0, dispatch=False,
                 partner=None):
        self.core, self.pipe, self.idx, self.ins = core, pipe, idx, ins
        self.start, self.end = start, end
        self.stream, self.remaining, self.cap, self.rate = stream, 0.0, cap, 0.0
        self.dispatch = dispatch
        self.partner = partner      # a wait_flag's set_flag: its index in Timeline.records


class _Core:
    __slots__ = ("idx", "block", "ptr", "queues", "running", "last_end", "fired", "busy")

    def __init__(self, idx):
        self.idx = idx
        self.block = None
        self.busy = dict.fromkeys(PIPES, 0.0)

    def load(self, block):
        self.block, self.ptr = block, 0
        self.queues = {p: deque() for p in PIPES}
        self.running = dict.fromkeys(PIPES)
        self.last_end = dict.fromkeys(PIPES, -1.0)
        self.fired = {}             # flag key -> deque of the fired sets' record indices

    def done(self) -> bool:
        return self.block is None or (self.ptr >= len(self.block) and
                                      not any(self.queues.values()) and
                                      not any(self.running.values()))


def _cost(ins: Instr, model: PipeModel, core: _Core, pipe: str, t: float):
    """(fixed cycles, bytes streamed through HBM after them, per-core cap in bytes/cycle)."""
    if ins.set_flag or ins.wait_flag or ins.barrier:
        return float(model.flag_latency_cycles), 0.0, 0.0
    if ins.path:
        bw = model.dma_bytes_per_cycle.get(ins.path)
        if bw is None:
            raise ValueError(f"simulate: {ins.name} at {ins.src or '?'}: path must be one of "
                             f"{sorted(model.dma_bytes_per_cycle)}, got path={ins.path!r}")
        lat = float(model.dma_latency.get(ins.path, 0))
        if ins.path in GM_PATHS:
            return lat, float(ins.bytes), bw
        return lat + ins.bytes / bw, 0.0, 0.0
    idle = core.last_end[pipe] < t          # no compute instruction ended just now
    if pipe == "VECTOR":
        head, slope = model.vector_cost(ins.name)
        c = slope * max(ins.repeats, 1) + (head if idle else 0)
        if ins.bytes % model.repeat_bytes:
            c += model.count_mode_penalty
        return float(c), 0.0, 0.0
    if pipe == "CUBE":
        if ins.shape:
            c = model.cube_cycles(*ins.shape, ins.dtype_bytes or 2)
        else:
            c = -(-ins.macs // model.cube_macs_per_cycle.get(ins.dtype_bytes or 2, 4096))
        return float(c + (model.cube_head_cycles if idle else 0)), 0.0, 0.0
    return float(model.scalar_issue_cycles), 0.0, 0.0


def _waterfill(streams, pool: float):
    """Max-min fair rates of the streaming transfers under a shared `pool` (bytes/cycle)."""
    order = sorted(range(len(streams)), key=lambda i: streams[i].cap)
    left = pool
    for n, i in enumerate(order):
        r = min(streams[i].cap, left / (len(order) - n))
        streams[i].rate = r
        left -= r


def _describe(ins: Instr) -> str:
    dep = ins.wait_flag or ins.set_flag
    what = f"{ins.name}({dep[0]}->{dep[1]}, id={dep[2]!r})" if dep else ins.name
    return f"{what} of block {ins.block}" + (f" at {ins.src}" if ins.src else "")


def simulate(blocks: list, model: PipeModel, n_cores: int) -> Timeline:
    """Replay `blocks` (one list of Instr per block, in issue order) on `n_cores` cores of
    `model`. Raises ValueError on a deadlock (a wait_flag whose set_flag never comes)."""
    if n_cores < 1:
        raise ValueError(f"simulate: n_cores must be >= 1, got n_cores={n_cores}")
    tl = Timeline(model.soc, n_cores, model.clock_hz, launch_cycles=model.launch_overhead_cycles)
    cores = [_Core(i) for i in range(n_cores)]
    pending = deque(blocks)
    running: list[_Op] = []
    t = 0.0

    def start(c: _Core, pipe, idx, ins, dispatch=False, partner=None):
        if dispatch:
            op = _Op(c, pipe, idx, ins, t, t + model.scalar_issue_cycles, dispatch=True)
        else:
            fixed, stream, cap = _cost(ins, model, c, pipe, t)
            op = _Op(c, pipe, idx, ins, t, t + fixed, stream, cap, partner=partner)
        c.running[pipe] = op
        running.append(op)

    def finish(op: _Op):
        c, ins = op.core, op.ins
        c.running[op.pipe] = None
        c.busy[op.pipe] += t - op.start
        if op.dispatch:
            c.queues[ins.pipe].append(op.idx)
            tl.issues.append((ins, c.idx, op.start, t))
            return
        if ins.set_flag:
            c.fired.setdefault(ins.set_flag, deque()).append(len(tl.records))
        elif not (ins.wait_flag or ins.barrier):
            c.last_end[op.pipe] = t
        if op.partner is not None:
            tl.flows.append((op.partner, len(tl.records)))
        tl.records.append((ins, c.idx, op.pipe, op.start, t))

    def ready(c: _Core, ins: Instr) -> bool:
        if ins.wait_flag:
            return bool(c.fired.get(ins.wait_flag))
        if ins.barrier == "ALL":
            return not any(c.queues.values()) and not any(
                c.running[p] for p in PIPES if p != "SCALAR")
        return True

    def take(c: _Core, ins: Instr):
        """Consume a wait_flag's set: the set's record index (None for other instructions)."""
        return c.fired[ins.wait_flag].popleft() if ins.wait_flag else None

    def step() -> bool:
        moved = False
        for c in cores:
            if c.done():
                if not pending:
                    continue
                c.load(pending.popleft())
                moved = True
            if c.running["SCALAR"] is None and c.ptr < len(c.block):
                ins = c.block[c.ptr]
                if ins.pipe not in PIPES:
                    raise ValueError(f"simulate: pipe must be one of {PIPES}, got "
                                     f"pipe={ins.pipe!r} for {_describe(ins)}")
                if ins.pipe != "SCALAR":
                    start(c, "SCALAR", c.ptr, ins, dispatch=True)
                    c.ptr += 1
                    moved = True
                elif ready(c, ins):
                    start(c, "SCALAR", c.ptr, ins, partner=take(c, ins))
                    c.ptr += 1
                    moved = True
            for p in PIPES[1:]:
                q = c.queues[p]
                if c.running[p] is None and q and ready(c, c.block[q[0]]):
                    idx = q.popleft()
                    start(c, p, idx, c.block[idx], partner=take(c, c.block[idx]))
                    moved = True
        return moved

    while True:
        while step():
            done_now = [op for op in running if op.end is not None and op.end <= t and
                        not op.stream]
            for op in done_now:
                running.remove(op)
                finish(op)
        if not running:
            stuck = [c for c in cores if not c.done()]
            if stuck:
                c = stuck[0]
                waits = [c.block[q[0]] for q in c.queues.values() if q]
                if c.ptr < len(c.block):
                    waits.append(c.block[c.ptr])
                raise ValueError("simulate: every wait_flag must have a matching set_flag, got "
                                 "a deadlock at " + "; ".join(_describe(w) for w in waits))
            break
        streams = [op for op in running if op.end is None]
        if streams:
            _waterfill(streams, model.hbm_bytes_per_cycle)
        nxt = min(op.end if op.end is not None else t + op.remaining / op.rate
                  for op in running)
        for op in streams:
            op.remaining -= op.rate * (nxt - t)
        t = nxt
        for op in list(running):
            if op.end is None:
                if op.remaining > _EPS * max(op.stream, 1.0):
                    continue
            elif op.end > t:
                continue
            if op.end is not None and op.stream:      # latency over: stream the bytes now
                op.end, op.remaining = None, op.stream
                continue
            running.remove(op)
            finish(op)
    tl.makespan = t
    tl.busy = {c.idx: c.busy for c in cores}
    return tl
