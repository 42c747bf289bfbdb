"""DVPP operations (`acldvppJpegDecodeAsync`, `acldvppPngDecodeAsync`, `acldvppVpc*Async`,
`acldvppJpegEncodeAsync`) and their host-side helpers (image info, size predictions).

Every `*_async` call checks its arguments against DVPP's rules at once (an `AclError` 100000 naming
the rule, as acldvpp returns it), snapshots its picture descriptions, and queues one task of kind
"dvpp" on `stream` (None: the current stream) for the device's unit (see `rt.dvpp.engine`); it
returns the `rt.sched.Task` at once. What can only be known from the data (a corrupt or truncated
JPEG, a picture larger than the output buffer) fails the task: the stream's next synchronize
raises it (507018 for bad data, 100000 for a rule), the output desc's `ret_code` holds the code,
and the stream's later work runs as usual (ACL_CONTINUE_ON_FAILURE).

Decoders fill the output desc's width, height and strides when the picture is decoded (strides
the caller left at 0 get DVPP's defaults: JPEGD align(w, 64) (128 on Ascend310 / Ascend910) x
align(h, 16), PNGD align(w, 128) * channels x align(h, 16)). The rules that differ per SoC
family come from `rt.dvpp.rules` for the channel's device.
"""
from __future__ import annotations

import numpy as np

from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_INVALID_PARAM
from ..sched import Task
from ..stream import Stream, current_stream
from . import codec, color, engine, exif
from . import rules as R
from . import formats as F
from .desc import (ChannelDesc, JpegeConfig, PicDesc, ResizeConfig, RoiConfig,
                   check_span)
from .formats import PixelFormat, bad

_YUV = F.YUV420SP


# -- argument helpers ------------------------------------------------------------------------------
def _stream(stream, api: str) -> Stream:
    if stream is None:
        return current_stream()
    if not isinstance(stream, Stream):
        raise bad(api, f"stream must be an rt.Stream or None, got stream={stream!r}")
    return stream


def _obj(x, cls, api: str, role: str):
    if not isinstance(x, cls):
        raise bad(api, f"{role} must be a {cls.kind} (rt.dvpp.{cls.__name__}), got {role}={x!r}")
    return x.live(api, role)


def _channel(ch, api: str, unit: str) -> ChannelDesc:
    return _obj(ch, ChannelDesc, api, "channel_desc").usable(api, unit)


def _pic(d, api: str, role: str) -> PicDesc:
    return _obj(d, PicDesc, api, role).snapshot()


def _size(api: str, size) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise bad(api, f"size must be an int > 0 (bytes of input data), got size={size!r}")
    return int(size)


def read_input(data, size: int | None, api: str) -> bytes:
    """The bytes of encoded input data: bytes/bytearray/ndarray, or a host or device address with
    `size` (the info/predict helpers take either, as pyACL code passes both)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data) if size is None else bytes(data[:size])
    if isinstance(data, np.ndarray):
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        return raw.tobytes() if size is None else raw[:size].tobytes()
    n = _size(api, size)
    if isinstance(data, bool) or not isinstance(data, int) or data <= 0:
        raise bad(api, f"data must be a host or device address, bytes or a numpy array, got "
                       f"data={data!r}")
    if _mem.is_device_address(int(data)):
        return _mem.device_view(int(data), n, api, ACL_ERROR_INVALID_PARAM).tobytes()
    buf = np.empty(n, np.uint8)
    _mem.copy_bytes(buf, int(data), n, api=api)
    return buf.tobytes()


def _submit(stream: Stream, channel: ChannelDesc, unit: str, api: str, name: str, fn,
            reads, writes, nbytes: int, args: dict | None = None) -> Task:
    core = stream.live_core(api)
    if channel.device != core.device_id:
        raise bad(api, f"stream must belong to the channel's device {channel.device}, got a "
                       f"stream of device {core.device_id}")
    for a in list(reads) + list(writes):
        d = (int(a) >> 40) - 0x100
        if d != core.device_id:
            raise bad(api, f"picture memory must be on the stream's device {core.device_id}, got "
                           f"address 0x{int(a):x} of device {d}")
    task = Task(core, fn, "dvpp", name, nbytes, engine.unit(core.device_id, unit),
                {"unit": unit, **(args or {})})
    accesses = [(int(a), False) for a in reads] + [(int(a), True) for a in writes]
    stream.submit(task, accesses=accesses)
    _mem.record_use([a for a, _ in accesses], core, task.seq)
    return task


def _guard(out_descs, fn):
    """Run `fn`; on failure set every output desc's ret_code to the error's code."""
    def run():
        try:
            fn()
        except BaseException as e:
            code = e.code if isinstance(e, AclError) else 507000
            for d in out_descs:
                d.ret_code = code
            raise
        for d in out_descs:
            d.ret_code = 0
    return run


def _view(addr: int, n: int, api: str) -> np.ndarray:
    return _mem.device_view(int(addr), n, api, ACL_ERROR_INVALID_PARAM)


# what rt.dvpp.vpc_batch and the video channels build on (public names of the helpers above)
submit, device_bytes, channel_of, stream_of, live_obj, guard = \
    _submit, _view, _channel, _stream, _obj, _guard


# -- JPEG decode -----------------------------------------------------------------------------------
def jpeg_get_image_info(data, size: int | None = None, api: str = "dvpp_jpeg_get_image_info"):
    """Mirrors `acldvppJpegGetImageInfo`: (width, height, components) of a JPEG's header."""
    w, h, c, _ = codec.jpeg_info(read_input(data, size, api), api)
    return w, h, c


