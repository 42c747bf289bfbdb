"""FlashAttention backward (aclnnFlashAttentionScoreGrad) as a MIX kernel (MIX_AIC_1_2): in each
AI Core group the AIC runs the matmuls and its two AIVs the softmax gradient, each AIV on half
of the rows of the score tile, handing tiles over through a GM workspace ordered by cross-core
flags (mode 2). From the forward's saved stats, per (S1 block i, S2 block j) tile:

  AIC  S = Q_i K_j^T, dP = dO_i V_j^T  -> L0C -> fixpipe -> workspace slot;  set SCORES
  AIV  wait SCORES;  P = exp(scale S - lse) (lse = row max + ln(row sum), masked: 0),
       dS = scale * P * (dP - D) (D = rowsum(dO * O));  P, dS -> workspace;  set GRADS
  AIC  wait GRADS;  then the gradient products.

Two forms (FlashAttentionBackwardTiling.one_pass), each a few launches of this kernel
(BackwardVariant.stage):
- one-pass (the default; CANN's FlashAttentionScoreGrad on A2): PREP (AIVs only, one group per
  (b, n, S1 block)): D and lse per row -> GM, Q x scale (float16), zeros in dQ's float32 rows;
  FUSED (one group per (b, n_kv, S2 block), over every query head of the group: GQA sums in
  L0C): per tile dQ_i += dS K_j into L0C and added into dQ's float32 rows by an atomic fixpipe
  (set_atomic_add: the groups of every S2 block add into the same rows), dV_j += P^T dO_i,
  dK_j += dS^T Q_i kept in L0C; CAST (16-bit inputs, AIVs only): dQ's float32 rows x scale (if
  dS was unscaled) -> dq's dtype and layout. 5 matmuls per tile pair, one round of hand-offs;
  dQ's float32 sums land in whatever order the groups' adds do (not bit-reproducible).
- two-pass: DQ_PASS (one group per (b, n, S1 block)): dQ_i += dS K_j, also D and lse;
  DKV_PASS (one group per (b, n_kv, S2 block)): dV_j, dK_j; every accumulator stays in L0C
  and is written once by its owner (deterministic), at the price of recomputing S and dP
  (7 matmuls per tile pair).
The AIC runs NSLOT - 1 tiles ahead of its AIVs (NSLOT workspace slots; the L1 tiles in flight,
but float32's Q_i, dO_i, wait in their queue's FIFO for their gradient products), so the cross-core
round trip of a tile hides behind the cube work of the next ones; each AIV copies tile t + 1's
S and dP in while it works on tile t (kernels/flash_attention_backward_vector.py). float16
inputs hand S and dP over in float16 (fixpipe F322F16) with Q x scale as the cube's Q (written
by the AIVs: the PREP launch, or the dQ pass one item ahead, flag Q_READY), so S is already
scaled and cannot overflow where the f32 scaled S would not, and dK = dS^T (Q x scale) takes
an unscaled dS. bfloat16 and float32 keep f32 S and dP. Fully masked (causal) tiles are
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

The AIC's L1 queues: the dQ pass keeps K_j of the tiles in flight and one Q_i, dO_i per item;
the dK/dV passes (two-pass and fused) Q_i, dO_i of the tiles in flight (16-bit: the B operands
of dK, dV; float32 reloads those as 16-column strips, so its Q_i, dO_i are double-buffered and
freed once the scores have read them) and one K_j, V_j per item (and K_j as 16-column strips
in kx1: fused, float32).
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
from .flash_attention_backward_vector import (cast_item_vector, dkv_item_vector,
                                               dq_item_vector, prep_item_vector)
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


# the launches of a backward (BackwardVariant.stage): the two-pass form runs DQ_PASS then
# DKV_PASS; the one-pass form PREP, FUSED, then CAST (16-bit inputs only)
DQ_PASS, DKV_PASS, PREP, FUSED, CAST = range(5)


class BackwardVariant(NamedTuple):
    head_dim: int
    causal: bool
    low_precision: bool     # 16-bit inputs: P and dS go to the cube in the input dtype
    c0: int
    stage: int              # DQ_PASS (also writes D and lse), DKV_PASS, PREP, FUSED or CAST
    s_quant: int            # fixpipe quant_pre of S and dP: F322F16 (float16 inputs: S, dP
                            # handed over in float16, Q x scale by the dQ pass's AIVs) or NoQuant


@asc.jit
def vector_items(g, groups, q, qsrc, out, dout, smax, ssum, dsum, lse, dq, dk, dv, dqw, wsg,
                 wpg, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, fold, bc, red_u, shape,
                 lq, lkv, scale, d, causal, low, stage, quant, s1b, s2b, h, ws_slot, wsp_slot):
    """The AIVs' side of every launch (see the module docstring): the work items of `stage`."""
    n_s1 = (shape.s1 + s1b - 1) // s1b
    n_s2 = (shape.s2 + s2b - 1) // s2b
    r0 = asc.get_sub_block_idx() * h    # this AIV's first row of the tile
    sub = asc.get_sub_block_idx()
    ds_scale = scale
    if quant and stage != DQ_PASS:      # dK = dS^T (Q x scale): dS unscaled
        ds_scale = 1.0
    c = 0
    for item in range(g, shape.items, groups):
        steps = 0
        if stage == DQ_PASS:
            steps = dq_item_vector(item, g, groups, q, qsrc, out, dout, smax, ssum, dsum, lse,
                                   s0, s1, d0, d1, h0, h1, g0, g1, l0, e0, fold, bc, red_u, wsg,
                                   wpg, c, shape, lq, n_s1, n_s2, s1b, s2b, h, r0, d, ws_slot,
                                   wsp_slot, scale, ds_scale, causal, quant, low)
        elif stage == PREP:
            prep_item_vector(item, q, qsrc, out, dout, smax, ssum, dsum, lse, dqw, s0, d0, h0,
                             g0, l0, e0, fold, red_u, shape, lq, n_s1, s1b, h, r0, d, scale,
                             quant, low, not low)
        elif stage == CAST:
            cast_item_vector(item, dq, dqw, s0, h0, shape, lq, n_s1, s1b, h, r0, d,
                             scale / ds_scale)
        else:
            steps = dkv_item_vector(item, dk, dv, dsum, lse, s0, s1, d0, d1, h0, h1, g0, g1,
                                    l0, l1, e0, e1, bc, wsg, wpg, c, shape, lkv, n_s1, n_s2,
                                    s1b, s2b, h, r0, sub, d, ws_slot, wsp_slot, scale,
                                    ds_scale, causal, quant, low)
        c += steps


