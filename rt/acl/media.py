"""`acl.media`: pyACL's DVPP functions over `rt.dvpp` (`import rt.acl as acl;
acl.media.dvpp_jpeg_decode_async(...)`).

pyACL's forms: creators return a handle (an int; 0 on failure), setters and operations `ret`,
getters the value (0 for a bad handle), `dvpp_malloc` `(ptr, ret)`, the info calls
`(width, height, components, ret)`, the predictions `(size, ret)`, `dvpp_vpc_batch_crop_async`
and `dvpp_vpc_batch_crop_and_paste_async` `(dst_batch_pic_descs, ret)`. The video calls
(`vdec_*`, `venc_*`, `dvpp_*stream_desc*`) are in `rt/acl/media_video.py`. Nothing raises for
an API error; `acl.get_recent_err_msg()` holds the message. Streams are acl.rt handles (0: the
default stream).
"""
from __future__ import annotations

from .. import dvpp as _dv
from ..errors import AclError, ACL_ERROR_INVALID_PARAM
from . import constants as C
from .handles import fail, returns_ret as _ret, returns_value as _value
from .media_common import (HANDLES as _handles, drop_obj as _drop, get_obj as _get,
                           new_handle as _new, returns_handle as _handle,
                           returns_plain as _plain, stream_of as _stream)
from .media_video import *  # noqa: F401,F403 - the venc_* / vdec_* / dvpp_*stream_desc* calls

# acldvppPixelFormat / acldvppChannelMode / acldvppJpegFormat values, as pyACL scripts spell them
for _f in _dv.PixelFormat:
    globals()[f"PIXEL_FORMAT_{_f.name}"] = int(_f)
for _f in _dv.ChannelMode:
    globals()[f"DVPP_CHNMODE_{_f.name}"] = int(_f)
for _f in _dv.JpegFormat:
    globals()[f"ACL_JPEG_{_f.name}"] = int(_f)


# -- memory ----------------------------------------------------------------------------------------
@_value(0)
def dvpp_malloc(size: int):
    """`dev_ptr, ret = acl.media.dvpp_malloc(size)` (128-byte aligned device memory)."""
    return int(_dv.malloc(size))


@_ret
def dvpp_free(dev_ptr: int):
    _dv.free(dev_ptr)


# -- channels --------------------------------------------------------------------------------------
@_handle
def dvpp_create_channel_desc():
    return _new(_dv.ChannelDesc())


@_ret
def dvpp_destroy_channel_desc(channel_desc: int):
    _drop(channel_desc, _dv.ChannelDesc, "dvpp_destroy_channel_desc").destroy()


@_ret
def dvpp_create_channel(channel_desc: int):
    _get(channel_desc, _dv.ChannelDesc, "dvpp_create_channel").create()


@_ret
def dvpp_destroy_channel(channel_desc: int):
    _get(channel_desc, _dv.ChannelDesc, "dvpp_destroy_channel").close()


@_ret
def dvpp_set_channel_desc_mode(channel_desc: int, mode: int):
    _get(channel_desc, _dv.ChannelDesc, "dvpp_set_channel_desc_mode").set_mode(mode)


@_plain()
def dvpp_get_channel_desc_channel_id(channel_desc: int):
    ch = _get(channel_desc, _dv.ChannelDesc, "dvpp_get_channel_desc_channel_id")
    return ch.channel_id or 0


# -- picture descriptions --------------------------------------------------------------------------
@_handle
def dvpp_create_pic_desc():
    return _new(_dv.PicDesc())


@_ret
def dvpp_destroy_pic_desc(pic_desc: int):
    _drop(pic_desc, _dv.PicDesc, "dvpp_destroy_pic_desc").destroy()


def _setter(field: str):
    api = f"dvpp_set_pic_desc_{field}"

    @_ret
    def setter(pic_desc: int, value: int):
        _get(pic_desc, _dv.PicDesc, api).set(field, value, api)
    setter.__name__ = api
    setter.__doc__ = f"`ret = acl.media.{api}(pic_desc, {field})`"
    return setter


def _getter(field: str):
    api = f"dvpp_get_pic_desc_{field}"

    @_plain()
    def getter(pic_desc: int):
        return getattr(_get(pic_desc, _dv.PicDesc, api), field)
    getter.__name__ = api
    getter.__doc__ = f"`{field} = acl.media.{api}(pic_desc)`"
    return getter


