"""AIPP on the vector cores: a YUV420SP (NV12 / NV21) image batch -> cropped, colour-converted,
normalised NCHW float32 / float16 (the `Aipp` model op that `rt.atc --insert_op_conf` inserts).

The node's attrs are rt.dvpp.aipp's (crop window, 3x3 CSC matrix with input/output biases, rbuv
swap, per-channel mean+min and var_reci, output dtype). Each core owns a block of output rows
(N * crop_h); per row, tiles of columns move GM -> UB as bytes: the Y segment and three copies of
the interleaved UV segment, at offsets 0, -1 and +1. A pixel at an even column takes (U, V) =
(uv[x], uv[x+1]), at an odd one (uv[x-1], uv[x]): with a 1/0 parity row p,
`first = uv[x-1] + p * (uv[x] - uv[x-1])` and `second = uv[x] + p * (uv[x+1] - uv[x])`, so the
2x horizontal chroma upsampling needs no gather. The rbuv swap (NV21) swaps the matrix columns
and input biases on the host. CSC in float32 on integers (exact): `floor(sum / 256)` by a
CAST_FLOOR, + output bias, clip to [0, 255], then `(v - (mean + min)) * var_reci`, cast to the
output dtype. RGB888 / YUV400 inputs are not here: the AI CPU runs them (rt.dvpp.aipp).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device

BUFFER_NUM = 2
TILE = 256                 # columns per UB tile (one size: one compiled binary per out dtype)
N_PARAMS = 24              # matrix (9), input bias (3), output bias (3), sub (3), var_reci (3)


@dataclass(frozen=True)
class AippTiling:
    batch: int
    src_w: int
    src_h: int
    crop_x: int
    crop_y: int
    crop_w: int
    crop_h: int
    block_dim: int
    rows_per_core: int     # output rows (of batch * crop_h) per core
    tile: int              # columns per UB tile

    def __post_init__(self):
        if min(self.batch, self.crop_w, self.crop_h, self.block_dim, self.rows_per_core) < 1:
            raise ValueError(f"AippTiling: sizes must be >= 1, got {self}")
        if self.src_w % 2 or self.src_h % 2 or self.crop_x % 2 or self.crop_y % 2:
            raise ValueError(f"AippTiling: YUV420SP needs an even source size and crop start, "
                             f"got {self}")
        if self.crop_x + self.crop_w > self.src_w or self.crop_y + self.crop_h > self.src_h:
            raise ValueError(f"AippTiling: the crop window must lie inside the source, got "
                             f"{self}")
        if self.tile % 32 or not 0 < self.tile <= 1024:
            raise ValueError(f"AippTiling: tile must be a multiple of 32 in (0, 1024], got "
                             f"tile={self.tile}")

    @property
    def rows(self) -> int:
        return self.batch * self.crop_h

    @property
    def image_bytes(self) -> int:
        return self.src_w * self.src_h * 3 // 2


def aipp_tiling(attrs: dict, batch: int, block_dim: int | None = None) -> AippTiling:
    rows = batch * attrs["crop_h"]
    cores = block_dim or min(rt.default_core_count(),
                             ceil_div(rows * attrs["crop_w"], 4096))
    cores = max(1, min(cores, rows))
    per = ceil_div(rows, cores)
    return AippTiling(batch, attrs["src_w"], attrs["src_h"], attrs["crop_x"], attrs["crop_y"],
                      attrs["crop_w"], attrs["crop_h"], ceil_div(rows, per), per, TILE)


def supported(attrs: dict) -> bool:
    """Does the kernel run this config (else the AI CPU does)?"""
    return attrs["input_format"] == "YUV420SP_U8" and attrs["channels"] == 3 and \
        attrs["dtype"] in ("float32", "float16")


def aipp_params(attrs: dict) -> np.ndarray:
    """The float32 parameter block the kernel reads (rbuv swap folded into the matrix)."""
    m = np.array(attrs["matrix"], np.float64) if attrs["csc"] else 256.0 * np.eye(3)
    ib = np.array(attrs["input_bias"] if attrs["csc"] else [0, 0, 0], np.float64)
    ob = np.array(attrs["output_bias"] if attrs["csc"] else [0, 0, 0], np.float64)
    if attrs["rbuv_swap"]:                     # the UV pair is (V, U): swap their roles
        m, ib = m[:, [0, 2, 1]], ib[[0, 2, 1]]
    p = np.zeros(N_PARAMS, np.float32)
    p[0:9], p[9:12], p[12:15] = m.reshape(-1), ib, ob
    p[15:18], p[18:21] = attrs["sub"][:3], attrs["var_reci"][:3]
    return p


@asc.jit
def aipp_kernel(img: asc.GlobalAddress, params: asc.GlobalAddress, parity: asc.GlobalAddress,
                out: asc.GlobalAddress, rows: int, rows_per_core: int, src_w: int, src_h: int,
                crop_x: int, crop_y: int, crop_w: int, crop_h: int, image_bytes: int,
                tile: asc.ConstExpr[int], lowp: asc.ConstExpr[bool]):
    r0 = asc.get_block_idx() * rows_per_core
    nr = min(rows_per_core, rows - r0)
    if nr <= 0:
        return
    pg = asc.GlobalTensor()
    pg.set_global_buffer(params, 24)
    ig = asc.GlobalTensor()
    ig.set_global_buffer(img, (rows // crop_h) * image_bytes)
    og = asc.GlobalTensor()
    og.set_global_buffer(out, rows * 3 * crop_w)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    qpar = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, BUFFER_NUM)
    calc = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qin, BUFFER_NUM, 4 * tile)
    pipe.init_buffer(qpar, 1, tile * 4)
    pipe.init_buffer(qout, BUFFER_NUM, 3 * tile * out.dtype.sizeof())
    pipe.init_buffer(calc, tile * (4 * 2 + 6 * 4 + 4 + 3 * 4))
    h16 = calc.get_with_offset(4 * tile, 0, asc.float16)
    f32 = calc.get_with_offset(6 * tile, 8 * tile, asc.float32)     # y, c0, cm, cp, a, b
    i32 = calc.get_with_offset(tile, 32 * tile, asc.int32)
    acc = calc.get_with_offset(3 * tile, 36 * tile, asc.float32)    # float16 output staging
    pl = qpar.alloc_tensor(asc.float32)
    asc.data_copy(pl, parity, tile)
    qpar.enque(pl)
    par = qpar.deque(asc.float32)
    yv = f32[0:]
    c0 = f32[tile:]
    cm = f32[2 * tile:]
    cp = f32[3 * tile:]
    fa = f32[4 * tile:]
    fb = f32[5 * tile:]
    for r in range(r0, r0 + nr):
        b = r // crop_h
        sy = crop_y + r % crop_h
        ybase = b * image_bytes + sy * src_w + crop_x
        uvbase = b * image_bytes + src_w * src_h + (sy // 2) * src_w + crop_x
        for x0 in range(0, crop_w, tile):
            n = min(tile, crop_w - x0)
            np1 = min(n, src_w - crop_x - x0 - 1)      # uv[x+1] stays inside the row
            inb = qin.alloc_tensor(asc.uint8)
            asc.data_copy_pad(inb, ig[ybase + x0:], asc.DataCopyExtParams(1, n, 0, 0, 0))
            asc.data_copy_pad(inb[tile:], ig[uvbase + x0:], asc.DataCopyExtParams(1, n, 0, 0, 0))
            asc.data_copy_pad(inb[2 * tile:], ig[uvbase + x0 - 1:],
                              asc.DataCopyExtParams(1, n, 0, 0, 0))
            asc.data_copy_pad(inb[3 * tile:], ig[uvbase + x0 + 1:],
                              asc.DataCopyExtParams(1, np1, 0, 0, 0))
            qin.enque(inb)
            inb = qin.deque(asc.uint8)
            # uint8 -> float16 -> float32 (the vector unit's cast pairs); the +1 copy's last
            # column may be stale when np1 < n: that pixel is odd, so p = 0 drops it
            if n == tile:
                asc.cast(h16, inb, asc.RoundMode.CAST_NONE, 4 * tile)
                qin.free_tensor(inb)
                asc.cast(f32, h16, asc.RoundMode.CAST_NONE, 4 * tile)
            else:       # a narrower tile: only the copied columns of each quarter (the rest
                for k in range(4):      # of the buffer was never written)
                    asc.cast(h16[k * tile:], inb[k * tile:], asc.RoundMode.CAST_NONE, n)
                qin.free_tensor(inb)
                for k in range(4):
                    asc.cast(f32[k * tile:], h16[k * tile:], asc.RoundMode.CAST_NONE, n)
            asc.sub(fa, c0, cm, n)                     # first of the pair (U for NV12)
            asc.mul(fa, fa, par, n)
            asc.add(fa, fa, cm, n)
            asc.sub(fb, cp, c0, n)                     # second of the pair (V for NV12)
            asc.mul(fb, fb, par, n)
            asc.add(fb, fb, c0, n)
            asc.adds(yv, yv, -pg.get_value(9), n)
            asc.adds(fa, fa, -pg.get_value(10), n)
            asc.adds(fb, fb, -pg.get_value(11), n)
            ot = qout.alloc_tensor(out.dtype)
            for c in range(3):
                dst = acc[c * tile:]
                if not lowp:
                    dst = ot[c * tile:]
                asc.muls(dst, yv, pg.get_value(3 * c), n)
                asc.axpy(dst, fa, pg.get_value(3 * c + 1), n)
                asc.axpy(dst, fb, pg.get_value(3 * c + 2), n)
                asc.muls(dst, dst, 0.00390625, n)      # / 256: exact, then floor
                asc.cast(i32, dst, asc.RoundMode.CAST_FLOOR, n)
                asc.cast(dst, i32, asc.RoundMode.CAST_NONE, n)
                asc.adds(dst, dst, pg.get_value(12 + c), n)
                asc.maxs(dst, dst, 0.0, n)
                asc.mins(dst, dst, 255.0, n)
                asc.adds(dst, dst, -pg.get_value(15 + c), n)
                asc.muls(dst, dst, pg.get_value(18 + c), n)
                if lowp:
                    asc.cast(ot[c * tile:], dst, asc.RoundMode.CAST_RINT, n)
            qout.enque(ot)
            ot = qout.deque(out.dtype)
            for c in range(3):
                asc.data_copy_pad(og[((b * 3 + c) * crop_h + r % crop_h) * crop_w + x0:],
                                  ot[c * tile:],
                                  asc.DataCopyExtParams(1, n * out.dtype.sizeof(), 0, 0, 0))
            qout.free_tensor(ot)
    qpar.free_tensor(par)


# ---- host ----------------------------------------------------------------------------------------

def parity_row(tile: int) -> np.ndarray:
    """1 at even columns, 0 at odd ones (tiles start at even source columns)."""
    p = np.zeros(tile, np.float32)
    p[0::2] = 1
    return p


def launch_aipp(img, params, parity, out, t: AippTiling, stream, **launch_options) -> None:
    """Queue AIPP of device uint8 `img` (batch NV12/NV21 images) into device `out`
    (N, 3, crop_h, crop_w); `params` = aipp_params(attrs), `parity` = parity_row(t.tile)
    on the device."""
    aipp_kernel[t.block_dim, stream](
        img, params, parity, out, t.rows, t.rows_per_core, t.src_w, t.src_h, t.crop_x,
        t.crop_y, t.crop_w, t.crop_h, t.image_bytes, t.tile,
        np.dtype(out.dtype) == np.float16, **launch_options)


def aipp(image, attrs: dict, *, stream=None, out=None, tiling: AippTiling | None = None,
         **launch_options):
    """AIPP of a uint8 YUV420SP image batch ((N, src_h*3/2, src_w[, 1]) or flat) with the
    static config `attrs` (rt.dvpp.aipp's layout). numpy in -> numpy out (synchronous);
    rt.DeviceArray in -> DeviceArray out (`out` if given), queued on `stream`."""
    if not supported(attrs):
        raise ValueError(f"aipp: the kernel takes YUV420SP_U8 to 3 float channels, got "
                         f"input_format={attrs['input_format']!r} channels={attrs['channels']} "
                         f"dtype={attrs['dtype']!r}")
    per = attrs["src_w"] * attrs["src_h"] * 3 // 2
    size = int(np.prod(image.shape))
    if np.dtype(image.dtype) != np.uint8 or size % per or size == 0:
        raise ValueError(f"aipp: image must be uint8 with a multiple of {per} bytes "
                         f"(src {attrs['src_w']}x{attrs['src_h']} YUV420SP), got "
                         f"dtype={image.dtype} size={size}")
    batch = size // per
    t = tiling or aipp_tiling(attrs, batch)
    dev = is_device(image)
    rt.ensure_device()
    s = stream if stream is not None else rt.current_stream()
    shape = (batch, 3, attrs["crop_h"], attrs["crop_w"])
    params = rt.to_device(aipp_params(attrs))
    parity = rt.to_device(parity_row(t.tile))
    if dev:
        y = out if out is not None else rt.device_empty(shape, attrs["dtype"])
        launch_aipp(image, params, parity, y, t, s, **launch_options)
        return y
    xd = rt.to_device(np.ascontiguousarray(image).reshape(-1))
    y = rt.device_empty(shape, attrs["dtype"])
    launch_aipp(xd, params, parity, y, t, s, **launch_options)
    s.synchronize()
    return y.copy_to_host()


def aipp_reference(image: np.ndarray, attrs: dict) -> np.ndarray:
    """numpy AIPP of YUV420SP / RGB888 / YUV400 uint8 images, written from the documented steps
    (channel swap -> crop -> CSC `>> 8` -> (x - mean - min) * var_reci), per pixel in integers
    then float32."""
    sw, sh, fmt = attrs["src_w"], attrs["src_h"], attrs["input_format"]
    x0, y0, w, h = attrs["crop_x"], attrs["crop_y"], attrs["crop_w"], attrs["crop_h"]
    img = np.asarray(image, np.uint8).reshape(-1)
    if fmt == "YUV420SP_U8":
        img = img.reshape(-1, sh * 3 // 2, sw)
        yy, xx = np.mgrid[y0:y0 + h, x0:x0 + w]
        pair = (xx // 2) * 2                              # the (U, V) pair of each column
        u = img[:, sh + yy // 2, pair].astype(np.int64)
        v = img[:, sh + yy // 2, pair + 1].astype(np.int64)
        if attrs["rbuv_swap"]:
            u, v = v, u
        src = [img[:, yy, xx].astype(np.int64), u, v]
    elif fmt == "RGB888_U8":
        img = img.reshape(-1, sh, sw, 3)[:, y0:y0 + h, x0:x0 + w].astype(np.int64)
        order = (2, 1, 0) if attrs["rbuv_swap"] else (0, 1, 2)
        src = [img[..., k] for k in order]
    else:
        src = [img.reshape(-1, sh, sw)[:, y0:y0 + h, x0:x0 + w].astype(np.int64)]
    if attrs["csc"]:
        m, ib, ob = attrs["matrix"], attrs["input_bias"], attrs["output_bias"]
        src = [np.clip(np.floor_divide(sum(m[c][j] * (src[j] - ib[j]) for j in range(3)), 256)
                       + ob[c], 0, 255) for c in range(3)]
    out = [(s.astype(np.float32) - np.float32(sub)) * np.float32(var)
           for s, sub, var in zip(src[:attrs["channels"]], attrs["sub"], attrs["var_reci"])]
    return np.stack(out, 1).astype(attrs["dtype"])


class AippOp:
    """The `Aipp` model op on the AI Core (kernels.model_ops registers it): YUV420SP configs;
    the others run on the AI CPU (rt.dvpp.aipp)."""

    def supports(self, node, specs):
        a = node["attrs"]
        return supported(a) and specs.outputs[0][1] == a["dtype"] and \
            specs.inputs[0][1] == "uint8"

    def prepare(self, node, specs):
        a = node["attrs"]
        t = aipp_tiling(a, specs.outputs[0][0][0])
        return t, rt.to_device(aipp_params(a)), rt.to_device(parity_row(t.tile))

    def launch(self, node, state, ins, outs, workspace, stream):
        t, params, parity = state
        launch_aipp(ins[0], params, parity, outs[0], t, stream)
