"""The NPU view's decoder (docs/design.md): trace rows (ascendc/lang/trace.py) -> `rt.npu.Instr`s.

The primitives record numbers; this module says what the NPU makes of them:
- the pipe comes from the op's surface row (`surface.Function.pipe`); `BY_DIRECTION` rows
  (data_copy, load_data, ...) are resolved by the memory levels of source and destination
  (`surface.DIRECTION_PIPES`); element reads and writes of a tensor run on the scalar unit;
- queue steps become flags the way the Ascend C compiler lowers them: `enque` = set_flag(producer
  -> consumer), `deque` = wait_flag(producer -> consumer); `free_tensor` = set_flag(consumer ->
  producer) for that buffer, and the next `alloc_tensor` of the same buffer waits for it (producer
  / consumer pipes by the queue's TPosition: VECIN MTE2 -> V, VECOUT V -> MTE3, A1/B1 MTE2 -> MTE1,
  A2/B2 MTE1 -> CUBE, CO1 CUBE -> FIXPIPE; VECCALC and TBuf buffers need no flags);
- `cross_core_set_flag` / `cross_core_wait_flag` run on the pipe the call names (`Instr.cross`:
  "set" / "wait", flag id, mode), `ib_set` / `ib_wait` on the scalar unit ("ib_set" / "ib_wait",
  block_idx, event_id; `Instr.gm` its workspace word): rt/npu/xcore.py replays them between the
  instances of a MIX launch;
- `set_flag` / `wait_flag` name their pipes by HardEvent; `pipe_barrier(PIPE_X)` waits for pipe X
  to drain, `PIPE_ALL` for every pipe; `sync_all` is a barrier across the launch's blocks;
- the source line is the id the kernel stored in `st.src_line` (compiled kernels: the generated
  module's `_LINES`; interpreted kernels: `INTERP_LINES`, filled by the interpreter's wrappers).
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

from rt.npu import Instr

from . import surface as S
from . import trace as T
from .enums import HardEvent, PipeID, TPosition
from .positions import LEVEL_NAMES
from .state import STATE

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# PipeID -> msOpProf's lane name
PIPE_NAMES = {PipeID.PIPE_S: "SCALAR", PipeID.PIPE_V: "VECTOR", PipeID.PIPE_M: "CUBE",
              PipeID.PIPE_MTE1: "MTE1", PipeID.PIPE_MTE2: "MTE2", PipeID.PIPE_MTE3: "MTE3",
              PipeID.PIPE_FIX: "FIXPIPE"}
# HardEvent's spelling of a pipe -> lane name
_EVENT_PIPES = {"S": "SCALAR", "V": "VECTOR", "M": "CUBE", "MTE1": "MTE1", "MTE2": "MTE2",
                "MTE3": "MTE3", "FIX": "FIXPIPE"}
# TQue position -> (producer pipe, consumer pipe) (Ascend C's queue lowering)
QUEUE_PIPES = {TPosition.VECIN: ("MTE2", "VECTOR"), TPosition.VECOUT: ("VECTOR", "MTE3"),
               TPosition.A1: ("MTE2", "MTE1"), TPosition.B1: ("MTE2", "MTE1"),
               TPosition.A2: ("MTE1", "CUBE"), TPosition.B2: ("MTE1", "CUBE"),
               TPosition.CO1: ("CUBE", "FIXPIPE")}
_CROSS = {"cross_core_set_flag": "set", "cross_core_wait_flag": "wait", "ib_set": "ib_set",
          "ib_wait": "ib_wait"}          # the rows of lang/prims/crosscore.py -> Instr.cross
_QUEUE_KINDS = {T.K_Q_ALLOC: "alloc_tensor", T.K_Q_ENQUE: "enque", T.K_Q_DEQUE: "deque",
                T.K_Q_FREE: "free_tensor"}


def event_pipes(event: int) -> tuple:
    """(src lane, dst lane) of HardEvent value `event` ("MTE2_V" -> ("MTE2", "VECTOR"))."""
    src, dst = HardEvent(event).name.split("_")
    return _EVENT_PIPES[src], _EVENT_PIPES[dst]


class LineTable:
    """(file, line) <-> small ids, for interpreted kernels (appended from several threads)."""

    def __init__(self):
        self.lines = [("", 0)]
        self._ids: dict = {}
        self._lock = threading.Lock()

    def id_of(self, file: str, line: int) -> int:
        k = self._ids.get((file, line))
        if k is None:
            with self._lock:
                k = self._ids.setdefault((file, line), len(self.lines))
                if k == len(self.lines):
                    self.lines.append((file, line))
        return k


INTERP_LINES = LineTable()


def mark_line(ctx) -> None:
    """Store the calling kernel line's id in the core state (the interpreter calls this before
    each primitive while tracing: compiled kernels store it themselves)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    if f is not None:
        ctx[STATE][0]["src_line"] = INTERP_LINES.id_of(f.f_code.co_filename, f.f_lineno)


def _pipe_of(name: str) -> str:
    row = S.FUNCTIONS.get(name)
    if row is None or row.pipe is S.BY_DIRECTION or row.pipe is None:
        return "SCALAR"
    return PIPE_NAMES.get(row.pipe, "SCALAR")