dvpp_set_pic_desc_data = _setter("data")
dvpp_set_pic_desc_size = _setter("size")
dvpp_set_pic_desc_format = _setter("format")
dvpp_set_pic_desc_width = _setter("width")
dvpp_set_pic_desc_height = _setter("height")
dvpp_set_pic_desc_width_stride = _setter("width_stride")
dvpp_set_pic_desc_height_stride = _setter("height_stride")
dvpp_get_pic_desc_data = _getter("data")
dvpp_get_pic_desc_size = _getter("size")
dvpp_get_pic_desc_format = _getter("format")
dvpp_get_pic_desc_width = _getter("width")
dvpp_get_pic_desc_height = _getter("height")
dvpp_get_pic_desc_width_stride = _getter("width_stride")
dvpp_get_pic_desc_height_stride = _getter("height_stride")
dvpp_get_pic_desc_ret_code = _getter("ret_code")


@_handle
def dvpp_create_batch_pic_desc(batch_size: int):
    return _new(_dv.BatchPicDesc(batch_size))


@_handle
def dvpp_get_pic_desc(batch_pic_desc: int, index: int):
    """`pic_desc = acl.media.dvpp_get_pic_desc(batch_pic_desc, index)` (0 if out of range)."""
    b = _get(batch_pic_desc, _dv.BatchPicDesc, "dvpp_get_pic_desc")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(b):
        raise AclError(ACL_ERROR_INVALID_PARAM,
                       f"acl.media.dvpp_get_pic_desc: index must be in [0, {len(b)}), got "
                       f"index={index!r}")
    pic = b.pics[index]
    h = _handles.find(pic)
    return _new(pic) if h is None else h


@_ret
def dvpp_destroy_batch_pic_desc(batch_pic_desc: int):
    b = _drop(batch_pic_desc, _dv.BatchPicDesc, "dvpp_destroy_batch_pic_desc")
    _handles.drop_where(lambda o: any(o is p for p in b.pics))
    b.destroy()


# -- configs ---------------------------------------------------------------------------------------
@_handle
def dvpp_create_resize_config():
    return _new(_dv.ResizeConfig())


@_ret
def dvpp_destroy_resize_config(resize_config: int):
    _drop(resize_config, _dv.ResizeConfig, "dvpp_destroy_resize_config").destroy()


@_ret
def dvpp_set_resize_config_interpolation(resize_config: int, interpolation: int):
    _get(resize_config, _dv.ResizeConfig, "dvpp_set_resize_config_interpolation") \
        .set_interpolation(interpolation)


@_plain()
def dvpp_get_resize_config_interpolation(resize_config: int):
    return _get(resize_config, _dv.ResizeConfig,
                "dvpp_get_resize_config_interpolation").interpolation


@_handle
def dvpp_create_roi_config(left: int, right: int, top: int, bottom: int):
    """`roi = acl.media.dvpp_create_roi_config(left, right, top, bottom)` (inclusive)."""
    return _new(_dv.RoiConfig(left, right, top, bottom))


@_ret
def dvpp_destroy_roi_config(roi_config: int):
    _drop(roi_config, _dv.RoiConfig, "dvpp_destroy_roi_config").destroy()


@_ret
def dvpp_set_roi_config(roi_config: int, left: int, right: int, top: int, bottom: int):
    _get(roi_config, _dv.RoiConfig, "dvpp_set_roi_config").set(left, right, top, bottom)


def _roi_side(side: str):
    api = f"dvpp_set_roi_config_{side}"

    @_ret
    def setter(roi_config: int, value: int):
        r = _get(roi_config, _dv.RoiConfig, api)
        vals = {k: getattr(r, k) for k in ("left", "right", "top", "bottom")}
        vals[side] = value
        r.set(**vals)
    setter.__name__ = api
    return setter


dvpp_set_roi_config_left = _roi_side("left")
dvpp_set_roi_config_right = _roi_side("right")
dvpp_set_roi_config_top = _roi_side("top")
dvpp_set_roi_config_bottom = _roi_side("bottom")


@_handle
def dvpp_create_jpege_config():
    return _new(_dv.JpegeConfig())


@_ret
def dvpp_destroy_jpege_config(jpege_config: int):
    _drop(jpege_config, _dv.JpegeConfig, "dvpp_destroy_jpege_config").destroy()


@_ret
def dvpp_set_jpege_config_level(jpege_config: int, level: int):
    _get(jpege_config, _dv.JpegeConfig, "dvpp_set_jpege_config_level").set_level(level)


