"""VENC: H.264/H.265 encoding channels (`aclvencCreateChannel`, `aclvencSendFrame`, ...), on
PyAV's libx264 / libx265.

Run as CANN runs it (see `rt.dvpp.video` for the two streams and the subscribed callback
thread): `send_frame` checks the NV12/NV21 input picture at once (100000) and queues a task on
the device's VENC unit, which encodes it and hands the packet (Annex B NAL units; the first
carries the parameter sets) to the callback `(input_pic_desc, output_stream_desc, user_data)`.
The output stream desc points into the channel's output buffer (`buf_size` bytes, 8 MiB by
default, or the caller's `buf_addr`), valid until the callback returns; the buffer is a ring,
so a slow callback thread holds the encoder back as the hardware's would. Frames are I or P
(DVPP's VENC makes no B frames): an IDR every `key_frame_interval` frames and wherever the
frame config forces one. A frame config with `eos=1` flushes and returns once every callback
has returned.

VENC exists on the Atlas inference series (Ascend310P*) and Atlas 200I/500 A2, not on the
Atlas A2 training/inference series (Ascend910B*), where creating a channel returns 200006.
"""
from __future__ import annotations

import collections
import threading
from fractions import Fraction

import numpy as np

from .. import device as _dev
from ..errors import AclError, ACL_ERROR_FEATURE_UNSUPPORTED
from . import color, ops
from . import formats as F
from .codec import ACL_ERROR_RT_AICPU_EXCEPTION
from .desc import PicDesc, check_span, free as _dvpp_free, malloc as _dvpp_malloc
from .formats import PixelFormat, bad
from .video import CallbackStreams, VIDEO_WIDTH_ALIGN, check_new_channel, load_av
from .video_desc import StreamDesc, StreamFormat, VencChannelDesc, VencFrameConfig

VENC_MIN, VENC_MAX = (128, 128), (4096, 4096)
VENC_H264_MAX_AREA = 4096 * 2304
_PROFILES = {StreamFormat.H264_BASELINE_LEVEL: "baseline", StreamFormat.H264_MAIN_LEVEL: "main",
             StreamFormat.H264_HIGH_LEVEL: "high"}


class OutputRing:
    """The channel's output buffer, handed out in order and given back (in order) once each
    packet's callback has returned; `take` waits while the buffer is full."""

    def __init__(self, addr: int, size: int):
        self.addr, self.size = int(addr), size
        self.held: collections.deque = collections.deque()     # (start, end) in use
        self.cv = threading.Condition()

    def _fit(self, n: int):
        if not self.held:
            return 0
        head, tail = self.held[0][0], self.held[-1][1]
        if tail > head:                          # in use: [head, tail), no wrap yet
            if tail + n <= self.size:
                return tail
            return 0 if n <= head else None
        return tail if tail + n <= head else None

    def take(self, n: int) -> int:
        with self.cv:
            while (pos := self._fit(n)) is None:
                self.cv.wait()
            self.held.append((pos, pos + n))
            return self.addr + pos

    def give_back(self) -> None:
        with self.cv:
            self.held.popleft()
            self.cv.notify_all()


