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

from test_timeouts_kernels import N, WAIT_S, calibrated_iters, spin_kernel

_launch = importlib.import_module("rt.launch")


def _calibrated_iters(s, seconds):
    y = rt.to_device(np.zeros(N, np.float32))
    spin_kernel[1, s](y, 3)                      # compile once, outside the measured part
    s.synchronize()
    return calibrated_iters(s, y, seconds)


@pytest.mark.parametrize("interpret", [True, False], ids=["interpret", "compiled"])
def test_reset_releases_a_thread_blocked_in_synchronize(interpret, monkeypatch):
    ran = set()                                  # the threads that ran a range of blocks
    run_range = _launch.CorePool._run_range

    def recording(self, *args, **kwargs):
        ran.add(threading.get_ident())
        return run_range(self, *args, **kwargs)
    monkeypatch.setattr(_launch.CorePool, "_run_range", recording)
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
    ran.clear()                                  # threads gone by now may pass on their idents
    t.start()
    waiter_ident = t.ident
    started.wait()
    # wait until it is blocked in synchronize; an interpreted block it may have taken itself just
    # before the cores woke (assist) is interruptible, so the reset must release it all the same
    until = time.monotonic() + WAIT_S
    while s._core.nwait == 0 and waiter_ident not in ran and not got and \
            time.monotonic() < until:
        time.sleep(0.001)
    del x
    rt.reset_device(0)
    # the blocks would end by themselves only after ~16 s (quiet), and then without an error
    t.join(WAIT_S)
    assert not t.is_alive(), "a thread blocked in synchronize() was not released by the reset"
    if not interpret:
        assert waiter_ident not in ran           # it never ran a compiled block itself
    assert isinstance(got[0], rt.AclError) and got[0].code == 507000
    assert f"synchronize: stream {s.id} must not be reset while a thread waits for it, got " \
           f"rt.reset_device: the device's work must end when it is reset" in got[0].message
