"""The residual Add (then ReLU) fused into the conv matmul's launch (kernels/convmm.py's `epi`):
each block adds the residual to the tile the fixpipe just wrote, so a Conv+Add(+Relu) is one
launch; against numpy in both modes, on ragged and tile-multiple shapes, with several tiles per
block, several row passes per tile and a batch of 2; the separate epilogue stays where the
output overlaps the residual or what the matmul reads, and on the tap path."""
import numpy as np
import pytest

import rt
from kernels import conv2d as C


def _launch(x, w, b, t, res, relu, interpret, out_is_res=False):
    """launch_conv2d with y and out NaN-filled (out = the residual's buffer if out_is_res);
    returns (out, y, kernel names launched)."""
    rt.ensure_device()
    s = rt.Stream()
    xd, wd = rt.to_device(x), rt.to_device(C.conv_weights(w, b, t))
    col = rt.to_device(np.full(max(t.col_elems, 16), np.nan, np.float32))
    y = rt.to_device(np.full((t.n, t.oc, t.oh, t.ow), np.nan, np.float32))
    rd = rt.to_device(res)
    out = rd if out_is_res else rt.to_device(np.full(y.shape, np.nan, np.float32))
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    with rt.profile() as prof:
        C.launch_conv2d(xd, wd, y, col, zeros, t, s, residual=rd, relu=relu, out=out,
                        interpret=interpret)
        s.synchronize()
    names = {r.name for r in prof.records if r.kind == "kernel"}
    return out.copy_to_host(), y.copy_to_host(), names


CASES = [   # x shape, w shape, padding
    ((2, 16, 20, 20), (200, 16, 1, 1), 0),   # direct 1x1, M ragged (128 + 72), batch 2
    ((1, 32, 16, 16), (128, 32, 1, 1), 0),   # 1x1, tile-multiple (M 128, N 256: 4 row passes)
    ((1, 5, 7, 9), (19, 5, 3, 3), 1),        # img2col 3x3 (W too narrow for the taps), ragged
    ((1, 64, 7, 7), (256, 64, 1, 1), 0),     # a 7x7-stage 1x1: N = 49 (one 16-padded strip)
]


@pytest.mark.parametrize("shape,w_shape,pad", CASES)
@pytest.mark.parametrize("relu", [True, False])
def test_residual_fused_into_the_matmul_matches_numpy(interpret, shape, w_shape, pad, relu):
    rng = np.random.default_rng(sum(shape) + w_shape[0])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    t = C.conv2d_tiling(shape, w_shape, 1, pad)
    assert not t.tap_wp
    res = rng.standard_normal((t.n, t.oc, t.oh, t.ow)).astype(np.float32)
    out, y, names = _launch(x, w, b, t, res, relu, interpret)
    ref = C.conv2d_reference(x, w, b, 1, pad) + res
    np.testing.assert_allclose(out, np.maximum(ref, 0) if relu else ref, rtol=1e-4, atol=1e-4)
    assert np.isnan(y).all()                # the matmul wrote out itself, y never
    assert "bias_act_kernel" not in names and "conv_matmul_kernel" in names
    if not relu:
        assert (out < 0).any()              # no ReLU slipped in through the fixpipe


def test_output_over_the_residual_keeps_the_separate_epilogue(interpret):
    """out is the residual's own buffer (an in-place Add): the fixpipe must not overwrite the
    residual before it is read, so the matmul writes y and bias_act_kernel adds."""
    rng = np.random.default_rng(9)
    shape, w_shape = (1, 8, 6, 10), (24, 8, 1, 1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    t = C.conv2d_tiling(shape, w_shape)
    res = rng.standard_normal((1, 24, 6, 10)).astype(np.float32)
    out, y, names = _launch(x, w, b, t, res, True, interpret, out_is_res=True)
    np.testing.assert_allclose(out, np.maximum(C.conv2d_reference(x, w, b) + res, 0),
                               rtol=1e-4, atol=1e-4)
    assert "bias_act_kernel" in names and not np.isnan(y).any()


def test_tap_path_keeps_the_separate_epilogue(interpret):
    rng = np.random.default_rng(10)
    shape, w_shape = (1, 4, 14, 14), (8, 4, 3, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    t = C.conv2d_tiling(shape, w_shape, 1, 1)
    assert t.tap_wp
    res = rng.standard_normal((1, 8, 14, 14)).astype(np.float32)
    out, _, names = _launch(x, w, None, t, res, True, interpret)
    np.testing.assert_allclose(out, np.maximum(C.conv2d_reference(x, w, None, 1, 1) + res, 0),
                               rtol=1e-4, atol=1e-4)
    assert {"bias_act_kernel", "conv_tap_kernel"} <= names
