"""Where one inner step of the FlashAttention kernel spends its CPU time, primitive by primitive.

    python -m bench.fa_steps [--repeats 200] [--detail]

The kernel's inner step (one S1 block against one S2 block, fp32, D=64, S2 block 256) replayed
as the same primitive calls with the same parameters on one emulated core, in four phases; each
phase is timed in thread CPU time (so other load on the machine does not count), median of 5
runs of `--repeats` steps. Since kernels/flash_attention.py became a MIX kernel, the vector
phases are one AIV's share of a 128 x 256 tile (64 rows of the 128-row S1 block; the float32
default's S2 block is 512 since 2026-12-07: twice the columns, the same primitives per column)
and the cube phases the AIC's products on those 64 rows with K/V chunks of 128 (the kernel's AIC
runs them on all 128 rows in chunks of 64: the same GEMM work per row). Then the floor: np.dot on
the same two products (what any CPU implementation must pay) and its share of the step.
`--detail` times the vector phase's primitive groups one by one (the same calls on the same
buffers; the ws workspace is rewritten, which the step does not read back). Keep the step in
step with kernels/flash_attention_cube.py and _vector.py when the kernel changes.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

import rt
from ascendc.lang import core
from ascendc.lang.dtypes import storage_view
from ascendc.lang.params import (BinaryRepeatParams, BrcbRepeatParams, FixpipeParamsV220,
                                 LoadData2DParams, MmadParams, Nd2NzParams)
from ascendc.lang.prims import reduce as R
from ascendc.lang.prims import vector as V
from ascendc.lang.prims.cube import fixpipe, load_data, mmad
from ascendc.lang.prims.datacopy import data_copy
from bench._timing import median
from ascendc.lang.state import MEM

M, S2B, D, KC = 64, 256, 64, 128
ONLY_VALUE = 2


@njit
def cube_qk(ctx, kg, k1, l0b, qa2, sc, ws, n):
    for _ in range(n):
        data_copy(ctx, k1, kg, Nd2NzParams(1, S2B, D, 0, D, S2B, 1, 0))
        load_data(ctx, l0b, k1, LoadData2DParams(0, (D // 8) * (S2B // 16), 1, 0, 0, False, 0))
        mmad(ctx, sc, qa2, l0b, MmadParams(M, S2B, D, False, 0, False, False, False, 0, False,
                                           False, True))
        fixpipe(ctx, ws, sc, FixpipeParamsV220(S2B, M, M, S2B, 0, 0, 1, 0, 0, False, 0, False), 0)


@njit
def vector_softmax(ctx, su, ws, wp, rmax, red, row_m, mnew, row_a, row_l, bc, n):
    fold = BinaryRepeatParams(1, 1, 1, 8, 8, S2B // 8)
    first = BinaryRepeatParams(1, 1, 1, 8, S2B // 8, S2B // 8)
    for _ in range(n):
        data_copy(ctx, su, ws, M * S2B)     # float32 S comes scaled (the cube had Q x scale)
        V.max_rep(ctx, red, su, su[64:], 64, M, first, True)
        for c in range(128, S2B, 64):
            V.max_rep(ctx, red, red, su[c:], 64, M, fold, True)
        R.whole_reduce_max(ctx, rmax, red, 64, M, 1, 1, 8, ONLY_VALUE, True)
        V.max_count(ctx, mnew, row_m, rmax, M)
        V.sub_count(ctx, row_a, row_m, mnew, M)
        V.exp_count(ctx, row_a, row_a, M)
        V.brcb(ctx, bc, mnew, M // 8, BrcbRepeatParams(1, 8))
        for c in range(0, S2B, 64):
            V.sub_rep(ctx, su[c:], su[c:], bc, 64, M,
                      BinaryRepeatParams(1, 1, 0, S2B // 8, S2B // 8, 1), True)
        V.exp_count(ctx, su, su, M * S2B)
        V.add_rep(ctx, red, su, su[64:], 64, M, first, True)
        for c in range(128, S2B, 64):
            V.add_rep(ctx, red, red, su[c:], 64, M, fold, True)
        R.whole_reduce_sum(ctx, rmax, red, 64, M, 1, 1, 8, True)
        V.mul_count(ctx, row_l, row_l, row_a, M)
        V.add_count(ctx, row_l, row_l, rmax, M)
        V.muls_count(ctx, row_m, mnew, 1.0, M)
        data_copy(ctx, wp, su, M * S2B)


# the vector phase again, one primitive group at a time (`--detail`): where the non-GEMM time goes
@njit
def v_copy_in(ctx, su, ws, red, rmax, bc, mnew, n):
    for _ in range(n):
        data_copy(ctx, su, ws, M * S2B)


@njit
def v_scale(ctx, su, ws, red, rmax, bc, mnew, n):
    for _ in range(n):
        V.muls_count(ctx, su, su, 1.0, M * S2B)


@njit
def v_row_max(ctx, su, ws, red, rmax, bc, mnew, n):
    fold = BinaryRepeatParams(1, 1, 1, 8, 8, S2B // 8)
    first = BinaryRepeatParams(1, 1, 1, 8, S2B // 8, S2B // 8)
    for _ in range(n):
        V.max_rep(ctx, red, su, su[64:], 64, M, first, True)
        for c in range(128, S2B, 64):
            V.max_rep(ctx, red, red, su[c:], 64, M, fold, True)
        R.whole_reduce_max(ctx, rmax, red, 64, M, 1, 1, 8, ONLY_VALUE, True)


@njit
def v_sub_max(ctx, su, ws, red, rmax, bc, mnew, n):
    for _ in range(n):
        V.brcb(ctx, bc, mnew, M // 8, BrcbRepeatParams(1, 8))
        for c in range(0, S2B, 64):
            V.sub_rep(ctx, su[c:], su[c:], bc, 64, M,
                      BinaryRepeatParams(1, 1, 0, S2B // 8, S2B // 8, 1), True)


@njit
def v_exp(ctx, su, ws, red, rmax, bc, mnew, n):
    for _ in range(n):
        data_copy(ctx, su, ws, M * S2B)     # fresh scores (exp of exp would underflow)
        V.exp_count(ctx, su, su, M * S2B)


@njit
def v_row_sum(ctx, su, ws, red, rmax, bc, mnew, n):
    fold = BinaryRepeatParams(1, 1, 1, 8, 8, S2B // 8)
    first = BinaryRepeatParams(1, 1, 1, 8, S2B // 8, S2B // 8)
    for _ in range(n):
        V.add_rep(ctx, red, su, su[64:], 64, M, first, True)
        for c in range(128, S2B, 64):
            V.add_rep(ctx, red, red, su[c:], 64, M, fold, True)
        R.whole_reduce_sum(ctx, rmax, red, 64, M, 1, 1, 8, True)


@njit
def v_copy_out(ctx, su, ws, red, rmax, bc, mnew, n):
    for _ in range(n):
        data_copy(ctx, ws, su, M * S2B)


DETAIL = [("S GM -> UB (data_copy)", v_copy_in),
          ("scale (muls; bfloat16 only, not in the step)", v_scale),
          ("row max (max folds, whole_reduce_max)", v_row_max),
          ("S - m (brcb, sub with block broadcast)", v_sub_max),
          ("exp (with a fresh S GM -> UB)", v_exp),
          ("row sum (add folds, whole_reduce_sum)", v_row_sum),
          ("P UB -> GM (data_copy)", v_copy_out)]


@njit
def cube_pv(ctx, wp, p1, pa2, vg, v1, l0b, oc, wo, n):
    for _ in range(n):
        for c0 in range(0, S2B, KC):
            # P -> L1 in L0A's (ZZ) order: 16-row bands, one load of all fractals
            data_copy(ctx, p1, wp[c0:], Nd2NzParams(M // 16, 16, KC, 16 * S2B, S2B, 16, 1,
                                                    16 * KC))
            load_data(ctx, pa2, p1, LoadData2DParams(0, (M // 16) * (KC // 8), 1, 0, 0, False, 0))
            data_copy(ctx, v1, vg[c0 * D:], Nd2NzParams(D // 16, KC, 16, 16, D, 1, 2, KC * 16))
            for i in range(D // 16):        # a transposed load per 16-column matrix of V
                load_data(ctx, l0b[i * 128:], v1[i * KC * 16:],
                          LoadData2DParams(0, KC // 8, 1, 0, D // 16 - 1, True, 0))
            mmad(ctx, oc, pa2, l0b, MmadParams(M, D, KC, False, 0, False, False, False, 0, False,
                                               False, c0 == 0))
        fixpipe(ctx, wo, oc, FixpipeParamsV220(D, M, M, D, 0, 0, 1, 0, 0, False, 0, False), 0)


@njit
def o_update(ctx, ou, wo, oacc, bc, row_a, n):
    for _ in range(n):
        data_copy(ctx, ou, wo, M * D)
        V.brcb(ctx, bc, row_a, M // 8, BrcbRepeatParams(1, 8))
        V.mul_rep(ctx, oacc, oacc, bc, 64, M, BinaryRepeatParams(1, 1, 0, D // 8, D // 8, 1), True)
        V.add_count(ctx, oacc, oacc, ou, M * D)


@njit
def gemm_floor(q, kt, p, v, n):
    for _ in range(n):
        np.dot(q, kt)
        np.dot(p, v)


class _Core:
    """One emulated core: local tensors carved from each level, GM arrays registered."""

    def __init__(self):
        self.ctx = core.new_ctx(rt.get_soc())
        self.used = {}

    def local(self, level, n, fill=0.0):
        mem = self.ctx[MEM]
        off = self.used.get(level, 0)
        base = int(core.state(self.ctx).level_base[level]) + off
        self.used[level] = off + (n * 4 + 511) // 512 * 512
        v = mem[base:base + n * 4].view(np.float32)
        v[:] = fill
        return v

    def gm(self, a):
        a = storage_view(np.ascontiguousarray(a, np.float32).ravel())
        core.register_gm(self.ctx, a)
        return a


def median_us(fn, args, repeats):
    """Thread CPU microseconds per step: median of 5 runs of `repeats` steps."""
    fn(*args, 1)
    return median(lambda: fn(*args, repeats), 5, warmup=0, clock=time.thread_time) / repeats * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--detail", action="store_true",
                    help="also time the vector phase's primitive groups one by one")
    a = ap.parse_args(argv)
    from ascendc.jit import single_threaded_blas
    single_threaded_blas()      # as inside a launch: one BLAS thread per emulated core
    rng = np.random.default_rng(0)
    c = _Core()
    L1, L0A, L0B, L0C, UB = core.L1, core.L0A, core.L0B, core.L0C, core.UB
    kg, vg = c.gm(rng.random(2048 * D)), c.gm(rng.random(2048 * D))
    ws, wp, wo = c.gm(rng.random(M * S2B)), c.gm(rng.random(M * S2B)), c.gm(np.zeros(M * D))
    k1, p1, v1 = c.local(L1, S2B * D), c.local(L1, M * KC), c.local(L1, KC * D)
    l0b, qa2, pa2 = c.local(L0B, S2B * D), c.local(L0A, M * D, 0.01), c.local(L0A, M * KC, 0.01)
    sc, oc = c.local(L0C, M * S2B), c.local(L0C, M * D)
    su, ou, oacc, red = (c.local(UB, n, 0.5) for n in (M * S2B, M * D, M * D, M * 64))
    rmax, row_m, mnew, row_a, row_l = (c.local(UB, M, 0.5) for _ in range(5))
    bc = c.local(UB, M * 8)
    phases = [
        ("cube: K -> L1 -> L0B, mmad S = Q K^T, fixpipe", cube_qk,
         (c.ctx, kg, k1, l0b, qa2, sc, ws)),
        ("vector: S GM -> UB, online softmax, P -> GM", vector_softmax,
         (c.ctx, su, ws, wp, rmax, red, row_m, mnew, row_a, row_l, bc)),
        ("cube: P, V -> L1 -> L0A/L0B, mmad O = P V", cube_pv,
         (c.ctx, wp, p1, pa2, vg, v1, l0b, oc, wo)),
        ("vector: O GM -> UB, rescale, accumulate", o_update, (c.ctx, ou, wo, oacc, bc, row_a)),
    ]
    print(f"FlashAttention inner step, fp32 D={D}, tile {M}x{S2B}, kv_chunk {KC} "
          f"(thread CPU time, median of 5 x {a.repeats})")
    times = [(name, median_us(fn, args, a.repeats)) for name, fn, args in phases]
    total = sum(t for _, t in times)
    for name, t in times:
        print(f"  {name:<50}{t:8.1f} us {100 * t / total:5.1f}%")
    print(f"  {'total per inner step':<50}{total:8.1f} us")
    floor = median_us(gemm_floor, (rng.random((M, D), np.float32),
                                   rng.random((D, S2B), np.float32),
                                   rng.random((M, S2B), np.float32),
                                   rng.random((S2B, D), np.float32)), a.repeats)
    print(f"  {'GEMM floor: np.dot of the same two products':<50}{floor:8.1f} us "
          f"({100 * floor / total:.0f}% of the step)")
    if a.detail:
        print("  vector phase by primitive group:")
        args = (c.ctx, su, ws, red, rmax, bc, mnew)
        for name, fn in DETAIL:
            print(f"    {name:<48}{median_us(fn, args, a.repeats):8.1f} us")


if __name__ == "__main__":
    main()
