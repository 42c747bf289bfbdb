"""VDEC: H.264/H.265 decoding channels (`aclvdecCreateChannel`, `aclvdecSendFrame`, ...), on
PyAV (FFmpeg's decoders; the optional `video` extra). VENC is in `rt.dvpp.video_venc`.

As CANN runs a channel: creating it opens two streams of the current device, one for the
decode tasks and one for the callbacks, and subscribes the thread set with
`set thread_id` to the callback stream (`aclrtSubscribeReport`): that thread's
`process_report` loop runs the user's callback `(input_stream_desc, output_pic_desc,
user_data)` once per frame sent. Each `send_frame` checks its arguments at once (100000), then
queues a task on the device's VDEC unit that decodes the frame (one whole frame of an Annex B
elementary stream per call). Pictures come out in display order, each into the output desc sent
with the frame that carried it, and its callback is launched (blocking) on the callback stream.
A frame the decoder refuses gets its callback with the output desc's `ret_code` set (507018); a
packet without a coded slice (parameter sets only), and a frame still without a picture at the
end of the stream, get ERR_DECODE_NOPIC (0x20000). `send_frame` with
`eos=1` flushes the decoder and returns once every earlier frame's callback has returned.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import callback as _cb
from .. import device as _dev
from ..errors import AclError, ACL_ERROR_FEATURE_UNSUPPORTED
from ..stream import Stream
from . import color, ops
from . import formats as F
from . import rules as R
from .codec import ACL_ERROR_RT_AICPU_EXCEPTION
from .desc import PicDesc, check_span
from .formats import PixelFormat, bad
from .video_desc import StreamDesc, StreamFormat, VdecChannelDesc, VdecFrameConfig

VDEC_IN_MIN, VDEC_IN_MAX = (128, 128), (4096, 4096)
VDEC_OUT_MIN, VDEC_OUT_MAX = (10, 6), (4096, 4096)
VIDEO_WIDTH_ALIGN, VIDEO_HEIGHT_ALIGN = 16, 2
VIDEO_MIN_WIDTH_STRIDE = 32               # a width under 16 takes a multiple of 32
ERR_DECODE_NOPIC = 0x20000                # no picture for this frame (CANN's VDEC result code)

_lock = threading.Lock()
_vdec_ids: dict = {}                      # (device, channel_id) -> live VdecChannel


def load_av(api: str):
    """PyAV, or 200006 saying how to get it."""
    try:
        import av
    except ImportError:
        raise AclError(ACL_ERROR_FEATURE_UNSUPPORTED,
                       f"{api}: VDEC/VENC need PyAV (FFmpeg's codecs): pip install "
                       f"'ascend-emu[video]', got no module named 'av'") from None
    return av


def codec_of(entype: int) -> str:
    return "hevc" if entype == StreamFormat.H265_MAIN_LEVEL else "h264"


class CallbackStreams:
    """The two streams of a video channel and the callback thread's subscription."""

    def __init__(self, thread_id: int, callback):
        self.stream, self.cb_stream = Stream(), Stream()      # on the current device
        self.thread_id, self.callback = thread_id, callback
        try:
            _cb.subscribe_report(thread_id, self.cb_stream)
        except AclError:
            self.stream.destroy()
            self.cb_stream.destroy()
            raise

    def launch(self, *args, after=None) -> None:
        """Queue the user's callback(*args) on the callback stream (blocking, as CANN's)."""
        def call(data):
            try:
                self.callback(*data)
            finally:
                if after is not None:
                    after()
        _cb.launch_callback(call, args, _cb.ACL_CALLBACK_BLOCK, self.cb_stream)

    def drain(self) -> None:
        """Wait for the queued work, then for every callback it launched to return."""
        self.stream.synchronize(api="send_frame")
        self.cb_stream.synchronize(api="send_frame")

    def close(self) -> None:
        try:
            self.drain()
        finally:
            _cb.unsubscribe_report(self.thread_id, self.cb_stream)
            self.stream.destroy()
            self.cb_stream.destroy()


