"""`--insert_op_conf aipp.cfg`: CANN's static AIPP configuration, parsed, checked, and inserted as
an `Aipp` node in front of a model input (docs/dvpp.md, "AIPP").

The file is CANN's prototxt form: one `aipp_op { key: value ... }` block per model input (`#`
comments; `related_input_rank` picks the input, default 0). Known keys are CANN's; a key we do not
know, a bad value, `aipp_mode: dynamic`, and the features not emulated (padding, resize,
rotation, XRGB/YUYV/YUV422 inputs, single-line mode) are refused by name. After insertion the model
input keeps its name but takes the image as DVPP writes it (uint8: YUV420SP NV12 as
(N, H*3/2, W, 1), RGB888 packed as (N, H, W, 3), YUV400 as (N, H, W, 1)); the Aipp node writes the
NCHW tensor the model expected.
"""
from __future__ import annotations

import re

from ..dvpp.aipp import FORMATS, input_shape


class AippConfigError(ValueError):
    """A config ATC refuses (convert() raises it as its AtcError: this module cannot import
    convert.py, which imports it)."""

API = "atc --insert_op_conf"
UNSUPPORTED_FORMATS = ("XRGB8888_U8", "ARGB8888_U8", "RGBX8888_U8", "YUYV_U8", "YUV422SP_U8",
                       "AYUV444_U8", "RAW10", "RAW12", "RAW16", "RAW24")
_BOOL = ("true", "false")
# key -> (kind, default); kinds: "bool", "int", "float", "mode", "format"
KEYS: dict = {"aipp_mode": ("mode", None), "related_input_rank": ("int", 0),
              "input_format": ("format", None), "src_image_size_w": ("int", 0),
              "src_image_size_h": ("int", 0), "crop": ("bool", False),
              "load_start_pos_w": ("int", 0), "load_start_pos_h": ("int", 0),
              "crop_size_w": ("int", 0), "crop_size_h": ("int", 0),
              "csc_switch": ("bool", False), "rbuv_swap_switch": ("bool", False),
              "ax_swap_switch": ("bool", False), "padding": ("bool", False),
              "left_padding_size": ("int", 0), "right_padding_size": ("int", 0),
              "top_padding_size": ("int", 0), "bottom_padding_size": ("int", 0),
              "padding_value": ("float", 0.0), "resize": ("bool", False),
              "resize_output_w": ("int", 0), "resize_output_h": ("int", 0),
              "single_line_mode": ("bool", False), "support_rotation": ("bool", False),
              "max_src_image_size": ("int", 0)}
# CANN's template defaults: the BT.601 narrow-range YUV -> BGR matrix
_MATRIX = ((298, 516, 0), (298, -100, -208), (298, 0, 409))
for _r in range(3):
    for _c in range(3):
        KEYS[f"matrix_r{_r}c{_c}"] = ("int", _MATRIX[_r][_c])
for _i, _b in enumerate((16, 128, 128)):
    KEYS[f"input_bias_{_i}"] = ("int", _b)
    KEYS[f"output_bias_{_i}"] = ("int", (16, 128, 128)[_i])
for _i in range(4):
    KEYS[f"mean_chn_{_i}"] = ("int", 0)
    KEYS[f"min_chn_{_i}"] = ("float", 0.0)
    KEYS[f"var_reci_chn_{_i}"] = ("float", 1.0)
_OFF_FEATURES = ("padding", "resize", "single_line_mode", "support_rotation", "ax_swap_switch")


def _err(what: str, name: str, value) -> AippConfigError:
    return AippConfigError(f"{API}: {what}, got {name}={value!r}")


def _value(key: str, raw: str, where: str):
    kind = KEYS[key][0]
    raw = raw.strip().strip('"')
    try:
        if kind == "bool":
            if raw.lower() not in _BOOL:
                raise ValueError
            return raw.lower() == "true"
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        raise _err(f"{key} ({where}) must be {'true or false' if kind == 'bool' else 'an ' + kind}"
                   if kind != "float" else f"{key} ({where}) must be a number", key, raw) from None
    return raw


