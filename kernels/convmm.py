"""The convolution's cube matmul: `kernels.matmul`'s kernel with the Conv epilogue folded in where
the cube can do it, as ATC's Conv fusions do on the NPU.

    out (OC x P) = act(W' (OC x K) @ B (K x P)),   act = ReLU (fixpipe `relu_en`) or none

`conv_matmul_kernel` is `kernels.matmul.matmul_kernel` (Nd2Nz -> load_data -> mmad -> fixpipe,
the same tiling and helpers) plus two things:
- a ones row: with `ones_row` = 1, B has only K - 1 rows in GM and its last row is all ones,
  brought into L1 from a ones workspace (`ones`, >= base_n elements) by one strided copy, next to
  the zero-filled K padding. W' carries the bias as its last column (`weight_matrix`), so the bias
  is accumulated on L0C in fp32 like any other K term. This is how the direct 1x1 convolutions
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
from ascendc.adv import nd2nz_strips

from .matmul import copy_a_nz, load_a_zz, load_b_zn


@asc.jit
def _copy_b_ones(q, bg, zg, og, off, kt, nt, nb, k_pad, rows):
    """B[k0:k0+kt, n0:n0+nt] -> L1 as 16-column strips (k_pad x 16 each), of which the first
    `rows` rows come from GM (at bg[off:], nb apart) and row kt - 1 is ones when rows < kt (the
    virtual ones row); the K-tail rows kt..k_pad-1 are zero-filled."""
    t = q.alloc_tensor(bg.dtype)
    strips = (nt + 15) // 16
    blk = 16 * bg.dtype.sizeof() // 32      # 32-byte blocks per 16-element row
    if kt < k_pad:
        asc.data_copy(t[kt * 16:], zg, asc.DataCopyParams(strips, (k_pad - kt) * blk, 0,
                                                          kt * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    if rows < kt:                           # one 16-element row of ones per strip
        asc.data_copy(t[rows * 16:], og, asc.DataCopyParams(strips, blk, 0, (k_pad - 1) * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    if rows > 0:
        nd2nz_strips(t, bg, off, rows, nt, nb, k_pad)
    q.enque(t)
    return q.deque(bg.dtype)


@asc.jit
def conv_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                       zeros: asc.GlobalAddress, ones: asc.GlobalAddress, m: int, n: int, k: int,
                       ones_row: int, relu: int,
                       base_m: asc.ConstExpr[int], base_n: asc.ConstExpr[int],
                       base_k: asc.ConstExpr[int], l0_n: asc.ConstExpr[int],
                       depth_l1: asc.ConstExpr[int], depth_l0a: asc.ConstExpr[int],
                       depth_l0b: asc.ConstExpr[int]):
    isz = a.dtype.sizeof()
    c0 = 32 // isz
    kg = k - ones_row                       # rows of B in GM
    tiles_m = (m + base_m - 1) // base_m
    tiles = tiles_m * ((n + base_n - 1) // base_n)
    bidx = asc.get_block_idx()
    bnum = asc.get_block_num()
    first = bidx * tiles // bnum
    last = (bidx + 1) * tiles // bnum
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
    qa1 = asc.TQue(asc.TPosition.A1, depth_l1)
    qb1 = asc.TQue(asc.TPosition.B1, depth_l1)
    qa2 = asc.TQue(asc.TPosition.A2, depth_l0a)
    qb2 = asc.TQue(asc.TPosition.B2, depth_l0b)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qa1, depth_l1, base_m * base_k * isz)
    pipe.init_buffer(qb1, depth_l1, base_k * base_n * isz)
    pipe.init_buffer(qa2, depth_l0a, base_m * base_k * isz)
    pipe.init_buffer(qb2, depth_l0b, base_k * l0_n * isz)
    pipe.init_buffer(qc, 1, base_m * base_n * 4)
    k_chunks = (k + base_k - 1) // base_k
    for t in range(first, last):
        m0 = t % tiles_m * base_m
        n0 = t // tiles_m * base_n
        mt = min(base_m, m - m0)
        nt = min(base_n, n - n0)
        m16 = (mt + 15) // 16 * 16
        cl = qc.alloc_tensor(asc.float32)
        for kc in range(k_chunks):
            k0 = kc * base_k
            kt = min(base_k, k - k0)
            k_pad = (kt + c0 - 1) // c0 * c0
            a1 = copy_a_nz(qa1, ag, zg, m0 * k + k0, mt, kt, k, m16, c0)
            b1 = _copy_b_ones(qb1, bg, zg, og, k0 * n + n0, kt, nt, n, k_pad,
                              min(kt, kg - k0))
            a2 = load_a_zz(qa2, a1, m16, kt, c0)
            qa1.free_tensor(a1)
            for j in range(0, nt, l0_n):
                ns = min(l0_n, nt - j)
                b2 = load_b_zn(qb2, b1, j // 16, ns, k_pad, c0)
                asc.mmad(cl[j * m16:], a2, b2,
                         asc.MmadParams(m=mt, n=ns, k=kt, unit_flag=0, cmatrix_source=False,
                                        cmatrix_init_val=kc == 0))
                qb2.free_tensor(b2)
            qa2.free_tensor(a2)
            qb1.free_tensor(b1)
        qc.enque(cl)
        cl = qc.deque(asc.float32)
        asc.fixpipe(cg[m0 * n + n0:], cl, asc.FixpipeParamsV220(nt, mt, m16, n,
                                                                 relu_en=relu != 0))
        qc.free_tensor(cl)


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
