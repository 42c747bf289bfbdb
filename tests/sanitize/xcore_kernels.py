"""MIX kernels for racecheck across cores: an AIC and its AIVs (or the AIVs of several groups)
hand data over through GM ordered by cross-core flags or sync_all; each takes a `bad` argument:
0 is the correct kernel, the others leave out (or misplace) one step of the ordering."""
import ascendc as asc

TILE = 64               # floats per AIV
F32 = asc.float32
FULL, FREE, PEER = 1, 2, 3      # cross-core flag ids


@asc.jit
def _add_to(dst, src, q_in, q_out, value, n):
    """dst[:n] = src[:n] + value through UB (MTE2 read, vector add, MTE3 write)."""
    a = q_in.alloc_tensor(F32)
    asc.data_copy(a, src, n)
    q_in.enque(a)
    a = q_in.deque(F32)
    b = q_out.alloc_tensor(F32)
    asc.adds(b, a, value, n)
    q_out.enque(b)
    q_in.free_tensor(a)
    b = q_out.deque(F32)
    asc.data_copy(dst, b, n)
    q_out.free_tensor(b)


@asc.jit(kernel_type="MIX_AIC_1_2")
def handoff_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress,
                   bad: int):
    """Two rounds r = 0, 1: group g's AIC stores x[i] * (2 + r) into its workspace tile (scalar
    stores) and sets FULL (mode 2); each AIV waits for FULL on MTE2, copies its half of the tile
    in, adds 1 and writes it to z (round r's half), then sets FREE, which the AIC waits for
    before the next round's stores. bad=1: the AIVs do not wait for FULL (their reads race with
    the stores); bad=2: they wait on the vector pipe, which does not hold their MTE2 copy;
    bad=3: the AIC does not wait for FREE (its second stores race with the first reads)."""
    g = asc.get_block_idx()
    if asc.ascend_is_aiv():
        g = asc.get_block_idx() // 2
    wg = asc.GlobalTensor()
    wg.set_global_buffer(ws[g * 2 * TILE:], 2 * TILE)
    if asc.ascend_is_aic():
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x[g * 2 * TILE:], 2 * TILE)
        for r in range(2):
            if r == 1 and bad != 3:
                asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_S)
            for i in range(2 * TILE):
                wg.set_value(i, xg.get_value(i) * (2.0 + r))
            asc.cross_core_set_flag(FULL, 2, asc.PipeID.PIPE_FIX)
        if bad != 3:
            asc.cross_core_wait_flag(FREE, 2, asc.PipeID.PIPE_S)
    else:
        s = asc.get_sub_block_idx()
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z)
        pipe = asc.TPipe()
        qi = asc.TQue(asc.TPosition.VECIN, 1)
        qo = asc.TQue(asc.TPosition.VECOUT, 1)
        pipe.init_buffer(qi, 1, TILE * 4)
        pipe.init_buffer(qo, 1, TILE * 4)
        groups = asc.get_block_num()
        for r in range(2):
            if bad == 2:
                asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_V)
            elif bad != 1:
                asc.cross_core_wait_flag(FULL, 2, asc.PipeID.PIPE_MTE2)
            _add_to(zg[(r * groups * 2 + 2 * g + s) * TILE:], wg[s * TILE:], qi, qo, 1.0, TILE)
            asc.cross_core_set_flag(FREE, 2, asc.PipeID.PIPE_MTE3)


@asc.jit(kernel_type="MIX_AIC_1_2")
def neighbour_kernel(x: asc.GlobalAddress, ws: asc.GlobalAddress, z: asc.GlobalAddress,
                     bad: int):
    """Each AIV v writes x[v] + 1 (its tile) to the workspace, then, ordered by a barrier,
    reads the tile of another AIV and writes it + 1 to z[v]. bad=0: its sibling's tile after a
    mode-1 flag waited for on MTE2; bad=1: the same, waited for on MTE3 (which does not hold the
    MTE2 read); bad=2: the next AIV's tile (another group for odd v) after sync_all; bad=3: the
    next AIV's tile with no barrier; bad=4: as bad=0, but both AIVs of a group write their
    result over the group's first tile of z (a multi-core GM stomp between the instances)."""
    if asc.ascend_is_aiv():
        v = asc.get_block_idx()
        n = 2 * asc.get_block_num()
        other = v + 1 - 2 * asc.get_sub_block_idx()
        if bad == 2 or bad == 3:
            other = (v + 1) % n
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
        _add_to(wg[v * TILE:], xg[v * TILE:], qi, qo, 1.0, TILE)
        out = v
        if bad == 4:
            out = v - asc.get_sub_block_idx()
        if bad == 0 or bad == 4:
            asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
            asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE2)
        elif bad == 1:
            asc.cross_core_set_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
            asc.cross_core_wait_flag(PEER, 1, asc.PipeID.PIPE_MTE3)
        elif bad == 2:
            asc.sync_all()
        _add_to(zg[out * TILE:], wg[other * TILE:], qi, qo, 1.0, TILE)


