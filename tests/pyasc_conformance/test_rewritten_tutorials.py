"""Test-for-test rewrites of pyasc's tutorials (hicann/pyasc python/tutorials, commit cecba26a).

Written independently (pyasc's licence forbids vendoring; see rewritten_common.py): each test
runs a kernel that does what the tutorial's kernel does, through the same pyasc APIs, on the
tutorial's shapes, and checks it against the tutorial's reference. They run in the default SoC
profile (the tutorials' `config.set_platform(Model)` would reopen the process's device).
"""
import numpy as np
import pytest

from rewritten_common import MODES, asc, host, launch
import rt

CORES = 8
HALVES = 2          # double buffering of the add tutorials
TILES = 8


# ---- 01_add/add.py: static LocalTensors at fixed UB addresses, hand-placed flags ---------------

@asc.jit
def add_static(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, per_core: int):
    base = asc.get_block_idx() * per_core
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, per_core)
    yg.set_global_buffer(y + base, per_core)
    zg.set_global_buffer(z + base, per_core)
    piece = per_core // TILES // HALVES
    nbytes = piece * HALVES * x.dtype.sizeof()
    xl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, piece * HALVES)
    yl = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, nbytes, piece * HALVES)
    zl = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 2 * nbytes, piece * HALVES)
    for step in range(TILES * HALVES):
        half = step % HALVES
        at = half * piece
        asc.data_copy(xl[at:], xg[step * piece:], piece)
        asc.data_copy(yl[at:], yg[step * piece:], piece)
        asc.set_flag(asc.HardEvent.MTE2_V, half)
        asc.wait_flag(asc.HardEvent.MTE2_V, half)
        asc.add(zl[at:], xl[at:], yl[at:], piece)
        asc.set_flag(asc.HardEvent.V_MTE3, half)
        asc.wait_flag(asc.HardEvent.V_MTE3, half)
        asc.data_copy(zg[step * piece:], zl[at:], piece)
        asc.set_flag(asc.HardEvent.MTE3_MTE2, half)
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, half)


@pytest.mark.parametrize("mode", MODES)
def test_01_add(mode):
    """Mirrors python/tutorials/01_add/add.py."""
    rng = np.random.default_rng(1)
    x = rng.random(8 * 2048, dtype=np.float32)
    y = rng.random(8 * 2048, dtype=np.float32)
    z = np.zeros_like(x)
    launch(add_static, CORES, x, y, z, x.size // CORES, mode=mode)
    np.testing.assert_allclose(z, x + y, rtol=1e-5)


# ---- 02_add_framework/add_framework.py: TPipe + TQue, work split into helpers -------------------

@asc.jit
def load_pair(step: int, xg: asc.GlobalAddress, yg: asc.GlobalAddress, qx: asc.TQue,
              qy: asc.TQue, piece: asc.ConstExpr[int]):
    xl = qx.alloc_tensor(xg.dtype)
    yl = qy.alloc_tensor(yg.dtype)
    asc.data_copy(xl, xg[step * piece:], piece)
    asc.data_copy(yl, yg[step * piece:], piece)
    qx.enque(xl)
    qy.enque(yl)


@asc.jit
def add_pair(zg: asc.GlobalTensor, qx: asc.TQue, qy: asc.TQue, qz: asc.TQue,
             piece: asc.ConstExpr[int]):
    xl = qx.deque(zg.dtype)
    yl = qy.deque(zg.dtype)
    zl = qz.alloc_tensor(zg.dtype)
    asc.add(zl, xl, yl, piece)
    qz.enque(zl)
    qx.free_tensor(xl)
    qy.free_tensor(yl)


@asc.jit
def store(step: int, zg: asc.GlobalTensor, qz: asc.TQue, piece: asc.ConstExpr[int]):
    zl = qz.deque(zg.dtype)
    asc.data_copy(zg[step * piece:], zl, piece)
    qz.free_tensor(zl)


@asc.jit
def add_queued(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, per_core: int,
               piece: asc.ConstExpr[int]):
    base = asc.get_block_idx() * per_core
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base)
    yg.set_global_buffer(y + base)
    zg.set_global_buffer(z + base)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, HALVES)
    qy = asc.TQue(asc.TPosition.VECIN, HALVES)
    qz = asc.TQue(asc.TPosition.VECOUT, HALVES)
    pipe.init_buffer(qx, HALVES, piece * x.dtype.sizeof())
    pipe.init_buffer(qy, HALVES, piece * y.dtype.sizeof())
    pipe.init_buffer(qz, HALVES, piece * z.dtype.sizeof())
    for step in range(TILES * HALVES):
        load_pair(step, xg, yg, qx, qy, piece)
        add_pair(zg, qx, qy, qz, piece)
        store(step, zg, qz, piece)


