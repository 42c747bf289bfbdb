"""FlashAttention backward (aclnnFlashAttentionScoreGrad) as a MIX kernel (MIX_AIC_1_2): in each
AI Core group the AIC runs the matmuls and its two AIVs the softmax gradient, each AIV on half
of the rows of the score tile, handing tiles over through a GM workspace ordered by cross-core
flags (mode 2). From the forward's saved stats, per (S1 block i, S2 block j) tile:

  AIC  S = Q_i K_j^T, dP = dO_i V_j^T  -> L0C -> fixpipe -> workspace slot;  set SCORES
  AIV  wait SCORES;  P = exp(scale S - lse) (lse = row max + ln(row sum), masked: 0),
       dS = scale * P * (dP - D) (D = rowsum(dO * O));  P, dS -> workspace;  set GRADS
  AIC  wait GRADS;  then the products of the pass:
       dQ pass  (one group per (b, n, S1 block)):     dQ_i += dS K_j
       dKV pass (one group per (b, n_kv, S2 block)):  dV_j += P^T dO_i,  dK_j += dS^T Q_i
            (over every query head of the KV head's group: GQA sums in L0C)

Every accumulator stays in L0C and is written once by its owner: no atomics, a fixed order,
deterministic results. The recompute of S and dP in the second pass is the price (7 matmuls
where an atomic dQ would take 5). The AIC runs NSLOT - 1 tiles ahead of its AIVs (NSLOT
workspace slots; the L1 tiles of the tiles in flight wait in their queue's FIFO for their
gradient products), so the cross-core round trip of a tile hides behind the cube work of the
next ones; each AIV copies tile t + 1's S and dP in while it works on tile t
(kernels/flash_attention_backward_vector.py). float16 inputs hand S and dP over in float16
(fixpipe F322F16): the dQ pass's AIVs first write Q x scale (one item ahead, flag Q_READY), so
S is already scaled and cannot overflow where the f32 scaled S would not, and the dK/dV pass's
dK = dS^T (Q x scale) takes an unscaled dS. bfloat16 and float32 keep f32 S and dP. The dQ pass
also writes D and lse per row (GM), which the dKV pass reads. Fully masked (causal) tiles are
skipped; an S2 block no query row sees gets dK = dV = 0 from its AIVs.

The kernel sets up the buffers and walks its work items; an item's body is a helper: the AIC's
in kernels/flash_attention_backward_items.py (`dq_item_cube`, `dkv_item_cube`), the AIVs' in
kernels/flash_attention_backward_vector.py (`dq_item_vector`, `dkv_item_vector`). A helper call
records no instruction, so the split leaves the NPU view's instruction stream as it was (the
simulated time can still move by a few cycles between two versions of the code: the device
pool places buffers on 64-byte boundaries, the simulated L2 keeps 128-byte sectors, and where
a buffer lands depends on the process's allocation history).

P^T and dS^T reach L0A by the transposing load_data of 16-column strips of P / dS, and dO, Q
(dKV) or K (dQ) reach L0B the same way from row strips: "16-column strips" in L1 means element
(r, c) at (c // 16) * kpad * 16 + r * 16 + c % 16 (kpad = rows rounded up to C0), the NZ layout
for 16-bit types and the 8 x 16-fractal layout ascendc/lang/prims/cube.py describes for f32.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device
# (no import of kernels.flash_attention: it re-exports this module's backward)
from .flash_attention_backward_items import dkv_item_cube, dq_item_cube
from .flash_attention_backward_parts import NSLOT, cube_begin, cube_end
from .flash_attention_backward_vector import dkv_item_vector, dq_item_vector
from .flash_attention_backward_tiling import (  # noqa: F401 (re-exported)
    FlashAttentionBackwardBuffers, FlashAttentionBackwardTiling,
    flash_attention_backward_buffers, flash_attention_backward_tiling,
    flash_attention_backward_tiling_candidates, half_scores)

API = "flash_attention_backward"
LAYOUTS = ("BNSD", "BSND", "BSH")

class BackwardShape(NamedTuple):
    heads: int          # N
    kv_heads: int       # N_kv (divides N)
    s1: int
    s2: int
    items: int          # the work the groups stride over (per pass)


class RowStrides(NamedTuple):
    row: int
    head: int
    batch: int


class BackwardLayout(NamedTuple):
    q: RowStrides       # q, out, dout, dq
    kv: RowStrides      # k, v, dk, dv


class BackwardVariant(NamedTuple):
    head_dim: int
    causal: bool
    low_precision: bool     # 16-bit inputs: P and dS go to the cube in the input dtype
    c0: int
    dq_pass: bool           # True: the dQ pass (also writes D and lse); False: dK / dV
    s_quant: int            # fixpipe quant_pre of S and dP: F322F16 (float16 inputs: S, dP
                            # handed over in float16, Q x scale by the dQ pass's AIVs) or NoQuant


@asc.jit(kernel_type="MIX_AIC_1_2")
def flash_attention_backward_kernel(
        q: asc.GlobalAddress, k: asc.GlobalAddress, v: asc.GlobalAddress,
        out: asc.GlobalAddress, dout: asc.GlobalAddress, smax: asc.GlobalAddress,
        ssum: asc.GlobalAddress, dsum: asc.GlobalAddress, lse: asc.GlobalAddress,
        dq: asc.GlobalAddress, dk: asc.GlobalAddress, dv: asc.GlobalAddress,
        ws: asc.GlobalAddress, wsp: asc.GlobalAddress, qs: asc.GlobalAddress,
        shape: BackwardShape,
        layout: BackwardLayout, scale: float, variant: asc.ConstExpr[BackwardVariant],
        tiling: asc.ConstExpr[FlashAttentionBackwardTiling],
        bufs: asc.ConstExpr[FlashAttentionBackwardBuffers]):
    """One pass of the backward (variant.dq_pass): see the module docstring."""
    d = variant.head_dim
    s1b = tiling.s1_block
    s2b = tiling.s2_block
    g = asc.get_block_idx()
    if asc.ascend_is_aiv():
        g = asc.get_block_idx() // 2
    groups = asc.get_block_num()
    n_s1 = (shape.s1 + s1b - 1) // s1b
    n_s2 = (shape.s2 + s2b - 1) // s2b
    pipe = asc.TPipe()
    if asc.ascend_is_aic():
        if variant.dq_pass:         # K_j of the tiles in flight; Q_i, dO_i per item
            qa1 = asc.TQue(asc.TPosition.A1, 1)
            oa1 = asc.TQue(asc.TPosition.A1, 1)
            kb1 = asc.TQue(asc.TPosition.B1, NSLOT)
            vb1 = asc.TQue(asc.TPosition.B1, 2)
            pipe.init_buffer(qa1, 1, bufs.q_l1)
            pipe.init_buffer(oa1, 1, bufs.do_l1)
            pipe.init_buffer(kb1, NSLOT, bufs.k_l1)
            pipe.init_buffer(vb1, 2, bufs.v_l1)
        else:                       # Q_i, dO_i of the tiles in flight; K_j, V_j per item
            qa1 = asc.TQue(asc.TPosition.A1, NSLOT)
            oa1 = asc.TQue(asc.TPosition.A1, NSLOT)
            kb1 = asc.TQue(asc.TPosition.B1, 1)
            vb1 = asc.TQue(asc.TPosition.B1, 1)
            pipe.init_buffer(qa1, NSLOT, bufs.q_l1)
            pipe.init_buffer(oa1, NSLOT, bufs.do_l1)
            pipe.init_buffer(kb1, 1, bufs.k_l1)
            pipe.init_buffer(vb1, 1, bufs.v_l1)
        xb1 = asc.TQue(asc.TPosition.B1, 1)
        pa1 = asc.TQue(asc.TPosition.A1, 2)
        l0a = asc.TBuf(asc.TPosition.A2)
        l0b = asc.TBuf(asc.TPosition.B2)
        l0c = asc.TBuf(asc.TPosition.CO1)
        pipe.init_buffer(xb1, 1, bufs.x_l1)
        pipe.init_buffer(pa1, 2, bufs.p_l1)
        pipe.init_buffer(l0a, 2 * bufs.a_slot)
        pipe.init_buffer(l0b, 2 * bufs.b_slot)
        pipe.init_buffer(l0c, bufs.l0c)
        a0 = l0a.get_with_offset(bufs.a_slot // q.dtype.sizeof(), 0, q.dtype)
        a1 = l0a.get_with_offset(bufs.a_slot // q.dtype.sizeof(), bufs.a_slot, q.dtype)
        b0 = l0b.get_with_offset(bufs.b_slot // q.dtype.sizeof(), 0, q.dtype)
        b1 = l0b.get_with_offset(bufs.b_slot // q.dtype.sizeof(), bufs.b_slot, q.dtype)
        sdc = l0c.get_with_offset(2 * s1b * s2b, 0, asc.float32)     # S, then dP
        dpc = l0c.get_with_offset(s1b * s2b, bufs.dp_l0c, asc.float32)
        acc = l0c.get_with_offset(max(s1b, s2b) * d, bufs.acc_l0c, asc.float32)
        acc2 = l0c.get_with_offset(s2b * d, bufs.acc2_l0c, asc.float32)
        wsg = asc.GlobalTensor()
        wsg.set_global_buffer(ws + g * NSLOT * bufs.ws_slot, NSLOT * bufs.ws_slot)
        wpg = asc.GlobalTensor()
        wpg.set_global_buffer(wsp + g * NSLOT * bufs.wsp_slot, NSLOT * bufs.wsp_slot)
        qsrc = q                            # Q_i's rows: Q, or Q x scale (float16)
        if variant.s_quant:
            qsrc = qs
        c = 0                               # tiles handed over so far: workspace slot c % NSLOT
        mm = 0                              # mmads so far: L0A / L0B slot mm % 2
        cube_begin()
        for item in range(g, shape.items, groups):
            if variant.dq_pass:
                mm, steps = dq_item_cube(item, k, v, dout, dq, qsrc, qa1, oa1, kb1, vb1, xb1,
                                         pa1, a0, a1, b0, b1, sdc, dpc, acc, wsg, wpg, c, mm,
                                         shape, layout.q, layout.kv, d, s1b, s2b, n_s1, n_s2,
                                         bufs.ws_slot, bufs.wsp_slot, variant.c0,
                                         variant.causal, variant.low_precision,
                                         variant.s_quant)
            else:
                mm, steps = dkv_item_cube(item, q, k, v, dout, dk, dv, qsrc, qa1, oa1, kb1, vb1,
                                          xb1, pa1, a0, a1, b0, b1, sdc, dpc, acc, acc2, wsg,
                                          wpg, c, mm, shape, layout.q, layout.kv, d, s1b, s2b,
                                          n_s1, n_s2, bufs.ws_slot, bufs.wsp_slot, variant.c0,
                                          variant.causal, variant.low_precision,
                                          variant.s_quant)
            c += steps
        cube_end()
    else:
        h = bufs.rows
        r0 = asc.get_sub_block_idx() * h    # this AIV's first row of the tile
        sub = asc.get_sub_block_idx()
        calc = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(calc, bufs.calc)
        wide = h * max(s2b, d)
        low_n = 0
        if variant.low_precision:
            low_n = wide
        tile = h * s2b                      # two UB slots (kernels/..._backward_vector.py)
        low_t = 0
        if variant.low_precision:
            low_t = tile
        s0 = calc.get_with_offset(wide, bufs.s_ub, asc.float32)
        s1 = calc.get_with_offset(tile, bufs.s_ub1, asc.float32)
        d0 = calc.get_with_offset(wide, bufs.dp_ub, asc.float32)
        d1 = calc.get_with_offset(tile, bufs.dp_ub1, asc.float32)
        h0 = calc.get_with_offset(low_n, bufs.p16_ub, q.dtype)
        h1 = calc.get_with_offset(low_t, bufs.p16_ub1, q.dtype)
        g0 = calc.get_with_offset(low_n, bufs.ds16_ub, q.dtype)
        g1 = calc.get_with_offset(low_t, bufs.ds16_ub1, q.dtype)
        l0 = calc.get_with_offset(h, bufs.lse_ub, asc.float32)
        l1 = calc.get_with_offset(h, bufs.lse_ub1, asc.float32)
        e0 = calc.get_with_offset(h, bufs.dsum_ub, asc.float32)
        e1 = calc.get_with_offset(h, bufs.dsum_ub1, asc.float32)
        fold = calc.get_with_offset(h * 64, bufs.fold_ub, asc.float32)
        bc = calc.get_with_offset(h * 8, bufs.brcb_ub, asc.float32)
        red_u = calc.get_with_offset(h, bufs.red_ub, asc.float32)
        wsg = asc.GlobalTensor()
        wsg.set_global_buffer(ws + g * NSLOT * bufs.ws_slot, NSLOT * bufs.ws_slot)
        wpg = asc.GlobalTensor()
        wpg.set_global_buffer(wsp + g * NSLOT * bufs.wsp_slot, NSLOT * bufs.wsp_slot)
        ds_scale = scale
        if variant.s_quant and not variant.dq_pass:     # dK = dS^T (Q x scale): dS unscaled
            ds_scale = 1.0
        qsrc = q
        if variant.s_quant:
            qsrc = qs
        c = 0
        for item in range(g, shape.items, groups):
            if variant.dq_pass:
                steps = dq_item_vector(item, g, groups, q, qsrc, out, dout, smax, ssum, dsum,
                                       lse, s0, s1, d0, d1, h0, h1, g0, g1, l0, e0, fold, bc,
                                       red_u, wsg, wpg, c, shape, layout.q, n_s1, n_s2, s1b,
                                       s2b, h, r0, d, bufs.ws_slot, bufs.wsp_slot, scale,
                                       ds_scale, variant.causal, variant.s_quant != 0,
                                       variant.low_precision)
            else:
                steps = dkv_item_vector(item, dk, dv, dsum, lse, s0, s1, d0, d1, h0, h1, g0, g1,
                                        l0, l1, e0, e1, bc, wsg, wpg, c, shape, layout.kv, n_s1,
                                        n_s2, s1b, s2b, h, r0, sub, d, bufs.ws_slot,
                                        bufs.wsp_slot, scale, ds_scale, variant.causal,
                                        variant.s_quant != 0, variant.low_precision)
            c += steps


# ---- host side ----------------------------------------------------------------------------------

def _strides(layout, shape, heads):
    """(B, N, S, D) and (row, head, batch) element strides of a tensor in `layout` (as the
    forward's host side reads them)."""
    rank = {"BNSD": 4, "BSND": 4, "BSH": 3}[layout]
    if len(shape) != rank or min(shape) < 1:
        raise ValueError(f"{API}: a tensor in layout {layout} must be {rank}-D "
                         f"({', '.join(layout)}) with every dim >= 1, got shape={tuple(shape)}")
    if layout == "BNSD":
        b, n, s, d = shape
        return (b, n, s, d), (d, s * d, n * s * d)
    if layout == "BSND":
        b, s, n, d = shape
        return (b, n, s, d), (n * d, d, s * n * d)
    b, s, h = shape
    if heads is None or h % heads:
        raise ValueError(f"{API}: BSH needs head_num dividing H, got H={h}, head_num={heads}")
    d = h // heads
    return (b, heads, s, d), (h, d, s * h)


_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(asc.bfloat16.numpy))


