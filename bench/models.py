"""ResNet-50 (ONNX's light model, batch 1) through our runtime vs onnxruntime's CPU provider.

    python -m bench.models [--repeats 5] [--model resnet50] [--aicpu-only] [--perf]
    python -m bench.models --conformance [--light] [--pattern REGEX]

The default run converts `light_resnet50.onnx` (shipped in the `onnx` wheel) with rt.atc, loads it
with rt.Model, and times `model.execute([x])` (synchronous, numpy in and out) against
`onnxruntime.InferenceSession(..., providers=["CPUExecutionProvider"]).run` on the same input,
interleaved (bench._timing). It prints both medians, the ratio onnxruntime time / our time (1.0 =
as fast; the goal is >= 0.5) and the per-node breakdown of one profiled execution
(op_summary rows: AI Core kernels named "<node> (<kernel>)", AI CPU nodes "<node> (AI_CPU <op>)"),
summed per op type. Before the timing it splits the CPU time of an inference: the kernels' block
ranges by kernel (thread CPU time of each range on the core threads) against the rest, and the
host thread's CPU time to enqueue one inference (the launches' Python; also with the nodes'
recorded launches off, `kernels.model_ops.REPLAY`), and how evenly each launch's blocks kept
the core threads busy, so a loaded machine still shows where the time goes; then where the core
threads sat idle: each one's wall time on a CPU / waiting for one / asleep (Linux schedstat), and
the core-thread time no block range ran in, by cause (before the first launch and after the last,
between launches, a launch's start to its first range, to its last core's start, its first
core's end to its last, launches on one core).
After the ratio, a "bound" line puts the model's Conv multiply-adds at the cube GEMM's rate on
this CPU against the CPU time 0.5x of onnxruntime allows (docs/models.md). `--perf` adds the CPU
time of --repeats inferences by primitive group from Linux `perf` samples
(bench/fa_perf.py's groups and symbol map). onnxruntime is an optional extra
(`pip install onnxruntime`).

Measured (2 cores shared with other jobs; onnxruntime's time suffers more from the load than
ours, so loaded ratios overstate ours; say which one you quote):
- before the conv work, quiet machine (load 0.97): ours 1095 ms, onnxruntime 20.5 ms = 0.019x
  (94 % Conv: img2col by scalar S-pipe loops 854 ms, matmul 116 ms; MaxPool 38 ms).
- after (DMA / WholeReduce img2col, direct 1x1 convs, Conv+Add+Relu fusion, vector MaxPool and
  global pooling), loaded machine (load 8.3, `--repeats 7`): ours 286 ms, onnxruntime 105 ms =
  0.37x. Profiled execution by kernel (load 8.5): img2col 94 ms (20 launches, mostly the strided
  convs: conv1 7x7/2 ~30 ms, three 3x3/2 ~33 ms), matmul 92 ms (54), epilogue 25 ms (53),
  MaxPool 11 ms, GlobalAveragePool 0.2 ms. Not measured on a quiet machine; a run at load ~10
  (`--repeats 5`, before the global-pool change) gave 401 ms against 221 ms (0.55x): loaded
  ratios swing with the load.
- stride-2 convs by column split + stride-1 img2col, channel-batched img2col for small images,
  no workspace for direct 1x1 convs (load 5.4-5.7, `--repeats 7`): ours 391 ms, onnxruntime
  146 ms = 0.37x (the same command gave 293 / 125 ms = 0.43x before the change at load ~8: the
  load moves both by more than the change). Same-process A/B (both models loaded, interleaved,
  load ~6): 400 ms with the new paths vs 464 ms with the old tilings; by kernel, img2col +
  deinterleave 93 ms vs img2col 177 ms, matmul ~200 ms both (now the largest part: 54
  launches), epilogue 60-80 ms (53), MaxPool ~21 ms. 143 kernel/AI CPU tasks per inference.

- bias and ReLU in the cube (conv_matmul_kernel: the direct 1x1 convs' bias as a ones row in L1,
  ReLU as the fixpipe's relu_en; the vector epilogue only after a residual Add) and rt.atc
  planning a Conv chain's outputs live from the Conv on (workspace 12.3 -> 16.1 MiB; the 7 Relus
  the old plan left unfused now fuse): 99 tasks per inference instead of 143. Loaded machine
  (load 15-19, 2026-12-06, not measured quiet): wall medians swung 2x between runs of the same
  tree; same-run ratios, alternating one process per tree: before 0.37, 0.65, 0.40, 0.47, 0.50,
  0.66x; after 0.37, 0.29, 0.28, 0.34, 0.66, 0.29x. Two runs of both trees at the same time
  (15 inferences each): 678 vs 957 ms, then 781 vs 690 ms (before vs after). So under that load
  the wall-time effect is not resolved (if anything the after runs were slower more often). The
  process CPU time per inference (the "CPU time" line; one process per tree, alternating) fell:
  0.93x of the tree before (median of 8 pairs, 0.89-1.08x; e.g. 221 vs 236 ms). By kernel
  (profiled execution, loaded): conv matmul 118 ms, img2col 51, MaxPool 63, column split 37,
  residual epilogue 12 (16 launches; before: bias_act 76 ms in 53 launches + 7 Relu launches).

- GatherMask (asc.gather_mask) on dense UB rows for MaxPool (kernels/maxpool.py), the stride-2
  column split and the stride-2 1x1 convs (kernels/subsample.py), instead of one element per
  32-byte block; 99 tasks per inference as before. Loaded machine (load 12-15, 2026-12-06), one
  process per tree, alternating, 4 pairs: CPU time per inference 0.91x of the tree before
  (medians 188 vs 203 ms; pairs 0.87-1.01x); same-run wall ratios not resolved under that load
  (before 0.29-0.56x, after 0.34-0.78x). By kernel (profiled, loaded): MaxPool 9-17 ms (was
  43-53), img2col 36-43 ms in 17 launches + subsample2 2.5 ms in 3 (was 51-62 ms in 20), column
  split 9-18 ms (was 24); the conv matmul (133-215 ms under this load) is now most of the rest.

- the conv weights in the cube's order (kernels.convmm.cube_weights: each chunk's L0A image,
  one load_data GM -> L0A instead of Nd2Nz into L1 and a load per 16 rows), float16 mmad
  operands converted by vector fpext, contiguous load_data fractals moved by one copy. Loaded
  machine (load 7-10, 2026-12-06), one process per tree, alternating, 3 pairs: CPU time per
  inference 0.89x of the tree before (171.8 vs 193.7, 168.4 vs 197.1, 179.6 vs 201.5 ms); wall
  times not resolved under that load. The GEMM inside the mmads runs near the CPU's peak
  (`python -m bench.cube_gemm`: 190-205 GFLOP/s fp32 per core); the copies around it, img2col
  and the launches are the rest.

- 3x3 convolutions by taps (kernels/convtap.py: x padded once, or as its four phase images for
  stride 2; the cube reads the 9 taps in place; no img2col for the 11 stride-1 and the 2 even
  stride-2 3x3 convs at 56/28/14). Loaded machine (load 13-14, 2026-12-06), one process per
  tree, alternating: CPU time per inference 0.88x of the tree before (137.1 vs 154.9, 137.3 vs
  156.4 ms), but 0.82-1.12x (median 0.98) in 7 more pairs: within the load's noise; the conv
  kernels' CPU -23 ms per inference (split of one pair); the convs alone (`python -m
  bench.resnet_kernels`) 0.52-0.60x; wall not resolved under that load. The split printed
  before the timing (140.5 ms of CPU): conv_matmul 54.5 ms, conv_tap 47.7, bias_act 6.0,
  img2col 4.2, MaxPool 3.8, the rest of the kernels 7.4, outside the kernels 16.9 (the host
  thread enqueueing the 99 launches: 8.2).

- even column tiles in the conv matmuls (N = 784 as 208 x 3 + 160, not 256 x 3 + 16), more and
  narrower ones where the tiles outnumber the SoC's 24 cores (conv1: 72 of 176, not 49 of 256),
  and the residual epilogue on 24 blocks instead of 2: a simulated-NPU gain (the conv matmul
  launches 0.68-1.00x, `python -m bench.resnet_kernels --tiles`; the epilogue 0.13-0.25x,
  `--epilogue`); the CPU per inference unchanged within the noise (load 6-8, 2026-12-06, 3
  alternating pairs: split 146.4, 140.6, 145.4 vs 144.3, 142.5, 151.2 ms).

- each node's launches recorded at its first execution and replayed after
  (kernels.model_ops.Replayed, asc.record_launches): the host thread's enqueue 2.1 ms instead of
  6.6 (same run, alternating, load 13.8, 2026-12-06), the CPU outside the kernels 5.9-12.7 ms
  against 14.7-19.2 for the tree before (5 alternating pairs of processes, load 10-17); the
  whole inference's process CPU 0.92x and 0.96x of the tree before (2 pairs: 120.1, 127.7 vs
  131.1, 133.0 ms); wall time not resolved under that load (docs/performance.md).

- the residual Add (then ReLU) in the conv matmul's own launch (kernels/convmm.py: each block
  adds the residual to the tile its fixpipe just wrote, on its vector unit): 83 launches per
  inference instead of 99, no `bias_act_kernel` launch for the 16 residual 1x1 convs. Load
  2.3-3.4 (2026-12-06), one process per tree, alternating, 4 pairs: the split 113.5, 108.8,
  120.6, 109.3 vs 133.9, 117.3, 111.5, 129.8 ms (median 0.89x); the 16 convs alone
  (`python -m bench.resnet_kernels --residual`) 0.85-0.96x, the residual's own cost about half;
  simulated time 153.4 vs 166.0 us for the 16. Wall time not resolved under that
  load.

- ResNet's fc (Gemm, one row of A, constant B and bias) as a 1x1 conv (kernels/model_ops.py):
  one launch instead of matmul + row-broadcast add (82 per inference), its CPU 0.70-0.80x.
  With the residual change, 3 alternating pairs (load 2.1-2.7, 2026-12-06): the split 108.3,
  106.1, 101.0 vs 106.6, 111.2, 112.2 ms; the wall time of the quietest pair 75.3 vs 74.4 ms
  (onnxruntime 19.1 / 21.0 ms): fewer launches did not shorten it measurably.

- idle core threads (the idle lines above; 2026-12-07, medians of 7): at load 9.7 (591 ms wall)
  each core thread was on a CPU ~200 ms, waiting for one 267 / 316 ms, asleep 138 / 83 ms per
  inference; no range running, summed over the 2 threads: between launches 20 ms, a launch's
  start to its first range 43, to its last core's start 46, first core done to last 136,
  launches on one core 69 ms (mostly a preempted core: each range's wall time swells). At load
  11.1 (786 ms wall): between launches 170 ms, the host's edges 0.4, to the first range 19, to
  the last core's start 42, first core done to last 224, on one core 47. The hand-off stall
  moves with who is woken (same process, alternating, load 11): with the host thread woken only
  at the task it waits for (not at each of the 82 completions) between launches fell to 10 ms
  and to the first range rose to 109 ms (from 107 and 23): a thread the hand-off's GIL holder
  wakes seems to preempt it and then wait for the GIL. Quiet (docs/performance.md: 73.8 ms
  wall, 98.6 ms of the ranges' CPU) the core threads leave ~49 core-ms per inference unused.
  Tried and dropped, each measured in one process alternating (ABBA), load 7-11:
  (1) long launches with >= 4 blocks per core keeping a quarter of the blocks back as one more
  range per core for whichever core is free first: the core threads' sleep fell (165 vs 210,
  190 vs 209 core-ms per inference), the wall did not (46 pairs: paired medians 0.944, 0.981,
  0.973, 1.076x; CPU 1.00-1.03x: each extra range is one more `run_blocks` call, 25-70 us of
  Python); (2) the host thread woken only at the task it waits for: its CPU 5 vs 11 ms per
  inference, but the core threads waited ~150 ms longer for a CPU (515 vs 360 ms) and the wall
  was 1.16x (10 pairs, 1.05-1.42x; one process per tree alternating: 5 pairs, 0.95-1.37x; and
  935 vs 753 ms in a 4-way run); (3) each core thread pinned to its own CPU
  (`os.sched_setaffinity`): 844 vs 753 ms, 1057 vs 935 ms with (2) (6 rounds of 2 inferences
  each); (4) the pool's bells as futexes waited on and woken through ctypes, the GIL released
  around the syscalls (against the GIL holder preempted by the core it wakes): 1.14x wall (12
  pairs, 0.91-1.39x, load 10.9), the rung core later to start (140 vs 54 core-ms per inference).
  Load 7-11 on 2 CPUs (Linux autogroup scheduling, our runs at nice 5) decides the wall more
  than any of these; a quiet machine would tell (1) and (2) apart.

`--conformance` runs ONNX's backend suite selection of tests/rt/models/test_onnx_backend.py
(node tests of every claimed op + the light models, exclusions of rt.onnx_backend.conformance)
with unittest and prints pass / fail / excluded counts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from bench._timing import interleaved_medians


def _light(name: str) -> str:
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        f"light_{name}.onnx")


def conv_shapes(m) -> list:
    """(x shape, w shape, stride, pads (top, left, bottom, right)) of each ungrouped 2-D Conv of
    ONNX model m (shapes by onnx's shape inference)."""
    import onnx
    from onnx import shape_inference
    g = shape_inference.infer_shapes(m).graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(g.value_info) + list(g.input) + list(g.output)}
    shapes.update({i.name: list(i.dims) for i in g.initializer})
    out = []
    for nd in g.node:
        a = {x.name: onnx.helper.get_attribute_value(x) for x in nd.attribute}
        xs, ws = shapes.get(nd.input[0]), shapes.get(nd.input[1]) if nd.input[1:] else None
        if nd.op_type != "Conv" or a.get("group", 1) != 1 or not xs or not ws or len(ws) != 4:
            continue
        out.append((tuple(xs), tuple(ws), tuple(a.get("strides", (1, 1))),
                    tuple(a.get("pads", (0, 0, 0, 0)))))
    return out


