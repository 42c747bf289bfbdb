"""The convolution's cube matmul: `kernels.matmul`'s tile loop with the Conv epilogue folded in
where the cube can do it, as ATC's Conv fusions do on the NPU, and the weights in a fractal layout.

    out (OC x P) = act(W' (OC x K) @ B (K x P)),   act = ReLU (fixpipe `relu_en`) or none

`conv_matmul_kernel` runs `kernels.matmul.matmul_kernel`'s steps (B: Nd2Nz -> load_data -> mmad
-> fixpipe, the same tiling, queue depths and tile order: `tile_range`, `copy_b`, `mmad_strips`,
`store_c`),
with three differences:
- the weights are in GM in the cube's own layout, as ATC stores a Conv's weights (FRACTAL_Z)
  instead of ND: `cube_weights` lays W' out on the host, once, as the sequence of L0A images
  of its (base_m x base_k) chunks (ZZ: 16 x C0 fractals, row-major grid; K padded with zeros
  to C0), so each chunk is one contiguous `load_data` GM -> L0A (MTE2), with no Nd2Nz copy into
  L1 and no L1 -> L0A load. Chunk (tm, kc) starts at tm*base_m*KP + m16*kc*base_k, KP the
  padded K of all chunks, m16 the tile's rows rounded up to 16.
- a ones row: with `ones_row` = 1, B has only K - 1 rows in GM and its last row is all ones,
  brought into L1 from a ones workspace (`ones`, >= base_n elements) by one strided copy
  (`kernels.matmul.copy_b`), next to the zero-filled K padding. W' carries the bias as its
  last column (`weight_matrix`), so the bias is accumulated on L0C in fp32 like any other K
  term. This is how the direct 1x1 convolutions
  (which read x[n] in place as B) get their bias without a vector epilogue; the img2col paths
  have the ones row in GM already (`ones_row` = 0).
- the output tiles are tile_n <= base_n columns wide (a run-time argument; base_n sizes the
  buffers): the host evens the column tiles out (`kernels.conv2d.even_tile_n`: N = 784 as 208, 208,
  208, 160 instead of 256, 256, 256, 16), so no block gets a sliver while another gets a full
  tile.
- ReLU on the way out: `fixpipe(..., relu_en=True)` (max(x, 0) as L0C leaves), so a Conv+Relu
  needs no epilogue at all.
- the residual Add in the same launch (`epi` = 1: + residual, 2: + residual then ReLU; it must
  come before the ReLU, so the fixpipe writes the plain tile): each block, right after the
  fixpipe has written a tile to C, reads that tile back (GM -> UB, the rows of `EPI_TILE`
  elements at a time) with the same rows of the residual, adds them on its vector unit
  (`add` / `add_relu`) and writes the result over the tile (`residual_tile`), as the AIV of an
  ATC Conv+Add+Relu fusion does with the cube's output tile. FIX -> MTE2 is ordered by a
  FIX_MTE2 flag. No separate epilogue launch over the whole tensor, and the tile is read
  while it is still in the CPU's caches. A block with cube and vector work is not a MIX
  kernel here: the NPU view shows it as the labelled as-if AIC/AIV split (docs/npu-model.md).
"""
from __future__ import annotations

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, round_up
from .matmul import MatmulTiling, copy_b, mmad_strips, store_c, tile_range

EPI_TILE = 8192     # residual epilogue: UB buffer (elements), rows of a tile per pass
EPI_BUFFERS = 2     # its queues' depth (3 queues: 6 x 32 KiB, the whole UB of an A2 core)


