"""A free while queued work still uses the buffer is stream-ordered: the memory
goes back to the pool only once that work has run, so it never reads the next owner's data."""
import threading

import numpy as np

import rt
from rt.kernel import KernelBinary
from rt.memory import device_view

from rt_test_helpers import raises

N = 4096


def _blocked_stream():
    """A stream whose later tasks wait (event wait) for a gate the test opens."""
    gate = threading.Event()
    blocker, s, ev = rt.Stream(), rt.Stream(), rt.Event()
    blocker.launch_host_func(gate.wait)
    ev.record(blocker)
    s.wait_event(ev)
    return s, gate


def test_free_of_a_device_array_with_a_queued_copy_waits_for_it(dev0):
    s, gate = _blocked_stream()
    a = rt.to_device(np.arange(N, dtype=np.float32))
    host = rt.malloc_host(N * 4)                     # pinned: the copy is truly queued
    rt.memcpy_async(host, a.ptr, N * 4, rt.MemcpyKind.DEVICE_TO_HOST, s)
    addr = int(a.ptr)
    a.free()
    b = rt.to_device(np.full(N, 7, np.float32))      # the next owner of the memory
    assert int(b.ptr) != addr                        # not handed out while the copy is queued
    gate.set()
    s.synchronize()
    assert np.array_equal(host.as_array(np.float32, (N,)), np.arange(N, dtype=np.float32))
    c = rt.device_empty((N,), np.float32)            # now it is back in the pool
    assert int(c.ptr) == addr
    assert rt.memory_stats()["allocation.all.current"] == 2


def test_rt_free_with_a_queued_launch_waits_for_it(dev0):
    class ReadArg(KernelBinary):
        name = "read_arg"

        def __init__(self, out):
            self.out = out

        def run_blocks(self, first, last, block_dim, args, barrier=None):
            self.out[:] = device_view(args[0], N * 4).view(np.float32)

    s, gate = _blocked_stream()
    p = rt.malloc(N * 4)
    rt.memcpy(p, np.arange(N, dtype=np.float32), N * 4, rt.MemcpyKind.HOST_TO_DEVICE)
    out = np.zeros(N, np.float32)
    rt.launch(ReadArg(out), 1, (p,), s)
    rt.free(p)
    q = rt.malloc(N * 4)
    rt.memset(q, N * 4, 0xFF, N * 4)                 # the next owner writes its data
    gate.set()
    s.synchronize()
    assert np.array_equal(out, np.arange(N, dtype=np.float32))
    with raises(207002, r"rt\.free: ptr must be a live address returned by malloc, got "
                        r"ptr=0x[0-9a-f]+"):
        rt.free(p)                                   # now truly freed: a double free
    rt.free(q)
    assert rt.memory_stats()["allocation.all.current"] == 0


def test_double_free_while_deferred_is_refused(dev0):
    s, gate = _blocked_stream()
    p = rt.malloc(256)
    rt.memset_async(p, 256, 0, 256, s)
    rt.free(p)
    with raises(207002, r"rt\.free: ptr must be a live address returned by malloc, got "
                        r"ptr=0x[0-9a-f]+: it was freed already \(double free"):
        rt.free(p)
    gate.set()
    s.synchronize()
    assert rt.memory_stats()["allocation.all.current"] == 0
