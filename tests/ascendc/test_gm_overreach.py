"""GM over-reach (docs/limitations.md): a kernel reaching past a GM argument's end but inside its
allocation (``aclrtMalloc``: align32(size) + 32 bytes) runs, as on hardware; checked mode warns
once per launch per argument; beyond the allocation it stays a trap. numpy and rt.DeviceArray
arguments, both modes."""
import re
import warnings

import numpy as np
import pytest

import ascendc as asc
import rt
from rt.pool import alloc_bytes

from kernels_for_tests import scalar_first_oob_kernel

TILE = 64       # float32 elements each copy moves: 256 bytes


@asc.jit
def tail_copy(x: asc.GlobalAddress, z: asc.GlobalAddress):
    """z[:TILE] = x[:TILE] in one GM->UB->GM round trip, whatever the arguments' sizes."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, TILE)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, TILE)
    pipe = asc.TPipe()
    qi = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(qi, 1, TILE * 4)
    a = qi.alloc_tensor(x.dtype)
    asc.data_copy(a, xg, TILE)
    qi.enque(a)
    a = qi.deque(x.dtype)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)      # a VECIN deque orders V only
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, a, TILE)
    qi.free_tensor(a)


@asc.jit
def read_scalar(x: asc.GlobalAddress, z: asc.GlobalAddress, i: int):
    """z[0] = x[i] through scalar GM access."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z)
    zg.set_value(0, xg.get_value(i))


@pytest.fixture
def dev0():
    rt.ensure_device()


