"""VDEC on 10-bit H.265 (Main10) streams, the channel's bit depth per SoC family, and
vdec_get_channel_desc_param (docs/dvpp.md, "Video")."""
import numpy as np
import pytest

import rt.acl as acl
from test_video import H265, NV12, NV21, Reporter, decode, m, planes, psnr, set_all

av = pytest.importorskip("av", reason="VDEC/VENC need PyAV: pip install 'ascend-emu[video]'")


def main10(w, h, n, seed=0):
    """An H.265 Main10 Annex B stream of n moving pictures (libx265, yuv420p10le): (packets,
    the source RGB pictures)."""
    from fractions import Fraction
    yy, xx = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(seed)
    ctx = av.CodecContext.create("libx265", "w")
    ctx.width, ctx.height, ctx.pix_fmt = w, h, "yuv420p10le"
    ctx.time_base = Fraction(1, 25)
    ctx.options = {"x265-params": "log-level=error:bframes=0"}
    packets, srcs = [], []
    for k in range(n):
        rgb = np.stack([(xx * 2 + 5 * k) % 256, (yy * 3 + 2 * k) % 256,
                        128 + rng.integers(-8, 8, (h, w))], -1).astype(np.uint8)
        srcs.append(rgb)
        fr = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        fr.pts = k
        packets += [bytes(p) for p in ctx.encode(fr)]
    packets += [bytes(p) for p in ctx.encode(None)]
    return packets, srcs


