"""The pyACL DVPP sample flow through `acl.media` (decode -> resize -> crop-and-paste -> encode,
on a stream with events), the profiler's DVPP track, utilisation, and errors as `ret` codes."""
import io

import numpy as np
from PIL import Image

import rt
import rt.acl as acl
from dvpp_helpers import jpeg_bytes, picture, ref_bilinear, ref_nv12

NV12 = acl.media.PIXEL_FORMAT_YUV_SEMIPLANAR_420
H2D, D2H = acl.ACL_MEMCPY_HOST_TO_DEVICE, acl.ACL_MEMCPY_DEVICE_TO_HOST


def align_up(x, a):
    return (x + a - 1) // a * a


def pic_desc(buf, size, w, h, ws, hs, fmt=NV12):
    d = acl.media.dvpp_create_pic_desc()
    for setter, v in ((acl.media.dvpp_set_pic_desc_data, buf),
                      (acl.media.dvpp_set_pic_desc_size, size),
                      (acl.media.dvpp_set_pic_desc_format, fmt),
                      (acl.media.dvpp_set_pic_desc_width, w),
                      (acl.media.dvpp_set_pic_desc_height, h),
                      (acl.media.dvpp_set_pic_desc_width_stride, ws),
                      (acl.media.dvpp_set_pic_desc_height_stride, hs)):
        assert setter(d, v) == 0
    return d


def test_sample_flow_decode_resize_paste_encode(tmp_path):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    start, _ = acl.rt.create_event()
    end, _ = acl.rt.create_event()
    ch = acl.media.dvpp_create_channel_desc()
    assert acl.media.dvpp_create_channel(ch) == 0

    data = jpeg_bytes(picture(300, 200, seed=4))
    host = np.frombuffer(data, np.uint8).copy()
    host_ptr = acl.util.numpy_to_ptr(host)
    w, h, comps, ret = acl.media.dvpp_jpeg_get_image_info(host_ptr, host.size)
    assert (w, h, comps, ret) == (300, 200, 3, 0)
    in_dev, ret = acl.media.dvpp_malloc(host.size)
    assert ret == 0 and in_dev % 128 == 0
    assert acl.rt.memcpy(in_dev, host.size, host_ptr, host.size, H2D) == 0

    with rt.profile() as prof:
        # JPEGD: output desc as the samples build it (128-aligned stride, predicted size)
        dec_size, ret = acl.media.dvpp_jpeg_predict_dec_size(host_ptr, host.size, NV12)
        dec_buf, _ = acl.media.dvpp_malloc(dec_size)
        dws, dhs = align_up(w, 128), align_up(h, 16)
        dec = pic_desc(dec_buf, dec_size, w, h, dws, dhs)
        assert acl.rt.record_event(start, stream) == 0
        assert acl.media.dvpp_jpeg_decode_async(ch, in_dev, host.size, dec, stream) == 0
        # VPC resize to 224x224
        cfg = acl.media.dvpp_create_resize_config()
        rws, rhs = 224, 224
        rsize = rws * rhs * 3 // 2
        rbuf, _ = acl.media.dvpp_malloc(rsize)
        res = pic_desc(rbuf, rsize, 224, 224, rws, rhs)
        assert acl.media.dvpp_vpc_resize_async(ch, dec, res, cfg, stream) == 0
        # crop-and-paste the resized picture's centre onto a 256x256 canvas
        cws, chs = 256, 256
        csize = cws * chs * 3 // 2
        cbuf, _ = acl.media.dvpp_malloc(csize)
        assert acl.rt.memset(cbuf, csize, 0, csize) == 0
        canvas = pic_desc(cbuf, csize, 256, 256, cws, chs)
        crop = acl.media.dvpp_create_roi_config(0, 223, 0, 223)
        paste = acl.media.dvpp_create_roi_config(16, 239, 16, 239)
        assert acl.media.dvpp_vpc_crop_and_paste_async(ch, res, canvas, crop, paste, stream) == 0
        # JPEGE the canvas
        jcfg = acl.media.dvpp_create_jpege_config()
        assert acl.media.dvpp_set_jpege_config_level(jcfg, 95) == 0
        esize, ret = acl.media.dvpp_jpeg_predict_enc_size(canvas, jcfg)
        ebuf, _ = acl.media.dvpp_malloc(esize)
        size_cell = np.array([esize], np.uint32)
        assert acl.media.dvpp_jpeg_encode_async(ch, canvas, ebuf, acl.util.numpy_to_ptr(size_cell),
                                                jcfg, stream) == 0
        assert acl.rt.record_event(end, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
    ms, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0 and ms > 0

    assert acl.media.dvpp_get_pic_desc_width(dec) == 300
    assert acl.media.dvpp_get_pic_desc_width_stride(dec) == 384
    out = np.empty(rsize, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), rsize, rbuf, rsize, D2H) == 0
    rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    Y, _ = ref_nv12(rgb)
    gotY = out[:224 * 224].reshape(224, 224)
    assert np.abs(gotY - ref_bilinear(Y, 224, 224)).max() <= 1
    cv = np.empty(csize, np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(cv), csize, cbuf, csize, D2H)
    np.testing.assert_array_equal(cv[:256 * 256].reshape(256, 256)[16:240, 16:240], gotY)
    n = int(size_cell[0])
    assert 0 < n < esize
    jpg = np.empty(n, np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(jpg), n, ebuf, n, D2H)
    back = np.asarray(Image.open(io.BytesIO(jpg.tobytes())).convert("YCbCr"))[..., 0]
    assert back.shape == (256, 256)
    assert np.abs(back[16:240, 16:240].astype(int) - gotY).mean() < 2

    # the profiler: DVPP tasks are kind "dvpp" with their unit, on their own trace tracks
    dv = [r for r in prof.records if r.kind == "dvpp"]
    assert [r.name for r in dv] == ["jpeg_decode", "vpc_resize", "vpc_crop_and_paste",
                                    "jpeg_encode"]
    assert [r.args["unit"] for r in dv] == ["JPEGD", "VPC", "VPC", "JPEGE"]
    trace = rt.dvpp.chrome_trace(prof)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert {"DVPP JPEGD", "DVPP VPC", "DVPP JPEGE"} <= names
    rt.dvpp.export_chrome_trace(prof, str(tmp_path / "trace.json"))
    assert rt.dvpp.utilization(0) > 0 and rt.dvpp.utilization(1) == 0

    for d in (dec, res, canvas):
        assert acl.media.dvpp_destroy_pic_desc(d) == 0
    for p in (in_dev, dec_buf, rbuf, cbuf, ebuf):
        assert acl.media.dvpp_free(p) == 0
    assert acl.media.dvpp_destroy_roi_config(crop) == 0
    assert acl.media.dvpp_destroy_resize_config(cfg) == 0
    assert acl.media.dvpp_destroy_jpege_config(jcfg) == 0
    assert acl.media.dvpp_destroy_channel(ch) == 0
    assert acl.media.dvpp_destroy_channel_desc(ch) == 0
    assert acl.rt.destroy_stream(stream) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


