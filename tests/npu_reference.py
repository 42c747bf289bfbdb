"""A plain reference for rt.npu's event loop: at every event, scan every core and every op.

rt/npu/sim.py's `Simulator` examines only the cores an event changed and keeps its ops in heaps
by kind; its docstring promises the same records, in the same order, as this scan. The scan
re-implements the scheduling (which instruction may start, in which order, and when the next
event is) without any of that bookkeeping: each pass examines every core in index order; each
event time is the minimum over every op in flight, every issue slot and every dependency that
comes due later (found by scanning every core's queue heads). It shares with the simulator only
what is not scheduling: the launch's validation and MIX split (`plan_launch`), the cost rules
and the opening of an op with its L2 phases (`open_op`), the water-filling of a pool, the L2
cache, and the `Op` / `Pipe` records. The flags between the instances of a MIX launch replayed
from their own streams (`roles`) are found here by replaying the log of the sets that ended so
far through the counting rules (rt/npu/xcore.py's module doc), not by its incremental state.

`reference_simulate` has `simulate`'s signature and returns a `Timeline`; `same_run(a, b)` lists
how two Timelines differ (records, held cycles, issue slots, flows, hand-offs, busy cycles,
makespan, L2 counters), compared exactly.
"""
from __future__ import annotations

from collections import deque

from rt.npu.instr import AIC, AIV, PIPES, Timeline
from rt.npu.l2 import L2Cache
from rt.npu.mix import is_work
from rt.npu.pipe import (DONE, FIXED, HBM, INFLIGHT, L2, PARKED, STREAMING, Pipe, waterfill)
from rt.npu.sim import launch_view, open_op, plan_launch
from rt.npu.xcore import FLAG_LIMIT, P2P, ib_word, instance_name, launch_cycles


class _Core:
    def __init__(self, idx, kind):
        self.idx, self.kind, self.block = idx, kind, None
        self.pipes = {p: Pipe(p) for p in PIPES}

    def load(self, block, fired, deps, mate, inst=None):
        self.block, self.ptr, self.inst = (block or None), 0, inst
        for p in self.pipes.values():
            p.reset()
        self.fired, self.deps, self.mate, self.ended = fired, deps, mate, {}
        used = {i.pipe for i in block or ()}
        self.queued = [self.pipes[p] for p in PIPES[1:] if p in used]
        self.syncs, self.arrived = 0, False

    def drained(self):
        return all(not p.queue and not p.inflight and (p.name == "SCALAR" or not p.running)
                   for p in self.pipes.values())

    def done(self):
        return self.block is None or (self.ptr >= len(self.block) and all(
            not p.queue and not p.running and not p.inflight for p in self.pipes.values()))


