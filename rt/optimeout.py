"""ACL's op execute timeout (`aclrtSetOpExecuteTimeOut`): a watchdog thread that cancels kernel
tasks running past the deadline (rt/launch.py's core pool registers each kernel task with it while
a timeout is set)."""
from __future__ import annotations

import heapq
import itertools
import threading
from time import perf_counter_ns

from .errors import AclError, ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_AICORE_TIMEOUT
from .sched import KernelTask


#: The op execute timeout in ns (0: none), `set_op_execute_timeout`.
OP_TIMEOUT_NS = 0


def set_op_execute_timeout(timeout_ms: int) -> None:
    """Mirrors `aclrtSetOpExecuteTimeOut` (in ms, as `aclrtSetOpExecuteTimeOutWithMs`): a kernel
    that runs longer than `timeout_ms` from its start is stopped and fails on its stream with
    507014 (ACL_ERROR_RT_AICORE_TIMEOUT). `0` turns the timeout off (the default). Process-wide.

    Stopping: Python code (interpret mode) is interrupted at its next bytecode; compiled code
    cannot be interrupted, so its core worker is abandoned (the thread exits when the compiled
    function returns, if ever) and a new worker takes the core. While a timeout is set, threads
    synchronizing do not run kernel blocks themselves (no assist)."""
    global OP_TIMEOUT_NS
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"set_op_execute_timeout: timeout_ms must be an int >= 0, got "
                       f"timeout_ms={timeout_ms!r}")
    OP_TIMEOUT_NS = int(timeout_ms) * 1_000_000


def get_op_execute_timeout() -> int:
    """The op execute timeout in ms (0: none)."""
    return OP_TIMEOUT_NS // 1_000_000


class _Watchdog:
    """One thread that cancels kernel tasks running past their op execute deadline."""

    def __init__(self):
        self._cv = threading.Condition(threading.Lock())
        self._heap = []
        self._seq = itertools.count()
        threading.Thread(target=self._loop, name="rt-op-watchdog", daemon=True).start()

    def watch(self, task: KernelTask, timeout_ns: int) -> None:
        with self._cv:
            heapq.heappush(self._heap, (perf_counter_ns() + timeout_ns, next(self._seq),
                                        timeout_ns, task))
            self._cv.notify()

    def _loop(self) -> None:
        cv, heap = self._cv, self._heap
        while True:
            with cv:
                while not heap or heap[0][0] > perf_counter_ns():
                    cv.wait(None if not heap else (heap[0][0] - perf_counter_ns()) / 1e9)
                _, _, timeout_ns, task = heapq.heappop(heap)
            if task.done or task.cancelled is not None or task.left <= 0:
                continue
            ms = timeout_ns // 1_000_000
            try:
                task.cancel(AclError(
                    ACL_ERROR_RT_AICORE_TIMEOUT,
                    f"kernel {task.name!r} (launch on stream {task.core.id}): the kernel must "
                    f"finish within the op execute timeout, got op_execute_timeout_ms={ms} "
                    f"exceeded (rt.set_op_execute_timeout)"))
            except Exception:                   # noqa: BLE001 - keep the watchdog alive
                pass
            del task


_wd = None
_wd_lock = threading.Lock()


def watchdog() -> _Watchdog:
    """The process's watchdog thread (started on first use)."""
    global _wd
    if _wd is None:
        with _wd_lock:
            if _wd is None:
                _wd = _Watchdog()
    return _wd
