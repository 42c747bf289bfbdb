"""A deterministic discrete-event model of the AI Cores' pipes (docs/npu-model.md).

Input: one instruction list per block (`Instr`, in the order the block issued them), a
`PipeModel` and the number of cores. The model:
- Each core has the pipes of msOpProf's trace: SCALAR, VECTOR, CUBE, MTE1, MTE2, MTE3, FIXPIPE.
  The SCALAR unit walks the block's instructions in program order and issues each one
  (`scalar_issue_cycles`); SCALAR work (and a wait on SCALAR) runs on it, every other instruction
  goes to its pipe's queue. Pipe queues are unbounded unless `model.issue_queue_depth` > 0: then
  the SCALAR unit stalls (in program order) while that many instructions wait in the queue of
  the pipe its next instruction goes to (docs/npu-model.md §1.6).
- Each pipe runs its queue in order, one instruction at a time. An instruction starts when its
  pipe is free and its dependency is met; it costs a start-up latency plus its work over the
  pipe's throughput (vector and cube start-up is charged only when the pipe was idle, the rule of
  pto-isa's cost model, docs/npu-model.md §1.4). The pipes and their cost rules: rt/npu/pipe.py.
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
  The dependency rules, and where a new kind goes: rt/npu/core.py.
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
- MIX launches replayed from each instance's own stream (`roles`: a recorded MIX kernel): every
  group on its AIC and AIVs, cross-core flags, ib_set / ib_wait as dependencies:
  rt/npu/xcore.py. Otherwise a launch with cube-side and vector-side work on a separated SoC
  (`mix`) is split as if a compiler had split each block: rt/npu/mix.py.
Everything is arithmetic on the recorded sizes: the same input gives the same cycles anywhere.
The event loop (`Simulator`) touches only what an event changes (the cores whose ops ended or
whose waits came due, a heap of end times, the few streaming copies); it gives the same records,
in the same order, as a scan of every core and op at every event (tests/npu_reference.py,
checked on every simulator case of the tests).
"""
from __future__ import annotations

from collections import deque
from heapq import heappop, heappush
from itertools import count
from operator import attrgetter

from .core import Core
from .instr import (AI_CORE, AIC, AIV, CUBE_MTE2_PATHS, CUBE_PIPES, KIND_PIPES,  # noqa: F401
                    PIPES, VECTOR_PIPES, Instr, Timeline)
from .l2 import L2Cache
from .mix import is_work, side_of, split_block  # noqa: F401  (rt.npu exports side_of)
from .model import PipeModel
from .pipe import DONE, HBM, INFLIGHT, L2, PARKED, STREAMING, Op, op_cost, waterfill
from .xcore import CrossFlags, launch_cycles, plan_streams

_seq_of = attrgetter("seq")


def describe(ins: Instr) -> str:
    dep = ins.wait_flag or ins.set_flag
    what = f"{ins.name}({dep[0]}->{dep[1]}, id={dep[2]!r})" if dep else ins.name
    if ins.cross:
        kind, a, b = ins.cross
        what = (f"{ins.name}(block_idx={a}, event_id={b})" if kind.startswith("ib_") else
                f"{ins.name}(flag_id={a}, mode_id={b}, {ins.pipe})")
    return f"{what} of block {ins.block}" + (f" at {ins.src}" if ins.src else "")


def _check(blocks: list) -> tuple:
    """Validate pipes and gm ranges; (launch has cube-side work, has vector-side work)."""
    cube = vec = False
    for blk in blocks:
        for ins in blk:
            if ins.pipe not in PIPES:
                raise ValueError(f"simulate: pipe must be one of {PIPES}, got "
                                 f"pipe={ins.pipe!r} for {describe(ins)}")
            if ins.gm and not (len(ins.gm) == 2 and 0 <= ins.gm[0] <= ins.gm[1]):
                raise ValueError(f"simulate: gm must be () or (start, end) with 0 <= start <= "
                                 f"end, got gm={ins.gm!r} for {describe(ins)}")
            if is_work(ins):
                s = side_of(ins)
                cube |= s == AIC
                vec |= s == AIV
    return cube, vec