def _check_inputs(dout, q, k, v, out, smax, ssum, layout, head_num, kv_head_num):
    """The sizes (B, N, N_kv, S1, S2, D) and the q / kv strides; raises ValueError on bad input."""
    if layout not in LAYOUTS:
        raise ValueError(f"{API}: layout must be one of {LAYOUTS}, got layout={layout!r}")
    for name, x in (("k", k), ("v", v), ("dout", dout), ("out", out)):
        if np.dtype(x.dtype) != np.dtype(q.dtype):
            raise ValueError(f"{API}: {name} must have q's dtype {np.dtype(q.dtype)}, got "
                             f"{name}.dtype={np.dtype(x.dtype)}")
    if np.dtype(q.dtype) not in _DTYPES:
        raise ValueError(f"{API}: dtype must be float32, float16 or bfloat16, got "
                         f"dtype={np.dtype(q.dtype)}")
    for name, x in (("dout", dout), ("out", out)):
        if tuple(x.shape) != tuple(q.shape):
            raise ValueError(f"{API}: {name} must have q's shape {tuple(q.shape)}, got "
                             f"{name}.shape={tuple(x.shape)}")
    (B, N, S1, D), qs = _strides(layout, q.shape, head_num)
    (Bk, NK, S2, Dk), ks = _strides(layout, k.shape, kv_head_num or head_num)
    (_, NV, S2v, Dv), _ = _strides(layout, v.shape, kv_head_num or head_num)
    if (Bk, Dk) != (B, D) or (NV, S2v, Dv) != (NK, S2, Dk) or N % NK:
        raise ValueError(f"{API}: k and v must be (B, N_kv, S2, D) with N_kv dividing N in "
                         f"layout {layout}, got q {tuple(q.shape)}, k {tuple(k.shape)}, "
                         f"v {tuple(v.shape)}")
    if D % 16:
        raise ValueError(f"{API}: head dim D must be a multiple of 16, got D={D}")
    for name, x in (("softmax_max", smax), ("softmax_sum", ssum)):
        if tuple(x.shape) != (B, N, S1) or np.dtype(x.dtype) != np.dtype(np.float32):
            raise ValueError(f"{API}: {name} must be float32 of shape (B, N, S1)={(B, N, S1)}, "
                             f"got {name}.shape={tuple(x.shape)} dtype={np.dtype(x.dtype)}")
    return (B, N, NK, S1, S2, D), qs, ks


