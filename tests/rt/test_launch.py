"""rt.launch and the core pool: block ranges, waves, errors, aggregation, priority, mem-check."""
import importlib
import threading
import time

import numpy as np
import pytest

import rt
from rt.errors import (ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_AICORE_EXCEPTION,
                       ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
from rt.memory import device_view

from rt_test_helpers import PlainBinary, raises

L = importlib.import_module("rt.launch")        # `rt.launch` is the function


class Binary(PlainBinary):
    """A plain-Python binary: `body(block_idx, block_dim, args)` per block."""

    def __init__(self, name, body=None):
        self.name = name
        self.body = body

    def run_blocks(self, first, last, block_dim, args):
        for b in range(first, last):
            if self.body is not None:
                self.body(b, block_dim, args)


def axpy_body(b, block_dim, args):
    """y[chunk b] += a * x[chunk b] on device memory."""
    a, x, y, n = args
    per = -(-n // block_dim)
    lo, hi = b * per, min(n, (b + 1) * per)
    xv = device_view(x.ptr, x.nbytes).view(np.float32)
    yv = device_view(y.ptr, y.nbytes).view(np.float32)
    yv[lo:hi] += a * xv[lo:hi]


AXPY = Binary("axpy", axpy_body)


@pytest.fixture
def cores4():
    pool = L.set_core_count(4)
    pool.solo_short = False     # one range per core however short: these tests check that layout
    yield pool
    L.set_core_count()


def covered(task):
    blocks = sorted(b for _, first, last, _, _ in task.ranges for b in range(first, last))
    return blocks


@pytest.mark.parametrize("block_dim", [1, 3, 4, 8, 37])
def test_launch_runs_every_block_once_in_contiguous_ranges(dev0, cores4, block_dim):
    n = 1000
    x = rt.to_device(np.arange(n, dtype=np.float32))
    y = rt.device_zeros(n, np.float32)
    s = rt.Stream()
    task = rt.launch(AXPY, block_dim, (2.0, x, y, n), s)
    s.synchronize()
    np.testing.assert_array_equal(y.copy_to_host(), 2.0 * np.arange(n, dtype=np.float32))
    assert covered(task) == list(range(block_dim))
    assert len(task.ranges) == min(block_dim, 4)          # one hand-off per worker (waves beyond)
    sizes = sorted(last - first for _, first, last, _, _ in task.ranges)
    assert sizes[-1] - sizes[0] <= 1
    for wid, first, last, t0, t1 in task.ranges:
        assert 0 <= wid < 4 and first < last and task.start_ns <= t0 <= t1 <= task.end_ns


def test_block_dim_above_core_count_runs_in_waves(dev0, cores4):
    seen = []
    task = rt.launch(Binary("w", lambda b, bd, a: seen.append(b)), 4 * 7, ())
    rt.default_stream().synchronize()
    assert sorted(seen) == list(range(28)) and len(task.ranges) == 4


def test_ranges_of_one_core_never_overlap_and_at_most_n_run_at_once(dev0, cores4):
    streams = [rt.Stream() for _ in range(3)]
    body = lambda b, bd, a: time.sleep(0.0005)          # noqa: E731 - releases the GIL
    tasks = [rt.launch(Binary(f"k{i}", body), 5, (), streams[i % 3]) for i in range(12)]
    for s in streams:
        s.synchronize()
    ranges = [r for t in tasks for r in t.ranges]
    by_core = {}
    for wid, _, _, t0, t1 in ranges:
        by_core.setdefault(wid, []).append((t0, t1))
    for spans in by_core.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    edges = sorted([(t0, 1) for _, _, _, t0, _ in ranges] + [(t1, -1) for _, _, _, _, t1 in ranges],
                   key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, d in edges:
        running += d
        peak = max(peak, running)
    assert peak <= 4


@pytest.mark.parametrize("block_dim", [0, -1, 65536, 1 << 40])
def test_block_dim_range(dev0, block_dim):
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                rf"launch: block_dim must be in \[1, 65535\], "
                rf"got block_dim={block_dim} \(kernel k\)"):
        rt.launch(Binary("k"), block_dim, ())


@pytest.mark.parametrize("block_dim", [1.5, "8", None, True])
def test_block_dim_type(dev0, block_dim):
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"launch: block_dim must be an int, got block_dim="):
        rt.launch(Binary("k"), block_dim, ())


def test_block_dim_accepts_numpy_ints(dev0):
    rt.launch(Binary("k"), np.int64(3), ())
    rt.default_stream().synchronize()


def test_binary_protocol_is_checked(dev0):
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"launch: binary must implement rt.KernelBinary \(a str `name`, a callable "
                r"`run_blocks\(first, last, block_dim, args, barrier=None\)`, "
                r"`needs_all_resident`, "
                r"`shuffle_blocks`, `counters`, `last_counters`\), got binary=<object object at "
                r"0x[0-9a-f]+> without name, run_blocks, needs_all_resident, shuffle_blocks, "
                r"counters, last_counters"):
        rt.launch(object(), 1, ())

    class Unnamed(PlainBinary):
        name = 3
        run_blocks = None
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"got binary=<.*Unnamed object .*> without name \(a "
                                            r"str\), run_blocks \(callable\) \(error code"):
        rt.launch(Unnamed(), 1, ())


