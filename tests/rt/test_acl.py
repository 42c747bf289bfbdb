"""rt.acl: the pyACL facade returns (value, ret) / ret and never raises for an API error."""
import threading

import numpy as np
import pytest

import rt.acl as acl
from rt.errors import (ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_RT_INVALID_DEVICEID,
                       ACL_ERROR_RT_MEMORY_FREE, ACL_ERROR_INVALID_PARAM,
                       ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_INVALID_RESOURCE_HANDLE,
                       ACL_ERROR_RT_STREAM_NO_CB_REG,
                       ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, ACL_ERROR_RT_CONTEXT_NULL,
                       ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_UNINITIALIZE,
                       ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, AclError)

MiB = 1 << 20


def test_seed_flow():
    """init, set_device(0), malloc 1 MiB, memcpy H2D from numpy, synchronize, memcpy D2H, free,
    reset, finalize: every call returns ACL_SUCCESS and the data round-trips."""
    assert acl.init() == acl.ACL_SUCCESS
    assert acl.rt.set_device(0) == 0
    dev_ptr, ret = acl.rt.malloc(MiB, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0 and type(dev_ptr) is int and dev_ptr != 0
    host = np.random.default_rng(0).standard_normal(MiB // 4).astype(np.float32)
    assert acl.rt.memcpy(dev_ptr, MiB, acl.util.numpy_to_ptr(host), MiB,
                         acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    assert acl.rt.synchronize_device() == 0
    out = np.zeros_like(host)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), MiB, dev_ptr, MiB,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    np.testing.assert_array_equal(out, host)
    assert acl.rt.free(dev_ptr) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


def test_errors_are_returned_not_raised(dev0):
    assert acl.init() == ACL_ERROR_REPEAT_INITIALIZE
    assert acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
    assert "rt.set_device: device id must be in [0, 8), got device=99" in acl.get_recent_err_msg()
    assert acl.get_recent_err_msg() is None                          # cleared after reading
    assert acl.rt.malloc(0, 0) == (0, ACL_ERROR_INVALID_PARAM)
    assert acl.rt.free(0x100_0000_0000_40) == ACL_ERROR_RT_MEMORY_FREE
    assert acl.rt.synchronize_stream(12345) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert "acl.rt.synchronize_stream: handle must be a live stream handle, got 12345" in \
        acl.get_recent_err_msg()
    assert acl.rt.query_event_status(7) == (acl.ACL_EVENT_RECORDED_STATUS_NOT_READY,
                                            ACL_ERROR_INVALID_RESOURCE_HANDLE)
    p, _ = acl.rt.malloc(64, 0)
    a = np.zeros(16, np.float32)
    assert acl.rt.memcpy(p, 32, acl.util.numpy_to_ptr(a), 64, acl.ACL_MEMCPY_HOST_TO_DEVICE) == \
        ACL_ERROR_RT_PARAM_INVALID
    assert "acl.rt.memcpy: count must be <= dest_max, got count=64, dest_max=32" in \
        acl.get_recent_err_msg()
    assert acl.rt.memcpy(p, 64, acl.util.numpy_to_ptr(a), 64, acl.ACL_MEMCPY_DEVICE_TO_HOST) == \
        0                                           # the kind is advisory, as in CANN
    assert acl.rt.free(p) == 0


def test_uninitialized():
    assert acl.rt.get_device_count() == (0, ACL_ERROR_UNINITIALIZE)
    assert acl.get_soc_name() is None
    acl.init()
    assert acl.rt.get_device() == (-1, ACL_ERROR_RT_CONTEXT_NULL)
    assert acl.rt.get_device_count() == (8, 0)
    assert acl.get_soc_name() == "Ascend910B2"


def test_device_and_context(dev0):
    ctx, ret = acl.rt.create_context(1)
    assert ret == 0 and acl.rt.get_device() == (1, 0) and acl.rt.get_context() == (ctx, 0)
    assert acl.rt.set_device(0) == 0
    implicit, ret = acl.rt.get_context()
    assert ret == 0 and implicit != ctx
    assert acl.rt.set_context(ctx) == 0 and acl.rt.get_device() == (1, 0)
    assert acl.rt.destroy_context(ctx) == 0
    assert acl.rt.destroy_context(ctx) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    free, total, ret = acl.rt.get_mem_info(acl.ACL_HBM_MEM)
    assert ret == 0 and 0 < free <= total
    assert acl.rt.get_run_mode() == (acl.ACL_HOST, 0)
    assert acl.rt.get_device_info(0, acl.ACL_DEV_ATTR_AICORE_CORE_NUM) == (24, 0)


def test_streams_events_and_async_copies(dev0):
    s, ret = acl.rt.create_stream()
    assert ret == 0 and type(s) is int
    hp, ret = acl.rt.malloc_host(MiB)
    dp, _ = acl.rt.malloc(MiB, acl.ACL_MEM_MALLOC_NORMAL_ONLY)
    host = acl.util.ptr_to_numpy(hp, (MiB // 4,), acl.NPY_FLOAT32)
    host[:] = np.arange(MiB // 4)
    start, _ = acl.rt.create_event()
    end, _ = acl.rt.create_event()
    assert acl.rt.event_elapsed_time(start, end) == (0.0, ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID)
    assert acl.rt.record_event(start, s) == 0
    assert acl.rt.memcpy_async(dp, MiB, hp, MiB, acl.ACL_MEMCPY_HOST_TO_DEVICE, s) == 0
    assert acl.rt.memset_async(hp, MiB, 0, 4, s) == 0      # malloc_host memory: as CANN
    assert acl.rt.memcpy_async(hp, MiB, hp, 4, acl.ACL_MEMCPY_HOST_TO_HOST, s) == \
        ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    assert acl.rt.record_event(end, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert acl.rt.query_event_status(end) == (acl.ACL_EVENT_RECORDED_STATUS_COMPLETE, 0)
    assert acl.rt.stream_query(s) == (acl.ACL_STREAM_STATUS_COMPLETE, 0)
    ms, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0 and ms >= 0.0
    back = np.empty(MiB // 4, np.float32)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(back), MiB, dp, MiB,
                         acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    np.testing.assert_array_equal(back, np.arange(MiB // 4, dtype=np.float32))
    # cross-stream wait through the facade
    s2, _ = acl.rt.create_stream_with_config(9, 0)
    assert acl.rt.stream_wait_event(s2, end) == 0
    assert acl.rt.memset_async(dp, MiB, 0, MiB, s2) == 0
    assert acl.rt.synchronize_stream_with_timeout(s2, 60_000) == 0
    assert acl.rt.synchronize_stream(0) == 0                        # 0 = default stream
    for e in (start, end):
        assert acl.rt.destroy_event(e) == 0
    assert acl.rt.synchronize_event(start) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert acl.rt.destroy_stream(s) == 0 and acl.rt.destroy_stream(s2) == 0
    assert acl.rt.destroy_stream(s) == ACL_ERROR_INVALID_RESOURCE_HANDLE
    assert acl.rt.free(dp) == 0 and acl.rt.free_host(hp) == 0


def test_stream_timeout_and_failure_mode(dev0):
    s, _ = acl.rt.create_stream()
    assert acl.rt.set_stream_failure_mode(s, acl.ACL_STOP_ON_FAILURE) == 0
    assert acl.rt.set_stream_failure_mode(s, 5) == ACL_ERROR_RT_PARAM_INVALID
    gate = threading.Event()
    acl.rt._stream(s, "test").launch_host_func(lambda: gate.wait(60))
    assert acl.rt.synchronize_stream_with_timeout(s, 10) == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert acl.rt.stream_query(s) == (acl.ACL_STREAM_STATUS_NOT_READY, 0)
    gate.set()
    assert acl.rt.synchronize_stream(s) == 0


def test_callbacks_with_start_thread(dev0):
    s, _ = acl.rt.create_stream()
    assert acl.rt.launch_callback(print, [], acl.ACL_CALLBACK_BLOCK, s) == \
        ACL_ERROR_RT_STREAM_NO_CB_REG
    state = {"run": True}
    got = []

    def process(args_list):
        (timeout,) = args_list
        acl.rt.set_device(0)
        while state["run"]:
            acl.rt.process_report(timeout)

    tid, ret = acl.util.start_thread(process, [20])
    assert ret == 0
    assert acl.rt.subscribe_report(tid, s) == 0
    for i in range(3):
        assert acl.rt.launch_callback(got.append, i, acl.ACL_CALLBACK_BLOCK, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert got == [0, 1, 2]
    assert acl.rt.unsubscribe_report(tid, s) == 0
    state["run"] = False
    assert acl.util.stop_thread(tid) == 0
    assert acl.util.stop_thread(tid) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.process_report(10) == acl.ACL_ERROR_RT_THREAD_SUBSCRIBE


def test_util_pointer_helpers(dev0):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    p = acl.util.numpy_to_ptr(a)
    v = acl.util.ptr_to_numpy(p, (3, 4), acl.NPY_INT32)
    assert v.dtype == np.int32 and (v == a).all()
    v[0, 0] = 99                                                    # a view, not a copy
    assert a[0, 0] == 99
    assert acl.util.ptr_to_numpy(p, 2, np.int64).shape == (2,)
    data = b"hello, npu"
    bp = acl.util.bytes_to_ptr(data)
    assert acl.util.ptr_to_bytes(bp, len(data)) == data
    ba = bytearray(b"abc")
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(ba), 3) == b"abc"
    dp, _ = acl.rt.malloc(64, 0)
    with pytest.raises(AclError, match=r"ptr_to_numpy: ptr must be a host address, got device "
                                       r"address ptr=0x[0-9a-f]+; copy it to the host"):
        acl.util.ptr_to_numpy(dp, (4,), acl.NPY_FLOAT32)
    with pytest.raises(AclError, match=r"np_type must be a numpy type number .* got np_type=999"):
        acl.util.ptr_to_numpy(p, (4,), 999)
    with pytest.raises(AclError,
                       match="numpy_to_ptr: array must be a numpy.ndarray, got array=list"):
        acl.util.numpy_to_ptr([1, 2])
    acl.rt.free(dp)


def test_constants_match_acl_headers():
    assert (acl.ACL_MEMCPY_HOST_TO_HOST, acl.ACL_MEMCPY_HOST_TO_DEVICE,
            acl.ACL_MEMCPY_DEVICE_TO_HOST, acl.ACL_MEMCPY_DEVICE_TO_DEVICE,
            acl.ACL_MEMCPY_DEFAULT) == (0, 1, 2, 3, 4)
    assert (acl.ACL_MEM_MALLOC_HUGE_FIRST, acl.ACL_MEM_MALLOC_HUGE_ONLY,
            acl.ACL_MEM_MALLOC_NORMAL_ONLY) == (0, 1, 2)
    assert (acl.ACL_CALLBACK_NO_BLOCK, acl.ACL_CALLBACK_BLOCK) == (0, 1)
    assert acl.ACL_EVENT_TIME_LINE == 0x8 and acl.ACL_EVENT_SYNC == 0x1
    assert acl.ACL_SUCCESS == 0 and acl.ACL_ERROR_RT_MEMORY_ALLOCATION == 207001
    assert acl.rt.MemcpyKind.MEMCPY_HOST_TO_DEVICE == 1 and acl.rt.MemType.MEM_TYPE_NORMAL == 2


def test_third_party_spellings_run(dev0):
    """The spelling of some blog snippets: MemType / MemcpyKind namespaces and rt.synchronize()."""
    size = 1024
    host_data = np.random.default_rng(1).standard_normal(size).astype(np.float32)
    dev_ptr, _ = acl.rt.malloc(size * 4, acl.rt.MemType.MEM_TYPE_NORMAL)
    assert acl.rt.memcpy(dev_ptr, size * 4, host_data.tobytes(), size * 4,
                         acl.rt.MemcpyKind.MEMCPY_HOST_TO_DEVICE) == 0
    assert acl.rt.synchronize() == 0
    out = np.zeros(size, np.float32)
    assert acl.rt.memcpy(out, size * 4, dev_ptr, size * 4,
                         acl.rt.MemcpyKind.MEMCPY_DEVICE_TO_HOST) == 0
    assert (out == host_data).all()
    assert acl.rt.free(dev_ptr) == 0
