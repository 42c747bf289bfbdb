"""3x3 convolutions with stride 1 and padding 1 without img2col ("tap" convolutions), as the cube
reads a feature map in place: each of the 9 taps is a shifted window of one zero-padded copy of x.

    xp (C x (H+2) x Wp, zero border):  xp[c, i+1, j+1] = x[c, i, j]
    y'[o, r*Wp + q] = sum over taps (ki, kj) and c of W[o, c, ki, kj] * xp[c, r*Wp + q + ki*Wp + kj]

so with the output computed over Wp columns per row (q >= W are garbage columns, never
written), the K x N operand of tap (ki, kj) is xp read in place at offset ki*Wp + kj: rows c,
(H+2)*Wp apart, N = H*Wp consecutive columns. K is ordered tap-major (k = tap*C + c, W' laid
out to match, `tap_weight_matrix`) plus the ones row of the bias (`kernels.convmm`'s
`ones_row`), so a K chunk is a few segments of consecutive channels of one tap each, and
`copy_b_taps` brings each segment into L1 with the same Nd2Nz copy as `kernels.matmul.copy_b`,
from its shifted offset. The img2col matrix (9x x) is never written: the taps are read from xp
by the GM -> L1 copies the matmul makes anyway.

Wp = round_up(W + 2, 16): every output row is a whole number of 16-column L0C strips, so the
fixpipe writes the W valid columns of each row of a tile straight into NCHW with one call
(nd_num = rows of the tile, src_nd_stride = one row's strips, dst_nd_stride = W). The garbage
columns cost (Wp - W)/W more cube work (14 % for ResNet's 56, 28 and 14); `tap_fits` refuses
wider waste, and shapes the layouts below do not cover, which keep the img2col path.

`pad_kernel` writes xp (vector cores, MTE only): per pass, the rows of ch_per_pass channels
(consecutive in x) move GM -> UB with `data_copy_pad`, each UB row Wp elements long
(left_padding 1 and right_padding Wp - W - 1, is_pad off: the padding columns keep the zeros
duplicated into the buffer once), then UB -> GM as one block of H*Wp per channel ((H+2)*Wp
apart), and the top and bottom zero rows from a zero buffer; block 0 also zeroes the slack
after the last channel (the garbage columns of the last rows read up to 2 elements past it).
Stride 2 (even H and W; ResNet's 56 -> 28 and 28 -> 14 downsampling 3x3 convs): the input
pixel (2r + ki - 1, 2s + kj - 1) of tap (ki, kj) is pixel (r + di - 1, s + dj - 1) of one of
x's four phase images x[p::2, q::2] (p = 0 for ki = 1, else 1; di = 0 for ki = 0, else 1;
likewise q, dj), so each phase image, padded with a zero top row and left column (H/2 + 1 rows
of Wp = round16(W/2 + 1)), is read in place like xp above: K stays 9C + 1 (the img2col of the
column-split x needed 12C + 1). `kernels.eltwise.deinterleave2_kernel` splits the columns, then
`pad_phases_kernel` moves the even and odd rows of each half (one strided GM -> UB copy per
parity and pass of channels) into the phase images.

On the NPU the equivalent is Load3D from an L1 feature map; here the taps come from GM, so MTE2
traffic is higher than there (each tap's rows are read again per tap).
"""
from __future__ import annotations

import numpy as np

import ascendc as asc
from ascendc.adv import nd2nz_strips

from ._host import round_up
from .convmm import chunk_k, chunk_mmad, tile_at, weight_chunks
from .matmul import tile_range

SLACK = 8           # elements after the last channel of xp (zeroed; read by garbage columns)
TAP_WASTE = 1.25    # largest Wp / W accepted (garbage columns' share of the cube work)
# stride 2: largest ratio of the taps' cube work (9C x OH*Wp) to the phase path's (12C x OH*OW
# rounded to 16) accepted; the phase path also writes and reads an img2col matrix. At ratio
# 1.31 (ResNet's 512 x 14 x 14 -> 7 x 7) the taps were faster on the simulated NPU (72.0 against
# 98.5 us, the split / padding kernels included) and on the CPU (5.1 against 5.5 ms).
TAP_VS_PHASE = 1.35


