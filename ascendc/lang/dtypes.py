"""Data types of the kernel language and how each is stored.

pyasc names (`asc.float16`, `asc.float32`, ...) are `DataType` objects with `.sizeof()`.
Numba has no CPU float16 and no bfloat16, so inside compiled code those two are *stored* as
single-field record dtypes over uint16 (`F16_STORAGE`, `BF16_STORAGE`); `ld`/`st` convert to and
from float32 with round-to-nearest-even, exactly as numpy / ml_dtypes do. Every other dtype is
stored as itself. Vector primitives read with `ld(a, i)` and write with `st(a, i, v)`, so one
primitive serves every dtype.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from .numba_link import cached_njit

F16_STORAGE = np.dtype([("f16", np.uint16)], align=True)
BF16_STORAGE = np.dtype([("bf16", np.uint16)], align=True)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


class DataType:
    """A kernel-language dtype (pyasc `asc.DataType`): `.sizeof()`, `.is_float()`, `.numpy`.
    `DataType("int32")` (pyasc's spelling, also in kernels) is the dtype of that name."""

    __slots__ = ("name", "numpy", "storage")

    def __init__(self, name: str, numpy_dtype=None, storage=None):
        if numpy_dtype is None:           # by name: one of ALL (or an alias: "half", ...)
            known = {d.name: d for d in ALL}
            known.update(half=half, float=float_, double=double, int=int_)
            d = known.get(name) if isinstance(name, str) else None
            if d is None:
                raise TypeError(f"asc.DataType: name must be one of {sorted(known)}, "
                                f"got name={name!r}")
            name, numpy_dtype, storage = d.name, d.numpy, d.storage
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.storage = np.dtype(storage) if storage is not None else self.numpy

    def sizeof(self) -> int:
        return self.numpy.itemsize

    def is_float(self) -> bool:
        return self.numpy.kind == "f" or self.numpy == BFLOAT16

    def __repr__(self):
        return f"asc.{self.name}"

    def __eq__(self, other):
        return isinstance(other, DataType) and other.numpy == self.numpy

    def __hash__(self):
        return hash(self.numpy)


int8 = DataType("int8", np.int8)
int16 = DataType("int16", np.int16)
int32 = DataType("int32", np.int32)
int64 = DataType("int64", np.int64)
uint8 = DataType("uint8", np.uint8)
uint16 = DataType("uint16", np.uint16)
uint32 = DataType("uint32", np.uint32)
uint64 = DataType("uint64", np.uint64)
float16 = DataType("float16", np.float16, F16_STORAGE)
float32 = DataType("float32", np.float32)
float64 = DataType("float64", np.float64)
bfloat16 = DataType("bfloat16", BFLOAT16, BF16_STORAGE)
half, float_, double, int_ = float16, float32, float64, int32
bool_ = DataType("bool", np.bool_)

ALL = (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64,
       bfloat16)
_BY_NUMPY = {d.numpy: d for d in ALL}
_BY_STORAGE = {d.storage: d for d in ALL}


def from_numpy(dt) -> DataType:
    """The DataType of a numpy dtype (or storage dtype); raises TypeError for unsupported ones."""
    dt = np.dtype(dt)
    d = _BY_NUMPY.get(dt) or _BY_STORAGE.get(dt)
    if d is None:
        raise TypeError(f"asc: dtype must be one of {[x.name for x in ALL]}, got dtype={dt}")
    return d


def as_datatype(x) -> DataType:
    if isinstance(x, DataType):
        return x
    return from_numpy(x)


def storage_view(arr: np.ndarray) -> np.ndarray:
    """View a logical numpy array (float16, bfloat16, ...) with its storage dtype."""
    st = from_numpy(arr.dtype).storage
    return arr if arr.dtype == st else arr.view(st)


def logical_view(arr: np.ndarray) -> np.ndarray:
    """View a storage array with its logical numpy dtype (for printing and host copies)."""
    d = _BY_STORAGE.get(arr.dtype)
    return arr if d is None or d.numpy == arr.dtype else arr.view(d.numpy)


# ---- float16 / bfloat16 bit conversions (round to nearest even) -------------------------------

@cached_njit(nogil=True)
def f16_bits_to_f32(h):
    h = np.uint32(h)
    sign = (h >> np.uint32(15)) << np.uint32(31)
    e = (h >> np.uint32(10)) & np.uint32(0x1F)
    m = h & np.uint32(0x3FF)
    if e == 0:
        f = np.float32(m) * np.float32(5.9604644775390625e-08)  # m * 2**-24
        return -f if sign else f
    if e == 31:
        bits = sign | np.uint32(0x7F800000) | (m << np.uint32(13))
    else:
        bits = sign | ((e + np.uint32(112)) << np.uint32(23)) | (m << np.uint32(13))
    return np.uint32(bits).view(np.float32)


@cached_njit(nogil=True)
def f32_to_f16_bits(f):
    x = np.float32(f).view(np.uint32)
    sign = (x >> np.uint32(16)) & np.uint32(0x8000)
    e = np.int32((x >> np.uint32(23)) & np.uint32(0xFF))
    m = x & np.uint32(0x7FFFFF)
    if e == 255:  # inf / nan
        return np.uint16(sign | np.uint32(0x7C00) | (np.uint32(0x200) if m else np.uint32(0)))
    e = e - 127 + 15
    if e >= 31:
        return np.uint16(sign | np.uint32(0x7C00))
    if e <= 0:
        if e < -10:
            return np.uint16(sign)
        m = m | np.uint32(0x800000)
        shift = np.uint32(14 - e)
        half_v = np.uint32(1) << (shift - np.uint32(1))
        r = m >> shift
        rem = m & ((np.uint32(1) << shift) - np.uint32(1))
        if rem > half_v or (rem == half_v and (r & np.uint32(1))):
            r += np.uint32(1)
        return np.uint16(sign | r)
    r = (np.uint32(e) << np.uint32(10)) | (m >> np.uint32(13))
    rem = m & np.uint32(0x1FFF)
    if rem > np.uint32(0x1000) or (rem == np.uint32(0x1000) and (r & np.uint32(1))):
        r += np.uint32(1)  # may carry into the exponent, which is the correct rounding
    return np.uint16(sign | r)


@cached_njit(nogil=True)
def bf16_bits_to_f32(h):
    return np.uint32(np.uint32(h) << np.uint32(16)).view(np.float32)


@cached_njit(nogil=True)
def f32_to_bf16_bits(f):
    x = np.float32(f).view(np.uint32)
    if (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):  # nan
        return np.uint16((x >> np.uint32(16)) | np.uint32(0x40))
    x = np.uint32(x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1)))
    return np.uint16(x >> np.uint32(16))


