"""A deterministic discrete-event model of the AI Cores' pipes (docs/design.md, the NPU view).

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
- L2 (`model.l2_bytes` > 0): rt/npu/l2.py.
- Blocks are placed in index order on the first free core (lowest core index first): with more
  blocks than cores they run in waves. A launch overhead is added once.
- MIX launches (`mix`; by default on a separated SoC whose launch has cube-side and vector-side
  work): rt/npu/mix.py.
Everything is arithmetic on the recorded sizes: the same input gives the same cycles anywhere.
The event loop touches only what an event changes (the cores whose ops ended or whose waits came
due, a heap of end times, the few streaming copies); it gives the same records, in the same
order, as a scan of every core and op at every event.
"""
from __future__ import annotations

from collections import deque
from heapq import heappop, heappush
from itertools import count
from operator import attrgetter


from .instr import (AI_CORE, AIC, AIV, CUBE_MTE2_PATHS, CUBE_PIPES, KIND_PIPES,  # noqa: F401
                    PIPES, VECTOR_PIPES, Instr, Timeline)
from .l2 import L2Cache
from .mix import is_work, side_of, split_block  # noqa: F401  (rt.npu exports side_of)
from .model import GM_PATHS, PipeModel

_EPS = 1e-9
HBM, L2 = 0, 1                  # the shared pools a GM transfer streams through
_QUEUED = PIPES[1:]             # the pipes fed by the scalar unit's queues
_FIXED, _STREAMING, _PARKED, _DONE, _INFLIGHT = range(5)      # _Op.state


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
            if is_work(ins):
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
    l2 = L2Cache(model, blocks) if model.l2_bytes > 0 else None
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
        elif is_work(ins):
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
