"""HCCL's enums, its error type and its environment settings (`hccl_types.h`).

`HcclResult` codes are what the facade (`rt.acl.hccl`) returns; the Pythonic API (`rt.hccl`)
raises `HcclError`, an `rt.AclError` whose `code` is the `HcclResult` value (HCCL's codes are a
separate space from ACL's: `HcclError.code == 9` is `HCCL_E_TIMEOUT`, not an ACL code).
"""
from __future__ import annotations

import enum
import os

import numpy as np

from ..errors import AclError, set_recent_err_msg

try:                                     # numpy has no bfloat16; ml_dtypes is a dependency of rt
    from ml_dtypes import bfloat16 as _bf16
except ImportError:                      # pragma: no cover - ml_dtypes is in pyproject
    _bf16 = None


class HcclResult(enum.IntEnum):
    """Mirrors `HcclResult` (hccl_types.h)."""
    HCCL_SUCCESS = 0
    HCCL_E_PARA = 1
    HCCL_E_PTR = 2
    HCCL_E_MEMORY = 3
    HCCL_E_INTERNAL = 4
    HCCL_E_NOT_SUPPORT = 5
    HCCL_E_NOT_FOUND = 6
    HCCL_E_UNAVAIL = 7
    HCCL_E_SYSCALL = 8
    HCCL_E_TIMEOUT = 9
    HCCL_E_OPEN_FILE_FAILURE = 10
    HCCL_E_TCP_CONNECT = 11
    HCCL_E_ROCE_CONNECT = 12
    HCCL_E_TCP_TRANSFER = 13
    HCCL_E_ROCE_TRANSFER = 14
    HCCL_E_RUNTIME = 15
    HCCL_E_DRV = 16
    HCCL_E_PROFILING = 17
    HCCL_E_CCE = 18
    HCCL_E_NETWORK = 19
    HCCL_E_AGAIN = 20
    HCCL_E_REMOTE = 21
    HCCL_E_SUSPENDING = 22
    HCCL_E_OPRETRY_FAIL = 23
    HCCL_E_OOM = 24
    HCCL_E_IN_STATUS = 1041


class HcclDataType(enum.IntEnum):
    """Mirrors `HcclDataType`."""
    HCCL_DATA_TYPE_INT8 = 0
    HCCL_DATA_TYPE_INT16 = 1
    HCCL_DATA_TYPE_INT32 = 2
    HCCL_DATA_TYPE_FP16 = 3
    HCCL_DATA_TYPE_FP32 = 4
    HCCL_DATA_TYPE_INT64 = 5
    HCCL_DATA_TYPE_UINT64 = 6
    HCCL_DATA_TYPE_UINT8 = 7
    HCCL_DATA_TYPE_UINT16 = 8
    HCCL_DATA_TYPE_UINT32 = 9
    HCCL_DATA_TYPE_FP64 = 10
    HCCL_DATA_TYPE_BFP16 = 11
    HCCL_DATA_TYPE_INT128 = 12
    HCCL_DATA_TYPE_RESERVED = 255


class HcclReduceOp(enum.IntEnum):
    """Mirrors `HcclReduceOp`."""
    HCCL_REDUCE_SUM = 0
    HCCL_REDUCE_PROD = 1
    HCCL_REDUCE_MAX = 2
    HCCL_REDUCE_MIN = 3
    HCCL_REDUCE_RESERVED = 255


#: HcclDataType -> numpy dtype, for the types the emulator moves (INT128 and the fp8 family are
#: not supported: numpy has no such dtypes).
DTYPES: dict[int, np.dtype] = {
    HcclDataType.HCCL_DATA_TYPE_INT8: np.dtype(np.int8),
    HcclDataType.HCCL_DATA_TYPE_INT16: np.dtype(np.int16),
    HcclDataType.HCCL_DATA_TYPE_INT32: np.dtype(np.int32),
    HcclDataType.HCCL_DATA_TYPE_FP16: np.dtype(np.float16),
    HcclDataType.HCCL_DATA_TYPE_FP32: np.dtype(np.float32),
    HcclDataType.HCCL_DATA_TYPE_INT64: np.dtype(np.int64),
    HcclDataType.HCCL_DATA_TYPE_UINT64: np.dtype(np.uint64),
    HcclDataType.HCCL_DATA_TYPE_UINT8: np.dtype(np.uint8),
    HcclDataType.HCCL_DATA_TYPE_UINT16: np.dtype(np.uint16),
    HcclDataType.HCCL_DATA_TYPE_UINT32: np.dtype(np.uint32),
    HcclDataType.HCCL_DATA_TYPE_FP64: np.dtype(np.float64),
}
if _bf16 is not None:
    DTYPES[HcclDataType.HCCL_DATA_TYPE_BFP16] = np.dtype(_bf16)
