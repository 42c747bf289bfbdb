"""Tiled FlashAttention forward in the kernel language, structured like CANN's
FlashAttentionScore on Atlas A2 (separated cube/vector cores talking through a GM workspace):

per (batch, head, S1 block):
  Q  GM -> L1 (Nd2Nz) -> L0A (ZZ)
  for each S2 block (fully masked blocks skipped when causal):
    K  GM -> L1 (NZ == ZN of K^T) -> L0B;  mmad  S = Q K^T  -> L0C -> fixpipe -> GM workspace
    S  GM -> UB;  scale, causal mask, online softmax on the whole tile: rows are the repeats of
       the vector ops (row max/sum by folding 64-lane chunks, then whole_reduce; the running max
       m broadcast back by brcb), running max m and running sum l per row
    P  UB -> GM workspace -> L1 -> L0A in chunks;  V -> L1 -> L0B (transposed fractals)
    mmad O_part = P V -> L0C -> fixpipe -> GM workspace -> UB;  O = O * exp(m_old - m_new) + O_part
       (the factor broadcast by brcb, one repeat per row)
  O / l (the division deferred to the end) -> GM;  softmax_max = m, softmax_sum = l  -> GM
One block per AI core of the SoC (as the real op launches); blocks stride over the B*N*S1 tiles.
Where an inner step's CPU time goes: `python -m bench.fa_steps`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device
from .flash_attention_tiling import (KV_CHUNKS, FlashAttentionBuffers,  # noqa: F401 (re-exported)
                                     FlashAttentionTiling, flash_attention_buffers,
                                     flash_attention_tiling, flash_attention_tiling_candidates)

LAYOUTS = ("BNSD", "BSND", "BSH")
NEG_INF = -math.inf


# ---- the kernel's arguments, by what they mean ------------------------------------------------

class AttentionShape(NamedTuple):
    """The problem's sizes (run-time values)."""
    heads: int          # N, query heads
    kv_heads: int       # N_kv, key/value heads (divides N: grouped-query attention)
    s1: int             # query rows per head
    s2: int             # key/value rows per head
    tiles: int          # B * N * ceil(S1 / s1_block): the work the blocks stride over


class TensorStrides(NamedTuple):
    """Elements between consecutive rows, heads and batches of a tensor in its layout."""
    row: int
    head: int
    batch: int


class AttentionLayout(NamedTuple):
    """Where rows live in GM (run-time values): BNSD, BSND and BSH are strides."""
    q: TensorStrides    # q, and out (out has q's layout)
    kv: TensorStrides   # k and v


class AttentionVariant(NamedTuple):
    """What the kernel is compiled for (a ConstExpr: its branches stay compile-time)."""
    head_dim: int       # D, a multiple of 16
    causal: bool        # mask above the diagonal, skip the fully masked S2 blocks
    low_precision: bool  # 16-bit inputs: P and O are cast to the input dtype
    c0: int             # input elements per 32 bytes: the width of an NZ fractal