class MinimalBinary:
    """Exactly the members `rt.KernelBinary` declares, and nothing else."""

    def __init__(self, name, counters=()):
        self.name = name
        self.needs_all_resident = False
        self.shuffle_blocks = False
        self.counters = counters
        self.last_counters = {}
        self.calls = []

    def run_blocks(self, first, last, block_dim, args, barrier=None):
        self.calls.append((first, last, block_dim, args, barrier))
        self.last_counters = {c: last - first for c in self.counters}


def test_a_minimal_protocol_implementation_is_launched(dev0, cores4):
    b = MinimalBinary("minimal")
    assert isinstance(b, rt.KernelBinary) and not isinstance(object(), rt.KernelBinary)
    s = rt.Stream()
    task = rt.launch(b, 8, (1, 2), s)
    s.synchronize()
    assert sorted(c[:2] for c in b.calls) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert all(c[2:] == (8, (1, 2), None) for c in b.calls)
    assert task.done and task.error is None


def test_a_resident_binary_runs_each_block_with_the_barrier(dev0):
    b = MinimalBinary("resident")
    b.needs_all_resident = True
    b.shuffle_blocks = True
    rt.launch(b, 5, ())
    rt.default_stream().synchronize()
    assert sorted(c[:2] for c in b.calls) == [(i, i + 1) for i in range(5)]
    bars = {id(c[4]) for c in b.calls}
    assert len(bars) == 1 and b.calls[0][4].parties == 5


def test_kernel_task_fields_are_set_at_construction(dev0, cores4):
    b = MinimalBinary("fields", counters=("blocks",))
    s = rt.Stream(priority=3)
    with rt.profile() as prof:
        task = rt.launch(b, 6, [7], s)
        assert isinstance(task, rt.KernelTask) and isinstance(task, rt.Task)
        assert (task.binary, task.block_dim, task.args, task.kind, task.name) == \
            (b, 6, (7,), "kernel", "fields")
        assert task.core is s.live_core("test") and task.priority == 3
        s.synchronize()
    assert all(isinstance(r, rt.BlockRun) for r in task.ranges)
    assert sorted((r.first, r.last) for r in task.ranges) == [(0, 2), (2, 4), (4, 5), (5, 6)]
    assert all(r.start_ns <= r.end_ns and 0 <= r.core < 4 for r in task.ranges)
    (rec,) = prof.records
    assert rec.block_dim == 6 and "blocks" in rec.args


def test_pool_heap_entries_are_named_and_ordered_by_priority_then_arrival():
    Range = L._Range
    a, b, c = Range(1, 5, None, 0, 1), Range(0, 9, None, 2, 3), Range(1, 2, None, 4, 5)
    assert sorted([a, b, c], key=lambda r: r) == [b, c, a]
    assert (a.priority, a.seq, a.task, a.first, a.last) == (1, 5, None, 0, 1)


def test_failing_block_names_kernel_and_block(dev0, cores4):
    def body(b, bd, args):
        if b == 5:
            raise ZeroDivisionError("division by zero")
    s = rt.Stream()
    rt.launch(Binary("divide", body), 8, (), s)
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION,
                rf"^synchronize: kernel 'divide' on stream {s.id} failed in block_idx=4/8: "
                r"ZeroDivisionError: division by zero \(error code") as info:
        s.synchronize()
    kernel_err = info.value.__cause__
    assert isinstance(kernel_err, rt.KernelFault) and kernel_err.block_idx == 4   # range [4, 6)
    assert kernel_err.message == f"kernel 'divide' (launch on stream {s.id}) failed in " \
                                 "block_idx=4/8: ZeroDivisionError: division by zero"
    assert kernel_err.detail == "ZeroDivisionError: division by zero"
    assert isinstance(kernel_err.__cause__, ZeroDivisionError)


