"""msOpProf-style outputs of a simulated `Timeline` (docs/design.md, the NPU view).

- `write_trace`: `npu_trace.json` for Perfetto / chrome://tracing. One process per core that ran
  a block, grouped as msOpProf groups them: the cube cores first ("AIC 0", "AIC 1", ...), then
  the vector cores ("AIV 0", ...) (`Timeline.core_kinds`; a core that runs both kinds of pipes,
  on a coupled SoC or with mix=False, is "AI Core N"); each process's label gives msOpProf's name
  (`coreN.cubecore0`, `coreN.veccoreM`, `coreN`). One thread per pipe of the core's kind with
  msOpProf's lane names (tid = the index in PIPES: SCALAR, VECTOR, CUBE, MTE1, MTE2, MTE3,
  FIXPIPE; an AIC shows SCALAR, CUBE, MTE1, MTE2, FIXPIPE, an AIV SCALAR, VECTOR, MTE2, MTE3),
  one complete event per instruction (ts/dur in µs at the model's clock; dur is the time the
  instruction held its pipe: a copy's start-up latency runs after its pipe is free, so it is in
  the args, `latency_cycles` and `done_us`, not in dur; the SCALAR lane also
  shows the scalar unit's issue slot of every other instruction, which is part of its busy
  time), a flow arrow from each set_flag to the wait_flag it released, one from each GM
  hand-off's producer copy to the copy of the other core it released (`Timeline.handoffs`), and
  in a MIX launch replayed from its instances' own streams one from the end of each
  cross_core_set_flag (or ib_set) to the start of each wait it released, on another core (cat
  "simulated,crossflag"). Each process's labels say how the launch was replayed
  (`Timeline.view`): a MIX kernel's own AIC and AIV streams, or the as-if AIC/AIV split of one
  stream per block (a kernel that is not MIX, split as a compiler would split it).
  Times start at the first instruction: the launch overhead is not drawn
  (`otherData.launch_us`). `otherData.l2` holds the run's L2 counters (`l2_summary`).
- `write_pipe_utilization`: `PipeUtilization.csv`, per core and pipe busy time / total time.
- `code_exe` / `write_code_exe` / `format_top_lines`: cycles per kernel source line (the
  hot-spot view of msOpProf's `*_code_exe.csv`).
- `op_summary_row`: msprof's simulated op_summary columns (with `l2_cache_hit_rate`).
- `write_all` also writes `roofline.png` and `pipe_utilization.png` (rt/npu/plots.py) when
  matplotlib is installed.
"Total" is the Timeline's `total_cycles` (makespan plus the launch overhead, i.e. `tl.us`) on
every core that ran a block. Everything written is labelled "simulated" with the SoC name.
Standard library only (the PNGs need matplotlib, the `bench` extra).
"""
from __future__ import annotations

import csv
import json
import os
import pathlib

from .sim import AI_CORE, AIC, AIV, KIND_PIPES, PIPES, Timeline
from .xcore import P2P

__all__ = ["trace_events", "write_trace", "write_pipe_utilization", "code_exe", "write_code_exe",
           "format_top_lines", "op_summary_row", "OP_SUMMARY_COLUMNS", "write_all",
           "TRACE_FILE", "PIPE_UTIL_FILE", "CODE_EXE_FILE", "ROOFLINE_FILE", "PIPE_CHART_FILE",
           "msprof_core_name", "l2_summary"]

TRACE_FILE, PIPE_UTIL_FILE, CODE_EXE_FILE = "npu_trace.json", "PipeUtilization.csv", "code_exe.csv"
ROOFLINE_FILE, PIPE_CHART_FILE = "roofline.png", "pipe_utilization.png"
_AIC_PIPES = ("CUBE", "MTE1", "MTE2", "FIXPIPE")     # aic_* columns
_AIV_PIPES = ("VECTOR", "SCALAR", "MTE2", "MTE3")    # aiv_* columns
_CUBE_SIDE = ("CUBE", "MTE1", "FIXPIPE")             # a core that ran these did cube work


def _label(tl: Timeline, soc_name: str | None) -> str:
    return f"simulated {soc_name or tl.soc}"


def _us(tl: Timeline, cycles: float) -> float:
    return cycles / tl.clock_hz * 1e6


def _used_cores(tl: Timeline) -> list:
    """Cores that ran at least one instruction, in index order."""
    return sorted(c for c, b in tl.busy.items() if any(v > 0 for v in b.values()))


