"""JPEGD honours EXIF orientation as CANN's does: the output is the upright picture (rotated or
mirrored), bit-exact against Pillow's decode + ImageOps.exif_transpose + the documented
conversion, with strides of the rotated size; predict_dec_size answers for the rotated picture."""
import io

import numpy as np
import pytest
from PIL import Image, ImageOps

import rt
from rt.dvpp import PixelFormat as PF
from dvpp_helpers import from_device, picture, ref_nv12, to_dvpp, yuv_planes


def jpeg_with_orientation(img: np.ndarray, value: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = value
    b = io.BytesIO()
    Image.fromarray(img).save(b, "JPEG", quality=90, exif=exif.tobytes())
    return b.getvalue()


@pytest.mark.parametrize("value", range(1, 9))
@pytest.mark.parametrize("w,h", [(101, 67), (96, 64)])       # ragged (odd), 16-multiple
def test_jpegd_turns_the_picture_upright(channel, stream, w, h, value):
    data = jpeg_with_orientation(picture(w, h, seed=value), value)
    upright = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
    uh, uw = upright.shape[:2]
    assert (uw, uh) == ((h, w) if value >= 5 else (w, h))
    n = rt.dvpp.jpeg_predict_dec_size(data, None, PF.YUV_SEMIPLANAR_420)
    assert n == rt.dvpp.align_up(uw, 128) * rt.dvpp.align_up(uh, 16) * 3 // 2
    assert rt.dvpp.jpeg_get_image_info(data) == (w, h, 3)      # the frame header, as stored
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=PF.YUV_SEMIPLANAR_420)
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(data), len(data), out, stream)
    stream.synchronize()
    ew, eh = uw & ~1, uh & ~1                                  # odd sides rounded down
    assert (out.width, out.height, out.ret_code) == (ew, eh, 0)
    assert (out.width_stride, out.height_stride) == (rt.dvpp.align_up(ew, 64),
                                                     rt.dvpp.align_up(eh, 16))
    Y, UV = ref_nv12(upright[:eh, :ew])
    gY, gUV = yuv_planes(from_device(out.data, out.size), out.width_stride, out.height_stride,
                         ew, eh)
    np.testing.assert_array_equal(gY, Y)
    np.testing.assert_array_equal(gUV, UV)


def test_an_unreadable_orientation_leaves_the_picture_as_stored(channel, stream):
    data = jpeg_with_orientation(picture(64, 48, seed=3), 9)     # out of range: ignored
    n = rt.dvpp.jpeg_predict_dec_size(data, None, PF.YUV_SEMIPLANAR_420)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=PF.YUV_SEMIPLANAR_420)
    rt.dvpp.jpeg_decode_async(channel, to_dvpp(data), len(data), out, stream)
    stream.synchronize()
    assert (out.width, out.height, out.ret_code) == (64, 48, 0)
    rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    gY, _ = yuv_planes(from_device(out.data, out.size), out.width_stride, out.height_stride,
                       64, 48)
    np.testing.assert_array_equal(gY, ref_nv12(rgb)[0])
