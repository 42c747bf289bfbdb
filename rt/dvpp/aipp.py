"""AIPP arithmetic in numpy: the AI CPU implementation of the `Aipp` model op that
`python -m rt.atc --insert_op_conf aipp.cfg` inserts in front of a model input (docs/dvpp.md).

The node's attrs (written by rt/atc/aipp.py, JSON values) hold the static configuration:
`input_format` ("YUV420SP_U8", "RGB888_U8", "YUV400_U8"), `src_w`, `src_h`, the crop window
`crop_x`, `crop_y`, `crop_w`, `crop_h`, `csc` (bool), `matrix` (3x3 ints, row r = output channel
r), `input_bias`, `output_bias` (3 ints), `rbuv_swap` (bool), `sub` (per output channel
mean_chn + min_chn, float) and `var_reci` (per output channel, float), `channels` (the model's C)
and `dtype` (the model input's dtype).

The order is the hardware's: channel swap -> crop -> CSC -> normalisation. CSC in integers:
`v_c = clip(floor(sum_j matrix[c][j] * (x_j - input_bias_j) / 256) + output_bias_c, 0, 255)`
(the documented `>> 8`); normalisation in float32: `(v_c - (mean_c + min_c)) * var_reci_c`; the
result is NCHW in `dtype`. YUV420SP chroma is shared by each 2x2 block (nearest upsampling).
"""
from __future__ import annotations

import numpy as np

FORMATS = ("YUV420SP_U8", "RGB888_U8", "YUV400_U8")


def input_shape(fmt: str, n: int, src_w: int, src_h: int) -> tuple:
    """The uint8 model input that replaces the original one: the image as DVPP writes it."""
    if fmt == "YUV420SP_U8":
        return (n, src_h * 3 // 2, src_w, 1)
    return (n, src_h, src_w, 3 if fmt == "RGB888_U8" else 1)


def source_channels(attrs: dict, image: np.ndarray) -> list:
    """The crop window's input channels (after the rbuv swap), each (N, crop_h, crop_w) int64."""
    fmt, sw, sh = attrs["input_format"], attrs["src_w"], attrs["src_h"]
    x, y, w, h = attrs["crop_x"], attrs["crop_y"], attrs["crop_w"], attrs["crop_h"]
    img = np.asarray(image, np.uint8).reshape(input_shape(fmt, -1, sw, sh))
    if fmt == "YUV420SP_U8":
        luma = img[:, :sh, :, 0]
        uv = img[:, sh:, :, 0]
        chans = [luma, np.repeat(np.repeat(uv[:, :, 0::2], 2, 1), 2, 2),
                 np.repeat(np.repeat(uv[:, :, 1::2], 2, 1), 2, 2)]
        if attrs["rbuv_swap"]:
            chans[1], chans[2] = chans[2], chans[1]
    elif fmt == "RGB888_U8":
        chans = [img[..., k] for k in ((2, 1, 0) if attrs["rbuv_swap"] else (0, 1, 2))]
    else:
        chans = [img[..., 0]]
    return [c[:, y:y + h, x:x + w].astype(np.int64) for c in chans]


def apply(attrs: dict, image: np.ndarray) -> np.ndarray:
    """The AIPP output (N, C, crop_h, crop_w) in attrs["dtype"] for a uint8 image batch."""
    chans = source_channels(attrs, image)
    if attrs["csc"]:
        m, ib, ob = attrs["matrix"], attrs["input_bias"], attrs["output_bias"]
        d = [c - b for c, b in zip(chans, ib)]
        chans = [np.clip((m[r][0] * d[0] + m[r][1] * d[1] + m[r][2] * d[2]) // 256 + ob[r],
                         0, 255) for r in range(3)]
    chans = chans[:attrs["channels"]]
    out = np.stack([(c.astype(np.float32) - np.float32(s)) * np.float32(v)
                    for c, s, v in zip(chans, attrs["sub"], attrs["var_reci"])], axis=1)
    return out.astype(attrs["dtype"])
