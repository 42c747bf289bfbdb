"""Where a MIX FlashAttention launch's CPU time goes between its cores: per call of the forward
and of the backward (its two or three launches), on DeviceArrays, compiled mode.

    python -m bench.fa_handoffs [--seq 2048] [--repeats 5] [--checked]
    python -m bench.fa_handoffs --paired [--repeats 7] [--switch futex|pin]
    python -m bench.fa_handoffs --perf [--repeats 5]     (Linux perf: where the CPU time goes)

For each: the median wall time and process CPU time (all threads), and from the last run the
context switches of the process's threads (/proc/self/task/*/status: voluntary = a thread
blocked, involuntary = preempted), the cross-core calls that reached the launch's Python side
(rt.crossflags: sets, waits, native waits that blocked there), the futex sleeps and wakes of
native waits, the live threads, and of the call's launches with cross-core flags how many ran
with deferred wakes (pinned slots; "deferring" k/n: a launch left unpinned shows there).
Unchecked launches whose flags stay inside groups count
sets and untaken waits in native code, so their sets and waits columns are 0; a wait that finds
its counter at 0 sleeps on a futex (Linux), and reaches Python ("blocked") only after sleeping
long or without futexes (ASCEND_EMU_FUTEX=0 shows the launch without them; ASCEND_EMU_PIN_GROUPS=0
without each slot's threads pinned to one CPU); `--checked` shows the
launch counting every flag (the counter limit and GM order need its lock). B1 N8 D64 fp32
BNSD. Run it on a quiet machine for absolute numbers; the counts do not depend on load much.

`--paired`: per round, one forward and one backward with futexes off (ASCEND_EMU_FUTEX=0: the
blocking waits in rt.crossflags) and on, and torch's SDPA forward and backward (autograd, the
backward alone timed, as bench.flash_attention times it) next to them; medians of the rounds'
wall times, the on/off speed-up, the ratios to torch (torch's time / ours: 1 = as fast) and the
process CPU time of our calls. `--switch pin` pairs
ASCEND_EMU_PIN_GROUPS=0 (each slot's threads left to the OS) with the default (pinned to one
CPU) instead; `--switch lazy` pairs ASCEND_EMU_LAZY_WAKE=0 (a set wakes the thread it releases
at once) with the default (pinned groups: the wake deferred until the setter sleeps or ends).

`--perf`: `perf record` of this process during `--repeats` forwards, then as many backwards, with
the compiled code's symbols (a /tmp/perf-PID.map written from Numba's JIT engine after warm-up,
bench/fa_perf.py), summed by primitive group: the table of docs/performance.md ("Where a MIX
FlashAttention launch's CPU time goes"). Primitives the kernel's code inlines count as its glue.
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np

import rt
import rt.crossflags as CF
from kernels.flash_attention import flash_attention_with_stats
from kernels.flash_attention_backward import flash_attention_backward
from rt.crossnative import CTL_DEFER
from rt.futex import futex_available
from rt.launch import core_pool
from rt.mixlaunch import slot_cpus

CALLS = {"set_flag": 0, "wait_flag": 0, "wait_native": 0}
LAUNCHES = []           # the launches of the current measurement (their futex counts)


def _keep_launches():
    orig = CF.CrossCoreLaunch.__init__

    def init(self, *a, **k):
        orig(self, *a, **k)
        LAUNCHES.append(self)
    CF.CrossCoreLaunch.__init__ = init


def futex_counts():
    """(futex sleeps, futex wakes, native waits that went on blocking in rt.crossflags, launches
    whose sets deferred their wakes (pinned slots), launches) of the launches made since the
    last call."""
    out = [int(sum(sum(int(L.nat.glob[k]) for k in ks) for L in LAUNCHES))
           for ks in ((1,), (2, 5), (3,))]
    out += [sum(int(L.instances[0].ctl[CTL_DEFER]) for L in LAUNCHES if L.instances),
            len(LAUNCHES)]
    LAUNCHES.clear()
    return out


def _count(name):
    orig = getattr(CF.CrossCoreLaunch, name)

    def counted(self, *a, **k):
        CALLS[name] += 1
        return orig(self, *a, **k)
    setattr(CF.CrossCoreLaunch, name, counted)


def context_switches():
    """(voluntary, involuntary) context switches of this process's live threads."""
    vol = inv = 0
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        inv += int(line.split()[1])
        except FileNotFoundError:
            pass
    return vol, inv


