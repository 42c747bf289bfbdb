"""Max pooling on dense UB rows with GatherMask (`maxpool_gather_kernel`), the path
kernels/pool.py's `launch_pool` takes when a band of output rows fits UB (ResNet's 3x3/2 MaxPool
on 112 x 112 planes: one band per plane).

Per band of `nb` output rows of one plane:
1. UB holds the band's padded input rows densely, `rs` elements apart (a multiple of 64: whole
   256-byte repeats), each row starting one 32-byte block (8 elements) in, with -inf around it:
   the whole buffer is set to -inf (one duplicate), then the rows inside the image move GM -> UB
   in one strided data_copy_pad (its right padding -inf); rows above / below the image stay
   -inf, so every window reads KH rows of the buffer, padding included.
2. Vertical maxima V (nb rows x rs): per 64-element column chunk, max of the KH rows of each
   window with the binary repeat form (one repeat per output row: dst repeat stride rs, source
   repeat stride sh*rs), KH - 1 instructions per chunk.
3. Horizontal: for each kernel column j, one GatherMask over all of V (nb * rs / 64 repeats, a
   user pattern with one 32-byte block per repeat) picks V[row, 8 - pw + q*sw + j] for every
   output column q, packed: G_j is the band's nb x ow output of tap j, dense. The patterns depend
   only on the geometry; they are built on the host (`gather_patterns`, like a weight layout)
   and cached on the device (`kernels._host.device_constant`).
4. out = max over j of G_j (count form), one UB -> GM copy of the band (its rows are contiguous
   in y).
About 4 + 2(KH - 1) + 2 KW vector instructions per band instead of ~10 per output row of the
one-element-per-block kernel (`kernels.pool.maxpool_kernel`), and dense data (8x less moved).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import ascendc as asc
import rt

from ._host import device_constant, round_up

LEFT = 8              # elements before each row in UB (one 32-byte block of -inf)


class GatherPlan(NamedTuple):
    """How `maxpool_gather_kernel` cuts the planes (elements of float32)."""
    rs: int           # UB row stride (a multiple of 64)
    nb: int           # output rows per band
    band_rows: int    # padded input rows a band reads: (nb - 1) * sh + kh
    w8: int           # a row's elements in UB rounded to 32 bytes
    g_len: int        # one tap's packed output (nb * ow rounded to 8)
    pat_words: int    # uint32 words of one tap's patterns (nb * rs / 64 blocks of 8 words)


def gather_plan(t) -> GatherPlan | None:
    """The plan for PoolTiling t, or None when this path does not apply (padding of a whole
    window, a left padding of more than 8, strides past the repeat form's limits, UB)."""
    (ph, pw, pb, pr), (sh, sw) = t.pad, t.stride
    if ph >= t.kh or pb >= t.kh or pw >= t.kw or pr >= t.kw or pw > LEFT:
        return None
    w8 = round_up(t.w, 8)
    rs = round_up(max(LEFT + w8, LEFT - pw + (t.ow - 1) * sw + t.kw), 64)
    rpr = rs // 64
    if sh * rs // 8 > 255 or rpr > 255:
        return None
    ub = rt.get_soc().ub_bytes - 1024
    for nb in range(min(t.oh, 255 // rpr), 0, -1):
        band_rows = (nb - 1) * sh + t.kh
        g_len = round_up(nb * t.ow, 8)
        pat_words = nb * rpr * 8
        need = 4 * (band_rows * rs + nb * rs + t.kw * g_len + t.kw * pat_words)
        if need <= ub:
            return GatherPlan(rs, nb, band_rows, w8, g_len, pat_words)
    return None


def gather_patterns(t, plan: GatherPlan) -> np.ndarray:
    """The KW user patterns (uint32, `pat_words` each): bit l of repeat r's block picks lane l
    of V's repeat r, i.e. column c = (r % rpr) * 64 + l of a row, when c = 8 - pw + q*sw + j
    for an output column q < ow."""
    pw, sw = t.pad[1], t.stride[1]
    rpr = plan.rs // 64
    c = np.arange(plan.rs)
    out = np.zeros((t.kw, plan.nb * rpr, 8), np.uint32)
    for j in range(t.kw):
        d = c - (LEFT - pw + j)
        pick = (d >= 0) & (d % sw == 0) & (d // sw < t.ow)
        words = np.packbits(pick.reshape(rpr, 64), axis=1, bitorder="little").view(np.uint32)
        out[j, :, :2] = np.tile(words, (plan.nb, 1))
    return out.ravel()


@asc.jit
def maxpool_gather_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, pat: asc.GlobalAddress,
                          planes: int, h: int, w: int, oh: int, ow: int, kh: int, kw: int,
                          sh: int, ph: int, planes_per_core: int, rs: int, nb: int,
                          band_rows: int, w8: int, g_len: int, pat_words: int,
                          neg_inf: float):
    """Max pooling of planes [p0, p0 + planes_per_core) (see the module doc)."""
    p0 = asc.get_block_idx() * planes_per_core
    npl = min(planes_per_core, planes - p0)
    if npl <= 0:
        return
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + p0 * h * w, npl * h * w)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + p0 * oh * ow, npl * oh * ow)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(pat, kw * pat_words)
    pipe = asc.TPipe()
    xb = asc.TBuf(asc.TPosition.VECCALC)
    vb = asc.TBuf(asc.TPosition.VECCALC)
    gb = asc.TBuf(asc.TPosition.VECCALC)
    pb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(xb, band_rows * rs * 4)
    pipe.init_buffer(vb, nb * rs * 4)
    pipe.init_buffer(gb, kw * g_len * 4)
    pipe.init_buffer(pb, kw * pat_words * 4)
    xl = xb.get(x.dtype)
    vl = vb.get(x.dtype)
    gl = gb.get(y.dtype)
    pl_ = pb.get(pat.dtype)
    asc.data_copy(pl_, pg, kw * pat_words)
    rpr = rs // 64
    blk = rs // 8
    for p in range(npl):
        for b0 in range(0, oh, nb):
            nbb = min(nb, oh - b0)
            top = b0 * sh - ph                  # image row of the band's first padded row
            r0 = max(top, 0)
            r1 = min(top + (nbb - 1) * sh + kh, h)
            asc.set_flag(asc.HardEvent.MTE3_V, 0)       # the last band's output has left
            asc.wait_flag(asc.HardEvent.MTE3_V, 0)
            asc.duplicate(xl, neg_inf, band_rows * rs)
            asc.set_flag(asc.HardEvent.V_MTE2, 0)
            asc.wait_flag(asc.HardEvent.V_MTE2, 0)
            asc.data_copy_pad(xl[(r0 - top) * rs + 8:], xg[(p * h + r0) * w:],
                              asc.DataCopyExtParams(r1 - r0, w * 4, 0, (rs - w8) // 8, 0),
                              asc.DataCopyPadExtParams(True, 0, w8 - w, neg_inf))
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            for c in range(rpr):
                if kh == 1:
                    asc.max(vl[c * 64:], xl[c * 64:], xl[c * 64:], 64, nbb,
                            asc.BinaryRepeatParams(1, 1, 1, blk, sh * blk, sh * blk))
                else:
                    asc.max(vl[c * 64:], xl[c * 64:], xl[rs + c * 64:], 64, nbb,
                            asc.BinaryRepeatParams(1, 1, 1, blk, sh * blk, sh * blk))
                for k in range(2, kh):
                    asc.max(vl[c * 64:], vl[c * 64:], xl[k * rs + c * 64:], 64, nbb,
                            asc.BinaryRepeatParams(1, 1, 1, blk, blk, sh * blk))
            for j in range(kw):
                asc.gather_mask(gl[j * g_len:], vl, pl_[j * pat_words:], False, 0,
                                asc.GatherMaskParams(1, nbb * rpr, 8, 1))
            for j in range(1, kw):
                asc.max(gl, gl, gl[j * g_len:], nbb * ow)
            asc.set_flag(asc.HardEvent.V_MTE3, 0)
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
            asc.data_copy_pad(yg[(p * oh + b0) * ow:], gl,
                              asc.DataCopyExtParams(1, nbb * ow * 4, 0, 0, 0))


# ---- host side ---------------------------------------------------------------------------------

def launch_maxpool_gather(x, y, t, plan: GatherPlan, stream, **launch_options) -> None:
    """Queue maxpool_gather_kernel for PoolTiling t (x (N,C,H,W) -> y (N,C,OH,OW))."""
    pat = device_constant(("maxpool", t.w, t.ow, t.kw, t.pad[1], t.stride[1], plan),
                          lambda: gather_patterns(t, plan), x.device)
    maxpool_gather_kernel[t.block_dim, stream](
        x, y, pat, t.planes, t.h, t.w, t.oh, t.ow, t.kh, t.kw, t.stride[0], t.pad[0],
        t.planes_per_core, plan.rs, plan.nb, plan.band_rows, plan.w8, plan.g_len,
        plan.pat_words, float("-inf"), **launch_options)
