import numpy as np
import pytest

import rt
from kernels.conv2d import conv2d, conv2d_reference, conv2d_tiling, weight_matrix


@pytest.mark.parametrize("shape,w_shape,stride,pad,dil", [
    ((1, 3, 9, 11), (5, 3, 3, 3), 2, 1, 1),          # ragged everything, stride 2
    ((2, 4, 8, 8), (16, 4, 1, 1), 1, 0, 1),           # 1x1, tile-friendly sizes
    ((1, 2, 7, 6), (3, 2, 3, 2), (1, 2), (0, 1, 2, 1), (2, 1)),   # asymmetric pads, dilation
])
def test_conv2d_matches_reference(interpret, shape, w_shape, stride, pad, dil):
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    y = conv2d(x, w, b, stride=stride, padding=pad, dilation=dil, interpret=interpret)
    np.testing.assert_allclose(y, conv2d_reference(x, w, b, stride, pad, dil), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_device_arrays_on_a_stream(interpret):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    s = rt.Stream()
    y = conv2d(rt.to_device(x), rt.to_device(w), stream=s, padding=1, interpret=interpret)
    assert isinstance(y, rt.DeviceArray)
    s.synchronize()
    np.testing.assert_allclose(y.copy_to_host(), conv2d_reference(x, w, None, 1, 1), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_tiling_and_errors():
    t = conv2d_tiling((2, 3, 9, 11), (5, 3, 3, 3), 2, 1)
    assert (t.oh, t.ow, t.k_rows) == (5, 6, 28) and t.mm.m == 5 and t.mm.n == 30
    assert weight_matrix(np.ones((5, 3, 3, 3)), np.arange(5)).shape == (5, 28)
    with pytest.raises(ValueError, match="groups are not supported"):
        conv2d_tiling((1, 4, 8, 8), (4, 2, 3, 3))
    with pytest.raises(TypeError, match="4-D float32"):
        conv2d(np.ones((1, 3, 4, 4), np.float16), np.ones((1, 3, 1, 1), np.float16))


@pytest.mark.parametrize("shape,w_shape,pad", [
    ((1, 20, 6, 7), (150, 20, 3, 3), 1),     # 2 tile rows (the second ragged), K' = 181: 2 chunks
    ((1, 130, 5, 5), (136, 130, 1, 1), 0),   # direct 1x1: K' = 131 (the ones row in chunk 2)
])
def test_conv2d_weights_in_fractal_chunks(interpret, shape, w_shape, pad):
    """The weights go GM -> L0A as whole L0A images (kernels.convmm.cube_weights): several tile
    rows and K chunks, ragged in both, against numpy."""
    rng = np.random.default_rng(w_shape[0])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    y = conv2d(x, w, b, padding=pad, relu=True, interpret=interpret)
    np.testing.assert_allclose(y, np.maximum(conv2d_reference(x, w, b, 1, pad), 0), rtol=1e-4,
                               atol=1e-4)


def test_cube_weights_layout():
    """Chunk (tm, kc) is the ZZ image of W'[tm*128:, kc*128:] (16 x 8 fractals, row-major grid),
    zero past M and K."""
    from kernels.conv2d import conv_weights
    w = np.arange(150 * 20 * 9, dtype=np.float32).reshape(150, 20, 3, 3)
    t = conv2d_tiling((1, 20, 6, 7), w.shape, 1, 1)
    wm = weight_matrix(w, np.full(150, -1, np.float32))       # 150 x 181
    z = conv_weights(w, np.full(150, -1, np.float32), t)
    assert z.size == 160 * (128 + 56)
    # element (r, c) of chunk (0, 1): row block r // 16, fractal c // 8 of 7, at 128 * 128 + ...
    for r, c in [(0, 0), (17, 9), (127, 52)]:
        off = 128 * 128 + ((r // 16) * 7 + c // 8) * 128 + (r % 16) * 8 + c % 8
        assert z[off] == wm[r, 128 + c]
    # chunk (1, 0): 32 rows (22 real), starts after the first tile row
    base = 128 * (128 + 56)
    assert z[base + (5 // 16 * 16 + 3 // 8) * 128 + 5 * 8 + 3] == wm[133, 3]
    tail = z[base:base + 32 * 128].reshape(2, 16, 16, 8).transpose(0, 2, 1, 3).reshape(32, 128)
    np.testing.assert_array_equal(tail[:22], wm[128:, :128])
    assert not tail[22:].any()
    last = z[base + 32 * 128:].reshape(2, 7, 16, 8).transpose(0, 2, 1, 3).reshape(32, 56)
    np.testing.assert_array_equal(last[:22, :53], wm[128:, 128:])
    assert not last[:, 53:].any() and not last[22:].any()
