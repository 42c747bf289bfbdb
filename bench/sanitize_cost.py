"""What the kernel sanitizer costs: FlashAttention (forward) under `asc.sanitize(check_all=True)`
(memcheck, racecheck, initcheck, synccheck) against the same launch unsanitized, compiled.

    python -m bench.sanitize_cost                     # B1 N8 S2048 D64 float16
    python -m bench.sanitize_cost --seq 512 --profile 25   # + the sanitizer's top 25 costs

Runs the two in turn, --repeats pairs (an unsanitized launch, then a sanitized one: the machine's
load hits both alike), after one warm-up of each, and prints the medians of their wall-clock
times and of the process's CPU times (all threads: on a machine other jobs load, the wall-clock
times grow with the load, the CPU ones much less), the medians of the per-pair ratios, the errors
found (0 expected) and, with --profile, one more sanitized run's hottest functions (cProfile of
every sanitized range on the core pool's workers, merged: with several workers their times add
up to more than the wall time).
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
from kernels.flash_attention import flash_attention


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--repeats", type=int, default=3, help="pairs of runs (median)")
    ap.add_argument("--profile", type=int, default=0, help="print the top N functions")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    shape = (a.batch, a.heads, a.seq, a.head_dim)
    q, k, v = (rng.standard_normal(shape).astype(a.dtype) for _ in range(3))
    errors = []

    def plain():
        flash_attention(q, k, v, causal=a.causal)

    def sanitized():
        with asc.sanitize(check_all=True) as san:
            flash_attention(q, k, v, causal=a.causal)
        errors.append(san.report.count())

    def timed(fn):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - t0, time.process_time() - c0
    plain()                                             # compile both variants
    sanitized()
    runs = [(timed(plain), timed(sanitized)) for _ in range(max(a.repeats, 1))]
    med = lambda xs: float(np.median(xs))               # noqa: E731
    t_plain, c_plain = med([p[0] for p, _ in runs]), med([p[1] for p, _ in runs])
    t_san, c_san = med([s[0] for _, s in runs]), med([s[1] for _, s in runs])
    r_wall, r_cpu = med([s[0] / p[0] for p, s in runs]), med([s[1] / p[1] for p, s in runs])
    print(f"FlashAttention B{a.batch} N{a.heads} S{a.seq} D{a.head_dim} {a.dtype}"
          f"{' causal' if a.causal else ''} ({len(runs)} pairs, medians)")
    print(f"  unsanitized (compiled):            {t_plain * 1e3:9.1f} ms wall  "
          f"{c_plain * 1e3:9.1f} ms CPU")
    print(f"  sanitized --check-all:             {t_san * 1e3:9.1f} ms wall  "
          f"{c_san * 1e3:9.1f} ms CPU")
    print(f"  ratio (median of the pairs): wall {r_wall:.1f}x, CPU {r_cpu:.1f}x (the CPU time of "
          f"the process, all threads: what the other jobs of a loaded machine do not add to)   "
          f"errors found: {max(errors)}")
    if a.profile:
        stats = _profile_workers()
        try:
            sanitized()
        finally:
            binaries.Binary._run_sanitized = stats["orig"]
        if stats["profiles"]:
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