def reference_8bit(packets):
    """FFmpeg's own decode of the stream, each 10-bit sample's 8 high bits: [(Y, UV NV12)]."""
    ctx = av.CodecContext.create("hevc", "r")
    out = []
    for p in packets + [None]:
        for fr in ctx.decode(av.Packet(p) if p is not None else None):
            assert fr.format.name == "yuv420p10le"
            y, u, v = (np.frombuffer(pl, np.uint16).reshape(pl.height, pl.line_size // 2)
                       [:, :pl.width] >> 2 for pl in fr.planes)
            uv = np.empty((u.shape[0], 2 * u.shape[1]), np.uint8)
            uv[:, 0::2], uv[:, 1::2] = u, v
            out.append((y.astype(np.uint8), uv))
    return out


@pytest.fixture
def rep(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    r = Reporter()
    yield r
    r.stop()


@pytest.mark.parametrize("w,h", [(160, 128), (146, 130)])          # tile-multiple, ragged
@pytest.mark.parametrize("fmt", [NV12, NV21])
def test_main10_stream_decodes_to_the_high_8_bits(rep, w, h, fmt):
    packets, srcs = main10(w, h, 3)
    ref = reference_8bit(packets)
    assert len(ref) == 3
    ch = m.vdec_create_channel_desc()
    assert m.vdec_get_channel_desc_bit_depth(ch) == 1          # CANN's default: 10-bit
    results, _ = decode(rep, packets, H265, out_fmt=fmt)
    pics = [r for r in results if r[1] == 0]
    assert len(pics) == 3
    for (user, code, (pw, ph, ws, hs), data, _), (y_ref, uv_ref), src in zip(pics, ref, srcs):
        assert (pw, ph, ws, hs) == (w, h, (w + 15) // 16 * 16, h)
        y, uv = planes(data, w, h, ws, hs)
        if fmt == NV21:
            uv = uv.reshape(h // 2, w // 2, 2)[..., ::-1].reshape(h // 2, w)
        np.testing.assert_array_equal(y, y_ref[:h, :w])
        np.testing.assert_array_equal(uv, uv_ref[:h // 2, :w])
        luma = src.astype(float) @ [0.299, 0.587, 0.114] * 219 / 255 + 16      # BT.601 limited
        assert psnr(y, luma) > 30


def test_an_8_bit_channel_fails_a_10_bit_stream_but_decodes_8_bit(rep):
    packets, _ = main10(160, 128, 2)
    results, _ = decode(rep, packets, H265, bit_depth=0)
    assert len(results) == 2 and all(r[1] == 507018 for r in results), results
    from test_video import encode, frames_of
    p8, _, _ = encode(rep, frames_of(160, 128, 2), 160, 128, H265)
    results, _ = decode(rep, p8, H265, bit_depth=0)
    assert [r[1] for r in results] == [0, 0]


def test_bit_depth_rules_per_family(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    r = Reporter()
    try:
        ch = m.vdec_create_channel_desc()
        assert m.vdec_set_channel_desc_bit_depth(ch, 2) == acl.ACL_ERROR_INVALID_PARAM
        assert "bit_depth must be an int in [0, 1], got bit_depth=2" in acl.get_recent_err_msg()
        set_all(ch, [(m.vdec_set_channel_desc_thread_id, r.tid),
                     (m.vdec_set_channel_desc_callback, lambda *a: None),
                     (m.vdec_set_channel_desc_bit_depth, 0)])
        assert m.vdec_create_channel(ch) == acl.ACL_ERROR_INVALID_PARAM
        assert ("vdec_create_channel: vdec_channel_desc bit_depth must be 1 (10-bit, the "
                "default) on Atlas 200/300/500 inference products (Ascend310: not "
                "user-settable), got bit_depth=0") in acl.get_recent_err_msg()
        assert m.vdec_set_channel_desc_bit_depth(ch, 1) == 0
        assert m.vdec_create_channel(ch) == 0, acl.get_recent_err_msg()
        assert m.vdec_destroy_channel(ch) == 0
    finally:
        r.stop()


def test_get_channel_desc_param_reads_what_was_set():
    assert acl.init() == 0
    d = m.vdec_create_channel_desc()

    def cb(*a):
        return None
    set_all(d, [(m.vdec_set_channel_desc_out_pic_format, NV21),
                (m.vdec_set_channel_desc_thread_id, (1 << 40) + 3),
                (m.vdec_set_channel_desc_callback, cb),
                (m.vdec_set_channel_desc_out_pic_width, 640),
                (m.vdec_set_channel_desc_bit_depth, 0)])
    v = np.array([2], np.uint32)
    assert m.vdec_set_channel_desc_param(d, 0, acl.util.numpy_to_ptr(v)) == (d, 0)
    assert m.vdec_get_channel_desc_param(d, 0) == (4, 2, 0)          # CSC matrix
    assert m.vdec_get_channel_desc_param(d, 2) == (8, (1 << 40) + 3, 0)
    assert m.vdec_get_channel_desc_param(d, 3) == (8, cb, 0)
    assert m.vdec_get_channel_desc_param(d, 5) == (4, H265, 0)       # the default entype
    assert m.vdec_get_channel_desc_param(d, 6) == (4, NV21, 0)
    assert m.vdec_get_channel_desc_param(d, 7) == (4, 640, 0)
    assert m.vdec_get_channel_desc_param(d, 10) == (4, 0, 0)
    assert m.vdec_get_channel_desc_param(d, 11) == (0, 0, acl.ACL_ERROR_INVALID_PARAM)
    assert "vdec_get_channel_desc_param: param_type must be an aclvdecChannelDescParamType " \
           "(0 .. 10), got param_type=11" in acl.get_recent_err_msg()
    assert m.vdec_destroy_channel_desc(d) == 0
    assert m.vdec_get_channel_desc_param(d, 6)[2] == acl.ACL_ERROR_INVALID_PARAM


def test_main10_rgb_output_is_the_8_bit_picture_converted(rep):
    """RGB888 output of a 10-bit stream (Ascend310P has it): the 8 high bits converted by the
    channel's CSC matrix, as for an 8-bit stream (test_video_rgb)."""
    from test_video_rgb import RGB, ref_rgb
    w, h = 146, 130
    packets, _ = main10(w, h, 2, seed=4)
    ref = reference_8bit(packets)
    rgb, _ = decode(rep, packets, H265, RGB)
    assert [r[1] for r in rgb] == [0, 0]
    ws = (w * 3 + 15) // 16 * 16
    for (user, code, dims, data, _), (y, uv) in zip(sorted(rgb, key=lambda r: r[0]), ref):
        assert dims == (w, h, ws, h)
        got = data[:ws * h].reshape(h, ws)[:, :w * 3].reshape(h, w, 3).astype(np.float64)
        want = ref_rgb(y[:h, :w], uv[:h // 2, :w])
        assert np.abs(got - want).max() <= 1 and np.mean(got != want) < 0.01
