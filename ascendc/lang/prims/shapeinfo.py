"""Shape information of local tensors: pyasc's `asc.array`, `asc.ShapeInfo`, `asc.get_shape_size`
and `LocalTensor.set_shape_info` / `get_shape_info` (Ascend C `ShapeInfo`, kernel_struct_data.h;
pyasc core/array.py, core/types.py, core/tensor.py).

A ShapeInfo is Ascend C's struct as an int64 array of SHAPE_INFO_LEN: shapeDim, shape[8],
originalShapeDim, originalShape[8], dataFormat (the constructor without an original shape copies
the shape into it, as Ascend C's does). An `asc.array` is a small numpy array of its dtype.

A LocalTensor carries its ShapeInfo in Ascend C; here the core's state keeps one record per
tensor address (CORE_STATE.shapes: byte offset in the core's memory, bytes, the ShapeInfo), reset
at every block: views of the same address share it (as copies of a C++ LocalTensor do), and a
tensor allocated again at an address keeps the record last set there until set_shape_info is
called again. Readers: asc.adv.softmax (lang/prims/softmax.py).
"""
import numpy as np
from numba.extending import overload

from ..core import local_offset, prim
from ..errors import FAULT, fault, KernelError
from ..state import MAX_SHAPES, STATE

__all__ = ["array_new", "shape_info_new", "get_shape_size", "set_shape_info", "get_shape_info"]

MAX_DIM = 8                         # Ascend C K_MAX_SHAPE_DIM
SHAPE_INFO_LEN = 2 * MAX_DIM + 3    # dim, shape[8], original dim, original shape[8], format
S_DIM, S_SHAPE, S_ODIM, S_OSHAPE, S_FORMAT = 0, 1, MAX_DIM + 1, MAX_DIM + 2, 2 * MAX_DIM + 2
R_OFF, R_BYTES, R_INFO = 0, 1, 2    # columns of a CORE_STATE.shapes record


# ---- asc.array(dtype, length_or_values, fill_value=None) ---------------------------------------

@prim
def _array_fill(dtype, n, fill):
    if n <= 0:
        fault("asc.array: length must be a positive integer, got length={}", n)
        raise KernelError(FAULT)
    a = np.empty(n, dtype)
    a[:] = fill
    return a


@prim
def _array_values(dtype, values):
    a = np.empty(len(values), dtype)
    for i in range(len(values)):
        a[i] = values[i]
    return a


@prim
def _array_bad_fill(dtype, fill):
    a = np.empty(0, dtype)
    if a.size == 0:         # always: typed as returning the array the call site expects
        fault("asc.array: fill_value must not be given together with initial values, got "
              "fill_value={}", fill)
        raise KernelError(FAULT)
    return a


def array_new(ctx, dtype, length_or_values, fill_value):
    """pyasc's `asc.array(dtype, length, fill_value=None)` / `asc.array(dtype, values)`: a small
    array in the kernel (Python dispatcher; njit code uses the overload)."""
    if isinstance(length_or_values, (int, np.integer)) and not isinstance(length_or_values, bool):
        return _array_fill(dtype, int(length_or_values), 0 if fill_value is None else fill_value)
    if fill_value is not None:
        raise KernelError("asc.array: fill_value must not be given together with initial "
                          f"values, got fill_value={fill_value!r}")
    vals = tuple(length_or_values)
    if not vals:
        raise KernelError("asc.array: values must not be empty, got 0 values")
    a = np.empty(len(vals), dtype)
    a[:] = [v for v in vals]
    return a


@overload(array_new)
def _array_new(ctx, dtype, length_or_values, fill_value):
    from numba import types
    if isinstance(length_or_values, types.Integer):
        if isinstance(fill_value, (types.NoneType, types.Omitted)) or fill_value is None:
            return lambda ctx, dtype, length_or_values, fill_value: _array_fill(
                dtype, length_or_values, 0)
        return lambda ctx, dtype, length_or_values, fill_value: _array_fill(
            dtype, length_or_values, fill_value)
    if isinstance(length_or_values, (types.BaseTuple, types.Array)):
        if not (isinstance(fill_value, (types.NoneType, types.Omitted)) or fill_value is None):
            return lambda ctx, dtype, length_or_values, fill_value: _array_bad_fill(
                dtype, fill_value)
        return lambda ctx, dtype, length_or_values, fill_value: _array_values(
            dtype, length_or_values)
    return None


# ---- asc.ShapeInfo(shape, original_shape=None, data_format=ND) --------------------------------

