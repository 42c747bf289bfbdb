"""acl.media.venc_set/get_channel_desc_param (aclvencSetChannelDescParam, documented for pyACL):
each aclvencChannelDescParamType sets what its named setter sets, a channel made with the param
calls alone encodes with them (IDR every key_frame_interval), bad types and values refused."""
import numpy as np

import rt.acl as acl
from test_video import (H264_MAIN, NV12, Reporter, align, frames_of, from_dev, m, nal_types,
                        set_all, to_dev)

THREAD, CALLBACK, PIX_FMT, ENTYPE, WIDTH, HEIGHT, KEY_INT = 0, 1, 2, 3, 4, 5, 6
MAX_BITRATE, MAX_IP_PROP = 11, 12


def test_param_calls_match_the_named_setters(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    d = m.venc_create_channel_desc()
    for ptype, getter, value in ((WIDTH, m.venc_get_channel_desc_pic_width, 176),
                                 (HEIGHT, m.venc_get_channel_desc_pic_height, 144),
                                 (KEY_INT, m.venc_get_channel_desc_key_frame_interval, 3),
                                 (MAX_BITRATE, m.venc_get_channel_desc_max_bit_rate, 4000)):
        assert m.venc_set_channel_desc_param(d, ptype, value) == 0
        assert getter(d) == value and m.venc_get_channel_desc_param(d, ptype) == (value, 0)
    assert m.venc_set_channel_desc_rc_mode(d, 2) == 0
    assert m.venc_get_channel_desc_param(d, 9) == (2, 0)
    assert m.venc_get_channel_desc_param(d, MAX_IP_PROP) == (1, 0)
    assert m.venc_set_channel_desc_param(d, MAX_IP_PROP, 8) == 0
    assert m.venc_get_channel_desc_param(d, MAX_IP_PROP) == (8, 0)
    assert m.venc_set_channel_desc_param(d, 13, 1) == acl.ACL_ERROR_INVALID_PARAM
    assert "param_type must be an aclvencChannelDescParamType (0 .. 12), got param_type=13" in \
        acl.get_recent_err_msg()
    assert m.venc_set_channel_desc_param(d, KEY_INT, 0) == acl.ACL_ERROR_INVALID_PARAM
    assert "key_frame_interval must be an int in [1, 65536], got key_frame_interval=0" in \
        acl.get_recent_err_msg()
    assert m.venc_get_channel_desc_param(d, -1) == (None, acl.ACL_ERROR_INVALID_PARAM)


def test_a_channel_made_with_param_calls_encodes_with_them(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    rep = Reporter()
    w, h, packets = 146, 130, []

    def cb(inp, out, user_data):
        packets.append(from_dev(m.dvpp_get_stream_desc_data(out),
                                m.dvpp_get_stream_desc_size(out)).tobytes())
    try:
        d = m.venc_create_channel_desc()
        for ptype, v in ((THREAD, rep.tid), (CALLBACK, cb), (PIX_FMT, NV12),
                         (ENTYPE, H264_MAIN), (WIDTH, w), (HEIGHT, h), (KEY_INT, 3)):
            assert m.venc_set_channel_desc_param(d, ptype, v) == 0, acl.get_recent_err_msg()
        assert m.venc_get_channel_desc_param(d, CALLBACK) == (cb, 0)
        assert m.venc_create_channel(d) == 0, acl.get_recent_err_msg()
        ws = align(w, 16)
        cfg = m.venc_create_frame_config()
        for Y, UV in frames_of(w, h, 7):
            buf = np.zeros(ws * h * 3 // 2, np.uint8)
            buf[:ws * h].reshape(h, ws)[:, :w] = Y
            buf[ws * h:].reshape(h // 2, ws)[:, :w] = UV
            pic = m.dvpp_create_pic_desc()
            set_all(pic, [(m.dvpp_set_pic_desc_data, to_dev(buf)),
                          (m.dvpp_set_pic_desc_size, buf.size)])
            assert m.venc_send_frame(d, pic, 0, cfg, None) == 0, acl.get_recent_err_msg()
        eos = m.venc_create_frame_config()
        assert m.venc_set_frame_config_eos(eos, 1) == 0
        assert m.venc_send_frame(d, 0, 0, eos, None) == 0
        assert m.venc_destroy_channel(d) == 0
    finally:
        rep.stop()
    idr = [i for i, p in enumerate(packets) if 5 in nal_types(p, H264_MAIN)]
    assert len(packets) == 7 and idr == [0, 3, 6]


def test_vdec_param_reads_the_value_at_its_address():
    assert acl.init() == 0
    d = m.vdec_create_channel_desc()
    v = np.array([13], np.uint32)                       # PIXEL_FORMAT_BGR_888
    assert m.vdec_set_channel_desc_param(d, 6, acl.util.numpy_to_ptr(v)) == (d, 0)
    assert m.vdec_get_channel_desc_out_pic_format(d) == 13
    tid = np.array([(1 << 40) + 7], np.uint64)          # ACL_VDEC_THREAD_ID_UINT64: 8 bytes
    assert m.vdec_set_channel_desc_param(d, 2, acl.util.numpy_to_ptr(tid)) == (d, 0)
    assert m.vdec_get_channel_desc_thread_id(d) == (1 << 40) + 7
    bad = np.array([6], np.uint32)
    assert m.vdec_set_channel_desc_param(d, 0, acl.util.numpy_to_ptr(bad)) == \
        (0, acl.ACL_ERROR_INVALID_PARAM)
    assert "csc_matrix must be an int in [0, 5], got csc_matrix=6" in acl.get_recent_err_msg()
    assert m.vdec_set_channel_desc_param(d, 3, acl.util.numpy_to_ptr(bad))[1] == \
        acl.ACL_ERROR_INVALID_PARAM
    assert "must be set with vdec_set_channel_desc_callback" in acl.get_recent_err_msg()
    assert m.vdec_set_channel_desc_param(d, 11, acl.util.numpy_to_ptr(bad))[1] == \
        acl.ACL_ERROR_INVALID_PARAM
    assert "param_type must be an aclvdecChannelDescParamType (0 .. 10)" in \
        acl.get_recent_err_msg()
