"""rt.Stream: ordering, concurrency, synchronize/query, failure modes, lifetime, current stream."""
import gc
import threading
import time

import pytest

import rt
from rt import stream as S
from rt.errors import (AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_INVALID_HANDLE,
                       ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_INTERNAL_ERROR,
                       ACL_ERROR_RT_CONTEXT_NULL)

from rt_test_helpers import raises


def stamp(log, tag):
    """A host function that records (tag, start_ns, end_ns)."""
    def fn():
        t0 = time.perf_counter_ns()
        log.append((tag, t0, time.perf_counter_ns()))
    return fn


def gate():
    """A host function that blocks its stream until `ev.set()` (60 s safety timeout)."""
    ev = threading.Event()
    return ev, (lambda: ev.wait(60))


def test_tasks_run_in_order_and_do_not_overlap(dev0):
    s = rt.Stream()
    log = []
    tasks = [s.launch_host_func(stamp(log, i)) for i in range(50)]
    s.synchronize()
    assert [t for t, _, _ in log] == list(range(50))
    for a, b in zip(tasks, tasks[1:]):
        assert a.end_ns <= b.start_ns
    assert all(t.done for t in tasks)


def test_streams_run_concurrently(dev0):
    # Both host functions must be running at once to pass the barrier.
    barrier = threading.Barrier(2, timeout=60)
    a, b = rt.Stream(), rt.Stream()
    ta = a.launch_host_func(barrier.wait)
    tb = b.launch_host_func(barrier.wait)
    a.synchronize()
    b.synchronize()
    assert ta.start_ns < tb.end_ns and tb.start_ns < ta.end_ns    # intervals overlap


def test_enqueue_returns_before_the_work_and_synchronize_waits(dev0):
    s = rt.Stream()
    ev, wait = gate()
    t = s.launch_host_func(wait)
    after = s.enqueue(lambda: None, "host_func", "after")
    assert not t.done and not after.done and s.query() is False
    ev.set()
    s.synchronize()
    assert t.done and after.done and s.query() is True
    assert after.start_ns >= t.end_ns


def test_synchronize_timeout(dev0):
    s = rt.Stream()
    ev, wait = gate()
    s.launch_host_func(wait)
    with raises(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                r"synchronize: stream \d+ must finish within timeout_ms, got timeout_ms=20 "
                r"with 1 task\(s\) pending"):
        s.synchronize(timeout_ms=20)
    ev.set()
    s.synchronize(timeout_ms=60_000)


def test_task_wait_and_timeout(dev0):
    s = rt.Stream()
    ev, wait = gate()
    t = s.launch_host_func(wait)
    assert t.wait(timeout_ms=10) is False
    ev.set()
    assert t.wait() is True and t.done


def boom():
    raise ValueError("boom")


def test_continue_on_failure_reports_at_synchronize_and_recovers(dev0):
    s, other = rt.Stream(), rt.Stream()
    log = []
    s.launch_host_func(boom)
    s.launch_host_func(stamp(log, "after"))
    other.launch_host_func(stamp(log, "other"))
    other.synchronize()                                 # other streams are untouched
    with raises(ACL_ERROR_RT_INTERNAL_ERROR,
                r"synchronize: host_func 'boom' on stream \d+ failed: ValueError: boom") as info:
        s.synchronize()
    assert isinstance(info.value.__cause__, ValueError)
    assert sorted(t for t, _, _ in log) == ["after", "other"]   # CONTINUE: later task ran
    s.synchronize()                                     # error reported once
    s.launch_host_func(stamp(log, "again"))
    s.synchronize()
    assert log[-1][0] == "again"


