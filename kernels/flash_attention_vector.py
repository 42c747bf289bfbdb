"""FlashAttention forward, the AIVs' side (kernels/flash_attention.py has the design): each AIV of
a group owns half the rows of the group's S1 block. float16 and float32 inputs: per S1 block the
AIV first scales its Q rows for the cube (`scale_q_rows`, `scale_q_rows_f32`), and S comes back
scaled (float16: in float16); bfloat16: the AIV scales S. Per S2
block: S rows from the GM workspace -> UB, scale (or cast to f32), causal mask, online softmax
on the whole tile (rows are the repeats of the vector ops: row max / sum by folding 64-lane
chunks, then whole_reduce; the running max m broadcast back by brcb), P -> GM workspace for the
AIC; one block later the O part the AIC computed from it comes back and O = O * exp(m_old -
m_new) + O_part. At the end O / l and the stats -> GM."""
from __future__ import annotations

import math

import ascendc as asc

NEG_INF = -math.inf


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
def load_scores(sin, s_ws, count, scale, scaled):
    """S GM workspace -> UB, times the softmax scale unless it came `scaled` (the cube had Q x
    scale); the dequeued tile."""
    su = sin.alloc_tensor(asc.float32)
    asc.data_copy(su, s_ws, count)
    sin.enque(su)
    su = sin.deque(asc.float32)
    if not scaled:
        asc.muls(su, su, scale, count)
    return su


@asc.jit
def issue_scores(sin, s_ws, count):
    """float16 (already scaled) S GM workspace -> a UB buffer of `sin`, enqueued: the caller
    dequeues it a pass later, so the copy runs while the vector unit works the previous pass."""
    st = sin.alloc_tensor(s_ws.dtype)
    asc.data_copy(st, s_ws, count)
    sin.enque(st)


@asc.jit
def scale_q_rows(wq, q_addr, qlow, tmp, rows, d, q_row, scale):
    """16-bit inputs: the AIV's Q rows (q_row apart) times the softmax scale, in the input dtype,
    -> the group's Q slot (rows d apart), so the 16-bit S the cube hands over is already scaled.
    `tmp` (f32, rows x d) is scratch the caller does not need meanwhile."""
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q_addr, (rows - 1) * q_row + d)
    isz = q_addr.dtype.sizeof()
    asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)        # the previous block's O has left qlow
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.data_copy_pad(qlow, qg, asc.DataCopyExtParams(block_count=rows, block_len=d * isz,
                                                      src_stride=(q_row - d) * isz))
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.cast(tmp, qlow, asc.RoundMode.CAST_NONE, rows * d)
    asc.muls(tmp, tmp, scale, rows * d)
    asc.cast(qlow, tmp, asc.RoundMode.CAST_RINT, rows * d)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(wq, qlow, rows * d)
    asc.set_flag(asc.HardEvent.MTE3_V, 0)
    asc.wait_flag(asc.HardEvent.MTE3_V, 0)


@asc.jit
def scale_q_rows_f32(wq, q_addr, oin, rows, d, q_row, scale):
    """float32 inputs: the AIV's Q rows (q_row apart) times the softmax scale -> the group's Q
    slot (rows d apart), so the S the cube hands over is already scaled and the softmax has no
    scaling pass. The rows pass through a buffer of the O-part queue `oin` (rows x d f32, free
    between two O parts: the caller runs this after one O update and before the next O part's
    copy), which is released once the copy out has read it."""
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q_addr, (rows - 1) * q_row + d)
    qt = oin.alloc_tensor(asc.float32)
    asc.data_copy_pad(qt, qg, asc.DataCopyExtParams(block_count=rows, block_len=d * 4,
                                                    src_stride=(q_row - d) * 4))
    oin.enque(qt)
    qt = oin.deque(asc.float32)
    asc.muls(qt, qt, scale, rows * d)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(wq, qt, rows * d)
    asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)        # read out before the next O part lands
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
    oin.free_tensor(qt)


@asc.jit
def mask_above_diagonal(su, rows, n2, s1_0, s2_0, s2b):
    """Causal mask: -inf above the diagonal, on the blocks that cross it (s1_0: the first row's
    query position)."""
    if s2_0 + n2 > s1_0 + 1:
        for r in range(rows):
            valid = max(0, min(n2, s1_0 + r - s2_0 + 1))
            if valid < n2:
                asc.duplicate(su[r * s2b + valid:], NEG_INF, n2 - valid)


