"""Imports point one way: rt <- ascendc <- kernels (DESIGN §2); our packages resolve in this repo.

`rt` must not import `ascendc`, `kernels` or `numba`; `ascendc` must not import `kernels`.
Imports are read with `ast` (including `importlib.import_module("...")` / `__import__("...")`
with a literal name), so nothing is executed.
"""
import ast
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = {"rt": {"ascendc", "kernels", "numba"}, "ascendc": {"kernels"}, "kernels": set()}


def imported_modules(path: pathlib.Path):
    """(lineno, top-level module) for every absolute import in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.lineno, node.module.split(".")[0]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                    and not node.args[0].value.startswith("."):
                yield node.lineno, node.args[0].value.split(".")[0]


def python_files(package: str):
    pkg = ROOT / package
    return sorted(pkg.rglob("*.py")) if pkg.is_dir() else []


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way(package):
    files = python_files(package)
    if not files:
        pytest.skip(f"{package}/ does not exist yet")
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}"
           for p in files for line, mod in imported_modules(p) if mod in FORBIDDEN[package]]
    assert not bad, f"{package} must not import {sorted(FORBIDDEN[package])}:\n" + "\n".join(bad)


def test_rt_is_checked():
    assert python_files("rt"), "rt/ must exist"


def test_the_checker_sees_every_import_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import numba.core\nfrom kernels.add import x\nfrom . import sibling\n"
                   "import importlib\nimportlib.import_module('ascendc.jit')\n__import__('numba')\n")
    assert sorted(m for _, m in imported_modules(src)) == \
        ["ascendc", "importlib", "kernels", "numba", "numba"]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_resolve_inside_the_repo(package):
    if not (ROOT / package / "__init__.py").exists():
        pytest.skip(f"{package}/ does not exist yet")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is not importable"
    origin = pathlib.Path(spec.origin).resolve()
    assert origin.is_relative_to(ROOT), \
        f"import {package} resolves to {origin}, not inside {ROOT} (an unrelated PyPI package?)"
