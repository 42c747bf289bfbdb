"""The speed table of the edit-run loop against its goals, measured in one run.

    python -m bench.summary                  # every row (the two slow ones from the record)
    python -m bench.summary --quick          # fewer repeats
    python -m bench.summary --slow-rows      # also time the main job and the full test suite
                                             # on a fresh clone (minutes), and record them
    python -m bench.summary --rows add,compile_add      # a subset (keys: ROWS)
    python -m bench.summary --no-docs        # leave docs/performance.md and the record alone

Each row reuses its bench: FlashAttention (bench.flash_attention's inputs and torch peer; ours
through the public numpy wrapper, as a user calls it), kernels.matmul (bench.kernels_matmul:
ours on DeviceArrays vs numpy `@` with its BLAS threads as before the first launch), kernels.add
(bench.kernels_add: numpy in/out vs np.add(x, y), DeviceArrays vs np.add(out=)), cold compiles
(bench.compile_times: a fresh process with an empty kernel cache, ASCENDC_CACHE_DIR; the
primitives' Numba cache as it is). Ratios are peer time / ours (>= 1: ours faster), medians of
interleaved repeats. The main job and the suite take minutes: without --slow-rows their last
recorded measurement (bench/summary_recorded.json: value, date, source) is printed, marked
"recorded", not measured in this run.

Every run also records the rows it measured at their default sizes in
bench/summary_recorded.json and rewrites the generated table of docs/performance.md from that
record (every row with its value, date and the command that measures it); rows measured at
other sizes (--fa-seq, --matmul-n, --add-n) are printed only.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

RECORD = pathlib.Path(__file__).with_name("summary_recorded.json")
REPO = pathlib.Path(__file__).resolve().parents[1]
PERFORMANCE_DOC = REPO / "docs" / "performance.md"


@dataclass(frozen=True)
class Spec:
    """A row of the table: what it measures, its goal (`op` threshold, in `unit`)."""
    what: str
    op: str             # ">=" (a ratio to reach) or "<=" (seconds to stay under)
    goal: float
    unit: str           # "x" (ratio) or "s" (seconds)


#: The rows in the table's order (key -> Spec); --rows picks keys.
ROWS = {
    "fa": Spec("kernels.flash_attention B1 N8 S2048 D64 fp32 vs torch SDPA (4-D)", ">=", 1.0,
               "x"),
    "fa_causal": Spec("same, causal", ">=", 1.0, "x"),
    "matmul": Spec("kernels.matmul 2048^3 fp32 (DeviceArray) vs numpy @", ">=", 0.9, "x"),
    "add": Spec("kernels.add 16M fp32 (numpy in, numpy out) vs np.add", ">=", 1.0, "x"),
    "add_device": Spec("kernels.add 16M fp32 on DeviceArrays vs np.add(out=)", ">=", 1.5, "x"),
    "compile_add": Spec("cold compile to first result, small vector kernel (kernels.add)",
                        "<=", 3.0, "s"),
    "compile_matmul": Spec("cold compile to first result, cube matmul (kernels.matmul)", "<=",
                           15.0, "s"),
    "compile_adv_mm": Spec("cold compile to first result, adv.Matmul (pyasc tutorial 03)",
                           "<=", 15.0, "s"),
    "compile_fa": Spec("cold compile to first result, FlashAttention", "<=", 15.0, "s"),
    "main_job": Spec("main job from a fresh clone (README command 1, without pip), total",
                     "<=", 120.0, "s"),
    "suite": Spec("full test suite on a fresh clone", "<=", 480.0, "s"),
}
SLOW = ("main_job", "suite")


@dataclass
class Result:
    key: str
    value: float | None          # ratio or seconds; None: failed / not available
    note: str = ""               # how it was measured (peer times, shapes)
    recorded: str = ""           # "" if measured in this run, else "<date>, <source>"


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v / 60:.1f} min" if v >= 120 else f"{v:.1f} s"


def is_met(r: Result) -> str:
    s = ROWS[r.key]
    if r.value is None:
        return "?"
    ok = r.value >= s.goal if s.op == ">=" else r.value <= s.goal
    return "yes" if ok else "no"


def format_table(results, context: str = "") -> str:
    """The markdown table (what | now | goal | met?) with recorded rows marked, then notes."""
    lines = ["| what | now | goal | met? |", "|---|---|---|---|"]
    notes = []
    for r in results:
        s = ROWS[r.key]
        now = fmt_value(r.value, s.unit)
        if r.recorded:
            now += " (recorded)"
            notes.append(f"- {s.what}: RECORDED, not measured in this run ({r.recorded})")
        elif r.note:
            notes.append(f"- {s.what}: {r.note}")
        lines.append(f"| {s.what} | {now} | {s.op} {fmt_value(s.goal, s.unit)} | {is_met(r)} |")
    return "\n".join(lines + ([""] + notes if notes else []) + ([context] if context else []))


# -- measurements -------------------------------------------------------------------------------
def _quiet(fn, *a, **k):
    """Run a bench function with its own printout captured (the table is ours)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


