"""GFLOP/s of the emulated cube's float GEMM (one mmad's compute) vs numpy's BLAS, same sizes.

    python -m bench.cube_gemm [--repeats 7] [--calls 20] [--quick]

For each size (m x n x k) and input dtype (float32, float16): the compiled `mmad` primitive
(its checks, the conversion of 2-byte inputs, the repack of L0B, the GEMM of
ascendc/lang/prims/cubegemm.py into L0C) on L0A (ZZ) / L0B (ZN) / L0C (NZ) buffers of one
emulated core, `--calls` calls per timing, and np.dot of the same product on
dense float32 with one BLAS thread. Thread CPU time (other load on the machine does not count),
median of --repeats; the ratio is numpy's time / ours (>= 1: ours is as fast). Sizes are those of
the conv matmul (128 x 128 x 128 f32 mmads, 128 x 64 for 7 x 7 images, k 72 for K = 65) and
FlashAttention's mmads (m16 128..256, n16 128..256, k 64..512), where L0A / L0B / L0C of the SoC
hold them (sizes that do not fit for a dtype are skipped).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit
from threadpoolctl import ThreadpoolController

import rt
from ascendc.lang import core
from ascendc.lang.dtypes import F16_STORAGE
from ascendc.lang.params import MmadParams
from ascendc.lang.prims.cube import mmad
from ascendc.lang.state import MEM
from bench._timing import median

SIZES = [(128, 128, 128), (128, 64, 128), (64, 128, 128), (128, 128, 72), (128, 128, 64),
         (128, 256, 64), (256, 128, 64), (128, 128, 256), (64, 256, 256), (256, 128, 128),
         (128, 256, 128), (64, 128, 512)]
QUICK = [(128, 128, 128), (128, 64, 128), (128, 128, 256)]


@njit(nogil=True)
def _run(ctx, dst, fm, filt, m, n, k, calls):
    for i in range(calls):
        mmad(ctx, dst, fm, filt, MmadParams(m, n, k, False, 0, False, False, False, 0, False,
                                            False, i == 0))


def _thread_time(fn, repeats):
    return median(fn, repeats, warmup=0, clock=time.thread_time)


def case(m, n, k, dtype, repeats, calls):
    """(our seconds per call, numpy's) for one size."""
    rng = np.random.default_rng(0)
    isz = np.dtype(dtype).itemsize
    kpad = (k + 32 // isz - 1) // (32 // isz) * (32 // isz)
    ctx = core.new_ctx(rt.get_soc())

    def local(level, count, vals):
        base = int(core.state(ctx).level_base[level])
        v = ctx[MEM][base:base + count * isz]
        v.view(vals.dtype)[:] = vals
        return v.view(np.uint16).view(F16_STORAGE) if isz == 2 else v.view(np.float32)
    fm = local(core.L0A, m * kpad, rng.standard_normal(m * kpad).astype(dtype))
    filt = local(core.L0B, kpad * n, rng.standard_normal(kpad * n).astype(dtype))
    base = int(core.state(ctx).level_base[core.L0C])
    dst = ctx[MEM][base:base + m * n * 4].view(np.float32)
    _run(ctx, dst, fm, filt, m, n, k, 1)
    ours = _thread_time(lambda: _run(ctx, dst, fm, filt, m, n, k, calls), repeats) / calls
    da = rng.standard_normal((m, k)).astype(np.float32)
    db = rng.standard_normal((k, n)).astype(np.float32)
    with ThreadpoolController().limit(limits=1, user_api="blas"):
        def blas():
            for _ in range(calls):
                np.dot(da, db)
        blas()
        theirs = _thread_time(blas, repeats) / calls
    return ours, theirs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="three sizes only")
    args = ap.parse_args(argv)
    print(f"{'dtype':8} {'m x n x k':>16} {'ours us':>9} {'GFLOP/s':>8} {'np.dot us':>10} "
          f"{'GFLOP/s':>8} {'np/ours':>8}")
    soc = rt.get_soc()
    for dtype in (np.float32, np.float16):
        isz = np.dtype(dtype).itemsize
        for m, n, k in QUICK if args.quick else SIZES:
            if m * k * isz > soc.l0a_bytes or k * n * isz > soc.l0b_bytes or \
                    m * n * 4 > soc.l0c_bytes:
                continue
            ours, theirs = case(m, n, k, dtype, args.repeats, args.calls)
            fl = 2.0 * m * n * k
            print(f"{np.dtype(dtype).name:8} {f'{m}x{n}x{k}':>16} {ours * 1e6:9.1f} "
                  f"{fl / ours / 1e9:8.1f} {theirs * 1e6:10.1f} {fl / theirs / 1e9:8.1f} "
                  f"{theirs / ours:8.2f}")


if __name__ == "__main__":
    main()
