"""The kernel-language implementation of `asc.adv.Matmul` (both modes run this code; compiled
kernels call it through ascendc/adv/lowering.py). See matmul.py for what iterate_all does.

`Matmul.iterate()` + `get_tensor_c()` (mm_iterate, mm_get_tensor_c): one C tile at a time.
Mirrors Ascend C `while (mm.Iterate()) { mm.GetTensorC(local); ... }` and pyasc's
`with mm.iterate() as count:` / `while mm.iterate():` (the `with` form is a loop in pyasc: its
body runs once per tile, `count` = 0, 1, ...; ascendc/lang/kernel.py turns it into a `while`).
Tiles are visited in iterate_all's order (tiling.iterate_order 0: along M first, pyasc's
MatrixTraverse.FIRSTM), so `count % (single_core_m // base_m)` is the tile's row.
get_tensor_c(local) for C in TPosition.VECCALC / VECIN: on a separated SoC (910B) L0C has no path
to UB, so CANN's Matmul stages C in the GM workspace given to register_matmul; so does this one:
fixpipe L0C -> workspace (this block's base_m x base_n slot, rows base_n apart: the
en_sequential_write layout) -> data_copy -> the local tensor, with the pipe barriers the library
inserts between them. The workspace is viewed with C's dtype (float32, float16/bfloat16 - the
fixpipe rounds - or int32 for int8 operands). With C in TPosition.GM, get_tensor_c(gm) is
Ascend C's GetTensorC(gm): fixpipe L0C -> C in GM directly (mm_get_tensor_c_gm), no workspace.
int8 operands: L0C is the float32 CO1 buffer reinterpreted as int32 (mmad int8 -> int32,
fixpipe int32 -> int32).
"""
from __future__ import annotations

from .. import language as asc
from .checks import S_BIAS, S_ITER, S_OKA, S_OKB, S_OM, S_ON, S_SK, S_SM, S_SN, S_TA, S_TB, \
    S_TK, S_TM, S_TN


