"""Which pipes see a GM->local copy (checked mode): a wait orders two pipes, not all of them.

On the NPU `wait_flag(HardEvent.MTE2_V)` makes the vector pipe wait for MTE2's copies; MTE3, the
scalar unit and the rest do not wait, so an MTE3 copy-out of the buffer reads it before the data
lands (stale UB). Checked mode keeps that rule (docs/design.md, *Per-pipe visibility*):
- a GM->local copy waits in the stage buffer (core.py), numbered (`copy_seq`), until something
  orders a pipe after it; while there, any reader but MTE2 is reported;
- `set_flag(MTE2_X)` notes the copies issued so far; its `wait_flag` lands those (not the ones
  issued after the set) in memory, recorded as visible to MTE2 and X only (`vis_*` fields of
  the core state); every later wait `A_B` gives B what A sees, so a chain MTE2_V then V_MTE3
  (or a VECIN then VECOUT queue) reaches MTE3 as on the NPU; a TQue's enque / deque is such a
  set / wait (prims/queue.py);
- pipe_barrier(PIPE_MTE2) lands them for MTE2 only (PipeBarrier orders one pipe);
  pipe_barrier(PIPE_ALL), sync_all and TPipe.destroy make them visible to every pipe
  (core.flush_pending drops the record);
- a read by a pipe the copy is not visible to is an error naming the api, the pipes and the
  wait that is missing: UB->GM / L1->L0 / UB->UB copies, LocalTensor.get_value, the vector
  ops (`vector_reads`) and the other vector instructions check their sources.
Unchecked mode never records anything, so the readers' test (`in_flight`) is its only cost.
"""
from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from .core import FLAG_DEFER, prim, local_offset, NLEVELS
from .enums import HardEvent, PipeID
from .errors import FAULT, fault, KernelError
from .state import FLAG_SANITIZE, MAX_PENDING, MEM, STAGE, STATE