@_plain()
def dvpp_get_jpege_config_level(jpege_config: int):
    return _get(jpege_config, _dv.JpegeConfig, "dvpp_get_jpege_config_level").level


# -- image information and size predictions --------------------------------------------------------
@_value(0, 0, 0)
def dvpp_jpeg_get_image_info(data, size: int):
    """`width, height, components, ret = acl.media.dvpp_jpeg_get_image_info(data, size)`."""
    return _dv.jpeg_get_image_info(data, size)


@_value(0, 0, 0, 0)
def dvpp_jpeg_get_image_info_v2(data, size: int):
    """`width, height, components, format, ret = ...` (format: an acldvppJpegFormat)."""
    w, h, c, f = _dv.jpeg_get_image_info_v2(data, size)
    return w, h, c, int(f)


@_value(0)
def dvpp_jpeg_predict_dec_size(data, size: int, output_pixel_format: int):
    return _dv.jpeg_predict_dec_size(data, size, output_pixel_format)


@_value(0, 0, 0)
def dvpp_png_get_image_info(data, size: int):
    return _dv.png_get_image_info(data, size)


@_value(0)
def dvpp_png_predict_dec_size(data, size: int, output_pixel_format: int):
    return _dv.png_predict_dec_size(data, size, output_pixel_format)


@_value(0)
def dvpp_jpeg_predict_enc_size(input_desc: int, config: int):
    api = "dvpp_jpeg_predict_enc_size"
    return _dv.jpeg_predict_enc_size(_get(input_desc, _dv.PicDesc, api),
                                     _get(config, _dv.JpegeConfig, api))


# -- operations ------------------------------------------------------------------------------------
@_ret
def dvpp_jpeg_decode_async(channel_desc: int, data: int, size: int, output_desc: int,
                           stream: int):
    api = "dvpp_jpeg_decode_async"
    _dv.jpeg_decode_async(_get(channel_desc, _dv.ChannelDesc, api), data, size,
                          _get(output_desc, _dv.PicDesc, api), _stream(stream, api))


@_ret
def dvpp_png_decode_async(channel_desc: int, data: int, size: int, output_desc: int,
                          stream: int):
    api = "dvpp_png_decode_async"
    _dv.png_decode_async(_get(channel_desc, _dv.ChannelDesc, api), data, size,
                         _get(output_desc, _dv.PicDesc, api), _stream(stream, api))


@_ret
def dvpp_vpc_resize_async(channel_desc: int, input_desc: int, output_desc: int,
                          resize_config: int, stream: int):
    api = "dvpp_vpc_resize_async"
    _dv.vpc_resize_async(_get(channel_desc, _dv.ChannelDesc, api),
                         _get(input_desc, _dv.PicDesc, api), _get(output_desc, _dv.PicDesc, api),
                         _get(resize_config, _dv.ResizeConfig, api), _stream(stream, api))


@_ret
def dvpp_vpc_crop_async(channel_desc: int, input_desc: int, output_desc: int, crop_area: int,
                        stream: int):
    api = "dvpp_vpc_crop_async"
    _dv.vpc_crop_async(_get(channel_desc, _dv.ChannelDesc, api),
                       _get(input_desc, _dv.PicDesc, api), _get(output_desc, _dv.PicDesc, api),
                       _get(crop_area, _dv.RoiConfig, api), _stream(stream, api))


@_ret
def dvpp_vpc_crop_and_paste_async(channel_desc: int, input_desc: int, output_desc: int,
                                  crop_area: int, paste_area: int, stream: int):
    api = "dvpp_vpc_crop_and_paste_async"
    _dv.vpc_crop_and_paste_async(_get(channel_desc, _dv.ChannelDesc, api),
                                 _get(input_desc, _dv.PicDesc, api),
                                 _get(output_desc, _dv.PicDesc, api),
                                 _get(crop_area, _dv.RoiConfig, api),
                                 _get(paste_area, _dv.RoiConfig, api), _stream(stream, api))


