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
from .flash_attention_backward_parts import (GRADS, NSLOT, Q_READY, cube_begin, cube_end,
                                             ds_k_product, issue_kv_block, issue_q_block,
                                             load_nz, load_strips16, store_acc, store_row,
                                             sync, transposed_product)
from .flash_attention_backward_vector import dkv_item, item_tiles, row_stats, scaled_q_item
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
    group = shape.heads // shape.kv_heads
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
        half = s1b * s2b
        c = 0                               # tiles handed over so far: workspace slot c % NSLOT
        mm = 0                              # mmads so far: L0A / L0B slot mm % 2
        cube_begin()
        for item in range(g, shape.items, groups):
            if variant.dq_pass:
                b = item // (shape.heads * n_s1)
                n = (item // n_s1) % shape.heads
                s1_0 = (item % n_s1) * s1b
                m = min(s1b, shape.s1 - s1_0)
                m16 = (m + 15) // 16 * 16
                q_off = b * layout.q.batch + n * layout.q.head + s1_0 * layout.q.row
                kv_base = b * layout.kv.batch + (n // group) * layout.kv.head
                steps = n_s2
                if variant.causal:
                    steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
                qg = asc.GlobalTensor()
                if variant.s_quant:         # Q x scale, written by the AIVs (rows d apart)
                    asc.cross_core_wait_flag(Q_READY, 2, asc.PipeID.PIPE_MTE2)
                    qg.set_global_buffer(qs + ((b * shape.heads + n) * shape.s1 + s1_0) * d,
                                         m * d)
                    q1 = load_nz(qa1, qg, m, d, d, m16, q.dtype)
                else:
                    qg.set_global_buffer(q + q_off, (m - 1) * layout.q.row + d)
                    q1 = load_nz(qa1, qg, m, d, layout.q.row, m16, q.dtype)
                og = asc.GlobalTensor()
                og.set_global_buffer(dout + q_off, (m - 1) * layout.q.row + d)
                o1 = load_nz(oa1, og, m, d, layout.q.row, m16, q.dtype)
                # issue tile u (S, dP), then take the AIVs' dS of tile u - NSLOT + 1: NSLOT - 1
                # tiles in flight, their K_j held in kb1's FIFO (re-enqueued) for dQ += dS K_j
                for u in range(steps + NSLOT - 1):
                    if u < steps:
                        s2_0 = u * s2b
                        kv_addr = kv_base + s2_0 * layout.kv.row
                        k1 = issue_kv_block(kb1, vb1, k + kv_addr, v + kv_addr, layout.kv.row,
                                             wsg[((c + u) % NSLOT) * bufs.ws_slot:], sdc, dpc,
                                             a0, a1, b0, b1, mm % 2, q1, o1, m,
                                             min(s2b, shape.s2 - s2_0), d, s1b, s2b,
                                             variant.c0, variant.s_quant)
                        kb1.enque(k1)
                        mm += 2
                    t = u - (NSLOT - 1)
                    if t >= 0:              # consume tile t: dQ += dS K
                        s2_0 = t * s2b
                        n2 = min(s2b, shape.s2 - s2_0)
                        k1 = kb1.deque(q.dtype)
                        asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
                        slot = ((c + t) % NSLOT) * bufs.wsp_slot
                        if variant.low_precision:   # K's NZ is its 16-column strips
                            ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:],
                                          k1, m, n2, d, s2b, variant.c0, t == 0)
                        else:
                            kg = asc.GlobalTensor()
                            kg.set_global_buffer(k + (kv_base + s2_0 * layout.kv.row),
                                                 (n2 - 1) * layout.kv.row + d)
                            x1 = load_strips16(xb1, kg, n2, d, layout.kv.row,
                                                (n2 + 7) // 8 * 8, variant.c0, q.dtype)
                            ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:],
                                          x1, m, n2, d, s2b, variant.c0, t == 0)
                            xb1.free_tensor(x1)
                        mm += 1
                        kb1.free_tensor(k1)
                c += steps
                qa1.free_tensor(q1)
                oa1.free_tensor(o1)
                dqg = asc.GlobalTensor()
                dqg.set_global_buffer(dq + q_off, (m - 1) * layout.q.row + d)
                store_acc(dqg, acc, m, d, layout.q.row)
            else:
                b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
                    item, shape, layout.kv, variant.causal, n_s1, n_s2, s1b, s2b, group)
                n16 = (n2 + 15) // 16 * 16
                if steps > 0:
                    kg = asc.GlobalTensor()
                    kg.set_global_buffer(k + kv_off, (n2 - 1) * layout.kv.row + d)
                    vg = asc.GlobalTensor()
                    vg.set_global_buffer(v + kv_off, (n2 - 1) * layout.kv.row + d)
                    k1 = load_nz(kb1, kg, n2, d, layout.kv.row, n16, q.dtype)
                    v1 = load_nz(vb1, vg, n2, d, layout.kv.row, n16, q.dtype)
                    q_row = layout.q.row
                    if variant.s_quant:     # Q x scale (dK = dS^T (Q x scale), dS unscaled)
                        q_row = d
                    # issue tile u, take tile u - NSLOT + 1 (Q_i, dO_i held in FIFO for dK, dV)
                    for u in range(steps + NSLOT - 1):
                        if u < steps:
                            n = nk * group + u // per_head
                            s1_0 = (i0 + u % per_head) * s1b
                            q_off = b * layout.q.batch + n * layout.q.head + s1_0 * layout.q.row
                            qa = q + q_off
                            if variant.s_quant:
                                qa = qs + ((b * shape.heads + n) * shape.s1 + s1_0) * d
                            q1, o1 = issue_q_block(qa1, oa1, qa, q_row, dout + q_off,
                                                    layout.q.row,
                                                    wsg[((c + u) % NSLOT) * bufs.ws_slot:],
                                                    sdc, dpc, a0, a1, b0, b1, mm % 2, k1, v1,
                                                    min(s1b, shape.s1 - s1_0), n2, d, s1b,
                                                    s2b, variant.c0, variant.s_quant)
                            qa1.enque(q1)
                            oa1.enque(o1)
                            mm += 2
                        t = u - (NSLOT - 1)
                        if t >= 0:          # consume tile t: dV += P^T dO, dK += dS^T Q
                            q1 = qa1.deque(q.dtype)
                            o1 = oa1.deque(q.dtype)
                            n = nk * group + t // per_head
                            s1_0 = (i0 + t % per_head) * s1b
                            m = min(s1b, shape.s1 - s1_0)
                            asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
                            slot = ((c + t) % NSLOT) * bufs.wsp_slot
                            if variant.low_precision:   # their NZ is their 16-column strips
                                transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:],
                                                    o1, m, n2, d, s2b, variant.c0, t == 0)
                                transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                                    wpg[slot + half:], q1, m, n2, d, s2b,
                                                    variant.c0, t == 0)
                            else:
                                q_off = (b * layout.q.batch + n * layout.q.head
                                         + s1_0 * layout.q.row)
                                og = asc.GlobalTensor()
                                og.set_global_buffer(dout + q_off, (m - 1) * layout.q.row + d)
                                qg = asc.GlobalTensor()
                                qg.set_global_buffer(q + q_off, (m - 1) * layout.q.row + d)
                                kpad = (m + 7) // 8 * 8
                                x1 = load_strips16(xb1, og, m, d, layout.q.row, kpad,
                                                    variant.c0, q.dtype)
                                transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:],
                                                    x1, m, n2, d, s2b, variant.c0, t == 0)
                                xb1.free_tensor(x1)
                                x1 = load_strips16(xb1, qg, m, d, layout.q.row, kpad,
                                                    variant.c0, q.dtype)
                                transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                                    wpg[slot + half:], x1, m, n2, d, s2b,
                                                    variant.c0, t == 0)
                                xb1.free_tensor(x1)
                            mm += 2
                            qa1.free_tensor(q1)
                            oa1.free_tensor(o1)
                    c += steps
                    kb1.free_tensor(k1)
                    vb1.free_tensor(v1)
                    dvg = asc.GlobalTensor()
                    dvg.set_global_buffer(dv + kv_off, (n2 - 1) * layout.kv.row + d)
                    store_acc(dvg, acc, n2, d, layout.kv.row)
                    dkg = asc.GlobalTensor()
                    dkg.set_global_buffer(dk + kv_off, (n2 - 1) * layout.kv.row + d)
                    store_acc(dkg, acc2, n2, d, layout.kv.row)
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
        c = 0
        for item in range(g, shape.items, groups):
            if variant.dq_pass:
                if variant.s_quant and item == g:   # the first item's Q x scale
                    scaled_q_item(item, shape, layout.q, qs, q, h0, s0, n_s1, s1b, h, r0, d,
                                  scale)
                b = item // (shape.heads * n_s1)
                n = (item // n_s1) % shape.heads
                s1_0 = (item % n_s1) * s1b
                m = min(s1b, shape.s1 - s1_0)
                mh = min(h, m - r0)
                steps = n_s2
                if variant.causal:
                    steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
                if mh > 0:                  # D = rowsum(dO * O) and lse of this AIV's rows
                    row_stats(dout, out, smax, ssum, dsum, lse, s0, d0, h0, g0, fold, l0, e0,
                              red_u, b * layout.q.batch + n * layout.q.head
                              + (s1_0 + r0) * layout.q.row,
                              (b * shape.heads + n) * shape.s1 + s1_0 + r0, mh, d,
                              layout.q.row, variant.low_precision)
                if variant.s_quant and item + groups < shape.items:     # the next item's Q
                    scaled_q_item(item + groups, shape, layout.q, qs, q, h0, s0, n_s1, s1b, h,
                                  r0, d, scale)
                item_tiles(s0, s1, d0, d1, h0, h1, g0, g1, l0, l0, e0, e0, bc, wsg, wpg, lse,
                           dsum, c, steps, True, b, n, s1_0, 0, group, 0, 0, 0, 0, shape, s1b,
                           s2b, h, r0, bufs.ws_slot, bufs.wsp_slot, scale, ds_scale,
                           variant.causal, variant.s_quant != 0, variant.low_precision)
                c += steps
            else:
                b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
                    item, shape, layout.kv, variant.causal, n_s1, n_s2, s1b, s2b, group)
                item_tiles(s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc, wsg, wpg, lse,
                           dsum, c, steps, False, b, 0, 0, nk, group, per_head, i0, s2_0, n2,
                           shape, s1b, s2b, h, r0, bufs.ws_slot, bufs.wsp_slot, scale,
                           ds_scale, variant.causal, variant.s_quant != 0,
                           variant.low_precision)
                c += steps
                if steps == 0:              # no query row sees this S2 block: dK = dV = 0
                    hk = (n2 + 1) // 2
                    rk = min(hk, n2 - sub * hk)
                    asc.duplicate(s0, 0.0, d)
                    if variant.low_precision:
                        asc.cast(h0, s0, asc.RoundMode.CAST_RINT, d)
                    sync(asc.HardEvent.V_MTE3)
                    for r in range(sub * hk, sub * hk + rk):
                        zg = asc.GlobalTensor()
                        zg.set_global_buffer(dk + (kv_off + r * layout.kv.row), d)
                        yg = asc.GlobalTensor()
                        yg.set_global_buffer(dv + (kv_off + r * layout.kv.row), d)
                        if variant.low_precision:
                            store_row(zg, h0, d)
                            store_row(yg, h0, d)
                        else:
                            store_row(zg, s0, d)
                            store_row(yg, s0, d)
                    sync(asc.HardEvent.MTE3_V)


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
