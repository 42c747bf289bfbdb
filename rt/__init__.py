"""rt: an AscendCL-like runtime on the CPU (devices, memory, streams, events, launch, profiler).

Mirrors AscendCL's `aclrt*` calls in Python spelling; `rt.acl` is the pyACL-compatible facade.

`import rt` loads the AscendCL core only; the subsystems (`rt.hccl`, `rt.dvpp`, `rt.model` with
`rt.Model` / `rt.TensorDesc`, `rt.npu`, `rt.atc`, `rt.graph`, `rt.acl`) load on first use
(docs/runtime.md, "Import cost").
"""
import importlib as _importlib

from .errors import AclError, KernelFault, NpuTraceLimitError, get_recent_err_msg
from .soc import SocSpec, SOCS, get_soc
from .device import (init, finalize, device_count, set_device, reset_device, current_device,
                     synchronize_device, get_soc_name, get_device_info, get_mem_info, DevAttr,
                     ensure_device)
from .memory import (DeviceBuffer, DevicePtr, HostPtr, MemMallocPolicy, MemcpyKind, malloc, free,
                     malloc_host, free_host, memset, memcpy, memcpy_2d, memory_stats,
                     memory_summary, empty_cache)
from .array import DeviceArray, to_device, device_empty, device_zeros
from .hostcache import host_empty, empty_host_cache, host_cache_stats
from .stream import (Stream, Event, default_stream, current_stream, ACL_STOP_ON_FAILURE,
                     ACL_CONTINUE_ON_FAILURE)
from .copy import memcpy_async, memset_async, memcpy_2d_async
from .callback import subscribe_report, unsubscribe_report, launch_callback, process_report
from .kernel import KernelBinary
from .sched import Task, KernelTask, BlockRun, StreamHook
from .launch import launch, default_core_count
from .optimeout import set_op_execute_timeout, get_op_execute_timeout
from .profiler import profile, Profiler, npu_view_on

# loaded on first use (PEP 562): subpackage -> itself, name -> the subpackage defining it
_SUBSYSTEMS = ("hccl", "dvpp", "model", "npu", "atc", "graph", "acl")
_LAZY_NAMES = {"Model": "model", "TensorDesc": "model"}

__all__ = [
    "AclError", "KernelFault", "NpuTraceLimitError", "get_recent_err_msg", "SocSpec", "SOCS",
    "get_soc",
    "init", "finalize", "device_count", "set_device", "reset_device", "current_device",
    "synchronize_device", "get_soc_name", "get_device_info", "get_mem_info", "DevAttr",
    "ensure_device", "default_core_count",
    "DeviceBuffer", "DevicePtr", "HostPtr", "MemMallocPolicy", "MemcpyKind", "malloc", "free",
    "malloc_host", "free_host", "memset", "memcpy", "memcpy_2d", "memory_stats", "memory_summary",
    "empty_cache",
    "DeviceArray", "to_device", "device_empty", "device_zeros",
    "host_empty", "empty_host_cache", "host_cache_stats",
    "Stream", "Event", "default_stream", "current_stream", "ACL_STOP_ON_FAILURE",
    "ACL_CONTINUE_ON_FAILURE", "memcpy_async", "memset_async", "memcpy_2d_async",
    "subscribe_report", "unsubscribe_report", "launch_callback", "process_report",
    "KernelBinary", "Task", "KernelTask", "BlockRun", "StreamHook",
    "launch", "profile", "Profiler", "npu_view_on", "Model", "TensorDesc",
    "set_op_execute_timeout", "get_op_execute_timeout",
]


def __getattr__(name: str):
    if name in _SUBSYSTEMS:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_NAMES:
        value = getattr(_importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBSYSTEMS) | set(_LAZY_NAMES))