def _args(ins, cycles: float) -> dict:
    a = {"instr": ins.name, "block": ins.block, "bytes": ins.bytes, "repeats": ins.repeats,
         "elements": ins.elements, "macs": ins.macs, "src": ins.src,
         "cycles": round(cycles, 3)}
    if ins.path:
        a["path"] = ins.path
    if ins.shape:
        a["shape"] = list(ins.shape)
    dep = ins.set_flag or ins.wait_flag
    if dep:
        a["flag"] = f"{dep[0]}->{dep[1]} id={dep[2]!r}"
    if ins.barrier:
        a["barrier"] = ins.barrier
    if ins.cross:
        kind, x, y = ins.cross
        a["cross"] = (f"{kind} block_idx={x} event_id={y}" if kind.startswith("ib_") else
                      f"{kind} flag_id={x} mode_id={y}")
    return a


_VIEW_TEXT = {"streams": "MIX kernel: each instance's own stream",
              "as-if split": "as-if AIC/AIV split of one stream per block (not a MIX kernel)"}


_KIND_ORDER = {AIC: 0, AIV: 1, AI_CORE: 2}
_KIND_TEXT = {AIC: "cube core", AIV: "vector core", AI_CORE: "cube and vector pipes on one core"}


def msprof_core_name(tl: Timeline, core: int) -> str:
    """msOpProf's name of `core`: `coreN.cubecore0` for an AIC, `coreN.veccoreM` for an AIV
    (a MIX launch pairs AIC N with the first AIV of AI Core N; an AIV-only launch puts AIV j on
    AI Core j // 2 as veccore j % 2), `coreN` for a core that runs both kinds of pipes."""
    kind = tl.core_kinds.get(core, AI_CORE)
    nth = int(tl.core_name(core).rsplit(" ", 1)[-1]) if core in tl.core_kinds else core
    if kind == AIC:
        return f"core{nth}.cubecore0"
    if kind == AIV:
        per = (tl.roles.count(AIV) if tl.view == "streams" else 1 if tl.mix else 2) or 1
        return f"core{nth // per}.veccore{nth % per}"
    return f"core{nth}"


def _lanes(tl: Timeline, core: int) -> list:
    """The pipes shown for `core`: its kind's, plus any other pipe it ran work on."""
    own = set(KIND_PIPES[tl.core_kinds.get(core, AI_CORE)])
    own |= {p for p, v in tl.busy.get(core, {}).items() if v > 0}
    return [p for p in PIPES if p in own]


def _held(tl: Timeline) -> list:
    """Cycles each record held its pipe: end - start, except a copy's latency after its pipe
    was released (`Timeline.held`; records of an older Timeline without it: end - start)."""
    if len(tl.held) == len(tl.records):
        return tl.held
    return [end - start for _i, _c, _p, start, end in tl.records]


def l2_summary(tl: Timeline) -> dict:
    """The run's L2 counters (bytes of GM copies, `Timeline` doc) and the read hit rate."""
    return {"hit_bytes": tl.l2_hit_bytes, "miss_bytes": tl.l2_miss_bytes,
            "write_bytes": tl.l2_write_bytes, "writeback_bytes": tl.l2_writeback_bytes,
            "hit_rate": tl.l2_hit_ratio}