def check_out_format(api: str, role: str, fmt: int, rules: R.DvppRules) -> None:
    """NV12 / NV21 everywhere; packed RGB888 / BGR888 where the SoC family's VDEC has it."""
    if fmt in F.YUV420SP or (fmt in F.PACKED_RGB and rules.vdec_rgb_out):
        return
    if fmt in F.PACKED_RGB:
        raise bad(api, f"{role} must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1) or "
                       f"PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2) on {rules.products} "
                       f"({rules.family}: no RGB output), got {F.fmt_name(fmt)}")
    raise bad(api, f"{role} must be PIXEL_FORMAT_YUV_SEMIPLANAR_420 (1), "
                   f"PIXEL_FORMAT_YVU_SEMIPLANAR_420 (2), PIXEL_FORMAT_RGB_888 (12) or "
                   f"PIXEL_FORMAT_BGR_888 (13), got {F.fmt_name(fmt)}")


def check_video_out(api: str, o: PicDesc, rules: R.DvppRules) -> None:
    """VDEC's output desc: NV12/NV21 (RGB888/BGR888 where the SoC has it); width, height and
    both strides all set or all 0."""
    check_out_format(api, "output format", o.format, rules)
    dims = (o.width, o.height, o.width_stride, o.height_stride)
    if any(dims) and not all(dims):
        raise bad(api, f"output width, height, width_stride and height_stride must be set "
                       f"together or all left 0 (the stream's size), got {o.width}x{o.height} "
                       f"strides {o.width_stride}x{o.height_stride}")
    if all(dims):
        check_video_dims(api, o.width, o.height, o.width_stride, o.height_stride, o.format,
                         o.size)
    if o.size <= 0:
        raise bad(api, "output size must be > 0 (the output buffer's bytes), got size=0")
    check_span(api, "output data", o.data, o.size)


def check_video_dims(api: str, w: int, h: int, ws: int, hs: int, fmt: int, size: int) -> None:
    F.check_resolution(api, "output picture", w, h, VDEC_OUT_MIN, VDEC_OUT_MAX)
    if w % 2 or h % 2:
        raise bad(api, f"output width and height must be even, got {w}x{h}")
    F.check_strides(api, "output", fmt, w, h, ws, hs, VIDEO_WIDTH_ALIGN, VIDEO_HEIGHT_ALIGN)
    if w < 16 and ws % VIDEO_MIN_WIDTH_STRIDE:
        raise bad(api, f"output width_stride must be a multiple of {VIDEO_MIN_WIDTH_STRIDE} for "
                       f"a width under 16, got width_stride={ws} (width={w})")
    F.check_size(api, "output", fmt, ws, hs, size)


def has_picture(raw: bytes, hevc: bool) -> bool:
    """Whether an Annex B packet holds a coded slice (VCL NAL unit), not only parameter sets,
    SEI or delimiters."""
    k = raw.find(b"\0\0\1")
    while 0 <= k < len(raw) - 3:
        head = raw[k + 3]
        if ((head >> 1) & 0x3F) < 32 if hevc else 1 <= (head & 0x1F) <= 5:
            return True
        k = raw.find(b"\0\0\1", k + 3)
    return False


def default_strides(w: int, h: int, fmt: int = PixelFormat.YUV_SEMIPLANAR_420) -> tuple[int, int]:
    """The strides VDEC gives a picture of the stream's size (>= 128 wide); packed RGB: bytes,
    align(w * 3, 16)."""
    row = w * 3 if fmt in F.PACKED_RGB else w
    return F.align_up(row, VIDEO_WIDTH_ALIGN), F.align_up(h, VIDEO_HEIGHT_ALIGN)


def check_new_channel(desc, desc_cls, kind: str, api: str) -> None:
    """A channel desc ready for `<kind>_create_channel`: live, no channel yet, its callback
    thread and callback set."""
    if not isinstance(desc, desc_cls):
        raise bad(api, f"{kind}_channel_desc must be a {kind} channel desc, got {desc!r}")
    desc.live(api, f"{kind}_channel_desc")
    if desc.channel is not None:
        raise bad(api, f"{kind}_channel_desc must not have a channel yet, got one created")
    if not desc.thread_id or desc.callback is None:
        raise bad(api, f"{kind}_channel_desc thread_id and callback must be set "
                       f"({kind}_set_channel_desc_thread_id / _callback), got "
                       f"thread_id={desc.thread_id}, callback={desc.callback!r}")