def plan_launch(blocks: list, model: PipeModel, n_cores: int, mix: bool | None,
                roles: tuple = ()) -> tuple:
    """Validate a launch: (mix, core kinds, per block (or group of `roles`) its (sub-stream, GM
    deps) parts, number of sub-streams that run sync_all, slots: the core indices each block or
    group is placed on). Raises the ValueErrors `simulate` documents."""
    if n_cores < 1:
        raise ValueError(f"simulate: n_cores must be >= 1, got n_cores={n_cores}")
    if model.issue_queue_depth < 0:
        raise ValueError(f"simulate: issue_queue_depth must be >= 0 (0: unbounded), got "
                         f"issue_queue_depth={model.issue_queue_depth}")
    cube, vec = _check(blocks)
    if roles:
        return plan_streams(blocks, model, n_cores, tuple(roles))
    if any(i.cross for b in blocks for i in b):
        raise ValueError("simulate: cross-core flags (Instr.cross) need the launch's roles "
                         "(each block one instance of a group), got roles=()")
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
    slots = [(i, n_cores + i) if mix else (i,) for i in range(n_cores)]
    return bool(mix), kinds, work, len(counts), slots


def deadlock(cores: list, depth: int) -> ValueError:
    """The error for a launch whose remaining cores can never go on."""
    stuck = [c for c in cores if not c.done()]
    for c in stuck:
        nxt = c.block[c.ptr] if c.ptr < len(c.block) else None
        if nxt is not None and nxt.pipe in c.pipes and c.pipes[nxt.pipe].full(depth):
            head = c.block[c.pipes[nxt.pipe].queue[0]]
            return ValueError(f"simulate: a full {nxt.pipe} queue must drain for the SCALAR "
                              f"unit to go on, got a deadlock at {describe(head)} (the queue's "
                              f"head) with {describe(nxt)} waiting to be issued "
                              f"(issue_queue_depth={depth})")

    def heads(c):
        h = [c.block[p.queue[0]] for p in c.pipes.values() if p.queue]
        return h + ([c.block[c.ptr]] if c.ptr < len(c.block) else [])
    # name the first core stuck on a wait_flag (others may wait at a sync_all)
    waits = next((heads(c) for c in stuck if any(
        w.wait_flag or (w.cross and w.cross[0] not in ("set", "ib_set")) for w in heads(c))),
        heads(stuck[0]))
    return ValueError("simulate: every wait_flag must have a matching set_flag, got "
                      "a deadlock at " + "; ".join(describe(w) for w in waits))


