import ml_dtypes
import numpy as np
import pytest

import rt
from kernels.add import AddTiling, add, add_reference, add_tiling
from kernels.tolerances import assert_close


@pytest.mark.parametrize("n", [1, 37, 8192, 3 * 8192 + 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32])
def test_add_matches_reference(interpret, n, dtype):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    z = add(x, y, interpret=interpret)
    assert z.dtype == x.dtype and z.shape == x.shape
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(z, x + y)
    else:
        assert_close(z, add_reference(x, y), dtype)


def test_add_multi_dim_and_many_cores(interpret):
    x = np.arange(6 * 1000, dtype=np.float32).reshape(6, 1000)
    y = np.ones_like(x)
    t = add_tiling(x.size, x.dtype, block_dim=7)
    np.testing.assert_array_equal(add(x, y, tiling=t, interpret=interpret), x + y)


def test_add_device_arrays_on_a_stream(interpret):
    x = np.random.rand(10000).astype(np.float32)
    s = rt.Stream()
    dz = add(rt.to_device(x), rt.to_device(x), stream=s, interpret=interpret)
    assert isinstance(dz, rt.DeviceArray)
    s.synchronize()
    np.testing.assert_array_equal(dz.copy_to_host(), x + x)


def test_add_rejects_bad_inputs():
    with pytest.raises(ValueError, match="x and y must have the same shape and dtype"):
        add(np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="tile, per_core and block_dim must be > 0"):
        AddTiling(10, 1, 10, 0)