def _gemm_bound(m, cpu_ms: float, ort_ms: float) -> None:
    """What bounds the ratio: the Convs' multiply-accumulates at the rate of the cube's float32
    GEMM on this CPU (bench.cube_gemm, one 128 x 128 x 128 mmad), against the CPU time the goal
    leaves with both core threads busy."""
    import rt
    from bench.cube_gemm import case
    from bench.resnet_kernels import cube_macs
    from kernels.conv2d import conv2d_tiling
    convs = conv_shapes(m)
    if not convs:
        return
    real = cube = 0
    for xs, ws, st, pads in convs:
        t = conv2d_tiling(xs, ws, st, pads)
        real += ws[0] * ws[1] * ws[2] * ws[3] * t.oh * t.ow * xs[0]
        cube += cube_macs(t) * xs[0]
    # MAC/s, thread time; the best of three: right after the model's runs the core threads
    # can still hold the CPU (or its sibling), which once read 86 instead of ~190 GFLOP/s
    rate = 128 ** 3 / min(case(128, 128, 128, np.float32, 5, 20)[0] for _ in range(3))
    cores = rt.default_core_count()
    g_real, g_cube = real / rate * 1e3, cube / rate * 1e3
    budget = 2 * ort_ms * cores
    print(f"bound: {len(convs)} Convs, {real / 1e9:.3f} G MACs (the cube's mmads compute "
          f"{cube / 1e9:.3f} G with their fractal padding); at the mmad's {2 * rate / 1e9:.0f} "
          f"GFLOP/s they take {g_real:.1f} ms CPU ({g_cube:.1f} with the padding), "
          f"{g_cube / cores:.1f} ms wall on {cores} core threads at best; 0.5x of "
          f"onnxruntime's {ort_ms:.1f} ms is {2 * ort_ms:.1f} ms wall = {budget:.1f} ms CPU with "
          f"every core thread busy: {budget - g_cube:.1f} ms for the rest, which takes "
          f"{cpu_ms - g_cube:.1f} ms today (the CPU time per inference above less the GEMM)")


