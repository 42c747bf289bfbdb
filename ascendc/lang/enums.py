"""Enums with pyasc's names and Ascend C's values (usable as constants in compiled kernels)."""
from enum import IntEnum


class TPosition(IntEnum):
    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11
    LCM = 11
    MAX = 12


class Hardware(IntEnum):
    GM = 0
    UB = 1
    L1 = 2
    L0A = 3
    L0B = 4
    L0C = 5
    BIAS = 6
    FIXBUF = 7
    MAX = 8


class PipeID(IntEnum):
    PIPE_S = 0
    PIPE_V = 1
    PIPE_M = 2
    PIPE_MTE1 = 3
    PIPE_MTE2 = 4
    PIPE_MTE3 = 5
    PIPE_ALL = 6
    PIPE_MTE4 = 7
    PIPE_MTE5 = 8
    PIPE_V2 = 9
    PIPE_FIX = 10


HardEvent = IntEnum("HardEvent", [(n, i) for i, n in enumerate(
    "MTE2_MTE1 MTE1_MTE2 MTE1_M M_MTE1 MTE2_V V_MTE2 MTE3_V V_MTE3 M_V V_M V_V MTE3_MTE1 MTE1_MTE3 "
    "MTE1_V MTE2_M M_MTE2 V_MTE1 M_FIX FIX_M MTE3_MTE2 MTE2_MTE3 S_V V_S S_MTE2 MTE2_S S_MTE3 "
    "MTE3_S MTE2_FIX FIX_MTE2 FIX_S M_S FIX_MTE3 MTE1_FIX FIX_MTE1 FIX_FIX".split())])
HardEvent.__doc__ = "Ascend C HardEvent (set_flag/wait_flag), values 0..34."


class RoundMode(IntEnum):
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_FLOOR = 2
    CAST_CEIL = 3
    CAST_ROUND = 4
    CAST_TRUNC = 5
    CAST_ODD = 6


class CMPMODE(IntEnum):
    LT = 0
    GT = 1
    EQ = 2
    LE = 3
    GE = 4
    NE = 5


class SELMODE(IntEnum):
    VSEL_CMPMASK_SPR = 0
    VSEL_TENSOR_SCALAR_MODE = 1
    VSEL_TENSOR_TENSOR_MODE = 2


SelMode = SELMODE


class ReduceOrder(IntEnum):
    ORDER_VALUE_INDEX = 0
    ORDER_INDEX_VALUE = 1
    ORDER_ONLY_VALUE = 2
    ORDER_ONLY_INDEX = 3


class QuantModes(IntEnum):
    NoQuant = 0
    F322F16 = 1
    F322BF16 = 2
    DEQF16 = 3
    VDEQF16 = 4
    QF322B8_PRE = 5
    VQF322B8_PRE = 6
    REQ8 = 7
    VREQ8 = 8


class FixpipeConfig(IntEnum):
    cfg_row_major = 0   # NZ -> ND on the way out
    cfg_nz = 1


class CubeFormat(IntEnum):
    ND = 0
    NZ = 1


class MaskMode(IntEnum):
    NORMAL = 0
    COUNTER = 1


class GatherMaskMode(IntEnum):
    """Ascend C's GatherMaskMode (pyasc `asc.GatherMaskMode`): reserved, DEFAULT only."""
    DEFAULT = 0


class AippInputFormat(IntEnum):
    """Ascend C's AippInputFormat (pyasc core/enums.py, same values): the source image format of
    set_aipp_functions."""
    YUV420SP_U8 = 0
    XRGB8888_U8 = 1
    RGB888_U8 = 4
    YUV400_U8 = 9
