"""VPC: resize within 1 of the float64 bilinear reference, crop / crop-and-paste / batch crop
exact, packed RGB, NV12 <-> NV21."""
import numpy as np
import pytest

import rt
from rt.dvpp import PixelFormat as PF
from dvpp_helpers import (from_device, out_pic, picture, ref_bilinear, ref_nv12, to_dvpp,
                          yuv_pic, yuv_planes)

NV12, NV21 = PF.YUV_SEMIPLANAR_420, PF.YVU_SEMIPLANAR_420
TOL = 1            # docs/dvpp.md: VPC bilinear is within 1 of the float64 reference


def _planes(pic):
    return yuv_planes(from_device(pic.data, pic.size), pic.width_stride, pic.height_stride,
                      pic.width, pic.height)


def _source(w=160, h=120, seed=1):
    Y, UV = ref_nv12(picture(w, h, seed))
    return Y, UV, yuv_pic(Y, UV, rt.dvpp.align_up(w, 16), h)


@pytest.mark.parametrize("ow,oh", [(224, 224), (64, 48), (96, 170)])
def test_resize_within_tolerance_of_bilinear(channel, stream, ow, oh):
    Y, UV, src = _source()
    dst = out_pic(ow, oh)
    rt.dvpp.vpc_resize_async(channel, src, dst, rt.dvpp.ResizeConfig(), stream)
    stream.synchronize()
    gY, gUV = _planes(dst)
    assert np.abs(gY.astype(float) - ref_bilinear(Y, oh, ow)).max() <= TOL
    ref_uv = ref_bilinear(UV.reshape(60, 80, 2), oh // 2, ow // 2).reshape(oh // 2, ow)
    assert np.abs(gUV.astype(float) - ref_uv).max() <= TOL
    assert dst.ret_code == 0


def test_resize_nearest_and_nv21_output(channel, stream):
    Y, UV, src = _source(64, 64)
    dst = out_pic(32, 32, fmt=NV21)
    rt.dvpp.vpc_resize_async(channel, src, dst, rt.dvpp.ResizeConfig(2), stream)
    stream.synchronize()
    gY, gUV = _planes(dst)
    np.testing.assert_array_equal(gY, Y[1::2, 1::2])          # nearest: centres of 2x2 blocks
    uv = UV.reshape(32, 32, 2)[1::2, 1::2][..., ::-1].reshape(16, 32)
    np.testing.assert_array_equal(gUV, uv)


def test_crop_exact_and_crop_resize(channel, stream):
    Y, UV, src = _source()
    dst = out_pic(40, 30)
    roi = rt.dvpp.RoiConfig(left=20, right=59, top=10, bottom=39)
    rt.dvpp.vpc_crop_async(channel, src, dst, roi, stream)
    dst2 = out_pic(80, 60)
    rt.dvpp.vpc_crop_async(channel, src, dst2, roi, stream)
    stream.synchronize()
    gY, gUV = _planes(dst)
    np.testing.assert_array_equal(gY, Y[10:40, 20:60])
    np.testing.assert_array_equal(gUV, UV[5:20, 20:60])
    gY2, _ = _planes(dst2)
    assert np.abs(gY2 - ref_bilinear(Y[10:40, 20:60], 60, 80)).max() <= TOL


def test_crop_and_paste_writes_only_the_paste_area(channel, stream):
    Y, UV, src = _source()
    canvas = out_pic(128, 96, fill=7)
    crop = rt.dvpp.RoiConfig(0, 63, 0, 47)
    paste = rt.dvpp.RoiConfig(32, 95, 16, 63)
    rt.dvpp.vpc_crop_and_paste_async(channel, src, canvas, crop, paste, stream)
    stream.synchronize()
    gY, gUV = _planes(canvas)
    np.testing.assert_array_equal(gY[16:64, 32:96], Y[:48, :64])
    np.testing.assert_array_equal(gUV[8:32, 32:96], UV[:24, :64])
    mask = np.ones_like(gY, bool)
    mask[16:64, 32:96] = False
    assert (gY[mask] == 7).all()


def test_batch_crop(channel, stream):
    Y0, UV0, s0 = _source(seed=1)
    Y1, UV1, s1 = _source(seed=2)
    src = rt.dvpp.BatchPicDesc(2)
    for k, s in enumerate((s0, s1)):
        for f in rt.dvpp.PicDesc.FIELDS:
            setattr(src.pics[k], f, getattr(s, f))
    dst = rt.dvpp.BatchPicDesc(3)
    for k in range(3):
        o = out_pic(32, 32)
        for f in rt.dvpp.PicDesc.FIELDS:
            setattr(dst.pics[k], f, getattr(o, f))
    rois = [rt.dvpp.RoiConfig(0, 31, 0, 31), rt.dvpp.RoiConfig(32, 63, 32, 63),
            rt.dvpp.RoiConfig(10, 41, 20, 51)]
    rt.dvpp.vpc_batch_crop_async(channel, src, [2, 1], dst, rois, stream)
    stream.synchronize()
    np.testing.assert_array_equal(_planes(dst.pics[0])[0], Y0[0:32, 0:32])
    np.testing.assert_array_equal(_planes(dst.pics[1])[0], Y0[32:64, 32:64])
    np.testing.assert_array_equal(_planes(dst.pics[2])[0], Y1[20:52, 10:42])
    assert [p.ret_code for p in dst.pics] == [0, 0, 0]


def test_packed_rgb_resize_and_bgr(channel, stream):
    img = picture(50, 40, seed=9)
    ws = rt.dvpp.align_up(50 * 3, 16)
    frame = np.zeros((40, ws), np.uint8)
    frame[:, :150] = img.reshape(40, 150)
    src = rt.dvpp.PicDesc(data=to_dvpp(frame), size=frame.size, format=PF.RGB_888, width=50,
                          height=40, width_stride=ws, height_stride=40)
    dst = out_pic(100, 80, ws=rt.dvpp.align_up(300, 16), hs=80, fmt=PF.BGR_888)
    rt.dvpp.vpc_resize_async(channel, src, dst, None, stream)
    stream.synchronize()
    got = from_device(dst.data, dst.size).reshape(80, dst.width_stride)[:, :300].reshape(80, 100,
                                                                                       3)
    assert np.abs(got[..., ::-1] - ref_bilinear(img, 80, 100)).max() <= TOL
