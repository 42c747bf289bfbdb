"""Data movement primitives: `data_copy` (count, `DataCopyParams`, `Nd2NzParams` forms) and
`data_copy_pad`. Mirror Ascend C `DataCopy` / `DataCopyPad`.

Called as ``prim(ctx, dst, src, ...)`` with storage arrays (1-D views) and params namedtuples, from
Python (interpreter) and from njit code (compiled kernels). `data_copy` and `data_copy_pad` are plain
Python dispatchers that pick the concrete njit primitive by the params' class, and Numba overloads of
the same names that pick it by Numba type. Local tensors are views into the core's memory (`ctx[0]`);
their level is found from their address; anything else is GM. Bytes move through same-width unsigned
integer views, so every dtype (float16/bfloat16 records included) is copied bit for bit.

Paths (`data_copy` count and `DataCopyParams` forms; dtype of dst and src must match):
  GM->UB, GM->L1 (MTE2), UB->GM (MTE3), UB->UB (counted as ub_to_ub bytes), L1->BT (C1->C2, MTE1).
  Everything else is rejected naming both levels: GM->L0A/L0B go through `load_data`, L1->L0A/L0B
  through `load_data`, L0C results leave through `fixpipe`. UB<->L1 exists only on coupled chips
  (310P); this emulator rejects it (the 910B's AIV and AIC are separate cores).
  Nd2NzParams: GM->L1 only. data_copy_pad: GM->UB and UB->GM only.

Fidelity:
- count form: `count*sizeof` is rounded DOWN to a multiple of 32 B like hardware; the tail is not
  copied and `st[S_ROUNDED]` counts the call (the launcher reports it in checked mode).
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
  in 32 B blocks. GM->UB: UB row i starts at i*(ceil32(left*sz + block_len + right*sz) + dst_stride*32)
  bytes and holds [left padding][data][right padding][filler up to 32 B]; with is_pad=True every
  padding/filler element gets padding_value, with is_pad=False they are left as they were ("dummy
  data"). UB->GM: UB row i at i*(ceil32(block_len) + src_stride*32), GM block at i*(block_len +
  dst_stride) bytes, exactly block_len bytes written (GM stride may be negative).
- checked mode: every GM->local write goes to the stage buffer (`gm_to_local_target`) and becomes
  visible on deque; strided writes first make overlapping pending copies visible and snapshot the
  span, so bytes they skip keep their visible value.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from .. import core
from ..core import (C_MTE1, C_MTE2, C_MTE3, C_MTE_UB2UB, L1, S_LEVEL_BASE, S_ROUNDED, UB, BT,
                    check_gm, check_local, defer_enabled, flush_pending, gm_to_local_target,
                    level_name, level_of, local_offset)
from ..errors import KernelError
from ..params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, DataCopyParams,
                      Nd2NzParams)
from ..dtypes import st as _st

__all__ = ["data_copy", "data_copy_count", "data_copy_blocks", "data_copy_nd2nz",
           "data_copy_pad", "data_copy_pad_blocks"]

_count = core.count


# ---- helpers shared with cube.py ---------------------------------------------------------------

def uview(a):
    """`a` viewed as the unsigned integer type of its element width (bit-exact copies)."""
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


@overload(uview)
def _uview(a):
    size = a.dtype.size if isinstance(a.dtype, types.Record) else a.dtype.bitwidth // 8
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    return lambda a: a.view(u)


def same_dtype(a, b):
    return a.dtype == b.dtype


@overload(same_dtype)
def _same_dtype(a, b):
    r = a.dtype == b.dtype
    return lambda a, b: r


def dtype_name(a):
    """Name of a storage array's kernel dtype ("float16" for the F16 record, ...)."""
    return _name_of(a.dtype)


def _name_of(dt):
    if isinstance(dt, types.Record):
        return {"f16": "float16", "bf16": "bfloat16"}.get(next(iter(dt.fields)), str(dt))
    if isinstance(dt, np.dtype) and dt.names:
        return {"f16": "float16", "bf16": "bfloat16"}.get(dt.names[0], str(dt))
    return str(dt)


@overload(dtype_name)
def _dtype_name(a):
    s = _name_of(a.dtype)
    return lambda a: s


@njit(nogil=True, cache=True)
def in_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        raise KernelError(api + ": " + name + " must be in [" + str(lo) + ", " + str(hi)
                          + "], got " + name + "=" + str(v))


@njit(nogil=True, cache=True)
def check_aligned(ctx, api, what, a, lv, align):
    """Raise unless local tensor `a` (at level lv) starts `align`-byte aligned inside its level."""
    off = local_offset(ctx, a) - ctx[2][S_LEVEL_BASE + 2 * lv]
    if off % align != 0:
        raise KernelError(api + ": " + what + " address in " + level_name(lv) + " must be "
                          + str(align) + "-byte aligned, got byte offset=" + str(off))


