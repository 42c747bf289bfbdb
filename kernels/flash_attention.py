"""Tiled FlashAttention forward in the kernel language, a MIX kernel (MIX_AIC_1_2) built like
CANN's FlashAttentionScore on Atlas A2: each block is an AI Core group, its cube core (AIC) and
its two vector cores (AIVs) run at once and hand tiles over through a GM workspace, ordered by
cross-core flags (mode 2: the AIC and its AIVs).

per (batch, head, S1 block of s1_block rows; the group's AIVs take half the rows each), the
S2 blocks j of every S1 block of a group form one stream of steps (fully masked blocks skipped
when causal) through a pipeline SLOTS (4) deep that runs on across S1 blocks:
  AIV  at an S1 block's first step (one S1 block ahead; float16 and float32 inputs): its Q rows
       x scale -> a Q slot of the workspace;  set Q_READY  (so S comes back scaled)
  AIC  at an S1 block's first step: (wait Q_READY) Q GM -> L1 (Nd2Nz) -> L0A (ZZ)
  AIC  QK(x)   K chunks GM -> L1 (NZ == ZN of K^T) -> L0B;  mmad S = Q K^T -> L0C -> fixpipe
               -> S slot x % SLOTS of the workspace;  set S_READY   (computed while the AIVs
               run the softmax of steps x - LAG .. x - 1, LAG = SLOTS - 1: S, P and O slots are
               SLOTS-buffered; a flag id per direction, a counter the k-th wait of which takes
               the k-th set, i.e. slot k % SLOTS)
  AIV  wait S_READY;  S rows -> UB;  (bfloat16: scale,) causal mask, online softmax (running
       max m, sum l, alpha = exp(m_old - m_new) kept for the O update);  P -> back into S slot
       x % SLOTS (float16, float32: S and P share a dtype; bfloat16: P slot x % SLOTS);
       set P_READY
  AIC  PV(x)   wait P_READY;  P chunks -> L1 -> L0A, V chunks -> L1 -> L0B;  mmad O_part = P V
               accumulated in L0C -> fixpipe -> O slot x % SLOTS;  set O_READY
  AIV  wait O_READY (its copy starts during the softmax of step x + LAG);  O = O * alpha + O_part
  AIV  after an S1 block's last step: O / l (the division deferred to the end) -> GM;
       softmax_max = m, softmax_sum = l -> GM
The AIC's order is QK(0) .. QK(LAG), PV(0), QK(LAG + 1), PV(1), ...: S of step x + LAG is ready
before the AIVs finish step x + 1, so they never wait for the cube's round trip, and the next
S1 block's first S tiles are computed before this one's last P V (the pipeline fills and drains
once per group, not per S1 block; each AIV keeps m and l of up to SLOTS S1 blocks in flight);
the AIVs' order is softmax(x), update(x - LAG). A slot is rewritten only after what read it: the
AIC writes S(x + SLOTS) after it waited for P(x) (the AIVs read S(x) before they wrote P(x)); the
AIVs write P(x + SLOTS) after they waited for O(x) (the AIC read P(x) before it wrote O(x)); the
AIC writes O(x + SLOTS) after P(x + SLOTS), which the AIVs write after they read O(x). P in its S
slot (float16, float32): each AIV writes its P rows of a pass after it read their S rows, and the
AIC writes S(x + SLOTS) after it waited for P(x) and read it for P V(x) (MTE2 before the mmads
that precede S(x + SLOTS)'s mmad and fixpipe). On the CPU
a thread runs until it must wait, so the depth sets how many steps one context switch covers:
SLOTS 3 -> 4 took a forward of the main job from about 1200 to 850 futex sleeps.
One group per AI Core (cube core) of the SoC as the real op launches; groups stride over the
B*N*S1 blocks. kernels/flash_attention_cube.py and _vector.py hold the two sides; where an
inner step's CPU time goes: `python -m bench.fa_steps`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import ascendc as asc
import rt

from .flash_attention_backward import flash_attention_backward  # noqa: F401 (the op set)
from ._host import ceil_div, is_device
from .flash_attention_cube import (LAG, O_READY, P_READY, Q_READY, S_READY, SLOTS, XMODE, load_q,
                                   pv_block, qk_block)
from .flash_attention_tiling import (KV_CHUNKS, FlashAttentionBuffers,  # noqa: F401 (re-exported)
                                     FlashAttentionTiling, flash_attention_buffers, half_scores,
                                     scaled_q,
                                     flash_attention_tiling, flash_attention_tiling_candidates)
from .flash_attention_vector import (add_o_part, finish_rows, issue_o_part, issue_scores,
                                     load_scores, mask_above_diagonal, scale_q_rows,
                                     scale_q_rows_f32, softmax_step,
                                     store_p)

LAYOUTS = ("BNSD", "BSND", "BSH")
NEG_INF = -math.inf


# ---- the kernel's arguments, by what they mean ------------------------------------------------

class AttentionShape(NamedTuple):
    """The problem's sizes (run-time values)."""
    heads: int          # N, query heads
    kv_heads: int       # N_kv, key/value heads (divides N: grouped-query attention)
    s1: int             # query rows per head
    s2: int             # key/value rows per head
    tiles: int          # the work items the blocks stride over: S1 blocks, the last ones split
    whole: int          # items 0 .. whole - 1: S1 block t (of B * N * ceil(S1 / s1_block))
    parts: int          # each S1 block after them is `parts` items of part_rows rows (the
    part_rows: int      #   last one fewer): the last round of S1 blocks is spread over groups