@prim
def _put_dims(info, at_dim, at_shape, shape):
    n = len(shape)
    if n < 1 or n > MAX_DIM:
        fault("asc.ShapeInfo: shape must have 1 to {} dims, got {} dims", MAX_DIM, n)
        raise KernelError(FAULT)
    info[at_dim] = n
    for i in range(n):
        if shape[i] < 0:
            fault("asc.ShapeInfo: dims must be >= 0, got dim {} = {}", i, shape[i])
            raise KernelError(FAULT)
        info[at_shape + i] = shape[i]


@prim
def _shape_info(shape, original, data_format):
    info = np.zeros(SHAPE_INFO_LEN, np.int64)
    _put_dims(info, S_DIM, S_SHAPE, shape)
    _put_dims(info, S_ODIM, S_OSHAPE, original)
    info[S_FORMAT] = data_format
    return info


def shape_info_new(ctx, shape, original_shape, data_format):
    """Mirrors Ascend C `ShapeInfo(shapeDim, shape, [originalShapeDim, originalShape,]
    dataFormat)` as pyasc's `asc.ShapeInfo(shape, original_shape=None, data_format=ND)` builds it
    from `asc.array`s (Python dispatcher; njit code uses the overload)."""
    if shape is None:                      # ShapeInfo(): shapeDim 0
        return np.zeros(SHAPE_INFO_LEN, np.int64)
    shape = np.asarray(shape, np.int64)
    orig = shape if original_shape is None else np.asarray(original_shape, np.int64)
    return _shape_info(shape, orig, int(data_format))


@overload(shape_info_new)
def _shape_info_new(ctx, shape, original_shape, data_format):
    from numba import types
    if isinstance(shape, (types.NoneType, types.Omitted)) or shape is None:
        return lambda ctx, shape, original_shape, data_format: np.zeros(SHAPE_INFO_LEN,
                                                                         np.int64)
    if isinstance(original_shape, (types.NoneType, types.Omitted)) or original_shape is None:
        return lambda ctx, shape, original_shape, data_format: _shape_info(
            shape, shape, data_format)
    return lambda ctx, shape, original_shape, data_format: _shape_info(
        shape, original_shape, data_format)


@prim
def get_shape_size(ctx, shape_info):
    """Mirrors Ascend C `GetShapeSize(shapeInfo)`: the product of the shape's dims."""
    n = np.int64(1)
    for i in range(shape_info[S_DIM]):
        n *= shape_info[S_SHAPE + i]
    return n


# ---- LocalTensor.set_shape_info / get_shape_info ------------------------------------------------

@prim
def find_shape(ctx, t):
    """Index of the shape record of local tensor `t`'s address in CORE_STATE.shapes, or -1."""
    st = ctx[STATE][0]
    off = local_offset(ctx, t)
    for i in range(st.nshape):
        if st.shapes[i, R_OFF] == off:
            return i
    return -1


@prim
def set_shape_info(ctx, t, shape_info):
    """Mirrors LocalTensor::SetShapeInfo(shapeInfo): the tensor (its address) carries the shape."""
    st = ctx[STATE][0]
    off = local_offset(ctx, t)
    if off < 0:
        fault("LocalTensor.set_shape_info: the tensor must be a LocalTensor (local memory), got "
              "a GM tensor")
        raise KernelError(FAULT)
    if len(shape_info) != SHAPE_INFO_LEN:
        fault("LocalTensor.set_shape_info: shape_info must be an asc.ShapeInfo ({} values), "
              "got {} values", SHAPE_INFO_LEN, len(shape_info))
        raise KernelError(FAULT)
    i = find_shape(ctx, t)
    if i < 0:
        i = st.nshape
        if i >= MAX_SHAPES:
            fault("LocalTensor.set_shape_info: at most {} tensors of a block can carry shape "
                  "info, got one more", MAX_SHAPES)
            raise KernelError(FAULT)
        st.nshape = i + 1
    st.shapes[i, R_OFF] = off
    st.shapes[i, R_BYTES] = t.size * t.itemsize
    for j in range(SHAPE_INFO_LEN):
        st.shapes[i, R_INFO + j] = shape_info[j]


@prim
def get_shape_info(ctx, t):
    """Mirrors LocalTensor::GetShapeInfo(): the ShapeInfo set on the tensor (all zero, shapeDim
    0, if none was: Ascend C has no default either)."""
    info = np.zeros(SHAPE_INFO_LEN, np.int64)
    i = find_shape(ctx, t)
    if i >= 0:
        st = ctx[STATE][0]
        for j in range(SHAPE_INFO_LEN):
            info[j] = st.shapes[i, R_INFO + j]
    return info
