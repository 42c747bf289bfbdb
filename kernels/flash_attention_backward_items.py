"""The work items of kernels/flash_attention_backward.py's kernel, one function per side and
pass (the kernel's module docstring has the design): the AIC's dQ item (one S1 block of one
query head: S, dP per S2 block, then dQ += dS K) and dK/dV item (one S2 block of one KV head:
S, dP per S1 block of every query head of its group, then dV += P^T dO, dK += dS^T Q), and the
AIVs' halves of the same items (the softmax gradient of their rows of each tile). Each takes
the tile counter `c` (workspace slot c % NSLOT) and, on the AIC, the mmad counter `mm` (L0A / L0B
slot mm % 2) and returns them advanced; `dkv_item` decodes a dK/dV item for both sides."""
from __future__ import annotations

import ascendc as asc

from .flash_attention_backward_parts import (GRADS, NSLOT, SCORES, ds_k_product, gradient_tile,
                                             issue_kv_block, issue_q_block, load_nz, load_rows,
                                             load_strips16, load_vec, row_sum, store_acc,
                                             store_row, store_vec, sync, transposed_product)


@asc.jit
def dkv_item(item, shape, kv, causal, n_s1, n_s2, s1b, s2b, group):
    """A dK/dV work item (one S2 block of one KV head), as the AIC and its AIVs both walk it:
    (b, kv head, S2 start, S2 rows, its K/V element offset, first S1 block that sees it, S1
    blocks per query head, steps = query heads of the group x those blocks)."""
    b = item // (shape.kv_heads * n_s2)
    nk = (item // n_s2) % shape.kv_heads
    s2_0 = (item % n_s2) * s2b
    n2 = min(s2b, shape.s2 - s2_0)
    kv_off = b * kv.batch + nk * kv.head + s2_0 * kv.row
    i0 = 0
    if causal:
        i0 = s2_0 // s1b
    per_head = 0
    if s2_0 < shape.s1 or not causal:
        per_head = n_s1 - i0
    return b, nk, s2_0, n2, kv_off, i0, per_head, group * per_head


# ---- AIC ----------------------------------------------------------------------------------------

@asc.jit
def aic_dq_item(item, c, mm, shape, layout, q, k, v, dout, dq, qa1, oa1, kb1, vb1, xb1, pa1,
                a0, a1, b0, b1, sdc, dpc, acc, wsg, wpg, n_s1, n_s2, s1b, s2b, d, group,
                ws_slot, wsp_slot, causal, low, c0):
    """dQ of one S1 block: S, dP of each S2 block into the workspace (one tile ahead of the
    AIVs), dQ += dS K in L0C, dQ -> GM. Returns (c, mm)."""
    half = s1b * s2b
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    m = min(s1b, shape.s1 - s1_0)
    m16 = (m + 15) // 16 * 16
    q_off = b * layout.q.batch + n * layout.q.head + s1_0 * layout.q.row
    kv_base = b * layout.kv.batch + (n // group) * layout.kv.head
    steps = n_s2
    if causal:
        steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q + q_off, (m - 1) * layout.q.row + d)
    og = asc.GlobalTensor()
    og.set_global_buffer(dout + q_off, (m - 1) * layout.q.row + d)
    q1 = load_nz(qa1, qg, m, d, layout.q.row, m16, q.dtype)
    o1 = load_nz(oa1, og, m, d, layout.q.row, m16, q.dtype)
    k1 = issue_kv_block(kb1, vb1, k + kv_base, v + kv_base, layout.kv.row,
                         wsg[(c % NSLOT) * ws_slot:], sdc, dpc, a0, a1,
                         b0, b1, mm % 2, q1, o1, m, min(s2b, shape.s2), d, s1b,
                         s2b, c0)
    mm += 2
    k1b = k1
    for t in range(1 - NSLOT, steps):
        u = t + NSLOT - 1       # issue tile u: S, dP (K_j stays for dQ += dS K_j)
        k1c = k1b
        if u < steps and u > 0:
            s2_0 = u * s2b
            sl = ((c + u) % NSLOT) * ws_slot
            kv_addr = kv_base + s2_0 * layout.kv.row
            k1c = issue_kv_block(kb1, vb1, k + kv_addr, v + kv_addr, layout.kv.row,
                                  wsg[sl:], sdc, dpc, a0, a1, b0, b1, mm % 2,
                                  q1, o1, m, min(s2b, shape.s2 - s2_0), d, s1b,
                                  s2b, c0)
            mm += 2
        if t >= 0:              # consume tile t: dQ += dS K
            s2_0 = t * s2b
            n2 = min(s2b, shape.s2 - s2_0)
            asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
            slot = ((c + t) % NSLOT) * wsp_slot
            if low:   # K's NZ is its 16-column strips
                ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:],
                              k1, m, n2, d, s2b, c0, t == 0)
            else:
                kg = asc.GlobalTensor()
                kg.set_global_buffer(k + (kv_base + s2_0 * layout.kv.row),
                                     (n2 - 1) * layout.kv.row + d)
                x1 = load_strips16(xb1, kg, n2, d, layout.kv.row,
                                    (n2 + 7) // 8 * 8, c0, q.dtype)
                ds_k_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot + half:],
                              x1, m, n2, d, s2b, c0, t == 0)
                xb1.free_tensor(x1)
            mm += 1
            kb1.free_tensor(k1)
            k1 = k1b
        if u > 0:
            k1b = k1c
    c += steps
    qa1.free_tensor(q1)
    oa1.free_tensor(o1)
    dqg = asc.GlobalTensor()
    dqg.set_global_buffer(dq + q_off, (m - 1) * layout.q.row + d)
    store_acc(dqg, acc, m, d, layout.q.row)
    return c, mm