@pytest.mark.parametrize("mode", MODES)
def test_02_add_framework(mode):
    """Mirrors python/tutorials/02_add_framework/add_framework.py."""
    rng = np.random.default_rng(2)
    x = rng.random(8 * 2048, dtype=np.float32)
    y = rng.random(8 * 2048, dtype=np.float32)
    z = np.zeros_like(x)
    per_core = -(-x.size // CORES)
    launch(add_queued, CORES, x, y, z, per_core, per_core // TILES // HALVES, mode=mode)
    np.testing.assert_allclose(z, x + y, rtol=1e-5)


# ---- 03 / 04: Matmul with C in GM (iterate_all) -------------------------------------------------

@asc.jit
def block_offsets(tiling: asc.adv.TCubeTiling):
    """(A, B, C, bias offsets, tail m, tail n) of this block's single-core C."""
    blk = asc.get_block_idx()
    rows = tiling.m.ceildiv(tiling.single_core_m)
    mi = blk % rows
    ni = blk // rows
    tail_m = tiling.m - mi * tiling.single_core_m
    if tail_m <= 0 or tail_m >= tiling.single_core_m:
        tail_m = tiling.single_core_m
    tail_n = tiling.n - ni * tiling.single_core_n
    if tail_n <= 0 or tail_n >= tiling.single_core_n:
        tail_n = tiling.single_core_n
    return (mi * tiling.k_a * tiling.single_core_m, ni * tiling.single_core_n,
            mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n,
            ni * tiling.single_core_n, tail_m, tail_n)


@asc.jit
def gemm_body(a, b, c, bias, tiling, workspace):
    offs = block_offsets(tiling)
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    ag.set_global_buffer(a + offs[0])
    bg.set_global_buffer(b + offs[1])
    cg.set_global_buffer(c + offs[2])
    biasg.set_global_buffer(bias + offs[3])
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    if asc.get_block_idx() < tiling.used_core_num:
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        if tiling.is_bias:
            mm.set_bias(biasg)
        mm.set_tail(offs[4], offs[5], tiling.k_a)
        mm.iterate_all(cg)
        mm.end()
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)


@asc.jit(always_compile=True)
def gemm_mix(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
             bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    gemm_body(a, b, c, bias, tiling, workspace)


@asc.jit(matmul_cube_only=True, always_compile=True)
def gemm_cube(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
              bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, workspace: asc.GlobalAddress):
    if asc.ascend_is_aic():
        gemm_body(a, b, c, bias, tiling, workspace)


def gm_tiling(m, n, k, cores):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(cores)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(False)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def small_ints(rng, shape, dtype):
    return rng.integers(-5, 5, shape).astype(dtype)


@pytest.mark.parametrize("mode", [MODES[0], pytest.param(MODES[1], marks=pytest.mark.slow)])
def test_03_matmul_mix(mode):
    """Mirrors python/tutorials/03_matmul_mix/matmul_mix.py: a MIX kernel launched with half
    the vector cores as block_dim (AIC/AIV groups); every C element must be written."""
    rng = np.random.default_rng(3)
    m, k, n = 512, 512, 1024
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    bias = small_ints(rng, (1, n), np.float32)
    c = np.zeros((m, n), np.float32)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    launch(gemm_mix, 48 // 2, a, b, c, bias, gm_tiling(m, n, k, 48), ws, mode=mode)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)


@pytest.mark.parametrize("mode", [pytest.param(MODES[0], marks=pytest.mark.slow), MODES[1]])
def test_03_matmul_mix_serves_the_matmul_on_the_aics(mode):
    """pyasc's MIX detection makes tutorial 03 a MIX_AIC_1_2 kernel: each group's AIC serves the
    iterate_all of its AIVs (ascendc/adv/kfc.py), so every mmad, L1 load and fixpipe is in an
    AIC's NPU-view stream and the AIVs' streams hold only their messages."""
    rng = np.random.default_rng(3)
    m, k, n = 512, 512, 1024
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    c = np.zeros((m, n), np.float32)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    tiling = gm_tiling(m, n, k, 8)
    with rt.profile(npu=True) as prof:
        launch(gemm_mix, 4, a, b, c, np.zeros((1, n), np.float32), tiling, ws, mode=mode)
    run, = prof.npu_runs()
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)
    assert run.roles == ("AIC", "AIV", "AIV") and len(run.blocks) == 12
    for i, blk in enumerate(run.blocks):
        pipes = {x.pipe for x in blk}
        mmads = sum(x.name == "mmad" for x in blk)
        sets = sum(x.name == "cross_core_set_flag" for x in blk)
        if i % 3 == 0:        # the AIC: the cube work, one answer per iterate_all
            assert mmads > 0 and {"CUBE", "MTE1", "FIXPIPE"} <= pipes and sets == 2
        else:                 # an AIV: iterate_all and end, no cube instruction
            assert mmads == 0 and not pipes & {"CUBE", "MTE1", "FIXPIPE"} and sets == 2


@pytest.mark.parametrize("mode", [MODES[0], pytest.param(MODES[1], marks=pytest.mark.slow)])
def test_04_matmul_cube_only(mode):
    """Mirrors python/tutorials/04_matmul_cube_only/matmul_cube_only.py (AIC_ONLY kernel)."""
    rng = np.random.default_rng(4)
    m, k, n = 128, 64, 30720
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    bias = small_ints(rng, (1, n), np.float32)
    c = np.zeros((m, n), np.float32)
    tiling = gm_tiling(m, n, k, 24)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    launch(gemm_cube, int(tiling.used_core_num), a, b, c, bias, tiling, ws, mode=mode)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3,
                               atol=1e-3)


# ---- 05_matmul_leakyrelu: C tile by tile into UB (iterate + get_tensor_c), LeakyReLU, out -------

@asc.jit
def leaky_offsets(tiling: asc.adv.TCubeTiling):
    blk = asc.get_block_idx()
    rows = tiling.m.ceildiv(tiling.single_core_m)
    mi = blk % rows
    ni = blk // rows
    return (mi * tiling.k_a * tiling.single_core_m, ni * tiling.single_core_n,
            mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n,
            ni * tiling.single_core_n)


@asc.jit(always_compile=True)
def gemm_leaky(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
               bias: asc.GlobalAddress, alpha: float, tiling: asc.adv.TCubeTiling,
               workspace: asc.GlobalAddress):
    offs = leaky_offsets(tiling)
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    ag.set_global_buffer(a + offs[0])
    bg.set_global_buffer(b + offs[1])
    cg.set_global_buffer(c + offs[2])
    biasg.set_global_buffer(bias + offs[3])
    pipe = asc.TPipe()
    out_q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=out_q, num=1, len=tiling.base_m * tiling.base_n * c.dtype.sizeof())
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype),
        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.set_bias(biasg)
    block = asc.property(asc.DEFAULT_C0_SIZE)
    with mm.iterate() as tile:
        out = out_q.alloc_tensor(c.dtype)
        mm.get_tensor_c(out, en_sequential_write=True)
        asc.leaky_relu(out, out, alpha, count=tiling.base_m * tiling.base_n)
        out_q.enque(out)
        out = out_q.deque(c.dtype)
        tiles_m = tiling.single_core_m // tiling.base_m
        at = tile % tiles_m * tiling.base_m * tiling.n + tile // tiles_m * tiling.base_n
        asc.data_copy(cg[at:], out, repeat_params=asc.DataCopyParams(
            block_count=tiling.base_m, block_len=tiling.base_n * c.dtype.sizeof() // block,
            src_stride=0, dst_stride=(tiling.n - tiling.base_n) * c.dtype.sizeof() // block))
        out_q.free_tensor(out)
    mm.end()
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)


def leaky_tiling(m, n, k):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.VECCALC, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(2)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(True)
    t.set_traverse(host.MatrixTraverse.FIRSTM)
    t.set_fix_split(256, 128, -1)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


@pytest.mark.parametrize("mode", [MODES[0], pytest.param(MODES[1], marks=pytest.mark.slow)])
def test_05_matmul_leakyrelu(mode):
    """Mirrors python/tutorials/05_matmul_leakyrelu/matmul_leakyrelu.py."""
    rng = np.random.default_rng(5)
    m, k, n = 1024, 256, 640
    a, b = small_ints(rng, (m, k), np.float16), small_ints(rng, (k, n), np.float16)
    bias = small_ints(rng, (1, n), np.float32)
    alpha = 0.001
    c = np.zeros((m, n), np.float32)
    tiling = leaky_tiling(m, n, k)
    assert (tiling.base_m, tiling.base_n, tiling.iterate_order) == (256, 128, 0)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    launch(gemm_leaky, int(tiling.used_core_num) // 2, a, b, c, bias, alpha, tiling, ws, mode=mode)
    ref = a.astype(np.float32) @ b.astype(np.float32) + bias
    np.testing.assert_allclose(c, np.where(ref >= 0, ref, ref * alpha), rtol=1e-3, atol=1e-3)
