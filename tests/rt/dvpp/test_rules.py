"""DVPP's rules, refused at the call with CANN's codes and a message naming the rule."""
import numpy as np
import pytest

import rt
from rt.dvpp import PixelFormat as PF
from dvpp_helpers import jpeg_bytes, out_pic, picture, raises, ref_nv12, to_dvpp, yuv_pic

NV12 = PF.YUV_SEMIPLANAR_420


def test_dvpp_malloc_alignment_and_free(dev0):
    ptrs = [rt.dvpp.malloc(n) for n in (1, 100, 4097, 33)]
    assert all(p % 128 == 0 for p in ptrs)
    for p in ptrs:
        rt.dvpp.free(p)
    with raises(207002, "dvpp_free: ptr must be a live address returned by dvpp_malloc"):
        rt.dvpp.free(ptrs[0])
    with raises(100000, "dvpp_malloc: size must be an int > 0"):
        rt.dvpp.malloc(0)
    p = rt.malloc(256)
    with raises(207002, "from rt.malloc: free that with rt.free"):
        rt.dvpp.free(p)


def _src():
    Y, UV = ref_nv12(picture(64, 48))
    return yuv_pic(Y, UV, 64, 48)


@pytest.mark.parametrize("field,value,msg", [
    ("width_stride", 72, r"output_desc width_stride must be a multiple of 16 and >= 64 for "
                         r"PIXEL_FORMAT_YUV_SEMIPLANAR_420, got width_stride=72"),
    ("width_stride", 48, r"output_desc width_stride must be a multiple of 16 and >= 64"),
    ("height_stride", 49, r"output_desc height_stride must be a multiple of 2 and >= "
                          r"height=48, got height_stride=49"),
    ("size", 64 * 48, r"output_desc size must be >= width_stride \* height_stride \* 3 / 2 "
                      r"= 64 \* 48 \* 3 / 2 = 4608"),
    ("width", 63, r"output_desc width and height must be even"),
    ("format", PF.YUV_SEMIPLANAR_422, r"output_desc format must be one of"),
])
def test_vpc_picture_rules(classic_soc, channel, stream, field, value, msg):
    dst = out_pic(64, 48)
    setattr(dst, field, value)
    with raises(100000, "dvpp_vpc_resize_async: " + msg):
        rt.dvpp.vpc_resize_async(channel, _src(), dst, None, stream)
    assert stream.query()                        # nothing was queued


@pytest.mark.parametrize("w,h,msg", [
    (8, 48, r"output_desc resolution must be within 10x6 .. 4096x4096, got 8x48"),
    (4100, 48, r"resolution must be within 10x6 .. 4096x4096"),
    (64, 2000, r"resize height scale must be within \[1/32, 16\], got 48 -> 2000"),
])
def test_vpc_resolution_and_scale(classic_soc, channel, stream, w, h, msg):
    ws = rt.dvpp.align_up(w, 16)
    n = rt.dvpp.yuv420sp_size(ws, h)
    dst = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=NV12, width=w, height=h,
                          width_stride=ws, height_stride=h)
    with raises(100000, msg):
        rt.dvpp.vpc_resize_async(channel, _src(), dst, None, stream)


@pytest.mark.parametrize("roi,msg", [
    ((1, 32, 0, 31), r"crop_area offsets must be even for YUV420SP \(left and top even, right "
                     r"and bottom odd\), got left=1 right=32"),
    ((0, 31, 0, 30), r"crop_area offsets must be even for YUV420SP"),
    ((0, 65, 0, 31), r"crop_area must lie inside the input picture \(64x48"),
    ((0, 5, 0, 5), r"crop_area must be at least 10x6, got 6x6"),
])
def test_crop_roi_rules(classic_soc, channel, stream, roi, msg):
    with raises(100000, "dvpp_vpc_crop_async: " + msg):
        rt.dvpp.vpc_crop_async(channel, _src(), out_pic(32, 32), rt.dvpp.RoiConfig(*roi), stream)


def test_paste_left_must_be_16_aligned(classic_soc, channel, stream):
    with raises(100000, r"paste_area left must be a multiple of 16, got left=8"):
        rt.dvpp.vpc_crop_and_paste_async(channel, _src(), out_pic(128, 96),
                                         rt.dvpp.RoiConfig(0, 31, 0, 31),
                                         rt.dvpp.RoiConfig(8, 39, 0, 31), stream)


def test_jpegd_stride_rules(channel, stream):
    data = jpeg_bytes(picture(64, 48))
    src = to_dvpp(data)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(1 << 16), size=1 << 16, format=NV12,
                          width_stride=96)
    with raises(100000, r"dvpp_jpeg_decode_async: output_desc width_stride must be a multiple "
                        r"of 64 \(or 0: DVPP picks it\), got width_stride=96"):
        rt.dvpp.jpeg_decode_async(channel, src, len(data), out, stream)
    out.width_stride, out.height_stride = 64, 40
    with raises(100000, r"height_stride must be a multiple of 16"):
        rt.dvpp.jpeg_decode_async(channel, src, len(data), out, stream)
    out.height_stride, out.format = 48, PF.RGB_888
    with raises(100000, r"output_desc format must be one of PIXEL_FORMAT_YUV_SEMIPLANAR_420"):
        rt.dvpp.jpeg_decode_async(channel, src, len(data), out, stream)


def test_memory_and_handle_rules(channel, stream):
    data = jpeg_bytes(picture(64, 48))
    host = np.frombuffer(data, np.uint8).copy()
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(8192), size=8192, format=NV12)
    with raises(100000, r"data must be device memory \(from dvpp_malloc\), got host address"):
        rt.dvpp.jpeg_decode_async(channel, host.ctypes.data, len(data), out, stream)
    src = to_dvpp(data)
    with raises(100000, r"data range must fit in its allocation"):
        rt.dvpp.jpeg_decode_async(channel, src, len(data) + 64, out, stream)
    ch = rt.dvpp.ChannelDesc()
    with raises(100000, r"channel_desc must have a channel created by dvpp_create_channel"):
        rt.dvpp.jpeg_decode_async(ch, src, len(data), out, stream)
    ch.create()
    ch.set_mode(rt.dvpp.ChannelMode.VPC)
    with raises(100000, r"channel mode must include DVPP_CHNMODE_JPEGD \(2\)"):
        rt.dvpp.jpeg_decode_async(ch, src, len(data), out, stream)
    out.destroy()
    with raises(100000, r"output_desc must be a live pic desc, got one already destroyed"):
        rt.dvpp.jpeg_decode_async(channel, src, len(data), out, stream)
    with raises(100000, r"interpolation must be an int in \[0, 2\]"):
        rt.dvpp.ResizeConfig(3)


def test_jpege_rules(channel, stream):
    Y, UV = ref_nv12(picture(30, 30))
    small = yuv_pic(Y, UV, 32, 30)
    cap = np.array([1 << 16], np.uint32)
    with raises(100000, r"input_desc resolution must be within 32x32 .. 8192x8192, got 30x30"):
        rt.dvpp.jpeg_encode_async(channel, small, rt.dvpp.malloc(1 << 16), cap, None, stream)
    Y, UV = ref_nv12(picture(64, 64))
    pic = yuv_pic(Y, UV, 64, 64)
    cap[0] = 100
    rt.dvpp.jpeg_encode_async(channel, pic, rt.dvpp.malloc(100), cap, None, stream)
    with raises(100000, r"the output buffer must hold the encoded JPEG, got \d+ bytes for a "
                        r"buffer of size=100"):
        stream.synchronize()
