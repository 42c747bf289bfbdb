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
  not seen. The scalar unit's element accesses (get_value / set_value of a local tensor) are
  judged like a pipe's, with two differences: an op issued after a set_value follows it in
  issue order but sees what it wrote only through a flag from the scalar unit (S_V, S_MTE3,
  S_MTE2, ...), PIPE_ALL or sync_all; a get_value is done before the scalar unit goes on, so a
  later write over what it read is no hazard. The scalar unit sees another pipe's writes
  through that pipe's flag to it (MTE2_S, V_S, ...), as checked mode decides for get_value.
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
from . import scan as C
from .report import Finding

LANES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXPIPE")
_LANE = {n: i for i, n in enumerate(LANES)}
_BARRIER_LANE = {int(p): _LANE[n] for p, n in record.PIPE_NAMES.items()}
_XSET, _XWAIT = T.op("cross_core_set_flag"), T.op("cross_core_wait_flag")
_IB_SET, _IB_WAIT = T.op("ib_set"), T.op("ib_wait")
_PASS_OPS = np.array([_XSET, _XWAIT, _IB_SET, _IB_WAIT, T.op("LocalTensor.get_value"),
                      T.op("LocalTensor.set_value")], np.int64)     # scan.block_pass's `ops`
_XPIPE = {int(p): _LANE[n] for p, n in record.PIPE_NAMES.items()}   # a cross op's named pipe
_BARRIER_NAME = {lane: PipeID(p).name for p, lane in _BARRIER_LANE.items()}
_OP_LANE: dict = {}                     # (op << 16 | level / pipe code) -> lane of a K_OP row
_POINT_KINDS = ("set", "wait", "ib_set", "ib_wait", "sync_all", "p2p_set", "p2p_wait")


def _table(pairs, fill):
    out = np.full(max(k for k, _ in pairs) + 1, fill, np.int64)
    for k, v in pairs:
        out[k] = v
    return out


# HardEvent -> (source lane, destination lane); TPosition -> (producer, consumer) lane; PipeID
# -> a barrier's lane (-2: PIPE_ALL, -1: no pipe of the model)
_EV_LANES = np.array([[_LANE[n] for n in record.event_pipes(int(e))] for e in HardEvent],
                     np.int64)
assert [int(e) for e in HardEvent] == list(range(len(_EV_LANES)))
_Q_PROD = _table([(int(k), _LANE[v[0]]) for k, v in record.QUEUE_PIPES.items()], -1)
_Q_CONS = _table([(int(k), _LANE[v[1]]) for k, v in record.QUEUE_PIPES.items()], -1)
_BAR = _table([(int(p), lane) for p, lane in _BARRIER_LANE.items()] +
              [(int(PipeID.PIPE_ALL), -2)], -1)


_TLS = threading.local()


def _shadow(size: int) -> tuple:
    sh = getattr(_TLS, "shadow", None)
    if sh is None or sh[0].size < size:
        sh = _TLS.shadow = C.shadow_arrays(size)
    return sh


def _lookup(table, idx):
    """table[idx], -1 where idx is outside the table."""
    ok = (idx >= 0) & (idx < len(table))
    return np.where(ok, table[np.where(ok, idx, 0)], -1)


def _row_lanes(rows) -> np.ndarray:
    """Per row, the lane scan.block_pass needs (scan.py's docstring)."""
    kind = rows[:, T.C_KIND]
    lanes = np.zeros(len(rows), np.int64)
    m = kind == T.K_OP
    if m.any():
        op = rows[m, T.C_OP]
        cross = (op == _XSET) | (op == _XWAIT)
        code = np.where(cross, rows[m, T.C_ID] & 0xFFFF,
                        ((rows[m, T.C_SRC_LV] + 2) << 8) | (rows[m, T.C_DST_LV] + 2))
        uniq, inv = np.unique((op << 16) | code, return_inverse=True)
        lanes[m] = np.array([_op_lane(int(u)) for u in uniq], np.int64)[inv.ravel()]
    m = (kind == T.K_SET) | (kind == T.K_WAIT)
    if m.any():
        ev = rows[m, T.C_A]
        bad = (ev < 0) | (ev >= len(_EV_LANES))
        if bad.any():
            record.event_pipes(int(ev[bad][0]))        # raises as the row's decoding does
        lanes[m] = np.where(kind[m] == T.K_SET, _EV_LANES[ev, 0], _EV_LANES[ev, 1])
    m = (kind >= T.K_Q_ALLOC) & (kind <= T.K_Q_FREE)
    if m.any():
        pos, k = rows[m, T.C_A], kind[m]
        lanes[m] = np.where((k == T.K_Q_ENQUE) | (k == T.K_Q_ALLOC), _lookup(_Q_PROD, pos),
                            _lookup(_Q_CONS, pos))
    m = kind == T.K_BARRIER
    if m.any():
        lanes[m] = _lookup(_BAR, rows[m, T.C_A])
    return lanes


def _op_lane(u: int) -> int:
    lane = _OP_LANE.get(u)
    if lane is None:
        op = u >> 16
        if op in (_XSET, _XWAIT):
            lane = _XPIPE.get(u & 0xFFFF, 0)
        else:
            r = np.zeros(T.NCOL, np.int64)
            r[T.C_OP], r[T.C_SRC_LV], r[T.C_DST_LV] = op, ((u >> 8) & 0xFF) - 2, (u & 0xFF) - 2
            lane = _LANE.get(record.op_pipe(r), 0)
        _OP_LANE[u] = lane
    return lane


