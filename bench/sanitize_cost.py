"""What the kernel sanitizer costs: FlashAttention (forward) under `asc.sanitize(check_all=True)`
(memcheck, racecheck, initcheck, synccheck) against the same launch unsanitized, compiled.

    python -m bench.sanitize_cost                     # B1 N8 S2048 D64 float16
    python -m bench.sanitize_cost --seq 512 --profile 25   # + the sanitizer's top 25 costs

Prints the unsanitized time (median of --repeats warm runs), the sanitized time (one run: it
analyses every block's trace, so it is not repeated), their ratio, the same for the process's
CPU time (all threads: on a machine other jobs load, the wall-clock ratio grows with the load,
the CPU one much less), the errors found (0 expected)
and, with --profile, the sanitized run's hottest functions (cProfile of every sanitized range
on the core pool's workers, merged: with two workers their times add up to about twice the wall
time).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import threading
import time

import numpy as np

import ascendc as asc
from ascendc import binaries
from bench._timing import median
from kernels.flash_attention import flash_attention


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, help="print the top N functions")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    shape = (a.batch, a.heads, a.seq, a.head_dim)
    q, k, v = (rng.standard_normal(shape).astype(a.dtype) for _ in range(3))

    def plain():
        flash_attention(q, k, v, causal=a.causal)
    plain()                                             # compile
    t_plain = median(plain, a.repeats)
    c_plain = median(plain, a.repeats, warmup=0, clock=time.process_time)
    with asc.sanitize(check_all=True) as san:           # compile the sanitized variant (one
        flash_attention(q[:, :1], k[:, :1], v[:, :1], causal=a.causal)     # head: same tiling)
    stats = _profile_workers() if a.profile else None
    try:
        with asc.sanitize(check_all=True) as san:
            t0, c0 = time.perf_counter(), time.process_time()
            flash_attention(q, k, v, causal=a.causal)
            t_san = time.perf_counter() - t0
            c_san = time.process_time() - c0
    finally:
        if stats is not None:
            binaries.Binary._run_sanitized = stats["orig"]
    print(f"FlashAttention B{a.batch} N{a.heads} S{a.seq} D{a.head_dim} {a.dtype}"
          f"{' causal' if a.causal else ''}")
    print(f"  unsanitized (compiled, median of {a.repeats}): {t_plain * 1e3:9.1f} ms")
    print(f"  sanitized --check-all (one run):          {t_san * 1e3:9.1f} ms")
    print(f"  ratio: {t_san / t_plain:.1f}x   errors found: {san.report.count()}")
    print(f"  CPU time of the process (all threads): unsanitized {c_plain * 1e3:.1f} ms, "
          f"sanitized {c_san * 1e3:.1f} ms, ratio {c_san / c_plain:.1f}x (what the other "
          f"jobs of a loaded machine do not add to)")
    if stats is not None and stats["profiles"]:
        out = io.StringIO()
        st = pstats.Stats(stats["profiles"][0], stream=out)
        for p in stats["profiles"][1:]:
            st.add(p)
        st.sort_stats("tottime").print_stats(a.profile)
        print(out.getvalue())
    return 0


def _profile_workers() -> dict:
    """Profile every sanitized range (they run on the core pool's threads)."""
    orig = binaries.Binary._run_sanitized
    state = {"orig": orig, "profiles": []}
    lock = threading.Lock()

    def run(self, *args, **kw):
        prof = cProfile.Profile()
        prof.enable()
        try:
            return orig(self, *args, **kw)
        finally:
            prof.disable()
            with lock:
                state["profiles"].append(prof)
    binaries.Binary._run_sanitized = run
    return state


if __name__ == "__main__":
    raise SystemExit(main())
