"""Cube-path primitives: `load_data`, `mmad`, `mmad_bias` (and `fixpipe`, from prims/fixpipe.py).
Mirror Ascend C `LoadData` (LoadData2DParams) and `Mmad` (MmadParams).

Fractal layouts (C0 = 32 B / sizeof: 16 for f16/bf16, 8 for f32, 32 for int8; a fractal is 512 B
in L1/L0A/L0B, 16x16 elements = 1 KB (f32/int32) in L0C):
- L1 "NZ" (from data_copy(Nd2NzParams)): column strips C0 wide; element (r, c) of an ND matrix at
  (c // C0) * dst_nz_c0_stride * C0 + r * dst_nz_n_stride * C0 + c % C0. With dst_nz_n_stride=1 and
  dst_nz_c0_stride = rows of the strip (a multiple of 16), fractal f = strip * rows/16 + r // 16
  holds the 16 x C0 block row-major.
- L0A "ZZ" (A, m x k): 16 x C0 fractals, fractal grid row-major over (ceil16(m)/16, ceil(k/C0)),
  row-major inside: A[r, c] at ((r//16) * KB + c//C0) * 16*C0 + (r%16)*C0 + c%C0, KB = ceil(k/C0).
- L0B "ZN" (B, k x n): fractal grid row-major over (KB, ceil16(n)/16), each fractal the 16(n) x
  C0(k) block of B^T row-major: B[k, n] at ((k//C0) * NB + n//16) * 16*C0 + (n%16)*C0 + k%C0.
- L0C "NZ" (C, m x n, f32/int32): 16x16 fractals, grid column-major, row-major inside:
  C[r, c] at (c//16) * ceil16(m)*16 + r*16 + c%16 (each 16-column strip is ceil16(m) x 16 dense).

load_data(dst, src, LoadData2DParams): paths L1->L0A, L1->L0B, GM->L1, GM->L0A, GM->L0B. Repeat i
copies src fractal (start_index + i*src_stride) to dst fractal i*(1 + dst_gap). With if_transpose
each source fractal is read as a row-major C0 x 16 block (k x n: the B1 fractal of Ascend C's
table, 16x16 for 2-byte types, 8x16 for f32, 32x16 for int8) and written transposed, 16 x C0 (a ZN
fractal). For f16/bf16 this is the square 16x16 transpose, so pyasc's example (B in L1 as NZ with
16-wide strips, `load_data(b2[kb*16*N:], b1[kb*256:], repeat_times=N//16, src_stride=K//16,
if_transpose=True)`) gives ZN. For f32 (whose standard NZ holds 16x8 fractals no fractal transpose
turns into ZN) see docs/design.md, "float32 B operands of mmad". The hardware's
LoadDataWithTranspose (pairs of 16x8 fractals) is not emulated.

mmad: C (+)= A @ B over whole 16-row / 16-column fractals (ceil16(m) x ceil16(n) cells of L0C are
written, as the cube does: rows past m and columns past n come from the fractal padding of L0A/L0B
and hold whatever it holds), exact in k (the C0 padding past k is never read). f16/bf16/f32 ->
f32: the fractal-aware float32 GEMM of cubegemm.py reads L0A (ZZ) in place, repacks L0B (ZN) into
k x 16 strips and accumulates into L0C (NZ) in place; every cell is one fma chain over k in order
(then + the old L0C value when accumulating), so identical inputs give bit-identical cells
wherever they sit, as on the cube (BLAS rounds its column blocks differently). 2-byte inputs are
converted to float32 first (same layouts). int8 -> int32 through float64 dgemm on dense scratch
(exact). cmatrix_init_val=True starts from 0, False accumulates into L0C. mmad_bias starts from the
bias row (BT, f32, or int32 for int8) whatever cmatrix_init_val says, as Ascend C's bias path does
(cmatrix_source=1). fm_offset, en_ssparse, winograd, unit_flag, k_direction_align, cmatrix_source
(without a bias tensor) are ignored. Counters: cube_macs (f16/bf16/int8) or cube_macs_fp32 (f32)
+= m*n*k. Its speed against np.dot: `python -m bench.cube_gemm` (docs/performance.md).

fixpipe (L0C -> GM or L1, plain or atomic) is in prims/fixpipe.py, exported from here too.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ..core import BT, C_CUBE_MACS, C_CUBE_MACS_FP32, C_MTE1, C_MTE2, L0A, L0B, L0C, L1, prim
from ..errors import FAULT, fault, KernelError
from .. import trace
from .borrow import borrowed
from .cubegemm import gemm_zn, h2f16, make_transpose
from .datacopy import params_class, py_bytes
from .load3d import load_data_3d_typed
from ..params import LoadData3DParamsV2
from .fixpipe import fixpipe
from .movecore import (A_LOAD_DATA, A_MMAD, APIS, W_BIAS, W_DST, W_DST_GAP, W_FILTER, W_FM, W_K,
                       W_M, W_N, W_REPEAT_TIMES, W_SRC, W_SRC_STRIDE, W_START_INDEX,
                       dtype_name_of, aligned, bcopy, bound, bound_rows, bump, check_dtypes,
                       in_range, locate, locate2, pair_info, traced, write_target)
from ..state import MEM, STATE

__all__ = ["load_data", "load_data_typed", "mmad", "mmad_bias", "fixpipe"]

_OP_LOAD_DATA, _OP_MMAD = trace.op("load_data"), trace.op("mmad")


# ---- load_data ---------------------------------------------------------------------------------

# C0 x 16 source fractal -> 16 x C0 (element views of 4, 2 and 1 bytes: C0 = 8, 16, 32)
_TR_F32, _TR_F16, _TR_I8 = make_transpose(8, 16), make_transpose(16, 16), make_transpose(32, 16)


@prim
def _transpose(t, s, start, rep, sstr, gap):
    """Repeat i: the C0 x 16 source fractal (start + i*sstr) of s, transposed, is dst fractal
    i*(1+gap) of t (same-width views; C0 = 32 // itemsize is a compile-time constant; one vector
    shuffle per fractal)."""
    c0 = 32 // t.itemsize
    fe = 16 * c0
    for i in range(rep):
        o = (start + i * sstr) * fe
        d = i * (1 + gap) * fe
        if c0 == 8:
            _TR_F32(t, d, s, o)
        elif c0 == 16:
            _TR_F16(t, d, s, o)
        elif c0 == 32:
            _TR_I8(t, d, s, o)
        else:
            for r in range(16):
                for c in range(c0):
                    t[d + r * c0 + c] = s[o + c * 16 + r]


@prim
def _load_impl(ctx, d, s, isz, start, rep, sstr, gap, trans):
    api = A_LOAD_DATA
    st = ctx[STATE][0]
    D, S = locate2(ctx, d, s)
    dl, sl = D[0], S[0]
    l0 = dl == L0A or dl == L0B
    if not ((sl == L1 and l0) or (sl < 0 and (l0 or dl == L1))):
        fault("load_data: path must be one of L1->L0A, L1->L0B, GM->L1, GM->L0A, "
              "GM->L0B, got {:level}->{:level}", sl, dl)
        raise KernelError(FAULT)
    in_range(api, W_START_INDEX, start, 0, 65535)
    in_range(api, W_REPEAT_TIMES, rep, 0, 255)
    in_range(api, W_SRC_STRIDE, sstr, 0, 65535)
    in_range(api, W_DST_GAP, gap, 0, 65535)
    aligned(api, W_DST, D, 512 if l0 else 32)
    if sl >= 0:
        aligned(api, W_SRC, S, 32)
    if rep == 0:
        return
    fe = 512 // isz
    last = (start + (rep - 1) * sstr) * fe
    span = ((rep - 1) * (1 + gap) + 1) * fe
    bound_rows(st, api, W_SRC, S, isz, start * fe, fe, sstr * fe, rep, False)
    bound(st, api, W_DST, D, isz, 0, span, True)
    t = write_target(ctx, d, span * isz, gap == 0) if sl < 0 else d[:span * isz]
    sv = s[:(last + fe) * isz]
    if not trans and gap == 0 and sstr == 1:    # contiguous fractals: one copy
        bcopy(t, 0, sv, start * 512, rep * 512)
    elif not trans:
        for i in range(rep):
            bcopy(t, i * (1 + gap) * 512, sv, (start + i * sstr) * 512, 512)
    elif isz == 1:
        _transpose(t, sv, start, rep, sstr, gap)
    elif isz == 2:
        _transpose(t.view(np.uint16), sv.view(np.uint16), start, rep, sstr, gap)
    elif isz == 4:
        _transpose(t.view(np.uint32), sv.view(np.uint32), start, rep, sstr, gap)
    else:
        _transpose(t.view(np.uint64), sv.view(np.uint64), start, rep, sstr, gap)
    bump(st, C_MTE2 if sl < 0 else C_MTE1, rep * 512)
    # (L1 -> L0: the destination's span tells the sanitizer whether its bytes are contiguous)
    traced(ctx, _OP_LOAD_DATA, D, S, rep * 512, isz, (last + fe if sl < 0 else span) * isz)
    if sl >= 0:         # the sanitizer's reads of the L1 fractals (MTE1 as a consumer); not
        # judged by initcheck: a fractal's padding rows are read and discarded
        if sstr <= 1:
            trace.read_unchecked(ctx, _OP_LOAD_DATA, S[2] + start * 512,
                                 ((rep - 1) * sstr + 1) * 512)
        else:
            for i in range(rep):
                trace.read_unchecked(ctx, _OP_LOAD_DATA, S[2] + (start + i * sstr) * 512, 512)


@prim
def load_data_typed(ctx, dst, src, p):
    """load_data for njit callers (the overload of `load_data` calls it)."""
    check_dtypes(A_LOAD_DATA, pair_info(dst, src))
    _load_impl(borrowed(ctx), borrowed(dst).view(np.uint8), borrowed(src).view(np.uint8),
               dst.itemsize,
               np.int64(p.start_index), np.int64(p.repeat_times), np.int64(p.src_stride),
               np.int64(p.dst_gap), p.if_transpose != 0)


def load_data(ctx, dst, src, p):
    """Mirrors Ascend C `LoadData(dst, src, LoadData2DParams)` (see module doc). Python entry;
    njit code reaches `load_data_typed` through the overload."""
    if isinstance(p, LoadData3DParamsV2):       # Load3D (prims/load3d.py)
        return load_data_3d_typed(ctx, dst, src, p._replace(pad_list=tuple(p.pad_list)))
    d, s, isz = py_bytes("load_data", dst, src)
    i = int
    _load_impl(ctx, d, s, isz, i(p.start_index), i(p.repeat_times), i(p.src_stride),
               i(p.dst_gap), bool(p.if_transpose))


@overload(load_data)
def _load_data_ov(ctx, dst, src, p):
    if params_class(p) is LoadData3DParamsV2:
        return lambda ctx, dst, src, p: load_data_3d_typed(borrowed(ctx), borrowed(dst),
                                                           borrowed(src), p)
    # borrowed at the call site: the typed prim's entry then takes no references
    return lambda ctx, dst, src, p: load_data_typed(borrowed(ctx), borrowed(dst),
                                                    borrowed(src), p)


# ---- mmad --------------------------------------------------------------------------------------

def _kind_of(dst, fm, filt):
    """0 unsupported, 1 f16, 2 bf16, 3 f32 (-> f32), 4 int8 (-> int32), from Numba array types."""
    def name(t):
        d = t.dtype
        return next(iter(d.fields)) if isinstance(d, types.Record) else str(d)
    a, b, c = name(fm), name(filt), name(dst)
    if a != b:
        return 0
    return {("f16", "float32"): 1, ("bf16", "float32"): 2, ("float32", "float32"): 3,
            ("int8", "int32"): 4}.get((a, c), 0)


def _mm_info(dst, fm, filt, bias):
    """(kind, dtype names of dst, fm, filter, bias) as compile-time constants."""


@overload(_mm_info)
def _mm_info_ov(dst, fm, filt, bias):
    k = _kind_of(dst, fm, filt)
    n0, n1, n2, n3 = (dtype_name_of(t.dtype) for t in (dst, fm, filt, bias))
    return lambda dst, fm, filt, bias: (k, n0, n1, n2, n3)


@prim
def _h2f(h):
    """float16 bits -> float32, branch-free (vectorises)."""
    h = np.uint32(h)
    em = np.uint32(h & np.uint32(0x7FFF))
    x = np.uint32(em << np.uint32(13))
    sign = np.uint32((h & np.uint32(0x8000)) << np.uint32(16))
    normal = np.float32(x.view(np.float32) * np.float32(5.192296858534828e+33))  # 2**112
    bits = np.uint32(normal.view(np.uint32))
    if em >= np.uint32(0x7C00):   # inf / nan
        bits = np.uint32(x | np.uint32(0x7F800000))
    return np.uint32(bits | sign).view(np.float32)


def _to_scratch(a, n):
    """Elements [0, n) of fm/filter `a` in the GEMM's type: float32 (f16/bf16/f32; f32 is not
    copied) or float64 (int8, exact)."""


@overload(_to_scratch)
def _to_scratch_ov(a, n):
    d = a.dtype
    if isinstance(d, types.Record):
        f16 = "f16" in d.fields

        def impl(a, n):
            u = a.view(np.uint16)
            out = np.empty(n, np.float32)
            if f16:
                n16 = n // 16 * 16
                for i in range(0, n16, 16):     # 16 at a time by the CPU's half -> float
                    h2f16(out, i, u, i)
                for i in range(n16, n):
                    out[i] = _h2f(u[i])
            else:
                for i in range(n):
                    out[i] = np.uint32(np.uint32(u[i]) << np.uint32(16)).view(np.float32)
            return out
        return impl
    if d == types.int8:
        def impl(a, n):
            out = np.empty(n, np.float64)
            for i in range(n):
                out[i] = a[i]
            return out
        return impl
    return lambda a, n: a[:n]


# rows moved as one record: an int8 fractal row as float64 (32 x 8 B), an L0C row (16 x 4 B)
_ROW256 = np.dtype([("b", np.uint64, (32,))])
_ROW64 = np.dtype([("b", np.uint64, (8,))])


@prim
def _unpack(a, rblocks, kb_n, zn):
    """int8 fractals (16 x 32) -> dense float64 scratch[rblocks*16, kb_n*32], read in memory
    order. ZZ (A): fractal (rb, kb) at rb*kb_n + kb; ZN (B, giving B^T): fractal (kb, rb) at
    kb*rblocks + rb."""
    src = _to_scratch(a, rblocks * kb_n * 512)
    out = np.empty((rblocks * 16, kb_n * 32), np.float64)
    sr = src.view(_ROW256)
    orow = out.reshape(rblocks * 16 * kb_n * 32).view(_ROW256)
    s = 0
    for outer in range(kb_n if zn else rblocks):
        for inner in range(rblocks if zn else kb_n):
            rb = inner if zn else outer
            kb = outer if zn else inner
            for i in range(16):
                orow[(rb * 16 + i) * kb_n + kb] = sr[s]
                s += 1
    return out


@prim
def _pack(dst, c, m16, n16, init):
    """L0C NZ (16-column strips of m16 rows) = (or +=) dense c[m16, n16] (c is clobbered when
    accumulating): strip j's row r is the 16 elements at (j * m16 + r) * 16."""
    nb = n16 // 16
    dr = dst[:m16 * n16].view(_ROW64)
    cr = c.reshape(m16 * n16).view(_ROW64)
    if not init:    # c += the NZ contents, gathered densely (whole rows as records)
        old = np.empty_like(c)
        orow = old.reshape(m16 * n16).view(_ROW64)
        for j in range(nb):
            for r in range(m16):
                orow[r * nb + j] = dr[j * m16 + r]
        c += old
    for j in range(nb):     # 64-byte rows moved as records: no per-row aliasing checks
        for r in range(m16):
            dr[j * m16 + r] = cr[r * nb + j]