def _launch(kernel, *args, interpret, checked=True):
    """Run a launch; the over-reach warnings it gave (messages)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        kernel[1](*args, interpret=interpret, checked=checked)
        rt.current_stream().synchronize()
    return [str(w.message) for w in got if "accessed past its end" in str(w.message)]


def _msg(kernel, name, over, offset, reach):
    return (f"{kernel}: GM argument '{name}' accessed past its end by {over} bytes (offset "
            f"{offset}), inside its allocation of {reach} bytes (hardware tolerates this)")


def test_alloc_bytes_is_aclrtmallocs_rounding(dev0):
    assert [alloc_bytes(n) for n in (1, 32, 33, 224, 256)] == [64, 64, 96, 256, 288]
    assert alloc_bytes(224, huge1g=True) == 224
    p = rt.malloc(224)
    try:
        assert rt.memory.kernel_view(p, 224).size == 256      # the kernel reaches 256 bytes
        assert rt.memory.device_view(p, 224).size == 224
        with pytest.raises(rt.AclError, match=r"overruns the allocation .* by 32 bytes"):
            rt.memory.device_view(p, 256)       # host access stays bounded by the size asked
        assert rt.memory.kernel_view(p + 32, 64).size == 224  # inside: to the allocation's end
    finally:
        rt.free(p)


def test_device_arrays_run_inside_the_allocation_and_warn(dev0, interpret):
    n = 56                                       # 224 bytes: allocation 256 = TILE floats
    x = rt.to_device(np.arange(n, dtype=np.float32))
    z = rt.device_zeros((n,), np.float32)
    rt.memory.kernel_view(x.ptr, x.nbytes)[224:] = np.float32([-7] * 8).view(np.uint8)
    got = _launch(tail_copy, x, z, interpret=interpret)
    assert got == [_msg("tail_copy", "x", 32, 0, 256), _msg("tail_copy", "z", 32, 0, 256)]
    np.testing.assert_array_equal(z.copy_to_host(), np.arange(n, dtype=np.float32))
    pad = rt.memory.kernel_view(z.ptr, z.nbytes)[224:].view(np.float32)
    np.testing.assert_array_equal(pad, np.full(8, -7, np.float32))   # the write landed there


def test_unchecked_is_silent(dev0, interpret):
    x = rt.to_device(np.arange(56, dtype=np.float32))
    z = rt.device_zeros((56,), np.float32)
    assert _launch(tail_copy, x, z, interpret=interpret, checked=False) == []
    np.testing.assert_array_equal(z.copy_to_host(), np.arange(56, dtype=np.float32))


def test_numpy_arguments_get_the_device_copys_allocation(dev0, interpret):
    host_x = np.arange(TILE, dtype=np.float32)
    host_z = np.full(TILE, 5, np.float32)
    x, z = host_x[:56], host_z[:56]              # views: the bytes after them belong to the user
    got = _launch(tail_copy, x, z, interpret=interpret)
    assert got == [_msg("tail_copy", "x", 32, 0, 256), _msg("tail_copy", "z", 32, 0, 256)]
    np.testing.assert_array_equal(z, np.arange(56, dtype=np.float32))
    np.testing.assert_array_equal(host_z[56:], np.full(8, 5, np.float32))   # not written
    np.testing.assert_array_equal(host_x, np.arange(TILE, dtype=np.float32))


def test_scalar_access_past_the_end_warns_with_its_offset(dev0, interpret):
    x = rt.to_device(np.arange(8, dtype=np.float32))      # 32 bytes: allocation 64
    rt.memory.kernel_view(x.ptr, x.nbytes)[40:44] = np.float32([3.5]).view(np.uint8)
    z = rt.device_zeros((1,), np.float32)
    got = _launch(read_scalar, x, z, 10, interpret=interpret)
    assert got == [_msg("read_scalar", "x", 12, 40, 64)]
    assert z.copy_to_host()[0] == 3.5
    assert _launch(read_scalar, x, z, 7, interpret=interpret) == []      # inside: silent


@pytest.mark.parametrize("kind", ["numpy", "device"])
def test_beyond_the_allocation_is_still_a_trap(dev0, interpret, kind):
    x = np.arange(40, dtype=np.float32)          # 160 bytes: allocation 192 < TILE * 4
    z = np.zeros(40, np.float32)
    if kind == "device":
        x, z = rt.to_device(x), rt.to_device(z)
    with pytest.raises(rt.AclError, match=re.escape(
            "GlobalTensor.set_global_buffer: GM read must stay inside argument 'x' "
            "(40 elements), got elements [0, 64)")) as e:
        _launch(tail_copy, x, z, interpret=interpret)
    assert e.value.code == 507042


def test_binding_inside_the_allocation_runs_silently(dev0, interpret):
    # binding past the argument's end ([8, 72) of 64 elements) but inside its 288-byte
    # allocation is no trap and, accessing nothing, no over-reach; past the allocation
    # ([16, 80)) it is: tests/ascendc/test_language.py::test_gm_errors_name_the_gm_argument_...
    x = np.zeros(TILE, np.float32)
    assert _launch(scalar_first_oob_kernel, 8, x, interpret=interpret) == []


def _array_before_a_guard_page(n):
    """n float32 that end exactly where an inaccessible page begins (no padding is readable)."""
    import ctypes
    import mmap
    page = mmap.PAGESIZE
    mm = mmap.mmap(-1, 2 * page, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf = np.frombuffer(mm, np.uint8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    if libc.mprotect(buf.ctypes.data + page, page, 0) != 0:     # PROT_NONE
        pytest.skip("mprotect is not available")
    x = buf[page - 4 * n:page].view(np.float32)
    x[:] = np.arange(n, dtype=np.float32)
    return x, (mm, buf)


def test_read_only_numpy_argument_is_mapped_with_its_padding_or_copied(dev0):
    args = rt.array.HostArgs()
    try:
        x = np.arange(56, dtype=np.float32)
        d = args.add(x, False)                   # readable after it: mapped in place
        assert d.is_mapped_host and rt.memory.kernel_view(d.ptr, d.nbytes).size == 256
        assert rt.memory.kernel_view(d.ptr, d.nbytes).ctypes.data == x.ctypes.data
        g, keep = _array_before_a_guard_page(56)
        d = args.add(g, False)                   # nothing readable after it: a device copy
        assert not d.is_mapped_host and rt.memory.kernel_view(d.ptr, d.nbytes).size == 256
        np.testing.assert_array_equal(d.copy_to_host(), g)
    finally:
        args.free()


def test_numpy_argument_before_a_guard_page_reads_its_copys_padding(dev0, interpret):
    x, keep = _array_before_a_guard_page(56)
    z = np.zeros(56, np.float32)
    got = _launch(tail_copy, x, z, interpret=interpret)       # no crash: x was copied
    assert got == [_msg("tail_copy", "x", 32, 0, 256), _msg("tail_copy", "z", 32, 0, 256)]
    np.testing.assert_array_equal(z, np.arange(56, dtype=np.float32))