@asc.jit
def mm_register(pipe, tiling, a_isz, has_bias):
    """The Matmul's local buffers, from the kernel's TPipe: (A1, B1, A2, B2, CO1, bias L1, BT)."""
    bm = tiling.base_m
    bn = tiling.base_n
    bk = tiling.base_k
    na1 = max(1, tiling.depth_a1 // (tiling.step_m * tiling.step_k_a))
    nb1 = max(1, tiling.depth_b1 // (tiling.step_n * tiling.step_k_b))
    kl1 = min(tiling.step_k_a, tiling.step_k_b) * bk
    qa1 = asc.TQue(asc.TPosition.A1, na1)
    qb1 = asc.TQue(asc.TPosition.B1, nb1)
    qa2 = asc.TQue(asc.TPosition.A2, tiling.db_l0a)
    qb2 = asc.TQue(asc.TPosition.B2, tiling.db_l0b)
    qc = asc.TQue(asc.TPosition.CO1, tiling.db_l0c)
    qbias = asc.TQue(asc.TPosition.A1, 1)
    bt = asc.TBuf(asc.TPosition.C2)
    pipe.init_buffer(qa1, na1, bm * kl1 * a_isz)
    pipe.init_buffer(qb1, nb1, bn * kl1 * a_isz)
    pipe.init_buffer(qa2, tiling.db_l0a, bm * bk * a_isz)
    pipe.init_buffer(qb2, tiling.db_l0b, bk * bn * a_isz)
    pipe.init_buffer(qc, tiling.db_l0c, bm * bn * 4)
    if has_bias:
        pipe.init_buffer(qbias, 1, bn * 4)
        pipe.init_buffer(bt, bn * 4)
    return (qa1, qb1, qa2, qb2, qc, qbias, bt)


@asc.jit
def nd2nz_strips(t, g, off, rows, cols, ld, k_pad):
    """GM rows x cols (at g[off:], rows ld apart) -> L1 as 16-column strips, each a row-major
    k_pad x 16 block (C0 x 16 fractals, what a transposing load_data turns into 16 x C0)."""
    c0 = 32 // g.dtype.sizeof()
    full = cols // 16
    if c0 == 32:
        nd2nz_strips_int8(t, g, off, rows, cols, ld, k_pad)
    elif full > 0:
        asc.data_copy(t, g[off:], asc.Nd2NzParams(full, rows, 16, 16, ld, 1, 16 // c0,
                                                  k_pad * 16))
    if cols % 16 != 0 and c0 != 32:
        asc.data_copy(t[full * k_pad * 16:], g[off + full * 16:],
                      asc.Nd2NzParams(1, rows, cols % 16, 0, ld, 1, 16 // c0, 0))


@asc.jit
def nd2nz_strips_int8(t, g, off, rows, cols, ld, k_pad):
    """nd2nz_strips for int8: a 16-byte row is half a C0 (32 B) block, which one Nd2Nz cannot
    pack, so each strip is two interleaved Nd2Nz matrices (even rows at 0, odd rows at byte 16
    of each 32-byte block: dst_nz_matrix_stride 16, src_nd_matrix_stride one row, rows two
    apart), plus the last row by itself when the row count is odd."""
    half = rows // 2
    for j in range((cols + 15) // 16):
        w = min(16, cols - j * 16)
        if half > 0:
            asc.data_copy(t[j * k_pad * 16:], g[off + j * 16:],
                          asc.Nd2NzParams(2, half, w, ld, 2 * ld, 1, 1, 16))
        if rows % 2 == 1:
            asc.data_copy(t[j * k_pad * 16 + (rows - 1) * 16:],
                          g[off + j * 16 + (rows - 1) * ld:],
                          asc.Nd2NzParams(1, 1, w, 0, ld, 1, 1, 0))


@asc.jit
def _fixpipe_c(dst, cl, n, m, m16, stride, int8):
    """L0C (float32, or int32 for int8 operands: the same buffer reinterpreted) -> dst."""
    if int8:
        asc.fixpipe(dst, cl.reinterpret_cast(asc.int32), asc.FixpipeParamsV220(n, m, m16, stride))
    else:
        asc.fixpipe(dst, cl, asc.FixpipeParamsV220(n, m, m16, stride))


@asc.jit
def _copy_a(q, ag, m0, k0, mt, kt, lda, m16, k_pad, ta, nz):
    """A's mt x kt tile at (m0, k0) -> L1 as NZ. A CubeFormat.NZ A is in GM as ceil(K/C0)
    strips of lda = ceil16(M) rows of C0 elements (one 32-byte block a row): one strided copy
    takes rows m0..m0+mt of each strip."""
    t = q.alloc_tensor(ag.dtype)
    c0 = 32 // ag.dtype.sizeof()
    if ta:
        nd2nz_strips(t, ag, k0 * lda + m0, kt, mt, lda, k_pad)
    elif nz:
        asc.data_copy(t, ag[(k0 // c0 * lda + m0) * c0:],
                      asc.DataCopyParams((kt + c0 - 1) // c0, mt, lda - mt, m16 - mt))
    else:
        asc.data_copy(t, ag[m0 * lda + k0:], asc.Nd2NzParams(1, mt, kt, 0, lda, m16, 1, 0))
    q.enque(t)
    return q.deque(ag.dtype)


@asc.jit
def _copy_b(q, bg, n0, k0, nt, kt, ldb, n16, k_pad, tb, nz):
    """B's kt x nt tile at (k0, n0) -> L1 as 16-column strips (row-major k_pad x 16). A
    CubeFormat.NZ B is in GM as ceil(N/C0) strips of ldb = ceil16(K) rows of C0 elements: a
    16-bit strip is an L1 strip's rows (one strided copy for all); a float32 strip is half of
    one (a copy per strip, rows two blocks apart in L1)."""
    t = q.alloc_tensor(bg.dtype)
    c0 = 32 // bg.dtype.sizeof()
    if tb:
        asc.data_copy(t, bg[n0 * ldb + k0:], asc.Nd2NzParams(1, nt, kt, 0, ldb, n16, 1, 0))
    elif nz and c0 == 16:
        asc.data_copy(t, bg[(n0 // 16 * ldb + k0) * 16:],
                      asc.DataCopyParams((nt + 15) // 16, kt, ldb - kt, k_pad - kt))
    elif nz:
        for g in range((nt + c0 - 1) // c0):
            asc.data_copy(t[g // 2 * k_pad * 16 + g % 2 * c0:],
                          bg[((n0 // c0 + g) * ldb + k0) * c0:],
                          asc.DataCopyParams(kt, 1, 0, 1))
    else:
        nd2nz_strips(t, bg, k0 * ldb + n0, kt, nt, ldb, k_pad)
    q.enque(t)
    return q.deque(bg.dtype)


@asc.jit
def _load_a(q, a1, kofs, ks, m16, k_pad, ta):
    """L1 -> L0A (ZZ) for the K slice [kofs, kofs+ks) of the chunk: one load per 16-row block."""
    t = q.alloc_tensor(a1.dtype)
    c0 = 32 // a1.dtype.sizeof()
    kb = (ks + c0 - 1) // c0
    for r in range(m16 // 16):
        if ta:
            asc.load_data(t[r * kb * 16 * c0:], a1[r * k_pad * 16 + kofs * 16:],
                          asc.LoadData2DParams(0, kb, 1, 0, 0, True, 0))
        else:
            asc.load_data(t[r * kb * 16 * c0:], a1[kofs * m16 + r * 16 * c0:],
                          asc.LoadData2DParams(0, kb, m16 // 16, 0, 0, False, 0))
    q.enque(t)
    return q.deque(a1.dtype)


@asc.jit
def _load_b(q, b1, kofs, ks, n16, k_pad, tb):
    """L1 -> L0B (ZN) for the K slice [kofs, kofs+ks) of the chunk."""
    t = q.alloc_tensor(b1.dtype)
    c0 = 32 // b1.dtype.sizeof()
    kb = (ks + c0 - 1) // c0
    nb = n16 // 16
    if tb:
        for j in range(kb):
            asc.load_data(t[j * nb * 16 * c0:], b1[(kofs + j * c0) * n16:],
                          asc.LoadData2DParams(0, nb, 1, 0, 0, False, 0))
    else:
        for j in range(nb):
            asc.load_data(t[j * 16 * c0:], b1[j * k_pad * 16 + kofs * 16:],
                          asc.LoadData2DParams(0, kb, 1, 0, nb - 1, True, 0))
    q.enque(t)
    return q.deque(b1.dtype)


@asc.jit
def _load_bias(q, bt, biasg, n0, nt):
    """bias[n0:n0+nt] (fp32) -> L1 -> BT (the bias table mmad reads)."""
    b1 = q.alloc_tensor(biasg.dtype)
    asc.data_copy(b1, biasg[n0:], asc.Nd2NzParams(1, 1, nt, 0, nt, 1, 1, 0))
    q.enque(b1)
    b1 = q.deque(biasg.dtype)
    t = bt.get(biasg.dtype)
    # BT is no queue's: the copy (MTE1) waits for the previous tile's mmad (M) reading it
    asc.set_flag(asc.HardEvent.M_MTE1, 0)
    asc.wait_flag(asc.HardEvent.M_MTE1, 0)
    asc.data_copy(t, b1, (nt + 7) // 8 * 8)
    q.free_tensor(b1)
    return t


@asc.jit
def mm_dims(tiling, st):
    """(m, n, k, org_n, lda, ldb, tiles_m, tiles_n) of this core's C from the state and tiling
    (lda / ldb of a CubeFormat.NZ operand: the rows of its strips, org M / K rounded up to 16)."""
    sm = tiling.single_core_m if st[S_SM] < 0 else st[S_SM]
    sn = tiling.single_core_n if st[S_SN] < 0 else st[S_SN]
    sk = tiling.single_core_k if st[S_SK] < 0 else st[S_SK]
    m = sm if st[S_TM] < 0 else st[S_TM]
    n = sn if st[S_TN] < 0 else st[S_TN]
    k = sk if st[S_TK] < 0 else st[S_TK]
    org_m = tiling.m if st[S_OM] < 0 else st[S_OM]
    org_n = tiling.n if st[S_ON] < 0 else st[S_ON]
    org_ka = tiling.k_a if st[S_OKA] < 0 else st[S_OKA]
    org_kb = tiling.k_b if st[S_OKB] < 0 else st[S_OKB]
    lda = org_m if st[S_TA] == 1 else (org_m + 15) // 16 * 16 if st[S_TA] == 2 else org_ka
    ldb = org_kb if st[S_TB] == 1 else (org_kb + 15) // 16 * 16 if st[S_TB] == 2 else org_n
    tiles_m = (m + tiling.base_m - 1) // tiling.base_m
    tiles_n = (n + tiling.base_n - 1) // tiling.base_n
    return (m, n, k, org_n, lda, ldb, tiles_m, tiles_n)


@asc.jit
def mm_tile_pos(tiling, st, t):
    """(m0, n0, mt, nt, m16) of output tile number `t` (tiling.iterate_order 0: along M first)."""
    dims = mm_dims(tiling, st)
    tiles_m = dims[6]
    tiles_n = dims[7]
    mi = t % tiles_m
    ni = t // tiles_m
    if tiling.iterate_order == 1:
        ni = t % tiles_n
        mi = t // tiles_n
    m0 = mi * tiling.base_m
    n0 = ni * tiling.base_n
    mt = min(tiling.base_m, dims[0] - m0)
    nt = min(tiling.base_n, dims[1] - n0)
    return (m0, n0, mt, nt, (mt + 15) // 16 * 16)


@asc.jit
def mm_tile(qs, tiling, st, ag, bg, biasg, t):
    """C tile number `t` (+ bias) into an L0C tensor of the CO1 queue, enqueued."""
    qa1 = qs[0]
    qb1 = qs[1]
    qa2 = qs[2]
    qb2 = qs[3]
    qc = qs[4]
    dims = mm_dims(tiling, st)
    k = dims[2]
    lda = dims[4]
    ldb = dims[5]
    pos = mm_tile_pos(tiling, st, t)
    m0 = pos[0]
    n0 = pos[1]
    mt = pos[2]
    nt = pos[3]
    m16 = pos[4]
    ta = st[S_TA] == 1
    tb = st[S_TB] == 1
    use_bias = st[S_BIAS] == 1
    bk = tiling.base_k
    kl1 = min(tiling.step_k_a, tiling.step_k_b) * bk
    c0 = 32 // ag.dtype.sizeof()
    n16 = (nt + 15) // 16 * 16
    cl = qc.alloc_tensor(asc.float32)
    ci = cl.reinterpret_cast(asc.int32)     # int8 operands accumulate in int32
    int8 = c0 == 32
    if use_bias:
        bias_bt = _load_bias(qs[5], qs[6], biasg, n0, nt)
    for kc in range((k + kl1 - 1) // kl1):
        k0 = kc * kl1
        kt = min(kl1, k - k0)
        k_pad = (kt + c0 - 1) // c0 * c0
        a1 = _copy_a(qa1, ag, m0, k0, mt, kt, lda, m16, k_pad, ta, st[S_TA] == 2)
        b1 = _copy_b(qb1, bg, n0, k0, nt, kt, ldb, n16, k_pad, tb, st[S_TB] == 2)
        for kk in range((kt + bk - 1) // bk):
            ks = min(bk, kt - kk * bk)
            a2 = _load_a(qa2, a1, kk * bk, ks, m16, k_pad, ta)
            b2 = _load_b(qb2, b1, kk * bk, ks, n16, k_pad, tb)
            first = kc == 0 and kk == 0
            if first and use_bias:
                pb = asc.MmadParams(m=mt, n=nt, k=ks, unit_flag=0, cmatrix_source=True,
                                    cmatrix_init_val=False)
                if int8:
                    asc.mmad(ci, a2, b2, bias_bt, pb)
                else:
                    asc.mmad(cl, a2, b2, bias_bt, pb)
            else:
                pm = asc.MmadParams(m=mt, n=nt, k=ks, unit_flag=0, cmatrix_source=False,
                                    cmatrix_init_val=first)
                if int8:
                    asc.mmad(ci, a2, b2, pm)
                else:
                    asc.mmad(cl, a2, b2, pm)
            qa2.free_tensor(a2)
            qb2.free_tensor(b2)
        qa1.free_tensor(a1)
        qb1.free_tensor(b1)
    qc.enque(cl)


@asc.jit
def mm_iterate_all(qs, tiling, st, ag, bg, biasg, cg):
    qc = qs[4]
    dims = mm_dims(tiling, st)
    for t in range(dims[6] * dims[7]):
        mm_tile(qs, tiling, st, ag, bg, biasg, t)
        pos = mm_tile_pos(tiling, st, t)
        cl = qc.deque(asc.float32)
        _fixpipe_c(cg[pos[0] * dims[3] + pos[1]:], cl, pos[3], pos[2], pos[4], dims[3],
                   ag.dtype.sizeof() == 1)
        qc.free_tensor(cl)


@asc.jit
def mm_iterate_batch(qs, tiling, st, ag, bg, biasg, cg, plan):
    """Matmul::IterateBatch (NORMAL layout, C in GM): iterate_all once per batch; `plan` is
    checks.mm_batch_plan's (batch, batches per A, batches per B, A/B/C strides). A broadcast
    operand's matrix i // (batch / batch_x) serves batch i (pyasc's test_matmul_iterate_batch
    reference)."""
    for i in range(plan[0]):
        mm_iterate_all(qs, tiling, st, ag[(i // plan[1]) * plan[3]:],
                       bg[(i // plan[2]) * plan[4]:], biasg, cg[i * plan[5]:])


@asc.jit
def mm_iterate(qs, tiling, st, ag, bg, biasg):
    """Matmul::Iterate(): the next C tile into L0C (True), or False after the last tile (and the
    count starts over, so the Matmul can iterate again)."""
    dims = mm_dims(tiling, st)
    it = S_ITER         # (a subscript store takes a local index in compiled helpers)
    t = st[it] + 1
    more = t < dims[6] * dims[7]
    if more:
        st[it] = t
        mm_tile(qs, tiling, st, ag, bg, biasg, t)
    else:
        st[it] = -1
    return more


@asc.jit
def mm_get_tensor_c(qs, tiling, st, ws, dst, a_isz):
    """Matmul::GetTensorC(local): the current tile, base_m x base_n row-major, into `dst`
    (staged in this block's slot of the workspace `ws`, viewed with dst's dtype)."""
    qc = qs[4]
    bn = tiling.base_n
    it = S_ITER
    pos = mm_tile_pos(tiling, st, st[it])
    cl = qc.deque(asc.float32)
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws + asc.get_block_idx() * tiling.base_m * bn)
    _fixpipe_c(wg, cl, pos[3], pos[2], pos[4], bn, a_isz == 1)
    qc.free_tensor(cl)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    asc.data_copy(dst, wg, tiling.base_m * bn)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)


@asc.jit
def mm_get_tensor_c_gm(qs, tiling, st, cg, a_isz, seq):
    """Matmul::GetTensorC(gm, 0, enSequentialWrite): the current tile straight from L0C into C
    in GM, at its place in C (rows org_n apart), or with en_sequential_write at the start of
    `cg` as a base_m x base_n block (rows base_n apart)."""
    qc = qs[4]
    dims = mm_dims(tiling, st)
    it = S_ITER
    pos = mm_tile_pos(tiling, st, st[it])
    cl = qc.deque(asc.float32)
    if seq:
        _fixpipe_c(cg, cl, pos[3], pos[2], pos[4], tiling.base_n, a_isz == 1)
    else:
        _fixpipe_c(cg[pos[0] * dims[3] + pos[1]:], cl, pos[3], pos[2], pos[4], dims[3],
                   a_isz == 1)
    qc.free_tensor(cl)


fixpipe_c = _fixpipe_c      # the Matmul server's half of get_tensor_c (kfc.py)
