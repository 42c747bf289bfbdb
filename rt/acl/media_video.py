"""`acl.media`'s video calls: pyACL's `dvpp_*stream_desc*`, `vdec_*` and `venc_*` over
`rt.dvpp.video` / `rt.dvpp.video_venc` (docs/dvpp.md, "Video").

The callbacks get pyACL handles, as pyACL passes them: VDEC's `(input_stream_desc,
output_pic_desc, user_data)` with the handles given to `vdec_send_frame` (output 0 for a
skipped frame), VENC's `(input_pic_desc, output_stream_desc, user_data)` with an output stream
desc handle that is valid until the callback returns.
"""
from __future__ import annotations

import numpy as _np

from .. import dvpp as _dv
from ..dvpp import video as _vd
from ..dvpp import video_desc as _vdesc
from ..dvpp import video_venc as _ve
from . import util as _util
from .handles import returns_ret as _ret, returns_value as _value
from .media_common import (HANDLES as _handles, drop_obj as _drop, get_obj as _get,
                           new_handle as _new, returns_handle as _handle,
                           returns_plain as _plain)

__all__: list = []


def _public(fn):
    """Export `fn` as `acl.media.<name>` (error messages name it so)."""
    name = fn.__name__
    fn._acl_name = f"acl.media.{name}"
    inner = getattr(fn, "__wrapped__", None)
    if inner is not None:
        inner._acl_name = fn._acl_name
    globals()[name] = fn
    __all__.append(name)
    return fn


def _handle_of(obj) -> int:
    """The handle of a DVPP object the caller passed in (0 for None)."""
    if obj is None:
        return 0
    h = _handles.find(obj)
    return h if h is not None else 0


def _opt(handle, cls, api: str):
    """A handle that may be 0 (None)."""
    return None if handle in (0, None) else _get(handle, cls, api)


# -- stream descs ----------------------------------------------------------------------------------
@_public
@_handle
def dvpp_create_stream_desc():
    return _new(_vdesc.StreamDesc())


@_public
@_ret
def dvpp_destroy_stream_desc(stream_desc: int):
    _drop(stream_desc, _vdesc.StreamDesc, "dvpp_destroy_stream_desc").destroy()


def _field_calls(cls, head: str, tail: str, fields, callback_wrap=None):
    """`<head>_set_<tail><field>(handle, value)` -> ret and `<head>_get_<tail><field>(handle)`
    -> value for each field of `cls` (a callback is stored wrapped, read back as given)."""
    for field in fields:
        def make(field=field):
            set_api, get_api = f"{head}_set_{tail}{field}", f"{head}_get_{tail}{field}"

            @_ret
            def setter(handle: int, value):
                obj = _get(handle, cls, set_api)
                obj.set(field, callback_wrap(value) if field == "callback" else value)
            setter.__name__ = set_api
            _public(setter)

            @_plain()
            def getter(handle: int):
                v = getattr(_get(handle, cls, get_api), field)
                return getattr(v, "user_fn", v) if field == "callback" else v
            getter.__name__ = get_api
            _public(getter)
        make()


_field_calls(_vdesc.StreamDesc, "dvpp", "stream_desc_",
             ("data", "size", "format", "timestamp", "ret_code", "eos"))


# -- channel descs ---------------------------------------------------------------------------------
def _desc_calls(cls, kind: str, fields, callback_wrap):
    """`<kind>_create_channel_desc`, `_destroy_channel_desc`, `_set/get_channel_desc_<field>`."""
    @_handle
    def creator():
        return _new(cls())
    creator.__name__ = f"{kind}_create_channel_desc"
    _public(creator)

    @_ret
    def destroyer(channel_desc: int):
        _get(channel_desc, cls, f"{kind}_destroy_channel_desc").destroy()
        _handles.drop(channel_desc)
    destroyer.__name__ = f"{kind}_destroy_channel_desc"
    _public(destroyer)
    _field_calls(cls, kind, "channel_desc_", fields, callback_wrap)


def _vdec_callback(fn):
    """The user's `fn(input_stream_desc, output_pic_desc, user_data)` on pyACL handles."""
    if not callable(fn):
        return fn                              # the desc's setter refuses it with its message

    def call(inp, out, user_data):
        fn(_handle_of(inp), _handle_of(out), user_data)
    call.user_fn = fn
    return call