def measure(fn, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        for k in CALLS:
            CALLS[k] = 0
        futex_counts()
        c0 = context_switches()
        t0, p0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - p0)
        c1 = context_switches()
        fx = futex_counts()
    return (float(np.median(walls)) * 1e3, float(np.median(cpus)) * 1e3, c1[0] - c0[0],
            c1[1] - c0[1], dict(CALLS), fx, threading.active_count())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--checked", action="store_true", help="checked launches (ASCENDC_CHECKED)")
    ap.add_argument("--switch", choices=("futex", "pin", "lazy"), default="futex",
                    help="what --paired turns off and on")
    ap.add_argument("--paired", action="store_true",
                    help="futexes off / on alternating, next to torch SDPA")
    ap.add_argument("--perf", action="store_true",
                    help="perf record the calls; CPU samples by primitive group")
    a = ap.parse_args(argv)
    rt.ensure_device()
    for name in CALLS:
        _count(name)
    _keep_launches()
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((1, 8, a.seq, 64)).astype(np.float32) for _ in range(4))
    dq, dk, dv, ddo = (rt.to_device(x) for x in (q, k, v, do))
    stream = rt.Stream()
    opts = {"checked": True} if a.checked else {}

    def fwd():
        r = flash_attention_with_stats(dq, dk, dv, stream=stream, **opts)
        stream.synchronize()
        return r
    o, mx, sm = fwd()

    def bwd():
        flash_attention_backward(ddo, dq, dk, dv, o, mx, sm, stream=stream, **opts)
        stream.synchronize()
    bwd()
    if a.paired:
        return paired(fwd, bwd, q, k, v, do, a)
    if a.perf:
        from bench.fa_perf import profile
        return profile([("forward", fwd), ("backward", bwd)], a.repeats,
                       f"MIX FlashAttention B1 N8 S{a.seq} D64 fp32")
    print(f"MIX FlashAttention B1 N8 S{a.seq} D64 fp32, {'checked' if a.checked else 'unchecked'}"
          f", futex {'on' if futex_available() else 'off'}, slots "
          f"{'pinned' if slot_cpus(core_pool().n) else 'not pinned'}"
          f", {core_pool().n} emulated cores, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; medians of {a.repeats}")
    print(f"  {'':9}{'wall ms':>9}{'cpu ms':>9}{'vol cs':>8}{'invol cs':>9}{'sets':>7}"
          f"{'waits':>7}{'blocked':>8}{'sleeps':>8}{'wakes':>7}{'threads':>8}{'deferring':>10}")
    for name, fn in (("forward", fwd), ("backward", bwd)):
        wall, cpu, vol, inv, calls, fx, threads = measure(fn, a.repeats)
        print(f"  {name:9}{wall:9.0f}{cpu:9.0f}{vol:8d}{inv:9d}{calls['set_flag']:7d}"
              f"{calls['wait_flag']:7d}{calls['wait_native']:8d}{fx[0]:8d}{fx[1]:7d}"
              f"{threads:8d}{f'{fx[3]}/{fx[4]}':>10}")


def _sdpa_steps(q, k, v, do):
    """(forward(), backward()) of torch's SDPA on copies of the data; each returns its wall s."""
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    tq, tk, tv = (torch.from_numpy(x.copy()).requires_grad_() for x in (q, k, v))
    tdo = torch.from_numpy(do.copy())
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def forward():
        with torch.inference_mode():
            t0 = time.perf_counter()
            sdpa(tq, tk, tv)
            return time.perf_counter() - t0

    def backward():
        for t in (tq, tk, tv):
            t.grad = None
        out = sdpa(tq, tk, tv)
        t0 = time.perf_counter()
        out.backward(tdo)
        return time.perf_counter() - t0
    forward(), backward()
    return forward, backward


def paired(fwd, bwd, q, k, v, do, a):
    def timed(fn, mode):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu[mode].append(time.process_time() - c0)
        return time.perf_counter() - t0
    cpu = {"fwd off": [], "fwd on": [], "bwd off": [], "bwd on": []}
    t_fwd, t_bwd = _sdpa_steps(q, k, v, do)
    runs = {key: [] for key in ("fwd off", "fwd on", "bwd off", "bwd on", "torch fwd",
                                "torch bwd")}
    var = {"futex": "ASCEND_EMU_FUTEX", "pin": "ASCEND_EMU_PIN_GROUPS",
           "lazy": "ASCEND_EMU_LAZY_WAKE"}[a.switch]
    saved = os.environ.get(var)
    loads = [os.getloadavg()[0]]
    try:
        for _ in range(a.repeats):
            for mode in ("off", "on"):
                os.environ[var] = "0" if mode == "off" else "1"
                runs[f"fwd {mode}"].append(timed(fwd, f"fwd {mode}"))
                runs[f"bwd {mode}"].append(timed(bwd, f"bwd {mode}"))
            runs["torch fwd"].append(t_fwd())
            runs["torch bwd"].append(t_bwd())
            loads.append(os.getloadavg()[0])
    finally:
        if saved is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = saved
    med = {key: float(np.median(x)) * 1e3 for key, x in runs.items()}
    print(f"MIX FlashAttention B1 N8 S{a.seq} D64 fp32 unchecked, {os.cpu_count()} CPUs, load "
          f"{min(loads):.1f}-{max(loads):.1f}; medians of {a.repeats} rounds (wall ms)")
    print(f"  {'':9}{a.switch + ' off':>10}{a.switch + ' on':>10}{'speed-up':>10}{'torch':>8}"
          f"{'off/torch':>10}{'on/torch':>10}{'cpu off':>9}{'cpu on':>8}")
    for name in ("fwd", "bwd"):
        off, on, tt = med[f"{name} off"], med[f"{name} on"], med[f"torch {name}"]
        c_off, c_on = (float(np.median(cpu[f"{name} {m}"])) * 1e3 for m in ("off", "on"))
        print(f"  {name:9}{off:10.0f}{on:10.0f}{off / on:9.2f}x{tt:8.0f}{tt / off:9.2f}x"
              f"{tt / on:9.2f}x{c_off:9.0f}{c_on:8.0f}")


if __name__ == "__main__":
    main()