@asc.jit
def _copy_to(dst, src, q_in, q_out, n):
    """dst[:n] = src[:n] through UB (MTE2 read, vector muls by 1, MTE3 write)."""
    a = q_in.alloc_tensor(src.dtype)
    asc.data_copy(a, src, n)
    q_in.enque(a)
    a = q_in.deque(src.dtype)
    b = q_out.alloc_tensor(dst.dtype)
    asc.muls(b, a, 1.0, n)
    q_out.enque(b)
    q_in.free_tensor(a)
    b = q_out.deque(dst.dtype)
    asc.data_copy(dst, b, n)
    q_out.free_tensor(b)


@asc.jit(kernel_type="MIX_AIC_1_2")
def served_kernel(x: asc.GlobalAddress, a: asc.GlobalAddress, b: asc.GlobalAddress,
                  c: asc.GlobalAddress, bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling,
                  workspace: asc.GlobalAddress, bad: int):
    """A served Matmul (the AIC serves its AIVs' calls, ascendc/adv/kfc.py): each AIV copies its
    rows of A from x (MTE3 writes them), then asks for C = A @ B + bias tile by tile (iterate,
    get_tensor_c into UB through the workspace) and copies each tile to C. The messages order
    the AIC's fixpipe into an AIV's workspace slot before that AIV's copy out of it, and the
    copy before the next tile's fixpipe. bad=0: a PIPE_ALL barrier before the first Matmul
    call, so its message carries the rows of A written; bad=1: none (the AIC's copy of A races
    with the AIV's write)."""
    blk = asc.get_block_idx()
    rows = (tiling.m + tiling.single_core_m - 1) // tiling.single_core_m
    mi = blk % rows
    ni = blk // rows
    xg = asc.GlobalTensor()
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    xg.set_global_buffer(x + mi * tiling.k_a * tiling.single_core_m)
    ag.set_global_buffer(a + mi * tiling.k_a * tiling.single_core_m)
    bg.set_global_buffer(b + ni * tiling.single_core_n)
    cg.set_global_buffer(c + mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n)
    biasg.set_global_buffer(bias + ni * tiling.single_core_n)
    pipe = asc.TPipe()
    in_q = asc.TQue(asc.TPosition.VECIN, 1)
    a_q = asc.TQue(asc.TPosition.VECOUT, 1)
    out_q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=in_q, num=1, len=tiling.single_core_m * tiling.k_a * 2)
    pipe.init_buffer(que=a_q, num=1, len=tiling.single_core_m * tiling.k_a * 2)
    pipe.init_buffer(que=out_q, num=1, len=tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype),
        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    if blk < tiling.used_core_num:
        _copy_to(ag, xg, in_q, a_q, tiling.single_core_m * tiling.k_a)
        if bad == 0:
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.set_bias(biasg)
        tiles_m = tiling.single_core_m // tiling.base_m
        with mm.iterate() as tile:
            out = out_q.alloc_tensor(c.dtype)
            mm.get_tensor_c(out, en_sequential_write=True)
            out_q.enque(out)
            out = out_q.deque(c.dtype)
            at = tile % tiles_m * tiling.base_m * tiling.n + tile // tiles_m * tiling.base_n
            asc.data_copy(cg[at:], out, repeat_params=asc.DataCopyParams(
                block_count=tiling.base_m, block_len=tiling.base_n * 4 // 32, src_stride=0,
                dst_stride=(tiling.n - tiling.base_n) * 4 // 32))
            out_q.free_tensor(out)
        mm.end()


def served_tiling(m, n, k, cores, base_m, base_n):
    from ascendc import host
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    dt = host.DataType
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, dt.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, dt.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.VECCALC, host.CubeFormat.ND, dt.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, dt.DT_FLOAT)
    t.set_dim(cores)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(True)
    t.set_traverse(host.MatrixTraverse.FIRSTM)
    t.set_fix_split(base_m, base_n, -1)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling
