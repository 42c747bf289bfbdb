"""`acl.rt`: pyACL's runtime functions over `rt` (`import rt.acl as acl; acl.rt.malloc(...)`).

Like pyACL, every function returns `ret` or `(value..., ret)` and never raises for an API error:
an `AclError` becomes its code in `ret` (and `acl.get_recent_err_msg()` holds the message).
Pointers, streams, events and contexts are plain ints; stream 0 is the default stream.
"""
from __future__ import annotations

import threading

from .. import callback as _cb
from .. import copy as _copy
from .. import device as _dev
from .. import memory as _mem
from ..errors import AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_INVALID_RESOURCE_HANDLE
from ..optimeout import set_op_execute_timeout as _set_op_timeout
from ..stream import Event, Stream, default_stream
from . import constants as C
from .handles import HandleTable, name_calls, returns_ret, returns_value

_handles = HandleTable("rt.", 0x5A0000001000, ACL_ERROR_INVALID_RESOURCE_HANDLE)
_tls = threading.local()          # handle -> Stream | Event | context device id in _handles


_returns_ret, _returns_value = returns_ret, returns_value


def stream_of(handle, api: str) -> Stream:
    """The rt.Stream behind an acl stream handle (None or 0: the default stream); the other acl
    modules (mdl, media, hccl) resolve their stream arguments with it."""
    if handle is None or handle == 0:
        return default_stream()
    return _handles.get(handle, Stream, api)


_stream = stream_of


class _Context(int):
    """A context handle's payload: the device id."""


# -- devices and contexts --------------------------------------------------------------------------
set_device = _returns_ret(_dev.set_device)
reset_device = _returns_ret(_dev.reset_device)
synchronize_device = _returns_ret(_dev.synchronize_device)
synchronize_device_with_timeout = _returns_ret(
    lambda timeout: _dev.synchronize_device(timeout))


@_returns_ret
def set_op_execute_time_out(timeout: int):
    """`aclrtSetOpExecuteTimeOut(timeout)`: in seconds, as ACL (0: no timeout)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"acl.rt.set_op_execute_time_out: timeout must be an int >= 0 (seconds), "
                       f"got timeout={timeout!r}")
    _set_op_timeout(timeout * 1000)


@_returns_ret
def set_op_execute_time_out_with_ms(timeout: int):
    """`aclrtSetOpExecuteTimeOutWithMs(timeout)`: in milliseconds (0: no timeout)."""
    _set_op_timeout(timeout)
synchronize = synchronize_device        # as some third-party snippets spell it
get_device = _returns_value(-1)(_dev.current_device)
get_device_count = _returns_value(0)(_dev.device_count)
get_device_info = _returns_value(0)(_dev.get_device_info)


@_returns_value(C.ACL_HOST)
def get_run_mode():
    """Mirrors `aclrtGetRunMode`: ACL_HOST, or ACL_DEVICE when ASCEND_EMU_RUN_MODE=ACL_DEVICE
    (acl.util.run_mode)."""
    from .util import run_mode
    return run_mode()


@_returns_value(0)
def create_context(device_id: int):
    """Mirrors `aclrtCreateContext`: opens `device_id` and makes the new context current."""
    _dev.set_device(device_id)
    h = _handles.new(_Context(device_id))
    _tls.ctx = h
    return h


@_returns_ret
def destroy_context(context: int):
    _handles.get(context, _Context, "destroy_context")
    _handles.drop(context)
    if getattr(_tls, "ctx", None) == context:
        _tls.ctx = None


@_returns_ret
def set_context(context: int):
    """Mirrors `aclrtSetCurrentContext`: this thread's current device becomes the context's."""
    _dev.set_device(int(_handles.get(context, _Context, "set_context")))
    _tls.ctx = context


@_returns_value(0)
def get_context():
    """Mirrors `aclrtGetCurrentContext` (the device's implicit context if none was created)."""
    dev = _dev.current_device()
    ctx = getattr(_tls, "ctx", None)
    if isinstance(_handles.peek(ctx), _Context) and int(_handles.peek(ctx)) == dev:
        return ctx
    _tls.ctx = _handles.new(_Context(dev))
    return _tls.ctx


# -- streams ---------------------------------------------------------------------------------------
@_returns_value(0)
def create_stream():
    return _handles.new(Stream())


@_returns_value(0)
def create_stream_with_config(priority: int, flag: int):
    return _handles.new(Stream(priority=priority, flags=flag))


@_returns_ret
def destroy_stream(stream: int):
    s = _handles.get(stream, Stream, "destroy_stream")
    _handles.drop(stream)
    s.destroy()


synchronize_stream = _returns_ret(
    lambda stream: _stream(stream, "synchronize_stream").synchronize())
synchronize_stream_with_timeout = _returns_ret(
    lambda stream, timeout: _stream(stream, "synchronize_stream_with_timeout").synchronize(timeout))
stream_wait_event = _returns_ret(
    lambda stream, event: _stream(stream, "stream_wait_event").wait_event(
        _handles.get(event, Event, "stream_wait_event")))
set_stream_failure_mode = _returns_ret(
    lambda stream, mode: _stream(stream, "set_stream_failure_mode").set_failure_mode(mode))


@_returns_value(C.ACL_STREAM_STATUS_NOT_READY)
def stream_query(stream: int):
    done = _stream(stream, "stream_query").query()
    return C.ACL_STREAM_STATUS_COMPLETE if done else C.ACL_STREAM_STATUS_NOT_READY


# -- memory ----------------------------------------------------------------------------------------
@_returns_value(0)
def malloc(size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST):
    return int(_mem.malloc(size, policy))


@_returns_value(0)
def malloc_host(size: int):
    return int(_mem.malloc_host(size))


free = _returns_ret(_mem.free)
free_host = _returns_ret(_mem.free_host)
get_mem_info = _returns_value(0, 0)(_dev.get_mem_info)


def _check_dest_max(api: str, dest_max, count) -> None:
    if not isinstance(count, int) or not isinstance(dest_max, int) or count > dest_max:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"acl.rt.{api}: count must be <= dest_max, got count={count!r}, "
                       f"dest_max={dest_max!r}")


