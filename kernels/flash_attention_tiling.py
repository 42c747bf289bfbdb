"""FlashAttention's tiling (kernels/flash_attention.py): the `FlashAttentionTiling` dataclass,
the buffer layout it implies on the AIC and on each AIV of an AI Core group
(`flash_attention_buffers`), the candidates that fit (`flash_attention_tiling_candidates`, ranked
by kernels/tune.py) and the default rule (`flash_attention_tiling`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import rt

from ._host import round_up

# the forward pipeline's depth: S, P and O slots per group in the GM workspaces (the AIC computes
# S of block j + SLOTS - 1 before P V of block j)
SLOTS = 4


class FlashAttentionBuffers(NamedTuple):
    """Bytes (and buffer counts) of every on-chip buffer of `flash_attention_kernel` and byte
    offsets of the views carved out of the shared ones, worked out on the host from the tiling
    (see `flash_attention_buffers`). The kernel gets it as one ConstExpr;
    `FlashAttentionTiling.validate` checks the same numbers against the SoC.
    AIC (cube core): L1, L0A, L0B, L0C. Each AIV (vector core): UB for its share of the rows."""
    q_l1: int           # A1 queue: the Q tile (NZ), s1_block x D
    kv_l1: int          # B1 queue, kv_l1_num buffers: a K or V chunk (NZ), kv_chunk x D
    kv_l1_num: int
    p_l1: int           # A1 queue, p_l1_num buffers: a P chunk (NZ), s1_block x kv_chunk
    p_l1_num: int
    q_l0a: int          # A2: Q (ZZ), kept for the whole S1 block
    p_l0a: int          # A2 queue, p_l0a_num buffers: a P chunk (ZZ)
    p_l0a_num: int
    l0b: int            # B2 queue, l0b_num buffers: a K^T or V chunk
    l0b_num: int
    l0c: int            # CO1 queue, l0c_num buffers shared by the S chunks (s1_block x
    l0c_num: int        #   kv_chunk f32) and the O part of one S2 block (s1_block x D f32)
    rows: int           # S1 rows of one AIV (half the S1 block)
    pass_rows: int      # rows per softmax pass: an AIV works its rows in passes that fit UB
    s_ub: int           # VECIN queue, s_ub_num buffers: the scores of one pass as handed over
    s_ub_num: int       #   (f32; or float16, two buffers: the next pass is loaded meanwhile)
    o_ub: int           # VECIN queue: the f32 O part of the AIV's rows
    calc: int           # VECCALC: the views below
    acc_ub: int         # offsets in VECCALC: the f32 O accumulator (rows x D),
    m_ub: int           #   the running row max m and
    l_ub: int           #   the running row sum l of SLOTS S1 blocks (the pipeline runs on
                        #   across S1 blocks: up to SLOTS of them are in flight),
    alpha_ub: int       #   alpha = exp(m_old - m_new) of SLOTS S2 blocks (the pipeline's depth),
    mnew_ub: int        #   m_new,
    rowred_ub: int      #   a row max or row sum,
    fold_ub: int        #   the rows x 64 fold buffer of the row reductions,
    brcb_ub: int        #   a per-row value broadcast to 8 lanes by brcb,
    low_ub: int         #   16-bit inputs: the scaled Q rows, then O, in the input dtype
    sf_ub: int          #   float16 inputs: the f32 scores of one pass (cast from s_ub), and
                        #   the f32 scratch of the next S1 block's Q scaling (so at least rows x D;
                        #   float32 inputs scale Q in a buffer of the O-part queue)
    ws_block: int       # f32 GM workspace elements per group: SLOTS O-part slots
    wsp_block: int      # GM workspace elements (input dtype) per group: bfloat16 inputs SLOTS P
                        #   slots; float16 and float32 inputs 2 slots of the scaled Q block (their
                        #   P goes back into the S slot it came from: S and P share a dtype)
    wss_block: int      # GM workspace elements per group (f32, or the 16-bit input dtype):
                        #   SLOTS S slots


def _end_to_end(sizes):
    """Byte offsets of buffers laid end to end, and their total size."""
    offsets, pos = [], 0
    for nbytes in sizes:
        offsets.append(pos)
        pos += nbytes
    return offsets, pos


def half_scores(dtype) -> bool:
    """Whether S is handed over in 16 bits for `dtype` inputs: float16 only (bfloat16 keeps f32
    scores: a bfloat16 Q x scale or bfloat16 S would cost 8 bits of the scores' precision)."""
    return np.dtype(dtype) == np.dtype(np.float16)


def scaled_q(dtype) -> bool:
    """Whether the AIVs hand the cube Q x scale for `dtype` inputs, so S comes back scaled and
    the softmax has no scaling pass: float16 (its S is handed over in float16, `half_scores`)
    and float32 (Q x scale rounds once, in f32; exact for a power-of-two scale such as D = 64's
    1/8); bfloat16 keeps the AIVs scaling S (a bfloat16 Q x scale would round to 8 bits)."""
    return np.dtype(dtype) in (np.dtype(np.float16), np.dtype(np.float32))


def flash_attention_buffers(tiling, d: int, itemsize: int, soc=None,
                            half_s=None) -> FlashAttentionBuffers:
    """The kernel's buffer sizes and view offsets for `tiling`, head dim `d`, input itemsize:
    double buffers wherever two fit the SoC (L1 chunks, L0A P chunks, L0B, L0C); an AIV's rows
    in as few softmax passes (of a multiple of 8 rows) as fit its UB. `half_s` (default:
    itemsize 2; pass `half_scores(dtype)`): S is handed over in float16 (fixpipe F322F16, half
    the bytes of f32) and the AIVs scale Q before the cube sees it, so the 16-bit scores are the
    scaled ones (no overflow short of a softmax that is one-hot anyway)."""
    soc = soc or rt.get_soc()
    rows = tiling.s1_block // 2
    for pass_rows in range(rows, 8, -8):
        b = _buffers(tiling, d, itemsize, soc, pass_rows, half_s)
        if b.s_ub_num * b.s_ub + b.o_ub + b.calc <= soc.capacity("UB"):
            return b
    return _buffers(tiling, d, itemsize, soc, min(8, rows), half_s)


def _buffers(tiling, d, itemsize, soc, pass_rows, half_s) -> FlashAttentionBuffers:
    s1b, s2b, kc = tiling.s1_block, tiling.s2_block, tiling.kv_chunk
    f32 = 4
    low = itemsize < 4          # a 16-bit copy of P (and of O at the end) for 16-bit inputs
    rows = s1b // 2
    q_l1, kv_l1, p_l1 = s1b * d * itemsize, kc * d * itemsize, s1b * kc * itemsize
    q_l0a, p_l0a, l0b = s1b * d * itemsize, s1b * kc * itemsize, kc * d * itemsize
    l0c = s1b * max(kc, d) * f32
    # L1: four K/V and four P chunks where they fit (MTE2 loads the P V operands while the
    # fixpipes of the S chunks land), else two
    l1_num = 4 if q_l1 + 4 * (kv_l1 + p_l1) <= soc.capacity("L1") else 2
    p_l0a_num = 2 if q_l0a + 2 * p_l0a <= soc.capacity("L0A") else 1
    l0b_num = 2 if 2 * l0b <= soc.capacity("L0B") else 1
    l0c_num = 2 if 2 * l0c <= soc.capacity("L0C") else 1
    row = rows * f32             # one f32 per row of the AIV
    hs = itemsize == 2 if half_s is None else bool(half_s)
    qs = hs or itemsize == 4     # the AIVs scale Q for the cube (`scaled_q`)
    sz = 2 if hs else f32        # the scores as handed over
    ps = pass_rows * s2b
    (acc_ub, m_ub, l_ub, alpha_ub, mnew_ub, rowred_ub, fold_ub, brcb_ub, low_ub, sf_ub), calc = \
        _end_to_end((rows * d * f32, SLOTS * row, SLOTS * row, SLOTS * row, row, row, 64 * row,
                     8 * row, (rows * d if hs else max(ps, rows * d)) * itemsize if low else 0,
                     max(ps, rows * d) * f32 if hs else 0))
    return FlashAttentionBuffers(
        q_l1=q_l1, kv_l1=kv_l1, kv_l1_num=l1_num, p_l1=p_l1, p_l1_num=l1_num,
        q_l0a=q_l0a, p_l0a=p_l0a, p_l0a_num=p_l0a_num, l0b=l0b, l0b_num=l0b_num,
        l0c=l0c, l0c_num=l0c_num,
        rows=rows, pass_rows=pass_rows, s_ub=pass_rows * s2b * sz, s_ub_num=2 if hs else 1,
        o_ub=rows * d * f32, calc=calc,
        acc_ub=acc_ub, m_ub=m_ub, l_ub=l_ub, alpha_ub=alpha_ub, mnew_ub=mnew_ub,
        rowred_ub=rowred_ub, fold_ub=fold_ub, brcb_ub=brcb_ub, low_ub=low_ub, sf_ub=sf_ub,
        ws_block=SLOTS * s1b * d, wsp_block=2 * s1b * d if qs else SLOTS * s1b * s2b,
        wss_block=SLOTS * s1b * s2b)


@dataclass(frozen=True)
class FlashAttentionTiling:
    """Block sizes of the MIX kernel: S1 rows per AI Core group and step (s1_block: the AIC's
    mmad m; each of its two AIVs takes half the rows), S2 columns per pipeline step (s2_block:
    one S tile handed from the AIC to the AIVs), and the S2 chunk of every mmad (kv_chunk: the
    N of S = Q K^T and the K of O_part = P V, what L0B / L0C hold). All multiples of 16."""
    s1_block: int
    s2_block: int
    kv_chunk: int

    def validate(self, d: int, itemsize: int, soc=None, half_s=None):
        soc = soc or rt.get_soc()
        for name in ("s1_block", "s2_block", "kv_chunk"):
            v = getattr(self, name)
            if v <= 0 or v % 16:
                raise ValueError(f"FlashAttentionTiling: {name} must be a positive multiple of 16, "
                                 f"got {name}={v}")
        if self.s1_block > 256 or self.s2_block > 2032:
            raise ValueError(f"FlashAttentionTiling: s1_block must be <= 256 and s2_block <= 2032 "
                             f"(vector repeat limits: an AIV's rows are repeats), got s1_block="
                             f"{self.s1_block} s2_block={self.s2_block}")
        if self.kv_chunk > self.s2_block:
            raise ValueError(f"FlashAttentionTiling: kv_chunk must be <= s2_block, got "
                             f"kv_chunk={self.kv_chunk} s2_block={self.s2_block}")
        b = flash_attention_buffers(self, d, itemsize, soc, half_s)
        need = {
            "L0A": b.q_l0a + b.p_l0a_num * b.p_l0a,
            "L0B": b.l0b_num * b.l0b,
            "L0C": b.l0c_num * b.l0c,
            "L1": b.q_l1 + b.kv_l1_num * b.kv_l1 + b.p_l1_num * b.p_l1,
            "UB": b.s_ub_num * b.s_ub + b.o_ub + b.calc,      # each AIV
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


def _fits(t, d, dtype, soc) -> bool:
    try:
        t.validate(d, np.dtype(dtype).itemsize, soc, half_scores(dtype))
        return True
    except ValueError:
        return False


def flash_attention_tiling_candidates(d: int, dtype, s1: int, s2: int, soc=None, *,
                                      fitting: bool = True) -> list:
    """The tilings `kernels.tune` ranks: S1 block in S1_BLOCKS (plus 256), S2 block in S2_BLOCKS,
    kv_chunk in KV_CHUNKS (<= the S2 block); blocks capped at S1 (rounded up to 32) and S2
    (rounded up to 16). With `fitting` (default) only those that fit `soc`
    (`FlashAttentionTiling.validate`), else the whole grid (the tuner reports the others as
    skipped, with the reason)."""
    soc = soc or rt.get_soc()
    cap1, cap2 = min(256, round_up(s1, 32)), min(2032, round_up(s2, 16))
    out = []
    for s1b in dict.fromkeys(min(b, cap1) for b in S1_BLOCKS + (256,)):
        for s2b in dict.fromkeys(min(b, cap2) for b in S2_BLOCKS):
            for kc in dict.fromkeys(min(c, s2b) for c in KV_CHUNKS):
                t = FlashAttentionTiling(s1b, s2b, kc)
                if fitting and not _fits(t, d, dtype, soc):
                    continue
                out.append(t)
    return list(dict.fromkeys(out))


def flash_attention_tiling(d: int, dtype, s1: int, s2: int, soc=None) -> FlashAttentionTiling:
    """The default tiling: an S1 block of 128 rows per group (64 per AIV; fewer when S1 is
    shorter), then the largest S2 block of DEFAULT_S2_BLOCKS up to MAX_DEFAULT_S2_BLOCK for the
    input's itemsize, S2 rounded up to 16, and, past SPLIT_S2 keys, S2 / SLOTS (S2 / (SLOTS / 2)
    for float16, whose S comes in float16), and with it the largest kv_chunk that fit the SoC
    (smaller S1 blocks if nothing fits, for a large D). Tall S1 blocks reload K and V less
    often and give the cube large mmads; a long S2 block hands fewer O parts over per key (at
    long S the simulated kernel is bound by the GM traffic of its hand-offs through the chip's
    L2, docs/limitations.md); at short S, SLOTS S2 blocks per S1 block ranked faster than
    fewer, longer ones (below).

    Measured (simulated Ascend910B2, the calibrated model, compiled; 2026-12-06, one
    `rt.profile(npu=True)` launch of `flash_attention_with_stats` per tiling, as `kernels.tune`
    runs them): B1 N1 S1=3072 S2=8192 D128 fp16 (one wave of 24 groups, before the two Q
    slots): (128, 1024, 128) 93.2 µs, (128, 1024, 64) 97.9, (128, 512, 128) 98.5, (128, 512,
    64) 102.1, (128, 256, 128) 110.9, (64, 1024, 128) 127.7. B1 N8 S2048 D64 fp32 (the main
    job's shape): the default (128, 256, 64) 218.5 µs; the other fp32 tilings were not ranked
    again after this change. Later the same day, with the pipeline running on across S1 blocks
    and the last round of S1 blocks cut into parts: B1 N8 S2048 D64 fp32 (128, 256, 64) 192.8
    µs; B1 N3 S8192 D128 fp16 (128, 1024, 128) 642.5 µs. The candidates with S1 block 128 and
    S2 block >= 256 (9 of the 42 that fit; `kernels.tune` in a scratch script, about a minute
    each on the loaded machine: the goal shape and the smaller tilings were too slow) at B1 N1
    S1=6144 S2=4096 D128 fp16 (two rounds of S1 blocks on 24 groups): (128, 1024, 128) 93.65
    µs, (128, 1024, 64) 98.17, (128, 512, 128) 99.10, (128, 512, 64) 102.91, (128, 1024, 32)
    108.55; the default stays the first.
    At the goal shape, B1 N3 S8192 D128 fp16 (192 S1 blocks on 24 groups: 8 rounds), only the
    five that ranked first at S1=6144 S2=4096 (one candidate simulates for 8-25 wall minutes
    on the loaded machine, compile included; all 42 would take most of a day), ranked the
    same day with the 3-slot forward: (128, 1024, 128) 642.48 µs (45.3 % of the fp16
    peak), (128, 1024, 64) 685.89, (128, 512, 128) 688.19, (128, 512, 64) 718.75, (128,
    1024, 32) 776.10 (the busiest pipe of all five: the AIVs' VECTOR, 67-82 %). With the
    pipeline 4 slots deep (one flag id per direction, P written back into its S slot, float32's
    Q scaled by the AIVs) the same day, the five ranked again: the default 639.78 µs, (128,
    512, 128) 684.25, (128, 1024, 64) 685.25, (128, 512, 64) 716.86, (128, 1024, 32) 775.40;
    189.8 µs at the main job's shape (the other fp32 tilings not re-ranked). The default
    stays the first for float16 on Ascend910B2 (`python -m
    bench.flash_attention --dtype float16 --head-dim 128 --heads 3 --seq 8192 --no-backward
    --tune-only --tune-tilings "128,1024,128;128,1024,64;128,512,128;128,512,64;128,1024,32"`
    runs the same launches).
    float32 ranked again at the main job's shape B1 N8 S2048 D64 (2026-12-07, with the P
    chunks loaded into L1 in L0A's order and V transposed one load per 16-column matrix, which
    left the simulated times as they were; each launch as `python -m bench.flash_attention
    --no-backward --tune-only --tune-tilings "128,512,64;128,256,64;..."` runs it, from a
    scratch script printing each as it ends): (128, 512, 64) 189.22 µs, (128, 256, 64) 189.87,
    (128, 1024, 64) 196.30, (128, 512, 32) 207.81, (64, 512, 64) 230.44, (64, 256, 64) 235.51
    ((128, 512, 128) does not fit L0A); so MAX_DEFAULT_S2_BLOCK for 4-byte inputs went from 256
    to 512 (fewer hand-offs per key also cost less CPU; docs/performance.md).
    Away from those shapes (2026-12-07, the same launches from a scratch script; the tables are
    in docs/performance.md): float32 D64 and D128 (default S1 block 96: 128 rows of Q fill
    L0A) at S1024 and S4096, causal and not, D64 with 2 KV heads; bfloat16 and float16 D128 N3
    at S1024, S2048 (and bfloat16 S4096). The rule as it was (S2 block 512 for float32 and
    bfloat16, 1024 for float16, whatever S) ranked up to 11 % behind the first at S1024 (float32
    D128 causal (96, 512, 32) 73.05 µs against (96, 256, 32) 65.70; float16 (128, 1024, 128)
    30.15 against (128, 512, 128) 27.56) and 3.75 % behind at bfloat16 S4096 ((128, 512, 128)
    252.52 against (128, 1024, 128) 243.39): the best S2 block was S2 / 4 for float32 and
    bfloat16 (f32 scores) up to the itemsize's cap, S2 / 2 for float16, never below 256. With
    SPLIT_S2 and bfloat16's cap at 1024 the default is first or within 1 % of the first at every
    shape ranked (float32 D128 S1024 (96, 256, 32) 0.8 % behind (96, 512, 32); float16 S1024
    0.8 % behind); the main job's and the goal shape's defaults did not change.
    A slice of the grid (one group's S1 blocks) would simulate faster but not the same time:
    the groups share the model's L2 and HBM pools (one group: M12-128x8192 68.8 µs; eight
    groups with the same work each: M12-1024x8192 76.9 µs, docs/npu-model.md), so the goal
    shape was simulated whole.
    Only these were ranked (the full grid is `flash_attention_tiling_candidates`): `python -m
    bench.flash_attention --tune` ranks them all for any shape, and ASCEND_EMU_TUNE_CHECK=1 runs
    tests/kernels/test_tune.py's full check that the default is the tuner's choice for the main
    job's shape."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    cap1 = min(128, round_up(s1, 32))     # S1 rounded up to 16 rows per AIV
    # past SPLIT_S2 keys, SLOTS S2 blocks per S1 block (SLOTS / 2 for float16's 16-bit S)
    per_block = s2 * (2 if half_scores(dtype) else 1) // SLOTS
    cap2 = min(MAX_DEFAULT_S2_BLOCK[min(isz, 4)], round_up(s2, 16), max(SPLIT_S2, per_block))
    for s1b in sorted({min(b, cap1) for b in (128, 96, 64, 32, 16)}, reverse=True):
        for s2b in sorted({min(b, cap2) for b in DEFAULT_S2_BLOCKS}, reverse=True):
            for kc in sorted({min(c, s2b) for c in (128, 64, 32, 16)}, reverse=True):
                t = FlashAttentionTiling(s1b, s2b, kc)
                if _fits(t, d, dtype, soc):
                    return t
    raise ValueError(f"flash_attention: no tiling fits the SoC for D={d}, dtype={np.dtype(dtype)}")


DEFAULT_S2_BLOCKS = (16, 32, 64, 128, 256, 512, 1024)
MAX_DEFAULT_S2_BLOCK = {2: 1024, 4: 512}    # by input itemsize (measured, see above)
SPLIT_S2 = 256      # the default S2 block is at most max(SPLIT_S2, S2 / SLOTS) (measured)
