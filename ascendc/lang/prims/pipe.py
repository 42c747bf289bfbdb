"""TPipe's lifecycle and its pool of event ids.

Ascend C (kernel_tpipe_impl.h): the TPipe constructor runs Init(); Destroy() releases the
resources (its buffers; it ends with pipe_barrier(PIPE_ALL)) and marks the pipe destroyed;
Init() re-creates a destroyed pipe (ResetPool: buffers and event ids); Reset() releases the
buffers and event ids of a live pipe, which then takes init_buffer again. Here a released buffer
is an error when its queue is used again before init_buffer (queue.py), holding a tensor across
destroy()/reset() is an error, and in checked mode the released memory is NaN again.

Event ids: AllocEventID<evt>() takes the first free id of evt's pool (QUE_MAX_EVENT = 8 ids per
HardEvent on 910B) until ReleaseEventID<evt>(id); FetchEventID<evt>() returns that id without
taking it. An exhausted pool is an error (an assertion in Ascend C's debug build). The pool
lives in the core state's `events[evt, id]` words next to the set_flag counts (sync.py):
EVENT_ALLOCATED marks an id taken, the bits under EVENT_COUNT count pending set_flags.
"""
from ..core import prim
from ..enums import PipeID
from ..errors import FAULT, fault, KernelError
from ..state import N_EVENT_IDS, N_HARD_EVENTS, STATE
from .. import trace
from .queue import PIPE_DESTROYED, release_buffers

__all__ = ["tpipe_destroy", "tpipe_init", "tpipe_reset", "get_tpipe_ptr", "alloc_event_id",
           "fetch_event_id", "release_event_id"]

EVENT_COUNT = (1 << 32) - 1       # bits of an events[evt, id] word counting pending set_flags
EVENT_ALLOCATED = 1 << 40         # the id is taken by alloc_event_id

_OP_DESTROY = trace.op("TPipe.destroy")
_PIPE_ALL = int(PipeID.PIPE_ALL)


@prim
def _created_pipe(ctx, api):
    """The pipe must exist."""
    if ctx[STATE][0].pipes & 0xFF == 0:
        fault("{}: the kernel must create its TPipe first (pipe = asc.TPipe()), got no TPipe",
              api)
        raise KernelError(FAULT)


@prim
def _live_pipe(ctx, api):
    """The pipe must exist and not be destroyed."""
    _created_pipe(ctx, api)
    if ctx[STATE][0].pipes & PIPE_DESTROYED:
        fault("{}: the TPipe must be initialised again with init() after destroy(), got a "
              "destroyed TPipe", api)
        raise KernelError(FAULT)


@prim
def _free_event_ids(ctx):
    ev = ctx[STATE][0].events
    for e in range(N_HARD_EVENTS):
        for i in range(N_EVENT_IDS):
            ev[e, i] &= EVENT_COUNT


@prim
def get_tpipe_ptr(ctx):
    """GetTPipePtr(): the kernel's TPipe (it must have been created)."""
    _created_pipe(ctx, "asc.get_tpipe_ptr")
    return 1


@prim
def tpipe_destroy(ctx):
    """TPipe::Destroy(): release the buffers; the pipe is destroyed until init() (a second
    destroy() is a no-op, as Ascend C's destructor after Destroy())."""
    st = ctx[STATE][0]
    _created_pipe(ctx, "TPipe.destroy")
    if st.pipes & PIPE_DESTROYED:
        return
    release_buffers(ctx, "TPipe.destroy")
    st.pipes |= PIPE_DESTROYED
    trace.event(ctx, _OP_DESTROY, trace.K_BARRIER, _PIPE_ALL, 0, 0)


@prim
def tpipe_init(ctx):
    """TPipe::Init(): re-create a destroyed pipe (no buffers, every event id free)."""
    st = ctx[STATE][0]
    _created_pipe(ctx, "TPipe.init")
    if not st.pipes & PIPE_DESTROYED:
        fault("TPipe.init: the TPipe must be destroyed first (the constructor initialises it; "
              "init() pairs with destroy()), got init() on a live TPipe")
        raise KernelError(FAULT)
    st.pipes &= ~PIPE_DESTROYED
    _free_event_ids(ctx)


@prim
def tpipe_reset(ctx):
    """TPipe::Reset(): release the buffers and event ids; init_buffer may follow."""
    _live_pipe(ctx, "TPipe.reset")
    release_buffers(ctx, "TPipe.reset")
    _free_event_ids(ctx)


@prim
def _check_evt(event, api):
    if event < 0 or event >= N_HARD_EVENTS:
        fault("{}: event must be a HardEvent (0..{}), got event={}", api, N_HARD_EVENTS - 1,
              event)
        raise KernelError(FAULT)


@prim
def _first_free(ctx, event, api):
    _live_pipe(ctx, api)
    _check_evt(event, api)
    ev = ctx[STATE][0].events
    for i in range(N_EVENT_IDS):
        if not ev[event, i] & EVENT_ALLOCATED:
            return i
    fault("{}: a free event id must be available ({} per HardEvent; release_event_id "
          "missing?), got all {} ids of {:event} allocated", api, N_EVENT_IDS, N_EVENT_IDS,
          event)
    raise KernelError(FAULT)


@prim
def alloc_event_id(ctx, event):
    """TPipe::AllocEventID<event>(): take the first free id of the event's pool."""
    i = _first_free(ctx, event, "TPipe.alloc_event_id")
    ctx[STATE][0].events[event, i] |= EVENT_ALLOCATED
    return i


@prim
def fetch_event_id(ctx, event):
    """TPipe::FetchEventID<event>(): the id alloc_event_id would take, not taken."""
    return _first_free(ctx, event, "TPipe.fetch_event_id")


@prim
def release_event_id(ctx, id, event):
    """TPipe::ReleaseEventID<event>(id): give back an id alloc_event_id took."""
    api = "TPipe.release_event_id"
    _live_pipe(ctx, api)
    _check_evt(event, api)
    if id < 0 or id >= N_EVENT_IDS:
        fault("{}: id must be in [0, {}), got id={}", api, N_EVENT_IDS, id)
        raise KernelError(FAULT)
    ev = ctx[STATE][0].events
    if not ev[event, id] & EVENT_ALLOCATED:
        fault("{}: id must be taken by alloc_event_id, got id={} of {:event}, which is not "
              "allocated", api, id, event)
        raise KernelError(FAULT)
    ev[event, id] &= ~EVENT_ALLOCATED