@asc.jit
def aic_dkv_item(item, c, mm, shape, layout, q, k, v, dout, dk, dv, qa1, oa1, kb1, vb1, xb1,
                 pa1, a0, a1, b0, b1, sdc, dpc, acc, acc2, wsg, wpg, n_s1, n_s2, s1b, s2b, d,
                 group, ws_slot, wsp_slot, causal, low, c0):
    """dK, dV of one S2 block: S, dP of each S1 block of every query head of the KV head's group
    into the workspace (one tile ahead of the AIVs), dV += P^T dO and dK += dS^T Q in L0C, both
    -> GM. Returns (c, mm)."""
    half = s1b * s2b
    b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
        item, shape, layout.kv, causal, n_s1, n_s2, s1b, s2b, group)
    n16 = (n2 + 15) // 16 * 16
    if steps > 0:
        kg = asc.GlobalTensor()
        kg.set_global_buffer(k + kv_off, (n2 - 1) * layout.kv.row + d)
        vg = asc.GlobalTensor()
        vg.set_global_buffer(v + kv_off, (n2 - 1) * layout.kv.row + d)
        k1 = load_nz(kb1, kg, n2, d, layout.kv.row, n16, q.dtype)
        v1 = load_nz(vb1, vg, n2, d, layout.kv.row, n16, q.dtype)
        q_off = b * layout.q.batch + nk * group * layout.q.head + \
            i0 * s1b * layout.q.row
        q1, o1 = issue_q_block(qa1, oa1, q + q_off, dout + q_off, layout.q.row,
                                wsg[(c % NSLOT) * ws_slot:], sdc, dpc, a0,
                                a1, b0, b1, mm % 2, k1, v1,
                                min(s1b, shape.s1 - i0 * s1b), n2, d, s1b, s2b,
                                c0)
        mm += 2
        q1b = q1
        o1b = o1
        for t in range(1 - NSLOT, steps):
            u = t + NSLOT - 1   # issue tile u: S, dP (Q_i, dO_i stay for dK, dV)
            q1c = q1b
            o1c = o1b
            if u < steps and u > 0:
                n = nk * group + u // per_head
                s1_0 = (i0 + u % per_head) * s1b
                q_off = b * layout.q.batch + n * layout.q.head + s1_0 * layout.q.row
                sl = ((c + u) % NSLOT) * ws_slot
                q1c, o1c = issue_q_block(qa1, oa1, q + q_off, dout + q_off,
                                          layout.q.row, wsg[sl:], sdc, dpc, a0,
                                          a1, b0, b1, mm % 2, k1, v1,
                                          min(s1b, shape.s1 - s1_0), n2, d, s1b,
                                          s2b, c0)
                mm += 2
            if t >= 0:          # consume tile t: dV += P^T dO, dK += dS^T Q
                n = nk * group + t // per_head
                s1_0 = (i0 + t % per_head) * s1b
                m = min(s1b, shape.s1 - s1_0)
                asc.cross_core_wait_flag(GRADS, 2, asc.PipeID.PIPE_MTE2)
                slot = ((c + t) % NSLOT) * wsp_slot
                if low:   # their NZ is their 16-column strips
                    transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:],
                                        o1, m, n2, d, s2b, c0, t == 0)
                    transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                        wpg[slot + half:], q1, m, n2, d, s2b,
                                        c0, t == 0)
                else:
                    q_off = (b * layout.q.batch + n * layout.q.head
                             + s1_0 * layout.q.row)
                    og = asc.GlobalTensor()
                    og.set_global_buffer(dout + q_off, (m - 1) * layout.q.row + d)
                    qg = asc.GlobalTensor()
                    qg.set_global_buffer(q + q_off, (m - 1) * layout.q.row + d)
                    kpad = (m + 7) // 8 * 8
                    x1 = load_strips16(xb1, og, m, d, layout.q.row, kpad,
                                        c0, q.dtype)
                    transposed_product(acc, a0, a1, b0, b1, mm % 2, pa1, wpg[slot:],
                                        x1, m, n2, d, s2b, c0, t == 0)
                    xb1.free_tensor(x1)
                    x1 = load_strips16(xb1, qg, m, d, layout.q.row, kpad,
                                        c0, q.dtype)
                    transposed_product(acc2, a0, a1, b0, b1, 1 - mm % 2, pa1,
                                        wpg[slot + half:], x1, m, n2, d, s2b,
                                        c0, t == 0)
                    xb1.free_tensor(x1)
                mm += 2
                qa1.free_tensor(q1)
                oa1.free_tensor(o1)
                q1 = q1b
                o1 = o1b
            if u > 0:
                q1b = q1c
                o1b = o1c
        c += steps
        kb1.free_tensor(k1)
        vb1.free_tensor(v1)
        dvg = asc.GlobalTensor()
        dvg.set_global_buffer(dv + kv_off, (n2 - 1) * layout.kv.row + d)
        store_acc(dvg, acc, n2, d, layout.kv.row)
        dkg = asc.GlobalTensor()
        dkg.set_global_buffer(dk + kv_off, (n2 - 1) * layout.kv.row + d)
        store_acc(dkg, acc2, n2, d, layout.kv.row)
    return c, mm


