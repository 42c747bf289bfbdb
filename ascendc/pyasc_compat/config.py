"""`asc.runtime.config` of pyasc: `Backend`, `Platform`, `KernelType`, `set_platform`.

Names and values as pyasc spells them (python/asc/runtime/config.py). `set_platform` selects the
emulated SoC profile (`rt.soc`): the platform's name becomes `ASCEND_EMU_SOC` for this process,
which every later device and launch reads. Both backends run on the emulator: `Backend.Model`
(pyasc's CA model) and `Backend.NPU` behave the same here.
"""
from __future__ import annotations

from typing import Optional, Union

from . import npu_device
from . import runtime as rt
from .enums import Backend, KernelType, Platform

__all__ = ["Backend", "Platform", "KernelType", "set_platform"]


def set_platform(backend: Union[Backend, str], soc_version: Optional[Platform] = None,
                 device_id: Optional[int] = None, check=True) -> None:
    """pyasc's `config.set_platform`: Model defaults to Ascend910B1 (as pyasc does); NPU takes the
    current device's platform and checks `soc_version` against it."""
    backend = Backend(backend)
    if backend == Backend.Model:
        if soc_version is None:
            soc_version = Platform.Ascend910B1
        rt.use_model()
    else:
        soc_ver = Platform(rt.current_platform())
        if soc_version is not None and Platform(soc_version) != soc_ver:
            raise ValueError(f"Input soc version: {soc_version} is different from actual: "
                             f"{soc_ver}")
        soc_version = soc_ver
        rt.use_npu()
        npu_device.activate_when_torch_imported()
    rt.set_soc_version(Platform(soc_version))
    if device_id is not None:
        rt.set_device(device_id)
    if check and not rt.is_available():
        raise RuntimeError("Runtime library is not available! ")
