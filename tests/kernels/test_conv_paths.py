"""kernels.conv2d's fast paths: the DMA img2col (stride 1 and strided along W), the direct 1x1
path and the epilogue (bias / residual / ReLU), against numpy, in both modes, with the workspace
and the output NaN-filled first so every element the kernels must write is checked."""
import numpy as np
import pytest

import rt
from kernels import conv2d as C


def _col_reference(x, t):
    """numpy img2col of image 0: (C*KH*KW + 1) x OH*OW, last row ones."""
    (sh, sw), (dh, dw), p = t.stride, t.dilation, t.pad
    xp = np.pad(x[0], ((0, 0), (p[0], p[2]), (p[1], p[3])))
    rows = [xp[c, ki * dh:ki * dh + sh * (t.oh - 1) + 1:sh,
               kj * dw:kj * dw + sw * (t.ow - 1) + 1:sw].ravel()
            for c in range(t.c) for ki in range(t.kh) for kj in range(t.kw)]
    return np.array(rows + [np.ones(t.oh * t.ow)], np.float32)


def _run_conv(x, w, b, t, interpret, residual=None, relu=False, checked=False):
    """launch_conv2d with NaN-filled col, y and out (stale memory must never leak through)."""
    rt.ensure_device()
    s = rt.Stream()
    xd, wd = rt.to_device(x), rt.to_device(C.conv_weights(w, b, t))
    col = rt.to_device(np.full(t.col_elems, np.nan, np.float32))
    y = rt.to_device(np.full((t.n, t.oc, t.oh, t.ow), np.nan, np.float32))
    out = rt.to_device(np.full((t.n, t.oc, t.oh, t.ow), np.nan, np.float32))
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    rd = None if residual is None else rt.to_device(residual)
    opts = {"checked": True} if checked else {}
    C.launch_conv2d(xd, wd, y, col, zeros, t, s, residual=rd, relu=relu, out=out,
                    interpret=interpret, **opts)
    s.synchronize()
    # without a residual the matmul writes out itself (bias in the matmul, ReLU in the fixpipe)
    assert residual is not None or np.isnan(y.copy_to_host()).all()
    return col.copy_to_host(), out.copy_to_host()


CASES = [   # x shape, w shape, stride, padding, dilation
    ((1, 3, 9, 11), (5, 3, 3, 3), 1, 1, 1),                   # stride 1, ragged
    ((2, 4, 8, 16), (16, 4, 3, 3), 1, 1, 1),                  # stride 1, tile-friendly, batch 2
    ((1, 2, 7, 6), (3, 2, 3, 2), (2, 1), (0, 1, 2, 1), (2, 1)),  # H stride, dilation, asym pads
    ((1, 3, 5, 5), (2, 3, 5, 5), 1, 4, 1),                    # taps entirely in the padding
    ((1, 3, 23, 21), (8, 3, 7, 7), 2, 3, 1),                  # conv1-like, stride 2, ragged
    ((1, 5, 9, 10), (4, 5, 3, 3), (1, 3), (1, 2, 0, 1), (1, 2)),  # W stride 3 with dilation
    ((2, 8, 8, 8), (16, 8, 1, 1), 2, 0, 1),                   # 1x1 stride 2
    ((1, 2, 3, 1031), (2, 2, 2, 3), (1, 2), 1, 1),            # too wide for the sparse layout
]


def test_strided_layout_choice():
    assert C.conv2d_tiling((1, 3, 224, 224), (64, 3, 7, 7), 2, 3).rows_per_pass == 10
    assert C.conv2d_tiling((1, 2, 3, 1030), (2, 2, 2, 3), (1, 2), 1).rows_per_pass == 0
    assert C.conv2d_tiling((1, 3, 9, 11), (5, 3, 3, 3), 1, 1).rows_per_pass == 0


