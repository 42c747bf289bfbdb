"""asc.LocalMemAllocator (static-tensor programming without TPipe) and GM address arithmetic
that only traps when an out-of-bounds address is dereferenced, both modes."""
import numpy as np
import pytest

import ascendc as asc


@asc.jit
def allocator_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    alloc = asc.LocalMemAllocator(hard=asc.Hardware.UB)
    a = alloc.alloc(asc.TPosition.VECIN, asc.float32, n)
    first = alloc.get_cur_addr()
    b = alloc.alloc(asc.TPosition.VECOUT, asc.float32, n)
    used = alloc.get_cur_addr()
    asc.data_copy(a, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(b, a, 1.0 * first, n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.adds(b, b, 1.0 * used, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, b, n)


@pytest.mark.parametrize("n", [64, 40])
def test_local_mem_allocator_hands_out_consecutive_32_byte_regions(n, mode):
    x = np.arange(n, dtype=np.float32)
    z = np.zeros_like(x)
    allocator_kernel[1](x, z, n, interpret=(mode == "interpret"))
    first = (n * 4 + 31) // 32 * 32
    np.testing.assert_array_equal(z, x * first + 2 * first)


@asc.jit
def wrong_position(x: asc.GlobalAddress):
    alloc = asc.LocalMemAllocator(hard=asc.Hardware.L1)
    t = alloc.alloc(asc.TPosition.VECIN, asc.float32, 8)
    asc.printf("%d", t.get_size())


def test_allocation_outside_the_allocators_memory_is_refused(mode):
    with pytest.raises(Exception, match=r"asc.LocalMemAllocator.alloc: pos must be a TPosition in "
                                        r"the allocator's memory \(L1\), got pos=VECIN"):
        wrong_position[1](np.zeros(8, np.float32), interpret=(mode == "interpret"))


@asc.jit
def far_address_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, use_far: int):
    xg, zg, far = asc.GlobalTensor(), asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg.set_global_buffer(z, n)
    far.set_global_buffer(x + 100000)     # formed past x's end: no access yet
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, n * 4)
    t = q.alloc_tensor(asc.float32)
    if use_far == 1:
        asc.data_copy(t, far, n)
    else:
        asc.data_copy(t, xg, n)
    q.enque(t)
    t = q.deque(asc.float32)             # orders MTE2 before V only: V before MTE3 as well
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, t, n)
    q.free_tensor(t)


def test_gm_address_past_the_end_traps_only_when_dereferenced(mode):
    x = np.arange(64, dtype=np.float32)
    z = np.zeros_like(x)
    far_address_kernel[1](x, z, 64, 0, interpret=(mode == "interpret"))
    np.testing.assert_array_equal(z, x)
    with pytest.raises(Exception, match=r"data_copy: GM read must stay inside argument 'x' "
                                        r"\(64 elements\)"):
        far_address_kernel[1](x, z, 64, 1, interpret=(mode == "interpret"))