class _Scan:
    def __init__(self, blocks, model, n_cores, mix, roles=()):
        self.model, self.roles = model, tuple(roles)
        self.mix, kinds, work, self.participants, slots = plan_launch(blocks, model, n_cores,
                                                                      mix, self.roles)
        self.cores = [_Core(i, k) for i, k in enumerate(kinds)]
        self.slots = [tuple(self.cores[i] for i in s) for s in slots]
        self.pending = deque(work)
        self.groups, self.loaded_groups = len(work), 0
        self.xlog = []              # cross-core sets ended: (instance, Instr.cross, end, record,
        #                             ib word)
        self.taken = {}             # (instance, flag id) or ib word -> waits that took
        self.ib_started = {}        # ib word -> ib_sets started
        self.tl = Timeline(model.soc, n_cores, model.clock_hz,
                           launch_cycles=launch_cycles(model, self.roles, len(work), n_cores),
                           core_kinds={c.idx: c.kind for c in self.cores}, mix=self.mix,
                           view=launch_view(self.mix, self.roles), roles=self.roles)
        self.l2 = L2Cache(model, blocks) if model.l2_bytes > 0 else None
        self.live = self.l2.live if self.l2 is not None else {}
        self.fills = []
        self.ops = []               # every op not done, in start order
        self.slots_issuing = []     # (end, start, core, index, instr) in start order
        self.arrivals = {}
        self.seq = 0
        self.t = 0.0

    # --- dependencies ---------------------------------------------------------------

    def due_at(self, c, idx, ins):
        """When the dependency of instruction `idx` is met: a time (maybe later than now),
        or None if not known yet (or a condition on the present: barriers, sync_all)."""
        if ins.cross:
            return self.cross_due(c, ins)
        if ins.set_flag or ins.barrier in PIPES:
            return None if self.pipes_inflight(c, ins.pipe) else self.t
        if ins.wait_flag:
            q = c.fired.get(ins.wait_flag)
            if not q:
                return None
            _, end, by = q[0]
            return end + (self.model.cross_core_flag_cycles if by != c.idx else 0)
        if ins.barrier == "ALL":
            return self.t if c.drained() else None
        if ins.barrier == "SYNC_ALL":
            if not c.arrived:
                if not c.drained():
                    return None
                c.arrived = True
                self.arrivals[c.syncs] = self.arrivals.get(c.syncs, 0) + 1
            return self.t if self.arrivals[c.syncs] == self.participants else None
        d = c.deps.get(idx)
        if d:
            if any(j not in c.mate.ended for j in d):
                return None
            return max(c.mate.ended[j] for j in d)[0] + self.model.cross_core_flag_cycles
        return self.t

    def cross_due(self, c, ins):
        kind, a, b = ins.cross
        word = ib_word(ins)
        if kind in ("set", "ib_set"):
            if self.pipes_inflight(c, ins.pipe):
                return None
            busy = kind == "ib_set" and self.ib_started.get(word, 0) != self.taken.get(word, 0)
            return None if busy else self.t
        flag = ("p2p", a) if b == P2P else a
        credits = self.ib_credits(word) if kind == "ib_wait" else self.credits(c.inst, flag)
        k = self.taken.get(word if kind == "ib_wait" else (c.inst, flag), 0)
        return credits[k][1] if k < len(credits) else None

    def ib_credits(self, word):
        lat = self.model.cross_core_flag_cycles
        return [(r, e + lat, (r,)) for _i, x, e, r, w in self.xlog
                if x[0] == "ib_set" and w == word]

    def credits(self, inst, flag):
        """The counts instance `inst` got for `flag` so far: (releasing record, usable at, set
        records), in the order they came."""
        lat, roles, (g, k) = self.model.cross_core_flag_cycles, self.roles, inst
        aivs = [(g, j) for j, r in enumerate(roles) if r == AIV]
        if isinstance(flag, tuple):     # point to point (mode P2P): the sets of one sender
            return sorted((r, e + lat, (r,)) for i, x, e, r, _w in self.xlog
                          if i == (g, flag[1]) and x == ("set", k, P2P))

        def sets(m, mode):
            return [(e, r) for i, x, e, r, _w in self.xlog if i == m and x == ("set", flag, mode)]

        def rounds(members, mode):
            per = [sets(m, mode) for m in members]
            return [(max(r for _, r in rnd), max(e for e, _ in rnd) + lat,
                     tuple(r for _, r in rnd)) for rnd in zip(*per)]
        kind_all = [(h, j) for h in range(self.groups) for j, r in enumerate(roles)
                    if r == roles[k]]
        out = rounds(kind_all, 0)
        if roles[k] == AIV:
            out += [(r, e + lat, (r,)) for j, role in enumerate(roles) if role == AIC
                    for e, r in sets((g, j), 2)]
            out += rounds(aivs, 1)
        else:
            out += rounds(aivs, 2)
        return sorted(out)

    def check_limit(self, flag):
        """No instance holds more than FLAG_LIMIT counts of `flag` not taken yet."""
        for g in range(self.groups):
            for k in range(len(self.roles)):
                held = len(self.credits((g, k), flag)) - self.taken.get(((g, k), flag), 0)
                if held > FLAG_LIMIT:
                    raise ValueError(f"simulate: {flag} of {instance_name(self.roles, g, k)} "
                                     f"holds {held} counts")

    @staticmethod
    def pipes_inflight(c, pipe):
        return c.pipes[pipe].inflight

    def consume(self, c, idx, ins):
        if ins.cross:
            kind, a, b = ins.cross
            word = ib_word(ins)
            if kind == "ib_set":
                self.ib_started[word] = self.ib_started.get(word, 0) + 1
            if kind in ("set", "ib_set"):
                return None, None
            flag = ("p2p", a) if b == P2P else a
            key = word if kind == "ib_wait" else (c.inst, flag)
            credits = self.ib_credits(key) if kind == "ib_wait" else self.credits(c.inst, flag)
            k = self.taken.get(key, 0)
            self.taken[key] = k + 1
            return credits[k][2], None
        if ins.wait_flag:
            return c.fired[ins.wait_flag].popleft()[0], None
        d = c.deps.get(idx)
        if d:
            return None, max(c.mate.ended[j] for j in d)[1]
        return None, None

    def heads(self, c):
        """The instructions core `c` could start now if their dependency were met:
        (pipe to run on, index) of the SCALAR unit's next one and each free pipe's queue head."""
        out = []
        scalar = c.pipes["SCALAR"]
        if scalar.running is None and c.ptr < len(c.block):
            ins = c.block[c.ptr]
            if ins.pipe == "SCALAR" or ins.barrier == "SYNC_ALL":
                out.append((scalar, c.ptr))
        out += [(p, p.queue[0]) for p in c.queued if p.queue and p.running is None]
        return out

    # --- ops --------------------------------------------------------------------------

    def start(self, c, pipe, idx, ins, partner, handoff):
        op, fixed, stream = open_op(self, c, pipe, idx, ins, partner, handoff)
        op.seq, self.seq = self.seq, self.seq + 1
        pipe.running = op
        if stream and not fixed and not self.model.dma_latency_on_pipe:
            op.next_phase()
            op.state = STREAMING
        self.ops.append(op)

    def complete(self, op):
        if op.phases:
            op.next_phase()
            op.state = STREAMING
        elif op.tail and op.held is None:
            op.held = op.pipe.release(op, self.t)
            op.pipe.inflight += 1
            op.state = INFLIGHT
            op.end = self.t + op.tail
        elif op.after and any(f in self.live for f in op.after):
            op.state = PARKED
        else:
            self.finish(op)

    def finish(self, op):
        c, ins, t, tl = op.core, op.ins, self.t, self.tl
        op.state = DONE
        self.ops.remove(op)
        if op.fill is not None:
            del self.live[op.fill]
        if op.held is None:
            held = op.pipe.release(op, t)
        else:
            op.pipe.inflight -= 1
            held = op.held
        rec = len(tl.records)
        if ins.set_flag:
            c.fired.setdefault(ins.set_flag, deque()).append((rec, t, c.idx))
        elif ins.cross and ins.cross[0] in ("set", "ib_set"):
            self.xlog.append((c.inst, ins.cross, t, rec, ib_word(ins)))
            if ins.cross[0] == "set" and ins.cross[2] != P2P:
                self.check_limit(ins.cross[1])
        elif is_work(ins):
            op.pipe.last_end = t
        if isinstance(op.partner, tuple):
            tl.flows += [(p, rec) for p in op.partner]
        elif op.partner is not None:
            tl.flows.append((op.partner, rec))
        if op.handoff is not None:
            tl.handoffs.append((op.handoff, rec))
        c.ended[op.idx] = (t, rec)
        tl.records.append((ins, c.idx, op.pipe.name, op.start, t))
        tl.held.append(held)

    def timed(self, streamless):
        """Ops in a timed part (a fixed part or a copy's tail) that end by now, in start order;
        `streamless`: only those without a GM stream or in their tail."""
        return [op for op in self.ops if op.state in (FIXED, INFLIGHT) and op.end <= self.t and
                (not streamless or not op.stream or op.state == INFLIGHT)]

    # --- the scan -----------------------------------------------------------------------

    def scan(self):
        """One pass over every slot and every core in index order; True if anything started."""
        moved = False
        for slot in self.slots:
            if self.pending and all(c.done() for c in slot):
                parts, fired = self.pending.popleft(), {}
                for n, (c, (sub, deps)) in enumerate(zip(slot, parts)):
                    if self.roles:
                        c.load(sub, {}, deps, None, (self.loaded_groups, n))
                    else:
                        c.load(sub, fired, deps, slot[1 - n] if self.mix else None)
                self.loaded_groups += 1
                moved = True
        depth = self.model.issue_queue_depth
        for c in self.cores:
            if c.block is None:
                continue
            scalar = c.pipes["SCALAR"]
            if scalar.running is None and c.ptr < len(c.block):
                ins = c.block[c.ptr]
                if ins.pipe != "SCALAR" and ins.barrier != "SYNC_ALL":
                    if not c.pipes[ins.pipe].full(depth):
                        scalar.running = True
                        end = self.t + self.model.scalar_issue_cycles
                        self.slots_issuing.append((end, self.t, c, c.ptr, ins))
                        c.ptr += 1
                        moved = True
            for pipe, idx in self.heads(c):
                ins = c.block[idx]
                at = self.due_at(c, idx, ins)
                if at is None or at > self.t:
                    continue
                partner, handoff = self.consume(c, idx, ins)
                if pipe.name == "SCALAR":
                    c.ptr += 1
                else:
                    pipe.queue.popleft()
                self.start(c, pipe, idx, ins, partner, handoff)
                moved = True
        return moved

    def issue_ends(self):
        while self.slots_issuing and self.slots_issuing[0][0] <= self.t:
            _, st, c, idx, ins = self.slots_issuing.pop(0)
            scalar = c.pipes["SCALAR"]
            scalar.running = None
            scalar.busy += self.t - st
            c.pipes[ins.pipe].queue.append(idx)
            self.tl.issues.append((ins, c.idx, st, self.t))

    def later_dues(self):
        """Times at which a dependency of some core's head comes due."""
        return [at for c in self.cores if c.block is not None for p, idx in self.heads(c)
                if (at := self.due_at(c, idx, c.block[idx])) is not None and at > self.t]

    def run(self):
        model = self.model
        while True:
            while self.scan():
                self.issue_ends()
                for op in self.timed(streamless=True):
                    self.complete(op)
            dues = self.later_dues()
            if not (self.ops or self.slots_issuing or dues):
                if any(not c.done() for c in self.cores):
                    raise ValueError("reference: deadlock")
                break
            streams = [op for op in self.ops if op.state == STREAMING]
            hs = [op for op in streams if op.pool == HBM]
            if hs:
                waterfill(hs, model.hbm_bytes_per_cycle)
            if len(hs) < len(streams):
                waterfill([op for op in streams if op.pool == L2], model.l2_bytes_per_cycle)
            times = [op.end for op in self.ops if op.state in (FIXED, INFLIGHT)]
            times += [s[0] for s in self.slots_issuing] + dues
            times += [self.t + op.remaining / op.rate for op in streams]
            nxt = min(times)
            for op in streams:
                op.remaining -= op.rate * (nxt - self.t)
            self.t = nxt
            self.issue_ends()
            ending = [op for op in streams if op.remaining <= op.lim] + self.timed(False)
            if not ending:
                continue
            for op in sorted(ending, key=lambda o: o.seq):
                self.complete(op)
            again = True
            while again:            # a parked copy ends with the last fill it waits for
                again = False
                for op in [o for o in self.ops if o.state == PARKED]:
                    if not any(f in self.live for f in op.after):
                        self.finish(op)
                        again = True
        tl = self.tl
        tl.makespan = self.t
        tl.busy = {c.idx: {p: pipe.busy for p, pipe in c.pipes.items()} for c in self.cores}
        if self.l2 is not None:
            tl.l2_hit_bytes, tl.l2_write_bytes = self.l2.hit, self.l2.written
            tl.l2_miss_bytes += self.l2.miss
            tl.l2_writeback_bytes = self.l2.writeback
        return tl