def _venc_callback(fn):
    """The user's `fn(input_pic_desc, output_stream_desc, user_data)`; the output stream desc's
    handle lives while the callback runs."""
    if not callable(fn):
        return fn

    def call(inp, out, user_data):
        h = _new(out)
        try:
            fn(_handle_of(inp), h, user_data)
        finally:
            _handles.drop(h)
            out.destroy()
    call.user_fn = fn
    return call


_desc_calls(_vdesc.VdecChannelDesc, "vdec",
            ("channel_id", "thread_id", "callback", "entype", "out_pic_format", "out_pic_width",
             "out_pic_height", "ref_frame_num", "out_mode", "bit_depth"), _vdec_callback)
_desc_calls(_vdesc.VencChannelDesc, "venc",
            ("thread_id", "callback", "entype", "pic_format", "pic_width", "pic_height",
             "key_frame_interval", "buf_addr", "buf_size", "rc_mode", "src_rate",
             "max_bit_rate"), _venc_callback)    # max_ip_prop: venc_set_channel_desc_param only


def _vdec_param(param_type, api: str) -> str:
    """The VdecChannelDesc field of an aclvdecChannelDescParamType (0 .. 10)."""
    fields = _vdesc.VDEC_PARAM_FIELDS
    if isinstance(param_type, bool) or not isinstance(param_type, int) or \
            not 0 <= param_type < len(fields):
        raise _vdesc.bad(api, f"param_type must be an aclvdecChannelDescParamType "
                              f"(0 .. {len(fields) - 1}), got param_type={param_type!r}")
    return fields[param_type]


@_public
@_value(0)
def vdec_set_channel_desc_param(channel_desc: int, param_type: int, param: int):
    """`channelDesc, ret = acl.media.vdec_set_channel_desc_param(channelDesc, paramType, param)`
    (aclvdecSetChannelDescParam): `param` is the host address of the value (uint32; uint64 for
    ACL_VDEC_THREAD_ID_UINT64), as pyACL documents it; the value goes through the matching
    `vdec_set_channel_desc_*` rules. ACL_VDEC_CSC_MATRIX_UINT32 (0) picks the RGB output's
    acldvppCscMatrix. The callback (ACL_VDEC_CALLBACK_PTR) is set with
    `vdec_set_channel_desc_callback`."""
    api = "vdec_set_channel_desc_param"
    field = _vdec_param(param_type, api)
    if field == "callback":
        raise _vdesc.bad(api, "param_type ACL_VDEC_CALLBACK_PTR (3) must be set with "
                              "vdec_set_channel_desc_callback (a Python function), got it here")
    obj = _get(channel_desc, _vdesc.VdecChannelDesc, api)
    width = 8 if field == "thread_id" else 4
    raw = _np.frombuffer(_util.ptr_to_bytes(param, width), _np.uint64 if width == 8 else
                         _np.uint32)
    obj.set(field, int(raw[0]))
    return channel_desc


@_public
@_value(0, 0)
def vdec_get_channel_desc_param(channel_desc: int, param_type: int):
    """`paramRetSize, param, ret = acl.media.vdec_get_channel_desc_param(channelDesc,
    paramType)` (aclvdecGetChannelDescParam): the value of one aclvdecChannelDescParamType and its
    size in bytes (8 for ACL_VDEC_THREAD_ID_UINT64 and the callback, else 4); the callback is
    the Python function that was set."""
    api = "vdec_get_channel_desc_param"
    field = _vdec_param(param_type, api)
    v = getattr(_get(channel_desc, _vdesc.VdecChannelDesc, api), field)
    return (8 if field in ("thread_id", "callback") else 4, getattr(v, "user_fn", v))


def _venc_param(param_type, api: str) -> str:
    fields = _vdesc.VENC_PARAM_FIELDS
    if isinstance(param_type, bool) or not isinstance(param_type, int) or \
            not 0 <= param_type < len(fields):
        raise _vdesc.bad(api, f"param_type must be an aclvencChannelDescParamType "
                              f"(0 .. {len(fields) - 1}), got param_type={param_type!r}")
    return fields[param_type]


@_public
@_ret
def venc_set_channel_desc_param(venc_channel_desc: int, param_type: int, param):
    """`ret = acl.media.venc_set_channel_desc_param(venc_channel_desc, param_type, param)`
    (aclvencSetChannelDescParam): the value of one aclvencChannelDescParamType, as the matching
    `venc_set_channel_desc_*` call sets it (a callback: the Python function)."""
    api = "venc_set_channel_desc_param"
    field = _venc_param(param_type, api)
    obj = _get(venc_channel_desc, _vdesc.VencChannelDesc, api)
    obj.set(field, _venc_callback(param) if field == "callback" else param)


