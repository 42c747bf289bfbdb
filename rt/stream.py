"""Streams and events (AscendCL `aclrtStream` / `aclrtEvent`).

A stream runs its tasks in order, asynchronously to the host and concurrently with other streams;
see `rt.sched` for the scheduler. `with s:` makes `s` this host thread's current stream, like
`torch.cuda.stream(s)`. Failure modes follow `aclrtSetStreamFailureMode`: a task that raises puts
the stream in error and the next `synchronize` raises `AclError` chained to the original exception;
under `ACL_STOP_ON_FAILURE` the stream's later kernels, copies and host functions are skipped until
then. With `ASCEND_MEM_CHECK=1`, launches and async copies are checked for two streams touching one
buffer without an event or host synchronize ordering them (vector clocks, see `rt.memcheck`).

Modules that queue work on a stream (`rt.copy`, `rt.launch`, `rt.callback`) build a `rt.sched` task
for `stream.live_core(api)` and queue it with `stream.submit(task)`; modules that follow streams
register a `rt.sched.StreamHook`.
"""
from __future__ import annotations

import threading
import weakref
from time import perf_counter_ns

from . import device as _device
from .errors import (AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_INVALID_HANDLE,
                     ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                     ACL_ERROR_RT_EVENT_NOT_COMPLETE, ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                     ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL)
from . import sched
from .sched import HOOKS, StreamCore, Task, error_from_tasks, next_stream_id

ACL_CONTINUE_ON_FAILURE = 0
ACL_STOP_ON_FAILURE = 1

ACL_EVENT_SYNC = 0x1
ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x2
ACL_EVENT_TIME_LINE = 0x8
ACL_EVENT_DEVICE_USE_ONLY = 0x10

MIN_PRIORITY, MAX_PRIORITY = 0, 7

_tls = threading.local()


