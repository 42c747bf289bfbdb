"""Load3D: `load_data(dst, src, LoadData3DParamsV2)`, Ascend C's `LoadData` with
`LoadData3DParamsV2` (img2col from an L1 feature map into L0A or L0B, on MTE1).

pyasc: `asc.load_data(dst, src, asc.LoadData3DParamsV2(pad_list, l1_h, l1_w, channel_size,
k_extension, m_extension, k_start_pt, m_start_pt, stride_w, stride_h, filter_w, filter_h,
dilation_filter_w, dilation_filter_h, en_transpose, pad_value, filter_size_w, filter_size_h,
f_matrix_ctrl))` (python/asc/language/core/types.py; the same `load_data` as the 2-D form, the
params' type picks the form, see prims/cube.py).

Semantics (Ascend C "Load3D"): src is one feature map in L1 in NC1HWC0 order,
C1 = channel_size / C0 planes of l1_h x l1_w pixels of C0 channels (C0 = 32 bytes of elements:
8 float32, 16 float16/bfloat16, 32 int8). Padding (pad_list = [left, right, top, bottom]),
strides, dilations and the filter size define the img2col matrix M x K:
  Wo = (l1_w + left + right - dw*(fw - 1) - 1) // sw + 1 (Ho likewise), M = Ho * Wo,
  row m = (ho, wo) = divmod(m, Wo), column k = ((c1 * fh + kh) * fw + kw) * C0 + c0,
  value = fmap[c1, ih, iw, c0] at ih = ho*sh - top + kh*dh, iw = wo*sw - left + kw*dw,
  or pad_value where (ih, iw) is outside the map (fw, fh: filter_w/h + 256 if filter_size_w/h).
The load writes the m_extension x k_extension block starting at (m_start_pt, k_start_pt):
  L0A ("ZZ"): 16 x C0 fractals, grid row-major over (m_extension/16, k_extension/C0);
  L0B ("ZN"): the same block as B (k x n, n = m), fractals grid row-major over
  (k_extension/C0, m_extension/16);
inside a fractal, row = m % 16 and column = k % C0 in both. The order of K (c1, kh, kw, c0) is
the FRACTAL_Z order of the weights the cube multiplies it with.

Checked: path L1 -> L0A or L1 -> L0B; dst 512-byte and src 32-byte aligned; dtypes of the A2
table (L0A: 1-, 2- and 4-byte types; L0B: 2- and 4-byte); the documented ranges (l1_h/l1_w in
[1, 32767], strides in [1, 63], filter and dilation in [1, 255], pads in [0, 255], extensions in
[1, 65535], start points in [0, 65535]); channel_size a multiple of C0 (the emulator's rule:
the hardware's small-channel modes, 4 channels for 2-byte types, are not emulated); k_start_pt
and k_extension multiples of C0, m_start_pt and m_extension multiples of 16; k_start_pt +
k_extension <= K; the fmap inside src and the block inside dst. en_transpose and f_matrix_ctrl
(the fmap geometry from SetFmatrix) are not emulated and are refused.
NPU model: one MTE1 copy of m_extension * k_extension elements (rt/npu/model.py L1->L0A/L0B).
"""
from __future__ import annotations

import numpy as np

from .. import trace
from ..core import C_MTE1, L0A, L0B, L1, prim
from ..dtypes import f32_to_bf16_bits, f32_to_f16_bits
from ..errors import FAULT, fault, KernelError
from ..state import MEM, STATE
from ..visibility import in_flight, PIPE_MTE1, vis_check
from .borrow import borrowed
from .movecore import bump, locate2
from .vecbase import check_range, fkind

__all__ = ["load_data_3d_typed"]

_OP = trace.op("load_data")
_API = "load_data"


