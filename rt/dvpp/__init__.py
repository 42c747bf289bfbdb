"""rt.dvpp: the emulated DVPP (Digital Vision Pre-Processing) of each device (docs/dvpp.md).

JPEG/PNG decoding (JPEGD, PNGD, on Pillow), VPC resize / crop / crop-and-paste / batch crop (and
batch crop-and-paste), JPEG encoding (JPEGE), and H.264/H.265 video decoding and encoding (VDEC,
VENC, on PyAV), as asynchronous tasks of kind "dvpp" on streams, with DVPP's rules on
strides, alignments, resolutions and buffer sizes checked with CANN's error codes. `acl.media`
(`rt/acl/media.py`) is the pyACL facade over this package.

    ch = rt.dvpp.ChannelDesc(); ch.create()
    out = rt.dvpp.PicDesc(data=rt.dvpp.malloc(n), size=n, format=1)    # NV12
    rt.dvpp.jpeg_decode_async(ch, jpeg_dev_ptr, jpeg_size, out, stream)
"""
from .formats import (PixelFormat, JpegFormat, ChannelMode, align_up, yuv420sp_size,
                      frame_size)
from .desc import (malloc, free, PicDesc, BatchPicDesc, ChannelDesc, ResizeConfig, RoiConfig,
                   JpegeConfig)
from .ops import (jpeg_get_image_info, jpeg_get_image_info_v2, jpeg_predict_dec_size,
                  jpeg_decode_async, png_get_image_info, png_predict_dec_size, png_decode_async,
                  vpc_resize_async, vpc_crop_async, vpc_crop_and_paste_async,
                  jpeg_predict_enc_size, jpeg_encode_async)
from .vpc_batch import vpc_batch_crop_async, vpc_batch_crop_and_paste_async
from .video_desc import (StreamFormat, StreamDesc, VdecChannelDesc, VdecFrameConfig,
                         VencChannelDesc, VencFrameConfig)
from .video import VdecChannel
from .video_venc import VencChannel
from .color import rgb_to_yuv420sp, scale_plane
from .engine import UNITS, utilization, chrome_trace, export_chrome_trace
from .codec import ACL_ERROR_RT_AICPU_EXCEPTION
from . import aipp as aipp          # AIPP's numpy arithmetic (the AI CPU `Aipp` model op)

__all__ = [
    "PixelFormat", "JpegFormat", "ChannelMode", "align_up", "yuv420sp_size", "frame_size",
    "malloc", "free", "PicDesc", "BatchPicDesc", "ChannelDesc", "ResizeConfig", "RoiConfig",
    "JpegeConfig", "jpeg_get_image_info", "jpeg_get_image_info_v2", "jpeg_predict_dec_size",
    "jpeg_decode_async", "png_get_image_info", "png_predict_dec_size", "png_decode_async",
    "vpc_resize_async", "vpc_crop_async", "vpc_crop_and_paste_async", "vpc_batch_crop_async",
    "vpc_batch_crop_and_paste_async", "StreamFormat", "StreamDesc", "VdecChannelDesc",
    "VdecFrameConfig", "VencChannelDesc", "VencFrameConfig", "VdecChannel", "VencChannel",
    "jpeg_predict_enc_size", "jpeg_encode_async", "rgb_to_yuv420sp", "scale_plane", "UNITS",
    "utilization", "chrome_trace", "export_chrome_trace", "ACL_ERROR_RT_AICPU_EXCEPTION", "aipp",
]
