"""Cold compile vs warm start (Numba disk cache) of each kernel, each in a fresh process, and
where a cold compile's time goes.

    python -m bench.compile_times                  # fresh / cold / warm per kernel
    python -m bench.compile_times --breakdown add  # + typing / lowering / LLVM of each compile
    python -m bench.compile_times --no-fresh       # cold and warm only, primitives' cache as is

Each kernel runs three times, each in a fresh process, with a private Numba cache
(NUMBA_CACHE_DIR, so edits and runs elsewhere cannot warm or invalidate it): "fresh" with nothing
cached (a fresh clone), "cold" with the primitives cached by the fresh run but an empty kernel
cache (ASCENDC_CACHE_DIR: a new or edited kernel), "warm" loading the kernel from disk. Each
includes running the kernel once; flash_attn is the main job's default shape, so its warm figure
is the main job's warm start to its first result (beyond importing numpy and numba). Wall and
CPU seconds are both shown: on a loaded machine the CPU seconds are the comparable figure.

The breakdown attributes each second of the cold run to the innermost Numba stage running:
"front" (bytecode -> Numba IR and its rewrites), "typing" (type inference; nested compiles of
the functions a kernel calls count as their own stages), "lower" (Numba IR -> LLVM IR), "llvm"
(LLVM optimisation passes, linking and machine code), "cache" (loading and saving Numba's disk
cache), "other" (the rest: importing the kernel modules, generating the kernel's source, running
it). "fns" is how many functions Numba compiled.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SNIPPETS = {
    "add": "import numpy as np; from kernels.add import add; "
           "add(np.ones(100, np.float32), np.ones(100, np.float32))",
    "softmax": "import numpy as np; from kernels.softmax import softmax; "
               "softmax(np.ones((4, 40), np.float32))",
    "layernorm": "import numpy as np; from kernels.norm import layernorm; "
                 "layernorm(np.ones((4, 40), np.float32), np.ones(40, np.float32), "
                 "np.zeros(40, np.float32))",
    "matmul": "import numpy as np; from kernels.matmul import matmul; "
              "matmul(np.ones((40, 50), np.float32), np.ones((50, 30), np.float32))",
    # pyasc tutorial 03 (adv.Matmul, C in GM) as tests/pyasc_conformance rewrites it
    "tut03_mm": "import sys; sys.path.insert(0, 'tests/pyasc_conformance'); "
                "from test_rewritten_tutorials import test_03_matmul_mix as t; t('compiled')",
    # the main job's first result: its default shape (B1 N8 S2048 D64 fp32), kernel run included
    "flash_attn": "import numpy as np; from kernels.flash_attention import flash_attention; "
                  "q = np.ones((1, 8, 2048, 64), np.float32); flash_attention(q, q, q)",
}
TIMED = ("import time, sys; t0 = time.perf_counter(); import numba, numpy; {pre}"
         "t1 = time.perf_counter(); c1 = time.process_time(); {code}; "
         "t2 = time.perf_counter(); c2 = time.process_time(); {post}"
         "print(f'{{c2 - c1:.3f}} {{t2 - t1:.3f}}')")
BREAKDOWN_PRE = "from bench.compile_times import instrument; _asc_rep = instrument(); "
BREAKDOWN_POST = "print('BREAKDOWN', _asc_rep()); "
STAGES = ("front", "typing", "lower", "llvm", "cache", "other")


def instrument():
    """Install timers on Numba's compiler passes, its LLVM code library and its disk cache (in
    this process only); returns a function giving the seconds per stage (STAGES) so far."""
    from numba.core import codegen, event, caching

    totals = dict.fromkeys(STAGES, 0.0)
    totals["fns"] = 0
    stack = []                         # [stage, start of its current self-time slice]
    clock = time.process_time          # CPU seconds: compiles are single-threaded, and this
    t_begin = clock()                  # stays meaningful on a loaded machine

    def push(stage):
        now = clock()
        if stack:
            totals[stack[-1][0]] += now - stack[-1][1]
        stack.append([stage, now])

    def pop():
        now = clock()
        stage, t = stack.pop()
        totals[stage] += now - t
        if stack:
            stack[-1][1] = now

    class Passes(event.Listener):
        def on_start(self, ev):
            name = ev.data["name"].split(" ", 1)[0]
            push("typing" if name == "nopython_type_inference" else
                 "lower" if name in ("native_lowering", "native_parfor_lowering") else "front")

        def on_end(self, ev):
            pop()

    class Compiles(event.Listener):
        def on_start(self, ev):
            totals["fns"] += 1

        def on_end(self, ev):
            pass

    event.register("numba:run_pass", Passes())
    event.register("numba:compile", Compiles())

    def timed(cls, meth, stage):
        orig = getattr(cls, meth)

        def wrapper(*a, **k):
            push(stage)
            try:
                return orig(*a, **k)
            finally:
                pop()
        setattr(cls, meth, wrapper)

    lib = codegen.CPUCodeLibrary
    for meth in ("_optimize_functions", "_optimize_final_module", "_finalize_final_module"):
        timed(lib, meth, "llvm")
    timed(caching.Cache, "load_overload", "cache")
    timed(caching.Cache, "save_overload", "cache")

    def report():
        out = {k: round(v, 3) for k, v in totals.items()}
        out["other"] = round(clock() - t_begin -
                             sum(totals[s] for s in STAGES if s != "other"), 3)
        return json.dumps(out)
    return report


def run(code, cache, breakdown=False, numba_cache=None):
    """(wall seconds beyond importing numpy+numba, CPU seconds of the same, breakdown dict or
    None) of `code` in a fresh process with kernel cache `cache` (and Numba cache `numba_cache`
    if given); Nones if it failed."""
    env = dict(os.environ, ASCENDC_CACHE_DIR=cache)
    if numba_cache:
        env["NUMBA_CACHE_DIR"] = numba_cache
    src = TIMED.format(code=code, pre=BREAKDOWN_PRE if breakdown else "",
                       post=BREAKDOWN_POST if breakdown else "")
    r = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stderr[-2000:])
        return None, None, None
    lines = r.stdout.split("\n")
    parts = None
    for ln in lines:
        if ln.startswith("BREAKDOWN "):
            parts = json.loads(ln[len("BREAKDOWN "):])
    cpu, wall = (float(v) for v in [ln for ln in lines if ln.strip()][-1].split())
    return wall, cpu, parts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernels", nargs="*", help=f"subset of {', '.join(SNIPPETS)}")
    ap.add_argument("--breakdown", action="store_true",
                    help="time the stages (typing, lowering, LLVM, ...) of each run")
    ap.add_argument("--no-fresh", action="store_true",
                    help="skip the fresh run: cold and warm use the primitives' Numba cache as it "
                         "is (quicker; the fns column shows primitives recompiled after an edit)")
    a = ap.parse_args(argv)
    names = a.kernels or list(SNIPPETS)
    stages = "".join(f"{s:>7}" for s in STAGES) + f"{'fns':>5}" if a.breakdown else ""
    print(f"{'kernel':<11}{'run':<6}{'wall s':>8}{'cpu s':>7}" + (" |" + stages if stages else "") +
          "   (seconds beyond importing numpy+numba; stages in CPU seconds)")
    fmt = lambda v, w: f"{v:>{w}.2f}" if v is not None else f"{'failed':>{w}}"  # noqa: E731
    for name in names:
        with tempfile.TemporaryDirectory() as nc, tempfile.TemporaryDirectory() as k1, \
                tempfile.TemporaryDirectory() as k2:
            # fresh: nothing cached; cold: the primitives cached (by the fresh run), not the
            # kernel; warm: both
            runs = [("fresh", k1), ("cold", k2), ("warm", k2)][1 if a.no_fresh else 0:]
            for run_name, kc in runs:
                wall, cpu, parts = run(SNIPPETS[name], kc, a.breakdown,
                                       None if a.no_fresh else nc)
                line = f"{name:<11}{run_name:<6}{fmt(wall, 8)}{fmt(cpu, 7)}"
                if parts:
                    line += " |" + "".join(fmt(parts[s], 7) for s in STAGES) + f"{parts['fns']:>5}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
