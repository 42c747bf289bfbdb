"""Where a launch's CPU time goes, by primitive group, from Linux `perf` samples of this process.

    (used by `python -m bench.fa_handoffs --perf`)

Numba's compiled code is anonymous memory to perf; `write_perf_map` names it in
/tmp/perf-<pid>.map (perf's map format for JIT code) from the symbols Numba's JIT engine defined:
each compiled primitive that the kernel calls (rather than inlines) and each of the kernel's own
functions. `profile` runs each workload under `perf record -p <this pid>`, reads the samples
with `perf script` and sums them by group (`GROUPS`, first match wins): a sample in a primitive
counts for that primitive, a sample in code a function inlined counts for the function.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter

# (group, pattern on "<dso> <symbol>"), first match wins; mangled Numba names carry
# module and function as <len><name> parts
GROUPS = [
    ("mmad (gemm_zn, gemm_nz, pack_zn)", r"8cubegemm|4cube5_mmad|4cube4mmad"),
    ("data_copy GM -> L1 (Nd2Nz)", r"8datacopy\d+_?nd2nz|data_copy_nd2nz"),
    ("data_copy GM <-> UB (count, pad, blocks)", r"8datacopy|7memops|11stream_copy"),
    ("load_data L1 -> L0A/L0B", r"4cube\d+_?load|4cube10_transpose|4cube\d+load_data"),
    ("fixpipe L0C -> GM", r"4cube\d+_?fix"),
    ("vector ops (exp, max, sub, mul, add, brcb, cast, ...)",
     r"6vector|8vecloops|7vecbase|6reduce|4cast|7compare|6minmax"),
    ("queue / tensor bookkeeping (alloc, enque, deque, free, views)",
     r"5queue|6tensor|4pipe|NRT_incref|NRT_decref|_change_dtype|10autotensor"),
    ("cross-core flags (set, wait, futex calls)", r"9crosscore|lang9crosscore"),
    ("intra-core set_flag / wait_flag", r"4sync"),
    ("per-call locate / bound checks, trace hooks", r"8movecore|10visibility|5trace"),
    ("kernel glue (the kernel's own code, inlined prims)", r"ascendc_gen_"),
    ("other compiled code", r"\[JIT\]"),
    ("OS kernel: context switches", r"kallsyms\] (finish_task_switch|__schedule|schedule|"
     r"_raw_spin_unlock_irqrestore|__switch_to|exit_to_user_mode|pick_next|dequeue_task|"
     r"enqueue_task|try_to_wake_up|ttwu|update_curr|psi_)"),
    ("OS kernel: futex / syscalls", r"kallsyms\] (.*futex|do_syscall|entry_SYSCALL|"
     r"syscall_exit)"),
    ("OS kernel: other", r"kallsyms"),
    ("Python interpreter", r"libpython|python3"),
    ("libc", r"libc\.so|libc-"),
]


def write_perf_map() -> int:
    """/tmp/perf-<pid>.map from every symbol Numba's JIT engine defined (size: up to the next
    one); the number of symbols."""
    from numba.core.registry import cpu_target
    engine = cpu_target.target_context.codegen()._engine
    addrs = {}
    for name in list(engine._defined_symbols):
        try:
            a = engine._ee.get_function_address(name)
        except Exception:      # noqa: BLE001 - a data symbol, or one not materialised
            continue
        if a:
            addrs[a] = name
    items = sorted(addrs.items())
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for i, (a, name) in enumerate(items):
            size = min(items[i + 1][0] - a, 1 << 22) if i + 1 < len(items) else 1 << 16
            out.write(f"{a:x} {size:x} {name}\n")
    return len(items)


def group_of(dso: str, sym: str) -> str:
    text = f"{dso} {sym}"
    for name, pat in GROUPS:
        if re.search(pat, text):
            return name
    return "other"


def samples(data: str) -> Counter:
    """{group: samples} of a perf.data file."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym,dso"], capture_output=True,
                         text=True, check=False).stdout
    c = Counter()
    for line in out.splitlines():
        m = re.match(r"\s*[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$", line)
        if m:
            c[group_of(m.group(2), m.group(1))] += 1
    return c


def profile(workloads, repeats: int, title: str) -> None:
    """Run each (name, fn) `repeats` times under `perf record` and print its samples by group,
    with the process CPU time per call."""
    if shutil.which("perf") is None:
        print("perf is not installed: nothing to profile")
        return
    n = write_perf_map()
    print(f"{title}: perf samples by primitive group ({n} compiled symbols mapped), load "
          f"{os.getloadavg()[0]:.1f}, {repeats} calls each")
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in workloads:
            data = os.path.join(tmp, f"{name}.data")
            rec = subprocess.Popen(["perf", "record", "-q", "-p", str(os.getpid()), "-o", data],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)        # perf attaches to the threads
            c0 = time.process_time()
            for _ in range(repeats):
                fn()
            cpu = (time.process_time() - c0) / repeats * 1e3
            rec.send_signal(signal.SIGINT)
            rec.wait()
            c = samples(data)
            total = sum(c.values()) or 1
            print(f"  {name}: {cpu:.0f} ms process CPU per call, {total} samples")
            for g, k in c.most_common():
                print(f"    {g:<64}{100 * k / total:6.1f} %  {cpu * k / total:7.1f} ms")
