"""FlashAttention backward's tiling (kernels/flash_attention_backward.py): the
`FlashAttentionBackwardTiling` dataclass, the buffers it implies on the SoC
(`flash_attention_backward_buffers`), the candidates that fit
(`flash_attention_backward_tiling_candidates`, ranked by kernels/tune.py) and the default rule
(`flash_attention_backward_tiling`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import rt

from ._host import ceil_div, round_up


# tiles in flight per group: workspace slots per group, and L1 buffers of the tiles the AIC
# keeps (the AIC issues S, dP of tile t + NSLOT - 1 before it takes the AIVs' P and dS of tile
# t: the cross-core round trip of a tile is hidden behind NSLOT - 1 tiles of cube work)
NSLOT = 6


class FlashAttentionBackwardBuffers(NamedTuple):
    """Bytes of every on-chip buffer of the backward kernel and the byte offsets of the views
    carved out of the shared ones (one ConstExpr; `FlashAttentionBackwardTiling.validate` checks
    the same numbers against the SoC). AIC: L1 queues, L0A/L0B/L0C views. AIV: the rows one
    AIV owns (`rows`) and its Unified Buffer views."""
    q_l1: int           # A1 (1 buffer in the dQ pass / NSLOT in dK/dV, 2 for float32): Q rows
                        # (NZ), the A operand of S = Q K^T
    do_l1: int          # A1 (1 / NSLOT or 2): dO rows (NZ), the A operand of dP = dO V^T
    k_l1: int           # B1 (NSLOT / 1): K rows (NZ == ZN of K^T)
    v_l1: int           # B1 (2 / 1): V rows (NZ == ZN of V^T)
    x_l1: int           # B1 (1): f32 only: dO, Q or K rows as 16-column strips (B of dV/dK/dQ)
    kx_l1: int          # B1 (1): one-pass form, f32 only: K_j as 16-column strips (B of dQ)
    p_l1: int           # A1 (2): P or dS (the A operand of dV / dK / dQ)
    a_slot: int         # A2: one of two operand slots (Q, dO, P^T, dS^T or dS)
    b_slot: int         # B2: one of two operand slots (K^T, V^T, dO, Q or K)
    l0c: int            # CO1: S, dP (s1 x s2 each), then the accumulators at acc_l0c
    dp_l0c: int
    acc_l0c: int        # dV and dK (s2 x D each, second at acc2_l0c), or dQ (s1 x D)
    acc2_l0c: int
    dq_l0c: int         # one-pass form: dQ_i's tile (s1 x D), after the two accumulators
    dq_l0c_n: int       # ... its elements (0 in the two-pass form)
    rows: int           # S1 rows per AIV (half an S1 block, rounded up to 8)
    calc: int           # VECCALC bytes: the views below
    s_ub: int           # f32 S -> P (rows x s2_block), also dO in f32 for D = rowsum(dO O)
    dp_ub: int          # f32 dP -> dS, also O in f32
    p16_ub: int         # P, dS, dO, O in the input dtype (16-bit inputs only)
    ds16_ub: int
    fold_ub: int        # rows x 64 fold buffer of the row sums
    brcb_ub: int        # a per-row value broadcast to 8 lanes
    lse_ub: int         # per-row max + ln(sum): P = exp(scale S - lse)
    dsum_ub: int        # per-row D = rowsum(dO * O)
    red_ub: int         # per-row scratch
    s_ub1: int          # the tile loop's second slot (kernels/..._backward_vector.py): S, dP,
    dp_ub1: int         # their 16-bit copies, lse and D of a rows x s2_block tile
    p16_ub1: int
    ds16_ub1: int
    lse_ub1: int
    dsum_ub1: int
    ws_slot: int        # f32 GM workspace elements per slot: S then dP (NSLOT slots per group)
    wsp_slot: int       # input-dtype GM workspace elements per slot: P then dS


def _end_to_end(sizes):
    offsets, pos = [], 0
    for nbytes in sizes:
        offsets.append(pos)
        pos += nbytes
    return offsets, pos


def half_scores(dtype) -> bool:
    """Whether S and dP are handed over in 16 bits for `dtype` inputs: float16 only (as the
    forward's S; bfloat16 keeps f32, its 8-bit mantissa would cost the scores' precision)."""
    return np.dtype(dtype) == np.dtype(np.float16)


def aiv_rows(s1_block: int) -> int:
    """Rows of an S1 block each of a group's two AIVs owns (the second may own fewer)."""
    return round_up(ceil_div(s1_block, 2), 8)