def measure_fa(causal: bool, seq: int, repeats: int, interpret: bool = False) -> Result:
    from bench._timing import interleaved_medians
    from bench.flash_attention import make_inputs, torch_sdpa
    from kernels.flash_attention import flash_attention
    q, k, v = make_inputs(1, 8, seq, 64, np.float32, "BNSD")
    tfn = torch_sdpa(q, k, v, "BNSD", 8, causal)
    key = "fa_causal" if causal else "fa"
    if tfn is None:
        return Result(key, None, "torch is not installed (pip install -e '.[bench]')")
    ours = lambda: flash_attention(q, k, v, causal=causal, interpret=interpret)  # noqa: E731
    ours()                                                     # compile / cache load
    t = interleaved_medians({"torch": tfn, "ours": ours}, repeats)
    return Result(key, t["torch"] / t["ours"],
                  f"S={seq}: ours {t['ours'] * 1e3:.1f} ms (numpy in/out), torch SDPA "
                  f"{t['torch'] * 1e3:.1f} ms")


def measure_matmul(n: int, repeats: int, blas_threads: int) -> Result:
    from bench.kernels_matmul import case
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), np.float32)
    b = rng.standard_normal((n, n), np.float32)
    r, r1 = _quiet(case, "float32", a, b, a, b, repeats, blas_threads)
    return Result("matmul", r, f"n={n}; vs numpy on 1 BLAS thread: {r1:.2f}x")


def measure_add(n: int, repeats: int) -> list:
    from bench.kernels_add import measure
    m = measure(n, repeats)
    how = "mapped, no copies" if m["mapped"] else "copied in and back"
    return [Result("add", m["np.add(x, y)"] / m["kernels.add (numpy in, numpy out)"],
                   f"n={n}: ours {m['kernels.add (numpy in, numpy out)'] * 1e3:.2f} ms (numpy "
                   f"arguments {how}), np.add(x, y) {m['np.add(x, y)'] * 1e3:.2f} ms"),
            Result("add_device", m["np.add(x, y, out=)"] / m["kernels.add (DeviceArray, stream)"],
                   f"n={n}: ours {m['kernels.add (DeviceArray, stream)'] * 1e3:.2f} ms, "
                   f"np.add(out=) {m['np.add(x, y, out=)'] * 1e3:.2f} ms")]


COMPILE_SNIPPETS = {"compile_add": "add", "compile_matmul": "matmul",
                    "compile_adv_mm": "tut03_mm", "compile_fa": "flash_attn"}


def measure_compile(key: str) -> Result:
    from bench import compile_times
    with tempfile.TemporaryDirectory() as d:
        got = compile_times.run(compile_times.SNIPPETS[COMPILE_SNIPPETS[key]], d)
    secs = got[0] if isinstance(got, tuple) else got       # (seconds, breakdown) or seconds
    return Result(key, secs, "fresh process, empty kernel cache; seconds beyond importing "
                             "numpy+numba")


