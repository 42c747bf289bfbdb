"""VDEC/VENC descriptions: `acldvppStreamDesc`, `aclvdecChannelDesc`, `aclvdecFrameConfig`,
`aclvencChannelDesc`, `aclvencFrameConfig`, with the ranges CANN documents for their setters
(A2 / 310P values). The channels that run on them are in `rt.dvpp.video`.
"""
from __future__ import annotations

import enum

from .desc import Handle, checked_int
from .formats import PACKED_RGB, PixelFormat, bad


class StreamFormat(enum.IntEnum):
    """Mirrors `acldvppStreamFormat` (the `entype` of VDEC/VENC channels)."""
    H265_MAIN_LEVEL = 0
    H264_BASELINE_LEVEL = 1
    H264_MAIN_LEVEL = 2
    H264_HIGH_LEVEL = 3


VIDEO_PIC_FORMATS = (PixelFormat.YUV_SEMIPLANAR_420, PixelFormat.YVU_SEMIPLANAR_420)


def _entype(api: str, v) -> int:
    if isinstance(v, bool) or v not in tuple(StreamFormat):
        raise bad(api, f"entype must be an acldvppStreamFormat: H265_MAIN_LEVEL (0), "
                       f"H264_BASELINE_LEVEL (1), H264_MAIN_LEVEL (2) or H264_HIGH_LEVEL (3), got "
                       f"entype={v!r}")
    return int(v)


def _pic_format(api: str, v) -> int:
    if isinstance(v, bool) or v not in VIDEO_PIC_FORMATS:
        raise bad(api, f"pic format must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1) or "
                       f"PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2), got format={v!r}")
    return int(v)


def _vdec_out_format(api: str, v) -> int:
    """VDEC's output format: NV12, NV21, or packed RGB888 / BGR888 (where the SoC has it: checked
    when the channel is created, `rt.dvpp.rules`)."""
    if isinstance(v, bool) or v not in VIDEO_PIC_FORMATS + PACKED_RGB:
        raise bad(api, f"out_pic_format must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1), "
                       f"PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2), PIXEL_FORMAT_RGB_888 (12) or "
                       f"PIXEL_FORMAT_BGR_888 (13), got format={v!r}")
    return int(v)


