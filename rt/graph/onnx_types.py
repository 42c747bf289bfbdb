"""ONNX TensorProto element types <-> numpy dtypes <-> ACL data types (no onnx import)."""
import numpy as np

ONNX_TO_NUMPY = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                 7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}
# aclDataType (acl_base.h): ACL_FLOAT=0, ACL_FLOAT16=1, ACL_INT8=2, ACL_INT32=3, ACL_UINT8=4,
# ACL_INT16=6, ACL_UINT16=7, ACL_UINT32=8, ACL_INT64=9, ACL_UINT64=10, ACL_DOUBLE=11, ACL_BOOL=12
NUMPY_TO_ACL = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6,
                "uint16": 7, "uint32": 8, "int64": 9, "uint64": 10, "float64": 11, "bool": 12}


def numpy_dtype(onnx_type: int) -> np.dtype:
    if onnx_type not in ONNX_TO_NUMPY:
        raise NotImplementedError(f"ONNX element type {onnx_type} is not supported "
                                  f"(supported: {sorted(ONNX_TO_NUMPY)})")
    return np.dtype(ONNX_TO_NUMPY[onnx_type])
