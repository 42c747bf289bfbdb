"""asc.adv.Matmul (kernel side) and asc.lib.host.MultiCoreMatmulTiling (host side).

The kernels follow pyasc's tutorial (python/tutorials/04_matmul_cube_only): per-block offsets
from the tiling, set_tensor_a/b, set_tail, iterate_all, end. Transposes, bias and en_atomic are
run-time arguments so each dtype compiles once."""
import ml_dtypes
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc import host
from ascendc.lang.errors import CompileError
from kernels.tolerances import assert_close

DT = host.DataType
NP_OF = {DT.DT_FLOAT: np.float32, DT.DT_FLOAT16: np.float16, DT.DT_BF16: ml_dtypes.bfloat16}


@asc.jit
def calc_offsets(tiling, ta, tb):
    block_idx = asc.get_block_idx()
    m_single_blocks = (tiling.m + tiling.single_core_m - 1) // tiling.single_core_m
    n_index = block_idx // m_single_blocks
    m_index = block_idx % m_single_blocks
    offset_a = m_index * tiling.k_a * tiling.single_core_m
    if ta:
        offset_a = m_index * tiling.single_core_m
    offset_b = n_index * tiling.single_core_n
    if tb:
        offset_b = n_index * tiling.k_b * tiling.single_core_n
    offset_c = m_index * tiling.n * tiling.single_core_m + n_index * tiling.single_core_n
    offset_bias = n_index * tiling.single_core_n
    tail_m = tiling.m - m_index * tiling.single_core_m
    if tail_m >= tiling.single_core_m:
        tail_m = tiling.single_core_m
    tail_n = tiling.n - n_index * tiling.single_core_n
    if tail_n >= tiling.single_core_n:
        tail_n = tiling.single_core_n
    return offset_a, offset_b, offset_c, offset_bias, tail_m, tail_n


@asc.jit
def matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                  bias: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, ta_type: int,
                  tb_type: int, ta: int, tb: int, use_bias: int, en_atomic: int):
    offset_a, offset_b, offset_c, offset_bias, tail_m, tail_n = calc_offsets(tiling, ta, tb)
    a_global = asc.GlobalTensor()
    b_global = asc.GlobalTensor()
    c_global = asc.GlobalTensor()
    bias_global = asc.GlobalTensor()
    a_global.set_global_buffer(a + offset_a)
    b_global.set_global_buffer(b + offset_b)
    c_global.set_global_buffer(c + offset_c)
    bias_global.set_global_buffer(bias + offset_bias)
    pipe = asc.TPipe()
    matmul = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, a_global.dtype, ta_type),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, b_global.dtype, tb_type),
        c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, c_global.dtype),
        bias=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bias_global.dtype),
    )
    asc.adv.register_matmul(pipe, matmul, tiling)
    if asc.get_block_idx() < tiling.used_core_num:
        matmul.set_tensor_a(a_global, ta)
        matmul.set_tensor_b(b_global, tb)
        if use_bias:
            matmul.set_bias(bias_global)
        matmul.set_tail(tail_m, tail_n, tiling.k_a)
        matmul.iterate_all(c_global, en_atomic)
        matmul.end()


def make_tiling(m, n, k, dt, cores, ta=False, tb=False, bias=False):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, dt, ta)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, dt, tb)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_dim(cores)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def run(m, n, k, dt, cores, ta, tb, bias, interpret, tiling=None, en_atomic=0, types=None,
        seed=0):
    rng = np.random.default_rng(seed)
    npdt = NP_OF[dt]
    a = rng.standard_normal((m, k), np.float32).astype(npdt)
    b = rng.standard_normal((k, n), np.float32).astype(npdt)
    bv = rng.standard_normal(n, np.float32)
    c = np.full((m, n), 7.0, np.float32)
    t = tiling or make_tiling(m, n, k, dt, cores, ta, tb, bias)
    ta_type, tb_type = types or (ta, tb)
    matmul_kernel[t.used_core_num](np.ascontiguousarray(a.T) if ta else a,
                                   np.ascontiguousarray(b.T) if tb else b, c, bv, t, ta_type,
                                   tb_type, ta, tb, bias, en_atomic, interpret=interpret)
    ref = a.astype(np.float64) @ b.astype(np.float64) + (bv if bias else 0)
    return c, ref


