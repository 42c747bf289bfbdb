"""MIX kernels for the tests (module-level, so both modes share compiled code): each block is an AI
Core group whose AIC and AIVs run at once, handing data over through GM workspace ordered by
cross-core flags, in the style of Ascend C's MIX samples."""
import ascendc as asc
from kernels.matmul import copy_a_nz, copy_b, load_a_zz, load_b_zn

TILE = 64
FULL, FREE, PEER = 1, 2, 3          # flag ids


@asc.jit(kernel_type="MIX_AIC_1_2")
def numbering_kernel(out: asc.GlobalAddress):
    """Each instance writes what it is into its own 8-int row: AIC rows first (by block), then
    AIV rows (by their block_idx)."""
    og = asc.GlobalTensor()
    og.set_global_buffer(out)
    n = asc.get_block_num()
    row = asc.get_block_idx()
    if asc.ascend_is_aiv():
        row = n + asc.get_block_idx()
    og.set_value(row * 8 + 0, asc.get_block_idx())
    og.set_value(row * 8 + 1, asc.get_block_num())
    og.set_value(row * 8 + 2, asc.get_sub_block_idx())
    og.set_value(row * 8 + 3, asc.get_sub_block_num())
    og.set_value(row * 8 + 4, asc.get_task_ratio())
    aic = 0
    if asc.ascend_is_aic():
        aic = 1
    aiv = 0
    if asc.ascend_is_aiv():
        aiv = 1
    og.set_value(row * 8 + 5, aic)
    og.set_value(row * 8 + 6, aiv)
    og.set_value(row * 8 + 7, 7)


@asc.jit
def _scale_to(dst, src, q_in, q_out, scale, n):
    """dst[:n] = src[:n] * scale through UB."""
    a = q_in.alloc_tensor(src.dtype)
    asc.data_copy(a, src, n)
    q_in.enque(a)
    a = q_in.deque(src.dtype)
    b = q_out.alloc_tensor(dst.dtype)
    asc.muls(b, a, scale, n)
    q_out.enque(b)
    q_in.free_tensor(a)
    b = q_out.deque(dst.dtype)
    asc.data_copy(dst, b, n)
    q_out.free_tensor(b)


@asc.jit(kernel_type="MIX_AIC_1_2")
def peer_sum_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress):
    """Mode 1 between the two AIVs of a group: each writes 2*x of its tile to the workspace,
    both set PEER, and after the wait each adds its sibling's tile: z_v = 2*x_v + 2*x_sibling."""
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        sib = v + 1 - 2 * asc.get_sub_block_idx()
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        wg = asc.GlobalTensor()
        wg.set_global_buffer(ws)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        pipe = asc.TPipe()
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        qs = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(qi, 1, TILE * 4)
        pipe.init_buffer(qo, 1, TILE * 4)
        pipe.init_buffer(qs, 1, TILE * 4)
        _scale_to(wg[v * TILE:], xg[v * TILE:], qi, qo, 2.0, TILE)
        asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
        asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE2)   # the pipe that reads
        a = qi.alloc_tensor(x.dtype)
        asc.data_copy(a, wg[v * TILE:], TILE)
        qi.enque(a)
        s = qs.alloc_tensor(x.dtype)
        asc.data_copy(s, wg[sib * TILE:], TILE)
        qs.enque(s)
        a = qi.deque(x.dtype)
        s = qs.deque(x.dtype)
        b = qo.alloc_tensor(z.dtype)
        asc.add(b, a, s, TILE)
        qo.enque(b)
        qi.free_tensor(a)
        qs.free_tensor(s)
        b = qo.deque(z.dtype)
        asc.data_copy(zg[v * TILE:], b, TILE)
        qo.free_tensor(b)


@asc.jit(kernel_type="MIX_AIC_1_2")
def stuck_kernel(x: asc.GlobalAddress):
    """The AIC waits for a flag its AIVs never set; AIV 0 of each group waits on a mode-1 flag
    its sibling never sets."""
    if asc.ascend_is_aic():
        asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_FIX)
    elif asc.get_sub_block_idx() == 0:
        asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE3)


@asc.jit(kernel_type="MIX_AIC_1_2")
def bad_flag_kernel(x: asc.GlobalAddress, flag: int):
    if asc.ascend_is_aic():
        asc.cross_core_set_flag(flag, 2, asc.PipeID.PIPE_FIX)


