"""Run unmodified pyasc scripts on ascend-emu: `import asc` and its submodules resolve to ours.

`install()` puts a meta-path finder first on `sys.meta_path` for this process only (no package
named `asc` is ever installed, so a real pyasc installation is not shadowed outside the process
that asks for it). The mapping:

| pyasc module          | here                                                           |
|-----------------------|----------------------------------------------------------------|
| `asc`                 | the `ascendc` namespace + pyasc's top-level extras (`namespace`)|
| `asc.runtime.config`  | `ascendc.pyasc_compat.config` (`set_platform` selects the SoC)  |
| `asc.lib.runtime`     | `ascendc.pyasc_compat.runtime` (pyasc's host runtime over `rt`) |
| `asc.lib.host`        | `ascendc.host` (the Matmul host tiling, with pyasc's setters)    |
| `asc.language.core.struct` | `ascendc.pyasc_compat.struct` (user tiling `Struct`s)      |
| `asc.language.core.dtype` | pyasc's `KnownTypes` and the dtypes (`struct`)             |
| `asc.runtime`, `asc.lib` | packages holding the above                                   |
| any other `asc.*`     | a module whose every name raises "not supported by ascend-emu"  |

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


def _package(name: str, doc: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, doc)
    mod.__path__ = []
    for k, v in attrs.items():
        setattr(mod, k, v)
    return mod


class PyascFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads `asc` and `asc.*` (see the module docstring)."""

    def __init__(self):
        from . import config, runtime, namespace, struct
        from .. import host
        from ..lang import dtypes
        self.config, self.runtime, self.host = config, runtime, host
        self.runtime_pkg = _package("asc.runtime", "pyasc's asc.runtime (config only)",
                                    config=config)
        self.lib_pkg = _package("asc.lib", "pyasc's asc.lib (host, runtime)", host=host,
                                runtime=runtime)
        self.language_pkg = NotProvidedModule("asc.language", "pyasc's asc.language")
        self.language_pkg.__path__ = []
        core_pkg = NotProvidedModule("asc.language.core", "pyasc's asc.language.core")
        core_pkg.__path__ = []
        dtype_mod = _package("asc.language.core.dtype", "pyasc's dtypes and KnownTypes",
                             KnownTypes=struct.KnownTypes, DataType=dtypes.DataType)
        del dtype_mod.__path__
        core_pkg.struct, core_pkg.dtype = struct, dtype_mod
        self.language_pkg.core = core_pkg
        self.asc = namespace.make_asc_module(self.runtime_pkg, self.lib_pkg, self.language_pkg)
        self.table = {"asc": self.asc, "asc.runtime": self.runtime_pkg,
                      "asc.runtime.config": config, "asc.lib": self.lib_pkg,
                      "asc.lib.host": host, "asc.lib.runtime": runtime,
                      "asc.language": self.language_pkg, "asc.language.core": core_pkg,
                      "asc.language.core.struct": struct,
                      "asc.language.core.dtype": dtype_mod}

    def find_spec(self, fullname, path=None, target=None):
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        is_pkg = fullname not in ("asc.runtime.config", "asc.lib.runtime", "asc.lib.host",
                                  "asc.language.core.struct", "asc.language.core.dtype")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_pkg)

    def create_module(self, spec):
        mod = self.table.get(spec.name)
        if mod is None:
            mod = NotProvidedModule(spec.name, f"pyasc's {spec.name}: not provided by ascend-emu")
            mod.__path__ = []
        return mod

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
           "NotProvidedModule"]