CASES = [  # m, n, k, dtype, cores, trans_a, trans_b, bias
    (33, 47, 29, DT.DT_FLOAT, 1, False, False, False),       # ragged, one core, K tail
    (128, 128, 128, DT.DT_FLOAT, 4, False, False, True),     # tile multiples, bias
    (70, 50, 90, DT.DT_FLOAT, 3, True, True, True),          # both transposed, ragged
    (64, 64, 64, DT.DT_FLOAT16, 4, False, False, True),
    (70, 50, 90, DT.DT_FLOAT16, 3, True, False, False),
    (40, 300, 130, DT.DT_FLOAT16, 2, False, True, True),     # 2 L1 chunks along K, wide tiles
    (200, 530, 260, DT.DT_FLOAT16, 8, False, False, True),   # several tiles per core
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:3])) + "-"
                         + c[3].name + "".join(f"-{f}" for f, on in zip(("ta", "tb", "bias"),
                                                                         c[5:]) if on))
def test_matmul_matches_numpy(mode, case):
    m, n, k, dt, cores, ta, tb, bias = case
    c, ref = run(m, n, k, dt, cores, ta, tb, bias, mode == "interpret")
    assert_close(c, ref, np.float32, scale=max(1.0, k / 32))


def test_float16_c_with_bias(mode):
    """A 16-bit C (fixpipe quantises the fp32 L0C) beside an fp32 bias: in compiled code the bias
    placeholder must keep the bias's own type."""
    m, n, k = 48, 40, 64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k), np.float32).astype(np.float16)
    b = rng.standard_normal((k, n), np.float32).astype(np.float16)
    bv = rng.standard_normal(n, np.float32)
    c = np.zeros((m, n), np.float16)
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT16)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT16)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT16)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_dim(2)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(True)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    matmul_kernel[tiling.used_core_num](a, b, c, bv, tiling, 0, 0, 0, 0, 1, 0,
                                        interpret=mode == "interpret")
    ref = a.astype(np.float64) @ b.astype(np.float64) + bv
    assert_close(c, ref, np.float16, scale=2)


def test_matmul_bfloat16_interpreted():
    c, ref = run(70, 40, 50, DT.DT_BF16, 2, False, True, True, True)
    assert_close(c, ref, np.float32, scale=max(1.0, 50 / 32))


@asc.jit
def single_shape_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                        bias: asc.GlobalAddress, workspace: asc.GlobalAddress,
                        tiling: asc.adv.TCubeTiling, m: int, n: int, k: int):
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c)
    biasg = asc.GlobalTensor()
    biasg.set_global_buffer(bias)
    pipe = asc.TPipe()
    f32 = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32)
    mm = asc.adv.Matmul(f32, f32, f32, f32)
    asc.adv.register_matmul(pipe, workspace, mm)
    mm.init(tiling)
    mm.set_org_shape(tiling.m, tiling.n, tiling.k_a)
    mm.set_single_shape(m, n, k)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.set_bias(biasg)
    mm.disable_bias()
    mm.iterate_all(cg)
    mm.end()


@pytest.mark.parametrize("order", [0, 1])
def test_init_single_shape_and_hand_tiling(mode, order):
    """register_matmul(pipe, workspace, mm) + mm.init(tiling), set_org_shape/set_single_shape:
    C[:m, :n] = A[:m, :k] @ B[:k, :n] inside larger matrices, with a hand-made tiling of small
    tiles (several tiles, 2 L1 chunks of 2 base_k slices, both iterate orders), bias disabled;
    the rest of C is untouched."""
    M, N, K, m, n, k = 80, 100, 120, 70, 90, 100
    t = asc.adv.TCubeTiling(used_core_num=1, m=M, n=N, k_a=K, k_b=K, single_core_m=M,
                            single_core_n=N, single_core_k=K, base_m=32, base_n=48, base_k=16,
                            depth_a1=4, depth_b1=4, step_m=1, step_n=1, step_k_a=2, step_k_b=2,
                            db_l0a=2, db_l0b=1, db_l0c=2, iterate_order=order)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K), np.float32)
    b = rng.standard_normal((K, N), np.float32)
    c = np.full((M, N), 7.0, np.float32)
    single_shape_kernel[1](a, b, c, np.ones(N, np.float32), np.zeros(1024, np.uint8), t, m, n,
                           k, interpret=mode == "interpret")
    assert_close(c[:m, :n], a[:m, :k].astype(np.float64) @ b[:k, :n], np.float32, scale=4)
    assert (c[m:] == 7).all() and (c[:, n:] == 7).all()


