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
- A copy (an instruction with a DMA `path`) holds its pipe only while its bytes move; its
  start-up latency (`model.dma_latency`) runs after the pipe is free, so copies on one pipe
  overlap their latencies (docs/npu-model.md §1.5 (f)). It completes, for its record, flags and
  GM hand-offs, after bytes + latency; a set_flag or barrier on its pipe, a barrier "ALL", a
  sync_all and the end of the block wait until the pipe's copies have landed.
  `Timeline.held[i]` is how long record i held its pipe (its busy time).
  `model.dma_latency_on_pipe=True`: the older rule, latency then bytes, both on the pipe.
- `set_flag(A->B, id)` runs on pipe A after A's earlier work; `wait_flag(A->B, id)` runs on pipe B
  and starts only once a matching set has completed, matched first-in first-out per (A, B, id).
  A wait whose set never comes is a deadlock: `simulate` raises. `barrier` of a pipe is a 1-flag
  instruction on that pipe (pipes are in order already); `barrier="ALL"` stops the SCALAR unit
  until every pipe of the core has drained. Flags are per block and reset with each block.
- `barrier="SYNC_ALL"` (Ascend C's SyncAll) runs on the SCALAR unit: the core drains like
  "ALL", then waits until every block of the launch has reached the same (n-th) sync_all; then
  all go on after `sync_all_cycles`. Every block must be resident at once (block count <= cores)
  and call it equally often, or the launch deadlocks: `simulate` raises before running.
- Data moved to or from GM (`model.GM_PATHS`) streams (before its start-up latency, see above)
  at min(per-core path bandwidth, fair share of a chip-wide pool): the HBM pool
  (`hbm_bytes_per_cycle`) or the L2 pool (`l2_bytes_per_cycle`). Each share is max-min fair
  (water-filling) over the transfers streaming through that pool at that moment, on every core:
  a transfer capped below its share leaves the rest to the others. Rates change only when a
  transfer starts, changes pool or ends, so the model stays event-driven.
- L2 (`model.l2_bytes` > 0; docs/npu-model.md §1.5 (e)): a chip-wide cache of GM, cold at the
  launch's start, LRU, kept per `l2_line_bytes` sector of the copies' GM ranges (`Instr.gm`; a
  strided copy's rows are inferred from its bytes and span, `_rows`). Each copy is decided when
  it starts (simulation-time order; at equal times cores in index order, pipes in PIPES order).
  A read streams its missing bytes through HBM (then they are resident) and then its resident
  bytes through L2; data another copy is still filling counts as resident, but the reader ends
  no earlier than that fill (merged misses). A write allocates in L2 (dirty) and streams
  through L2; dirty data pays HBM only when evicted (write-back: those bytes are added to the
  HBM part of the copy whose fill evicted them). A copy without a GM range streams through HBM
  as before. `l2_bytes=0` turns L2 off.
- Blocks are placed in index order on the first free core (lowest core index first): with more
  blocks than cores they run in waves. A launch overhead is added once.
- MIX launches (`mix`; by default on a separated SoC, 910B, whose launch has both cube-side work:
  CUBE, MTE1, FIXPIPE or an MTE2 copy GM->L1/L0A/L0B; and vector-side work: VECTOR, MTE3 or an
  MTE2 copy into UB). An AI Core is then 1 AIC (cube core) + its AIVs (vector cores), each with
  its own SCALAR unit and MTE2. Every block is split into a cube sub-stream run on an AIC and a
  vector sub-stream run on one AIV of the same AI Core; `n_cores` counts AI Cores (AIC + AIV
  pairs, at most `model.aic_cores`): core ids 0..n-1 are the AICs, n..2n-1 their AIVs
  (`Timeline.core_kinds`). One AIV per block: the recorded stream of a block holds all its vector
  work, so this is MIX_AIC_1_1 (block_dim = AI Cores, 1 AIC : 1 AIV). A MIX_AIC_1_2 kernel
  splits its vector work over the two AIVs by `get_subblockidx()`; replaying its one stream on one
  AIV overstates the vector side by up to 2x (the second AIV of each AI Core stays idle here).
  Which side an instruction runs on (`side_of`, `split_block`): CUBE/MTE1/FIXPIPE and cube-side
  MTE2 copies -> AIC, VECTOR/MTE3 and other MTE2 copies -> AIV; a flag or barrier on MTE2 goes
  with the MTE2 copy it guards (a wait: the next MTE2 copy of the block, a set or barrier: the
  previous one); a SCALAR instruction goes to the side of its flag's other pipe if that pipe
  belongs to one side, else to the side of the next non-scalar instruction (the previous one at
  the end of the block); `barrier="ALL"` and "SYNC_ALL" run on both sides (both cores execute
  the kernel's scalar code: each drains itself, and a SyncAll in a MIX kernel counts the AICs
  and the AIVs). Between the sides, the only ordering is through GM (`Instr.gm`, the byte range
  a copy reads, path "GM->X", or writes, "X->GM"): a copy waits for every earlier (program order)
  copy of the other side whose range overlaps and conflicts with it (read after write, write
  after read or write) to complete, plus `cross_core_flag_cycles`. A set_flag / wait_flag whose
  two ends land on different sides is a cross-core flag: the wait starts no earlier than the set's
  end plus `cross_core_flag_cycles`.
Everything is arithmetic on the recorded sizes: the same input gives the same cycles anywhere.
The event loop touches only what an event changes (the cores whose ops ended or whose waits came
due, a heap of end times, the few streaming copies); it gives the same records, in the same
order, as a scan of every core and op at every event.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import count
from operator import attrgetter

import numpy as np

from .model import GM_PATHS, PipeModel

PIPES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXPIPE")
AIC, AIV, AI_CORE = "AIC", "AIV", "AI Core"          # Timeline.core_kinds values
KIND_PIPES = {AIC: ("SCALAR", "CUBE", "MTE1", "MTE2", "FIXPIPE"),     # msOpProf's cube core
              AIV: ("SCALAR", "VECTOR", "MTE2", "MTE3"),              # msOpProf's vector core
              AI_CORE: PIPES}
CUBE_PIPES = frozenset({"CUBE", "MTE1", "FIXPIPE"})
VECTOR_PIPES = frozenset({"VECTOR", "MTE3"})
CUBE_MTE2_PATHS = frozenset({"GM->L1", "GM->L0A", "GM->L0B"})   # the AIC's MTE2; others: AIV
_EPS = 1e-9
HBM, L2 = 0, 1                  # the shared pools a GM transfer streams through
_QUEUED = PIPES[1:]             # the pipes fed by the scalar unit's queues
_FIXED, _STREAMING, _PARKED, _DONE, _INFLIGHT = range(5)      # _Op.state


@dataclass
class Instr:
    """One instruction a block issued. `pipe` in msOpProf's spelling (PIPES); `path` the DMA path
    ("GM->UB", ...: model.PATHS) of a copy; `shape` (m, n, k) of an mmad; `src` "file:line" of
    the kernel source. Dependencies: `set_flag` / `wait_flag` = (src pipe, dst pipe, event id),
    `barrier` = a pipe name, "ALL" (drain this core) or "SYNC_ALL" (all blocks of the launch).
    `gm` = (start, end) byte addresses of the GM range a copy reads ("GM->X") or writes
    ("X->GM"), end exclusive, or () if unknown: the AIC <-> AIV hand-offs of a MIX launch."""
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
    gm: tuple = ()


@dataclass
class Timeline:
    """The simulated run: `records[i]` = (instr, core, pipe, start, end) in cycles, in the order
    the instructions completed (a copy's end includes its latency after its pipe was free);
    `held[i]` the cycles record i held its pipe (end - start but for such a copy);
    `issues[i]` = (instr, core, start, end) the SCALAR unit's issue
    slot of each non-SCALAR instruction (part of SCALAR's busy time, not of `records`);
    `flows[i]` = (set record index, wait record index), each wait_flag with the set_flag it
    consumed (matched first-in first-out); `handoffs[i]` = (record index, record index) a MIX
    launch's GM hand-off: the other side's copy whose completion released this copy (the latest
    of its dependencies); `busy[core][pipe]` busy cycles (SCALAR includes issuing);
    `core_kinds[core]` "AIC", "AIV" or "AI Core" (a core that runs cube and vector pipes: a
    coupled SoC, or mix=False); `n_cores` the `n_cores` argument (AI Cores in a MIX launch, whose
    cores are the AICs then the AIVs); `mix` whether blocks were split into AIC and AIV parts;
    `makespan` the cycles from the first start to the last end; `total_cycles` adds the launch
    overhead; `us` is `total_cycles` in microseconds at the model's clock. L2 counters (bytes of
    GM copies, module doc): `l2_hit_bytes` / `l2_miss_bytes` read from L2 / from HBM (a read of
    an unknown range counts as a miss), `l2_write_bytes` written into L2, `l2_writeback_bytes`
    dirty bytes evicted to HBM during the run; `l2_hit_ratio` = hits / reads."""
    soc: str
    n_cores: int
    clock_hz: float
    records: list = field(default_factory=list)
    held: list = field(default_factory=list)
    issues: list = field(default_factory=list)
    flows: list = field(default_factory=list)
    handoffs: list = field(default_factory=list)
    busy: dict = field(default_factory=dict)
    core_kinds: dict = field(default_factory=dict)
    mix: bool = False
    makespan: float = 0.0
    launch_cycles: float = 0.0
    l2_hit_bytes: float = 0.0
    l2_miss_bytes: float = 0.0
    l2_write_bytes: float = 0.0
    l2_writeback_bytes: float = 0.0

    @property
    def l2_hit_ratio(self) -> float:
        """Share of the GM bytes read that hit L2 (0.0 when nothing was read)."""
        reads = self.l2_hit_bytes + self.l2_miss_bytes
        return self.l2_hit_bytes / reads if reads else 0.0

    @property
    def total_cycles(self) -> float:
        return self.makespan + self.launch_cycles

    @property
    def us(self) -> float:
        return self.total_cycles / self.clock_hz * 1e6

    def pipe_busy(self, pipe: str) -> float:
        """Busy cycles of `pipe` summed over the cores."""
        return sum(b.get(pipe, 0.0) for b in self.busy.values())

    def core_name(self, core: int) -> str:
        """"AIC 0", "AIV 3", "AI Core 1": the kind and the core's index among its kind
        ("core<N>" for a core the Timeline has no kind for)."""
        kind = self.core_kinds.get(core)
        if kind is None:
            return f"core{core}"
        nth = sum(1 for c, k in self.core_kinds.items() if k == kind and c < core)
        return f"{kind} {nth}"


def side_of(ins: Instr) -> str | None:
    """"AIC" or "AIV": the core kind whose pipe runs `ins` on a separated SoC, or None when the
    pipe alone does not say (SCALAR, and flags or barriers on MTE2)."""
    if ins.pipe in CUBE_PIPES:
        return AIC
    if ins.pipe in VECTOR_PIPES:
        return AIV
    if ins.pipe == "MTE2" and ins.path:
        return AIC if ins.path in CUBE_MTE2_PATHS else AIV
    return None


def _is_work(ins: Instr) -> bool:
    return not (ins.set_flag or ins.wait_flag or ins.barrier)


def _pipe_kind(pipe: str) -> str | None:
    return AIC if pipe in CUBE_PIPES else AIV if pipe in VECTOR_PIPES else None


def _sides(block: list) -> list:
    """The side of each instruction of `block` (AIC, AIV or "both"); rules in the module doc."""
    side = [side_of(i) for i in block]
    mte2 = [k for k, i in enumerate(block) if i.pipe == "MTE2" and side[k]]
    for k, ins in enumerate(block):
        if ins.pipe == "MTE2" and side[k] is None:
            pos = bisect_left(mte2, k)
            prev = side[mte2[pos - 1]] if pos else None
            nxt = side[mte2[pos]] if pos < len(mte2) else None
            dep = ins.wait_flag or ins.set_flag
            other = _pipe_kind(dep[1] if ins.set_flag else dep[0]) if dep else None
            side[k] = ((nxt or prev) if ins.wait_flag else (prev or nxt)) or other or AIV
    nxt = [None] * len(block)
    after = None
    for k in range(len(block) - 1, -1, -1):
        nxt[k] = after
        if block[k].pipe != "SCALAR":
            after = side[k]
    before = None
    for k, ins in enumerate(block):
        if ins.pipe != "SCALAR" and ins.barrier != "SYNC_ALL":
            before = side[k]
            continue
        if ins.barrier in ("ALL", "SYNC_ALL"):
            side[k] = "both"
            continue
        dep = ins.wait_flag or ins.set_flag
        other = _pipe_kind(dep[1] if ins.set_flag else dep[0]) if dep else None
        side[k] = other or nxt[k] or before or AIV
    return side


def split_block(block: list) -> tuple:
    """Split one block's instructions for a MIX launch: ((AIC instrs, AIC deps), (AIV instrs,
    AIV deps)). deps maps an instruction's index in its sub-stream to the indices in the other
    sub-stream of the earlier GM accesses it must wait for (see the module docstring)."""
    side = _sides(block)
    subs = {AIC: [], AIV: []}
    deps = {AIC: {}, AIV: {}}
    acc = {AIC: [], AIV: []}          # GM accesses: (lo, hi, is_write, pipe, sub-stream index)
    for k, ins in enumerate(block):
        for s in ((AIC, AIV) if side[k] == "both" else (side[k],)):
            subs[s].append(ins)
        if side[k] == "both" or not ins.gm or not ins.path:
            continue
        src, _, dst = ins.path.partition("->")
        if "GM" not in (src, dst):
            continue
        s, me = side[k], len(subs[side[k]]) - 1
        other = AIV if s == AIC else AIC
        write, (lo, hi) = dst == "GM", ins.gm
        d = tuple(e[4] for e in acc[other] if e[0] < hi and lo < e[1] and (write or e[2]))
        if d:
            deps[s][me] = d
        # an access on the same pipe that covers an earlier one ends after it: depending on it
        # implies the earlier one (a write supersedes reads and writes, a read only reads)
        acc[s] = [e for e in acc[s] if not (e[3] == ins.pipe and lo <= e[0] and e[1] <= hi and
                                            (write or not e[2]))]
        acc[s].append((lo, hi, write, ins.pipe, me))
    return (subs[AIC], deps[AIC]), (subs[AIV], deps[AIV])


class _Op:
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
        self.state = _FIXED         # _FIXED (a timed part), _STREAMING, _PARKED or _DONE
        self.tail = 0.0             # a copy's latency after it releases its pipe
        self.held = None            # cycles it held its pipe, once it released it early


class _Core:
    __slots__ = ("idx", "kind", "block", "ptr", "queues", "running", "last_end", "fired", "busy",
                 "deps", "ended", "mate", "syncs", "arrived", "awaited", "pipes", "dep_pos",
                 "inflight")

    def __init__(self, idx, kind):
        self.idx, self.kind = idx, kind
        self.block = None
        self.busy = dict.fromkeys(PIPES, 0.0)

    def load(self, block, fired, deps, mate):
        self.block, self.ptr = (block or None), 0
        self.queues = {p: deque() for p in PIPES}
        self.running = dict.fromkeys(PIPES)
        self.last_end = dict.fromkeys(PIPES, -1.0)
        self.inflight = dict.fromkeys(PIPES, 0)   # copies past their pipe, in their latency
        self.fired = fired          # flag key -> deque of (set record index, end, core): per block
        self.deps = deps            # index -> indices in the mate's sub-stream (GM hand-offs)
        self.ended = {}             # index -> (end, record index) of finished instructions
        self.dep_pos = {}           # index -> how many of its deps were seen ended
        self.mate = mate            # the other core of this block in a MIX launch
        self.awaited = ()           # indices of this block the mate's GM hand-offs wait for
        used = {i.pipe for i in block or ()}
        self.pipes = [p for p in _QUEUED if p in used]     # the queued pipes the block uses
        self.syncs, self.arrived = 0, False

    def done(self) -> bool:
        return self.block is None or (self.ptr >= len(self.block) and
                                      not any(self.queues.values()) and
                                      not any(self.running.values()) and
                                      not any(self.inflight.values()))

    def drained(self) -> bool:
        return not any(self.queues.values()) and not any(
            self.running[p] for p in PIPES if p != "SCALAR") and not any(
            self.inflight.values())


def _cost(ins: Instr, model: PipeModel, core: _Core, pipe: str, t: float):
    """(fixed cycles, bytes streamed through a GM pool after them, per-core cap in bytes/cycle,
    latency after the pipe is released: a copy's start-up latency, module doc)."""
    if ins.barrier == "SYNC_ALL":
        return float(model.sync_all_cycles), 0.0, 0.0, 0.0
    if ins.set_flag or ins.wait_flag or ins.barrier:
        return float(model.flag_latency_cycles), 0.0, 0.0, 0.0
    if ins.path:
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
    idle = core.last_end[pipe] < t          # no compute instruction ended just now
    if pipe == "VECTOR":
        head, slope = model.vector_cost(ins.name)
        c = slope * max(ins.repeats, 1) + (head if idle else 0)
        if ins.bytes % model.repeat_bytes:
            c += model.count_mode_penalty
        return float(c), 0.0, 0.0, 0.0
    if pipe == "CUBE":
        if ins.shape:
            c = model.cube_cycles(*ins.shape, ins.dtype_bytes or 2)
        else:
            c = -(-ins.macs // model.cube_macs_per_cycle.get(ins.dtype_bytes or 2, 4096))
        return float(c + (model.cube_head_cycles if idle else 0)), 0.0, 0.0, 0.0
    return float(model.scalar_issue_cycles), 0.0, 0.0, 0.0


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


def _rows(nbytes: int, lo: int, hi: int) -> tuple:
    """(rows, row bytes, stride) of a copy of `nbytes` whose GM side spans [lo, hi). A strided
    copy (DataCopy blocks, Nd2Nz rows, fixpipe rows) records only its span, so the rows are
    inferred: the most rows (shortest row) that divide `nbytes` and give a whole-byte stride.
    A copy whose span is its size is one contiguous row."""
    span = hi - lo
    if nbytes <= 0 or span <= nbytes:
        return 1, span, span
    divs, d = set(), 1
    while d * d <= nbytes:
        if nbytes % d == 0:
            divs.update((d, nbytes // d))
        d += 1
    for w in sorted(divs):
        r = nbytes // w
        if r < 2:
            break
        if (span - w) % (r - 1) == 0:            # stride >= w because span > r * w
            return r, w, (span - w) // (r - 1)
    return 1, span, span                         # unreachable for even sizes (2 rows fit)


class _L2:
    """The chip's L2 (module doc): residency of the GM ranges the launch's copies touch, kept
    per `g`-byte sector in flat numpy arrays (resident, dirty, last use, in-flight filler) over
    the merged spans of all recorded copies. A copy's sectors are a slice, a strided 2-D view
    or an index array (`_plan`), so one access costs a few numpy calls whatever its size.
    Replacement is LRU by access tick; when full it evicts the oldest sectors down to
    capacity - 1/64 (batched, so a stream over a working set larger than L2 costs one O(sectors)
    pass per 1/64 of capacity)."""

    def __init__(self, model: PipeModel, blocks: list):
        g = max(int(model.l2_line_bytes), 1)
        keys = {(i.gm[0], i.gm[1], i.bytes) for b in blocks for i in b
                if i.gm and i.gm[1] > i.gm[0] and i.path in GM_PATHS}
        spans = sorted({k[:2] for k in keys})
        while sum(hi - lo for lo, hi in spans) // g > 1 << 27:      # cap the arrays' size
            g *= 2
        regions: list = []
        for lo, hi in spans:
            a, b = lo // g * g, -(-hi // g) * g
            if regions and a <= regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], b)
            else:
                regions.append([a, b])
        self.g, self.los, self.bases, off = g, [], [], 0
        for a, b in regions:
            self.los.append(a)
            self.bases.append(off - a // g)           # sector index = addr // g + base
            off += (b - a) // g
        self.plans = {k: self._plan(*k) for k in keys}
        pad = max((p[3] for p in self.plans.values() if p[0] == 1), default=0)
        n = off + pad
        self.resident = np.zeros(n, bool)
        self.dirty = np.zeros(n, bool)
        self.last = np.zeros(n, np.int64)
        self.filler = np.full(n, -1, np.int64)
        self.cap = max(int(model.l2_bytes) // g, 1)
        self.slack = self.cap // 64
        self.n = self.tick = 0
        self.live: dict = {}                          # fill number -> _Op still streaming
        self.hit = self.miss = self.written = self.writeback = 0.0

    def _plan(self, lo: int, hi: int, nbytes: int) -> tuple:
        """(kind, ...) addressing the sectors a copy touches: (0, first, end, count) a slice,
        (1, first, rows, stride, per-row, count) a strided view, (2, indices, count)."""
        g = self.g
        base = self.bases[bisect_right(self.los, lo) - 1]
        r, w, s = _rows(nbytes, lo, hi)
        first = lo // g + base
        k = (lo + w - 1) // g - lo // g + 1
        if r == 1:
            return 0, first, first + k, k
        if s % g == 0 and k <= s // g:
            return 1, first, r, s // g, k, r * k
        starts = lo + np.arange(r, dtype=np.int64) * s
        f, e = starts // g, (starts + w - 1) // g
        idx = f[:, None] + np.arange(int((e - f).max()) + 1)
        idx = np.unique(idx[idx <= e[:, None]]) + base
        return 2, idx, idx.size

    @staticmethod
    def _view(arr, p):
        if p[0] == 0:
            return arr[p[1]:p[2]]
        if p[0] == 1:
            return arr[p[1]:p[1] + p[2] * p[3]].reshape(p[2], p[3])[:, :p[4]]
        return arr[p[1]]

    def _set(self, arr, p, value, mask=None):
        if p[0] == 2:
            arr[p[1] if mask is None else p[1][mask]] = value
        elif mask is None:
            self._view(arr, p)[...] = value
        else:
            self._view(arr, p)[mask] = value

    def access(self, ins: Instr, write: bool, fill_no: int) -> tuple:
        """Decide a copy at its start: (bytes through HBM, bytes through L2, fill numbers of the
        in-flight copies whose data it hits and must wait for). Reads: resident sectors hit,
        the rest miss (HBM) and are filled now; writes allocate (dirty) and stream into L2;
        dirty sectors evicted to make room are written back through HBM, charged to this copy."""
        p = self.plans[(ins.gm[0], ins.gm[1], ins.bytes)]
        count = p[-1]
        hitmask = self._view(self.resident, p)
        if p[0] != 2:
            hitmask = hitmask.copy()
        h = int(np.count_nonzero(hitmask))
        self.tick += 1
        waits = ()
        if h and self.live:
            f = np.unique(self._view(self.filler, p)[hitmask])
            waits = tuple(int(x) for x in f if int(x) in self.live)
        self._set(self.resident, p, True)
        self._set(self.last, p, self.tick)
        if write:
            self._set(self.dirty, p, True)
            self._set(self.filler, p, fill_no)
        elif h < count:
            self._set(self.filler, p, fill_no, None if h == 0 else ~hitmask)
        self.n += count - h
        wb = self._evict() if self.n > self.cap else 0
        self.writeback += wb
        if write:
            self.written += ins.bytes
            return float(wb), float(ins.bytes), waits
        hit = ins.bytes * h / count if count else 0.0
        self.hit += hit
        self.miss += ins.bytes - hit
        return ins.bytes - hit + wb, hit, waits

    def _evict(self) -> int:
        """Evict the least recently used sectors, never the current copy's (a copy larger than
        L2 stays over capacity until the next access); the bytes of the dirty ones evicted."""
        need = self.n - self.cap + self.slack
        res = np.flatnonzero(self.resident)
        ticks = self.last[res]
        old = ticks < self.tick
        res, ticks = res[old], ticks[old]
        if need >= res.size:
            ev = res
        else:
            ev = res[ticks <= np.partition(ticks, need - 1)[need - 1]]
        wb = int(np.count_nonzero(self.dirty[ev])) * self.g
        self.resident[ev] = False
        self.dirty[ev] = False
        self.filler[ev] = -1
        self.n -= ev.size
        return wb


def _check(blocks: list) -> tuple:
    """Validate pipes and gm ranges; (launch has cube-side work, has vector-side work)."""
    cube = vec = False
    for blk in blocks:
        for ins in blk:
            if ins.pipe not in PIPES:
                raise ValueError(f"simulate: pipe must be one of {PIPES}, got "
                                 f"pipe={ins.pipe!r} for {_describe(ins)}")
            if ins.gm and not (len(ins.gm) == 2 and 0 <= ins.gm[0] <= ins.gm[1]):
                raise ValueError(f"simulate: gm must be () or (start, end) with 0 <= start <= "
                                 f"end, got gm={ins.gm!r} for {_describe(ins)}")
            if _is_work(ins):
                s = side_of(ins)
                cube |= s == AIC
                vec |= s == AIV
    return cube, vec


def simulate(blocks: list, model: PipeModel, n_cores: int, *, mix: bool | None = None
             ) -> Timeline:
    """Replay `blocks` (one list of Instr per block, in issue order) on `n_cores` cores of
    `model`. `mix`: split each block into an AIC and an AIV part (module docstring); None (the
    default) does so on a separated SoC when the launch has both cube-side and vector-side work;
    `n_cores` then counts AI Cores. Raises ValueError on a deadlock (a wait_flag whose set_flag
    never comes, a sync_all that not every block reaches)."""
    if n_cores < 1:
        raise ValueError(f"simulate: n_cores must be >= 1, got n_cores={n_cores}")
    cube, vec = _check(blocks)
    if mix is None:
        mix = model.separated and cube and vec
    elif mix and not model.separated:
        raise ValueError(f"simulate: mix=True needs a separated SoC (AIC + AIV cores), got "
                         f"{model.soc} with separated=False")
    if mix and n_cores > model.aic_cores:
        raise ValueError(f"simulate: a MIX launch places each block on one AIC and one AIV, so "
                         f"n_cores must be <= {model.aic_cores} (the AICs of {model.soc}), got "
                         f"n_cores={n_cores}")
    if mix:
        kinds = [AIC] * n_cores + [AIV] * n_cores
        work = [split_block(b) for b in blocks]
    else:
        kind = AI_CORE if not model.separated or (cube and vec) else AIC if cube else AIV
        kinds = [kind] * n_cores
        work = [((b, {}),) for b in blocks]
    cores = [_Core(i, k) for i, k in enumerate(kinds)]
    slots = [(cores[i], cores[n_cores + i]) if mix else (cores[i],) for i in range(n_cores)]

    counts = {(b, s): sum(1 for i in sub if i.barrier == "SYNC_ALL")
              for b, parts in enumerate(work) for s, (sub, _) in enumerate(parts) if sub}
    n_sync = set(counts.values())
    if n_sync - {0}:
        if len(n_sync) > 1:
            per = {}
            for (b, _), n in counts.items():
                per[b] = max(per.get(b, 0), n)
            raise ValueError("simulate: every block must call sync_all the same number of times, "
                             f"got {per} (block: calls)")
        if len(blocks) > n_cores:
            raise ValueError(f"simulate: sync_all needs every block resident at once, got "
                             f"{len(blocks)} blocks on n_cores={n_cores}: the blocks of the "
                             f"first wave would wait for blocks that never start (deadlock)")
    participants = len(counts)
    arrivals: dict = {}             # n-th sync_all -> cores arrived

    tl = Timeline(model.soc, n_cores, model.clock_hz, launch_cycles=model.launch_overhead_cycles,
                  core_kinds={c.idx: c.kind for c in cores}, mix=mix)
    pending = deque(work)
    l2 = _L2(model, blocks) if model.l2_bytes > 0 else None
    live = l2.live if l2 is not None else {}
    fills: list = []                # copies that filled L2, by fill number
    # The event loop (same results as scanning every core and op at every event, faster):
    # - ops in flight are kept by kind: `plain` and `latent` are heaps of (end, seq, op), ops
    #   without a GM stream and GM copies in their start-up latency; `streams` holds the copies
    #   streaming now and `parked` those streamed but waiting for an L2 fill, both in start
    #   order (`_Op.seq`, the order every tie is broken in);
    # - only "dirty" cores are examined for instructions to start: a core whose op ended (and
    #   its MIX mate: flags and GM hand-offs cross to it), whose block was loaded, whose wait
    #   became due (`wakeq`, a heap of (time, core)), or every core when a sync_all arrival
    #   changed. A pass examines the dirty cores in index order, as a full scan would.
    plain: list = []
    latent: list = []
    streams: list = []
    parked: list = []
    wakeq: list = []
    # The scalar unit's issue slots of non-SCALAR instructions: (end, start, core, index, instr).
    # All last `issue` cycles, so they end in the order they started: a FIFO, not a heap. Their
    # ends change only the issuing core (its queues) and the issues list (in start order), so
    # they are taken out of the ops' tie order (which stays the same among the other ops).
    dispatching: deque = deque()
    seqs = count()
    dirty = set(range(len(cores)))
    slot_of = [c.idx % n_cores for c in cores]
    pstate = [-1, [], set()]        # the pass: core examined now, its heap, cores queued in it
    issue = model.scalar_issue_cycles
    overlap = not model.dma_latency_on_pipe
    refill = False                  # the streaming set changed: recompute the rates
    cross = model.cross_core_flag_cycles
    t = 0.0

    def start(c: _Core, pipe, idx, ins, partner=None, handoff=None):
        nonlocal refill
        fixed, stream, cap, tail = _cost(ins, model, c, pipe, t)
        op = _Op(c, pipe, idx, ins, t, t + fixed, stream, cap, partner=partner, handoff=handoff)
        op.tail = tail
        if stream and l2 is not None and ins.gm and ins.gm[1] > ins.gm[0]:
            write = ins.path.endswith("->GM")
            fill = len(fills)
            hbm, hit, op.after = l2.access(ins, write, fill)
            op.phases = [(b, pool) for b, pool in ((hbm, HBM), (hit, L2)) if b > 0]
            if write or hbm > 0:
                op.fill = fill
                fills.append(op)
                live[fill] = op
        elif stream and not ins.path.endswith("->GM"):
            tl.l2_miss_bytes += stream              # a read of an unknown range: HBM
        if ins.barrier == "SYNC_ALL":
            c.syncs, c.arrived = c.syncs + 1, False
        op.seq = next(seqs)
        c.running[pipe] = op
        if stream and not fixed and overlap:      # no start-up on the pipe: stream at once
            op.size, op.pool = op.phases.pop(0)
            op.end, op.remaining = None, op.size
            op.lim = _EPS * max(op.size, 1.0)
            op.state = _STREAMING
            streams.append(op)                    # the newest op: start order is kept
            refill = True
        else:
            heappush(latent if stream else plain, (op.end, op.seq, op))

    def finish(op: _Op):
        c, ins = op.core, op.ins
        op.state = _DONE
        dirty.add(c.idx)
        if c.mate is not None and (ins.set_flag or op.idx in c.awaited):   # the mate waits
            dirty.add(c.mate.idx)
        if op.fill is not None:
            del live[op.fill]
        if op.held is None:
            c.running[op.pipe] = None
            c.busy[op.pipe] += t - op.start
            held = t - op.start
        else:                       # released its pipe before: its latency is over now
            c.inflight[op.pipe] -= 1
            held = op.held
        rec = len(tl.records)
        if ins.set_flag:
            c.fired.setdefault(ins.set_flag, deque()).append((rec, t, c.idx))
        elif _is_work(ins):
            c.last_end[op.pipe] = t
        if op.partner is not None:
            tl.flows.append((op.partner, rec))
        if op.handoff is not None:
            tl.handoffs.append((op.handoff, rec))
        c.ended[op.idx] = (t, rec)
        tl.records.append((ins, c.idx, op.pipe, op.start, t))
        tl.held.append(held)

    def complete(op):
        """A timed part of `op` is over: stream its next phase, release its pipe for its latency,
        park it for an L2 fill, or finish it."""
        nonlocal refill
        if op.state == _STREAMING or op.phases:
            refill = True             # a copy starts streaming, changes pool, parks or ends
        if op.phases:                 # start-up or a phase over: stream the next phase now
            op.size, op.pool = op.phases.pop(0)
            op.end, op.remaining = None, op.size
            op.lim = _EPS * max(op.size, 1.0)     # streamed once remaining <= lim
            if op.state != _STREAMING:
                op.state = _STREAMING
                streams.append(op)
            return
        if op.tail and op.held is None:           # the pipe is free, the data still in flight
            c = op.core
            c.running[op.pipe] = None
            c.busy[op.pipe] += t - op.start
            c.inflight[op.pipe] += 1
            op.held = t - op.start
            op.state = _INFLIGHT
            op.end = t + op.tail
            heappush(plain, (op.end, op.seq, op))
            dirty.add(c.idx)
            return
        if op.after and any(f in live for f in op.after):   # data still filling
            op.parked = True
            op.state = _PARKED
            parked.append(op)
            return
        finish(op)

    def due(c: _Core, at: float) -> bool:
        if at <= t:
            return True
        heappush(wakeq, (at, c.idx))
        return False

    def arrived_all():
        """A sync_all arrival: every core may be ready now (later ones in this pass)."""
        i, q, inq = pstate
        for j in range(len(cores)):
            if j > i:
                if j not in inq:
                    inq.add(j)
                    heappush(q, j)
            else:
                dirty.add(j)

    def ready(c: _Core, idx: int, ins: Instr) -> bool:
        if ins.set_flag or ins.barrier in PIPES:  # runs after the pipe's copies have landed
            return not c.inflight[ins.pipe]
        if ins.wait_flag:
            q = c.fired.get(ins.wait_flag)
            if not q:
                return False
            _, end, by = q[0]
            return due(c, end + (cross if by != c.idx else 0))
        if ins.barrier == "ALL":
            return c.drained()
        if ins.barrier == "SYNC_ALL":
            if not c.arrived:
                if not c.drained():
                    return False
                c.arrived = True
                arrivals[c.syncs] = arrivals.get(c.syncs, 0) + 1
                arrived_all()
            return arrivals[c.syncs] == participants
        d = c.deps.get(idx)
        if d:
            ended = c.mate.ended
            k, n = c.dep_pos.get(idx, 0), len(d)      # d[:k] have ended already
            while k < n and d[k] in ended:
                k += 1
            if k < n:
                c.dep_pos[idx] = k
                return False
            return due(c, max(ended[j] for j in d)[0] + cross)
        return True

    def take(c: _Core, idx: int, ins: Instr):
        """(set record index of a wait_flag, record index of a GM hand-off), consumed."""
        if ins.wait_flag:
            return c.fired[ins.wait_flag].popleft()[0], None
        d = c.deps.get(idx)
        if d:
            return None, max(c.mate.ended[j] for j in d)[1]
        return None, None

    def step() -> bool:
        nonlocal dirty
        moved = False
        loaded = []
        if pending:
            for s in sorted({slot_of[i] for i in dirty}):
                slot = slots[s]
                if pending and all(c.done() for c in slot):
                    parts, fired = pending.popleft(), {}
                    for n, (c, (sub, deps)) in enumerate(zip(slot, parts)):
                        c.load(sub, fired, deps, slot[1 - n] if mix else None)
                        dirty.add(c.idx)
                        loaded.append(c.idx)
                    if mix:           # the indices each core's GM hand-offs wait for
                        for c, (_, deps) in zip(slot[::-1], parts):
                            c.awaited = {j for d in deps.values() for j in d}
                    moved = True
        if not dirty:
            return moved
        q = sorted(dirty)
        inq = set(q)
        dirty = set(loaded)
        pstate[1], pstate[2] = q, inq
        while q:
            i = heappop(q)
            pstate[0] = i
            c = cores[i]
            block = c.block
            if block is None:
                continue
            cm = False
            running = c.running
            if running["SCALAR"] is None and c.ptr < len(block):
                ptr = c.ptr
                ins = block[ptr]
                if ins.pipe != "SCALAR" and ins.barrier != "SYNC_ALL":
                    running["SCALAR"] = True              # issuing: see `dispatching`
                    dispatching.append((t + issue, t, c, ptr, ins))
                    c.ptr += 1
                    cm = True
                elif ready(c, ptr, ins):
                    partner, handoff = take(c, ptr, ins)
                    start(c, "SCALAR", ptr, ins, partner=partner, handoff=handoff)
                    c.ptr += 1
                    cm = True
            queues, deps, fired = c.queues, c.deps, c.fired
            for p in c.pipes:
                qp = queues[p]
                if qp and running[p] is None:
                    idx = qp[0]
                    ins = block[idx]
                    if ins.wait_flag:             # (the common waits, checked inline)
                        if not fired.get(ins.wait_flag) or not ready(c, idx, ins):
                            continue
                        partner, handoff = take(c, idx, ins)
                    elif ins.set_flag:
                        if c.inflight[p]:         # after the pipe's copies have landed
                            continue
                        partner = handoff = None
                    elif ins.barrier or idx in deps:
                        if not ready(c, idx, ins):
                            continue
                        partner, handoff = take(c, idx, ins)
                    else:
                        partner = handoff = None
                    qp.popleft()
                    start(c, p, idx, ins, partner=partner, handoff=handoff)
                    cm = True
            if cm:            # a start enables nothing else on this core until an op ends
                moved = True
        pstate[0] = -1
        return moved

    def issued():
        """The issue slots that end by now: queue their instructions on their pipes."""
        while dispatching and dispatching[0][0] <= t:
            _, st, c, idx, ins = dispatching.popleft()
            c.running["SCALAR"] = None
            c.busy["SCALAR"] += t - st
            c.queues[ins.pipe].append(idx)
            tl.issues.append((ins, c.idx, st, t))
            dirty.add(c.idx)

    seq_of = attrgetter("seq")
    hbm_pool, l2_pool = model.hbm_bytes_per_cycle, model.l2_bytes_per_cycle
    inf = float("inf")
    while True:
        while step():
            if dispatching and dispatching[0][0] <= t:
                issued()
            if plain and plain[0][0] <= t:      # ops that took no time
                done = []
                while plain and plain[0][0] <= t:
                    done.append(heappop(plain)[2])
                done.sort(key=seq_of)
                for op in done:
                    complete(op)
        if not (plain or latent or streams or parked or wakeq or dispatching):
            stuck = [c for c in cores if not c.done()]
            if stuck:
                def heads(c):
                    h = [c.block[q[0]] for q in c.queues.values() if q]
                    return h + ([c.block[c.ptr]] if c.ptr < len(c.block) else [])
                # name the first core stuck on a wait_flag (others may wait at a sync_all)
                waits = next((heads(c) for c in stuck if any(w.wait_flag for w in heads(c))),
                             heads(stuck[0]))
                raise ValueError("simulate: every wait_flag must have a matching set_flag, got "
                                 "a deadlock at " + "; ".join(_describe(w) for w in waits))
            break
        if refill:                    # rates change only when the streaming set does
            refill = False
            hs = [op for op in streams if op.pool == HBM]
            if hs:
                _waterfill(hs, hbm_pool)
            if len(hs) < len(streams):
                _waterfill([op for op in streams if op.pool == L2], l2_pool)
        nxt = plain[0][0] if plain else inf
        if dispatching and dispatching[0][0] < nxt:
            nxt = dispatching[0][0]
        if latent and latent[0][0] < nxt:
            nxt = latent[0][0]
        for op in streams:
            x = t + op.remaining / op.rate
            if x < nxt:
                nxt = x
        if wakeq and wakeq[0][0] < nxt:
            nxt = wakeq[0][0]
        dt = nxt - t
        for op in streams:
            op.remaining -= op.rate * dt
        t = nxt
        while wakeq and wakeq[0][0] <= t:
            dirty.add(heappop(wakeq)[1])
        if dispatching and dispatching[0][0] <= t:
            issued()
        cand = [op for op in streams if op.remaining <= op.lim]
        while plain and plain[0][0] <= t:
            cand.append(heappop(plain)[2])
        while latent and latent[0][0] <= t:
            cand.append(heappop(latent)[2])
        if not cand:
            continue
        cand.sort(key=seq_of)
        for op in cand:
            complete(op)
        streams[:] = [op for op in streams if op.state == _STREAMING]
        streams.sort(key=seq_of)
        if parked:                    # a parked copy ends with the last fill it waits for
            parked.sort(key=seq_of)
            again = True
            while again:
                again = False
                for op in list(parked):
                    if not any(f in live for f in op.after):
                        parked.remove(op)
                        finish(op)
                        again = True
    tl.makespan = t
    tl.busy = {c.idx: c.busy for c in cores}
    if l2 is not None:
        tl.l2_hit_bytes, tl.l2_write_bytes = l2.hit, l2.written
        tl.l2_miss_bytes += l2.miss
        tl.l2_writeback_bytes = l2.writeback
    return tl