def flash_attention_backward(dout, q, k, v, out, softmax_max, softmax_sum, *, layout="BNSD",
                             head_num=None, kv_head_num=None, scale=None, causal=False,
                             stream=None, tiling=None, **launch_options):
    """Mirrors aclnnFlashAttentionScoreGrad: (dq, dk, dv) in the inputs' dtype and layouts, from
    the forward's out and stats (`flash_attention_with_stats`). numpy in -> numpy out;
    rt.DeviceArray in -> DeviceArrays out, launched asynchronously on `stream`."""
    dev = is_device(dout, q, k, v, out, softmax_max, softmax_sum)
    rt.ensure_device()
    (B, N, NK, S1, S2, D), qs, ks = _check_inputs(dout, q, k, v, out, softmax_max,
                                                  softmax_sum, layout, head_num, kv_head_num)
    isz = np.dtype(q.dtype).itemsize
    t = (tiling or flash_attention_backward_tiling(D, q.dtype, S1, S2)).validate(D, isz)
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if not dev:         # one device copy of the inputs serves both passes
        run = rt.Stream()
        ins = [rt.to_device(np.ascontiguousarray(x)) for x in
               (dout, q, k, v, out, softmax_max, softmax_sum)]
        res = flash_attention_backward(*ins, layout=layout, head_num=head_num,
                                       kv_head_num=kv_head_num, scale=scale, causal=causal,
                                       stream=run, tiling=t, **launch_options)
        run.synchronize()
        return tuple(r.copy_to_host() for r in res)
    dq = rt.device_empty(q.shape, q.dtype)
    dk = rt.device_empty(k.shape, k.dtype)
    dv = rt.device_empty(v.shape, v.dtype)
    dsum = rt.device_empty((B * N * S1,), np.float32)
    lse = rt.device_empty((B * N * S1,), np.float32)
    bufs = flash_attention_backward_buffers(t, D, isz)
    items = {True: B * N * ceil_div(S1, t.s1_block), False: B * NK * ceil_div(S2, t.s2_block)}
    groups = {p: max(1, min(n, rt.get_soc().ai_core_num)) for p, n in items.items()}
    most = max(groups.values())
    quant = half_scores(q.dtype)
    ws = rt.device_empty((most * NSLOT * bufs.ws_slot,), q.dtype if quant else np.float32)
    wsp = rt.device_empty((most * NSLOT * bufs.wsp_slot,), q.dtype)
    qsc = rt.device_empty((B * N * S1 * D,), q.dtype) if quant else dsum     # Q x scale
    strides = BackwardLayout(RowStrides(*qs), RowStrides(*ks))
    low = isz < 4
    s_quant = int(asc.QuantModes.F322F16) if quant else int(asc.QuantModes.NoQuant)
    for dq_pass in (True, False):       # the dKV pass reads the D and lse the dQ pass wrote
        kern = flash_attention_backward_kernel[groups[dq_pass], stream] if stream is not None \
            else flash_attention_backward_kernel[groups[dq_pass]]
        kern(q, k, v, out, dout, softmax_max, softmax_sum, dsum, lse, dq, dk, dv, ws, wsp, qsc,
             BackwardShape(N, NK, S1, S2, items[dq_pass]), strides, scale,
             BackwardVariant(D, bool(causal), low, 32 // isz, dq_pass, s_quant), t, bufs,
             **launch_options)
    return dq, dk, dv


def flash_attention_backward_reference(dout, q, k, v, *, layout="BNSD", head_num=None,
                                       kv_head_num=None, scale=None, causal=False):
    """float64 numpy reference of the exact gradients (the forward recomputed in float64)."""
    def to_bnsd(x, heads):
        (b, n, s, d), _ = _strides(layout, x.shape, heads)
        x = np.asarray(x).astype(np.float64)
        return x if layout == "BNSD" else x.reshape(b, s, n, d).transpose(0, 2, 1, 3)

    def back(x, like):
        return x if layout == "BNSD" else x.transpose(0, 2, 1, 3).reshape(like.shape)
    qq, do = to_bnsd(q, head_num), to_bnsd(dout, head_num)
    kk, vv = to_bnsd(k, kv_head_num or head_num), to_bnsd(v, kv_head_num or head_num)
    group = qq.shape[1] // kk.shape[1]
    ke, ve = np.repeat(kk, group, axis=1), np.repeat(vv, group, axis=1)
    scale = 1.0 / math.sqrt(qq.shape[-1]) if scale is None else scale
    s = np.einsum("bnid,bnjd->bnij", qq, ke) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bnij,bnjd->bnid", p, ve)
    dp = np.einsum("bnid,bnjd->bnij", do, ve)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    dq = scale * np.einsum("bnij,bnjd->bnid", ds, ke)
    dk = scale * np.einsum("bnij,bnid->bnjd", ds, qq)
    dv = np.einsum("bnij,bnid->bnjd", p, do)
    b, n, s2, d = kk.shape
    dk = dk.reshape(b, n, group, s2, d).sum(2)
    dv = dv.reshape(b, n, group, s2, d).sum(2)
    return back(dq, q), back(dk, k), back(dv, v)