def reference_simulate(blocks, model, n_cores, *, mix=None, roles=()) -> Timeline:
    """`rt.npu.simulate` by a plain scan (module doc)."""
    return _Scan(blocks, model, n_cores, mix, roles).run()


def same_run(a: Timeline, b: Timeline) -> list:
    """The fields in which Timelines `a` and `b` differ (empty: identical)."""
    def recs(tl):
        return [(id(r[0]),) + tuple(r[1:]) for r in tl.records]

    def issues(tl):
        return [(id(r[0]),) + tuple(r[1:]) for r in tl.issues]
    diff = []
    for name, f in (("records", recs), ("issues", issues),
                    *((n, lambda tl, n=n: getattr(tl, n)) for n in (
                        "held", "flows", "handoffs", "busy", "core_kinds", "mix", "view",
                        "roles", "makespan",
                        "launch_cycles", "l2_hit_bytes", "l2_miss_bytes", "l2_write_bytes",
                        "l2_writeback_bytes"))):
        if f(a) != f(b):
            diff.append(name)
    return diff


def checked_simulator(simulator: type) -> type:
    """A subclass of rt.npu.sim's `Simulator` whose run also runs the reference scan on the same
    launch and fails unless the two Timelines are identical (and both raise, or neither does).
    tests/conftest.py puts it in place for every test, so every simulate() of the suite (direct,
    through rt.profile(npu=True), asc.npu_trace or bench) is checked."""
    class Checked(simulator):
        def __init__(self, blocks, model, n_cores, mix=None, roles=()):
            super().__init__(blocks, model, n_cores, mix, roles)
            self.launch = (blocks, model, n_cores, mix, roles)

        def run(self):
            blocks, model, n_cores, mix, roles = self.launch
            try:
                tl = super().run()
            except ValueError as error:
                try:
                    reference_simulate(blocks, model, n_cores, mix=mix, roles=roles)
                except ValueError:
                    raise error from None
                raise AssertionError(f"simulate raised {error}, the reference scan did not")
            diff = same_run(tl, reference_simulate(blocks, model, n_cores, mix=mix, roles=roles))
            assert not diff, f"simulate and the reference scan differ in {diff}"
            return tl
    Checked.__name__ = Checked.__qualname__ = f"Checked{simulator.__name__}"
    return Checked
