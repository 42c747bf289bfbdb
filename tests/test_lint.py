"""The tree is clean under the project's ruff configuration (pyproject.toml [tool.ruff])."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    try:
        r = subprocess.run(cmd + ["check", "--no-cache", "."], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    except FileNotFoundError:
        pytest.fail("ruff must be installed (pip install -e '.[test]'), got no ruff executable")
    assert r.returncode == 0, f"ruff check found problems:\n{r.stdout}\n{r.stderr}"