def tap_wp(w: int, stride: int = 1) -> int:
    """The padded row length Wp of xp for an input W (the pad kernel's UB row): W + 2 columns
    (stride 1), W/2 + 1 per phase (stride 2), rounded up to 16."""
    return round_up(w + 2, 16) if stride == 1 else round_up(w // 2 + 1, 16)


def tap_rows(h: int, stride: int = 1) -> int:
    """Rows Hp of one channel (one phase) of xp: H + 2 (stride 1), H/2 + 1 (stride 2)."""
    return h + 2 if stride == 1 else h // 2 + 1


def tap_fits(c, h, w, kh, kw, stride, pad, dilation, base_n, buf) -> bool:
    """Whether the tap path runs this convolution: 3x3, stride 1 or 2 (even H and W), padding
    1, no dilation, a UB row of Wp from one data_copy_pad (right padding <= 8 elements), whole
    rows per output tile (base_n a multiple of Wp), one channel's rows in the pad buffer, little
    garbage (stride 1: Wp <= TAP_WASTE * W; stride 2: at most TAP_VS_PHASE times the cube work
    of the phase path it replaces)."""
    if (kh, kw, tuple(pad), tuple(dilation)) != (3, 3, (1, 1, 1, 1), (1, 1)) or \
            tuple(stride) not in ((1, 1), (2, 2)):
        return False
    s = stride[0]
    if s == 2 and (h % 2 or w % 2):
        return False
    wv, hv = w // s, h // s                 # the image (one phase) the taps read
    wp, hp = tap_wp(w, s), tap_rows(h, s)
    cheap = wp <= TAP_WASTE * wv if s == 1 else \
        9 * hv * wp <= TAP_VS_PHASE * 12 * round_up(hv * wv, 16)
    return (wp - wv - 1 <= 8 and base_n % wp == 0 and hv * wp <= buf and cheap
            and s * s * c * hp * wp + SLACK < 2 ** 31 and hp * wp <= 65535)


def tap_weight_matrix(w, b=None) -> np.ndarray:
    """W' (OC x 9C + 1, float32) in tap-major order: column tap*C + c is W[:, c, ki, kj]
    (tap = ki*3 + kj), the bias last."""
    w = np.asarray(w, np.float32)
    oc = w.shape[0]
    wm = w.transpose(0, 2, 3, 1).reshape(oc, -1)
    bias = np.zeros((oc, 1), np.float32) if b is None else np.asarray(b, np.float32)[:, None]
    return np.ascontiguousarray(np.concatenate([wm, bias], 1))


@asc.jit
def zeroed_buffers(pipe, rbuf, zbuf, pg, end, bidx, buf):
    """The pad kernels' two UB buffers of buf elements (pg's dtype), zero-filled before any
    copy (a row's padding columns keep those zeros; zb is the source of the zero rows), and
    block 0 zeroes the SLACK after the last channel (pg[end:])."""
    pipe.init_buffer(rbuf, buf * pg.dtype.sizeof())
    pipe.init_buffer(zbuf, buf * pg.dtype.sizeof())
    rb = rbuf.get(pg.dtype)
    zb = zbuf.get(pg.dtype)
    asc.duplicate(rb, 0.0, buf)
    asc.duplicate(zb, 0.0, buf)
    asc.set_flag(asc.HardEvent.V_MTE2, 0)
    asc.wait_flag(asc.HardEvent.V_MTE2, 0)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    if bidx == 0:
        asc.data_copy_pad(pg[end:], zb, asc.DataCopyExtParams(1, 8 * pg.dtype.sizeof(), 0, 0,
                                                             0))
    return (rb, zb)


@asc.jit
def pad_kernel(x: asc.GlobalAddress, xp: asc.GlobalAddress, c: int, h: int, w: int, wp: int,
               ch_per_core: int, ch_per_pass: int, buf: asc.ConstExpr[int]):
    """xp (c x (h+2) x wp + SLACK, module doc) from x (c x h x w); each core owns ch_per_core
    channels, ch_per_pass of them per GM -> UB copy."""
    hp = h + 2
    bidx = asc.get_block_idx()
    c0 = bidx * ch_per_core
    nc = min(ch_per_core, c - c0)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, c * h * w)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(xp, c * hp * wp + 8)
    pipe = asc.TPipe()
    rbuf = asc.TBuf(asc.TPosition.VECCALC)
    zbuf = asc.TBuf(asc.TPosition.VECCALC)
    rb, zb = zeroed_buffers(pipe, rbuf, zbuf, pg, c * hp * wp, bidx, buf)
    sz = x.dtype.sizeof()
    for cb in range(c0, c0 + nc, ch_per_pass):
        ncc = min(ch_per_pass, c0 + nc - cb)
        asc.data_copy_pad(rb, xg[cb * h * w:], asc.DataCopyExtParams(ncc * h, w * sz, 0, 0, 0),
                          asc.DataCopyPadExtParams(False, 1, wp - w - 1, 0))
        asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy_pad(pg[(cb * hp + 1) * wp:], rb,
                          asc.DataCopyExtParams(ncc, h * wp * sz, 0, 2 * wp * sz, 0))
        asc.data_copy_pad(pg[cb * hp * wp:], zb,
                          asc.DataCopyExtParams(ncc, wp * sz, 0, (h + 1) * wp * sz, 0))
        asc.data_copy_pad(pg[(cb * hp + h + 1) * wp:], zb,
                          asc.DataCopyExtParams(ncc, wp * sz, 0, (h + 1) * wp * sz, 0))
        asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)      # rb is refilled by the next pass
        asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)


