"""Timeouts and stopping for all-resident launches (kernels that call sync_all, rt/resident.py): a
device reset or the op execute timeout ends them too. Block 0 spins (interpret mode) while the
other blocks wait at the barrier for it; the waiting blocks are released by aborting the barrier,
the spinning one is interrupted at its next bytecode, and the runtime stays usable."""
import time

import numpy as np

import ascendc as asc
import rt
from rt.errors import ACL_ERROR_RT_AICORE_TIMEOUT

from rt_test_helpers import raises

SLOT = 8


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
    rt.current_stream().synchronize(timeout_ms=10_000)
    assert np.all(y.copy_to_host()[::SLOT] == 3)


def test_reset_device_ends_a_resident_launch(dev0):
    x = rt.device_zeros((4 * SLOT,), np.float32)
    s = rt.Stream()
    resident_spin_kernel[4, s](x, -1, interpret=True)
    assert not s.query()
    t0 = time.perf_counter()
    rt.reset_device(0)
    assert time.perf_counter() - t0 < 10.0     # returns (a hang would never); slack for load
    rt.set_device(0)
    _works_again()


def test_op_execute_timeout_ends_a_resident_launch(dev0):
    rt.set_op_execute_timeout(300)
    try:
        x = rt.device_zeros((4 * SLOT,), np.float32)
        s = rt.Stream()
        resident_spin_kernel[4, s](x, -1, interpret=True)
        t0 = time.perf_counter()
        with raises(ACL_ERROR_RT_AICORE_TIMEOUT, r"kernel 'resident_spin_kernel' \(launch on "
                                                 r"stream \d+\): the kernel must finish within "
                                                 r"the op execute timeout"):
            s.synchronize()
        assert time.perf_counter() - t0 < 0.3 + 10.0   # slack for a loaded machine
    finally:
        rt.set_op_execute_timeout(0)
    _works_again()