def fresh_clone(dest: str) -> str:
    """A clone of this repository's committed HEAD in `dest` (no caches, as a user gets it)."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), dest], check=True)
    return dest


def timed_in_clone(cmd, clone: str) -> tuple[float | None, str]:
    """Seconds `cmd` takes in `clone` with empty kernel and Numba caches (None if it failed)."""
    env = dict(os.environ, PYTHONPATH=clone, ASCENDC_CACHE_DIR=os.path.join(clone, ".kc"),
               NUMBA_CACHE_DIR=os.path.join(clone, ".nc"))
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t
    return (secs if r.returncode == 0 else None), (r.stdout + r.stderr)[-400:]


def measure_slow(key: str) -> Result:
    cmd = ([sys.executable, "-m", "bench.flash_attention"] if key == "main_job" else
           [sys.executable, "-m", "pytest", "-q", "tests"])
    with tempfile.TemporaryDirectory() as d:
        secs, tail = timed_in_clone(cmd, fresh_clone(os.path.join(d, "clone")))
    load = os.getloadavg()[0]
    if secs is not None:
        save_record(key, secs, f"python -m bench.summary --slow-rows, load average "
                               f"{load:.1f} at the end")
    return Result(key, secs, f"measured now (load average {load:.1f} at the end)"
                  if secs is not None else f"failed: {tail}")


def load_record(path=None) -> dict:
    try:
        return json.loads(pathlib.Path(path or RECORD).read_text())
    except (OSError, ValueError):
        return {}


def save_record(key: str, seconds: float, source: str, path=None) -> None:
    rec = load_record(path)
    rec[key] = {"seconds": round(seconds, 1), "date": datetime.date.today().isoformat(),
                "source": source}
    pathlib.Path(path or RECORD).write_text(json.dumps(rec, indent=2) + "\n")


def recorded(key: str, path=None) -> Result:
    rec = load_record(path).get(key)
    if rec is None:
        return Result(key, None, recorded="no measurement recorded: run with --slow-rows")
    return Result(key, rec["seconds"], recorded=f"{rec['date']}, {rec['source']}")


# -- docs/performance.md ------------------------------------------------------------------------
DOC_BEGIN = ("<!-- bench.summary: the table below is generated; python -m bench.summary "
             "rewrites it -->")
DOC_END = "<!-- end of the bench.summary table -->"
FA_SEQ, MATMUL_N, ADD_N = 2048, 2048, 16 * 1024 * 1024     # the sizes the rows name


def row_command(key: str, quick: bool = False) -> str:
    """The command that measures row `key` alone."""
    return ("python -m bench.summary" + (" --slow-rows" if key in SLOW else "")
            + (" --quick" if quick else "") + f" --rows {key}")


def at_default_size(key: str, a) -> bool:
    """Whether row `key` was measured at the size its description names."""
    return {"fa": a.fa_seq == FA_SEQ, "fa_causal": a.fa_seq == FA_SEQ,
            "matmul": a.matmul_n == MATMUL_N, "add": a.add_n == ADD_N,
            "add_device": a.add_n == ADD_N}.get(key, True)


def _met_of(key: str, values) -> str:
    marks = {is_met(Result(key, v)) for v in values}
    return marks.pop() if len(marks) == 1 else "partly"


def render_performance(record: dict) -> str:
    """The generated part of docs/performance.md from a record (key -> {value or seconds, optional
    range [low, high], date, optional command, source}): one line per row of ROWS with its value,
    goal, met?, date and the command that measures it, then each row's source."""
    lines = [DOC_BEGIN, "", "| what | value | goal | met? | date | command |",
             "|---|---|---|---|---|---|"]
    notes = []
    for key, s in ROWS.items():
        e = record.get(key)
        goal = f"{s.op} {fmt_value(s.goal, s.unit)}"
        if e is None:
            lines.append(f"| {s.what} | not recorded | {goal} | ? | - | `{row_command(key)}` |")
            continue
        values = e.get("range") or [e.get("value", e.get("seconds"))]
        now = " to ".join(fmt_value(v, s.unit) for v in values)
        cmd = e.get("command") or row_command(key)
        lines.append(f"| {s.what} | {now} | {goal} | {_met_of(key, values)} | {e['date']} | "
                     f"`{cmd}` |")
        if e.get("source"):
            notes.append(f"- {s.what}: {e['source']}")
    return "\n".join(lines + [""] + notes + ["", DOC_END])