def run_bench(name: str, repeats: int, perf: bool = False) -> int:
    import onnx
    from onnx.backend.test.runner import Runner

    import rt
    from rt.opsummary import op_summary
    import rt.onnx_backend as backend

    m = onnx.load(_light(name))
    inits = {i.name for i in m.graph.initializer}
    (vi,) = [i for i in m.graph.input if i.name not in inits]
    x = Runner.generate_dummy_data(vi, seed=0, name=name, random=False)
    t0 = time.perf_counter()
    rep = backend.prepare(m)
    t_prep = time.perf_counter() - t0
    model = rep.model
    t0 = time.perf_counter()
    (ours,) = model.execute([x])            # first run: compiles what is not cached yet
    t_first = time.perf_counter() - t0
    engines = list(model.engines().values())
    fused = sum(len(n.fused) for n in model.nodes)
    print(f"model: light_{name}.onnx, input {vi.name} {list(x.shape)}; {len(engines)} "
          f"device nodes ({engines.count('AI_CORE')} AI Core, {engines.count('AI_CPU')} AI CPU; "
          f"{fused} of them fused into {sum(bool(n.fused) for n in model.nodes)} Conv nodes); "
          f"convert+load {t_prep:.2f} s, first execution {t_first:.2f} s")
    # CPU time of the whole process (every core thread) per inference: steadier than wall time
    # on a loaded machine; measured before onnxruntime's threads exist
    c0 = time.process_time()
    for _ in range(repeats):
        model.execute([x])
    cpu_ms = (time.process_time() - c0) / repeats * 1e3
    print(f"rt.Model CPU time per inference (all threads): {cpu_ms:.1f} ms ({repeats} runs)")
    _host_and_kernel_cpu(model, x, repeats)
    _idle_core_threads(model, x, repeats)
    if perf:
        from bench import fa_perf
        fa_perf.profile([("rt.Model.execute", lambda: model.execute([x]))], repeats,
                        f"light_{name}.onnx")
    variants = {"rt.Model": lambda: model.execute([x])}
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
        print("onnxruntime is not installed (pip install onnxruntime): no ratio")
    if ort is not None:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        (theirs,) = sess.run(None, {vi.name: x})
        err = float(np.abs(ours - theirs).max())
        print(f"onnxruntime {ort.__version__} CPU: max |ours - onnxruntime| = {err:.3g}")
        variants["onnxruntime"] = lambda: sess.run(None, {vi.name: x})
    med = interleaved_medians(variants, repeats, warmup=1)
    for k, v in med.items():
        print(f"  {k:<14} median {v * 1e3:10.1f} ms  ({repeats} runs)")
    if ort is not None:
        print(f"ratio onnxruntime/ours = {med['onnxruntime'] / med['rt.Model']:.3f}x "
              f"(goal >= 0.5x)")
        _gemm_bound(m, cpu_ms, med["onnxruntime"] * 1e3)
    with rt.profile() as prof:
        model.execute([x])
    rows = op_summary(prof)
    per_op: dict = {}
    ops = {n.name: "+".join(n.raw["fusion"]["ops"]) if n.fused else n.op for n in model.nodes}
    for r in rows:
        node = r["op_name"].split(" (")[0]
        key = (ops.get(node, "?"), "AI_CPU" if r["est_bound_pipe"] == "AI_CPU" else "AI_CORE")
        per_op.setdefault(key, [0.0, 0])
        per_op[key][0] += r["host_total_us"]
        per_op[key][1] += r["calls"]
    total = sum(v[0] for v in per_op.values()) or 1.0
    print("per-op breakdown of one profiled execution (host time of the tasks on the stream):")
    print(f"  {'op':<20}{'engine':<9}{'tasks':>6}{'ms':>10}{'share':>8}")
    for (op, eng), (us, calls) in sorted(per_op.items(), key=lambda kv: -kv[1][0]):
        print(f"  {op:<20}{eng:<9}{calls:>6}{us / 1e3:>10.1f}{us / total:>8.1%}")
    per_kernel: dict = {}           # "<node> (<kernel>)" -> by kernel, launches counted
    for r in rows:
        kern = r["op_name"].split(" (", 1)[-1].rstrip(")") if " (" in r["op_name"] else "?"
        per_kernel.setdefault(kern, [0.0, 0])
        per_kernel[kern][0] += r["host_total_us"]
        per_kernel[kern][1] += r["calls"]
    print(f"by kernel ({sum(v[1] for v in per_kernel.values())} tasks per inference):")
    for kern, (us, calls) in sorted(per_kernel.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kern:<28}{calls:>6}{us / 1e3:>10.1f} ms")
    top = sorted(rows, key=lambda r: -r["host_total_us"])[:10]
    print("slowest nodes:")
    for r in top:
        print(f"  {r['op_name']:<44}{r['host_total_us'] / 1e3:>10.2f} ms")
    return 0


