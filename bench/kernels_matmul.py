"""kernels.matmul.matmul vs numpy `@` on the same data in the same process.

    python -m bench.kernels_matmul [--n 2048] [--n16 1024] [--repeats 5]

Rows: float32 n^3 against `a @ b`, and float16 n16^3 against numpy's float32 matmul of the
upcast inputs (upcast once, outside the timing; our kernel takes the float16 arrays and
accumulates in float32 as the cube does). numpy is timed twice: with its BLAS threads as they
were before the first kernel launch (the peer of the goal), and single-threaded, which is how it
runs in a process after a launch (ascendc's launcher limits every BLAS to one thread, since each
emulated core is one thread and calls BLAS itself). Ours is timed twice: on rt.DeviceArrays
(launch on a stream + synchronize, no host copies: the kernel reads A and B and writes C in
device memory) and with numpy in/out (the synchronous path, which copies A and B in and C
back). Runs of the contenders are interleaved; each figure is the median of --repeats runs. The
ratio column is numpy time / ours (>= 1 means ours is faster; the goal for float32 2048^3 is
>= 0.9).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import ThreadpoolController

import rt
from bench._timing import interleaved_medians
from kernels.matmul import matmul, matmul_tiling


def case(label, a, b, a_ref, b_ref, repeats, blas_threads):
    """Time numpy on (a_ref, b_ref) and ours on (a, b), print the table; returns the ratios
    (numpy with its default BLAS threads / ours, numpy with 1 BLAS thread / ours)."""
    s = rt.Stream()
    da, db = rt.to_device(a), rt.to_device(b)

    def ours_device():
        dc = matmul(da, db, stream=s)
        s.synchronize()
        dc.free()

    t0 = time.perf_counter()
    dc = matmul(da, db, stream=s)
    s.synchronize()
    first = time.perf_counter() - t0
    c = dc.copy_to_host()
    dc.free()
    ref = a_ref @ b_ref
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    ctl = ThreadpoolController()

    def numpy_with(threads):
        def run():
            with ctl.limit(limits=threads, user_api="blas"):
                a_ref @ b_ref
        return run

    t = interleaved_medians({"np": numpy_with(blas_threads), "np1": numpy_with(1),
                             "dev": ours_device, "host": lambda: matmul(a, b)}, repeats,
                            warmup=False)
    m, k = a.shape
    n = b.shape[1]
    gflop = 2.0 * m * n * k / 1e9
    tiling = matmul_tiling(m, n, k, a.dtype)
    rows = [(f"numpy @ ({a_ref.dtype}, {blas_threads} BLAS threads)", t["np"], t["np"]),
            (f"numpy @ ({a_ref.dtype}, 1 BLAS thread)", t["np1"], t["np"]),
            ("matmul (DeviceArray, stream)", t["dev"], t["np"]),
            ("matmul (numpy in/out, copies)", t["host"], t["np"])]
    print(f"\n{label}: M=N=K={m}, {gflop:.1f} GFLOP; tiling base_m={tiling.base_m} "
          f"base_n={tiling.base_n} base_k={tiling.base_k} l0_n={tiling.l0_n} "
          f"block_dim={tiling.block_dim}; first call (compile or cache load + run) {first:.2f} s; "
          f"max |ours - numpy| / max |numpy| = {err:.1e}")
    print(f"  {'variant':<38}{'median ms':>11}{'GFLOP/s':>9}{'vs numpy':>10}")
    for name, tm, t_np in rows:
        print(f"  {name:<38}{tm * 1e3:>11.1f}{gflop / tm:>9.1f}{t_np / tm:>9.2f}x")
    da.free()
    db.free()
    return t["np"] / t["dev"], t["np1"] / t["dev"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2048, help="float32 size (M=N=K)")
    ap.add_argument("--n16", type=int, default=1024, help="float16 size (M=N=K); 0 skips it")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    blas_threads = max([lib["num_threads"] for lib in ThreadpoolController().info()
                        if lib["user_api"] == "blas"] or [1])     # before any launch limits them
    matmul(np.ones((16, 16), np.float32), np.ones((16, 16), np.float32))   # rt set-up
    x = rng.standard_normal((a.n, a.n), np.float32)
    y = rng.standard_normal((a.n, a.n), np.float32)
    r32 = case("float32", x, y, x, y, a.repeats, blas_threads)
    summary = [(f"float32 {a.n}^3 (DeviceArray) vs numpy @", r32, 0.9)]
    if a.n16:
        x16 = rng.standard_normal((a.n16, a.n16), np.float32).astype(np.float16)
        y16 = rng.standard_normal((a.n16, a.n16), np.float32).astype(np.float16)
        r16 = case("float16 in, float32 out", x16, y16, x16.astype(np.float32),
                   y16.astype(np.float32), a.repeats, blas_threads)
        summary.append((f"float16 {a.n16}^3 (DeviceArray) vs numpy float32 @", r16, None))
    print(f"\n{'ratio (numpy time / ours)':<50}{'numpy ' + str(blas_threads) + ' thr':>13}"
          f"{'numpy 1 thr':>13}{'goal':>7}")
    for name, (r, r1), goal in summary:
        print(f"{name:<50}{r:>12.2f}x{r1:>12.2f}x{'' if goal is None else f'{goal:>6.1f}x'}")


if __name__ == "__main__":
    main()
