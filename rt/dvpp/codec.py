"""JPEG/PNG coding for the emulated DVPP, on Pillow (libjpeg / zlib); no hand-written codec.

What is ours is only the checks DVPP makes around the decoder: the stream must be a JPEG (or PNG),
JPEGD takes Huffman-coded sequential JPEGs only (baseline or extended, SOF0/SOF1: no progressive,
no arithmetic coding, no lossless), YCbCr or grayscale (no CMYK), and truncated or corrupt data is
an error (never a partly decoded picture). Header facts (size, components, chroma layout) come
from a marker walk to the first SOF and from Pillow's parser; the resolution rules are checked on
the header before a pixel is decoded (a small file may claim a huge picture).
"""
from __future__ import annotations

import io

import numpy as np

# The code of a DVPP task that failed on its data: DVPP V1 work runs as AI CPU tasks driving the
# units, so a failed decode reports an AI CPU exception (rt_error_codes.h).
from ..errors import AclError, ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_RT_AICPU_EXCEPTION
from .formats import JpegFormat, bad, check_resolution

_SOF_KINDS = {0xC0: "baseline", 0xC1: "extended sequential", 0xC2: "progressive",
              0xC3: "lossless", 0xC5: "differential sequential", 0xC6: "differential progressive",
              0xC7: "differential lossless", 0xC9: "arithmetic sequential",
              0xCA: "arithmetic progressive", 0xCB: "arithmetic lossless",
              0xCD: "arithmetic differential sequential",
              0xCE: "arithmetic differential progressive",
              0xCF: "arithmetic differential lossless"}


def pil():
    """Pillow's Image module (the `media` extra), or 200006 naming the extra."""
    try:
        from PIL import Image
    except ImportError as e:                       # pragma: no cover - Pillow is in the extras
        raise AclError(ACL_ERROR_FEATURE_UNSUPPORTED,
                       "DVPP decoding needs Pillow: pip install 'ascend-emu[media]'") from e
    return Image


def _truncation_tolerated() -> bool:
    from PIL import ImageFile
    return bool(ImageFile.LOAD_TRUNCATED_IMAGES)


def data_error(api: str, msg: str) -> AclError:
    """The error of a DVPP task that failed on its input data (reported at synchronize)."""
    return AclError(ACL_ERROR_RT_AICPU_EXCEPTION, f"{api}: {msg}")


def sof_marker(data: bytes) -> int | None:
    """The first SOFn marker (0xC0..0xCF but C4/C8/CC) of a JPEG stream, or None."""
    n, i = len(data), 2
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        m = data[i + 1]
        if m == 0xFF:                      # fill byte
            i += 1
            continue
        if m in (0xD8, 0x01) or 0xD0 <= m <= 0xD7:
            i += 2
            continue
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            return m
        if m in (0xD9, 0xDA):
            return None
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return None


_MAGIC = {"JPEG": b"\xff\xd8", "PNG": b"\x89PNG\r\n\x1a\n"}


def check_claimed_size(data: bytes, kind: str, api: str, lo: tuple, hi: tuple) -> None:
    """The resolution rule on the size the header claims, before Pillow parses the stream."""
    claimed = header_size(data, kind)
    if claimed is not None:
        check_resolution(api, kind, *claimed, lo, hi)


def header_size(data: bytes, kind: str) -> tuple | None:
    """(width, height) a JPEG's first SOF or a PNG's IHDR claims, read from the bytes (before
    Pillow, which refuses a claim past twice its MAX_IMAGE_PIXELS as a decompression bomb
    without telling the size); None if the stream has no such header."""
    if kind == "PNG":
        if data[:8] != _MAGIC["PNG"] or data[12:16] != b"IHDR" or len(data) < 24:
            return None
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    n, i = len(data), 2
    while data[:2] == _MAGIC["JPEG"] and i + 9 <= n and data[i] == 0xFF:
        m = data[i + 1]
        if m == 0xFF or m in (0xD8, 0x01) or 0xD0 <= m <= 0xD7:
            i += 1 if m == 0xFF else 2
            continue
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7],
                                                                            "big")
        if m in (0xD9, 0xDA):
            return None
        i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return None


def _open(data: bytes, api: str, kind: str, err):
    Image = pil()
    try:
        im = Image.open(io.BytesIO(data))
    except Exception as e:                  # noqa: BLE001 - Pillow's UnidentifiedImageError etc.
        if data.startswith(_MAGIC[kind]):
            raise err(api, f"{kind} data could not be parsed (truncated or corrupt header, "
                           f"{len(data)} byte(s)): {type(e).__name__}: {e}") from e
        raise err(api, f"data must be a {kind} stream, got {len(data)} byte(s) Pillow cannot "
                       f"identify ({type(e).__name__}: {e})") from e
    if im.format != kind:
        raise err(api, f"data must be a {kind} stream, got a {im.format} image")
    return im