@pytest.mark.parametrize("shape,w_shape,stride,pad,dil", CASES)
def test_img2col_and_conv_match_numpy(interpret, shape, w_shape, stride, pad, dil):
    rng = np.random.default_rng(sum(shape) + sum(w_shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    t1 = C.conv2d_tiling((1,) + shape[1:], w_shape, stride, pad, dil)
    assert not t1.direct
    col, _ = _run_conv(x[:1], w, b, t1, interpret)
    col, ref = col.reshape(t1.k_rows, -1), _col_reference(x, t1)
    if t1.subsample:        # 1x1 stride 2: the matmul adds the ones row in L1, col has C rows
        np.testing.assert_array_equal(col[:-1], ref[:-1])
        assert np.isnan(col[-1]).all()
    else:
        np.testing.assert_array_equal(col, ref)
    _, y = _run_conv(x, w, b, C.conv2d_tiling(shape, w_shape, stride, pad, dil), interpret)
    np.testing.assert_allclose(y, C.conv2d_reference(x, w, b, stride, pad, dil), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("shape,oc", [((1, 16, 8, 8), 32), ((2, 5, 7, 9), 3),
                                      ((1, 24, 3, 3), 130),
                                      ((1, 128, 3, 5), 20),   # the ones row alone in a K chunk
                                      ((1, 127, 2, 3), 17),   # ... last in a full chunk
                                      ((1, 20, 17, 19), 33)])  # 2 N tiles, the second ragged
@pytest.mark.parametrize("with_bias", [True, False])
def test_direct_1x1_path(interpret, shape, oc, with_bias):
    rng = np.random.default_rng(shape[1] + oc)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((oc, shape[1], 1, 1)).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32) if with_bias else None
    t = C.conv2d_tiling(shape, w.shape)
    assert t.direct and t.mm.k == shape[1] + 1          # + the ones row the matmul adds in L1
    wmat = C.conv_matrix(w, b, t)
    assert wmat.shape == (oc, shape[1] + 1)
    np.testing.assert_array_equal(wmat[:, -1], 0 if b is None else b)
    _, y = _run_conv(x, w, b, t, interpret)
    np.testing.assert_allclose(y, C.conv2d_reference(x, w, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,w_shape,pad", [((1, 6, 9, 9), (7, 6, 3, 3), 1),
                                               ((2, 8, 5, 6), (16, 8, 1, 1), 0)])
@pytest.mark.parametrize("use_res,relu", [(True, True), (True, False), (False, True)])
def test_fused_epilogue(interpret, shape, w_shape, pad, use_res, relu):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    t = C.conv2d_tiling(shape, w_shape, 1, pad)
    res = rng.standard_normal((t.n, t.oc, t.oh, t.ow)).astype(np.float32) if use_res else None
    _, y = _run_conv(x, w, b, t, interpret, residual=res, relu=relu)
    ref = C.conv2d_reference(x, w, b, 1, pad) + (0 if res is None else res)
    np.testing.assert_allclose(y, np.maximum(ref, 0) if relu else ref, rtol=1e-4, atol=1e-4)
    assert not relu or (y >= 0).all()


@pytest.mark.parametrize("w_shape,pad", [((7, 6, 3, 3), 1), ((5, 6, 1, 1), 0)])
def test_relu_output_over_what_the_matmul_reads(interpret, w_shape, pad):
    """out sharing bytes with the img2col workspace (3x3) or with x (direct 1x1), as a memory
    plan may place them: the matmul must not write out while it still reads them, so it writes
    y and the epilogue applies the ReLU into out."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 6, 9, 8)).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    t = C.conv2d_tiling(x.shape, w_shape, 1, pad)
    rt.ensure_device()
    s = rt.Stream()
    n_out = t.oc * t.oh * t.ow
    src = np.concatenate([x.ravel(), np.zeros(max(t.col_elems, n_out), np.float32)]) \
        if t.direct else np.full(max(t.col_elems, n_out), np.nan, np.float32)
    buf = rt.to_device(src)       # x (direct) or col, and out at its start
    xd = rt.DeviceArray(x.shape, np.float32, buf.ptr) if t.direct else rt.to_device(x)
    col = None if t.direct else buf
    out = rt.DeviceArray((1, t.oc, t.oh, t.ow), np.float32, buf.ptr)
    y = rt.to_device(np.full((1, t.oc, t.oh, t.ow), np.nan, np.float32))
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    C.launch_conv2d(xd, rt.to_device(C.conv_weights(w, b, t)), y, col, zeros, t, s, relu=True,
                    out=out, interpret=interpret)
    s.synchronize()
    ref = np.maximum(C.conv2d_reference(x, w, b, 1, pad), 0)
    np.testing.assert_allclose(out.copy_to_host(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.copy_to_host(), C.conv2d_reference(x, w, b, 1, pad), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("rows,p,oc", [(3, 5000, 3), (70, 49, 35), (16, 64, 16)])
def test_epilogue_kernel_row_blocks_and_long_rows(interpret, rows, p, oc):
    """Rows longer than a UB tile are cut in column chunks; short rows go many per copy."""
    rng = np.random.default_rng(rows)
    y = rng.standard_normal((rows, p)).astype(np.float32)
    res = rng.standard_normal((rows, p)).astype(np.float32)
    bias = rng.standard_normal(oc).astype(np.float32)
    t = C.conv2d_tiling((rows // oc, 1, 1, p), (oc, 1, 1, 1))
    rt.ensure_device()
    s = rt.Stream()
    yd, out = rt.to_device(y), rt.to_device(np.full((rows, p), np.nan, np.float32))
    C.launch_epilogue(yd, out, t, s, rt.to_device(bias), rt.to_device(res), True,
                      interpret=interpret)
    s.synchronize()
    ref = np.maximum(y + np.tile(bias, rows // oc)[:, None] + res, 0)
    np.testing.assert_allclose(out.copy_to_host(), ref, rtol=1e-6, atol=1e-6)


def test_checked_mode_strided_and_fused():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 3, 11, 13)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    for stride in (1, 2):
        t = C.conv2d_tiling(x.shape, w.shape, stride, 1)
        res = rng.standard_normal((1, 4, t.oh, t.ow)).astype(np.float32)
        _, y = _run_conv(x, w, b, t, False, residual=res, relu=True, checked=True)
        ref = np.maximum(C.conv2d_reference(x, w, b, stride, 1) + res, 0)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_residual_relu_api_and_errors():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    res = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    y = C.conv2d(x, w, None, padding=1, residual=res, relu=True)
    np.testing.assert_allclose(y, np.maximum(C.conv2d_reference(x, w, None, 1, 1) + res, 0),
                               rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"conv2d: residual must have the output shape "
                                         r"\(1, 3, 6, 6\), got residual.shape=\(1, 3, 4, 4\)"):
        C.conv2d(x, w, None, padding=1, residual=res[:, :, :4, :4])