def attention_variant(head_dim: int, dtype, causal: bool = False) -> AttentionVariant:
    isz = np.dtype(dtype).itemsize
    return AttentionVariant(int(head_dim), bool(causal), isz < 4, 32 // isz)


# ---- kernel helpers (in compiled kernels, their arguments are runtime values: branches on the
# kernel's ConstExprs stay in the kernel, so only the taken one is compiled) -------------------

@asc.jit
def _load_rows_nz(que, g, rows, cols, row_stride, strip_rows, dtype):
    """GM (rows x cols, row stride) -> L1 NZ with `strip_rows` rows per C0 strip; dequeued."""
    t = que.alloc_tensor(dtype)
    asc.data_copy(t, g, asc.Nd2NzParams(nd_num=1, n_value=rows, d_value=cols,
                                        src_d_value=row_stride, dst_nz_c0_stride=strip_rows,
                                        dst_nz_n_stride=1))
    que.enque(t)
    return que.deque(dtype)


@asc.jit
def _nz_to_zz(a2, a1, rows16, kpad, c0):
    """L1 NZ (strips of rows16*16 rows) -> L0A ZZ, one 16-row block per load."""
    for r in range(rows16):
        asc.load_data(a2[r * 16 * kpad:], a1[r * 16 * c0:],
                      asc.LoadData2DParams(repeat_times=kpad // c0, src_stride=rows16))


@asc.jit
def _row_reduce(dst, red, src, rows, cols, row_stride, is_max):
    """dst[r] = max (or sum) of src[r, :cols] for r < rows: fold 64-lane chunks into red
    (rows x 64), then one whole-reduce repeat per row."""
    w0 = min(64, cols)
    rs = row_stride // 8
    first = 64
    if cols >= 128:     # red = chunk 0 (op) chunk 1, both full
        first = 128
        p = asc.BinaryRepeatParams(src0_rep_stride=rs, src1_rep_stride=rs)
        if is_max:
            asc.max(red, src, src[64:], 64, rows, p)
        else:
            asc.add(red, src, src[64:], 64, rows, p)
    else:               # red = chunk 0
        asc.muls(red, src, 1.0, w0, rows, asc.UnaryRepeatParams(src_rep_stride=rs))
    for c in range(first, cols, 64):
        p = asc.BinaryRepeatParams(src1_rep_stride=rs)
        if is_max:
            asc.max(red, red, src[c:], min(64, cols - c), rows, p)
        else:
            asc.add(red, red, src[c:], min(64, cols - c), rows, p)
    if is_max:
        asc.whole_reduce_max(dst, red, w0, rows, 1, 1, 8, asc.ReduceOrder.ORDER_ONLY_VALUE)
    else:
        asc.whole_reduce_sum(dst, red, w0, rows, 1, 1, 8)


@asc.jit
def _scale_rows(acc, bc, factors, rows, d, divide):
    """acc[r, :] *= factors[r] (or /=), the factor broadcast to 32 B blocks by brcb."""
    asc.brcb(bc, factors, (rows + 7) // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, d, 64):
        p = asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=d // 8,
                                   src0_rep_stride=d // 8, src1_rep_stride=1)
        if divide:
            asc.div(acc[c:], acc[c:], bc, min(64, d - c), rows, p)
        else:
            asc.mul(acc[c:], acc[c:], bc, min(64, d - c), rows, p)


@asc.jit
def _load_q(qa1, qa2, q_addr, m, m16, q_row, d, c0):
    """Load Q: m rows of d (q_row apart) GM -> L1 NZ -> L0A ZZ."""
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q_addr, (m - 1) * q_row + d)
    q1 = _load_rows_nz(qa1, qg, m, d, q_row, m16, q_addr.dtype)
    _nz_to_zz(qa2, q1, m16 // 16, d, c0)
    qa1.free_tensor(q1)


@asc.jit
def _qk_step(s_ws, sc, qa2, qb1, bl0, k_addr, m, m16, n2, kv_row, d, s2b, c0):
    """S = Q K^T for one S2 block of n2 keys: K GM -> L1 NZ (== ZN of K^T) -> L0B, mmad into
    L0C, fixpipe to the GM workspace (rows s2b apart)."""
    n16 = (n2 + 15) // 16 * 16
    kg = asc.GlobalTensor()
    kg.set_global_buffer(k_addr, (n2 - 1) * kv_row + d)
    k1 = _load_rows_nz(qb1, kg, n2, d, kv_row, n16, k_addr.dtype)
    asc.load_data(bl0, k1, asc.LoadData2DParams(repeat_times=(d // c0) * (n16 // 16),
                                                src_stride=1))
    qb1.free_tensor(k1)
    asc.set_flag(asc.HardEvent.MTE1_M, 0)       # Q and K are in L0A / L0B
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    asc.mmad(sc, qa2, bl0, asc.MmadParams(m=m, n=n2, k=d, cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    asc.fixpipe(s_ws, sc, asc.FixpipeParamsV220(n_size=n2, m_size=m, src_stride=m16,
                                                dst_stride=s2b))
    asc.set_flag(asc.HardEvent.FIX_MTE2, 0)     # S is in GM before MTE2 reads it
    asc.wait_flag(asc.HardEvent.FIX_MTE2, 0)


@asc.jit
def _load_scores(sin, s_ws, count, scale):
    """S GM workspace -> UB, times the softmax scale; the dequeued tile."""
    su = sin.alloc_tensor(asc.float32)
    asc.data_copy(su, s_ws, count)
    sin.enque(su)
    su = sin.deque(asc.float32)
    asc.muls(su, su, scale, count)
    return su


@asc.jit
def _mask_above_diagonal(su, m, n2, s1_0, s2_0, s2b):
    """Causal mask: -inf above the diagonal, on the blocks that cross it."""
    if s2_0 + n2 > s1_0 + 1:
        for r in range(m):
            valid = max(0, min(n2, s1_0 + r - s2_0 + 1))
            if valid < n2:
                asc.duplicate(su[r * s2b + valid:], NEG_INF, n2 - valid)


@asc.jit
def _softmax_step(su, row_m, row_l, row_a, mnew, rowred, fold, bc, m, n2, s2b):
    """Online softmax on the whole tile (rows are the repeats of the vector ops): P = exp(S -
    m_new) in place, alpha = exp(m_old - m_new), l = l * alpha + rowsum(P), m = m_new."""
    _row_reduce(rowred, fold, su, m, n2, s2b, True)
    asc.max(mnew, row_m, rowred, m)
    asc.sub(row_a, row_m, mnew, m)
    asc.exp(row_a, row_a, m)
    asc.brcb(bc, mnew, (m + 7) // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, n2, 64):
        asc.sub(su[c:], su[c:], bc, min(64, n2 - c), m,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=s2b // 8,
                                       src0_rep_stride=s2b // 8, src1_rep_stride=1))
    asc.exp(su, su, m * s2b)
    _row_reduce(rowred, fold, su, m, n2, s2b, False)
    asc.mul(row_l, row_l, row_a, m)
    asc.add(row_l, row_l, rowred, m)
    asc.muls(row_m, mnew, 1.0, m)


@asc.jit
def _load_p_chunk(pa1, pa2, p_ws, m, m16, kk, s2b, c0):
    """kk columns of P (rows s2b apart in the GM workspace) -> L1 NZ -> L0A ZZ."""
    kpad = (kk + c0 - 1) // c0 * c0
    p1 = _load_rows_nz(pa1, p_ws, m, kk, s2b, m16, p_ws.dtype)
    _nz_to_zz(pa2, p1, m16 // 16, kpad, c0)
    pa1.free_tensor(p1)


@asc.jit
def _load_v_chunk_16(qb1, bl0, v_addr, kk, kv_row, d):
    """kk rows of 16-bit V -> L1 NZ -> L0B as transposed 16 x 16 fractals."""
    vg = asc.GlobalTensor()
    vg.set_global_buffer(v_addr, (kk - 1) * kv_row + d)
    v1 = qb1.alloc_tensor(v_addr.dtype)
    k16 = (kk + 15) // 16 * 16
    asc.data_copy(v1, vg, asc.Nd2NzParams(nd_num=1, n_value=kk, d_value=d, src_d_value=kv_row,
                                          dst_nz_c0_stride=k16, dst_nz_n_stride=1))
    qb1.enque(v1)
    v1 = qb1.deque(v_addr.dtype)
    for kb in range(k16 // 16):
        asc.load_data(bl0[kb * 16 * d:], v1[kb * 256:],
                      asc.LoadData2DParams(repeat_times=d // 16, src_stride=k16 // 16,
                                           if_transpose=True))
    qb1.free_tensor(v1)


@asc.jit
def _load_v_chunk_32(qb1, bl0, v_addr, kk, kv_row, d):
    """kk rows of fp32 V -> L1 (16-column matrices, 8-row fractals) -> L0B transposed."""
    vg = asc.GlobalTensor()
    vg.set_global_buffer(v_addr, (kk - 1) * kv_row + d)
    v1 = qb1.alloc_tensor(v_addr.dtype)
    k8 = (kk + 7) // 8 * 8
    asc.data_copy(v1, vg, asc.Nd2NzParams(nd_num=d // 16, n_value=kk, d_value=16,
                                          src_nd_matrix_stride=16, src_d_value=kv_row,
                                          dst_nz_c0_stride=1, dst_nz_n_stride=2,
                                          dst_nz_matrix_stride=k8 * 16))
    qb1.enque(v1)
    v1 = qb1.deque(v_addr.dtype)
    for kb in range(k8 // 8):
        asc.load_data(bl0[kb * 8 * d:], v1[kb * 128:],
                      asc.LoadData2DParams(repeat_times=d // 16, src_stride=k8 // 8,
                                           if_transpose=True))
    qb1.free_tensor(v1)


@asc.jit
def _add_pv(oacc, oin, o_ws, oc, bc, row_a, m, m16, d):
    """O_part L0C -> GM workspace -> UB;  O = O * alpha + O_part."""
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    asc.fixpipe(o_ws, oc, asc.FixpipeParamsV220(n_size=d, m_size=m, src_stride=m16,
                                                dst_stride=d))
    asc.set_flag(asc.HardEvent.FIX_MTE2, 0)     # O_part is in GM before MTE2 reads it
    asc.wait_flag(asc.HardEvent.FIX_MTE2, 0)
    ou = oin.alloc_tensor(asc.float32)
    asc.data_copy(ou, o_ws, m * d)
    oin.enque(ou)
    ou = oin.deque(asc.float32)
    _scale_rows(oacc, bc, row_a, m, d, False)
    asc.add(oacc, oacc, ou, m * d)
    oin.free_tensor(ou)


@asc.jit
def _divide_and_store_stats(m_addr, l_addr, oacc, bc, row_m, row_l, m, d):
    """The deferred division O /= l; softmax_max = m and softmax_sum = l -> GM."""
    mg = asc.GlobalTensor()
    mg.set_global_buffer(m_addr, m)
    lg = asc.GlobalTensor()
    lg.set_global_buffer(l_addr, m)
    _scale_rows(oacc, bc, row_l, m, d, True)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy_pad(mg, row_m, asc.DataCopyExtParams(block_count=1, block_len=m * 4))
    asc.data_copy_pad(lg, row_l, asc.DataCopyExtParams(block_count=1, block_len=m * 4))


@asc.jit
def _store_o(o_addr, src, m, d, o_row):
    """m rows of d from UB -> GM rows o_row apart."""
    og = asc.GlobalTensor()
    og.set_global_buffer(o_addr, (m - 1) * o_row + d)
    isz = o_addr.dtype.sizeof()
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy_pad(og, src, asc.DataCopyExtParams(block_count=m, block_len=d * isz,
                                                     dst_stride=(o_row - d) * isz))
    asc.set_flag(asc.HardEvent.MTE3_V, 0)       # O and the stats are out before the next tile
    asc.wait_flag(asc.HardEvent.MTE3_V, 0)      # rewrites them


@asc.jit
def flash_attention_kernel(q: asc.GlobalAddress, k: asc.GlobalAddress, v: asc.GlobalAddress,
                           out: asc.GlobalAddress, smax: asc.GlobalAddress,
                           ssum: asc.GlobalAddress, ws: asc.GlobalAddress, wsp: asc.GlobalAddress,
                           shape: AttentionShape, layout: AttentionLayout, scale: float,
                           variant: asc.ConstExpr[AttentionVariant],
                           tiling: asc.ConstExpr[FlashAttentionTiling],
                           bufs: asc.ConstExpr[FlashAttentionBuffers]):
    """out = softmax(scale * q k^T [causal]) v and the row stats, for the tensors' `layout`;
    `bufs` is `flash_attention_buffers(tiling, ...)`: buffer sizes and view offsets."""
    pipe = asc.TPipe()
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qb1 = asc.TQue(asc.TPosition.B1, 1)
    pa1 = asc.TQue(asc.TPosition.A1, 1)
    sin = asc.TQue(asc.TPosition.VECIN, 1)
    oin = asc.TQue(asc.TPosition.VECIN, 1)
    l0a_buf = asc.TBuf(asc.TPosition.A2)
    l0b_buf = asc.TBuf(asc.TPosition.B2)
    l0c_buf = asc.TBuf(asc.TPosition.CO1)
    calc_buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qa1, 1, bufs.q_l1)
    pipe.init_buffer(qb1, 1, bufs.kv_l1)
    pipe.init_buffer(pa1, 1, bufs.p_l1)
    pipe.init_buffer(sin, 1, bufs.s_ub)
    pipe.init_buffer(oin, 1, bufs.o_ub)
    pipe.init_buffer(l0a_buf, bufs.l0a)
    pipe.init_buffer(l0b_buf, bufs.l0b)
    pipe.init_buffer(l0c_buf, bufs.l0c)
    pipe.init_buffer(calc_buf, bufs.calc)
    qa2 = l0a_buf.get_with_offset(tiling.s1_block * variant.head_dim, 0, q.dtype)
    pa2 = l0a_buf.get_with_offset(tiling.s1_block * tiling.kv_chunk, bufs.p_l0a, q.dtype)
    bl0 = l0b_buf.get(q.dtype)
    sc = l0c_buf.get_with_offset(tiling.s1_block * tiling.s2_block, 0, asc.float32)
    oc = l0c_buf.get_with_offset(tiling.s1_block * variant.head_dim, bufs.o_l0c, asc.float32)
    oacc = calc_buf.get_with_offset(tiling.s1_block * variant.head_dim, bufs.acc_ub,
                                    asc.float32)
    row_m = calc_buf.get_with_offset(tiling.s1_block, bufs.m_ub, asc.float32)
    row_l = calc_buf.get_with_offset(tiling.s1_block, bufs.l_ub, asc.float32)
    row_a = calc_buf.get_with_offset(tiling.s1_block, bufs.alpha_ub, asc.float32)
    mnew = calc_buf.get_with_offset(tiling.s1_block, bufs.mnew_ub, asc.float32)
    rowred = calc_buf.get_with_offset(tiling.s1_block, bufs.rowred_ub, asc.float32)
    fold = calc_buf.get_with_offset(tiling.s1_block * 64, bufs.fold_ub, asc.float32)
    bc = calc_buf.get_with_offset(tiling.s1_block * 8, bufs.brcb_ub, asc.float32)
    p_low = 0
    o_low = 0
    if variant.low_precision:
        p_low = tiling.s1_block * tiling.s2_block
        o_low = tiling.s1_block * variant.head_dim
    plow = calc_buf.get_with_offset(p_low, bufs.p16_ub, q.dtype)
    olow = calc_buf.get_with_offset(o_low, bufs.o16_ub, q.dtype)
    wsg = asc.GlobalTensor()
    wsg.set_global_buffer(ws + asc.get_block_idx() * bufs.ws_block, bufs.ws_block)
    wpg = asc.GlobalTensor()
    wpg.set_global_buffer(wsp + asc.get_block_idx() * bufs.wsp_block, bufs.wsp_block)
    n_s1 = (shape.s1 + tiling.s1_block - 1) // tiling.s1_block
    group = shape.heads // shape.kv_heads
    for t in range(asc.get_block_idx(), shape.tiles, asc.get_block_num()):
        b = t // (shape.heads * n_s1)
        n = (t // n_s1) % shape.heads
        s1_0 = (t % n_s1) * tiling.s1_block
        m = min(tiling.s1_block, shape.s1 - s1_0)
        m16 = (m + 15) // 16 * 16
        # also O's offset: out has q's layout
        q_off = b * layout.q.batch + n * layout.q.head + s1_0 * layout.q.row
        kv_base = b * layout.kv.batch + (n // group) * layout.kv.head
        _load_q(qa1, qa2, q + q_off, m, m16, layout.q.row, variant.head_dim, variant.c0)
        asc.duplicate(row_m, NEG_INF, tiling.s1_block)
        asc.duplicate(row_l, 0.0, tiling.s1_block)
        asc.duplicate(oacc, 0.0, tiling.s1_block * variant.head_dim)
        n_s2 = (shape.s2 + tiling.s2_block - 1) // tiling.s2_block
        if variant.causal:
            n_s2 = min(n_s2, (s1_0 + m - 1) // tiling.s2_block + 1)
        for j in range(n_s2):
            s2_0 = j * tiling.s2_block
            n2 = min(tiling.s2_block, shape.s2 - s2_0)
            _qk_step(wsg, sc, qa2, qb1, bl0, k + (kv_base + s2_0 * layout.kv.row), m, m16, n2,
                     layout.kv.row, variant.head_dim, tiling.s2_block, variant.c0)
            su = _load_scores(sin, wsg, m * tiling.s2_block, scale)
            if variant.causal:
                _mask_above_diagonal(su, m, n2, s1_0, s2_0, tiling.s2_block)
            _softmax_step(su, row_m, row_l, row_a, mnew, rowred, fold, bc, m, n2,
                          tiling.s2_block)
            if variant.low_precision:
                asc.cast(plow, su, asc.RoundMode.CAST_RINT, m * tiling.s2_block)
            asc.set_flag(asc.HardEvent.V_MTE3, 0)       # P is written before it is copied out
            asc.wait_flag(asc.HardEvent.V_MTE3, 0)
            if variant.low_precision:
                asc.data_copy(wpg, plow, m * tiling.s2_block)
            else:
                asc.data_copy(wpg, su, m * tiling.s2_block)
            # P is in GM before MTE2 reads it back, and read out of UB before the next S lands
            asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
            asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
            sin.free_tensor(su)
            # the PV step: O_part = P V, K-chunked through L0A, then O = O * alpha + O_part
            for p0 in range(0, n2, tiling.kv_chunk):
                kk = min(tiling.kv_chunk, n2 - p0)
                asc.set_flag(asc.HardEvent.M_MTE1, 0)   # the last mmad has read L0A / L0B
                asc.wait_flag(asc.HardEvent.M_MTE1, 0)
                _load_p_chunk(pa1, pa2, wpg[p0:], m, m16, kk, tiling.s2_block, variant.c0)
                if variant.low_precision:
                    _load_v_chunk_16(qb1, bl0, v + (kv_base + (s2_0 + p0) * layout.kv.row), kk,
                                     layout.kv.row, variant.head_dim)
                else:
                    _load_v_chunk_32(qb1, bl0, v + (kv_base + (s2_0 + p0) * layout.kv.row), kk,
                                     layout.kv.row, variant.head_dim)
                asc.set_flag(asc.HardEvent.MTE1_M, 0)
                asc.wait_flag(asc.HardEvent.MTE1_M, 0)
                asc.mmad(oc, pa2, bl0, asc.MmadParams(m=m, n=variant.head_dim, k=kk,
                                                      cmatrix_init_val=p0 == 0))
            _add_pv(oacc, oin, wsg[tiling.s1_block * tiling.s2_block:], oc, bc, row_a, m, m16,
                    variant.head_dim)
        st_off = (b * shape.heads + n) * shape.s1 + s1_0
        _divide_and_store_stats(smax + st_off, ssum + st_off, oacc, bc, row_m, row_l, m,
                                variant.head_dim)
        if variant.low_precision:
            asc.cast(olow, oacc, asc.RoundMode.CAST_RINT, m * variant.head_dim)
            _store_o(out + q_off, olow, m, variant.head_dim, layout.q.row)
        else:
            _store_o(out + q_off, oacc, m, variant.head_dim, layout.q.row)


def _strides(layout, shape, heads):
    """(B, N, S, D) and (row, head, batch) element strides of a tensor in `layout`."""
    rank = {"BNSD": 4, "BSND": 4, "BSH": 3}.get(layout)
    if rank is not None and len(shape) != rank:
        raise ValueError(f"flash_attention: a tensor in layout {layout} must be {rank}-D "
                         f"({', '.join(layout)}), got shape={tuple(shape)}")
    if rank is not None and min(shape) < 1:
        raise ValueError(f"flash_attention: every dim of a {layout} tensor must be >= 1, got "
                         f"shape={tuple(shape)}")
    if layout == "BNSD":
        b, n, s, d = shape
        return (b, n, s, d), (d, s * d, n * s * d)
    if layout == "BSND":
        b, s, n, d = shape
        return (b, n, s, d), (n * d, d, s * n * d)
    if layout == "BSH":
        b, s, h = shape
        if heads is None or h % heads:
            raise ValueError(f"flash_attention: BSH needs head_num dividing H, got H={h}, "
                             f"head_num={heads}")
        d = h // heads
        return (b, heads, s, d), (h, d, s * h)
    raise ValueError(f"flash_attention: layout must be one of {LAYOUTS}, got layout={layout!r}")


def flash_attention_with_stats(q, k, v, *, layout="BNSD", head_num=None, scale=None,
                               causal=False, stream=None, tiling=None, kv_head_num=None,
                               **launch_options):
    """FlashAttention forward. Returns (out, softmax_max, softmax_sum); the stats are (B, N, S1)
    float32 (the real op broadcasts them to (B, N, S1, 8)). numpy in -> numpy out; rt.DeviceArray
    in -> DeviceArrays out, launched asynchronously on `stream`."""
    dev = is_device(q, k, v)
    rt.ensure_device()
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"flash_attention: q, k, v must share a dtype, got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}")
    if np.dtype(q.dtype) not in (np.dtype(np.float32), np.dtype(np.float16),
                                 np.dtype(asc.bfloat16.numpy)):
        raise ValueError(f"flash_attention: dtype must be float32, float16 or bfloat16, got "
                         f"dtype={q.dtype}")
    kv_heads_bsh = kv_head_num or head_num
    (B, N, S1, D), qs = _strides(layout, q.shape, head_num)
    (Bk, NK, S2, Dk), ks = _strides(layout, k.shape, kv_heads_bsh)
    (_, NV, S2v, Dv), vs = _strides(layout, v.shape, kv_heads_bsh)
    if (Bk, Dk) != (B, D) or (NV, S2v, Dv) != (NK, S2, Dk) or N % NK:
        raise ValueError(f"flash_attention: k and v must be (B, N_kv, S2, D) with N_kv dividing "
                         f"N in layout {layout}, got q {q.shape}, k {k.shape}, v {v.shape}")
    if D % 16:
        raise ValueError(f"flash_attention: head dim D must be a multiple of 16, got D={D}")
    isz = np.dtype(q.dtype).itemsize
    t = (tiling or flash_attention_tiling(D, q.dtype, S1, S2)).validate(D, isz)
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    tiles = B * N * ceil_div(S1, t.s1_block)
    # one block per AI core as the real op launches (the NPU estimate counts them); the core
    # pool runs them on however many CPU cores there are
    block_dim = max(1, min(tiles, rt.get_soc().ai_core_num))
    alloc = rt.device_empty if dev else rt.host_empty
    out = alloc(q.shape, q.dtype)
    smax = alloc((B, N, S1), np.float32)
    ssum = alloc((B, N, S1), np.float32)
    # GM workspaces (scores, P, O part per block) stay on the device in both paths; the launch
    # keeps them alive until the kernel has run
    bufs = flash_attention_buffers(t, D, isz)
    ws = rt.device_empty((block_dim * bufs.ws_block,), np.float32)
    wsp = rt.device_empty((block_dim * bufs.wsp_block,), q.dtype)
    gm = [a if dev else np.ascontiguousarray(a).reshape(-1) for a in (q, k, v)]
    gm += [x if dev else x.reshape(-1) for x in (out, smax, ssum)] + [ws, wsp]
    shape = AttentionShape(N, NK, S1, S2, tiles)
    strides = AttentionLayout(TensorStrides(*qs), TensorStrides(*ks))
    launch = (flash_attention_kernel[block_dim, stream] if stream is not None
              else flash_attention_kernel[block_dim])
    launch(*gm, shape, strides, scale, attention_variant(D, q.dtype, causal), t, bufs,
           **launch_options)
    return out, smax, ssum


def flash_attention(q, k, v, *, layout="BNSD", head_num=None, scale=None, causal=False,
                    stream=None, **kw):
    """Mirrors aclnnFlashAttentionScore (forward): softmax(scale * Q K^T [+ causal mask]) V."""
    return flash_attention_with_stats(q, k, v, layout=layout, head_num=head_num, scale=scale,
                                      causal=causal, stream=stream, **kw)[0]


def flash_attention_reference(q, k, v, *, layout="BNSD", head_num=None, scale=None,
                              causal=False, kv_head_num=None):
    """numpy (float64) reference; returns (out, softmax_max, softmax_sum)."""
    def to_bnsd(x, heads):
        (b, n, s, d), _ = _strides(layout, x.shape, heads)
        x = np.asarray(x).astype(np.float64)
        if layout == "BNSD":
            return x
        return x.reshape(b, s, n, d).transpose(0, 2, 1, 3)
    qq = to_bnsd(q, head_num)
    kk = to_bnsd(k, kv_head_num or head_num)
    vv = to_bnsd(v, kv_head_num or head_num)
    group = qq.shape[1] // kk.shape[1]
    kk = np.repeat(kk, group, axis=1)
    vv = np.repeat(vv, group, axis=1)
    d = qq.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    s = np.einsum("bnid,bnjd->bnij", qq, kk) * scale
    if causal:
        s1, s2 = s.shape[-2:]
        s = np.where(np.tril(np.ones((s1, s2), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    p = np.exp(s - mx)
    sm = p.sum(-1, keepdims=True)
    o = np.einsum("bnij,bnjd->bnid", p / sm, vv)
    if layout != "BNSD":
        o = o.transpose(0, 2, 1, 3).reshape(q.shape)
    return o, mx[..., 0], sm[..., 0]
