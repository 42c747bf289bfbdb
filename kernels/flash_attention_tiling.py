"""FlashAttention's tiling (kernels/flash_attention.py): the `FlashAttentionTiling` dataclass,
the buffer layout it implies on the SoC (`flash_attention_buffers`), the candidates that fit
(`flash_attention_tiling_candidates`, ranked by kernels/tune.py) and the default rule
(`flash_attention_tiling`, the tuner's choice for the main job's shape)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import rt

from ._host import round_up


class FlashAttentionBuffers(NamedTuple):
    """Bytes of every on-chip buffer of `flash_attention_kernel` and byte offsets of the views
    carved out of the shared ones, worked out on the host from the tiling (see
    `flash_attention_buffers`). The kernel gets it as one ConstExpr and unpacks it in this field
    order; `FlashAttentionTiling.validate` checks the same numbers against the SoC."""
    q_l1: int           # A1 queue: the Q tile (NZ)
    kv_l1: int          # B1 queue: a K block or a V chunk (NZ)
    p_l1: int           # A1 queue: a P chunk (NZ)
    s_ub: int           # VECIN queue: the f32 score tile S
    o_ub: int           # VECIN queue: the f32 O part of one S2 block
    l0a: int            # A2: Q (ZZ), then a P chunk
    l0b: int            # B2: K^T or a V chunk
    l0c: int            # CO1: S, then the O part
    calc: int           # VECCALC: the views below
    p_l0a: int          # offset of the P chunk in L0A
    o_l0c: int          # offset of the O part in L0C
    acc_ub: int         # offsets in VECCALC: the f32 O accumulator (S1 block x D),
    m_ub: int           #   the running row max m,
    l_ub: int           #   the running row sum l,
    alpha_ub: int       #   alpha = exp(m_old - m_new),
    mnew_ub: int        #   m_new,
    rowred_ub: int      #   a row max or row sum,
    fold_ub: int        #   the rows x 64 fold buffer of the row reductions,
    brcb_ub: int        #   a per-row value broadcast to 8 lanes by brcb,
    p16_ub: int         #   P in the input dtype (16-bit inputs only: 0 bytes for fp32),
    o16_ub: int         #   O in the input dtype (16-bit inputs only)
    ws_block: int       # f32 GM workspace elements per block: the S tile, then the O part
    wsp_block: int      # GM workspace elements (input dtype) per block: P


def _end_to_end(sizes):
    """Byte offsets of buffers laid end to end, and their total size."""
    offsets, pos = [], 0
    for nbytes in sizes:
        offsets.append(pos)
        pos += nbytes
    return offsets, pos


def flash_attention_buffers(tiling, d: int, itemsize: int) -> FlashAttentionBuffers:
    """The kernel's buffer sizes and view offsets for `tiling`, head dim `d`, input itemsize."""
    s1b, s2b, kc = tiling.s1_block, tiling.s2_block, tiling.kv_chunk
    f32 = 4
    low = itemsize < 4          # 16-bit copies of P and O exist only for 16-bit inputs
    row = s1b * f32             # one f32 per S1 row
    (acc_ub, m_ub, l_ub, alpha_ub, mnew_ub, rowred_ub, fold_ub, brcb_ub, p16_ub, o16_ub), calc = \
        _end_to_end((s1b * d * f32, row, row, row, row, row, 64 * row, 8 * row,
                     s1b * s2b * itemsize if low else 0, s1b * d * itemsize if low else 0))
    return FlashAttentionBuffers(
        q_l1=s1b * d * itemsize, kv_l1=max(s2b * d, kc * d) * itemsize, p_l1=s1b * kc * itemsize,
        s_ub=s1b * s2b * f32, o_ub=s1b * d * f32,
        l0a=(s1b * d + s1b * kc) * itemsize, l0b=max(d * s2b, kc * d) * itemsize,
        l0c=(s1b * s2b + s1b * d) * f32, calc=calc,
        p_l0a=s1b * d * itemsize, o_l0c=s1b * s2b * f32,
        acc_ub=acc_ub, m_ub=m_ub, l_ub=l_ub, alpha_ub=alpha_ub, mnew_ub=mnew_ub,
        rowred_ub=rowred_ub, fold_ub=fold_ub, brcb_ub=brcb_ub, p16_ub=p16_ub, o16_ub=o16_ub,
        ws_block=s1b * s2b + s1b * d, wsp_block=s1b * s2b)


@dataclass(frozen=True)
class FlashAttentionTiling:
    """Block sizes: S1 rows per block (s1_block), S2 columns per inner step (s2_block), and the
    K-chunk of the P·V product (kv_chunk) that fits L0A. All multiples of 16."""
    s1_block: int
    s2_block: int
    kv_chunk: int

    def validate(self, d: int, itemsize: int, soc=None):
        soc = soc or rt.get_soc()
        for name in ("s1_block", "s2_block", "kv_chunk"):
            v = getattr(self, name)
            if v <= 0 or v % 16:
                raise ValueError(f"FlashAttentionTiling: {name} must be a positive multiple of 16, "
                                 f"got {name}={v}")
        if self.s1_block > 240 or self.s2_block > 2032:
            raise ValueError(f"FlashAttentionTiling: s1_block must be <= 240 and s2_block <= 2032 "
                             f"(vector repeat limits: rows are repeats), got s1_block="
                             f"{self.s1_block} s2_block={self.s2_block}")
        if self.kv_chunk > self.s2_block:
            raise ValueError(f"FlashAttentionTiling: kv_chunk must be <= s2_block, got "
                             f"kv_chunk={self.kv_chunk} s2_block={self.s2_block}")
        b = flash_attention_buffers(self, d, itemsize)
        need = {
            "L0A": b.l0a,
            "L0B": b.l0b,
            "L0C": b.l0c,
            "UB": b.s_ub + b.o_ub + b.calc,
            # the queues, plus room for a V chunk next to a K block (the check always kept it)
            "L1": b.q_l1 + b.kv_l1 + b.p_l1 + self.kv_chunk * d * itemsize,
        }
        for level, nbytes in need.items():
            if nbytes > soc.capacity(level):
                raise ValueError(f"FlashAttentionTiling: {level} must hold the tiles, asked "
                                 f"{nbytes} bytes for {self} with D={d}, got capacity "
                                 f"{soc.capacity(level)}")
        return self


