"""TPipe / TQue / TBuf: buffer allocation in local memory and the queue discipline.

A queue (or TBuf) is a state.QUEUE_RECORD in the core's state (`ctx[STATE][0].queues[k]`); kernels
hold a view of it (compiled and interpreted alike). Tensors are views into ctx's local memory; a
tensor's slot is found from its address, so a tensor handed to the wrong queue is caught.
Which positions a TQue/TBuf may use, and their levels, come from positions.py.

TPipe.destroy()/reset() release every buffer (pipe.py): the records stay, marked RELEASED, and
need init_buffer again. A record's `fifo[i]` holds two things: its low 32 bits are the FIFO ring
(buffer numbers of enqueued tensors, the oldest at fifo_head), its high 32 bits the user tag of
buffer i (LocalTensor.set_user_tag; Ascend C keeps it in the buffer's TBufType, -1 after
InitBuffer).
"""
import numpy as np
from numba.core import config
from numba.extending import overload

from ..core import (prim, FLAG_DEFER, FLAG_NAN_FILL, flush_pending, level_of,
                    local_offset)
from ..crosscore import ROLE_AIC
from ..errors import FAULT, fault, KernelError
from ..positions import (NPOS, POS_LEVEL, POS_NOTE, POS_TQUE, POSITION_NAMES, UB,
                         TQUE_POSITIONS_TEXT)
from ..state import FLAG_SANITIZE, KIND_BUF, KIND_QUE, MAX_QUEUES, MAX_SLOTS, MEM, STAGE, STATE
from .. import trace
from .borrow import retyped
from .movecore import inline
from ..enums import TPosition
from ..visibility import (PIPE_M, PIPE_FIX, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_V, vis_chain,
                          vis_land)

_OP_ALLOC, _OP_ENQUE, _OP_DEQUE, _OP_FREE = (trace.op("TQue.alloc_tensor"), trace.op("TQue.enque"),
                                             trace.op("TQue.deque"), trace.op("TQue.free_tensor"))
_OP_GET = trace.op("TBuf.get")
_OP_GET_OFF = trace.op("TBuf.get_with_offset")

__all__ = ["tpipe_new", "tque_new", "tbuf_new", "init_buffer_que", "init_buffer_buf",
           "que_alloc_tensor", "que_enque", "que_deque", "que_free_tensor", "tbuf_get",
           "tbuf_get_with_offset", "que_vacant", "que_has_tensor", "que_tensor_count",
           "que_has_idle_buffer", "kernel_end", "position_name", "tensor_position",
           "set_user_tag", "get_user_tag"]

# q.init: never initialised, initialised by init_buffer, released by TPipe.destroy()/reset()
NOT_INIT, INIT, RELEASED = 0, 1, 2
# st.pipes: TPipe objects created (low byte) and this flag while the pipe is destroyed
PIPE_DESTROYED = 1 << 8
_RING = (1 << 32) - 1      # the FIFO ring's bits of a q.fifo word (the tag is above them)
_NO_TAG = -(1 << 32)       # a q.fifo word with user tag -1 and ring entry 0

# TPosition -> (producer, consumer) PipeID of its queue (-1: none), as Ascend C lowers enque/deque
_QUE_SRC = np.full(NPOS, -1, np.int64)
_QUE_DST = np.full(NPOS, -1, np.int64)
for _pos, _src, _dst in ((TPosition.VECIN, PIPE_MTE2, PIPE_V),
                         (TPosition.VECOUT, PIPE_V, PIPE_MTE3),
                         (TPosition.A1, PIPE_MTE2, PIPE_MTE1), (TPosition.B1, PIPE_MTE2, PIPE_MTE1),
                         (TPosition.A2, PIPE_MTE1, PIPE_M), (TPosition.B2, PIPE_MTE1, PIPE_M),
                         (TPosition.CO1, PIPE_M, PIPE_FIX)):
    _QUE_SRC[int(_pos)], _QUE_DST[int(_pos)] = _src, _dst

_TQUE_POS_MSG = "asc.TQue: pos must be one of " + TQUE_POSITIONS_TEXT + ", got pos={:pos}"


