"""Process CPU time of ResNet-50's data-movement-heavy kernels, one launch at a time (compiled).

    python -m bench.resnet_kernels [--repeats 15] [--tiles | --epilogue | --residual | --macs |
                                    --bytes]

Rows: the stem MaxPool (64 x 112 x 112, 3x3/2, pad 1), a downsampling 1x1/2 convolution
(256 x 56 x 56 -> 512: `subsample2_kernel` + the matmul), conv1 (3 x 224 x 224, 7x7/2: the
column split, the stride-1 img2col and the matmul) and ResNet's 3x3 convs with C output
channels at 56, 28 and 14 (stride 1) and its 3x3/2 downsampling convs (kernels/convtap.py's
padding / phase images and the tap matmul, or img2col and the matmul on a tree without it).
Each figure is the median over `--repeats` launches of the process CPU time (all threads) from
launch to synchronize, so a loaded machine moves it less than wall time. Run it on two trees,
alternating, to compare them. `--tiles` prints instead the simulated time of each conv's
matmul launch (NPU view, deterministic) with kernels.conv2d's tile widths (`balanced_tile_n`)
and with base_n-wide tiles (the last one ragged); `--epilogue` the simulated time and the
process CPU time of the residual epilogue (`bias_act_kernel`) by its number of blocks.
`--residual` times ResNet's four residual 1x1 convs (Conv+Add+Relu, the 16 per inference as 4
shapes) with and without the residual: process CPU per launch_conv2d (the matmul adds the
residual in its own launch, kernels/convmm.py; a tree without that runs `bias_act_kernel`
after it) and the simulated time of their launches, summed per inference.
`--macs` accounts for the GEMM in every conv of ResNet-50 (the 53 convs as 23 distinct shapes,
`RESNET50_CONVS`): the model's multiply-accumulates against those the cube's mmads compute
(m and n rounded up to 16 per mmad: channels, the tap path's garbage columns, the stride-2
phase path's zero weight columns, ragged tiles), the process CPU time per launch (padding /
img2col included) and what the mmads' GEMM alone takes at the rate one 128 x 128 x 128 float32
mmad reaches on this CPU (`bench.cube_gemm`'s case, thread time): the rest is everything else
the launch does (data movement, bookkeeping, the launch itself).
`--bytes` counts, from the tilings alone (nothing runs), the cube operands' bytes the 53 convs
move per inference: A (the weights' L0A images, GM -> L0A once per output tile, so once per
column tile), B (GM -> L1 by Nd2Nz once per output tile, so once per row tile of 128 output
channels; the same bytes are transposed into L0B and repacked by each mmad) and C (L0C -> GM
by the fixpipe, N rounded to the tile), against the bytes of the weights and of B once.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import rt
from kernels.conv2d import conv2d_tiling, conv_weights, launch_conv2d
from kernels.pool import launch_pool, pool_tiling


def _cpu_ms(fn, stream, repeats: int) -> float:
    fn()
    stream.synchronize()                # compile and warm up outside the timing
    times = []
    for _ in range(repeats):
        c0 = time.process_time()
        fn()
        stream.synchronize()
        times.append(time.process_time() - c0)
    return float(np.median(times)) * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--tiles", action="store_true")
    ap.add_argument("--epilogue", action="store_true")
    ap.add_argument("--macs", action="store_true")
    ap.add_argument("--residual", action="store_true")
    ap.add_argument("--bytes", action="store_true")
    args = ap.parse_args(argv)
    if args.bytes:
        return _bytes()
    rt.ensure_device()
    if args.macs:
        return _macs(args.repeats)
    if args.residual:
        return _residual(args.repeats)
    if args.tiles:
        return _tiles()
    if args.epilogue:
        return _epilogue(args.repeats)
    s = rt.Stream()
    rng = np.random.default_rng(0)
    x = rt.to_device(rng.standard_normal((1, 64, 112, 112)).astype(np.float32))
    t = pool_tiling(x.shape, 3, 2, 1)
    y = rt.device_empty((1, 64, t.oh, t.ow), np.float32)
    ms = _cpu_ms(lambda: launch_pool(x, y, "max", t, s), s, args.repeats)
    print(f"MaxPool 64x112x112 3x3/2: {ms:.2f} ms CPU")
    for name, shp, w, st, p in [("conv 1x1/2 256x56x56 -> 512", (1, 256, 56, 56),
                                 (512, 256, 1, 1), 2, 0),
                                ("conv1 7x7/2 3x224x224 -> 64", (1, 3, 224, 224),
                                 (64, 3, 7, 7), 2, 3),
                                ("conv 3x3/1 64x56x56", (1, 64, 56, 56), (64, 64, 3, 3), 1, 1),
                                ("conv 3x3/1 128x28x28", (1, 128, 28, 28), (128, 128, 3, 3), 1,
                                 1),
                                ("conv 3x3/1 256x14x14", (1, 256, 14, 14), (256, 256, 3, 3), 1,
                                 1),
                                ("conv 3x3/2 128x56x56", (1, 128, 56, 56), (128, 128, 3, 3), 2,
                                 1),
                                ("conv 3x3/2 256x28x28", (1, 256, 28, 28), (256, 256, 3, 3), 2,
                                 1)]:
        tc = conv2d_tiling(shp, w, st, p)
        xd = rt.to_device(rng.standard_normal(shp).astype(np.float32))
        wm = rt.to_device(conv_weights(rng.standard_normal(w).astype(np.float32), None, tc))
        col = rt.device_empty((tc.col_elems,), np.float32)
        yd = rt.device_empty((1, tc.oc, tc.oh, tc.ow), np.float32)
        z = rt.device_zeros((max(tc.mm.zeros_len, 16),), np.float32)
        ms = _cpu_ms(lambda: launch_conv2d(xd, wm, yd, col, z, tc, s), s, args.repeats)
        print(f"{name}: {ms:.2f} ms CPU")


def _tiles() -> None:
    from kernels.conv2d import conv2d
    from kernels.tune import npu_total_us
    rng = np.random.default_rng(0)
    for shp, w, st, p in [((1, 3, 224, 224), (64, 3, 7, 7), 2, 3),
                          ((1, 64, 56, 56), (256, 64, 1, 1), 1, 0),
                          ((1, 256, 28, 28), (512, 256, 1, 1), 1, 0),
                          ((1, 128, 28, 28), (128, 128, 3, 3), 1, 1),
                          ((1, 1024, 14, 14), (256, 1024, 1, 1), 1, 0)]:
        t = conv2d_tiling(shp, w, st, p)
        x = rng.standard_normal(shp).astype(np.float32)
        wt = rng.standard_normal(w).astype(np.float32)
        name = "conv_tap_kernel" if t.tap_wp else "conv_matmul_kernel"
        base = dataclasses.replace(t, tile_n=0, mm=dataclasses.replace(
            t.mm, block_dim=min(-(-t.mm.m // t.mm.base_m) * -(-t.mm.n // t.mm.base_n),
                                rt.get_soc().ai_core_num)))
        us = [npu_total_us(lambda: conv2d(x, wt, None, stride=st, padding=p, tiling=tt), name)
              for tt in (t, base)]
        print(f"{shp[1]}x{shp[2]}x{shp[3]} -> {w[0]} {w[2]}x{w[3]}/{st} (N = {t.mm.n}): tiles of "
              f"{t.tile_n} on {t.mm.block_dim} blocks {us[0]:.2f} us, of {t.mm.base_n} on "
              f"{base.mm.block_dim} blocks {us[1]:.2f} us simulated ({us[0] / us[1]:.2f}x)")


def _epilogue(repeats: int) -> None:
    from kernels.conv2d import launch_epilogue
    from kernels.tune import npu_total_us
    s = rt.Stream()
    rng = np.random.default_rng(0)
    for shp, oc in [((1, 128, 28, 28), 512), ((1, 64, 56, 56), 256), ((1, 512, 7, 7), 2048)]:
        t0 = conv2d_tiling(shp, (oc, shp[1], 1, 1))
        out_shape = (1, oc) + shp[2:]
        y, r = (rt.to_device(rng.standard_normal(out_shape).astype(np.float32)) for _ in "yr")
        o = rt.device_empty(out_shape, np.float32)
        for blocks in sorted({2, 8, t0.epi_block_dim, min(48, oc)}):
            per = -(-oc // blocks)
            t = dataclasses.replace(t0, epi_block_dim=-(-oc // per), epi_rows_per_core=per)

            def run():
                launch_epilogue(y, o, t, s, residual=r, relu=True)
                s.synchronize()
            us = npu_total_us(run, "bias_act_kernel")
            ms = _cpu_ms(lambda: launch_epilogue(y, o, t, s, residual=r, relu=True), s, repeats)
            print(f"epilogue {oc}x{shp[2]}x{shp[3]}: {t.epi_block_dim} blocks {us:.2f} us "
                  f"simulated, {ms:.3f} ms CPU")


# the last 1x1 conv of each of ResNet-50's 16 bottleneck blocks, which the residual Add (then
# ReLU) follows: (x shape, output channels, count)
RESNET50_RESIDUAL_CONVS = [((1, 64, 56, 56), 256, 3), ((1, 128, 28, 28), 512, 4),
                           ((1, 256, 14, 14), 1024, 6), ((1, 512, 7, 7), 2048, 3)]


def _residual(repeats: int) -> None:
    from kernels.conv2d import conv2d
    s = rt.Stream()
    rng = np.random.default_rng(0)
    tot = {"plain": 0.0, "res": 0.0, "us": 0.0}
    for shp, oc, count in RESNET50_RESIDUAL_CONVS:
        t = conv2d_tiling(shp, (oc, shp[1], 1, 1))
        x = rng.standard_normal(shp).astype(np.float32)
        w = rng.standard_normal((oc, shp[1], 1, 1)).astype(np.float32)
        r = rng.standard_normal((1, oc) + shp[2:]).astype(np.float32)
        xd, rd = rt.to_device(x), rt.to_device(r)
        wm = rt.to_device(conv_weights(w, None, t))
        y = rt.device_empty((1, oc) + shp[2:], np.float32)
        out = rt.device_empty(y.shape, np.float32)
        z = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
        plain = _cpu_ms(lambda: launch_conv2d(xd, wm, y, None, z, t, s, relu=True, out=out), s,
                        repeats)
        res = _cpu_ms(lambda: launch_conv2d(xd, wm, y, None, z, t, s, residual=rd, relu=True,
                                            out=out), s, repeats)
        with rt.profile(npu=True) as prof:        # the matmul and any epilogue launch
            conv2d(x, w, None, residual=r, relu=True)
        us = sum(run.timeline.us for run in prof.npu_runs())
        print(f"{shp[1]}x{shp[2]}x{shp[3]} -> {oc} 1x1 + residual + ReLU x{count}: "
              f"{res:.3f} ms CPU ({plain:.3f} without the residual), {us:.2f} us simulated")
        tot["plain"] += plain * count
        tot["res"] += res * count
        tot["us"] += us * count
    print(f"the 16 per inference: {tot['res']:.1f} ms CPU ({tot['plain']:.1f} without the "
          f"residual), {tot['us']:.1f} us simulated")


# ResNet-50's convolutions (batch 1): (x shape, w shape, stride, padding, count in the model)
RESNET50_CONVS = [
    ((1, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1), ((1, 64, 56, 56), (64, 64, 1, 1), 1, 0, 1),
    ((1, 64, 56, 56), (64, 64, 3, 3), 1, 1, 3), ((1, 64, 56, 56), (256, 64, 1, 1), 1, 0, 4),
    ((1, 256, 56, 56), (64, 256, 1, 1), 1, 0, 2), ((1, 256, 56, 56), (128, 256, 1, 1), 1, 0, 1),
    ((1, 128, 56, 56), (128, 128, 3, 3), 2, 1, 1), ((1, 128, 28, 28), (512, 128, 1, 1), 1, 0, 4),
    ((1, 256, 56, 56), (512, 256, 1, 1), 2, 0, 1), ((1, 512, 28, 28), (128, 512, 1, 1), 1, 0, 3),
    ((1, 128, 28, 28), (128, 128, 3, 3), 1, 1, 3), ((1, 512, 28, 28), (256, 512, 1, 1), 1, 0, 1),
    ((1, 256, 28, 28), (256, 256, 3, 3), 2, 1, 1), ((1, 256, 14, 14), (1024, 256, 1, 1), 1, 0, 6),
    ((1, 512, 28, 28), (1024, 512, 1, 1), 2, 0, 1),
    ((1, 1024, 14, 14), (256, 1024, 1, 1), 1, 0, 5),
    ((1, 256, 14, 14), (256, 256, 3, 3), 1, 1, 5), ((1, 1024, 14, 14), (512, 1024, 1, 1), 1, 0, 1),
    ((1, 512, 14, 14), (512, 512, 3, 3), 2, 1, 1), ((1, 512, 7, 7), (2048, 512, 1, 1), 1, 0, 3),
    ((1, 1024, 14, 14), (2048, 1024, 1, 1), 2, 0, 1),
    ((1, 2048, 7, 7), (512, 2048, 1, 1), 1, 0, 2), ((1, 512, 7, 7), (512, 512, 3, 3), 1, 1, 2)]


def cube_macs(t) -> int:
    """Multiply-accumulates of the mmads of conv tiling t: per output tile, K chunk and L0B
    part, m and n rounded up to 16 (the cube's fractals) times the chunk's k."""
    mm, total = t.mm, 0
    tile_n = t.tile_n or mm.base_n
    for m0 in range(0, mm.m, mm.base_m):
        m16 = -(-min(mm.base_m, mm.m - m0) // 16) * 16
        for n0 in range(0, mm.n, tile_n):
            nt = min(tile_n, mm.n - n0)
            n16 = sum(-(-min(mm.l0_n, nt - j) // 16) * 16 for j in range(0, nt, mm.l0_n))
            total += m16 * n16 * mm.k        # the chunks' k add up to K
    return total


def operand_bytes(t) -> tuple:
    """(A, B, C) bytes conv tiling t moves per launch (float32): A = each output tile's K
    chunks of W' (m16 x k_pad) GM -> L0A, B = each tile's chunks (k_pad x nt, nt rounded to
    16) GM -> L1, C = each tile's m x nt L0C -> GM (a tap conv's nt with its garbage columns,
    which the fixpipe does not write: an upper bound there)."""
    mm = t.mm
    tile_n = t.tile_n or mm.base_n
    chunks = -(-mm.k // mm.base_k)
    kp = (chunks - 1) * mm.base_k + -(-(mm.k - (chunks - 1) * mm.base_k) // 8) * 8
    a = b = c = 0
    for m0 in range(0, mm.m, mm.base_m):
        mt = min(mm.base_m, mm.m - m0)
        for n0 in range(0, mm.n, tile_n):
            nt = min(tile_n, mm.n - n0)
            a += -(-mt // 16) * 16 * kp * 4
            b += kp * -(-nt // 16) * 16 * 4
            c += mt * nt * 4
    return a, b, c


def _bytes() -> None:
    tot = {"a": 0, "b": 0, "c": 0, "w": 0, "b1": 0}
    for shp, w, st, p, count in RESNET50_CONVS:
        t = conv2d_tiling(shp, w, st, p)
        a, b, c = operand_bytes(t)
        tiles_m = -(-t.mm.m // t.mm.base_m)
        tiles_n = -(-t.mm.n // (t.tile_n or t.mm.base_n))
        wbytes = w[0] * (w[1] * w[2] * w[3] + 1) * 4
        print(f"{shp[1]}x{shp[2]}x{shp[3]} -> {w[0]} {w[2]}x{w[3]}/{st} x{count}: "
              f"{tiles_m} x {tiles_n} tiles; A {a / 1e6:.2f} MB (weights {wbytes / 1e6:.2f}), "
              f"B {b / 1e6:.2f} MB ({b / tiles_m / 1e6:.2f} once), C {c / 1e6:.2f} MB")
        for key, v in (("a", a), ("b", b), ("c", c), ("w", wbytes), ("b1", b // tiles_m)):
            tot[key] += v * count
    print(f"per inference: A (GM -> L0A) {tot['a'] / 1e6:.1f} MB (the weights once "
          f"{tot['w'] / 1e6:.1f} MB), B (GM -> L1, then L1 -> L0B and the mmads' repack) "
          f"{tot['b'] / 1e6:.1f} MB each ({tot['b1'] / 1e6:.1f} MB once per conv), C (fixpipe) "
          f"{tot['c'] / 1e6:.1f} MB")


def _macs(repeats: int) -> None:
    from bench.cube_gemm import case
    ours, _ = case(128, 128, 128, np.float32, repeats, 20)
    rate = 128 ** 3 / ours               # MAC/s of one mmad, thread time
    print(f"cube GEMM rate: {2 * rate / 1e9:.0f} GFLOP/s (one 128 x 128 x 128 float32 mmad, "
          f"thread time; load {__import__('os').getloadavg()[0]:.1f})")
    s = rt.Stream()
    rng = np.random.default_rng(0)
    tot = {"real": 0, "cube": 0, "cpu": 0.0}
    for shp, w, st, p, count in RESNET50_CONVS:
        tc = conv2d_tiling(shp, w, st, p)
        real = w[0] * w[1] * w[2] * w[3] * tc.oh * tc.ow
        cube = cube_macs(tc)
        xd = rt.to_device(rng.standard_normal(shp).astype(np.float32))
        wm = rt.to_device(conv_weights(rng.standard_normal(w).astype(np.float32), None, tc))
        col = rt.device_empty((max(tc.col_elems, 16),), np.float32)
        yd = rt.device_empty((1, tc.oc, tc.oh, tc.ow), np.float32)
        z = rt.device_zeros((max(tc.mm.zeros_len, 16),), np.float32)
        ms = _cpu_ms(lambda: launch_conv2d(xd, wm, yd, col, z, tc, s), s, repeats)
        path = "tap" if tc.tap_wp else "1x1" if tc.direct else "1x1/2" if tc.subsample else \
            "phase" if tc.phase else "img2col"
        gemm = cube / rate * 1e3
        print(f"{shp[1]}x{shp[2]}x{shp[3]} -> {w[0]} {w[2]}x{w[3]}/{st} ({path}) x{count}: "
              f"{real / 1e6:.1f} M MACs, cube {cube / 1e6:.1f} M ({cube / real:.2f}x); "
              f"{ms:.2f} ms CPU, the GEMM {gemm:.2f}, the rest {ms - gemm:.2f}")
        tot["real"] += real * count
        tot["cube"] += cube * count
        tot["cpu"] += ms * count
    g_real, g_cube = tot["real"] / rate * 1e3, tot["cube"] / rate * 1e3
    print(f"all 53 convs: {tot['real'] / 1e9:.3f} G MACs, cube {tot['cube'] / 1e9:.3f} G "
          f"({tot['cube'] / tot['real']:.3f}x); {tot['cpu']:.1f} ms CPU, the GEMM "
          f"{g_cube:.1f} ms (of it the model's own MACs {g_real:.1f} ms, padding "
          f"{g_cube - g_real:.1f}), the rest {tot['cpu'] - g_cube:.1f} ms")


if __name__ == "__main__":
    main()
