"""rt.Event: record/query/synchronize, timestamps taken when reached, elapsed time, cross-stream
waits."""
import threading
import time

import pytest

import rt
from rt.errors import (ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                       ACL_ERROR_RT_INVALID_HANDLE, ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                       ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL)
from rt.stream import ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE

from rt_test_helpers import raises


def gated(stream):
    ev = threading.Event()
    stream.launch_host_func(lambda: ev.wait(60))
    return ev


def test_record_query_synchronize(dev0):
    s = rt.Stream()
    e = rt.Event()
    assert e.query() is False                     # never recorded: NOT_READY
    e.synchronize()                               # nothing to wait for
    gate = gated(s)
    e.record(s)
    assert e.query() is False
    gate.set()
    e.synchronize()
    assert e.query() is True and e.timestamp_ns is not None


def test_timestamp_is_taken_when_the_stream_reaches_the_event(dev0):
    s = rt.Stream()
    gate = gated(s)
    e = rt.Event()
    e.record(s)
    opened = time.perf_counter_ns()
    gate.set()
    s.synchronize()
    assert e.timestamp_ns >= opened


def test_elapsed_time_brackets_the_work(dev0):
    s = rt.Stream()
    start, end = rt.Event(), rt.Event()
    start.record(s)
    work = s.launch_host_func(time.sleep, 0.005)
    end.record(s)
    s.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float)
    assert ms == pytest.approx((end.timestamp_ns - start.timestamp_ns) / 1e6)
    assert ms >= (work.end_ns - work.start_ns) / 1e6
    assert start.timestamp_ns <= work.start_ns and work.end_ns <= end.timestamp_ns


def test_elapsed_time_of_never_recorded_event(dev0):
    a, b = rt.Event(), rt.Event()
    a.record(rt.Stream())
    a.synchronize()
    with raises(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                rf"elapsed_time: end event must be recorded first, "
                rf"got event={b.id} never recorded"):
        a.elapsed_time(b)


def test_elapsed_time_of_pending_event(dev0):
    s = rt.Stream()
    a, b = rt.Event(), rt.Event()
    a.record(s)
    gate = gated(s)
    b.record(s)
    with raises(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                rf"elapsed_time: end event must be complete, got event={b.id} still pending"):
        a.elapsed_time(b)
    gate.set()
    s.synchronize()
    assert a.elapsed_time(b) >= 0.0


def test_elapsed_time_needs_timing_flag_and_order(dev0):
    s = rt.Stream()
    a, b, nt = rt.Event(), rt.Event(), rt.Event(ACL_EVENT_SYNC)
    for e in (a, nt, b):
        e.record(s)
    s.synchronize()
    with raises(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                r"elapsed_time: end event must be created with ACL_EVENT_TIME_LINE, got flags=0x1"):
        a.elapsed_time(nt)
    with raises(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
                r"elapsed_time: end must be reached after start, got -\d+\.\d+ ms"):
        b.elapsed_time(a)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "elapsed_time: end must be an rt.Event, got end=3"):
        a.elapsed_time(3)
    assert rt.Event(ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC).timing


def test_event_synchronize_timeout(dev0):
    s = rt.Stream()
    gate = gated(s)
    e = rt.Event()
    e.record(s)
    with raises(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                rf"synchronize: event {e.id} must be reached within timeout_ms, got timeout_ms=0"):
        e.synchronize(timeout_ms=0)
    with raises(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "got timeout_ms=20"):
        e.synchronize(timeout_ms=20)
    gate.set()
    e.synchronize(timeout_ms=60_000)


def test_wait_event_orders_streams(dev0):
    a, b = rt.Stream(), rt.Stream()
    gate = gated(a)
    producer = a.launch_host_func(time.sleep, 0.002)
    e = rt.Event()
    e.record(a)
    b.wait_event(e)
    consumer = b.launch_host_func(lambda: None)
    assert not b.query()                          # b is held by a's gate
    gate.set()
    b.synchronize()
    assert consumer.start_ns >= producer.end_ns
    assert consumer.start_ns >= e.timestamp_ns


def test_wait_event_on_reached_or_unrecorded_event_does_not_block(dev0):
    a, b = rt.Stream(), rt.Stream()
    fresh = rt.Event()
    b.wait_event(fresh)                           # never recorded: no wait
    e = rt.Event()
    e.record(a)
    a.synchronize()
    b.wait_event(e)
    t = b.launch_host_func(lambda: None)
    b.synchronize()
    assert t.done
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                "wait_event: event must be an rt.Event, got event=None"):
        b.wait_event(None)


def test_wait_uses_the_latest_record_at_call_time(dev0):
    a, b = rt.Stream(), rt.Stream()
    e = rt.Event()
    e.record(a)
    a.synchronize()
    gate = gated(a)
    e.record(a)                                   # re-record: not reached until the gate opens
    b.wait_event(e)
    t = b.launch_host_func(lambda: None)
    assert not e.query() and not t.wait(timeout_ms=20)
    gate.set()
    b.synchronize()
    assert e.query() and t.done


def test_record_defaults_to_current_stream_and_checks_type(dev0):
    s = rt.Stream()
    e = rt.Event()
    with s:
        e.record()
    s.synchronize()
    assert e.query()
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                "record: stream must be an rt.Stream or None, got stream=7"):
        e.record(7)


def test_one_event_many_waiters(dev0):
    src = rt.Stream()
    gate = gated(src)
    e = rt.Event()
    e.record(src)
    waiters = [rt.Stream() for _ in range(4)]
    tasks = []
    for w in waiters:
        w.wait_event(e)
        tasks.append(w.launch_host_func(lambda: None))
    assert not any(t.done for t in tasks)
    gate.set()
    for w in waiters:
        w.synchronize()
    assert all(t.start_ns >= e.timestamp_ns for t in tasks)


def test_destroyed_event_is_refused(dev0):
    s = rt.Stream()
    e = rt.Event()
    e.destroy()
    with raises(ACL_ERROR_RT_INVALID_HANDLE,
                rf"record: event must not be destroyed, got event={e.id}"):
        e.record(s)
    with raises(ACL_ERROR_RT_INVALID_HANDLE, r"wait_event: event must not be destroyed"):
        s.wait_event(e)
