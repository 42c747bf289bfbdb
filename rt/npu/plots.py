"""PNG views of a simulated run : a roofline and a pipe-utilisation bar chart.

- `roofline_point(tl, label)`: a kernel's (label, flops, bytes, seconds): 2 FLOPs per cube MAC
  plus 1 op per vector element (`Instr.elements` of VECTOR work, so that a vector-only kernel has
  a point too), the bytes of every copy that reads or writes GM (`model.GM_PATHS`), and the
  simulated time `tl.us` (launch overhead included).
- `write_roofline_png(points, path, model)`: log-log arithmetic intensity (FLOP per GM byte) vs
  achieved simulated throughput (FLOP/s), under the SoC's ceilings: cube peak for fp16/bf16 and
  for fp32 (MAC/cycle x 2 x clock x AICs, docs/npu-model.md §1.3), vector peak (one 256-B repeat
  per cycle on every AIV: fp16 lanes x clock x AIVs, §1.4) and the chip's GM bandwidth
  (`hbm_bytes_per_cycle` x clock, §1.5 (d)); each compute roof is drawn as min(peak, GM bandwidth
  x intensity).
- `pipe_busy_ratios(tl)`, `write_pipe_chart_png(tl, path)`: per-pipe busy / makespan, averaged
  over the cores that ran, one series per core kind (AIC, AIV, or AI Core).
Every figure is titled "simulated, <SoC>". matplotlib (the `bench` extra) is imported inside the
writers and drawn with the Agg canvas, without pyplot: importing this module needs only the
standard library, and the caller's matplotlib backend is left alone.
"""
from __future__ import annotations

import pathlib
from typing import NamedTuple

from .model import GM_PATHS, PipeModel
from .sim import AI_CORE, KIND_PIPES, PIPES, Timeline

__all__ = ["RooflinePoint", "roofline_point", "roofline_ceilings", "write_roofline_png",
           "pipe_busy_ratios", "write_pipe_chart_png"]


class RooflinePoint(NamedTuple):
    label: str
    flops: float          # 2 per cube MAC + 1 per vector element
    bytes: float          # GM bytes read and written
    seconds: float        # simulated time


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("rt.npu.plots needs matplotlib, got it missing; install the bench "
                          "extra: pip install -e '.[bench]'") from e
    return Figure, FigureCanvasAgg


def roofline_point(tl: Timeline, label: str) -> RooflinePoint:
    """The roofline point of the simulated kernel `tl` (see the module docstring)."""
    flops = nbytes = 0.0
    for ins, _core, pipe, _s, _e in tl.records:
        if pipe == "CUBE" and not ins.barrier and not (ins.set_flag or ins.wait_flag):
            macs = ins.macs or (ins.shape[0] * ins.shape[1] * ins.shape[2] if ins.shape else 0)
            flops += 2.0 * macs
        elif pipe == "VECTOR":
            flops += ins.elements
        if ins.path in GM_PATHS:
            nbytes += ins.bytes
    return RooflinePoint(label, flops, nbytes, tl.us * 1e-6)


def roofline_ceilings(model: PipeModel) -> dict:
    """{"cube fp16": FLOP/s, "cube fp32": FLOP/s, "vector fp16": op/s, "GM": bytes/s, "L2":
    bytes/s (0 without an L2)} of the whole chip (see the module docstring for the sources)."""
    f = model.clock_hz
    return {"cube fp16": model.cube_macs_per_cycle[2] * 2 * f * model.aic_cores,
            "cube fp32": model.cube_macs_per_cycle[4] * 2 * f * model.aic_cores,
            "vector fp16": model.repeat_bytes // 2 * f * model.aiv_cores,
            "GM": model.hbm_bytes_per_cycle * f,
            "L2": model.l2_bytes_per_cycle * f if model.l2_bytes else 0.0}


def _save(fig, canvas_cls, path) -> pathlib.Path:
    path = pathlib.Path(path)
    canvas_cls(fig)
    fig.savefig(path, format="png", dpi=110)
    return path