_CODES = {v: HcclDataType(k) for k, v in DTYPES.items()}

#: Friendly spellings accepted wherever a data type is expected.
_NAMES = {"int8": 0, "int16": 1, "int32": 2, "fp16": 3, "float16": 3, "fp32": 4, "float32": 4,
          "int64": 5, "uint64": 6, "uint8": 7, "uint16": 8, "uint32": 9, "fp64": 10,
          "float64": 10, "bf16": 11, "bfloat16": 11, "int128": 12}
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3}


class HcclError(AclError):
    """A failed HCCL call: `code` is the `HcclResult` (e.g. 9 = HCCL_E_TIMEOUT)."""

    def __init__(self, code: int, message: str):
        code = int(code)
        try:
            name = HcclResult(code).name
        except ValueError:
            name = "HCCL_E_UNKNOWN"
        self.code = code
        self.message = message
        self.result = name
        set_recent_err_msg(f"[{code} {name}] {message}")
        RuntimeError.__init__(self, f"{message} (HCCL error {code}, {name})")

    def __reduce__(self):
        return (type(self), (self.code, self.message))


def _supported() -> list[str]:
    return sorted(k for k, v in _NAMES.items() if v in DTYPES)


def dtype_of(dtype, api: str) -> np.dtype:
    """The numpy dtype of `dtype` (an `HcclDataType`, its int, a numpy dtype or a name)."""
    if isinstance(dtype, str):
        dtype = _NAMES.get(dtype.lower(), dtype)
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        dt = DTYPES.get(int(dtype))
        if dt is not None:
            return dt
        raise HcclError(HcclResult.HCCL_E_NOT_SUPPORT if int(dtype) in (12, 14, 15, 16, 17)
                        else HcclResult.HCCL_E_PARA,
                        f"{api}: data type must be one of {_supported()}, got dtype={dtype!r}")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in _CODES:
        raise HcclError(HcclResult.HCCL_E_PARA,
                        f"{api}: data type must be one of {_supported()}, got dtype={dtype!r}")
    return dt


def hccl_dtype(dt: np.dtype) -> HcclDataType:
    """The `HcclDataType` of a numpy dtype the emulator supports."""
    return _CODES[np.dtype(dt)]


def op_of(op, api: str) -> int:
    """The `HcclReduceOp` value of `op` (the enum, its int or 'sum'/'prod'/'max'/'min')."""
    if isinstance(op, str):
        op = _OPS.get(op.lower(), op)
    if isinstance(op, (int, np.integer)) and not isinstance(op, bool) and 0 <= int(op) <= 3:
        return int(op)
    raise HcclError(HcclResult.HCCL_E_PARA,
                    f"{api}: op must be HcclReduceOp SUM/PROD/MAX/MIN (0..3) or "
                    f"'sum'/'prod'/'max'/'min', got op={op!r}")


def env_seconds(name: str, default: float) -> float:
    """An HCCL timeout from the environment, in seconds (HCCL takes integers; fractions are
    accepted here so tests can be quick). 0 means the default; invalid values raise E_PARA."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if v < 0:
        raise HcclError(HcclResult.HCCL_E_PARA,
                        f"hccl: {name} must be a number of seconds >= 0, got {name}={raw!r}")
    return v or default


#: HCCL's defaults: HCCL_CONNECT_TIMEOUT 120 s, HCCL_EXEC_TIMEOUT 1836 s (Atlas A2).
CONNECT_TIMEOUT_DEFAULT = 120.0
EXEC_TIMEOUT_DEFAULT = 1836.0


def connect_timeout() -> float:
    return env_seconds("HCCL_CONNECT_TIMEOUT", CONNECT_TIMEOUT_DEFAULT)


def exec_timeout() -> float:
    return env_seconds("HCCL_EXEC_TIMEOUT", EXEC_TIMEOUT_DEFAULT)
