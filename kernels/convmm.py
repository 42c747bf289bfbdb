"""The convolution's cube matmul: `kernels.matmul`'s kernel with the Conv epilogue folded in where
the cube can do it, as ATC's Conv fusions do on the NPU.

    out (OC x P) = act(W' (OC x K) @ B (K x P)),   act = ReLU (fixpipe `relu_en`) or none

`conv_matmul_kernel` is `kernels.matmul.matmul_kernel` (Nd2Nz -> load_data -> mmad -> fixpipe,
the same tiling, queues and tile loop: `tile_range`, `cube_queues`, `matmul_tiles`) plus two
things:
- a ones row: with `ones_row` = 1, B has only K - 1 rows in GM and its last row is all ones,
  brought into L1 from a ones workspace (`ones`, >= base_n elements) by one strided copy
  (`kernels.matmul.copy_b`), next to the zero-filled K padding. W' carries the bias as its
  last column (`weight_matrix`), so the bias is accumulated on L0C in fp32 like any other K
  term. This is how the direct 1x1 convolutions
  (which read x[n] in place as B) get their bias without a vector epilogue; the img2col paths
  have the ones row in GM already (`ones_row` = 0).
- ReLU on the way out: `fixpipe(..., relu_en=True)` (max(x, 0) as L0C leaves), so a Conv+Relu
  needs no epilogue at all. A residual Add still runs on the vector cores after the matmul
  (`bias_act_kernel`), since it must come before the ReLU.
"""
from __future__ import annotations

import numpy as np

import ascendc as asc
import rt

from .matmul import cube_queues, matmul_tiles, tile_range


@asc.jit
def conv_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                       zeros: asc.GlobalAddress, ones: asc.GlobalAddress, m: int, n: int, k: int,
                       ones_row: int, relu: int,
                       base_m: asc.ConstExpr[int], base_n: asc.ConstExpr[int],
                       base_k: asc.ConstExpr[int], l0_n: asc.ConstExpr[int],
                       depth_l1: asc.ConstExpr[int], depth_l0a: asc.ConstExpr[int],
                       depth_l0b: asc.ConstExpr[int]):
    kg = k - ones_row                       # rows of B in GM
    tiles_m, first, last = tile_range(m, n, base_m, base_n)
    if first >= last:
        return
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, m * k)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, kg * n)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c, m * n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(zeros)
    og = asc.GlobalTensor()
    og.set_global_buffer(ones)
    pipe = asc.TPipe()
    qa1, qb1, qa2, qb2, qc = cube_queues(pipe, a.dtype.sizeof(), base_m, base_n, base_k, l0_n,
                                         depth_l1, depth_l0a, depth_l0b)
    matmul_tiles(ag, bg, cg, zg, og, qa1, qb1, qa2, qb2, qc, m, n, k, kg, relu, tiles_m, first,
                 last, base_m, base_n, base_k, l0_n)


# ---- host side ---------------------------------------------------------------------------------

_ONES: dict = {}    # device id -> (rt Device, [DeviceArray, ...]): the ones workspaces


def device_ones(n: int, device: int | None = None) -> rt.DeviceArray:
    """A float32 DeviceArray of >= n ones on `device` (the current one if None), cached: kernels
    only read it, so launches on any stream may share it. Cached arrays are freed when the
    device is reset (a reset hook), never earlier, since an asynchronous launch may still be
    reading one."""
    dev = rt.device.get_device(device)
    entry = _ONES.get(dev.id)
    if entry is None or entry[0] is not dev:
        entry = _ONES[dev.id] = (dev, [])
        dev.reset_hooks.append(_drop_ones)
    if not entry[1] or entry[1][-1].size < n:
        entry[1].append(rt.to_device(np.ones(max(n, 4096), np.float32), device=dev.id))
    return entry[1][-1]


def _drop_ones(dev) -> None:
    entry = _ONES.get(dev.id)
    if entry is not None and entry[0] is dev:
        del _ONES[dev.id]
        for arr in entry[1]:
            arr.free()