class TensorStrides(NamedTuple):
    """Elements between consecutive rows, heads and batches of a tensor in its layout."""
    row: int
    head: int
    batch: int


class AttentionLayout(NamedTuple):
    """Where rows live in GM (run-time values): BNSD, BSND and BSH are strides."""
    q: TensorStrides    # q, and out (out has q's layout)
    kv: TensorStrides   # k and v


class AttentionVariant(NamedTuple):
    """What the kernel is compiled for (a ConstExpr: its branches stay compile-time)."""
    head_dim: int       # D, a multiple of 16
    causal: bool        # mask above the diagonal, skip the fully masked S2 blocks
    low_precision: bool  # 16-bit inputs: P and O are cast to the input dtype
    c0: int             # input elements per 32 bytes: the width of an NZ fractal
    s_quant: int        # fixpipe quant_pre of S: F322F16 (float16 inputs: Q scaled by the AIVs,
                        # S handed over in float16) or NoQuant (f32 S)
    q_scaled: bool      # the AIVs hand the cube Q x scale (float16 and float32 inputs), so S
                        # comes back scaled; else (bfloat16) the AIVs scale S


def attention_variant(head_dim: int, dtype, causal: bool = False) -> AttentionVariant:
    isz = np.dtype(dtype).itemsize
    quant = asc.QuantModes.F322F16 if half_scores(dtype) else asc.QuantModes.NoQuant
    return AttentionVariant(int(head_dim), bool(causal), isz < 4, 32 // isz, int(quant),
                            scaled_q(dtype))


@asc.jit
def _tile_rows(w, shape, s1b):
    """Work item w (`AttentionShape`: an S1 block of s1b rows, or a part of one of the last
    round's): its batch, head, first row and row count."""
    n_s1 = (shape.s1 + s1b - 1) // s1b
    t = w
    off = 0
    rows = s1b
    if w >= shape.whole:
        t = shape.whole + (w - shape.whole) // shape.parts
        off = ((w - shape.whole) % shape.parts) * shape.part_rows
        rows = min(shape.part_rows, s1b - off)
    s1_0 = (t % n_s1) * s1b + off
    return t // (shape.heads * n_s1), (t // n_s1) % shape.heads, s1_0, min(rows, shape.s1 - s1_0)


