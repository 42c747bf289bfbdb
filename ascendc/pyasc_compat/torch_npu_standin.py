"""A `torch_npu` for machines without one: `import torch_npu` in a pyasc script run by
`python -m ascendc.run` or under the pytest plugin gives this module, over the emulated "npu"
device (npu_device.py) and its device module (npu_module.py, which is also `torch.npu`).

It is found last: the finder sits at the END of `sys.meta_path`, so any `torch_npu` on
`sys.path` (Ascend's real one, or a script's own shim) is imported instead; and when the real
torch_npu is installed nothing here is installed at all. Importing it imports torch and
registers the device. Modules: `torch_npu`, `torch_npu.npu`, `torch_npu.npu.utils`
(docs/torch-npu.md lists the calls).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

from . import npu_device

NAMES = ("torch_npu", "torch_npu.npu", "torch_npu.npu.utils")


class TorchNpuUnavailable(ImportError):
    pass


def _make_torch_npu() -> types.ModuleType:
    import torch
    if not npu_device.activate():
        raise TorchNpuUnavailable(
            "torch_npu (ascend-emu stand-in): torch's PrivateUse1 backend must be free for the "
            f"emulated 'npu' device, got it registered as "
            f"{torch._C._get_privateuse1_backend_name()!r}", name="torch_npu")
    npu = torch.npu
    mod = types.ModuleType("torch_npu", __doc__)
    mod.__path__ = []
    mod.__ascend_emu__ = True
    mod.__version__ = f"{torch.__version__.split('+')[0]}.emu"
    mod.npu = npu
    mod.npu.__path__ = []
    return mod


class TorchNpuFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `torch_npu` and its submodules when nothing earlier on sys.meta_path did."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in NAMES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self,
                                              is_package=fullname != "torch_npu.npu.utils")

    def create_module(self, spec):
        if spec.name == "torch_npu":
            return _make_torch_npu()
        root = sys.modules.get("torch_npu") or _make_torch_npu()
        return root.npu if spec.name == "torch_npu.npu" else root.npu.utils

    def exec_module(self, module):
        pass


def install() -> bool:
    """Offer the stand-in for this process (last on sys.meta_path); False when a real
    torch_npu is installed (it is never shadowed)."""
    if npu_device.real_torch_npu_installed():
        return False
    if not any(isinstance(f, TorchNpuFinder) for f in sys.meta_path):
        sys.meta_path.append(TorchNpuFinder())
    return True


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchNpuFinder)]
    for n in NAMES:
        m = sys.modules.get(n)
        if m is not None and getattr(m, "__ascend_emu__", False):
            del sys.modules[n]


__all__ = ["install", "uninstall", "TorchNpuFinder", "TorchNpuUnavailable"]