@njit(nogil=True, cache=True)
def check_same_dtype(api, dst, src):
    if not same_dtype(dst, src):
        raise KernelError(api + ": dst and src must have the same dtype, got dst="
                          + dtype_name(dst) + " src=" + dtype_name(src))


@njit(nogil=True, cache=True)
def write_target(ctx, dst, n, full):
    """The array a GM->local copy writes elements [0, n) of local `dst` through.

    Checked mode: the stage twin (visible on deque). When the copy will not overwrite every element
    (`full` False: strides, padding), overlapping pending copies are made visible first and the
    span is snapshot into the stage, so skipped elements keep their visible value."""
    if not defer_enabled(ctx):
        return dst[:n]
    if not full:
        off = local_offset(ctx, dst)
        flush_pending(ctx, off, off + n * dst.itemsize)
    t = gm_to_local_target(ctx, dst[:n])
    if not full:
        uview(t)[:] = uview(dst)[:n]
    return t


@njit(nogil=True, cache=True)
def copy_path(ctx, api, dst, src):
    """(dst level, src level, counter) of a data_copy; raises for paths Ascend C does not have."""
    dl = level_of(ctx, dst)
    sl = level_of(ctx, src)
    if sl < 0 and (dl == UB or dl == L1):
        return dl, sl, C_MTE2
    if sl == UB and dl < 0:
        return dl, sl, C_MTE3
    if sl == UB and dl == UB:
        return dl, sl, C_MTE_UB2UB
    if sl == L1 and dl == BT:
        return dl, sl, C_MTE1
    hint = ""
    if sl == core.L0C:
        hint = " (L0C results leave through fixpipe)"
    elif dl == core.L0A or dl == core.L0B:
        hint = " (L0A/L0B are filled by load_data)"
    raise KernelError(api + ": path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got "
                      + level_name(sl) + "->" + level_name(dl) + hint)


@njit(nogil=True, cache=True)
def _check_sides(ctx, api, dst, src, dl, sl, d_first, s_first, n):
    """Bounds of one block of n elements at dst[d_first:], src[s_first:]."""
    if sl < 0:
        check_gm(ctx, api, src, s_first, n, False)
    else:
        check_local(ctx, api, "src", src, s_first + n)
    if dl < 0:
        check_gm(ctx, api, dst, d_first, n, True)
    else:
        check_local(ctx, api, "dst", dst, d_first + n)


# ---- data_copy ---------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def data_copy_count(ctx, dst, src, count):
    """data_copy(dst, src, count): contiguous copy, count*sizeof rounded down to 32 B."""
    api = "data_copy"
    check_same_dtype(api, dst, src)
    dl, sl, ctr = copy_path(ctx, api, dst, src)
    if count < 0:
        raise KernelError("data_copy: count must be >= 0, got count=" + str(count))
    isz = dst.itemsize
    nb = (np.int64(count) * isz) // 32 * 32
    if nb != np.int64(count) * isz:
        ctx[2][S_ROUNDED] += 1
    n = nb // isz
    if dl >= 0:
        check_aligned(ctx, api, "dst", dst, dl, 32)
    if sl >= 0:
        check_aligned(ctx, api, "src", src, sl, 32)
    _check_sides(ctx, api, dst, src, dl, sl, 0, 0, n)
    if n == 0:
        return
    if sl < 0:
        t = write_target(ctx, uview(dst), n, True)
    else:
        t = uview(dst)[:n]
    t[:] = uview(src)[:n]
    _count(ctx, ctr, nb)


@njit(nogil=True, cache=True)
def data_copy_blocks(ctx, dst, src, p):
    """data_copy(dst, src, DataCopyParams): block_count blocks of block_len*32 B, gaps in 32 B."""
    api = "data_copy"
    check_same_dtype(api, dst, src)
    bc = np.int64(p.block_count)
    bl = np.int64(p.block_len)
    sg = np.int64(p.src_stride)
    dg = np.int64(p.dst_stride)
    in_range(api, "block_count", bc, 0, 4095)
    in_range(api, "block_len", bl, 0, 65535)
    in_range(api, "src_stride", sg, 0, 65535)
    in_range(api, "dst_stride", dg, 0, 65535)
    dl, sl, ctr = copy_path(ctx, api, dst, src)
    if dl >= 0:
        check_aligned(ctx, api, "dst", dst, dl, 32)
    if sl >= 0:
        check_aligned(ctx, api, "src", src, sl, 32)
    if bc == 0 or bl == 0:
        return
    isz = dst.itemsize
    ne = bl * 32 // isz
    sstep = (bl + sg) * 32 // isz
    dstep = (bl + dg) * 32 // isz
    _check_sides(ctx, api, dst, src, dl, sl, (bc - 1) * dstep, (bc - 1) * sstep, ne)
    span = (bc - 1) * dstep + ne
    if sl < 0:
        t = write_target(ctx, uview(dst), span, dg == 0)
    else:
        t = uview(dst)[:span]
    s = uview(src)
    for i in range(bc):
        t[i * dstep:i * dstep + ne] = s[i * sstep:i * sstep + ne]
    _count(ctx, ctr, bc * bl * 32)


