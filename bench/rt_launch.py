"""Launch overhead and core-pool scaling of the runtime.

    python -m bench.rt_launch [--reps 3000]

Rows (medians of many repetitions):
- launch + synchronize of an empty binary, block_dim 1 and 8 (goal: block_dim 8 <= 30 us), with
  task aggregation on and off and with the synchronizing thread's assist off, next to a plain
  `queue.SimpleQueue` round trip between two Python threads measured in the same run (the floor
  for any design that hands work to another thread);
- launches queued back to back, per launch;
- a nogil binary (numpy exp over a big array) with block_dim 2 vs 1 on a 2-core pool (goal >= 1.8x),
  next to the same split over two plain threads (what the machine allows at that moment);
- a chain of 99 replayed launches of a small compiled kernel (`kernels.add`, block_dim 8, as
  ResNet-50's nodes replay theirs: `asc.record_launches`) queued then synchronized, per launch:
  wall and process CPU time, and the block ranges each launch took (one: the launch was shorter
  than a sleeping core takes to come, `CorePool.late_ns`, so the core at hand ran it all), with
  short launches kept on one core and not (`ASCEND_EMU_SOLO_SHORT=0`), alternating.
"""
from __future__ import annotations

import argparse
import importlib
import os
import queue
import threading
import time

import numpy as np

import rt
from bench._timing import interleaved_medians, median

L = importlib.import_module("rt.launch")  # `rt.launch` is the function


class Empty(rt.KernelBinary):
    name = "empty"

    def run_blocks(self, first, last, block_dim, args):
        pass


