"""DVPP's rules per SoC family (rt/dvpp/rules.py), each from the CANN page named in the test.

The same call is made on a device of each family (ASCEND_EMU_SOC): where the family's page has
the rule it is refused with 100000 and the rule's message, where it does not the work runs and
its pixels are checked against a numpy reference written here.
"""
import numpy as np
import pytest

import rt
from rt.dvpp import PixelFormat as PF
from rt.dvpp import rules as R
from rt.soc import SOCS
from dvpp_helpers import (from_device, jpeg_bytes, out_pic, picture, raises, ref_bilinear,
                          ref_nv12, to_dvpp, yuv_pic, yuv_planes)

NV12, NV21 = PF.YUV_SEMIPLANAR_420, PF.YVU_SEMIPLANAR_420
CLASSIC = ["Ascend310", "Ascend910A"]            # Atlas 200/300/500, Atlas training
NO_PARITY = ["Ascend310P3", "Ascend910B2", "Ascend910_9392", "Ascend310B1"]
FREE_PASTE = ["Ascend910B2", "Ascend910_9392", "Ascend310B1"]


def _open(monkeypatch, soc):
    monkeypatch.setenv("ASCEND_EMU_SOC", soc)
    rt.init()
    rt.set_device(0)
    ch = rt.dvpp.ChannelDesc()
    ch.create()
    return ch, rt.Stream()


def _planes(pic):
    return yuv_planes(from_device(pic.data, pic.size), pic.width_stride, pic.height_stride,
                      pic.width, pic.height)


def _source(w=64, h=48, ws=None, seed=3):
    Y, UV = ref_nv12(picture(w, h, seed))
    return Y, UV, yuv_pic(Y, UV, ws or rt.dvpp.align_up(w, 16), h)


def test_every_soc_family_has_a_row():
    assert {s.family for s in SOCS.values()} == set(R.RULES)
    for row in R.RULES.values():
        assert row.sources, row.family
        assert set(row.assumptions) <= set(row.__dataclass_fields__)


# -- ROI parity: acldvppCreateRoiConfig / dvpp_create_roi_config, parameters left..bottom --------
@pytest.mark.parametrize("soc", CLASSIC)
def test_classic_socs_refuse_odd_crop_offsets(monkeypatch, soc):
    """"Atlas 200/300/500 / Atlas 训练系列产品上, left/top 必须为偶数, right/bottom 必须为奇数"."""
    ch, s = _open(monkeypatch, soc)
    with raises(100000, r"dvpp_vpc_crop_async: crop_area offsets must be even for YUV420SP "
                        r"\(left and top even, right and bottom odd\), got left=1 right=32"):
        rt.dvpp.vpc_crop_async(ch, _source()[2], out_pic(32, 32), rt.dvpp.RoiConfig(1, 32, 0, 31),
                               s)


