"""Fixtures of the reliability suite (docs/guarantees.md): a fresh runtime per test."""
import pytest

import rt
from rt import device as _device
from rt import hostmem as _hostmem


_ENV = ("ASCEND_EMU_DEVICES", "ASCEND_EMU_SOC", "ASCEND_EMU_DEVICE_MEMORY", "ASCEND_MEM_CHECK",
        "ASCEND_GLOBAL_LOG_LEVEL", "ASCEND_SLOG_PRINT_TO_STDOUT", "ASCEND_EMU_SYNC_ASSIST")


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    _device._reset_for_tests()
    _hostmem._free_all_for_tests()
    yield
    rt.set_op_execute_timeout(0)
    _device._reset_for_tests()
    _hostmem._free_all_for_tests()


@pytest.fixture
def dev0():
    rt.init()
    rt.set_device(0)
    return _device.get_device(0)
