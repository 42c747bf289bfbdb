"""Timeouts hold against a kernel that never ends, a runaway kernel can be
stopped (device reset, op execute timeout) and the runtime stays usable.

Timing is asserted with perf_counter stamps around the calls (never by sleeping for ordering):
a call with a 200 ms timeout must return within the timeout plus a generous slack for a loaded
2-core CI machine, and long before the kernel would have ended (the kernels here end only when
the test lets them). What a thread ran is checked from the threads recorded, not from timing.
"""
import importlib
import threading
import time

import numpy as np
import pytest

import rt
import rt.acl as acl
from rt.errors import (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                       ACL_ERROR_RT_AICORE_TIMEOUT, ACL_ERROR_RT_INTERNAL_ERROR)
from rt.kernel import KernelBinary

from rt_test_helpers import raises

_launch = importlib.import_module("rt.launch")

SLACK_S = 6.0      # scheduling slack on a loaded 2-core machine: 30x a 200 ms timeout
WAIT_S = 60        # bounds a wait expected to succeed (a hang), not the machine's speed


class PySpin(KernelBinary):
    """Spins in Python bytecode (like an interpreted kernel) until `stop` is set."""
    name = "py_spin"

    def __init__(self):
        self.stop = threading.Event()
        self.started = threading.Event()
        self.threads: set = set()          # the workers spinning in it
        self.all_started = threading.Event()

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        self.threads.add(threading.get_ident())
        self.started.set()
        if (first == 0 and last >= block_dim) or len(self.threads) >= block_dim:
            self.all_started.set()     # one worker took every block, or each took one
        while not self.stop.is_set():
            pass


class CSpin(KernelBinary):
    """Blocks in C without returning to Python (like compiled nogil code) until `release()`, at
    most `seconds`."""
    name = "c_spin"

    def __init__(self, block_dim, seconds=WAIT_S):
        self.seconds = seconds
        self.gates = [threading.Lock() for _ in range(block_dim)]   # one per range's first block
        for g in self.gates:
            g.acquire()
        self.started = threading.Event()
        self.returned = threading.Event()
        self.threads: set = set()

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        self.threads.add(threading.get_ident())
        self.started.set()
        self.gates[first].acquire(timeout=self.seconds)   # uninterruptible by the runtime
        self.returned.set()

    def release(self):
        for g in self.gates:
            g.release()


class Quick(KernelBinary):
    name = "quick"

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        args[0][first:last] += 1


def _timed(fn):
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        dt = time.perf_counter() - t0
    return dt


@pytest.mark.parametrize("assist", ["1", "0"])
def test_stream_synchronize_timeout_holds_against_a_spinning_kernel(dev0, monkeypatch, assist):
    monkeypatch.setenv("ASCEND_EMU_SYNC_ASSIST", assist)
    _launch.set_core_count(2)
    k = PySpin()
    s = rt.Stream()
    rt.launch(k, 8, (), s)      # more blocks than cores: ranges wait, a syncing thread could assist
    t0 = time.perf_counter()
    with raises(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                r"synchronize: stream \d+ must finish within timeout_ms, got timeout_ms=200"):
        s.synchronize(timeout_ms=200)
    dt = time.perf_counter() - t0
    assert 0.19 <= dt < 0.2 + SLACK_S
    assert k.started.is_set()
    k.stop.set()
    s.synchronize()


def test_event_and_device_synchronize_timeouts(dev0):
    k = PySpin()
    s = rt.Stream()
    rt.launch(k, 4, (), s)
    ev = rt.Event()
    ev.record(s)
    with raises(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                r"synchronize: event \d+ must be reached within timeout_ms, got timeout_ms=150"):
        dt = _timed(lambda: ev.synchronize(timeout_ms=150))
    with raises(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                r"synchronize_device: device 0 must finish within timeout_ms, got "
                r"timeout_ms=150 with stream \d+ still busy"):
        t0 = time.perf_counter()
        try:
            rt.synchronize_device(timeout_ms=150)
        finally:
            dt = time.perf_counter() - t0
    assert dt < 0.15 + SLACK_S
    assert acl.rt.synchronize_device_with_timeout(100) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    with raises(107000, r"synchronize_device: timeout_ms must be -1 or an int >= 0, got "
                        r"timeout_ms='x'"):
        rt.synchronize_device("x")
    k.stop.set()
    rt.synchronize_device(timeout_ms=WAIT_S * 1000)


def test_timeout_holds_when_the_kernel_blocks_in_c(dev0):
    """A range cannot be interrupted once started: the syncing thread must not take one."""
    _launch.set_core_count(2)
    k = CSpin(2)
    s = rt.Stream()
    rt.launch(k, 2, (), s)           # synchronize at once: the cores are still waking up
    dt = None
    with raises(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, r"must finish within timeout_ms"):
        t0 = time.perf_counter()
        try:
            s.synchronize(timeout_ms=200)
        finally:
            dt = time.perf_counter() - t0
    assert dt < 0.2 + SLACK_S        # its ranges block until released
    k.release()
    s.synchronize()
    assert threading.get_ident() not in k.threads