def flash_attention_backward_buffers(tiling, d: int,
                                     itemsize: int) -> FlashAttentionBackwardBuffers:
    s1b, s2b = tiling.s1_block, tiling.s2_block
    one = tiling.one_pass
    f32 = 4
    low = itemsize < 4
    h = aiv_rows(s1b)
    wide = max(s2b, d)                  # a row of the S / dP tile, or of dO / O
    # two UB slots (the AIVs' tile loop): slot 0 also holds dO / O rows (wide), slot 1 a tile
    (s_ub, dp_ub, p16_ub, ds16_ub, lse_ub, dsum_ub, s_ub1, dp_ub1, p16_ub1, ds16_ub1, lse_ub1,
     dsum_ub1, fold_ub, brcb_ub, red_ub), calc = \
        _end_to_end((h * wide * f32, h * wide * f32, h * wide * itemsize if low else 0,
                     h * wide * itemsize if low else 0, h * f32, h * f32,
                     h * s2b * f32, h * s2b * f32, h * s2b * itemsize if low else 0,
                     h * s2b * itemsize if low else 0, h * f32, h * f32,
                     h * 64 * f32, h * 8 * f32, h * f32))
    score = s1b * s2b * f32
    acc = max(2 * s2b * d, s1b * d) * f32
    dq_tile = s1b * d * f32 if one else 0
    return FlashAttentionBackwardBuffers(
        q_l1=s1b * d * itemsize, do_l1=s1b * d * itemsize, k_l1=s2b * d * itemsize,
        v_l1=s2b * d * itemsize, x_l1=max(s1b, s2b) * d * itemsize if not low else 32,
        kx_l1=s2b * d * itemsize if one and not low else 32,
        p_l1=s1b * s2b * itemsize,
        a_slot=max(s1b * d, s1b * s2b) * itemsize, b_slot=max(s1b, s2b) * d * itemsize,
        l0c=2 * score + acc + dq_tile, dp_l0c=score, acc_l0c=2 * score,
        acc2_l0c=2 * score + s2b * d * f32, dq_l0c=2 * score + acc,
        dq_l0c_n=dq_tile // f32,
        rows=h, calc=calc, s_ub=s_ub, dp_ub=dp_ub, p16_ub=p16_ub, ds16_ub=ds16_ub,
        fold_ub=fold_ub, brcb_ub=brcb_ub, lse_ub=lse_ub, dsum_ub=dsum_ub, red_ub=red_ub,
        s_ub1=s_ub1, dp_ub1=dp_ub1, p16_ub1=p16_ub1, ds16_ub1=ds16_ub1, lse_ub1=lse_ub1,
        dsum_ub1=dsum_ub1,
        ws_slot=2 * s1b * s2b, wsp_slot=2 * s1b * s2b)


@dataclass(frozen=True)
class FlashAttentionBackwardTiling:
    """S1 rows (s1_block) and S2 columns (s2_block) of the score tile one AI Core group works on
    per step, both multiples of 16, and the form: `one_pass` (S, dP once per tile pair, dQ added
    atomically into a float32 GM workspace: 5 matmuls) or two passes (dQ, then dK / dV, each
    recomputing S and dP: 7 matmuls; every accumulator owned by one group, deterministic)."""
    s1_block: int
    s2_block: int
    one_pass: bool = True

    def validate(self, d: int, itemsize: int, soc=None):
        soc = soc or rt.get_soc()
        for name in ("s1_block", "s2_block"):
            v = getattr(self, name)
            if v <= 0 or v % 16:
                raise ValueError(f"FlashAttentionBackwardTiling: {name} must be a positive "
                                 f"multiple of 16, got {name}={v}")
        if self.s1_block > 240 or self.s2_block > 2032:
            raise ValueError(f"FlashAttentionBackwardTiling: s1_block must be <= 240 and "
                             f"s2_block <= 2032 (vector repeat limits), got s1_block="
                             f"{self.s1_block} s2_block={self.s2_block}")
        b = flash_attention_backward_buffers(self, d, itemsize)
        l1_dq = NSLOT * b.k_l1 + 2 * b.v_l1 + b.q_l1 + b.do_l1     # the dQ pass's L1 tiles
        held = NSLOT if itemsize < 4 else 2     # Q_i, dO_i held (16-bit) or double-buffered
        l1_dkv = held * (b.q_l1 + b.do_l1) + b.k_l1 + b.v_l1        # the dK / dV pass's
        if self.one_pass:
            l1_dq = 0
        need = {"L1": max(l1_dq, l1_dkv) + 2 * b.p_l1 + b.x_l1 + b.kx_l1,
                "L0A": 2 * b.a_slot, "L0B": 2 * b.b_slot, "L0C": b.l0c, "UB": b.calc}
        for level, nbytes in need.items():
            if nbytes > soc.capacity(level):
                raise ValueError(f"FlashAttentionBackwardTiling: {level} must hold the tiles, "
                                 f"asked {nbytes} bytes for {self} with D={d}, got capacity "
                                 f"{soc.capacity(level)}")
        return self


