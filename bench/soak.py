"""Soak: a bounded run of valid and faulting work from several threads (docs/guarantees.md).

    python -m bench.soak [--seconds 60] [--threads 4] [--fault-rate 0.3] [--interpret]
                         [--free-iters 2000]

Each thread owns a stream and loops until the deadline: malloc three buffers, queue H2D copies,
launch `kernels.add`'s kernel (a valid launch, or with probability --fault-rate one whose
`total` runs past the buffers: a GM read overflow, ACL 507042), record an event, synchronise,
copy the result back and compare it with numpy, free everything. Printed: runtime calls/s,
launches/s, faults/s, wrong results, and RSS, the device pool's counters and Numba's allocator
counters before and after (measured after a warm-up, with all buffers freed). The run fails
(exit 1) on a wrong result, an unexpected error, or pool counters that do not return to zero.

Frees under load: --threads threads each queue --free-iters rounds of (malloc, memset_async,
memcpy_async device-to-device) on their stream without synchronising, freeing each buffer while
its work is still queued (a stream-ordered, deferred free), then synchronise once; the same load
with the frees left until after the synchronise is the baseline. Printed: async ops/s of both and
their ratio (deferred frees cost O(1) amortised per task; the target is at most 1.5x).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time

import numpy as np

import rt
from kernels.add import add_kernel

N = 4096            # elements per buffer
TILE = 1024
BLOCK_DIM = 2


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def nrt_stats():
    """(allocations not freed, MemInfos not freed) of Numba's runtime (None: no counters)."""
    try:
        from numba.core.runtime import rtsys
        s = rtsys.get_allocation_stats()
        return s.alloc - s.free, s.mi_alloc - s.mi_free
    except Exception:      # counters off (numba built without them)
        return None


class Counts:
    def __init__(self):
        self.ops = self.launches = self.faults = self.wrong = 0
        self.unexpected: list[str] = []
        self.lock = threading.Lock()

    def add(self, ops=0, launches=0, faults=0, wrong=0):
        with self.lock:
            self.ops += ops
            self.launches += launches
            self.faults += faults
            self.wrong += wrong


