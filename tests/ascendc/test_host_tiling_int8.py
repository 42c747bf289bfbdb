"""Host tiling (`ascendc.host.MultiCoreMatmulTiling`) for int8 x int8 -> int32 Matmul: the
tiling honours the SoC's L0A/L0B/L0C/L1 capacities in bytes (an int8 A/B tile is 1 byte an
element, the int32 C tile 4), base_k is a multiple of C0 = 32, the combinations Matmul does not
have are refused by name, and an int8 Matmul launched with the host's tiling matches numpy
exactly (interpreted; one compiled case reuses test_adv_matmul_dtypes's int8 specialisation of
mm_all_kernel, so no new kernel is compiled)."""
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc import host
from test_adv_matmul_dtypes import mm_all_kernel

DT = host.DataType
GM, ND = host.TPosition.GM, host.CubeFormat.ND


def int8_host(shape, dim=1, bias=False, ta=False, tb=False, c=DT.DT_INT32, b=DT.DT_INT8,
              bias_dt=DT.DT_INT32):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(GM, ND, DT.DT_INT8, ta)
    t.set_b_type(GM, ND, b, tb)
    t.set_c_type(GM, ND, c)
    t.set_bias_type(GM, ND, bias_dt)
    t.set_dim(dim)
    t.set_shape(*shape)
    t.set_org_shape(*shape)
    t.enable_bias(bias)
    t.set_buffer_space(-1, -1, -1)
    return t


def get(t):
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


def assert_fits(t, soc, bias, l1=None):
    """Every buffer the Matmul carves from the tiling fits its level, in bytes (A/B int8)."""
    l1 = soc.l1_bytes if l1 is None else l1
    assert t.base_m % 16 == 0 and t.base_n % 16 == 0
    assert t.base_k % 32 == 0 and t.base_k >= 32                   # C0 = 32 int8 elements
    assert (t.step_k_a * t.base_k) % 32 == 0                       # each L1 K chunk too
    assert t.db_l0a * t.base_m * t.base_k <= soc.l0a_bytes
    assert t.db_l0b * t.base_k * t.base_n <= soc.l0b_bytes
    assert t.db_l0c * t.base_m * t.base_n * 4 <= soc.l0c_bytes     # int32 C
    assert t.share_l0c_size == t.base_m * t.base_n * 4
    assert t.depth_a1 * t.base_m * t.base_k + t.depth_b1 * t.base_k * t.base_n \
        + (t.base_n * 4 if bias else 0) == t.share_l1_size <= l1
    assert t.is_bias == bias and (not bias or t.base_n * 4 <= 1024)   # int32 bias table row


def test_int8_tiling_fields_by_hand():
    """int8 512 x 1024 x 512 on 8 cores: the same 2 x 4 blocks and 128 x 256 C tiles as fp16
    (L0C holds int32 as it holds float32), but base_k = 128, twice fp16's 64: the 128 x 128 A
    tile (16 KB) and 128 x 256 B tile (32 KB) fit L0A/L0B twice in bytes. L1 holds 2 x 5 K steps
    of 48 KB at most, balanced to 2 x 4 (the whole K of 512)."""
    soc = rt.get_soc()
    t = get(int8_host((512, 1024, 512), dim=8))
    expected = dict(
        used_core_num=8, m=512, n=1024, k_a=512, k_b=512, single_core_m=256, single_core_n=256,
        single_core_k=512, base_m=128, base_n=256, base_k=128, depth_a1=8, depth_b1=8,
        step_k_a=4, step_k_b=4, db_l0a=2, db_l0b=2, db_l0c=1,
        share_l1_size=2 * 4 * (128 + 256) * 128, share_l0c_size=128 * 256 * 4)
    assert {k: v for k, v in t._asdict().items() if k in expected} == expected
    assert 2 * 128 * 128 == soc.l0a_bytes // 2 and 2 * 128 * 256 == soc.l0b_bytes
    assert_fits(t, soc, False)


@pytest.mark.parametrize("shape", [(1, 1, 1), (40, 50, 67), (33, 47, 29), (4096, 4096, 4096),
                                   (16, 30720, 64), (3000, 17, 9000)])