class ExpBlocks(rt.KernelBinary):
    """Each block computes exp over its share of `n` elements (numpy releases the GIL)."""
    name = "exp_nogil"

    def __init__(self, n):
        self.src = np.random.default_rng(0).standard_normal(n)
        self.dst = np.empty_like(self.src)

    def run_blocks(self, first, last, block_dim, args):
        per = -(-self.src.size // block_dim)
        for b in range(first, last):
            sl = slice(b * per, (b + 1) * per)
            np.exp(self.src[sl], out=self.dst[sl])


def median_us(fn, reps):
    return median(fn, reps, warmup=200) * 1e6


def queue_round_trip_us(reps):
    a, b = queue.SimpleQueue(), queue.SimpleQueue()

    def echo():
        while (x := a.get()) is not None:
            b.put(x)
    t = threading.Thread(target=echo, daemon=True)
    t.start()
    us = median_us(lambda: (a.put(1), b.get()), reps)
    a.put(None)
    t.join()
    return us


def replayed_chain(reps: int, n_launch: int = 99) -> list:
    """Rows: per launch of a chain of `n_launch` replayed compiled launches (queued, then one
    synchronize), wall / process CPU medians of `reps` chains, short launches on one core or not."""
    from ascendc import record_launches
    from kernels.add import add_kernel, add_tiling

    n = 8 * 8192
    t = add_tiling(n, np.float32, 8)
    x = rt.to_device(np.ones(n, np.float32))
    z = rt.device_empty((n,), np.float32)
    s = rt.Stream()
    with record_launches() as rec:
        add_kernel[t.block_dim, s](x, x, z, t.total, t.per_core, t.tile, interpret=False)
    (p,) = rec.launches
    s.synchronize()
    pool = L.core_pool()
    got = {True: ([], [], []), False: ([], [], [])}
    tasks = []
    for i in range(2 * reps + 2):
        solo = i % 2 == 0
        pool.solo_short = solo
        w0, c0 = time.perf_counter(), time.process_time()
        tasks[:] = [p(s) for _ in range(n_launch)]
        s.synchronize()
        if i >= 2:                          # the first pair: warm-up
            wall, cpu, ranges = got[solo]
            wall.append((time.perf_counter() - w0) / n_launch * 1e6)
            cpu.append((time.process_time() - c0) / n_launch * 1e6)
            ranges.append(sum(len(k.ranges) for k in tasks) / n_launch)
    pool.solo_short = True
    s.destroy()
    rows = []
    for solo in (True, False):
        wall, cpu, ranges = got[solo]
        tag = "short ones on one core" if solo else "ASCEND_EMU_SOLO_SHORT=0"
        rows.append((f"{n_launch} replayed compiled launches (add, block_dim {t.block_dim}), "
                     f"{tag}: wall per launch", float(np.median(wall)),
                     f"process CPU {float(np.median(cpu)):.1f} us, "
                     f"{float(np.mean(ranges)):.2f} ranges per launch"))
    rows.append(("  how late a rung core came (CorePool.late_ns, moving average)",
                 pool.late_ns / 1e3, ""))
    return rows


def stream(optimize: bool) -> rt.Stream:
    os.environ["ASCEND_LAUNCH_TASK_OPTIMIZE"] = "1" if optimize else "0"
    try:
        return rt.Stream()
    finally:
        os.environ.pop("ASCEND_LAUNCH_TASK_OPTIMIZE")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3000)
    p.add_argument("--exp-elements", type=int, default=1 << 22)
    args = p.parse_args(argv)
    rt.init()
    rt.set_device(0)
    pool = L.core_pool()
    empty = Empty()
    rows = []
    peer = queue_round_trip_us(args.reps)
    rows.append(("SimpleQueue round trip (peer, 2 threads)", peer, ""))
    for optimize in (True, False):
        s = stream(optimize)
        tag = "aggregation on" if optimize else "ASCEND_LAUNCH_TASK_OPTIMIZE=0"
        for bd in (1, 8):
            us = median_us(lambda: (rt.launch(empty, bd, (), s), s.synchronize()), args.reps)
            goal = (("goal <= 30 us: " + ("met" if us <= 30 else "MISSED"))
                    if bd == 8 and optimize else "")
            rows.append((f"launch+sync empty, block_dim {bd}, {tag}", us, goal))
        if optimize:
            os.environ["ASCEND_EMU_SYNC_ASSIST"] = "0"
            L.set_core_count(pool.n)
            us = median_us(lambda: (rt.launch(empty, 8, (), s), s.synchronize()), args.reps)
            rows.append(("launch+sync empty, block_dim 8, ASCEND_EMU_SYNC_ASSIST=0", us, ""))
            os.environ.pop("ASCEND_EMU_SYNC_ASSIST")
            L.set_core_count(pool.n)
        n = 1000
        t0 = time.perf_counter_ns()
        for _ in range(n):
            rt.launch(empty, 8, (), s)
        s.synchronize()
        rows.append((f"{n} queued launches block_dim 8, {tag}, per launch",
                     (time.perf_counter_ns() - t0) / n / 1e3, ""))
        s.destroy()

    L.set_core_count(2)
    s = rt.Stream()
    k = ExpBlocks(args.exp_elements)
    def two_threads():                      # the same split over two plain threads (peer)
        t = threading.Thread(target=k.run_blocks, args=(1, 2, 2, ()))
        t.start()
        k.run_blocks(0, 1, 2, ())
        t.join()
    t_np, t_thr, t1, t2 = (t * 1e6 for t in interleaved_medians(
        [lambda: np.exp(k.src, out=k.dst), two_threads,
         lambda: (rt.launch(k, 1, (), s), s.synchronize()),
         lambda: (rt.launch(k, 2, (), s), s.synchronize())], max(21, args.reps // 100), warmup=3))
    rows.append((f"numpy exp {args.exp_elements} f64, main thread (peer)", t_np, ""))
    rows.append(("same exp split over 2 plain threads (peer)", t_thr,
                 f"{t_np / t_thr:.2f}x: what this machine allows now"))
    rows.append(("nogil binary, block_dim 1, 2 cores", t1, f"{t_np / t1:.2f}x numpy"))
    speedup = t1 / t2
    rows.append(("nogil binary, block_dim 2, 2 cores", t2,
                 f"{speedup:.2f}x block_dim 1 "
                 f"(goal >= 1.8x: {'met' if speedup >= 1.8 else 'MISSED'})"))
    L.set_core_count()
    rows += replayed_chain(max(21, args.reps // 100))

    w = max(len(r[0]) for r in rows)
    print(f"rt launch benchmark  (cpu_count={os.cpu_count()}, core pool={pool.n} workers, "
          f"medians of {args.reps} reps, load average {os.getloadavg()[0]:.1f})")
    print(f"{'case':<{w}}  {'median us':>11}  note")
    print("-" * (w + 40))
    for name, us, note in rows:
        print(f"{name:<{w}}  {us:>11.1f}  {note}")
    rt.finalize()


if __name__ == "__main__":
    main()