S2_BLOCKS = (64, 128, 256, 512, 1024)     # the tuner's grid (flash_attention_tiling_candidates)
KV_CHUNKS = (32, 64, 128)
S1_BLOCKS = (32, 64, 128)
MIN_S1_BLOCK = 64          # the default's floor (flash_attention_tiling)


def _largest_s1_block(s2b: int, kc: int, d: int, isz: int, cap: int, soc) -> int | None:
    """The largest S1 block (a multiple of 16, <= cap) that fits with (s2b, kc), or None."""
    for s1b in range(cap, 0, -16):
        try:
            FlashAttentionTiling(s1b, s2b, kc).validate(d, isz, soc)
            return s1b
        except ValueError:
            continue
    return None


def flash_attention_tiling_candidates(d: int, dtype, s1: int, s2: int, soc=None, *,
                                      fitting: bool = True) -> list:
    """The tilings `kernels.tune` ranks: S2 block in S2_BLOCKS, kv_chunk in KV_CHUNKS (<= the
    S2 block), S1 block in S1_BLOCKS plus the largest multiple of 16 that fits the SoC with that
    S2 block and kv_chunk; blocks capped at S1 / S2 rounded up to 16. With `fitting` (default)
    only those that fit `soc` (`FlashAttentionTiling.validate`), else the whole grid (the tuner
    reports the others as skipped, with the reason)."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    cap1, cap2 = min(240, round_up(s1, 16)), min(2032, round_up(s2, 16))
    out = []
    for s2b in dict.fromkeys(min(b, cap2) for b in S2_BLOCKS):
        for kc in dict.fromkeys(min(c, s2b) for c in KV_CHUNKS):
            s1bs = [min(b, cap1) for b in S1_BLOCKS]
            big = _largest_s1_block(s2b, kc, d, isz, cap1, soc)
            if big is not None:
                s1bs.append(big)
            for s1b in sorted(set(s1bs)):
                t = FlashAttentionTiling(s1b, s2b, kc)
                if fitting:
                    try:
                        t.validate(d, isz, soc)
                    except ValueError:
                        continue
                out.append(t)
    return list(dict.fromkeys(out))


def flash_attention_tiling(d: int, dtype, s1: int, s2: int, soc=None) -> FlashAttentionTiling:
    """The default tiling: the largest S2 block (S2_BLOCKS, capped at S2 rounded up to 16) that
    fits the SoC with an S1 block of at least MIN_S1_BLOCK rows (or all of S1; failing that, for
    a large D, of any height); with it the largest kv_chunk (KV_CHUNKS) that still leaves such an
    S1 block; then the largest S1 block (a multiple of 16, <= 240, capped at S1 rounded up to 16)
    that fits. Long S2 blocks amortise the per-block fixpipe / softmax / copy overheads, a long
    kv_chunk issues fewer, larger P.V mmads and copies, tall S1 blocks reload K and V less often.

    Measured with `kernels.tune` (simulated Ascend910B2, rt.npu's model as of this change, B1 N8
    S2048 D64 fp32, the 26 `flash_attention_tiling_candidates`): this rule's (80, 256, 128)
    ranks first at 227.5 µs; (64, 256, 64) 232.0, (64, 256, 128) 233.9, (96, 256, 32) 237.2,
    (96, 256, 64) 238.5; every S2 block of 128 is >= 1.14x the best, every S1 block of 32
    >= 1.39x (hence MIN_S1_BLOCK). The ranking moves with the pipe model: `python -m
    bench.flash_attention --tune` prints it for any shape, and ASCEND_EMU_TUNE_CHECK=1 runs
    tests/kernels/test_tune.py's full check that the default is still the tuner's choice."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    cap1, cap2 = min(240, round_up(s1, 16)), min(2032, round_up(s2, 16))
    s2_blocks = sorted({min(b, cap2) for b in (16, 32) + S2_BLOCKS}, reverse=True)
    for floor1 in (min(MIN_S1_BLOCK, cap1), 16):   # then: whatever fits (a large D)
        for s2b in s2_blocks:
            kcs = sorted({min(c, s2b) for c in (16,) + KV_CHUNKS}, reverse=True)
            fits = [(kc, s1b) for kc in kcs
                    if ((s1b := _largest_s1_block(s2b, kc, d, isz, cap1, soc)) or 0) >= floor1]
            if fits:
                kc, s1b = fits[0]           # the largest kv_chunk, then the tallest S1 block
                return FlashAttentionTiling(s1b, s2b, kc)
    raise ValueError(f"flash_attention: no tiling fits the SoC for D={d}, dtype={np.dtype(dtype)}")