def _thread(api: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise bad(api, f"thread_id must be a positive int (acl.util.start_thread's id or "
                       f"threading.get_ident()), got thread_id={v!r}")
    return int(v)


def _callback(api: str, v):
    if not callable(v):
        raise bad(api, f"callback must be callable (input, output, user_data), got "
                       f"callback={v!r}")
    return v


class _Fields(Handle):
    """A desc whose setters go through `RULES[field](api, value)`."""
    __slots__ = ()
    RULES: dict = {}
    prefix = ""

    def set(self, field: str, value) -> None:
        api = f"{self.prefix}{field}"
        self.live(api, self.kind.replace(" ", "_"))
        setattr(self, field, self.RULES[field](api, value))


class _ChannelDesc(_Fields):
    """A VDEC/VENC channel desc: not destroyed while its channel is open."""
    __slots__ = ()

    def destroy(self) -> None:
        kind = self.prefix.split("_")[0]
        if self.channel is not None:
            raise bad(f"{kind}_destroy_channel_desc", f"{kind}_channel_desc must not have a live "
                      f"channel ({kind}_destroy_channel first)")
        super().destroy()


def _range(lo: int, hi: int, name: str):
    return lambda api, v: checked_int(api, name, v, lo, hi)


class StreamDesc(_Fields):
    """Mirrors `acldvppStreamDesc`: a piece of an encoded video stream in device memory (VDEC's
    input, VENC's output). `ret_code` is the result the unit left (0 = ok)."""
    __slots__ = ("data", "size", "format", "timestamp", "eos", "ret_code")
    kind = "stream desc"
    prefix = "dvpp_set_stream_desc_"
    RULES = {"data": _range(0, (1 << 64) - 1, "data"), "size": _range(0, (1 << 32) - 1, "size"),
             "format": _entype, "timestamp": _range(0, (1 << 64) - 1, "timestamp"),
             "eos": _range(0, 1, "eos"), "ret_code": _range(0, (1 << 32) - 1, "ret_code")}

    def __init__(self, data: int = 0, size: int = 0, format: int = 0, timestamp: int = 0,
                 eos: int = 0):
        super().__init__()
        self.data, self.size, self.format = int(data), int(size), int(format)
        self.timestamp, self.eos, self.ret_code = int(timestamp), int(eos), 0

    def snapshot(self) -> "StreamDesc":
        return StreamDesc(self.data, self.size, self.format, self.timestamp, self.eos)

    def __repr__(self):
        return (f"<rt.dvpp.StreamDesc data=0x{self.data:x} size={self.size} format={self.format} "
                f"eos={self.eos}>")


class VdecChannelDesc(_ChannelDesc):
    """Mirrors `aclvdecChannelDesc` (and the channel `aclvdecCreateChannel` opens on it)."""
    __slots__ = ("channel_id", "thread_id", "callback", "entype", "out_pic_format",
                 "out_pic_width", "out_pic_height", "ref_frame_num", "out_mode", "bit_depth",
                 "csc_matrix", "channel")
    kind = "vdec channel desc"
    prefix = "vdec_set_channel_desc_"
    RULES = {"channel_id": _range(0, 255, "channel_id"), "thread_id": _thread,
             "callback": _callback, "entype": _entype, "out_pic_format": _vdec_out_format,
             "out_pic_width": _range(0, 4096, "out_pic_width"),
             "out_pic_height": _range(0, 4096, "out_pic_height"),
             "ref_frame_num": _range(0, 16, "ref_frame_num"), "out_mode": _range(0, 1, "out_mode"),
             "bit_depth": _range(0, 1, "bit_depth"),
             "csc_matrix": _range(0, 5, "csc_matrix")}

    def __init__(self):
        super().__init__()
        self.channel_id, self.thread_id, self.callback = 0, 0, None
        self.entype = int(StreamFormat.H265_MAIN_LEVEL)
        self.out_pic_format = int(PixelFormat.YUV_SEMIPLANAR_420)
        self.out_pic_width = self.out_pic_height = 0
        self.ref_frame_num = self.out_mode = 0
        self.bit_depth = 1                   # 10-bit: CANN's default (0 is 8-bit)
        self.csc_matrix = 0                  # ACL_DVPP_CSC_MATRIX_BT601_WIDE, CANN's default
        self.channel = None


class VdecFrameConfig(Handle):
    """Mirrors `aclvdecFrameConfig` (reserved by CANN: no fields)."""
    __slots__ = ()
    kind = "vdec frame config"


VENC_DEFAULT_BUF_SIZE = 8 << 20
VENC_MIN_BUF_SIZE = 5 << 20


class VencChannelDesc(_ChannelDesc):
    """Mirrors `aclvencChannelDesc` (and the channel `aclvencCreateChannel` opens on it).
    Defaults as CANN documents them: key frame interval 16 (ours; CANN leaves it to the
    driver), output buffer 8 MiB (>= 5 MiB when set), rc mode 0 (VBR), 30 fps, 2000 kbps."""
    __slots__ = ("thread_id", "callback", "entype", "pic_format", "pic_width", "pic_height",
                 "key_frame_interval", "buf_addr", "buf_size", "rc_mode", "src_rate",
                 "max_bit_rate", "max_ip_prop", "channel")
    kind = "venc channel desc"
    prefix = "venc_set_channel_desc_"
    RULES = {"thread_id": _thread, "callback": _callback, "entype": _entype,
             "pic_format": _pic_format, "pic_width": _range(0, 4096, "pic_width"),
             "pic_height": _range(0, 4096, "pic_height"),
             "key_frame_interval": _range(1, 65536, "key_frame_interval"),
             "buf_addr": _range(0, (1 << 64) - 1, "buf_addr"),
             "buf_size": _range(VENC_MIN_BUF_SIZE, (1 << 32) - 1, "buf_size"),
             "rc_mode": _range(0, 2, "rc_mode"), "src_rate": _range(0, 240, "src_rate"),
             "max_bit_rate": lambda api, v: _bitrate(api, v),
             "max_ip_prop": _range(1, (1 << 32) - 1, "max_ip_prop")}

    def __init__(self):
        super().__init__()
        self.thread_id, self.callback = 0, None
        self.entype = int(StreamFormat.H264_MAIN_LEVEL)
        self.pic_format = int(PixelFormat.YUV_SEMIPLANAR_420)
        self.pic_width = self.pic_height = 0
        self.key_frame_interval, self.buf_addr, self.buf_size = 16, 0, VENC_DEFAULT_BUF_SIZE
        self.rc_mode, self.src_rate, self.max_bit_rate = 0, 30, 2000
        self.max_ip_prop = 1                 # kept; x264/x265 do the rate control
        self.channel = None


#: aclvdecChannelDescParamType, in order (ACL_VDEC_CSC_MATRIX_UINT32 = 0 ..
#: ACL_VDEC_BIT_DEPTH_UINT32 = 10): the VdecChannelDesc field each one sets
VDEC_PARAM_FIELDS = ("csc_matrix", "out_mode", "thread_id", "callback", "channel_id", "entype",
                     "out_pic_format", "out_pic_width", "out_pic_height", "ref_frame_num",
                     "bit_depth")

#: aclvencChannelDescParamType, in order (ACL_VENC_THREAD_ID_UINT64 = 0 ..
#: ACL_VENC_MAX_IP_PROP_UINT32 = 12): the VencChannelDesc field each one sets
VENC_PARAM_FIELDS = ("thread_id", "callback", "pic_format", "entype", "pic_width", "pic_height",
                     "key_frame_interval", "buf_addr", "buf_size", "rc_mode", "src_rate",
                     "max_bit_rate", "max_ip_prop")


def _bitrate(api: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not (v == 0 or 2 <= v <= 614400):
        raise bad(api, f"max_bit_rate must be 0 (the default, 2000) or in [2, 614400] kbps, got "
                       f"max_bit_rate={v!r}")
    return int(v) or 2000


class VencFrameConfig(_Fields):
    """Mirrors `aclvencFrameConfig`: `force_i_frame` (this frame an IDR) and `eos` (end the
    stream: flush the encoder)."""
    __slots__ = ("force_i_frame", "eos")
    kind = "venc frame config"
    prefix = "venc_set_frame_config_"
    RULES = {"force_i_frame": _range(0, 1, "force_i_frame"), "eos": _range(0, 1, "eos")}

    def __init__(self):
        super().__init__()
        self.force_i_frame = self.eos = 0