# ---- AIV ----------------------------------------------------------------------------------------

@asc.jit
def aiv_dq_item(item, c, shape, layout, out, dout, smax, ssum, dsum, lse, su, dpu, p16, ds16,
                fold, bc, lse_u, dsum_u, red_u, wsg, wpg, n_s1, n_s2, s1b, s2b, d, h, r0,
                ws_slot, wsp_slot, scale, causal, low):
    """This AIV's rows (r0, up to h) of a dQ item: D = rowsum(dO * O) and lse -> GM (the dK/dV
    pass reads them), then per tile P and dS from S and dP; dS -> the workspace. Returns c."""
    half = s1b * s2b
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    m = min(s1b, shape.s1 - s1_0)
    mh = min(h, m - r0)
    steps = n_s2
    if causal:
        steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
    if mh > 0:                  # D = rowsum(dO * O) and lse of this AIV's rows
        q_off = (b * layout.q.batch + n * layout.q.head
                 + (s1_0 + r0) * layout.q.row)
        st_off = (b * shape.heads + n) * shape.s1 + s1_0 + r0
        og = asc.GlobalTensor()
        og.set_global_buffer(dout + q_off, (mh - 1) * layout.q.row + d)
        yg = asc.GlobalTensor()
        yg.set_global_buffer(out + q_off, (mh - 1) * layout.q.row + d)
        mg = asc.GlobalTensor()
        mg.set_global_buffer(smax + st_off, mh)
        lg = asc.GlobalTensor()
        lg.set_global_buffer(ssum + st_off, mh)
        sync(asc.HardEvent.V_MTE2)
        if low:
            load_rows(p16, og, mh, d, layout.q.row)
            load_rows(ds16, yg, mh, d, layout.q.row)
        else:
            load_rows(su, og, mh, d, layout.q.row)
            load_rows(dpu, yg, mh, d, layout.q.row)
        load_vec(lse_u, mg, mh)
        load_vec(red_u, lg, mh)
        sync(asc.HardEvent.MTE2_V)
        if low:
            asc.cast(su, p16, asc.RoundMode.CAST_NONE, mh * d)
            asc.cast(dpu, ds16, asc.RoundMode.CAST_NONE, mh * d)
        asc.mul(su, su, dpu, mh * d)
        row_sum(dsum_u, fold, su, mh, d, d)
        asc.ln(red_u, red_u, mh)
        asc.add(lse_u, lse_u, red_u, mh)
        dg = asc.GlobalTensor()
        dg.set_global_buffer(dsum + st_off, mh)
        eg = asc.GlobalTensor()
        eg.set_global_buffer(lse + st_off, mh)
        sync(asc.HardEvent.V_MTE3)
        store_vec(dg, dsum_u, mh)
        store_vec(eg, lse_u, mh)
        sync(asc.HardEvent.MTE3_V)
    for t in range(steps):
        s2_0 = t * s2b
        n2 = min(s2b, shape.s2 - s2_0)
        asc.cross_core_wait_flag(SCORES, 2, asc.PipeID.PIPE_MTE2)
        if mh > 0:
            sl = ((c + t) % NSLOT) * ws_slot + r0 * s2b
            pl = ((c + t) % NSLOT) * wsp_slot + r0 * s2b
            sync(asc.HardEvent.V_MTE2)
            gradient_tile(su, dpu, bc, lse_u, dsum_u, wsg[sl:], wsg[sl + half:],
                           mh, s1_0 + r0, s2_0, n2, s2b, scale, causal)
            if low:
                asc.cast(ds16, dpu, asc.RoundMode.CAST_RINT, mh * s2b)
            sync(asc.HardEvent.V_MTE3)
            if low:
                asc.data_copy(wpg[pl + half:], ds16, mh * s2b)
            else:
                asc.data_copy(wpg[pl + half:], dpu, mh * s2b)
            sync(asc.HardEvent.MTE3_V)
        asc.cross_core_set_flag(GRADS, 2, asc.PipeID.PIPE_MTE3)
    c += steps
    return c


