"""kernels.pool's vector max pooling (`maxpool_kernel`: one element per 32-byte block, vector
maxes of block-shifted views, WholeReduceMax picking every sw-th block) against numpy, in both
modes, with the output NaN-filled first."""
import numpy as np
import pytest

import rt
from kernels.pool import launch_pool, pool_reference, pool_tiling


def _maxpool(x, kernel, stride, pad, interpret, checked=False):
    t = pool_tiling(x.shape, kernel, stride, pad)
    rt.ensure_device()
    s = rt.Stream()
    y = rt.to_device(np.full((x.shape[0], x.shape[1], t.oh, t.ow), np.nan, np.float32))
    opts = {"checked": True} if checked else {}
    launch_pool(rt.to_device(x), y, "max", t, s, dense=False, interpret=interpret, **opts)
    s.synchronize()
    return t, y.copy_to_host()


@pytest.mark.parametrize("shape,kernel,stride,pad", [
    ((1, 4, 112, 112), 3, 2, 1),                 # ResNet's stem pooling, tile-friendly
    ((2, 3, 9, 11), 3, 2, 1),                    # ragged
    ((1, 5, 13, 10), (3, 2), (1, 3), (1, 0, 2, 1)),  # asymmetric pads, W stride 3
    ((1, 2, 6, 7), (2, 5), 1, (0, 2, 1, 2)),     # stride 1, window wider than tall
    ((1, 3, 300, 20), 2, 2, 0),                  # many output rows per plane (several stores)
])
def test_vector_maxpool_matches_reference(interpret, shape, kernel, stride, pad):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    t, y = _maxpool(x, kernel, stride, pad, interpret)
    assert t.sparse_blocks > 0
    np.testing.assert_array_equal(y, pool_reference(x, "max", kernel, stride, pad))


def test_vector_maxpool_checked_mode_and_negative_inputs():
    x = -np.abs(np.random.default_rng(2).standard_normal((1, 3, 10, 9))).astype(np.float32) - 1
    _, y = _maxpool(x, 3, 2, 1, False, checked=True)
    np.testing.assert_array_equal(y, pool_reference(x, "max", 3, 2, 1))
    assert (y < 0).all()            # the -inf padding never wins, zeros never leak in


def test_wide_rows_fall_back_to_the_scalar_kernel():
    t = pool_tiling((1, 1, 4, 3000), 2, 2, 0)
    assert t.sparse_blocks == 0
    assert pool_tiling((1, 64, 112, 112), 3, 2, 1).sparse_blocks == 113


def _global_pool(x, mode, interpret, checked=False):
    t = pool_tiling(x.shape, x.shape[2:], 1, 0)
    rt.ensure_device()
    s = rt.Stream()
    y = rt.to_device(np.full((x.shape[0], x.shape[1], 1, 1), np.nan, np.float32))
    opts = {"checked": True} if checked else {}
    launch_pool(rt.to_device(x), y, mode, t, s, interpret=interpret, **opts)
    s.synchronize()
    return y.copy_to_host()


@pytest.mark.parametrize("shape", [(1, 300, 7, 7), (2, 3, 9, 7), (1, 5, 8, 8), (3, 4, 1, 1)])
@pytest.mark.parametrize("pool_mode", ["avg", "max"])      # ("mode" is conftest's fixture)
def test_global_pooling_on_the_vector_unit(interpret, shape, pool_mode):
    """Planes of <= 64 elements: one WholeReduce repeat per plane, batches of planes per copy."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    y = _global_pool(x, pool_mode, interpret)
    np.testing.assert_allclose(y, pool_reference(x, pool_mode, shape[2:], 1, 0), rtol=1e-6,
                               atol=1e-7)


def test_global_pooling_checked_mode():
    x = np.random.default_rng(9).standard_normal((1, 600, 7, 7)).astype(np.float32)
    for mode in ("avg", "max"):
        np.testing.assert_allclose(_global_pool(x, mode, False, checked=True),
                                   pool_reference(x, mode, (7, 7), 1, 0), rtol=1e-6, atol=1e-7)
