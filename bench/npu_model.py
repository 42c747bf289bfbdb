"""Calibration table of the NPU pipe model (docs/npu-model.md §5): published on-board
times of Ascend kernels next to the simulated time of a kernel of the same shape here.

    python -m bench.npu_model [--quick] [--rows M1a,M3b] [--mode auto|interpret|compiled] [--all]

Every row runs a kernel written in the kernel language on the published shape through
`asc.npu_trace` (rt.npu's pipe model) and prints published µs, simulated µs and their ratio.
No constant is fitted per row, nor at all yet: rt/npu/model.py holds the sourced constants of
docs/npu-model.md §1. The role column repeats docs/npu-model.md §3: "fit" rows are the points
reserved there for choosing constants, "held out" rows are for checking; the geometric mean of
sim/published over the held-out rows is printed last.

Kernels (all here or in kernels/):
- catlass rows (M1-M4): `catlass_matmul_kernel` below, catlass's BasicMatmul structure: C cut
  into L1-tile basic blocks, block i of `get_block_num()` takes basic blocks i, i + blocks, ...
  in catlass's GemmIdentityBlockSwizzle<offset, direction> order; per basic block the high-level
  `asc.adv.Matmul` with the published L1 tile (base_m x base_n, L1 K chunk = step_k x base_k) and
  L0 K (base_k), L1/L0A/L0B double-buffered, B ColumnMajor (B^T in ND, `set_tensor_b(b, True)`).
- torch.matmul rows (M6, M7): the repo's production matmul (kernels/matmul.py, default tiling).
- FlashAttention rows (M9, M11, M12): kernels/flash_attention.py's kernel (fp16, D=128, its
  default tiling for D=128: S1 block 64, S2 block 128), one block per published core.
- M14: a relu kernel below (the vector add of README with one input and asc.relu).

Modes: "interpret" records every primitive call in Python (slow on large shapes: rows marked
heavy run only in compiled mode or with --all); "compiled" passes `interpret=False` to
`asc.npu_trace` where that exists; "auto" (the default) picks compiled when a probe launch with
`interpret=False` works, else interpret.
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import ascendc as asc
import rt
from kernels._host import ceil_div
from kernels.flash_attention import (AttentionLayout, AttentionShape, TensorStrides,
                                     attention_variant, attention_workspaces,
                                     flash_attention_buffers, flash_attention_kernel,
                                     flash_attention_tiling, half_scores)
from kernels.matmul import matmul_kernel, matmul_tiling

MODES = ("auto", "interpret", "compiled")


# ---- kernels -----------------------------------------------------------------------------------

@asc.jit
def catlass_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                          tiling: asc.adv.TCubeTiling, swizzle_offset: int, swizzle_dir: int,
                          b_col_major: int):
    """C (M x N, fp32) = A (M x K, RowMajor) @ B, B ColumnMajor (b holds B^T, N x K) or
    RowMajor (K x N), catlass BasicMatmul style: basic blocks of single_core_m x single_core_n
    taken round-robin by the blocks, in GemmIdentityBlockSwizzle<swizzle_offset, swizzle_dir>
    order."""
    rows = (tiling.m + tiling.single_core_m - 1) // tiling.single_core_m
    cols = (tiling.n + tiling.single_core_n - 1) // tiling.single_core_n
    pipe = asc.TPipe()
    a_t = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, a.dtype)
    b_t = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, b.dtype, True)
    c_t = asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, asc.float32)
    mm = asc.adv.Matmul(a_t, b_t, c_t)
    asc.adv.register_matmul(pipe, mm, tiling)
    for task in range(asc.get_block_idx(), rows * cols, asc.get_block_num()):
        if swizzle_dir == 0:            # catlass GemmIdentityBlockSwizzle::GetBlockCoord
            group = task // (swizzle_offset * cols)
            inner = task % (swizzle_offset * cols)
            span = swizzle_offset
            if group == (rows + swizzle_offset - 1) // swizzle_offset - 1:
                span = rows - swizzle_offset * group
            mi = group * swizzle_offset + inner % span
            ni = inner // span
            if group % 2 == 1:
                ni = cols - ni - 1
        else:
            group = task // (swizzle_offset * rows)
            inner = task % (swizzle_offset * rows)
            span = swizzle_offset
            if group == (cols + swizzle_offset - 1) // swizzle_offset - 1:
                span = cols - swizzle_offset * group
            mi = inner // span
            ni = group * swizzle_offset + inner % span
            if group % 2 == 1:
                mi = rows - mi - 1
        m0 = mi * tiling.single_core_m
        n0 = ni * tiling.single_core_n
        ag = asc.GlobalTensor()
        ag.set_global_buffer(a + m0 * tiling.k_a)
        bg = asc.GlobalTensor()
        if b_col_major == 1:
            bg.set_global_buffer(b + n0 * tiling.k_b)
        else:
            bg.set_global_buffer(b + n0)
        cg = asc.GlobalTensor()
        cg.set_global_buffer(c + m0 * tiling.n + n0)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg, b_col_major == 1)
        mm.set_tail(min(tiling.single_core_m, tiling.m - m0),
                    min(tiling.single_core_n, tiling.n - n0), tiling.k_a)
        mm.iterate_all(cg)
    mm.end()


@asc.jit
def relu_kernel(x: asc.GlobalAddress, y: asc.GlobalAddress, per_core: int,
                tile: asc.ConstExpr[int]):
    """y = max(x, 0), double-buffered CopyIn -> relu -> CopyOut, each block a contiguous slice."""
    base = asc.get_block_idx() * per_core
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + base, per_core)
    yg = asc.GlobalTensor()
    yg.set_global_buffer(y + base, per_core)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, 2)
    qy = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(qx, 2, tile * x.dtype.sizeof())
    pipe.init_buffer(qy, 2, tile * y.dtype.sizeof())
    for t in range(per_core // tile):
        xl = qx.alloc_tensor(x.dtype)
        asc.data_copy(xl, xg[t * tile:], tile)
        qx.enque(xl)
        xl = qx.deque(x.dtype)
        yl = qy.alloc_tensor(y.dtype)
        asc.relu(yl, xl, tile)
        qy.enque(yl)
        qx.free_tensor(xl)
        yl = qy.deque(y.dtype)
        asc.data_copy(yg[t * tile:], yl, tile)
        qy.free_tensor(yl)


# ---- mode --------------------------------------------------------------------------------------

def _trace(kernel, block_dim, *args, mode: str, soc: str, n_cores: int | None = None):
    """asc.npu_trace in `mode` ("interpret" or "compiled"): the Timeline."""
    kw = {"soc": soc, "n_cores": n_cores}
    if mode == "compiled":
        kw["interpret"] = False
    elif mode != "interpret":
        raise ValueError(f"npu_model: mode must be 'interpret' or 'compiled', got mode={mode!r}")
    return asc.npu_trace(kernel, block_dim, *args, **kw)


def compiled_available() -> bool:
    """True if `asc.npu_trace` takes `interpret=False` and a tiny launch that way works."""
    try:
        if "interpret" not in inspect.signature(asc.npu_trace).parameters:
            return False
        x = np.linspace(-1, 1, 2 * 256, dtype=np.float32)
        y = np.zeros_like(x)
        tl = _trace(relu_kernel, 2, x, y, 256, 256, mode="compiled", soc="Ascend910B2")
        return tl.us > 0 and bool(np.array_equal(y, np.maximum(x, 0)))
    except Exception:       # noqa: BLE001  (any failure means: not usable, fall back)
        return False


def resolve_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"npu_model: mode must be one of {MODES}, got mode={mode!r}")
    if mode == "auto":
        return "compiled" if compiled_available() else "interpret"
    return mode


# ---- runners (mode -> Timeline) ----------------------------------------------------------------

def catlass_matmul(m: int, n: int, k: int, l1: tuple, l0_k: int, dtype, cores: int, soc: str,
                   swizzle=(3, 0), b_col_major: bool = True) -> Callable:
    """A runner for `catlass_matmul_kernel` on M x N x K with L1 tile l1 = (m, n, k) and L0 K
    `l0_k` (L0 M, N = L1 M, N as in catlass's samples), `cores` AICs, swizzle (offset, dir), B
    ColumnMajor (N x K) or RowMajor (K x N)."""
    lm, ln, lk = l1
    if lk % l0_k:
        raise ValueError(f"catlass_matmul: the L1 K tile must be a multiple of the L0 K tile, "
                         f"got l1 k={lk} l0_k={l0_k}")
    steps = lk // l0_k
    tiling = asc.adv.TCubeTiling(
        used_core_num=cores, m=m, n=n, k_a=k, k_b=k, single_core_m=lm, single_core_n=ln,
        single_core_k=k, base_m=lm, base_n=ln, base_k=l0_k, step_m=1, step_n=1,
        step_k_a=steps, step_k_b=steps, depth_a1=2 * steps, depth_b1=2 * steps,
        db_l0a=2, db_l0b=2, db_l0c=1, iterate_order=0)
    blocks = min(ceil_div(m, lm) * ceil_div(n, ln), cores)

    def run(mode: str):
        rt.ensure_device()
        a = rt.device_zeros((m, k), dtype)
        b = rt.device_zeros((n, k) if b_col_major else (k, n), dtype)
        c = rt.device_empty((m, n), np.float32)
        try:
            return _trace(catlass_matmul_kernel, blocks, a, b, c, tiling, swizzle[0], swizzle[1],
                          int(b_col_major), mode=mode, soc=soc, n_cores=cores)
        finally:
            for x in (a, b, c):
                x.free()
    return run


def repo_matmul(m: int, n: int, k: int, dtype, soc: str = "Ascend910B2") -> Callable:
    """A runner for kernels/matmul.py's matmul_kernel with its default tiling (matmul_tiling)."""
    t = matmul_tiling(m, n, k, dtype, soc=soc)

    def run(mode: str):
        rt.ensure_device()
        a = rt.device_zeros((m, k), dtype)
        b = rt.device_zeros((k, n), dtype)
        c = rt.device_empty((m, n), np.float32)
        z = rt.device_zeros((t.zeros_len,), dtype)
        try:
            return _trace(matmul_kernel, t.block_dim, a, b, c, z, np.int64(m), np.int64(n),
                          np.int64(k), t.base_m, t.base_n, t.base_k, t.l0_n, t.depth_l1,
                          t.depth_l0a, t.depth_l0b, mode=mode, soc=soc)
        finally:
            for x in (a, b, c, z):
                x.free()
    return run


def repo_flash_attention(s0: int, s1: int, d: int, cores: int, soc: str = "Ascend910B2",
                         dtype=np.float16) -> Callable:
    """A runner for kernels/flash_attention.py's kernel: B=1, N=1, BNSD, non-causal, launched
    the way its host wrapper does (flash_attention_with_stats) but with `cores` blocks on
    `cores` cores (the published core count; the blocks stride over the S1 tiles)."""
    spec = rt.get_soc(soc)
    isz = np.dtype(dtype).itemsize
    t = flash_attention_tiling(d, dtype, s0, s1, soc=spec)
    bufs = flash_attention_buffers(t, d, isz, half_s=half_scores(dtype))
    shape = AttentionShape(1, 1, s0, s1, ceil_div(s0, t.s1_block))
    # BNSD, B=N=1: elements per row, head, batch
    layout = AttentionLayout(TensorStrides(d, s0 * d, s0 * d), TensorStrides(d, s1 * d, s1 * d))

    def run(mode: str):
        rt.ensure_device()
        q = rt.device_zeros((s0 * d,), dtype)
        k = rt.device_zeros((s1 * d,), dtype)
        v = rt.device_zeros((s1 * d,), dtype)
        out = rt.device_empty((s0 * d,), dtype)
        smax = rt.device_empty((s0,), np.float32)
        ssum = rt.device_empty((s0,), np.float32)
        gm = (q, k, v, out, smax, ssum, *attention_workspaces(bufs, cores, dtype))
        try:
            return _trace(flash_attention_kernel, cores, *gm, shape, layout, 1.0 / math.sqrt(d),
                          attention_variant(d, dtype), t, bufs, mode=mode, soc=soc,
                          n_cores=cores)
        finally:
            for x in gm:
                x.free()
    return run


def relu(total: int, blocks: int, soc: str, dtype=np.float32) -> Callable:
    """A runner for `relu_kernel`: `total` elements over `blocks` blocks, one tile each."""
    per_core = total // blocks

    def run(mode: str):
        x = np.linspace(-1, 1, total, dtype=dtype)
        y = np.zeros_like(x)
        return _trace(relu_kernel, blocks, x, y, per_core, per_core, mode=mode, soc=soc)
    return run


# ---- the rows ----------------------------------------------------------------------------------

def _tflops_us(flops: float, tflops: float) -> float:
    """Published TFLOPS -> µs for `flops` operations."""
    return flops / (tflops * 1e12) * 1e6


CATLASS = "CATLASS 11_matmul_optimization.md"
PTO_FA = "PTOISA flash_atten/README.md"
PTO_JIT = "PTOISA torch_jit/flash_atten (aarch64)"


@dataclass
class Row:
    """One published measurement and the kernel that reproduces it. `run(mode)` gives the
    simulated µs (`trace(mode)` the whole Timeline)."""
    id: str
    kernel: str            # what runs here
    shape: str
    soc: str               # the SoC simulated (its published core count in `cores`)
    cores: int
    published_us: float
    role: str              # "fit" (reserved for choosing constants, docs §3) or "held out"
    source: str
    runner: Callable = field(repr=False)
    note: str = ""
    heavy: bool = False    # > ~60 s interpreted: run in compiled mode or with --all
    quick: bool = False    # in the --quick subset (a few seconds each)

    def trace(self, mode: str):
        return self.runner(mode)

    def run(self, mode: str) -> float:
        return float(self.trace(mode).us)


def _rows() -> list:
    f16, f32 = np.float16, np.float32
    b3, b2 = "Ascend910B3", "Ascend910B2"
    mm = "catlass-style matmul (asc.adv.Matmul)"
    rows = [
        Row("M1a", mm + ", swizzle <3,0>", "1024x576x6144 fp16, L1 128x256x256, L0 k64", b3, 20,
            72.5, "held out", CATLASS + " TileShape Case 1",
            catlass_matmul(1024, 576, 6144, (128, 256, 256), 64, f16, 20, b3),
            "24 basic blocks on 20 AIC (waves); C written fp32 here, fp16 there"),
        Row("M1b", mm + ", swizzle <3,0>", "1024x576x6144 fp16, L1 256x128x256, L0 k64", b3, 20,
            48.6, "fit", CATLASS + " TileShape Case 1",
            catlass_matmul(1024, 576, 6144, (256, 128, 256), 64, f16, 20, b3),
            "20 basic blocks on 20 AIC"),
        Row("M2a", mm + ", swizzle <3,0>", "20x6144x16384 fp16, L1 128x256x256, L0 k64", b3, 20,
            181.4, "held out", CATLASS + " TileShape Case 2",
            catlass_matmul(20, 6144, 16384, (128, 256, 256), 64, f16, 20, b3),
            "B zN there, ColumnMajor ND here (no ND2NZ cost in the model either way)"),
        Row("M2b", mm + ", swizzle <3,0>", "20x6144x16384 fp16, L1 32x320x128, L0 k32", b3, 20,
            139.6, "fit", CATLASS + " TileShape Case 2",
            catlass_matmul(20, 6144, 16384, (32, 320, 128), 32, f16, 20, b3),
            "B zN there, ColumnMajor ND here; B = 201 MB streamed once"),
        Row("M2c", mm + ", swizzle <3,0>", "20x6144x16384 fp16, L1 128x256x256, B RowMajor", b3,
            20, 238.8, "held out", CATLASS + " TileShape Case 2 note",
            catlass_matmul(20, 6144, 16384, (128, 256, 256), 64, f16, 20, b3, b_col_major=False),
            "B RowMajor in both (ND2NZ GM->L1); the model has no ND2NZ efficiency term"),
        Row("M3a", "catlass-style matmul, swizzle <3,0>", "1x768x5120 fp32, L1 128x128x256, "
            "L0 k64", "Ascend910B2", 24, 36.3, "held out", CATLASS + " TileShape Case 3",
            catlass_matmul(1, 768, 5120, (128, 128, 256), 64, f32, 24, b2),
            "6 basic blocks: 6 of 24 AIC busy", quick=True),
        Row("M3b", "catlass-style matmul, swizzle <3,0>", "1x768x5120 fp32, L1 16x32x1024, "
            "L0 k256", b2, 24, 15.5, "fit", CATLASS + " TileShape Case 3",
            catlass_matmul(1, 768, 5120, (16, 32, 1024), 256, f32, 24, b2),
            "24 basic blocks, GEMV: B = 15.7 MB streamed once"),
        Row("M4a", mm + ", swizzle <3,1>", "160x6144x2048 fp16, L1 128x256x256, L0 k64", b3, 20,
            40.6, "held out", CATLASS + " Swizzle Case 1",
            catlass_matmul(160, 6144, 2048, (128, 256, 256), 64, f16, 20, b3, swizzle=(3, 1)),
            "48 basic blocks (M tiles 128 + 32); B zN there"),
        Row("M4b", mm + ", swizzle <4,1>", "160x6144x2048 fp16, L1 128x256x256, L0 k64", b3, 20,
            35.3, "held out", CATLASS + " Swizzle Case 1",
            catlass_matmul(160, 6144, 2048, (128, 256, 256), 64, f16, 20, b3, swizzle=(4, 1)),
            "better balanced assignment than <3,1>"),
        Row("M6-128", "kernels/matmul.py (default tiling)", "M=128 N=K=8192 fp16", b2, 24,
            _tflops_us(2 * 128 * 8192 * 8192, 138), "held out",
            "PTODSL flops_step4 figure (torch.matmul)", repo_matmul(128, 8192, 8192, f16),
            "A.B^T there (B^T ND), B RowMajor here; 138 TFLOPS read off a plot (+-3)"),
        Row("M6-2176", "kernels/matmul.py (default tiling)", "M=2176 N=K=8192 fp16", b2, 24,
            _tflops_us(2 * 2176 * 8192 * 8192, 283), "fit",
            "PTODSL flops_step4 figure (torch.matmul)", repo_matmul(2176, 8192, 8192, f16),
            "283 TFLOPS read off a plot (+-3); 80-200 s interpreted", heavy=True),
        Row("M7-f16-1024", "kernels/matmul.py (default tiling)", "1024^3 fp16", b2, 24,
            _tflops_us(2 * 1024 ** 3, 98.08), "held out", "TPTD #109 (torch.matmul)",
            repo_matmul(1024, 1024, 1024, f16), "operands L2-warm there (same each call)"),
        Row("M7-f16-2048", "kernels/matmul.py (default tiling)", "2048^3 fp16", b2, 24,
            _tflops_us(2 * 2048 ** 3, 251.01), "held out", "TPTD #109 (torch.matmul)",
            repo_matmul(2048, 2048, 2048, f16), ""),
        Row("M7-f32-1024", "kernels/matmul.py (default tiling)", "1024^3 fp32", b2, 24,
            _tflops_us(2 * 1024 ** 3, 46.30), "held out", "TPTD #109 (torch.matmul)",
            repo_matmul(1024, 1024, 1024, f32), "fp32 cube at 1/4 rate"),
        Row("M7-f32-2048", "kernels/matmul.py (default tiling)", "2048^3 fp32", b2, 24,
            _tflops_us(2 * 2048 ** 3, 76.92), "held out", "TPTD #109 (torch.matmul)",
            repo_matmul(2048, 2048, 2048, f32), ""),
        Row("M9-1024", "kernels/flash_attention.py", "S0=S1=1024 D=128 fp16", b2, 8, 20.960,
            "held out", PTO_FA + " 910B2 multi-core (PTO)",
            repo_flash_attention(1024, 1024, 128, 8),
            "cores = S/128 assumed (not stated)"),
        Row("M9-2048", "kernels/flash_attention.py", "S0=S1=2048 D=128 fp16", b2, 16, 32.461,
            "held out", PTO_FA + " 910B2 multi-core (PTO)",
            repo_flash_attention(2048, 2048, 128, 16), "cores = S/128 assumed (not stated)"),
        Row("M11-1c-1024", "kernels/flash_attention.py", "S0=128 S1=1024 D=128 fp16", b2, 1,
            42.08, "fit", PTO_FA + " Tables (A2/A3), 1 core",
            repo_flash_attention(128, 1024, 128, 1), "task time; 1 core", quick=True),
        Row("M11-1c-8192", "kernels/flash_attention.py", "S0=128 S1=8192 D=128 fp16", b2, 1,
            74.54, "fit", PTO_FA + " Tables (A2/A3), 1 core",
            repo_flash_attention(128, 8192, 128, 1), "task time; 1 core"),
        Row("M11-8c-8192", "kernels/flash_attention.py", "S0=1024 S1=8192 D=128 fp16", b2, 8,
            107.342, "held out", PTO_FA + " Tables (A2/A3), 8 cores",
            repo_flash_attention(1024, 8192, 128, 8), "task time; 8 cores"),
        Row("M12-128x1024", "kernels/flash_attention.py", "S0=128 S1=1024 D=128 fp16", b2, 1,
            19.200, "held out", PTO_JIT, repo_flash_attention(128, 1024, 128, 1),
            "JIT kernel, 1 core; timed from torch (launch included)"),
        Row("M12-1024x4096", "kernels/flash_attention.py", "S0=1024 S1=4096 D=128 fp16", b2, 8,
            43.127, "held out", PTO_JIT, repo_flash_attention(1024, 4096, 128, 8),
            "JIT kernel, 8 cores"),
        Row("M14-relu", "relu_kernel (here)", "16384 fp32, 8 blocks", b3, 8, 29.0, "fit",
            "ASCRS appendix F (C++ relu)", relu(16384, 8, b3),
            "published = host wall clock of launch + aclrtSynchronizeStream (median of 10)",
            quick=True),
    ]
    return rows


ROWS = _rows()


# ---- table -------------------------------------------------------------------------------------

def geomean(xs) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def measure(rows, mode: str, run_heavy: bool, log=None) -> list:
    """[(row, simulated µs or None if skipped, wall seconds)]."""
    out = []
    for r in rows:
        if r.heavy and mode == "interpret" and not run_heavy:
            out.append((r, None, 0.0))
            continue
        t0 = time.perf_counter()
        us = r.run(mode)
        dt = time.perf_counter() - t0
        if log:
            log(f"  {r.id}: {us:.2f} µs simulated ({dt:.1f} s)")
        out.append((r, us, dt))
    return out


def format_table(results, mode: str) -> str:
    head = ("id", "kernel", "shape", "SoC/cores", "published µs", "simulated µs", "sim/pub",
            "role", "source")
    lines = []
    for r, us, _ in results:
        sim = f"{us:.1f}" if us is not None else "skipped"
        ratio = f"{us / r.published_us:.2f}" if us is not None else "-"
        lines.append((r.id, r.kernel, r.shape, f"{r.soc.replace('Ascend', '')}/{r.cores}",
                      f"{r.published_us:.1f}", sim, ratio, r.role, r.source))
    widths = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(head)]
    fmt = " | ".join("{:<%d}" % w for w in widths)
    out = [fmt.format(*head), "-+-".join("-" * w for w in widths)]
    out += [fmt.format(*x) for x in lines]
    out.append("")
    held = [us / r.published_us for r, us, _ in results if us is not None and r.role != "fit"]
    fit = [us / r.published_us for r, us, _ in results if us is not None and r.role == "fit"]
    out.append(f"geometric mean of sim/published, held-out rows: {geomean(held):.2f} "
               f"({len(held)} rows); fit-set rows: {geomean(fit):.2f} ({len(fit)} rows)")
    out.append("No constant was fitted: rt/npu/model.py holds the sourced, unfitted constants of "
               "docs/npu-model.md §1; 'fit' marks the points §3 reserves for a future fit.")
    skipped = [r.id for r, us, _ in results if us is None]
    if skipped:
        out.append(f"skipped in {mode} mode (> ~60 s interpreted; --mode compiled or --all): "
                   + ", ".join(skipped))
    out.append("")
    out.append("notes:")
    for r, _, _ in results:
        if r.note:
            out.append(f"  {r.id}: {r.note}")
    return "\n".join(out)


