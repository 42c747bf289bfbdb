"""Cube-path primitives (ascendc/lang/prims/cube.py): load_data, mmad, mmad_bias, fixpipe, and the
full GM -> L1 -> L0A/L0B -> L0C -> GM round trip, from Python and from @njit code, against numpy."""
import ml_dtypes
import numpy as np
import pytest

from ascendc.lang.core import BT, L0A, L0B, L0C, L1, UB
from ascendc.lang.enums import FixpipeConfig, QuantModes
from ascendc.lang.errors import GMWriteError, KernelError
from ascendc.lang.params import FixpipeParamsV220, LoadData2DParams, MmadParams, Nd2NzParams
from ascendc.lang.prims.cube import fixpipe, load_data, mmad, mmad_bias
from ascendc.lang.prims.datacopy import data_copy

from prim_core import Core, njit_cached

BF16 = np.dtype(ml_dtypes.bfloat16)
HOW = ["py", "njit"]


def cases(py, nj):
    """(how, dtype) params: every dtype in `py` from Python, those in `nj` also from njit code."""
    return ([pytest.param("py", d, id=f"py-{np.dtype(d)}") for d in py]
            + [pytest.param("njit", d, id=f"njit-{np.dtype(d)}") for d in nj])


@njit_cached
def nj_load(ctx, dst, src, p):
    load_data(ctx, dst, src, p)


@njit_cached
def nj_mmad(ctx, dst, a, b, p):
    mmad(ctx, dst, a, b, p)


@njit_cached
def nj_mmad_bias(ctx, dst, a, b, bias, p):
    mmad_bias(ctx, dst, a, b, bias, p)


@njit_cached
def nj_fixpipe(ctx, dst, src, p, cfg):
    fixpipe(ctx, dst, src, p, cfg)


def call(how, py, nj, *args):
    (py if how == "py" else nj)(*args)


# ---- numpy references of the fractal layouts ---------------------------------------------------

def c0_of(dtype):
    return 32 // np.dtype(dtype).itemsize


def pad2(x, r, c):
    out = np.zeros((r, c), x.dtype)
    out[:x.shape[0], :x.shape[1]] = x
    return out


