"""acl.rt behaviours that official model samples need: the memcpy kind is advisory,
memset on host memory, query_event, create_event_ex_with_flag, device_get_stream_priority_range."""
import numpy as np

import rt
import rt.acl as acl
from rt.errors import ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_INVALID_RESOURCE_HANDLE


def test_memcpy_kind_is_advisory():
    rt.ensure_device()
    p, ret = acl.rt.malloc(64, 0)
    assert ret == 0
    a = np.arange(16, dtype=np.float32)
    out = np.zeros_like(a)
    # the "wrong" kinds, as official samples pass them: CANN infers the direction
    assert acl.rt.memcpy(p, 64, acl.util.numpy_to_ptr(a), 64, acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 64, p, 64,
                         acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    np.testing.assert_array_equal(out, a)
    host2 = np.zeros_like(a)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(host2), 64, acl.util.numpy_to_ptr(a), 64,
                         acl.ACL_MEMCPY_DEVICE_TO_DEVICE) == 0
    np.testing.assert_array_equal(host2, a)
    s, _ = acl.rt.create_stream()
    out[:] = 0
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(out), 64, p, 64,
                               acl.ACL_MEMCPY_HOST_TO_DEVICE, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    np.testing.assert_array_equal(out, a)
    # an invalid kind is still refused, with the call's name
    assert acl.rt.memcpy(p, 64, acl.util.numpy_to_ptr(a), 64, 9) == ACL_ERROR_RT_PARAM_INVALID
    assert "acl.rt.memcpy: kind must be a MemcpyKind" in acl.get_recent_err_msg()
    # memset accepts host memory as well as device memory
    assert acl.rt.memset(acl.util.numpy_to_ptr(host2), 64, 0, 64) == 0
    assert not host2.any()
    assert acl.rt.memset(p, 64, 0, 64) == 0
    assert acl.rt.destroy_stream(s) == 0 and acl.rt.free(p) == 0


def test_events_and_priorities():
    rt.ensure_device()
    s, _ = acl.rt.create_stream()
    e, ret = acl.rt.create_event_ex_with_flag(acl.ACL_EVENT_SYNC)
    assert ret == 0 and e
    assert acl.rt.record_event(e, s) == 0
    assert acl.rt.synchronize_event(e) == 0
    assert acl.rt.query_event(e) == (acl.ACL_EVENT_STATUS_COMPLETE, 0)
    assert acl.rt.query_event(12345) == (acl.ACL_EVENT_STATUS_NOT_READY,
                                         ACL_ERROR_INVALID_RESOURCE_HANDLE)
    # an event created without the timing flag refuses event_elapsed_time, as CANN does
    e2, _ = acl.rt.create_event_with_flag(acl.ACL_EVENT_SYNC)
    assert acl.rt.record_event(e2, s) == 0 and acl.rt.synchronize_stream(s) == 0
    assert acl.rt.event_elapsed_time(e, e2)[1] != 0
    assert acl.rt.device_get_stream_priority_range() == (7, 0, 0)
    for ev in (e, e2):
        assert acl.rt.destroy_event(ev) == 0
    assert acl.rt.destroy_stream(s) == 0
