"""Host memory mapped into a device's address space (rt.hostmem.host_register,
rt.DeviceArray.map_host, rt.array.HostArgs) and numpy arguments of launches without copies.

The copy semantics these keep (rt.array.HostArgs): during a synchronous launch with numpy arrays
the kernel never sees its own writes through another argument, and after a kernel fault every
host array is unchanged. kernels.add keeps them too, except that an `out` sharing no memory with
x or y is written in place (documented in kernels.add.add).
"""
import numpy as np
import pytest

import ascendc as asc
import rt
from rt import array as rt_array
from rt import hostmem
from rt.errors import ACL_ERROR_RT_FEATURE_NOT_SUPPORT
from rt.pool import ADDR_SHIFT, device_base
from kernels.add import add

TILE = 64
MAPS = rt.DeviceArray.can_map_host()
needs_mapping = pytest.mark.skipif(
    not MAPS, reason="rt.memory's device_view does not resolve mapped host memory yet "
                     "(the two-line hook in rt.memory._checked_view)")


@pytest.fixture(autouse=True)
def _no_mappings_left():
    yield
    hostmem._unregister_for_tests()


@pytest.fixture(params=["mapped", "copied"])
def mapping(request, monkeypatch):
    """Run once with numpy arguments mapped (when the runtime can) and once copied."""
    if request.param == "mapped":
        if not MAPS:
            pytest.skip("the runtime does not resolve mapped host memory")
    else:
        monkeypatch.setattr(rt_array, "_MAPPING_RESOLVES", [False])
    return request.param


# -- the registry (rt.hostmem) -------------------------------------------------------------------
def test_register_gives_an_aligned_address_in_the_devices_mapped_window():
    a = np.arange(100, dtype=np.float32)
    b = np.arange(10, dtype=np.int16)
    pa, pb = hostmem.host_register(a, 1), hostmem.host_register(b, 1, write=False)
    for p in (pa, pb):
        assert p >> ADDR_SHIFT == (device_base(1) >> ADDR_SHIFT) and p & hostmem.MAPPED_WINDOW
        assert p % 64 == 0 and hostmem.is_mapped_address(p)
    assert pb >= pa + 400                                   # never overlapping
    v = hostmem.mapped_view(pa + 8, 392)
    assert v.ctypes.data == a.ctypes.data + 8               # the host memory itself
    v.view(np.float32)[0] = -1
    assert a[2] == -1
    assert not hostmem.mapped_view(pb, 20).flags.writeable  # a read-only mapping
    hostmem.host_unregister(pa)
    assert hostmem.host_register(np.zeros(4, np.uint8), 1) == pa     # its space is reused


def test_mapped_view_keeps_the_bounds_of_an_allocation():
    p = hostmem.host_register(np.zeros(10, np.float32), 0)
    with pytest.raises(rt.AclError, match=r"k: args\[2\] range must lie inside one live "
                                          r"allocation, got args\[2\]=0x[0-9a-f]+, nbytes=44: "
                                          r"it overruns the mapped host buffer at 0x[0-9a-f]+ "
                                          r"\(size 40\) by 4 bytes") as e:
        hostmem.mapped_view(p, 44, "k", 507042, "args[2]")
    assert e.value.code == 507042
    hostmem.host_unregister(p)
    with pytest.raises(rt.AclError, match="inside no live mapping"):
        hostmem.mapped_view(p, 4)
    with pytest.raises(rt.AclError, match=r"rt.host_unregister: addr must be a live mapped "
                                          r"address returned by host_register, got addr=0x"):
        hostmem.host_unregister(p)


def test_register_rejects_non_contiguous_and_read_only_for_writing():
    with pytest.raises(rt.AclError, match=r"rt.host_register: ary must be a C-contiguous numpy "
                                          r"array, got strides=\(8,\)"):
        hostmem.host_register(np.zeros(10, np.float32)[::2], 0)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(rt.AclError, match=r"ary must be writable for a writable mapping, got a "
                                          r"read-only array \(register it with write=False\)"):
        hostmem.host_register(ro, 0)
    assert hostmem.host_register(ro, 0, write=False)


