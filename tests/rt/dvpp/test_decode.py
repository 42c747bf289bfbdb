"""JPEGD and PNGD: bit-exact against Pillow's decode + the documented conversion; header info,
size predictions, output descs filled in; bad data fails on the stream and nothing else."""
import io

import numpy as np
import pytest
from PIL import Image

import rt
from rt.dvpp import PixelFormat as PF
from dvpp_helpers import (from_device, jpeg_bytes, picture, png_bytes, raises, ref_nv12,
                          to_dvpp, yuv_planes)

NV12, NV21 = PF.YUV_SEMIPLANAR_420, PF.YVU_SEMIPLANAR_420


def _decode(channel, stream, data: bytes, fmt=NV12, ws=0, hs=0, size=None):
    src = to_dvpp(data)
    n = size or rt.dvpp.jpeg_predict_dec_size(data, None, fmt)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=fmt, width_stride=ws,
                          height_stride=hs)
    rt.dvpp.jpeg_decode_async(channel, src, len(data), out, stream)
    return out


@pytest.mark.parametrize("w,h,sub,fmt", [(64, 48, 2, NV12), (101, 67, 2, NV21),
                                         (96, 64, 0, NV12), (80, 33, 1, NV21)])
def test_jpeg_decode_bit_exact(channel, stream, w, h, sub, fmt):
    data = jpeg_bytes(picture(w, h, seed=w), subsampling=sub)
    out = _decode(channel, stream, data, fmt)
    stream.synchronize()
    # CANN's acldvppJpegdPrecisionMode default (ACL_YUVOUT_ALIGN_DOWN_COMPAT): an odd source
    # width/height is rounded down to even for YUV420SP output
    w, h = w & ~1, h & ~1
    assert (out.width, out.height) == (w, h)
    assert (out.width_stride, out.height_stride) == (rt.dvpp.align_up(w, 64),
                                                     rt.dvpp.align_up(h, 16))
    assert out.ret_code == 0 and out.format == fmt
    rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))[:h, :w]    # Pillow's decode
    Y, UV = ref_nv12(rgb, nv21=fmt == NV21)
    gotY, gotUV = yuv_planes(from_device(out.data, out.size), out.width_stride,
                             out.height_stride, w, h)
    np.testing.assert_array_equal(gotY, Y)
    np.testing.assert_array_equal(gotUV, UV)


def test_conversion_is_bt601_full_range():
    """The documented fixed-point conversion agrees with Pillow's own RGB->YCbCr within 1."""
    rgb = picture(64, 64, seed=3)
    Y, _ = ref_nv12(rgb)
    y_pil = np.asarray(Image.fromarray(rgb).convert("YCbCr"))[..., 0]
    assert np.abs(Y.astype(int) - y_pil).max() <= 1
    got, _ = rt.dvpp.rgb_to_yuv420sp(rgb)
    np.testing.assert_array_equal(got, Y)


def test_grayscale_jpeg_and_sample_strides(channel, stream):
    g = picture(70, 40)[..., 1]
    data = jpeg_bytes(g)
    assert rt.dvpp.jpeg_get_image_info(data) == (70, 40, 1)
    # a sample written for Atlas 300 (310): width stride 128-aligned, predict for the size
    out = _decode(channel, stream, data, NV12, ws=128, hs=48)
    stream.synchronize()
    Y, UV = yuv_planes(from_device(out.data, out.size), 128, 48, 70, 40)
    np.testing.assert_array_equal(Y, np.asarray(Image.open(io.BytesIO(data))))
    assert (UV == 128).all()


def test_image_info_and_predictions():
    data = jpeg_bytes(picture(300, 200), subsampling=2)
    assert rt.dvpp.jpeg_get_image_info(data) == (300, 200, 3)
    assert rt.dvpp.jpeg_get_image_info_v2(data)[3] == rt.dvpp.JpegFormat.CSS_420
    assert rt.dvpp.jpeg_get_image_info_v2(jpeg_bytes(picture(64, 64), subsampling=0))[3] == \
        rt.dvpp.JpegFormat.CSS_444
    assert rt.dvpp.jpeg_predict_dec_size(data, len(data), NV12) == 384 * 208 * 3 // 2
    with raises(100000, "data must be a JPEG stream"):
        rt.dvpp.jpeg_get_image_info(b"not a jpeg at all")
    with raises(100000, "output_pixel_format must be"):
        rt.dvpp.jpeg_predict_dec_size(data, len(data), PF.RGB_888)
    png = png_bytes(picture(50, 40))
    assert rt.dvpp.png_get_image_info(png) == (50, 40, 3)
    assert rt.dvpp.png_predict_dec_size(png, len(png), PF.RGB_888) == 128 * 3 * 48


@pytest.mark.parametrize("alpha", [False, True])
def test_png_decode_exact(channel, stream, alpha):
    img = picture(45, 38, seed=5)
    if alpha:
        img = np.dstack([img, np.arange(45 * 38, dtype=np.uint8).reshape(38, 45)])
    data = png_bytes(img)
    fmt = PF.RGBA_8888 if alpha else PF.RGB_888
    n = rt.dvpp.png_predict_dec_size(data, len(data), fmt)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=fmt)   # as the sample: no dims
    rt.dvpp.png_decode_async(channel, to_dvpp(data), len(data), out, stream)
    stream.synchronize()
    ch = 4 if alpha else 3
    assert (out.width, out.height, out.width_stride, out.height_stride) == (45, 38, 128 * ch, 48)
    got = from_device(out.data, n).reshape(48, 128 * ch)[:38, :45 * ch].reshape(38, 45, ch)
    np.testing.assert_array_equal(got, img)


