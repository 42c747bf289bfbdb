"""The AIV side of kernels/flash_attention_backward.py: per work item, the softmax gradient of
every score tile the AIC hands over (half of the tile's rows per AIV), and in the dQ pass the
rows' D and lse (and, for float16 inputs, Q x scale for the cube).

The tile loop runs one tile ahead: the S and dP of tile t + 1 are copied in (MTE2) while the
vector unit works on tile t, through two UB slots (`ub`: per slot S and dP in f32, their 16-bit
copies, the rows' lse and D). Events per slot k (id k + 1; id 0 is the helpers' `sync`):
V_MTE2 (the vector unit is done with slot k), MTE2_V (slot k's inputs have landed), V_MTE3
(slot k's P / dS are ready), MTE3_MTE2 (they have left). The two "free" events are set when an
item's loop starts and taken when it ends, so every set has its wait."""
from __future__ import annotations

import math

import ascendc as asc

from .flash_attention_backward_parts import (GRADS, NSLOT, Q_READY, SCORES, gradient_tile,
                                             load_rows, load_vec, pick, row_sum,
                                             scale_q_rows, store_row, store_vec, sync)


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


@asc.jit
def scaled_q_item(item, shape, lq, qs, q, qlow, tmp, n_s1, s1b, h, r0, d, scale):
    """float16 inputs, dQ pass: this AIV's rows of a work item's Q block x scale -> qs
    (B, N, S1, D rows), then Q_READY (both AIVs set it once per item; the AIC waits once)."""
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    mh = min(h, min(s1b, shape.s1 - s1_0) - r0)
    if mh > 0:
        qg = asc.GlobalTensor()
        qg.set_global_buffer(q + (b * lq.batch + n * lq.head + (s1_0 + r0) * lq.row),
                             (mh - 1) * lq.row + d)
        sg = asc.GlobalTensor()
        sg.set_global_buffer(qs + ((b * shape.heads + n) * shape.s1 + s1_0 + r0) * d, mh * d)
        scale_q_rows(sg, qg, qlow, tmp, mh, d, lq.row, scale)
    asc.cross_core_set_flag(Q_READY, 2, asc.PipeID.PIPE_MTE3)


@asc.jit
def row_stats(dout, out, smax, ssum, dsum, lse, su, dpu, p16, ds16, fold, lse_u, dsum_u,
              red_u, q_off, st_off, mh, d, q_row, low, shift):
    """dQ pass: D = rowsum(dO * O) and lse = max + ln(sum) of mh rows -> GM (dsum, lse) and
    UB (dsum_u, and lse_u - shift: exp(S - lse + shift) = e^shift P)."""
    og = asc.GlobalTensor()
    og.set_global_buffer(dout + q_off, (mh - 1) * q_row + d)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(out + q_off, (mh - 1) * q_row + d)
    mg = asc.GlobalTensor()
    mg.set_global_buffer(smax + st_off, mh)
    lg = asc.GlobalTensor()
    lg.set_global_buffer(ssum + st_off, mh)
    sync(asc.HardEvent.V_MTE2)
    if low:
        load_rows(p16, og, mh, d, q_row)
        load_rows(ds16, yg, mh, d, q_row)
    else:
        load_rows(su, og, mh, d, q_row)
        load_rows(dpu, yg, mh, d, q_row)
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
    if shift != 0.0:
        asc.adds(lse_u, lse_u, -shift, mh)


@asc.jit
def slots_open():
    for k in range(1, 3):
        asc.set_flag(asc.HardEvent.V_MTE2, k)
        asc.set_flag(asc.HardEvent.MTE3_MTE2, k)


@asc.jit
def slots_close():
    for k in range(1, 3):
        asc.wait_flag(asc.HardEvent.V_MTE2, k)
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, k)


@asc.jit
def tile_in(k, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, wsg, sl, half, count, lse,
            dsum, st_off, mh, half_s, stats):
    """Slot k <- the S, dP rows of a tile (f32 into s / d, or 16-bit into h / g with half_s)
    and, with `stats`, the rows' lse (l) and D (e)."""
    ev = k + 1
    asc.wait_flag(asc.HardEvent.V_MTE2, ev)
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, ev)
    if half_s:
        asc.data_copy(pick(h0, h1, k), wsg[sl:], count)
        asc.data_copy(pick(g0, g1, k), wsg[sl + half:], count)
    else:
        asc.data_copy(pick(s0, s1, k), wsg[sl:], count)
        asc.data_copy(pick(d0, d1, k), wsg[sl + half:], count)
    if stats:
        eg = asc.GlobalTensor()
        eg.set_global_buffer(lse + st_off, mh)
        dg = asc.GlobalTensor()
        dg.set_global_buffer(dsum + st_off, mh)
        load_vec(pick(l0, l1, k), eg, mh)
        load_vec(pick(e0, e1, k), dg, mh)
    asc.set_flag(asc.HardEvent.MTE2_V, ev)