def test_profiler_counts_the_cube_path(mode):
    """64^3 fp16 over 4 cores (32 x 32 each, one tile, one K chunk): every operand byte moves
    GM->L1 once and L1->L0 once, every MAC and every C byte is counted."""
    with rt.profile() as prof:
        run(64, 64, 64, DT.DT_FLOAT16, 4, False, False, False, mode == "interpret")
    (r,) = [r for r in prof.records if r.kind == "kernel" and r.name == "matmul_kernel"]
    assert r.args["cube_macs"] == 64 ** 3 and r.args["cube_macs_fp32"] == 0
    assert r.args["mte2_bytes"] == 4 * (32 * 64 + 64 * 32) * 2
    assert r.args["mte1_bytes"] == r.args["mte2_bytes"]
    assert r.args["fix_bytes"] == 64 * 64 * 4


# ---- user-facing errors in kernels ---------------------------------------------------------------

RAISES = (rt.AclError, CompileError)


def test_runtime_errors_are_named(mode):
    interpret = mode == "interpret"
    t = make_tiling(32, 32, 32, DT.DT_FLOAT, 1)
    t.base_m = 0
    with pytest.raises(RAISES, match=r"asc.adv.Matmul.init: tiling.base_m must be a positive "
                                     r"multiple of 16, got base_m=0"):
        run(32, 32, 32, DT.DT_FLOAT, 1, False, False, False, interpret, tiling=t)
    with pytest.raises(RAISES, match=r"iterate_all: en_atomic must be 0 .*got en_atomic=1"):
        run(32, 32, 32, DT.DT_FLOAT, 1, False, False, False, interpret, en_atomic=1)
    with pytest.raises(RAISES, match=r"set_tensor_a: transpose must be False unless MatmulType a "
                                     r"has is_trans=True, got transpose=True"):
        run(32, 32, 32, DT.DT_FLOAT, 1, True, False, False, interpret, types=(False, False))
    big = make_tiling(32, 32, 32, DT.DT_FLOAT, 1)
    big.base_m, big.base_k = 256, 256                  # 256 KB of fp32 for L0A (L1 fits)
    big.step_k_a = big.step_k_b = big.depth_a1 = big.depth_b1 = 1
    with pytest.raises(RAISES, match=r"A2 TQue #2 must fit in L0A"):
        run(32, 32, 32, DT.DT_FLOAT, 1, False, False, False, interpret, tiling=big)


@asc.jit
def nz_kernel(a: asc.GlobalAddress):
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, asc.float16),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float16),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, asc.float32))
    mm.end()


@asc.jit
def no_bias_type_kernel(a: asc.GlobalAddress):
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a)
    f32 = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32)
    mm = asc.adv.Matmul(f32, f32, f32)
    mm.set_bias(ag)


@asc.jit
def missing_b_kernel(a: asc.GlobalAddress, tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a)
    pipe = asc.TPipe()
    f32 = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32)
    mm = asc.adv.Matmul(f32, f32, f32)
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag)
    mm.iterate_all(ag)


@asc.jit
def iterate_kernel(a: asc.GlobalAddress):
    f32 = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32)
    mm = asc.adv.Matmul(f32, f32, f32)
    mm.iterate()


