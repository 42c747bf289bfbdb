"""msprof-like per-operator summary of a profile: host measurements, the NPU estimate, and the
simulated NPU columns when the profile recorded the NPU view.

Columns: op name, block_dim, `kernel_type` (the kernel type the launch ran as, e.g. AIV_ONLY or
MIX_AIC_1_2, msprof's "Task Type"; AI_CPU for a model's host ops; empty if the binary does not
say), calls; `host_total_us`, `host_avg_us`, `host_min_us`,
`host_max_us` (wall time of the emulator on this CPU) and `host_gflops` (cube MACs x 2 over that
time): host measurements, not NPU times; `est_npu_us` and `est_bound_pipe` (the labelled
estimate of `rt.estimate`). When the profile holds NPU-view recordings of the op
(`rt.profile(npu=True)`), `simulated_soc` ("simulated <SoC>") and msprof's simulated columns,
named as msprof names them (`rt.npu.op_summary_row`: `aicore_time(us)`, `aic_total_cycles`,
`aic_mac_ratio`, ..., `aiv_mte3_ratio`), the mean over the op's recorded calls; ops without a
recording leave them empty. The simulated time is deterministic (rt/npu's pipe model).
"""
from __future__ import annotations

import csv

from .estimate import ESTIMATE_LABEL, estimate
from .npu.export import OP_SUMMARY_COLUMNS
from .soc import get_soc

HOST_COLUMNS = ("op_name", "block_dim", "kernel_type", "calls", "host_total_us", "host_avg_us",
                "host_min_us", "host_max_us", "host_gflops", "est_npu_us", "est_bound_pipe")
SIM_COLUMNS = ("simulated_soc", "simulated_calls") + OP_SUMMARY_COLUMNS
COLUMNS = HOST_COLUMNS          # the columns every row has; SIM_COLUMNS follow when recorded


def _simulated(runs) -> dict:
    """The mean of msprof's simulated columns over `runs` (NpuRun), labelled with the SoC."""
    from .npu import op_summary_row
    rows = [op_summary_row(r.timeline, r.soc) for r in runs]
    socs = sorted({r.soc for r in runs})
    out = {"simulated_soc": "simulated " + "/".join(socs), "simulated_calls": len(rows)}
    for k in SIM_COLUMNS[2:]:
        out[k] = sum(float(r[k]) for r in rows) / len(rows)
    return out


def _sim_us(row) -> float:
    """The simulated time per call of a row: aicore_time(us), or aiv_time(us) for a
    vector-only op on a separated SoC (its AIC side is empty)."""
    return max(row["aicore_time(us)"], row["aiv_time(us)"])


def op_summary(prof, soc=None, npu_from=None) -> list[dict]:
    """One row per (kernel name, block_dim, kernel type) over the profile's kernel records, and one
    per AI CPU task name (model nodes on the AI CPU: "<node> (AI_CPU <op>)", est_bound_pipe
    "AI_CPU"); a model's AI Core kernels are named "<node> (<kernel>)" (see the module docstring
    for the columns). The simulated columns come from the NPU-view recordings of
    `npu_from` (another Profiler, e.g. one that recorded a launch outside the timed runs;
    default `prof` itself), matched by kernel name and block_dim."""
    soc = soc or get_soc()
    groups: dict = {}
    for r in list(prof.records):
        if r.kind in ("kernel", "aicpu"):     # model nodes: "<node> (<kernel>)" / AI CPU tasks
            groups.setdefault((r.name, r.block_dim, r.args.get("kernel_type", "")), []).append(r)
    npu: dict = {}
    src = prof if npu_from is None else npu_from
    runs = src.npu_runs() if hasattr(src, "npu_runs") else []
    for run in runs:
        npu.setdefault((run.record.name, run.record.block_dim), []).append(run)
    rows = []
    for (name, bd, kernel_type), rs in sorted(groups.items()):
        d = [r.duration_us for r in rs]
        macs = sum(r.args.get("cube_macs", 0) + r.args.get("cube_macs_fp32", 0) for r in rs)
        if rs[0].kind == "aicpu":      # a host op of a model: no AI Core estimate
            est = [{"estimated_us": 0.0, "bound_pipe": "AI_CPU"}]
        else:
            est = [estimate(r.args, soc, bd) for r in rs]
        bound = max(est, key=lambda e: e["estimated_us"])["bound_pipe"] if est else "-"
        row = {
            "op_name": name, "block_dim": bd,
            "kernel_type": "AI_CPU" if rs[0].kind == "aicpu" else kernel_type,
            "calls": len(rs), "host_total_us": sum(d),
            "host_avg_us": sum(d) / len(d), "host_min_us": min(d), "host_max_us": max(d),
            "host_gflops": 2 * macs / (sum(d) * 1e3) if sum(d) else 0.0,
            "est_npu_us": sum(e["estimated_us"] for e in est) / len(est),
            "est_bound_pipe": bound,
        }
        if (name, bd) in npu:
            row.update(_simulated(npu[(name, bd)]))
        rows.append(row)
    return rows


def write_op_summary_csv(prof, path, soc=None, npu_from=None) -> str:
    """`op_summary.csv`: HOST_COLUMNS, then SIM_COLUMNS when any op has an NPU-view recording
    (`op_summary`'s arguments)."""
    rows = op_summary(prof, soc, npu_from)
    cols = HOST_COLUMNS + (SIM_COLUMNS if any("simulated_soc" in r for r in rows) else ())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if k.endswith("_ratio") else f"{v:.3f}")
                        if isinstance(v, float) else v for k, v in r.items()})
    return str(path)


def op_summary_table(prof, soc=None, npu_from=None) -> str:
    """The summary as a text table: host avg µs and GFLOP/s, the estimate, and, for ops with an
    NPU-view recording, the simulated time per call (labelled with the SoC)."""
    rows = op_summary(prof, soc, npu_from)
    sims = sorted({r["simulated_soc"] for r in rows if "simulated_soc" in r})
    sim_head = f"{sims[0]} us" if len(sims) == 1 else "simulated us"
    sw = max(len(sim_head), 12) + 2 if sims else 0
    head = (f"{'op':<28}{'block_dim':>10}{'calls':>7}{'host avg us':>13}{'host GFLOP/s':>14}"
            f"{'est. NPU us':>13}{'est. bound':>12}" + (f"{sim_head:>{sw}}" if sims else ""))
    lines = [head, "-" * len(head)]
    for r in rows:
        line = (f"{r['op_name']:<28}{r['block_dim']:>10}{r['calls']:>7}{r['host_avg_us']:>13.1f}"
                f"{r['host_gflops']:>14.1f}{r['est_npu_us']:>13.2f}{r['est_bound_pipe']:>12}")
        if sims:
            line += (f"{_sim_us(r):>{sw}.2f}" if "simulated_soc" in r else f"{'-':>{sw}}")
        lines.append(line)
    lines.append(f"(host = measured on this CPU by the emulator; est. = {ESTIMATE_LABEL})")
    if sims:
        lines.append(f"({', '.join(sims)} us = msprof's aicore_time(us) per call (aiv_time(us) "
                     f"of a vector-only op), from rt.npu's deterministic pipe model)")
    return "\n".join(lines)