@asc.jit
def tile_grad(k, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc, wpg, pl, half, mh, row0,
              s2_0, n2, s2b, scale, ds_scale, causal, half_s, low, with_p):
    """Slot k's tile -> P (with_p) and dS -> the P / dS workspace slot (16-bit when low)."""
    ev = k + 1
    s = pick(s0, s1, k)
    dp = pick(d0, d1, k)
    p16 = pick(h0, h1, k)
    ds16 = pick(g0, g1, k)
    count = mh * s2b
    asc.wait_flag(asc.HardEvent.MTE2_V, ev)
    if half_s:
        asc.cast(s, p16, asc.RoundMode.CAST_NONE, count)
        asc.cast(dp, ds16, asc.RoundMode.CAST_NONE, count)
    else:
        asc.muls(s, s, scale, count)
    gradient_tile(s, dp, bc, pick(l0, l1, k), pick(e0, e1, k), mh, row0, s2_0, n2, s2b,
                  ds_scale, causal)
    if low:
        if with_p:
            asc.cast(p16, s, asc.RoundMode.CAST_RINT, count)
        asc.cast(ds16, dp, asc.RoundMode.CAST_RINT, count)
    asc.set_flag(asc.HardEvent.V_MTE2, ev)
    asc.set_flag(asc.HardEvent.V_MTE3, ev)
    asc.wait_flag(asc.HardEvent.V_MTE3, ev)
    if low:
        if with_p:
            asc.data_copy(wpg[pl:], p16, count)
        asc.data_copy(wpg[pl + half:], ds16, count)
    else:
        if with_p:
            asc.data_copy(wpg[pl:], s, count)
        asc.data_copy(wpg[pl + half:], dp, count)
    asc.set_flag(asc.HardEvent.MTE3_MTE2, ev)


@asc.jit
def tile_at(u, dq, n_q, s1_q, nk, group, per_head, i0, s2_kv, n2_kv, shape, s1b, s2b, h, r0):
    """(head, S1 start, S2 start, S2 columns, this AIV's rows) of an item's tile u."""
    n = n_q
    s1_0 = s1_q
    s2_0 = u * s2b
    n2 = min(s2b, shape.s2 - s2_0)
    if not dq:
        n = nk * group + u // per_head
        s1_0 = (i0 + u % per_head) * s1b
        s2_0 = s2_kv
        n2 = n2_kv
    return n, s1_0, s2_0, n2, min(h, min(s1b, shape.s1 - s1_0) - r0)


@asc.jit
def item_tiles(s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc, wsg, wpg, lse, dsum, c,
               steps, dq, b, n_q, s1_q, nk, group, per_head, i0, s2_kv, n2_kv, shape, s1b, s2b,
               h, r0, ws_slot, wsp_slot, scale, ds_scale, causal, half_s, low):
    """One work item's tiles: copy tile t + 1 in, then the gradient of tile t; per tile one
    SCORES wait and one GRADS set (also when this AIV owns none of the tile's rows). dQ pass
    (dq): S1 block s1_q of head n_q, S2 blocks 0, 1, ...; dK/dV pass: S2 block s2_kv over
    the S1 blocks i0, ... of every query head of KV head nk's group."""
    half = s1b * s2b
    slots_open()
    for t in range(-1, steps):
        u = t + 1
        if u < steps:                   # copy tile u = t + 1 in
            n, s1_0, s2_0, n2, mh = tile_at(u, dq, n_q, s1_q, nk, group, per_head, i0, s2_kv,
                                            n2_kv, shape, s1b, s2b, h, r0)
            asc.cross_core_wait_flag(SCORES, 2, asc.PipeID.PIPE_MTE2)
            if mh > 0:
                tile_in(u % 2, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, wsg,
                        ((c + u) % NSLOT) * ws_slot + r0 * s2b, half, mh * s2b, lse, dsum,
                        (b * shape.heads + n) * shape.s1 + s1_0 + r0, mh, half_s, not dq)
        if t >= 0:                      # the gradient of tile t
            n, s1_0, s2_0, n2, mh = tile_at(t, dq, n_q, s1_q, nk, group, per_head, i0, s2_kv,
                                            n2_kv, shape, s1b, s2b, h, r0)
            if mh > 0:
                tile_grad(t % 2, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc, wpg,
                          ((c + t) % NSLOT) * wsp_slot + r0 * s2b, half, mh, s1_0 + r0, s2_0,
                          n2, s2b, scale, ds_scale, causal, half_s, low, not dq)
            asc.cross_core_set_flag(GRADS, 2, asc.PipeID.PIPE_MTE3)
    slots_close()


