"""VPC batch crop-and-paste (and crop-resize-paste): each crop equals the single
crop-and-paste call on the same canvas, bit for bit; the rules and their codes, through rt.dvpp
and acl.media."""
import numpy as np
import pytest

import rt
import rt.acl as acl
from rt.dvpp import PixelFormat as PF
from rt.errors import ACL_ERROR_INVALID_PARAM
from dvpp_helpers import from_device, out_pic, picture, raises, ref_nv12, to_dvpp, yuv_pic

NV12, NV21 = PF.YUV_SEMIPLANAR_420, PF.YVU_SEMIPLANAR_420


def _yuv_source(w, h, seed):
    Y, UV = ref_nv12(picture(w, h, seed))
    return yuv_pic(Y, UV, rt.dvpp.align_up(w, 16), h & ~1)


def _rgb_source(w, h, seed):
    img = picture(w, h, seed)
    ws = rt.dvpp.align_up(w * 3, 16)
    frame = np.zeros((h, ws), np.uint8)
    frame[:, :w * 3] = img.reshape(h, w * 3)
    return rt.dvpp.PicDesc(data=to_dvpp(frame), size=frame.size, format=PF.RGB_888, width=w,
                           height=h, width_stride=ws, height_stride=h)


def _batch(pics):
    b = rt.dvpp.BatchPicDesc(len(pics))
    for k, p in enumerate(pics):
        for f in rt.dvpp.PicDesc.FIELDS:
            setattr(b.pics[k], f, getattr(p, f))
    return b


def _canvas(w, h, fmt, fill):
    if fmt in (NV12, NV21):
        return out_pic(w, h, fmt=fmt, fill=fill)
    return out_pic(w, h, ws=rt.dvpp.align_up(w * 3, 16), hs=h, fmt=fmt, fill=fill)


# (source index, crop (l, r, t, b), paste (l, r, t, b)): ragged sizes, up- and downscaling,
# one unscaled paste, a paste at the canvas edge
CASES = [(0, (0, 63, 0, 47), (16, 79, 8, 55)),            # same size: a plain copy
         (0, (10, 109, 20, 79), (0, 47, 0, 31)),          # downscale 100x60 -> 48x32
         (1, (34, 57, 12, 41), (64, 127, 36, 95))]        # upscale 24x30 -> 64x60, at the edge


@pytest.mark.parametrize("fmt,out_fmt", [(NV12, NV12), (NV12, NV21), (PF.RGB_888, PF.BGR_888)])
@pytest.mark.parametrize("interp", [None, 2])
def test_batch_crop_and_paste_equals_single_calls(channel, stream, fmt, out_fmt, interp):
    make = _yuv_source if fmt == NV12 else _rgb_source
    srcs = [make(150, 100, 1), make(96, 64, 2)]       # 150: not a multiple of 16 (ragged)
    cfg = rt.dvpp.ResizeConfig(interp) if interp is not None else None
    batch_out = [_canvas(128, 96, out_fmt, 9) for _ in CASES]
    single_out = [_canvas(128, 96, out_fmt, 9) for _ in CASES]
    crops = [rt.dvpp.RoiConfig(*c) for _, c, _ in CASES]
    pastes = [rt.dvpp.RoiConfig(*p) for _, _, p in CASES]
    dst = _batch(batch_out)
    rt.dvpp.vpc_batch_crop_and_paste_async(channel, _batch(srcs), [2, 1], dst, crops, pastes,
                                           stream, cfg)
    for (k, _, _), o, c, p in zip(CASES, single_out, crops, pastes):
        rt.dvpp.vpc_crop_and_paste_async(channel, srcs[k], o, c, p, stream, cfg)
    stream.synchronize()
    for j, (b, s) in enumerate(zip(dst.pics, single_out)):
        got, want = from_device(b.data, b.size), from_device(s.data, s.size)
        np.testing.assert_array_equal(got, want, err_msg=f"roi {j}")
        assert b.ret_code == 0
    # the canvas outside each paste area is untouched; inside, the crop landed
    g = from_device(dst.pics[0].data, dst.pics[0].size)
    ws = dst.pics[0].width_stride
    rows = g[:96 * ws].reshape(96, ws)
    assert (rows[:8] == 9).all() and not (rows[8:56, 16 * (3 if fmt != NV12 else 1)] == 9).all()


def test_resize_config_changes_the_scaling(channel, stream):
    src = _yuv_source(96, 64, 3)
    outs = [_canvas(64, 64, NV12, 0) for _ in range(2)]
    crop, paste = rt.dvpp.RoiConfig(0, 31, 0, 31), rt.dvpp.RoiConfig(0, 63, 0, 63)
    for o, cfg in zip(outs, (rt.dvpp.ResizeConfig(1), rt.dvpp.ResizeConfig(2))):
        rt.dvpp.vpc_batch_crop_and_paste_async(channel, [src], [1], [o], [crop], [paste], stream,
                                               cfg)
    stream.synchronize()
    bil, near = (from_device(o.data, o.size) for o in outs)
    assert not np.array_equal(bil, near)
    y = near[:64 * 64].reshape(64, 64)
    np.testing.assert_array_equal(y[0::2, 0::2], y[1::2, 1::2])    # nearest 2x: 2x2 blocks


