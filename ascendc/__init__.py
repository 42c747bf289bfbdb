"""ascendc: Ascend C kernels in Python with pyasc's names (`import ascendc as asc`).

Kernels run compiled by Numba (one nogil function per AI Core, blocks spread over rt's core pool)
or interpreted as plain Python (`ASCENDC_INTERPRET=1` or `@asc.jit(interpret=True)`).
"""
from .lang.dtypes import (DataType, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                          float16, float32, float64, bfloat16, half, float_, double, int_)
from .lang.enums import (TPosition, Hardware, PipeID, HardEvent, RoundMode, CMPMODE, SELMODE,
                         SelMode, ReduceOrder, QuantModes, FixpipeConfig, CubeFormat, MaskMode)
from .lang.params import (BinaryRepeatParams, UnaryRepeatParams, BrcbRepeatParams, DataCopyParams,
                          DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, Nd2NzParams,
                          LoadData2DParams, MmadParams, FixpipeParamsV220)
from .lang.api import (GlobalAddress, GlobalTensor, LocalTensor, TPipe, TQue, TBuf, ConstExpr,
                       FUNCTIONS as _OPS)
from .lang.errors import KernelError, CompileError
from .options import CheckedOptions, set_default_checked
from .jit import jit, JitFunction
from . import adv, host, lib   # after jit: asc.adv's helpers are @asc.jit functions

globals().update(_OPS)   # asc.add, asc.data_copy, ..., asc.printf, asc.range (lang/surface.py)

__all__ = [
    "jit", "JitFunction", "DataType", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "float32", "float64", "bfloat16", "half", "float_", "double",
    "int_", "TPosition", "Hardware", "PipeID", "HardEvent", "RoundMode", "CMPMODE", "SELMODE",
    "SelMode", "ReduceOrder", "QuantModes", "FixpipeConfig", "CubeFormat", "MaskMode",
    "BinaryRepeatParams", "UnaryRepeatParams", "BrcbRepeatParams", "DataCopyParams",
    "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyPadParams", "Nd2NzParams",
    "LoadData2DParams", "MmadParams", "FixpipeParamsV220", "GlobalAddress", "GlobalTensor",
    "LocalTensor", "TPipe", "TQue", "TBuf", "ConstExpr", "KernelError", "CompileError", "CheckedOptions", "set_default_checked", "adv",
    "host", "lib",
] + sorted(_OPS)
