"""Tiled FlashAttention forward in the kernel language, structured like CANN's
FlashAttentionScore on Atlas A2 (separated cube/vector cores talking through a GM workspace):

per (batch, head, S1 block):
  Q  GM -> L1 (Nd2Nz) -> L0A (ZZ)
  for each S2 block (fully masked blocks skipped when causal):
    K  GM -> L1 (NZ == ZN of K^T) -> L0B;  mmad  S = Q K^T  -> L0C -> fixpipe -> GM workspace
    S  GM -> UB;  scale, causal mask, online softmax on the whole tile: rows are the repeats of
       the vector ops (row max/sum by folding 64-lane chunks, then whole_reduce; the running max
       m broadcast back by brcb), running max m and running sum l per row
    P  UB -> GM workspace -> L1 -> L0A in chunks;  V -> L1 -> L0B (transposed fractals)
    mmad O_part = P V -> L0C -> fixpipe -> GM workspace -> UB;  O = O * exp(m_old - m_new) + O_part
       (the factor broadcast by brcb, one repeat per row)
  O / l (the division deferred to the end) -> GM;  softmax_max = m, softmax_sum = l  -> GM
One block per AI core of the SoC (as the real op launches); blocks stride over the B*N*S1 tiles.
Where an inner step's CPU time goes: `python -m bench.fa_steps`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt
from ascendc.jit import ensure_device
from ascendc.lang.dtypes import BFLOAT16

from ._host import ceil_div, is_device, round_up

LAYOUTS = ("BNSD", "BSND", "BSH")
NEG_INF = -math.inf
CALC_PER_ROW = 77   # f32 UB scratch per S1 row besides O: m, l, alpha, m_new, row max/sum, 64 + 8


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
        need = {
            "L0A": (self.s1_block * d + self.s1_block * self.kv_chunk) * itemsize,
            "L0B": max(d * self.s2_block, self.kv_chunk * d) * itemsize,
            "L0C": (self.s1_block * self.s2_block + self.s1_block * d) * 4,
            "UB": (self.s1_block * self.s2_block * 4 + self.s1_block * d * 4      # sin, oin
                   + self.s1_block * (d + CALC_PER_ROW) * 4                          # calc
                   + ((self.s1_block * self.s2_block + self.s1_block * d) * itemsize
                      if itemsize < 4 else 0)),
            "L1": (self.s1_block * d + self.s2_block * d + self.s1_block * self.kv_chunk
                   + self.kv_chunk * d) * itemsize,
        }
        for level, nbytes in need.items():
            if nbytes > soc.capacity(level):
                raise ValueError(f"FlashAttentionTiling: {level} must hold the tiles, asked "
                                 f"{nbytes} bytes for {self} with D={d}, got capacity "
                                 f"{soc.capacity(level)}")
        return self


def flash_attention_tiling(d: int, dtype, s1: int, s2: int, soc=None) -> FlashAttentionTiling:
    """The largest tiles that fit the SoC, like the real op's defaults (S1 block 64/128, S2 block
    up to 1024), shrunk for fp32 and for D=128."""
    soc = soc or rt.get_soc()
    isz = np.dtype(dtype).itemsize
    for s1b, s2b in ((128, 1024), (128, 512), (64, 512), (128, 256), (64, 256), (64, 128),
                     (32, 128), (16, 64), (16, 32), (16, 16)):
        s2b_eff = min(s2b, round_up(s2, 16))
        s1b_eff = min(s1b, round_up(s1, 16))
        kc = min(s2b_eff, 128)
        t = FlashAttentionTiling(s1b_eff, s2b_eff, kc)
        try:
            return t.validate(d, isz, soc)
        except ValueError:
            continue
    raise ValueError(f"flash_attention: no tiling fits the SoC for D={d}, dtype={np.dtype(dtype)}")


@asc.jit
def _load_rows_nz(que, g, rows, cols, row_stride, strip_rows, dtype):
    """GM (rows x cols, row stride) -> L1 NZ with `strip_rows` rows per C0 strip; dequeued."""
    t = que.alloc_tensor(dtype)
    asc.data_copy(t, g, asc.Nd2NzParams(1, rows, cols, 0, row_stride, strip_rows, 1, 0))
    que.enque(t)
    return que.deque(dtype)


@asc.jit
def _nz_to_zz(a2, a1, rows16, kpad, c0):
    """L1 NZ (strips of rows16*16 rows) -> L0A ZZ, one 16-row block per load."""
    for r in range(rows16):
        asc.load_data(a2[r * 16 * kpad:], a1[r * 16 * c0:],
                      asc.LoadData2DParams(0, kpad // c0, rows16, 0, 0, False, 0))


@asc.jit
def _row_reduce(dst, red, src, rows, cols, row_stride, is_max):
    """dst[r] = max (or sum) of src[r, :cols] for r < rows: fold 64-lane chunks into red
    (rows x 64), then one whole-reduce repeat per row."""
    w0 = min(64, cols)
    rs = row_stride // 8
    first = 64
    if cols >= 128:     # red = chunk 0 (op) chunk 1, both full
        first = 128
        if is_max:
            asc.max(red, src, src[64:], 64, rows, asc.BinaryRepeatParams(1, 1, 1, 8, rs, rs))
        else:
            asc.add(red, src, src[64:], 64, rows, asc.BinaryRepeatParams(1, 1, 1, 8, rs, rs))
    else:               # red = chunk 0
        asc.muls(red, src, 1.0, w0, rows, asc.UnaryRepeatParams(1, 1, 8, rs))
    for c in range(first, cols, 64):
        p = asc.BinaryRepeatParams(1, 1, 1, 8, 8, rs)
        if is_max:
            asc.max(red, red, src[c:], min(64, cols - c), rows, p)
        else:
            asc.add(red, red, src[c:], min(64, cols - c), rows, p)
    if is_max:
        asc.whole_reduce_max(dst, red, w0, rows, 1, 1, 8, asc.ReduceOrder.ORDER_ONLY_VALUE)
    else:
        asc.whole_reduce_sum(dst, red, w0, rows, 1, 1, 8)


@asc.jit
def _scale_rows(acc, bc, factors, rows, d, divide):
    """acc[r, :] *= factors[r] (or /=), the factor broadcast to 32 B blocks by brcb."""
    asc.brcb(bc, factors, (rows + 7) // 8, asc.BrcbRepeatParams(1, 8))
    for c in range(0, d, 64):
        p = asc.BinaryRepeatParams(1, 1, 0, d // 8, d // 8, 1)
        if divide:
            asc.div(acc[c:], acc[c:], bc, min(64, d - c), rows, p)
        else:
            asc.mul(acc[c:], acc[c:], bc, min(64, d - c), rows, p)


@asc.jit
def flash_attention_kernel(q: asc.GlobalAddress, k: asc.GlobalAddress, v: asc.GlobalAddress,
                           out: asc.GlobalAddress, smax: asc.GlobalAddress,
                           ssum: asc.GlobalAddress, ws: asc.GlobalAddress, wsp: asc.GlobalAddress,
                           n_heads: int, kv_heads: int, s1: int, s2: int, scale: float,
                           q_row: int, q_head: int, q_batch: int,
                           kv_row: int, kv_head: int, kv_batch: int,
                           o_row: int, o_head: int, o_batch: int, tiles: int,
                           D: asc.ConstExpr[int], S1B: asc.ConstExpr[int],
                           S2B: asc.ConstExpr[int], KC: asc.ConstExpr[int],
                           CAUSAL: asc.ConstExpr[bool], LOWP: asc.ConstExpr[bool],
                           C0: asc.ConstExpr[int]):
    pipe = asc.TPipe()
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qb1 = asc.TQue(asc.TPosition.B1, 1)
    pa1 = asc.TQue(asc.TPosition.A1, 1)
    sin = asc.TQue(asc.TPosition.VECIN, 1)
    oin = asc.TQue(asc.TPosition.VECIN, 1)
    l0a = asc.TBuf(asc.TPosition.A2)
    l0b = asc.TBuf(asc.TPosition.B2)
    l0c = asc.TBuf(asc.TPosition.CO1)
    calc = asc.TBuf(asc.TPosition.VECCALC)
    isz = q.dtype.sizeof()
    pipe.init_buffer(qa1, 1, S1B * D * isz)
    pipe.init_buffer(qb1, 1, max(S2B * D, KC * D) * isz)
    pipe.init_buffer(pa1, 1, S1B * KC * isz)
    pipe.init_buffer(sin, 1, S1B * S2B * 4)
    pipe.init_buffer(oin, 1, S1B * D * 4)
    pipe.init_buffer(l0a, (S1B * D + S1B * KC) * isz)
    pipe.init_buffer(l0b, max(D * S2B, KC * D) * isz)
    pipe.init_buffer(l0c, (S1B * S2B + S1B * D) * 4)
    p_low = 0       # 16-bit copies of P and O exist only for 16-bit inputs
    o_low = 0
    if LOWP:
        p_low = S1B * S2B
        o_low = S1B * D
    pipe.init_buffer(calc, S1B * (D + CALC_PER_ROW) * 4 + (p_low + o_low) * isz)
    qa2 = l0a.get_with_offset(S1B * D, 0, q.dtype)
    pa2 = l0a.get_with_offset(S1B * KC, S1B * D * isz, q.dtype)
    bl0 = l0b.get(q.dtype)
    sc = l0c.get_with_offset(S1B * S2B, 0, asc.float32)
    oc = l0c.get_with_offset(S1B * D, S1B * S2B * 4, asc.float32)
    # calc: O accumulator, five per-row vectors, a rows x 64 fold buffer, a brcb buffer
    oacc = calc.get_with_offset(S1B * D, 0, asc.float32)
    row_m = calc.get_with_offset(S1B, S1B * D * 4, asc.float32)
    row_l = calc.get_with_offset(S1B, S1B * (D + 1) * 4, asc.float32)
    row_a = calc.get_with_offset(S1B, S1B * (D + 2) * 4, asc.float32)
    mnew = calc.get_with_offset(S1B, S1B * (D + 3) * 4, asc.float32)
    rmax = calc.get_with_offset(S1B, S1B * (D + 4) * 4, asc.float32)
    red = calc.get_with_offset(S1B * 64, S1B * (D + 5) * 4, asc.float32)
    bc = calc.get_with_offset(S1B * 8, S1B * (D + 69) * 4, asc.float32)
    plow = calc.get_with_offset(p_low, S1B * (D + CALC_PER_ROW) * 4, q.dtype)
    olow = calc.get_with_offset(o_low, S1B * (D + CALC_PER_ROW) * 4 + p_low * isz, q.dtype)
    wsg = asc.GlobalTensor()
    wsg.set_global_buffer(ws + asc.get_block_idx() * (S1B * S2B + S1B * D), S1B * S2B + S1B * D)
    wpg = asc.GlobalTensor()
    wpg.set_global_buffer(wsp + asc.get_block_idx() * (S1B * S2B), S1B * S2B)
    n_s1 = (s1 + S1B - 1) // S1B
    group = n_heads // kv_heads
    for t in range(asc.get_block_idx(), tiles, asc.get_block_num()):
        b = t // (n_heads * n_s1)
        n = (t // n_s1) % n_heads
        s1_0 = (t % n_s1) * S1B
        m = min(S1B, s1 - s1_0)
        m16 = (m + 15) // 16 * 16
        kvh = n // group
        qg = asc.GlobalTensor()
        qg.set_global_buffer(q + (b * q_batch + n * q_head + s1_0 * q_row), (m - 1) * q_row + D)
        kv_base = b * kv_batch + kvh * kv_head
        q1 = _load_rows_nz(qa1, qg, m, D, q_row, m16, q.dtype)
        _nz_to_zz(qa2, q1, m16 // 16, D, C0)
        qa1.free_tensor(q1)
        asc.duplicate(row_m, NEG_INF, S1B)
        asc.duplicate(row_l, 0.0, S1B)
        asc.duplicate(oacc, 0.0, S1B * D)
        n_s2 = (s2 + S2B - 1) // S2B
        if CAUSAL:
            n_s2 = min(n_s2, (s1_0 + m - 1) // S2B + 1)
        for j in range(n_s2):
            s2_0 = j * S2B
            n2 = min(S2B, s2 - s2_0)
            n16 = (n2 + 15) // 16 * 16
            # ---- cube: S = Q K^T -------------------------------------------------------------
            kg = asc.GlobalTensor()
            kg.set_global_buffer(k + (kv_base + s2_0 * kv_row), (n2 - 1) * kv_row + D)
            k1 = _load_rows_nz(qb1, kg, n2, D, kv_row, n16, k.dtype)
            asc.load_data(bl0, k1, asc.LoadData2DParams(0, (D // C0) * (n16 // 16), 1, 0, 0,
                                                        False, 0))
            qb1.free_tensor(k1)
            asc.mmad(sc, qa2, bl0, asc.MmadParams(m, n2, D, False, 0, False, False, False, 0,
                                                  False, False, True))
            asc.fixpipe(wsg, sc, asc.FixpipeParamsV220(n2, m, m16, S2B, 0, 0, 1, 0, 0, False,
                                                       0, False))
            # ---- vector: online softmax on S, whole-tile ops (rows are repeats) -------------
            su = sin.alloc_tensor(asc.float32)
            asc.data_copy(su, wsg, m * S2B)
            sin.enque(su)
            su = sin.deque(asc.float32)
            asc.muls(su, su, scale, m * S2B)
            if CAUSAL:
                if s2_0 + n2 > s1_0 + 1:        # a diagonal block: mask above the diagonal
                    for r in range(m):
                        valid = max(0, min(n2, s1_0 + r - s2_0 + 1))
                        if valid < n2:
                            asc.duplicate(su[r * S2B + valid:], NEG_INF, n2 - valid)
            _row_reduce(rmax, red, su, m, n2, S2B, True)
            asc.max(mnew, row_m, rmax, m)
            asc.sub(row_a, row_m, mnew, m)          # alpha = exp(m_old - m_new)
            asc.exp(row_a, row_a, m)
            asc.brcb(bc, mnew, (m + 7) // 8, asc.BrcbRepeatParams(1, 8))
            for c in range(0, n2, 64):
                asc.sub(su[c:], su[c:], bc, min(64, n2 - c), m,
                        asc.BinaryRepeatParams(1, 1, 0, S2B // 8, S2B // 8, 1))
            asc.exp(su, su, m * S2B)
            _row_reduce(rmax, red, su, m, n2, S2B, False)
            asc.mul(row_l, row_l, row_a, m)         # l = l * alpha + rowsum(P)
            asc.add(row_l, row_l, rmax, m)
            asc.muls(row_m, mnew, 1.0, m)
            if LOWP:
                asc.cast(plow, su, asc.RoundMode.CAST_RINT, m * S2B)
                asc.data_copy(wpg, plow, m * S2B)
            else:
                asc.data_copy(wpg, su, m * S2B)
            sin.free_tensor(su)
            # ---- cube: O_part = P V, K-chunked through L0A ------------------------------------
            for c0 in range(0, n2, KC):
                kk = min(KC, n2 - c0)
                kpad = (kk + C0 - 1) // C0 * C0
                p1 = _load_rows_nz(pa1, wpg[c0:], m, kk, S2B, m16, q.dtype)
                _nz_to_zz(pa2, p1, m16 // 16, kpad, C0)
                pa1.free_tensor(p1)
                vg = asc.GlobalTensor()
                vg.set_global_buffer(v + (kv_base + (s2_0 + c0) * kv_row), (kk - 1) * kv_row + D)
                v1 = qb1.alloc_tensor(v.dtype)
                if LOWP:
                    k16 = (kk + 15) // 16 * 16
                    asc.data_copy(v1, vg, asc.Nd2NzParams(1, kk, D, 0, kv_row, k16, 1, 0))
                    qb1.enque(v1)
                    v1 = qb1.deque(v.dtype)
                    for kb in range(k16 // 16):
                        asc.load_data(bl0[kb * 16 * D:], v1[kb * 256:],
                                      asc.LoadData2DParams(0, D // 16, k16 // 16, 0, 0, True, 0))
                else:
                    k8 = (kk + 7) // 8 * 8
                    asc.data_copy(v1, vg, asc.Nd2NzParams(D // 16, kk, 16, 16, kv_row, 1, 2,
                                                          k8 * 16))
                    qb1.enque(v1)
                    v1 = qb1.deque(v.dtype)
                    for kb in range(k8 // 8):
                        asc.load_data(bl0[kb * 8 * D:], v1[kb * 128:],
                                      asc.LoadData2DParams(0, D // 16, k8 // 8, 0, 0, True, 0))
                qb1.free_tensor(v1)
                asc.mmad(oc, pa2, bl0, asc.MmadParams(m, D, kk, False, 0, False, False, False, 0,
                                                      False, False, c0 == 0))
            asc.fixpipe(wsg[S1B * S2B:], oc, asc.FixpipeParamsV220(D, m, m16, D, 0, 0, 1, 0, 0,
                                                                   False, 0, False))
            ou = oin.alloc_tensor(asc.float32)
            asc.data_copy(ou, wsg[S1B * S2B:], m * D)
            oin.enque(ou)
            ou = oin.deque(asc.float32)
            _scale_rows(oacc, bc, row_a, m, D, False)
            asc.add(oacc, oacc, ou, m * D)
            oin.free_tensor(ou)
        # ---- epilogue: O / l (deferred division), stats ------------------------------------------
        og = asc.GlobalTensor()
        og.set_global_buffer(out + (b * o_batch + n * o_head + s1_0 * o_row), (m - 1) * o_row + D)
        st_base = (b * n_heads + n) * s1 + s1_0
        mg = asc.GlobalTensor()
        mg.set_global_buffer(smax + st_base, m)
        lg = asc.GlobalTensor()
        lg.set_global_buffer(ssum + st_base, m)
        _scale_rows(oacc, bc, row_l, m, D, True)
        asc.data_copy_pad(mg, row_m, asc.DataCopyExtParams(1, m * 4, 0, 0, 0))
        asc.data_copy_pad(lg, row_l, asc.DataCopyExtParams(1, m * 4, 0, 0, 0))
        if LOWP:
            asc.cast(olow, oacc, asc.RoundMode.CAST_RINT, m * D)
            asc.data_copy_pad(og, olow, asc.DataCopyExtParams(m, D * isz, 0, (o_row - D) * isz, 0))
        else:
            asc.data_copy_pad(og, oacc, asc.DataCopyExtParams(m, D * 4, 0, (o_row - D) * 4, 0))


def _strides(layout, shape, heads):
    """(B, N, S, D) and (row, head, batch) element strides of a tensor in `layout`."""
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
                               **launch_options):
    """FlashAttention forward. Returns (out, softmax_max, softmax_sum); the stats are (B, N, S1)
    float32 (the real op broadcasts them to (B, N, S1, 8)). numpy in -> numpy out; rt.DeviceArray
    in -> DeviceArrays out, launched asynchronously on `stream`."""
    dev = is_device(q, k, v)
    ensure_device()
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"flash_attention: q, k, v must share a dtype, got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}")
    if np.dtype(q.dtype) not in (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16):
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
    t = (tiling or flash_attention_tiling(D, q.dtype, S1, S2)).validate(D, isz)
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    tiles = B * N * ceil_div(S1, t.s1_block)
    # one block per AI core as the real op launches (the NPU estimate counts them); the core
    # pool runs them on however many CPU cores there are
    block_dim = max(1, min(tiles, rt.get_soc().ai_core_num))
    alloc = rt.device_empty if dev else (lambda shape, dt: np.empty(shape, dt))
    out = alloc(q.shape, q.dtype)
    smax = alloc((B, N, S1), np.float32)
    ssum = alloc((B, N, S1), np.float32)
    # GM workspaces (scores, P, O part per block) stay on the device in both paths; the launch
    # keeps them alive until the kernel has run
    ws = rt.device_empty((block_dim * (t.s1_block * t.s2_block + t.s1_block * D),), np.float32)
    wsp = rt.device_empty((block_dim * t.s1_block * t.s2_block,), q.dtype)
    args = [a if dev else np.ascontiguousarray(a).reshape(-1) for a in (q, k, v)]
    outs = [out if dev else out.reshape(-1), smax if dev else smax.reshape(-1),
            ssum if dev else ssum.reshape(-1)]
    launch = (flash_attention_kernel[block_dim, stream] if stream is not None
              else flash_attention_kernel[block_dim])
    launch(*args, *outs, ws, wsp, N, NK, S1, S2, scale, *qs, *ks, *qs, tiles,
           D, t.s1_block, t.s2_block, t.kv_chunk, bool(causal), isz < 4, 32 // isz,
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