@pytest.mark.parametrize("dim,bias", [(1, False), (24, True), (48, False)])
def test_int8_tiling_fits_the_soc(shape, dim, bias):
    soc = rt.get_soc()
    m, n, k = shape
    t = get(int8_host(shape, dim, bias))
    assert_fits(t, soc, bias)
    assert t.base_k <= -(-k // 32) * 32 and t.single_core_k == k
    assert t.used_core_num == -(-m // t.single_core_m) * -(-n // t.single_core_n) <= dim
    # bytes, not elements: with the same base_m x base_n, int8 K tiles go twice as deep as fp16
    f16 = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    for setter in (f16.set_a_type, f16.set_b_type):
        setter(GM, ND, DT.DT_FLOAT16)
    f16.set_c_type(GM, ND, DT.DT_FLOAT)
    f16.set_dim(dim)
    f16.set_shape(*shape)
    f16.enable_bias(bias)
    h = get(f16)
    assert (h.base_m, h.base_n) == (t.base_m, t.base_n)
    if k >= 2 * h.base_k:       # K is not what limits base_k
        assert t.base_k == 2 * h.base_k


def test_int8_tiling_honours_set_buffer_space_and_fix_split():
    soc = rt.get_soc()
    small = int8_host((256, 256, 2048), bias=True)
    small.set_buffer_space(96 * 1024, 64 * 1024)
    t = get(small)
    assert_fits(t, soc, True, l1=96 * 1024)
    assert t.base_m * t.base_n * 4 <= 64 * 1024
    # fixed base tiles: base_k 48 is aligned up to C0 = 32 (64), as SetFixSplit does
    fixed = int8_host((128, 128, 256))
    fixed.set_fix_split(64, 32, 48)
    t = get(fixed)
    assert (t.base_m, t.base_n, t.base_k) == (64, 32, 64)
    assert_fits(t, soc, False)
    tight = int8_host((128, 128, 256))
    tight.set_buffer_space(1024)
    with pytest.warns(RuntimeWarning, match=r"must fit L1, got .* for l1_size=1024"):
        assert tight.get_tiling(asc.adv.TCubeTiling()) == -1


@pytest.mark.parametrize("kw,msg", [
    (dict(b=DT.DT_FLOAT16), r"a and b must have the same dtype, got a=DT_INT8 b=DT_FLOAT16"),
    (dict(c=DT.DT_FLOAT), r"c must be DT_INT32 for DT_INT8 a and b \(quantised int8 C is not "
                          r"emulated\), DT_FLOAT for DT_FLOAT a and b, DT_FLOAT16, DT_BF16 or "
                          r"DT_FLOAT for 16-bit a and b, got a=DT_INT8 c=DT_FLOAT"),
    (dict(c=DT.DT_FLOAT16), r"c must be DT_INT32 .*got a=DT_INT8 c=DT_FLOAT16"),
    (dict(bias=True, bias_dt=DT.DT_FLOAT), r"bias must be DT_INT32 for DT_INT8 a and b, DT_FLOAT "
                                           r"otherwise, got a=DT_INT8 bias=DT_FLOAT"),
])
def test_int8_combinations_matmul_lacks_are_refused(kw, msg):
    t = int8_host((64, 64, 64), **kw)
    with pytest.raises(ValueError, match=r"MultiCoreMatmulTiling.get_tiling: " + msg):
        t.get_tiling(asc.adv.TCubeTiling())


def test_int32_c_and_bias_need_int8_operands():
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    for setter in (t.set_a_type, t.set_b_type):
        setter(GM, ND, DT.DT_FLOAT16)
    t.set_c_type(GM, ND, DT.DT_INT32)
    t.set_shape(64, 64, 64)
    with pytest.raises(ValueError, match=r"get_tiling: c must be DT_INT32 for DT_INT8 .*got "
                                         r"a=DT_FLOAT16 c=DT_INT32"):
        t.get_tiling(asc.adv.TCubeTiling())
    t.set_c_type(GM, ND, DT.DT_FLOAT)
    t.set_bias_type(GM, ND, DT.DT_INT32)
    t.enable_bias(True)
    with pytest.raises(ValueError, match=r"get_tiling: bias must be DT_INT32 for DT_INT8 a and b, "
                                         r"DT_FLOAT otherwise, got a=DT_FLOAT16 bias=DT_INT32"):
        t.get_tiling(asc.adv.TCubeTiling())
    with pytest.raises(ValueError, match=r"set_a_type: dtype must be one of DT_FLOAT, DT_FLOAT16, "
                                         r"DT_BF16, DT_INT8, got dtype=<DataType.DT_INT32: 3>"):
        t.set_a_type(GM, ND, DT.DT_INT32)
    with pytest.raises(ValueError, match=r"set_c_type: dtype must be one of DT_FLOAT, DT_FLOAT16, "
                                         r"DT_BF16, DT_INT32, got dtype=<DataType.DT_INT8: 2>"):
        t.set_c_type(GM, ND, DT.DT_INT8)


def test_int8_strip_rows_are_limited():
    """int8 B (not transposed) and A^T reach L1 as strips copied two GM rows at a time, so
    their rows are at most 32767 elements; B^T and A take the one-row copy (65535)."""
    with pytest.raises(ValueError, match=r"get_tiling: GM row lengths of int8 A\^T and B must "
                                         r"be <= 32767 elements .*got org n \(b not "
                                         r"transposed\)=40000"):
        int8_host((16, 40000, 64)).get_tiling(asc.adv.TCubeTiling())
    with pytest.raises(ValueError, match=r"got org m \(a transposed\)=33000"):
        int8_host((33000, 16, 64), ta=True).get_tiling(asc.adv.TCubeTiling())
    assert_fits(get(int8_host((16, 40000, 64), tb=True)), rt.get_soc(), False)
    assert_fits(get(int8_host((33000, 16, 64))), rt.get_soc(), False)


# ---- an int8 Matmul run with the host's tiling -----------------------------------------------

def operands(m, n, k, seed):
    r = np.random.default_rng(seed)
    return (r.integers(-128, 128, (m, k)).astype(np.int8),
            r.integers(-128, 128, (k, n)).astype(np.int8),
            r.integers(-2**20, 2**20, n).astype(np.int32))


def run(shape, ta, tb, use_bias, interpret, l1=-1, seed=0):
    m, n, k = shape
    a, b, bias = operands(m, n, k, seed)
    th = int8_host(shape, bias=bool(use_bias), ta=bool(ta), tb=bool(tb))
    th.set_buffer_space(l1)
    t = get(th)
    ga = np.ascontiguousarray(a.T) if ta else a
    gb = np.ascontiguousarray(b.T) if tb else b
    c = np.full((m, n), 7, np.int32)
    mm_all_kernel[1](ga, gb, c, bias, t, ta, tb, use_bias, interpret=interpret)
    ref = a.astype(np.int64) @ b.astype(np.int64) + (bias if use_bias else 0)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, ref)      # exact
    return t


@pytest.mark.parametrize("ta,tb,use_bias", [(0, 0, 1), (1, 1, 0), (1, 0, 1)])
def test_host_tiling_runs_ragged_int8(ta, tb, use_bias):
    """40 x 50 x 67: one 48 x 64 tile, base_k 96 (K padded to C0 = 32 in L0)."""
    t = run((40, 50, 67), ta, tb, use_bias, True, seed=ta + 2 * tb)
    assert (t.base_m, t.base_n, t.base_k) == (48, 64, 96)


def test_host_tiling_runs_tile_multiple_int8():
    """256 x 256 x 512 with L1 cut to 96 KB: 2 x 1 C tiles of 128 x 256, base_k 128, K through
    L1 in four chunks of one base_k step each (the whole tiling from the host)."""
    t = run((256, 256, 512), 0, 0, 1, True, l1=96 * 1024, seed=3)
    assert (t.base_m, t.base_n, t.base_k, t.step_k_a, t.depth_a1) == (128, 256, 128, 1, 1)
    assert 256 % t.base_m == 0 and 256 % t.base_n == 0 and 512 % t.base_k == 0


@pytest.mark.slow
def test_host_tiling_runs_int8_compiled():
    """The compiled int8 specialisation test_adv_matmul_dtypes compiles (mm_all_kernel with int8
    A/B, int32 C and bias): ragged, transposed, with bias."""
    t = run((40, 50, 67), 1, 1, 1, False, seed=5)
    assert t.base_k % 32 == 0
