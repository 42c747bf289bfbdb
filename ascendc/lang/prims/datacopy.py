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

Compile cost: each public primitive is a thin typed wrapper (unpacks params, takes byte views,
names the dtypes) over an implementation on uint8 views plus the element size, so the heavy code
(checks, messages, loops) compiles once, not once per dtype and params type.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from .. import core
from ..core import (BT, C_MTE1, C_MTE2, C_MTE3, C_MTE_UB2UB, L1, S_LEVEL_BASE, S_ROUNDED, UB,
                    defer_enabled, flush_pending, gm_to_local_target, level_of, local_offset)
from ..dtypes import st as _st
from ..core import _gm_where
from ..errors import GMReadError, GMWriteError, KernelError
from ..params import (DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, DataCopyParams,
                      Nd2NzParams)

__all__ = ["data_copy", "data_copy_count", "data_copy_blocks", "data_copy_nd2nz",
           "data_copy_pad", "data_copy_pad_blocks"]

_count = core.count


# ---- errors: njit code raises with the raw parts, Python joins them ----------------------------
# (string building inside njit code costs seconds of compile time in every kernel that links it)

class _Joined:
    def __init__(self, *parts):
        super().__init__("".join(str(p) for p in parts))


class RuleError(_Joined, KernelError):
    """KernelError whose message is joined from the parts it was raised with."""


class GMRead(_Joined, GMReadError):
    """GMReadError whose message is joined from the parts it was raised with."""


class GMWrite(_Joined, GMWriteError):
    """GMWriteError whose message is joined from the parts it was raised with."""


LEVELS = ("UB", "L1", "L0A", "L0B", "L0C", "BT")


@njit(nogil=True, cache=True)
def lname(lv):
    """Level name without string building (-1 is GM)."""
    return "GM" if lv < 0 else LEVELS[lv]


# ---- helpers (also used by cube.py) ------------------------------------------------------------

def same_dtype(a, b):
    return a.dtype == b.dtype


@overload(same_dtype)
def _same_dtype(a, b):
    r = a.dtype == b.dtype
    return lambda a, b: r


def _name_of(dt):
    if isinstance(dt, types.Record):
        return {"f16": "float16", "bf16": "bfloat16"}.get(next(iter(dt.fields)), str(dt))
    if isinstance(dt, np.dtype) and dt.names:
        return {"f16": "float16", "bf16": "bfloat16"}.get(dt.names[0], str(dt))
    return str(dt)


def dtype_name(a):
    """Name of a storage array's kernel dtype ("float16" for the F16 record, ...)."""
    return _name_of(a.dtype)


@overload(dtype_name)
def _dtype_name(a):
    s = _name_of(a.dtype)
    return lambda a: s


def pair_info(dst, src):
    """(same dtype?, dst dtype name, src dtype name), as compile-time constants in njit code."""
    return dst.dtype == src.dtype, _name_of(dst.dtype), _name_of(src.dtype)


@overload(pair_info)
def _pair_info(dst, src):
    same, dn, sn = dst.dtype == src.dtype, _name_of(dst.dtype), _name_of(src.dtype)
    return lambda dst, src: (same, dn, sn)


@njit(nogil=True, cache=True)
def in_range(api, name, v, lo, hi):
    if v < lo or v > hi:
        raise RuleError(api, ": ", name, " must be in [", lo, ", ", hi, "], got ", name, "=", v)


@njit(nogil=True, cache=True)
def check_dtypes(api, info):
    """Raise unless dst and src have the same dtype; info = pair_info(dst, src)."""
    same, dname, sname = info
    if not same:
        raise RuleError(api, ": dst and src must have the same dtype, got dst=", dname,
                        " src=", sname)


@njit(nogil=True, cache=True)
def check_aligned(ctx, api, what, b, lv, align):
    """Raise unless local byte view `b` (at level lv) starts `align`-byte aligned in its level."""
    off = local_offset(ctx, b) - ctx[2][S_LEVEL_BASE + 2 * lv]
    if off % align != 0:
        raise RuleError(api, ": ", what, " address in ", lname(lv), " must be ", align,
                        "-byte aligned, got byte offset=", off)


@njit(nogil=True, cache=True)
def gm_ok(ctx, api, b, isz, first, n, write):
    """Elements [first, first+n) of the GM tensor whose bytes are `b` lie inside it; else the
    error of core.check_gm (same message, built in Python)."""
    if first >= 0 and n >= 0 and (first + n) * isz <= b.size:
        return
    k, boff, nbytes = _gm_where(ctx, np.int64(b.ctypes.data))
    lo = boff // isz + first
    if write:
        raise GMWrite(api, ": GM write must stay inside argument #", k, " (", nbytes // isz,
                      " elements), got elements [", lo, ", ", lo + n, ")")
    raise GMRead(api, ": GM read must stay inside argument #", k, " (", nbytes // isz,
                 " elements), got elements [", lo, ", ", lo + n, ")")