@asc.jit
def pad_phases_kernel(xs: asc.GlobalAddress, xp: asc.GlobalAddress, c2: int, h: int, wq: int,
                      wp: int, ch_per_core: int, ch_per_pass: int, buf: asc.ConstExpr[int]):
    """Stride 2: xp's four phase images from xs, x split into its even and odd columns (c2 =
    2C channels of h x wq, `kernels.eltwise.deinterleave2_kernel`): phase (p, q) channel c is
    rows p, p+2, ... of xs channel q*C + c, stored at xp channel p*c2 + q*C + c as hq + 1 rows of
    wp (a zero top row and left column, hq = h/2); block 0 zeroes the slack."""
    hq = h // 2
    hp = hq + 1
    bidx = asc.get_block_idx()
    c0 = bidx * ch_per_core
    nc = min(ch_per_core, c2 - c0)
    xg = asc.GlobalTensor()
    xg.set_global_buffer(xs, c2 * h * wq)
    pg = asc.GlobalTensor()
    pg.set_global_buffer(xp, 2 * c2 * hp * wp + 8)
    pipe = asc.TPipe()
    rbuf = asc.TBuf(asc.TPosition.VECCALC)
    zbuf = asc.TBuf(asc.TPosition.VECCALC)
    rb, zb = zeroed_buffers(pipe, rbuf, zbuf, pg, 2 * c2 * hp * wp, bidx, buf)
    sz = xs.dtype.sizeof()
    for cb in range(c0, c0 + nc, ch_per_pass):
        ncc = min(ch_per_pass, c0 + nc - cb)
        for p in range(2):
            # rows p, p+2, ... of the ncc channels (h even: the parity runs on across channels)
            asc.data_copy_pad(rb, xg[(cb * h + p) * wq:],
                              asc.DataCopyExtParams(ncc * hq, wq * sz, wq * sz, 0, 0),
                              asc.DataCopyPadExtParams(False, 1, wp - wq - 1, 0))
            asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
            asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
            d = ((p * c2 + cb) * hp + 1) * wp
            asc.data_copy_pad(pg[d:], rb, asc.DataCopyExtParams(ncc, hq * wp * sz, 0,
                                                                wp * sz, 0))
            asc.data_copy_pad(pg[d - wp:], zb, asc.DataCopyExtParams(ncc, wp * sz, 0,
                                                                     hq * wp * sz, 0))
            asc.set_flag(asc.HardEvent.MTE3_MTE2, 0)      # rb is refilled next
            asc.wait_flag(asc.HardEvent.MTE3_MTE2, 0)


@asc.jit
def tap_offset(tap, cin, ci, hpwp, wp, s2):
    """Where tap `tap` (ki*3 + kj) of channel ci starts in xp: stride 1, ki*wp + kj in channel
    ci; stride 2, phase (p, q) = (row, column) parity of the tap's input pixel, shifted by one
    row / column (the zero top row / left column) for ki = 0 / kj = 0."""
    ki = tap // 3
    kj = tap - ki * 3
    if s2 == 0:
        return ci * hpwp + ki * wp + kj
    p = 0 if ki == 1 else 1
    q = 0 if kj == 1 else 1
    return ((p * 2 + q) * cin + ci) * hpwp + min(ki, 1) * wp + min(kj, 1)


