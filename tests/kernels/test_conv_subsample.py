"""kernels.conv2d's stride-2 1x1 path (`Conv2dTiling.subsample`: `subsample2_kernel` packs
x[:, ::2, ::2] with GatherMask, the matmul adds the ones row) against numpy in both modes, the
kernel alone on a NaN-filled workspace, and when the path is taken."""
import numpy as np
import pytest

import rt
from kernels.conv2d import conv2d, conv2d_reference, conv2d_tiling
from kernels.subsample import launch_subsample2, subsample_pattern, subsample_split


@pytest.mark.parametrize("shape,oc", [
    ((1, 16, 28, 28), 24),       # ResNet's downsampling family (W a multiple of 4, not of 8)
    ((2, 5, 9, 11), 7),          # ragged: odd H and W, batch 2
    ((1, 40, 14, 14), 9),        # several passes of channels per core
])
def test_subsample_conv_matches_reference(interpret, shape, oc):
    t = conv2d_tiling(shape, (oc, shape[1], 1, 1), 2, 0)
    assert t.subsample and not t.direct and t.phase is None
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, shape[1], 1, 1)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    y = conv2d(x, w, b, stride=2, padding=0, relu=True, interpret=interpret)
    ref = np.maximum(conv2d_reference(x, w, b, 2, 0), 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c,h,w", [(3, 7, 9), (64, 56, 56), (700, 14, 14)])
def test_subsample_kernel_packs_even_rows_and_columns(interpret, c, h, w):
    x = np.random.default_rng(c).standard_normal((c, h, w)).astype(np.float32)
    want = x[:, ::2, ::2].ravel()
    col = rt.to_device(np.full(want.size + 8, np.nan, np.float32))
    s = rt.Stream()
    launch_subsample2(rt.to_device(x.ravel()), col, c, h, w, 2, s, interpret=interpret)
    s.synchronize()
    got = col.copy_to_host()
    np.testing.assert_array_equal(got[:want.size], want)
    assert np.isnan(got[want.size:]).all()          # nothing written past col


def test_split_and_pattern():
    nc, per, blocks = subsample_split(256, 56, 56, 2)
    assert (nc, per, blocks) == (10, 128, 2)         # 10 x 28 rows of 56 fit 16384 elements
    pat = subsample_pattern(7, 9, 2).reshape(-1, 8)
    bits = np.unpackbits(pat[:, :2].copy().view(np.uint8), bitorder="little")
    lanes = np.flatnonzero(bits)
    assert list(lanes[:6]) == [0, 2, 4, 6, 8, 16] and lanes.size == 2 * 4 * 5
    assert not pat[:, 2:].any()
    # not taken: padding, 3x3 kernels, stride 1
    assert not conv2d_tiling((1, 4, 8, 8), (4, 4, 1, 1), 2, 1).subsample
    assert not conv2d_tiling((1, 4, 8, 8), (4, 4, 3, 3), 2, 1).subsample
    assert not conv2d_tiling((1, 4, 8, 8), (4, 4, 1, 1), 1, 0).subsample
