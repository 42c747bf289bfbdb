"""Run unmodified pyasc scripts on ascend-emu: `import asc` and its submodules resolve to ours.

`install()` puts a meta-path finder first on `sys.meta_path` for this process only (no package
named `asc` is ever installed, so a real pyasc installation is not shadowed outside the process
that asks for it). The mapping:

| pyasc module                         | here                                             |
|--------------------------------------|--------------------------------------------------|
| `asc`                                | `ascendc` + pyasc's extras (`namespace`)         |
| `asc.runtime.config`                 | `ascendc.pyasc_compat.config` (`set_platform`)   |
| `asc.runtime.jit`                    | `jit`, `JITFunction` (`namespace.PyascKernel`)   |
| `asc.runtime.launcher` / `.compiler` | `LaunchOptions` / `CompileOptions`               |
| `asc.codegen.function_visitor`       | `CodegenOptions` (`.errors`: `CodegenError`)     |
| `asc.lib.runtime` (a package)        | `ascendc.pyasc_compat.runtime` (host runtime)    |
| `asc.lib.runtime.interface`          | the same module                                  |
| `asc.lib.runtime.support`            | `ascendc.pyasc_compat.support` (types, enums)    |
| `asc.lib.host`                       | `ascendc.host` (the Matmul host tiling)          |
| `asc.language` and every module under its `basic`, `core`, `fwk` | the kernel language  |
| `asc.language.adv` and its modules   | `ascendc.adv`                                    |
| `asc.language.core.struct` / `.dtype`| `pyasc_compat.struct` / `KnownTypes` + dtypes    |
| any other `asc.*`                    | a module whose every name is "not supported"     |

A name a mapped module lacks raises ImportError "asc.<module>.<name> (pyasc) is not supported by
ascend-emu" (so `from asc.x import Y` fails at the import line, naming Y).

Used by `python -m ascendc.run script.py` and by the pytest plugin
`ascendc.pyasc_compat.pytest_plugin`; `with pyasc_compat.installed(): ...` for code.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import types

PREFIX = "asc"


class NotProvidedModule(types.ModuleType):
    """A pyasc module ascend-emu does not provide: importing it works, using a name from it says
    which name is missing (an ImportError, so `from asc.x import Y` fails at the import line)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(f"{self.__name__}.{name} (pyasc) is not supported by ascend-emu",
                          name=self.__name__)


class DelegateModule(NotProvidedModule):
    """A pyasc module whose names are read from one of ours (`target`); names it does not have
    say so as NotProvidedModule does."""

    def __init__(self, name, target, doc=None, package=True, **attrs):
        super().__init__(name, doc or f"pyasc's {name} on ascend-emu ({target.__name__})")
        self.__target = target
        if package:
            self.__path__ = []
        for k, v in attrs.items():
            setattr(self, k, v)

    def __getattr__(self, name):
        if not name.startswith("__"):
            try:
                return getattr(self.__target, name)
            except AttributeError:
                pass
        return super().__getattr__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(dir(self.__target)))


