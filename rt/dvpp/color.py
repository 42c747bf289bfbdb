"""Pixel arithmetic of the emulated DVPP: colour conversion, YUV420SP layout, bilinear scaling.

Colour space: BT.601 full range (the JFIF YCbCr that JPEG stores and that AIPP's usual
YUV420SP->RGB matrix inverts), in the 16-bit fixed point of libjpeg's `jccolor.c`:

    Y  = (19595 R + 38470 G +  7471 B + 2^15) >> 16
    Cb = ((-11059 R - 21709 G + 32768 B + 2^15) >> 16) + 128
    Cr = ((32768 R - 27439 G -  5329 B + 2^15) >> 16) + 128

4:2:0 chroma: Cb/Cr of the sum of each 2x2 block's R, G, B (`>> 18`, rounding with `+ 2^17`);
an odd last row/column is padded by repeating it. Results are clipped to [0, 255].

Scaling (VPC resize, crop resize, paste resize): bilinear with half-pixel centres (the
OpenCV INTER_LINEAR convention: src = (dst + 0.5) * in / out - 0.5, clamped at the edges) on
each plane separately: Y at full size, the interleaved U/V plane at half size; packed RGB per
channel. Float32 weights, rounded half up. Nearest neighbour (interpolation 2) takes
floor((dst + 0.5) * in / out).
"""
from __future__ import annotations

import numpy as np

from .formats import PixelFormat, YUV420SP

_Y = (19595, 38470, 7471)
_CB = (-11059, -21709, 32768)
_CR = (32768, -27439, -5329)


