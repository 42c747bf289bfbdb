"""`asc.lib.runtime` of pyasc (`import asc.lib.runtime as rt`), over our runtime `rt`.

Names, signatures and behaviours follow pyasc (python/asc/lib/runtime/interface.py): the runtime
initialises itself on first use and selects device 0 (`_lazy_init`); `current_stream()` is the
current device's stream; `malloc/memcpy/free/synchronize` are AscendCL's. Handles are ours: a
stream is an `rt.Stream`, memory an `rt.DevicePtr` (pyasc hands out `ctypes.c_void_p`; both
convert with `int(...)`/`.value`, and ctypes pointers are accepted wherever pyasc takes one).
Device binaries (`register_device_binary_kernel`, `launch_kernel`, ...) are not supported: kernels
are launched with `kernel[block_dim, stream](...)`.
"""
from __future__ import annotations

import ctypes
import logging
import os
from typing import Any, Iterable, Optional, Union

import rt as _rt

from . import enums as config
from .support import (CoreType, DeviceInfoType, DeviceModuleType, Function, Kernel,  # noqa: F401
                      MagicElf, MallocPolicy, MemcpyKind, Memory, MemorySizes, MemoryType,
                      MsprofTaskType, ProfilingCommandHandle, Stream)

logger = logging.getLogger("ascendc.pyasc_compat")

class _State:
    model = True
    soc_version = config.Platform.Ascend910B1
    custom_lib_prefix: Optional[str] = None
    initialized = False
    allocs: dict = {}


_state = _State()


def _not_supported(api: str, why: str = "") -> NotImplementedError:
    return NotImplementedError(f"asc.lib.runtime.{api} is not supported by ascend-emu"
                               + (f": {why}" if why else ""))


def _soc_name(platform: config.Platform) -> str:
    name = config.Platform(platform).value
    if name not in _rt.SOCS:
        raise ValueError(f"set_platform: platform {name!r} has no emulated SoC profile in "
                         f"ascend-emu; supported: {sorted(_rt.SOCS)}")
    return name


def _lazy_init(need_device=True) -> None:
    """Initialise rt and select device 0 on first use, as pyasc's `_lazy_init` does."""
    if need_device:
        _rt.ensure_device()
    else:
        try:
            _rt.device_count()
        except _rt.AclError:
            _rt.ensure_device()
    _state.initialized = True


def _addr(handle) -> Any:
    """A pyasc memory handle (ctypes pointer, int, rt pointer, array) as rt takes it."""
    if isinstance(handle, ctypes.c_void_p):
        return int(handle.value or 0)
    if isinstance(handle, ctypes.Array):
        return ctypes.addressof(handle)
    return handle


# -- backend and platform ------------------------------------------------------------------------
def use_model(custom_lib_prefix: Optional[str] = None) -> None:
    _state.model = True
    _state.custom_lib_prefix = custom_lib_prefix


def use_npu(custom_lib_prefix: Optional[str] = None) -> None:
    _state.model = False
    _state.custom_lib_prefix = custom_lib_prefix


def set_soc_version(soc_version: config.Platform) -> None:
    """Select the emulated SoC (`ASCEND_EMU_SOC` for this process). A device already open with
    another SoC is reset and reopened with the new one (its memory is released)."""
    name = _soc_name(soc_version)
    _state.soc_version = config.Platform(soc_version)
    os.environ["ASCEND_EMU_SOC"] = name
    try:        # a device already open (by pyasc's runtime or anything else in the process)
        dev = _rt.current_device()
    except _rt.AclError:
        return
    if _rt.get_soc_name() != name:
        logger.info("set_platform: device %d reopened as %s", dev, name)
        _rt.reset_device(dev)
        _rt.set_device(dev)


def get_soc_version() -> config.Platform:
    return _state.soc_version


def is_initialized() -> bool:
    return _state.initialized


def is_available() -> bool:
    return True


def is_model() -> bool:
    return _state.model


def magic_elf_value(core_type: CoreType) -> int:
    if not isinstance(core_type, CoreType):
        raise RuntimeError("Core type is not supported!")
    return {CoreType.AiCore: MagicElf.RT_DEV_BINARY_MAGIC_ELF,
            CoreType.VectorCore: MagicElf.RT_DEV_BINARY_MAGIC_ELF_AIVEC,
            CoreType.CubeCore: MagicElf.RT_DEV_BINARY_MAGIC_ELF_AICUBE}.get(
        core_type, MagicElf.RT_DEV_BINARY_MAGIC_ELF_AICPU).value


