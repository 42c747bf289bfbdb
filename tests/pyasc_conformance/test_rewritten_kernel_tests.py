"""Test-for-test rewrites of pyasc's kernel tests (hicann/pyasc python/test/kernels, commit
cecba26a), written independently (see rewritten_common.py): same kernel behaviour through the
pyasc APIs, same shapes, same reference checks, both modes."""
import numpy as np
import pytest

from rewritten_common import MODES, asc, launch

SLOW_COMPILED = [MODES[0], pytest.param(MODES[1], marks=pytest.mark.slow)]


# ---- kernels/test_vadd.py: queues built with init_buffer keywords, ConstExpr sizes ---------------

@asc.jit
def fetch(step: int, xg: asc.GlobalAddress, yg: asc.GlobalAddress, qx: asc.TQue, qy: asc.TQue,
          n: asc.ConstExpr[int]):
    xl = qx.alloc_tensor(xg.dtype)
    yl = qy.alloc_tensor(yg.dtype)
    asc.data_copy(xl, xg[step * n:], count=n)
    asc.data_copy(yl, yg[step * n:], count=n)
    qx.enque(xl)
    qy.enque(yl)


@asc.jit
def combine(zg: asc.GlobalTensor, qx: asc.TQue, qy: asc.TQue, qz: asc.TQue,
            n: asc.ConstExpr[int]):
    xl = qx.deque(zg.dtype)
    yl = qy.deque(zg.dtype)
    zl = qz.alloc_tensor(zg.dtype)
    asc.add(zl, xl, yl, n)
    qz.enque(zl)
    qx.free_tensor(xl)
    qy.free_tensor(yl)


@asc.jit
def flush(step: int, zg: asc.GlobalTensor, qz: asc.TQue, n: asc.ConstExpr[int]):
    zl = qz.deque(zg.dtype)
    asc.data_copy(zg[step * n:], zl, count=n)
    qz.free_tensor(zl)


@asc.jit
def vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress,
         per_core: asc.ConstExpr[int], bufs: asc.ConstExpr[int], n: asc.ConstExpr[int],
         steps: asc.ConstExpr[int]):
    base = asc.get_block_idx() * per_core
    xg = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x + base)
    yg.set_global_buffer(y + base)
    zg.set_global_buffer(z + base)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, bufs)
    qy = asc.TQue(asc.TPosition.VECIN, bufs)
    qz = asc.TQue(asc.TPosition.VECOUT, bufs)
    pipe.init_buffer(que=qx, num=bufs, len=n * x.dtype.sizeof())
    pipe.init_buffer(que=qy, num=bufs, len=n * y.dtype.sizeof())
    pipe.init_buffer(que=qz, num=bufs, len=n * z.dtype.sizeof())
    for step in range(steps):
        fetch(step, xg, yg, qx, qy, n)
        combine(zg, qx, qy, qz, n)
        flush(step, zg, qz, n)