def jpeg_get_image_info_v2(data, size: int | None = None):
    """Mirrors `acldvppJpegGetImageInfoV2`: (width, height, components, JpegFormat)."""
    api = "dvpp_jpeg_get_image_info_v2"
    return codec.jpeg_info(read_input(data, size, api), api)


def jpeg_predict_dec_size(data, size: int | None, output_format: int) -> int:
    """Mirrors `acldvppJpegPredictDecSize`: output bytes for YUV420SP (NV12/NV21, or UNKNOWN,
    which decodes a 4:2:0 JPEG to NV21): align(w, 128) * align(h, 16) * 3 / 2, enough for any
    width stride JPEGD accepts up to the 128-aligned one."""
    api = "dvpp_jpeg_predict_dec_size"
    if output_format not in _YUV + (PixelFormat.UNKNOWN,):
        raise bad(api, f"output_pixel_format must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1), "
                       f"PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2) or PIXEL_FORMAT_UNKNOWN (10000), "
                       f"got {F.fmt_name(output_format)}")
    raw = read_input(data, size, api)
    w, h, _, _ = codec.jpeg_info(raw, api)
    F.check_resolution(api, "JPEG", w, h, F.JPEGD_MIN, F.JPEGD_MAX)   # what JPEGD decodes
    if exif.orientation(raw) in exif.SWAPS_SIDES:                     # the rotated output's
        w, h = h, w
    return F.yuv420sp_size(F.align_up(w, F.JPEGD_PREDICT_WIDTH_ALIGN),
                           F.align_up(h, F.JPEGD_HEIGHT_ALIGN))


def _check_decode_out(api: str, o: PicDesc, formats, walign: int, halign: int) -> None:
    if o.format not in formats:
        raise bad(api, f"output_desc format must be one of "
                       f"{', '.join(F.fmt_name(f) for f in formats)}, got {F.fmt_name(o.format)}")
    if o.width_stride and o.width_stride % walign:
        raise bad(api, f"output_desc width_stride must be a multiple of {walign} (or 0: DVPP "
                       f"picks it), got width_stride={o.width_stride}")
    if o.height_stride and o.height_stride % halign:
        raise bad(api, f"output_desc height_stride must be a multiple of {halign} (or 0: DVPP "
                       f"picks it), got height_stride={o.height_stride}")
    if o.size <= 0:
        raise bad(api, "output_desc size must be > 0 (the output buffer's bytes; see "
                       "predict_dec_size), got size=0")
    check_span(api, "output_desc data", o.data, o.size)