def test_map_host_without_the_runtimes_mapping_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(rt_array, "_MAPPING_RESOLVES", [False])
    rt.ensure_device()
    with pytest.raises(rt.AclError, match=r"rt.DeviceArray.map_host: device memory access must "
                                          r"resolve mapped host memory") as e:
        rt.DeviceArray.map_host(np.zeros(4, np.float32))
    assert e.value.code == ACL_ERROR_RT_FEATURE_NOT_SUPPORT


def test_mem_check_launch_checks_a_mapped_argument(monkeypatch):
    monkeypatch.setenv("ASCEND_MEM_CHECK", "1")
    rt.init()
    rt.set_device(0)
    seen = []

    class Probe(rt.KernelBinary):
        name = "probe"

        def run_blocks(self, first, last, block_dim, args, barrier=None):
            seen.append(args)

    p = hostmem.host_register(np.zeros(8, np.float32), 0)
    rt.launch(Probe(), 1, (p,))
    rt.current_stream().synchronize()
    assert seen == [(p,)]
    hostmem.host_unregister(p)
    with pytest.raises(rt.AclError, match=r"launch: kernel probe: args\[0\] range must lie "
                                          r"inside one live allocation.*inside no live mapping"):
        rt.launch(Probe(), 1, (p,))


# -- DeviceArray.map_host ------------------------------------------------------------------------
@needs_mapping
def test_map_host_is_the_host_array_in_place():
    rt.ensure_device()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with rt.DeviceArray.map_host(a) as d:
        p = d.ptr
        assert d.is_mapped_host and d.shape == (3, 4) and d.dtype == np.float32
        assert d.host_view().ctypes.data == a.ctypes.data
        rt.memory.device_view(d.ptr, d.nbytes).view(np.float32)[5] = 100
        assert a[1, 1] == 100
        np.testing.assert_array_equal(d.copy_to_host(), a)
        d.reshape(12).copy_from_host(np.zeros(12, np.float32))
        assert not a.any()
    with pytest.raises(rt.AclError, match="inside no live mapping"):
        rt.memory.device_view(p, 4)


@needs_mapping
def test_a_kernel_on_mapped_arrays_reads_and_writes_them_in_place(interpret):
    rt.ensure_device()
    x = np.arange(2 * TILE, dtype=np.float32)
    z = np.zeros_like(x)
    with rt.DeviceArray.map_host(x, write=False) as dx, rt.DeviceArray.map_host(z) as dz:
        swap_halves[1](dx, dz, TILE, interpret=interpret)
        rt.current_stream().synchronize()
    np.testing.assert_array_equal(z, np.r_[x[TILE:], x[:TILE]])


def test_host_args_map_what_is_only_read_and_copy_back_what_is_written(mapping):
    rt.ensure_device()
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    z = np.zeros(8, np.float32)
    args = rt_array.HostArgs()
    try:
        dx, dz = args.add(x, written=False), args.add(z, written=True)
        assert dx.is_mapped_host == (mapping == "mapped") and not dz.is_mapped_host
        rt.memory.device_view(dz.ptr, 32).view(np.float32)[:] = 7
        assert not z.any()                       # a written array changes only at copy_back
        args.copy_back()
        assert (z == 7).all()
        np.testing.assert_array_equal(dx.copy_to_host(), x)
    finally:
        args.free()
    assert args.bufs == [] and dx._ptr is None and dz._ptr is None


# -- numpy arguments of a launch: copy semantics kept --------------------------------------------
@asc.jit
def swap_halves(x: asc.GlobalAddress, z: asc.GlobalAddress, half: int):
    """z = [x[half:], x[:half]]: each half of z is read from the other half of x."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, 2 * half)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, 2 * half)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, TILE * 4)
    for h in range(2):
        t = q.alloc_tensor(x.dtype)
        asc.data_copy(t, xg[(1 - h) * half:], half)
        q.enque(t)
        t = q.deque(x.dtype)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)      # a VECIN deque orders V only
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy(zg[h * half:], t, half)
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)   # the next copy in overwrites what MTE3
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)  # read: a VECIN free orders V only
        q.free_tensor(t)


@asc.jit
def copy_then_fault(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    """Copies x to z, then binds a tensor past z's end: a GM fault after z was written."""
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z, n)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN, 1)
    pipe.init_buffer(q, 1, TILE * 4)
    t = q.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, n)
    q.enque(t)
    t = q.deque(x.dtype)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)      # a VECIN deque orders V only
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(zg, t, n)
    q.free_tensor(t)
    past = asc.GlobalTensor()
    past.set_global_buffer(z + n, n)