@pytest.mark.parametrize("mode", MODES)
def test_vadd(mode):
    """Mirrors python/test/kernels/test_vadd.py."""
    rng = np.random.default_rng(seed=2025)
    x = rng.random(8192, dtype=np.float32)
    y = rng.random(8192, dtype=np.float32)
    z = np.zeros_like(x)
    cores, steps = 16, 8
    per_core = -(-x.size // cores)
    launch(vadd, cores, x, y, z, per_core, 1, -(-per_core // steps), steps, mode=mode)
    np.testing.assert_allclose(z, x + y)


# ---- kernels/test_matmul.py and test_matmul_torch.py: LeakyReLU(A @ B [+ bias]) ----------------

@asc.jit
def core_offsets(tiling: asc.adv.TCubeTiling):
    blk = asc.get_block_idx()
    rows = tiling.m.ceildiv(tiling.single_core_m)
    k_parts = tiling.k_a.ceildiv(tiling.single_core_k)
    blk = blk % (tiling.used_core_num // k_parts)
    mi = blk % rows
    ni = blk // rows
    return (mi * tiling.k_a * tiling.single_core_m, ni * tiling.single_core_n,
            mi * tiling.n * tiling.single_core_m + ni * tiling.single_core_n,
            ni * tiling.single_core_n)


@asc.jit
def gemm_leaky_bias(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                    alpha: float, tiling: asc.adv.TCubeTiling, bias: asc.GlobalAddress,
                    workspace: asc.GlobalAddress):
    # the kernel completes the host's tiling itself, as the upstream test does
    tiling.share_l1_size = asc.property(asc.TOTAL_L1_SIZE)
    tiling.share_l0c_size = asc.property(asc.TOTAL_L0C_SIZE)
    offs = core_offsets(tiling)
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    biasg = asc.GlobalTensor()
    ag.set_global_buffer(a + offs[0])
    bg.set_global_buffer(b + offs[1])
    cg.set_global_buffer(c + offs[2])
    biasg.set_global_buffer(bias + offs[3])
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=q, num=2, len=tiling.base_m * tiling.base_n * c.dtype.sizeof())
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype),
        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, biasg.dtype),
        matmul_config=asc.adv.MatmulConfig())
    asc.adv.register_matmul(pipe, workspace, mm)
    mm.init(tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.set_bias(biasg)
    c0 = asc.property(asc.DEFAULT_C0_SIZE)
    row_bytes = tiling.base_n * c.dtype.sizeof()
    tile = 0
    while mm.iterate():         # the Ascend C spelling of upstream's `with mm.iterate() as n:`
        t = q.alloc_tensor(c.dtype)
        mm.get_tensor_c(t, en_sequential_write=True)
        asc.leaky_relu(t, t, alpha, count=tiling.base_m * tiling.base_n)
        q.enque(t)
        t = q.deque(c.dtype)
        per_col = tiling.single_core_m // tiling.base_m
        at = tile % per_col * tiling.base_m * tiling.n + tile // per_col * tiling.base_n
        asc.data_copy(cg[at:], t, repeat_params=asc.DataCopyParams(
            block_count=tiling.base_m, block_len=row_bytes // c0, src_stride=0,
            dst_stride=(tiling.n * c.dtype.sizeof() - row_bytes) // c0))
        q.free_tensor(t)
        tile += 1
    mm.end()
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)


@asc.jit
def gemm_leaky_inline_tiling(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                             alpha: float, m: asc.ConstExpr[int], k: asc.ConstExpr[int],
                             n: asc.ConstExpr[int], base: asc.ConstExpr[int],
                             cores: asc.ConstExpr[int], workspace: asc.GlobalAddress):
    # the tiling is built inside the kernel from compile-time sizes
    tiling = asc.adv.TCubeTiling(
        used_core_num=cores, m=m, k_a=k, k_b=k, n=n, base_m=base, base_k=base, base_n=base,
        single_core_m=base, single_core_k=k, single_core_n=base, depth_a1=1, depth_b1=1,
        step_m=1, step_n=1, share_mode=0, share_ub_size=0,
        share_l1_size=asc.property(asc.TOTAL_L1_SIZE),
        share_l0c_size=asc.property(asc.TOTAL_L0C_SIZE))
    offs = core_offsets(tiling)
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a + offs[0])
    bg.set_global_buffer(b + offs[1])
    cg.set_global_buffer(c + offs[2])
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=q, num=2, len=tiling.base_m * tiling.base_n * c.dtype.sizeof())
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, workspace, mm)
    mm.init(tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    c0 = asc.property(asc.DEFAULT_C0_SIZE)
    with mm.iterate() as tile:
        t = q.alloc_tensor(c.dtype)
        mm.get_tensor_c(t, en_sequential_write=True)
        asc.leaky_relu(t, t, alpha, count=tiling.base_m * tiling.base_n)
        q.enque(t)
        t = q.deque(c.dtype)
        per_col = tiling.single_core_m // tiling.base_m
        at = tile % per_col * tiling.base_m * tiling.n + tile // per_col * tiling.base_n
        asc.data_copy(cg[at:], t, repeat_params=asc.DataCopyParams(
            block_count=tiling.base_m, block_len=tiling.base_n * c.dtype.sizeof() // c0,
            src_stride=0, dst_stride=(tiling.n - tiling.base_n) * c.dtype.sizeof() // c0))
        q.free_tensor(t)
    mm.end()
    asc.pipe_barrier(asc.PipeID.PIPE_ALL)


def leaky(x, alpha):
    return np.where(x >= 0, x, x * alpha)


@pytest.mark.parametrize("mode", SLOW_COMPILED)
def test_matmul(mode):
    """Mirrors python/test/kernels/test_matmul.py: host-made tiling (without share_l1_size /
    share_l0c_size, which the kernel fills in), bias, 256^3 float32, 64 x 64 tiles."""
    rng = np.random.default_rng(seed=2025)
    m = k = n = 256
    a = (rng.random((m, k), dtype=np.float32) - .5) * 10
    b = (rng.random((k, n), dtype=np.float32) - .5) * 10
    bias = (rng.random((1, n), dtype=np.float32) - .5) * 10
    alpha = 0.01
    base = 64
    cores = -(-m // base) * -(-n // base)
    tiling = asc.adv.TCubeTiling(
        used_core_num=cores, m=m, k_a=k, k_b=k, n=n, base_m=base, base_k=base, base_n=base,
        single_core_m=base, single_core_k=k, single_core_n=base, depth_a1=1, depth_b1=1,
        step_m=1, step_n=1, share_mode=0, is_bias=1)
    c = np.empty((m, n), np.float32)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    launch(gemm_leaky_bias, cores, a, b, c, alpha, tiling, bias, ws, mode=mode)
    np.testing.assert_allclose(c, leaky(a @ b + bias, alpha), atol=1e-3)


@pytest.mark.parametrize("mode", SLOW_COMPILED)
def test_matmul_torch(mode):
    """Mirrors python/test/kernels/test_matmul_torch.py (numpy instead of torch): the tiling is
    built in the kernel; no bias; launch sizes given as keywords."""
    rng = np.random.default_rng(7)
    m = k = n = 256
    a = ((rng.standard_normal((m, k)) - .5) * 10).astype(np.float32)
    b = ((rng.standard_normal((k, n)) - .5) * 10).astype(np.float32)
    alpha = 0.01
    base = 64
    cores = asc.ceildiv(m, base) * asc.ceildiv(n, base)
    c = np.empty((m, n), np.float32)
    ws = np.zeros(16 * 1024 * 1024, np.uint8)
    launch(gemm_leaky_inline_tiling, cores, a, b, c, alpha, m=m, k=k, n=n, base=base,
           cores=cores, workspace=ws, mode=mode)
    # torch.allclose's default rtol (1e-5) with the test's atol
    np.testing.assert_allclose(c, leaky(a @ b, alpha), rtol=1e-5, atol=1e-3)


# ---- kernels/test_bilinear_interpolation.py: gathered blocks, a TBuf scratch -------------------

@asc.jit
def bilinear(x: asc.GlobalAddress, offsets: asc.GlobalAddress, y: asc.GlobalAddress,
             z: asc.GlobalAddress, n_x: asc.ConstExpr[int], n_off: asc.ConstExpr[int],
             n_y: asc.ConstExpr[int], n_z: asc.ConstExpr[int], h_rep: asc.ConstExpr[int],
             per_block: asc.ConstExpr[bool], blk_stride: asc.ConstExpr[int],
             row_offset: asc.ConstExpr[int], v_rep: asc.ConstExpr[int]):
    xg = asc.GlobalTensor()
    og = asc.GlobalTensor()
    yg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    og.set_global_buffer(offsets)
    yg.set_global_buffer(y)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 1)
    qo = asc.TQue(asc.TPosition.VECIN, 1)
    qy = asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    scratch = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(que=qx, num=1, len=n_x * x.dtype.sizeof())
    pipe.init_buffer(que=qo, num=1, len=n_off * offsets.dtype.sizeof())
    pipe.init_buffer(que=qy, num=1, len=n_y * y.dtype.sizeof())
    pipe.init_buffer(que=qz, num=1, len=n_z * z.dtype.sizeof())
    pipe.init_buffer(buf=scratch, num=(n_x + n_y) * x.dtype.sizeof())
    xl = qx.alloc_tensor(x.dtype)
    ol = qo.alloc_tensor(offsets.dtype)
    yl = qy.alloc_tensor(y.dtype)
    asc.data_copy(xl, xg, count=n_x)
    asc.data_copy(ol, og, count=n_off)
    asc.data_copy(yl, yg, count=n_y)
    qx.enque(xl)
    qo.enque(ol)
    qy.enque(yl)
    xl = qx.deque(asc.half)
    ol = qo.deque(asc.uint32)
    yl = qy.deque(asc.half)
    zl = qz.alloc_tensor(asc.half)
    tmp = scratch.alloc_tensor(asc.uint8)
    asc.bilinear_interpolation(zl, xl, ol, yl, 128, h_rep, per_block, blk_stride, row_offset,
                               v_rep, tmp)
    qz.enque(zl)
    qx.free_tensor(xl)
    qo.free_tensor(ol)
    qy.free_tensor(yl)
    scratch.free_tensor(tmp)
    zl = qz.deque(z.dtype)
    asc.data_copy(zg, zl, count=n_z)
    qz.free_tensor(zl)


@pytest.mark.parametrize("mode", MODES)
def test_bilinear_interpolation(mode):
    """Mirrors python/test/kernels/test_bilinear_interpolation.py: 2 x 2 iterations, one src1
    value per iteration, offsets i * 32 bytes (block i), dst rows 128 elements apart."""
    rng = np.random.default_rng(11)
    h_rep, v_rep = 2, 2
    x = rng.uniform(-10, 10, 512).astype(np.float16)
    offsets = np.arange(32, dtype=np.uint32) * 32
    y = rng.uniform(-10, 10, 16).astype(np.float16)
    z = np.zeros(256, np.float16)
    launch(bilinear, 1, x, offsets, y, z, 512, 32, 16, 256, h_rep, False, 1, 128, v_rep,
           mode=mode)
    # the reference: the first h_rep * v_rep * 8 blocks of x, each 128-element group scaled by
    # its src1 value (in float16), summed over the horizontal iterations into its dst row
    used = h_rep * v_rep * 128
    scaled = (x[:used].reshape(-1, 128) * y[:h_rep * v_rep, None]).astype(np.float16)
    want = np.zeros(256, np.float16)
    for v in range(v_rep):
        for h in range(h_rep):
            want[v * 128:(v + 1) * 128] += scaled[v * h_rep + h]
    np.testing.assert_allclose(z, want, atol=1e-5)
