"""The kernel helpers of kernels/flash_attention_backward.py: the AIC's cube steps (operand
loads, the score products S / dP and the gradient products dV / dK / dQ) and the AIVs' softmax
gradient. Plain @asc.jit helpers: their arguments are run-time values in compiled kernels."""
from __future__ import annotations

import math

import ascendc as asc

from .flash_attention_backward_tiling import NSLOT  # noqa: F401 (the kernels read it here)
from .flash_attention_cube import nz_to_zz

NEG_INF = -math.inf
SCORES, GRADS = 1, 2        # cross-core flag ids (mode 2): AIC -> AIVs, AIVs -> AIC
Q_READY = 3                 # AIVs -> AIC (float16 inputs): an S1 block's Q x scale is in GM


# ---- AIC helpers ------------------------------------------------------------------------------
# L0A and L0B hold two operand slots each, used by alternate mmads (slot = mmads so far % 2): the
# loads of one mmad overlap the previous one. Events: M_MTE1 per slot (the slot's last mmad is
# done), FIX_M 0 (the last tile's S and dP have left L0C), FIX_M 2 (the one-pass form: the
# last tile's dQ has left L0C), set once up front (`cube_begin`) and taken once at the end
# (`cube_end`).

@asc.jit
def cube_begin():
    asc.set_flag(asc.HardEvent.M_MTE1, 0)
    asc.set_flag(asc.HardEvent.M_MTE1, 1)
    asc.set_flag(asc.HardEvent.FIX_M, 0)
    asc.set_flag(asc.HardEvent.FIX_M, 2)


@asc.jit
def cube_end():
    asc.wait_flag(asc.HardEvent.M_MTE1, 0)
    asc.wait_flag(asc.HardEvent.M_MTE1, 1)
    asc.wait_flag(asc.HardEvent.FIX_M, 0)
    asc.wait_flag(asc.HardEvent.FIX_M, 2)


@asc.jit
def pick(x0, x1, slot):
    if slot == 1:
        return x1
    return x0


@asc.jit
def load_nz(que, g, rows, cols, row_stride, strip_rows, dtype):
    """GM (rows x cols) -> L1 NZ (C0-wide strips of strip_rows rows); dequeued. For 16-bit
    types with strip_rows = rows rounded up to 16 this is also the 16-column strip layout."""
    t = que.alloc_tensor(dtype)
    asc.data_copy(t, g, asc.Nd2NzParams(nd_num=1, n_value=rows, d_value=cols,
                                        src_d_value=row_stride, dst_nz_c0_stride=strip_rows,
                                        dst_nz_n_stride=1))
    que.enque(t)
    return que.deque(dtype)


@asc.jit
def load_nz_held(que, g, rows, cols, row_stride, strip_rows, dtype):
    """As load_nz, but not through the queue's FIFO: MTE1 is ordered after the copy by an
    event, and the caller enqueues the tile once the scores are out (the FIFO then holds the
    tiles in flight, oldest first, for their gradient products)."""
    t = que.alloc_tensor(dtype)
    asc.data_copy(t, g, asc.Nd2NzParams(nd_num=1, n_value=rows, d_value=cols,
                                        src_d_value=row_stride, dst_nz_c0_stride=strip_rows,
                                        dst_nz_n_stride=1))
    asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    return t


@asc.jit
def load_strips16(que, g, rows, cols16, row_stride, kpad, c0, dtype):
    """GM (rows x cols16) -> L1 as 16-column strips, each row-major kpad x 16; dequeued."""
    t = que.alloc_tensor(dtype)
    if c0 == 16:
        asc.data_copy(t, g, asc.Nd2NzParams(nd_num=1, n_value=rows, d_value=cols16,
                                            src_d_value=row_stride, dst_nz_c0_stride=kpad,
                                            dst_nz_n_stride=1))
    else:
        asc.data_copy(t, g, asc.Nd2NzParams(nd_num=cols16 // 16, n_value=rows, d_value=16,
                                            src_nd_matrix_stride=16, src_d_value=row_stride,
                                            dst_nz_c0_stride=1, dst_nz_n_stride=2,
                                            dst_nz_matrix_stride=kpad * 16))
    que.enque(t)
    return que.deque(dtype)