@asc.jit
def _s2_blocks(shape, s1_0, m, s2b, causal):
    """S2 blocks of an S1 block whose m rows start at s1_0 (causal: the fully masked ones
    skipped)."""
    n_s2 = (shape.s2 + s2b - 1) // s2b
    if causal:
        n_s2 = min(n_s2, (s1_0 + m - 1) // s2b + 1)
    return n_s2


@asc.jit
def _group_steps(shape, g, groups, s1b, s2b, causal):
    """The pipeline's steps of group g: the S2 blocks of all its S1 blocks."""
    steps = 0
    for t in range(g, shape.tiles, groups):
        b, n, s1_0, m = _tile_rows(t, shape, s1b)
        steps += _s2_blocks(shape, s1_0, m, s2b, causal)
    return steps


@asc.jit
def _next_step(t, j, n_s2, groups):
    """The step after S2 block j (of n_s2) of S1 block t: (S1 block, S2 block)."""
    if j + 1 == n_s2:
        return t + groups, 0
    return t, j + 1


@asc.jit
def _half_rows(m, sub):
    """AIV `sub`'s rows of an S1 block of m rows: [r0, r0 + mr)."""
    r0 = sub * ((m + 1) // 2)
    return r0, min(m, r0 + (m + 1) // 2) - r0


@asc.jit
def _scale_q_block(wq, q, t, shape, ql, s1b, sub, low, tmp, oin, d, scale):
    """float16 and float32: this AIV's rows of S1 block t's Q times the softmax scale -> the Q
    slot wq (rows d apart; `ql` q's strides; float32 through a buffer of the O-part queue `oin`,
    float16 through `low` and `tmp`); then Q_READY for the AIC."""
    b, n, s1_0, m = _tile_rows(t, shape, s1b)
    r0, mr = _half_rows(m, sub)
    if mr > 0:
        q_addr = q + (b * ql.batch + n * ql.head + (s1_0 + r0) * ql.row)
        if q.dtype.sizeof() == 4:
            scale_q_rows_f32(wq[r0 * d:], q_addr, oin, mr, d, ql.row, scale)
        else:
            scale_q_rows(wq[r0 * d:], q_addr, low, tmp, mr, d, ql.row, scale)
    asc.cross_core_set_flag(Q_READY, XMODE, asc.PipeID.PIPE_MTE3)


@asc.jit
def _fetch_o(oin, o_ws, slot, count):
    """Wait for the O part in O slot `slot`, start its copy (count elements, if any) to UB."""
    asc.cross_core_wait_flag(O_READY, XMODE, asc.PipeID.PIPE_MTE2)
    if count > 0:
        issue_o_part(oin, o_ws, count)


@asc.jit
def softmax_block(sin, oin, s_ws, p_ws, o_ws, sf, low, row_m, row_l, alpha, mnew, rowred, fold,
                  bc, slot, fetch_o, mr, o_rows, n2, q0, s2_0, d, s2b, ps, scale, s_quant, causal,
                  low_precision, q_scaled):
    """An AIV's softmax of one S2 block: its mr rows of the S slot (s_ws: row 0 of its rows) in
    passes of ps rows -> P (p_ws), alpha; then P_READY. With `fetch_o` it also waits for the O
    part of the step LAG back (its o_rows rows, o_ws; maybe of the previous S1 block) and starts
    its copy, so that it lands while the vector unit works: f16 S before the last pass's vector
    work; f32 S after it (under the P copy-out: on the CPU the AIC's P V is then done, not waited
    for); `add_o_part` uses it."""
    asc.cross_core_wait_flag(S_READY, XMODE, asc.PipeID.PIPE_MTE2)
    o_slot = (slot + SLOTS - LAG) % SLOTS
    last = (mr - 1) // ps * ps                  # the last pass's first row
    o_at = last                                 # f32 S: after the last pass's softmax
    if s_quant:                                 # f16 S: after the last prefetch of S
        o_at = max(0, last - ps)
        if mr > 0:
            issue_scores(sin, s_ws, min(ps, mr) * s2b)
    if fetch_o and mr == 0:                     # no rows: the flag is taken all the same
        _fetch_o(oin, o_ws, o_slot, o_rows * d)
    for p0 in range(0, mr, ps):
        pr = min(ps, mr - p0)
        if s_quant:                             # scaled float16 S, its next pass prefetched
            sh = sin.deque(s_ws.dtype)
            if p0 + ps < mr:
                issue_scores(sin, s_ws[(p0 + ps) * s2b:], min(ps, mr - p0 - ps) * s2b)
            if fetch_o and p0 == o_at:
                _fetch_o(oin, o_ws, o_slot, o_rows * d)
            asc.cast(sf, sh, asc.RoundMode.CAST_NONE, pr * s2b)
            if causal:
                mask_above_diagonal(sf, pr, n2, q0 + p0, s2_0, s2b)
            softmax_step(sf, row_m[p0:], row_l[p0:], alpha[p0:], mnew, rowred, fold, bc, pr,
                         n2, s2b)
            store_p(p_ws[p0 * s2b:], sf, sh, pr * s2b, True, False)   # P out of the S buffer
            sin.free_tensor(sh)
        else:
            su = load_scores(sin, s_ws[p0 * s2b:], pr * s2b, scale, q_scaled)
            if causal:
                mask_above_diagonal(su, pr, n2, q0 + p0, s2_0, s2b)
            softmax_step(su, row_m[p0:], row_l[p0:], alpha[p0:], mnew, rowred, fold, bc, pr,
                         n2, s2b)
            if fetch_o and p0 == o_at:
                _fetch_o(oin, o_ws, o_slot, o_rows * d)
            store_p(p_ws[p0 * s2b:], su, low, pr * s2b, low_precision)
            sin.free_tensor(su)
    asc.cross_core_set_flag(P_READY, XMODE, asc.PipeID.PIPE_MTE3)


@asc.jit
def aic_pipeline(q, k, v, wsp, wsg, wpg, wssg, qa1, qa2, kv1, p1, pa2, b2, lc, shape, layout, g,
                 groups, s1b, s2b, kc, d, c0, s_quant, causal, low_precision, q_scaled, q_slots,
                 l0c_num):
    """The AIC of group g: S1 blocks g, g + groups, ...; their S2 blocks are one pipeline of
    steps, LAG + 1 deep, that runs on across S1 blocks: S = Q K^T of step x + LAG (into its own S
    slot) before O_part = P V of step x, so the cube works while the AIVs run the softmax of
    step x + 1, and the first S tiles of the next S1 block are computed while the AIVs finish
    this one. `wpg`: the P slots (the S slots for float16 and float32); `q_slots`: the offset
    of this group's two slots of the scaled Q (`q_scaled`) in the workspace `wsp`."""
    steps = _group_steps(shape, g, groups, s1b, s2b, causal)
    group = shape.heads // shape.kv_heads
    ta, ja, tb, jb = g, 0, g, 0                 # the steps of stage 1 and of stage 2
    kt = 0                                      # S1 blocks so far: Q slot kt % 2
    for x in range(steps + LAG):
        if x < steps:                           # stage 1: S of step x in S slot x % SLOTS
            b, n, s1_0, m = _tile_rows(ta, shape, s1b)
            m16 = (m + 15) // 16 * 16
            if ja == 0:                         # a new S1 block: its Q -> L0A
                if q_scaled:                    # the Q block the AIVs scaled
                    asc.cross_core_wait_flag(Q_READY, XMODE, asc.PipeID.PIPE_MTE2)
                    load_q(qa1, qa2, wsp + (q_slots + (kt % 2) * s1b * d), m, m16, d, d, c0)
                else:
                    load_q(qa1, qa2, q + (b * layout.q.batch + n * layout.q.head +
                                          s1_0 * layout.q.row), m, m16, layout.q.row, d, c0)
                kt += 1
            slot = x % SLOTS
            s2_0 = ja * s2b
            qk_block(wssg[slot * s1b * s2b:], qa2, kv1, b2, lc,
                     k + (b * layout.kv.batch + (n // group) * layout.kv.head +
                          s2_0 * layout.kv.row), m, m16, min(s2b, shape.s2 - s2_0),
                     layout.kv.row, d, s2b, kc, c0, s_quant, l0c_num)
            asc.cross_core_set_flag(S_READY, XMODE, asc.PipeID.PIPE_FIX)
            ta, ja = _next_step(ta, ja, _s2_blocks(shape, s1_0, m, s2b, causal), groups)
        if x >= LAG:                            # stage 2: O_part of step x - LAG
            b, n, s1_0, m = _tile_rows(tb, shape, s1b)
            slot = (x - LAG) % SLOTS
            s2_0 = jb * s2b
            asc.cross_core_wait_flag(P_READY, XMODE, asc.PipeID.PIPE_MTE2)
            pv_block(wsg[slot * s1b * d:], wpg[slot * s1b * s2b:], p1, pa2, kv1, b2, lc,
                     v + (b * layout.kv.batch + (n // group) * layout.kv.head +
                          s2_0 * layout.kv.row), m, (m + 15) // 16 * 16,
                     min(s2b, shape.s2 - s2_0), layout.kv.row, d, s2b, kc, c0, low_precision)
            asc.cross_core_set_flag(O_READY, XMODE, asc.PipeID.PIPE_FIX)
            tb, jb = _next_step(tb, jb, _s2_blocks(shape, s1_0, m, s2b, causal), groups)


@asc.jit
def aiv_pipeline(q, out, smax, ssum, wsg, wpg, wssg, wqg, sin, oin, oacc, row_m, row_l, alphas,
                 mnew, rowred, fold, bc, low, sf, shape, layout, scale, g, groups, sub, rows, ps,
                 s1b, s2b, d, s_quant, causal, low_precision, q_scaled):
    """An AIV of group g: its half of the rows of S1 blocks g, g + groups, ...; per step x the
    softmax of step x, then the O update of step x - LAG (whose P V the AIC computed meanwhile;
    at the last S2 block of an S1 block, O / l and the stats -> GM), so the AIC always has the
    next S tile or P tile to work on. Up to SLOTS S1 blocks are in flight: each has its own m and
    l (set k % SLOTS of the k-th S1 block). `wpg`: the P slots (the S slots for float16 and
    float32); `wqg`: the two slots of the scaled Q (`q_scaled`)."""
    steps = _group_steps(shape, g, groups, s1b, s2b, causal)
    ta, ja, tb, jb = g, 0, g, 0                 # the steps of the softmax and of the O update
    ka, kb = 0, 0                               # S1 blocks the two have started
    for x in range(steps + LAG):
        b, n, s1_0, m = _tile_rows(tb, shape, s1b)      # the O update's S1 block
        r0b, mrb = _half_rows(m, sub)
        o_ws = wsg[((x + SLOTS - LAG) % SLOTS) * s1b * d + r0b * d:]
        if x < steps:                           # the softmax of step x (O_part x - LAG fetched)
            b, n, s1_0, m = _tile_rows(ta, shape, s1b)
            r0, mr = _half_rows(m, sub)
            if ja == 0:                         # a new S1 block
                if q_scaled:                    # Q x scale for the cube, one S1 block ahead: the
                    if ka == 0:                 # AIC finds the next Q ready
                        _scale_q_block(wqg, q, ta, shape, layout.q, s1b, sub, low, sf, oin, d,
                                       scale)
                    if ta + groups < shape.tiles:
                        _scale_q_block(wqg[((ka + 1) % 2) * s1b * d:], q, ta + groups, shape,
                                       layout.q, s1b, sub, low, sf, oin, d, scale)
                asc.duplicate(row_m[(ka % SLOTS) * rows:], NEG_INF, rows)
                asc.duplicate(row_l[(ka % SLOTS) * rows:], 0.0, rows)
                ka += 1
            ml = ((ka - 1) % SLOTS) * rows
            slot = x % SLOTS
            s2_0 = ja * s2b
            softmax_block(sin, oin, wssg[slot * s1b * s2b + r0 * s2b:],
                          wpg[slot * s1b * s2b + r0 * s2b:], o_ws, sf, low, row_m[ml:],
                          row_l[ml:], alphas[slot * rows:], mnew, rowred, fold, bc, slot,
                          x >= LAG, mr, mrb, min(s2b, shape.s2 - s2_0), s1_0 + r0, s2_0, d, s2b,
                          ps, scale, s_quant, causal, low_precision, q_scaled)
            ta, ja = _next_step(ta, ja, _s2_blocks(shape, s1_0, m, s2b, causal), groups)
        elif x >= LAG:                          # the pipeline drains: O_part x - LAG alone
            _fetch_o(oin, o_ws, (x + SLOTS - LAG) % SLOTS, mrb * d)
        if x >= LAG:                            # O = O * alpha + O_part of step x - LAG
            b, n, s1_0, m = _tile_rows(tb, shape, s1b)
            if mrb > 0:
                add_o_part(oacc, oin, bc, alphas[((x - LAG) % SLOTS) * rows:], mrb, d, jb == 0)
            n_s2 = _s2_blocks(shape, s1_0, m, s2b, causal)
            if jb + 1 == n_s2:                  # its S1 block is done
                if mrb > 0:
                    st_off = (b * shape.heads + n) * shape.s1 + s1_0 + r0b
                    ml = (kb % SLOTS) * rows
                    finish_rows(out + (b * layout.q.batch + n * layout.q.head +
                                       (s1_0 + r0b) * layout.q.row),
                                smax + st_off, ssum + st_off, oacc, low, bc, row_m[ml:],
                                row_l[ml:], mrb, d, layout.q.row, low_precision)
                kb += 1
            tb, jb = _next_step(tb, jb, n_s2, groups)


@asc.jit(kernel_type="MIX_AIC_1_2")
def flash_attention_kernel(q: asc.GlobalAddress, k: asc.GlobalAddress, v: asc.GlobalAddress,
                           out: asc.GlobalAddress, smax: asc.GlobalAddress,
                           ssum: asc.GlobalAddress, ws: asc.GlobalAddress, wsp: asc.GlobalAddress,
                           wss: asc.GlobalAddress,
                           shape: AttentionShape, layout: AttentionLayout, scale: float,
                           variant: asc.ConstExpr[AttentionVariant],
                           tiling: asc.ConstExpr[FlashAttentionTiling],
                           bufs: asc.ConstExpr[FlashAttentionBuffers]):
    """out = softmax(scale * q k^T [causal]) v and the row stats, for the tensors' `layout`;
    `bufs` is `flash_attention_buffers(tiling, ...)`: buffer sizes and view offsets. Each block
    is an AI Core group: its AIC and its two AIVs run this at once, each its own branch (the
    buffers here, the pipeline in `aic_pipeline` / `aiv_pipeline`)."""
    pipe = asc.TPipe()
    s1b, s2b, d = tiling.s1_block, tiling.s2_block, variant.head_dim
    wsg = asc.GlobalTensor()                    # this group's workspaces: O parts (f32), P, S,
    wpg = asc.GlobalTensor()                    # the scaled Q
    wssg = asc.GlobalTensor()
    wqg = asc.GlobalTensor()
    if asc.ascend_is_aic():
        qa1 = asc.TQue(asc.TPosition.A1, 1)
        kv1 = asc.TQue(asc.TPosition.B1, 1)
        p1 = asc.TQue(asc.TPosition.A1, 1)
        qa2_buf = asc.TBuf(asc.TPosition.A2)
        pa2 = asc.TQue(asc.TPosition.A2, 1)
        b2 = asc.TQue(asc.TPosition.B2, 1)
        lc = asc.TQue(asc.TPosition.CO1, 1)
        pipe.init_buffer(qa1, 1, bufs.q_l1)
        pipe.init_buffer(kv1, bufs.kv_l1_num, bufs.kv_l1)
        pipe.init_buffer(p1, bufs.p_l1_num, bufs.p_l1)
        pipe.init_buffer(qa2_buf, bufs.q_l0a)
        pipe.init_buffer(pa2, bufs.p_l0a_num, bufs.p_l0a)
        pipe.init_buffer(b2, bufs.l0b_num, bufs.l0b)
        pipe.init_buffer(lc, bufs.l0c_num, bufs.l0c)
        g = asc.get_block_idx()
        wsg.set_global_buffer(ws + g * bufs.ws_block, bufs.ws_block)
        wssg.set_global_buffer(wss + g * bufs.wss_block, bufs.wss_block)
        if variant.q_scaled:                    # P goes back into the S slot it came from
            wpg.set_global_buffer(wss + g * bufs.wss_block, bufs.wss_block)
        else:
            wpg.set_global_buffer(wsp + g * bufs.wsp_block, bufs.wsp_block)
        aic_pipeline(q, k, v, wsp, wsg, wpg, wssg, qa1, qa2_buf.get(q.dtype), kv1, p1, pa2, b2,
                     lc, shape, layout, g, asc.get_block_num(), s1b, s2b, tiling.kv_chunk, d,
                     variant.c0, variant.s_quant, variant.causal, variant.low_precision,
                     variant.q_scaled, g * bufs.wsp_block, bufs.l0c_num)
    else:
        sin = asc.TQue(asc.TPosition.VECIN, 2)
        oin = asc.TQue(asc.TPosition.VECIN, 1)
        calc_buf = asc.TBuf(asc.TPosition.VECCALC)
        pipe.init_buffer(sin, bufs.s_ub_num, bufs.s_ub)
        pipe.init_buffer(oin, 1, bufs.o_ub)
        pipe.init_buffer(calc_buf, bufs.calc)
        rows = bufs.rows
        n_low = 0
        if variant.s_quant:
            n_low = rows * d
        elif variant.low_precision:
            n_low = max(bufs.pass_rows * s2b, rows * d)
        g = asc.get_block_idx() // 2
        wsg.set_global_buffer(ws + g * bufs.ws_block, bufs.ws_block)
        wssg.set_global_buffer(wss + g * bufs.wss_block, bufs.wss_block)
        wqg.set_global_buffer(wsp + g * bufs.wsp_block, bufs.wsp_block)    # Q x scale, or P
        if variant.q_scaled:                    # P back into the S slot it came from
            wpg.set_global_buffer(wss + g * bufs.wss_block, bufs.wss_block)
        else:
            wpg.set_global_buffer(wsp + g * bufs.wsp_block, bufs.wsp_block)
        aiv_pipeline(q, out, smax, ssum, wsg, wpg, wssg, wqg, sin, oin,
                     calc_buf.get_with_offset(rows * d, bufs.acc_ub, asc.float32),
                     calc_buf.get_with_offset(SLOTS * rows, bufs.m_ub, asc.float32),
                     calc_buf.get_with_offset(SLOTS * rows, bufs.l_ub, asc.float32),
                     calc_buf.get_with_offset(SLOTS * rows, bufs.alpha_ub, asc.float32),
                     calc_buf.get_with_offset(rows, bufs.mnew_ub, asc.float32),
                     calc_buf.get_with_offset(rows, bufs.rowred_ub, asc.float32),
                     calc_buf.get_with_offset(rows * 64, bufs.fold_ub, asc.float32),
                     calc_buf.get_with_offset(rows * 8, bufs.brcb_ub, asc.float32),
                     calc_buf.get_with_offset(n_low, bufs.low_ub, out.dtype),
                     calc_buf.get_with_offset(max(bufs.pass_rows * s2b, rows * d)
                                              if variant.s_quant else 0, bufs.sf_ub,
                                              asc.float32),
                     shape, layout, scale, g, asc.get_block_num(), asc.get_sub_block_idx(), rows,
                     bufs.pass_rows, s1b, s2b, d, variant.s_quant, variant.causal,
                     variant.low_precision, variant.q_scaled)


def split_last_round(tiles, groups, s1, s1b):
    """(items, whole, parts, part_rows) of `AttentionShape` for `tiles` S1 blocks of s1b rows
    over `groups`: when the last round leaves groups idle (tiles % groups <= groups // 2) and
    every S1 block is whole (S1 % s1b == 0), its S1 blocks are cut into parts of a multiple of
    16 rows, one per group, so the groups end nearly together (a part still reads all of K
    and V: it costs more than its share of rows, less than a whole block)."""
    rest = tiles % groups
    parts = groups // rest if rest else 1
    if parts < 2 or s1 % s1b:
        return tiles, tiles, 1, s1b
    part_rows = (-(-s1b // parts) + 15) // 16 * 16
    parts = -(-s1b // part_rows)
    if parts < 2:
        return tiles, tiles, 1, s1b
    whole = tiles - rest
    return whole + rest * parts, whole, parts, part_rows


def attention_workspaces(bufs, block_dim, dtype) -> list:
    """The kernel's GM workspaces for `block_dim` groups: SLOTS O-part slots (f32); 2 slots of
    the scaled Q block (float16 and float32 inputs, whose P goes back into its S slot) or SLOTS P
    slots (bfloat16), in the input dtype; SLOTS S slots (f32, or float16)."""
    low = half_scores(dtype)
    return [rt.device_empty((block_dim * bufs.ws_block,), np.float32),
            rt.device_empty((block_dim * bufs.wsp_block,), dtype),
            rt.device_empty((block_dim * bufs.wss_block,), dtype if low else np.float32)]


def _strides(layout, shape, heads):
    """(B, N, S, D) and (row, head, batch) element strides of a tensor in `layout`."""
    rank = {"BNSD": 4, "BSND": 4, "BSH": 3}.get(layout)
    if rank is not None and len(shape) != rank:
        raise ValueError(f"flash_attention: a tensor in layout {layout} must be {rank}-D "
                         f"({', '.join(layout)}), got shape={tuple(shape)}")
    if rank is not None and min(shape) < 1:
        raise ValueError(f"flash_attention: every dim of a {layout} tensor must be >= 1, got "
                         f"shape={tuple(shape)}")
    if layout == "BNSD":
        b, n, s, d = shape
        return (b, n, s, d), (d, s * d, n * s * d)
    if layout == "BSND":
        b, s, n, d = shape
        return (b, n, s, d), (n * d, d, s * n * d)
    if layout == "BSH":
        b, s, h = shape
        if heads is None or h % heads:
            raise ValueError(f"flash_attention: BSH needs head_num dividing H, got H={h}, "
                             f"head_num={heads}")
        d = h // heads
        return (b, heads, s, d), (h, d, s * h)
    raise ValueError(f"flash_attention: layout must be one of {LAYOUTS}, got layout={layout!r}")


def flash_attention_with_stats(q, k, v, *, layout="BNSD", head_num=None, scale=None,
                               causal=False, stream=None, tiling=None, kv_head_num=None,
                               balance=True, **launch_options):
    """FlashAttention forward. Returns (out, softmax_max, softmax_sum); the stats are (B, N, S1)
    float32 (the real op broadcasts them to (B, N, S1, 8)). numpy in -> numpy out; rt.DeviceArray
    in -> DeviceArrays out, launched asynchronously on `stream`. `balance=False` keeps the last
    round of S1 blocks whole (`split_last_round` otherwise cuts it over the idle groups)."""
    dev = is_device(q, k, v)
    rt.ensure_device()
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"flash_attention: q, k, v must share a dtype, got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}")
    if np.dtype(q.dtype) not in (np.dtype(np.float32), np.dtype(np.float16),
                                 np.dtype(asc.bfloat16.numpy)):
        raise ValueError(f"flash_attention: dtype must be float32, float16 or bfloat16, got "
                         f"dtype={q.dtype}")
    kv_heads_bsh = kv_head_num or head_num
    (B, N, S1, D), qs = _strides(layout, q.shape, head_num)
    (Bk, NK, S2, Dk), ks = _strides(layout, k.shape, kv_heads_bsh)
    (_, NV, S2v, Dv), vs = _strides(layout, v.shape, kv_heads_bsh)
    if (Bk, Dk) != (B, D) or (NV, S2v, Dv) != (NK, S2, Dk) or N % NK:
        raise ValueError(f"flash_attention: k and v must be (B, N_kv, S2, D) with N_kv dividing "
                         f"N in layout {layout}, got q {q.shape}, k {k.shape}, v {v.shape}")
    if D % 16:
        raise ValueError(f"flash_attention: head dim D must be a multiple of 16, got D={D}")
    isz = np.dtype(q.dtype).itemsize
    t = (tiling or flash_attention_tiling(D, q.dtype, S1, S2)).validate(
        D, isz, half_s=half_scores(q.dtype))
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    tiles = B * N * ceil_div(S1, t.s1_block)
    # one block per AI Core group (cube core) as the real op launches; the core pool runs their
    # AIC and AIV instances on however many CPU cores there are
    block_dim = max(1, min(tiles, rt.get_soc().ai_core_num))
    alloc = rt.device_empty if dev else rt.host_empty
    out = alloc(q.shape, q.dtype)
    smax = alloc((B, N, S1), np.float32)
    ssum = alloc((B, N, S1), np.float32)
    # GM workspaces stay on the device in both paths; the launch keeps them alive until the
    # kernel has run
    bufs = flash_attention_buffers(t, D, isz, half_s=half_scores(q.dtype))
    gm = [a if dev else np.ascontiguousarray(a).reshape(-1) for a in (q, k, v)]
    gm += [x if dev else x.reshape(-1) for x in (out, smax, ssum)]
    gm += attention_workspaces(bufs, block_dim, q.dtype)
    shape = AttentionShape(N, NK, S1, S2, *(split_last_round(tiles, block_dim, S1, t.s1_block)
                                            if balance else (tiles, tiles, 1, t.s1_block)))
    strides = AttentionLayout(TensorStrides(*qs), TensorStrides(*ks))
    launch = (flash_attention_kernel[block_dim, stream] if stream is not None
              else flash_attention_kernel[block_dim])
    launch(*gm, shape, strides, scale, attention_variant(D, q.dtype, causal), t, bufs,
           **launch_options)
    return out, smax, ssum


def flash_attention(q, k, v, *, layout="BNSD", head_num=None, scale=None, causal=False,
                    stream=None, **kw):
    """Mirrors aclnnFlashAttentionScore (forward): softmax(scale * Q K^T [+ causal mask]) V."""
    return flash_attention_with_stats(q, k, v, layout=layout, head_num=head_num, scale=scale,
                                      causal=causal, stream=stream, **kw)[0]


def flash_attention_reference(q, k, v, *, layout="BNSD", head_num=None, scale=None,
                              causal=False, kv_head_num=None):
    """numpy (float64) reference; returns (out, softmax_max, softmax_sum)."""
    def to_bnsd(x, heads):
        (b, n, s, d), _ = _strides(layout, x.shape, heads)
        x = np.asarray(x).astype(np.float64)
        if layout == "BNSD":
            return x
        return x.reshape(b, s, n, d).transpose(0, 2, 1, 3)
    qq = to_bnsd(q, head_num)
    kk = to_bnsd(k, kv_head_num or head_num)
    vv = to_bnsd(v, kv_head_num or head_num)
    group = qq.shape[1] // kk.shape[1]
    kk = np.repeat(kk, group, axis=1)
    vv = np.repeat(vv, group, axis=1)
    d = qq.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    s = np.einsum("bnid,bnjd->bnij", qq, kk) * scale
    if causal:
        s1, s2 = s.shape[-2:]
        s = np.where(np.tril(np.ones((s1, s2), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    p = np.exp(s - mx)
    sm = p.sum(-1, keepdims=True)
    o = np.einsum("bnij,bnjd->bnid", p / sm, vv)
    if layout != "BNSD":
        o = o.transpose(0, 2, 1, 3).reshape(q.shape)
    return o, mx[..., 0], sm[..., 0]


def flash_attention_grad(q, k, v, dout, *, layout="BNSD", head_num=None, kv_head_num=None,
                         scale=None, causal=False, stream=None, **launch_options):
    """(dq, dk, dv) of sum(out * dout) for out = FlashAttention(q, k, v): the forward
    (`flash_attention_with_stats`) for out and its stats, then `flash_attention_backward`, both on
    `stream` for rt.DeviceArray inputs."""
    out, smax, ssum = flash_attention_with_stats(q, k, v, layout=layout, head_num=head_num,
                                                 kv_head_num=kv_head_num, scale=scale,
                                                 causal=causal, stream=stream, **launch_options)
    return flash_attention_backward(dout, q, k, v, out, smax, ssum, layout=layout,
                                    head_num=head_num, kv_head_num=kv_head_num, scale=scale,
                                    causal=causal, stream=stream, **launch_options)
