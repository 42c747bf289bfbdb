"""Offline models: `rt.Model` (load, describe, execute on a stream; its dynamic gears and shapes
in `dynamic`) and the op registry through which kernels above `rt` run model nodes. The file
format and the AI CPU op set live in `rt.graph` (re-exported here). See docs/models.md."""
from ..graph.format import FORMAT_VERSION, pack, parse
from .model import Model, TensorDesc, query_size
from .registry import Specs, register_aicore, load_op_libraries
from ..graph.aicpu import OPS as AICPU_OPS

__all__ = ["FORMAT_VERSION", "pack", "parse", "Model", "TensorDesc", "query_size", "Specs",
           "register_aicore", "load_op_libraries", "AICPU_OPS"]