def one_round(stream, event, rng, fault_rate, interpret, counts: Counts):
    """One malloc / copy / launch / sync / check / free round on `stream`."""
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    xd, yd, zd = rt.device_empty(N), rt.device_empty(N), rt.device_zeros(N)
    ops = 3
    try:
        xd.copy_from_host(x, stream)
        yd.copy_from_host(y, stream)
        ops += 2
        faulty = rng.random() < fault_rate
        total = 2 * N if faulty else N          # past the end: block 1 reads [N, 2N)
        per_core = -(-total // BLOCK_DIM)
        add_kernel[BLOCK_DIM, stream](xd, yd, zd, total, per_core, TILE, interpret=interpret)
        event.record(stream)
        ops += 1
        try:
            event.synchronize()
            stream.synchronize()
            ops += 2
        except rt.AclError as e:
            if faulty and e.code == 507042:
                counts.add(ops=ops, launches=1, faults=1)
                return
            counts.unexpected.append(f"{type(e).__name__}: {e}")
            return
        if faulty:
            counts.unexpected.append("a launch past the buffers' end did not fault")
            return
        out = zd.copy_to_host()
        ops += 1
        counts.add(ops=ops, launches=1, wrong=int(not np.array_equal(out, x + y)))
    finally:
        for d in (xd, yd, zd):
            d.free()
        counts.add(ops=3)


def run(seconds, threads, fault_rate, interpret, counts: Counts, seed=0):
    deadline = time.perf_counter() + seconds

    def worker(i):
        stream, event = rt.Stream(), rt.Event()
        rng = np.random.default_rng(seed + i)
        try:
            while time.perf_counter() < deadline:
                one_round(stream, event, rng, fault_rate, interpret, counts)
        except Exception as e:      # anything escaping a round is a finding
            counts.unexpected.append(f"{type(e).__name__}: {e}")
        finally:
            try:
                stream.synchronize()
                event.destroy()
                stream.destroy()
            except Exception as e:      # a failed sync at the end is a finding too
                counts.unexpected.append(f"teardown: {type(e).__name__}: {e}")

    rt.set_device(0)
    ts = [threading.Thread(target=lambda i=i: (rt.set_device(0), worker(i))) for i in
          range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


FREE_BYTES = 4096


def frees_under_load(threads: int, iters: int, free_queued: bool) -> float:
    """Seconds for `threads` x `iters` rounds of malloc + 2 async ops; the buffer is freed while
    its ops are queued (`free_queued`) or after the final synchronise."""
    start = threading.Barrier(threads + 1)

    def worker():
        rt.set_device(0)
        s = rt.Stream()
        sink = rt.malloc(FREE_BYTES)
        held = []
        start.wait()
        for i in range(iters):
            p = rt.malloc(FREE_BYTES)
            rt.memset_async(p, FREE_BYTES, i & 0xFF, FREE_BYTES, s)
            rt.memcpy_async(sink, p, FREE_BYTES, rt.MemcpyKind.DEVICE_TO_DEVICE, s)
            if free_queued:
                rt.free(p)
            else:
                held.append(p)
        s.synchronize()
        for p in held + [sink]:
            rt.free(p)
        s.destroy()
        start.wait()

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    start.wait()
    dt = time.perf_counter() - t0
    for t in ts:
        t.join()
    return dt


def _pool():
    s = rt.memory_stats(0)
    return {k: s[k] for k in ("allocated_bytes.all.current", "allocation.all.current",
                              "reserved_bytes.all.current", "active_bytes.all.current")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="measured run (default 60)")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--fault-rate", type=float, default=0.3)
    ap.add_argument("--interpret", action="store_true", help="interpret mode (default compiled)")
    ap.add_argument("--free-iters", type=int, default=2000,
                    help="rounds per thread of the frees-under-load row (default 2000; 0: skip)")
    a = ap.parse_args(argv)
    try:
        from numba.core.runtime import _nrt_python
        _nrt_python.memsys_enable_stats()
    except Exception:
        pass
    rt.init()
    rt.set_device(0)
    warm = Counts()
    run(min(5.0, a.seconds / 4), a.threads, a.fault_rate, a.interpret, warm, seed=1000)
    gc.collect()
    r0, p0, n0 = rss_bytes(), _pool(), nrt_stats()
    c = Counts()
    t0 = time.perf_counter()
    run(a.seconds, a.threads, a.fault_rate, a.interpret, c)
    dt = time.perf_counter() - t0
    rt.synchronize_device()
    gc.collect()
    r1, p1, n1 = rss_bytes(), _pool(), nrt_stats()
    mode = "interpret" if a.interpret else "compiled"
    print(f"soak: {dt:.1f} s, {a.threads} threads (one stream each), {mode} mode, "
          f"fault rate {a.fault_rate:.2f}, {rt.default_core_count()} cores")
    print(f"  runtime calls/s      {c.ops / dt:10.0f}   ({c.ops} calls)")
    print(f"  launches/s           {c.launches / dt:10.1f}   ({c.launches} launches)")
    print(f"  faults/s             {c.faults / dt:10.1f}   ({c.faults} faulting launches, all "
          f"507042)")
    print(f"  wrong results        {c.wrong:10d}")
    print(f"  unexpected errors    {len(c.unexpected):10d}")
    for u in c.unexpected[:5]:
        print(f"    {u[:200]}")
    grown = r1 - r0
    print(f"  RSS                  {r0 / 2**20:.1f} MiB -> {r1 / 2**20:.1f} MiB "
          f"({grown / 1024:+.0f} KiB, {grown / max(c.launches, 1):+.0f} B per launch)")
    for k in p0:
        print(f"  pool {k:<28} {p0[k]} -> {p1[k]}")
    if n0 is not None:
        print(f"  numba allocations    {n0[0]} -> {n1[0]}  (MemInfos {n0[1]} -> {n1[1]})")
    ok = (c.wrong == 0 and not c.unexpected and p1["allocated_bytes.all.current"] == 0 and
          p1["allocation.all.current"] == 0)
    if a.free_iters > 0:
        n_ops = a.threads * a.free_iters * 2
        frees_under_load(a.threads, min(a.free_iters, 200), True)          # warm-up
        held = frees_under_load(a.threads, a.free_iters, False)
        freed = frees_under_load(a.threads, a.free_iters, True)
        ratio = freed / held
        print(f"  frees under load     {n_ops / freed:10.0f} async ops/s with a queued free per "
              f"round vs {n_ops / held:.0f} without ({a.threads} threads x {a.free_iters} rounds:"
              f" {ratio:.2f}x the time)")
        ok = ok and _pool()["allocation.all.current"] == 0
    print("  result               " + ("OK" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
