"""kernels.add.add on 16M fp32 vs np.add (same data, same process), plus compile timings.

    python -m bench.kernels_add [--n 16777216] [--repeats 9]

Peers: np.add on one thread, and np.add split over as many plain Python threads as the emulator
has cores (each thread adds its contiguous part): the most that many cores get from this machine's
memory, so the upper bound for kernels.add, whose blocks stream the same bytes. Variants run in
interleaved rounds (noise hits all alike); times are medians.
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import rt
from bench._timing import interleaved_medians
from kernels.add import add, add_kernel
from rt.launch import default_core_count


def threaded_np_add(x, y, out, pool, k):
    """np.add over k contiguous parts on k threads (numpy's ufunc loop releases the GIL)."""
    bounds = np.linspace(0, x.size, k + 1).astype(int)
    parts = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]

    def run():
        fs = [pool.submit(np.add, x[p], y[p], out[p]) for p in parts]
        for f in fs:
            f.result()
    return run


def first_call_cache_note():
    """Whether the kernel's compiled module came from Numba's disk cache in the first call."""
    hits = misses = 0
    for b in add_kernel._cache.values():
        stats = getattr(getattr(b, "run", None), "stats", None)
        if stats is not None:
            hits += sum(stats.cache_hits.values())
            misses += sum(stats.cache_misses.values())
    if misses:
        return ("disk-cache miss: compiled; the key hashes ascendc's sources, so any edit "
                "there recompiles")
    return "disk-cache hit" if hits else "cache state unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args(argv)
    x = np.random.rand(a.n).astype(np.float32)
    y = np.random.rand(a.n).astype(np.float32)
    out = np.empty_like(x)
    t = time.perf_counter()
    add(x[:1024], y[:1024])
    first = time.perf_counter() - t
    note = first_call_cache_note()
    s = rt.Stream()
    dx, dy = rt.to_device(x), rt.to_device(y)
    cores = default_core_count()
    pool = ThreadPoolExecutor(cores)

    def ours_device():
        dz = add(dx, dy, stream=s)
        s.synchronize()
        dz.free()

    variants = {
        "np.add(out=)": lambda: np.add(x, y, out=out),
        f"np.add(out=), {cores} threads (bound)": threaded_np_add(x, y, out, pool, cores),
        "kernels.add (DeviceArray, stream)": ours_device,
        "kernels.add (numpy in/out, copies)": lambda: add(x, y),
    }
    tm = interleaved_medians(variants, a.repeats)
    pool.shutdown()
    t_np, t_bound = tm["np.add(out=)"], tm[f"np.add(out=), {cores} threads (bound)"]
    gb = 3 * x.nbytes / 1e9
    print(f"first call (compile or disk-cache load + run, 1K elements): {first:.2f} s ({note})")
    print(f"{'variant':<38}{'median ms':>10}{'GB/s':>8}{'vs np.add':>11}{'vs bound':>10}")
    for name, v in tm.items():
        print(f"{name:<38}{v * 1e3:>10.2f}{gb / v:>8.1f}{t_np / v:>10.2f}x{t_bound / v:>9.2f}x")


if __name__ == "__main__":
    main()
