"""Fixtures of the DVPP tests: a fresh runtime with device 0 set, a stream, an open channel."""
import pytest

import rt
from rt import device as _device
from rt import hostmem as _hostmem


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch):
    for name in ("ASCEND_EMU_DEVICES", "ASCEND_EMU_SOC", "ASCEND_EMU_DEVICE_MEMORY",
                 "ASCEND_MEM_CHECK"):
        monkeypatch.delenv(name, raising=False)
    _device._reset_for_tests()
    _hostmem._free_all_for_tests()
    yield
    _device._reset_for_tests()
    _hostmem._free_all_for_tests()


@pytest.fixture
def dev0():
    rt.init()
    rt.set_device(0)


@pytest.fixture
def stream(dev0):
    return rt.Stream()


@pytest.fixture
def channel(dev0):
    ch = rt.dvpp.ChannelDesc()
    ch.create()
    return ch


@pytest.fixture
def classic_soc(monkeypatch):
    """Atlas 200/300/500 (Ascend310): the classic DVPP rules (ROI parity, paste left 16,
    16-aligned VPC strides, 4096x4096 output); list it before `channel` / `stream` / `dev0`."""
    monkeypatch.setenv("ASCEND_EMU_SOC", "Ascend310")
