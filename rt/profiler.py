"""Runtime profiler: what each stream and each emulated core did, and when.

    with rt.profile() as prof:
        ...launches, copies, events...
        s.synchronize()
    print(prof.table())
    prof.export_chrome_trace("trace.json")    # open in https://ui.perfetto.dev

Every task that finishes while a profiler is active becomes a `TaskRecord` (kernels, memcpy,
memset, event records and waits, callbacks, host functions), with per-core block ranges for
kernels. Times are host `perf_counter_ns` stamps of this emulator, not NPU estimates.

The NPU view (`rt.profile(npu=True)`): kernels launched while it is on record what each
block issues (a binary's `take_npu_trace`); `prof.npu_runs()` replays each launch on the SoC's pipe
model (rt/npu, deterministic simulated cycles), `prof.export_npu(dir)` writes msOpProf's views.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from . import sched
from .sched import KernelTask

# The pipe simulator and msOpProf's writers live in rt.npu, a layer above this one: rt.npu
# registers them here when it loads (it is loaded by whatever decodes a recording into its
# `rt.npu.Instr`s, so a recorded launch always finds them).
_npu_view: dict = {}


def set_npu_view(simulate_launch, write_all) -> None:
    """Called by rt.npu on import: `simulate_launch(blocks, soc, roles=())` -> Timeline and
    `write_all(timeline, out_dir, soc)` -> {view: path}, used by `NpuRun` and `export_npu`."""
    _npu_view.update(simulate_launch=simulate_launch, write_all=write_all)


def _npu_function(name: str):
    if name not in _npu_view:
        raise RuntimeError(f"the profiler's NPU view needs rt.npu's simulator: import rt.npu, "
                           f"got no {name} registered")
    return _npu_view[name]


@dataclass
class TaskRecord:
    """One finished task. Times in ns (`time.perf_counter_ns`); `ranges` holds
    `(core, first_block, last_block, start_ns, end_ns)` for kernels; `args` extra details
    (copy direction; a kernel binary's `last_counters` when it declares `counters`)."""
    device: int
    stream: int
    kind: str
    name: str
    start_ns: int
    end_ns: int
    nbytes: int = 0
    block_dim: int = 0
    ranges: list = field(default_factory=list)
    args: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def duration_us(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3


@dataclass
class NpuRun:
    """One kernel launch recorded by the NPU view: its task record, the SoC, and per-block
    instruction lists (`rt.npu.Instr`, decoded on first use by `decode()`, which the binary's
    `take_npu_trace` returned); `roles` the cores of one group of a MIX launch ("AIC", "AIV",
    "AIV"), whose lists are then its instances' own streams, group by group (() for one list per
    block); `timeline` is the simulated run (computed on first use)."""
    record: TaskRecord
    soc: str
    decode: object
    roles: tuple = ()
    _blocks: list | None = None
    _timeline: object = None

    @property
    def blocks(self) -> list:
        if self._blocks is None:
            self._blocks = self.decode()
        return self._blocks

    @property
    def timeline(self):
        if self._timeline is None:
            blocks = self.blocks
            self._timeline = _npu_function("simulate_launch")(blocks, self.soc,
                                                              roles=self.roles)
        return self._timeline


class Profiler:
    """Collects `TaskRecord`s while active (`rt.profile()`); mirrors the role of
    `aclprofStart/Stop`. With `npu=True` kernels also record what their blocks issue, for the
    simulated NPU view (`npu_runs`, `export_npu`)."""

    def __init__(self, npu: bool = False):
        self.records: list[TaskRecord] = []
        self.npu = bool(npu)
        self._npu_runs: list[NpuRun] = []
        self._lock = threading.Lock()
        self.t0_ns = 0

    # -- collection -----------------------------------------------------------------------------
    def start(self) -> "Profiler":
        from time import perf_counter_ns
        self.t0_ns = perf_counter_ns()
        sched.PROFILERS.append(self)
        return self

    def stop(self) -> None:
        if self in sched.PROFILERS:
            sched.PROFILERS.remove(self)

    def __enter__(self) -> "Profiler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def add_task(self, task) -> None:
        """Record a finished `rt.sched.Task` (the scheduler calls this while the profiler runs)."""
        args = dict(task.args) if isinstance(task.args, dict) else {}
        block_dim, ranges = 0, []
        if isinstance(task, KernelTask):
            if task.binary.counters:
                args.update(task.binary.last_counters)
            kernel_type = getattr(task.binary, "kernel_type_name", "")
            if kernel_type:
                args["kernel_type"] = kernel_type
            block_dim, ranges = task.block_dim, sorted(task.ranges, key=lambda r: r.first)
        rec = TaskRecord(task.core.device_id, task.core.id, task.kind, task.name, task.start_ns,
                         task.end_ns, task.nbytes, block_dim, ranges, args,
                         None if task.error is None
                         else f"{type(task.error).__name__}: {task.error}")
        run = None
        if self.npu and isinstance(task, KernelTask) and task.error is None:
            take = getattr(task.binary, "take_npu_trace", None)
            got = take(task.args) if take is not None else None
            if got is not None:
                run = NpuRun(rec, *got)
        with self._lock:
            self.records.append(rec)
            if run is not None:
                self._npu_runs.append(run)

    # -- the NPU view ---------------------------------------------------------------------------
    def npu_runs(self, name: str | None = None) -> list[NpuRun]:
        """The kernel launches the NPU view recorded (of kernel `name` if given), in the order
        they finished; `run.timeline` is the simulated run."""
        with self._lock:
            runs = list(self._npu_runs)
        return [r for r in runs if name is None or r.record.name == name]

    def export_npu(self, out_dir, name: str | None = None, index: int = -1) -> dict:
        """Write the simulated views of one recorded launch (the last one of kernel `name`, or
        `index` among them) into `out_dir`: npu_trace.json, PipeUtilization.csv, code_exe.csv
        (and the roofline / pipe charts when matplotlib is installed); returns their paths."""
        runs = self.npu_runs(name)
        if not runs:
            raise ValueError(f"export_npu: the profile must hold an NPU-view recording"
                             f"{f' of kernel {name!r}' if name else ''} (launch inside "
                             f"rt.profile(npu=True)), got {len(self.records)} records and none")
        run = runs[index]
        timeline = run.timeline
        return _npu_function("write_all")(timeline, out_dir, run.soc)

    # -- reports --------------------------------------------------------------------------------
    def table(self, sort_by: str = "total") -> str:
        """A text table summing the records by (kind, name): calls, total/avg/min/max µs, bytes."""
        groups: dict = {}
        for r in list(self.records):
            groups.setdefault((r.kind, r.name), []).append(r)
        rows = []
        for (kind, name), rs in groups.items():
            d = [r.duration_us for r in rs]
            rows.append((name, kind, len(rs), sum(d), sum(d) / len(d), min(d), max(d),
                         sum(r.nbytes for r in rs)))
        key = {"total": 3, "calls": 2, "avg": 4, "max": 6, "name": 0}.get(sort_by, 3)
        rows.sort(key=lambda x: x[key], reverse=key != 0)
        w = max([len("Name")] + [len(r[0]) for r in rows])
        head = (f"{'Name':<{w}}  {'Kind':<9} {'Calls':>6} {'Total us':>11} {'Avg us':>10} "
                f"{'Min us':>10} {'Max us':>10} {'Bytes':>12}")
        lines = [head, "-" * len(head)]
        for name, kind, n, tot, avg, mn, mx, nb in rows:
            lines.append(f"{name:<{w}}  {kind:<9} {n:>6} {tot:>11.1f} {avg:>10.1f} {mn:>10.1f} "
                         f"{mx:>10.1f} {nb:>12}")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """The trace as a Chrome trace-event dict: pid = device, one track (tid) per stream, per
        core and per DVPP unit ("DVPP VPC", ...; DVPP tasks are on their stream's track too), "X"
        complete events in µs from the profiler's start."""
        t0 = self.t0_ns or min((r.start_ns for r in self.records), default=0)
        us = lambda ns: (ns - t0) / 1e3          # noqa: E731
        events, tracks = [], {}
        for r in list(self.records):
            tid = r.stream
            tracks[(r.device, tid)] = f"stream {r.stream}"
            args = {"kind": r.kind, "bytes": r.nbytes,
                    **{k: _jsonable(v) for k, v in r.args.items()}}
            if r.block_dim:
                args["block_dim"] = r.block_dim
            if r.error:
                args["error"] = r.error
            events.append({"name": r.name, "cat": r.kind, "ph": "X", "pid": r.device, "tid": tid,
                           "ts": us(r.start_ns), "dur": max(0.0, (r.end_ns - r.start_ns) / 1e3),
                           "args": args})
            if r.kind == "dvpp":        # DVPP tasks also on their unit's own track
                unit = r.args.get("unit", "VPC")
                utid = DVPP_TID_BASE + (DVPP_UNITS.index(unit) if unit in DVPP_UNITS else 0)
                tracks[(r.device, utid)] = f"DVPP {unit}"
                events.append({**events[-1], "tid": utid, "args": {**args, "stream": r.stream}})
            for core, first, last, s, e in r.ranges:
                ctid = CORE_TID_BASE + core if core >= 0 else CORE_TID_BASE - 1
                tracks[(r.device, ctid)] = f"core {core}"
                events.append({"name": f"{r.name} [{first}, {last})", "cat": "block_range",
                               "ph": "X", "pid": r.device, "tid": ctid, "ts": us(s),
                               "dur": (e - s) / 1e3,
                               "args": {"stream": r.stream, "first": first, "last": last}})
        meta = []
        for dev in sorted({d for d, _ in tracks}):
            meta.append({"name": "process_name", "ph": "M", "pid": dev, "tid": 0,
                         "args": {"name": f"NPU {dev} (ascend-emu)"}})
        for (dev, tid), name in sorted(tracks.items()):
            meta.append({"name": "thread_name", "ph": "M", "pid": dev, "tid": tid,
                         "args": {"name": name}})
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": dev, "tid": tid,
                         "args": {"sort_index": tid}})
        return {"traceEvents": meta + events, "displayTimeUnit": "ms"}

    def export_chrome_trace(self, path: str) -> str:
        """Write `chrome_trace()` as JSON to `path` (Perfetto / chrome://tracing open it)."""
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)
        return path


CORE_TID_BASE = 1_000_000
DVPP_TID_BASE = 2_000_000                          # + index in DVPP_UNITS (rt.dvpp.engine.UNITS)
DVPP_UNITS = ("JPEGD", "PNGD", "VPC", "JPEGE", "VDEC", "VENC")


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def profile(npu: bool = False) -> Profiler:
    """`with rt.profile() as prof:` record every task that finishes inside the block; with
    `npu=True` also what each kernel block issues, replayed on the SoC's pipe model."""
    return Profiler(npu)


def npu_view_on() -> bool:
    """Is a profiler with the NPU view active (kernels launched now should record)?"""
    return any(getattr(p, "npu", False) for p in list(sched.PROFILERS))