def test_stop_on_failure_skips_until_synchronize(dev0):
    s = rt.Stream()
    s.set_failure_mode(rt.ACL_STOP_ON_FAILURE)
    log = []
    s.launch_host_func(boom)
    skipped = s.launch_host_func(stamp(log, "skipped"))
    ev = rt.Event()
    ev.record(s)                                        # markers still complete
    ev.synchronize(timeout_ms=60_000)
    with raises(ACL_ERROR_RT_INTERNAL_ERROR, "ValueError: boom"):
        s.synchronize()
    assert log == [] and skipped.skipped and skipped.done
    s.launch_host_func(stamp(log, "runs"))
    s.synchronize()
    assert [t for t, _, _ in log] == ["runs"]


def test_several_failures_are_counted(dev0):
    s = rt.Stream()
    for _ in range(3):
        s.launch_host_func(boom)
    with raises(ACL_ERROR_RT_INTERNAL_ERROR, r"\(and 2 more failed task\(s\)\)"):
        s.synchronize()


def test_acl_error_in_task_keeps_its_code(dev0):
    s = rt.Stream()

    def fails():
        raise AclError(207001, "inner oom")
    s.launch_host_func(fails)
    with raises(207001, "host_func 'test_acl_error_in_task_keeps_its_code.<locals>.fails' on "
                        r"stream \d+ failed: inner oom") as info:
        s.synchronize()
    assert info.value.__cause__.message == "inner oom"


@pytest.mark.parametrize("mode", [2, -1, "stop", True])
def test_set_failure_mode_rejects_bad_modes(dev0, mode):
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                rf"set_failure_mode: mode must be ACL_CONTINUE_ON_FAILURE \(0\) or "
                rf"ACL_STOP_ON_FAILURE \(1\), got mode={mode!r}"):
        rt.Stream().set_failure_mode(mode)


def test_priority_is_clamped_and_checked(dev0):
    assert rt.Stream(priority=9).priority == 7
    assert rt.Stream(priority=-3).priority == 0
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"Stream: priority must be an int in \[0, 7\], got priority='high'"):
        rt.Stream(priority="high")


def test_enqueue_rejects_unknown_engine(dev0):
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"enqueue: engine must be 'compute' or 'copy', got engine='gpu'"):
        rt.Stream().enqueue(lambda: None, "host_func", "x", engine="gpu")


def test_launch_host_func_args_and_check(dev0):
    s = rt.Stream()
    out = []
    s.launch_host_func(out.append, 42)
    s.synchronize()
    assert out == [42]
    with raises(ACL_ERROR_RT_PARAM_INVALID, "launch_host_func: fn must be callable, got fn=3"):
        s.launch_host_func(3)


def test_destroy_waits_then_rejects_use(dev0):
    s = rt.Stream()
    log = []
    s.launch_host_func(lambda: (time.sleep(0.01), log.append(1)))
    s.destroy()
    assert log == [1]
    with raises(ACL_ERROR_RT_INVALID_HANDLE,
                rf"enqueue: stream must not be destroyed, got stream={s.id}"):
        s.launch_host_func(print)
    s.destroy()                                         # idempotent


def test_destroy_reports_an_unreported_failure(dev0):
    s = rt.Stream()
    s.launch_host_func(boom)
    with raises(ACL_ERROR_RT_INTERNAL_ERROR, r"destroy: host_func 'boom'"):
        s.destroy()


def test_default_stream_cannot_be_destroyed(dev0):
    d = rt.default_stream()
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                rf"destroy: stream must not be the default stream, got stream={d.id}"):
        d.destroy()


def _worker_threads(sid):
    return [t for t in threading.enumerate() if t.name == f"rt-stream-{sid}"]


def test_worker_thread_is_lazy_and_exits_when_stream_is_collected(dev0):
    s = rt.Stream()
    sid = s.id
    assert _worker_threads(sid) == []                   # started lazily
    s.launch_host_func(lambda: None)
    s.synchronize()
    (t,) = _worker_threads(sid)
    del s
    gc.collect()
    t.join(timeout=60)
    assert not t.is_alive()


def test_worker_thread_exits_on_destroy(dev0):
    s = rt.Stream()
    s.launch_host_func(lambda: None)
    s.synchronize()
    (t,) = _worker_threads(s.id)
    s.destroy()
    t.join(timeout=60)
    assert not t.is_alive()


