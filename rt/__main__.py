"""`python -m rt info [--demo]`: an `npu-smi info`-like table of the emulated devices.

Shows each device's SoC, HBM used/total (`aclrtGetMemInfo`), the AI Core utilization of the
recent launches and the DVPP utilization (busiest unit, `rt.dvpp.utilization`) in this process
(0% in a fresh process; `--demo` first runs a small workload on device 0 so the numbers move).
"""
from __future__ import annotations

import argparse
import importlib
import sys

import numpy as np

import rt

_launch = importlib.import_module("rt.launch")


class _DemoKernel:
    """Each block applies exp to its slice of a device buffer (numpy releases the GIL);
    an `rt.KernelBinary` with no SyncAll and no counters."""
    name = "demo_exp"
    needs_all_resident = False
    shuffle_blocks = False
    counters: tuple = ()
    last_counters: dict = {}

    def run_blocks(self, first, last, block_dim, args):
        buf, = args
        v = rt.memory.device_view(buf.ptr, buf.nbytes).view(np.float32)
        per = -(-v.size // block_dim)
        for b in range(first, last):
            seg = v[b * per:(b + 1) * per]
            np.negative(seg, out=seg)
            np.exp(seg, out=seg)                            # stays in (0, 1]


def _demo():
    rt.set_device(0)
    buf = rt.to_device(np.zeros(8 << 20, np.float32))       # 32 MiB
    s = rt.Stream()
    for _ in range(8):
        rt.launch(_DemoKernel(), 2 * _launch.core_pool().n, (buf,), s)
    s.synchronize()
    return buf


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("ascend-emu")
    except Exception:                                           # noqa: BLE001 - not installed
        return "0.1.0"


def info_table() -> str:
    """The table: one row per emulated device."""
    n = rt.device_count()
    cores = _launch.core_pool().n
    rows = []
    for i in range(n):
        rt.set_device(i)
        free, total = rt.get_mem_info()
        rows.append((i, rt.get_soc_name(), _launch.utilization(i), (total - free) >> 20,
                     total >> 20, rt.dvpp.utilization(i)))
    sep = ("+--------+------------------+----------+---------------+---------------------------+"
           "----------+")
    title, right = f"npu-smi (ascend-emu {_version()}, rt)", f"CPU core workers: {cores}"
    out = ["+" + "-" * (len(sep) - 2) + "+",
           f"| {title}{right:>{len(sep) - 4 - len(title)}} |",
           sep,
           "| NPU    | Name             | Health   | AICore(%)     | HBM-Usage(MB)             |"
           " DVPP(%)  |",
           sep.replace("-", "=")]
    for i, name, util, used, total, dvpp in rows:
        out.append(f"| {i:<6} | {name:<16} | {'OK':<8} | {util:<13.1f} | "
                   f"{f'{used} / {total}':<25} | {dvpp:<8.1f} |")
    out.append(sep)
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rt", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    info = sub.add_parser("info", help="device table (like npu-smi info)")
    info.add_argument("--demo", action="store_true",
                      help="run a small workload on device 0 first (non-zero utilization)")
    args = parser.parse_args(argv)
    if args.cmd not in (None, "info"):
        parser.print_help()
        return 2
    rt.init()
    try:
        keep = _demo() if getattr(args, "demo", False) else None
        print(info_table())
        del keep
    finally:
        rt.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
