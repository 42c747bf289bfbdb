"""The main job: profile tiled FlashAttention, forward and backward (training), against its
peers on the same data.

    python -m bench.flash_attention                       # B1 N8 S2048 D64 fp32 + a sweep of S
    python -m bench.flash_attention --seq 1024 --causal --dtype float16 --layout BSND
    python -m bench.flash_attention --mode interpret --seq 128 --sweep ""

    python -m bench.flash_attention --dtype float16 --head-dim 128   # the shape people profile
    python -m bench.flash_attention --tune    # + rank both kernels' tilings (slow cold)
    python -m bench.flash_attention --no-backward         # the forward alone
    python -m bench.flash_attention --tune-only --tune-tilings "128,1024,128;128,512,64"
    python -m bench.flash_attention --tune-only --no-tune-forward --tune-backward-tilings "64,64"

For each S: a correctness check against a float64 numpy reference, the median time on this CPU,
GFLOP/s (4*B*N*S^2*D, halved for causal), torch's scaled_dot_product_attention (4-D call, if
torch is installed) and a numpy float32 implementation on the same data, the ratios, and the
*simulated* NPU time and TFLOP/s of one extra launch recorded with `rt.profile(npu=True)` (outside
the timed runs; rt.npu's deterministic pipe model of the SoC, labelled with its name). For the
main S also the profiler's NPU *estimate*, the hot source lines and the pipe utilisation of the
simulated run. Writes trace.json (host), op_summary.csv (host columns, then msprof's simulated
ones), results.csv, gflops.png, and the simulated views of the main S (npu_trace.json,
PipeUtilization.csv, code_exe.csv, roofline.png, pipe_utilization.png; PNGs need matplotlib)
into the output folder it prints. `--tune` ranks `flash_attention_tiling_candidates` for the
main shape by simulated time (kernels/tune.py), marks the default tiling and writes tune.csv;
`--tune-tilings` ranks only the given forward tilings, `--tune-backward-tilings` only the
given backward ones, `--no-tune-forward` leaves the forward's out, `--tune-only` skips
everything else.

The backward (`--backward`, on by default; kernels/flash_attention_backward.py, a MIX kernel; the
one-pass form runs it as a prep launch (D, lse), the fused launch and, for 16-bit inputs, a cast
of dQ; the two-pass form as a dQ launch, then a dK / dV one) gets the same for each S: a check
of dq, dk, dv against the float64 reference gradients, its CPU time next to torch's SDPA
backward (autograd: the forward untimed, then `out.backward(dout)` timed; also forward +
backward), GFLOP/s (10*B*N*S^2*D, halved for causal), the simulated NPU time of all its
launches, TFLOP/s and the share of the cube's peak (fp16/bf16: 4096 MACs per cycle per AI
Core). Its simulated views of the main S go to one folder per launch (backward_prep/,
backward_fused/, backward_cast/, or backward_dq/ and backward_dkv/), `--tune` writes
tune_backward.csv.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

import ml_dtypes
import numpy as np
from threadpoolctl import threadpool_limits

import rt
from bench._timing import median
from kernels.flash_attention import (FlashAttentionTiling, flash_attention_reference,
                                     flash_attention_tiling, flash_attention_tiling_candidates,
                                     flash_attention_with_stats)
from kernels.flash_attention_backward import (FlashAttentionBackwardTiling, backward_launches,
                                              flash_attention_backward,
                                              flash_attention_backward_reference,
                                              flash_attention_backward_tiling,
                                              flash_attention_backward_tiling_candidates)
from kernels.tolerances import tolerance
from kernels.tune import format_ranking, npu_timeline, npu_timelines, tune
from rt.npu import format_top_lines, op_summary_row, pipe_busy_ratios, pipe_model
from rt.opsummary import op_summary, op_summary_table, write_op_summary_csv

KERNEL = "flash_attention_kernel"
KERNEL_BWD = "flash_attention_backward_kernel"

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def progress(i, n, label):
    w = 30
    done = int(w * i / n)
    sys.stderr.write(f"\r[{'#' * done}{'.' * (w - done)}] {i}/{n} {label:<40}")
    sys.stderr.flush()
    if i == n:
        sys.stderr.write("\n")


def make_inputs(b, n, s, d, dtype, layout, seed=0):
    rng = np.random.default_rng(seed)
    shape = {"BNSD": (b, n, s, d), "BSND": (b, s, n, d), "BSH": (b, s, n * d)}[layout]
    return [rng.standard_normal(shape).astype(np.float32).astype(dtype) for _ in range(3)]


def torch_sdpa(q, k, v, layout, n, causal):
    """torch's SDPA on 4-D (B, N, S, D) float32 copies, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)

    def bnsd(x):
        x = np.asarray(x, dtype=np.float32)
        if layout == "BNSD":
            return torch.from_numpy(np.ascontiguousarray(x))
        b, s = x.shape[:2]
        return torch.from_numpy(np.ascontiguousarray(x.reshape(b, s, n, -1).transpose(0, 2, 1, 3)))
    tq, tk, tv = bnsd(q), bnsd(k), bnsd(v)
    fn = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)  # noqa: E731
    with torch.inference_mode():
        fn()
    return fn


