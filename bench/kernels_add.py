"""kernels.add.add on 16M fp32 vs np.add (same data, same process), plus compile timings.

    python -m bench.kernels_add [--n 16777216] [--repeats 9] [--c-floor]

Peers: np.add on one thread with the same contract as each of our variants (np.add(x, y) makes a
new array as add(x, y) does; np.add(x, y, out=) writes a given one, as add(x, y, out=) and the
DeviceArray launch, whose output comes from the device pool, do), and np.add split over as many
plain Python threads as the emulator has cores (each thread adds its contiguous part): the most
that many cores get from this machine's memory, so the upper bound for kernels.add, whose blocks
stream the same bytes. numpy arguments are mapped into the device's address space for the launch
(rt.DeviceArray.map_host) when the runtime supports it, else copied. Variants run in interleaved
rounds (noise hits all alike); times are medians. `--c-floor` adds the same tiled design written
in C (bench/c/add_floor.c: per 8192-element tile, x and y copied to a scratch, added, the sum
copied out; one contiguous slice per thread), built with the machine's `cc` if it has one: how
fast the kernel's own data movement can be on this machine, whatever emulates it.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import subprocess
import tempfile
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


def c_compiler() -> str | None:
    """The C compiler --c-floor builds with ($CC, else cc), or None."""
    return shutil.which(os.environ.get("CC", "cc"))


def c_floor(x, y, out, threads):
    """A callable running bench/c/add_floor.c on (x, y, out) with `threads` threads, or None
    when there is no C compiler (the source is built fresh in a temporary directory)."""
    cc = c_compiler()
    if cc is None:
        return None
    src = os.path.join(os.path.dirname(__file__), "c", "add_floor.c")
    with tempfile.TemporaryDirectory() as d:
        lib = os.path.join(d, "add_floor.so")
        r = subprocess.run([cc, "-O3", "-march=native", "-shared", "-fPIC", "-o", lib, src,
                            "-lpthread"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"--c-floor: {cc} failed: {r.stderr.strip()[:300]}")
            return None
        fn = ctypes.CDLL(lib).add_floor
    fp = ctypes.POINTER(ctypes.c_float)
    fn.argtypes = (fp, fp, fp, ctypes.c_long, ctypes.c_int)
    args = (x.ctypes.data_as(fp), y.ctypes.data_as(fp), out.ctypes.data_as(fp), x.size, threads)

    def run():
        if fn(*args) != 0:
            raise RuntimeError("add_floor: a thread or its scratch could not be made")
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


def measure(n: int, repeats: int, cores: int | None = None, clock=time.perf_counter,
            with_c_floor: bool = False) -> dict:
    """Median seconds per call of each variant (keyed by the names main prints; interleaved
    rounds, timed with `clock`) on n random float32 elements, plus "first" (the first call, 1K
    elements: compile or disk-cache load), "note" (which of the two) and "mapped" (whether numpy
    arguments were mapped, not copied)."""
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    out = np.empty_like(x)
    t = time.perf_counter()
    add(x[:1024], y[:1024])
    first = time.perf_counter() - t
    note = first_call_cache_note()
    s = rt.Stream()
    dx, dy = rt.to_device(x), rt.to_device(y)
    cores = cores or default_core_count()
    pool = ThreadPoolExecutor(cores)
    if not np.array_equal(add(x, y), x + y):
        raise AssertionError("kernels.add: wrong result")

    def ours_device():
        dz = add(dx, dy, stream=s)
        s.synchronize()
        dz.free()

    variants = {
        "np.add(x, y)": lambda: np.add(x, y),
        "np.add(x, y, out=)": lambda: np.add(x, y, out=out),
        "kernels.add (DeviceArray, stream)": ours_device,
        "kernels.add (numpy in, numpy out)": lambda: add(x, y),
        "kernels.add (numpy in, out=)": lambda: add(x, y, out=out),
        f"np.add(out=), {cores} threads (bound)": threaded_np_add(x, y, out, pool, cores),
    }
    floor = c_floor(x, y, out, cores) if with_c_floor else None
    if floor is not None:
        floor()
        if not np.array_equal(out, x + y):
            raise AssertionError("add_floor.c: wrong result")
        variants[f"C, kernels.add's tiling, {cores} threads"] = floor
    try:
        tm = interleaved_medians(variants, repeats, clock=clock)
    finally:
        pool.shutdown()
        dx.free()
        dy.free()
    return {**tm, "first": first, "note": note, "mapped": rt.DeviceArray.can_map_host(),
            "gb": 3 * x.nbytes / 1e9, "cores": cores}


#: variant -> its peer: the numpy call with the same contract (a new array, or out=)
PEERS = {"kernels.add (numpy in, numpy out)": "np.add(x, y)",
         "kernels.add (numpy in, out=)": "np.add(x, y, out=)",
         "kernels.add (DeviceArray, stream)": "np.add(x, y, out=)"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--c-floor", action="store_true",
                    help="also time bench/c/add_floor.c (the kernel's tiled design in C; needs cc)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time by the process's CPU time (all threads) instead of wall time: "
                         "the cost of a call, barely moved by other load on the machine")
    a = ap.parse_args(argv)
    m = measure(a.n, a.repeats, clock=time.process_time if a.cpu_time else time.perf_counter,
                with_c_floor=a.c_floor)
    if a.cpu_time:
        print("process CPU time per call (all threads), not wall time; GB/s per CPU-second")
    bound = next(k for k in m if k.endswith("(bound)"))
    print(f"first call (compile or disk-cache load + run, 1K elements): {m['first']:.2f} s "
          f"({m['note']}); numpy arguments "
          f"{'mapped into the device (no copies)' if m['mapped'] else 'copied in and back'}")
    print(f"{'variant':<38}{'median ms':>10}{'GB/s':>8}{'vs peer':>10}{'vs bound':>10}")
    names = [k for k in m if k.startswith(("np.", "C,"))] + \
        [k for k in m if k.startswith("kernels.")]
    for name in names:
        v = m[name]
        peer = f"{m[PEERS[name]] / v:>9.2f}x" if name in PEERS else f"{'':>10}"
        print(f"{name:<38}{v * 1e3:>10.2f}{m['gb'] / v:>8.1f}{peer}{m[bound] / v:>9.2f}x")
    print("vs peer: the numpy call with the same contract (a new array: np.add(x, y); "
          "a given out: np.add(x, y, out=))")


if __name__ == "__main__":
    main()