@prim
def _mmad_checks(st, api, D, A, B, Z, has_bias, info, isz, m, n, k):
    """All checks of an mmad on located dst, fm, filter, bias; returns (m16, n16)."""
    in_range(api, W_M, m, 0, 4095)
    in_range(api, W_N, n, 0, 4095)
    in_range(api, W_K, k, 0, 4095)
    if D[0] != L0C or A[0] != L0A or B[0] != L0B:
        fault("{}: operands must be dst in L0C (CO1), fm in L0A (A2), filter in L0B "
              "(B2), got dst={:level} fm={:level} filter={:level}", APIS[api], D[0],
              A[0], B[0])
        raise KernelError(FAULT)
    if has_bias and Z[0] != BT:
        fault("{}: bias must be in BT (C2), got bias={:level}", APIS[api], Z[0])
        raise KernelError(FAULT)
    if info[0] == 0:
        fault("{}: dtypes must be f16/bf16/f32 -> float32 or int8 -> int32, got "
              "dst={} fm={} filter={}", APIS[api], info[1], info[2], info[3])
        raise KernelError(FAULT)
    if has_bias and info[4] != info[1]:
        fault("{}: bias must have dst's dtype, got bias={} dst={}", APIS[api],
              info[4], info[1])
        raise KernelError(FAULT)
    aligned(api, W_FM, A, 512)
    aligned(api, W_FILTER, B, 512)
    aligned(api, W_DST, D, 64)
    c0 = 32 // isz
    kb = (k + c0 - 1) // c0
    m16 = (m + 15) // 16 * 16
    n16 = (n + 15) // 16 * 16
    bound(st, api, W_FM, A, isz, 0, m16 * kb * c0, False)
    bound(st, api, W_FILTER, B, isz, 0, kb * c0 * n16, False)
    bound(st, api, W_DST, D, 4, 0, m16 * n16, True)
    if has_bias:
        bound(st, api, W_BIAS, Z, 4, 0, n, False)
    bump(st, C_CUBE_MACS_FP32 if info[0] == 3 else C_CUBE_MACS, m * n * k)
    return m16, n16


