"""The structure of the tree (docs/design.md, docs/architecture.md), checked from the source.

- packages: rt <- ascendc <- kernels <- bench (each imports only those below it); rt imports
  neither numba nor the kernel language;
- inside ascendc: lang <- compiler/options <- binaries <- jit <- language <- adv <- host <- lib
  <- __init__;
- inside rt: the AscendCL core modules <- npu (+ opsummary) <- services (hccl, dvpp, graph) <-
  atc <- model <- facades (acl, onnx_backend, __main__, rt/__init__.py);
- no import cycle anywhere (function-local imports count: an import is an import);
- no module imports another module's `_private` name, or reads one through a module alias;
- kernels use only the public names of `ascendc` and `rt`;
- our packages resolve inside this repository.
Imports are read with `ast` (including `importlib.import_module("...")` / `__import__("...")`
with a literal name), so nothing is executed.
"""
import ast
import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("rt", "ascendc", "kernels", "bench")          # bottom to top
FORBIDDEN = {"rt": {"ascendc", "kernels", "bench", "numba"}, "ascendc": {"kernels", "bench"},
             "kernels": {"bench"}, "bench": set()}
# ranks inside ascendc: a module may import modules of its own rank or below
ASCENDC_RANKS = (("lang",), ("compiler", "options", "mix"), ("binaries",), ("jit",),
                 ("language", "npu"), ("adv",), ("host",), ("lib",),
                 ("__init__", "pyasc_compat", "run", "sanitize"))
# ranks inside rt, bottom to top (by the name after `rt.`; "__init__" is rt/__init__.py itself)
RT_RANKS = (("errors", "log", "soc", "pool", "hostmem", "hostcache", "device", "memcheck",
             "memory", "sched", "stream", "copy", "callback", "array", "kernel", "resident",
             "gmorder", "futex", "crossnative", "crossflags", "mixlaunch", "optimeout",
             "launchargs", "launch", "estimate", "profiler"),
            ("npu", "opsummary"),
            ("hccl", "dvpp", "graph"),
            ("atc",),
            ("model",),
            ("acl", "onnx_backend", "__main__", "__init__"))
PUBLIC_FOR_KERNELS = {"ascendc", "ascendc.adv", "ascendc.lib", "ascendc.lib.host", "rt"}


def python_files(package: str):
    pkg = ROOT / package
    return sorted(pkg.rglob("*.py")) if pkg.is_dir() else []


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: pathlib.Path) -> bool:
    return path.name == "__init__.py"


def _absolute(path: pathlib.Path, level: int, module: str | None) -> str:
    base = module_name(path).split(".")
    if not _is_package(path):
        base = base[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([module] if module else []))