S1_BLOCKS = (32, 64, 96, 128, 160, 192)     # the tuner's grid
S2_BLOCKS = (32, 64, 128, 256)


def flash_attention_backward_tiling_candidates(d: int, dtype, s1: int, s2: int, soc=None, *,
                                               fitting: bool = True) -> list:
    """The tilings `kernels.tune` ranks: one-pass and two-pass forms, S1 block in S1_BLOCKS, S2
    block in S2_BLOCKS, each capped at S1 / S2 rounded up to 16, and the default tiling; with
    `fitting` only those that fit `soc`."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    cap1, cap2 = min(240, round_up(s1, 16)), min(2032, round_up(s2, 16))
    out = []
    s1s = list(dict.fromkeys(min(b, cap1) for b in S1_BLOCKS))
    s2s = list(dict.fromkeys(min(b, cap2) for b in S2_BLOCKS))
    for t in (FlashAttentionBackwardTiling(a, b, one) for one in (True, False) for a in s1s
              for b in s2s):
        if fitting:
            try:
                t.validate(d, isz, soc)
            except ValueError:
                continue
        out.append(t)
    default = flash_attention_backward_tiling(d, dtype, s1, s2, soc)     # (may be off the grid)
    return out if default in out else out + [default]


def flash_attention_backward_tiling(d: int, dtype, s1: int, s2: int,
                                    soc=None) -> FlashAttentionBackwardTiling:
    """The default, in the one-pass form: the widest S2 block (<= 128) that fits with an S1
    block of at least 48 rows (else 32, else 16), then the tallest S1 block that fits with it
    (<= 128); blocks multiples of 16, capped at S1 / S2 rounded up to 16. L0C holds S, dP, the
    two s2_block x D accumulators and dQ's s1_block x D tile at once, which bounds the tile
    (D=128, 16-bit: 64 x 64; D=64, float32: 48 x 128). Ranked by kernels.tune on the
    simulated Ascend910B2 (docs/performance.md, 2026-12-06): first at B1 N3 S8192 D128 float16
    (64 x 64 before 80 x 48; at S2048 also before 48 x 64, 32 x 80 and 96 x 32: S1 blocks
    under 48 rows reload K and V too often) and at B1 N8 S2048 D64 float32 (48 x 128, then 64
    x 112, 96 x 80, 80 x 96, 112 x 64, 128 x 48)."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    cap1, cap2 = min(128, round_up(s1, 16)), min(128, round_up(s2, 16))

    def fits(s1b, s2b):
        try:
            FlashAttentionBackwardTiling(s1b, s2b).validate(d, isz, soc)
            return True
        except ValueError:
            return False
    for floor in (48, 32, 16):
        s1_floor = min(floor, cap1)
        for s2b in range(cap2 - cap2 % 16, 0, -16):
            if fits(s1_floor, s2b):
                s1b = max(b for b in range(s1_floor, cap1 + 1, 16) if fits(b, s2b))
                return FlashAttentionBackwardTiling(s1b, s2b)
    raise ValueError(f"flash_attention_backward: no tiling fits the SoC for D={d}, "
                     f"dtype={np.dtype(dtype)}")
