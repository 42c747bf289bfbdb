"""Kernel launch and the core pool (the emulated AI Cores).

A *binary* is any object that satisfies `rt.KernelBinary` (rt/kernel.py): `name`, `run_blocks(first,
last, block_dim, args)` running blocks `first <= block_idx < last`, and the flags and counters rt
reads; rt never imports the compiler. `launch` enqueues a kernel task
on a stream; when the stream reaches it, `range(block_dim)` is cut into at most one contiguous range
per core-pool worker (one hand-off per worker; `block_dim` above the core count runs in waves, as on
hardware; a launch shorter than a rung worker's wake-up, one range on the worker at hand) and the
last worker to finish completes the task. Kernels of all streams share the pool;
when it is contended, ranges of higher-priority streams (lower number) are taken first.

Fidelity: matches ACL's launch contract (async, in stream order, error at the next synchronize with
the block named). Approximated: blocks go to cores as fixed contiguous ranges, not dynamically one
by one; a thread synchronizing on a kernel may run its not-yet-started ranges as an idle core
(`CorePool.assist`); timings are CPU time, not NPU estimates. `ASCEND_EMU_CORES` cores, not the
SoC's AI Core count, run at once, except for kernels that call SyncAll (`needs_all_resident`),
which run one thread per block (rt/resident.py).
"""
from __future__ import annotations

import ctypes
import heapq
import itertools
import os
import threading
import time
from collections import deque
from contextlib import nullcontext
from time import perf_counter_ns
from typing import NamedTuple

from . import memory as _mem
from . import optimeout as _opt
from .errors import (AclError, KernelFault, KernelStop, ACL_ERROR_RT_PARAM_INVALID,
                     ACL_ERROR_RT_AICORE_EXCEPTION)
from .kernel import KernelBinary
from .launchargs import arg_accesses, check_binary, device_args
from .mixlaunch import dispatch_mix
from .resident import BlockBarrier, dispatch_resident
from .sched import BlockRun, KernelTask
from .stream import Stream, current_stream

MAX_BLOCK_DIM = 65535

class LaunchRecord(NamedTuple):
    """A finished kernel launch, for `utilization`."""
    device: int
    start_ns: int
    end_ns: int
    busy_ns: int
    n_cores: int


#: Recent kernel launches for utilization.
RECENT: deque = deque(maxlen=1024)


class _Range:
    """A waiting range of a kernel's blocks in the core pool's heap, ordered by (priority, arrival);
    `task` None is a worker's stop signal."""
    __slots__ = ("priority", "seq", "task", "first", "last")

    def __init__(self, priority, seq: int, task: KernelTask | None, first: int, last: int):
        self.priority, self.seq, self.task, self.first, self.last = priority, seq, task, first, last

    def __lt__(self, other: "_Range") -> bool:
        return (self.priority, self.seq) < (other.priority, other.seq)


_IDLE, _RUNG, _RUN, _LENT_IDLE, _LENT_RUNG, _PARKED = range(6)


_NO_LOCK = nullcontext()
_WORKER = threading.local()     # .pool: the CorePool whose worker this thread is
# the lateness a short launch is weighed against, at most: a core late by more is starved by a
# loaded machine, and giving up its share of the CPU for longer launches was measured slower
_SOLO_CAP_NS = 100_000


_Stop = KernelStop       # raised asynchronously in the threads of a cancelled kernel


_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = (ctypes.c_ulong, ctypes.c_void_p)


def _interrupt(ident: int, exc) -> None:
    """Raise `exc` (a class kept alive elsewhere) in thread `ident` at its next Python bytecode;
    None clears a pending one."""
    _set_async_exc(ident, None if exc is None else id(exc))


class _RunToken:
    """One range running now: who runs it, and whether it was cancelled while it ran."""
    __slots__ = ("ident", "wid", "worker", "killed")

    def __init__(self, ident: int, wid: int, worker: bool):
        self.ident, self.wid, self.worker, self.killed = ident, wid, worker, False


