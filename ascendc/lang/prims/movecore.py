"""Shared machinery of the data-movement and cube primitives: dtype facts, locating tensors in
the core's memory, range / alignment / bounds checks that name what was wrong, and the copy paths
between levels (see datacopy.py for the rules they implement)."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from ..core import (BT, C_MTE1, C_MTE2, C_MTE3, C_MTE_UB2UB, FLAG_DEFER, L0A, L0B, L0C, L1,
                    NLEVELS, UB, flush_pending, gm_to_local_target, gm_where, prim)
from ..errors import FAULT, fault, GMReadError, GMWriteError, KernelError
from ..gmreach import note as gm_note
from ..state import FLAG_GM_ORDER, FLAG_REPORT_OVERREACH, FLAG_TRACE, MEM, STATE
from .crosscore import gm_order, gm_order_rows
from .. import trace
from ..visibility import in_flight, PIPE_FIX, PIPE_MTE1, PIPE_MTE3, PIPE_V, vis_check


# ---- dtype facts as compile-time constants -----------------------------------------------------

def dtype_name_of(dt):
    """Kernel dtype name of a numpy or Numba dtype ("float16" for the F16 storage record)."""
    names = (list(dt.fields) if isinstance(dt, types.Record)
             else list(dt.names or ()) if isinstance(dt, np.dtype) else [])
    if names:
        return {"f16": "float16", "bf16": "bfloat16"}.get(names[0], str(dt))
    return str(dt)


def pair_info(dst, src):
    """(same dtype?, dst dtype name, src dtype name); compile-time constants in njit code."""
    return dst.dtype == src.dtype, dtype_name_of(dst.dtype), dtype_name_of(src.dtype)


@overload(pair_info)
def _pair_info(dst, src):
    same, dn, sn = dst.dtype == src.dtype, dtype_name_of(dst.dtype), dtype_name_of(src.dtype)
    return lambda dst, src: (same, dn, sn)


# ---- locating tensors and checking them -------------------------------------------------------
# Primitives run per tile, so their fixed cost matters. Handing `ctx` or an array to a function
# costs 5-20 ns of NRT reference counting (and struct copies), so each implementation locates its
# tensors once (`locate`: level, offset in level, address, bytes; scalars only), the tests below
# work on those scalars and are inlined, and only the failure paths call out.

inline = register_jitable(inline="always")


# Names in messages travel as small ints (string arguments cost a few ns per call in hot code)
# (5, 6: GlobalTensor get / set_value in crosscore.GM_APIS; 7: a fixpipe under set_atomic_add,
# which rt.gmorder lets overlap another core's atomic adds)
APIS = ("data_copy", "data_copy_pad", "load_data", "mmad", "fixpipe", "GlobalTensor.get_value",
        "GlobalTensor.set_value", "fixpipe")
A_DATA_COPY, A_DATA_COPY_PAD, A_LOAD_DATA, A_MMAD, A_FIXPIPE = range(5)
A_FIXPIPE_ATOMIC = 7
NAMES = ("bias", "block_count", "block_len", "config", "d_value", "dst", "dst_gap",
         "dst_nz_c0_stride", "dst_nz_matrix_stride", "dst_nz_n_stride", "dst_stride", "filter",
         "fm", "k", "m", "m_size", "n", "n_size", "n_value", "nd_num", "repeat_times", "src",
         "src_d_value", "src_nd_matrix_stride", "src_stride", "start_index")
(W_BIAS, W_BLOCK_COUNT, W_BLOCK_LEN, W_CONFIG, W_D_VALUE, W_DST, W_DST_GAP, W_DST_NZ_C0_STRIDE,
 W_DST_NZ_MATRIX_STRIDE, W_DST_NZ_N_STRIDE, W_DST_STRIDE, W_FILTER, W_FM, W_K, W_M, W_M_SIZE,
 W_N, W_N_SIZE, W_N_VALUE, W_ND_NUM, W_REPEAT_TIMES, W_SRC, W_SRC_D_VALUE,
 W_SRC_ND_MATRIX_STRIDE, W_SRC_STRIDE, W_START_INDEX) = range(len(NAMES))


@prim
def locate(st, mem_addr, mem_size, addr, nbytes):
    """(level, byte offset inside the level, address, bytes) of a tensor; level -1 for GM (as
    core.level_of)."""
    off = addr - mem_addr
    if 0 <= off < mem_size:
        for lv in range(NLEVELS):
            b = st.level_base[lv]
            if b <= off < b + st.level_size[lv]:
                return lv, off - b, addr, nbytes
    return -1, 0, addr, nbytes


@inline
def locate2(ctx, d, s):
    """locate() of dst and src."""
    mem, st = ctx[MEM], ctx[STATE][0]
    ma, ms = np.int64(mem.ctypes.data), mem.size
    return (locate(st, ma, ms, np.int64(d.ctypes.data), d.size),
            locate(st, ma, ms, np.int64(s.ctypes.data), s.size))


@prim
def _range_fail(api, name, v, lo, hi):
    fault("{}: {} must be in [{}, {}], got {}={}", APIS[api], NAMES[name], lo, hi,
          NAMES[name], v)
    raise KernelError(FAULT)


@inline
def in_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        _range_fail(api, name, v, lo, hi)


@prim
def _dtype_fail(api, dname, sname):
    fault("{}: dst and src must have the same dtype, got dst={} src={}", APIS[api],
          dname, sname)
    raise KernelError(FAULT)


@inline
def check_dtypes(api, info):
    """Raise unless dst and src have the same dtype; info = pair_info(dst, src)."""
    if not info[0]:
        _dtype_fail(api, info[1], info[2])


@inline
def bump(st, which, n):
    """core.count on st: add n to profiler counter `which`."""
    st.counters[which] += n


_OP_COPY, _OP_COPY_PAD = trace.op("data_copy"), trace.op("data_copy_pad")


@prim
def _visible(ctx, op_id, slv, dlv, addr, nbytes):
    """Checked mode: the copy's pipe must see the local source (visibility.py)."""
    if slv == UB and dlv < 0:
        pipe = PIPE_MTE3
    elif slv == UB and dlv == UB:
        pipe = PIPE_V
    elif slv == L1:
        pipe = PIPE_MTE1
    elif slv == L0C:
        pipe = PIPE_FIX
    else:
        return
    api = ("data_copy" if op_id == _OP_COPY else "data_copy_pad" if op_id == _OP_COPY_PAD
           else "fixpipe" if slv == L0C else "load_data")
    vis_check(ctx, api, "src", pipe, addr - np.int64(ctx[MEM].ctypes.data), nbytes)


