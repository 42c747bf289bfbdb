"""One block's trace rows -> findings of memcheck (freed tensors), initcheck, synccheck and
racecheck (pipes of one core), in one pass in issue order.

The rows (lang/trace.py) are the instructions a block issued: ops, the memory each op read and
wrote (K_ACCESS, with FLAG_SANITIZE), buffers handed out and taken back (K_REGION), flags,
barriers and queue steps. What the pass keeps per byte of the core's local memory:
- initcheck: whether a recorded write covered it since its buffer was allocated, and the line of
  that allocation. A read is reported only where a 32-byte chunk of it still held the fill of
  fresh memory (0xFF bytes, checked mode's NaN) when it was read, so writes by an op that does
  not record its accesses never make a false report.
- memcheck: whether its buffer was freed (free_tensor) and not allocated again.
- racecheck: the pipe, time and line of its last write and, per pipe, of its last read. Each
  pipe has a vector clock: set_flag / enque / free_tensor send the source pipe's clock, the
  matching wait_flag / deque / alloc_tensor joins it into the destination pipe's, pipe_barrier
  joins every pipe with the barrier's pipe (PIPE_ALL and sync_all: all with all). An access
  conflicts with an earlier one of another pipe (one of them a write) that its pipe's clock has
  not seen. Scalar-unit accesses (get_value / set_value) are left out of racecheck.
  Within one DMA pipe (MTE1, MTE2, MTE3, FIXPIPE: copies may land out of order) a copy over
  bytes an earlier copy of that pipe wrote conflicts (Sync1) unless the pipe is known to have
  drained since: a pipe_barrier of it, a set_flag / queue step it sent, or a clock it receives
  back that holds the earlier copy.
  Every op knows the scalar unit's time at its issue (the scalar unit issues in order, so a
  cross-core wait on PIPE_S orders every later op). Cross-core sets and waits run on the pipe
  they name; the pass keeps each GM access and each synchronising call with its pipe's clock
  for the launch's cross-core check (gmrace.py).
"""
from __future__ import annotations

import threading

import numpy as np

from ..lang import record, trace as T
from ..lang.enums import HardEvent, PipeID
from .report import Finding
from .scan import any_set, first_above, first_in_flight, first_unseen_write

LANES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXPIPE")
_LANE = {n: i for i, n in enumerate(LANES)}
_BARRIER_LANE = {int(p): _LANE[n] for p, n in record.PIPE_NAMES.items()}
_ALL = (int(PipeID.PIPE_ALL),)
_XSET, _XWAIT = T.op("cross_core_set_flag"), T.op("cross_core_wait_flag")
_P2P = 3            # rt.npu.xcore.P2P: the point-to-point mode of a served Matmul's messages
_IB_SET, _IB_WAIT = T.op("ib_set"), T.op("ib_wait")
_XPIPE = {int(p): _LANE[n] for p, n in record.PIPE_NAMES.items()}   # a cross op's named pipe
_DMA = frozenset(_LANE[n] for n in ("MTE1", "MTE2", "MTE3", "FIXPIPE"))     # Sync1's pipes
_BARRIER_NAME = {lane: PipeID(p).name for p, lane in _BARRIER_LANE.items()}


_NEVER = np.iinfo(np.int32).max       # a clock no write or read reaches
_REACH = 8                              # w_pipe of a write recorded by its reach: pipe + 8
_PAGE = 9                               # racecheck's filter pages: 512 bytes
_OTHERS = tuple(tuple(q for q in range(1, len(LANES)) if q != p) for p in range(len(LANES)))
_OP_LANE: dict = {}                     # (op, src level, dst level) -> lane of a K_OP row


