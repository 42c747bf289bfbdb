"""Which pipes see a GM->local copy (checked mode): a wait orders two pipes, not all of them.

On the NPU `wait_flag(HardEvent.MTE2_V)` makes the vector pipe wait for MTE2's copies; MTE3, the
scalar unit and the rest do not wait, so an MTE3 copy-out of the buffer reads it before the data
lands (stale UB). Checked mode keeps that rule:
- a GM->local copy waits in the stage buffer (core.py) until something orders a pipe after it;
- `wait_flag(MTE2_X)` lands the pending copies in memory but records them as visible to MTE2 and
  X only (`vis_*` fields of the core state); every later wait `A_B` gives B what A sees, so a
  chain MTE2_V then V_MTE3 (or a VECIN then VECOUT queue) reaches MTE3 as on the NPU;
- deque of the copy's tensor, pipe_barrier(PIPE_MTE2 / PIPE_ALL), sync_all and TPipe.destroy
  make it visible to every pipe (core.flush_pending drops the record);
- a read by a pipe the copy is not visible to is an error naming the api, the pipes and the
  wait that is missing: UB->GM / L1->L0 / UB->UB copies, LocalTensor.get_value and the vector
  ops' count and repeat forms check their sources.
Unchecked mode never records anything, so the readers' test (`nvis > 0`) is its only cost.
"""
from __future__ import annotations

import numpy as np

from .core import prim, local_offset, NLEVELS
from .enums import HardEvent, PipeID
from .errors import FAULT, fault, KernelError
from .state import MAX_PENDING, MEM, STAGE, STATE

__all__ = ["vis_wait", "vis_chain", "vis_check", "vis_check_tensor", "EVENT_SRC", "EVENT_DST",
           "PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX"]

PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX = (
    int(PipeID.PIPE_S), int(PipeID.PIPE_V), int(PipeID.PIPE_M), int(PipeID.PIPE_MTE1),
    int(PipeID.PIPE_MTE2), int(PipeID.PIPE_MTE3), int(PipeID.PIPE_FIX))
_HARD_EVENT_PIPES = {"S": PIPE_S, "V": PIPE_V, "M": PIPE_M, "MTE1": PIPE_MTE1,
                     "MTE2": PIPE_MTE2, "MTE3": PIPE_MTE3, "FIX": PIPE_FIX}
# HardEvent value -> (source PipeID, destination PipeID)
EVENT_SRC = np.array([_HARD_EVENT_PIPES[e.name.split("_")[0]] for e in HardEvent], np.int64)
EVENT_DST = np.array([_HARD_EVENT_PIPES[e.name.split("_")[1]] for e in HardEvent], np.int64)
# PipeID p -> the HardEvent MTE2_p (-1: none), named in the error
_MTE2_EVENT = np.full(int(PipeID.PIPE_FIX) + 1, -1, np.int64)
for _e in HardEvent:
    if _e.name.startswith("MTE2_"):
        _MTE2_EVENT[_HARD_EVENT_PIPES[_e.name[5:]]] = int(_e)


@prim
def _record(st, off, nb, mask):
    """Copy [off, off + nb) landed for the pipes of `mask`: a copy into the same bytes replaces
    the older record; when the table is full the oldest-kept record becomes visible to all."""
    for k in range(st.nvis):
        if st.vis_off[k] == off and st.vis_bytes[k] == nb:
            st.vis_mask[k] = mask
            return
    k = st.nvis
    if k >= MAX_PENDING:
        k = 0
    else:
        st.nvis = k + 1
    st.vis_off[k] = off
    st.vis_bytes[k] = nb
    st.vis_mask[k] = mask


@prim
def vis_chain(ctx, src_pipe, dst_pipe):
    """A wait orders pipe `dst_pipe` after `src_pipe`: dst sees what src sees."""
    st = ctx[STATE][0]
    sb = np.int64(1) << src_pipe
    db = np.int64(1) << dst_pipe
    for k in range(st.nvis):
        if st.vis_mask[k] & sb:
            st.vis_mask[k] |= db


@prim
def vis_wait(ctx, event):
    """wait_flag(event) in checked mode: an MTE2_X wait lands the pending copies for MTE2 and
    X; any wait A_B then chains A's view to B."""
    src = EVENT_SRC[event]
    dst = EVENT_DST[event]
    st = ctx[STATE][0]
    if src == PIPE_MTE2:
        mem, stage = ctx[MEM], ctx[STAGE]
        mask = (np.int64(1) << PIPE_MTE2) | (np.int64(1) << dst)
        for k in range(st.npending):
            off = st.pending_off[k]
            nb = st.pending_bytes[k]
            mem[off:off + nb] = stage[off:off + nb]
            _record(st, off, nb, mask)
        st.npending = 0
    vis_chain(ctx, src, dst)


@prim
def _fail(ctx, api, what, pipe, off, nb, mask):
    st = ctx[STATE][0]
    lv = -1
    for j in range(NLEVELS):
        if st.level_base[j] <= off < st.level_base[j] + st.level_size[j]:
            lv = j
    base = st.level_base[lv] if lv >= 0 else 0
    fault("{}: {} must be ordered after the MTE2 copy that wrote it, by "
          "wait_flag(HardEvent.{:event}) or a chain of flags through another pipe (the NPU "
          "reads stale data), got a read by {:pipe} of {:level} bytes [{}, {}) that the "
          "copy's waits made visible to {:pipes} only",
          api, what, _MTE2_EVENT[pipe], pipe, lv, off - base, off - base + nb, mask)
    raise KernelError(FAULT)


@prim
def vis_check(ctx, api, what, pipe, off, nb):
    """Raise unless every recorded copy overlapping core memory [off, off + nb) is visible to
    `pipe` (callers test `nvis > 0` first)."""
    st = ctx[STATE][0]
    pb = np.int64(1) << pipe
    for k in range(st.nvis):
        o = st.vis_off[k]
        if o < off + nb and o + st.vis_bytes[k] > off and not st.vis_mask[k] & pb:
            lo = max(o, off)
            hi = min(o + st.vis_bytes[k], off + nb)
            _fail(ctx, api, what, pipe, lo, hi - lo, st.vis_mask[k])


@prim
def vis_check_tensor(ctx, api, what, pipe, a, nbytes):
    """vis_check of the first `nbytes` bytes of local tensor `a` (nothing for GM tensors)."""
    off = local_offset(ctx, a)
    if off >= 0:
        vis_check(ctx, api, what, pipe, off, nbytes)