def write_roofline_png(points, path, model: PipeModel, soc_name: str | None = None
                       ) -> pathlib.Path:
    """Write the roofline of `points` (RooflinePoints / (label, flops, bytes, seconds) tuples,
    or Timelines, labelled with their SoC) on `model`'s ceilings to `path`. Points with no
    FLOPs, no GM bytes or no time have no place on log axes and are left out (listed in the
    legend as such)."""
    Figure, Canvas = _matplotlib()
    pts = [roofline_point(p, p.soc) if isinstance(p, Timeline) else RooflinePoint(*p)
           for p in points]
    soc = soc_name or model.soc
    roofs = roofline_ceilings(model)
    bw = roofs["GM"]
    drawn = [(p, p.flops / p.bytes, p.flops / p.seconds) for p in pts
             if p.flops > 0 and p.bytes > 0 and p.seconds > 0]
    ridge = [v / bw for k, v in roofs.items() if k not in ("GM", "L2")]
    xs = [x for _, x, _ in drawn] + ridge
    lo, hi = min(xs) / 10, max(xs) * 10
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig = Figure(figsize=(8, 5.5))
    ax = fig.add_subplot()
    styles = {"cube fp16": "tab:red", "cube fp32": "tab:orange", "vector fp16": "tab:green"}
    for name, color in styles.items():
        peak = roofs[name]
        ax.plot(grid, [min(peak, bw * x) for x in grid], color=color,
                label=f"{name} peak {peak / 1e12:.1f} T{'FLOP' if 'cube' in name else 'op'}/s")
    top = 3 * max([v for k, v in roofs.items() if k not in ("GM", "L2")] +
                  [y for _, _, y in drawn])
    gx = [x for x in grid if bw * x <= top]
    ax.plot(gx, [bw * x for x in gx], color="tab:blue", linestyle=":",
            label=f"GM bandwidth {bw / 1e12:.2f} TB/s")
    l2 = roofs.get("L2", 0.0)
    if l2 > bw:     # GM traffic that hits the L2 streams above the HBM roof, up to this one
        lx = [x for x in grid if l2 * x <= top]
        ax.plot(lx, [l2 * x for x in lx], color="tab:purple", linestyle="--",
                label=f"L2 bandwidth {l2 / 1e12:.2f} TB/s (GM bytes served by the L2)")
    for p, x, y in drawn:
        ax.scatter([x], [y], zorder=3)
        ax.annotate(f"{p.label}\n{y / 1e12:.3g} T/s", (x, y), textcoords="offset points",
                    xytext=(6, 6), fontsize=8)
    for p in pts:
        if all(p is not d[0] for d in drawn):
            ax.plot([], [], " ", label=f"{p.label}: not drawn (no FLOPs, GM bytes or time)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per GM byte)")
    ax.set_ylabel("achieved throughput (FLOP/s, simulated)")
    ax.set_title(f"Roofline (simulated, {soc})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, Canvas, path)


def pipe_busy_ratios(tl: Timeline) -> dict:
    """{core kind: {pipe: busy / makespan averaged over the cores of that kind that ran}}, the
    pipes of each kind in PIPES order (an AIC: SCALAR, CUBE, MTE1, MTE2, FIXPIPE; an AIV:
    SCALAR, VECTOR, MTE2, MTE3; an AI Core: all)."""
    used = [c for c, b in sorted(tl.busy.items()) if any(v > 0 for v in b.values())]
    out: dict = {}
    for c in used:
        kind = tl.core_kinds.get(c, AI_CORE)
        out.setdefault(kind, []).append(c)
    span = tl.makespan or 1.0
    return {kind: {p: sum(tl.busy[c].get(p, 0.0) for c in cores) / (len(cores) * span)
                   for p in PIPES if p in KIND_PIPES[kind]}
            for kind, cores in out.items()}


def write_pipe_chart_png(tl: Timeline, path, soc_name: str | None = None) -> pathlib.Path:
    """Write a bar chart of `pipe_busy_ratios(tl)` to `path`: one group of bars per pipe, one
    bar per core kind, labelled "simulated, <SoC>"."""
    Figure, Canvas = _matplotlib()
    ratios = pipe_busy_ratios(tl)
    soc = soc_name or tl.soc
    pipes = [p for p in PIPES if any(p in r for r in ratios.values())] or list(PIPES)
    fig = Figure(figsize=(8, 4.5))
    ax = fig.add_subplot()
    n = max(len(ratios), 1)
    width = 0.8 / n
    for i, (kind, r) in enumerate(ratios.items()):
        cores = sum(1 for c, k in tl.core_kinds.items() if k == kind and
                    any(v > 0 for v in tl.busy.get(c, {}).values()))
        xs = [j + (i - (n - 1) / 2) * width for j, p in enumerate(pipes) if p in r]
        ys = [r[p] for p in pipes if p in r]
        bars = ax.bar(xs, ys, width, label=f"{kind} ({cores} core{'s' * (cores != 1)})")
        ax.bar_label(bars, labels=[f"{y:.0%}" for y in ys], fontsize=7)
    ax.set_xticks(range(len(pipes)), pipes)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("busy / makespan (mean over the cores that ran)")
    ax.set_title(f"Pipe utilisation (simulated, {soc}), {tl.makespan:.0f} cycles")
    if ratios:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, Canvas, path)