@asc.jit
def softmax_step(su, row_m, row_l, row_a, mnew, rowred, fold, bc, rows, n2, s2b):
    """Online softmax on the whole tile: P = exp(S - m_new) in place, alpha = exp(m_old -
    m_new), l = l * alpha + rowsum(P), m = m_new."""
    _row_reduce(rowred, fold, su, rows, n2, s2b, True)
    asc.max(mnew, row_m, rowred, rows)
    asc.sub(row_a, row_m, mnew, rows)
    asc.exp(row_a, row_a, rows)
    asc.brcb(bc, mnew, (rows + 7) // 8, asc.BrcbRepeatParams(dst_blk_stride=1, dst_rep_stride=8))
    for c in range(0, n2, 64):
        asc.sub(su[c:], su[c:], bc, min(64, n2 - c), rows,
                asc.BinaryRepeatParams(src1_blk_stride=0, dst_rep_stride=s2b // 8,
                                       src0_rep_stride=s2b // 8, src1_rep_stride=1))
    asc.exp(su, su, rows * s2b)
    _row_reduce(rowred, fold, su, rows, n2, s2b, False)
    asc.mul(row_l, row_l, row_a, rows)
    asc.add(row_l, row_l, rowred, rows)
    asc.muls(row_m, mnew, 1.0, rows)


@asc.jit
def store_p(p_ws, su, plow, count, low_precision, vector_waits=True):
    """P (UB, f32; cast to the input dtype for 16-bit inputs) -> the P slot in GM; the copy has
    read UB before the next S copy rewrites it and, with `vector_waits`, before the vector unit
    goes on (needed when the vector unit's next writes reuse what the copy reads; the float16
    path copies P out of the S buffer it came in, which only the next S copy rewrites, so its
    vector unit goes on at once)."""
    if low_precision:
        asc.cast(plow, su, asc.RoundMode.CAST_RINT, count)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    if low_precision:
        asc.data_copy(p_ws, plow, count)
    else:
        asc.data_copy(p_ws, su, count)
    if vector_waits:
        asc.set_flag(asc.HardEvent.MTE3_V, 0)
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)
    asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
    asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)


@asc.jit
def issue_o_part(oin, o_ws, count):
    """O_part GM -> a UB buffer of `oin`, enqueued: `add_o_part` dequeues it later."""
    ou = oin.alloc_tensor(asc.float32)
    asc.data_copy(ou, o_ws, count)
    oin.enque(ou)


@asc.jit
def add_o_part(oacc, oin, bc, alpha, rows, d, first):
    """O = O * alpha + O_part (the copy `issue_o_part` started); O = O_part for the `first` S2
    block of an S1 block (what O held is the previous block's, alpha is 0)."""
    ou = oin.deque(asc.float32)
    if first:
        asc.muls(oacc, ou, 1.0, rows * d)
    else:
        _scale_rows(oacc, bc, alpha, rows, d, False)
        asc.add(oacc, oacc, ou, rows * d)
    oin.free_tensor(ou)


@asc.jit
def finish_rows(out_addr, m_addr, l_addr, oacc, olow, bc, row_m, row_l, rows, d, o_row,
                 low_precision):
    """The deferred division O /= l; O (cast to the input dtype) and softmax_max = m,
    softmax_sum = l -> GM; the copies have read UB before the next block rewrites it."""
    og = asc.GlobalTensor()
    og.set_global_buffer(out_addr, (rows - 1) * o_row + d)
    mg = asc.GlobalTensor()
    mg.set_global_buffer(m_addr, rows)
    lg = asc.GlobalTensor()
    lg.set_global_buffer(l_addr, rows)
    _scale_rows(oacc, bc, row_l, rows, d, True)
    if low_precision:
        asc.cast(olow, oacc, asc.RoundMode.CAST_RINT, rows * d)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy_pad(mg, row_m, asc.DataCopyExtParams(block_count=1, block_len=rows * 4))
    asc.data_copy_pad(lg, row_l, asc.DataCopyExtParams(block_count=1, block_len=rows * 4))
    isz = out_addr.dtype.sizeof()
    ext = asc.DataCopyExtParams(block_count=rows, block_len=d * isz, dst_stride=(o_row - d) * isz)
    if low_precision:
        asc.data_copy_pad(og, olow, ext)
    else:
        asc.data_copy_pad(og, oacc, ext)
    asc.set_flag(asc.HardEvent.MTE3_V, 0)
    asc.wait_flag(asc.HardEvent.MTE3_V, 0)
