"""kernels.softmax against its numpy reference, interpreted and compiled, checked-mode traps on."""
import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.softmax import SoftmaxTiling, softmax, softmax_reference, softmax_tiling
from kernels.tolerances import assert_close

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

DTYPES = [np.float32, np.float16, BFLOAT16]
SHAPES = [(1, 8), (3, 37), (16, 64), (5, 1000)]


def _opts(mode):  # `mode` is the shared fixture of tests/conftest.py (interpret / compiled)
    return {"interpret": mode == "interpret", "checked": True}


def _x(shape, dtype, seed=0, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_softmax_matches_reference(mode, shape, dtype):
    x = _x(shape, dtype)
    y = softmax(x, **_opts(mode))
    assert y.dtype == x.dtype and y.shape == x.shape
    assert_close(y, softmax_reference(x))


def test_softmax_several_tiles_and_cores(mode):
    # 7 rows over 3 cores (3, 3, 1), 2 rows per tile: ragged last tile and an idle-free split
    x = _x((7, 37), np.float16, seed=1)
    t = SoftmaxTiling(rows=7, cols=37, block_dim=3, rows_per_core=3, tile_rows=2, stride=48,
                      chunk=37, tmp_elems=24)
    assert_close(softmax(x, tiling=t, **_opts(mode)), softmax_reference(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_softmax_chunked_rows(mode, dtype):
    # long-row scheme forced with 64-column chunks; the last chunk holds 8 columns
    x = _x((3, 200), dtype, seed=2, scale=8.0)
    t = softmax_tiling(3, 200, dtype, chunk=64)
    assert t.chunked and t.chunk == 64
    assert_close(softmax(x, tiling=t, **_opts(mode)), softmax_reference(x))


def test_softmax_long_rows_pick_chunked_scheme():
    t = softmax_tiling(2, 100_000, np.float32)
    assert t.chunked and t.tile_rows == 1 and t.chunk % 64 == 0
    assert not softmax_tiling(2, 4000, np.float32).chunked


def _widest_one_tile_row(tiling_fn, dtype):
    lo, hi = 8, 1 << 16
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (lo, mid - 1) if tiling_fn(1, mid, dtype).chunked else (mid, hi)
    return lo


def test_softmax_widest_tile_row_and_first_chunked_row_fit_ub():
    # the UB plan is exact: the widest one-tile row runs, one column more runs chunked
    cols = _widest_one_tile_row(softmax_tiling, np.float32)
    assert cols == 12184
    for c in (cols, cols + 1):
        x = _x((2, c), np.float32, seed=5)
        assert softmax_tiling(2, c, np.float32).chunked == (c > cols)
        assert_close(softmax(x, interpret=True, checked=True), softmax_reference(x))


def test_softmax_leading_dims_large_values_and_minus_inf():
    x = _x((2, 3, 20), np.float32, seed=3, scale=200.0)  # exp would overflow without the max
    x[0, 1, 5] = x[1, 2, 10:] = -np.inf                   # masked-out entries give exactly 0
    y = softmax(x, interpret=True, checked=True)
    assert_close(y, softmax_reference(x))
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-5)
    assert y[0, 1, 5] == 0 and np.all(y[1, 2, 10:] == 0)
    x = _x((2, 150), np.float32, seed=4)
    x[0, :70] = x[1, 3] = -np.inf                          # chunked: a whole -inf chunk too
    t = softmax_tiling(2, 150, np.float32, chunk=64)
    assert_close(softmax(x, tiling=t, interpret=True, checked=True), softmax_reference(x))


def test_softmax_device_array_on_stream(mode):
    x = _x((5, 37), np.float32, seed=4)
    s = rt.Stream()
    xd = rt.to_device(x)
    yd = softmax(xd, stream=s, **_opts(mode))
    assert isinstance(yd, rt.DeviceArray)
    out = yd.copy_to_host(stream=s)
    s.synchronize()
    assert_close(out, softmax_reference(x))


def test_softmax_rejects_bad_input():
    with pytest.raises(TypeError, match="softmax: x must be float32, float16 or bfloat16"):
        softmax(np.ones((2, 4), np.int32))
    with pytest.raises(ValueError, match="non-empty last axis"):
        softmax(np.ones((2, 0), np.float32))
    with pytest.raises(ValueError, match="tiling must be for rows=2 cols=8"):
        softmax(np.ones((2, 8), np.float32), tiling=softmax_tiling(2, 9, np.float32))
    with pytest.raises(ValueError, match="chunk must be a positive multiple of 64"):
        softmax_tiling(2, 100, np.float32, chunk=100)
    with pytest.raises(ValueError, match="tile_rows must be <= 4095"):
        SoftmaxTiling(5000, 8, 1, 5000, 5000, 8, 8, 24)
    with pytest.raises(ValueError, match="tiling stride must be 48"):
        softmax(np.ones((3, 37), np.float16), tiling=SoftmaxTiling(3, 37, 1, 3, 3, 40, 37, 8))
    with pytest.raises(ValueError, match="chunk a multiple of 64"):
        SoftmaxTiling(3, 200, 1, 3, 1, 100, 100, 8)


def test_softmax_tile_beyond_ub_is_a_kernel_error():
    # a hand-made tiling whose tile does not fit the 192 KB UB: the pipe rejects it by name
    t = SoftmaxTiling(rows=1000, cols=64, block_dim=1, rows_per_core=1000, tile_rows=1000,
                      stride=64, chunk=64, tmp_elems=8)
    with pytest.raises(rt.AclError, match=r"VECIN TQue #0 must fit in UB, asked 512000 bytes"):
        softmax(np.ones((1000, 64), np.float32), tiling=t, interpret=True, checked=True)