@asc.jit(kernel_type="MIX_AIC_1_2")
def flash_attention_backward_kernel(
        q: asc.GlobalAddress, k: asc.GlobalAddress, v: asc.GlobalAddress,
        out: asc.GlobalAddress, dout: asc.GlobalAddress, smax: asc.GlobalAddress,
        ssum: asc.GlobalAddress, dsum: asc.GlobalAddress, lse: asc.GlobalAddress,
        dq: asc.GlobalAddress, dk: asc.GlobalAddress, dv: asc.GlobalAddress,
        ws: asc.GlobalAddress, wsp: asc.GlobalAddress, qs: asc.GlobalAddress,
        dqw: asc.GlobalAddress, shape: BackwardShape,
        layout: BackwardLayout, scale: float, variant: asc.ConstExpr[BackwardVariant],
        tiling: asc.ConstExpr[FlashAttentionBackwardTiling],
        bufs: asc.ConstExpr[FlashAttentionBackwardBuffers]):
    """One launch of the backward (variant.stage): see the module docstring."""
    d = variant.head_dim
    s1b = tiling.s1_block
    s2b = tiling.s2_block
    g = asc.get_block_idx()
    if asc.ascend_is_aiv():
        g = asc.get_block_idx() // 2
    groups = asc.get_block_num()
    qsrc = q                                # Q_i's rows: Q, or Q x scale (float16)
    if variant.s_quant:
        qsrc = qs
    wsg = asc.GlobalTensor()
    wsg.set_global_buffer(ws + g * NSLOT * bufs.ws_slot, NSLOT * bufs.ws_slot)
    wpg = asc.GlobalTensor()
    wpg.set_global_buffer(wsp + g * NSLOT * bufs.wsp_slot, NSLOT * bufs.wsp_slot)
    pipe = asc.TPipe()
    cube = variant.stage == DQ_PASS or variant.stage == DKV_PASS or variant.stage == FUSED
    if asc.ascend_is_aic() and cube:
        # the AIC's L1 queues, depths as the module docstring says (made here, not in a
        # helper: queues returned from a helper cost CPU in compiled code)
        nq = NSLOT
        if not variant.low_precision:
            nq = 2
        nk = 1
        nv = 1
        if variant.stage == DQ_PASS:
            nq = 1
            nk = NSLOT
            nv = 2
        qa1 = asc.TQue(asc.TPosition.A1, NSLOT)
        oa1 = asc.TQue(asc.TPosition.A1, NSLOT)
        kb1 = asc.TQue(asc.TPosition.B1, NSLOT)
        vb1 = asc.TQue(asc.TPosition.B1, 2)
        xb1 = asc.TQue(asc.TPosition.B1, 1)
        kx1 = asc.TQue(asc.TPosition.B1, 1)
        pa1 = asc.TQue(asc.TPosition.A1, 2)
        pipe.init_buffer(qa1, nq, bufs.q_l1)
        pipe.init_buffer(oa1, nq, bufs.do_l1)
        pipe.init_buffer(kb1, nk, bufs.k_l1)
        pipe.init_buffer(vb1, nv, bufs.v_l1)
        pipe.init_buffer(xb1, 1, bufs.x_l1)
        pipe.init_buffer(kx1, 1, bufs.kx_l1)
        pipe.init_buffer(pa1, 2, bufs.p_l1)
        l0a = asc.TBuf(asc.TPosition.A2)
        l0b = asc.TBuf(asc.TPosition.B2)
        l0c = asc.TBuf(asc.TPosition.CO1)
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
        dqc = l0c.get_with_offset(bufs.dq_l0c_n, bufs.dq_l0c, asc.float32)
        n_s1 = (shape.s1 + s1b - 1) // s1b
        n_s2 = (shape.s2 + s2b - 1) // s2b
        c = 0                               # tiles handed over so far: workspace slot c % NSLOT
        mm = 0                              # mmads so far: L0A / L0B slot mm % 2
        cube_begin()
        for item in range(g, shape.items, groups):
            if variant.stage == DQ_PASS:
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
                                          variant.s_quant, variant.stage == FUSED, dqc, kx1,
                                          dqw)
            c += steps
        cube_end()
    elif asc.ascend_is_aiv():
        h = bufs.rows
        calc = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(calc, bufs.calc)
        wide = h * max(s2b, d)
        low_n = 0
        low_t = 0
        if variant.low_precision:
            low_n = wide
            low_t = h * s2b             # two UB slots (kernels/..._backward_vector.py)
        vector_items(g, groups, q, qsrc, out, dout, smax, ssum, dsum, lse, dq, dk, dv, dqw, wsg,
                     wpg, calc.get_with_offset(wide, bufs.s_ub, asc.float32),
                     calc.get_with_offset(h * s2b, bufs.s_ub1, asc.float32),
                     calc.get_with_offset(wide, bufs.dp_ub, asc.float32),
                     calc.get_with_offset(h * s2b, bufs.dp_ub1, asc.float32),
                     calc.get_with_offset(low_n, bufs.p16_ub, q.dtype),
                     calc.get_with_offset(low_t, bufs.p16_ub1, q.dtype),
                     calc.get_with_offset(low_n, bufs.ds16_ub, q.dtype),
                     calc.get_with_offset(low_t, bufs.ds16_ub1, q.dtype),
                     calc.get_with_offset(h, bufs.lse_ub, asc.float32),
                     calc.get_with_offset(h, bufs.lse_ub1, asc.float32),
                     calc.get_with_offset(h, bufs.dsum_ub, asc.float32),
                     calc.get_with_offset(h, bufs.dsum_ub1, asc.float32),
                     calc.get_with_offset(h * 64, bufs.fold_ub, asc.float32),
                     calc.get_with_offset(h * 8, bufs.brcb_ub, asc.float32),
                     calc.get_with_offset(h, bufs.red_ub, asc.float32), shape, layout.q,
                     layout.kv, scale, d, variant.causal, variant.low_precision, variant.stage,
                     variant.s_quant != 0, s1b, s2b, h, bufs.ws_slot, bufs.wsp_slot)