__all__ = ["in_flight", "vector_reads", "vis_wait", "vis_set", "vis_land", "vis_barrier_mte2",
           "vis_write", "vis_chain", "vis_check", "vis_check_tensor", "EVENT_SRC", "EVENT_DST",
           "PIPE_S", "PIPE_V", "PIPE_M", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX"]

PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX = (
    int(PipeID.PIPE_S), int(PipeID.PIPE_V), int(PipeID.PIPE_M), int(PipeID.PIPE_MTE1),
    int(PipeID.PIPE_MTE2), int(PipeID.PIPE_MTE3), int(PipeID.PIPE_FIX))
_HARD_EVENT_PIPES = {"S": PIPE_S, "V": PIPE_V, "M": PIPE_M, "MTE1": PIPE_MTE1,
                     "MTE2": PIPE_MTE2, "MTE3": PIPE_MTE3, "FIX": PIPE_FIX}
# HardEvent value -> (source PipeID, destination PipeID)
EVENT_SRC = np.array([_HARD_EVENT_PIPES[e.name.split("_")[0]] for e in HardEvent], np.int64)
EVENT_DST = np.array([_HARD_EVENT_PIPES[e.name.split("_")[1]] for e in HardEvent], np.int64)
EVENT_COUNT = (1 << 32) - 1     # prims/pipe.py's count bits of an events[] word (set_flags)
# (writer PipeID, reader PipeID) -> the HardEvent writer_reader (-1: none), named in the error
_EVENT_OF = np.full((int(PipeID.PIPE_FIX) + 1, int(PipeID.PIPE_FIX) + 1), -1, np.int64)
for _e in HardEvent:
    _a, _b = _e.name.split("_")
    _EVENT_OF[_HARD_EVENT_PIPES[_a], _HARD_EVENT_PIPES[_b]] = int(_e)


@register_jitable(inline="always")
def in_flight(ctx):
    """Checked mode (deferred copies): the readers' and writers' one test (false in unchecked
    mode, which records nothing, and under the sanitizer, whose synccheck reports these)."""
    return (ctx[STATE][0].options & (FLAG_DEFER | FLAG_SANITIZE)) == FLAG_DEFER


@prim
def _record(st, off, nb, mask, src):
    """Pipe `src` wrote [off, off + nb), seen by the pipes of `mask`: a record of bytes inside
    these is replaced; when the table is full, the first record is dropped (becomes visible
    to all)."""
    k = 0
    n = st.nvis
    while k < n:
        if st.vis_off[k] >= off and st.vis_off[k] + st.vis_bytes[k] <= off + nb:
            n -= 1
            st.vis_off[k] = st.vis_off[n]
            st.vis_bytes[k] = st.vis_bytes[n]
            st.vis_mask[k] = st.vis_mask[n]
            st.vis_src[k] = st.vis_src[n]
        else:
            k += 1
    k = n
    if k >= MAX_PENDING:
        k = 0
    else:
        n = k + 1
    st.nvis = n
    st.vis_off[k] = off
    st.vis_bytes[k] = nb
    st.vis_mask[k] = mask
    st.vis_src[k] = src


@prim
def vis_write(ctx, pipe, a, nbytes):
    """Checked mode: pipe `pipe` wrote the first `nbytes` bytes of local tensor `a`; until a wait
    orders another pipe after `pipe`, only `pipe` sees them."""
    off = local_offset(ctx, a)
    if off >= 0 and nbytes > 0:
        _record(ctx[STATE][0], off, nbytes, np.int64(1) << pipe, pipe)


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
def vis_land(ctx, lo, hi, before, mask):
    """Land the pending copies into [lo, hi) issued before copy number `before` (all of them:
    `before` = copy_seq) in memory, visible to the pipes of `mask` only."""
    mem, stage, st = ctx[MEM], ctx[STAGE], ctx[STATE][0]
    k = 0
    n = st.npending
    while k < n:
        off = st.pending_off[k]
        nb = st.pending_bytes[k]
        if off < hi and off + nb > lo and st.pending_seq[k] < before:
            mem[off:off + nb] = stage[off:off + nb]
            _record(st, off, nb, mask, PIPE_MTE2)
            n -= 1
            st.pending_off[k] = st.pending_off[n]
            st.pending_bytes[k] = st.pending_bytes[n]
            st.pending_seq[k] = st.pending_seq[n]
        else:
            k += 1
    st.npending = n


@prim
def vis_set(ctx, event, event_id):
    """set_flag(event, event_id) in checked mode: remember how many copies were issued before
    it (the copies its wait will land), for the oldest and the newest pending set."""
    st = ctx[STATE][0]
    if (st.events[event, event_id] & EVENT_COUNT) <= 1:     # (already counted by set_flag)
        st.set_first[event, event_id] = st.copy_seq
    st.set_last[event, event_id] = st.copy_seq


@prim
def vis_wait(ctx, event, event_id):
    """wait_flag(event, event_id) in checked mode (after its count went down): an MTE2_X wait
    lands the copies issued before its set_flag for MTE2 and X; any wait A_B then chains A's
    view to B. Copies issued between the set and the wait stay in flight."""
    src = EVENT_SRC[event]
    dst = EVENT_DST[event]
    st = ctx[STATE][0]
    before = st.set_first[event, event_id]
    if (st.events[event, event_id] & EVENT_COUNT) > 0:      # the next pending set: its stamp
        st.set_first[event, event_id] = st.set_last[event, event_id]
    if src == PIPE_MTE2:
        vis_land(ctx, 0, ctx[MEM].size, before, (np.int64(1) << PIPE_MTE2) | (np.int64(1) << dst))
    vis_chain(ctx, src, dst)


@prim
def vis_barrier_mte2(ctx):
    """pipe_barrier(PIPE_MTE2) in checked mode: MTE2's copies complete before its later
    instructions, so they land, but for MTE2 only (PipeBarrier orders one pipe)."""
    st = ctx[STATE][0]
    vis_land(ctx, 0, ctx[MEM].size, st.copy_seq, np.int64(1) << PIPE_MTE2)


@prim
def _fail(ctx, api, what, pipe, off, nb, mask, src):
    st = ctx[STATE][0]
    lv = -1
    for j in range(NLEVELS):
        if st.level_base[j] <= off < st.level_base[j] + st.level_size[j]:
            lv = j
    base = st.level_base[lv] if lv >= 0 else 0
    if mask == 0:
        fault("{}: {} must be ordered after the MTE2 copy that wrote it, by "
              "wait_flag(HardEvent.{:event}) after the copy's set_flag or a chain of flags "
              "through another pipe (the NPU reads stale data), got a read by {:pipe} of "
              "{:level} bytes [{}, {}) that no wait has landed yet (a set_flag issued before "
              "the copy does not cover it)",
              api, what, _EVENT_OF[PIPE_MTE2, pipe], pipe, lv, off - base, off - base + nb)
        raise KernelError(FAULT)
    if src == PIPE_MTE2:
        fault("{}: {} must be ordered after the MTE2 copy that wrote it, by "
              "wait_flag(HardEvent.{:event}) or a chain of flags through another pipe (the NPU "
              "reads stale data), got a read by {:pipe} of {:level} bytes [{}, {}) that the "
              "copy's waits made visible to {:pipes} only",
              api, what, _EVENT_OF[src, pipe], pipe, lv, off - base, off - base + nb, mask)
        raise KernelError(FAULT)
    fault("{}: {} must be ordered after the {:pipe} instruction that wrote it, by "
          "wait_flag(HardEvent.{:event}) or a chain of flags through another pipe (the NPU "
          "reads stale data), got a read by {:pipe} of {:level} bytes [{}, {}) that the "
          "write's waits made visible to {:pipes} only",
          api, what, src, _EVENT_OF[src, pipe], pipe, lv, off - base, off - base + nb, mask)
    raise KernelError(FAULT)


@prim
def vis_check(ctx, api, what, pipe, off, nb):
    """Raise unless every recorded copy overlapping core memory [off, off + nb) is visible to
    `pipe` and none is still in flight (callers test `nvis + npending > 0` first)."""
    st = ctx[STATE][0]
    pb = np.int64(1) << pipe
    for k in range(st.nvis):
        o = st.vis_off[k]
        if o < off + nb and o + st.vis_bytes[k] > off and not st.vis_mask[k] & pb:
            lo = max(o, off)
            hi = min(o + st.vis_bytes[k], off + nb)
            _fail(ctx, api, what, pipe, lo, hi - lo, st.vis_mask[k], st.vis_src[k])
    if pipe != PIPE_MTE2:
        for k in range(st.npending):
            o = st.pending_off[k]
            if o < off + nb and o + st.pending_bytes[k] > off:
                lo = max(o, off)
                hi = min(o + st.pending_bytes[k], off + nb)
                _fail(ctx, api, what, pipe, lo, hi - lo, 0, PIPE_MTE2)


@prim
def vis_check_tensor(ctx, api, what, pipe, a, nbytes):
    """vis_check of the first `nbytes` bytes of local tensor `a` (nothing for GM tensors)."""
    off = local_offset(ctx, a)
    if off >= 0:
        vis_check(ctx, api, what, pipe, off, nbytes)


@register_jitable(inline="always")
def vector_reads(ctx, api, what, t, nbytes):
    """A vector-pipe read of the first `nbytes` bytes of local tensor `t`: checked in checked
    mode only (the one `in_flight` test otherwise)."""
    if in_flight(ctx):
        vis_check_tensor(ctx, api, what, PIPE_V, t, nbytes)