@asc.jit
def copy_b_taps(q, xg, zg, og, n0, k0, kt, nt, k_pad, rows, cin, hpwp, wp, s2):
    """Rows k0..k0+kt of the tap-major B (module doc) for columns n0..n0+nt -> L1 as
    `kernels.matmul.copy_b` lays B out (16-column strips of k_pad rows): the first `rows` from
    xp, one Nd2Nz per (tap, channel run) segment from its shifted offset; row kt - 1 is the ones
    row when rows < kt; the K-tail rows are zero."""
    t = q.alloc_tensor(xg.dtype)
    strips = (nt + 15) // 16
    blk = 16 * xg.dtype.sizeof() // 32
    if kt < k_pad:
        asc.data_copy(t[kt * 16:], zg, asc.DataCopyParams(strips, (k_pad - kt) * blk, 0,
                                                          kt * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    if rows < kt:
        asc.data_copy(t[rows * 16:], og, asc.DataCopyParams(strips, blk, 0, (k_pad - 1) * blk))
        asc.pipe_barrier(asc.PipeID.PIPE_MTE2)
    if rows > 0:
        for tap in range(k0 // cin, (k0 + rows - 1) // cin + 1):
            lo = max(k0, tap * cin)
            hi = min(k0 + rows, (tap + 1) * cin)
            nd2nz_strips(t[(lo - k0) * 16:], xg,
                         tap_offset(tap, cin, lo - tap * cin, hpwp, wp, s2) + n0, hi - lo, nt,
                         hpwp, k_pad)
    q.enque(t)
    return q.deque(xg.dtype)


@asc.jit
def conv_tap_kernel(a: asc.GlobalAddress, xp: asc.GlobalAddress, c: asc.GlobalAddress,
                    zeros: asc.GlobalAddress, ones: asc.GlobalAddress, m: int, cin: int, h: int,
                    w: int, wp: int, hp: int, s2: int, relu: int, tile_n: int,
                    base_m: asc.ConstExpr[int], base_n: asc.ConstExpr[int],
                    base_k: asc.ConstExpr[int], l0_n: asc.ConstExpr[int],
                    depth_l1: asc.ConstExpr[int], depth_l0a: asc.ConstExpr[int],
                    depth_l0b: asc.ConstExpr[int]):
    """y (m x h x w, NCHW: the output's rows and columns) = act(W' @ taps of xp):
    `kernels.convmm.conv_matmul_kernel`'s tile loop over the padded output (N = h*wp columns,
    K = 9*cin + 1, tiles of tile_n <= base_n columns, a multiple of wp), B from xp (hp rows of
    wp per channel; s2: four phase images) by
    `copy_b_taps`, each tile's valid columns stored by one multi-ND fixpipe."""
    n = h * wp
    k = 9 * cin + 1
    kg = 9 * cin
    hpwp = hp * wp
    tiles_m, first, last = tile_range(m, n, base_m, tile_n)
    if first >= last:
        return
    c0 = 32 // a.dtype.sizeof()
    k_chunks, kp_all = weight_chunks(k, base_k, c0)
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, (m + 15) // 16 * 16 * kp_all)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(xp, (3 * s2 + 1) * cin * hpwp + 8)
    cg = asc.GlobalTensor()
    cg.set_global_buffer(c, m * h * w)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(zeros)
    og = asc.GlobalTensor()
    og.set_global_buffer(ones)
    pipe = asc.TPipe()
    isz = a.dtype.sizeof()
    qb1 = asc.TQue(asc.TPosition.B1, depth_l1)
    qa2 = asc.TQue(asc.TPosition.A2, depth_l0a)
    qb2 = asc.TQue(asc.TPosition.B2, depth_l0b)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qb1, depth_l1, base_k * base_n * isz)
    pipe.init_buffer(qa2, depth_l0a, base_m * base_k * isz)
    pipe.init_buffer(qb2, depth_l0b, base_k * l0_n * isz)
    pipe.init_buffer(qc, 1, base_m * base_n * 4)
    for t in range(first, last):
        m0, n0, mt, nt, m16 = tile_at(t, tiles_m, m, n, base_m, tile_n)
        cl = qc.alloc_tensor(asc.float32)
        for kc in range(k_chunks):
            k0, kt, k_pad = chunk_k(kc, k, base_k, c0)
            b1 = copy_b_taps(qb1, bg, zg, og, n0, k0, kt, nt, k_pad, min(kt, kg - k0), cin,
                             hpwp, wp, s2)
            chunk_mmad(qb1, qa2, qb2, b1, ag, cl, m0 * kp_all + m16 * k0, m16, mt, nt, kt,
                       k_pad, c0, l0_n, kc == 0)
        qc.enque(cl)
        cl = qc.deque(asc.float32)
        asc.fixpipe(cg[m0 * h * w + n0 // wp * w:], cl,
                    asc.FixpipeParamsV220(w, mt, m16, h * w, 0, 0, nt // wp, wp * m16 // 256, w,
                                          relu_en=relu != 0))
        qc.free_tensor(cl)
