"""DVPP tasks compose with streams: events order them across streams, STOP_ON_FAILURE skips them,
mem-check sees them, frees wait for them."""
import io

import numpy as np
from PIL import Image

import rt
from dvpp_helpers import from_device, jpeg_bytes, picture, raises, ref_nv12, to_dvpp, yuv_planes


def _decode_desc(data):
    n = rt.dvpp.jpeg_predict_dec_size(data, None, 1)
    return rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=1, width=64, height=48,
                           width_stride=64, height_stride=48)


def test_event_orders_decode_before_resize_on_another_stream(channel, monkeypatch):
    monkeypatch.setenv("ASCEND_MEM_CHECK", "1")
    s1, s2 = rt.Stream(), rt.Stream()
    data = jpeg_bytes(picture(64, 48))
    dec = _decode_desc(data)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(32 * 24 * 3 // 2), size=32 * 24 * 3 // 2,
                          format=1, width=32, height=24, width_stride=32, height_stride=24)
    ev = rt.Event()
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(data), len(data), dec, s1)
    ev.record(s1)
    s2.wait_event(ev)
    rt.dvpp.vpc_resize_async(channel, dec, out, rt.dvpp.ResizeConfig(2), s2)
    s2.synchronize()
    s1.synchronize()
    Y, _ = ref_nv12(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
    np.testing.assert_array_equal(yuv_planes(from_device(out.data, out.size), 32, 24, 32, 24)[0],
                                  Y[1::2, 1::2])


def test_stop_on_failure_skips_later_dvpp_work(channel, stream):
    stream.set_failure_mode(rt.ACL_STOP_ON_FAILURE)
    good = jpeg_bytes(picture(64, 48))
    bad = good[:100]
    d1, d2 = _decode_desc(good), _decode_desc(good)
    d2.width = d2.height = d2.width_stride = d2.height_stride = 0     # the decode fills them
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(bad), len(bad), d1, stream)
    t2 = rt.dvpp.jpeg_decode_async(channel, to_dvpp(good), len(good), d2, stream)
    with raises(507018, "JPEG"):
        stream.synchronize()
    assert t2.done and d2.width == 0 and d1.ret_code == 507018    # t2 was skipped
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(good), len(good), d2, stream)
    stream.synchronize()                              # the skip state ended with the report
    assert (d2.width, d2.height, d2.ret_code) == (64, 48, 0)


def test_free_waits_for_queued_dvpp_work(channel, stream):
    data = jpeg_bytes(picture(640, 480))
    src = to_dvpp(data)
    dec = _decode_desc(data)
    dec.width = dec.height = dec.width_stride = dec.height_stride = 0
    rt.dvpp.jpeg_decode_async(channel, src, len(data), dec, stream)
    rt.dvpp.free(src)                                 # returns at once; the decode still reads it
    stream.synchronize()
    assert (dec.width, dec.height, dec.ret_code) == (640, 480, 0)
