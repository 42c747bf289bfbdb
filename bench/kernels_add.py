"""kernels.add.add on 16M fp32 vs np.add (same data, same process), plus compile timings.

    python -m bench.kernels_add [--n 16777216] [--repeats 9]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import rt
from kernels.add import add


def median_time(fn, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args(argv)
    x = np.random.rand(a.n).astype(np.float32)
    y = np.random.rand(a.n).astype(np.float32)
    out = np.empty_like(x)
    t = time.perf_counter()
    add(x[:1024], y[:1024])
    first = time.perf_counter() - t
    s = rt.Stream()
    dx, dy = rt.to_device(x), rt.to_device(y)

    def ours_device():
        dz = add(dx, dy, stream=s)
        s.synchronize()
        dz.free()

    ours_device()
    t_np = median_time(lambda: np.add(x, y, out=out), a.repeats)
    t_dev = median_time(ours_device, a.repeats)
    t_host = median_time(lambda: add(x, y), a.repeats)
    gb = 3 * x.nbytes / 1e9
    print(f"first call (compile or disk-cache load + run, 1K elements): {first:.2f} s")
    print(f"{'variant':<34}{'median ms':>10}{'GB/s':>8}{'vs np.add':>11}")
    for name, tm in [("np.add(out=)", t_np), ("kernels.add (DeviceArray, stream)", t_dev),
                     ("kernels.add (numpy in/out, copies)", t_host)]:
        print(f"{name:<34}{tm * 1e3:>10.2f}{gb / tm:>8.1f}{t_np / tm:>10.2f}x")


if __name__ == "__main__":
    main()
