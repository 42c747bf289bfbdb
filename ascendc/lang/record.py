"""The NPU view's recorder (issue 9 §1): what each block issues, as `rt.npu.Instr`s.

While a `Recorder` is active (`recording(rec)`), the interpreter's generated wrappers
(ascendc/lang/api.py) call it once per executed surface row with the row, the bound values, the
result and the core context. It turns each call into instructions for `rt.npu.simulate`:
- the pipe comes from the row (`surface.Function.pipe`); `BY_DIRECTION` rows (data_copy,
  load_data, ...) are resolved by the memory levels of destination and source
  (`surface.DIRECTION_PIPES`; an array outside the core's local memory is GM);
- sizes from the arguments: count x element size, or repeat_times x 256 B for the repeat forms;
  DataCopyParams block_count x block_len x 32 B; an mmad's m, n, k from its MmadParams;
- queue calls become flags the way the Ascend C compiler lowers them: `enque` = set_flag(producer
  -> consumer), `deque` = wait_flag(producer -> consumer); `free_tensor` = set_flag(consumer ->
  producer) for that buffer, and the next `alloc_tensor` returning the same buffer waits for it
  (producer/consumer pipes by the queue's TPosition: VECIN MTE2 -> V, VECOUT V -> MTE3, A1/B1
  MTE2 -> MTE1, A2/B2 MTE1 -> CUBE, CO1 CUBE -> FIXPIPE);
- the kernel source line is the innermost frame outside the ascendc package.
Interpret mode only in this slice (compiled kernels do not call the wrappers).
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading

import numpy as np

from rt.npu import Instr

from . import api, core
from . import params as P
from . import surface as S
from .enums import HardEvent, PipeID, TPosition
from .positions import LEVEL_NAMES

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LOCK = threading.Lock()

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
_REPEATS = ("repeat_times", "repeat_time")


def event_pipes(event: int) -> tuple:
    """(src lane, dst lane) of HardEvent value `event` ("MTE2_V" -> ("MTE2", "VECTOR"))."""
    src, dst = HardEvent(event).name.split("_")
    return _EVENT_PIPES[src], _EVENT_PIPES[dst]


def _source_line() -> str:
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else ""


def _level(ctx, a) -> str:
    if not isinstance(a, np.ndarray):
        return "GM"
    lv = int(core.level_of(ctx, a))
    return LEVEL_NAMES[lv] if lv >= 0 else "GM"


def _field(rec, name):
    return int(rec[name])


class Recorder:
    """Collects one instruction list per block (`blocks(block_dim)` returns them in block
    order). Blocks may run on several threads at once: each appends only to its own list."""

    def __init__(self):
        self._blocks: dict = {}
        self._frees: dict = {}

    def blocks(self, block_dim: int) -> list:
        return [self._blocks.get(b, []) for b in range(block_dim)]

    def __call__(self, row, form, vals, result, ctx):
        if row.work is S.Work.DEBUG:
            return
        b = int(core.state(ctx).block_idx)
        out = self._blocks.get(b)
        if out is None:
            out = self._blocks[b] = []
            self._frees[b] = {}
        src = _source_line()
        if isinstance(row, S.Method):
            self._method(b, out, row, vals, result, ctx, src)
        else:
            self._function(b, out, row, form, vals, ctx, src)

    # ---- functions -----------------------------------------------------------------------------
    def _function(self, b, out, row, form, vals, ctx, src):
        args = dict(zip([p for p in form.params if p not in form.ignored], vals))
        w, name = row.work, row.name
        if w in (S.Work.ELEMENTWISE, S.Work.REDUCE):
            arrays = [v for v in args.values() if isinstance(v, np.ndarray)]
            isz = max((a.itemsize for a in arrays), default=4)
            rep = next((int(args[k]) for k in _REPEATS if k in args), None)
            if rep is not None:
                nbytes, elems = rep * 256, rep * 256 // isz
            else:
                elems = int(args.get("count", arrays[0].size if arrays else 0))
                nbytes = elems * isz
                rep = math.ceil(nbytes / 256)
            out.append(Instr(b, "VECTOR", name, bytes=nbytes, elements=elems, repeats=rep,
                             dtype_bytes=isz, src=src))
        elif w is S.Work.COPY:
            dst, s = args["dst"], args["src"]
            path = f"{_level(ctx, s)}->{_level(ctx, dst)}"
            pipe = S.DIRECTION_PIPES.get(tuple(path.split("->")), PipeID.PIPE_MTE2)
            nbytes = self._copy_bytes(name, args, dst, s)
            isz = dst.itemsize if isinstance(dst, np.ndarray) else 1
            out.append(Instr(b, PIPE_NAMES[pipe], name, bytes=nbytes, elements=nbytes // isz,
                             dtype_bytes=isz, path=path, src=src))
        elif w is S.Work.MMAD:
            p = args["mmad_params"]
            m, n, k = int(p.m), int(p.n), int(p.k)
            out.append(Instr(b, "CUBE", name, macs=m * n * k, elements=m * n,
                             dtype_bytes=args["fm"].itemsize, shape=(m, n, k), src=src))
        elif w is S.Work.FIXPIPE:
            dst, p = args["dst"], args["intri_params"]
            isz = dst.itemsize if isinstance(dst, np.ndarray) else 4
            nbytes = int(getattr(p, "m_size", 0)) * int(getattr(p, "n_size", 0)) * isz
            out.append(Instr(b, "FIXPIPE", name, bytes=nbytes, dtype_bytes=isz,
                             path=f"L0C->{_level(ctx, dst)}", src=src))
        elif name in ("set_flag", "wait_flag"):
            a, d = event_pipes(int(args["event"]))
            key = (a, d, int(args["event_id"]))
            if name == "set_flag":
                out.append(Instr(b, a, name, set_flag=key, src=src))
            else:
                out.append(Instr(b, d, name, wait_flag=key, src=src))
        elif name == "pipe_barrier":
            p = PIPE_NAMES.get(PipeID(int(args["pipe"])))
            out.append(Instr(b, p or "SCALAR", name, barrier=p or "ALL", src=src))
        elif name == "sync_all":       # cross-core wait not modelled yet: drains this core
            out.append(Instr(b, "SCALAR", name, barrier="ALL", src=src))
        else:
            out.append(Instr(b, "SCALAR", name, src=src))

    @staticmethod
    def _copy_bytes(name, args, dst, s) -> int:
        arg = args.get("count", args.get("repeat_params", args.get("intri_params")))
        isz = dst.itemsize if isinstance(dst, np.ndarray) else 1
        if name == "data_copy_pad":
            p = args["copy_params"]
            return int(p.block_count) * int(p.block_len)
        if name == "load_data":
            p = args["load_data_params"]
            if isinstance(p, P.LoadData2DParams):
                return int(p.repeat_times) * 512
        elif isinstance(arg, P.DataCopyParams):
            return int(arg.block_count) * int(arg.block_len) * 32
        elif isinstance(arg, P.Nd2NzParams):
            return int(arg.nd_num) * int(arg.n_value) * int(arg.d_value) * isz
        elif isinstance(arg, (int, np.integer)):
            return int(arg) * isz
        sizes = [a.nbytes for a in (dst, s) if isinstance(a, np.ndarray)]
        return min(sizes) if sizes else 0

    # ---- methods -------------------------------------------------------------------------------
    def _method(self, b, out, row, vals, result, ctx, src):
        name = row.name
        if row.cls == "TQue" and name in ("alloc_tensor", "enque", "deque", "free_tensor"):
            q = vals[0]
            pipes = QUEUE_PIPES.get(_field(q, "pos"))
            if pipes is not None:
                self._queue(b, out, name, q, pipes, vals, result, ctx, src)
                return
        out.append(Instr(b, "SCALAR", row.api, src=src))

    def _queue(self, b, out, name, q, pipes, vals, result, ctx, src):
        prod, cons = pipes
        qid = _field(q, "id")
        api_name = f"TQue.{name}"
        if name == "enque":
            out.append(Instr(b, prod, api_name, set_flag=(prod, cons, ("que", qid)), src=src))
        elif name == "deque":
            out.append(Instr(b, cons, api_name, wait_flag=(prod, cons, ("que", qid)), src=src))
        else:
            t = result if name == "alloc_tensor" else vals[1]
            off = int(core.local_offset(ctx, t)) - _field(q, "mem_off")
            key = (cons, prod, ("free", qid, off // max(_field(q, "slot_bytes"), 1)))
            frees = self._frees[b]
            if name == "free_tensor":
                frees[key] = frees.get(key, 0) + 1
                out.append(Instr(b, cons, api_name, set_flag=key, src=src))
            elif frees.get(key, 0) > 0:
                frees[key] -= 1
                out.append(Instr(b, prod, api_name, wait_flag=key, src=src))
            else:
                out.append(Instr(b, "SCALAR", api_name, src=src))


@contextlib.contextmanager
def recording(rec: Recorder):
    """Make `rec` the interpreter's recorder for the duration (one recording at a time)."""
    with _LOCK:
        prev, api.RECORDER = api.RECORDER, rec
        try:
            yield rec
        finally:
            api.RECORDER = prev
