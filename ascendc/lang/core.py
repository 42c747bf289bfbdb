"""The per-core context every primitive receives, and small shared helpers.

A core's context is the tuple ``ctx = (mem, stage, st, trace)``, indexed by the slot names of
state.py (``ctx[MEM]``, ``ctx[STAGE]``, ``ctx[STATE]``, ``ctx[TRACE]``):
- ``mem``: one uint8 array holding the core's local memories back to back (the levels of
  positions.LEVELS: UB, L1, L0A, L0B, L0C, BT); a LocalTensor is a typed view into it, and its
  level is found from its address.
- ``stage``: same size; in checked mode GM->local copies land here and become visible in ``mem``
  only when their tensor is dequeued, a pipe_barrier on MTE2 or ALL is reached, or a wait_flag
  on an MTE2_* event lands them for its pipe only (visibility.py).
- ``st``: a one-element array of state.CORE_STATE; its record ``ctx[STATE][0]`` holds the block
  index, options, pipe usage, queue records, counters, GM argument ranges (fields named in
  state.py).
  Python code reads it as ``state(ctx)``.
- ``trace``: the NPU view's instruction trace (int64 rows, lang/trace.py); one row when tracing
  is off. (A one-element array, not the record itself: Numba
  unboxes a record passed from Python through a PEP 3118 buffer of its whole dtype, ~3 us per
  call, an array in ~0.3 us; the interpreter calls primitives from Python.)
The same primitives run in both modes: compiled kernels call them from njit code, the interpreter
from Python. How they compile and link (`prim`, a PrimDispatcher) is numba_link.py.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core import config
from numba.extending import overload

from .errors import FAULT, fault, GMReadError, GMWriteError, KernelError
from .numba_link import cached_njit, prim
from .positions import BT, L0A, L0B, L0C, L1, LEVEL_NAMES, NLEVELS, UB, level_bytes  # noqa: F401
from .state import (CORE_STATE, FLAG_DEFER, FLAG_NAN_FILL, FLAG_REPORT_ROUNDING,  # noqa: F401
                    MAX_GM, MAX_PENDING, N_EVENT_IDS)
from .state import MEM, STAGE, STATE, TRACE  # noqa: F401 (generated kernels read _C.STATE ...)

# profiler counters: bytes per pipe, cube MACs, vector element-ops
C_MTE2, C_MTE1, C_MTE3, C_FIX, C_CUBE_MACS, C_VEC_OPS, C_MTE_UB2UB, C_CUBE_MACS_FP32 = range(8)
COUNTER_NAMES = ("mte2_bytes", "mte1_bytes", "mte3_bytes", "fix_bytes", "cube_macs",
                 "vector_elem_ops", "ub_to_ub_bytes", "cube_macs_fp32")


def layout(soc):
    """(offsets, sizes, total) of the local memories of one core of `soc` (positions.LEVELS)."""
    sizes = level_bytes(soc)
    offs, off = [], 0
    for s in sizes:
        offs.append(off)
        off += s
    return offs, sizes, off

# lock words of the atomic adds into GM (prims/atomic.py), one per 256-byte granule modulo the
# table, shared by every core context of the process (so by every launch and stream)
ATOMIC_LOCKS = np.zeros(4096, np.int32)


def new_ctx(soc, flags=0, trace_rows=1):
    """A fresh context for one core (reused across the blocks a worker runs); with FLAG_TRACE
    in `flags`, a trace buffer of `trace_rows` rows."""
    offs, sizes, total = layout(soc)
    mem = np.zeros(total, np.uint8)
    stage = np.zeros(total, np.uint8) if flags & FLAG_DEFER else np.zeros(64, np.uint8)
    st = np.zeros(1, CORE_STATE)
    if config.DISABLE_JIT:           # primitives run as Python: records need attribute access
        st = st.view(np.recarray)
    rec = st[0]
    rec["level_base"][:] = offs
    rec["level_size"][:] = sizes
    rec["options"] = flags
    rec["atomic_locks"] = ATOMIC_LOCKS.ctypes.data
    trace = np.zeros((max(int(trace_rows), 1), 18), np.int64)   # trace.NCOL columns
    return (mem, stage, st, trace)


class StateView:
    """The core's CORE_STATE record, fields by attribute (`state(ctx).block_idx`, also
    `state(ctx)["block_idx"]`) as numpy's record view gives them: a scalar field reads as a numpy
    scalar, an array field as a view into the state; writes go to the state. Without the record
    view's Python-level field lookup (several us per access; a MIX launch's instance run makes
    some 40 in its set-up, rt -> binaries.run_blocks), one field view of the array each."""
    __slots__ = ("_a",)

    def __init__(self, a):
        object.__setattr__(self, "_a", a)

    def __getattr__(self, name):
        try:
            v = self._a[name][0]
        except (ValueError, KeyError):
            raise AttributeError(f"CORE_STATE has no field {name!r}") from None
        if v.dtype.names is not None:       # nested records (queues, ...): by attribute too
            return getattr(self._a.view(np.recarray)[0], name)
        return v

    def __setattr__(self, name, value):
        try:
            self._a[name][0] = value
        except (ValueError, KeyError):
            raise AttributeError(f"CORE_STATE has no field {name!r}") from None

    __getitem__ = __getattr__
    __setitem__ = __setattr__


def state(ctx):
    """The core's CORE_STATE record (a StateView; fields by attribute: `state(ctx).block_idx`)."""
    return StateView(ctx[STATE].view(np.ndarray))


