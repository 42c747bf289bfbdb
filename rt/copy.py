"""Asynchronous copies and memsets on streams (`aclrtMemcpyAsync`, `aclrtMemsetAsync`,
`aclrtMemcpy2dAsync`).

Arguments are validated when the call is made (errors raise at once, as ACL returns them); the bytes
move when the stream reaches the task, on the device's copy-engine thread, so a copy on one stream
overlaps a kernel on another (numpy's copy releases the GIL). As ACL documents, a copy whose host
side is pageable (not from `rt.malloc_host`) has completed when the call returns; from pinned memory
it is truly asynchronous. Host-to-host async copies are refused (207000), as on EP.

The copy engines themselves (one thread per device) are `rt.sched.CopyEngine`.

Fidelity: one copy engine per device (hardware has several DMA channels), so async copies of
different streams run one at a time but overlap kernels; bandwidth is the host's memcpy speed.
"""
from __future__ import annotations

from . import memory as _mem
from .errors import AclError, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from .sched import Task
from .stream import Stream, current_stream


_SHORT = {0: "H2H", 1: "H2D", 2: "D2H", 3: "D2D", 5: "H2D", 6: "D2D", 7: "D2D"}


def _stream_of(stream, api: str) -> Stream:
    if stream is None:
        return current_stream()
    if not isinstance(stream, Stream):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: stream must be an rt.Stream or None, got stream={stream!r}")
    return stream


def _enqueue(plan, stream, api: str, kind: str, name: str) -> Task:
    if kind == "memcpy" and plan.kind == _mem.MemcpyKind.HOST_TO_HOST:
        raise AclError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                       f"{api}: kind must not be HOST_TO_HOST for an async copy, got "
                       f"kind=HOST_TO_HOST (use rt.memcpy or numpy for host copies)")
    core = stream.live_core(api)
    task = Task(core, plan.run, kind, name, plan.nbytes, "copy",
                {"kind": _SHORT.get(int(plan.kind), str(plan.kind))})
    accesses = [(addr, mode == "w") for addr, _n, mode in plan.device_ranges]
    stream.submit(task, accesses=accesses)
    if accesses:
        _mem.record_use([a for a, _ in accesses], core, task.seq)
    if plan.pageable:
        task.wait()
    return task


def memcpy_async(dst, src, count: int, kind, stream=None) -> Task:
    """Mirrors `aclrtMemcpyAsync(dst, destMax, src, count, kind, stream)`: queue a copy of
    `count` bytes.

    `kind` must match where the pointers live (`MemcpyKind.DEFAULT` infers it). Returns the `Task`
    when the copy is queued (pinned host memory or device-to-device), or after it has completed
    (pageable host memory). Raises 207000 for HOST_TO_HOST, 107000 for bad arguments.
    """
    api = "memcpy_async"
    stream = _stream_of(stream, api)
    plan = _mem.prepare_copy(dst, src, count, kind, api)
    return _enqueue(plan, stream, api, "memcpy", f"memcpy_{_SHORT.get(int(plan.kind), '?')}")


def memset_async(ptr, max_count: int, value: int, count: int, stream=None) -> Task:
    """Mirrors `aclrtMemsetAsync(devPtr, maxCount, value, count, stream)`: queue setting `count`
    bytes of device memory, or of host memory from `malloc_host`, to the byte `value`. Returns
    when queued."""
    api = "memset_async"
    stream = _stream_of(stream, api)
    plan = _mem.prepare_memset(ptr, max_count, value, count, api)
    if plan.kind == _mem.MemcpyKind.HOST_TO_HOST and plan.pageable:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"{api}: ptr must be device memory or host memory from malloc_host, got "
                       f"a pageable host buffer")
    plan.pageable = False
    return _enqueue(plan, stream, api, "memset", "memset")


def memcpy_2d_async(dst, dpitch: int, src, spitch: int, width: int, height: int, kind,
                    stream=None) -> Task:
    """Mirrors `aclrtMemcpy2dAsync`: queue a copy of `height` rows of `width` bytes between pitched
    buffers. Same return rules as `memcpy_async`."""
    api = "memcpy_2d_async"
    stream = _stream_of(stream, api)
    plan = _mem.prepare_copy_2d(dst, dpitch, src, spitch, width, height, kind, api)
    return _enqueue(plan, stream, api, "memcpy", f"memcpy2d_{_SHORT.get(int(plan.kind), '?')}")
