"""The FlashAttention rows of the NPU model's calibration table (bench/npu_model.py,
docs/npu-model.md §5): published on-board times of PTO's FlashAttention kernels and what the
simulated NPU gives for kernels/flash_attention.py run with the published kernels' own tiling and
core count, so that the ratio measures the model rather than a tiling difference.

The published kernels (docs/npu-model.md, sources PTOISA): the manual kernel
(`kernels/manual/common/flash_atten`: CUBE_S0 = 128 Q rows per block, CUBE_S1 = 128 keys per
mmad, TILE_S1 = 256 keys per logical tile by default, `block_rows = S0 / CUBE_S0` blocks, QK
preload 4 through an 8-slot GM FIFO), its JIT demo (`demos/torch_jit/flash_atten`: the same
constants, `jit_cores = sq / 128`) and the DSL kernel of the 4-stage recipe
(`kernels/python/flash_atten`: S0 = 128, CUBE_S1 = 128, S1_TILE = 256, 512 for S >= 16384 in the
published table, QK preload 3, `min(S0 / 128, cube cores)` blocks). Here the same tiling is
`FlashAttentionTiling(s1_block=128, s2_block=TILE_S1, kv_chunk=128)` (our S1 is PTO's S0, our S2
PTO's S1), and the public wrapper launches `min(S1 / 128, AI Cores)` groups: S0 / 128 blocks when
that fits the 24 cores of a 910B2, else 24 groups striding over the 128-row tiles, which is the
occupancy of PTO's waves (`balance=False`: the last round's tiles are not cut into parts).
What the kernel here cannot express: the QK preload depth (ours is SLOTS = 4 GM slots per
hand-off, the AIC three S tiles ahead of its P V; PTO's 3 or 4 through 8) and the fused
"load wide K once" of the manual kernel; the rows say so in their notes.

Rows run through the kernel's public API (`kernels.flash_attention.flash_attention` with
`tiling=`) inside `rt.profile(npu=True)`, so they keep working when the kernel's internals change.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

import rt
from kernels.flash_attention import FlashAttentionTiling, flash_attention
from kernels.flash_attention_tiling import SLOTS

SOC = "Ascend910B2"
PTO_FA = "PTOISA flash_atten/README.md"
PTO_JIT = "PTOISA torch_jit/flash_atten (aarch64)"
PTO_DSL = "PTOISA fa-4stage-pipeline-recipe.md"
NO_PRELOAD = f"{SLOTS} S slots here (PTO: QK preload {{}})"


def published_tiling(tile_s1: int = 256) -> FlashAttentionTiling:
    """PTO's A2/A3 FlashAttention tiling in our names: CUBE_S0 = 128 rows per block (s1_block),
    TILE_S1 keys per logical tile (s2_block), CUBE_S1 = 128 keys per mmad (kv_chunk)."""
    return FlashAttentionTiling(128, tile_s1, 128)


def cores_for(s0: int, soc: str = SOC) -> int:
    """The groups the public wrapper launches for S0 query rows of one head at 128 rows per
    group: PTO's block count S0 / 128, capped at the SoC's AI Cores (PTO runs the rest in waves,
    our groups stride over them)."""
    return max(1, min(s0 // 128, rt.get_soc(soc).ai_core_num))


def fa_runner(s0: int, s1: int, tile_s1: int = 256, d: int = 128, soc: str = SOC,
              dtype=np.float16) -> Callable:
    """A runner (mode -> Timeline) of kernels.flash_attention.flash_attention on B=N=1, BNSD,
    S0 query rows, S1 keys, head dim d, non-causal, with `published_tiling(tile_s1)`."""
    t = published_tiling(tile_s1)

    def run(mode: str):
        if mode not in ("interpret", "compiled"):
            raise ValueError(f"npu_model: mode must be 'interpret' or 'compiled', got "
                             f"mode={mode!r}")
        rt.ensure_device()
        q = rt.device_zeros((1, 1, s0, d), dtype)
        k = rt.device_zeros((1, 1, s1, d), dtype)
        v = rt.device_zeros((1, 1, s1, d), dtype)
        try:
            with rt.profile(npu=True) as prof:
                out = flash_attention(q, k, v, tiling=t, interpret=mode == "interpret", soc=soc,
                                      balance=False)
                rt.current_stream().synchronize()
            out.free()
        finally:
            for x in (q, k, v):
                x.free()
        runs = prof.npu_runs()          # any kernel name: the wrapper's internals may change
        if len(runs) != 1:
            raise RuntimeError(f"npu_model: the FlashAttention forward must be one recorded "
                               f"launch, got {len(runs)}: "
                               f"{[r.record.name for r in runs]}")
        return runs[0].timeline
    return run


# (S0, S1, cores, published µs) per table; S0 = query rows, S1 = keys (PTO's names)
M9 = [(1024, 20.960), (2048, 32.461), (4096, 88.902), (8192, 292.626)]       # PTO, S0 = S1
M10 = [(1024, 43.82), (2048, 56.92), (4096, 113.83), (8192, 283.12),         # DSL, S0 = S1
       (16384, 953.47)]     # measured at S1_TILE = 512 (the recipe says so); S >= 32768 not run
M11 = {1: (42.08, 51.44, 43.80, 74.54), 2: (33.201, 44.101, 43.521, 75.162),
       4: (41.721, 55.441, 46.621, 86.322), 8: (63.72, 85.882, 64.461, 107.342)}
M11_S1 = (1024, 2048, 4096, 8192)
M12_S0 = (128, 256, 512, 1024, 2048)
M12_S1 = (1024, 2048, 4096, 8192)
M12 = ((19.200, 23.420, 38.317, 68.778), (18.604, 23.939, 39.838, 71.212),
       (18.603, 24.787, 41.475, 74.903), (19.439, 26.221, 43.127, 76.855),
       (23.424, 36.055, 59.690, 107.780))
LONG_S = 4096      # M9 / M10 rows with S >= this run only with --long (minutes simulated)


def fa_row_specs() -> list:
    """dicts of the Row fields (bench.npu_model.Row) for every FlashAttention row. Role: the
    1-core rows of M11 are the fit set (docs/npu-model.md §3), every other row is held out."""
    specs = []
    kern = "kernels/flash_attention.py, PTO tiling"

    def add(rid, s0, s1, pub, role, source, note, tile_s1=256, quick=False, long=False):
        cores = cores_for(s0)
        specs.append(dict(
            id=rid, kernel=kern, shape=f"S0={s0} S1={s1} D=128 fp16, tile (128,{tile_s1},128)",
            soc=SOC, cores=cores, published_us=pub, role=role, source=source,
            runner=fa_runner(s0, s1, tile_s1), note=note, heavy=s0 * s1 > 4096 * 2048,
            quick=quick, long=long))

    for s, pub in M9:
        note = NO_PRELOAD.format(4) + f"; {s // 128} blocks published (cores not stated)"
        if s // 128 > 24:
            note += ", 24 groups striding here (PTO: waves)"
        add(f"M9-{s}", s, s, pub, "held out", PTO_FA + " 910B2 multi-core (PTO)", note,
            long=s >= LONG_S)
    for s, pub in M10:
        note = NO_PRELOAD.format(3) + "; DSL kernel, another build than M9"
        add(f"M10-{s}", s, s, pub, "held out", PTO_DSL + " regression watermark", note,
            tile_s1=512 if s >= 16384 else 256, long=s >= LONG_S)
    for cores, pubs in M11.items():
        for s1, pub in zip(M11_S1, pubs):
            add(f"M11-{cores}c-{s1}", 128 * cores, s1, pub, "fit" if cores == 1 else "held out",
                PTO_FA + f" Tables (A2/A3), {cores} core{'s' if cores > 1 else ''}",
                NO_PRELOAD.format(4) + "; task time", quick=(cores, s1) == (1, 1024))
    for s0, pubs in zip(M12_S0, M12):
        for s1, pub in zip(M12_S1, pubs):
            add(f"M12-{s0}x{s1}", s0, s1, pub, "held out", PTO_JIT,
                NO_PRELOAD.format(4) + "; JIT kernel timed from torch (launch included)")
    return specs


def fa_stats(pairs) -> dict:
    """Over [(published µs, simulated µs)]: n, geometric mean of sim/pub, the worst row's
    ratio (farthest from 1 in log), Pearson correlation of log sim with log pub, and the 90th
    percentile of |sim/pub - 1| (nearest rank)."""
    pairs = [(p, s) for p, s in pairs if s is not None and s > 0]
    if not pairs:
        return {"n": 0}
    r = [s / p for p, s in pairs]
    lp = [math.log(p) for p, _ in pairs]
    ls = [math.log(s) for _, s in pairs]
    n = len(pairs)
    mp, ms = sum(lp) / n, sum(ls) / n
    cov = sum((a - mp) * (b - ms) for a, b in zip(lp, ls))
    vp = sum((a - mp) ** 2 for a in lp)
    vs = sum((b - ms) ** 2 for b in ls)
    corr = cov / math.sqrt(vp * vs) if vp > 0 and vs > 0 else float("nan")
    err = sorted(abs(x - 1) for x in r)
    return {"n": n, "geomean": math.exp(sum(math.log(x) for x in r) / n),
            "worst": max(r, key=lambda x: abs(math.log(x))), "corr_log": corr,
            "p90_err": err[max(0, math.ceil(0.9 * n) - 1)]}


def format_fa_stats(results) -> str:
    """The summary lines of the table: over every FlashAttention row run, the held-out ones
    alone, and over the whole table (every row run)."""
    fa = [(r, us) for r, us, _ in results if r.id.startswith(("M9", "M10", "M11", "M12"))]
    if not fa:
        return ""
    out = []
    for label, rows in (("all FA rows", fa), ("held-out FA rows",
                                              [(r, us) for r, us in fa if r.role != "fit"]),
                        ("whole table", [(r, us) for r, us, _ in results])):
        st = fa_stats([(r.published_us, us) for r, us in rows])
        if not st["n"]:
            continue
        worst = next(r.id for r, us in rows if us is not None and us / r.published_us ==
                     st["worst"])
        out.append(f"{label} ({st['n']}): geomean sim/pub {st['geomean']:.2f}, "
                   f"worst {worst} {st['worst']:.2f}, correlation (log) {st['corr_log']:.2f}, "
                   f"P90 |sim/pub - 1| {st['p90_err']:.2f}")
    return "\n".join(out)