# ---- element access used by every primitive ---------------------------------------------------

def _kind(dt):
    if isinstance(dt, types.Record):
        return dt.fields and next(iter(dt.fields))  # "f16" or "bf16"
    return None


def ld(a, i):
    """Element i of a tensor's storage as its compute type (float32 for f16/bf16)."""
    return a[i]


def st(a, i, v):
    """Store v (any number) into element i, converting to the tensor's dtype."""
    a[i] = v


def compute_dtype(a):
    """The numpy dtype arithmetic on tensor `a` is done in (float32 for f16/bf16)."""
    return a.dtype


@intrinsic
def _opaque(typingctx, x):
    """x, as an LLVM `freeze` (no instruction): the optimiser no longer knows the value is what
    memory held. Without it, `a[i] = max(a[i], c)` (any op that may return its loaded input:
    max, min, relu, exp's NaN path) lets LLVM drop the store on that path, and the vectorised
    loop writes with masked stores (vmaskmovps), which AMD's Zen cores run about 12x slower than
    a plain store (0.49 against 0.04 ns an element for an in-place max on a Zen 3 core)."""
    if not isinstance(x, (types.Float, types.Integer, types.Boolean)):
        return None

    def codegen(context, builder, signature, args):
        frozen = ir.instructions.Instruction(builder.block, args[0].type, "freeze", [args[0]])
        builder._insert(frozen)       # llvmlite's IRBuilder has no freeze()
        return frozen
    return x(x), codegen


@overload(ld)
def _ld(a, i):
    k = _kind(a.dtype)
    if k == "f16":
        return lambda a, i: f16_bits_to_f32(a[i].f16)
    if k == "bf16":
        return lambda a, i: bf16_bits_to_f32(a[i].bf16)
    return lambda a, i: _opaque(a[i])


@overload(st)
def _st(a, i, v):
    k = _kind(a.dtype)
    if k == "f16":
        def impl(a, i, v):
            a[i].f16 = f32_to_f16_bits(v)
        return impl
    if k == "bf16":
        def impl(a, i, v):
            a[i].bf16 = f32_to_bf16_bits(v)
        return impl
    nb = a.dtype

    def impl(a, i, v):
        a[i] = nb(v)
    return impl


@overload(compute_dtype)
def _compute_dtype(a):
    if _kind(a.dtype) is not None:
        return lambda a: np.float32
    dt = a.dtype
    return lambda a: dt


def sizeof(d):
    """Bytes of one element of a dtype (DataType, numpy dtype, or a storage dtype in njit)."""
    return as_datatype(d).sizeof()


@overload(sizeof)
def _sizeof(d):
    if isinstance(d, types.DType):
        t = d.dtype
    elif isinstance(d, types.NumberClass):
        t = d.dtype
    else:
        return None
    n = t.size if isinstance(t, types.Record) else t.bitwidth // 8
    return lambda d: n