@asc.jit(kernel_type="MIX_AIC_1_2")
def overflow_kernel(x: asc.GlobalAddress, sets: int):
    """The AIC sets FULL `sets` times; nobody waits."""
    if asc.ascend_is_aic():
        for i in range(sets):
            asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)


@asc.jit
def ib_chain_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress):
    """A vector-only kernel: block b waits for block b-1's ib_set, then z[b] = z[b-1] + x[b]
    (a prefix sum over blocks, serialised by inter-block flags)."""
    b = asc.get_block_idx()
    n = asc.get_block_num()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws)
    pipe = asc.TPipe()
    qu = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qu, 32)
    ub = qu.get(asc.int32)
    prev = 0.0
    if b > 0:
        asc.ib_wait(wg, ub, b - 1, 0)
        prev = zg.get_value(b - 1)
    zg.set_value(b, prev + xg.get_value(b))
    if b < n - 1:
        asc.ib_set(wg, ub, b, 0)


# ---- a matmul whose epilogue runs on the AIVs: the AIC computes a BM x n tile of A @ B into
# GM workspace, each AIV applies relu(c + bias) to its half of the rows ---------------------------

BM = 32                              # rows of C per tile (16 per AIV)


@asc.jit
def _cube_tile(ag, bg, zg, wg, qa1, qb1, qa2, qb2, qc, m0, mt, n, k):
    """AIC: wg[:mt, :n] = A[m0:m0+mt, :k] @ B[:k, :n] (float32, row-major, n columns)."""
    c0 = 32 // ag.dtype.sizeof()
    m16 = (mt + 15) // 16 * 16
    k_pad = (k + c0 - 1) // c0 * c0
    cl = qc.alloc_tensor(asc.float32)
    a1 = copy_a_nz(qa1, ag, zg, m0 * k, mt, k, k, m16, c0)
    b1 = copy_b(qb1, bg, zg, zg, 0, k, n, n, k_pad, k)
    a2 = load_a_zz(qa2, a1, m16, k, c0)
    qa1.free_tensor(a1)
    b2 = load_b_zn(qb2, b1, 0, n, k_pad, c0)
    asc.mmad(cl, a2, b2, asc.MmadParams(m=mt, n=n, k=k, unit_flag=0, cmatrix_source=False,
                                        cmatrix_init_val=True))
    qb2.free_tensor(b2)
    qa2.free_tensor(a2)
    qb1.free_tensor(b1)
    qc.enque(cl)
    cl = qc.deque(asc.float32)
    asc.fixpipe(wg, cl, asc.FixpipeParamsV220(n, mt, m16, n))
    qc.free_tensor(cl)


@asc.jit
def _epilogue_rows(wg, yg, bias, qi, qo, r0, r1, n):
    """AIV: y[r] = relu(w[r] + bias) for rows r0 <= r < r1 (n columns)."""
    for r in range(r0, r1):
        a = qi.alloc_tensor(asc.float32)
        asc.data_copy(a, wg[r * n:], n)
        qi.enque(a)
        a = qi.deque(asc.float32)
        b = qo.alloc_tensor(asc.float32)
        asc.add(b, a, bias, n)
        asc.relu(b, b, n)
        qo.enque(b)
        qi.free_tensor(a)
        b = qo.deque(asc.float32)
        asc.data_copy(yg[r * n:], b, n)
        qo.free_tensor(b)


@asc.jit
def _cube_queues(pipe, isz, n, k):
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qb1 = asc.TQue(asc.TPosition.B1, 1)
    qa2 = asc.TQue(asc.TPosition.A2, 1)
    qb2 = asc.TQue(asc.TPosition.B2, 1)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    kp = (k + 15) // 16 * 16
    pipe.init_buffer(qa1, 1, BM * kp * isz)
    pipe.init_buffer(qb1, 1, kp * n * isz)
    pipe.init_buffer(qa2, 1, BM * kp * isz)
    pipe.init_buffer(qb2, 1, kp * n * isz)
    pipe.init_buffer(qc, 1, BM * n * 4)
    return qa1, qb1, qa2, qb2, qc