def to_bnsd(x, layout, n):
    """A float64 (B, N, S, D) copy of a tensor in `layout`."""
    x = np.asarray(x, dtype=np.float64)
    if layout == "BNSD":
        return x
    b, s = x.shape[:2]
    return np.ascontiguousarray(x.reshape(b, s, n, -1).transpose(0, 2, 1, 3))


def torch_sdpa_backward(q, k, v, dout, layout, n, causal, repeats):
    """(median s of SDPA's backward alone, median s of forward + backward) through autograd
    on float32 (B, N, S, D) copies, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    tq, tk, tv = (torch.from_numpy(to_bnsd(x, layout, n).astype(np.float32)).requires_grad_()
                  for x in (q, k, v))
    tdo = torch.from_numpy(to_bnsd(dout, layout, n).astype(np.float32))

    def step():
        for t in (tq, tk, tv):
            t.grad = None
        t0 = time.perf_counter()
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
        t1 = time.perf_counter()
        out.backward(tdo)
        t2 = time.perf_counter()
        return t2 - t1, t2 - t0
    step()                              # warm-up
    runs = [step() for _ in range(repeats)]
    return float(np.median([r[0] for r in runs])), float(np.median([r[1] for r in runs]))


def numpy_attention(q, k, v, layout, n, causal):
    """A straightforward float32 numpy attention (BLAS matmuls), the CPU baseline."""
    def bnsd(x):
        x = np.asarray(x, dtype=np.float32)
        if layout == "BNSD":
            return x
        b, s = x.shape[:2]
        return np.ascontiguousarray(x.reshape(b, s, n, -1).transpose(0, 2, 1, 3))
    qq, kk, vv = bnsd(q), bnsd(k), bnsd(v)
    scale = np.float32(1 / math.sqrt(qq.shape[-1]))

    def fn():
        s = np.matmul(qq, kk.transpose(0, 1, 3, 2)) * scale
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
        s -= s.max(-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(-1, keepdims=True)
        return np.matmul(s, vv)
    return fn


def case_options(a):
    """The launch options of every case: layout, heads, causal, the --tiling, the mode."""
    tiling = (FlashAttentionTiling(*map(int, a.tiling.split(","))) if a.tiling else None)
    return dict(layout=a.layout, head_num=a.heads if a.layout == "BSH" else None,
                causal=a.causal, tiling=tiling, interpret=(a.mode == "interpret"))


def flops_of(a, s):
    return 4.0 * a.batch * a.heads * s * s * a.head_dim * (0.5 if a.causal else 1.0)


def run_case(a, s, prof=None, npu_prof=None):
    """One S: check, time (inside `prof` for the main S), the peers, and one extra launch inside
    `npu_prof` (an `rt.profile(npu=True)`, outside the timed runs) for the simulated columns."""
    dtype = DTYPES[a.dtype]
    q, k, v = make_inputs(a.batch, a.heads, s, a.head_dim, dtype, a.layout)
    opts = case_options(a)
    head_num = opts["head_num"]
    dq, dk, dv = (rt.to_device(x) for x in (q, k, v))
    stream = rt.Stream()

    def ours():
        o, mx, sm = flash_attention_with_stats(dq, dk, dv, stream=stream, **opts)
        stream.synchronize()
        return o, mx, sm

    t0 = time.perf_counter()
    o, _, _ = ours()
    first = time.perf_counter() - t0
    ref = flash_attention_reference(q, k, v, layout=a.layout, head_num=head_num,
                                     causal=a.causal)[0]
    rtol, atol = tolerance(dtype)
    err = float(np.max(np.abs(o.copy_to_host().astype(np.float64) - ref)))
    ok = bool(np.allclose(o.copy_to_host().astype(np.float64), ref, rtol=rtol * 10, atol=atol * 10))
    flops = flops_of(a, s)
    if prof is not None:
        with prof:
            t_ours = median(ours, a.repeats, warmup=0)
    else:
        t_ours = median(ours, a.repeats, warmup=0)
    row = {"S": s, "ours_ms": t_ours * 1e3, "ours_gflops": flops / t_ours / 1e9,
           "max_abs_err": err, "correct": ok, "first_call_s": first}
    npu_prof = npu_prof or rt.profile(npu=True)
    with npu_prof:                      # one launch recorded for the NPU view, not timed
        ours()
    runs = npu_prof.npu_runs(KERNEL)
    if runs:
        tl = runs[-1].timeline
        row.update(npu_sim_us=tl.us, npu_sim_tflops=flops / (tl.us * 1e-6) / 1e12,
                   npu_sim_soc=f"simulated {runs[-1].soc}")
    if a.backward:
        o, mx, sm = ours()
        row.update(run_backward(a, s, q, k, v, (dq, dk, dv), stream, (o, mx, sm), prof,
                                npu_prof))
    tfn = torch_sdpa(q, k, v, a.layout, a.heads, a.causal)
    if tfn is not None:
        t = median(tfn, a.repeats, warmup=0)
        row.update(torch_ms=t * 1e3, torch_gflops=flops / t / 1e9, vs_torch=t / t_ours)
    nfn = numpy_attention(q, k, v, a.layout, a.heads, a.causal)
    with threadpool_limits(limits=os.cpu_count(), user_api="blas"):  # numpy at its default
        t = median(nfn, max(1, a.repeats // 2), warmup=0)
    row.update(numpy_ms=t * 1e3, numpy_gflops=flops / t / 1e9, vs_numpy=t / t_ours)
    return row


def backward_options(a):
    f = [int(x) for x in a.backward_tiling.split(",")] if a.backward_tiling else None
    tiling = FlashAttentionBackwardTiling(f[0], f[1], bool(f[2]) if len(f) > 2 else True) \
        if f else None
    return dict(layout=a.layout, head_num=a.heads if a.layout == "BSH" else None,
                causal=a.causal, tiling=tiling, interpret=(a.mode == "interpret"))


def bwd_launches(a, s) -> list:
    """(label, folder) of the backward's launches for the main options at S = s."""
    t = backward_options(a)["tiling"] or flash_attention_backward_tiling(
        a.head_dim, DTYPES[a.dtype], s, s)
    return backward_launches(t, DTYPES[a.dtype])