def jpeg_decode_async(channel: ChannelDesc, data: int, size: int, output_desc: PicDesc,
                      stream: Stream | None = None) -> Task:
    """Mirrors `acldvppJpegDecodeAsync(channelDesc, data, size, outputDesc, stream)`: decode the
    JPEG at device address `data` into YUV420SP (NV12 or NV21, BT.601 full range; see
    `rt.dvpp.color`) at `output_desc`'s data."""
    api = "dvpp_jpeg_decode_async"
    ch = _channel(channel, api, "JPEGD")
    s = _stream(stream, api)
    n = _size(api, size)
    check_span(api, "data", data, n)
    o = _pic(output_desc, api, "output_desc")
    rules = R.for_device(ch.device)
    walign, halign = rules.jpegd_width_align, rules.jpegd_height_align
    _check_decode_out(api, o, _YUV + (PixelFormat.UNKNOWN,), walign, halign)
    live = output_desc

    def run():
        raw = _view(data, n, api).tobytes()
        img = exif.upright(codec.decode_jpeg(raw, api, F.JPEGD_MIN, F.JPEGD_MAX),
                           exif.orientation(raw))
        h, w = img.shape[:2]
        # YUV420SP output: an odd source width/height is rounded down to even (CANN's default
        # JPEGD precision mode, ACL_YUVOUT_ALIGN_DOWN_COMPAT)
        w, h = w & ~1, h & ~1
        img = img[:h, :w]
        fmt = PixelFormat.YVU_SEMIPLANAR_420 if o.format == PixelFormat.UNKNOWN else o.format
        ws = o.width_stride or F.align_up(w, walign)
        hs = o.height_stride or F.align_up(h, halign)
        F.check_strides(api, "output_desc", fmt, w, h, ws, hs, walign, halign)
        F.check_size(api, "output_desc", fmt, ws, hs, o.size)
        y, uv = color.gray_to_yuv420sp(img) if img.ndim == 2 else color.rgb_to_yuv420sp(img, fmt)
        color.write_yuv420sp(_view(o.data, o.size, api), ws, hs, y, uv)
        live.width, live.height, live.width_stride, live.height_stride = w, h, ws, hs
        live.format = int(fmt)

    return _submit(s, ch, "JPEGD", api, "jpeg_decode", _guard([live], run), [data], [o.data],
                   o.size)


# -- PNG decode ------------------------------------------------------------------------------------
def png_get_image_info(data, size: int | None = None):
    """Mirrors `acldvppPngGetImageInfo`: (width, height, components) of a PNG's header."""
    api = "dvpp_png_get_image_info"
    return codec.png_info(read_input(data, size, api), api)


_PNG_OUT = (PixelFormat.RGB_888, PixelFormat.RGBA_8888, PixelFormat.UNKNOWN)


def _png_channels(fmt: int, comps: int) -> int:
    if fmt == PixelFormat.UNKNOWN:
        return 4 if comps in (2, 4) else 3
    return 4 if fmt == PixelFormat.RGBA_8888 else 3


def png_predict_dec_size(data, size: int | None, output_format: int) -> int:
    """Mirrors `acldvppPngPredictDecSize`: align(w, 128) * channels * align(h, 16) bytes."""
    api = "dvpp_png_predict_dec_size"
    if output_format not in _PNG_OUT:
        raise bad(api, "output_pixel_format must be PIXEL_FORMAT_RGB_888 (12), "
                       "PIXEL_FORMAT_RGBA_8888 (16) or PIXEL_FORMAT_UNKNOWN (10000), got "
                       f"{F.fmt_name(output_format)}")
    w, h, comps = codec.png_info(read_input(data, size, api), api)
    ch = _png_channels(output_format, comps)
    return F.align_up(w, F.PNGD_WIDTH_ALIGN) * ch * F.align_up(h, F.PNGD_HEIGHT_ALIGN)


def png_decode_async(channel: ChannelDesc, data: int, size: int, output_desc: PicDesc,
                     stream: Stream | None = None) -> Task:
    """Mirrors `acldvppPngDecodeAsync`: decode the PNG at device address `data` into packed
    RGB888 or RGBA8888 (UNKNOWN: RGBA8888 when the PNG has alpha, else RGB888)."""
    api = "dvpp_png_decode_async"
    ch = _channel(channel, api, "PNGD")
    s = _stream(stream, api)
    n = _size(api, size)
    check_span(api, "data", data, n)
    o = _pic(output_desc, api, "output_desc")
    _check_decode_out(api, o, _PNG_OUT, 16, F.PNGD_HEIGHT_ALIGN)
    live = output_desc

    def run():
        raw = _view(data, n, api).tobytes()
        codec.check_claimed_size(raw, "PNG", api, F.PNGD_MIN, F.PNGD_MAX)
        _, _, comps = codec.png_info(raw, api, codec.data_error)
        chans = _png_channels(o.format, comps)
        img = codec.decode_png(raw, api, chans == 4, F.PNGD_MIN, F.PNGD_MAX)
        h, w = img.shape[:2]
        fmt = PixelFormat.RGBA_8888 if chans == 4 else PixelFormat.RGB_888
        ws = o.width_stride or F.align_up(w, F.PNGD_WIDTH_ALIGN) * chans
        hs = o.height_stride or F.align_up(h, F.PNGD_HEIGHT_ALIGN)
        if ws < w * chans:
            raise bad(api, f"output_desc width_stride must be >= width * {chans} = {w * chans} "
                           f"bytes for {F.fmt_name(fmt)}, got width_stride={ws}")
        F.check_strides(api, "output_desc", fmt, w, h, ws, hs, 16, F.PNGD_HEIGHT_ALIGN)
        F.check_size(api, "output_desc", fmt, ws, hs, o.size)
        color.write_packed(_view(o.data, o.size, api), ws, hs, img)
        live.width, live.height, live.width_stride, live.height_stride = w, h, ws, hs
        live.format = int(fmt)

    return _submit(s, ch, "PNGD", api, "png_decode", _guard([live], run), [data], [o.data],
                   o.size)


