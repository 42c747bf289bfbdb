"""VDEC's packed RGB888 / BGR888 output (vdec_set_channel_desc_out_pic_format: RGB888 and BGR888
everywhere but Atlas 200/300/500 inference and Atlas training products, rt/dvpp/rules.py): the
same stream decoded to NV12 and to RGB/BGR, the RGB equal to the acldvppCscMatrix conversion of
the NV12 picture (default BT.601 wide; BT.601 narrow when the channel's csc_matrix is 1), on a
tile-multiple and a ragged size; refused on Ascend310."""
import numpy as np
import pytest

import rt.acl as acl
from test_video import (H264_MAIN, H265, NV12, Reporter, decode, encode, frames_of, m,
                        planes, set_all)

RGB, BGR = 12, 13


# acldvppCscMatrix (CANN's page): 0 BT.601 wide (the default), 1 BT.601 narrow
MATRICES = {0: (0, 1.0, 1.402, 0.344, 0.714, 1.772),
            1: (16, 1.16438, 1.59602, 0.39176, 0.81297, 2.01723)}


def ref_rgb(y, uv, matrix=0):
    """The matrix in float64, chroma of each 2x2 block repeated, rounded half up."""
    o, g, rv, gu, gv, bu = MATRICES[matrix]
    h, w = y.shape
    c = np.repeat(np.repeat(uv.reshape(h // 2, w // 2, 2), 2, 0), 2, 1).astype(np.float64) - 128
    yy = g * (y.astype(np.float64) - o)
    u, v = c[..., 0], c[..., 1]
    rgb = np.stack([yy + rv * v, yy - gu * u - gv * v, yy + bu * u], -1)
    return np.clip(np.floor(rgb + 0.5), 0, 255)


@pytest.fixture
def rep310p(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    rep = Reporter()
    yield rep
    rep.stop()


@pytest.mark.parametrize("w,h", [(176, 144), (146, 130)])
@pytest.mark.parametrize("entype,csc", [(H264_MAIN, None), (H265, None), (H264_MAIN, 1)])
def test_rgb_and_bgr_output_is_the_nv12_picture_converted(rep310p, w, h, entype, csc):
    packets, _, _ = encode(rep310p, frames_of(w, h, 3), w, h, entype)
    yuv, _ = decode(rep310p, packets, entype, NV12)
    rgb, _ = decode(rep310p, packets, entype, RGB, channel_id=1, csc=csc)
    bgr, _ = decode(rep310p, packets, entype, BGR, channel_id=2, csc=csc)
    for (i, c0, f0, d0, _), (j, c1, f1, d1, _), (k, c2, f2, d2, _) in zip(
            sorted(yuv), sorted(rgb), sorted(bgr)):
        assert i == j == k and c0 == c1 == c2 == 0
        ws = (w * 3 + 15) // 16 * 16
        assert f1 == f2 == (w, h, ws, (h + 1) // 2 * 2)          # default strides: bytes
        y, uv = planes(d0, w, h, f0[2], f0[3])
        want = ref_rgb(y, uv, csc or 0)
        got = d1[:ws * h].reshape(h, ws)[:, :w * 3].reshape(h, w, 3).astype(np.float64)
        got_bgr = d2[:ws * h].reshape(h, ws)[:, :w * 3].reshape(h, w, 3).astype(np.float64)
        assert np.abs(got - want).max() <= 1 and np.mean(got != want) < 0.01
        np.testing.assert_array_equal(got_bgr, got[..., ::-1])


def test_rgb_output_strides_are_bytes(rep310p):
    w, h = 176, 144
    packets, _, _ = encode(rep310p, frames_of(w, h, 1), w, h, H264_MAIN)
    ch = m.vdec_create_channel_desc()
    set_all(ch, [(m.vdec_set_channel_desc_thread_id, rep310p.tid),
                 (m.vdec_set_channel_desc_callback, lambda *a: None),
                 (m.vdec_set_channel_desc_entype, H264_MAIN),
                 (m.vdec_set_channel_desc_out_pic_format, RGB)])
    assert m.vdec_create_channel(ch) == 0, acl.get_recent_err_msg()
    sd = m.dvpp_create_stream_desc()
    buf, _ = m.dvpp_malloc(1 << 20)
    out = m.dvpp_create_pic_desc()
    set_all(out, [(m.dvpp_set_pic_desc_data, buf), (m.dvpp_set_pic_desc_size, 1 << 20),
                  (m.dvpp_set_pic_desc_width, w), (m.dvpp_set_pic_desc_height, h),
                  (m.dvpp_set_pic_desc_width_stride, 176), (m.dvpp_set_pic_desc_height_stride, h)])
    p = np.frombuffer(packets[0], np.uint8).copy()
    dp, _ = m.dvpp_malloc(p.size)
    assert acl.rt.memcpy(dp, p.size, acl.util.numpy_to_ptr(p), p.size, 1) == 0
    set_all(sd, [(m.dvpp_set_stream_desc_data, dp), (m.dvpp_set_stream_desc_size, p.size)])
    assert m.vdec_send_frame(ch, sd, out, 0, None) == acl.ACL_ERROR_INVALID_PARAM
    assert ("vdec_send_frame: output width_stride must be a multiple of 16 and >= 528 bytes "
            "(width * 3) for PIXEL_FORMAT_RGB_888, got width_stride=176") in \
        acl.get_recent_err_msg()
    assert m.vdec_destroy_channel(ch) == 0


def test_rgb_output_refused_on_310(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    rep = Reporter()
    try:
        ch = m.vdec_create_channel_desc()
        set_all(ch, [(m.vdec_set_channel_desc_thread_id, rep.tid),
                     (m.vdec_set_channel_desc_callback, lambda *a: None),
                     (m.vdec_set_channel_desc_out_pic_format, BGR)])
        assert m.vdec_create_channel(ch) == acl.ACL_ERROR_INVALID_PARAM
        assert ("vdec_create_channel: vdec_channel_desc out_pic_format must be "
                "PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1) or PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2) on "
                "Atlas 200/300/500 inference products (Ascend310: no RGB output), got "
                "PIXEL_FORMAT_BGR_888") in acl.get_recent_err_msg()
        assert m.vdec_set_channel_desc_out_pic_format(ch, 7) == acl.ACL_ERROR_INVALID_PARAM
    finally:
        rep.stop()
