"""The AIC's work items of kernels/flash_attention_backward.py: one S1 block of the dQ pass
(`dq_item_cube`) and one S2 block of the dK/dV pass (`dkv_item_cube`), each issuing its tiles'
S and dP NSLOT - 1 tiles ahead of the gradient products it takes back from its AIVs.

Plain @asc.jit helpers called from the kernel: their arguments are run-time values in compiled
kernels, so the variant's flags (causal, low, quant) are branches here, and every GM address the
kernel's ConstExprs choose between (Q or Q x scale) is chosen in the kernel and passed in as one
address of the input dtype. A helper call records nothing on the NPU view: the instruction
stream, and so the simulated time, is the one the kernel's inline code had."""
from __future__ import annotations

import ascendc as asc

from .flash_attention_backward_parts import (GRADS, NSLOT, Q_READY, dq_tile, ds_k_product,
                                             issue_kv_block, issue_q_block, load_nz,
                                             load_strips16, store_acc, transposed_mmad,
                                             transposed_product)
from .flash_attention_backward_vector import dkv_item


@asc.jit
def dq_item_cube(item, k, v, dout, dq, qsrc, qa1, oa1, kb1, vb1, xb1, pa1, a0, a1, b0, b1, sdc,
                 dpc, acc, wsg, wpg, c, mm, shape, lq, lkv, d, s1b, s2b, n_s1, n_s2, ws_slot,
                 wsp_slot, c0, causal, low, quant):
    """The dQ pass's item (S1 block of one head): Q_i (qsrc: Q x scale rows d apart with
    `quant`, else Q), dO_i -> L1; per S2 block S, dP out, then dQ_i += dS K_j; dQ_i -> GM.
    Returns (mmads so far, tiles of the item)."""
    group = shape.heads // shape.kv_heads
    half = s1b * s2b
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    m = min(s1b, shape.s1 - s1_0)
    m16 = (m + 15) // 16 * 16
    q_off = b * lq.batch + n * lq.head + s1_0 * lq.row
    kv_base = b * lkv.batch + (n // group) * lkv.head
    steps = n_s2
    if causal:
        steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
    q_at = q_off
    q_row = lq.row
    if quant:                   # Q x scale, written by the AIVs (rows d apart)
        asc.cross_core_wait_flag(Q_READY, 2, asc.PipeID.PIPE_MTE2)
        q_at = ((b * shape.heads + n) * shape.s1 + s1_0) * d
        q_row = d
    qg = asc.GlobalTensor()
    qg.set_global_buffer(qsrc + q_at, (m - 1) * q_row + d)
    q1 = load_nz(qa1, qg, m, d, q_row, m16, dout.dtype)
    og = asc.GlobalTensor()
    og.set_global_buffer(dout + q_off, (m - 1) * lq.row + d)
    o1 = load_nz(oa1, og, m, d, lq.row, m16, dout.dtype)
    # issue tile u (S, dP), then take the AIVs' dS of tile u - NSLOT + 1: NSLOT - 1 tiles in
    # flight, their K_j held in kb1's FIFO (re-enqueued) for dQ += dS K_j
    for u in range(steps + NSLOT - 1):
        if u < steps:
            s2_0 = u * s2b
            kv_addr = kv_base + s2_0 * lkv.row
            k1 = issue_kv_block(kb1, vb1, k + kv_addr, v + kv_addr, lkv.row,
                                wsg[((c + u) % NSLOT) * ws_slot:], sdc, dpc, a0, a1, b0, b1,
                                mm % 2, q1, o1, m, min(s2b, shape.s2 - s2_0), d, s1b, s2b, c0,
                                quant)
            kb1.enque(k1)
            mm += 2
        t = u - (NSLOT - 1)
        if t >= 0:              # consume tile t: dQ += dS K
            s2_0 = t * s2b
            n2 = min(s2b, shape.s2 - s2_0)
            k1 = kb1.deque(dout.dtype)
            asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
            slot = ((c + t) % NSLOT) * wsp_slot
            if low:             # K's NZ is its 16-column strips
                ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:], k1, m, n2,
                             d, s2b, c0, t == 0)
            else:
                kg = asc.GlobalTensor()
                kg.set_global_buffer(k + (kv_base + s2_0 * lkv.row), (n2 - 1) * lkv.row + d)
                x1 = load_strips16(xb1, kg, n2, d, lkv.row, (n2 + 7) // 8 * 8, c0, dout.dtype)
                ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:], x1, m, n2,
                             d, s2b, c0, t == 0)
                xb1.free_tensor(x1)
            mm += 1
            kb1.free_tensor(k1)
    qa1.free_tensor(q1)
    oa1.free_tensor(o1)
    dqg = asc.GlobalTensor()
    dqg.set_global_buffer(dq + q_off, (m - 1) * lq.row + d)
    store_acc(dqg, acc, m, d, lq.row)
    return mm, steps