def test_batch_rules(classic_soc, channel, stream):
    src = _yuv_source(96, 64, 4)
    o = _canvas(64, 64, NV12, 0)
    crop = rt.dvpp.RoiConfig(0, 31, 0, 31)
    api = "dvpp_vpc_batch_crop_and_paste_async"
    with raises(ACL_ERROR_INVALID_PARAM, rf"{api}: sum\(roi_nums\) must equal the number of "
                                         r"destination pictures and of paste areas, got sum=1, "
                                         r"1 destination\(s\), 0 paste area\(s\)"):
        rt.dvpp.vpc_batch_crop_and_paste_async(channel, [src], [1], [o], [crop], [], stream)
    with raises(ACL_ERROR_INVALID_PARAM, rf"{api}: paste_areas\[0\] left must be a multiple of "
                                         r"16, got left=8"):
        rt.dvpp.vpc_batch_crop_and_paste_async(channel, [src], [1], [o], [crop],
                                               [rt.dvpp.RoiConfig(8, 39, 0, 31)], stream)
    with raises(ACL_ERROR_INVALID_PARAM, rf"{api}: paste_areas\[0\] must lie inside the output "
                                         r"picture \(64x64"):
        rt.dvpp.vpc_batch_crop_and_paste_async(channel, [src], [1], [o], [crop],
                                               [rt.dvpp.RoiConfig(32, 95, 0, 31)], stream)
    with raises(ACL_ERROR_INVALID_PARAM, rf"{api}: roi_nums must list one count >= 0 per "
                                         r"source picture \(1\), got roi_nums=\[1, 0\]"):
        rt.dvpp.vpc_batch_crop_and_paste_async(channel, [src], [1, 0], [o], [crop], [crop],
                                               stream)
    wide = _canvas(192, 64, NV12, 0)
    with raises(ACL_ERROR_INVALID_PARAM, r"dvpp_vpc_batch_crop_resize_paste_async: crop 0 "
                                         r"width scale must be within \[1/32, 16\], got 10 -> "
                                         r"192"):
        rt.dvpp.vpc_batch_crop_and_paste_async(
            channel, [src], [1], [wide], [rt.dvpp.RoiConfig(0, 9, 0, 5)],
            [rt.dvpp.RoiConfig(0, 191, 0, 5)], stream, rt.dvpp.ResizeConfig())


def _acl_pic(batch, i, p):
    d = acl.media.dvpp_get_pic_desc(batch, i)
    for f in rt.dvpp.PicDesc.FIELDS:
        assert getattr(acl.media, f"dvpp_set_pic_desc_{f}")(d, getattr(p, f)) == 0


def test_acl_media_batch_crop_and_paste():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    ch = acl.media.dvpp_create_channel_desc()
    assert acl.media.dvpp_create_channel(ch) == 0
    src_pic = _yuv_source(96, 64, 5)
    canvases = [_canvas(64, 64, NV12, 3) for _ in range(2)]
    src = acl.media.dvpp_create_batch_pic_desc(1)
    dst = acl.media.dvpp_create_batch_pic_desc(2)
    _acl_pic(src, 0, src_pic)
    for i, c in enumerate(canvases):
        _acl_pic(dst, i, c)
    crops = [acl.media.dvpp_create_roi_config(0, 31, 0, 31),
             acl.media.dvpp_create_roi_config(32, 63, 0, 31)]
    pastes = [acl.media.dvpp_create_roi_config(0, 31, 0, 31),
              acl.media.dvpp_create_roi_config(16, 47, 32, 63)]
    out, ret = acl.media.dvpp_vpc_batch_crop_and_paste_async(ch, src, [2], dst, crops, pastes,
                                                             stream)
    assert (out, ret) == (dst, 0)
    cfg = acl.media.dvpp_create_resize_config()
    assert acl.media.dvpp_vpc_batch_crop_resize_paste_async(ch, src, [2], dst, crops, pastes,
                                                            cfg, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    src_y = from_device(src_pic.data, src_pic.size)[:64 * 96].reshape(64, 96)
    y1 = from_device(canvases[1].data, canvases[1].size)[:64 * 64].reshape(64, 64)
    np.testing.assert_array_equal(y1[32:64, 16:48], src_y[0:32, 32:64])
    assert (y1[:32] == 3).all()
    assert acl.media.dvpp_get_pic_desc_ret_code(acl.media.dvpp_get_pic_desc(dst, 1)) == 0
    out, ret = acl.media.dvpp_vpc_batch_crop_and_paste_async(ch, src, [2], dst, crops,
                                                             pastes[:1], stream)
    assert (out, ret) == (dst, ACL_ERROR_INVALID_PARAM)
    msg = acl.get_recent_err_msg()
    assert msg.startswith("[100000 ACL_ERROR_INVALID_PARAM] acl.media.dvpp_vpc_batch_crop_and_"
                          "paste_async: ") and "sum(roi_nums) must equal" in msg
    assert acl.media.dvpp_vpc_crop_resize_paste_async(ch, acl.media.dvpp_get_pic_desc(src, 0),
                                                      acl.media.dvpp_get_pic_desc(dst, 0),
                                                      crops[0], pastes[0], 0, stream) == \
        ACL_ERROR_INVALID_PARAM
    assert "resize config handle, got 0" in acl.get_recent_err_msg()
