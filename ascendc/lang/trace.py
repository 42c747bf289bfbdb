"""The NPU view's instruction trace: what each block issues, written by the primitives.

While a launch runs with tracing on (`FLAG_TRACE` in the core's options; the launcher sets it
under `rt.profile(npu=True)` or `asc.npu_trace`), every primitive that the NPU would issue as an
instruction appends one row to the core's trace buffer `ctx[TRACE]` (an int64 array of `NCOL`
columns). The primitives run in both modes, so compiled and interpreted kernels record the same
rows; with tracing off the cost is one branch per primitive call.

A row holds numbers only: the block, the op (an index into `OPS`, the surface API names), a kind
(`K_*`: an op, a flag, a barrier, a queue step), the memory path of a copy (source and destination
levels, -1 = GM), bytes, elements, repeats, an mmad's m/n/k, the element size, flag operands, the
kernel source line id (`st.src_line`) and the GM byte range a copy touches. `ascendc/lang/record.py`
turns rows into `rt.npu.Instr`s (which pipe runs them, which flags they set and wait for).
"""
from __future__ import annotations

import zlib

import numpy as np
from .numba_link import cached_njit

from . import surface as S
from .state import FLAG_SANITIZE, FLAG_TRACE, MEM, STATE, TRACE

# columns of a trace row
(C_BLOCK, C_OP, C_KIND, C_SRC_LV, C_DST_LV, C_BYTES, C_ELEMS, C_REPEATS, C_M, C_N, C_K, C_DSZ,
 C_A, C_B, C_ID, C_LINE, C_GM0, C_GM1) = range(18)
NCOL = 18

# row kinds
(K_OP,          # an instruction of the op's pipe (vector, copy, mmad, fixpipe) or a scalar op
 K_SET,         # set_flag(event, id): A = HardEvent, ID = event id
 K_WAIT,        # wait_flag(event, id)
 K_BARRIER,     # pipe_barrier(pipe): A = PipeID
 K_SYNC_ALL,    # sync_all across the launch's blocks
 K_Q_ALLOC,     # TQue.alloc_tensor: A = TPosition, B = queue id, ID = buffer (slot) number
 K_Q_ENQUE, K_Q_DEQUE, K_Q_FREE,
 # with FLAG_SANITIZE only (ascendc/sanitize reads them; the NPU view skips them):
 K_ACCESS,      # a memory access of the op row before it: DST_LV 0 = local (A = byte offset
                # in the core's memory) or -1 = GM (A = address); BYTES; ID 1 = write, 0 = read;
                # M (local reads) = offset from A of the first 32-byte chunk still all 0xFF
                # (as fresh memory is filled), -1: none; N = 1: a write's reach, not its bytes;
                # GM: ELEMS / REPEATS = blocks of ELEMS bytes every REPEATS bytes (0: contiguous)
 K_REGION,      # a local buffer handed out or taken back: A = byte offset, BYTES, ID = REGION_*
 ) = range(11)
REGION_FREE, REGION_ALLOC, REGION_VIEW = 0, 1, 2    # free_tensor, alloc_tensor, TBuf.get

# op names: the surface's function names, and its methods as "Class.method"
OPS = tuple(sorted(S.FUNCTIONS)) + tuple(sorted(f"{m.cls}.{m.name}" for m in S.METHODS.values()))

DEFAULT_ROWS = 1 << 18      # rows per core buffer (env ASCEND_EMU_NPU_TRACE_ROWS overrides)


def op(name: str) -> int:
    """The op id of surface API `name` ("add", "TQue.enque"), a compile-time constant of the
    primitive that records it: a hash of the name, so that adding rows to the surface never
    changes the id a disk-cached primitive recorded (Numba does not re-check globals)."""
    if name not in _NAMES_SET:
        raise KeyError(f"trace.op: name must be a surface API, got name={name!r}")
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


_NAMES_SET = frozenset(OPS)
NAMES = {op(name): name for name in OPS}     # op id -> name (decoding)
assert len(NAMES) == len(OPS), "trace: two surface names hash to one op id"


def op_name(op_id: int) -> str:
    return NAMES.get(int(op_id), f"op#{int(op_id)}")


def new_buffer(rows: int) -> np.ndarray:
    return np.zeros((max(int(rows), 1), NCOL), np.int64)