def select(rows, ids: str | None, quick: bool) -> list:
    if ids:
        want = [s.strip() for s in ids.split(",") if s.strip()]
        known = {r.id: r for r in rows}
        bad = [w for w in want if w not in known]
        if bad:
            raise SystemExit(f"npu_model: --rows must name rows of {sorted(known)}, got {bad}")
        return [known[w] for w in want]
    if quick:
        return [r for r in rows if r.quick]
    return list(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.npu_model", description=__doc__.split(
        "\n")[0])
    p.add_argument("--quick", action="store_true", help="only the few-second rows")
    p.add_argument("--rows", help="comma-separated row ids (overrides --quick)")
    p.add_argument("--mode", default="auto", choices=MODES)
    p.add_argument("--all", action="store_true", help="run heavy rows in interpret mode too")
    args = p.parse_args(argv)
    mode = resolve_mode(args.mode)
    rows = select(ROWS, args.rows, args.quick)
    t0 = time.perf_counter()
    print(f"NPU model calibration, mode={mode}, {len(rows)} rows", flush=True)
    results = measure(rows, mode, args.all or bool(args.rows),
                      log=lambda s: print(s, file=sys.stderr, flush=True))
    print(format_table(results, mode))
    print(f"\nbench time: {time.perf_counter() - t0:.0f} s ({mode} mode)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
