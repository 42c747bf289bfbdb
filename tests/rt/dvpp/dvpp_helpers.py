"""Helpers of the DVPP tests: test pictures, device buffers, and the documented references.

The references are written here from docs/dvpp.md, apart from rt.dvpp's code: the BT.601
full-range fixed-point conversion (libjpeg's jccolor.c constants) with 2x2-sum chroma, and a
float64 half-pixel bilinear scaler.
"""
import contextlib
import io

import numpy as np
import pytest
from PIL import Image

import rt
from rt.errors import AclError


@contextlib.contextmanager
def raises(code: int, match: str):
    """`pytest.raises(AclError, match=match)` that also checks the CANN code."""
    with pytest.raises(AclError, match=match) as info:
        yield info
    assert info.value.code == code, f"expected code {code}, got {info.value!r}"


def picture(w: int, h: int, seed: int = 0) -> np.ndarray:
    """A smooth RGB test picture with some texture (JPEG-friendly, not flat)."""
    rs = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack([128 + 100 * np.sin(xx / 9 + k) * np.cos(yy / 7 - k) for k in range(3)], -1)
    return np.clip(base + rs.normal(0, 12, base.shape), 0, 255).astype(np.uint8)


def jpeg_bytes(img: np.ndarray, quality: int = 90, subsampling: int = 2, **kw) -> bytes:
    b = io.BytesIO()
    mode = "L" if img.ndim == 2 else "RGB"
    Image.fromarray(img, mode).save(b, "JPEG", quality=quality, subsampling=subsampling, **kw)
    return b.getvalue()


def png_bytes(img: np.ndarray) -> bytes:
    b = io.BytesIO()
    Image.fromarray(img).save(b, "PNG")
    return b.getvalue()


def to_dvpp(data) -> int:
    """Copy bytes / an array into fresh DVPP memory; returns the device address."""
    a = np.frombuffer(data, np.uint8).copy() if isinstance(data, bytes) else \
        np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    p = rt.dvpp.malloc(a.size)
    rt.memcpy(p, a, a.size, rt.MemcpyKind.HOST_TO_DEVICE)
    return p


def from_device(p: int, n: int) -> np.ndarray:
    out = np.empty(n, np.uint8)
    rt.memcpy(out, p, n, rt.MemcpyKind.DEVICE_TO_HOST)
    return out


# -- references ------------------------------------------------------------------------------------
def ref_nv12(rgb: np.ndarray, nv21: bool = False):
    """(Y, interleaved UV) of docs/dvpp.md's conversion, computed pixel by pixel as written."""
    c = rgb.astype(np.int64)
    h, w = c.shape[:2]
    Y = (19595 * c[..., 0] + 38470 * c[..., 1] + 7471 * c[..., 2] + 32768) >> 16
    pad = np.pad(c, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    S = pad[0::2, 0::2] + pad[1::2, 0::2] + pad[0::2, 1::2] + pad[1::2, 1::2]
    cb = ((-11059 * S[..., 0] - 21709 * S[..., 1] + 32768 * S[..., 2] + 131072) >> 18) + 128
    cr = ((32768 * S[..., 0] - 27439 * S[..., 1] - 5329 * S[..., 2] + 131072) >> 18) + 128
    first, second = (cr, cb) if nv21 else (cb, cr)
    uv = np.stack([first, second], -1).reshape(S.shape[0], -1)
    return np.clip(Y, 0, 255).astype(np.uint8), np.clip(uv, 0, 255).astype(np.uint8)


def ref_bilinear(p: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """float64 half-pixel bilinear of an (h, w[, c]) plane (no rounding)."""
    h, w = p.shape[:2]
    sy = np.clip((np.arange(oh) + 0.5) * h / oh - 0.5, 0, h - 1)
    sx = np.clip((np.arange(ow) + 0.5) * w / ow - 0.5, 0, w - 1)
    y0, x0 = np.floor(sy).astype(int), np.floor(sx).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = sy - y0, sx - x0
    q = p.astype(np.float64)
    if q.ndim == 3:
        fx = fx[:, None]
    top = q[y0][:, x0] * (1 - fx) + q[y0][:, x1] * fx
    bot = q[y1][:, x0] * (1 - fx) + q[y1][:, x1] * fx
    fy = fy.reshape((-1,) + (1,) * (q.ndim - 1))
    return top * (1 - fy) + bot * fy


def yuv_planes(buf: np.ndarray, ws: int, hs: int, w: int, h: int):
    """(Y (h, w), UV (ceil(h/2), 2*ceil(w/2))) of a YUV420SP frame in host memory."""
    Y = buf[:ws * hs].reshape(hs, ws)[:h, :w]
    UV = buf[ws * hs:ws * hs * 3 // 2].reshape(hs // 2, ws)[:(h + 1) // 2, :(w + 1) // 2 * 2]
    return Y, UV


def nv12_frame(Y: np.ndarray, UV: np.ndarray, ws: int, hs: int) -> np.ndarray:
    """A YUV420SP frame (bytes of ws*hs*3/2) holding the planes, padding 0."""
    buf = np.zeros(ws * hs * 3 // 2, np.uint8)
    h, w = Y.shape
    buf[:ws * hs].reshape(hs, ws)[:h, :w] = Y
    buf[ws * hs:].reshape(hs // 2, ws)[:UV.shape[0], :UV.shape[1]] = UV
    return buf


def yuv_pic(Y, UV, ws: int, hs: int, fmt: int = 1):
    """A PicDesc over fresh DVPP memory holding the planes."""
    h, w = Y.shape
    frame = nv12_frame(Y, UV, ws, hs)
    p = to_dvpp(frame)
    return rt.dvpp.PicDesc(data=p, size=frame.size, format=fmt, width=w, height=h,
                           width_stride=ws, height_stride=hs)


def out_pic(w: int, h: int, ws: int | None = None, hs: int | None = None, fmt: int = 1,
            fill: int = 0):
    ws = ws or rt.dvpp.align_up(w, 16)
    hs = hs or rt.dvpp.align_up(h, 2)
    n = rt.dvpp.frame_size(fmt, ws, hs)
    p = to_dvpp(np.full(n, fill, np.uint8))
    return rt.dvpp.PicDesc(data=p, size=n, format=fmt, width=w, height=h, width_stride=ws,
                           height_stride=hs)