def _host_and_kernel_cpu(model, x, repeats: int) -> None:
    """Where the CPU time of an inference goes: the host thread's CPU time to enqueue one
    inference (device input, asynchronous `execute`: binding, argument checks and the launches'
    Python, overlapping the kernels), and the thread CPU time of the kernels' block ranges on the
    core threads by kernel (each `run_blocks` call timed with time.thread_time_ns, so load from
    other processes does not count)."""
    import threading

    import rt
    from ascendc import binaries

    from kernels import model_ops

    s = rt.current_stream()
    xd = rt.to_device(x)
    enq: dict = {True: [], False: []}
    for i in range(2 * repeats):        # alternating: launches replayed / bound anew
        model_ops.REPLAY = replay = i % 2 == 0
        s.synchronize()
        c0 = time.thread_time()
        model.execute([xd])
        enq[replay].append(time.thread_time() - c0)
    model_ops.REPLAY = True
    s.synchronize()
    acc: dict = {}
    lock = threading.Lock()
    orig = binaries.Binary.run_blocks
    launches: dict = {}     # (inference, args) -> [blocks covered, busiest range's ns]
    busiest = [0, 0]        # per inference: sum of the busiest ranges, inference index

    def timed(self, *args, **kwargs):
        c0 = time.thread_time_ns()
        try:
            return orig(self, *args, **kwargs)
        finally:
            d = time.thread_time_ns() - c0
            with lock:
                v = acc.setdefault(self.name, [0, 0])
                v[0] += d
                v[1] += 1
                if len(args) >= 4:      # (first, last, block_dim, args): ranges tile the blocks
                    g = launches.setdefault((busiest[1], id(args[3])), [0, 0])
                    g[0] += args[1] - args[0]
                    g[1] = max(g[1], d)
                    if g[0] >= args[2]:
                        busiest[0] += g[1]
                        del launches[(busiest[1], id(args[3]))]
    binaries.Binary.run_blocks = timed
    try:
        c0 = time.process_time()
        for i in range(repeats):
            busiest[1] = i
            model.execute([xd])
            s.synchronize()
        cpu = (time.process_time() - c0) / repeats * 1e3
    finally:
        binaries.Binary.run_blocks = orig
    ker = sum(v[0] for v in acc.values()) / repeats / 1e6
    print(f"CPU per inference {cpu:.1f} ms: kernels' block ranges {ker:.1f} ms (thread CPU), "
          f"the rest {cpu - ker:.1f} ms, of which the host thread enqueueing the launches "
          f"{float(np.median(enq[True])) * 1e3:.1f} ms (median; the launches' Python, "
          f"overlapping the kernels; {float(np.median(enq[False])) * 1e3:.1f} ms with every "
          f"launch bound anew, kernels.model_ops.REPLAY = False)")
    for name, (ns, n) in sorted(acc.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:<28}{n / repeats:>6.0f} ranges{ns / repeats / 1e6:>9.1f} ms CPU")
    print(f"balance over the {rt.default_core_count()} core threads: each launch's busiest "
          f"block range, summed, {busiest[0] / repeats / 1e6:.1f} ms against "
          f"{ker / rt.default_core_count():.1f} ms if every launch split its CPU time evenly")


