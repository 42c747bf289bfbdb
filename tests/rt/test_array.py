"""rt.array: DeviceArray round trips, lifetime, DLPack."""
import gc

import ml_dtypes
import numpy as np
import pytest

import rt
from rt import memory as M
from rt.errors import ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_CONTEXT_NULL

from rt_test_helpers import raises


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.int64,
                                   np.complex64, np.bool_])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (2, 3, 33)])
def test_round_trip(dev0, dtype, shape):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    d = rt.to_device(a)
    assert (d.shape, d.dtype, d.size, d.ndim) == (a.shape, a.dtype, a.size, a.ndim)
    assert d.nbytes == a.nbytes and d.itemsize == a.itemsize and d.device == 0
    assert int(d.ptr) % 64 == 0
    back = d.copy_to_host()
    assert back.dtype == a.dtype and back.shape == a.shape
    assert back.tobytes() == a.tobytes() and d.host_view().tobytes() == a.tobytes()


def test_bf16_and_fp16_values(dev0):
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    for dt in (np.float16, ml_dtypes.bfloat16):
        d = rt.to_device(x.astype(dt))
        assert d.dtype == np.dtype(dt) and d.nbytes == 128
        np.testing.assert_array_equal(d.copy_to_host().astype(np.float32),
                                      x.astype(dt).astype(np.float32))
        assert d.host_view().dtype == np.dtype(dt)


def test_to_device_non_contiguous_and_copy_from_host_cast(dev0):
    a = np.arange(24, dtype=np.float64).reshape(4, 6)[:, ::2]
    d = rt.to_device(a)
    assert (d.copy_to_host() == a).all()
    f = rt.device_empty((2, 3), np.float32)
    f.copy_from_host([[1, 2, 3], [4, 5, 6]])          # lists and other dtypes are converted
    assert f.copy_to_host().tolist() == [[1, 2, 3], [4, 5, 6]]
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.DeviceArray\.copy_from_host: ary\.shape "
                                            r"must equal \(2, 3\), got ary\.shape=\(3, 2\)"):
        f.copy_from_host(np.zeros((3, 2)))
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.DeviceArray\.copy_to_host: out must be "
                                            r"C-contiguous float32\[2, 3\], "
                                            r"got out=float64\[2, 3\]"):
        f.copy_to_host(out=np.zeros((2, 3)))
    out = np.zeros((2, 3), np.float32)
    assert f.copy_to_host(out=out) is out and out[1, 2] == 6


def test_device_zeros_clears_reused_memory(dev0):
    d = rt.to_device(np.full(1000, 7, np.int32))
    addr = int(d.ptr)
    d.free()
    z = rt.device_zeros(1000, np.int32)
    assert int(z.ptr) == addr and not z.copy_to_host().any()


def test_free_context_manager_and_gc(dev0):
    with rt.device_empty((256,), np.float32) as d:
        assert rt.memory_stats()["allocation.all.current"] == 1
    assert rt.memory_stats()["allocation.all.current"] == 0
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"rt\.DeviceArray: the array must be live, got freed=True"):
        _ = d.ptr
    d.free()                                            # freeing twice is harmless
    for i in range(10_000):
        a = rt.device_empty((i % 97 + 1, 3), np.float16)
        a.host_view()[0, 0] = i
    del a
    gc.collect()
    st = rt.memory_stats()
    assert st["allocation.all.current"] == 0 and st["allocated_bytes.all.current"] == 0
    assert st["allocation.all.allocated"] == 10_001


def test_wrapping_existing_memory(dev0):
    p = rt.malloc(64)
    view = rt.DeviceArray((4, 4), np.float32, p)      # non-owning
    view.host_view()[:] = 1
    del view
    gc.collect()
    assert M.find_allocation(p) == (p, 64)              # still allocated
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.DeviceArray: ptr range must lie inside one live "
                                            r"allocation, got ptr=0x[0-9a-f]+, nbytes=128: "
                                            r"it overruns"):
        rt.DeviceArray((32,), np.float32, p)
    owned = rt.DeviceArray((16,), np.float32, int(p), owner=True)   # takes ownership of a plain int
    assert owned.ptr.device == 0 and owned.ptr.size == 64
    owned.free()
    assert M.find_allocation(p) is None


def test_reshape_shares_memory(dev0):
    d = rt.to_device(np.arange(12, dtype=np.int32))
    r = d.reshape(3, 4)
    assert int(r.ptr) == int(d.ptr) and r.copy_to_host()[2, 3] == 11
    del d
    gc.collect()
    assert r.copy_to_host()[1].tolist() == [4, 5, 6, 7]   # the view keeps its base alive
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"rt\.DeviceArray\.reshape: shape must have 12 elements"):
        r.reshape(5, 3)


def test_dlpack_to_numpy_is_zero_copy(dev0):
    d = rt.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert d.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(d)
    assert a.shape == (2, 3) and a.dtype == np.float32
    a[1, 2] = 100                                       # writes through to device memory
    assert d.copy_to_host()[1, 2] == 100
    del d
    gc.collect()
    assert a[1, 2] == 100 and rt.memory_stats()["allocation.all.current"] == 1   # kept alive
    del a
    gc.collect()
    assert rt.memory_stats()["allocation.all.current"] == 0


def test_no_silent_host_conversion(dev0):
    d = rt.device_zeros(4)
    assert not hasattr(d, "__array__") and not hasattr(d, "__array_interface__")


def test_stream_variants_delegate_to_memcpy_async(dev0, monkeypatch):
    calls = []

    def fake_async(dst, src, count, kind, stream):
        calls.append((kind, count, stream))
        M.copy_bytes(dst, src, count, kind)

    monkeypatch.setattr(rt.copy, "memcpy_async", fake_async)
    d = rt.to_device(np.arange(4, dtype=np.float32), stream="s")
    out = d.copy_to_host(stream="s")
    assert out.tolist() == [0, 1, 2, 3]
    assert calls == [(M.MemcpyKind.HOST_TO_DEVICE, 16, "s"), (M.MemcpyKind.DEVICE_TO_HOST, 16, "s")]


def test_array_after_reset_device_does_not_free_new_allocations(dev0):
    old = rt.device_empty(100, np.uint8)
    addr = int(old.ptr)
    rt.reset_device(0)
    rt.set_device(0)
    new = rt.malloc(100)
    assert int(new) == addr                             # the same address, a new allocation
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"it points into free memory|overruns|not inside"):
        rt.DeviceArray((200,), np.uint8, new)
    del old
    gc.collect()                                        # old's finalizer must not free `new`
    assert M.find_allocation(new) == (new, 100)


def test_array_whose_memory_was_freed_by_hand_does_not_free_its_reuse(dev0):
    d = rt.device_empty(100, np.uint8)
    rt.free(d.ptr)                                      # the user's mistake
    new = rt.malloc(100)
    assert int(new) == int(d.ptr)                       # same block reused
    del d
    gc.collect()
    assert M.find_allocation(new) == (new, 100)


def test_device_array_errors(dev0):
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"rt\.DeviceArray: shape must be a tuple of ints >= 0, "
                                            r"got shape=\(-1,\)"):
        rt.device_empty(-1)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"device must be where ptr lives"):
        rt.DeviceArray(4, np.uint8, rt.malloc(4), device=1)
    rt.reset_device(0)
    with raises(ACL_ERROR_RT_CONTEXT_NULL, r"rt\.DeviceArray: a current device must be set"):
        rt.device_empty(4)