class BlockError(rt.KernelFault):
    def __init__(self, block_idx):
        super().__init__(ACL_ERROR_RT_AICORE_EXCEPTION, f"bad block {block_idx}", block_idx)


def test_kernel_fault_block_idx_is_used_and_lowest_wins(dev0, cores4):
    def body(b, bd, args):
        if b in (5, 14):
            raise BlockError(b)
    rt.launch(Binary("k", body), 16, ())
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION,
                r"^synchronize: kernel 'k' on stream \d+ failed in block_idx=5/16: bad block 5 "):
        rt.default_stream().synchronize()


def test_a_plain_block_idx_attribute_is_not_read(dev0, cores4):
    class Plain(Exception):
        block_idx = 7
    rt.launch(Binary("k", lambda b, bd, a: (_ for _ in ()).throw(Plain("x"))), 1, ())
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION, r"failed in block_idx=0/1: Plain: x"):
        rt.default_stream().synchronize()


def test_error_names_the_api_called_and_the_kernel_once(dev0, cores4):
    s = rt.Stream()
    task = rt.launch(Binary("k", lambda b, bd, a: 1 / 0 if b == 3 else None), 4, (), s)
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION,
                r"^kernel 'k'\[4\]: block_idx=3/4: ZeroDivisionError: division by zero \(error"):
        s.synchronize(api="kernel 'k'[4]", own=task)
    rt.launch(Binary("k", lambda b, bd, a: 1 / 0 if b == 3 else None), 4, (), s)
    other = rt.launch(Binary("fine"), 1, (), s)
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION,
                rf"^kernel 'fine'\[1\]: kernel 'k' on stream {s.id} failed in block_idx=3/4: "):
        s.synchronize(api="kernel 'fine'[1]", own=other)
    s.destroy()


def test_acl_error_in_block_keeps_its_code(dev0):
    def body(b, bd, args):
        device_view(args[0], 1 << 20, "kernel k", ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW)
    p = rt.malloc(64)
    rt.launch(Binary("k", body), 1, (p,))
    with raises(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW,
                r"^synchronize: kernel 'k' on stream \d+ failed in block_idx=0/1: kernel k: ptr "
                r"range must lie inside one live allocation"):
        rt.default_stream().synchronize()
    rt.free(p)


def test_kernel_failure_under_stop_on_failure_skips_later_kernels(dev0):
    s = rt.Stream()
    s.set_failure_mode(rt.ACL_STOP_ON_FAILURE)
    ran = []
    rt.launch(Binary("bad", lambda b, bd, a: 1 / 0), 2, (), s)
    later = rt.launch(Binary("later", lambda b, bd, a: ran.append(b)), 2, (), s)
    with raises(ACL_ERROR_RT_AICORE_EXCEPTION, "kernel 'bad' on stream"):
        s.synchronize()
    assert ran == [] and later.skipped
    rt.launch(Binary("later", lambda b, bd, a: ran.append(b)), 2, (), s)
    s.synchronize()
    assert sorted(ran) == [0, 1]


@pytest.mark.parametrize("optimize", ["1", "0"])
def test_consecutive_launches_run_in_order(dev0, cores4, monkeypatch, optimize):
    monkeypatch.setenv("ASCEND_LAUNCH_TASK_OPTIMIZE", optimize)
    n = 256
    x = rt.to_device(np.ones(n, np.float32))
    y = rt.device_zeros(n, np.float32)
    s = rt.Stream()
    assert s._core.optimize is (optimize == "1")
    tasks = [rt.launch(AXPY, 8, (1.0, x, y, n), s) for _ in range(100)]
    s.synchronize()
    np.testing.assert_array_equal(y.copy_to_host(), np.full(n, 100, np.float32))
    for a, b in zip(tasks, tasks[1:]):
        assert a.end_ns <= b.start_ns
        assert max(r[4] for r in a.ranges) <= min(r[3] for r in b.ranges)


def test_higher_priority_stream_gets_the_core_first(dev0):
    L.set_core_count(1)
    try:
        busy = threading.Event()
        blocker = rt.Stream()
        rt.launch(Binary("block", lambda b, bd, a: busy.wait(60)), 1, (), blocker)
        low, high = rt.Stream(priority=7), rt.Stream(priority=0)
        t_low = rt.launch(Binary("low"), 1, (), low)
        t_high = rt.launch(Binary("high"), 1, (), high)
        busy.set()
        for s in (blocker, low, high):
            s.synchronize()
        assert t_high.ranges[0][3] < t_low.ranges[0][3]
    finally:
        L.set_core_count()


