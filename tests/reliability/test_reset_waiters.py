"""`reset_device` releases every waiter: a thread blocked in `synchronize()` (no timeout) while a
kernel spins returns with the reset's error within the reset's promised time, in both modes. A
synchronising thread never runs compiled blocks itself (they cannot be interrupted), so it is
always free to be released."""
import importlib
import threading
import time

import numpy as np
import pytest

import rt

from test_timeouts_kernels import N, spin_kernel

_launch = importlib.import_module("rt.launch")
RELEASE_S = 1.5             # what reset_device promises (see test_timeouts_kernels)


def _calibrated_iters(s, seconds):
    y = rt.to_device(np.zeros(N, np.float32))
    spin_kernel[1, s](y, 3)                      # compile once, outside the measured part
    s.synchronize()
    t0 = time.perf_counter()
    spin_kernel[1, s](y, 1_000_000)
    s.synchronize()
    per_iter = (time.perf_counter() - t0) / 1_000_000
    return int(min(2**31 - 1, seconds / max(per_iter, 1e-9)))


@pytest.mark.parametrize("interpret", [True, False], ids=["interpret", "compiled"])
def test_reset_releases_a_thread_blocked_in_synchronize(interpret):
    rt.ensure_device()
    s = rt.Stream()
    # more blocks than cores: without the rule, the waiting thread would take one itself
    _launch.set_core_count(2)
    iters = -1 if interpret else _calibrated_iters(s, 4.0)
    x = rt.device_zeros((N,), np.float32)
    spin_kernel[8, s](x, iters, interpret=interpret)
    started, got = threading.Event(), []

    def waiter():
        started.set()
        try:
            s.synchronize()
            got.append(None)
        except rt.AclError as e:
            got.append(e)
    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    started.wait()
    # wait until it is blocked in synchronize; an interpreted block it may have taken itself just
    # before the cores woke (assist) is interruptible, so the reset must release it all the same
    until = time.monotonic() + 5.0
    while s._core.nwait == 0 and not got and time.monotonic() < until:
        time.sleep(0.001)
    del x
    rt.reset_device(0)
    t.join(RELEASE_S)
    assert not t.is_alive(), "a thread blocked in synchronize() was not released by the reset"
    assert isinstance(got[0], rt.AclError) and got[0].code == 507000
    assert f"synchronize: stream {s.id} must not be reset while a thread waits for it, got " \
           f"rt.reset_device: the device's work must end when it is reset" in got[0].message
