"""`subsample2_kernel`: the img2col of a 1x1 convolution with stride 2 and no padding (ResNet's
stride-2 1x1 convolutions), col (C x OH*OW) = x[:, ::2, ::2], on dense UB rows with GatherMask.

Per pass of `nc` channels: one GM -> UB data_copy_pad per channel moves its even rows (the odd
ones skipped by the GM-side stride), each row 32-byte padded in UB (w8 elements apart); one
GatherMask in counter mode over the nc * OH * w8 elements with a user pattern (bit l set when
l % w8 is even and < W; built on the host, cached on the device) packs x[c, 2i, 2j] of all the
pass's channels back to back, which is exactly the pass's rows of col; one UB -> GM copy puts
them in place. The matmul adds col's ones row in L1 (`conv_matmul_kernel`'s `ones_row`), as for
the direct 1x1 convolutions. Three vector/DMA instructions per pass plus one copy per channel,
where the one-element-per-block img2col path issued two per output row.
"""
from __future__ import annotations

import numpy as np

import ascendc as asc

from ._host import ceil_div, device_constant, round_up

BUF = 16384          # UB elements of the pass's input rows (64 KiB); the output is 1/4 of it


def subsample_split(c: int, h: int, w: int, cores: int) -> tuple:
    """(nc, channels per core, block_dim): channels per pass fitting BUF, split over cores."""
    oh = (h + 1) // 2
    nc = max(1, min(c, BUF // (oh * round_up(w, 8))))
    per = ceil_div(c, cores)
    return nc, per, ceil_div(c, per)


def subsample_pattern(h: int, w: int, nc: int) -> np.ndarray:
    """uint32 user pattern over nc * OH rows of w8 lanes: one 32-byte block (8 words, the first
    two used for float32's 64 lanes) per repeat."""
    w8 = round_up(w, 8)
    lanes = round_up(nc * ((h + 1) // 2) * w8, 64)
    j = np.arange(lanes) % w8
    pick = (j < w) & (j % 2 == 0)
    words = np.packbits(pick.reshape(-1, 64), axis=1, bitorder="little").view(np.uint32)
    out = np.zeros((lanes // 64, 8), np.uint32)
    out[:, :2] = words
    return out.ravel()


def subsample_fits(c: int, h: int, w: int) -> bool:
    """Whether one channel's even rows fit the UB buffer."""
    return ((h + 1) // 2) * round_up(w, 8) <= BUF


@asc.jit
def subsample2_kernel(x: asc.GlobalAddress, col: asc.GlobalAddress, pat: asc.GlobalAddress,
                      c: int, h: int, w: int, nc: int, per_core: int, pat_words: int):
    """col[ch] = x[ch, ::2, ::2] for this core's channels (see the module doc)."""
    c0 = asc.get_block_idx() * per_core
    ncore = min(per_core, c - c0)
    if ncore <= 0:
        return
    oh = (h + 1) // 2
    ow = (w + 1) // 2
    w8 = (w + 7) // 8 * 8
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, c * h * w)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(col, c * oh * ow)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(pat, pat_words)
    pipe = asc.TPipe()
    xb = asc.TBuf(asc.TPosition.VECCALC)
    ob = asc.TBuf(asc.TPosition.VECCALC)
    pb = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(xb, BUF * 4)
    pipe.init_buffer(ob, (nc * oh * ow + 7) // 8 * 32)
    pipe.init_buffer(pb, pat_words * 4)
    xl = xb.get(x.dtype)
    ol = ob.get(col.dtype)
    pl = pb.get(pat.dtype)
    asc.data_copy(pl, pg, pat_words)
    for s in range(c0, c0 + ncore, nc):
        n = min(nc, c0 + ncore - s)
        asc.set_flag(asc.HardEvent.V_MTE2, 0)       # the last pass's gather has read xl
        asc.wait_flag(asc.HardEvent.V_MTE2, 0)
        for i in range(n):
            asc.data_copy_pad(xl[i * oh * w8:], xg[(s + i) * h * w:],
                              asc.DataCopyExtParams(oh, w * 4, w * 4, 0, 0))
        asc.set_flag(asc.HardEvent.MTE2_V, 0)
        asc.wait_flag(asc.HardEvent.MTE2_V, 0)
        asc.set_flag(asc.HardEvent.MTE3_V, 0)       # the last pass's output has left
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)
        asc.gather_mask(ol, xl, pl, True, n * oh * w8, asc.GatherMaskParams(1, 1, 8, 1))
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        asc.data_copy_pad(cg[s * oh * ow:], ol, asc.DataCopyExtParams(1, n * oh * ow * 4, 0, 0, 0))


def launch_subsample2(x, col, c: int, h: int, w: int, cores: int, stream,
                      **launch_options) -> None:
    """Queue subsample2_kernel: col (C x OH*OW, device) = x (C x H x W, device)[:, ::2, ::2]."""
    nc, per, block_dim = subsample_split(c, h, w, cores)
    pat = device_constant(("subsample2", h, w, nc), lambda: subsample_pattern(h, w, nc),
                          x.device)
    subsample2_kernel[block_dim, stream](x, col, pat, c, h, w, nc, per, pat.size,
                                         **launch_options)