@asc.jit
def aiv_dkv_item(item, c, shape, layout, dk, dv, dsum, lse, su, dpu, p16, ds16, bc, lse_u,
                 dsum_u, wsg, wpg, n_s1, n_s2, s1b, s2b, d, h, r0, sub, group, ws_slot,
                 wsp_slot, scale, causal, low):
    """This AIV's rows of each tile of a dK/dV item: P and dS -> the workspace; an S2 block no
    query row sees gets dK = dV = 0 (this AIV's half of its rows). Returns c."""
    half = s1b * s2b
    b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
        item, shape, layout.kv, causal, n_s1, n_s2, s1b, s2b, group)
    for t in range(steps):
        n = nk * group + t // per_head
        s1_0 = (i0 + t % per_head) * s1b
        m = min(s1b, shape.s1 - s1_0)
        mh = min(h, m - r0)
        asc.cross_core_wait_flag(SCORES, 2, asc.PipeID.PIPE_MTE2)
        if mh > 0:
            st_off = (b * shape.heads + n) * shape.s1 + s1_0 + r0
            eg = asc.GlobalTensor()
            eg.set_global_buffer(lse + st_off, mh)
            dg = asc.GlobalTensor()
            dg.set_global_buffer(dsum + st_off, mh)
            sl = ((c + t) % NSLOT) * ws_slot + r0 * s2b
            pl = ((c + t) % NSLOT) * wsp_slot + r0 * s2b
            sync(asc.HardEvent.V_MTE2)
            load_vec(lse_u, eg, mh)
            load_vec(dsum_u, dg, mh)
            gradient_tile(su, dpu, bc, lse_u, dsum_u, wsg[sl:], wsg[sl + half:],
                           mh, s1_0 + r0, s2_0, n2, s2b, scale, causal)
            if low:
                asc.cast(p16, su, asc.RoundMode.CAST_RINT, mh * s2b)
                asc.cast(ds16, dpu, asc.RoundMode.CAST_RINT, mh * s2b)
            sync(asc.HardEvent.V_MTE3)
            if low:
                asc.data_copy(wpg[pl:], p16, mh * s2b)
                asc.data_copy(wpg[pl + half:], ds16, mh * s2b)
            else:
                asc.data_copy(wpg[pl:], su, mh * s2b)
                asc.data_copy(wpg[pl + half:], dpu, mh * s2b)
            sync(asc.HardEvent.MTE3_V)
        asc.cross_core_set_flag(GRADS, 2, asc.PipeID.PIPE_MTE3)
    c += steps
    if steps == 0:              # no query row sees this S2 block: dK = dV = 0
        hk = (n2 + 1) // 2
        rk = min(hk, n2 - sub * hk)
        asc.duplicate(su, 0.0, d)
        if low:
            asc.cast(p16, su, asc.RoundMode.CAST_RINT, d)
        sync(asc.HardEvent.V_MTE3)
        for r in range(sub * hk, sub * hk + rk):
            zg = asc.GlobalTensor()
            zg.set_global_buffer(dk + (kv_off + r * layout.kv.row), d)
            yg = asc.GlobalTensor()
            yg.set_global_buffer(dv + (kv_off + r * layout.kv.row), d)
            if low:
                store_row(zg, p16, d)
                store_row(yg, p16, d)
            else:
                store_row(zg, su, d)
                store_row(yg, su, d)
        sync(asc.HardEvent.MTE3_V)
    return c
