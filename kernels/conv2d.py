"""2-D convolution (NCHW, float32) on the cube: img2col on the vector cores, then the cube matmul,
then an optional epilogue on the vector cores.

    y[n] (OC x OH*OW) = W' (OC x K') @ col[n] (K' x OH*OW),   K' = C*KH*KW + 1

`img2col_kernel` writes col[n] to a GM workspace: row (c, ki, kj) holds, for every output pixel,
the input value its kernel tap reads (zero in the padding); the last row is all ones, so the bias
rides in the matmul as the last column of W' (exact, accumulated in fp32 on L0C). Each core owns
a block of (c, ki) row groups. With stride 1 along W (any stride along H, any dilation, any
padding) a col row is, per output row, a run of consecutive input values shifted by kj*dw - pw:
pure data movement, so the kernel moves many output rows at once with one strided GM -> UB
`data_copy_pad` (the runs, each landing 32-byte aligned in UB) and one strided UB -> GM copy
(into place, ow apart), plus copies of a zero buffer for the padding columns and rows. For
small images it batches channels instead (`_channel_rows_shifted`: one copy per tap and output
row for many channels, h*w apart in x), whichever needs fewer copies. With
stride > 1 along W, an input row moves GM -> UB as one-element blocks (each lands in its own
32-byte UB block, as data_copy_pad places blocks; zero blocks stand for the padding), and per
tap one WholeReduceMax over lane 0 of every sw-th block picks the strided elements into a dense
UB row (a one-lane max is the element itself), several output rows of a tap then leaving UB ->
GM in one copy (`_group_rows_sparse`, no scalar S-pipe loop). Rows too wide for that UB layout
fall back to a GM -> UB copy of one-element blocks sw apart and a UB -> GM copy writing them back
to back (`_group_rows_strided`).

Stride 2 along W (dilation 1, even W, KW >= 2; ResNet's 7x7/2 and 3x3/2 convs) first splits x
into its even and odd columns (`deinterleave2_kernel` in kernels/eltwise.py: the whole image is
one stride-2 sequence per phase when W is even, picked by WholeReduceMax over one-element
blocks, 1024 pairs per pass), then runs the stride-1 img2col above on that 2C-channel image
of W/2 columns (tap kj of phase p sits at column shift (kj - pw - p)/2); W' gets the matching
column order, with zero columns for the (phase, shift) pairs no tap uses (`Conv2dTiling.phase`,
`phase_weight_matrix`).

1x1 convolutions with stride 1 and no padding (`Conv2dTiling.direct`) need no img2col: x[n]
already is the C x H*W matrix, so the matmul reads it in place (K' = C, no bias column) and the
bias comes in the epilogue.

`kernels.matmul.matmul_kernel` (Nd2Nz -> load_data -> mmad -> fixpipe, its default tiling, so its
compiled binary is shared) then writes y[n] directly in NCHW order. W' is built once on the host
(`weight_matrix`), like ATC's weight layout transform.

`bias_act_kernel` (kernels/eltwise.py), the epilogue (one launch for the whole batch), computes
out = act(y + bias + residual) row by row (bias per output channel, each part optional, ReLU or
none): what ATC's Conv+Relu and Conv+Add+Relu fusions do on the NPU. rt.model fuses those node
chains at load (rt/model/fusion.py) and `launch_conv2d(..., residual=, relu=, out=)` runs them.

Fidelity: on Ascend the img2col happens inside the cube core (load3d from an L1 feature map in
NC1HWC0 into L0A); here it goes through a GM workspace, so MTE traffic is higher than on the NPU.
Every copy obeys the NPU's rules (32-byte aligned UB addresses, exact GM bounds, queue/flag
synchronisation between MTE2, MTE3 and V). Grouped convolutions are not handled here (the model
runtime runs them on the AI CPU).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ascendc as asc
import rt

from ._host import ceil_div, is_device, round_up
from .eltwise import bias_act_kernel, deinterleave2_kernel
from .matmul import MatmulTiling, matmul_kernel, matmul_tiling

BUFFER_NUM = 2
BUF = 8192            # img2col UB buffer (elements); 2 staging, constant, sparse, dense: 160 KiB
MAX_W = BUF           # an output row must fit one buffer (32-byte padded)
EPI_TILE = 4096       # epilogue UB buffer (elements): 6 of them = 96 KiB
SPARSE_REPEATS = 248  # WholeReduce repeats per call (<= 255, a multiple of 8: aligned dst)
PAIRS = 1024          # deinterleave: column pairs per pass (2048 one-element blocks = 64 KiB)


def _pair(v, name):
    v = (v, v) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)
    if len(v) != 2:
        raise ValueError(f"conv2d: {name} must be an int or a pair, got {name}={v}")
    return v


@dataclass(frozen=True)
class Conv2dTiling:
    """How `conv2d` runs: the geometry, the img2col split (row groups per core) and the matmul
    tiling of W' (OC x K') @ col (K' x OH*OW)."""
    n: int
    c: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: tuple
    pad: tuple           # (top, left, bottom, right)
    dilation: tuple
    oh: int
    ow: int
    block_dim: int       # img2col cores
    groups_per_core: int  # (c, ki) row groups per img2col core
    rows_per_copy: int   # output rows moved by one strided copy (stride-1 img2col)
    rows_per_pass: int   # output rows per pass of the sparse strided img2col (0: not used)
    epi_block_dim: int   # epilogue (bias / residual / ReLU) cores
    epi_rows_per_core: int  # N*OC output rows per epilogue core
    mm: MatmulTiling
    phase: "Conv2dTiling | None" = None   # stride-2 path: the stride-1 img2col of the split x
    ch_per_copy: int = 0  # stride-1 img2col by channel batches (small images; 0: by row groups)

    @property
    def direct(self) -> bool:
        """1x1, stride 1, no padding: x[n] already is the K x OH*OW matrix (no img2col; the
        bias is added by the epilogue)."""
        return (self.kh, self.kw, self.stride, self.pad) == (1, 1, (1, 1), (0, 0, 0, 0))

    @property
    def k_rows(self) -> int:
        return self.phase.k_rows if self.phase else self.c * self.kh * self.kw + 1

    @property
    def col_elems(self) -> int:
        """img2col workspace elements (+ the column-split x after it on the stride-2 path)."""
        if self.phase:
            return round_up(self.phase.col_elems, 8) + self.c * self.h * self.w
        return self.k_rows * self.oh * self.ow

    def __post_init__(self):
        if min(self.oh, self.ow) < 1:
            raise ValueError(f"Conv2dTiling: output must be non-empty, got oh={self.oh} "
                             f"ow={self.ow}")
        if self.w > MAX_W or self.ow > MAX_W:
            raise ValueError(f"Conv2dTiling: w and ow must be <= {MAX_W}, got w={self.w} "
                             f"ow={self.ow}")


def conv2d_tiling(x_shape, w_shape, stride=1, padding=0, dilation=1, block_dim=None,
                  soc=None) -> Conv2dTiling:
    n, c, h, w = (int(s) for s in x_shape)
    oc, c2, kh, kw = (int(s) for s in w_shape)
    if c2 != c:
        raise ValueError(f"conv2d: w.shape[1] must equal x.shape[1] (groups are not supported), "
                         f"got x.shape={tuple(x_shape)} w.shape={tuple(w_shape)}")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pad = tuple(int(p) for p in padding) if not isinstance(padding, (int, np.integer)) \
        else (int(padding),) * 4
    if len(pad) == 2:
        pad = pad * 2
    oh = (h + pad[0] + pad[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pad[1] + pad[3] - dw * (kw - 1) - 1) // sw + 1
    groups = c * kh
    cores = block_dim or min(rt.default_core_count(), max(1, groups * oh * ow * kw // 4096),
                             groups)
    per_core = ceil_div(groups, cores)
    direct = (kh, kw, sh, sw, pad) == (1, 1, 1, 1, (0, 0, 0, 0))
    phase = None
    if sw == 2 and dw == 1 and w % 2 == 0 and 2 <= kw and pad[1] < kw and min(oh, ow) >= 1:
        # taps kj -> (phase (kj - pw) % 2, shift kj'); left pad pw' and width kw' cover them all
        pw2 = (pad[1] + 1) // 2
        kw2 = (kw - 1 - pad[1]) // 2 + pw2 + 1
        phase = conv2d_tiling((n, 2 * c, h, w // 2), (oc, 2 * c, kh, kw2), (sh, 1),
                              (pad[0], pw2, pad[2], ow - 1 - w // 2 - pw2 + kw2), (dh, 1),
                              soc=soc)
    p = max(oh, 1) * max(ow, 1)
    # stride-1 columns, small images: copies batching channels (one per tap and output row) are
    # fewer than copies batching rows (one per channel, tap and rows_per_copy rows)
    cpc = min(4095, BUF // round_up(p, 8))
    by_rows = c * kh * kw * (2 + 3 * ceil_div(oh, max(1, min(4095, BUF // round_up(ow, 8)))))
    by_channels = kh * kw * ceil_div(c, max(cpc, 1)) * (2 + 3 * oh)
    ch_mode = sw == 1 and not direct and cpc > 0 and by_channels < by_rows
    mm = matmul_tiling(oc, p, c if direct else c * kh * kw + 1, np.float32, soc=soc)
    ow8 = round_up(max(ow, 1), 8)
    sparse_blocks = max(pad[1] + w, (ow - 1) * sw + (kw - 1) * dw + 1)
    rows_per_pass = min(oh, BUF // (kw * ow8)) if sw > 1 and sparse_blocks * 8 <= BUF else 0
    rows = n * oc
    epi_cores = min(rt.default_core_count(), rows, max(1, rows * p // EPI_TILE))
    if ch_mode:         # work split by channels
        per_core = ceil_div(c, min(rt.default_core_count(), c))
        groups = c
    return Conv2dTiling(n, c, h, w, oc, kh, kw, (sh, sw), pad, (dh, dw), oh, ow,
                        ceil_div(groups, per_core), per_core,
                        max(1, min(4095, BUF // ow8)), rows_per_pass,
                        ceil_div(rows, ceil_div(rows, epi_cores)), ceil_div(rows, epi_cores),
                        phase.mm if phase else mm, phase, cpc if ch_mode else 0)


# ---- kernel --------------------------------------------------------------------------------------

@asc.jit
def _valid_rows(ki, h, oh, sh, ph, dh):
    """(r_lo, r_hi): the output rows whose input row for kernel row ki is inside the image (the
    rest read the padding)."""
    a = ph - ki * dh
    r_lo = min(oh, 0 if a <= 0 else (a + sh - 1) // sh)
    b = h - 1 + ph - ki * dh
    r_hi = max(r_lo, min(oh, 0 if b < 0 else b // sh + 1))
    return (r_lo, r_hi)


@asc.jit
def _fill_run(colg, zb, off, n, zlen):
    """colg[off:off+n] = the constant in the UB buffer zb (zlen elements), in pieces (MTE3)."""
    for s in range(0, n, zlen):
        cnt = min(zlen, n - s)
        asc.data_copy_pad(colg[off + s:], zb,
                          asc.DataCopyExtParams(1, cnt * colg.dtype.sizeof(), 0, 0, 0))


@asc.jit
def _pad_rows(colg, zb, ci, ki, h, oh, ow, kh, kw, sh, ph, dh, buf):
    """Zero the output rows of the group's KW col rows whose input row is in the padding."""
    p = oh * ow
    r_lo, r_hi = _valid_rows(ki, h, oh, sh, ph, dh)
    for kj in range(kw):
        base = ((ci * kh + ki) * kw + kj) * p
        _fill_run(colg, zb, base, r_lo * ow, buf)
        _fill_run(colg, zb, base + r_hi * ow, (oh - r_hi) * ow, buf)


@asc.jit
def _shifted_rows(qx, xg, colg, zb, src, dst, nr, nq, ql, qr, src_step, ow):
    """nr output rows (ow apart from dst) of one col row, stride-1 case: each is nq consecutive
    input values (at src, src_step apart) placed after ql zeros and followed by qr zeros. One
    strided GM -> UB and one UB -> GM copy move all nr runs (UB rows 32-byte aligned)."""
    sz = colg.dtype.sizeof()
    if nq > 0:
        xl = qx.alloc_tensor(colg.dtype)
        asc.data_copy_pad(xl, xg[src:], asc.DataCopyExtParams(nr, nq * sz, (src_step - nq) * sz,
                                                              0, 0))
        qx.enque(xl)
        xl = qx.deque(colg.dtype)
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy_pad(colg[dst + ql:], xl, asc.DataCopyExtParams(nr, nq * sz, 0,
                                                                     (ow - nq) * sz, 0))
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)      # the buffer is refilled by the next load
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
        qx.free_tensor(xl)
    if ql > 0:
        asc.data_copy_pad(colg[dst:], zb, asc.DataCopyExtParams(nr, ql * sz, 0, (ow - ql) * sz, 0))
    if qr > 0:
        asc.data_copy_pad(colg[dst + ql + nq:], zb, asc.DataCopyExtParams(nr, qr * sz, 0,
                                                                          (ow - qr) * sz, 0))


@asc.jit
def _group_rows_shifted(qx, xg, colg, zb, ci, ki, c, h, w, oh, ow, kh, kw, sh, ph, pw, dh, dw,
                        rows_per_copy, buf):
    """The KW col rows of one (c, ki) group, stride-1 columns: per kj the valid output rows
    [r_lo, r_hi) read input rows sh apart, shifted by kj*dw - pw (pure data movement)."""
    p = oh * ow
    r_lo, r_hi = _valid_rows(ki, h, oh, sh, ph, dh)
    _pad_rows(colg, zb, ci, ki, h, oh, ow, kh, kw, sh, ph, dh, buf)
    for kj in range(kw):
        base = ((ci * kh + ki) * kw + kj) * p
        off = kj * dw - pw
        q_lo = min(ow, max(0, -off))
        q_hi = max(q_lo, min(ow, w - off))
        for r0 in range(r_lo, r_hi, rows_per_copy):
            nr = min(rows_per_copy, r_hi - r0)
            ih0 = r0 * sh - ph + ki * dh
            _shifted_rows(qx, xg, colg, zb, (ci * h + ih0) * w + off + q_lo, base + r0 * ow, nr,
                          q_hi - q_lo, q_lo, ow - q_hi, sh * w, ow)


@asc.jit
def _channel_rows_shifted(qx, xg, colg, zb, c0, nc, h, w, oh, ow, kh, kw, sh, ph, pw, dh, dw,
                          ch_per_copy):
    """Channels [c0, c0+nc), stride-1 columns, for small images: per tap (ki, kj) and output
    row, one strided copy moves that row's run for up to ch_per_copy channels (h*w apart in x,
    kh*kw*oh*ow apart in col); the padding as copies of the zero buffer, batched the same way."""
    p = oh * ow
    kkp = kh * kw * p
    for ki in range(kh):
        r_lo, r_hi = _valid_rows(ki, h, oh, sh, ph, dh)
        for kj in range(kw):
            off = kj * dw - pw
            q_lo = min(ow, max(0, -off))
            q_hi = max(q_lo, min(ow, w - off))
            for cb in range(c0, c0 + nc, ch_per_copy):
                ncc = min(ch_per_copy, c0 + nc - cb)
                base = ((cb * kh + ki) * kw + kj) * p
                if r_lo > 0:
                    _shifted_rows(qx, xg, colg, zb, 0, base, ncc, 0, r_lo * ow, 0, 0, kkp)
                if r_hi < oh:
                    _shifted_rows(qx, xg, colg, zb, 0, base + r_hi * ow, ncc, 0,
                                  (oh - r_hi) * ow, 0, 0, kkp)
                for r in range(r_lo, r_hi):
                    ih = r * sh - ph + ki * dh
                    _shifted_rows(qx, xg, colg, zb, (cb * h + ih) * w + off + q_lo,
                                  base + r * ow, ncc, q_hi - q_lo, q_lo, ow - q_hi, h * w, kkp)


@asc.jit
def _group_rows_strided(qx, xg, colg, zb, ci, ki, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh,
                        dw, rows_per_copy, buf):
    """The KW col rows of one (c, ki) group, stride sw > 1 along W: per output row and kj, one
    GM -> UB copy of one-element blocks sw apart (each lands in its own 32-byte UB row) and one
    UB -> GM copy of those blocks back to back; zero columns/rows as in the stride-1 case."""
    p = oh * ow
    sz = colg.dtype.sizeof()
    per_copy = buf * sz // 32           # one-element blocks that fit the UB buffer
    r_lo, r_hi = _valid_rows(ki, h, oh, sh, ph, dh)
    _pad_rows(colg, zb, ci, ki, h, oh, ow, kh, kw, sh, ph, dh, buf)
    for kj in range(kw):
        base = ((ci * kh + ki) * kw + kj) * p
        off = kj * dw - pw
        q_lo = min(ow, 0 if off >= 0 else (sw - 1 - off) // sw)
        e = w - 1 - off
        q_hi = max(q_lo, min(ow, 0 if e < 0 else e // sw + 1))
        for r0 in range(r_lo, r_hi, rows_per_copy):
            nr = min(rows_per_copy, r_hi - r0)
            # zero columns only (nq = 0): [0, q_lo) and [q_hi, ow) of each row
            _shifted_rows(qx, xg, colg, zb, 0, base + r0 * ow, nr, 0, q_lo, 0, 0, ow)
            _shifted_rows(qx, xg, colg, zb, 0, base + r0 * ow + q_hi, nr, 0, ow - q_hi, 0, 0,
                          ow)
        for r in range(r_lo, r_hi):
            ih = r * sh - ph + ki * dh
            for q0 in range(q_lo, q_hi, per_copy):
                nq = min(per_copy, q_hi - q0)
                xl = qx.alloc_tensor(colg.dtype)
                asc.data_copy_pad(xl, xg[(ci * h + ih) * w + off + q0 * sw:],
                                  asc.DataCopyExtParams(nq, sz, (sw - 1) * sz, 0, 0))
                qx.enque(xl)
                xl = qx.deque(colg.dtype)
                asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
                asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
                asc.data_copy_pad(colg[base + r * ow + q0:], xl,
                                  asc.DataCopyExtParams(nq, sz, 0, 0, 0))
                asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)
                asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)
                qx.free_tensor(xl)


@asc.jit
def _group_rows_sparse(spb, dnb, xg, colg, ci, ki, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh,
                       dw, rows_per_pass, ow32):
    """The KW col rows of one (c, ki) group, stride sw > 1 along W, on the vector unit: an input
    row moves GM -> UB as one-element blocks (each in its own 32-byte block of spb, after pw
    zero blocks: the padded row, one element per block), then per kj one WholeReduceMax of lane
    0 with a source repeat stride of sw blocks picks x[q*sw + kj*dw] for every q into a dense
    row of dnb (a one-lane max is the value itself, bit for bit); rows_per_pass output rows per
    kj leave UB -> GM in one copy."""
    p = oh * ow
    sz = colg.dtype.sizeof()
    kb = 32 // sz
    r_lo, r_hi = _valid_rows(ki, h, oh, sh, ph, dh)
    for r0 in range(r_lo, r_hi, rows_per_pass):
        nr = min(rows_per_pass, r_hi - r0)
        for i in range(nr):
            ih = (r0 + i) * sh - ph + ki * dh
            asc.set_flag(asc.HardEvent.V_MTE2, 0)       # the previous row's reads are done
            asc.wait_flag(asc.HardEvent.V_MTE2, 0)
            asc.data_copy_pad(spb[pw * kb:], xg[(ci * h + ih) * w:],
                              asc.DataCopyExtParams(w, sz, 0, 0, 0))
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            for kj in range(kw):
                for q0 in range(0, ow, SPARSE_REPEATS):
                    nq = min(SPARSE_REPEATS, ow - q0)
                    asc.whole_reduce_max(dnb[(kj * rows_per_pass + i) * ow32 + q0:],
                                         spb[(q0 * sw + kj * dw) * kb:], 1, nq, 1, 1, sw,
                                         asc.ReduceOrder.ORDER_ONLY_VALUE)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        for kj in range(kw):
            asc.data_copy_pad(colg[((ci * kh + ki) * kw + kj) * p + r0 * ow:],
                              dnb[kj * rows_per_pass * ow32:],
                              asc.DataCopyExtParams(nr, ow * sz, 0, 0, 0))
        asc.set_flag(asc.HardEvent.MTE3_V, 0)           # dnb is rewritten by the next pass
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)


@asc.jit
def img2col_kernel(x: asc.GlobalAddress, col: asc.GlobalAddress, c: int, h: int, w: int,
                   oh: int, ow: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
                   dh: int, dw: int, groups_per_core: int, rows_per_copy: int,
                   rows_per_pass: int, ch_per_copy: int, buf: asc.ConstExpr[int]):
    """col (C*KH*KW + 1 rows of OH*OW) from one NCHW image x (C x H x W); each core owns
    groups_per_core (c, ki) row groups, or channels when ch_per_copy > 0."""
    p = oh * ow
    bidx = asc.get_block_idx()
    g0 = bidx * groups_per_core
    ng = min(groups_per_core, c * kh - g0)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, c * h * w)
    colg = asc.GlobalTensor()
    colg.set_global_buffer(col, (c * kh * kw + 1) * p)
    pipe = asc.TPipe()
    qx = asc.TQue(asc.TPosition.VECIN, BUFFER_NUM)
    cb = asc.TBuf(asc.TPosition.VECCALC)
    sparse = asc.TBuf(asc.TPosition.VECCALC)
    dense = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(qx, BUFFER_NUM, buf * x.dtype.sizeof())
    pipe.init_buffer(cb, buf * col.dtype.sizeof())
    pipe.init_buffer(sparse, buf * col.dtype.sizeof())
    pipe.init_buffer(dense, buf * col.dtype.sizeof())
    zb = cb.get(col.dtype)
    asc.duplicate(zb, 0.0, buf)
    spb = sparse.get(col.dtype)
    dnb = dense.get(col.dtype)
    ow32 = (ow * col.dtype.sizeof() + 31) // 32 * 32 // col.dtype.sizeof()
    if rows_per_pass > 0:
        asc.duplicate(spb, 0.0, buf)           # the padding blocks stay zero
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    if ch_per_copy > 0:
        ng = 0
        _channel_rows_shifted(qx, xg, colg, zb, g0, min(groups_per_core, c - g0), h, w, oh, ow,
                              kh, kw, sh, ph, pw, dh, dw, ch_per_copy)
    for gi in range(ng):
        g = g0 + gi
        ci = g // kh
        ki = g % kh
        if sw == 1:
            _group_rows_shifted(qx, xg, colg, zb, ci, ki, c, h, w, oh, ow, kh, kw, sh, ph, pw,
                                dh, dw, rows_per_copy, buf)
        elif rows_per_pass > 0:
            _group_rows_sparse(spb, dnb, xg, colg, ci, ki, c, h, w, oh, ow, kh, kw, sh, sw, ph,
                               pw, dh, dw, rows_per_pass, ow32)
            _pad_rows(colg, zb, ci, ki, h, oh, ow, kh, kw, sh, ph, dh, buf)
        else:
            _group_rows_strided(qx, xg, colg, zb, ci, ki, c, h, w, oh, ow, kh, kw, sh, sw, ph,
                                pw, dh, dw, rows_per_copy, buf)
    if bidx == 0:
        asc.set_flag(asc.HardEvent.MTE3_V, 0)        # zb is still being read by MTE3
        asc.wait_flag(asc.HardEvent.MTE3_V, 0)
        asc.duplicate(zb, 1.0, buf)
        asc.set_flag(asc.HardEvent.V_MTE3, 0)
        asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        _fill_run(colg, zb, c * kh * kw * p, p, buf)


# ---- host ----------------------------------------------------------------------------------------

def conv2d_reference(x, w, b=None, stride=1, padding=0, dilation=1) -> np.ndarray:
    """float64 direct convolution (NCHW, OIHW), returned as float32."""
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pad = (padding,) * 4 if isinstance(padding, (int, np.integer)) else tuple(padding)
    pad = pad * 2 if len(pad) == 2 else pad
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    oc, _, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            patch = x[:, :, r0:r0 + sh * (oh - 1) + 1:sh, c0:c0 + sw * (ow - 1) + 1:sw]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    if b is not None:
        y += np.asarray(b, np.float64).reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def weight_matrix(w, b=None, bias_column: bool = True) -> np.ndarray:
    """W' = [W reshaped OC x C*KH*KW | bias] (float32): the cube's A operand in conv2d (without
    the bias column when `bias_column` is False: the direct 1x1 path adds it in the epilogue)."""
    w = np.asarray(w, np.float32)
    wm = w.reshape(w.shape[0], -1)
    if not bias_column:
        return np.ascontiguousarray(wm)
    bias = np.zeros(w.shape[0], np.float32) if b is None else np.asarray(b, np.float32)
    return np.ascontiguousarray(np.concatenate([wm, bias[:, None]], 1))


def phase_weight_matrix(w, b, t: Conv2dTiling) -> np.ndarray:
    """W' for the stride-2 path: columns (phase p, c, ki, kj') + bias, tap kj = 2 * (kj' - pw')
    + p + pw of w (zero where no tap maps)."""
    w = np.asarray(w, np.float32)
    oc, c, kh, kw = w.shape
    kw2, pw2 = t.phase.kw, t.phase.pad[1]
    wm = np.zeros((oc, 2, c, kh, kw2), np.float32)
    for p in range(2):
        for j in range(kw2):
            kj = 2 * (j - pw2) + p + t.pad[1]
            if 0 <= kj < kw:
                wm[:, p, :, :, j] = w[:, :, :, kj]
    bias = np.zeros((oc, 1), np.float32) if b is None else np.asarray(b, np.float32)[:, None]
    return np.ascontiguousarray(np.concatenate([wm.reshape(oc, -1), bias], 1))


def conv_weights(w, b, t: Conv2dTiling):
    """(W' for the cube, bias for the epilogue or None), host float32 arrays, for tiling t."""
    if t.phase:
        return phase_weight_matrix(w, b, t), None
    if t.direct:
        return weight_matrix(w, bias_column=False), \
            None if b is None else np.ascontiguousarray(b, np.float32)
    return weight_matrix(w, b), None


def launch_epilogue(y, out, t: Conv2dTiling, stream, bias=None, residual=None, relu=False,
                    **launch_options) -> None:
    """Queue out = act(y + bias[oc] + residual) (each part optional, in place if out is y) on
    `stream`: device arrays of t's output shape (bias: OC elements)."""
    rows, p = t.n * t.oc, t.oh * t.ow
    bias_arg = bias if bias is not None else y
    res_arg = residual if residual is not None else y
    bias_act_kernel[t.epi_block_dim, stream](
        y, bias_arg, res_arg, out, rows, p, t.oc if bias is not None else rows,
        t.epi_rows_per_core, int(bias is not None), int(residual is not None), int(relu),
        EPI_TILE, **launch_options)


def launch_conv2d(x, wmat, y, col, zeros, t: Conv2dTiling, stream, *, bias=None, residual=None,
                  relu=False, out=None, **launch_options) -> None:
    """Queue conv2d on `stream` with device arrays: x (N,C,H,W), wmat and bias from
    `conv_weights`, y (N,OC,OH,OW) float32, col a float32 workspace of >= t.col_elems elements
    (unused when t.direct), zeros a zero float32 workspace of >= t.mm.zeros_len elements.
    With `residual` (N,OC,OH,OW) and/or `relu` the epilogue computes
    out = relu(conv + residual) (out defaults to y; in place is fine), as ATC's fused
    Conv+Add+Relu."""
    chw, ohw = t.c * t.h * t.w, t.oh * t.ow
    xp = None
    if t.phase:
        xp = rt.DeviceArray((chw,), np.float32, int(col.ptr) + round_up(t.phase.col_elems, 8) * 4)
        dcores = min(rt.default_core_count(), ceil_div(chw // 2, PAIRS))
        per_core = round_up(ceil_div(chw // 2, dcores), 8)
    if not t.direct:
        col = rt.DeviceArray((t.k_rows, ohw), np.float32, col.ptr)
    mm = t.mm
    for i in range(t.n):
        xi = rt.DeviceArray((chw,), np.float32, int(x.ptr) + i * chw * 4)
        yi = rt.DeviceArray((t.oc, ohw), np.float32, int(y.ptr) + i * t.oc * ohw * 4)
        if t.direct:
            b_op = rt.DeviceArray((t.c, ohw), np.float32, xi.ptr)
        else:
            b_op, g = col, t
            if t.phase:     # split columns, then the stride-1 img2col of the 2C x H x W/2 image
                deinterleave2_kernel[ceil_div(chw // 2, per_core), stream](
                    xi, xp, chw // 2, per_core, PAIRS, **launch_options)
                xi, g = xp, t.phase
            img2col_kernel[g.block_dim, stream](
                xi, col, g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw, g.stride[0], g.stride[1],
                g.pad[0], g.pad[1], g.dilation[0], g.dilation[1], g.groups_per_core,
                g.rows_per_copy, g.rows_per_pass, g.ch_per_copy, BUF, **launch_options)
        matmul_kernel[mm.block_dim, stream](
            wmat, b_op, yi, zeros, np.int64(mm.m), np.int64(mm.n), np.int64(mm.k), mm.base_m,
            mm.base_n, mm.base_k, mm.l0_n, mm.depth_l1, mm.depth_l0a, mm.depth_l0b,
            **launch_options)
    if bias is not None or residual is not None or relu:
        launch_epilogue(y, y if out is None else out, t, stream, bias, residual, relu,
                        **launch_options)


def conv2d(x, w, b=None, *, stride=1, padding=0, dilation=1, residual=None, relu=False,
           stream=None, tiling: Conv2dTiling | None = None, **launch_options):
    """y = conv2d(x, w) + b [+ residual] [then ReLU], NCHW float32, on the cube (see the module
    docstring). `padding`: int, (ph, pw) or (top, left, bottom, right). numpy in -> numpy out
    (synchronous); rt.DeviceArray x and w (OC, C, KH, KW) in -> DeviceArray out, queued on
    `stream`."""
    for name, a in (("x", x), ("w", w)):
        if np.dtype(a.dtype) != np.float32 or len(a.shape) != 4:
            raise TypeError(f"conv2d: {name} must be a 4-D float32 array, got "
                            f"{name}.dtype={a.dtype} {name}.shape={tuple(a.shape)}")
    t = tiling or conv2d_tiling(x.shape, w.shape, stride, padding, dilation)
    if residual is not None and tuple(residual.shape) != (t.n, t.oc, t.oh, t.ow):
        raise ValueError(f"conv2d: residual must have the output shape "
                         f"{(t.n, t.oc, t.oh, t.ow)}, got residual.shape={tuple(residual.shape)}")
    dev = is_device(x, w)
    wh = w.copy_to_host() if dev else w
    bh = b.copy_to_host() if dev and b is not None else b
    rt.ensure_device()
    s = stream if stream is not None else rt.current_stream()
    xd = x if dev else rt.to_device(np.ascontiguousarray(x))
    wmat, bias = conv_weights(wh, bh, t)
    wd = rt.to_device(wmat)
    bd = None if bias is None else rt.to_device(bias)
    rd = residual if residual is None or dev else \
        rt.to_device(np.ascontiguousarray(residual, np.float32))
    y = rt.device_empty((t.n, t.oc, t.oh, t.ow), np.float32)
    col = rt.device_empty((16,) if t.direct else (t.col_elems,), np.float32)
    zeros = rt.device_zeros((max(t.mm.zeros_len, 16),), np.float32)
    launch_conv2d(xd, wd, y, col, zeros, t, s, bias=bd, residual=rd, relu=relu,
                  **launch_options)
    if dev:
        return y        # the temporaries are freed stream-ordered when collected
    s.synchronize()
    return y.copy_to_host()