class VencChannel:
    """The channel `aclvencCreateChannel` opens on a VencChannelDesc."""

    def __init__(self, desc: VencChannelDesc):
        api = "venc_create_channel"
        soc = _dev.get_soc_name()
        if soc.startswith("Ascend910"):
            raise AclError(ACL_ERROR_FEATURE_UNSUPPORTED,
                           f"{api}: VENC must run on an SoC that has it (Atlas inference series "
                           f"Ascend310P*, Atlas 200I/500 A2), got {soc} (ASCEND_EMU_SOC)")
        check_new_channel(desc, VencChannelDesc, "venc", api)
        w, h = desc.pic_width, desc.pic_height
        F.check_resolution(api, "venc_channel_desc picture", w, h, VENC_MIN, VENC_MAX)
        if w % 2 or h % 2:
            raise bad(api, f"venc_channel_desc pic_width and pic_height must be even, got {w}x{h}")
        if desc.entype != StreamFormat.H265_MAIN_LEVEL and w * h > VENC_H264_MAX_AREA:
            raise bad(api, f"venc_channel_desc picture must be at most 4096*2304 pixels for "
                           f"H.264, got {w}x{h}")
        self.av = load_av(api)
        self.desc, self.w, self.h, self.format = desc, w, h, desc.pic_format
        self.device = _dev.current_device()
        self.own_buf = None
        if desc.buf_addr:
            check_span(api, "venc_channel_desc buf_addr", desc.buf_addr, desc.buf_size)
            buf = desc.buf_addr
        else:
            buf = self.own_buf = _dvpp_malloc(desc.buf_size)
        self.ring = OutputRing(buf, desc.buf_size)
        try:
            self.streams = CallbackStreams(desc.thread_id, desc.callback)
        except AclError:
            if self.own_buf is not None:
                _dvpp_free(self.own_buf)
            raise
        self.ctx = self._encoder()
        self.pending: collections.deque = collections.deque()
        self.pts, self.closed = 0, False
        desc.channel = self

    def _encoder(self):
        d = self.desc
        fps = d.src_rate or 30
        kbps = d.max_bit_rate
        # VBR (rc_mode 0, 1): the rate capped at max_bit_rate; CBR (2): held there
        rate = f"bitrate={kbps}:vbv-maxrate={kbps}:vbv-bufsize={kbps}"
        if d.entype == StreamFormat.H265_MAIN_LEVEL:
            ctx = self.av.CodecContext.create("libx265", "w")
            params = (f"log-level=error:bframes=0:open-gop=0:keyint={d.key_frame_interval}:"
                      f"{rate}{':strict-cbr=1' if d.rc_mode == 2 else ''}")    # IDRs, no CRAs
            opts = {"preset": "ultrafast", "tune": "zerolatency", "x265-params": params}
        else:
            ctx = self.av.CodecContext.create("libx264", "w")
            params = f"{rate}{':nal-hrd=cbr' if d.rc_mode == 2 else ''}"
            opts = {"preset": "veryfast", "tune": "zerolatency", "x264-params": params,
                    "profile": _PROFILES[StreamFormat(d.entype)]}
        ctx.width, ctx.height, ctx.pix_fmt = self.w, self.h, "yuv420p"
        ctx.time_base, ctx.framerate = Fraction(1, fps), Fraction(fps, 1)
        ctx.gop_size, ctx.max_b_frames = d.key_frame_interval, 0
        ctx.bit_rate = kbps * 1000
        ctx.thread_count = 1
        ctx.options = opts
        return ctx

    def live(self, api: str) -> "VencChannel":
        if self.closed:
            raise bad(api, "venc_channel_desc must have a live channel, got one destroyed")
        return self

    def send_frame(self, input, config=None, user_data=None) -> None:
        api = "venc_send_frame"
        self.live(api)
        if config is not None and not isinstance(config, VencFrameConfig):
            raise bad(api, f"config must be a venc frame config or None, got config={config!r}")
        force_i = bool(config is not None and config.live(api, "config").force_i_frame)
        if config is not None and config.eos:
            self._flush(api)
            self.streams.drain()
            return
        if not isinstance(input, PicDesc):
            raise bad(api, f"input must be a pic desc (dvpp_create_pic_desc), got input={input!r}")
        input.live(api, "input")
        i = input.snapshot()
        i.format = self.format                   # the channel's format counts, not the desc's
        if (i.width, i.height, i.width_stride) == (0, 0, 0):
            # a desc with data and size only (Ascend/samples' venc_image sends that): the
            # channel's picture, width stride align(width, 16)
            i.width, i.height = self.w, self.h
            i.width_stride = F.align_up(self.w, VIDEO_WIDTH_ALIGN)
        if (i.width, i.height) != (self.w, self.h):
            raise bad(api, f"input width and height must be the channel's {self.w}x{self.h}, got "
                           f"{i.width}x{i.height}")
        ws = i.width_stride
        if ws % VIDEO_WIDTH_ALIGN or ws < i.width:
            raise bad(api, f"input width_stride must be a multiple of {VIDEO_WIDTH_ALIGN} and >= "
                           f"width={i.width}, got width_stride={ws}")
        need = ws * i.height * 3 // 2            # VENC: no height stride, UV right after Y
        if i.size < need or i.data <= 0:
            raise bad(api, f"input size must be >= width_stride * height * 3 / 2 = {need} (and "
                           f"data set), got size={i.size}, data=0x{i.data:x}")
        check_span(api, "input data", i.data, i.size)
        entry = (input, user_data)
        av, w, h = self.av, self.w, self.h

        def run():
            buf = ops.device_bytes(i.data, need, api)
            frame_bytes = buf.reshape(h * 3 // 2, ws)[:, :w]
            y, uv = frame_bytes[:h], frame_bytes[h:]
            if self.format == PixelFormat.YVU_SEMIPLANAR_420:
                uv = color.swap_uv(uv)
            planar = np.concatenate([y.reshape(-1), uv[:, 0::2].reshape(-1),
                                     uv[:, 1::2].reshape(-1)]).reshape(h * 3 // 2, w)
            frame = av.VideoFrame.from_ndarray(planar, format="yuv420p")
            frame.pts = self.pts
            self.pts += 1
            if force_i:
                frame.pict_type = av.video.frame.PictureType.I
            self.pending.append(entry)
            try:
                packets = self.ctx.encode(frame)
            except av.FFmpegError:
                self.pending.remove(entry)
                self._deliver(entry, None, ACL_ERROR_RT_AICPU_EXCEPTION)
                return
            for p in packets:
                self._deliver(self.pending.popleft(), p)

        ops.submit(self.streams.stream, self, "VENC", api, "venc_encode", run, [i.data], [],
                    need, {"force_i_frame": int(force_i)})

    def _flush(self, api: str) -> None:
        def run():
            try:
                packets = self.ctx.encode(None)
            except self.av.FFmpegError:
                packets = []
            for p in packets:
                if self.pending:
                    self._deliver(self.pending.popleft(), p)
            while self.pending:
                self._deliver(self.pending.popleft(), None, ACL_ERROR_RT_AICPU_EXCEPTION)
            self.ctx, self.pts = self._encoder(), 0     # a new stream may follow

        ops.submit(self.streams.stream, self, "VENC", api, "venc_eos", run, [], [], 0,
                    {"eos": 1})

    def _deliver(self, entry, packet, code: int = 0) -> None:
        inp, user = entry
        out = StreamDesc(format=self.desc.entype)
        after = None
        if packet is not None:
            data = bytes(packet)
            if len(data) > self.ring.size:
                code = ACL_ERROR_RT_AICPU_EXCEPTION
            else:
                addr = self.ring.take(len(data))
                dst = ops.device_bytes(addr, len(data), "venc_send_frame")
                dst[:] = np.frombuffer(data, np.uint8)
                out.data, out.size = addr, len(data)
                out.timestamp = int(packet.pts or 0)
                after = self.ring.give_back
        out.ret_code = code
        self.streams.launch(inp, out, user, after=after)

    def close(self) -> None:
        """`aclvencDestroyChannel`: wait for the queued frames and their callbacks, then close."""
        self.live("venc_destroy_channel")
        self.closed = True
        try:
            self.streams.close()
        finally:
            if self.own_buf is not None:
                _dvpp_free(self.own_buf)
            self.desc.channel = None