def peak_flops(dtype) -> float:
    """The cube's peak FLOP/s of the simulated SoC for `dtype` inputs (rt.npu's MACs per cycle
    x 2 x clock x AI Cores)."""
    m = pipe_model(rt.get_soc().name)
    macs = m.cube_macs_per_cycle.get(np.dtype(dtype).itemsize, m.cube_macs_per_cycle[2])
    return 2.0 * macs * m.clock_hz * m.aic_cores


def check_backward(a, q, k, v, dout, got):
    """(max abs error, ok) of dq, dk, dv against the float64 reference, one head group at a
    time (a full-size float64 reference at S=8192 would not fit in memory)."""
    n = a.heads
    qq, kk, vv, dd = (to_bnsd(x, a.layout, n) for x in (q, k, v, dout))
    gg = [to_bnsd(x, a.layout, n) for x in got]
    rtol, atol = tolerance(DTYPES[a.dtype])
    err, ok = 0.0, True
    for h in range(n):
        sl = (slice(None), slice(h, h + 1))
        want = flash_attention_backward_reference(dd[sl], qq[sl], kk[sl], vv[sl], causal=a.causal)
        for g, w in zip(gg, want):
            e = float(np.max(np.abs(g[sl] - w)))
            err = max(err, e)
            ok = ok and e <= 10 * (atol + rtol * float(np.max(np.abs(w))))
    return err, ok


