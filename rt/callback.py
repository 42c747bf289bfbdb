"""Host callbacks on streams (`aclrtSubscribeReport`, `aclrtLaunchCallback`, `aclrtProcessReport`).

A host thread subscribes to a stream's reports; `launch_callback` queues a callback task; when the
stream reaches it, the callback is posted to the subscribed thread, which runs it inside its
`process_report` call. With `ACL_CALLBACK_BLOCK` the stream's later tasks wait until the callback
has returned; with `ACL_CALLBACK_NO_BLOCK` the stream moves on as soon as it is posted. A callback
that raises puts its stream in error (reported by the next synchronize).

Fidelity: the subscription/blocking rules and error codes follow ACL (107015, 100033, 100034,
100036, 107012); thread ids are Python `threading.get_ident()` values (what `acl.util.start_thread`
returns here).
"""
from __future__ import annotations

import queue
import threading
from time import perf_counter_ns

from .errors import (AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_REPEAT_SUBSCRIBE,
                     ACL_ERROR_STREAM_NOT_SUBSCRIBE, ACL_ERROR_RT_STREAM_NO_CB_REG,
                     ACL_ERROR_RT_THREAD_SUBSCRIBE, ACL_ERROR_WAIT_CALLBACK_TIMEOUT)
from . import sched
from .sched import Task
from .stream import Stream, current_stream

ACL_CALLBACK_NO_BLOCK = 0
ACL_CALLBACK_BLOCK = 1

_lock = threading.Lock()
_subscriber: dict = {}      # stream id -> thread id
_reports: dict = {}         # thread id -> SimpleQueue of (fn, data, task, block)


def _stream(stream, api: str) -> Stream:
    if stream is None:
        return current_stream()
    if not isinstance(stream, Stream):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: stream must be an rt.Stream, got stream={stream!r}")
    return stream


def _thread_id(thread_id, api: str) -> int:
    if isinstance(thread_id, bool) or not isinstance(thread_id, int) or thread_id <= 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: thread_id must be a positive int (threading.get_ident() or "
                       f"acl.util.start_thread's id), got thread_id={thread_id!r}")
    return thread_id


def subscribe_report(thread_id: int, stream) -> None:
    """Mirrors `aclrtSubscribeReport`: thread `thread_id` will run `stream`'s callbacks.

    A stream has at most one subscriber (else 100033); a thread may serve several streams.
    """
    api = "subscribe_report"
    tid = _thread_id(thread_id, api)
    s = _stream(stream, api)
    s.live_core(api)
    with _lock:
        cur = _subscriber.get(s.id)
        if cur is not None:
            raise AclError(ACL_ERROR_REPEAT_SUBSCRIBE,
                           f"{api}: stream must not be subscribed already, got stream={s.id} "
                           f"subscribed by thread {cur}")
        _subscriber[s.id] = tid
        _reports.setdefault(tid, queue.SimpleQueue())


def unsubscribe_report(thread_id: int, stream) -> None:
    """Mirrors `aclrtUnSubscribeReport`: `stream` must be subscribed by `thread_id` (else
    100034)."""
    api = "unsubscribe_report"
    tid = _thread_id(thread_id, api)
    s = _stream(stream, api)
    with _lock:
        cur = _subscriber.get(s.id)
        if cur != tid:
            raise AclError(ACL_ERROR_STREAM_NOT_SUBSCRIBE,
                           f"{api}: stream must be subscribed by thread_id, got stream={s.id} "
                           f"subscribed by {cur}, thread_id={tid}")
        del _subscriber[s.id]
        if tid not in _subscriber.values() and _reports[tid].empty():
            del _reports[tid]


def forget_stream(stream_id: int) -> None:
    """Drop a destroyed stream's subscription (its thread keeps undelivered callbacks)."""
    with _lock:
        tid = _subscriber.pop(stream_id, None)
        if tid is not None and tid not in _subscriber.values() and _reports[tid].empty():
            del _reports[tid]


class _Subscriptions(sched.StreamHook):
    """A destroyed or collected stream loses its subscription."""

    def released(self, core) -> None:
        forget_stream(core.id)


sched.add_hook(_Subscriptions())


def launch_callback(fn, data, block_type: int = ACL_CALLBACK_BLOCK, stream=None) -> Task:
    """Mirrors `aclrtLaunchCallback(fn, userData, blockType, stream)`: queue `fn(data)`.

    Returns at once. The stream must have a subscribed thread (else 107015); that thread runs
    `fn(data)` in `process_report` once the stream reaches the task.
    """
    api = "launch_callback"
    if not callable(fn):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID, f"{api}: fn must be callable, got fn={fn!r}")
    if (block_type not in (ACL_CALLBACK_NO_BLOCK, ACL_CALLBACK_BLOCK)
            or isinstance(block_type, bool)):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: block_type must be ACL_CALLBACK_NO_BLOCK (0) or ACL_CALLBACK_BLOCK "
                       f"(1), got block_type={block_type!r}")
    s = _stream(stream, api)
    core = s.live_core(api)
    with _lock:
        tid = _subscriber.get(s.id)
        q = _reports.get(tid) if tid is not None else None
    if q is None:
        raise AclError(ACL_ERROR_RT_STREAM_NO_CB_REG,
                       f"{api}: stream must be subscribed with subscribe_report first, got "
                       f"stream={s.id} with no subscribed thread")
    block = block_type == ACL_CALLBACK_BLOCK

    def post():
        q.put((fn, data, task, block))
        return not block                        # NO_BLOCK: the stream moves on now

    name = getattr(fn, "__qualname__", None) or repr(fn)
    task = Task(core, post, "callback", name, 0, "deferred",
                {"block": block, "thread_id": tid})
    return s.submit(task)


def process_report(timeout_ms: int = -1) -> None:
    """Mirrors `aclrtProcessReport(timeout)`: run one callback posted to the calling thread.

    `timeout_ms=-1` waits forever; if nothing arrives in time raises 100036. The calling thread
    must have subscribed to some stream (else 107012). Called in a loop by the subscribed thread.
    """
    api = "process_report"
    tid = threading.get_ident()
    with _lock:
        q = _reports.get(tid)
    if q is None:
        raise AclError(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                       f"{api}: the calling thread must be subscribed to a stream with "
                       f"subscribe_report, got thread_id={tid} with no subscription")
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < -1:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: timeout_ms must be -1 or >= 0, got timeout_ms={timeout_ms!r}")
    try:
        fn, data, task, block = q.get(timeout=None if timeout_ms < 0 else timeout_ms / 1000)
    except queue.Empty:
        raise AclError(ACL_ERROR_WAIT_CALLBACK_TIMEOUT,
                       f"{api}: a callback must arrive within timeout_ms, got timeout_ms="
                       f"{timeout_ms} with none") from None
    try:
        fn(data)
        exc = None
    except BaseException as e:                  # noqa: BLE001 - the stream's error
        exc = e
    if block:
        task.error = exc
        task.end_ns = perf_counter_ns()
        task.core.complete(task)
    elif exc is not None:
        task.core.report_error(task, exc)