@cached_njit(nogil=True)
def _append(ctx, op_id, kind, slv, dlv, nbytes, elems, reps, m, n, k, dsz, a, b, ident,
            gm0, gm1):
    st = ctx[STATE][0]
    buf = ctx[TRACE]
    i = st.trace_n
    if i >= buf.shape[0]:
        st.trace_lost += 1
        return
    st.trace_n = i + 1
    r = buf[i]
    r[C_BLOCK] = st.block_idx
    r[C_OP] = op_id
    r[C_KIND] = kind
    r[C_SRC_LV] = slv
    r[C_DST_LV] = dlv
    r[C_BYTES] = nbytes
    r[C_ELEMS] = elems
    r[C_REPEATS] = reps
    r[C_M] = m
    r[C_N] = n
    r[C_K] = k
    r[C_DSZ] = dsz
    r[C_A] = a
    r[C_B] = b
    r[C_ID] = ident
    r[C_LINE] = st.src_line
    r[C_GM0] = gm0
    r[C_GM1] = gm1


@cached_njit(nogil=True, inline="always")
def on(ctx):
    return ctx[STATE][0].options & FLAG_TRACE


@cached_njit(nogil=True, inline="always")
def vec(ctx, op_id, dsz, n, is_rep):
    """A vector instruction: `n` elements (count form) or `n` repeats of 256 B (repeat form) of
    `dsz`-byte elements."""
    if ctx[STATE][0].options & FLAG_TRACE:
        n = np.int64(n)
        dsz = np.int64(dsz)
        if is_rep:
            _append(ctx, op_id, K_OP, 0, 0, n * 256, n * 256 // dsz, n, 0, 0, 0, dsz, 0, 0, 0,
                    0, 0)
        else:
            _append(ctx, op_id, K_OP, 0, 0, n * dsz, n, (n * dsz + 255) // 256, 0, 0, 0, dsz,
                    0, 0, 0, 0, 0)


@cached_njit(nogil=True, inline="always")
def copy(ctx, op_id, slv, dlv, nbytes, dsz, gm_addr, gm_span):
    """A data move of `nbytes` from level `slv` to `dlv` (-1 = GM); the GM side covers
    [gm_addr, gm_addr + gm_span)."""
    if ctx[STATE][0].options & FLAG_TRACE:
        _append(ctx, op_id, K_OP, slv, dlv, np.int64(nbytes), np.int64(nbytes) // max(dsz, 1),
                0, 0, 0, 0, np.int64(dsz), 0, 0, 0, np.int64(gm_addr),
                np.int64(gm_addr) + np.int64(gm_span))


@cached_njit(nogil=True, inline="always")
def mmad(ctx, op_id, m, n, k, asz):
    if ctx[STATE][0].options & FLAG_TRACE:
        _append(ctx, op_id, K_OP, 4, 4, 0, np.int64(m) * np.int64(n), 0, np.int64(m),
                np.int64(n), np.int64(k), np.int64(asz), 0, 0, 0, 0, 0)


@cached_njit(nogil=True, inline="always")
def event(ctx, op_id, kind, a, b, ident):
    """A flag, barrier or queue step (kind K_SET ... K_Q_FREE) with its operands."""
    if ctx[STATE][0].options & FLAG_TRACE:
        _append(ctx, op_id, kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, np.int64(a), np.int64(b),
                np.int64(ident), 0, 0)


@cached_njit(nogil=True, inline="always")
def event_gm(ctx, op_id, kind, a, b, gm0, gm1):
    """An event on the GM bytes [gm0, gm1) (an ib_set / ib_wait: its workspace word)."""
    if ctx[STATE][0].options & FLAG_TRACE:
        _append(ctx, op_id, kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, np.int64(a), np.int64(b), 0,
                np.int64(gm0), np.int64(gm1))


