"""The cube path's fractal transposes (`cubegemm.make_transpose`: load_data(if_transpose) and the
L0B repack of mmad) against numpy, and the mmad's GEMM on ZN (`gemm_zn`) against the repack then
`gemm_nz` (bit-identical). Transposes: every shape and element width they serve and a few
more; 512-bit blocks and larger go through the shuffle network (`cubegemm._network`), smaller
ones through one shuffle; both must be the plain transpose, at any offset."""
import numpy as np
import pytest
from numba import njit

from ascendc.lang.prims.cubegemm import _network, gemm_nz, gemm_zn, make_transpose, pack_zn

# (rows, cols, dtype): load_data's C0 x 16 fractals (f32, f16, int8 views), pack_zn's 16 x C0
# float32 fractals (f32 and converted 2-byte inputs), then other widths and sizes
SHAPES = [(8, 16, np.uint32), (16, 16, np.uint16), (32, 16, np.uint8), (16, 8, np.float32),
          (16, 16, np.float32), (16, 8, np.uint64), (4, 2, np.uint32), (2, 64, np.uint8),
          (64, 4, np.uint32), (16, 32, np.uint16)]
_KERNELS = {}


def _run(rows, cols):
    """A compiled loop applying the transpose to nf consecutive blocks, from offset so to do."""
    key = (rows, cols)
    if key not in _KERNELS:
        tr = make_transpose(rows, cols)

        @njit
        def run(t, do, s, so, nf):
            for f in range(nf):
                tr(t, do + f * rows * cols, s, so + f * rows * cols)
        _KERNELS[key] = run
    return _KERNELS[key]


@pytest.mark.parametrize("rows,cols,dtype", SHAPES)
def test_transpose_matches_numpy(rows, cols, dtype):
    rng = np.random.default_rng(rows * 100 + cols)
    n, nf = rows * cols, 5
    info = np.iinfo(dtype) if np.dtype(dtype).kind == "u" else None
    src = (rng.integers(0, info.max, n * nf + 3, dtype=dtype) if info is not None
           else rng.standard_normal(n * nf + 3).astype(dtype))
    out = np.full(n * nf + 7, 7, dtype)
    _run(rows, cols)(out, 4, src, 3, nf)       # unaligned offsets on both sides
    ref = src[3:3 + n * nf].reshape(nf, rows, cols).transpose(0, 2, 1).ravel()
    assert np.array_equal(out[4:4 + n * nf].view(np.uint8), ref.view(np.uint8))
    assert (out[:4] == 7).all() and (out[4 + n * nf:] == 7).all()     # nothing else written


@pytest.mark.parametrize("rows,cols,lanes", [(8, 16, 16), (16, 16, 32), (32, 16, 64),
                                             (16, 16, 16), (16, 8, 16), (64, 4, 16)])
def test_network_shape(rows, cols, lanes):
    """log2(registers) stages at most, each a two-source shuffle per register, and the stages
    applied to the element ids give the transpose."""
    n = rows * cols
    stages = _network(rows, cols, lanes)
    assert 1 <= len(stages) <= (n // lanes).bit_length() - 1
    regs = [list(range(r * lanes, (r + 1) * lanes)) for r in range(n // lanes)]
    for ops in stages:
        assert len(ops) == n // lanes
        regs = [[(regs[a] + regs[b])[q] for q in m] for a, b, m in ops]
    flat = np.array(regs).ravel()
    assert np.array_equal(flat, np.arange(n).reshape(rows, cols).T.ravel())


@njit
def _two_paths(c1, c2, a, b, m16, n16, k, c0, kb, init):
    gemm_nz(c1, a, pack_zn(b, n16 // 16, kb, c0), m16, n16, k, c0, kb * c0, init)
    gemm_zn(c2, a, b, m16, n16, k, c0, kb, init)


@pytest.mark.parametrize("m16,n16,k,c0", [(32, 48, 40, 8), (16, 16, 8, 8), (64, 80, 35, 16),
                                          (128, 128, 128, 8)])
@pytest.mark.parametrize("init", [True, False])
def test_gemm_zn_is_pack_zn_then_gemm_nz(m16, n16, k, c0, init):
    """The mmad's GEMM on L0B's ZN (two strips repacked at a time) is bit-identical to the
    whole repack then gemm_nz, an odd strip count and accumulation included."""
    rng = np.random.default_rng(m16 + n16 + k)
    kb = -(-k // c0)
    a = rng.standard_normal(m16 * kb * c0).astype(np.float32)
    b = rng.standard_normal(kb * c0 * n16).astype(np.float32)
    c1 = rng.standard_normal(m16 * n16).astype(np.float32)
    c2 = c1.copy()
    _two_paths(c1, c2, a, b, m16, n16, k, c0, kb, init)
    assert np.array_equal(c1.view(np.uint32), c2.view(np.uint32))
    # and it is A @ B: B's ZN fractal (kb, nb) is the 16 x C0 block of B^T
    bt = b.reshape(kb, n16 // 16, 16, c0).transpose(1, 2, 0, 3).reshape(n16, kb * c0)
    ad = a.reshape(m16 // 16, kb, 16, c0).transpose(0, 2, 1, 3).reshape(m16, kb * c0)
    ref = ad[:, :k].astype(np.float64) @ bt[:, :k].T.astype(np.float64)
    got = c2.reshape(n16 // 16, m16, 16).transpose(1, 0, 2).reshape(m16, n16)
    if init:
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