class Stream:
    """Mirrors `aclrtCreateStreamWithConfig(&s, priority, flags)`: an in-order task queue.

    `priority` 0 (highest) .. 7, clamped as ACL does; a lower number gets the core pool first when
    it is contended. The stream belongs to the calling thread's current device.
    """

    def __init__(self, priority: int = 0, flags: int = 0, *, _device_id: int | None = None,
                 _is_default: bool = False):
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"Stream: priority must be an int in [0, 7], got priority={priority!r}")
        dev_id = _device.current_device() if _device_id is None else _device_id
        dev = _device.get_device(dev_id)
        self._core = StreamCore(next_stream_id(), dev_id, min(MAX_PRIORITY, max(MIN_PRIORITY,
                                                                                priority)))
        self.flags = int(flags)
        self.is_default = _is_default
        self._destroyed = False
        self._finalizer = weakref.finalize(self, _release, self._core)
        dev.streams.add(self)
        if _on_device_reset not in dev.reset_hooks:
            dev.reset_hooks.append(_on_device_reset)

    # -- properties --------------------------------------------------------------------------------
    @property
    def id(self) -> int:
        return self._core.id

    @property
    def device(self) -> int:
        return self._core.device_id

    @property
    def priority(self) -> int:
        return self._core.priority

    def __repr__(self):
        tag = " default" if self.is_default else ""
        return f"<rt.Stream {self.id}{tag} device={self.device} priority={self.priority}>"

    def live_core(self, api: str) -> StreamCore:
        """The stream's scheduler core, for building a task; raises 107017 (naming `api`) if the
        stream is destroyed."""
        if self._destroyed:
            raise AclError(ACL_ERROR_RT_INVALID_HANDLE,
                           f"{api}: stream must not be destroyed, got stream={self.id}")
        return self._core

    # -- work --------------------------------------------------------------------------------------
    def enqueue(self, fn, kind: str, name: str, nbytes: int = 0, engine: str = "compute",
                args=None) -> Task:
        """Queue `fn()` as a task; returns the `Task` at once, before `fn` runs.

        `engine="compute"` runs it on this stream's worker thread, `"copy"` on the device's copy
        engine while the stream waits for it. Start/end stamps go to the active profilers.
        """
        if engine not in ("compute", "copy"):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"enqueue: engine must be 'compute' or 'copy', got engine={engine!r}")
        task = Task(self.live_core("enqueue"), fn, kind, name, nbytes, engine, args)
        return self.submit(task)

    def submit(self, task: Task, accesses=None) -> Task:
        """Queue `task` (built for `live_core(...)`) after the stream hooks have seen it; returns
        it at once. `accesses`: None or [(device address, is_write)] it touches (mem-check)."""
        return sched.submit(self._core, task, accesses)

    def launch_host_func(self, fn, *args) -> Task:
        """Mirrors `aclrtLaunchHostFunc`: run `fn(*args)` on a host thread when the stream gets
        there.

        Returns at once; the stream's later tasks wait until `fn` has returned.
        """
        if not callable(fn):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"launch_host_func: fn must be callable, got fn={fn!r}")
        name = getattr(fn, "__qualname__", None) or repr(fn)
        return self.enqueue((lambda: fn(*args)) if args else fn, "host_func", name)

    def synchronize(self, timeout_ms: int = -1, *, api: str = "synchronize",
                    own: Task | None = None, deadline: int | None = None) -> None:
        """Mirrors `aclrtSynchronizeStream(WithTimeout)`: wait for every task queued so far.

        `timeout_ms=-1` waits forever; on timeout raises `AclError(507046)` at the deadline,
        whatever the running kernel does (a thread waiting with a timeout never runs kernel
        blocks itself; see `rt.sched.StreamCore.wait_seq`). `deadline`: an absolute
        `perf_counter_ns()` instead (device synchronize). A destroyed stream raises 107017.

        If a task failed since the last synchronize, raises `AclError` (the task's code, or 507000
        for a plain Python exception) chained to the task's error, and clears the error state:
        "synchronize: kernel 'k' on stream 1 failed in block_idx=3/4: <detail>". A call that
        queues a task and waits for it (a synchronous kernel launch) passes its own name as `api`
        and the task as `own`: the error then reads "<api>: block_idx=3/4: <detail>" when `own`
        failed.
        """
        core = self.live_core(api)
        target, resets = core.submitted, core.resets
        done = core.wait_seq(target, timeout_ms, deadline)
        if core.resets != resets:          # the device was reset while this thread waited
            err = core.reset_error
            raise AclError(err.code, f"{api}: stream {self.id} must not be reset while a "
                                     f"thread waits for it, got {err.message}")
        if not done:
            raise AclError(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                           f"{api}: stream {self.id} must finish within timeout_ms, "
                           f"got timeout_ms={timeout_ms} with {target - core.completed} "
                           f"task(s) pending")
        for h in HOOKS:
            h.host_waited(core)
        if core.errors:
            failed = core.take_errors()
            if failed:
                raise error_from_tasks(api, self.id, failed, own)

    def query(self) -> bool:
        """Mirrors `aclrtStreamQuery`: True when every queued task has finished (never blocks).
        A destroyed stream raises 107017."""
        return self.live_core("query").idle()

    def wait_event(self, event: "Event") -> None:
        """Mirrors `aclrtStreamWaitEvent`: later tasks on this stream wait for `event`'s latest
        record.

        Returns at once. An event never recorded imposes no wait.
        """
        if not isinstance(event, Event):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"wait_event: event must be an rt.Event, got event={event!r}")
        core = self.live_core("wait_event")
        event._live("wait_event")
        gen = event._recorded
        if gen == 0:
            return
        task = Task(core, lambda: event._add_waiter(gen, task), "event", f"wait_event({event.id})",
                    0, "deferred")
        for h in HOOKS:
            h.waited(core, event)
        self.submit(task)

    def record_event(self, event: "Event") -> None:
        """Same as `event.record(self)`."""
        event.record(self)

    def set_failure_mode(self, mode: int) -> None:
        """Mirrors `aclrtSetStreamFailureMode`: `ACL_CONTINUE_ON_FAILURE` (default) or
        `ACL_STOP_ON_FAILURE`."""
        if mode not in (ACL_CONTINUE_ON_FAILURE, ACL_STOP_ON_FAILURE) or isinstance(mode, bool):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           "set_failure_mode: mode must be ACL_CONTINUE_ON_FAILURE (0) or "
                           f"ACL_STOP_ON_FAILURE (1), got mode={mode!r}")
        self.live_core("set_failure_mode").stop_on_failure = mode == ACL_STOP_ON_FAILURE

    def destroy(self) -> None:
        """Mirrors `aclrtDestroyStream`: wait for the queued tasks, then release the worker thread.

        A task failure not yet reported is raised (the stream is destroyed either way).
        """
        if self.is_default:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"destroy: stream must not be the default stream, got stream={self.id}")
        self._close()

    def _close(self) -> None:
        """Destroy without the default-stream check (used by device reset)."""
        if self._destroyed:
            return
        self._core.wait_seq(self._core.submitted)
        self._destroyed = True
        self._finalizer()
        failed = self._core.take_errors()
        if failed:
            raise error_from_tasks("destroy", self.id, failed)

    # -- current stream ----------------------------------------------------------------------------
    def __enter__(self):
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _tls.stack.pop()
        return False