def test_default_and_current_stream(dev0):
    d = rt.default_stream()
    assert rt.default_stream() is d and d.is_default and dev0.default_stream is d
    assert rt.current_stream() is d
    a, b = rt.Stream(), rt.Stream()
    with a:
        assert rt.current_stream() is a
        with b:
            assert rt.current_stream() is b
            seen = []
            th = threading.Thread(
                target=lambda: (rt.set_device(0), seen.append(rt.current_stream())))
            th.start()
            th.join()
            assert seen == [d]                          # current stream is per host thread
        assert rt.current_stream() is a
    assert rt.current_stream() is d
    assert a in dev0.streams and b in dev0.streams and d in dev0.streams


def test_default_stream_is_per_device(dev0):
    rt.set_device(1)
    d1 = rt.default_stream()
    assert d1.device == 1 and d1 is not rt.default_stream(0)
    assert rt.Stream().device == 1


def test_stream_needs_a_device():
    rt.init()
    with raises(ACL_ERROR_RT_CONTEXT_NULL, "a current device must be set in this thread"):
        rt.Stream()


def test_reset_device_destroys_its_streams(dev0):
    s = rt.Stream()
    log = []
    s.launch_host_func(lambda: (time.sleep(0.01), log.append(1)))
    rt.reset_device(0)
    assert log == [1]
    with raises(ACL_ERROR_RT_INVALID_HANDLE, "stream must not be destroyed"):
        s.launch_host_func(print)


def test_synchronize_device_waits_for_all_streams(dev0):
    log = []
    streams = [rt.Stream() for _ in range(3)]
    for i, s in enumerate(streams):
        s.launch_host_func(lambda i=i: (time.sleep(0.005), log.append(i)))
    rt.synchronize_device()
    assert sorted(log) == [0, 1, 2]


def test_many_tasks_from_many_threads_keep_per_thread_order(dev0):
    s = rt.Stream()
    log = []

    def submit(k):
        for i in range(200):
            s.launch_host_func(log.append, (k, i))
    ths = [threading.Thread(target=submit, args=(k,)) for k in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    s.synchronize()
    assert len(log) == 800
    for k in range(4):
        assert [i for kk, i in log if kk == k] == list(range(200))


def test_repr_mentions_id_and_device(dev0):
    s = rt.Stream(priority=3)
    assert repr(s) == f"<rt.Stream {s.id} device=0 priority=3>"
    assert "default" in repr(rt.default_stream())
    assert S.ACL_STOP_ON_FAILURE == 1 and S.ACL_CONTINUE_ON_FAILURE == 0


def test_stream_hooks_see_submits_events_host_waits_and_release(dev0):
    from rt import sched
    seen = []

    class Spy(rt.StreamHook):
        def submitted(self, core, task, accesses):
            seen.append(("submitted", core.id, task.kind))

        def recorded(self, core, event):
            seen.append(("recorded", core.id))

        def host_waited(self, obj):
            seen.append(("host_waited", getattr(obj, "id", None)))

        def released(self, core):
            seen.append(("released", core.id))

    spy = sched.add_hook(Spy())
    assert sched.add_hook(spy) is spy and sched.HOOKS.count(spy) == 1
    try:
        s = rt.Stream()
        s.launch_host_func(lambda: None)
        e = rt.Event()
        e.record(s)
        s.synchronize()
        s.destroy()
    finally:
        sched.HOOKS.remove(spy)
    assert seen == [("submitted", s.id, "host_func"), ("recorded", s.id),
                    ("submitted", s.id, "event"), ("host_waited", s.id), ("released", s.id)]


def test_kernel_fault_survives_pickling():
    import pickle
    f = pickle.loads(pickle.dumps(rt.KernelFault(507042, "kernel 'k' failed", 3, "GM read")))
    assert (f.code, f.message, f.block_idx, f.detail) == (507042, "kernel 'k' failed", 3, "GM read")
