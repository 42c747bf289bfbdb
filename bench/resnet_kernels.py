"""Process CPU time of ResNet-50's data-movement-heavy kernels, one launch at a time (compiled).

    python -m bench.resnet_kernels [--repeats 15] [--tiles | --epilogue]

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
    args = ap.parse_args(argv)
    rt.ensure_device()
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


if __name__ == "__main__":
    main()