@prim
def _compute_int8(dst, fm, filt, bias, has_bias, m16, n16, k, init):
    """int8: dense float64 scratch through dgemm (exact, so position-independent too)."""
    kb = (k + 31) // 32
    if k == 0:
        c = np.zeros((m16, n16), dst.dtype)
    else:
        a = _unpack(fm, m16 // 16, kb, False)      # ZZ
        b = _unpack(filt, n16 // 16, kb, True)     # ZN, as B^T
        if kb * 32 != k:    # fractal padding along k never contributes
            for r in range(m16):
                for e in range(k, kb * 32):
                    a[r, e] = 0
            for r in range(n16):
                for e in range(k, kb * 32):
                    b[r, e] = 0
        c = np.dot(a, b.T).astype(np.int32)
    if has_bias:
        n = min(n16, bias.size)
        for r in range(m16):
            for e in range(n):
                c[r, e] += bias[e]
    _pack(dst, c, m16, n16, init)


@prim
def _compute_float(dst, fm, filt, bias, has_bias, m16, n16, k, init):
    """f16/bf16/f32: the fractal-aware float32 GEMM of cubegemm on L0A/L0B/L0C in place (2-byte
    inputs converted to float32 first, same layouts)."""
    c0 = 32 // fm.itemsize
    kb = (k + c0 - 1) // c0
    if has_bias:    # the accumulators start from the bias row (cmatrix_source=1)
        nb = min(n16, bias.size)
        for j in range(n16 // 16):
            for r in range(m16):
                for e in range(16):
                    dst[(j * m16 + r) * 16 + e] = bias[j * 16 + e] if j * 16 + e < nb else 0
        init = False
    a = _to_scratch(fm, m16 * kb * c0)
    gemm_zn(dst, a, _to_scratch(filt, kb * c0 * n16), m16, n16, k, c0, kb, init)


def _compute(dst, fm, filt, bias, has_bias, m16, n16, k, init):
    """The GEMM of a valid mmad (a no-op for dtype combinations _mmad_checks has rejected)."""


@overload(_compute)
def _compute_ov(dst, fm, filt, bias, has_bias, m16, n16, k, init):
    kind = _kind_of(dst, fm, filt)
    if kind == 4 and bias.dtype == dst.dtype:
        return lambda dst, fm, filt, bias, has_bias, m16, n16, k, init: _compute_int8(
            dst, fm, filt, bias, has_bias, m16, n16, k, init)
    if kind != 0 and bias.dtype == dst.dtype:
        return lambda dst, fm, filt, bias, has_bias, m16, n16, k, init: _compute_float(
            dst, fm, filt, bias, has_bias, m16, n16, k, init)
    return lambda dst, fm, filt, bias, has_bias, m16, n16, k, init: None


@prim
def _mmad(ctx, api, dst, fm, filt, bias, has_bias, p):
    m, n, k = np.int64(p.m), np.int64(p.n), np.int64(p.k)
    mem, st = ctx[MEM], ctx[STATE][0]
    ma, ms = np.int64(mem.ctypes.data), mem.size
    nb = dst.size * dst.itemsize
    m16, n16 = _mmad_checks(st, api, locate(st, ma, ms, np.int64(dst.ctypes.data), nb),
                            locate(st, ma, ms, np.int64(fm.ctypes.data), fm.size * fm.itemsize),
                            locate(st, ma, ms, np.int64(filt.ctypes.data),
                                   filt.size * filt.itemsize),
                            locate(st, ma, ms, np.int64(bias.ctypes.data),
                                   bias.size * bias.itemsize),
                            has_bias, _mm_info(dst, fm, filt, bias), fm.itemsize, m, n, k)
    init = has_bias or p.cmatrix_init_val != 0
    if m > 0 and n > 0:
        _compute(dst, fm, filt, bias, has_bias, m16, n16, k, init)
    trace.mmad(ctx, _OP_MMAD, m, n, k, fm.itemsize)
    if m > 0 and n > 0:
        # the sanitizer's rows: A (m16 x k in c0 columns), B (k x n16), C (m16 x n16, read
        # first when it accumulates); the padding of A and B is read and discarded
        c0 = 32 // fm.itemsize
        kc = (k + c0 - 1) // c0 * c0
        trace.read_unchecked(ctx, _OP_MMAD, fm.ctypes.data, min(m16 * kc, fm.size) * fm.itemsize)
        trace.read_unchecked(ctx, _OP_MMAD, filt.ctypes.data,
                             min(kc * n16, filt.size) * filt.itemsize)
        cbytes = min(m16 * n16, dst.size) * dst.itemsize
        if has_bias:
            trace.access(ctx, _OP_MMAD, bias.ctypes.data, min(n, bias.size) * bias.itemsize, 0)
        elif not init:
            trace.access(ctx, _OP_MMAD, dst.ctypes.data, cbytes, 0)
        trace.access(ctx, _OP_MMAD, dst.ctypes.data, cbytes, 1)


@prim
def mmad(ctx, dst, fm, filt, p):
    """Mirrors Ascend C `Mmad(dst CO1, fm A2, filter B2, MmadParams)`: C (+)= A @ B."""
    _mmad(borrowed(ctx), A_MMAD, borrowed(dst), borrowed(fm), borrowed(filt), borrowed(dst),
          False, p)


@prim
def mmad_bias(ctx, dst, fm, filt, bias, p):
    """Mirrors Ascend C `Mmad(dst, fm, filter, bias C2, MmadParams)`: C = bias + A @ B."""
    _mmad(borrowed(ctx), A_MMAD, borrowed(dst), borrowed(fm), borrowed(filt), borrowed(bias),
          True, p)