def _progressive() -> bytes:
    return jpeg_bytes(picture(64, 64), progressive=True)


@pytest.mark.parametrize("bad,why", [
    (lambda d: d[:len(d) // 2], "truncated"),
    (lambda d: b"\xff\xd8" + b"\x00" * 200, "no frame header"),
    (lambda d: b"GIF89a" + d[6:], "must be a JPEG stream"),
    (lambda d: _progressive(), "progressive"),
])
def test_bad_jpeg_fails_on_the_stream_only(channel, stream, bad, why):
    good = jpeg_bytes(picture(64, 48))
    broken = bad(good)
    n = rt.dvpp.jpeg_predict_dec_size(good, None, NV12)
    out_bad = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=NV12)
    t = rt.dvpp.jpeg_decode_async(channel, to_dvpp(broken), len(broken), out_bad, stream)
    out_good = _decode(channel, stream, good)                 # queued after the bad one
    host = np.zeros(n, np.uint8)
    rt.memcpy_async(host, out_good.data, n, rt.MemcpyKind.DEVICE_TO_HOST, stream)
    with raises(507018, why) as info:
        stream.synchronize()
    assert "dvpp 'jpeg_decode'" in str(info.value) and t.done
    assert out_bad.ret_code == 507018 and out_good.ret_code == 0
    stream.synchronize()                                       # the error was reported once
    rgb = np.asarray(Image.open(io.BytesIO(good)).convert("RGB"))
    np.testing.assert_array_equal(yuv_planes(host, 64, 48, 64, 48)[0], ref_nv12(rgb)[0])


def test_decode_output_too_small_fails_on_stream(channel, stream):
    data = jpeg_bytes(picture(200, 100))
    out = _decode(channel, stream, data, size=1000)
    with raises(100000, r"output_desc size must be >= width_stride \* height_stride \* 3 / 2 "
                        r"= 256 \* 112 \* 3 / 2 = 43008"):
        stream.synchronize()
    assert out.ret_code == 100000


def test_decode_resolution_limits(channel, stream):
    data = jpeg_bytes(picture(31, 40))
    _decode(channel, stream, data, size=128 * 48 * 3 // 2)   # predict_dec_size refuses it too
    with raises(100000, r"JPEG resolution must be within 32x32 .. 8192x8192, got 31x40"):
        stream.synchronize()


def test_predict_dec_size_refuses_what_jpegd_cannot_decode():
    # CANN, "JPEGD功能及约束说明" (aclcppdevg_03_0355): input 32x32 .. 8192x8192 on every series
    for w, h in ((31, 40), (40, 16)):
        with raises(rt.errors.ACL_ERROR_INVALID_PARAM,
                    rf"dvpp_jpeg_predict_dec_size: JPEG resolution must be within 32x32 \.\. "
                    rf"8192x8192, got {w}x{h}"):
            rt.dvpp.jpeg_predict_dec_size(jpeg_bytes(picture(w, h)), None, NV12)
    assert rt.dvpp.jpeg_predict_dec_size(jpeg_bytes(picture(32, 32)), None, NV12) == \
        128 * 32 * 3 // 2


def _claiming(data: bytes, kind: str, w: int, h: int) -> bytes:
    """A small valid stream whose header claims w x h (JPEG: SOF0's fields; PNG: IHDR, CRC
    fixed), as a hostile file would."""
    import struct
    import zlib
    b = bytearray(data)
    if kind == "JPEG":
        i = b.index(b"\xff\xc0")
        b[i + 5:i + 9] = struct.pack(">HH", h, w)
    else:
        i = b.index(b"IHDR")
        b[i + 4:i + 12] = struct.pack(">II", w, h)
        b[i + 17:i + 21] = struct.pack(">I", zlib.crc32(bytes(b[i:i + 17])))
    return bytes(b)


@pytest.fixture
def no_pixel_decode(monkeypatch):
    """Decoding the pixels of a hostile header would take ~1.6 GB: the test fails instead."""
    from PIL import ImageFile

    def refuse(self):
        raise AssertionError(f"decoded {self.size[0]}x{self.size[1]} pixels")
    monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)


@pytest.mark.parametrize("side", [12000, 20000])      # 20000^2: past Pillow's bomb limit too
@pytest.mark.parametrize("kind,lim", [("JPEG", "32x32 .. 8192x8192"),
                                      ("PNG", "32x32 .. 4096x4096")])
def test_a_small_file_claiming_a_huge_picture_is_refused_from_its_header(channel, stream, kind,
                                                                         lim, side,
                                                                         no_pixel_decode):
    img = picture(64, 48)
    data = _claiming(jpeg_bytes(img) if kind == "JPEG" else png_bytes(img), kind, side, side)
    assert len(data) < 16384
    n = 64 * 64 * 4
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n,
                          format=NV12 if kind == "JPEG" else PF.RGB_888)
    decode = rt.dvpp.jpeg_decode_async if kind == "JPEG" else rt.dvpp.png_decode_async
    decode(channel, to_dvpp(data), len(data), out, stream)
    api = "dvpp_jpeg_decode_async" if kind == "JPEG" else "dvpp_png_decode_async"
    with raises(100000, rf"{api}: {kind} resolution must be within {lim}, got {side}x{side}"):
        stream.synchronize()
    assert out.ret_code == 100000
    assert rt.dvpp.codec.header_size(data, kind) == (side, side)
