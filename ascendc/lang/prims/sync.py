"""Pipe synchronisation and system variables.

Blocks run their instructions in program order here, so pipes never race; what we keep is the
*visibility* rule: in checked mode a GM->local copy becomes visible to every pipe at a pipe_barrier
on ALL, to MTE2 only at one on MTE2, and a wait_flag on MTE2_X makes the copies issued before its
set_flag visible to MTE2 and X only (lang/visibility.py).
wait_flag without a matching set_flag would hang the hardware, so it is an error. sync_all is a
real barrier across the launch's blocks (they all run at once); blocks calling it unequally often
would hang the NPU, so that is an error too.
A flag's pending set_flags are counted in the EVENT_COUNT bits of `events[event, id]` (the bit
above them marks an id taken from TPipe's pool, pipe.py).
"""

from ..barrier import call_i64
from ..core import prim, FLAG_DEFER, flush_pending
from ..errors import FAULT, fault, KernelError
from ..state import N_EVENT_IDS, N_HARD_EVENTS, MEM, STATE
from .. import trace
from .crosscore import mix_sync_all
from .pipe import EVENT_COUNT
from ..visibility import vis_barrier_mte2, vis_set, vis_wait

_OP_BARRIER, _OP_SET, _OP_WAIT, _OP_SYNC_ALL = (trace.op("pipe_barrier"), trace.op("set_flag"),
                                                trace.op("wait_flag"), trace.op("sync_all"))

__all__ = ["pipe_barrier", "set_flag", "wait_flag", "sync_all", "get_block_idx", "get_block_num",
           "get_sub_block_idx", "get_sub_block_num", "get_data_block_size_in_bytes"]



@prim
def _flush_all(ctx):
    if ctx[STATE][0].options & FLAG_DEFER:
        flush_pending(ctx, 0, ctx[MEM].size)


@prim
def pipe_barrier(ctx, pipe):
    if pipe == 0:
        raise KernelError("asc.pipe_barrier: pipe must not be PIPE_S (a hardware error), got "
                          "pipe=PIPE_S")
    if pipe < 0 or pipe > 10:
        fault("asc.pipe_barrier: pipe must be a PipeID, got pipe={}", pipe)
        raise KernelError(FAULT)
    if pipe == 6:
        _flush_all(ctx)
    elif pipe == 4 and ctx[STATE][0].options & FLAG_DEFER:
        vis_barrier_mte2(ctx)       # orders MTE2 only (visibility.py)
    trace.event(ctx, _OP_BARRIER, trace.K_BARRIER, pipe, 0, 0)


@prim
def _check_event(event, event_id, api):
    if event < 0 or event >= N_HARD_EVENTS:
        fault("{}: event must be a HardEvent (0..{}), got event={}", api,
              N_HARD_EVENTS - 1, event)
        raise KernelError(FAULT)
    if event_id < 0 or event_id >= N_EVENT_IDS:
        fault("{}: event_id must be in [0, {}), got event_id={}", api, N_EVENT_IDS,
              event_id)
        raise KernelError(FAULT)


@prim
def set_flag(ctx, event, event_id):
    _check_event(event, event_id, "asc.set_flag")
    ctx[STATE][0].events[event, event_id] += 1
    if ctx[STATE][0].options & FLAG_DEFER:
        vis_set(ctx, event, event_id)
    trace.event(ctx, _OP_SET, trace.K_SET, event, 0, event_id)


@prim
def wait_flag(ctx, event, event_id):
    _check_event(event, event_id, "asc.wait_flag")
    ev = ctx[STATE][0].events
    if (ev[event, event_id] & EVENT_COUNT) <= 0:
        fault("asc.wait_flag: a matching set_flag must come first "
              "(the NPU would hang), got wait_flag(event={:event}, event_id={})",
              event, event_id)
        raise KernelError(FAULT)
    ev[event, event_id] -= 1
    trace.event(ctx, _OP_WAIT, trace.K_WAIT, event, 0, event_id)
    if ctx[STATE][0].options & FLAG_DEFER:
        vis_wait(ctx, event, event_id)


@prim
def sync_all(ctx, is_aiv_only):
    """SyncAll: wait until every block of the launch has arrived (see ascendc/lang/barrier.py);
    in a launch whose cores synchronise with each other (a MIX kernel, cross-core or inter-block
    flags) the barrier is over its AIVs (`is_aiv_only`) or all its cores (prims/crosscore.py)."""
    _flush_all(ctx)
    st = ctx[STATE][0]
    st.sync_calls += 1
    trace.event(ctx, _OP_SYNC_ALL, trace.K_SYNC_ALL, st.sync_calls, 0, 0)
    if st.xcore != 0:
        mix_sync_all(ctx, is_aiv_only)
        return
    key = st.barrier
    if key == 0:
        if st.block_num > 1:
            fault("asc.sync_all: the launch must run all its blocks at once "
                  "(the kernel was not seen calling sync_all; call it as "
                  "asc.sync_all() in the "
                  "kernel or an @asc.jit helper), got block_num={}", st.block_num)
            raise KernelError(FAULT)
        return
    r = call_i64(st.barrier_fn, key)
    if r == 0:
        return
    if r == -1:
        raise KernelError("asc.sync_all: the barrier was aborted because another block of the "
                          "launch failed (that block's error is the one reported)")
    if r > 0:
        fault("asc.sync_all: every block must call sync_all the same number of times "
              "(the NPU would hang), got block_idx={} waiting at its call #{} after "
              "{} of {} block(s) had ended", st.block_idx, st.sync_calls, r,
              st.block_num)
        raise KernelError(FAULT)
    fault("asc.sync_all: the launch's barrier must be reachable, got status={}", r)
    raise KernelError(FAULT)


@prim
def get_block_idx(ctx):
    return ctx[STATE][0].block_idx


@prim
def get_block_num(ctx):
    return ctx[STATE][0].block_num


@prim
def get_sub_block_idx(ctx):
    return 0


@prim
def get_sub_block_num(ctx):
    return 1


@prim
def get_data_block_size_in_bytes(ctx):
    return 32