def parse_config(text: str) -> list[dict]:
    """aipp.cfg text -> one dict per `aipp_op` block (every known key, defaults filled in).
    Raises AippConfigError naming the key and the value."""
    text = re.sub(r"#[^\n]*", "", text)
    blocks, pos = [], 0
    for m in re.finditer(r"(\w+)\s*\{([^{}]*)\}", text):
        if text[pos:m.start()].strip():
            raise _err("the file must hold only `aipp_op { ... }` blocks", "text",
                       text[pos:m.start()].strip()[:40])
        pos = m.end()
        if m.group(1) != "aipp_op":
            raise _err("blocks must be named aipp_op", "block", m.group(1))
        where = f"aipp_op #{len(blocks)}"
        cfg: dict = {}
        for item in re.finditer(r"(\w+)\s*:\s*(\"[^\"]*\"|[^\s]+)|(\S+)", m.group(2)):
            if item.group(3):
                raise _err(f"entries must look like `key: value` ({where})", "entry",
                           item.group(3))
            key, raw = item.group(1), item.group(2)
            if key not in KEYS:
                raise _err(f"keys must be CANN AIPP keys ({where})", "key", key)
            if key in cfg:
                raise _err(f"each key must appear once ({where})", "key", key)
            cfg[key] = _value(key, raw, where)
        blocks.append(_check(cfg, where))
    if text[pos:].strip():
        raise _err("the file must hold only `aipp_op { ... }` blocks", "text",
                   text[pos:].strip()[:40])
    if not blocks:
        raise _err("the file must hold at least one aipp_op block", "blocks", 0)
    ranks = [b["related_input_rank"] for b in blocks]
    if len(set(ranks)) != len(ranks):
        raise _err("each model input must have one aipp_op block", "related_input_rank", ranks)
    return blocks


def _check(cfg: dict, where: str) -> dict:
    if "aipp_mode" not in cfg:
        raise _err(f"aipp_mode must be given ({where})", "aipp_mode", None)
    if cfg["aipp_mode"] == "dynamic":
        raise _err(f"aipp_mode must be static (dynamic AIPP is not supported) ({where})",
                   "aipp_mode", "dynamic")
    if cfg["aipp_mode"] != "static":
        raise _err(f"aipp_mode must be static or dynamic ({where})", "aipp_mode",
                   cfg["aipp_mode"])
    fmt = cfg.get("input_format")
    if fmt is None:
        raise _err(f"input_format must be given ({where})", "input_format", None)
    if fmt in UNSUPPORTED_FORMATS:
        raise _err(f"input_format must be one of {list(FORMATS)} ({fmt} is not supported yet) "
                   f"({where})", "input_format", fmt)
    if fmt not in FORMATS:
        raise _err(f"input_format must be one of {list(FORMATS)} ({where})", "input_format", fmt)
    out = {k: cfg.get(k, d) for k, (_, d) in KEYS.items()}
    for k in _OFF_FEATURES:
        if out[k]:
            raise _err(f"{k} must be false ({k} is not supported yet) ({where})", k, True)
    for k in ("left_padding_size", "right_padding_size", "top_padding_size",
              "bottom_padding_size"):
        if out[k]:
            raise _err(f"{k} must be 0 (padding is not supported yet) ({where})", k, out[k])
    for k, (kind, _) in KEYS.items():
        v = out[k]
        if kind != "int":
            continue
        lo, hi = (-32768, 32767) if k.startswith("matrix_") else (0, 1 << 30)
        if k.startswith(("input_bias_", "output_bias_", "mean_chn_")):
            hi = 255
        if not lo <= v <= hi:
            raise _err(f"{k} must be in [{lo}, {hi}] ({where})", k, v)
    if fmt == "YUV400_U8" and out["csc_switch"]:
        raise _err(f"csc_switch must be false for YUV400_U8 (one channel) ({where})",
                   "csc_switch", True)
    return out