class Simulator:
    """One launch replayed (module doc). Ops in flight are kept by kind: `plain` and `latent` are
    heaps of (end, seq, op), ops without a GM stream and GM copies in a timed part; `streams`
    holds the copies streaming now and `parked` those streamed but waiting for an L2 fill, both
    in start order (`Op.seq`, the order every tie is broken in). Only `dirty` cores are examined
    for instructions to start: a core whose op ended (and the cores `wakes` names), whose block
    was loaded, whose wait came due (`wakeq`, a heap of (time, core)), or every core when a
    sync_all arrival changed. A pass examines the dirty cores in index order, as a full scan
    would. `dispatching` holds the SCALAR units' issue slots, (end, start, core, index, instr):
    all last `scalar_issue_cycles`, so they end in the order they started (a FIFO); their ends
    change only the issuing core, so they are outside the ops' tie order."""

    def __init__(self, blocks: list, model: PipeModel, n_cores: int, mix: bool | None = None,
                 roles: tuple = ()):
        self.model = model
        self.roles = tuple(roles)
        self.mix, kinds, work, self.participants, slots = plan_launch(blocks, model, n_cores,
                                                                      mix, self.roles)
        self.cores = [Core(i, k) for i, k in enumerate(kinds)]
        cores = self.cores
        self.slots = [tuple(cores[i] for i in s) for s in slots]
        self.slot_of = [0] * len(cores)
        for s, idx in enumerate(slots):
            for i in idx:
                self.slot_of[i] = s
        self.flags = CrossFlags(self.roles, len(work), model.cross_core_flag_cycles,
                                self.touch_all) if self.roles else None
        self.group = 0                              # the next group to load
        self.pending = deque(work)
        self.arrivals: dict = {}                    # n-th sync_all -> cores arrived
        self.tl = Timeline(model.soc, n_cores, model.clock_hz,
                           launch_cycles=launch_cycles(model, self.roles, len(work), n_cores),
                           core_kinds={c.idx: c.kind for c in cores}, mix=self.mix,
                           view=launch_view(self.mix, self.roles), roles=self.roles)
        self.l2 = L2Cache(model, blocks) if model.l2_bytes > 0 else None
        self.live = self.l2.live if self.l2 is not None else {}
        self.fills: list = []                       # copies that filled L2, by fill number
        self.plain, self.latent, self.streams, self.parked, self.wakeq = [], [], [], [], []
        self.dispatching: deque = deque()
        self.seqs = count()
        self.dirty = set(range(len(cores)))
        self.loaded: list = []                      # cores loaded with a block in this pass
        self.pass_at = -1                           # the core examined now
        self.pass_queue: list = []                  # the heap of cores left in this pass
        self.pass_set: set = set()
        self.issue = model.scalar_issue_cycles
        self.depth = model.issue_queue_depth
        self.overlap = not model.dma_latency_on_pipe
        self.cross = model.cross_core_flag_cycles
        self.refill = False                         # the streaming set changed: new rates
        self.t = 0.0

    # --- ops: start, the end of a timed part, finish ------------------------------------

    def start(self, c: Core, pipe, idx: int, ins: Instr, partner=None, handoff=None) -> None:
        op, fixed, stream = open_op(self, c, pipe, idx, ins, partner, handoff)
        op.seq = next(self.seqs)
        pipe.running = op
        if stream and not fixed and self.overlap:   # no start-up on the pipe: stream at once
            op.next_phase()
            op.state = STREAMING
            self.streams.append(op)                 # the newest op: start order is kept
            self.refill = True
        else:
            heappush(self.latent if stream else self.plain, (op.end, op.seq, op))

    def wakes(self, op: Op) -> tuple:
        """The other cores a finished `op` may unblock: a MIX block's mate, when `op` set a flag
        (flags of a block are shared by its two cores) or is a copy the mate's GM hand-offs wait
        for. A new dependency kind between cores adds its producers here (rt/npu/core.py)."""
        c = op.core
        if op.ins.cross and op.ins.cross[0] in ("set", "ib_set"):
            return [self.cores[i] for i in self.flags.woken]
        if c.mate is not None and (op.ins.set_flag or op.idx in c.awaited):
            return (c.mate,)
        return ()

    def finish(self, op: Op) -> None:
        c, ins, t, tl = op.core, op.ins, self.t, self.tl
        op.state = DONE
        self.dirty.add(c.idx)
        rec = len(tl.records)
        if ins.cross and ins.cross[0] in ("set", "ib_set"):
            self.flags.fired(c.xcore[1], ins, t, rec)
        for other in self.wakes(op):
            self.dirty.add(other.idx)
        if op.fill is not None:
            del self.live[op.fill]
        if op.held is None:
            held = op.pipe.release(op, t)
        else:                       # released its pipe before: its latency is over now
            op.pipe.inflight -= 1
            held = op.held
        if ins.set_flag:
            c.fired.setdefault(ins.set_flag, deque()).append((rec, t, c.idx))
        elif is_work(ins):
            op.pipe.last_end = t
        if type(op.partner) is tuple:           # a cross-core wait: every set of its round
            tl.flows += [(p, rec) for p in op.partner]
        elif op.partner is not None:
            tl.flows.append((op.partner, rec))
        if op.handoff is not None:
            tl.handoffs.append((op.handoff, rec))
        c.ended[op.idx] = (t, rec)
        tl.records.append((ins, c.idx, op.pipe.name, op.start, t))
        tl.held.append(held)

    def complete(self, op: Op) -> None:
        """A timed part of `op` is over: stream its next phase, release its pipe for its latency,
        park it for an L2 fill, or finish it."""
        if op.state == STREAMING or op.phases:
            self.refill = True        # a copy starts streaming, changes pool, parks or ends
        if op.phases:                 # start-up or a phase over: stream the next phase now
            op.next_phase()
            if op.state != STREAMING:
                op.state = STREAMING
                self.streams.append(op)
            return
        if op.tail and op.held is None:           # the pipe is free, the data still in flight
            op.held = op.pipe.release(op, self.t)
            op.pipe.inflight += 1
            op.state = INFLIGHT
            op.end = self.t + op.tail
            heappush(self.plain, (op.end, op.seq, op))
            self.dirty.add(op.core.idx)
            return
        if op.after and any(f in self.live for f in op.after):   # data still filling
            op.parked = True
            op.state = PARKED
            self.parked.append(op)
            return
        self.finish(op)

    # --- what the dependency rules of rt/npu/core.py ask of the simulator -----------------

    def due(self, c: Core, at: float) -> bool:
        """A dependency met at `at`: True if that is now, else wake `c` then."""
        if at <= self.t:
            return True
        heappush(self.wakeq, (at, c.idx))
        return False

    def arrive(self, c: Core) -> None:
        """`c` reached its next sync_all: every core may be ready now."""
        self.arrivals[c.syncs] = self.arrivals.get(c.syncs, 0) + 1
        self.touch_all()

    def touch_all(self) -> None:
        """Something every core may wait for changed during a pass: examine the later cores in
        this pass, the earlier ones in the next (as a scan of every core in order would)."""
        for j in range(len(self.cores)):
            if j > self.pass_at:
                if j not in self.pass_set:
                    self.pass_set.add(j)
                    heappush(self.pass_queue, j)
            else:
                self.dirty.add(j)

    def released(self, c: Core) -> bool:
        """Every sub-stream of the launch reached `c`'s current sync_all."""
        return self.arrivals[c.syncs] == self.participants

    # --- the event loop ---------------------------------------------------------------

    def load_blocks(self) -> bool:
        """Put the next pending blocks on the free slots of the dirty cores."""
        moved = False
        for s in sorted({self.slot_of[i] for i in self.dirty}):
            slot = self.slots[s]
            if self.pending and all(c.done() for c in slot):
                parts, fired = self.pending.popleft(), {}
                if self.roles:        # its own stream on each core, flags per core
                    self.flags.load(self.group, tuple(c.idx for c in slot))
                    for k, (c, (sub, deps)) in enumerate(zip(slot, parts)):
                        c.load(sub, {}, deps, None, (self.flags, (self.group, k)))
                        self.dirty.add(c.idx)
                        self.loaded.append(c.idx)
                    self.group += 1
                    moved = True
                    continue
                for n, (c, (sub, deps)) in enumerate(zip(slot, parts)):
                    c.load(sub, fired, deps, slot[1 - n] if self.mix else None)
                    self.dirty.add(c.idx)
                    self.loaded.append(c.idx)
                if self.mix:          # the indices each core's GM hand-offs wait for
                    for c, (_, deps) in zip(slot[::-1], parts):
                        c.awaited = {j for d in deps.values() for j in d}
                moved = True
        return moved

    def examine(self, c: Core) -> bool:
        """Start what core `c` can start now: its SCALAR unit's next instruction, then each
        pipe's queue head. True if anything started."""
        block = c.block
        started = False
        scalar = c.pipes["SCALAR"]
        if scalar.running is None and c.ptr < len(block):
            ptr = c.ptr
            ins = block[ptr]
            if ins.pipe != "SCALAR" and ins.barrier != "SYNC_ALL":
                if not c.pipes[ins.pipe].full(self.depth):
                    scalar.running = True                 # issuing: see `dispatching`
                    self.dispatching.append((self.t + self.issue, self.t, c, ptr, ins))
                    c.ptr += 1
                    started = True
            elif c.ready(self, ptr, ins):
                partner, handoff = c.take(ptr, ins)
                self.start(c, scalar, ptr, ins, partner=partner, handoff=handoff)
                c.ptr += 1
                started = True
        deps, fired = c.deps, c.fired
        for p in c.queued:
            qp = p.queue
            if qp and p.running is None:
                idx = qp[0]
                ins = block[idx]
                if ins.wait_flag:             # (the common waits, checked inline)
                    if not fired.get(ins.wait_flag) or not c.ready(self, idx, ins):
                        continue
                    partner, handoff = c.take(idx, ins)
                elif ins.set_flag:
                    if p.inflight:            # after the pipe's copies have landed
                        continue
                    partner = handoff = None
                elif ins.barrier or ins.cross or idx in deps:
                    if not c.ready(self, idx, ins):
                        continue
                    partner, handoff = c.take(idx, ins)
                else:
                    partner = handoff = None
                if self.depth and len(qp) == self.depth:
                    self.dirty.add(c.idx)     # a full queue gets a slot: the SCALAR unit may go
                qp.popleft()
                self.start(c, p, idx, ins, partner=partner, handoff=handoff)
                started = True
        return started

    def step(self) -> bool:
        """One pass at the current time: load blocks, then examine the dirty cores in index
        order. True if anything was loaded or started."""
        self.loaded = []
        moved = self.load_blocks() if self.pending else False
        if not self.dirty:
            return moved
        q = sorted(self.dirty)
        self.pass_queue, self.pass_set = q, set(q)
        self.dirty = set(self.loaded)
        while q:
            i = heappop(q)
            self.pass_at = i
            c = self.cores[i]
            if c.block is not None and self.examine(c):
                moved = True          # only an op's end (or a queue slot, `examine`) enables more
        self.pass_at = -1
        return moved

    def issued(self) -> None:
        """The issue slots that end by now: queue their instructions on their pipes."""
        t, dispatching = self.t, self.dispatching
        while dispatching and dispatching[0][0] <= t:
            _, st, c, idx, ins = dispatching.popleft()
            scalar = c.pipes["SCALAR"]
            scalar.running = None
            scalar.busy += t - st
            c.pipes[ins.pipe].queue.append(idx)
            self.tl.issues.append((ins, c.idx, st, t))
            self.dirty.add(c.idx)

    def settle(self) -> None:
        """Start everything that can start at the current time (ops that take no time end)."""
        plain = self.plain
        while self.step():
            if self.dispatching and self.dispatching[0][0] <= self.t:
                self.issued()
            if plain and plain[0][0] <= self.t:
                done = []
                while plain and plain[0][0] <= self.t:
                    done.append(heappop(plain)[2])
                done.sort(key=_seq_of)
                for op in done:
                    self.complete(op)

    def next_time(self) -> float:
        """The time of the next event: an op's timed part ends, an issue slot ends, a stream is
        through, a wait comes due."""
        if self.refill:               # rates change only when the streaming set does
            self.refill = False
            hs = [op for op in self.streams if op.pool == HBM]
            if hs:
                waterfill(hs, self.model.hbm_bytes_per_cycle)
            if len(hs) < len(self.streams):
                waterfill([op for op in self.streams if op.pool == L2],
                          self.model.l2_bytes_per_cycle)
        t = self.t
        nxt = self.plain[0][0] if self.plain else float("inf")
        if self.dispatching and self.dispatching[0][0] < nxt:
            nxt = self.dispatching[0][0]
        if self.latent and self.latent[0][0] < nxt:
            nxt = self.latent[0][0]
        for op in self.streams:
            x = t + op.remaining / op.rate
            if x < nxt:
                nxt = x
        if self.wakeq and self.wakeq[0][0] < nxt:
            nxt = self.wakeq[0][0]
        return nxt

    def advance(self, nxt: float) -> None:
        """Move time to `nxt` and end what ends then, in start order."""
        dt = nxt - self.t
        for op in self.streams:
            op.remaining -= op.rate * dt
        self.t = t = nxt
        wakeq, plain, latent = self.wakeq, self.plain, self.latent
        while wakeq and wakeq[0][0] <= t:
            self.dirty.add(heappop(wakeq)[1])
        if self.dispatching and self.dispatching[0][0] <= t:
            self.issued()
        cand = [op for op in self.streams if op.remaining <= op.lim]
        while plain and plain[0][0] <= t:
            cand.append(heappop(plain)[2])
        while latent and latent[0][0] <= t:
            cand.append(heappop(latent)[2])
        if not cand:
            return
        cand.sort(key=_seq_of)
        for op in cand:
            self.complete(op)
        self.streams[:] = [op for op in self.streams if op.state == STREAMING]
        self.streams.sort(key=_seq_of)
        if self.parked:               # a parked copy ends with the last fill it waits for
            self.parked.sort(key=_seq_of)
            again = True
            while again:
                again = False
                for op in list(self.parked):
                    if not any(f in self.live for f in op.after):
                        self.parked.remove(op)
                        self.finish(op)
                        again = True

    def run(self) -> Timeline:
        while True:
            self.settle()
            if not (self.plain or self.latent or self.streams or self.parked or self.wakeq or
                    self.dispatching):
                if any(not c.done() for c in self.cores):
                    raise deadlock(self.cores, self.depth)
                break
            self.advance(self.next_time())
        tl = self.tl
        tl.makespan = self.t
        tl.busy = {c.idx: {p: pipe.busy for p, pipe in c.pipes.items()} for c in self.cores}
        if self.l2 is not None:
            tl.l2_hit_bytes, tl.l2_write_bytes = self.l2.hit, self.l2.written
            tl.l2_miss_bytes += self.l2.miss
            tl.l2_writeback_bytes = self.l2.writeback
        return tl