def test_same_array_as_input_and_output_sees_no_write_during_the_launch(interpret):
    x = np.arange(2 * TILE, dtype=np.float32)
    a = x.copy()
    swap_halves[1](a, a, TILE, interpret=interpret)
    np.testing.assert_array_equal(a, np.r_[x[TILE:], x[:TILE]])


def test_non_contiguous_array_argument_is_still_refused():
    x = np.zeros(4 * TILE, np.float32)[::2]
    with pytest.raises(rt.AclError, match=r"swap_halves: array arguments must be C-contiguous, "
                                          r"got x with strides \(8,\)"):
        swap_halves[1](x, np.zeros(2 * TILE, np.float32), TILE)


def test_a_kernel_fault_leaves_every_host_array_unchanged(interpret):
    x = np.arange(TILE, dtype=np.float32) + 1
    z = np.zeros(TILE, np.float32)
    with pytest.raises(rt.AclError, match=r"kernel 'copy_then_fault'\[1\]: block_idx=0/1: "
                                          r"GlobalTensor.set_global_buffer: GM write must stay "
                                          r"inside argument 'z'") as e:
        copy_then_fault[1](x, z, TILE, interpret=interpret)
    assert e.value.code == 507043
    assert not z.any(), "the kernel's writes to z before the fault must not reach the host"
    np.testing.assert_array_equal(x, np.arange(TILE, dtype=np.float32) + 1)


# -- kernels.add with numpy arguments ------------------------------------------------------------
def test_add_numpy_in_and_out(interpret, mapping):
    rng = np.random.default_rng(0)
    x, y = rng.random(3 * 8192 + 5, np.float32), rng.random(3 * 8192 + 5, np.float32)
    np.testing.assert_array_equal(add(x, y, interpret=interpret), x + y)
    out = np.full_like(x, np.nan)
    assert add(x, y, out=out, interpret=interpret) is out
    np.testing.assert_array_equal(out, x + y)


def test_add_out_is_an_input(interpret, mapping):
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    a = x.copy()
    add(a, y, out=a, interpret=interpret)
    np.testing.assert_array_equal(a, x + y)
    b = x.copy()
    add(b, b, out=b, interpret=interpret)
    np.testing.assert_array_equal(b, x + x)


def test_add_out_overlapping_an_input(interpret, mapping):
    buf = np.arange(1001, dtype=np.float32)
    y = np.ones(1000, np.float32)
    ref = buf[:-1] + y                  # what copies in and back give: x read before z written
    add(buf[:-1], y, out=buf[1:], interpret=interpret)
    np.testing.assert_array_equal(buf[1:], ref)
    assert buf[0] == 0


def test_add_read_only_and_non_contiguous_inputs(interpret, mapping):
    x = np.arange(4000, dtype=np.float32)
    x.flags.writeable = False
    y = np.arange(8000, dtype=np.float32)[::2]
    np.testing.assert_array_equal(add(x, y, interpret=interpret), x + y)
    np.testing.assert_array_equal(add(x, x, interpret=interpret), x + x)
    assert not x.flags.writeable


def test_add_rejects_a_bad_out():
    x = np.zeros(100, np.float32)
    with pytest.raises(ValueError, match=r"add: out must be a ndarray of shape \(100,\) and "
                                         r"dtype float32, got out=ndarray \(99,\)/float32"):
        add(x, x, out=np.zeros(99, np.float32))
    ro = np.zeros(100, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"add: out must be a writable C-contiguous array, got "
                                         r"out with strides=\(4,\), writeable=False"):
        add(x, x, out=ro)
    with pytest.raises(ValueError, match=r"out must be a DeviceArray"):
        rt.ensure_device()
        add(rt.to_device(x), rt.to_device(x), out=x)


# a synchronous launch maps a read-only input (a copy-back into it used to fail)
def test_read_only_input_array(interpret):
    x = np.arange(2 * TILE, dtype=np.float32)
    x.flags.writeable = False
    z = np.zeros_like(x)
    swap_halves[1](x, z, TILE, interpret=interpret)
    np.testing.assert_array_equal(z, np.r_[x[TILE:], x[:TILE]])