def _resolve(cfg: dict, in_shape: tuple, in_dtype: str, name: str) -> dict:
    """The node attrs for a model input of (N, C, H, W) `in_shape` (rt.dvpp.aipp's layout)."""
    if len(in_shape) != 4 or in_dtype not in ("float32", "float16"):
        raise _err(f"the AIPP input {name!r} must be a 4-D NCHW float32/float16 tensor",
                   "input", f"{in_dtype}{list(in_shape)}")
    n, c, h, w = in_shape
    fmt = cfg["input_format"]
    cout = 1 if fmt == "YUV400_U8" else 3
    if c != cout:
        raise _err(f"the model input {name!r} must have {cout} channels after AIPP "
                   f"({fmt})", "C", c)
    sw, sh = cfg["src_image_size_w"] or w, cfg["src_image_size_h"] or h
    if cfg["crop"]:
        x, y = cfg["load_start_pos_w"], cfg["load_start_pos_h"]
        cw, ch = cfg["crop_size_w"] or w, cfg["crop_size_h"] or h
    else:
        x, y, cw, ch = 0, 0, sw, sh
    yuv = fmt == "YUV420SP_U8"
    if yuv and (sw % 2 or sh % 2):
        raise _err("src_image_size_w and src_image_size_h must be even for YUV420SP_U8",
                   "src_image_size", f"{sw}x{sh}")
    if yuv and (x % 2 or y % 2):
        raise _err("load_start_pos_w and load_start_pos_h must be even for YUV420SP_U8",
                   "load_start_pos", f"({x}, {y})")
    if x + cw > sw or y + ch > sh:
        raise _err(f"the crop window must lie inside the {sw}x{sh} source image",
                   "crop", f"({x}, {y}) + {cw}x{ch}")
    if (cw, ch) != (w, h):
        raise _err(f"the AIPP output size (crop_size, else src_image_size) must be the model "
                   f"input's {w}x{h} ({name!r})", "output", f"{cw}x{ch}")
    swap = cfg["rbuv_swap_switch"]
    return {"input_format": fmt, "src_w": sw, "src_h": sh, "crop_x": x, "crop_y": y,
            "crop_w": cw, "crop_h": ch, "csc": cfg["csc_switch"], "rbuv_swap": swap,
            "matrix": [[cfg[f"matrix_r{r}c{k}"] for k in range(3)] for r in range(3)],
            # CANN's two CSC forms: YUV -> RGB subtracts input_bias, RGB -> YUV adds output_bias
            "input_bias": [cfg[f"input_bias_{k}"] if yuv else 0 for k in range(3)],
            "output_bias": [cfg[f"output_bias_{k}"] if cfg["csc_switch"] and not yuv else 0
                            for k in range(3)],
            "sub": [float(cfg[f"mean_chn_{k}"]) + cfg[f"min_chn_{k}"] for k in range(cout)],
            "var_reci": [cfg[f"var_reci_chn_{k}"] for k in range(cout)],
            "channels": cout, "dtype": in_dtype}


def insert_aipp(g, conf_path: str, error=AippConfigError, input_format=None) -> list[str]:
    """Read `conf_path` and put one Aipp node in front of each configured input of Graph `g`
    (rt.atc.convert's). Returns the names of the inputs that now take images. Refusals raise
    `error` (convert passes its AtcError) with the message. With `input_format` "NHWC" (ATC's
    --input_format; a TensorFlow model's layout) the model input is (N, H, W, C): the Aipp node's
    NCHW result goes through a Transpose to it."""
    try:
        return _insert(g, conf_path, input_format == "NHWC")
    except AippConfigError as e:
        raise error(str(e)) from None


def _insert(g, conf_path: str, nhwc: bool) -> list[str]:
    try:
        with open(conf_path) as f:
            text = f.read()
    except OSError as e:
        raise _err("the AIPP config file must be readable", "insert_op_conf",
                   f"{conf_path} ({e.strerror})") from None
    done = []
    for cfg in parse_config(text):
        rank = cfg["related_input_rank"]
        if rank >= len(g.inputs):
            raise _err(f"related_input_rank must name a model input (the model has "
                       f"{len(g.inputs)})", "related_input_rank", rank)
        name = g.inputs[rank]
        shape, dt = g.specs[name]
        shape = tuple(shape)
        nchw = (shape[0], shape[3], shape[1], shape[2]) if nhwc and len(shape) == 4 else shape
        attrs = _resolve(cfg, nchw, dt, name)
        inner = name + "::aipp"
        for n in g.nodes:
            n["inputs"] = [inner if i == name else i for i in n["inputs"]]
        g.specs[inner] = (shape, dt)
        g.specs[name] = (input_shape(attrs["input_format"], shape[0], attrs["src_w"],
                                     attrs["src_h"]), "uint8")
        out = inner
        if nchw != shape:
            out = inner + "::nchw"
            g.specs[out] = (nchw, dt)
            g.nodes.insert(0, {"name": f"aipp_{rank}::to_nhwc", "op": "Transpose",
                               "attrs": {"perm": [0, 2, 3, 1]},
                               "inputs": [out], "outputs": [inner]})
        g.nodes.insert(0, {"name": f"aipp_{rank}", "op": "Aipp", "attrs": attrs,
                           "inputs": [name], "outputs": [out]})
        done.append(name)
    return done