@asc.jit(kernel_type="MIX_AIC_1_2")
def matmul_relu_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, bias: asc.GlobalAddress,
                       y: asc.GlobalAddress, ws: asc.GlobalAddress, zeros: asc.GlobalAddress,
                       m: int, n: int, k: int):
    """y = relu(A @ B + bias): block g's AIC computes rows [g*BM, g*BM+BM) into its workspace tile
    and sets FULL (mode 2); its AIVs wait, run the epilogue on 16 rows each, and set FREE, which
    the AIC waits for before it ends."""
    g = asc.get_block_idx()
    if asc.ascend_is_aiv():
        g = asc.get_block_idx() // 2
    m0 = g * BM
    mt = min(BM, m - m0)
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws[g * BM * n:])
    pipe = asc.TPipe()
    if asc.ascend_is_aic():
        ag = asc.GlobalTensor()
        ag.set_global_buffer(a)
        bg = asc.GlobalTensor()
        bg.set_global_buffer(b)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(zeros)
        qa1, qb1, qa2, qb2, qc = _cube_queues(pipe, a.dtype.sizeof(), n, k)
        _cube_tile(ag, bg, zg, wg, qa1, qb1, qa2, qb2, qc, m0, mt, n, k)
        asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
        asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_FIX)
    else:
        s = asc.get_sub_block_idx()
        yg = asc.GlobalTensor()
        yg.set_global_buffer(y[m0 * n:])
        bg = asc.GlobalTensor()
        bg.set_global_buffer(bias)
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        qb = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(qi, 1, n * 4)
        pipe.init_buffer(qo, 1, n * 4)
        pipe.init_buffer(qb, 1, n * 4)
        bt = qb.alloc_tensor(asc.float32)
        asc.data_copy(bt, bg, n)
        qb.enque(bt)
        bt = qb.deque(asc.float32)
        asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_MTE2)
        half = BM // 2
        _epilogue_rows(wg, yg, bt, qi, qo, s * half, min((s + 1) * half, mt), n)
        asc.cross_core_set_flag(FREE, 2, asc.PipeID.PIPE_MTE3)
        qb.free_tensor(bt)


@asc.jit(kernel_type="MIX_AIC_1_2")
def matmul_ring_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, bias: asc.GlobalAddress,
                       y: asc.GlobalAddress, ws: asc.GlobalAddress, zeros: asc.GlobalAddress,
                       m: int, n: int, k: int):
    """The same result through a producer/consumer ring: block g owns tiles g, g + G, ...; its
    AIC produces each into workspace slot i % 2 once FREE says the slot is empty and sets FULL;
    its AIVs consume slot i % 2 after FULL and set FREE (two credits up front: double
    buffering, so the AIC computes tile i + 1 while the AIVs run the epilogue of tile i)."""
    g = asc.get_block_idx()
    if asc.ascend_is_aiv():
        g = asc.get_block_idx() // 2
    groups = asc.get_block_num()
    tiles = (m + BM - 1) // BM
    pipe = asc.TPipe()
    if asc.ascend_is_aic():
        ag = asc.GlobalTensor()
        ag.set_global_buffer(a)
        bg = asc.GlobalTensor()
        bg.set_global_buffer(b)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(zeros)
        qa1, qb1, qa2, qb2, qc = _cube_queues(pipe, a.dtype.sizeof(), n, k)
        i = 0
        for t in range(g, tiles, groups):
            wg = asc.GlobalTensor()
            wg.set_global_buffer(ws[(2 * g + i % 2) * BM * n:])
            asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_FIX)
            _cube_tile(ag, bg, zg, wg, qa1, qb1, qa2, qb2, qc, t * BM, min(BM, m - t * BM), n, k)
            asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
            i += 1
        # take back the two credits the AIVs gave up front: no set is left unwaited at the end
        asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_FIX)
        asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_FIX)
    else:
        s = asc.get_sub_block_idx()
        bg = asc.GlobalTensor()
        bg.set_global_buffer(bias)
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        qb = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(qi, 1, n * 4)
        pipe.init_buffer(qo, 1, n * 4)
        pipe.init_buffer(qb, 1, n * 4)
        bt = qb.alloc_tensor(asc.float32)
        asc.data_copy(bt, bg, n)
        qb.enque(bt)
        bt = qb.deque(asc.float32)
        asc.cross_core_set_flag(FREE, 2, asc.PipeID.PIPE_MTE3)
        asc.cross_core_set_flag(FREE, 2, asc.PipeID.PIPE_MTE3)
        half = BM // 2
        i = 0
        for t in range(g, tiles, groups):
            wg = asc.GlobalTensor()
            wg.set_global_buffer(ws[(2 * g + i % 2) * BM * n:])
            yg = asc.GlobalTensor()
            yg.set_global_buffer(y[t * BM * n:])
            mt = min(BM, m - t * BM)
            asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_MTE2)
            _epilogue_rows(wg, yg, bt, qi, qo, s * half, min((s + 1) * half, mt), n)
            asc.cross_core_set_flag(FREE, 2, asc.PipeID.PIPE_MTE3)
            i += 1
        qb.free_tensor(bt)


