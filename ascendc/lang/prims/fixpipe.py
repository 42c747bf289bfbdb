"""Cube-path primitive `fixpipe`: mirrors Ascend C `Fixpipe` (FixpipeParamsV220), the copy of
an `mmad` result out of L0C (its NZ layout: prims/cube.py), plain or, under `set_atomic_add`,
as float32 atomic adds (prims/atomic.py).

fixpipe(dst, src L0C, FixpipeParamsV220, config): cfg_row_major: for each of nd_num matrices
(src += i*src_nd_stride KB, dst += i*dst_nd_stride elements) C[r, c] (r < m_size, c < n_size),
read at (c//16)*src_stride*16 + r*16 + c%16 (src_stride = rows per L0C strip, a multiple of 16),
goes to dst[r*dst_stride + c]. cfg_nz: strip j (16 columns, n_size a multiple of 16) is copied as
is, row r to dst[j*dst_stride*16 + r*16 : +16] (dst_stride in 16-element rows, like src_stride).
Output dtypes: f32 (NoQuant), f16 (NoQuant or F322F16), bf16 (NoQuant or F322BF16), int32 from
int32 (NoQuant); relu_en applies max(x, 0) first; other quant modes raise. dst is GM (or L1).
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..core import C_FIX, L0C, L1, prim
from ..dtypes import st as _st
from ..errors import FAULT, fault, KernelError
from .. import trace
from .borrow import borrowed, retyped
from .cubegemm import copy64
from .atomic import fix_loop_atomic
from .movecore import (A_FIXPIPE, A_FIXPIPE_ATOMIC, W_CONFIG, W_DST, W_M_SIZE, W_N_SIZE,
                       W_ND_NUM, W_SRC, W_SRC_STRIDE, dtype_name_of, aligned, bound, bound_rows,
                       bump, in_range, locate2)
from ..state import FLAG_ATOMIC_ADD, STATE

__all__ = ["fixpipe"]

_OP_FIXPIPE = trace.op("fixpipe")


# ---- fixpipe -----------------------------------------------------------------------------------

def _fix_info(dst, src):
    """(dst code, src code, dst name, src name); codes 1 f32, 2 f16, 3 bf16, 4 int32, 0 other."""


@overload(_fix_info)
def _fix_info_ov(dst, src):
    def code(d):
        if isinstance(d, types.Record):
            return 2 if "f16" in d.fields else 3
        return {types.float32: 1, types.int32: 4}.get(d, 0)
    r = (code(dst.dtype), code(src.dtype), dtype_name_of(dst.dtype), dtype_name_of(src.dtype))
    return lambda dst, src: r


@prim
def _fix_checks(st, D, S, disz, info, nsz, msz, sstr, dstr, q, nd, snd, dnd, cfg, atomic):
    """All checks of a fixpipe on located dst and src; info = _fix_info(dst, src). Returns False
    when there is nothing to do."""
    api = A_FIXPIPE_ATOMIC if atomic else A_FIXPIPE     # (rt.gmorder: atomic adds may overlap)
    dl, sl = D[0], S[0]
    if sl != L0C or not (dl < 0 or dl == L1):
        fault("fixpipe: path must be L0C->GM (or L0C->L1), got {:level}->{:level}",
              sl, dl)
        raise KernelError(FAULT)
    in_range(api, W_CONFIG, cfg, 0, 1)
    in_range(api, W_N_SIZE, nsz, 0, 4095)
    in_range(api, W_M_SIZE, msz, 0, 8192)
    in_range(api, W_ND_NUM, nd, 0, 65535)
    in_range(api, W_SRC_STRIDE, sstr, 0, 65535)
    if sstr % 16 != 0 or (sstr < msz and nsz > 16):
        fault("fixpipe: src_stride must be the L0C strip height, a multiple of 16 "
              "rows and >= m_size (ceil16(m) of the mmad), got src_stride={}", sstr)
        raise KernelError(FAULT)
    dcode, scode = info[0], info[1]
    ok = False
    if scode == 1:
        ok = ((dcode == 1 and q == 0) or (dcode == 2 and (q == 0 or q == 1))
              or (dcode == 3 and (q == 0 or q == 2)))
    elif scode == 4:
        ok = dcode == 4 and q == 0
    if not ok:
        fault("fixpipe: quant_pre and dtypes must be one of float32->float32 "
              "(NoQuant), float32->float16 (F322F16), float32->bfloat16 (F322BF16), "
              "int32->int32 (NoQuant), got src={} dst={} quant_pre={}", info[3],
              info[2], q)
        raise KernelError(FAULT)
    if atomic and (dl >= 0 or info[0] != 1):
        fault("fixpipe: dst must be float32 in GM under set_atomic_add, got dst={} in "
              "{:level}", info[2], dl)
        raise KernelError(FAULT)
    aligned(api, W_SRC, S, 64)
    if dl >= 0:
        aligned(api, W_DST, D, 32)
    if cfg == 0 and dstr < nsz:
        fault("fixpipe: dst_stride must be >= n_size (elements per ND row), got "
              "dst_stride={}", dstr)
        raise KernelError(FAULT)
    if cfg == 1 and nsz % 16 != 0:
        fault("fixpipe: n_size must be a multiple of 16 with cfg_nz, got n_size={}",
              nsz)
        raise KernelError(FAULT)
    if nd == 0 or nsz == 0 or msz == 0:
        return False
    nstrip = (nsz + 15) // 16
    for i in range(nd):
        bound(st, api, W_SRC, S, 4, 0, i * snd * 256 + (nstrip - 1) * sstr * 16 + msz * 16, False)
        if cfg == 0:
            nel = (msz - 1) * dstr + nsz
        else:
            nel = (nstrip - 1) * dstr * 16 + msz * 16
        if (i * dnd + nel) * disz > D[3]:
            bound(st, api, W_DST, D, disz, i * dnd, nel, True)     # fails, naming the span
        if cfg == 0:          # msz rows of nsz elements, dst_stride apart
            bound_rows(st, api, W_DST, D, disz, i * dnd, nsz, dstr, msz, True)
        else:                 # nstrip strips of msz x 16, dst_stride x 16 apart
            bound_rows(st, api, W_DST, D, disz, i * dnd, msz * 16, dstr * 16, nstrip, True)
    bump(st, C_FIX, nd * msz * nsz * disz)
    return True


def _same_words(dst, src):
    """Whether dst and src hold the same plain 4-byte type (float32 or int32: a row moves as its
    bits, `st` converting nothing), as a compile-time constant."""


@overload(_same_words)
def _same_words_ov(dst, src):
    same = (dst.dtype == src.dtype and isinstance(dst.dtype, (types.Float, types.Integer))
            and dst.dtype.bitwidth == 32)
    return lambda dst, src: same


@prim
def _fix_loop(dst, src, nsz, msz, sstr, dstr, nd, soff, dnd, cfg, relu):
    """Rows of 16 (or fewer) elements from the L0C strips to dst (converted by `st`, relu first);
    row-major output is written row by row (sequential in GM), NZ output strip by strip."""
    nstrip = (nsz + 15) // 16
    raw = _same_words(dst, src)
    for i in range(nd):
        for a in range(msz if cfg == 0 else nstrip):
            for b in range(nstrip if cfg == 0 else msz):
                r, j = (a, b) if cfg == 0 else (b, a)
                w = np.uint64(min(16, nsz - j * 16))
                o = np.uint64(i * soff + j * sstr * 16 + r * 16)
                if cfg == 0:
                    d = np.uint64(i * dnd + r * dstr + j * 16)
                else:
                    d = np.uint64(i * dnd + j * dstr * 16 + r * 16)
                if raw and w == 16 and not relu:     # a whole L0C row, bits as they are
                    copy64(dst, d, src, o)
                elif relu:
                    for e in range(w):
                        v = src[o + e]
                        if v < 0:
                            _st(dst, d + e, 0)
                        else:
                            _st(dst, d + e, v)
                else:
                    for e in range(w):
                        _st(dst, d + e, src[o + e])


@prim
def fixpipe(ctx, dst, src, p, config=0):
    """Mirrors Ascend C `Fixpipe(dst GM, src CO1, FixpipeParamsV220)` with CFG_ROW_MAJOR (0: NZ->ND)
    or CFG_NZ (1); see module doc."""
    nsz, msz = np.int64(p.n_size), np.int64(p.m_size)
    sstr, dstr = np.int64(p.src_stride), np.int64(p.dst_stride)
    nd, snd, dnd = np.int64(p.nd_num), np.int64(p.src_nd_stride), np.int64(p.dst_nd_stride)
    cfg = np.int64(config)
    ctx, dst, src = borrowed(ctx), borrowed(dst), borrowed(src)    # no refcounting
    D, S = locate2(ctx, retyped(dst, np.uint8), retyped(src, np.uint8))
    atomic = (ctx[STATE][0].options & FLAG_ATOMIC_ADD) != 0        # prims/atomic.py
    if _fix_checks(ctx[STATE][0], D, S, dst.itemsize, _fix_info(dst, src), nsz, msz, sstr, dstr,
                   np.int64(p.quant_pre), nd, snd, dnd, cfg, atomic):
        if atomic:
            fix_loop_atomic(dst, src, nsz, msz, sstr, dstr, nd, snd * 256, dnd, cfg,
                            p.relu_en != 0, ctx[STATE][0].atomic_locks)
        else:
            _fix_loop(dst, src, nsz, msz, sstr, dstr, nd, snd * 256, dnd, cfg, p.relu_en != 0)
        if trace.on(ctx):
            isz = dst.itemsize
            last = (nd - 1) * dnd + ((msz - 1) * dstr + nsz if cfg == 0 else
                                     ((nsz + 15) // 16 - 1) * dstr * 16 + msz * 16)
            trace.copy(ctx, _OP_FIXPIPE, S[0], D[0], nd * msz * nsz * isz, isz,
                       D[2] if D[0] < 0 else 0, last * isz)
            # the sanitizer's rows: the m_size rows of each 16-column L0C strip it reads; the
            # destination's rows (ND: m_size rows of n_size at dst_stride; NZ: a strip of
            # m_size x 16 per 16 columns), one span when they are contiguous
            ssz, nstrip = src.itemsize, (nsz + 15) // 16
            aw = 2 if atomic else 1         # (2: an atomic add, ascendc/sanitize/gmscan.py)
            for i in range(nd):
                for j in range(nstrip):
                    trace.access(ctx, _OP_FIXPIPE, S[2] + (i * snd * 256 + j * sstr * 16) * ssz,
                                 msz * 16 * ssz, 0)
                if cfg == 0 and dstr != nsz:
                    for r in range(msz):
                        trace.access(ctx, _OP_FIXPIPE, D[2] + (i * dnd + r * dstr) * isz,
                                     nsz * isz, aw)
                elif cfg == 0:
                    trace.access(ctx, _OP_FIXPIPE, D[2] + i * dnd * isz, msz * nsz * isz, aw)
                elif dstr != msz:
                    for j in range(nstrip):
                        trace.access(ctx, _OP_FIXPIPE, D[2] + (i * dnd + j * dstr * 16) * isz,
                                     msz * 16 * isz, aw)
                else:
                    trace.access(ctx, _OP_FIXPIPE, D[2] + i * dnd * isz,
                                 nstrip * msz * 16 * isz, aw)