# -- VPC -------------------------------------------------------------------------------------------
def _check_vpc_pic(api: str, role: str, d: PicDesc, output: bool, rules: R.DvppRules) -> None:
    if d.format not in F.VPC_FORMATS:
        raise bad(api, f"{role} format must be one of "
                       f"{', '.join(F.fmt_name(f) for f in F.VPC_FORMATS)}, got "
                       f"{F.fmt_name(d.format)}")
    if output:
        F.check_resolution(api, role, d.width, d.height, F.VPC_OUT_MIN, rules.vpc_out_max)
        if d.format in _YUV and (d.width % 2 or d.height % 2):
            raise bad(api, f"{role} width and height must be even for {F.fmt_name(d.format)}, "
                           f"got {d.width}x{d.height}")
    else:
        hi = F.VPC_IN_MAX_YUV if d.format in _YUV else F.VPC_IN_MAX
        F.check_resolution(api, role, d.width, d.height, F.VPC_IN_MIN, hi)
    walign = rules.vpc_yuv_width_align if d.format in _YUV else rules.vpc_rgb_width_align
    halign = F.VPC_HEIGHT_ALIGN if d.format in _YUV else rules.vpc_rgb_height_align
    F.check_strides(api, role, d.format, d.width, d.height, d.width_stride, d.height_stride,
                    walign, halign, rules.vpc_width_stride_range, rules.vpc_height_stride_range)
    F.check_size(api, role, d.format, d.width_stride, d.height_stride, d.size)
    check_span(api, f"{role} data", d.data, d.size)


def _check_pair(api: str, i: PicDesc, o: PicDesc) -> None:
    same = (i.format in _YUV) == (o.format in _YUV)
    if not same:
        raise bad(api, f"output_desc format must be in the input's family (YUV420SP NV12/NV21 "
                       f"or packed RGB888/BGR888), got {F.fmt_name(i.format)} -> "
                       f"{F.fmt_name(o.format)}; colour conversion is not in this VPC")


def _check_scale(api: str, what: str, iw: int, ih: int, ow: int, oh: int) -> None:
    for name, a, b in (("width", iw, ow), ("height", ih, oh)):
        if not F.VPC_SCALE_MIN <= b / a <= F.VPC_SCALE_MAX:
            raise bad(api, f"{what} {name} scale must be within [1/32, 16], got {a} -> {b} "
                           f"({b / a:.4g}x)")


def _effective(i: PicDesc) -> tuple[int, int]:
    """VPC rounds odd YUV420SP input sizes down to even (as documented)."""
    return (i.width & ~1, i.height & ~1) if i.format in _YUV else (i.width, i.height)


def _check_roi(api: str, role: str, r: RoiConfig, pic_w: int, pic_h: int, yuv: bool,
               rules: R.DvppRules, paste: bool = False, pic: str = "input picture") -> None:
    if r.right < r.left or r.bottom < r.top:
        raise bad(api, f"{role} must have right >= left and bottom >= top, got {r!r}")
    if r.right >= pic_w or r.bottom >= pic_h:
        raise bad(api, f"{role} must lie inside the {pic} ({pic_w}x{pic_h}: right < {pic_w}, "
                       f"bottom < {pic_h}), got {r!r}")
    odd = r.left % 2 or r.top % 2 or r.right % 2 == 0 or r.bottom % 2 == 0
    if yuv and rules.roi_parity and odd:
        raise bad(api, f"{role} offsets must be even for YUV420SP (left and top even, right and "
                       f"bottom odd), got left={r.left} right={r.right} top={r.top} "
                       f"bottom={r.bottom}")
    if paste and r.left % rules.paste_left_align:
        raise bad(api, f"{role} left must be a multiple of {rules.paste_left_align}, got "
                       f"left={r.left}")
    if r.width < F.VPC_OUT_MIN[0] or r.height < F.VPC_OUT_MIN[1]:
        raise bad(api, f"{role} must be at least {F.VPC_OUT_MIN[0]}x{F.VPC_OUT_MIN[1]}, got "
                       f"{r.width}x{r.height}")