@prim
def position_name(pos):
    if 0 <= pos < NPOS:
        return POSITION_NAMES[pos]
    return "MAX"


@prim
def _kind(q):
    return "TQue" if q.kind == KIND_QUE else "TBuf"


@prim
def tpipe_new(ctx):
    st = ctx[STATE][0]
    st.pipes += 1
    if st.pipes > 1:
        raise KernelError("asc.TPipe: a kernel must create exactly one TPipe, got a second TPipe()")
    return st.pipes


@prim
def _new_rec(ctx, kind, pos, depth):
    """Index in ctx[STATE][0].queues of a fresh record."""
    st = ctx[STATE][0]
    k = st.nque
    if k >= MAX_QUEUES:
        fault("asc.TQue: a kernel must declare at most {} queues and buffers, got "
              "one more", MAX_QUEUES)
        raise KernelError(FAULT)
    st.nque = k + 1
    q = st.queues[k]
    q.kind = kind
    q.pos = pos
    q.level = POS_LEVEL[pos] if 0 <= pos < NPOS else -1
    q.depth = depth
    q.num = 0
    q.slot_bytes = 0
    q.mem_off = 0
    q.init = 0
    q.alloc = 0
    q.fifo_n = 0
    q.fifo_head = 0
    q.next_slot = 0
    q.id = k
    q.fifo[:] = 0
    return k


@prim
def _tque_new(ctx, pos, depth):
    if pos < 0 or pos >= NPOS or POS_TQUE[pos] == 0:
        fault(_TQUE_POS_MSG, pos)
        raise KernelError(FAULT)
    if POS_LEVEL[pos] < 0:
        fault("asc.TQue: pos {:pos} is global memory on 910B ({}), got pos={:pos}",
              pos, POS_NOTE[pos], pos)
        raise KernelError(FAULT)
    if depth < 0 or depth > MAX_SLOTS:
        fault("asc.TQue: depth must be in [0, {}], got depth={}", MAX_SLOTS, depth)
        raise KernelError(FAULT)
    return _new_rec(ctx, KIND_QUE, pos, depth)


@prim
def _tbuf_new(ctx, pos):
    if pos < 0 or pos >= NPOS or POS_LEVEL[pos] < 0:
        fault("asc.TBuf: pos must be a local position (VECCALC, VECIN, VECOUT, A1, "
              "B1, ...), got pos={:pos}", pos)
        raise KernelError(FAULT)
    return _new_rec(ctx, KIND_BUF, pos, 0)


def _record(ctx, k):
    """Queue record k as a view, from Python (a record returned by njit code would be a copy).
    A numpy.void is handed to njit code fastest; with NUMBA_DISABLE_JIT the state is a
    recarray and its numpy.record gives the attribute access the Python primitives use."""
    st = ctx[STATE][0]
    return st.queues[k] if isinstance(st, np.record) else st["queues"][k]


def tque_new(ctx, pos, depth):
    """A TQue at TPosition `pos`: its record (a view into the core's state)."""
    return _record(ctx, _tque_new(ctx, pos, depth))


def tbuf_new(ctx, pos):
    """A TBuf at TPosition `pos`: its record (a view into the core's state)."""
    return _record(ctx, _tbuf_new(ctx, pos))


if not config.DISABLE_JIT:
    @overload(tque_new)
    def _tque_new_ov(ctx, pos, depth):
        return lambda ctx, pos, depth: ctx[STATE][0].queues[_tque_new(ctx, pos, depth)]

    @overload(tbuf_new)
    def _tbuf_new_ov(ctx, pos):
        return lambda ctx, pos: ctx[STATE][0].queues[_tbuf_new(ctx, pos)]