class BlockPass:
    """The analysis of one block: `run(rows)`, then `findings`, `xsets` / `xwaits` (its
    cross-core flag calls, for crosscore.py) and with racecheck `gm` and `points` (its GM
    accesses and synchronising calls, for the launch's check: gmrace.py). The pass itself is
    compiled (scan.block_pass); this class prepares its tables and reads back what it found."""

    def __init__(self, tools, kernel: str, block: str, lines, levels):
        self.tools = tools
        self.levels = levels            # [(level name, base, size)] of the core's memory
        self.mem_size = max(b + s for _, b, s in levels)
        self.kernel, self.block, self.lines = kernel, block, lines
        self.findings: list = []
        self.xsets: list = []           # (flag id, mode, line) of each cross_core_set_flag
        self.xwaits: list = []          # (flag id, line) of each cross_core_wait_flag
        # for the launch's cross-core GM check (gmrace.py), with racecheck on: per GM access
        # (scan.G_COLS) lo, hi, write, lane, line, block, step and the lane's clock (7): a
        # strided one is blocks of `block` bytes every `step` bytes from lo (0, 0: all of it)
        self.gm = np.empty((0, C.G_COLS), np.int64)
        self.points: list = []          # (kind, key, lane, lane clock) per synchronising call
        self._track = "racecheck" in tools
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
        rows = np.ascontiguousarray(rows, np.int64).reshape(-1, T.NCOL)
        kind = rows[:, T.C_KIND]
        acc = kind == T.K_ACCESS
        n_gm = int(np.count_nonzero(acc & (rows[:, T.C_DST_LV] < 0)))
        n_local = int(np.count_nonzero(acc)) - n_gm
        n_set = int(np.count_nonzero(kind == T.K_SET))
        sh = _shadow(self.mem_size)
        found = np.empty((9 * n_local + 2 * n_set + 1, C.F_COLS), np.int64)
        gm = np.empty((n_gm, C.G_COLS), np.int64)
        pts = np.empty((len(rows) - int(np.count_nonzero(acc)), C.P_COLS), np.int64)
        counts = np.zeros(3, np.int64)
        tools = np.array([t in self.tools for t in ("memcheck", "racecheck", "initcheck",
                                                    "synccheck")], np.int64)
        C.block_pass(rows, _row_lanes(rows), tools, _EV_LANES, *sh, _PASS_OPS, found, gm, pts,
                     counts)
        nf, ng, npt = (int(c) for c in counts)
        for f in found[:nf].tolist():
            self._finding(rows, *f)
        for kind_, a, b, lane, line, *clock in pts[:npt].tolist():
            kind_ = _POINT_KINDS[kind_]
            if kind_ == "set":
                self.xsets.append((a, b, line))
            elif kind_ == "wait":
                self.xwaits.append((a, line))
            if self._track:
                key = a if kind_ in ("wait", "sync_all", "p2p_set", "p2p_wait") else (a, b)
                self.points.append((kind_, key, lane, tuple(clock)))
        if self._track:
            self.gm = gm[:ng]
        return self

    def _finding(self, rows, code, i, at, lo, other, a, b, c):
        """The report of finding row (code, row, at, lo, other line, a, b, c) of scan.py."""
        line = int(rows[i, T.C_LINE]) if i >= 0 else other
        if code == C.F_FREED:
            what = "write" if a else "read"
            self.add("Write1" if a else "Read1", f"{what} of size {b} through a freed tensor",
                     line, address=self._at(lo, at), other=("freed at", self.where(other)))
        elif code == C.F_UNINIT:
            self.add("Read2", f"uninitialized read of size {b}", line, address=self._at(lo, at),
                     other=("allocated at", self.where(other)))
        elif code == C.F_SYNC1:
            self.add("Sync1", f"potential {'WAW' if a else 'RAW'} hazard within {LANES[c]}", line,
                     address=self._at(lo, at), other=(f"{LANES[c]} wrote at", self.where(other)),
                     detail=f"no pipe_barrier({_BARRIER_NAME[c]}) orders the two copies")
        elif code == C.F_SYNC2:
            self.add("Sync2", f"potential {'WAW' if a else 'RAW'} hazard between {LANES[b]} and "
                     f"{LANES[c]}", line, address=self._at(lo, at),
                     other=(f"{LANES[b]} wrote at", self.where(other)),
                     detail="no set_flag/wait_flag, queue step or barrier orders the two")
        elif code == C.F_WRITE3:
            self.add("Write3", f"potential WAR hazard between {LANES[b]} and {LANES[c]}", line,
                     address=self._at(lo, at), other=(f"{LANES[b]} read at", self.where(other)),
                     detail="the write may land before the read is done")
        elif code == C.F_SYNC4:
            self.add("Sync4", "event id set twice", line,
                     other=("set before at", self.where(other)),
                     detail=f"set_flag(event={_event_name(a)}, event_id={b}) while its "
                            f"earlier set_flag was not yet waited for")
        elif code == C.F_SYNC3:
            self.add("Sync3", "set_flag without its wait_flag", line,
                     detail=f"set_flag(event={_event_name(a)}, event_id={b}) is never waited "
                            f"for before the block ends")


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