@_public
@_value(None)
def venc_get_channel_desc_param(venc_channel_desc: int, param_type: int):
    """`attr, ret = acl.media.venc_get_channel_desc_param(venc_channel_desc, param_type)`."""
    api = "venc_get_channel_desc_param"
    v = getattr(_get(venc_channel_desc, _vdesc.VencChannelDesc, api),
                _venc_param(param_type, api))
    return (getattr(v, "user_fn", v),)


# -- frame configs ---------------------------------------------------------------------------------
@_public
@_handle
def vdec_create_frame_config():
    return _new(_vdesc.VdecFrameConfig())


@_public
@_ret
def vdec_destroy_frame_config(vdec_frame_config: int):
    _drop(vdec_frame_config, _vdesc.VdecFrameConfig, "vdec_destroy_frame_config").destroy()


@_public
@_handle
def venc_create_frame_config():
    return _new(_vdesc.VencFrameConfig())


@_public
@_ret
def venc_destroy_frame_config(venc_frame_config: int):
    _drop(venc_frame_config, _vdesc.VencFrameConfig, "venc_destroy_frame_config").destroy()


_field_calls(_vdesc.VencFrameConfig, "venc", "frame_config_", ("force_i_frame", "eos"))


# -- channels and frames ---------------------------------------------------------------------------
@_public
@_ret
def vdec_create_channel(vdec_channel_desc: int):
    _vd.VdecChannel(_get(vdec_channel_desc, _vdesc.VdecChannelDesc, "vdec_create_channel"))


@_public
@_ret
def vdec_destroy_channel(vdec_channel_desc: int):
    api = "vdec_destroy_channel"
    _vd.live_channel(_get(vdec_channel_desc, _vdesc.VdecChannelDesc, api),
                       _vdesc.VdecChannelDesc, "vdec", api).close()


@_public
@_ret
def vdec_send_frame(vdec_channel_desc: int, input: int, output: int, config: int, user_data):
    """`ret = acl.media.vdec_send_frame(vdec_channel_desc, input_stream_desc, output_pic_desc,
    vdec_frame_config, user_data)` (output and config may be 0 with eos=1)."""
    api = "vdec_send_frame"
    ch = _vd.live_channel(_get(vdec_channel_desc, _vdesc.VdecChannelDesc, api),
                       _vdesc.VdecChannelDesc, "vdec", api)
    ch.send_frame(_get(input, _vdesc.StreamDesc, api), _opt(output, _dv.PicDesc, api),
                  _opt(config, _vdesc.VdecFrameConfig, api), user_data)


@_public
@_ret
def vdec_send_skipped_frame(vdec_channel_desc: int, input: int, config: int, user_data):
    """`ret = acl.media.vdec_send_skipped_frame(vdec_channel_desc, input, config, user_data)`:
    decoded (a reference for later frames) but not output; its callback gets output 0."""
    api = "vdec_send_skipped_frame"
    ch = _vd.live_channel(_get(vdec_channel_desc, _vdesc.VdecChannelDesc, api),
                       _vdesc.VdecChannelDesc, "vdec", api)
    ch.send_frame(_get(input, _vdesc.StreamDesc, api), None,
                  _opt(config, _vdesc.VdecFrameConfig, api), user_data, skip=True)


@_public
@_ret
def venc_create_channel(venc_channel_desc: int):
    _ve.VencChannel(_get(venc_channel_desc, _vdesc.VencChannelDesc, "venc_create_channel"))


@_public
@_ret
def venc_destroy_channel(venc_channel_desc: int):
    api = "venc_destroy_channel"
    _vd.live_channel(_get(venc_channel_desc, _vdesc.VencChannelDesc, api),
                       _vdesc.VencChannelDesc, "venc", api).close()


@_public
@_ret
def venc_send_frame(venc_channel_desc: int, input: int, reserve, config: int, user_data):
    """`ret = acl.media.venc_send_frame(venc_channel_desc, input_pic_desc, reserve, config,
    user_data)` (`reserve` is 0; input may be 0 when config has eos=1)."""
    api = "venc_send_frame"
    ch = _vd.live_channel(_get(venc_channel_desc, _vdesc.VencChannelDesc, api),
                       _vdesc.VencChannelDesc, "venc", api)
    ch.send_frame(_opt(input, _dv.PicDesc, api), _opt(config, _vdesc.VencFrameConfig, api),
                  user_data)