@asc.jit
def dq_item_vector(item, g, groups, q, qsrc, out, dout, smax, ssum, dsum, lse, s0, s1, d0, d1,
                   h0, h1, g0, g1, l0, e0, fold, bc, red_u, wsg, wpg, c, shape, lq, n_s1, n_s2,
                   s1b, s2b, h, r0, d, ws_slot, wsp_slot, scale, ds_scale, causal, quant, low):
    """The dQ pass's item on one AIV: its rows' D and lse (and with `quant` Q x scale into
    qsrc, the first item's before, the next item's after), then the item's tiles. The pass
    needs P only inside dS = ds_scale P (dP - D): a positive ds_scale goes into the exponent
    (lse - ln ds_scale in UB), which saves a multiply per element. Returns the item's tiles."""
    shift = 0.0
    tile_scale = ds_scale
    if ds_scale > 0.0:
        shift = math.log(ds_scale)
        tile_scale = 1.0
    if quant and item == g:         # the first item's Q x scale
        scaled_q_item(item, shape, lq, qsrc, q, h0, s0, n_s1, s1b, h, r0, d, scale)
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    m = min(s1b, shape.s1 - s1_0)
    mh = min(h, m - r0)
    steps = n_s2
    if causal:
        steps = min(n_s2, (s1_0 + m - 1) // s2b + 1)
    if mh > 0:                      # D = rowsum(dO * O) and lse of this AIV's rows
        row_stats(dout, out, smax, ssum, dsum, lse, s0, d0, h0, g0, fold, l0, e0, red_u,
                  b * lq.batch + n * lq.head + (s1_0 + r0) * lq.row,
                  (b * shape.heads + n) * shape.s1 + s1_0 + r0, mh, d, lq.row, low, shift)
    if quant and item + groups < shape.items:      # the next item's Q
        scaled_q_item(item + groups, shape, lq, qsrc, q, h0, s0, n_s1, s1b, h, r0, d, scale)
    item_tiles(s0, s1, d0, d1, h0, h1, g0, g1, l0, l0, e0, e0, bc, wsg, wpg, lse, dsum, c, steps,
               True, b, n, s1_0, 0, 1, 0, 0, 0, 0, shape, s1b, s2b, h, r0, ws_slot, wsp_slot,
               scale, tile_scale, causal, quant, low)
    return steps


@asc.jit
def dkv_item_vector(item, dk, dv, dsum, lse, s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc,
                    wsg, wpg, c, shape, lkv, n_s1, n_s2, s1b, s2b, h, r0, sub, d, ws_slot,
                    wsp_slot, scale, ds_scale, causal, quant, low):
    """The dK/dV pass's item on one AIV: the tiles of one S2 block over every query head of its
    KV head's group; an S2 block no query row sees gets dK = dV = 0 (this AIV's half of its
    rows). Returns the item's tiles."""
    group = shape.heads // shape.kv_heads
    b, nk, s2_0, n2, kv_off, i0, per_head, steps = dkv_item(
        item, shape, lkv, causal, n_s1, n_s2, s1b, s2b, group)
    item_tiles(s0, s1, d0, d1, h0, h1, g0, g1, l0, l1, e0, e1, bc, wsg, wpg, lse, dsum, c, steps,
               False, b, 0, 0, nk, group, per_head, i0, s2_0, n2, shape, s1b, s2b, h, r0,
               ws_slot, wsp_slot, scale, ds_scale, causal, quant, low)
    if steps == 0:                  # no query row sees this S2 block: dK = dV = 0
        hk = (n2 + 1) // 2
        rk = min(hk, n2 - sub * hk)
        asc.duplicate(s0, 0.0, d)
        if low:
            asc.cast(h0, s0, asc.RoundMode.CAST_RINT, d)
        sync(asc.HardEvent.V_MTE3)
        for r in range(sub * hk, sub * hk + rk):
            zg = asc.GlobalTensor()
            zg.set_global_buffer(dk + (kv_off + r * lkv.row), d)
            yg = asc.GlobalTensor()
            yg.set_global_buffer(dv + (kv_off + r * lkv.row), d)
            if low:
                store_row(zg, h0, d)
                store_row(yg, h0, d)
            else:
                store_row(zg, s0, d)
                store_row(yg, s0, d)
        sync(asc.HardEvent.MTE3_V)
    return steps


# ---- the one-pass form's launches around the fused one (flash_attention_backward.py) ----------

@asc.jit
def item_rows(item, shape, lq, n_s1, s1b, h, r0):
    """(element offset of this AIV's first row of an S1-block item in q's layout, its row in
    (B, N, S1) order, rows it owns) of a work item (one S1 block of one head)."""
    b = item // (shape.heads * n_s1)
    n = (item // n_s1) % shape.heads
    s1_0 = (item % n_s1) * s1b
    mh = min(h, min(s1b, shape.s1 - s1_0) - r0)
    return (b * lq.batch + n * lq.head + (s1_0 + r0) * lq.row,
            (b * shape.heads + n) * shape.s1 + s1_0 + r0, mh)


@asc.jit
def prep_item_vector(item, q, qsrc, out, dout, smax, ssum, dsum, lse, dqw, s0, d0, h0, g0, l0,
                     e0, fold, red_u, shape, lq, n_s1, s1b, h, r0, d, scale, quant, low,
                     dq_direct):
    """Before the fused launch, one S1 block's rows of this AIV: D = rowsum(dO * O) and lse
    (GM), Q x scale (float16: `quant`) and zeros in the float32 dQ rows the fused launch adds
    into (dq itself in its layout with `dq_direct`, else the (B, N, S1, D) workspace)."""
    q_off, st_off, mh = item_rows(item, shape, lq, n_s1, s1b, h, r0)
    if mh > 0:
        row_stats(dout, out, smax, ssum, dsum, lse, s0, d0, h0, g0, fold, l0, e0, red_u, q_off,
                  st_off, mh, d, lq.row, low, 0.0)
        if quant:
            qg = asc.GlobalTensor()
            qg.set_global_buffer(q + q_off, (mh - 1) * lq.row + d)
            sg = asc.GlobalTensor()
            sg.set_global_buffer(qsrc + st_off * d, mh * d)
            scale_q_rows(sg, qg, h0, s0, mh, d, lq.row, scale)
        zg = asc.GlobalTensor()
        row = d
        at = st_off * d
        if dq_direct:
            row = lq.row
            at = q_off
        zg.set_global_buffer(dqw + at, (mh - 1) * row + d)
        asc.duplicate(s0, 0.0, mh * d)
        sync(asc.HardEvent.V_MTE3)
        asc.data_copy_pad(zg, s0, asc.DataCopyExtParams(block_count=mh, block_len=d * 4,
                                                        dst_stride=(row - d) * 4))
        sync(asc.HardEvent.MTE3_V)


@asc.jit
def cast_item_vector(item, dq, dqw, s0, h0, shape, lq, n_s1, s1b, h, r0, d, dq_scale):
    """After the fused launch (16-bit inputs), one S1 block's rows of this AIV: the float32 dQ
    rows of the workspace x dq_scale, in dq's dtype and layout."""
    q_off, st_off, mh = item_rows(item, shape, lq, n_s1, s1b, h, r0)
    if mh > 0:
        wg = asc.GlobalTensor()
        wg.set_global_buffer(dqw + st_off * d, mh * d)
        sync(asc.HardEvent.V_MTE2)
        asc.data_copy(s0, wg, mh * d)
        sync(asc.HardEvent.MTE2_V)
        if dq_scale != 1.0:
            asc.muls(s0, s0, dq_scale, mh * d)
        asc.cast(h0, s0, asc.RoundMode.CAST_RINT, mh * d)
        og = asc.GlobalTensor()
        og.set_global_buffer(dq + q_off, (mh - 1) * lq.row + d)
        isz = dq.dtype.sizeof()
        sync(asc.HardEvent.V_MTE3)
        asc.data_copy_pad(og, h0, asc.DataCopyExtParams(block_count=mh, block_len=d * isz,
                                                        dst_stride=(lq.row - d) * isz))
        sync(asc.HardEvent.MTE3_V)