class VdecChannel:
    """The channel `aclvdecCreateChannel` opens on a VdecChannelDesc (its settings are read
    at creation)."""

    def __init__(self, desc: VdecChannelDesc):
        api = "vdec_create_channel"
        check_new_channel(desc, VdecChannelDesc, "vdec", api)
        self.av = load_av(api)
        self.device = _dev.current_device()
        self.rules = R.for_device(self.device)
        check_out_format(api, "vdec_channel_desc out_pic_format", desc.out_pic_format,
                         self.rules)
        if desc.bit_depth != 1 and not self.rules.vdec_bit_depth_settable:
            raise bad(api, f"vdec_channel_desc bit_depth must be 1 (10-bit, the default) on "
                           f"{self.rules.products} ({self.rules.family}: not user-settable), "
                           f"got bit_depth={desc.bit_depth}")
        self.key = (self.device, desc.channel_id)
        with _lock:
            if self.key in _vdec_ids:
                raise bad(api, f"channel_id must differ from the device's live VDEC channels', "
                               f"got channel_id={desc.channel_id} in use")
            _vdec_ids[self.key] = self
        try:
            self.streams = CallbackStreams(desc.thread_id, desc.callback)
        except AclError:
            with _lock:
                _vdec_ids.pop(self.key, None)
            raise
        self.desc, self.entype, self.out_format = desc, desc.entype, desc.out_pic_format
        self.csc, self.bit_depth = desc.csc_matrix, desc.bit_depth
        self.pending: dict = {}               # send number -> frame waiting for its picture
        self.seq = 0
        self.ctx = self._decoder()
        self.closed = False
        desc.channel = self

    def _decoder(self):
        ctx = self.av.CodecContext.create(codec_of(self.entype), "r")
        ctx.thread_count = 1                  # no frame-threading delay: one frame in, one out
        return ctx

    def live(self, api: str) -> "VdecChannel":
        if self.closed:
            raise bad(api, "vdec_channel_desc must have a live channel, got one destroyed")
        return self

    # -- sending -----------------------------------------------------------------------------------
    def send_frame(self, input: StreamDesc, output, config=None, user_data=None,
                   skip: bool = False) -> None:
        api = "vdec_send_skipped_frame" if skip else "vdec_send_frame"
        self.live(api)
        if not isinstance(input, StreamDesc):
            raise bad(api, f"input must be a stream desc (dvpp_create_stream_desc), got "
                           f"input={input!r}")
        input.live(api, "input")
        if config is not None and not isinstance(config, VdecFrameConfig):
            raise bad(api, f"config must be a vdec frame config or None, got config={config!r}")
        s = input.snapshot()
        if s.eos:
            self._flush(api)
            self.streams.drain()
            return
        if s.size <= 0 or s.data <= 0:
            raise bad(api, f"input must hold one frame (an empty packet needs eos=1), got "
                           f"data=0x{s.data:x} size={s.size} eos=0")
        check_span(api, "input data", s.data, s.size)
        o = None
        if not skip:
            if not isinstance(output, PicDesc):
                raise bad(api, f"output must be a pic desc (dvpp_create_pic_desc), got "
                               f"output={output!r}")
            output.live(api, "output")
            o = output.snapshot()
            if "format" not in o.explicit:
                o.format = self.out_format      # unset on the desc: the channel's format
            check_video_out(api, o, self.rules)
        entry = (input, output if not skip else None, o, user_data)
        av, hevc = self.av, self.entype == StreamFormat.H265_MAIN_LEVEL

        def run():
            raw = ops.device_bytes(s.data, s.size, api).tobytes()
            seq, self.seq = self.seq, self.seq + 1
            self.pending[seq] = entry
            packet = av.Packet(raw)
            packet.pts = seq                    # the picture carries it out: its own desc
            slice_in = has_picture(raw, hevc)
            try:
                frames = self.ctx.decode(packet)
            except av.FFmpegError:              # FFmpeg also complains of a packet without one
                frames = []
                if slice_in:
                    self._deliver(self.pending.pop(seq), None, ACL_ERROR_RT_AICPU_EXCEPTION)
            self._pictures(frames)
            if seq in self.pending and not slice_in:
                self._deliver(self.pending.pop(seq), None, ERR_DECODE_NOPIC)

        ops.submit(self.streams.stream, self, "VDEC", api, "vdec_decode", run, [s.data],
                    [o.data] if o is not None else [], s.size,
                    {"channel_id": self.desc.channel_id})

    def _pictures(self, frames) -> None:
        """Each decoded picture (display order) into the desc of the frame that carried it."""
        for fr in frames:
            key = fr.pts if fr.pts in self.pending else next(iter(self.pending), None)
            if key is not None:
                self._deliver(self.pending.pop(key), fr)

    def _flush(self, api: str) -> None:
        def run():
            try:
                frames = self.ctx.decode(None)
            except self.av.FFmpegError:
                frames = []
            self._pictures(frames)
            for seq in list(self.pending):
                self._deliver(self.pending.pop(seq), None, ERR_DECODE_NOPIC)
            self.ctx = self._decoder()            # the channel takes a new stream after EOS

        ops.submit(self.streams.stream, self, "VDEC", api, "vdec_eos", run, [], [], 0,
                    {"channel_id": self.desc.channel_id, "eos": 1})

    def _deliver(self, entry, frame, code: int = 0) -> None:
        """Write `frame` into the entry's output desc and launch its callback."""
        inp, out, o, user = entry
        if frame is not None and o is not None:
            try:
                self._write(o, frame, out)
            except AclError as e:
                code = e.code
        if out is not None:
            out.ret_code = code
        inp.ret_code = code
        self.streams.launch(inp, out, user)

    def _write(self, o: PicDesc, frame, live: PicDesc) -> None:
        api = "vdec_send_frame"
        w, h = frame.width & ~1, frame.height & ~1
        F.check_resolution(api, "video stream", frame.width, frame.height, VDEC_IN_MIN,
                           VDEC_IN_MAX)
        nv = self._nv12(frame)
        fh = frame.height
        y, uv = nv[:h, :w], nv[fh:fh + h // 2, :w]
        if o.width:
            ow, oh, ws, hs = o.width, o.height, o.width_stride, o.height_stride
        else:
            ow, oh = w, h
            ws, hs = default_strides(w, h, o.format)
            check_video_dims(api, ow, oh, ws, hs, o.format, o.size)
        if (ow, oh) != (w, h):                   # VDEC's own VPC scales to the asked size
            F.check_resolution(api, "output picture", ow, oh, VDEC_OUT_MIN, VDEC_OUT_MAX)
            y, uv = color.scale_yuv420sp(y, uv, ow, oh)
        buf = ops.device_bytes(o.data, o.size, api)
        if o.format in F.PACKED_RGB:             # VDEC's CSC after its VPC (rt.dvpp.color)
            rgb = color.yuv420sp_to_rgb(y, uv, self.csc)
            color.write_packed(buf, ws, hs, rgb if o.format == PixelFormat.RGB_888 else
                               rgb[..., ::-1])
        else:
            if o.format == PixelFormat.YVU_SEMIPLANAR_420:
                uv = color.swap_uv(uv)
            color.write_yuv420sp(buf, ws, hs, y, uv)
        live.width, live.height, live.width_stride, live.height_stride = ow, oh, ws, hs
        live.format = int(o.format)

    def _nv12(self, frame):
        """The decoded picture as 8-bit NV12 rows (Y, then interleaved UV). A 10-bit picture
        (H.265 Main10) keeps each sample's 8 high bits; an 8-bit channel (bit_depth 0) fails it
        as an undecodable frame."""
        if frame.format.name != "yuv420p10le":
            return frame.to_ndarray(format="nv12")
        if self.bit_depth == 0:
            raise AclError(ACL_ERROR_RT_AICPU_EXCEPTION,
                           "vdec_send_frame: a 10-bit stream must go to a channel with "
                           "bit_depth 1 (10-bit), got bit_depth=0")
        y, u, v = ((np.frombuffer(p, np.uint16).reshape(p.height, p.line_size // 2)
                    [:, :p.width] >> 2).astype(np.uint8) for p in frame.planes)
        nv = np.zeros((y.shape[0] + u.shape[0], 2 * u.shape[1]), np.uint8)
        nv[:y.shape[0], :y.shape[1]] = y
        nv[y.shape[0]:, 0::2], nv[y.shape[0]:, 1::2] = u, v
        return nv

    def close(self) -> None:
        """`aclvdecDestroyChannel`: wait for the queued frames and their callbacks, then close."""
        api = "vdec_destroy_channel"
        self.live(api)
        self.closed = True
        try:
            self.streams.close()
        finally:
            with _lock:
                _vdec_ids.pop(self.key, None)
            self.desc.channel = None


def live_channel(desc, desc_cls, kind: str, api: str):
    """The live channel of a VDEC/VENC channel desc (`kind` "vdec" / "venc"), or 100000."""
    if not isinstance(desc, desc_cls):
        raise bad(api, f"{kind}_channel_desc must be a {kind} channel desc, got {desc!r}")
    desc.live(api, f"{kind}_channel_desc")
    if desc.channel is None:
        raise bad(api, f"{kind}_channel_desc must have a channel ({kind}_create_channel), got "
                       f"none")
    return desc.channel.live(api)
