"""FlashAttention forward, the AIC's side (kernels/flash_attention.py has the design): per S1 block
Q GM -> L1 (NZ) -> L0A (ZZ) once; per S2 block `qk_block` (S = Q K^T, chunk by chunk through
L0B / L0C, fixpipe into an S slot of the group's GM workspace, in the 16-bit input dtype for
16-bit inputs) and `pv_block` (O_part = P V: P
chunks from the GM workspace -> L1 -> L0A, V chunks -> L1 -> L0B, accumulated in L0C, fixpipe
into an O slot). The AIC has no Unified Buffer: everything here is L1 / L0."""
from __future__ import annotations

import ascendc as asc

from .flash_attention_tiling import SLOTS

# the pipeline's depth: SLOTS S, P and O slots per group in the GM workspaces; the AIC computes S
# of block j + LAG before P V of block j, the AIVs add the O part of block j - LAG after the
# softmax of block j
LAG = SLOTS - 1
# cross-core flag ids (mode 2, AIC <-> its AIVs), one per direction: a flag is a counter and
# each side sets and waits in step order, so the k-th wait on an id takes the k-th set (the
# slot k % SLOTS); the depth is bounded by the counter's 16 pending sets, not by the 11 ids
S_READY = 0         # AIC -> AIVs: the next S tile is in its S slot
P_READY = 1         # AIVs -> AIC: the next P tile is in its P slot
O_READY = 2         # AIC -> AIVs: the next O part is in its O slot
Q_READY = 3         # AIVs -> AIC: the scaled Q block (float16 inputs) in Q slot kt % 2
XMODE = 2


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
def _load_rows_zz(que, g, rows, cols, row_stride, kpad, dtype):
    """GM (rows x cols, row stride) -> L1 in ZZ order (each 16-row band one Nd2Nz matrix whose
    C0 strips are 16 rows apart, bands 16 * kpad apart: L1 holds the L0A fractals in their L0A
    order); dequeued. A ragged last band is its own copy (rows past `rows` are not read)."""
    t = que.alloc_tensor(dtype)
    full = rows // 16
    if full > 0:
        asc.data_copy(t, g, asc.Nd2NzParams(nd_num=full, n_value=16, d_value=cols,
                                            src_nd_matrix_stride=16 * row_stride,
                                            src_d_value=row_stride, dst_nz_c0_stride=16,
                                            dst_nz_n_stride=1, dst_nz_matrix_stride=16 * kpad))
    if rows % 16:
        asc.data_copy(t[full * 16 * kpad:], g[full * 16 * row_stride:],
                      asc.Nd2NzParams(nd_num=1, n_value=rows % 16, d_value=cols,
                                      src_d_value=row_stride, dst_nz_c0_stride=16,
                                      dst_nz_n_stride=1))
    que.enque(t)
    return que.deque(dtype)


@asc.jit
def zz_to_l0a(a2, a1, frac, c0):
    """L1 in ZZ order (`_load_rows_zz`) -> L0A: `frac` contiguous fractals (16 x c0), up to 255
    a load."""
    for f in range(0, frac, 255):
        asc.load_data(a2[f * 16 * c0:], a1[f * 16 * c0:],
                      asc.LoadData2DParams(repeat_times=min(255, frac - f), src_stride=1))


