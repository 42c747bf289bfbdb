"""rt.callback: subscribe_report / launch_callback / process_report with ACL's semantics."""
import threading
import time

import pytest

import rt
from rt.callback import ACL_CALLBACK_BLOCK, ACL_CALLBACK_NO_BLOCK
from rt.errors import (ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_REPEAT_SUBSCRIBE,
                       ACL_ERROR_STREAM_NOT_SUBSCRIBE, ACL_ERROR_RT_STREAM_NO_CB_REG,
                       ACL_ERROR_RT_THREAD_SUBSCRIBE, ACL_ERROR_WAIT_CALLBACK_TIMEOUT,
                       ACL_ERROR_RT_INTERNAL_ERROR)

from rt_test_helpers import raises


class Reporter:
    """A host thread that subscribes to streams and loops on process_report (like pyACL samples)."""

    def __init__(self):
        self.running = True
        self.errors = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.ready.wait(60)
        self.tid = self.thread.ident

    def _loop(self):
        rt.set_device(0)
        self.ready.set()
        while self.running:
            try:
                rt.process_report(20)
            except rt.AclError as e:
                self.errors.append(e.code)

    def stop(self):
        self.running = False
        self.thread.join(60)


@pytest.fixture
def reporter(dev0):
    r = Reporter()
    yield r
    r.stop()


def test_block_callback_holds_the_stream(reporter):
    s = rt.Stream()
    rt.subscribe_report(reporter.tid, s)
    log = []

    def cb(data):
        time.sleep(0.005)
        log.append(("cb", data, threading.get_ident(), time.perf_counter_ns()))
    t_cb = rt.launch_callback(cb, [1, 2], ACL_CALLBACK_BLOCK, s)
    after = s.launch_host_func(lambda: log.append(("after", time.perf_counter_ns())))
    s.synchronize()
    assert log[0][:3] == ("cb", [1, 2], reporter.tid)          # ran on the subscribed thread
    assert after.start_ns >= t_cb.end_ns >= log[0][3]
    rt.unsubscribe_report(reporter.tid, s)


def test_no_block_callback_lets_the_stream_move_on(dev0):
    s = rt.Stream()
    tid = threading.get_ident()                                # this thread handles reports
    rt.subscribe_report(tid, s)
    got = []
    rt.launch_callback(got.append, "x", ACL_CALLBACK_NO_BLOCK, s)
    after = s.launch_host_func(lambda: None)
    s.synchronize()                                            # nobody processed it yet
    assert after.done and got == []
    rt.process_report(1000)
    assert got == ["x"]
    with raises(ACL_ERROR_WAIT_CALLBACK_TIMEOUT,
                "process_report: a callback must arrive within timeout_ms, "
                "got timeout_ms=10 with none"):
        rt.process_report(10)
    rt.unsubscribe_report(tid, s)


def test_launch_callback_on_unsubscribed_stream(dev0):
    s = rt.Stream()
    with raises(ACL_ERROR_RT_STREAM_NO_CB_REG,
                rf"launch_callback: stream must be subscribed with subscribe_report first, got "
                rf"stream={s.id} with no subscribed thread"):
        rt.launch_callback(print, None, ACL_CALLBACK_BLOCK, s)


def test_subscription_errors(dev0):
    s = rt.Stream()
    tid = threading.get_ident()
    rt.subscribe_report(tid, s)
    with raises(ACL_ERROR_REPEAT_SUBSCRIBE,
                rf"subscribe_report: stream must not be subscribed already, got stream={s.id} "
                rf"subscribed by thread {tid}"):
        rt.subscribe_report(tid + 1, s)
    with raises(ACL_ERROR_STREAM_NOT_SUBSCRIBE,
                rf"unsubscribe_report: stream must be subscribed by thread_id, got stream={s.id} "
                rf"subscribed by {tid}, thread_id={tid + 1}"):
        rt.unsubscribe_report(tid + 1, s)
    rt.unsubscribe_report(tid, s)
    with raises(ACL_ERROR_STREAM_NOT_SUBSCRIBE, "subscribed by None"):
        rt.unsubscribe_report(tid, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "subscribe_report: thread_id must be a positive int"):
        rt.subscribe_report("me", s)
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                "subscribe_report: stream must be an rt.Stream, got stream=5"):
        rt.subscribe_report(tid, 5)


def test_process_report_needs_a_subscription(dev0):
    with raises(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                r"process_report: the calling thread must be subscribed to a stream with "
                r"subscribe_report, got thread_id=\d+ with no subscription"):
        rt.process_report(10)