def run_backward(a, s, q, k, v, dev, stream, fwd, prof, npu_prof):
    """The backward columns of one S (dev: q, k, v on the device; fwd: out and stats)."""
    dtype = DTYPES[a.dtype]
    dout = make_inputs(a.batch, a.heads, s, a.head_dim, dtype, a.layout, seed=1)[0]
    ddo = rt.to_device(dout)
    opts = backward_options(a)

    def ours():
        g = flash_attention_backward(ddo, *dev, *fwd, stream=stream, **opts)
        stream.synchronize()
        return g
    t0 = time.perf_counter()
    got = [x.copy_to_host() for x in ours()]
    first = time.perf_counter() - t0
    err, ok = check_backward(a, q, k, v, dout, got)
    flops = 2.5 * flops_of(a, s)
    if prof is not None:
        with prof:
            t = median(ours, a.repeats, warmup=0)
    else:
        t = median(ours, a.repeats, warmup=0)
    row = {"bwd_ms": t * 1e3, "bwd_gflops": flops / t / 1e9, "bwd_max_abs_err": err,
           "bwd_correct": ok, "bwd_first_call_s": first}
    npu_prof = npu_prof or rt.profile(npu=True)
    with npu_prof:
        ours()
    nl = len(bwd_launches(a, s))
    runs = npu_prof.npu_runs(KERNEL_BWD)[-nl:]
    if len(runs) == nl:
        us = sum(r.timeline.us for r in runs)
        row.update(bwd_npu_sim_us=us, bwd_npu_sim_tflops=flops / (us * 1e-6) / 1e12,
                   bwd_npu_peak_share=flops / (us * 1e-6) / peak_flops(dtype))
    tb = torch_sdpa_backward(q, k, v, dout, a.layout, a.heads, a.causal, a.repeats)
    if tb is not None:
        row.update(torch_bwd_ms=tb[0] * 1e3, torch_fwd_bwd_ms=tb[1] * 1e3,
                   bwd_vs_torch=tb[0] / t)
    return row


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    xs = [r["S"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(xs, [r["ours_gflops"] for r in rows], "o-", label="ascend-emu (kernel language)")
    if all("torch_gflops" in r for r in rows):
        ax.plot(xs, [r["torch_gflops"] for r in rows], "s-", label="torch SDPA")
    ax.plot(xs, [r["numpy_gflops"] for r in rows], "^-", label="numpy (BLAS)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S")
    ax.set_ylabel("GFLOP/s (measured on this CPU)")
    ax.set_title("FlashAttention forward")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def pipe_excerpt(tl) -> str:
    """The pipe utilisation of a simulated run, one line per core kind (busy / makespan)."""
    lines = [f"pipe utilisation (busy / makespan, mean over the cores that ran; simulated "
             f"{tl.soc}):"]
    for kind, ratios in pipe_busy_ratios(tl).items():
        lines.append(f"  {kind:<8}" + "  ".join(f"{p} {100 * r:5.1f}%" for p, r in ratios.items()))
    row = op_summary_row(tl)
    lines.append("  msprof: " + "  ".join(f"{k}={row[k]:.3f}" for k in
                                          ("aic_mac_ratio", "aic_mte2_ratio", "aiv_vec_ratio",
                                           "aiv_mte2_ratio", "aiv_mte3_ratio")))
    return "\n".join(lines)


def run_tuner(a, sim):
    """--tune: rank the forward's (and with --backward the backward's) tilings for the main
    shape, print the rankings, write tune.csv (and tune_backward.csv)."""
    if a.tune_forward:
        results, default = tune_main_shape(a, lambda i, n, c: progress(i, n, f"tune {c}"[:40]))
        which = "the given" if a.tune_tilings else "all"
        print(f"\nTiling candidates ({which}) for S={a.seq} ranked by simulated time ({sim}):")
        print(format_ranking(results, mark=default, label=sim, top=a.top))
        write_tune_csv(results, default, os.path.join(a.out, "tune.csv"))
    if a.backward:
        results, default = tune_backward_main_shape(
            a, lambda i, n, c: progress(i, n, f"tune bwd {c}"[:40]))
        which = "the given" if a.tune_backward_tilings else "all"
        print(f"\nBackward tiling candidates ({which}) for S={a.seq} ranked by simulated time "
              f"(all its launches; busiest pipe: of the longest launch; {sim}):")
        print(format_ranking(results, mark=default, label=sim, top=a.top))
        write_tune_csv(results, default, os.path.join(a.out, "tune_backward.csv"),
                       ("s1_block", "s2_block", "one_pass"))


def parse_tilings(text: str) -> list:
    """--tune-tilings "128,1024,128;128,512,128" -> [FlashAttentionTiling, ...]."""
    out = []
    for part in (p for p in text.split(";") if p.strip()):
        fields = part.split(",")
        if len(fields) != 3 or not all(f.strip().isdigit() for f in fields):
            raise ValueError(f"--tune-tilings: each tiling must be s1_block,s2_block,kv_chunk, "
                             f"got tiling={part!r}")
        out.append(FlashAttentionTiling(*(int(f) for f in fields)))
    return out


def parse_backward_tilings(text: str) -> list:
    """--tune-backward-tilings "64,64;80,48,1;128,64,0" -> [FlashAttentionBackwardTiling, ...]
    (the third field, one_pass 1 or 0, defaults to 1: the one-pass form)."""
    out = []
    for part in (p for p in text.split(";") if p.strip()):
        fields = [f.strip() for f in part.split(",")]
        if len(fields) not in (2, 3) or not all(f.isdigit() for f in fields) or \
                (len(fields) == 3 and fields[2] not in ("0", "1")):
            raise ValueError(f"--tune-backward-tilings: each tiling must be "
                             f"s1_block,s2_block[,one_pass 1|0], got tiling={part!r}")
        out.append(FlashAttentionBackwardTiling(int(fields[0]), int(fields[1]),
                                                fields[2] == "1" if len(fields) == 3 else True))
    return out


def tune_main_shape(a, progress_fn=None):
    """Rank `flash_attention_tiling_candidates` (or the --tune-tilings) for the main shape by
    simulated time (one launch each, recorded with the NPU view); returns (results, the default
    tiling)."""
    dtype = DTYPES[a.dtype]
    s = a.seq
    q, k, v = make_inputs(a.batch, a.heads, s, a.head_dim, dtype, a.layout)
    opts = case_options(a)
    opts.pop("tiling")
    default = flash_attention_tiling(a.head_dim, dtype, s, s)
    cands = (parse_tilings(a.tune_tilings) if a.tune_tilings else
             flash_attention_tiling_candidates(a.head_dim, dtype, s, s))

    def run(t):
        return npu_timeline(lambda: flash_attention_with_stats(q, k, v, tiling=t, **opts), KERNEL)
    return tune(cands, run, progress=progress_fn), default


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048, help="S of the main (profiled) case")
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    ap.add_argument("--layout", choices=("BNSD", "BSND", "BSH"), default="BNSD")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--tiling", default="", help="s1_block,s2_block,kv_chunk (default: auto)")
    ap.add_argument("--backward", action=argparse.BooleanOptionalAction, default=True,
                    help="profile the backward too (default: on)")
    ap.add_argument("--backward-tiling", default="",
                    help="s1_block,s2_block[,one_pass 1|0] of the backward (default: auto)")
    ap.add_argument("--mode", choices=("compiled", "interpret"), default="compiled")
    ap.add_argument("--sweep", default="256,512,1024", help="extra S values ('' for none)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="fa_profile", help="output folder")
    ap.add_argument("--tune", action="store_true",
                    help="rank FlashAttentionTiling candidates for the main shape by simulated "
                         "time (compiles each candidate once: minutes cold)")
    ap.add_argument("--tune-tilings", default="",
                    help="with --tune: rank only these forward tilings, 's1,s2,kv;s1,s2,kv;...'")
    ap.add_argument("--tune-backward-tilings", default="",
                    help="with --tune: rank only these backward tilings, "
                         "'s1,s2[,one_pass 1|0];...'")
    ap.add_argument("--tune-forward", action=argparse.BooleanOptionalAction, default=True,
                    help="with --tune: rank the forward's tilings (default: on; "
                         "--no-tune-forward ranks the backward's alone)")
    ap.add_argument("--tune-only", action="store_true",
                    help="only the tuner (implies --tune): no CPU timing, no profile")
    ap.add_argument("--top", type=int, default=10, help="source lines / tuner rows to print")
    a = ap.parse_args(argv)
    a.tune = a.tune or a.tune_only
    os.makedirs(a.out, exist_ok=True)
    rt.ensure_device()          # rt.init + set_device(0), unless a caller (a test) already did
    if a.tune_only:
        run_tuner(a, f"simulated {rt.get_soc().name}")
        return 0
    seqs = sorted({int(x) for x in a.sweep.split(",") if x} | {a.seq})
    print(f"FlashAttention {'fwd + bwd' if a.backward else 'fwd'}  B{a.batch} N{a.heads} "
          f"D{a.head_dim} {a.dtype} {a.layout} causal={a.causal} mode={a.mode}  S in {seqs}")
    rows, prof, nprof = [], rt.profile(), rt.profile(npu=True)
    for i, s in enumerate(seqs):
        progress(i, len(seqs), f"S={s}")
        main_case = s == a.seq
        rows.append(run_case(a, s, prof if main_case else None, nprof if main_case else None))
    progress(len(seqs), len(seqs), "done")
    soc = rt.get_soc().name
    sim = f"simulated {soc}"
    prof.export_chrome_trace(os.path.join(a.out, "trace.json"))
    write_op_summary_csv(prof, os.path.join(a.out, "op_summary.csv"), npu_from=nprof)
    npu_files = nprof.export_npu(a.out, KERNEL) if nprof.npu_runs(KERNEL) else {}
    bwd_dirs = []
    launches = bwd_launches(a, a.seq)
    if a.backward and len(nprof.npu_runs(KERNEL_BWD)) >= len(launches):    # the main S's
        for index, (_, sub) in enumerate(launches, -len(launches)):
            nprof.export_npu(os.path.join(a.out, sub), KERNEL_BWD, index)
            bwd_dirs.append(sub + "/")
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        keys = sorted({k for r in rows for k in r})
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    png = plot(rows, os.path.join(a.out, "gflops.png"))
    print(f"\n{'':>6}{'-- CPU: measured on this machine --':^59}{'-- ' + sim + ' --':^20}")
    print(f"{'S':>6}{'ours ms':>10}{'GFLOP/s':>9}{'torch ms':>10}{'vs torch':>10}"
          f"{'numpy ms':>10}{'vs numpy':>10}{'sim us':>11}{'TFLOP/s':>9}{'max err':>10}  ok")
    for r in rows:
        t = (f"{r['torch_ms']:>10.2f}{r['vs_torch']:>9.2f}x" if "torch_ms" in r
             else f"{'-':>10}{'-':>10}")
        n = (f"{r['npu_sim_us']:>11.1f}{r['npu_sim_tflops']:>9.2f}" if "npu_sim_us" in r
             else f"{'-':>11}{'-':>9}")
        print(f"{r['S']:>6}{r['ours_ms']:>10.2f}{r['ours_gflops']:>9.1f}{t}"
              f"{r['numpy_ms']:>10.2f}{r['vs_numpy']:>9.2f}x{n}{r['max_abs_err']:>10.2e}  "
              f"{'yes' if r['correct'] else 'NO'}")
    print(f"(sim us, TFLOP/s: one launch replayed on rt.npu's pipe model of {soc}; "
          f"deterministic, simulated, not a measurement)")
    if a.backward:
        print_backward(rows, sim)
    print(f"\nProfile of S={a.seq} ({a.repeats} runs):")
    print(op_summary_table(prof, npu_from=nprof))
    est = [r for r in op_summary(prof, npu_from=nprof) if r["op_name"] == KERNEL]
    if est:
        print(f"NPU estimate for one call: {est[0]['est_npu_us']:.1f} us "
              f"(bound pipe: {est[0]['est_bound_pipe']}) -- an estimate, not a measurement")
    runs = nprof.npu_runs(KERNEL)
    if runs:
        tl = runs[-1].timeline
        print()
        print(format_top_lines(tl, a.top))
        print(pipe_excerpt(tl))
    bruns = nprof.npu_runs(KERNEL_BWD)
    if a.backward and len(bruns) >= len(launches):
        for (label, _), run in zip(launches, bruns[-len(launches):]):
            print(f"\nbackward, {label}: {run.timeline.us:.1f} us simulated")
            print(pipe_excerpt(run.timeline))
    if a.tune:
        run_tuner(a, sim)
    written = ["trace.json (open in Perfetto)", "op_summary.csv", "results.csv"]
    written += [os.path.basename(str(p)) for p in npu_files.values()]
    written += bwd_dirs
    written += ["tune.csv"] if a.tune and a.tune_forward else []
    written += ["tune_backward.csv"] if a.tune and a.backward else []
    print(f"\nwrote into {a.out}/: " + ", ".join(written) +
          (f", {os.path.basename(png)}" if png else " (no matplotlib: no plots)") +
          (f"; npu_trace.json is the {sim} run of S={a.seq} (open in Perfetto)"
           if npu_files else ""))
    return 0 if all(r["correct"] and r.get("bwd_correct", True) for r in rows) else 1


def print_backward(rows, sim):
    """The backward's table: CPU next to torch's SDPA backward, then the simulated NPU."""
    print(f"\nbackward (dq, dk, dv){'':>4}{'-- CPU: measured on this machine --':^50}"
          f"{'-- ' + sim + ' --':^30}")
    print(f"{'S':>6}{'ours ms':>10}{'GFLOP/s':>9}{'torch bwd':>11}{'vs torch':>10}"
          f"{'torch f+b':>11}{'sim us':>11}{'TFLOP/s':>9}{'of peak':>9}{'max err':>10}  ok")
    for r in rows:
        t = (f"{r['torch_bwd_ms']:>11.2f}{r['bwd_vs_torch']:>9.2f}x{r['torch_fwd_bwd_ms']:>11.2f}"
             if "torch_bwd_ms" in r else f"{'-':>11}{'-':>10}{'-':>11}")
        n = (f"{r['bwd_npu_sim_us']:>11.1f}{r['bwd_npu_sim_tflops']:>9.2f}"
             f"{100 * r['bwd_npu_peak_share']:>8.1f}%" if "bwd_npu_sim_us" in r
             else f"{'-':>11}{'-':>9}{'-':>9}")
        print(f"{r['S']:>6}{r['bwd_ms']:>10.2f}{r['bwd_gflops']:>9.1f}{t}{n}"
              f"{r['bwd_max_abs_err']:>10.2e}  {'yes' if r['bwd_correct'] else 'NO'}")
    print("(backward FLOPs: 10*B*N*S^2*D, halved for causal; sim us: all its launches (one-pass "
          "form: prep, fused, dQ cast; two-pass: dQ, dK/dV); of peak: of the cube's peak for the "
          "input dtype)")


def tune_backward_main_shape(a, progress_fn=None):
    """Rank `flash_attention_backward_tiling_candidates` for the main shape by the simulated
    time of all its launches (the pipes: of its longest launch, the fused one in the one-pass
    form); returns (results, the default tiling)."""
    dtype = DTYPES[a.dtype]
    s = a.seq
    q, k, v = make_inputs(a.batch, a.heads, s, a.head_dim, dtype, a.layout)
    dout = make_inputs(a.batch, a.heads, s, a.head_dim, dtype, a.layout, seed=1)[0]
    fopts = case_options(a)
    fopts.pop("tiling")
    o, mx, sm = flash_attention_with_stats(q, k, v, **fopts)
    opts = backward_options(a)
    opts.pop("tiling")
    default = flash_attention_backward_tiling(a.head_dim, dtype, s, s)
    cands = (parse_backward_tilings(a.tune_backward_tilings) if a.tune_backward_tilings else
             flash_attention_backward_tiling_candidates(a.head_dim, dtype, s, s))

    def run(t):         # every launch's Timeline: the time is their sum, the pipes the longest's
        return npu_timelines(lambda: flash_attention_backward(dout, q, k, v, o, mx, sm, tiling=t,
                                                              **opts), KERNEL_BWD)
    return tune(cands, run, progress=progress_fn), default


def write_tune_csv(results, default, path, fields=("s1_block", "s2_block", "kv_chunk")):
    """tune.csv: rank, simulated µs, the tiling's fields, the busiest pipe, skipped reason."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rank", "simulated_us", *fields, "busiest_pipe", "is_default", "skipped"])
        for r in results:
            c = r.candidate
            w.writerow([r.rank or "", f"{r.us:.3f}" if r.ok else "",
                        *(getattr(c, x) for x in fields), r.bound_pipe if r.ok else "",
                        c == default, r.skipped or ""])
    return path


if __name__ == "__main__":
    sys.exit(main())