@njit(nogil=True, cache=True)
def data_copy_nd2nz(ctx, dst, src, p):
    """data_copy(dst L1, src GM, Nd2NzParams): ND matrices to the NZ fractal layout (see module doc)."""
    api = "data_copy"
    check_same_dtype(api, dst, src)
    dl = level_of(ctx, dst)
    sl = level_of(ctx, src)
    if not (sl < 0 and dl == L1):
        raise KernelError("data_copy: path of an Nd2NzParams copy must be GM->L1, got "
                          + level_name(sl) + "->" + level_name(dl))
    check_aligned(ctx, api, "dst", dst, dl, 32)
    nd = np.int64(p.nd_num)
    nv = np.int64(p.n_value)
    dv = np.int64(p.d_value)
    sms = np.int64(p.src_nd_matrix_stride)
    sdv = np.int64(p.src_d_value)
    c0s = np.int64(p.dst_nz_c0_stride)
    ns = np.int64(p.dst_nz_n_stride)
    dms = np.int64(p.dst_nz_matrix_stride)
    in_range(api, "nd_num", nd, 0, 4095)
    in_range(api, "n_value", nv, 0, 16384)
    in_range(api, "d_value", dv, 0, 65535)
    in_range(api, "src_nd_matrix_stride", sms, 0, 65535)
    in_range(api, "dst_nz_matrix_stride", dms, 0, 65535)
    if nd == 0 or nv == 0 or dv == 0:
        return
    in_range(api, "src_d_value", sdv, 1, 65535)
    in_range(api, "dst_nz_c0_stride", c0s, 1, 16384)
    in_range(api, "dst_nz_n_stride", ns, 1, 16384)
    isz = dst.itemsize
    c0 = 32 // isz
    nstrip = (dv + c0 - 1) // c0
    wlast = dv - (nstrip - 1) * c0
    span = (nd - 1) * dms + (nstrip - 1) * c0s * c0 + (nv - 1) * ns * c0 + wlast
    check_local(ctx, api, "dst", dst, span)
    for m in range(nd):
        check_gm(ctx, api, src, m * sms + (nv - 1) * sdv, dv, False)
    t = write_target(ctx, uview(dst), span, False)
    s = uview(src)
    for m in range(nd):
        for j in range(nstrip):
            w = c0 if j < nstrip - 1 else wlast
            sb = m * sms + j * c0
            db = m * dms + j * c0s * c0
            for r in range(nv):
                so = sb + r * sdv
                do = db + r * ns * c0
                for e in range(w):
                    t[do + e] = s[so + e]
    _count(ctx, C_MTE2, nd * nv * dv * isz)


def data_copy(ctx, dst, src, arg):
    """Mirrors Ascend C `DataCopy`: the third argument (count | DataCopyParams | Nd2NzParams)
    picks the form. Python dispatcher; njit code reaches the same forms through an overload."""
    if isinstance(arg, DataCopyParams):
        return data_copy_blocks(ctx, dst, src, arg)
    if isinstance(arg, Nd2NzParams):
        return data_copy_nd2nz(ctx, dst, src, arg)
    if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
        return data_copy_count(ctx, dst, src, int(arg))
    raise TypeError("data_copy: third argument must be a count, DataCopyParams or Nd2NzParams, "
                    f"got {type(arg).__name__}={arg!r}")


def _params_class(t):
    if isinstance(t, (types.NamedTuple, types.NamedUniTuple)):
        return t.instance_class
    return None


@overload(data_copy)
def _data_copy(ctx, dst, src, arg):
    if isinstance(arg, types.Integer):
        return lambda ctx, dst, src, arg: data_copy_count(ctx, dst, src, arg)
    cls = _params_class(arg)
    if cls is DataCopyParams:
        return lambda ctx, dst, src, arg: data_copy_blocks(ctx, dst, src, arg)
    if cls is Nd2NzParams:
        return lambda ctx, dst, src, arg: data_copy_nd2nz(ctx, dst, src, arg)
    raise TypingError("data_copy: third argument must be a count, DataCopyParams or Nd2NzParams, "
                      f"got {arg}")