def trace_events(tl: Timeline, soc_name: str | None = None) -> list:
    """The trace's events (see the module docstring)."""
    label = _label(tl, soc_name)
    ev = []
    used = sorted(_used_cores(tl), key=lambda c: (_KIND_ORDER[tl.core_kinds.get(c, AI_CORE)], c))
    for order, c in enumerate(used):
        kind = tl.core_kinds.get(c, AI_CORE)
        ev += [{"ph": "M", "pid": c, "tid": 0, "name": "process_name",
                "args": {"name": f"{tl.core_name(c)} ({label})"}},
               {"ph": "M", "pid": c, "tid": 0, "name": "process_sort_index",
                "args": {"sort_index": order}},
               {"ph": "M", "pid": c, "tid": 0, "name": "process_labels",
                "args": {"labels": f"{label}; {_KIND_TEXT[kind]}; "
                                   f"msOpProf {msprof_core_name(tl, c)}" +
                                   (f"; {_VIEW_TEXT[tl.view]}" if tl.view else "")}}]
        for pipe in _lanes(tl, c):
            tid = PIPES.index(pipe)
            ev += [{"ph": "M", "pid": c, "tid": tid, "name": "thread_name",
                    "args": {"name": pipe}},
                   {"ph": "M", "pid": c, "tid": tid, "name": "thread_sort_index",
                    "args": {"sort_index": tid}}]
    tid = {p: i for i, p in enumerate(PIPES)}
    held = _held(tl)
    for n, (ins, c, pipe, start, end) in enumerate(tl.records):
        a = _args(ins, held[n])
        if end - start > held[n]:           # a copy whose latency ran after its pipe was free
            a["latency_cycles"] = round(end - start - held[n], 3)
            a["done_us"] = _us(tl, end)
        ev.append({"ph": "X", "name": ins.name, "cat": "simulated", "pid": c, "tid": tid[pipe],
                   "ts": _us(tl, start), "dur": _us(tl, held[n]), "args": a})
    for ins, c, start, end in tl.issues:
        ev.append({"ph": "X", "name": f"issue {ins.name}", "cat": "simulated,issue", "pid": c,
                   "tid": tid["SCALAR"], "ts": _us(tl, start), "dur": _us(tl, end - start),
                   "args": {"instr": ins.name, "to_pipe": ins.pipe, "src": ins.src}})
    for n, (si, wi) in enumerate(tl.flows):
        s, w = tl.records[si], tl.records[wi]
        if s[0].cross:          # between cores: from the set's end (the latency is the gap)
            kind, x, y = s[0].cross
            what = f"ib {x}/{y}" if kind == "ib_set" else "Matmul message" if y == P2P else \
                f"cross-core flag {x} mode {y}"
            name = f"{what} {tl.core_name(s[1])}->{tl.core_name(w[1])}"
            cat, ts = "simulated,crossflag", s[4]
        else:
            a, b, fid = s[0].set_flag
            name, cat, ts = f"flag {a}->{b} id={fid!r}", "simulated,flag", s[3]
        ev.append({"ph": "s", "id": n, "name": name, "cat": cat, "pid": s[1],
                   "tid": tid[s[2]], "ts": _us(tl, ts)})
        ev.append({"ph": "f", "bp": "e", "id": n, "name": name, "cat": cat,
                   "pid": w[1], "tid": tid[w[2]], "ts": _us(tl, w[3])})
    for n, (pi, ci) in enumerate(tl.handoffs, start=len(tl.flows)):
        p, c = tl.records[pi], tl.records[ci]
        name = f"GM hand-off {tl.core_name(p[1])}->{tl.core_name(c[1])}"
        ev.append({"ph": "s", "id": n, "name": name, "cat": "simulated,handoff", "pid": p[1],
                   "tid": tid[p[2]], "ts": _us(tl, p[3] + held[pi])})
        ev.append({"ph": "f", "bp": "e", "id": n, "name": name, "cat": "simulated,handoff",
                   "pid": c[1], "tid": tid[c[2]], "ts": _us(tl, c[3])})
    return ev


def write_trace(tl: Timeline, path, soc_name: str | None = None) -> pathlib.Path:
    """Write the Chrome/Perfetto trace of `tl` to `path` (soc_name defaults to tl.soc)."""
    path = pathlib.Path(path)
    doc = {"traceEvents": trace_events(tl, soc_name), "displayTimeUnit": "ns",
           "otherData": {"simulated": True, "soc": soc_name or tl.soc, "clock_hz": tl.clock_hz,
                         "n_cores": tl.n_cores, "total_us": tl.us,
                         "launch_us": _us(tl, tl.launch_cycles),
                         "mix": tl.mix, "view": _VIEW_TEXT.get(tl.view, ""),
                         "roles": list(tl.roles),
                         "l2": l2_summary(tl),
                         "core_kinds": {tl.core_name(c): msprof_core_name(tl, c)
                                        for c in _used_cores(tl)},
                         "cores": "AIC N: a cube core, AIV N: a vector core (msOpProf "
                                  "coreN.cubecoreM / coreN.veccoreM); AI Core N: cube and "
                                  "vector pipes on one core (coupled SoC, or not split)"}}
    path.write_text(json.dumps(doc))
    return path


def _fmt(x: float) -> str:
    return f"{x:.9g}"


