"""DVPP's pixel formats and the rules common to every SoC: resolutions, buffer sizes, checks.

Values of `acldvppPixelFormat`, `acldvppJpegFormat` and `acldvppChannelMode` as in CANN's
`acl/ops/acl_dvpp.h`. What differs between CANN's product lines (stride alignments and ranges,
ROI parity, paste alignment, the VPC output and JPEGE input maxima, JPEGD's width stride) is in
`rt.dvpp.rules`, one row per SoC family; what is here holds on all of them:

- JPEGD: input 32x32 .. 8192x8192, Huffman baseline only (no progressive, no arithmetic
  coding); output YUV420SP height stride a multiple of 16, size >= ws * hs * 3 / 2.
  `predict_dec_size` answers for the widest width stride (128-aligned), so it is enough on
  every SoC.
- PNGD output RGB888 / RGBA8888: width stride (bytes) = align(width, 128) * 3 (or * 4), height
  stride a multiple of 16. Input 32x32 .. 4096x4096.
- VPC: YUV420SP height stride a multiple of 2 >= height, size >= ws * hs * 3 / 2; packed
  RGB888/BGR888 size >= ws * hs. Input 10x6 .. 4096x4096 (8192 for YUV420SP); output at least
  10x6; scale within [1/32, 16].
- JPEGE input YUV420SP: width stride a multiple of 16 >= width, height stride a multiple of 2
  >= height; at least 32x32.
"""
from __future__ import annotations

import enum

from ..errors import AclError, ACL_ERROR_INVALID_PARAM


class PixelFormat(enum.IntEnum):
    """Mirrors `acldvppPixelFormat` (the values the emulator knows)."""
    YUV_400 = 0
    YUV_SEMIPLANAR_420 = 1          # NV12
    YVU_SEMIPLANAR_420 = 2          # NV21
    YUV_SEMIPLANAR_422 = 3
    YVU_SEMIPLANAR_422 = 4
    YUV_SEMIPLANAR_444 = 5
    YVU_SEMIPLANAR_444 = 6
    YUYV_PACKED_422 = 7
    UYVY_PACKED_422 = 8
    YVYU_PACKED_422 = 9
    VYUY_PACKED_422 = 10
    YUV_PACKED_444 = 11
    RGB_888 = 12
    BGR_888 = 13
    ARGB_8888 = 14
    ABGR_8888 = 15
    RGBA_8888 = 16
    BGRA_8888 = 17
    UNKNOWN = 10000


class JpegFormat(enum.IntEnum):
    """Mirrors `acldvppJpegFormat` (the chroma layout of a JPEG's frame)."""
    CSS_444 = 0
    CSS_422 = 1
    CSS_420 = 2
    CSS_GRAY = 3
    CSS_440 = 4
    CSS_411 = 5
    CSS_UNKNOWN = 1000


class ChannelMode(enum.IntFlag):
    """Mirrors `acldvppChannelMode` (0, the default, allows every unit)."""
    VPC = 1
    JPEGD = 2
    JPEGE = 4
    PNGD = 8


YUV420SP = (PixelFormat.YUV_SEMIPLANAR_420, PixelFormat.YVU_SEMIPLANAR_420)
PACKED_RGB = (PixelFormat.RGB_888, PixelFormat.BGR_888)
VPC_FORMATS = YUV420SP + PACKED_RGB

# resolutions (width, height) per unit: (min, max)
JPEGD_MIN, JPEGD_MAX = (32, 32), (8192, 8192)
PNGD_MIN, PNGD_MAX = (32, 32), (4096, 4096)
JPEGE_MIN = (32, 32)
VPC_IN_MIN, VPC_IN_MAX, VPC_IN_MAX_YUV = (10, 6), (4096, 4096), (8192, 8192)
VPC_OUT_MIN = (10, 6)
VPC_SCALE_MIN, VPC_SCALE_MAX = 1 / 32, 16
MAX_BATCH_ROIS = 256

JPEGD_HEIGHT_ALIGN = 16
JPEGD_PREDICT_WIDTH_ALIGN = 128       # predict_dec_size answers for the widest (310) stride
PNGD_WIDTH_ALIGN, PNGD_HEIGHT_ALIGN = 128, 16
VPC_HEIGHT_ALIGN = 2
JPEGE_WIDTH_ALIGN, JPEGE_HEIGHT_ALIGN = 16, 2


def align_up(x: int, a: int) -> int:
    return (int(x) + a - 1) // a * a


def fmt_name(fmt: int) -> str:
    try:
        return f"PIXEL_FORMAT_{PixelFormat(fmt).name}"
    except ValueError:
        return str(fmt)


def bad(api: str, msg: str) -> AclError:
    """The AclError (100000 ACL_ERROR_INVALID_PARAM) of a broken DVPP rule."""
    return AclError(ACL_ERROR_INVALID_PARAM, f"{api}: {msg}")


def yuv420sp_size(width_stride: int, height_stride: int) -> int:
    return width_stride * height_stride * 3 // 2


def frame_size(fmt: int, width_stride: int, height_stride: int) -> int:
    """Bytes a picture of `fmt` occupies with these strides (packed formats: stride in bytes)."""
    if fmt in YUV420SP:
        return yuv420sp_size(width_stride, height_stride)
    return width_stride * height_stride


def check_resolution(api: str, what: str, w: int, h: int, lo, hi) -> None:
    if not (lo[0] <= w <= hi[0] and lo[1] <= h <= hi[1]):
        raise bad(api, f"{what} resolution must be within {lo[0]}x{lo[1]} .. {hi[0]}x{hi[1]}, "
                       f"got {w}x{h}")


def check_strides(api: str, what: str, fmt: int, w: int, h: int, ws: int, hs: int,
                  walign: int, halign: int, ws_range=None, hs_range=None) -> None:
    """Width/height strides of a picture: multiples of the unit's alignment (1: any value),
    large enough, and inside the SoC's (min, max) ranges when given (max None: no limit)."""
    row = w * 3 if fmt in PACKED_RGB else (w * 4 if fmt == PixelFormat.RGBA_8888 else w)
    unit = " bytes (width * 3)" if fmt in PACKED_RGB else ""
    mult = f"a multiple of {walign} and " if walign > 1 else ""
    if ws <= 0 or ws % walign or ws < row:
        raise bad(api, f"{what} width_stride must be {mult}>= {row}{unit} "
                       f"for {fmt_name(fmt)}, got width_stride={ws} (width={w})")
    hmult = f"a multiple of {halign} and " if halign > 1 else ""
    if hs <= 0 or hs % halign or hs < h:
        raise bad(api, f"{what} height_stride must be {hmult}>= height={h}, "
                       f"got height_stride={hs}")
    for name, v, rng in (("width_stride", ws, ws_range), ("height_stride", hs, hs_range)):
        if rng and (v < rng[0] or (rng[1] is not None and v > rng[1])):
            span = f"{rng[0]} .. {rng[1]}" if rng[1] is not None else f">= {rng[0]}"
            raise bad(api, f"{what} {name} must be within {span} on this SoC, got {name}={v}")


def check_size(api: str, what: str, fmt: int, ws: int, hs: int, size: int) -> None:
    need = frame_size(fmt, ws, hs)
    if size < need:
        formula = "width_stride * height_stride * 3 / 2" if fmt in YUV420SP else \
            "width_stride * height_stride"
        raise bad(api, f"{what} size must be >= {formula} = {ws} * {hs}"
                       f"{' * 3 / 2' if fmt in YUV420SP else ''} = {need} for {fmt_name(fmt)}, "
                       f"got size={size}")