@asc.jit(kernel_type="MIX_AIC_1_2")
def phases_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, mode0: int):
    """Every AIV writes x[v] + 1 to z[v]; after a barrier over all AIVs of the launch (sync_all,
    or cross-core flag mode 0 when mode0) each adds its right neighbour's value (written by
    another group): z2[v] = (x[v] + 1) + (x[v+1 mod N] + 1), stored at z[N + v]."""
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        n = 2 * asc.get_block_num()
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        zg.set_value(v, xg.get_value(v) + 1.0)
        if mode0 == 1:
            asc.cross_core_set_flag(4, 0, asc.PipeID.PIPE_MTE3)
            asc.cross_core_wait_flag(4, 0, asc.PipeID.PIPE_S)       # the scalar unit reads
        else:
            asc.sync_all()
        zg.set_value(n + v, zg.get_value(v) + zg.get_value((v + 1) % n))


@asc.jit(kernel_type="MIX_AIC_1_2")
def spin_kernel(x: asc.GlobalAddress):
    """The AIC waits for a flag; its AIVs spin forever (the launch can only be stopped)."""
    if asc.ascend_is_aic():
        asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_FIX)
    else:
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        i = 0
        while xg.get_value(0) == 0.0:
            i += 1


@asc.jit(kernel_type="MIX_AIC_1_1")
def handoff_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress):
    """The smallest AIC -> AIV hand-off: the AIC writes x[g] + 1 to z[g] and sets FULL (mode 2,
    on FIXPIPE); its AIV waits for it on the scalar unit and writes 2 * z[g] to z[n + g]."""
    g = asc.get_block_idx()
    n = asc.get_block_num()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    if asc.ascend_is_aic():
        zg.set_value(g, xg.get_value(g) + 1.0)
        asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
    else:
        asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_S)
        zg.set_value(n + g, zg.get_value(g) * 2.0)


@asc.jit
def fused_matmul_relu_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress,
                             bias: asc.GlobalAddress, y: asc.GlobalAddress,
                             ws: asc.GlobalAddress, zeros: asc.GlobalAddress, m: int, n: int,
                             k: int):
    """Not a MIX kernel: y = relu(A @ B + bias) with each block (an AI Core: its cube and vector
    units, kernel type AICORE) computing its BM-row tile into workspace and running the epilogue
    on it itself, one instruction stream per block."""
    g = asc.get_block_idx()
    m0 = g * BM
    mt = min(BM, m - m0)
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws[g * BM * n:])
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(zeros)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y[m0 * n:])
    sg = asc.GlobalTensor()
    sg.set_global_buffer(bias)
    pipe = asc.TPipe()
    qa1, qb1, qa2, qb2, qc = _cube_queues(pipe, a.dtype.sizeof(), n, k)
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECOUT, 1)
    qb = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(qi, 1, n * 4)
    pipe.init_buffer(qo, 1, n * 4)
    pipe.init_buffer(qb, 1, n * 4)
    bt = qb.alloc_tensor(asc.float32)
    asc.data_copy(bt, sg, n)
    qb.enque(bt)
    bt = qb.deque(asc.float32)
    _cube_tile(ag, bg, zg, wg, qa1, qb1, qa2, qb2, qc, m0, mt, n, k)
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)
    _epilogue_rows(wg, yg, bt, qi, qo, 0, mt, n)
    qb.free_tensor(bt)