def _schedstat(tid: int):
    """(ns on a CPU, ns waiting for one) of thread `tid` of this process (Linux), or None."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            on, wait, _ = f.read().split()
        return int(on), int(wait)
    except (OSError, ValueError):
        return None


IDLE_CAUSES = ("before the first launch and after the last", "between launches",
               "to the first range", "to the last core's start", "first core done to last",
               "on one core")


def idle_by_cause(tasks, t0: int, t1: int, cores: int) -> dict:
    """Core-thread ns in [t0, t1) in which no block range ran, by cause (IDLE_CAUSES), from the
    stream's tasks as (start_ns, end_ns, ranges) (ranges: `rt.BlockRun`s; none for a task that
    is not a kernel, every core idle meanwhile). A core's time in a launch counts from the
    launch's start to its first range and from its last range's end to the launch's end; the
    gaps between one core's ranges of a launch are not counted."""
    got = dict.fromkeys(IDLE_CAUSES, 0)
    prev = None
    for start, end, ranges in sorted(tasks, key=lambda t: t[0]):
        got["between launches" if prev is not None else IDLE_CAUSES[0]] += \
            max(0, start - (t0 if prev is None else prev)) * cores
        prev = end
        by_core: dict = {}
        for r in ranges:
            lo, hi = by_core.get(r.core, (r.start_ns, r.end_ns))
            by_core[r.core] = (min(lo, r.start_ns), max(hi, r.end_ns))
        if not by_core:
            got["on one core"] += (end - start) * cores
            continue
        starts = sorted(v[0] for v in by_core.values())
        ends = sorted(v[1] for v in by_core.values())
        got["to the first range"] += (starts[0] - start) * len(by_core)
        got["to the last core's start"] += sum(v - starts[0] for v in starts)
        got["first core done to last"] += sum(ends[-1] - v for v in ends)
        got["on one core"] += (end - start) * (cores - len(by_core))
    got[IDLE_CAUSES[0]] += max(0, t1 - (t0 if prev is None else prev)) * cores
    return got