def _read_pic(d: PicDesc, api: str, x: int = 0, y: int = 0, w: int | None = None,
              h: int | None = None):
    """The (x, y, w, h) region of a picture: ("yuv", Y, UV) or ("rgb", array)."""
    buf = _view(d.data, F.frame_size(d.format, d.width_stride, d.height_stride), api)
    ew, eh = _effective(d)
    w, h = (ew if w is None else w), (eh if h is None else h)
    if d.format in _YUV:
        Y, UV = color.read_yuv420sp(buf, d.width_stride, d.height_stride, x + w, y + h)
        return d.format, Y[y:y + h, x:x + w], UV[y // 2:(y + h) // 2, x:x + w]
    img = color.read_packed(buf, d.width_stride, d.height_stride, x + w, y + h)
    return d.format, img[y:y + h, x:x + w], None


def _scaled(src, w: int, h: int, nearest: bool):
    fmt, a, b = src
    if fmt in _YUV:
        return color.scale_yuv420sp(a, b, w, h, nearest) if a.shape != (h, w) else (a, b)
    return (color.scale_plane(a, h, w, nearest), None)


def _write_pic(d: PicDesc, fmt_in: int, planes, api: str, x: int = 0, y: int = 0) -> None:
    buf = _view(d.data, F.frame_size(d.format, d.width_stride, d.height_stride), api)
    a, b = planes
    if d.format in _YUV:
        if d.format != fmt_in:
            b = color.swap_uv(b)
        color.write_yuv420sp(buf, d.width_stride, d.height_stride, a, b, y, x)
    else:
        if d.format != fmt_in:
            a = a[..., ::-1]
        color.write_packed(buf, d.width_stride, d.height_stride, a, y, x)


def _nearest(cfg) -> bool:
    return cfg is not None and cfg.interpolation == 2


def vpc_rules():
    """(check_vpc_pic, check_pair, check_roi, check_scale, is_nearest): the VPC rules the single
    calls check, for the batch calls."""
    return _check_vpc_pic, _check_pair, _check_roi, _check_scale, _nearest


def crop_and_paste(i: PicDesc, crop, o: PicDesc, dst, nearest: bool, api: str) -> None:
    """The VPC work of one crop (x, y, w, h) of `i` scaled into `dst` (x, y, w, h) of `o`."""
    x, y, w, h = crop
    if i.format in _YUV and any(v % 2 for v in tuple(crop) + tuple(dst)):
        # an odd offset or size (allowed where the SoC has no ROI parity rule): through
        # full-resolution chroma (`rt.dvpp.color.yuv_region_any`)
        _, Y, UV = _read_pic(i, api)
        yp, cp = color.yuv_region_any(Y, UV, crop, dst[2], dst[3], nearest)
        if o.format != i.format:
            cp = cp[..., ::-1]
        buf = _view(o.data, F.frame_size(o.format, o.width_stride, o.height_stride), api)
        color.write_yuv420sp_any(buf, o.width_stride, o.height_stride, yp, cp, dst[1], dst[0])
        return
    planes = _scaled(_read_pic(i, api, x, y, w, h), dst[2], dst[3], nearest)
    _write_pic(o, i.format, planes, api, dst[0], dst[1])


def vpc_resize_async(channel: ChannelDesc, input_desc: PicDesc, output_desc: PicDesc,
                     resize_config: ResizeConfig | None = None,
                     stream: Stream | None = None) -> Task:
    """Mirrors `acldvppVpcResizeAsync`: scale the input picture to the output desc's size
    (bilinear; see `rt.dvpp.color`)."""
    api = "dvpp_vpc_resize_async"
    ch = _channel(channel, api, "VPC")
    s = _stream(stream, api)
    if resize_config is not None:
        _obj(resize_config, ResizeConfig, api, "resize_config")
    i, o = _pic(input_desc, api, "input_desc"), _pic(output_desc, api, "output_desc")
    rules = R.for_device(ch.device)
    _check_vpc_pic(api, "input_desc", i, False, rules)
    _check_vpc_pic(api, "output_desc", o, True, rules)
    _check_pair(api, i, o)
    iw, ih = _effective(i)
    _check_scale(api, "resize", iw, ih, o.width, o.height)
    nearest = _nearest(resize_config)

    def run():
        _write_pic(o, i.format, _scaled(_read_pic(i, api), o.width, o.height, nearest), api)

    return _submit(s, ch, "VPC", api, "vpc_resize", _guard([output_desc], run), [i.data],
                   [o.data], F.frame_size(o.format, o.width_stride, o.height_stride))


def vpc_crop_async(channel: ChannelDesc, input_desc: PicDesc, output_desc: PicDesc,
                   crop_area: RoiConfig, stream: Stream | None = None) -> Task:
    """Mirrors `acldvppVpcCropAsync`: cut `crop_area` out of the input; scaled to the output
    desc's size when that differs from the crop's."""
    api = "dvpp_vpc_crop_async"
    ch = _channel(channel, api, "VPC")
    s = _stream(stream, api)
    i, o = _pic(input_desc, api, "input_desc"), _pic(output_desc, api, "output_desc")
    r = _obj(crop_area, RoiConfig, api, "crop_area")
    rules = R.for_device(ch.device)
    _check_vpc_pic(api, "input_desc", i, False, rules)
    _check_vpc_pic(api, "output_desc", o, True, rules)
    _check_pair(api, i, o)
    _check_roi(api, "crop_area", r, i.width, i.height, i.format in _YUV, rules)
    _check_scale(api, "crop", r.width, r.height, o.width, o.height)
    x, y, w, h = r.left, r.top, r.width, r.height

    def run():
        crop_and_paste(i, (x, y, w, h), o, (0, 0, o.width, o.height), False, api)

    return _submit(s, ch, "VPC", api, "vpc_crop", _guard([output_desc], run), [i.data],
                   [o.data], F.frame_size(o.format, o.width_stride, o.height_stride))


def vpc_crop_and_paste_async(channel: ChannelDesc, input_desc: PicDesc, output_desc: PicDesc,
                             crop_area: RoiConfig, paste_area: RoiConfig,
                             stream: Stream | None = None,
                             resize_config: ResizeConfig | None = None) -> Task:
    """Mirrors `acldvppVpcCropAndPasteAsync` (with `resize_config`:
    `acldvppVpcCropResizePasteAsync`): cut `crop_area` out of the input, scale it to
    `paste_area`'s size (the config's interpolation; default bilinear), and write it there in
    the output picture; the rest of the output is left as it was (the caller's canvas)."""
    api = "dvpp_vpc_crop_resize_paste_async" if resize_config is not None else \
        "dvpp_vpc_crop_and_paste_async"
    ch = _channel(channel, api, "VPC")
    s = _stream(stream, api)
    if resize_config is not None:
        _obj(resize_config, ResizeConfig, api, "resize_config")
    nearest = _nearest(resize_config)
    i, o = _pic(input_desc, api, "input_desc"), _pic(output_desc, api, "output_desc")
    r = _obj(crop_area, RoiConfig, api, "crop_area")
    p = _obj(paste_area, RoiConfig, api, "paste_area")
    rules = R.for_device(ch.device)
    _check_vpc_pic(api, "input_desc", i, False, rules)
    _check_vpc_pic(api, "output_desc", o, True, rules)
    _check_pair(api, i, o)
    yuv = i.format in _YUV
    _check_roi(api, "crop_area", r, i.width, i.height, yuv, rules)
    _check_roi(api, "paste_area", p, o.width, o.height, yuv, rules, paste=True,
               pic="output picture")
    _check_scale(api, "crop-to-paste", r.width, r.height, p.width, p.height)
    crop = (r.left, r.top, r.width, r.height)
    dst = (p.left, p.top, p.width, p.height)

    def run():
        crop_and_paste(i, crop, o, dst, nearest, api)

    return _submit(s, ch, "VPC", api, "vpc_crop_and_paste", _guard([output_desc], run),
                   [i.data], [o.data], F.frame_size(o.format, o.width_stride, o.height_stride))


# -- JPEG encode -----------------------------------------------------------------------------------
def jpeg_predict_enc_size(input_desc: PicDesc, config: JpegeConfig | None = None) -> int:
    """Mirrors `acldvppJpegPredictEncSize`: an upper bound of the encoded bytes,
    align(w, 16) * align(h, 16) * 3 + 8 KiB (more than any quality level needs)."""
    api = "dvpp_jpeg_predict_enc_size"
    d = _pic(input_desc, api, "input_desc")
    if config is not None:
        _obj(config, JpegeConfig, api, "config")
    if d.width <= 0 or d.height <= 0:
        raise bad(api, f"input_desc width and height must be > 0, got {d.width}x{d.height}")
    return F.align_up(d.width, 16) * F.align_up(d.height, 16) * 3 + 8192


def _size_holder(size, api: str):
    """(capacity, write(n)) of JPEGE's in/out size: a 1-element integer numpy array or the host
    address of a uint32 (what `acl.util.numpy_to_ptr(np.array([n], np.uint32))` gives)."""
    if isinstance(size, np.ndarray):
        if size.size < 1 or size.dtype.kind not in "iu":
            raise bad(api, f"size must hold the output buffer's bytes in an integer array, got "
                           f"{size.dtype} array of {size.size} element(s)")

        def write(n):
            size.flat[0] = n
        return int(size.flat[0]), write
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or \
            _mem.is_device_address(int(size)):
        raise bad(api, f"size must be the host address of a uint32 holding the output buffer's "
                       f"bytes (acl.util.numpy_to_ptr of np.array([n], np.uint32)) or such an "
                       f"array, got size={size!r}")
    cell = np.empty(1, np.uint32)
    _mem.copy_bytes(cell, int(size), 4, api=api)

    def write(n):
        _mem.copy_bytes(int(size), np.array([n], np.uint32), 4, api=api)
    return int(cell[0]), write


def jpeg_encode_async(channel: ChannelDesc, input_desc: PicDesc, data: int, size,
                      config: JpegeConfig | None = None, stream: Stream | None = None) -> Task:
    """Mirrors `acldvppJpegEncodeAsync(channelDesc, inputDesc, data, size, config, stream)`:
    encode the YUV420SP picture into a baseline 4:2:0 JPEG at device address `data`. `size`
    holds the output buffer's capacity on entry and the JPEG's bytes once the task has run."""
    api = "dvpp_jpeg_encode_async"
    ch = _channel(channel, api, "JPEGE")
    s = _stream(stream, api)
    i = _pic(input_desc, api, "input_desc")
    cfg = _obj(config, JpegeConfig, api, "config") if config is not None else JpegeConfig()
    quality = cfg.quality
    if i.format not in _YUV:
        raise bad(api, f"input_desc format must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 or "
                       f"PIXEL_FORMAT_YVU_SEMIPLANAR_420, got {F.fmt_name(i.format)}")
    F.check_resolution(api, "input_desc", i.width, i.height, F.JPEGE_MIN,
                       R.for_device(ch.device).jpege_max)
    if i.width % 2 or i.height % 2:
        raise bad(api, f"input_desc width and height must be even, got {i.width}x{i.height}")
    F.check_strides(api, "input_desc", i.format, i.width, i.height, i.width_stride,
                    i.height_stride, F.JPEGE_WIDTH_ALIGN, F.JPEGE_HEIGHT_ALIGN)
    F.check_size(api, "input_desc", i.format, i.width_stride, i.height_stride, i.size)
    check_span(api, "input_desc data", i.data, i.size)
    cap, write = _size_holder(size, api)
    if cap <= 0:
        raise bad(api, f"size must hold the output buffer's capacity (> 0; see "
                       f"jpeg_predict_enc_size), got {cap}")
    check_span(api, "data", data, cap)
    box = {}

    def run():
        _, y, uv = _read_pic(i, api)
        jpg = codec.encode_jpeg(color.yuv420sp_to_ycbcr(y, uv, i.format), quality)
        if len(jpg) > cap:
            raise bad(api, f"the output buffer must hold the encoded JPEG, got {len(jpg)} bytes "
                           f"for a buffer of size={cap}")
        _view(data, cap, api)[:len(jpg)] = np.frombuffer(jpg, np.uint8)
        write(len(jpg))
        box["task"].args["out_bytes"] = len(jpg)

    box["task"] = _submit(s, ch, "JPEGE", api, "jpeg_encode", run, [i.data], [data], cap)
    return box["task"]
