"""Copy engines overlapping compute.

    python -m bench.rt_overlap [--mib 64] [--reps 9]

Stream A copies pinned host buffers to the device (H2D, on the device's copy-engine thread) while
stream B runs a compute binary (numpy exp, which releases the GIL) on a core. Rows are medians of
`--reps` rounds, measured in turns: copies alone, compute alone, both at once (wall time from the
first enqueue until both streams are synchronized). Goal: both <= 1.15 x max(copy, compute).
Peers in the same run: numpy's own copy of the same bytes (GB/s), pageable-memory copies, and the
same copy and compute on two plain Python threads (the overlap this machine allows at that moment).
"""
from __future__ import annotations

import argparse
import importlib
import os
import threading

import numpy as np

import rt
from bench._timing import interleaved_medians, median

L = importlib.import_module("rt.launch")  # `rt.launch` is the function


class ExpBlocks(rt.KernelBinary):
    name = "exp_nogil"

    def __init__(self, n, reps):
        self.src = np.random.default_rng(0).standard_normal(n)
        self.dst = np.empty_like(self.src)
        self.reps = reps

    def run_blocks(self, first, last, block_dim, args):
        per = -(-self.src.size // block_dim)
        for b in range(first, last):
            sl = slice(b * per, (b + 1) * per)
            for _ in range(self.reps):
                np.exp(self.src[sl], out=self.dst[sl])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=int, default=64, help="bytes copied per round (MiB)")
    p.add_argument("--chunks", type=int, default=8, help="memcpy_async calls per round")
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args(argv)
    rt.init()
    rt.set_device(0)
    nbytes = args.mib << 20
    chunk = nbytes // args.chunks
    host = rt.malloc_host(nbytes)
    host.as_array()[:] = 1
    pageable = np.ones(nbytes, np.uint8)
    dev = rt.malloc(nbytes)
    copy_s, comp_s = rt.Stream(), rt.Stream()

    def copies(src=host):
        for i in range(args.chunks):
            rt.memcpy_async(dev + i * chunk, src + i * chunk if isinstance(src, int) else
                            src[i * chunk:(i + 1) * chunk], chunk, rt.MemcpyKind.HOST_TO_DEVICE,
                            copy_s)

    # size the compute to take about as long as the copies (after a warm-up of both)
    k = ExpBlocks(1 << 20, 1)

    t_copy = median(lambda: (copies(), copy_s.synchronize()), 3)
    t_exp = median(lambda: (rt.launch(k, 1, (), comp_s), comp_s.synchronize()), 3)
    k.reps = max(1, round(t_copy / t_exp))

    def copy_only():
        copies()
        copy_s.synchronize()

    def compute_only():
        rt.launch(k, 1, (), comp_s)
        comp_s.synchronize()

    def both():
        copies()
        rt.launch(k, 1, (), comp_s)
        copy_s.synchronize()
        comp_s.synchronize()

    def pageable_copy():
        copies(pageable)
        copy_s.synchronize()

    dst_np = np.empty(nbytes, np.uint8)
    src_np = host.as_array()
    numpy_copy = lambda: np.copyto(dst_np, src_np)     # noqa: E731

    def raw_both():                 # peer: the same copy and compute on two plain threads
        def copy_chunks():
            for i in range(args.chunks):
                np.copyto(dst_np[i * chunk:(i + 1) * chunk], src_np[i * chunk:(i + 1) * chunk])
        t = threading.Thread(target=copy_chunks)
        t.start()
        k.run_blocks(0, 1, 1, ())
        t.join()

    fns = [copy_only, compute_only, both, pageable_copy, numpy_copy, raw_both]
    c, m, b, pg, npc, raw = (t * 1e3 for t in interleaved_medians(fns, args.reps))   # ms
    ratio = b / max(c, m)
    gbs = lambda ms: nbytes / (ms / 1e3) / 1e9          # noqa: E731
    goal = f"goal <= 1.15: {'met' if ratio <= 1.15 else 'MISSED'}"
    rows = [(f"H2D memcpy_async pinned, {args.chunks} x {chunk >> 20} MiB (stream A)", c,
             f"{gbs(c):.1f} GB/s"),
            (f"compute binary exp x{k.reps}, block_dim 1 (stream B)", m, ""),
            ("both streams at once (wall)", b, f"{ratio:.2f} x max(copy, compute) ({goal})"),
            ("sum if serialized (copy + compute)", c + m,
             f"{(c + m) / b:.2f} x the overlapped wall"),
            ("H2D memcpy_async pageable (peer: completes before returning)", pg,
             f"{gbs(pg):.1f} GB/s"),
            ("numpy copyto same bytes, main thread (peer)", npc, f"{gbs(npc):.1f} GB/s"),
            ("numpy copy || exp on two plain threads (peer)", raw,
             f"{raw / max(npc, m):.2f} x max(copy, compute): what this machine allows now")]
    w = max(len(r[0]) for r in rows)
    print(f"rt overlap benchmark  (cpu_count={os.cpu_count()}, core pool={L.core_pool().n}, "
          f"{args.mib} MiB per round, medians of {args.reps} rounds, load average "
          f"{os.getloadavg()[0]:.1f})")
    print(f"{'case':<{w}}  {'median ms':>10}  note")
    print("-" * (w + 60))
    for name, ms, note in rows:
        print(f"{name:<{w}}  {ms:>10.2f}  {note}")
    rt.free(dev)
    rt.free_host(host)
    rt.finalize()


if __name__ == "__main__":
    main()