def simulate(blocks: list, model: PipeModel, n_cores: int, *, mix: bool | None = None,
             roles: tuple = ()) -> Timeline:
    """Replay `blocks` (one list of Instr per block, in issue order) on `n_cores` cores of
    `model`. `roles` (a MIX kernel's recording: ("AIC", "AIV", "AIV"), ("AIC", "AIV"), or one
    kind): `blocks` are the instances, group by group, each replayed on its own core with the
    flags between them as dependencies (rt/npu/xcore.py); `n_cores` counts the AI Cores (or the
    cores of a single kind) the groups go to. Otherwise `mix`: split each block into an AIC and
    an AIV part as if compiled so (module docstring); None (the default) does so on a separated
    SoC when the launch has both cube-side and vector-side work; `n_cores` then counts AI
    Cores. Raises ValueError on a deadlock (a wait whose set never comes, a sync_all that not
    every block reaches)."""
    return Simulator(blocks, model, n_cores, mix, roles).run()


def launch_view(mix: bool, roles: tuple) -> str:
    """`Timeline.view` of a launch (instr.Timeline)."""
    return "streams" if roles else "as-if split" if mix else ""


def open_op(sim, c, pipe, idx: int, ins: Instr, partner=None, handoff=None):
    """An op starting now on `pipe` of core `c`: its cost, its L2/HBM phases and fills, and the
    core's sync_all count. Shared by the event loop and the tests' reference scan, which differ
    only in scheduling. `sim` has t, model, l2, fills, live and tl."""
    t = sim.t
    fixed, stream, cap, tail = op_cost(ins, sim.model, pipe, t)
    op = Op(c, pipe, idx, ins, t, t + fixed, stream, cap, partner=partner, handoff=handoff)
    op.tail = tail
    if stream and sim.l2 is not None and ins.gm and ins.gm[1] > ins.gm[0]:
        write = ins.path.endswith("->GM")
        fill = len(sim.fills)
        hbm, hit, op.after = sim.l2.access(ins, write, fill)
        op.phases = [(b, pool) for b, pool in ((hbm, HBM), (hit, L2)) if b > 0]
        if write or hbm > 0:
            op.fill = fill
            sim.fills.append(op)
            sim.live[fill] = op
    elif stream and not ins.path.endswith("->GM"):
        sim.tl.l2_miss_bytes += stream              # a read of an unknown range: HBM
    if ins.barrier == "SYNC_ALL":
        c.syncs, c.arrived = c.syncs + 1, False
    return op, fixed, stream
