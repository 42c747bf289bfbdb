"""kernels.maxpool's max pooling on dense UB rows (`maxpool_gather_kernel`: vertical maxes in
the repeat form, one GatherMask per kernel column) against numpy, in both modes, with the output
NaN-filled first, and when launch_pool takes it."""
import numpy as np
import pytest

import rt
from kernels.maxpool import gather_patterns, gather_plan
from kernels.pool import launch_pool, pool2d, pool_reference, pool_tiling


def _maxpool(x, kernel, stride, pad, interpret, checked=False):
    t = pool_tiling(x.shape, kernel, stride, pad)
    rt.ensure_device()
    s = rt.Stream()
    y = rt.to_device(np.full((x.shape[0], x.shape[1], t.oh, t.ow), np.nan, np.float32))
    opts = {"checked": True} if checked else {}
    launch_pool(rt.to_device(x), y, "max", t, s, interpret=interpret, **opts)
    s.synchronize()
    return t, y.copy_to_host()


@pytest.mark.parametrize("shape,kernel,stride,pad", [
    ((1, 4, 112, 112), 3, 2, 1),                 # ResNet's stem pooling: one band per plane
    ((2, 3, 9, 11), 3, 2, 1),                    # ragged
    ((1, 5, 13, 10), (3, 2), (1, 3), (1, 0, 2, 1)),  # asymmetric pads, W stride 3
    ((1, 2, 6, 7), (2, 5), 1, (0, 2, 1, 2)),     # stride 1, window wider than tall
    ((1, 3, 300, 20), 2, 2, 0),                  # 150 output rows in one band
    ((1, 2, 40, 600), 3, 2, 1),                  # 10 repeats per row: bands of 25 rows
    ((1, 2, 5, 6), (1, 3), (1, 2), 0),           # kh = 1
])
def test_gather_maxpool_matches_reference(interpret, shape, kernel, stride, pad):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    t, y = _maxpool(x, kernel, stride, pad, interpret)
    assert gather_plan(t) is not None
    np.testing.assert_array_equal(y, pool_reference(x, "max", kernel, stride, pad))


def test_gather_maxpool_checked_mode_and_negative_inputs():
    x = -np.abs(np.random.default_rng(2).standard_normal((1, 3, 10, 9))).astype(np.float32) - 1
    _, y = _maxpool(x, 3, 2, 1, False, checked=True)
    np.testing.assert_array_equal(y, pool_reference(x, "max", 3, 2, 1))
    assert (y < 0).all()            # the -inf padding never wins, zeros never leak in


def test_plan_and_patterns():
    t = pool_tiling((1, 64, 112, 112), 3, 2, 1)
    plan = gather_plan(t)
    assert (plan.rs, plan.nb, plan.band_rows) == (128, 56, 113)
    pats = gather_patterns(t, plan).reshape(3, 112, 8)
    bits = np.unpackbits(pats[:, :2, :2].copy().view(np.uint8), bitorder="little")
    cols = np.flatnonzero(bits.reshape(3, 2, 64).reshape(3, 128)[0])
    np.testing.assert_array_equal(cols, 7 + 2 * np.arange(56))   # tap 0: column -1 + 2q
    assert not pats[:, :, 2:].any()
    # not taken: a left padding of more than one block, padding as large as the window
    assert gather_plan(pool_tiling((1, 1, 30, 30), 10, 1, 9)) is None
    assert gather_plan(pool_tiling((1, 1, 8, 8), 2, 2, (0, 2, 0, 0))) is None


def test_pool2d_uses_it_for_numpy_inputs(interpret):
    x = np.random.default_rng(5).standard_normal((1, 2, 12, 12)).astype(np.float32)
    np.testing.assert_array_equal(pool2d(x, "max", 3, 2, 1, interpret=interpret),
                                  pool_reference(x, "max", 3, 2, 1))