def msprof_task_type(core_type: CoreType) -> int:
    if not isinstance(core_type, CoreType):
        raise RuntimeError("Core type is not supported!")
    return {CoreType.AiCore: MsprofTaskType.MSPROF_TASK_TYPE_AI_CORE,
            CoreType.VectorCore: MsprofTaskType.MSPROF_TASK_TYPE_AIV,
            CoreType.CubeCore: MsprofTaskType.MSPROF_TASK_TYPE_AI_CORE}.get(
        core_type, MsprofTaskType.MSPROF_TASK_TYPE_AI_CPU).value


# -- devices and streams -------------------------------------------------------------------------
def check_device_handle(device_id: int) -> None:
    if isinstance(device_id, int) and device_id >= 0:
        return
    raise RuntimeError(f"Device handle should be int >= 0, but '{device_id}' with "
                       f"{type(device_id)} type was given")


def default_device() -> int:
    return 0


def current_device() -> int:
    _lazy_init()
    return _rt.current_device()


def current_stream(device_id: Optional[int] = None) -> _rt.Stream:
    """The stream kernels of this thread launch on (the device's default stream)."""
    _lazy_init()
    if device_id is not None:
        check_device_handle(device_id)
    return _rt.default_stream(device_id)


def current_platform() -> str:
    _lazy_init(need_device=False)
    return _rt.get_soc_name()


def device_count() -> int:
    _lazy_init(need_device=False)
    return _rt.device_count()


_INFO = {(DeviceModuleType.RT_MODULE_TYPE_AICORE, DeviceInfoType.INFO_TYPE_CORE_NUM):
         _rt.DevAttr.AICORE_CORE_NUM,
         (DeviceModuleType.RT_MODULE_TYPE_VECTOR_CORE, DeviceInfoType.INFO_TYPE_CORE_NUM):
         _rt.DevAttr.VECTOR_CORE_NUM,
         (DeviceModuleType.RT_MODULE_TYPE_AICORE, DeviceInfoType.INFO_TYPE_CUBE_NUM):
         _rt.DevAttr.CUBE_CORE_NUM,
         (DeviceModuleType.RT_MODULE_TYPE_AICPU, DeviceInfoType.INFO_TYPE_CORE_NUM):
         _rt.DevAttr.AICPU_CORE_NUM}


def device_info(module_type: DeviceModuleType, info_type: DeviceInfoType,
                device_id: Optional[int] = None) -> int:
    _lazy_init()
    device_id = current_device() if device_id is None else device_id
    check_device_handle(device_id)
    attr = _INFO.get((DeviceModuleType(module_type), DeviceInfoType(info_type)))
    if attr is None:
        raise _not_supported("device_info", f"({module_type}, {info_type}); supported: "
                                            f"{[(m.name, i.name) for m, i in _INFO]}")
    return _rt.get_device_info(device_id, attr)


def reset_device(device_id: Optional[int] = None) -> None:
    if device_id is None:
        try:
            device_id = _rt.current_device()
        except _rt.AclError:
            return
    check_device_handle(device_id)
    _rt.reset_device(device_id)


def set_device(device_id: int) -> None:
    check_device_handle(device_id)
    _lazy_init(need_device=False)
    _rt.set_device(device_id)


def create_stream(priority: int = 0) -> _rt.Stream:
    _lazy_init()
    return _rt.Stream(priority)


def destroy_stream(stream_handle: Optional[_rt.Stream]) -> None:
    if stream_handle is not None:
        stream_handle.destroy()


def synchronize(stream_handle: Optional[_rt.Stream] = None, timeout: int = 0) -> None:
    _lazy_init()
    stream = current_stream() if stream_handle is None else stream_handle
    stream.synchronize(timeout if timeout > 0 else -1)


def synchronize_device() -> None:
    _lazy_init()
    _rt.synchronize_device()


# -- memory --------------------------------------------------------------------------------------
def malloc(size: int, memory_type: MemoryType = MemoryType.RT_MEMORY_DEFAULT,
           policy: MallocPolicy = MallocPolicy.RT_MEMORY_POLICY_NONE) -> _rt.DevicePtr:
    if size <= 0:
        raise RuntimeError("Malloc size must be greater than 0!")
    _lazy_init()
    ptr = _rt.malloc(int(size))
    _state.allocs[int(ptr)] = ptr
    return ptr


def free(mem_handle) -> None:
    _lazy_init()
    addr = int(_addr(mem_handle))
    _rt.free(addr)
    _state.allocs.pop(addr, None)


def free_mem() -> None:
    """Free every allocation made through this module that is still live."""
    for addr in tuple(_state.allocs):
        free(addr)