@asc.jit
def dkv_item_cube(item, q, k, v, dout, dk, dv, qsrc, qa1, oa1, kb1, vb1, xb1, pa1, a0, a1, b0,
                  b1, sdc, dpc, acc, acc2, wsg, wpg, c, mm, shape, lq, lkv, d, s1b, s2b, n_s1,
                  n_s2, ws_slot, wsp_slot, c0, causal, low, quant, with_dq, dqc, kx1, dqw):
    """The dK/dV pass's item (S2 block of one KV head): K_j, V_j -> L1; per S1 block of every
    query head of the group S, dP out (Q_i from qsrc: Q x scale with `quant`; Q_i, dO_i held
    for the gradient products in 16 bits, freed at once in float32), then
    dV_j += P^T dO_i, dK_j += dS^T Q_i; dV_j, dK_j -> GM (an S2 block no query row sees: the
    AIVs write zeros). `with_dq` (the one-pass form): also dQ_i += dS K_j per tile, added
    atomically into the float32 rows at dqw (dq itself for float32 inputs, in its layout; else
    a (B, N, S1, D) workspace; K as 16-column strips in kx1 for float32). Returns (mmads so
    far, tiles of the item)."""
    group = shape.heads // shape.kv_heads
    half = s1b * s2b
    b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
        item, shape, lkv, causal, n_s1, n_s2, s1b, s2b, group)
    n16 = (n2 + 15) // 16 * 16
    if steps > 0:
        kg = asc.GlobalTensor()
        kg.set_global_buffer(k + kv_off, (n2 - 1) * lkv.row + d)
        vg = asc.GlobalTensor()
        vg.set_global_buffer(v + kv_off, (n2 - 1) * lkv.row + d)
        k1 = load_nz(kb1, kg, n2, d, lkv.row, n16, dout.dtype)
        v1 = load_nz(vb1, vg, n2, d, lkv.row, n16, dout.dtype)
        kx = k1                 # K as 16-column strips (16-bit: its NZ)
        if with_dq and not low:
            kx = load_strips16(kx1, kg, n2, d, lkv.row, (n2 + 7) // 8 * 8, c0, dout.dtype)
        q_row = lq.row
        if quant:               # Q x scale (dK = dS^T (Q x scale), dS unscaled)
            q_row = d
        # issue tile u, take tile u - NSLOT + 1 (Q_i, dO_i held in their FIFO for dK, dV)
        for u in range(steps + NSLOT - 1):
            if u < steps:
                n = nk * group + u // per_head
                s1_0 = (i0 + u % per_head) * s1b
                q_off = b * lq.batch + n * lq.head + s1_0 * lq.row
                q_at = q_off
                if quant:
                    q_at = ((b * shape.heads + n) * shape.s1 + s1_0) * d
                q1, o1 = issue_q_block(qa1, oa1, qsrc + q_at, q_row, dout + q_off, lq.row,
                                       wsg[((c + u) % NSLOT) * ws_slot:], sdc, dpc, a0, a1, b0,
                                       b1, mm % 2, k1, v1, min(s1b, shape.s1 - s1_0), n2, d,
                                       s1b, s2b, c0, quant)
                qa1.enque(q1)
                oa1.enque(o1)
                if not low:     # float32: dK, dV reload Q_i, dO_i as 16-column strips
                    qa1.free_tensor(qa1.deque(dout.dtype))
                    oa1.free_tensor(oa1.deque(dout.dtype))
                mm += 2
            t = u - (NSLOT - 1)
            if t >= 0:          # consume tile t: dV += P^T dO, dK += dS^T Q
                q1 = k1
                o1 = v1
                if low:
                    q1 = qa1.deque(dout.dtype)
                    o1 = oa1.deque(dout.dtype)
                n = nk * group + t // per_head
                s1_0 = (i0 + t % per_head) * s1b
                m = min(s1b, shape.s1 - s1_0)
                asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
                slot = ((c + t) % NSLOT) * wsp_slot
                if with_dq:     # one-pass: dQ_i += dS K_j first, its fixpipe overlaps dV, dK
                    dq_at = b * lq.batch + n * lq.head + s1_0 * lq.row
                    dq_row = lq.row
                    if low:
                        dq_at = ((b * shape.heads + n) * shape.s1 + s1_0) * d
                        dq_row = d
                    m16 = (m + 15) // 16 * 16
                    cols = n2
                    if low:     # (whole 16-column strips: dK's transposing load reads them)
                        cols = n16
                    ds1 = load_nz(pa1, wpg[slot + half:], m, cols, s2b, m16, dout.dtype)
                    dq_tile(dqc, a0, a1, b0, b1, mm % 2, ds1, kx, m, n2, d, c0, dqw + dq_at,
                            dq_row)
                    mm += 1
                    if low:     # dS's NZ is its 16-column strips: dK = dS^T Q from it too
                        transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:], o1, m,
                                           n2, d, s2b, c0, t == 0)
                        transposed_mmad(acc2, a0, a1, b0, b1, 1 - mm % 2, ds1, q1, m, n2, d, c0,
                                        t == 0)
                    pa1.free_tensor(ds1)
                if low and not with_dq:     # their NZ is their 16-column strips
                    transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:], o1, m,
                                       n2, d, s2b, c0, t == 0)
                    transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                       wpg[slot + half:], q1, m, n2, d, s2b, c0, t == 0)
                elif not low:
                    q_off = b * lq.batch + n * lq.head + s1_0 * lq.row
                    og = asc.GlobalTensor()
                    og.set_global_buffer(dout + q_off, (m - 1) * lq.row + d)
                    qg = asc.GlobalTensor()
                    qg.set_global_buffer(q + q_off, (m - 1) * lq.row + d)
                    kpad = (m + 7) // 8 * 8
                    x1 = load_strips16(xb1, og, m, d, lq.row, kpad, c0, dout.dtype)
                    transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:], x1, m,
                                       n2, d, s2b, c0, t == 0)
                    xb1.free_tensor(x1)
                    x1 = load_strips16(xb1, qg, m, d, lq.row, kpad, c0, dout.dtype)
                    transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                       wpg[slot + half:], x1, m, n2, d, s2b, c0, t == 0)
                    xb1.free_tensor(x1)
                mm += 2
                if low:
                    qa1.free_tensor(q1)
                    oa1.free_tensor(o1)
        if with_dq and not low:
            kx1.free_tensor(kx)
        kb1.free_tensor(k1)
        vb1.free_tensor(v1)
        dvg = asc.GlobalTensor()
        dvg.set_global_buffer(dv + kv_off, (n2 - 1) * lkv.row + d)
        store_acc(dvg, acc, n2, d, lkv.row)
        dkg = asc.GlobalTensor()
        dkg.set_global_buffer(dk + kv_off, (n2 - 1) * lkv.row + d)
        store_acc(dkg, acc2, n2, d, lkv.row)
    return mm, steps