@asc.jit
def nz_to_zz(a2, a1, rows16, kpad, c0):
    """L1 NZ (strips of rows16*16 rows) -> L0A ZZ, one 16-row block per load."""
    for r in range(rows16):
        asc.load_data(a2[r * 16 * kpad:], a1[r * 16 * c0:],
                      asc.LoadData2DParams(repeat_times=kpad // c0, src_stride=rows16))


@asc.jit
def load_q(qa1, qa2, q_addr, m, m16, q_row, d, c0):
    """Q: m rows of d (q_row apart) GM -> L1 NZ -> L0A ZZ; the previous block's mmads have read
    L0A before it is overwritten, and the load lands before the next mmad."""
    qg = asc.GlobalTensor()
    qg.set_global_buffer(q_addr, (m - 1) * q_row + d)
    zz = 16 * q_row <= 65535                    # Nd2Nz's src_nd_matrix_stride limit
    if zz:
        q1 = _load_rows_zz(qa1, qg, m, d, q_row, d, q_addr.dtype)
    else:
        q1 = _load_rows_nz(qa1, qg, m, d, q_row, m16, q_addr.dtype)
    asc.set_flag(asc.HardEvent.M_MTE1, 0)
    asc.wait_flag(asc.HardEvent.M_MTE1, 0)
    if zz:
        zz_to_l0a(qa2, q1, (m16 // 16) * (d // c0), c0)
    else:
        nz_to_zz(qa2, q1, m16 // 16, d, c0)
    qa1.free_tensor(q1)
    asc.set_flag(asc.HardEvent.MTE1_M, 0)
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)


@asc.jit
def _s_chunk(s_ws, qa2, kv1, b2, lc, k_addr, c, kk, m, m16, kv_row, d, s2b, c0, quant):
    """S[:, c:c + kk] = Q K^T for kk keys: K chunk GM -> L1 NZ (== ZN of K^T) -> L0B, mmad into
    an L0C buffer, fixpipe to the S slot (rows s2b apart; quant: F322F16 / F322BF16 for a 16-bit
    slot); returns the L0C tensor, which the caller frees."""
    k16 = (kk + 15) // 16 * 16
    kg = asc.GlobalTensor()
    kg.set_global_buffer(k_addr + c * kv_row, (kk - 1) * kv_row + d)
    k1 = _load_rows_nz(kv1, kg, kk, d, kv_row, k16, k_addr.dtype)
    kb = b2.alloc_tensor(k_addr.dtype)
    asc.load_data(kb, k1, asc.LoadData2DParams(repeat_times=(d // c0) * (k16 // 16),
                                               src_stride=1))
    b2.enque(kb)
    kv1.free_tensor(k1)
    kb = b2.deque(k_addr.dtype)
    st = lc.alloc_tensor(asc.float32)
    asc.mmad(st, qa2, kb, asc.MmadParams(m=m, n=kk, k=d, cmatrix_init_val=True))
    b2.free_tensor(kb)
    lc.enque(st)
    st = lc.deque(asc.float32)
    asc.fixpipe(s_ws[c:], st, asc.FixpipeParamsV220(n_size=kk, m_size=m, src_stride=m16,
                                                    dst_stride=s2b, quant_pre=quant))
    return st


@asc.jit
def qk_block(s_ws, qa2, kv1, b2, lc, k_addr, m, m16, n2, kv_row, d, s2b, kc, c0, quant,
             l0c_num):
    """S = Q K^T for one S2 block of n2 keys, kc keys per mmad. With two L0C buffers the
    chunks go in pairs and both buffers are released after the second fixpipe: a release waits
    for the fixpipes issued before it to land, so a pair pays that wait once."""
    for c in range(0, n2, kc * l0c_num):
        st = _s_chunk(s_ws, qa2, kv1, b2, lc, k_addr, c, min(kc, n2 - c), m, m16, kv_row, d,
                      s2b, c0, quant)
        if l0c_num > 1 and c + kc < n2:
            st2 = _s_chunk(s_ws, qa2, kv1, b2, lc, k_addr, c + kc, min(kc, n2 - c - kc), m,
                           m16, kv_row, d, s2b, c0, quant)
            lc.free_tensor(st)
            lc.free_tensor(st2)
        else:
            lc.free_tensor(st)


@asc.jit
def _transpose_v(vb, v1, kbs, dbs, fe):
    """V (L1: dbs 16-column matrices of kbs fractals each, fe elements a fractal) -> L0B
    transposed: fractal (kb, i) of matrix i goes to fractal kb * dbs + i. One load per matrix
    (its fractals in a row, dst_gap dbs - 1) or per fractal row kb (src_stride kbs), whichever
    takes fewer loads."""
    if dbs < kbs:
        for i in range(dbs):
            asc.load_data(vb[i * fe:], v1[i * kbs * fe:],
                          asc.LoadData2DParams(repeat_times=kbs, src_stride=1, dst_gap=dbs - 1,
                                               if_transpose=True))
    else:
        for kb in range(kbs):
            asc.load_data(vb[kb * dbs * fe:], v1[kb * fe:],
                          asc.LoadData2DParams(repeat_times=dbs, src_stride=kbs,
                                               if_transpose=True))


@asc.jit
def _load_v_chunk_16(kv1, b2, v_addr, kk, kv_row, d):
    """kk rows of 16-bit V -> L1 NZ -> L0B as transposed 16 x 16 fractals; dequeued."""
    vg = asc.GlobalTensor()
    vg.set_global_buffer(v_addr, (kk - 1) * kv_row + d)
    v1 = kv1.alloc_tensor(v_addr.dtype)
    k16 = (kk + 15) // 16 * 16
    asc.data_copy(v1, vg, asc.Nd2NzParams(nd_num=1, n_value=kk, d_value=d, src_d_value=kv_row,
                                          dst_nz_c0_stride=k16, dst_nz_n_stride=1))
    kv1.enque(v1)
    v1 = kv1.deque(v_addr.dtype)
    vb = b2.alloc_tensor(v_addr.dtype)
    _transpose_v(vb, v1, k16 // 16, d // 16, 256)
    b2.enque(vb)
    kv1.free_tensor(v1)
    return b2.deque(v_addr.dtype)


@asc.jit
def _load_v_chunk_32(kv1, b2, v_addr, kk, kv_row, d):
    """kk rows of fp32 V -> L1 (16-column matrices, 8-row fractals) -> L0B transposed."""
    vg = asc.GlobalTensor()
    vg.set_global_buffer(v_addr, (kk - 1) * kv_row + d)
    v1 = kv1.alloc_tensor(v_addr.dtype)
    k8 = (kk + 7) // 8 * 8
    asc.data_copy(v1, vg, asc.Nd2NzParams(nd_num=d // 16, n_value=kk, d_value=16,
                                          src_nd_matrix_stride=16, src_d_value=kv_row,
                                          dst_nz_c0_stride=1, dst_nz_n_stride=2,
                                          dst_nz_matrix_stride=k8 * 16))
    kv1.enque(v1)
    v1 = kv1.deque(v_addr.dtype)
    vb = b2.alloc_tensor(v_addr.dtype)
    _transpose_v(vb, v1, k8 // 8, d // 16, 128)
    b2.enque(vb)
    kv1.free_tensor(v1)
    return b2.deque(v_addr.dtype)


@asc.jit
def pv_block(o_ws, p_ws, p1, pa2, kv1, b2, oc, v_addr, m, m16, n2, kv_row, d, s2b, kc, c0,
             low_precision):
    """O_part = P V for one S2 block, kc keys per mmad accumulated in L0C; fixpipe to the O slot
    (rows d apart)."""
    ot = oc.alloc_tensor(asc.float32)
    for c in range(0, n2, kc):
        kk = min(kc, n2 - c)
        kpad = (kk + c0 - 1) // c0 * c0
        # V first: its L0B buffer is double, so MTE1 loads it during the previous mmad; the P
        # chunk's single L0A buffer waits for that mmad
        if low_precision:
            vb = _load_v_chunk_16(kv1, b2, v_addr + c * kv_row, kk, kv_row, d)
        else:
            vb = _load_v_chunk_32(kv1, b2, v_addr + c * kv_row, kk, kv_row, d)
        pt1 = _load_rows_zz(p1, p_ws[c:], m, kk, s2b, kpad, p_ws.dtype)
        pt2 = pa2.alloc_tensor(p_ws.dtype)
        zz_to_l0a(pt2, pt1, (m16 // 16) * (kpad // c0), c0)
        pa2.enque(pt2)
        p1.free_tensor(pt1)
        pt2 = pa2.deque(p_ws.dtype)
        asc.mmad(ot, pt2, vb, asc.MmadParams(m=m, n=d, k=kk, cmatrix_init_val=c == 0))
        pa2.free_tensor(pt2)
        b2.free_tensor(vb)
    oc.enque(ot)
    ot = oc.deque(asc.float32)
    asc.fixpipe(o_ws, ot, asc.FixpipeParamsV220(n_size=d, m_size=m, src_stride=m16,
                                                dst_stride=d))
    oc.free_tensor(ot)
