"""kernels.conv2d's tap path for 3x3 / stride 1 / padding 1 convolutions (kernels/convtap.py:
`pad_kernel` writes the zero-padded xp, `conv_tap_kernel` reads the 9 taps from it in place and
stores the valid columns with one multi-ND fixpipe) against numpy in both modes, the pad kernel
alone on a NaN-filled workspace, and when the path is taken."""
import numpy as np
import pytest

import rt
from kernels.conv2d import BUF, conv2d, conv2d_reference, conv2d_tiling, conv_matrix
from kernels.convtap import SLACK, pad_kernel, pad_phases_kernel, tap_weight_matrix


@pytest.mark.parametrize("shape,oc,s", [
    ((1, 16, 28, 28), 130, 1),   # Wp = 32: 8 rows a tile, 2 tile rows of M, 4 of N
    ((2, 5, 13, 13), 20, 1),     # ragged: odd H and W, batch 2, one K chunk with the ones row
    ((1, 70, 6, 14), 33, 1),     # a K chunk spanning two taps, ragged M
    ((1, 128, 9, 56), 40, 1),    # Wp = 64, C a multiple of base_k: one tap per K chunk
    ((1, 16, 56, 56), 130, 2),   # stride 2: four phase images, Wp = 32
    ((2, 9, 6, 26), 7, 2),       # stride 2, ragged: W/2 = 13, batch 2
    ((1, 70, 12, 28), 33, 2),    # stride 2, a K chunk spanning two taps
    ((1, 24, 14, 14), 20, 2),    # stride 2, W/2 = 7 (ResNet's 14 -> 7): Wp 16, ragged M
])
def test_tap_conv_matches_reference(interpret, shape, oc, s):
    t = conv2d_tiling(shape, (oc, shape[1], 3, 3), s, 1)
    assert t.tap_wp and t.phase is None
    assert t.mm.n == t.oh * t.tap_wp and t.mm.k == 9 * shape[1] + 1
    rng = np.random.default_rng(sum(shape) + oc)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, shape[1], 3, 3)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    ref = conv2d_reference(x, w, b, s, 1)
    y = conv2d(x, w, b, stride=s, padding=1, interpret=interpret)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    res = rng.standard_normal(ref.shape).astype(np.float32)
    y = conv2d(x, w, b, stride=s, padding=1, residual=res, relu=True, interpret=interpret)
    np.testing.assert_allclose(y, np.maximum(ref + res, 0), rtol=1e-4, atol=1e-4)
    y = conv2d(x, w, None, stride=s, padding=1, relu=True, interpret=interpret)
    np.testing.assert_allclose(y, np.maximum(conv2d_reference(x, w, None, s, 1), 0), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("c,h,w,cores", [(3, 5, 14, 2), (64, 56, 56, 2), (37, 14, 13, 1)])
def test_pad_kernel_writes_the_padded_image(interpret, c, h, w, cores):
    t = conv2d_tiling((1, c, h, w), (4, c, 3, 3), 1, 1)
    wp = t.tap_wp
    assert wp and t.col_elems == c * (h + 2) * wp + SLACK
    x = np.random.default_rng(c).standard_normal((c, h, w)).astype(np.float32)
    want = np.zeros((c, h + 2, wp), np.float32)
    want[:, 1:h + 1, 1:w + 1] = x
    xp = rt.to_device(np.full(t.col_elems + 16, np.nan, np.float32))
    per = -(-c // cores)
    s = rt.Stream()
    pad_kernel[-(-c // per), s](rt.to_device(x.ravel()), xp, c, h, w, wp, per,
                                max(1, BUF // (h * wp)), BUF, interpret=interpret)
    s.synchronize()
    got = xp.copy_to_host()
    np.testing.assert_array_equal(got[:want.size], want.ravel())
    np.testing.assert_array_equal(got[want.size:want.size + SLACK], 0)   # the slack
    assert np.isnan(got[t.col_elems:]).all()                              # nothing past it


@pytest.mark.parametrize("c,h,w", [(3, 6, 26), (128, 56, 56), (37, 14, 28)])
def test_pad_phases_kernel_writes_the_four_phase_images(interpret, c, h, w):
    t = conv2d_tiling((1, c, h, w), (4, c, 3, 3), 2, 1)
    wp, hq, wq = t.tap_wp, h // 2, w // 2
    assert wp and t.phase is None
    x = np.random.default_rng(c).standard_normal((c, h, w)).astype(np.float32)
    xs = np.concatenate([x[..., 0::2], x[..., 1::2]], 0)        # the column split: 2C channels
    want = np.zeros((2, 2 * c, hq + 1, wp), np.float32)
    for p in range(2):
        want[p, :, 1:, 1:wq + 1] = xs[:, p::2]
    size = 4 * c * (hq + 1) * wp + SLACK
    xp = rt.to_device(np.full(size + 16, np.nan, np.float32))
    per = -(-2 * c // 2)
    s = rt.Stream()
    pad_phases_kernel[-(-2 * c // per), s](rt.to_device(xs.ravel()), xp, 2 * c, h, wq, wp, per,
                                           max(1, BUF // (hq * wp)), BUF, interpret=interpret)
    s.synchronize()
    got = xp.copy_to_host()
    np.testing.assert_array_equal(got[:want.size], want.ravel())
    np.testing.assert_array_equal(got[want.size:size], 0)      # the slack
    assert np.isnan(got[size:]).all()                          # nothing past it


def test_tap_weights_are_tap_major():
    w = np.arange(2 * 3 * 9, dtype=np.float32).reshape(2, 3, 3, 3)
    b = np.array([7, 8], np.float32)
    wm = tap_weight_matrix(w, b)
    assert wm.shape == (2, 28)
    for tap in range(9):
        np.testing.assert_array_equal(wm[:, tap * 3:tap * 3 + 3], w[:, :, tap // 3, tap % 3])
    np.testing.assert_array_equal(wm[:, -1], b)
    t = conv2d_tiling((1, 3, 14, 14), w.shape, 1, 1)
    np.testing.assert_array_equal(conv_matrix(w, b, t), wm)


def test_when_the_tap_path_is_taken():
    for hw in (56, 28, 14, 13):                     # ResNet's 3x3 stride-1 convs, a ragged one
        assert conv2d_tiling((1, 64, hw, hw), (64, 64, 3, 3), 1, 1).tap_wp == \
            {56: 64, 28: 32, 14: 16, 13: 16}[hw]
    assert not conv2d_tiling((1, 512, 7, 7), (512, 512, 3, 3), 1, 1).tap_wp   # Wp 16: 2.3x
    assert not conv2d_tiling((1, 8, 20, 20), (8, 8, 3, 3), 1, 1).tap_wp    # right pad 11 > 8
    assert conv2d_tiling((1, 8, 28, 28), (8, 8, 3, 3), 2, 1).tap_wp == 16  # stride 2: W/2
    # stride 2, W/2 = 7 (Wp 16: 2.3x): 1.31x the phase path's cube work, which also runs img2col
    assert conv2d_tiling((1, 8, 14, 14), (8, 8, 3, 3), 2, 1).tap_wp == 16
    assert conv2d_tiling((1, 8, 8, 8), (8, 8, 3, 3), 2, 1).phase is not None   # W/2 = 4: 3x
    assert not conv2d_tiling((1, 8, 28, 27), (8, 8, 3, 3), 2, 1).tap_wp    # odd W
    assert not conv2d_tiling((1, 8, 28, 28), (8, 8, 3, 3), (1, 2), 1).tap_wp   # mixed strides
    assert not conv2d_tiling((1, 8, 28, 28), (8, 8, 3, 3), 1, 0).tap_wp    # no padding
    assert not conv2d_tiling((1, 8, 28, 28), (8, 8, 3, 3), 1, 2, 2).tap_wp  # dilation
    assert not conv2d_tiling((1, 8, 28, 28), (8, 8, 5, 5), 1, 1).tap_wp    # 5x5
    assert not conv2d_tiling((1, 8, 200, 56), (8, 8, 3, 3), 1, 1).tap_wp   # H*Wp > BUF


def test_stride2_taps_beat_the_phase_path_on_the_npu(monkeypatch):
    """At W/2 = 7 (Wp 16) the taps compute 1.31x the phase path's multiply-adds, yet the
    simulated launches (split, padding / img2col, matmul) are shorter: no img2col matrix."""
    import kernels.convtap as ct
    shape, w_shape = (1, 64, 14, 14), (64, 64, 3, 3)
    rng = np.random.default_rng(14)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    ref = conv2d_reference(x, w, None, 2, 1)
    names = ("deinterleave2_kernel", "img2col_kernel", "conv_matmul_kernel",
             "pad_phases_kernel", "conv_tap_kernel")
    us = {}
    for limit in (ct.TAP_VS_PHASE, 1.0):
        monkeypatch.setattr(ct, "TAP_VS_PHASE", limit)
        t = conv2d_tiling(shape, w_shape, 2, 1)
        path = "taps" if t.tap_wp else "phase"
        with rt.profile(npu=True) as prof:
            y = conv2d(x, w, None, stride=2, padding=1, tiling=t)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
        us[path] = sum(r.timeline.us for k in names for r in prof.npu_runs(k))
    assert set(us) == {"taps", "phase"}
    assert us["taps"] < 0.8 * us["phase"]