@asc.jit(kernel_type="MIX_AIC_1_1")
def handoff_maybe_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, wait: int):
    """handoff_kernel whose AIV waits for FULL only when `wait`: without it, its read of z[g]
    is not ordered after the AIC's write (unordered GM workspace)."""
    g = asc.get_block_idx()
    n = asc.get_block_num()
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    if asc.ascend_is_aic():
        zg.set_value(g, xg.get_value(g) + 1.0)
        asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
    else:
        if wait == 1:
            asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_S)
        zg.set_value(n + g, zg.get_value(g) * 2.0)


@asc.jit(kernel_type="MIX_AIC_1_2")
def peer_nowait_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress):
    """peer_sum_kernel's AIVs without the mode-1 wait: each sets PEER after writing its tile but
    reads its sibling's tile at once (unordered GM workspace, through data_copy)."""
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        sib = v + 1 - 2 * asc.get_sub_block_idx()
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        wg = asc.GlobalTensor()
        wg.set_global_buffer(ws)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        pipe = asc.TPipe()
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(qi, 1, TILE * 4)
        pipe.init_buffer(qo, 1, TILE * 4)
        _scale_to(wg[v * TILE:], xg[v * TILE:], qi, qo, 2.0, TILE)
        asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
        _scale_to(zg[v * TILE:], wg[sib * TILE:], qi, qo, 1.0, TILE)


@asc.jit(kernel_type="MIX_AIC_1_2")
def aic_ub_kernel(x: asc.GlobalAddress, buf: int):
    """Allocates a VECIN queue (buf 0), a VECCALC TBuf (1) or a LocalTensorAuto (2) outside any
    core branch, so its AIC allocates Unified Buffer too: the cube core has none."""
    if buf == 2:
        t = asc.LocalTensorAuto(x.dtype, 64)
        asc.duplicate(t, 1.0, 64)
        return
    pipe = asc.TPipe()
    if buf == 1:
        tb = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(tb, 256)
    else:
        q = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(q, 2, 256)


ROWS, HALF = 4, 8                   # shared_rows_kernel: rows of z, columns each AIV writes


@asc.jit(kernel_type="MIX_AIC_1_2")
def shared_rows_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, how: int):
    """The two AIVs of group g write ROWS rows of z (2 * HALF columns, at row 4g) from x,
    through one strided data_copy each. how 0: sub-block s writes columns [s*HALF, (s+1)*HALF)
    of every row (interleaved, no byte in common); 1: both write whole rows with no flag
    between them (a race: the later write wins); 2: both write whole rows, sub-block 1 after a
    mode-1 flag round that follows sub-block 0's write."""
    if asc.ascend_is_aiv():
        s = asc.get_sub_block_idx()
        base = asc.get_block_idx() // 2 * ROWS * 2 * HALF
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(q, 1, ROWS * 2 * HALF * 4)
        t = q.alloc_tensor(x.dtype)
        asc.data_copy(t, xg[s * ROWS * 2 * HALF:], ROWS * 2 * HALF)
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)    # a VECOUT deque orders V, not MTE2
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        q.enque(t)
        t = q.deque(x.dtype)
        if how == 0:
            asc.data_copy(zg[base + s * HALF:], t, asc.DataCopyParams(ROWS, HALF * 4 // 32, 0,
                                                                      HALF * 4 // 32))
        else:
            if how == 2 and s == 1:
                asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
                asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
            asc.data_copy(zg[base:], t, ROWS * 2 * HALF)
            if how == 2 and s == 0:
                asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
                asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
        q.free_tensor(t)


@asc.jit
def ib_word_kernel(ws: asc.GlobalAddress, ws2: asc.GlobalAddress, z: asc.GlobalAddress,
                   which: int):
    """Block 0 writes z[0] and ib_sets (block_idx 0, event_id 0) in `ws`; block 1 then ib_waits
    for (0, 0) in `ws` (which 0) or in `ws2` (which 1: another workspace, so another word), or
    does nothing (which 2), and copies z[0] to z[1]."""
    wg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qu = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qu, 32)
    ub = qu.get(asc.int32)
    if asc.get_block_idx() == 0:
        wg.set_global_buffer(ws)
        zg.set_value(0, 5.0)
        asc.ib_set(wg, ub, 0, 0)
    elif which != 2:
        if which == 0:
            wg.set_global_buffer(ws)
        else:
            wg.set_global_buffer(ws2)
        asc.ib_wait(wg, ub, 0, 0)
        zg.set_value(1, zg.get_value(0))
