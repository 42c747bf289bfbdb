"""Timeouts and stopping for all-resident launches (kernels that call sync_all, rt/resident.py): a
device reset or the op execute timeout ends them too. Block 0 spins (interpret mode) while the
other blocks wait at the barrier for it; the waiting blocks are released by aborting the barrier,
the spinning one is interrupted at its next bytecode, and the runtime stays usable."""
import ctypes
import sys
import threading

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

import ascendc as asc
import rt
from ascendc.lang import barrier
from rt.errors import ACL_ERROR_RT_AICORE_TIMEOUT, KernelStop

from rt_test_helpers import raises

SLOT = 8
GENEROUS_S = 300        # bounds a hang, not the speed of a loaded machine


@asc.jit
def resident_spin_kernel(x: asc.GlobalAddress, iters: int):
    """Block 0 adds 1 to its slot `iters` times (forever if iters < 0) before the barrier; then
    every block writes the sum of all slots into its own."""
    b = asc.get_block_idx()
    n = asc.get_block_num()
    g = asc.GlobalTensor()
    g.set_global_buffer(x, n * SLOT)
    i = 0
    while b == 0 and (iters < 0 or i < iters):
        g.set_value(0, g.get_value(0) + 1.0)
        i += 1
    asc.sync_all()
    s = 0.0
    for j in range(n):
        s += g.get_value(j * SLOT)
    asc.sync_all()
    g.set_value(b * SLOT, s)


def _works_again():
    y = rt.device_zeros((4 * SLOT,), np.float32)
    resident_spin_kernel[4](y, 3, interpret=True)
    rt.current_stream().synchronize(timeout_ms=GENEROUS_S * 1000)
    assert np.all(y.copy_to_host()[::SLOT] == 3)


def test_reset_device_ends_a_resident_launch(dev0):
    x = rt.device_zeros((4 * SLOT,), np.float32)
    s = rt.Stream()
    resident_spin_kernel[4, s](x, -1, interpret=True)
    assert not s.query()
    resetter = threading.Thread(target=rt.reset_device, args=(0,), daemon=True)
    resetter.start()
    resetter.join(GENEROUS_S)          # returns (a hang never would); no bound on its speed
    assert not resetter.is_alive()
    rt.set_device(0)
    _works_again()


@intrinsic
def _call2(typingctx, fnptr, a, b):
    """`fnptr(a, b)` for the address of a C function of two 64-bit arguments."""
    sig = types.int64(types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = builder.inttoptr(args[0], ir.FunctionType(i64, [i64, i64]).as_pointer())
        return builder.call(fn, [args[1], args[2]])
    return sig, codegen


@njit        # holds the GIL: it may call the C API, as the runtime does from another thread
def _stop_then_wait(set_async_exc, ident, stop, wait, key):
    _call2(set_async_exc, ident, stop)      # a KernelStop now pending for this thread ...
    return barrier.call_i64(wait, key)      # ... when compiled code calls the barrier's wait


def test_a_stop_pending_when_compiled_code_calls_back_is_cleared_there(monkeypatch):
    """rt stops a cancelled kernel's threads with an asynchronous KernelStop; one that was sent
    while the thread ran compiled code fires at the first bytecode of the next callback. From a
    ctypes thunk it escaped as "Exception ignored on calling ctypes callback function"
    (PytestUnraisableExceptionWarning) and the kernel got an undefined status; the callback is
    now a native function that clears it and answers WAIT_RAISED."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    set_exc = ctypes.cast(ctypes.pythonapi.PyThreadState_SetAsyncExc, ctypes.c_void_p).value
    got = _stop_then_wait(set_exc, threading.get_ident(), id(KernelStop), barrier.WAIT_ADDR,
                          12345)
    assert got == barrier.WAIT_RAISED and unraisable == []
    # without a stop: the wait itself answers (no barrier under that key)
    assert _stop_then_wait(set_exc, threading.get_ident(), 0, barrier.WAIT_ADDR, 12345) == \
        barrier.NO_BARRIER


def test_op_execute_timeout_ends_a_resident_launch(dev0):
    rt.set_op_execute_timeout(300)
    try:
        x = rt.device_zeros((4 * SLOT,), np.float32)
        s = rt.Stream()
        resident_spin_kernel[4, s](x, -1, interpret=True)
        with raises(ACL_ERROR_RT_AICORE_TIMEOUT, r"kernel 'resident_spin_kernel' \(launch on "
                                                 r"stream \d+\): the kernel must finish within "
                                                 r"the op execute timeout"):
            s.synchronize()
    finally:
        rt.set_op_execute_timeout(0)
    _works_again()