def rgb_to_yuv420sp(rgb: np.ndarray, fmt: int = PixelFormat.YUV_SEMIPLANAR_420):
    """(Y plane (h, w), interleaved chroma plane (ceil(h/2), 2*ceil(w/2))) of an (h, w, 3) uint8
    RGB image: U,V pairs for NV12, V,U for NV21."""
    h, w = rgb.shape[:2]
    c = rgb.astype(np.int32)
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    y = (_Y[0] * r + _Y[1] * g + _Y[2] * b + (1 << 15)) >> 16
    if h % 2 or w % 2:
        c = np.pad(c, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    s = c.reshape(c.shape[0] // 2, 2, c.shape[1] // 2, 2, 3).sum(axis=(1, 3))
    rs, gs, bs = s[..., 0], s[..., 1], s[..., 2]
    cb = ((_CB[0] * rs + _CB[1] * gs + _CB[2] * bs + (1 << 17)) >> 18) + 128
    cr = ((_CR[0] * rs + _CR[1] * gs + _CR[2] * bs + (1 << 17)) >> 18) + 128
    uv = np.empty((cb.shape[0], cb.shape[1] * 2), np.uint8)
    first, second = (cb, cr) if fmt == PixelFormat.YUV_SEMIPLANAR_420 else (cr, cb)
    uv[:, 0::2] = np.clip(first, 0, 255)
    uv[:, 1::2] = np.clip(second, 0, 255)
    return np.clip(y, 0, 255).astype(np.uint8), uv


def gray_to_yuv420sp(gray: np.ndarray):
    """(Y, chroma) of a grayscale image: Y = L, U = V = 128."""
    h, w = gray.shape
    return gray.astype(np.uint8, copy=False), np.full(((h + 1) // 2, (w + 1) // 2 * 2), 128,
                                                      np.uint8)


def yuv420sp_to_ycbcr(y: np.ndarray, uv: np.ndarray, fmt: int) -> np.ndarray:
    """(h, w, 3) full-resolution YCbCr (chroma repeated 2x2) of YUV420SP planes (JPEGE's input)."""
    h, w = y.shape
    cb = uv[:, 0::2] if fmt == PixelFormat.YUV_SEMIPLANAR_420 else uv[:, 1::2]
    cr = uv[:, 1::2] if fmt == PixelFormat.YUV_SEMIPLANAR_420 else uv[:, 0::2]
    up = lambda p: np.repeat(np.repeat(p, 2, axis=0), 2, axis=1)[:h, :w]     # noqa: E731
    return np.dstack([y, up(cb), up(cr)])


# -- reading and writing pictures in device memory -------------------------------------------------
def write_yuv420sp(buf: np.ndarray, ws: int, hs: int, y: np.ndarray, uv: np.ndarray,
                   top: int = 0, left: int = 0) -> None:
    """Store planes into a YUV420SP frame held in `buf` (uint8, >= ws*hs*3/2 bytes) at (top, left)
    (both even). Bytes outside the written rectangle are left as they were."""
    h, w = y.shape
    frame = buf[:ws * hs].reshape(hs, ws)
    frame[top:top + h, left:left + w] = y
    ch, cw = uv.shape
    chroma = buf[ws * hs:ws * hs + ws * (hs // 2)].reshape(hs // 2, ws)
    chroma[top // 2:top // 2 + ch, left:left + cw] = uv


def read_yuv420sp(buf: np.ndarray, ws: int, hs: int, w: int, h: int):
    """(Y (h, w), chroma (h/2, w)) views of a YUV420SP frame (w, h even)."""
    y = buf[:ws * hs].reshape(hs, ws)[:h, :w]
    uv = buf[ws * hs:ws * hs + ws * (hs // 2)].reshape(hs // 2, ws)[:h // 2, :w]
    return y, uv


def read_packed(buf: np.ndarray, ws: int, hs: int, w: int, h: int, ch: int = 3) -> np.ndarray:
    return buf[:ws * hs].reshape(hs, ws)[:h, :w * ch].reshape(h, w, ch)


def write_packed(buf: np.ndarray, ws: int, hs: int, img: np.ndarray, top: int = 0,
                 left: int = 0) -> None:
    h, w, ch = img.shape
    frame = buf[:ws * hs].reshape(hs, ws)
    frame[top:top + h, left * ch:(left + w) * ch] = img.reshape(h, w * ch)


def swap_uv(uv: np.ndarray) -> np.ndarray:
    out = np.empty_like(uv)
    out[:, 0::2], out[:, 1::2] = uv[:, 1::2], uv[:, 0::2]
    return out


# -- scaling ---------------------------------------------------------------------------------------
def _axis(n_in: int, n_out: int, nearest: bool):
    x = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out)
    if nearest:
        i = np.minimum(np.floor(x).astype(np.intp), n_in - 1)
        return i, i, np.zeros(n_out, np.float32)
    x = np.clip(x - 0.5, 0, n_in - 1)
    i0 = np.floor(x).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, (x - i0).astype(np.float32)


def scale_plane(p: np.ndarray, out_h: int, out_w: int, nearest: bool = False) -> np.ndarray:
    """Scale an (h, w) or (h, w, c) uint8 plane to (out_h, out_w[, c])."""
    h, w = p.shape[:2]
    if (h, w) == (out_h, out_w):
        return np.array(p, copy=True)
    y0, y1, fy = _axis(h, out_h, nearest)
    x0, x1, fx = _axis(w, out_w, nearest)
    if nearest:
        return p[y0][:, x0]
    shape = (-1, 1, 1) if p.ndim == 3 else (-1, 1)
    if p.ndim == 3:
        fx = fx.reshape(-1, 1)
    top, bot = p[y0].astype(np.float32), p[y1].astype(np.float32)
    row_t = top[:, x0] + (top[:, x1] - top[:, x0]) * fx
    row_b = bot[:, x0] + (bot[:, x1] - bot[:, x0]) * fx
    out = row_t + (row_b - row_t) * fy.reshape(shape)
    return np.floor(out + 0.5).clip(0, 255).astype(np.uint8)


def scale_yuv420sp(y: np.ndarray, uv: np.ndarray, out_w: int, out_h: int, nearest: bool = False):
    """Scale YUV420SP planes (even sizes) to out_w x out_h (even): Y and the U/V planes apart."""
    ch, cw = uv.shape[0], uv.shape[1] // 2
    pairs = uv.reshape(ch, cw, 2)
    ouv = scale_plane(pairs, out_h // 2, out_w // 2, nearest).reshape(out_h // 2, out_w)
    return scale_plane(y, out_h, out_w, nearest), ouv


def is_yuv(fmt: int) -> bool:
    return fmt in YUV420SP


# -- ROIs at odd offsets or of odd sizes (SoCs without the ROI parity rule) --------------------
def full_chroma(uv: np.ndarray) -> np.ndarray:
    """The interleaved (h/2, w) chroma plane of a YUV420SP frame at full resolution: (h, w, 2),
    each 2x2 block's (U, V) (NV21: (V, U)) repeated over its four pixels."""
    ch, cw = uv.shape[0], uv.shape[1] // 2
    pairs = uv.reshape(ch, cw, 2)
    return np.repeat(np.repeat(pairs, 2, axis=0), 2, axis=1)


def yuv_region_any(y: np.ndarray, uv: np.ndarray, crop, out_w: int, out_h: int,
                   nearest: bool = False):
    """Crop (x, y, w, h) of YUV420SP planes, any parity, scaled to out_w x out_h (any parity):
    (Y (out_h, out_w), chroma at full resolution (out_h, out_w, 2))."""
    x, t, w, h = crop
    yc = y[t:t + h, x:x + w]
    cc = full_chroma(uv)[t:t + h, x:x + w]
    return scale_plane(yc, out_h, out_w, nearest), scale_plane(cc, out_h, out_w, nearest)


def write_yuv420sp_any(buf: np.ndarray, ws: int, hs: int, yp: np.ndarray, cp: np.ndarray,
                       top: int, left: int) -> None:
    """Store Y (h, w) and full-resolution chroma (h, w, 2) at (top, left), any parity: Y pixel
    by pixel; a 2x2 chroma block is written when the rectangle holds its top-left pixel, with
    the chroma of that pixel. Everything else is left as it was."""
    h, w = yp.shape
    buf[:ws * hs].reshape(hs, ws)[top:top + h, left:left + w] = yp
    b0, b1 = (top + 1) // 2, (top + h - 1) // 2 + 1
    c0, c1 = (left + 1) // 2, (left + w - 1) // 2 + 1
    if b1 <= b0 or c1 <= c0:
        return
    blocks = cp[2 * b0 - top:2 * b1 - top:2, 2 * c0 - left:2 * c1 - left:2]
    chroma = buf[ws * hs:ws * hs + ws * (hs // 2)].reshape(hs // 2, ws)
    chroma[b0:b1, 2 * c0:2 * c1] = blocks.reshape(b1 - b0, 2 * (c1 - c0))


# -- VDEC's RGB888 / BGR888 output ----------------------------------------------------------------
#: acldvppCscMatrix -> (Y offset, Y gain, V->R, U->G, V->G, U->B) of R = g (Y - o) + rv (V - 128),
#: G = g (Y - o) - gu (U - 128) - gv (V - 128), B = g (Y - o) + bu (U - 128). 0 and 1 as CANN's
#: acldvppCscMatrix page lists them (0, BT.601 wide, is the default); 2..5 the ITU-R BT.709 /
#: BT.2020 coefficients (full range: g = 1; narrow: g = 255/219, chroma scaled by 255/224).
CSC_MATRICES = {
    0: (0.0, 1.0, 1.402, 0.344, 0.714, 1.772),
    1: (16.0, 1.16438, 1.59602, 0.39176, 0.81297, 2.01723),
    2: (0.0, 1.0, 1.5748, 0.1873, 0.4681, 1.8556),
    3: (16.0, 1.16438, 1.79274, 0.21325, 0.53291, 2.11240),
    4: (0.0, 1.0, 1.4746, 0.16455, 0.57135, 1.8814),
    5: (16.0, 1.16438, 1.67867, 0.18733, 0.65042, 2.14177),
}


def yuv420sp_to_rgb(y: np.ndarray, uv: np.ndarray, matrix: int = 0) -> np.ndarray:
    """(h, w, 3) RGB of NV12 planes (even sizes) by acldvppCscMatrix `matrix` (`CSC_MATRICES`;
    default 0, BT.601 wide: R = Y + 1.402 (V - 128), G = Y - 0.344 (U - 128) - 0.714 (V - 128),
    B = Y + 1.772 (U - 128)); each 2x2 block's chroma repeated over its pixels, float32, rounded
    half up, clipped to [0, 255]."""
    o, g, rv, gu, gv, bu = (np.float32(v) for v in CSC_MATRICES[matrix])
    c = full_chroma(uv).astype(np.float32) - np.float32(128)
    yy = (y.astype(np.float32) - o) * g
    u, v = c[..., 0], c[..., 1]
    rgb = np.stack([yy + rv * v, yy - gu * u - gv * v, yy + bu * u], -1)
    return np.floor(rgb + np.float32(0.5)).clip(0, 255).astype(np.uint8)