@cached_njit(nogil=True, inline="always")
def scalar(ctx, op_id):
    """A scalar-unit instruction (an element read or write, a system value)."""
    if ctx[STATE][0].options & FLAG_TRACE:
        _append(ctx, op_id, K_OP, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


# ---- sanitizer rows (FLAG_SANITIZE): what an op reads and writes ------------------------------

@cached_njit(nogil=True)
def _first_fresh(mem, off, nbytes):
    """Offset (from off) of the first 32-byte-aligned chunk inside [off, off + nbytes) whose
    bytes are all 0xFF, or -1."""
    c = (off + 31) // 32 * 32
    while c + 32 <= off + nbytes:
        fresh = True
        for i in range(c, c + 32):
            if mem[i] != 0xFF:
                fresh = False
                break
        if fresh:
            return c - off
        c += 32
    return -1


@cached_njit(nogil=True)
def _access(ctx, op_id, addr, nbytes, write, reach):
    mem = ctx[MEM]
    off = addr - np.int64(mem.ctypes.data)
    if 0 <= off < mem.size:
        fresh = np.int64(-1) if write else _first_fresh(mem, off, min(nbytes, mem.size - off))
        _append(ctx, op_id, K_ACCESS, 0, 0, nbytes, 0, 0, fresh, np.int64(reach), 0, 0, off, 0,
                np.int64(write), 0, 0)
    else:
        _append(ctx, op_id, K_ACCESS, 0, -1, nbytes, 0, 0, -1, 0, 0, 0, addr, 0,
                np.int64(write), 0, 0)


@cached_njit(nogil=True)
def _access_unchecked(ctx, op_id, addr, nbytes):
    mem = ctx[MEM]
    off = addr - np.int64(mem.ctypes.data)
    lv = 0 if 0 <= off < mem.size else -1
    _append(ctx, op_id, K_ACCESS, 0, lv, nbytes, 0, 0, -1, 0, 0, 0, off if lv == 0 else addr,
            0, 0, 0, 0)


@cached_njit(nogil=True, inline="always")
def read_unchecked(ctx, op_id, addr, nbytes):
    """A read that initcheck does not judge (racecheck and memcheck do): an op whose reach
    covers padding the hardware reads and discards (mmad's rows past m, columns past k)."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        if nbytes > 0:
            _access_unchecked(ctx, op_id, np.int64(addr), np.int64(nbytes))


@cached_njit(nogil=True, inline="always")
def access(ctx, op_id, addr, nbytes, write):
    """The op reads (write=0) or writes (1) `nbytes` bytes at address `addr` (local or GM)."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        if nbytes > 0:
            _access(ctx, op_id, np.int64(addr), np.int64(nbytes), write, 0)


@cached_njit(nogil=True)
def _gm_blocks(ctx, op_id, addr, span, blk, step, write):
    _append(ctx, op_id, K_ACCESS, 0, -1, span, blk, step, -1, 0, 0, 0, addr, 0, write, 0, 0)


@cached_njit(nogil=True, inline="always")
def gm_blocks(ctx, op_id, addr, span, blk, step, write):
    """A GM access over `span` bytes from `addr` made of blocks of `blk` bytes every `step`
    bytes (a strided copy's GM side: ELEMS = blk, REPEATS = step; blk == step: contiguous)."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        if span > 0:
            _gm_blocks(ctx, op_id, np.int64(addr), np.int64(span), np.int64(blk),
                       np.int64(step), np.int64(write))


@cached_njit(nogil=True, inline="always")
def write_reach(ctx, op_id, addr, nbytes):
    """A write whose bytes are not known exactly: `nbytes` from `addr` is what it may reach
    (a strided local destination recorded to its tensor's end); N = 1 marks it."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        if nbytes > 0:
            _access(ctx, op_id, np.int64(addr), np.int64(nbytes), 1, 1)


@cached_njit(nogil=True, inline="always")
def tensor_access(ctx, op_id, t, nbytes, write):
    """access() of the first `nbytes` bytes of tensor `t`."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        if nbytes > 0:
            _access(ctx, op_id, np.int64(t.ctypes.data), np.int64(nbytes), write, 0)


@cached_njit(nogil=True, inline="always")
def region(ctx, op_id, off, nbytes, what):
    """Local bytes [off, off + nbytes) of the core's memory are handed out or taken back."""
    if ctx[STATE][0].options & FLAG_SANITIZE:
        _append(ctx, op_id, K_REGION, 0, 0, np.int64(nbytes), 0, 0, 0, 0, 0, 0, np.int64(off),
                0, np.int64(what), 0, 0)
