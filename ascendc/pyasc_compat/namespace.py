"""The module a pyasc script gets for `import asc`: the `ascendc` namespace plus what pyasc's
top-level package adds (`CodegenOptions`, `CompileOptions`, `LaunchOptions`, `asc.runtime`,
`asc.lib.runtime`) and a `jit` whose launches take kernel arguments by keyword, as pyasc's do.

Names `ascendc` lacks raise an AttributeError that says so ("not supported by ascend-emu"), so
a kernel using one fails with the name instead of a bare "module has no attribute".
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import ascendc
from ascendc.jit import JitFunction


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
    """`@asc.jit` as pyasc's: `kernel[core_num, stream](*args, **kwargs)` binds keyword arguments
    that name kernel parameters (pyasc binds the call with `inspect.signature(fn).bind`); other
    keywords are jit options."""

    def __getitem__(self, spec):
        launch = super().__getitem__(spec)

        def run(*args, **kwargs):
            args, opts = self.bind_launch_args(args, kwargs)
            return launch(*args, **opts)
        return run

    def bind_launch_args(self, args, kwargs):
        named = {k: kwargs[k] for k in kwargs if k in self.param_names}
        if not named:
            return args, kwargs
        opts = {k: v for k, v in kwargs.items() if k not in named}
        full = list(args)
        for i, name in enumerate(self.param_names):
            if i < len(args):
                if name in named:
                    raise TypeError(f"{self.__name__}: got multiple values for argument "
                                    f"{name!r}")
                continue
            if name not in named:
                raise TypeError(f"{self.__name__}: missing a required argument: {name!r}")
            full.append(named[name])
        return tuple(full), opts


def ceildiv(x: int, y: int) -> int:
    """pyasc's host `asc.ceildiv(x, y)`: (x + y - 1) // y."""
    return (x + y - 1) // y


@dataclass(frozen=True)
class Property:
    """pyasc's platform constant (`asc.TOTAL_L1_SIZE`, ...), read with `asc.property(p)`."""
    name: str
    dtype: Any


DEFAULT_C0_SIZE = Property("::AscendC::DEFAULT_C0_SIZE", ascendc.int32)
ONE_BLK_SIZE = Property("::AscendC::ONE_BLK_SIZE", ascendc.int16)
TOTAL_L1_SIZE = Property("::AscendC::TOTAL_L1_SIZE", ascendc.int32)
TOTAL_L0C_SIZE = Property("::AscendC::TOTAL_L0C_SIZE", ascendc.int32)
PROPERTIES = (DEFAULT_C0_SIZE, ONE_BLK_SIZE, TOTAL_L1_SIZE, TOTAL_L0C_SIZE)


def property(prop: Property) -> int:
    """pyasc's `asc.property(p)`: the value of an Ascend C platform constant for the selected
    SoC (`rt.get_soc()`): DEFAULT_C0_SIZE = 32 (bytes of one C0 block), ONE_BLK_SIZE = 32,
    TOTAL_L1_SIZE / TOTAL_L0C_SIZE = the L1 / L0C capacity. Host code and interpret mode only:
    compiled kernels do not have it yet."""
    import rt
    soc = rt.get_soc()
    values = {"::AscendC::DEFAULT_C0_SIZE": 32, "::AscendC::ONE_BLK_SIZE": soc.block_bytes,
              "::AscendC::TOTAL_L1_SIZE": soc.l1_bytes,
              "::AscendC::TOTAL_L0C_SIZE": soc.l0c_bytes}
    if not isinstance(prop, Property) or prop.name not in values:
        raise ValueError(f"asc.property: prop must be one of asc.DEFAULT_C0_SIZE, "
                         f"ONE_BLK_SIZE, TOTAL_L1_SIZE, TOTAL_L0C_SIZE, got {prop!r}")
    return values[prop.name]


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
    mod.__all__ = list(ascendc.__all__) + ["CodegenOptions", "CompileOptions", "LaunchOptions",
                                            "ceildiv", "property", "Property"]
    mod.jit = jit
    mod.ceildiv = ceildiv
    mod.property = property
    mod.Property = Property
    for p in PROPERTIES:
        setattr(mod, p.name.rsplit(":", 1)[1], p)
    mod.CodegenOptions = CodegenOptions
    mod.CompileOptions = CompileOptions
    mod.LaunchOptions = LaunchOptions
    mod.runtime = runtime_pkg
    mod.lib = lib_pkg
    mod.language = language_pkg
    return mod