@asc.jit
def load_a_gm(q, ag, off, m16, kt, c0):
    """The A chunk (m16 x kt, the L0A image `cube_weights` put at ag[off:]) -> L0A by load_data
    GM -> L0A: one call, or one per 16-row block when the fractals exceed 255 repeats. The A2
    queue orders MTE1 and M; this load is MTE2's, so it waits for M's last read of the buffer
    (M_MTE2) and M waits for it (MTE2_M)."""
    t = q.alloc_tensor(ag.dtype)
    asc.set_flag(asc.HardEvent.M_MTE2, 0)
    asc.wait_flag(asc.HardEvent.M_MTE2, 0)
    kb = (kt + c0 - 1) // c0
    if m16 // 16 * kb <= 255:
        asc.load_data(t, ag[off:], asc.LoadData2DParams(0, m16 // 16 * kb, 1, 0, 0, False, 0))
    else:
        for r in range(m16 // 16):
            asc.load_data(t[r * kb * 16 * c0:], ag[off + r * kb * 16 * c0:],
                          asc.LoadData2DParams(0, kb, 1, 0, 0, False, 0))
    asc.set_flag(asc.HardEvent.MTE2_M, 0)
    asc.wait_flag(asc.HardEvent.MTE2_M, 0)
    q.enque(t)
    return q.deque(ag.dtype)


@asc.jit
def weight_chunks(k, base_k, c0):
    """(K chunks, KP): the padded K of all chunks of `cube_weights`' layout (module doc)."""
    k_chunks = (k + base_k - 1) // base_k
    return (k_chunks, (k_chunks - 1) * base_k + (k - (k_chunks - 1) * base_k + c0 - 1) // c0 * c0)


@asc.jit
def tile_at(t, tiles_m, m, n, base_m, tile_n):
    """(m0, n0, mt, nt, m16) of output tile t (numbered column-major, `tile_range`)."""
    m0 = t % tiles_m * base_m
    n0 = t // tiles_m * tile_n
    mt = min(base_m, m - m0)
    return (m0, n0, mt, min(tile_n, n - n0), (mt + 15) // 16 * 16)


@asc.jit
def chunk_k(kc, k, base_k, c0):
    """(k0, kt, k_pad) of K chunk kc."""
    k0 = kc * base_k
    kt = min(base_k, k - k0)
    return (k0, kt, (kt + c0 - 1) // c0 * c0)


@asc.jit
def chunk_mmad(qb1, qa2, qb2, b1, ag, cl, off, m16, mt, nt, kt, k_pad, c0, l0_n, init):
    """One K chunk of a tile once its B chunk `b1` is in L1: the A chunk GM -> L0A
    (`load_a_gm`, at ag[off:]), the mmads into cl, both buffers freed."""
    a2 = load_a_gm(qa2, ag, off, m16, kt, c0)
    mmad_strips(qb2, b1, a2, cl, m16, mt, nt, kt, k_pad, c0, l0_n, init)
    qa2.free_tensor(a2)
    qb1.free_tensor(b1)


@asc.jit
def residual_tile(qy, qr, qo, cg, rg, off, mt, nt, n, relu, tile):
    """C[tile] = act(C[tile] + R[tile]) for the finished mt x nt tile at element `off` of C
    and R (rows n apart), act = ReLU if relu: rows of the tile GM -> UB (each 32-byte aligned,
    `tile` elements per pass), add / add_relu, UB -> GM over the same rows."""
    n8 = (nt + 7) // 8 * 8
    rows = max(1, tile // n8)
    for r in range(0, mt, rows):
        nr = min(rows, mt - r)
        o = off + r * n
        yl = qy.alloc_tensor(asc.float32)
        asc.data_copy_pad(yl, cg[o:], asc.DataCopyExtParams(nr, nt * 4, (n - nt) * 4, 0, 0))
        qy.enque(yl)
        rl = qr.alloc_tensor(asc.float32)
        asc.data_copy_pad(rl, rg[o:], asc.DataCopyExtParams(nr, nt * 4, (n - nt) * 4, 0, 0))
        qr.enque(rl)
        yl = qy.deque(asc.float32)
        rl = qr.deque(asc.float32)
        ol = qo.alloc_tensor(asc.float32)
        if relu != 0:
            asc.add_relu(ol, yl, rl, nr * n8)
        else:
            asc.add(ol, yl, rl, nr * n8)
        qy.free_tensor(yl)
        qr.free_tensor(rl)
        qo.enque(ol)
        ol = qo.deque(asc.float32)
        asc.data_copy_pad(cg[o:], ol, asc.DataCopyExtParams(nr, nt * 4, 0, (n - nt) * 4, 0))
        qo.free_tensor(ol)


@asc.jit
def conv_matmul_kernel(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
                       zeros: asc.GlobalAddress, ones: asc.GlobalAddress,
                       res: asc.GlobalAddress, m: int, n: int, k: int,
                       ones_row: int, relu: int, epi: int, tile_n: int,
                       base_m: asc.ConstExpr[int], base_n: asc.ConstExpr[int],
                       base_k: asc.ConstExpr[int], l0_n: asc.ConstExpr[int],
                       depth_l1: asc.ConstExpr[int], depth_l0a: asc.ConstExpr[int],
                       depth_l0b: asc.ConstExpr[int]):
    kg = k - ones_row                       # rows of B in GM
    tiles_m, first, last = tile_range(m, n, base_m, tile_n)
    if first >= last:
        return
    c0 = 32 // a.dtype.sizeof()
    k_chunks, kp_all = weight_chunks(k, base_k, c0)
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, (m + 15) // 16 * 16 * kp_all)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, kg * n)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c, m * n)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(zeros)
    og = asc.GlobalTensor()
    og.set_global_buffer(ones)
    pipe = asc.TPipe()
    isz = a.dtype.sizeof()
    qb1 = asc.TQue(asc.TPosition.B1, depth_l1)   # no A1: A goes GM -> L0A (load_a_gm)
    qa2 = asc.TQue(asc.TPosition.A2, depth_l0a)
    qb2 = asc.TQue(asc.TPosition.B2, depth_l0b)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qb1, depth_l1, base_k * base_n * isz)
    pipe.init_buffer(qa2, depth_l0a, base_m * base_k * isz)
    pipe.init_buffer(qb2, depth_l0b, base_k * l0_n * isz)
    pipe.init_buffer(qc, 1, base_m * base_n * 4)
    rg = asc.GlobalTensor()
    rg.set_global_buffer(res, m * n)
    qy = asc.TQue(asc.TPosition.VECIN, EPI_BUFFERS)
    qr = asc.TQue(asc.TPosition.VECIN, EPI_BUFFERS)
    qo = asc.TQue(asc.TPosition.VECOUT, EPI_BUFFERS)
    if epi != 0:
        pipe.init_buffer(qy, EPI_BUFFERS, EPI_TILE * 4)
        pipe.init_buffer(qr, EPI_BUFFERS, EPI_TILE * 4)
        pipe.init_buffer(qo, EPI_BUFFERS, EPI_TILE * 4)
    for t in range(first, last):
        m0, n0, mt, nt, m16 = tile_at(t, tiles_m, m, n, base_m, tile_n)
        cl = qc.alloc_tensor(asc.float32)
        for kc in range(k_chunks):
            k0, kt, k_pad = chunk_k(kc, k, base_k, c0)
            b1 = copy_b(qb1, bg, zg, og, k0 * n + n0, kt, nt, n, k_pad, min(kt, kg - k0))
            chunk_mmad(qb1, qa2, qb2, b1, ag, cl, m0 * kp_all + m16 * k0, m16, mt, nt, kt,
                       k_pad, c0, l0_n, kc == 0)
        store_c(qc, cl, cg, m0 * n + n0, mt, nt, m16, n, relu)
        if epi != 0:        # the tile just written: + residual (then ReLU) on the vector unit
            asc.set_flag(asc.HardEvent.FIX_MTE2, 0)
            asc.wait_flag(asc.HardEvent.FIX_MTE2, 0)
            residual_tile(qy, qr, qo, cg, rg, m0 * n + n0, mt, nt, n, epi - 1, EPI_TILE)


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


def cube_weights(wm: np.ndarray, mm: MatmulTiling) -> np.ndarray:
    """W' (M x K, float32) in GM as `conv_matmul_kernel` reads it with tiling mm: for each tile
    row tm, for each K chunk kc, the L0A image (ZZ) of the m16 x k_pad block, rows past M and
    columns past K zero (module doc). Returns a 1-D float32 array."""
    wm = np.asarray(wm, np.float32)
    m, k = wm.shape
    if (m, k) != (mm.m, mm.k):
        raise ValueError(f"cube_weights: wm must be mm.m x mm.k = {mm.m} x {mm.k}, got "
                         f"wm.shape={wm.shape}")
    c0 = 32 // np.dtype(mm.dtype).itemsize
    parts = []
    for m0 in range(0, m, mm.base_m):
        mt = min(mm.base_m, m - m0)
        m16 = round_up(mt, 16)
        for k0 in range(0, k, mm.base_k):
            kt = min(mm.base_k, k - k0)
            kp = round_up(kt, c0)
            blk = np.zeros((m16, kp), np.float32)
            blk[:mt, :kt] = wm[m0:m0 + mt, k0:k0 + kt]
            parts.append(blk.reshape(m16 // 16, 16, kp // c0, c0).transpose(0, 2, 1, 3).ravel())
    out = np.concatenate(parts)
    assert out.size == round_up(m, 16) * ((ceil_div(k, mm.base_k) - 1) * mm.base_k
                                          + round_up(k - (ceil_div(k, mm.base_k) - 1)
                                                     * mm.base_k, c0))
    return out
