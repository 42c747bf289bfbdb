"""pytest plugin: pyasc's own test files run unchanged on ascend-emu.

    python -m pytest -p ascendc.pyasc_compat.pytest_plugin path/to/pyasc/python/test/kernels

Loading the plugin installs the `asc` import mapping (`ascendc.pyasc_compat.install`) before
any conftest or test module is imported, for the pytest process only, and offers ascend-emu's
`torch_npu` stand-in when no real torch_npu is installed. It also provides pyasc's
`backend` and `platform` fixtures (Model, Ascend910B1) for test directories whose conftest does
not define them (a conftest's own fixtures and `--backend/--platform` options take precedence).
Interpret mode: `ASCENDC_INTERPRET=1` in the environment, as for any launch.
"""
from __future__ import annotations

import pytest

from . import install, npu_device, torch_npu_standin
from .config import Backend, Platform

install()
npu_device.activate_when_torch_imported()   # torch's "npu" device, as torch_npu gives it
torch_npu_standin.install()                 # `import torch_npu` without a real one


@pytest.fixture
def backend() -> Backend:
    return Backend.Model


@pytest.fixture
def platform() -> Platform:
    return Platform.Ascend910B1
