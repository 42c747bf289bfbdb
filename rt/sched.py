"""Tasks and the per-stream scheduler: the machinery behind `rt.Stream` (see `rt.stream`).

A stream runs one task at a time, in submission order. Starting a task never blocks the thread
that starts it: a kernel is handed to its engine (the core pool, `rt.launch`), a copy to the
device's copy engine, a host function to the stream's own worker thread (started lazily), and
markers (event records, waits on events already reached) run inline. Whoever finishes a task (a core
worker, the copy engine, the stream worker, an event) starts the stream's next one, so back-to-back
kernels on a stream go from core pool to core pool without a round trip through any other thread
(task aggregation, `ASCEND_LAUNCH_TASK_OPTIMIZE`, default on; `0` routes every kernel through the
stream worker).

Modules above this one observe the streams through `StreamHook`s (`add_hook`): mem-check's race
detector (`rt.memcheck`) and the callback subscriptions (`rt.callback`); the profiler through
`PROFILERS`. This module imports nothing of rt but the errors.
"""
from __future__ import annotations

import heapq
import itertools
import os
import queue
import threading
from collections import deque
from time import perf_counter_ns
from typing import NamedTuple

from .errors import AclError, KernelFault, ACL_ERROR_RT_INTERNAL_ERROR

#: Active profilers (rt.profiler appends itself); each gets `add_task(task)` when a task finishes.
PROFILERS: list = []

_SKIPPABLE = frozenset({"kernel", "memcpy", "memset", "callback", "host_func", "dvpp"})


class BlockRun(NamedTuple):
    """One contiguous range of a kernel's blocks as one core ran it (a `KernelTask.ranges` item)."""
    core: int
    first: int
    last: int
    start_ns: int
    end_ns: int


class Task:
    """One unit of work on a stream (a copy, memset, event marker, callback or host function).

    `engine` says where it runs: `"compute"` (the stream's worker thread), `"copy"` (the device's
    copy engine), `"inline"` (in the thread that starts it), `"deferred"` (inline; `fn()` returning
    false means someone calls `core.complete(task)` later), or an engine object with `put(task)`
    (the core pool, for kernels). `start_ns`/`end_ns` are `time.perf_counter_ns()` stamps taken
    when the work starts and ends.
    """

    __slots__ = ("core", "fn", "kind", "name", "nbytes", "engine", "args", "seq", "start_ns",
                 "end_ns", "error", "skipped", "on_done", "priority", "__weakref__")

    def __init__(self, core: "StreamCore", fn, kind: str, name: str, nbytes: int = 0,
                 engine="compute", args=None):
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
        self.on_done = None
        self.priority = core.priority

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

    def fault_site(self) -> str | None:
        """Where in the task its error arose (a kernel's `block_idx=i/n`), or None."""
        return None

    def fault_detail(self) -> str:
        """What went wrong: an AclError's message, else `<ExceptionType>: <text>`."""
        exc = self.error
        return exc.message if isinstance(exc, AclError) else f"{type(exc).__name__}: {exc}"

    def __repr__(self):
        state = "done" if self.done else "pending"
        return f"<{type(self).__name__} {self.kind} {self.name!r} stream={self.core.id} " \
               f"seq={self.seq} {state}>"


class KernelTask(Task):
    """A kernel launch on a stream: `binary` (an `rt.KernelBinary`) run over `block_dim` blocks.

    `ranges` collects a `BlockRun` per core range once it has run; `left`, `entries` and `pool`
    belong to the engine running it (ranges not finished / not taken yet, and the core pool).
    A failed block leaves `error`, a `KernelFault` naming the kernel and the lowest failing block.
    """

    __slots__ = ("binary", "block_dim", "ranges", "left", "entries", "pool", "running",
                 "cancelled")

    def __init__(self, core: "StreamCore", binary, block_dim: int, args: tuple, engine,
                 on_done=None):
        super().__init__(core, None, "kernel", binary.name, 0, engine, args)
        self.binary = binary
        self.block_dim = block_dim
        self.on_done = on_done
        self.ranges: list = []
        self.left = 0
        self.entries = None
        self.pool = None
        self.running = {}        # run token -> thread ident of each range running now
        self.cancelled = None    # the AclError that stopped it (op timeout, device reset)

    def cancel(self, err: AclError) -> None:
        """Stop this kernel with `err` as its error: ranges not started are dropped, running ones
        are interrupted or abandoned (`rt.launch.CorePool.cancel`); the stream moves on."""
        if self.cancelled is not None:
            return
        pool = self.pool
        if pool is not None:
            pool.cancel(self, err)
        else:                                   # not dispatched yet: dispatch completes it
            self.cancelled = err
            self.error = err

    def fault_site(self) -> str | None:
        exc = self.error
        if isinstance(exc, KernelFault):
            return f"block_idx={exc.block_idx}/{self.block_dim}"
        return None

    def fault_detail(self) -> str:
        exc = self.error
        return exc.detail if isinstance(exc, KernelFault) else super().fault_detail()