@prim
def _fail(what, a, b):
    if what == 0:
        fault("load_data: path must be L1->L0A or L1->L0B for LoadData3DParamsV2, got "
              "{:level}->{:level}", a, b)
        raise KernelError(FAULT)
    elif what == 1:
        fault("load_data: {} address must be {}-byte aligned for LoadData3DParamsV2, got byte "
              "offset={}", "dst" if a < 512 else "src", 512 if a < 512 else 32, b)
        raise KernelError(FAULT)
    elif what == 2:
        fault("load_data: dst and src must have one dtype of 1, 2 or 4 bytes (2 or 4 for L0B) "
              "for LoadData3DParamsV2, got element sizes dst={} src={}", a, b)
        raise KernelError(FAULT)
    elif what == 3:
        fault("load_data: LoadData3DParamsV2.channel_size must be a multiple of C0={}, got "
              "channel_size={}", a, b)
        raise KernelError(FAULT)
    elif what == 4:
        fault("load_data: LoadData3DParamsV2.{} must be a multiple of {}, got {}",
              ("k_start_pt", "k_extension", "m_start_pt", "m_extension")[a % 4], a // 4, b)
        raise KernelError(FAULT)
    elif what == 5:
        fault("load_data: LoadData3DParamsV2.k_start_pt + k_extension must be <= K = "
              "C1*filter_h*filter_w*C0 = {}, got {}", a, b)
        raise KernelError(FAULT)
    elif what == 6:
        fault("load_data: {} must hold {} bytes for LoadData3DParamsV2, got {} bytes",
              "src" if a == 0 else "dst", b // 1000000000, b % 1000000000)
        raise KernelError(FAULT)
    else:
        fault("load_data: LoadData3DParamsV2.{} must be False (not emulated), got True",
              "en_transpose" if a == 0 else "f_matrix_ctrl")
        raise KernelError(FAULT)


@prim
def _fill(t, s, pad, c0, fmw, fmhw, l1_h, l1_w, wo, fh, fw, sw, sh, dw, dh, left, top,
          m0, k0, mext, kext, to_b):
    """The m_extension x k_extension block of the img2col matrix (module doc) into t."""
    kb = kext // c0
    nb = mext // 16
    fe = 16 * c0
    for mi in range(mext):
        m = m0 + mi
        ho = m // wo
        wo_ = m - ho * wo
        for kf in range(kb):
            k = k0 + kf * c0
            tap = k // c0
            c1 = tap // (fh * fw)
            r = tap - c1 * fh * fw
            kh = r // fw
            kw = r - kh * fw
            ih = ho * sh - top + kh * dh
            iw = wo_ * sw - left + kw * dw
            if to_b:
                d = (kf * nb + mi // 16) * fe + (mi % 16) * c0
            else:
                d = ((mi // 16) * kb + kf) * fe + (mi % 16) * c0
            if 0 <= ih < l1_h and 0 <= iw < l1_w:
                o = c1 * fmhw + (ih * l1_w + iw) * c0
                for e in range(c0):
                    t[d + e] = s[o + e]
            else:
                for e in range(c0):
                    t[d + e] = pad


@prim
def _load3d(ctx, d, s, isz, kind, pad_value, left, right, top, bottom, l1_h, l1_w,
            ch, kext, mext, k0, m0, sw, sh, fw, fh, dw, dh, en_t, fmc):
    D, S = locate2(ctx, d, s)
    dl, sl = D[0], S[0]
    if sl != L1 or (dl != L0A and dl != L0B):
        _fail(0, sl, dl)
    to_b = dl == L0B
    if isz != 1 and isz != 2 and isz != 4 or (to_b and isz == 1):
        _fail(2, isz, isz)
    if D[1] % 512 != 0:
        _fail(1, 0, D[1])
    if S[1] % 32 != 0:
        _fail(1, 512, S[1])
    check_range(_API, "LoadData3DParamsV2.pad_list[0]", left, 0, 255)
    check_range(_API, "LoadData3DParamsV2.pad_list[1]", right, 0, 255)
    check_range(_API, "LoadData3DParamsV2.pad_list[2]", top, 0, 255)
    check_range(_API, "LoadData3DParamsV2.pad_list[3]", bottom, 0, 255)
    check_range(_API, "LoadData3DParamsV2.l1_h", l1_h, 1, 32767)
    check_range(_API, "LoadData3DParamsV2.l1_w", l1_w, 1, 32767)
    check_range(_API, "LoadData3DParamsV2.k_extension", kext, 1, 65535)
    check_range(_API, "LoadData3DParamsV2.m_extension", mext, 1, 65535)
    check_range(_API, "LoadData3DParamsV2.k_start_pt", k0, 0, 65535)
    check_range(_API, "LoadData3DParamsV2.m_start_pt", m0, 0, 65535)
    check_range(_API, "LoadData3DParamsV2.stride_w", sw, 1, 63)
    check_range(_API, "LoadData3DParamsV2.stride_h", sh, 1, 63)
    check_range(_API, "LoadData3DParamsV2.dilation_filter_w", dw, 1, 255)
    check_range(_API, "LoadData3DParamsV2.dilation_filter_h", dh, 1, 255)
    if en_t:
        _fail(7, 0, 0)
    if fmc:
        _fail(7, 1, 0)
    c0 = 32 // isz
    if ch < c0 or ch % c0 != 0:
        _fail(3, c0, ch)
    if k0 % c0 != 0:
        _fail(4, 4 * c0, k0)
    if kext % c0 != 0:
        _fail(4, 4 * c0 + 1, kext)
    if m0 % 16 != 0:
        _fail(4, 64 + 2, m0)
    if mext % 16 != 0:
        _fail(4, 64 + 3, mext)
    c1 = ch // c0
    ktot = c1 * fh * fw * c0
    if k0 + kext > ktot:
        _fail(5, ktot, k0 + kext)
    wo = (l1_w + left + right - dw * (fw - 1) - 1) // sw + 1
    if wo < 1:
        wo = 1                      # no output column: every position reads the padding
    fm = c1 * l1_h * l1_w * c0 * isz
    if fm > s.size:
        _fail(6, 0, fm * 1000000000 + s.size)
    nbytes = mext * kext * isz
    if nbytes > d.size:
        _fail(6, 1, nbytes * 1000000000 + d.size)
    if in_flight(ctx):              # MTE1 must see the feature map (visibility.py)
        vis_check(ctx, _API, "src", PIPE_MTE1, S[2] - np.int64(ctx[MEM].ctypes.data), fm)
    args = (c0, l1_w * c0, l1_h * l1_w * c0, l1_h, l1_w, wo, fh, fw, sw, sh, dw, dh, left, top,
            m0, k0, mext, kext, to_b)
    if isz == 4:
        if kind == 3:
            pad = np.float32(pad_value).view(np.uint32)
        else:
            pad = np.uint32(np.int64(pad_value) & 0xFFFFFFFF)
        _fill(d.view(np.uint32), s.view(np.uint32), pad, *args)
    elif isz == 2:
        if kind == 1:
            pad16 = np.uint16(f32_to_f16_bits(np.float32(pad_value)))
        elif kind == 2:
            pad16 = np.uint16(f32_to_bf16_bits(np.float32(pad_value)))
        else:
            pad16 = np.uint16(np.int64(pad_value) & 0xFFFF)
        _fill(d.view(np.uint16), s.view(np.uint16), pad16, *args)
    else:
        _fill(d, s, np.uint8(np.int64(pad_value) & 0xFF), *args)
    bump(ctx[STATE][0], C_MTE1, nbytes)
    if trace.on(ctx):
        trace.copy(ctx, _OP, sl, dl, nbytes, isz, 0, nbytes)
        trace.access(ctx, _OP, D[2], nbytes, 1)
        trace.read_unchecked(ctx, _OP, S[2], fm)


@prim
def load_data_3d_typed(ctx, dst, src, p):
    """load_data(dst, src, LoadData3DParamsV2) for njit callers (cube.load_data dispatches)."""
    if dst.itemsize != src.itemsize:
        _fail(2, dst.itemsize, src.itemsize)
    pl = p.pad_list
    check_range(_API, "LoadData3DParamsV2.filter_w", np.int64(p.filter_w), 1, 255)
    check_range(_API, "LoadData3DParamsV2.filter_h", np.int64(p.filter_h), 1, 255)
    fw = np.int64(p.filter_w) + (256 if p.filter_size_w else 0)
    fh = np.int64(p.filter_h) + (256 if p.filter_size_h else 0)
    _load3d(ctx, borrowed(dst).view(np.uint8), borrowed(src).view(np.uint8),
            dst.itemsize, fkind(dst), np.float64(p.pad_value), np.int64(pl[0]),
            np.int64(pl[1]), np.int64(pl[2]), np.int64(pl[3]), np.int64(p.l1_h),
            np.int64(p.l1_w), np.int64(p.channel_size), np.int64(p.k_extension),
            np.int64(p.m_extension), np.int64(p.k_start_pt), np.int64(p.m_start_pt),
            np.int64(p.stride_w), np.int64(p.stride_h), fw, fh,
            np.int64(p.dilation_filter_w), np.int64(p.dilation_filter_h), p.en_transpose != 0,
            p.f_matrix_ctrl != 0)
