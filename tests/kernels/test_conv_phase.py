"""kernels.conv2d's stride-2 path (`Conv2dTiling.phase`: x split into even/odd columns by
`deinterleave2_kernel`, then the stride-1 img2col and a W' with the matching column order) and
the channel-batched stride-1 img2col (`Conv2dTiling.ch_per_copy`, small images): the img2col
matrix (NaN-filled first) and results against numpy in both modes, and when each path is taken."""
import numpy as np
import pytest

import rt
from kernels._host import ceil_div
from kernels.conv2d import (conv2d, conv2d_reference, conv2d_tiling, conv_weights,
                            deinterleave2_kernel, launch_conv2d, phase_weight_matrix)


@pytest.mark.parametrize("shape,w_shape,stride,pad", [
    ((1, 3, 18, 20), (5, 3, 7, 7), 2, 3),            # ResNet's conv1 shape family
    ((2, 4, 9, 8), (6, 4, 3, 3), 2, 1),              # 3x3/2, batch 2, odd H
    ((1, 3, 10, 12), (4, 3, 3, 2), (1, 2), (0, 1, 2, 0)),   # sh 1, asymmetric pads, even kw
    ((1, 2, 8, 6), (3, 2, 3, 3), 2, 0),              # no padding
])
def test_stride2_phase_path_matches_reference(interpret, shape, w_shape, stride, pad):
    t = conv2d_tiling(shape, w_shape, stride, pad)
    assert t.phase is not None and (t.phase.oh, t.phase.ow) == (t.oh, t.ow)
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    y = conv2d(x, w, b, stride=stride, padding=pad, relu=True, interpret=interpret)
    ref = np.maximum(conv2d_reference(x, w, b, stride, pad), 0)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_deinterleave_splits_even_and_odd_elements(interpret):
    x = np.arange(2 * 2100, dtype=np.float32) * 0.5 - 7     # > one pass of 1024 pairs
    xd, xp = rt.to_device(x), rt.device_empty((x.size,), np.float32)
    deinterleave2_kernel[2, rt.current_stream()](xd, xp, x.size // 2, 1056, 1024,
                                                 interpret=interpret)
    rt.current_stream().synchronize()
    np.testing.assert_array_equal(xp.copy_to_host(), np.concatenate([x[0::2], x[1::2]]))


def test_phase_tiling_geometry_and_weights():
    t = conv2d_tiling((1, 3, 224, 224), (64, 3, 7, 7), 2, 3)
    g = t.phase
    assert (g.c, g.w, g.kw, g.stride, g.pad) == (6, 112, 4, (2, 1), (3, 2, 3, 1))
    assert t.k_rows == 6 * 7 * 4 + 1 and t.mm.k == t.k_rows
    assert t.col_elems == t.k_rows * 112 * 112 + 3 * 224 * 224
    wm = phase_weight_matrix(np.ones((64, 3, 7, 7)), np.arange(64), t)
    assert wm.shape == (64, 169) and wm[:, :-1].sum() == 64 * 3 * 49     # every tap once
    np.testing.assert_array_equal(wm[:, -1], np.arange(64))
    # not taken: odd W, stride 1 along W, dilation along W, 1x1 kernels
    assert conv2d_tiling((1, 3, 9, 11), (5, 3, 3, 3), 2, 1).phase is None
    assert conv2d_tiling((1, 3, 8, 8), (5, 3, 3, 3), (2, 1), 1).phase is None
    assert conv2d_tiling((1, 3, 8, 8), (5, 3, 3, 3), 2, 1, (1, 2)).phase is None
    assert conv2d_tiling((1, 3, 8, 8), (5, 3, 1, 1), 2, 0).phase is None


def _col(x, t, interpret):
    """launch_conv2d's workspace after one image (NaN-filled first): the img2col rows."""
    rt.ensure_device()
    s = rt.Stream()
    w = np.ones((t.oc, t.c, t.kh, t.kw), np.float32)
    col = rt.to_device(np.full(t.col_elems, np.nan, np.float32))
    y = rt.device_empty((t.n, t.oc, t.oh, t.ow), np.float32)
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    launch_conv2d(rt.to_device(x), rt.to_device(conv_weights(w, None, t)), y, col, zeros, t,
                  s, interpret=interpret)
    s.synchronize()
    return col.copy_to_host()[:t.k_rows * t.oh * t.ow].reshape(t.k_rows, -1)


def _col_reference(x, g):
    """numpy img2col of a stride-1-columns tiling g: (C*KH*KW + 1) x OH*OW, last row ones."""
    xp = np.pad(x[0], ((0, 0), (g.pad[0], max(g.pad[2], 0)), (g.pad[1], max(g.pad[3], 0))))
    sh, dh = g.stride[0], g.dilation[0]
    rows = [xp[c, ki * dh:ki * dh + sh * (g.oh - 1) + 1:sh, kj:kj + g.ow].ravel()
            for c in range(g.c) for ki in range(g.kh) for kj in range(g.kw)]
    return np.array(rows + [np.ones(g.oh * g.ow)], np.float32)


@pytest.mark.parametrize("shape,w_shape,stride,pad,mode", [
    ((1, 40, 5, 6), (8, 40, 3, 3), 1, 1, "channels"),
    ((1, 130, 12, 12), (4, 130, 3, 3), 1, (1, 0, 2, 1), "channels"),   # 2 batches a core
    ((1, 3, 18, 20), (5, 3, 7, 7), 2, 3, "phase"),
    ((1, 24, 8, 8), (4, 24, 3, 3), 2, 1, "phase"),             # split x, then by channels
])
def test_img2col_matrix(interpret, shape, w_shape, stride, pad, mode):
    t = conv2d_tiling(shape, w_shape, stride, pad)
    g = t.phase or t
    assert (t.phase is not None) == (mode == "phase")
    assert g.ch_per_copy > 0 or mode == "phase"
    if mode == "channels":
        assert ceil_div(g.groups_per_core, g.ch_per_copy) == (2 if shape[1] == 130 else 1)
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    xs = np.concatenate([x[..., 0::2], x[..., 1::2]], 1) if t.phase else x
    np.testing.assert_array_equal(_col(x, t, interpret), _col_reference(xs, g))
    w = np.random.default_rng(1).standard_normal(w_shape).astype(np.float32)
    np.testing.assert_allclose(conv2d(x, w, stride=stride, padding=pad, interpret=interpret),
                               conv2d_reference(x, w, None, stride, pad), rtol=1e-4, atol=1e-4)