def dvpp_vpc_batch_crop_async(channel_desc: int, src_batch_pic_descs: int, roi_nums_list,
                              dst_batch_pic_descs: int, crop_area_list, stream: int):
    """`dst_batch_pic_descs, ret = acl.media.dvpp_vpc_batch_crop_async(channel_desc,
    src_batch_pic_descs, roi_nums_list, dst_batch_pic_descs, crop_area_list, stream)`."""
    api = "dvpp_vpc_batch_crop_async"
    try:
        areas = [_get(a, _dv.RoiConfig, api) for a in (crop_area_list or [])]
        _dv.vpc_batch_crop_async(_get(channel_desc, _dv.ChannelDesc, api),
                                 _get(src_batch_pic_descs, _dv.BatchPicDesc, api), roi_nums_list,
                                 _get(dst_batch_pic_descs, _dv.BatchPicDesc, api), areas,
                                 _stream(stream, api))
    except AclError as e:
        return dst_batch_pic_descs, fail(e, f"acl.media.{api}")
    return dst_batch_pic_descs, C.ACL_SUCCESS


@_ret
def dvpp_vpc_crop_resize_paste_async(channel_desc: int, input_desc: int, output_desc: int,
                                     crop_area: int, paste_area: int, resize_config: int,
                                     stream: int):
    """Crop-and-paste whose scaling uses `resize_config`'s interpolation."""
    api = "dvpp_vpc_crop_resize_paste_async"
    _dv.vpc_crop_and_paste_async(_get(channel_desc, _dv.ChannelDesc, api),
                                 _get(input_desc, _dv.PicDesc, api),
                                 _get(output_desc, _dv.PicDesc, api),
                                 _get(crop_area, _dv.RoiConfig, api),
                                 _get(paste_area, _dv.RoiConfig, api), _stream(stream, api),
                                 _get(resize_config, _dv.ResizeConfig, api))


def _batch_paste(api: str, channel_desc, src, roi_nums_list, dst, crop_area_list,
                 paste_area_list, resize_config, stream) -> None:
    crops = [_get(a, _dv.RoiConfig, api) for a in (crop_area_list or [])]
    pastes = [_get(a, _dv.RoiConfig, api) for a in (paste_area_list or [])]
    cfg = _get(resize_config, _dv.ResizeConfig, api) if resize_config is not None else None
    _dv.vpc_batch_crop_and_paste_async(_get(channel_desc, _dv.ChannelDesc, api),
                                       _get(src, _dv.BatchPicDesc, api), roi_nums_list,
                                       _get(dst, _dv.BatchPicDesc, api), crops, pastes,
                                       _stream(stream, api), cfg)


def dvpp_vpc_batch_crop_and_paste_async(channel_desc: int, src_batch_pic_descs: int,
                                        roi_nums_list, dst_batch_pic_descs: int, crop_area_list,
                                        paste_area_list, stream: int):
    """`dst_batch_pic_descs, ret = acl.media.dvpp_vpc_batch_crop_and_paste_async(channel_desc,
    src_batch_pic_descs, roi_nums_list, dst_batch_pic_descs, crop_area_list, paste_area_list,
    stream)`."""
    api = "dvpp_vpc_batch_crop_and_paste_async"
    try:
        _batch_paste(api, channel_desc, src_batch_pic_descs, roi_nums_list, dst_batch_pic_descs,
                     crop_area_list, paste_area_list, None, stream)
    except AclError as e:
        return dst_batch_pic_descs, fail(e, f"acl.media.{api}")
    return dst_batch_pic_descs, C.ACL_SUCCESS


@_ret
def dvpp_vpc_batch_crop_resize_paste_async(channel_desc: int, src_batch_pic_descs: int,
                                           roi_nums_list, dst_batch_pic_descs: int,
                                           crop_area_list, paste_area_list, resize_config: int,
                                           stream: int):
    """`ret = ...`: batch crop-and-paste scaling with `resize_config`'s interpolation."""
    _batch_paste("dvpp_vpc_batch_crop_resize_paste_async", channel_desc, src_batch_pic_descs,
                 roi_nums_list, dst_batch_pic_descs, crop_area_list, paste_area_list,
                 resize_config, stream)


@_ret
def dvpp_jpeg_encode_async(channel_desc: int, input_desc: int, data: int, size, config: int,
                           stream: int):
    """`ret = acl.media.dvpp_jpeg_encode_async(channel_desc, input_desc, data, size_ptr, config,
    stream)`: `size_ptr` is the host address of a uint32 (or int32) holding the output buffer's
    capacity; it holds the JPEG's bytes once the stream has run the task."""
    api = "dvpp_jpeg_encode_async"
    _dv.jpeg_encode_async(_get(channel_desc, _dv.ChannelDesc, api),
                          _get(input_desc, _dv.PicDesc, api), data, size,
                          _get(config, _dv.JpegeConfig, api), _stream(stream, api))