@prim
def _init(ctx, q, num, nbytes, api):
    st = ctx[STATE][0]
    if st.pipes & PIPE_DESTROYED:
        fault("{}: the TPipe must be initialised again with init() after destroy(), got "
              "init_buffer for {:pos} {} #{} on a destroyed TPipe", api, q.pos, _kind(q), q.id)
        raise KernelError(FAULT)
    if q.init == INIT:
        fault("{}: each queue/buffer must be initialised once, got a second "
              "init_buffer for {:pos} {} #{}", api, q.pos, _kind(q), q.id)
        raise KernelError(FAULT)
    if num < 1 or num > MAX_SLOTS:
        fault("{}: num must be in [1, {}], got num={} for {:pos} {} #{}", api,
              MAX_SLOTS, num, q.pos, _kind(q), q.id)
        raise KernelError(FAULT)
    if nbytes <= 0:
        fault("{}: len must be > 0 bytes, got len={} for {:pos} {} #{}", api, nbytes,
              q.pos, _kind(q), q.id)
        raise KernelError(FAULT)
    if st.nbuf + num > 64:
        fault("{}: a kernel must use at most 64 buffers, got {} with {:pos} {} #{}",
              api, st.nbuf + num, q.pos, _kind(q), q.id)
        raise KernelError(FAULT)
    slot = (nbytes + 31) // 32 * 32
    lv = q.level
    # (the AIC of a kernel whose Matmul it serves may declare UB buffers before register_matmul,
    # as Ascend C's pyasc tutorials do: it leaves the kernel there, before any vector work)
    if lv == UB and st.core_role == ROLE_AIC and st.kfc != 2:
        fault("{}: an AIC of a MIX kernel must not allocate Unified Buffer (the cube core has "
              "no UB on Atlas A2: vector work runs on the AIVs, under asc.ascend_is_aiv()), got "
              "init_buffer for {:pos} {} #{} on AIC {}", api, q.pos, _kind(q), q.id,
              st.block_idx)
        raise KernelError(FAULT)
    cap = st.level_size[lv]
    used = st.level_used[lv]
    if used + num * slot > cap:
        fault("{}: {:pos} {} #{} must fit in {:level}, asked {} bytes ({} x {}), "
              "got {} bytes left of {}", api, q.pos, _kind(q), q.id, lv, num * slot,
              num, slot, cap - used, cap)
        raise KernelError(FAULT)
    q.mem_off = st.level_base[lv] + used
    q.num = num
    q.slot_bytes = slot
    q.init = INIT
    q.alloc = 0
    q.fifo_n = 0
    q.fifo_head = 0
    q.next_slot = 0
    q.fifo[:] = _NO_TAG
    st.level_used[lv] = used + num * slot
    st.nbuf += num


@prim
def init_buffer_que(ctx, q, num, nbytes):
    if q.kind != KIND_QUE:
        fault("TPipe.init_buffer: (que, num, len) form must be given a TQue, got "
              "{:pos} TBuf #{} (use init_buffer(buf, len))", q.pos, q.id)
        raise KernelError(FAULT)
    _init(ctx, q, num, nbytes, "TPipe.init_buffer")


@prim
def init_buffer_buf(ctx, b, nbytes):
    if b.kind != KIND_BUF:
        fault("TPipe.init_buffer: (buf, len) form must be given a TBuf, got "
              "{:pos} TQue #{} (use init_buffer(que, num, len))", b.pos, b.id)
        raise KernelError(FAULT)
    _init(ctx, b, 1, nbytes, "TPipe.init_buffer")


@inline
def _need_init(q, api):
    """Fault unless q is initialised (inlined: one compare per queue call; the faulting call,
    with its message, out of line)."""
    if q.init != INIT:
        _init_fault(q, api)


@prim
def _init_fault(q, api):
    if q.init == RELEASED:
        fault("{}: the queue's buffers must not be used after TPipe.destroy()/reset() released "
              "them (init_buffer it again), got a released {:pos} {} #{}", api, q.pos,
              _kind(q), q.id)
        raise KernelError(FAULT)
    if q.init != INIT:
        fault("{}: the queue must be initialised with pipe.init_buffer first, got an "
              "uninitialised {:pos} {} #{}", api, q.pos, _kind(q), q.id)
        raise KernelError(FAULT)


@prim
def _slot_view(ctx, q, s, dtype):
    off = q.mem_off + s * q.slot_bytes
    return retyped(ctx[MEM][off:off + q.slot_bytes], dtype)