def _expected_odd(Y, UV, crop, canvas_y, canvas_uv, px, py, swap=False):
    """Unscaled crop (x, y, w, h) pasted at (px, py): Y copied pixel by pixel; the chroma block
    (bi, bj) of the output gets the source chroma of the pixel its top-left corner maps to,
    when the paste rectangle holds that corner (docs/dvpp.md, odd ROIs)."""
    x, t, w, h = crop
    oy, ouv = canvas_y.copy(), canvas_uv.copy()
    oy[py:py + h, px:px + w] = Y[t:t + h, x:x + w]
    src = UV.reshape(UV.shape[0], -1, 2)
    out = ouv.reshape(ouv.shape[0], -1, 2)
    for bi in range(out.shape[0]):
        for bj in range(out.shape[1]):
            r, c = 2 * bi - py, 2 * bj - px
            if 0 <= r < h and 0 <= c < w:
                pair = src[(t + r) // 2, (x + c) // 2]
                out[bi, bj] = pair[::-1] if swap else pair
    return oy, ouv


@pytest.mark.parametrize("soc", NO_PARITY)
@pytest.mark.parametrize("fmt", [NV12, NV21])
def test_odd_crop_is_exact_where_parity_is_lifted(monkeypatch, soc, fmt):
    """Atlas inference, A2, A3: "该参数值无偶数要求 / 无奇数要求": an odd crop runs."""
    ch, s = _open(monkeypatch, soc)
    Y, UV, src = _source(64, 48)
    crop = rt.dvpp.RoiConfig(5, 26, 3, 20)               # 22x18 at (5, 3): every side odd/even
    dst = out_pic(64, 48, fmt=fmt, fill=7)
    paste = rt.dvpp.RoiConfig(16, 37, 9, 26)             # 16-aligned left, odd top
    rt.dvpp.vpc_crop_and_paste_async(ch, src, dst, crop, paste, s)
    s.synchronize()
    gy, guv = _planes(dst)
    ey, euv = _expected_odd(Y, UV, (5, 3, 22, 18), np.full((48, 64), 7, np.uint8),
                            np.full((24, 64), 7, np.uint8), 16, 9, swap=fmt == NV21)
    np.testing.assert_array_equal(gy, ey)
    np.testing.assert_array_equal(guv, euv)


def test_odd_crop_scaled_y_within_1_of_bilinear(monkeypatch):
    ch, s = _open(monkeypatch, "Ascend910B2")
    Y, UV, src = _source(64, 48)
    dst = out_pic(40, 30)
    rt.dvpp.vpc_crop_async(ch, src, dst, rt.dvpp.RoiConfig(3, 23, 1, 15), s)    # 21x15 -> 40x30
    s.synchronize()
    gy, _ = _planes(dst)
    assert np.abs(gy.astype(float) - ref_bilinear(Y[1:16, 3:24], 30, 40)).max() <= 1


# -- paste left alignment: same pages, "如果用做贴图区域, 左偏移需要16对齐" ------------
@pytest.mark.parametrize("soc", CLASSIC + ["Ascend310P3"])
def test_paste_left_16_aligned_on_310_910_310p(monkeypatch, soc):
    ch, s = _open(monkeypatch, soc)
    with raises(100000, r"paste_area left must be a multiple of 16, got left=8"):
        rt.dvpp.vpc_crop_and_paste_async(ch, _source()[2], out_pic(128, 96),
                                         rt.dvpp.RoiConfig(0, 31, 0, 31),
                                         rt.dvpp.RoiConfig(8, 39, 0, 31), s)


@pytest.mark.parametrize("soc", FREE_PASTE)
def test_paste_anywhere_on_a2_a3(monkeypatch, soc):
    """"Atlas A2 / A3 上, 该参数值无偶数要求、无对齐要求" (also in a batch)."""
    ch, s = _open(monkeypatch, soc)
    Y, UV, src = _source(64, 48)
    dst = out_pic(128, 96)
    rt.dvpp.vpc_batch_crop_and_paste_async(ch, [src], [1], [dst], [rt.dvpp.RoiConfig(0, 31, 0, 31)],
                                           [rt.dvpp.RoiConfig(8, 39, 2, 33)], s)
    s.synchronize()
    gy, guv = _planes(dst)
    np.testing.assert_array_equal(gy[2:34, 8:40], Y[:32, :32])
    np.testing.assert_array_equal(guv[1:17, 8:40], UV[:16, :32])
    assert not gy[:2].any() and not gy[:, :8].any()


# -- VPC strides: VPC约束说明 (acldvpp), 图片格式、宽高对齐、内存约束 ---------------
@pytest.mark.parametrize("soc", CLASSIC + ["Ascend310P3"])
def test_vpc_width_stride_16_aligned_on_310_910_310p(monkeypatch, soc):
    """310/910/310P: "宽stride为宽16对齐后的值"."""
    ch, s = _open(monkeypatch, soc)
    with raises(100000, r"input_desc width_stride must be a multiple of 16 and >= 64 for "
                        r"PIXEL_FORMAT_YUV_SEMIPLANAR_420, got width_stride=70"):
        rt.dvpp.vpc_resize_async(ch, _source(64, 48, ws=70)[2], out_pic(32, 24), None, s)


@pytest.mark.parametrize("soc", ["Ascend910B2", "Ascend910_9392", "Ascend310B1"])
def test_vpc_width_stride_free_on_a2(monkeypatch, soc):
    """A2/A3 表1: "宽stride无对齐要求, 与宽相同即可"; the height stride stays align(h, 2)."""
    ch, s = _open(monkeypatch, soc)
    Y, UV, src = _source(64, 48, ws=70)
    dst = out_pic(34, 24, ws=34)
    rt.dvpp.vpc_crop_async(ch, src, dst, rt.dvpp.RoiConfig(10, 43, 4, 27), s)
    s.synchronize()
    gy, guv = _planes(dst)
    np.testing.assert_array_equal(gy, Y[4:28, 10:44])
    np.testing.assert_array_equal(guv, UV[2:14, 10:44])
    with raises(100000, r"output_desc height_stride must be a multiple of 2 and >= height=24, "
                        r"got height_stride=25"):
        rt.dvpp.vpc_crop_async(ch, src, out_pic(34, 24, ws=34, hs=25),
                               rt.dvpp.RoiConfig(10, 43, 4, 27), s)


@pytest.mark.parametrize("soc,ok", [("Ascend310", False), ("Ascend310P3", False),
                                    ("Ascend910B2", True)])
def test_vpc_width_stride_minimum(monkeypatch, soc, ok):
    """310/910/310P: "宽stride最小32、最大16384"; A2: "宽Stride最小10" (the VPC (V2) page)."""
    ch, s = _open(monkeypatch, soc)
    ws = 16 if not ok else 10
    Y, UV = ref_nv12(picture(10, 6))
    src = yuv_pic(Y, UV, ws, 6)
    dst = out_pic(20, 12)
    if ok:
        rt.dvpp.vpc_resize_async(ch, src, dst, None, s)
        s.synchronize()
        assert dst.ret_code == 0
    else:
        with raises(100000, r"input_desc width_stride must be within 32 \.\. 16384 on this SoC, "
                            r"got width_stride=16"):
            rt.dvpp.vpc_resize_async(ch, src, dst, None, s)


# -- VPC output size: VPC约束说明, 输出图片分辨率 --------------------------------------------------
@pytest.mark.parametrize("soc,ok", [("Ascend310", False), ("Ascend310P3", False),
                                    ("Ascend910B2", True), ("Ascend310B1", True)])
def test_vpc_output_height_up_to_8192_on_a2(monkeypatch, soc, ok):
    """310/910/310P: 10*6 ~ 4096*4096; A2/A3/200I-500 A2: 10*6 ~ 4096*8192."""
    ch, s = _open(monkeypatch, soc)
    Y, UV, src = _source(32, 320)
    dst = out_pic(32, 5000)
    if ok:
        rt.dvpp.vpc_resize_async(ch, src, dst, None, s)
        s.synchronize()
        gy, _ = _planes(dst)
        assert np.abs(gy.astype(float) - ref_bilinear(Y, 5000, 32)).max() <= 1
    else:
        with raises(100000, r"output_desc resolution must be within 10x6 \.\. 4096x4096, "
                            r"got 32x5000"):
            rt.dvpp.vpc_resize_async(ch, src, dst, None, s)


# -- JPEGD: JPEGD功能及约束说明, 表2 (128 for 310/910, 64 for 310P/310B/A2) ---------------------
@pytest.mark.parametrize("soc,ws", [("Ascend310", 256), ("Ascend910A", 256),
                                    ("Ascend310P3", 192), ("Ascend910B2", 192),
                                    ("Ascend310B1", 192)])
def test_jpegd_default_width_stride_per_soc(monkeypatch, soc, ws):
    ch, s = _open(monkeypatch, soc)
    data = jpeg_bytes(picture(130, 40))
    n = rt.dvpp.jpeg_predict_dec_size(data, None, NV12)
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=NV12)
    rt.dvpp.jpeg_decode_async(ch, to_dvpp(data), len(data), out, s)
    s.synchronize()
    assert (out.width, out.height, out.width_stride, out.height_stride) == (130, 40, ws, 48)
    if ws == 256:
        bad = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=NV12, width_stride=192)
        with raises(100000, r"output_desc width_stride must be a multiple of 128 \(or 0"):
            rt.dvpp.jpeg_decode_async(ch, to_dvpp(data), len(data), bad, s)


# -- JPEGE: JPEGE功能及约束说明, 图片分辨率约束 (200I/500 A2: 16384*16384) -------------------------
@pytest.mark.parametrize("soc,ok", [("Ascend910B2", False), ("Ascend310P3", False),
                                    ("Ascend310B1", True)])
def test_jpege_width_above_8192_only_on_310b(monkeypatch, soc, ok):
    ch, s = _open(monkeypatch, soc)
    w, h = 8208, 32
    pic = out_pic(w, h, fill=90)
    cap = 1 << 20
    buf = rt.dvpp.malloc(cap)
    size = np.array([cap], np.uint32)
    if ok:
        rt.dvpp.jpeg_encode_async(ch, pic, buf, size, None, s)
        s.synchronize()
        assert 0 < int(size[0]) < cap
        head = from_device(buf, 2)
        assert bytes(head) == b"\xff\xd8"
    else:
        with raises(100000, r"dvpp_jpeg_encode_async: input_desc resolution must be within "
                            r"32x32 \.\. 8192x8192, got 8208x32"):
            rt.dvpp.jpeg_encode_async(ch, pic, buf, size, None, s)
