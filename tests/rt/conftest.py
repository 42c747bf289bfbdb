"""Shared fixtures for the runtime tests.

- `_fresh_runtime` (autouse): every test starts and ends with no runtime state (not initialized, no
  devices, no pinned host buffers, logging re-read from the environment), and with the emulator's
  environment variables unset unless the test sets them (use `monkeypatch.setenv` *before*
  `rt.init()`/`rt.set_device()`).
- `dev0`: `rt.init()` + `rt.set_device(0)`; yields the internal `Device`.
"""
import pytest

import rt
from rt import device as _device
from rt import hostmem as _hostmem

_ENV = ("ASCEND_EMU_DEVICES", "ASCEND_EMU_SOC", "ASCEND_EMU_DEVICE_MEMORY", "ASCEND_MEM_CHECK",
        "ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_SLOG_PRINT_TO_STDOUT")


def reset_runtime() -> None:
    _device._reset_for_tests()
    _hostmem._free_all_for_tests()


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    reset_runtime()
    yield
    reset_runtime()


@pytest.fixture
def dev0():
    rt.init()
    rt.set_device(0)
    return _device.get_device(0)