def zz(a, c0):
    """A (m x k) -> L0A ZZ."""
    m16, kp = -(-a.shape[0] // 16) * 16, -(-a.shape[1] // c0) * c0
    return pad2(a, m16, kp).reshape(m16 // 16, 16, kp // c0, c0).transpose(0, 2, 1, 3).ravel()


def zn(b, c0):
    """B (k x n) -> L0B ZN: fractal (k//C0, n//16) holds B^T's 16 x C0 block."""
    kp, n16 = -(-b.shape[0] // c0) * c0, -(-b.shape[1] // 16) * 16
    bt = pad2(b, kp, n16).T
    return bt.reshape(n16 // 16, 16, kp // c0, c0).transpose(2, 0, 1, 3).ravel()


def nz_c(c):
    """C (m x n) -> L0C NZ (16-column strips of ceil16(m) rows)."""
    m16, n16 = -(-c.shape[0] // 16) * 16, -(-c.shape[1] // 16) * 16
    return pad2(c, m16, n16).reshape(m16, n16 // 16, 16).transpose(1, 0, 2).ravel()


def rand(dtype, shape, seed=0):
    r = np.random.default_rng(seed)
    if np.dtype(dtype) == np.int8:
        return r.integers(-128, 128, shape).astype(np.int8)
    return r.standard_normal(shape).astype(dtype)


# ---- load_data ---------------------------------------------------------------------------------

@pytest.mark.parametrize("how,dtype", cases([np.float32, np.float16, np.int8], [np.float32]))
def test_load_data_fractal_placement(how, dtype):
    c = Core()
    fe = 512 // np.dtype(dtype).itemsize
    x = rand(dtype, 10 * fe)
    l1 = c.local(L1, dtype, 10 * fe)
    c.logical(l1)[:] = x
    l0a = c.local(L0A, dtype, 8 * fe, fill=0)
    call(how, load_data, nj_load, c.ctx, l0a, l1, LoadData2DParams(1, 3, 3, 0, 2, False, 0))
    ref = np.zeros(8 * fe, dtype)
    for i in range(3):
        ref[i * 3 * fe:(i * 3 + 1) * fe] = x[(1 + 3 * i) * fe:(2 + 3 * i) * fe]
    assert np.array_equal(c.logical(l0a), ref)
    assert c.counters()["mte1_bytes"] == 3 * 512


@pytest.mark.parametrize("how,dtype", cases([np.float32, np.float16, BF16, np.int8],
                                            [np.float16]))
def test_load_data_transpose_c0x16_to_16xc0(how, dtype):
    c = Core()
    c0 = c0_of(dtype)
    x = rand(dtype, (2, c0, 16))                  # two source fractals, C0 x 16 row-major
    l1 = c.local(L1, dtype, 2 * 16 * c0)
    c.logical(l1)[:] = x.ravel()
    l0b = c.local(L0B, dtype, 2 * 16 * c0, fill=0)
    call(how, load_data, nj_load, c.ctx, l0b, l1, LoadData2DParams(0, 2, 1, 0, 0, True, 0))
    assert np.array_equal(c.logical(l0b).reshape(2, 16, c0), x.transpose(0, 2, 1))


@pytest.mark.parametrize("how", HOW)
def test_load_data_from_gm_and_errors(how):
    c = Core()
    x = rand(np.float16, 4 * 256)
    g = c.gm(x)
    l0b = c.local(L0B, np.float16, 4 * 256)
    call(how, load_data, nj_load, c.ctx, l0b, g, LoadData2DParams(0, 4, 1, 0, 0, False, 0))
    assert np.array_equal(c.logical(l0b), x)
    assert c.counters()["mte2_bytes"] == 2048
    l1 = c.local(L1, np.float16, 4 * 256)
    for dst, src, msg in [
        (c.local(L0C, np.float16, 256), l1,
         "path must be one of L1->L0A, L1->L0B, GM->L1, GM->L0A, GM->L0B, got L1->L0C"),
        (c.local(L0A, np.float16, 256), c.local(UB, np.float16, 256), "got UB->L0A"),
        (c.local(L0A, np.float16, 256, off=32), l1, "dst address in L0A must be 512-byte aligned, "
                                                    "got byte offset=32")]:
        with pytest.raises(KernelError, match="load_data: .*" + msg):
            call(how, load_data, nj_load, c.ctx, dst, src,
                 LoadData2DParams(0, 1, 0, 0, 0, False, 0))
    with pytest.raises(KernelError, match="load_data: repeat_times must be in \\[0, 255\\], got "
                                          "repeat_times=256"):
        call(how, load_data, nj_load, c.ctx, l0b, l1, LoadData2DParams(0, 256, 0, 0, 0, False, 0))
    with pytest.raises(KernelError,
                       match="load_data: src must hold count elements, got count=1280"):
        call(how, load_data, nj_load, c.ctx, l0b, l1, LoadData2DParams(2, 2, 2, 0, 0, False, 0))


# ---- mmad --------------------------------------------------------------------------------------

MM_TYPES = [(np.float32, np.float32), (np.float16, np.float32), (BF16, np.float32),
            (np.int8, np.int32)]


def load_operands(c, a, b, dtype):
    c0 = c0_of(dtype)
    za, zb = zz(a, c0), zn(b, c0)
    l0a = c.local(L0A, dtype, za.size)
    l0b = c.local(L0B, dtype, zb.size)
    c.logical(l0a)[:] = za
    c.logical(l0b)[:] = zb
    return l0a, l0b


def ref_mm(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("dtype,acc", MM_TYPES, ids=lambda t: str(np.dtype(t)))
@pytest.mark.parametrize("how,m,n,k", [("py", 33, 47, 29), ("py", 64, 32, 48), ("py", 1, 16, 8),
                                       ("njit", 33, 47, 29)])
def test_mmad_init_and_accumulate(how, dtype, acc, m, n, k):
    c = Core()
    a, b = rand(dtype, (m, k), 1), rand(dtype, (k, n), 2)
    l0a, l0b = load_operands(c, a, b, dtype)
    m16, n16 = -(-m // 16) * 16, -(-n // 16) * 16
    l0c = c.local(L0C, acc, m16 * n16, fill=7)
    call(how, mmad, nj_mmad, c.ctx, l0c, l0a, l0b, MmadParams(m=m, n=n, k=k))
    got = l0c.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16)[:m, :n]
    tol = dict(rtol=1e-5, atol=1e-4) if acc == np.float32 else dict(rtol=0, atol=0)
    np.testing.assert_allclose(got, ref_mm(a, b), **tol)
    call(how, mmad, nj_mmad, c.ctx, l0c, l0a, l0b,
         MmadParams(m=m, n=n, k=k, cmatrix_init_val=False))
    got = l0c.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16)[:m, :n]
    np.testing.assert_allclose(got, 2 * ref_mm(a, b), **tol)
    cnt = c.counters()
    fp32 = np.dtype(dtype) == np.float32
    assert cnt["cube_macs_fp32" if fp32 else "cube_macs"] == 2 * m * n * k
    assert cnt["cube_macs" if fp32 else "cube_macs_fp32"] == 0


@pytest.mark.parametrize("how", HOW)
def test_mmad_nz_layout_and_bias(how):
    c = Core()
    m, n, k = 32, 48, 16
    a, b = rand(np.float16, (m, k), 3), rand(np.float16, (k, n), 4)
    l0a, l0b = load_operands(c, a, b, np.float16)
    l0c = c.local(L0C, np.float32, m * n, fill=5)
    bias = c.local(BT, np.float32, n)
    bias[:] = np.arange(n, dtype=np.float32)
    call(how, mmad_bias, nj_mmad_bias, c.ctx, l0c, l0a, l0b, bias,
         MmadParams(m=m, n=n, k=k, cmatrix_init_val=False))   # bias path always starts from bias
    np.testing.assert_allclose(l0c, nz_c(ref_mm(a, b) + np.arange(n)), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("how", HOW)
def test_mmad_errors(how):
    c = Core()
    a = c.local(L0A, np.float16, 256)
    b = c.local(L0B, np.float16, 256)
    o = c.local(L0C, np.float32, 256)
    p = MmadParams(m=16, n=16, k=16)
    cases = [
        ((o, b, b), "mmad: operands must be dst in L0C \\(CO1\\), fm in L0A \\(A2\\), filter in "
                    "L0B \\(B2\\), got dst=L0C fm=L0B filter=L0B"),
        ((c.local(UB, np.float32, 256), a, b), "got dst=UB"),
        ((c.local(L0C, np.float16, 256), a, b), "mmad: dtypes must be f16/bf16/f32 -> float32 or "
                                                "int8 -> int32, got dst=float16 fm=float16 "
                                                "filter=float16"),
        ((o, c.local(L0A, np.float16, 256, off=64), b), "fm address in L0A must be 512-byte "
                                                        "aligned, got byte offset=64"),
    ]
    for (d, x, y), msg in cases:
        with pytest.raises(KernelError, match=msg):
            call(how, mmad, nj_mmad, c.ctx, d, x, y, p)
    with pytest.raises(KernelError, match="mmad: m must be in \\[0, 4095\\], got m=4096"):
        call(how, mmad, nj_mmad, c.ctx, o, a, b, MmadParams(m=4096, n=16, k=16))
    with pytest.raises(KernelError, match="mmad: fm must hold count elements, got count=512"):
        call(how, mmad, nj_mmad, c.ctx, o, a, b, MmadParams(m=16, n=16, k=32))
    with pytest.raises(KernelError, match="mmad: bias must be in BT \\(C2\\), got bias=UB"):
        call(how, mmad_bias, nj_mmad_bias, c.ctx, o, a, b, c.local(UB, np.float32, 16), p)


# ---- fixpipe -----------------------------------------------------------------------------------

@pytest.mark.parametrize("how,dst_dtype,quant", [
    ("py", np.float32, 0), ("py", np.float16, 1), ("py", np.float16, 0), ("py", BF16, 2),
    ("njit", np.float32, 0), ("njit", np.float16, 1)])
def test_fixpipe_nz_to_nd_quant_relu(how, dst_dtype, quant):
    c = Core()
    m, n = 35, 40
    m16, n16 = 48, 48
    x = rand(np.float32, (m, n), 5) * 100
    l0c = c.local(L0C, np.float32, m16 * n16)
    l0c[:] = nz_c(x)
    out = c.gm(np.full((m, n + 3), 9, dst_dtype))
    for relu in (False, True):
        call(how, fixpipe, nj_fixpipe, c.ctx, out, l0c,
             FixpipeParamsV220(n, m, m16, n + 3, quant, relu_en=relu), 0)
        ref = np.maximum(x, 0) if relu else x
        got = c.logical(out).reshape(m, n + 3)
        assert np.array_equal(got[:, :n], ref.astype(dst_dtype))    # RNE, like numpy's cast
        assert (got[:, n:] == 9).all()
    assert c.counters()["fix_bytes"] == 2 * m * n * np.dtype(dst_dtype).itemsize


@pytest.mark.parametrize("how", HOW)
def test_fixpipe_int32_nd_num_and_cfg_nz(how):
    c = Core()
    x = rand(np.int8, (2, 16, 32)).astype(np.int32)
    l0c = c.local(L0C, np.int32, 2 * 512)
    l0c[:] = np.concatenate([nz_c(x[0]), nz_c(x[1])])
    out = c.gm(np.zeros((2, 16, 32), np.int32))
    # two ND matrices: src_nd_stride in 1 KB units (512 int32 = 2 KB), dst_nd_stride in elements
    call(how, fixpipe, nj_fixpipe, c.ctx, out, l0c,
         FixpipeParamsV220(32, 16, 16, 32, 0, 0, 2, 2, 512), 0)
    assert np.array_equal(out.reshape(2, 16, 32), x)
    nz = c.gm(np.zeros(512, np.int32))
    call(how, fixpipe, nj_fixpipe, c.ctx, nz, l0c, FixpipeParamsV220(32, 16, 16, 16),
         int(FixpipeConfig.cfg_nz))
    assert np.array_equal(nz, l0c[:512])


@pytest.mark.parametrize("how", HOW)
def test_fixpipe_errors(how):
    c = Core()
    l0c = c.local(L0C, np.float32, 1024)
    out = c.gm(np.zeros(16 * 16, np.float32))
    p = FixpipeParamsV220(16, 16, 16, 16)
    cases = [
        (out, c.local(L0C, np.float32, 256, off=32), p, "src address in L0C must be 64-byte "
                                                        "aligned, got byte offset=32"),
        (out, c.local(UB, np.float32, 256), p, "path must be L0C->GM \\(or L0C->L1\\), got UB->GM"),
        (out, l0c, FixpipeParamsV220(32, 16, 8, 32), "src_stride must be the L0C strip height, a "
                                                      "multiple of 16 rows"),
        (out, l0c, FixpipeParamsV220(16, 16, 16, 8), "dst_stride must be >= n_size \\(elements "
                                                      "per ND row\\), got dst_stride=8"),
        (c.gm(np.zeros(256, np.float16)), l0c, FixpipeParamsV220(16, 16, 16, 16, 2),
         "quant_pre and dtypes must be one of .*got src=float32 dst=float16 quant_pre=2"),
        (out, l0c, FixpipeParamsV220(5000, 16, 16, 5000), "n_size must be in \\[0, 4095\\]"),
    ]
    for dst, src, prm, msg in cases:
        with pytest.raises(KernelError, match="fixpipe: .*" + msg):
            call(how, fixpipe, nj_fixpipe, c.ctx, dst, src, prm, 0)
    with pytest.raises(GMWriteError, match=r"fixpipe: GM write must stay inside argument #0 "
                                           r"\(256 elements\), got elements \[0, 272\)"):
        call(how, fixpipe, nj_fixpipe, c.ctx, out, l0c, FixpipeParamsV220(16, 17, 32, 16), 0)


# ---- full round trip: GM -> Nd2Nz L1 -> load_data L0A/L0B -> mmad -> fixpipe GM -----------------

@njit_cached
def cube_pipeline(ctx, a1, b1, a2, b2, c1, ag, bg, cg, m, n, k):
    """C = A @ B through the cube path; A, B in L1 as NZ with zero-filled padding (a1, b1 zeroed
    by the caller). B goes to L1 as C0 x 16 fractals (16-column strips, row-major), which the
    transposing load_data turns into ZN for every dtype."""
    c0 = 32 // a1.itemsize
    m16 = (m + 15) // 16 * 16
    n16 = (n + 15) // 16 * 16
    kp = (k + c0 - 1) // c0 * c0
    kb = kp // c0
    data_copy(ctx, a1, ag, Nd2NzParams(1, m, k, 0, k, m16, 1, 0))
    full = n // 16
    if full > 0:
        data_copy(ctx, b1, bg, Nd2NzParams(full, k, 16, 16, n, 1, 16 // c0, kp * 16))
    if n % 16:
        data_copy(ctx, b1[full * kp * 16:], bg[full * 16:],
                  Nd2NzParams(1, k, n % 16, 0, n, 1, 16 // c0, 0))
    for r in range(m16 // 16):                 # NZ -> ZZ, one 16-row block per call
        load_data(ctx, a2[r * 16 * kp:], a1[r * 16 * c0:],
                  LoadData2DParams(0, kb, m16 // 16, 0, 0, False, 0))
    for q in range(kb):                        # one ZN fractal row (k-block q) per call
        load_data(ctx, b2[q * c0 * n16:], b1[q * c0 * 16:],
                  LoadData2DParams(0, n16 // 16, kp // c0, 0, 0, True, 0))
    # params built in njit code take every field positionally (as the compiler emits them)
    mmad(ctx, c1, a2, b2, MmadParams(m, n, k, False, 0, False, False, False, 0, False, False, True))
    fixpipe(ctx, cg, c1, FixpipeParamsV220(n, m, m16, n, 0, 0, 1, 0, 0, False, 0, False), 0)


def run_pipeline(how, dtype, m, n, k):
    c = Core()
    a, b = rand(dtype, (m, k), 6), rand(dtype, (k, n), 7)
    ag, bg = c.gm(a), c.gm(b)
    cg = c.gm(np.full((m, n), np.nan, np.float32))
    c0 = c0_of(dtype)
    m16, n16, kp = -(-m // 16) * 16, -(-n // 16) * 16, -(-k // c0) * c0
    a1 = c.local(L1, dtype, m16 * kp, fill=0)
    b1 = c.local(L1, dtype, kp * n16, off=256 * 1024, fill=0)
    a2 = c.local(L0A, dtype, m16 * kp, fill=np.nan)
    b2 = c.local(L0B, dtype, kp * n16, fill=np.nan)
    c1 = c.local(L0C, np.float32, m16 * n16, fill=np.nan)
    args = (c.ctx, a1, b1, a2, b2, c1, ag, bg, cg, m, n, k)
    if how == "njit":
        cube_pipeline(*args)
    else:
        cube_pipeline.py_func(*args)          # the same code run by the Python dispatchers
    assert np.array_equal(c.logical(a2), zz(a, c0))
    assert np.array_equal(c.logical(b2), zn(b, c0))
    ref = ref_mm(a, b)
    tol = 1e-5 * np.sqrt(k) * np.abs(ref).max()
    np.testing.assert_allclose(cg.reshape(m, n), ref, rtol=1e-5, atol=tol)
    return c


@pytest.mark.parametrize("how,dtype", cases([np.float32, np.float16, BF16],
                                            [np.float32, np.float16]))
@pytest.mark.parametrize("m,n,k", [(33, 47, 29), (128, 64, 96), (16, 16, 16)])
def test_cube_round_trip(how, dtype, m, n, k):
    c = run_pipeline(how, dtype, m, n, k)
    cnt = c.counters()
    assert cnt["cube_macs"] + cnt["cube_macs_fp32"] == m * n * k
    assert cnt["fix_bytes"] == m * n * 4
    assert cnt["mte2_bytes"] == (m * k + k * n) * np.dtype(dtype).itemsize


def test_pyasc_example_3b_layout_calls():
    """pyasc-api.md section 3(b), f16, M = N = K = 32: the example's exact parameters."""
    c = Core()
    M = N = K = 32
    a, b = rand(np.float16, (M, K), 8), rand(np.float16, (K, N), 9)
    ag, bg, cg = c.gm(a), c.gm(b), c.gm(np.zeros((M, N), np.float32))
    a1 = c.local(L1, np.float16, M * K)
    b1 = c.local(L1, np.float16, K * N, off=65536)
    a2 = c.local(L0A, np.float16, M * K)
    b2 = c.local(L0B, np.float16, K * N)
    cl = c.local(L0C, np.float32, M * N)
    data_copy(c.ctx, a1, ag, Nd2NzParams(1, M, K, 0, K, M, 1, 0))
    data_copy(c.ctx, b1, bg, Nd2NzParams(1, K, N, 0, N, K, 1, 0))
    for r in range(M // 16):
        load_data(c.ctx, a2[r * 16 * K:], a1[r * 256:],
                  LoadData2DParams(repeat_times=K // 16, src_stride=M // 16))
    for kb in range(K // 16):
        load_data(c.ctx, b2[kb * 16 * N:], b1[kb * 256:],
                  LoadData2DParams(repeat_times=N // 16, src_stride=K // 16, if_transpose=True))
    mmad(c.ctx, cl, a2, b2, MmadParams(m=M, n=N, k=K, unit_flag=0, cmatrix_source=False,
                                       cmatrix_init_val=True))
    fixpipe(c.ctx, cg, cl, FixpipeParamsV220(N, M, M, N), FixpipeConfig.cfg_row_major)
    np.testing.assert_allclose(cg.reshape(M, N), ref_mm(a, b), rtol=1e-5, atol=1e-4)


def test_quant_enum_values_in_params():
    """IntEnum members inside params (as the interpreter may pass them) work like ints."""
    c = Core()
    l0c = c.local(L0C, np.float32, 256)
    l0c[:] = np.arange(256, dtype=np.float32)
    out = c.gm(np.zeros(256, np.float16))
    fixpipe(c.ctx, out, l0c, FixpipeParamsV220(16, 16, 16, 16, QuantModes.F322F16), 0)
    assert np.array_equal(c.logical(out), np.arange(256, dtype=np.float16))