class CorePool:
    """Persistent worker threads, one per emulated core (`ASCEND_EMU_CORES`, default cpu count).

    Ranges wait in one heap ordered by (stream priority, arrival). A host thread synchronizing on a
    kernel may run that kernel's waiting ranges itself (`assist`), borrowing the identity of a core
    that is asleep or not yet awake, so a launch + synchronize needs no thread wake-up, each core's
    ranges never overlap in time, and no more than `n` ranges ever run at once
    (`ASCEND_EMU_SYNC_ASSIST=0` turns this off: only the worker threads run blocks).
    """

    def __init__(self, n_cores: int):
        if int(n_cores) < 1:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"CorePool: n_cores must be >= 1, got n_cores={n_cores}")
        self.n = int(n_cores)
        self.assist_enabled = os.environ.get("ASCEND_EMU_SYNC_ASSIST", "1") != "0"
        # a launch whose blocks take less time than a sleeping core takes to come runs as one
        # range on the core at hand (ASCEND_EMU_SOLO_SHORT=0: always one range per core)
        self.solo_short = os.environ.get("ASCEND_EMU_SOLO_SHORT", "1") != "0"
        self.late_ns = 0                        # how late a rung core starts (moving average)
        self._rang = [0] * n_cores              # when each core was last rung
        self._block_ns: dict = {}               # id(binary) -> wall ns per block, latest range
        self._lock = threading.Lock()
        self._heap = []
        self._idle = []                         # ids of sleeping, un-rung workers
        self._state = [_RUN] * self.n
        self._bells = []
        self._gen = [0] * self.n                # bumped when a worker is abandoned and replaced
        self.abandoned = 0                      # workers abandoned to a cancelled kernel
        self._barriers: dict = {}               # resident kernel task -> its BlockBarrier
        self._seq = itertools.count()
        self._stopped = False
        for wid in range(self.n):
            bell = threading.Lock()
            bell.acquire()
            self._bells.append(bell)
            self._start_worker(wid)

    def _start_worker(self, wid: int) -> None:
        threading.Thread(target=self._run, args=(wid, self._gen[wid]),
                         name=f"rt-core-{wid}" + (f".{self._gen[wid]}" if self._gen[wid] else ""),
                         daemon=True).start()

    def dispatch(self, task: KernelTask) -> None:
        """Split the kernel task's blocks into contiguous ranges and hand them to idle workers
        (a binary that `needs_all_resident` gets one thread per block instead: rt.resident)."""
        if task.cancelled is not None:             # cancelled before it started
            task.end_ns = perf_counter_ns()
            task.core.complete(task)
            return
        if _opt.OP_TIMEOUT_NS:
            _opt.watchdog().watch(task, _opt.OP_TIMEOUT_NS)
        if getattr(task.binary, "mix", None) is not None:
            # cores that synchronise with each other: groups on slots of threads (rt.mixlaunch)
            return dispatch_mix(task, self, lambda g, wid, inst: self._run_range(
                task, wid, g, g + 1, False, inst), self._register_launch)
        if task.binary.needs_all_resident:
            # one thread per block (rt.resident); its ranges are registered like the pool's, so
            # cancel() stops them, and it aborts the barrier the other blocks wait at
            bar = BlockBarrier(task.block_dim)
            with self._lock:
                self._barriers[task] = bar
            return dispatch_resident(
                task, self, lambda b: self._run_range(task, b, b, b + 1, False, bar))
        bd = task.block_dim
        k = self.n if bd > self.n else bd
        if k > 1 and self.late_ns and self.solo_short:
            per = self._block_ns.get(id(task.binary))
            if per is not None and per * bd * (k - 1) < min(self.late_ns, _SOLO_CAP_NS) * k:
                k = 1               # one core now finishes before k cores, one of them late
                self.late_ns -= self.late_ns >> 5   # forget it slowly: ring, measure again
        q, r = divmod(bd, k)
        task.left = k
        task.ranges = []
        task.pool = self
        entries = task.entries = []
        prio = task.priority
        heap, seq, state = self._heap, self._seq, self._state
        first = 0
        with self._lock:
            for i in range(k):
                last = first + q + (1 if i < r else 0)
                e = _Range(prio, next(seq), task, first, last)
                entries.append(e)
                heapq.heappush(heap, e)
                first = last
            idle = self._idle
            if k == 1 and len(heap) == 1 and getattr(_WORKER, "pool", None) is self:
                wake = ()           # the worker dispatching this takes it next: ring no one
            else:
                wake = [idle.pop() for _ in range(min(k, len(idle)))]
                now = perf_counter_ns()
                for w in wake:
                    state[w] = _RUNG
                    self._rang[w] = now
        for w in wake:
            self._bells[w].release()

    def _register_launch(self, task: KernelTask, launch) -> None:
        """Keep a MIX launch's synchronisation state, for `cancel` to abort (rt.mixlaunch)."""
        with self._lock:
            self._barriers[task] = launch

    def _run(self, wid: int, gen: int) -> None:
        heap, lock, idle, state = self._heap, self._lock, self._idle, self._state
        bell = self._bells[wid]
        pop = heapq.heappop
        _WORKER.pool = self
        while True:
            with lock:
                if self._gen[wid] != gen:       # abandoned to a cancelled kernel: replaced
                    return
                if state[wid] == _LENT_RUNG:    # a host thread is running as this core
                    state[wid] = _PARKED
                    e = None
                elif heap:
                    e = pop(heap)
                    if state[wid] == _RUNG:     # rung, now here: how late
                        self.late_ns += (perf_counter_ns() - self._rang[wid] - self.late_ns) >> 3
                    state[wid] = _RUN
                    if e.task is not None:
                        e.task.entries.remove(e)
                else:
                    e = None
                    state[wid] = _IDLE
                    idle.append(wid)
            if e is None:
                bell.acquire()
                continue
            task = e.task
            if task is None:
                return                          # shutdown
            self._run_range(task, wid, e.first, e.last, True)
            del task, e

    def assist(self, task: KernelTask) -> None:
        """Run `task`'s waiting ranges in the calling (synchronizing) thread, as an idle core.

        Not while an op execute timeout is set: a range cannot be interrupted once started, and
        a host thread stuck in a runaway kernel could not be replaced as a core worker is."""
        lock, state, heap = self._lock, self._state, self._heap
        with lock:
            if not self.assist_enabled or not task.entries or _opt.OP_TIMEOUT_NS or \
                    not getattr(task.binary, "interruptible", True) or \
                    (heap and heap[0].priority < task.priority):
                return
            if self._idle:
                wid = self._idle.pop()
                state[wid] = _LENT_IDLE
            else:
                wid = next((w for w in range(self.n) if state[w] == _RUNG), None)
                if wid is None:
                    return                      # every core is busy: wait for them
                state[wid] = _LENT_RUNG
        try:
            while True:
                with lock:
                    if not task.entries:
                        break
                    e = task.entries.pop(0)
                    heap.remove(e)
                    heapq.heapify(heap)
                self._run_range(task, wid, e.first, e.last, False)
        finally:
            with lock:
                st = state[wid]
                if st == _LENT_IDLE and not heap:
                    state[wid] = _IDLE
                    self._idle.append(wid)
                    wid = None
                elif st == _LENT_RUNG:
                    state[wid] = _RUNG          # not awake yet: it proceeds normally
                    wid = None
                else:                           # asleep (lent while idle, or parked): wake it
                    state[wid] = _RUNG
                    self._rang[wid] = perf_counter_ns()
            if wid is not None:
                self._bells[wid].release()

    def _run_range(self, task: KernelTask, wid: int, first: int, last: int,
                   worker: bool, barrier: BlockBarrier | None = None) -> None:
        """Run one range; registered in `task.running` meanwhile so `cancel` can stop it. A
        resident launch's block runs here too (one block, its launch's `barrier`)."""
        lock = self._lock
        token = _RunToken(threading.get_ident(), wid, worker)
        with lock:
            if task.cancelled is not None:      # taken from the heap just before the cancel
                task.left -= 1
                if task.left != 0:
                    return
                skipped = True
            else:
                skipped = False
                task.running[token] = token.ident
        if skipped:
            self._done(task, perf_counter_ns())
            return
        t0 = t1 = perf_counter_ns()
        try:
            try:
                if barrier is None:
                    task.binary.run_blocks(first, last, task.block_dim, task.args)
                else:
                    if barrier.begin():
                        task.binary.run_blocks(first, last, task.block_dim, task.args,
                                               barrier=barrier)
                    barrier.leave()
            except _Stop:
                pass
            except BaseException as exc:        # noqa: BLE001 - goes to the stream's error state
                with barrier.fail_lock if barrier is not None else _NO_LOCK:
                    # not after a cancel (its error stands), nor a resident block's failure
                    # caused by the first one (the barrier it waited at was aborted)
                    if task.cancelled is None and not (barrier is not None and barrier.broken
                                                       and task.error is not None):
                        block_failed(task, first, exc)
                if barrier is not None:
                    barrier.abort()
            t1 = perf_counter_ns()
        except _Stop:
            pass
        while True:         # a _Stop issued just before we deregister may fire in here: retry
            try:
                with lock:
                    task.running.pop(token, None)
                    killed = token.killed
                    if not killed:
                        task.left -= 1
                        done = task.left == 0
                if killed:
                    # clear a _Stop still pending (never delivered, or a second one from
                    # _restop after the first fired); nobody sends after deregistration
                    _interrupt(token.ident, None)
                    return                      # cancel() completed the task already
                break
            except _Stop:
                pass
        task.ranges.append(BlockRun(wid, first, last, t0, t1))
        if barrier is None:
            bns = self._block_ns
            if len(bns) > 4096:
                bns.clear()
            bns[id(task.binary)] = (t1 - t0) // (last - first)
        if done:
            self._done(task, t1)

    def _done(self, task: KernelTask, end_ns: int) -> None:
        if self._barriers:
            with self._lock:
                bar = self._barriers.pop(task, None)
            if getattr(bar, "binary_data", None) is not None:
                # a MIX launch lives on in its instances' reference cycle until the garbage
                # collector runs: what the binary kept on it (the launch's arguments, their
                # device buffers) must not
                bar.binary_data = None
        task.end_ns = end_ns
        task.core.complete(task)

    def cancel(self, task: KernelTask, err: AclError) -> bool:
        """Stop `task` with `err`: drop its waiting ranges, raise `_Stop` in the threads running
        its ranges and complete it now. Python code (interpret mode) stops at its next bytecode;
        compiled (nopython) code cannot be interrupted: its worker is abandoned (it exits when
        the code returns, if ever) and a new thread takes its core. False if it had finished."""
        with self._lock:
            if task.cancelled is not None or task.left <= 0:
                return False
            task.cancelled = err
            task.error = err
            if task.entries:
                for e in task.entries:
                    self._heap.remove(e)
                    task.left -= 1
                task.entries.clear()
                heapq.heapify(self._heap)
            bar = self._barriers.get(task)
            if bar is not None and hasattr(bar, "take_unstarted"):
                task.left -= bar.take_unstarted()   # MIX instances no thread started yet
            for token in list(task.running):
                token.killed = True
                task.left -= 1
                _interrupt(token.ident, _Stop)
                if token.worker:
                    self._gen[token.wid] += 1
                    self.abandoned += 1
                    self._state[token.wid] = _RUN
                    bell = threading.Lock()
                    bell.acquire()
                    self._bells[token.wid] = bell
                    self._start_worker(token.wid)
            done = task.left <= 0
            stopping = list(task.running)
        if bar is not None:                 # resident blocks waiting for a stopped one: release
            bar.abort()
        if stopping:
            threading.Thread(target=self._restop, args=(task, stopping), daemon=True,
                             name="rt-restop").start()
        if done:
            self._done(task, perf_counter_ns())
        return True

    def _restop(self, task: KernelTask, tokens, tries: int = 50, every_s: float = 0.1) -> None:
        """Raise `_Stop` again in threads of a cancelled task that are still running it: an
        asynchronous exception that fires inside a finalizer (a weakref callback run by the GC)
        is swallowed there, and the kernel would go on. Sent under the lock, so only while the
        range is still registered (never into the next work of that thread). Compiled code never
        sees it: after `tries` the thread is left to finish on its own."""
        for _ in range(tries):
            time.sleep(every_s)
            with self._lock:
                left = [t for t in tokens if t in task.running]
                for t in left:
                    _interrupt(t.ident, _Stop)
            if not left:
                return

    def shutdown(self) -> None:
        """Stop the workers once queued ranges are done (used when the pool is replaced)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for _ in range(self.n):
                heapq.heappush(self._heap, _Range(float("inf"), next(self._seq), None, 0, 0))
            wake, self._idle[:] = list(self._idle), []
            for w in wake:
                self._state[w] = _RUNG
        for w in wake:
            self._bells[w].release()


def block_failed(task: KernelTask, first: int, exc: BaseException) -> None:
    """Record `exc`, raised by blocks from `first` on, as the kernel's error unless a lower block's
    fault is recorded already: a `KernelFault` "kernel '<name>' (launch on stream <id>) failed in
    block_idx=<i>/<block_dim>: <detail>" chained to `exc` (the exception's own block_idx when it is
    a `KernelFault`, else `first`; its code when it is an `AclError`, else 507015)."""
    idx = exc.block_idx if isinstance(exc, KernelFault) else first
    prev = task.error
    if isinstance(prev, KernelFault) and prev.block_idx <= idx:
        return
    detail = exc.message if isinstance(exc, AclError) else f"{type(exc).__name__}: {exc}"
    code = exc.code if isinstance(exc, AclError) else ACL_ERROR_RT_AICORE_EXCEPTION
    err = KernelFault(code, f"kernel {task.name!r} (launch on stream {task.core.id}) failed in "
                            f"block_idx={idx}/{task.block_dim}: {detail}", idx, detail)
    err.__cause__ = exc
    task.error = err


class _CurrentPool:
    """The engine of kernel tasks: the core pool current when the stream starts the task."""

    def put(self, task: KernelTask) -> None:
        core_pool().dispatch(task)

    def __repr__(self) -> str:
        return "<rt.launch kernel engine: the core pool>"


KERNEL_ENGINE = _CurrentPool()

_pool = None
_pool_lock = threading.Lock()


def default_core_count() -> int:
    env = os.environ.get("ASCEND_EMU_CORES")
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"core_pool: ASCEND_EMU_CORES must be an integer >= 1, "
                           f"got ASCEND_EMU_CORES={env!r}")
        return n
    return os.cpu_count() or 1


def core_pool() -> CorePool:
    """The process-wide core pool, created on first use."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = CorePool(default_core_count())
    return _pool