def test_core_count_from_env(monkeypatch):
    monkeypatch.setenv("ASCEND_EMU_CORES", "3")
    assert L.set_core_count().n == 3
    monkeypatch.setenv("ASCEND_EMU_CORES", "zero")
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                r"core_pool: ASCEND_EMU_CORES must be an integer >= 1, "
                r"got ASCEND_EMU_CORES='zero'"):
        L.set_core_count()
    monkeypatch.delenv("ASCEND_EMU_CORES")
    assert L.set_core_count().n == L.default_core_count()


def test_launch_uses_current_stream(dev0):
    s = rt.Stream()
    with s:
        t = rt.launch(Binary("k"), 2, [])
    assert t.stream_id == s.id and t.args == ()
    s.synchronize()


def test_utilization_of_recent_launches(dev0):
    rt.launch(Binary("k", lambda b, bd, a: time.sleep(0.002)), 2, ())
    rt.default_stream().synchronize()
    assert 0.0 < L.utilization(0) <= 100.0
    assert L.utilization(5) == 0.0


# -- mem-check: cross-stream races and stale pointers ---------------------------------------------
@pytest.fixture
def memcheck(monkeypatch):
    monkeypatch.setenv("ASCEND_MEM_CHECK", "1")
    rt.init()
    rt.set_device(0)


def test_memcheck_two_streams_without_event_race(memcheck):
    buf = rt.device_zeros(64, np.float32)
    a, b = rt.Stream(), rt.Stream()
    rt.launch(Binary("writer"), 1, (buf,), a)
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                rf"mem-check: access to buffer {int(buf.ptr):#x} \(allocation {int(buf.ptr):#x}\) "
                rf"must be ordered after stream {a.id}'s kernel 'writer', got stream {b.id}'s "
                rf"kernel 'reader' with no event or synchronize in between"):
        rt.launch(Binary("reader"), 1, (buf,), b)
    a.synchronize()
    b.synchronize()


def test_memcheck_event_orders_streams(memcheck):
    buf = rt.device_zeros(64, np.float32)
    a, b = rt.Stream(), rt.Stream()
    rt.launch(Binary("writer"), 1, (buf,), a)
    e = rt.Event()
    e.record(a)
    b.wait_event(e)
    rt.launch(Binary("reader"), 1, (buf,), b)            # ordered: fine
    rt.launch(Binary("again"), 1, (buf,), b)
    with raises(ACL_ERROR_RT_PARAM_INVALID, rf"after stream {b.id}'s kernel 'again'"):
        rt.launch(Binary("back"), 1, (buf,), a)          # a did not wait for b
    b.synchronize()                                      # host now orders b before a's next task
    rt.launch(Binary("back"), 1, (buf,), a)
    a.synchronize()


def test_memcheck_copies_read_read_is_fine(memcheck):
    src = rt.to_device(np.arange(16, dtype=np.float32))
    d1, d2 = rt.device_zeros(16, np.float32), rt.device_zeros(16, np.float32)
    a, b = rt.Stream(), rt.Stream()
    rt.memcpy_async(d1.ptr, src.ptr, 64, rt.MemcpyKind.DEVICE_TO_DEVICE, a)
    rt.memcpy_async(d2.ptr, src.ptr, 64, rt.MemcpyKind.DEVICE_TO_DEVICE, b)   # both only read src
    with raises(ACL_ERROR_RT_PARAM_INVALID, "memcpy_D2D"):
        rt.memcpy_async(src.ptr, d1.ptr, 64, rt.MemcpyKind.DEVICE_TO_DEVICE, a)  # writes src
    rt.synchronize_device()
    np.testing.assert_array_equal(d2.copy_to_host(), np.arange(16, dtype=np.float32))


def test_memcheck_launch_with_freed_pointer(memcheck):
    p = rt.malloc(256)
    rt.free(p)
    with raises(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW,
                rf"launch: kernel k: args\[1\] range must lie inside one live allocation, got "
                rf"args\[1\]={int(p):#x}, nbytes=1: use after free"):
        rt.launch(Binary("k"), 1, (3, p))


def test_memcheck_off_skips_checks(dev0):
    buf = rt.device_zeros(64, np.float32)
    a, b = rt.Stream(), rt.Stream()
    rt.launch(Binary("w"), 1, (buf,), a)
    rt.launch(Binary("r"), 1, (buf,), b)
    rt.synchronize_device()
