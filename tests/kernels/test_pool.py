import numpy as np
import pytest

from kernels.pool import pool2d, pool_reference, pool_tiling


@pytest.mark.parametrize("pool_mode,kernel,stride,pad,cip", [
    ("max", 3, 2, 1, False), ("avg", 3, 2, 1, False), ("avg", 3, 2, 1, True),
    ("max", 2, 2, 0, False), ("avg", (9, 11), 1, 0, False),       # global average
])
@pytest.mark.parametrize("shape", [(2, 3, 9, 11), (1, 8, 8, 8)])
def test_pool_matches_reference(interpret, pool_mode, kernel, stride, pad, cip, shape):
    if kernel == (9, 11):
        kernel = shape[2:]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = pool2d(x, pool_mode, kernel, stride, pad, cip, interpret=interpret)
    np.testing.assert_allclose(y, pool_reference(x, pool_mode, kernel, stride, pad, cip), rtol=1e-5,
                               atol=1e-6)


def test_pool_errors():
    with pytest.raises(ValueError, match="mode must be"):
        pool2d(np.ones((1, 1, 4, 4), np.float32), "min", 2)
    with pytest.raises(TypeError, match="4-D float32"):
        pool2d(np.ones((4, 4), np.float32), "max", 2)
    assert pool_tiling((1, 1, 7, 7), 3, 2, 1).oh == 4
