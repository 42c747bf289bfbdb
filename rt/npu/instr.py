"""What the NPU view's simulator reads and writes: one recorded instruction (`Instr`), a simulated
run (`Timeline`), and the names of pipes and core kinds as msOpProf spells them."""
from __future__ import annotations

from dataclasses import dataclass, field

PIPES = ("SCALAR", "VECTOR", "CUBE", "MTE1", "MTE2", "MTE3", "FIXPIPE")
AIC, AIV, AI_CORE = "AIC", "AIV", "AI Core"          # Timeline.core_kinds values
KIND_PIPES = {AIC: ("SCALAR", "CUBE", "MTE1", "MTE2", "FIXPIPE"),     # msOpProf's cube core
              AIV: ("SCALAR", "VECTOR", "MTE2", "MTE3"),              # msOpProf's vector core
              AI_CORE: PIPES}
CUBE_PIPES = frozenset({"CUBE", "MTE1", "FIXPIPE"})
VECTOR_PIPES = frozenset({"VECTOR", "MTE3"})
CUBE_MTE2_PATHS = frozenset({"GM->L1", "GM->L0A", "GM->L0B"})   # the AIC's MTE2; others: AIV


@dataclass
class Instr:
    """One instruction a block issued. `pipe` in msOpProf's spelling (PIPES); `path` the DMA path
    ("GM->UB", ...: model.PATHS) of a copy; `shape` (m, n, k) of an mmad; `src` "file:line" of
    the kernel source. Dependencies: `set_flag` / `wait_flag` = (src pipe, dst pipe, event id),
    `barrier` = a pipe name, "ALL" (drain this core) or "SYNC_ALL" (all blocks of the launch).
    `gm` = (start, end) byte addresses of the GM range a copy reads ("GM->X") or writes
    ("X->GM"), end exclusive, or () if unknown: the AIC <-> AIV hand-offs of a MIX launch.
    `cross` = a synchronisation between cores of a launch replayed from its instances' own
    streams (rt/npu/xcore.py): ("set", flag_id, mode) / ("wait", flag_id, mode) for
    cross_core_set_flag / cross_core_wait_flag on `pipe`, ("ib_set", block_idx, event_id) /
    ("ib_wait", block_idx, event_id) on SCALAR."""
    block: int
    pipe: str
    name: str
    bytes: int = 0
    elements: int = 0
    repeats: int = 0
    macs: int = 0
    dtype_bytes: int = 0
    path: str = ""
    shape: tuple = ()
    src: str = ""
    set_flag: tuple | None = None
    wait_flag: tuple | None = None
    barrier: str | None = None
    gm: tuple = ()
    cross: tuple | None = None


@dataclass
class Timeline:
    """The simulated run: `records[i]` = (instr, core, pipe, start, end) in cycles, in the order
    the instructions completed (a copy's end includes its latency after its pipe was free);
    `held[i]` the cycles record i held its pipe (end - start but for such a copy);
    `issues[i]` = (instr, core, start, end) the SCALAR unit's issue
    slot of each non-SCALAR instruction (part of SCALAR's busy time, not of `records`);
    `flows[i]` = (set record index, wait record index), each wait_flag with the set_flag it
    consumed (matched first-in first-out), and each cross-core wait (`Instr.cross`) with every
    set that released it (a round of a collective mode has one per core of the round);
    `handoffs[i]` = (record index, record index) a MIX
    launch's GM hand-off: the other side's copy whose completion released this copy (the latest
    of its dependencies); `busy[core][pipe]` busy cycles (SCALAR includes issuing);
    `core_kinds[core]` "AIC", "AIV" or "AI Core" (a core that runs cube and vector pipes: a
    coupled SoC, or mix=False); `n_cores` the `n_cores` argument (AI Cores in a MIX launch, whose
    cores are the AICs then the AIVs); `mix` whether the launch ran on AIC and AIV cores at once;
    `view` how: "as-if split" (each block's single stream split into an AIC and an AIV part, as
    a compiler would split it: rt/npu/mix.py), "streams" (a MIX launch's instances replayed
    from their own streams, each group on one AIC and its AIVs, `roles`: rt/npu/xcore.py), or
    "" (one core per block); `roles` the cores of one group ("AIC", "AIV", "AIV"), or ();
    `makespan` the cycles from the first start to the last end; `total_cycles` adds the launch
    overhead; `us` is `total_cycles` in microseconds at the model's clock. L2 counters (bytes of
    GM copies, module doc): `l2_hit_bytes` / `l2_miss_bytes` read from L2 / from HBM (a read of
    an unknown range counts as a miss), `l2_write_bytes` written into L2, `l2_writeback_bytes`
    dirty bytes evicted to HBM during the run; `l2_hit_ratio` = hits / reads."""
    soc: str
    n_cores: int
    clock_hz: float
    records: list = field(default_factory=list)
    held: list = field(default_factory=list)
    issues: list = field(default_factory=list)
    flows: list = field(default_factory=list)
    handoffs: list = field(default_factory=list)
    busy: dict = field(default_factory=dict)
    core_kinds: dict = field(default_factory=dict)
    mix: bool = False
    view: str = ""
    roles: tuple = ()
    makespan: float = 0.0
    launch_cycles: float = 0.0
    l2_hit_bytes: float = 0.0
    l2_miss_bytes: float = 0.0
    l2_write_bytes: float = 0.0
    l2_writeback_bytes: float = 0.0

    @property
    def l2_hit_ratio(self) -> float:
        """Share of the GM bytes read that hit L2 (0.0 when nothing was read)."""
        reads = self.l2_hit_bytes + self.l2_miss_bytes
        return self.l2_hit_bytes / reads if reads else 0.0

    @property
    def total_cycles(self) -> float:
        return self.makespan + self.launch_cycles

    @property
    def us(self) -> float:
        return self.total_cycles / self.clock_hz * 1e6

    def pipe_busy(self, pipe: str) -> float:
        """Busy cycles of `pipe` summed over the cores."""
        return sum(b.get(pipe, 0.0) for b in self.busy.values())

    def core_name(self, core: int) -> str:
        """"AIC 0", "AIV 3", "AI Core 1": the kind and the core's index among its kind
        ("core<N>" for a core the Timeline has no kind for)."""
        kind = self.core_kinds.get(core)
        if kind is None:
            return f"core{core}"
        nth = sum(1 for c, k in self.core_kinds.items() if k == kind and c < core)
        return f"{kind} {nth}"