def test_kernel_misuse_is_named(mode):
    interpret = mode == "interpret"
    x = np.zeros(64, np.float32)
    with pytest.raises(RAISES, match=r"asc.adv.MatmulType: format must be CubeFormat.ND \(or NZ "
                                     r"for a and b\), got format=NZ for c"):
        nz_kernel[1](x, interpret=interpret)
    with pytest.raises(RAISES, match=r"asc.adv.Matmul.set_bias: the Matmul must be declared with "
                                     r"a bias MatmulType"):
        no_bias_type_kernel[1](x, interpret=interpret)
    with pytest.raises(RAISES, match=r"iterate_all: set_tensor_a and set_tensor_b must be called "
                                     r"first, got a=True b=False"):
        missing_b_kernel[1](x, make_tiling(16, 16, 16, DT.DT_FLOAT, 1), interpret=interpret)
    with pytest.raises(RAISES, match=r"asc.adv.Matmul.iterate: set_tensor_a and set_tensor_b "
                                     r"must be called first, got a=False b=False"):
        iterate_kernel[1](x, interpret=interpret)


# ---- host tiling ---------------------------------------------------------------------------------

def _host(dt=DT.DT_FLOAT16, dim=8, shape=(512, 1024, 512), bias=False):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, dt)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, dt)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_dim(dim)
    t.set_shape(*shape)
    t.set_org_shape(*shape)
    t.enable_bias(bias)
    return t


def test_host_tiling_fields_by_hand():
    """fp16 512 x 1024 x 512 on 8 cores: 2 x 4 blocks of 256 x 256 (fewest MACs + loads per
    core); 128 x 256 C tiles fill L0C; base_k = 64 lets A (16 KB) and B (32 KB) tiles fit
    L0A/L0B twice; L1 holds 2 x 5 K-steps at most (48 KB each), balanced to 2 x 4."""
    tiling = asc.adv.TCubeTiling()
    assert _host().get_tiling(tiling) == 0
    expected = dict(
        used_core_num=8, m=512, n=1024, k_a=512, k_b=512, single_core_m=256, single_core_n=256,
        single_core_k=512, base_m=128, base_n=256, base_k=64, depth_a1=8, depth_b1=8, step_m=1,
        step_n=1, step_k_a=4, step_k_b=4, is_bias=0, iterate_order=0, db_l0a=2, db_l0b=2,
        db_l0c=1, share_l1_size=2 * 4 * (128 + 256) * 64 * 2, share_l0c_size=128 * 256 * 4)
    assert {k: v for k, v in tiling._asdict().items() if k in expected} == expected
    assert tiling.to_cpp_dict()["singleCoreM"] == 256 and tiling.to_cpp_dict()["dbL0A"] == 2


@pytest.mark.parametrize("dt", [DT.DT_FLOAT, DT.DT_FLOAT16, DT.DT_BF16])
@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 47, 29), (4096, 4096, 4096), (16, 30720, 64),
                                   (3000, 17, 9000)])
