"""TPipe / TQue / TBuf: buffer allocation in local memory and the queue discipline.

A queue (or TBuf) is a record of QREC int64 in the context's state; kernels hold a view of it.
Record fields (Q_*) below. Tensors are views into ctx's local memory; a tensor's slot is found
from its address, so a tensor handed to the wrong queue is caught.
"""
import numpy as np

from ..core import (prim, S_FLAGS, S_LEVEL_BASE, S_LEVEL_USED, S_NBUF, S_NQUE, S_PIPES, S_QUEUES, QREC,
                    MAX_QUEUES, FLAG_DEFER, flush_pending, local_offset)
from ..errors import KernelError

__all__ = ["tpipe_new", "tque_new", "tbuf_new", "init_buffer_que", "init_buffer_buf",
           "que_alloc_tensor", "que_enque", "que_deque", "que_free_tensor", "tbuf_get",
           "tbuf_get_with_offset", "que_vacant", "que_has_tensor", "que_tensor_count",
           "que_has_idle_buffer", "kernel_end", "position_name"]

Q_KIND, Q_POS, Q_LEVEL, Q_DEPTH, Q_NUM, Q_BYTES, Q_BASE, Q_INIT, Q_ALLOC, Q_FIFO_N, Q_FIFO_HEAD, \
    Q_NEXT, Q_ID = range(13)
Q_FIFO = 16            # ring of up to MAX_SLOTS slot numbers
MAX_SLOTS = 16
KIND_QUE, KIND_BUF = 1, 2

# TPosition value -> level (-1: not a local position); index = TPosition value
_POS_LEVEL = np.array([-1, 1, 2, 1, 3, 1, 5, 4, -1, 0, 0, 0], np.int64)
_QUE_OK = np.array([0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0], np.int64)  # TQue: VECIN/OUT, A1/2, B1/2, CO1/2