def _advisory(kind):
    """CANN infers a copy's direction from where the pointers live; the kind a script passes is
    advisory (official samples pass DEVICE_TO_HOST for host-to-host copies, ...). A valid kind
    becomes DEFAULT; anything else is passed on to be refused with its value."""
    if isinstance(kind, int) and not isinstance(kind, bool) and 0 <= kind <= 4:
        return C.ACL_MEMCPY_DEFAULT
    return kind


@_returns_ret
def memcpy(dst, dest_max: int, src, count: int, kind: int):
    """Mirrors `aclrtMemcpy(dst, destMax, src, count, kind)` (synchronous; `kind` advisory)."""
    _check_dest_max("memcpy", dest_max, count)
    _mem.prepare_copy(dst, src, count, _advisory(kind), "acl.rt.memcpy").run()


@_returns_ret
def memcpy_async(dst, dest_max: int, src, count: int, kind: int, stream: int):
    """Mirrors `aclrtMemcpyAsync`: returns once queued (pinned) or done (pageable host memory)."""
    _check_dest_max("memcpy_async", dest_max, count)
    _copy.memcpy_async(dst, src, count, _advisory(kind), _stream(stream, "memcpy_async"))


@_returns_ret
def memcpy2d(dst, dpitch: int, src, spitch: int, width: int, height: int, kind: int):
    _mem.prepare_copy_2d(dst, dpitch, src, spitch, width, height, _advisory(kind),
                         "acl.rt.memcpy2d").run()


memcpy_2d = memcpy2d
memset = _returns_ret(_mem.memset)
memset_async = _returns_ret(lambda ptr, max_count, value, count, stream: _copy.memset_async(
    ptr, max_count, value, count, _stream(stream, "memset_async")))


# -- events ----------------------------------------------------------------------------------------
@_returns_value(0)
def create_event():
    return _handles.new(Event(C.ACL_EVENT_TIME_LINE))


@_returns_value(0)
def create_event_with_flag(flag: int):
    return _handles.new(Event(flag))


