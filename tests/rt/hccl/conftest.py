"""Fixtures of the HCCL tests: a fresh runtime per test, communicators with their streams."""
import numpy as np
import pytest

import rt
from rt import device as _device
from rt import hccl

_ENV = ("ASCEND_EMU_DEVICES", "ASCEND_MEM_CHECK", "HCCL_EXEC_TIMEOUT", "HCCL_CONNECT_TIMEOUT",
        "ASCEND_EMU_HCCL_TRANSPORT", "ASCEND_EMU_HCCL_CHUNK_BYTES", "HCCL_ALGO")


@pytest.fixture(autouse=True)
def _fresh_runtime(monkeypatch):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    _device._reset_for_tests()
    hccl.set_reducer(None)
    yield
    hccl.set_reducer(None)
    _device._reset_for_tests()


class Ranks:
    """n in-process ranks (comm_init_all): `comms[i]`, a stream each, helpers to move data."""

    def __init__(self, n: int, chunk_bytes: int = 64):
        rt.init()
        self.comms = hccl.comm_init_all(list(range(n)))
        self.streams = []
        for c in self.comms:
            c.chunk_bytes = chunk_bytes          # small chunks: the pipelined path is exercised
            rt.set_device(c.device)
            self.streams.append(rt.Stream())
        rt.set_device(0)
        self.n = n

    def put(self, arrays):
        return [rt.to_device(np.ascontiguousarray(a), device=c.device)
                for c, a in zip(self.comms, arrays)]

    def empty(self, count, dtype):
        out = []
        for c in self.comms:
            out.append(rt.device_zeros((count,), dtype, device=c.device))
        return out

    def sync(self):
        for s in self.streams:
            s.synchronize()

    def get(self, arrays):
        self.sync()
        return [a.copy_to_host() for a in arrays]


@pytest.fixture
def ranks():
    return Ranks
