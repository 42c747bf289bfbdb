"""The compile layer's Numba overrides live in one module and are pinned to tested versions.

ascendc/lang/numba_link.py overrides Numba internals (docs/numba.md). These tests fail on a Numba
or llvmlite outside the range they were checked against, check that pyproject.toml pins the same
range, that importing ascendc on an untested version warns (and still imports), and that no other
module of ascendc reaches into the internals the layer overrides.
"""
import ast
import os
import pathlib
import re
import subprocess
import sys

import llvmlite
import numba
import pytest

from ascendc.lang import numba_link
from ascendc.lang.numba_link import (TESTED_LLVMLITE, TESTED_NUMBA, UntestedNumbaWarning,
                                     check_numba_version, in_range)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_installed_numba_and_llvmlite_are_the_tested_ones():
    msg = numba_link.untested_message(numba.__version__, llvmlite.__version__)
    assert msg is None, msg


def test_pyproject_pins_the_tested_range():
    text = (ROOT / "pyproject.toml").read_text()
    for name, tested in (("numba", TESTED_NUMBA), ("llvmlite", TESTED_LLVMLITE)):
        pins = re.findall(rf'"{name}([<>=!~][^"]*)"', text)
        assert pins == [",".join(tested)], \
            f"pyproject.toml must pin {name}{','.join(tested)} (numba_link.py), got {pins}"


@pytest.mark.parametrize("version, inside", [
    ("0.68.0", True), ("0.68.1", True), ("0.68.12", True), ("0.68.1+2.gabcdef", True),
    ("0.67.9", False), ("0.69.0", False), ("0.69.0rc1", False), ("1.0", False)])
def test_numba_versions_are_placed_by_major_minor_micro(version, inside):
    assert in_range(version, (">=0.68", "<0.69")) is inside


def test_an_untested_numba_warns_with_what_was_tested(monkeypatch):
    monkeypatch.setattr(numba, "__version__", "0.69.0")
    with pytest.warns(UntestedNumbaWarning,
                      match=r"ascendc: Numba 0\.69\.0 is untested; the compile layer overrides "
                            r"Numba internals checked against numba>=0\.68,<0\.69 and "
                            r"llvmlite>=0\.50,<0\.51"):
        msg = check_numba_version()
    assert msg.startswith("ascendc: Numba 0.69.0 is untested")


def test_an_untested_llvmlite_warns_too(monkeypatch):
    monkeypatch.setattr(numba, "__version__", "0.60.0")
    monkeypatch.setattr(llvmlite, "__version__", "0.43.0")
    with pytest.warns(UntestedNumbaWarning,
                      match=r"ascendc: Numba 0\.60\.0 and llvmlite 0\.43\.0 are untested"):
        check_numba_version()


def test_the_tested_versions_pass_silently(monkeypatch, recwarn):
    monkeypatch.setattr(numba, "__version__", "0.68.1")
    monkeypatch.setattr(llvmlite, "__version__", "0.50.0")
    assert check_numba_version() is None
    assert not [w for w in recwarn if issubclass(w.category, UntestedNumbaWarning)]


def test_a_malformed_version_is_named():
    with pytest.raises(ValueError, match=r"check_numba_version: version must look like X\.Y"
                                         r"\[\.Z\], got version='dev'"):
        in_range("dev", TESTED_NUMBA)


def test_importing_ascendc_on_an_untested_numba_warns_and_imports():
    code = ("import warnings; warnings.simplefilter('always'); import numba; "
            "numba.__version__ = '0.70.1'; import ascendc; print('IMPORTED', ascendc.jit)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "IMPORTED" in r.stdout
    assert "UntestedNumbaWarning: ascendc: Numba 0.70.1 is untested" in r.stderr


# the Numba internals numba_link.py overrides: no other module of ascendc may reach them
INTERNALS = ("numba.core.registry", "numba.core.caching", "numba.core.serialize",
             "numba.core.dispatcher", "numba.core.codegen", "numba.core.compiler_lock")
OVERRIDDEN = {"CPUDispatcher", "Dispatcher", "FunctionCache", "CPUCodeLibrary",
              "insert_user_function", "_get_module_for_linking", "_reload_init", "_index_key",
              "_cache_file", "_source_stamp", "_create_empty_module"}


def internal_uses(path: pathlib.Path):
    """(line, what) for each import of, or reach into, the internals numba_link overrides."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module in INTERNALS:
            yield node.lineno, f"imports {node.module}"
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, f"imports {a.name}") for a in node.names
                        if a.name in INTERNALS)
        elif isinstance(node, ast.Attribute) and node.attr in OVERRIDDEN:
            yield node.lineno, f"uses .{node.attr}"
        elif isinstance(node, ast.Name) and node.id in OVERRIDDEN:
            yield node.lineno, f"uses {node.id}"


def test_only_numba_link_touches_numba_internals():
    link = ROOT / "ascendc" / "lang" / "numba_link.py"
    bad = [f"{p.relative_to(ROOT)}:{line} {what}"
           for p in sorted((ROOT / "ascendc").rglob("*.py")) if p != link
           for line, what in internal_uses(p)]
    assert not bad, "Numba's internals are overridden in ascendc/lang/numba_link.py only:\n" + \
        "\n".join(bad)
    assert list(internal_uses(link)), "numba_link.py must be where the overrides are"


def test_the_internals_checker_sees_each_form(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from numba.core.registry import CPUDispatcher\nimport numba.core.caching\n"
                     "class D(CPUDispatcher):\n    def f(self, lib):\n"
                     "        return lib._get_module_for_linking()\n")
    assert sorted(internal_uses(probe)) == [
        (1, "imports numba.core.registry"), (2, "imports numba.core.caching"),
        (3, "uses CPUDispatcher"), (5, "uses ._get_module_for_linking")]