def jpeg_info(data: bytes, api: str, err=bad):
    """(width, height, components, JpegFormat) of a JPEG stream's header."""
    if data[:2] != b"\xff\xd8":
        raise err(api, f"data must be a JPEG stream (starting FF D8), got {data[:4].hex(' ')!r}")
    im = _open(data, api, "JPEG", err)
    layers = getattr(im, "layer", None) or []
    comps = len(layers) or len(im.getbands())
    if comps == 1:
        fmt = JpegFormat.CSS_GRAY
    elif comps == 3 and layers:
        h0, v0 = layers[0][1], layers[0][2]
        hc, vc = max(1, layers[1][1]), max(1, layers[1][2])
        fmt = {(1, 1): JpegFormat.CSS_444, (2, 1): JpegFormat.CSS_422,
               (2, 2): JpegFormat.CSS_420, (1, 2): JpegFormat.CSS_440,
               (4, 1): JpegFormat.CSS_411}.get((h0 // hc, v0 // vc), JpegFormat.CSS_UNKNOWN)
    else:
        fmt = JpegFormat.CSS_UNKNOWN
    return im.size[0], im.size[1], comps, fmt


def decode_jpeg(data: bytes, api: str, lo: tuple, hi: tuple) -> np.ndarray:
    """Decode a JPEG as JPEGD would accept it: an (h, w, 3) RGB or (h, w) gray uint8 array.
    Its header's resolution must be within `lo` .. `hi` (checked before any pixel is decoded:
    a 4 KB file may claim 12000x12000); anything else JPEGD refuses or cannot decode raises
    `data_error` (507018)."""
    m = sof_marker(data) if data[:2] == b"\xff\xd8" else None
    if data[:2] == b"\xff\xd8" and m is None:
        raise data_error(api, "data must be a complete JPEG stream, got no frame header (SOF) "
                              "before the scan or the end of the data (truncated?)")
    if m is not None and m not in (0xC0, 0xC1):
        raise data_error(api, f"JPEGD decodes Huffman-coded sequential JPEGs only (baseline or "
                              f"extended, SOF0/SOF1), got a {_SOF_KINDS.get(m, hex(m))} JPEG "
                              f"(SOF{m - 0xC0})")
    if _truncation_tolerated() and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise data_error(api, "data must be a complete JPEG stream, got no end-of-image marker "
                              "(truncated)")
    check_claimed_size(data, "JPEG", api, lo, hi)
    im = _open(data, api, "JPEG", data_error)
    if im.mode not in ("RGB", "L"):
        raise data_error(api, f"JPEGD decodes YCbCr or grayscale JPEGs, got colour mode {im.mode}")
    check_resolution(api, "JPEG", *im.size, lo, hi)        # Image.open read the header only
    try:
        im.load()
    except Exception as e:                   # noqa: BLE001 - truncated / corrupt entropy data
        raise data_error(api, f"JPEG data could not be decoded (truncated or corrupt): "
                              f"{type(e).__name__}: {e}") from e
    return np.asarray(im)


def png_info(data: bytes, api: str, err=bad):
    """(width, height, components) of a PNG stream's header (components: 1 gray, 2 gray+alpha,
    3 RGB, 4 RGBA; palette images count as 3, or 4 with transparency)."""
    im = _open(data, api, "PNG", err)
    mode = im.mode
    if mode == "P":
        comps = 4 if "transparency" in im.info else 3
    else:
        comps = {"1": 1, "L": 1, "I;16": 1, "I": 1, "LA": 2, "RGB": 3, "RGBA": 4}.get(mode, 3)
    return im.size[0], im.size[1], comps


def decode_png(data: bytes, api: str, alpha: bool, lo: tuple, hi: tuple) -> np.ndarray:
    """Decode a PNG to an (h, w, 3) RGB or (h, w, 4) RGBA uint8 array (gray expanded, missing
    alpha = 255); its header's resolution must be within `lo` .. `hi` (checked before
    decoding); errors raise `data_error`."""
    check_claimed_size(data, "PNG", api, lo, hi)
    im = _open(data, api, "PNG", data_error)
    check_resolution(api, "PNG", *im.size, lo, hi)
    if im.mode in ("I;16", "I", "I;16B"):
        raise data_error(api, f"PNGD decodes 8-bit PNGs, got 16-bit mode {im.mode}")
    try:
        im.load()
        im = im.convert("RGBA" if alpha else "RGB")
    except Exception as e:                   # noqa: BLE001 - truncated / corrupt data
        raise data_error(api, f"PNG data could not be decoded (truncated or corrupt): "
                              f"{type(e).__name__}: {e}") from e
    return np.asarray(im)


def encode_jpeg(ycbcr: np.ndarray, quality: int) -> bytes:
    """Encode an (h, w, 3) YCbCr array as a baseline 4:2:0 JPEG (no colour conversion)."""
    Image = pil()
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(ycbcr), "YCbCr").save(out, "JPEG", quality=quality,
                                                              subsampling=2)
    return out.getvalue()