def set_core_count(n: int | None = None) -> CorePool:
    """Replace the core pool with one of `n` workers (default: env / cpu count). For
    tests/benches."""
    global _pool
    with _pool_lock:
        old, _pool = _pool, CorePool(n if n is not None else default_core_count())
    if old is not None:
        old.shutdown()
    return _pool


def _kernel_done(task: KernelTask) -> None:
    if task.ranges:
        busy = sum(r.end_ns - r.start_ns for r in task.ranges)
        RECENT.append(LaunchRecord(task.core.device_id, task.start_ns, task.end_ns, busy,
                                   core_pool().n))


def utilization(device: int, window_ns: int | None = None) -> float:
    """Percent of core time busy over the span of the recent launches on `device` (0 if none)."""
    recs = [r for r in list(RECENT) if r.device == device]
    if window_ns is not None:
        cut = perf_counter_ns() - window_ns
        recs = [r for r in recs if r.end_ns >= cut]
    if not recs:
        return 0.0
    span = max(r.end_ns for r in recs) - min(r.start_ns for r in recs)
    busy = sum(r.busy_ns for r in recs)
    cores = max(r.n_cores for r in recs)
    return 100.0 * min(1.0, busy / max(1, span * cores))


def launch(binary: KernelBinary, block_dim: int, args=(), stream: Stream | None = None, *,
           reads=None, writes=None) -> KernelTask:
    """Mirrors `aclrtLaunchKernel`: enqueue `binary` with `block_dim` blocks on `stream`.

    `stream=None` uses `rt.current_stream()`. Returns the `KernelTask` as soon as it is queued,
    before any block runs; a failing block is reported by the stream's next synchronize as
    `AclError(507015, "synchronize: kernel '<name>' on stream <id> failed in
    block_idx=<i>/<block_dim>: ...")`, chained to the kernel's `KernelFault`.

    Device buffers among `args` must live on the stream's device. `reads` / `writes` (indices
    into `args`) tell mem-check which buffers the kernel only reads / writes; without them it
    asks the binary's optional `gm_writes(args)` (indices it may write, or None when unknown) and
    otherwise counts every buffer as written (conservative: two streams reading one buffer then
    need an event between them).
    """
    name = check_binary(binary)
    if type(block_dim) is not int:
        if isinstance(block_dim, bool) or not hasattr(block_dim, "__index__"):
            raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                           f"launch: block_dim must be an int, got block_dim={block_dim!r}")
        block_dim = int(block_dim)
    if not 1 <= block_dim <= MAX_BLOCK_DIM:
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"launch: block_dim must be in [1, {MAX_BLOCK_DIM}], got "
                       f"block_dim={block_dim} (kernel {name})")
    if not isinstance(args, tuple):
        args = tuple(args)
    if stream is None:
        stream = current_stream()
    elif not isinstance(stream, Stream):
        raise AclError(ACL_ERROR_RT_PARAM_INVALID,
                       f"launch: stream must be an rt.Stream or None, got stream={stream!r} "
                       f"(kernel {name})")
    core = stream.live_core("launch")
    bufs = device_args(args, name, core.device_id)
    task = KernelTask(core, binary, block_dim, args, KERNEL_ENGINE, _kernel_done)
    accesses = arg_accesses(binary, args, bufs, name, reads, writes)
    stream.submit(task, accesses=accesses)
    if bufs:
        _mem.record_use([a for _, a in bufs], core, task.seq)
    return task
