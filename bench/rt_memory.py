"""Runtime memory: pool malloc+free latency and memcpy bandwidth next to numpy's copy.

    python -m bench.rt_memory [--repeats 7] [--sizes 1M,64M,256M]

Goal: pool malloc+free of 1 MiB <= 5 us median. Copies are reported in GB/s next
to ``np.copyto`` of the same bytes between two host arrays, measured in the same run
(ratio = rt/numpy).
Every number is the median of `--repeats` runs; buffers are touched once before timing.
"""
from __future__ import annotations

import argparse

import numpy as np

import rt
from bench._timing import median
from rt import memory as M

K = rt.MemcpyKind


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


def median_time(fn, inner: int, repeats: int) -> float:
    """Median seconds per call of `fn` over `repeats` batches of `inner` calls."""
    return median(fn, repeats, warmup=1, inner=inner)


def bench_pool(repeats: int) -> list[tuple]:
    rows = []
    for size in (64, 1 << 20, 64 << 20):
        def pair(size=size):
            M.free(M.malloc(size))
        rows.append((f"malloc+free {size:>10} B", median_time(pair, 20000, repeats) * 1e6))
    return rows


def bench_copies(sizes: list[int], repeats: int) -> list[tuple]:
    rows = []
    for n in sizes:
        inner = max(4, (256 << 20) // n)
        host_a = np.ones(n, np.uint8)
        host_b = np.zeros(n, np.uint8)
        pinned = rt.malloc_host(n)
        pinned.as_array()[:] = 1
        d1, d2 = rt.malloc(n), rt.malloc(n)
        M.device_view(d1, n)[:] = 1
        M.device_view(d2, n)[:] = 1
        t_np = median_time(lambda: np.copyto(host_b, host_a), inner, repeats)
        cases = [("H2D pageable", lambda: rt.memcpy(d1, host_a, n, K.HOST_TO_DEVICE)),
                 ("H2D pinned", lambda: rt.memcpy(d1, pinned, n, K.HOST_TO_DEVICE)),
                 ("D2H pageable", lambda: rt.memcpy(host_b, d1, n, K.DEVICE_TO_HOST)),
                 ("D2D", lambda: rt.memcpy(d2, d1, n, K.DEVICE_TO_DEVICE))]
        for name, fn in cases:
            t = median_time(fn, inner, repeats)
            rows.append((f"{name} {n >> 20} MiB" if n >= 1 << 20 else f"{name} {n >> 10} KiB",
                         n / t / 1e9, n / t_np / 1e9, t_np / t))
        rt.free(d1)
        rt.free(d2)
        rt.free_host(pinned)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--sizes", default="64K,1M,64M,256M")
    args = ap.parse_args(argv)
    rt.init()
    rt.set_device(0)
    pool = bench_pool(args.repeats)
    copies = bench_copies([parse_size(s) for s in args.sizes.split(",")], args.repeats)
    print(f"rt memory bench (median of {args.repeats}; SoC {rt.get_soc_name()})\n")
    print(f"{'pool':<28}{'us/pair':>10}{'goal':>8}")
    for name, us in pool:
        goal = "<= 5" if "1048576" in name else ""
        print(f"{name:<28}{us:>10.2f}{goal:>8}")
    print(f"\n{'memcpy':<28}{'rt GB/s':>10}{'numpy GB/s':>12}{'rt/numpy':>10}")
    for name, gbs, np_gbs, ratio in copies:
        print(f"{name:<28}{gbs:>10.2f}{np_gbs:>12.2f}{ratio:>10.2f}")
    rt.reset_device(0)
    rt.finalize()


if __name__ == "__main__":
    main()