@njit(nogil=True, cache=True)
def local_ok(ctx, api, what, b, isz, n):
    """The local tensor whose bytes are `b` holds n elements; else core.check_local's error."""
    if n >= 0 and n * isz <= b.size:
        return
    raise RuleError(api, ": ", what, " must hold count elements, got count=", n, " for a tensor of ",
                    b.size // isz, " elements in ", lname(level_of(ctx, b)))


@njit(nogil=True, cache=True)
def write_target(ctx, b, nbytes, full):
    """The bytes a GM->local copy writes for bytes [0, nbytes) of local `b`.

    Checked mode: the stage twin (visible on deque). When the copy will not overwrite every byte
    (`full` False: strides, padding), overlapping pending copies are made visible first and the
    span is snapshot into the stage, so skipped bytes keep their visible value."""
    if not defer_enabled(ctx):
        return b[:nbytes]
    if not full:
        off = local_offset(ctx, b)
        flush_pending(ctx, off, off + nbytes)
    t = gm_to_local_target(ctx, b[:nbytes])
    if not full:
        t[:] = b[:nbytes]
    return t


@njit(nogil=True, cache=True)
def copy_path(ctx, api, d, s):
    """(dst level, src level, counter) of a data_copy; raises for paths Ascend C does not have."""
    dl = level_of(ctx, d)
    sl = level_of(ctx, s)
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
    raise RuleError(api, ": path must be one of GM->UB, GM->L1, UB->GM, UB->UB, L1->BT, got ",
                    lname(sl), "->", lname(dl), hint)


@njit(nogil=True, cache=True)
def _sides(ctx, api, d, s, isz, dl, sl, d_first, s_first, n):
    """Alignment of local sides and bounds of one block of n elements at d[d_first:], s[s_first:]."""
    if dl >= 0:
        check_aligned(ctx, api, "dst", d, dl, 32)
    if sl >= 0:
        check_aligned(ctx, api, "src", s, sl, 32)
    if sl < 0:
        gm_ok(ctx, api, s, isz, s_first, n, False)
    else:
        local_ok(ctx, api, "src", s, isz, s_first + n)
    if dl < 0:
        gm_ok(ctx, api, d, isz, d_first, n, True)
    else:
        local_ok(ctx, api, "dst", d, isz, d_first + n)


# ---- data_copy ---------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def _count_impl(ctx, d, s, isz, count):
    api = "data_copy"
    dl, sl, ctr = copy_path(ctx, api, d, s)
    if count < 0:
        raise RuleError("data_copy: count must be >= 0, got count=", count)
    nb = count * isz // 32 * 32
    if nb != count * isz:
        ctx[2][S_ROUNDED] += 1
    _sides(ctx, api, d, s, isz, dl, sl, 0, 0, nb // isz)
    if nb == 0:
        return
    t = write_target(ctx, d, nb, True) if sl < 0 else d[:nb]
    t[:] = s[:nb]
    _count(ctx, ctr, nb)


@njit(nogil=True, cache=True)
def data_copy_count(ctx, dst, src, count):
    """data_copy(dst, src, count): contiguous copy, count*sizeof rounded down to 32 B."""
    check_dtypes("data_copy", pair_info(dst, src))
    _count_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize, np.int64(count))


@njit(nogil=True, cache=True)
def _blocks_impl(ctx, d, s, isz, bc, bl, sg, dg):
    api = "data_copy"
    in_range(api, "block_count", bc, 0, 4095)
    in_range(api, "block_len", bl, 0, 65535)
    in_range(api, "src_stride", sg, 0, 65535)
    in_range(api, "dst_stride", dg, 0, 65535)
    dl, sl, ctr = copy_path(ctx, api, d, s)
    if bc == 0 or bl == 0:
        _sides(ctx, api, d, s, isz, dl, sl, 0, 0, 0)
        return
    nb = bl * 32
    sstep = (bl + sg) * 32
    dstep = (bl + dg) * 32
    _sides(ctx, api, d, s, isz, dl, sl, (bc - 1) * dstep // isz, (bc - 1) * sstep // isz, nb // isz)
    span = (bc - 1) * dstep + nb
    t = write_target(ctx, d, span, dg == 0) if sl < 0 else d[:span]
    for i in range(bc):
        t[i * dstep:i * dstep + nb] = s[i * sstep:i * sstep + nb]
    _count(ctx, ctr, bc * nb)


@njit(nogil=True, cache=True)
def data_copy_blocks(ctx, dst, src, p):
    """data_copy(dst, src, DataCopyParams): block_count blocks of block_len*32 B, gaps in 32 B."""
    check_dtypes("data_copy", pair_info(dst, src))
    _blocks_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize,
                 np.int64(p.block_count), np.int64(p.block_len), np.int64(p.src_stride),
                 np.int64(p.dst_stride))


@njit(nogil=True, cache=True)
def _nd2nz_loop(t, s, nd, nv, dv, sms, sdv, c0s, ns, dms, c0):
    """Element copies of an Nd2Nz (t, s: same-width unsigned views; indices in elements)."""
    nstrip = (dv + c0 - 1) // c0
    for m in range(nd):
        for j in range(nstrip):
            w = min(c0, dv - j * c0)
            sb = m * sms + j * c0
            db = m * dms + j * c0s * c0
            for r in range(nv):
                so = sb + r * sdv
                do = db + r * ns * c0
                for e in range(w):
                    t[do + e] = s[so + e]


@njit(nogil=True, cache=True)
def _nd2nz_impl(ctx, d, s, isz, nd, nv, dv, sms, sdv, c0s, ns, dms):
    api = "data_copy"
    dl = level_of(ctx, d)
    sl = level_of(ctx, s)
    if not (sl < 0 and dl == L1):
        raise RuleError("data_copy: path of an Nd2NzParams copy must be GM->L1, got ", lname(sl),
                        "->", lname(dl))
    check_aligned(ctx, api, "dst", d, dl, 32)
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
    c0 = 32 // isz
    nstrip = (dv + c0 - 1) // c0
    span = (nd - 1) * dms + (nstrip - 1) * c0s * c0 + (nv - 1) * ns * c0 + dv - (nstrip - 1) * c0
    local_ok(ctx, api, "dst", d, isz, span)
    for m in range(nd):
        gm_ok(ctx, api, s, isz, m * sms + (nv - 1) * sdv, dv, False)
    t = write_target(ctx, d, span * isz, False)
    sv = s[:((nd - 1) * sms + (nv - 1) * sdv + dv) * isz]
    if isz == 1:
        _nd2nz_loop(t, sv, nd, nv, dv, sms, sdv, c0s, ns, dms, c0)
    elif isz == 2:
        _nd2nz_loop(t.view(np.uint16), sv.view(np.uint16), nd, nv, dv, sms, sdv, c0s, ns, dms, c0)
    elif isz == 4:
        _nd2nz_loop(t.view(np.uint32), sv.view(np.uint32), nd, nv, dv, sms, sdv, c0s, ns, dms, c0)
    else:
        _nd2nz_loop(t.view(np.uint64), sv.view(np.uint64), nd, nv, dv, sms, sdv, c0s, ns, dms, c0)
    _count(ctx, C_MTE2, nd * nv * dv * isz)


@njit(nogil=True, cache=True)
def data_copy_nd2nz(ctx, dst, src, p):
    """data_copy(dst L1, src GM, Nd2NzParams): ND matrices to the NZ fractal layout (module doc)."""
    check_dtypes("data_copy", pair_info(dst, src))
    _nd2nz_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize,
                np.int64(p.nd_num), np.int64(p.n_value), np.int64(p.d_value),
                np.int64(p.src_nd_matrix_stride), np.int64(p.src_d_value),
                np.int64(p.dst_nz_c0_stride), np.int64(p.dst_nz_n_stride),
                np.int64(p.dst_nz_matrix_stride))