class _Shadow:
    """Per-byte state of a core's local memory, reused across blocks (reset where touched).
    Times and lines are int32 and pipes int8 (a block issues far fewer than 2**31 ops): the
    per-access passes move half the bytes."""

    def __init__(self, size: int):
        self.size = size
        self.written = np.zeros(size, bool)
        self.freed = np.zeros(size, bool)
        self.freed_u8 = self.freed.view(np.uint8)
        self.region_line = np.zeros(size, np.int32)
        self.w_pipe = np.full(size, -1, np.int8)    # last writer's pipe (+ _REACH: a reach)
        self.w_time = np.zeros(size, np.int32)
        self.w_line = np.zeros(size, np.int32)
        self.r_time = np.zeros((len(LANES), size), np.int32)
        self.r_line = np.zeros((len(LANES), size), np.int32)
        self.dirty: list = []
        self.raced = False      # were racecheck's arrays written (BlockPass._flush) since reset

    def reset(self):
        # each touched byte once: the ranges (one per access) merged first
        lo_run = hi_run = -1
        for lo, hi in sorted(self.dirty) + [(self.size + 1, self.size + 1)]:
            if lo <= hi_run:
                hi_run = max(hi_run, hi)
                continue
            if hi_run > lo_run:
                self._clear(lo_run, hi_run)
            lo_run, hi_run = lo, hi
        self.dirty = []
        self.raced = False

    def _clear(self, lo, hi):
        self.written[lo:hi] = False
        self.freed[lo:hi] = False
        self.region_line[lo:hi] = 0
        if self.raced:
            self.w_pipe[lo:hi] = -1
            self.w_time[lo:hi] = 0
            self.r_time[:, lo:hi] = 0


_TLS = threading.local()


def _shadow(size: int) -> _Shadow:
    sh = getattr(_TLS, "shadow", None)
    if sh is None or sh.size < size:
        sh = _TLS.shadow = _Shadow(size)
    sh.reset()
    return sh


