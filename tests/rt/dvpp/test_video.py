"""VDEC / VENC through acl.media: NV12/NV21 frames -> VENC (H.264, H.265) -> VDEC -> the same
frames within a PSNR bound, callbacks on the thread subscribed for the channel (a real
acl.util.start_thread loop of process_report), EOS flushing, output sizes and strides, skipped
frames, and bad input refused by code."""
import threading
import time

import numpy as np
import pytest

import rt
import rt.acl as acl
from rt.errors import ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_INVALID_PARAM
from dvpp_helpers import picture, ref_nv12

pytest.importorskip("av", reason="VDEC/VENC need PyAV: pip install 'ascend-emu[video]'")

m = acl.media
H2D, D2H = acl.ACL_MEMCPY_HOST_TO_DEVICE, acl.ACL_MEMCPY_DEVICE_TO_HOST
NV12, NV21 = 1, 2
H265, H264_BASE, H264_MAIN, H264_HIGH = 0, 1, 2, 3


def align(x, a):
    return (x + a - 1) // a * a


class Reporter:
    """A callback thread as the pyACL samples run it: process_report in a loop."""

    def __init__(self):
        self.running = True
        self.tid, ret = acl.util.start_thread(self._loop, [])
        assert ret == 0

    def _loop(self, _args):
        while self.running:
            if acl.rt.process_report(20) == 107012:        # not subscribed yet
                time.sleep(0.005)

    def stop(self):
        self.running = False
        assert acl.util.stop_thread(self.tid) == 0