def test_launch_callback_argument_checks(dev0):
    s = rt.Stream()
    rt.subscribe_report(threading.get_ident(), s)
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"launch_callback: block_type must be ACL_CALLBACK_NO_BLOCK \(0\) or "
                r"ACL_CALLBACK_BLOCK \(1\), got block_type=2"):
        rt.launch_callback(print, None, 2, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "launch_callback: fn must be callable, got fn=None"):
        rt.launch_callback(None, None, 1, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"process_report: timeout_ms must be -1 or >= 0, got "
                                            r"timeout_ms=-5"):
        rt.process_report(-5)


def test_callback_exception_goes_to_the_stream(reporter):
    s = rt.Stream()
    rt.subscribe_report(reporter.tid, s)

    def bad(_):
        raise KeyError("missing")
    rt.launch_callback(bad, None, ACL_CALLBACK_BLOCK, s)
    with raises(ACL_ERROR_RT_INTERNAL_ERROR, r"callback '.*bad' on stream \d+ failed: KeyError"):
        s.synchronize()
    rt.launch_callback(bad, None, ACL_CALLBACK_NO_BLOCK, s)
    s.synchronize()
    deadline = time.time() + 60
    while not s._core.errors and time.time() < deadline:
        time.sleep(0.001)
    with raises(ACL_ERROR_RT_INTERNAL_ERROR, "KeyError"):
        s.synchronize()
    rt.unsubscribe_report(reporter.tid, s)


def test_one_thread_serves_two_streams_in_stream_order(reporter):
    a, b = rt.Stream(), rt.Stream()
    rt.subscribe_report(reporter.tid, a)
    rt.subscribe_report(reporter.tid, b)
    got = []
    for i in range(5):
        rt.launch_callback(got.append, ("a", i), ACL_CALLBACK_BLOCK, a)
        rt.launch_callback(got.append, ("b", i), ACL_CALLBACK_BLOCK, b)
    a.synchronize()
    b.synchronize()
    assert [i for s, i in got if s == "a"] == list(range(5))
    assert [i for s, i in got if s == "b"] == list(range(5))
    rt.unsubscribe_report(reporter.tid, a)
    rt.unsubscribe_report(reporter.tid, b)


def test_destroyed_stream_drops_its_subscription(dev0):
    s = rt.Stream()
    tid = threading.get_ident()
    rt.subscribe_report(tid, s)
    s.destroy()
    with raises(ACL_ERROR_RT_THREAD_SUBSCRIBE, "got thread_id=.* with no subscription"):
        rt.process_report(10)


@pytest.mark.parametrize("via", ["rt", "acl"])
def test_no_block_callback_runs_on_the_report_thread_while_the_stream_goes_on(dev0, via):
    """CANN's NO_BLOCK: the subscribed thread runs the callback (in process_report) and the
    stream's next task does not wait for it. The callback waits for that next task to have
    run: with a stream that waited (BLOCK semantics) it would time out instead."""
    import rt.acl as acl
    s = rt.Stream()
    later_ran = threading.Event()
    log = {}
    stop = threading.Event()

    def serve(_args):
        rt.set_device(0)
        while not stop.is_set():
            try:
                rt.process_report(20)
            except rt.AclError:
                pass

    def cb(data):
        log["cb_start"] = (time.perf_counter_ns(), threading.get_ident(), data)
        log["saw_later"] = later_ran.wait(30)
        log["cb_end"] = time.perf_counter_ns()

    def later():
        log["later"] = time.perf_counter_ns()
        later_ran.set()

    if via == "acl":
        tid, ret = acl.util.start_thread(serve, [])
        assert ret == 0
        handle = acl.rt.create_stream()[0]
        s = acl.rt.stream_of(handle, "test")
        assert acl.rt.subscribe_report(tid, handle) == 0
        assert acl.rt.launch_callback(cb, "payload", acl.ACL_CALLBACK_NO_BLOCK, handle) == 0
    else:
        t = threading.Thread(target=serve, args=([],), daemon=True)
        t.start()
        tid = t.ident
        rt.subscribe_report(tid, s)
        rt.launch_callback(cb, "payload", ACL_CALLBACK_NO_BLOCK, s)
    s.launch_host_func(later)
    s.synchronize()                         # does not wait for the callback to finish
    assert later_ran.wait(30)
    deadline = time.monotonic() + 30        # bounded wait for the callback to return
    while "cb_end" not in log and time.monotonic() < deadline:
        time.sleep(0.001)
    stop.set()
    assert log["saw_later"] is True
    _, cb_thread, data = log["cb_start"]
    assert cb_thread == tid and data == "payload"              # on the subscribed thread
    # The stream's next task ran before the callback returned (it may run before the report
    # thread even picks the callback up: NO_BLOCK does not hold the stream back at all).
    assert log["later"] <= log["cb_end"]
    if via == "acl":
        assert acl.rt.unsubscribe_report(tid, handle) == 0
        assert acl.util.stop_thread(tid) == 0
    else:
        rt.unsubscribe_report(tid, s)