@pytest.mark.parametrize("dim,bias", [(1, False), (24, True), (48, False)])
def test_host_tiling_fits_the_soc(dt, shape, dim, bias):
    soc = rt.get_soc()
    t = asc.adv.TCubeTiling()
    assert _host(dt, dim, shape, bias).get_tiling(t) == 0
    m, n, k = shape
    isz, c0 = (4, 8) if dt == DT.DT_FLOAT else (2, 16)
    assert t.base_m % 16 == 0 and t.base_n % 16 == 0 and t.base_k % c0 == 0
    assert t.db_l0a * t.base_m * t.base_k * isz <= soc.l0a_bytes
    assert t.db_l0b * t.base_k * t.base_n * isz <= soc.l0b_bytes
    assert t.db_l0c * t.base_m * t.base_n * 4 <= soc.l0c_bytes
    assert t.share_l1_size <= soc.l1_bytes
    assert t.depth_a1 * t.base_m * t.base_k * isz + t.depth_b1 * t.base_k * t.base_n * isz \
        + (t.base_n * 4 if bias else 0) == t.share_l1_size
    assert (not bias or t.base_n <= 256) and t.is_bias == bias
    assert t.base_k <= max(c0, -(-k // c0) * c0) and t.single_core_k == k
    blocks = -(-m // t.single_core_m) * -(-n // t.single_core_n)
    assert t.used_core_num == blocks <= dim
    assert t.single_core_m <= m and t.single_core_n <= n


def test_host_tiling_errors():
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    gm, nd = host.TPosition.GM, host.CubeFormat.ND
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.set_dim: dim must be in "
                                         r"\[1, 48\], got dim=0"):
        t.set_dim(0)
    with pytest.raises(ValueError, match=r"set_shape: m must be >= 1, got m=0"):
        t.set_shape(0, 16, 16)
    with pytest.raises(ValueError, match=r"set_org_shape: k must be >= 1, got k=-3"):
        t.set_org_shape(16, 16, -3)
    with pytest.raises(ValueError, match=r"set_c_type: format must be CubeFormat.ND \(or NZ for "
                                         r"a and b\), got format=NZ"):
        t.set_c_type(gm, host.CubeFormat.NZ, DT.DT_FLOAT)
    with pytest.raises(ValueError, match=r"set_a_type: position must be TPosition.GM .*got "
                                         r"position=VECOUT"):
        t.set_a_type(host.TPosition.VECOUT, nd, DT.DT_FLOAT16)
    with pytest.raises(ValueError, match=r"set_b_type: dtype must be one of DT_FLOAT, DT_FLOAT16, "
                                         r"DT_BF16, DT_INT8, got dtype=<DataType.DT_INT32: 3>"):
        t.set_b_type(gm, nd, DT.DT_INT32)
    with pytest.raises(ValueError, match=r"set_bias_type: dtype must be one of DT_FLOAT, DT_INT32, "
                                         r"got dtype=<DataType.DT_FLOAT16: 1>"):
        t.set_bias_type(gm, nd, DT.DT_FLOAT16)
    with pytest.raises(ValueError, match=r"set_buffer_space: l1_size must be in \[-1, 524288\], "
                                         r"got l1_size=1000000"):
        t.set_buffer_space(1000000)
    with pytest.raises(TypeError, match=r"get_tiling: tiling must be an asc.adv.TCubeTiling"):
        t.get_tiling({})
    with pytest.warns(RuntimeWarning, match=r"set_a_type, set_b_type and set_c_type must be "
                                            r"called first, got no type for a, b, c"):
        assert t.get_tiling(asc.adv.TCubeTiling()) == -1
    mixed = _host()
    mixed.set_b_type(gm, nd, DT.DT_FLOAT)
    with pytest.raises(ValueError, match=r"get_tiling: a and b must have the same dtype, got "
                                         r"a=DT_FLOAT16 b=DT_FLOAT"):
        mixed.get_tiling(asc.adv.TCubeTiling())
    small = _host(shape=(64, 64, 64))
    small.set_org_shape(32, 64, 64)
    with pytest.raises(ValueError, match=r"shape must fit in the org shape"):
        small.get_tiling(asc.adv.TCubeTiling())
    wide = _host(shape=(16, 70000, 16))
    with pytest.raises(ValueError, match=r"GM row lengths must be <= 65535 .*got org n=70000"):
        wide.get_tiling(asc.adv.TCubeTiling())
    tight = _host()
    tight.set_buffer_space(1024)
    with pytest.warns(RuntimeWarning, match=r"must fit L1, got .* for l1_size=1024"):
        assert tight.get_tiling(asc.adv.TCubeTiling()) == -1


def test_tcube_tiling_struct():
    t = asc.adv.TCubeTiling(base_m=128, is_bias=True)
    assert t.base_m == 128 and t.is_bias == 1 and t.m == 0
    assert t._kernel_record().base_m == 128
    with pytest.raises(AttributeError, match=r"TCubeTiling: field must be one of TCubeTiling's "
                                             r"fields .*got baseM=1"):
        t.baseM = 1
    with pytest.raises(ValueError, match=r"TCubeTiling: base_k must be an int32, got "
                                         r"base_k=2147483648"):
        t.base_k = 2 ** 31
    assert asc.lib.host.MultiCoreMatmulTiling is host.MultiCoreMatmulTiling
