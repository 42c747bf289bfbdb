"""The float32 mmad is position-independent, as the cube is: identical inputs give bit-identical
L0C cells wherever they sit (column block, row block, width of the call). The ONNX light models
(constant weights, logits ~1e19, a softmax that needs them bit-identical) depend on it; BLAS
did not give it (its first column block rounds differently from the rest). Also the cube GEMM's
accuracy against float64 over the shapes the kernels use, and kernels.matmul end to end."""
import ml_dtypes
import numpy as np
import pytest

from ascendc.lang.core import L0A, L0B, L0C
from ascendc.lang.params import MmadParams
from ascendc.lang.prims.cube import mmad
from kernels.matmul import matmul

from prim_core import Core, njit_cached

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_INPUTS = [np.float32, np.float16, BF16]


@njit_cached
def nj_mmad(ctx, dst, a, b, p):
    mmad(ctx, dst, a, b, p)


def zz(a, c0):
    """A (m x k, m and k padded by the caller) -> L0A ZZ."""
    m16, kp = a.shape
    return a.reshape(m16 // 16, 16, kp // c0, c0).transpose(0, 2, 1, 3).ravel()


def zn(b, c0):
    """B (k x n, padded) -> L0B ZN: fractal (k//C0, n//16) holds B^T's 16 x C0 block."""
    kp, n16 = b.shape
    return b.T.reshape(n16 // 16, 16, kp // c0, c0).transpose(2, 0, 1, 3).ravel()


def run_mmad(how, dtype, a, b, m, n, k, init=True, start=None):
    """mmad of the m x k / k x n corners of padded a, b; returns L0C as a dense m16 x n16."""
    c = Core()
    c0 = 32 // np.dtype(dtype).itemsize
    za, zb = zz(a.astype(dtype), c0), zn(b.astype(dtype), c0)
    l0a, l0b = c.local(L0A, dtype, za.size), c.local(L0B, dtype, zb.size)
    c.logical(l0a)[:] = za
    c.logical(l0b)[:] = zb
    m16, n16 = -(-m // 16) * 16, -(-n // 16) * 16
    l0c = c.local(L0C, np.float32, m16 * n16, fill=0)
    if start is not None:
        l0c[:] = start.reshape(m16, n16 // 16, 16).transpose(1, 0, 2).ravel()
    p = MmadParams(m=m, n=n, k=k, cmatrix_init_val=init)
    (mmad if how == "py" else nj_mmad)(c.ctx, l0c, l0a, l0b, p)
    return l0c.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16).copy()


def padded(rng, rows, cols, rp, cp, scale=1.0):
    x = np.zeros((rp, cp), np.float32)
    x[:rows, :cols] = rng.standard_normal((rows, cols)).astype(np.float32) * scale
    return x


@pytest.mark.parametrize("how", ["py", "njit"])
@pytest.mark.parametrize("dtype", FLOAT_INPUTS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("m,n,k", [(16, 128, 128), (3, 40, 200), (37, 96, 61)])
def test_identical_columns_and_rows_are_bit_identical(how, dtype, m, n, k):
    rng = np.random.default_rng(0)
    c0 = 32 // np.dtype(dtype).itemsize
    kp, m16, n16 = -(-k // c0) * c0, -(-m // 16) * 16, -(-n // 16) * 16
    a = padded(rng, m, k, m16, kp, 1e3)
    a[m // 2] = a[0]                                          # two identical rows
    col = rng.standard_normal(k).astype(np.float32) * 1e3
    b = np.zeros((kp, n16), np.float32)
    b[:k, :n] = col[:, None]                                  # every column the same
    for init in (True, False):
        start = np.full((m16, n16), 12345.678, np.float32)
        got = run_mmad(how, dtype, a, b, m, n, k, init, start)[:m, :n]
        assert (got == got[:, :1]).all(), f"columns differ (init={init})"
        assert (got[m // 2] == got[0]).all(), f"rows differ (init={init})"
        ref = a[:m, :k].astype(dtype).astype(np.float64) @ \
            b[:k, :n].astype(dtype).astype(np.float64) + (0 if init else 12345.678)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("dtype", FLOAT_INPUTS, ids=lambda t: np.dtype(t).name)
def test_cell_does_not_depend_on_call_width_or_block(dtype):
    """A tail tile (narrow mmad) and a full one give the same bits for the same column; the same
    16-column block placed in another strip gives the same bits too."""
    rng = np.random.default_rng(1)
    k = 160
    a = padded(rng, 64, k, 64, k)
    b = padded(rng, k, 64, k, 64)                 # fits L0B (64 KB) in float32
    b[:, 32:48] = b[:, 0:16]
    wide = run_mmad("py", dtype, a, b, 64, 64, k)
    narrow = run_mmad("py", dtype, a, b[:, :16].copy(), 64, 16, k)
    assert np.array_equal(wide[:, :16], narrow)
    assert np.array_equal(wide[:, 32:48], wide[:, :16])


@pytest.mark.parametrize("interpret", [False, True], ids=["compiled", "interpret"])
def test_matmul_constant_weights_give_equal_logits(interpret):
    """What the ONNX light models' final Gemm does: 1 x K activations against constant weights;
    every output column must be bit-identical (tail tile, tail mmad and first block alike)."""
    rng = np.random.default_rng(2)
    x = (rng.random((2, 4096), np.float32) * 1e4).astype(np.float32)
    w = np.full((4096, 1000), 0.37, np.float32)
    y = matmul(x, w, interpret=interpret)
    assert (y == y[:, :1]).all()
    np.testing.assert_allclose(y[:, 0], x.astype(np.float64).sum(1) * np.float32(0.37),
                               rtol=1e-5)
