"""The kernel language's namespace: everything a kernel reaches as `asc.<name>`.

`ascendc` re-exports it (and adds `asc.adv`, `asc.lib`, `asc.host`); libraries written in the
kernel language (`ascendc.adv`) import this module as `asc`, below the package, so importing
`ascendc` has no import circle. The compiler recognises it by `__kernel_language__`.
"""
__kernel_language__ = True

from .lang.dtypes import (DataType, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                          float16, float32, float64, bfloat16, half, float_, double, int_)
from .lang.enums import (TPosition, Hardware, PipeID, HardEvent, RoundMode, CMPMODE, SELMODE,
                         SelMode, ReduceOrder, QuantModes, FixpipeConfig, CubeFormat, MaskMode)
from .lang.enums import AippInputFormat, GatherMaskMode
from .lang.aipp_params import (AippPaddingParams, AippSwapParams, AippSingleLineParams,
                               AippDataTypeConvParams, AippChannelPaddingParams,
                               AippColorSpaceConvParams, AippParams, LoadImageToLocalParams)
from .lang.params import (BinaryRepeatParams, UnaryRepeatParams, BrcbRepeatParams, DataCopyParams,
                          DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, Nd2NzParams,
                          LoadData2DParams, MmadParams, FixpipeParamsV220, CopyRepeatParams,
                          TransposeParamsExt, TransDataTo5HDParams, TransposeType,
                          LayoutMode, GatherMaskParams,
                          LoadData3DParamsV2)
from .lang.api import (GlobalAddress, GlobalTensor, LocalTensor, LocalTensorAuto, TPipe, TQue,
                       TBuf, ConstExpr, Property, DEFAULT_C0_SIZE, ONE_BLK_SIZE, TOTAL_L1_SIZE,
                       TOTAL_L0C_SIZE, FUNCTIONS as _OPS)
from .lang.errors import KernelError, CompileError
from .options import CheckedOptions, set_default_checked
from .jit import jit, JitFunction

globals().update(_OPS)   # asc.add, asc.data_copy, ..., asc.printf, asc.range (lang/surface.py)

__all__ = [
    "jit", "JitFunction", "DataType", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "float32", "float64", "bfloat16", "half", "float_", "double",
    "int_", "TPosition", "Hardware", "PipeID", "HardEvent", "RoundMode", "CMPMODE", "SELMODE",
    "SelMode", "ReduceOrder", "QuantModes", "FixpipeConfig", "CubeFormat", "MaskMode",
    "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams", "DataCopyParams",
    "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyPadParams", "Nd2NzParams",
    "LoadData2DParams", "MmadParams", "FixpipeParamsV220", "CopyRepeatParams",
    "TransposeParamsExt", "TransDataTo5HDParams", "TransposeType", "LayoutMode",
    "GlobalAddress", "GlobalTensor",
    "LocalTensor", "LocalTensorAuto", "TPipe", "TQue", "TBuf", "ConstExpr", "KernelError",
    "CompileError",
    "CheckedOptions", "set_default_checked", "Property", "DEFAULT_C0_SIZE", "ONE_BLK_SIZE",
    "TOTAL_L1_SIZE", "TOTAL_L0C_SIZE",
    "AippInputFormat", "AippPaddingParams", "AippSwapParams", "AippSingleLineParams",
    "AippDataTypeConvParams", "AippChannelPaddingParams", "AippColorSpaceConvParams",
    "AippParams", "LoadImageToLocalParams", "GatherMaskMode", "GatherMaskParams",
    "LoadData3DParamsV2",
] + sorted(_OPS)
