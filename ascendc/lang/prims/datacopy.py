"""Data movement primitives: `data_copy` (count, `DataCopyParams`, `Nd2NzParams` forms) and
`data_copy_pad`. Mirror Ascend C `DataCopy` / `DataCopyPad`.

Called as ``prim(ctx, dst, src, ...)`` with storage arrays (1-D views) and params namedtuples,
from Python (interpreter) and from njit code (compiled kernels). `data_copy` and `data_copy_pad`
are plain Python dispatchers that pick the concrete implementation by the params' class, and
Numba overloads of the same names that pick it by Numba type. Local tensors are views into the
core's memory (`ctx[MEM]`); their level is found from their address; anything else is GM. Bytes
move through same-width unsigned integer views, so every dtype (float16/bfloat16 records
included) is copied bit for bit.

Paths (`data_copy` count and `DataCopyParams` forms; dtype of dst and src must match):
  GM->UB, GM->L1 (MTE2), UB->GM (MTE3), UB->UB (counted as ub_to_ub bytes), L1->BT (C1->C2, MTE1).
  Everything else is rejected naming both levels: GM->L0A/L0B go through `load_data`, L1->L0A/L0B
  through `load_data`, L0C results leave through `fixpipe`. UB<->L1 exists only on coupled chips
  (310P); this emulator rejects it (the 910B's AIV and AIC are separate cores).
  Nd2NzParams: GM->L1 only. data_copy_pad: GM->UB and UB->GM only.

Fidelity:
- count form: `count*sizeof` is rounded DOWN to a multiple of 32 B like hardware; the tail is not
  copied and the core state's `rounded` field counts the call (the launcher reports it in checked
  mode).
- local addresses must be 32 B aligned (offset inside their level); GM is checked element-exactly
  against the argument's allocation (GMReadError / GMWriteError naming element offsets).
- DataCopyParams: `block_len` and both gaps in 32 B blocks, gaps from the end of one block to the
  start of the next, on the GM side too.
- Nd2NzParams (GM ND -> L1 NZ): for matrix i (src += i*src_nd_matrix_stride elements, dst +=
  i*dst_nz_matrix_stride elements), element (r, c) of the n_value x d_value matrix, read at
  src[r*src_d_value + c], goes to dst[(c // C0)*dst_nz_c0_stride*C0 + r*dst_nz_n_stride*C0 + c % C0]
  with C0 = 32 B / sizeof (16 for f16/bf16, 8 for f32, 32 for int8). Padding (the rest of a C0
  block, rows beyond n_value) is NOT written: zero it first if the cube must see zeros.
- data_copy_pad: `block_len` in bytes (multiple of sizeof); GM-side stride in bytes, UB-side stride
  in 32 B blocks. GM->UB: UB row i starts at byte
  i*(ceil32(left*sz + block_len + right*sz) + dst_stride*32) and holds [left padding][data][right
  padding][filler up to 32 B]; with is_pad=True every padding/filler element gets padding_value,
  with is_pad=False they are left as they were ("dummy data"). UB->GM: UB row i at byte
  i*(ceil32(block_len) + src_stride*32), GM block at byte i*(block_len + dst_stride), exactly
  block_len bytes written (GM stride may be negative).
- checked mode: every GM->local write goes to the stage buffer (`gm_to_local_target`) and becomes
  visible on deque; strided writes first make overlapping pending copies visible and snapshot the
  span, so bytes they skip keep their visible value.

Speed and compile cost: each njit primitive is a thin typed wrapper (unpacks params, takes byte
views, names the dtypes) over an implementation on uint8 views plus the element size, so the heavy
code compiles once, not once per dtype and params type; the Python dispatchers call those
implementations directly. Copy loops use unsigned indices (no wraparound test, so they vectorise;
Numba's slice assignment is ~15x slower); checks work on scalars located once per call and are
inlined, only failures call out (handing `ctx`, an array or a string to a function costs 2-20 ns
of reference counting per call): the fixed cost of a call is ~0.1-0.15 us. Byte views are taken
with `retyped` (borrow.py: an inlined pointer cast, where Numba's `view` calls out of line).
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from ..core import (C_MTE2, C_MTE3, L1,
                    UB, prim)
from ..dtypes import from_numpy
from ..dtypes import st as _st
from ..errors import FAULT, fault, KernelError
from ..params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, DataCopyParams,
                      Nd2NzParams)
from .borrow import borrowed, retyped
from .cubegemm import copy32, copy64
from .memops import scatter1, scatter2, scatter4, scatter8, stream_copy
from .movecore import *  # noqa: F403  (locating, checks and copy paths shared with cube.py)
from .. import trace
from ..state import STATE

_OP_DATA_COPY, _OP_DATA_COPY_PAD = trace.op("data_copy"), trace.op("data_copy_pad")

__all__ = ["data_copy", "data_copy_count", "data_copy_blocks", "data_copy_nd2nz",
           "data_copy_pad", "data_copy_pad_blocks"]


# ---- data_copy ---------------------------------------------------------------------------------

@prim
def _count_impl(ctx, d, s, isz, count):
    api = A_DATA_COPY
    st = ctx[STATE][0]
    D, S = locate2(ctx, d, s)
    ctr = copy_path(api, D[0], S[0])
    if count < 0:
        fault("data_copy: count must be >= 0, got count={}", count)
        raise KernelError(FAULT)
    nb = count * isz // 32 * 32
    if nb != count * isz:
        st.rounded += 1
    sides(st, api, D, S, isz, 0, 0, nb // isz, 1)
    if nb == 0:
        return
    t = write_target(ctx, d, nb, True) if S[0] < 0 else d[:nb]
    if ctr == C_MTE3 and streams(st, D[2], nb):
        stream_copy(t, 0, s, 0, nb)
    else:
        bcopy(t, 0, s, 0, nb)
    bump(st, ctr, nb)
    if st.options & HOOKS:      # checked mode or tracing: else nothing to do
        traced(ctx, _OP_DATA_COPY, D, S, nb, isz, nb)


@prim
def data_copy_count(ctx, dst, src, count):
    """data_copy(dst, src, count): contiguous copy, count*sizeof rounded down to 32 B."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    d, s = retyped(borrowed(dst), np.uint8), retyped(borrowed(src), np.uint8)   # no refcounting
    _count_impl(borrowed(ctx), d, s, dst.itemsize, np.int64(count))