def _assistable(task) -> bool:
    """Whether a synchronising thread may run `task`'s waiting ranges itself: only code that a
    device reset can interrupt (a binary with `interruptible = False`, compiled code, would keep
    the waiting thread for as long as it runs)."""
    return isinstance(task, KernelTask) and bool(task.entries) and task.pool.assist_enabled \
        and task.cancelled is None and getattr(task.binary, "interruptible", True)


class StreamHook:
    """An observer of the streams; subclass it, override what you need and `add_hook` it.

    `submitted` runs before a task is queued (raising refuses the task); `recorded` / `waited`
    when an event is recorded on / waited for by a stream; `host_waited(obj)` after the host
    waited for a stream core or an event (`obj.clock` is its mem-check clock); `released` when a
    stream is destroyed or collected; `device_reset` when a device is reset.
    """

    def submitted(self, core: "StreamCore", task: Task, accesses) -> None:
        """`accesses`: None or [(device address, is_write)] the task will touch."""

    def recorded(self, core: "StreamCore", event) -> None:
        pass

    def waited(self, core: "StreamCore", event) -> None:
        pass

    def host_waited(self, obj) -> None:
        pass

    def released(self, core: "StreamCore") -> None:
        pass

    def device_reset(self, device_id: int) -> None:
        pass


#: The registered stream hooks, in registration order.
HOOKS: list = []


def add_hook(hook: StreamHook) -> StreamHook:
    """Register `hook` (once); returns it."""
    if hook not in HOOKS:
        HOOKS.append(hook)
    return hook


def submit(core: "StreamCore", task: Task, accesses=None) -> Task:
    """Queue `task` on `core` after the hooks have seen it (they may refuse it by raising)."""
    for h in HOOKS:
        h.submitted(core, task, accesses)
    return core.submit(task)


class CopyEngine:
    """One DMA engine per device: a thread running copy tasks in arrival order (engine="copy")."""

    def __init__(self, device_id: int):
        self.device_id = device_id
        self.q = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=f"rt-copy-engine-{device_id}",
                                       daemon=True)
        self.thread.start()

    def put(self, task: Task) -> None:
        self.q.put(task)

    def _loop(self):
        q = self.q
        while True:
            task = q.get()
            task.start_ns = perf_counter_ns()
            try:
                task.fn()
            except BaseException as exc:          # noqa: BLE001
                task.error = exc
            task.core.complete(task)
            del task


_engines: dict = {}
_engines_lock = threading.Lock()


def copy_engine(device_id: int) -> CopyEngine:
    """Device `device_id`'s copy engine, started on first use."""
    eng = _engines.get(device_id)
    if eng is None:
        with _engines_lock:
            eng = _engines.get(device_id)
            if eng is None:
                eng = _engines[device_id] = CopyEngine(device_id)
    return eng


#: device id -> {stream core: seq of its latest queued host function or callback}. Host code may
#: read any device memory, so a free waits for the host tasks queued before it (`queued_host_tasks`)
_host_tasks: dict = {}
_host_lock = threading.Lock()
HOST_KINDS = ("host_func", "callback")


def queued_host_tasks(device_id: int) -> list:
    """[(stream core, seq)] of the host functions and callbacks queued on `device_id`'s streams
    that have not finished."""
    with _host_lock:
        d = _host_tasks.get(device_id)
        if not d:
            return []
        for c in [c for c, seq in d.items() if c.completed >= seq]:
            del d[c]
        return list(d.items())


