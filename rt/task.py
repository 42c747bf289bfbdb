"""Tasks and the per-stream scheduler (internal; public names live in `rt.stream`).

A stream runs one task at a time, in submission order. Starting a task never blocks the thread
that starts it: a kernel is handed to the core pool, a copy to the device's copy engine, a host
function to the stream's own worker thread (started lazily), and markers (event records, waits
on events already reached) run inline. Whoever finishes a task (a core worker, the copy engine, the
stream worker, an event) starts the stream's next one, so back-to-back kernels on a stream go from
core pool to core pool without a round trip through any other thread (task aggregation,
`ASCEND_LAUNCH_TASK_OPTIMIZE`, default on; `0` routes every kernel through the stream worker).
"""
from __future__ import annotations

import itertools
import os
import queue
import threading
from collections import deque
from time import perf_counter_ns

from .errors import AclError, ACL_ERROR_RT_INTERNAL_ERROR, ACL_ERROR_RT_PARAM_INVALID

#: Active profilers (rt.profiler appends itself); each gets `_add(task)` when a task finishes.
PROFILERS: list = []

_SKIPPABLE = frozenset({"kernel", "memcpy", "memset", "callback", "host_func"})
_core_pool = None
_copy_engine = None


def _pool():
    global _core_pool
    if _core_pool is None:
        from .launch import core_pool
        _core_pool = core_pool
    return _core_pool()


def copy_engine(device_id: int):
    """The device's copy engine (`rt.copy.CopyEngine`)."""
    global _copy_engine
    if _copy_engine is None:
        from .copy import copy_engine as _ce
        _copy_engine = _ce
    return _copy_engine(device_id)


class Task:
    """One unit of work on a stream (a kernel, copy, memset, event marker or host function).

    `start_ns`/`end_ns` are `time.perf_counter_ns()` stamps taken when the work starts and ends;
    kernels also carry `ranges`: `(worker_id, first, last, start_ns, end_ns)` per core range.
    """

    __slots__ = ("core", "fn", "kind", "name", "nbytes", "engine", "args", "seq", "start_ns",
                 "end_ns", "error", "skipped", "ranges", "binary", "block_dim", "left",
                 "on_done", "priority", "entries", "pool", "__weakref__")

    def __init__(self, core, fn, kind, name, nbytes=0, engine="compute", args=None):
        self.core = core
        self.fn = fn
        self.kind = kind
        self.name = name
        self.nbytes = nbytes
        self.engine = engine
        self.args = args
        self.seq = 0
        self.start_ns = 0
        self.end_ns = 0
        self.error = None
        self.skipped = False
        self.ranges = None
        self.binary = None
        self.block_dim = 0
        self.left = 0
        self.on_done = None
        self.priority = core.priority
        self.entries = None
        self.pool = None

    @property
    def stream_id(self) -> int:
        return self.core.id

    @property
    def device(self) -> int:
        return self.core.device_id

    @property
    def done(self) -> bool:
        return self.core.completed >= self.seq > 0

    def wait(self, timeout_ms: int = -1) -> bool:
        """Block until this task has finished (run, failed or skipped); False on timeout."""
        return self.core.wait_seq(self.seq, timeout_ms)

    def __repr__(self):
        state = "done" if self.done else "pending"
        return f"<Task {self.kind} {self.name!r} stream={self.core.id} seq={self.seq} {state}>"


