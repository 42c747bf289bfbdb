"""Data movement primitives: `data_copy` (count, `DataCopyParams`, `Nd2NzParams` forms) and
`data_copy_pad`. Mirror Ascend C `DataCopy` / `DataCopyPad`.

Called as ``prim(ctx, dst, src, ...)`` with storage arrays (1-D views) and params namedtuples,
from Python (interpreter) and from njit code (compiled kernels). `data_copy` and `data_copy_pad`
are plain Python dispatchers that pick the concrete implementation by the params' class, and
Numba overloads of the same names that pick it by Numba type. Local tensors are views into the
core's memory (`ctx[0]`); their level is found from their address; anything else is GM. Bytes
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
of reference counting per call): the fixed cost of a call is ~0.1-0.15 us.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ..core import (BT, C_MTE1, C_MTE2, C_MTE3, C_MTE_UB2UB, FLAG_DEFER, L0A, L0B, L0C, L1,
                    NLEVELS, UB, flush_pending, gm_to_local_target, prim)
from ..dtypes import from_numpy
from ..dtypes import st as _st
from ..errors import GMReadError, GMWriteError, KernelError
from ..params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, DataCopyParams,
                      Nd2NzParams)
from .memops import stream_copy

__all__ = ["data_copy", "data_copy_count", "data_copy_blocks", "data_copy_nd2nz",
           "data_copy_pad", "data_copy_pad_blocks"]


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
APIS = ("data_copy", "data_copy_pad", "load_data", "mmad", "fixpipe")
A_DATA_COPY, A_DATA_COPY_PAD, A_LOAD_DATA, A_MMAD, A_FIXPIPE = range(5)
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
    mem, st = ctx[0], ctx[2][0]
    ma, ms = np.int64(mem.ctypes.data), mem.size
    return (locate(st, ma, ms, np.int64(d.ctypes.data), d.size),
            locate(st, ma, ms, np.int64(s.ctypes.data), s.size))


@prim
def _range_fail(api, name, v, lo, hi):
    raise KernelError("{}: {} must be in [{}, {}], got {}={}", APIS[api], NAMES[name], lo, hi,
                      NAMES[name], v)


@inline
def in_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        _range_fail(api, name, v, lo, hi)


@prim
def _dtype_fail(api, dname, sname):
    raise KernelError("{}: dst and src must have the same dtype, got dst={} src={}", APIS[api],
                      dname, sname)


@inline
def check_dtypes(api, info):
    """Raise unless dst and src have the same dtype; info = pair_info(dst, src)."""
    if not info[0]:
        _dtype_fail(api, info[1], info[2])


@inline
def bump(st, which, n):
    """core.count on st: add n to profiler counter `which`."""
    st.counters[which] += n


@prim
def _align_fail(api, what, lv, align, off):
    raise KernelError("{}: {} address in {:level} must be {}-byte aligned, got byte offset={}",
                      APIS[api], NAMES[what], lv, align, off)


@inline
def aligned(api, what, loc, align):
    """Raise unless the located local tensor starts `align`-byte aligned inside its level."""
    if loc[1] % align != 0:
        _align_fail(api, what, loc[0], align, loc[1])


@prim
def _gm_fail(st, api, addr, isz, first, n, write):
    """core.check_gm's error (same message): find the GM argument holding `addr`, raise."""
    k, boff, nb = -1, 0, 0
    for j in range(st.ngm):
        b = st.gm_addr[j]
        if b <= addr <= b + st.gm_bytes[j]:
            k, boff, nb = j, addr - b, st.gm_bytes[j]
            break
    lo = boff // isz + first
    if write:
        raise GMWriteError("{}: GM write must stay inside argument #{} ({} elements), got "
                           "elements [{}, {})", APIS[api], k, nb // isz, lo, lo + n)
    raise GMReadError("{}: GM read must stay inside argument #{} ({} elements), got elements "
                      "[{}, {})", APIS[api], k, nb // isz, lo, lo + n)


@prim
def _local_fail(api, what, n, size, lv):
    raise KernelError("{}: {} must hold count elements, got count={} for a tensor of {} elements "
                      "in {:level}", APIS[api], NAMES[what], n, size, lv)


@inline
def bound(st, api, what, loc, isz, first, n, write):
    """Elements [first, first+n) of a located tensor exist: core.check_gm's rule for GM (the
    argument's allocation), core.check_local's for local tensors (the tensor's size)."""
    if first < 0 or n < 0 or (first + n) * isz > loc[3]:
        if loc[0] < 0:
            _gm_fail(st, api, loc[2], isz, first, n, write)
        else:
            _local_fail(api, what, first + n, loc[3] // isz, loc[0])


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
        off = np.int64(b.ctypes.data) - np.int64(ctx[0].ctypes.data)
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
    if ctx[2][0].options & FLAG_DEFER:
        return _staged(ctx, b, nbytes, full)
    return b[:nbytes]


@prim
def _path_fail(api, dl, sl):
    if sl == L0C:
        raise KernelError("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
                          "{:level}->{:level} (L0C results leave through fixpipe)", APIS[api], sl,
                          dl)
    if dl == L0A or dl == L0B:
        raise KernelError("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
                          "{:level}->{:level} (L0A/L0B are filled by load_data)", APIS[api], sl,
                          dl)
    raise KernelError("{}: path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
                      "{:level}->{:level}", APIS[api], sl, dl)


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
def sides(st, api, D, S, isz, d_first, s_first, n):
    """Alignment of local sides and bounds of one block of n elements at dst[d_first:],
    src[s_first:] (D, S: located dst and src)."""
    if D[0] >= 0:
        aligned(api, W_DST, D, 32)
    if S[0] >= 0:
        aligned(api, W_SRC, S, 32)
    bound(st, api, W_SRC, S, isz, s_first, n, False)
    bound(st, api, W_DST, D, isz, d_first, n, True)


STREAM_MIN_COPY = 4096          # bytes of one UB->GM copy
STREAM_MIN_GM = 8 << 20         # bytes of the GM argument written


@inline
def streams(st, addr, nb):
    """Whether a UB->GM copy of nb bytes to GM address `addr` uses streaming stores
    (memops.stream_copy): at least STREAM_MIN_COPY bytes into a GM argument of at least
    STREAM_MIN_GM bytes, an output too large to stay in the CPU's caches anyway."""
    if nb < STREAM_MIN_COPY:
        return False
    for j in range(st.ngm):
        b = st.gm_addr[j]
        if b <= addr < b + st.gm_bytes[j]:
            return st.gm_bytes[j] >= STREAM_MIN_GM
    return False


# ---- data_copy ---------------------------------------------------------------------------------

@prim
def _count_impl(ctx, d, s, isz, count):
    api = A_DATA_COPY
    st = ctx[2][0]
    D, S = locate2(ctx, d, s)
    ctr = copy_path(api, D[0], S[0])
    if count < 0:
        raise KernelError("data_copy: count must be >= 0, got count={}", count)
    nb = count * isz // 32 * 32
    if nb != count * isz:
        st.rounded += 1
    sides(st, api, D, S, isz, 0, 0, nb // isz)
    if nb == 0:
        return
    t = write_target(ctx, d, nb, True) if S[0] < 0 else d[:nb]
    if ctr == C_MTE3 and streams(st, D[2], nb):
        stream_copy(t, 0, s, 0, nb)
    else:
        bcopy(t, 0, s, 0, nb)
    bump(st, ctr, nb)


@prim
def data_copy_count(ctx, dst, src, count):
    """data_copy(dst, src, count): contiguous copy, count*sizeof rounded down to 32 B."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    _count_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize, np.int64(count))


@prim
def _blocks_impl(ctx, d, s, isz, bc, bl, sg, dg):
    api = A_DATA_COPY
    st = ctx[2][0]
    in_range(api, W_BLOCK_COUNT, bc, 0, 4095)
    in_range(api, W_BLOCK_LEN, bl, 0, 65535)
    in_range(api, W_SRC_STRIDE, sg, 0, 65535)
    in_range(api, W_DST_STRIDE, dg, 0, 65535)
    D, S = locate2(ctx, d, s)
    ctr = copy_path(api, D[0], S[0])
    if bc == 0 or bl == 0:
        sides(st, api, D, S, isz, 0, 0, 0)
        return
    nb = bl * 32
    sstep = (bl + sg) * 32
    dstep = (bl + dg) * 32
    sides(st, api, D, S, isz, (bc - 1) * dstep // isz, (bc - 1) * sstep // isz, nb // isz)
    span = (bc - 1) * dstep + nb
    t = write_target(ctx, d, span, dg == 0) if S[0] < 0 else d[:span]
    for i in range(bc):
        bcopy(t, i * dstep, s, i * sstep, nb)
    bump(st, ctr, bc * nb)


@prim
def data_copy_blocks(ctx, dst, src, p):
    """data_copy(dst, src, DataCopyParams): block_count blocks of block_len*32 B, gaps in 32 B."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    _blocks_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize,
                 np.int64(p.block_count), np.int64(p.block_len), np.int64(p.src_stride),
                 np.int64(p.dst_stride))


@prim
def _nd2nz_loop(t, s, nd, nv, dv, sms, sdv, c0s, ns, dms):
    """Element copies of an Nd2Nz (t, s: same-width unsigned views, element indices), in bands of
    16 source rows: within a band each strip's rows are written in order and the band's source
    rows stay in L1 (reads and writes both near-sequential). Full C0 chunks use a constant-length
    loop (C0 from the view's itemsize)."""
    c0 = 32 // t.itemsize
    nstrip = (dv + c0 - 1) // c0
    for m in range(nd):
        for r0 in range(0, nv, 16):
            r1 = min(nv, r0 + 16)
            for j in range(nstrip):
                w = min(c0, dv - j * c0)
                sb = m * sms + j * c0
                db = m * dms + j * c0s * c0
                for r in range(r0, r1):
                    so = np.uint64(sb + r * sdv)
                    do = np.uint64(db + r * ns * c0)
                    if w == c0:
                        for e in range(c0):
                            t[do + np.uint64(e)] = s[so + np.uint64(e)]
                    else:
                        bcopy(t, do, s, so, w)


@prim
def _nd2nz_impl(ctx, d, s, isz, nd, nv, dv, sms, sdv, c0s, ns, dms):
    api = A_DATA_COPY
    st = ctx[2][0]
    D, S = locate2(ctx, d, s)
    if not (S[0] < 0 and D[0] == L1):
        raise KernelError("data_copy: path of an Nd2NzParams copy must be GM->L1, got "
                          "{:level}->{:level}", S[0], D[0])
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
        bound(st, api, W_SRC, S, isz, m * sms + (nv - 1) * sdv, dv, False)
    t = write_target(ctx, d, span * isz, False)
    sv = s[:((nd - 1) * sms + (nv - 1) * sdv + dv) * isz]
    if isz == 1:
        _nd2nz_loop(t, sv, nd, nv, dv, sms, sdv, c0s, ns, dms)
    elif isz == 2:
        _nd2nz_loop(t.view(np.uint16), sv.view(np.uint16), nd, nv, dv, sms, sdv, c0s, ns, dms)
    elif isz == 4:
        _nd2nz_loop(t.view(np.uint32), sv.view(np.uint32), nd, nv, dv, sms, sdv, c0s, ns, dms)
    else:
        _nd2nz_loop(t.view(np.uint64), sv.view(np.uint64), nd, nv, dv, sms, sdv, c0s, ns, dms)
    bump(st, C_MTE2, nd * nv * dv * isz)


@prim
def data_copy_nd2nz(ctx, dst, src, p):
    """data_copy(dst L1, src GM, Nd2NzParams): ND matrices to the NZ fractal layout (module doc)."""
    check_dtypes(A_DATA_COPY, pair_info(dst, src))
    _nd2nz_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize,
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
        return lambda ctx, dst, src, arg: data_copy_count(ctx, dst, src, arg)
    cls = params_class(arg)
    if cls is DataCopyParams:
        return lambda ctx, dst, src, arg: data_copy_blocks(ctx, dst, src, arg)
    if cls is Nd2NzParams:
        return lambda ctx, dst, src, arg: data_copy_nd2nz(ctx, dst, src, arg)
    raise TypingError("data_copy: third argument must be a count, DataCopyParams or Nd2NzParams, "
                      f"got {arg}")


# ---- data_copy_pad -----------------------------------------------------------------------------

@prim
def _pad_checks(api, gm2ub, isz, bc, bl, bl_max, ub_stride, gm_stride, is_pad, left, right):
    in_range(api, W_BLOCK_COUNT, bc, 0, 4095)
    in_range(api, W_BLOCK_LEN, bl, 0, bl_max)
    if bl % isz != 0:
        raise KernelError("data_copy_pad: block_len must be a multiple of sizeof(dtype)={} bytes, "
                          "got block_len={}", isz, bl)
    in_range(api, W_DST_STRIDE if gm2ub else W_SRC_STRIDE, ub_stride, 0, 0xFFFFFFFF)
    if gm_stride % isz != 0:
        raise KernelError("data_copy_pad: GM stride must be a multiple of sizeof(dtype)={} bytes, "
                          "got {}={}", isz, "src_stride" if gm2ub else "dst_stride", gm_stride)
    if not gm2ub and (is_pad or left != 0 or right != 0):
        raise KernelError("data_copy_pad: pad_params must be omitted (or empty) for a UB->GM copy, "
                          "got is_pad={} left_padding={} right_padding={}",
                          "True" if is_pad else "False", left, right)
    if left < 0 or left * isz > 32:
        raise KernelError("data_copy_pad: left_padding must be in [0, {}] elements (at most 32 "
                          "bytes), got left_padding={}", 32 // isz, left)
    if right < 0 or right * isz > 32:
        raise KernelError("data_copy_pad: right_padding must be in [0, {}] elements (at most 32 "
                          "bytes), got right_padding={}", 32 // isz, right)


@prim
def _pad_impl(ctx, d, s, isz, bc, bl, sstride, dstride, bl_max, is_pad, left, right, pad_bits):
    api = A_DATA_COPY_PAD
    st = ctx[2][0]
    D, S = locate2(ctx, d, s)
    gm2ub = S[0] < 0 and D[0] == UB
    if not (gm2ub or (S[0] == UB and D[0] < 0)):
        raise KernelError("data_copy_pad: path must be GM->UB or UB->GM, got {:level}->{:level}",
                          S[0], D[0])
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
            if is_pad:
                for q in range(ub, ub + row):
                    if q < ub + lb or q >= ub + lb + bl:
                        t[q] = np.uint8((pad_bits >> np.uint64(8 * ((q - ub) % isz))) & 0xFF)
        bump(st, C_MTE2, bc * bl)
    else:
        bound(st, api, W_SRC, S, isz, 0, ((bc - 1) * ustep + bl) // isz, False)
        for i in range(bc):
            bcopy(d, i * gstep, s, i * ustep, bl)
        bump(st, C_MTE3, bc * bl)


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
    _pad_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize, np.int64(bc),
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
            return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                        c.dst_stride, lim, False, 0, 0, 0)
        return impl
    if params_class(pad_params) in (DataCopyPadExtParams, DataCopyPadParams):
        def impl(ctx, dst, src, copy_params, pad_params=None):
            c, p = copy_params, pad_params
            return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                        c.dst_stride, lim, p.is_pad != 0, p.left_padding,
                                        p.right_padding, p.padding_value)
        return impl
    raise TypingError("data_copy_pad: pad_params must be None, DataCopyPadExtParams or "
                      f"DataCopyPadParams, got {pad_params}")