def py_bytes(api, dst, src):
    """(dst bytes, src bytes, sizeof) for the Python dispatchers, which call the byte-level
    implementations directly (no typed wrapper to compile in interpret mode)."""
    if dst.dtype != src.dtype:
        raise RuleError(api, ": dst and src must have the same dtype, got dst=",
                        _name_of(dst.dtype), " src=", _name_of(src.dtype))
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

@njit(nogil=True, cache=True)
def _pad_impl(ctx, d, s, isz, bc, bl, sstride, dstride, bl_max, is_pad, left, right, pad_bits):
    api = "data_copy_pad"
    dl = level_of(ctx, d)
    sl = level_of(ctx, s)
    gm2ub = sl < 0 and dl == UB
    if not (gm2ub or (sl == UB and dl < 0)):
        raise RuleError("data_copy_pad: path must be GM->UB or UB->GM, got ", lname(sl), "->",
                        lname(dl))
    in_range(api, "block_count", bc, 0, 4095)
    in_range(api, "block_len", bl, 0, bl_max)
    if bl % isz != 0:
        raise RuleError("data_copy_pad: block_len must be a multiple of sizeof(dtype)=", isz,
                        " bytes, got block_len=", bl)
    ub_stride = dstride if gm2ub else sstride
    gm_stride = sstride if gm2ub else dstride
    in_range(api, "dst_stride" if gm2ub else "src_stride", ub_stride, 0, 0xFFFFFFFF)
    if gm_stride % isz != 0:
        raise RuleError("data_copy_pad: GM stride must be a multiple of sizeof(dtype)=", isz,
                        " bytes, got ", "src_stride=" if gm2ub else "dst_stride=", gm_stride)
    if not gm2ub and (is_pad or left != 0 or right != 0):
        raise RuleError("data_copy_pad: pad_params must be omitted (or empty) for a UB->GM "
                        "copy, got is_pad=", is_pad, " left_padding=", left, " right_padding=",
                        right)
    if left < 0 or left * isz > 32:
        raise RuleError("data_copy_pad: left_padding must be in [0, ", 32 // isz,
                        "] elements (at most 32 bytes), got left_padding=", left)
    if right < 0 or right * isz > 32:
        raise RuleError("data_copy_pad: right_padding must be in [0, ", 32 // isz,
                        "] elements (at most 32 bytes), got right_padding=", right)
    check_aligned(ctx, api, "dst" if gm2ub else "src", d if gm2ub else s, UB, 32)
    if bc == 0:
        return
    lb = left * isz
    row = (lb + bl + right * isz + 31) // 32 * 32 if gm2ub else (bl + 31) // 32 * 32
    ustep = row + ub_stride * 32
    gstep = bl + gm_stride
    for i in range(bc):
        gm_ok(ctx, api, s if gm2ub else d, isz, i * gstep // isz, bl // isz, not gm2ub)
    if gm2ub:
        span = (bc - 1) * ustep + row
        local_ok(ctx, api, "dst", d, isz, span // isz)
        t = write_target(ctx, d, span, False)
        for i in range(bc):
            ub = i * ustep
            t[ub + lb:ub + lb + bl] = s[i * gstep:i * gstep + bl]
            if is_pad:
                for q in range(ub, ub + row):
                    if q < ub + lb or q >= ub + lb + bl:
                        t[q] = np.uint8((pad_bits >> np.uint64(8 * ((q - ub) % isz))) & 0xFF)
        _count(ctx, C_MTE2, bc * bl)
    else:
        local_ok(ctx, api, "src", s, isz, ((bc - 1) * ustep + bl) // isz)
        for i in range(bc):
            d[i * gstep:i * gstep + bl] = s[i * ustep:i * ustep + bl]
        _count(ctx, C_MTE3, bc * bl)


@njit(nogil=True, cache=True)
def _pad_bits(dst, value):
    """The bit pattern of `value` stored as one element of dst's dtype."""
    tmp = np.empty_like(dst[:1])
    _st(tmp, 0, value)
    b = tmp.view(np.uint8)
    bits = np.uint64(0)
    for q in range(b.size):
        bits |= np.uint64(b[q]) << np.uint64(8 * q)
    return bits


@njit(nogil=True, cache=True)
def data_copy_pad_blocks(ctx, dst, src, bc, bl, sstride, dstride, bl_max,
                         is_pad, left, right, pad_value):
    """data_copy_pad with its params unpacked (see module doc); bl_max is the block_len limit."""
    check_dtypes("data_copy_pad", pair_info(dst, src))
    _pad_impl(ctx, dst.view(np.uint8), src.view(np.uint8), dst.itemsize, np.int64(bc),
              np.int64(bl), np.int64(sstride), np.int64(dstride), np.int64(bl_max), is_pad != 0,
              np.int64(left), np.int64(right), _pad_bits(dst, pad_value) if is_pad else np.uint64(0))


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
        dt = _logical(dst.dtype)
        with np.errstate(all="ignore"):
            v = np.asarray(p.padding_value).astype(dt).reshape(1)
        bits = int.from_bytes(v.tobytes(), "little")
    i = int
    return _pad_impl(ctx, d, s, isz, i(c.block_count), i(c.block_len), i(c.src_stride),
                     i(c.dst_stride), lim, bool(p.is_pad), i(p.left_padding), i(p.right_padding),
                     np.uint64(bits))


def _logical(dt):
    """The numpy dtype a storage dtype stands for (float16 / bfloat16 records)."""
    from ..dtypes import from_numpy
    return from_numpy(dt).numpy


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