class StreamCore:
    """The machinery behind one `rt.Stream`; holds no reference to the Stream object."""

    def __init__(self, sid: int, device_id: int, priority: int):
        self.id = sid
        self.device_id = device_id
        self.priority = priority
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.pending = deque()
        self.active = None
        self.submitted = 0
        self.completed = 0
        self.nwait = 0
        self.errors = []
        self.stop_on_failure = False
        self.skipping = False
        self.optimize = os.environ.get("ASCEND_LAUNCH_TASK_OPTIMIZE", "1") != "0"
        self.worker = None
        self.wq = None
        self.closing = False
        self.worker_stopped = False
        self.vc = None                 # mem-check vector clock (rt.stream)

    # -- submission -----------------------------------------------------------------------------
    def submit(self, task: Task) -> Task:
        with self.lock:
            self.submitted += 1
            task.seq = self.submitted
            if self.active is not None:
                self.pending.append(task)
                return task
            self.active = task
        self._start(task)
        return task

    def _start(self, task):
        """Start `task` (the active one) and any inline tasks after it; never blocks."""
        while task is not None:
            if self.skipping and task.kind in _SKIPPABLE:
                task.skipped = True
                task = self._finish(task)
                continue
            eng = task.engine
            if eng == "pool":
                task.start_ns = perf_counter_ns()
                if self.optimize:
                    _pool().dispatch(task)
                else:
                    self._to_worker(task)
                return
            if eng == "compute":
                self._to_worker(task)
                return
            if eng == "copy":
                copy_engine(self.device_id).put(task)
                return
            task.start_ns = perf_counter_ns()
            try:
                now = task.fn()
            except BaseException as exc:          # noqa: BLE001 - becomes the stream's error
                task.error, now = exc, True
            if eng == "deferred" and not now:
                return                            # someone calls complete(task) later
            task = self._finish(task)

    def complete(self, task):
        """Called by whoever ran `task`: finish it and start the stream's next task."""
        nxt = self._finish(task)
        if nxt is not None:
            self._start(nxt)

    def _finish(self, task):
        if not task.end_ns:
            task.end_ns = perf_counter_ns()
        if not task.skipped:
            if task.on_done is not None:
                try:
                    task.on_done(task)
                except BaseException as exc:      # noqa: BLE001
                    task.error = task.error or exc
            if PROFILERS:
                for p in list(PROFILERS):
                    try:
                        p._add(task)
                    except Exception:             # noqa: BLE001 - never lose a worker to it
                        pass
        with self.lock:
            if task.error is not None:
                self.errors.append(task)
                if self.stop_on_failure:
                    self.skipping = True
            self.completed = task.seq
            nxt = self.pending.popleft() if self.pending else None
            self.active = nxt
            if self.nwait:
                self.cv.notify_all()
            if nxt is None and self.closing:
                self._stop_worker_locked()
        task.fn = None                            # drop closures (host buffers) early
        return nxt

    def report_error(self, task, exc):
        """Attach an error found after `task` completed (a NO_BLOCK callback that raised)."""
        with self.lock:
            task.error = exc
            self.errors.append(task)
            if self.stop_on_failure:
                self.skipping = True

    # -- the stream worker (host functions; kernels when aggregation is off) -------------------
    def _to_worker(self, task):
        with self.lock:
            if self.worker is None:
                self.wq = queue.SimpleQueue()
                self.worker = threading.Thread(target=self._worker_loop, args=(self.wq,),
                                               name=f"rt-stream-{self.id}", daemon=True)
                self.worker.start()
        self.wq.put(task)

    def _worker_loop(self, wq):
        while True:
            task = wq.get()
            if task is None:
                return
            if task.engine == "pool":
                _pool().dispatch(task)
                continue
            task.start_ns = perf_counter_ns()
            try:
                task.fn()
            except BaseException as exc:          # noqa: BLE001
                task.error = exc
            self.complete(task)
            del task

    def _stop_worker_locked(self):
        if self.worker is not None and not self.worker_stopped:
            self.worker_stopped = True
            self.wq.put(None)

    def close(self):
        """Let the worker thread exit once the queued work has drained (stream destroyed / GC'd)."""
        with self.lock:
            self.closing = True
            if self.active is None:
                self._stop_worker_locked()

    # -- waiting ----------------------------------------------------------------------------------
    def wait_seq(self, seq: int, timeout_ms: int = -1) -> bool:
        """Wait until task `seq` has finished; while its kernel has ranges no core has taken yet,
        run them in this thread (`CorePool.assist`). False on timeout."""
        if self.completed >= seq:
            return True
        deadline = None if timeout_ms is None or timeout_ms < 0 else \
            perf_counter_ns() + int(timeout_ms) * 1_000_000
        while True:
            t = self.active
            if t is not None and t.entries and t.pool.assist_enabled:
                t.pool.assist(t)
            with self.lock:
                if self.completed >= seq:
                    return True
                t = self.active
                if t is not None and t.entries and t.pool.assist_enabled:
                    continue
                if deadline is not None:
                    left = (deadline - perf_counter_ns()) / 1e9
                    if left <= 0:
                        return False
                else:
                    left = None
                self.nwait += 1
                try:
                    self.cv.wait(left)
                finally:
                    self.nwait -= 1

    def idle(self) -> bool:
        return self.completed >= self.submitted

    def take_errors(self):
        """Return and clear the failed tasks; leaves STOP_ON_FAILURE's skip state."""
        with self.lock:
            errs, self.errors = self.errors, []
            self.skipping = False
        return errs