# ---- host side ----------------------------------------------------------------------------------

def backward_launches(tiling, dtype) -> list:
    """(label, NPU-view folder) of each launch one backward call makes with `tiling`, in order
    (the profile's last len(...) runs of flash_attention_backward_kernel)."""
    if not tiling.one_pass:
        return [("dQ pass", "backward_dq"), ("dK/dV pass", "backward_dkv")]
    out = [("prep pass (D, lse, zero dQ)", "backward_prep"), ("fused pass", "backward_fused")]
    if np.dtype(dtype).itemsize < 4:
        out.append(("dQ cast pass", "backward_cast"))
    return out


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
    q_items, kv_items = B * N * ceil_div(S1, t.s1_block), B * NK * ceil_div(S2, t.s2_block)
    low = isz < 4
    if t.one_pass:      # D, lse (and zeros in dQ's f32 rows); S, dP once per tile; dQ's cast
        stages = [(PREP, q_items), (FUSED, kv_items)] + ([(CAST, q_items)] if low else [])
    else:               # the dKV pass reads the D and lse the dQ pass wrote
        stages = [(DQ_PASS, q_items), (DKV_PASS, kv_items)]
    cores = rt.get_soc().ai_core_num
    most = max(1, min(max(q_items, kv_items), cores))
    quant = half_scores(q.dtype)
    ws = rt.device_empty((most * NSLOT * bufs.ws_slot,), q.dtype if quant else np.float32)
    wsp = rt.device_empty((most * NSLOT * bufs.wsp_slot,), q.dtype)
    qsc = rt.device_empty((B * N * S1 * D,), q.dtype) if quant else dsum     # Q x scale
    # the one-pass form's float32 dQ rows: dq itself (float32), else a (B, N, S1, D) workspace
    dqw = (rt.device_empty((B * N * S1 * D,), np.float32) if low else dq) if t.one_pass \
        else dsum
    strides = BackwardLayout(RowStrides(*qs), RowStrides(*ks))
    s_quant = int(asc.QuantModes.F322F16) if quant else int(asc.QuantModes.NoQuant)
    for stage, items in stages:
        groups = max(1, min(items, cores))
        kern = flash_attention_backward_kernel[groups, stream] if stream is not None \
            else flash_attention_backward_kernel[groups]
        kern(q, k, v, out, dout, softmax_max, softmax_sum, dsum, lse, dq, dk, dv, ws, wsp, qsc,
             dqw, BackwardShape(N, NK, S1, S2, items), strides, scale,
             BackwardVariant(D, bool(causal), low, 32 // isz, stage, s_quant), t, bufs,
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