_KIND = {MemcpyKind.RT_MEMCPY_HOST_TO_HOST: _rt.MemcpyKind.HOST_TO_HOST,
         MemcpyKind.RT_MEMCPY_HOST_TO_DEVICE: _rt.MemcpyKind.HOST_TO_DEVICE,
         MemcpyKind.RT_MEMCPY_DEVICE_TO_HOST: _rt.MemcpyKind.DEVICE_TO_HOST,
         MemcpyKind.RT_MEMCPY_DEVICE_TO_DEVICE: _rt.MemcpyKind.DEVICE_TO_DEVICE,
         MemcpyKind.RT_MEMCPY_HOST_TO_DEVICE_EX: _rt.MemcpyKind.HOST_TO_DEVICE,
         MemcpyKind.RT_MEMCPY_DEVICE_TO_HOST_EX: _rt.MemcpyKind.DEVICE_TO_HOST}


def memcpy(mem_dst_handle, dst_nbytes: int, mem_src_handle, src_nbytes: int,
           kind: MemcpyKind) -> None:
    if dst_nbytes <= 0 or src_nbytes <= 0:
        raise RuntimeError("Memcopy src and dst size must be greater than 0!")
    if src_nbytes > dst_nbytes:
        raise RuntimeError(f"Memcopy src size ({src_nbytes}) must not exceed dst size "
                           f"({dst_nbytes})")
    _lazy_init()
    _rt.memcpy(_addr(mem_dst_handle), _addr(mem_src_handle), int(src_nbytes),
               _KIND.get(MemcpyKind(kind), _rt.MemcpyKind.DEFAULT))


def copy_data_to_device(src_mem_handle, nbytes: int) -> _rt.DevicePtr:
    dst = malloc(nbytes, MemoryType.RT_MEMORY_HBM)
    memcpy(dst, nbytes, src_mem_handle, nbytes, MemcpyKind.RT_MEMCPY_HOST_TO_DEVICE)
    return dst


def copy_data_from_device(mem_dst_handle, mem_src_handle, nbytes: int) -> None:
    memcpy(mem_dst_handle, nbytes, mem_src_handle, nbytes, MemcpyKind.RT_MEMCPY_DEVICE_TO_HOST)


# -- what a device binary needs: not here --------------------------------------------------------
_BINARY = "ascend-emu has no device binaries; launch kernels with kernel[block_dim, stream](...)"


def register_device_binary_kernel(kernel_binary: bytes, core_type_id: int):
    raise _not_supported("register_device_binary_kernel", _BINARY)


def unregister_device_binary_kernel(kernel_handle):
    raise _not_supported("unregister_device_binary_kernel", _BINARY)


def register_function(kernel_handle, fn_name: str, mode: int):
    raise _not_supported("register_function", _BINARY)


def launch_kernel(fn_handle, block_num: int, args: Iterable[Any], num_args: Optional[int] = None,
                  sm_desc: Optional[Union[int, ctypes.c_uint64]] = None,
                  stream_handle: Optional[_rt.Stream] = None) -> None:
    raise _not_supported("launch_kernel", _BINARY)


def c2c_ctrl_addr() -> int:
    raise _not_supported("c2c_ctrl_addr", "no cross-core control registers are emulated")


def set_pro_switch(command_type, device_id: Optional[int] = None, conf: int = 0b11111):
    raise _not_supported("set_pro_switch", "profile with `with rt.profile() as prof:`")


def current_tick() -> Optional[int]:
    """pyasc: the CA model's cycle counter (None on an NPU); the emulator has none."""
    return None


def acl_init():
    _lazy_init(need_device=False)


def acl_finalize():
    pass


def npu_utils():
    return None


__all__ = [
    "use_model", "use_npu", "is_initialized", "is_available", "is_model", "magic_elf_value",
    "check_device_handle", "default_device", "current_device", "current_stream",
    "current_platform", "device_count", "device_info", "reset_device", "set_device",
    "create_stream", "destroy_stream", "register_device_binary_kernel",
    "unregister_device_binary_kernel", "register_function", "malloc", "memcpy",
    "copy_data_to_device", "copy_data_from_device", "launch_kernel", "synchronize", "free",
    "synchronize_device", "c2c_ctrl_addr", "set_pro_switch", "current_tick", "acl_init",
    "acl_finalize", "set_soc_version", "npu_utils", "msprof_task_type", "get_soc_version",
    "free_mem", "Stream", "Memory", "Kernel", "Function", "CoreType", "DeviceModuleType",
    "DeviceInfoType", "MemorySizes", "ProfilingCommandHandle", "MsprofTaskType", "MemoryType",
    "MallocPolicy", "MemcpyKind",
]
