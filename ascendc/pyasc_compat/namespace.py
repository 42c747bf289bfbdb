"""The module a pyasc script gets for `import asc`: the `ascendc` namespace plus what pyasc's
top-level package adds (`CodegenOptions`, `CompileOptions`, `LaunchOptions`, `asc.runtime`,
`asc.lib.runtime`) and a `jit` that detects Matmul kernels as MIX_AIC_1_2, as pyasc does
(`asc.ceildiv`, `asc.property` and the platform constants are the language's own).

Names `ascendc` lacks raise an AttributeError that says so ("not supported by ascend-emu"), so
a kernel using one fails with the name instead of a bare "module has no attribute".
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import ascendc
from ascendc.jit import JitFunction

from . import npu_device


@dataclass
class CodegenOptions:
    """pyasc's codegen options (accepted as `@asc.jit` options; they change nothing here)."""
    capture_exceptions: bool = True
    ir_multithreading: bool = True


@dataclass
class CompileOptions:
    """pyasc's compile options (accepted as `@asc.jit` options; `kernel_type` is recorded, the
    others change nothing here: there is no bisheng, no sync insertion pass, no disk IR)."""
    debug: bool = False
    strip_loc: bool = False
    verify_sync: bool = False
    print_ir_before_all: bool = False
    run_passes: bool = True
    kernel_type: Optional[Any] = None
    opt_level: Optional[int] = 3
    auto_sync: Optional[bool] = True
    auto_sync_log: Optional[str] = ""
    bisheng_options: Optional[Tuple[str]] = None
    always_compile: bool = False
    matmul_cube_only: bool = False
    insert_sync: Optional[bool] = None


@dataclass(frozen=True)
class LaunchOptions:
    core_num: int = 0
    stream: Optional[Any] = None


class PyascKernel(JitFunction):
    """`@asc.jit` as pyasc's: launches bind keyword arguments naming kernel parameters (as every
    `ascendc.jit` kernel does), and a kernel that registers a Matmul is MIX_AIC_1_2 (AIC_ONLY
    with matmul_cube_only=True), as pyasc detects it: launched with block_dim AI Core groups,
    its 2 * block_dim vector instances are numbered [0, 2 * block_dim)."""
    detect_mix_as_pyasc = True

    def launch(self, block_dim, stream, args, kwargs):
        for a in list(args) + list(kwargs.values()):
            refuse_dtype(a)
        # torch tensors on device "npu" (npu_device) go in as the device memory they live in:
        # an asynchronous launch on `stream`, as pyasc's TorchNpuTensorArgument passes data_ptr
        args = tuple(npu_device.as_device_array(a) if npu_device.is_npu_tensor(a) else a
                     for a in args)
        kwargs = {k: npu_device.as_device_array(v) if npu_device.is_npu_tensor(v) else v
                  for k, v in kwargs.items()}
        return super().launch(block_dim, stream, args, kwargs)


# pyasc's DataType names (language/core/dtype.py): an argument of another dtype fails when pyasc
# lowers its type (DataType.to_ir: "Unsupported DataType name: <name>"); native ascendc keeps
# its wider support (bfloat16, bool)
PYASC_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64", "float16", "float32", "float64"})
NOT_IN_PYASC = frozenset({"bfloat16"})        # ascendc names pyasc 1.1.1's `asc` lacks


def _dtype_name(a):
    dt = getattr(a, "dtype", None)
    if dt is None or not hasattr(a, "shape"):
        return None
    name = str(dt)
    return name[6:] if name.startswith("torch.") else name


def refuse_dtype(a) -> None:
    """Raise pyasc's error for a kernel argument (array or tensor) of a dtype pyasc lacks."""
    name = _dtype_name(a)
    if name is not None and name not in PYASC_DTYPES:
        raise ValueError(f"Unsupported DataType name: {name}")


def jit(fn=None, **options):
    """pyasc's `@asc.jit` / `@asc.jit(**options)` (options as in `ascendc.jit`)."""
    if fn is None:
        return lambda f: PyascKernel(f, **options)
    return PyascKernel(fn, **options)


class AscNamespace(types.ModuleType):
    """`asc` for pyasc scripts: attribute reads fall through to `ascendc`."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in NOT_IN_PYASC:
            raise AttributeError(f"asc.{name} (pyasc) is not supported by ascend-emu: module "
                                 f"'asc' has no attribute {name!r}")
        try:
            return getattr(ascendc, name)
        except AttributeError:
            raise AttributeError(f"asc.{name} (pyasc) is not supported by ascend-emu: "
                                 f"module 'asc' has no attribute {name!r}") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(ascendc)))


def make_asc_module(runtime_pkg, lib_pkg, language_pkg) -> AscNamespace:
    mod = AscNamespace("asc", __doc__)
    mod.__kernel_language__ = True
    mod.__path__ = []        # a package: `import asc.runtime.config` finds its submodules
    mod.__all__ = list(ascendc.__all__) + ["CodegenOptions", "CompileOptions", "LaunchOptions"]
    mod.jit = jit
    mod.CodegenOptions = CodegenOptions
    mod.CompileOptions = CompileOptions
    mod.LaunchOptions = LaunchOptions
    for e in ascendc.adv.mmconfig.ENUMS:    # pyasc has them at the top level (core/enums.py)
        setattr(mod, e.__name__, e)
    mod.runtime = runtime_pkg
    mod.lib = lib_pkg
    mod.language = language_pkg
    return mod