@asc.jit
def _transposed_to_a(a2, x1, cols16, kpad, c0):
    """16-column strips of X (kpad x cols16) -> L0A ZZ of X^T (cols16 x kpad)."""
    for cb in range(cols16 // 16):
        asc.load_data(a2[cb * 16 * kpad:], x1[cb * 16 * kpad:],
                      asc.LoadData2DParams(repeat_times=kpad // c0, src_stride=1,
                                           if_transpose=True))


@asc.jit
def _strips_to_b(b2, x1, cols16, kpad, c0):
    """16-column strips of X (kpad x cols16) -> L0B ZN of X as the B operand (k = rows)."""
    for kb in range(kpad // c0):
        asc.load_data(b2[kb * c0 * cols16:], x1[kb * 16 * c0:],
                      asc.LoadData2DParams(repeat_times=cols16 // 16, src_stride=kpad // c0,
                                           if_transpose=True))


@asc.jit
def sync(event):
    asc.set_flag(event, 0)
    asc.wait_flag(event, 0)


@asc.jit
def _loaded(slot):
    asc.set_flag(asc.HardEvent.MTE1_M, slot)
    asc.wait_flag(asc.HardEvent.MTE1_M, slot)


@asc.jit
def _score_mmad(c, a0, a1, b0, b1, slot, x1, y1, m, n2, d, c0, first):
    """c (L0C) = X Y^T for X (m rows) and Y (n2 rows) in L1 NZ, through operand slot `slot`;
    the first of a tile's two waits until the last tile's scores have left L0C."""
    m16 = (m + 15) // 16 * 16
    n16 = (n2 + 15) // 16 * 16
    a2 = pick(a0, a1, slot)
    b2 = pick(b0, b1, slot)
    asc.wait_flag(asc.HardEvent.M_MTE1, slot)
    nz_to_zz(a2, x1, m16 // 16, d, c0)
    asc.load_data(b2, y1, asc.LoadData2DParams(repeat_times=(d // c0) * (n16 // 16),
                                               src_stride=1))
    _loaded(slot)
    if first:
        asc.wait_flag(asc.HardEvent.FIX_M, 0)
    asc.mmad(c, a2, b2, asc.MmadParams(m=m, n=n2, k=d, cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_MTE1, slot)


@asc.jit
def _scores(ws, sdc, dpc, a0, a1, b0, b1, slot, q1, o1, k1, v1, m, n2, d, s1b, s2b, c0, quant):
    """S = Q K^T and dP = dO V^T (L0C: S at the start of sdc, dP at dpc = sdc + s1b * s2b) into
    the workspace slot ws (S, then dP at + s1b * s2b; rows s2b apart; f32, or float16 by the
    fixpipe's F322F16 quant), both by one fixpipe (one landing to wait for before the flag:
    L0C -> GM has a long latency); then SCORES."""
    _score_mmad(sdc, a0, a1, b0, b1, slot, q1, k1, m, n2, d, c0, True)
    _score_mmad(dpc, a0, a1, b0, b1, 1 - slot, o1, v1, m, n2, d, c0, False)
    sync(asc.HardEvent.M_FIX)
    asc.fixpipe(ws, sdc, asc.FixpipeParamsV220(n_size=(n2 + 15) // 16 * 16, m_size=m,
                                               src_stride=(m + 15) // 16 * 16, dst_stride=s2b,
                                               nd_num=2, src_nd_stride=s1b * s2b // 256,
                                               dst_nd_stride=s1b * s2b, quant_pre=quant))
    asc.set_flag(asc.HardEvent.FIX_M, 0)
    asc.cross_core_set_flag(SCORES, 2, asc.PipeID.PIPE_FIX)


@asc.jit
def transposed_mmad(acc, a0, a1, b0, b1, slot, x1, y1, m, n2, d, c0, first):
    """acc (n2 x d) (+)= X^T Y: X (m x n2) and Y (m x d) in L1 as 16-column strips (kpad = m
    rounded up to C0)."""
    n16 = (n2 + 15) // 16 * 16
    kpad = (m + c0 - 1) // c0 * c0
    a2 = pick(a0, a1, slot)
    b2 = pick(b0, b1, slot)
    asc.wait_flag(asc.HardEvent.M_MTE1, slot)
    _transposed_to_a(a2, x1, n16, kpad, c0)
    _strips_to_b(b2, y1, d, kpad, c0)
    _loaded(slot)
    asc.mmad(acc, a2, b2, asc.MmadParams(m=n2, n=d, k=m, cmatrix_init_val=first))
    asc.set_flag(asc.HardEvent.M_MTE1, slot)


@asc.jit
def transposed_product(acc, a0, a1, b0, b1, slot, pa1, x_ws, y1, m, n2, d, s2b, c0, first):
    """acc (n2 x d) (+)= X^T Y: X (m x n2) from the workspace, Y (m x d) in L1 as 16-column
    strips (kpad = m rounded up to C0)."""
    n16 = (n2 + 15) // 16 * 16
    kpad = (m + c0 - 1) // c0 * c0
    x1 = load_strips16(pa1, x_ws, m, n16, s2b, kpad, c0, x_ws.dtype)
    transposed_mmad(acc, a0, a1, b0, b1, slot, x1, y1, m, n2, d, c0, first)
    pa1.free_tensor(x1)


@asc.jit
def ds_k_product(acc, a0, a1, b0, b1, slot, pa1, ds_ws, k1, m, n2, d, s2b, c0, first):
    """acc (m x d) (+)= dS K: dS (m x n2) from the workspace, K (n2 x d) in L1 as 16-column
    strips (kpad = n2 rounded up to C0)."""
    m16 = (m + 15) // 16 * 16
    kpad = (n2 + c0 - 1) // c0 * c0
    x1 = load_nz(pa1, ds_ws, m, n2, s2b, m16, ds_ws.dtype)
    a2 = pick(a0, a1, slot)
    b2 = pick(b0, b1, slot)
    asc.wait_flag(asc.HardEvent.M_MTE1, slot)
    nz_to_zz(a2, x1, m16 // 16, kpad, c0)
    _strips_to_b(b2, k1, d, kpad, c0)
    pa1.free_tensor(x1)
    _loaded(slot)
    asc.mmad(acc, a2, b2, asc.MmadParams(m=m, n=d, k=n2, cmatrix_init_val=first))
    asc.set_flag(asc.HardEvent.M_MTE1, slot)


@asc.jit
def dq_tile(dqc, a0, a1, b0, b1, slot, x1, k1, m, n2, d, c0, dq_addr, dq_row):
    """The one-pass form's dQ_i += dS K_j: dqc (L0C, m x d) = dS K (dS in L1 as NZ with strips
    of ceil16(m) rows, K in L1 as 16-column strips), then added into the float32 GM rows at
    dq_addr (dq_row apart) by an atomic fixpipe: the groups of every S2 block add into the same
    rows. The mmad waits (FIX_M 2) until the last tile's dQ has left L0C; nothing waits for
    this one's landing."""
    m16 = (m + 15) // 16 * 16
    kpad = (n2 + c0 - 1) // c0 * c0
    a2 = pick(a0, a1, slot)
    b2 = pick(b0, b1, slot)
    asc.wait_flag(asc.HardEvent.M_MTE1, slot)
    nz_to_zz(a2, x1, m16 // 16, kpad, c0)
    _strips_to_b(b2, k1, d, kpad, c0)
    _loaded(slot)
    asc.wait_flag(asc.HardEvent.FIX_M, 2)
    asc.mmad(dqc, a2, b2, asc.MmadParams(m=m, n=d, k=n2, cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_MTE1, slot)
    g = asc.GlobalTensor()
    g.set_global_buffer(dq_addr, (m - 1) * dq_row + d)
    sync(asc.HardEvent.M_FIX)
    asc.set_atomic_add(asc.float32)
    asc.fixpipe(g, dqc, asc.FixpipeParamsV220(n_size=d, m_size=m, src_stride=m16,
                                              dst_stride=dq_row))
    asc.set_atomic_none()
    asc.set_flag(asc.HardEvent.FIX_M, 2)


@asc.jit
def store_acc(dst, acc, rows, d, row_stride):
    """An L0C accumulator (rows x d) -> GM rows row_stride apart, in dst's dtype."""
    sync(asc.HardEvent.M_FIX)
    asc.fixpipe(dst, acc, asc.FixpipeParamsV220(n_size=d, m_size=rows,
                                                src_stride=(rows + 15) // 16 * 16,
                                                dst_stride=row_stride))
    # the accumulator has left L0C before the next mmad reuses it: FIX_M event 1, as event 0
    # is pending here (set by the last tile's scores, taken by the next tile's first mmad)
    asc.set_flag(asc.HardEvent.FIX_M, 1)
    asc.wait_flag(asc.HardEvent.FIX_M, 1)


# ---- AIV helpers ------------------------------------------------------------------------------

@asc.jit
def row_sum(dst, red, src, rows, cols, row_stride):
    """dst[r] = sum of src[r, :cols]: fold 64-lane chunks into red (rows x 64), then one
    whole-reduce repeat per row."""
    w0 = min(64, cols)
    rs = row_stride // 8
    asc.muls(red, src, 1.0, w0, rows, asc.UnaryRepeatParams(src_rep_stride=rs))
    for c in range(64, cols, 64):
        asc.add(red, red, src[c:], min(64, cols - c), rows,
                asc.BinaryRepeatParams(src1_rep_stride=rs))
    asc.whole_reduce_sum(dst, red, w0, rows, 1, 1, 8)


@asc.jit
def _sub_rows(tile, bc, vec, rows, cols, row_stride):
    """tile[r, :cols] -= vec[r], the value broadcast to 32 B blocks by brcb."""
    asc.brcb(bc, vec, (rows + 7) // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, cols, 64):
        asc.sub(tile[c:], tile[c:], bc, min(64, cols - c), rows,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=row_stride // 8,
                                       src0_rep_stride=row_stride // 8, src1_rep_stride=1))


@asc.jit
def _mask_scores(su, rows, row0, s2_0, n2, n16, s2b, causal):
    """-inf where a key is masked (causal: above the diagonal) or past S2 in the last strip."""
    for r in range(rows):
        valid = n2
        if causal:
            valid = max(0, min(n2, row0 + r - s2_0 + 1))
        if valid < n16:
            asc.duplicate(su[r * s2b + valid:], NEG_INF, n16 - valid)


@asc.jit
def load_vec(dst, g, rows):
    asc.data_copy_pad(dst, g, asc.DataCopyExtParams(block_count=1, block_len=rows * 4))


@asc.jit
def store_vec(g, src, rows):
    asc.data_copy_pad(g, src, asc.DataCopyExtParams(block_count=1, block_len=rows * 4))


@asc.jit
def load_rows(dst, g, rows, d, row_stride):
    """rows x d of g (row_stride apart) -> UB rows d apart."""
    isz = g.dtype.sizeof()
    asc.data_copy_pad(dst, g, asc.DataCopyExtParams(block_count=rows, block_len=d * isz,
                                                    src_stride=(row_stride - d) * isz))


@asc.jit
def gradient_tile(su, dpu, bc, lse, dsum, rows, row0, s2_0, n2, s2b, ds_scale, causal):
    """Scaled S, dP rows in su, dpu (s2b apart) -> P in su, dS = ds_scale * P * (dP - D) in
    dpu."""
    n16 = (n2 + 15) // 16 * 16
    count = rows * s2b
    _sub_rows(su, bc, lse, rows, n16, s2b)
    _mask_scores(su, rows, row0, s2_0, n2, n16, s2b, causal)
    asc.exp(su, su, count)
    _sub_rows(dpu, bc, dsum, rows, n16, s2b)
    asc.mul(dpu, dpu, su, count)
    if ds_scale != 1.0:
        asc.muls(dpu, dpu, ds_scale, count)


@asc.jit
def store_row(g, src, d):
    asc.data_copy_pad(g, src, asc.DataCopyExtParams(block_count=1,
                                                    block_len=d * g.dtype.sizeof()))


@asc.jit
def issue_kv_block(kb1, vb1, k_addr, v_addr, kv_row, ws, sdc, dpc, a0, a1, b0, b1, slot, q1, o1,
                    m, n2, d, s1b, s2b, c0, quant):
    """The dQ pass's tile: K_j, V_j -> L1, S and dP out; returns K_j's L1 tile (kept for dQ;
    the caller enqueues it)."""
    n16 = (n2 + 15) // 16 * 16
    kg = asc.GlobalTensor()
    kg.set_global_buffer(k_addr, (n2 - 1) * kv_row + d)
    vg = asc.GlobalTensor()
    vg.set_global_buffer(v_addr, (n2 - 1) * kv_row + d)
    k1 = load_nz_held(kb1, kg, n2, d, kv_row, n16, k_addr.dtype)
    v1 = load_nz(vb1, vg, n2, d, kv_row, n16, k_addr.dtype)
    _scores(ws, sdc, dpc, a0, a1, b0, b1, slot, q1, o1, k1, v1, m, n2, d, s1b, s2b, c0, quant)
    vb1.free_tensor(v1)
    return k1


@asc.jit
def issue_q_block(qa1, oa1, q_addr, q_row, o_addr, o_row, ws, sdc, dpc, a0, a1, b0, b1, slot, k1,
                   v1, m, n2, d, s1b, s2b, c0, quant):
    """The dK/dV pass's tile: Q_i (or Q_i x scale), dO_i -> L1, S and dP out; returns both L1
    tiles (kept for dK and dV; the caller enqueues them)."""
    m16 = (m + 15) // 16 * 16
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q_addr, (m - 1) * q_row + d)
    og = asc.GlobalTensor()
    og.set_global_buffer(o_addr, (m - 1) * o_row + d)
    q1 = load_nz_held(qa1, qg, m, d, q_row, m16, q_addr.dtype)
    o1 = load_nz_held(oa1, og, m, d, o_row, m16, q_addr.dtype)
    _scores(ws, sdc, dpc, a0, a1, b0, b1, slot, q1, o1, k1, v1, m, n2, d, s1b, s2b, c0, quant)
    return q1, o1


@asc.jit
def scale_q_rows(qs_g, q_g, qlow, tmp, rows, d, q_row, scale):
    """float16 inputs: `rows` Q rows (q_row apart) x scale, in float16 -> qs_g (rows d apart),
    so the float16 S the cube hands over is already scaled and cannot overflow where the f32
    scaled S would not. qlow (16-bit) and tmp (f32) hold rows x d."""
    sync(asc.HardEvent.V_MTE2)
    load_rows(qlow, q_g, rows, d, q_row)
    sync(asc.HardEvent.MTE2_V)
    asc.cast(tmp, qlow, asc.RoundMode.CAST_NONE, rows * d)
    asc.muls(tmp, tmp, scale, rows * d)
    asc.cast(qlow, tmp, asc.RoundMode.CAST_RINT, rows * d)
    sync(asc.HardEvent.V_MTE3)
    asc.data_copy(qs_g, qlow, rows * d)
    sync(asc.HardEvent.MTE3_V)