@prim
def position_name(pos):
    names = ("GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "VECIN", "VECOUT", "VECCALC")
    if 0 <= pos < 12:
        return names[pos]
    return "MAX"


@prim
def _kind(q):
    return "TQue" if q[Q_KIND] == KIND_QUE else "TBuf"


@prim
def tpipe_new(ctx):
    st = ctx[2]
    st[S_PIPES] += 1
    if st[S_PIPES] > 1:
        raise KernelError("asc.TPipe: a kernel must create exactly one TPipe, got a second TPipe()")
    return st[S_PIPES]


@prim
def _new_rec(ctx, kind, pos, depth):
    st = ctx[2]
    k = st[S_NQUE]
    if k >= MAX_QUEUES:
        raise KernelError("asc.TQue: a kernel must declare at most {} queues and buffers, got "
                          "one more", MAX_QUEUES)
    st[S_NQUE] = k + 1
    q = st[S_QUEUES + QREC * k:S_QUEUES + QREC * (k + 1)]
    q[:] = 0
    q[Q_KIND] = kind
    q[Q_POS] = pos
    q[Q_DEPTH] = depth
    q[Q_ID] = k
    q[Q_LEVEL] = _POS_LEVEL[pos] if 0 <= pos < 12 else -1
    return q


@prim
def tque_new(ctx, pos, depth):
    if pos < 0 or pos >= 12 or _QUE_OK[pos] == 0:
        raise KernelError("asc.TQue: pos must be one of VECIN, VECOUT, A1, A2, B1, B2, CO1, CO2, "
                          "got pos={:pos}", pos)
    if pos == 8:
        raise KernelError("asc.TQue: pos CO2 is global memory on 910B (fixpipe writes GM "
                          "directly), got pos=CO2")
    if depth < 0 or depth > MAX_SLOTS:
        raise KernelError("asc.TQue: depth must be in [0, {}], got depth={}", MAX_SLOTS, depth)
    return _new_rec(ctx, KIND_QUE, pos, depth)


@prim
def tbuf_new(ctx, pos):
    if pos < 0 or pos >= 12 or _POS_LEVEL[pos] < 0:
        raise KernelError("asc.TBuf: pos must be a local position (VECCALC, VECIN, VECOUT, A1, "
                          "B1, ...), got pos={:pos}", pos)
    return _new_rec(ctx, KIND_BUF, pos, 0)


@prim
def _init(ctx, q, num, nbytes, api):
    st = ctx[2]
    if q[Q_INIT]:
        raise KernelError("{}: each queue/buffer must be initialised once, got a second "
                          "init_buffer for {:pos} {} #{}", api, q[Q_POS], _kind(q), q[Q_ID])
    if num < 1 or num > MAX_SLOTS:
        raise KernelError("{}: num must be in [1, {}], got num={} for {:pos} {} #{}", api,
                          MAX_SLOTS, num, q[Q_POS], _kind(q), q[Q_ID])
    if nbytes <= 0:
        raise KernelError("{}: len must be > 0 bytes, got len={} for {:pos} {} #{}", api, nbytes,
                          q[Q_POS], _kind(q), q[Q_ID])
    if st[S_NBUF] + num > 64:
        raise KernelError("{}: a kernel must use at most 64 buffers, got {} with {:pos} {} #{}",
                          api, st[S_NBUF] + num, q[Q_POS], _kind(q), q[Q_ID])
    slot = (nbytes + 31) // 32 * 32
    lv = q[Q_LEVEL]
    cap = st[S_LEVEL_BASE + 2 * lv + 1]
    used = st[S_LEVEL_USED + lv]
    if used + num * slot > cap:
        raise KernelError("{}: {:pos} {} #{} must fit in {:level}, asked {} bytes ({} x {}), got {} "
                          "bytes left of {}", api, q[Q_POS], _kind(q), q[Q_ID], lv, num * slot,
                          num, slot, cap - used, cap)
    q[Q_BASE] = st[S_LEVEL_BASE + 2 * lv] + used
    q[Q_NUM] = num
    q[Q_BYTES] = slot
    q[Q_INIT] = 1
    st[S_LEVEL_USED + lv] = used + num * slot
    st[S_NBUF] += num


@prim
def init_buffer_que(ctx, q, num, nbytes):
    if q[Q_KIND] != KIND_QUE:
        raise KernelError("TPipe.init_buffer: (que, num, len) form must be given a TQue, got "
                          "{:pos} TBuf #{} (use init_buffer(buf, len))", q[Q_POS], q[Q_ID])
    _init(ctx, q, num, nbytes, "TPipe.init_buffer")


@prim
def init_buffer_buf(ctx, b, nbytes):
    if b[Q_KIND] != KIND_BUF:
        raise KernelError("TPipe.init_buffer: (buf, len) form must be given a TBuf, got "
                          "{:pos} TQue #{} (use init_buffer(que, num, len))", b[Q_POS], b[Q_ID])
    _init(ctx, b, 1, nbytes, "TPipe.init_buffer")


@prim
def _need_init(q, api):
    if not q[Q_INIT]:
        raise KernelError("{}: the queue must be initialised with pipe.init_buffer first, got an "
                          "uninitialised {:pos} {} #{}", api, q[Q_POS], _kind(q), q[Q_ID])


@prim
def _slot_view(ctx, q, s, dtype):
    off = q[Q_BASE] + s * q[Q_BYTES]
    return ctx[0][off:off + q[Q_BYTES]].view(dtype)


@prim
def _slot_of(ctx, q, t, api):
    off = np.int64(local_offset(ctx, t))
    if off < q[Q_BASE] or off >= q[Q_BASE] + q[Q_NUM] * q[Q_BYTES] or \
            (off - q[Q_BASE]) % q[Q_BYTES] != 0:
        raise KernelError("{}: tensor must be a buffer of {:pos} {} #{}, got a foreign tensor at "
                          "local offset {}", api, q[Q_POS], _kind(q), q[Q_ID], off)
    return np.int64((off - q[Q_BASE]) // q[Q_BYTES])


@prim
def que_alloc_tensor(ctx, q, dtype):
    _need_init(q, "TQue.alloc_tensor")
    n = q[Q_NUM]
    for i in range(n):
        s = (q[Q_NEXT] + i) % n
        if not (q[Q_ALLOC] >> s) & 1:
            q[Q_ALLOC] |= 1 << s
            q[Q_NEXT] = (s + 1) % n
            return _slot_view(ctx, q, s, dtype)
    raise KernelError("TQue.alloc_tensor: a free buffer must be available, got all {} buffers of "
                      "{:pos} TQue #{} allocated (free_tensor missing?)", n, q[Q_POS], q[Q_ID])


@prim
def que_enque(ctx, q, t):
    _need_init(q, "TQue.enque")
    s = _slot_of(ctx, q, t, "TQue.enque")
    if not (q[Q_ALLOC] >> s) & 1:
        raise KernelError("TQue.enque: tensor must be allocated with alloc_tensor, got a freed "
                          "buffer of {:pos} TQue #{}", q[Q_POS], q[Q_ID])
    limit = max(q[Q_DEPTH], 1)
    if q[Q_FIFO_N] >= limit:
        raise KernelError("TQue.enque: enqueued tensors must not exceed depth={}, got {} in "
                          "{:pos} TQue #{} (deque missing?)", q[Q_DEPTH], q[Q_FIFO_N] + 1,
                          q[Q_POS], q[Q_ID])
    q[Q_FIFO + (q[Q_FIFO_HEAD] + q[Q_FIFO_N]) % MAX_SLOTS] = s
    q[Q_FIFO_N] += 1


@prim
def que_deque(ctx, q, dtype):
    _need_init(q, "TQue.deque")
    if q[Q_FIFO_N] == 0:
        raise KernelError("TQue.deque: the queue must hold an enqueued tensor, got an empty "
                          "{:pos} TQue #{} (enque missing?)", q[Q_POS], q[Q_ID])
    s = q[Q_FIFO + q[Q_FIFO_HEAD]]
    q[Q_FIFO_HEAD] = (q[Q_FIFO_HEAD] + 1) % MAX_SLOTS
    q[Q_FIFO_N] -= 1
    if ctx[2][S_FLAGS] & FLAG_DEFER:
        lo = q[Q_BASE] + s * q[Q_BYTES]
        flush_pending(ctx, lo, lo + q[Q_BYTES])
    return _slot_view(ctx, q, s, dtype)


@prim
def que_free_tensor(ctx, q, t):
    _need_init(q, "TQue.free_tensor")
    s = _slot_of(ctx, q, t, "TQue.free_tensor")
    if not (q[Q_ALLOC] >> s) & 1:
        raise KernelError("TQue.free_tensor: tensor must be allocated, got a buffer of {:pos} TQue "
                          "#{} freed twice", q[Q_POS], q[Q_ID])
    for i in range(q[Q_FIFO_N]):
        if q[Q_FIFO + (q[Q_FIFO_HEAD] + i) % MAX_SLOTS] == s:
            raise KernelError("TQue.free_tensor: tensor must be dequeued before it is freed, got "
                              "a tensor still enqueued in {:pos} TQue #{}", q[Q_POS], q[Q_ID])
    q[Q_ALLOC] &= ~(1 << s)


@prim
def que_vacant(ctx, q):
    return q[Q_FIFO_N] < max(q[Q_DEPTH], 1)


@prim
def que_has_tensor(ctx, q):
    return q[Q_FIFO_N] > 0


@prim
def que_tensor_count(ctx, q):
    return q[Q_FIFO_N]


@prim
def que_has_idle_buffer(ctx, q):
    for s in range(q[Q_NUM]):
        if not (q[Q_ALLOC] >> s) & 1:
            return True
    return False


@prim
def tbuf_get(ctx, b, dtype, n):
    _need_init(b, "TBuf.get")
    v = _slot_view(ctx, b, 0, dtype)
    if n < 0:
        return v
    if n > v.size:
        raise KernelError("TBuf.get: len must be <= the buffer's {} elements, got len={}", v.size,
                          n)
    return v[:n]


@prim
def tbuf_get_with_offset(ctx, b, size, offset, dtype):
    _need_init(b, "TBuf.get_with_offset")
    if offset % 32 != 0:
        raise KernelError("TBuf.get_with_offset: buf_offset must be a multiple of 32 bytes, got "
                          "buf_offset={}", offset)
    v = _slot_view(ctx, b, 0, np.uint8)
    isz = v[:0].view(dtype).itemsize
    if offset + size * isz > v.size:
        raise KernelError("TBuf.get_with_offset: offset + size must fit the buffer's {} bytes, "
                          "got {}", v.size, offset + size * isz)
    return v[offset:offset + size * isz].view(dtype)


@prim
def kernel_end(ctx):
    """Tensors still held when a block ends break the queue discipline."""
    st = ctx[2]
    for k in range(st[S_NQUE]):
        q = st[S_QUEUES + QREC * k:S_QUEUES + QREC * (k + 1)]
        if q[Q_KIND] != KIND_QUE:
            continue
        held = 0
        for s in range(q[Q_NUM]):
            held += (q[Q_ALLOC] >> s) & 1
        if held or q[Q_FIFO_N]:
            raise KernelError("kernel end: every tensor must be freed with free_tensor, got {} "
                              "tensor(s) still held by {:pos} TQue #{}", held, q[Q_POS], q[Q_ID])