class StreamCore:
    """The machinery behind one `rt.Stream`; holds no reference to the Stream object.

    `clock` is hook state (mem-check's vector clock of this stream), None until a hook sets it.
    """

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
        self.clock = None
        # heap of (seq, n, fn): call fn() once task seq has finished (when_done); a completion
        # pops only what is due, so a watch costs O(log n) however many are pending
        self.watches = []
        self._watch_n = itertools.count()
        self.resets = 0             # device resets so far; reset_error: the latest one's error
        self.reset_error = None

    # -- submission -----------------------------------------------------------------------------
    def submit(self, task: Task) -> Task:
        """Queue `task` (no hooks: use `rt.sched.submit`); it starts now if the stream is idle."""
        with self.lock:
            self.submitted += 1
            task.seq = self.submitted
            if task.kind in HOST_KINDS:
                with _host_lock:
                    _host_tasks.setdefault(self.device_id, {})[self] = task.seq
            if self.active is not None:
                self.pending.append(task)
                return task
            self.active = task
        self._start(task)
        return task

    def _start(self, task):
        """Start `task` (the active one) and any inline tasks after it; never blocks."""
        while task is not None:
            if task.skipped or self.skipping and task.kind in _SKIPPABLE:
                task.skipped = True
                task = self._finish(task)
                continue
            eng = task.engine
            if eng.__class__ is not str:          # an engine object: the core pool
                task.start_ns = perf_counter_ns()
                if self.optimize:
                    eng.put(task)
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

    def complete(self, task: Task) -> None:
        """Called by whoever ran `task`: finish it and start the stream's next task. A second call
        for the same task (an event wait completed by `abort`, then reached) does nothing."""
        if task.seq <= self.completed:
            return
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
                        p.add_task(task)
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
            due = None
            if self.watches and self.watches[0][0] <= task.seq:
                due = []
                while self.watches and self.watches[0][0] <= task.seq:
                    due.append(heapq.heappop(self.watches)[2])
        task.fn = None                            # drop closures (host buffers) early
        if due:
            _call_all(due)
        return nxt

    def when_done(self, seq: int, fn) -> None:
        """Call `fn()` once task `seq` of this stream has finished (at once if it has); it runs in
        the thread that finishes the task and must not block."""
        with self.lock:
            if self.completed < seq:
                heapq.heappush(self.watches, (seq, next(self._watch_n), fn))
                return
        fn()

    def abort(self, err: AclError) -> None:
        """End the stream's work now (device reset): tasks not started are skipped (event records
        still run, so nobody waits for them forever), a running kernel is cancelled with `err`,
        a wait on an event is released. A copy or host function already running finishes.
        Threads synchronising on the stream meanwhile return with `err` (`reset_error`)."""
        with self.lock:
            self.resets += 1
            self.reset_error = err
            for t in self.pending:
                if t.engine != "inline":
                    t.skipped = True
            active = self.active
        if active is None:
            return
        if isinstance(active, KernelTask):
            active.cancel(err)
        elif active.engine == "deferred" and active.start_ns:
            active.skipped = True
            self.complete(active)

    def report_error(self, task: Task, exc: BaseException) -> None:
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
            if task.engine.__class__ is not str:
                task.engine.put(task)
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

    def close(self) -> None:
        """Let the worker thread exit once the queued work has drained (stream destroyed / GC'd)."""
        with self.lock:
            self.closing = True
            if self.active is None:
                self._stop_worker_locked()

    # -- waiting ----------------------------------------------------------------------------------
    def wait_seq(self, seq: int, timeout_ms: int = -1, deadline: int | None = None) -> bool:
        """Wait until task `seq` has finished; False on timeout (`timeout_ms`, or the absolute
        `perf_counter_ns` `deadline`).

        Assist: a thread waiting *without* a deadline runs the kernel's ranges no core has taken
        yet itself (`CorePool.assist`). A range cannot be interrupted once started (compiled code
        runs to its end), so a thread with a deadline never assists: it only waits, and returns
        at the deadline whatever the kernel does."""
        if self.completed >= seq:
            return True
        if deadline is None and timeout_ms is not None and timeout_ms >= 0:
            deadline = perf_counter_ns() + int(timeout_ms) * 1_000_000
        while True:
            t = self.active
            if deadline is None and t is not None and _assistable(t):
                t.pool.assist(t)
            with self.lock:
                if self.completed >= seq:
                    return True
                t = self.active
                if deadline is None and t is not None and _assistable(t):
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

    def take_errors(self) -> list:
        """Return and clear the failed tasks; leaves STOP_ON_FAILURE's skip state."""
        with self.lock:
            errs, self.errors = self.errors, []
            self.skipping = False
        return errs


def _call_all(fns) -> None:
    for fn in fns:
        try:
            fn()
        except Exception:                         # noqa: BLE001 - never lose a worker to it
            pass


def error_from_tasks(api: str, sid: int, failed: list, own: Task | None = None) -> AclError:
    """The AclError `api` raises for the failed tasks of stream `sid`, chained to the first one's
    error: "<api>: <kind> '<name>' on stream <sid> failed[ in <site>]: <detail>". When the first
    failed task is `own` (the task `api` itself queued and waited for, so `api` names it already),
    "<api>: [<site>: ]<detail>"."""
    task = failed[0]
    exc = task.error
    code = exc.code if isinstance(exc, AclError) else ACL_ERROR_RT_INTERNAL_ERROR
    site, detail = task.fault_site(), task.fault_detail()
    more = f" (and {len(failed) - 1} more failed task(s))" if len(failed) > 1 else ""
    if task is own:
        msg = f"{api}: {site + ': ' if site else ''}{detail}{more}"
    else:
        msg = f"{api}: {task.kind} {task.name!r} on stream {sid} failed" \
              f"{' in ' + site if site else ''}: {detail}{more}"
    err = AclError(code, msg)
    err.__cause__ = exc
    return err


_stream_ids = itertools.count(1)


def next_stream_id() -> int:
    return next(_stream_ids)