def _package(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = _module(name, doc, **attrs)
    mod.__path__ = []
    return mod


def _module(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


class PyascFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads `asc` and `asc.*` (see the module docstring)."""

    def __init__(self):
        import ascendc
        from ascendc import adv
        from . import config, runtime, namespace, struct, support
        from .. import host
        from ..lang import dtypes
        from ..lang.errors import CompileError
        self.adv, self.lang = adv, ascendc
        jit_mod = _module("asc.runtime.jit", "pyasc's asc.runtime.jit", jit=namespace.jit,
                          JITFunction=namespace.PyascKernel)
        launcher = _module("asc.runtime.launcher", "pyasc's asc.runtime.launcher",
                           LaunchOptions=namespace.LaunchOptions)
        compiler = _module("asc.runtime.compiler", "pyasc's asc.runtime.compiler",
                           CompileOptions=namespace.CompileOptions)
        runtime_pkg = _package("asc.runtime", "pyasc's asc.runtime", config=config, jit=jit_mod,
                               launcher=launcher, compiler=compiler)
        visitor = _module("asc.codegen.function_visitor", "pyasc's codegen options",
                          CodegenOptions=namespace.CodegenOptions)
        errors = _module("asc.codegen.errors", "pyasc's codegen errors",
                         CodegenError=CompileError)
        codegen = _package("asc.codegen", "pyasc's asc.codegen", function_visitor=visitor,
                           errors=errors)
        interface = DelegateModule("asc.lib.runtime.interface", runtime, package=False)
        support_mod = DelegateModule("asc.lib.runtime.support", support, package=False)
        rt_pkg = DelegateModule("asc.lib.runtime", runtime, interface=interface,
                                support=support_mod)
        lib_pkg = _package("asc.lib", "pyasc's asc.lib (host, runtime)", host=host,
                           runtime=rt_pkg)
        dtype_mod = _module("asc.language.core.dtype", "pyasc's dtypes and KnownTypes",
                            KnownTypes=struct.KnownTypes, DataType=dtypes.DataType)
        core_pkg = DelegateModule("asc.language.core", ascendc, struct=struct, dtype=dtype_mod)
        adv_pkg = DelegateModule("asc.language.adv", adv)
        language = DelegateModule("asc.language", ascendc, core=core_pkg, adv=adv_pkg,
                                  jit=namespace.jit, __kernel_language__=True)
        for sub in ("basic", "fwk"):
            setattr(language, sub, DelegateModule(f"asc.language.{sub}", ascendc))
        self.asc = namespace.make_asc_module(runtime_pkg, lib_pkg, language)
        self.asc.codegen = codegen
        self.table = {"asc": self.asc, "asc.runtime": runtime_pkg,
                      "asc.runtime.config": config, "asc.runtime.jit": jit_mod,
                      "asc.runtime.launcher": launcher, "asc.runtime.compiler": compiler,
                      "asc.codegen": codegen, "asc.codegen.function_visitor": visitor,
                      "asc.codegen.errors": errors, "asc.lib": lib_pkg, "asc.lib.host": host,
                      "asc.lib.runtime": rt_pkg, "asc.lib.runtime.interface": interface,
                      "asc.lib.runtime.support": support_mod, "asc.language": language,
                      "asc.language.core": core_pkg, "asc.language.adv": adv_pkg,
                      "asc.language.basic": language.basic, "asc.language.fwk": language.fwk,
                      "asc.language.core.struct": struct,
                      "asc.language.core.dtype": dtype_mod}

    def find_spec(self, fullname, path=None, target=None):
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        mod = self._module(fullname)
        is_pkg = hasattr(mod, "__path__")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_pkg)

    def _module(self, name):
        mod = self.table.get(name)
        if mod is None and name.startswith("asc.language."):
            # a module of pyasc's language tree (asc.language.fwk.tpipe, .basic.vec_binary,
            # .adv.activation, ...): the language's names, or asc.adv's under adv
            target = self.adv if name.startswith("asc.language.adv.") else self.lang
            mod = self.table[name] = DelegateModule(name, target, package=False)
        if mod is None:
            mod = NotProvidedModule(name, f"pyasc's {name}: not provided by ascend-emu")
            mod.__path__ = []
            self.table[name] = mod
        return mod

    def create_module(self, spec):
        return self._module(spec.name)

    def exec_module(self, module):
        pass


_finder: list = []


def install() -> PyascFinder:
    """Make `import asc...` resolve to ascend-emu in this process (idempotent)."""
    if not _finder:
        _finder.append(PyascFinder())
    f = _finder[0]
    if f not in sys.meta_path:
        for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
            del sys.modules[name]
        sys.meta_path.insert(0, f)
    return f


def uninstall() -> None:
    """Undo `install()`: drop the finder and the `asc*` modules it made."""
    if not _finder:
        return
    f = _finder[0]
    if f in sys.meta_path:
        sys.meta_path.remove(f)
    for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
        del sys.modules[name]


def is_installed() -> bool:
    return bool(_finder) and _finder[0] in sys.meta_path


@contextlib.contextmanager
def installed():
    """`with installed(): import asc ...`; restores the previous state on exit."""
    was = is_installed()
    install()
    try:
        yield _finder[0]
    finally:
        if not was:
            uninstall()


__all__ = ["install", "uninstall", "installed", "is_installed", "PyascFinder",
           "NotProvidedModule", "DelegateModule"]