def _release(core: StreamCore) -> None:
    """A stream was destroyed or collected: its worker exits once idle, its subscription goes."""
    core.close()
    for h in HOOKS:
        h.released(core)


def default_stream(device: int | None = None) -> Stream:
    """The default stream of `device` (default: this thread's current device), created on first use.

    Mirrors passing a NULL `aclrtStream`; it lives until the device is reset.
    """
    dev = _device.get_device(device, api="rt.default_stream")
    s = dev.default_stream
    if s is None or s._destroyed:
        with dev.lock:
            s = dev.default_stream
            if s is None or s._destroyed:
                s = dev.default_stream = Stream(_device_id=dev.id, _is_default=True)
    return s


def abort_device(dev, err: AclError) -> None:
    """End the work of `dev`'s streams (device reset): see `rt.sched.StreamCore.abort`."""
    for s in list(dev.streams):
        if isinstance(s, Stream) and not s._destroyed:
            s._core.abort(err)


_device.ABORT_HOOKS.append(abort_device)


def _on_device_reset(dev) -> None:
    """Device reset hook: the device's streams (already ended) are destroyed."""
    for s in list(dev.streams):
        try:
            s._close()
        except AclError:
            pass
    dev.default_stream = None
    for h in HOOKS:
        h.device_reset(dev.id)


def current_stream() -> Stream:
    """The innermost `with stream:` of this host thread, else the current device's default
    stream."""
    stack = getattr(_tls, "stack", None)
    if stack:
        return stack[-1]
    return default_stream()


