"""Per-SoC constants of the AI Core pipe model (docs/npu-model.md, "sourced constants").

Every number below names its source in docs/npu-model.md: the section (§1.3 cube, §1.4 vector,
§1.5 data movement, §1.6 scalar/flags, §1.7 launch) and the source key of its table (PTOISA:
hw-native-sys/pto-isa's A2/A3 cost model; CATLASS: hicann/catlass; REF: the ini values), or says
"assumption" when no source was found. Times are in AI Core cycles at `clock_hz`; bandwidths are
converted from bytes/s with that clock. Three constants were chosen on named calibration rows
(docs/npu-model.md §1.5 (h), §5: the L0C->GM rate among pto-isa's FIXPIPE rates, the L0C->GM
start-up latency and the cross-core flag latency, on M11's 1-core FlashAttention rows); every
other constant is the sourced one, unfitted (§1.5 (g) says why the GM->L1 rate stays pto-isa's
135 GiB/s rather than catlass's 80 GB/s).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..soc import SocSpec, get_soc

GiB = 1 << 30

# DMA paths: (source level, destination level) -> the name used in Instr.path
PATHS = ("GM->UB", "GM->L1", "GM->L0A", "GM->L0B", "UB->GM", "UB->L1", "UB->UB", "L1->L0A",
         "L1->L0B", "L1->UB", "L1->BT", "L1->GM", "L0C->GM", "L0C->L1")
GM_PATHS = frozenset(p for p in PATHS if "GM" in p.split("->"))   # share the chip's HBM

# per-core GM->L1 read rate, GiB/s: PTOISA's flat table (§1.5 (a)), kept over catlass's 80 GB/s
# heuristic (§1.5 (c)) because M1b moves 4.7 MB per AIC in 48.6 µs (>= 97 GB/s), which a
# per-core ceiling of 80 GB/s forbids (§1.5 (g)).
GM_L1_GIBS = 135.0
# per-core FIXPIPE L0C->GM rate, GiB/s: PTOISA's flat-table FIXPIPE rate to L1 (128), not its
# L0C->GM entry (70): the published FlashAttention kernels write 192 KB of fp32 S and O parts per
# 256-key tile through FIXPIPE, and M11's 1-core rows (S1 4096 -> 8192) add a tile every
# 1.92 µs, which needs >= 95 GiB/s (docs/npu-model.md §1.5 (h); chosen on M11's fit rows).
L0C_GM_GIBS = 128.0
# per-core DMA bandwidth, GiB/s (§1.5 (a): PTOISA `arch_config.hpp`, kA2A3ArchConfig flat table)
_DMA_GIBS = {
    "GM->UB": 100.9, "GM->L1": GM_L1_GIBS, "UB->GM": 188.46, "L1->GM": 32.0, "UB->UB": 1024.0,
    "L0C->GM": L0C_GM_GIBS, "L0C->L1": 128.0, "L1->L0A": 441.0, "L1->L0B": 220.5, "L1->BT": 32.0,
    "GM->L0A": GM_L1_GIBS,    # assumption: as GM->L1 (no GM->L0 entry in the table)
    "GM->L0B": GM_L1_GIBS,    # assumption: as GM->L1
    "L1->UB": 220.5,     # assumption: as L1->L0B (no L1->UB entry)
    "UB->L1": 188.46,    # assumption: as UB->GM (no UB->L1 entry)
}
# DMA start-up latency, cycles (§1.5 (b): PTOISA fitted Hill model, latency = K/peak, derived).
# Charged after the copy's bytes, off its pipe (§1.5 (f); `PipeModel.dma_latency_on_pipe`).
# L0C->GM: fitted on M11's 1-core rows (§1.5 (h)), 16 cycles, not the Hill fit's 1216 (whose
# peak, 41 GiB/s, contradicts the rate above).
_DMA_LATENCY = {
    "GM->UB": 214, "GM->L1": 67, "UB->GM": 107, "L0C->GM": 16,
    "GM->L0A": 67, "GM->L0B": 67,             # assumption: as GM->L1
    "L1->GM": 107, "UB->L1": 107,             # assumption: as UB->GM
    "L0C->L1": 16,                            # assumption: as L0C->GM
    "L1->L0A": 16, "L1->L0B": 16, "L1->UB": 16, "L1->BT": 16, "UB->UB": 16,  # assumption: on-chip
}

# L2 cache (§1.1 L2 rows; §1.5 (e)). Huawei's A2/A3 DataCopy best-practice example (asc-devkit,
# data_copy README, "Optimization Point 3") estimates with "GM bandwidth approximately 1.8TB/s and
# L2Cache peak bandwidth approximately 5.2TB/s"; the CANN guide "Setting a Proper L2 CacheMode"
# says only "several times higher than that of the GM". One constant: L2 = 5.2 / 1.8 x the SoC's
# HBM bandwidth (4.62 TB/s with rt.soc's assumed 1.6 TB/s HBM; 5.2 TB/s if HBM is fitted to 1.8).
L2_OVER_HBM = 5.2 / 1.8
# Bookkeeping granule: the same example's msopprof counters give 1207959552 B read over
# 9437187 read miss_allocates = 128 B per L2 request on A2 (derived), so residency is kept per
# 128-B sector.
L2_LINE_BYTES = 128

# vector ops: name -> (head cycles, cycles per 256-byte repeat)
# (§1.4: PTOISA `cce_costmodel_vector_compute.hpp`, head/slope; "like X" entries are assumptions)
_VECTOR = {
    "add": (10, 2), "mul": (10, 2), "max": (10, 2),
    "sub": (10, 2), "min": (10, 2), "add_relu": (10, 2), "sub_relu": (10, 2),   # like add
    "bitwise_and": (10, 2), "bitwise_or": (10, 2),                            # like add
    "div": (11, 4),
    "adds": (13, 1), "muls": (11, 1), "maxs": (10, 1),
    "mins": (10, 1), "leaky_relu": (11, 1), "axpy": (11, 1),                 # like maxs/muls
    "abs": (10, 1), "relu": (10, 1), "bitwise_not": (10, 1), "duplicate": (10, 1),  # like maxs
    "exp": (13, 2), "ln": (13, 2), "sqrt": (14, 2),
    "rsqrt": (14, 2), "reciprocal": (14, 2),                                  # like sqrt
    "cast": (14, 2),                                                          # vconv_*
    "reduce_sum": (14, 7), "whole_reduce_sum": (14, 7),                       # vcadd
    "reduce_max": (14, 7), "reduce_min": (14, 7),                             # like vcadd
    "whole_reduce_max": (14, 7), "whole_reduce_min": (14, 7),                 # like vcadd
    "gather_mask": (10, 2),             # assumption: like add (one 256-B repeat in, packed out)
}


@dataclass(frozen=True)
class PipeModel:
    """The constants the simulator reads. Build one with `pipe_model(soc)`."""
    soc: str
    clock_hz: float                # REF `cube_freq=1800` (910B2); other 910B variants: assumption
    aic_cores: int                 # §1.1 ai_core_cnt
    aiv_cores: int                 # §1.1 vector_core_num
    separated: bool                # 910B: vector-only kernels run on the AIVs
    # cube (§1.3): MACs per cycle by the A operand's element size (PTOISA `mad`, REF cube_m/n/k)
    cube_macs_per_cycle: dict = field(default_factory=lambda: {2: 4096, 1: 8192, 4: 1024})
    cube_head_cycles: int = 6      # §1.3 kDefaultHeadCycles (PTOISA), only when CUBE was idle
    # vector (§1.4)
    repeat_bytes: int = 256        # REF vec_calc_size=128 fp16 lanes = 256 B per repeat
    vector_costs: dict = field(default_factory=lambda: dict(_VECTOR))
    vector_default: tuple = (6, 2)        # §1.4 EstimateLinearCycles defaults (PTOISA)
    count_mode_penalty: int = 16          # §1.4 kCountModeFloorCycles (PTOISA)
    # data movement (§1.5): bytes per cycle and start-up latency per path
    dma_bytes_per_cycle: dict = field(default_factory=dict)
    dma_latency: dict = field(default_factory=lambda: dict(_DMA_LATENCY))
    # §1.5 (f): a copy holds its pipe only while its bytes move; its start-up latency runs after
    # the pipe is free (several copies in flight per queue), so dependants and the pipe's next
    # set_flag / barrier see it. True: the older rule, latency + bytes both on the pipe.
    dma_latency_on_pipe: bool = False
    hbm_bytes_per_cycle: float = 0.0      # §1.5 (d): one shared pool; rt.soc hbm_bandwidth
    # L2 (§1.5 (e)): a chip-wide LRU cache of GM in front of HBM; 0 bytes turns it off
    l2_bytes: int = 0                     # §1.1 l2_size (rt.soc l2_bytes; 910B2 192 MiB)
    l2_bytes_per_cycle: float = 0.0       # L2_OVER_HBM x hbm (assumption from a Huawei estimate)
    l2_line_bytes: int = L2_LINE_BYTES    # residency granule (derived from msopprof counters)
    # scalar, flags, launch (§1.6, §1.7)
    scalar_issue_cycles: int = 1   # §1.6: assumption (PTOISA charges 1 cycle per sync/ctrl instr)
    # §1.6 issue-queue depth: how many issued instructions may wait in one pipe's queue before
    # the SCALAR unit stalls. No source gives the depth; 0 = unbounded (the default, an
    # assumption that lets the scalar unit run further ahead than on an NPU).
    issue_queue_depth: int = 0
    flag_latency_cycles: int = 1   # §1.6: PTOISA set_flag/wait_flag = 1 cycle (same core)
    # §1.6 cross-core flag (CrossCoreSetFlag / ffts_cross_core_sync, AIC <-> AIV): pto-isa charges
    # 1 cycle, which §1.6 calls "far too low". Fitted on M11's 1-core rows (§1.5 (h), §5): 1000
    # cycles (~0.56 µs at 1.8 GHz; was an assumed 200). pto-isa's own FA cost model adds the same
    # order on board, 1000 cycles of synchronisation per logical S1 tile.
    cross_core_flag_cycles: int = 1000
    # §1.6 SyncAll: no number. Assumption: every core's flag reaches a collector and the release
    # comes back, two of the formerly assumed cross-core flag latencies (2 x 200 cycles) after the
    # last core arrived; not refitted (no calibration row calls SyncAll).
    sync_all_cycles: int = 400
    launch_overhead_cycles: int = 0       # §1.7: CATLASS headCost base term, 1 µs

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / self.clock_hz * 1e6

    def vector_cost(self, name: str) -> tuple:
        """(head cycles, cycles per repeat) of vector op `name`."""
        return self.vector_costs.get(name, self.vector_default)

    def cube_cycles(self, m: int, n: int, k: int, a_bytes: int) -> int:
        """Cycles of an m x n x k mmad: whole 16 x 16 x (32 / sizeof A) fractals (§1.3)."""
        kf = max(32 // max(a_bytes, 1), 1)
        fractals = -(-m // 16) * -(-n // 16) * -(-k // kf)
        per = 16 * 16 * kf
        rate = self.cube_macs_per_cycle.get(a_bytes, self.cube_macs_per_cycle[2])
        return -(-fractals * per // rate)


def pipe_model(soc: SocSpec | str | None = None) -> PipeModel:
    """The pipe model of `soc` (a SocSpec, a SoC name, or None: rt.get_soc's default)."""
    spec = soc if isinstance(soc, SocSpec) else get_soc(soc)
    clock = spec.cube_freq_hz
    return PipeModel(
        soc=spec.name, clock_hz=clock, aic_cores=spec.ai_core_num,
        aiv_cores=spec.vector_core_num, separated=spec.separated,
        dma_bytes_per_cycle={p: g * GiB / clock for p, g in _DMA_GIBS.items()},
        hbm_bytes_per_cycle=spec.hbm_bandwidth / clock,
        l2_bytes=spec.l2_bytes, l2_bytes_per_cycle=L2_OVER_HBM * spec.hbm_bandwidth / clock,
        launch_overhead_cycles=round(1e-6 * clock))
