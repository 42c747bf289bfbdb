"""Timeouts and stopping with real `@asc.jit` kernels: a spinning kernel in both modes.

Interpret mode: `while True` over a vector op is stopped by a device reset / the op execute
timeout (the runtime raises in the Python thread running it). Compiled mode: nopython code
cannot be interrupted, so the test uses a long-but-finite loop: the timeouts hold, the worker
running it is abandoned (it ends when the loop does) and the runtime goes on with a replacement.
"""
import importlib
import threading
import time

import numpy as np
import pytest

import ascendc as asc
import rt
from rt.errors import ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_AICORE_TIMEOUT, KernelStop

from rt_test_helpers import raises

_launch = importlib.import_module("rt.launch")
N = 64
SLACK_S = 9.0       # scheduling slack on a loaded 2-core machine: 30x a 300 ms timeout
WAIT_S = 60         # bounds a wait expected to succeed (a hang), not the machine's speed


@asc.jit
def spin_kernel(x: asc.GlobalAddress, iters: int):
    """iters < 0: forever."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, N)
    pipe = asc.TPipe()
    buf = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(buf, N * 4)
    t = buf.get(asc.float32)
    asc.data_copy(t, xg, N)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    i = 0
    while iters < 0 or i < iters:
        asc.adds(t, t, 1.0, N)
        i += 1
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(xg, t, N)


def calibrated_iters(s, y, seconds):
    """Iterations of spin_kernel's loop that run for about `seconds` on a quiet machine: the
    fastest of three timings, so a load that passes leaves the loop no shorter."""
    per_iter = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        spin_kernel[1, s](y, 500_000)
        s.synchronize()
        per_iter = min(per_iter, (time.perf_counter() - t0) / 500_000)
    return int(min(2**31 - 1, seconds / max(per_iter, 1e-9)))


def _spin(mode_interpret, iters, stream):
    x = rt.device_zeros((N,), np.float32)
    spin_kernel[1, stream](x, iters, interpret=mode_interpret)
    return x


def test_sync_timeout_and_reset_stop_an_interpreted_while_true_kernel():
    rt.ensure_device()
    s = rt.Stream()
    x = _spin(True, -1, s)
    t0 = time.perf_counter()
    with raises(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, r"synchronize: stream \d+ must finish within "
                                                  r"timeout_ms, got timeout_ms=300"):
        s.synchronize(timeout_ms=300)
    assert time.perf_counter() - t0 < 0.3 + SLACK_S
    t0 = time.perf_counter()
    del x
    rt.reset_device(0)
    assert time.perf_counter() - t0 < SLACK_S
    rt.set_device(0)
    y = rt.to_device(np.zeros(N, np.float32))
    spin_kernel[1](y, 3, interpret=True)
    rt.current_stream().synchronize(timeout_ms=WAIT_S * 1000)
    assert np.all(y.copy_to_host() == 3)


def test_op_execute_timeout_stops_an_interpreted_while_true_kernel():
    rt.ensure_device()
    rt.set_op_execute_timeout(300)
    s = rt.Stream()
    _spin(True, -1, s)
    t0 = time.perf_counter()
    with raises(ACL_ERROR_RT_AICORE_TIMEOUT, r"kernel 'spin_kernel' \(launch on stream \d+\): the "
                                             r"kernel must finish within the op execute timeout"):
        s.synchronize()
    assert time.perf_counter() - t0 < 0.3 + SLACK_S


def test_compiled_long_loop_timeouts_hold_and_runtime_goes_on():
    rt.ensure_device()
    s = rt.Stream()
    y = rt.to_device(np.zeros(N, np.float32))
    spin_kernel[1, s](y, 3)                      # compile once, outside the timed part
    s.synchronize()
    assert np.all(y.copy_to_host() == 3)
    iters = calibrated_iters(s, y, 3.0)          # a loop of at least ~3 s
    _launch.set_core_count(2)
    rt.set_op_execute_timeout(300)
    x = _spin(False, iters, s)
    t0 = time.perf_counter()
    with raises(ACL_ERROR_RT_AICORE_TIMEOUT, r"the kernel must finish within the op execute "
                                             r"timeout, got op_execute_timeout_ms=300 exceeded"):
        s.synchronize()
    assert time.perf_counter() - t0 < 0.3 + SLACK_S
    assert np.all(x.copy_to_host() == 0)         # the loop has not ended: its result is unwritten
    rt.set_op_execute_timeout(0)
    y.copy_from_host(np.full(N, 3, np.float32))
    spin_kernel[1, s](y, 1)                      # a replacement worker runs it
    s.synchronize(timeout_ms=WAIT_S * 1000)
    assert np.all(y.copy_to_host() == 4)
    assert _launch.core_pool().abandoned >= 1


def _plus_half(x):
    return x + 0.5


def _plus_half_helper(x):
    return x + 0.5


@pytest.mark.parametrize("kind", ["prim", "cached_njit"])
def test_a_thread_stopped_while_a_primitive_compiles_leaves_the_compiler_usable(monkeypatch,
                                                                                 kind):
    """An interpreted kernel's first call of a primitive (or of a helper such as begin_block)
    compiles it, and a reset or the op timeout may stop its thread then. The compile runs in a
    thread of its own, so the stop lands in the kernel's thread once the compile is over, never
    inside Numba's compiler (where it could leave the compiler lock held, or LLVM's state
    broken)."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import CPUDispatcher
    from ascendc.lang import numba_link
    prim = numba_link.prim(_plus_half) if kind == "prim" else \
        numba_link.cached_njit(nogil=True)(_plus_half_helper)
    compiling, go_on, where = threading.Event(), threading.Event(), []
    real = CPUDispatcher.compile

    def held(self, sig):
        where.append(threading.get_ident())
        compiling.set()
        go_on.wait(WAIT_S)
        return real(self, sig)
    monkeypatch.setattr(CPUDispatcher, "compile", held)
    got = []

    def kernel_thread():
        try:
            got.append(prim(1.0))
        except KernelStop:
            got.append("stopped")
    t = threading.Thread(target=kernel_thread)
    t.start()
    assert compiling.wait(WAIT_S)
    _launch._interrupt(t.ident, KernelStop)      # as a reset stops an interpreted kernel
    go_on.set()
    t.join(WAIT_S)
    assert not t.is_alive() and got == ["stopped"]
    assert where == [where[0]] and where[0] != t.ident
    assert global_compiler_lock._lock.acquire(timeout=WAIT_S)
    global_compiler_lock._lock.release()
    assert prim(1.0) == 1.5                      # compiled once, callable