def test_errors_are_ret_codes():
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    ch = acl.media.dvpp_create_channel_desc()
    acl.media.dvpp_create_channel(ch)
    bad = jpeg_bytes(picture(64, 64))[:300]
    dev, _ = acl.media.dvpp_malloc(len(bad))
    acl.rt.memcpy(dev, len(bad), bad, len(bad), H2D)
    out = acl.media.dvpp_create_pic_desc()
    buf, _ = acl.media.dvpp_malloc(1 << 16)
    acl.media.dvpp_set_pic_desc_data(out, buf)
    acl.media.dvpp_set_pic_desc_size(out, 1 << 16)
    acl.media.dvpp_set_pic_desc_format(out, NV12)
    assert acl.media.dvpp_jpeg_decode_async(ch, dev, len(bad), out, stream) == 0   # queued
    assert acl.rt.synchronize_stream(stream) == 507018                # fails on the stream
    assert "truncated" in acl.get_recent_err_msg()
    assert acl.media.dvpp_get_pic_desc_ret_code(out) == 507018
    acl.media.dvpp_set_pic_desc_width_stride(out, 100)
    assert acl.media.dvpp_jpeg_decode_async(ch, dev, len(bad), out, stream) == 100000
    assert "multiple of 64" in acl.get_recent_err_msg()
    assert acl.media.dvpp_vpc_resize_async(ch, 12345, out, 0, stream) == 100000
    assert acl.media.dvpp_create_roi_config(-1, 3, 0, 1) == 0                # null handle
    w, h, c, ret = acl.media.dvpp_jpeg_get_image_info(b"xx", 2)
    assert ret == 100000 and (w, h, c) == (0, 0, 0)
    batch = acl.media.dvpp_create_batch_pic_desc(2)
    p0 = acl.media.dvpp_get_pic_desc(batch, 0)
    assert p0 and acl.media.dvpp_get_pic_desc(batch, 0) == p0
    assert acl.media.dvpp_get_pic_desc(batch, 2) == 0
    assert acl.media.dvpp_destroy_batch_pic_desc(batch) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(0)
    acl.finalize()
