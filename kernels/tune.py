"""A small tuner: rank tiling candidates of any kernel by their simulated NPU time.

    from kernels.tune import tune, format_ranking, npu_timeline
    run = lambda t: npu_timeline(lambda: flash_attention(q, k, v, tiling=t),
                                 "flash_attention_kernel")
    results = tune(flash_attention_tiling_candidates(64, np.float32, 2048, 2048), run)
    print(format_ranking(results, mark=flash_attention_tiling(64, np.float32, 2048, 2048)))

`run(candidate)` launches the kernel with that candidate (typically inside
`rt.profile(npu=True)`, which `npu_timeline` does) and returns the simulated `rt.npu.Timeline`,
a list of them (an op run as several launches, `npu_timelines`: its time is their sum, its
pipes those of its longest launch) or the simulated time in µs. The simulated time is
deterministic (the same kernel, shape and candidate give the same cycles on any machine,
interpreted or compiled, in a fresh process; one that ran other launches first gave the
FlashAttention backward at S8192 0.05 % less, a launch's GM addresses being its own), so the
ranking is too: results are sorted by simulated time, ties broken by `key(candidate)` (default:
the dataclass fields as a tuple, else `repr`). A candidate whose `run` (or `validate`) raises
ValueError (a tiling's `validate` does when it does not fit the SoC) is reported as skipped
with the reason, after the ranked ones, in input order, and so is one whose launch failed
because a block issued more instructions than the NPU view records (`rt.NpuTraceLimitError` as
the cause of the synchronize's error; raise ASCEND_EMU_NPU_TRACE_ROWS to rank it); any other
exception propagates. Candidates are usually
frozen dataclasses (`FlashAttentionTiling`, `AddTiling`, ...); anything hashable works.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import rt

__all__ = ["TuneResult", "tune", "best", "format_ranking", "npu_timeline", "npu_timelines",
           "npu_total_us", "pipe_ratios"]


@dataclass(frozen=True)
class TuneResult:
    """One candidate's outcome: its simulated time `us` and cycles (None when skipped),
    `rank` (1 = fastest; None when skipped), `skipped` the reason a candidate was not run,
    `pipes` the busy ratio of every pipe that ran (busy cycles over the total cycles of the
    cores that ran it; of the longest launch when `run` gave several), `wall_s` the host
    seconds the candidate took (launch + simulation)."""
    candidate: object
    us: float | None = None
    cycles: float | None = None
    rank: int | None = None
    skipped: str | None = None
    pipes: dict = field(default_factory=dict, compare=False)
    wall_s: float = field(default=0.0, compare=False)

    @property
    def ok(self) -> bool:
        return self.skipped is None

    @property
    def bound_pipe(self) -> str:
        """The pipe with the highest busy ratio ("-" when unknown)."""
        return max(self.pipes, key=lambda p: (self.pipes[p], p)) if self.pipes else "-"


def pipe_ratios(tl) -> dict:
    """{pipe: busy cycles / (total cycles x cores that ran the pipe)} of a simulated Timeline.
    A launch on cores of more than one kind (a MIX launch's AICs and AIVs) keys each pipe by
    its kind too ("AIC MTE2", "AIV VECTOR"), over the cores of that kind that ran it: the AICs'
    MTE2 and the AIVs' are different units."""
    used = [c for c, b in tl.busy.items() if any(v > 0 for v in b.values())]
    kinds = {c: tl.core_kinds.get(c, "") for c in used}
    split = len(set(kinds.values())) > 1
    out = {}
    for c in used:
        for p, v in tl.busy[c].items():
            if v > 0:
                out.setdefault(f"{kinds[c]} {p}" if split else p, []).append(v)
    total = tl.total_cycles
    return {k: (sum(v) / (total * len(v)) if total else 0.0) for k, v in sorted(out.items())}


def _npu_runs(launch, name: str | None, api: str) -> list:
    """Call `launch()` inside `rt.profile(npu=True)` and return its NPU-view runs (of kernel
    `name` if given), in the order they finished; none is an error naming `api`."""
    with rt.profile(npu=True) as prof:
        launch()
    runs = prof.npu_runs(name)
    if not runs:
        raise RuntimeError(f"{api}: launch() must launch a kernel"
                           f"{f' named {name!r}' if name else ''} and wait for it, got no "
                           f"NPU-view recording ({len(prof.records)} records)")
    return runs


def npu_timeline(launch, name: str | None = None):
    """Call `launch()` (which launches a kernel and waits for it) inside
    `rt.profile(npu=True)` and return the simulated Timeline of the last recorded launch (of
    kernel `name` if given)."""
    return _npu_runs(launch, name, "npu_timeline")[-1].timeline


def npu_timelines(launch, name: str) -> list:
    """Call `launch()` inside `rt.profile(npu=True)` and return the simulated Timelines of every
    launch of kernel `name` it recorded, in the order they finished (an op run as several
    launches, such as the FlashAttention backward's prep, fused and dQ cast launches)."""
    return [r.timeline for r in _npu_runs(launch, name, "npu_timelines")]


def npu_total_us(launch, name: str) -> float:
    """Call `launch()` inside `rt.profile(npu=True)` and return the simulated µs summed over
    every launch of kernel `name` it recorded (an op run as several launches, such as the
    FlashAttention backward's two passes)."""
    return float(sum(r.timeline.us for r in _npu_runs(launch, name, "npu_total_us")))


def _default_key(c):
    if dataclasses.is_dataclass(c) and not isinstance(c, type):
        return tuple(getattr(c, f.name) for f in dataclasses.fields(c))
    return repr(c)


def tune(candidates, run, *, key=None, validate=None, progress=None) -> list[TuneResult]:
    """Run every candidate once and rank them by simulated time (see the module docstring).

    `validate(candidate)` (optional) is called first; a ValueError from it or from `run` skips
    the candidate with the error's text as the reason, and so does a launch that failed because
    a block issued more instructions than the NPU view records (`rt.NpuTraceLimitError`, found
    in the launch error's chain of causes).
    Duplicates are run once. `progress(i, n, candidate)` (optional) is called before each
    candidate. Returns the ranked results (fastest
    first, ties by `key`), then the skipped ones."""
    key = key or _default_key
    todo = list(dict.fromkeys(candidates))
    done, skipped = [], []
    for i, c in enumerate(todo):
        if progress is not None:
            progress(i, len(todo), c)
        t0 = time.perf_counter()
        try:
            if validate is not None:
                validate(c)
            got = run(c)
        except ValueError as e:
            skipped.append(TuneResult(c, skipped=str(e) or type(e).__name__,
                                      wall_s=time.perf_counter() - t0))
            continue
        except rt.AclError as e:
            # a block too long for the NPU view's buffer: rt.NpuTraceLimitError in the chain
            if rt.NpuTraceLimitError.in_chain(e) is None:
                raise
            skipped.append(TuneResult(c, skipped=str(e), wall_s=time.perf_counter() - t0))
            continue
        if isinstance(got, (int, float)):
            us, cycles, pipes = float(got), None, {}
        elif isinstance(got, (list, tuple)):
            if not got:
                raise ValueError(f"tune: run({c!r}) must give at least one Timeline, got []")
            us = float(sum(t.us for t in got))
            cycles = float(sum(t.total_cycles for t in got))
            pipes = pipe_ratios(max(got, key=lambda t: t.total_cycles))
        else:
            us, cycles, pipes = float(got.us), float(got.total_cycles), pipe_ratios(got)
        del got         # a Timeline holds every simulated instruction: not kept into the next run
        if not math.isfinite(us) or us < 0:
            raise ValueError(f"tune: run({c!r}) must give a finite simulated time >= 0, got {us}")
        done.append(TuneResult(c, us, cycles, pipes=pipes, wall_s=time.perf_counter() - t0))
    if progress is not None:
        progress(len(todo), len(todo), None)
    done.sort(key=lambda r: (r.us, key(r.candidate)))
    ranked = [dataclasses.replace(r, rank=i + 1) for i, r in enumerate(done)]
    return ranked + skipped


def best(results):
    """The fastest candidate of `tune`'s results (None if every one was skipped)."""
    return next((r.candidate for r in results if r.ok), None)


def _fields(c) -> str:
    if dataclasses.is_dataclass(c) and not isinstance(c, type):
        return " ".join(f"{f.name}={getattr(c, f.name)}" for f in dataclasses.fields(c))
    return repr(c)


def format_ranking(results, *, mark=None, mark_label="default", label="simulated",
                   top: int | None = None) -> str:
    """A text table of `tune`'s results: rank, simulated µs, relative to the fastest, the
    busiest pipe, the candidate; `mark` (a candidate) is flagged with `<- mark_label`; `label`
    heads the time column (e.g. "simulated Ascend910B2"); `top` keeps the first ranked rows
    (the marked one is always shown). Skipped candidates are listed with their reasons."""
    ok = [r for r in results if r.ok]
    shown = [r for i, r in enumerate(ok) if top is None or i < top or r.candidate == mark]
    fastest = ok[0].us if ok else 0.0
    head = f"{'rank':>4}  {label + ' us':>24}  {'x best':>7}  {'busiest pipe':<16}  candidate"
    lines = [head, "-" * len(head)]
    for r in shown:
        rel = r.us / fastest if fastest else 1.0
        busy = f"{r.bound_pipe} {100 * r.pipes[r.bound_pipe]:.0f}%" if r.pipes else "-"
        flag = f"   <- {mark_label}" if mark is not None and r.candidate == mark else ""
        lines.append(f"{r.rank:>4}  {r.us:>24.2f}  {rel:>6.2f}x  {busy:<16}  "
                     f"{_fields(r.candidate)}{flag}")
    if len(shown) < len(ok):
        lines.append(f"      ({len(ok) - len(shown)} more ranked candidates not shown)")
    for r in results:
        if not r.ok:
            lines.append(f"skipped  {_fields(r.candidate)}: {r.skipped}")
    if mark is not None and not any(r.candidate == mark for r in results):
        lines.append(f"({mark_label} {_fields(mark)} was not among the candidates)")
    return "\n".join(lines)
