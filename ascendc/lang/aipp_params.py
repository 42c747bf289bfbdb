"""Parameter structs of AIPP in kernels (pyasc python/asc/language/core/aipp_types.py and
core/types.py LoadImageToLocalParams: same names, fields, order and defaults).

`AippParams(dtype, padding_params, swap_params, single_line_params, dtc_params,
c_padding_params, csc_params)` bundles the six sub-structs; `dtype` (asc.int8 or asc.float16, the
`U` of Ascend C's `AippParams<U>`) is required, as in pyasc, and the sub-structs default to their
own defaults (pyasc's None). In interpret mode a kernel dtype is stored as its storage dtype,
which is what compiled kernels hold, so the primitives see one representation.
"""
from collections import namedtuple

from .dtypes import DataType


def _struct(name, spec, doc):
    cls = namedtuple(name, [f for f, _ in spec], defaults=[d for _, d in spec])
    cls.__doc__ = doc
    return cls


AippPaddingParams = _struct("AippPaddingParams", [
    ("padding_mode", 0), ("padding_value_ch0", 0), ("padding_value_ch1", 0),
    ("padding_value_ch2", 0), ("padding_value_ch3", 0)],
    "AIPP area padding: mode (0: constant) and the value of each output channel (dtype U).")
AippSwapParams = _struct("AippSwapParams", [
    ("is_swap_rb", False), ("is_swap_uv", False), ("is_swap_ax", False)],
    "AIPP channel swaps: R<->B (RGB888/XRGB8888), U<->V (YUV420SP), X to the end (XRGB8888).")
AippSingleLineParams = _struct("AippSingleLineParams", [("is_single_line_copy", False)],
                               "AIPP single-line mode (not emulated: must stay False).")
AippDataTypeConvParams = _struct("AippDataTypeConvParams", [
    ("dtc_mean_ch0", 0), ("dtc_mean_ch1", 0), ("dtc_mean_ch2", 0),
    ("dtc_min_ch0", 0.0), ("dtc_min_ch1", 0.0), ("dtc_min_ch2", 0.0),
    ("dtc_var_ch0", 1.0), ("dtc_var_ch1", 1.0), ("dtc_var_ch2", 1.0), ("dtc_round_mode", 0)],
    "AIPP data type conversion: out_c = (v_c - mean_c - min_c) * var_c (mean uint8, min and "
    "var float16).")
AippChannelPaddingParams = _struct("AippChannelPaddingParams", [
    ("c_padding_mode", 0), ("c_padding_value", 0)],
    "AIPP channel padding: mode 0 pads each pixel to C0 (32 bytes), mode 1 to 4 channels, "
    "with c_padding_value (dtype U).")
_CSC = ([("is_enable_csc", False)] +
        [(f"csc_matrix_r{r}_c{c}", 0) for r in range(3) for c in range(3)] +
        [(f"csc_bias_in_{i}", 0) for i in range(3)] + [(f"csc_bias_out_{i}", 0) for i in range(3)])
AippColorSpaceConvParams = _struct("AippColorSpaceConvParams", _CSC,
                                   "AIPP colour space conversion: a 3x3 int16 matrix (row r = "
                                   "output channel r) and uint8 input / output biases.")

_AippParamsBase = namedtuple("AippParams", [
    "dtype", "padding_params", "swap_params", "single_line_params", "dtc_params",
    "c_padding_params", "csc_params"],
    defaults=[AippPaddingParams(), AippSwapParams(), AippSingleLineParams(),
              AippDataTypeConvParams(), AippChannelPaddingParams(), AippColorSpaceConvParams()])
(_PAD, _SWAP, _SINGLE, _DTC, _CPAD, _CSC_DEFAULT) = _AippParamsBase._field_defaults.values()


class AippParams(_AippParamsBase):
    """Mirrors Ascend C's AippParams<U> (pyasc asc.AippParams): dtype U (asc.int8 or
    asc.float16) and the six sub-structs. Compiled kernels build it as a plain namedtuple."""
    __slots__ = ()

    def __new__(cls, dtype, padding_params=_PAD, swap_params=_SWAP, single_line_params=_SINGLE,
                dtc_params=_DTC, c_padding_params=_CPAD, csc_params=_CSC_DEFAULT):
        # (the signature is the fields': Numba folds a constructor's arguments by it)
        if isinstance(dtype, DataType):
            dtype = dtype.storage
        subs = (padding_params, swap_params, single_line_params, dtc_params, c_padding_params,
                csc_params)
        subs = [cls._field_defaults[f] if v is None else v      # pyasc: None = the defaults
                for f, v in zip(cls._fields[1:], subs)]
        return super().__new__(cls, dtype, *subs)


LoadImageToLocalParams = _struct("LoadImageToLocalParams", [
    ("horiz_size", 2), ("vert_size", 2), ("horiz_start_pos", 0), ("vert_start_pos", 0),
    ("src_horiz_size", 2), ("top_pad_size", 0), ("bot_pad_size", 0), ("left_pad_size", 0),
    ("right_pad_size", 0), ("sid", 0)],
    "load_image_to_local: the crop window (sizes and start in pixels) of a source image "
    "src_horiz_size pixels wide, and the padding around it (pixels).")