def pipe_utilization(tl: Timeline) -> list:
    """Rows (core, pipe, busy cycles, total cycles): each used core, then "all" per pipe."""
    cores = _used_cores(tl)
    rows = [(c, p, tl.busy[c].get(p, 0.0), tl.total_cycles) for c in cores for p in PIPES]
    rows += [("all", p, sum(tl.busy[c].get(p, 0.0) for c in cores),
              tl.total_cycles * len(cores)) for p in PIPES]
    return rows


def write_pipe_utilization(tl: Timeline, path) -> pathlib.Path:
    """`PipeUtilization.csv`: core, pipe, busy_time(us), total_time(us), ratio (busy / total),
    the same in cycles, and the simulated SoC; the "all" rows sum the used cores."""
    path = pathlib.Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["core", "pipe", "busy_time(us)", "total_time(us)", "ratio", "busy_cycles",
                    "total_cycles", "soc"])
        for core, pipe, busy, total in pipe_utilization(tl):
            w.writerow([core, pipe, _fmt(_us(tl, busy)), _fmt(_us(tl, total)),
                        _fmt(busy / total if total else 0.0), _fmt(busy), _fmt(total),
                        _label(tl, None)])
    return path


def code_exe(tl: Timeline) -> list:
    """One dict per kernel source line: src ("file:line"), file, line, cycles per pipe
    (`<PIPE>_cycles`; a non-SCALAR instruction's issue slot counts to SCALAR), total_cycles,
    total_time(us), share (of all busy cycles), instructions (how many the line issued, per
    block), names; sorted by total cycles, most expensive first."""
    lines: dict = {}

    def row(src):
        r = lines.get(src)
        if r is None:
            file, _, line = src.rpartition(":") if src else ("", "", "")
            if not line.isdigit():
                file, line = src or "?", ""
            r = lines[src] = {"src": src or "?", "file": file, "line": int(line) if line else 0,
                              **{f"{p}_cycles": 0.0 for p in PIPES}, "instructions": 0,
                              "names": set()}
        return r

    held = _held(tl)
    for n, (ins, _c, pipe, _start, _end) in enumerate(tl.records):
        r = row(ins.src)
        r[f"{pipe}_cycles"] += held[n]
        r["instructions"] += 1
        r["names"].add(ins.name)
    for ins, _c, start, end in tl.issues:
        row(ins.src)["SCALAR_cycles"] += end - start
    grand = sum(sum(b.values()) for b in tl.busy.values())
    out = []
    for r in lines.values():
        total = sum(r[f"{p}_cycles"] for p in PIPES)
        r.update({"total_cycles": total, "total_time(us)": _us(tl, total),
                  "share": total / grand if grand else 0.0,
                  "names": " ".join(sorted(r["names"]))})
        out.append(r)
    out.sort(key=lambda r: (-r["total_cycles"], r["src"]))
    return out


_CODE_COLUMNS = (["src", "file", "line", "total_cycles", "total_time(us)", "share"] +
                 [f"{p}_cycles" for p in PIPES] + ["instructions", "names"])


def write_code_exe(tl: Timeline, path) -> pathlib.Path:
    """`code_exe.csv`: the rows of `code_exe(tl)` with the simulated SoC in a last column."""
    path = pathlib.Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(_CODE_COLUMNS + ["soc"])
        for r in code_exe(tl):
            w.writerow([_fmt(r[k]) if isinstance(r[k], float) else r[k] for k in _CODE_COLUMNS]
                       + [_label(tl, None)])
    return path


def _short(file: str, keep: int = 2) -> str:
    parts = pathlib.PurePath(file).parts
    return os.path.join("…", *parts[-keep:]) if len(parts) > keep else file


def format_top_lines(tl: Timeline, n: int = 10) -> str:
    """A terminal table of the `n` most expensive source lines of `tl`."""
    rows = code_exe(tl)[:n]
    head = ("file", "line", "total µs", "share %", "dominant pipe")
    body = [(_short(r["file"]), str(r["line"] or ""), f"{r['total_time(us)']:.3f}",
             f"{100 * r['share']:.1f}",
             max(PIPES, key=lambda p: r[f"{p}_cycles"])) for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 or i == 4 else f"{{:>{w}}}"
                    for i, w in enumerate(widths))
    title = f"top {len(rows)} source lines by simulated busy time ({_label(tl, None)})"
    return "\n".join([title, fmt.format(*head)] + [fmt.format(*b) for b in body])