def imports_of(path: pathlib.Path):
    """(lineno, absolute module, imported names or None) for every import in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            mod = node.module if node.level == 0 else _absolute(path, node.level, node.module)
            if mod and mod != "__future__":
                yield node.lineno, mod, [a.name for a in node.names]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                    and not node.args[0].value.startswith("."):
                yield node.lineno, node.args[0].value, None


def imported_modules(path: pathlib.Path):
    """(lineno, top-level package) for every import in the file."""
    for line, mod, _ in imports_of(path):
        yield line, mod.split(".")[0]


ALL_FILES = [p for pkg in PACKAGES for p in python_files(pkg)]
MODULES = {module_name(p): p for p in ALL_FILES}


def _targets(mod: str, names):
    """The modules of ours an import statement depends on (a name may be a submodule;
    `from pkg import sub` depends on `pkg` only if it also takes a name defined there)."""
    subs = [f"{mod}.{n}" for n in names or () if f"{mod}.{n}" in MODULES]
    own = mod in MODULES and (names is None or len(subs) < len(names))
    return ([mod] if own else []) + subs


def import_graph() -> dict[str, set[str]]:
    graph = {m: set() for m in MODULES}
    for m, p in MODULES.items():
        for _, mod, names in imports_of(p):
            for t in _targets(mod, names):
                if t != m:
                    graph[m].add(t)
    return graph


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_point_one_way(package):
    files = python_files(package)
    if not files:
        pytest.skip(f"{package}/ does not exist yet")
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}"
           for p in files for line, mod in imported_modules(p) if mod in FORBIDDEN[package]]
    assert not bad, f"{package} must not import {sorted(FORBIDDEN[package])}:\n" + "\n".join(bad)


def _ascendc_rank(mod: str) -> int:
    parts = mod.split(".")
    first = parts[1] if len(parts) > 1 else "__init__"
    for rank, names in enumerate(ASCENDC_RANKS):
        if first in names:
            return rank
    raise AssertionError(f"{mod}: not placed in ASCENDC_RANKS (add it to the layering test)")


def test_ascendc_layers_point_down():
    bad = []
    for m, p in MODULES.items():
        if not m.startswith("ascendc"):
            continue
        for line, mod, names in imports_of(p):
            for t in _targets(mod, names):
                if t.startswith("ascendc") and _ascendc_rank(t) > _ascendc_rank(m):
                    bad.append(f"{p.relative_to(ROOT)}:{line} ({m}) imports {t}")
    assert not bad, "ascendc's layers are " + " <- ".join("/".join(r) for r in ASCENDC_RANKS) + \
        ":\n" + "\n".join(bad)


def _rt_rank(mod: str) -> int:
    parts = mod.split(".")
    first = parts[1] if len(parts) > 1 else "__init__"
    for rank, names in enumerate(RT_RANKS):
        if first in names:
            return rank
    raise AssertionError(f"{mod}: not placed in RT_RANKS (add it to the layering test)")


def upward_rt_imports(graph) -> list[str]:
    """`a imports b` for every edge of `graph` (module -> modules it imports) that goes from a
    module of rt to one of a higher rank."""
    return [f"{m} imports {t}" for m in sorted(graph) if m.split(".")[0] == "rt"
            for t in sorted(graph[m]) if t.split(".")[0] == "rt" and _rt_rank(t) > _rt_rank(m)]


def test_rt_layers_point_down():
    where = {m: p.relative_to(ROOT) for m, p in MODULES.items()}
    bad = [f"{where[e.split()[0]]}: {e}" for e in upward_rt_imports(import_graph())]
    assert not bad, "rt's layers are " + " <- ".join("/".join(r) for r in RT_RANKS) + \
        ":\n" + "\n".join(bad)


def test_every_rt_module_is_ranked():
    for m in MODULES:
        if m.split(".")[0] == "rt":
            _rt_rank(m)


def test_the_rt_layer_checker_catches_an_upward_import(tmp_path, monkeypatch):
    """A core module importing a service, even inside a function, is reported (the checker runs
    on a synthetic tree: rt/profiler.py importing rt.hccl in a function, rt/hccl importing
    rt.errors)."""
    pkg = tmp_path / "rt"
    (pkg / "hccl").mkdir(parents=True)
    for f in ("__init__.py", "errors.py", "hccl/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "hccl" / "comm.py").write_text("from ..errors import AclError\n")
    (pkg / "profiler.py").write_text("def f():\n    from .hccl import comm\n    return comm\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    files = sorted(pkg.rglob("*.py"))
    mods = {module_name(p): p for p in files}
    monkeypatch.setattr(sys.modules[__name__], "MODULES", mods)
    assert upward_rt_imports(import_graph()) == ["rt.profiler imports rt.hccl.comm"]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def _private_uses(path: pathlib.Path, me: str | None = None):
    """Private names taken from another module of ours: `from m import _x`, `alias._x`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = me or module_name(path)
    aliases = {}
    for line, mod, names in imports_of(path):
        if mod.split(".")[0] not in PACKAGES:
            continue
        for n in names or ():
            if n.startswith("_") and not n.startswith("__") and f"{mod}.{n}" not in MODULES \
                    and mod != me:
                yield line, f"from {mod} import {n}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    aliases[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, ast.ImportFrom):
            mod = node.module if node.level == 0 else _absolute(path, node.level, node.module)
            for a in node.names:
                if mod and f"{mod}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{mod}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in aliases and node.attr.startswith("_") and \
                not node.attr.startswith("__"):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def test_no_private_names_across_modules():
    bad = [f"{p.relative_to(ROOT)}:{line}: {what}"
           for p in ALL_FILES for line, what in _private_uses(p)]
    assert not bad, "modules must not use other modules' _private names:\n" + "\n".join(bad)


def test_the_private_name_checker_sees_both_forms(tmp_path):
    src = tmp_path / "probe.py"
    src.write_text("from rt.stream import _submit\nimport rt.launch as L\nL._live_core()\n"
                   "from ascendc import __all__\n")
    found = [what for _, what in _private_uses(src, me="kernels.probe")]
    assert found == ["from rt.stream import _submit", "L._live_core"]


def test_kernels_use_only_public_names():
    bad = []
    for p in python_files("kernels"):
        for line, mod, _ in imports_of(p):
            top = mod.split(".")[0]
            if top in ("ascendc", "rt") and mod not in PUBLIC_FOR_KERNELS:
                bad.append(f"{p.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, f"kernels may import only {sorted(PUBLIC_FOR_KERNELS)}:\n" + "\n".join(bad)


def test_rt_is_checked():
    assert python_files("rt"), "rt/ must exist"


def test_the_checker_sees_every_import_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import numba.core\nfrom kernels.add import x\nimport importlib\n"
                   "importlib.import_module('ascendc.jit')\n__import__('numba')\n")
    assert sorted(m for _, m in imported_modules(src)) == \
        ["ascendc", "importlib", "kernels", "numba", "numba"]


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_resolve_inside_the_repo(package):
    if not (ROOT / package / "__init__.py").exists():
        pytest.skip(f"{package}/ does not exist yet")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is not importable"
    origin = pathlib.Path(spec.origin).resolve()
    assert origin.is_relative_to(ROOT), \
        f"import {package} resolves to {origin}, not inside {ROOT} (an unrelated PyPI package?)"