def _idle_core_threads(model, x, repeats: int) -> None:
    """Where the core threads sit idle during an inference (device input, synchronized): each
    thread's wall time split into on a CPU / runnable but waiting for one (the machine's load) /
    asleep (no range to run: Linux schedstat), and the core-thread time no range ran in, summed
    over the launches by cause (from the tasks' ranges: before the first launch (the host's
    input and enqueue) and after the last (its wake-up), between launches, a launch's start to its
    first range, its first to its last core's start, its first core's end to its last, launches
    whose ranges all ran on one core). Wall times: on a loaded machine preemption lengthens
    each."""
    import threading

    import rt
    from rt import sched

    class Recorder:
        npu = False

        def __init__(self):
            self.tasks = []

        def add_task(self, task):
            self.tasks.append((task.start_ns, task.end_ns, list(getattr(task, "ranges", ()))))

    cores = rt.default_core_count()
    s = rt.current_stream()
    xd = rt.to_device(x)
    model.execute([xd])
    s.synchronize()
    threads = {t.name: t.native_id for t in threading.enumerate() if t.name.startswith("rt-core")}
    rec = Recorder()
    sched.PROFILERS.append(rec)
    causes = {k: [] for k in IDLE_CAUSES}
    split = {n: [] for n in threads}
    walls = []
    try:
        for _ in range(repeats):
            rec.tasks = []
            before = {n: _schedstat(t) for n, t in threads.items()}
            t0 = time.perf_counter_ns()
            model.execute([xd])
            s.synchronize()
            t1 = time.perf_counter_ns()
            walls.append(t1 - t0)
            for n, t in threads.items():
                after = _schedstat(t)
                if before[n] is not None and after is not None:
                    on, wait = after[0] - before[n][0], after[1] - before[n][1]
                    split[n].append((on, wait, t1 - t0 - on - wait))
            got = idle_by_cause(rec.tasks, t0, t1, cores)
            for k, v in got.items():
                causes[k].append(v)
    finally:
        sched.PROFILERS.remove(rec)
    ms = lambda v: float(np.median(v)) / 1e6    # noqa: E731
    print(f"core threads per inference (median of {repeats}, wall {ms(walls):.1f} ms; Linux "
          f"schedstat): " + "; ".join(
              f"{n} on a CPU {ms([v[0] for v in vs]):.1f} ms, waiting for one "
              f"{ms([v[1] for v in vs]):.1f}, asleep {ms([v[2] for v in vs]):.1f}"
              for n, vs in split.items() if vs))
    print(f"core-thread time no range ran in, per inference by cause (wall, summed over the "
          f"{cores} threads; median of {repeats}): " + ", ".join(
              f"{k} {ms(v):.1f} ms" for k, v in causes.items()))


