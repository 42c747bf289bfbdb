import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.matmul import MatmulTiling, matmul, matmul_reference, matmul_tiling
from kernels.tolerances import assert_close

SHAPES = [(33, 47, 29), (1, 1, 1), (130, 17, 300),        # ragged (M, N, K)
          (128, 128, 128), (256, 128, 64)]                  # tile multiples


def _inputs(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), np.float32).astype(dtype)
    b = rng.standard_normal((k, n), np.float32).astype(dtype)
    return a, b


def _check(c, a, b):
    """float32 output against the float64 reference; the tolerance grows with K (the length of
    each float32 accumulation)."""
    assert c.dtype == np.float32 and c.shape == (a.shape[0], b.shape[1])
    assert_close(c, matmul_reference(a, b), np.float32, scale=max(1.0, a.shape[1] / 32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_reference(interpret, shape, dtype):
    a, b = _inputs(*shape, dtype)
    _check(matmul(a, b, interpret=interpret), a, b)


def test_matmul_bfloat16_interpreted():
    a, b = _inputs(70, 40, 50, ml_dtypes.bfloat16)
    _check(matmul(a, b, interpret=True), a, b)


def test_matmul_small_tiles_many_blocks_interpreted():
    """Tiles much smaller than the shape: many output tiles over more blocks than tiles per
    block, several K chunks with a ragged tail, several L0B parts per chunk, double-buffered
    L0A/L0B, ragged edges in M, N and K."""
    a, b = _inputs(70, 100, 90, np.float32, seed=1)
    t = MatmulTiling(70, 100, 90, "float32", base_m=32, base_n=64, base_k=32, l0_n=32,
                     block_dim=5, depth_l1=2, depth_l0a=2, depth_l0b=2)
    _check(matmul(a, b, tiling=t, interpret=True), a, b)
    a16, b16 = _inputs(40, 50, 70, np.float16, seed=2)
    t16 = MatmulTiling(40, 50, 70, "float16", base_m=16, base_n=32, base_k=48, l0_n=16,
                       block_dim=3, depth_l1=1, depth_l0a=2, depth_l0b=2)
    _check(matmul(a16, b16, tiling=t16, interpret=True), a16, b16)


def test_matmul_non_contiguous_numpy_inputs(interpret):
    a, b = _inputs(48, 64, 40, np.float32)
    at, bt = np.asfortranarray(a), b.T.copy().T       # Fortran-ordered views of the same values
    _check(matmul(at, bt, interpret=interpret), a, b)


def test_matmul_device_arrays_on_a_stream(interpret):
    rt.ensure_device()
    a, b = _inputs(40, 300, 130, np.float16)
    s = rt.Stream()
    da, db = rt.to_device(a), rt.to_device(b)
    dc = matmul(da, db, stream=s, interpret=interpret)
    assert isinstance(dc, rt.DeviceArray) and dc.dtype == np.float32 and dc.shape == (40, 300)
    s.synchronize()
    _check(dc.copy_to_host(), a, b)
    for x in (da, db, dc):
        x.free()


def test_matmul_default_tiling_fits_the_soc():
    soc = rt.get_soc()
    for dtype in (np.float32, np.float16):
        t = matmul_tiling(2048, 2048, 2048, dtype)
        isz = np.dtype(dtype).itemsize
        assert t.base_m * t.base_n * 4 <= soc.l0c_bytes
        assert t.depth_l0a * t.base_m * t.base_k * isz <= soc.l0a_bytes
        assert t.depth_l0b * t.base_k * t.l0_n * isz <= soc.l0b_bytes
        assert t.block_dim == min(t.tiles, soc.ai_core_num)
    assert matmul_tiling(1, 1, 1, np.float32).block_dim == 1


def test_matmul_rejects_bad_inputs():
    rt.ensure_device()
    f32 = np.zeros((4, 5), np.float32)
    with pytest.raises(ValueError, match=r"a.shape\[1\] must equal b.shape\[0\]"):
        matmul(f32, np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match="a and b must be 2-D"):
        matmul(np.zeros(5, np.float32), np.zeros((5, 3), np.float32))
    with pytest.raises(TypeError, match="must both be float32, float16 or bfloat16"):
        matmul(np.zeros((4, 5), np.int32), np.zeros((5, 3), np.int32))
    with pytest.raises(TypeError, match="must both be float32, float16 or bfloat16"):
        matmul(f32, np.zeros((5, 3), np.float16))
    with pytest.raises(ValueError, match="M, N and K must be >= 1"):
        matmul(np.zeros((0, 5), np.float32), np.zeros((5, 3), np.float32))
    with pytest.raises(TypeError, match="all numpy arrays or all rt.DeviceArray"):
        matmul(f32, rt.to_device(np.zeros((5, 3), np.float32)))
    with pytest.raises(ValueError, match="tiling must be made for these inputs"):
        matmul(f32, np.zeros((5, 3), np.float32), tiling=matmul_tiling(4, 3, 6, np.float32))


def test_matmul_tiling_validation_messages():
    ok = dict(m=64, n=64, k=64, dtype="float32", base_m=64, base_n=64, base_k=64, l0_n=64,
              block_dim=1)
    MatmulTiling(**ok)
    cases = [
        (dict(base_m=40), "base_m must be a multiple of 16"),
        (dict(base_k=0), "base_k must be a multiple of 16"),
        (dict(l0_n=48), "l0_n must divide base_n"),
        (dict(block_dim=0), "block_dim must be >= 1"),
        (dict(dtype="int8"), "dtype must be float32, float16 or bfloat16"),
        (dict(depth_l1=3), "depth_l1 must be 1 or 2"),
        (dict(k=70000), "k and n must be <= 65535"),
        (dict(base_k=2048, base_m=16, base_n=16, l0_n=16), "base_k must be <= 2040"),
        (dict(base_m=256, base_k=128), r"depth_l0a\*base_m\*base_k\*sizeof must fit L0A"),
        (dict(base_k=256, base_n=128, l0_n=128), r"base_k\*l0_n\*sizeof must fit L0B"),
        (dict(base_m=256, base_n=256), r"base_m\*base_n\*4 must fit L0C"),
        (dict(base_m=128, base_n=1024, base_k=128, l0_n=64), "must fit L1"),
    ]
    for change, msg in cases:
        with pytest.raises(ValueError, match=msg):
            MatmulTiling(**{**ok, **change})
    with pytest.raises(TypeError, match="dtype must be float32, float16 or bfloat16"):
        matmul_tiling(4, 4, 4, np.int8)