@pytest.fixture
def soc310p(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310P3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    rep = Reporter()
    yield rep
    rep.stop()


def to_dev(a: np.ndarray) -> int:
    p, ret = m.dvpp_malloc(a.size)
    assert ret == 0
    assert acl.rt.memcpy(p, a.size, acl.util.numpy_to_ptr(a), a.size, H2D) == 0
    return p


def from_dev(p: int, n: int) -> np.ndarray:
    out = np.empty(n, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, p, n, D2H) == 0
    return out


def frames_of(w, h, n, fmt=NV12):
    """n moving test pictures as (Y, UV) planes (UV interleaved in `fmt`'s order)."""
    out = []
    for i in range(n):
        rgb = np.roll(picture(w + 40, h, seed=3), -4 * i, axis=1)[:, :w]
        out.append(ref_nv12(rgb, nv21=fmt == NV21))
    return out


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def set_all(obj, calls):
    for fn, v in calls:
        assert fn(obj, v) == 0, acl.get_recent_err_msg()


def encode(rep, frames, w, h, entype, fmt=NV12, force_i=(), key_frame_interval=8):
    """Send every frame at once (each in its own buffer), then EOS; returns (packets, callback
    thread ids, user_data order)."""
    packets, tids, order, sent = [], [], [], {}

    def cb(inp, out, user_data):
        tids.append(threading.get_ident())
        assert inp == sent[user_data]                # the pic desc handle sent with the frame
        assert m.dvpp_get_stream_desc_ret_code(out) == 0
        n = m.dvpp_get_stream_desc_size(out)
        packets.append(from_dev(m.dvpp_get_stream_desc_data(out), n).tobytes())
        order.append(user_data)

    ch = m.venc_create_channel_desc()
    set_all(ch, [(m.venc_set_channel_desc_thread_id, rep.tid),
                 (m.venc_set_channel_desc_callback, cb), (m.venc_set_channel_desc_entype, entype),
                 (m.venc_set_channel_desc_pic_format, fmt), (m.venc_set_channel_desc_pic_width, w),
                 (m.venc_set_channel_desc_pic_height, h),
                 (m.venc_set_channel_desc_key_frame_interval, key_frame_interval),
                 (m.venc_set_channel_desc_max_bit_rate, 8000)])
    assert m.venc_create_channel(ch) == 0, acl.get_recent_err_msg()
    ws = align(w, 16)
    plain, forced = m.venc_create_frame_config(), m.venc_create_frame_config()
    assert m.venc_set_frame_config_force_i_frame(forced, 1) == 0
    for i, (Y, UV) in enumerate(frames):
        buf = np.zeros(ws * h * 3 // 2, np.uint8)
        buf[:ws * h].reshape(h, ws)[:, :w] = Y
        buf[ws * h:].reshape(h // 2, ws)[:, :w] = UV
        pic = m.dvpp_create_pic_desc()
        set_all(pic, [(m.dvpp_set_pic_desc_data, to_dev(buf)), (m.dvpp_set_pic_desc_size, buf.size),
                      (m.dvpp_set_pic_desc_width, w), (m.dvpp_set_pic_desc_height, h),
                      (m.dvpp_set_pic_desc_width_stride, ws),
                      (m.dvpp_set_pic_desc_height_stride, h)])
        cfg = forced if i in force_i else plain
        sent[i] = pic
        assert m.venc_send_frame(ch, pic, 0, cfg, i) == 0, acl.get_recent_err_msg()
    eos = m.venc_create_frame_config()
    assert m.venc_set_frame_config_eos(eos, 1) == 0
    assert m.venc_send_frame(ch, 0, 0, eos, None) == 0, acl.get_recent_err_msg()
    assert len(packets) == len(frames)          # EOS returned after every callback
    assert m.venc_destroy_channel(ch) == 0
    assert m.venc_destroy_channel_desc(ch) == 0
    return packets, tids, order


def decode(rep, packets, entype, out_fmt=NV12, dims=None, channel_id=0, skip=(), csc=None,
           bit_depth=None):
    """Send every packet at once, then EOS; returns [(user_data, ret_code, (w, h, ws, hs),
    frame bytes or None, output handle)] in callback order, and the callback thread ids."""
    results, tids, sent = [], [], {}

    def cb(inp, out, user_data):
        tids.append(threading.get_ident())
        assert (inp, out) == sent[user_data]          # the handles sent with the frame
        if out == 0:
            results.append((user_data, None, None, None, 0))
            return
        f = tuple(getattr(m, f"dvpp_get_pic_desc_{k}")(out)
                  for k in ("width", "height", "width_stride", "height_stride"))
        code = m.dvpp_get_pic_desc_ret_code(out)
        data = from_dev(m.dvpp_get_pic_desc_data(out), f[2] * f[3] * 3 // 2) if code == 0 \
            else None
        results.append((user_data, code, f, data, out))

    ch = m.vdec_create_channel_desc()
    set_all(ch, [(m.vdec_set_channel_desc_channel_id, channel_id),
                 (m.vdec_set_channel_desc_thread_id, rep.tid),
                 (m.vdec_set_channel_desc_callback, cb), (m.vdec_set_channel_desc_entype, entype),
                 (m.vdec_set_channel_desc_out_pic_format, out_fmt)])
    if bit_depth is not None:
        assert m.vdec_set_channel_desc_bit_depth(ch, bit_depth) == 0
    if csc is not None:                 # ACL_VDEC_CSC_MATRIX_UINT32, the value by host address
        value = np.array([csc], np.uint32)
        assert m.vdec_set_channel_desc_param(ch, 0, acl.util.numpy_to_ptr(value)) == (ch, 0)
    assert m.vdec_create_channel(ch) == 0, acl.get_recent_err_msg()
    for i, p in enumerate(packets):
        sd = m.dvpp_create_stream_desc()
        set_all(sd, [(m.dvpp_set_stream_desc_data, to_dev(np.frombuffer(p, np.uint8).copy())),
                     (m.dvpp_set_stream_desc_size, len(p))])
        if i in skip:
            sent[i] = (sd, 0)
            assert m.vdec_send_skipped_frame(ch, sd, 0, i) == 0, acl.get_recent_err_msg()
            continue
        n = 4 << 20
        buf, _ = m.dvpp_malloc(n)
        out = m.dvpp_create_pic_desc()
        set_all(out, [(m.dvpp_set_pic_desc_data, buf), (m.dvpp_set_pic_desc_size, n)])
        if dims:
            set_all(out, [(getattr(m, f"dvpp_set_pic_desc_{k}"), v) for k, v in
                          zip(("width", "height", "width_stride", "height_stride"), dims)])
        sent[i] = (sd, out)
        assert m.vdec_send_frame(ch, sd, out, 0, i) == 0, acl.get_recent_err_msg()
    eos = m.dvpp_create_stream_desc()
    assert m.dvpp_set_stream_desc_eos(eos, 1) == 0
    assert m.vdec_send_frame(ch, eos, 0, 0, None) == 0, acl.get_recent_err_msg()
    assert len(results) == len(packets)
    assert m.vdec_destroy_channel(ch) == 0
    return results, tids


def planes(data, w, h, ws, hs):
    return data[:ws * hs].reshape(hs, ws)[:h, :w], \
        data[ws * hs:].reshape(hs // 2, ws)[:h // 2, :w]


@pytest.mark.parametrize("w,h", [(176, 144), (146, 130)])          # tile-multiple, ragged
@pytest.mark.parametrize("entype", [H264_MAIN, H265])
@pytest.mark.parametrize("fmt", [NV12, NV21])
def test_encode_decode_round_trip(soc310p, w, h, entype, fmt):
    src = frames_of(w, h, 6, fmt)
    packets, enc_tids, order = encode(soc310p, src, w, h, entype, fmt, force_i={4},
                                      key_frame_interval=3)
    assert set(enc_tids) == {soc310p.tid} and order == list(range(6))
    # Annex B: start codes; parameter sets before the first picture; IDRs at 0, 3 (interval)
    # and 4 (forced), P frames elsewhere
    assert all(p[:4] == b"\0\0\0\1" for p in packets)
    types = [nal_types(p, entype) for p in packets]
    assert types[0][0] == (7 if entype != H265 else 32), types[0]          # SPS / VPS first
    idr = {5} if entype != H265 else {19, 20}
    assert [bool(idr & set(t)) for t in types] == [True, False, False, True, True, False], types
    results, dec_tids = decode(soc310p, packets, entype, fmt)
    assert set(dec_tids) == {soc310p.tid}
    assert [r[0] for r in results] == list(range(6))
    for (i, code, (gw, gh, ws, hs), data, _), (Y, UV) in zip(results, src):
        assert code == 0 and (gw, gh, ws, hs) == (w, h, align(w, 16), h)
        gY, gUV = planes(data, gw, gh, ws, hs)
        assert psnr(gY, Y) > 33 and psnr(gUV, UV) > 33, (i, psnr(gY, Y), psnr(gUV, UV))


def nal_types(p: bytes, entype: int) -> list:
    """The NAL unit types of an Annex B packet, in order."""
    out, k = [], p.find(b"\0\0\1")
    while k >= 0:
        head = p[k + 3]
        out.append((head >> 1) & 0x3F if entype == H265 else head & 0x1F)
        k = p.find(b"\0\0\1", k + 3)
    return out


def test_output_scaled_by_vdec_and_skipped_frames(soc310p):
    w, h = 176, 144
    src = frames_of(w, h, 4)
    packets, _, _ = encode(soc310p, src, w, h, H264_BASE)
    ow, oh, ws, hs = 88, 72, 96, 72                          # VDEC's VPC halves the picture
    results, _ = decode(soc310p, packets, H264_BASE, NV12, dims=(ow, oh, ws, hs), skip={2})
    by_frame = {r[0]: r for r in results}
    assert by_frame[2][4] == 0 and by_frame[2][1] is None    # skipped: output 0
    for i in (0, 1, 3):
        _, code, f, data, _ = by_frame[i]
        assert code == 0 and f == (ow, oh, ws, hs)
        gY, _ = planes(data, ow, oh, ws, hs)
        ref = src[i][0].reshape(oh, 2, ow, 2).mean(axis=(1, 3))   # 2x down: 2x2 means
        assert psnr(gY, ref) > 30


def test_eos_gives_late_frames_nopic_and_bad_data_a_code(soc310p):
    w, h = 176, 144
    packets, _, _ = encode(soc310p, frames_of(w, h, 2), w, h, H264_MAIN)
    junk = bytes(np.random.RandomState(0).randint(0, 256, 300, dtype=np.uint8))
    # a P frame without its IDR and random bytes: no picture comes out for either
    results, _ = decode(soc310p, [packets[1], b"\0\0\0\1" + junk], H264_MAIN)
    codes = sorted(r[1] for r in results)
    assert all(c in (0x20000, 507018) for c in codes), codes


def test_vdec_rules_by_code(soc310p):
    ch = m.vdec_create_channel_desc()
    assert m.vdec_set_channel_desc_entype(ch, 7) == ACL_ERROR_INVALID_PARAM
    assert "entype must be an acldvppStreamFormat" in acl.get_recent_err_msg()
    assert m.vdec_set_channel_desc_channel_id(ch, 256) == ACL_ERROR_INVALID_PARAM
    assert m.vdec_set_channel_desc_callback(ch, 5) == ACL_ERROR_INVALID_PARAM
    assert "callback must be callable" in acl.get_recent_err_msg()
    assert m.vdec_create_channel(ch) == ACL_ERROR_INVALID_PARAM
    assert "thread_id and callback must be set" in acl.get_recent_err_msg()
    set_all(ch, [(m.vdec_set_channel_desc_thread_id, soc310p.tid),
                 (m.vdec_set_channel_desc_callback, lambda *a: None),
                 (m.vdec_set_channel_desc_entype, H264_MAIN)])
    assert m.vdec_get_channel_desc_entype(ch) == H264_MAIN
    assert m.vdec_create_channel(ch) == 0
    twin = m.vdec_create_channel_desc()
    set_all(twin, [(m.vdec_set_channel_desc_thread_id, soc310p.tid),
                   (m.vdec_set_channel_desc_callback, lambda *a: None)])
    assert m.vdec_create_channel(twin) == ACL_ERROR_INVALID_PARAM        # channel id 0 twice
    assert "channel_id must differ" in acl.get_recent_err_msg()
    sd, out = m.dvpp_create_stream_desc(), m.dvpp_create_pic_desc()
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "input must hold one frame (an empty packet needs eos=1), got data=0x0 size=0" in \
        acl.get_recent_err_msg()
    data = to_dev(np.zeros(64, np.uint8))
    set_all(sd, [(m.dvpp_set_stream_desc_data, data), (m.dvpp_set_stream_desc_size, 64)])
    buf, _ = m.dvpp_malloc(1 << 16)
    set_all(out, [(m.dvpp_set_pic_desc_data, buf), (m.dvpp_set_pic_desc_size, 1 << 16),
                  (m.dvpp_set_pic_desc_width, 128)])
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "must be set together or all left 0" in acl.get_recent_err_msg()
    set_all(out, [(m.dvpp_set_pic_desc_height, 128), (m.dvpp_set_pic_desc_width_stride, 136),
                  (m.dvpp_set_pic_desc_height_stride, 128)])
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "width_stride must be a multiple of 16" in acl.get_recent_err_msg()
    set_all(out, [(m.dvpp_set_pic_desc_width, 12), (m.dvpp_set_pic_desc_width_stride, 48)])
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "width_stride must be a multiple of 32 for a width under 16, got width_stride=48" in \
        acl.get_recent_err_msg()
    set_all(out, [(m.dvpp_set_pic_desc_width, 128), (m.dvpp_set_pic_desc_width_stride, 128),
                  (m.dvpp_set_pic_desc_format, 7)])     # YUYV
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "output format must be PIXEL_FORMAT_YUV_SEMIPLANAR_420" in acl.get_recent_err_msg()
    assert m.vdec_destroy_channel_desc(ch) == ACL_ERROR_INVALID_PARAM      # channel still open
    assert m.vdec_destroy_channel(ch) == 0
    assert m.vdec_send_frame(ch, sd, out, 0, None) == ACL_ERROR_INVALID_PARAM
    assert m.vdec_destroy_channel_desc(ch) == 0


def test_venc_rules_by_code(soc310p):
    ch = m.venc_create_channel_desc()
    assert m.venc_set_channel_desc_buf_size(ch, 1 << 20) == ACL_ERROR_INVALID_PARAM
    assert m.venc_set_channel_desc_max_bit_rate(ch, 1) == ACL_ERROR_INVALID_PARAM
    assert "max_bit_rate must be 0 (the default, 2000) or in [2, 614400] kbps, got " \
           "max_bit_rate=1" in acl.get_recent_err_msg()
    set_all(ch, [(m.venc_set_channel_desc_thread_id, soc310p.tid),
                 (m.venc_set_channel_desc_callback, lambda *a: None),
                 (m.venc_set_channel_desc_pic_width, 4096),
                 (m.venc_set_channel_desc_pic_height, 4096)])
    assert m.venc_create_channel(ch) == ACL_ERROR_INVALID_PARAM
    assert "at most 4096*2304 pixels for H.264, got 4096x4096" in acl.get_recent_err_msg()
    set_all(ch, [(m.venc_set_channel_desc_pic_width, 130),
                 (m.venc_set_channel_desc_pic_height, 120)])
    assert m.venc_create_channel(ch) == ACL_ERROR_INVALID_PARAM
    assert "resolution must be within 128x128 .. 4096x4096, got 130x120" in \
        acl.get_recent_err_msg()
    set_all(ch, [(m.venc_set_channel_desc_pic_height, 128)])
    assert m.venc_create_channel(ch) == 0
    pic = m.dvpp_create_pic_desc()
    set_all(pic, [(m.dvpp_set_pic_desc_width, 130), (m.dvpp_set_pic_desc_height, 128),
                  (m.dvpp_set_pic_desc_width_stride, 136)])
    assert m.venc_send_frame(ch, pic, 0, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "width_stride must be a multiple of 16 and >= width=130, got width_stride=136" in \
        acl.get_recent_err_msg()
    set_all(pic, [(m.dvpp_set_pic_desc_width_stride, 144)])
    assert m.venc_send_frame(ch, pic, 0, 0, None) == ACL_ERROR_INVALID_PARAM
    assert "input size must be >= width_stride * height * 3 / 2 = 27648" in \
        acl.get_recent_err_msg()
    assert m.venc_destroy_channel(ch) == 0


def test_venc_is_not_on_a2(monkeypatch):
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    assert rt.get_soc_name().startswith("Ascend910B")
    ch = m.venc_create_channel_desc()
    set_all(ch, [(m.venc_set_channel_desc_thread_id, threading.get_ident()),
                 (m.venc_set_channel_desc_callback, lambda *a: None),
                 (m.venc_set_channel_desc_pic_width, 128),
                 (m.venc_set_channel_desc_pic_height, 128)])
    assert m.venc_create_channel(ch) == ACL_ERROR_FEATURE_UNSUPPORTED
    assert "VENC must run on an SoC that has it (Atlas inference series Ascend310P*, Atlas " \
           "200I/500 A2), got Ascend910B" in acl.get_recent_err_msg()


def test_stream_desc_calls():
    sd = m.dvpp_create_stream_desc()
    set_all(sd, [(m.dvpp_set_stream_desc_size, 10), (m.dvpp_set_stream_desc_format, H265),
                 (m.dvpp_set_stream_desc_timestamp, 99), (m.dvpp_set_stream_desc_eos, 1)])
    assert (m.dvpp_get_stream_desc_size(sd), m.dvpp_get_stream_desc_format(sd),
            m.dvpp_get_stream_desc_timestamp(sd), m.dvpp_get_stream_desc_eos(sd)) == \
        (10, H265, 99, 1)
    assert m.dvpp_set_stream_desc_eos(sd, 2) == ACL_ERROR_INVALID_PARAM
    assert m.dvpp_destroy_stream_desc(sd) == 0
    assert m.dvpp_get_stream_desc_size(sd) == 0                       # stale handle
    assert m.dvpp_destroy_stream_desc(sd) == ACL_ERROR_INVALID_PARAM


def test_pyacl_video_names_are_there():
    names = [n for n in dir(m) if n.startswith(("vdec_", "venc_"))]
    for n in ("vdec_create_channel_desc", "vdec_set_channel_desc_out_pic_format",
              "vdec_send_frame", "vdec_send_skipped_frame", "vdec_create_frame_config",
              "venc_set_channel_desc_rc_mode", "venc_set_frame_config_force_i_frame",
              "venc_send_frame", "venc_destroy_channel"):
        assert n in names
    assert len(names) == 67         # 30 vdec_* + 37 venc_*


def test_b_frames_reach_the_desc_of_their_own_packet(soc310p):
    """A stream with B frames (not VENC's: PyAV's libx264 with bframes=2): pictures come out in
    display order, each in the output desc sent with its own packet."""
    import av
    from fractions import Fraction
    w, h = 128, 128
    src = frames_of(w, h, 8)
    enc = av.CodecContext.create("libx264", "w")
    enc.width, enc.height, enc.pix_fmt = w, h, "yuv420p"
    enc.time_base, enc.framerate = Fraction(1, 30), Fraction(30, 1)
    enc.options = {"bframes": "2", "crf": "12"}
    packets, shown = [], []
    for i, (Y, UV) in enumerate(src):
        planar = np.concatenate([Y.reshape(-1), UV[:, 0::2].reshape(-1),
                                 UV[:, 1::2].reshape(-1)]).reshape(h * 3 // 2, w)
        f = av.VideoFrame.from_ndarray(planar, format="yuv420p")
        f.pts = i
        for p in enc.encode(f):
            packets.append(bytes(p))
            shown.append(p.pts)
    for p in enc.encode(None):
        packets.append(bytes(p))
        shown.append(p.pts)
    assert shown != sorted(shown)                         # decode order != display order
    results, _ = decode(soc310p, packets, H264_HIGH)
    callback_order = [shown[r[0]] for r in results]
    assert callback_order == list(range(8))               # display order
    for k, code, f, data, _ in results:
        assert code == 0
        gY, _ = planes(data, *f)
        assert psnr(gY, src[shown[k]][0]) > 35


def test_parameter_sets_alone_get_no_picture(soc310p):
    w, h = 176, 144
    packets, _, _ = encode(soc310p, frames_of(w, h, 2), w, h, H264_MAIN)
    first = packets[0]
    cut = next(k for k in range(len(first) - 3)            # the IDR slice after SPS / PPS
               if first[k:k + 3] == b"\0\0\1" and first[k + 3] & 0x1F == 5)
    assert nal_types(first[:cut], H264_MAIN) == [7, 8] or 6 in nal_types(first[:cut], H264_MAIN)
    results, _ = decode(soc310p, [first[:cut], first[cut:], packets[1]], H264_MAIN)
    assert [(r[0], r[1]) for r in results] == [(0, 0x20000), (1, 0), (2, 0)]


def test_video_tasks_on_their_unit_tracks(soc310p):
    from rt.profiler import DVPP_TID_BASE, DVPP_UNITS
    w, h = 128, 128
    with rt.profile() as prof:
        packets, _, _ = encode(soc310p, frames_of(w, h, 2), w, h, H264_BASE)
        decode(soc310p, packets, H264_BASE)
    ev = [e for e in prof.chrome_trace()["traceEvents"] if e.get("ph") == "X"]
    on = {}
    for e in ev:
        if e["tid"] >= DVPP_TID_BASE:
            on.setdefault(DVPP_UNITS[e["tid"] - DVPP_TID_BASE], []).append(e["name"])
    assert on["VENC"] == ["venc_encode", "venc_encode", "venc_eos"]
    assert on["VDEC"] == ["vdec_decode", "vdec_decode", "vdec_eos"]


def test_a_stream_below_vdec_minimum_resolution_fails_its_frames(soc310p):
    import av
    from fractions import Fraction
    enc = av.CodecContext.create("libx264", "w")
    enc.width, enc.height, enc.pix_fmt = 96, 64, "yuv420p"        # VDEC decodes >= 128x128
    enc.time_base = Fraction(1, 30)
    enc.options = {"tune": "zerolatency"}
    f = av.VideoFrame.from_ndarray(np.full((96, 96), 128, np.uint8), format="yuv420p")
    f.pts = 0
    packets = [bytes(p) for p in enc.encode(f)] + [bytes(p) for p in enc.encode(None)]
    results, _ = decode(soc310p, packets, H264_MAIN)
    assert [r[1] for r in results] == [ACL_ERROR_INVALID_PARAM]


def test_venc_output_ring_hands_out_in_order_and_waits_when_full():
    from rt.dvpp.video_venc import OutputRing
    ring = OutputRing(1000, 100)
    assert [ring.take(60) - 1000, ring.take(30) - 1000] == [0, 60]
    got = []
    t = threading.Thread(target=lambda: got.append(ring.take(20) - 1000))
    t.start()
    time.sleep(0.05)
    assert got == []                    # 20 bytes fit neither after 90 nor before 0: it waits
    ring.give_back()                    # the first packet's callback returned: [0, 60) free
    t.join()
    assert got == [0]                   # wrapped to the start
    assert ring.take(40) - 1000 == 20   # after the wrapped one, before the held [60, 90)
    ring.give_back()
    ring.give_back()
    ring.give_back()
    assert ring.take(100) - 1000 == 0   # all given back: the whole buffer


def test_venc_writes_into_the_callers_buffer(soc310p):
    w, h = 128, 128
    buf_size = 5 << 20
    buf, _ = m.dvpp_malloc(buf_size)
    seen = []
    ch = m.venc_create_channel_desc()
    set_all(ch, [(m.venc_set_channel_desc_thread_id, soc310p.tid),
                 (m.venc_set_channel_desc_callback,
                  lambda i, o, u: seen.append(m.dvpp_get_stream_desc_data(o))),
                 (m.venc_set_channel_desc_pic_width, w), (m.venc_set_channel_desc_pic_height, h),
                 (m.venc_set_channel_desc_buf_addr, buf),
                 (m.venc_set_channel_desc_buf_size, buf_size)])
    assert m.venc_create_channel(ch) == 0
    Y, UV = frames_of(w, h, 1)[0]
    frame = np.concatenate([Y.reshape(-1), UV.reshape(-1)])
    pic = m.dvpp_create_pic_desc()
    set_all(pic, [(m.dvpp_set_pic_desc_data, to_dev(frame)),
                  (m.dvpp_set_pic_desc_size, frame.size), (m.dvpp_set_pic_desc_width, w),
                  (m.dvpp_set_pic_desc_height, h), (m.dvpp_set_pic_desc_width_stride, w)])
    for _ in range(3):
        assert m.venc_send_frame(ch, pic, 0, 0, None) == 0
    eos = m.venc_create_frame_config()
    assert m.venc_set_frame_config_eos(eos, 1) == 0
    assert m.venc_send_frame(ch, 0, 0, eos, None) == 0
    assert len(seen) == 3 and seen[0] == buf and all(buf <= a < buf + buf_size for a in seen)
    assert m.venc_destroy_channel(ch) == 0