def write_performance(record: dict, path=None) -> None:
    """Replace the generated part of docs/performance.md (the text around it is kept; a file
    without it gets it appended)."""
    path = pathlib.Path(path or PERFORMANCE_DOC)
    text = path.read_text() if path.exists() else "# Performance\n"
    table = render_performance(record)
    if DOC_BEGIN in text and DOC_END in text:
        head, rest = text.split(DOC_BEGIN, 1)
        text = head + table + rest.split(DOC_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + table + "\n"
    path.write_text(text)


def record_results(results, a, machine: str, path=None) -> list:
    """Store the rows of `results` this run measured at their default sizes in the record (value,
    today's date, the command, the row's note and `machine`); returns their keys. The slow rows
    are stored by measure_slow itself."""
    rec = load_record(path)
    keys = []
    for r in results:
        if r.recorded or r.value is None or r.key in SLOW or not at_default_size(r.key, a):
            continue
        rec[r.key] = {"value": round(r.value, 3), "date": datetime.date.today().isoformat(),
                      "command": row_command(r.key, a.quick),
                      "source": "; ".join(x for x in (r.note, machine) if x)}
        keys.append(r.key)
    if keys:
        pathlib.Path(path or RECORD).write_text(json.dumps(rec, indent=2) + "\n")
    return keys


def blas_threads() -> int:
    """numpy's BLAS threads as they are before any launch limits them."""
    from threadpoolctl import ThreadpoolController
    return max([lib["num_threads"] for lib in ThreadpoolController().info()
                if lib["user_api"] == "blas"] or [1])


def machine_line(blas: int) -> str:
    """CPUs, emulated cores, BLAS and torch threads, and the load average now."""
    try:
        import torch
        torch_threads = f"torch threads {torch.get_num_threads()}"
    except ImportError:
        torch_threads = "no torch"
    from rt.launch import default_core_count
    return (f"{os.cpu_count()} CPUs, {default_core_count()} emulated cores, numpy BLAS threads "
            f"{blas} before the first launch (1 after it: the launcher limits BLAS), "
            f"{torch_threads}; load average {os.getloadavg()[0]:.1f} at the end")


def context_line(blas: int) -> str:
    return (f"(ratios: peer time / ours, medians of interleaved repeats; {machine_line(blas)}; "
            f"{datetime.datetime.now():%Y-%m-%d %H:%M})")


def run_rows(keys, a) -> list:
    """Measure the rows `keys` (in ROWS' order) with the options of `a`."""
    import rt
    rt.ensure_device()          # a row alone (e.g. --rows matmul) makes streams at once
    blas = blas_threads()
    out = []
    for key in [k for k in ROWS if k in keys]:
        if key in ("fa", "fa_causal"):
            out.append(measure_fa(key == "fa_causal", a.fa_seq, a.repeats))
        elif key == "matmul":
            out.append(measure_matmul(a.matmul_n, a.repeats, blas))
        elif key == "add":
            out += [r for r in measure_add(a.add_n, a.repeats * 2 + 1) if r.key in keys]
        elif key == "add_device":
            if "add" not in keys:
                out += [r for r in measure_add(a.add_n, a.repeats * 2 + 1) if r.key in keys]
        elif key in COMPILE_SNIPPETS:
            out.append(measure_compile(key))
        else:
            out.append(measure_slow(key) if a.slow_rows else recorded(key))
        print(f"  measured {key}", file=sys.stderr, flush=True)
    a.blas = blas
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (2 instead of 5)")
    ap.add_argument("--slow-rows", action="store_true",
                    help="time the main job and the full suite on a fresh clone (minutes)")
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated keys of ROWS")
    ap.add_argument("--no-docs", action="store_true",
                    help="do not record the measured rows nor rewrite docs/performance.md "
                         "(--slow-rows still records its two rows)")
    ap.add_argument("--fa-seq", type=int, default=FA_SEQ)
    ap.add_argument("--matmul-n", type=int, default=MATMUL_N)
    ap.add_argument("--add-n", type=int, default=ADD_N)
    a = ap.parse_args(argv)
    keys = [k for k in a.rows.split(",") if k]
    bad = [k for k in keys if k not in ROWS]
    if bad:
        ap.error(f"--rows must be keys of {', '.join(ROWS)}, got {', '.join(bad)}")
    a.repeats = 2 if a.quick else 5
    results = run_rows(keys, a)
    print(format_table(results, context_line(a.blas)))
    if not a.no_docs:
        record_results(results, a, machine_line(a.blas))
        write_performance(load_record())
    return 0


if __name__ == "__main__":
    sys.exit(main())