def run_conformance(light: bool, pattern: str | None) -> int:
    import re
    import unittest

    import onnx.backend.test

    import rt.onnx_backend as backend
    from rt.onnx_backend import conformance

    bt = onnx.backend.test.BackendTest(backend, "bench.models")
    names = conformance.claimed_node_tests() + (list(conformance.LIGHT_MODELS) if light else [])
    if pattern:
        names = [n for n in names if re.search(pattern, n)]
    for n in names:
        bt.include(rf"^{n}_cpu$")
    excluded = [n for n in names if conformance.excluded(n)]
    for p, _ in conformance.EXCLUDE:
        bt.exclude(p)
    suite = unittest.TestSuite()
    for case in bt.test_cases.values():
        for attr in sorted(dir(case)):
            if attr.endswith("_cpu") and attr[:-4] in names:
                suite.addTest(case(attr))
    t0 = time.perf_counter()
    res = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(suite)
    ran = res.testsRun - len(res.skipped)
    bad = len(res.failures) + len(res.errors)
    n_light = sum(n in conformance.LIGHT_MODELS for n in names)
    print(f"ONNX backend suite (onnx {onnx.__version__}): {len(names)} selected tests "
          f"({len(names) - n_light} node tests of claimed ops, {n_light} light models); "
          f"{ran - bad} passed, {bad} failed, {len(excluded)} excluded "
          f"({len(conformance.EXCLUDE)} documented patterns); "
          f"{time.perf_counter() - t0:.0f} s")
    for t, _ in res.failures + res.errors:
        print(f"  FAILED {t.id().rsplit('.', 1)[-1]}")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.models", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="resnet50")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--aicpu-only", action="store_true",
                   help="every node on the AI CPU (ASCEND_EMU_MODEL_AICPU_ONLY=1)")
    p.add_argument("--conformance", action="store_true")
    p.add_argument("--light", action="store_true", help="with --conformance: the light models too")
    p.add_argument("--pattern", default=None, help="with --conformance: only tests matching it")
    p.add_argument("--perf", action="store_true",
                   help="also the CPU time of --repeats inferences by primitive group (Linux "
                        "perf; bench/fa_perf.py)")
    a = p.parse_args(argv)
    if a.aicpu_only:
        os.environ["ASCEND_EMU_MODEL_AICPU_ONLY"] = "1"
    if a.conformance:
        return run_conformance(a.light, a.pattern)
    return run_bench(a.model, a.repeats, a.perf)


if __name__ == "__main__":
    sys.exit(main())