record_event = _returns_ret(lambda event, stream: _handles.get(event, Event, "record_event").record(
    _stream(stream, "record_event")))
synchronize_event = _returns_ret(lambda event: _handles.get(event, Event, "synchronize_event")
                                 .synchronize())
synchronize_event_with_timeout = _returns_ret(
    lambda event, timeout: _handles.get(event, Event, "synchronize_event_with_timeout").synchronize(
        timeout))


@_returns_value(C.ACL_EVENT_RECORDED_STATUS_NOT_READY)
def query_event_status(event: int):
    """Mirrors `aclrtQueryEventStatus`: ACL_EVENT_RECORDED_STATUS_COMPLETE (1) or NOT_READY (0)."""
    done = _handles.get(event, Event, "query_event_status").query()
    return C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY


@_returns_value(C.ACL_EVENT_STATUS_NOT_READY)
def query_event(event: int):
    """Mirrors `aclrtQueryEvent` (deprecated in CANN, still in samples): ACL_EVENT_STATUS_COMPLETE
    (0) or ACL_EVENT_STATUS_NOT_READY (1)."""
    done = _handles.get(event, Event, "query_event").query()
    return C.ACL_EVENT_STATUS_COMPLETE if done else C.ACL_EVENT_STATUS_NOT_READY


@_returns_value(0)
def create_event_ex_with_flag(flag: int):
    """Mirrors `aclrtCreateEventExWithFlag`: like create_event_with_flag (the Ex events are not
    bound to a stream's event resources, which the emulator does not limit)."""
    return _handles.new(Event(flag))


@_returns_value(0, 0)
def device_get_stream_priority_range():
    """Mirrors `aclrtDeviceGetStreamPriorityRange`: (least priority, greatest priority) = (7, 0):
    a lower number is a higher priority (rt.Stream)."""
    _dev.ensure_device()
    return 7, 0


@_returns_value(0.0)
def event_elapsed_time(start: int, end: int):
    return _handles.get(start, Event, "event_elapsed_time").elapsed_time(
        _handles.get(end, Event, "event_elapsed_time"))


@_returns_ret
def destroy_event(event: int):
    _handles.get(event, Event, "destroy_event").destroy()
    _handles.drop(event)


# -- callbacks -------------------------------------------------------------------------------------
subscribe_report = _returns_ret(lambda thread_id, stream: _cb.subscribe_report(
    thread_id, _stream(stream, "subscribe_report")))
unsubscribe_report = _returns_ret(lambda thread_id, stream: _cb.unsubscribe_report(
    thread_id, _stream(stream, "unsubscribe_report")))
launch_callback = _returns_ret(lambda fn, user_data, block_type, stream: _cb.launch_callback(
    fn, user_data, block_type, _stream(stream, "launch_callback")))
process_report = _returns_ret(_cb.process_report)


class MemcpyKind:
    """`acl.rt.MemcpyKind.MEMCPY_HOST_TO_DEVICE` etc., as some third-party snippets write them."""
    MEMCPY_HOST_TO_HOST = C.ACL_MEMCPY_HOST_TO_HOST
    MEMCPY_HOST_TO_DEVICE = C.ACL_MEMCPY_HOST_TO_DEVICE
    MEMCPY_DEVICE_TO_HOST = C.ACL_MEMCPY_DEVICE_TO_HOST
    MEMCPY_DEVICE_TO_DEVICE = C.ACL_MEMCPY_DEVICE_TO_DEVICE
    MEMCPY_DEFAULT = C.ACL_MEMCPY_DEFAULT


class MemType:
    """`acl.rt.MemType.MEM_TYPE_NORMAL` etc. (third-party spelling of the malloc policies)."""
    MEM_TYPE_HUGE_FIRST = C.ACL_MEM_MALLOC_HUGE_FIRST
    MEM_TYPE_HUGE = C.ACL_MEM_MALLOC_HUGE_ONLY
    MEM_TYPE_NORMAL = C.ACL_MEM_MALLOC_NORMAL_ONLY


name_calls(globals(), "acl.rt")         # lambdas and aliases get their acl.rt.* names