@overload(state)
def _state(ctx):
    return lambda ctx: ctx[STATE][0]


@cached_njit(nogil=True)
def begin_block(ctx, block_idx, block_num):
    """Reset per-block state: pipe, queues, buffers, pending and partly visible copies; NaN-fill
    if asked."""
    mem, stage, st = ctx[MEM], ctx[STAGE], ctx[STATE][0]
    st.block_idx = block_idx
    st.block_num = block_num
    st.src_line = 0
    st.pipes = 0
    st.nbuf = 0
    st.nque = 0
    st.ngm = 0
    st.npending = 0
    st.copy_seq = 0
    st.nvis = 0
    st.nshape = 0
    st.level_used[:] = 0
    st.events[:, :] = 0
    if st.options & FLAG_NAN_FILL:
        mem[:] = 0xFF  # all-ones bytes are NaN for every float type (and -1 for ints)
        if st.options & FLAG_DEFER:
            stage[:] = 0xFF


def reset_counters(ctx):
    ctx[STATE][0]["counters"][:] = 0


def read_counters(ctx) -> dict:
    # one tolist() (Python ints) rather than a numpy scalar per counter: read after every
    # range a core runs, 72 times per MIX FlashAttention forward
    return dict(zip(COUNTER_NAMES, ctx[STATE][0]["counters"].tolist()))


@prim
def count(ctx, which, n):
    ctx[STATE][0].counters[which] += n


# ---- addresses ---------------------------------------------------------------------------------

@prim
def local_offset(ctx, a):
    """Byte offset of tensor `a` inside the core's local memory, or -1 if `a` is not local."""
    mem = ctx[MEM]
    d = np.int64(a.ctypes.data) - np.int64(mem.ctypes.data)
    if d < 0 or d >= mem.size:
        return -1
    return d


@prim
def level_of(ctx, a):
    """Level (UB, L1, ...) of a local tensor, or -1 for global memory."""
    off = local_offset(ctx, a)
    if off < 0:
        return -1
    st = ctx[STATE][0]
    for lv in range(NLEVELS):
        b = st.level_base[lv]
        if b <= off < b + st.level_size[lv]:
            return lv
    return -1


@prim
def level_name(lv):
    """Name of level `lv` (positions.LEVEL_NAMES), "GM" for -1."""
    if 0 <= lv < NLEVELS:
        return LEVEL_NAMES[lv]
    return "GM"


@prim
def register_gm(ctx, a):
    """Record GM argument `a` (the kernel's view: to its allocation's end) so out-of-range
    accesses can be named; its own size is the launcher's (gmreach.py), else the view's."""
    st = ctx[STATE][0]
    k = st.ngm
    if k < MAX_GM:
        st.gm_addr[k] = np.int64(a.ctypes.data)
        st.gm_bytes[k] = a.size * a.itemsize
        if k >= st.gm_preset:
            st.gm_size[k] = st.gm_bytes[k]
        st.ngm = k + 1


@prim
def gm_where(st, addr):
    """(index, byte offset in it, its own bytes) of the GM argument holding `addr` (its view's
    end included), or (-1, 0, 0): what the GM bounds errors name."""
    for k in range(st.ngm):
        b = st.gm_addr[k]
        if b <= addr <= b + st.gm_bytes[k]:
            return k, addr - b, st.gm_size[k]
    return -1, 0, 0


