"""`gather_mask`: Ascend C's GatherMask (vector unit), pyasc's `asc.gather_mask`.

pyasc: python/asc/language/basic/vec_gather_mask.py `gather_mask(dst, src0, src1_pattern,
reduce_mode, mask, params, gather_mask_mode=GatherMaskMode.DEFAULT) -> int` with
`GatherMaskParams(src0_block_stride=1, repeat_times=1, src0_repeat_stride=0,
src1_repeat_stride=0)`. What it does (Ascend C "GatherMask"): the set bits of a gather mask pick
elements of src0, which are written to dst back to back (no gaps, across repeats too); the
result (rsvdCnt) is how many were written.

- Elements: 2-byte (float16, bfloat16, int16, uint16) or 4-byte (float32, int32, uint32) types;
  dst and src0 one dtype; the move is bit-exact.
- A repeat covers 256 bytes of src0 (128 2-byte or 64 4-byte elements) as 8 data blocks of 32
  bytes: block b of repeat r starts at src0 + (r * src0_repeat_stride + b * src0_block_stride)
  blocks.
- src1_pattern: an int in [1, 7] is a built-in pattern, the same for every repeat (1: even
  elements, 2: odd ones, 3..6: the 1st..4th of every 4, 7: all); a UB tensor (uint16 for 2-byte
  elements, uint32 for 4-byte ones) is a user pattern: bit i (LSB first, words in order) picks
  element i of the repeat, the bits of one repeat consumed consecutively, repeat r's pattern
  starting r * src1_repeat_stride 32-byte blocks after the tensor's start.
- reduce_mode False (normal mode): `repeat_times` repeats of whole 256-byte repeats; mask is not
  used. reduce_mode True (counter mode): `mask` elements in all (A2/A3's rule: repeat_times is
  not used; the last repeat covers the remainder).
- Checked: dst, src0 and the pattern tensor in UB (VECIN/VECCALC/VECOUT), dst and src0 32-byte
  aligned, dtypes as above, the params' ranges (uint8 / uint16 fields, repeat_times <= 255), a
  counter-mode mask in [1, 2**32 - 1], every element read inside src0 / the pattern tensor and
  every element written inside dst.
- NPU model: one vector (V pipe) instruction of `repeats` 256-byte repeats (rt/npu/model.py).
"""
from __future__ import annotations

import numpy as np
from numba.extending import overload

from .. import core
from ..core import prim, level_of, local_offset
from ..errors import FAULT, fault, KernelError
from .. import trace
from .borrow import borrowed
from .vecbase import check_range
from ..visibility import vector_reads

__all__ = ["gather_mask", "gather_mask_typed"]

_OP = trace.op("gather_mask")
_API = "gather_mask"
_NAMES = ("dst", "src0", "src1_pattern")


@prim
def _fail(what, a, b):
    if what == 0:
        fault("gather_mask: dst and src0 must have one 2-byte or 4-byte dtype, got element "
              "sizes dst={} src0={}", a, b)
        raise KernelError(FAULT)
    elif what == 1:
        fault("gather_mask: src1_pattern must be uint16 for 2-byte elements and uint32 for "
              "4-byte ones, got a pattern of element size {} for elements of size {}", a, b)
        raise KernelError(FAULT)
    elif what == 2:
        fault("gather_mask: a built-in src1_pattern must be in [1, 7], got src1_pattern={}", a)
        raise KernelError(FAULT)
    elif what == 3:
        fault("gather_mask: {} must start 32-byte aligned in UB, got byte offset={}",
              _NAMES[a], b)
        raise KernelError(FAULT)
    elif what == 4:
        fault("gather_mask: {} must hold every element the repeats touch, got index={}",
              _NAMES[a], b)
        raise KernelError(FAULT)
    elif what == 5:
        fault("gather_mask: mask must be in [1, 4294967295] in counter mode (reduce_mode=True), "
              "got mask={}", a)
        raise KernelError(FAULT)
    else:
        fault("gather_mask: {} must be a local tensor in UB (VECIN, VECCALC, VECOUT), got a "
              "tensor in {:level}", _NAMES[a], b)
        raise KernelError(FAULT)


