"""Host copy rules as CANN has them: memset_async on malloc_host memory; memcpy / memset through
raw pointers checked against the count the caller passes (dest_max) and the allocation as CANN
rounds it (align32(size) + 32; DVPP buffers included); what CANN refuses, refused with its code."""
import numpy as np
import pytest

import rt
import rt.acl as acl
from rt.errors import ACL_ERROR_RT_PARAM_INVALID
from rt.pool import alloc_bytes


@pytest.fixture
def stream():
    assert acl.init() in (0, acl.ACL_ERROR_REPEAT_INITIALIZE)
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    yield s
    assert acl.rt.destroy_stream(s) == 0


def test_memset_async_on_malloc_host_memory_runs_on_the_stream(stream):
    hp, ret = acl.rt.malloc_host(4096)
    assert ret == 0
    host = acl.util.ptr_to_numpy(hp, (4096,), acl.NPY_UINT8)
    host[:] = 1
    assert acl.rt.memset_async(hp, 4096, 7, 1000, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (host[:1000] == 7).all() and (host[1000:] == 1).all()
    assert acl.rt.memset_async(hp, 4096, 0, 4097, stream) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.free_host(hp) == 0


def test_memset_async_on_pageable_memory_is_refused(stream):
    a = np.zeros(64, np.uint8)
    assert acl.rt.memset_async(acl.util.numpy_to_ptr(a), 64, 1, 64, stream) == \
        ACL_ERROR_RT_PARAM_INVALID
    assert "memset_async: ptr must be device memory or host memory from malloc_host, got a " \
           "pageable host buffer" in acl.get_recent_err_msg()
    assert (a == 0).all()


def test_memcpy_is_bounded_by_the_rounded_allocation(stream):
    size = 1000
    real = alloc_bytes(size)                          # 1024 + 32
    dp, ret = acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    src = np.arange(real + 32, dtype=np.uint8)
    ptr = acl.util.numpy_to_ptr(src)
    assert acl.rt.memcpy(dp, real, ptr, real, acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    back = np.zeros(real, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(back), real, dp, real,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    np.testing.assert_array_equal(back, src[:real])
    assert acl.rt.memset(dp, real, 3, real) == 0
    # one byte past the allocation: refused, naming both sizes
    assert acl.rt.memcpy(dp, real + 1, ptr, real + 1, acl.ACL_MEMCPY_HOST_TO_DEVICE) == \
        ACL_ERROR_RT_PARAM_INVALID
    assert f"overruns the allocation at 0x{dp:x} (size 1000, {real} bytes as allocated) by 1 " \
           f"bytes" in acl.get_recent_err_msg()
    # the count the caller passes must fit what it says the destination holds
    assert acl.rt.memcpy(dp, 100, ptr, 200, acl.ACL_MEMCPY_HOST_TO_DEVICE) == \
        ACL_ERROR_RT_PARAM_INVALID
    assert "count must be <= dest_max, got count=200, dest_max=100" in acl.get_recent_err_msg()
    # DeviceArray stays bounded by its own size
    arr = rt.DeviceArray((size,), np.uint8, dp)
    with pytest.raises(rt.AclError, match="count must be <= dst.nbytes"):
        rt.memcpy(arr, np.zeros(real, np.uint8), real)
    assert acl.rt.free(dp) == 0


def test_memcpy_past_a_dvpp_buffers_requested_size_inside_its_allocation(stream):
    size = 3 * 64 * 48 // 2                           # a 64x48 YUV420SP picture
    dp, ret = acl.media.dvpp_malloc(size)
    assert ret == 0 and dp % 128 == 0
    src = np.arange(size + 64, dtype=np.uint8)
    ptr = acl.util.numpy_to_ptr(src)
    assert acl.rt.memcpy(dp, size + 32, ptr, size + 32, acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    back = np.zeros(size + 32, np.uint8)
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(back), size + 32, dp, size + 32,
                               acl.ACL_MEMCPY_DEVICE_TO_HOST, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    np.testing.assert_array_equal(back, src[:size + 32])
    big = np.zeros(size + 4096, np.uint8)
    assert acl.rt.memcpy(dp, big.size, acl.util.numpy_to_ptr(big), big.size,
                         acl.ACL_MEMCPY_HOST_TO_DEVICE) == ACL_ERROR_RT_PARAM_INVALID
    assert "as allocated) by" in acl.get_recent_err_msg()
    assert acl.media.dvpp_free(dp) == 0