@prim
def _foreign(q, off, api):
    fault("{}: tensor must be a buffer of {:pos} {} #{}, got a foreign tensor at "
          "local offset {}", api, q.pos, _kind(q), q.id, off)
    raise KernelError(FAULT)


@inline
def _slot_of(ctx, q, t, api):
    """The slot of q that tensor t is (inlined: the test is a few compares per enque / free;
    the fault, with its message, out of line)."""
    off = np.int64(local_offset(ctx, t))
    if off < q.mem_off or off >= q.mem_off + q.num * q.slot_bytes or \
            (off - q.mem_off) % q.slot_bytes != 0:
        _foreign(q, off, api)
    return np.int64((off - q.mem_off) // q.slot_bytes)


@prim
def _sanitize_alloc(ctx, q, s):
    """Under the sanitizer a buffer is fresh at each alloc_tensor (all 0xFF, as at a block's
    start), so a read of what an earlier tensor left there is found as uninitialised."""
    lo = q.mem_off + s * q.slot_bytes
    if not _pending_in(ctx, lo, lo + q.slot_bytes):
        ctx[MEM][lo:lo + q.slot_bytes] = 0xFF
    trace.region(ctx, _OP_ALLOC, lo, q.slot_bytes, trace.REGION_ALLOC)


@prim
def _pending_in(ctx, lo, hi):
    """A deferred GM->local copy into [lo, hi) is still in flight."""
    st = ctx[STATE][0]
    for i in range(st.npending):
        if st.pending_off[i] < hi and st.pending_off[i] + st.pending_bytes[i] > lo:
            return True
    return False


@prim
def que_alloc_tensor(ctx, q, dtype):
    _need_init(q, "TQue.alloc_tensor")
    n = q.num
    for i in range(n):
        s = (q.next_slot + i) % n
        if not (q.alloc >> s) & 1:
            q.alloc |= 1 << s
            q.next_slot = (s + 1) % n
            trace.event(ctx, _OP_ALLOC, trace.K_Q_ALLOC, q.pos, q.id, s)
            if ctx[STATE][0].options & FLAG_SANITIZE:
                _sanitize_alloc(ctx, q, s)
            return _slot_view(ctx, q, s, dtype)
    fault("TQue.alloc_tensor: a free buffer must be available, got all {} buffers of "
          "{:pos} TQue #{} allocated (free_tensor missing?)", n, q.pos, q.id)
    raise KernelError(FAULT)


@prim
def que_enque(ctx, q, t):
    _need_init(q, "TQue.enque")
    s = _slot_of(ctx, q, t, "TQue.enque")
    if not (q.alloc >> s) & 1:
        fault("TQue.enque: tensor must be allocated with alloc_tensor, got a freed "
              "buffer of {:pos} TQue #{}", q.pos, q.id)
        raise KernelError(FAULT)
    limit = max(q.depth, 1)
    if q.fifo_n >= limit:
        fault("TQue.enque: enqueued tensors must not exceed depth={}, got {} in "
              "{:pos} TQue #{} (deque missing?)", q.depth, q.fifo_n + 1,
              q.pos, q.id)
        raise KernelError(FAULT)
    i = (q.fifo_head + q.fifo_n) % MAX_SLOTS
    q.fifo[i] = (q.fifo[i] & ~_RING) | s
    q.fifo_seq[i] = ctx[STATE][0].copy_seq
    q.fifo_n += 1
    trace.event(ctx, _OP_ENQUE, trace.K_Q_ENQUE, q.pos, q.id, s)


@prim
def que_deque(ctx, q, dtype):
    _need_init(q, "TQue.deque")
    if q.fifo_n == 0:
        fault("TQue.deque: the queue must hold an enqueued tensor, got an empty "
              "{:pos} TQue #{} (enque missing?)", q.pos, q.id)
        raise KernelError(FAULT)
    s = q.fifo[q.fifo_head] & _RING
    before = q.fifo_seq[q.fifo_head]
    q.fifo_head = (q.fifo_head + 1) % MAX_SLOTS
    q.fifo_n -= 1
    if ctx[STATE][0].options & FLAG_DEFER:
        src = _QUE_SRC[q.pos] if 0 <= q.pos < _QUE_SRC.size else -1
        if src < 0:         # VECCALC: no pipe pair; the slot's copies land for every pipe
            lo = q.mem_off + s * q.slot_bytes
            flush_pending(ctx, lo, lo + q.slot_bytes)
        else:               # a wait src -> dst (enque was its set): visibility.py's rule
            dst = _QUE_DST[q.pos]
            if src == PIPE_MTE2:
                vis_land(ctx, 0, ctx[MEM].size, before,
                         (np.int64(1) << PIPE_MTE2) | (np.int64(1) << dst))
            vis_chain(ctx, src, dst)
    trace.event(ctx, _OP_DEQUE, trace.K_Q_DEQUE, q.pos, q.id, s)
    return _slot_view(ctx, q, s, dtype)


@prim
def que_free_tensor(ctx, q, t):
    _need_init(q, "TQue.free_tensor")
    s = _slot_of(ctx, q, t, "TQue.free_tensor")
    if not (q.alloc >> s) & 1:
        fault("TQue.free_tensor: tensor must be allocated, got a buffer of {:pos} TQue "
              "#{} freed twice", q.pos, q.id)
        raise KernelError(FAULT)
    for i in range(q.fifo_n):
        if (q.fifo[(q.fifo_head + i) % MAX_SLOTS] & _RING) == s:
            fault("TQue.free_tensor: tensor must be dequeued before it is freed, got "
                  "a tensor still enqueued in {:pos} TQue #{}", q.pos, q.id)
            raise KernelError(FAULT)
    q.alloc &= ~(1 << s)
    trace.event(ctx, _OP_FREE, trace.K_Q_FREE, q.pos, q.id, s)
    trace.region(ctx, _OP_FREE, q.mem_off + s * q.slot_bytes, q.slot_bytes, trace.REGION_FREE)


@prim
def que_vacant(ctx, q):
    return q.fifo_n < max(q.depth, 1)


@prim
def que_has_tensor(ctx, q):
    return q.fifo_n > 0


@prim
def que_tensor_count(ctx, q):
    return q.fifo_n


@prim
def que_has_idle_buffer(ctx, q):
    for s in range(q.num):
        if not (q.alloc >> s) & 1:
            return True
    return False


@prim
def tbuf_get(ctx, b, dtype, n):
    _need_init(b, "TBuf.get")
    v = _slot_view(ctx, b, 0, dtype)
    trace.region(ctx, _OP_GET, b.mem_off, b.slot_bytes, trace.REGION_VIEW)
    if n < 0:
        return v
    if n > v.size:
        fault("TBuf.get: len must be <= the buffer's {} elements, got len={}", v.size,
              n)
        raise KernelError(FAULT)
    return v[:n]


@prim
def tbuf_get_with_offset(ctx, b, size, offset, dtype):
    _need_init(b, "TBuf.get_with_offset")
    if offset % 32 != 0:
        fault("TBuf.get_with_offset: buf_offset must be a multiple of 32 bytes, got "
              "buf_offset={}", offset)
        raise KernelError(FAULT)
    v = _slot_view(ctx, b, 0, np.uint8)
    isz = v[:0].view(dtype).itemsize
    if offset + size * isz > v.size:
        fault("TBuf.get_with_offset: offset + size must fit the buffer's {} bytes, "
              "got {}", v.size, offset + size * isz)
        raise KernelError(FAULT)
    trace.region(ctx, _OP_GET_OFF, b.mem_off + offset, size * isz, trace.REGION_VIEW)
    return v[offset:offset + size * isz].view(dtype)


@prim
def _held(q):
    """How many of queue record q's buffers are allocated (alloc_tensor'd, not yet freed)."""
    held = 0
    for s in range(q.num):
        held += (q.alloc >> s) & 1
    return held


@prim
def kernel_end(ctx):
    """Tensors still held when a block ends break the queue discipline."""
    st = ctx[STATE][0]
    for k in range(st.nque):
        q = st.queues[k]
        if q.kind != KIND_QUE:
            continue
        held = _held(q)
        if held or q.fifo_n:
            fault("kernel end: every tensor must be freed with free_tensor, got {} "
                  "tensor(s) still held by {:pos} TQue #{}", held, q.pos, q.id)
            raise KernelError(FAULT)


# ---- the pipe's buffers released (TPipe.destroy / reset, prims/pipe.py) -----------------------

@prim
def release_buffers(ctx, api):
    """Release every buffer init_buffer handed out: each TQue's tensors must be freed first; the
    copies in flight land (Destroy ends with pipe_barrier(PIPE_ALL)); in checked mode the memory
    is NaN again, as fresh buffers are; the records need init_buffer again."""
    st = ctx[STATE][0]
    for k in range(st.nque):
        q = st.queues[k]
        if q.init != INIT or q.kind != KIND_QUE:
            continue
        held = _held(q)
        if held or q.fifo_n:
            fault("{}: every tensor must be freed with free_tensor first, got {} tensor(s) "
                  "still held by {:pos} TQue #{}", api, held, q.pos, q.id)
            raise KernelError(FAULT)
    if st.options & FLAG_DEFER:
        flush_pending(ctx, 0, ctx[MEM].size)
    if st.options & FLAG_NAN_FILL:
        for lv in range(st.level_used.size):
            lo = st.level_base[lv]
            ctx[MEM][lo:lo + st.level_used[lv]] = 0xFF
            if st.options & FLAG_DEFER:
                ctx[STAGE][lo:lo + st.level_used[lv]] = 0xFF
    for k in range(st.nque):      # (nothing is held now; _init resets the ring and tags)
        q = st.queues[k]
        if q.init == INIT:
            q.init = RELEASED
    st.level_used[:] = 0
    st.nbuf = 0


# ---- tensor metadata kept with the buffer: position, user tag ----------------------------------

@prim
def _buffer_of(ctx, t):
    """Index of the initialised TQue/TBuf record holding tensor t's first element (-1: none)."""
    off = local_offset(ctx, t)
    st = ctx[STATE][0]
    if off >= 0:
        for k in range(st.nque):
            q = st.queues[k]
            if q.init == INIT and q.mem_off <= off < q.mem_off + q.num * q.slot_bytes:
                return k
    return -1


@prim
def _no_buffer(ctx, t, api):
    off = local_offset(ctx, t)
    if off < 0:
        fault("{}: tensor must be a LocalTensor, got a GM tensor", api)
        raise KernelError(FAULT)
    fault("{}: not supported for a tensor outside every TQue/TBuf buffer (a static "
          "LocalTensor, or a buffer released by TPipe.destroy()/reset()), got a {:level} "
          "tensor at local offset {}", api, level_of(ctx, t), off)
    raise KernelError(FAULT)


@prim
def tensor_position(ctx, t):
    """LocalTensor.get_position(): the TPosition of the TQue/TBuf whose buffer holds t."""
    k = _buffer_of(ctx, t)
    if k < 0:
        _no_buffer(ctx, t, "LocalTensor.get_position")
    return ctx[STATE][0].queues[k].pos


@prim
def _tag_word(ctx, t, api):
    """(queue index, buffer number) whose q.fifo word holds t's buffer's user tag."""
    k = _buffer_of(ctx, t)
    if k < 0:
        _no_buffer(ctx, t, api)
    q = ctx[STATE][0].queues[k]
    return k, (np.int64(local_offset(ctx, t)) - q.mem_off) // q.slot_bytes


@prim
def set_user_tag(ctx, t, tag):
    """LocalTensor.set_user_tag(tag): the tag (int32, TTagType) of t's buffer."""
    k, s = _tag_word(ctx, t, "LocalTensor.set_user_tag")
    q = ctx[STATE][0].queues[k]
    tag32 = ((np.int64(tag) + (1 << 31)) & _RING) - (1 << 31)
    q.fifo[s] = (tag32 << 32) | (q.fifo[s] & _RING)


@prim
def get_user_tag(ctx, t):
    """LocalTensor.get_user_tag(): the tag of t's buffer (-1 until set_user_tag)."""
    k, s = _tag_word(ctx, t, "LocalTensor.get_user_tag")
    return ctx[STATE][0].queues[k].fifo[s] >> 32