class BlockPass:
    """The analysis of one block: `run(rows)`, then `findings`, and with racecheck `gm` and
    `points` (its GM accesses and synchronising calls, for the launch's check: gmrace.py)."""

    def __init__(self, tools, kernel: str, block: str, lines, levels):
        self.tools = tools
        self.levels = levels            # [(level name, base, size)] of the core's memory
        mem_size = max(b + s for _, b, s in levels)
        self.kernel, self.block, self.lines = kernel, block, lines
        self.sh = _shadow(mem_size)
        self.clk = np.zeros((len(LANES), len(LANES)), np.int64)
        self.done = np.zeros(len(LANES), np.int64)  # per pipe: its last op known complete
        # per pipe: the time of its latest local write / read (a scan over an access's bytes
        # is needed only where they are later than what the accessing pipe has seen)
        self.w_max = [0] * len(LANES)
        self.r_max = [0] * len(LANES)
        # per pipe and 512-byte page of local memory: the time of the pipe's latest write / read
        # touching it. An access whose pages no other pipe wrote (read) later than what the
        # accessing pipe has seen needs no byte scan (the last writer of a byte it would find
        # is such a write, or comes after one and is unseen as well)
        pages = (self.sh.size >> _PAGE) + 1
        self.w_page = np.zeros((len(LANES), pages), np.int64)
        self.r_page = np.zeros((len(LANES), pages), np.int64)
        self._freed: dict = {}          # (lo, hi) of buffers freed and not allocated since
        self._pend: list = []           # racecheck's per-byte updates not yet made (_flush)
        self._lines: list = []          # region_line updates not yet made (_set_line)
        self.flags: dict = {}           # (src lane, dst lane, key) -> [clock snapshots]
        self.pending: dict = {}         # (event, id) -> [lines of set_flags not yet waited]
        self.findings: list = []
        self.xsets: list = []           # (flag id, mode, line) of each cross_core_set_flag
        self.xwaits: list = []          # (flag id, line) of each cross_core_wait_flag
        # for the launch's cross-core GM check (gmrace.py), with racecheck on:
        # (lo, hi, write, lane, lane clock, line, block, step) per GM access: a strided one is
        # blocks of `block` bytes every `step` bytes from lo (0, 0: all of [lo, hi))
        self.gm: list = []
        self.points: list = []          # (kind, key, lane, lane clock) per synchronising call
        self._track = "racecheck" in tools
        self._mem, self._init = "memcheck" in tools, "initcheck" in tools
        self._row = None                # the accessing pipe's clock row as a tuple (_clock_row)
        self.epoch = 0
        self.pipe = 0
        self._seen: set = set()

    def where(self, line_id: int):
        line_id = int(line_id)
        if 0 < line_id < len(self.lines):
            f, n = self.lines[line_id]
            return (f, int(n))
        return None

    def add(self, cls, kind, line_id, address="", other=None, detail=""):
        key = (cls, kind, int(line_id), address, other and other[1])
        if key in self._seen:          # one report per block per site (the launch counts blocks)
            return
        self._seen.add(key)
        self.findings.append(Finding(cls, kind, self.kernel, self.block, self.where(line_id),
                                     address, other, detail))

    def _at(self, lo, at):
        a = local_address(self.levels, at)
        return a if at == lo else f"{a} (the access starts at {local_address(self.levels, lo)})"

    # -- the pass --------------------------------------------------------------------------------
    def run(self, rows):
        for r in rows.tolist() if hasattr(rows, "tolist") else rows:    # (Python ints: cheaper)
            kind = int(r[T.C_KIND])
            if kind == T.K_ACCESS:
                self._access(r)
                continue
            self._row = None            # (the clocks may change)
            if kind == T.K_OP:
                op = int(r[T.C_OP])
                if op == _XSET or op == _XWAIT:     # they run on the pipe they name
                    self.pipe = _XPIPE.get(int(r[T.C_ID]), 0)
                else:
                    key = (op, r[T.C_SRC_LV], r[T.C_DST_LV])
                    lane = _OP_LANE.get(key)
                    if lane is None:
                        lane = _OP_LANE[key] = _LANE.get(record.op_pipe(r), 0)
                    self.pipe = lane
                clk = self.clk
                clk[self.pipe, self.pipe] += 1
                # the scalar unit issues in order: an op issued after a scalar op (a scalar
                # cross-core wait among them) runs after it
                clk[self.pipe, 0] = clk[0, 0]
                if (op == _XSET or op == _XWAIT) and int(r[T.C_B]) == _P2P:
                    # a served Matmul's message (adv/kfc.py): paired by construction, so not
                    # synccheck's; it orders GM as a flag does (the slot it names: gmrace.py)
                    self._point("p2p_set" if op == _XSET else "p2p_wait", int(r[T.C_A]))
                elif op == _XSET:
                    self.xsets.append((int(r[T.C_A]), int(r[T.C_B]), int(r[T.C_LINE])))
                    self.done[self.pipe] = clk[self.pipe, self.pipe]   # fires once drained
                    self._point("set", (int(r[T.C_A]), int(r[T.C_B])))
                elif op == _XWAIT:
                    self.xwaits.append((int(r[T.C_A]), int(r[T.C_LINE])))
                    self._point("wait", int(r[T.C_A]))
                elif op == _IB_SET or op == _IB_WAIT:
                    self._point("ib_set" if op == _IB_SET else "ib_wait",
                                (int(r[T.C_A]), int(r[T.C_B])))
            elif kind == T.K_REGION:
                self._region(r)
            elif kind in (T.K_SET, T.K_WAIT):
                self._flag(r, kind == T.K_SET)
            elif kind == T.K_BARRIER:
                p = int(r[T.C_A])
                if p in _ALL:
                    self._join_all()
                elif p in _BARRIER_LANE:
                    lane = _BARRIER_LANE[p]
                    self.clk[:] = np.maximum(self.clk, self.clk[lane])
                    self.done[lane] = self.clk[lane, lane]
            elif kind == T.K_SYNC_ALL:
                self.clk[0, 0] += 1             # a scalar step every later op comes after
                self._join_all()
                self.epoch += 1
                self.pipe = 0
                self._point("sync_all", self.epoch)
            else:
                self._queue(r, kind)
        if "synccheck" in self.tools:
            for (ev, ident), lines in self.pending.items():
                for line in lines:
                    self.add("Sync3", "set_flag without its wait_flag", line,
                             detail=f"set_flag(event={_event_name(ev)}, event_id={ident}) is "
                                    f"never waited for before the block ends")
        return self

    def _clock_row(self) -> tuple:
        """The current pipe's clock row, kept until a row that may change clocks."""
        self._row = tuple(self.clk[self.pipe].tolist())
        return self._row

    def _point(self, kind, key):
        if self._track:
            p = self.pipe
            self.points.append((kind, key, p, tuple(self.clk[p].tolist())))

    def _join_all(self):
        self.clk[:] = self.clk.max(axis=0)
        self.done[:] = np.diagonal(self.clk)

    def _send(self, key, lane):
        self.flags.setdefault(key, []).append(self.clk[lane].copy())
        self.done[lane] = self.clk[lane, lane]      # a set fires once its pipe has drained

    def _receive(self, key, lane):
        q = self.flags.get(key)
        if q:
            snap = q.pop(0)
            self.clk[lane] = np.maximum(self.clk[lane], snap)
            # another pipe waited for this pipe's ops up to snap[lane]: they have completed
            self.done[lane] = max(self.done[lane], snap[lane])

    def _flag(self, r, is_set):
        ev, ident = int(r[T.C_A]), int(r[T.C_ID])
        src, dst = record.event_pipes(ev)
        key = (src, dst, ident)
        line = int(r[T.C_LINE])
        if is_set:
            self._send(key, _LANE[src])
            held = self.pending.setdefault((ev, ident), [])
            if held and "synccheck" in self.tools:
                self.add("Sync4", "event id set twice", line,
                         other=("set before at", self.where(held[0])),
                         detail=f"set_flag(event={_event_name(ev)}, event_id={ident}) while its "
                                f"earlier set_flag was not yet waited for")
            held.append(line)
        else:
            self._receive(key, _LANE[dst])
            held = self.pending.get((ev, ident))
            if held:
                held.pop(0)

    def _queue(self, r, kind):
        pos, qid, slot = int(r[T.C_A]), int(r[T.C_B]), int(r[T.C_ID])
        pipes = record.QUEUE_PIPES.get(pos)
        if pipes is None:
            return
        prod, cons = _LANE[pipes[0]], _LANE[pipes[1]]
        if kind == T.K_Q_ENQUE:
            self._send(("que", qid), prod)
        elif kind == T.K_Q_DEQUE:
            self._receive(("que", qid), cons)
        elif kind == T.K_Q_FREE:
            self._send(("free", qid, slot), cons)
        elif kind == T.K_Q_ALLOC:
            self._receive(("free", qid, slot), prod)

    def _region(self, r):
        lo = int(r[T.C_A])
        hi = min(lo + int(r[T.C_BYTES]), self.sh.size)
        what, line = int(r[T.C_ID]), int(r[T.C_LINE])
        sh = self.sh
        sh.dirty.append((lo, hi))
        if what == T.REGION_ALLOC:
            if self._freed:
                for a, b in [k for k in self._freed if lo <= k[0] and k[1] <= hi]:
                    del self._freed[(a, b)]
            sh.written[lo:hi] = False
            sh.freed[lo:hi] = False
            self._set_line(lo, hi, line)
        elif what == T.REGION_FREE:
            self._freed[(lo, hi)] = True
            sh.freed[lo:hi] = True
            self._set_line(lo, hi, line)
        elif self._line_at(lo) == 0:        # a TBuf's first get: its "allocation"
            self._set_line(lo, hi, line)

    def _set_line(self, lo, hi, line):
        """region_line[lo:hi] = line, kept as a range until a report or a get needs it."""
        self._lines.append((lo, hi, line))
        if len(self._lines) > 512:
            self._line_at(-1)

    def _line_at(self, i: int) -> int:
        """region_line[i] (i < 0: only bring the array up to date)."""
        if i >= 0:
            for lo, hi, line in reversed(self._lines):
                if lo <= i < hi:
                    return line
            return int(self.sh.region_line[i])
        for lo, hi, line in self._lines:
            self.sh.region_line[lo:hi] = line
        self._lines = []
        return 0

    def _access(self, r):
        write, nbytes, line = bool(r[T.C_ID]), int(r[T.C_BYTES]), int(r[T.C_LINE])
        if int(r[T.C_DST_LV]) < 0:
            if self._track:
                a, p = int(r[T.C_A]), self.pipe
                blk, step = int(r[T.C_ELEMS]), int(r[T.C_REPEATS])
                if blk <= 0 or step <= blk:
                    blk = step = 0          # contiguous
                self.gm.append((a, a + nbytes, write, p, self._row or self._clock_row(), line,
                                blk, step))
            return
        sh = self.sh
        lo = int(r[T.C_A])
        hi = min(lo + nbytes, sh.size)
        sh.dirty.append((lo, hi))
        what = "write" if write else "read"
        if self._mem and self._freed and _overlaps(self._freed, lo, hi) and any_set(
                sh.freed_u8, lo, hi):
            i = lo + int(np.argmax(sh.freed[lo:hi]))
            self.add("Write1" if write else "Read1", f"{what} of size {nbytes} through a freed "
                     f"tensor", line, address=self._at(lo, i),
                     other=("freed at", self.where(self._line_at(i))))
        if not write and self._init and int(r[T.C_M]) >= 0:
            c = lo + int(r[T.C_M])
            if not sh.written[c:c + 32].all():
                self.add("Read2", f"uninitialized read of size {nbytes}", line,
                         address=self._at(lo, c),
                         other=("allocated at", self.where(self._line_at(c))))
        if self.pipe != 0 and self._track:
            self._race(lo, hi, write, line, bool(r[T.C_N]))
        if write:
            sh.written[lo:hi] = True

    def _race(self, lo, hi, write, line, reach):
        sh, p, clk = self.sh, self.pipe, self.clk[self.pipe]
        if hi <= lo:
            return
        seen = self._row or self._clock_row()
        now = seen[p]
        pa, pb = lo >> _PAGE, ((hi - 1) >> _PAGE) + 1
        if (p in _DMA and not reach and self.done[p] < min(now - 1, self.w_max[p])
                and self.w_page[p, pa:pb].max() > self.done[p]):
            self._same_pipe(lo, hi, write, line)    # (the pipe has drained up to its last op:
            # nothing of it can be in flight)
        # Sync2: bytes whose last writer is another pipe (not the scalar unit) that this pipe's
        # clock has not seen; by writer pipe, the time seen (never for none, scalar, this pipe).
        # The byte scan runs only where the pages show such a write
        if _later(self.w_max, seen, p) and _unseen(self.w_page[:, pa:pb], clk, p):
            table = np.full(2 * _REACH, _NEVER, np.int32)
            table[1:len(LANES)] = clk[1:]
            table[_REACH + 1:_REACH + len(LANES)] = clk[1:]
            table[p] = table[_REACH + p] = _NEVER
            self._flush()
            at = first_unseen_write(sh.w_pipe, sh.w_time, lo, hi, table)
            if at >= 0:
                other = int(sh.w_pipe[at]) % _REACH
                self.add("Sync2", f"potential {'WAW' if write else 'RAW'} hazard between "
                         f"{LANES[other]} and {LANES[p]}", line, address=self._at(lo, at),
                         other=(f"{LANES[other]} wrote at", self.where(sh.w_line[at])),
                         detail="no set_flag/wait_flag, queue step or barrier orders the two")
        if write:
            # Write3: reads of other pipes (not the scalar unit) this pipe has not seen
            late = None
            if _later(self.r_max, seen, p):
                late = self.r_page[:, pa:pb].max(axis=1).tolist()
            for q in _OTHERS[p] if late is not None else ():
                if self.r_max[q] <= seen[q] or late[q] <= seen[q]:
                    continue
                self._flush()
                at = first_above(sh.r_time[q], lo, hi, seen[q])
                if at >= 0:
                    self.add("Write3", f"potential WAR hazard between {LANES[q]} and "
                             f"{LANES[p]}", line, address=self._at(lo, at),
                             other=(f"{LANES[q]} read at", self.where(sh.r_line[q, at])),
                             detail="the write may land before the read is done")
            self.w_max[p] = now
            self.w_page[p, pa:pb] = now
            self._pend.append((True, lo, hi, p + _REACH if reach else p, now, line))
        else:
            self._pend.append((False, lo, hi, p, now, line))
            self.r_max[p] = now
            self.r_page[p, pa:pb] = now
        if len(self._pend) > 4096:
            self._flush()

    def _flush(self):
        """Bring the per-byte racecheck state up to date: the writes and reads since the last
        flush, in issue order (kept as ranges until a byte scan needs them: in a clean kernel
        the filters above leave nearly every access without one)."""
        sh = self.sh
        sh.raced = sh.raced or bool(self._pend)
        for write, lo, hi, code, t, line in self._pend:
            if write:
                sh.w_pipe[lo:hi] = code
                sh.w_time[lo:hi] = t
                sh.w_line[lo:hi] = line
            else:
                sh.r_time[code, lo:hi] = t
                sh.r_line[code, lo:hi] = line
        self._pend = []

    def _same_pipe(self, lo, hi, write, line):
        """Sync1: a copy over bytes an earlier copy of its own pipe wrote, that pipe not known
        to have finished it (no pipe_barrier, nor a flag another pipe waited for it with): the
        DMA queues of one pipe may land out of order. (A write recorded by its reach is not
        judged: its w_pipe is pipe + _REACH.)"""
        sh, p = self.sh, self.pipe
        self._flush()
        at = first_in_flight(sh.w_pipe, sh.w_time, lo, hi, p, self.done[p], self.clk[p, p])
        if at >= 0:
            self.add("Sync1", f"potential {'WAW' if write else 'RAW'} hazard within "
                     f"{LANES[p]}", line, address=self._at(lo, at),
                     other=(f"{LANES[p]} wrote at", self.where(sh.w_line[at])),
                     detail=f"no pipe_barrier({_BARRIER_NAME[p]}) orders the two copies")


def _later(latest, seen, p) -> bool:
    """Is a pipe other than `p` and the scalar unit's latest time past what p has seen?"""
    for q in _OTHERS[p]:
        if latest[q] > seen[q]:
            return True
    return False


def _overlaps(ranges, lo, hi) -> bool:
    for a, b in ranges:
        if a < hi and lo < b:
            return True
    return False


def _unseen(pages, clk, p) -> bool:
    """Did a pipe other than `p` and the scalar unit write (read) one of `pages` (lanes x
    pages: the latest times) later than `clk` (what p has seen)?"""
    late = pages.max(axis=1) > clk
    late[0] = late[p] = False
    return bool(late.any())


def _event_name(ev: int) -> str:
    try:
        return HardEvent(ev).name
    except ValueError:
        return str(ev)


def local_address(levels, at: int) -> str:
    """'UB offset 256' for byte `at` of the core's memory (levels: [(name, base, size)])."""
    for name, base, size in levels:
        if base <= at < base + size:
            return f"{name} offset {at - base}"
    return f"local byte {at}"