# the options under which traced / traced_blocks do anything (checked mode's visibility check,
# trace rows): callers test `st.options & HOOKS` first and skip the call otherwise
HOOKS = FLAG_DEFER | FLAG_TRACE


@inline
def traced(ctx, op_id, D, S, nbytes, isz, gm_span):
    """The NPU-view trace row of a move of `nbytes` between located tensors D <- S; the GM side
    (if any) covers `gm_span` bytes from its address."""
    traced_blocks(ctx, op_id, D, S, nbytes, isz, gm_span, gm_span, gm_span, 0)


@inline
def traced_blocks(ctx, op_id, D, S, nbytes, isz, gm_span, blk, step, local_step):
    """traced() of a copy whose GM side is blocks of `blk` bytes every `step` bytes (the
    sanitizer records those, not the span: blocks may interleave with another core's); with
    `local_step` > 0 its local side is blocks of `blk` bytes that far apart (recorded block by
    block when they are not contiguous)."""
    if in_flight(ctx) and S[0] >= 0:
        _visible(ctx, op_id, S[0], D[0], S[2], nbytes)
    if trace.on(ctx):
        gm = S[2] if S[0] < 0 else D[2] if D[0] < 0 else 0
        trace.copy(ctx, op_id, S[0], D[0], nbytes, isz, gm, gm_span)
        # the sanitizer's rows: the GM side over its span; a local source over the bytes moved
        # when it goes to GM contiguously (else its layout is not known here: not recorded); a
        # local destination over them when contiguous, else to the tensor's end
        strided = local_step > blk
        if strided:                 # a strided local side: its blocks
            for i in range(nbytes // blk):
                trace.access(ctx, op_id, (S[2] if D[0] < 0 else D[2]) + i * local_step, blk,
                             0 if D[0] < 0 else 1)
        if S[0] < 0:
            trace.gm_blocks(ctx, op_id, S[2], gm_span, blk, step, 0)
        elif not strided and D[0] < 0 and gm_span == nbytes:
            trace.access(ctx, op_id, S[2], nbytes, 0)
        if D[0] < 0:
            trace.gm_blocks(ctx, op_id, D[2], gm_span, blk, step, 1)
        elif strided:
            pass                    # (recorded above)
        elif gm_span == nbytes:
            trace.access(ctx, op_id, D[2], nbytes, 1)
        else:           # (strided local -> local: its byte count, not its bytes)
            trace.write_reach(ctx, op_id, D[2], nbytes if S[0] >= 0 else max(D[3], nbytes))


@prim
def _align_fail(api, what, lv, align, off):
    fault("{}: {} address in {:level} must be {}-byte aligned, got byte offset={}",
          APIS[api], NAMES[what], lv, align, off)
    raise KernelError(FAULT)


@inline
def aligned(api, what, loc, align):
    """Raise unless the located local tensor starts `align`-byte aligned inside its level."""
    if loc[1] % align != 0:
        _align_fail(api, what, loc[0], align, loc[1])


@prim
def _gm_fail(st, api, addr, isz, first, n, write):
    """core.check_gm's error (same message): find the GM argument holding `addr`, raise."""
    k, boff, nb = gm_where(st, addr)
    lo = boff // isz + first
    if write:
        fault("{}: GM write must stay inside argument #{} ({} elements), got "
              "elements [{}, {})", APIS[api], k, nb // isz, lo, lo + n)
        raise GMWriteError(FAULT)
    fault("{}: GM read must stay inside argument #{} ({} elements), got elements "
          "[{}, {})", APIS[api], k, nb // isz, lo, lo + n)
    raise GMReadError(FAULT)


@prim
def _local_fail(api, what, n, size, lv):
    fault("{}: {} must hold count elements, got count={} for a tensor of {} elements "
          "in {:level}", APIS[api], NAMES[what], n, size, lv)
    raise KernelError(FAULT)


@inline
def bound(st, api, what, loc, isz, first, n, write):
    """Elements [first, first+n) of a located tensor exist: core.check_gm's rule for GM (the
    argument's allocation), core.check_local's for local tensors (the tensor's size)."""
    if first < 0 or n < 0 or (first + n) * isz > loc[3]:
        if loc[0] < 0:
            _gm_fail(st, api, loc[2], isz, first, n, write)
        else:
            _local_fail(api, what, first + n, loc[3] // isz, loc[0])
    elif loc[0] < 0 and st.options & (FLAG_REPORT_OVERREACH | FLAG_GM_ORDER):
        if st.options & FLAG_REPORT_OVERREACH:
            gm_note(st, loc[2] + first * isz, n * isz)      # checked: past its end? (gmreach.py)
        if st.options & FLAG_GM_ORDER and st.xcore != 0:   # ordered by the flags? (rt.gmorder)
            gm_order(st, api, loc[2] + first * isz, n * isz, 1 if write else 0)


@inline
def bound_rows(st, api, what, loc, isz, first, n, step, rows, write):
    """bound() of `rows` >= 1 rows of n elements, `step` elements apart from element `first`:
    checked on the last row (the furthest; an error names it), with the GM-order record made
    row by row (rt.gmorder: the bytes between the rows are not accessed,
    so cores writing interleaved rows or column blocks of one matrix do not overlap)."""
    last = first + (rows - 1) * step
    if first < 0:
        bound(st, api, what, loc, isz, first, n, write)         # fails: before the start
    elif n < 0 or (last + n) * isz > loc[3]:
        bound(st, api, what, loc, isz, last, n, write)          # fails: past the end
    elif loc[0] < 0 and st.options & (FLAG_REPORT_OVERREACH | FLAG_GM_ORDER):
        if st.options & FLAG_REPORT_OVERREACH:
            gm_note(st, loc[2] + last * isz, n * isz)       # checked: past its end? (gmreach.py)
        if st.options & FLAG_GM_ORDER and st.xcore != 0:   # ordered by the flags? (rt.gmorder)
            if rows <= 1 or step == n:
                gm_order(st, api, loc[2] + first * isz, (last + n - first) * isz,
                         1 if write else 0)
            else:
                gm_order_rows(st, api, loc[2] + first * isz, n * isz, step * isz, rows,
                              1 if write else 0)


# ---- copying -----------------------------------------------------------------------------------

@prim
def bcopy(d, doff, s, soff, n):
    """d[doff:doff+n] = s[soff:soff+n] for non-overlapping arrays of one element type (unsigned
    indices: no wraparound test, so the loop vectorises)."""
    do = np.uint64(doff)
    so = np.uint64(soff)
    for i in range(np.uint64(n)):
        d[do + i] = s[so + i]


@prim
def _staged(ctx, b, nbytes, full):
    if not full:
        off = np.int64(b.ctypes.data) - np.int64(ctx[MEM].ctypes.data)
        flush_pending(ctx, off, off + nbytes)
    t = gm_to_local_target(ctx, b[:nbytes])
    if not full:
        bcopy(t, 0, b, 0, nbytes)
    return t


@inline
def write_target(ctx, b, nbytes, full):
    """The bytes a GM->local copy writes for bytes [0, nbytes) of local `b`.

    Checked mode: the stage twin (`gm_to_local_target`, visible on deque). When the copy will not
    overwrite every byte (`full` False: strides, padding), overlapping pending copies are made
    visible first and the span is snapshot into the stage, so skipped bytes keep their value."""
    if ctx[STATE][0].options & FLAG_DEFER:
        return _staged(ctx, b, nbytes, full)
    return b[:nbytes]


@prim
def _path_fail(api, dl, sl):
    if sl == L0C:
        fault("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
              "{:level}->{:level} (L0C results leave through fixpipe)", APIS[api], sl,
              dl)
        raise KernelError(FAULT)
    if dl == L0A or dl == L0B:
        fault("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
              "{:level}->{:level} (L0A/L0B are filled by load_data)", APIS[api], sl,
              dl)
        raise KernelError(FAULT)
    fault("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
          "{:level}->{:level}", APIS[api], sl, dl)
    raise KernelError(FAULT)


@inline
def copy_path(api, dl, sl):
    """The counter of a data_copy between levels sl -> dl; raises for paths Ascend C lacks."""
    if sl < 0 and (dl == UB or dl == L1):
        return C_MTE2
    if sl == UB and dl < 0:
        return C_MTE3
    if sl == UB and dl == UB:
        return C_MTE_UB2UB
    if sl == L1 and dl == BT:
        return C_MTE1
    _path_fail(api, dl, sl)
    return C_MTE2


@inline
def sides(st, api, D, S, isz, d_step, s_step, n, rows):
    """Alignment of local sides and bounds of `rows` blocks of n elements, block i at
    dst[i * d_step:], src[i * s_step:] (D, S: located dst and src)."""
    if D[0] >= 0:
        aligned(api, W_DST, D, 32)
    if S[0] >= 0:
        aligned(api, W_SRC, S, 32)
    bound_rows(st, api, W_SRC, S, isz, 0, n, s_step, rows, False)
    bound_rows(st, api, W_DST, D, isz, 0, n, d_step, rows, True)


STREAM_MIN_COPY = 4096          # bytes of one UB->GM copy
STREAM_MIN_GM = 8 << 20         # bytes of the GM argument written


@inline
def streams(st, addr, nb):
    """Whether a UB->GM copy of nb bytes to GM address `addr` uses streaming stores
    (memops.stream_copy): at least STREAM_MIN_COPY bytes into a GM argument of at least
    STREAM_MIN_GM bytes, an output too large to stay in the CPU's caches anyway; never in a
    launch whose cores synchronise with each other (st.xcore: MIX kernels, cross-core flags),
    where GM is how one core hands data to another that reads it next (a FlashAttention P tile
    streamed out had to come back from DRAM for the AIC)."""
    if nb < STREAM_MIN_COPY or st.xcore != 0:
        return False
    for j in range(st.ngm):
        b = st.gm_addr[j]
        if b <= addr < b + st.gm_bytes[j]:
            return st.gm_bytes[j] >= STREAM_MIN_GM
    return False


