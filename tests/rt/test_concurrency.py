"""Many host threads, streams, copies and kernels at once: exact results, overlap by timestamps."""
import importlib
import threading
import time

import numpy as np
import pytest

import rt
from rt.memory import device_view

from rt_test_helpers import PlainBinary

L = importlib.import_module("rt.launch")


class AddScalar(PlainBinary):
    """acc[chunk] += value, on device memory (float64: exact integer sums)."""
    name = "add_scalar"

    def run_blocks(self, first, last, block_dim, args):
        acc, value = args
        v = device_view(acc.ptr, acc.nbytes).view(np.float64)
        per = -(-v.size // block_dim)
        for b in range(first, last):
            v[b * per:(b + 1) * per] += value


class Axpy(PlainBinary):
    """out = a * inp + out."""
    name = "axpy"

    def run_blocks(self, first, last, block_dim, args):
        a, inp, out = args
        x = device_view(inp.ptr, inp.nbytes).view(np.float64)
        y = device_view(out.ptr, out.nbytes).view(np.float64)
        per = -(-x.size // block_dim)
        for b in range(first, last):
            sl = slice(b * per, (b + 1) * per)
            y[sl] += a * x[sl]


def run_threads(fn, n):
    errors = []

    def wrap(i):
        try:
            fn(i)
        except BaseException as e:          # noqa: BLE001 - re-raised in the main thread
            errors.append(e)
    ths = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(60)
    if errors:
        raise errors[0]


@pytest.mark.parametrize("memcheck", ["0", "1"])
def test_eight_threads_four_streams_exact_results(monkeypatch, memcheck):
    monkeypatch.setenv("ASCEND_MEM_CHECK", memcheck)
    rt.init()
    rt.set_device(0)
    streams = [rt.Stream(priority=i) for i in range(4)]
    n, iters = 4099, 40
    results = {}

    def worker(t):
        rt.set_device(0)
        s = streams[t % 4]
        acc = rt.to_device(np.full(n, float(t)), stream=s)
        for i in range(iters):
            rt.launch(AddScalar(), 1 + (i + t) % 9, (acc, float((t + 1) * i)), s)
        out = acc.copy_to_host(stream=s)            # pageable: done when it returns
        s.synchronize()
        results[t] = out
        acc.free()

    run_threads(worker, 8)
    for t in range(8):
        expect = t + (t + 1) * sum(range(iters))
        np.testing.assert_array_equal(results[t], np.full(n, float(expect)))
    assert rt.memory_stats()["allocated_bytes.all.current"] == 0


def test_producer_consumer_pairs_across_streams_with_events(monkeypatch):
    monkeypatch.setenv("ASCEND_MEM_CHECK", "1")      # any missing ordering would raise
    rt.init()
    rt.set_device(0)
    n = 1024

    def pair(k):
        rt.set_device(0)
        prod, cons = rt.Stream(), rt.Stream()
        x = rt.to_device(np.arange(n, dtype=np.float64))
        y = rt.device_zeros(n, np.float64)
        for i in range(20):
            rt.launch(AddScalar(), 4, (x, 1.0), prod)      # x += 1
            ready = rt.Event()
            ready.record(prod)
            cons.wait_event(ready)
            rt.launch(Axpy(), 3, (2.0, x, y), cons)        # y += 2 x
            done = rt.Event()
            done.record(cons)
            prod.wait_event(done)                          # x is rewritten after y read it
        cons.synchronize()
        prod.synchronize()
        expect = sum(2.0 * (np.arange(n) + i + 1) for i in range(20))
        np.testing.assert_array_equal(y.copy_to_host(), expect)

    run_threads(pair, 4)


def test_copy_engine_overlaps_a_kernel_on_another_stream(dev0):
    nbytes = 64 << 20
    host = rt.malloc_host(nbytes)
    dev = rt.malloc(nbytes)
    copy_stream, compute = rt.Stream(), rt.Stream()
    copies = []

    class WaitForCopy(PlainBinary):
        name = "wait_for_copy"

        def run_blocks(self, first, last, block_dim, args):
            deadline = time.time() + 60
            while not (copies and copies[0].start_ns) and time.time() < deadline:
                time.sleep(0.0002)

    # the kernel first: it has started before the copy is queued, so a descheduled test cannot
    # let the copy end before it; it ends only once the copy engine has started the copy
    kernel = rt.launch(WaitForCopy(), 1, (), compute)
    copy = rt.memcpy_async(dev, host, nbytes, rt.MemcpyKind.HOST_TO_DEVICE, copy_stream)
    copies.append(copy)
    compute.synchronize()
    copy_stream.synchronize()
    assert copy.start_ns < kernel.end_ns and kernel.start_ns < copy.end_ns      # they overlapped
    rt.free(dev)
    rt.free_host(host)


def test_pinned_copy_is_async_and_pageable_copy_is_not(dev0):
    nbytes = 16 << 20
    s = rt.Stream()
    gate = threading.Event()
    s.launch_host_func(lambda: gate.wait(60))
    pinned = rt.malloc_host(nbytes)
    dev = rt.malloc(nbytes)
    t = rt.memcpy_async(dev, pinned, nbytes, rt.MemcpyKind.HOST_TO_DEVICE, s)
    assert not t.done                                # queued behind the gate: returned at once
    threading.Timer(0.02, gate.set).start()
    pageable = np.ones(nbytes, np.uint8)
    t2 = rt.memcpy_async(dev, pageable, nbytes, rt.MemcpyKind.HOST_TO_DEVICE, s)
    assert t2.done and t.done                        # pageable: complete on return (in order)
    s.synchronize()
    rt.free(dev)
    rt.free_host(pinned)


def test_ten_thousand_malloc_launch_free_cycles_leave_no_memory(dev0):
    s = rt.Stream()
    k = AddScalar()
    for i in range(10_000):
        a = rt.device_zeros(16, np.float64)
        rt.launch(k, 2, (a, 1.0), s)
        s.synchronize()
        a.free()
    st = rt.memory_stats()
    assert st["allocated_bytes.all.current"] == 0 and st["active_bytes.all.current"] == 0


def test_all_streams_share_the_core_pool(dev0):
    L.set_core_count(2).solo_short = False     # one range per core, checked below
    try:
        streams = [rt.Stream() for _ in range(6)]
        body = type("Sleepy", (PlainBinary,), {
            "name": "sleepy",
            "run_blocks": lambda self, f, last, bd, a: time.sleep(0.001 * (last - f))})()
        tasks = [rt.launch(body, 4, (), s) for s in streams for _ in range(3)]
        for s in streams:
            s.synchronize()
        cores = {r[0] for t in tasks for r in t.ranges}
        assert cores <= {0, 1} and all(len(t.ranges) == 2 for t in tasks)
    finally:
        L.set_core_count()


# -- async copies: results and error paths --------------------------------------------------------
def test_memcpy_2d_async_and_memset_async(dev0):
    s = rt.Stream()
    rows, width, dpitch, spitch = 5, 12, 16, 20
    src = np.arange(rows * spitch, dtype=np.uint8)
    dev = rt.device_zeros(rows * dpitch, np.uint8)
    rt.memset_async(dev.ptr, dev.nbytes, 7, dev.nbytes, s)
    rt.memcpy_2d_async(dev.ptr, dpitch, src, spitch, width, rows, rt.MemcpyKind.HOST_TO_DEVICE, s)
    out = dev.copy_to_host(stream=s)
    s.synchronize()
    expect = np.full((rows, dpitch), 7, np.uint8)
    expect[:, :width] = src.reshape(rows, spitch)[:, :width]
    np.testing.assert_array_equal(out.reshape(rows, dpitch), expect)


def test_async_copy_error_paths(dev0):
    from rt_test_helpers import raises
    from rt.errors import (ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID,
                           ACL_ERROR_RT_INVALID_HANDLE)
    s = rt.Stream()
    a, b = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    dev = rt.malloc(64)
    with raises(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                r"memcpy_async: kind must not be HOST_TO_HOST for an async copy, got "
                r"kind=HOST_TO_HOST"):
        rt.memcpy_async(a, b, 64, rt.MemcpyKind.HOST_TO_HOST, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "memcpy_async: stream must be an rt.Stream or None, "
                                            "got stream='s'"):
        rt.memcpy_async(dev, a, 64, rt.MemcpyKind.HOST_TO_DEVICE, "s")
    with raises(ACL_ERROR_RT_PARAM_INVALID,
                "memcpy_async: kind must match where the pointers live"):
        rt.memcpy_async(dev, a, 64, rt.MemcpyKind.DEVICE_TO_HOST, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "memcpy_async: dst range must lie inside one live "
                                            "allocation.*overruns"):
        rt.memcpy_async(dev, np.zeros(128, np.uint8), 128, rt.MemcpyKind.HOST_TO_DEVICE, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "memset_async: ptr must be device memory or host "
                                            "memory from malloc_host, got a pageable host buffer"):
        rt.memset_async(a, 64, 0, 64, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, r"memset_async: count must be in \[0, max_count\]"):
        rt.memset_async(dev, 32, 0, 64, s)
    with raises(ACL_ERROR_RT_PARAM_INVALID, "memcpy_2d_async: width must be <= dpitch"):
        rt.memcpy_2d_async(dev, 4, a, 8, 8, 2, rt.MemcpyKind.HOST_TO_DEVICE, s)
    s.destroy()
    with raises(ACL_ERROR_RT_INVALID_HANDLE, "memcpy_async: stream must not be destroyed"):
        rt.memcpy_async(dev, a, 64, rt.MemcpyKind.HOST_TO_DEVICE, s)
    rt.free(dev)


def test_async_copy_on_default_and_current_stream(dev0):
    a = np.arange(32, dtype=np.uint8)
    dev = rt.malloc(32)
    t = rt.memcpy_async(dev, a, 32, rt.MemcpyKind.DEFAULT)      # pageable: done on return
    assert t.done and t.stream_id == rt.default_stream().id and t.kind == "memcpy"
    s = rt.Stream()
    out = np.zeros(32, np.uint8)
    with s:
        t2 = rt.memcpy_async(out, dev, 32, rt.MemcpyKind.DEVICE_TO_HOST)
    assert t2.stream_id == s.id and t2.done and (out == a).all()
    rt.free(dev)
