"""msprof-like per-operator summary of a profile: measured host times next to the NPU estimate.

Columns: op name, block_dim, calls, total/avg/min/max µs (measured on this CPU), GFLOP/s (cube
MACs x 2 over measured time), estimated NPU µs per call and bound pipe (labelled estimates, from
`rt.estimate`).
"""
from __future__ import annotations

import csv

from .estimate import ESTIMATE_LABEL, estimate
from .soc import get_soc

COLUMNS = ("op_name", "block_dim", "calls", "total_us", "avg_us", "min_us", "max_us", "gflops",
           "est_npu_us", "est_bound_pipe")


def op_summary(prof, soc=None) -> list[dict]:
    """One row per (kernel name, block_dim) over the profile's kernel records."""
    soc = soc or get_soc()
    groups: dict = {}
    for r in list(prof.records):
        if r.kind == "kernel":
            groups.setdefault((r.name, r.block_dim), []).append(r)
    rows = []
    for (name, bd), rs in sorted(groups.items()):
        d = [r.duration_us for r in rs]
        macs = sum(r.args.get("cube_macs", 0) + r.args.get("cube_macs_fp32", 0) for r in rs)
        est = [estimate(r.args, soc, bd) for r in rs]
        bound = max(est, key=lambda e: e["estimated_us"])["bound_pipe"] if est else "-"
        rows.append({
            "op_name": name, "block_dim": bd, "calls": len(rs), "total_us": sum(d),
            "avg_us": sum(d) / len(d), "min_us": min(d), "max_us": max(d),
            "gflops": 2 * macs / (sum(d) * 1e3) if sum(d) else 0.0,
            "est_npu_us": sum(e["estimated_us"] for e in est) / len(est),
            "est_bound_pipe": bound,
        })
    return rows


def write_op_summary_csv(prof, path, soc=None) -> str:
    rows = op_summary(prof, soc)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    return str(path)


def op_summary_table(prof, soc=None) -> str:
    rows = op_summary(prof, soc)
    head = (f"{'op':<28}{'block_dim':>10}{'calls':>7}{'avg us':>12}{'GFLOP/s':>10}"
            f"{'est. NPU us':>13}{'est. bound':>12}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['op_name']:<28}{r['block_dim']:>10}{r['calls']:>7}{r['avg_us']:>12.1f}"
                     f"{r['gflops']:>10.1f}{r['est_npu_us']:>13.2f}{r['est_bound_pipe']:>12}")
    lines.append(f"(est. = {ESTIMATE_LABEL})")
    return "\n".join(lines)
