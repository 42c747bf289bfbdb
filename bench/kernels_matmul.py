"""kernels.matmul.matmul vs numpy `@` on the same data in the same process.

    python -m bench.kernels_matmul [--n 2048] [--n16 1024] [--repeats 5] [--steps]

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

--steps adds where one K chunk of one float32 output tile (the default tiling: 128 x 256 tile,
base_k 128, two 128-wide mmads) spends its time, primitive by primitive: the kernel's calls with
its parameters replayed on one emulated core, thread CPU time (other load does not count),
median of 5 runs; fixpipe (once per tile) is shown per tile and per chunk at K = --n. The floor
is np.dot of the same 128 x 128 @ 128 x 256 product with one BLAS thread.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit
from threadpoolctl import ThreadpoolController

import rt
from ascendc.lang import core
from ascendc.lang.params import FixpipeParamsV220, LoadData2DParams, MmadParams, Nd2NzParams
from ascendc.lang.prims.cube import fixpipe, load_data, mmad
from ascendc.lang.prims.datacopy import data_copy
from bench._timing import interleaved_medians, median
from kernels.matmul import matmul, matmul_tiling
from ascendc.lang.state import MEM


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


# ---- --steps: one K chunk of one float32 tile, primitive by primitive -------------------------

TM, TN, TK, L0N = 128, 256, 128, 128     # the float32 default tiling (matmul_tiling)


@njit
def step_gm_to_l1(ctx, ag, bg, a1, b1, ld, n):
    for _ in range(n):
        data_copy(ctx, a1, ag, Nd2NzParams(1, TM, TK, 0, ld, TM, 1, 0))
        data_copy(ctx, b1, bg, Nd2NzParams(TN // 16, TK, 16, 16, ld, 1, 2, TK * 16))


@njit
def step_l1_to_l0a(ctx, a1, a2, n):
    for _ in range(n):
        for r in range(TM // 16):
            load_data(ctx, a2[r * 16 * TK:], a1[r * 16 * 8:],
                      LoadData2DParams(0, TK // 8, TM // 16, 0, 0, False, 0))


@njit
def step_l1_to_l0b(ctx, b1, b2, n):
    for _ in range(n):
        for j0 in range(0, TN // 16, L0N // 16):
            for j in range(L0N // 16):
                load_data(ctx, b2[j * 16 * 8:], b1[(j0 + j) * TK * 16:],
                          LoadData2DParams(0, TK // 8, 1, 0, L0N // 16 - 1, True, 0))


@njit
def step_mmad(ctx, a2, b2, c, n):
    for _ in range(n):
        for j in range(0, TN, L0N):
            mmad(ctx, c[j * TM:], a2, b2, MmadParams(TM, L0N, TK, False, 0, False, False, False,
                                                     0, False, False, True))


@njit
def step_fixpipe(ctx, cg, c, ld, n):
    for _ in range(n):
        fixpipe(ctx, cg, c, FixpipeParamsV220(TN, TM, TM, ld, 0, 0, 1, 0, 0, False, 0, False), 0)


@njit
def step_floor(a, b, n):
    for _ in range(n):
        np.dot(a, b)


def steps(n, repeats=200):
    """Print the per-primitive breakdown (module doc, --steps)."""
    from ascendc.jit import single_threaded_blas
    single_threaded_blas()      # as inside a launch: one BLAS thread per emulated core
    rng = np.random.default_rng(0)
    ctx = core.new_ctx(rt.get_soc())
    used = {}

    def local(level, count):
        off = used.get(level, 0)
        used[level] = off + (count * 4 + 511) // 512 * 512
        base = int(core.state(ctx).level_base[level]) + off
        v = ctx[MEM][base:base + count * 4].view(np.float32)
        v[:] = rng.random(count)
        return v

    def gm(count):
        g = rng.random(count).astype(np.float32)
        core.register_gm(ctx, g)
        return g
    ld = max(n, TN)
    ag, bg, cg = gm(TM * ld), gm(TK * ld), gm(TM * ld)
    a1, b1 = local(core.L1, TM * TK), local(core.L1, TK * TN)
    a2, b2, c = local(core.L0A, TM * TK), local(core.L0B, TK * L0N), local(core.L0C, TM * TN)
    chunks = max(n // TK, 1)
    phases = [("GM -> L1: Nd2Nz of the A and B chunks", step_gm_to_l1, (ctx, ag, bg, a1, b1, ld)),
              ("L1 -> L0A: load_data NZ -> ZZ", step_l1_to_l0a, (ctx, a1, a2)),
              ("L1 -> L0B: load_data transposing, 2 parts", step_l1_to_l0b, (ctx, b1, b2)),
              (f"mmad: 2 x {TM}x{L0N}x{TK}", step_mmad, (ctx, a2, b2, c)),
              (f"fixpipe L0C -> GM (per tile / {chunks} chunks)", step_fixpipe,
               (ctx, cg, c, ld))]
    us = {}
    for name, fn, args in phases:
        fn(*args, 1)
        us[name] = median(lambda: fn(*args, repeats), 5, warmup=0,
                          clock=time.thread_time) / repeats * 1e6
    fix = phases[-1][0]
    us[fix] /= chunks
    total = sum(us.values())
    print(f"\nfloat32 tile {TM}x{TN}, one K chunk of {TK} (thread CPU time, median of 5 x "
          f"{repeats})")
    for name, t in us.items():
        print(f"  {name:<50}{t:8.1f} us {100 * t / total:5.1f}%")
    print(f"  {'total per K chunk':<50}{total:8.1f} us")
    fa, fb = rng.random((TM, TK), np.float32), rng.random((TK, TN), np.float32)
    step_floor(fa, fb, 1)
    floor = median(lambda: step_floor(fa, fb, repeats), 5, warmup=0,
                   clock=time.thread_time) / repeats * 1e6
    print(f"  {'floor: np.dot of the same product, 1 BLAS thread':<50}{floor:8.1f} us "
          f"({100 * floor / total:.0f}% of the chunk)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2048, help="float32 size (M=N=K)")
    ap.add_argument("--n16", type=int, default=1024, help="float16 size (M=N=K); 0 skips it")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", action="store_true",
                    help="also print the per-primitive breakdown of one K chunk")
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
    if a.steps:
        steps(a.n)


if __name__ == "__main__":
    main()