def op_pipe(r) -> str:
    """The lane (PIPE_NAMES' values) that runs the K_OP trace row `r`."""
    name = T.op_name(r[T.C_OP])
    if name == "mmad":
        return "CUBE"
    row = S.FUNCTIONS.get(name)
    if row is not None and (row.pipe is S.BY_DIRECTION or row.work is S.Work.FIXPIPE):
        s, d = int(r[T.C_SRC_LV]), int(r[T.C_DST_LV])
        sn = LEVEL_NAMES[s] if s >= 0 else "GM"
        dn = LEVEL_NAMES[d] if d >= 0 else "GM"
        return PIPE_NAMES[S.DIRECTION_PIPES.get((sn, dn), PipeID.PIPE_MTE2)]
    return _pipe_of(name)


class _Decoder:
    """Rows of one block -> its Instr list."""

    def __init__(self, lines):
        self.lines = lines
        self.frees: dict = {}

    def src(self, line_id: int) -> str:
        if 0 < line_id < len(self.lines):
            f, n = self.lines[line_id]
            return f"{f}:{n}"
        return ""

    def row(self, r) -> Instr | None:
        b, name, kind = int(r[T.C_BLOCK]), T.op_name(r[T.C_OP]), int(r[T.C_KIND])
        src = self.src(int(r[T.C_LINE]))
        if kind == T.K_OP:
            return self._op(b, name, r, src)
        if kind in (T.K_SET, T.K_WAIT):
            a, d = event_pipes(int(r[T.C_A]))
            key = (a, d, int(r[T.C_ID]))
            if kind == T.K_SET:
                return Instr(b, a, name, set_flag=key, src=src)
            return Instr(b, d, name, wait_flag=key, src=src)
        if kind == T.K_BARRIER:
            p = PIPE_NAMES.get(PipeID(int(r[T.C_A])))
            return Instr(b, p or "SCALAR", name, barrier=p or "ALL", src=src)
        if kind == T.K_SYNC_ALL:
            return Instr(b, "SCALAR", name, barrier="SYNC_ALL", src=src)
        if kind in (T.K_ACCESS, T.K_REGION):      # the sanitizer's rows
            return None
        return self._queue(b, kind, r, src)

    def _op(self, b, name, r, src):
        nbytes, dsz = int(r[T.C_BYTES]), int(r[T.C_DSZ])
        cross = _CROSS.get(name)
        if cross is not None:
            pipe = "SCALAR" if cross.startswith("ib_") else PIPE_NAMES.get(int(r[T.C_ID]),
                                                                          "SCALAR")
            word = (int(r[T.C_GM0]), int(r[T.C_GM1])) if cross.startswith("ib_") else ()
            return Instr(b, pipe, name, cross=(cross, int(r[T.C_A]), int(r[T.C_B])), gm=word,
                         src=src)
        if name == "mmad":
            m, n, k = int(r[T.C_M]), int(r[T.C_N]), int(r[T.C_K])
            return Instr(b, "CUBE", name, macs=m * n * k, elements=m * n, dtype_bytes=dsz,
                         shape=(m, n, k), src=src)
        row = S.FUNCTIONS.get(name)
        if row is not None and (row.pipe is S.BY_DIRECTION or row.work is S.Work.FIXPIPE):
            s, d = int(r[T.C_SRC_LV]), int(r[T.C_DST_LV])
            sn = LEVEL_NAMES[s] if s >= 0 else "GM"
            dn = LEVEL_NAMES[d] if d >= 0 else "GM"
            pipe = PIPE_NAMES[S.DIRECTION_PIPES.get((sn, dn), PipeID.PIPE_MTE2)]
            gm = (int(r[T.C_GM0]), int(r[T.C_GM1])) if "GM" in (sn, dn) else ()
            return Instr(b, pipe, name, bytes=nbytes, elements=int(r[T.C_ELEMS]),
                         dtype_bytes=dsz, path=f"{sn}->{dn}", gm=gm, src=src)
        pipe = _pipe_of(name)
        if pipe == "VECTOR":
            return Instr(b, pipe, name, bytes=nbytes, elements=int(r[T.C_ELEMS]),
                         repeats=int(r[T.C_REPEATS]), dtype_bytes=dsz, src=src)
        return Instr(b, "SCALAR", name, src=src)

    def _queue(self, b, kind, r, src):
        pos, qid, slot = int(r[T.C_A]), int(r[T.C_B]), int(r[T.C_ID])
        name = f"TQue.{_QUEUE_KINDS[kind]}"
        pipes = QUEUE_PIPES.get(pos)
        if pipes is None:
            return Instr(b, "SCALAR", name, src=src)
        prod, cons = pipes
        if kind == T.K_Q_ENQUE:
            return Instr(b, prod, name, set_flag=(prod, cons, ("que", qid)), src=src)
        if kind == T.K_Q_DEQUE:
            return Instr(b, cons, name, wait_flag=(prod, cons, ("que", qid)), src=src)
        key = (cons, prod, ("free", qid, slot))
        if kind == T.K_Q_FREE:
            self.frees[key] = self.frees.get(key, 0) + 1
            return Instr(b, cons, name, set_flag=key, src=src)
        if self.frees.get(key, 0) > 0:          # alloc of a buffer freed before: wait for it
            self.frees[key] -= 1
            return Instr(b, prod, name, wait_flag=key, src=src)
        return Instr(b, "SCALAR", name, src=src)


def decode(rows: np.ndarray, lines, block_dim: int) -> list:
    """The Instr lists of blocks 0..block_dim-1 from trace rows (in each block's issue order)."""
    out = [[] for _ in range(block_dim)]
    decoders: dict = {}
    for r in rows:
        b = int(r[T.C_BLOCK])
        dec = decoders.get(b)
        if dec is None:
            dec = decoders[b] = _Decoder(lines)
        ins = dec.row(r)
        if ins is not None and 0 <= b < block_dim:
            out[b].append(ins)
    return out