@prim
def _lane_index(r, j, per_blk, blk_stride, rep_stride):
    """Element index in src0 of lane j of repeat r."""
    return (r * rep_stride + (j // per_blk) * blk_stride) * per_blk + j % per_blk


_LOW_BIT = np.array([(b & -b).bit_length() - 1 for b in range(256)], np.int64)  # [0]: unused


@prim
def _gather(d, s, pat, code, total, lanes, per_blk, blk_stride, rep_stride, pat_stride, nd):
    """The picks of every repeat into d (element views); the count, or -1 - index of the first
    pick past d's end (nothing past it is written)."""
    reps = (total + lanes - 1) // lanes
    cnt = 0
    dense = blk_stride == 1 and rep_stride * per_blk == lanes
    step = 1
    first = 0
    if code == 1 or code == 2:
        step = 2
        first = code - 1
    elif code >= 3 and code <= 6:
        step = 4
        first = code - 3
    for r in range(reps):
        nl = min(lanes, total - r * lanes)
        rb = r * rep_stride * per_blk
        if code != 0:
            n_r = (nl - first + step - 1) // step if nl > first else 0
            if cnt + n_r > nd:
                return -1 - nd
            if dense:
                for q in range(n_r):
                    d[cnt + q] = s[rb + first + q * step]
            else:
                for q in range(n_r):
                    j = first + q * step
                    d[cnt + q] = s[rb + (j // per_blk) * blk_stride * per_blk + j % per_blk]
            cnt += n_r
        else:
            pbase = r * pat_stride * 32
            for j0 in range(0, nl, 8):      # a pattern byte at a time; none set: no lane
                bits = pat[pbase + (j0 >> 3)]
                if bits == 0:
                    continue
                if nl - j0 < 8:                 # the last byte: lanes past nl do not count
                    bits &= np.uint8((1 << (nl - j0)) - 1)
                while bits != 0:                # its set bits, lowest first
                    j = j0 + _LOW_BIT[bits]
                    bits &= bits - np.uint8(1)
                    if cnt >= nd:
                        return -1 - cnt
                    if blk_stride == 1:         # blocks back to back: lane j is element j
                        d[cnt] = s[rb + j]
                    else:
                        d[cnt] = s[rb + (j // per_blk) * blk_stride * per_blk + j % per_blk]
                    cnt += 1
    return cnt


@prim
def _gm_impl(ctx, d, s, pat, eb, code, reduce_mode, mask, blk_stride, reps, rep_stride,
             pat_stride):
    """Byte-level GatherMask (see the module doc): d, s and pat are uint8 views, eb the
    element size; returns the count written."""
    for i in range(3):
        a = d if i == 0 else (s if i == 1 else pat)
        if i == 2 and code != 0:
            break
        lv = level_of(ctx, a)
        if lv != core.UB:
            _fail(6, i, lv)
        if i < 2 and local_offset(ctx, a) % 32 != 0:
            _fail(3, i, local_offset(ctx, a))
    check_range(_API, "params.src0_block_stride", blk_stride, 0, 255)
    check_range(_API, "params.repeat_times", reps, 0, 255)
    check_range(_API, "params.src0_repeat_stride", rep_stride, 0, 65535)
    check_range(_API, "params.src1_repeat_stride", pat_stride, 0, 255)
    lanes = 256 // eb
    per_blk = 32 // eb
    total = reps * lanes
    if reduce_mode:
        if mask < 1 or mask > 4294967295:
            _fail(5, mask, 0)
        total = mask
        reps = (total + lanes - 1) // lanes
    if reps == 0:
        return np.int64(0)
    # the extent read (every lane of a repeat, picked or not), checked before anything moves:
    # indices grow with r and j, so the last lane of the last repeat and of the one before
    nl = total - (reps - 1) * lanes
    far = _lane_index(reps - 1, nl - 1, per_blk, blk_stride, rep_stride) + 1
    if reps > 1:
        far = max(far, _lane_index(reps - 2, lanes - 1, per_blk, blk_stride, rep_stride) + 1)
    if far * eb > s.size:
        _fail(4, 1, far - 1)
    if code == 0:
        pfar = (reps - 1) * pat_stride * 32 + (lanes + 7) // 8
        if pfar > pat.size:
            _fail(4, 2, (pfar + eb - 1) // eb - 1)
    vector_reads(ctx, _API, "src0", s[:far * eb], far)
    if code == 0:
        vector_reads(ctx, _API, "src1_pattern", pat, pfar)
    nd = d.size // eb
    if eb == 4:
        cnt = _gather(d.view(np.uint32), s.view(np.uint32), pat, code, total, lanes, per_blk,
                      blk_stride, rep_stride, pat_stride, nd)
    else:
        cnt = _gather(d.view(np.uint16), s.view(np.uint16), pat, code, total, lanes, per_blk,
                      blk_stride, rep_stride, pat_stride, nd)
    if cnt < 0:
        _fail(4, 0, -1 - cnt)
    if cnt > 0:
        vector_reads(ctx, _API, "dst", d[:cnt * eb], cnt * eb)
    core.count(ctx, core.C_VEC_OPS, reps * lanes)
    trace.vec(ctx, _OP, eb, reps, True)
    # the sanitizer's rows: src0 over every lane read (not judged by initcheck: unpicked lanes,
    # e.g. a row's 32-byte padding, are read and discarded), the pattern, the packed dst
    trace.read_unchecked(ctx, _OP, np.int64(s.ctypes.data), far * eb)
    if code == 0:
        trace.tensor_access(ctx, _OP, pat, pfar, 0)
    trace.tensor_access(ctx, _OP, d, cnt * eb, 1)
    return np.int64(cnt)


@prim
def gather_mask_typed(ctx, dst, src0, pat, code, reduce_mode, mask, params):
    """gather_mask for njit callers (the overload of `gather_mask` calls it); `pat` is the
    pattern tensor's bytes (empty for a built-in pattern `code`)."""
    if dst.itemsize != src0.itemsize or (dst.itemsize != 2 and dst.itemsize != 4):
        _fail(0, dst.itemsize, src0.itemsize)
    return _gm_impl(ctx, dst.view(np.uint8), src0.view(np.uint8), pat, dst.itemsize, code,
                    reduce_mode, np.int64(mask), np.int64(params.src0_block_stride),
                    np.int64(params.repeat_times), np.int64(params.src0_repeat_stride),
                    np.int64(params.src1_repeat_stride))


@prim
def _user_bytes(dst, pattern):
    if pattern.itemsize != dst.itemsize:
        _fail(1, pattern.itemsize, dst.itemsize)
    return pattern.view(np.uint8)


@prim
def _builtin_code(code):
    if code < 1 or code > 7:
        _fail(2, code, 0)
    return np.int64(code)


def gather_mask(ctx, dst, src0, src1_pattern, reduce_mode, mask, params, gather_mask_mode=0):
    """Mirrors Ascend C `GatherMask` (see the module doc): returns rsvdCnt. Python entry; njit
    code reaches `gather_mask_typed` through the overload."""
    if dst.dtype != src0.dtype:
        _fail(0, dst.dtype.itemsize, src0.dtype.itemsize * 1000)
    if isinstance(src1_pattern, np.ndarray):
        pat, code = _user_bytes(dst, src1_pattern), 0
    else:
        pat, code = np.zeros(0, np.uint8), int(_builtin_code(int(src1_pattern)))
    return int(gather_mask_typed(ctx, dst, src0, pat, code, bool(reduce_mode), int(mask),
                                 params))


@overload(gather_mask)
def _gather_mask_ov(ctx, dst, src0, src1_pattern, reduce_mode, mask, params,
                    gather_mask_mode=0):
    from numba import types
    if isinstance(src1_pattern, types.Array):
        def impl(ctx, dst, src0, src1_pattern, reduce_mode, mask, params, gather_mask_mode=0):
            return gather_mask_typed(borrowed(ctx), borrowed(dst), borrowed(src0),
                                     _user_bytes(dst, borrowed(src1_pattern)), 0,
                                     reduce_mode != 0, mask, params)
        return impl

    def impl(ctx, dst, src0, src1_pattern, reduce_mode, mask, params, gather_mask_mode=0):
        return gather_mask_typed(borrowed(ctx), borrowed(dst), borrowed(src0),
                                 np.zeros(0, np.uint8), _builtin_code(src1_pattern),
                                 reduce_mode != 0, mask, params)
    return impl
