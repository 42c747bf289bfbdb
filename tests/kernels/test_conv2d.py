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