@prim
def _blocks_impl(ctx, d, s, isz, bc, bl, sg, dg):
    api = A_DATA_COPY
    st = ctx[STATE][0]
    in_range(api, W_BLOCK_COUNT, bc, 0, 4095)
    in_range(api, W_BLOCK_LEN, bl, 0, 65535)
    in_range(api, W_SRC_STRIDE, sg, 0, 65535)
    in_range(api, W_DST_STRIDE, dg, 0, 65535)
    D, S = locate2(ctx, d, s)
    ctr = copy_path(api, D[0], S[0])
    if bc == 0 or bl == 0:
        sides(st, api, D, S, isz, 0, 0, 0, 1)
        return
    nb = bl * 32
    sstep = (bl + sg) * 32
    dstep = (bl + dg) * 32
    sides(st, api, D, S, isz, dstep // isz, sstep // isz, nb // isz, bc)
    span = (bc - 1) * dstep + nb
    t = write_target(ctx, d, span, dg == 0) if S[0] < 0 else d[:span]
    for i in range(bc):
        bcopy(t, i * dstep, s, i * sstep, nb)
    bump(st, ctr, bc * nb)
    if st.options & HOOKS:      # checked mode or tracing: else nothing to do
        traced_blocks(ctx, _OP_DATA_COPY, D, S, bc * nb, isz,
                      (bc - 1) * (sstep if S[0] < 0 else dstep) + nb, nb,
                      sstep if S[0] < 0 else dstep, 0 if S[0] >= 0 and D[0] >= 0 else
                      dstep if S[0] < 0 else sstep)


@prim
def data_copy_blocks(ctx, dst, src, p):
    """data_copy(dst, src, DataCopyParams): block_count blocks of block_len*32 B, gaps in 32 B."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    d, s = retyped(borrowed(dst), np.uint8), retyped(borrowed(src), np.uint8)   # no refcounting
    _blocks_impl(borrowed(ctx), d, s, dst.itemsize,
                 np.int64(p.block_count), np.int64(p.block_len), np.int64(p.src_stride),
                 np.int64(p.dst_stride))


@prim
def _nd2nz_loop(t, s, nd, nv, dv, sms, sdv, c0s, ns, dms):
    """Element copies of an Nd2Nz (t, s: same-width unsigned views, element indices). Three
    loop orders, all giving the result of the element-by-element definition:
    - a row's strips adjacent in L1 (dst_nz_c0_stride 1, n_stride >= the strips: an ND row stays
      one run) and no two rows or matrices overlapping: each source row copied whole, 64 bytes
      at a time, all nd matrices' pieces of one row in turn;
    - strips, rows and matrices disjoint in L1 (the usual NZ: c0_stride >= the rows' span):
      source row by source row (matrix by matrix, or across the matrices when they sit side by
      side in the rows), each row's full C0 chunks loaded 8 (4, 2, 1) at a time, then stored
      one per strip; the source is read in address order, which the CPU's prefetchers follow
      (from DRAM 1.5-2.9x faster than the banded order below, from L2 ~10 %);
    - else (overlapping writes, whose order is the banded one): bands of 16 source rows, each
      across all nd matrices, within a band each strip's rows in order."""
    c0 = 32 // t.itemsize
    nstrip = (dv + c0 - 1) // c0
    if (c0s == 1 and ns >= nstrip and dv % c0 == 0
            and (nd == 1 or dms >= (nv - 1) * ns * c0 + dv)):
        for r in range(nv):
            for m in range(nd):
                so = m * sms + r * sdv
                do = m * dms + r * ns * c0
                j = 0
                while j + 2 <= nstrip:
                    copy64(t, np.uint64(do + j * c0), s, np.uint64(so + j * c0))
                    j += 2
                if j < nstrip:
                    copy32(t, np.uint64(do + j * c0), s, np.uint64(so + j * c0))
        return
    step = c0s * c0
    if step >= ((nv - 1) * ns + 1) * c0 and (nd == 1 or dms >= (nstrip - 1) * step
                                               + ((nv - 1) * ns + 1) * c0):
        full = dv // c0
        tail = dv - full * c0
        # matrices side by side in a row: row by row, all matrices; else matrix by matrix
        no, ni, so_o, so_i, do_o, do_i = ((nv, nd, sdv, sms, ns * c0, dms) if sms < sdv else
                                          (nd, nv, sms, sdv, dms, ns * c0))
        for a in range(no):
            for b in range(ni):
                do = a * do_o + b * do_i
                so = a * so_o + b * so_i
                j = 0
                while j + 8 <= full:
                    scatter8(t, do + j * step, step, s, so + j * c0)
                    j += 8
                if j + 4 <= full:
                    scatter4(t, do + j * step, step, s, so + j * c0)
                    j += 4
                if j + 2 <= full:
                    scatter2(t, do + j * step, step, s, so + j * c0)
                    j += 2
                if j < full:
                    scatter1(t, do + j * step, step, s, so + j * c0)
                    j += 1
                if tail > 0:
                    bcopy(t, do + j * step, s, so + j * c0, tail)
        return
    for r0 in range(0, nv, 16):
        r1 = min(nv, r0 + 16)
        for m in range(nd):
            for j in range(nstrip):
                w = min(c0, dv - j * c0)
                sb = m * sms + j * c0
                db = m * dms + j * c0s * c0
                for r in range(r0, r1):
                    so = np.uint64(sb + r * sdv)
                    do = np.uint64(db + r * ns * c0)
                    if w == c0:
                        copy32(t, do, s, so)
                    else:
                        bcopy(t, do, s, so, w)


@prim
def _nd2nz_impl(ctx, d, s, isz, nd, nv, dv, sms, sdv, c0s, ns, dms):
    api = A_DATA_COPY
    st = ctx[STATE][0]
    D, S = locate2(ctx, d, s)
    if not (S[0] < 0 and D[0] == L1):
        fault("data_copy: path of an Nd2NzParams copy must be GM->L1, got "
              "{:level}->{:level}", S[0], D[0])
        raise KernelError(FAULT)
    aligned(api, W_DST, D, 32)
    in_range(api, W_ND_NUM, nd, 0, 4095)
    in_range(api, W_N_VALUE, nv, 0, 16384)
    in_range(api, W_D_VALUE, dv, 0, 65535)
    in_range(api, W_SRC_ND_MATRIX_STRIDE, sms, 0, 65535)
    in_range(api, W_DST_NZ_MATRIX_STRIDE, dms, 0, 65535)
    if nd == 0 or nv == 0 or dv == 0:
        return
    in_range(api, W_SRC_D_VALUE, sdv, 1, 65535)
    in_range(api, W_DST_NZ_C0_STRIDE, c0s, 1, 16384)
    in_range(api, W_DST_NZ_N_STRIDE, ns, 1, 16384)
    c0 = 32 // isz
    nstrip = (dv + c0 - 1) // c0
    span = (nd - 1) * dms + (nstrip - 1) * c0s * c0 + (nv - 1) * ns * c0 + dv - (nstrip - 1) * c0
    bound(st, api, W_DST, D, isz, 0, span, True)
    for m in range(nd):
        bound_rows(st, api, W_SRC, S, isz, m * sms, dv, sdv, nv, False)
    t = write_target(ctx, d, span * isz, False)
    sv = s[:((nd - 1) * sms + (nv - 1) * sdv + dv) * isz]
    if isz == 1:
        _nd2nz_loop(t, sv, nd, nv, dv, sms, sdv, c0s, ns, dms)
    elif isz == 2:
        _nd2nz_loop(retyped(t, np.uint16), retyped(sv, np.uint16), nd, nv, dv, sms, sdv,
                    c0s, ns, dms)
    elif isz == 4:
        _nd2nz_loop(retyped(t, np.uint32), retyped(sv, np.uint32), nd, nv, dv, sms, sdv,
                    c0s, ns, dms)
    else:
        _nd2nz_loop(retyped(t, np.uint64), retyped(sv, np.uint64), nd, nv, dv, sms, sdv,
                    c0s, ns, dms)
    bump(st, C_MTE2, nd * nv * dv * isz)
    if st.options & HOOKS:      # checked mode or tracing: else nothing to do
        traced(ctx, _OP_DATA_COPY, D, S, nd * nv * dv * isz, isz,
               ((nd - 1) * sms + (nv - 1) * sdv + dv) * isz)


@prim
def data_copy_nd2nz(ctx, dst, src, p):
    """data_copy(dst L1, src GM, Nd2NzParams): ND matrices to the NZ fractal layout (module doc)."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    d, s = retyped(borrowed(dst), np.uint8), retyped(borrowed(src), np.uint8)   # no refcounting
    _nd2nz_impl(borrowed(ctx), d, s, dst.itemsize,
                np.int64(p.nd_num), np.int64(p.n_value), np.int64(p.d_value),
                np.int64(p.src_nd_matrix_stride), np.int64(p.src_d_value),
                np.int64(p.dst_nz_c0_stride), np.int64(p.dst_nz_n_stride),
                np.int64(p.dst_nz_matrix_stride))


def py_bytes(api, dst, src):
    """(dst bytes, src bytes, sizeof) for the Python dispatchers, which call the byte-level
    implementations directly (no typed wrapper to compile in interpret mode)."""
    if dst.dtype != src.dtype:
        raise KernelError("{}: dst and src must have the same dtype, got dst={} src={}", api,
                          dtype_name_of(dst.dtype), dtype_name_of(src.dtype))
    return dst.view(np.uint8), src.view(np.uint8), dst.dtype.itemsize


def data_copy(ctx, dst, src, arg):
    """Mirrors Ascend C `DataCopy`: the third argument (count | DataCopyParams | Nd2NzParams)
    picks the form. Python dispatcher; njit code reaches the same forms through an overload."""
    i = int
    if isinstance(arg, DataCopyParams):
        d, s, isz = py_bytes("data_copy", dst, src)
        return _blocks_impl(ctx, d, s, isz, i(arg.block_count), i(arg.block_len),
                            i(arg.src_stride), i(arg.dst_stride))
    if isinstance(arg, Nd2NzParams):
        d, s, isz = py_bytes("data_copy", dst, src)
        p = arg
        return _nd2nz_impl(ctx, d, s, isz, i(p.nd_num), i(p.n_value), i(p.d_value),
                           i(p.src_nd_matrix_stride), i(p.src_d_value), i(p.dst_nz_c0_stride),
                           i(p.dst_nz_n_stride), i(p.dst_nz_matrix_stride))
    if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
        d, s, isz = py_bytes("data_copy", dst, src)
        return _count_impl(ctx, d, s, isz, i(arg))
    raise TypeError("data_copy: third argument must be a count, DataCopyParams or Nd2NzParams, "
                    f"got {type(arg).__name__}={arg!r}")


def params_class(t):
    """The namedtuple class of a Numba NamedTuple/NamedUniTuple type, else None."""
    if isinstance(t, (types.NamedTuple, types.NamedUniTuple)):
        return t.instance_class
    return None


@overload(data_copy)
def _data_copy(ctx, dst, src, arg):
    if isinstance(arg, types.Integer):
        return lambda ctx, dst, src, arg: data_copy_count(
            borrowed(ctx), borrowed(dst), borrowed(src), arg)   # no references taken
    cls = params_class(arg)
    if cls is DataCopyParams:
        return lambda ctx, dst, src, arg: data_copy_blocks(
            borrowed(ctx), borrowed(dst), borrowed(src), arg)   # no references taken
    if cls is Nd2NzParams:
        return lambda ctx, dst, src, arg: data_copy_nd2nz(
            borrowed(ctx), borrowed(dst), borrowed(src), arg)   # no references taken
    raise TypingError("data_copy: third argument must be a count, DataCopyParams or Nd2NzParams, "
                      f"got {arg}")


# ---- data_copy_pad -----------------------------------------------------------------------------

@prim
def _pad_checks(api, gm2ub, isz, bc, bl, bl_max, ub_stride, gm_stride, is_pad, left, right):
    in_range(api, W_BLOCK_COUNT, bc, 0, 4095)
    in_range(api, W_BLOCK_LEN, bl, 0, bl_max)
    if bl % isz != 0:
        fault("data_copy_pad: block_len must be a multiple of sizeof(dtype)={} bytes, "
              "got block_len={}", isz, bl)
        raise KernelError(FAULT)
    in_range(api, W_DST_STRIDE if gm2ub else W_SRC_STRIDE, ub_stride, 0, 0xFFFFFFFF)
    if gm_stride % isz != 0:
        fault("data_copy_pad: GM stride must be a multiple of sizeof(dtype)={} bytes, "
              "got {}={}", isz, "src_stride" if gm2ub else "dst_stride", gm_stride)
        raise KernelError(FAULT)
    if not gm2ub and (is_pad or left != 0 or right != 0):
        fault("data_copy_pad: pad_params must be omitted (or empty) for a UB->GM copy, "
              "got is_pad={} left_padding={} right_padding={}",
              "True" if is_pad else "False", left, right)
        raise KernelError(FAULT)
    if left < 0 or left * isz > 32:
        fault("data_copy_pad: left_padding must be in [0, {}] elements (at most 32 "
              "bytes), got left_padding={}", 32 // isz, left)
        raise KernelError(FAULT)
    if right < 0 or right * isz > 32:
        fault("data_copy_pad: right_padding must be in [0, {}] elements (at most 32 "
              "bytes), got right_padding={}", 32 // isz, right)
        raise KernelError(FAULT)


@prim
def _pad_impl(ctx, d, s, isz, bc, bl, sstride, dstride, bl_max, is_pad, left, right, pad_bits):
    api = A_DATA_COPY_PAD
    st = ctx[STATE][0]
    D, S = locate2(ctx, d, s)
    gm2ub = S[0] < 0 and D[0] == UB
    if not (gm2ub or (S[0] == UB and D[0] < 0)):
        fault("data_copy_pad: path must be GM->UB or UB->GM, got {:level}->{:level}",
              S[0], D[0])
        raise KernelError(FAULT)
    ub_stride = dstride if gm2ub else sstride
    gm_stride = sstride if gm2ub else dstride
    _pad_checks(api, gm2ub, isz, bc, bl, bl_max, ub_stride, gm_stride, is_pad, left, right)
    aligned(api, W_DST if gm2ub else W_SRC, D if gm2ub else S, 32)
    if bc == 0:
        return
    lb = left * isz
    row = (lb + bl + right * isz + 31) // 32 * 32 if gm2ub else (bl + 31) // 32 * 32
    ustep = row + ub_stride * 32
    gstep = bl + gm_stride
    for i in range(bc):
        if gm2ub:
            bound(st, api, W_SRC, S, isz, i * gstep // isz, bl // isz, False)
        else:
            bound(st, api, W_DST, D, isz, i * gstep // isz, bl // isz, True)
    if gm2ub:
        span = (bc - 1) * ustep + row
        bound(st, api, W_DST, D, isz, 0, span // isz, True)
        t = write_target(ctx, d, span, False)
        for i in range(bc):
            ub = i * ustep
            bcopy(t, ub + lb, s, i * gstep, bl)
            if is_pad:      # the row's bytes outside the copied ones: left, then right
                for q in range(ub, ub + lb):
                    t[q] = np.uint8((pad_bits >> np.uint64(8 * ((q - ub) % isz))) & 0xFF)
                for q in range(ub + lb + bl, ub + row):
                    t[q] = np.uint8((pad_bits >> np.uint64(8 * ((q - ub) % isz))) & 0xFF)
        bump(st, C_MTE2, bc * bl)
        if st.options & HOOKS:      # checked mode or tracing: else nothing to do
            traced_blocks(ctx, _OP_DATA_COPY_PAD, D, S, bc * bl, isz, (bc - 1) * gstep + bl, bl,
                          gstep, 0)
    else:
        bound(st, api, W_SRC, S, isz, 0, ((bc - 1) * ustep + bl) // isz, False)
        for i in range(bc):
            bcopy(d, i * gstep, s, i * ustep, bl)
        bump(st, C_MTE3, bc * bl)
        if st.options & HOOKS:      # checked mode or tracing: else nothing to do
            traced_blocks(ctx, _OP_DATA_COPY_PAD, D, S, bc * bl, isz, (bc - 1) * gstep + bl, bl,
                          gstep, 0)


@prim
def _pad_bits(dst, value):
    """The bit pattern of `value` stored as one element of dst's dtype."""
    tmp = np.empty_like(dst[:1])
    _st(tmp, 0, value)
    b = tmp.view(np.uint8)
    bits = np.uint64(0)
    for q in range(b.size):
        bits |= np.uint64(b[q]) << np.uint64(8 * q)
    return bits


@prim
def data_copy_pad_blocks(ctx, dst, src, bc, bl, sstride, dstride, bl_max,
                         is_pad, left, right, pad_value):
    """data_copy_pad with its params unpacked (see module doc); bl_max is the block_len limit."""
    check_dtypes(A_DATA_COPY_PAD, pair_info(dst, src))
    d, s = retyped(borrowed(dst), np.uint8), retyped(borrowed(src), np.uint8)   # no refcounting
    _pad_impl(borrowed(ctx), d, s, dst.itemsize, np.int64(bc),
              np.int64(bl), np.int64(sstride), np.int64(dstride), np.int64(bl_max), is_pad != 0,
              np.int64(left), np.int64(right),
              _pad_bits(dst, pad_value) if is_pad else np.uint64(0))


_BL_MAX_EXT = 2097151
_BL_MAX_LEGACY = 65535


def data_copy_pad(ctx, dst, src, copy_params, pad_params=None):
    """Mirrors Ascend C `DataCopyPad` (GM<->UB, lengths in bytes, padding on the UB side).
    copy_params: DataCopyExtParams or legacy DataCopyParams; pad_params: None,
    DataCopyPadExtParams or DataCopyPadParams. Python dispatcher; njit code uses the overload."""
    if isinstance(copy_params, DataCopyExtParams):
        lim = _BL_MAX_EXT
    elif isinstance(copy_params, DataCopyParams):
        lim = _BL_MAX_LEGACY
    else:
        raise TypeError("data_copy_pad: copy_params must be DataCopyExtParams or DataCopyParams, "
                        f"got {type(copy_params).__name__}={copy_params!r}")
    if pad_params is None:
        pad_params = DataCopyPadExtParams()
    elif not isinstance(pad_params, (DataCopyPadExtParams, DataCopyPadParams)):
        raise TypeError("data_copy_pad: pad_params must be None, DataCopyPadExtParams or "
                        f"DataCopyPadParams, got {type(pad_params).__name__}={pad_params!r}")
    c, p = copy_params, pad_params
    d, s, isz = py_bytes("data_copy_pad", dst, src)
    bits = 0
    if p.is_pad:
        with np.errstate(all="ignore"):
            v = np.asarray(p.padding_value).astype(from_numpy(dst.dtype).numpy).reshape(1)
        bits = int.from_bytes(v.tobytes(), "little")
    i = int
    return _pad_impl(ctx, d, s, isz, i(c.block_count), i(c.block_len), i(c.src_stride),
                     i(c.dst_stride), lim, bool(p.is_pad), i(p.left_padding), i(p.right_padding),
                     np.uint64(bits))


@overload(data_copy_pad)
def _data_copy_pad(ctx, dst, src, copy_params, pad_params=None):
    cls = params_class(copy_params)
    if cls is DataCopyExtParams:
        lim = _BL_MAX_EXT
    elif cls is DataCopyParams:
        lim = _BL_MAX_LEGACY
    else:
        raise TypingError("data_copy_pad: copy_params must be DataCopyExtParams or DataCopyParams, "
                          f"got {copy_params}")
    if pad_params is None or isinstance(pad_params, (types.NoneType, types.Omitted)):
        def impl(ctx, dst, src, copy_params, pad_params=None):
            c = copy_params
            ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)   # no references
            return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                        c.dst_stride, lim, False, 0, 0, 0)
        return impl
    if params_class(pad_params) in (DataCopyPadExtParams, DataCopyPadParams):
        def impl(ctx, dst, src, copy_params, pad_params=None):
            c, p = copy_params, pad_params
            ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)   # no references
            return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                        c.dst_stride, lim, p.is_pad != 0, p.left_padding,
                                        p.right_padding, p.padding_value)
        return impl
    raise TypingError("data_copy_pad: pad_params must be None, DataCopyPadExtParams or "
                      f"DataCopyPadParams, got {pad_params}")