# ---- data_copy_pad -----------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def data_copy_pad_blocks(ctx, dst, src, bc, bl, sstride, dstride, bl_max,
                         is_pad, left, right, pad_value):
    """data_copy_pad with its params unpacked (see module doc); bl_max is the block_len limit."""
    api = "data_copy_pad"
    check_same_dtype(api, dst, src)
    dl = level_of(ctx, dst)
    sl = level_of(ctx, src)
    gm2ub = sl < 0 and dl == UB
    if not (gm2ub or (sl == UB and dl < 0)):
        raise KernelError("data_copy_pad: path must be GM->UB or UB->GM, got "
                          + level_name(sl) + "->" + level_name(dl))
    bc = np.int64(bc)
    bl = np.int64(bl)
    sstride = np.int64(sstride)
    dstride = np.int64(dstride)
    isz = dst.itemsize
    in_range(api, "block_count", bc, 0, 4095)
    in_range(api, "block_len", bl, 0, bl_max)
    if bl % isz != 0:
        raise KernelError("data_copy_pad: block_len must be a multiple of sizeof(dtype)="
                          + str(isz) + " bytes, got block_len=" + str(bl))
    ub_stride = dstride if gm2ub else sstride
    gm_stride = sstride if gm2ub else dstride
    in_range(api, "dst_stride" if gm2ub else "src_stride", ub_stride, 0, 0xFFFFFFFF)
    if gm_stride % isz != 0:
        raise KernelError("data_copy_pad: GM stride must be a multiple of sizeof(dtype)="
                          + str(isz) + " bytes, got " + ("src_stride=" if gm2ub else "dst_stride=")
                          + str(gm_stride))
    left = np.int64(left)
    right = np.int64(right)
    if not gm2ub and (is_pad or left != 0 or right != 0):
        raise KernelError("data_copy_pad: pad_params must be omitted (or empty) for a UB->GM "
                          "copy, got is_pad=" + ("True" if is_pad else "False") + " left_padding="
                          + str(left)
                          + " right_padding=" + str(right))
    if left < 0 or left * isz > 32:
        raise KernelError("data_copy_pad: left_padding must be in [0, " + str(32 // isz)
                          + "] elements (at most 32 bytes), got left_padding=" + str(left))
    if right < 0 or right * isz > 32:
        raise KernelError("data_copy_pad: right_padding must be in [0, " + str(32 // isz)
                          + "] elements (at most 32 bytes), got right_padding=" + str(right))
    check_aligned(ctx, api, "dst" if gm2ub else "src", dst if gm2ub else src, UB, 32)
    if bc == 0:
        return
    ne = bl // isz
    row = (left * isz + bl + right * isz + 31) // 32 * 32 // isz   # UB row, elements
    ustep = row + ub_stride * 32 // isz
    gstep = (bl + gm_stride) // isz
    for i in range(bc):
        if gm2ub:
            check_gm(ctx, api, src, i * gstep, ne, False)
        else:
            check_gm(ctx, api, dst, i * gstep, ne, True)
    span = (bc - 1) * ustep + row
    if gm2ub:
        check_local(ctx, api, "dst", dst, span)
        t = write_target(ctx, dst, span, False)
        tu = uview(t)
        s = uview(src)
        for i in range(bc):
            ub = i * ustep
            tu[ub + left:ub + left + ne] = s[i * gstep:i * gstep + ne]
            if is_pad:
                for e in range(left):
                    _st(t, ub + e, pad_value)
                for e in range(left + ne, row):
                    _st(t, ub + e, pad_value)
        _count(ctx, C_MTE2, bc * bl)
    else:
        row = (bl + 31) // 32 * 32 // isz
        ustep = row + ub_stride * 32 // isz
        check_local(ctx, api, "src", src, (bc - 1) * ustep + ne)
        du = uview(dst)
        s = uview(src)
        for i in range(bc):
            du[i * gstep:i * gstep + ne] = s[i * ustep:i * ustep + ne]
        _count(ctx, C_MTE3, bc * bl)


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
    return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                c.dst_stride, lim, bool(p.is_pad), p.left_padding,
                                p.right_padding, p.padding_value)


@overload(data_copy_pad)
def _data_copy_pad(ctx, dst, src, copy_params, pad_params=None):
    cls = _params_class(copy_params)
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
    if _params_class(pad_params) in (DataCopyPadExtParams, DataCopyPadParams):
        def impl(ctx, dst, src, copy_params, pad_params=None):
            c, p = copy_params, pad_params
            return data_copy_pad_blocks(ctx, dst, src, c.block_count, c.block_len, c.src_stride,
                                        c.dst_stride, lim, p.is_pad != 0, p.left_padding,
                                        p.right_padding, p.padding_value)
        return impl
    raise TypingError("data_copy_pad: pad_params must be None, DataCopyPadExtParams or "
                      f"DataCopyPadParams, got {pad_params}")