def test_reset_device_stops_a_runaway_python_kernel_and_runtime_stays_usable(dev0):
    _launch.set_core_count(2)
    k = PySpin()
    s = rt.Stream()
    rt.launch(k, 2, (), s)
    rt.launch(Quick(), 1, (np.zeros(1),), s)        # queued behind it: discarded
    assert k.all_started.wait(WAIT_S)               # every block is spinning on some worker
    t0 = time.perf_counter()
    rt.reset_device(0)
    assert time.perf_counter() - t0 < SLACK_S
    pool = _launch.core_pool()
    rt.set_device(0)
    x = np.zeros(4)
    s2 = rt.Stream()
    rt.launch(Quick(), 4, (x,), s2)
    s2.synchronize(timeout_ms=WAIT_S * 1000)
    assert x.tolist() == [1, 1, 1, 1]
    assert pool.abandoned >= len(k.threads)          # every spinning worker was replaced


def test_reset_device_abandons_a_worker_stuck_in_c_code(dev0):
    """Compiled-like code cannot be interrupted: its thread is abandoned (it exits when the code
    returns) and a new worker takes its core, so the runtime goes on."""
    _launch.set_core_count(1)
    k = CSpin(1)
    s = rt.Stream()
    rt.launch(k, 1, (), s)
    assert k.started.wait(WAIT_S)
    t0 = time.perf_counter()
    rt.reset_device(0)
    assert time.perf_counter() - t0 < SLACK_S       # does not wait for the blocked range
    assert not k.returned.is_set()                   # still running in its abandoned thread
    rt.set_device(0)
    x = np.zeros(2)
    s2 = rt.Stream()
    rt.launch(Quick(), 2, (x,), s2)
    s2.synchronize(timeout_ms=WAIT_S * 1000)         # the replacement core runs it meanwhile
    assert x.tolist() == [1, 1] and not k.returned.is_set()
    k.release()                                      # the abandoned thread may end now


def test_op_execute_timeout_fails_the_kernel_on_its_stream(dev0):
    _launch.set_core_count(2)
    with raises(107000, r"set_op_execute_timeout: timeout_ms must be an int >= 0, got "
                        r"timeout_ms=-5"):
        rt.set_op_execute_timeout(-5)
    assert acl.rt.set_op_execute_time_out(1) == 0          # seconds, as ACL
    assert rt.get_op_execute_timeout() == 1000
    rt.set_op_execute_timeout(200)
    k = PySpin()
    s = rt.Stream()
    rt.launch(k, 4, (), s)
    t0 = time.perf_counter()
    with raises(ACL_ERROR_RT_AICORE_TIMEOUT,
                r"synchronize: kernel 'py_spin' on stream \d+ failed: kernel 'py_spin' \(launch "
                r"on stream \d+\): the kernel must finish within the op execute timeout, got "
                r"op_execute_timeout_ms=200 exceeded"):
        s.synchronize()                     # no timeout of its own: the op timeout ends it
    assert time.perf_counter() - t0 < 0.2 + SLACK_S
    rt.set_op_execute_timeout(WAIT_S * 1000)     # still set, but no loaded machine reaches it
    x = np.zeros(3)
    rt.launch(Quick(), 3, (x,), s)          # the stream and the pool go on
    s.synchronize(timeout_ms=WAIT_S * 1000)
    assert x.tolist() == [1, 1, 1]


def test_acl_facade_sync_with_timeout(dev0):
    k = PySpin()
    s, ret = acl.rt.create_stream()
    assert ret == 0
    rt.launch(k, 2, (), acl.rt._stream(s, "t"))
    assert acl.rt.synchronize_stream_with_timeout(s, 100) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    k.stop.set()
    assert acl.rt.synchronize_stream_with_timeout(s, WAIT_S * 1000) == 0


def test_reset_releases_a_thread_waiting_on_the_stream(dev0):
    k = PySpin()
    s = rt.Stream()
    rt.launch(k, 2, (), s)
    assert k.started.wait(WAIT_S)
    got = []

    def waiter():
        try:
            s.synchronize()
        except rt.AclError as e:
            got.append(e)

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.05)            # let it block (not for ordering: the assertion is on the join)
    rt.reset_device(0)
    th.join(WAIT_S)
    assert not th.is_alive()        # released; the kernel's error goes to whoever syncs first
    for e in got:
        assert e.code == ACL_ERROR_RT_INTERNAL_ERROR
        assert "the device's work must end when it is reset, got device=0" in e.message
