"""asc.adv.Matmul with CubeFormat.NZ operands: A and/or B given in GM in the fractal layout
(ceil(cols / C0) strips of ceil16(rows) rows of C0 elements), as Ascend C's MatmulType with
CubeFormat::NZ takes them; against numpy, the NZ data made from ND in the test."""
import ml_dtypes
import numpy as np
import pytest

import ascendc as asc
import rt
from ascendc import host
from kernels.tolerances import assert_close

DT = host.DataType


def nd_to_nz(x):
    """ND (rows x cols) -> NZ: strips of C0 = 32 B columns, rows padded to 16, zero padding."""
    rows, cols = x.shape
    c0 = 32 // x.dtype.itemsize
    r16, cp = -(-rows // 16) * 16, -(-cols // c0) * c0
    pad = np.zeros((r16, cp), x.dtype)
    pad[:rows, :cols] = x
    return np.ascontiguousarray(pad.reshape(r16, cp // c0, c0).transpose(1, 0, 2)).ravel()


@asc.jit
def nz_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                     tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, bg.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    mm.set_tail(tiling.m, tiling.n, tiling.k_a)
    mm.iterate_all(cg)
    mm.end()


@asc.jit
def nz_a_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                       tiling: asc.adv.TCubeTiling, tb: int):
    ag = asc.GlobalTensor()
    bg = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    bg.set_global_buffer(b)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype, True),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg, tb)
    mm.set_tail(tiling.m, tiling.n, tiling.k_a)
    mm.iterate_all(cg)
    mm.end()


@asc.jit
def nz_transposed_kernel(a: asc.GlobalAddress, c: asc.GlobalAddress,
                         tiling: asc.adv.TCubeTiling):
    ag = asc.GlobalTensor()
    cg = asc.GlobalTensor()
    ag.set_global_buffer(a)
    cg.set_global_buffer(c)
    pipe = asc.TPipe()
    mm = asc.adv.Matmul(asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, ag.dtype, True),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.NZ, ag.dtype),
                        asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, mm, tiling)
    mm.set_tensor_a(ag, True)
    mm.set_tensor_b(ag)
    mm.set_tail(tiling.m, tiling.n, tiling.k_a)
    mm.iterate_all(cg)
    mm.end()


def make_tiling(m, n, k, dt, a_fmt=host.CubeFormat.NZ, b_fmt=host.CubeFormat.NZ, tb=False,
                base=None):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, a_fmt, dt)
    t.set_b_type(host.TPosition.GM, b_fmt, dt, tb)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, DT.DT_FLOAT)
    t.set_dim(1)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.set_buffer_space(-1, -1, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    if base is not None:        # small tiles: several M/N tiles and K chunks in one core
        tiling.base_m, tiling.base_n, tiling.base_k = base
        tiling.step_k_a = tiling.step_k_b = 1
    return tiling


NP = {DT.DT_FLOAT16: np.float16, DT.DT_FLOAT: np.float32, DT.DT_BF16: ml_dtypes.bfloat16}


@pytest.mark.parametrize("m, n, k, dt, base", [
    (64, 64, 64, DT.DT_FLOAT16, None),
    (64, 64, 64, DT.DT_FLOAT16, (32, 32, 32)),
    (37, 45, 50, DT.DT_FLOAT16, (32, 32, 32)),
    (37, 45, 50, DT.DT_BF16, (32, 32, 32)),
    (48, 32, 40, DT.DT_FLOAT, (16, 16, 16)),
    (29, 23, 19, DT.DT_FLOAT, None),
])
def test_nz_a_and_b(mode, m, n, k, dt, base):
    rng = np.random.default_rng(m * 1000 + n + k)
    a = rng.uniform(-1, 1, (m, k)).astype(NP[dt])
    b = rng.uniform(-1, 1, (k, n)).astype(NP[dt])
    c = np.zeros((m, n), np.float32)
    nz_matmul_kernel[1](nd_to_nz(a), nd_to_nz(b), c, make_tiling(m, n, k, dt, base=base),
                        interpret=mode == "interpret")
    assert_close(c, a.astype(np.float32) @ b.astype(np.float32), "float32")


@pytest.mark.parametrize("tb", [False, True])
def test_nz_a_with_nd_b(mode, tb):
    m, n, k = 40, 48, 72
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    tiling = make_tiling(m, n, k, DT.DT_FLOAT16, b_fmt=host.CubeFormat.ND, tb=tb,
                         base=(32, 32, 32))
    nz_a_matmul_kernel[1](nd_to_nz(a), np.ascontiguousarray(b.T) if tb else b, c, tiling, tb,
                          interpret=mode == "interpret")
    assert_close(c, a.astype(np.float32) @ b.astype(np.float32), "float32")


def test_transposed_nz_is_refused(mode):
    a = np.zeros(16 * 16, np.float16)
    c = np.zeros((16, 16), np.float32)
    with pytest.raises(rt.AclError, match=r"asc.adv.Matmul.iterate_all: transpose must be False "
                                          r"for a CubeFormat.NZ operand \(transposed NZ operands "
                                          r"are not emulated\), got transpose=True for a"):
        nz_transposed_kernel[1](a, c, make_tiling(16, 16, 16, DT.DT_FLOAT16),
                                interpret=mode == "interpret")