class Event:
    """Mirrors `aclrtCreateEventWithFlag(&e, flags)` (default `ACL_EVENT_TIME_LINE`: timestamps on).

    An event is *reached* when the stream it was recorded on gets to it; its timestamp is taken
    then.
    """

    _ids = iter(range(1, 1 << 62))

    def __init__(self, flags: int = ACL_EVENT_TIME_LINE):
        self.id = next(Event._ids)
        self.flags = int(flags)
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._recorded = 0          # generation of the latest record() call
        self._reached = 0           # latest generation a stream has reached
        self._stamp_ns = None
        self._waiters = []          # (gen, task) of stream waits
        self.clock = None           # mem-check clock captured by the latest record (a hook's)
        self.destroyed = False

    def __repr__(self):
        return f"<rt.Event {self.id} recorded={self._recorded} reached={self._reached}>"

    def destroy(self) -> None:
        """Mirrors `aclrtDestroyEvent`: later `record` / `wait_event` on it raise 107017."""
        self.destroyed = True

    def _live(self, api: str) -> None:
        if self.destroyed:
            raise AclError(ACL_ERROR_RT_INVALID_HANDLE,
                           f"{api}: event must not be destroyed, got event={self.id}")

    @property
    def timing(self) -> bool:
        return self.flags == 0 or bool(self.flags & ACL_EVENT_TIME_LINE)

    def record(self, stream: Stream | None = None) -> None:
        """Mirrors `aclrtRecordEvent`: mark the current end of `stream`'s queue; returns at once.

        The event completes, and takes its timestamp, when the stream reaches the mark.
        """
        if stream is None:
            stream = current_stream()
        if not isinstance(stream, Stream):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"record: stream must be an rt.Stream or None, got stream={stream!r}")
        core = stream.live_core("record")
        self._live("record")
        with self._lock:
            self._recorded += 1
            gen = self._recorded
        task = Task(core, lambda: self._reach(gen), "event", f"record_event({self.id})", 0,
                    "inline")
        for h in HOOKS:
            h.recorded(core, self)
        stream.submit(task)

    def _reach(self, gen: int) -> None:
        now = perf_counter_ns()
        with self._lock:
            if gen <= self._reached:
                return
            self._reached = gen
            self._stamp_ns = now
            ready = [w for w in self._waiters if w[0] <= gen]
            if ready:
                self._waiters = [w for w in self._waiters if w[0] > gen]
            self._cv.notify_all()
        for _, task in ready:
            task.core.complete(task)

    def _add_waiter(self, gen: int, task: Task) -> bool:
        with self._lock:
            if self._reached >= gen:
                return True
            self._waiters.append((gen, task))
            return False

    def query(self) -> bool:
        """Mirrors `aclrtQueryEventStatus`: True once the latest record has been reached.

        False while pending, and for an event never recorded (ACL_EVENT_RECORDED_STATUS_NOT_READY).
        A destroyed event raises 107017.
        """
        self._live("query")
        return self._recorded > 0 and self._reached >= self._recorded

    def synchronize(self, timeout_ms: int = -1) -> None:
        """Mirrors `aclrtSynchronizeEvent(WithTimeout)`: wait until the latest record is reached.

        Returns at once for an event never recorded; `timeout_ms=-1` waits forever, `0` only checks;
        on timeout raises `AclError(507047)` at the deadline. A destroyed event raises 107017.
        """
        self._live("synchronize")
        target = self._recorded
        deadline = None if timeout_ms is None or timeout_ms < 0 else \
            perf_counter_ns() + int(timeout_ms) * 1_000_000
        with self._lock:
            while self._reached < target:
                left = None if deadline is None else (deadline - perf_counter_ns()) / 1e9
                if left is not None and left <= 0:
                    raise AclError(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                                   f"synchronize: event {self.id} must be reached within "
                                   f"timeout_ms, got timeout_ms={timeout_ms}")
                self._cv.wait(left)
        for h in HOOKS:
            h.host_waited(self)

    def elapsed_time(self, end: "Event") -> float:
        """Mirrors `aclrtEventElapsedTime(&ms, self, end)`: float ms between the two events' stamps.

        Both must have been recorded (else 107006) and reached (else 507006), with timing enabled.
        """
        if not isinstance(end, Event):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"elapsed_time: end must be an rt.Event, got end={end!r}")
        self._live("elapsed_time")
        end._live("elapsed_time")
        for which, ev in (("start", self), ("end", end)):
            if not ev.timing:
                raise AclError(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                               f"elapsed_time: {which} event must be created with "
                               f"ACL_EVENT_TIME_LINE, got flags={ev.flags:#x}")
            if ev._recorded == 0:
                raise AclError(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                               f"elapsed_time: {which} event must be recorded first, got "
                               f"event={ev.id} never recorded")
            if ev._reached < ev._recorded:
                raise AclError(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                               f"elapsed_time: {which} event must be complete, got event={ev.id} "
                               "still pending; synchronize the event or its stream first")
        ms = (end._stamp_ns - self._stamp_ns) / 1e6
        if ms < 0:
            raise AclError(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL,
                           f"elapsed_time: end must be reached after start, got {ms:.6f} ms")
        return ms

    @property
    def timestamp_ns(self) -> int | None:
        """`perf_counter_ns()` when the latest record was reached (None before that)."""
        return self._stamp_ns if self._recorded > 0 and self._reached >= self._recorded else None