@prim
def check_gm(ctx, api, a, first, n, write):
    """Raise unless elements [first, first+n) of GM view `a` lie inside its allocation."""
    if first >= 0 and first + n <= a.size:
        return
    k, boff, nbytes = gm_where(ctx[STATE][0], np.int64(a.ctypes.data))
    isz = a.itemsize
    if write:
        fault("{}: GM write must stay inside argument #{} ({} elements), got "
              "elements [{}, {})", api, k, nbytes // isz, boff // isz + first,
              boff // isz + first + n)
        raise GMWriteError(FAULT)
    fault("{}: GM read must stay inside argument #{} ({} elements), got elements "
          "[{}, {})", api, k, nbytes // isz, boff // isz + first,
          boff // isz + first + n)
    raise GMReadError(FAULT)


@prim
def check_local(ctx, api, what, a, n):
    """Raise unless local tensor `a` holds at least n elements."""
    if n > a.size or n < 0:
        fault("{}: {} must hold count elements, got count={} for a tensor of {} "
              "elements in {:level}", api, what, n, a.size, level_of(ctx, a))
        raise KernelError(FAULT)


# ---- deferred visibility of GM->local copies (checked mode) ------------------------------------

@prim
def defer_enabled(ctx):
    return (ctx[STATE][0].options & FLAG_DEFER) != 0


@prim
def add_pending(ctx, off, nbytes):
    st = ctx[STATE][0]
    k = st.npending
    if k >= MAX_PENDING:
        flush_pending(ctx, 0, ctx[MEM].size)
        k = st.npending
    st.pending_off[k] = off
    st.pending_bytes[k] = nbytes
    st.pending_seq[k] = st.copy_seq
    st.copy_seq += 1
    st.npending = k + 1


@prim
def flush_pending(ctx, lo, hi):
    """Make deferred copies that overlap mem[lo:hi] visible (to every pipe)."""
    mem, stage, st = ctx[MEM], ctx[STAGE], ctx[STATE][0]
    k = 0
    n = st.nvis
    while k < n:        # copies that had landed for some pipes only (visibility.py)
        if st.vis_off[k] < hi and st.vis_off[k] + st.vis_bytes[k] > lo:
            n -= 1
            st.vis_off[k] = st.vis_off[n]
            st.vis_bytes[k] = st.vis_bytes[n]
            st.vis_mask[k] = st.vis_mask[n]
        else:
            k += 1
    st.nvis = n
    k = 0
    n = st.npending
    while k < n:
        off = st.pending_off[k]
        nb = st.pending_bytes[k]
        if off < hi and off + nb > lo:
            mem[off:off + nb] = stage[off:off + nb]
            n -= 1
            st.pending_off[k] = st.pending_off[n]
            st.pending_bytes[k] = st.pending_bytes[n]
            st.pending_seq[k] = st.pending_seq[n]
        else:
            k += 1
    st.npending = n


@prim
def gm_to_local_target(ctx, dst):
    """The array a GM->local copy should write: `dst` itself, or its twin in the stage buffer."""
    if not defer_enabled(ctx):
        return dst
    off = local_offset(ctx, dst)
    nb = dst.size * dst.itemsize
    add_pending(ctx, off, nb)
    return ctx[STAGE][off:off + nb].view(dst.dtype)


# ---- masks for the repeat forms ----------------------------------------------------------------

def mask_words(mask, elem_bytes):
    """(m0, m1) bit masks for a vector repeat: int = continuous first-n, or [w0, w1] words."""
    if isinstance(mask, (list, tuple)):
        w = list(mask) + [0, 0]
        return np.uint64(w[0]), np.uint64(w[1])
    return _continuous(int(mask), elem_bytes)


@prim
def _continuous(m, elem_bytes):
    lanes = 256 // elem_bytes
    if m < 1 or m > lanes:
        fault("vector op: mask must be in [1, {}] for {}-bit elements, got mask={}",
              lanes, elem_bytes * 8, m)
        raise KernelError(FAULT)
    if m >= 128:
        return np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0xFFFFFFFFFFFFFFFF)
    if m >= 64:
        hi = np.uint64(0) if m == 64 else (np.uint64(1) << np.uint64(m - 64)) - np.uint64(1)
        return np.uint64(0xFFFFFFFFFFFFFFFF), hi
    return (np.uint64(1) << np.uint64(m)) - np.uint64(1), np.uint64(0)


@overload(mask_words)
def _mask_words(mask, elem_bytes):
    if isinstance(mask, types.Integer):
        return lambda mask, elem_bytes: _continuous(mask, elem_bytes)
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) == 2:
        return lambda mask, elem_bytes: (np.uint64(mask[0]), np.uint64(mask[1]))
    if isinstance(mask, (types.UniTuple, types.Tuple)) and len(mask) == 1:
        return lambda mask, elem_bytes: (np.uint64(mask[0]), np.uint64(0))
    return None


@prim
def lane_on(m0, m1, j):
    """Is lane j of a repeat selected by the mask words?"""
    if j < 64:
        return (m0 >> np.uint64(j)) & np.uint64(1) != 0
    return (m1 >> np.uint64(j - 64)) & np.uint64(1) != 0