def error_from_tasks(api: str, sid: int, failed: list) -> AclError:
    """The AclError a synchronize raises for failed tasks, chained to the first one's exception."""
    task = failed[0]
    exc = task.error
    code = exc.code if isinstance(exc, AclError) else ACL_ERROR_RT_INTERNAL_ERROR
    detail = exc.message if isinstance(exc, AclError) else f"{type(exc).__name__}: {exc}"
    more = f" (and {len(failed) - 1} more failed task(s))" if len(failed) > 1 else ""
    err = AclError(code, f"{api}: {task.kind} {task.name!r} on stream {sid} failed: {detail}{more}")
    err.__cause__ = exc
    return err


_stream_ids = itertools.count(1)


def next_stream_id() -> int:
    return next(_stream_ids)


# -- mem-check: vector clocks for cross-stream races (ASCEND_MEM_CHECK=1) ------------------------
# Each stream has a clock (stream id -> epoch); every submitted task ticks its stream's entry and
# merges the host's clock (the host orders what it submits after what it has synchronized). An
# event record captures the stream's clock, `wait_event` merges it in, and a host synchronize merges
# the stream's (or event's) clock into the host's. An access to an allocation races with the last
# one from another stream unless that access's epoch is covered by the accessing stream's clock.
_mc_lock = threading.Lock()
_host_vc: dict = {}
_shadow: dict = {}          # allocation base -> [last write (sid, epoch, what) | None, {sid: read}]


def mc_enabled() -> bool:
    return os.environ.get("ASCEND_MEM_CHECK") == "1"


def device_address(obj):
    """The device address held by a DeviceArray / DevicePtr / device-range int, else None."""
    from . import memory
    ptr = getattr(obj, "ptr", None) if not isinstance(obj, int) else obj
    if ptr is None or isinstance(ptr, bool) or not isinstance(ptr, int):
        return None
    try:
        return int(ptr) if memory.is_device_address(int(ptr)) else None
    except Exception:           # noqa: BLE001 - memory layer not ready: not a device address
        return None


def _merge(dst: dict, src: dict | None) -> None:
    if src:
        for k, v in src.items():
            if dst.get(k, 0) < v:
                dst[k] = v


def mc_on_submit(core, accesses, task) -> None:
    with _mc_lock:
        vc = core.vc if core.vc is not None else {}
        core.vc = vc
        _merge(vc, _host_vc)
        epoch = vc[core.id] = vc.get(core.id, 0) + 1
        if accesses:
            for addr, is_write in accesses:
                _mc_access(core.id, vc, epoch, addr, is_write, task)


def _mc_access(sid, vc, epoch, addr, is_write, task):
    from . import memory
    try:
        found = memory.find_allocation(addr)
    except Exception:           # noqa: BLE001 - unknown address: keyed by itself
        found = None
    base = int(found[0]) if found else int(addr)
    rec = _shadow.get(base)
    what = f"{task.kind} {task.name!r}"
    if rec is not None:
        last_w, reads = rec
        others = [last_w] if last_w is not None else []
        if is_write:
            others += [(s, e, w) for s, (e, w) in reads.items()]
        for other_sid, other_epoch, other_what in others:
            if other_sid != sid and vc.get(other_sid, 0) < other_epoch:
                raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                               f"mem-check: access to buffer {addr:#x} (allocation {base:#x}) must "
                               f"be ordered after stream {other_sid}'s {other_what}, got stream {sid}'s "
                               f"{what} with no event or synchronize in between; record an event "
                               f"on stream {other_sid} and wait_event it on stream {sid}")
    if is_write or rec is None:
        rec = _shadow[base] = [None, {}]
    if is_write:
        rec[0] = (sid, epoch, what)
    else:
        rec[1][sid] = (epoch, what)


def mc_on_record(core, event) -> None:
    with _mc_lock:
        vc = dict(core.vc or {})
        _merge(vc, _host_vc)
        event._vc = vc


def mc_on_wait(core, event) -> None:
    with _mc_lock:
        if core.vc is None:
            core.vc = {}
        _merge(core.vc, event._vc)


def mc_host_merge(vc) -> None:
    if vc:
        with _mc_lock:
            _merge(_host_vc, vc)


def mc_forget_device(device_id: int) -> None:
    """Drop the access history of a device's allocations (device reset)."""
    lo = (0x100 + device_id) << 40
    with _mc_lock:
        for base in [b for b in _shadow if lo <= b < lo + (1 << 40)]:
            del _shadow[base]