#: the keys of `op_summary_row`, in msprof's order (op_summary.csv's simulated columns)
OP_SUMMARY_COLUMNS = ("aicore_time(us)", "aic_total_cycles", "aic_mac_ratio", "aic_mte1_ratio",
                      "aic_mte2_ratio", "aic_fixpipe_ratio", "aiv_time(us)", "aiv_total_cycles",
                      "aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio",
                      "l2_cache_hit_rate")


def op_summary_row(tl: Timeline, soc_name: str | None = None) -> dict:
    """msprof's simulated op_summary columns for `tl`, named as msprof names them.

    aic_* are over the AIC cores that ran (`Timeline.core_kinds`), from their CUBE (mac), MTE1,
    MTE2 and FIXPIPE busy cycles; aiv_* over the AIV cores, from VECTOR, SCALAR, MTE2 and MTE3.
    Cores that run both kinds of pipes ("AI Core": a coupled SoC, or mix=False) are split by the
    work: aic_* over those that ran CUBE, MTE1 or FIXPIPE work, aiv_* over those that ran VECTOR
    or MTE3 work or no cube work (a core with both counts on both sides, its MTE2 in both).
    `*_time(us)` is the simulated kernel time (`tl.us`, launch included), `*_total_cycles` the
    total cycles summed over those cores, a ratio the pipe's busy cycles over them. A side with
    no cores has zeros. `l2_cache_hit_rate` is the share of the GM bytes read that hit L2, over
    the whole launch (msprof's L2 "Hit Rate": hits / requests; here counted in bytes, and for
    both core kinds together). The row holds only msprof's keys; `soc_name` (default tl.soc) is
    the SoC the caller labels them with."""
    del soc_name                                    # the row carries msprof's keys only
    used = _used_cores(tl)
    kinds = {c: tl.core_kinds.get(c, AI_CORE) for c in used}
    both = [c for c in used if kinds[c] == AI_CORE]
    cube_work = [c for c in both if any(tl.busy[c].get(p, 0.0) > 0 for p in _CUBE_SIDE)]
    aic = [c for c in used if kinds[c] == AIC or c in cube_work]
    aiv = [c for c in used if kinds[c] == AIV or (kinds[c] == AI_CORE and (
        c not in cube_work or any(tl.busy[c].get(p, 0.0) > 0 for p in ("VECTOR", "MTE3"))))]

    def side(cores, pipes):
        total = tl.total_cycles * len(cores)
        ratios = [sum(tl.busy[c].get(p, 0.0) for c in cores) / total if total else 0.0
                  for p in pipes]
        return (tl.us if cores else 0.0), total, ratios

    t, cyc, (mac, mte1, mte2, fix) = side(aic, _AIC_PIPES)
    vt, vcyc, (vec, scalar, vmte2, mte3) = side(aiv, _AIV_PIPES)
    return dict(zip(OP_SUMMARY_COLUMNS, (t, cyc, mac, mte1, mte2, fix, vt, vcyc, vec, scalar,
                                         vmte2, mte3, tl.l2_hit_ratio)))


def _have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401  (the PNGs are optional: the bench extra)
    except ImportError:
        return False
    return True


def write_all(tl: Timeline, out_dir, soc_name: str | None = None, model=None) -> dict:
    """Write npu_trace.json, PipeUtilization.csv and code_exe.csv into `out_dir` (created if
    missing), and when matplotlib is installed roofline.png and pipe_utilization.png
    (rt/npu/plots.py; `model` the PipeModel for the roofline's ceilings, default
    `pipe_model(tl.soc)`); returns {"trace": path, "pipe_utilization": path,
    "code_exe": path} plus "roofline" and "pipe_chart" when the PNGs were written."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"trace": write_trace(tl, out / TRACE_FILE, soc_name),
             "pipe_utilization": write_pipe_utilization(tl, out / PIPE_UTIL_FILE),
             "code_exe": write_code_exe(tl, out / CODE_EXE_FILE)}
    if _have_matplotlib():
        from .model import pipe_model
        from .plots import roofline_point, write_pipe_chart_png, write_roofline_png
        model = model or pipe_model(tl.soc)
        paths["roofline"] = write_roofline_png([roofline_point(tl, soc_name or tl.soc)],
                                               out / ROOFLINE_FILE, model, soc_name)
        paths["pipe_chart"] = write_pipe_chart_png(tl, out / PIPE_CHART_FILE, soc_name)
    return paths
