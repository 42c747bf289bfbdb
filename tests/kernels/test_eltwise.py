import numpy as np
import pytest

import rt
from kernels.eltwise import binary, binary_reference, unary, unary_reference


@pytest.mark.parametrize("n", [37, 8192 * 3 + 5])
def test_unary_relu(interpret, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(unary("relu", x, interpret=interpret),
                                  unary_reference("relu", x))


@pytest.mark.parametrize("shape", [(37,), (64, 128)])
def test_binary_mul_same_shape(interpret, shape):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(binary("mul", x, y, interpret=interpret),
                               binary_reference("mul", x, y), rtol=1e-6)


@pytest.mark.parametrize("rows,cols", [(7, 37), (16, 64)])
def test_binary_row_broadcast(interpret, rows, cols):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    np.testing.assert_allclose(binary("add", x, b, interpret=interpret), x + b, rtol=1e-6)


def test_out_and_stream(interpret):
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    s = rt.Stream()
    dx = rt.to_device(x)
    out = rt.device_empty(x.shape, np.float32)
    assert unary("relu", dx, stream=s, out=out, interpret=interpret) is out
    s.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), np.maximum(x, 0))


def test_errors():
    with pytest.raises(ValueError, match="op must be one of"):
        unary("tanh", np.ones(4, np.float32))
    with pytest.raises(ValueError, match="shape"):
        binary("add", np.ones((4, 4), np.float32), np.ones(3, np.float32))
