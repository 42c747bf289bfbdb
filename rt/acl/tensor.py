"""Tensor descriptions (`aclTensorDesc`) of pyACL's top level: `acl.create_tensor_desc`,
`acl.destroy_tensor_desc`, `acl.get_tensor_desc_*`, `acl.get_data_type_size`.

As in pyACL, `create_tensor_desc` returns a handle (0 when it fails), the getters return plain
values (`get_tensor_desc_dim_v2`: `(dim, ret)`), destroy returns nothing. A failing call logs an
ASCENDCL error line and keeps its message for `acl.get_recent_err_msg()`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_INVALID_PARAM, ACL_ERROR_INVALID_RESOURCE_HANDLE
from ..graph.onnx_types import NUMPY_TO_ACL
from . import constants as C
from .handles import HandleTable, fail

ACL_TO_NUMPY = {v: k for k, v in NUMPY_TO_ACL.items()}
FORMAT_NAMES = {C.ACL_FORMAT_UNDEFINED: "UNDEFINED", C.ACL_FORMAT_NCHW: "NCHW",
                C.ACL_FORMAT_NHWC: "NHWC", C.ACL_FORMAT_ND: "ND",
                C.ACL_FORMAT_NC1HWC0: "NC1HWC0", C.ACL_FORMAT_FRACTAL_Z: "FRACTAL_Z",
                C.ACL_FORMAT_NC1HWC0_C04: "NC1HWC0_C04", C.ACL_FORMAT_HWCN: "HWCN",
                C.ACL_FORMAT_NDHWC: "NDHWC", C.ACL_FORMAT_FRACTAL_NZ: "FRACTAL_NZ",
                C.ACL_FORMAT_NCDHW: "NCDHW", C.ACL_FORMAT_NDC1HWC0: "NDC1HWC0",
                C.ACL_FRACTAL_Z_3D: "FRACTAL_Z_3D"}

_handles = HandleTable("", 0x5C0000001000, ACL_ERROR_INVALID_RESOURCE_HANDLE)


class TensorDesc:
    """What an aclTensorDesc holds: ACL data type, dims, ACL format, name."""
    kind = "tensor desc"

    def __init__(self, data_type: int, dims: tuple, fmt: int):
        self.data_type, self.dims, self.format, self.name = data_type, dims, fmt, ""
        self.const = None           # numpy value set by acl.set_tensor_const

    @property
    def dtype(self) -> str:
        return ACL_TO_NUMPY[self.data_type]

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES[self.format]

    @property
    def size(self) -> int:
        return math.prod(self.dims) * np.dtype(self.dtype).itemsize if self.dims else \
            np.dtype(self.dtype).itemsize


def desc_of(handle, api: str) -> TensorDesc:
    """The TensorDesc of a live handle, else AclError naming `api` (for acl.op)."""
    return _handles.get(handle, TensorDesc, api)


def _int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def create_tensor_desc(data_type: int, dims, format: int) -> int:  # noqa: A002 (pyACL's name)
    """Mirrors `aclCreateTensorDesc(dataType, numDims, dims, format)`: the desc handle, or 0."""
    api = "acl.create_tensor_desc"
    try:
        if data_type not in ACL_TO_NUMPY:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: data_type must be an aclDataType "
                           f"(ACL_FLOAT=0, ACL_FLOAT16=1, ...), got data_type={data_type!r}")
        if format not in FORMAT_NAMES:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: format must be an aclFormat "
                           f"(ACL_FORMAT_ND=2, ACL_FORMAT_NCHW=0, ...), got format={format!r}")
        dims = list(dims) if isinstance(dims, (list, tuple, np.ndarray)) else dims
        if not isinstance(dims, list) or not all(_int(d) and d >= -1 for d in dims):
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: dims must be a list of ints >= 0 "
                           f"(-1: unknown), got dims={dims!r}")
        return _handles.new(TensorDesc(int(data_type), tuple(int(d) for d in dims), int(format)))
    except AclError as e:
        fail(e, api)
        return 0


def destroy_tensor_desc(desc: int) -> None:
    """Mirrors `aclDestroyTensorDesc` (no return value in pyACL)."""
    try:
        _handles.get(desc, TensorDesc, "destroy_tensor_desc")
        _handles.drop(desc)
    except AclError as e:
        fail(e, "acl.destroy_tensor_desc")


def _getter(api: str, default, fn):
    try:
        return fn()
    except AclError as e:
        fail(e, f"acl.{api}")
        return default


def get_tensor_desc_type(desc: int) -> int:
    return _getter("get_tensor_desc_type", C.ACL_DT_UNDEFINED,
                   lambda: desc_of(desc, "get_tensor_desc_type").data_type)


def get_tensor_desc_format(desc: int) -> int:
    return _getter("get_tensor_desc_format", C.ACL_FORMAT_UNDEFINED,
                   lambda: desc_of(desc, "get_tensor_desc_format").format)


def get_tensor_desc_size(desc: int) -> int:
    """Bytes of the tensor described (0 if a dim is unknown, -1)."""
    def size():
        d = desc_of(desc, "get_tensor_desc_size")
        return 0 if any(x < 0 for x in d.dims) else d.size
    return _getter("get_tensor_desc_size", 0, size)


def get_tensor_desc_element_count(desc: int) -> int:
    def count():
        d = desc_of(desc, "get_tensor_desc_element_count")
        return 0 if any(x < 0 for x in d.dims) else math.prod(d.dims)
    return _getter("get_tensor_desc_element_count", 0, count)


def get_tensor_desc_num_dims(desc: int) -> int:
    return _getter("get_tensor_desc_num_dims", 0,
                   lambda: len(desc_of(desc, "get_tensor_desc_num_dims").dims))


def _dim(desc, index, api):
    dims = desc_of(desc, api).dims
    if not _int(index) or not 0 <= index < len(dims):
        raise AclError(ACL_ERROR_INVALID_PARAM, f"acl.{api}: index must be in [0, {len(dims)}), "
                       f"got index={index!r}")
    return dims[index]


def get_tensor_desc_dim(desc: int, index: int) -> int:
    """Mirrors the deprecated `aclGetTensorDescDim`: the dim, or -1 on a bad call."""
    return _getter("get_tensor_desc_dim", -1, lambda: _dim(desc, index, "get_tensor_desc_dim"))


def get_tensor_desc_dim_v2(desc: int, index: int):
    """Mirrors `aclGetTensorDescDimV2`: `(dim, ret)`."""
    try:
        return _dim(desc, index, "get_tensor_desc_dim_v2"), C.ACL_SUCCESS
    except AclError as e:
        return -1, fail(e, "acl.get_tensor_desc_dim_v2")


def set_tensor_desc_name(desc: int, name: str) -> None:
    def run():
        desc_of(desc, "set_tensor_desc_name").name = str(name)
    _getter("set_tensor_desc_name", None, run)


def get_tensor_desc_name(desc: int) -> str:
    return _getter("get_tensor_desc_name", "", lambda: desc_of(desc, "get_tensor_desc_name").name)


def get_data_type_size(data_type: int) -> int:
    """Mirrors `aclDataTypeSize`: bytes per element (0 for an unknown type)."""
    return np.dtype(ACL_TO_NUMPY[data_type]).itemsize if data_type in ACL_TO_NUMPY else 0


data_type_size = get_data_type_size      # pyACL's name of aclDataTypeSize


def set_tensor_const(desc: int, data, length: int) -> int:
    """Mirrors `aclSetTensorConst(desc, dataBuffer, length)`: the tensor's value, copied now
    from host memory (a pointer, or a numpy array), marks it constant: single ops compiled with
    ``is_const`` inputs match it by value. Returns ret."""
    api = "acl.set_tensor_const"
    try:
        d = desc_of(desc, "set_tensor_const")
        if any(x < 0 for x in d.dims) or not _int(length) or length != d.size:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{api}: length must be the desc's size "
                           f"{d.size} ({d.dtype}{list(d.dims)}), got length={length!r}")
        value = np.empty(max(1, math.prod(d.dims)), d.dtype)
        _mem.memcpy(value, data, int(length))
        d.const = value.reshape(d.dims)
        return C.ACL_SUCCESS
    except AclError as e:
        return fail(e, api)


__all__ = ["create_tensor_desc", "destroy_tensor_desc", "get_tensor_desc_type",
           "get_tensor_desc_format", "get_tensor_desc_size", "get_tensor_desc_element_count",
           "get_tensor_desc_num_dims", "get_tensor_desc_dim", "get_tensor_desc_dim_v2",
           "set_tensor_desc_name", "get_tensor_desc_name", "get_data_type_size",
           "data_type_size", "set_tensor_const"]
