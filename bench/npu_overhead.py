"""What the NPU view's recording costs (the goal: at most 1.5x the unprofiled run for
FlashAttention at S=2048 compiled; no measurable cost with the view off).

    python -m bench.npu_overhead [--seq 2048] [--repeats 5]

Runs kernels.flash_attention (B1 N8 S D64 fp32, compiled, DeviceArrays) alternately without a
profiler, under `rt.profile()` and under `rt.profile(npu=True)`, and prints the medians and the
ratios against the unprofiled run measured in the same process. Decoding and simulating the
recording is not part of a launch (it happens when a view is asked for) and is timed separately.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import rt
from bench._timing import interleaved_medians
from kernels.flash_attention import flash_attention_with_stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    rt.ensure_device()
    rng = np.random.default_rng(0)
    q, k, v = (rt.to_device(rng.standard_normal((1, a.heads, a.seq, 64)).astype(np.float32))
               for _ in range(3))
    stream = rt.Stream()

    def run():
        flash_attention_with_stats(q, k, v, stream=stream)
        stream.synchronize()

    last = []

    def profiled(npu):
        def f():
            with rt.profile(npu=npu) as p:
                run()
            last[:] = [p]
        return f

    run()                                    # compile / load, warm caches
    # interleaved, so the machine's noise hits all three alike
    p, c, r = interleaved_medians([run, profiled(False), profiled(True)], a.repeats, warmup=1)
    t0 = time.perf_counter()
    npu_run = last[0].npu_runs()[-1]
    n = sum(len(b) for b in npu_run.blocks)
    t1 = time.perf_counter()
    tl = npu_run.timeline
    t2 = time.perf_counter()
    print(f"FlashAttention B1 N{a.heads} S{a.seq} D64 fp32, compiled, median of {a.repeats}:")
    print(f"  no profiler              {p * 1e3:9.1f} ms   1.00x")
    print(f"  rt.profile()             {c * 1e3:9.1f} ms   {c / p:.2f}x")
    print(f"  rt.profile(npu=True)     {r * 1e3:9.1f} ms   {r / p:.2f}x   (bound: 1.5x)")
    print(f"  recorded {n} instructions in {len(npu_run.blocks)} blocks; decoding took "
          f"{t1 - t0:.1f} s, simulating {t2 - t1:.1f} s -> {tl.us:.1f} us simulated on {tl.soc}")
    return 0 if r / p <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
