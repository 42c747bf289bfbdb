"""One pipe of an AI Core in the NPU simulator (rt/npu/sim.py), what an instruction costs on it,
and the op it runs.

A `Pipe` is an in-order queue of issued instructions, the op running on it, when its last compute
instruction ended (its start-up rule: vector and cube start-up is charged only when the pipe was
idle), the copies that released it and are still in their start-up latency, and its busy cycles.
`op_cost` is the pipes' cost rules (start-up and throughput, docs/npu-model.md §1.3-§1.6): a rule
for a new pipe, or a new term on one (a bank-conflict term, another SoC's pipe), is one entry
of `COMPUTE_COSTS` or one branch of `op_cost`; a queue rule (the issue-queue depth) is a method
here.
"""
from __future__ import annotations

from collections import deque

from .instr import Instr
from .model import GM_PATHS, PipeModel

HBM, L2 = 0, 1                  # the shared pools a GM transfer streams through
FIXED, STREAMING, PARKED, DONE, INFLIGHT = range(5)      # Op.state


class Op:
    """An instruction started on a pipe of a core. Its life: a timed part (`end` known: start-up
    or fixed work), then, for a GM copy, its `phases` streamed one after the other through a
    shared pool (HBM or L2) at the rate the simulator gives it, then its `tail` (a copy's latency
    after it released its pipe), then, when it read data an in-flight L2 fill brings, parked
    until that fill ends."""
    __slots__ = ("core", "pipe", "idx", "ins", "start", "end", "stream", "remaining", "cap",
                 "rate", "partner", "handoff", "phases", "pool", "size", "after", "parked",
                 "fill", "seq", "state", "lim", "tail", "held")

    def __init__(self, core, pipe, idx, ins, start, end, stream=0.0, cap=0.0, partner=None,
                 handoff=None):
        self.core, self.pipe, self.idx, self.ins = core, pipe, idx, ins
        self.start, self.end = start, end
        self.stream, self.remaining, self.cap, self.rate = stream, 0.0, cap, 0.0
        self.partner = partner      # a wait_flag's set_flag: its index in Timeline.records
        self.handoff = handoff      # the other side's copy that released this one: its record
        self.phases = [(stream, HBM)] if stream else ()   # (bytes, pool) streamed in turn
        self.pool, self.size = HBM, 0.0                   # the phase streaming now
        self.after = ()             # in-flight L2 fills (their fill numbers) this copy hit
        self.parked = False         # streamed, waiting for `after`
        self.fill = None            # this copy's fill number while it fills L2
        self.seq = 0                # start order: ties between ops are broken in this order
        self.state = FIXED          # FIXED (a timed part), STREAMING, PARKED, INFLIGHT or DONE
        self.tail = 0.0             # a copy's latency after it releases its pipe
        self.held = None            # cycles it held its pipe, once it released it early

    def next_phase(self) -> None:
        """Stream the next (bytes, pool) phase from now on."""
        self.size, self.pool = self.phases.pop(0)
        self.end, self.remaining = None, self.size
        self.lim = 1e-9 * max(self.size, 1.0)     # streamed once remaining <= lim


class Pipe:
    """One pipe of one core (module doc). `queue` holds indices into the core's block, in issue
    order; `running` the op on the pipe (or True on SCALAR while it issues an instruction);
    `last_end` when its last compute instruction ended; `inflight` its copies past the pipe, in
    their latency; `busy` the cycles it was busy over the whole launch (kept across blocks)."""
    __slots__ = ("name", "queue", "running", "last_end", "inflight", "busy")

    def __init__(self, name: str):
        self.name = name
        self.busy = 0.0
        self.reset()

    def reset(self) -> None:
        """A new block on the core: empty and idle (its busy cycles stay)."""
        self.queue = deque()
        self.running = None
        self.last_end = -1.0
        self.inflight = 0

    def idle_at(self, t: float) -> bool:
        """No compute instruction ended on it just now: the next one pays its start-up."""
        return self.last_end < t

    def full(self, depth: int) -> bool:
        """Issue-queue depth rule (`PipeModel.issue_queue_depth`, 0 = unbounded): the SCALAR unit
        may not issue to this pipe while `depth` instructions wait in its queue."""
        return 0 < depth <= len(self.queue)

    def release(self, op: Op, t: float) -> float:
        """`op` leaves the pipe at `t`: the pipe is free; the cycles it held it."""
        self.running = None
        held = t - op.start
        self.busy += held
        return held


def _sync_cost(ins: Instr, model: PipeModel) -> float:
    if ins.barrier == "SYNC_ALL":
        return float(model.sync_all_cycles)
    return float(model.flag_latency_cycles)


def _copy_cost(ins: Instr, model: PipeModel) -> tuple:
    bw = model.dma_bytes_per_cycle.get(ins.path)
    if bw is None:
        raise ValueError(f"simulate: {ins.name} at {ins.src or '?'}: path must be one of "
                         f"{sorted(model.dma_bytes_per_cycle)}, got path={ins.path!r}")
    lat = float(model.dma_latency.get(ins.path, 0))
    if model.dma_latency_on_pipe:       # the older rule: the pipe waits out the latency
        if ins.path in GM_PATHS:
            return lat, float(ins.bytes), bw, 0.0
        return lat + ins.bytes / bw, 0.0, 0.0, 0.0
    if ins.path in GM_PATHS:
        return 0.0, float(ins.bytes), bw, lat
    return ins.bytes / bw, 0.0, 0.0, lat


def _vector_cost(ins: Instr, model: PipeModel, idle: bool) -> float:
    head, slope = model.vector_cost(ins.name)
    c = slope * max(ins.repeats, 1) + (head if idle else 0)
    if ins.bytes % model.repeat_bytes:
        c += model.count_mode_penalty
    return c


def _cube_cost(ins: Instr, model: PipeModel, idle: bool) -> float:
    if ins.shape:
        c = model.cube_cycles(*ins.shape, ins.dtype_bytes or 2)
    else:
        c = -(-ins.macs // model.cube_macs_per_cycle.get(ins.dtype_bytes or 2, 4096))
    return c + (model.cube_head_cycles if idle else 0)


# compute pipe -> cycles(ins, model, idle): start-up (when idle) plus work over its throughput;
# any other pipe's work costs the scalar issue
COMPUTE_COSTS = {"VECTOR": _vector_cost, "CUBE": _cube_cost}


def op_cost(ins: Instr, model: PipeModel, pipe: Pipe, t: float) -> tuple:
    """(fixed cycles, bytes streamed through a GM pool after them, per-core cap in bytes/cycle,
    latency after the pipe is released: a copy's start-up latency, sim module doc) of `ins`
    starting on `pipe` at `t`."""
    if ins.set_flag or ins.wait_flag or ins.barrier or ins.cross:
        return _sync_cost(ins, model), 0.0, 0.0, 0.0
    if ins.path:
        return _copy_cost(ins, model)
    rule = COMPUTE_COSTS.get(pipe.name)
    if rule is not None:
        return float(rule(ins, model, pipe.idle_at(t))), 0.0, 0.0, 0.0
    return float(model.scalar_issue_cycles), 0.0, 0.0, 0.0


def waterfill(streams: list, pool: float) -> None:
    """Max-min fair rates of the streaming transfers under a shared `pool` (bytes/cycle)."""
    order = sorted(range(len(streams)), key=lambda i: streams[i].cap)
    left = pool
    for n, i in enumerate(order):
        r = min(streams[i].cap, left / (len(order) - n))
        streams[i].rate = r
        left -= r
